/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine interface: what every lower layer (an MPA connection, an SCTP association's
 * stream, the in-memory LLP of the tests) drives, for an RDMAP queue pair (core_qp.h) and a
 * DDP-level stream (core_ddp.h, RFC 4296 §2.1.2) alike. Each engine embeds a struct
 * iwarp_core_engine as its first member and fills in its ops; the lower layers see nothing
 * else, so they never test which kind of engine they feed.
 *
 * The contract (the same for both engines; core_qp.h tells it in full):
 *  - RX: a whole, verified DDP segment to rx_segment(); or, when nothing needs verifying first
 *    (MPA CRC off), its first rx_hdr_len() octets to rx_hdr(), which validates the segment for
 *    its whole length and gives the iovecs its payload goes to, the payload read straight into
 *    them (rx_dst_valid() before each read: the ULP may deregister the memory meanwhile), then
 *    rx_payload_done(). A lower-layer error (CRC, marker, framing) goes to rx_llp_error().
 *  - TX: tx_next() produces segments (header octets + payload iovecs into registered memory);
 *    tx_sent() for each once its last octet is handed to the transport, in production order.
 *    tx_close() says when the stream must be closed (a Terminate sent, a graceful teardown
 *    drained).
 *  - Life: start() when the LLP reaches full operation; disconnect() for a graceful teardown;
 *    llp_closed() when the transport is gone; set_error() for an abortive one.
 * Everything is called with the context lock held; nothing blocks or allocates.
 *
 * RDMAP-only features of the layers below (MPA's RTR messages and its first-FPDU checks,
 * RFC 6581) need the RDMAP engine itself: `rdmap` points to it, NULL for a DDP-level stream
 * (RTR is refused on those: it is an RDMAP message).
 */
#ifndef IWARP_CORE_CORE_ENGINE_H
#define IWARP_CORE_CORE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iwarp/verbs.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"

struct iwarp_core_engine;
struct iwarp_core_qp;
struct iwarp_core_tx_seg;

struct iwarp_core_engine_ops {
    int (*start)(struct iwarp_core_engine *e, uint32_t ird, uint32_t ord);
    int (*rx_segment)(struct iwarp_core_engine *e, const uint8_t *seg, size_t len);
    uint32_t (*rx_hdr_len)(const uint8_t *p, size_t avail, uint32_t seg_len);
    int (*rx_hdr)(struct iwarp_core_engine *e, const uint8_t *hdr, size_t hdr_len, size_t seg_len,
                  struct iovec *dst, uint32_t max, uint32_t *ndst);
    bool (*rx_dst_valid)(struct iwarp_core_engine *e);
    int (*rx_payload_done)(struct iwarp_core_engine *e);
    void (*rx_llp_error)(struct iwarp_core_engine *e, struct iwarp_term_cause cause,
                         const uint8_t *hdr, size_t hdr_len);
    int (*tx_next)(struct iwarp_core_engine *e, uint32_t max_seg, struct iwarp_core_tx_seg *seg);
    void (*tx_sent)(struct iwarp_core_engine *e, const struct iwarp_core_tx_seg *seg);
    bool (*tx_pending)(const struct iwarp_core_engine *e);
    bool (*tx_close)(const struct iwarp_core_engine *e);
    void (*disconnect)(struct iwarp_core_engine *e);
    void (*llp_closed)(struct iwarp_core_engine *e, bool graceful);
    void (*set_error)(struct iwarp_core_engine *e);
    enum iwarp_qp_state (*verbs_state)(const struct iwarp_core_engine *e);
    void (*fini)(struct iwarp_core_engine *e);
};

/* Terminate causes counted apart (iwarp_core_eng_stats.term_*): one slot per Layer/EType
 * (RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8), the public enum iwarp_term_class (verbs.h). */
#define IWARP_CORE_TERM_CLASSES IWARP_TERM_CLASS_NUM

/*
 * What an engine counts (iwarp_query_qp_stats): plain increments under the context lock, in
 * the call wrappers below (every segment in and out, every LLP error) and in the engines
 * (Terminates, flushed work requests). Never reset.
 */
struct iwarp_core_eng_stats {
    uint64_t tx_segs, tx_bytes; /* DDP segments handed to the LLP (tx_sent), their payload */
    uint64_t rx_segs, rx_bytes; /* DDP segments received (rx_segment / rx_hdr), their payload */
    uint64_t crc_errors;        /* LLP errors reported as MPA CRC errors (RFC 5044 §8 code 2) */
    uint64_t flushed;           /* work requests completed with IWARP_WC_WR_FLUSH_ERR */
    uint64_t term_sent[IWARP_CORE_TERM_CLASSES]; /* Terminates decided by us, by cause class */
    uint64_t term_rcvd[IWARP_CORE_TERM_CLASSES]; /* Terminates the peer sent, by cause class */
};

struct iwarp_core_engine {
    const struct iwarp_core_engine_ops *ops;
    struct iwarp_core_qp *rdmap; /* the RDMAP engine, or NULL for a DDP-level stream */
    struct iwarp_core_eng_stats stats;
};

/* The class (enum iwarp_term_class) a Terminate cause is counted under. */
static inline unsigned iwarp_core_term_class(struct iwarp_term_cause c)
{
    switch (c.layer) {
    case IWARP_TERM_LAYER_RDMAP:
        if (c.etype <= IWARP_TERM_RDMAP_ETYPE_REMOTE_OP)
            return IWARP_TERM_CLASS_RDMAP_CATASTROPHIC + c.etype;
        break;
    case IWARP_TERM_LAYER_DDP:
        if (c.etype <= IWARP_TERM_DDP_ETYPE_UNTAGGED)
            return IWARP_TERM_CLASS_DDP_CATASTROPHIC + c.etype;
        break;
    case IWARP_TERM_LAYER_LLP:
        if (c.etype == IWARP_TERM_LLP_ETYPE_MPA)
            return IWARP_TERM_CLASS_LLP_MPA;
        break;
    default:
        break;
    }
    return IWARP_TERM_CLASS_OTHER;
}

/* Pack a Terminate cause for vendor_err / async events: layer << 16 | etype << 8 | code. */
static inline uint32_t iwarp_core_cause_u32(struct iwarp_term_cause c)
{
    return (uint32_t)c.layer << 16 | (uint32_t)c.etype << 8 | c.ecode;
}

/* The two engines' ops (core_engine.c), installed by iwarp_core_qp_init/iwarp_core_ddp_init. */
extern const struct iwarp_core_engine_ops iwarp_core_qp_engine_ops;
extern const struct iwarp_core_engine_ops iwarp_core_ddp_engine_ops;

/* The calls, one per op (e is never NULL unless said). */

static inline int iwarp_core_eng_start(struct iwarp_core_engine *e, uint32_t ird, uint32_t ord)
{
    return e->ops->start(e, ird, ord);
}

/* The payload of a DDP segment of len octets whose first octet is ctrl (0 when shorter than
 * its header). */
static inline uint64_t iwarp_core_eng_payload(uint8_t ctrl, size_t len)
{
    size_t h = iwarp_ddp_hdr_len(ctrl);
    return len > h ? len - h : 0;
}

/* Count a received segment (the wrapper below does; so does an LLP that hands a segment to the
 * RDMAP engine directly, as MPA's first-FPDU checks do). */
static inline void iwarp_core_eng_count_rx(struct iwarp_core_engine *e, const uint8_t *seg,
                                           size_t len)
{
    e->stats.rx_segs++;
    e->stats.rx_bytes += len ? iwarp_core_eng_payload(seg[0], len) : 0;
}

static inline int iwarp_core_eng_rx_segment(struct iwarp_core_engine *e, const uint8_t *seg,
                                            size_t len)
{
    iwarp_core_eng_count_rx(e, seg, len);
    return e->ops->rx_segment(e, seg, len);
}

static inline uint32_t iwarp_core_eng_rx_hdr_len(const struct iwarp_core_engine *e,
                                                 const uint8_t *p, size_t avail, uint32_t seg_len)
{
    return e->ops->rx_hdr_len(p, avail, seg_len);
}

static inline int iwarp_core_eng_rx_hdr(struct iwarp_core_engine *e, const uint8_t *hdr,
                                        size_t hdr_len, size_t seg_len, struct iovec *dst,
                                        uint32_t max, uint32_t *ndst)
{
    e->stats.rx_segs++;
    e->stats.rx_bytes += hdr_len ? iwarp_core_eng_payload(hdr[0], seg_len) : 0;
    return e->ops->rx_hdr(e, hdr, hdr_len, seg_len, dst, max, ndst);
}

static inline bool iwarp_core_eng_rx_dst_valid(struct iwarp_core_engine *e)
{
    return e->ops->rx_dst_valid(e);
}

static inline int iwarp_core_eng_rx_payload_done(struct iwarp_core_engine *e)
{
    return e->ops->rx_payload_done(e);
}

static inline void iwarp_core_eng_rx_llp_error(struct iwarp_core_engine *e,
                                               struct iwarp_term_cause cause, const uint8_t *hdr,
                                               size_t hdr_len)
{
    if (cause.layer == IWARP_TERM_LAYER_LLP && cause.etype == IWARP_TERM_LLP_ETYPE_MPA &&
        cause.ecode == IWARP_TERM_MPA_CRC)
        e->stats.crc_errors++;
    e->ops->rx_llp_error(e, cause, hdr, hdr_len);
}

static inline int iwarp_core_eng_tx_next(struct iwarp_core_engine *e, uint32_t max_seg,
                                         struct iwarp_core_tx_seg *seg)
{
    return e->ops->tx_next(e, max_seg, seg);
}

static inline void iwarp_core_eng_tx_sent(struct iwarp_core_engine *e,
                                          const struct iwarp_core_tx_seg *seg)
{
    e->ops->tx_sent(e, seg);
}

static inline bool iwarp_core_eng_tx_pending(const struct iwarp_core_engine *e)
{
    return e->ops->tx_pending(e);
}

static inline bool iwarp_core_eng_tx_close(const struct iwarp_core_engine *e)
{
    return e->ops->tx_close(e);
}

/* e may be NULL (no engine attached): nothing happens. */
static inline void iwarp_core_eng_disconnect(struct iwarp_core_engine *e)
{
    if (e)
        e->ops->disconnect(e);
}

/* e may be NULL (no engine attached): nothing happens. */
static inline void iwarp_core_eng_llp_closed(struct iwarp_core_engine *e, bool graceful)
{
    if (e)
        e->ops->llp_closed(e, graceful);
}

static inline void iwarp_core_eng_set_error(struct iwarp_core_engine *e)
{
    e->ops->set_error(e);
}

static inline enum iwarp_qp_state iwarp_core_eng_verbs_state(const struct iwarp_core_engine *e)
{
    return e->ops->verbs_state(e);
}

/* Before the engine's memory is freed: every WR never completed and every receive still
 * posted releases its MR holds. */
static inline void iwarp_core_eng_fini(struct iwarp_core_engine *e)
{
    e->ops->fini(e);
}

#endif
