/*
 * The engine an LLP back-end feeds with whole DDP segments: an RDMAP queue pair (core_qp.h) or
 * a DDP-level stream (core_ddp.h, RFC 4296 §2.1.2). Both have the same seam; these wrappers
 * let an LLP (llp_conn over MPA/TCP, llp_assoc over SCTP) drive either without caring which.
 * Exactly one of qp and ddp is set once attached; every call is a no-op or "nothing" when
 * neither is.
 */
#ifndef IWARP_LLP_LLP_ENGINE_H
#define IWARP_LLP_LLP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core_ddp.h"
#include "core/core_qp.h"

struct iwarp_llp_engine {
    struct iwarp_core_qp *qp;
    struct iwarp_core_ddp *ddp;
};

static inline bool iwarp_llp_eng_attached(const struct iwarp_llp_engine *e)
{
    return e->qp != NULL || e->ddp != NULL;
}

static inline int iwarp_llp_eng_start(const struct iwarp_llp_engine *e, uint32_t ird, uint32_t ord)
{
    return e->ddp ? iwarp_core_ddp_start(e->ddp, ird, ord) : iwarp_core_qp_start(e->qp, ird, ord);
}

static inline int iwarp_llp_eng_rx_segment(const struct iwarp_llp_engine *e, const uint8_t *seg,
                                           size_t len)
{
    return e->ddp ? iwarp_core_ddp_rx_segment(e->ddp, seg, len)
                  : iwarp_core_qp_rx_segment(e->qp, seg, len);
}

static inline void iwarp_llp_eng_rx_llp_error(const struct iwarp_llp_engine *e,
                                              struct iwarp_term_cause cause, const uint8_t *hdr,
                                              size_t hdr_len)
{
    if (e->ddp)
        iwarp_core_ddp_rx_llp_error(e->ddp, cause, hdr, hdr_len);
    else
        iwarp_core_qp_rx_llp_error(e->qp, cause, hdr, hdr_len);
}

static inline int iwarp_llp_eng_tx_next(const struct iwarp_llp_engine *e, uint32_t max_seg,
                                        struct iwarp_core_tx_seg *seg)
{
    return e->ddp ? iwarp_core_ddp_tx_next(e->ddp, max_seg, seg)
                  : iwarp_core_qp_tx_next(e->qp, max_seg, seg);
}

static inline void iwarp_llp_eng_tx_sent(const struct iwarp_llp_engine *e,
                                         const struct iwarp_core_tx_seg *seg)
{
    if (e->ddp)
        iwarp_core_ddp_tx_sent(e->ddp, seg);
    else
        iwarp_core_qp_tx_sent(e->qp, seg);
}

static inline bool iwarp_llp_eng_tx_close(const struct iwarp_llp_engine *e)
{
    return e->ddp ? iwarp_core_ddp_tx_close(e->ddp) : iwarp_core_qp_tx_close(e->qp);
}

static inline bool iwarp_llp_eng_tx_pending(const struct iwarp_llp_engine *e)
{
    return e->ddp ? iwarp_core_ddp_tx_pending(e->ddp) : iwarp_core_qp_tx_pending(e->qp);
}

static inline void iwarp_llp_eng_disconnect(const struct iwarp_llp_engine *e)
{
    if (e->ddp)
        iwarp_core_ddp_disconnect(e->ddp);
    else if (e->qp)
        iwarp_core_qp_disconnect(e->qp);
}

static inline void iwarp_llp_eng_llp_closed(const struct iwarp_llp_engine *e, bool graceful)
{
    if (e->ddp)
        iwarp_core_ddp_llp_closed(e->ddp, graceful);
    else if (e->qp)
        iwarp_core_qp_llp_closed(e->qp, graceful);
}

#endif
