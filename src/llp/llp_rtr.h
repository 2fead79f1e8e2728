/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RFC 6581 ready-to-receive (RTR) indication of the peer-to-peer model, between the MPA
 * connection (llp_conn) and the QP engine, kept consistent with the QP's per-queue MSNs.
 *
 * What each RTR type costs the stream, as Linux siw does it (siw_qp_mpa_rts(): a non-signalled
 * work request that takes no send queue slot, STag 1 because "some HW may treat STag 0
 * special"; siw_proc_write(): a zero-length Write places nothing and checks no STag):
 *   Write  a zero-length tagged RDMA Write, STag 1, TO 0: no MSN on either side.
 *   Send   a zero-length Send: MSN 1 of DDP queue 0 (RFC 5041 §4.3); the responder's queue-0
 *          state moves on to MSN 2 without consuming a posted receive (the RTR belongs to MPA
 *          setup, not to the ULP: no completion). siw itself never sends this type.
 *   Read   a zero-length RDMA Read Request: MSN 1 of DDP queue 1, sink and source STag 1, TO 0,
 *          size 0. The responder's QP engine treats it as any Read Request (one IRQ slot,
 *          RFC 5040 §5.2.1 checks skipped for zero length) and answers it with a zero-length
 *          Read Response, as siw does. siw's initiator puts the RTR in its ORQ; ours keeps the
 *          ORQ for send-queue Reads and instead holds the QP's transmit until the answer is
 *          back (llp_conn_tx.c), so the responder never sees more than ORD Reads outstanding.
 */
#ifndef IWARP_LLP_LLP_RTR_H
#define IWARP_LLP_LLP_RTR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core_qp.h"
#include "wire/wire.h"
#include "wire/wire_segment.h"

/* The STag of zero-length RTRs (siw: STag 0 may be special to some hardware). */
#define IWARP_LLP_RTR_STAG 1u

/*
 * Initiator: build the RTR of type rtr (one IWARP_MPA_RTR_* bit) into seg as a segment the
 * QP did not produce (seg->src IWARP_CORE_TX_NONE: no iwarp_core_qp_tx_sent() for it), and
 * consume the MSN it carries from qp (send_msn for a Send, read_msn for a Read Request).
 * Call after iwarp_core_qp_start() and before the QP produces its first segment.
 * Ownership: nothing is kept.
 * Returns 0, or IWARP_ERR_INVAL when rtr is not exactly one type.
 */
int iwarp_llp_rtr_build(struct iwarp_core_qp *qp, uint8_t rtr, struct iwarp_core_tx_seg *seg);

/*
 * Responder: the initiator's first FPDU s is a zero-length Send RTR that
 * iwarp_mpa_neg_first_fpdu() accepted. Consume it on DDP queue 0 without a receive: it must be
 * the expected MSN (RFC 5041 §7.1 check 5), MO 0 (check 6) and carry L (a zero-length message
 * is one segment, RFC 5041 §5.2). Call after iwarp_core_qp_start().
 * Ownership: nothing is kept.
 * Returns 0, or IWARP_ERR_PROTO with *cause (1/2/0x03 MSN, 1/2/0x04 MO or a missing L); the
 * queue is then unchanged (iwarp_ddp_rx_uq_skip()). IWARP_ERR_INVAL with DDP Local
 * Catastrophic (1/0/0x00) if s is not a zero-length untagged segment.
 */
int iwarp_llp_rtr_consume_send(struct iwarp_core_qp *qp, const struct iwarp_wire_segment *s,
                               struct iwarp_term_cause *cause);

/* Initiator: whether s is the zero-length Read Response answering our Read RTR (tagged, L,
 * no payload, our RTR STag at TO 0). */
bool iwarp_llp_rtr_is_read_answer(const struct iwarp_wire_segment *s);

#endif
