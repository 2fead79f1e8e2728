/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The context's services every module of the API layer uses: allocation through the
 * application's hooks, logging through its log hook, and progress in caller mode. They
 * depend on no other API module, so the modules above them form no cycle.
 */
#include <stdarg.h>
#include <stdio.h>

#include "api/api_internal.h"
#include "loop/loop.h"

void *iwarp_api_calloc(struct iwarp_ctx *ctx, size_t n, size_t size)
{
    return ctx->mem_hooks.calloc_fn(n, size, ctx->mem_hooks.user);
}

void *iwarp_api_malloc(struct iwarp_ctx *ctx, size_t size)
{
    return ctx->mem_hooks.malloc_fn(size, ctx->mem_hooks.user);
}

void iwarp_api_free(struct iwarp_ctx *ctx, void *p)
{
    if (p)
        ctx->mem_hooks.free_fn(p, ctx->mem_hooks.user);
}

__attribute__((format(printf, 3, 0))) static void
vlog_attr(const struct iwarp_ctx_attr *a, enum iwarp_log_level level, const char *fmt, va_list ap)
{
    if (!a->log || level > a->log_level)
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    a->log(a->log_user, level, msg);
}

void iwarp_api_log_attr(const struct iwarp_ctx_attr *a, enum iwarp_log_level level, const char *fmt,
                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog_attr(a, level, fmt, ap);
    va_end(ap);
}

void iwarp_api_log(struct iwarp_ctx *ctx, enum iwarp_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog_attr(&ctx->attr, level, fmt, ap);
    va_end(ap);
}

void iwarp_api_unlock(struct iwarp_ctx *ctx)
{
    iwarp_loop_unlock(&ctx->loop);
}

void iwarp_api_window_open(struct iwarp_ctx *ctx, uint8_t *epoch)
{
    *epoch = ctx->io_epoch;
    ctx->io_windows[*epoch]++;
    iwarp_api_unlock(ctx);
}

void iwarp_api_window_close(struct iwarp_ctx *ctx, uint8_t epoch)
{
    pthread_mutex_lock(&ctx->lock);
    if (--ctx->io_windows[epoch] == 0)
        iwarp_api_io_idle(ctx);
}

void iwarp_api_io_wait(struct iwarp_ctx *ctx)
{
    ctx->io_waiters++;
    pthread_cond_wait(&ctx->io_idle, &ctx->lock);
    ctx->io_waiters--;
}

void iwarp_api_io_idle(struct iwarp_ctx *ctx)
{
    if (ctx->io_waiters)
        pthread_cond_broadcast(&ctx->io_idle);
}

void iwarp_api_io_grace(struct iwarp_ctx *ctx)
{
    /* Two epochs, as RCU's: windows opened from the turn on count in the other one, so the
     * wait ends however busy the connections are. Windows still open in the other epoch (from
     * before an earlier turn) began before this call too: the turn waits until there are none,
     * so that every window older than this call is in the epoch it then waits for. */
    while (ctx->io_windows[ctx->io_epoch ^ 1u])
        iwarp_api_io_wait(ctx);
    uint8_t old = ctx->io_epoch;
    ctx->io_epoch = old ^ 1u;
    while (ctx->io_windows[old])
        iwarp_api_io_wait(ctx);
}

void iwarp_api_doorbell_defer(struct iwarp_ctx *ctx, struct iwarp_api_doorbell *db)
{
    if (db->queued)
        return;
    db->queued = true;
    db->next = ctx->doorbells;
    ctx->doorbells = db;
}

void iwarp_api_doorbell_cancel(struct iwarp_ctx *ctx, struct iwarp_api_doorbell *db)
{
    if (!db->queued)
        return;
    for (struct iwarp_api_doorbell **p = &ctx->doorbells; *p; p = &(*p)->next)
        if (*p == db) {
            *p = db->next;
            break;
        }
    db->queued = false;
}

void iwarp_api_doorbells_ring(struct iwarp_ctx *ctx)
{
    /* One at a time from the head: a ring may cancel another doorbell (its connection ends). */
    struct iwarp_api_doorbell *db;
    while ((db = ctx->doorbells) != NULL) {
        ctx->doorbells = db->next;
        db->queued = false;
        db->ring(db);
    }
}
