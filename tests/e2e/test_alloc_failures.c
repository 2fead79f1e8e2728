/* SPDX-License-Identifier: BSD-2-Clause */
/* Memory running out: every allocation of a whole connection's life fails, in turn.
 *
 * The scenario, two contexts in one process (a server and a client, each in caller-driven
 * progress with its own struct iwarp_mem_hooks), over loopback TCP (also with a packet trace)
 * and, when usrsctp is built, DDP over SCTP: context, CM channel, PD, completion channel, CQ on
 * it, SRQ, MRs (one for fast registration), a type-1 window, a DDP-level QP (never connected);
 * the server listens; the client resolves, creates its QP and connects; the server creates its
 * QP on the SRQ and accepts; one Send (the server's completion channel told of its receive), one
 * RDMA Write and one RDMA Read each way, the data checked. Then a second connection on the same
 * listener while the first is up (over SCTP it joins the first one's association), its exchange
 * and disconnect, and the first connection's exchange again: a failure of the second must not
 * disturb the first. The client disconnects the first, both see DISCONNECTED, and everything is
 * destroyed in order.
 *
 * Over TCP the scenario runs a third time with CRC on (both contexts' connections then also
 * allocate their TX staging rings once the MPA negotiation has settled: the server's before it
 * accepts, the client's when the Reply is in; CRC off, none: each run counts them).
 *
 * A first run counts the allocations each side's hooks are asked for (A per side). Then, for
 * each side and each N in 1..A+2 (a run may ask for one more than the first), the scenario runs
 * again with that side's Nth allocation failing
 * ("only"), and again with every allocation from the Nth on failing ("from": teardown then runs
 * with no memory at all). Each run is a forked child: a crash, a hang or a leak fails that N
 * only, and the parent names it with the ALLOC_FAIL_ONE value that repeats it. A run passes
 * when:
 *  - every call either succeeds or returns a negative IWARP_ERR_* that names a real code, and a
 *    failed create leaves its out pointer NULL; a failure is only accepted when an allocation
 *    was failed (IWARP_ERR_NOMEM only from a side whose own allocation failed);
 *  - in "only" runs a call that failed with NOMEM is made once more, and must succeed (the
 *    failure left nothing half-changed: the same id connects, the same PD takes the QP), and
 *    the scenario goes on: the run must end connected, with the data moved, unless the failure
 *    was one only an event can report (the server's, inside its progress);
 *  - a connection that fails after connect() returned 0 reaches the client as an event with a
 *    negative status (CONNECT_ERROR, REJECTED, UNREACHABLE) within the wait, however the server
 *    failed; a connection both ends report ESTABLISHED carries every operation and disconnects;
 *  - the scenario then destroys whatever exists, every destroy returns 0 (iwarp_ctx_destroy
 *    too: nothing half-built is still counted by a context), the hooks have freed everything
 *    they served, no file descriptor is left open, and LeakSanitizer finds nothing at the
 *    child's exit (the ASan build), so the library's libc allocations are checked for leaks too.
 * A second test connects to a TCP peer that never answers, failing each allocation of
 * connect() in turn: connect() fails, or UNREACHABLE comes at the MPA timeout.
 *
 * Outside the hooks, and so never failed here (docs/design.md, "Memory running out"): usrsctp's
 * own allocations (its stack, sockets, timers, mbufs, the buffer of each message it hands over)
 * and the library's other documented libc allocations (include/iwarp/verbs.h, struct
 * iwarp_mem_hooks: the process-wide SCTP path table, a packet trace file's shared state and
 * libpcap's); libc's own (pthread, stdio); the kernel's (sockets, epoll, eventfd, timerfd).
 * Over SCTP a packet from a new peer that finds no memory for its path is dropped, as if lost:
 * SCTP retransmits it, or the connect times out (UNREACHABLE).
 *
 * ALLOC_FAIL_ONE=srv:12:only (side srv|cli, N, only|from; or silent:N for the second test) runs
 * one case in-process and prints each call that failed, the library's log and where the failed
 * allocation was asked for (add HARNESS_NOFORK=1 for gdb). */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iwarp/ddp.h"
#include "llp/llp_conn.h"
#include "stack_pair.h"

#define BUFSZ   4096u
#define MSG     256u
#define WAIT_MS 10000u /* any one wait of a run: a connection failure included */
#define KILL_S  60u    /* a child still running after this has hung */

/* Offsets in each side's buffer. */
#define OFF_SEND  0u    /* what this side sends */
#define OFF_RECV  1024u /* where the peer's Send lands */
#define OFF_WTGT  2048u /* where the peer's Write lands */
#define OFF_RSINK 3072u /* where this side's Read lands */
#define OFF_RSRC  3584u /* what the peer reads */

/* ---- failing allocator ----------------------------------------------------------------- */

struct fhooks {
    struct iwarp_mem_hooks hooks;
    atomic_long served; /* allocation requests so far (failed ones included) */
    atomic_long live;   /* served and not yet freed */
    atomic_long failed; /* requests failed on purpose */
    atomic_long stages; /* requests for a TX staging ring (IWARP_LLP_CONN_TX_STAGE octets) */
    long fail_at;       /* 0: none; else the request number that fails */
    bool fail_from;     /* and every one after it */
};

static bool fh_verbose; /* ALLOC_FAIL_ONE: where each failed allocation was asked for */

#if defined(__SANITIZE_ADDRESS__)
void __sanitizer_print_stack_trace(void);
#define FH_STACK() __sanitizer_print_stack_trace()
#else
#define FH_STACK() ((void)0)
#endif

static bool fh_fail(struct fhooks *h, size_t size)
{
    long n = atomic_fetch_add(&h->served, 1) + 1;
    if (size == IWARP_LLP_CONN_TX_STAGE)
        atomic_fetch_add(&h->stages, 1);
    if (h->fail_at && (n == h->fail_at || (h->fail_from && n > h->fail_at))) {
        atomic_fetch_add(&h->failed, 1);
        if (fh_verbose) {
            fprintf(stderr, "  allocation %ld fails here:\n", n);
            FH_STACK();
        }
        return true;
    }
    return false;
}

static void *fh_malloc(size_t n, void *user)
{
    struct fhooks *h = user;
    if (fh_fail(h, n))
        return NULL;
    void *p = malloc(n ? n : 1);
    if (p)
        atomic_fetch_add(&h->live, 1);
    return p;
}

static void *fh_calloc(size_t k, size_t n, void *user)
{
    struct fhooks *h = user;
    if (fh_fail(h, k * n))
        return NULL;
    void *p = calloc(k ? k : 1, n ? n : 1);
    if (p)
        atomic_fetch_add(&h->live, 1);
    return p;
}

static void fh_free(void *p, void *user)
{
    struct fhooks *h = user;
    free(p);
    atomic_fetch_sub(&h->live, 1);
}

static void fh_init(struct fhooks *h, long fail_at, bool fail_from)
{
    memset(h, 0, sizeof *h);
    h->hooks = (struct iwarp_mem_hooks){
        .malloc_fn = fh_malloc, .calloc_fn = fh_calloc, .free_fn = fh_free, .user = h};
    h->fail_at = fail_at;
    h->fail_from = fail_from;
}

/* ---- the scenario ---------------------------------------------------------------------- */

struct side {
    const char *name;
    struct fhooks h;
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_comp_channel *comp;
    struct iwarp_cq *cq;
    struct iwarp_srq *srq;
    struct iwarp_mr *mr;
    struct iwarp_mr *fmr; /* for fast registration (iwarp_alloc_mr) */
    struct iwarp_mw *mw;  /* a type-1 window */
    struct iwarp_qp *dqp; /* a DDP-level QP, never connected */
    struct iwarp_cm_id *listen, *id;
    struct iwarp_cm_id *other_id; /* the connection not being worked on (swap_connections) */
    struct sp_advert other_peer;
    uint8_t *buf;
    struct sp_advert peer;
    bool established, done; /* done: the connection's end (or failure) was reported */
    int fail_rc;            /* the first failure this side saw (0: none) */
    const char *fail_step;
};

struct world {
    struct side s[2]; /* [0] server, [1] client */
    enum iwarp_port_space ps;
    bool verbose;
    const char *trace; /* a packet trace file for both contexts (NULL: none) */
    bool retry;        /* a call failing with NOMEM is made again (one allocation fails) */
    long recovered;    /* calls that succeeded so */
};

#define SRV(w) (&(w)->s[0])
#define CLI(w) (&(w)->s[1])

static long total_failed(struct world *w)
{
    return atomic_load(&SRV(w)->h.failed) + atomic_load(&CLI(w)->h.failed);
}

/* rc from attempt `attempt` (0, 1) at step what of side s: true when it succeeded. A failure
 * must be a real IWARP_ERR_* code, and an allocation must have been failed somewhere; a side's
 * own NOMEM needs one of its own allocations failed. In "only" runs (w->retry) a call that
 * failed with NOMEM is made once more: with no allocation failing now, it must succeed (the
 * failure left nothing half-changed), and the scenario goes on. */
static bool step(struct world *w, struct side *s, const char *what, int rc, int attempt)
{
    if (rc == 0) {
        if (attempt > 0)
            w->recovered++;
        return true;
    }
    if (rc > 0 || strcmp(iwarp_err_name(rc), "IWARP_ERR_UNKNOWN") == 0)
        harness_fail(__FILE__, __LINE__, "%s: %s returned %d, not an IWARP_ERR_* code", s->name,
                     what, rc);
    if (total_failed(w) == 0)
        harness_fail(__FILE__, __LINE__, "%s: %s failed with %s and no allocation had failed",
                     s->name, what, iwarp_err_name(rc));
    if (rc == IWARP_ERR_NOMEM && atomic_load(&s->h.failed) == 0)
        harness_fail(__FILE__, __LINE__, "%s: %s failed with NOMEM, no allocation of its had",
                     s->name, what);
    if (attempt > 0)
        harness_fail(__FILE__, __LINE__, "%s: %s failed with %s once more, no allocation failing",
                     s->name, what, iwarp_err_name(rc));
    if (w->verbose)
        fprintf(stderr, "  %s: %s -> %s\n", s->name, what, iwarp_err_name(rc));
    if (w->retry && rc == IWARP_ERR_NOMEM)
        return false; /* tried again */
    if (!s->fail_rc) {
        s->fail_rc = rc;
        s->fail_step = what;
    }
    return false;
}

/* A step that creates *out: a failure leaves it NULL (nothing half-built). */
#define CREATE(w, s, what, call, out)                                                           \
    ({                                                                                          \
        bool ok_ = false;                                                                       \
        for (int try_ = 0;; try_++) {                                                           \
            int rc_ = (call);                                                                   \
            ok_ = step((w), (s), (what), rc_, try_);                                            \
            if (!ok_ && (const void *)(out) != NULL)                                            \
                harness_fail(__FILE__, __LINE__, "%s: %s failed but set its output", (s)->name, \
                             (what));                                                           \
            if (ok_ || try_ > 0 || !(w)->retry || rc_ != IWARP_ERR_NOMEM)                       \
                break;                                                                          \
        }                                                                                       \
        ok_;                                                                                    \
    })

#define STEP(w, s, what, call) CREATE((w), (s), (what), (call), (const void *)0)

/* Drive both contexts once, then wait up to 1 ms for a CM event. */
static void pump(struct world *w)
{
    struct pollfd p[2];
    nfds_t n = 0;
    for (int i = 0; i < 2; i++) {
        if (w->s[i].ctx)
            iwarp_ctx_progress(w->s[i].ctx, 0);
        if (w->s[i].ch)
            p[n++] = (struct pollfd){.fd = w->s[i].ch->fd, .events = POLLIN};
    }
    (void)poll(p, n, 1);
}

static struct iwarp_cm_event *next_event(struct side *s)
{
    if (!s->ch)
        return NULL;
    struct iwarp_cm_event *ev = NULL;
    int rc = iwarp_cm_get_event(s->ch, &ev);
    if (rc == IWARP_ERR_BUSY)
        return NULL;
    ASSERT_EQ(rc, 0);
    return ev;
}

static void log_line(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)level;
    fprintf(stderr, "  [%s] %s\n", ((const struct side *)user)->name, msg);
}

static bool side_up(struct world *w, struct side *s)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_CALLER;
    a.mem = &s->h.hooks;
    a.max_mr = 16;
    a.trace_pcap = w->trace;
    if (w->verbose) {
        a.log = log_line;
        a.log_user = s;
        a.log_level = IWARP_LOG_DEBUG;
    }
    if (!CREATE(w, s, "iwarp_ctx_create", iwarp_ctx_create(&a, &s->ctx), s->ctx))
        return false;
    if (!CREATE(w, s, "iwarp_cm_create_channel", iwarp_cm_create_channel(s->ctx, &s->ch), s->ch))
        return false;
    sp_set_nonblock(s->ch->fd);
    if (!CREATE(w, s, "iwarp_alloc_pd", iwarp_alloc_pd(s->ctx, &s->pd), s->pd))
        return false;
    if (!CREATE(w, s, "iwarp_create_comp_channel", iwarp_create_comp_channel(s->ctx, &s->comp),
                s->comp))
        return false;
    if (!CREATE(w, s, "iwarp_create_cq", iwarp_create_cq(s->ctx, 16, s, s->comp, 0, &s->cq), s->cq))
        return false;
    struct iwarp_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    if (!CREATE(w, s, "iwarp_create_srq", iwarp_create_srq(s->pd, &sa, &s->srq), s->srq))
        return false;
    int acc = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ;
    if (!CREATE(w, s, "iwarp_reg_mr", iwarp_reg_mr(s->pd, s->buf, BUFSZ, acc, &s->mr), s->mr))
        return false;
    if (!CREATE(w, s, "iwarp_alloc_mr", iwarp_alloc_mr(s->pd, &s->fmr), s->fmr))
        return false;
    if (!CREATE(w, s, "iwarp_alloc_mw", iwarp_alloc_mw(s->pd, IWARP_MW_TYPE_1, &s->mw), s->mw))
        return false;
    struct iwarp_ddp_qp_init_attr da = {.send_cq = s->cq, .recv_cq = s->cq, .num_queues = 2};
    return CREATE(w, s, "iwarp_ddp_create_qp", iwarp_ddp_create_qp(s->pd, &da, &s->dqp), s->dqp);
}

static struct sp_advert advert_of(const struct side *s)
{
    return (struct sp_advert){.rkey = s->mr->rkey, .addr = (uintptr_t)s->buf, .len = BUFSZ};
}

static bool create_qp(struct world *w, struct side *s, struct iwarp_cm_id *id, bool use_srq)
{
    struct iwarp_qp_init_attr qa = {.send_cq = s->cq,
                                    .recv_cq = s->cq,
                                    .srq = use_srq ? s->srq : NULL,
                                    .cap = {.max_send_wr = 8,
                                            .max_recv_wr = use_srq ? 0 : 8,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1},
                                    .qp_type = IWARP_QPT_RC};
    return CREATE(w, s, "iwarp_cm_create_qp", iwarp_cm_create_qp(id, s->pd, &qa), id->qp);
}

static bool run_crc; /* the runs ask for CRC (TCP: MPA's C=1 from both sides) */

static struct iwarp_conn_param conn_param(const struct side *s)
{
    static struct sp_advert adv[2];
    struct sp_advert *a = &adv[s->name[0] == 'c'];
    *a = advert_of(s);
    return (struct iwarp_conn_param){.private_data = a,
                                     .private_data_len = sizeof *a,
                                     .crc = run_crc,
                                     .responder_resources = 4,
                                     .initiator_depth = 4,
                                     /* SCTP: an INIT dropped for want of memory is lost,
                                      * and this bounds the wait for its retransmission */
                                     .timeout_ms = 1500};
}

/* A CM event's status must be 0 or a real negative code. */
static void check_status(const struct side *s, const struct iwarp_cm_event *ev)
{
    if (ev->status > 0 || strcmp(iwarp_err_name(ev->status), "IWARP_ERR_UNKNOWN") == 0)
        harness_fail(__FILE__, __LINE__, "%s: %s with status %d", s->name,
                     iwarp_cm_event_str(ev->event), ev->status);
}

/* One event of the server while connecting. */
static void srv_event(struct world *w, struct iwarp_cm_event *ev)
{
    struct side *s = SRV(w);
    check_status(s, ev);
    switch (ev->event) {
    case IWARP_CM_EVENT_CONNECT_REQUEST: {
        ASSERT_TRUE(ev->listen_id == s->listen);
        if (s->id) /* a second request (the client dialed again): refuse it */
            harness_fail(__FILE__, __LINE__, "server: a second CONNECT_REQUEST");
        s->id = ev->id;
        ASSERT_EQ(ev->param.private_data_len, sizeof s->peer);
        memcpy(&s->peer, ev->param.private_data, sizeof s->peer);
        struct iwarp_conn_param ap = conn_param(s);
        bool ok = create_qp(w, s, s->id, true) &&
                  STEP(w, s, "iwarp_cm_accept", iwarp_cm_accept(s->id, &ap));
        if (!ok) {
            /* as an application would: refuse the connection it cannot take */
            int rc = iwarp_cm_reject(s->id, NULL, 0);
            if (rc != 0 && rc != IWARP_ERR_STATE)
                step(w, s, "iwarp_cm_reject", rc, 0);
            s->done = true;
        }
        break;
    }
    case IWARP_CM_EVENT_ESTABLISHED:
        ASSERT_TRUE(ev->id == s->id);
        ASSERT_EQ(ev->status, 0);
        s->established = true;
        break;
    case IWARP_CM_EVENT_DISCONNECTED:
    case IWARP_CM_EVENT_CONNECT_ERROR:
        ASSERT_TRUE(ev->id == s->id);
        s->done = true;
        if (!s->fail_rc) {
            s->fail_rc = ev->status ? ev->status : IWARP_ERR_CONN_RESET;
            s->fail_step = iwarp_cm_event_str(ev->event);
        }
        break;
    default:
        harness_fail(__FILE__, __LINE__, "server: unexpected %s (status %s)",
                     iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
    }
}

/* One event of the client while connecting. */
static void cli_event(struct world *w, struct iwarp_cm_event *ev)
{
    struct side *s = CLI(w);
    check_status(s, ev);
    ASSERT_TRUE(ev->id == s->id);
    switch (ev->event) {
    case IWARP_CM_EVENT_ESTABLISHED:
        ASSERT_EQ(ev->status, 0);
        ASSERT_EQ(ev->param.private_data_len, sizeof s->peer);
        memcpy(&s->peer, ev->param.private_data, sizeof s->peer);
        s->established = true;
        break;
    case IWARP_CM_EVENT_CONNECT_ERROR:
    case IWARP_CM_EVENT_REJECTED:
    case IWARP_CM_EVENT_UNREACHABLE:
        if (ev->status >= 0)
            harness_fail(__FILE__, __LINE__, "client: %s with status %d",
                         iwarp_cm_event_str(ev->event), ev->status);
        if (total_failed(w) == 0)
            harness_fail(__FILE__, __LINE__, "client: %s (%s) and no allocation had failed",
                         iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
        s->done = true;
        if (!s->fail_rc) {
            s->fail_rc = ev->status;
            s->fail_step = iwarp_cm_event_str(ev->event);
        }
        break;
    default:
        harness_fail(__FILE__, __LINE__, "client: unexpected %s (status %s)",
                     iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
    }
}

/* Wait for the client's id to see event want (ADDR_RESOLVED, ROUTE_RESOLVED). */
static void cli_expect(struct world *w, enum iwarp_cm_event_type want)
{
    struct deadline dl = deadline_in_ms(WAIT_MS);
    for (;;) {
        struct iwarp_cm_event *ev = next_event(CLI(w));
        if (ev) {
            ASSERT_EQ(ev->event, want);
            ASSERT_EQ(ev->status, 0);
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
            return;
        }
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "client: %s", iwarp_cm_event_str(want));
        pump(w);
    }
}

/* Listen, connect, accept. Returns true when both ends are established. */
static bool connect_both(struct world *w, uint16_t *port)
{
    struct side *srv = SRV(w), *cli = CLI(w);
    struct sockaddr_in a;
    sp_loopback4(&a, 0);
    if (!srv->listen) { /* the first connection */
        if (!CREATE(w, srv, "iwarp_cm_create_id (listener)",
                    iwarp_cm_create_id(srv->ch, &srv->listen, srv, w->ps), srv->listen))
            return false;
        if (!STEP(w, srv, "iwarp_cm_bind_addr", iwarp_cm_bind_addr(srv->listen, (void *)&a)))
            return false;
        if (!STEP(w, srv, "iwarp_cm_listen", iwarp_cm_listen(srv->listen, 8)))
            return false;
    }
    *port = ntohs(((const struct sockaddr_in *)&srv->listen->local_addr)->sin_port);
    ASSERT_NE(*port, 0);
    sp_loopback4(&a, *port);
    if (!CREATE(w, cli, "iwarp_cm_create_id", iwarp_cm_create_id(cli->ch, &cli->id, cli, w->ps),
                cli->id))
        return false;
    if (!STEP(w, cli, "iwarp_cm_resolve_addr",
              iwarp_cm_resolve_addr(cli->id, NULL, (void *)&a, 1000)))
        return false;
    cli_expect(w, IWARP_CM_EVENT_ADDR_RESOLVED);
    if (!STEP(w, cli, "iwarp_cm_resolve_route", iwarp_cm_resolve_route(cli->id, 1000)))
        return false;
    cli_expect(w, IWARP_CM_EVENT_ROUTE_RESOLVED);
    if (!create_qp(w, cli, cli->id, false))
        return false;
    struct iwarp_conn_param cp = conn_param(cli);
    if (!STEP(w, cli, "iwarp_cm_connect", iwarp_cm_connect(cli->id, &cp)))
        return false;
    /* connect() said yes: the client hears how it ends, whatever the server does */
    struct deadline dl = deadline_in_ms(WAIT_MS);
    for (;;) {
        bool any = false;
        struct iwarp_cm_event *ev;
        while ((ev = next_event(srv)) != NULL) {
            if (ev->id == srv->other_id)
                harness_fail(__FILE__, __LINE__,
                             "server: the first connection's %s (%s) while "
                             "the second was set up",
                             iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
            srv_event(w, ev);
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
            any = true;
        }
        while ((ev = next_event(cli)) != NULL) {
            if (ev->id == cli->other_id)
                harness_fail(__FILE__, __LINE__,
                             "client: the first connection's %s (%s) while "
                             "the second was set up",
                             iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
            cli_event(w, ev);
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
            any = true;
        }
        if (cli->established && srv->established)
            return true;
        if (cli->done && (!srv->id || srv->done || !srv->established))
            return false;
        if (cli->established && srv->done)
            return false; /* the client then hears DISCONNECTED: teardown copes */
        if (!any) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl,
                              "the connection's outcome: client %s%s (%s), server %s%s (%s, "
                              "request %s)",
                              cli->established ? "established" : "", cli->done ? " done" : "",
                              iwarp_err_name(cli->fail_rc), srv->established ? "established" : "",
                              srv->done ? " done" : "", iwarp_err_name(srv->fail_rc),
                              srv->id ? "seen" : "not seen");
            pump(w);
        }
    }
}

/* Take exactly one completion of s's CQ, which must succeed with opcode op. */
static void poll_one(struct world *w, struct side *s, enum iwarp_wc_opcode op)
{
    struct deadline dl = deadline_in_ms(WAIT_MS);
    struct iwarp_wc wc;
    for (;;) {
        int k = iwarp_poll_cq(s->cq, 1, &wc);
        ASSERT_TRUE(k >= 0);
        if (k == 1)
            break;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%s: a completion (opcode %d)", s->name, (int)op);
        pump(w);
    }
    if (wc.status != IWARP_WC_SUCCESS || wc.opcode != op)
        harness_fail(__FILE__, __LINE__, "%s: completion opcode %d status %s, expected %d", s->name,
                     (int)wc.opcode, iwarp_wc_status_str(wc.status), (int)op);
}

static void post_ok(struct side *s, enum iwarp_wr_opcode op, uint32_t off, uint32_t len,
                    uint64_t raddr, uint32_t rkey)
{
    int rc = sp_post(s->id->qp, op, op, IWARP_SEND_SIGNALED, s->buf + off, len, s->mr->lkey, raddr,
                     rkey);
    if (rc != 0)
        harness_fail(__FILE__, __LINE__, "%s: posting opcode %d: %s", s->name, (int)op,
                     iwarp_err_name(rc));
}

/* One Send, one Write and one Read each way (the client first: RFC 5044 §7.1.2), data
 * checked. A connection both ends call established must carry them all. */
static void exchange(struct world *w)
{
    struct side *srv = SRV(w), *cli = CLI(w);
    for (int i = 0; i < 2; i++) { /* what this exchange must write */
        memset(w->s[i].buf + OFF_RECV, 0, MSG);
        memset(w->s[i].buf + OFF_WTGT, 0, MSG);
        memset(w->s[i].buf + OFF_RSINK, 0, MSG);
    }
    struct iwarp_sge sge = {
        .addr = (uintptr_t)(srv->buf + OFF_RECV), .length = MSG, .lkey = srv->mr->lkey};
    struct iwarp_recv_wr rw = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
    ASSERT_EQ(iwarp_post_srq_recv(srv->srq, &rw, &bad), 0);
    ASSERT_EQ(sp_post_recv(cli->id->qp, 2, cli->buf + OFF_RECV, MSG, cli->mr->lkey), 0);
    ASSERT_EQ(iwarp_req_notify_cq(srv->cq, 0), 0);

    post_ok(cli, IWARP_WR_SEND, OFF_SEND, MSG, 0, 0);
    poll_one(w, cli, IWARP_WC_SEND);
    poll_one(w, srv, IWARP_WC_RECV);
    struct iwarp_cq *evcq = NULL;
    void *evctx = NULL;
    ASSERT_EQ(iwarp_get_cq_event(srv->comp, &evcq, &evctx), 0); /* armed above: it was told */
    ASSERT_TRUE(evcq == srv->cq);
    iwarp_ack_cq_events(evcq, 1);
    post_ok(srv, IWARP_WR_SEND, OFF_SEND, MSG, 0, 0);
    poll_one(w, srv, IWARP_WC_SEND);
    poll_one(w, cli, IWARP_WC_RECV);
    for (int i = 0; i < 2; i++) {
        struct side *s = &w->s[i];
        post_ok(s, IWARP_WR_RDMA_WRITE, OFF_SEND, MSG, s->peer.addr + OFF_WTGT, s->peer.rkey);
        poll_one(w, s, IWARP_WC_RDMA_WRITE);
        post_ok(s, IWARP_WR_RDMA_READ, OFF_RSINK, MSG, s->peer.addr + OFF_RSRC, s->peer.rkey);
        poll_one(w, s, IWARP_WC_RDMA_READ);
    }
    for (int i = 0; i < 2; i++) {
        struct side *s = &w->s[i];
        uint32_t seed = (uint32_t)(1 - i) * 100u; /* the peer's */
        SP_ASSERT_PATTERN(s->buf + OFF_RECV, MSG, seed + 1u);
        SP_ASSERT_PATTERN(s->buf + OFF_WTGT, MSG, seed + 1u);
        SP_ASSERT_PATTERN(s->buf + OFF_RSINK, MSG, seed + 2u);
    }
}

/* Graceful disconnect from the client; both hear DISCONNECTED. */
static void disconnect_both(struct world *w)
{
    struct side *srv = SRV(w), *cli = CLI(w);
    ASSERT_EQ(iwarp_cm_disconnect(cli->id), 0);
    bool down[2] = {false, false};
    struct deadline dl = deadline_in_ms(WAIT_MS);
    while (!down[0] || !down[1]) {
        bool any = false;
        for (int i = 0; i < 2; i++) {
            struct iwarp_cm_event *ev;
            while ((ev = next_event(&w->s[i])) != NULL) {
                if (ev->id != w->s[i].id && ev->event != IWARP_CM_EVENT_CONNECT_REQUEST) {
                    /* the end, late, of the second connection that failed */
                    check_status(&w->s[i], ev);
                    ASSERT_TRUE(ev->id == w->s[i].other_id);
                    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
                    continue;
                }
                if (ev->event != IWARP_CM_EVENT_DISCONNECTED)
                    harness_fail(__FILE__, __LINE__, "%s disconnecting: %s (%s)", w->s[i].name,
                                 iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
                down[i] = true;
                ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
                any = true;
            }
        }
        if (!any) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "DISCONNECTED: server %d, client %d", down[0], down[1]);
            pump(w);
        }
    }
    (void)srv;
}

/* Take every pending event of s (acknowledged); a CONNECT_REQUEST's id, not ours, is kept in
 * extra to be destroyed. */
static void drain(struct side *s, struct iwarp_cm_id **extra, int *n_extra)
{
    struct iwarp_cm_event *ev;
    while ((ev = next_event(s)) != NULL) {
        check_status(s, ev);
        if (ev->event == IWARP_CM_EVENT_CONNECT_REQUEST && ev->id != s->id &&
            ev->id != s->other_id) {
            ASSERT_TRUE(*n_extra < 4);
            extra[(*n_extra)++] = ev->id;
        }
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    }
}

#define DESTROY(s, what, call)                                                                    \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != 0)                                                                             \
            harness_fail(__FILE__, __LINE__, "%s: %s: %s", (s)->name, what, iwarp_err_name(rc_)); \
    } while (0)

static void destroy_id(struct side *s, struct iwarp_cm_id *id)
{
    if (id->qp)
        iwarp_cm_destroy_qp(id);
    DESTROY(s, "iwarp_cm_destroy_id", iwarp_cm_destroy_id(id));
}

/* Destroy whatever exists, in order. */
static void teardown(struct world *w)
{
    struct iwarp_cm_id *extra[4];
    int n_extra = 0;
    for (int i = 0; i < 2; i++)
        drain(&w->s[i], extra, &n_extra);
    for (int i = 0; i < 2; i++) {
        struct side *s = &w->s[i];
        if (s->id)
            destroy_id(s, s->id);
        if (s->other_id)
            destroy_id(s, s->other_id);
        s->id = s->other_id = NULL;
    }
    if (SRV(w)->listen)
        DESTROY(SRV(w), "iwarp_cm_destroy_id (listener)", iwarp_cm_destroy_id(SRV(w)->listen));
    SRV(w)->listen = NULL;
    drain(SRV(w), extra, &n_extra);
    for (int i = 0; i < n_extra; i++)
        destroy_id(SRV(w), extra[i]);
    for (int i = 0; i < 2; i++) {
        struct side *s = &w->s[i];
        if (s->dqp)
            DESTROY(s, "iwarp_destroy_qp (DDP-level)", iwarp_destroy_qp(s->dqp));
        if (s->mw)
            DESTROY(s, "iwarp_dealloc_mw", iwarp_dealloc_mw(s->mw));
        if (s->fmr)
            DESTROY(s, "iwarp_dereg_mr (fast registration)", iwarp_dereg_mr(s->fmr));
        if (s->mr)
            DESTROY(s, "iwarp_dereg_mr", iwarp_dereg_mr(s->mr));
        if (s->srq)
            DESTROY(s, "iwarp_destroy_srq", iwarp_destroy_srq(s->srq));
        if (s->cq)
            DESTROY(s, "iwarp_destroy_cq", iwarp_destroy_cq(s->cq));
        if (s->comp)
            DESTROY(s, "iwarp_destroy_comp_channel", iwarp_destroy_comp_channel(s->comp));
        if (s->pd)
            DESTROY(s, "iwarp_dealloc_pd", iwarp_dealloc_pd(s->pd));
        if (s->ch)
            DESTROY(s, "iwarp_cm_destroy_channel", iwarp_cm_destroy_channel(s->ch));
        if (s->ctx)
            DESTROY(s, "iwarp_ctx_destroy", iwarp_ctx_destroy(s->ctx));
        long live = atomic_load(&s->h.live);
        if (live != 0)
            harness_fail(__FILE__, __LINE__, "%s: %ld allocations of the hooks never freed",
                         s->name, live);
    }
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* The connection worked on becomes the other one and back: the first's ids and peer
 * advertisements are put aside while a second is set up. The first is up whenever this is
 * called. */
static void swap_connections(struct world *w, bool to_first)
{
    for (int i = 0; i < 2; i++) {
        struct side *s = &w->s[i];
        struct iwarp_cm_id *id = s->id;
        struct sp_advert peer = s->peer;
        s->id = s->other_id;
        s->peer = s->other_peer;
        s->other_id = id;
        s->other_peer = peer;
        s->established = to_first; /* the first is up; the second is yet to be made */
        s->done = false;
    }
}

/* One allocation failed and each call it failed was made again: the connection comes up
 * unless the failure was one only an event can report (the server's, inside its progress). */
static void expect_up(struct world *w, bool up, const char *which)
{
    if (w->retry && !up && !CLI(w)->done)
        harness_fail(__FILE__, __LINE__,
                     "the failed call%s made again, yet no %s connection: server %s (%s), "
                     "client %s (%s)",
                     w->recovered ? " was" : "s were", which, iwarp_err_name(SRV(w)->fail_rc),
                     SRV(w)->fail_step ? SRV(w)->fail_step : "-", iwarp_err_name(CLI(w)->fail_rc),
                     CLI(w)->fail_step ? CLI(w)->fail_step : "-");
}

/* What a run did, for the parent. */
struct outcome {
    long served[2];      /* allocations each side's hooks were asked for */
    long failed[2];      /* of which failed on purpose */
    long stages[2];      /* of which for TX staging rings */
    int rc;              /* the first failure seen (0: the scenario went through) */
    bool established;    /* the connection came up */
    bool async;          /* the client learnt of the failure from an event */
    long before_connect; /* run_silent_peer: the client's allocations before connect() */
    long recovered;      /* calls that failed with NOMEM and succeeded when made again */
};

/* One run: fail side's (0 server, 1 client; -1 none) fail_at-th allocation (and every later one
 * with from). */
static const char *run_trace; /* the packet trace file of the runs (NULL: none) */

static void run(enum iwarp_port_space ps, int side, long fail_at, bool from, bool verbose,
                struct outcome *out)
{
    static struct world w;
    memset(&w, 0, sizeof w);
    w.ps = ps;
    w.trace = run_trace;
    w.verbose = verbose;
    fh_verbose = verbose;
    w.retry = !from;
    int fds = count_fds();
    for (int i = 0; i < 2; i++) {
        struct side *s = &w.s[i];
        s->name = i ? "client" : "server";
        fh_init(&s->h, i == side ? fail_at : 0, from);
        s->buf = calloc(1, BUFSZ);
        ASSERT_TRUE(s->buf != NULL);
        uint32_t seed = (uint32_t)i * 100u;
        sp_fill(s->buf + OFF_SEND, MSG, seed + 1u);
        sp_fill(s->buf + OFF_RSRC, MSG, seed + 2u);
    }
    uint16_t port = 0;
    bool up = side_up(&w, SRV(&w)) && side_up(&w, CLI(&w)) && connect_both(&w, &port);
    expect_up(&w, up, "first");
    out->async = CLI(&w)->done && CLI(&w)->fail_rc;
    bool up2 = false;
    if (up) {
        exchange(&w);
        /* A second connection while the first is up (over SCTP it joins the first one's
         * association): whatever happens to it, the first carries on. */
        swap_connections(&w, false);
        up2 = connect_both(&w, &port);
        expect_up(&w, up2, "second");
        out->async |= CLI(&w)->done && CLI(&w)->fail_rc;
        if (up2) {
            exchange(&w);
            disconnect_both(&w);
        }
        swap_connections(&w, true);
        exchange(&w);
        disconnect_both(&w);
    }
    out->established = up && up2;
    out->recovered = w.recovered;
    out->rc = SRV(&w)->fail_rc ? SRV(&w)->fail_rc : CLI(&w)->fail_rc;
    teardown(&w);
    for (int i = 0; i < 2; i++) {
        out->served[i] = atomic_load(&w.s[i].h.served);
        out->failed[i] = atomic_load(&w.s[i].h.failed);
        out->stages[i] = atomic_load(&w.s[i].h.stages);
        free(w.s[i].buf);
    }
    int fds_after = count_fds();
    if (fds_after != fds)
        harness_fail(__FILE__, __LINE__, "%d file descriptors before, %d after", fds, fds_after);
    if (verbose)
        fprintf(stderr,
                "  outcome: %s, %s; allocations server %ld (%ld failed), client %ld (%ld)\n",
                up ? "established" : "not established", iwarp_err_name(out->rc), out->served[0],
                out->failed[0], out->served[1], out->failed[1]);
}

/* A connect to a TCP peer that never answers MPA, with the client's fail_at-th allocation
 * failing (0: none): connect() fails cleanly, or the client hears UNREACHABLE when the MPA
 * Reply's timeout passes -- a deadline lost for want of memory was a connect that never ended
 * (iwarp_loop_set_timer's heap growth failed and cm_tcp went on without the timer). */
static void run_silent_peer(long fail_at, bool verbose, struct outcome *out)
{
    static struct world w;
    memset(&w, 0, sizeof w);
    w.ps = IWARP_PS_TCP;
    w.verbose = verbose;
    int fds = count_fds();
    struct side *cli = CLI(&w);
    cli->name = "client";
    SRV(&w)->name = "server";
    fh_init(&cli->h, fail_at, false);
    fh_init(&SRV(&w)->h, 0, false);
    cli->buf = calloc(1, BUFSZ);
    ASSERT_TRUE(cli->buf != NULL);
    /* the silent peer: the kernel completes TCP's handshake, nobody ever reads or writes */
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_TRUE(lfd >= 0);
    struct sockaddr_in a;
    sp_loopback4(&a, 0);
    socklen_t alen = sizeof a;
    ASSERT_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(lfd, 4), 0);
    ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    bool ok = side_up(&w, cli) &&
              CREATE(&w, cli, "iwarp_cm_create_id",
                     iwarp_cm_create_id(cli->ch, &cli->id, cli, IWARP_PS_TCP), cli->id) &&
              STEP(&w, cli, "iwarp_cm_resolve_addr",
                   iwarp_cm_resolve_addr(cli->id, NULL, (void *)&a, 1000));
    if (ok)
        cli_expect(&w, IWARP_CM_EVENT_ADDR_RESOLVED);
    ok = ok && STEP(&w, cli, "iwarp_cm_resolve_route", iwarp_cm_resolve_route(cli->id, 1000));
    if (ok)
        cli_expect(&w, IWARP_CM_EVENT_ROUTE_RESOLVED);
    ok = ok && create_qp(&w, cli, cli->id, false);
    out->before_connect = atomic_load(&cli->h.served);
    struct iwarp_conn_param cp = conn_param(cli);
    cp.timeout_ms = 200;
    if (ok && STEP(&w, cli, "iwarp_cm_connect", iwarp_cm_connect(cli->id, &cp))) {
        struct deadline dl = deadline_in_ms(WAIT_MS);
        struct iwarp_cm_event *ev;
        while ((ev = next_event(cli)) == NULL) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "the client's UNREACHABLE (the MPA Reply's timeout, 200 ms)");
            pump(&w);
        }
        if (ev->event != IWARP_CM_EVENT_UNREACHABLE || ev->status != IWARP_ERR_TIMEDOUT)
            harness_fail(__FILE__, __LINE__, "client: %s (%s), expected UNREACHABLE (TIMEDOUT)",
                         iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
        out->async = true;
    }
    out->rc = cli->fail_rc;
    teardown(&w);
    out->served[1] = atomic_load(&cli->h.served);
    out->failed[1] = atomic_load(&cli->h.failed);
    free(cli->buf);
    close(lfd);
    int fds_after = count_fds();
    if (fds_after != fds)
        harness_fail(__FILE__, __LINE__, "%d file descriptors before, %d after", fds, fds_after);
}

/* Run in a child; false when it crashed, failed, leaked or hung (what it printed says why).
 * side -2: run_silent_peer. */
static bool run_forked(enum iwarp_port_space ps, int side, long fail_at, bool from,
                       struct outcome *out)
{
    int pfd[2];
    ASSERT_EQ(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        alarm(KILL_S); /* every wait is bounded far below: this is a hang */
        struct outcome o;
        memset(&o, 0, sizeof o);
        if (side == -2)
            run_silent_peer(fail_at, false, &o);
        else
            run(ps, side, fail_at, from, false, &o);
        ssize_t n = write(pfd[1], &o, sizeof o);
        close(pfd[1]);
        exit(n == (ssize_t)sizeof o ? 0 : 3); /* exit, not _exit: LSan checks here */
    }
    close(pfd[1]);
    memset(out, 0, sizeof *out);
    ssize_t n = read(pfd[0], out, sizeof *out);
    close(pfd[0]);
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && n == (ssize_t)sizeof *out;
    if (!ok) {
        if (WIFSIGNALED(st))
            fprintf(stderr, "  (killed by signal %d%s)\n", WTERMSIG(st),
                    WTERMSIG(st) == SIGALRM ? ": hung" : "");
        else if (WIFEXITED(st) && WEXITSTATUS(st) != 1)
            fprintf(stderr, "  (exit status %d: a sanitizer report?)\n", WEXITSTATUS(st));
    }
    return ok;
}

static const char *const side_names[2] = {"server", "client"};

static void fail_every(enum iwarp_port_space ps, const char *label)
{
    const char *one = getenv("ALLOC_FAIL_ONE");
    if (one && strncmp(one, "silent:", 7) == 0)
        return;
    if (one) { /* srv|cli:N:only|from, in-process */
        char sd[8] = "", how[8] = "";
        long n = 0;
        ASSERT_EQ(sscanf(one, "%7[a-z]:%ld:%7[a-z]", sd, &n, how), 3);
        struct outcome o;
        fprintf(stderr, "%s: %s N=%ld %s\n", label, sd, n, how);
        run(ps, strcmp(sd, "cli") == 0, n, strcmp(how, "from") == 0, true, &o);
        return;
    }
    uint64_t t0 = deadline_now_ns();
    struct outcome base;
    ASSERT_TRUE(run_forked(ps, -1, 0, false, &base));
    ASSERT_TRUE(base.established);
    ASSERT_EQ(base.rc, 0);
    printf("%s: allocations through the hooks: server %ld, client %ld (TX staging rings: %ld, "
           "%ld)\n",
           label, base.served[0], base.served[1], base.stages[0], base.stages[1]);
    /* one ring a connection (two connections) on each side with CRC on over TCP, else none */
    long stages = run_crc && ps == IWARP_PS_TCP ? 2 : 0;
    ASSERT_EQ(base.stages[0], stages);
    ASSERT_EQ(base.stages[1], stages);
    long tried = 0, bad = 0, est = 0, async = 0, sync = 0, recovered = 0;
    for (int side = 0; side < 2; side++) {
        for (int from = 0; from < 2; from++) {
            /* two beyond: a run may ask for one more than the counting run did (over SCTP,
             * how packets happen to arrive) */
            for (long n = 1; n <= base.served[side] + 2; n++) {
                struct outcome o;
                tried++;
                if (!run_forked(ps, side, n, from, &o)) {
                    bad++;
                    fprintf(stderr,
                            "%s: FAILED with the %s's allocation %ld%s failing "
                            "(ALLOC_FAIL_ONE=%s:%ld:%s)\n",
                            label, side_names[side], n, from ? " and every later one" : "",
                            side ? "cli" : "srv", n, from ? "from" : "only");
                    continue;
                }
                est += o.established;
                async += !o.established && o.async;
                sync += !o.established && !o.async;
                recovered += o.recovered;
            }
        }
    }
    printf("%s: %ld allocation-failure points tried (server 1..%ld+2 and client 1..%ld+2, each "
           "once alone and once with every later one), %ld failed. Runs: %ld connected and moved "
           "data (%ld calls failed with NOMEM and succeeded when made again), %ld ended in the "
           "client's failure event, %ld in a call's error; %.1f s\n",
           label, tried, base.served[0], base.served[1], bad, est, recovered, async, sync,
           (double)(deadline_now_ns() - t0) / 1e9);
    ASSERT_EQ(bad, 0);
}

TEST(alloc_failures_tcp)
{
    fail_every(IWARP_PS_TCP, "tcp");
}

/* The same with a packet trace: each connection's trace state comes from the hooks too. */
TEST(alloc_failures_tcp_traced)
{
    char path[] = "/tmp/iwarp_alloc_failures_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    run_trace = path;
    fail_every(IWARP_PS_TCP, "tcp, traced");
    run_trace = NULL;
    unlink(path);
}

/* The same with CRC on: each connection's TX staging ring comes from the hooks too, once the
 * negotiation has settled (the server's before its accept, the client's at the Reply). */
TEST(alloc_failures_tcp_crc)
{
    run_crc = true;
    fail_every(IWARP_PS_TCP, "tcp, CRC on");
    run_crc = false;
}

#ifdef IWARP_HAVE_SCTP /* built with usrsctp */
TEST(alloc_failures_sctp)
{
    /* short SCTP retransmission timers (as test_cm): a packet dropped for want of memory is
     * lost, and its retransmission comes after tens of milliseconds, not seconds */
    setenv("IWARP_SCTP_RTO_MS", "20,40,400", 1);
    fail_every(IWARP_PS_SCTP, "sctp");
}
#endif

/* A connect whose peer never answers ends at the MPA timeout whichever allocation of connect()
 * failed: connect() fails, or UNREACHABLE comes. */
TEST(connect_to_a_silent_peer_times_out_whatever_allocation_fails)
{
    const char *one = getenv("ALLOC_FAIL_ONE");
    if (one) {
        long n = 0;
        if (sscanf(one, "silent:%ld", &n) == 1) {
            struct outcome o;
            memset(&o, 0, sizeof o);
            run_silent_peer(n, true, &o);
        }
        return;
    }
    struct outcome base;
    ASSERT_TRUE(run_forked(IWARP_PS_TCP, -2, 0, false, &base));
    ASSERT_TRUE(base.async);
    ASSERT_TRUE(base.served[1] > base.before_connect);
    long bad = 0;
    for (long n = base.before_connect + 1; n <= base.served[1]; n++) {
        struct outcome o;
        if (!run_forked(IWARP_PS_TCP, -2, n, false, &o)) {
            bad++;
            fprintf(stderr,
                    "silent peer: FAILED with the client's allocation %ld failing "
                    "(ALLOC_FAIL_ONE=silent:%ld)\n",
                    n, n);
        }
    }
    printf("silent peer: the client's allocations %ld..%ld (connect() and after) tried, %ld "
           "failed\n",
           base.before_connect + 1, base.served[1], bad);
    ASSERT_EQ(bad, 0);
}
