/* SPDX-License-Identifier: BSD-2-Clause */
/* Protection domains, memory regions and memory windows. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/**
 * ibv_alloc_pd - a protection domain; NULL with errno on failure.
 */
IWD_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    struct iwd_pd *p;
    int rc;

    if (!context)
        return iwd_fail_null(EINVAL);
    p = calloc(1, sizeof *p);
    if (!p)
        return iwd_fail_null(ENOMEM);
    rc = iwarp_alloc_pd(to_ictx(context)->ictx, &p->ipd);
    if (rc) {
        free(p);
        return iwd_fail_null(iwd_errno(rc));
    }
    p->pd.context = context;
    p->pd.handle = (uint32_t)(uintptr_t)p->ipd;
    return &p->pd;
}

/**
 * ibv_dealloc_pd - free a PD: 0, EINVAL (NULL) or EBUSY (objects of it remain).
 */
IWD_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    struct iwd_pd *p = (struct iwd_pd *)pd;
    int rc;

    if (!pd)
        return EINVAL;
    rc = iwarp_dealloc_pd(p->ipd);
    if (rc)
        return iwd_errno(rc);
    free(p);
    return 0;
}

/**
 * iwd_pd - see dropin.h.
 */
struct iwarp_pd *iwd_pd(struct ibv_pd *pd)
{
    return pd ? ((struct iwd_pd *)pd)->ipd : NULL;
}

/* The access bits libiwarp has; optional ones (IBV_ACCESS_OPTIONAL_RANGE: relaxed ordering and
 * later) are hints a device may ignore, HUGETLB too. */
#define IWD_ACCESS_KNOWN                                                         \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                             unsigned int access)
{
    struct iwd_mr *m;
    int rc;

    if (!pd || !addr || !length)
        return iwd_fail_null(EINVAL);
    access &= ~(unsigned int)(IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB);
    /* libiwarp's Tagged Offset is the virtual address: no other iova, no zero-based MR, no
     * on-demand paging. */
    if (access & ~(unsigned int)IWD_ACCESS_KNOWN)
        return iwd_fail_null(EOPNOTSUPP);
    if (iova != (uint64_t)(uintptr_t)addr)
        return iwd_fail_null(EOPNOTSUPP);
    m = calloc(1, sizeof *m);
    if (!m)
        return iwd_fail_null(ENOMEM);
    rc = iwarp_reg_mr(((struct iwd_pd *)pd)->ipd, addr, length, (int)access, &m->imr);
    if (rc) {
        free(m);
        return iwd_fail_null(iwd_errno(rc));
    }
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.handle = m->imr->handle;
    m->mr.lkey = m->imr->lkey;
    m->mr.rkey = m->imr->rkey;
    return &m->mr;
}

/**
 * ibv_reg_mr - register memory; NULL with errno: EINVAL (bad arguments, REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE), EOPNOTSUPP (ZERO_BASED, ON_DEMAND), ENOMEM.
 */
IWD_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return reg_mr(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned int)access);
}

/**
 * ibv_reg_mr_iova - ibv_reg_mr with an I/O virtual address: only iova == addr (EOPNOTSUPP
 * otherwise: libiwarp's Tagged Offsets are virtual addresses).
 */
IWD_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                                          uint64_t iova, int access)
{
    return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

/**
 * ibv_reg_mr_iova2 - as ibv_reg_mr_iova with unsigned access.
 */
IWD_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                           uint64_t iova, unsigned int access)
{
    return reg_mr(pd, addr, length, iova, access);
}

/**
 * ibv_dereg_mr - 0, EINVAL (NULL) or EBUSY (windows bound). Work requests still naming it
 * fail with IBV_WC_LOC_PROT_ERR when they reach it (as on an RNIC).
 */
IWD_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
    struct iwd_mr *m = (struct iwd_mr *)mr;
    int rc;

    if (!mr)
        return EINVAL;
    rc = iwarp_dereg_mr(m->imr);
    if (rc)
        return iwd_errno(rc);
    free(m);
    return 0;
}

/**
 * ibv_rereg_mr - not supported: IBV_REREG_MR_ERR_INPUT with errno EOPNOTSUPP (the MR stays
 * valid and unchanged), as rdma-core gives for a provider without rereg.
 */
IWD_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
                            size_t length, int access)
{
    (void)mr;
    (void)flags;
    (void)pd;
    (void)addr;
    (void)length;
    (void)access;
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
}

/**
 * iwd_op_alloc_mw - context->ops.alloc_mw: type 1 or 2 windows (NULL with errno EINVAL for
 * another type).
 */
struct ibv_mw *iwd_op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    struct iwd_mw *w;
    int rc;

    if (!pd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2))
        return iwd_fail_null(EINVAL);
    w = calloc(1, sizeof *w);
    if (!w)
        return iwd_fail_null(ENOMEM);
    rc = iwarp_alloc_mw(((struct iwd_pd *)pd)->ipd, (enum iwarp_mw_type)type, &w->imw);
    if (rc) {
        free(w);
        return iwd_fail_null(iwd_errno(rc));
    }
    w->mw.context = pd->context;
    w->mw.pd = pd;
    w->mw.rkey = w->imw->rkey;
    w->mw.handle = w->imw->handle;
    w->mw.type = type;
    return &w->mw;
}

/**
 * iwd_op_bind_mw - context->ops.bind_mw: a type-1 bind; mw->rkey follows the new key.
 */
int iwd_op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
    struct iwd_mw *w = (struct iwd_mw *)mw;
    struct iwarp_mw_bind b;
    int rc;

    if (!qp || !mw || !mw_bind)
        return EINVAL;
    b.wr_id = mw_bind->wr_id;
    b.send_flags = mw_bind->send_flags & IBV_SEND_SIGNALED;
    b.bind_info.mr = mw_bind->bind_info.mr ? ((struct iwd_mr *)mw_bind->bind_info.mr)->imr : NULL;
    b.bind_info.addr = mw_bind->bind_info.addr;
    b.bind_info.length = mw_bind->bind_info.length;
    b.bind_info.mw_access_flags = mw_bind->bind_info.mw_access_flags;
    b.comp_mask = 0;
    rc = iwarp_bind_mw(iwd_qp(qp), w->imw, &b);
    if (rc)
        return iwd_errno(rc);
    mw->rkey = w->imw->rkey;
    return 0;
}

/**
 * iwd_op_dealloc_mw - context->ops.dealloc_mw: 0 or EINVAL.
 */
int iwd_op_dealloc_mw(struct ibv_mw *mw)
{
    struct iwd_mw *w = (struct iwd_mw *)mw;
    int rc;

    if (!mw)
        return EINVAL;
    rc = iwarp_dealloc_mw(w->imw);
    if (rc)
        return iwd_errno(rc);
    free(w);
    return 0;
}
