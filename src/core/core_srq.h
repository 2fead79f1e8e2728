/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive work queue entries, and the shared receive queue that several QPs draw them from.
 *
 * A posted receive is validated and resolved when it is posted: each SGE's lkey must name a
 * valid STag of the QP's PD with LOCAL_WRITE over [addr, addr + length) (RFC 5040 §5.3 places
 * untagged data only into posted buffers). The entry then holds plain local iovecs.
 */
#ifndef IWARP_CORE_CORE_SRQ_H
#define IWARP_CORE_CORE_SRQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/core_sge.h"
#include "iwarp/verbs.h"
#include "mem/mem_stag.h"
#include "util/ring.h"

/* One posted receive. */
struct iwarp_core_rqe {
    uint64_t wr_id;
    uint32_t nsge;
    uint32_t len; /* sum of the SGE lengths */
    struct iovec iov[IWARP_CORE_MAX_SGE];
    struct iwarp_core_held held; /* MRs held while posted */
};

/* Hold (post) or release (completion, flush) the MRs a receive names. */
void iwarp_core_rqe_hold(struct iwarp_core_rqe *rqe, struct iwarp_mem_table *mem, bool hold);

/*
 * Check and resolve a receive WR's SGEs into rqe (LOCAL_WRITE in pd, bounds).
 * Returns 0, IWARP_ERR_INVAL (too many SGEs, total over 2^32-1) or the mem error of the
 * first bad SGE.
 */
int iwarp_core_rqe_from_wr(struct iwarp_core_rqe *rqe, const struct iwarp_recv_wr *wr,
                           uint32_t max_sge, const struct iwarp_mem_table *mem, uint32_t pd);

/* A ring of posted receives (the RQ of a QP, or an SRQ). */
struct iwarp_core_rq {
    struct iwarp_core_rqe *ring; /* caller-owned, cap entries */
    uint32_t cap;
    uint32_t head;  /* oldest posted receive */
    uint32_t count; /* posted and not yet taken */
    uint32_t max_sge;
};

int iwarp_core_rq_init(struct iwarp_core_rq *rq, struct iwarp_core_rqe *ring, uint32_t cap,
                       uint32_t max_sge);

/* Append a receive (already resolved). Returns 0 or IWARP_ERR_NOSPC. */
int iwarp_core_rq_push(struct iwarp_core_rq *rq, const struct iwarp_core_rqe *rqe);

/* The oldest receive, or NULL. */
static inline struct iwarp_core_rqe *iwarp_core_rq_peek(struct iwarp_core_rq *rq)
{
    return rq->count ? &rq->ring[rq->head] : 0;
}

/* Remove the oldest receive (after peek). */
static inline void iwarp_core_rq_pop(struct iwarp_core_rq *rq)
{
    rq->head = iwarp_ring_advance(rq->head, 1, rq->cap);
    rq->count--;
}

/* A shared receive queue: a ring plus the one-shot limit event (ibv_modify_srq). */
struct iwarp_core_srq {
    struct iwarp_core_rq rq;
    uint32_t pd;
    uint32_t limit;   /* 0: disarmed; else fire once when count drops below it */
    bool limit_fired; /* set when the event is raised; the caller reports it */
};

/*
 * Take the oldest receive of the SRQ into out. Returns false when the SRQ is empty. Sets
 * srq->limit_fired (and disarms) when the count drops below an armed limit.
 */
bool iwarp_core_srq_take(struct iwarp_core_srq *srq, struct iwarp_core_rqe *out);

#endif
