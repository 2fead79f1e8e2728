/* SPDX-License-Identifier: BSD-2-Clause */
/* MPA Request/Reply codec: golden frames (RFC 5044 §7.1.1, RFC 6581 §6, §9, wire-reference.md
 * §1.8, §2), every decode error, partial input, round trips. Golden bytes are written by hand. */
#include "harness.h"
#include "iwarp/errors.h"
#include "wire/wire.h"
#include "wire/wire_mpa.h"

/* RFC 5044 §7.1.1: the two keys, in hex. */
#define REQ_KEY "4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65"
#define REP_KEY "4D 50 41 20 49 44 20 52 65 70 20 46 72 61 6D 65"

static iwarp_ssize enc(uint8_t *buf, const struct iwarp_mpa_frame *f)
{
    return iwarp_mpa_frame_encode(buf, 600, f);
}

/* wire-reference §1.8: "a v2 Request with no ULP data is 24 B"; §2: rping sends
 * 10 02 00 04 00 01 00 01 after the key. */
TEST(golden_rping_request)
{
    uint8_t want[64], got[600];
    size_t n = harness_hex(REQ_KEY "10 02 0004 0001 0001", want, sizeof want);
    ASSERT_EQ(n, 24);
    struct iwarp_mpa_frame f = {.s = true, .rev = 2, .v2 = {.ird = 1, .ord = 1}};
    ASSERT_EQ(enc(got, &f), 24);
    ASSERT_MEM_EQ(got, want, 24);

    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(want, n, &d), 24);
    ASSERT_FALSE(d.reply);
    ASSERT_FALSE(d.m);
    ASSERT_FALSE(d.c);
    ASSERT_FALSE(d.r);
    ASSERT_TRUE(d.s);
    ASSERT_EQ(d.rev, 2);
    ASSERT_FALSE(d.v2.p2p);
    ASSERT_EQ(d.v2.rtr, 0);
    ASSERT_EQ(d.v2.ird, 1);
    ASSERT_EQ(d.v2.ord, 1);
    ASSERT_EQ(d.pd_len, 0);
}

/* RFC 5044 §7.1.1: a Rev 1 Request with C=1 and 3 octets of private data "abc". */
TEST(golden_rev1_request_with_pd)
{
    uint8_t want[64], got[600];
    size_t n = harness_hex(REQ_KEY "40 01 0003 616263", want, sizeof want);
    struct iwarp_mpa_frame f = {.c = true, .rev = 1, .pd = (const uint8_t *)"abc", .pd_len = 3};
    ASSERT_EQ(enc(got, &f), (iwarp_ssize)n);
    ASSERT_MEM_EQ(got, want, n);
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(want, n, &d), 23);
    ASSERT_TRUE(d.c);
    ASSERT_FALSE(d.s);
    ASSERT_EQ(d.rev, 1);
    ASSERT_EQ(d.pd_len, 3);
    ASSERT_TRUE(d.pd == want + 20); /* borrowed pointer into the input */
}

/* A Rev 1 Reply asking for markers (M=0x80) with no private data. */
TEST(golden_rev1_reply_markers)
{
    uint8_t want[64], got[600];
    size_t n = harness_hex(REP_KEY "80 01 0000", want, sizeof want);
    struct iwarp_mpa_frame f = {.reply = true, .m = true, .rev = 1};
    ASSERT_EQ(enc(got, &f), 20);
    ASSERT_MEM_EQ(got, want, n);
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(want, n, &d), 20);
    ASSERT_TRUE(d.reply);
    ASSERT_TRUE(d.m);
}

/* A Reject (R=0x20) with S: A=1, IRD 0 -> 80 00; C=1 D=1 ORD 0x10 -> C0 10; PD "no". */
TEST(golden_enhanced_reject)
{
    uint8_t want[64], got[600];
    size_t n = harness_hex(REP_KEY "30 02 0006 8000 C010 6E6F", want, sizeof want);
    struct iwarp_mpa_frame f = {
        .reply = true,
        .r = true,
        .s = true,
        .rev = 2,
        .v2 = {.p2p = true, .rtr = IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ, .ird = 0, .ord = 16},
        .pd = (const uint8_t *)"no",
        .pd_len = 2,
    };
    ASSERT_EQ(enc(got, &f), 26);
    ASSERT_MEM_EQ(got, want, n);
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(want, n, &d), 26);
    ASSERT_TRUE(d.r);
    ASSERT_TRUE(d.v2.p2p);
    ASSERT_EQ(d.v2.rtr, IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ);
    ASSERT_EQ(d.v2.ord, 16);
    ASSERT_EQ(d.pd_len, 2);
    ASSERT_MEM_EQ(d.pd, "no", 2);
}

/* Chelsio defaults (field.md): C=1, enhanced, peer-to-peer, zero-length Read RTR, depth 32:
 * A|IRD 32 = 80 20, D|ORD 32 = 40 20. */
TEST(golden_chelsio_request)
{
    uint8_t want[64], got[600];
    size_t n = harness_hex(REQ_KEY "50 02 0004 8020 4020", want, sizeof want);
    struct iwarp_mpa_frame f = {
        .c = true,
        .s = true,
        .rev = 2,
        .v2 = {.p2p = true, .rtr = IWARP_MPA_RTR_READ, .ird = 32, .ord = 32},
    };
    ASSERT_EQ(enc(got, &f), 24);
    ASSERT_MEM_EQ(got, want, n);
}

/* RFC 6581 §9.1 0x3FFF in both positions, with all of A, B, C, D: FF FF FF FF; and without
 * A: 3F FF 3F FF. */
TEST(golden_ird_ord_none)
{
    uint8_t w[4], want[8];
    struct iwarp_mpa_ird_ord v = {
        .p2p = true, .rtr = IWARP_MPA_RTR_ALL, .ird = 0x3FFF, .ord = 0x3FFF};
    iwarp_mpa_ird_ord_encode(w, &v);
    harness_hex("FFFF FFFF", want, sizeof want);
    ASSERT_MEM_EQ(w, want, 4);
    v.p2p = false;
    v.rtr = 0;
    iwarp_mpa_ird_ord_encode(w, &v);
    harness_hex("3FFF 3FFF", want, sizeof want);
    ASSERT_MEM_EQ(w, want, 4);
    /* B alone: 40 00 in the IRD half-word. */
    v = (struct iwarp_mpa_ird_ord){.p2p = true, .rtr = IWARP_MPA_RTR_SEND};
    iwarp_mpa_ird_ord_encode(w, &v);
    harness_hex("C000 0000", want, sizeof want);
    ASSERT_MEM_EQ(w, want, 4);
}

/* siw may set Res bit 0x08 (wire-reference §1.8); Res "not checked on reception". */
TEST(decode_ignores_res_bits)
{
    uint8_t b[64];
    size_t n = harness_hex(REQ_KEY "1F 02 0004 0001 0001", b, sizeof b);
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), 24);
    ASSERT_TRUE(d.s);
    ASSERT_FALSE(d.m);
    ASSERT_FALSE(d.c);
}

/* RFC 5044 §7.1.1: R "not checked on reception in the MPA Request Frame". */
TEST(decode_ignores_r_in_request)
{
    uint8_t b[64];
    size_t n = harness_hex(REQ_KEY "20 01 0000", b, sizeof b);
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), 20);
    ASSERT_FALSE(d.r);
}

/* RFC 6581 §9.2: with A=0, B/C/D "MUST be ignored". */
TEST(decode_ignores_rtr_without_a)
{
    uint8_t b[64];
    size_t n = harness_hex(REQ_KEY "10 02 0004 4005 C007", b, sizeof b);
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), 24);
    ASSERT_FALSE(d.v2.p2p);
    ASSERT_EQ(d.v2.rtr, 0);
    ASSERT_EQ(d.v2.ird, 5);
    ASSERT_EQ(d.v2.ord, 7);
}

/* Revision 0 (RDMA Consortium, RFC 5044 App. C) and 1 are representable: M and C set, Rev 0. */
TEST(decode_rev0)
{
    uint8_t b[64];
    size_t n = harness_hex(REP_KEY "C0 00 0000", b, sizeof b);
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), 20);
    ASSERT_EQ(d.rev, 0);
    ASSERT_TRUE(d.m);
    ASSERT_TRUE(d.c);
}

/* Every proper prefix is SHORT; bytes after the frame are not consumed. */
TEST(decode_short_and_trailing)
{
    uint8_t b[64];
    size_t n = harness_hex(REQ_KEY "10 02 0006 0001 0001 AAAA  BBBBBB", b, sizeof b);
    struct iwarp_mpa_frame d;
    for (size_t i = 0; i < 26; i++)
        ASSERT_EQ(iwarp_mpa_frame_decode(b, i, &d), IWARP_ERR_SHORT);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), 26);
    ASSERT_EQ(d.pd_len, 2);
    ASSERT_EQ(d.pd[0], 0xAA);
}

/* RFC 5044 §7.1.1 / §7.1.2 rule 5: a wrong key fails as soon as its octets rule both keys out. */
TEST(decode_wrong_key_early)
{
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode((const uint8_t *)"GET / HTTP/1.1\r\n", 1, &d),
              IWARP_ERR_MPA_KEY);
    uint8_t b[64];
    harness_hex(REQ_KEY "00 01 0000", b, sizeof b);
    b[9] = 'x'; /* neither 'q' nor 'p' */
    ASSERT_EQ(iwarp_mpa_frame_decode(b, 9, &d), IWARP_ERR_SHORT);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, 10, &d), IWARP_ERR_MPA_KEY);
    harness_hex(REQ_KEY "00 01 0000", b, sizeof b);
    b[15] = 'E'; /* case matters */
    ASSERT_EQ(iwarp_mpa_frame_decode(b, 16, &d), IWARP_ERR_MPA_KEY);
}

/* RFC 5044 §7.1.1: PD_Length > 512 fails at the header, without waiting for the data. */
TEST(decode_pd_too_long)
{
    uint8_t b[64];
    struct iwarp_mpa_frame d;
    size_t n = harness_hex(REQ_KEY "00 01 0201", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), IWARP_ERR_MPA_PD_LEN);
    n = harness_hex(REQ_KEY "00 01 FFFF", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), IWARP_ERR_MPA_PD_LEN);
    /* 512 exactly is allowed: SHORT until all 532 octets are there. */
    n = harness_hex(REQ_KEY "00 01 0200", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), IWARP_ERR_SHORT);
    static uint8_t big[532];
    memcpy(big, b, 20);
    ASSERT_EQ(iwarp_mpa_frame_decode(big, sizeof big, &d), 532);
}

/* RFC 6581 §6: S needs Rev >= 2 and the 4-octet word. */
TEST(decode_enhanced_inconsistent)
{
    uint8_t b[64];
    struct iwarp_mpa_frame d;
    size_t n = harness_hex(REQ_KEY "10 01 0004 0001 0001", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), IWARP_ERR_MPA_ENHANCED);
    n = harness_hex(REQ_KEY "10 00 0004 0001 0001", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), IWARP_ERR_MPA_ENHANCED);
    n = harness_hex(REP_KEY "10 02 0003 000100", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), IWARP_ERR_MPA_ENHANCED);
    /* detected from the header alone */
    ASSERT_EQ(iwarp_mpa_frame_decode(b, 20, &d), IWARP_ERR_MPA_ENHANCED);
    /* Rev 3 with S is representable (RFC 6581 §6: "two or higher"). */
    n = harness_hex(REP_KEY "10 03 0004 0001 0001", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_frame_decode(b, n, &d), 24);
}

TEST(decode_bad_args)
{
    struct iwarp_mpa_frame d;
    ASSERT_EQ(iwarp_mpa_frame_decode(NULL, 4, &d), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_frame_decode((const uint8_t *)"M", 1, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_frame_decode(NULL, 0, &d), IWARP_ERR_SHORT);
}

TEST(encode_errors)
{
    uint8_t buf[600];
    static const uint8_t pd[512];
    struct iwarp_mpa_frame f = {.rev = 1, .pd = pd, .pd_len = 512};
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), 532);
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, 531, &f), IWARP_ERR_NOSPC);
    f.s = true;
    f.rev = 2;
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_MPA_PD_LEN);
    f.pd_len = 508;
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), 532);
    f = (struct iwarp_mpa_frame){.r = true, .rev = 1}; /* R in a Request */
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_INVAL);
    f = (struct iwarp_mpa_frame){.s = true, .rev = 1}; /* S with Rev 1 */
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_INVAL);
    f = (struct iwarp_mpa_frame){.s = true, .rev = 2, .v2 = {.ird = 0x4000}};
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_INVAL);
    f = (struct iwarp_mpa_frame){.s = true, .rev = 2, .v2 = {.ord = 0x4000}};
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_INVAL);
    f = (struct iwarp_mpa_frame){.s = true, .rev = 2, .v2 = {.rtr = IWARP_MPA_RTR_READ}};
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_INVAL); /* RTR without A */
    f = (struct iwarp_mpa_frame){.s = true, .rev = 2, .v2 = {.p2p = true, .rtr = 8}};
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_INVAL);
    f = (struct iwarp_mpa_frame){.rev = 1, .pd_len = 1}; /* NULL pd */
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, &f), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_frame_encode(buf, sizeof buf, NULL), IWARP_ERR_INVAL);
}

/* Every flag combination, revision and RTR set survives encode -> decode. */
TEST(round_trip)
{
    uint8_t buf[600];
    static const uint8_t pd[7] = {1, 2, 3, 4, 5, 6, 7};
    for (unsigned bits = 0; bits < 64; bits++) {
        for (uint8_t rev = 0; rev <= 3; rev++) {
            struct iwarp_mpa_frame f = {
                .reply = bits & 1,
                .m = (bits >> 1) & 1,
                .c = (bits >> 2) & 1,
                .r = ((bits >> 3) & 1) && (bits & 1),
                .s = ((bits >> 4) & 1) && rev >= 2,
                .rev = rev,
                .pd = pd,
                .pd_len = (uint16_t)(bits % 8),
            };
            if (f.s)
                f.v2 = (struct iwarp_mpa_ird_ord){.p2p = (bits >> 5) & 1,
                                                  .rtr = (bits >> 5) & 1 ? (uint8_t)(rev + bits) & 7
                                                                         : 0,
                                                  .ird = (uint16_t)(bits * 97u % 0x4000u),
                                                  .ord = 0x3FFF};
            iwarp_ssize n = iwarp_mpa_frame_encode(buf, sizeof buf, &f);
            ASSERT_EQ(n, 20 + f.pd_len + (f.s ? 4 : 0));
            ASSERT_EQ(buf[16] & 0x0F, 0); /* Res zero on send */
            struct iwarp_mpa_frame d;
            ASSERT_EQ(iwarp_mpa_frame_decode(buf, (size_t)n, &d), n);
            ASSERT_EQ(d.reply, f.reply);
            ASSERT_EQ(d.m, f.m);
            ASSERT_EQ(d.c, f.c);
            ASSERT_EQ(d.r, f.r);
            ASSERT_EQ(d.s, f.s);
            ASSERT_EQ(d.rev, f.rev);
            ASSERT_EQ(d.pd_len, f.pd_len);
            ASSERT_MEM_EQ(d.pd, pd, f.pd_len);
            if (f.s) {
                ASSERT_EQ(d.v2.p2p, f.v2.p2p);
                ASSERT_EQ(d.v2.rtr, f.v2.rtr);
                ASSERT_EQ(d.v2.ird, f.v2.ird);
                ASSERT_EQ(d.v2.ord, f.v2.ord);
            }
        }
    }
}
