/* Protection domains, memory regions and memory windows (seed 001 §5.2; ibv_reg_mr shapes). */
#include "api/api_internal.h"
#include "iwarp/errors.h"
#include "mem/mem_region.h"

int iwarp_alloc_pd(struct iwarp_ctx *ctx, struct iwarp_pd **out)
{
    if (!ctx || !out)
        return IWARP_ERR_INVAL;
    struct iwarp_pd *pd = iwarp_api_calloc(ctx, 1, sizeof *pd);
    if (!pd)
        return IWARP_ERR_NOMEM;
    pd->ctx = ctx;
    pthread_mutex_lock(&ctx->lock);
    pd->handle = ctx->next_handle++;
    ctx->n_pd++;
    pthread_mutex_unlock(&ctx->lock);
    *out = pd;
    return 0;
}

int iwarp_dealloc_pd(struct iwarp_pd *pd)
{
    if (!pd)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pd->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (pd->n_obj) {
        pthread_mutex_unlock(&ctx->lock);
        return IWARP_ERR_BUSY; /* ibv_dealloc_pd: MRs, MWs, QPs or SRQs remain */
    }
    ctx->n_pd--;
    pthread_mutex_unlock(&ctx->lock);
    iwarp_api_free(ctx, pd);
    return 0;
}

static const int known_access = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                                IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_ATOMIC |
                                IWARP_ACCESS_MW_BIND;

int iwarp_reg_mr(struct iwarp_pd *pd, void *addr, size_t length, int access, struct iwarp_mr **out)
{
    if (!pd || !out || (access & ~known_access) || length == 0 || !addr)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pd->ctx;
    struct iwarp_mr *mr = iwarp_api_calloc(ctx, 1, sizeof *mr);
    if (!mr)
        return IWARP_ERR_NOMEM;
    struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)addr,
                                .iova = (uint64_t)(uintptr_t)addr,
                                .length = length,
                                .access = (uint32_t)access};
    uint32_t stag = 0;
    pthread_mutex_lock(&ctx->lock);
    int rc = iwarp_mem_reg_mr(&ctx->mem, pd->handle, &r, &stag);
    if (rc == 0)
        pd->n_obj++;
    pthread_mutex_unlock(&ctx->lock);
    if (rc < 0) {
        iwarp_api_free(ctx, mr);
        return rc;
    }
    *mr = (struct iwarp_mr){.context = ctx,
                            .pd = pd,
                            .addr = addr,
                            .length = length,
                            .handle = stag,
                            .lkey = stag,
                            .rkey = stag};
    *out = mr;
    return 0;
}

int iwarp_alloc_mr(struct iwarp_pd *pd, struct iwarp_mr **out)
{
    if (!pd || !out)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pd->ctx;
    struct iwarp_mr *mr = iwarp_api_calloc(ctx, 1, sizeof *mr);
    if (!mr)
        return IWARP_ERR_NOMEM;
    uint32_t stag = 0;
    pthread_mutex_lock(&ctx->lock);
    int rc = iwarp_mem_alloc_stag(&ctx->mem, pd->handle, &stag);
    if (rc == 0)
        pd->n_obj++;
    pthread_mutex_unlock(&ctx->lock);
    if (rc < 0) {
        iwarp_api_free(ctx, mr);
        return rc;
    }
    *mr = (struct iwarp_mr){.context = ctx, .pd = pd, .handle = stag, .lkey = stag, .rkey = stag};
    *out = mr;
    return 0;
}

int iwarp_dereg_mr(struct iwarp_mr *mr)
{
    if (!mr)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = mr->context;
    pthread_mutex_lock(&ctx->lock);
    /* The STag may have been fast-registered with a new key: the table knows the index. */
    int rc = iwarp_mem_dereg_mr(&ctx->mem, mr->lkey);
    if (rc == 0)
        mr->pd->n_obj--;
    pthread_mutex_unlock(&ctx->lock);
    if (rc == 0)
        iwarp_api_free(ctx, mr);
    return rc;
}

int iwarp_alloc_mw(struct iwarp_pd *pd, enum iwarp_mw_type type, struct iwarp_mw **out)
{
    if (!pd || !out || (type != IWARP_MW_TYPE_1 && type != IWARP_MW_TYPE_2))
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pd->ctx;
    struct iwarp_mw *mw = iwarp_api_calloc(ctx, 1, sizeof *mw);
    if (!mw)
        return IWARP_ERR_NOMEM;
    uint32_t stag = 0;
    pthread_mutex_lock(&ctx->lock);
    int rc = iwarp_mem_alloc_mw(&ctx->mem, pd->handle, (uint8_t)type, &stag);
    if (rc == 0)
        pd->n_obj++;
    pthread_mutex_unlock(&ctx->lock);
    if (rc < 0) {
        iwarp_api_free(ctx, mw);
        return rc;
    }
    *mw = (struct iwarp_mw){.context = ctx, .pd = pd, .rkey = stag, .handle = stag, .type = type};
    *out = mw;
    return 0;
}

int iwarp_dealloc_mw(struct iwarp_mw *mw)
{
    if (!mw)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = mw->context;
    pthread_mutex_lock(&ctx->lock);
    int rc = iwarp_mem_dealloc_mw(&ctx->mem, mw->rkey);
    if (rc == 0)
        mw->pd->n_obj--;
    pthread_mutex_unlock(&ctx->lock);
    if (rc == 0)
        iwarp_api_free(ctx, mw);
    return rc;
}

int iwarp_bind_mw(struct iwarp_qp *qp, struct iwarp_mw *mw, const struct iwarp_mw_bind *bind)
{
    if (!qp || !mw || !bind || mw->type != IWARP_MW_TYPE_1)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = qp->context;
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    /* ibv_bind_mw: a type-1 bind rotates the window's key (ibv_inc_rkey). */
    struct iwarp_mem_bind b = {
        .mr_stag = bind->bind_info.mr ? bind->bind_info.mr->lkey : 0,
        .addr = bind->bind_info.addr,
        .length = bind->bind_info.length,
        .access = bind->bind_info.mw_access_flags,
        .new_stag = iwarp_inc_rkey(mw->rkey),
    };
    uint32_t stag = 0;
    pthread_mutex_lock(&ctx->lock);
    int rc = iwarp_mem_bind_mw(&ctx->mem, mw->rkey, qp->pd->handle, qp->qp_num, &b, &stag);
    if (rc == 0)
        mw->rkey = stag;
    bool signaled = q->core.cfg.sq_sig_all || (bind->send_flags & IWARP_SEND_SIGNALED);
    if (rc == 0 && signaled) {
        struct iwarp_wc wc = {.wr_id = bind->wr_id,
                              .status = IWARP_WC_SUCCESS,
                              .opcode = IWARP_WC_BIND_MW,
                              .qp_num = qp->qp_num};
        (void)iwarp_core_cq_push(&qp->send_cq->core, &wc, false);
    }
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
