/* SPDX-License-Identifier: BSD-2-Clause */
/* RFC 7306 §5.1 FetchAdd and CmpSwap on local memory (core_atomic.h). */
#include "core/core_atomic.h"

#include <stdbool.h>

uint64_t iwarp_core_atomic_masked_add(uint64_t a, uint64_t b, uint64_t add_mask)
{
    /* RFC 7306 §5.1.1: with the fields' top bits cleared no carry can leave a field; each top
     * bit is then its two addends' bits and the carry into it, the carry out dropped. */
    uint64_t low = (a & ~add_mask) + (b & ~add_mask);
    return low ^ ((a ^ b) & add_mask);
}

uint64_t iwarp_core_atomic_fetch_add(uint64_t *word, uint64_t add, uint64_t add_mask)
{
    if (add_mask == 0) /* RFC 7306 §5.1.1: Add Mask 0 is the 64-bit addition */
        return __atomic_fetch_add(word, add, __ATOMIC_SEQ_CST);
    uint64_t old = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(word, &old,
                                        iwarp_core_atomic_masked_add(old, add, add_mask), false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ; /* old now holds the value another update left: try again from it */
    return old;
}

uint64_t iwarp_core_atomic_cmp_swap(uint64_t *word, uint64_t compare, uint64_t compare_mask,
                                    uint64_t swap, uint64_t swap_mask)
{
    uint64_t old = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    for (;;) {
        /* RFC 7306 §5.1.2: no match leaves the memory as it was; the value read is the
         * result (the load is the operation's single point in time). */
        if (((compare ^ old) & compare_mask) != 0)
            return old;
        uint64_t desired = (old & ~swap_mask) | (swap & swap_mask);
        if (__atomic_compare_exchange_n(word, &old, desired, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return old;
    }
}
