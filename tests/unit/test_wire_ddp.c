/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP header codec (RFC 5041 §4): golden vectors, reserved bits, truncation, round trips. */
#include "harness.h"
#include "iwarp/errors.h"
#include "wire/wire_ddp.h"

/* RFC 5044 Figure 5: the DDP header of a Send with Last, QN 0, MSN 1, MO 0. */
static const char *const send_last = "41 43 00000000 00000000 00000001 00000000";
/* wire-reference §1.8/§1.9: the zero-length Write RTR, STag 1, TO 0. */
static const char *const write_rtr = "c1 40 00000001 0000000000000000";

TEST(decode_untagged_send_last)
{
    uint8_t b[32];
    size_t n = harness_hex(send_last, b, sizeof b);
    struct iwarp_ddp_hdr h;
    ASSERT_EQ(iwarp_ddp_hdr_decode(b, n, &h), 18);
    ASSERT_FALSE(h.tagged);
    ASSERT_TRUE(h.last);
    ASSERT_EQ(h.rsvd, 0);
    ASSERT_EQ(h.dv, 1);
    ASSERT_EQ_U(h.rsvdulp, 0x43);
    ASSERT_EQ_U(h.rsvdulp_word, 0);
    ASSERT_EQ_U(h.qn, 0);
    ASSERT_EQ_U(h.msn, 1);
    ASSERT_EQ_U(h.mo, 0);
    ASSERT_EQ_U(h.stag, 0);
    ASSERT_EQ_U(h.to, 0);
}

TEST(decode_tagged_write_rtr)
{
    uint8_t b[32];
    size_t n = harness_hex(write_rtr, b, sizeof b);
    struct iwarp_ddp_hdr h;
    ASSERT_EQ(iwarp_ddp_hdr_decode(b, n, &h), 14);
    ASSERT_TRUE(h.tagged);
    ASSERT_TRUE(h.last);
    ASSERT_EQ(h.dv, 1);
    ASSERT_EQ_U(h.rsvdulp, 0x40);
    ASSERT_EQ_U(h.stag, 1);
    ASSERT_EQ_U(h.to, 0);
    ASSERT_EQ_U(h.qn, 0);
    ASSERT_EQ_U(h.msn, 0);
}

/* Every field with distinct octets, so a swapped or misplaced field shows. */
TEST(decode_field_positions)
{
    uint8_t b[32];
    struct iwarp_ddp_hdr h;
    size_t n = harness_hex("80 42 11223344 5566778899aabbcc", b, sizeof b);
    ASSERT_EQ(iwarp_ddp_hdr_decode(b, n, &h), 14);
    ASSERT_TRUE(h.tagged);
    ASSERT_FALSE(h.last);
    ASSERT_EQ(h.dv, 0);
    ASSERT_EQ_U(h.rsvdulp, 0x42);
    ASSERT_EQ_U(h.stag, 0x11223344u);
    ASSERT_EQ_U(h.to, 0x5566778899AABBCCull);

    n = harness_hex("02 44 deadbeef 01020304 a0b0c0d0 f1f2f3f4", b, sizeof b);
    ASSERT_EQ(iwarp_ddp_hdr_decode(b, n, &h), 18);
    ASSERT_FALSE(h.tagged);
    ASSERT_FALSE(h.last);
    ASSERT_EQ(h.dv, 2);
    ASSERT_EQ_U(h.rsvdulp, 0x44);
    ASSERT_EQ_U(h.rsvdulp_word, 0xDEADBEEFu);
    ASSERT_EQ_U(h.qn, 0x01020304u);
    ASSERT_EQ_U(h.msn, 0xA0B0C0D0u);
    ASSERT_EQ_U(h.mo, 0xF1F2F3F4u);
}

/* RFC 5041 §4.1: Rsvd is not checked on receive (reported), and zero on transmit. */
TEST(reserved_bits_reported_and_cleared)
{
    uint8_t b[32], out[32];
    size_t n = harness_hex("7d 43 00000000 00000000 00000001 00000000", b, sizeof b);
    struct iwarp_ddp_hdr h;
    ASSERT_EQ(iwarp_ddp_hdr_decode(b, n, &h), 18);
    ASSERT_EQ(h.rsvd, 0xF);
    ASSERT_EQ(h.dv, 1);
    ASSERT_TRUE(h.last);
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, sizeof out, &h), 18);
    uint8_t expect[32];
    harness_hex(send_last, expect, sizeof expect);
    ASSERT_MEM_EQ(out, expect, 18);

    n = harness_hex("a8 40 00000001 0000000000000000", b, sizeof b);
    ASSERT_EQ(iwarp_ddp_hdr_decode(b, n, &h), 14);
    ASSERT_EQ(h.rsvd, 0xA);
    ASSERT_EQ(h.dv, 0);
    ASSERT_FALSE(h.last);
}

TEST(decode_every_truncation)
{
    const char *const vec[] = {send_last, write_rtr};
    for (size_t v = 0; v < 2; v++) {
        uint8_t b[32];
        size_t n = harness_hex(vec[v], b, sizeof b);
        for (size_t len = 0; len < n; len++) {
            struct iwarp_ddp_hdr h = {.qn = 77};
            ASSERT_EQ(iwarp_ddp_hdr_decode(b, len, &h), IWARP_ERR_SHORT);
            ASSERT_EQ_U(h.qn, 77); /* untouched */
        }
        struct iwarp_ddp_hdr h;
        ASSERT_EQ(iwarp_ddp_hdr_decode(b, n, &h), (iwarp_ssize)n);
        /* Trailing payload is not the header's business. */
        ASSERT_EQ(iwarp_ddp_hdr_decode(b, sizeof b, &h), (iwarp_ssize)n);
    }
    struct iwarp_ddp_hdr h;
    ASSERT_EQ(iwarp_ddp_hdr_decode(NULL, 0, &h), IWARP_ERR_SHORT);
}

TEST(encode_golden)
{
    uint8_t out[32], expect[32];
    struct iwarp_ddp_hdr send = {.last = true, .dv = 1, .rsvdulp = 0x43, .msn = 1};
    size_t n = harness_hex(send_last, expect, sizeof expect);
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, sizeof out, &send), (iwarp_ssize)n);
    ASSERT_MEM_EQ(out, expect, n);

    struct iwarp_ddp_hdr write = {
        .tagged = true, .last = true, .dv = 1, .rsvdulp = 0x40, .stag = 1};
    n = harness_hex(write_rtr, expect, sizeof expect);
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, sizeof out, &write), (iwarp_ssize)n);
    ASSERT_MEM_EQ(out, expect, n);

    /* Tagged encode ignores the untagged fields and vice versa. */
    struct iwarp_ddp_hdr mixed = {.tagged = true,
                                  .dv = 1,
                                  .rsvdulp = 0x42,
                                  .stag = 0x11223344,
                                  .to = 0x5566778899AABBCCull,
                                  .qn = 9,
                                  .msn = 9,
                                  .mo = 9,
                                  .rsvdulp_word = 9};
    n = harness_hex("81 42 11223344 5566778899aabbcc", expect, sizeof expect);
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, sizeof out, &mixed), 14);
    ASSERT_MEM_EQ(out, expect, n);
}

TEST(encode_nospc_and_inval)
{
    uint8_t out[32];
    struct iwarp_ddp_hdr u = {.dv = 1, .msn = 1};
    struct iwarp_ddp_hdr t = {.tagged = true, .dv = 1};
    for (size_t cap = 0; cap < 18; cap++)
        ASSERT_EQ(iwarp_ddp_hdr_encode(out, cap, &u), IWARP_ERR_NOSPC);
    for (size_t cap = 0; cap < 14; cap++)
        ASSERT_EQ(iwarp_ddp_hdr_encode(out, cap, &t), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, 18, &u), 18);
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, 14, &t), 14);
    struct iwarp_ddp_hdr bad = {.dv = 4};
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, sizeof out, &bad), IWARP_ERR_INVAL);
    /* A wrong but 2-bit version is encoded as given (to build negative tests). */
    struct iwarp_ddp_hdr v3 = {.dv = 3};
    ASSERT_EQ(iwarp_ddp_hdr_encode(out, sizeof out, &v3), 18);
    ASSERT_EQ_U(out[0], 0x03);
}

TEST(round_trip)
{
    for (unsigned i = 0; i < 64; i++) {
        struct iwarp_ddp_hdr in = {
            .tagged = (i & 1) != 0,
            .last = (i & 2) != 0,
            .dv = (uint8_t)(i >> 2 & 3),
            .rsvdulp = (uint8_t)(i * 37u),
        };
        if (in.tagged) {
            in.stag = 0x9E3779B9u * i;
            in.to = 0x9E3779B97F4A7C15ull * i;
        } else {
            in.rsvdulp_word = 0x01000193u * i;
            in.qn = i;
            in.msn = ~i;
            in.mo = i << 20;
        }
        uint8_t buf[18];
        iwarp_ssize n = iwarp_ddp_hdr_encode(buf, sizeof buf, &in);
        ASSERT_EQ(n, in.tagged ? 14 : 18);
        ASSERT_EQ(iwarp_ddp_hdr_len(buf[0]), (size_t)n);
        struct iwarp_ddp_hdr out;
        ASSERT_EQ(iwarp_ddp_hdr_decode(buf, (size_t)n, &out), n);
        ASSERT_EQ(out.tagged, in.tagged);
        ASSERT_EQ(out.last, in.last);
        ASSERT_EQ(out.rsvd, 0);
        ASSERT_EQ(out.dv, in.dv);
        ASSERT_EQ_U(out.rsvdulp, in.rsvdulp);
        ASSERT_EQ_U(out.stag, in.stag);
        ASSERT_EQ_U(out.to, in.to);
        ASSERT_EQ_U(out.rsvdulp_word, in.rsvdulp_word);
        ASSERT_EQ_U(out.qn, in.qn);
        ASSERT_EQ_U(out.msn, in.msn);
        ASSERT_EQ_U(out.mo, in.mo);
    }
}
