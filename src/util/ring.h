/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Index arithmetic of the fixed-capacity rings (send, receive, completion and Read queues,
 * FPDU and event rings, byte pipes): a ring of cap slots keeps its entries from the slot at
 * head on, wrapping at cap.
 *
 *     slot = iwarp_ring_slot(head, count, cap);   the slot after the last entry (push)
 *     head = iwarp_ring_advance(head, 1, cap);    the oldest entry consumed (pop)
 *
 * The 32-bit forms add in 64 bits, so they are exact for every head and i (head + i may pass
 * 2^32); the size_t forms never overflow either. cap must not be 0.
 */
#ifndef IWARP_UTIL_RING_H
#define IWARP_UTIL_RING_H

#include <stddef.h>
#include <stdint.h>

/* The slot i places after slot head in a ring of cap slots: (head + i) mod cap. */
static inline uint32_t iwarp_ring_slot(uint32_t head, uint32_t i, uint32_t cap)
{
    return (uint32_t)(((uint64_t)head + i) % cap);
}

/* head moved on by n slots (n entries consumed from the front). */
static inline uint32_t iwarp_ring_advance(uint32_t head, uint32_t n, uint32_t cap)
{
    return iwarp_ring_slot(head, n, cap);
}

/* iwarp_ring_slot for rings indexed by size_t (byte pipes): (head + i) mod cap, computed
 * without the sum, which could wrap. */
static inline size_t iwarp_ring_slot_size(size_t head, size_t i, size_t cap)
{
    size_t h = head % cap, k = i % cap;
    return k < cap - h ? h + k : k - (cap - h);
}

/* iwarp_ring_advance for rings indexed by size_t. */
static inline size_t iwarp_ring_advance_size(size_t head, size_t n, size_t cap)
{
    return iwarp_ring_slot_size(head, n, cap);
}

#endif
