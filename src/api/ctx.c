/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The context: allocator, log and rng hooks, the lock, the STag table, the progress loop and
 * the async event queue. The only place that assembles every layer (docs/design.md §2).
 */
#define _GNU_SOURCE 1 /* getrandom, eventfd */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "api/api_ext.h"
#include "api/api_internal.h"
#include "api/cm_internal.h"
#include "loop/loop.h"
#include "iwarp/errors.h"

static void *libc_malloc(size_t size, void *user)
{
    (void)user;
    return malloc(size);
}

static void *libc_calloc(size_t n, size_t size, void *user)
{
    (void)user;
    return calloc(n, size);
}

static void libc_free(void *p, void *user)
{
    (void)user;
    free(p);
}

static const struct iwarp_mem_hooks libc_hooks = {
    .malloc_fn = libc_malloc, .calloc_fn = libc_calloc, .free_fn = libc_free};

static void getrandom_rng(void *user, void *buf, size_t len)
{
    (void)user;
    uint8_t *p = buf;
    while (len) {
        ssize_t n = getrandom(p, len, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            /* getrandom cannot fail for small requests once the pool is initialised; fall back
             * to a weak source rather than leave keys predictable-by-zero. */
            for (size_t i = 0; i < len; i++)
                p[i] = (uint8_t)rand();
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

/* The STag table's random source (index order and keys). */
static uint32_t stag_rng(void *user)
{
    struct iwarp_ctx *ctx = user;
    /* drawn in batches: two words per STag's first allocation, and a system call for each
     * would cost more than the registration around it */
    if (ctx->rng_left == 0) {
        ctx->attr.rng(ctx->attr.rng_user, ctx->rng_pool, sizeof ctx->rng_pool);
        ctx->rng_left = IWARP_API_RNG_POOL;
    }
    return ctx->rng_pool[--ctx->rng_left];
}

static void *loop_alloc(void *user, size_t size)
{
    return iwarp_api_calloc(user, 1, size);
}

static void loop_dealloc(void *user, void *p)
{
    iwarp_api_free(user, p);
}

/* The loop's deferred work (lock held): completion channels whose fd must follow their queue,
 * when no other thread is at it. */
static bool take_channel_sync(void *user)
{
    struct iwarp_ctx *ctx = user;
    if (!ctx->chan_sync || ctx->chan_syncing)
        return false;
    ctx->chan_syncing = true;
    return true;
}

static void run_channel_sync(void *user)
{
    iwarp_api_channels_sync(user);
}

void iwarp_ctx_attr_default(struct iwarp_ctx_attr *attr)
{
    /* the base only: a caller built against an older header has no room for more, and the
     * fields after comp_mask take their defaults while their bits are clear */
    memset(attr, 0, IWARP_API_EXT_BASE(struct iwarp_ctx_attr));
    attr->progress = IWARP_PROGRESS_THREAD;
    attr->max_mr = 65536;
    attr->log_level = IWARP_LOG_WARN;
}

/* iwarp_ctx_attr's appended fields, in order (api_ext.h). */
static const struct iwarp_api_ext_field ctx_attr_appended[] = {
    IWARP_API_EXT_FIELD(struct iwarp_ctx_attr, tx_batch_us, IWARP_CTX_ATTR_TX_BATCH),
    IWARP_API_EXT_FIELD(struct iwarp_ctx_attr, llp_timeout_ms, IWARP_CTX_ATTR_LLP_TIMEOUT),
    IWARP_API_EXT_FIELD(struct iwarp_ctx_attr, mpa_pending_max, IWARP_CTX_ATTR_MPA_PENDING_MAX),
    IWARP_API_EXT_FIELD(struct iwarp_ctx_attr, mpa_startup_timeout_ms,
                        IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT),
};

int iwarp_ctx_create(const struct iwarp_ctx_attr *attr, struct iwarp_ctx **out)
{
    if (!out)
        return IWARP_ERR_INVAL;
    *out = NULL;
    struct iwarp_ctx_attr a;
    memset(&a, 0, sizeof a);
    if (attr)
        memcpy(&a, attr, IWARP_API_EXT_BASE(struct iwarp_ctx_attr));
    else
        iwarp_ctx_attr_default(&a);
    int rc = IWARP_API_EXT_IN(&a, iwarp_ctx_attr, &a);
    /* appended fields: their defaults, then the caller's where its bit says its struct has it */
    a.tx_batch_us = IWARP_API_TX_BATCH_US;
    a.llp_timeout_ms = IWARP_API_LLP_TIMEOUT_MS;
    a.mpa_pending_max = IWARP_API_MPA_PENDING_MAX;
    a.mpa_startup_timeout_ms = IWARP_API_MPA_STARTUP_TIMEOUT_MS;
    if (rc == 0 && attr)
        iwarp_api_ext_read(&a, attr, a.comp_mask, ctx_attr_appended,
                           sizeof ctx_attr_appended / sizeof ctx_attr_appended[0]);
    if (rc == 0 && a.mem)
        rc = IWARP_API_EXT_IN(&a, iwarp_mem_hooks, a.mem);
    if (rc != 0)
        return rc;
    if (a.progress != IWARP_PROGRESS_THREAD && a.progress != IWARP_PROGRESS_CALLER)
        return IWARP_ERR_INVAL;
    if (a.max_mr == 0)
        a.max_mr = 65536;
    if (a.max_mr < 2 || a.max_mr > IWARP_STAG_INDEX_MAX)
        return IWARP_ERR_INVAL;
    const struct iwarp_mem_hooks *h = a.mem ? a.mem : &libc_hooks;
    if (!h->malloc_fn || !h->calloc_fn || !h->free_fn)
        return IWARP_ERR_INVAL;
    if (!a.rng)
        a.rng = getrandom_rng;
    struct iwarp_ctx *ctx = h->calloc_fn(1, sizeof *ctx, h->user);
    if (!ctx)
        return IWARP_ERR_NOMEM;
    ctx->attr = a;
    iwarp_api_diag_init(ctx); /* IWARP_LOG may install the context's own log writer */
    ctx->tx_batch_ns = (uint64_t)a.tx_batch_us * 1000u;
    ctx->llp_timeout_ms = a.llp_timeout_ms;
    ctx->mpa_pending_max = a.mpa_pending_max;
    ctx->mpa_startup_timeout_ns = (uint64_t)a.mpa_startup_timeout_ms * 1000000u;
    memcpy(&ctx->mem_hooks, h, IWARP_API_EXT_BASE(struct iwarp_mem_hooks));
    ctx->attr.mem = &ctx->mem_hooks;
    ctx->async_fd = -1;
    ctx->next_handle = 1;
    ctx->cm_tcp = &iwarp_cm_tcp;
#ifdef IWARP_HAVE_SCTP
    ctx->cm_sctp = &iwarp_cm_sctp;
#endif
    rc = IWARP_ERR_NOMEM;
    ctx->mem_entries = iwarp_api_calloc(ctx, a.max_mr, sizeof *ctx->mem_entries);
    if (!ctx->mem_entries)
        goto fail;
    rc = iwarp_mem_table_init_zeroed(&ctx->mem, ctx->mem_entries, a.max_mr, stag_rng, ctx);
    if (rc < 0)
        goto fail;
    /* The packet trace: the attribute, else the environment (trace.c). */
    ctx->attr.trace_pcap = NULL; /* the caller's string is not kept */
    rc = iwarp_api_trace_open(ctx, a.trace_pcap);
    if (rc < 0)
        goto fail;
    rc = IWARP_ERR_IO;
    ctx->async_fd = eventfd(0, EFD_CLOEXEC);
    if (ctx->async_fd < 0)
        goto fail;
    if (pthread_mutex_init(&ctx->lock, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&ctx->io_idle, NULL) != 0) {
        pthread_mutex_destroy(&ctx->lock);
        goto fail;
    }
    rc = iwarp_loop_init(&ctx->loop, &ctx->lock, loop_alloc, loop_dealloc, ctx);
    if (rc < 0)
        goto fail_lock;
    ctx->loop.deferred_take = take_channel_sync;
    ctx->loop.deferred_run = run_channel_sync;
    ctx->loop.deferred_user = ctx;
    if (a.progress == IWARP_PROGRESS_THREAD) {
        rc = iwarp_loop_start_thread(&ctx->loop);
        if (rc < 0) {
            iwarp_loop_fini(&ctx->loop);
            goto fail_lock;
        }
    }
    *out = ctx;
    return 0;
fail_lock:
    pthread_cond_destroy(&ctx->io_idle);
    pthread_mutex_destroy(&ctx->lock);
fail:
    if (ctx->async_fd >= 0)
        close(ctx->async_fd);
    (void)iwarp_api_trace_close(ctx);
    iwarp_api_diag_fini(ctx, false);
    iwarp_api_free(ctx, ctx->mem_entries);
    h->free_fn(ctx, h->user);
    return rc;
}

int iwarp_ctx_destroy(struct iwarp_ctx *ctx)
{
    if (!ctx)
        return IWARP_ERR_INVAL;
    pthread_mutex_lock(&ctx->lock);
    bool busy = ctx->n_pd || ctx->n_cq || ctx->n_channel || ctx->n_cm;
    iwarp_api_unlock(ctx);
    if (busy)
        return IWARP_ERR_BUSY;
    /* the transports' context-wide state (SCTP associations still shutting down abort) */
    const struct cm_transport *tps[] = {ctx->cm_tcp, ctx->cm_sctp};
    for (size_t i = 0; i < sizeof tps / sizeof tps[0]; i++)
        if (tps[i] && tps[i]->ctx_fini)
            tps[i]->ctx_fini(ctx);
    iwarp_loop_fini(&ctx->loop);
    pthread_cond_destroy(&ctx->io_idle);
    pthread_mutex_destroy(&ctx->lock);
    close(ctx->async_fd);
    (void)iwarp_api_trace_close(ctx);
    iwarp_api_diag_fini(ctx, true); /* IWARP_STATS=1: the counters, then the log file closes */
    iwarp_api_free(ctx, ctx->mem_entries);
    struct iwarp_mem_hooks h = ctx->mem_hooks;
    h.free_fn(ctx, h.user);
    return 0;
}

int iwarp_ctx_progress(struct iwarp_ctx *ctx, int timeout_ms)
{
    if (!ctx)
        return IWARP_ERR_INVAL;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->doorbells) /* a progress pass sends what waits in a transmit batch */
        iwarp_api_doorbells_ring(ctx);
    /* As iwarp_get_cq_event: the calling thread makes the progress it waits for, and a progress
     * thread stands aside meanwhile, so that readiness wakes this thread, not that one. */
    iwarp_loop_help_locked(&ctx->loop, timeout_ms);
    iwarp_api_unlock(ctx);
    return 0;
}

int iwarp_query_device_sized(struct iwarp_ctx *ctx, struct iwarp_device_attr *attr,
                             size_t attr_size)
{
    if (!ctx || !attr || !IWARP_API_EXT_ROOM(struct iwarp_device_attr, attr_size))
        return IWARP_ERR_INVAL;
    struct iwarp_device_attr a = {
        .max_qp_wr = IWARP_CORE_MAX_WR,
        .max_sge = IWARP_CORE_MAX_SGE,
        .max_sge_rd = IWARP_CORE_MAX_SGE_RD,
        .max_cqe = IWARP_API_MAX_CQE,
        .max_mr = ctx->attr.max_mr - 1u,
        .max_qp_rd_atom = IWARP_CORE_MAX_IRD,
        .max_qp_init_rd_atom = IWARP_CORE_MAX_ORD,
        .max_srq_wr = IWARP_CORE_MAX_WR,
        .max_inline_data = IWARP_CORE_MAX_INLINE,
        .comp_mask = 0, /* the appended fields that fit, below */
        .rdmap_ext_cap = IWARP_CORE_RDMAP_EXT,
        .atomic_cap = IWARP_ATOMIC_HCA, /* core/core_atomic.h */
        .max_qp_atomic_in = IWARP_CORE_MAX_IRD,
        .max_qp_atomic_out = IWARP_CORE_MAX_ORD,
    };
    /* Each appended field that fits whole in the caller's struct, with its bit (api_ext.h). */
    static const struct iwarp_api_ext_field appended[] = {
        IWARP_API_EXT_FIELD(struct iwarp_device_attr, rdmap_ext_cap, IWARP_DEVICE_ATTR_RDMAP_EXT),
        IWARP_API_EXT_FIELD(struct iwarp_device_attr, atomic_cap, IWARP_DEVICE_ATTR_ATOMIC_CAP),
        IWARP_API_EXT_FIELDS(struct iwarp_device_attr, max_qp_atomic_in, max_qp_atomic_out,
                             IWARP_DEVICE_ATTR_MAX_ATOMIC),
    };
    size_t n = iwarp_api_ext_fit(IWARP_API_EXT_BASE(struct iwarp_device_attr), attr_size, appended,
                                 sizeof appended / sizeof appended[0], &a.comp_mask);
    memcpy(attr, &a, n);
    return 0;
}
