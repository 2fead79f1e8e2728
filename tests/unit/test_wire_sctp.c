/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP over SCTP chunk payloads (RFC 5043 §5.1, §5.2, §8, §9, §10, §11.1; RFC 6581 §7, §9):
 * golden chunks written by hand from the RFC figures, every decode and encode error with its
 * exact code, the chunk classifiers, seeded round trips. */
#include "harness.h"
#include "iwarp/errors.h"
#include "wire/wire.h"
#include "wire/wire_sctp.h"

static size_t hex(const char *h, uint8_t *out)
{
    return harness_hex(h, out, 700);
}

/* Encodes c and checks the bytes against want, then decodes want and re-encodes it. */
static void golden(const struct iwarp_sctp_ctl *c, const char *want_hex)
{
    uint8_t want[700], got[700], again[700];
    size_t n = hex(want_hex, want);
    ASSERT_EQ(iwarp_sctp_ctl_encode(got, sizeof got, c), (iwarp_ssize)n);
    ASSERT_MEM_EQ(got, want, n);
    struct iwarp_sctp_ctl d;
    ASSERT_EQ(iwarp_sctp_ctl_decode(want, n, &d), (iwarp_ssize)n);
    ASSERT_EQ(d.ssn, c->ssn);
    ASSERT_EQ(d.fc, c->fc);
    ASSERT_EQ(d.pd_len, c->pd_len);
    if (c->pd_len > 0)
        ASSERT_MEM_EQ(d.pd, c->pd, c->pd_len);
    if (iwarp_sctp_fc_has_ird_ord(c->fc)) {
        ASSERT_EQ(d.ird_ord.p2p, c->ird_ord.p2p);
        ASSERT_EQ(d.ird_ord.rtr, c->ird_ord.rtr);
        ASSERT_EQ(d.ird_ord.ird, c->ird_ord.ird);
        ASSERT_EQ(d.ird_ord.ord, c->ird_ord.ord);
    }
    ASSERT_EQ(iwarp_sctp_ctl_encode(again, sizeof again, &d), (iwarp_ssize)n);
    ASSERT_MEM_EQ(again, want, n);
}

/* RFC 5043 §5.2.3 Figure: DDP-SSN(16) | Function Code(16) | Private Data. */
TEST(golden_initiate)
{
    struct iwarp_sctp_ctl c = {
        .ssn = 0, .fc = IWARP_SCTP_FC_INITIATE, .pd = (const uint8_t *)"pd", .pd_len = 2};
    golden(&c, "0000 0001 70 64");
}

TEST(golden_accept_empty_pd)
{
    /* §5.2.3: private data required but "MAY be of zero length". */
    struct iwarp_sctp_ctl c = {.ssn = 0, .fc = IWARP_SCTP_FC_ACCEPT};
    golden(&c, "0000 0002");
}

TEST(golden_reject)
{
    struct iwarp_sctp_ctl c = {
        .ssn = 0, .fc = IWARP_SCTP_FC_REJECT, .pd = (const uint8_t *)"no", .pd_len = 2};
    golden(&c, "0000 0003 6E 6F");
}

TEST(golden_terminate)
{
    struct iwarp_sctp_ctl c = {.ssn = 0x1234, .fc = IWARP_SCTP_FC_TERMINATE};
    golden(&c, "1234 0004");
}

/* RFC 6581 §7, §9: the word A|B|IRD C|D|ORD leads the private data of code 5. */
TEST(golden_enhanced_initiate)
{
    struct iwarp_sctp_ctl c = {.ssn = 0,
                               .fc = IWARP_SCTP_FC_ENH_INITIATE,
                               .ird_ord = {.ird = 16, .ord = 8},
                               .pd = (const uint8_t *)"hi",
                               .pd_len = 2};
    golden(&c, "0000 0005 | 0010 0008 | 68 69");
}

/* A=1 (0x8000) and B (0x4000) in the IRD half-word, C (0x8000) in the ORD half-word. */
TEST(golden_enhanced_accept_p2p)
{
    struct iwarp_sctp_ctl c = {
        .ssn = 0,
        .fc = IWARP_SCTP_FC_ENH_ACCEPT,
        .ird_ord = {
            .p2p = true, .rtr = IWARP_MPA_RTR_SEND | IWARP_MPA_RTR_WRITE, .ird = 4, .ord = 2}};
    golden(&c, "0000 0006 | C004 8002");
}

TEST(golden_enhanced_ird_ord_none)
{
    /* RFC 6581 §9.1: 0x3FFF = no automatic negotiation. */
    struct iwarp_sctp_ctl c = {
        .ssn = 7, .fc = IWARP_SCTP_FC_ENH_INITIATE, .ird_ord = {.ird = 0x3FFF, .ord = 0x3FFF}};
    golden(&c, "0007 0005 3FFF 3FFF");
}

/* RFC 6581 §7 puts the word only in the Initiate and the Accept: code 7 carries plain data. */
TEST(golden_enhanced_reject_has_no_word)
{
    struct iwarp_sctp_ctl c = {
        .ssn = 0, .fc = IWARP_SCTP_FC_ENH_REJECT, .pd = (const uint8_t *)"x", .pd_len = 1};
    golden(&c, "0000 0007 78");
    uint8_t b[8];
    size_t n = hex("0000 0007", b);
    struct iwarp_sctp_ctl d;
    ASSERT_EQ(iwarp_sctp_ctl_decode(b, n, &d), 4);
    ASSERT_EQ(d.pd_len, 0);
}

TEST(golden_experimental)
{
    /* RFC 6580 §3.5: 0xFFFF reserved for experimental use; its data is opaque here. */
    struct iwarp_sctp_ctl c = {.ssn = 0xFFFF,
                               .fc = IWARP_SCTP_FC_EXPERIMENTAL,
                               .pd = (const uint8_t *)"\xab",
                               .pd_len = 1};
    golden(&c, "FFFF FFFF AB");
}

TEST(decode_ignores_rtr_without_a)
{
    /* RFC 6581 §9.2: with A=0, B/C/D "MUST be ignored". */
    uint8_t b[16];
    size_t n = hex("0000 0006 4005 C003", b);
    struct iwarp_sctp_ctl d;
    ASSERT_EQ(iwarp_sctp_ctl_decode(b, n, &d), 8);
    ASSERT_FALSE(d.ird_ord.p2p);
    ASSERT_EQ(d.ird_ord.rtr, 0);
    ASSERT_EQ(d.ird_ord.ird, 5);
    ASSERT_EQ(d.ird_ord.ord, 3);
}

TEST(decode_truncated)
{
    uint8_t b[8] = {0, 0, 0, 1};
    struct iwarp_sctp_ctl d;
    for (size_t n = 0; n < 4; n++)
        ASSERT_EQ(iwarp_sctp_ctl_decode(b, n, &d), IWARP_ERR_SHORT);
    ASSERT_EQ(iwarp_sctp_ctl_decode(b, 4, &d), 4);
    /* RFC 6581 §7: codes 5 and 6 need the 4-octet word. */
    for (uint16_t fc = 5; fc <= 6; fc++) {
        uint8_t e[8] = {0, 0, 0, (uint8_t)fc, 0, 1, 0, 1};
        for (size_t n = 4; n < 8; n++)
            ASSERT_EQ(iwarp_sctp_ctl_decode(e, n, &d), IWARP_ERR_MPA_ENHANCED);
        ASSERT_EQ(iwarp_sctp_ctl_decode(e, 8, &d), 8);
    }
}

TEST(decode_unknown_function)
{
    static const uint16_t bad[] = {0, 8, 9, 0x0100, 0x7FFF, 0x8000, 0xFFFE};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t b[4] = {0, 0, (uint8_t)(bad[i] >> 8), (uint8_t)bad[i]};
        struct iwarp_sctp_ctl d;
        ASSERT_EQ(iwarp_sctp_ctl_decode(b, 4, &d), IWARP_ERR_SESSION_FUNCTION);
        ASSERT_FALSE(iwarp_sctp_fc_known(bad[i]));
    }
    for (uint16_t fc = 1; fc <= 7; fc++)
        ASSERT_TRUE(iwarp_sctp_fc_known(fc));
    ASSERT_TRUE(iwarp_sctp_fc_known(0xFFFF));
}

TEST(decode_pd_limits)
{
    static uint8_t b[4 + 600];
    struct iwarp_sctp_ctl d;
    /* RFC 5043 §5.2.3: at most 512 octets, in every message. */
    for (uint16_t fc = 1; fc <= 7; fc++) {
        if (fc == IWARP_SCTP_FC_TERMINATE)
            continue;
        b[3] = (uint8_t)fc;
        ASSERT_EQ(iwarp_sctp_ctl_decode(b, 4 + 512, &d), 4 + 512);
        ASSERT_EQ(d.pd_len, iwarp_sctp_fc_has_ird_ord(fc) ? 508 : 512);
        ASSERT_EQ(iwarp_sctp_ctl_decode(b, 4 + 513, &d), IWARP_ERR_MPA_PD_LEN);
    }
    /* "Private Data MUST NOT be included in the DDP Stream Session Terminate message". */
    b[3] = IWARP_SCTP_FC_TERMINATE;
    ASSERT_EQ(iwarp_sctp_ctl_decode(b, 5, &d), IWARP_ERR_MPA_PD_LEN);
    /* The function code is judged before the length. */
    b[3] = 9;
    ASSERT_EQ(iwarp_sctp_ctl_decode(b, 4 + 600, &d), IWARP_ERR_SESSION_FUNCTION);
}

TEST(decode_bad_args)
{
    struct iwarp_sctp_ctl d;
    uint8_t b[4] = {0};
    ASSERT_EQ(iwarp_sctp_ctl_decode(NULL, 4, &d), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sctp_ctl_decode(b, 4, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sctp_ctl_decode(NULL, 0, &d), IWARP_ERR_SHORT);
}

TEST(encode_errors)
{
    uint8_t buf[600];
    static const uint8_t pd[600];
    struct iwarp_sctp_ctl c = {.fc = IWARP_SCTP_FC_INITIATE, .pd = pd, .pd_len = 3};
    for (size_t cap = 0; cap < 7; cap++)
        ASSERT_EQ(iwarp_sctp_ctl_encode(buf, cap, &c), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, 7, &c), 7);
    c.pd_len = 513;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), IWARP_ERR_MPA_PD_LEN);
    c.pd_len = 512;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), 516);
    /* RFC 6581 §7: the word counts towards the 512. */
    c.fc = IWARP_SCTP_FC_ENH_ACCEPT;
    c.pd_len = 509;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), IWARP_ERR_MPA_PD_LEN);
    c.pd_len = 508;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), IWARP_SCTP_CTL_MAX);
    for (size_t cap = 0; cap < IWARP_SCTP_CTL_MAX; cap += 37)
        ASSERT_EQ(iwarp_sctp_ctl_encode(buf, cap, &c), IWARP_ERR_NOSPC);
    c.pd_len = 0;
    c.ird_ord.ird = 0x4000;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), IWARP_ERR_INVAL);
    c.ird_ord.ird = 1;
    c.ird_ord.ord = 0x4000;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), IWARP_ERR_INVAL);
    c.ird_ord.ord = 1;
    c.ird_ord.rtr = IWARP_MPA_RTR_WRITE; /* RFC 6581 §9.2: B/C/D only with A */
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), IWARP_ERR_INVAL);
    c.ird_ord.p2p = true;
    c.ird_ord.rtr = 0x8;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), IWARP_ERR_INVAL);
    c.ird_ord.rtr = IWARP_MPA_RTR_ALL;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &c), 8);
    /* Terminate: no private data. */
    struct iwarp_sctp_ctl t = {.fc = IWARP_SCTP_FC_TERMINATE, .pd = pd, .pd_len = 1};
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &t), IWARP_ERR_MPA_PD_LEN);
    t.pd_len = 0;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, 3, &t), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, 4, &t), 4);
    /* Unknown code, NULL pointers. */
    struct iwarp_sctp_ctl u = {.fc = 8};
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &u), IWARP_ERR_INVAL);
    u.fc = 0;
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &u), IWARP_ERR_INVAL);
    struct iwarp_sctp_ctl np = {.fc = IWARP_SCTP_FC_ACCEPT, .pd = NULL, .pd_len = 1};
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, sizeof buf, &np), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sctp_ctl_encode(NULL, 10, &t), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sctp_ctl_encode(buf, 10, NULL), IWARP_ERR_INVAL);
}

/* RFC 5043 §5.2.2: DDP-SSN | DDP segment. A tagged RDMA Write, last (RFC 5041 §4.2, RFC 5040
 * §4.1: C1 40 STag TO) and an untagged Send (41 43 rsvd QN MSN MO). */
TEST(golden_segment_chunks)
{
    uint8_t b[64];
    size_t n = hex("0102 | C1 40 11223344 0000000000001000 | AA BB", b);
    struct iwarp_sctp_seg s;
    ASSERT_EQ(iwarp_sctp_seg_decode(b, n, 0, &s), (iwarp_ssize)n);
    ASSERT_EQ(s.ssn, 0x0102);
    ASSERT_TRUE(s.seg == b + 2);
    ASSERT_EQ(s.len, 16);
    uint8_t pre[2];
    ASSERT_EQ(iwarp_sctp_ssn_encode(pre, 2, 0x0102), 2);
    ASSERT_MEM_EQ(pre, b, 2);
    ASSERT_EQ(iwarp_sctp_ssn_peek(b, n), 0x0102);

    n = hex("FFFF | 41 43 00000000 00000000 00000001 00000000", b);
    ASSERT_EQ(n, 20);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, n, 18, &s), 20);
    ASSERT_EQ(s.ssn, 0xFFFF);
    ASSERT_EQ(s.len, 18);
    ASSERT_EQ(iwarp_sctp_ssn_peek(b, n), 0xFFFF);
}

TEST(segment_errors)
{
    uint8_t b[64] = {0x00, 0x05, 0x80};
    struct iwarp_sctp_seg s;
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 0, 0, &s), IWARP_ERR_SHORT);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 1, 0, &s), IWARP_ERR_SHORT);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2, 0, &s), IWARP_ERR_DDP_HDR_LEN);
    /* Tagged: 14 octets of header at least; untagged: 18 (RFC 5041 §4.2, §4.3). */
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2 + 13, 0, &s), IWARP_ERR_DDP_HDR_LEN);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2 + 14, 0, &s), 16);
    b[2] = 0x41;
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2 + 17, 0, &s), IWARP_ERR_DDP_HDR_LEN);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2 + 18, 0, &s), 20);
    /* RFC 5043 §9: larger than the maximum -> rejected; the limit itself is fine. */
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2 + 30, 29, &s), IWARP_ERR_SCTP_MSGSIZE);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2 + 30, 30, &s), 32);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 2 + 3, 2, &s), IWARP_ERR_SCTP_MSGSIZE);
    ASSERT_EQ(iwarp_sctp_seg_decode(NULL, 5, 0, &s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sctp_seg_decode(b, 5, 0, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sctp_ssn_encode(b, 1, 3), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_sctp_ssn_encode(NULL, 2, 3), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sctp_ssn_peek(b, 1), IWARP_ERR_SHORT);
    ASSERT_EQ(iwarp_sctp_ssn_peek(NULL, 2), IWARP_ERR_INVAL);
}

TEST(chunk_kind)
{
    /* §5.2: PPID 16 and 17; §10: U=1 on every chunk. */
    ASSERT_EQ(iwarp_sctp_chunk_kind(16, true), IWARP_SCTP_PPID_DDP_SEGMENT);
    ASSERT_EQ(iwarp_sctp_chunk_kind(17, true), IWARP_SCTP_PPID_DDP_CONTROL);
    ASSERT_EQ(iwarp_sctp_chunk_kind(16, false), IWARP_ERR_SCTP_PPID);
    ASSERT_EQ(iwarp_sctp_chunk_kind(17, false), IWARP_ERR_SCTP_PPID);
    static const uint32_t bad[] = {0, 15, 18, 0x10000000, 0x11000000, 0xFFFFFFFF};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ASSERT_EQ(iwarp_sctp_chunk_kind(bad[i], true), IWARP_ERR_SCTP_PPID);
}

TEST(adaptation_and_streams)
{
    /* §5.1, §11.1: NONE or ANY-OTHER means no DDP. */
    ASSERT_EQ(iwarp_sctp_adaptation_check(true, 0x00000001), 0);
    ASSERT_EQ(iwarp_sctp_adaptation_check(false, 0x00000001), IWARP_ERR_SCTP_ADAPTATION);
    ASSERT_EQ(iwarp_sctp_adaptation_check(true, 0), IWARP_ERR_SCTP_ADAPTATION);
    ASSERT_EQ(iwarp_sctp_adaptation_check(true, 2), IWARP_ERR_SCTP_ADAPTATION);
    ASSERT_EQ(iwarp_sctp_adaptation_check(true, 0x01000000), IWARP_ERR_SCTP_ADAPTATION);
    /* §8: equal inbound and outbound counts. */
    ASSERT_EQ(iwarp_sctp_streams_check(10, 10), 0);
    ASSERT_EQ(iwarp_sctp_streams_check(1, 1), 0);
    ASSERT_EQ(iwarp_sctp_streams_check(10, 11), IWARP_ERR_SCTP_STREAMS);
    ASSERT_EQ(iwarp_sctp_streams_check(11, 10), IWARP_ERR_SCTP_STREAMS);
    ASSERT_EQ(iwarp_sctp_streams_check(0, 0), IWARP_ERR_SCTP_STREAMS);
}

TEST(round_trip_seeded)
{
    uint32_t seed = 0x5C7Au;
    static uint8_t pd[512], buf[600];
    for (int i = 0; i < 20000; i++) {
        uint32_t r = harness_xorshift32(&seed);
        struct iwarp_sctp_ctl c = {.ssn = (uint16_t)r, .fc = (uint16_t)(1 + (r >> 16) % 8)};
        if (c.fc == 8)
            c.fc = IWARP_SCTP_FC_EXPERIMENTAL;
        bool word = iwarp_sctp_fc_has_ird_ord(c.fc);
        uint32_t w = harness_xorshift32(&seed);
        c.ird_ord.ird = (uint16_t)(w & 0x3FFF);
        c.ird_ord.ord = (uint16_t)((w >> 14) & 0x3FFF);
        c.ird_ord.p2p = (w >> 28) & 1;
        c.ird_ord.rtr = c.ird_ord.p2p ? (uint8_t)((w >> 29) & 7) : 0;
        if (c.fc != IWARP_SCTP_FC_TERMINATE)
            c.pd_len = (uint16_t)(harness_xorshift32(&seed) % (word ? 509u : 513u));
        for (uint16_t k = 0; k < c.pd_len; k++)
            pd[k] = (uint8_t)harness_xorshift32(&seed);
        c.pd = pd;
        iwarp_ssize n = iwarp_sctp_ctl_encode(buf, sizeof buf, &c);
        ASSERT_EQ(n, 4 + (word ? 4 : 0) + c.pd_len);
        struct iwarp_sctp_ctl d;
        ASSERT_EQ(iwarp_sctp_ctl_decode(buf, (size_t)n, &d), n);
        ASSERT_EQ(d.ssn, c.ssn);
        ASSERT_EQ(d.fc, c.fc);
        ASSERT_EQ(d.pd_len, c.pd_len);
        ASSERT_MEM_EQ(d.pd, pd, c.pd_len);
        if (word) {
            ASSERT_EQ(d.ird_ord.ird, c.ird_ord.ird);
            ASSERT_EQ(d.ird_ord.ord, c.ird_ord.ord);
            ASSERT_EQ(d.ird_ord.p2p, c.ird_ord.p2p);
            ASSERT_EQ(d.ird_ord.rtr, c.ird_ord.rtr);
        }
    }
}
