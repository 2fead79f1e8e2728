/*
 * The connection manager (librdmacm shapes, api-conventions.md §3): event channels, ids,
 * address "resolution" (numeric, immediate), listening, MPA connection setup over TCP
 * (llp_tcp + llp_conn) and teardown, driven by the progress loop.
 *
 * Each connection is a loop source whose callbacks move octets (llp_tcp) and then run
 * conn_update(), which turns the TCP and MPA state into CM events. An accepted TCP connection
 * gets a hidden id at once; it is announced with CONNECT_REQUEST when the MPA Request has
 * arrived, and silently freed if the negotiation fails before that.
 *
 * Events live in fixed slots of their id (no allocation, no loss): two for the API's own
 * (ADDR/ROUTE_RESOLVED) and three for the connection's (CONNECT_REQUEST, the outcome,
 * DISCONNECTED), which is the most one connection produces.
 *
 * Every public function takes ctx->lock; loop callbacks run with it held. Nothing blocks
 * while holding it: iwarp_cm_get_event waits on the channel fd (or, in caller-progress mode,
 * in the loop) without it.
 */
#define _GNU_SOURCE 1 /* eventfd, ppoll-free poll, EFD_SEMAPHORE */
#include "iwarp/cm.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "api/cm_internal.h"
#include "iwarp/errors.h"
#include "llp/llp_tcp.h"
#include "loop/loop.h"
#include "trace/trace_sink.h"

static struct cm_id *cm_id_of(struct iwarp_cm_id *id)
{
    return (struct cm_id *)id;
}

static struct cm_channel *cm_ch_of(struct iwarp_cm_channel *ch)
{
    return (struct cm_channel *)ch;
}

const char *iwarp_cm_event_str(enum iwarp_cm_event_type type)
{
    static const char *const names[] = {
        "ADDR_RESOLVED",   "ADDR_ERROR",       "ROUTE_RESOLVED", "ROUTE_ERROR",
        "CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR",  "UNREACHABLE",
        "REJECTED",        "ESTABLISHED",      "DISCONNECTED",   "DEVICE_REMOVAL",
        "MULTICAST_JOIN",  "MULTICAST_ERROR",  "ADDR_CHANGE",    "TIMEWAIT_EXIT",
    };
    if ((unsigned)type < sizeof names / sizeof names[0])
        return names[type];
    return "UNKNOWN";
}

/* ---- events ------------------------------------------------------------------------------ */

/* Queue an event of id on its channel (lock held). conn: one of the connection slots, else
 * an API slot. param (may be NULL) is copied, with pd_len octets of pd. Returns 0 or
 * IWARP_ERR_BUSY when every slot of that kind holds an unacknowledged event. */
int iwarp_api_cm_emit(struct cm_id *id, bool conn, enum iwarp_cm_event_type type, int status,
                      const struct iwarp_conn_param *param, const uint8_t *pd, uint16_t pd_len)
{
    uint32_t first = conn ? CM_SLOTS_API : 0, end = conn ? CM_SLOTS : CM_SLOTS_API;
    struct cm_ev *e = NULL;
    for (uint32_t i = first; i < end && !e; i++)
        if (!id->ev[i].busy)
            e = &id->ev[i];
    if (!e) {
        iwarp_api_log(id->pub.context, IWARP_LOG_ERROR, "cm: no event slot for %s",
                      iwarp_cm_event_str(type));
        return IWARP_ERR_BUSY;
    }
    memset(&e->pub, 0, sizeof e->pub);
    e->pub.id = &id->pub;
    e->pub.event = type;
    e->pub.status = status;
    if (param)
        e->pub.param = *param;
    if (pd_len > sizeof e->pub.private_data_buf)
        pd_len = sizeof e->pub.private_data_buf;
    if (pd_len && pd)
        memcpy(e->pub.private_data_buf, pd, pd_len);
    e->pub.param.private_data = pd_len ? e->pub.private_data_buf : NULL;
    e->pub.param.private_data_len = pd_len;
    if (type == IWARP_CM_EVENT_CONNECT_REQUEST && id->listen_id) {
        e->pub.listen_id = &id->listen_id->pub;
        id->listen_id->lsn->n_req_unacked++;
    }
    e->owner = id;
    e->busy = true;
    e->next = NULL;
    id->n_unacked++;
    struct cm_channel *ch = id->ch;
    if (ch->tail)
        ch->tail->next = e;
    else
        ch->head = e;
    ch->tail = e;
    uint64_t one = 1;
    ssize_t n = write(ch->pub.fd, &one, sizeof one); /* semaphore eventfd: one per event */
    (void)n;
    return 0;
}

/* ---- MPA parameters ---------------------------------------------------------------------- */

/* IRD/ORD from a conn_param (0xFF: the device maximum; more than it is clipped). */
uint16_t iwarp_api_cm_ird_ord(uint8_t v)
{
    if (v == CM_IRD_ORD_MAX_REQ || v > IWARP_CORE_MAX_IRD)
        return (uint16_t)IWARP_CORE_MAX_IRD;
    return v;
}

/* A peer's raw IRD/ORD (0x3FFF: not negotiated) as a conn_param octet. */
uint8_t iwarp_api_cm_ird_ord_report(uint16_t v)
{
    return (uint8_t)(v > IWARP_CORE_MAX_IRD ? IWARP_CORE_MAX_IRD : v);
}

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
    n->ird = iwarp_api_cm_ird_ord(p->responder_resources);
    n->ord = iwarp_api_cm_ird_ord(p->initiator_depth);
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

/* What the MPA exchange told us, as a conn_param (the peer's private data is added by emit). */
static void result_param(const struct iwarp_mpa_neg_result *r, bool request,
                         struct iwarp_conn_param *p)
{
    memset(p, 0, sizeof *p);
    if (request) {
        /* CONNECT_REQUEST: the peer's IRD/ORD swapped into our view (siw_cm_upcall: ird =
         * the peer's ord, ord = the peer's ird; api-conventions §3). */
        p->responder_resources = iwarp_api_cm_ird_ord_report(r->peer_ord);
        p->initiator_depth = iwarp_api_cm_ird_ord_report(r->peer_ird);
        p->mpa_rev = r->peer_rev;
        p->peer_to_peer = r->peer_p2p;
        p->rtr_types = rtr_to_cm(r->peer_rtr);
    } else {
        p->responder_resources = iwarp_api_cm_ird_ord_report(r->ird);
        p->initiator_depth = iwarp_api_cm_ird_ord_report(r->ord);
        p->mpa_rev = r->rev;
        p->peer_to_peer = r->p2p;
        p->rtr_types = rtr_to_cm(r->rtr);
    }
    p->crc = r->crc;
    p->markers = r->markers_rx;
}

/* ---- connections ------------------------------------------------------------------------- */

static void conn_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns);
static void conn_on_timer(struct iwarp_loop_src *src, uint64_t now_ns);
static void conn_update(struct cm_id *id, uint64_t now_ns);

static void conn_free(struct iwarp_ctx *ctx, struct cm_conn *cc)
{
    if (!cc)
        return;
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
    iwarp_api_free(ctx, cc);
}

/* Per-connection memory, from the context allocator (never on the data path). */
static struct cm_conn *conn_alloc(struct cm_id *id)
{
    struct iwarp_ctx *ctx = id->pub.context;
    struct cm_conn *cc = iwarp_api_calloc(ctx, 1, sizeof *cc);
    if (!cc)
        return NULL;
    cc->bounce = iwarp_api_calloc(ctx, 1, IWARP_LLP_CONN_BOUNCE);
    cc->txf = iwarp_api_calloc(ctx, IWARP_LLP_CONN_TX_SEGS, sizeof *cc->txf);
    if (!cc->bounce || !cc->txf) {
        conn_free(ctx, cc);
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
            conn_free(ctx, cc);
            return NULL;
        }
        iwarp_trace_conn_init(cc->trace, sink, cc->trace_buf, iwarp_api_trace_bound, ctx);
        cc->tcp.trace = cc->trace;
    }
    cc->tcp.fd = -1;
    cc->src.fd = -1;
    cc->src.deadline = UINT64_MAX;
    cc->src.heap_index = UINT32_MAX;
    cc->src.on_io = conn_on_io;
    cc->src.on_timer = conn_on_timer;
    cc->src.user = id;
    return cc;
}

/* Register the connection's socket with the loop (lock held). */
static int conn_watch(struct cm_id *id)
{
    struct cm_conn *cc = id->conn;
    cc->src.fd = cc->tcp.fd;
    cc->src.events = 0;
    cc->src.deadline = UINT64_MAX;
    return iwarp_loop_add(&id->pub.context->loop, &cc->src);
}

/* Stop watching and close the socket (abortive: RST). The MPA connection learns of the end
 * (and through it the QP, which flushes). Memory stays until the id is destroyed. */
static void conn_release(struct cm_id *id, bool abortive)
{
    struct cm_conn *cc = id->conn;
    if (!cc)
        return;
    iwarp_loop_del(&id->pub.context->loop, &cc->src);
    iwarp_llp_tcp_close(&cc->tcp, abortive);
    id->linger_deadline = UINT64_MAX;
}

/* The QP's transport hooks (api_internal.h), called with the lock held. */
static void qp_kick(struct iwarp_qp_impl *q)
{
    struct cm_id *id = q->cm_id;
    if (!id || !id->conn || !id->conn->src.registered)
        return;
    uint64_t now = iwarp_loop_now();
    iwarp_llp_tcp_on_writable(&id->conn->tcp, now);
    conn_update(id, now);
}

static void start_disconnect(struct cm_id *id, uint64_t now);

static void qp_disconnect(struct iwarp_qp_impl *q)
{
    struct cm_id *id = q->cm_id;
    if (id && id->state == CM_ESTABLISHED)
        start_disconnect(id, iwarp_loop_now());
}

/* Abortive close of the connection (modify_qp_err, destroy_qp): DISCONNECTED when report
 * and the connection was up. */
static void conn_abort(struct cm_id *id, bool report)
{
    if (id->sctp) {
        iwarp_api_sctp_abort(id, report);
        return;
    }
    if (!id->conn || !id->conn->src.registered)
        return;
    bool was_up = id->state == CM_ESTABLISHED || id->state == CM_CLOSING;
    bool was_connecting = id->state == CM_MPA || id->state == CM_CONNECTING;
    conn_release(id, true);
    id->state = CM_CLOSED;
    if (report && was_up)
        iwarp_api_cm_emit(id, true, IWARP_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0);
    else if (report && was_connecting && !id->passive)
        iwarp_api_cm_emit(id, true, IWARP_CM_EVENT_CONNECT_ERROR, IWARP_ERR_CONN_RESET, NULL, NULL,
                          0);
}

static void qp_abort(struct iwarp_qp_impl *q)
{
    struct cm_id *id = q->cm_id;
    if (id)
        conn_abort(id, true);
    q->llp = (struct iwarp_qp_llp){0}; /* the transport lets go of the QP */
}

/* Hand the QP to the MPA connection and route its kicks here (lock held). */
static void attach_qp(struct cm_id *id)
{
    struct iwarp_qp_impl *q = iwarp_api_qp(id->pub.qp);
    if (q->ddp) /* a DDP-level QP (iwarp/ddp.h): the connection feeds its DDP engine */
        iwarp_llp_conn_attach_ddp(&id->conn->tcp.conn, q->ddp);
    else
        iwarp_llp_conn_attach(&id->conn->tcp.conn, &q->core);
    q->cm_id = id;
    q->llp = (struct iwarp_qp_llp){
        .conn = id->conn, .kick = qp_kick, .disconnect = qp_disconnect, .abort = qp_abort};
}

/* Free a passive id that was never announced (its negotiation failed, or its listener went
 * away). Lock held. */
static void hidden_free(struct cm_id *id)
{
    struct iwarp_ctx *ctx = id->pub.context;
    struct cm_listener *l = id->listen_id->lsn;
    for (struct cm_id **p = &l->hidden; *p; p = &(*p)->next_hidden) {
        if (*p == id) {
            *p = id->next_hidden;
            break;
        }
    }
    conn_release(id, true);
    conn_free(ctx, id->conn);
    id->ch->n_ids--;
    ctx->n_cm--;
    iwarp_api_free(ctx, id);
}

/* The epoll interest and the timer the connection needs now (lock held). */
static void conn_rearm(struct cm_id *id, uint64_t now)
{
    struct cm_conn *cc = id->conn;
    struct iwarp_loop *loop = &id->pub.context->loop;
    uint32_t want = iwarp_llp_tcp_interest(&cc->tcp);
    uint32_t ev = ((want & IWARP_LLP_TCP_WANT_READ) ? (uint32_t)EPOLLIN : 0u) |
                  ((want & IWARP_LLP_TCP_WANT_WRITE) ? (uint32_t)EPOLLOUT : 0u);
    iwarp_loop_mod(loop, &cc->src, ev);
    uint64_t deadline = id->linger_deadline;
    if (cc->tcp.conn_ready) {
        uint64_t t = iwarp_llp_conn_next_timeout(&cc->tcp.conn);
        if (t < deadline)
            deadline = t;
    }
    (void)now;
    if (deadline != cc->src.deadline)
        iwarp_loop_set_timer(loop, &cc->src, deadline);
}

/* Active side: TCP is up; start MPA as the initiator with the QP attached. */
static int start_initiator(struct cm_id *id, const struct iwarp_llp_conn_cfg *cfg, uint64_t now)
{
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    int rc = iwarp_llp_tcp_start(t, cfg, id->conn->bounce, id->conn->txf, now);
    if (rc != 0)
        return rc;
    memcpy(&id->pub.local_addr, &t->local, sizeof t->local);
    attach_qp(id);
    id->state = CM_MPA;
    iwarp_llp_tcp_on_writable(t, now); /* the MPA Request */
    return 0;
}

/* The outcome event of a failed active connection (librdmacm over iWARP, cma_iw_handler:
 * refused or reset -> REJECTED, timed out -> UNREACHABLE, anything else -> CONNECT_ERROR). */
static void active_failed(struct cm_id *id, int status)
{
    enum iwarp_cm_event_type type = IWARP_CM_EVENT_CONNECT_ERROR;
    if (status == IWARP_ERR_CONN_REFUSED || status == IWARP_ERR_CONN_RESET)
        type = IWARP_CM_EVENT_REJECTED;
    else if (status == IWARP_ERR_TIMEDOUT || status == IWARP_ERR_UNREACHABLE)
        type = IWARP_CM_EVENT_UNREACHABLE;
    id->state = CM_CLOSED;
    iwarp_api_cm_emit(id, true, type, status, NULL, NULL, 0);
}

/* Whether the MPA exchange has reached full operation on this side. */
static bool mpa_up(const struct iwarp_llp_conn *c)
{
    enum iwarp_mpa_neg_state s = iwarp_mpa_neg_state(&c->neg);
    return c->state == IWARP_LLP_CONN_ESTABLISHED || s == IWARP_MPA_NEG_SEND_FIRST ||
           s == IWARP_MPA_NEG_WAIT_FIRST_FPDU || s == IWARP_MPA_NEG_ESTABLISHED;
}

/* Active side, MPA in progress. Returns false when the connection was released. */
static int active_open(struct cm_id *id, const struct iwarp_llp_conn_cfg *cfg, const void *pd,
                       uint64_t now);

/* Active side: the peer rejected our Request for markers and the ULP allowed a fallback
 * (iwarp_conn_param.markers_fallback): close this connection, its QP untouched, and connect
 * again asking for none. A responder that cannot insert markers can only refuse them with a
 * Reject (RFC 5044 §7.1.2 rule 3; Linux siw, wire-reference §2). */
static void markers_fallback(struct cm_id *id, uint64_t now)
{
    struct iwarp_ctx *ctx = id->pub.context;
    struct iwarp_llp_conn_cfg cfg = id->conn->cfg;
    uint8_t pd[IWARP_MPA_PD_MAX];
    if (cfg.neg.pd_len)
        memcpy(pd, id->conn->pd, cfg.neg.pd_len);
    cfg.neg.markers = false;
    id->markers_fallback = false;
    /* the QP never started (RFC 5044 §7.1.2: no full operation): detach it before the close
     * so it is not flushed, and so the new connection can take it */
    iwarp_llp_conn_attach(&id->conn->tcp.conn, NULL);
    iwarp_llp_conn_attach_ddp(&id->conn->tcp.conn, NULL);
    iwarp_api_qp(id->pub.qp)->llp = (struct iwarp_qp_llp){0};
    conn_release(id, false);
    conn_free(ctx, id->conn);
    id->conn = NULL;
    iwarp_api_log(ctx, IWARP_LOG_INFO,
                  "cm: the peer rejected MPA markers; connecting again without them");
    int rc = active_open(id, &cfg, pd, now);
    if (rc != 0)
        active_failed(id, rc);
}

static bool update_active_mpa(struct cm_id *id, uint64_t now)
{
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    struct iwarp_llp_conn *c = &t->conn;
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    struct iwarp_conn_param p;
    if (c->state == IWARP_LLP_CONN_REJECTED && r->err == IWARP_ERR_MPA_MARKERS &&
        id->markers_fallback) {
        markers_fallback(id, now);
        return false;
    }
    if (c->state == IWARP_LLP_CONN_REJECTED) {
        /* RFC 5044 §7.1.2 rule 3: a Reject ends MPA; the peer's private data goes up. */
        result_param(r, true, &p);
        id->state = CM_CLOSED;
        iwarp_api_cm_emit(id, true, IWARP_CM_EVENT_REJECTED,
                          r->err ? r->err : IWARP_ERR_MPA_REJECTED, &p, r->peer_pd, r->peer_pd_len);
        conn_release(id, false);
        return false;
    }
    if (c->state != IWARP_LLP_CONN_FAILED && c->state != IWARP_LLP_CONN_CLOSE && mpa_up(c)) {
        result_param(r, false, &p);
        id->state = CM_ESTABLISHED;
        iwarp_api_cm_emit(id, true, IWARP_CM_EVENT_ESTABLISHED, 0, &p, r->peer_pd, r->peer_pd_len);
        return true;
    }
    if (c->state == IWARP_LLP_CONN_FAILED || c->state == IWARP_LLP_CONN_CLOSE ||
        t->phase == IWARP_LLP_TCP_DONE || t->rx_eof) {
        int status = c->err ? c->err : r->err ? r->err : t->err ? t->err : IWARP_ERR_CONN_RESET;
        active_failed(id, status);
        /* a Terminate or Reject may still be queued: let TCP deliver it */
        iwarp_llp_tcp_shutdown(t, now);
        conn_release(id, false);
        return false;
    }
    return true;
}

/* Whether the QP's graceful close has drained (its engine: RDMAP or DDP-level). */
static bool qp_tx_close(struct iwarp_qp_impl *q)
{
    return q->ddp ? iwarp_core_ddp_tx_close(q->ddp) : iwarp_core_qp_tx_close(&q->core);
}

/* Turn the TCP and MPA state into events and interest (lock held). May free a hidden id. */
static void conn_update(struct cm_id *id, uint64_t now)
{
    struct cm_conn *cc = id->conn;
    struct iwarp_llp_tcp *t = &cc->tcp;
    struct iwarp_llp_conn *c = &t->conn;

    switch (id->state) {
    case CM_CONNECTING: {
        if (t->phase == IWARP_LLP_TCP_CONNECTING)
            break;
        if (!iwarp_llp_tcp_connected(t)) {
            active_failed(id, t->err ? t->err : IWARP_ERR_CONN_RESET);
            conn_release(id, false);
            return;
        }
        /* TCP is up: start MPA with the configuration connect() checked and kept */
        int rc = start_initiator(id, &cc->cfg, now);
        if (rc != 0) {
            active_failed(id, rc);
            conn_release(id, true);
            return;
        }
        if (!update_active_mpa(id, now))
            return;
        break;
    }
    case CM_MPA:
        if (!id->passive) {
            if (!update_active_mpa(id, now))
                return;
            break;
        }
        if (c->state == IWARP_LLP_CONN_REQUEST) {
            /* The MPA Request is in: announce the id (RFC 5044 §7.1.2: the ULP decides). */
            const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
            struct iwarp_conn_param p;
            result_param(r, true, &p);
            struct cm_listener *l = id->listen_id->lsn;
            for (struct cm_id **pp = &l->hidden; *pp; pp = &(*pp)->next_hidden) {
                if (*pp == id) {
                    *pp = id->next_hidden;
                    break;
                }
            }
            id->next_hidden = NULL;
            id->state = CM_REQUEST;
            iwarp_api_cm_emit(id, true, IWARP_CM_EVENT_CONNECT_REQUEST, 0, &p, r->peer_pd,
                              r->peer_pd_len);
        } else if (c->state != IWARP_LLP_CONN_NEGOTIATING || t->phase == IWARP_LLP_TCP_DONE ||
                   t->rx_eof) {
            hidden_free(id); /* never announced: nobody to tell */
            return;
        }
        break;
    case CM_REQUEST:
        break; /* accept()/reject() see a dead connection */
    case CM_ESTABLISHED:
    case CM_CLOSING:
        if (id->state == CM_CLOSING && id->pub.qp && !t->fin_wanted &&
            qp_tx_close(iwarp_api_qp(id->pub.qp)))
            iwarp_llp_tcp_shutdown(t, now); /* drained: our FIN */
        if (t->fin_sent && !t->rx_eof && id->linger_deadline == UINT64_MAX)
            id->linger_deadline = now + CM_LINGER_NS;
        if (t->rx_eof || t->phase == IWARP_LLP_TCP_DONE) {
            /* the peer closed (FIN or reset), or both FINs are exchanged: answer the FIN */
            iwarp_llp_tcp_shutdown(t, now);
            id->state = CM_CLOSED;
            iwarp_api_cm_emit(id, true, IWARP_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0);
            conn_release(id, false);
            return;
        }
        break;
    default:
        break;
    }
    if (!cc->src.registered)
        return;
    if (t->phase == IWARP_LLP_TCP_DONE && id->state != CM_CLOSING && id->state != CM_ESTABLISHED) {
        conn_release(id, false); /* e.g. reset while a decision was pending */
        return;
    }
    conn_rearm(id, now);
}

static void conn_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns)
{
    struct cm_id *id = src->user;
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
        iwarp_llp_tcp_on_readable(t, now_ns);
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
        iwarp_llp_tcp_on_writable(t, now_ns);
    conn_update(id, now_ns);
}

static void conn_on_timer(struct iwarp_loop_src *src, uint64_t now_ns)
{
    struct cm_id *id = src->user;
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    if (id->linger_deadline <= now_ns) {
        /* the peer did not answer our FIN in time: reset (DISCONNECTED follows) */
        id->linger_deadline = UINT64_MAX;
        iwarp_llp_tcp_close(t, true);
        conn_update(id, now_ns);
        return;
    }
    if (t->conn_ready) {
        iwarp_llp_conn_handle_timeout(&t->conn, now_ns);
        iwarp_llp_tcp_on_writable(t, now_ns);
    }
    conn_update(id, now_ns);
}

/* ---- listening --------------------------------------------------------------------------- */

/* A connection arrived on listener lid: a hidden id runs the responder side of MPA. */
static void accept_one(struct cm_id *lid, int fd, uint64_t now)
{
    struct iwarp_ctx *ctx = lid->pub.context;
    struct cm_id *id = iwarp_api_calloc(ctx, 1, sizeof *id);
    if (!id) {
        close(fd);
        return;
    }
    id->pub = (struct iwarp_cm_id){.context = ctx,
                                   .channel = lid->pub.channel,
                                   .context_user = lid->pub.context_user,
                                   .ps = lid->pub.ps};
    id->ch = lid->ch;
    id->passive = true;
    id->listen_id = lid;
    id->linger_deadline = UINT64_MAX;
    id->conn = conn_alloc(id);
    struct iwarp_llp_conn_cfg cfg;
    responder_cfg(&cfg);
    if (!id->conn || iwarp_llp_tcp_adopt(&id->conn->tcp, fd) != 0 ||
        iwarp_llp_tcp_start(&id->conn->tcp, &cfg, id->conn->bounce, id->conn->txf, now) != 0) {
        if (!id->conn)
            close(fd);
        else
            iwarp_llp_tcp_close(&id->conn->tcp, true);
        conn_free(ctx, id->conn);
        iwarp_api_free(ctx, id);
        return;
    }
    memcpy(&id->pub.local_addr, &id->conn->tcp.local, sizeof id->pub.local_addr);
    memcpy(&id->pub.peer_addr, &id->conn->tcp.peer, sizeof id->pub.peer_addr);
    id->state = CM_MPA;
    id->next_hidden = lid->lsn->hidden;
    lid->lsn->hidden = id;
    id->ch->n_ids++;
    ctx->n_cm++;
    if (conn_watch(id) != 0) {
        hidden_free(id);
        return;
    }
    conn_update(id, now);
}

static void listen_on_io(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns)
{
    (void)events;
    struct cm_id *lid = src->user;
    for (int budget = 64; budget > 0; budget--) {
        int fd = iwarp_llp_tcp_accept(&lid->lsn->tcp);
        if (fd < 0)
            break;
        accept_one(lid, fd, now_ns);
    }
}

/* ---- public: channels -------------------------------------------------------------------- */

int iwarp_cm_create_channel(struct iwarp_ctx *ctx, struct iwarp_cm_channel **out)
{
    if (!ctx || !out)
        return IWARP_ERR_INVAL;
    struct cm_channel *ch = iwarp_api_calloc(ctx, 1, sizeof *ch);
    if (!ch)
        return IWARP_ERR_NOMEM;
    /* A semaphore eventfd: readable while events are queued, one count per event. */
    ch->pub.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (ch->pub.fd < 0) {
        iwarp_api_free(ctx, ch);
        return IWARP_ERR_IO;
    }
    ch->pub.context = ctx;
    pthread_mutex_lock(&ctx->lock);
    ctx->n_cm++;
    pthread_mutex_unlock(&ctx->lock);
    *out = &ch->pub;
    return 0;
}

int iwarp_cm_destroy_channel(struct iwarp_cm_channel *pub)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_channel *ch = cm_ch_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    if (ch->n_ids || ch->head) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_BUSY;
    }
    ctx->n_cm--;
    pthread_mutex_unlock(&ctx->lock);
    close(pub->fd);
    iwarp_api_free(ctx, ch);
    return 0;
}

/* Take the head event (lock held); NULL when none. */
static struct cm_ev *pop_event(struct cm_channel *ch)
{
    struct cm_ev *e = ch->head;
    if (!e)
        return NULL;
    ch->head = e->next;
    if (!ch->head)
        ch->tail = NULL;
    e->next = NULL;
    uint64_t v;
    ssize_t n =
        read(ch->pub.fd, &v, sizeof v); /* never blocks: iwarp_api_cm_emit() counted this one */
    (void)n;
    return e;
}

int iwarp_cm_get_event_timeout(struct iwarp_cm_channel *pub, struct iwarp_cm_event **ev,
                               int timeout_ms)
{
    if (!pub || !ev)
        return IWARP_ERR_INVAL;
    struct cm_channel *ch = cm_ch_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : iwarp_loop_now() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        pthread_mutex_lock(&ctx->lock);
        struct cm_ev *e = pop_event(ch);
        pthread_mutex_unlock(&ctx->lock);
        if (e) {
            *ev = &e->pub;
            return 0;
        }
        int wait = -1;
        if (deadline != UINT64_MAX) {
            uint64_t now = iwarp_loop_now();
            if (now >= deadline)
                return IWARP_ERR_TIMEDOUT;
            wait = (int)((deadline - now + 999999u) / 1000000u);
        }
        if (ctx->attr.progress == IWARP_PROGRESS_CALLER) {
            /* Nobody else moves data in this mode: progress while waiting. */
            iwarp_loop_run_once(&ctx->loop, wait);
        } else {
            struct pollfd pfd = {.fd = pub->fd, .events = POLLIN};
            if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
                return IWARP_ERR_IO;
        }
    }
}

int iwarp_cm_get_event(struct iwarp_cm_channel *pub, struct iwarp_cm_event **ev)
{
    if (!pub || !ev)
        return IWARP_ERR_INVAL;
    int fl = fcntl(pub->fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK)) {
        struct iwarp_ctx *ctx = pub->context;
        pthread_mutex_lock(&ctx->lock);
        if (ctx->attr.progress == IWARP_PROGRESS_CALLER)
            iwarp_loop_poll_locked(&ctx->loop);
        struct cm_ev *e = pop_event(cm_ch_of(pub));
        pthread_mutex_unlock(&ctx->lock);
        if (!e)
            return IWARP_ERR_BUSY;
        *ev = &e->pub;
        return 0;
    }
    return iwarp_cm_get_event_timeout(pub, ev, -1);
}

int iwarp_cm_ack_event(struct iwarp_cm_event *pub)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_ev *e = (struct cm_ev *)pub;
    struct cm_id *id = e->owner;
    struct iwarp_ctx *ctx = id->pub.context;
    pthread_mutex_lock(&ctx->lock);
    if (!e->busy) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_STATE;
    }
    if (pub->event == IWARP_CM_EVENT_CONNECT_REQUEST && id->listen_id)
        id->listen_id->lsn->n_req_unacked--;
    e->busy = false;
    id->n_unacked--;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/* ---- public: ids ------------------------------------------------------------------------- */

int iwarp_cm_create_id(struct iwarp_cm_channel *pub, struct iwarp_cm_id **out, void *context,
                       enum iwarp_port_space ps)
{
    if (!pub || !out)
        return IWARP_ERR_INVAL;
    if (ps != IWARP_PS_TCP && ps != IWARP_PS_SCTP)
        return IWARP_ERR_INVAL;
#ifndef IWARP_HAVE_SCTP
    if (ps == IWARP_PS_SCTP)
        return IWARP_ERR_NOTSUP; /* built without usrsctp */
#endif
    struct iwarp_ctx *ctx = pub->context;
    struct cm_id *id = iwarp_api_calloc(ctx, 1, sizeof *id);
    if (!id)
        return IWARP_ERR_NOMEM;
    id->pub =
        (struct iwarp_cm_id){.context = ctx, .channel = pub, .context_user = context, .ps = ps};
    id->ch = cm_ch_of(pub);
    id->linger_deadline = UINT64_MAX;
    pthread_mutex_lock(&ctx->lock);
    id->ch->n_ids++;
    ctx->n_cm++;
    pthread_mutex_unlock(&ctx->lock);
    *out = &id->pub;
    return 0;
}

int iwarp_cm_destroy_id(struct iwarp_cm_id *pub)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    if (id->n_unacked || pub->qp || (id->lsn && id->lsn->n_req_unacked)) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_BUSY;
    }
    if (id->sctp_lsn)
        iwarp_api_sctp_listen_close(id);
    if (id->sctp) {
        iwarp_api_sctp_abort(id, false);
        iwarp_api_sctp_free(id);
    }
    if (id->lsn) {
        iwarp_loop_del(&ctx->loop, &id->lsn->src);
        iwarp_llp_tcp_listener_close(&id->lsn->tcp);
        while (id->lsn->hidden)
            hidden_free(id->lsn->hidden);
        iwarp_api_free(ctx, id->lsn);
        id->lsn = NULL;
    }
    if (id->conn) {
        /* Still connected (or deciding): abortive, as rdma_destroy_id. After a Reject or a
         * finished exchange the socket is closed normally so queued octets still go out. */
        bool live = id->state == CM_ESTABLISHED || id->state == CM_CLOSING || id->state == CM_MPA ||
                    id->state == CM_REQUEST || id->state == CM_CONNECTING;
        if (id->conn->src.registered || id->conn->tcp.fd >= 0)
            conn_release(id, live);
        conn_free(ctx, id->conn);
        id->conn = NULL;
    }
    id->ch->n_ids--;
    ctx->n_cm--;
    pthread_mutex_unlock(&ctx->lock);
    iwarp_api_free(ctx, id);
    return 0;
}

static bool addr_ok(const struct sockaddr *sa)
{
    return sa && iwarp_llp_tcp_addrlen(sa) != 0;
}

int iwarp_cm_resolve_addr(struct iwarp_cm_id *pub, const struct sockaddr *src,
                          const struct sockaddr *dst, int timeout_ms)
{
    (void)timeout_ms; /* numeric addresses resolve at once */
    if (!pub || !addr_ok(dst) || (src && (!addr_ok(src) || src->sa_family != dst->sa_family)))
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    pthread_mutex_lock(&pub->context->lock);
    int rc = IWARP_ERR_STATE;
    if (id->state == CM_IDLE || id->state == CM_ADDR) {
        rc = iwarp_api_cm_emit(id, false, IWARP_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL, 0);
        if (rc == 0) {
            memset(&pub->peer_addr, 0, sizeof pub->peer_addr);
            memcpy(&pub->peer_addr, dst, iwarp_llp_tcp_addrlen(dst));
            if (src) {
                memset(&pub->local_addr, 0, sizeof pub->local_addr);
                memcpy(&pub->local_addr, src, iwarp_llp_tcp_addrlen(src));
            }
            id->state = CM_ADDR;
        }
    }
    pthread_mutex_unlock(&pub->context->lock);
    return rc;
}

int iwarp_cm_resolve_route(struct iwarp_cm_id *pub, int timeout_ms)
{
    (void)timeout_ms;
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    pthread_mutex_lock(&pub->context->lock);
    int rc = IWARP_ERR_STATE;
    if (id->state == CM_ADDR && pub->peer_addr.ss_family != 0) {
        rc = iwarp_api_cm_emit(id, false, IWARP_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL, 0);
        if (rc == 0)
            id->state = CM_ROUTE;
    }
    pthread_mutex_unlock(&pub->context->lock);
    return rc;
}

int iwarp_cm_bind_addr(struct iwarp_cm_id *pub, const struct sockaddr *addr)
{
    if (!pub || !addr_ok(addr))
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    pthread_mutex_lock(&pub->context->lock);
    int rc = IWARP_ERR_STATE;
    if (id->state == CM_IDLE) {
        memset(&pub->local_addr, 0, sizeof pub->local_addr);
        memcpy(&pub->local_addr, addr, iwarp_llp_tcp_addrlen(addr));
        id->state = CM_ADDR;
        rc = 0;
    }
    pthread_mutex_unlock(&pub->context->lock);
    return rc;
}

int iwarp_cm_listen(struct iwarp_cm_id *pub, int backlog)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    if (id->state != CM_ADDR || pub->local_addr.ss_family == 0) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_STATE;
    }
    struct cm_listener *l = iwarp_api_calloc(ctx, 1, sizeof *l);
    if (!l) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_NOMEM;
    }
    l->tcp.fd = -1;
    if (pub->ps == IWARP_PS_SCTP) {
        /* the listener record counts CONNECT_REQUESTs; SCTP's own state is id->sctp_lsn */
        int rc = iwarp_api_sctp_listen(id, backlog);
        if (rc == 0) {
            id->lsn = l;
            id->state = CM_LISTEN;
        } else {
            iwarp_api_free(ctx, l);
        }
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    int rc = iwarp_llp_tcp_listen(&l->tcp, (const struct sockaddr *)&pub->local_addr, backlog);
    if (rc == 0) {
        l->src = (struct iwarp_loop_src){.fd = l->tcp.fd,
                                         .events = EPOLLIN,
                                         .deadline = UINT64_MAX,
                                         .on_io = listen_on_io,
                                         .user = id,
                                         .heap_index = UINT32_MAX};
        rc = iwarp_loop_add(&ctx->loop, &l->src);
        if (rc != 0)
            iwarp_llp_tcp_listener_close(&l->tcp);
    }
    if (rc != 0) {
        iwarp_api_free(ctx, l);
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    memcpy(&pub->local_addr, &l->tcp.local, sizeof pub->local_addr); /* the bound port */
    id->lsn = l;
    id->state = CM_LISTEN;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/* ---- public: QPs ------------------------------------------------------------------------- */

int iwarp_cm_create_qp(struct iwarp_cm_id *pub, struct iwarp_pd *pd,
                       struct iwarp_qp_init_attr *attr)
{
    if (!pub || !pd || !attr)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    bool has = pub->qp != NULL;
    pthread_mutex_unlock(&ctx->lock);
    if (has)
        return IWARP_ERR_BUSY;
    struct iwarp_qp *qp;
    int rc = iwarp_create_qp(pd, attr, &qp); /* takes the lock itself */
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    pub->qp = qp;
    iwarp_api_qp(qp)->cm_id = cm_id_of(pub);
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int iwarp_api_cm_set_qp(struct iwarp_cm_id *pub, struct iwarp_qp *qp)
{
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    int rc = pub->qp ? IWARP_ERR_BUSY : 0;
    if (rc == 0) {
        pub->qp = qp;
        iwarp_api_qp(qp)->cm_id = cm_id_of(pub);
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

void iwarp_api_cm_qp_destroyed(struct iwarp_qp_impl *q)
{
    struct cm_id *id = q->cm_id;
    conn_abort(id, false); /* the connection cannot outlive its QP */
    q->llp = (struct iwarp_qp_llp){0};
    q->cm_id = NULL;
    id->pub.qp = NULL;
}

void iwarp_cm_destroy_qp(struct iwarp_cm_id *pub)
{
    if (!pub)
        return;
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    struct iwarp_qp *qp = pub->qp;
    if (!qp) {
        pthread_mutex_unlock(&ctx->lock);
        return;
    }
    struct cm_id *id = cm_id_of(pub);
    conn_abort(id, false); /* the connection cannot outlive its QP */
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    q->llp = (struct iwarp_qp_llp){0};
    q->cm_id = NULL;
    pub->qp = NULL;
    pthread_mutex_unlock(&ctx->lock);
    iwarp_destroy_qp(qp);
}

/* ---- public: connecting ------------------------------------------------------------------ */

/*
 * Active side: a new connection object, the non-blocking TCP connect and, when TCP is already
 * up, the MPA Request (lock held; id->conn is NULL). cfg and pd (cfg->neg.pd_len octets) are
 * copied. Returns 0 (a refusal at once is reported as its event), or the error of a local
 * failure (nothing is left allocated; id->state is unchanged).
 */
static int active_open(struct cm_id *id, const struct iwarp_llp_conn_cfg *cfg, const void *pd,
                       uint64_t now)
{
    struct iwarp_ctx *ctx = id->pub.context;
    id->conn = conn_alloc(id);
    if (!id->conn)
        return IWARP_ERR_NOMEM;
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    if (cfg->neg.pd_len)
        memcpy(id->conn->pd, pd, cfg->neg.pd_len);
    id->conn->cfg = *cfg;
    id->conn->cfg.neg.pd = id->conn->pd;
    const struct sockaddr *src =
        id->bind_src.ss_family ? (const struct sockaddr *)&id->bind_src : NULL;
    int rc = iwarp_llp_tcp_connect(t, (const struct sockaddr *)&id->pub.peer_addr, src);
    if (rc == IWARP_ERR_INVAL || rc == IWARP_ERR_ADDR || rc == IWARP_ERR_IO) {
        conn_free(ctx, id->conn);
        id->conn = NULL;
        return rc;
    }
    if (rc != 0) {
        /* refused or unreachable at once: reported as the event would be */
        active_failed(id, rc);
        return 0;
    }
    enum cm_state was = id->state;
    id->state = CM_CONNECTING;
    rc = conn_watch(id);
    if (rc == 0 && iwarp_llp_tcp_connected(t)) {
        rc = start_initiator(id, &id->conn->cfg, now);
        if (rc != 0)
            conn_release(id, true);
    }
    if (rc != 0) {
        iwarp_llp_tcp_close(t, true);
        conn_free(ctx, id->conn);
        id->conn = NULL;
        id->state = was;
        return rc;
    }
    conn_update(id, now);
    return 0;
}

int iwarp_cm_connect(struct iwarp_cm_id *pub, const struct iwarp_conn_param *param)
{
    if (!pub || !param)
        return IWARP_ERR_INVAL;
    /* RFC 5044 §7.1.1: Private Data Length at most 512. */
    if (param->private_data_len > IWARP_MPA_PD_MAX ||
        (param->private_data_len && !param->private_data))
        return IWARP_ERR_INVAL;
    struct iwarp_llp_conn_cfg cfg = {0};
    int rc = pub->ps == IWARP_PS_SCTP ? 0 : initiator_cfg(param, &cfg); /* MPA options */
    if (rc != 0)
        return rc;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    uint64_t now = iwarp_loop_now();
    pthread_mutex_lock(&ctx->lock);
    if ((id->state != CM_ADDR && id->state != CM_ROUTE) || pub->peer_addr.ss_family == 0 ||
        !pub->qp || id->conn) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_STATE;
    }
    if (pub->ps == IWARP_PS_SCTP) {
        /* the MPA options (peer_to_peer among them) do not apply: either side may send
         * first over SCTP (RFC 6581 §7) */
        rc = iwarp_api_sctp_connect(id, param);
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    /* RFC 6581 RTR messages are RDMAP messages: a DDP-level stream cannot send them. */
    if (param->peer_to_peer && iwarp_api_qp(pub->qp)->ddp) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_DDP_RTR;
    }
    /* Check the MPA configuration before any socket exists. */
    struct iwarp_mpa_neg probe;
    rc = iwarp_mpa_neg_init(&probe, &cfg.neg, now);
    if (rc != 0) {
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    id->markers_fallback = param->markers && param->markers_fallback;
    memcpy(&id->bind_src, &pub->local_addr, sizeof id->bind_src);
    rc = active_open(id, &cfg, param->private_data, now);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int iwarp_cm_accept(struct iwarp_cm_id *pub, const struct iwarp_conn_param *param)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    uint16_t pd_len = param ? param->private_data_len : 0;
    /* RFC 5044 §7.1.1: Private Data Length at most 512. */
    if (pd_len > IWARP_MPA_PD_MAX || (pd_len && !param->private_data))
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (id->state == CM_REQUEST && pub->qp && pub->ps == IWARP_PS_SCTP) {
        rc = iwarp_api_sctp_accept(id, param);
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    if (id->state != CM_REQUEST || !pub->qp) {
        rc = IWARP_ERR_STATE;
    } else if (id->conn->tcp.phase != IWARP_LLP_TCP_OPEN ||
               id->conn->tcp.conn.state != IWARP_LLP_CONN_REQUEST) {
        /* the initiator gave up while we were deciding */
        conn_release(id, false);
        id->state = CM_CLOSED;
        rc = id->conn->tcp.err ? id->conn->tcp.err : IWARP_ERR_CONN_RESET;
    }
    /* RFC 6581 §9.2: a peer-to-peer initiator will send an RTR, an RDMAP message a DDP-level
     * stream cannot take: reject it instead. */
    if (rc == 0 && iwarp_api_qp(pub->qp)->ddp &&
        iwarp_mpa_neg_result(&id->conn->tcp.conn.neg)->peer_p2p)
        rc = IWARP_ERR_DDP_RTR;
    if (rc != 0) {
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    struct iwarp_mpa_neg_answer ans = {
        .ird = iwarp_api_cm_ird_ord(param ? param->responder_resources : 0),
        .ord = iwarp_api_cm_ird_ord(param ? param->initiator_depth : 0),
        .pd = pd_len ? param->private_data : NULL,
        .pd_len = pd_len,
        /* the passive side's MPA choices: CRC (either side's C=1 turns it on) and markers in
         * what we receive; revision and RTR follow the Request (RFC 6581 §6, §9.2) */
        .crc = param && param->crc,
        .markers = param && param->markers,
    };
    attach_qp(id);
    rc = iwarp_llp_conn_accept(&t->conn, &ans);
    if (rc != 0) {
        struct iwarp_qp_impl *q = iwarp_api_qp(pub->qp);
        q->llp = (struct iwarp_qp_llp){0};
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    uint64_t now = iwarp_loop_now();
    iwarp_llp_tcp_on_writable(t, now); /* the MPA Reply */
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&t->conn.neg);
    struct iwarp_conn_param p;
    result_param(r, false, &p);
    /* Like siw (siw_accept -> IW_CM_EVENT_ESTABLISHED once the Reply is queued): the ULP may
     * post now; RFC 5044 §7.1.2 rule 4 holds our FPDUs until the initiator's first one. */
    id->state = CM_ESTABLISHED;
    iwarp_api_cm_emit(id, true, IWARP_CM_EVENT_ESTABLISHED, 0, &p, r->peer_pd, r->peer_pd_len);
    conn_update(id, now);
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

int iwarp_cm_reject(struct iwarp_cm_id *pub, const void *private_data, uint16_t private_data_len)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    /* RFC 5044 §7.1.1: Private Data Length at most 512. */
    if (private_data_len > IWARP_MPA_PD_MAX || (private_data_len && !private_data))
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    if (id->state != CM_REQUEST) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_STATE;
    }
    if (pub->ps == IWARP_PS_SCTP) {
        int src = iwarp_api_sctp_reject(id, private_data, private_data_len);
        pthread_mutex_unlock(&ctx->lock);
        return src;
    }
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    int rc = 0;
    if (t->phase == IWARP_LLP_TCP_OPEN && t->conn.state == IWARP_LLP_CONN_REQUEST) {
        /* RFC 5044 §7.1.2 rule 2 / RFC 6581 §9.1: R=1, our private data, IRD/ORD unset. */
        struct iwarp_mpa_neg_answer ans = {.ird = IWARP_MPA_IRD_ORD_NONE,
                                           .ord = IWARP_MPA_IRD_ORD_NONE,
                                           .pd = private_data,
                                           .pd_len = private_data_len};
        rc = iwarp_llp_conn_reject(&t->conn, &ans);
        if (rc == 0) {
            uint64_t now = iwarp_loop_now();
            iwarp_llp_tcp_shutdown(t, now); /* the Reject, then our FIN */
            id->state = CM_CLOSED;
            id->linger_deadline = now + CM_LINGER_NS;
            if (t->phase == IWARP_LLP_TCP_DONE)
                conn_release(id, false);
            else
                conn_rearm(id, now);
        }
    } else {
        conn_release(id, false);
        id->state = CM_CLOSED;
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

static void start_disconnect(struct cm_id *id, uint64_t now)
{
    id->state = CM_CLOSING;
    id->linger_deadline = now + CM_LINGER_NS;
    struct iwarp_llp_tcp *t = &id->conn->tcp;
    struct iwarp_qp_impl *q = id->pub.qp ? iwarp_api_qp(id->pub.qp) : NULL;
    if (q && q->ddp)
        iwarp_core_ddp_disconnect(q->ddp); /* RFC 5041 §6.2.1: drain, then close */
    else if (q)
        iwarp_core_qp_disconnect(&q->core); /* drain, then close */
    else
        iwarp_llp_tcp_shutdown(t, now);
    iwarp_llp_tcp_on_writable(t, now);
    conn_update(id, now);
}

int iwarp_cm_disconnect(struct iwarp_cm_id *pub)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    int rc = 0;
    if (pub->ps == IWARP_PS_SCTP)
        rc = iwarp_api_sctp_disconnect(id);
    else if (id->state == CM_ESTABLISHED)
        start_disconnect(id, iwarp_loop_now());
    else if (id->state == CM_MPA || id->state == CM_CONNECTING)
        conn_abort(id, true); /* not up yet: abortive, CONNECT_ERROR */
    else
        rc = IWARP_ERR_STATE;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
