/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine interface's two implementations (core_engine.h): each op of the RDMAP queue pair
 * (core_qp) and of the DDP-level stream (core_ddp) under one signature. An engine's struct
 * begins with its struct iwarp_core_engine, so the engine pointer is the engine itself.
 */
#include "core/core_engine.h"

#include "core/core_ddp.h"
#include "core/core_qp.h"

/* Count a segment handed to the LLP: the octets after its DDP header (core_engine.h). */
static void count_tx(struct iwarp_core_engine *e, const struct iwarp_core_tx_seg *seg)
{
    e->stats.tx_segs++;
    e->stats.tx_bytes +=
        seg->payload_len + (seg->hdr_len ? iwarp_core_eng_payload(seg->hdr[0], seg->hdr_len) : 0);
}

/* ---- the RDMAP queue pair ---- */

static struct iwarp_core_qp *qp_of(struct iwarp_core_engine *e)
{
    return (struct iwarp_core_qp *)e;
}

static const struct iwarp_core_qp *qp_of_c(const struct iwarp_core_engine *e)
{
    return (const struct iwarp_core_qp *)e;
}

static int qp_start(struct iwarp_core_engine *e, uint32_t ird, uint32_t ord)
{
    return iwarp_core_qp_start(qp_of(e), ird, ord);
}

static int qp_rx_segment(struct iwarp_core_engine *e, const uint8_t *seg, size_t len)
{
    return iwarp_core_qp_rx_segment(qp_of(e), seg, len);
}

static int qp_rx_hdr(struct iwarp_core_engine *e, const uint8_t *hdr, size_t hdr_len,
                     size_t seg_len, struct iovec *dst, uint32_t max, uint32_t *ndst)
{
    return iwarp_core_qp_rx_hdr(qp_of(e), hdr, hdr_len, seg_len, dst, max, ndst);
}

static bool qp_rx_dst_valid(struct iwarp_core_engine *e)
{
    return iwarp_core_qp_rx_dst_valid(qp_of(e));
}

static int qp_rx_payload_done(struct iwarp_core_engine *e)
{
    return iwarp_core_qp_rx_payload_done(qp_of(e));
}

static void qp_rx_llp_error(struct iwarp_core_engine *e, struct iwarp_term_cause cause,
                            const uint8_t *hdr, size_t hdr_len)
{
    iwarp_core_qp_rx_llp_error(qp_of(e), cause, hdr, hdr_len);
}

static int qp_tx_next(struct iwarp_core_engine *e, uint32_t max_seg, struct iwarp_core_tx_seg *seg)
{
    return iwarp_core_qp_tx_next(qp_of(e), max_seg, seg);
}

static void qp_tx_sent(struct iwarp_core_engine *e, const struct iwarp_core_tx_seg *seg)
{
    count_tx(e, seg);
    iwarp_core_qp_tx_sent(qp_of(e), seg);
}

static bool qp_tx_pending(const struct iwarp_core_engine *e)
{
    return iwarp_core_qp_tx_pending(qp_of_c(e));
}

static bool qp_tx_close(const struct iwarp_core_engine *e)
{
    return iwarp_core_qp_tx_close(qp_of_c(e));
}

static void qp_disconnect(struct iwarp_core_engine *e)
{
    iwarp_core_qp_disconnect(qp_of(e));
}

static void qp_llp_closed(struct iwarp_core_engine *e, bool graceful)
{
    iwarp_core_qp_llp_closed(qp_of(e), graceful);
}

static void qp_set_error(struct iwarp_core_engine *e)
{
    iwarp_core_qp_set_error(qp_of(e));
}

static enum iwarp_qp_state qp_verbs_state(const struct iwarp_core_engine *e)
{
    return iwarp_core_qp_verbs_state(qp_of_c(e));
}

static void qp_fini(struct iwarp_core_engine *e)
{
    iwarp_core_qp_fini(qp_of(e));
}

const struct iwarp_core_engine_ops iwarp_core_qp_engine_ops = {
    .start = qp_start,
    .rx_segment = qp_rx_segment,
    .rx_hdr_len = iwarp_core_qp_rx_hdr_len,
    .rx_hdr = qp_rx_hdr,
    .rx_dst_valid = qp_rx_dst_valid,
    .rx_payload_done = qp_rx_payload_done,
    .rx_llp_error = qp_rx_llp_error,
    .tx_next = qp_tx_next,
    .tx_sent = qp_tx_sent,
    .tx_pending = qp_tx_pending,
    .tx_close = qp_tx_close,
    .disconnect = qp_disconnect,
    .llp_closed = qp_llp_closed,
    .set_error = qp_set_error,
    .verbs_state = qp_verbs_state,
    .fini = qp_fini,
};

/* ---- the DDP-level stream ---- */

static struct iwarp_core_ddp *ddp_of(struct iwarp_core_engine *e)
{
    return (struct iwarp_core_ddp *)e;
}

static const struct iwarp_core_ddp *ddp_of_c(const struct iwarp_core_engine *e)
{
    return (const struct iwarp_core_ddp *)e;
}

static int ddp_start(struct iwarp_core_engine *e, uint32_t ird, uint32_t ord)
{
    return iwarp_core_ddp_start(ddp_of(e), ird, ord);
}

static int ddp_rx_segment(struct iwarp_core_engine *e, const uint8_t *seg, size_t len)
{
    return iwarp_core_ddp_rx_segment(ddp_of(e), seg, len);
}

static int ddp_rx_hdr(struct iwarp_core_engine *e, const uint8_t *hdr, size_t hdr_len,
                      size_t seg_len, struct iovec *dst, uint32_t max, uint32_t *ndst)
{
    return iwarp_core_ddp_rx_hdr(ddp_of(e), hdr, hdr_len, seg_len, dst, max, ndst);
}

static bool ddp_rx_dst_valid(struct iwarp_core_engine *e)
{
    return iwarp_core_ddp_rx_dst_valid(ddp_of(e));
}

static int ddp_rx_payload_done(struct iwarp_core_engine *e)
{
    return iwarp_core_ddp_rx_payload_done(ddp_of(e));
}

static void ddp_rx_llp_error(struct iwarp_core_engine *e, struct iwarp_term_cause cause,
                             const uint8_t *hdr, size_t hdr_len)
{
    iwarp_core_ddp_rx_llp_error(ddp_of(e), cause, hdr, hdr_len);
}

static int ddp_tx_next(struct iwarp_core_engine *e, uint32_t max_seg, struct iwarp_core_tx_seg *seg)
{
    return iwarp_core_ddp_tx_next(ddp_of(e), max_seg, seg);
}

static void ddp_tx_sent(struct iwarp_core_engine *e, const struct iwarp_core_tx_seg *seg)
{
    count_tx(e, seg);
    iwarp_core_ddp_tx_sent(ddp_of(e), seg);
}

static bool ddp_tx_pending(const struct iwarp_core_engine *e)
{
    return iwarp_core_ddp_tx_pending(ddp_of_c(e));
}

static bool ddp_tx_close(const struct iwarp_core_engine *e)
{
    return iwarp_core_ddp_tx_close(ddp_of_c(e));
}

static void ddp_disconnect(struct iwarp_core_engine *e)
{
    iwarp_core_ddp_disconnect(ddp_of(e));
}

static void ddp_llp_closed(struct iwarp_core_engine *e, bool graceful)
{
    iwarp_core_ddp_llp_closed(ddp_of(e), graceful);
}

static void ddp_set_error(struct iwarp_core_engine *e)
{
    iwarp_core_ddp_set_error(ddp_of(e));
}

static enum iwarp_qp_state ddp_verbs_state(const struct iwarp_core_engine *e)
{
    return iwarp_core_ddp_verbs_state(ddp_of_c(e));
}

static void ddp_fini(struct iwarp_core_engine *e)
{
    iwarp_core_ddp_fini(ddp_of(e));
}

const struct iwarp_core_engine_ops iwarp_core_ddp_engine_ops = {
    .start = ddp_start,
    .rx_segment = ddp_rx_segment,
    .rx_hdr_len = iwarp_core_ddp_rx_hdr_len,
    .rx_hdr = ddp_rx_hdr,
    .rx_dst_valid = ddp_rx_dst_valid,
    .rx_payload_done = ddp_rx_payload_done,
    .rx_llp_error = ddp_rx_llp_error,
    .tx_next = ddp_tx_next,
    .tx_sent = ddp_tx_sent,
    .tx_pending = ddp_tx_pending,
    .tx_close = ddp_tx_close,
    .disconnect = ddp_disconnect,
    .llp_closed = ddp_llp_closed,
    .set_error = ddp_set_error,
    .verbs_state = ddp_verbs_state,
    .fini = ddp_fini,
};
