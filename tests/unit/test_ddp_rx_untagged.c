/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP untagged receive validation (RFC 5041 §7.1): every Terminate cause with its exact value,
 * multi-segment messages, zero-length messages, MSN wrap, buffers posted late, misuse; a
 * message that consumes no buffer (iwarp_ddp_rx_uq_skip, the RFC 6581 Send RTR). */
#include "ddp/ddp_rx_untagged.h"
#include "harness.h"
#include "iwarp/errors.h"

#define CAP 4

static uint64_t lens[CAP];

static struct iwarp_ddp_rx_uq fresh(void)
{
    struct iwarp_ddp_rx_uq q;
    ASSERT_EQ(iwarp_ddp_rx_uq_init(&q, lens, CAP), 0);
    return q;
}

static struct iwarp_ddp_hdr seg(uint32_t msn, uint32_t mo, bool last)
{
    return (struct iwarp_ddp_hdr){.last = last, .dv = 1, .qn = 0, .msn = msn, .mo = mo};
}

/* Expects the segment to be rejected with 1/2/ecode and the state to be unchanged. */
static void expect_cause(struct iwarp_ddp_rx_uq *q, struct iwarp_ddp_hdr h, uint32_t len,
                         uint8_t ecode)
{
    struct iwarp_ddp_rx_uq before = *q;
    struct iwarp_term_cause c = {0xEE, 0xEE, 0xEE};
    struct iwarp_ddp_rx_place pl = {.offset = 77};
    ASSERT_EQ(iwarp_ddp_rx_uq_segment(q, &h, len, &pl, &c), IWARP_ERR_PROTO);
    ASSERT_EQ(c.layer, 1);
    ASSERT_EQ(c.etype, 2);
    ASSERT_EQ(c.ecode, ecode);
    ASSERT_EQ_U(pl.offset, 77u);
    ASSERT_EQ_U(q->head, before.head);
    ASSERT_EQ_U(q->posted, before.posted);
    ASSERT_EQ_U(q->msn, before.msn);
    ASSERT_EQ_U(q->received, before.received);
    ASSERT_EQ(q->last_received, before.last_received);
}

static void expect_ok(struct iwarp_ddp_rx_uq *q, struct iwarp_ddp_hdr h, uint32_t len,
                      uint64_t msg_len)
{
    struct iwarp_ddp_rx_place pl;
    ASSERT_EQ(iwarp_ddp_rx_uq_segment(q, &h, len, &pl, NULL), 0);
    ASSERT_EQ_U(pl.offset, h.mo);
    ASSERT_EQ(pl.last, h.last);
    ASSERT_EQ_U(pl.msg_len, msg_len);
}

TEST(init_state)
{
    struct iwarp_ddp_rx_uq q = fresh();
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 1u); /* RFC 5041 §4.3 */
    ASSERT_EQ_U(iwarp_ddp_rx_uq_posted(&q), 0u);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_received(&q), 0u);
    ASSERT_EQ(iwarp_ddp_rx_uq_init(NULL, lens, 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_uq_init(&q, NULL, 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_uq_init(&q, NULL, 0), 0);
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 10), IWARP_ERR_NOSPC); /* cap 0 */
}

/* The untagged header of wire-reference.md's zero-length Send, MSN 1 (RFC 5041 Figure 5):
 * ctrl 0x41 (L, DV 1), RDMAP 0x43 (RV 1, Send), RsvdULP 0, QN 0, MSN 1, MO 0. */
TEST(golden_zero_length_send)
{
    uint8_t b[18];
    ASSERT_EQ(harness_hex("4143 00000000 00000000 00000001 00000000", b, sizeof b), 18u);
    struct iwarp_ddp_hdr h;
    ASSERT_EQ(iwarp_ddp_hdr_decode(b, sizeof b, &h), 18);
    struct iwarp_ddp_rx_uq q = fresh();
    expect_cause(&q, h, 0, 0x02); /* a zero-length Send consumes a buffer (RFC 5040 §5.3) */
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 0), 0);
    expect_ok(&q, h, 0, 0);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 2u);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_posted(&q), 0u);
    /* The same segment again: MSN 1 is behind the expected 2. */
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 0), 0);
    expect_cause(&q, h, 0, 0x03);
}

TEST(cause_no_buffer_0x02)
{
    struct iwarp_ddp_rx_uq q = fresh();
    expect_cause(&q, seg(1, 0, true), 100, 0x02);
    expect_cause(&q, seg(1, 0, false), 1, 0x02);
}

TEST(cause_msn_range_0x03)
{
    struct iwarp_ddp_rx_uq q = fresh();
    expect_cause(&q, seg(2, 0, true), 10, 0x03); /* ahead, nothing posted */
    expect_cause(&q, seg(0, 0, true), 10, 0x03); /* behind */
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 100), 0);
    /* Ahead but inside the posted window [1, 3]: still 0x03 over an in-order LLP. */
    expect_cause(&q, seg(2, 0, true), 10, 0x03);
    expect_cause(&q, seg(3, 0, true), 10, 0x03);
    expect_cause(&q, seg(4, 0, true), 10, 0x03); /* past the window */
    expect_cause(&q, seg(0xFFFFFFFFu, 0, true), 10, 0x03);
    /* MSN is checked before MO and length. */
    expect_cause(&q, seg(2, 5, true), 1000, 0x03);
    /* A new message starting before the current one ended. */
    expect_ok(&q, seg(1, 0, false), 10, 0);
    expect_cause(&q, seg(2, 0, true), 10, 0x03);
    expect_ok(&q, seg(1, 10, true), 10, 20);
}

TEST(cause_invalid_mo_0x04)
{
    struct iwarp_ddp_rx_uq q = fresh();
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 100), 0);
    expect_cause(&q, seg(1, 1, true), 10, 0x04); /* first segment must be MO 0 */
    expect_ok(&q, seg(1, 0, false), 30, 0);
    expect_cause(&q, seg(1, 29, false), 10, 0x04); /* overlap */
    expect_cause(&q, seg(1, 31, false), 10, 0x04); /* gap */
    expect_cause(&q, seg(1, 0, false), 10, 0x04);  /* repeat */
    /* MO is checked before the length: a bad MO that would also overflow is 0x04. */
    expect_cause(&q, seg(1, 0xFFFFFFFFu, true), 0xFFFF, 0x04);
    expect_ok(&q, seg(1, 30, true), 70, 100);
}

TEST(cause_too_long_0x05)
{
    struct iwarp_ddp_rx_uq q = fresh();
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 100), 0);
    expect_cause(&q, seg(1, 0, true), 101, 0x05);  /* single segment one octet over */
    expect_cause(&q, seg(1, 0, false), 101, 0x05); /* L does not matter */
    expect_ok(&q, seg(1, 0, false), 60, 0);
    expect_cause(&q, seg(1, 60, true), 41, 0x05); /* second segment crosses the end */
    expect_ok(&q, seg(1, 60, false), 40, 0);      /* exactly full, not last */
    expect_cause(&q, seg(1, 100, true), 1, 0x05);
    expect_ok(&q, seg(1, 100, true), 0, 100); /* zero-length last segment at the end */
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    /* A zero-length buffer takes only a zero-length message. */
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 0), 0);
    expect_cause(&q, seg(2, 0, true), 1, 0x05);
}

TEST(multi_segment_messages)
{
    struct iwarp_ddp_rx_uq q = fresh();
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 4096), 0);
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 3000), 0);
    /* Message 1: 1500 + 1500 + 1000 = 4000 octets into a 4096-octet buffer. */
    expect_ok(&q, seg(1, 0, false), 1500, 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_received(&q), 1500u);
    expect_ok(&q, seg(1, 1500, false), 1500, 0);
    expect_ok(&q, seg(1, 3000, true), 1000, 4000);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_posted(&q), 1u);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_received(&q), 0u);
    /* Message 2 lands in the second buffer (3000): its own length applies, not 4096. */
    expect_ok(&q, seg(2, 0, false), 2000, 0);
    expect_cause(&q, seg(2, 2000, true), 1001, 0x05);
    expect_ok(&q, seg(2, 2000, true), 1000, 3000);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 3u);
    expect_cause(&q, seg(3, 0, true), 1, 0x02);
}

TEST(msn_wraps_to_zero)
{
    struct iwarp_ddp_rx_uq q = fresh();
    q.msn = 0xFFFFFFFEu; /* as after 2^32 - 3 messages */
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 8), 0);
    expect_ok(&q, seg(0xFFFFFFFEu, 0, true), 8, 8);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    expect_cause(&q, seg(0, 0, true), 8, 0x03);
    expect_ok(&q, seg(0xFFFFFFFFu, 0, true), 8, 8);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 0u); /* RFC 5041 §4.3: modulo 2^32 */
    expect_cause(&q, seg(0xFFFFFFFFu, 0, true), 8, 0x03);
    expect_cause(&q, seg(1, 0, true), 8, 0x03);
    expect_ok(&q, seg(0, 0, true), 8, 8);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 1u);
}

TEST(buffers_posted_late)
{
    struct iwarp_ddp_rx_uq q = fresh();
    /* No buffer: 0x02, and nothing changes, so the same segment passes once one is posted. */
    expect_cause(&q, seg(1, 0, false), 50, 0x02);
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 50), 0);
    expect_ok(&q, seg(1, 0, false), 50, 0);
    /* Posting more while a message is in progress does not change the current buffer. */
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 1000), 0);
    expect_cause(&q, seg(1, 50, true), 1, 0x05);
    expect_ok(&q, seg(1, 50, true), 0, 50);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    expect_ok(&q, seg(2, 0, true), 1000, 1000);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    expect_cause(&q, seg(3, 0, true), 0, 0x02);
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 0), 0);
    expect_ok(&q, seg(3, 0, true), 0, 0);
}

TEST(ring_wraps_and_fills)
{
    struct iwarp_ddp_rx_uq q = fresh();
    uint32_t msn = 1;
    for (uint32_t round = 0; round < 3 * CAP; round++) {
        while (iwarp_ddp_rx_uq_posted(&q) < CAP)
            ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 10u + iwarp_ddp_rx_uq_posted(&q)), 0);
        ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 1), IWARP_ERR_NOSPC);
        /* Head length is whatever was posted first among the outstanding ones. */
        expect_cause(&q, seg(msn, 0, true), 14, 0x05);
        expect_ok(&q, seg(msn, 0, true), 10, 10);
        ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
        msn++;
        /* Drain the rest so the next round refills from 10 again. */
        while (iwarp_ddp_rx_uq_posted(&q) > 0) {
            expect_ok(&q, seg(msn, 0, true), 0, 0);
            ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
            msn++;
        }
    }
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), msn);
}

TEST(misuse)
{
    struct iwarp_ddp_rx_uq q = fresh();
    struct iwarp_ddp_hdr h = seg(1, 0, true);
    struct iwarp_term_cause c = {0xEE, 0xEE, 0xEE};
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_ddp_rx_uq_post(NULL, 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_uq_segment(NULL, &h, 0, NULL, &c), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_uq_segment(&q, NULL, 0, NULL, &c), IWARP_ERR_INVAL);
    struct iwarp_ddp_hdr t = h;
    t.tagged = true;
    ASSERT_EQ(iwarp_ddp_rx_uq_segment(&q, &t, 0, NULL, &c), IWARP_ERR_INVAL);
    ASSERT_EQ(c.ecode, 0xEE);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(NULL), IWARP_ERR_INVAL);
    /* After the last segment, nothing more until complete. */
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 10), 0);
    ASSERT_EQ(iwarp_ddp_rx_uq_segment(&q, &h, 10, NULL, NULL), 0);
    struct iwarp_ddp_hdr more = seg(1, 10, false);
    ASSERT_EQ(iwarp_ddp_rx_uq_segment(&q, &more, 0, NULL, &c), IWARP_ERR_STATE);
    ASSERT_EQ(c.ecode, 0xEE);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), IWARP_ERR_STATE);
}

/* Expects iwarp_ddp_rx_uq_skip to refuse h with 1/2/ecode and leave q unchanged. */
static void expect_skip_cause(struct iwarp_ddp_rx_uq *q, struct iwarp_ddp_hdr h, uint8_t ecode)
{
    struct iwarp_ddp_rx_uq before = *q;
    struct iwarp_term_cause c = {0xEE, 0xEE, 0xEE};
    ASSERT_EQ(iwarp_ddp_rx_uq_skip(q, &h, 0, &c), IWARP_ERR_PROTO);
    ASSERT_EQ(c.layer, 1);
    ASSERT_EQ(c.etype, 2);
    ASSERT_EQ(c.ecode, ecode);
    ASSERT_EQ_U(q->head, before.head);
    ASSERT_EQ_U(q->posted, before.posted);
    ASSERT_EQ_U(q->msn, before.msn);
    ASSERT_EQ_U(q->received, before.received);
    ASSERT_EQ(q->last_received, before.last_received);
}

TEST(skip_takes_the_msn_and_no_buffer)
{
    struct iwarp_ddp_rx_uq q = fresh();
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 64), 0);
    /* RFC 5041 §7.1 check 5: only the expected MSN; check 3, §5.2: MO 0 and L. */
    expect_skip_cause(&q, seg(2, 0, true), IWARP_TERM_DDP_U_MSN_RANGE);
    expect_skip_cause(&q, seg(0, 0, true), IWARP_TERM_DDP_U_MSN_RANGE);
    expect_skip_cause(&q, seg(1, 4, true), IWARP_TERM_DDP_U_INVALID_MO);
    expect_skip_cause(&q, seg(1, 0, false), IWARP_TERM_DDP_U_INVALID_MO);
    struct iwarp_ddp_hdr h = seg(1, 0, true);
    ASSERT_EQ(iwarp_ddp_rx_uq_skip(&q, &h, 0, NULL), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 2u);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_posted(&q), 1u); /* the posted buffer is still there */
    /* The next message lands in that buffer with MSN 2. */
    expect_ok(&q, seg(2, 0, true), 10, 10);
    ASSERT_EQ(iwarp_ddp_rx_uq_complete(&q), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_posted(&q), 0u);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 3u);
}

TEST(skip_refused_while_a_message_is_in_progress_and_misuse)
{
    struct iwarp_ddp_rx_uq q = fresh();
    ASSERT_EQ(iwarp_ddp_rx_uq_post(&q, 64), 0);
    expect_ok(&q, seg(1, 0, false), 8, 0);
    expect_skip_cause(&q, seg(1, 0, true), IWARP_TERM_DDP_U_MSN_RANGE);
    expect_ok(&q, seg(1, 8, true), 8, 16);
    expect_skip_cause(&q, seg(1, 0, true), IWARP_TERM_DDP_U_MSN_RANGE); /* L taken, not done */
    struct iwarp_ddp_hdr h = seg(1, 0, true);
    ASSERT_EQ(iwarp_ddp_rx_uq_skip(&q, &h, 1, NULL), IWARP_ERR_INVAL); /* not zero-length */
    ASSERT_EQ(iwarp_ddp_rx_uq_skip(NULL, &h, 0, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_uq_skip(&q, NULL, 0, NULL), IWARP_ERR_INVAL);
    h.tagged = true;
    ASSERT_EQ(iwarp_ddp_rx_uq_skip(&q, &h, 0, NULL), IWARP_ERR_INVAL);
}

TEST(skip_wraps_the_msn)
{
    struct iwarp_ddp_rx_uq q = fresh();
    q.msn = 0xFFFFFFFFu;
    struct iwarp_ddp_hdr h = seg(0xFFFFFFFFu, 0, true);
    ASSERT_EQ(iwarp_ddp_rx_uq_skip(&q, &h, 0, NULL), 0);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&q), 0u); /* RFC 5041 §4.3: modulo 2^32 */
}
