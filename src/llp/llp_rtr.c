/* SPDX-License-Identifier: BSD-2-Clause */
/* RFC 6581 RTR indications and the QP's MSNs (see llp_rtr.h). */
#include "llp/llp_rtr.h"

#include <string.h>

#include "iwarp/errors.h"
#include "wire/wire_mpa.h"

int iwarp_llp_rtr_build(struct iwarp_core_qp *qp, uint8_t rtr, struct iwarp_core_tx_seg *seg)
{
    /* RFC 6581 §9.2: a zero-length Send, RDMA Write or RDMA Read, as negotiated. */
    struct iwarp_wire_msg m = {.last = true};
    switch (rtr) {
    case IWARP_MPA_RTR_WRITE:
        m.opcode = IWARP_RDMAP_OP_WRITE;
        m.stag = IWARP_LLP_RTR_STAG;
        break;
    case IWARP_MPA_RTR_SEND:
        m.opcode = IWARP_RDMAP_OP_SEND;
        m.msn = qp->send_msn; /* RFC 5041 §4.3: queue 0's next MSN */
        break;
    case IWARP_MPA_RTR_READ:
        m.opcode = IWARP_RDMAP_OP_READ_REQ;
        m.msn = qp->read_msn; /* queue 1's next MSN */
        m.body.read_req.sink_stag = IWARP_LLP_RTR_STAG;
        m.body.read_req.src_stag = IWARP_LLP_RTR_STAG;
        break;
    default:
        return IWARP_ERR_INVAL;
    }
    memset(seg, 0, sizeof *seg);
    iwarp_ssize n = iwarp_wire_segment_encode_hdr(seg->hdr, sizeof seg->hdr, &m);
    if (n < 0)
        return (int)n;
    seg->hdr_len = (uint32_t)n;
    seg->src = IWARP_CORE_TX_NONE;
    seg->last = true;
    if (rtr == IWARP_MPA_RTR_SEND)
        qp->send_msn++;
    else if (rtr == IWARP_MPA_RTR_READ)
        qp->read_msn++;
    return 0;
}

int iwarp_llp_rtr_consume_send(struct iwarp_core_qp *qp, const struct iwarp_wire_segment *s,
                               struct iwarp_term_cause *cause)
{
    /* RFC 6581 §9.2, RFC 5041 §7.1: the RTR is queue 0's first message, complete in itself,
     * and consumes no posted receive (ddp_rx_untagged.h). */
    int rc = iwarp_ddp_rx_uq_skip(&qp->uq_send, &s->ddp, (uint32_t)s->payload_len, cause);
    if (rc == IWARP_ERR_INVAL && cause != NULL) /* not a zero-length untagged Send: unreachable
                                                   after iwarp_mpa_neg_first_fpdu() */
        *cause = (struct iwarp_term_cause){IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_CATASTROPHIC,
                                           0x00};
    return rc;
}

bool iwarp_llp_rtr_is_read_answer(const struct iwarp_wire_segment *s)
{
    return s->opcode == IWARP_RDMAP_OP_READ_RESP && s->ddp.tagged && s->ddp.last &&
           s->payload_len == 0 && s->ddp.stag == IWARP_LLP_RTR_STAG && s->ddp.to == 0;
}
