/* SPDX-License-Identifier: BSD-2-Clause */
/* Whole-segment decode/validate and encode for DDP segments carrying RDMAP. */
#include "wire/wire_segment.h"

#include <string.h>

#include "iwarp/errors.h"

static int fail(int err, bool tagged, struct iwarp_term_cause *cause)
{
    if (cause)
        (void)iwarp_term_cause_from_err(err, tagged, cause);
    return err;
}

/* Decode the RDMAP header of a message that has one; exactly body_len octets must follow. */
static int decode_body(struct iwarp_wire_segment *s, const uint8_t *p, size_t len)
{
    iwarp_ssize n;
    switch (s->opcode) {
    case IWARP_RDMAP_OP_READ_REQ:
        n = iwarp_rdmap_read_req_decode(p, len, &s->body.read_req);
        break;
    case IWARP_RDMAP_OP_TERMINATE:
        n = iwarp_term_decode(p, len, &s->body.term);
        break;
    case IWARP_RDMAP_OP_IMM_DATA:
    case IWARP_RDMAP_OP_IMM_DATA_SE:
        n = iwarp_rdmap_imm_decode(p, len, &s->body.imm);
        break;
    case IWARP_RDMAP_OP_ATOMIC_REQ:
        n = iwarp_rdmap_atomic_req_decode(p, len, &s->body.atomic_req);
        break;
    case IWARP_RDMAP_OP_ATOMIC_RESP:
        n = iwarp_rdmap_atomic_resp_decode(p, len, &s->body.atomic_resp);
        break;
    default:
        n = 0; /* Write, Read Response, Sends: no RDMAP header */
        break;
    }
    /* RFC 5040 §4.2 Figure 5, RFC 7306 §4.2: these messages carry no ULP payload, so the
     * segment ends with the RDMAP header; RFC 7306 §6.3: Immediate Data MUST be exactly 8. */
    if (n < 0 || (!s->op->payload && (size_t)n != len))
        return IWARP_ERR_RDMAP_LEN;
    s->body_len = (size_t)n;
    return 0;
}

int iwarp_wire_segment_decode(const uint8_t *seg, size_t len, struct iwarp_wire_segment *out,
                              struct iwarp_term_cause *cause)
{
    struct iwarp_wire_segment *s = out;
    memset(s, 0, sizeof *s);
    bool tagged = len > 0 && (seg[0] & IWARP_DDP_FLAG_TAGGED);

    iwarp_ssize h = iwarp_ddp_hdr_decode(seg, len, &s->ddp);
    if (h < 0)
        return fail(IWARP_ERR_DDP_HDR_LEN, tagged, cause);
    s->hdr_len = (size_t)h;

    /* RFC 5041 §4.1: DV "MUST be set to one"; §7.2 Invalid DDP version. */
    if (s->ddp.dv != IWARP_DDP_VERSION)
        return fail(IWARP_ERR_DDP_VERSION, tagged, cause);
    /* RFC 5040 §4.1, §7.2 check 3: RV 01b (00b, the RDMA Consortium version, is not spoken). */
    if (iwarp_rdmap_ctrl_rv(s->ddp.rsvdulp) != IWARP_RDMAP_VERSION)
        return fail(IWARP_ERR_RDMAP_VERSION, tagged, cause);
    /* RFC 5040 §7.2 check 2, Figure 4; RFC 7306 Figure 2: 0xC..0xF are undefined. */
    s->opcode = (uint8_t)iwarp_rdmap_ctrl_opcode(s->ddp.rsvdulp);
    s->op = iwarp_rdmap_opinfo(s->opcode);
    if (!s->op)
        return fail(IWARP_ERR_RDMAP_OPCODE, tagged, cause);
    /* RFC 5040 §4.1: "Figure 4 MUST be used to define the value of the Tagged flag". */
    if (s->op->tagged != s->ddp.tagged)
        return fail(IWARP_ERR_RDMAP_TAGGED, tagged, cause);
    /* RFC 5040 Figure 4, RFC 7306 §5.2/§10.2: each untagged opcode has its queue; RFC 5041
     * §7.1 check 1: "The QN is valid for this stream". */
    if (!s->ddp.tagged && s->ddp.qn != s->op->qn)
        return fail(IWARP_ERR_DDP_QN, tagged, cause);
    if (s->op->single_segment) {
        /* RFC 5041 §4.1: L is set on the last segment; these messages are one segment (their
         * RDMAP header "immediately follows the DDP header", RFC 5040 §4.4/§4.8, RFC 7306
         * §5.2.1/§5.2.2/§6.2, and needs at most 70 octets of a MULPDU >= 128). */
        if (!s->ddp.last)
            return fail(IWARP_ERR_RDMAP_LAST, tagged, cause);
        /* RFC 5041 §4.3: the first octet of a message has MO 0. */
        if (s->ddp.mo != 0)
            return fail(IWARP_ERR_DDP_MO, tagged, cause);
    }
    int rc = decode_body(s, seg + s->hdr_len, len - s->hdr_len);
    if (rc < 0)
        return fail(rc, tagged, cause);

    s->payload = seg + s->hdr_len + s->body_len;
    s->payload_len = len - s->hdr_len - s->body_len;
    if (s->op->inv_stag)
        s->inv_stag = s->ddp.rsvdulp_word; /* RFC 5040 §4.1: octets 2..5 */

    /* Reserved fields: not checked on receive, reported. */
    if (s->ddp.rsvd)
        s->rsvd_set |= IWARP_WIRE_RSVD_DDP;
    if (iwarp_rdmap_ctrl_rsv(s->ddp.rsvdulp))
        s->rsvd_set |= IWARP_WIRE_RSVD_RDMAP;
    if (!s->ddp.tagged && !s->op->inv_stag && s->ddp.rsvdulp_word)
        s->rsvd_set |= IWARP_WIRE_RSVD_INV_STAG;
    if (s->opcode == IWARP_RDMAP_OP_TERMINATE && s->body.term.rsvd)
        s->rsvd_set |= IWARP_WIRE_RSVD_TERM;
    if (s->opcode == IWARP_RDMAP_OP_ATOMIC_REQ && s->body.atomic_req.rsvd)
        s->rsvd_set |= IWARP_WIRE_RSVD_ATOMIC;
    return 0;
}

iwarp_ssize iwarp_wire_segment_encode_hdr(uint8_t *buf, size_t cap, const struct iwarp_wire_msg *m)
{
    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(m->opcode);
    if (!op || (op->single_segment && m->mo != 0))
        return IWARP_ERR_INVAL;

    /* RFC 5040 §4.1 Figure 4 / RFC 7306 Figure 2: T and QN by opcode; RV 1; the Invalidate
     * STag slot is zero except for Send with Invalidate (SE). */
    struct iwarp_ddp_hdr h = {
        .tagged = op->tagged,
        .last = m->last || op->single_segment,
        .dv = IWARP_DDP_VERSION,
        .rsvdulp = iwarp_rdmap_ctrl(m->opcode),
        .stag = m->stag,
        .to = m->to,
        .rsvdulp_word = op->inv_stag ? m->inv_stag : 0,
        .qn = op->qn,
        .msn = m->msn,
        .mo = m->mo,
    };
    iwarp_ssize n = iwarp_ddp_hdr_encode(buf, cap, &h);
    if (n < 0)
        return n;

    uint8_t *p = buf + n;
    size_t room = cap - (size_t)n;
    iwarp_ssize b;
    switch (m->opcode) {
    case IWARP_RDMAP_OP_READ_REQ:
        b = iwarp_rdmap_read_req_encode(p, room, &m->body.read_req);
        break;
    case IWARP_RDMAP_OP_TERMINATE:
        b = iwarp_term_encode(p, room, &m->body.term);
        break;
    case IWARP_RDMAP_OP_IMM_DATA:
    case IWARP_RDMAP_OP_IMM_DATA_SE:
        b = iwarp_rdmap_imm_encode(p, room, &m->body.imm);
        break;
    case IWARP_RDMAP_OP_ATOMIC_REQ:
        b = iwarp_rdmap_atomic_req_encode(p, room, &m->body.atomic_req);
        break;
    case IWARP_RDMAP_OP_ATOMIC_RESP:
        b = iwarp_rdmap_atomic_resp_encode(p, room, &m->body.atomic_resp);
        break;
    default:
        b = 0;
        break;
    }
    if (b < 0)
        return b;
    return n + b;
}

iwarp_ssize iwarp_wire_segment_encode(uint8_t *buf, size_t cap, const struct iwarp_wire_msg *m,
                                      const uint8_t *payload, size_t payload_len)
{
    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(m->opcode);
    /* RFC 5040 §4.2 Figure 5, RFC 7306 §4.2: only Write, Read Response and Sends carry payload. */
    if (op && !op->payload && payload_len > 0)
        return IWARP_ERR_INVAL;
    iwarp_ssize n = iwarp_wire_segment_encode_hdr(buf, cap, m);
    if (n < 0)
        return n;
    if (cap - (size_t)n < payload_len)
        return IWARP_ERR_NOSPC;
    if (payload_len > 0)
        memcpy(buf + n, payload, payload_len);
    return n + (iwarp_ssize)payload_len;
}

void iwarp_wire_msg_from_segment(struct iwarp_wire_msg *m, const struct iwarp_wire_segment *s)
{
    *m = (struct iwarp_wire_msg){
        .opcode = s->opcode,
        .last = s->ddp.last,
        .stag = s->ddp.stag,
        .to = s->ddp.to,
        .msn = s->ddp.msn,
        .mo = s->ddp.mo,
        .inv_stag = s->inv_stag,
        .body = s->body,
    };
    /* A siw bit-reversed Terminate is re-encoded with its meaning, in the RFC layout. */
    if (s->opcode == IWARP_RDMAP_OP_TERMINATE && s->body.term.siw_swapped) {
        m->body.term.ctrl = s->body.term.siw_ctrl;
        m->body.term.siw_swapped = false;
    }
}
