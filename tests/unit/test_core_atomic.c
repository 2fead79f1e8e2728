/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RFC 7306 §5.1 on local memory: the masked FetchAdd against the RFC's own bit-by-bit
 * pseudocode (§5.1.1, transcribed literally below), CmpSwap against §5.1.2's, and the
 * unmasked forms the verbs opcodes use.
 */
#include "core/core_atomic.h"
#include "harness.h"

/* RFC 7306 §5.1.1, the pseudocode as printed. */
static uint64_t rfc_masked_fetch_add(uint64_t orig, uint64_t add, uint64_t add_mask)
{
    uint64_t bit_location = 1, carry = 0, remote = 0;
    for (int bit = 0; bit <= 63; bit++) {
        if (bit != 0)
            bit_location = bit_location << 1;
        uint64_t val1 = (orig & bit_location) >> bit;
        uint64_t val2 = (add & bit_location) >> bit;
        uint64_t sum = carry + val1 + val2;
        carry = (sum & 2) >> 1;
        sum = sum & 1;
        if (sum)
            remote |= bit_location;
        carry = ((carry) && (!(add_mask & bit_location)));
    }
    return remote;
}

/* RFC 7306 §5.1.2, the pseudocode as printed. */
static uint64_t rfc_masked_cmp_swap(uint64_t orig, uint64_t compare, uint64_t compare_mask,
                                    uint64_t swap, uint64_t swap_mask)
{
    if (!((compare ^ orig) & compare_mask))
        return (orig & ~(swap_mask)) | (swap & swap_mask);
    return orig;
}

static uint32_t seed = 0x7306u;

static uint64_t rand64(void)
{
    uint64_t hi = harness_xorshift32(&seed);
    return hi << 32 | harness_xorshift32(&seed);
}

/* Random operands with some structure: fields of equal width, all-ones fields, carries. */
static uint64_t rand_operand(void)
{
    switch (harness_xorshift32(&seed) % 4) {
    case 0:
        return rand64();
    case 1:
        return UINT64_MAX;
    case 2:
        return 0x7F7F7F7F7F7F7F7Fu ^ (rand64() & 0x0101010101010101u);
    default:
        return rand64() & rand64();
    }
}

TEST(masked_add_equals_the_rfc_pseudocode)
{
    static const uint64_t masks[] = {0,
                                     0x8000000000000000u,
                                     0x8080808080808080u,
                                     0x8000800080008000u,
                                     0x8000000080000000u,
                                     0xFFFFFFFFFFFFFFFFu,
                                     0x0000000100000001u};
    for (int i = 0; i < 20000; i++) {
        uint64_t a = rand_operand(), b = rand_operand();
        uint64_t m = i % 2 ? masks[(unsigned)i / 2 % (sizeof masks / sizeof masks[0])] : rand64();
        uint64_t want = rfc_masked_fetch_add(a, b, m);
        if (iwarp_core_atomic_masked_add(a, b, m) != want)
            harness_fail(__FILE__, __LINE__, "masked add %016llx + %016llx mask %016llx",
                         (unsigned long long)a, (unsigned long long)b, (unsigned long long)m);
        uint64_t word = a;
        ASSERT_EQ_U(iwarp_core_atomic_fetch_add(&word, b, m), a); /* the original comes back */
        ASSERT_EQ_U(word, want);
    }
    /* Add Mask 0 is the plain 64-bit addition, wrapping */
    ASSERT_EQ_U(iwarp_core_atomic_masked_add(UINT64_MAX, 2, 0), 1);
    /* every bit a field of one: XOR */
    ASSERT_EQ_U(iwarp_core_atomic_masked_add(0xF0F0u, 0xFF00u, UINT64_MAX), 0x0FF0u);
}

TEST(cmp_swap_equals_the_rfc_pseudocode)
{
    for (int i = 0; i < 20000; i++) {
        uint64_t orig = rand_operand(), swap = rand64(), swap_mask = rand_operand();
        uint64_t compare_mask = rand_operand();
        /* half the comparisons match under the mask */
        uint64_t compare = i % 2 ? orig ^ (rand64() & ~compare_mask) : rand64();
        uint64_t word = orig;
        ASSERT_EQ_U(iwarp_core_atomic_cmp_swap(&word, compare, compare_mask, swap, swap_mask),
                    orig);
        ASSERT_EQ_U(word, rfc_masked_cmp_swap(orig, compare, compare_mask, swap, swap_mask));
    }
    /* the verbs form: all-ones masks */
    uint64_t word = 5;
    ASSERT_EQ_U(iwarp_core_atomic_cmp_swap(&word, 5, UINT64_MAX, 9, UINT64_MAX), 5);
    ASSERT_EQ_U(word, 9);
    ASSERT_EQ_U(iwarp_core_atomic_cmp_swap(&word, 5, UINT64_MAX, 1, UINT64_MAX), 9);
    ASSERT_EQ_U(word, 9);
}
