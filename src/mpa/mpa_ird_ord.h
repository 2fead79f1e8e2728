/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RFC 6581 §9.1 IRD/ORD negotiation and the §9.2 responder RTR set, transport-neutral: the same
 * rules serve the MPA Request/Reply (src/mpa/mpa_negotiate) and the SCTP Enhanced Initiate/
 * Accept (src/session/session_ctl, RFC 6581 §7). Pure functions; 0x3FFF
 * (IWARP_MPA_IRD_ORD_NONE) means "no automatic negotiation" on either side.
 */
#ifndef IWARP_MPA_MPA_IRD_ORD_H
#define IWARP_MPA_MPA_IRD_ORD_H

#include <stdbool.h>
#include <stdint.h>

/* The responder's outcome: its local values and what its Reply/Accept word carries. */
struct iwarp_ird_ord_answer {
    uint16_t ird, ord;           /* the responder's local IRD/ORD to use */
    uint16_t ird_sent, ord_sent; /* the values for the word (0x3FFF where §9.1 says so) */
};

/*
 * Responder (RFC 6581 §9.1): from the initiator's IRD/ORD and the responder's own resources
 * (ird, ord <= 0x3FFF). An initiator ORD of 0x3FFF (or our IRD 0x3FFF) leaves our IRD as is and
 * sends 0x3FFF; likewise the initiator IRD for our ORD. Our ORD is at most the initiator IRD.
 * read_rtr: a zero-length Read RTR is possible, so an IRD of 0 becomes 1 (§9.1 "MAY be
 * increased").
 */
void iwarp_ird_ord_respond(uint16_t peer_ird, uint16_t peer_ord, uint16_t ird, uint16_t ord,
                           bool read_rtr, struct iwarp_ird_ord_answer *out);

/*
 * Initiator (RFC 6581 §9.1): from our offered ird/ord and the responder's word, our final
 * values: ORD at most the responder IRD (unchanged on 0x3FFF), IRD as offered.
 * Returns 0, or IWARP_ERR_MPA_IRD_ORD when the responder ORD exceeds our IRD (§9.1: TERM 2/0/6).
 */
int iwarp_ird_ord_complete(uint16_t ird, uint16_t ord, uint16_t resp_ird, uint16_t resp_ord,
                           uint16_t *ird_out, uint16_t *ord_out);

/* Responder (RFC 6581 §9.2): the RTR types to set in a reply to A=1: each offered type we
 * support, or, when none matches, every type we support. */
uint8_t iwarp_rtr_reply_set(uint8_t offered, uint8_t supported);

#endif
