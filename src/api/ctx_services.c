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
