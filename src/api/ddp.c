/* SPDX-License-Identifier: BSD-2-Clause */
/* The DDP-level interface (include/iwarp/ddp.h): QPs whose engine is core_ddp, not RDMAP. */
#include "core/core_ddp.h"
#include "api/api_ext.h"
#include "api/api_internal.h"
#include "iwarp/ddp.h"
#include "iwarp/errors.h"

#include <string.h>

/* A DDP-level QP: the common part, its engine and the memory the engine borrows. */
struct ddp_qp {
    struct iwarp_qp_impl impl; /* first */
    struct iwarp_core_ddp core;
    struct iwarp_core_ddp_mem mem;
};

/* The DDP-level engine of q, or NULL when q is a verbs (RDMAP) QP. */
static struct iwarp_core_ddp *ddp_of(struct iwarp_qp_impl *q)
{
    return q->eng->rdmap ? NULL : &((struct ddp_qp *)q)->core;
}

/* The engine's async event hook (lock held): queue the verbs event for the QP. */
static void ddp_event(void *user, int event_type, uint32_t cause)
{
    struct iwarp_qp_impl *q = user;
    struct iwarp_async_event ev = {.event_type = (enum iwarp_event_type)event_type,
                                   .term_cause = cause};
    ev.element.qp = &q->pub;
    iwarp_api_async_push_locked(q->pub.context, &ev);
    if (!iwarp_api_log_on(q->pub.context, IWARP_LOG_INFO))
        return;
    char why[224];
    iwarp_api_log(q->pub.context, IWARP_LOG_INFO, "DDP QP %u: %s: %s", q->pub.qp_num,
                  iwarp_event_type_str(ev.event_type), iwarp_api_cause_str(cause, why, sizeof why));
}

/* The QP's free hook (and a failed create's, before the engine exists): whatever never
 * completed lets go of its MRs, then the engine's memory and the QP go. */
static void ddp_qp_free(struct iwarp_qp_impl *q)
{
    struct ddp_qp *d = (struct ddp_qp *)q;
    struct iwarp_ctx *ctx = q->pub.context;
    if (d->core.eng.ops)
        iwarp_core_eng_fini(&d->core.eng);
    iwarp_api_free(ctx, d->mem.sq);
    iwarp_api_free(ctx, d->mem.uq);
    iwarp_api_free(ctx, d->mem.rqe);
    iwarp_api_free(ctx, d->mem.lens);
    iwarp_api_free(ctx, d);
}

static uint32_t or1(uint32_t v)
{
    return v ? v : 1u;
}

int iwarp_ddp_create_qp(struct iwarp_pd *pd, struct iwarp_ddp_qp_init_attr *attr,
                        struct iwarp_qp **out)
{
    if (!pd || !attr || !out)
        return IWARP_ERR_INVAL;
    int rc = IWARP_API_EXT_IN(&pd->ctx->attr, iwarp_ddp_qp_init_attr, attr);
    if (rc != 0)
        return rc;
    if (!attr->send_cq || !attr->recv_cq || attr->send_cq->ctx != pd->ctx ||
        attr->recv_cq->ctx != pd->ctx)
        return IWARP_ERR_INVAL;
    struct iwarp_ddp_qp_init_attr a;
    memset(&a, 0, sizeof a);
    memcpy(&a, attr, IWARP_API_EXT_BASE(struct iwarp_ddp_qp_init_attr));
    a.num_queues = or1(a.num_queues);
    a.max_recv_wr = or1(a.max_recv_wr);
    a.max_send_wr = or1(a.max_send_wr);
    a.max_send_sge = or1(a.max_send_sge);
    a.max_recv_sge = or1(a.max_recv_sge);
    if (a.num_queues > IWARP_DDP_MAX_QUEUES || a.max_recv_wr > IWARP_CORE_MAX_WR ||
        a.max_send_wr > IWARP_CORE_MAX_WR || a.max_send_sge > IWARP_CORE_MAX_SGE ||
        a.max_recv_sge > IWARP_CORE_MAX_SGE)
        return IWARP_ERR_INVAL;
    struct iwarp_ctx *ctx = pd->ctx;
    struct ddp_qp *d = iwarp_api_calloc(ctx, 1, sizeof *d);
    if (!d)
        return IWARP_ERR_NOMEM;
    struct iwarp_qp_impl *q = &d->impl;
    q->pub.context = ctx;
    q->eng = &d->core.eng;
    q->free = ddp_qp_free;
    size_t nrq = (size_t)a.num_queues * a.max_recv_wr;
    d->mem.sq = iwarp_api_calloc(ctx, a.max_send_wr, sizeof *d->mem.sq);
    d->mem.uq = iwarp_api_calloc(ctx, a.num_queues, sizeof *d->mem.uq);
    d->mem.rqe = iwarp_api_calloc(ctx, nrq, sizeof *d->mem.rqe);
    d->mem.lens = iwarp_api_calloc(ctx, nrq, sizeof *d->mem.lens);
    if (!d->mem.sq || !d->mem.uq || !d->mem.rqe || !d->mem.lens) {
        ddp_qp_free(q);
        return IWARP_ERR_NOMEM;
    }
    pthread_mutex_lock(&ctx->lock);
    uint32_t qp_num = ctx->next_handle++;
    struct iwarp_core_ddp_cfg cfg = {.qp_num = qp_num,
                                     .pd = pd->handle,
                                     .mem = &ctx->mem,
                                     .send_cq = &attr->send_cq->core,
                                     .recv_cq = &attr->recv_cq->core,
                                     .num_queues = a.num_queues,
                                     .rq_cap = a.max_recv_wr,
                                     .sq_cap = a.max_send_wr,
                                     .max_send_sge = a.max_send_sge,
                                     .max_recv_sge = a.max_recv_sge,
                                     .sq_sig_all = a.sq_sig_all != 0,
                                     .event = ddp_event,
                                     .event_user = q};
    rc = iwarp_core_ddp_init(&d->core, &cfg, &d->mem);
    if (rc == 0) {
        iwarp_api_qp_link(ctx, q);
        pd->n_obj++;
        iwarp_api_cq_use(attr->send_cq, q);
        iwarp_api_cq_use(attr->recv_cq, q);
    }
    iwarp_api_unlock(ctx);
    if (rc != 0) {
        ddp_qp_free(q);
        return rc;
    }
    q->cap = (struct iwarp_qp_cap){.max_send_wr = a.max_send_wr,
                                   .max_recv_wr = a.max_recv_wr,
                                   .max_send_sge = a.max_send_sge,
                                   .max_recv_sge = a.max_recv_sge};
    q->pub = (struct iwarp_qp){.context = ctx,
                               .qp_context = attr->qp_context,
                               .pd = pd,
                               .send_cq = attr->send_cq,
                               .recv_cq = attr->recv_cq,
                               .handle = qp_num,
                               .qp_num = qp_num,
                               .state = IWARP_QPS_INIT,
                               .qp_type = IWARP_QPT_RC};
    memcpy(attr, &a, IWARP_API_EXT_BASE(struct iwarp_ddp_qp_init_attr)); /* the defaults taken */
    *out = &q->pub;
    return 0;
}

int iwarp_ddp_cm_create_qp(struct iwarp_cm_id *id, struct iwarp_pd *pd,
                           struct iwarp_ddp_qp_init_attr *attr)
{
    if (!id || !pd || !attr)
        return IWARP_ERR_INVAL;
    if (id->qp)
        return IWARP_ERR_BUSY;
    struct iwarp_qp *qp;
    int rc = iwarp_ddp_create_qp(pd, attr, &qp);
    if (rc != 0)
        return rc;
    rc = iwarp_api_cm_set_qp(id, qp);
    if (rc != 0)
        (void)iwarp_destroy_qp(qp);
    return rc;
}

/* One DDP-level send WR (a verbs QP takes iwarp_post_send only). */
static int post_send_one(struct iwarp_qp_impl *q, void *w, uint32_t qn, void **next)
{
    (void)qn;
    struct iwarp_ddp_send_wr *wr = w;
    *next = wr->next;
    struct iwarp_core_ddp *ddp = ddp_of(q);
    if (!ddp)
        return IWARP_ERR_DDP_QP_MODE;
    if (wr->send_flags & ~(unsigned)IWARP_SEND_SIGNALED)
        return IWARP_ERR_INVAL; /* fence, solicited, inline are RDMAP's */
    struct iwarp_core_ddp_send s = {.wr_id = wr->wr_id,
                                    .sg_list = wr->sg_list,
                                    .num_sge = wr->num_sge,
                                    .signaled = (wr->send_flags & IWARP_SEND_SIGNALED) != 0,
                                    .tagged = wr->tagged,
                                    .qn = wr->qn,
                                    .stag = wr->stag,
                                    .to = wr->to,
                                    .rsvdulp = wr->rsvdulp};
    return iwarp_core_ddp_post_send(ddp, &s);
}

int iwarp_ddp_post_send(struct iwarp_qp *qp, struct iwarp_ddp_send_wr *wr,
                        struct iwarp_ddp_send_wr **bad_wr)
{
    void *bad;
    int rc = iwarp_api_post_chain(qp, wr, 0, post_send_one, true, &bad);
    if (bad_wr)
        *bad_wr = bad;
    return rc;
}

static int post_recv_one(struct iwarp_qp_impl *q, void *w, uint32_t qn, void **next)
{
    struct iwarp_recv_wr *wr = w;
    *next = wr->next;
    struct iwarp_core_ddp *ddp = ddp_of(q);
    return ddp ? iwarp_core_ddp_post_recv(ddp, qn, wr) : IWARP_ERR_DDP_QP_MODE;
}

int iwarp_ddp_post_recv(struct iwarp_qp *qp, uint32_t qn, struct iwarp_recv_wr *wr,
                        struct iwarp_recv_wr **bad_wr)
{
    void *bad;
    int rc = iwarp_api_post_chain(qp, wr, qn, post_recv_one, false, &bad);
    if (bad_wr)
        *bad_wr = bad;
    return rc;
}

int iwarp_ddp_query_error_sized(struct iwarp_qp *qp, struct iwarp_ddp_error *err, size_t err_size)
{
    if (!qp || !err || !IWARP_API_EXT_ROOM(struct iwarp_ddp_error, err_size))
        return IWARP_ERR_INVAL;
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    struct iwarp_core_ddp *ddp = ddp_of(q);
    if (!ddp)
        return IWARP_ERR_DDP_QP_MODE;
    pthread_mutex_lock(&qp->context->lock);
    const struct iwarp_core_ddp_err *e = &ddp->err;
    struct iwarp_ddp_error out = {.cause = e->cause,
                                  .seg_len = e->seg_len,
                                  .hdr_len = e->hdr_len,
                                  .comp_mask = 0}; /* no extension fields yet */
    memcpy(out.hdr, e->hdr, e->hdr_len);
    iwarp_api_unlock(qp->context);
    memcpy(err, &out, IWARP_API_EXT_BASE(struct iwarp_ddp_error));
    return 0;
}
