/* SPDX-License-Identifier: BSD-2-Clause */
/* RFC 6581 §9.1 IRD/ORD negotiation and §9.2 responder RTR set (MPA and SCTP). */
#include "mpa/mpa_ird_ord.h"

#include "iwarp/errors.h"
#include "wire/wire.h"
#include "wire/wire_mpa.h"

#define NONE IWARP_MPA_IRD_ORD_NONE

void iwarp_ird_ord_respond(uint16_t peer_ird, uint16_t peer_ord, uint16_t ird, uint16_t ord,
                           bool read_rtr, struct iwarp_ird_ord_answer *out)
{
    /* RFC 6581 §9.1: an initiator ORD of 0x3FFF leaves our IRD unchanged and is answered with
     * IRD 0x3FFF; likewise IRD 0x3FFF -> our ORD unchanged, ORD 0x3FFF. */
    out->ird = ird;
    out->ird_sent = NONE;
    if (peer_ord != NONE && ird != NONE) {
        /* RFC 6581 §9.1: the responder IRD "MAY be increased ... if the initiator ORD is 0 ...
         * and the responder supports use of a zero-length RDMA Read RTR indication, then the
         * responder IRD can be set to 1". */
        if (out->ird == 0 && read_rtr)
            out->ird = 1;
        out->ird_sent = out->ird;
    }
    out->ord = ord;
    out->ord_sent = NONE;
    if (peer_ird != NONE && ord != NONE) {
        /* RFC 6581 §9.1: "The responder MUST set its ORD at most to the initiator IRD." */
        if (out->ord > peer_ird)
            out->ord = peer_ird;
        out->ord_sent = out->ord;
    }
}

int iwarp_ird_ord_complete(uint16_t ird, uint16_t ord, uint16_t resp_ird, uint16_t resp_ord,
                           uint16_t *ird_out, uint16_t *ord_out)
{
    /* RFC 6581 §9.1: "the initiator MUST set ... its ORD at most to the responder IRD"; it
     * leaves its ORD unchanged on a responder IRD of 0x3FFF. */
    *ord_out = ord;
    if (resp_ird != NONE && ord != NONE && resp_ird < ord)
        *ord_out = resp_ird;
    /* RFC 6581 §9.1: "the initiator MUST set its IRD at least to the responder ORD ... If the
     * initiator does not have sufficient resources ... TERM ... Error Code 6"; IRD is left
     * unchanged on a responder ORD of 0x3FFF. The offered IRD is our resource. */
    *ird_out = ird;
    if (resp_ord != NONE && ird != NONE && resp_ord > ird)
        return IWARP_ERR_MPA_IRD_ORD;
    return 0;
}

uint8_t iwarp_rtr_reply_set(uint8_t offered, uint8_t supported)
{
    /* RFC 6581 §9.2: set each initiator-offered type we support (SHOULD); when none matches,
     * "MUST set at least one RTR indication type option it supports". */
    uint8_t both = (uint8_t)(offered & supported);
    return both ? both : supported;
}
