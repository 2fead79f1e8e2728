/* SPDX-License-Identifier: BSD-2-Clause */
/* Receive queue entries, RQ rings and shared receive queues (see core_srq.h). */
#include "core/core_srq.h"

#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "util/ring.h"

int iwarp_core_rqe_from_wr(struct iwarp_core_rqe *rqe, const struct iwarp_recv_wr *wr,
                           uint32_t max_sge, const struct iwarp_mem_table *mem, uint32_t pd)
{
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge > 0 && !wr->sg_list))
        return IWARP_ERR_INVAL;
    /* RFC 5040 §5.3: untagged data is placed only into buffers the ULP posted; they must be
     * writable local memory of the stream's PD. */
    int rc = iwarp_core_sge_resolve(mem, pd, IWARP_MEM_ACCESS_LOCAL_WRITE, wr->sg_list,
                                    (uint32_t)wr->num_sge, rqe->iov, &rqe->held, &rqe->len);
    if (rc != 0)
        return rc;
    rqe->wr_id = wr->wr_id;
    rqe->nsge = (uint32_t)wr->num_sge;
    return 0;
}

void iwarp_core_rqe_hold(struct iwarp_core_rqe *rqe, struct iwarp_mem_table *mem, bool hold)
{
    if (hold)
        iwarp_core_held_take(&rqe->held, mem);
    else
        iwarp_core_held_release(&rqe->held, mem);
}

int iwarp_core_rq_init(struct iwarp_core_rq *rq, struct iwarp_core_rqe *ring, uint32_t cap,
                       uint32_t max_sge)
{
    if (!rq || (cap && !ring) || max_sge > IWARP_CORE_MAX_SGE)
        return IWARP_ERR_INVAL;
    *rq = (struct iwarp_core_rq){.ring = ring, .cap = cap, .max_sge = max_sge};
    return 0;
}

int iwarp_core_rq_push(struct iwarp_core_rq *rq, const struct iwarp_core_rqe *rqe)
{
    if (rq->count == rq->cap)
        return IWARP_ERR_NOSPC;
    rq->ring[iwarp_ring_slot(rq->head, rq->count, rq->cap)] = *rqe;
    rq->count++;
    return 0;
}

bool iwarp_core_srq_take(struct iwarp_core_srq *srq, struct iwarp_core_rqe *out)
{
    struct iwarp_core_rqe *e = iwarp_core_rq_peek(&srq->rq);
    if (!e)
        return false;
    *out = *e;
    iwarp_core_rq_pop(&srq->rq);
    /* ibv_modify_srq(3): the limit event fires once when fewer than srq_limit WRs remain, and
     * the limit is then disarmed until set again. */
    if (srq->limit && srq->rq.count < srq->limit) {
        srq->limit = 0;
        srq->limit_fired = true;
    }
    return true;
}
