/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: trace/trace_tcp_reasm (TCP reassembly of captured segments) with segments at
 * input-chosen sequence numbers and lengths, before, at and ahead of the next expected octet,
 * across the 2^32 wrap, through a small ring.
 * Input: 4 octets initial sequence number, then per segment 2 octets offset from it (big-endian,
 * may point behind the stream's start) and 1 octet length.
 * Property: the octet at stream offset i always carries the value pattern(i), as a real
 * retransmission would; the delivered stream must be exactly pattern(0), pattern(1), ... with
 * nothing skipped or repeated, and held + delivered + dropped stay consistent.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "trace/trace_tcp_reasm.h"

static uint8_t pattern(uint32_t i)
{
    return (uint8_t)(i * 131u + (i >> 8) + 7u);
}

struct out {
    uint32_t n;
};

static void check(void *ctx, const uint8_t *p, size_t n)
{
    struct out *o = ctx;
    FUZZ_CHECK(n > 0);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(p[i] == pattern(o->n + (uint32_t)i));
    o->n += (uint32_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t ring[1024];
    uint8_t seg[256];
    if (size < 4)
        return 0;
    uint32_t isn =
        (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3];
    data += 4;
    size -= 4;
    struct iwarp_tcp_reasm r;
    iwarp_tcp_reasm_init(&r, ring, sizeof ring);
    iwarp_tcp_reasm_syn(&r, isn);
    struct out o = {0};
    while (size >= 3) {
        uint32_t off = (uint32_t)data[0] << 8 | data[1];
        uint32_t len = data[2];
        data += 3;
        size -= 3;
        int32_t rel = (int32_t)off - 256; /* some segments start before the stream */
        for (uint32_t i = 0; i < len; i++)
            seg[i] = pattern((uint32_t)rel + i);
        int rc = iwarp_tcp_reasm_segment(&r, isn + 1u + (uint32_t)rel, seg, len, check, &o);
        FUZZ_CHECK(rc == 0 || rc == IWARP_ERR_NOSPC);
        FUZZ_CHECK(r.delivered == o.n);
        FUZZ_CHECK(iwarp_tcp_reasm_held(&r) <= r.cap);
        FUZZ_CHECK(r.nr <= IWARP_TCP_REASM_MAX_RANGES);
    }
    return 0;
}
