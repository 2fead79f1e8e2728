/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ring index arithmetic (util/ring.h): slots and advances inside the ring and across its end,
 * a ring of one slot, 32-bit sums past 2^32 and size_t values near SIZE_MAX, each checked
 * against (head + i) mod cap worked out by hand or in wider arithmetic.
 */
#include <stdint.h>

#include "harness.h"
#include "util/ring.h"

TEST(slot_inside_the_ring)
{
    ASSERT_EQ_U(iwarp_ring_slot(0, 0, 8), 0);
    ASSERT_EQ_U(iwarp_ring_slot(2, 3, 8), 5);
    ASSERT_EQ_U(iwarp_ring_slot(0, 7, 8), 7);
    ASSERT_EQ_U(iwarp_ring_slot_size(2, 3, 8), 5);
}

TEST(slot_wraps_at_the_end)
{
    ASSERT_EQ_U(iwarp_ring_slot(6, 2, 8), 0);
    ASSERT_EQ_U(iwarp_ring_slot(6, 5, 8), 3);
    ASSERT_EQ_U(iwarp_ring_slot(7, 8, 8), 7); /* a whole turn */
    ASSERT_EQ_U(iwarp_ring_slot(4, 13, 10), 7);
    ASSERT_EQ_U(iwarp_ring_slot_size(6, 5, 8), 3);
    ASSERT_EQ_U(iwarp_ring_slot_size(7, 8, 8), 7);
    ASSERT_EQ_U(iwarp_ring_slot_size(4, 13, 10), 7);
}

TEST(advance_moves_head_on_and_wraps)
{
    uint32_t head = 0;
    for (uint32_t k = 1; k <= 20; k++) {
        head = iwarp_ring_advance(head, 1, 7);
        ASSERT_EQ_U(head, k % 7);
    }
    ASSERT_EQ_U(iwarp_ring_advance(5, 0, 7), 5);
    ASSERT_EQ_U(iwarp_ring_advance(5, 4, 7), 2);
    size_t h = 0;
    for (size_t k = 1; k <= 20; k++) {
        h = iwarp_ring_advance_size(h, 3, 7);
        ASSERT_EQ_U(h, (3 * k) % 7);
    }
}

TEST(one_slot_ring_is_always_slot_0)
{
    ASSERT_EQ_U(iwarp_ring_slot(0, 0, 1), 0);
    ASSERT_EQ_U(iwarp_ring_slot(0, 1, 1), 0);
    ASSERT_EQ_U(iwarp_ring_slot(0, UINT32_MAX, 1), 0);
    ASSERT_EQ_U(iwarp_ring_advance(0, 1, 1), 0);
    ASSERT_EQ_U(iwarp_ring_slot_size(0, SIZE_MAX, 1), 0);
    ASSERT_EQ_U(iwarp_ring_advance_size(0, 1, 1), 0);
}

/* head + i above 2^32: a 32-bit sum would wrap and give the wrong slot. */
TEST(sums_past_2_to_the_32_are_exact)
{
    uint32_t cap = UINT32_MAX; /* 2^32 - 1 */
    /* (2^32 - 2) + 5 = 2^32 + 3 = cap + 4 -> 4 (a 32-bit sum: 3) */
    ASSERT_EQ_U(iwarp_ring_slot(UINT32_MAX - 1u, 5, cap), 4);
    /* cap 3000000000: (2999999999 + 2999999999) mod 3000000000 = 2999999998 */
    ASSERT_EQ_U(iwarp_ring_slot(2999999999u, 2999999999u, 3000000000u), 2999999998u);
    ASSERT_EQ_U(iwarp_ring_advance(2999999999u, 1, 3000000000u), 0);
    /* a small ring: (2^32 - 1) + (2^32 - 1) = 2^33 - 2 = 8589934590 -> 0 (a 32-bit sum,
     * 2^32 - 2 = 4294967294, would give 4) */
    ASSERT_EQ_U(iwarp_ring_slot(UINT32_MAX, UINT32_MAX, 10), 0);
}

/* The size_t forms never form head + i, which would wrap near SIZE_MAX. */
TEST(size_values_near_the_top_are_exact)
{
    size_t cap = SIZE_MAX; /* slots 0 .. SIZE_MAX - 1 */
    ASSERT_TRUE(iwarp_ring_slot_size(SIZE_MAX - 1, 5, cap) == 4);
    ASSERT_TRUE(iwarp_ring_slot_size(SIZE_MAX - 1, 1, cap) == 0);
    ASSERT_TRUE(iwarp_ring_slot_size(SIZE_MAX - 2, 1, cap) == SIZE_MAX - 1);
    /* (big - 1) + (big - 1) = SIZE_MAX + 17 would wrap; mod big it is big - 2 */
    size_t big = SIZE_MAX / 2 + 10;
    ASSERT_TRUE(iwarp_ring_slot_size(big - 1, big - 1, big) == big - 2);
    ASSERT_TRUE(iwarp_ring_advance_size(big - 1, 1, big) == 0);
    /* head and i beyond cap reduce first, as (head + i) mod cap does */
    ASSERT_TRUE(iwarp_ring_slot_size(25, 17, 10) == 2);
}

/* Against the plain formula wherever it cannot overflow: every head, i < 3 * cap, cap <= 9. */
TEST(matches_the_plain_formula_on_small_rings)
{
    for (uint32_t cap = 1; cap <= 9; cap++)
        for (uint32_t head = 0; head < 3 * cap; head++)
            for (uint32_t i = 0; i < 3 * cap; i++) {
                ASSERT_EQ_U(iwarp_ring_slot(head, i, cap), (head + i) % cap);
                ASSERT_EQ_U(iwarp_ring_slot_size(head, i, cap), (head + i) % cap);
            }
}
