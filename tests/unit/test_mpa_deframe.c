/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA receive deframing: RFC 5044 Figures 4-6 and the wire-reference §1.9 vectors as golden
 * input; multi-FPDU streams (CRC and markers on and off) under every split into two pieces,
 * one-octet pieces and seeded random pieces; a marker at every 4-aligned FPDU position; the
 * zero-copy want() query; every error path with its exact code and stickiness.
 */
#include <sys/uio.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"
#include "mpa_ref.h"
#include "util/bytes.h"
#include "util/crc32c.h"

#define STREAM_MAX (1u << 19)

static uint8_t g_stream[STREAM_MAX];
static uint8_t g_expect[STREAM_MAX]; /* the ULPDUs of g_stream, concatenated */
static uint8_t g_got[STREAM_MAX];

/* What a deframing run produced. */
struct result {
    int err;          /* 0 or the error returned */
    size_t ulpdu_out; /* octets of completed ULPDUs in g_got */
    size_t nfpdu;     /* FPDU events */
    uint32_t lens[512];
    uint32_t fpdu_pos[512];
    bool crc_checked; /* of the last FPDU event */
    uint32_t cur_off; /* octets of the current (incomplete) ULPDU seen */
};

/* A deterministic PRNG for piece sizes and contents. */
static uint32_t rng_next(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void rx_setup(struct iwarp_mpa_rx *rx, bool crc, bool markers, uint32_t max, uint32_t pos)
{
    struct iwarp_mpa_rx_cfg cfg = {
        .crc = crc, .markers = markers, .max_ulpdu = max, .stream_pos = pos};
    ASSERT_EQ(iwarp_mpa_rx_init(rx, &cfg), 0);
}

/* An FPDU event: its ULPDU (all of it in g_got now) is complete. */
static void record_fpdu(struct result *r, const struct iwarp_mpa_rx_ev *ev)
{
    ASSERT_TRUE(r->nfpdu < sizeof r->lens / sizeof r->lens[0]);
    r->lens[r->nfpdu] = ev->ulpdu_len;
    r->fpdu_pos[r->nfpdu] = ev->fpdu_pos;
    r->nfpdu++;
    r->ulpdu_out += ev->ulpdu_len;
    r->crc_checked = ev->crc_checked;
    r->cur_off = 0;
}

/* Feeds one piece completely (or up to an error), checking the event invariants. */
static void feed_piece(struct iwarp_mpa_rx *rx, const uint8_t *p, size_t len, struct result *r)
{
    while (len > 0 && r->err == 0) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize n = iwarp_mpa_rx_feed(rx, p, len, &ev);
        if (n < 0) {
            r->err = (int)n;
            return;
        }
        ASSERT_TRUE((size_t)n <= len);
        if (ev.kind == IWARP_MPA_RX_EV_NONE)
            ASSERT_EQ((size_t)n, len);
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU) {
            ASSERT_TRUE(ev.len > 0);
            ASSERT_TRUE(ev.data >= p && ev.data + ev.len <= p + n); /* inside this call's data */
            ASSERT_EQ(ev.ulpdu_off, r->cur_off);                    /* in order, no gap */
            ASSERT_TRUE(ev.ulpdu_off + ev.len <= ev.ulpdu_len);
            memcpy(g_got + r->ulpdu_out + ev.ulpdu_off, ev.data, ev.len);
            r->cur_off += (uint32_t)ev.len;
        } else if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            ASSERT_EQ(r->cur_off, ev.ulpdu_len);
            record_fpdu(r, &ev);
        }
        p += n;
        len -= (size_t)n;
    }
}

/* Piece-size strategies: 0 = every split at `cut`, 1 = one octet, 2 = random (seeded). */
static void deframe(struct iwarp_mpa_rx *rx, const uint8_t *s, size_t len, int how, size_t cut,
                    uint32_t seed, struct result *r)
{
    memset(r, 0, sizeof *r);
    size_t off = 0;
    while (off < len && r->err == 0) {
        size_t k;
        if (how == 0)
            k = off < cut ? cut - off : len - off;
        else if (how == 1)
            k = 1;
        else
            k = 1 + rng_next(&seed) % (rng_next(&seed) % 2 ? 7u : 1500u);
        if (k > len - off)
            k = len - off;
        feed_piece(rx, s + off, k, r);
        off += k;
    }
}

/* Builds a stream of FPDUs with the reference framer (mpa_ref.h, against which test_mpa_frame
 * pins ours; it also frames what ours refuses, FPDUs of up to 64768 octets with markers, as a
 * peer may send them); the ULPDUs go to g_expect. Returns the stream length. */
static size_t build_stream(bool crc, bool markers, uint32_t pos, const uint32_t *lens, size_t n,
                           uint32_t seed, uint32_t *fpdu_pos)
{
    size_t slen = 0, elen = 0;
    for (size_t k = 0; k < n; k++) {
        for (uint32_t i = 0; i < lens[k]; i++)
            g_expect[elen + i] = (uint8_t)rng_next(&seed);
        /* ULPDU_Length sits after a marker that falls right at the FPDU's start. */
        fpdu_pos[k] = pos + (markers && pos % 512 == 0 ? 4u : 0u);
        ASSERT_TRUE(slen + iwarp_mpa_fpdu_wire_len(pos, lens[k], markers) <= STREAM_MAX);
        size_t w = ref_fpdu(pos, g_expect + elen, lens[k], crc, markers, g_stream + slen);
        ASSERT_EQ(w, iwarp_mpa_fpdu_wire_len(pos, lens[k], markers));
        slen += w;
        pos += (uint32_t)w;
        elen += lens[k];
    }
    return slen;
}

static void check_result(const struct result *r, const uint32_t *lens, const uint32_t *fpdu_pos,
                         size_t n, bool crc)
{
    ASSERT_EQ(r->err, 0);
    ASSERT_EQ(r->nfpdu, n);
    ASSERT_EQ(r->cur_off, 0);
    size_t total = 0;
    for (size_t k = 0; k < n; k++) {
        ASSERT_EQ(r->lens[k], lens[k]);
        ASSERT_EQ_U(r->fpdu_pos[k], fpdu_pos[k]);
        total += lens[k];
    }
    ASSERT_EQ(r->ulpdu_out, total);
    ASSERT_MEM_EQ(g_got, g_expect, total);
    ASSERT_EQ(r->crc_checked, crc);
}

/* ---- golden FPDUs ---- */

static const char fig5_wire[] = "0000 0000 | 002a | 4143 00000000 00000000 00000001 00000000"
                                "000000000000000000000000000000000000000000000000 | 52239983";
static const char fig6_wire[] = "002a 4143 00000000 00000000 00000002 00000000 | 0000 0014 |"
                                "000000000000000000000000000000000000000000000000 | 84925898";

/* Deframes one golden FPDU under every split, one-octet pieces and random pieces. */
static void golden(const char *wire_hex, const char *ulpdu_hex, bool crc, bool markers,
                   uint32_t pos)
{
    uint8_t wire[256];
    size_t wlen = harness_hex(wire_hex, wire, sizeof wire);
    size_t ulen = harness_hex(ulpdu_hex, g_expect, sizeof g_expect);
    uint32_t lens[1] = {(uint32_t)ulen};
    uint32_t fpos[1] = {pos + (markers && pos % 512 == 0 ? 4u : 0u)};
    struct result r;
    for (size_t cut = 0; cut <= wlen; cut++) {
        struct iwarp_mpa_rx rx;
        rx_setup(&rx, crc, markers, 0, pos);
        deframe(&rx, wire, wlen, 0, cut, 0, &r);
        check_result(&r, lens, fpos, 1, crc);
    }
    for (int how = 1; how <= 2; how++) {
        struct iwarp_mpa_rx rx;
        rx_setup(&rx, crc, markers, 0, pos);
        deframe(&rx, wire, wlen, how, 0, 7, &r);
        check_result(&r, lens, fpos, 1, crc);
    }
}

TEST(rfc5044_figure5)
{
    golden(fig5_wire,
           "4143 00000000 00000000 00000001 00000000"
           "000000000000000000000000000000000000000000000000",
           true, true, 0);
}

TEST(rfc5044_figure6)
{
    golden(fig6_wire,
           "4143 00000000 00000000 00000002 00000000"
           "000000000000000000000000000000000000000000000000",
           true, true, 0x1ec);
}

/* Figure 4 (CRC off; the field holds arbitrary octets and is not checked, RFC 5044 §4.1). */
TEST(rfc5044_figure4)
{
    golden("0010 a0a1 a2a3 a4a5 a6a7 a8a9 | 0000 000c | aaab acad aeaf | 0000 | deadbeef",
           "a0a1 a2a3 a4a5 a6a7 a8a9 aaab acad aeaf", false, true, 500);
}

/* wire-reference §1.9 vectors, no markers. */
TEST(crc_vectors)
{
    golden("000e c140 00000001 0000000000000000 ebd34c5f", "c140 00000001 0000000000000000", true,
           false, 0);
    golden("0016 4147 00000000 00000002 00000001 00000000 00000000 f9a26f1d",
           "4147 00000000 00000002 00000001 00000000 00000000", true, false, 0);
    golden("0012 4143 00000000 00000000 00000001 00000000 587be8c4",
           "4143 00000000 00000000 00000001 00000000", true, false, 0);
}

/* The three §1.9 FPDUs in one stream: three events with the right lengths and contents. */
TEST(crc_vectors_stream)
{
    size_t slen = harness_hex("000e c140 00000001 0000000000000000 ebd34c5f"
                              "0016 4147 00000000 00000002 00000001 00000000 00000000 f9a26f1d"
                              "0012 4143 00000000 00000000 00000001 00000000 587be8c4",
                              g_stream, sizeof g_stream);
    harness_hex("c140 00000001 0000000000000000"
                "4147 00000000 00000002 00000001 00000000 00000000"
                "4143 00000000 00000000 00000001 00000000",
                g_expect, sizeof g_expect);
    uint32_t lens[3] = {14, 22, 18}, fpos[3] = {0, 20, 48};
    for (size_t cut = 0; cut <= slen; cut++) {
        struct iwarp_mpa_rx rx;
        struct result r;
        rx_setup(&rx, true, false, 0, 0);
        deframe(&rx, g_stream, slen, 0, cut, 0, &r);
        check_result(&r, lens, fpos, 3, true);
    }
}

/* ---- multi-FPDU streams ---- */

static const uint32_t k_lens[] = {1, 2, 3, 4, 14, 18, 42, 100, 505, 506, 507, 508, 509, 1442, 5};
#define K_N (sizeof k_lens / sizeof k_lens[0])

TEST(stream_every_split)
{
    for (int cfg = 0; cfg < 4; cfg++) {
        bool crc = cfg & 1, markers = cfg & 2;
        uint32_t fpos[K_N];
        size_t slen = build_stream(crc, markers, 0, k_lens, K_N, 99u + (uint32_t)cfg, fpos);
        for (size_t cut = 0; cut <= slen; cut++) {
            struct iwarp_mpa_rx rx;
            struct result r;
            rx_setup(&rx, crc, markers, 0, 0);
            deframe(&rx, g_stream, slen, 0, cut, 0, &r);
            check_result(&r, k_lens, fpos, K_N, crc);
        }
    }
}

TEST(stream_one_octet_and_random_pieces)
{
    static const uint32_t starts[] = {0, 4, 252, 508, 0x1ec, 0xFFFFFE00u, 0xFFFFFFFCu};
    for (int cfg = 0; cfg < 4; cfg++) {
        bool crc = cfg & 1, markers = cfg & 2;
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
            uint32_t fpos[K_N];
            size_t slen = build_stream(crc, markers, starts[s], k_lens, K_N, (uint32_t)s, fpos);
            struct iwarp_mpa_rx rx;
            struct result r;
            rx_setup(&rx, crc, markers, 0, starts[s]);
            deframe(&rx, g_stream, slen, 1, 0, 0, &r);
            check_result(&r, k_lens, fpos, K_N, crc);
            for (uint32_t seed = 1; seed <= 40; seed++) {
                rx_setup(&rx, crc, markers, 0, starts[s]);
                deframe(&rx, g_stream, slen, 2, 0, seed, &r);
                check_result(&r, k_lens, fpos, K_N, crc);
            }
        }
    }
}

/* Large ULPDUs (up to 64768 octets, 128 markers inside) in random pieces. */
TEST(stream_large_ulpdus)
{
    static const uint32_t lens[] = {64768, 1, 64767, 30000, 64766, 64765};
    uint32_t fpos[6];
    for (int cfg = 0; cfg < 4; cfg++) {
        bool crc = cfg & 1, markers = cfg & 2;
        size_t slen = build_stream(crc, markers, 0x100, lens, 6, 5, fpos);
        for (uint32_t seed = 1; seed <= 4; seed++) {
            struct iwarp_mpa_rx rx;
            struct result r;
            rx_setup(&rx, crc, markers, 0, 0x100);
            deframe(&rx, g_stream, slen, 2, 0, seed, &r);
            check_result(&r, lens, fpos, 6, crc);
        }
    }
}

/* A marker on every 4-aligned position of an FPDU (positions are 4-aligned, so a marker never
 * splits the ULPDU_Length or CRC): before its ULPDU_Length (FPDUPTR 0), inside the DDP header
 * and the payload, right after the PAD before the CRC, between this FPDU and the next; for every
 * PAD length; in one-octet and whole pieces. */
TEST(markers_every_position)
{
    for (uint32_t len = 13; len <= 45; len++) {
        uint32_t lens[2] = {len, 21};
        for (uint32_t pos = 0; pos < 1024; pos += 4) {
            for (int crc = 0; crc < 2; crc++) {
                uint32_t fpos[2];
                size_t slen = build_stream(crc != 0, true, pos, lens, 2, len ^ pos, fpos);
                struct iwarp_mpa_rx rx;
                struct result r;
                rx_setup(&rx, crc != 0, true, 0, pos);
                deframe(&rx, g_stream, slen, 1, 0, 0, &r);
                check_result(&r, lens, fpos, 2, crc != 0);
                rx_setup(&rx, crc != 0, true, 0, pos);
                deframe(&rx, g_stream, slen, 0, slen, 0, &r);
                check_result(&r, lens, fpos, 2, crc != 0);
            }
        }
    }
}

/* ---- want() ---- */

/* Drives the deframer by want() alone: each wanted count is consumed by one call; ULPDU parts
 * come back as one span at the announced offset; markers sit on the 512-octet grid. */
static void drive_by_want(const uint8_t *s, size_t slen, bool crc, bool markers, uint32_t pos,
                          const uint32_t *lens, const uint32_t *fpos, size_t n)
{
    struct iwarp_mpa_rx rx;
    struct result r;
    memset(&r, 0, sizeof r);
    rx_setup(&rx, crc, markers, 0, pos);
    size_t off = 0;
    while (off < slen) {
        struct iwarp_mpa_rx_want w;
        size_t k = iwarp_mpa_rx_want(&rx, &w);
        ASSERT_EQ(k, w.len);
        ASSERT_TRUE(k >= 1 && off + k <= slen);
        uint32_t spos = pos + (uint32_t)off;
        switch (w.part) {
        case IWARP_MPA_RX_PART_MARKER:
            ASSERT_TRUE(markers);
            ASSERT_EQ(k, 4);
            ASSERT_EQ(spos % 512, 0);
            break;
        case IWARP_MPA_RX_PART_HDR:
            ASSERT_EQ(k, 2);
            break;
        case IWARP_MPA_RX_PART_ULPDU:
            ASSERT_EQ(w.ulpdu_off, r.cur_off);
            ASSERT_EQ(w.ulpdu_len, lens[r.nfpdu]);
            break;
        case IWARP_MPA_RX_PART_TRAILER:
            ASSERT_EQ(w.ulpdu_len, lens[r.nfpdu]);
            break;
        default:
            ASSERT_TRUE(false);
        }
        if (markers) /* never across a marker boundary */
            ASSERT_TRUE(w.part == IWARP_MPA_RX_PART_MARKER || spos % 512 + k <= 512);
        struct iwarp_mpa_rx_ev ev;
        ASSERT_EQ(iwarp_mpa_rx_feed(&rx, s + off, k, &ev), (iwarp_ssize)k);
        if (w.part == IWARP_MPA_RX_PART_ULPDU) {
            ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_ULPDU);
            ASSERT_EQ(ev.len, k);
            ASSERT_EQ(ev.ulpdu_off, w.ulpdu_off);
        } else if (w.part != IWARP_MPA_RX_PART_TRAILER) {
            ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_NONE);
        }
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU) {
            memcpy(g_got + r.ulpdu_out + ev.ulpdu_off, ev.data, ev.len);
            r.cur_off += (uint32_t)ev.len;
        } else if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            ASSERT_EQ(w.part, IWARP_MPA_RX_PART_TRAILER);
            r.lens[r.nfpdu] = ev.ulpdu_len;
            r.fpdu_pos[r.nfpdu] = ev.fpdu_pos;
            r.nfpdu++;
            r.ulpdu_out += ev.ulpdu_len;
            r.crc_checked = ev.crc_checked;
            r.cur_off = 0;
        }
        off += k;
    }
    check_result(&r, lens, fpos, n, crc);
}

/* Figure 5 and 6 want() sequences, by hand. */
TEST(want_golden_sequences)
{
    uint8_t wire[128];
    size_t wlen = harness_hex(fig5_wire, wire, sizeof wire);
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_want w;
    struct iwarp_mpa_rx_ev ev;
    static const struct {
        enum iwarp_mpa_rx_part part;
        size_t len;
    } fig5[] = {{IWARP_MPA_RX_PART_MARKER, 4},
                {IWARP_MPA_RX_PART_HDR, 2},
                {IWARP_MPA_RX_PART_ULPDU, 42},
                {IWARP_MPA_RX_PART_TRAILER, 4}},
      fig6[] = {{IWARP_MPA_RX_PART_HDR, 2},
                {IWARP_MPA_RX_PART_ULPDU, 18},
                {IWARP_MPA_RX_PART_MARKER, 4},
                {IWARP_MPA_RX_PART_ULPDU, 24},
                {IWARP_MPA_RX_PART_TRAILER, 4}};
    rx_setup(&rx, true, true, 0, 0);
    size_t off = 0;
    for (size_t i = 0; i < 4; i++) {
        ASSERT_EQ(iwarp_mpa_rx_want(&rx, &w), fig5[i].len);
        ASSERT_EQ(w.part, fig5[i].part);
        ASSERT_EQ(iwarp_mpa_rx_feed(&rx, wire + off, w.len, &ev), (iwarp_ssize)w.len);
        off += w.len;
    }
    ASSERT_EQ(off, wlen);
    ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_FPDU);
    ASSERT_TRUE(ev.crc_checked);

    wlen = harness_hex(fig6_wire, wire, sizeof wire);
    rx_setup(&rx, true, true, 0, 0x1ec);
    off = 0;
    for (size_t i = 0; i < 5; i++) {
        ASSERT_EQ(iwarp_mpa_rx_want(&rx, &w), fig6[i].len);
        ASSERT_EQ(w.part, fig6[i].part);
        if (i == 3)
            ASSERT_EQ(w.ulpdu_off, 18);
        ASSERT_EQ(iwarp_mpa_rx_feed(&rx, wire + off, w.len, &ev), (iwarp_ssize)w.len);
        off += w.len;
    }
    ASSERT_EQ(off, wlen);
    ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_FPDU);

    /* PAD then a marker, then the CRC: want() stops at the marker. */
    rx_setup(&rx, false, true, 0, 504);
    uint8_t pad_case[32];
    size_t plen = harness_hex("0005 0102030405 00 | 0000 0008 | 00000000", pad_case, 32);
    static const struct {
        enum iwarp_mpa_rx_part part;
        size_t len;
    } seq[] = {{IWARP_MPA_RX_PART_HDR, 2},
               {IWARP_MPA_RX_PART_ULPDU, 5},
               {IWARP_MPA_RX_PART_TRAILER, 1},
               {IWARP_MPA_RX_PART_MARKER, 4},
               {IWARP_MPA_RX_PART_TRAILER, 4}};
    off = 0;
    for (size_t i = 0; i < 5; i++) {
        ASSERT_EQ(iwarp_mpa_rx_want(&rx, &w), seq[i].len);
        ASSERT_EQ(w.part, seq[i].part);
        ASSERT_EQ(iwarp_mpa_rx_feed(&rx, pad_case + off, w.len, &ev), (iwarp_ssize)w.len);
        off += w.len;
    }
    ASSERT_EQ(off, plen);
    ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_FPDU);
    ASSERT_FALSE(ev.crc_checked);
}

TEST(want_drives_streams)
{
    for (int cfg = 0; cfg < 4; cfg++) {
        bool crc = cfg & 1, markers = cfg & 2;
        for (uint32_t pos = 0; pos < 512; pos += 4 * 9) {
            uint32_t fpos[K_N];
            size_t slen = build_stream(crc, markers, pos, k_lens, K_N, pos, fpos);
            drive_by_want(g_stream, slen, crc, markers, pos, k_lens, fpos, K_N);
        }
    }
}

/* ---- errors ---- */

/* Feeds the whole input; returns the error (or 0) and how many FPDU events were seen. */
static int run(const uint8_t *s, size_t len, bool crc, bool markers, uint32_t max, uint32_t pos,
               size_t *nfpdu)
{
    struct iwarp_mpa_rx rx;
    struct result r;
    rx_setup(&rx, crc, markers, max, pos);
    deframe(&rx, s, len, 0, len, 0, &r);
    if (nfpdu)
        *nfpdu = r.nfpdu;
    /* sticky: once failed, every call fails the same way, and want() says so */
    if (r.err != 0) {
        struct iwarp_mpa_rx_ev ev;
        uint8_t one = 0;
        ASSERT_EQ(iwarp_mpa_rx_feed(&rx, &one, 1, &ev), r.err);
        ASSERT_EQ(iwarp_mpa_rx_feed(&rx, NULL, 0, &ev), r.err);
        struct iwarp_mpa_rx_want w;
        ASSERT_EQ(iwarp_mpa_rx_want(&rx, &w), 0);
        ASSERT_EQ(w.part, IWARP_MPA_RX_PART_FAILED);
    }
    /* one-octet pieces agree */
    struct result r1;
    rx_setup(&rx, crc, markers, max, pos);
    deframe(&rx, s, len, 1, 0, 0, &r1);
    ASSERT_EQ(r1.err, r.err);
    ASSERT_EQ(r1.nfpdu, r.nfpdu);
    return r.err;
}

/* RFC 5044 §4.4: any changed octet of Figure 5 but the ULPDU_Length fails the CRC, including
 * the marker's Reserved field and FPDUPTR (markers are CRC-covered; code 2 wins over code 3,
 * RFC 5044 §8). */
TEST(error_crc_every_octet)
{
    uint8_t wire[64];
    size_t wlen = harness_hex(fig5_wire, wire, sizeof wire);
    for (size_t i = 0; i < wlen; i++) {
        if (i == 4 || i == 5)
            continue; /* the length field: see error_length_field_corrupted */
        for (unsigned bit = 0; bit < 8; bit++) {
            wire[i] ^= (uint8_t)(1u << bit);
            size_t nf;
            ASSERT_EQ(run(wire, wlen, true, true, 0, 0, &nf), IWARP_ERR_FPDU_CRC);
            ASSERT_EQ(nf, 0);
            wire[i] ^= (uint8_t)(1u << bit);
        }
    }
    ASSERT_EQ(run(wire, wlen, true, true, 0, 0, NULL), 0);
}

/* A corrupted ULPDU_Length never yields a verified FPDU: the CRC fails, the FPDU stays
 * incomplete, or the length is out of range. */
TEST(error_length_field_corrupted)
{
    uint8_t wire[64];
    size_t wlen = harness_hex(fig5_wire, wire, sizeof wire);
    for (size_t i = 4; i <= 5; i++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            wire[i] ^= (uint8_t)(1u << bit);
            size_t nf;
            int err = run(wire, wlen, true, true, 0, 0, &nf);
            ASSERT_EQ(nf, 0);
            ASSERT_TRUE(err == 0 || err == IWARP_ERR_FPDU_CRC || err == IWARP_ERR_FPDU_MARKER ||
                        err == IWARP_ERR_FPDU_LEN);
            wire[i] ^= (uint8_t)(1u << bit);
        }
    }
}

/* CRC off: the CRC field is not checked (RFC 5044 §4.1) and a bad FPDUPTR fails at once. */
TEST(error_marker_without_crc)
{
    uint8_t wire[64];
    size_t wlen = harness_hex(fig5_wire, wire, sizeof wire);
    wire[wlen - 1] ^= 0xFF; /* CRC ignored */
    wire[1] = 0x55;         /* Reserved: ignored on receive (RFC 5044 §4.2) */
    size_t nf;
    ASSERT_EQ(run(wire, wlen, false, true, 0, 0, &nf), 0);
    ASSERT_EQ(nf, 1);
    wire[3] = 0x03; /* FPDUPTR 3: low bits treated as zero (RFC 5044 §4.2) -> 0, fine */
    ASSERT_EQ(run(wire, wlen, false, true, 0, 0, &nf), 0);
    wire[3] = 0x04; /* first marker must be 0 (RFC 5044 §4.3) */
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_ev ev;
    rx_setup(&rx, false, true, 0, 0);
    ASSERT_EQ(iwarp_mpa_rx_feed(&rx, wire, 3, &ev), 3);
    ASSERT_EQ(iwarp_mpa_rx_feed(&rx, wire + 3, wlen - 3, &ev), IWARP_ERR_FPDU_MARKER);
    ASSERT_EQ(run(wire, wlen, false, true, 0, 0, &nf), IWARP_ERR_FPDU_MARKER);
    ASSERT_EQ(nf, 0);

    /* Figure 6's marker pointing elsewhere. */
    wlen = harness_hex(fig6_wire, wire, sizeof wire);
    for (unsigned v = 0; v < 0x40; v += 4) {
        wire[0x17] = (uint8_t)v;
        ASSERT_EQ(run(wire, wlen, false, true, 0, 0x1ec, NULL),
                  v == 0x14 ? 0 : IWARP_ERR_FPDU_MARKER);
    }
}

/* CRC on and valid, marker wrong: code 3, reported once the CRC has been verified (RFC 5044 §8:
 * "in the event that the CRC is valid"); FPDUPTR low bits are ignored. */
TEST(error_marker_with_valid_crc)
{
    uint8_t wire[64];
    size_t wlen = harness_hex(fig6_wire, wire, sizeof wire);
    static const struct {
        uint8_t ptr;
        int err;
    } v[] = {{0x14, 0},
             {0x15, 0},
             {0x17, 0},
             {0x10, IWARP_ERR_FPDU_MARKER},
             {0x00, IWARP_ERR_FPDU_MARKER},
             {0x18, IWARP_ERR_FPDU_MARKER}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        wire[0x17] = v[i].ptr;
        iwarp_store_le32(wire + wlen - 4, iwarp_crc32c(wire, wlen - 4));
        struct iwarp_mpa_rx rx;
        struct iwarp_mpa_rx_ev ev;
        rx_setup(&rx, true, true, 0, 0x1ec);
        /* everything up to the CRC goes through without an error */
        size_t off = 0;
        while (off < wlen - 4) {
            iwarp_ssize n = iwarp_mpa_rx_feed(&rx, wire + off, wlen - 4 - off, &ev);
            ASSERT_TRUE(n >= 0);
            off += (size_t)n;
        }
        iwarp_ssize n = iwarp_mpa_rx_feed(&rx, wire + off, 4, &ev);
        if (v[i].err) {
            ASSERT_EQ(n, v[i].err);
        } else {
            ASSERT_EQ(n, 4);
            ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_FPDU);
        }
    }
}

/* A marker between FPDUs must carry 0; one right after the PAD must point back (RFC 5044 §4.3). */
TEST(error_marker_positions)
{
    uint8_t wire[64];
    /* marker between two FPDUs (stream position 512) with a non-zero FPDUPTR */
    size_t wlen = harness_hex("0002 abcd 00000000 | 0000 0008 | 0002 abcd 00000000", wire, 64);
    ASSERT_EQ(run(wire, wlen, false, true, 0, 504, NULL), IWARP_ERR_FPDU_MARKER);
    wire[11] = 0;
    size_t nf;
    ASSERT_EQ(run(wire, wlen, false, true, 0, 504, &nf), 0);
    ASSERT_EQ(nf, 2);
    /* marker right before the CRC with FPDUPTR 0 */
    wlen = harness_hex("0005 0102030405 00 | 0000 0000 | 00000000", wire, 64);
    ASSERT_EQ(run(wire, wlen, false, true, 0, 504, NULL), IWARP_ERR_FPDU_MARKER);
    wire[11] = 8;
    ASSERT_EQ(run(wire, wlen, false, true, 0, 504, &nf), 0);
    ASSERT_EQ(nf, 1);
}

/* ULPDU_Length 0 or over the limit (RFC 5044 §3) fails right after the length field. */
TEST(error_bad_lengths)
{
    uint8_t wire[16] = {0};
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_ev ev;
    static const struct {
        uint16_t len;
        uint32_t max;
        int err;
    } v[] = {{0, 0, IWARP_ERR_FPDU_LEN},
             {1, 0, 0},
             {64768, 0, 0},
             {64769, 0, IWARP_ERR_FPDU_LEN},
             {65535, 0, IWARP_ERR_FPDU_LEN},
             {100, 100, 0},
             {101, 100, IWARP_ERR_FPDU_LEN},
             {1, 1, 0},
             {2, 1, IWARP_ERR_FPDU_LEN},
             {64768, 64768, 0}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        for (int markers = 0; markers < 2; markers++) {
            iwarp_store_be16(wire + 4 * markers, v[i].len);
            rx_setup(&rx, true, markers != 0, v[i].max, 0);
            /* the error comes with the second octet of the length field */
            size_t first = 4u * (size_t)markers + 1;
            ASSERT_EQ(iwarp_mpa_rx_feed(&rx, wire, first, &ev), (iwarp_ssize)first);
            iwarp_ssize n = iwarp_mpa_rx_feed(&rx, wire + first, 1, &ev);
            ASSERT_EQ(n, v[i].err ? v[i].err : 1);
            memset(wire, 0, sizeof wire);
        }
    }
}

TEST(term_causes)
{
    struct iwarp_term_cause c;
    ASSERT_TRUE(iwarp_mpa_rx_term_cause(IWARP_ERR_FPDU_CRC, &c));
    ASSERT_EQ(c.layer, 2);
    ASSERT_EQ(c.etype, 0);
    ASSERT_EQ(c.ecode, 0x02);
    ASSERT_TRUE(iwarp_mpa_rx_term_cause(IWARP_ERR_FPDU_MARKER, &c));
    ASSERT_EQ(c.ecode, 0x03);
    ASSERT_TRUE(iwarp_mpa_rx_term_cause(IWARP_ERR_FPDU_LEN, &c));
    ASSERT_EQ(c.ecode, 0x03);
    ASSERT_FALSE(iwarp_mpa_rx_term_cause(IWARP_ERR_INVAL, &c));
    ASSERT_FALSE(iwarp_mpa_rx_term_cause(0, &c));
}

TEST(init_and_empty_feed)
{
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_cfg cfg = {.crc = true, .markers = true, .max_ulpdu = 64769};
    ASSERT_EQ(iwarp_mpa_rx_init(&rx, &cfg), IWARP_ERR_INVAL);
    cfg.max_ulpdu = 0;
    cfg.stream_pos = 2;
    ASSERT_EQ(iwarp_mpa_rx_init(&rx, &cfg), IWARP_ERR_INVAL);
    cfg.stream_pos = 0;
    ASSERT_EQ(iwarp_mpa_rx_init(&rx, &cfg), 0);
    struct iwarp_mpa_rx_ev ev;
    ASSERT_EQ(iwarp_mpa_rx_feed(&rx, NULL, 0, &ev), 0);
    ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_NONE);
    struct iwarp_mpa_rx_want w;
    ASSERT_EQ(iwarp_mpa_rx_want(&rx, &w), 4);
    ASSERT_EQ(w.part, IWARP_MPA_RX_PART_MARKER);
}

/* After a CRC mismatch the deframer says which CRC the FPDU should have carried: the first §1.9
 * vector with its CRC field zeroed expects 0x5f4cd3eb (sent as eb d3 4c 5f, RFC 5044 §4.4). */
TEST(crc_expected_after_a_mismatch)
{
    uint8_t wire[64];
    size_t n = harness_hex("000e c140 00000001 0000000000000000 00000000", wire, sizeof wire);
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_cfg cfg = {.crc = true};
    ASSERT_EQ(iwarp_mpa_rx_init(&rx, &cfg), 0);
    struct iwarp_mpa_rx_ev ev;
    iwarp_ssize r = 0;
    for (size_t off = 0; off < n && r >= 0; off += (size_t)r)
        r = iwarp_mpa_rx_feed(&rx, wire + off, n - off, &ev);
    ASSERT_EQ(r, IWARP_ERR_FPDU_CRC);
    ASSERT_EQ_U(iwarp_mpa_rx_crc_expected(&rx), 0x5f4cd3ebu);
}

/* ---- iwarp_mpa_rx_whole: an FPDU given whole, checked at once ---- */

/* Feeds a piece as llp_conn does: each whole FPDU through iwarp_mpa_rx_whole, the rest
 * through iwarp_mpa_rx_feed (feed_piece). Counts the FPDUs taken whole. */
static void feed_whole_first(struct iwarp_mpa_rx *rx, const uint8_t *p, size_t len,
                             struct result *r, size_t *wholes)
{
    while (len > 0 && r->err == 0) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize n = iwarp_mpa_rx_whole(rx, p, len, &ev);
        if (n == 0) {
            ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_NONE);
            struct iwarp_mpa_rx_want w;
            size_t want = iwarp_mpa_rx_want(rx, &w);
            feed_piece(rx, p, want < len ? want : len, r); /* up to the next boundary */
            n = (iwarp_ssize)(want < len ? want : len);
        } else {
            /* the ULPDU span and the FPDU's end together, inside this piece */
            ASSERT_EQ(ev.kind, IWARP_MPA_RX_EV_FPDU);
            ASSERT_EQ(r->cur_off, 0);
            ASSERT_TRUE(ev.data == p + IWARP_MPA_LEN_FIELD && ev.len == ev.ulpdu_len);
            ASSERT_EQ(ev.ulpdu_off, 0);
            ASSERT_EQ((size_t)n, iwarp_mpa_fpdu_wire_len(ev.fpdu_pos, ev.ulpdu_len, false));
            memcpy(g_got + r->ulpdu_out, ev.data, ev.len);
            record_fpdu(r, &ev);
            (*wholes)++;
            /* the deframer is at the next FPDU's boundary, as after the slow path */
            struct iwarp_mpa_rx_want w;
            ASSERT_EQ(iwarp_mpa_rx_want(rx, &w), IWARP_MPA_LEN_FIELD);
            ASSERT_EQ(w.part, IWARP_MPA_RX_PART_HDR);
        }
        p += n;
        len -= (size_t)n;
    }
}

/* Every ULPDU length from 1 to 300, CRC on and off, whole and in random pieces: the same
 * ULPDUs, lengths and positions as the octet-by-octet path, each FPDU given whole taken whole,
 * none that is not. */
TEST(whole_fpdus_are_checked_at_once)
{
    static uint32_t lens[300];
    for (uint32_t i = 0; i < 300; i++)
        lens[i] = i + 1;
    for (int crc = 0; crc <= 1; crc++) {
        uint32_t fpos[300];
        size_t slen = build_stream(crc, false, 0xFFFFF000u, lens, 300, 5u + (uint32_t)crc, fpos);
        struct iwarp_mpa_rx rx;
        struct result r;
        size_t wholes = 0;
        memset(&r, 0, sizeof r);
        rx_setup(&rx, crc, false, 0, 0xFFFFF000u);
        feed_whole_first(&rx, g_stream, slen, &r, &wholes);
        check_result(&r, lens, fpos, 300, crc);
        ASSERT_EQ(wholes, 300);
        for (uint32_t seed = 1; seed <= 20; seed++) {
            memset(&r, 0, sizeof r);
            wholes = 0;
            rx_setup(&rx, crc, false, 0, 0xFFFFF000u);
            size_t off = 0;
            while (off < slen && r.err == 0) {
                size_t k = 1 + rng_next(&seed) % 700u;
                if (k > slen - off)
                    k = slen - off;
                feed_whole_first(&rx, g_stream + off, k, &r, &wholes);
                off += k;
            }
            check_result(&r, lens, fpos, 300, crc);
            ASSERT_TRUE(wholes > 0 && wholes < 300);
        }
    }
}

/* What is not a whole, good FPDU at a boundary is left to iwarp_mpa_rx_feed, which reports it:
 * every flipped bit (CRC on), a length over the maximum or zero, one octet short, markers, the
 * middle of an FPDU, a failed deframer. */
TEST(whole_leaves_the_rest_to_feed)
{
    uint32_t len1[1] = {40}, fpos[1];
    size_t wlen = build_stream(true, false, 0, len1, 1, 3, fpos);
    uint8_t wire[64];
    memcpy(wire, g_stream, wlen);
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_ev ev;
    for (size_t i = 0; i < wlen; i++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            wire[i] ^= (uint8_t)(1u << bit);
            rx_setup(&rx, true, false, 0, 0);
            ASSERT_EQ(iwarp_mpa_rx_whole(&rx, wire, wlen, &ev), 0);
            ASSERT_TRUE(
                run(wire, wlen, true, false, 0, 0, NULL) != 0 ||
                (i < IWARP_MPA_LEN_FIELD && iwarp_load_be16(wire) > 40)); /* then incomplete */
            wire[i] ^= (uint8_t)(1u << bit);
        }
    }
    rx_setup(&rx, true, false, 0, 0);
    ASSERT_EQ(iwarp_mpa_rx_whole(&rx, wire, wlen - 1, &ev), 0); /* one octet short */
    rx_setup(&rx, true, false, 39, 0);
    ASSERT_EQ(iwarp_mpa_rx_whole(&rx, wire, wlen, &ev), 0); /* over max_ulpdu */
    ASSERT_EQ(iwarp_mpa_rx_feed(&rx, wire, wlen, &ev), IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(iwarp_mpa_rx_whole(&rx, wire, wlen, &ev), 0); /* failed: sticky */
    rx_setup(&rx, true, true, 0, 4);
    ASSERT_EQ(iwarp_mpa_rx_whole(&rx, wire, wlen, &ev), 0); /* markers */
    rx_setup(&rx, true, false, 0, 0);
    ASSERT_EQ(iwarp_mpa_rx_feed(&rx, wire, 1, &ev), 1);
    ASSERT_EQ(iwarp_mpa_rx_whole(&rx, wire + 1, wlen - 1, &ev), 0); /* mid-FPDU */
    uint8_t zero[8] = {0};
    rx_setup(&rx, false, false, 0, 0);
    ASSERT_EQ(iwarp_mpa_rx_whole(&rx, zero, sizeof zero, &ev), 0); /* ULPDU_Length 0 */
    ASSERT_EQ(iwarp_mpa_rx_feed(&rx, zero, sizeof zero, &ev), IWARP_ERR_FPDU_LEN);
    rx_setup(&rx, true, false, 0, 0);
    ASSERT_EQ(iwarp_mpa_rx_whole(&rx, wire, wlen, &ev), (iwarp_ssize)wlen); /* intact: whole */
}
