/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the MPA deframer on arbitrary streams, fed in arbitrary pieces.
 * Input: flags(1) max_ulpdu(2) stream_pos(2) seed(1), then the stream.
 *   flags bit 0: CRC, bit 1: markers, bits 2-3: pieces (whole, one octet, random, by want()),
 *   bit 4: each piece first offered to iwarp_mpa_rx_whole, which must agree with a copy of the
 *   deframer fed the same octets (the ULPDU, its length and position, the state after).
 * Checks the API contract on every call (consumption, spans inside the caller's data and the
 * ULPDU, in-order offsets, events, exact error codes, stickiness); never crashes, hangs or reads
 * outside the input.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mpa/mpa_deframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    unsigned mode = (data[0] >> 2) & 3u;
    struct iwarp_mpa_rx_cfg cfg = {
        .crc = data[0] & 1u,
        .markers = (data[0] & 2u) != 0,
        .max_ulpdu = ((uint32_t)data[1] << 8 | data[2]) % (IWARP_MPA_MULPDU_MAX + 1u),
        /* high octet sets the upper bits (wrap-around), low octet the place on the grid */
        .stream_pos = (uint32_t)data[3] << 24 | (uint32_t)data[4] << 2,
    };
    uint32_t seed = data[5];
    const uint8_t *s = data + 6;
    size_t len = size - 6;
    uint32_t max = cfg.max_ulpdu ? cfg.max_ulpdu : IWARP_MPA_MULPDU_MAX;

    struct iwarp_mpa_rx rx;
    FUZZ_CHECK(iwarp_mpa_rx_init(&rx, &cfg) == 0);
    uint32_t cur_off = 0, cur_len = 0;
    unsigned sink = 0;
    int err = 0;
    size_t off = 0;
    while (off < len && err == 0) {
        struct iwarp_mpa_rx_want w;
        size_t want = iwarp_mpa_rx_want(&rx, &w);
        FUZZ_CHECK(want >= 1 && want == w.len && w.part != IWARP_MPA_RX_PART_FAILED);
        size_t k;
        switch (mode) {
        case 0:
            k = len - off;
            break;
        case 1:
            k = 1;
            break;
        case 2:
            k = 1 + fuzz_rng_next(&seed) % 600u;
            break;
        default:
            k = want;
            break;
        }
        if (k > len - off)
            k = len - off;
        struct iwarp_mpa_rx_ev ev;
        if (data[0] & 16u) {
            struct iwarp_mpa_rx slow = rx;
            iwarp_ssize whole = iwarp_mpa_rx_whole(&rx, s + off, k, &ev);
            FUZZ_CHECK(whole >= 0 && (size_t)whole <= k);
            if (whole > 0) {
                FUZZ_CHECK(ev.kind == IWARP_MPA_RX_EV_FPDU && ev.ulpdu_off == 0 && cur_off == 0);
                FUZZ_CHECK(ev.len == ev.ulpdu_len && ev.crc_checked == cfg.crc);
                /* the octet-by-octet path: one span of the same octets, then the same end */
                struct iwarp_mpa_rx_ev e1, e2;
                FUZZ_CHECK(iwarp_mpa_rx_feed(&slow, s + off, k, &e1) > 0);
                FUZZ_CHECK(e1.kind == IWARP_MPA_RX_EV_ULPDU && e1.data == ev.data &&
                           e1.len == ev.len && e1.fpdu_pos == ev.fpdu_pos);
                size_t used = (size_t)(e1.data + e1.len - (s + off));
                FUZZ_CHECK(iwarp_mpa_rx_feed(&slow, s + off + used, k - used, &e2) ==
                           whole - (iwarp_ssize)used);
                FUZZ_CHECK(e2.kind == IWARP_MPA_RX_EV_FPDU && e2.ulpdu_len == ev.ulpdu_len);
                struct iwarp_mpa_rx_want wf, ws;
                FUZZ_CHECK(iwarp_mpa_rx_want(&rx, &wf) == iwarp_mpa_rx_want(&slow, &ws));
                FUZZ_CHECK(wf.part == ws.part && rx.pos == slow.pos &&
                           rx.fpdu_pos == slow.fpdu_pos);
                for (size_t i = 0; i < ev.len; i++)
                    sink += ev.data[i];
                off += (size_t)whole;
                continue;
            }
            FUZZ_CHECK(ev.kind == IWARP_MPA_RX_EV_NONE && memcmp(&rx, &slow, sizeof rx) == 0);
        }
        iwarp_ssize n = iwarp_mpa_rx_feed(&rx, s + off, k, &ev);
        if (n < 0) {
            err = (int)n;
            FUZZ_CHECK(err == IWARP_ERR_FPDU_CRC || err == IWARP_ERR_FPDU_MARKER ||
                       err == IWARP_ERR_FPDU_LEN);
            FUZZ_CHECK(err != IWARP_ERR_FPDU_CRC || cfg.crc);
            FUZZ_CHECK(err != IWARP_ERR_FPDU_MARKER || cfg.markers);
            break;
        }
        FUZZ_CHECK((size_t)n <= k);
        if (k <= want) /* up to the next boundary, everything is taken in one call */
            FUZZ_CHECK((size_t)n == k);
        switch (ev.kind) {
        case IWARP_MPA_RX_EV_NONE:
            FUZZ_CHECK((size_t)n == k);
            break;
        case IWARP_MPA_RX_EV_ULPDU:
            FUZZ_CHECK(ev.len > 0 && ev.data >= s + off && ev.data + ev.len <= s + off + (size_t)n);
            FUZZ_CHECK(ev.ulpdu_len >= 1 && ev.ulpdu_len <= max);
            FUZZ_CHECK(ev.ulpdu_off == cur_off && ev.ulpdu_off + ev.len <= ev.ulpdu_len);
            FUZZ_CHECK(cur_off == 0 || ev.ulpdu_len == cur_len);
            if (mode == 3)
                FUZZ_CHECK(w.part == IWARP_MPA_RX_PART_ULPDU && ev.len == k);
            for (size_t i = 0; i < ev.len; i++)
                sink += ev.data[i];
            cur_off += (uint32_t)ev.len;
            cur_len = ev.ulpdu_len;
            break;
        case IWARP_MPA_RX_EV_FPDU:
            FUZZ_CHECK(ev.ulpdu_len == cur_off && ev.ulpdu_len == cur_len);
            FUZZ_CHECK(ev.crc_checked == cfg.crc);
            cur_off = 0;
            break;
        }
        off += (size_t)n;
    }
    if (err != 0) { /* sticky */
        struct iwarp_mpa_rx_ev ev;
        FUZZ_CHECK(iwarp_mpa_rx_feed(&rx, s, len, &ev) == err);
        struct iwarp_mpa_rx_want w;
        FUZZ_CHECK(iwarp_mpa_rx_want(&rx, &w) == 0 && w.part == IWARP_MPA_RX_PART_FAILED);
    }
    return (int)(sink & 0u);
}
