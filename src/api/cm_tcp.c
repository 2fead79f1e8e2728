/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM's MPA/TCP transport (struct cm_transport, cm_internal.h): a kernel TCP connection
 * (llp_tcp) carrying an MPA connection (llp_conn), driven by the progress loop.
 *
 * Each connection is a loop source whose callbacks move octets (llp_tcp) and then run
 * conn_update(), which turns the TCP and MPA state into the CM's iwarp_cm_on_*() reports. An
 * accepted TCP connection waits on its listener, without a CM id, until its MPA Request has
 * arrived; then it gets an id and is announced (CONNECT_REQUEST). One whose negotiation fails
 * before that is freed silently: nobody was told of it.
 *
 * Every function runs with ctx->lock held. One thread at a time owns a connection's I/O
 * (io_busy): it alone moves the connection's octets, and it lets go of the lock around each
 * system call that does (an I/O window, docs/design.md "Locking and progress"). A thread that finds
 * the connection owned leaves its work to the owner (io_again), which does it before it lets go.
 * What closes or frees a connection first waits until nobody owns it (tcp_quiesce).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "api/cm_internal.h"
#include "iwarp/errors.h"
#include "llp/llp_tcp.h"
#include "loop/loop.h"
#include "trace/trace_sink.h"

/* Where a connection is, as this transport sees it. */
enum tcp_phase {
    TC_CONNECTING = 0, /* active: TCP connect in progress */
    TC_MPA,            /* MPA negotiation (passive: not announced yet) */
    TC_REQUEST,        /* passive: announced, the ULP decides */
    TC_UP,             /* full operation */
    TC_CLOSING,        /* graceful disconnect: the QP drains, FIN, then the peer's FIN */
    TC_DONE,           /* over (or rejected, with our Reject and FIN still leaving) */
    TC_REDIAL,         /* active: refused; no socket, a timer until we dial again */
};

/* How long an active connection waits after a refusal before it dials again
 * (iwarp_conn_param.retry_refused_ms). */
#define REDIAL_PERIOD_NS 100000000ull

/* Work on a connection (conn_run). */
enum tcp_work {
    WORK_RX = 1u,     /* the socket is readable (or in error) */
    WORK_TX = 2u,     /* writable, or new work was posted */
    WORK_TIMER = 4u,  /* the connection's deadline passed */
    WORK_REDIAL = 8u, /* TC_REDIAL: the time to dial again has come */
};

struct tcp_lsn;

struct tcp_conn {
    struct iwarp_loop_src src;
    struct iwarp_api_doorbell doorbell; /* queued while posts wait in a batch (llp_tcp.h) */
    struct iwarp_llp_tcp tcp;
    struct iwarp_ctx *ctx;
    struct cm_id *id;    /* NULL until a passive connection is announced */
    struct tcp_lsn *lsn; /* passive and not announced: the listener it waits on */
    /* in lsn's list (oldest first) while not announced */
    struct tcp_conn *next_hidden, *prev_hidden;
    enum tcp_phase phase;
    bool passive;
    bool markers_fallback; /* active: on a Reject of our markers, retry once without */
    /* active: until when (CLOCK_MONOTONIC ns) a refusal, or a close before the first octet of
     * the MPA Reply, dials again (iwarp_conn_param.retry_refused_ms); 0: never */
    uint64_t redial_until;
    uint64_t redial_at; /* TC_REDIAL: when to dial again */
    /* active, MPA negotiating with redial time left: the QP is hooked but its engine is not yet
     * the MPA connection's (start_initiator, deferred_rx) */
    bool eng_deferred;
    uint8_t *bounce;
    struct iwarp_llp_conn_txf *txf;
    uint8_t *tx_stage;              /* IWARP_LLP_CONN_TX_STAGE octets, or NULL: only Read
                                       Responses with CRC on need it (conn_stage_tx) */
    struct iwarp_trace_conn *trace; /* the packet trace (holds its sink's reference), or NULL */
    uint8_t *trace_buf;             /* its 2 * IWARP_TRACE_CONN_BUF octets */
    /* active side: the MPA configuration and private data kept from connect() until TCP is
     * up and the negotiation starts (it copies them then) */
    struct iwarp_llp_conn_cfg cfg;
    uint8_t pd[IWARP_MPA_PD_MAX];
    bool io_busy;     /* a thread owns the connection's I/O (conn_run) */
    uint8_t io_again; /* work others left to the owner (enum tcp_work) */
    uint8_t io_epoch; /* the open window's (iwarp_api_window_open) */
};

struct tcp_lsn {
    struct iwarp_loop_src src;
    struct iwarp_llp_tcp_listener tcp;
    struct cm_id *id;
    /* accepted connections not yet announced (their MPA startups), oldest first, and how many
     * (at most ctx->mpa_pending_max: accept_one evicts the oldest beyond it) */
    struct tcp_conn *hidden, *hidden_tail;
    uint32_t n_hidden;
    /* accept() found no file descriptor and no startup to reset: the listener's interest is
     * off until its timer (listen_on_timer); logged once until an accept succeeds again */
    bool starved;
};

/* How long a listener out of file descriptors waits before it accepts again. */
#define LISTEN_STARVED_NS 100000000ull

static struct tcp_conn *conn_of(struct cm_id *id)
{
    return id->conn;
}

/* ---- MPA parameters ---------------------------------------------------------------------- */

static uint8_t rtr_to_mpa(uint8_t cm)
{
    uint8_t m = 0;
    if (cm & IWARP_CM_RTR_WRITE)
        m |= IWARP_MPA_RTR_WRITE;
    if (cm & IWARP_CM_RTR_READ)
        m |= IWARP_MPA_RTR_READ;
    if (cm & IWARP_CM_RTR_SEND)
        m |= IWARP_MPA_RTR_SEND;
    return m;
}

static uint8_t rtr_to_cm(uint8_t mpa)
{
    uint8_t c = 0;
    if (mpa & IWARP_MPA_RTR_WRITE)
        c |= IWARP_CM_RTR_WRITE;
    if (mpa & IWARP_MPA_RTR_READ)
        c |= IWARP_CM_RTR_READ;
    if (mpa & IWARP_MPA_RTR_SEND)
        c |= IWARP_CM_RTR_SEND;
    return c;
}

/* The initiator's MPA configuration from connect()'s param. */
static int initiator_cfg(const struct iwarp_conn_param *p, struct iwarp_llp_conn_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    struct iwarp_mpa_neg_cfg *n = &cfg->neg;
    iwarp_mpa_neg_cfg_default(n, IWARP_MPA_INITIATOR);
    uint8_t rev = p->mpa_rev ? p->mpa_rev : IWARP_MPA_REV2;
    if (rev != IWARP_MPA_REV1 && rev != IWARP_MPA_REV2)
        return IWARP_ERR_INVAL;
    /* RFC 6581 §6: IRD/ORD and peer-to-peer exist only in Rev 2 frames. */
    if (p->peer_to_peer && rev != IWARP_MPA_REV2)
        return IWARP_ERR_INVAL;
    n->revision = rev;
    n->enhanced = rev == IWARP_MPA_REV2;
    n->crc = p->crc;
    n->markers = p->markers;
    n->ird = iwarp_cm_ird_ord(p->responder_resources);
    n->ord = iwarp_cm_ird_ord(p->initiator_depth);
    n->peer2peer = p->peer_to_peer;
    n->rtr = p->rtr_types ? rtr_to_mpa(p->rtr_types) : (uint8_t)IWARP_MPA_RTR_ALL;
    if (n->rtr == 0)
        return IWARP_ERR_INVAL;
    n->rtr_pref = 0;
    n->pd = p->private_data;
    n->pd_len = p->private_data_len;
    if (p->timeout_ms)
        n->timeout_ns = (uint64_t)p->timeout_ms * 1000000u;
    cfg->first_fpdu_delay_ns = (uint64_t)p->first_fpdu_delay_ms * 1000000u;
    return 0;
}

/* The responder's MPA configuration for accepted connections: Rev 2, CRC and markers only
 * when the initiator asks (RFC 5044 §7.1.1: CRC is on if either frame has C=1; §4.3: we
 * insert markers when asked), every RTR type so any peer-to-peer initiator is served. */
static void responder_cfg(struct iwarp_llp_conn_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    iwarp_mpa_neg_cfg_default(&cfg->neg, IWARP_MPA_RESPONDER);
    cfg->neg.crc = false;
    cfg->neg.markers = false;
    cfg->neg.rtr = IWARP_MPA_RTR_ALL;
}

/* What the MPA exchange said, for the CM: the peer's side (a Request, a Reject) or the
 * negotiated one. */
static struct cm_setup setup_of(const struct iwarp_mpa_neg_result *r, bool peer)
{
    return (struct cm_setup){
        .ird = peer ? r->peer_ird : r->ird,
        .ord = peer ? r->peer_ord : r->ord,
        .mpa_rev = peer ? r->peer_rev : r->rev,
        .peer_to_peer = peer ? r->peer_p2p : r->p2p,
        .rtr_types = rtr_to_cm(peer ? r->peer_rtr : r->rtr),
        .crc = r->crc,
        .markers = r->markers_rx,
        .pd = r->peer_pd,
        .pd_len = r->peer_pd_len,
    };
}

/* ---- connections ------------------------------------------------------------------------- */

static void conn_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns);
static void conn_on_timer(struct iwarp_loop_src *src, uint64_t now_ns);
static bool conn_update(struct tcp_conn *cc, uint64_t now_ns);
static void conn_run(struct tcp_conn *cc, unsigned work, uint64_t now);

/* The llp_tcp I/O hooks: the owner of the connection's I/O lets go of the lock around the
 * system call. A thread that does not own it (set-up, accept, disconnect: they run once nobody
 * does, tcp_quiesce) keeps the lock. */
static void conn_io_begin(void *user)
{
    struct tcp_conn *cc = user;
    if (cc->io_busy)
        iwarp_api_window_open(cc->ctx, &cc->io_epoch);
}

static void conn_io_end(void *user)
{
    struct tcp_conn *cc = user;
    if (cc->io_busy)
        iwarp_api_window_close(cc->ctx, cc->io_epoch);
}

/* The connection's doorbell (a CQ is polled): write the batch that waits. */
static void conn_ring(struct iwarp_api_doorbell *db)
{
    struct tcp_conn *cc =
        (struct tcp_conn *)(void *)((char *)db - offsetof(struct tcp_conn, doorbell));
    if (!cc->src.registered || cc->tcp.tx_batched == 0)
        return; /* written meanwhile (readiness, a full batch, the deadline) */
    conn_run(cc, WORK_TX, iwarp_loop_now());
}

static void conn_free(struct tcp_conn *cc)
{
    if (!cc)
        return;
    struct iwarp_ctx *ctx = cc->ctx;
    iwarp_api_doorbell_cancel(ctx, &cc->doorbell);
    if (cc->trace) {
        if (cc->trace->err)
            iwarp_api_log(ctx, IWARP_LOG_ERROR, "trace: writing the capture failed (%s)",
                          iwarp_err_name(cc->trace->err));
        (void)iwarp_trace_sink_release(cc->trace->sink); /* a failure was logged above */
    }
    iwarp_api_free(ctx, cc->trace);
    iwarp_api_free(ctx, cc->trace_buf);
    iwarp_api_free(ctx, cc->bounce);
    iwarp_api_free(ctx, cc->txf);
    iwarp_api_free(ctx, cc->tx_stage);
    iwarp_api_free(ctx, cc);
}

/* Per-connection memory, from the context allocator (never on the data path). */
static struct tcp_conn *conn_alloc(struct iwarp_ctx *ctx)
{
    struct tcp_conn *cc = iwarp_api_calloc(ctx, 1, sizeof *cc);
    if (!cc)
        return NULL;
    cc->ctx = ctx;
    /* The two large blocks (about 84 KiB) are not zeroed: llp_conn writes every octet before
     * reading it, so a connection makes resident only the pages its traffic reaches (a stalled
     * startup: the few its negotiation touches; docs/design.md, "Floods"). The TX staging ring
     * waits for the negotiation's outcome (conn_stage_tx). */
    cc->bounce = iwarp_api_malloc(ctx, IWARP_LLP_CONN_BOUNCE);
    cc->txf = iwarp_api_malloc(ctx, IWARP_LLP_CONN_TX_SEGS * sizeof *cc->txf);
    if (!cc->bounce || !cc->txf) {
        conn_free(cc);
        return NULL;
    }
    struct iwarp_trace_sink *sink = iwarp_api_trace_sink(ctx); /* NULL: tracing is off */
    if (sink) {
        cc->trace = iwarp_api_calloc(ctx, 1, sizeof *cc->trace);
        cc->trace_buf = iwarp_api_calloc(ctx, 2, IWARP_TRACE_CONN_BUF);
        if (!cc->trace || !cc->trace_buf) {
            (void)iwarp_trace_sink_release(sink);
            iwarp_api_free(ctx, cc->trace);
            cc->trace = NULL;
            conn_free(cc);
            return NULL;
        }
        iwarp_trace_conn_init(cc->trace, sink, cc->trace_buf, iwarp_api_trace_bound, ctx);
        cc->tcp.trace = cc->trace;
    }
    cc->tcp.fd = -1;
    cc->tcp.io_begin = conn_io_begin;
    cc->tcp.io_end = conn_io_end;
    cc->tcp.io_user = cc;
    cc->tcp.linger_ns = CM_LINGER_NS;
    cc->tcp.batch_ns = ctx->tx_batch_ns;
    cc->tcp.user_timeout_ms = ctx->llp_timeout_ms;
    cc->src.fd = -1;
    cc->src.deadline = UINT64_MAX;
    cc->src.heap_index = UINT32_MAX;
    cc->src.on_io = conn_on_io;
    cc->src.on_timer = conn_on_timer;
    cc->src.user = cc;
    cc->doorbell.ring = conn_ring;
    return cc;
}

/* Give the MPA connection its TX staging ring (253 KiB, not zeroed) if its Read Responses
 * will need one: CRC on and an IRD above 0 (iwarp_llp_conn_tx_stage_wanted; ans as there).
 * Connection setup, not the data path. Returns 0, or IWARP_ERR_NOMEM (nothing changed). */
static int conn_stage_tx(struct tcp_conn *cc, const struct iwarp_mpa_neg_answer *ans)
{
    struct iwarp_llp_conn *c = &cc->tcp.conn;
    if (!iwarp_llp_conn_tx_stage_wanted(c, ans))
        return 0;
    uint8_t *stage = iwarp_api_malloc(cc->ctx, IWARP_LLP_CONN_TX_STAGE);
    if (!stage)
        return IWARP_ERR_NOMEM;
    int rc = iwarp_llp_conn_set_tx_stage(c, stage, IWARP_LLP_CONN_TX_STAGE);
    if (rc != 0) { /* cannot happen: wanted says none is set and no Read Response went */
        iwarp_api_free(cc->ctx, stage);
        return rc;
    }
    cc->tx_stage = stage;
    return 0;
}

/* Register the connection's socket with the loop. */
static int conn_watch(struct tcp_conn *cc)
{
    cc->src.fd = cc->tcp.fd;
    cc->src.events = 0;
    cc->src.deadline = UINT64_MAX;
    return iwarp_loop_add(&cc->ctx->loop, &cc->src);
}

/* Stop watching and close the socket (abortive: RST). The MPA connection learns of the end
 * (and through it the QP, which flushes). Memory stays until the id is destroyed. */
static void conn_release(struct tcp_conn *cc, bool abortive)
{
    iwarp_loop_del(&cc->ctx->loop, &cc->src);
    iwarp_api_doorbell_cancel(cc->ctx, &cc->doorbell);
    iwarp_llp_tcp_close(&cc->tcp, abortive);
}

/* Hand the id's QP's engine to the MPA connection and take the QP's kicks. */
static void attach_qp(struct tcp_conn *cc)
{
    iwarp_llp_conn_attach(&cc->tcp.conn, iwarp_api_qp(cc->id->pub.qp)->eng);
    iwarp_cm_hook_qp(cc->id);
}

/* Whether a thread owns cc's I/O now (conn_run). */
static bool conn_owned(const struct tcp_conn *cc)
{
    return cc && cc->io_busy;
}

/* Put a passive connection at the end (the newest) of its listener's list of unannounced
 * ones. */
static void hide(struct tcp_lsn *l, struct tcp_conn *cc)
{
    cc->lsn = l;
    cc->next_hidden = NULL;
    cc->prev_hidden = l->hidden_tail;
    if (l->hidden_tail)
        l->hidden_tail->next_hidden = cc;
    else
        l->hidden = cc;
    l->hidden_tail = cc;
    l->n_hidden++;
}

/* Take a passive connection off its listener's list of unannounced ones. */
static void unhide(struct tcp_conn *cc)
{
    struct tcp_lsn *l = cc->lsn;
    if (cc->prev_hidden)
        cc->prev_hidden->next_hidden = cc->next_hidden;
    else
        l->hidden = cc->next_hidden;
    if (cc->next_hidden)
        cc->next_hidden->prev_hidden = cc->prev_hidden;
    else
        l->hidden_tail = cc->prev_hidden;
    l->n_hidden--;
    cc->next_hidden = cc->prev_hidden = NULL;
}

/* Free a passive connection that was never announced (its negotiation failed, or its
 * listener went away). */
static void hidden_free(struct tcp_conn *cc)
{
    unhide(cc);
    conn_release(cc, true);
    conn_free(cc);
}

/* The timer the connection needs now (no system call: any thread). */
static void conn_set_deadline(struct tcp_conn *cc)
{
    uint64_t deadline = iwarp_llp_tcp_next_timeout(&cc->tcp);
    if (deadline != cc->src.deadline)
        iwarp_loop_set_timer(&cc->ctx->loop, &cc->src, deadline);
}

/* The epoll interest and the timer the connection needs now (its I/O owner, or a thread that
 * runs once nobody owns it). */
static void conn_rearm(struct tcp_conn *cc)
{
    struct iwarp_loop *loop = &cc->ctx->loop;
    uint32_t want = iwarp_llp_tcp_interest(&cc->tcp);
    uint32_t ev = ((want & IWARP_LLP_TCP_WANT_READ) ? (uint32_t)EPOLLIN : 0u) |
                  ((want & IWARP_LLP_TCP_WANT_WRITE) ? (uint32_t)EPOLLOUT : 0u);
    if (ev != cc->src.events && cc->src.registered) {
        conn_io_begin(cc); /* the owner alone changes its source's interest */
        iwarp_loop_mod(loop, &cc->src, ev);
        conn_io_end(cc);
    }
    conn_set_deadline(cc);
}

/* Active side: TCP is up; start MPA as the initiator with the QP attached. */
static int start_initiator(struct tcp_conn *cc, const struct iwarp_llp_conn_cfg *cfg, uint64_t now)
{
    struct iwarp_llp_tcp *t = &cc->tcp;
    int rc = iwarp_llp_tcp_start(t, cfg, cc->bounce, cc->txf, now);
    if (rc != 0)
        return rc;
    memcpy(&cc->id->pub.local_addr, &t->local, sizeof t->local);
    if (now < cc->redial_until) {
        /* A refusal may still dial again with this QP: its engine is held back until the
         * Reply's first octet (deferred_rx), so that an end before it (the MPA connection
         * would pass it on) leaves the QP untouched. The MPA connection needs no engine
         * before the Reply (RFC 5044 §7.1.2: no full operation before it). */
        iwarp_cm_hook_qp(cc->id);
        cc->eng_deferred = true;
    } else {
        attach_qp(cc);
    }
    cc->phase = TC_MPA;
    iwarp_llp_tcp_on_writable(t, now); /* the MPA Request */
    return 0;
}

/* Active: the connection failed before it was up. */
static void active_failed(struct tcp_conn *cc, int status)
{
    cc->phase = TC_DONE;
    iwarp_cm_on_failed(cc->id, status);
}

/* Whether the MPA exchange has reached full operation on this side. */
static bool mpa_up(const struct iwarp_llp_conn *c)
{
    enum iwarp_mpa_neg_state s = iwarp_mpa_neg_state(&c->neg);
    return c->state == IWARP_LLP_CONN_ESTABLISHED || s == IWARP_MPA_NEG_SEND_FIRST ||
           s == IWARP_MPA_NEG_WAIT_FIRST_FPDU || s == IWARP_MPA_NEG_ESTABLISHED;
}

static int active_open(struct cm_id *id, const struct iwarp_llp_conn_cfg *cfg, const void *pd,
                       bool fallback, uint64_t redial_until, uint64_t now);

/* Active side, before full operation: close cc's socket and keep its QP as it is. The QP
 * never started (RFC 5044 §7.1.2: no full operation before the Reply): it is detached before
 * the close so that it is not flushed, and so that a new connection can take it. */
static void active_close_keep_qp(struct tcp_conn *cc, bool abortive)
{
    iwarp_llp_conn_attach(&cc->tcp.conn, NULL);
    iwarp_cm_unhook_qp(cc->id);
    conn_release(cc, abortive);
}

/* Active side, cc closed (active_close_keep_qp): free it and dial again with the configuration
 * and private data connect() kept, asking for markers or not, on the same id and QP. A local
 * failure is reported as the connection's. */
static void active_reopen(struct tcp_conn *cc, bool markers, bool fallback, uint64_t redial_until,
                          uint64_t now)
{
    struct cm_id *id = cc->id;
    struct iwarp_llp_conn_cfg cfg = cc->cfg;
    uint8_t pd[IWARP_MPA_PD_MAX];
    if (cfg.neg.pd_len)
        memcpy(pd, cc->pd, cfg.neg.pd_len);
    cfg.neg.markers = markers;
    conn_free(cc);
    id->conn = NULL;
    int rc = active_open(id, &cfg, pd, fallback, redial_until, now);
    if (rc != 0)
        iwarp_cm_on_failed(id, rc);
}

/* Active side: the peer rejected our Request for markers and the ULP allowed a fallback
 * (iwarp_conn_param.markers_fallback): close this connection, its QP untouched, and connect
 * again asking for none. A responder that cannot insert markers can only refuse them with a
 * Reject (RFC 5044 §7.1.2 rule 3; Linux siw does). The peer has answered: a refusal of the new
 * connection is not dialed again. */
static void markers_fallback(struct tcp_conn *cc, uint64_t now)
{
    active_close_keep_qp(cc, false);
    iwarp_api_log(cc->ctx, IWARP_LOG_INFO,
                  "cm: the peer rejected MPA markers; connecting again without them");
    active_reopen(cc, false, false, 0, now);
}

/* Active side: whether a connection that failed with status before any MPA octet came back
 * dials again (iwarp_conn_param.retry_refused_ms): refused, reset or closed, and still time. */
static bool redial_wanted(const struct tcp_conn *cc, int status, uint64_t now)
{
    return now < cc->redial_until &&
           (status == IWARP_ERR_CONN_REFUSED || status == IWARP_ERR_CONN_RESET);
}

/* Active side, cc's socket closed (or never made) and its QP untouched: wait REDIAL_PERIOD_NS
 * (never past redial_until) on a loop timer, then dial again (conn_update, TC_REDIAL). The
 * source stays registered without a socket, so that an abort (disconnect, destroy_qp) or
 * destroy_id ends the wait. Returns false when the timer cannot be set (nothing is left
 * registered; the caller reports the failure). */
static bool redial_wait(struct tcp_conn *cc, int status, uint64_t now)
{
    uint64_t at = now + REDIAL_PERIOD_NS;
    if (at > cc->redial_until)
        at = cc->redial_until;
    cc->phase = TC_REDIAL;
    cc->redial_at = at;
    cc->src.fd = -1;
    cc->src.events = 0;
    cc->src.deadline = at;
    if (iwarp_loop_add(&cc->ctx->loop, &cc->src) != 0)
        return false;
    iwarp_api_log(cc->ctx, IWARP_LOG_DEBUG, "cm: connection %s before the MPA Reply; dialing again",
                  iwarp_err_name(status));
    return true;
}

/* Active side: the connection failed with status before any MPA octet came back, its socket is
 * closed and its QP untouched: wait and dial again while retry_refused_ms allows, else report
 * the failure as ever. */
static void active_refused(struct tcp_conn *cc, int status, uint64_t now)
{
    if (redial_wanted(cc, status, now) && redial_wait(cc, status, now))
        return;
    active_failed(cc, status);
}

/* What the owner of a connection's I/O does with its readability (deferred_rx). */
enum rx_look {
    RX_GO = 0, /* read: the MPA connection takes what is there */
    RX_SKIP,   /* nothing to read yet */
    RX_GONE,   /* the peer ended the stream before any MPA octet: dial again */
};

/* Active side whose QP's engine is held back (eng_deferred: start_initiator): a look at the
 * socket that takes nothing (MSG_PEEK) before the MPA connection reads. The first octet of the
 * Reply is there: the engine is handed over now, and the MPA connection reads (RX_GO). Nothing
 * yet: RX_SKIP (readiness comes again). The peer closed or reset the stream before any octet:
 * RX_GONE while there is time to dial again, the QP untouched; past that time the engine is
 * handed over and the MPA connection learns of the end as ever (RX_GO). Called by the owner of
 * cc's I/O. */
static enum rx_look deferred_rx(struct tcp_conn *cc, uint64_t now)
{
    struct iwarp_llp_tcp *t = &cc->tcp;
    uint8_t b;
    conn_io_begin(cc);
    ssize_t n = recv(t->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    int e = errno;
    conn_io_end(cc);
    if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR))
        return RX_SKIP;
    /* n == 0: the peer's FIN; n < 0: its reset, or another error that ends the stream */
    if (n <= 0 && now < cc->redial_until)
        return RX_GONE;
    iwarp_llp_conn_attach(&t->conn, iwarp_api_qp(cc->id->pub.qp)->eng);
    cc->eng_deferred = false;
    return RX_GO;
}

/* Active side, MPA in progress. Returns 1 while it goes on, 0 when the connection was released,
 * -1 when cc was freed (a new connection replaces it). */
static int update_active_mpa(struct tcp_conn *cc, uint64_t now)
{
    struct iwarp_llp_tcp *t = &cc->tcp;
    struct iwarp_llp_conn *c = &t->conn;
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    if (c->state == IWARP_LLP_CONN_REJECTED && r->err == IWARP_ERR_MPA_MARKERS &&
        cc->markers_fallback) {
        markers_fallback(cc, now);
        return -1;
    }
    if (c->state == IWARP_LLP_CONN_REJECTED) {
        /* RFC 5044 §7.1.2 rule 3: a Reject ends MPA; the peer's private data goes up. */
        struct cm_setup s = setup_of(r, true);
        cc->phase = TC_DONE;
        iwarp_cm_on_rejected(cc->id, r->err ? r->err : IWARP_ERR_MPA_REJECTED, &s);
        conn_release(cc, false);
        return 0;
    }
    if (c->state != IWARP_LLP_CONN_FAILED && c->state != IWARP_LLP_CONN_CLOSE && mpa_up(c)) {
        /* The Reply has settled CRC and our IRD. No Read Request can have been taken yet:
         * the responder sends nothing before our first FPDU (RFC 5044 §7.1.2 rule 4), and
         * nothing is read between the Reply and this update (conn_run). */
        int rc = conn_stage_tx(cc, NULL);
        if (rc == 0) {
            struct cm_setup s = setup_of(r, false);
            cc->phase = TC_UP;
            iwarp_cm_on_established(cc->id, &s);
            return 1;
        }
        (void)iwarp_llp_conn_fail_locally(c, rc); /* FAILED: reported and closed below */
    }
    if (c->state == IWARP_LLP_CONN_FAILED || c->state == IWARP_LLP_CONN_CLOSE ||
        t->phase == IWARP_LLP_TCP_DONE || t->rx_eof) {
        /* the transport's own error first: an MPA connection closed under its negotiation
         * only knows the stream ended (IWARP_ERR_IO), TCP knows it was reset */
        int status = t->err ? t->err : c->err ? c->err : r->err ? r->err : IWARP_ERR_CONN_RESET;
        if (cc->eng_deferred) {
            /* Nothing of the Reply came (deferred_rx). Reset or closed (found while writing,
             * say): dial again while there is time. Else the QP learns of the end now, as
             * it would have without the wait (llp_conn: no engine was attached). */
            bool gone = t->err == IWARP_ERR_CONN_RESET || t->err == IWARP_ERR_CONN_REFUSED ||
                        (t->err == 0 && c->err == IWARP_ERR_IO);
            if (gone && now < cc->redial_until) {
                active_close_keep_qp(cc, true);
                active_refused(cc, IWARP_ERR_CONN_RESET, now);
                return 0;
            }
            cc->eng_deferred = false;
            iwarp_core_eng_llp_closed(iwarp_api_qp(cc->id->pub.qp)->eng, !t->err);
        }
        active_failed(cc, status);
        /* a Terminate or Reject may still be queued: let TCP deliver it */
        iwarp_llp_tcp_shutdown(t, now);
        conn_release(cc, false);
        return 0;
    }
    return 1;
}

/* Passive side: the MPA Request is in; announce the connection on a new id (RFC 5044
 * §7.1.2: the ULP decides). Returns false when there was no memory for the id (freed). */
static bool announce(struct tcp_conn *cc)
{
    struct cm_id *id = iwarp_cm_passive_id(cc->lsn->id);
    if (!id) {
        hidden_free(cc);
        return false;
    }
    unhide(cc);
    cc->lsn = NULL;
    cc->id = id;
    id->conn = cc;
    memcpy(&id->pub.local_addr, &cc->tcp.local, sizeof id->pub.local_addr);
    memcpy(&id->pub.peer_addr, &cc->tcp.peer, sizeof id->pub.peer_addr);
    cc->phase = TC_REQUEST;
    struct cm_setup s = setup_of(iwarp_mpa_neg_result(&cc->tcp.conn.neg), true);
    iwarp_cm_on_request(id, &s);
    return true;
}

/* Turn the TCP and MPA state into the CM's reports and into interest. Returns false when cc was
 * freed. */
static bool conn_update(struct tcp_conn *cc, uint64_t now)
{
    struct iwarp_llp_tcp *t = &cc->tcp;
    struct iwarp_llp_conn *c = &t->conn;

    switch (cc->phase) {
    case TC_CONNECTING: {
        if (t->phase == IWARP_LLP_TCP_CONNECTING)
            break;
        if (!iwarp_llp_tcp_connected(t)) {
            /* no QP attached yet (start_initiator does): it stays as it is */
            conn_release(cc, false);
            active_refused(cc, t->err ? t->err : IWARP_ERR_CONN_RESET, now);
            return true;
        }
        /* TCP is up: start MPA with the configuration connect() checked and kept */
        int rc = start_initiator(cc, &cc->cfg, now);
        if (rc != 0) {
            active_failed(cc, rc);
            conn_release(cc, true);
            return true;
        }
        int going = update_active_mpa(cc, now);
        if (going <= 0)
            return going == 0;
        break;
    }
    case TC_MPA:
        if (!cc->passive) {
            int going = update_active_mpa(cc, now);
            if (going <= 0)
                return going == 0;
            break;
        }
        if (c->state == IWARP_LLP_CONN_REQUEST) {
            if (!announce(cc))
                return false;
        } else if (c->state != IWARP_LLP_CONN_NEGOTIATING || t->phase == IWARP_LLP_TCP_DONE ||
                   t->rx_eof) {
            hidden_free(cc); /* never announced: nobody to tell */
            return false;
        }
        break;
    case TC_REQUEST:
        break; /* accept()/reject() see a dead connection */
    case TC_REDIAL:
        if (now < cc->redial_at) { /* not yet (an early look): the timer again */
            iwarp_loop_set_timer(&cc->ctx->loop, &cc->src, cc->redial_at);
            return true;
        }
        iwarp_loop_del(&cc->ctx->loop, &cc->src);
        active_reopen(cc, cc->cfg.neg.markers, cc->markers_fallback, cc->redial_until, now);
        return false;
    case TC_UP:
    case TC_CLOSING: {
        struct cm_id *id = cc->id;
        if (cc->phase == TC_CLOSING && id->pub.qp && !t->fin_wanted &&
            iwarp_core_eng_tx_close(iwarp_api_qp(id->pub.qp)->eng))
            iwarp_llp_tcp_shutdown(t, now); /* drained: our FIN */
        if (t->rx_eof || t->phase == IWARP_LLP_TCP_DONE) {
            /* the peer closed (FIN or reset), or both FINs are exchanged: answer the FIN */
            iwarp_llp_tcp_shutdown(t, now);
            cc->phase = TC_DONE;
            iwarp_cm_on_closed(id, 0);
            conn_release(cc, false);
            return true;
        }
        break;
    }
    default:
        break;
    }
    if (!cc->src.registered)
        return true;
    if (t->phase == IWARP_LLP_TCP_DONE && cc->phase != TC_CLOSING && cc->phase != TC_UP) {
        conn_release(cc, false); /* e.g. reset while a decision was pending */
        return true;
    }
    conn_rearm(cc);
    return true;
}

/* How many connections this thread is running (conn_run) at the moment. */
static _Thread_local unsigned conn_runs_here;

/* Do work (enum tcp_work) on cc as the owner of its I/O at now, then conn_update; if another
 * thread owns it, leave the work to that one and return at once. The owner does what others
 * left meanwhile before it lets go. */
static void conn_run(struct tcp_conn *cc, unsigned work, uint64_t now)
{
    if (cc->io_busy) {
        cc->io_again |= (uint8_t)work;
        return;
    }
    struct iwarp_ctx *ctx = cc->ctx;
    cc->io_busy = true;
    conn_runs_here++;
    for (;;) {
        /* a close past its limit is reset here (the end is reported next) */
        if (work & WORK_TIMER)
            iwarp_llp_tcp_handle_timeout(&cc->tcp, now);
        enum rx_look look = (work & WORK_RX) && cc->eng_deferred ? deferred_rx(cc, now) : RX_GO;
        if (look == RX_SKIP) {
            work &= ~(unsigned)WORK_RX;
        } else if (look == RX_GONE) {
            /* the QP goes on to the next connection, never having heard of this one's end */
            active_close_keep_qp(cc, true);
            active_refused(cc, IWARP_ERR_CONN_RESET, now);
            work = 0;
        }
        if (work & WORK_RX)
            iwarp_llp_tcp_on_readable(&cc->tcp, now);
        if (work & WORK_TX)
            iwarp_llp_tcp_on_writable(&cc->tcp, now);
        if (!conn_update(cc, now)) {
            conn_runs_here--;
            iwarp_api_io_idle(ctx); /* freed: who waits for it looks again */
            return;
        }
        work = cc->io_again;
        cc->io_again = 0;
        if (!work)
            break;
        now = iwarp_loop_now();
    }
    cc->io_busy = false;
    conn_runs_here--;
    iwarp_api_io_idle(ctx);
}

static void conn_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns)
{
    struct tcp_conn *cc = src->user;
    unsigned work = 0;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
        work |= WORK_RX;
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
        work |= WORK_TX;
    bool owned = conn_owned(cc); /* then conn_run only leaves the work to the owner */
    conn_run(cc, work, now_ns);
    /* Another thread owns the connection's I/O (a post writing, a busy poll or a waiter
     * reading): it does this work too (io_again). The readiness stays until it has, and epoll
     * is level-triggered: back in epoll_wait now, this thread would be told of it again and
     * again, spinning beside the owner (on its core, if they share one). It waits for an owner
     * to finish instead (any connection's: it then merely looks again). Not a thread that owns
     * a connection itself (its own conn_run would never end). cc may be freed meanwhile. */
    if (owned && conn_runs_here == 0)
        iwarp_api_io_wait(cc->ctx);
}

static void conn_on_timer(struct iwarp_loop_src *src, uint64_t now_ns)
{
    struct tcp_conn *cc = src->user;
    conn_run(cc, cc->phase == TC_REDIAL ? WORK_REDIAL : WORK_TIMER, now_ns);
}

/* ---- the transport's ops ------------------------------------------------------------------ */

/* The connection carrying q while its socket is watched, else NULL. */
static struct tcp_conn *qp_conn(const struct iwarp_qp_impl *q)
{
    struct tcp_conn *cc = q->cm_id ? conn_of(q->cm_id) : NULL;
    return cc && cc->src.registered ? cc : NULL;
}

/* The QP has new work: write it now from the posting thread (a hop to the progress thread
 * would cost a cross-core wakeup), or let it join the connection's batch (llp_tcp.h): then
 * the next poll of a CQ rings the doorbell, or the batch's deadline passes. */
static void tcp_kick(struct iwarp_qp_impl *q)
{
    struct tcp_conn *cc = qp_conn(q);
    if (!cc)
        return;
    uint64_t now = iwarp_loop_now();
    if (iwarp_llp_tcp_post(&cc->tcp, now)) {
        conn_run(cc, WORK_TX, now);
        return;
    }
    iwarp_api_doorbell_defer(cc->ctx, &cc->doorbell);
    if (cc->tcp.tx_batched == 1)
        conn_set_deadline(cc); /* the batch's */
}

/* A busy poll of the QP's CQ reads its connection directly (verbs_cq.c); a socket read that
 * way for long enough leaves the epoll set (iwarp_loop_direct). */
static void tcp_poll_rx(struct iwarp_qp_impl *q, uint64_t now_ns)
{
    struct tcp_conn *cc = qp_conn(q);
    if (cc && cc->phase == TC_UP) {
        iwarp_loop_direct(&cc->ctx->loop, &cc->src);
        conn_run(cc, WORK_RX, now_ns);
    }
}

static void tcp_retrans(struct cm_id *id, uint64_t *bytes, uint64_t *segs)
{
    struct tcp_conn *cc = conn_of(id);
    if (cc)
        iwarp_llp_tcp_retrans(&cc->tcp, bytes, segs);
}

static bool tcp_abort(struct cm_id *id, bool rst)
{
    struct tcp_conn *cc = conn_of(id);
    if (!cc->src.registered)
        return false;
    conn_release(cc, rst);
    if (cc->eng_deferred) { /* the QP learns of the end, as if it had been attached */
        cc->eng_deferred = false;
        iwarp_core_eng_llp_closed(iwarp_api_qp(id->pub.qp)->eng, false);
    }
    cc->phase = TC_DONE;
    return true;
}

/* Reset the oldest stalled startup of l (docs/design.md, "Floods"): the oldest whose I/O no
 * other thread owns now (it cannot be freed under that thread, and it is being read, so it is
 * not stalled), and never newest (NULL: none is spared). It is first read (with the lock held,
 * as an accept: nobody owns its I/O): a Request that has arrived meanwhile is announced, an end
 * of stream frees it, and only a startup still incomplete is reset. why names the reason in the
 * log line. Returns whether a startup left the list (reset, announced or freed). at: now. */
static bool evict_oldest(struct tcp_lsn *l, const struct tcp_conn *newest, uint64_t at,
                         const char *why)
{
    struct iwarp_ctx *ctx = l->id->pub.context;
    struct tcp_conn *cc = l->hidden;
    while (cc && cc != newest && conn_owned(cc))
        cc = cc->next_hidden;
    if (!cc || cc == newest)
        return false;
    iwarp_llp_tcp_on_readable(&cc->tcp, at);
    if (!conn_update(cc, at) || cc->lsn != l)
        return true; /* freed (it failed or ended), or announced: no longer a startup */
    iwarp_api_log(ctx, IWARP_LOG_INFO,
                  "cm: %u MPA startups pending on the listener (%s): the "
                  "oldest reset",
                  l->n_hidden, why);
    hidden_free(cc);
    return true;
}

/* More startups wait on l than iwarp_ctx_attr.mpa_pending_max allows (a connection was just
 * accepted, newest): reset the oldest stalled ones. A flood of peers that connect and then
 * stall, trickle or vanish fills the list, while a legitimate initiator's Request follows its
 * connect within a round trip. at: now. */
static void evict_beyond_max(struct tcp_lsn *l, const struct tcp_conn *newest, uint64_t at)
{
    uint32_t max = l->id->pub.context->mpa_pending_max;
    while (max != 0 && l->n_hidden > max && evict_oldest(l, newest, at, "mpa_pending_max"))
        ;
}

/* A connection arrived on the listener: it runs the responder side of MPA unannounced. */
static void accept_one(struct tcp_lsn *l, int fd, uint64_t now)
{
    struct iwarp_ctx *ctx = l->id->pub.context;
    struct tcp_conn *cc = conn_alloc(ctx);
    struct iwarp_llp_conn_cfg cfg;
    responder_cfg(&cfg);
    /* RFC 5044 §7.1.2 rules 8, 10: the Request (and an RTR) within the context's limit */
    cfg.neg.timeout_ns = ctx->mpa_startup_timeout_ns;
    if (!cc || iwarp_llp_tcp_adopt(&cc->tcp, fd) != 0 ||
        iwarp_llp_tcp_start(&cc->tcp, &cfg, cc->bounce, cc->txf, now) != 0) {
        if (!cc)
            close(fd);
        else
            iwarp_llp_tcp_close(&cc->tcp, true);
        conn_free(cc);
        return;
    }
    cc->passive = true;
    cc->phase = TC_MPA;
    hide(l, cc);
    if (conn_watch(cc) != 0) {
        hidden_free(cc);
        return;
    }
    evict_beyond_max(l, cc, now);
    conn_update(cc, now);
}

static void listen_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns)
{
    (void)events;
    struct tcp_lsn *l = src->user;
    struct iwarp_ctx *ctx = l->id->pub.context;
    for (int budget = 64; budget > 0; budget--) {
        int fd = iwarp_llp_tcp_accept(&l->tcp);
        if (fd == IWARP_ERR_NOMEM && iwarp_llp_tcp_listener_queued(&l->tcp) == 0)
            break; /* accept() takes an fd before it looks: nothing waits after all */
        if (fd == IWARP_ERR_NOMEM && evict_oldest(l, NULL, now_ns, "out of file descriptors"))
            continue; /* a stalled startup gave its fd to the connection waiting */
        if (fd == IWARP_ERR_NOMEM) {
            /* Nothing to take an fd from: a level-triggered listener would be reported again
             * at once, for ever. Stop listening for a while (the connections stay queued). */
            if (!l->starved)
                iwarp_api_log(ctx, IWARP_LOG_WARN,
                              "cm: accept: out of file descriptors or socket memory; "
                              "accepting again every %llu ms",
                              (unsigned long long)(LISTEN_STARVED_NS / 1000000u));
            l->starved = true;
            if (iwarp_loop_mod(&ctx->loop, &l->src, 0) == 0)
                iwarp_loop_set_timer(&ctx->loop, &l->src, now_ns + LISTEN_STARVED_NS);
            return;
        }
        if (fd < 0)
            break;
        l->starved = false;
        accept_one(l, fd, now_ns);
    }
}

/* A listener that ran out of file descriptors (listen_on_io) listens again. */
static void listen_on_timer(struct iwarp_loop_src *src, uint64_t now_ns)
{
    struct tcp_lsn *l = src->user;
    if (iwarp_loop_mod(&l->id->pub.context->loop, &l->src, EPOLLIN) != 0)
        iwarp_loop_set_timer(&l->id->pub.context->loop, &l->src, now_ns + LISTEN_STARVED_NS);
}

static int tcp_listen(struct cm_id *id, int backlog)
{
    struct iwarp_ctx *ctx = id->pub.context;
    struct tcp_lsn *l = iwarp_api_calloc(ctx, 1, sizeof *l);
    if (!l)
        return IWARP_ERR_NOMEM;
    l->id = id;
    int rc = iwarp_llp_tcp_listen(&l->tcp, (const struct sockaddr *)&id->pub.local_addr, backlog);
    if (rc == 0) {
        l->src = (struct iwarp_loop_src){.fd = l->tcp.fd,
                                         .events = EPOLLIN,
                                         .deadline = UINT64_MAX,
                                         .on_io = listen_on_io,
                                         .on_timer = listen_on_timer,
                                         .user = l,
                                         .heap_index = UINT32_MAX};
        rc = iwarp_loop_add(&ctx->loop, &l->src);
        if (rc != 0)
            iwarp_llp_tcp_listener_close(&l->tcp);
    }
    if (rc != 0) {
        iwarp_api_free(ctx, l);
        return rc;
    }
    memcpy(&id->pub.local_addr, &l->tcp.local, sizeof id->pub.local_addr); /* the bound port */
    id->lsn = l;
    return 0;
}

static void tcp_listen_close(struct cm_id *id)
{
    struct tcp_lsn *l = id->lsn;
    iwarp_loop_del(&id->pub.context->loop, &l->src);
    iwarp_llp_tcp_listener_close(&l->tcp);
    while (l->hidden)
        hidden_free(l->hidden);
    iwarp_api_free(id->pub.context, l);
    id->lsn = NULL;
}

/*
 * Active side: a new connection object, the non-blocking TCP connect and, when TCP is already
 * up, the MPA Request (id->conn is NULL). cfg and pd (cfg->neg.pd_len octets) are copied.
 * fallback: a Reject of our markers connects once more without them. redial_until: until when
 * a refusal dials again (iwarp_conn_param.retry_refused_ms; 0: never). Returns 0 (a refusal at
 * once is reported as its event), or the error of a local failure (nothing is left
 * allocated).
 */
static int active_open(struct cm_id *id, const struct iwarp_llp_conn_cfg *cfg, const void *pd,
                       bool fallback, uint64_t redial_until, uint64_t now)
{
    struct tcp_conn *cc = conn_alloc(id->pub.context);
    if (!cc)
        return IWARP_ERR_NOMEM;
    cc->id = id;
    cc->phase = TC_CONNECTING;
    cc->markers_fallback = fallback;
    cc->redial_until = redial_until;
    struct iwarp_llp_tcp *t = &cc->tcp;
    if (cfg->neg.pd_len)
        memcpy(cc->pd, pd, cfg->neg.pd_len);
    cc->cfg = *cfg;
    cc->cfg.neg.pd = cc->pd;
    const struct sockaddr *src =
        id->bind_src.ss_family ? (const struct sockaddr *)&id->bind_src : NULL;
    int rc = iwarp_llp_tcp_connect(t, (const struct sockaddr *)&id->pub.peer_addr, src);
    if (rc == IWARP_ERR_INVAL || rc == IWARP_ERR_ADDR || rc == IWARP_ERR_IO) {
        conn_free(cc);
        return rc;
    }
    id->conn = cc;
    if (rc != 0) {
        /* refused or unreachable at once: reported as the event would be (or dialed again) */
        active_refused(cc, rc, now);
        return 0;
    }
    rc = conn_watch(cc);
    if (rc == 0 && iwarp_llp_tcp_connected(t)) {
        rc = start_initiator(cc, &cc->cfg, now);
        if (rc != 0)
            conn_release(cc, true);
    }
    if (rc != 0) {
        iwarp_llp_tcp_close(t, true);
        conn_free(cc);
        id->conn = NULL;
        return rc;
    }
    conn_update(cc, now);
    return 0;
}

static int tcp_check_param(const struct iwarp_conn_param *param)
{
    struct iwarp_llp_conn_cfg cfg;
    return initiator_cfg(param, &cfg);
}

static int tcp_connect(struct cm_id *id, const struct iwarp_conn_param *param)
{
    struct iwarp_llp_conn_cfg cfg;
    int rc = initiator_cfg(param, &cfg); /* MPA options */
    if (rc != 0)
        return rc;
    /* RFC 6581 RTR messages are RDMAP messages: a DDP-level stream cannot send them. */
    if (param->peer_to_peer && !iwarp_api_qp(id->pub.qp)->eng->rdmap)
        return IWARP_ERR_DDP_RTR;
    /* Check the MPA configuration before any socket exists. */
    uint64_t now = iwarp_loop_now();
    struct iwarp_mpa_neg probe;
    rc = iwarp_mpa_neg_init(&probe, &cfg.neg, now);
    if (rc != 0)
        return rc;
    /* IWARP_CONN_PARAM_RETRY_REFUSED: read only when its bit is set (common.h) */
    uint32_t retry_ms =
        (param->comp_mask & IWARP_CONN_PARAM_RETRY_REFUSED) ? param->retry_refused_ms : 0;
    uint64_t redial_until = retry_ms ? now + (uint64_t)retry_ms * 1000000u : 0;
    return active_open(id, &cfg, param->private_data, param->markers && param->markers_fallback,
                       redial_until, now);
}

static int tcp_accept(struct cm_id *id, const struct iwarp_conn_param *param)
{
    struct tcp_conn *cc = conn_of(id);
    struct iwarp_llp_tcp *t = &cc->tcp;
    if (t->phase != IWARP_LLP_TCP_OPEN || t->conn.state != IWARP_LLP_CONN_REQUEST) {
        /* the initiator gave up while we were deciding */
        conn_release(cc, false);
        cc->phase = TC_DONE;
        iwarp_cm_on_closed(id, 0);
        return t->err ? t->err : IWARP_ERR_CONN_RESET;
    }
    /* RFC 6581 §9.2: a peer-to-peer initiator will send an RTR, an RDMAP message a DDP-level
     * stream cannot take: reject it instead. */
    if (!iwarp_api_qp(id->pub.qp)->eng->rdmap && iwarp_mpa_neg_result(&t->conn.neg)->peer_p2p)
        return IWARP_ERR_DDP_RTR;
    uint16_t pd_len = param ? param->private_data_len : 0;
    struct iwarp_mpa_neg_answer ans = {
        .ird = iwarp_cm_ird_ord(param ? param->responder_resources : 0),
        .ord = iwarp_cm_ird_ord(param ? param->initiator_depth : 0),
        .pd = pd_len ? param->private_data : NULL,
        .pd_len = pd_len,
        /* the passive side's MPA choices: CRC (either side's C=1 turns it on) and markers in
         * what we receive; revision and RTR follow the Request (RFC 6581 §6, §9.2) */
        .crc = param && param->crc,
        .markers = param && param->markers,
    };
    attach_qp(cc);
    /* Before the acceptance, which cannot be undone: a failure leaves the Request to decide
     * again (the staging ring for the outcome ans negotiates). */
    int rc = conn_stage_tx(cc, &ans);
    if (rc == 0)
        rc = iwarp_llp_conn_accept(&t->conn, &ans);
    if (rc != 0) {
        iwarp_cm_unhook_qp(id);
        return rc;
    }
    uint64_t now = iwarp_loop_now();
    iwarp_llp_tcp_on_writable(t, now); /* the MPA Reply */
    /* Like siw (siw_accept -> IW_CM_EVENT_ESTABLISHED once the Reply is queued): the ULP may
     * post now; RFC 5044 §7.1.2 rule 4 holds our FPDUs until the initiator's first one. */
    struct cm_setup s = setup_of(iwarp_mpa_neg_result(&t->conn.neg), false);
    /* not negotiated (revision 1, or 0x3FFF): the QP runs with ours (iwarp_llp_conn_accept) */
    if (s.ird == IWARP_MPA_IRD_ORD_NONE)
        s.ird = ans.ird;
    if (s.ord == IWARP_MPA_IRD_ORD_NONE)
        s.ord = ans.ord;
    cc->phase = TC_UP;
    iwarp_cm_on_established(id, &s);
    conn_update(cc, now);
    return 0;
}

static int tcp_reject(struct cm_id *id, const void *pd, uint16_t pd_len)
{
    struct tcp_conn *cc = conn_of(id);
    struct iwarp_llp_tcp *t = &cc->tcp;
    cc->phase = TC_DONE;
    if (t->phase != IWARP_LLP_TCP_OPEN || t->conn.state != IWARP_LLP_CONN_REQUEST) {
        conn_release(cc, false);
        return 0;
    }
    /* RFC 5044 §7.1.2 rule 2 / RFC 6581 §9.1: R=1, our private data, IRD/ORD unset. */
    struct iwarp_mpa_neg_answer ans = {
        .ird = IWARP_MPA_IRD_ORD_NONE, .ord = IWARP_MPA_IRD_ORD_NONE, .pd = pd, .pd_len = pd_len};
    int rc = iwarp_llp_conn_reject(&t->conn, &ans);
    if (rc != 0)
        return rc;
    uint64_t now = iwarp_loop_now();
    iwarp_llp_tcp_linger(t, now);
    iwarp_llp_tcp_shutdown(t, now); /* the Reject, then our FIN */
    if (t->phase == IWARP_LLP_TCP_DONE)
        conn_release(cc, false);
    else
        conn_rearm(cc);
    return 0;
}

static int tcp_disconnect(struct cm_id *id)
{
    struct tcp_conn *cc = conn_of(id);
    uint64_t now = iwarp_loop_now();
    cc->phase = TC_CLOSING;
    struct iwarp_llp_tcp *t = &cc->tcp;
    iwarp_llp_tcp_linger(t, now); /* the drain and the FIN exchange get CM_LINGER_NS */
    struct iwarp_qp_impl *q = id->pub.qp ? iwarp_api_qp(id->pub.qp) : NULL;
    if (q)
        iwarp_core_eng_disconnect(q->eng); /* drain (RFC 5041 §6.2.1), then close */
    else
        iwarp_llp_tcp_shutdown(t, now);
    iwarp_llp_tcp_on_writable(t, now);
    conn_update(cc, now);
    return 0;
}

static void tcp_free(struct cm_id *id, bool live)
{
    struct tcp_conn *cc = conn_of(id);
    if (cc->src.registered || cc->tcp.fd >= 0)
        conn_release(cc, live);
    conn_free(cc);
    id->conn = NULL;
}

static void tcp_quiesce(struct cm_id *id)
{
    for (;;) {
        bool owned = conn_owned(conn_of(id));
        const struct tcp_lsn *l = id->lsn;
        for (const struct tcp_conn *h = l ? l->hidden : NULL; h && !owned; h = h->next_hidden)
            owned = conn_owned(h);
        if (!owned)
            return;
        iwarp_api_io_wait(id->pub.context); /* the owner may free it: look again */
    }
}

const struct cm_transport iwarp_cm_tcp = {
    .listen = tcp_listen,
    .listen_close = tcp_listen_close,
    .check_param = tcp_check_param,
    .connect = tcp_connect,
    .accept = tcp_accept,
    .reject = tcp_reject,
    .disconnect = tcp_disconnect,
    .abort = tcp_abort,
    .quiesce = tcp_quiesce,
    .kick = tcp_kick,
    .poll_rx = tcp_poll_rx,
    .retrans = tcp_retrans,
    .free = tcp_free,
};
