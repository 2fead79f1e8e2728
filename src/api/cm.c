/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection manager (librdmacm shapes): event channels, ids, address "resolution"
 * (numeric, immediate), listening, connecting, accepting, rejecting and disconnecting, the
 * same for every transport. The port space of an id chooses its transport (struct
 * cm_transport, cm_internal.h: MPA over TCP in cm_tcp.c, DDP over SCTP in cm_sctp.c), which
 * moves the octets and tells the CM what happened (iwarp_cm_on_*). The CM owns the id
 * states, and decides once which event a failure is (docs/design.md, "Connection events").
 *
 * Events live in fixed slots of their id (no allocation, no loss): two for the API's own
 * (ADDR/ROUTE_RESOLVED) and three for the connection's (CONNECT_REQUEST, the outcome,
 * DISCONNECTED), which is the most one connection produces.
 *
 * Every public function takes ctx->lock; loop callbacks run with it held. Nothing blocks
 * while holding it: iwarp_cm_get_event waits on the channel fd (or, in caller-progress mode,
 * in the loop) without it.
 */
#define _GNU_SOURCE 1 /* eventfd, EFD_SEMAPHORE */
#include "iwarp/cm.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api/api_ext.h"
#include "api/api_internal.h"
#include "api/cm_internal.h"
#include "iwarp/errors.h"
#include "loop/loop.h"
#include "wire/wire.h"

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

/* id's later events go to ch (lock held). */
static void move_id(struct cm_id *id, struct cm_channel *ch)
{
    id->ch->n_ids--;
    ch->n_ids++;
    id->ch = ch;
    id->pub.channel = &ch->pub;
}

/* ---- events ------------------------------------------------------------------------------ */

/* Append e to ch's queue and count it on its fd (lock held). */
static void push_event(struct cm_channel *ch, struct cm_ev *e)
{
    e->next = NULL;
    if (ch->tail)
        ch->tail->next = e;
    else
        ch->head = e;
    ch->tail = e;
    uint64_t one = 1;
    ssize_t n = write(ch->pub.fd, &one, sizeof one); /* semaphore eventfd: one per event */
    (void)n;
    if (ch->n_waiters) /* caller-mode waiters wait in the loop, not on the fd */
        iwarp_loop_wake_locked(&ch->pub.context->loop);
}

/* "addr:port" ("[addr]:port" for IPv6) of a, in buf. */
static const char *addr_str(const struct sockaddr_storage *a, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(buf, cap, "%s:%u", host, port);
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(buf, cap, "[%s]:%u", host, port);
    } else {
        snprintf(buf, cap, "(no address)");
    }
    return buf;
}

/* The connection events go to the log (IWARP_LOG_INFO; a failure to connect at
 * IWARP_LOG_WARN), with the peer's address and the QP. */
static void log_event(struct cm_id *id, enum iwarp_cm_event_type type, int status)
{
    enum iwarp_log_level level = IWARP_LOG_INFO;
    switch (type) {
    case IWARP_CM_EVENT_CONNECT_REQUEST:
    case IWARP_CM_EVENT_ESTABLISHED:
    case IWARP_CM_EVENT_DISCONNECTED:
        break;
    case IWARP_CM_EVENT_CONNECT_ERROR:
    case IWARP_CM_EVENT_UNREACHABLE:
    case IWARP_CM_EVENT_REJECTED:
        level = IWARP_LOG_WARN;
        break;
    default:
        return;
    }
    struct iwarp_ctx *ctx = id->pub.context;
    if (!iwarp_api_log_on(ctx, level))
        return;
    char peer[INET6_ADDRSTRLEN + 16], local[INET6_ADDRSTRLEN + 16], qp[24] = "";
    if (id->pub.qp)
        snprintf(qp, sizeof qp, " QP %u", id->pub.qp->qp_num);
    iwarp_api_log(ctx, level, "cm: connection %s%s%s: peer %s, local %s%s%s",
                  type == IWARP_CM_EVENT_ESTABLISHED       ? "established"
                  : type == IWARP_CM_EVENT_DISCONNECTED    ? "disconnected"
                  : type == IWARP_CM_EVENT_REJECTED        ? "rejected"
                  : type == IWARP_CM_EVENT_CONNECT_REQUEST ? "requested"
                                                           : "failed",
                  qp,
                  type == IWARP_CM_EVENT_CONNECT_ERROR || type == IWARP_CM_EVENT_UNREACHABLE
                      ? (type == IWARP_CM_EVENT_UNREACHABLE ? " (unreachable)" : "")
                      : "",
                  addr_str(&id->pub.peer_addr, peer, sizeof peer),
                  addr_str(&id->pub.local_addr, local, sizeof local), status ? ", status " : "",
                  status ? iwarp_err_name(status) : "");
}

/* Queue an event of id on its channel (lock held). conn: one of the connection slots, else
 * an API slot. param (may be NULL) is copied, with pd_len octets of pd. Returns 0 or
 * IWARP_ERR_BUSY when every slot of that kind holds an unacknowledged event. */
static int emit(struct cm_id *id, bool conn, enum iwarp_cm_event_type type, int status,
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
        id->listen_id->n_req_unacked++;
    }
    e->owner = id;
    e->busy = true;
    id->n_unacked++;
    push_event(id->ch, e);
    log_event(id, type, status);
    return 0;
}

/* ---- what the transports report ----------------------------------------------------------- */

/* IRD/ORD from a conn_param (0xFF: the device maximum, librdmacm's RDMA_MAX_RESP_RES; more
 * than it is clipped). */
uint16_t iwarp_cm_ird_ord(uint8_t v)
{
    if (v == 0xFFu || v > IWARP_CORE_MAX_IRD)
        return (uint16_t)IWARP_CORE_MAX_IRD;
    return v;
}

/* A raw IRD/ORD (0x3FFF: not negotiated) as a conn_param octet. */
static uint8_t ird_ord_report(uint16_t v)
{
    return (uint8_t)(v > IWARP_CORE_MAX_IRD ? IWARP_CORE_MAX_IRD : v);
}

/* The event's conn_param. peer: s holds the peer's IRD/ORD, which librdmacm reports swapped
 * into our view (siw_cm_upcall: ird = the peer's ord, ord = the peer's ird). */
static void param_of(const struct cm_setup *s, bool peer, struct iwarp_conn_param *p)
{
    *p = (struct iwarp_conn_param){
        .responder_resources = ird_ord_report(peer ? s->ord : s->ird),
        .initiator_depth = ird_ord_report(peer ? s->ird : s->ord),
        .mpa_rev = s->mpa_rev,
        .peer_to_peer = s->peer_to_peer,
        .rtr_types = s->rtr_types,
        .crc = s->crc,
        .markers = s->markers,
    };
}

struct cm_id *iwarp_cm_passive_id(struct cm_id *lid)
{
    struct iwarp_ctx *ctx = lid->pub.context;
    struct cm_id *id = iwarp_api_calloc(ctx, 1, sizeof *id);
    if (!id)
        return NULL;
    id->pub = (struct iwarp_cm_id){.context = ctx,
                                   .channel = lid->pub.channel,
                                   .context_user = lid->pub.context_user,
                                   .ps = lid->pub.ps};
    id->ch = lid->ch;
    id->tp = lid->tp;
    id->passive = true;
    id->listen_id = lid;
    id->ch->n_ids++;
    ctx->n_cm++;
    return id;
}

void iwarp_cm_on_request(struct cm_id *id, const struct cm_setup *s)
{
    struct iwarp_conn_param p;
    param_of(s, true, &p);
    id->state = CM_REQUEST;
    if (id->listen_id && id->ch != id->listen_id->ch) /* the listener migrated meanwhile */
        move_id(id, id->listen_id->ch);
    emit(id, true, IWARP_CM_EVENT_CONNECT_REQUEST, 0, &p, s->pd, s->pd_len);
}

void iwarp_cm_on_established(struct cm_id *id, const struct cm_setup *s)
{
    struct iwarp_conn_param p;
    param_of(s, false, &p);
    id->state = CM_ESTABLISHED;
    emit(id, true, IWARP_CM_EVENT_ESTABLISHED, 0, &p, s->pd, s->pd_len);
}

void iwarp_cm_on_rejected(struct cm_id *id, int status, const struct cm_setup *s)
{
    struct iwarp_conn_param p;
    param_of(s, true, &p);
    id->state = CM_CLOSED;
    emit(id, true, IWARP_CM_EVENT_REJECTED, status, &p, s->pd, s->pd_len);
}

/* librdmacm over iWARP (the kernel's cma_iw_handler): refused or reset is REJECTED (over
 * SCTP, the peer's session Terminate before its Accept is that reset, RFC 5043 §6.2), a
 * timeout or an unreachable peer UNREACHABLE, anything else CONNECT_ERROR. */
void iwarp_cm_on_failed(struct cm_id *id, int status)
{
    enum iwarp_cm_event_type type = IWARP_CM_EVENT_CONNECT_ERROR;
    if (status == IWARP_ERR_CONN_REFUSED || status == IWARP_ERR_CONN_RESET ||
        status == IWARP_ERR_SESSION_TERMINATED)
        type = IWARP_CM_EVENT_REJECTED;
    else if (status == IWARP_ERR_TIMEDOUT || status == IWARP_ERR_UNREACHABLE)
        type = IWARP_CM_EVENT_UNREACHABLE;
    id->state = CM_CLOSED;
    emit(id, true, type, status, NULL, NULL, 0);
}

void iwarp_cm_on_closed(struct cm_id *id, int status)
{
    if (id->state == CM_ESTABLISHED || id->state == CM_CLOSING) {
        id->state = CM_CLOSED;
        emit(id, true, IWARP_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0);
    } else if (id->state == CM_CONNECTING && !id->passive) {
        iwarp_cm_on_failed(id, status ? status : IWARP_ERR_CONN_RESET);
    } else {
        id->state = CM_CLOSED; /* e.g. a request withdrawn before accept/reject */
    }
}

/* Before anything that may close or free id's connections: nobody moves their octets. */
static void quiesce(struct cm_id *id)
{
    if (id->tp->quiesce)
        id->tp->quiesce(id);
}

/* The application ends the connection without the graceful exchange (disconnect while
 * connecting, modify_qp_err, destroy_qp). report: DISCONNECTED when it was up; CONNECT_ERROR
 * when it was still connecting (the application gave up, nobody refused). rst: see
 * cm_transport.abort. */
static void abort_conn(struct cm_id *id, bool report, bool rst)
{
    quiesce(id);
    bool was_up = id->state == CM_ESTABLISHED || id->state == CM_CLOSING;
    bool was_connecting = id->state == CM_CONNECTING && !id->passive;
    if (!id->conn || !id->tp->abort(id, rst))
        return;
    id->state = CM_CLOSED;
    if (report && was_up)
        emit(id, true, IWARP_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0);
    else if (report && was_connecting)
        emit(id, true, IWARP_CM_EVENT_CONNECT_ERROR, IWARP_ERR_CONN_RESET, NULL, NULL, 0);
}

/* ---- the QP's hooks ---------------------------------------------------------------------- */

/* The QP's iwarp_qp_llp.retrans: its connection's counters, kept in the QP (lock held). */
static void qp_retrans(struct iwarp_qp_impl *q, uint64_t *bytes, uint64_t *segs)
{
    struct cm_id *id = q->cm_id;
    if (id && id->tp->retrans)
        id->tp->retrans(id, &q->retrans_bytes, &q->retrans_segs);
    *bytes = q->retrans_bytes;
    *segs = q->retrans_segs;
}

/* Keep the last reading of the connection's counters before the QP lets go of it. */
static void qp_retrans_keep(struct iwarp_qp_impl *q)
{
    uint64_t b, s;
    if (q->llp.retrans)
        q->llp.retrans(q, &b, &s);
}

/* iwarp_qp_llp.abort (modify_qp_err): the connection ends abortively. */
static void qp_abort(struct iwarp_qp_impl *q)
{
    struct cm_id *id = q->cm_id;
    if (id)
        abort_conn(id, true, true);
    qp_retrans_keep(q);
    q->llp = (struct iwarp_qp_llp){0}; /* the transport lets go of the QP */
}

void iwarp_cm_hook_qp(struct cm_id *id)
{
    struct iwarp_qp_impl *q = iwarp_api_qp(id->pub.qp);
    q->llp = (struct iwarp_qp_llp){
        .kick = id->tp->kick, .poll_rx = id->tp->poll_rx, .abort = qp_abort, .retrans = qp_retrans};
}

void iwarp_cm_unhook_qp(struct cm_id *id)
{
    if (id->pub.qp) {
        qp_retrans_keep(iwarp_api_qp(id->pub.qp));
        iwarp_api_qp(id->pub.qp)->llp = (struct iwarp_qp_llp){0};
    }
}

/* iwarp_destroy_qp of a QP an id owns (its cm_release): the connection cannot outlive it.
 * An id the application is disconnecting still gets its DISCONNECTED (rdma_cm does: cmtime
 * destroys the QP right after rdma_disconnect and waits for the event). An established
 * connection's socket is closed, not reset: the FPDUs it holds (a last Send just completed,
 * RFC 5040 §5.1: complete once the LLP has it) still reach the peer before the FIN, as when a
 * kernel device releases its socket; a peer that reads on sees the stream end. One still being
 * set up is reset. */
static void qp_release(struct iwarp_qp_impl *q)
{
    struct cm_id *id = q->cm_id;
    bool up = id->state == CM_ESTABLISHED || id->state == CM_CLOSING;
    abort_conn(id, id->state == CM_CLOSING, !up);
    qp_retrans_keep(q);
    q->llp = (struct iwarp_qp_llp){0};
    q->cm_id = NULL;
    q->cm_release = NULL;
    id->pub.qp = NULL;
}

/* id owns qp from now on (lock held). */
static void own_qp(struct cm_id *id, struct iwarp_qp *qp)
{
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    id->pub.qp = qp;
    q->cm_id = id;
    q->cm_release = qp_release;
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
    iwarp_api_unlock(ctx);
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
        iwarp_api_unlock(ctx);
        return IWARP_ERR_BUSY;
    }
    ctx->n_cm--;
    iwarp_api_unlock(ctx);
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
    ssize_t n = read(ch->pub.fd, &v, sizeof v); /* never blocks: emit() counted this one */
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
        if (e) {
            iwarp_api_unlock(ctx);
            *ev = &e->pub;
            return 0;
        }
        int wait = -1;
        if (deadline != UINT64_MAX) {
            uint64_t now = iwarp_loop_now();
            if (now >= deadline) {
                iwarp_api_unlock(ctx);
                return IWARP_ERR_TIMEDOUT;
            }
            wait = (int)((deadline - now + 999999u) / 1000000u);
        }
        if (ctx->attr.progress == IWARP_PROGRESS_CALLER) {
            /* Nobody else moves data in this mode: progress while waiting. Counted as a
             * waiter before the lock is let go, so an event another thread pushes meanwhile
             * (its rdma_resolve_addr, its progress) wakes this wait (push_event). */
            if (ctx->doorbells) /* batched posts must not wait with us */
                iwarp_api_doorbells_ring(ctx);
            ch->n_waiters++;
            iwarp_loop_run_once_locked(&ctx->loop, wait);
            ch->n_waiters--;
            iwarp_api_unlock(ctx);
        } else {
            iwarp_api_unlock(ctx);
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
        if (ctx->attr.progress == IWARP_PROGRESS_CALLER)
            iwarp_loop_run_once(&ctx->loop, 0);
        pthread_mutex_lock(&ctx->lock);
        struct cm_ev *e = pop_event(cm_ch_of(pub));
        iwarp_api_unlock(ctx);
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
        iwarp_api_unlock(ctx);
        return IWARP_ERR_STATE;
    }
    if (pub->event == IWARP_CM_EVENT_CONNECT_REQUEST && id->listen_id)
        id->listen_id->n_req_unacked--;
    e->busy = false;
    id->n_unacked--;
    iwarp_api_unlock(ctx);
    return 0;
}

int iwarp_cm_migrate_id(struct iwarp_cm_id *pub, struct iwarp_cm_channel *to)
{
    if (!pub || !to || to->context != pub->context)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pub->context;
    struct cm_id *id = cm_id_of(pub);
    struct cm_channel *from = id->ch, *dst = cm_ch_of(to);
    pthread_mutex_lock(&ctx->lock);
    if (from != dst) {
        /* Its queued events go along, in order; the others stay in theirs. */
        struct cm_ev **link = &from->head, *last = NULL;
        while (*link) {
            struct cm_ev *e = *link;
            /* A listener's announced requests are its events (as in librdmacm). */
            bool mine = e->owner == id || (e->pub.event == IWARP_CM_EVENT_CONNECT_REQUEST &&
                                           e->owner->listen_id == id);
            if (!mine) {
                last = e;
                link = &e->next;
                continue;
            }
            *link = e->next;
            if (e->owner != id)
                move_id(e->owner, dst);
            uint64_t v;
            ssize_t n = read(from->pub.fd, &v, sizeof v); /* counted by emit() */
            (void)n;
            push_event(dst, e);
        }
        from->tail = last;
        move_id(id, dst);
    }
    iwarp_api_unlock(ctx);
    return 0;
}

/* ---- public: ids ------------------------------------------------------------------------- */

/* The transport of a port space: the one place that tells them apart. Returns 0,
 * IWARP_ERR_INVAL (no such port space) or IWARP_ERR_NOTSUP (built without usrsctp). */
static int transport_for(const struct iwarp_ctx *ctx, enum iwarp_port_space ps,
                         const struct cm_transport **tp)
{
    switch (ps) {
    case IWARP_PS_TCP:
        *tp = ctx->cm_tcp;
        return 0;
    case IWARP_PS_SCTP:
        *tp = ctx->cm_sctp;
        return *tp ? 0 : IWARP_ERR_NOTSUP;
    }
    return IWARP_ERR_INVAL;
}

int iwarp_cm_create_id(struct iwarp_cm_channel *pub, struct iwarp_cm_id **out, void *context,
                       enum iwarp_port_space ps)
{
    if (!pub || !out)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pub->context;
    const struct cm_transport *tp;
    int rc = transport_for(ctx, ps, &tp);
    if (rc != 0)
        return rc;
    struct cm_id *id = iwarp_api_calloc(ctx, 1, sizeof *id);
    if (!id)
        return IWARP_ERR_NOMEM;
    id->pub =
        (struct iwarp_cm_id){.context = ctx, .channel = pub, .context_user = context, .ps = ps};
    id->ch = cm_ch_of(pub);
    id->tp = tp;
    pthread_mutex_lock(&ctx->lock);
    id->ch->n_ids++;
    ctx->n_cm++;
    iwarp_api_unlock(ctx);
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
    quiesce(id);
    if (id->n_unacked || pub->qp || id->n_req_unacked) {
        iwarp_api_unlock(ctx);
        return IWARP_ERR_BUSY;
    }
    if (id->lsn)
        id->tp->listen_close(id);
    if (id->conn) {
        /* Still connected (or deciding): abortive, as rdma_destroy_id. After a Reject or a
         * finished exchange the transport ends normally so queued octets still go out. */
        bool live = id->state == CM_ESTABLISHED || id->state == CM_CLOSING ||
                    id->state == CM_REQUEST || id->state == CM_CONNECTING;
        id->tp->free(id, live);
    }
    id->ch->n_ids--;
    ctx->n_cm--;
    iwarp_api_unlock(ctx);
    iwarp_api_free(ctx, id);
    return 0;
}

/* Length of an IPv4 or IPv6 socket address; 0 for other families. */
socklen_t iwarp_cm_addrlen(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return sizeof(struct sockaddr_in);
    if (sa->sa_family == AF_INET6)
        return sizeof(struct sockaddr_in6);
    return 0;
}

static bool addr_ok(const struct sockaddr *sa)
{
    return sa && iwarp_cm_addrlen(sa) != 0;
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
        rc = emit(id, false, IWARP_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL, 0);
        if (rc == 0) {
            memset(&pub->peer_addr, 0, sizeof pub->peer_addr);
            memcpy(&pub->peer_addr, dst, iwarp_cm_addrlen(dst));
            if (src) {
                memset(&pub->local_addr, 0, sizeof pub->local_addr);
                memcpy(&pub->local_addr, src, iwarp_cm_addrlen(src));
            }
            id->state = CM_ADDR;
        }
    }
    iwarp_api_unlock(pub->context);
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
        rc = emit(id, false, IWARP_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL, 0);
        if (rc == 0)
            id->state = CM_ROUTE;
    }
    iwarp_api_unlock(pub->context);
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
        memcpy(&pub->local_addr, addr, iwarp_cm_addrlen(addr));
        id->state = CM_ADDR;
        rc = 0;
    }
    iwarp_api_unlock(pub->context);
    return rc;
}

int iwarp_cm_listen(struct iwarp_cm_id *pub, int backlog)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    int rc = IWARP_ERR_STATE;
    if (id->state == CM_ADDR && pub->local_addr.ss_family != 0)
        rc = id->tp->listen(id, backlog);
    if (rc == 0)
        id->state = CM_LISTEN;
    iwarp_api_unlock(ctx);
    return rc;
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
    iwarp_api_unlock(ctx);
    if (has)
        return IWARP_ERR_BUSY;
    struct iwarp_qp *qp;
    int rc = iwarp_create_qp(pd, attr, &qp); /* takes the lock itself */
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&ctx->lock);
    own_qp(cm_id_of(pub), qp);
    iwarp_api_unlock(ctx);
    return 0;
}

int iwarp_api_cm_set_qp(struct iwarp_cm_id *pub, struct iwarp_qp *qp)
{
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    int rc = pub->qp ? IWARP_ERR_BUSY : 0;
    if (rc == 0)
        own_qp(cm_id_of(pub), qp);
    iwarp_api_unlock(ctx);
    return rc;
}

int iwarp_cm_attach_qp(struct iwarp_cm_id *pub, struct iwarp_qp *qp)
{
    if (!pub || (qp && qp->context != pub->context))
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pub->context;
    struct cm_id *id = cm_id_of(pub);
    int rc = 0;
    pthread_mutex_lock(&ctx->lock);
    if (!qp) {
        if (pub->qp)
            qp_release(iwarp_api_qp(pub->qp)); /* the QP stays; its connection does not */
    } else if (pub->qp || iwarp_api_qp(qp)->cm_id) {
        rc = IWARP_ERR_BUSY;
    } else if (id->state == CM_CONNECTING || id->state == CM_ESTABLISHED ||
               id->state == CM_CLOSING || id->state == CM_LISTEN) {
        rc = IWARP_ERR_STATE;
    } else {
        own_qp(id, qp);
    }
    iwarp_api_unlock(ctx);
    return rc;
}

void iwarp_cm_destroy_qp(struct iwarp_cm_id *pub)
{
    if (!pub)
        return;
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    struct iwarp_qp *qp = pub->qp;
    if (qp)
        qp_release(iwarp_api_qp(qp));
    iwarp_api_unlock(ctx);
    if (qp)
        iwarp_destroy_qp(qp);
}

/* ---- public: connecting ------------------------------------------------------------------ */

/* Private data: RFC 5044 §7.1.1's 512 octets at most, the larger of the two transports'
 * limits (an SCTP session checks its own, RFC 5043 §5.2.3). */
static bool pd_ok(const void *pd, uint16_t len)
{
    return len <= IWARP_MPA_PD_MAX && (len == 0 || pd);
}

int iwarp_cm_connect(struct iwarp_cm_id *pub, const struct iwarp_conn_param *param)
{
    if (!pub || !param || !pd_ok(param->private_data, param->private_data_len))
        return IWARP_ERR_INVAL;
    if (IWARP_API_EXT_IN(&pub->context->attr, iwarp_conn_param, param) != 0)
        return IWARP_ERR_NOTSUP;
    struct cm_id *id = cm_id_of(pub);
    int rc = id->tp->check_param ? id->tp->check_param(param) : 0;
    if (rc != 0)
        return rc;
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    rc = IWARP_ERR_STATE;
    enum cm_state was = id->state;
    if ((was == CM_ADDR || was == CM_ROUTE) && pub->peer_addr.ss_family != 0 && pub->qp &&
        !id->conn) {
        memcpy(&id->bind_src, &pub->local_addr, sizeof id->bind_src);
        id->state = CM_CONNECTING; /* a failure at once is reported as its event */
        rc = id->tp->connect(id, param);
        if (rc != 0)
            id->state = was;
    }
    iwarp_api_unlock(ctx);
    return rc;
}

int iwarp_cm_accept(struct iwarp_cm_id *pub, const struct iwarp_conn_param *param)
{
    if (!pub || (param && !pd_ok(param->private_data, param->private_data_len)))
        return IWARP_ERR_INVAL;
    if (param && IWARP_API_EXT_IN(&pub->context->attr, iwarp_conn_param, param) != 0)
        return IWARP_ERR_NOTSUP;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    quiesce(id);
    int rc = IWARP_ERR_STATE;
    if (id->state == CM_REQUEST && pub->qp) {
        rc = id->tp->accept(id, param);
        /* The request is gone (the initiator gave up, its process died): as the kernel's
         * rdma_accept, whose failure moves the QP to error, the WRs posted to the QP before the
         * accept complete, flushed; no transport will ever carry it. */
        if (rc != 0 && id->state == CM_CLOSED) {
            iwarp_core_eng_set_error(iwarp_api_qp(pub->qp)->eng);
            pub->qp->state = IWARP_QPS_ERR;
        }
    }
    iwarp_api_unlock(ctx);
    return rc;
}

int iwarp_cm_reject(struct iwarp_cm_id *pub, const void *private_data, uint16_t private_data_len)
{
    if (!pub || !pd_ok(private_data, private_data_len))
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    quiesce(id);
    int rc = IWARP_ERR_STATE;
    if (id->state == CM_REQUEST) {
        rc = id->tp->reject(id, private_data, private_data_len);
        id->state = CM_CLOSED;
    }
    iwarp_api_unlock(ctx);
    return rc;
}

int iwarp_cm_disconnect(struct iwarp_cm_id *pub)
{
    if (!pub)
        return IWARP_ERR_INVAL;
    struct cm_id *id = cm_id_of(pub);
    struct iwarp_ctx *ctx = pub->context;
    pthread_mutex_lock(&ctx->lock);
    quiesce(id);
    int rc = 0;
    if (id->state == CM_ESTABLISHED) {
        id->state = CM_CLOSING; /* the transport may report the end at once */
        rc = id->tp->disconnect(id);
        if (rc != 0)
            id->state = CM_ESTABLISHED;
    } else if (id->state == CM_CONNECTING) {
        abort_conn(id, true, true); /* not up yet: abortive, CONNECT_ERROR */
    } else {
        rc = IWARP_ERR_STATE;
    }
    iwarp_api_unlock(ctx);
    return rc;
}
