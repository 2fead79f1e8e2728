/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Property fuzz target: random ULPDUs framed with random settings at random stream positions,
 * then deframed in random pieces, come back identical with the CRC checked.
 * Input: flags(1) stream_pos(4) seed(1), then per FPDU: length(2) cut(1) cut(1); the ULPDU
 * contents come from a PRNG seeded by the input.
 *   flags bit 0: CRC, bit 1: markers, bit 2: staged (iwarp_mpa_tx_frame_staged, the iovecs
 *   from a point chosen by the cuts on copied into a staging buffer). A small FPDU
 *   (iwarp_mpa_tx_small) is one iovec, a copy in the scratch, whether staged or not.
 * Also checks the framer's own promises: iovec count within IWARP_MPA_TX_IOV_MAX, no empty
 * iovec, wire size equal to iwarp_mpa_fpdu_wire_len(), stream position tracking; staged, that
 * the stage holds the staged octets and that the FPDU no longer reads its source there: the
 * source is overwritten before the FPDU is gathered, and what arrives is still the ULPDU the
 * CRC covered.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"

#define MAX_FPDUS 6u

static uint8_t g_ulpdu[MAX_FPDUS * IWARP_MPA_MULPDU_MAX];
static uint8_t g_wire[MAX_FPDUS * 65536u];
static uint8_t g_back[MAX_FPDUS * IWARP_MPA_MULPDU_MAX];
static uint8_t g_src[IWARP_MPA_MULPDU_MAX], g_stage[IWARP_MPA_MULPDU_MAX];
static struct iwarp_mpa_tx_scratch g_scratch;
static struct iovec g_out[IWARP_MPA_TX_IOV_MAX(3)];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    bool crc = data[0] & 1u, markers = (data[0] & 2u) != 0, staged = (data[0] & 4u) != 0;
    uint32_t pos0 =
        ((uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4]) &
        ~3u;
    uint32_t seed = data[5];
    data += 6;
    size -= 6;

    struct iwarp_mpa_tx tx;
    struct iwarp_mpa_tx_cfg tcfg = {.crc = crc, .markers = markers, .stream_pos = pos0};
    FUZZ_CHECK(iwarp_mpa_tx_init(&tx, &tcfg) == 0);
    uint32_t lens[MAX_FPDUS], fpdu_pos[MAX_FPDUS];
    size_t n = 0, ulen = 0, wlen = 0;
    for (; n < MAX_FPDUS && size >= 4; n++, data += 4, size -= 4) {
        uint32_t len = 1u + ((uint32_t)data[0] << 8 | data[1]) %
                                (markers ? IWARP_MPA_MARKED_ULPDU_MAX : IWARP_MPA_MULPDU_MAX);
        uint8_t *u = g_ulpdu + ulen;
        for (uint32_t i = 0; i < len; i++)
            u[i] = (uint8_t)fuzz_rng_next(&seed);
        /* the ULPDU as up to three iovecs (possibly empty ones) */
        size_t c1 = data[2] * (size_t)len / 255u, c2 = data[3] * (size_t)len / 255u;
        if (c1 > c2) {
            size_t t = c1;
            c1 = c2;
            c2 = t;
        }
        memcpy(g_src, u, len); /* the source, which a staged FPDU must not read once framed */
        struct iovec in[3] = {{g_src, c1}, {g_src + c1, c2 - c1}, {g_src + c2, len - c2}};
        size_t from = staged ? (data[2] ^ data[3]) % 3u : 3u, at = from == 0   ? 0
                                                                   : from == 1 ? c1
                                                                               : c2;
        bool small = iwarp_mpa_tx_small(&tx, len); /* one copy in the scratch, no stage */
        uint32_t start = tx.pos;
        fpdu_pos[n] = start + (markers && start % 512u == 0 ? 4u : 0u);
        iwarp_ssize m = iwarp_mpa_tx_frame_staged(&tx, in, 3, from, staged ? g_stage : NULL,
                                                  staged ? sizeof g_stage : 0, &g_scratch, g_out,
                                                  IWARP_MPA_TX_IOV_MAX(3));
        FUZZ_CHECK(m > 0 && (size_t)m <= IWARP_MPA_TX_IOV_MAX(3));
        if (small) {
            FUZZ_CHECK(m == 1);
            memset(g_src, 0xA5, len);
        } else if (staged) {
            FUZZ_CHECK(memcmp(g_stage, u + at, len - at) == 0);
            memset(g_src + at, 0xA5, len - at);
        }
        size_t w = 0;
        for (size_t i = 0; i < (size_t)m; i++) {
            FUZZ_CHECK(g_out[i].iov_len > 0);
            memcpy(g_wire + wlen + w, g_out[i].iov_base, g_out[i].iov_len);
            w += g_out[i].iov_len;
        }
        FUZZ_CHECK(w == iwarp_mpa_fpdu_wire_len(start, len, markers) && w % 4 == 0);
        FUZZ_CHECK(tx.pos == start + (uint32_t)w);
        lens[n] = len;
        ulen += len;
        wlen += w;
    }

    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_cfg rcfg = {.crc = crc, .markers = markers, .stream_pos = pos0};
    FUZZ_CHECK(iwarp_mpa_rx_init(&rx, &rcfg) == 0);
    size_t off = 0, back = 0, got = 0;
    uint32_t cur = 0;
    while (off < wlen) {
        size_t k = 1 + fuzz_rng_next(&seed) % (fuzz_rng_next(&seed) % 4u ? 9000u : 5u);
        if (k > wlen - off)
            k = wlen - off;
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize r = iwarp_mpa_rx_feed(&rx, g_wire + off, k, &ev);
        FUZZ_CHECK(r >= 0 && (size_t)r <= k);
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU) {
            FUZZ_CHECK(got < n && ev.ulpdu_len == lens[got] && ev.ulpdu_off == cur);
            FUZZ_CHECK(ev.fpdu_pos == fpdu_pos[got]);
            memcpy(g_back + back + cur, ev.data, ev.len);
            cur += (uint32_t)ev.len;
        } else if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            FUZZ_CHECK(got < n && ev.ulpdu_len == lens[got] && cur == lens[got]);
            FUZZ_CHECK(ev.crc_checked == crc && ev.fpdu_pos == fpdu_pos[got]);
            back += cur;
            cur = 0;
            got++;
        }
        off += (size_t)r;
    }
    FUZZ_CHECK(got == n && back == ulen && memcmp(g_back, g_ulpdu, ulen) == 0);
    return 0;
}
