/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An in-memory transport between two MPA connections (llp_conn), for tests and the demo: two
 * byte pipes (one per direction) pumped deterministically, without threads, sockets or time of
 * its own. Fault injection: a maximum number of octets per read and per write (1 gives one-octet
 * splits), random split sizes from a seeded generator, stalls (a direction delivers nothing for
 * N pumps) and a hook that sees (and may change) every octet as it enters a pipe, e.g. to flip
 * one and break an FPDU's CRC.
 *
 * A connection whose state is CLOSE, FAILED or REJECTED has its transport closed once it has
 * nothing more to write: iwarp_llp_conn_closed() is called for it, and its peer sees the end of
 * the stream after the octets already in the pipe (then iwarp_llp_conn_closed() for the peer).
 */
#ifndef IWARP_LLP_LLP_MEM_H
#define IWARP_LLP_LLP_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llp/llp_conn.h"

/* Called for octets p[0..n) entering pipe dir (0: end 0 -> end 1) at stream offset off. */
typedef void (*iwarp_llp_mem_hook_fn)(void *user, unsigned dir, uint64_t off, uint8_t *p, size_t n);

/* Called when end's transport closes (its FIN: no octet follows in pipe `end`). */
typedef void (*iwarp_llp_mem_close_fn)(void *user, unsigned end);

/* Called instead of writing into pipe dir: p[0..n) are the next octets end dir wrote (valid
 * during the call only). The filter puts what the pipe is to carry instead with
 * iwarp_llp_mem_put(), now or later, as many octets as it likes: fault injection that changes
 * lengths, e.g. a grown MPA frame or FPDU. */
typedef void (*iwarp_llp_mem_filter_fn)(void *user, unsigned dir, const uint8_t *p, size_t n);

/* One direction. Set the fault fields directly; the others are private. */
struct iwarp_llp_mem_pipe {
    uint8_t *buf; /* ring, cap octets (caller-owned) */
    size_t cap, head, len;
    uint64_t off;     /* octets written into the pipe so far */
    size_t max_write; /* most octets per write by the sender (0: no limit) */
    size_t max_read;  /* most octets per read by the receiver (0: no limit) */
    bool random;      /* each operation's size is drawn from 1..max (max 0: 1..4096) */
    uint32_t stall;   /* pumps during which nothing is delivered from this pipe */
    bool eof;         /* the sender closed: the receiver sees the end once the pipe is empty */
};

struct iwarp_llp_mem {
    struct iwarp_llp_conn *end[2];
    struct iwarp_llp_mem_pipe pipe[2]; /* pipe[d] is written by end[d], read by end[1 - d] */
    bool closed[2];                    /* end d's transport is closed */
    uint32_t rng;                      /* xorshift32 state for random splits (non-zero) */
    iwarp_llp_mem_hook_fn hook;        /* every hook may be NULL; each gets hook_user */
    iwarp_llp_mem_close_fn close_hook;
    iwarp_llp_mem_filter_fn filter;
    void *hook_user;
    int rx_err[2];   /* the first error iwarp_llp_conn_rx_ack() returned to end d, 0 when none */
    uint64_t now_ns; /* the time given to the connections; the caller advances it */
};

/*
 * Connect a (end 0) and b (end 1) with pipes of cap octets each (buf01: a to b, buf10: b to
 * a), no faults, at time 0. seed: the random-split generator's seed (0 is replaced).
 * Ownership: m keeps a, b and both buffers (caller-owned) for its lifetime.
 * Returns 0, or IWARP_ERR_INVAL for a NULL pointer or cap 0.
 */
int iwarp_llp_mem_init(struct iwarp_llp_mem *m, struct iwarp_llp_conn *a, struct iwarp_llp_conn *b,
                       uint8_t *buf01, uint8_t *buf10, size_t cap, uint32_t seed);

/*
 * Write p[0..n) into pipe dir as if end dir had sent them (the hook sees them). For filters and
 * tests that write what no connection framed.
 * Returns 0, or IWARP_ERR_NOSPC (nothing written) when the pipe has less room than n.
 */
int iwarp_llp_mem_put(struct iwarp_llp_mem *m, unsigned dir, const uint8_t *p, size_t n);

/*
 * One pump: each end writes what it has (tx_iov/tx_ack) as far as the pipe has room and the
 * faults allow, then reads what is delivered to it (rx_buf/rx_ack); closes transports as
 * described above; counts stalls down.
 * Returns the number of octets moved plus the number of transports closed (0: quiescent,
 * unless a stall is still counting down).
 */
size_t iwarp_llp_mem_step(struct iwarp_llp_mem *m);

/*
 * Pump until a step moves nothing with no stall left, or max_steps steps were taken.
 * Returns the number of steps taken.
 */
uint32_t iwarp_llp_mem_pump(struct iwarp_llp_mem *m, uint32_t max_steps);

/* One step of iwarp_llp_mem_pump: false once it is quiescent (the step moved nothing and no
 * stall was counting down), for a caller that looks at the ends between steps. */
bool iwarp_llp_mem_pump_once(struct iwarp_llp_mem *m);

#endif
