/* SPDX-License-Identifier: BSD-2-Clause */
/* TCP stream reassembly for one direction of a capture (see trace_tcp_reasm.h). */
#include "trace/trace_tcp_reasm.h"

#include <string.h>

#include "iwarp/errors.h"

void iwarp_tcp_reasm_init(struct iwarp_tcp_reasm *r, uint8_t *buf, uint32_t cap)
{
    memset(r, 0, sizeof *r);
    while (cap & (cap - 1u))
        cap &= cap - 1u; /* round down to a power of two */
    r->buf = buf;
    r->cap = buf && cap >= 2u ? cap : 0u;
}

void iwarp_tcp_reasm_syn(struct iwarp_tcp_reasm *r, uint32_t isn)
{
    if (r->synced)
        return;
    r->next = isn + 1u; /* RFC 9293 §3.4: the SYN occupies one sequence number */
    r->synced = true;
}

/* Offset of sequence number s ahead of next (RFC 9293 §3.4 modular comparison). */
static uint32_t ahead(const struct iwarp_tcp_reasm *r, uint32_t s)
{
    return s - r->next;
}

/* Copies n octets for sequence numbers seq.. into the ring (two pieces when it wraps). */
static void ring_put(struct iwarp_tcp_reasm *r, uint32_t seq, const uint8_t *p, uint32_t n)
{
    uint32_t at = seq & (r->cap - 1u);
    uint32_t first = r->cap - at < n ? r->cap - at : n;
    memcpy(r->buf + at, p, first);
    memcpy(r->buf, p + first, n - first);
}

/* Delivers the ring's n octets from sequence number seq (two pieces when it wraps). */
static void ring_get(struct iwarp_tcp_reasm *r, uint32_t seq, uint32_t n,
                     iwarp_tcp_reasm_deliver_fn deliver, void *ctx)
{
    uint32_t at = seq & (r->cap - 1u);
    uint32_t first = r->cap - at < n ? r->cap - at : n;
    deliver(ctx, r->buf + at, first);
    if (n > first)
        deliver(ctx, r->buf, n - first);
}

static void drop_range(struct iwarp_tcp_reasm *r, uint32_t i)
{
    memmove(&r->r_seq[i], &r->r_seq[i + 1], (r->nr - i - 1u) * sizeof r->r_seq[0]);
    memmove(&r->r_len[i], &r->r_len[i + 1], (r->nr - i - 1u) * sizeof r->r_len[0]);
    r->nr--;
}

/* next has advanced: forgets held octets now behind it, then delivers held ranges that start
 * at next. */
static void release(struct iwarp_tcp_reasm *r, iwarp_tcp_reasm_deliver_fn deliver, void *ctx)
{
    while (r->nr > 0) {
        /* Ranges were after the old next; the first ones may now be (partly) behind it. */
        uint32_t back = r->next - r->r_seq[0];
        if (back < 0x80000000u) { /* starts at or before next (RFC 9293 §3.4) */
            if (back >= r->r_len[0]) {
                r->dup_octets += r->r_len[0];
                drop_range(r, 0);
                continue;
            }
            r->dup_octets += back;
            uint32_t n = r->r_len[0] - back;
            ring_get(r, r->next, n, deliver, ctx);
            r->next += n;
            r->delivered += n;
            drop_range(r, 0);
            continue;
        }
        break;
    }
}

/* Holds p[0..n) at sequence number seq (ahead of next, inside the window): merges it into the
 * sorted range table. Returns false when the table is full. */
static bool hold(struct iwarp_tcp_reasm *r, uint32_t seq, const uint8_t *p, uint32_t n)
{
    uint32_t a = ahead(r, seq), b = a + n;
    uint32_t i = 0;
    while (i < r->nr && ahead(r, r->r_seq[i]) + r->r_len[i] < a)
        i++; /* ranges entirely before [a, b), not even adjacent */
    uint32_t j = i;
    while (j < r->nr && ahead(r, r->r_seq[j]) <= b)
        j++; /* ranges overlapping or adjacent: [i, j) merge with the new one */
    if (i == j && r->nr == IWARP_TCP_REASM_MAX_RANGES)
        return false;
    /* The first copy of each octet wins: write only into the gaps between held ranges. */
    uint32_t cur = a;
    for (uint32_t k = i; k < j; k++) {
        uint32_t s = ahead(r, r->r_seq[k]), e = s + r->r_len[k];
        if (s > cur)
            ring_put(r, r->next + cur, p + (cur - a), s - cur);
        uint32_t os = s > a ? s : a, oe = e < b ? e : b;
        if (oe > os)
            r->dup_octets += oe - os;
        cur = e > cur ? e : cur;
    }
    if (cur < b)
        ring_put(r, r->next + cur, p + (cur - a), b - cur);
    uint32_t lo = a, hi = b;
    if (i < j) {
        uint32_t s0 = ahead(r, r->r_seq[i]);
        uint32_t e1 = ahead(r, r->r_seq[j - 1]) + r->r_len[j - 1];
        lo = s0 < lo ? s0 : lo;
        hi = e1 > hi ? e1 : hi;
        /* collapse [i, j) into slot i */
        uint32_t gone = j - i - 1u;
        memmove(&r->r_seq[i + 1], &r->r_seq[j], (r->nr - j) * sizeof r->r_seq[0]);
        memmove(&r->r_len[i + 1], &r->r_len[j], (r->nr - j) * sizeof r->r_len[0]);
        r->nr -= gone;
    } else {
        memmove(&r->r_seq[i + 1], &r->r_seq[i], (r->nr - i) * sizeof r->r_seq[0]);
        memmove(&r->r_len[i + 1], &r->r_len[i], (r->nr - i) * sizeof r->r_len[0]);
        r->nr++;
    }
    r->r_seq[i] = r->next + lo;
    r->r_len[i] = hi - lo;
    return true;
}

int iwarp_tcp_reasm_segment(struct iwarp_tcp_reasm *r, uint32_t seq, const uint8_t *p, size_t n,
                            iwarp_tcp_reasm_deliver_fn deliver, void *ctx)
{
    if (!r || !deliver || (!p && n > 0))
        return IWARP_ERR_INVAL;
    if (n == 0)
        return 0;
    if (n > UINT32_MAX / 2u)
        n = UINT32_MAX / 2u; /* no IP packet is this large; keeps the arithmetic in range */
    if (!r->synced) {
        r->next = seq;
        r->synced = true;
    }
    uint32_t len = (uint32_t)n;
    uint32_t off = ahead(r, seq);
    if (off >= 0x80000000u) { /* RFC 9293 §3.4: before next, i.e. already received */
        uint32_t behind = 0u - off;
        if (behind >= len) {
            r->dup_octets += len;
            return 0;
        }
        r->dup_octets += behind;
        p += behind;
        len -= behind;
        seq += behind;
        off = 0;
    }
    if (off == 0) {
        deliver(ctx, p, len);
        r->next += len;
        r->delivered += len;
        release(r, deliver, ctx);
        return 0;
    }
    /* Ahead of a hole: hold what fits in the window. */
    r->ooo_segments++;
    int rc = 0;
    if (off >= r->cap) {
        r->dropped += len;
        return IWARP_ERR_NOSPC;
    }
    if (len > r->cap - off) {
        r->dropped += len - (r->cap - off);
        len = r->cap - off;
        rc = IWARP_ERR_NOSPC;
    }
    if (!hold(r, seq, p, len)) {
        r->dropped += len;
        rc = IWARP_ERR_NOSPC;
    }
    return rc;
}

uint64_t iwarp_tcp_reasm_held(const struct iwarp_tcp_reasm *r)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < r->nr; i++)
        n += r->r_len[i];
    return n;
}
