/* SPDX-License-Identifier: BSD-2-Clause */
/* The connection manager over real TCP (127.0.0.1 and ::1): event channel semantics,
 * connect/accept with private data both ways and swapped IRD/ORD, reject with private data,
 * a refused connection, graceful disconnect from either side, an abortive close, Send, RDMA
 * Write and RDMA Read end to end with verified data, and the same in caller-progress mode.
 * At the end, the CM's sessions over DDP over SCTP (RFC 5043 §6, RFC 6581 §7): both families,
 * a disconnect from either side, a Reject with private data, a port nobody listens on, a QP
 * destroyed while connected. */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <time.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deadline.h"
#include "harness.h"
#include "iwarp/cm.h"
#include "iwarp/errors.h"
#include "iwarp/verbs.h"
#include "proc_probe.h"
#include "wire/wire_mpa.h"

#define BUF        (16u << 20)
#define WAIT_MS    5000
#define WC_WAIT_MS 20000 /* one completion: the 12 MiB Write to a caller-mode peer included */

struct side {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_cm_id *id;     /* the connection's id */
    struct iwarp_cm_id *listen; /* server: the listener */
    struct iwarp_mr *mr;
    uint8_t *buf;
};

/* A side on a new context created with attributes a. */
static void side_init_attr(struct side *s, const struct iwarp_ctx_attr *a)
{
    memset(s, 0, sizeof *s);
    ASSERT_EQ(iwarp_ctx_create(a, &s->ctx), 0);
    ASSERT_EQ(iwarp_cm_create_channel(s->ctx, &s->ch), 0);
    ASSERT_EQ(iwarp_alloc_pd(s->ctx, &s->pd), 0);
    ASSERT_EQ(iwarp_create_cq(s->ctx, 64, NULL, NULL, 0, &s->cq), 0);
    s->buf = calloc(1, BUF);
    ASSERT_TRUE(s->buf != NULL);
    ASSERT_EQ(iwarp_reg_mr(s->pd, s->buf, BUF,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                               IWARP_ACCESS_REMOTE_READ,
                           &s->mr),
              0);
}

static void side_init(struct side *s, enum iwarp_progress_mode mode)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = mode;
    side_init_attr(s, &a);
}

/* Share one context (caller mode: one thread drives both ends). */
static void side_init_shared(struct side *s, const struct side *with)
{
    memset(s, 0, sizeof *s);
    s->ctx = with->ctx;
    ASSERT_EQ(iwarp_cm_create_channel(s->ctx, &s->ch), 0);
    ASSERT_EQ(iwarp_alloc_pd(s->ctx, &s->pd), 0);
    ASSERT_EQ(iwarp_create_cq(s->ctx, 64, NULL, NULL, 0, &s->cq), 0);
    s->buf = calloc(1, BUF);
    ASSERT_EQ(iwarp_reg_mr(s->pd, s->buf, BUF,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                               IWARP_ACCESS_REMOTE_READ,
                           &s->mr),
              0);
}

static void side_fini(struct side *s, bool own_ctx)
{
    if (s->id) {
        iwarp_cm_destroy_qp(s->id);
        ASSERT_EQ(iwarp_cm_destroy_id(s->id), 0);
    }
    if (s->listen)
        ASSERT_EQ(iwarp_cm_destroy_id(s->listen), 0);
    ASSERT_EQ(iwarp_dereg_mr(s->mr), 0);
    ASSERT_EQ(iwarp_destroy_cq(s->cq), 0);
    ASSERT_EQ(iwarp_dealloc_pd(s->pd), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(s->ch), 0);
    if (own_ctx)
        ASSERT_EQ(iwarp_ctx_destroy(s->ctx), 0);
    free(s->buf);
}

static void create_qp(struct side *s, struct iwarp_cm_id *id)
{
    struct iwarp_qp_init_attr qa = {
        .send_cq = s->cq,
        .recv_cq = s->cq,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2},
        .qp_type = IWARP_QPT_RC,
        .sq_sig_all = 1};
    ASSERT_EQ(iwarp_cm_create_qp(id, s->pd, &qa), 0);
    ASSERT_TRUE(id->qp != NULL);
}

/* Take the next event, which must be of type want; returns it (ack it). */
static struct iwarp_cm_event *expect_event(struct side *s, enum iwarp_cm_event_type want)
{
    struct iwarp_cm_event *ev = NULL;
    int rc = iwarp_cm_get_event_timeout(s->ch, &ev, WAIT_MS);
    if (rc != 0)
        harness_fail(__FILE__, __LINE__, "no %s event: %s", iwarp_cm_event_str(want),
                     iwarp_err_name(rc));
    if (ev->event != want)
        harness_fail(__FILE__, __LINE__, "expected %s, got %s (status %s)",
                     iwarp_cm_event_str(want), iwarp_cm_event_str(ev->event),
                     iwarp_err_name(ev->status));
    return ev;
}

static void expect_ack(struct side *s, enum iwarp_cm_event_type want)
{
    ASSERT_EQ(iwarp_cm_ack_event(expect_event(s, want)), 0);
}

static void set_addr(struct sockaddr_storage *ss, bool v6, uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
    }
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Server: listen on loopback port 0 in port space ps; returns the port. */
static uint16_t listen_on_ps(struct side *srv, bool v6, enum iwarp_port_space ps)
{
    struct sockaddr_storage a;
    set_addr(&a, v6, 0);
    ASSERT_EQ(iwarp_cm_create_id(srv->ch, &srv->listen, srv, ps), 0);
    ASSERT_EQ(iwarp_cm_bind_addr(srv->listen, (struct sockaddr *)&a), 0);
    ASSERT_EQ(iwarp_cm_listen(srv->listen, 8), 0);
    uint16_t port = port_of(&srv->listen->local_addr);
    ASSERT_NE(port, 0);
    return port;
}

static uint16_t listen_on(struct side *srv, bool v6)
{
    return listen_on_ps(srv, v6, IWARP_PS_TCP);
}

/* Client: resolve and start connecting to port with param, in port space ps. */
static void connect_to_ps(struct side *cli, bool v6, uint16_t port,
                          const struct iwarp_conn_param *param, enum iwarp_port_space ps)
{
    struct sockaddr_storage d;
    set_addr(&d, v6, port);
    ASSERT_EQ(iwarp_cm_create_id(cli->ch, &cli->id, cli, ps), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(cli->id, NULL, (struct sockaddr *)&d, 1000), 0);
    expect_ack(cli, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_resolve_route(cli->id, 1000), 0);
    expect_ack(cli, IWARP_CM_EVENT_ROUTE_RESOLVED);
    create_qp(cli, cli->id);
    ASSERT_EQ(iwarp_cm_connect(cli->id, param), 0);
}

static void connect_to(struct side *cli, bool v6, uint16_t port,
                       const struct iwarp_conn_param *param)
{
    connect_to_ps(cli, v6, port, param, IWARP_PS_TCP);
}

/* In caller mode nothing moves unless someone polls: poll the other side (if not NULL) while
 * waiting. */
static void poll_one_both(struct side *s, struct side *other, struct iwarp_wc *wc)
{
    struct deadline dl = deadline_in_ms(WC_WAIT_MS);
    for (unsigned i = 0;; i++) {
        int n = iwarp_poll_cq(s->cq, 1, wc);
        ASSERT_TRUE(n >= 0);
        if (n == 1)
            return;
        if (other)
            iwarp_ctx_progress(other->ctx, 0);
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "a completion");
        if (i > 100)
            deadline_pause_us(100);
    }
}

/* Poll one completion (caller mode progresses inside poll_cq). */
static void poll_one(struct side *s, struct iwarp_wc *wc)
{
    poll_one_both(s, NULL, wc);
}

struct remote_buf {
    uint64_t addr;
    uint32_t rkey;
};

/* Connect cli to srv in port space ps with private data both ways and the given MPA options;
 * srv's accept carries its buffer's address and rkey (a common use of private data). */
static void establish_ps(struct side *srv, struct side *cli, bool v6,
                         const struct iwarp_conn_param *opts, struct remote_buf *rb,
                         enum iwarp_port_space ps)
{
    uint16_t port = listen_on_ps(srv, v6, ps);
    static const char cpd[] = "hello from the client";
    struct iwarp_conn_param cp = *opts;
    cp.private_data = cpd;
    cp.private_data_len = sizeof cpd;
    cp.responder_resources = 4; /* client IRD */
    cp.initiator_depth = 8;     /* client ORD */
    connect_to_ps(cli, v6, port, &cp, ps);

    struct iwarp_cm_event *ev = expect_event(srv, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_TRUE(ev->listen_id == srv->listen);
    ASSERT_TRUE(ev->id != srv->listen);
    ASSERT_TRUE(ev->id->context_user == srv);
    ASSERT_EQ(ev->status, 0);
    ASSERT_EQ(ev->param.private_data_len, sizeof cpd);
    ASSERT_MEM_EQ(ev->param.private_data, cpd, sizeof cpd);
    /* swapped into our view: what we may answer with (RFC 6581 §9.1; over SCTP the Enhanced
     * Initiate carries them, §7); a Rev 1 Request carries no IRD/ORD, which leaves the device
     * maximum */
    bool rev1 = opts->mpa_rev == 1 && ps == IWARP_PS_TCP;
    ASSERT_EQ(ev->param.responder_resources, rev1 ? 128 : 8);
    ASSERT_EQ(ev->param.initiator_depth, rev1 ? 128 : 4);
    ASSERT_EQ(ev->param.mpa_rev, ps == IWARP_PS_SCTP ? 0 : rev1 ? 1 : 2); /* no MPA over SCTP */
    ASSERT_EQ(ev->param.peer_to_peer, opts->peer_to_peer);
    ASSERT_EQ(ev->id->peer_addr.ss_family, v6 ? AF_INET6 : AF_INET);
    srv->id = ev->id;
    /* the listener cannot go while its request is unacknowledged */
    ASSERT_EQ(iwarp_cm_destroy_id(srv->listen), IWARP_ERR_BUSY);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_ack_event(ev), IWARP_ERR_STATE);

    create_qp(srv, srv->id);
    struct iwarp_sge sge = {.addr = (uintptr_t)srv->buf, .length = 4096, .lkey = srv->mr->lkey};
    struct iwarp_recv_wr rwr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1};
    struct iwarp_recv_wr *bad;
    ASSERT_EQ(iwarp_post_recv(srv->id->qp, &rwr, &bad), 0);

    struct remote_buf mine = {.addr = (uintptr_t)srv->buf, .rkey = srv->mr->rkey};
    struct iwarp_conn_param ap = {.private_data = &mine,
                                  .private_data_len = sizeof mine,
                                  .responder_resources = 8,
                                  .initiator_depth = 4};
    ASSERT_EQ(iwarp_cm_accept(srv->id, &ap), 0);
    ASSERT_EQ(iwarp_cm_accept(srv->id, &ap), IWARP_ERR_STATE);
    expect_ack(srv, IWARP_CM_EVENT_ESTABLISHED);

    ev = expect_event(cli, IWARP_CM_EVENT_ESTABLISHED);
    ASSERT_EQ(ev->status, 0);
    ASSERT_EQ(ev->param.private_data_len, sizeof mine);
    memcpy(rb, ev->param.private_data, sizeof *rb);
    ASSERT_EQ(rb->addr, mine.addr);
    ASSERT_EQ(rb->rkey, mine.rkey);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
}

static void establish(struct side *srv, struct side *cli, bool v6,
                      const struct iwarp_conn_param *opts, struct remote_buf *rb)
{
    establish_ps(srv, cli, v6, opts, rb, IWARP_PS_TCP);
}

static void post(struct side *s, enum iwarp_wr_opcode op, uint32_t off, uint32_t len,
                 const struct remote_buf *rb, uint32_t roff)
{
    struct iwarp_sge sge = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op};
    if (rb) {
        wr.wr.rdma.remote_addr = rb->addr + roff;
        wr.wr.rdma.rkey = rb->rkey;
    }
    struct iwarp_send_wr *bad;
    ASSERT_EQ(iwarp_post_send(s->id->qp, &wr, &bad), 0);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

/* Send (client first, RFC 5044 §7.1.2 rule 4), RDMA Write, RDMA Read, with data checked. */
static void exchange(struct side *srv, struct side *cli, const struct remote_buf *rb, bool caller)
{
    struct iwarp_wc wc;
    /* Send */
    fill(cli->buf, 3000, 1);
    post(cli, IWARP_WR_SEND, 0, 3000, NULL, 0);
    caller ? poll_one_both(cli, srv, &wc) : poll_one(cli, &wc);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_SEND);
    caller ? poll_one_both(srv, cli, &wc) : poll_one(srv, &wc);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RECV);
    ASSERT_EQ(wc.wr_id, 7);
    ASSERT_EQ(wc.byte_len, 3000);
    ASSERT_MEM_EQ(srv->buf, cli->buf, 3000);

    /* RDMA Write of 40000 octets (several FPDUs) into the server's buffer at 8192 */
    fill(cli->buf + 4096, 40000, 2);
    post(cli, IWARP_WR_RDMA_WRITE, 4096, 40000, rb, 8192);
    caller ? poll_one_both(cli, srv, &wc) : poll_one(cli, &wc);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_WRITE);

    /* RDMA Read back what was written (the Read completes after the Write is placed, so the
     * returned data proves the Write landed) into a fresh area */
    memset(cli->buf + 50000, 0, 15000);
    post(cli, IWARP_WR_RDMA_READ, 50000, 15000, rb, 8192 + 1000);
    caller ? poll_one_both(cli, srv, &wc) : poll_one(cli, &wc);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
    ASSERT_MEM_EQ(cli->buf + 50000, cli->buf + 4096 + 1000, 15000);
    ASSERT_MEM_EQ(srv->buf + 8192, cli->buf + 4096, 40000);
}

static void full_run_ps(bool v6, const struct iwarp_conn_param *opts, bool srv_disconnects,
                        enum iwarp_port_space ps)
{
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct remote_buf rb;
    establish_ps(&srv, &cli, v6, opts, &rb, ps);
    exchange(&srv, &cli, &rb, false);

    struct side *a = srv_disconnects ? &srv : &cli, *b = srv_disconnects ? &cli : &srv;
    ASSERT_EQ(iwarp_cm_disconnect(a->id), 0);
    expect_ack(b, IWARP_CM_EVENT_DISCONNECTED);
    expect_ack(a, IWARP_CM_EVENT_DISCONNECTED);
    ASSERT_EQ(iwarp_cm_disconnect(a->id), IWARP_ERR_STATE);
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(a->id->qp, &qa), 0);
    ASSERT_EQ(qa.qp_state, IWARP_QPS_ERR);
    ASSERT_EQ(iwarp_query_qp(b->id->qp, &qa), 0);
    ASSERT_EQ(qa.qp_state, IWARP_QPS_ERR);
    /* an id with its QP cannot be destroyed; side_fini destroys the QP first */
    ASSERT_EQ(iwarp_cm_destroy_id(a->id), IWARP_ERR_BUSY);
    side_fini(&cli, true);
    side_fini(&srv, true);
}

static void full_run(bool v6, const struct iwarp_conn_param *opts, bool srv_disconnects)
{
    full_run_ps(v6, opts, srv_disconnects, IWARP_PS_TCP);
}

TEST(connect_accept_send_write_read_disconnect_ipv4)
{
    struct iwarp_conn_param opts = {0};
    full_run(false, &opts, false);
}

TEST(connect_accept_send_write_read_disconnect_ipv6_crc_server_disconnects)
{
    struct iwarp_conn_param opts = {.crc = true};
    full_run(true, &opts, true);
}

TEST(peer_to_peer_rev2_with_markers_and_crc)
{
    struct iwarp_conn_param opts = {.crc = true, .markers = true, .peer_to_peer = true};
    full_run(false, &opts, false);
}

TEST(mpa_rev1_without_enhanced_features)
{
    struct iwarp_conn_param opts = {.mpa_rev = 1};
    full_run(false, &opts, true);
}

TEST(reject_with_private_data_reaches_the_initiator)
{
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    uint16_t port = listen_on(&srv, false);
    struct iwarp_conn_param cp = {.private_data = "x", .private_data_len = 1};
    connect_to(&cli, false, port, &cp);
    struct iwarp_cm_event *ev = expect_event(&srv, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *child = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    static const char why[] = "no room at the inn";
    uint8_t big[513] = {0};
    ASSERT_EQ(iwarp_cm_reject(child, big, sizeof big), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_cm_reject(child, why, sizeof why), 0);
    ASSERT_EQ(iwarp_cm_reject(child, why, sizeof why), IWARP_ERR_STATE);

    ev = expect_event(&cli, IWARP_CM_EVENT_REJECTED);
    ASSERT_EQ(ev->status, IWARP_ERR_MPA_REJECTED);
    ASSERT_EQ(ev->param.private_data_len, sizeof why);
    ASSERT_MEM_EQ(ev->param.private_data, why, sizeof why);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(child), 0);
    side_fini(&cli, true);
    side_fini(&srv, true);
}

TEST(connect_to_a_closed_port_reports_an_error_event)
{
    /* a port nobody listens on: bind one, note it, close it */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_storage a;
    set_addr(&a, false, 0);
    ASSERT_EQ(bind(s, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(s, (struct sockaddr *)&a, &len), 0);
    uint16_t port = port_of(&a);
    close(s);

    struct side cli;
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct iwarp_conn_param cp = {0};
    connect_to(&cli, false, port, &cp);
    /* librdmacm over iWARP (cma_iw_handler): ECONNREFUSED is REJECTED */
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_REJECTED);
    ASSERT_EQ(ev->status, IWARP_ERR_CONN_REFUSED);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), IWARP_ERR_STATE);
    side_fini(&cli, true);
}

TEST(abortive_close_of_one_side_disconnects_the_other)
{
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct remote_buf rb;
    struct iwarp_conn_param opts = {0};
    establish(&srv, &cli, false, &opts, &rb);
    exchange(&srv, &cli, &rb, false);
    /* destroying the QP resets the connection (the connection cannot outlive it) */
    iwarp_cm_destroy_qp(cli.id);
    expect_ack(&srv, IWARP_CM_EVENT_DISCONNECTED);
    ASSERT_EQ(iwarp_cm_destroy_id(cli.id), 0);
    cli.id = NULL;
    side_fini(&cli, true);
    side_fini(&srv, true);
}

TEST(argument_and_state_checks)
{
    struct side cli;
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct iwarp_cm_id *id;
#ifdef IWARP_HAVE_SCTP
    ASSERT_EQ(iwarp_cm_create_id(cli.ch, &id, NULL, IWARP_PS_SCTP), 0); /* DDP over SCTP */
    ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
#else
    ASSERT_EQ(iwarp_cm_create_id(cli.ch, &id, NULL, IWARP_PS_SCTP), IWARP_ERR_NOTSUP);
#endif
    ASSERT_EQ(iwarp_cm_create_id(cli.ch, &id, NULL, (enum iwarp_port_space)0x0111),
              IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_cm_create_id(cli.ch, &id, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(cli.ch), IWARP_ERR_BUSY);
    struct iwarp_conn_param cp = {0};
    ASSERT_EQ(iwarp_cm_connect(id, &cp), IWARP_ERR_STATE); /* nothing resolved */
    ASSERT_EQ(iwarp_cm_resolve_route(id, 0), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_cm_listen(id, 1), IWARP_ERR_STATE);
    cp.private_data_len = 513;
    uint8_t big[513] = {0};
    cp.private_data = big;
    ASSERT_EQ(iwarp_cm_connect(id, &cp), IWARP_ERR_INVAL);
    cp.private_data_len = 0;
    cp.mpa_rev = 3;
    ASSERT_EQ(iwarp_cm_connect(id, &cp), IWARP_ERR_INVAL);

    /* non-blocking channel: BUSY when empty; the fd is readable exactly while events wait */
    int fl = fcntl(cli.ch->fd, F_GETFL);
    ASSERT_EQ(fcntl(cli.ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
    struct iwarp_cm_event *ev;
    ASSERT_EQ(iwarp_cm_get_event(cli.ch, &ev), IWARP_ERR_BUSY);
    ASSERT_EQ(iwarp_cm_get_event_timeout(cli.ch, &ev, 20), IWARP_ERR_TIMEDOUT);
    struct sockaddr_storage d;
    set_addr(&d, false, 9);
    ASSERT_EQ(iwarp_cm_resolve_addr(id, NULL, (struct sockaddr *)&d, 0), 0);
    ASSERT_EQ(iwarp_cm_resolve_route(id, 0), 0);
    uint64_t cnt;
    ASSERT_EQ(read(cli.ch->fd, &cnt, sizeof cnt), (ssize_t)sizeof cnt); /* semaphore: 1 */
    ASSERT_EQ(cnt, 1);
    ASSERT_EQ(write(cli.ch->fd, &cnt, sizeof cnt), (ssize_t)sizeof cnt); /* put it back */
    ASSERT_EQ(iwarp_cm_get_event(cli.ch, &ev), 0);
    ASSERT_EQ(ev->event, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_destroy_id(id), IWARP_ERR_BUSY); /* unacked */
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_get_event(cli.ch, &ev), 0);
    ASSERT_EQ(ev->event, IWARP_CM_EVENT_ROUTE_RESOLVED);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_get_event(cli.ch, &ev), IWARP_ERR_BUSY);
    cp.mpa_rev = 0;
    ASSERT_EQ(iwarp_cm_connect(id, &cp), IWARP_ERR_STATE); /* no QP */
    ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
    ASSERT_STR_EQ(iwarp_cm_event_str(IWARP_CM_EVENT_DISCONNECTED), "DISCONNECTED");
    side_fini(&cli, true);
}

TEST(caller_progress_mode_one_thread_drives_both_ends)
{
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_CALLER);
    side_init_shared(&cli, &srv);
    struct remote_buf rb;
    struct iwarp_conn_param opts = {.crc = true};
    establish(&srv, &cli, true, &opts, &rb);
    exchange(&srv, &cli, &rb, true);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), 0);
    expect_ack(&srv, IWARP_CM_EVENT_DISCONNECTED);
    expect_ack(&cli, IWARP_CM_EVENT_DISCONNECTED);
    side_fini(&cli, false);
    side_fini(&srv, true);
}

TEST(mpa_reply_timeout_is_unreachable)
{
    /* a TCP listener that completes the handshake but never speaks MPA */
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_storage a;
    set_addr(&a, false, 0);
    ASSERT_EQ(bind(l, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
    ASSERT_EQ(listen(l, 4), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(l, (struct sockaddr *)&a, &len), 0);

    struct side cli;
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct iwarp_conn_param cp = {.timeout_ms = 200};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    connect_to(&cli, false, port_of(&a), &cp);
    /* RFC 5044 §7.1.2 rule 8: no Reply in time; librdmacm reports ETIMEDOUT as UNREACHABLE */
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_UNREACHABLE);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ASSERT_EQ(ev->status, IWARP_ERR_TIMEDOUT);
    int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ASSERT_TRUE(ms >= 190 && ms < 3000);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    side_fini(&cli, true);
    close(l);
}

/* A raw MPA responder: accept one connection on l, read the MPA Request (RFC 5044 §7.1) and
 * return it decoded (its private data copied to pd), leaving the socket open. */
static int raw_take_request(int l, struct iwarp_mpa_frame *f, uint8_t *pd)
{
    struct pollfd pfd = {.fd = l, .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, WAIT_MS), 1); /* the connection comes, or the test fails */
    int fd = accept(l, NULL, NULL);
    ASSERT_TRUE(fd >= 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t buf[20 + 512];
    size_t have = 0, need = 20;
    while (have < need) {
        ssize_t n = recv(fd, buf + have, need - have, 0);
        ASSERT_TRUE(n > 0);
        have += (size_t)n;
        if (have == 20)
            need = 20u + ((size_t)buf[18] << 8 | buf[19]);
    }
    ASSERT_EQ(iwarp_mpa_frame_decode(buf, have, f), (iwarp_ssize)have);
    memcpy(pd, f->pd, f->pd_len);
    f->pd = pd;
    return fd;
}

/* Answer req with an enhanced Reply (or Reject) whose IRD/ORD mirror its ORD/IRD (RFC 6581
 * §9.1). */
static void raw_send_reply(int fd, const struct iwarp_mpa_frame *req, bool reject)
{
    struct iwarp_mpa_frame r = {.reply = true,
                                .r = reject,
                                .s = true,
                                .rev = 2,
                                .v2 = {.ird = req->v2.ord, .ord = req->v2.ird}};
    uint8_t out[64];
    iwarp_ssize n = iwarp_mpa_frame_encode(out, sizeof out, &r);
    ASSERT_TRUE(n > 0);
    ASSERT_EQ(send(fd, out, (size_t)n, 0), n);
}

/* A responder that cannot insert markers refuses them with a Reject (Linux siw does,
 * wire-reference §2). Without markers_fallback that is REJECTED / IWARP_ERR_MPA_MARKERS; with
 * it the CM connects again asking for none, with the same private data, and the QP (never
 * started, so never flushed) carries the first message. */
TEST(markers_refused_by_a_reject_fall_back_when_allowed)
{
    for (int fallback = 0; fallback <= 1; fallback++) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_storage a;
        set_addr(&a, false, 0);
        ASSERT_EQ(bind(l, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
        ASSERT_EQ(listen(l, 4), 0);
        socklen_t alen = sizeof a;
        ASSERT_EQ(getsockname(l, (struct sockaddr *)&a, &alen), 0);

        struct side cli;
        side_init(&cli, IWARP_PROGRESS_THREAD);
        static const char hello[] = "hello";
        struct iwarp_conn_param cp = {.private_data = hello,
                                      .private_data_len = sizeof hello,
                                      .markers = true,
                                      .markers_fallback = fallback};
        connect_to(&cli, false, port_of(&a), &cp);
        struct iwarp_mpa_frame f;
        uint8_t pd[512];
        int fd = raw_take_request(l, &f, pd);
        ASSERT_TRUE(f.m); /* RFC 5044 §7.1.1: M=1 asks us for markers */
        raw_send_reply(fd, &f, true);
        if (!fallback) {
            struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_REJECTED);
            ASSERT_EQ(ev->status, IWARP_ERR_MPA_MARKERS);
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
            close(fd);
            side_fini(&cli, true);
            close(l);
            continue;
        }
        close(fd);
        fd = raw_take_request(l, &f, pd);
        ASSERT_FALSE(f.m);
        ASSERT_EQ(f.pd_len, sizeof hello);
        ASSERT_MEM_EQ(f.pd, hello, sizeof hello);
        raw_send_reply(fd, &f, false);
        struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_ESTABLISHED);
        ASSERT_EQ(ev->status, 0);
        ASSERT_FALSE(ev->param.markers);
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);

        /* the QP works: an 8-octet Send arrives as one FPDU with a DDP untagged header, MSN 1
         * (RFC 5041 §5.1: the first message on queue 0) */
        memcpy(cli.buf, "fallback", 8);
        struct iwarp_sge sge = {.addr = (uintptr_t)cli.buf, .length = 8, .lkey = cli.mr->lkey};
        struct iwarp_send_wr wr = {
            .wr_id = 7, .opcode = IWARP_WR_SEND, .sg_list = &sge, .num_sge = 1};
        struct iwarp_send_wr *bad = NULL;
        ASSERT_EQ(iwarp_post_send(cli.id->qp, &wr, &bad), 0);
        uint8_t fp[2 + 18 + 8 + 4];
        size_t have = 0;
        while (have < sizeof fp) {
            ssize_t n = recv(fd, fp + have, sizeof fp - have, 0);
            ASSERT_TRUE(n > 0);
            have += (size_t)n;
        }
        ASSERT_EQ(fp[0] << 8 | fp[1], 18 + 8);                            /* ULPDU_Length */
        ASSERT_EQ(fp[2] & 0xC3, 0x41);                                    /* T=0 L=1 DV=1 */
        ASSERT_EQ(fp[12] << 24 | fp[13] << 16 | fp[14] << 8 | fp[15], 1); /* MSN */
        ASSERT_MEM_EQ(fp + 20, "fallback", 8);
        struct iwarp_wc wc;
        poll_one(&cli, &wc);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, 7);
        close(fd); /* the peer's end: DISCONNECTED must be taken before the id goes */
        expect_ack(&cli, IWARP_CM_EVENT_DISCONNECTED);
        side_fini(&cli, true);
        close(l);
    }
}

/* Wait until the raw socket fd sees the end of the stream (FIN or RST). */
static bool raw_sees_close(int fd)
{
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t b[256];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
        if (n < 0)
            return false;
    }
}

TEST(garbage_or_silence_on_the_listener_never_reaches_the_application)
{
    struct side srv;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    uint16_t port = listen_on(&srv, false);
    struct sockaddr_storage a;
    set_addr(&a, false, port);

    /* RFC 5044 §7.1.1 Key: not an MPA Request -> the responder closes, nobody is told */
    int g = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(g, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
    static const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(send(g, junk, sizeof junk, 0), (ssize_t)sizeof junk);
    ASSERT_TRUE(raw_sees_close(g));
    close(g);

    /* a silent peer is pending when the listener goes: it is reset, nothing leaks */
    int q = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(q, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
    struct sockaddr_storage qa;
    socklen_t qlen = sizeof qa;
    ASSERT_EQ(getsockname(q, (struct sockaddr *)&qa, &qlen), 0);
    struct probe_tcp pt; /* the server's end has a file once the library has accept()ed it */
    WAIT_UNTIL(probe_tcp_find(port, port_of(&qa), &pt) && pt.inode != 0, WAIT_MS,
               "the listener to accept the silent connection");
    struct iwarp_cm_event *ev;
    ASSERT_EQ(iwarp_cm_get_event_timeout(srv.ch, &ev, 100), IWARP_ERR_TIMEDOUT);
    ASSERT_EQ(iwarp_cm_destroy_id(srv.listen), 0);
    srv.listen = NULL;
    ASSERT_TRUE(raw_sees_close(q));
    close(q);
    side_fini(&srv, true);
}

/* iwarp_destroy_qp on a CM-owned QP (instead of iwarp_cm_destroy_qp): the id lets go of it,
 * the connection resets, and nothing dangles. */
TEST(destroy_qp_directly_detaches_it_from_its_id)
{
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct remote_buf rb;
    struct iwarp_conn_param opts = {0};
    establish(&srv, &cli, false, &opts, &rb);
    exchange(&srv, &cli, &rb, false);
    ASSERT_EQ(iwarp_destroy_qp(cli.id->qp), 0);
    ASSERT_TRUE(cli.id->qp == NULL);
    /* no async event names the freed QP (rdma_destroy_qp: destroying is not an error) */
    struct iwarp_async_event aev;
    ASSERT_EQ(iwarp_get_async_event(cli.ctx, &aev), IWARP_ERR_BUSY);
    expect_ack(&srv, IWARP_CM_EVENT_DISCONNECTED);
    iwarp_cm_destroy_qp(cli.id); /* nothing left to destroy: a no-op */
    side_fini(&cli, true);
    side_fini(&srv, true);
}

TEST(modify_qp_err_aborts_and_both_sides_disconnect)
{
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct remote_buf rb;
    struct iwarp_conn_param opts = {0};
    establish(&srv, &cli, false, &opts, &rb);
    exchange(&srv, &cli, &rb, false);
    ASSERT_EQ(iwarp_modify_qp_err(srv.id->qp), 0);
    expect_ack(&srv, IWARP_CM_EVENT_DISCONNECTED);
    expect_ack(&cli, IWARP_CM_EVENT_DISCONNECTED);
    side_fini(&cli, true);
    side_fini(&srv, true);
}

/* Waits until the TCP connection between the server's port sport and the client's port cport
 * moves nothing more: the server's receive queue and the client's send queue are not empty and
 * stay as they are for 10 polls 1 ms apart (the server does not read; the client has filled
 * what the kernel takes). */
static void wait_stalled(uint16_t sport, uint16_t cport)
{
    struct deadline dl = deadline_in_ms(WAIT_MS);
    struct probe_tcp s0 = {0}, c0 = {0};
    for (unsigned same = 0; same < 10;) {
        struct probe_tcp s, c;
        ASSERT_TRUE(probe_tcp_find(sport, cport, &s));
        ASSERT_TRUE(probe_tcp_find(cport, sport, &c));
        if (s.rx_queue > 0 && c.tx_queue > 0 && s.rx_queue == s0.rx_queue &&
            c.tx_queue == c0.tx_queue)
            same++;
        else
            same = 0;
        s0 = s;
        c0 = c;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the transfer to stall (server rx_queue %u, client tx_queue %u)",
                          s.rx_queue, c.tx_queue);
        deadline_pause_us(1000);
    }
}

TEST(megabyte_write_to_a_stalled_peer_waits_for_writability)
{
    /* The server runs in caller mode and does not progress: the client's 12 MiB Write fills
     * the socket (EAGAIN or a short write), waits for EPOLLOUT, and completes only once the
     * server reads again. Then a 4 MiB Read brings the data back. */
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_CALLER);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct remote_buf rb;
    struct iwarp_conn_param opts = {.crc = true};
    establish(&srv, &cli, false, &opts, &rb);
    exchange(&srv, &cli, &rb, true);
    struct iwarp_wc wc;
    const uint32_t n = 12u << 20;
    fill(cli.buf, n, 9);
    post(&cli, IWARP_WR_RDMA_WRITE, 0, n, &rb, 4096);
    wait_stalled(port_of(&srv.id->local_addr), port_of(&srv.id->peer_addr));
    ASSERT_EQ(iwarp_poll_cq(cli.cq, 1, &wc), 0); /* still blocked on the stalled peer */
    poll_one_both(&cli, &srv, &wc);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_WRITE);
    memset(cli.buf + n, 0, BUF - n);
    post(&cli, IWARP_WR_RDMA_READ, n, BUF - n, &rb, 4096);
    poll_one_both(&cli, &srv, &wc);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
    ASSERT_MEM_EQ(srv.buf + 4096, cli.buf, n);
    ASSERT_MEM_EQ(cli.buf + n, cli.buf, BUF - n);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), 0);
    expect_ack(&srv, IWARP_CM_EVENT_DISCONNECTED);
    expect_ack(&cli, IWARP_CM_EVENT_DISCONNECTED);
    side_fini(&cli, true);
    side_fini(&srv, true);
}

#ifdef IWARP_HAVE_SCTP
/* ---- the same sessions over DDP over SCTP (RFC 5043 §6, RFC 6581 §7) ------------------------ */

/* Short SCTP retransmission timers (read when an endpoint opens): a lost packet or a silent
 * peer costs tens of milliseconds per try, not seconds. */
static void sctp_fast_timers(void)
{
    setenv("IWARP_SCTP_RTO_MS", "20,40,400", 1);
}

TEST(sctp_send_write_read_and_the_passive_side_disconnects)
{
    sctp_fast_timers();
    struct iwarp_conn_param opts = {0};
    full_run_ps(false, &opts, true, IWARP_PS_SCTP);
}

TEST(sctp_over_ipv6_send_write_read_and_the_active_side_disconnects)
{
    sctp_fast_timers();
    struct iwarp_conn_param opts = {0};
    full_run_ps(true, &opts, false, IWARP_PS_SCTP);
}

/* cli disconnects: DISCONNECTED on both sides, then both sides and their contexts end. */
static void cli_disconnects_both_end(struct side *srv, struct side *cli)
{
    ASSERT_EQ(iwarp_cm_disconnect(cli->id), 0);
    expect_ack(srv, IWARP_CM_EVENT_DISCONNECTED);
    expect_ack(cli, IWARP_CM_EVENT_DISCONNECTED);
    side_fini(cli, true);
    side_fini(srv, true);
}

/* cli connects again to srv's SCTP listener on port with one octet of private data pd[0]:
 * accepted, up on both sides, then cli disconnects; both sides end. */
static void sctp_next_session_is_accepted(struct side *srv, struct side *cli, uint16_t port,
                                          const char *pd)
{
    struct iwarp_conn_param cp = {.private_data = pd, .private_data_len = 1};
    connect_to_ps(cli, false, port, &cp, IWARP_PS_SCTP);
    struct iwarp_cm_event *ev = expect_event(srv, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(((const char *)ev->param.private_data)[0], pd[0]);
    srv->id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    create_qp(srv, srv->id);
    ASSERT_EQ(iwarp_cm_accept(srv->id, NULL), 0);
    expect_ack(srv, IWARP_CM_EVENT_ESTABLISHED);
    expect_ack(cli, IWARP_CM_EVENT_ESTABLISHED);
    cli_disconnects_both_end(srv, cli);
}

/* RFC 5043 §6.3: the responder's Reject carries its private data to the initiator; the
 * stream is free again and the next connection to the same listener is accepted. */
TEST(sctp_reject_with_private_data_reaches_the_initiator)
{
    sctp_fast_timers();
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    uint16_t port = listen_on_ps(&srv, false, IWARP_PS_SCTP);
    struct iwarp_conn_param cp = {.private_data = "x", .private_data_len = 1};
    connect_to_ps(&cli, false, port, &cp, IWARP_PS_SCTP);
    struct iwarp_cm_event *ev = expect_event(&srv, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(ev->param.private_data_len, 1);
    ASSERT_EQ(((const char *)ev->param.private_data)[0], 'x');
    struct iwarp_cm_id *child = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    /* the most a Reject can carry: 512 octets (§5.2.3; no IRD/ORD word in a Reject) */
    uint8_t why[512];
    fill(why, sizeof why, 77);
    uint8_t big[513] = {0};
    ASSERT_EQ(iwarp_cm_reject(child, big, sizeof big), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_cm_reject(child, why, sizeof why), 0);
    ASSERT_EQ(iwarp_cm_reject(child, why, sizeof why), IWARP_ERR_STATE);

    ev = expect_event(&cli, IWARP_CM_EVENT_REJECTED);
    ASSERT_EQ(ev->status, IWARP_ERR_SESSION_REJECTED);
    ASSERT_EQ(ev->param.private_data_len, sizeof why);
    ASSERT_MEM_EQ(ev->param.private_data, why, sizeof why);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_cm_destroy_id(child), 0);
    iwarp_cm_destroy_qp(cli.id);
    ASSERT_EQ(iwarp_cm_destroy_id(cli.id), 0);

    /* a new session to the same listener: accepted, up on both sides */
    sctp_next_session_is_accepted(&srv, &cli, port, "y");
}

/* A connect() that fails at once leaves the id as it was: it can connect again. Over SCTP a
 * failure after the id's session state was made (here the Initiate's private data over
 * RFC 5043 §5.2.3's 508 octets; likewise no memory for the endpoint or the association) kept
 * that state, and every later connect() of the id failed with IWARP_ERR_STATE
 * (test_alloc_failures found it). */
TEST(sctp_connect_that_fails_at_once_leaves_the_id_able_to_connect)
{
    sctp_fast_timers();
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    uint16_t port = listen_on_ps(&srv, false, IWARP_PS_SCTP);
    struct sockaddr_storage d;
    set_addr(&d, false, port);
    ASSERT_EQ(iwarp_cm_create_id(cli.ch, &cli.id, &cli, IWARP_PS_SCTP), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(cli.id, NULL, (struct sockaddr *)&d, 1000), 0);
    expect_ack(&cli, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_resolve_route(cli.id, 1000), 0);
    expect_ack(&cli, IWARP_CM_EVENT_ROUTE_RESOLVED);
    create_qp(&cli, cli.id);
    uint8_t big[512] = {0}; /* MPA's limit, over SCTP's */
    struct iwarp_conn_param cp = {.private_data = big, .private_data_len = sizeof big};
    int rc = iwarp_cm_connect(cli.id, &cp);
    ASSERT_TRUE(rc < 0);
    ASSERT_NE(rc, IWARP_ERR_STATE);
    cp = (struct iwarp_conn_param){.private_data = "z", .private_data_len = 1};
    ASSERT_EQ(iwarp_cm_connect(cli.id, &cp), 0);
    struct iwarp_cm_event *ev = expect_event(&srv, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(((const char *)ev->param.private_data)[0], 'z');
    srv.id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    create_qp(&srv, srv.id);
    ASSERT_EQ(iwarp_cm_accept(srv.id, NULL), 0);
    expect_ack(&srv, IWARP_CM_EVENT_ESTABLISHED);
    expect_ack(&cli, IWARP_CM_EVENT_ESTABLISHED);
    cli_disconnects_both_end(&srv, &cli);
}

/* An SCTP connect with cp from a new client side to a UDP port of 127.0.0.1 nobody listens on
 * (bound, noted, closed), with the short timers. Returns its first event (not acked) and the
 * milliseconds it took. */
static struct iwarp_cm_event *sctp_connect_nowhere(struct side *cli,
                                                   const struct iwarp_conn_param *cp, int64_t *ms)
{
    sctp_fast_timers();
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_storage a;
    set_addr(&a, false, 0);
    ASSERT_EQ(bind(s, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);

    side_init(cli, IWARP_PROGRESS_THREAD);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    connect_to_ps(cli, false, port_of(&a), cp, IWARP_PS_SCTP);
    struct iwarp_cm_event *ev = NULL;
    ASSERT_EQ(iwarp_cm_get_event_timeout(cli->ch, &ev, 15000), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    return ev;
}

/* Nobody listens on the UDP port: the INIT goes unanswered (the ICMP error is not SCTP's), so
 * SCTP gives up after its INIT retransmissions (RFC 4960 §5.1: Max.Init.Retransmits), bounded
 * by the short timers: UNREACHABLE (or CONNECT_ERROR), never silence. */
TEST(sctp_connect_to_a_port_nobody_listens_on_fails_in_bounded_time)
{
    struct side cli;
    int64_t ms;
    struct iwarp_cm_event *ev = sctp_connect_nowhere(&cli, &(struct iwarp_conn_param){0}, &ms);
    fprintf(stderr, "  %s (%s) after %" PRId64 " ms\n", iwarp_cm_event_str(ev->event),
            iwarp_err_name(ev->status), ms);
    ASSERT_TRUE(ev->event == IWARP_CM_EVENT_UNREACHABLE ||
                ev->event == IWARP_CM_EVENT_CONNECT_ERROR);
    ASSERT_TRUE(ev->status < 0);
    ASSERT_TRUE(ev->id == cli.id);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), IWARP_ERR_STATE);
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(cli.id->qp, &qa), 0);
    ASSERT_TRUE(qa.qp_state != IWARP_QPS_RTS);
    side_fini(&cli, true);
}

/* ev, cli's event ms milliseconds after its connect with timeout_ms 300, is that timeout:
 * UNREACHABLE / TIMEDOUT on time, and the QP never reached RTS. Acks ev. */
static void expect_connect_timed_out(struct side *cli, struct iwarp_cm_event *ev, int64_t ms)
{
    ASSERT_EQ(ev->event, IWARP_CM_EVENT_UNREACHABLE);
    ASSERT_EQ(ev->status, IWARP_ERR_TIMEDOUT);
    ASSERT_TRUE(ms >= 250 && ms < 1500);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(cli->id->qp, &qa), 0);
    ASSERT_TRUE(qa.qp_state != IWARP_QPS_RTS);
}

/* iwarp_conn_param.timeout_ms bounds an SCTP connect too (as MPA's Reply wait): long before
 * SCTP's own INIT retransmissions give up, the connect fails with UNREACHABLE / TIMEDOUT, and
 * its QP never reaches RTS. */
TEST(sctp_connect_timeout_is_unreachable)
{
    struct side cli;
    int64_t ms;
    struct iwarp_cm_event *ev =
        sctp_connect_nowhere(&cli, &(struct iwarp_conn_param){.timeout_ms = 300}, &ms);
    expect_connect_timed_out(&cli, ev, ms);
    side_fini(&cli, true);
}

/* Allocator hooks that count what is live and the requests of exactly 128 KiB, the size of an
 * llp_sctp endpoint's datagram buffer (two 64 KiB slots, one recvmmsg; any thread: the
 * progress threads allocate too). */
static atomic_size_t HOOK_LIVE, HOOK_RXBUF;

static void *hook_note(void *p, size_t size)
{
    if (p) {
        atomic_fetch_add(&HOOK_LIVE, 1);
        if (size == 2 * 65536)
            atomic_fetch_add(&HOOK_RXBUF, 1);
    }
    return p;
}

static void *hook_malloc(size_t size, void *user)
{
    (void)user;
    return hook_note(malloc(size), size);
}

static void *hook_calloc(size_t n, size_t size, void *user)
{
    (void)user;
    return hook_note(calloc(n, size), n * size);
}

static void hook_free(void *p, void *user)
{
    (void)user;
    if (p)
        atomic_fetch_sub(&HOOK_LIVE, 1);
    free(p);
}

/* verbs.h: the hooks serve every allocation, DDP over SCTP's included (llp_sctp's, e.g. each
 * endpoint's 64 KiB datagram buffer), and all of it is given back by the time both contexts
 * are destroyed. */
TEST(sctp_allocations_go_through_the_context_hooks)
{
    sctp_fast_timers();
    struct iwarp_mem_hooks hooks = {
        .malloc_fn = hook_malloc, .calloc_fn = hook_calloc, .free_fn = hook_free};
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.mem = &hooks;
    struct side srv, cli;
    side_init_attr(&srv, &a);
    side_init_attr(&cli, &a);
    size_t n_rxbuf = atomic_load(&HOOK_RXBUF);
    struct remote_buf rb;
    establish_ps(&srv, &cli, false, &(struct iwarp_conn_param){0}, &rb, IWARP_PS_SCTP);
    ASSERT_TRUE(atomic_load(&HOOK_RXBUF) >= n_rxbuf + 2); /* both sides' endpoint buffers */
    exchange(&srv, &cli, &rb, false);
    cli_disconnects_both_end(&srv, &cli);
    ASSERT_EQ(atomic_load(&HOOK_LIVE), 0u);
}

/* Destroying a connected QP ends its session abortively (our Terminate, RFC 5043 §6.2): its
 * own posted receive is flushed, the peer's posted receives are flushed in posting order, the
 * peer's QP goes to ERR and DISCONNECTED arrives there. */
TEST(sctp_destroy_qp_while_connected_flushes_the_peer_and_it_disconnects)
{
    sctp_fast_timers();
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct remote_buf rb;
    struct iwarp_conn_param opts = {0};
    establish_ps(&srv, &cli, false, &opts, &rb, IWARP_PS_SCTP);
    exchange(&srv, &cli, &rb, false);
    for (uint64_t i = 0; i < 3; i++) {
        struct iwarp_sge sge = {.addr = (uintptr_t)srv.buf, .length = 64, .lkey = srv.mr->lkey};
        struct iwarp_recv_wr rwr = {.wr_id = 100 + i, .sg_list = &sge, .num_sge = 1};
        struct iwarp_recv_wr *bad;
        ASSERT_EQ(iwarp_post_recv(srv.id->qp, &rwr, &bad), 0);
    }
    struct iwarp_sge csge = {.addr = (uintptr_t)cli.buf, .length = 64, .lkey = cli.mr->lkey};
    struct iwarp_recv_wr crwr = {.wr_id = 55, .sg_list = &csge, .num_sge = 1};
    struct iwarp_recv_wr *cbad;
    ASSERT_EQ(iwarp_post_recv(cli.id->qp, &crwr, &cbad), 0);

    iwarp_cm_destroy_qp(cli.id);
    ASSERT_TRUE(cli.id->qp == NULL);
    expect_ack(&srv, IWARP_CM_EVENT_DISCONNECTED);
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(srv.id->qp, &qa), 0);
    ASSERT_EQ(qa.qp_state, IWARP_QPS_ERR);
    for (uint64_t i = 0; i < 3; i++) {
        struct iwarp_wc wc;
        poll_one(&srv, &wc);
        ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
        ASSERT_EQ_U(wc.wr_id, 100 + i);
        ASSERT_EQ_U(wc.qp_num, srv.id->qp->qp_num);
    }
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_poll_cq(srv.cq, 1, &wc), 0);
    /* the destroyed QP's own receive was flushed to its CQ as it went */
    ASSERT_EQ(iwarp_poll_cq(cli.cq, 1, &wc), 1);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ_U(wc.wr_id, 55u);
    ASSERT_EQ(iwarp_poll_cq(cli.cq, 1, &wc), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(cli.id), 0);
    cli.id = NULL;
    side_fini(&cli, true);
    side_fini(&srv, true);
}
/* ---- one failure, one event, on both transports (docs/design.md, "Connection events") ---- */

/* A peer that takes packets and never answers: a TCP listener that never speaks MPA, or a UDP
 * socket that never answers SCTP's INIT. Returns its port; *fd is closed by the caller. */
static uint16_t silent_peer(enum iwarp_port_space ps, int *fd)
{
    bool tcp = ps == IWARP_PS_TCP;
    *fd = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
    struct sockaddr_storage a;
    set_addr(&a, false, 0);
    ASSERT_EQ(bind(*fd, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
    if (tcp)
        ASSERT_EQ(listen(*fd, 4), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return port_of(&a);
}

/* No answer within timeout_ms: UNREACHABLE, TIMEDOUT. */
static void failure_timeout(enum iwarp_port_space ps)
{
    int fd;
    uint16_t port = silent_peer(ps, &fd);
    struct side cli;
    side_init(&cli, IWARP_PROGRESS_THREAD);
    connect_to_ps(&cli, false, port, &(struct iwarp_conn_param){.timeout_ms = 200}, ps);
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_UNREACHABLE);
    ASSERT_EQ(ev->status, IWARP_ERR_TIMEDOUT);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), IWARP_ERR_STATE);
    side_fini(&cli, true);
    close(fd);
}

/* The application gives up while connecting: CONNECT_ERROR, CONN_RESET. */
static void failure_local_abort(enum iwarp_port_space ps)
{
    int fd;
    uint16_t port = silent_peer(ps, &fd);
    struct side cli;
    side_init(&cli, IWARP_PROGRESS_THREAD);
    connect_to_ps(&cli, false, port, &(struct iwarp_conn_param){.timeout_ms = 5000}, ps);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), 0);
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_CONNECT_ERROR);
    ASSERT_EQ(ev->status, IWARP_ERR_CONN_RESET);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_disconnect(cli.id), IWARP_ERR_STATE);
    side_fini(&cli, true);
    close(fd);
}

/* Two new sides, cli connecting with cp to srv's listener on *port in port space ps; returns
 * srv's request's id. */
static struct iwarp_cm_id *request_pending_cp(struct side *srv, struct side *cli,
                                              enum iwarp_port_space ps,
                                              const struct iwarp_conn_param *cp, uint16_t *port)
{
    side_init(srv, IWARP_PROGRESS_THREAD);
    side_init(cli, IWARP_PROGRESS_THREAD);
    *port = listen_on_ps(srv, false, ps);
    connect_to_ps(cli, false, *port, cp, ps);
    struct iwarp_cm_event *ev = expect_event(srv, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *child = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    return child;
}

/* Two new sides, cli connecting to srv in port space ps; returns srv's request's id. */
static struct iwarp_cm_id *request_pending(struct side *srv, struct side *cli,
                                           enum iwarp_port_space ps)
{
    uint16_t port;
    return request_pending_cp(srv, cli, ps, &(struct iwarp_conn_param){0}, &port);
}

/* The peer refuses (MPA Reject, session Reject): REJECTED with the transport's Reject code and
 * the peer's private data. */
static void failure_peer_rejects(enum iwarp_port_space ps)
{
    struct side srv, cli;
    struct iwarp_cm_id *child = request_pending(&srv, &cli, ps);
    ASSERT_EQ(iwarp_cm_reject(child, "no", 2), 0);
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_REJECTED);
    ASSERT_EQ(ev->status, ps == IWARP_PS_TCP ? IWARP_ERR_MPA_REJECTED : IWARP_ERR_SESSION_REJECTED);
    ASSERT_EQ(ev->param.private_data_len, 2);
    ASSERT_MEM_EQ(ev->param.private_data, "no", 2);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(child), 0);
    side_fini(&cli, true);
    side_fini(&srv, true);
}

/* The peer drops a request unanswered (destroys its id: abortive, as rdma_destroy_id): the
 * connection was reset, REJECTED (the kernel's cma_iw_handler), with TCP's reset or the
 * session's Terminate (RFC 5043 §6.2). */
static void failure_peer_drops_request(enum iwarp_port_space ps)
{
    struct side srv, cli;
    ASSERT_EQ(iwarp_cm_destroy_id(request_pending(&srv, &cli, ps)), 0);
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_REJECTED);
    ASSERT_EQ(ev->status, ps == IWARP_PS_TCP ? IWARP_ERR_CONN_RESET : IWARP_ERR_SESSION_TERMINATED);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    side_fini(&cli, true);
    side_fini(&srv, true);
}

/* The peer ends an established connection, gracefully or abortively (its QP to ERR):
 * DISCONNECTED on both sides. */
static void failure_peer_ends(enum iwarp_port_space ps, bool abortive)
{
    struct side srv, cli;
    side_init(&srv, IWARP_PROGRESS_THREAD);
    side_init(&cli, IWARP_PROGRESS_THREAD);
    struct remote_buf rb;
    establish_ps(&srv, &cli, false, &(struct iwarp_conn_param){0}, &rb, ps);
    if (abortive)
        ASSERT_EQ(iwarp_modify_qp_err(srv.id->qp), 0);
    else
        ASSERT_EQ(iwarp_cm_disconnect(srv.id), 0);
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_DISCONNECTED);
    ASSERT_EQ(ev->status, 0);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    expect_ack(&srv, IWARP_CM_EVENT_DISCONNECTED);
    side_fini(&cli, true);
    side_fini(&srv, true);
}

/* timeout_ms bounds the session too: the association comes up, but the listener never
 * answers the Initiate. UNREACHABLE / TIMEDOUT on time, and our Terminate withdraws the
 * Initiate (RFC 5043 §6.2): the request the listener did not answer is gone. */
TEST(sctp_session_unanswered_within_timeout_is_unreachable)
{
    sctp_fast_timers();
    struct side srv, cli;
    uint16_t port;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct iwarp_cm_id *child = request_pending_cp(
        &srv, &cli, IWARP_PS_SCTP, &(struct iwarp_conn_param){.timeout_ms = 300}, &port);
    struct iwarp_cm_event *ev = expect_event(&cli, IWARP_CM_EVENT_UNREACHABLE);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    expect_connect_timed_out(&cli, ev,
                             (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
    /* the Terminate withdrew the request: accepting it now fails */
    create_qp(&srv, child);
    struct timespec nap = {0, 200 * 1000000};
    nanosleep(&nap, NULL);
    ASSERT_EQ(iwarp_cm_accept(child, NULL), IWARP_ERR_STATE);
    iwarp_cm_destroy_qp(child);
    ASSERT_EQ(iwarp_cm_destroy_id(child), 0);
    /* the listener serves the next connect: accepted, up on both sides */
    iwarp_cm_destroy_qp(cli.id);
    ASSERT_EQ(iwarp_cm_destroy_id(cli.id), 0);
    sctp_next_session_is_accepted(&srv, &cli, port, "y");
}

TEST(each_failure_gives_the_same_event_over_tcp_and_sctp)
{
    sctp_fast_timers();
    const enum iwarp_port_space both[] = {IWARP_PS_TCP, IWARP_PS_SCTP};
    for (int i = 0; i < 2; i++) {
        failure_timeout(both[i]);
        failure_local_abort(both[i]);
        failure_peer_rejects(both[i]);
        failure_peer_drops_request(both[i]);
        failure_peer_ends(both[i], false);
        failure_peer_ends(both[i], true);
    }
}
#endif
