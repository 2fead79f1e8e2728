/* SPDX-License-Identifier: BSD-2-Clause */
/* Posting: ibv_send_wr lists become iwarp_send_wr lists in a small array on the stack, a batch
 * at a time (no allocation); SGE arrays and receive WRs have libiwarp's layout and are passed
 * as they are. Errors are siw's: ENOTCONN before the connection, ENOMEM for a full queue,
 * EINVAL for a malformed WR or an opcode iWARP has not (Send with Immediate, TSO, UD). */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <string.h>

#include "internal.h"

_Static_assert(sizeof(struct ibv_sge) == sizeof(struct iwarp_sge) &&
                   offsetof(struct ibv_sge, length) == offsetof(struct iwarp_sge, length) &&
                   offsetof(struct ibv_sge, lkey) == offsetof(struct iwarp_sge, lkey),
               "ibv_sge and iwarp_sge differ");
_Static_assert(sizeof(struct ibv_recv_wr) == sizeof(struct iwarp_recv_wr) &&
                   offsetof(struct ibv_recv_wr, next) == offsetof(struct iwarp_recv_wr, next) &&
                   offsetof(struct ibv_recv_wr, sg_list) ==
                       offsetof(struct iwarp_recv_wr, sg_list) &&
                   offsetof(struct ibv_recv_wr, num_sge) == offsetof(struct iwarp_recv_wr, num_sge),
               "ibv_recv_wr and iwarp_recv_wr differ");
_Static_assert((int)IBV_SEND_FENCE == (int)IWARP_SEND_FENCE &&
                   (int)IBV_SEND_SIGNALED == (int)IWARP_SEND_SIGNALED &&
                   (int)IBV_SEND_SOLICITED == (int)IWARP_SEND_SOLICITED &&
                   (int)IBV_SEND_INLINE == (int)IWARP_SEND_INLINE,
               "send flag numbering differs");

#define POST_BATCH 16
#define SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)

static int post_errno(int rc)
{
    switch (rc) {
    case IWARP_ERR_STATE:
        return ENOTCONN;
    case IWARP_ERR_NOTSUP:
        return EINVAL; /* SEND_WITH_IMM: siw's "wr type unsupported" */
    default:
        return iwd_errno(rc);
    }
}

/* One WR; EINVAL for what has no libiwarp equivalent. */
static int convert_send(const struct ibv_send_wr *w, struct iwarp_send_wr *o)
{
    memset(o, 0, sizeof *o);
    o->wr_id = w->wr_id;
    o->sg_list = (struct iwarp_sge *)w->sg_list;
    o->num_sge = w->num_sge;
    if (w->send_flags & ~(unsigned int)SEND_FLAGS)
        return EINVAL; /* IP_CSUM: no raw packet QPs */
    o->send_flags = w->send_flags;
    switch (w->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
        o->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
        o->wr.rdma.rkey = w->wr.rdma.rkey;
        o->imm_data = w->imm_data; /* four opaque octets, network order as verbs has them */
        break;
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        o->imm_data = w->imm_data;
        break;
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_LOCAL_INV:
        o->invalidate_rkey = w->invalidate_rkey;
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        o->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
        o->wr.atomic.compare_add = w->wr.atomic.compare_add;
        o->wr.atomic.swap = w->wr.atomic.swap;
        o->wr.atomic.rkey = w->wr.atomic.rkey;
        break;
    case IBV_WR_BIND_MW:
        if (!w->bind_mw.mw || !w->bind_mw.bind_info.mr)
            return EINVAL;
        o->bind_mw.mw = ((struct iwd_mw *)w->bind_mw.mw)->imw;
        o->bind_mw.rkey = w->bind_mw.rkey;
        o->bind_mw.bind_info.mr = ((struct iwd_mr *)w->bind_mw.bind_info.mr)->imr;
        o->bind_mw.bind_info.addr = w->bind_mw.bind_info.addr;
        o->bind_mw.bind_info.length = w->bind_mw.bind_info.length;
        o->bind_mw.bind_info.mw_access_flags = w->bind_mw.bind_info.mw_access_flags;
        break;
    default:
        /* TSO, DRIVER1, ATOMIC_WRITE and anything unknown. Opcodes above 11 mean other
         * things to libiwarp, so they never pass through. */
        return EINVAL;
    }
    o->opcode = (enum iwarp_wr_opcode)w->opcode;
    return 0;
}

/* After a successful type-2 bind the window's rkey is the new one (as libiwarp's). */
static void after_post(struct ibv_send_wr *first, int n)
{
    struct ibv_send_wr *w = first;

    for (int k = 0; k < n; k++, w = w->next)
        if (w->opcode == IBV_WR_BIND_MW)
            w->bind_mw.mw->rkey = w->bind_mw.rkey;
}

/**
 * iwd_op_post_send - context->ops.post_send: 0, or an errno with *bad_wr the first WR not
 * posted (those before it are posted).
 */
int iwd_op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
    struct iwarp_send_wr batch[POST_BATCH];
    struct ibv_send_wr *w = wr;

    if (!qp || !wr) {
        if (bad_wr)
            *bad_wr = wr;
        return EINVAL;
    }
    while (w) {
        struct ibv_send_wr *first = w;
        struct iwarp_send_wr *ibad = NULL;
        int n = 0, conv_err = 0, rc;

        for (; w && n < POST_BATCH; w = w->next, n++) {
            conv_err = convert_send(w, &batch[n]);
            if (conv_err)
                break;
            batch[n].next = NULL;
            if (n)
                batch[n - 1].next = &batch[n];
        }
        if (n) {
            rc = iwarp_post_send(((struct iwd_qp *)qp)->iqp, batch, &ibad);
            if (rc) {
                int posted = ibad ? (int)(ibad - batch) : 0;

                after_post(first, posted);
                w = first;
                for (int k = 0; k < posted; k++)
                    w = w->next;
                if (bad_wr)
                    *bad_wr = w;
                return post_errno(rc);
            }
            after_post(first, n);
        }
        if (conv_err) {
            if (bad_wr)
                *bad_wr = w;
            return conv_err;
        }
    }
    if (bad_wr)
        *bad_wr = NULL;
    return 0;
}

/**
 * iwd_op_post_recv - context->ops.post_recv: 0, or an errno with *bad_wr set (EINVAL on a QP
 * with an SRQ, as siw).
 */
int iwd_op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
    struct iwarp_recv_wr *ibad = NULL;
    int rc;

    if (!qp || !wr) {
        if (bad_wr)
            *bad_wr = wr;
        return EINVAL;
    }
    rc = iwarp_post_recv(((struct iwd_qp *)qp)->iqp, (struct iwarp_recv_wr *)wr, &ibad);
    if (bad_wr)
        *bad_wr = (struct ibv_recv_wr *)ibad;
    return rc ? post_errno(rc) : 0;
}

/**
 * iwd_op_post_srq_recv - context->ops.post_srq_recv: as post_recv, to the SRQ.
 */
int iwd_op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
    struct iwarp_recv_wr *ibad = NULL;
    int rc;

    if (!srq || !wr) {
        if (bad_wr)
            *bad_wr = wr;
        return EINVAL;
    }
    rc = iwarp_post_srq_recv(iwd_srq(srq), (struct iwarp_recv_wr *)wr, &ibad);
    if (bad_wr)
        *bad_wr = (struct ibv_recv_wr *)ibad;
    return rc ? post_errno(rc) : 0;
}
