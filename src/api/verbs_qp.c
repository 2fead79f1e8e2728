/* SPDX-License-Identifier: BSD-2-Clause */
/* Queue pairs, shared receive queues and posting (ibv_create_qp / ibv_post_send shapes). */
#include <string.h>

#include "api/api_ext.h"
#include "api/api_internal.h"
#include "iwarp/errors.h"

/* The core's async event hook (lock held): queue the verbs event. */
static void qp_event(void *user, struct iwarp_core_qp *core, int event_type, uint32_t cause,
                     bool from_peer)
{
    struct iwarp_qp_impl *q = user;
    struct iwarp_async_event ev = {.event_type = (enum iwarp_event_type)event_type,
                                   .term_cause = cause,
                                   .term_from_peer = from_peer};
    if (event_type == IWARP_EVENT_SRQ_LIMIT_REACHED)
        ev.element.srq = q->pub.srq;
    else
        ev.element.qp = &q->pub;
    iwarp_api_async_push_locked(q->pub.context, &ev);
    if (event_type == IWARP_EVENT_SRQ_LIMIT_REACHED ||
        event_type == IWARP_EVENT_QP_LAST_WQE_REACHED ||
        !iwarp_api_log_on(q->pub.context, IWARP_LOG_INFO))
        return;
    char why[224];
    /* a Terminate sent or received leaves the stream TERMINATING; a lost LLP or a local
     * failure does not, and has no cause */
    if (core->stream.state == IWARP_CORE_STREAM_TERMINATING)
        iwarp_api_log(q->pub.context, IWARP_LOG_INFO, "QP %u: Terminate %s: %s; %s", q->pub.qp_num,
                      from_peer ? "received" : "sent", iwarp_api_cause_str(cause, why, sizeof why),
                      iwarp_event_type_str(ev.event_type));
    else
        iwarp_api_log(q->pub.context, IWARP_LOG_INFO, "QP %u: %s", q->pub.qp_num,
                      iwarp_event_type_str(ev.event_type));
}

/* A verbs QP: the common part, its RDMAP engine and the memory the engine borrows. */
struct rdmap_qp {
    struct iwarp_qp_impl impl; /* first */
    struct iwarp_core_qp core;
    struct iwarp_core_qp_mem mem;
};

static void free_qp_mem(struct iwarp_ctx *ctx, struct rdmap_qp *r)
{
    iwarp_api_free(ctx, r->mem.sq);
    iwarp_api_free(ctx, r->mem.rq);
    iwarp_api_free(ctx, r->mem.rq_lens);
    iwarp_api_free(ctx, r->mem.orq);
    iwarp_api_free(ctx, r->mem.irq);
    iwarp_api_free(ctx, r->mem.irq_lens);
    iwarp_api_free(ctx, r);
}

/* The QP's free hook: whatever never completed lets go of its MRs, then the memory goes. */
static void rdmap_qp_free(struct iwarp_qp_impl *q)
{
    struct rdmap_qp *r = (struct rdmap_qp *)q;
    iwarp_core_eng_fini(&r->core.eng);
    free_qp_mem(q->pub.context, r);
}

int iwarp_create_qp(struct iwarp_pd *pd, struct iwarp_qp_init_attr *attr, struct iwarp_qp **out)
{
    if (!pd || !attr || !out)
        return IWARP_ERR_INVAL;
    int rc = IWARP_API_EXT_IN(&pd->ctx->attr, iwarp_qp_init_attr, attr);
    if (rc != 0)
        return rc;
    if (!attr->send_cq || !attr->recv_cq || attr->qp_type != IWARP_QPT_RC ||
        attr->send_cq->ctx != pd->ctx || attr->recv_cq->ctx != pd->ctx ||
        (attr->srq && attr->srq->pd != pd))
        return IWARP_ERR_INVAL;
    uint32_t rdmap_ext = (attr->comp_mask & IWARP_QP_INIT_ATTR_RDMAP_EXT) ? attr->rdmap_ext : 0;
    if (rdmap_ext & ~IWARP_CORE_RDMAP_EXT)
        return IWARP_ERR_INVAL;
    struct iwarp_qp_cap cap = attr->cap;
    if (cap.max_send_wr == 0 || cap.max_send_wr > IWARP_CORE_MAX_WR ||
        cap.max_recv_wr > IWARP_CORE_MAX_WR || cap.max_send_sge > IWARP_CORE_MAX_SGE ||
        cap.max_recv_sge > IWARP_CORE_MAX_SGE || cap.max_inline_data > IWARP_CORE_MAX_INLINE)
        return IWARP_ERR_INVAL;
    if (cap.max_send_sge == 0)
        cap.max_send_sge = 1;
    if (cap.max_recv_sge == 0)
        cap.max_recv_sge = 1;
    if (attr->srq)
        cap.max_recv_wr = 0;
    else if (cap.max_recv_wr == 0)
        cap.max_recv_wr = 1;
    struct iwarp_ctx *ctx = pd->ctx;
    struct rdmap_qp *r = iwarp_api_calloc(ctx, 1, sizeof *r);
    if (!r)
        return IWARP_ERR_NOMEM;
    struct iwarp_qp_impl *q = &r->impl;
    struct iwarp_core_qp_mem *m = &r->mem;
    uint32_t rq_lens = attr->srq ? IWARP_CORE_SRQ_WINDOW : cap.max_recv_wr;
    m->sq = iwarp_api_calloc(ctx, cap.max_send_wr, sizeof *m->sq);
    m->rq = cap.max_recv_wr ? iwarp_api_calloc(ctx, cap.max_recv_wr, sizeof *m->rq) : NULL;
    m->rq_lens = iwarp_api_calloc(ctx, rq_lens, sizeof *m->rq_lens);
    m->orq = iwarp_api_calloc(ctx, IWARP_CORE_MAX_ORD, sizeof *m->orq);
    m->irq = iwarp_api_calloc(ctx, IWARP_CORE_MAX_IRD, sizeof *m->irq);
    m->irq_lens = iwarp_api_calloc(ctx, IWARP_CORE_MAX_IRD, sizeof *m->irq_lens);
    if (!m->sq || (cap.max_recv_wr && !m->rq) || !m->rq_lens || !m->orq || !m->irq ||
        !m->irq_lens) {
        free_qp_mem(ctx, r);
        return IWARP_ERR_NOMEM;
    }
    pthread_mutex_lock(&ctx->lock);
    uint32_t qp_num = ctx->next_handle++;
    struct iwarp_core_qp_cfg cfg = {
        .qp_num = qp_num,
        .pd = pd->handle,
        .mem = &ctx->mem,
        .send_cq = &attr->send_cq->core,
        .recv_cq = &attr->recv_cq->core,
        .srq = attr->srq ? &attr->srq->core : NULL,
        .sq_cap = cap.max_send_wr,
        .rq_cap = cap.max_recv_wr,
        .max_send_sge = cap.max_send_sge,
        .max_recv_sge = cap.max_recv_sge,
        .max_inline = cap.max_inline_data,
        .rdmap_ext = rdmap_ext,
        .sq_sig_all = attr->sq_sig_all != 0,
        .event = qp_event,
        .event_user = q,
    };
    rc = iwarp_core_qp_init(&r->core, &cfg, &r->mem);
    if (rc == 0) {
        iwarp_api_qp_link(ctx, q);
        pd->n_obj++;
        iwarp_api_cq_use(attr->send_cq, q);
        iwarp_api_cq_use(attr->recv_cq, q);
        if (attr->srq)
            attr->srq->n_users++;
    }
    iwarp_api_unlock(ctx);
    if (rc < 0) {
        free_qp_mem(ctx, r);
        return rc;
    }
    q->eng = &r->core.eng;
    q->free = rdmap_qp_free;
    q->cap = cap;
    attr->cap = cap;
    q->pub = (struct iwarp_qp){.context = ctx,
                               .qp_context = attr->qp_context,
                               .pd = pd,
                               .send_cq = attr->send_cq,
                               .recv_cq = attr->recv_cq,
                               .srq = attr->srq,
                               .handle = qp_num,
                               .qp_num = qp_num,
                               .state = IWARP_QPS_INIT,
                               .qp_type = IWARP_QPT_RC};
    *out = &q->pub;
    return 0;
}

int iwarp_destroy_qp(struct iwarp_qp *qp)
{
    if (!qp)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = qp->context;
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    pthread_mutex_lock(&ctx->lock);
    /* The transport and the CM id let go of the QP before it is freed (no event: destroying
     * is not a disconnect the application must be told about, as rdma_destroy_qp). */
    if (q->cm_release)
        q->cm_release(q);
    else if (q->llp.abort)
        q->llp.abort(q);
    iwarp_core_eng_set_error(q->eng);
    iwarp_api_qp_unlink(ctx, q); /* its counters stay in the context's */
    /* closing its transport may have queued an event for it (QP_FATAL): it goes with the QP */
    iwarp_api_async_drop_qp_locked(ctx, qp);
    qp->pd->n_obj--;
    iwarp_api_cq_unuse(qp->send_cq);
    iwarp_api_cq_unuse(qp->recv_cq);
    if (qp->srq)
        qp->srq->n_users--;
    q->free(q);
    iwarp_api_unlock(ctx);
    return 0;
}

int iwarp_query_qp_sized(struct iwarp_qp *qp, struct iwarp_qp_attr *attr, size_t attr_size)
{
    if (!qp || !attr || !IWARP_API_EXT_ROOM(struct iwarp_qp_attr, attr_size))
        return IWARP_ERR_INVAL;
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    pthread_mutex_lock(&qp->context->lock);
    const struct iwarp_core_qp *rdmap = q->eng->rdmap; /* NULL: a DDP-level QP, no Reads */
    struct iwarp_qp_attr a = {.qp_state = iwarp_core_eng_verbs_state(q->eng),
                              .cap = q->cap,
                              .max_rd_atomic = (uint8_t)(rdmap ? rdmap->ord : 0),
                              .max_dest_rd_atomic = (uint8_t)(rdmap ? rdmap->ird : 0),
                              .comp_mask = 0}; /* no extension fields yet */
    qp->state = a.qp_state;
    iwarp_api_unlock(qp->context);
    memcpy(attr, &a, IWARP_API_EXT_BASE(struct iwarp_qp_attr));
    return 0;
}

int iwarp_modify_qp_err(struct iwarp_qp *qp)
{
    if (!qp)
        return IWARP_ERR_INVAL;
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    pthread_mutex_lock(&qp->context->lock);
    if (q->llp.abort)
        q->llp.abort(q);
    iwarp_core_eng_set_error(q->eng);
    qp->state = IWARP_QPS_ERR;
    iwarp_api_unlock(qp->context);
    return 0;
}

/* One send WR (a DDP-level QP takes iwarp_ddp_post_send only). */
static int post_send_one(struct iwarp_qp_impl *q, void *w, uint32_t qn, void **next)
{
    (void)qn;
    struct iwarp_send_wr *wr = w;
    *next = wr->next;
    int rc = q->eng->rdmap ? iwarp_core_qp_post_send(q->eng->rdmap, wr) : IWARP_ERR_DDP_QP_MODE;
    if (rc < 0)
        return rc;
    /* The object's handle carries the key its next use names, as the kernel's
     * ib_update_fast_reg_key: a later REG_MR, bind, dereg or dealloc then finds it. */
    if (wr->opcode == IWARP_WR_REG_MR) {
        wr->reg.mr->lkey = (wr->reg.mr->lkey & 0xFFFFFF00u) | (wr->reg.key & 0xFFu);
        wr->reg.mr->rkey = wr->reg.mr->lkey;
    } else if (wr->opcode == IWARP_WR_BIND_MW) {
        wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
    }
    return 0;
}

int iwarp_post_send(struct iwarp_qp *qp, struct iwarp_send_wr *wr, struct iwarp_send_wr **bad_wr)
{
    void *bad;
    int rc = iwarp_api_post_chain(qp, wr, 0, post_send_one, true, &bad);
    if (bad_wr)
        *bad_wr = bad;
    return rc;
}

static int post_recv_one(struct iwarp_qp_impl *q, void *w, uint32_t qn, void **next)
{
    (void)qn;
    struct iwarp_recv_wr *wr = w;
    *next = wr->next;
    return q->eng->rdmap ? iwarp_core_qp_post_recv(q->eng->rdmap, wr) : IWARP_ERR_DDP_QP_MODE;
}

int iwarp_post_recv(struct iwarp_qp *qp, struct iwarp_recv_wr *wr, struct iwarp_recv_wr **bad_wr)
{
    void *bad;
    int rc = iwarp_api_post_chain(qp, wr, 0, post_recv_one, false, &bad);
    if (bad_wr)
        *bad_wr = bad;
    return rc;
}

/* ---- shared receive queues ------------------------------------------------------------------ */

int iwarp_create_srq(struct iwarp_pd *pd, struct iwarp_srq_init_attr *attr, struct iwarp_srq **out)
{
    if (!pd || !attr || !out)
        return IWARP_ERR_INVAL;
    int rc = IWARP_API_EXT_IN(&pd->ctx->attr, iwarp_srq_init_attr, attr);
    if (rc != 0)
        return rc;
    if (attr->attr.max_wr == 0 || attr->attr.max_wr > IWARP_CORE_MAX_WR ||
        attr->attr.max_sge > IWARP_CORE_MAX_SGE || attr->attr.srq_limit > attr->attr.max_wr)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pd->ctx;
    struct iwarp_srq *srq = iwarp_api_calloc(ctx, 1, sizeof *srq);
    if (!srq)
        return IWARP_ERR_NOMEM;
    srq->ring = iwarp_api_calloc(ctx, attr->attr.max_wr, sizeof *srq->ring);
    if (!srq->ring) {
        iwarp_api_free(ctx, srq);
        return IWARP_ERR_NOMEM;
    }
    uint32_t max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
    (void)iwarp_core_rq_init(&srq->core.rq, srq->ring, attr->attr.max_wr, max_sge);
    srq->core.pd = pd->handle;
    srq->core.limit = attr->attr.srq_limit;
    srq->ctx = ctx;
    srq->pd = pd;
    srq->srq_context = attr->srq_context;
    attr->attr.max_sge = max_sge;
    pthread_mutex_lock(&ctx->lock);
    pd->n_obj++;
    iwarp_api_unlock(ctx);
    *out = srq;
    return 0;
}

int iwarp_modify_srq(struct iwarp_srq *srq, struct iwarp_srq_attr *attr, int attr_mask)
{
    if (!srq || !attr || (attr_mask & ~(IWARP_SRQ_MAX_WR | IWARP_SRQ_LIMIT)))
        return IWARP_ERR_INVAL;
    if (attr_mask & IWARP_SRQ_MAX_WR)
        return IWARP_ERR_NOTSUP;
    if (attr_mask & IWARP_SRQ_LIMIT) {
        if (attr->srq_limit > srq->core.rq.cap)
            return IWARP_ERR_INVAL;
        pthread_mutex_lock(&srq->ctx->lock);
        srq->core.limit = attr->srq_limit;
        srq->core.limit_fired = false;
        iwarp_api_unlock(srq->ctx);
    }
    return 0;
}

int iwarp_query_srq(struct iwarp_srq *srq, struct iwarp_srq_attr *attr)
{
    if (!srq || !attr)
        return IWARP_ERR_INVAL;
    pthread_mutex_lock(&srq->ctx->lock);
    *attr = (struct iwarp_srq_attr){
        .max_wr = srq->core.rq.cap, .max_sge = srq->core.rq.max_sge, .srq_limit = srq->core.limit};
    iwarp_api_unlock(srq->ctx);
    return 0;
}

int iwarp_destroy_srq(struct iwarp_srq *srq)
{
    if (!srq)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = srq->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (srq->n_users) {
        iwarp_api_unlock(ctx);
        return IWARP_ERR_BUSY;
    }
    srq->pd->n_obj--;
    struct iwarp_core_rqe *r;
    while ((r = iwarp_core_rq_peek(&srq->core.rq)) != NULL) {
        iwarp_core_rqe_hold(r, &ctx->mem, false);
        iwarp_core_rq_pop(&srq->core.rq);
    }
    iwarp_api_unlock(ctx);
    iwarp_api_free(ctx, srq->ring);
    iwarp_api_free(ctx, srq);
    return 0;
}

int iwarp_post_srq_recv(struct iwarp_srq *srq, struct iwarp_recv_wr *wr,
                        struct iwarp_recv_wr **bad_wr)
{
    if (!srq || !wr) {
        if (bad_wr)
            *bad_wr = wr;
        return IWARP_ERR_INVAL;
    }
    int rc = 0;
    pthread_mutex_lock(&srq->ctx->lock);
    for (; wr; wr = wr->next) {
        struct iwarp_core_rqe rqe;
        rc = iwarp_core_rqe_from_wr(&rqe, wr, srq->core.rq.max_sge, &srq->ctx->mem, srq->core.pd);
        if (rc == 0)
            rc = iwarp_core_rq_push(&srq->core.rq, &rqe);
        if (rc < 0)
            break;
        iwarp_core_rqe_hold(&rqe, &srq->ctx->mem, true);
    }
    iwarp_api_unlock(srq->ctx);
    if (bad_wr)
        *bad_wr = rc < 0 ? wr : NULL;
    return rc;
}
