/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion queue ring and arm state (see core_cq.h). */
#include "core/core_cq.h"

#include "iwarp/errors.h"
#include "util/ring.h"

int iwarp_core_cq_init(struct iwarp_core_cq *cq, struct iwarp_wc *ring, uint32_t cap,
                       iwarp_core_cq_notify_fn notify, void *notify_user)
{
    if (!cq || !ring || cap == 0)
        return IWARP_ERR_INVAL;
    *cq = (struct iwarp_core_cq){
        .ring = ring, .cap = cap, .notify = notify, .notify_user = notify_user};
    return 0;
}

int iwarp_core_cq_push(struct iwarp_core_cq *cq, const struct iwarp_wc *wc, bool solicited)
{
    if (cq->count == cq->cap) {
        /* verbs (ibv_create_cq(3)): overrun is an asynchronous CQ error, reported once; the
         * completion is lost, never written past the ring. */
        if (!cq->overrun) {
            cq->overrun = true;
            if (cq->notify)
                cq->notify(cq->notify_user, cq, IWARP_CORE_CQ_OVERRUN);
        }
        return IWARP_ERR_NOSPC;
    }
    cq->ring[iwarp_ring_slot(cq->head, cq->count, cq->cap)] = *wc;
    cq->count++;
    bool fire =
        cq->arm == IWARP_CORE_CQ_ARM_NEXT ||
        (cq->arm == IWARP_CORE_CQ_ARM_SOLICITED && (solicited || wc->status != IWARP_WC_SUCCESS));
    if (fire) {
        cq->arm = IWARP_CORE_CQ_DISARMED; /* one-shot, like ibv_req_notify_cq */
        if (cq->notify)
            cq->notify(cq->notify_user, cq, IWARP_CORE_CQ_FIRED);
    }
    /* A waiter is separate from the application's arm: waiting never consumes or creates a
     * completion-channel event. */
    if (cq->wake) {
        cq->wake = false;
        if (cq->notify)
            cq->notify(cq->notify_user, cq, IWARP_CORE_CQ_WAKE);
    }
    return 0;
}

uint32_t iwarp_core_cq_poll(struct iwarp_core_cq *cq, struct iwarp_wc *out, uint32_t max)
{
    uint32_t n = 0;
    while (n < max && cq->count) {
        out[n++] = cq->ring[cq->head];
        cq->head = iwarp_ring_advance(cq->head, 1, cq->cap);
        cq->count--;
    }
    return n;
}

void iwarp_core_cq_arm(struct iwarp_core_cq *cq, bool solicited_only)
{
    /* A later "next" arm widens a solicited one; a solicited arm never narrows "next". */
    if (!solicited_only)
        cq->arm = IWARP_CORE_CQ_ARM_NEXT;
    else if (cq->arm == IWARP_CORE_CQ_DISARMED)
        cq->arm = IWARP_CORE_CQ_ARM_SOLICITED;
}
