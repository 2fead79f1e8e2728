/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP engine: creation, posting, the RDMAP stream's state machine (RFC 5040 §5.4),
 * completions in order, Terminate queuing and flushing. Transmit is in core_qp_tx.c, receive in
 * core_qp_rx.c.
 */
#include "core/core_qp.h"

#include <stddef.h>
#include <string.h>

#include "core/core_qp_int.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"
#include "util/bytes.h"
#include "util/copy.h"
#include "util/ring.h"
#include "wire/wire_term.h"

/* The 64-bit Immediate Data overlays the DDP-level fields: iwarp_wc keeps libibverbs' layout
 * and its size (a fixed layout, common.h). */
_Static_assert(offsetof(struct iwarp_wc, imm_data64) == offsetof(struct iwarp_wc, ddp_qn) &&
                   offsetof(struct iwarp_wc, imm_data64) % 8 == 0 && sizeof(struct iwarp_wc) == 64,
               "iwarp_wc layout");

int iwarp_core_qp_init(struct iwarp_core_qp *qp, const struct iwarp_core_qp_cfg *cfg,
                       const struct iwarp_core_qp_mem *mem)
{
    if (!qp || !cfg || !mem || !cfg->mem || !cfg->send_cq || !cfg->recv_cq || cfg->sq_cap == 0 ||
        (cfg->rdmap_ext & ~IWARP_CORE_RDMAP_EXT) || cfg->sq_cap > IWARP_CORE_MAX_WR ||
        cfg->rq_cap > IWARP_CORE_MAX_WR || cfg->max_send_sge > IWARP_CORE_MAX_SGE ||
        cfg->max_recv_sge > IWARP_CORE_MAX_SGE || cfg->max_inline > IWARP_CORE_MAX_INLINE ||
        !mem->sq || !mem->orq || !mem->irq || !mem->irq_lens || !mem->rq_lens ||
        (!cfg->srq && (cfg->rq_cap == 0 || !mem->rq)))
        return IWARP_ERR_INVAL;
    memset(qp, 0, sizeof *qp);
    qp->eng = (struct iwarp_core_engine){.ops = &iwarp_core_qp_engine_ops, .rdmap = qp};
    qp->cfg = *cfg;
    qp->rx_predict = qp->tx_predict = true;
    if (qp->cfg.read_batch_octets == 0)
        qp->cfg.read_batch_octets = IWARP_CORE_READ_BATCH_OCTETS;
    qp->sq = mem->sq;
    iwarp_core_stream_init(&qp->stream, cfg->mem, mem->sq, sizeof *mem->sq,
                           offsetof(struct iwarp_core_sqe, held), cfg->sq_cap);
    qp->orq = mem->orq;
    qp->irq = mem->irq;
    int rc = 0;
    if (!cfg->srq) {
        rc = iwarp_core_rq_init(&qp->rq, mem->rq, cfg->rq_cap, cfg->max_recv_sge);
        if (rc == 0)
            rc = iwarp_ddp_rx_uq_init(&qp->uq_send, mem->rq_lens, cfg->rq_cap);
    } else {
        rc = iwarp_ddp_rx_uq_init(&qp->uq_send, mem->rq_lens, IWARP_CORE_SRQ_WINDOW);
    }
    if (rc == 0)
        rc = iwarp_ddp_rx_uq_init(&qp->uq_read, mem->irq_lens, IWARP_CORE_MAX_IRD);
    if (rc == 0)
        rc = iwarp_ddp_rx_uq_init(&qp->uq_term, qp->uq_term_lens, 1);
    if (rc == 0)
        rc = iwarp_ddp_rx_uq_init(&qp->uq_atomic_resp, qp->uq_atomic_resp_lens, IWARP_CORE_MAX_ORD);
    /* RFC 5041 §4.3: the first message on each queue carries MSN 1. */
    qp->send_msn = IWARP_DDP_MSN_INIT;
    qp->read_msn = IWARP_DDP_MSN_INIT;
    qp->atomic_resp_msn = IWARP_DDP_MSN_INIT;
    return rc;
}

int iwarp_core_qp_start(struct iwarp_core_qp *qp, uint32_t ird, uint32_t ord)
{
    if (qp->stream.state != IWARP_CORE_STREAM_IDLE)
        return IWARP_ERR_STATE;
    if (ird > IWARP_CORE_MAX_IRD)
        ird = IWARP_CORE_MAX_IRD;
    if (ord > IWARP_CORE_MAX_ORD)
        ord = IWARP_CORE_MAX_ORD;
    qp->ird = ird;
    qp->ord = ord;
    qp->stream.state = IWARP_CORE_STREAM_RUNNING;
    iwarp_core_qp_rx_start(qp);
    return 0;
}

/* ---- completions ------------------------------------------------------------------------- */

static enum iwarp_wc_opcode wc_opcode(uint8_t wr_opcode)
{
    switch (wr_opcode) {
    case IWARP_WR_RDMA_WRITE:
    case IWARP_WR_RDMA_WRITE_WITH_IMM:
        return IWARP_WC_RDMA_WRITE;
    case IWARP_WR_ATOMIC_FETCH_AND_ADD:
    case IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD:
        return IWARP_WC_FETCH_ADD;
    case IWARP_WR_ATOMIC_CMP_AND_SWP:
    case IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP:
        return IWARP_WC_COMP_SWAP;
    case IWARP_WR_RDMA_READ:
        return IWARP_WC_RDMA_READ;
    case IWARP_WR_LOCAL_INV:
        return IWARP_WC_LOCAL_INV;
    case IWARP_WR_BIND_MW:
        return IWARP_WC_BIND_MW;
    case IWARP_WR_REG_MR:
        return IWARP_WC_REG_MR;
    default:
        return IWARP_WC_SEND;
    }
}

void iwarp_core_qp_sq_finish(struct iwarp_core_qp *qp, uint32_t index, uint8_t status,
                             uint32_t vendor_err)
{
    struct iwarp_core_sqe *e = &qp->sq[index];
    e->done = true;
    e->status = status;
    e->vendor_err = vendor_err;
    /* Send queue completions leave in posting order (verbs; RFC 5040 §5.5 orders completions
     * of the messages of one stream). */
    while (qp->stream.sq_count && qp->sq[qp->stream.sq_head].done) {
        struct iwarp_core_sqe *h = &qp->sq[qp->stream.sq_head];
        if (h->signaled || h->status != IWARP_WC_SUCCESS) {
            struct iwarp_wc wc = {
                .wr_id = h->wr_id,
                .status = (enum iwarp_wc_status)h->status,
                .opcode = wc_opcode(h->opcode),
                .vendor_err = h->vendor_err,
                .byte_len = h->status == IWARP_WC_SUCCESS ? h->len : 0,
                .qp_num = qp->cfg.qp_num,
            };
            (void)iwarp_core_cq_push(qp->cfg.send_cq, &wc, false);
        }
        iwarp_core_stream_sq_retire(&qp->stream);
    }
}

void iwarp_core_qp_recv_complete(struct iwarp_core_qp *qp, uint64_t wr_id, uint8_t status,
                                 uint32_t byte_len, uint32_t vendor_err, bool with_inv,
                                 uint32_t inv_rkey, bool solicited)
{
    struct iwarp_wc wc = {
        .wr_id = wr_id,
        .status = (enum iwarp_wc_status)status,
        .opcode = IWARP_WC_RECV,
        .vendor_err = vendor_err,
        .byte_len = status == IWARP_WC_SUCCESS ? byte_len : 0,
        .qp_num = qp->cfg.qp_num,
        .wc_flags = with_inv ? IWARP_WC_WITH_INV : 0,
    };
    if (with_inv)
        wc.invalidated_rkey = inv_rkey;
    (void)iwarp_core_cq_push(qp->cfg.recv_cq, &wc, solicited);
}

void iwarp_core_qp_recv_imm_complete(struct iwarp_core_qp *qp, uint64_t wr_id,
                                     const struct iwarp_rdmap_imm *imm, bool solicited)
{
    /* RFC 7306 §6.1: the 8 octets go to the ULP in the completion; nothing was placed. */
    struct iwarp_wc wc = {
        .wr_id = wr_id,
        .status = IWARP_WC_SUCCESS,
        .opcode = IWARP_WC_RECV_RDMA_WITH_IMM,
        .byte_len = 0,
        .qp_num = qp->cfg.qp_num,
        .wc_flags = IWARP_WC_WITH_IMM,
    };
    memcpy(&wc.imm_data, imm->data, sizeof wc.imm_data);
    wc.imm_data64 = iwarp_load_be64(imm->data);
    (void)iwarp_core_cq_push(qp->cfg.recv_cq, &wc, solicited);
}

void iwarp_core_qp_event(struct iwarp_core_qp *qp, int event_type, uint32_t cause, bool from_peer)
{
    if (qp->cfg.event)
        qp->cfg.event(qp->cfg.event_user, qp, event_type, cause, from_peer);
}

struct iwarp_core_rqe *iwarp_core_qp_cur_rqe(struct iwarp_core_qp *qp)
{
    if (qp->cfg.srq)
        return qp->srq_taken_count ? &qp->srq_taken[qp->srq_taken_head] : NULL;
    return iwarp_core_rq_peek(&qp->rq);
}

void iwarp_core_qp_pop_rqe(struct iwarp_core_qp *qp)
{
    struct iwarp_core_rqe *r = iwarp_core_qp_cur_rqe(qp);
    if (r)
        iwarp_core_rqe_hold(r, qp->cfg.mem, false);
    if (qp->cfg.srq) {
        if (qp->srq_taken_count) {
            qp->srq_taken_head = iwarp_ring_advance(qp->srq_taken_head, 1, IWARP_CORE_SRQ_WINDOW);
            qp->srq_taken_count--;
        }
    } else if (qp->rq.count) {
        iwarp_core_rq_pop(&qp->rq);
    }
}

/* ---- flushing ------------------------------------------------------------------------------ */

static void flush_rq(struct iwarp_core_qp *qp)
{
    struct iwarp_core_rqe *r;
    while ((r = iwarp_core_qp_cur_rqe(qp)) != NULL) {
        iwarp_core_qp_recv_complete(qp, r->wr_id, IWARP_WC_WR_FLUSH_ERR, 0, 0, false, 0, false);
        iwarp_core_qp_pop_rqe(qp);
        qp->eng.stats.flushed++;
    }
    /* verbs: a QP on an SRQ reports its last WQE once, when it leaves the SRQ for good. */
    if (qp->cfg.srq && !qp->last_wqe_reported) {
        qp->last_wqe_reported = true;
        iwarp_core_qp_event(qp, IWARP_EVENT_QP_LAST_WQE_REACHED, 0, false);
    }
}

static void flush_sq(struct iwarp_core_qp *qp)
{
    /* Everything not finished completes with WR_FLUSH_ERR, in order, signaled or not. */
    qp->orq_count = 0;
    qp->orq_octets = 0;
    qp->irq_count = 0;
    qp->tx_src = IWARP_CORE_TX_NONE;
    qp->tx_imm_next = false;
    /* verbs: after the first error only flushes are reported, so a WR that finished (a Write
     * handed to TCP) but waits behind an unfinished or failed one is flushed too. */
    bool failed = false;
    for (uint32_t i = 0; i < qp->stream.sq_count; i++) {
        struct iwarp_core_sqe *e = &qp->sq[iwarp_core_sq_slot(qp, i)];
        if (!e->done || (failed && e->status == IWARP_WC_SUCCESS)) {
            e->done = true;
            e->status = IWARP_WC_WR_FLUSH_ERR;
            qp->eng.stats.flushed++;
        }
        failed = true; /* every later entry waits behind this one */
    }
    if (qp->stream.sq_count)
        iwarp_core_qp_sq_finish(qp, qp->stream.sq_head, qp->sq[qp->stream.sq_head].status,
                                qp->sq[qp->stream.sq_head].vendor_err);
    iwarp_core_stream_sq_flushed(&qp->stream);
}

/* Flush the RQ now and the SQ as soon as the LLP holds none of its payload. */
static void flush_all(struct iwarp_core_qp *qp)
{
    flush_rq(qp);
    if (iwarp_core_stream_sq_flush_now(&qp->stream))
        flush_sq(qp);
}

void iwarp_core_qp_sq_flush_if_idle(struct iwarp_core_qp *qp)
{
    if (iwarp_core_stream_sq_flush_due(&qp->stream))
        flush_sq(qp);
}

/* ---- state machine (RFC 5040 §5.4) --------------------------------------------------------- */

static int error_event(struct iwarp_term_cause c)
{
    /* Protection errors are access errors (verbs QP_ACCESS_ERR); the rest are fatal. */
    if ((c.layer == IWARP_TERM_LAYER_RDMAP && c.etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT) ||
        (c.layer == IWARP_TERM_LAYER_DDP && c.etype == IWARP_TERM_DDP_ETYPE_TAGGED))
        return IWARP_EVENT_QP_ACCESS_ERR;
    return IWARP_EVENT_QP_FATAL;
}

void iwarp_core_qp_terminate(struct iwarp_core_qp *qp, struct iwarp_term_cause cause,
                             const uint8_t *hdr, size_t hdr_len)
{
    /* RFC 5040 §5.4 / §7.1: the first error is reported with one Terminate; after it the
     * stream places nothing and sends nothing else. */
    if (qp->stream.state >= IWARP_CORE_STREAM_TERMINATING)
        return;
    struct iwarp_term_offender off = {
        .seg = hdr,
        .avail = hdr_len,
        .seg_len = (uint32_t)(hdr_len > UINT32_MAX ? UINT32_MAX : hdr_len),
    };
    iwarp_ssize n = iwarp_term_build(qp->term_buf, sizeof qp->term_buf, cause, hdr ? &off : NULL);
    if (n < 0) /* a cause outside the RFC tables: report a local catastrophic error instead */
        n = iwarp_term_build(qp->term_buf, sizeof qp->term_buf,
                             (struct iwarp_term_cause){IWARP_TERM_LAYER_RDMAP,
                                                       IWARP_TERM_RDMAP_ETYPE_CATASTROPHIC, 0},
                             NULL);
    qp->term_len = n > 0 ? (uint32_t)n : 0;
    qp->term_pending = n > 0;
    qp->term_cause = cause;
    qp->term_from_peer = false;
    qp->stream.state = IWARP_CORE_STREAM_TERMINATING;
    qp->eng.stats.term_sent[iwarp_core_term_class(cause)]++;
    iwarp_core_qp_event(qp, error_event(cause), iwarp_core_cause_u32(cause), false);
    flush_all(qp);
}

void iwarp_core_qp_peer_terminated(struct iwarp_core_qp *qp, struct iwarp_term_cause cause)
{
    if (qp->stream.state >= IWARP_CORE_STREAM_TERMINATING)
        return;
    /* RFC 5040 §5.4: a Terminate received ends the stream; no Terminate is sent back. */
    qp->term_cause = cause;
    qp->term_from_peer = true;
    qp->stream.state = IWARP_CORE_STREAM_TERMINATING;
    qp->eng.stats.term_rcvd[iwarp_core_term_class(cause)]++;
    /* An RDMAP remote error ends the oldest outstanding Read or Atomic Request with the remote
     * status: the responder checks them (RFC 5040 §7.2, RFC 7306 §8.2: 0/1/x protection, 0/2/x
     * operation; a peer without RFC 7306 answers an atomic with 0/2/0x06, §1.1); our
     * Sends and Writes were already complete, and DDP/LLP causes concern the stream. */
    if (qp->orq_count && cause.layer == IWARP_TERM_LAYER_RDMAP &&
        cause.etype != IWARP_TERM_RDMAP_ETYPE_CATASTROPHIC) {
        uint8_t st = cause.etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT ? IWARP_WC_REM_ACCESS_ERR
                                                                       : IWARP_WC_REM_OP_ERR;
        struct iwarp_core_sqe *e = &qp->sq[qp->orq[qp->orq_head].sq_index];
        e->done = true;
        e->status = st;
        e->vendor_err = iwarp_core_cause_u32(cause);
    }
    iwarp_core_qp_event(qp, error_event(cause), iwarp_core_cause_u32(cause), true);
    flush_all(qp);
}

void iwarp_core_qp_disconnect(struct iwarp_core_qp *qp)
{
    if (qp->stream.state == IWARP_CORE_STREAM_RUNNING)
        qp->stream.state = IWARP_CORE_STREAM_CLOSING;
}

void iwarp_core_qp_llp_closed(struct iwarp_core_qp *qp, bool graceful)
{
    bool fatal;
    if (!iwarp_core_stream_llp_closed(&qp->stream, graceful, &fatal))
        return;
    if (fatal)
        iwarp_core_qp_event(qp, IWARP_EVENT_QP_FATAL, 0, false);
    flush_rq(qp);
    flush_sq(qp);
}

void iwarp_core_qp_set_error(struct iwarp_core_qp *qp)
{
    if (qp->stream.state == IWARP_CORE_STREAM_ERROR)
        return;
    qp->stream.state = IWARP_CORE_STREAM_ERROR;
    flush_all(qp);
}

enum iwarp_qp_state iwarp_core_qp_verbs_state(const struct iwarp_core_qp *qp)
{
    return iwarp_core_stream_verbs_state(&qp->stream);
}

/* ---- posting ------------------------------------------------------------------------------- */

/* Resolve the SGEs of a source (Send/Write: need 0) or sink (Read) into e->iov. */
static int resolve_sges(struct iwarp_core_qp *qp, struct iwarp_core_sqe *e,
                        const struct iwarp_send_wr *wr, uint32_t need)
{
    e->nsge = (uint32_t)wr->num_sge;
    return iwarp_core_sge_resolve(qp->cfg.mem, qp->cfg.pd, need, wr->sg_list, e->nsge, e->iov,
                                  &e->held, &e->len);
}

static int copy_inline(struct iwarp_core_qp *qp, struct iwarp_core_sqe *e,
                       const struct iwarp_send_wr *wr)
{
    uint64_t total = 0;
    for (int i = 0; i < wr->num_sge; i++)
        total += wr->sg_list[i].length;
    if (total > qp->cfg.max_inline)
        return IWARP_ERR_INVAL;
    uint32_t off = 0;
    for (int i = 0; i < wr->num_sge; i++) {
        if (wr->sg_list[i].length)
            iwarp_copy(e->inline_buf + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
                       wr->sg_list[i].length);
        off += wr->sg_list[i].length;
    }
    e->iov[0].iov_base = e->inline_buf;
    e->iov[0].iov_len = off;
    e->nsge = 1;
    e->len = off;
    return 0;
}

/* The Atomic Request fields of an atomic WR (RFC 7306 §5.2.1 Figure 5): the verbs opcodes
 * are the unmasked forms, Add Mask 0 and all-ones Swap and Compare Masks; for FetchAdd the
 * Compare Data is 0 and the Compare Mask all ones ("set ... on transmit"). */
static void fill_atomic(struct iwarp_core_sqe *e, const struct iwarp_send_wr *wr)
{
    const uint64_t all = UINT64_MAX;
    bool masked = wr->opcode == IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD ||
                  wr->opcode == IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP;
    e->remote_addr = wr->wr.atomic.remote_addr;
    e->rkey = wr->wr.atomic.rkey;
    if (wr->opcode == IWARP_WR_ATOMIC_FETCH_AND_ADD ||
        wr->opcode == IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD) {
        e->aopcode = IWARP_ATOMIC_FETCH_ADD;
        e->add_swap = wr->wr.atomic.compare_add;
        e->add_swap_mask = masked ? wr->masked_atomic.compare_add_mask : 0;
        e->compare = 0;
        e->compare_mask = all;
    } else {
        e->aopcode = IWARP_ATOMIC_CMP_SWAP;
        e->add_swap = wr->wr.atomic.swap;
        e->add_swap_mask = masked ? wr->masked_atomic.swap_mask : all;
        e->compare = wr->wr.atomic.compare_add;
        e->compare_mask = masked ? wr->masked_atomic.compare_add_mask : all;
    }
}

/* The RFC 7306 WRs: refused unless the connection enabled their extension (RFC 7306 §1.1). */
static int fill_rdmap_ext(struct iwarp_core_qp *qp, struct iwarp_core_sqe *e,
                          const struct iwarp_send_wr *wr)
{
    bool atomic = wr->opcode != IWARP_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IWARP_WR_IMM_DATA;
    uint32_t need = atomic ? IWARP_RDMAP_EXT_ATOMICS : IWARP_RDMAP_EXT_IMM_DATA;
    if (!(qp->cfg.rdmap_ext & need))
        return IWARP_ERR_RDMAP_EXT_OFF;
    if (wr->opcode == IWARP_WR_IMM_DATA) {
        /* RFC 7306 §6.3: exactly the 8 octets, no payload. */
        if (wr->num_sge != 0)
            return IWARP_ERR_INVAL;
        iwarp_store_be64(e->imm, wr->imm_data64);
        return 0;
    }
    if (!atomic) {
        /* verbs imm_data is 4 opaque octets: Immediate Data octets 0-3, then zeros. */
        if ((uint32_t)wr->num_sge > qp->cfg.max_send_sge)
            return IWARP_ERR_INVAL;
        memcpy(e->imm, &wr->imm_data, sizeof wr->imm_data);
        e->remote_addr = wr->wr.rdma.remote_addr;
        e->rkey = wr->wr.rdma.rkey;
        return (wr->send_flags & IWARP_SEND_INLINE) ? copy_inline(qp, e, wr)
                                                    : resolve_sges(qp, e, wr, 0);
    }
    /* One 8-octet sink for the Original Remote Data Value; ORD 0: never issued (as a Read). */
    if ((wr->send_flags & IWARP_SEND_INLINE) || wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
        qp->ord == 0)
        return IWARP_ERR_INVAL;
    fill_atomic(e, wr);
    return resolve_sges(qp, e, wr, IWARP_MEM_ACCESS_LOCAL_WRITE);
}

static int fill_sqe(struct iwarp_core_qp *qp, struct iwarp_core_sqe *e,
                    const struct iwarp_send_wr *wr)
{
    const unsigned known =
        IWARP_SEND_FENCE | IWARP_SEND_SIGNALED | IWARP_SEND_SOLICITED | IWARP_SEND_INLINE;
    if ((wr->send_flags & ~known) || wr->num_sge < 0 || (wr->num_sge > 0 && !wr->sg_list))
        return IWARP_ERR_INVAL;
    memset(e, 0, offsetof(struct iwarp_core_sqe, held));
    e->held.n = 0;
    e->wr_id = wr->wr_id;
    e->opcode = (uint8_t)wr->opcode;
    e->flags = (uint8_t)wr->send_flags;
    e->signaled = qp->cfg.sq_sig_all || (wr->send_flags & IWARP_SEND_SIGNALED);
    bool inl = wr->send_flags & IWARP_SEND_INLINE;
    switch (wr->opcode) {
    case IWARP_WR_SEND_WITH_INV:
    case IWARP_WR_SEND:
    case IWARP_WR_RDMA_WRITE:
        if ((uint32_t)wr->num_sge > qp->cfg.max_send_sge)
            return IWARP_ERR_INVAL;
        if (wr->opcode == IWARP_WR_SEND_WITH_INV)
            e->inv_stag = wr->invalidate_rkey;
        if (wr->opcode == IWARP_WR_RDMA_WRITE) {
            e->remote_addr = wr->wr.rdma.remote_addr;
            e->rkey = wr->wr.rdma.rkey;
        }
        return inl ? copy_inline(qp, e, wr) : resolve_sges(qp, e, wr, 0);
    case IWARP_WR_RDMA_READ: {
        /* One sink SGE (siw's max_sge_rd), written by tagged Read Responses. With ORD 0 no
         * Read Request may ever be outstanding (RFC 5040 §5.4): it would wait forever. */
        if (inl || (uint32_t)wr->num_sge > IWARP_CORE_MAX_SGE_RD || qp->ord == 0)
            return IWARP_ERR_INVAL;
        e->remote_addr = wr->wr.rdma.remote_addr;
        e->rkey = wr->wr.rdma.rkey;
        int rc = resolve_sges(qp, e, wr, IWARP_MEM_ACCESS_LOCAL_WRITE);
        if (rc == 0 && wr->num_sge == 1) {
            e->lkey0 = wr->sg_list[0].lkey;
            e->laddr0 = wr->sg_list[0].addr;
        }
        return rc;
    }
    case IWARP_WR_LOCAL_INV:
        e->stag = wr->invalidate_rkey;
        return 0;
    case IWARP_WR_BIND_MW:
        if (!wr->bind_mw.mw)
            return IWARP_ERR_INVAL;
        e->stag = wr->bind_mw.mw->rkey;
        e->new_stag = wr->bind_mw.rkey;
        e->mr_stag = wr->bind_mw.bind_info.mr ? wr->bind_mw.bind_info.mr->lkey : 0;
        e->addr = wr->bind_mw.bind_info.addr;
        e->length = wr->bind_mw.bind_info.length;
        e->access = wr->bind_mw.bind_info.mw_access_flags;
        return 0;
    case IWARP_WR_REG_MR:
        if (!wr->reg.mr)
            return IWARP_ERR_INVAL;
        e->stag = wr->reg.mr->lkey;
        e->new_stag = (wr->reg.mr->lkey & 0xFFFFFF00u) | (wr->reg.key & 0xFFu);
        e->addr = (uint64_t)(uintptr_t)wr->reg.addr;
        e->length = wr->reg.length;
        e->access = wr->reg.access;
        return 0;
    case IWARP_WR_RDMA_WRITE_WITH_IMM:
    case IWARP_WR_IMM_DATA:
    case IWARP_WR_ATOMIC_FETCH_AND_ADD:
    case IWARP_WR_ATOMIC_CMP_AND_SWP:
    case IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD:
    case IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP:
        return fill_rdmap_ext(qp, e, wr);
    case IWARP_WR_SEND_WITH_IMM:
        /* RFC 7306 has no Send with Immediate Data (docs/design.md, "Immediate Data"). */
        return IWARP_ERR_NOTSUP;
    default:
        return IWARP_ERR_INVAL; /* TSO, DRIVER1 and unknown opcodes */
    }
}

int iwarp_core_qp_post_send(struct iwarp_core_qp *qp, const struct iwarp_send_wr *wr)
{
    if (qp->stream.state == IWARP_CORE_STREAM_IDLE || qp->stream.state == IWARP_CORE_STREAM_CLOSING)
        return IWARP_ERR_STATE;
    if (iwarp_core_stream_sq_full(&qp->stream))
        return IWARP_ERR_NOSPC;
    struct iwarp_core_sqe *e = &qp->sq[iwarp_core_sq_slot(qp, qp->stream.sq_count)];
    int rc = fill_sqe(qp, e, wr);
    if (rc < 0)
        return rc;
    iwarp_core_stream_sq_post(&qp->stream);
    /* verbs: WRs posted to a QP in error complete at once with WR_FLUSH_ERR. */
    if (qp->stream.state >= IWARP_CORE_STREAM_TERMINATING &&
        iwarp_core_stream_sq_flush_now(&qp->stream))
        flush_sq(qp);
    return 0;
}

int iwarp_core_qp_post_recv(struct iwarp_core_qp *qp, const struct iwarp_recv_wr *wr)
{
    if (qp->cfg.srq)
        return IWARP_ERR_INVAL;
    if (qp->rq.count == qp->rq.cap)
        return IWARP_ERR_NOSPC;
    struct iwarp_core_rqe rqe;
    int rc = iwarp_core_rqe_from_wr(&rqe, wr, qp->cfg.max_recv_sge, qp->cfg.mem, qp->cfg.pd);
    if (rc < 0)
        return rc;
    if (qp->stream.state >= IWARP_CORE_STREAM_TERMINATING) {
        iwarp_core_qp_recv_complete(qp, rqe.wr_id, IWARP_WC_WR_FLUSH_ERR, 0, 0, false, 0, false);
        qp->eng.stats.flushed++;
        return 0;
    }
    rc = iwarp_core_rq_push(&qp->rq, &rqe);
    if (rc == 0)
        rc = iwarp_ddp_rx_uq_post(&qp->uq_send, rqe.len);
    if (rc == 0)
        iwarp_core_rqe_hold(&rqe, qp->cfg.mem, true);
    return rc;
}

void iwarp_core_qp_fini(struct iwarp_core_qp *qp)
{
    /* Whatever was never completed (a flush still waiting for the LLP) lets go of its MRs. */
    iwarp_core_stream_fini(&qp->stream);
    while (iwarp_core_qp_cur_rqe(qp) != NULL)
        iwarp_core_qp_pop_rqe(qp);
}

bool iwarp_core_qp_is_atomic(uint8_t wr_opcode)
{
    return wr_opcode == IWARP_WR_ATOMIC_FETCH_AND_ADD || wr_opcode == IWARP_WR_ATOMIC_CMP_AND_SWP ||
           wr_opcode == IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD ||
           wr_opcode == IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP;
}
