/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A measuring instrument, compiled in only with -DIWARP_CRITPATH=ON (scripts/critpath.sh):
 * callgrind counts instructions only from the read that brings octets in to the next write,
 * so in a ping-pong it counts exactly the path from a message's arrival to the answer leaving,
 * which is what one-way latency pays. Work after the write (its completion, bookkeeping) and
 * empty polls are left out. Valgrind runs one thread at a time, so a plain flag serves.
 */
#ifndef IWARP_UTIL_CRITPATH_H
#define IWARP_UTIL_CRITPATH_H

#ifdef IWARP_CRITPATH
#include <valgrind/callgrind.h>

extern int iwarp_critpath_on;

/* Counts a path; at exit, their number goes to stderr ("critpath: N paths"). */
void iwarp_critpath_count(void);

/* Octets came in: count from here (one path per read that starts one). */
static inline void iwarp_critpath_begin(void)
{
    if (!iwarp_critpath_on) {
        iwarp_critpath_count();
        iwarp_critpath_on = 1;
        CALLGRIND_TOGGLE_COLLECT;
    }
}

/* A write is about to leave: stop counting. */
static inline void iwarp_critpath_end(void)
{
    if (iwarp_critpath_on) {
        iwarp_critpath_on = 0;
        CALLGRIND_TOGGLE_COLLECT;
    }
}
#else
static inline void iwarp_critpath_begin(void)
{
}
static inline void iwarp_critpath_end(void)
{
}
#endif

#endif
