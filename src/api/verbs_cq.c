/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion queues and completion channels (ibv_create_cq shapes). */
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "iwarp/errors.h"

static struct iwarp_comp_channel_impl *chan_impl(struct iwarp_comp_channel *ch)
{
    return (struct iwarp_comp_channel_impl *)ch;
}

/*
 * The channel's fd is readable exactly while its queue of fired CQs is not empty. The eventfd
 * is written or read without the context lock (docs/design.md, "Locking and progress"): a
 * change of the queue's emptiness queues the channel on ctx->chan_sync (lock held), and the
 * thread that then lets go of the lock makes the fd follow (iwarp_api_channels_sync). One
 * thread at a time does that for a context, so the calls on one fd keep their order, and each
 * looks at the queue as it is when its turn comes.
 */
static void chan_changed(struct iwarp_ctx *ctx, struct iwarp_comp_channel_impl *ch)
{
    if (ch->sync_queued)
        return;
    ch->sync_queued = true;
    ch->next_sync = ctx->chan_sync;
    ctx->chan_sync = ch;
}

void iwarp_api_channels_sync(struct iwarp_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    struct iwarp_comp_channel_impl *ch;
    while ((ch = ctx->chan_sync) != NULL) {
        ctx->chan_sync = ch->next_sync;
        ch->sync_queued = false;
        bool want = ch->fired_head != NULL;
        if (want == ch->fd_readable)
            continue;
        ch->fd_readable = want;
        ch->sync_busy = true;
        iwarp_loop_unlock(&ctx->loop);
        eventfd_t v;
        if (want)
            (void)eventfd_write(ch->pub.fd, 1);
        else
            (void)eventfd_read(ch->pub.fd, &v); /* this thread wrote it: does not block */
        pthread_mutex_lock(&ctx->lock);
        ch->sync_busy = false;
        iwarp_api_io_idle(ctx); /* iwarp_destroy_comp_channel may wait for it */
    }
    ctx->chan_syncing = false;
    iwarp_loop_unlock(&ctx->loop);
}

int iwarp_create_comp_channel(struct iwarp_ctx *ctx, struct iwarp_comp_channel **out)
{
    if (!ctx || !out)
        return IWARP_ERR_INVAL;
    struct iwarp_comp_channel_impl *ch = iwarp_api_calloc(ctx, 1, sizeof *ch);
    if (!ch)
        return IWARP_ERR_NOMEM;
    ch->pub.context = ctx;
    ch->pub.fd = eventfd(0, EFD_CLOEXEC);
    if (ch->pub.fd < 0) {
        iwarp_api_free(ctx, ch);
        return IWARP_ERR_IO;
    }
    pthread_mutex_lock(&ctx->lock);
    ctx->n_channel++;
    iwarp_api_unlock(ctx);
    *out = &ch->pub;
    return 0;
}

int iwarp_destroy_comp_channel(struct iwarp_comp_channel *channel)
{
    if (!channel)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = channel->context;
    struct iwarp_comp_channel_impl *ch = chan_impl(channel);
    pthread_mutex_lock(&ctx->lock);
    if (ch->n_cq) {
        iwarp_api_unlock(ctx);
        return IWARP_ERR_BUSY; /* ibv_destroy_comp_channel: CQs still use it */
    }
    /* the fd may still be queued to follow the queue, or being written: not any more */
    for (struct iwarp_comp_channel_impl **p = &ctx->chan_sync; *p; p = &(*p)->next_sync)
        if (*p == ch) {
            *p = ch->next_sync;
            break;
        }
    while (ch->sync_busy)
        iwarp_api_io_wait(ctx);
    ctx->n_channel--;
    iwarp_api_unlock(ctx);
    close(ch->pub.fd);
    iwarp_api_free(ctx, ch);
    return 0;
}

/* The core's hook (lock held): an arm fired, or the CQ overran. */
static void cq_notify(void *user, struct iwarp_core_cq *core, enum iwarp_core_cq_why why)
{
    struct iwarp_cq *cq = user;
    (void)core;
    bool overrun = why == IWARP_CORE_CQ_OVERRUN;
    if (why == IWARP_CORE_CQ_WAKE) {
        if (cq->waiting) /* iwarp_cq_wait waits in the loop */
            iwarp_loop_wake_locked(&cq->ctx->loop);
        return;
    }
    if (overrun) {
        struct iwarp_async_event ev = {.element.cq = cq, .event_type = IWARP_EVENT_CQ_ERR};
        iwarp_api_async_push_locked(cq->ctx, &ev);
        iwarp_api_log(cq->ctx, IWARP_LOG_ERROR, "CQ overrun: a completion was lost");
    }
    if (overrun && cq->waiting)
        iwarp_loop_wake_locked(&cq->ctx->loop);
    if (cq->channel && !cq->event_pending && !overrun) {
        struct iwarp_comp_channel_impl *ch = chan_impl(cq->channel);
        cq->event_pending = true;
        cq->next_fired = NULL;
        if (ch->fired_tail)
            ch->fired_tail->next_fired = cq;
        else
            ch->fired_head = cq;
        ch->fired_tail = cq;
        chan_changed(cq->ctx, ch);
        if (ch->n_waiters) /* they wait in the loop, not on the fd */
            iwarp_loop_wake_locked(&cq->ctx->loop);
    }
}

int iwarp_create_cq(struct iwarp_ctx *ctx, int cqe, void *cq_context,
                    struct iwarp_comp_channel *channel, int comp_vector, struct iwarp_cq **out)
{
    (void)comp_vector;
    if (!ctx || !out || cqe <= 0 || (uint32_t)cqe > IWARP_API_MAX_CQE ||
        (channel && channel->context != ctx))
        return IWARP_ERR_INVAL;
    struct iwarp_cq *cq = iwarp_api_calloc(ctx, 1, sizeof *cq);
    if (!cq)
        return IWARP_ERR_NOMEM;
    cq->ring = iwarp_api_calloc(ctx, (size_t)cqe, sizeof *cq->ring);
    if (!cq->ring) {
        iwarp_api_free(ctx, cq);
        return IWARP_ERR_NOMEM;
    }
    cq->ctx = ctx;
    cq->channel = channel;
    cq->cq_context = cq_context;
    (void)iwarp_core_cq_init(&cq->core, cq->ring, (uint32_t)cqe, cq_notify, cq);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_cq++;
    if (channel)
        chan_impl(channel)->n_cq++;
    iwarp_api_unlock(ctx);
    *out = cq;
    return 0;
}

static void unlink_fired(struct iwarp_cq *cq)
{
    struct iwarp_comp_channel_impl *ch = chan_impl(cq->channel);
    struct iwarp_cq **pp = &ch->fired_head, *prev = NULL;
    while (*pp && *pp != cq) {
        prev = *pp;
        pp = &(*pp)->next_fired;
    }
    if (*pp) {
        *pp = cq->next_fired;
        if (ch->fired_tail == cq)
            ch->fired_tail = prev;
        if (!ch->fired_head) /* nothing left to report: the fd must stop being readable */
            chan_changed(cq->ctx, ch);
    }
    cq->event_pending = false;
}

int iwarp_destroy_cq(struct iwarp_cq *cq)
{
    if (!cq)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = cq->ctx;
    pthread_mutex_lock(&ctx->lock);
    /* ibv_destroy_cq: every event delivered must be acknowledged first. */
    if (cq->n_users || cq->events_delivered != cq->events_acked) {
        iwarp_api_unlock(ctx);
        return IWARP_ERR_BUSY;
    }
    if (cq->channel) {
        if (cq->event_pending)
            unlink_fired(cq);
        chan_impl(cq->channel)->n_cq--;
    }
    ctx->n_cq--;
    iwarp_api_unlock(ctx);
    iwarp_api_free(ctx, cq->ring);
    iwarp_api_free(ctx, cq);
    return 0;
}

void iwarp_api_cq_use(struct iwarp_cq *cq, struct iwarp_qp_impl *q)
{
    cq->sole_qp = cq->n_users == 0 || cq->sole_qp == q ? q : NULL;
    cq->n_users++;
}

void iwarp_api_cq_unuse(struct iwarp_cq *cq)
{
    cq->n_users--;
    cq->sole_qp = NULL; /* which QP is left is not known: polls go through epoll again */
}

/* A busy poll that reads the sole QP's connection directly runs the loop instead, for the
 * context's other sockets, its listeners and its timers, once BUSY_LOOP_PASS_NS have passed
 * since the CQ's last such pass. By time, not by count: a data arrival that meets a pass
 * (an epoll_wait, as long as the read) waits for it, so the passes' share of the polls is
 * added to a busy poll's latency; one in every 100 µs leaves it at about 1% (docs/design.md,
 * "How often a busy poll runs the loop"). */
#define BUSY_LOOP_PASS_NS 100000u

int iwarp_poll_cq(struct iwarp_cq *cq, int num_entries, struct iwarp_wc *wc)
{
    if (!cq || num_entries < 0 || (num_entries && !wc))
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = cq->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->doorbells) /* posts waiting in a batch leave now: their completions are wanted */
        iwarp_api_doorbells_ring(ctx);
    if (cq->core.count < (uint32_t)num_entries && ctx->attr.progress == IWARP_PROGRESS_CALLER) {
        /* Nobody else moves data in this mode. A CQ of one connected QP reads that QP's socket
         * itself: asking epoll_wait first costs more than the read (docs/design.md). */
        struct iwarp_qp_impl *q = cq->sole_qp;
        uint64_t now = q && q->llp.poll_rx ? iwarp_loop_now() : 0; /* 0: no direct read */
        if (now != 0 && now - cq->loop_pass_ns < BUSY_LOOP_PASS_NS) {
            q->llp.poll_rx(q, now);
        } else { /* epoll_wait runs without the lock; the socket polled here may stay out of it */
            cq->loop_pass_ns = now;
            iwarp_loop_poll_locked(&ctx->loop);
        }
    }
    int n = (int)iwarp_core_cq_poll(&cq->core, wc, (uint32_t)num_entries);
    iwarp_api_unlock(ctx);
    return n;
}

int iwarp_req_notify_cq(struct iwarp_cq *cq, int solicited_only)
{
    if (!cq)
        return IWARP_ERR_INVAL;
    pthread_mutex_lock(&cq->ctx->lock);
    iwarp_core_cq_arm(&cq->core, solicited_only != 0);
    iwarp_api_unlock(cq->ctx);
    return 0;
}

/* Take the channel's next event (lock held); false when none has fired. */
static bool take_event(struct iwarp_comp_channel_impl *ch, struct iwarp_cq **cq_out,
                       void **cq_context)
{
    struct iwarp_cq *cq = ch->fired_head;
    if (!cq)
        return false;
    ch->fired_head = cq->next_fired;
    if (!ch->fired_head) {
        ch->fired_tail = NULL;
        chan_changed(cq->ctx, ch);
    }
    cq->event_pending = false;
    cq->events_delivered++;
    *cq_out = cq;
    if (cq_context)
        *cq_context = cq->cq_context;
    return true;
}

/* Milliseconds from now to deadline (UINT64_MAX: none), rounded up, at most 1 s. */
static int wait_ms(uint64_t deadline)
{
    uint64_t now = iwarp_loop_now();
    if (deadline <= now)
        return 0;
    uint64_t ms = deadline == UINT64_MAX ? 1000 : (deadline - now + 999999u) / 1000000u;
    return ms > 1000 ? 1000 : (int)ms;
}

/*
 * The waiting thread makes the progress itself, in either mode (iwarp_loop_help_locked: with a
 * progress thread, that thread stands aside meanwhile), so the data that produces its event
 * wakes it directly instead of waking the progress thread, which would then wake it through
 * the channel's fd. An event another thread fires wakes it through the loop's wake fd
 * (cq_notify: ch->n_waiters).
 */
int iwarp_get_cq_event_timeout(struct iwarp_comp_channel *channel, struct iwarp_cq **cq_out,
                               void **cq_context, int timeout_ms)
{
    if (!channel || !cq_out)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = channel->context;
    struct iwarp_comp_channel_impl *ch = chan_impl(channel);
    uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : iwarp_loop_now() + (uint64_t)timeout_ms * 1000000u;
    pthread_mutex_lock(&ctx->lock);
    for (bool first = true;; first = false) {
        if (take_event(ch, cq_out, cq_context)) {
            iwarp_api_unlock(ctx);
            return 0;
        }
        int ms = wait_ms(deadline);
        if (ms == 0 && !first) { /* a zero timeout still makes one pass of progress */
            iwarp_api_unlock(ctx);
            return IWARP_ERR_TIMEDOUT;
        }
        if (ctx->doorbells) /* about to wait: batched posts must not wait with us */
            iwarp_api_doorbells_ring(ctx);
        /* looked and waits in one hold of the lock: an event fired meanwhile wakes it */
        ch->n_waiters++;
        iwarp_loop_help_locked(&ctx->loop, ms);
        ch->n_waiters--;
    }
}

int iwarp_get_cq_event(struct iwarp_comp_channel *channel, struct iwarp_cq **cq_out,
                       void **cq_context)
{
    if (!channel || !cq_out)
        return IWARP_ERR_INVAL;
    int fl = fcntl(channel->fd, F_GETFL);
    bool nonblock = fl >= 0 && (fl & O_NONBLOCK);
    int rc = iwarp_get_cq_event_timeout(channel, cq_out, cq_context, nonblock ? 0 : -1);
    return rc == IWARP_ERR_TIMEDOUT ? IWARP_ERR_BUSY : rc;
}

void iwarp_ack_cq_events(struct iwarp_cq *cq, unsigned int nevents)
{
    if (!cq)
        return;
    pthread_mutex_lock(&cq->ctx->lock);
    cq->events_acked += nevents;
    iwarp_api_unlock(cq->ctx);
}

int iwarp_cq_wait(struct iwarp_cq *cq, int timeout_ms)
{
    if (!cq)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = cq->ctx;
    uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : iwarp_loop_now() + (uint64_t)timeout_ms * 1000000u;
    pthread_mutex_lock(&ctx->lock);
    for (;;) {
        if (cq->core.count)
            break;
        int ms = wait_ms(deadline);
        if (ms == 0)
            break;
        cq->waiting = true;
        cq->core.wake = true; /* not an arm: no channel event for the application */
        if (ctx->doorbells)   /* about to wait: batched posts must not wait with us */
            iwarp_api_doorbells_ring(ctx);
        /* as iwarp_get_cq_event: this thread makes the progress it waits for, and looks and
         * waits in one hold of the lock */
        iwarp_loop_help_locked(&ctx->loop, ms);
    }
    cq->waiting = false;
    int rc = cq->core.count ? 0 : IWARP_ERR_TIMEDOUT;
    iwarp_api_unlock(ctx);
    return rc;
}

const char *iwarp_wc_status_str(enum iwarp_wc_status status)
{
    /* The strings of ibv_wc_status_str, so logs read the same. */
    static const char *const names[] = {
        [IWARP_WC_SUCCESS] = "success",
        [IWARP_WC_LOC_LEN_ERR] = "local length error",
        [IWARP_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IWARP_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IWARP_WC_LOC_PROT_ERR] = "local protection error",
        [IWARP_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IWARP_WC_MW_BIND_ERR] = "memory management operation error",
        [IWARP_WC_BAD_RESP_ERR] = "bad response error",
        [IWARP_WC_LOC_ACCESS_ERR] = "local access error",
        [IWARP_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IWARP_WC_REM_ACCESS_ERR] = "remote access error",
        [IWARP_WC_REM_OP_ERR] = "remote operation error",
        [IWARP_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IWARP_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IWARP_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IWARP_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IWARP_WC_REM_ABORT_ERR] = "aborted error",
        [IWARP_WC_INV_EECN_ERR] = "invalid EE context number",
        [IWARP_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IWARP_WC_FATAL_ERR] = "fatal error",
        [IWARP_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IWARP_WC_GENERAL_ERR] = "general error",
    };
    if ((unsigned)status < sizeof names / sizeof names[0] && names[status])
        return names[status];
    return "unknown";
}
