/* SPDX-License-Identifier: BSD-2-Clause */
/* QPs and SRQs on ids: rdma_create_qp / _ex, rdma_destroy_qp, rdma_create_srq / _ex,
 * rdma_destroy_srq. The QP is the drop-in libibverbs' (iwd_create_qp_with), made by the id
 * (iwarp_cm_create_qp) so the id connects it. Missing CQs are made as librdmacm makes them:
 * one per direction, each with its own completion channel, cq_context the id. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <string.h>

#include "cma.h"
#include "iwarp/errors.h"

void iwd_cm_destroy_cqs(struct rdma_cm_id *id)
{
    if (id->recv_cq) {
        ibv_destroy_cq(id->recv_cq);
        id->recv_cq = NULL;
    }
    if (id->recv_cq_channel) {
        ibv_destroy_comp_channel(id->recv_cq_channel);
        id->recv_cq_channel = NULL;
    }
    if (id->send_cq) {
        ibv_destroy_cq(id->send_cq);
        id->send_cq = NULL;
    }
    if (id->send_cq_channel) {
        ibv_destroy_comp_channel(id->send_cq_channel);
        id->send_cq_channel = NULL;
    }
}

/* One CQ of size n with a completion channel of its own. */
static int make_cq(struct rdma_cm_id *id, uint32_t n, struct ibv_comp_channel **ch,
                   struct ibv_cq **cq)
{
    *ch = ibv_create_comp_channel(id->verbs);
    if (!*ch)
        return -1;
    *cq = ibv_create_cq(id->verbs, (int)n, id, *ch, 0);
    return *cq ? 0 : -1;
}

/* librdmacm's ucma_create_cqs: a size of 0 makes none. */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
    if ((recv_size && make_cq(id, recv_size, &id->recv_cq_channel, &id->recv_cq) != 0) ||
        (send_size && make_cq(id, send_size, &id->send_cq_channel, &id->send_cq) != 0)) {
        int e = errno;
        iwd_cm_destroy_cqs(id);
        errno = e;
        return -1;
    }
    return 0;
}

/* iwd_qp_create_fn: the id makes the libiwarp QP and owns it. */
static int create_for_id(void *arg, struct iwarp_pd *pd, struct iwarp_qp_init_attr *attr,
                         struct iwarp_qp **qp)
{
    struct iwarp_cm_id *iw = arg;
    int rc = iwarp_cm_create_qp(iw, pd, attr);
    if (rc == 0)
        *qp = iw->qp;
    return rc;
}

/** rdma_create_qp - a QP for the id on pd (NULL: the id's); creates the CQs not given. */
IWD_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
                              struct ibv_qp_init_attr *qp_init_attr)
{
    if (!id || !qp_init_attr || id->qp)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *iid = iwd_id_of(id);
    if (iid->iw->qp)
        return iwd_cm_fail(EINVAL); /* an application QP is attached */
    if (!pd)
        pd = id->pd;
    if (!pd || (id->verbs && id->verbs != pd->context))
        return iwd_cm_fail(EINVAL);
    if (!id->verbs) {
        id->verbs = pd->context; /* an unbound id: the PD says which device */
        id->port_num = 1;
    }
    if (qp_init_attr->qp_type != IBV_QPT_RC)
        return iwd_cm_fail(EOPNOTSUPP); /* siw: RC QPs only */
    if ((id->recv_cq && qp_init_attr->recv_cq && id->recv_cq != qp_init_attr->recv_cq) ||
        (id->send_cq && qp_init_attr->send_cq && id->send_cq != qp_init_attr->send_cq))
        return iwd_cm_fail(EINVAL);
    struct ibv_qp_init_attr attr = *qp_init_attr;
    if (create_cqs(id, attr.send_cq || id->send_cq ? 0 : attr.cap.max_send_wr,
                   attr.recv_cq || id->recv_cq ? 0 : attr.cap.max_recv_wr) != 0)
        return -1;
    if (!attr.send_cq)
        attr.send_cq = id->send_cq;
    if (!attr.recv_cq)
        attr.recv_cq = id->recv_cq;
    if (id->srq && !attr.srq)
        attr.srq = id->srq;
    struct ibv_qp *qp = iwd_create_qp_with(pd, &attr, create_for_id, iid->iw);
    if (!qp) {
        int e = errno;
        iwd_cm_destroy_cqs(id);
        errno = e;
        return -1;
    }
    *qp_init_attr = attr;
    id->pd = qp->pd;
    id->qp = qp;
    return 0;
}

/** rdma_create_qp_ex - rdma_create_qp from ibv_qp_init_attr_ex: the PD, and creation flags
 * 0; other extensions are EOPNOTSUPP (iWARP devices have none of them). */
IWD_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
    if (!id || !attr)
        return iwd_cm_fail(EINVAL);
    uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if ((attr->comp_mask & ~known) ||
        ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags))
        return iwd_cm_fail(EOPNOTSUPP);
    struct ibv_pd *pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL;
    struct ibv_qp_init_attr a = {
        .qp_context = attr->qp_context,
        .send_cq = attr->send_cq,
        .recv_cq = attr->recv_cq,
        .srq = attr->srq,
        .cap = attr->cap,
        .qp_type = attr->qp_type,
        .sq_sig_all = attr->sq_sig_all,
    };
    if (rdma_create_qp(id, pd, &a) != 0)
        return -1;
    attr->send_cq = a.send_cq;
    attr->recv_cq = a.recv_cq;
    attr->srq = a.srq;
    attr->cap = a.cap;
    attr->pd = id->pd;
    attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
    return 0;
}

/** rdma_destroy_qp - destroy the id's QP and the CQs librdmacm made for it. */
IWD_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
    if (!id)
        return;
    if (id->qp) {
        ibv_destroy_qp(id->qp);
        id->qp = NULL;
    }
    iwd_cm_destroy_cqs(id);
}

/** rdma_create_srq_ex - an SRQ for the id (basic SRQs only: XRC is not iWARP's). */
IWD_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
    if (!id || !attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
        return iwd_cm_fail(EINVAL);
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
        attr->pd = id->pd;
        attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
    }
    if (!attr->pd)
        return iwd_cm_fail(EINVAL);
    if (attr->srq_type != IBV_SRQT_BASIC)
        return iwd_cm_fail(EOPNOTSUPP);
    struct ibv_srq *srq = ibv_create_srq_ex(id->verbs ? id->verbs : attr->pd->context, attr);
    if (!srq)
        return -1;
    id->pd = attr->pd;
    id->srq = srq;
    return 0;
}

/** rdma_create_srq - a basic SRQ for the id on pd (NULL: the id's). */
IWD_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
                               struct ibv_srq_init_attr *attr)
{
    if (!id || !attr)
        return iwd_cm_fail(EINVAL);
    struct ibv_srq_init_attr_ex ex = {
        .srq_context = attr->srq_context,
        .attr = attr->attr,
        .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
        .srq_type = IBV_SRQT_BASIC,
        .pd = pd ? pd : id->pd,
    };
    if (rdma_create_srq_ex(id, &ex) != 0)
        return -1;
    attr->attr = ex.attr;
    return 0;
}

/** rdma_destroy_srq - destroy the id's SRQ (and CQs librdmacm made for the id). */
IWD_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
    if (!id)
        return;
    if (id->srq) {
        ibv_destroy_srq(id->srq);
        id->srq = NULL;
    }
    iwd_cm_destroy_cqs(id);
}
