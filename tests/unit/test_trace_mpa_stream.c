/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace/trace_mpa_stream: the judge of one captured MPA connection (what `iwarp dump` runs), on
 * hand-built streams. Covered here: an FPDU cut by the receiver's reset (listed, not an error)
 * against one the sender cut itself; RFC 6581 §9.2's TERM 2/0/0x07 in place of the RTR; the
 * framing after bad CRCs (doubt, loss, a byte-swapped CRC that keeps it) and what a loss does to
 * the other direction's Read Responses.
 */
#include <string.h>

#include "harness.h"
#include "trace/trace_mpa_stream.h"
#include "util/bytes.h"
#include "util/crc32c.h"

#define MAX_SEEN 32

/* What the callbacks saw. */
struct seen {
    unsigned npdu, nfind;
    struct iwarp_mpa_stream_pdu pdu[MAX_SEEN]; /* pointers inside are stale after the call */
    struct {
        enum iwarp_mpa_stream_class cls;
        bool error;
        unsigned side;
        uint64_t index;
    } find[MAX_SEEN];
};

static void on_pdu(void *ctx, const struct iwarp_mpa_stream_pdu *p)
{
    struct seen *s = ctx;
    if (s->npdu < MAX_SEEN)
        s->pdu[s->npdu++] = *p;
}

static void on_finding(void *ctx, const struct iwarp_mpa_stream_finding *f)
{
    struct seen *s = ctx;
    if (s->nfind < MAX_SEEN) {
        s->find[s->nfind].cls = f->cls;
        s->find[s->nfind].error = f->error;
        s->find[s->nfind].side = f->side;
        s->find[s->nfind].index = f->index;
        s->nfind++;
    }
}

static const struct iwarp_mpa_stream_ops ops = {.pdu = on_pdu, .finding = on_finding};

/* Errors (warnings with error false) of one category. */
static unsigned count(const struct seen *s, enum iwarp_mpa_stream_class cls, bool error)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->nfind; i++)
        n += s->find[i].cls == cls && s->find[i].error == error;
    return n;
}

static unsigned errors(const struct seen *s)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->nfind; i++)
        n += s->find[i].error;
    return n;
}

/* ---- building the octets (RFC 5044 §7.1.1 frames, §4.1 FPDUs; RFC 5041 §4 headers) ---- */

enum { INIT = 0, RESP = 1 }; /* sides: the initiator speaks first */

#define MPA_C 0x40u
#define MPA_S 0x10u

/* An MPA Request or Reply with flags, Rev and the RFC 6581 word (ird_word/ord_word: the two
 * half-words with A/B and C/D, used when S is set). */
static size_t mpa_frame(uint8_t *b, bool reply, uint8_t flags, uint16_t ird_word, uint16_t ord_word)
{
    memcpy(b, reply ? "MPA ID Rep Frame" : "MPA ID Req Frame", 16);
    b[16] = flags;
    b[17] = flags & MPA_S ? 2 : 1;
    uint16_t pdl = flags & MPA_S ? 4u : 0u;
    iwarp_store_be16(b + 18, pdl);
    if (pdl) {
        iwarp_store_be16(b + 20, ird_word);
        iwarp_store_be16(b + 22, ord_word);
    }
    return 20u + pdl;
}

enum crc_kind { CRC_RIGHT, CRC_WRONG, CRC_SWAPPED };

/* An FPDU around ulpdu[0..len): ULPDU_Length, ULPDU, zero PAD, CRC32C (least-significant octet
 * first when right, RFC 5044 §4.4). */
static size_t fpdu(uint8_t *b, const uint8_t *ulpdu, size_t len, enum crc_kind crc)
{
    iwarp_store_be16(b, (uint16_t)len);
    memcpy(b + 2, ulpdu, len);
    size_t n = 2 + len;
    while (n % 4)
        b[n++] = 0;
    uint32_t c = iwarp_crc32c(b, n);
    if (crc == CRC_WRONG)
        c ^= 0x5a5a5a5au;
    if (crc == CRC_SWAPPED)
        iwarp_store_be32(b + n, c);
    else
        iwarp_store_le32(b + n, c);
    return n + 4;
}

/* An untagged DDP segment (RFC 5041 §4.3) with RDMAP opcode op, QN/MSN, L=1, payload octets
 * of value 0x11 (or body[0..payload) when body is given). */
static size_t untagged(uint8_t *b, unsigned op, uint32_t qn, uint32_t msn, const uint8_t *body,
                       size_t payload)
{
    b[0] = 0x41; /* T=0 L=1 DV=1 */
    b[1] = (uint8_t)(0x40u | op);
    memset(b + 2, 0, 4);
    iwarp_store_be32(b + 6, qn);
    iwarp_store_be32(b + 10, msn);
    iwarp_store_be32(b + 14, 0);
    if (body)
        memcpy(b + 18, body, payload);
    else
        memset(b + 18, 0x11, payload);
    return 18 + payload;
}

/* A tagged DDP segment (RFC 5041 §4.2): RDMAP opcode op at STag/TO, L=1. */
static size_t tagged(uint8_t *b, unsigned op, uint32_t stag, uint64_t to, size_t payload)
{
    b[0] = 0xc1; /* T=1 L=1 DV=1 */
    b[1] = (uint8_t)(0x40u | op);
    iwarp_store_be32(b + 2, stag);
    iwarp_store_be64(b + 6, to);
    memset(b + 14, 0x22, payload);
    return 14 + payload;
}

struct conn {
    struct iwarp_mpa_stream ms;
    struct seen seen;
    uint64_t tag;
};

static void feed(struct conn *c, unsigned side, const uint8_t *p, size_t n)
{
    iwarp_mpa_stream_feed(&c->ms, side, p, n, ++c->tag);
}

/* Request and Reply with CRCs, Rev 1. */
static void start(struct conn *c)
{
    memset(c, 0, sizeof *c);
    struct iwarp_mpa_stream_cfg cfg = {0};
    iwarp_mpa_stream_init(&c->ms, &cfg, &ops, &c->seen);
    uint8_t b[64];
    feed(c, INIT, b, mpa_frame(b, false, MPA_C, 0, 0));
    feed(c, RESP, b, mpa_frame(b, true, MPA_C, 0, 0));
}

/* A Send FPDU of payload octets from side, MSN msn. */
static size_t send_fpdu(uint8_t *b, uint32_t msn, size_t payload, enum crc_kind crc)
{
    uint8_t seg[256];
    return fpdu(b, seg, untagged(seg, 0x3, 0, msn, NULL, payload), crc);
}

/* ---- an FPDU cut short at the end of the capture ---- */

/* The initiator's first Send whole, then the first 30 octets of a 100-octet Send. */
static void cut_stream(struct conn *c, uint8_t dv)
{
    start(c);
    uint8_t b[256];
    feed(c, INIT, b, send_fpdu(b, 1, 20, CRC_RIGHT));
    size_t n = send_fpdu(b, 2, 100, CRC_RIGHT);
    b[2] = (uint8_t)((b[2] & ~IWARP_DDP_MASK_DV) | dv);
    ASSERT_TRUE(n > 30);
    feed(c, INIT, b, 30);
}

TEST(fpdu_cut_by_the_receivers_reset_is_listed_not_an_error)
{
    struct conn c;
    cut_stream(&c, 1);
    iwarp_mpa_stream_reset(&c.ms, RESP);
    iwarp_mpa_stream_finish(&c.ms);
    ASSERT_EQ(errors(&c.seen), 0);
    const struct iwarp_mpa_stream_pdu *last = &c.seen.pdu[c.seen.npdu - 1];
    ASSERT_EQ(last->kind, IWARP_MS_PDU_CUT);
    ASSERT_EQ(last->side, INIT);
    ASSERT_EQ_U(last->cut_octets, 30u);
    ASSERT_TRUE(last->cut_len_known);
    ASSERT_EQ_U(last->ulpdu_len, 118u);
}

TEST(fpdu_cut_by_the_senders_own_reset_is_undissected)
{
    struct conn c;
    cut_stream(&c, 1);
    iwarp_mpa_stream_reset(&c.ms, INIT);
    iwarp_mpa_stream_finish(&c.ms);
    ASSERT_EQ(count(&c.seen, IWARP_MS_UNDISSECTED, true), 1);
    ASSERT_EQ(c.seen.pdu[c.seen.npdu - 1].kind, IWARP_MS_PDU_FPDU);
}

TEST(a_cut_fpdu_with_an_implausible_header_is_undissected_despite_the_reset)
{
    struct conn c;
    cut_stream(&c, 2); /* RFC 5041 §4.1: DV must be 1 */
    iwarp_mpa_stream_reset(&c.ms, RESP);
    iwarp_mpa_stream_finish(&c.ms);
    ASSERT_EQ(count(&c.seen, IWARP_MS_UNDISSECTED, true), 1);
}

/* ---- RFC 6581 §9.2: TERM 2/0/0x07 instead of an RTR ---- */

#define V2_A 0x8000u
#define V2_B 0x4000u /* Send RTR, in the IRD half-word */
#define V2_C 0x8000u /* Write RTR, in the ORD half-word */

/* Peer-to-peer: the Request lists req_b/req_c, the Reply offers Write only; then the
 * initiator's first FPDU is a Terminate 2/0/0x07. */
static void rtr_term(struct conn *c, uint16_t req_ird, uint16_t req_ord)
{
    memset(c, 0, sizeof *c);
    struct iwarp_mpa_stream_cfg cfg = {0};
    iwarp_mpa_stream_init(&c->ms, &cfg, &ops, &c->seen);
    uint8_t b[128], term[8] = {0x20, 0x07, 0, 0}; /* RFC 5040 §4.8: layer 2, EType 0, code 7 */
    feed(c, INIT, b,
         mpa_frame(b, false, MPA_C | MPA_S, (uint16_t)(V2_A | req_ird | 4), req_ord | 4));
    feed(c, RESP, b, mpa_frame(b, true, MPA_C | MPA_S, V2_A | 4, V2_C | 4));
    uint8_t seg[64];
    feed(c, INIT, b, fpdu(b, seg, untagged(seg, 0x7, 2, 1, term, 4), CRC_RIGHT));
    iwarp_mpa_stream_finish(&c->ms);
}

TEST(term_no_matching_rtr_is_right_when_the_reply_offers_nothing_the_request_listed)
{
    struct conn c;
    rtr_term(&c, V2_B, 0); /* Request: Send RTR only; Reply: Write only */
    ASSERT_EQ(errors(&c.seen), 0);
    ASSERT_EQ(c.seen.npdu, 3);
}

TEST(term_no_matching_rtr_is_wrong_when_an_offered_type_was_listed)
{
    struct conn c;
    rtr_term(&c, V2_B, V2_C); /* Request: Send and Write; Reply: Write */
    ASSERT_EQ(count(&c.seen, IWARP_MS_RTR, true), 1);
    ASSERT_EQ(errors(&c.seen), 1);
}

/* ---- framing after bad CRCs (RFC 5044 §4.4, §8) ---- */

TEST(a_second_bad_crc_in_a_row_is_listed_in_doubt_and_a_good_one_ends_the_doubt)
{
    struct conn c;
    start(&c);
    uint8_t b[256];
    feed(&c, INIT, b, send_fpdu(b, 1, 20, CRC_WRONG));
    feed(&c, INIT, b, send_fpdu(b, 2, 20, CRC_WRONG));
    feed(&c, INIT, b, send_fpdu(b, 3, 20, CRC_RIGHT));
    iwarp_mpa_stream_finish(&c.ms);
    ASSERT_EQ(c.seen.npdu, 5);
    ASSERT_FALSE(c.seen.pdu[2].in_doubt);
    ASSERT_TRUE(c.seen.pdu[2].has_ddp);
    ASSERT_TRUE(c.seen.pdu[3].in_doubt);
    ASSERT_FALSE(c.seen.pdu[3].has_ddp);
    ASSERT_FALSE(c.seen.pdu[4].in_doubt);
    ASSERT_EQ(c.seen.pdu[4].crc, IWARP_MS_CRC_GOOD);
    ASSERT_EQ(count(&c.seen, IWARP_MS_BAD_CRC, true), 2);
    /* MSN 3 follows MSN 1 in what was judged: the FPDU in doubt was not decoded */
    ASSERT_EQ(count(&c.seen, IWARP_MS_MSN, true), 1);
    ASSERT_EQ(errors(&c.seen), 3);
}

/* The initiator's n Sends (MSN 1..n), every one with a CRC of kind crc, then the end. */
static void sends_with(struct conn *c, uint32_t n, enum crc_kind crc)
{
    start(c);
    uint8_t b[256];
    for (uint32_t m = 1; m <= n; m++)
        feed(c, INIT, b, send_fpdu(b, m, 20, crc));
    iwarp_mpa_stream_finish(&c->ms);
}

TEST(three_bad_crcs_in_a_row_lose_the_framing_once)
{
    struct conn c;
    sends_with(&c, 5, CRC_WRONG);
    ASSERT_EQ(c.seen.npdu, 5); /* frames, then three FPDUs: nothing after the loss */
    ASSERT_EQ(count(&c.seen, IWARP_MS_BAD_CRC, true), 3);
    ASSERT_EQ(count(&c.seen, IWARP_MS_UNDISSECTED, true), 1);
    ASSERT_EQ(errors(&c.seen), 4);
}

TEST(byte_swapped_crcs_keep_the_framing)
{
    struct conn c;
    sends_with(&c, 4, CRC_SWAPPED);
    ASSERT_EQ(c.seen.npdu, 6);
    for (unsigned i = 2; i < 6; i++) {
        const struct iwarp_mpa_stream_pdu *p = &c.seen.pdu[i];
        ASSERT_TRUE(p->crc_swapped);
        ASSERT_FALSE(p->in_doubt);
        uint8_t field[4], want[4];
        iwarp_store_le32(field, p->crc_field);
        iwarp_store_be32(want, p->crc_want); /* the value's octets, most significant first */
        ASSERT_MEM_EQ(field, want, 4);
    }
    ASSERT_EQ(count(&c.seen, IWARP_MS_BAD_CRC, true), 4);
    ASSERT_EQ(errors(&c.seen), 4);
}

/* A ULPDU_Length of 0 at the next FPDU's position, after an FPDU that passed (a [length] error)
 * or failed (the framing is lost) its CRC. */
static void zero_length_after(struct conn *c, enum crc_kind before)
{
    start(c);
    uint8_t b[256];
    size_t n = send_fpdu(b, 1, 20, before);
    memset(b + n, 0, 8);
    feed(c, INIT, b, n + 8);
}

TEST(an_undelimitable_length_is_a_length_error_after_a_good_crc)
{
    struct conn c;
    zero_length_after(&c, CRC_RIGHT);
    iwarp_mpa_stream_finish(&c.ms);
    ASSERT_EQ(count(&c.seen, IWARP_MS_LENGTH, true), 1);
    ASSERT_EQ(errors(&c.seen), 1);
}

TEST(an_undelimitable_length_after_a_bad_crc_loses_the_framing)
{
    struct conn c;
    zero_length_after(&c, CRC_WRONG);
    iwarp_mpa_stream_finish(&c.ms);
    ASSERT_EQ(count(&c.seen, IWARP_MS_BAD_CRC, true), 1);
    ASSERT_EQ(count(&c.seen, IWARP_MS_UNDISSECTED, true), 1);
    ASSERT_EQ(errors(&c.seen), 2);
}

/* The responder sends a Read Response no Read Request in the capture asked for, after the
 * initiator's framing was lost (lose) or after a good Send. */
static void read_response_after(struct conn *c, bool lose)
{
    uint8_t b[256], seg[128];
    if (lose) {
        zero_length_after(c, CRC_WRONG);
    } else {
        start(c);
        feed(c, INIT, b, send_fpdu(b, 1, 8, CRC_RIGHT));
    }
    feed(c, RESP, b, fpdu(b, seg, tagged(seg, 0x2, 0xbeef02, 0x2000, 64), CRC_RIGHT));
    iwarp_mpa_stream_finish(&c->ms);
}

TEST(read_responses_are_not_judged_once_the_requesters_framing_is_lost)
{
    struct conn c;
    read_response_after(&c, true);
    ASSERT_EQ(count(&c.seen, IWARP_MS_READ_RESP, true), 0);
    ASSERT_EQ(count(&c.seen, IWARP_MS_READ_RESP, false), 1);
    read_response_after(&c, false); /* control: without the loss it is an error */
    ASSERT_EQ(count(&c.seen, IWARP_MS_READ_RESP, true), 1);
}
