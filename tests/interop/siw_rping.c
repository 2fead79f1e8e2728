/*
 * siw_rping: rping's protocol (rdma-core librdmacm/examples/rping.c) spoken through libiwarp's
 * public API (verbs + CM over MPA/TCP), against the real rping on Linux siw.
 *
 *   siw_rping client --port N [--count C] [--size S] [--crc] [--first-delay MS]
 *       dials 127.0.0.1:N (a qemu hostfwd to `rping -s`), as the MPA initiator
 *   siw_rping server --port N [--count C] [--size S] [--crc]
 *       listens on 127.0.0.1:N (the guest runs `rping -c -a 10.0.2.2`), as the MPA responder
 *
 * One rping iteration (rping.c rping_test_client / rping_test_server):
 *   client: Send {start buffer TO, STag, size}   (struct rping_rdma_info, 16 octets, big-endian)
 *   server: RDMA Read of the whole start buffer, then a Send ("go ahead")
 *   client: Send {sink buffer TO, STag, size}
 *   server: RDMA Write of strlen(data) + 1 octets into the sink, then a Send ("go ahead")
 *   client: compares sink and start buffer (rping -V)
 * The start buffer holds "rdma-ping-%d: " followed by the letters 'A'..'z' cycling from a start
 * letter that advances by one per iteration, and a final NUL (rping_test_client).
 *
 * Exit status: 0 when every iteration completed and verified; 1 on any error completion, async
 * error event, data mismatch or connection failure; 2 for bad options.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iwarp/iwarp.h"

#define RPING_INFO_LEN 16u    /* struct rping_rdma_info { __be64 buf; __be32 rkey, size; } */
#define RPING_MIN_SIZE 26u    /* RPING_MIN_BUFSIZE: sizeof "2147483647" + sizeof RPING_MSG_FMT */
#define RPING_MAX_SIZE 65535u /* RPING_BUFSIZE - 1 */
#define IO_TIMEOUT_MS  30000
#define CONNECT_SECS   120

struct opts {
    bool server, crc;
    int port, count;
    uint32_t size;
    int first_delay_ms;
};

struct rping {
    struct opts o;
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_cm_id *listen, *id;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    uint8_t send_buf[RPING_INFO_LEN], recv_buf[RPING_INFO_LEN];
    uint8_t *start_buf, *rdma_buf;
    struct iwarp_mr *send_mr, *recv_mr, *start_mr, *rdma_mr;
};

static int fail(const char *what, int rc)
{
    fprintf(stderr, "siw_rping: %s: %s\n", what, rc < 0 ? iwarp_strerror(rc) : "failed");
    return -1;
}

#define TRY(call)                    \
    do {                             \
        int rc_ = (call);            \
        if (rc_ < 0)                 \
            return fail(#call, rc_); \
    } while (0)

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static struct iwarp_cm_event *cm_wait(struct rping *r, int timeout_ms)
{
    struct iwarp_cm_event *ev = NULL;
    int rc = iwarp_cm_get_event_timeout(r->ch, &ev, timeout_ms);
    if (rc < 0) {
        fail("waiting for a CM event", rc);
        return NULL;
    }
    return ev;
}

/* Report async errors (a Terminate sent or received) with their RFC cause. */
static bool async_error(struct rping *r)
{
    struct iwarp_async_event ev;
    bool bad = false;
    while (iwarp_get_async_event(r->ctx, &ev) == 0) {
        fprintf(stderr, "siw_rping: async event: %s (Terminate cause %06x%s)\n",
                iwarp_event_type_str(ev.event_type), ev.term_cause,
                ev.term_from_peer ? ", from the peer" : "");
        bad = true;
        iwarp_ack_async_event(&ev);
    }
    return bad;
}

/* Wait for the completion of wr_id (others are checked for success on the way). */
static int wait_wc(struct rping *r, uint64_t wr_id)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct iwarp_wc wc;
        int n = iwarp_poll_cq(r->cq, 1, &wc);
        if (n < 0)
            return fail("iwarp_poll_cq", n);
        if (n == 1) {
            if (wc.status != IWARP_WC_SUCCESS) {
                fprintf(stderr, "siw_rping: wr %llu: %s (cause %06x)\n",
                        (unsigned long long)wc.wr_id, iwarp_wc_status_str(wc.status),
                        wc.vendor_err);
                async_error(r);
                return -1;
            }
            if (wc.wr_id == wr_id)
                return 0;
            continue;
        }
        if (async_error(r))
            return -1;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > IO_TIMEOUT_MS)
            return fail("no completion in time", IWARP_ERR_TIMEDOUT);
        (void)iwarp_cq_wait(r->cq, 100);
    }
}

enum { WR_SEND = 1, WR_RECV = 2, WR_RDMA = 3 };

static int post_recv(struct rping *r)
{
    struct iwarp_sge s = {(uintptr_t)r->recv_buf, RPING_INFO_LEN, r->recv_mr->lkey};
    struct iwarp_recv_wr w = {.wr_id = WR_RECV, .sg_list = &s, .num_sge = 1};
    TRY(iwarp_post_recv(r->id->qp, &w, NULL));
    return 0;
}

static int post_send(struct rping *r)
{
    struct iwarp_sge s = {(uintptr_t)r->send_buf, RPING_INFO_LEN, r->send_mr->lkey};
    struct iwarp_send_wr w = {.wr_id = WR_SEND,
                              .sg_list = &s,
                              .num_sge = 1,
                              .opcode = IWARP_WR_SEND,
                              .send_flags = IWARP_SEND_SIGNALED};
    TRY(iwarp_post_send(r->id->qp, &w, NULL));
    return 0;
}

static int post_rdma(struct rping *r, enum iwarp_wr_opcode op, uint64_t remote, uint32_t rkey,
                     uint32_t len)
{
    struct iwarp_sge s = {(uintptr_t)r->rdma_buf, len, r->rdma_mr->lkey};
    struct iwarp_send_wr w = {.wr_id = WR_RDMA,
                              .sg_list = &s,
                              .num_sge = 1,
                              .opcode = op,
                              .send_flags = IWARP_SEND_SIGNALED};
    w.wr.rdma.remote_addr = remote;
    w.wr.rdma.rkey = rkey;
    TRY(iwarp_post_send(r->id->qp, &w, NULL));
    return 0;
}

static void advertise(struct rping *r, const uint8_t *buf, uint32_t rkey)
{
    put_be(r->send_buf, (uintptr_t)buf, 8);
    put_be(r->send_buf + 8, rkey, 4);
    put_be(r->send_buf + 12, r->o.size, 4);
}

static int setup_resources(struct rping *r)
{
    int rw = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ;
    TRY(iwarp_alloc_pd(r->ctx, &r->pd));
    TRY(iwarp_create_cq(r->ctx, 16, NULL, NULL, 0, &r->cq));
    r->start_buf = calloc(1, r->o.size);
    r->rdma_buf = calloc(1, r->o.size);
    if (!r->start_buf || !r->rdma_buf)
        return fail("calloc", IWARP_ERR_NOMEM);
    TRY(iwarp_reg_mr(r->pd, r->send_buf, sizeof r->send_buf, 0, &r->send_mr));
    TRY(iwarp_reg_mr(r->pd, r->recv_buf, sizeof r->recv_buf, IWARP_ACCESS_LOCAL_WRITE,
                     &r->recv_mr));
    TRY(iwarp_reg_mr(r->pd, r->start_buf, r->o.size, rw, &r->start_mr));
    TRY(iwarp_reg_mr(r->pd, r->rdma_buf, r->o.size, rw, &r->rdma_mr));
    return 0;
}

static int create_qp(struct rping *r, struct iwarp_cm_id *id)
{
    struct iwarp_qp_init_attr a = {
        .send_cq = r->cq,
        .recv_cq = r->cq,
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IWARP_QPT_RC};
    TRY(iwarp_cm_create_qp(id, r->pd, &a));
    return 0;
}

static void print_mpa(const struct iwarp_conn_param *p)
{
    printf("MPA: rev %u, CRC %s, markers %s, IRD %u ORD %u\n", p->mpa_rev, p->crc ? "on" : "off",
           p->markers ? "on" : "off", p->responder_resources, p->initiator_depth);
}

static struct iwarp_conn_param rping_param(const struct rping *r)
{
    /* rping's rdma_conn_param: responder_resources = initiator_depth = 1 */
    return (struct iwarp_conn_param){
        .responder_resources = 1, .initiator_depth = 1, .mpa_rev = 2, .crc = r->o.crc};
}

/* The client: dial until rping -s listens (the guest may still be booting). */
static int client_connect(struct rping *r)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)r->o.port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    time_t end = time(NULL) + CONNECT_SECS;
    for (;;) {
        TRY(iwarp_cm_create_id(r->ch, &r->id, r, IWARP_PS_TCP));
        TRY(iwarp_cm_resolve_addr(r->id, NULL, (struct sockaddr *)&sin, 1000));
        struct iwarp_cm_event *ev = cm_wait(r, 5000);
        if (!ev)
            return -1;
        iwarp_cm_ack_event(ev);
        TRY(iwarp_cm_resolve_route(r->id, 1000));
        if (!(ev = cm_wait(r, 5000)))
            return -1;
        iwarp_cm_ack_event(ev);
        if (create_qp(r, r->id) < 0)
            return -1;
        struct iwarp_conn_param p = rping_param(r);
        TRY(iwarp_cm_connect(r->id, &p));
        if (!(ev = cm_wait(r, 20000)))
            return -1;
        enum iwarp_cm_event_type t = ev->event;
        if (t == IWARP_CM_EVENT_ESTABLISHED)
            print_mpa(&ev->param);
        else
            fprintf(stderr, "siw_rping: %s (%s), retrying\n", iwarp_cm_event_str(t),
                    iwarp_strerror(ev->status));
        iwarp_cm_ack_event(ev);
        if (t == IWARP_CM_EVENT_ESTABLISHED)
            return 0;
        iwarp_cm_destroy_qp(r->id);
        TRY(iwarp_cm_destroy_id(r->id));
        r->id = NULL;
        if (time(NULL) > end)
            return fail("could not connect", IWARP_ERR_TIMEDOUT);
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int server_accept(struct rping *r)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)r->o.port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    TRY(iwarp_cm_create_id(r->ch, &r->listen, r, IWARP_PS_TCP));
    TRY(iwarp_cm_bind_addr(r->listen, (struct sockaddr *)&sin));
    TRY(iwarp_cm_listen(r->listen, 1));
    printf("listening on 127.0.0.1:%d\n", r->o.port);
    fflush(stdout);
    struct iwarp_cm_event *ev = cm_wait(r, 180000);
    if (!ev)
        return -1;
    if (ev->event != IWARP_CM_EVENT_CONNECT_REQUEST) {
        iwarp_cm_ack_event(ev);
        return fail("expected a connect request", IWARP_ERR_PROTO);
    }
    r->id = ev->id;
    iwarp_cm_ack_event(ev);
    if (create_qp(r, r->id) < 0 || post_recv(r) < 0)
        return -1;
    struct iwarp_conn_param p = rping_param(r);
    TRY(iwarp_cm_accept(r->id, &p));
    if (!(ev = cm_wait(r, 20000)))
        return -1;
    bool ok = ev->event == IWARP_CM_EVENT_ESTABLISHED;
    if (ok)
        print_mpa(&ev->param);
    iwarp_cm_ack_event(ev);
    return ok ? 0 : fail("expected ESTABLISHED", IWARP_ERR_PROTO);
}

/* rping_test_client's data: "rdma-ping-%d: " then letters cycling from 'A' + ping % 58. */
static void fill_pattern(uint8_t *buf, uint32_t size, int ping)
{
    int n = snprintf((char *)buf, size, "rdma-ping-%d: ", ping);
    uint8_t c = (uint8_t)(65 + ping % 58);
    for (uint32_t i = (uint32_t)n; i < size - 1; i++) {
        buf[i] = c;
        c = c == 122 ? 65 : (uint8_t)(c + 1);
    }
    buf[size - 1] = 0;
}

static int run_client(struct rping *r)
{
    for (int ping = 0; ping < r->o.count; ping++) {
        fill_pattern(r->start_buf, r->o.size, ping);
        memset(r->rdma_buf, 0, r->o.size);
        if (post_recv(r) < 0)
            return -1;
        advertise(r, r->start_buf, r->start_mr->rkey);
        if (post_send(r) < 0 || wait_wc(r, WR_SEND) < 0 || wait_wc(r, WR_RECV) < 0)
            return -1;
        if (post_recv(r) < 0)
            return -1;
        advertise(r, r->rdma_buf, r->rdma_mr->rkey);
        if (post_send(r) < 0 || wait_wc(r, WR_SEND) < 0 || wait_wc(r, WR_RECV) < 0)
            return -1;
        if (memcmp(r->start_buf, r->rdma_buf, r->o.size) != 0)
            return fail("data mismatch (rping -V)", IWARP_ERR_PROTO);
        printf("ping %d ok\n", ping);
    }
    return 0;
}

static int run_server(struct rping *r)
{
    for (int ping = 0; ping < r->o.count; ping++) {
        /* the client's start buffer: RDMA Read it all */
        if (wait_wc(r, WR_RECV) < 0)
            return -1;
        uint64_t addr = get_be(r->recv_buf, 8);
        uint32_t rkey = (uint32_t)get_be(r->recv_buf + 8, 4);
        uint32_t len = (uint32_t)get_be(r->recv_buf + 12, 4);
        if (len > r->o.size)
            return fail("advertised size over ours", IWARP_ERR_PROTO);
        if (post_recv(r) < 0 || post_rdma(r, IWARP_WR_RDMA_READ, addr, rkey, len) < 0 ||
            wait_wc(r, WR_RDMA) < 0)
            return -1;
        printf("server ping data: %s\n", (char *)r->rdma_buf);
        if (post_send(r) < 0 || wait_wc(r, WR_SEND) < 0)
            return -1;
        /* the client's sink: RDMA Write strlen + 1 octets */
        if (wait_wc(r, WR_RECV) < 0)
            return -1;
        addr = get_be(r->recv_buf, 8);
        rkey = (uint32_t)get_be(r->recv_buf + 8, 4);
        uint32_t wlen = (uint32_t)strnlen((char *)r->rdma_buf, r->o.size - 1) + 1;
        if (ping + 1 < r->o.count && post_recv(r) < 0)
            return -1;
        if (post_rdma(r, IWARP_WR_RDMA_WRITE, addr, rkey, wlen) < 0 || wait_wc(r, WR_RDMA) < 0 ||
            post_send(r) < 0 || wait_wc(r, WR_SEND) < 0)
            return -1;
    }
    return 0;
}

/* rping ends with a disconnect from the client; the server waits for it (disconnecting first
 * races rping's own CM and CQ threads: its client may see DISCONNECTED before the last
 * completion and fail). Then everything is freed in reverse order. */
static void teardown(struct rping *r)
{
    if (r->id) {
        struct iwarp_cm_event *ev;
        if (!r->o.server)
            iwarp_cm_disconnect(r->id);
        for (int i = 0; i < 4 && iwarp_cm_get_event_timeout(r->ch, &ev, 5000) == 0; i++) {
            bool done = ev->event == IWARP_CM_EVENT_DISCONNECTED;
            iwarp_cm_ack_event(ev);
            if (done)
                break;
        }
        iwarp_cm_destroy_qp(r->id);
        iwarp_cm_destroy_id(r->id);
    }
    if (r->listen)
        iwarp_cm_destroy_id(r->listen);
    struct iwarp_mr *mrs[] = {r->send_mr, r->recv_mr, r->start_mr, r->rdma_mr};
    for (size_t i = 0; i < 4; i++)
        if (mrs[i])
            iwarp_dereg_mr(mrs[i]);
    free(r->start_buf);
    free(r->rdma_buf);
    if (r->cq)
        iwarp_destroy_cq(r->cq);
    if (r->pd)
        iwarp_dealloc_pd(r->pd);
    if (r->ch)
        iwarp_cm_destroy_channel(r->ch);
    if (r->ctx && iwarp_ctx_destroy(r->ctx) < 0)
        fprintf(stderr, "siw_rping: iwarp_ctx_destroy: an object was left\n");
}

static void usage(void)
{
    fprintf(stderr,
            "usage: siw_rping client|server --port N [--count C] [--size S] [--crc] "
            "[--first-delay MS]\n"
            "  --count C   iterations (default 10)   --size S  ping size %u..%u (default 64)\n"
            "  --crc       ask for MPA CRC32C (RFC 5044 §4.4; siw's default is off)\n"
            "  --first-delay MS  client: wait MS ms after ESTABLISHED before the first Send.\n"
            "              siw 6.1's siw_accept sends the MPA Reply before it installs its\n"
            "              socket callbacks; an FPDU arriving in between can stall.\n",
            RPING_MIN_SIZE, RPING_MAX_SIZE);
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"port", 1, 0, 'p'},        {"count", 1, 0, 'C'},   {"size", 1, 0, 'S'}, {"crc", 0, 0, 'c'},
        {"first-delay", 1, 0, 'f'}, {"verbose", 0, 0, 'v'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    *o = (struct opts){.count = 10, .size = 64};
    if (argc < 2 || (strcmp(argv[1], "client") && strcmp(argv[1], "server")))
        return -1;
    o->server = !strcmp(argv[1], "server");
    optind = 2;
    int ch;
    while ((ch = getopt_long(argc, argv, "p:C:S:cf:vh", lo, NULL)) != -1) {
        switch (ch) {
        case 'p':
            o->port = atoi(optarg);
            break;
        case 'C':
            o->count = atoi(optarg);
            break;
        case 'S':
            o->size = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'c':
            o->crc = true;
            break;
        case 'f':
            o->first_delay_ms = atoi(optarg);
            break;
        case 'v':
            break;
        default:
            return -1;
        }
    }
    if (o->port <= 0 || o->port > 65535 || o->count < 1 || o->size < RPING_MIN_SIZE ||
        o->size > RPING_MAX_SIZE || o->first_delay_ms < 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct rping r = {0};
    if (parse(argc, argv, &r.o) < 0) {
        usage();
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (iwarp_ctx_create(NULL, &r.ctx) < 0 || iwarp_cm_create_channel(r.ctx, &r.ch) < 0 ||
        setup_resources(&r) < 0)
        return 1;
    int rc = r.o.server ? server_accept(&r) : client_connect(&r);
    if (rc == 0 && !r.o.server && r.o.first_delay_ms) {
        struct timespec ts = {r.o.first_delay_ms / 1000,
                              (long)(r.o.first_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (rc == 0)
        rc = r.o.server ? run_server(&r) : run_client(&r);
    if (rc == 0)
        printf("%d iterations of %u octets verified\n", r.o.count, r.o.size);
    teardown(&r);
    return rc == 0 ? 0 : 1;
}
