/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP tagged/untagged header codec (RFC 5041 §4). */
#include "wire/wire_ddp.h"

#include "iwarp/errors.h"
#include "util/bytes.h"

iwarp_ssize iwarp_ddp_hdr_decode(const uint8_t *p, size_t len, struct iwarp_ddp_hdr *out)
{
    if (len < 1)
        return IWARP_ERR_SHORT;
    size_t hlen = iwarp_ddp_hdr_len(p[0]);
    if (len < hlen)
        return IWARP_ERR_SHORT;

    /* RFC 5041 §4.1 Figure 3: T(1) L(1) Rsvd(4) DV(2). */
    struct iwarp_ddp_hdr h = {
        .tagged = (p[0] & IWARP_DDP_FLAG_TAGGED) != 0,
        .last = (p[0] & IWARP_DDP_FLAG_LAST) != 0,
        .rsvd = (uint8_t)((p[0] & IWARP_DDP_MASK_RSVD) >> 2),
        .dv = (uint8_t)(p[0] & IWARP_DDP_MASK_DV),
        .rsvdulp = p[1],
    };
    if (h.tagged) {
        /* RFC 5041 §4.2 Figure 4: STag(32) TO(64). */
        h.stag = iwarp_load_be32(p + 2);
        h.to = iwarp_load_be64(p + 6);
    } else {
        /* RFC 5041 §4.3 Figure 5: RsvdULP[8:39] QN(32) MSN(32) MO(32). */
        h.rsvdulp_word = iwarp_load_be32(p + 2);
        h.qn = iwarp_load_be32(p + 6);
        h.msn = iwarp_load_be32(p + 10);
        h.mo = iwarp_load_be32(p + 14);
    }
    *out = h;
    return (iwarp_ssize)hlen;
}

iwarp_ssize iwarp_ddp_hdr_encode(uint8_t *buf, size_t cap, const struct iwarp_ddp_hdr *in)
{
    if (in->dv > IWARP_DDP_MASK_DV)
        return IWARP_ERR_INVAL;
    size_t hlen = in->tagged ? IWARP_DDP_TAGGED_HDR_LEN : IWARP_DDP_UNTAGGED_HDR_LEN;
    if (cap < hlen)
        return IWARP_ERR_NOSPC;

    /* RFC 5041 §4.1: Rsvd "MUST be set to zero on transmit". */
    uint8_t ctrl = in->dv;
    if (in->tagged)
        ctrl |= IWARP_DDP_FLAG_TAGGED;
    if (in->last)
        ctrl |= IWARP_DDP_FLAG_LAST;
    buf[0] = ctrl;
    buf[1] = in->rsvdulp;
    if (in->tagged) {
        iwarp_store_be32(buf + 2, in->stag);
        iwarp_store_be64(buf + 6, in->to);
    } else {
        iwarp_store_be32(buf + 2, in->rsvdulp_word);
        iwarp_store_be32(buf + 6, in->qn);
        iwarp_store_be32(buf + 10, in->msn);
        iwarp_store_be32(buf + 14, in->mo);
    }
    return (iwarp_ssize)hlen;
}
