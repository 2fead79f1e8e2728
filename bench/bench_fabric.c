/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libfabric baseline: the same measures as `iwarp perf`, through libfabric's tcp provider
 * (a connected FI_EP_MSG endpoint, the closest libfabric analogue of an iWARP RC queue pair)
 * over 127.0.0.1, so that scripts/bench.sh can put libiwarp beside the user-space RDMA-over-TCP
 * stack a user would otherwise pick.
 *
 *   bench_fabric [--prov tcp] [--passes N] [--iters N] [--window N] [--no-pin] TEST SIZE
 *   TEST: write_bw | read_bw   N operations of SIZE octets, WINDOW (64) in flight, one per post;
 *                              a Send/Send round trip at the end proves placement at the target.
 *                              Bandwidth in GB/s (1e9 octets/s) and rate in M operations/s.
 *         write_lat            ping-pong of RDMA Writes, each side polling the last octet of its
 *                              buffer (as `iwarp perf --lat --op write`): one-way µs (RTT / 2),
 *                              the median of per-iteration samples.
 *         send_lat             ping-pong of Sends: one-way µs, median.
 * Prints one JSON object per run: every pass and the median. The process forks: the parent is
 * the target (CPU 1), the child the initiator (CPU 0), both busy-polling their CQ, which also
 * drives the provider's progress (FI_PROGRESS_MANUAL). Exit 0, 1 on an error (with a line on
 * stderr), 2 on bad usage, 77 when the provider is not available.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_PASSES = 31, MAX_WINDOW = 1024, CTRL = 64 };

struct opts {
    const char *prov;
    const char *test;
    size_t size;
    long iters;
    int window;
    int passes;
    int pin;
};

/* What the target tells the initiator: where its buffer is. */
struct remote {
    uint64_t addr, key;
};

/* One side's objects. Memory: [tx: size][rx: size][ctrl send: CTRL][ctrl recv: CTRL]; RDMA
 * goes from one side's tx to the other's rx (a Read: from the target's rx into our tx). */
struct side {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_eq *eq;
    struct fid_domain *dom;
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_mr *mr;
    void *desc;
    uint8_t *mem;
    size_t size;
    struct remote peer;
    struct fi_context2 ctx[MAX_WINDOW + 2]; /* [0, window): RDMA; then the control send, recv */
    int tx_done, rx_done;                   /* the control send / receive completed */
    int virt_addr; /* the domain addresses remote memory by virtual address */
    uint64_t seq;  /* latency round trips so far, over every pass */
};

static void fail(const char *what, long rc)
{
    fprintf(stderr, "bench_fabric: %s: %s\n", what,
            rc < 0 ? fi_strerror((int)-rc) : strerror(errno));
    exit(1);
}

#define CK(call)                 \
    do {                         \
        long rc_ = (long)(call); \
        if (rc_ < 0)             \
            fail(#call, rc_);    \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void pin(const struct opts *o, int cpu)
{
    if (!o->pin)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((size_t)(cpu % (int)sysconf(_SC_NPROCESSORS_ONLN)), &set);
    (void)sched_setaffinity(0, sizeof set, &set);
}

static struct fi_info *hints_for(const struct opts *o)
{
    struct fi_info *h = fi_allocinfo();
    if (!h)
        fail("fi_allocinfo", -FI_ENOMEM);
    h->ep_attr->type = FI_EP_MSG;
    h->caps = FI_MSG | FI_RMA;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->addr_format = FI_SOCKADDR_IN;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->fabric_attr->prov_name = strdup(o->prov);
    return h;
}

/* Read one completion if there is one (polling the CQ also drives the provider's progress),
 * noting the control send's and receive's. Returns its context, or NULL. */
static void *cq_poll(struct side *s)
{
    struct fi_cq_entry e;
    ssize_t n = fi_cq_read(s->cq, &e, 1);
    if (n == -FI_EAGAIN)
        return NULL;
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        (void)fi_cq_readerr(s->cq, &err, 0);
        fprintf(stderr, "bench_fabric: completion error %d (%s)\n", err.err, fi_strerror(err.err));
        exit(1);
    }
    if (n != 1)
        fail("fi_cq_read", n);
    if (e.op_context == &s->ctx[MAX_WINDOW])
        s->tx_done = 1;
    else if (e.op_context == &s->ctx[MAX_WINDOW + 1])
        s->rx_done = 1;
    return e.op_context;
}

static uint8_t *rx_buf(struct side *s)
{
    return s->mem + s->size;
}

static uint8_t *ctrl_tx(struct side *s)
{
    return s->mem + 2 * s->size;
}

static uint8_t *ctrl_rx(struct side *s)
{
    return s->mem + 2 * s->size + CTRL;
}

static void post_ctrl_recv(struct side *s)
{
    CK(fi_recv(s->ep, ctrl_rx(s), CTRL, s->desc, 0, &s->ctx[MAX_WINDOW + 1]));
}

/* Send len control octets and wait for the send's completion. */
static void send_ctrl(struct side *s, const void *p, size_t len)
{
    memcpy(ctrl_tx(s), p, len);
    s->tx_done = 0;
    for (;;) {
        ssize_t rc = fi_send(s->ep, ctrl_tx(s), len, s->desc, 0, &s->ctx[MAX_WINDOW]);
        if (rc == 0)
            break;
        if (rc != -FI_EAGAIN)
            fail("fi_send", rc);
        (void)cq_poll(s);
    }
    while (!s->tx_done)
        (void)cq_poll(s);
}

/* Wait for the posted control receive, copy it out and post the next one. */
static void recv_ctrl(struct side *s, void *p, size_t len)
{
    while (!s->rx_done)
        (void)cq_poll(s);
    s->rx_done = 0;
    memcpy(p, ctrl_rx(s), len);
    post_ctrl_recv(s);
}

static void open_common(struct side *s, struct fi_info *info, size_t size)
{
    s->size = size;
    s->mem = aligned_alloc(4096, (2 * size + 2 * CTRL + 4095) / 4096 * 4096);
    if (!s->mem)
        fail("aligned_alloc", -FI_ENOMEM);
    memset(s->mem, 0, 2 * size + 2 * CTRL);
    CK(fi_domain(s->fabric, info, &s->dom, NULL));
    CK(fi_endpoint(s->dom, info, &s->ep, NULL));
    struct fi_cq_attr ca = {.size = MAX_WINDOW + 16, .format = FI_CQ_FORMAT_CONTEXT};
    CK(fi_cq_open(s->dom, &ca, &s->cq, NULL));
    CK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
    CK(fi_ep_bind(s->ep, &s->eq->fid, 0));
    CK(fi_mr_reg(s->dom, s->mem, 2 * size + 2 * CTRL,
                 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV, 0, 0, 0,
                 &s->mr, NULL));
    s->desc = fi_mr_desc(s->mr);
    s->virt_addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    CK(fi_enable(s->ep));
    post_ctrl_recv(s);
}

/* Tell the peer where our rx buffer is: by address with FI_MR_VIRT_ADDR, else by its offset
 * in the MR. */
static void send_remote(struct side *s)
{
    struct remote me = {.addr = s->virt_addr ? (uint64_t)(uintptr_t)rx_buf(s) : s->size,
                        .key = fi_mr_key(s->mr)};
    send_ctrl(s, &me, sizeof me);
}

static void expect_event(struct side *s, uint32_t want, struct fi_eq_cm_entry *entry)
{
    uint32_t ev = 0;
    ssize_t n = fi_eq_sread(s->eq, &ev, entry, sizeof *entry, 10000, 0);
    if (n < 0)
        fail("fi_eq_sread", n);
    if (ev != want) {
        fprintf(stderr, "bench_fabric: CM event %u, wanted %u\n", ev, want);
        exit(1);
    }
}

/* The target: listen on an ephemeral port, report it through report_fd, accept one. */
static void target_up(struct side *s, const struct opts *o, int report_fd)
{
    struct fi_info *h = hints_for(o);
    int rc = fi_getinfo(FI_VERSION(1, 10), "127.0.0.1", "0", FI_SOURCE, h, &s->info);
    fi_freeinfo(h);
    if (rc != 0) {
        fprintf(stderr, "bench_fabric: provider %s not available: %s\n", o->prov, fi_strerror(-rc));
        exit(77);
    }
    CK(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
    struct fi_eq_attr ea = {.wait_obj = FI_WAIT_UNSPEC};
    CK(fi_eq_open(s->fabric, &ea, &s->eq, NULL));
    struct fid_pep *pep;
    CK(fi_passive_ep(s->fabric, s->info, &pep, NULL));
    CK(fi_pep_bind(pep, &s->eq->fid, 0));
    CK(fi_listen(pep));
    struct sockaddr_in a;
    size_t alen = sizeof a;
    CK(fi_getname(&pep->fid, &a, &alen));
    uint16_t port = ntohs(a.sin_port);
    if (write(report_fd, &port, sizeof port) != (ssize_t)sizeof port)
        fail("write", 0);
    struct fi_eq_cm_entry entry;
    expect_event(s, FI_CONNREQ, &entry);
    open_common(s, entry.info, o->size);
    CK(fi_accept(s->ep, NULL, 0));
    expect_event(s, FI_CONNECTED, &entry);
    fi_freeinfo(entry.info);
    fi_close(&pep->fid);
    send_remote(s);
    recv_ctrl(s, &s->peer, sizeof s->peer); /* the initiator's, for the latency pong */
}

static void initiator_up(struct side *s, const struct opts *o, uint16_t port)
{
    char svc[8];
    snprintf(svc, sizeof svc, "%u", port);
    struct fi_info *h = hints_for(o);
    CK(fi_getinfo(FI_VERSION(1, 10), "127.0.0.1", svc, 0, h, &s->info));
    fi_freeinfo(h);
    CK(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
    struct fi_eq_attr ea = {.wait_obj = FI_WAIT_UNSPEC};
    CK(fi_eq_open(s->fabric, &ea, &s->eq, NULL));
    open_common(s, s->info, o->size);
    CK(fi_connect(s->ep, s->info->dest_addr, NULL, 0));
    struct fi_eq_cm_entry entry;
    expect_event(s, FI_CONNECTED, &entry);
    recv_ctrl(s, &s->peer, sizeof s->peer);
    send_remote(s);
}

/* ---- the measures ----------------------------------------------------------------------- */

/* Initiator: iters RDMA operations, window in flight, then fin/ack. Returns µs. */
static double run_bw(struct side *s, const struct opts *o, int is_read)
{
    long posted = 0, done = 0;
    double t0 = now_us();
    while (done < o->iters) {
        while (posted < o->iters && posted - done < o->window) {
            void *ctx = &s->ctx[posted % o->window];
            ssize_t rc =
                is_read
                    ? fi_read(s->ep, s->mem, o->size, s->desc, 0, s->peer.addr, s->peer.key, ctx)
                    : fi_write(s->ep, s->mem, o->size, s->desc, 0, s->peer.addr, s->peer.key, ctx);
            if (rc == -FI_EAGAIN)
                break;
            if (rc != 0)
                fail(is_read ? "fi_read" : "fi_write", rc);
            posted++;
        }
        void *ctx = cq_poll(s);
        if (ctx && ctx < (void *)&s->ctx[MAX_WINDOW])
            done++;
    }
    char fin = 'f', ack;
    send_ctrl(s, &fin, 1);
    recv_ctrl(s, &ack, 1); /* everything before fin is placed at the target */
    return now_us() - t0;
}

/* Target of a bandwidth pass: drive progress until fin, answer ack. */
static void serve_bw(struct side *s)
{
    char fin, ack = 'a';
    recv_ctrl(s, &fin, 1);
    send_ctrl(s, &ack, 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Spin on the last octet of our buffer until it is stamp, driving progress. */
static void await_stamp(struct side *s, uint8_t stamp)
{
    const uint8_t *last = rx_buf(s) + s->size - 1;
    while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != stamp)
        (void)cq_poll(s); /* our Writes' completions: nothing to wait for */
}

static void write_stamp(struct side *s, uint8_t stamp)
{
    s->mem[s->size - 1] = stamp;
    for (;;) {
        ssize_t rc =
            fi_write(s->ep, s->mem, s->size, s->desc, 0, s->peer.addr, s->peer.key, &s->ctx[0]);
        if (rc == 0)
            return;
        if (rc != -FI_EAGAIN)
            fail("fi_write", rc);
        (void)cq_poll(s);
    }
}

/* One latency pass: iters round trips; samples[i] one-way µs. initiator: starts each one. */
static void run_lat(struct side *s, const struct opts *o, int initiator, int send, double *samples)
{
    for (long i = 0; i < o->iters; i++) {
        uint8_t stamp = (uint8_t)(s->seq++ % 255 + 1); /* never 0, the buffer's first value */
        double t0 = now_us();
        if (send) {
            char m[CTRL] = {0}, r[CTRL];
            if (initiator) {
                send_ctrl(s, m, o->size);
                recv_ctrl(s, r, o->size);
            } else {
                recv_ctrl(s, r, o->size);
                send_ctrl(s, m, o->size);
            }
        } else if (initiator) {
            write_stamp(s, stamp);
            await_stamp(s, stamp);
        } else {
            await_stamp(s, stamp);
            write_stamp(s, stamp);
        }
        if (samples)
            samples[i] = (now_us() - t0) / 2;
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_fabric [--prov tcp] [--passes N] [--iters N] [--window N] "
                    "[--no-pin] write_bw|read_bw|write_lat|send_lat SIZE\n");
    exit(2);
}

static struct opts parse(int argc, char **argv)
{
    struct opts o = {.prov = "tcp", .iters = 0, .window = 64, .passes = 5, .pin = 1};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--no-pin"))
            o.pin = 0;
        else if (i + 1 < argc && !strcmp(argv[i], "--prov"))
            o.prov = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--passes"))
            o.passes = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--iters"))
            o.iters = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--window"))
            o.window = atoi(argv[++i]);
        else
            usage();
    }
    if (argc - i != 2)
        usage();
    o.test = argv[i];
    o.size = (size_t)strtoul(argv[i + 1], NULL, 0);
    int lat = strstr(o.test, "_lat") != NULL;
    if (strcmp(o.test, "write_bw") && strcmp(o.test, "read_bw") && strcmp(o.test, "write_lat") &&
        strcmp(o.test, "send_lat"))
        usage();
    if (o.size < 1 || o.size > (64u << 20) || (!strcmp(o.test, "send_lat") && o.size > CTRL) ||
        o.passes < 1 || o.passes > MAX_PASSES || o.window < 1 || o.window > MAX_WINDOW ||
        o.iters < 0)
        usage();
    if (o.iters == 0) /* about 1 GiB per bandwidth pass, at most 100000 operations */
        o.iters =
            lat ? 2000 : (long)((1ul << 30) / o.size < 100000 ? (1ul << 30) / o.size : 100000);
    return o;
}

int main(int argc, char **argv)
{
    struct opts o = parse(argc, argv);
    int lat = strstr(o.test, "_lat") != NULL, send = !strcmp(o.test, "send_lat");
    int is_read = !strcmp(o.test, "read_bw");
    int pfd[2];
    if (pipe(pfd) != 0)
        fail("pipe", 0);
    pid_t pid = fork();
    if (pid < 0)
        fail("fork", 0);
    static struct side s;
    if (pid > 0) { /* the target */
        close(pfd[0]);
        pin(&o, 1);
        target_up(&s, &o, pfd[1]);
        for (int p = 0; p < o.passes; p++) {
            if (lat)
                run_lat(&s, &o, 0, send, NULL);
            else
                serve_bw(&s);
        }
        char bye;
        recv_ctrl(&s, &bye, 1);
        int st = 0;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    close(pfd[1]);
    pin(&o, 0);
    uint16_t port = 0;
    if (read(pfd[0], &port, sizeof port) != (ssize_t)sizeof port)
        exit(77); /* the target could not listen: it said why */
    initiator_up(&s, &o, port);
    double v[MAX_PASSES], *samples = lat ? calloc((size_t)o.iters, sizeof *samples) : NULL;
    for (int p = 0; p < o.passes; p++) {
        if (lat) {
            run_lat(&s, &o, 1, send, samples);
            v[p] = median(samples, o.iters);
        } else {
            double us = run_bw(&s, &o, is_read);
            v[p] = (double)o.size * (double)o.iters / us / 1e3; /* GB/s */
        }
    }
    char bye = 'b';
    send_ctrl(&s, &bye, 1);
    printf("{\"tool\": \"libfabric\", \"prov\": \"%s\", \"test\": \"%s\", \"size\": %zu, "
           "\"iters\": %ld, \"window\": %d, \"unit\": \"%s\", \"passes\": [",
           o.prov, o.test, o.size, o.iters, o.window, lat ? "us" : "GB/s");
    for (int p = 0; p < o.passes; p++)
        printf("%s%.4f", p ? ", " : "", v[p]);
    double m = median(v, o.passes);
    printf("], \"median\": %.4f", m);
    if (!lat)
        printf(", \"mops\": %.4f", m * 1e3 / (double)o.size);
    printf("}\n");
    free(samples);
    return 0;
}
