/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion channels and completion queues: polling converts libiwarp's 64-octet completions
 * into ibv_wc entries through a small array on the stack (no allocation). */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The verbs prefix of iwarp_wc is ibv_wc's, field for field (verbs.h says so; check it). */
_Static_assert(offsetof(struct iwarp_wc, qp_num) == offsetof(struct ibv_wc, qp_num) &&
                   offsetof(struct iwarp_wc, wc_flags) == offsetof(struct ibv_wc, wc_flags) &&
                   offsetof(struct iwarp_wc, dlid_path_bits) ==
                       offsetof(struct ibv_wc, dlid_path_bits),
               "iwarp_wc's verbs prefix differs from ibv_wc");
_Static_assert((int)IWARP_WC_WITH_INV == (int)IBV_WC_WITH_INV &&
                   (int)IWARP_WC_WITH_IMM == (int)IBV_WC_WITH_IMM &&
                   (int)IWARP_WC_RECV_RDMA_WITH_IMM == (int)IBV_WC_RECV_RDMA_WITH_IMM,
               "completion numbering differs");

/**
 * ibv_create_comp_channel - a completion channel whose fd is libiwarp's (pollable, may be made
 * O_NONBLOCK); NULL with errno on failure.
 */
IWD_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    struct iwd_comp_channel *ch;
    int rc;

    if (!context)
        return iwd_fail_null(EINVAL);
    ch = calloc(1, sizeof *ch);
    if (!ch)
        return iwd_fail_null(ENOMEM);
    rc = iwarp_create_comp_channel(to_ictx(context)->ictx, &ch->ich);
    if (rc) {
        free(ch);
        return iwd_fail_null(iwd_errno(rc));
    }
    ch->ch.context = context;
    ch->ch.fd = ch->ich->fd;
    ch->ch.refcnt = 0;
    return &ch->ch;
}

/**
 * ibv_destroy_comp_channel - 0, EINVAL (NULL) or EBUSY (CQs still use it).
 */
IWD_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct iwd_comp_channel *ch = (struct iwd_comp_channel *)channel;
    int rc;

    if (!channel)
        return EINVAL;
    rc = iwarp_destroy_comp_channel(ch->ich);
    if (rc)
        return iwd_errno(rc);
    free(ch);
    return 0;
}

/**
 * ibv_create_cq - a CQ of cqe entries (1 .. max_cqe); NULL with errno EINVAL (bad size, a
 * comp_vector other than 0, a channel of another process context) or ENOMEM.
 */
IWD_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                        struct ibv_comp_channel *channel, int comp_vector)
{
    struct iwd_cq *c;
    int rc;

    if (!context || cqe < 1 || comp_vector < 0 || comp_vector >= context->num_comp_vectors)
        return iwd_fail_null(EINVAL);
    c = calloc(1, sizeof *c);
    if (!c)
        return iwd_fail_null(ENOMEM);
    /* libiwarp's cq_context is the wrapper: iwarp_get_cq_event hands it back. */
    rc = iwarp_create_cq(to_ictx(context)->ictx, cqe, c,
                         channel ? ((struct iwd_comp_channel *)channel)->ich : NULL, 0, &c->icq);
    if (rc) {
        free(c);
        return iwd_fail_null(iwd_errno(rc));
    }
    if (iwd_obj_add(c->icq, c)) {
        iwarp_destroy_cq(c->icq);
        free(c);
        return iwd_fail_null(ENOMEM);
    }
    c->cq.context = context;
    c->cq.channel = channel;
    c->cq.cq_context = cq_context;
    c->cq.cqe = cqe;
    c->cq.handle = (uint32_t)(uintptr_t)c->icq;
    pthread_mutex_init(&c->cq.mutex, NULL);
    pthread_cond_init(&c->cq.cond, NULL);
    return &c->cq;
}

/**
 * ibv_destroy_cq - 0, EINVAL (NULL) or EBUSY (QPs use it, events not acknowledged).
 */
IWD_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
    struct iwd_cq *c = (struct iwd_cq *)cq;
    int rc;

    if (!cq)
        return EINVAL;
    rc = iwarp_destroy_cq(c->icq);
    if (rc)
        return iwd_errno(rc);
    iwd_obj_del(c->icq);
    pthread_mutex_destroy(&c->cq.mutex);
    pthread_cond_destroy(&c->cq.cond);
    free(c);
    return 0;
}

/**
 * ibv_resize_cq - not supported by libiwarp: EOPNOTSUPP (EINVAL for NULL).
 */
IWD_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    (void)cqe;
    return cq ? EOPNOTSUPP : EINVAL;
}

/**
 * iwd_cq - see dropin.h.
 */
struct iwarp_cq *iwd_cq(struct ibv_cq *cq)
{
    return cq ? ((struct iwd_cq *)cq)->icq : NULL;
}

static void convert_wc(const struct iwarp_wc *i, struct ibv_wc *w)
{
    w->wr_id = i->wr_id;
    w->status = (enum ibv_wc_status)i->status;
    w->opcode = (enum ibv_wc_opcode)i->opcode;
    w->vendor_err = i->vendor_err;
    w->byte_len = i->byte_len;
    /* imm_data: the four octets as they came, which is ibv_wc's big-endian __be32. */
    w->imm_data = i->imm_data;
    w->qp_num = i->qp_num;
    w->src_qp = i->src_qp;
    w->wc_flags = i->wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
    w->pkey_index = i->pkey_index;
    w->slid = i->slid;
    w->sl = i->sl;
    w->dlid_path_bits = i->dlid_path_bits;
}

#define POLL_BATCH 16

/**
 * iwd_op_poll_cq - context->ops.poll_cq: up to num_entries completions, or -1 (a NULL CQ,
 * num_entries < 0, wc NULL), as providers answer.
 */
int iwd_op_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    struct iwarp_wc iwc[POLL_BATCH];
    int done = 0;

    if (!cq || num_entries < 0 || (!wc && num_entries > 0))
        return -1;
    while (done < num_entries) {
        int want = num_entries - done < POLL_BATCH ? num_entries - done : POLL_BATCH;
        int n = iwarp_poll_cq(((struct iwd_cq *)cq)->icq, want, iwc);

        if (n < 0)
            return done ? done : -1;
        for (int k = 0; k < n; k++)
            convert_wc(&iwc[k], &wc[done + k]);
        done += n;
        if (n < want)
            break;
    }
    return done;
}

/**
 * iwd_op_req_notify_cq - context->ops.req_notify_cq: 0 or EINVAL.
 */
int iwd_op_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    if (!cq)
        return EINVAL;
    return iwd_ret(iwarp_req_notify_cq(((struct iwd_cq *)cq)->icq, solicited_only));
}

/**
 * ibv_get_cq_event - the next CQ event of the channel; blocks unless its fd is O_NONBLOCK
 * (then -1 with errno EAGAIN). -1 with errno EINVAL for NULL arguments.
 */
IWD_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                                void **cq_context)
{
    struct iwarp_cq *icq;
    void *wrapper = NULL;
    int rc;

    if (!channel || !cq) {
        errno = EINVAL;
        return -1;
    }
    rc = iwarp_get_cq_event(((struct iwd_comp_channel *)channel)->ich, &icq, &wrapper);
    if (rc) {
        errno = rc == IWARP_ERR_BUSY ? EAGAIN : iwd_errno(rc);
        return -1;
    }
    *cq = &((struct iwd_cq *)wrapper)->cq;
    if (cq_context)
        *cq_context = (*cq)->cq_context;
    return 0;
}

/**
 * ibv_ack_cq_events - acknowledge nevents events of cq (a NULL cq is ignored).
 */
IWD_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    if (cq)
        iwarp_ack_cq_events(((struct iwd_cq *)cq)->icq, nevents);
}
