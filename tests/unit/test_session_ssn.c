/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP-SSN counter and reorder window (RFC 5043 §5.2.1, §6.1, §10): in order, gaps, duplicates
 * (held and already delivered), the window edge and the 32768 limit, 16-bit wrap-around, seeded
 * random permutations over several window sizes, drain/reset, the send counter's §10 bound. */
#include "harness.h"
#include "iwarp/errors.h"
#include "session/session_ssn.h"

static struct iwarp_sess_ssn_slot slots[32767];

static struct iwarp_sess_chunk h(uint32_t tag)
{
    return (struct iwarp_sess_chunk){.ptr = (void *)(uintptr_t)(tag + 1u), .len = tag};
}

static uint32_t tag_of(struct iwarp_sess_chunk c)
{
    ASSERT_EQ((uintptr_t)c.ptr, c.len + 1u);
    return (uint32_t)c.len;
}

static void mk(struct iwarp_sess_ssn_rx *rx, uint16_t cap)
{
    ASSERT_EQ(iwarp_sess_ssn_rx_init(rx, slots, cap), 0);
}

/* Moves an empty window's expected DDP-SSN to `to` by feeding chunks in order. */
static void advance_to(struct iwarp_sess_ssn_rx *rx, uint16_t to)
{
    while (iwarp_sess_ssn_rx_expected(rx) != to)
        ASSERT_EQ(iwarp_sess_ssn_rx_accept(rx, iwarp_sess_ssn_rx_expected(rx), h(0)),
                  IWARP_SESS_SSN_IN_ORDER);
}

TEST(tx_counter_starts_at_zero_and_wraps)
{
    struct iwarp_sess_ssn_tx tx;
    iwarp_sess_ssn_tx_init(&tx);
    /* RFC 5043 §6.1: 0 at the session start; §5.2.1: +1 per chunk, wrapping like the SSN. */
    for (uint32_t i = 0; i < 70000; i++) {
        ASSERT_EQ(iwarp_sess_ssn_tx_peek(&tx), (uint16_t)i);
        ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), (int)(uint16_t)i);
        iwarp_sess_ssn_tx_acked(&tx, 1);
    }
    iwarp_sess_ssn_tx_init(&tx);
    ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), 0);
}

TEST(tx_counter_limits_unacked)
{
    /* RFC 5043 §10: no more than 32767 chunks of a stream without acknowledgment. */
    struct iwarp_sess_ssn_tx tx;
    iwarp_sess_ssn_tx_init(&tx);
    for (int i = 0; i < 32767; i++)
        ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), i);
    ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), IWARP_ERR_BUSY);
    ASSERT_EQ(iwarp_sess_ssn_tx_peek(&tx), 32767); /* nothing consumed */
    iwarp_sess_ssn_tx_acked(&tx, 2);
    ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), 32767);
    ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), 32768);
    ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), IWARP_ERR_BUSY);
    iwarp_sess_ssn_tx_acked(&tx, 1000000); /* clamped */
    for (int i = 0; i < 32767; i++)
        ASSERT_TRUE(iwarp_sess_ssn_tx_take(&tx) >= 0);
    ASSERT_EQ(iwarp_sess_ssn_tx_take(&tx), IWARP_ERR_BUSY);
}

TEST(rx_init_args)
{
    struct iwarp_sess_ssn_rx rx;
    ASSERT_EQ(iwarp_sess_ssn_rx_init(NULL, slots, 4), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sess_ssn_rx_init(&rx, NULL, 4), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sess_ssn_rx_init(&rx, slots, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sess_ssn_rx_init(&rx, slots, 32768), IWARP_ERR_INVAL); /* §10 */
    ASSERT_EQ(iwarp_sess_ssn_rx_init(&rx, slots, 32767), 0);
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), 0);
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 0);
}

TEST(rx_in_order)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 4);
    struct iwarp_sess_chunk c;
    for (uint16_t s = 0; s < 100; s++) {
        ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, s, h(s)), IWARP_SESS_SSN_IN_ORDER);
        ASSERT_FALSE(iwarp_sess_ssn_rx_next(&rx, &c));
    }
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), 100);
}

TEST(rx_gap_waits_then_releases_in_order)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 8);
    struct iwarp_sess_chunk c;
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 3, h(3)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 1, h(1)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 2);
    ASSERT_FALSE(iwarp_sess_ssn_rx_next(&rx, &c)); /* 0 missing: the gap waits */
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 0, h(0)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 1);
    ASSERT_FALSE(iwarp_sess_ssn_rx_next(&rx, &c)); /* 2 missing */
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), 2);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 2, h(2)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 3);
    ASSERT_FALSE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 0);
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), 4);
}

TEST(rx_duplicates)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 8);
    struct iwarp_sess_chunk c;
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 0, h(0)), IWARP_SESS_SSN_IN_ORDER);
    /* Older than expected: already handed over (§6.1: no repeats). */
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 0), IWARP_SESS_SSN_DUP_OLD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 0, h(99)), IWARP_ERR_SCTP_SSN);
    /* Same DDP-SSN as a held one: the first stays. */
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 3, h(3)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 3), IWARP_SESS_SSN_DUP_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 3, h(98)), IWARP_ERR_SCTP_SSN);
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 1);
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), 1);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 1, h(1)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 2, h(2)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 3);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 3, h(97)), IWARP_ERR_SCTP_SSN);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 65535, h(96)), IWARP_ERR_SCTP_SSN);
}

TEST(rx_window_edge_and_32768)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 8);
    struct iwarp_sess_chunk c;
    /* Exactly cap ahead is held; one more is beyond the window. */
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 8), IWARP_SESS_SSN_AHEAD);
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 9), IWARP_SESS_SSN_TOO_FAR);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 9, h(9)), IWARP_ERR_SCTP_SSN);
    /* §10: 32767 ahead is "ahead" (too far here); 32768 and more read as old duplicates. */
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 32767), IWARP_SESS_SSN_TOO_FAR);
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 32768), IWARP_SESS_SSN_DUP_OLD);
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 65535), IWARP_SESS_SSN_DUP_OLD);
    /* Fill the whole window behind a gap: every slot is usable. */
    for (uint16_t s = 1; s <= 8; s++)
        ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, s, h(s)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 8);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 9, h(9)), IWARP_ERR_SCTP_SSN);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 0, h(0)), IWARP_SESS_SSN_IN_ORDER);
    /* 9 is cap ahead of the new expected 1, but shares the slot of 1, not yet popped. */
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, 9), IWARP_SESS_SSN_TOO_FAR);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 9, h(9)), IWARP_ERR_SCTP_SSN);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 1);
    /* Likewise 10 (cap ahead of 2, which is ready but not popped), until 2 is popped. */
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 10, h(10)), IWARP_ERR_SCTP_SSN);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 2);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 10, h(10)), IWARP_SESS_SSN_HELD);
    for (uint32_t s = 3; s <= 8; s++) {
        ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
        ASSERT_EQ(tag_of(c), s);
    }
    ASSERT_FALSE(iwarp_sess_ssn_rx_next(&rx, &c)); /* 9 missing */
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 9, h(9)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 10);
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 0);
}

TEST(rx_largest_window)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 32767);
    advance_to(&rx, 40000);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, (uint16_t)(40000 + 32767), h(1)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_classify(&rx, (uint16_t)(40000 + 32768)), IWARP_SESS_SSN_DUP_OLD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, (uint16_t)(40000 + 32768), h(2)), IWARP_ERR_SCTP_SSN);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 39999, h(3)), IWARP_ERR_SCTP_SSN);
}

TEST(rx_wrap_around)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 16);
    advance_to(&rx, 65530);
    /* 65530..65545 (wrapping to 9) in reverse: all held but the first, released in order. */
    for (uint32_t i = 15; i >= 1; i--)
        ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, (uint16_t)(65530 + i), h(i)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 65530, h(0)), IWARP_SESS_SSN_IN_ORDER);
    struct iwarp_sess_chunk c;
    for (uint32_t i = 1; i <= 15; i++) {
        ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
        ASSERT_EQ(tag_of(c), i);
    }
    ASSERT_FALSE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), 10);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 65535, h(0)), IWARP_ERR_SCTP_SSN); /* old */
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 9, h(0)), IWARP_ERR_SCTP_SSN);
}

/* Random permutations: blocks of up to cap + 1 consecutive DDP-SSNs shuffled (so every chunk is
 * at most cap ahead when it arrives), duplicates thrown in, starting before the 16-bit wrap.
 * Every chunk must come out exactly once, in order; every duplicate is refused and changes
 * nothing. */
static void permute_run(uint16_t cap, uint32_t seed, uint16_t start, uint32_t total)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, cap);
    advance_to(&rx, start);
    static uint32_t order[32768];
    uint32_t delivered = 0, dups = 0;
    struct iwarp_sess_chunk c;
    for (uint32_t base = 0; base < total;) {
        uint32_t blk = 1 + harness_xorshift32(&seed) % ((uint32_t)cap + 1u);
        if (blk > total - base)
            blk = total - base;
        for (uint32_t i = 0; i < blk; i++)
            order[i] = base + i;
        for (uint32_t i = blk - 1; i > 0; i--) { /* Fisher-Yates */
            uint32_t j = harness_xorshift32(&seed) % (i + 1);
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (uint32_t i = 0; i < blk; i++) {
            uint32_t k = order[i];
            int r = iwarp_sess_ssn_rx_accept(&rx, (uint16_t)(start + k), h(k));
            if (r == IWARP_SESS_SSN_IN_ORDER) {
                ASSERT_EQ(k, delivered);
                delivered++;
                while (iwarp_sess_ssn_rx_next(&rx, &c)) {
                    ASSERT_EQ(tag_of(c), delivered);
                    delivered++;
                }
            } else {
                ASSERT_EQ(r, IWARP_SESS_SSN_HELD);
            }
            if (harness_xorshift32(&seed) % 8 == 0) {
                /* Replay one already seen in this block (held or delivered). */
                uint32_t d = order[harness_xorshift32(&seed) % (i + 1)];
                uint16_t exp = iwarp_sess_ssn_rx_expected(&rx), held = iwarp_sess_ssn_rx_held(&rx);
                ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, (uint16_t)(start + d), h(70000)),
                          IWARP_ERR_SCTP_SSN);
                ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), exp);
                ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), held);
                dups++;
            }
        }
        base += blk;
        ASSERT_EQ(delivered, base);
        ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 0);
    }
    ASSERT_EQ(delivered, total);
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), (uint16_t)(start + total));
    ASSERT_TRUE(total < 100 || dups > 0);
}

TEST(rx_random_permutations)
{
    static const uint16_t caps[] = {1, 2, 3, 7, 16, 64, 1000, 32767};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        for (uint32_t s = 1; s <= 4; s++) {
            uint32_t seed = 0x9E3779B9u * s + caps[i];
            uint16_t start = (uint16_t)(65536u - 3000u * s); /* crosses the wrap */
            uint32_t total = caps[i] > 1000 ? 70000u : 8000u;
            permute_run(caps[i], seed, start, total);
        }
    }
}

TEST(rx_drain_and_reset)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 8);
    advance_to(&rx, 65534);
    struct iwarp_sess_chunk c;
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 3, h(3)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 0, h(0)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 65535, h(65535)), IWARP_SESS_SSN_HELD);
    /* A new session cannot start while the caller's buffers are still held. */
    ASSERT_EQ(iwarp_sess_ssn_rx_reset(&rx), IWARP_ERR_BUSY);
    /* Drain hands every held chunk back, ascending, skipping gaps (65534, 1, 2 missing). */
    ASSERT_TRUE(iwarp_sess_ssn_rx_drain(&rx, &c));
    ASSERT_EQ(tag_of(c), 65535);
    ASSERT_TRUE(iwarp_sess_ssn_rx_drain(&rx, &c));
    ASSERT_EQ(tag_of(c), 0);
    ASSERT_TRUE(iwarp_sess_ssn_rx_drain(&rx, &c));
    ASSERT_EQ(tag_of(c), 3);
    ASSERT_FALSE(iwarp_sess_ssn_rx_drain(&rx, &c));
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&rx), 0);
    /* RFC 5043 §6.1: the next session starts at DDP-SSN 0. */
    ASSERT_EQ(iwarp_sess_ssn_rx_reset(&rx), 0);
    ASSERT_EQ(iwarp_sess_ssn_rx_expected(&rx), 0);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 1, h(1)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 0, h(0)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 1);
    ASSERT_FALSE(iwarp_sess_ssn_rx_drain(&rx, &c));
}

TEST(rx_window_of_one)
{
    struct iwarp_sess_ssn_rx rx;
    mk(&rx, 1);
    struct iwarp_sess_chunk c;
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 1, h(1)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 2, h(2)), IWARP_ERR_SCTP_SSN);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 0, h(0)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 2, h(2)), IWARP_ERR_SCTP_SSN); /* 1 not popped */
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 1);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 3, h(3)), IWARP_SESS_SSN_HELD);
    ASSERT_EQ(iwarp_sess_ssn_rx_accept(&rx, 2, h(2)), IWARP_SESS_SSN_IN_ORDER);
    ASSERT_TRUE(iwarp_sess_ssn_rx_next(&rx, &c));
    ASSERT_EQ(tag_of(c), 3);
}
