/* SPDX-License-Identifier: BSD-2-Clause */
/* Stream state and send queue bookkeeping shared by both engines (see core_stream.h). */
#include "core/core_stream.h"

#include "util/ring.h"

static struct iwarp_core_held *held_at(struct iwarp_core_stream *s, uint32_t slot)
{
    return (struct iwarp_core_held *)(void *)(s->sq + (size_t)slot * s->sqe_size + s->held_off);
}

void iwarp_core_stream_init(struct iwarp_core_stream *s, struct iwarp_mem_table *mem, void *sq,
                            size_t sqe_size, size_t held_off, uint32_t sq_cap)
{
    *s = (struct iwarp_core_stream){.state = IWARP_CORE_STREAM_IDLE,
                                    .mem = mem,
                                    .sq = sq,
                                    .sqe_size = sqe_size,
                                    .held_off = held_off,
                                    .sq_cap = sq_cap};
}

void iwarp_core_stream_sq_post(struct iwarp_core_stream *s)
{
    /* The MRs the SGEs name stay registered until the WR completes (dereg is BUSY). */
    iwarp_core_held_take(held_at(s, iwarp_core_stream_sq_slot(s, s->sq_count)), s->mem);
    s->sq_count++;
}

void iwarp_core_stream_sq_retire(struct iwarp_core_stream *s)
{
    iwarp_core_held_release(held_at(s, s->sq_head), s->mem);
    s->sq_head = iwarp_ring_advance(s->sq_head, 1, s->sq_cap);
    s->sq_count--;
    if (s->sq_next)
        s->sq_next--;
}

bool iwarp_core_stream_tx_returned(struct iwarp_core_stream *s)
{
    if (s->tx_unsent == 0)
        return false;
    s->tx_unsent--;
    return true;
}

bool iwarp_core_stream_sq_flush_now(struct iwarp_core_stream *s)
{
    if (s->tx_unsent == 0)
        return true;
    s->sq_flush_pending = true;
    return false;
}

void iwarp_core_stream_sq_flushed(struct iwarp_core_stream *s)
{
    s->sq_flush_pending = false;
    s->sq_next = 0;
}

bool iwarp_core_stream_llp_closed(struct iwarp_core_stream *s, bool graceful, bool *fatal)
{
    if (s->llp_closed)
        return false;
    s->llp_closed = true;
    *fatal = s->state == IWARP_CORE_STREAM_RUNNING && !graceful;
    s->state = IWARP_CORE_STREAM_ERROR;
    s->tx_unsent = 0; /* the LLP holds nothing any more */
    return true;
}

enum iwarp_qp_state iwarp_core_stream_verbs_state(const struct iwarp_core_stream *s)
{
    switch (s->state) {
    case IWARP_CORE_STREAM_IDLE:
        return IWARP_QPS_INIT;
    case IWARP_CORE_STREAM_RUNNING:
        return IWARP_QPS_RTS;
    case IWARP_CORE_STREAM_CLOSING:
        return IWARP_QPS_SQD;
    case IWARP_CORE_STREAM_TERMINATING:
        return IWARP_QPS_SQE;
    default:
        return IWARP_QPS_ERR;
    }
}

void iwarp_core_stream_fini(struct iwarp_core_stream *s)
{
    while (s->sq_count)
        iwarp_core_stream_sq_retire(s);
}
