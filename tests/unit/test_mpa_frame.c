/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA transmit framing: RFC 5044 Figures 4-6 and the wire-reference §1.9 CRC vectors as golden
 * bytes, markers at every 4-aligned FPDU position checked against a byte-at-a-time reference,
 * MULPDU (RFC 5044 §4.5), wire sizes, iovec bounds and the error paths; the staged variant
 * (a Read Response's payload copied in the CRC pass) against the same reference.
 */
#include <sys/uio.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "mpa/mpa_frame.h"
#include "mpa_ref.h"
#include "util/bytes.h"
#include "util/copy.h"
#include "util/crc32c.h"

#define BIG (IWARP_MPA_MULPDU_MAX + 1024u)

static uint8_t g_ulpdu[BIG];
static uint8_t g_wire[BIG];
static uint8_t g_ref[BIG];
static struct iovec g_out[IWARP_MPA_TX_IOV_MAX(8)];
static struct iwarp_mpa_tx_scratch g_scratch;

static void tx_setup(struct iwarp_mpa_tx *tx, bool crc, bool markers, uint32_t pos)
{
    struct iwarp_mpa_tx_cfg cfg = {.crc = crc, .markers = markers, .stream_pos = pos};
    ASSERT_EQ(iwarp_mpa_tx_init(tx, &cfg), 0);
}

/* Concatenates n iovecs into buf; returns the total length. */
static size_t flatten(const struct iovec *iov, size_t n, uint8_t *buf)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        ASSERT_TRUE(iov[i].iov_len > 0);
        memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    return len;
}

/* Frames one contiguous ULPDU and returns the wire length of the flattened FPDU in g_wire. */
static size_t frame_one(struct iwarp_mpa_tx *tx, const uint8_t *ulpdu, size_t len)
{
    struct iovec in = {.iov_base = (void *)(uintptr_t)ulpdu, .iov_len = len};
    iwarp_ssize n = iwarp_mpa_tx_frame(tx, &in, 1, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(1));
    ASSERT_TRUE(n > 0);
    return flatten(g_out, (size_t)n, g_wire);
}

/* The w octets in g_wire are the reference FPDU (ref_fpdu) of ulpdu at stream position pos. */
static void expect_ref(size_t w, uint32_t pos, const uint8_t *ulpdu, size_t len, bool crc,
                       bool markers)
{
    size_t r = ref_fpdu(pos, ulpdu, len, crc, markers, g_ref);
    ASSERT_EQ(w, r);
    ASSERT_MEM_EQ(g_wire, g_ref, r);
}

/* Framing ulpdu at stream position pos gives exactly the elen octets of expect, and the
 * framer's position moves past them. */
static void expect_framed(bool crc, bool markers, uint32_t pos, const uint8_t *ulpdu, size_t len,
                          const uint8_t *expect, size_t elen)
{
    struct iwarp_mpa_tx tx;
    tx_setup(&tx, crc, markers, pos);
    ASSERT_EQ(frame_one(&tx, ulpdu, len), elen);
    ASSERT_MEM_EQ(g_wire, expect, elen);
    ASSERT_EQ(tx.pos, (uint32_t)(pos + elen));
}

/* The octets of the first n iovecs of g_out that lie in [base, base + size); none may cross
 * its edges. */
static size_t octets_in(size_t n, const void *base, size_t size)
{
    const uint8_t *lo = base, *hi = lo + size;
    size_t in = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *b = g_out[i].iov_base, *e = b + g_out[i].iov_len;
        if (b >= hi || e <= lo)
            continue;
        ASSERT_TRUE(b >= lo && e <= hi);
        in += g_out[i].iov_len;
    }
    return in;
}

/* Fills the pieces of a ULPDU (n iovecs) with a pattern of seed and copies them in order to
 * whole (the ULPDU contiguous, for ref_fpdu). */
static void fill_pieces(const struct iovec *in, size_t n, uint32_t seed, uint8_t *whole)
{
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        uint8_t *b = in[k].iov_base;
        for (size_t i = 0; i < in[k].iov_len; i++)
            b[i] = (uint8_t)(i * (4u * k + 3u) + k + seed);
        memcpy(whole + at, b, in[k].iov_len);
        at += in[k].iov_len;
    }
}

static const char fig5_ulpdu[] = "4143 00000000 00000000 00000001 00000000"
                                 "000000000000000000000000000000000000000000000000";

/* RFC 5044 §4.4 Figure 5: the first FPDU of Full Operation, led by the first marker. */
TEST(rfc5044_figure5_golden)
{
    uint8_t ulpdu[64], expect[64];
    size_t ulen = harness_hex(fig5_ulpdu, ulpdu, sizeof ulpdu);
    size_t elen = harness_hex("0000 0000 | 002a | 4143 00000000 00000000 00000001 00000000"
                              "000000000000000000000000000000000000000000000000 | 52239983",
                              expect, sizeof expect);
    ASSERT_EQ(ulen, 42);
    ASSERT_EQ(elen, 0x34);
    ASSERT_EQ(iwarp_mpa_fpdu_wire_len(0, 42, true), 0x34);
    expect_framed(true, true, 0, ulpdu, ulen, expect, elen);
}

/* RFC 5044 §4.4 Figure 6: the second FPDU, after a 492-octet first one; the marker at 0x200
 * splits the DDP header from the payload, FPDUPTR 0x14. */
TEST(rfc5044_figure6_golden)
{
    uint8_t ulpdu[64], expect[80];
    size_t ulen = harness_hex("4143 00000000 00000000 00000002 00000000"
                              "000000000000000000000000000000000000000000000000",
                              ulpdu, sizeof ulpdu);
    size_t elen = harness_hex("002a 4143 00000000 00000000 00000002 00000000 | 0000 0014 |"
                              "000000000000000000000000000000000000000000000000 | 84925898",
                              expect, sizeof expect);
    ASSERT_EQ(elen, 0x220 - 0x1ec);

    /* Directly at stream position 0x1ec ... */
    expect_framed(true, true, 0x1ec, ulpdu, ulen, expect, elen);

    /* ... and after a first FPDU of 492 octets on the wire: marker 4 + 2 + 482 + CRC 4. */
    struct iwarp_mpa_tx tx;
    tx_setup(&tx, true, true, 0);
    static uint8_t first[482];
    ASSERT_EQ(iwarp_mpa_fpdu_wire_len(0, sizeof first, true), 492);
    ASSERT_EQ(frame_one(&tx, first, sizeof first), 492);
    ASSERT_EQ(tx.pos, 0x1ec);
    ASSERT_EQ(frame_one(&tx, ulpdu, ulen), elen);
    ASSERT_MEM_EQ(g_wire, expect, elen);
}

/* RFC 5044 §4.3 Figure 4: ULPDU_Length 0x10, marker after ULPDU octet 9 with FPDUPTR 0x000C,
 * 2 PAD octets. The marker sits at FPDU offset 12, so the FPDU starts at stream position 500. */
TEST(rfc5044_figure4_golden)
{
    uint8_t ulpdu[16], expect[32];
    for (size_t i = 0; i < sizeof ulpdu; i++)
        ulpdu[i] = (uint8_t)(0xA0 + i);
    size_t elen = harness_hex("0010 a0a1 a2a3 a4a5 a6a7 a8a9 | 0000 000c | aaab acad aeaf | 0000 |"
                              "00000000",
                              expect, sizeof expect);
    ASSERT_EQ(elen, 528 - 500);
    expect_framed(false, true, 500, ulpdu, sizeof ulpdu, expect, elen);
}

/* wire-reference §1.9 CRC vectors, framed without markers: ULPDU_Length .. PAD then the CRC
 * least-significant octet first. */
TEST(crc_vectors_golden)
{
    static const struct {
        const char *ulpdu, *wire;
    } v[] = {
        {"c140 00000001 0000000000000000", "000e c140 00000001 0000000000000000 ebd34c5f"},
        {"4147 00000000 00000002 00000001 00000000 00000000",
         "0016 4147 00000000 00000002 00000001 00000000 00000000 f9a26f1d"},
        {"4143 00000000 00000000 00000001 00000000",
         "0012 4143 00000000 00000000 00000001 00000000 587be8c4"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t ulpdu[64], expect[64];
        size_t ulen = harness_hex(v[i].ulpdu, ulpdu, sizeof ulpdu);
        size_t elen = harness_hex(v[i].wire, expect, sizeof expect);
        expect_framed(true, false, 0, ulpdu, ulen, expect, elen);
        /* CRC off: the field is present and zero (RFC 5044 §4.1). */
        struct iwarp_mpa_tx tx;
        tx_setup(&tx, false, false, 0);
        ASSERT_EQ(frame_one(&tx, ulpdu, ulen), elen);
        ASSERT_MEM_EQ(g_wire, expect, elen - 4);
        ASSERT_EQ_U(iwarp_load_le32(g_wire + elen - 4), 0);
    }
}

/* Every PAD length, with the PAD octets zero and the FPDU a multiple of 4 (RFC 5044 §4.1). */
TEST(pad_lengths)
{
    ASSERT_EQ(iwarp_mpa_pad_len(1), 1);
    ASSERT_EQ(iwarp_mpa_pad_len(2), 0);
    ASSERT_EQ(iwarp_mpa_pad_len(3), 3);
    ASSERT_EQ(iwarp_mpa_pad_len(4), 2);
    memset(g_ulpdu, 0xEE, 8);
    for (uint32_t len = 1; len <= 8; len++) {
        struct iwarp_mpa_tx tx;
        tx_setup(&tx, false, false, 0);
        size_t w = frame_one(&tx, g_ulpdu, len);
        uint32_t pad = iwarp_mpa_pad_len(len);
        ASSERT_EQ(w, 2 + len + pad + 4);
        ASSERT_EQ(w % 4, 0);
        for (uint32_t i = 0; i < pad; i++)
            ASSERT_EQ(g_wire[2 + len + i], 0);
    }
}

/*
 * A marker on every 4-aligned octet of an FPDU (before the ULPDU_Length, inside the DDP header
 * and payload, right after the PAD before the CRC), for every PAD length, CRC on and off: the
 * framer matches the octet-at-a-time reference and the wire-size helper.
 */
TEST(markers_every_position)
{
    for (size_t i = 0; i < 64; i++)
        g_ulpdu[i] = (uint8_t)(i * 37u + 1u);
    for (uint32_t len = 13; len <= 45; len++) {
        for (uint32_t pos = 0; pos < 1024; pos += 4) {
            for (int crc = 0; crc < 2; crc++) {
                struct iwarp_mpa_tx tx;
                tx_setup(&tx, crc != 0, true, pos);
                size_t w = frame_one(&tx, g_ulpdu, len);
                expect_ref(w, pos, g_ulpdu, len, crc != 0, true);
                ASSERT_EQ(w, iwarp_mpa_fpdu_wire_len(pos, len, true));
                ASSERT_EQ(tx.pos, pos + w);
            }
        }
    }
}

/* Specific placements, by hand: a marker right after the PAD is CRC-covered by this FPDU and
 * points back to it (RFC 5044 §4.4 rule 1); the next FPDU then starts without a marker. */
TEST(marker_before_crc)
{
    uint8_t ulpdu[5] = {1, 2, 3, 4, 5}, expect[32];
    /* 2 + 5 + 1 pad = 8 octets before the CRC: start at 504 so the marker falls at 512. */
    size_t elen = harness_hex("0005 0102030405 00 | 0000 0008 | 00000000", expect, sizeof expect);
    uint32_t crc = iwarp_crc32c(expect, elen - 4);
    iwarp_store_le32(expect + elen - 4, crc);
    ASSERT_EQ(elen, 520 - 504);
    expect_framed(true, true, 504, ulpdu, sizeof ulpdu, expect, elen);
}

/* A ULPDU given as several iovecs (header, empty entry, payload pieces) is referenced in place:
 * the ULPDU octets of the output point into the caller's buffers. */
TEST(scatter_gather_in_place)
{
    static uint8_t hdr[18], pay1[700], pay2[333];
    uint8_t whole[sizeof hdr + sizeof pay1 + sizeof pay2];
    struct iovec in[4] = {{hdr, sizeof hdr}, {pay1, 0}, {pay1, sizeof pay1}, {pay2, sizeof pay2}};
    fill_pieces(in, 4, 0, whole);
    for (uint32_t pos = 0; pos < 512; pos += 4) {
        for (int markers = 0; markers < 2; markers++) {
            struct iwarp_mpa_tx tx;
            tx_setup(&tx, true, markers != 0, pos);
            iwarp_ssize n =
                iwarp_mpa_tx_frame(&tx, in, 4, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(4));
            ASSERT_TRUE(n > 0);
            size_t w = flatten(g_out, (size_t)n, g_wire);
            expect_ref(w, pos, whole, sizeof whole, true, markers != 0);
            /* the ULPDU from the caller's pieces, the rest (length, markers, pad, CRC) from
             * the scratch */
            size_t in_place = octets_in((size_t)n, hdr, sizeof hdr) +
                              octets_in((size_t)n, pay1, sizeof pay1) +
                              octets_in((size_t)n, pay2, sizeof pay2);
            ASSERT_EQ(in_place, sizeof whole);
            ASSERT_EQ(in_place + octets_in((size_t)n, &g_scratch, sizeof g_scratch), w);
        }
    }
}

/* iwarp_mpa_tx_frame_staged: the payload iovecs (from index 1) are copied into the stage and
 * the FPDU refers to the copy (header in place, payload only in the stage), the wire octets
 * equal the reference whatever the position and markers (a payload over the 8 KiB copy chunk
 * too), the copy is counted, and rewriting the source afterwards changes nothing sent. */
TEST(staged_payload_is_framed_from_the_copy)
{
    static uint8_t hdr[18], pay1[8700], pay2[333], stage[sizeof pay1 + sizeof pay2];
    static uint8_t whole[sizeof hdr + sizeof pay1 + sizeof pay2];
    for (uint32_t pos = 0; pos < 1024; pos += 4) {
        for (int markers = 0; markers < 2; markers++) {
            struct iovec in[3] = {{hdr, sizeof hdr}, {pay1, sizeof pay1}, {pay2, sizeof pay2}};
            fill_pieces(in, 3, pos, whole);
            struct iwarp_mpa_tx tx;
            tx_setup(&tx, true, markers != 0, pos);
            uint64_t copied = iwarp_copied_octets;
            iwarp_ssize n = iwarp_mpa_tx_frame_staged(&tx, in, 3, 1, stage, sizeof stage,
                                                      &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(3));
            ASSERT_TRUE(n > 0);
            ASSERT_EQ_U(iwarp_copied_octets - copied, sizeof stage);
            memset(pay1, 0xEE, sizeof pay1); /* the source changes after framing */
            memset(pay2, 0xEE, sizeof pay2);
            size_t w = flatten(g_out, (size_t)n, g_wire);
            expect_ref(w, pos, whole, sizeof whole, true, markers != 0);
            /* the header in place, the payload only from the stage */
            ASSERT_EQ(octets_in((size_t)n, hdr, sizeof hdr), sizeof hdr);
            ASSERT_EQ(octets_in((size_t)n, pay1, sizeof pay1), 0);
            ASSERT_EQ(octets_in((size_t)n, pay2, sizeof pay2), 0);
            ASSERT_EQ(octets_in((size_t)n, stage, sizeof stage), sizeof stage);
        }
    }
    /* a stage too small, or none, is refused and the framer is unchanged */
    struct iovec in[2] = {{hdr, sizeof hdr}, {pay2, sizeof pay2}};
    struct iwarp_mpa_tx tx;
    tx_setup(&tx, true, false, 0);
    ASSERT_EQ(iwarp_mpa_tx_frame_staged(&tx, in, 2, 1, stage, sizeof pay2 - 1, &g_scratch, g_out,
                                        IWARP_MPA_TX_IOV_MAX(2)),
              IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_mpa_tx_frame_staged(&tx, in, 2, 1, NULL, 0, &g_scratch, g_out,
                                        IWARP_MPA_TX_IOV_MAX(2)),
              IWARP_ERR_NOSPC);
    ASSERT_EQ_U(tx.pos, 0);
    /* from at or past the end: nothing staged, as iwarp_mpa_tx_frame */
    ASSERT_TRUE(iwarp_mpa_tx_frame_staged(&tx, in, 2, 2, NULL, 0, &g_scratch, g_out,
                                          IWARP_MPA_TX_IOV_MAX(2)) > 0);
}

/* A small FPDU (iwarp_mpa_tx_small: no markers, at most IWARP_MPA_TX_SMALL_FPDU octets) is one
 * iovec in the scratch, equal to the reference, with its ULPDU copied (counted) so that
 * rewriting the source changes nothing sent; it ignores a stage. One octet more, or markers,
 * and the FPDU refers to the caller's pieces again. */
TEST(small_fpdus_are_one_copy_in_the_scratch)
{
    static uint8_t hdr[18], pay[300], stage[sizeof pay];
    static uint8_t whole[sizeof hdr + sizeof pay];
    const uint32_t largest = IWARP_MPA_TX_SMALL_FPDU - IWARP_MPA_FPDU_OVERHEAD;
    for (uint32_t len = 1; len <= largest + 1; len++) {
        for (int crc = 0; crc < 2; crc++) {
            uint32_t plen = len > sizeof hdr ? len - (uint32_t)sizeof hdr : 0;
            struct iovec in[2] = {{hdr, len - plen}, {pay, plen}};
            fill_pieces(in, 2, len, whole);
            struct iwarp_mpa_tx tx;
            tx_setup(&tx, crc != 0, false, 4 * len);
            bool small = iwarp_mpa_tx_small(&tx, len);
            ASSERT_EQ(small, len <= largest);
            uint64_t copied = iwarp_copied_octets;
            iwarp_ssize n = iwarp_mpa_tx_frame_staged(&tx, in, 2, 1, stage, sizeof stage,
                                                      &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(2));
            ASSERT_TRUE(n > 0);
            /* the source changes after framing (the general framer sends the header in place) */
            if (small)
                memset(hdr, 0xEE, sizeof hdr);
            memset(pay, 0xEE, sizeof pay);
            size_t w = flatten(g_out, (size_t)n, g_wire);
            expect_ref(w, 4 * len, whole, len, crc != 0, false);
            ASSERT_EQ(tx.pos, 4 * len + (uint32_t)w);
            if (small) {
                ASSERT_EQ(n, 1);
                ASSERT_EQ(octets_in(1, g_scratch.fpdu, sizeof g_scratch.fpdu), w);
                ASSERT_EQ_U(iwarp_copied_octets - copied, len);
            } else { /* the header in place, the payload from the stage */
                ASSERT_EQ(octets_in((size_t)n, stage, sizeof stage), plen);
            }
        }
    }
    struct iwarp_mpa_tx tx;
    tx_setup(&tx, true, true, 0);
    ASSERT_FALSE(iwarp_mpa_tx_small(&tx, 1)); /* markers: the general framer places them */
}

/* Several FPDUs in a row: the framer tracks the stream position, and the concatenation equals
 * the reference FPDUs laid end to end. */
TEST(stream_position_tracking)
{
    static const uint32_t lens[] = {1, 42, 509, 510, 511, 512, 513, 1442, 3, 4000, 18, 14};
    for (int markers = 0; markers < 2; markers++) {
        struct iwarp_mpa_tx tx;
        tx_setup(&tx, true, markers != 0, 0);
        uint32_t pos = 0;
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            for (uint32_t i = 0; i < lens[k]; i++)
                g_ulpdu[i] = (uint8_t)(i ^ k);
            size_t w = frame_one(&tx, g_ulpdu, lens[k]);
            expect_ref(w, pos, g_ulpdu, lens[k], true, markers != 0);
            pos += (uint32_t)w;
            ASSERT_EQ(tx.pos, pos);
        }
    }
}

/* Stream positions wrap modulo 2^32 without disturbing the 512-octet grid (RFC 5044 §4.3). */
TEST(stream_position_wraps)
{
    memset(g_ulpdu, 0x5A, 1000);
    struct iwarp_mpa_tx tx;
    uint32_t pos = 0xFFFFFF00u;
    tx_setup(&tx, true, true, pos);
    size_t w = frame_one(&tx, g_ulpdu, 1000);
    ASSERT_EQ(tx.pos, (uint32_t)(pos + w));
    /* The marker at 2^32 (= 0 mod 512) is 0x100 octets in, FPDUPTR 0x100. */
    ASSERT_EQ(w, 2 + 1000 + 2 + 4 + 4 * 2);
    uint8_t m[4] = {0, 0, 0x01, 0x00};
    ASSERT_MEM_EQ(g_wire + 0x100, m, 4);
    expect_ref(w, pos, g_ulpdu, 1000, true, true);
}

/* Markers in an FPDU of ulpdu_len octets starting at stream position pos. */
static uint32_t markers_in(uint32_t pos, uint32_t ulpdu_len)
{
    uint32_t w = iwarp_mpa_fpdu_wire_len(pos, ulpdu_len, true);
    return (w - (IWARP_MPA_FPDU_OVERHEAD + ulpdu_len + iwarp_mpa_pad_len(ulpdu_len))) / 4;
}

/* With markers, the largest ULPDU we frame (IWARP_MPA_MARKED_ULPDU_MAX) needs at most
 * IWARP_MPA_TX_MAX_MARKERS markers at every 4-aligned position, and some position needs exactly
 * that many: the room is tight; one octet more would need one marker more somewhere, and is
 * refused. */
TEST(max_ulpdu_marker_bound)
{
    for (uint32_t i = 0; i < IWARP_MPA_MULPDU_MAX; i++)
        g_ulpdu[i] = (uint8_t)(i * 13u);
    uint32_t most = 0, most_over = 0;
    for (uint32_t pos = 0; pos < 512; pos += 4) {
        uint32_t m = markers_in(pos, IWARP_MPA_MARKED_ULPDU_MAX);
        ASSERT_TRUE(m <= IWARP_MPA_TX_MAX_MARKERS);
        most = m > most ? m : most;
        m = markers_in(pos, IWARP_MPA_MARKED_ULPDU_MAX + 1u);
        most_over = m > most_over ? m : most_over;
        ASSERT_TRUE(iwarp_mpa_fpdu_wire_len(pos, IWARP_MPA_MULPDU_MAX, true) <= 65535);
    }
    ASSERT_EQ(most, IWARP_MPA_TX_MAX_MARKERS);
    ASSERT_EQ(most_over, IWARP_MPA_TX_MAX_MARKERS + 1u);
    for (uint32_t pos = 0; pos < 512; pos += 4 * 17) {
        struct iwarp_mpa_tx tx;
        tx_setup(&tx, true, true, pos);
        struct iovec in = {g_ulpdu, IWARP_MPA_MARKED_ULPDU_MAX};
        iwarp_ssize n = iwarp_mpa_tx_frame(&tx, &in, 1, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(1));
        ASSERT_TRUE(n > 0 && (size_t)n <= IWARP_MPA_TX_IOV_MAX(1));
        size_t w = flatten(g_out, (size_t)n, g_wire);
        size_t r = ref_fpdu(pos, g_ulpdu, IWARP_MPA_MARKED_ULPDU_MAX, true, true, g_ref);
        ASSERT_EQ(w, r);
        ASSERT_MEM_EQ(g_wire, g_ref, r);
        in.iov_len++;
        ASSERT_EQ(iwarp_mpa_tx_frame(&tx, &in, 1, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(1)),
                  IWARP_ERR_FPDU_LEN);
    }
}

TEST(bad_lengths)
{
    struct iwarp_mpa_tx tx;
    tx_setup(&tx, true, false, 0); /* with markers the bound is lower (max_ulpdu_marker_bound) */
    struct iovec in[2] = {{g_ulpdu, 0}, {g_ulpdu, 0}};
    /* RFC 5044 §3: 1..64768 octets. */
    ASSERT_EQ(iwarp_mpa_tx_frame(&tx, in, 2, &g_scratch, g_out, 8), IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(iwarp_mpa_tx_frame(&tx, NULL, 0, &g_scratch, g_out, 8), IWARP_ERR_FPDU_LEN);
    in[0].iov_len = IWARP_MPA_MULPDU_MAX;
    in[1].iov_len = 1;
    ASSERT_EQ(iwarp_mpa_tx_frame(&tx, in, 2, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(2)),
              IWARP_ERR_FPDU_LEN);
    in[1].iov_len = SIZE_MAX; /* no wrap-around in the sum */
    ASSERT_EQ(iwarp_mpa_tx_frame(&tx, in, 2, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(2)),
              IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(tx.pos, 0);
    in[1].iov_len = 0;
    ASSERT_TRUE(iwarp_mpa_tx_frame(&tx, in, 2, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(2)) > 0);
}

/* Too few output iovecs: IWARP_ERR_NOSPC and the framer unchanged; the exact count works. */
TEST(out_of_iovecs)
{
    struct iovec in[2] = {{g_ulpdu, 100}, {g_ulpdu + 200, 1000}};
    struct iwarp_mpa_tx tx;
    tx_setup(&tx, true, true, 0);
    iwarp_ssize need = iwarp_mpa_tx_frame(&tx, in, 2, &g_scratch, g_out, IWARP_MPA_TX_IOV_MAX(2));
    ASSERT_TRUE(need > 0);
    /* marker, length, 100, 1000 split by 2 markers, pad+CRC */
    ASSERT_EQ(need, 1 + 1 + 1 + 3 + 2 + 1);
    uint32_t pos_after = tx.pos;
    tx_setup(&tx, true, true, 0);
    for (size_t cap = 0; cap < (size_t)need; cap++) {
        ASSERT_EQ(iwarp_mpa_tx_frame(&tx, in, 2, &g_scratch, g_out, cap), IWARP_ERR_NOSPC);
        ASSERT_EQ(tx.pos, 0);
    }
    ASSERT_EQ(iwarp_mpa_tx_frame(&tx, in, 2, &g_scratch, g_out, (size_t)need), need);
    ASSERT_EQ(tx.pos, pos_after);
}

TEST(init_rejects_unaligned_position)
{
    struct iwarp_mpa_tx tx;
    for (uint32_t pos = 1; pos < 4; pos++) {
        struct iwarp_mpa_tx_cfg cfg = {.crc = true, .markers = true, .stream_pos = pos};
        ASSERT_EQ(iwarp_mpa_tx_init(&tx, &cfg), IWARP_ERR_INVAL);
    }
}

/* RFC 5044 §4.5 examples (wire-reference §1.9) and hand-computed values. */
TEST(mulpdu_values)
{
    ASSERT_EQ(iwarp_mpa_mulpdu(1448, false), 1442);
    ASSERT_EQ(iwarp_mpa_mulpdu(1460, false), 1454);
    ASSERT_EQ(iwarp_mpa_mulpdu(1460, true), 1442); /* 1460 - (6 + 4*3 + 0) */
    ASSERT_EQ(iwarp_mpa_mulpdu(1448, true), 1430); /* 1448 - (6 + 4*3 + 0) */
    ASSERT_EQ(iwarp_mpa_mulpdu(65483, false), 64768);
    ASSERT_EQ(iwarp_mpa_mulpdu(65483, true), IWARP_MPA_MARKED_ULPDU_MAX);
    ASSERT_EQ(iwarp_mpa_mulpdu(8948, true), 8870);  /* a jumbo frame's: 8948 - (6 + 4*18) */
    ASSERT_EQ(iwarp_mpa_mulpdu(512, true), 502);    /* 512 - (6 + 4*1 + 0) */
    ASSERT_EQ(iwarp_mpa_mulpdu(513, true), 498);    /* 513 - (6 + 4*2 + 1) */
    ASSERT_EQ(iwarp_mpa_mulpdu(1023, false), 1014); /* 1023 - (6 + 3) */
    /* RFC 5044 §3, §4.5: never below 128 nor above 64768. */
    ASSERT_EQ(iwarp_mpa_mulpdu(0, true), 128);
    ASSERT_EQ(iwarp_mpa_mulpdu(100, false), 128);
    ASSERT_EQ(iwarp_mpa_mulpdu(134, false), 128);
    ASSERT_EQ(iwarp_mpa_mulpdu(136, false), 130);
    ASSERT_EQ(iwarp_mpa_mulpdu(UINT32_MAX, true), IWARP_MPA_MARKED_ULPDU_MAX);
}

/* RFC 5044 §4.5's purpose: an FPDU with a MULPDU-sized ULPDU fits in EMSS octets wherever it
 * starts, with or without markers (as long as the 128-octet floor does not apply). */
TEST(mulpdu_fits_emss)
{
    for (uint32_t emss = 134; emss <= 66000; emss += (emss < 4096 ? 1u : 97u)) {
        for (int markers = 0; markers < 2; markers++) {
            uint32_t m = iwarp_mpa_mulpdu(emss, markers != 0);
            if (m == IWARP_MPA_MULPDU_MIN || m == IWARP_MPA_MULPDU_MAX ||
                (markers && m == IWARP_MPA_MARKED_ULPDU_MAX))
                continue;
            for (uint32_t pos = 0; pos < 512; pos += 4) {
                ASSERT_TRUE(iwarp_mpa_fpdu_wire_len(pos, m, markers != 0) <= emss);
                if (!markers)
                    break;
            }
        }
    }
}
