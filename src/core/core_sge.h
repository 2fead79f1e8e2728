/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The local memory of a work request: its SGEs checked and resolved into iovecs when it is
 * posted, and the MRs they name held until it completes. An MR deregistered in between keeps
 * its index until then (IWARP_MEM_RETIRED), and the engine checks iwarp_core_held_usable before
 * it touches the memory, which the application may have freed. Send WRs of both engines and
 * posted receives use it alike.
 */
#ifndef IWARP_CORE_CORE_SGE_H
#define IWARP_CORE_CORE_SGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iwarp/verbs.h"
#include "mem/mem_stag.h"

/* siw's defaults (docs/interop-siw.md): 6 SGEs per WR, 1 for an RDMA Read sink. */
#define IWARP_CORE_MAX_SGE    6u
#define IWARP_CORE_MAX_SGE_RD 1u

/* The lkeys a work request holds (iwarp_mem_hold), one per SGE of non-zero length. */
struct iwarp_core_held {
    uint32_t lkey[IWARP_CORE_MAX_SGE];
    uint32_t n;
};

/*
 * Check and resolve num_sge (at most IWARP_CORE_MAX_SGE) SGEs: each of non-zero length must be
 * an MR of pd with the local rights need over [addr, addr + length). Fills iov[0..num_sge)
 * (a zero-length SGE gives an empty iovec), notes the lkeys in held (not yet held: see
 * iwarp_core_held_take) and sets *total to the sum of the lengths.
 * Returns 0, IWARP_ERR_INVAL (the total reaches 2^32: RFC 5041 §5.2 caps a message below it)
 * or the mem error of the first bad SGE.
 */
int iwarp_core_sge_resolve(const struct iwarp_mem_table *mem, uint32_t pd, uint32_t need,
                           const struct iwarp_sge *sg, uint32_t num_sge, struct iovec *iov,
                           struct iwarp_core_held *held, uint32_t *total);

/* Hold every MR in h (the request is now posted). */
void iwarp_core_held_take(const struct iwarp_core_held *h, struct iwarp_mem_table *mem);

/* Release every MR in h (the request completed or was flushed); h is empty afterwards, so a
 * second release does nothing. */
void iwarp_core_held_release(struct iwarp_core_held *h, struct iwarp_mem_table *mem);

/* Whether every MR in h is still registered: false once one was deregistered since the post.
 * The request must then fail (IWARP_WC_LOC_PROT_ERR) without touching its memory. */
bool iwarp_core_held_usable(const struct iwarp_core_held *h, const struct iwarp_mem_table *mem);

#endif
