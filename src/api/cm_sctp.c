/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM's SCTP transport (struct cm_transport): DDP streams (QPs) as sessions on
 * the SCTP streams of associations (RFC 5043), run by llp_assoc, carried by llp_sctp (usrsctp).
 *
 * Who drives usrsctp: llp_sctp, its one owner (the usrsctp lock, llp_sctp.h). Each context is
 * an llp_sctp owner: its progress loop watches its own endpoints' UDP sockets, the owner's wake
 * fd and one timer source, and calls llp_sctp holding the context lock (lock order: the
 * context's lock, then llp_sctp's). llp_sctp runs a context's callbacks only in that context's
 * calls, so they feed llp_assoc at once; what usrsctp reports for this context's associations
 * in another context's call (one of their timers fired there) llp_sctp notes and hands over
 * through the wake fd (iwarp_llp_sctp_owner_collect). After each llp_sctp call the associations
 * it touched are serviced under the context lock: chunks produced and sent, events turned into
 * CM events.
 *
 * Association sharing: connect() to a peer the context already has an association with (same
 * endpoint, a free stream) opens the session on a free stream of it (RFC 5043 §5.2: a DDP
 * stream per SCTP stream), unless iwarp_conn_param.sctp_own_association asks for a new one.
 * The active side shuts an association down once its last session ends; the passive side
 * keeps it until the peer does.
 *
 * A peer that stops reading (iwarp_ctx_attr.llp_timeout_ms, docs/design.md "A peer that stops
 * reading"): an association with data waiting to go out that makes no progress for the limit
 * is aborted (stall_check), checked from the context's timer source, never while idle.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "api/cm_internal.h"
#include "iwarp/errors.h"

#include "llp/llp_assoc.h"
#include "llp/llp_sctp.h"
#include "loop/loop.h"
#include "trace/trace_sctp.h"
#include "trace/trace_sink.h"

#define SCTP_DEFAULT_STREAMS 16u
/* A connect without iwarp_conn_param.timeout_ms gives up after this long (MPA's Reply wait). */
#define CM_SCTP_CONNECT_MS   10000u
/* Services of a context in a row before the loop gets control back (each sends what it can). */
#define SERVICE_ROUNDS       64

struct cm_sctp_ep {
    struct cm_sctp_ctx *sc;
    struct iwarp_llp_sctp_ep *ep;
    struct iwarp_loop_src src;
    uint32_t refs;                  /* listener + associations */
    bool client;                    /* the context's shared endpoint for connect() */
    struct iwarp_trace_sink *trace; /* the capture file its packets go to (a reference), or NULL */
    struct cm_sctp_ep *next;
};

struct cm_assoc {
    struct cm_sctp_ctx *sc;
    struct cm_sctp_ep *ep;
    struct iwarp_llp_sctp_assoc *sa; /* NULL once closed */
    struct iwarp_llp_assoc la;
    bool la_ready; /* up: la initialised */
    struct iwarp_llp_assoc_stream *streams;
    struct iwarp_sess_ssn_slot *slots;
    struct cm_id **ids; /* per stream: the id whose session it carries, or NULL */
    uint16_t nstreams;
    struct cm_id *waiting;   /* active ids waiting for the association to come up */
    struct cm_id *listen_id; /* passive: the listener (NULL once it is gone) */
    struct iwarp_sess_pending pending;
    struct sockaddr_storage peer;
    bool passive, own, down, dirty;
    int down_err;
    /* The stall rule (iwarp_ctx_attr.llp_timeout_ms): while data waits to go out, the
     * association is checked every llp_timeout_ms / 8 (stall_check; UINT64_MAX: not armed,
     * nothing waits) and aborted when (handed, SCTP's unacknowledged count) has not moved for
     * llp_timeout_ms (since progress_at). */
    uint64_t handed;       /* chunks handed to SCTP, ever */
    uint64_t stall_check;  /* next check (absolute ns) */
    uint64_t progress_at;  /* when the last check saw it move */
    uint64_t seen_handed;  /* what that check saw */
    uint32_t seen_unacked; /* ... */
    bool seen;             /* a check has seen it since it was armed */
    struct cm_assoc *next, *next_dirty;
};

struct cm_sctp_lsn {
    struct cm_sctp_ep *ep;
    struct iwarp_llp_sctp_listener *lsn;
    int backlog;
};

struct cm_sctp_link {
    struct cm_assoc *ca;
    int sid; /* -1 until a stream is opened */
    struct iwarp_sess_cfg cfg;
    uint8_t pd[IWARP_SCTP_PD_MAX];
    uint32_t ird, ord;
    struct cm_id *next_wait;
    uint64_t connect_deadline; /* while waiting for the association (then the stream's) */
};

struct cm_sctp_ctx {
    struct iwarp_ctx *ctx;
    struct iwarp_loop_src timer;        /* usrsctp's timers and the lingers */
    struct iwarp_llp_sctp_owner *owner; /* the context as llp_sctp's owner */
    struct iwarp_loop_src wake;         /* its wake fd: events noted in another's call */
    struct cm_sctp_ep *eps;
    struct cm_assoc *assocs;
    struct cm_assoc *dirty;
};

static struct cm_sctp_link *link_of(struct cm_id *id)
{
    return id->conn;
}

static void mark(struct cm_assoc *ca)
{
    if (ca->dirty)
        return;
    ca->dirty = true;
    ca->next_dirty = ca->sc->dirty;
    ca->sc->dirty = ca;
}

static void service(struct cm_sctp_ctx *sc, uint64_t now);
static struct cm_assoc *find_assoc(struct cm_sctp_ctx *sc, struct cm_sctp_ep *e,
                                   const struct sockaddr_storage *peer);
static void rearm(struct cm_sctp_ctx *sc, uint64_t now);

/* ---- llp_sctp callbacks (in this context's llp_sctp calls: both locks held) --------------- */

static void on_up(void *user, uint16_t nstreams, uint32_t max_seg)
{
    struct cm_assoc *ca = user;
    struct iwarp_ctx *ctx = ca->sc->ctx;
    if (ca->la_ready)
        return; /* once */
    ca->nstreams = nstreams;
    uint16_t w = IWARP_LLP_ASSOC_WINDOW;
    ca->streams = iwarp_api_calloc(ctx, nstreams, sizeof *ca->streams);
    ca->slots = iwarp_api_calloc(ctx, (size_t)nstreams * w, sizeof *ca->slots);
    ca->ids = iwarp_api_calloc(ctx, nstreams, sizeof *ca->ids);
    struct iwarp_llp_assoc_cfg cfg = {.nstreams = nstreams,
                                      .max_seg = max_seg,
                                      .passive = ca->passive,
                                      .chunk_free = iwarp_llp_sctp_chunk_free,
                                      .window = w,
                                      .inflight_max = IWARP_LLP_ASSOC_INFLIGHT_MAX,
                                      .linger_ns = CM_LINGER_NS};
    iwarp_sess_cfg_default(&cfg.passive_sess, IWARP_SESS_PASSIVE);
    cfg.passive_sess.pending = &ca->pending;
    if (!ca->streams || !ca->slots || !ca->ids ||
        iwarp_llp_assoc_init(&ca->la, &cfg, ca->streams, ca->slots) != 0) {
        ca->down = true;
        ca->down_err = IWARP_ERR_NOMEM;
    } else {
        ca->la_ready = true;
    }
    mark(ca);
}

static void on_down(void *user, int err)
{
    struct cm_assoc *ca = user;
    ca->down = true;
    ca->down_err = err;
    if (ca->la_ready)
        iwarp_llp_assoc_lost(&ca->la, err == 0); /* §11.3: every session and QP on it ends */
    mark(ca);
}

static void on_chunk(void *user, uint16_t sid, uint32_t ppid, bool unordered, void *buf, size_t len)
{
    struct cm_assoc *ca = user;
    if (!ca->la_ready) {
        iwarp_llp_sctp_chunk_free(buf); /* cannot happen: on_up comes first */
        return;
    }
    (void)iwarp_llp_assoc_rx_chunk(&ca->la, sid, ppid, unordered, buf, len);
    mark(ca);
}

static void on_writable(void *user)
{
    struct cm_assoc *ca = user;
    mark(ca);
}

static const struct iwarp_llp_sctp_ops assoc_ops = {
    .on_up = on_up, .on_down = on_down, .on_chunk = on_chunk, .on_writable = on_writable};

/* ---- endpoints ---------------------------------------------------------------------------- */

/* Read endpoint e's packets (their chunks are placed and completed as they are delivered),
 * then serve what they touched. A busy poll (direct) that read something leaves that service
 * to the next call instead, so that the completions it brought reach the caller first. */
static void ep_read(struct cm_sctp_ep *e, uint64_t now_ns, bool direct)
{
    struct cm_sctp_ctx *sc = e->sc;
    bool got = iwarp_llp_sctp_on_readable(e->ep, now_ns);
    if (!got && !sc->dirty)
        return; /* nothing came in and nothing waits: an empty busy poll ends here (timers
                 * still run from the loop, every DIRECT_POLL_EPOLL-th poll) */
    for (struct cm_assoc *ca = sc->assocs; ca; ca = ca->next)
        if (ca->ep == e && ca->la_ready && iwarp_llp_assoc_packets_in(&ca->la))
            mark(ca); /* packets came in: perhaps the SACK it waits for at the cap */
    if (got && direct) {
        /* The associations stay marked: the next poll or post serves them (ahead of what it
         * sends), or, should the caller block in the loop instead, the context's timer, due
         * now. Making it due costs no system call while no thread blocks (loop.h). */
        iwarp_loop_set_timer(&sc->ctx->loop, &sc->timer, now_ns);
        return;
    }
    service(sc, now_ns);
    rearm(sc, now_ns);
}

static void ep_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns)
{
    (void)events;
    ep_read(src->user, now_ns, false);
}

static uint16_t ctx_streams(const struct iwarp_ctx *ctx)
{
    return ctx->attr.sctp_streams ? ctx->attr.sctp_streams : SCTP_DEFAULT_STREAMS;
}

/* Test hooks from the environment (docs/environment.md), read only by builds with
 * IWARP_TEST_HOOKS (Debug, sanitizers, fuzz; never Release): IWARP_SCTP_FAULT=
 * "seed,drop_ppm,dup_ppm,delay_ppm,delay_ms[,corrupt_ppm]" (loss, duplication, reordering and
 * corruption below usrsctp)
 * IWARP_SCTP_RTO_MS="min,initial,max" (usrsctp's retransmission timers, process-wide)
 * and IWARP_SCTP_HB_MS (the heartbeat interval). */
static void env_test_hooks(struct iwarp_llp_sctp_ep_cfg *cfg)
{
#if defined(IWARP_TEST_HOOKS)
    const char *f = secure_getenv("IWARP_SCTP_FAULT");
    if (f && *f) {
        unsigned long long seed = 0;
        unsigned drop = 0, dup = 0, delay = 0, ms = 0, corrupt = 0;
        if (sscanf(f, "%llu,%u,%u,%u,%u,%u", &seed, &drop, &dup, &delay, &ms, &corrupt) >= 2)
            cfg->fault = (struct iwarp_llp_sctp_fault){.seed = seed,
                                                       .drop_ppm = drop,
                                                       .dup_ppm = dup,
                                                       .delay_ppm = delay,
                                                       .delay_ms = ms,
                                                       .corrupt_ppm = corrupt};
    }
    const char *r = secure_getenv("IWARP_SCTP_RTO_MS");
    unsigned lo, init, hi;
    if (r && sscanf(r, "%u,%u,%u", &lo, &init, &hi) == 3)
        iwarp_llp_sctp_set_test_timers(lo, init, hi);
    const char *hb = secure_getenv("IWARP_SCTP_HB_MS");
    unsigned hb_ms;
    if (hb && sscanf(hb, "%u", &hb_ms) == 1)
        iwarp_llp_sctp_set_test_heartbeat(hb_ms);
#else
    (void)cfg;
#endif
}

/* The capture hook (llp_sctp's lock held, in any context's call: a retransmission of this
 * endpoint's may leave in another's): every SCTP packet of the endpoint, as a UDP datagram. */
static void capture(void *user, int dir, const struct sockaddr *local, const struct sockaddr *peer,
                    const uint8_t *pkt, size_t len, uint64_t now_ns)
{
    struct cm_sctp_ep *e = user;
    if (dir == IWARP_LLP_SCTP_PKT_IN && iwarp_llp_sctp_captured_here(peer))
        return; /* sent by an endpoint of this process: recorded as it left */
    int rc = iwarp_trace_sctp_pkt(e->trace, dir == IWARP_LLP_SCTP_PKT_OUT, local, peer, pkt, len,
                                  now_ns);
    if (rc == IWARP_ERR_TRACE_BOUND)
        iwarp_api_trace_bound(e->sc->ctx, iwarp_trace_sink_bound());
}

/* Open an endpoint of sc bound to addr (NULL: 127.0.0.1:0). */
static int ep_open(struct cm_sctp_ctx *sc, const struct sockaddr *addr, bool client,
                   struct cm_sctp_ep **out)
{
    struct iwarp_ctx *ctx = sc->ctx;
    struct cm_sctp_ep *e = iwarp_api_calloc(ctx, 1, sizeof *e);
    if (!e)
        return IWARP_ERR_NOMEM;
    struct iwarp_llp_sctp_ep_cfg cfg = {
        .addr = addr, .owner = sc->owner, .nstreams = ctx_streams(ctx), .mtu = ctx->attr.sctp_mtu};
    env_test_hooks(&cfg);
    e->trace = iwarp_api_trace_sink(ctx); /* NULL: tracing is off */
    if (e->trace) {
        cfg.capture = capture;
        cfg.capture_user = e;
    }
    e->sc = sc;
    int rc = iwarp_llp_sctp_ep_open(&cfg, &e->ep);
    if (rc != 0) {
        (void)iwarp_trace_sink_release(e->trace);
        iwarp_api_free(ctx, e);
        return rc;
    }
    e->client = client;
    e->src = (struct iwarp_loop_src){.fd = iwarp_llp_sctp_ep_fd(e->ep),
                                     .events = EPOLLIN,
                                     .deadline = UINT64_MAX,
                                     .on_io = ep_on_io,
                                     .user = e,
                                     .heap_index = UINT32_MAX};
    rc = iwarp_loop_add(&ctx->loop, &e->src);
    if (rc != 0) {
        iwarp_llp_sctp_ep_close(e->ep);
        (void)iwarp_trace_sink_release(e->trace);
        iwarp_api_free(ctx, e);
        return rc;
    }
    e->next = sc->eps;
    sc->eps = e;
    *out = e;
    return 0;
}

static void ep_close(struct cm_sctp_ep *e)
{
    struct cm_sctp_ctx *sc = e->sc;
    for (struct cm_sctp_ep **p = &sc->eps; *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            break;
        }
    }
    iwarp_loop_del(&sc->ctx->loop, &e->src);
    iwarp_llp_sctp_ep_close(e->ep);
    if (e->trace && iwarp_trace_sink_release(e->trace) != 0)
        iwarp_api_log(sc->ctx, IWARP_LOG_ERROR, "trace: writing the capture failed");
    iwarp_api_free(sc->ctx, e);
}

static void ep_unref(struct cm_sctp_ep *e)
{
    if (--e->refs == 0)
        ep_close(e);
}

/* ---- the context's SCTP state ------------------------------------------------------------- */

static void wake_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns);
static void timer_on(struct iwarp_loop_src *src, uint64_t now_ns);

/* llp_sctp's allocator for the context: its hooks (iwarp_mem_hooks), like every allocation. */
static void *sctp_mem_calloc(void *ctx, size_t n, size_t size)
{
    return iwarp_api_calloc(ctx, n, size);
}

static void sctp_mem_free(void *ctx, void *ptr)
{
    iwarp_api_free(ctx, ptr);
}

static struct cm_sctp_ctx *sctp_ctx(struct iwarp_ctx *ctx)
{
    if (ctx->sctp)
        return ctx->sctp;
    struct cm_sctp_ctx *sc = iwarp_api_calloc(ctx, 1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->ctx = ctx;
    sc->timer = (struct iwarp_loop_src){.fd = -1,
                                        .deadline = UINT64_MAX,
                                        .on_timer = timer_on,
                                        .user = sc,
                                        .heap_index = UINT32_MAX};
    struct iwarp_llp_sctp_alloc alloc = {
        .calloc_fn = sctp_mem_calloc, .free_fn = sctp_mem_free, .user = ctx};
    if (iwarp_llp_sctp_owner_open(&alloc, &sc->owner) != 0) {
        iwarp_api_free(ctx, sc);
        return NULL;
    }
    sc->wake = (struct iwarp_loop_src){.fd = iwarp_llp_sctp_owner_fd(sc->owner),
                                       .events = EPOLLIN,
                                       .deadline = UINT64_MAX,
                                       .on_io = wake_on_io,
                                       .user = sc,
                                       .heap_index = UINT32_MAX};
    if (iwarp_loop_add(&ctx->loop, &sc->timer) != 0) {
        iwarp_llp_sctp_owner_close(sc->owner);
        iwarp_api_free(ctx, sc);
        return NULL;
    }
    if (iwarp_loop_add(&ctx->loop, &sc->wake) != 0) {
        iwarp_loop_del(&ctx->loop, &sc->timer);
        iwarp_llp_sctp_owner_close(sc->owner);
        iwarp_api_free(ctx, sc);
        return NULL;
    }
    ctx->sctp = sc;
    return sc;
}

/* The earliest deadline of the context's connections: a connect waiting for its association,
 * or a stream's (llp_assoc's: connect timeout, disconnect drain, linger). */
static uint64_t next_deadline(struct cm_sctp_ctx *sc)
{
    uint64_t t = UINT64_MAX;
    for (struct cm_assoc *ca = sc->assocs; ca; ca = ca->next) {
        for (struct cm_id *w = ca->waiting; w; w = link_of(w)->next_wait)
            if (link_of(w)->connect_deadline < t)
                t = link_of(w)->connect_deadline;
        uint64_t a = ca->la_ready ? iwarp_llp_assoc_next_timeout(&ca->la) : UINT64_MAX;
        if (a < t)
            t = a;
        if (ca->stall_check < t)
            t = ca->stall_check;
    }
    return t;
}

/* Drive usrsctp's timers and arm ours for the next deadline (usrsctp's or a connection's). */
static void rearm(struct cm_sctp_ctx *sc, uint64_t now)
{
    for (int round = 0; round < 4; round++) {
        uint64_t next = iwarp_llp_sctp_timers(sc->owner, now);
        if (!sc->dirty) {
            uint64_t l = next_deadline(sc);
            iwarp_loop_set_timer(&sc->ctx->loop, &sc->timer, l < next ? l : next);
            return;
        }
        service(sc, now);
    }
    iwarp_loop_set_timer(&sc->ctx->loop, &sc->timer, now);
}

/* ---- associations ------------------------------------------------------------------------- */

/* The engine of id's QP, or NULL when it has none. */
static struct iwarp_core_engine *id_engine(struct cm_id *id)
{
    return id->pub.qp ? iwarp_api_qp(id->pub.qp)->eng : NULL;
}

static void assoc_free(struct cm_assoc *ca, bool abortive)
{
    struct cm_sctp_ctx *sc = ca->sc;
    struct iwarp_ctx *ctx = sc->ctx;
    for (struct cm_assoc **p = &sc->assocs; *p; p = &(*p)->next) {
        if (*p == ca) {
            *p = ca->next;
            break;
        }
    }
    for (struct cm_assoc **p = &sc->dirty; *p; p = &(*p)->next_dirty) {
        if (*p == ca) {
            *p = ca->next_dirty;
            break;
        }
    }
    if (ca->la_ready)
        iwarp_llp_assoc_lost(&ca->la, !abortive); /* gives held chunks back */
    if (ca->sa) {
        iwarp_llp_sctp_close(ca->sa, abortive);
    }
    iwarp_api_free(ctx, ca->streams);
    iwarp_api_free(ctx, ca->slots);
    iwarp_api_free(ctx, ca->ids);
    struct cm_sctp_ep *e = ca->ep;
    iwarp_api_free(ctx, ca);
    ep_unref(e);
}

/* The id's stream is over: let go of it (the stream is released by the association). */
static void unlink_stream(struct cm_id *id)
{
    struct cm_sctp_link *lk = link_of(id);
    struct cm_assoc *ca = lk->ca;
    if (ca && lk->sid >= 0) {
        ca->ids[lk->sid] = NULL;
        iwarp_llp_assoc_detach(&ca->la, (uint16_t)lk->sid); /* released once it is done */
        mark(ca);
    } else if (ca) {
        for (struct cm_id **p = &ca->waiting; *p; p = &link_of(*p)->next_wait) {
            if (*p == id) {
                *p = lk->next_wait;
                break;
            }
        }
        mark(ca);
    }
    lk->ca = NULL;
    lk->sid = -1;
    lk->connect_deadline = UINT64_MAX;
    iwarp_cm_unhook_qp(id);
}

/* What the session exchange said, for the CM: the peer's side (an Initiate, a Reject), or
 * the negotiated IRD/ORD (ours, ird and ord, when the peer's frames carried none). */
static struct cm_setup setup_of(const struct iwarp_sess_result *r, bool peer, uint32_t ird,
                                uint32_t ord)
{
    struct cm_setup s = {.pd = r->peer_pd, .pd_len = r->peer_pd_len};
    if (peer) {
        s.ird = r->peer_ird;
        s.ord = r->peer_ord;
        s.peer_to_peer = r->peer_p2p;
    } else {
        s.ird = (uint16_t)(r->ird == IWARP_MPA_IRD_ORD_NONE ? ird : r->ird);
        s.ord = (uint16_t)(r->ord == IWARP_MPA_IRD_ORD_NONE ? ord : r->ord);
    }
    return s;
}

/* A passive session was requested on stream sid: announce it on a new id. */
static void stream_request(struct cm_assoc *ca, uint16_t sid)
{
    struct iwarp_ctx *ctx = ca->sc->ctx;
    struct cm_id *lid = ca->listen_id;
    struct cm_sctp_link *lk = lid ? iwarp_api_calloc(ctx, 1, sizeof *lk) : NULL;
    struct cm_id *id = lk ? iwarp_cm_passive_id(lid) : NULL;
    if (!id) {
        iwarp_api_free(ctx, lk);
        /* §6.3/§6.4: nobody listens (or no memory): the session is refused */
        (void)iwarp_llp_assoc_reject(&ca->la, sid, NULL);
        iwarp_llp_assoc_detach(&ca->la, sid);
        return;
    }
    id->conn = lk;
    lk->ca = ca;
    lk->sid = sid;
    lk->connect_deadline = UINT64_MAX;
    (void)iwarp_llp_sctp_ep_local(ca->ep->ep, &id->pub.local_addr);
    memcpy(&id->pub.peer_addr, &ca->peer, sizeof ca->peer);
    ca->ids[sid] = id;
    struct cm_setup setup = setup_of(iwarp_sess_ctl_result(&ca->la.st[sid].ctl), true, 0, 0);
    iwarp_cm_on_request(id, &setup);
}

static void stream_events(struct cm_assoc *ca, uint16_t sid, uint32_t ev)
{
    struct cm_id *id = ca->ids[sid];
    const struct iwarp_llp_assoc_stream *st = &ca->la.st[sid];
    const struct iwarp_sess_result *r = iwarp_sess_ctl_result(&st->ctl);
    if (ev & IWARP_LLP_ASSOC_EV_REQUEST) {
        stream_request(ca, sid);
        return;
    }
    if (!id) {
        iwarp_llp_assoc_detach(&ca->la, sid); /* nobody's (a request withdrawn): let it go */
        return;
    }
    struct cm_sctp_link *lk = link_of(id);
    if ((ev & IWARP_LLP_ASSOC_EV_ESTABLISHED) && !id->passive && id->state == CM_CONNECTING) {
        struct cm_setup setup = setup_of(r, false, lk->ird, lk->ord);
        iwarp_cm_on_established(id, &setup);
    }
    if (ev & IWARP_LLP_ASSOC_EV_REJECTED) {
        /* §6.3: the peer's Reject ends the session; its private data goes up */
        struct cm_setup setup = setup_of(r, true, 0, 0);
        iwarp_cm_on_rejected(id, st->err ? st->err : IWARP_ERR_SESSION_REJECTED, &setup);
        unlink_stream(id);
        return;
    }
    if (ev & IWARP_LLP_ASSOC_EV_CLOSED) {
        iwarp_cm_on_closed(id, st->err);
        unlink_stream(id);
        return;
    }
    if (ev & IWARP_LLP_ASSOC_EV_TIMEDOUT) {
        /* not established in time (our Terminate withdrew the Initiate), a disconnect that
         * did not drain, or a Terminate of ours the peer did not answer: over for us */
        if (id->state == CM_CONNECTING)
            iwarp_cm_on_failed(id, IWARP_ERR_TIMEDOUT);
        else
            iwarp_cm_on_closed(id, 0);
        struct iwarp_core_engine *eng = id_engine(id);
        unlink_stream(id);
        iwarp_core_eng_llp_closed(eng, false); /* whatever is left is flushed */
    }
}

/* A new active association of sc from endpoint e to peer (own: never shared). */
static int assoc_new(struct cm_sctp_ctx *sc, struct cm_sctp_ep *e,
                     const struct sockaddr_storage *peer, bool own, struct cm_assoc **out)
{
    struct iwarp_ctx *ctx = sc->ctx;
    struct cm_assoc *ca = iwarp_api_calloc(ctx, 1, sizeof *ca);
    if (!ca)
        return IWARP_ERR_NOMEM;
    ca->sc = sc;
    ca->ep = e;
    ca->own = own;
    ca->stall_check = UINT64_MAX;
    memcpy(&ca->peer, peer, sizeof ca->peer);
    int rc =
        iwarp_llp_sctp_connect(e->ep, (const struct sockaddr *)peer, 0, &assoc_ops, ca, &ca->sa);
    if (rc != 0) {
        iwarp_api_free(ctx, ca);
        return rc;
    }
    e->refs++;
    ca->next = sc->assocs;
    sc->assocs = ca;
    *out = ca;
    return 0;
}

/* id waits for a session on ca (opened once ca is up). */
static void wait_on(struct cm_assoc *ca, struct cm_id *id)
{
    struct cm_sctp_link *lk = link_of(id);
    lk->ca = ca;
    lk->next_wait = ca->waiting;
    ca->waiting = id;
    mark(ca);
}

/* Open sessions for the ids waiting on a freshly up association. */
static void open_waiting(struct cm_assoc *ca)
{
    while (ca->waiting) {
        struct cm_id *id = ca->waiting;
        struct cm_sctp_link *lk = link_of(id);
        int sid = iwarp_llp_assoc_free_stream(&ca->la);
        ca->waiting = lk->next_wait;
        lk->next_wait = NULL;
        struct cm_assoc *other = NULL;
        if (sid < 0 && !ca->own &&
            ((other = find_assoc(ca->sc, ca->ep, &ca->peer)) != NULL ||
             assoc_new(ca->sc, ca->ep, &ca->peer, false, &other) == 0)) {
            /* the peer granted fewer streams than we counted on: another association */
            wait_on(other, id);
            continue;
        }
        int rc = sid < 0 ? IWARP_ERR_SCTP_STREAMS
                         : iwarp_llp_assoc_open(&ca->la, (uint16_t)sid, &lk->cfg, id_engine(id),
                                                lk->ird, lk->ord, id);
        if (rc != 0) {
            lk->ca = NULL;
            iwarp_cm_unhook_qp(id);
            iwarp_cm_on_failed(id, rc);
            continue;
        }
        lk->sid = sid;
        ca->ids[sid] = id;
        /* like MPA's Reply timeout: no answer to the Initiate fails the connect */
        iwarp_llp_assoc_set_deadline(&ca->la, (uint16_t)sid, lk->connect_deadline);
    }
}

/* The stall rule's check period and limit (ns); 0: the context has no limit. */
static uint64_t stall_limit_ns(const struct cm_sctp_ctx *sc)
{
    return (uint64_t)sc->ctx->llp_timeout_ms * 1000000u;
}

static uint64_t stall_period_ns(const struct cm_sctp_ctx *sc)
{
    uint64_t p = stall_limit_ns(sc) / 8u;
    return p < 10000000u ? 10000000u : p; /* 10 ms at least */
}

/* Data goes out or waits to: arm the stall rule unless it is armed (a branch per call: the
 * data path reads no clock and asks SCTP nothing; the checks do that). */
static void stall_arm(struct cm_assoc *ca, uint64_t now)
{
    if (ca->stall_check != UINT64_MAX || !stall_limit_ns(ca->sc))
        return;
    ca->stall_check = now + stall_period_ns(ca->sc);
    ca->progress_at = now;
    ca->seen = false;
}

/* Send what the association has to send. Returns true when it stopped because the association
 * produced nothing more (so it will not, until something else changes). */
static bool flush_tx(struct cm_assoc *ca, uint64_t now)
{
    while (!ca->down && ca->sa) {
        const struct iwarp_llp_assoc_chunk *ch = iwarp_llp_assoc_tx_next(&ca->la);
        if (!ch && iwarp_llp_assoc_tx_capped(&ca->la)) {
            /* at the in-flight cap: SCTP knows how many chunks are unacknowledged */
            uint32_t unacked = iwarp_llp_sctp_unacked(ca->sa);
            iwarp_llp_assoc_unacked(&ca->la, unacked);
            ch = iwarp_llp_assoc_tx_next(&ca->la);
        }
        if (!ch) {
            if (iwarp_llp_assoc_tx_capped(&ca->la)) {
                stall_arm(ca, now); /* held back at the cap: waits for the peer's SACKs */
                return false;
            }
            return true; /* nothing to send */
        }
        stall_arm(ca, now);
        int rc = iwarp_llp_sctp_send_chunk(ca->sa, ch->sid, ch->ppid, ch->iov, ch->niov);
        if (rc != 0)
            break; /* BUSY: on_writable follows; another error: on_down follows */
        iwarp_llp_assoc_tx_done(&ca->la);
        ca->handed++;
    }
    return false;
}

/* The association is given up while up (the stall rule): ABORT (RFC 4960 §9.1: the peer
 * discards our queued data and ends the association too), and every session and QP on it ends
 * as for any lost association (RFC 5043 §11.3: QP_FATAL, every WR flushed, DISCONNECTED). */
static void assoc_abort(struct cm_assoc *ca, int err)
{
    iwarp_llp_sctp_close(ca->sa, true); /* no callback of it runs any more */
    ca->sa = NULL;
    ca->down = true;
    ca->down_err = err;
    ca->stall_check = UINT64_MAX;
    if (ca->la_ready)
        iwarp_llp_assoc_lost(&ca->la, false);
    mark(ca);
}

/* The stall rule's check at now (stall_check has come). Nothing waits to go out (all we handed
 * SCTP is acknowledged, nothing of ours is held back): disarmed, so an idle association is
 * never dropped. Otherwise progress is a chunk handed to SCTP or a change in SCTP's count of
 * unacknowledged chunks (a SACK that acknowledges new data frees chunks, RFC 4960 §6.2.1; a
 * window that opens lets more go out); a peer that acknowledges nothing, or only with a zero
 * window (RFC 4960 §6.1 rule A: we may then only probe), moves neither. Without progress for
 * llp_timeout_ms the association is aborted. */
static void stall_check(struct cm_assoc *ca, uint64_t now)
{
    if (ca->down || !ca->sa || !ca->la_ready) {
        ca->stall_check = UINT64_MAX;
        return;
    }
    uint32_t unacked = iwarp_llp_sctp_unacked(ca->sa);
    bool ours =
        ca->la.has_pend || iwarp_llp_assoc_tx_ready(&ca->la) || iwarp_llp_assoc_tx_capped(&ca->la);
    if (!ours && unacked == 0) {
        ca->stall_check = UINT64_MAX; /* idle: armed again when data goes out */
        return;
    }
    if (!ca->seen || ca->handed != ca->seen_handed || unacked != ca->seen_unacked) {
        ca->seen = true;
        ca->seen_handed = ca->handed;
        ca->seen_unacked = unacked;
        ca->progress_at = now;
    } else if (now - ca->progress_at >= stall_limit_ns(ca->sc)) {
        iwarp_api_log(ca->sc->ctx, IWARP_LOG_INFO,
                      "cm: SCTP association aborted: no progress for %u ms with data to send "
                      "(%u chunks unacknowledged)",
                      ca->sc->ctx->llp_timeout_ms, unacked);
        assoc_abort(ca, IWARP_ERR_TIMEDOUT);
        return;
    }
    ca->stall_check = now + stall_period_ns(ca->sc);
}

/* Service one association (context lock held) at time now. Returns false when freed. */
static bool assoc_service(struct cm_assoc *ca, uint64_t now)
{
    if (ca->la_ready && !ca->down)
        open_waiting(ca);
    if (ca->down && !ca->la_ready) {
        /* never came up: every connect waiting on it fails */
        while (ca->waiting) {
            struct cm_id *id = ca->waiting;
            ca->waiting = link_of(id)->next_wait;
            link_of(id)->ca = NULL;
            iwarp_cm_unhook_qp(id);
            iwarp_cm_on_failed(id, ca->down_err ? ca->down_err : IWARP_ERR_UNREACHABLE);
        }
    }
    for (int round = 0; ca->la_ready && round < 4; round++) {
        bool drained = flush_tx(ca, now);
        /* lingers of streams that began ending, deadlines that passed, streams let go of */
        bool any = iwarp_llp_assoc_handle_timeout(&ca->la, now);
        for (uint16_t sid = 0; sid < iwarp_llp_assoc_streams_end(&ca->la); sid++) {
            uint32_t ev = iwarp_llp_assoc_take_events(&ca->la, sid);
            if (ev) {
                any = true;
                stream_events(ca, sid, ev);
            }
        }
        /* drained and nothing happened since: tx_ready() could only say no */
        if (!any && (drained || !iwarp_llp_assoc_tx_ready(&ca->la)))
            break;
    }
    bool idle = !ca->waiting && (!ca->la_ready || iwarp_llp_assoc_in_use(&ca->la) == 0);
    if (idle && (ca->down || !ca->passive)) {
        /* the active side ends an association it no longer uses (gracefully; abortively
         * before it is up: nobody waits for it any more); a dead one is closed by either side */
        assoc_free(ca, !ca->la_ready && !ca->down);
        return false;
    }
    return true;
}

static void service(struct cm_sctp_ctx *sc, uint64_t now)
{
    for (int round = 0; sc->dirty && round < SERVICE_ROUNDS; round++) {
        struct cm_assoc *ca = sc->dirty;
        sc->dirty = ca->next_dirty;
        ca->dirty = false;
        (void)assoc_service(ca, now);
    }
}

static void wake_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns)
{
    (void)events;
    struct cm_sctp_ctx *sc = src->user;
    iwarp_llp_sctp_owner_collect(sc->owner); /* their callbacks mark what they touch */
    service(sc, now_ns);
    rearm(sc, now_ns);
}

static void timer_on(struct iwarp_loop_src *src, uint64_t now_ns)
{
    struct cm_sctp_ctx *sc = src->user;
    for (struct cm_assoc *ca = sc->assocs; ca; ca = ca->next) {
        /* a connect whose association did not come up in time */
        for (struct cm_id *id = ca->waiting, *next; id; id = next) {
            next = link_of(id)->next_wait;
            if (link_of(id)->connect_deadline > now_ns)
                continue;
            struct iwarp_core_engine *eng = id_engine(id);
            unlink_stream(id); /* off the waiting list */
            iwarp_core_eng_llp_closed(eng, false);
            iwarp_cm_on_failed(id, IWARP_ERR_TIMEDOUT);
        }
        /* the streams' deadlines: assoc_service() hands them to llp_assoc */
        if (ca->la_ready && iwarp_llp_assoc_next_timeout(&ca->la) <= now_ns)
            mark(ca);
        if (ca->stall_check <= now_ns)
            stall_check(ca, now_ns);
    }
    service(sc, now_ns);
    rearm(sc, now_ns);
}

/* ---- the CM's SCTP functions ---------------------------------------------------------------- */

static struct cm_sctp_link *link_alloc(struct cm_id *id)
{
    if (!id->conn) {
        struct cm_sctp_link *lk = iwarp_api_calloc(id->pub.context, 1, sizeof *lk);
        if (lk) {
            lk->sid = -1;
            lk->connect_deadline = UINT64_MAX;
        }
        id->conn = lk;
    }
    return id->conn;
}

static void accept_cb(void *user, struct iwarp_llp_sctp_assoc *a, int err)
{
    struct cm_id *lid = user;
    struct iwarp_ctx *ctx = lid->pub.context;
    if (!a) {
        iwarp_api_log(ctx, IWARP_LOG_INFO, "cm: SCTP association refused (%s)",
                      iwarp_err_name(err));
        return;
    }
    struct cm_sctp_lsn *l = lid->lsn;
    struct cm_assoc *ca = iwarp_api_calloc(ctx, 1, sizeof *ca);
    if (!ca) {
        iwarp_llp_sctp_close(a, true);
        return;
    }
    ca->sc = l->ep->sc;
    ca->ep = l->ep;
    ca->sa = a;
    ca->stall_check = UINT64_MAX;
    ca->passive = true;
    ca->listen_id = lid;
    ca->pending.limit = l->backlog > 0 ? (uint32_t)l->backlog : 1u; /* §6.4 */
    (void)iwarp_llp_sctp_peer(a, &ca->peer);
    l->ep->refs++;
    ca->next = ca->sc->assocs;
    ca->sc->assocs = ca;
    iwarp_llp_sctp_set_ops(a, &assoc_ops, ca); /* on_up follows at once */
}

static int sctp_listen(struct cm_id *id, int backlog)
{
    struct iwarp_ctx *ctx = id->pub.context;
    struct cm_sctp_ctx *sc = sctp_ctx(ctx);
    struct cm_sctp_lsn *l = sc ? iwarp_api_calloc(ctx, 1, sizeof *l) : NULL;
    if (!l)
        return IWARP_ERR_NOMEM;
    int rc = ep_open(sc, (const struct sockaddr *)&id->pub.local_addr, false, &l->ep);
    if (rc != 0) {
        iwarp_api_free(ctx, l);
        return rc;
    }
    l->ep->refs = 1;
    l->backlog = backlog;
    id->lsn = l;
    rc = iwarp_llp_sctp_listen(l->ep->ep, 0, backlog > 0 ? backlog : 1, accept_cb, id, &l->lsn);
    if (rc != 0) {
        id->lsn = NULL;
        ep_unref(l->ep);
        iwarp_api_free(ctx, l);
        return rc;
    }
    (void)iwarp_llp_sctp_ep_local(l->ep->ep, &id->pub.local_addr); /* the bound port */
    service(sc, iwarp_loop_now());
    return 0;
}

static void sctp_listen_close(struct cm_id *id)
{
    struct cm_sctp_lsn *l = id->lsn;
    struct iwarp_ctx *ctx = id->pub.context;
    struct cm_sctp_ctx *sc = l->ep->sc;
    iwarp_llp_sctp_listener_close(l->lsn);
    for (struct cm_assoc *ca = sc->assocs; ca; ca = ca->next)
        if (ca->listen_id == id)
            ca->listen_id = NULL;
    id->lsn = NULL;
    ep_unref(l->ep);
    iwarp_api_free(ctx, l);
    service(sc, iwarp_loop_now());
}

/* The local address the kernel would send from to peer (port 0): a client endpoint binds it, so
 * that its packets carry a real source (captures, and peers that check it). */
static int source_for(const struct sockaddr_storage *peer, struct sockaddr_storage *out)
{
    socklen_t len = iwarp_cm_addrlen((const struct sockaddr *)peer);
    int fd = socket(peer->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return IWARP_ERR_IO;
    socklen_t ol = sizeof *out;
    memset(out, 0, sizeof *out);
    int rc = connect(fd, (const struct sockaddr *)peer, len) == 0 &&
                     getsockname(fd, (struct sockaddr *)out, &ol) == 0
                 ? 0
                 : IWARP_ERR_UNREACHABLE;
    close(fd);
    if (out->ss_family == AF_INET)
        ((struct sockaddr_in *)out)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)out)->sin6_port = 0;
    return rc;
}

/* The context's shared client endpoint for peer: bound to the source address towards it. */
static int client_ep(struct cm_sctp_ctx *sc, const struct sockaddr_storage *peer,
                     struct cm_sctp_ep **out)
{
    struct sockaddr_storage src;
    int rc = source_for(peer, &src);
    if (rc != 0)
        return rc;
    for (struct cm_sctp_ep *e = sc->eps; e; e = e->next) {
        struct sockaddr_storage ss;
        if (!e->client || !iwarp_llp_sctp_ep_local(e->ep, &ss) || ss.ss_family != src.ss_family)
            continue;
        bool same = src.ss_family == AF_INET
                        ? ((struct sockaddr_in *)&ss)->sin_addr.s_addr ==
                              ((struct sockaddr_in *)&src)->sin_addr.s_addr
                        : !memcmp(&((struct sockaddr_in6 *)&ss)->sin6_addr,
                                  &((struct sockaddr_in6 *)&src)->sin6_addr, 16);
        if (same) {
            *out = e;
            return 0;
        }
    }
    return ep_open(sc, (const struct sockaddr *)&src, true, out);
}

static bool same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    socklen_t la = iwarp_cm_addrlen((const struct sockaddr *)a);
    return la && la == iwarp_cm_addrlen((const struct sockaddr *)b) && !memcmp(a, b, la);
}

/* An association of sc to peer through e with room for one more session, or NULL. One not up
 * yet is counted with the streams an association to that peer came up with, if any (the peer
 * may grant fewer than we ask, RFC 4960 §5.1.1), else with ours. */
static struct cm_assoc *find_assoc(struct cm_sctp_ctx *sc, struct cm_sctp_ep *e,
                                   const struct sockaddr_storage *peer)
{
    uint32_t learned = 0;
    for (struct cm_assoc *ca = sc->assocs; ca && !learned; ca = ca->next)
        if (ca->la_ready && !ca->passive && ca->ep == e && same_peer(&ca->peer, peer))
            learned = ca->nstreams;
    for (struct cm_assoc *ca = sc->assocs; ca; ca = ca->next) {
        if (ca->passive || ca->own || ca->down || !ca->sa || ca->ep != e ||
            !same_peer(&ca->peer, peer))
            continue;
        uint32_t used = 0;
        for (struct cm_id *w = ca->waiting; w; w = link_of(w)->next_wait)
            used++;
        uint32_t cap = learned ? learned : ctx_streams(sc->ctx);
        if (ca->la_ready) {
            used += iwarp_llp_assoc_in_use(&ca->la);
            cap = ca->nstreams;
        }
        if (used < cap)
            return ca;
    }
    return NULL;
}

static int connect_link(struct cm_sctp_ctx *sc, struct cm_id *id, struct cm_sctp_link *lk,
                        const struct iwarp_conn_param *param);

static int sctp_connect(struct cm_id *id, const struct iwarp_conn_param *param)
{
    struct iwarp_ctx *ctx = id->pub.context;
    struct cm_sctp_ctx *sc = sctp_ctx(ctx);
    bool fresh = id->conn == NULL; /* a failure lets go of the link it made */
    struct cm_sctp_link *lk = sc ? link_alloc(id) : NULL;
    if (!lk)
        return IWARP_ERR_NOMEM;
    if (lk->ca)
        return IWARP_ERR_STATE;
    int rc = connect_link(sc, id, lk, param);
    if (rc != 0 && fresh) {
        /* the id stays as it was: connect() may be called again (cm.c wants no conn) */
        iwarp_api_free(ctx, lk);
        id->conn = NULL;
    }
    return rc;
}

/* sctp_connect once id has its link lk (and nothing else yet). */
static int connect_link(struct cm_sctp_ctx *sc, struct cm_id *id, struct cm_sctp_link *lk,
                        const struct iwarp_conn_param *param)
{
    /* RFC 6581 §7: the Enhanced Initiate carries IRD/ORD; no RTR is needed over SCTP since
     * either side may send first. Its private data shares the 512 octets with the word. */
    iwarp_sess_cfg_default(&lk->cfg, IWARP_SESS_ACTIVE);
    lk->ird = iwarp_cm_ird_ord(param->responder_resources);
    lk->ord = iwarp_cm_ird_ord(param->initiator_depth);
    lk->cfg.ird = (uint16_t)lk->ird;
    lk->cfg.ord = (uint16_t)lk->ord;
    lk->cfg.pd_len = param->private_data_len;
    if (param->private_data_len)
        memcpy(lk->pd, param->private_data, param->private_data_len);
    lk->cfg.pd = lk->pd;
    struct iwarp_sess_ctl probe;
    int rc = iwarp_sess_ctl_init(&probe, &lk->cfg); /* 508 octets at most, §5.2.3 + RFC 6581 */
    if (rc != 0)
        return rc;
    struct cm_sctp_ep *e;
    rc = client_ep(sc, &id->pub.peer_addr, &e);
    if (rc != 0)
        return rc;
    struct cm_assoc *ca =
        param->sctp_own_association ? NULL : find_assoc(sc, e, &id->pub.peer_addr);
    if (!ca) {
        rc = assoc_new(sc, e, &id->pub.peer_addr, param->sctp_own_association, &ca);
        if (rc != 0) {
            if (e->refs == 0)
                ep_close(e);
            return rc;
        }
    }
    wait_on(ca, id);
    (void)iwarp_llp_sctp_ep_local(e->ep, &id->pub.local_addr);
    /* like MPA's Reply timeout: no answer (an unreachable peer, a peer that does not answer
     * the Initiate) fails the connect with UNREACHABLE */
    uint64_t now = iwarp_loop_now();
    lk->connect_deadline =
        now + (param->timeout_ms ? param->timeout_ms : CM_SCTP_CONNECT_MS) * 1000000ull;
    iwarp_cm_hook_qp(id);
    mark(ca);
    service(sc, now);
    rearm(sc, now);
    return 0;
}

static int sctp_accept(struct cm_id *id, const struct iwarp_conn_param *param)
{
    struct cm_sctp_link *lk = link_of(id);
    struct cm_assoc *ca = lk ? lk->ca : NULL;
    if (!ca || lk->sid < 0 || ca->down) {
        iwarp_cm_on_closed(id, 0);
        return IWARP_ERR_CONN_RESET; /* the peer gave up while we were deciding */
    }
    uint16_t pd_len = param ? param->private_data_len : 0;
    uint32_t ird = iwarp_cm_ird_ord(param ? param->responder_resources : 0);
    uint32_t ord = iwarp_cm_ird_ord(param ? param->initiator_depth : 0);
    struct iwarp_sess_answer ans = {.ird = (uint16_t)ird,
                                    .ord = (uint16_t)ord,
                                    .pd = pd_len ? param->private_data : NULL,
                                    .pd_len = pd_len};
    lk->ird = ird;
    lk->ord = ord;
    iwarp_cm_hook_qp(id);
    int rc = iwarp_llp_assoc_accept(&ca->la, (uint16_t)lk->sid, &ans, id_engine(id), ird, ord);
    if (rc != 0) {
        iwarp_cm_unhook_qp(id);
        return rc;
    }
    struct cm_setup setup =
        setup_of(iwarp_sess_ctl_result(&ca->la.st[lk->sid].ctl), false, ird, ord);
    iwarp_cm_on_established(id, &setup);
    mark(ca);
    uint64_t now = iwarp_loop_now();
    service(ca->sc, now);
    rearm(ca->sc, now);
    return 0;
}

static int sctp_reject(struct cm_id *id, const void *pd, uint16_t pd_len)
{
    struct cm_sctp_link *lk = link_of(id);
    struct cm_assoc *ca = lk ? lk->ca : NULL;
    if (!ca || lk->sid < 0)
        return 0; /* withdrawn already */
    struct iwarp_sess_answer ans = {.pd = pd, .pd_len = pd_len};
    int rc = iwarp_llp_assoc_reject(&ca->la, (uint16_t)lk->sid, &ans);
    struct cm_sctp_ctx *sc = ca->sc;
    unlink_stream(id); /* the stream is released once the Reject is sent */
    uint64_t now = iwarp_loop_now();
    service(sc, now);
    rearm(sc, now);
    return rc;
}

static int sctp_disconnect(struct cm_id *id)
{
    struct cm_sctp_link *lk = link_of(id);
    if (!lk || !lk->ca || lk->sid < 0)
        return IWARP_ERR_STATE;
    struct cm_assoc *ca = lk->ca;
    uint64_t now = iwarp_loop_now();
    if (id->pub.qp) /* drain, then Terminate; the close takes CM_LINGER_NS at most */
        iwarp_llp_assoc_disconnect(&ca->la, (uint16_t)lk->sid, now);
    else /* our Terminate; the peer's answer is awaited CM_LINGER_NS at most */
        iwarp_llp_assoc_abort(&ca->la, (uint16_t)lk->sid);
    mark(ca);
    service(ca->sc, now);
    rearm(ca->sc, now);
    return 0;
}

static bool sctp_abort(struct cm_id *id, bool rst)
{
    (void)rst; /* the association stays; this stream ends alike either way */
    struct cm_sctp_link *lk = link_of(id);
    if (!lk || !lk->ca)
        return false;
    struct cm_assoc *ca = lk->ca;
    struct iwarp_core_engine *eng = id_engine(id);
    if (lk->sid >= 0 && ca->la_ready)
        iwarp_llp_assoc_abort(&ca->la, (uint16_t)lk->sid); /* our Terminate (§6) */
    iwarp_core_eng_llp_closed(eng, false);                 /* flush the QP */
    struct cm_sctp_ctx *sc = ca->sc;
    unlink_stream(id);
    uint64_t now = iwarp_loop_now();
    service(sc, now);
    rearm(sc, now);
    return true;
}

/* The QP has new work: produce and send its chunks now. */
static void sctp_kick(struct iwarp_qp_impl *q)
{
    struct cm_id *id = q->cm_id;
    struct cm_sctp_link *lk = id ? link_of(id) : NULL;
    if (!lk || !lk->ca)
        return;
    struct cm_sctp_ctx *sc = lk->ca->sc;
    mark(lk->ca);
    uint64_t now = iwarp_loop_now();
    service(sc, now);
    rearm(sc, now);
}

/* A busy poll of the QP's CQ reads its association's endpoint directly (verbs_cq.c), as its
 * readiness would: the epoll_wait that would report it costs about what the read does. An
 * endpoint read that way for long enough leaves the epoll set (iwarp_loop_direct). */
static void sctp_poll_rx(struct iwarp_qp_impl *q, uint64_t now_ns)
{
    struct cm_id *id = q->cm_id;
    struct cm_sctp_link *lk = id ? link_of(id) : NULL;
    if (lk && lk->ca && lk->ca->ep) {
        iwarp_loop_direct(&lk->ca->sc->ctx->loop, &lk->ca->ep->src);
        ep_read(lk->ca->ep, now_ns, true);
    }
}

static void sctp_free(struct cm_id *id, bool live)
{
    (void)live; /* a session still on a stream ends with our Terminate either way */
    (void)sctp_abort(id, true);
    iwarp_api_free(id->pub.context, id->conn);
    id->conn = NULL;
}

static void sctp_ctx_fini(struct iwarp_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    struct cm_sctp_ctx *sc = ctx->sctp;
    if (!sc) {
        iwarp_api_unlock(ctx);
        return;
    }
    while (sc->assocs)
        assoc_free(sc->assocs, true);
    while (sc->eps)
        ep_close(sc->eps);
    iwarp_loop_del(&ctx->loop, &sc->timer);
    iwarp_loop_del(&ctx->loop, &sc->wake);
    iwarp_llp_sctp_owner_close(sc->owner);
    ctx->sctp = NULL;
    iwarp_api_unlock(ctx);
    iwarp_api_free(ctx, sc);
}

const struct cm_transport iwarp_cm_sctp = {
    .listen = sctp_listen,
    .listen_close = sctp_listen_close,
    .connect = sctp_connect,
    .accept = sctp_accept,
    .reject = sctp_reject,
    .disconnect = sctp_disconnect,
    .abort = sctp_abort,
    .kick = sctp_kick,
    .poll_rx = sctp_poll_rx,
    .free = sctp_free,
    .ctx_fini = sctp_ctx_fini,
};
