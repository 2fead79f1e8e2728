/* SPDX-License-Identifier: BSD-2-Clause */
/* Queue pairs: reliable connected only (as siw). libiwarp connects a QP through its CM, so the
 * verbs states before the connection (RESET, INIT, RTR) are recorded here; RTS comes from the
 * connection and ERR is libiwarp's iwarp_modify_qp_err. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_mutex_t qps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iwd_qp *qps;

/* IB_QP_ATTR_STANDARD_BITS of the kernel: attr_mask bits 0 .. 20. */
#define IWD_QP_STANDARD_BITS ((1 << 21) - 1)

/**
 * iwd_qp_table_add - see internal.h.
 */
void iwd_qp_table_add(struct iwd_qp *q)
{
    pthread_mutex_lock(&qps_lock);
    q->next = qps;
    qps = q;
    pthread_mutex_unlock(&qps_lock);
}

/**
 * iwd_qp_table_del - see internal.h.
 */
void iwd_qp_table_del(struct iwd_qp *q)
{
    pthread_mutex_lock(&qps_lock);
    for (struct iwd_qp **p = &qps; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    pthread_mutex_unlock(&qps_lock);
}

/**
 * iwd_qp_by_num - see dropin.h.
 */
struct ibv_qp *iwd_qp_by_num(uint32_t qp_num)
{
    struct ibv_qp *found = NULL;

    pthread_mutex_lock(&qps_lock);
    for (struct iwd_qp *q = qps; q; q = q->next)
        if (q->qp.qp_num == qp_num) {
            found = &q->qp;
            break;
        }
    pthread_mutex_unlock(&qps_lock);
    return found;
}

static int default_create(void *arg, struct iwarp_pd *pd, struct iwarp_qp_init_attr *attr,
                          struct iwarp_qp **qp)
{
    (void)arg;
    return iwarp_create_qp(pd, attr, qp);
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
                              iwd_qp_create_fn create, void *arg, enum ibv_qp_state initial)
{
    struct iwarp_qp_init_attr ia;
    struct iwarp_device_attr dev;
    struct iwd_qp *q;
    int rc;

    if (!pd || !attr)
        return iwd_fail_null(EINVAL);
    /* siw_create_qp: only RC QPs (-EOPNOTSUPP); a send CQ and a receive CQ or SRQ. */
    if (attr->qp_type != IBV_QPT_RC)
        return iwd_fail_null(EOPNOTSUPP);
    if (!attr->send_cq || (!attr->recv_cq && !attr->srq))
        return iwd_fail_null(EINVAL);
    rc = iwarp_query_device(to_ictx(pd->context)->ictx, &dev);
    if (rc)
        return iwd_fail_null(iwd_errno(rc));
    q = calloc(1, sizeof *q);
    if (!q)
        return iwd_fail_null(ENOMEM);
    memset(&ia, 0, sizeof ia);
    ia.qp_context = q; /* async events find the wrapper through it */
    ia.send_cq = iwd_cq(attr->send_cq);
    ia.recv_cq = iwd_cq(attr->recv_cq ? attr->recv_cq : attr->send_cq);
    ia.srq = iwd_srq(attr->srq);
    ia.cap.max_send_wr = attr->cap.max_send_wr;
    ia.cap.max_recv_wr = attr->srq ? 0 : attr->cap.max_recv_wr;
    ia.cap.max_send_sge = attr->cap.max_send_sge;
    ia.cap.max_recv_sge = attr->cap.max_recv_sge;
    /* siw takes inline data up to its device maximum whatever the QP asked for, and
     * programs rely on it (rdma_xclient posts 16 inline octets on a QP that asked for none):
     * ask for the maximum (the cap written back says so); more is EINVAL, as on siw. */
    ia.cap.max_inline_data = attr->cap.max_inline_data > dev.max_inline_data
                                 ? attr->cap.max_inline_data
                                 : dev.max_inline_data;
    ia.qp_type = IWARP_QPT_RC;
    ia.sq_sig_all = attr->sq_sig_all;
    /* The RFC 7306 extensions are enabled so that the atomics and Write with Immediate the
     * device reports work; libiwarp sends their messages only when the application posts
     * them, so a peer without them (siw) sees nothing new otherwise. */
    if (dev.comp_mask & IWARP_DEVICE_ATTR_RDMAP_EXT) {
        ia.comp_mask = IWARP_QP_INIT_ATTR_RDMAP_EXT;
        ia.rdmap_ext = dev.rdmap_ext_cap;
    }
    rc = (create ? create : default_create)(arg, iwd_pd(pd), &ia, &q->iqp);
    if (rc) {
        free(q);
        return iwd_fail_null(iwd_errno(rc));
    }
    attr->cap.max_send_wr = ia.cap.max_send_wr;
    if (!attr->srq)
        attr->cap.max_recv_wr = ia.cap.max_recv_wr;
    attr->cap.max_send_sge = ia.cap.max_send_sge;
    attr->cap.max_recv_sge = ia.cap.max_recv_sge;
    attr->cap.max_inline_data = ia.cap.max_inline_data;
    q->cap = attr->cap;
    q->sq_sig_all = attr->sq_sig_all != 0;
    q->recorded = initial;
    q->qp.context = pd->context;
    q->qp.qp_context = attr->qp_context;
    q->qp.pd = pd;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->qp.srq = attr->srq;
    q->qp.handle = q->iqp->handle;
    q->qp.qp_num = q->iqp->qp_num;
    q->qp.state = initial;
    q->qp.qp_type = IBV_QPT_RC;
    pthread_mutex_init(&q->qp.mutex, NULL);
    pthread_cond_init(&q->qp.cond, NULL);
    iwd_qp_table_add(q);
    return &q->qp;
}

/**
 * ibv_create_qp - an RC QP (state RESET until modified, connected by the CM); NULL with errno:
 * EOPNOTSUPP for any other type (UD, UC, XRC, raw packet: siw's answer), EINVAL for bad
 * sizes or missing CQs, ENOMEM.
 */
IWD_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    return make_qp(pd, attr, NULL, NULL, IBV_QPS_RESET);
}

/**
 * iwd_create_qp_with - see dropin.h. The QP starts in INIT, as librdmacm leaves an iWARP QP.
 */
struct ibv_qp *iwd_create_qp_with(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
                                  iwd_qp_create_fn create, void *arg)
{
    if (!create)
        return iwd_fail_null(EINVAL);
    return make_qp(pd, attr, create, arg, IBV_QPS_INIT);
}

/**
 * iwd_op_create_qp_ex - verbs_context.create_qp_ex: the attributes of ibv_create_qp (PD,
 * create_flags 0); the new post-send API (send_ops_flags), TSO, RSS and XRC are EOPNOTSUPP.
 */
struct ibv_qp *iwd_op_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
    if (!context || !attr)
        return iwd_fail_null(EINVAL);
    if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS))
        return iwd_fail_null(EOPNOTSUPP);
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
        return iwd_fail_null(EOPNOTSUPP);
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD))
        return iwd_fail_null(EINVAL);
    /* ibv_qp_init_attr is the prefix of ibv_qp_init_attr_ex. */
    return make_qp(attr->pd, (struct ibv_qp_init_attr *)attr, NULL, NULL, IBV_QPS_RESET);
}

/**
 * ibv_destroy_qp - destroy a QP (its connection is closed abortively): 0 or EINVAL.
 */
IWD_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
    struct iwd_qp *q = (struct iwd_qp *)qp;
    int rc;

    if (!qp)
        return EINVAL;
    rc = iwarp_destroy_qp(q->iqp);
    if (rc)
        return iwd_errno(rc);
    iwd_qp_table_del(q);
    pthread_mutex_destroy(&q->qp.mutex);
    pthread_cond_destroy(&q->qp.cond);
    free(q);
    return 0;
}

/**
 * iwd_qp - see dropin.h.
 */
struct iwarp_qp *iwd_qp(struct ibv_qp *qp)
{
    return qp ? ((struct iwd_qp *)qp)->iqp : NULL;
}

/**
 * iwd_qp_set_state - see dropin.h.
 */
void iwd_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
    struct iwd_qp *q = (struct iwd_qp *)qp;

    if (!qp)
        return;
    q->recorded = state;
    q->qp.state = state;
}

/* The verbs state: libiwarp's once it has left INIT (connected, in error), else recorded.
 * 0 or the errno of iwarp_query_qp's failure. */
static int current_state(struct iwd_qp *q, struct iwarp_qp_attr *ia, enum ibv_qp_state *st)
{
    int rc = iwarp_query_qp(q->iqp, ia);

    if (rc)
        return iwd_errno(rc);
    *st = ia->qp_state == IWARP_QPS_INIT ? q->recorded : (enum ibv_qp_state)ia->qp_state;
    return 0;
}

/**
 * ibv_modify_qp - RESET/INIT/RTR are recorded before the connection and change nothing on a
 * connected QP (as siw); RTS is accepted once the CM has connected the QP and is EINVAL before
 * (siw: no socket); ERR flushes and aborts (iwarp_modify_qp_err). A QP in error cannot go back
 * (EINVAL). Other attributes are accepted and ignored; attribute bits beyond the standard ones
 * are EOPNOTSUPP (as siw); SQD and SQE are EINVAL.
 */
IWD_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    struct iwd_qp *q = (struct iwd_qp *)qp;
    struct iwarp_qp_attr ia;
    enum ibv_qp_state now = IBV_QPS_RESET;
    int rc;

    if (!qp || !attr)
        return EINVAL;
    if (attr_mask & ~IWD_QP_STANDARD_BITS)
        return EOPNOTSUPP;
    if (!(attr_mask & IBV_QP_STATE))
        return 0;
    rc = current_state(q, &ia, &now);
    if (rc)
        return rc;
    switch (attr->qp_state) {
    case IBV_QPS_RESET:
    case IBV_QPS_INIT:
    case IBV_QPS_RTR:
        /* siw leaves a connected QP as it is (rping -q moves its QP through INIT, RTR and
         * RTS after the connection is up); one in error cannot go back here. */
        if (ia.qp_state == IWARP_QPS_RTS)
            return 0;
        if (ia.qp_state != IWARP_QPS_INIT)
            return EINVAL;
        q->recorded = attr->qp_state;
        q->qp.state = attr->qp_state;
        return 0;
    case IBV_QPS_RTS:
        if (now != IBV_QPS_RTS)
            return EINVAL;
        return 0;
    case IBV_QPS_ERR:
        rc = iwarp_modify_qp_err(q->iqp);
        if (rc)
            return iwd_errno(rc);
        q->qp.state = IBV_QPS_ERR;
        return 0;
    default:
        return EINVAL;
    }
}

/**
 * ibv_query_qp - the QP's state, sizes and IRD/ORD; 0 or EINVAL.
 */
IWD_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                            struct ibv_qp_init_attr *init_attr)
{
    struct iwd_qp *q = (struct iwd_qp *)qp;
    struct iwarp_qp_attr ia;
    enum ibv_qp_state st = IBV_QPS_RESET;
    int mtu, rc;

    (void)attr_mask; /* everything is filled, as siw does */
    if (!qp || !attr || !init_attr)
        return EINVAL;
    rc = current_state(q, &ia, &st);
    if (rc)
        return rc;
    q->qp.state = st;
    memset(attr, 0, sizeof *attr);
    attr->qp_state = st;
    attr->cur_qp_state = st;
    mtu = iwd_device_mtu(to_ictx(qp->context)->idev);
    attr->path_mtu = mtu >= 4096   ? IBV_MTU_4096
                     : mtu >= 2048 ? IBV_MTU_2048
                     : mtu >= 1024 ? IBV_MTU_1024
                     : mtu >= 512  ? IBV_MTU_512
                                   : IBV_MTU_256;
    attr->qp_access_flags =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    attr->cap.max_send_wr = ia.cap.max_send_wr;
    attr->cap.max_recv_wr = ia.cap.max_recv_wr;
    attr->cap.max_send_sge = ia.cap.max_send_sge;
    attr->cap.max_recv_sge = ia.cap.max_recv_sge;
    attr->cap.max_inline_data = ia.cap.max_inline_data;
    attr->max_rd_atomic = ia.max_rd_atomic;
    attr->max_dest_rd_atomic = ia.max_dest_rd_atomic;
    attr->port_num = 1;
    memset(init_attr, 0, sizeof *init_attr);
    init_attr->qp_context = qp->qp_context;
    init_attr->send_cq = qp->send_cq;
    init_attr->recv_cq = qp->recv_cq;
    init_attr->srq = qp->srq;
    init_attr->cap = attr->cap;
    init_attr->qp_type = IBV_QPT_RC;
    init_attr->sq_sig_all = q->sq_sig_all;
    return 0;
}
