/* SPDX-License-Identifier: BSD-2-Clause */
/* MPA Request/Reply frame codec (RFC 5044 §7.1.1, RFC 6581 §6, §9). */
#include "wire/wire_mpa.h"

#include <string.h>

#include "iwarp/errors.h"
#include "util/bytes.h"
#include "wire/wire.h"

/* Offsets inside the 20-octet header (RFC 5044 §7.1.1 Figure 8). */
enum { OFF_FLAGS = 16, OFF_REV = 17, OFF_PD_LEN = 18 };

/* "MPA ID Req Frame" and "MPA ID Rep Frame" differ only in octet 9 ('q' / 'p'). */
static bool key_prefix_is(const uint8_t *p, size_t n, const char *key)
{
    return memcmp(p, key, n) == 0;
}

void iwarp_mpa_ird_ord_decode(const uint8_t *p, struct iwarp_mpa_ird_ord *out)
{
    uint16_t ird_hw = iwarp_load_be16(p);
    uint16_t ord_hw = iwarp_load_be16(p + 2);
    out->p2p = (ird_hw & IWARP_MPA_V2_PEER2PEER) != 0;
    out->ird = (uint16_t)(ird_hw & IWARP_MPA_V2_IRD_ORD_MASK);
    out->ord = (uint16_t)(ord_hw & IWARP_MPA_V2_IRD_ORD_MASK);
    out->rtr = 0;
    /* RFC 6581 §9.2: "if Control Flag A is set to 0, then Control Flags B, C, and D MUST be
     * ignored". */
    if (out->p2p) {
        if (ird_hw & IWARP_MPA_V2_RTR_SEND)
            out->rtr |= IWARP_MPA_RTR_SEND;
        if (ord_hw & IWARP_MPA_V2_RTR_WRITE)
            out->rtr |= IWARP_MPA_RTR_WRITE;
        if (ord_hw & IWARP_MPA_V2_RTR_READ)
            out->rtr |= IWARP_MPA_RTR_READ;
    }
}

void iwarp_mpa_ird_ord_encode(uint8_t *p, const struct iwarp_mpa_ird_ord *in)
{
    uint16_t ird_hw = (uint16_t)(in->ird & IWARP_MPA_V2_IRD_ORD_MASK);
    uint16_t ord_hw = (uint16_t)(in->ord & IWARP_MPA_V2_IRD_ORD_MASK);
    /* RFC 6581 §9.2: with A = 0, B, C and D MUST be 0. */
    if (in->p2p) {
        ird_hw |= IWARP_MPA_V2_PEER2PEER;
        if (in->rtr & IWARP_MPA_RTR_SEND)
            ird_hw |= IWARP_MPA_V2_RTR_SEND;
        if (in->rtr & IWARP_MPA_RTR_WRITE)
            ord_hw |= IWARP_MPA_V2_RTR_WRITE;
        if (in->rtr & IWARP_MPA_RTR_READ)
            ord_hw |= IWARP_MPA_V2_RTR_READ;
    }
    iwarp_store_be16(p, ird_hw);
    iwarp_store_be16(p + 2, ord_hw);
}

iwarp_ssize iwarp_mpa_frame_decode(const uint8_t *p, size_t len, struct iwarp_mpa_frame *out)
{
    if (!out || (!p && len > 0))
        return IWARP_ERR_INVAL;

    /* RFC 5044 §7.1.1 / §7.1.2 rule 5: the key must be one of the two fixed values; reject a
     * wrong one as soon as the octets received so far rule both out. */
    size_t kn = len < IWARP_MPA_KEY_LEN ? len : IWARP_MPA_KEY_LEN;
    bool is_req = key_prefix_is(p ? p : (const uint8_t *)"", kn, IWARP_MPA_KEY_REQ);
    bool is_rep = key_prefix_is(p ? p : (const uint8_t *)"", kn, IWARP_MPA_KEY_REP);
    if (!is_req && !is_rep)
        return IWARP_ERR_MPA_KEY;
    if (len < IWARP_MPA_HDR_LEN)
        return IWARP_ERR_SHORT;

    uint8_t flags = p[OFF_FLAGS];
    uint16_t pd_length = iwarp_load_be16(p + OFF_PD_LEN);
    /* RFC 5044 §7.1.1: Private Data longer than 512 octets MUST close the connection. */
    if (pd_length > IWARP_MPA_PD_MAX)
        return IWARP_ERR_MPA_PD_LEN;

    out->reply = is_rep;
    out->m = (flags & IWARP_MPA_FLAG_M) != 0;
    out->c = (flags & IWARP_MPA_FLAG_C) != 0;
    /* RFC 5044 §7.1.1: R "is set to zero, and not checked on reception in the MPA Request". */
    out->r = is_rep && (flags & IWARP_MPA_FLAG_R) != 0;
    out->s = (flags & IWARP_MPA_FLAG_S) != 0;
    /* Res (0x0F, e.g. siw's GSO bit 0x08): "not checked on reception" (RFC 5044 §7.1.1). */
    out->rev = p[OFF_REV];

    /* RFC 6581 §6: enhanced features need Rev >= 2, and with S=1 the Private Data MUST begin
     * with the 4-octet enhanced connection establishment data. */
    if (out->s && (out->rev < IWARP_MPA_REV2 || pd_length < IWARP_MPA_IRD_ORD_LEN))
        return IWARP_ERR_MPA_ENHANCED;

    size_t total = (size_t)IWARP_MPA_HDR_LEN + pd_length;
    if (len < total)
        return IWARP_ERR_SHORT;

    const uint8_t *pd = p + IWARP_MPA_HDR_LEN;
    if (out->s) {
        iwarp_mpa_ird_ord_decode(pd, &out->v2);
        pd += IWARP_MPA_IRD_ORD_LEN;
        pd_length = (uint16_t)(pd_length - IWARP_MPA_IRD_ORD_LEN);
    } else {
        memset(&out->v2, 0, sizeof out->v2);
    }
    out->pd = pd;
    out->pd_len = pd_length;
    return (iwarp_ssize)total;
}

iwarp_ssize iwarp_mpa_frame_encode(uint8_t *buf, size_t cap, const struct iwarp_mpa_frame *f)
{
    if (!f || (!buf && cap > 0) || (!f->pd && f->pd_len > 0))
        return IWARP_ERR_INVAL;
    /* RFC 5044 §7.1.1: R is a Reply flag; it is zero in a Request. */
    if (f->r && !f->reply)
        return IWARP_ERR_INVAL;
    if (f->s) {
        /* RFC 6581 §6: S needs Rev >= 2. RFC 6581 §9: IRD and ORD are 14-bit. */
        if (f->rev < IWARP_MPA_REV2 || f->v2.ird > IWARP_MPA_V2_IRD_ORD_MASK ||
            f->v2.ord > IWARP_MPA_V2_IRD_ORD_MASK || (f->v2.rtr & ~IWARP_MPA_RTR_ALL) != 0)
            return IWARP_ERR_INVAL;
        /* RFC 6581 §9.2: "If Control Flag A is set to 0, then Control Flags B, C, and D MUST
         * also be set to 0." */
        if (!f->v2.p2p && f->v2.rtr != 0)
            return IWARP_ERR_INVAL;
    }
    size_t pd_length = (size_t)f->pd_len + (f->s ? IWARP_MPA_IRD_ORD_LEN : 0u);
    /* RFC 5044 §7.1.1: "The Private Data field MUST be between 0 and 512 octets"; RFC 6581 §6:
     * PD_Length includes the enhanced data. */
    if (pd_length > IWARP_MPA_PD_MAX)
        return IWARP_ERR_MPA_PD_LEN;
    size_t total = IWARP_MPA_HDR_LEN + pd_length;
    if (cap < total)
        return IWARP_ERR_NOSPC;

    memcpy(buf, f->reply ? IWARP_MPA_KEY_REP : IWARP_MPA_KEY_REQ, IWARP_MPA_KEY_LEN);
    uint8_t flags = 0; /* Res: "MUST be set to zero when sending" (RFC 5044 §7.1.1) */
    if (f->m)
        flags |= IWARP_MPA_FLAG_M;
    if (f->c)
        flags |= IWARP_MPA_FLAG_C;
    if (f->r)
        flags |= IWARP_MPA_FLAG_R;
    if (f->s)
        flags |= IWARP_MPA_FLAG_S;
    buf[OFF_FLAGS] = flags;
    buf[OFF_REV] = f->rev;
    iwarp_store_be16(buf + OFF_PD_LEN, (uint16_t)pd_length);
    uint8_t *pd = buf + IWARP_MPA_HDR_LEN;
    if (f->s) {
        iwarp_mpa_ird_ord_encode(pd, &f->v2);
        pd += IWARP_MPA_IRD_ORD_LEN;
    }
    if (f->pd_len > 0)
        memcpy(pd, f->pd, f->pd_len);
    return (iwarp_ssize)total;
}
