/* SPDX-License-Identifier: BSD-2-Clause */
/* Terminate (RFC 5040 §4.8, §7.1): header codec, siw's bit-reversed layout, names, error
 * mapping, and the builder of the outgoing Terminate segment. */
#include "harness.h"
#include "iwarp/errors.h"
#include "wire/wire_term.h"

/* The 18-octet DDP header every libiwarp Terminate starts with (wire-reference §1.9). */
#define TERM_DDP  "4147 00000000 00000002 00000001 00000000"
/* An untagged Send header, MSN 5; a tagged Write header, STag 0x1234, TO 0x100. */
#define SEND_HDR  "4143 00000000 00000000 00000005 00000000"
#define WRITE_HDR "c140 00001234 0000000000000100"
/* RDMA Read Request, QN 1, MSN 1, and its 28-octet header (RFC 5040 §4.4). */
#define RREQ_HDR  "4141 00000000 00000001 00000001 00000000"
#define RREQ_BODY "11223344 0102030405060708 00001000 aabbccdd 1112131415161718"

static size_t hex(const char *h, uint8_t *b)
{
    return harness_hex(h, b, 256);
}

static void assert_cause(struct iwarp_term_cause c, unsigned layer, unsigned etype, unsigned code)
{
    ASSERT_EQ(c.layer, layer);
    ASSERT_EQ(c.etype, etype);
    ASSERT_EQ(c.ecode, code);
}

/* ---- decode ---- */

/* wire-reference §1.9: the bare Terminate, Terminate header 00000000. */
TEST(decode_bare)
{
    uint8_t b[256] = {0};
    size_t n = hex("00000000", b);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 4);
    assert_cause(t.ctrl.cause, 0, 0, 0);
    ASSERT_EQ(t.ctrl.hdrct, 0);
    ASSERT_EQ(t.rsvd, 0);
    ASSERT_FALSE(t.siw_swapped);
    ASSERT_TRUE(t.ddp_hdr == NULL);
    ASSERT_EQ(t.ddp_hdr_len, 0);
    /* Trailing octets are the caller's business. */
    ASSERT_EQ(iwarp_term_decode(b, 6, &t), 4);
    for (size_t len = 0; len < 4; len++)
        ASSERT_EQ(iwarp_term_decode(b, len, &t), IWARP_ERR_SHORT);
}

/* DDP Tagged "Invalid STag" with M+D and a 14-octet tagged header (DDP Segment Length 0x0414). */
TEST(decode_tagged_offender)
{
    uint8_t b[256] = {0};
    size_t n = hex("11 00 c0 00 0414 " WRITE_HDR, b);
    ASSERT_EQ(n, 20);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 20);
    assert_cause(t.ctrl.cause, 1, 1, 0);
    ASSERT_EQ_U(t.ctrl.hdrct, IWARP_TERM_FLAG_M | IWARP_TERM_FLAG_D);
    ASSERT_EQ_U(t.ddp_seg_len, 0x0414);
    ASSERT_TRUE(t.ddp_hdr == b + 6);
    ASSERT_EQ(t.ddp_hdr_len, 14);
    ASSERT_TRUE(t.ddp.tagged);
    ASSERT_EQ_U(t.ddp.stag, 0x1234);
    ASSERT_EQ_U(t.ddp.to, 0x100);
    for (size_t len = 0; len < n; len++)
        ASSERT_EQ(iwarp_term_decode(b, len, &t), IWARP_ERR_SHORT);
}

/* An RDMAP-layer Terminate about a tagged segment: the copied header is sized by its T bit
 * (14), not by the EType (Wireshark's mistake, wire-reference §1.5). */
TEST(decode_rdmap_error_tagged_offender)
{
    uint8_t b[256] = {0};
    size_t n = hex("02 06 c0 00 000e c1 4c 00000001 0000000000000000", b);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 20);
    assert_cause(t.ctrl.cause, 0, 2, 6);
    ASSERT_EQ(t.ddp_hdr_len, 14);
    ASSERT_EQ_U(t.ddp.rsvdulp, 0x4C);
}

/* Remote Protection on a Read Request: M+D+R, 18 B header, 28 B Read Request header. */
TEST(decode_read_request_offender)
{
    uint8_t b[256] = {0};
    size_t n = hex("01 02 e0 00 002e " RREQ_HDR RREQ_BODY, b);
    ASSERT_EQ(n, 52);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 52);
    assert_cause(t.ctrl.cause, 0, 1, 2);
    ASSERT_EQ_U(t.ctrl.hdrct, IWARP_TERM_HDRCT_MASK);
    ASSERT_EQ_U(t.ddp_seg_len, 46);
    ASSERT_EQ(t.ddp_hdr_len, 18);
    ASSERT_EQ_U(t.ddp.qn, 1);
    ASSERT_EQ_U(t.rdma.sink_stag, 0x11223344u);
    ASSERT_EQ_U(t.rdma.sink_to, 0x0102030405060708ull);
    ASSERT_EQ_U(t.rdma.size, 0x1000);
    ASSERT_EQ_U(t.rdma.src_stag, 0xAABBCCDDu);
    ASSERT_EQ_U(t.rdma.src_to, 0x1112131415161718ull);
    for (size_t len = 0; len < n; len++)
        ASSERT_EQ(iwarp_term_decode(b, len, &t), IWARP_ERR_SHORT);
}

/* R without D: the Read Request header follows the control word directly. */
TEST(decode_r_without_d)
{
    uint8_t b[256], out[256];
    size_t n = hex("01 00 20 00 " RREQ_BODY, b);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 32);
    ASSERT_TRUE(t.ddp_hdr == NULL);
    ASSERT_EQ_U(t.rdma.size, 0x1000);
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), 32);
    ASSERT_MEM_EQ(out, b, 32);
}

/* wire-reference §1.5: Debian 12 siw sends DDP untagged "Invalid MSN" (RFC 1/2/0x03, M+D) as
 * 21 03 03 00 followed by 2 + 18 octets (its payload-only DDP Segment Length here 0x10). */
TEST(decode_siw_bit_reversed)
{
    uint8_t b[256] = {0};
    size_t n = hex("21 03 03 00 0010 4143 00000000 00000000 00000002 00000000", b);
    ASSERT_EQ(n, 24);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 24);
    /* The RFC reading is always given: LLP/EType 1 (undefined), no headers, reserved 0x300. */
    assert_cause(t.ctrl.cause, 2, 1, 3);
    ASSERT_EQ(t.ctrl.hdrct, 0);
    ASSERT_EQ_U(t.rsvd, 0x0300);
    ASSERT_TRUE(t.siw_swapped);
    assert_cause(t.siw_ctrl.cause, 1, 2, 3);
    ASSERT_EQ_U(t.siw_ctrl.hdrct, IWARP_TERM_FLAG_M | IWARP_TERM_FLAG_D);
    ASSERT_TRUE(iwarp_term_layout(&t) == &t.siw_ctrl);
    ASSERT_EQ_U(t.ddp_seg_len, 0x10);
    ASSERT_EQ(t.ddp_hdr_len, 18);
    ASSERT_EQ_U(t.ddp.msn, 2);

    /* Truncated, the siw reading no longer fits: the RFC reading (4 octets) stands. */
    for (size_t len = 4; len < n; len++) {
        ASSERT_EQ(iwarp_term_decode(b, len, &t), 4);
        ASSERT_FALSE(t.siw_swapped);
    }
    /* With a trailing octet neither reading fits exactly: not flagged either. */
    ASSERT_EQ(iwarp_term_decode(b, n + 1, &t), 4);
    ASSERT_FALSE(t.siw_swapped);
}

/* siw's invalid RDMAP version (RFC 0/2/0x05) arrives as 20 05 00 00: no reserved bit is set
 * and the RFC reading (LLP/MPA/Local catastrophic) is valid, so it is not flagged, but the
 * siw reading is reported. */
TEST(decode_siw_ambiguous_not_flagged)
{
    uint8_t b[256] = {0};
    size_t n = hex("20 05 00 00", b);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 4);
    assert_cause(t.ctrl.cause, 2, 0, 5);
    ASSERT_FALSE(t.siw_swapped);
    assert_cause(t.siw_ctrl.cause, 0, 2, 5);
    ASSERT_EQ(t.siw_ctrl.hdrct, 0);

    /* Reserved bits set but the RFC reading is defined and fits: the RFC reading stands. */
    n = hex("20 05 01 00", b);
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 4);
    ASSERT_FALSE(t.siw_swapped);
    ASSERT_EQ_U(t.rsvd, 0x100);
    /* ...and with an undefined RFC cause, the siw reading (DDP/Untagged/too long, M) wins. */
    n = hex("21 05 01 00", b);
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 4);
    ASSERT_TRUE(t.siw_swapped);
    assert_cause(t.siw_ctrl.cause, 1, 2, 5);
    ASSERT_EQ_U(t.siw_ctrl.hdrct, IWARP_TERM_FLAG_M);
}

/* Reserved bits that siw would never set (its own reserved bits) keep the RFC reading. */
TEST(decode_reserved_not_siw)
{
    uint8_t b[256] = {0};
    size_t n = hex("10 00 c8 00 0414 " WRITE_HDR, b);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 20);
    ASSERT_FALSE(t.siw_swapped);
    ASSERT_EQ_U(t.rsvd, 0x0800);
    assert_cause(t.ctrl.cause, 1, 0, 0);
    /* siw layout candidate with siw's own reserved octet 3 set: not flagged. */
    n = hex("21 03 03 01 0010 " SEND_HDR, b);
    ASSERT_EQ(iwarp_term_decode(b, n, &t), 4);
    ASSERT_FALSE(t.siw_swapped);
}

/* ---- encode ---- */

TEST(encode_golden_and_round_trip)
{
    uint8_t hdr[256], out[256], expect[256];
    hex(SEND_HDR, hdr);
    struct iwarp_term t = {
        .ctrl = {.cause = {1, 2, 3}, .hdrct = IWARP_TERM_FLAG_M | IWARP_TERM_FLAG_D},
        .rsvd = 0x1FFF, /* ignored: written as zero */
        .ddp_seg_len = 0x22,
        .ddp_hdr = hdr,
        .ddp_hdr_len = 18,
    };
    size_t n = hex("12 03 c0 00 0022 " SEND_HDR, expect);
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), (iwarp_ssize)n);
    ASSERT_MEM_EQ(out, expect, n);
    for (size_t cap = 0; cap < n; cap++)
        ASSERT_EQ(iwarp_term_encode(out, cap, &t), IWARP_ERR_NOSPC);

    static const char *const vec[] = {
        "00000000",
        "00 ff 00 00",
        "11 00 c0 00 0414 " WRITE_HDR,
        "02 06 c0 00 000e c1 4c 00000001 0000000000000000",
        "01 02 e0 00 002e " RREQ_HDR RREQ_BODY,
    };
    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
        n = hex(vec[i], expect);
        struct iwarp_term d;
        ASSERT_EQ(iwarp_term_decode(expect, n, &d), (iwarp_ssize)n);
        ASSERT_EQ(iwarp_term_encode(out, sizeof out, &d), (iwarp_ssize)n);
        ASSERT_MEM_EQ(out, expect, n);
    }
}

TEST(encode_inval)
{
    uint8_t hdr[256], out[256];
    hex(WRITE_HDR, hdr);
    struct iwarp_term t = {.ctrl = {.cause = {16, 0, 0}}};
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), IWARP_ERR_INVAL);
    t = (struct iwarp_term){.ctrl = {.cause = {0, 16, 0}}};
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), IWARP_ERR_INVAL);
    t = (struct iwarp_term){.ctrl = {.hdrct = 0x10}};
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), IWARP_ERR_INVAL);
    t = (struct iwarp_term){.ctrl = {.hdrct = IWARP_TERM_FLAG_D}, .ddp_hdr_len = 14};
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), IWARP_ERR_INVAL);
    /* A tagged header is 14 octets, not 18. */
    t = (struct iwarp_term){
        .ctrl = {.hdrct = IWARP_TERM_FLAG_D}, .ddp_hdr = hdr, .ddp_hdr_len = 18};
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), IWARP_ERR_INVAL);
    t.ddp_hdr_len = 14;
    ASSERT_EQ(iwarp_term_encode(out, sizeof out, &t), 20);
}

/* ---- names ---- */

TEST(names_layers_and_etypes)
{
    ASSERT_STR_EQ(iwarp_term_layer_name(0), "RDMAP");
    ASSERT_STR_EQ(iwarp_term_layer_name(1), "DDP");
    ASSERT_STR_EQ(iwarp_term_layer_name(2), "LLP");
    for (unsigned l = 3; l < 16; l++)
        ASSERT_TRUE(iwarp_term_layer_name(l) == NULL);
    ASSERT_STR_EQ(iwarp_term_etype_name(0, 0), "Local Catastrophic");
    ASSERT_STR_EQ(iwarp_term_etype_name(0, 1), "Remote Protection");
    ASSERT_STR_EQ(iwarp_term_etype_name(0, 2), "Remote Operation");
    ASSERT_STR_EQ(iwarp_term_etype_name(1, 0), "Local Catastrophic");
    ASSERT_STR_EQ(iwarp_term_etype_name(1, 1), "Tagged");
    ASSERT_STR_EQ(iwarp_term_etype_name(1, 2), "Untagged");
    ASSERT_STR_EQ(iwarp_term_etype_name(1, 3), "Reserved for LLP");
    ASSERT_STR_EQ(iwarp_term_etype_name(2, 0), "MPA");
    ASSERT_TRUE(iwarp_term_etype_name(0, 3) == NULL);
    ASSERT_TRUE(iwarp_term_etype_name(1, 4) == NULL);
    ASSERT_TRUE(iwarp_term_etype_name(2, 1) == NULL);
    ASSERT_TRUE(iwarp_term_etype_name(3, 0) == NULL);
}

struct code_row {
    uint8_t l, e, c;
    const char *name;
};

/* Every code of RFC 5040 Figure 9, RFC 5041 §7.2, RFC 5044 §8 and RFC 6581 §8. */
TEST(names_every_code)
{
    static const struct code_row rows[] = {
        {0, 1, 0x00, "Invalid STag"},
        {0, 1, 0x01, "Base or bounds violation"},
        {0, 1, 0x02, "Access rights violation"},
        {0, 1, 0x03, "STag not associated with RDMAP Stream"},
        {0, 1, 0x04, "TO wrap"},
        {0, 1, 0x09, "STag cannot be Invalidated"},
        {0, 1, 0xFF, "Unspecified Error"},
        {0, 2, 0x05, "Invalid RDMAP version"},
        {0, 2, 0x06, "Unexpected OpCode"},
        {0, 2, 0x07, "Catastrophic error, localized to RDMAP Stream"},
        {0, 2, 0x08, "Catastrophic error, global"},
        {0, 2, 0x09, "STag cannot be Invalidated"},
        {0, 2, 0xFF, "Unspecified Error"},
        {1, 0, 0x00, "Local Catastrophic"},
        {1, 1, 0x00, "Invalid STag"},
        {1, 1, 0x01, "Base or bounds violation"},
        {1, 1, 0x02, "STag not associated with DDP Stream"},
        {1, 1, 0x03, "TO wrap"},
        {1, 1, 0x04, "Invalid DDP version"},
        {1, 2, 0x01, "Invalid QN"},
        {1, 2, 0x02, "Invalid MSN - no buffer available"},
        {1, 2, 0x03, "Invalid MSN - MSN range is not valid"},
        {1, 2, 0x04, "Invalid MO"},
        {1, 2, 0x05, "DDP Message too long for available buffer"},
        {1, 2, 0x06, "Invalid DDP version"},
        {2, 0, 0x01, "TCP connection closed, terminated, or lost"},
        {2, 0, 0x02, "MPA CRC error"},
        {2, 0, 0x03, "MPA Marker and ULPDU Length mismatch"},
        {2, 0, 0x04, "Invalid MPA Request or Reply frame"},
        {2, 0, 0x05, "Local catastrophic"},
        {2, 0, 0x06, "Insufficient IRD resources"},
        {2, 0, 0x07, "No matching RTR option"},
    };
    size_t defined = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct iwarp_term_cause c = {rows[i].l, rows[i].e, rows[i].c};
        ASSERT_STR_EQ(iwarp_term_code_name(c), rows[i].name);
        ASSERT_TRUE(iwarp_term_cause_defined(c));
    }
    /* Exactly those, plus any code of RDMAP Local Catastrophic and of DDP EType 3. */
    for (unsigned l = 0; l < 16; l++)
        for (unsigned e = 0; e < 16; e++)
            for (unsigned c = 0; c < 256; c++) {
                struct iwarp_term_cause k = {(uint8_t)l, (uint8_t)e, (uint8_t)c};
                if (iwarp_term_code_name(k))
                    defined++;
                bool any = (l == 0 && e == 0) || (l == 1 && e == 3);
                if (any) {
                    ASSERT_TRUE(iwarp_term_cause_defined(k));
                    ASSERT_TRUE(iwarp_term_code_name(k) == NULL);
                } else {
                    ASSERT_EQ(iwarp_term_cause_defined(k), iwarp_term_code_name(k) != NULL);
                }
            }
    ASSERT_EQ(defined, sizeof rows / sizeof rows[0]);
}

TEST(cause_str)
{
    char s[128];
    struct iwarp_term_cause c = {1, 2, 3};
    size_t n = iwarp_term_cause_str(c, s, sizeof s);
    ASSERT_STR_EQ(s, "DDP/Untagged/Invalid MSN - MSN range is not valid");
    ASSERT_EQ(n, strlen(s));
    iwarp_term_cause_str((struct iwarp_term_cause){0, 2, 5}, s, sizeof s);
    ASSERT_STR_EQ(s, "RDMAP/Remote Operation/Invalid RDMAP version");
    iwarp_term_cause_str((struct iwarp_term_cause){0, 0, 0xFF}, s, sizeof s);
    ASSERT_STR_EQ(s, "RDMAP/Local Catastrophic/code 0xFF");
    iwarp_term_cause_str((struct iwarp_term_cause){2, 0, 2}, s, sizeof s);
    ASSERT_STR_EQ(s, "LLP/MPA/MPA CRC error");
    iwarp_term_cause_str((struct iwarp_term_cause){1, 9, 1}, s, sizeof s);
    ASSERT_STR_EQ(s, "DDP/etype 0x9/code 0x01");
    iwarp_term_cause_str((struct iwarp_term_cause){5, 3, 0x0a}, s, sizeof s);
    ASSERT_STR_EQ(s, "layer 0x5/etype 0x3/code 0x0A");
    iwarp_term_cause_str((struct iwarp_term_cause){1, 2, 0x09}, s, sizeof s);
    ASSERT_STR_EQ(s, "DDP/Untagged/code 0x09");

    /* Truncation keeps a NUL and reports the full length, like snprintf. */
    memset(s, 'x', sizeof s);
    ASSERT_EQ(iwarp_term_cause_str(c, s, 4), n);
    ASSERT_STR_EQ(s, "DDP");
    ASSERT_EQ(s[4], 'x');
    ASSERT_EQ(iwarp_term_cause_str(c, s, 1), n);
    ASSERT_STR_EQ(s, "");
    ASSERT_EQ(iwarp_term_cause_str(c, NULL, 0), n);
}

/* ---- error mapping ---- */

TEST(cause_from_err)
{
    struct iwarp_term_cause c;
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_DDP_VERSION, true, &c), 0);
    assert_cause(c, 1, 1, 0x04);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_DDP_VERSION, false, &c), 0);
    assert_cause(c, 1, 2, 0x06);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_DDP_HDR_LEN, false, &c), 0);
    assert_cause(c, 1, 0, 0x00);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_DDP_QN, false, &c), 0);
    assert_cause(c, 1, 2, 0x01);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_DDP_MO, false, &c), 0);
    assert_cause(c, 1, 2, 0x04);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_RDMAP_VERSION, true, &c), 0);
    assert_cause(c, 0, 2, 0x05);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_RDMAP_OPCODE, false, &c), 0);
    assert_cause(c, 0, 2, 0x06);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_RDMAP_TAGGED, true, &c), 0);
    assert_cause(c, 0, 2, 0x06);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_RDMAP_LEN, false, &c), 0);
    assert_cause(c, 0, 2, 0xFF);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_RDMAP_LAST, false, &c), 0);
    assert_cause(c, 0, 2, 0xFF);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_FPDU_CRC, false, &c), 0);
    assert_cause(c, 2, 0, 0x02);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_FPDU_MARKER, false, &c), 0);
    assert_cause(c, 2, 0, 0x03);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_MPA_KEY, false, &c), 0);
    assert_cause(c, 2, 0, 0x04);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_MPA_IRD_ORD, false, &c), 0);
    assert_cause(c, 2, 0, 0x06);
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_MPA_RTR, false, &c), 0);
    assert_cause(c, 2, 0, 0x07);
    c = (struct iwarp_term_cause){9, 9, 9};
    ASSERT_EQ(iwarp_term_cause_from_err(IWARP_ERR_NOMEM, false, &c), IWARP_ERR_NOTSUP);
    ASSERT_EQ(iwarp_term_cause_from_err(0, false, &c), IWARP_ERR_NOTSUP);
    assert_cause(c, 9, 9, 9);
}

/* ---- builder ---- */

static void check_build(struct iwarp_term_cause cause, const struct iwarp_term_offender *off,
                        const char *expect_hex)
{
    uint8_t out[256], expect[256];
    size_t n = hex(expect_hex, expect);
    ASSERT_EQ(iwarp_term_build(out, sizeof out, cause, off), (iwarp_ssize)n);
    ASSERT_MEM_EQ(out, expect, n);
    for (size_t cap = 0; cap < n; cap++)
        ASSERT_EQ(iwarp_term_build(out, cap, cause, off), IWARP_ERR_NOSPC);
}

TEST(build_no_offender)
{
    /* §7.1 rule 1 / siw's QP -> TERMINATE: 0/0/0xFF, HdrCt 0 (ULPDU_Length 22). */
    check_build((struct iwarp_term_cause){0, 0, 0xFF}, NULL, TERM_DDP "00 ff 00 00");
    /* The bare Terminate of wire-reference §1.9. */
    check_build((struct iwarp_term_cause){0, 0, 0}, NULL, TERM_DDP "00000000");
    /* Even a DDP error without an offending segment has no headers. */
    check_build((struct iwarp_term_cause){1, 2, 3}, NULL, TERM_DDP "12 03 00 00");
}

/* DDP untagged Invalid MSN on a Send with 16 octets of payload: M+D, DDP Segment Length =
 * 18 + 16 = 0x22 (the RFC value, not siw's 0x10), ULPDU_Length 42 (wire-reference §1.5). */
TEST(build_ddp_untagged)
{
    uint8_t seg[256];
    size_t n = hex(SEND_HDR "00000000000000000000000000000000", seg);
    struct iwarp_term_offender off = {.seg = seg, .avail = n, .seg_len = (uint32_t)n};
    check_build((struct iwarp_term_cause){1, 2, 3}, &off, TERM_DDP "12 03 c0 00 0022 " SEND_HDR);
    /* Only the header is needed; the length comes from seg_len. */
    off.avail = 18;
    check_build((struct iwarp_term_cause){1, 2, 3}, &off, TERM_DDP "12 03 c0 00 0022 " SEND_HDR);
}

/* DDP tagged Invalid STag on a Write with 100 octets: ULPDU_Length 38, length 14 + 100. */
TEST(build_ddp_tagged)
{
    uint8_t seg[256];
    hex(WRITE_HDR, seg);
    struct iwarp_term_offender off = {.seg = seg, .avail = 14, .seg_len = 114};
    check_build((struct iwarp_term_cause){1, 1, 0}, &off, TERM_DDP "11 00 c0 00 0072 " WRITE_HDR);
}

/* Remote Protection on a Read Request: M+D+R, 2 + 18 + 28 (Figure 10, §7.1 rule 3). */
TEST(build_remote_protection_read_request)
{
    uint8_t seg[256];
    size_t n = hex(RREQ_HDR RREQ_BODY, seg);
    struct iwarp_term_offender off = {.seg = seg, .avail = n, .seg_len = (uint32_t)n};
    check_build((struct iwarp_term_cause){0, 1, 0}, &off,
                TERM_DDP "01 00 e0 00 002e " RREQ_HDR RREQ_BODY);

    /* Partly served: the header is updated to the current position (RFC 5040 §4.8). */
    struct iwarp_rdmap_read_req now = {
        .sink_stag = 0x11223344u,
        .sink_to = 0x0102030405060708ull + 2048,
        .size = 0x1000 - 2048,
        .src_stag = 0xAABBCCDDu,
        .src_to = 0x1112131415161718ull + 2048,
    };
    off.read_req = &now;
    check_build((struct iwarp_term_cause){0, 1, 0}, &off,
                TERM_DDP "01 00 e0 00 002e " RREQ_HDR
                         "11223344 0102030405060f08 00000800 aabbccdd 1112131415161f18");

    /* Without the Read Request header at hand, R is not set. */
    off.read_req = NULL;
    off.avail = 18 + 27;
    check_build((struct iwarp_term_cause){0, 1, 0}, &off, TERM_DDP "01 00 c0 00 002e " RREQ_HDR);
}

/* Remote Operation errors and DDP errors on a Read Request carry no RDMA header (Figure 10). */
TEST(build_no_r_for_other_errors)
{
    uint8_t seg[256];
    size_t n = hex(RREQ_HDR RREQ_BODY, seg);
    struct iwarp_term_offender off = {.seg = seg, .avail = n, .seg_len = (uint32_t)n};
    check_build((struct iwarp_term_cause){0, 2, 6}, &off, TERM_DDP "02 06 c0 00 002e " RREQ_HDR);
    check_build((struct iwarp_term_cause){1, 2, 3}, &off, TERM_DDP "12 03 c0 00 002e " RREQ_HDR);
    /* Remote Protection on a Send with Invalidate: M+D, no R. */
    n = hex("4144 00001234 00000000 00000001 00000000", seg);
    off = (struct iwarp_term_offender){.seg = seg, .avail = n, .seg_len = 18};
    check_build((struct iwarp_term_cause){0, 1, 9}, &off,
                TERM_DDP "01 09 c0 00 0012 4144 00001234 00000000 00000001 00000000");
}

/* LLP errors and Local Catastrophic errors carry no headers even with an offender. */
TEST(build_no_headers)
{
    uint8_t seg[256];
    size_t n = hex(SEND_HDR, seg);
    struct iwarp_term_offender off = {.seg = seg, .avail = n, .seg_len = 40};
    check_build((struct iwarp_term_cause){2, 0, 2}, &off, TERM_DDP "20 02 00 00");
    check_build((struct iwarp_term_cause){1, 0, 0}, &off, TERM_DDP "10 00 00 00");
    check_build((struct iwarp_term_cause){0, 0, 0x42}, &off, TERM_DDP "00 42 00 00");
    /* An offender too short to hold its header cannot be copied. */
    off.avail = 17;
    check_build((struct iwarp_term_cause){1, 2, 1}, &off, TERM_DDP "12 01 00 00");
    off.avail = 0;
    check_build((struct iwarp_term_cause){1, 2, 1}, &off, TERM_DDP "12 01 00 00");
}

/* A segment length beyond 16 bits (possible over SCTP) is sent as D without M. */
TEST(build_long_segment)
{
    uint8_t seg[256];
    hex(SEND_HDR, seg);
    struct iwarp_term_offender off = {.seg = seg, .avail = 18, .seg_len = 70000};
    check_build((struct iwarp_term_cause){1, 2, 5}, &off, TERM_DDP "12 05 40 00 0000 " SEND_HDR);
    off.seg_len = 65535;
    check_build((struct iwarp_term_cause){1, 2, 5}, &off, TERM_DDP "12 05 c0 00 ffff " SEND_HDR);
}

TEST(build_inval)
{
    uint8_t out[256], seg[256];
    hex(SEND_HDR, seg);
    ASSERT_EQ(iwarp_term_build(out, sizeof out, (struct iwarp_term_cause){0, 1, 5}, NULL),
              IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_term_build(out, sizeof out, (struct iwarp_term_cause){3, 0, 0}, NULL),
              IWARP_ERR_INVAL);
    struct iwarp_term_offender off = {.seg = seg, .avail = 18, .seg_len = 17};
    ASSERT_EQ(iwarp_term_build(out, sizeof out, (struct iwarp_term_cause){1, 2, 1}, &off),
              IWARP_ERR_INVAL);
}

/* What the builder makes, the decoder reads back. */
TEST(build_then_decode)
{
    uint8_t seg[256], out[256];
    size_t n = hex(RREQ_HDR RREQ_BODY, seg);
    struct iwarp_term_offender off = {.seg = seg, .avail = n, .seg_len = (uint32_t)n};
    iwarp_ssize len = iwarp_term_build(out, sizeof out, (struct iwarp_term_cause){0, 1, 2}, &off);
    ASSERT_EQ(len, IWARP_TERM_SEG_MAX_LEN);
    struct iwarp_term t;
    ASSERT_EQ(iwarp_term_decode(out + 18, (size_t)len - 18, &t), len - 18);
    assert_cause(t.ctrl.cause, 0, 1, 2);
    ASSERT_FALSE(t.siw_swapped);
    ASSERT_MEM_EQ(t.ddp_hdr, seg, 18);
    ASSERT_EQ_U(t.rdma.src_to, 0x1112131415161718ull);
}
