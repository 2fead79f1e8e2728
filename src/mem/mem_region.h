/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory regions and memory windows on the STag table (L2 mem): register/deregister,
 * allocate-STag + fast-register, window allocate/bind/deallocate, local and remote invalidation.
 * Verbs shapes (api-conventions.md §1-§2): lkey == rkey == STag; access flags as ibv_access_flags;
 * window types as ibv_mw_type. PDs and QPs are opaque 32-bit handles of the layer above. Pure:
 * no allocation, no locks (the caller holds the table's lock).
 *
 * TO space (RFC 5040 §5.1 "The Tagged Offset of a Tagged Buffer MAY start at a non-zero value"):
 * a region maps TOs [iova, iova + length) to local memory [addr, addr + length). ibv_reg_mr gives
 * a VA-based region (iova = addr: the peer sends the VA as TO); ibv_reg_mr_iova with iova = 0 a
 * zero-based one. A window is a TO subrange of its MR and uses the MR's TO space (bind addr is
 * a TO of the MR, as ibv_mw_bind_info.addr).
 *
 * Window rules (libibverbs/IBTA semantics, which RFC 5040 leaves to the interface):
 *  - the MR must be VALID, in the window's PD, and registered with IWARP_MEM_ACCESS_MW_BIND;
 *  - a window carries remote rights only, never wider than the memory under it allows: remote
 *    read always (local read is implicit on every MR), remote write and remote atomic only if
 *    the MR has local write (what the MR lets anyone write; IBTA C10-74 as Linux rxe checks it);
 *  - [addr, addr + length) lies inside the MR's TO range;
 *  - type 1: bound by a verb, usable on every stream of its PD; each bind picks a new key (the
 *    old STag dies), and a zero-length bind unbinds (invalidates) it. Never invalidated by
 *    Local Invalidate or Send with Invalidate (ibv_alloc_mw(3): type 1 is invalidated by a
 *    zero-length bind, type 2 by LOCAL_INV / SEND_WITH_INV);
 *  - type 2: bound by a work request posted on a QP, to that QP only (RFC 5042 §2.2.5 "single
 *    Stream scope", RFC 5041 §8.2 stream association); bound only while INVALID, with the new
 *    key the consumer chose (ibv_inc_rkey), never with zero length, invalidated locally or by
 *    the peer of that QP; the QP's PD must be the window's;
 *  - an MR with bound windows cannot be deregistered (ibv_alloc_mw(3) NOTES) or invalidated
 *    (IWARP_ERR_BUSY): a window must never outlive the memory it names. Deallocating a bound
 *    window unbinds it.
 *
 * Remote invalidation (Send with Invalidate, Send with SE and Invalidate; RFC 5040 §5.3, §7.2
 * checks 4-5): the Invalidate STag must be valid and associated with the RDMAP stream it arrived
 * on, else "STag cannot be Invalidated" (code 0x09). RFC 5040 Figure 9 lists 0x09 under both
 * Remote Protection (EType 1) and Remote Operation (EType 2) without saying which applies when;
 * libiwarp chooses, as Linux siw does (siw_qp_rx.c rdmap_rx_complete: -EACCES -> 0/1/0x09,
 * other failures -> 0/2/0x09):
 *  - 0/2/0x09 Remote Operation: there is no valid STag to invalidate, i.e. check 4 fails (index
 *    not allocated, wrong key, already invalid); also an MR that still has windows bound (the
 *    operation is not possible in the object's state);
 *  - 0/1/0x09 Remote Protection: the STag is valid but this stream may not invalidate it:
 *    another PD (check 5; RFC 5042 §2.2.4), a type-2 window bound to another QP (check 5), a
 *    type-1 window, or an MR without any remote right (it was never Advertised, so remote
 *    invalidation - "prevent the Remote Peer from reusing a previous explicitly Advertised STag",
 *    RFC 5040 §2.4 - has no object; RFC 5042 §6.4.5 leaves STags shared by streams of one PD to
 *    the ULP's trust, so PD association is the check).
 * Local invalidation accepts an already-invalid STag (verbs semantics; nothing to undo).
 */
#ifndef IWARP_MEM_MEM_REGION_H
#define IWARP_MEM_MEM_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/mem_stag.h"
#include "wire/wire.h"

/* Memory given to reg_mr and fast-register. */
struct iwarp_mem_range {
    uint64_t addr;   /* local address of the first byte */
    uint64_t iova;   /* its TO: addr for ibv_reg_mr (VA-based), 0 for zero-based */
    uint64_t length; /* > 0; neither addr + length nor iova + length may wrap 64 bits */
    uint32_t access; /* IWARP_MEM_ACCESS_*; REMOTE_WRITE or REMOTE_ATOMIC need LOCAL_WRITE */
};

/* A window bind (ibv_mw_bind_info plus the WR's new rkey). */
struct iwarp_mem_bind {
    uint32_t mr_stag;  /* the MR (ignored for a zero-length type-1 bind) */
    uint64_t addr;     /* first TO of the window, in the MR's TO space */
    uint64_t length;   /* bytes; 0 unbinds a type-1 window */
    uint32_t access;   /* remote rights only (IWARP_MEM_ACCESS_REMOTE_*) */
    uint32_t new_stag; /* type 2: the window's STag after the bind; same index, new key */
};

/*
 * Register a memory region (ibv_reg_mr / ibv_reg_mr_iova): allocate an STag and make it VALID.
 * pd: owner PD. r: memory, TO base and rights. stag: receives lkey == rkey.
 * Returns 0, IWARP_ERR_INVAL (zero length, wrap, unknown flags, REMOTE_WRITE/REMOTE_ATOMIC
 * without LOCAL_WRITE: ibv_reg_mr(3)), IWARP_ERR_STAG_EXHAUSTED.
 */
int iwarp_mem_reg_mr(struct iwarp_mem_table *t, uint32_t pd, const struct iwarp_mem_range *r,
                     uint32_t *stag);

/*
 * Allocate an MR STag without memory (RFC 5040 §2.1 STag; ibv_alloc_mr for fast
 * registration): INVALID until iwarp_mem_fast_reg().
 * Returns 0, IWARP_ERR_INVAL, IWARP_ERR_STAG_EXHAUSTED.
 */
int iwarp_mem_alloc_stag(struct iwarp_mem_table *t, uint32_t pd, uint32_t *stag);

/*
 * Fast-register (siw SIW_OP_REG_MR, IB_WR_REG_MR): give an allocate_stag MR memory and rights
 * and make it VALID under new_stag (same index; key chosen by the consumer, ibv_inc_rkey).
 * stag: the MR's current STag. pd: PD of the QP the WR was posted on.
 * Returns 0, IWARP_ERR_STAG_INVALID (no such MR STag, or not from alloc_stag),
 * IWARP_ERR_STAG_NOT_ASSOC (PD), IWARP_ERR_STATE (already VALID), IWARP_ERR_INVAL (index of
 * new_stag differs, bad range/flags), IWARP_ERR_STAG_STALE (key of the last valid STag).
 */
int iwarp_mem_fast_reg(struct iwarp_mem_table *t, uint32_t stag, uint32_t pd, uint32_t new_stag,
                       const struct iwarp_mem_range *r);

/*
 * A posted work request names the MR of lkey in an SGE: hold it until the WR completes, so that
 * an MR deregistered meanwhile keeps its index (IWARP_MEM_RETIRED) instead of leaving the WR
 * pointing at an index a new MR may take. Release undoes one hold and frees a RETIRED MR's
 * index with the last one. Only the index counts (fast-registration may change the key
 * meanwhile). Both ignore STags that are not allocated MRs.
 */
void iwarp_mem_hold(struct iwarp_mem_table *t, uint32_t lkey);
void iwarp_mem_release(struct iwarp_mem_table *t, uint32_t lkey);

/* Whether the MR a WR holds (lkey of one of its SGEs) is still registered: false once
 * deregistered (RETIRED). The WR must then not touch its memory, which may be gone. */
bool iwarp_mem_held_usable(const struct iwarp_mem_table *t, uint32_t lkey);

/*
 * Deregister an MR (ibv_dereg_mr) and free its STag; with posted work requests still naming
 * it, the STag goes at once and the index when they have let go (IWARP_MEM_RETIRED).
 * Returns 0, IWARP_ERR_STAG_INVALID (no such MR), IWARP_ERR_BUSY (windows bound to it).
 */
int iwarp_mem_dereg_mr(struct iwarp_mem_table *t, uint32_t stag);

/*
 * Allocate a memory window (ibv_alloc_mw): INVALID until bound.
 * type: IWARP_MEM_MW_TYPE1 or IWARP_MEM_MW_TYPE2.
 * Returns 0, IWARP_ERR_INVAL, IWARP_ERR_STAG_EXHAUSTED.
 */
int iwarp_mem_alloc_mw(struct iwarp_mem_table *t, uint32_t pd, uint8_t type, uint32_t *stag);

/*
 * Deallocate a window (ibv_dealloc_mw); a bound window is unbound first.
 * Returns 0 or IWARP_ERR_STAG_INVALID (no such window).
 */
int iwarp_mem_dealloc_mw(struct iwarp_mem_table *t, uint32_t stag);

/*
 * Bind a window to a subrange of an MR (ibv_bind_mw for type 1, IBV_WR_BIND_MW for type 2).
 * mw_stag: the window's current STag. pd: PD of the QP the bind was posted on. qp: that QP
 * (a type-2 window is bound to it). b: the bind. stag: receives the window's new STag.
 * Returns 0 or: IWARP_ERR_STAG_INVALID (no such window; MR unknown or INVALID),
 * IWARP_ERR_STAG_NOT_ASSOC (window or MR in another PD), IWARP_ERR_MEM_ACCESS (MR without
 * MW_BIND, or rights wider than the memory allows), IWARP_ERR_MEM_BOUNDS (range outside the MR),
 * IWARP_ERR_MEM_TO_WRAP (addr + length wraps), IWARP_ERR_INVAL (non-remote rights, index of
 * new_stag differs, zero-length type-2 bind), IWARP_ERR_STATE (type-2 window already bound),
 * IWARP_ERR_STAG_STALE (type-2 key unchanged or equal to the last valid one). On failure the
 * window is unchanged.
 */
int iwarp_mem_bind_mw(struct iwarp_mem_table *t, uint32_t mw_stag, uint32_t pd, uint32_t qp,
                      const struct iwarp_mem_bind *b, uint32_t *stag);

/*
 * Local invalidate (IWARP_WR_LOCAL_INV, RFC 5040 §6.2): make an MR or type-2
 * window STag INVALID (RFC 5040 §2.4). pd: PD of the QP the WR was posted on.
 * Returns 0 (also when already INVALID) or IWARP_ERR_STAG_INVALID (not allocated, wrong key),
 * IWARP_ERR_STAG_NOT_ASSOC (PD), IWARP_ERR_STAG_CANT_INVAL (type-1 window), IWARP_ERR_BUSY (MR
 * with bound windows).
 */
int iwarp_mem_local_inv(struct iwarp_mem_table *t, uint32_t stag, uint32_t pd);

/*
 * Remote invalidate: the Invalidate STag of a Send with (SE and) Invalidate received on the
 * stream (pd, qp) (RFC 5040 §5.3, §7.2). Rules and cause choice: see the top of this file.
 * cause: filled on failure (RDMAP layer, EType 1 or 2, code 0x09); may be NULL.
 * Returns 0, IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_STAG_CANT_INVAL,
 * IWARP_ERR_BUSY.
 */
int iwarp_mem_remote_inv(struct iwarp_mem_table *t, uint32_t stag, uint32_t pd, uint32_t qp,
                         struct iwarp_term_cause *cause);

#endif
