/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The read-modify-write of RFC 7306 §5.1 on local memory: FetchAdd with its Add Mask (§5.1.1)
 * and CmpSwap with its Compare and Swap Masks (§5.1.2), on a naturally aligned 64-bit word in
 * the endianness of this host (§5.1.1: "performed in the endian format of the target memory").
 *
 * Atomicity (RFC 7306 §5.3, §5.4 rule 2): every update is one __atomic compare-and-swap (or
 * fetch-and-add) on the word with sequentially consistent ordering, so the atomic operations of
 * every QP, context and thread of the process that target the same word are serialised. A
 * local CPU access is atomic with them when it is itself an __atomic (or C11 atomic) access of
 * the whole word; a plain store is seen whole (an aligned 64-bit store is single-copy atomic on
 * the 64-bit targets libiwarp builds for), but a plain read-modify-write by the CPU can lose
 * an update against ours, as RFC 7306 §5.4 rule 2 allows.
 */
#ifndef IWARP_CORE_CORE_ATOMIC_H
#define IWARP_CORE_CORE_ATOMIC_H

#include <stdint.h>

/*
 * The masked addition of RFC 7306 §5.1.1's pseudocode: a + b computed separately in each
 * field of add_mask (a set bit is a field's most significant bit; the carry out of it is
 * dropped). add_mask 0: the plain 64-bit sum. Pure.
 */
uint64_t iwarp_core_atomic_masked_add(uint64_t a, uint64_t b, uint64_t add_mask);

/*
 * FetchAdd (RFC 7306 §5.1.1): atomically replace *word by
 * iwarp_core_atomic_masked_add(*word, add, add_mask).
 * word: 8-octet aligned, writable (the caller checked the STag and the alignment).
 * Returns the Original Remote Data Value.
 */
uint64_t iwarp_core_atomic_fetch_add(uint64_t *word, uint64_t add, uint64_t add_mask);

/*
 * CmpSwap (RFC 7306 §5.1.2): atomically, when (compare ^ *word) & compare_mask is 0, replace
 * *word by (*word & ~swap_mask) | (swap & swap_mask); else leave it.
 * word: as for iwarp_core_atomic_fetch_add.
 * Returns the Original Remote Data Value.
 */
uint64_t iwarp_core_atomic_cmp_swap(uint64_t *word, uint64_t compare, uint64_t compare_mask,
                                    uint64_t swap, uint64_t swap_mask);

#endif
