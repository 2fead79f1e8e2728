/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: iwarp_pkt_decode() (the capture reader's link/IP/TCP/UDP/SCTP parser) on
 * arbitrary bytes, for every link type, then iwarp_pkt_verify_checksums() on the result.
 * Input: two octets of extra wire length (big-endian; the packet "had" that many more octets on
 * the wire than were captured), then the captured packet.
 * Properties:
 *   - only 0 or IWARP_ERR_PKT_MALFORMED come back;
 *   - every pointer and length in the result stays inside the captured octets, captured lengths
 *     never exceed wire lengths, and the layers are consistent with the flags;
 *   - the same bytes with wire length = captured length decode no deeper than with more on the
 *     wire, and without the TRUNCATED flag.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "trace/trace_pkt.h"
#include "util/bytes.h"

static int inside(const uint8_t *base, size_t n, const uint8_t *p, size_t len)
{
    return p >= base && p <= base + n && len <= (size_t)(base + n - p);
}

static void check_result(int rc, const struct iwarp_pkt *d, const uint8_t *p, size_t n)
{
    FUZZ_CHECK(rc == 0 || rc == IWARP_ERR_PKT_MALFORMED);
    if (d->layer >= IWARP_PKT_LAYER_IP) {
        FUZZ_CHECK(d->ip_version == 4 || d->ip_version == 6);
        FUZZ_CHECK(inside(p, n, d->ip, d->ip_hdr_len));
        FUZZ_CHECK(d->l4 == d->ip + d->ip_hdr_len);
        FUZZ_CHECK(inside(p, n, d->l4, d->l4_len));
        FUZZ_CHECK(d->l4_len <= d->l4_wire_len);
    }
    if (d->layer == IWARP_PKT_LAYER_L4) {
        FUZZ_CHECK(!(d->flags & IWARP_PKT_F_NONFIRST_FRAG));
        FUZZ_CHECK(d->payload == d->l4 + d->l4_hdr_len);
        FUZZ_CHECK(inside(p, n, d->payload, d->payload_len));
        FUZZ_CHECK(d->payload_len <= d->payload_wire_len);
        FUZZ_CHECK(d->l4_hdr_len + d->payload_len <= d->l4_len);
    } else {
        FUZZ_CHECK(d->payload == NULL && d->payload_len == 0);
    }
    int v = iwarp_pkt_verify_checksums(d);
    FUZZ_CHECK(v == 0 || v == IWARP_ERR_PKT_CSUM || v == IWARP_ERR_SHORT);
    if (d->layer < IWARP_PKT_LAYER_IP)
        FUZZ_CHECK(v == IWARP_ERR_SHORT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t extra = iwarp_load_be16(data);
    const uint8_t *pkt = data + 2;
    size_t n = size - 2;
    /* a copy of exactly n octets, so ASan catches any read past the capture */
    uint8_t *copy = malloc(n ? n : 1);
    if (copy == NULL)
        return 0;
    if (n > 0)
        memcpy(copy, pkt, n);
    static const enum iwarp_pkt_link links[] = {
        IWARP_PKT_LINK_NULL,      IWARP_PKT_LINK_LOOP,       IWARP_PKT_LINK_ETHERNET,
        IWARP_PKT_LINK_LINUX_SLL, IWARP_PKT_LINK_LINUX_SLL2, IWARP_PKT_LINK_RAW,
        IWARP_PKT_LINK_IPV4,      IWARP_PKT_LINK_IPV6,
    };
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        struct iwarp_pkt whole, cut;
        int rw = iwarp_pkt_decode(links[i], copy, n, n, &whole);
        check_result(rw, &whole, copy, n);
        FUZZ_CHECK(!(whole.flags & IWARP_PKT_F_TRUNCATED));
        int rc = iwarp_pkt_decode(links[i], copy, n, n + extra, &cut);
        check_result(rc, &cut, copy, n);
        if (extra == 0)
            FUZZ_CHECK(rc == rw && memcmp(&cut, &whole, sizeof cut) == 0);
        if (rw == 0)
            FUZZ_CHECK(whole.layer <= cut.layer || rc != 0);
    }
    free(copy);
    return 0;
}
