/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end test helpers over real loopback TCP (or DDP over SCTP: sp_cfg.ps), shared by the
 * test_stack_* files: two sides (a context each, or one shared), N connected QP pairs set up
 * through the public CM, memory advertisements in the connection private data, and
 * posting/polling with deadlines. Only the public API (include/iwarp) is used here.
 *
 * Progress: a side in IWARP_PROGRESS_CALLER mode moves data only while someone calls into it;
 * every wait below drives such sides (iwarp_ctx_progress) while it waits, so either side may be
 * in either mode. CM channel fds are made non-blocking; waits poll them with a short timeout.
 *
 * Everything is static inline: each test file is its own executable.
 */
#ifndef IWARP_TESTS_STACK_PAIR_H
#define IWARP_TESTS_STACK_PAIR_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include (clock_gettime, nanosleep, pthread extensions)"
#endif

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "deadline.h"
#include "harness.h"
#include "iwarp/cm.h"
#include "iwarp/errors.h"
#include "iwarp/verbs.h"

/* Longest wait for any one expected thing (an event, a completion). */
#define SP_WAIT_MS        20000
/* Connections in progress at once while setting up many pairs (under the listen backlog). */
#define SP_CONNECT_WINDOW 64u
#define SP_BACKLOG        1024

/* One side: a context (or a borrowed one), a CM channel, a PD and one CQ for all its QPs. */
struct sp_side {
    struct iwarp_ctx *ctx;
    bool own_ctx;
    enum iwarp_progress_mode mode;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_comp_channel *comp; /* NULL unless asked for */
    struct iwarp_cm_id *listen;      /* server: the listener */
};

/* A memory advertisement, carried in the MPA private data (RFC 5044 §7.1: opaque to MPA). */
struct sp_advert {
    uint32_t index; /* the pair it belongs to */
    uint32_t rkey;
    uint64_t addr;
    uint64_t len;
};

/* One end of a pair: its CM id and QP, what it advertises and what its peer advertised. */
struct sp_end {
    struct iwarp_cm_id *id;
    struct iwarp_qp *qp;
    struct sp_advert mine; /* filled by the test before sp_connect_pairs */
    struct sp_advert peer; /* filled by sp_connect_pairs */
    bool established;
};

struct sp_pair {
    struct sp_end cli, srv;
};

/* How pairs are made: QP capabilities for every QP (send_cq/recv_cq are set per side) and the
 * connection parameters (private data is set per pair). */
struct sp_cfg {
    struct iwarp_qp_cap cap;
    int sq_sig_all;
    struct iwarp_srq *srv_srq; /* server QPs use this SRQ when not NULL */
    struct iwarp_conn_param param;
    enum iwarp_port_space ps;      /* 0: IWARP_PS_TCP */
    const struct sockaddr_in *dst; /* connect here (e.g. a relay); NULL: the listener */
    uint32_t rdmap_ext;            /* RFC 7306 extensions the QPs enable (IWARP_RDMAP_EXT_*) */
    uint32_t srv_rdmap_ext_off;    /* ... except these on the server's QPs */
};

static inline uint64_t sp_now_ms(void)
{
    return deadline_now_ns() / 1000000u;
}

/* A deterministic pattern octet: seed and position. */
static inline uint8_t sp_pat(uint32_t seed, size_t i)
{
    uint32_t x = seed * 2654435761u ^ (uint32_t)i * 40503u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    return (uint8_t)(x >> 24);
}

static inline void sp_fill(void *p, size_t n, uint32_t seed)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = sp_pat(seed, i);
}

/* The first octet where p differs from the pattern, or n when it matches. */
static inline size_t sp_check(const void *p, size_t n, uint32_t seed)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != sp_pat(seed, i))
            return i;
    return n;
}

#define SP_ASSERT_PATTERN(p, n, seed)                                                           \
    do {                                                                                        \
        size_t at_ = sp_check((p), (n), (seed));                                                \
        if (at_ != (size_t)(n))                                                                 \
            harness_fail(__FILE__, __LINE__, "pattern %#x differs at octet %zu of %zu", (seed), \
                         at_, (size_t)(n));                                                     \
    } while (0)

static inline void sp_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    ASSERT_TRUE(fl >= 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/* Create a side. with: share its context (NULL: create one with attr). cqe: the CQ size.
 * comp: attach a completion channel. */
static inline void sp_side_init_attr(struct sp_side *s, const struct sp_side *with,
                                     const struct iwarp_ctx_attr *attr, int cqe, bool comp)
{
    memset(s, 0, sizeof *s);
    if (with) {
        s->ctx = with->ctx;
        s->mode = with->mode;
    } else {
        ASSERT_EQ(iwarp_ctx_create(attr, &s->ctx), 0);
        s->own_ctx = true;
        s->mode = attr->progress;
    }
    ASSERT_EQ(iwarp_cm_create_channel(s->ctx, &s->ch), 0);
    sp_set_nonblock(s->ch->fd);
    ASSERT_EQ(iwarp_alloc_pd(s->ctx, &s->pd), 0);
    if (comp) {
        ASSERT_EQ(iwarp_create_comp_channel(s->ctx, &s->comp), 0);
        sp_set_nonblock(s->comp->fd);
    }
    ASSERT_EQ(iwarp_create_cq(s->ctx, cqe, s, s->comp, 0, &s->cq), 0);
}

/* Allocation hooks whose malloc_fn fills each block with 0xA5 octets: a context created with
 * them shows that nothing the library takes from malloc_fn (unlike calloc_fn, not zeroed) is
 * read before it is written (the connection's large buffers: cm_tcp.c, conn_alloc). */
static inline void *sp_poison_malloc(size_t size, void *user)
{
    (void)user;
    void *p = malloc(size);
    if (p)
        memset(p, 0xA5, size);
    return p;
}

static inline void *sp_poison_calloc(size_t n, size_t size, void *user)
{
    (void)user;
    return calloc(n, size);
}

static inline void sp_poison_free(void *p, void *user)
{
    (void)user;
    free(p);
}

static inline const struct iwarp_mem_hooks *sp_poison_hooks(void)
{
    static const struct iwarp_mem_hooks h = {
        .malloc_fn = sp_poison_malloc, .calloc_fn = sp_poison_calloc, .free_fn = sp_poison_free};
    return &h;
}

/* sp_side_init_attr with a context in mode with mem hooks (NULL: libc) and max_mr (0:
 * default). */
static inline void sp_side_init_full(struct sp_side *s, const struct sp_side *with,
                                     enum iwarp_progress_mode mode,
                                     const struct iwarp_mem_hooks *mem, uint32_t max_mr, int cqe,
                                     bool comp)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = mode;
    a.mem = mem;
    a.max_mr = max_mr;
    sp_side_init_attr(s, with, &a, cqe, comp);
}

static inline void sp_side_init(struct sp_side *s, enum iwarp_progress_mode mode, int cqe)
{
    sp_side_init_full(s, NULL, mode, NULL, 0, cqe, false);
}

/* Destroy what sp_side_init made (every QP, id and MR of the side must be gone). */
static inline void sp_side_fini(struct sp_side *s)
{
    if (s->listen)
        ASSERT_EQ(iwarp_cm_destroy_id(s->listen), 0);
    ASSERT_EQ(iwarp_destroy_cq(s->cq), 0);
    if (s->comp)
        ASSERT_EQ(iwarp_destroy_comp_channel(s->comp), 0);
    ASSERT_EQ(iwarp_dealloc_pd(s->pd), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(s->ch), 0);
    if (s->own_ctx)
        ASSERT_EQ(iwarp_ctx_destroy(s->ctx), 0);
    memset(s, 0, sizeof *s);
}

/* Register [p, p + n) for local and remote read/write (a Read sink needs REMOTE_WRITE). */
static inline struct iwarp_mr *sp_reg(struct sp_side *s, void *p, size_t n, int extra_access)
{
    struct iwarp_mr *mr = NULL;
    ASSERT_EQ(iwarp_reg_mr(s->pd, p, n,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                               IWARP_ACCESS_REMOTE_READ | extra_access,
                           &mr),
              0);
    return mr;
}

/* Drive the caller-mode sides among a and b (may be NULL) once, then wait up to 1 ms for a CM
 * event on either channel. */
static inline void sp_idle(struct sp_side *a, struct sp_side *b)
{
    struct pollfd p[2];
    nfds_t n = 0;
    struct sp_side *sides[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (!sides[i])
            continue;
        if (sides[i]->mode == IWARP_PROGRESS_CALLER)
            iwarp_ctx_progress(sides[i]->ctx, 0);
        p[n++] = (struct pollfd){.fd = sides[i]->ch->fd, .events = POLLIN};
    }
    (void)poll(p, n, 1);
}

/* The next CM event of s (NULL when none is pending now). */
static inline struct iwarp_cm_event *sp_try_event(struct sp_side *s)
{
    struct iwarp_cm_event *ev = NULL;
    int rc = iwarp_cm_get_event(s->ch, &ev);
    if (rc == IWARP_ERR_BUSY)
        return NULL;
    ASSERT_EQ(rc, 0);
    return ev;
}

/* Wait for s's next event, which must be want (while other, which may be NULL, is driven too).
 * Returns it; the caller acks it. */
static inline struct iwarp_cm_event *sp_expect_event(struct sp_side *s, struct sp_side *other,
                                                     enum iwarp_cm_event_type want)
{
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    for (;;) {
        struct iwarp_cm_event *ev = sp_try_event(s);
        if (ev) {
            if (ev->event != want)
                harness_fail(__FILE__, __LINE__, "expected %s, got %s (status %s)",
                             iwarp_cm_event_str(want), iwarp_cm_event_str(ev->event),
                             iwarp_err_name(ev->status));
            return ev;
        }
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "a %s event", iwarp_cm_event_str(want));
        sp_idle(s, other);
    }
}

static inline void sp_expect_ack(struct sp_side *s, struct sp_side *other,
                                 enum iwarp_cm_event_type want)
{
    ASSERT_EQ(iwarp_cm_ack_event(sp_expect_event(s, other, want)), 0);
}

static inline void sp_loopback4(struct sockaddr_in *a, uint16_t port)
{
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a->sin_port = htons(port);
}

/* Listen on 127.0.0.1, port 0, in port space ps (TCP, or SCTP: a UDP port, RFC 6951);
 * returns the port chosen. */
static inline uint16_t sp_listen_ps(struct sp_side *srv, enum iwarp_port_space ps)
{
    struct sockaddr_in a;
    sp_loopback4(&a, 0);
    ASSERT_EQ(iwarp_cm_create_id(srv->ch, &srv->listen, srv, ps), 0);
    ASSERT_EQ(iwarp_cm_bind_addr(srv->listen, (struct sockaddr *)&a), 0);
    ASSERT_EQ(iwarp_cm_listen(srv->listen, SP_BACKLOG), 0);
    const struct sockaddr_in *l = (const struct sockaddr_in *)&srv->listen->local_addr;
    ASSERT_EQ(l->sin_family, AF_INET);
    uint16_t port = ntohs(l->sin_port);
    ASSERT_NE(port, 0);
    return port;
}

static inline uint16_t sp_listen(struct sp_side *srv)
{
    return sp_listen_ps(srv, IWARP_PS_TCP);
}

static inline void sp_create_qp(struct sp_side *s, struct sp_end *e, const struct sp_cfg *cfg,
                                struct iwarp_srq *srq)
{
    struct iwarp_qp_init_attr qa = {.qp_context = e,
                                    .send_cq = s->cq,
                                    .recv_cq = s->cq,
                                    .srq = srq,
                                    .cap = cfg->cap,
                                    .qp_type = IWARP_QPT_RC,
                                    .sq_sig_all = cfg->sq_sig_all};
    if (cfg->rdmap_ext) {
        qa.comp_mask |= IWARP_QP_INIT_ATTR_RDMAP_EXT;
        qa.rdmap_ext = cfg->rdmap_ext;
    }
    ASSERT_EQ(iwarp_cm_create_qp(e->id, s->pd, &qa), 0);
    e->qp = e->id->qp;
    ASSERT_TRUE(e->qp != NULL);
}

/* Copy and check the peer's advertisement from an event's private data. */
static inline void sp_take_advert(const struct iwarp_cm_event *ev, struct sp_advert *out)
{
    ASSERT_EQ(ev->param.private_data_len, sizeof *out);
    memcpy(out, ev->param.private_data, sizeof *out);
}

/* One CM event during sp_connect_pairs. */
static inline void sp_connect_event(struct sp_side *srv, struct sp_side *cli,
                                    struct iwarp_cm_event *ev, struct sp_pair *pairs, uint32_t n,
                                    const struct sp_cfg *cfg, uint32_t *n_up)
{
    bool on_srv = ev->id->channel == srv->ch;
    if (ev->status != 0 ||
        (ev->event != IWARP_CM_EVENT_CONNECT_REQUEST && ev->event != IWARP_CM_EVENT_ESTABLISHED &&
         ev->event != IWARP_CM_EVENT_ADDR_RESOLVED && ev->event != IWARP_CM_EVENT_ROUTE_RESOLVED))
        harness_fail(__FILE__, __LINE__, "%s: unexpected %s (status %s)",
                     on_srv ? "server" : "client", iwarp_cm_event_str(ev->event),
                     iwarp_err_name(ev->status));
    switch (ev->event) {
    case IWARP_CM_EVENT_ADDR_RESOLVED:
        ASSERT_EQ(iwarp_cm_resolve_route(ev->id, 1000), 0);
        break;
    case IWARP_CM_EVENT_ROUTE_RESOLVED: {
        struct sp_pair *p = ev->id->context_user;
        sp_create_qp(cli, &p->cli, cfg, NULL);
        struct iwarp_conn_param cp = cfg->param;
        cp.private_data = &p->cli.mine;
        cp.private_data_len = sizeof p->cli.mine;
        ASSERT_EQ(iwarp_cm_connect(ev->id, &cp), 0);
        break;
    }
    case IWARP_CM_EVENT_CONNECT_REQUEST: {
        ASSERT_TRUE(on_srv);
        ASSERT_TRUE(ev->listen_id == srv->listen);
        struct sp_advert adv;
        sp_take_advert(ev, &adv);
        ASSERT_TRUE(adv.index < n);
        struct sp_pair *p = &pairs[adv.index];
        ASSERT_TRUE(p->srv.id == NULL);
        p->srv.id = ev->id;
        p->srv.peer = adv;
        ev->id->context_user = p;
        struct sp_cfg srv_cfg = *cfg;
        srv_cfg.rdmap_ext &= ~cfg->srv_rdmap_ext_off;
        sp_create_qp(srv, &p->srv, &srv_cfg, cfg->srv_srq);
        struct iwarp_conn_param ap = cfg->param;
        ap.private_data = &p->srv.mine;
        ap.private_data_len = sizeof p->srv.mine;
        ASSERT_EQ(iwarp_cm_accept(ev->id, &ap), 0);
        break;
    }
    case IWARP_CM_EVENT_ESTABLISHED: {
        struct sp_pair *p = ev->id->context_user;
        struct sp_end *e = on_srv ? &p->srv : &p->cli;
        ASSERT_FALSE(e->established);
        if (!on_srv)
            sp_take_advert(ev, &e->peer);
        e->established = true;
        (*n_up)++;
        break;
    }
    default:
        break;
    }
}

/* Connect n pairs from cli to srv over 127.0.0.1 (srv listens here unless it already does),
 * in cfg->ps, to cfg->dst when set.
 * pairs[i].cli.mine / .srv.mine must be filled; on return every pair is established on both
 * sides and each end knows its peer's advertisement. At most SP_CONNECT_WINDOW connections are
 * in progress at once. */
static inline void sp_connect_pairs(struct sp_side *srv, struct sp_side *cli, struct sp_pair *pairs,
                                    uint32_t n, const struct sp_cfg *cfg)
{
    enum iwarp_port_space ps = cfg->ps ? cfg->ps : IWARP_PS_TCP;
    uint16_t port;
    if (srv->listen)
        port = ntohs(((const struct sockaddr_in *)&srv->listen->local_addr)->sin_port);
    else
        port = sp_listen_ps(srv, ps);
    struct sockaddr_in dst;
    sp_loopback4(&dst, port);
    if (cfg->dst)
        dst = *cfg->dst;
    uint32_t started = 0, up = 0; /* up counts ends: 2 per pair */
    struct deadline dl = deadline_in_ms(SP_WAIT_MS + 50u * n);
    while (up < 2u * n) {
        while (started < n && started * 2u < up + 2u * SP_CONNECT_WINDOW) {
            struct sp_pair *p = &pairs[started];
            p->cli.mine.index = started;
            p->srv.mine.index = started;
            ASSERT_EQ(iwarp_cm_create_id(cli->ch, &p->cli.id, p, ps), 0);
            ASSERT_EQ(iwarp_cm_resolve_addr(p->cli.id, NULL, (struct sockaddr *)&dst, 1000), 0);
            started++;
        }
        bool any = false;
        struct sp_side *sides[2] = {srv, cli};
        for (int i = 0; i < 2; i++) {
            struct iwarp_cm_event *ev;
            while ((ev = sp_try_event(sides[i])) != NULL) {
                sp_connect_event(srv, cli, ev, pairs, n, cfg, &up);
                ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
                any = true;
            }
        }
        if (!any) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "connections: %u of %u ends up", up, 2u * n);
            sp_idle(srv, cli);
        }
    }
}

/* Graceful disconnect of every pair, started by the client (from_cli) or the server end, and
 * wait for DISCONNECTED on both ends of every pair. */
static inline void sp_disconnect_pairs(struct sp_side *srv, struct sp_side *cli,
                                       struct sp_pair *pairs, uint32_t n, bool from_cli)
{
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ(iwarp_cm_disconnect(from_cli ? pairs[i].cli.id : pairs[i].srv.id), 0);
    uint32_t got = 0;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS + 20u * n);
    while (got < 2u * n) {
        bool any = false;
        struct sp_side *sides[2] = {srv, cli};
        for (int i = 0; i < 2; i++) {
            struct iwarp_cm_event *ev;
            while ((ev = sp_try_event(sides[i])) != NULL) {
                if (ev->event != IWARP_CM_EVENT_DISCONNECTED)
                    harness_fail(__FILE__, __LINE__, "disconnecting: got %s",
                                 iwarp_cm_event_str(ev->event));
                struct sp_pair *p = ev->id->context_user;
                struct sp_end *e = i == 0 ? &p->srv : &p->cli;
                ASSERT_TRUE(e->established);
                e->established = false;
                ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
                got++;
                any = true;
            }
        }
        if (!any) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "disconnections: %u of %u ends down", got, 2u * n);
            sp_idle(srv, cli);
        }
    }
}

/* Destroy one end's QP and id. */
static inline void sp_end_destroy(struct sp_end *e)
{
    if (!e->id)
        return;
    iwarp_cm_destroy_qp(e->id);
    ASSERT_EQ(iwarp_cm_destroy_id(e->id), 0);
    e->id = NULL;
    e->qp = NULL;
}

static inline void sp_destroy_pairs(struct sp_pair *pairs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        sp_end_destroy(&pairs[i].cli);
        sp_end_destroy(&pairs[i].srv);
    }
}

/* ---- posting and polling ---------------------------------------------------------------- */

/* Post one send WR with a single SGE (len 0: no SGE). */
static inline int sp_post(struct iwarp_qp *qp, uint64_t wr_id, enum iwarp_wr_opcode op,
                          unsigned flags, void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
                          uint32_t rkey)
{
    struct iwarp_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
    struct iwarp_send_wr wr = {.wr_id = wr_id,
                               .sg_list = len ? &sge : NULL,
                               .num_sge = len ? 1 : 0,
                               .opcode = op,
                               .send_flags = flags};
    if (op == IWARP_WR_SEND_WITH_INV)
        wr.invalidate_rkey = rkey;
    else {
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
    }
    struct iwarp_send_wr *bad = NULL;
    return iwarp_post_send(qp, &wr, &bad);
}

static inline int sp_post_recv(struct iwarp_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
                               uint32_t lkey)
{
    struct iwarp_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
    struct iwarp_recv_wr wr = {
        .wr_id = wr_id, .sg_list = len ? &sge : NULL, .num_sge = len ? 1 : 0};
    struct iwarp_recv_wr *bad = NULL;
    return iwarp_post_recv(qp, &wr, &bad);
}

/* Take exactly n completions from s's CQ into wc (driving other too when it is in caller
 * mode); fails the test when they do not come within the wait. */
static inline void sp_poll_n(struct sp_side *s, struct sp_side *other, struct iwarp_wc *wc,
                             uint32_t n)
{
    uint32_t got = 0;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (got < n) {
        uint32_t want = n - got > 64u ? 64u : n - got;
        int k = iwarp_poll_cq(s->cq, (int)want, wc + got);
        ASSERT_TRUE(k >= 0);
        got += (uint32_t)k;
        if (k > 0)
            continue;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "completions: %u of %u", got, n);
        if (other && other->mode == IWARP_PROGRESS_CALLER)
            iwarp_ctx_progress(other->ctx, 0);
        if (s->mode == IWARP_PROGRESS_CALLER) {
            iwarp_ctx_progress(s->ctx, other && other->mode == IWARP_PROGRESS_CALLER ? 0 : 1);
        } else if (s->comp) {
            /* not iwarp_cq_wait: it arms the CQ, and an armed CQ with a channel would signal
             * the channel for a completion the test never asked to be told of */
            deadline_pause_us(50);
        } else {
            (void)iwarp_cq_wait(s->cq, 1);
        }
    }
}

/* One completion, which must succeed with opcode op; returns it. */
static inline struct iwarp_wc sp_poll_ok(struct sp_side *s, struct sp_side *other,
                                         enum iwarp_wc_opcode op)
{
    struct iwarp_wc wc;
    sp_poll_n(s, other, &wc, 1);
    if (wc.status != IWARP_WC_SUCCESS || wc.opcode != op)
        harness_fail(__FILE__, __LINE__, "completion wr_id %" PRIu64 ": opcode %d status %s",
                     wc.wr_id, (int)wc.opcode, iwarp_wc_status_str(wc.status));
    return wc;
}

/* The active side sends first (RFC 5044 §7.1.2 rule 4; rdma_connect(3) "IWARP SPECIFIC"): the
 * server's QP enters full operation only when the client's first FPDU arrives, and until then
 * posting a send WR on it fails with IWARP_ERR_STATE. Each pair's client sends one zero-length
 * Send into a zero-length receive, and both completions are taken (wr_id UINT64_MAX). The
 * server QPs must have their own RQ. */
static inline void sp_first_send(struct sp_side *srv, struct sp_side *cli, struct sp_pair *pairs,
                                 uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_EQ(sp_post_recv(pairs[i].srv.qp, UINT64_MAX, NULL, 0, 0), 0);
        ASSERT_EQ(sp_post(pairs[i].cli.qp, UINT64_MAX, IWARP_WR_SEND, IWARP_SEND_SIGNALED, NULL, 0,
                          0, 0, 0),
                  0);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct iwarp_wc wc = sp_poll_ok(cli, srv, IWARP_WC_SEND);
        ASSERT_EQ_U(wc.wr_id, UINT64_MAX);
        wc = sp_poll_ok(srv, cli, IWARP_WC_RECV);
        ASSERT_EQ_U(wc.wr_id, UINT64_MAX);
        ASSERT_EQ(wc.byte_len, 0);
    }
}

/* One connected pair with a registered buffer of len octets at each end, each advertised to
 * the other, and the first Send done: what most single-pair tests start from. The caller sets
 * up srv and cli (sp_side_init*); sp_rig_down takes everything down, the sides included. */
struct sp_rig {
    struct sp_side srv, cli;
    struct sp_pair pair;
    uint8_t *sbuf, *cbuf;
    struct iwarp_mr *smr, *cmr;
};

static inline void sp_rig_connect(struct sp_rig *r, size_t len, const struct sp_cfg *cfg)
{
    r->sbuf = calloc(1, len);
    r->cbuf = calloc(1, len);
    ASSERT_TRUE(r->sbuf && r->cbuf);
    r->smr = sp_reg(&r->srv, r->sbuf, len, 0);
    r->cmr = sp_reg(&r->cli, r->cbuf, len, 0);
    memset(&r->pair, 0, sizeof r->pair);
    r->pair.srv.mine =
        (struct sp_advert){.rkey = r->smr->rkey, .addr = (uintptr_t)r->sbuf, .len = len};
    r->pair.cli.mine =
        (struct sp_advert){.rkey = r->cmr->rkey, .addr = (uintptr_t)r->cbuf, .len = len};
    sp_connect_pairs(&r->srv, &r->cli, &r->pair, 1, cfg);
    sp_first_send(&r->srv, &r->cli, &r->pair, 1);
}

/* What is left of r once its pair is destroyed (sp_destroy_pairs): the MRs, the sides and the
 * buffers. For a test that ends the connection its own way (a drop, a reset). */
static inline void sp_rig_release(struct sp_rig *r)
{
    ASSERT_EQ(iwarp_dereg_mr(r->smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(r->cmr), 0);
    sp_side_fini(&r->cli);
    sp_side_fini(&r->srv);
    free(r->sbuf);
    free(r->cbuf);
}

static inline void sp_rig_down(struct sp_rig *r)
{
    sp_disconnect_pairs(&r->srv, &r->cli, &r->pair, 1, true);
    sp_destroy_pairs(&r->pair, 1);
    sp_rig_release(r);
}

/* Nothing more on s's CQ right now (after driving both sides for a moment). The 20 ms this
 * takes cannot be a poll of a condition: it is the window in which a completion that should not
 * exist is given its chance to appear. */
static inline void sp_expect_no_wc(struct sp_side *s, struct sp_side *other)
{
    struct iwarp_wc wc;
    for (int i = 0; i < 20; i++) {
        if (other && other->mode == IWARP_PROGRESS_CALLER)
            iwarp_ctx_progress(other->ctx, 0);
        int k = iwarp_poll_cq(s->cq, 1, &wc);
        ASSERT_TRUE(k >= 0);
        if (k)
            harness_fail(__FILE__, __LINE__,
                         "unexpected completion wr_id %" PRIu64 " opcode %d status %s", wc.wr_id,
                         (int)wc.opcode, iwarp_wc_status_str(wc.status));
        deadline_pause_us(1000);
    }
}

/* The next async event of s's context within the wait; fails when none comes. */
static inline struct iwarp_async_event sp_async(struct sp_side *s)
{
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    struct iwarp_async_event ev;
    for (;;) {
        int rc = iwarp_get_async_event(s->ctx, &ev);
        if (rc == 0) {
            iwarp_ack_async_event(&ev);
            return ev;
        }
        ASSERT_EQ(rc, IWARP_ERR_BUSY);
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "an async event");
        if (s->mode == IWARP_PROGRESS_CALLER)
            iwarp_ctx_progress(s->ctx, 1);
        else {
            struct pollfd p = {.fd = iwarp_async_fd(s->ctx), .events = POLLIN};
            (void)poll(&p, 1, 1);
        }
    }
}

/* A Terminate cause as libiwarp reports it (layer << 16 | etype << 8 | code). */
#define SP_CAUSE(layer, etype, code) \
    ((uint32_t)(layer) << 16 | (uint32_t)(etype) << 8 | (uint32_t)(code))

#endif
