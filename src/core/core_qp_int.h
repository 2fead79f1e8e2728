/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Functions shared by the QP engine's files (core_qp.c: posting, state, completions;
 * core_qp_tx.c: transmit; core_qp_rx.c: receive). Not used outside src/core.
 */
#ifndef IWARP_CORE_CORE_QP_INT_H
#define IWARP_CORE_CORE_QP_INT_H

#include "core/core_qp.h"
#include "mem/mem_access.h"
#include "util/ring.h"

/* The SQ slot index of the i-th posted entry after sq_head. */
static inline uint32_t iwarp_core_sq_slot(const struct iwarp_core_qp *qp, uint32_t i)
{
    return iwarp_core_stream_sq_slot(&qp->stream, i);
}

/* A tagged access of len octets at stag/to needing the rights in need, made on this QP's
 * stream: its PD, and the QP itself for type-2 windows (RFC 5040 §7.2 checks 4a-4e). */
static inline struct iwarp_mem_req iwarp_core_qp_mem_req(const struct iwarp_core_qp *qp,
                                                         uint32_t stag, uint64_t to, uint64_t len,
                                                         uint32_t need)
{
    return (struct iwarp_mem_req){
        .stag = stag, .to = to, .len = len, .need = need, .pd = qp->cfg.pd, .qp = qp->cfg.qp_num};
}

/*
 * Mark SQ slot index finished with status (vendor_err: the Terminate cause on errors) and
 * report completions for the oldest finished entries, in posting order (send queue
 * completions never overtake each other; a Write after a Read completes after it).
 */
void iwarp_core_qp_sq_finish(struct iwarp_core_qp *qp, uint32_t index, uint8_t status,
                             uint32_t vendor_err);

/* Report a receive completion on the recv CQ (solicited: the Send carried SE). */
void iwarp_core_qp_recv_complete(struct iwarp_core_qp *qp, uint64_t wr_id, uint8_t status,
                                 uint32_t byte_len, uint32_t vendor_err, bool with_inv,
                                 uint32_t inv_rkey, bool solicited);

/* Report the receive completion of an Immediate Data message (solicited: with SE). */
void iwarp_core_qp_recv_imm_complete(struct iwarp_core_qp *qp, uint64_t wr_id,
                                     const struct iwarp_rdmap_imm *imm, bool solicited);

/* Report an async event through the QP's hook. */
void iwarp_core_qp_event(struct iwarp_core_qp *qp, int event_type, uint32_t cause, bool from_peer);

/* The receive for queue 0's current message: the RQ's oldest entry or the SRQ entry pulled
 * for it. NULL when none is posted. */
struct iwarp_core_rqe *iwarp_core_qp_cur_rqe(struct iwarp_core_qp *qp);
/* Consume that receive (after its completion was reported). */
void iwarp_core_qp_pop_rqe(struct iwarp_core_qp *qp);

/* Flush the SQ if a flush waits for the LLP to give back every produced segment. */
void iwarp_core_qp_sq_flush_if_idle(struct iwarp_core_qp *qp);

/* Receive side set-up at iwarp_core_qp_start (core_qp_rx.c): post the DDP queue 1 buffers
 * (one per IRD slot) and the queue 2 buffer (one Terminate). */
void iwarp_core_qp_rx_start(struct iwarp_core_qp *qp);

/* An IRQ entry has been answered completely (core_qp_tx.c calls this): its DDP queue 1 slot is
 * free for the next Read or Atomic Request (core_qp_rx.c). */
void iwarp_core_qp_rx_read_slot_free(struct iwarp_core_qp *qp);

/* Whether an SQ entry's opcode is an RFC 7306 atomic (it waits for its Atomic Response). */
bool iwarp_core_qp_is_atomic(uint8_t wr_opcode);

/* A valid Terminate arrived (core_qp_rx.c calls this; core_qp.c): enter TERMINATING, report
 * the async event with the peer's cause, flush, and ask the LLP to close. */
void iwarp_core_qp_peer_terminated(struct iwarp_core_qp *qp, struct iwarp_term_cause cause);

#endif
