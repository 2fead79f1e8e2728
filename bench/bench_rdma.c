/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end loopback benchmark: RDMA Write and Read bandwidth and Send latency through the
 * whole stack (verbs, CM, MPA over kernel TCP), next to raw TCP measured in the same run with
 * the same pinning and the same busy-polling (several passes, medians, ratios whose two sides
 * come from one invocation).
 *
 * Both libiwarp contexts run in IWARP_PROGRESS_CALLER mode and each side is one thread pinned
 * to its own CPU (initiator on CPU 0, target on CPU 1), busy-polling: the target thread drives
 * its context with iwarp_ctx_progress(ctx, 0), the initiator through iwarp_poll_cq. The raw TCP
 * baselines use the same two pinned threads with MSG_DONTWAIT busy loops.
 *
 *   bench_rdma [--passes N] [--ms MS_PER_PASS] [--crc] [--sizes 65536,1048576] [--lat-iters N]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "iwarp/iwarp.h"

enum { MAX_PASSES = 32, QD = 16, MAX_LAT = 200000 };

#define CHECK(call)                              \
    do {                                         \
        int rc_ = (call);                        \
        if (rc_ < 0)                             \
            bench_die("bench_rdma", #call, rc_); \
    } while (0)

/* ---- one libiwarp endpoint -------------------------------------------------------------- */

struct ep {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_cm_id *id, *listen;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *mr;
    uint8_t *buf;
    size_t len;
};

struct remote {
    uint64_t addr;
    uint32_t rkey;
};

static void ep_init(struct ep *e, size_t len)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_CALLER;
    CHECK(iwarp_ctx_create(&a, &e->ctx));
    CHECK(iwarp_cm_create_channel(e->ctx, &e->ch));
    (void)fcntl(e->ch->fd, F_SETFL, fcntl(e->ch->fd, F_GETFL) | O_NONBLOCK);
    CHECK(iwarp_alloc_pd(e->ctx, &e->pd));
    CHECK(iwarp_create_cq(e->ctx, 4 * QD + 8, NULL, NULL, 0, &e->cq));
    e->len = len;
    e->buf = aligned_alloc(4096, len);
    if (!e->buf)
        bench_die("bench_rdma", "aligned_alloc", 0);
    memset(e->buf, 0xA5, len);
    CHECK(iwarp_reg_mr(
        e->pd, e->buf, len,
        IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ, &e->mr));
}

static void make_qp(struct ep *e, struct iwarp_cm_id *id)
{
    struct iwarp_qp_init_attr qa = {.send_cq = e->cq,
                                    .recv_cq = e->cq,
                                    .cap = {.max_send_wr = 2 * QD,
                                            .max_recv_wr = 2 * QD,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1,
                                            .max_inline_data = 64},
                                    .qp_type = IWARP_QPT_RC};
    CHECK(iwarp_cm_create_qp(id, e->pd, &qa));
}

/* Take the next CM event of e, driving both contexts meanwhile. */
static struct iwarp_cm_event *next_event(struct ep *e, struct ep *other)
{
    double deadline = bench_now_s() + 10;
    for (;;) {
        struct iwarp_cm_event *ev;
        int rc = iwarp_cm_get_event(e->ch, &ev);
        if (rc == 0)
            return ev;
        if (rc != IWARP_ERR_BUSY)
            bench_die("bench_rdma", "iwarp_cm_get_event", rc);
        if (bench_now_s() > deadline)
            bench_die("bench_rdma", "connection set-up timed out", IWARP_ERR_TIMEDOUT);
        iwarp_ctx_progress(e->ctx, 0);
        iwarp_ctx_progress(other->ctx, 0);
    }
}

static void expect(struct iwarp_cm_event *ev, enum iwarp_cm_event_type t)
{
    if (ev->event != t) {
        fprintf(stderr, "bench_rdma: CM event %s (status %d), expected %s\n",
                iwarp_cm_event_str(ev->event), ev->status, iwarp_cm_event_str(t));
        exit(1);
    }
}

/* Connect initiator i to target t over 127.0.0.1; each learns the other's buffer. */
static void connect_pair(struct ep *i, struct ep *t, bool crc, struct remote *t_buf)
{
    CHECK(iwarp_cm_create_id(t->ch, &t->listen, NULL, IWARP_PS_TCP));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(iwarp_cm_bind_addr(t->listen, (struct sockaddr *)&sin));
    CHECK(iwarp_cm_listen(t->listen, 4));
    struct sockaddr_in bound;
    memcpy(&bound, &t->listen->local_addr, sizeof bound);

    CHECK(iwarp_cm_create_id(i->ch, &i->id, NULL, IWARP_PS_TCP));
    CHECK(iwarp_cm_resolve_addr(i->id, NULL, (struct sockaddr *)&bound, 1000));
    struct iwarp_cm_event *ev = next_event(i, t);
    expect(ev, IWARP_CM_EVENT_ADDR_RESOLVED);
    iwarp_cm_ack_event(ev);
    CHECK(iwarp_cm_resolve_route(i->id, 1000));
    ev = next_event(i, t);
    expect(ev, IWARP_CM_EVENT_ROUTE_RESOLVED);
    iwarp_cm_ack_event(ev);
    make_qp(i, i->id);
    struct iwarp_conn_param p = {.responder_resources = 16, .initiator_depth = 16, .crc = crc};
    CHECK(iwarp_cm_connect(i->id, &p));

    ev = next_event(t, i);
    expect(ev, IWARP_CM_EVENT_CONNECT_REQUEST);
    t->id = ev->id;
    iwarp_cm_ack_event(ev);
    make_qp(t, t->id);
    struct remote mine = {(uint64_t)(uintptr_t)t->buf, t->mr->rkey};
    struct iwarp_conn_param ap = {.private_data = &mine,
                                  .private_data_len = sizeof mine,
                                  .responder_resources = 16,
                                  .initiator_depth = 16,
                                  .crc = crc};
    CHECK(iwarp_cm_accept(t->id, &ap));
    ev = next_event(i, t);
    expect(ev, IWARP_CM_EVENT_ESTABLISHED);
    if (ev->param.private_data_len != sizeof *t_buf)
        bench_die("bench_rdma", "private data of the accept", IWARP_ERR_PROTO);
    memcpy(t_buf, ev->param.private_data, sizeof *t_buf);
    iwarp_cm_ack_event(ev);
    /* The initiator sends first (RFC 5044 §7.1.2): a Send the target expects. */
    struct iwarp_sge s = {(uint64_t)(uintptr_t)t->buf, 1, t->mr->lkey};
    struct iwarp_recv_wr rw = {.wr_id = 1, .sg_list = &s, .num_sge = 1};
    CHECK(iwarp_post_recv(t->id->qp, &rw, NULL));
    struct iwarp_sge is = {(uint64_t)(uintptr_t)i->buf, 1, i->mr->lkey};
    struct iwarp_send_wr sw = {.wr_id = 1,
                               .sg_list = &is,
                               .num_sge = 1,
                               .opcode = IWARP_WR_SEND,
                               .send_flags = IWARP_SEND_SIGNALED};
    CHECK(iwarp_post_send(i->id->qp, &sw, NULL));
    ev = next_event(t, i);
    expect(ev, IWARP_CM_EVENT_ESTABLISHED);
    iwarp_cm_ack_event(ev);
    struct iwarp_wc wc;
    int got = 0;
    for (double d = bench_now_s() + 5; got < 2 && bench_now_s() < d;) {
        got += iwarp_poll_cq(i->cq, 1, &wc) > 0;
        got += iwarp_poll_cq(t->cq, 1, &wc) > 0;
    }
    if (got < 2)
        bench_die("bench_rdma", "first Send", IWARP_ERR_TIMEDOUT);
}

/* ---- measurements ------------------------------------------------------------------------- */

struct run {
    struct ep *i, *t;
    struct remote t_buf;
    int op; /* IWARP_WR_RDMA_WRITE or IWARP_WR_RDMA_READ */
    uint32_t size;
    double seconds;
    atomic_bool stop;
    double gbps;
};

static void *target_thread(void *arg)
{
    struct run *r = arg;
    bench_pin(1);
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed))
        iwarp_ctx_progress(r->t->ctx, 0);
    return NULL;
}

static void post_op(struct run *r, uint32_t size, uint64_t wr_id, size_t slot)
{
    size_t off = (slot * size) % (r->i->len - size + 1);
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(r->i->buf + off), size, r->i->mr->lkey};
    struct iwarp_send_wr w = {.wr_id = wr_id,
                              .sg_list = &s,
                              .num_sge = 1,
                              .opcode = (enum iwarp_wr_opcode)r->op,
                              .send_flags = IWARP_SEND_SIGNALED};
    w.wr.rdma.remote_addr = r->t_buf.addr + (slot * size) % (r->t->len - size + 1);
    w.wr.rdma.rkey = r->t_buf.rkey;
    CHECK(iwarp_post_send(r->i->id->qp, &w, NULL));
}

/* Keep QD operations in flight for r->seconds; the clock stops when a final 1-byte Read
 * completes (Writes complete on hand-off to TCP; the Read proves they were placed). */
static void bw_pass(struct run *r)
{
    pthread_t th;
    atomic_store(&r->stop, false);
    pthread_create(&th, NULL, target_thread, r);
    bench_pin(0);
    struct iwarp_wc wc[QD];
    uint64_t posted = 0, done = 0;
    double t0 = bench_now_s(), end = t0 + r->seconds;
    while (posted < QD)
        post_op(r, r->size, posted, posted), posted++;
    while (done < posted) {
        int n = iwarp_poll_cq(r->i->cq, QD, wc);
        if (n < 0)
            bench_die("bench_rdma", "poll_cq", n);
        for (int k = 0; k < n; k++) {
            if (wc[k].status != IWARP_WC_SUCCESS) {
                fprintf(stderr, "bench_rdma: completion %s\n", iwarp_wc_status_str(wc[k].status));
                exit(1);
            }
            done++;
            if (bench_now_s() < end)
                post_op(r, r->size, posted, posted), posted++;
        }
    }
    int op = r->op;
    r->op = IWARP_WR_RDMA_READ;
    post_op(r, 1, posted, 0);
    r->op = op;
    while (iwarp_poll_cq(r->i->cq, 1, wc) == 0)
        ;
    double t = bench_now_s() - t0;
    atomic_store(&r->stop, true);
    pthread_join(th, NULL);
    r->gbps = (double)done * r->size / t / 1e9;
}

/* 64-byte Send ping-pong, both sides busy-polling; returns the median one-way latency (us). */
struct lat {
    struct ep *e;
    int iters;
    bool initiator;
    double *samples;
};

static void post_recv1(struct ep *e, uint32_t size)
{
    struct iwarp_sge s = {(uint64_t)(uintptr_t)e->buf, size, e->mr->lkey};
    struct iwarp_recv_wr rw = {.wr_id = 2, .sg_list = &s, .num_sge = 1};
    CHECK(iwarp_post_recv(e->id->qp, &rw, NULL));
}

static void send1(struct ep *e, uint32_t size)
{
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(e->buf + 4096), size, e->mr->lkey};
    struct iwarp_send_wr w = {.wr_id = 3,
                              .sg_list = &s,
                              .num_sge = 1,
                              .opcode = IWARP_WR_SEND,
                              .send_flags = IWARP_SEND_SIGNALED | IWARP_SEND_INLINE};
    CHECK(iwarp_post_send(e->id->qp, &w, NULL));
}

/* Wait for the receive completion (the send completions are counted on the way). */
static void wait_recv(struct ep *e)
{
    struct iwarp_wc wc[4];
    for (;;) {
        int n = iwarp_poll_cq(e->cq, 4, wc);
        for (int k = 0; k < n; k++) {
            if (wc[k].status != IWARP_WC_SUCCESS)
                bench_die("bench_rdma", "latency completion", IWARP_ERR_IO);
            if (wc[k].opcode == IWARP_WC_RECV)
                return;
        }
    }
}

static void *lat_thread(void *arg)
{
    struct lat *l = arg;
    bench_pin(l->initiator ? 0 : 1);
    for (int k = 0; k < l->iters; k++) {
        if (l->initiator) {
            double t0 = bench_now_s();
            post_recv1(l->e, 64);
            send1(l->e, 64);
            wait_recv(l->e);
            l->samples[k] = (bench_now_s() - t0) / 2 * 1e6;
        } else {
            wait_recv(l->e);
            post_recv1(l->e, 64);
            send1(l->e, 64);
        }
    }
    return NULL;
}

static double lat_pass(struct ep *i, struct ep *t, int iters, double *samples)
{
    post_recv1(t, 64);
    struct lat li = {i, iters, true, samples}, lt = {t, iters, false, NULL};
    pthread_t a, b;
    pthread_create(&b, NULL, lat_thread, &lt);
    pthread_create(&a, NULL, lat_thread, &li);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    /* the target re-posted one receive after the last message: consume it with a last Send */
    send1(i, 64);
    wait_recv(t);
    return bench_median(samples, iters);
}

/* ---- raw TCP baselines (same pinning, same busy-polling) ------------------------------------ */

static void tcp_pair(int *a, int *b)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sin;
    if (l < 0 || bind(l, (struct sockaddr *)&sin, sl) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&sin, &sl) < 0)
        bench_die("bench_rdma", "tcp listen", 0);
    *a = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*a, (struct sockaddr *)&sin, sl) < 0)
        bench_die("bench_rdma", "tcp connect", 0);
    *b = accept(l, NULL, NULL);
    close(l);
    int one = 1;
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct tcp_run {
    int fd;
    uint32_t size;
    uint64_t total;
    double seconds, gbps;
    atomic_bool stop;
    uint8_t *buf;
};

static void *tcp_sink(void *arg)
{
    struct tcp_run *r = arg;
    bench_pin(1);
    uint64_t got = 0;
    double t0 = 0;
    for (;;) {
        ssize_t n = recv(r->fd, r->buf, r->size, MSG_DONTWAIT);
        if (n > 0) {
            if (got == 0)
                t0 = bench_now_s();
            got += (uint64_t)n;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            break;
        }
    }
    r->gbps = (double)got / (bench_now_s() - t0) / 1e9;
    return NULL;
}

static double tcp_bw_pass(uint32_t size, double seconds, uint8_t *src, uint8_t *dst)
{
    int a, b;
    tcp_pair(&a, &b);
    struct tcp_run r = {.fd = b, .size = size, .buf = dst};
    pthread_t th;
    pthread_create(&th, NULL, tcp_sink, &r);
    bench_pin(0);
    double end = bench_now_s() + seconds;
    while (bench_now_s() < end) {
        size_t off = 0;
        while (off < size) {
            ssize_t n = send(a, src + off, size - off, MSG_DONTWAIT);
            if (n > 0)
                off += (size_t)n;
            else if (errno != EAGAIN && errno != EWOULDBLOCK)
                bench_die("bench_rdma", "tcp send", 0);
        }
    }
    shutdown(a, SHUT_WR);
    pthread_join(th, NULL);
    close(a);
    close(b);
    return r.gbps;
}

static void spin_io(int fd, uint8_t *p, size_t len, bool is_send)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = is_send ? send(fd, p + off, len - off, MSG_DONTWAIT)
                            : recv(fd, p + off, len - off, MSG_DONTWAIT);
        if (n > 0)
            off += (size_t)n;
        else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            bench_die("bench_rdma", "tcp ping-pong", 0);
    }
}

struct tcp_lat {
    int fd, iters;
    bool initiator;
    double *samples;
};

static void *tcp_lat_thread(void *arg)
{
    struct tcp_lat *l = arg;
    bench_pin(l->initiator ? 0 : 1);
    uint8_t m[64] = {0};
    for (int k = 0; k < l->iters; k++) {
        if (l->initiator) {
            double t0 = bench_now_s();
            spin_io(l->fd, m, sizeof m, true);
            spin_io(l->fd, m, sizeof m, false);
            l->samples[k] = (bench_now_s() - t0) / 2 * 1e6;
        } else {
            spin_io(l->fd, m, sizeof m, false);
            spin_io(l->fd, m, sizeof m, true);
        }
    }
    return NULL;
}

static double tcp_lat_pass(int iters, double *samples)
{
    int a, b;
    tcp_pair(&a, &b);
    struct tcp_lat li = {a, iters, true, samples}, lt = {b, iters, false, NULL};
    pthread_t x, y;
    pthread_create(&y, NULL, tcp_lat_thread, &lt);
    pthread_create(&x, NULL, tcp_lat_thread, &li);
    pthread_join(x, NULL);
    pthread_join(y, NULL);
    close(a);
    close(b);
    return bench_median(samples, iters);
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    int passes = 5, ms = 1000, lat_iters = 20000;
    bool crc = false;
    uint32_t sizes[8] = {65536, 1048576};
    int nsizes = 2;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--passes") && k + 1 < argc)
            passes = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--ms") && k + 1 < argc)
            ms = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--lat-iters") && k + 1 < argc)
            lat_iters = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--crc"))
            crc = true;
        else if (!strcmp(argv[k], "--sizes") && k + 1 < argc) {
            nsizes = 0;
            for (char *tok = strtok(argv[++k], ","); tok && nsizes < 8; tok = strtok(NULL, ","))
                sizes[nsizes++] = (uint32_t)strtoul(tok, NULL, 0);
        } else {
            fprintf(stderr, "usage: bench_rdma [--passes N] [--ms MS] [--crc] [--sizes A,B] "
                            "[--lat-iters N]\n");
            return 2;
        }
    }
    if (passes < 1 || passes > MAX_PASSES || lat_iters < 1 || lat_iters > MAX_LAT || ms < 1)
        return 2;
    size_t buf_len = 64u << 20;
    struct ep i = {0}, t = {0};
    ep_init(&i, buf_len);
    ep_init(&t, buf_len);
    struct remote t_buf;
    connect_pair(&i, &t, crc, &t_buf);
    double *samples = calloc((size_t)lat_iters, sizeof *samples);
    printf("# bench_rdma: loopback, CRC %s, %d passes x %d ms, initiator CPU 0, target CPU 1, "
           "busy-poll; medians\n",
           crc ? "on" : "off", passes, ms);
    printf("%-14s %10s %12s %12s %8s\n", "test", "size", "libiwarp", "raw TCP", "ratio");
    for (int s = 0; s < nsizes; s++) {
        for (int op = 0; op < 2; op++) {
            double v[MAX_PASSES], base[MAX_PASSES];
            for (int p = 0; p < passes; p++) {
                struct run r = {.i = &i,
                                .t = &t,
                                .t_buf = t_buf,
                                .op = op ? IWARP_WR_RDMA_READ : IWARP_WR_RDMA_WRITE,
                                .size = sizes[s],
                                .seconds = ms / 1000.0};
                bw_pass(&r);
                v[p] = r.gbps;
                base[p] = tcp_bw_pass(sizes[s], ms / 1000.0, i.buf, t.buf);
            }
            double mv = bench_median(v, passes), mb = bench_median(base, passes);
            printf("%-14s %10u %9.2f GB/s %7.2f GB/s %8.2f\n",
                   op ? "rdma_read_bw" : "rdma_write_bw", sizes[s], mv, mb, mv / mb);
        }
    }
    double lv[MAX_PASSES], lb[MAX_PASSES];
    for (int p = 0; p < passes; p++) {
        lv[p] = lat_pass(&i, &t, lat_iters, samples);
        lb[p] = tcp_lat_pass(lat_iters, samples);
    }
    double mv = bench_median(lv, passes), mb = bench_median(lb, passes);
    printf("%-14s %10u %10.2f us %9.2f us %8.2f\n", "send_lat", 64u, mv, mb, mv / mb);
    free(samples);
    return 0;
}
