/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared receive queues. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/**
 * ibv_create_srq - an SRQ; NULL with errno EINVAL (sizes) or ENOMEM.
 */
IWD_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct iwarp_srq_init_attr ia = {0};
    struct iwd_srq *s;
    int rc;

    if (!pd || !attr)
        return iwd_fail_null(EINVAL);
    s = calloc(1, sizeof *s);
    if (!s)
        return iwd_fail_null(ENOMEM);
    ia.srq_context = s;
    ia.attr.max_wr = attr->attr.max_wr;
    ia.attr.max_sge = attr->attr.max_sge;
    ia.attr.srq_limit = attr->attr.srq_limit;
    rc = iwarp_create_srq(iwd_pd(pd), &ia, &s->isrq);
    if (rc) {
        free(s);
        return iwd_fail_null(iwd_errno(rc));
    }
    if (iwd_obj_add(s->isrq, s)) {
        iwarp_destroy_srq(s->isrq);
        free(s);
        return iwd_fail_null(ENOMEM);
    }
    attr->attr.max_sge = ia.attr.max_sge;
    s->srq.context = pd->context;
    s->srq.srq_context = attr->srq_context;
    s->srq.pd = pd;
    s->srq.handle = (uint32_t)(uintptr_t)s->isrq;
    pthread_mutex_init(&s->srq.mutex, NULL);
    pthread_cond_init(&s->srq.cond, NULL);
    return &s->srq;
}

/**
 * ibv_modify_srq - IBV_SRQ_LIMIT arms the limit; IBV_SRQ_MAX_WR (resizing) is EOPNOTSUPP
 * (siw: no SRQ resize), EINVAL for bad input.
 */
IWD_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask)
{
    struct iwarp_srq_attr ia;

    if (!srq || !attr)
        return EINVAL;
    ia.max_wr = attr->max_wr;
    ia.max_sge = attr->max_sge;
    ia.srq_limit = attr->srq_limit;
    return iwd_ret(iwarp_modify_srq(iwd_srq(srq), &ia, attr_mask));
}

/**
 * ibv_query_srq - max_wr, max_sge, srq_limit; 0 or EINVAL.
 */
IWD_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    struct iwarp_srq_attr ia;
    int rc;

    if (!srq || !attr)
        return EINVAL;
    rc = iwarp_query_srq(iwd_srq(srq), &ia);
    if (rc)
        return iwd_errno(rc);
    attr->max_wr = ia.max_wr;
    attr->max_sge = ia.max_sge;
    attr->srq_limit = ia.srq_limit;
    return 0;
}

/**
 * ibv_destroy_srq - 0, EINVAL (NULL) or EBUSY (QPs use it).
 */
IWD_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
    struct iwd_srq *s = (struct iwd_srq *)srq;
    int rc;

    if (!srq)
        return EINVAL;
    rc = iwarp_destroy_srq(s->isrq);
    if (rc)
        return iwd_errno(rc);
    iwd_obj_del(s->isrq);
    pthread_mutex_destroy(&s->srq.mutex);
    pthread_cond_destroy(&s->srq.cond);
    free(s);
    return 0;
}

/**
 * iwd_srq - see dropin.h.
 */
struct iwarp_srq *iwd_srq(struct ibv_srq *srq)
{
    return srq ? ((struct iwd_srq *)srq)->isrq : NULL;
}
