/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The context's asynchronous event queue (ibv_get_async_event shapes): a ring the engines'
 * event hooks push into under the lock, and an eventfd readable while it holds events.
 */
#include <sys/eventfd.h>

#include <string.h>

#include "api/api_ext.h"
#include "api/api_internal.h"
#include "iwarp/errors.h"
#include "util/ring.h"

void iwarp_api_async_push_locked(struct iwarp_ctx *ctx, const struct iwarp_async_event *ev)
{
    if (ctx->async_count == IWARP_API_ASYNC_MAX) {
        ctx->async_lost++;
        iwarp_api_log(ctx, IWARP_LOG_ERROR, "async event queue full: %s lost",
                      iwarp_event_type_str(ev->event_type));
        return;
    }
    ctx->async_ring[iwarp_ring_slot(ctx->async_head, ctx->async_count, IWARP_API_ASYNC_MAX)] = *ev;
    ctx->async_count++;
    if (ctx->async_count == 1)
        (void)eventfd_write(ctx->async_fd, 1);
}

/* Whether an event of this type names a QP (element.qp). */
static bool names_qp(enum iwarp_event_type t)
{
    return (t >= IWARP_EVENT_QP_FATAL && t <= IWARP_EVENT_PATH_MIG_ERR) ||
           t == IWARP_EVENT_QP_LAST_WQE_REACHED;
}

void iwarp_api_async_drop_qp_locked(struct iwarp_ctx *ctx, const struct iwarp_qp *qp)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < ctx->async_count; i++) {
        struct iwarp_async_event ev =
            ctx->async_ring[iwarp_ring_slot(ctx->async_head, i, IWARP_API_ASYNC_MAX)];
        if (names_qp(ev.event_type) && ev.element.qp == qp)
            continue;
        ctx->async_ring[iwarp_ring_slot(ctx->async_head, kept++, IWARP_API_ASYNC_MAX)] = ev;
    }
    if (ctx->async_count && kept == 0) {
        eventfd_t v;
        (void)eventfd_read(ctx->async_fd, &v); /* counter > 0: does not block */
    }
    ctx->async_count = kept;
}

int iwarp_async_fd(struct iwarp_ctx *ctx)
{
    return ctx ? ctx->async_fd : IWARP_ERR_INVAL;
}

int iwarp_get_async_event_sized(struct iwarp_ctx *ctx, struct iwarp_async_event *event,
                                size_t event_size)
{
    if (!ctx || !event || !IWARP_API_EXT_ROOM(struct iwarp_async_event, event_size))
        return IWARP_ERR_INVAL;
    pthread_mutex_lock(&ctx->lock);
    int rc = IWARP_ERR_BUSY;
    if (ctx->async_count) {
        struct iwarp_async_event ev = ctx->async_ring[ctx->async_head];
        ev.comp_mask = 0; /* no extension fields yet */
        memcpy(event, &ev, IWARP_API_EXT_BASE(struct iwarp_async_event));
        ctx->async_head = iwarp_ring_advance(ctx->async_head, 1, IWARP_API_ASYNC_MAX);
        ctx->async_count--;
        if (ctx->async_count == 0) {
            eventfd_t v;
            (void)eventfd_read(ctx->async_fd, &v); /* counter > 0: does not block */
        }
        rc = 0;
    }
    iwarp_api_unlock(ctx);
    return rc;
}

void iwarp_ack_async_event(struct iwarp_async_event *event)
{
    (void)event; /* events carry no reference that needs releasing */
}

const char *iwarp_event_type_str(enum iwarp_event_type type)
{
    static const char *const names[] = {
        [IWARP_EVENT_CQ_ERR] = "CQ error",
        [IWARP_EVENT_QP_FATAL] = "local work queue catastrophic error",
        [IWARP_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
        [IWARP_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
        [IWARP_EVENT_COMM_EST] = "communication established",
        [IWARP_EVENT_SQ_DRAINED] = "send queue drained",
        [IWARP_EVENT_PATH_MIG] = "path migrated",
        [IWARP_EVENT_PATH_MIG_ERR] = "path migration request error",
        [IWARP_EVENT_DEVICE_FATAL] = "local catastrophic error",
        [IWARP_EVENT_PORT_ACTIVE] = "port active",
        [IWARP_EVENT_PORT_ERR] = "port error",
        [IWARP_EVENT_LID_CHANGE] = "LID change",
        [IWARP_EVENT_PKEY_CHANGE] = "P_Key change",
        [IWARP_EVENT_SM_CHANGE] = "SM change",
        [IWARP_EVENT_SRQ_ERR] = "SRQ catastrophic error",
        [IWARP_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
        [IWARP_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
        [IWARP_EVENT_CLIENT_REREGISTER] = "client reregistration",
        [IWARP_EVENT_GID_CHANGE] = "GID table change",
        [IWARP_EVENT_WQ_FATAL] = "WQ fatal",
    };
    if ((unsigned)type < sizeof names / sizeof names[0] && names[type])
        return names[type];
    return "unknown";
}
