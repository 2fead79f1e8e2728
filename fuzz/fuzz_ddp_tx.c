/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: iwarp_ddp_tx_init() + iwarp_ddp_tx_next() on random messages, gather lists,
 * maximum segment sizes and slice capacities.
 * Input: opcode(1) max_seg(2) flags(1) len(3) seed(4) to(8) stag(4) msn(4) term_hdrct(1).
 * Properties:
 *   - every produced segment decodes (iwarp_wire_segment_decode) with the message's opcode,
 *     STag/QN/MSN, TO = initial TO + octets sent or MO = octets sent, L on the last one only;
 *   - header + payload <= max_seg <= 65535; every segment but the last is full;
 *   - the slices are non-empty and cover the gather list's first len octets exactly once, in
 *     order, by pointer (zero-copy);
 *   - an error leaves the message unchanged, and is the one the arguments call for.
 */
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "ddp/ddp_tx.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "wire/wire_segment.h"

#define MAX_PIECES 48
#define MAX_LEN    (1u << 18)

static uint8_t src[MAX_LEN];
static uint8_t seg[IWARP_DDP_SEG_MAX + 1];

static uint64_t take_be(const uint8_t **p, size_t *n, int octets)
{
    uint64_t v = 0;
    while (octets-- > 0)
        v = v << 8 | fuzz_take(p, n);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t n = size;
    uint8_t opcode = fuzz_take(&p, &n) % 13; /* 12: undefined */
    uint32_t max_seg = (uint32_t)take_be(&p, &n, 2);
    uint8_t flags = fuzz_take(&p, &n);
    size_t len = (size_t)take_be(&p, &n, 3) % MAX_LEN;
    uint32_t rng = (uint32_t)take_be(&p, &n, 4);
    struct iwarp_wire_msg wm = {.opcode = opcode};
    wm.to = take_be(&p, &n, 8);
    wm.stag = (uint32_t)take_be(&p, &n, 4);
    wm.msn = (uint32_t)take_be(&p, &n, 4);
    wm.inv_stag = ~wm.stag;
    wm.body.term.ctrl.hdrct = fuzz_take(&p, &n) & IWARP_TERM_FLAG_M; /* D without hdr: INVAL */
    if ((flags & 0x30) == 0x30)
        max_seg += 0x10000u; /* sometimes above IWARP_DDP_SEG_MAX */
    if (flags & 2)
        max_seg %= 200; /* small segments: many of them */

    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(opcode);
    if (op && !op->payload)
        len = flags & 4 ? len : 0; /* mostly valid: payload-less opcodes with no payload */

    /* The gather list: random piece sizes (some empty) from consecutive source octets; its
     * total is at least len unless flag 8 leaves it short. */
    struct iovec iov[MAX_PIECES];
    size_t cnt = 0, total = 0;
    while (cnt < MAX_PIECES && total < MAX_LEN) {
        size_t l = fuzz_rng_next(&rng) % 4 == 0 ? 0 : fuzz_rng_next(&rng) % (len / 4 + 8);
        if (cnt == MAX_PIECES - 1 || l > MAX_LEN - total)
            l = MAX_LEN - total;
        iov[cnt++] = (struct iovec){src + total, l};
        total += l;
        if (total >= len && fuzz_rng_next(&rng) % 2)
            break;
    }
    if ((flags & 8) && len > 0 && total >= len) { /* cut the list short of len */
        while (cnt > 0 && total - iov[cnt - 1].iov_len >= len)
            total -= iov[--cnt].iov_len;
        iov[cnt - 1].iov_len -= total - len + 1;
        total = len - 1;
    }

    struct iwarp_ddp_tx_msg m;
    int e = iwarp_ddp_tx_init(&m, &wm, iov, cnt, len);
    bool init_ok = op && (op->payload || len == 0) && !(op->tagged && len > UINT64_MAX - wm.to);
    FUZZ_CHECK((e == 0) == init_ok);
    if (e < 0) {
        FUZZ_CHECK(e == IWARP_ERR_INVAL);
        return 0;
    }

    uint64_t sent = 0;
    size_t piece = 0, off = 0, nseg = 0;
    uint8_t hdr[IWARP_DDP_TX_HDR_MAX];
    for (;;) {
        struct iovec out[MAX_PIECES + 1];
        size_t cap = fuzz_rng_next(&rng) % 3 == 0 ? fuzz_rng_next(&rng) % 4 : MAX_PIECES + 1;
        size_t np = 0;
        struct iwarp_ddp_tx_msg before = m;
        iwarp_ssize h = iwarp_ddp_tx_next(&m, max_seg, hdr, sizeof hdr, out, cap, &np);
        if (h < 0) {
            FUZZ_CHECK(memcmp(&before, &m, sizeof m) == 0); /* no advance on error */
            if (h == IWARP_ERR_NOSPC) {
                FUZZ_CHECK(cap <= MAX_PIECES);
                continue; /* retried with another capacity */
            }
            /* the only other errors: a bad max_seg, a short list, a bad Terminate */
            FUZZ_CHECK(h == IWARP_ERR_INVAL || h == IWARP_ERR_FPDU_LEN);
            if (h == IWARP_ERR_INVAL)
                FUZZ_CHECK(max_seg > IWARP_DDP_SEG_MAX || total < len ||
                           opcode == IWARP_RDMAP_OP_TERMINATE);
            else
                FUZZ_CHECK(max_seg <= IWARP_DDP_SEG_MAX);
            return 0;
        }
        FUZZ_CHECK(max_seg <= IWARP_DDP_SEG_MAX);
        if (h == 0) {
            FUZZ_CHECK(np == 0 && nseg > 0);
            break;
        }
        FUZZ_CHECK(np <= cap);
        size_t pl = 0;
        for (size_t i = 0; i < np; i++) {
            FUZZ_CHECK(out[i].iov_len > 0);
            while (piece < cnt && off == iov[piece].iov_len)
                piece++, off = 0;
            FUZZ_CHECK(piece < cnt);
            FUZZ_CHECK(out[i].iov_base == (uint8_t *)iov[piece].iov_base + off);
            FUZZ_CHECK(out[i].iov_len <= iov[piece].iov_len - off);
            off += out[i].iov_len;
            pl += out[i].iov_len;
        }
        FUZZ_CHECK((size_t)h + pl <= max_seg);
        memcpy(seg, hdr, (size_t)h);
        memset(seg + h, 0xA5, pl);
        struct iwarp_wire_segment s;
        FUZZ_CHECK(iwarp_wire_segment_decode(seg, (size_t)h + pl, &s, NULL) == 0);
        FUZZ_CHECK(s.opcode == opcode && s.payload_len == pl && s.ddp.tagged == op->tagged);
        if (op->tagged)
            FUZZ_CHECK(s.ddp.stag == wm.stag && s.ddp.to == wm.to + sent);
        else
            FUZZ_CHECK(s.ddp.qn == op->qn && s.ddp.msn == wm.msn && s.ddp.mo == sent);
        sent += pl;
        FUZZ_CHECK(s.ddp.last == (sent == len));
        FUZZ_CHECK(iwarp_ddp_tx_done(&m) == s.ddp.last);
        if (!s.ddp.last) /* every segment but the last is full */
            FUZZ_CHECK((size_t)h + pl == max_seg);
        nseg++;
    }
    FUZZ_CHECK(sent == len);
    return 0;
}
