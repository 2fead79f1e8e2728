/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP engine's transmit side: turns SQ work requests, inbound RDMA Reads (IRQ) and the
 * Terminate into DDP segments for the LLP, and finishes work when the LLP has sent them.
 *
 * Scheduling: the Terminate goes first. Otherwise one message at a time, alternating at
 * message boundaries between the SQ and the IRQ when both have work, so Read Responses are
 * produced while the SQ is busy and neither starves. Messages never interleave at segment
 * level: siw drops a stream where a tagged message interrupts an unfinished tagged one, or an
 * untagged one an unfinished untagged one (docs/interop-siw.md).
 */
#include <string.h>

#include "core/core_qp.h"
#include "core/core_qp_int.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"
#include "util/bytes.h"
#include "util/ring.h"

/* Local operations (no wire traffic) finish as soon as the TX side reaches them, in order. */
static void run_local_op(struct iwarp_core_qp *qp, uint32_t index, struct iwarp_core_sqe *e)
{
    int rc = 0;
    uint8_t status = IWARP_WC_SUCCESS;
    switch (e->opcode) {
    case IWARP_WR_LOCAL_INV:
        /* RFC 5040 §6.2: local invalidate. */
        rc = iwarp_mem_local_inv(qp->cfg.mem, e->stag, qp->cfg.pd);
        status = IWARP_WC_LOC_PROT_ERR;
        break;
    case IWARP_WR_BIND_MW: {
        struct iwarp_mem_bind b = {.mr_stag = e->mr_stag,
                                   .addr = e->addr,
                                   .length = e->length,
                                   .access = e->access,
                                   .new_stag = e->new_stag};
        uint32_t out = 0;
        rc = iwarp_mem_bind_mw(qp->cfg.mem, e->stag, qp->cfg.pd, qp->cfg.qp_num, &b, &out);
        status = IWARP_WC_MW_BIND_ERR;
        break;
    }
    case IWARP_WR_REG_MR: {
        struct iwarp_mem_range r = {
            .addr = e->addr, .iova = e->addr, .length = e->length, .access = e->access};
        rc = iwarp_mem_fast_reg(qp->cfg.mem, e->stag, qp->cfg.pd, e->new_stag, &r);
        status = IWARP_WC_LOC_PROT_ERR;
        break;
    }
    default:
        rc = IWARP_ERR_INVAL;
        status = IWARP_WC_LOC_QP_OP_ERR;
    }
    iwarp_core_qp_sq_finish(qp, index, rc == 0 ? IWARP_WC_SUCCESS : status, 0);
}

static bool is_local_op(uint8_t opcode)
{
    return opcode == IWARP_WR_LOCAL_INV || opcode == IWARP_WR_BIND_MW || opcode == IWARP_WR_REG_MR;
}

/* Whether an SQ entry waits for a response (an RDMA Read or an atomic): it takes an ORQ slot. */
static bool needs_orq(uint8_t wr_opcode)
{
    return wr_opcode == IWARP_WR_RDMA_READ || iwarp_core_qp_is_atomic(wr_opcode);
}

/* The Immediate Data message that follows the Write of a Write with Immediate (RFC 7306 §1:
 * "an RDMA Write Message followed by an Immediate Data message"), on queue 0 after it. */
static void start_imm_after_write(struct iwarp_core_qp *qp)
{
    const struct iwarp_core_sqe *e = &qp->sq[qp->tx_index];
    struct iwarp_wire_msg wm = {.opcode = (e->flags & IWARP_SEND_SOLICITED)
                                              ? IWARP_RDMAP_OP_IMM_DATA_SE
                                              : IWARP_RDMAP_OP_IMM_DATA,
                                .msn = qp->send_msn++};
    memcpy(wm.body.imm.data, e->imm, sizeof wm.body.imm.data);
    (void)iwarp_ddp_tx_init(&qp->tx_msg, &wm, NULL, 0, 0); /* one fixed segment: cannot fail */
    qp->tx_imm_next = false;
    qp->tx_rdmap_ext_sent = true;
}

/* Whether a Read or Atomic Request at the SQ's head waits. RFC 5040 §5.4, RFC 7306 §5.2: at
 * most ORD of them outstanding, counted together. Besides, while they are many (half the ORD)
 * and large (read_batch_octets of responses still to come, which keep the responder busy for
 * longer than a Request's trip), new Requests wait until half of those have completed and
 * then go together, until the ORD is full: one system call, and one segment for the peer to
 * take in, for many Reads instead of one each (docs/design.md, "Read Requests in batches"). */
static bool orq_waits(const struct iwarp_core_qp *qp)
{
    if (qp->orq_count >= qp->ord)
        return true;
    return !qp->orq_refill && qp->orq_count >= 2 && qp->orq_count >= qp->ord / 2 &&
           qp->orq_octets >= qp->cfg.read_batch_octets;
}

/* Start the next SQ message. Returns true when tx_msg holds it. */
static bool start_sq(struct iwarp_core_qp *qp)
{
    while (qp->stream.sq_next < qp->stream.sq_count) {
        uint32_t index = iwarp_core_sq_slot(qp, qp->stream.sq_next);
        struct iwarp_core_sqe *e = &qp->sq[index];
        /* Fence: wait until every prior RDMA Read has completed (RFC 5040 §5.5, verbs). */
        if ((e->flags & IWARP_SEND_FENCE) && qp->orq_count)
            return false;
        if (is_local_op(e->opcode)) {
            qp->stream.sq_next++;
            e->started = true;
            run_local_op(qp, index, e);
            continue;
        }
        if (!iwarp_core_held_usable(&e->held, qp->cfg.mem)) {
            /* an MR it names was deregistered since the post: its memory may be gone */
            qp->stream.sq_next++;
            iwarp_core_qp_sq_finish(qp, index, IWARP_WC_LOC_PROT_ERR, 0);
            continue;
        }
        struct iwarp_wire_msg wm = {0};
        const struct iovec *iov = e->iov;
        size_t iovcnt = e->nsge;
        uint32_t len = e->len;
        bool se = e->flags & IWARP_SEND_SOLICITED;
        if (needs_orq(e->opcode)) {
            /* The SQ waits for a free slot (orq_waits); the Requests go on queue 1 with one MSN
             * sequence and carry no payload. */
            if (orq_waits(qp))
                return false;
            wm.msn = qp->read_msn++;
            iov = NULL;
            iovcnt = 0;
            len = 0;
        }
        switch (e->opcode) {
        case IWARP_WR_SEND:
            wm.opcode = se ? IWARP_RDMAP_OP_SEND_SE : IWARP_RDMAP_OP_SEND;
            wm.msn = qp->send_msn++;
            break;
        case IWARP_WR_SEND_WITH_INV:
            wm.opcode = se ? IWARP_RDMAP_OP_SEND_SE_INV : IWARP_RDMAP_OP_SEND_INV;
            wm.msn = qp->send_msn++;
            wm.inv_stag = e->inv_stag;
            break;
        case IWARP_WR_RDMA_WRITE:
        case IWARP_WR_RDMA_WRITE_WITH_IMM:
            wm.opcode = IWARP_RDMAP_OP_WRITE;
            wm.stag = e->rkey;
            wm.to = e->remote_addr;
            qp->tx_imm_next = e->opcode == IWARP_WR_RDMA_WRITE_WITH_IMM;
            break;
        case IWARP_WR_IMM_DATA:
            /* RFC 7306 §6.3: queue 0, the MSN sequence of the Sends. */
            wm.opcode = se ? IWARP_RDMAP_OP_IMM_DATA_SE : IWARP_RDMAP_OP_IMM_DATA;
            wm.msn = qp->send_msn++;
            memcpy(wm.body.imm.data, e->imm, sizeof wm.body.imm.data);
            break;
        case IWARP_WR_ATOMIC_FETCH_AND_ADD:
        case IWARP_WR_ATOMIC_CMP_AND_SWP:
        case IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD:
        case IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP:
            wm.opcode = IWARP_RDMAP_OP_ATOMIC_REQ;
            wm.body.atomic_req = (struct iwarp_rdmap_atomic_req){.aopcode = e->aopcode,
                                                                 .req_id = qp->atomic_req_id,
                                                                 .stag = e->rkey,
                                                                 .to = e->remote_addr,
                                                                 .add_swap = e->add_swap,
                                                                 .add_swap_mask = e->add_swap_mask,
                                                                 .compare = e->compare,
                                                                 .compare_mask = e->compare_mask};
            break;
        case IWARP_WR_RDMA_READ:
            wm.opcode = IWARP_RDMAP_OP_READ_REQ;
            wm.body.read_req = (struct iwarp_rdmap_read_req){.sink_stag = e->lkey0,
                                                             .sink_to = e->laddr0,
                                                             .size = e->len,
                                                             .src_stag = e->rkey,
                                                             .src_to = e->remote_addr};
            break;
        default:
            qp->stream.sq_next++;
            iwarp_core_qp_sq_finish(qp, index, IWARP_WC_LOC_QP_OP_ERR, 0);
            continue;
        }
        if (iwarp_ddp_tx_init(&qp->tx_msg, &wm, iov, iovcnt, len) < 0) {
            /* e.g. a tagged TO + length that wraps 64 bits (RFC 5041 §7.1) */
            qp->stream.sq_next++;
            qp->tx_imm_next = false;
            iwarp_core_qp_sq_finish(qp, index, IWARP_WC_LOC_LEN_ERR, 0);
            continue;
        }
        if (needs_orq(e->opcode)) {
            struct iwarp_core_orqe *o =
                &qp->orq[iwarp_ring_slot(qp->orq_head, qp->orq_count, IWARP_CORE_MAX_ORD)];
            *o = (struct iwarp_core_orqe){.atomic = e->opcode != IWARP_WR_RDMA_READ,
                                          .req_id = qp->atomic_req_id,
                                          .sq_index = index,
                                          .sink_stag = e->lkey0,
                                          .sink_to = e->laddr0,
                                          .len = e->len};
            if (o->atomic)
                qp->atomic_req_id++;
            qp->orq_count++;
            qp->orq_octets += e->len;
            /* a batch goes on until the SQ has no more or the ORD is full */
            qp->orq_refill = qp->orq_count < qp->ord;
        }
        e->started = true;
        if (wm.opcode >= IWARP_RDMAP_OP_IMM_DATA) /* RFC 7306 Figure 2: 0x8..0xA from the SQ */
            qp->tx_rdmap_ext_sent = true;
        qp->stream.sq_next++;
        qp->tx_src = IWARP_CORE_TX_SQ;
        qp->tx_index = index;
        return true;
    }
    qp->orq_refill = false; /* a batch of Requests ends with what was posted */
    return false;
}

/* Start answering the oldest inbound Read not yet started. */
static bool start_irq(struct iwarp_core_qp *qp)
{
    for (uint32_t i = 0; i < qp->irq_count; i++) {
        uint32_t index = iwarp_ring_slot(qp->irq_head, i, IWARP_CORE_MAX_IRD);
        struct iwarp_core_irqe *r = &qp->irq[index];
        if (r->started)
            continue;
        if (r->atomic) {
            /* RFC 7306 §5.2.2 rules 3 and 8: queue 3, in the order the requests came. */
            struct iwarp_wire_msg wm = {
                .opcode = IWARP_RDMAP_OP_ATOMIC_RESP,
                .msn = qp->atomic_resp_msn++,
                .body.atomic_resp = {.req_id = r->req_id, .orig_value = r->orig_value}};
            (void)iwarp_ddp_tx_init(&qp->tx_msg, &wm, NULL, 0, 0); /* one fixed segment */
        } else {
            /* RFC 5040 §4.5: the Read Response is a tagged message to the Data Sink STag/TO. */
            struct iwarp_wire_msg wm = {
                .opcode = IWARP_RDMAP_OP_READ_RESP, .stag = r->sink_stag, .to = r->sink_to};
            qp->tx_iov[0].iov_base = (void *)(uintptr_t)r->src_addr;
            qp->tx_iov[0].iov_len = r->len;
            if (iwarp_ddp_tx_init(&qp->tx_msg, &wm, qp->tx_iov, 1, r->len) < 0)
                return false; /* cannot happen: the Read Request was validated on arrival */
        }
        r->started = true;
        qp->tx_src = IWARP_CORE_TX_IRQ;
        qp->tx_index = index;
        return true;
    }
    return false;
}

static bool irq_ready(const struct iwarp_core_qp *qp)
{
    for (uint32_t i = 0; i < qp->irq_count; i++)
        if (!qp->irq[iwarp_ring_slot(qp->irq_head, i, IWARP_CORE_MAX_IRD)].started)
            return true;
    return false;
}

static bool pick_message(struct iwarp_core_qp *qp)
{
    if (qp->tx_irq_turn) {
        qp->tx_irq_turn = false;
        if (start_irq(qp))
            return true;
        return start_sq(qp);
    }
    bool started = start_sq(qp);
    if (started) {
        qp->tx_irq_turn = irq_ready(qp);
        return true;
    }
    return start_irq(qp);
}

/* RFC 5040 §7.2: a local failure of the sender ends the stream as a local catastrophic error. */
static const struct iwarp_term_cause tx_catastrophic = {IWARP_TERM_LAYER_RDMAP,
                                                        IWARP_TERM_RDMAP_ETYPE_CATASTROPHIC, 0};

/* Whether the Read Response being produced may still read its Data Source. It was validated
 * when the Read Request arrived; an STag invalidated, deregistered or rebound since (the mem
 * table's gen moved) is validated again (RFC 5040 §7.2 checks 4a-4e), so the Response never
 * reads memory its application has let go of. On failure *cause is the Terminate's. */
static bool read_source_valid(struct iwarp_core_qp *qp, struct iwarp_core_irqe *r,
                              struct iwarp_term_cause *cause)
{
    const struct iwarp_mem_table *mem = qp->cfg.mem;
    if (r->atomic || r->src_gen == mem->gen || qp->tx_msg.sent >= qp->tx_msg.len)
        return true;
    struct iwarp_mem_req req =
        iwarp_core_qp_mem_req(qp, r->src_stag, r->src_to, r->len, IWARP_MEM_ACCESS_REMOTE_READ);
    uint64_t addr = 0;
    *cause = (struct iwarp_term_cause){IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT,
                                       IWARP_TERM_RDMAP_INVALID_STAG};
    if (iwarp_mem_check_tagged(mem, &req, IWARP_MEM_CAUSE_RDMAP, &addr, cause) != 0 ||
        addr != r->src_addr)
        return false;
    r->src_gen = mem->gen;
    return true;
}

/* The DDP and RDMAP headers of a whole one-segment RDMA Write or Send / Send with SE
 * (RFC 5041 §4.2, §4.3; RFC 5040 §4.1 Figure 4): L set, DV 1, RV 1; a Write tagged with the
 * WR's STag and TO, a Send untagged with a zero Invalidate STag, QN 0, the given MSN, MO 0.
 * Returns the header's length. */
static uint32_t predicted_hdr(uint8_t *hdr, const struct iwarp_core_sqe *e, uint32_t msn)
{
    hdr[0] = IWARP_DDP_FLAG_LAST | IWARP_DDP_VERSION;
    if (e->opcode == IWARP_WR_RDMA_WRITE) {
        hdr[0] |= IWARP_DDP_FLAG_TAGGED;
        hdr[1] = iwarp_rdmap_ctrl(IWARP_RDMAP_OP_WRITE);
        iwarp_store_be32(hdr + 2, e->rkey);
        iwarp_store_be64(hdr + 6, e->remote_addr);
        return IWARP_DDP_TAGGED_HDR_LEN;
    }
    bool se = e->flags & IWARP_SEND_SOLICITED;
    hdr[1] = iwarp_rdmap_ctrl(se ? IWARP_RDMAP_OP_SEND_SE : IWARP_RDMAP_OP_SEND);
    iwarp_store_be32(hdr + 2, 0); /* no STag to invalidate */
    iwarp_store_be32(hdr + 6, IWARP_QN_SEND);
    iwarp_store_be32(hdr + 10, msn);
    iwarp_store_be32(hdr + 14, 0); /* MO: the message's first (and only) segment */
    return IWARP_DDP_UNTAGGED_HDR_LEN;
}

/*
 * Header prediction on transmit, the counterpart of core_qp_rx.c's: with no inbound Read to
 * answer, a Send (or Send with SE) or an RDMA Write at the SQ's head whose payload fits one
 * segment is produced at once: its header written octet for octet (predicted_hdr: what the
 * general encoder writes for it, as the unit tests and fuzz_core_qp_tx check on both paths),
 * its payload the WR's own gather list, and the state start_sq() and iwarp_ddp_tx_next() would
 * leave behind it (the WR started, the Send MSN counted, the transmitter free for the next
 * message). Any other WR, or one that does not fit, starts the general way. Returns whether seg
 * holds the segment.
 */
static bool tx_predicted(struct iwarp_core_qp *qp, uint32_t max_seg, struct iwarp_core_tx_seg *seg)
{
    if (qp->irq_count != 0 || qp->stream.sq_next >= qp->stream.sq_count)
        return false;
    uint32_t index = iwarp_core_sq_slot(qp, qp->stream.sq_next);
    struct iwarp_core_sqe *e = &qp->sq[index];
    bool write = e->opcode == IWARP_WR_RDMA_WRITE;
    uint32_t hlen = write ? IWARP_DDP_TAGGED_HDR_LEN : IWARP_DDP_UNTAGGED_HDR_LEN;
    if ((!write && e->opcode != IWARP_WR_SEND) || (e->flags & IWARP_SEND_FENCE) || e->len == 0 ||
        max_seg <= hlen || e->len > max_seg - hlen || e->nsge > IWARP_CORE_TX_IOV_MAX ||
        (write && e->len > UINT64_MAX - e->remote_addr) ||
        !iwarp_core_held_usable(&e->held, qp->cfg.mem))
        return false;
    seg->hdr_len = predicted_hdr(seg->hdr, e, write ? 0 : qp->send_msn);
    uint32_t n = 0;
    for (uint32_t i = 0; i < e->nsge; i++) /* the empty pieces carry nothing (ddp_tx.c) */
        if (e->iov[i].iov_len != 0)
            seg->iov[n++] = e->iov[i];
    seg->niov = n;
    seg->payload_len = e->len;
    seg->src = IWARP_CORE_TX_SQ;
    seg->index = index;
    seg->last = seg->wr_done = true;
    if (!write)
        qp->send_msn++;
    e->started = true;
    qp->stream.sq_next++;
    qp->tx_index = index;
    qp->tx_irq_turn = false; /* pick_message's: no inbound Read waits for a turn */
    iwarp_core_stream_tx_produced(&qp->stream);
    return true;
}

int iwarp_core_qp_tx_next(struct iwarp_core_qp *qp, uint32_t max_seg, struct iwarp_core_tx_seg *seg)
{
    if (qp->term_pending) {
        memcpy(seg->hdr, qp->term_buf, qp->term_len);
        seg->hdr_len = qp->term_len;
        seg->niov = 0;
        seg->payload_len = 0;
        seg->src = IWARP_CORE_TX_TERM;
        seg->last = true;
        seg->wr_done = false; /* no WR: every field of seg is set, whatever its source */
        seg->index = 0;
        qp->term_pending = false;
        qp->term_produced = true;
        iwarp_core_stream_tx_produced(&qp->stream);
        return 1;
    }
    if (!iwarp_core_stream_open(&qp->stream))
        return 0;
    if (qp->tx_src == IWARP_CORE_TX_NONE && qp->tx_predict && tx_predicted(qp, max_seg, seg)) {
        qp->tx_predicted++;
        return 1;
    }
    if (qp->tx_src == IWARP_CORE_TX_NONE && !pick_message(qp))
        return 0;
    if (qp->tx_src == IWARP_CORE_TX_SQ && qp->tx_msg.sent < qp->tx_msg.len &&
        !iwarp_core_held_usable(&qp->sq[qp->tx_index].held, qp->cfg.mem)) {
        /* Deregistered while its message was half sent: the rest cannot be read and the
         * peer holds a partial message, so the stream ends (a local catastrophic error). */
        iwarp_core_qp_terminate(qp, tx_catastrophic, NULL, 0);
        return iwarp_core_qp_tx_next(qp, max_seg, seg);
    }
    struct iwarp_term_cause cause;
    if (qp->tx_src == IWARP_CORE_TX_IRQ && !read_source_valid(qp, &qp->irq[qp->tx_index], &cause)) {
        iwarp_core_qp_terminate(qp, cause, NULL, 0);
        return iwarp_core_qp_tx_next(qp, max_seg, seg);
    }
    size_t niov = 0;
    iwarp_ssize h = iwarp_ddp_tx_next(&qp->tx_msg, max_seg, seg->hdr, sizeof seg->hdr, seg->iov,
                                      IWARP_CORE_TX_IOV_MAX, &niov);
    if (h <= 0) {
        /* max_seg below the header size or a gather list longer than the iov array: a
         * programming error of the LLP, reported as a local catastrophic error. */
        iwarp_core_qp_terminate(qp, tx_catastrophic, NULL, 0);
        return iwarp_core_qp_tx_next(qp, max_seg, seg);
    }
    seg->hdr_len = (uint32_t)h;
    seg->niov = (uint32_t)niov;
    uint32_t pl = 0;
    for (size_t i = 0; i < niov; i++)
        pl += (uint32_t)seg->iov[i].iov_len;
    seg->payload_len = pl;
    seg->src = qp->tx_src;
    seg->index = qp->tx_index;
    seg->last = iwarp_ddp_tx_done(&qp->tx_msg);
    seg->wr_done = seg->last && !(qp->tx_src == IWARP_CORE_TX_SQ && qp->tx_imm_next);
    if (seg->last && !seg->wr_done)
        start_imm_after_write(qp); /* the SQ keeps the transmitter: nothing comes between */
    else if (seg->last)
        qp->tx_src = IWARP_CORE_TX_NONE;
    iwarp_core_stream_tx_produced(&qp->stream);
    return 1;
}

void iwarp_core_qp_tx_sent(struct iwarp_core_qp *qp, const struct iwarp_core_tx_seg *seg)
{
    (void)iwarp_core_stream_tx_returned(&qp->stream);
    if (seg->src == IWARP_CORE_TX_TERM) {
        qp->term_sent = true;
    } else if (seg->wr_done && qp->stream.state != IWARP_CORE_STREAM_ERROR &&
               !qp->stream.sq_flush_pending) {
        if (seg->src == IWARP_CORE_TX_SQ) {
            /* Send and Write complete once handed to the LLP (see verbs.h), a Write with
             * Immediate once its Immediate Data is; a Read completes when its last Read
             * Response has been placed, an atomic with its Atomic Response (core_qp_rx.c). */
            if (!needs_orq(qp->sq[seg->index].opcode))
                iwarp_core_qp_sq_finish(qp, seg->index, IWARP_WC_SUCCESS, 0);
        } else if (seg->src == IWARP_CORE_TX_IRQ && qp->irq_count && seg->index == qp->irq_head) {
            qp->irq_head = iwarp_ring_advance(qp->irq_head, 1, IWARP_CORE_MAX_IRD);
            qp->irq_count--;
            iwarp_core_qp_rx_read_slot_free(qp);
        }
    }
    iwarp_core_qp_sq_flush_if_idle(qp);
}

bool iwarp_core_qp_tx_pending(const struct iwarp_core_qp *qp)
{
    if (qp->term_pending)
        return true;
    if (!iwarp_core_stream_open(&qp->stream))
        return false;
    if (qp->tx_src != IWARP_CORE_TX_NONE || irq_ready(qp))
        return true;
    if (qp->stream.sq_next < qp->stream.sq_count) {
        const struct iwarp_core_sqe *e = &qp->sq[iwarp_core_sq_slot(qp, qp->stream.sq_next)];
        if ((e->flags & IWARP_SEND_FENCE) && qp->orq_count)
            return false;
        /* as start_sq: a deregistered head completes in error even while the ORD is full */
        if (needs_orq(e->opcode) && orq_waits(qp) && iwarp_core_held_usable(&e->held, qp->cfg.mem))
            return false;
        return true;
    }
    return false;
}

uint32_t iwarp_core_qp_tx_read_resp_max(const struct iwarp_core_qp *qp, uint32_t max_seg)
{
    if (qp->term_pending || !iwarp_core_stream_open(&qp->stream) || qp->tx_src == IWARP_CORE_TX_SQ)
        return 0;
    uint32_t left = 0;
    if (qp->tx_src == IWARP_CORE_TX_IRQ) {
        left = qp->tx_msg.len - qp->tx_msg.sent;
    } else {
        /* pick_message may start the oldest inbound Read not yet started (start_irq) */
        for (uint32_t i = 0; i < qp->irq_count; i++) {
            const struct iwarp_core_irqe *r =
                &qp->irq[iwarp_ring_slot(qp->irq_head, i, IWARP_CORE_MAX_IRD)];
            if (!r->started) {
                left = r->atomic ? 0 : r->len;
                break;
            }
        }
    }
    return left < max_seg ? left : max_seg;
}

bool iwarp_core_qp_tx_close(const struct iwarp_core_qp *qp)
{
    if (qp->stream.tx_unsent || qp->term_pending)
        return false;
    switch (qp->stream.state) {
    case IWARP_CORE_STREAM_TERMINATING:
        /* RFC 5040 §5.4: after the Terminate (ours, sent; or the peer's) the stream closes. */
        return qp->term_sent || qp->term_from_peer;
    case IWARP_CORE_STREAM_CLOSING:
        /* Graceful: everything posted has been sent, every Read answered both ways. */
        return qp->stream.sq_next == qp->stream.sq_count && qp->tx_src == IWARP_CORE_TX_NONE &&
               qp->orq_count == 0 && qp->irq_count == 0;
    case IWARP_CORE_STREAM_ERROR:
        return true;
    default:
        return false;
    }
}
