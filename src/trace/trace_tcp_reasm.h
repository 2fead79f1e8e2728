/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP stream reassembly for one direction of a captured connection (RFC 9293 §3.4, §3.10.7.4),
 * sans-I/O: segments go in as the capture holds them (duplicated, retransmitted with overlaps,
 * out of order), the stream's octets come out exactly once and in sequence order through a
 * callback. Octets ahead of the next expected sequence number wait in a caller-provided ring
 * buffer (byte at sequence number s lives at buf[s mod cap]) until the hole before them fills.
 *
 * What a captured retransmission repeats is not delivered again: the first copy of each octet
 * wins. Sequence numbers wrap (RFC 9293 §3.4: compared modulo 2^32 within a window).
 * No allocation; the buffer is borrowed.
 */
#ifndef IWARP_TRACE_TRACE_TCP_REASM_H
#define IWARP_TRACE_TRACE_TCP_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"

/* Out-of-order ranges held at most; a segment that would need more is dropped (counted). */
#define IWARP_TCP_REASM_MAX_RANGES 64u

/* Receives in-order stream octets; p is valid only during the call. */
typedef void (*iwarp_tcp_reasm_deliver_fn)(void *ctx, const uint8_t *p, size_t n);

/* One direction. Fields are read-only for callers (the statistics may be printed). */
struct iwarp_tcp_reasm {
    uint8_t *buf;  /* ring of cap octets (borrowed) */
    uint32_t cap;  /* a power of two: the window held ahead of next */
    bool synced;   /* next is known (a SYN or the first data segment was seen) */
    uint32_t next; /* sequence number of the next octet to deliver */
    uint32_t nr;   /* held ranges */
    uint32_t r_seq[IWARP_TCP_REASM_MAX_RANGES]; /* sorted, disjoint, not adjacent, after next */
    uint32_t r_len[IWARP_TCP_REASM_MAX_RANGES];
    uint64_t delivered;    /* octets delivered */
    uint64_t dup_octets;   /* octets seen again (retransmissions) and not delivered again */
    uint64_t ooo_segments; /* segments that arrived ahead of a hole */
    uint64_t dropped;      /* octets beyond the window or the range table, never delivered */
};

/*
 * Prepares r with an empty window.
 *   buf/cap - the ring; cap must be a power of two of at least 2 (else cap is rounded down to
 *             one, and a cap below 2 holds nothing out of order).
 * Ownership: r borrows buf until it is no longer used.
 */
void iwarp_tcp_reasm_init(struct iwarp_tcp_reasm *r, uint8_t *buf, uint32_t cap);

/*
 * A SYN with sequence number isn was seen: data starts at isn + 1 (RFC 9293 §3.4). Ignored once
 * the stream is synced (a retransmitted SYN, or data seen first).
 */
void iwarp_tcp_reasm_syn(struct iwarp_tcp_reasm *r, uint32_t isn);

/*
 * Adds one segment's payload p[0..n) starting at sequence number seq. Octets before the next
 * expected one are duplicates and skipped; octets at it are delivered at once (straight from p),
 * followed by any held octets they make contiguous; octets ahead of a hole are copied into the
 * ring. Without a SYN, the first segment seen starts the stream.
 * Ownership: p is read during the call only; deliver gets pointers into p or the ring.
 * Returns 0, or IWARP_ERR_NOSPC when some octets did not fit the window or the range table
 * (they are counted in dropped and will leave a hole), IWARP_ERR_INVAL on NULL r or deliver.
 */
int iwarp_tcp_reasm_segment(struct iwarp_tcp_reasm *r, uint32_t seq, const uint8_t *p, size_t n,
                            iwarp_tcp_reasm_deliver_fn deliver, void *ctx);

/* Octets held out of order (waiting for a hole to fill). */
uint64_t iwarp_tcp_reasm_held(const struct iwarp_tcp_reasm *r);

#endif
