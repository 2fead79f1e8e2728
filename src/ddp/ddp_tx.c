/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP transmit segmentation (RFC 5041 §5.2): one message into segments, zero-copy. */
#include "ddp/ddp_tx.h"

#include "iwarp/errors.h"
#include "wire/wire_rdmap.h"

int iwarp_ddp_tx_init(struct iwarp_ddp_tx_msg *m, const struct iwarp_wire_msg *wm,
                      const struct iovec *iov, size_t iovcnt, size_t len)
{
    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(wm->opcode);
    if (!op || (iov == NULL && iovcnt > 0))
        return IWARP_ERR_INVAL;
    /* RFC 5040 Figure 5, RFC 7306 Figure 3: only Write, Read Response and the Sends carry
     * ULP payload. */
    if (!op->payload && len > 0)
        return IWARP_ERR_INVAL;
    /* RFC 5041 §5.2: "The ULP Message Length MUST be less than 2^32." */
    if (len > UINT32_MAX)
        return IWARP_ERR_INVAL;
    /* RFC 5041 §7.1 check 5: TO + payload length of every segment must not wrap 64 bits;
     * the last segment's sum is the largest. */
    if (op->tagged && len > UINT64_MAX - wm->to)
        return IWARP_ERR_INVAL;
    *m = (struct iwarp_ddp_tx_msg){.wm = *wm, .iov = iov, .iovcnt = iovcnt, .len = (uint32_t)len};
    return 0;
}

/* Walks n payload octets from the cursor (cur, off). Writes the pieces to out when out is not
 * NULL (at most cap of them). Returns the pieces the slice needs, with the cursor after it in
 * *cur and *off, or IWARP_ERR_INVAL when the gather list ends first. */
static iwarp_ssize slice(const struct iwarp_ddp_tx_msg *m, uint32_t n, size_t *cur, size_t *off,
                         struct iovec *out)
{
    size_t pieces = 0;
    while (n > 0) {
        if (*cur >= m->iovcnt)
            return IWARP_ERR_INVAL;
        size_t avail = m->iov[*cur].iov_len - *off;
        if (avail == 0) { /* an empty piece, or the end of one: move on */
            (*cur)++;
            *off = 0;
            continue;
        }
        size_t take = avail < n ? avail : n;
        if (out)
            out[pieces] = (struct iovec){(uint8_t *)m->iov[*cur].iov_base + *off, take};
        pieces++;
        *off += take;
        n -= (uint32_t)take;
    }
    return (iwarp_ssize)pieces;
}

iwarp_ssize iwarp_ddp_tx_next(struct iwarp_ddp_tx_msg *m, uint32_t max_seg, uint8_t *hdr_buf,
                              size_t hdr_cap, struct iovec *payload_out, size_t payload_cap,
                              size_t *npayload)
{
    if (!npayload || max_seg > IWARP_DDP_SEG_MAX)
        return IWARP_ERR_INVAL;
    *npayload = 0;
    if (m->done)
        return 0;

    /* The payload this segment carries: as much as fits after the header (RFC 5041 §5.2:
     * segments no larger than the MULPDU). Payload-carrying opcodes have fixed-length RDMAP
     * headers; the others (Terminate's is variable) carry none. */
    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(m->wm.opcode);
    uint32_t left = m->len - m->sent, n = 0;
    if (left > 0) {
        uint32_t hlen =
            (op->tagged ? IWARP_DDP_TAGGED_HDR_LEN : IWARP_DDP_UNTAGGED_HDR_LEN) + op->body_len;
        if (max_seg <= hlen)
            return IWARP_ERR_FPDU_LEN; /* no room for even one payload octet */
        n = left < max_seg - hlen ? left : max_seg - hlen;
    }

    size_t cur = m->cur, off = m->cur_off;
    iwarp_ssize pieces = slice(m, n, &cur, &off, NULL);
    if (pieces < 0)
        return pieces;
    if ((size_t)pieces > payload_cap)
        return IWARP_ERR_NOSPC;

    /* RFC 5041 §4.2-§4.3, §5.2: MO (untagged) and TO (tagged) count the payload already sent
     * from the message's start; L only on the segment carrying its last octet. */
    struct iwarp_wire_msg seg = m->wm;
    seg.last = m->sent + n == m->len;
    if (op->tagged)
        seg.to = m->wm.to + m->sent;
    else
        seg.mo = m->sent;
    iwarp_ssize h = iwarp_wire_segment_encode_hdr(hdr_buf, hdr_cap, &seg);
    if (h < 0)
        return h;
    if ((size_t)h > max_seg)
        return IWARP_ERR_FPDU_LEN; /* a payload-less message whose header does not fit */

    cur = m->cur, off = m->cur_off;
    slice(m, n, &cur, &off, payload_out);
    m->cur = cur;
    m->cur_off = off;
    m->sent += n;
    m->done = seg.last;
    *npayload = (size_t)pieces;
    return h;
}
