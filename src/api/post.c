/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The posting loop shared by iwarp_post_send/recv and iwarp_ddp_post_send/recv: one lock, the
 * chain in order until a WR fails, then the transport kicked once (from the posting thread: a
 * hop to the progress thread costs a cross-core wakeup).
 */
#include "api/api_internal.h"
#include "iwarp/errors.h"

int iwarp_api_post_chain(struct iwarp_qp *qp, void *wr, uint32_t qn, iwarp_api_post_fn one,
                         bool kick, void **bad)
{
    *bad = wr;
    if (!qp || !wr)
        return IWARP_ERR_INVAL;
    struct iwarp_qp_impl *q = iwarp_api_qp(qp);
    int rc = 0;
    bool posted = false;
    pthread_mutex_lock(&qp->context->lock);
    while (wr) {
        void *next = NULL;
        rc = one(q, wr, qn, &next);
        if (rc < 0)
            break;
        posted = true;
        wr = next;
    }
    if (kick && posted && q->llp.kick)
        q->llp.kick(q);
    iwarp_api_unlock(qp->context);
    *bad = rc < 0 ? wr : NULL;
    return rc;
}
