/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What both engines keep the same way (RDMAP's core_qp.h and DDP's core_ddp.h): the stream
 * state, the send queue ring with the MR holds of each entry, the count of produced segments
 * the LLP still holds, and the flush that waits until the LLP has given every one of them
 * back. The wait matters: the LLP reads payload straight from registered memory, so a WR
 * flushed earlier would let the ULP reuse memory that is still being sent.
 *
 * Each engine owns its entry type (struct iwarp_core_sqe, struct iwarp_core_ddp_sqe) and its
 * completion rules; this module only knows the entries' size and where their
 * struct iwarp_core_held is. Sans I/O; called with the context lock held; never allocates.
 */
#ifndef IWARP_CORE_CORE_STREAM_H
#define IWARP_CORE_CORE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core_sge.h"
#include "iwarp/verbs.h"
#include "mem/mem_stag.h"
#include "util/ring.h"

/* Stream states (RFC 5040 §5.4 and RFC 5041 §6 teardown; mapped onto verbs QP states by
 * iwarp_core_stream_verbs_state). DDP-level streams never terminate: DDP has no Terminate. */
enum iwarp_core_stream_state {
    IWARP_CORE_STREAM_IDLE = 0,        /* created; not yet in full operation */
    IWARP_CORE_STREAM_RUNNING = 1,     /* full operation (RTS) */
    IWARP_CORE_STREAM_CLOSING = 2,     /* graceful disconnect: the SQ drains, then it closes */
    IWARP_CORE_STREAM_TERMINATING = 3, /* RDMAP Terminate queued/sent or received */
    IWARP_CORE_STREAM_ERROR = 4,       /* closed: every WR flushed */
};

struct iwarp_core_stream {
    uint8_t state; /* enum iwarp_core_stream_state */
    bool llp_closed;
    struct iwarp_mem_table *mem; /* where the held MRs are */

    /* send queue: entries [sq_head, sq_head + sq_count) are posted and not yet retired; TX
     * has started the first sq_next of them */
    unsigned char *sq; /* sq_cap entries of sqe_size octets, their holds at held_off */
    size_t sqe_size, held_off;
    uint32_t sq_cap, sq_head, sq_count, sq_next;

    uint32_t tx_unsent;    /* segments produced and not yet given back (tx_sent) */
    bool sq_flush_pending; /* flush the SQ once tx_unsent drops to 0 */
};

/* Initialise in IDLE with an empty send queue of sq_cap (> 0) entries of sqe_size octets at
 * sq, each with its struct iwarp_core_held at offset held_off. Borrows sq and mem. */
void iwarp_core_stream_init(struct iwarp_core_stream *s, struct iwarp_mem_table *mem, void *sq,
                            size_t sqe_size, size_t held_off, uint32_t sq_cap);

/* The slot of the i-th posted entry after the oldest (i == sq_count: the next free slot). */
static inline uint32_t iwarp_core_stream_sq_slot(const struct iwarp_core_stream *s, uint32_t i)
{
    return iwarp_ring_slot(s->sq_head, i, s->sq_cap);
}

static inline bool iwarp_core_stream_sq_full(const struct iwarp_core_stream *s)
{
    return s->sq_count == s->sq_cap;
}

/* The entry in the next free slot, filled by the engine, is posted: its MRs are held until
 * it is retired. The queue must not be full. */
void iwarp_core_stream_sq_post(struct iwarp_core_stream *s);

/* Retire the oldest entry (its completion was reported, or it needs none): its MRs are
 * released. The queue must not be empty. */
void iwarp_core_stream_sq_retire(struct iwarp_core_stream *s);

/* Whether the stream still carries data both ways: full operation, or a graceful close
 * draining its send queue. */
static inline bool iwarp_core_stream_open(const struct iwarp_core_stream *s)
{
    return s->state == IWARP_CORE_STREAM_RUNNING || s->state == IWARP_CORE_STREAM_CLOSING;
}

/* A segment was produced for the LLP. */
static inline void iwarp_core_stream_tx_produced(struct iwarp_core_stream *s)
{
    s->tx_unsent++;
}

/* The LLP gave a produced segment back (tx_sent). Returns false when none was outstanding
 * (the LLP closed in between): the segment's completion rules do not apply then. */
bool iwarp_core_stream_tx_returned(struct iwarp_core_stream *s);

/* A flush of the SQ is wanted. Returns true when it may happen now (the LLP holds nothing);
 * else it is remembered and iwarp_core_stream_sq_flush_due() turns true once the LLP has given
 * back its last segment. */
bool iwarp_core_stream_sq_flush_now(struct iwarp_core_stream *s);

/* Whether a remembered flush may happen now. */
static inline bool iwarp_core_stream_sq_flush_due(const struct iwarp_core_stream *s)
{
    return s->sq_flush_pending && s->tx_unsent == 0;
}

/* The engine has flushed (and retired) every entry. */
void iwarp_core_stream_sq_flushed(struct iwarp_core_stream *s);

/*
 * The LLP is gone (FIN, reset, error): enter ERROR; the produced segments are dropped with the
 * transport. Returns false when this was already reported (do nothing more); else the engine
 * flushes everything, and *fatal says whether the ULP must be told of a fatal error: the
 * stream was running and the close did not follow an orderly disconnect.
 */
bool iwarp_core_stream_llp_closed(struct iwarp_core_stream *s, bool graceful, bool *fatal);

/* The verbs QP state of the stream state: INIT, RTS, SQD, SQE, ERR. */
enum iwarp_qp_state iwarp_core_stream_verbs_state(const struct iwarp_core_stream *s);

/* Before the engine's memory is freed: every entry never retired (a flush still waiting for
 * the LLP) releases its MRs. */
void iwarp_core_stream_fini(struct iwarp_core_stream *s);

#endif
