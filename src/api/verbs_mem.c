/* SPDX-License-Identifier: BSD-2-Clause */
/* Protection domains, memory regions and memory windows (RFC 5040 §2.1; ibv_reg_mr shapes). */
#include "api/api_ext.h"
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
    iwarp_api_unlock(ctx);
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
        iwarp_api_unlock(ctx);
        return IWARP_ERR_BUSY; /* ibv_dealloc_pd: MRs, MWs, QPs or SRQs remain */
    }
    ctx->n_pd--;
    iwarp_api_unlock(ctx);
    iwarp_api_free(ctx, pd);
    return 0;
}

static const int known_access = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                                IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_ATOMIC |
                                IWARP_ACCESS_MW_BIND;

/* What a new STag names: registered memory, nothing yet (fast registration), or a window. */
enum stag_kind { STAG_MR = 0, STAG_EMPTY = 1, STAG_MW = 2 };

/* Allocate a handle of obj_size octets and an STag of kind in pd's table (r for STAG_MR,
 * mw_type for STAG_MW). On success *obj is the zeroed handle and *stag its STag. */
static int stag_create(struct iwarp_pd *pd, enum stag_kind kind, const struct iwarp_mem_range *r,
                       uint8_t mw_type, size_t obj_size, void **obj, uint32_t *stag)
{
    struct iwarp_ctx *ctx = pd->ctx;
    void *o = iwarp_api_calloc(ctx, 1, obj_size);
    if (!o)
        return IWARP_ERR_NOMEM;
    pthread_mutex_lock(&ctx->lock);
    int rc = kind == STAG_MR      ? iwarp_mem_reg_mr(&ctx->mem, pd->handle, r, stag)
             : kind == STAG_EMPTY ? iwarp_mem_alloc_stag(&ctx->mem, pd->handle, stag)
                                  : iwarp_mem_alloc_mw(&ctx->mem, pd->handle, mw_type, stag);
    if (rc == 0)
        pd->n_obj++;
    iwarp_api_unlock(ctx);
    if (rc < 0) {
        iwarp_api_free(ctx, o);
        return rc;
    }
    *obj = o;
    return 0;
}

/* Free the STag of an MR (mr) or window and then its handle; IWARP_ERR_BUSY while in use. */
static int stag_destroy(struct iwarp_ctx *ctx, struct iwarp_pd *pd, void *obj, uint32_t stag,
                        bool mr)
{
    pthread_mutex_lock(&ctx->lock);
    int rc = mr ? iwarp_mem_dereg_mr(&ctx->mem, stag) : iwarp_mem_dealloc_mw(&ctx->mem, stag);
    if (rc == 0) {
        pd->n_obj--;
        /* a read placing into the memory may have begun before: it ends before we return */
        iwarp_api_io_grace(ctx);
    }
    iwarp_api_unlock(ctx);
    if (rc == 0)
        iwarp_api_free(ctx, obj);
    return rc;
}

int iwarp_reg_mr(struct iwarp_pd *pd, void *addr, size_t length, int access, struct iwarp_mr **out)
{
    if (!pd || !out || (access & ~known_access) || length == 0 || !addr)
        return IWARP_ERR_INVAL;
    struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)addr,
                                .iova = (uint64_t)(uintptr_t)addr,
                                .length = length,
                                .access = (uint32_t)access};
    void *obj;
    uint32_t stag = 0;
    int rc = stag_create(pd, STAG_MR, &r, 0, sizeof(struct iwarp_mr), &obj, &stag);
    if (rc < 0)
        return rc;
    struct iwarp_mr *mr = obj;
    *mr = (struct iwarp_mr){.context = pd->ctx,
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
    void *obj;
    uint32_t stag = 0;
    int rc = stag_create(pd, STAG_EMPTY, NULL, 0, sizeof(struct iwarp_mr), &obj, &stag);
    if (rc < 0)
        return rc;
    struct iwarp_mr *mr = obj;
    *mr =
        (struct iwarp_mr){.context = pd->ctx, .pd = pd, .handle = stag, .lkey = stag, .rkey = stag};
    *out = mr;
    return 0;
}

int iwarp_dereg_mr(struct iwarp_mr *mr)
{
    if (!mr)
        return IWARP_ERR_INVAL;
    /* lkey carries the current key (fast registration updates it at post time). */
    return stag_destroy(mr->context, mr->pd, mr, mr->lkey, true);
}

int iwarp_alloc_mw(struct iwarp_pd *pd, enum iwarp_mw_type type, struct iwarp_mw **out)
{
    if (!pd || !out || (type != IWARP_MW_TYPE_1 && type != IWARP_MW_TYPE_2))
        return IWARP_ERR_INVAL;
    void *obj;
    uint32_t stag = 0;
    int rc = stag_create(pd, STAG_MW, NULL, (uint8_t)type, sizeof(struct iwarp_mw), &obj, &stag);
    if (rc < 0)
        return rc;
    struct iwarp_mw *mw = obj;
    *mw =
        (struct iwarp_mw){.context = pd->ctx, .pd = pd, .rkey = stag, .handle = stag, .type = type};
    *out = mw;
    return 0;
}

int iwarp_dealloc_mw(struct iwarp_mw *mw)
{
    if (!mw)
        return IWARP_ERR_INVAL;
    return stag_destroy(mw->context, mw->pd, mw, mw->rkey, false);
}

int iwarp_bind_mw(struct iwarp_qp *qp, struct iwarp_mw *mw, const struct iwarp_mw_bind *bind)
{
    if (!qp || !mw || !bind)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = qp->context;
    int rc = IWARP_API_EXT_IN(&ctx->attr, iwarp_mw_bind, bind);
    if (rc != 0)
        return rc;
    if (mw->type != IWARP_MW_TYPE_1)
        return IWARP_ERR_INVAL;
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
    rc = iwarp_mem_bind_mw(&ctx->mem, mw->rkey, qp->pd->handle, qp->qp_num, &b, &stag);
    if (rc == 0)
        mw->rkey = stag;
    bool sig_all = q->eng->rdmap && q->eng->rdmap->cfg.sq_sig_all;
    bool signaled = sig_all || (bind->send_flags & IWARP_SEND_SIGNALED);
    if (rc == 0 && signaled) {
        struct iwarp_wc wc = {.wr_id = bind->wr_id,
                              .status = IWARP_WC_SUCCESS,
                              .opcode = IWARP_WC_BIND_MW,
                              .qp_num = qp->qp_num};
        (void)iwarp_core_cq_push(&qp->send_cq->core, &wc, false);
    }
    iwarp_api_unlock(ctx);
    return rc;
}
