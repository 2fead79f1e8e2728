/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP over SCTP chunk payloads (RFC 5043 §5, §8, §10, §11.1; RFC 6581 §7, §9). */
#include "wire/wire_sctp.h"

#include <string.h>

#include "iwarp/errors.h"
#include "util/bytes.h"
#include "util/crc32c.h"
#include "wire/wire_ddp.h"

bool iwarp_sctp_fc_known(uint16_t fc)
{
    /* RFC 5043 §5.2.3 (1-4), RFC 6581 §7 (5-7), RFC 6580 §3.5 (0xFFFF experimental). */
    return (fc >= IWARP_SCTP_FC_INITIATE && fc <= IWARP_SCTP_FC_ENH_REJECT) ||
           fc == IWARP_SCTP_FC_EXPERIMENTAL;
}

bool iwarp_sctp_fc_has_ird_ord(uint16_t fc)
{
    /* RFC 6581 §7: the word leads the private data of Enhanced Initiate and Enhanced Accept. */
    return fc == IWARP_SCTP_FC_ENH_INITIATE || fc == IWARP_SCTP_FC_ENH_ACCEPT;
}

iwarp_ssize iwarp_sctp_ctl_decode(const uint8_t *p, size_t len, struct iwarp_sctp_ctl *out)
{
    if (!out || (!p && len > 0))
        return IWARP_ERR_INVAL;
    if (len < IWARP_SCTP_CTL_HDR_LEN)
        return IWARP_ERR_SHORT;
    uint16_t fc = iwarp_load_be16(p + 2);
    if (!iwarp_sctp_fc_known(fc))
        return IWARP_ERR_SESSION_FUNCTION;
    size_t pd_len = len - IWARP_SCTP_CTL_HDR_LEN;
    /* RFC 5043 §5.2.3: "Private Data length MUST NOT exceed 512 bytes in any message" and
     * "MUST NOT be included in the DDP Stream Session Terminate message". */
    if (pd_len > IWARP_SCTP_PD_MAX || (fc == IWARP_SCTP_FC_TERMINATE && pd_len > 0))
        return IWARP_ERR_MPA_PD_LEN;
    const uint8_t *pd = p + IWARP_SCTP_CTL_HDR_LEN;
    struct iwarp_sctp_ctl c = {.ssn = iwarp_load_be16(p), .fc = fc};
    if (iwarp_sctp_fc_has_ird_ord(fc)) {
        /* RFC 6581 §7, §9: the 32-bit word comes first; ULP data follows it. */
        if (pd_len < IWARP_MPA_IRD_ORD_LEN)
            return IWARP_ERR_MPA_ENHANCED;
        iwarp_mpa_ird_ord_decode(pd, &c.ird_ord);
        pd += IWARP_MPA_IRD_ORD_LEN;
        pd_len -= IWARP_MPA_IRD_ORD_LEN;
    }
    c.pd = pd;
    c.pd_len = (uint16_t)pd_len;
    *out = c;
    return (iwarp_ssize)len;
}

iwarp_ssize iwarp_sctp_ctl_encode(uint8_t *buf, size_t cap, const struct iwarp_sctp_ctl *in)
{
    if (!buf || !in || (in->pd_len > 0 && !in->pd))
        return IWARP_ERR_INVAL;
    if (!iwarp_sctp_fc_known(in->fc))
        return IWARP_ERR_INVAL;
    bool word = iwarp_sctp_fc_has_ird_ord(in->fc);
    if (word) {
        const struct iwarp_mpa_ird_ord *w = &in->ird_ord;
        if (w->ird > IWARP_MPA_V2_IRD_ORD_MASK || w->ord > IWARP_MPA_V2_IRD_ORD_MASK ||
            (w->rtr & ~IWARP_MPA_RTR_ALL) != 0 || (!w->p2p && w->rtr != 0))
            return IWARP_ERR_INVAL;
    }
    size_t pd_total = (size_t)in->pd_len + (word ? IWARP_MPA_IRD_ORD_LEN : 0u);
    /* RFC 5043 §5.2.3 and RFC 6581 §7: <= 512 including the word; none in a Terminate. */
    if (pd_total > IWARP_SCTP_PD_MAX || (in->fc == IWARP_SCTP_FC_TERMINATE && pd_total > 0))
        return IWARP_ERR_MPA_PD_LEN;
    size_t total = IWARP_SCTP_CTL_HDR_LEN + pd_total;
    if (cap < total)
        return IWARP_ERR_NOSPC;
    iwarp_store_be16(buf, in->ssn);
    iwarp_store_be16(buf + 2, in->fc);
    uint8_t *pd = buf + IWARP_SCTP_CTL_HDR_LEN;
    if (word) {
        iwarp_mpa_ird_ord_encode(pd, &in->ird_ord);
        pd += IWARP_MPA_IRD_ORD_LEN;
    }
    if (in->pd_len > 0)
        memcpy(pd, in->pd, in->pd_len);
    return (iwarp_ssize)total;
}

iwarp_ssize iwarp_sctp_seg_decode(const uint8_t *p, size_t len, size_t max_seg,
                                  struct iwarp_sctp_seg *out)
{
    if (!out || (!p && len > 0))
        return IWARP_ERR_INVAL;
    if (len < IWARP_SCTP_SSN_LEN)
        return IWARP_ERR_SHORT;
    size_t seg_len = len - IWARP_SCTP_SSN_LEN;
    /* RFC 5043 §9: "MUST reject DDP Segments that are larger than the maximum size". */
    if (max_seg != 0 && seg_len > max_seg)
        return IWARP_ERR_SCTP_MSGSIZE;
    /* RFC 5041 §4: a segment holds at least the header its T bit selects (14 or 18). */
    const uint8_t *seg = p + IWARP_SCTP_SSN_LEN;
    if (seg_len == 0 || seg_len < iwarp_ddp_hdr_len(seg[0]))
        return IWARP_ERR_DDP_HDR_LEN;
    out->ssn = iwarp_load_be16(p);
    out->seg = seg;
    out->len = seg_len;
    return (iwarp_ssize)len;
}

iwarp_ssize iwarp_sctp_ssn_encode(uint8_t *buf, size_t cap, uint16_t ssn)
{
    if (!buf)
        return IWARP_ERR_INVAL;
    if (cap < IWARP_SCTP_SSN_LEN)
        return IWARP_ERR_NOSPC;
    iwarp_store_be16(buf, ssn);
    return IWARP_SCTP_SSN_LEN;
}

int iwarp_sctp_ssn_peek(const uint8_t *p, size_t len)
{
    if (!p && len > 0)
        return IWARP_ERR_INVAL;
    if (len < IWARP_SCTP_SSN_LEN)
        return IWARP_ERR_SHORT;
    return iwarp_load_be16(p);
}

int iwarp_sctp_chunk_kind(uint32_t ppid, bool unordered)
{
    /* RFC 5043 §10: "MUST use the Unordered option on all Data Chunks"; §5.2: PPIDs 16/17;
     * §5.1: a DDP association carries nothing else. */
    if (!unordered)
        return IWARP_ERR_SCTP_PPID;
    if (ppid != IWARP_SCTP_PPID_DDP_SEGMENT && ppid != IWARP_SCTP_PPID_DDP_CONTROL)
        return IWARP_ERR_SCTP_PPID;
    return (int)ppid;
}

int iwarp_sctp_adaptation_check(bool present, uint32_t indication)
{
    /* RFC 5043 §11.1: NONE or ANY-OTHER indication: DDP procedures MUST NOT be performed. */
    if (!present || indication != IWARP_SCTP_ADAPTATION_DDP)
        return IWARP_ERR_SCTP_ADAPTATION;
    return 0;
}

int iwarp_sctp_streams_check(uint16_t inbound, uint16_t outbound)
{
    /* RFC 5043 §8: DDP stream n pairs inbound and outbound stream n; the counts MUST match. */
    if (inbound != outbound || inbound == 0)
        return IWARP_ERR_SCTP_STREAMS;
    return 0;
}

uint32_t iwarp_sctp_packet_crc32c(const uint8_t *p, size_t len)
{
    static const uint8_t zero[4];
    uint32_t c = iwarp_crc32c_update(IWARP_CRC32C_INIT, p, IWARP_SCTP_CHECKSUM_OFF);
    c = iwarp_crc32c_update(c, zero, sizeof zero);
    c = iwarp_crc32c_update(c, p + IWARP_SCTP_COMMON_HDR_LEN, len - IWARP_SCTP_COMMON_HDR_LEN);
    return iwarp_crc32c_final(c);
}

bool iwarp_sctp_crc_ok(const uint8_t *p, size_t len)
{
    if (!p || len < IWARP_SCTP_COMMON_HDR_LEN)
        return false;
    return iwarp_sctp_packet_crc32c(p, len) == iwarp_load_le32(p + IWARP_SCTP_CHECKSUM_OFF);
}
