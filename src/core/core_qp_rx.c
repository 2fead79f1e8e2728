/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive half of the QP engine: one whole DDP segment at a time, validated (RFC 5041 §7,
 * RFC 5040 §7.2), placed, delivered.
 *
 * Per opcode:
 *   RDMA Write          tagged placement with REMOTE_WRITE (ddp_rx_tagged); no message state.
 *   RDMA Read Response  must fit the head of the ORQ (responses come in request order, RFC 5040
 *                       §5.2.2, §5.5 rule 20); placed into the Read's sink; with L the Read
 *                       completes.
 *   Send (+SE, +Inv)    DDP queue 0 (ddp_rx_untagged) into the current receive, scattered over
 *                       its SGEs; with L: remote invalidation, then the receive completion.
 *   RDMA Read Request   DDP queue 1, whose buffers are the free IRQ slots; the Data Source is
 *                       validated and the request queued for the TX side to answer.
 *   Terminate           DDP queue 2 (one buffer): the peer's cause goes to the ULP.
 * and, when the connection enabled them (iwarp_core_qp_cfg.rdmap_ext; else Unexpected OpCode,
 * as an RNIC without RFC 7306, §1.1):
 *   Immediate Data      DDP queue 0 like a Send, into the current receive without placing
 *   (+SE)               anything: the 8 octets go to the completion (RFC 7306 §6).
 *   Atomic Request      DDP queue 1 like a Read Request (the same IRD); validated, performed
 *                       when delivered, its Response queued in request order (RFC 7306 §5.2).
 *   Atomic Response     DDP queue 3 (ORD buffers): answers the oldest outstanding request,
 *                       which must be the atomic with its Request Identifier; completes it.
 *
 * Errors: every check runs before anything of the segment is placed. The first failure queues
 * the Terminate through iwarp_core_qp_terminate() with the offending segment; the local work
 * request the failing segment was addressed to (the receive a Send lands in, the Read a Read
 * Response answers) first completes with the status that says why; every other posted WR is
 * then flushed by the terminate. From then on (TERMINATING, ERROR) segments are dropped
 * silently (RFC 5041 §7.1: after an error DDP "MUST silently drop any subsequent incoming DDP
 * Segments").
 */
#include <string.h>

#include "core/core_atomic.h"
#include "core/core_qp_int.h"
#include "ddp/ddp_rx_tagged.h"
#include "ddp/ddp_rx_untagged.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"
#include "util/bytes.h"
#include "util/copy.h"
#include "util/ring.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

/* RFC 5040 §4.8: RDMAP Remote Operation, Unexpected OpCode. */
static const struct iwarp_term_cause cause_opcode = {
    IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_OP, IWARP_TERM_RDMAP_OPCODE};

/* RFC 7306 §8.2: an Atomic Request for a ULP Buffer address that is not 64-bit aligned is an
 * RDMAP Remote Operation Error, "Catastrophic error, localized to RDMAP Stream"; docs/design.md
 * takes the same cause for an Atomic Response that names another request. */
static const struct iwarp_term_cause cause_stream = {
    IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_OP, IWARP_TERM_RDMAP_CATASTROPHIC_STREAM};

/* An internal inconsistency no peer byte should reach: DDP Local Catastrophic (RFC 5041 §7.2). */
static const struct iwarp_term_cause cause_catastrophic = {IWARP_TERM_LAYER_DDP,
                                                           IWARP_TERM_DDP_ETYPE_CATASTROPHIC, 0x00};

/* One received segment, as the handlers see it (phase 1, iwarp_core_qp_rx_hdr). */
struct rx {
    struct iwarp_core_qp *qp;
    const uint8_t *seg; /* its first octets: the Terminate's offender */
    size_t avail;       /* octets readable at seg */
    uint32_t seg_len;   /* the whole segment's length (ULPDU_Length) */
    uint32_t plen;      /* payload octets of the whole segment */
    struct iwarp_wire_segment s;
    struct iovec *dst; /* where the payload goes */
    uint32_t ndst;
};

/* Queue the Terminate with the offending segment (RFC 5040 §4.8 Figure 10: its DDP header and,
 * for a Read Request, its RDMAP header; DDP Segment Length seg_len). */
static void terminate_seg(struct iwarp_core_qp *qp, struct iwarp_term_cause cause,
                          const uint8_t *seg, size_t avail, uint32_t seg_len)
{
    bool first = qp->stream.state < IWARP_CORE_STREAM_TERMINATING;
    iwarp_core_qp_terminate(qp, cause, seg, avail);
    if (!first || !qp->term_pending || seg == NULL || seg_len == avail)
        return;
    /* Only the headers are at hand (the payload goes straight to its buffer): rebuild the
     * Terminate with the segment's real length, which iwarp_core_qp_terminate() takes as
     * avail. Same cause, same length of Terminate. */
    struct iwarp_term_offender off = {.seg = seg, .avail = avail, .seg_len = seg_len};
    iwarp_ssize n = iwarp_term_build(qp->term_buf, sizeof qp->term_buf, cause, &off);
    if (n > 0)
        qp->term_len = (uint32_t)n;
}

/* Queue the Terminate for the segment and return err. */
static int fail(const struct rx *x, struct iwarp_term_cause cause, int err)
{
    terminate_seg(x->qp, cause, x->seg, x->avail, x->seg_len);
    return err;
}

/* The same for the pending segment in phase 2 (its DDP header was kept). */
static int fail_cur(struct iwarp_core_qp *qp, struct iwarp_term_cause cause, int err)
{
    const struct iwarp_core_rx_cur *c = &qp->rx_cur;
    terminate_seg(qp, cause, c->hdr, c->hdr_len, c->seg_len);
    return err;
}

/* Complete the current receive in error (before the terminate flushes the rest). */
static void recv_fail(struct iwarp_core_qp *qp, uint8_t status, struct iwarp_term_cause cause,
                      uint32_t byte_len)
{
    struct iwarp_core_rqe *rqe = iwarp_core_qp_cur_rqe(qp);
    if (rqe == NULL)
        return;
    iwarp_core_qp_recv_complete(qp, rqe->wr_id, status, byte_len, iwarp_core_cause_u32(cause),
                                false, 0, false);
    iwarp_core_qp_pop_rqe(qp);
}

/* Remove the ORQ head. */
static void orq_pop(struct iwarp_core_qp *qp)
{
    qp->orq_octets -= qp->orq[qp->orq_head].len;
    qp->orq_head = iwarp_ring_advance(qp->orq_head, 1, IWARP_CORE_MAX_ORD);
    qp->orq_count--;
}

/* Complete the Read at the ORQ head in error and drop it from the ORQ. */
static void read_fail(struct iwarp_core_qp *qp, uint8_t status, struct iwarp_term_cause cause)
{
    struct iwarp_core_orqe *o = &qp->orq[qp->orq_head];
    iwarp_core_qp_sq_finish(qp, o->sq_index, status, iwarp_core_cause_u32(cause));
    orq_pop(qp);
}

/* The payload goes to the range of local memory at addr that access r checked (none for a
 * zero-length payload); kept for iwarp_core_qp_rx_dst_valid(). */
static void dst_range(struct rx *x, const struct iwarp_mem_req *r, uint64_t addr)
{
    struct iwarp_core_rx_cur *c = &x->qp->rx_cur;
    c->stag = r->stag;
    c->to = r->to;
    c->need = r->need;
    c->addr = addr;
    c->dst_gen = x->qp->cfg.mem->gen;
    x->ndst = 0;
    if (x->plen != 0)
        x->dst[x->ndst++] = (struct iovec){(void *)(uintptr_t)addr, x->plen};
}

/* A message without payload on untagged queue q (Read and Atomic Requests, Atomic Responses,
 * the Terminate): RFC 5041 §7.1's checks (MSN, a buffer, MO) before anything else of it.
 * Returns 0, or the error with its Terminate queued. */
static int take_untagged_buffer(struct rx *x, struct iwarp_ddp_rx_uq *q)
{
    struct iwarp_term_cause cause;
    int rc = iwarp_ddp_rx_uq_segment(q, &x->s.ddp, 0, NULL, &cause);
    if (rc != 0)
        return fail(x, rc == IWARP_ERR_PROTO ? cause : cause_catastrophic, rc);
    return 0;
}

/* Queue an inbound Read or Atomic Request for its Response, in arrival order (RFC 5040 §5.2.1,
 * RFC 7306 §5.2.2 rule 8). irq_count < IWARP_CORE_MAX_IRD: phase 1 checked it and only TX
 * removes entries. */
static void irq_push(struct iwarp_core_qp *qp, const struct iwarp_core_irqe *e)
{
    qp->irq[iwarp_ring_slot(qp->irq_head, qp->irq_count, IWARP_CORE_MAX_IRD)] = *e;
    qp->irq_count++;
}

/* ---- RDMA Write (RFC 5040 §5.1) ------------------------------------------------------ */

static int rx_write(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    struct iwarp_term_cause cause;
    /* RFC 5041 §7.1 tagged checks on the Data Sink STag/TO for the whole payload; RFC 5040
     * §8.1.1 #5: the STag must allow remote write. Every segment is checked on its own:
     * tagged messages keep no state. */
    struct iwarp_mem_req r = iwarp_core_qp_mem_req(qp, x->s.ddp.stag, x->s.ddp.to, x->plen,
                                                   IWARP_MEM_ACCESS_REMOTE_WRITE);
    uint64_t addr = 0;
    int rc = iwarp_ddp_rx_tagged_target(qp->cfg.mem, &r, &addr, &cause);
    if (rc != 0)
        return fail(x, rc == IWARP_ERR_INVAL ? cause_catastrophic : cause, rc);
    dst_range(x, &r, addr);
    return 0;
}

/* ---- RDMA Read Response (RFC 5040 §5.2.2) -------------------------------------------- */

static int rx_read_resp(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    struct iwarp_term_cause cause;
    /* RFC 5040 §5.2.2, §5.5 rules 19-20: a Read Response answers the oldest outstanding Read.
     * With none outstanding the segment is well formed (decode checked it) but no message of
     * this type can be expected now: the RDMAP OpCode itself is unexpected, which is what
     * Remote Operation 0x06 "Unexpected OpCode" (RFC 5040 §4.8) names. It is not a DDP
     * Tagged Buffer error: no STag was ever solicited, so there is no buffer to be outside of
     * (siw reports DDP Local Catastrophic, which says nothing about the cause). */
    if (qp->orq_count == 0)
        return fail(x, cause_opcode, IWARP_ERR_RDMAP_OPCODE);
    struct iwarp_core_orqe *o = &qp->orq[qp->orq_head];
    /* RFC 5040 §5.2.2: the Data Sink MAY validate STag, TO and length against the Request; we
     * do (ddp_rx_tagged.h lists the causes: outside the sink is a DDP Tagged Buffer error,
     * the Data Sink being the only buffer this message may be placed in). */
    struct iwarp_ddp_rx_sink sink = {o->sink_stag, o->sink_to, o->len, o->received};
    int rc = iwarp_ddp_rx_sink_check(&sink, &x->s.ddp, x->plen, &cause);
    if (rc != 0) {
        read_fail(qp, IWARP_WC_BAD_RESP_ERR, cause);
        return fail(x, cause, rc);
    }
    /* The sink is our own memory (the Read's lkey): it must still be a valid MR of the PD with
     * local write (RFC 5041 §7.1 checks 1-5 before Placement); if the ULP deregistered it the
     * Read fails locally (LOC_PROT_ERR, as siw) and the Terminate carries the DDP cause. */
    struct iwarp_mem_req r =
        iwarp_core_qp_mem_req(qp, o->sink_stag, x->s.ddp.to, x->plen, IWARP_MEM_ACCESS_LOCAL_WRITE);
    uint64_t addr = 0;
    rc = iwarp_ddp_rx_tagged_target(qp->cfg.mem, &r, &addr, &cause);
    if (rc != 0) {
        if (rc == IWARP_ERR_INVAL)
            cause = cause_catastrophic;
        read_fail(qp, IWARP_WC_LOC_PROT_ERR, cause);
        return fail(x, cause, rc);
    }
    dst_range(x, &r, addr);
    return 0;
}

static void done_read_resp(struct iwarp_core_qp *qp)
{
    struct iwarp_core_orqe *o = &qp->orq[qp->orq_head];
    o->received += qp->rx_cur.payload_len;
    if (!qp->rx_cur.last)
        return;
    /* RFC 5040 §5.5 rule 19: the Read completes once its Response is Delivered. */
    iwarp_core_qp_sq_finish(qp, o->sq_index, IWARP_WC_SUCCESS, 0);
    orq_pop(qp);
}

/* ---- Sends (RFC 5040 §5.3) ----------------------------------------------------------- */

/* With an SRQ, pull a receive for the message h starts when queue 0 has none: only for the
 * segment with the expected MSN (any other is refused for its MSN and must not consume one). */
static void srq_pull(struct iwarp_core_qp *qp, const struct iwarp_ddp_hdr *h)
{
    struct iwarp_core_srq *srq = qp->cfg.srq;
    if (iwarp_ddp_rx_uq_posted(&qp->uq_send) != 0 ||
        h->msn != iwarp_ddp_rx_uq_expected_msn(&qp->uq_send) ||
        qp->srq_taken_count >= IWARP_CORE_SRQ_WINDOW)
        return;
    uint32_t slot = iwarp_ring_slot(qp->srq_taken_head, qp->srq_taken_count, IWARP_CORE_SRQ_WINDOW);
    if (!iwarp_core_srq_take(srq, &qp->srq_taken[slot]))
        return; /* none: DDP reports "no buffer available" (RFC 5041 §7.1 check 4) */
    /* Counted before the DDP post so that the receive is flushed, never lost, if the post
     * were refused (it cannot be: queue 0 has no buffer posted). */
    qp->srq_taken_count++;
    (void)iwarp_ddp_rx_uq_post(&qp->uq_send, qp->srq_taken[slot].len);
    if (srq->limit_fired) {
        srq->limit_fired = false;
        iwarp_core_qp_event(qp, IWARP_EVENT_SRQ_LIMIT_REACHED, 0, false);
    }
}

/* The iovecs of octets [off, off + n) of the receive's SGE list, zero-length pieces skipped
 * (the untagged checks guarantee that off + n is within rqe->len). Returns how many. */
static uint32_t gather(const struct iwarp_core_rqe *rqe, uint64_t off, size_t n, struct iovec *dst)
{
    uint32_t k = 0;
    uint32_t nsge = rqe->nsge < IWARP_CORE_MAX_SGE ? rqe->nsge : IWARP_CORE_MAX_SGE;
    for (uint32_t i = 0; i < nsge && n > 0; i++) {
        size_t l = rqe->iov[i].iov_len;
        if (off >= l) {
            off -= l;
            continue;
        }
        size_t take = l - (size_t)off < n ? l - (size_t)off : n;
        dst[k++] = (struct iovec){(uint8_t *)rqe->iov[i].iov_base + off, take};
        n -= take;
        off = 0;
    }
    return k;
}

static int rx_send(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    const struct iwarp_wire_segment *s = &x->s;
    struct iwarp_term_cause cause;
    struct iwarp_ddp_rx_place place;

    if (qp->cfg.srq != NULL)
        srq_pull(qp, &s->ddp);
    /* RFC 5041 §7.1 untagged checks (MSN, buffer, MO, length; RFC 5040 §5.3: a Send larger
     * than the buffer is an error), for the whole payload before any of it is placed. */
    int rc = iwarp_ddp_rx_uq_segment(&qp->uq_send, &s->ddp, x->plen, &place, &cause);
    if (rc != 0) {
        if (rc != IWARP_ERR_PROTO) /* only after an L not completed: never here */
            return fail(x, cause_catastrophic, rc);
        /* The receive this message lands in (its MSN is the current one and a buffer is
         * posted) fails: too long is LOC_LEN_ERR (verbs: the message exceeds the receive);
         * an MO out of sequence leaves it half written, LOC_QP_OP_ERR. An MSN or buffer error
         * is not addressed to the current receive, which the terminate flushes. */
        if (cause.ecode == IWARP_TERM_DDP_U_TOO_LONG)
            recv_fail(qp, IWARP_WC_LOC_LEN_ERR, cause, 0);
        else if (cause.ecode == IWARP_TERM_DDP_U_INVALID_MO)
            recv_fail(qp, IWARP_WC_LOC_QP_OP_ERR, cause, 0);
        return fail(x, cause, rc);
    }
    struct iwarp_core_rqe *rqe = iwarp_core_qp_cur_rqe(qp);
    if (rqe == NULL) /* a DDP buffer is posted for every receive: unreachable */
        return fail(x, cause_catastrophic, IWARP_ERR_STATE);
    if (!iwarp_core_held_usable(&rqe->held, qp->cfg.mem)) {
        /* Its memory was deregistered since the post: a local protection error, and the
         * message can go nowhere. siw terminates the same way (DDP, catastrophic). */
        recv_fail(qp, IWARP_WC_LOC_PROT_ERR, cause_catastrophic, 0);
        return fail(x, cause_catastrophic, IWARP_ERR_STAG_INVALID);
    }
    x->ndst = gather(rqe, place.offset, x->plen, x->dst);
    qp->rx_cur.msg_len = place.msg_len;
    qp->rx_cur.last = place.last;
    return 0;
}

/* The current receive has completed: the untagged queue's message ends, the RQE leaves. */
static void receive_consumed(struct iwarp_core_qp *qp)
{
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_send);
    iwarp_core_qp_pop_rqe(qp);
}

/* RFC 5040 §5.3: a Send's message is Delivered in order, with the size written (and the STag
 * it invalidated, with_inv); SE variants are solicited. Its receive is consumed. */
static void deliver_send(struct iwarp_core_qp *qp, const struct iwarp_core_rqe *rqe,
                         uint32_t msg_len, uint32_t inv_stag, bool with_inv, bool se)
{
    iwarp_core_qp_recv_complete(qp, rqe->wr_id, IWARP_WC_SUCCESS, msg_len, 0, with_inv, inv_stag,
                                se);
    receive_consumed(qp);
}

static int done_send(struct iwarp_core_qp *qp)
{
    struct iwarp_core_rx_cur *c = &qp->rx_cur;
    if (!c->last)
        return 0;
    uint8_t op = c->opcode;
    if (op == IWARP_RDMAP_OP_IMM_DATA || op == IWARP_RDMAP_OP_IMM_DATA_SE) {
        /* RFC 7306 §6.3-§6.4: consumes the receive, Delivered in order as a Send; with SE it
         * is solicited. */
        struct iwarp_core_rqe *r = iwarp_core_qp_cur_rqe(qp);
        if (r == NULL) /* phase 1 found it; nothing in between consumes it */
            return fail_cur(qp, cause_catastrophic, IWARP_ERR_STATE);
        iwarp_core_qp_recv_imm_complete(qp, r->wr_id, &c->imm, op == IWARP_RDMAP_OP_IMM_DATA_SE);
        receive_consumed(qp);
        return 0;
    }
    bool inv = op == IWARP_RDMAP_OP_SEND_INV || op == IWARP_RDMAP_OP_SEND_SE_INV;
    bool se = op == IWARP_RDMAP_OP_SEND_SE || op == IWARP_RDMAP_OP_SEND_SE_INV;
    struct iwarp_core_rqe *rqe = iwarp_core_qp_cur_rqe(qp);
    if (rqe == NULL) /* phase 1 found it; nothing in between consumes it */
        return fail_cur(qp, cause_catastrophic, IWARP_ERR_STATE);
    uint32_t msg_len = (uint32_t)c->msg_len; /* <= rqe->len, a uint32_t */
    if (inv) {
        /* RFC 5040 §5.3 and §7.2 checks 4-5: on Delivery of a Send with (SE and) Invalidate
         * the STag must be valid and associated with this stream, and is invalidated; else a
         * Terminate "STag cannot be Invalidated" (mem_region.h: 0/2/0x09 or 0/1/0x09). The
         * receive then completes with REM_INV_REQ_ERR (the peer's request was invalid; siw). */
        struct iwarp_term_cause cause;
        int rc = iwarp_mem_remote_inv(qp->cfg.mem, c->inv_stag, qp->cfg.pd, qp->cfg.qp_num, &cause);
        if (rc != 0) {
            recv_fail(qp, IWARP_WC_REM_INV_REQ_ERR, cause, msg_len);
            return fail_cur(qp, cause, rc);
        }
    }
    deliver_send(qp, rqe, msg_len, inv ? c->inv_stag : 0, inv, se);
    return 0;
}

/* ---- RDMA Read Request (RFC 5040 §5.2.1) --------------------------------------------- */

/* len octets at stag/to that a Read Request or an Atomic Request names on this side, checked
 * as a Read Request's Data Source (RFC 5040 §7.2 checks 4a-4e; Remote Protection causes 0/1/x,
 * a table that cannot answer is catastrophic) for the rights in need. Returns 0 with *addr,
 * the local address, or the error with *cause. */
static int check_source(struct iwarp_core_qp *qp, uint32_t stag, uint64_t to, uint64_t len,
                        uint32_t need, uint64_t *addr, struct iwarp_term_cause *cause)
{
    struct iwarp_mem_req r = iwarp_core_qp_mem_req(qp, stag, to, len, need);
    int rc = iwarp_mem_check_tagged(qp->cfg.mem, &r, IWARP_MEM_CAUSE_RDMAP, addr, cause);
    if (rc == IWARP_ERR_INVAL)
        *cause = cause_catastrophic;
    return rc;
}

static int rx_read_req(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    const struct iwarp_rdmap_read_req *rr = &x->s.body.read_req;
    struct iwarp_term_cause cause;
    /* RFC 5040 §7.2 check 1, RFC 5041 §7.1 on queue 1. Its buffers are the free IRQ slots
     * (RFC 5040 §5.2.2: the Data Source keeps IRD Untagged Buffers on queue 1), so a Read
     * Request beyond IRD finds no buffer: 1/2/0x02 (siw sends 0/2/0x07 instead). */
    int rc = take_untagged_buffer(x, &qp->uq_read);
    if (rc != 0)
        return rc;
    /* RFC 5040 §5.2.1, §7.2 checks 4a-4e on the Data Source, not for a zero-length Read; the
     * Terminate carries the Read Request header (RFC 5040 §4.8 Figure 10, §7.1 rule 3). */
    uint64_t src = 0;
    rc = check_source(qp, rr->src_stag, rr->src_to, rr->size, IWARP_MEM_ACCESS_REMOTE_READ, &src,
                      &cause);
    if (rc != 0)
        return fail(x, cause, rc);
    if (qp->irq_count >= IWARP_CORE_MAX_IRD) /* queue 1 never holds more buffers */
        return fail(x, cause_catastrophic, IWARP_ERR_STATE);
    qp->rx_cur.read_req = *rr;
    qp->rx_cur.src_addr = src;
    qp->rx_cur.src_gen = qp->cfg.mem->gen;
    x->ndst = 0;
    return 0;
}

static void done_read_req(struct iwarp_core_qp *qp)
{
    const struct iwarp_core_rx_cur *c = &qp->rx_cur;
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_read);
    /* RFC 5040 §5.2.1: processed in the order sent; answered in that order (§5.5 rule 20). */
    irq_push(qp, &(struct iwarp_core_irqe){.sink_stag = c->read_req.sink_stag,
                                           .sink_to = c->read_req.sink_to,
                                           .src_addr = c->src_addr,
                                           .src_stag = c->read_req.src_stag,
                                           .src_to = c->read_req.src_to,
                                           .src_gen = c->src_gen,
                                           .len = c->read_req.size,
                                           .started = false});
}

/* ---- Atomic Request (RFC 7306 §5.2.1) ------------------------------------------------ */

/* The 8 octets an Atomic Request targets, checked: the STag with remote-atomic rights over
 * them, as a Read Request's Data Source (RFC 5040 §7.2 checks 4a-4e; 0/1/x), then the
 * alignment (RFC 7306 §8.2: 0/2/0x07). Returns 0 with *addr, or the error with *cause. */
static int atomic_target(struct iwarp_core_qp *qp, const struct iwarp_rdmap_atomic_req *ar,
                         uint64_t *addr, struct iwarp_term_cause *cause)
{
    int rc = check_source(qp, ar->stag, ar->to, sizeof(uint64_t), IWARP_MEM_ACCESS_REMOTE_ATOMIC,
                          addr, cause);
    if (rc != 0)
        return rc;
    /* RFC 7306 §5.1.1, §5.1.2, §8.2: the ULP Buffer address must be 64-bit aligned. */
    if (*addr % sizeof(uint64_t) != 0) {
        *cause = cause_stream;
        return IWARP_ERR_ATOMIC_ALIGN;
    }
    return 0;
}

static int rx_atomic_req(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    const struct iwarp_rdmap_atomic_req *ar = &x->s.body.atomic_req;
    struct iwarp_term_cause cause;
    /* RFC 7306 §5.2.1 rules 2 and 5, §5.2.2 rule 4: one buffer of queue 1, shared with the
     * Read Requests (the IRD); beyond it 1/2/0x02, as an excess Read Request. */
    int rc = take_untagged_buffer(x, &qp->uq_read);
    if (rc != 0)
        return rc;
    /* RFC 7306 §5.2.1 rule 4: an AOpCode we do not implement is surfaced as an error:
     * 0/2/0x06, the code §1.1 names for an operation the peer does not support. */
    if (ar->aopcode != IWARP_ATOMIC_FETCH_ADD && ar->aopcode != IWARP_ATOMIC_CMP_SWAP)
        return fail(x, cause_opcode, IWARP_ERR_RDMAP_OPCODE);
    uint64_t addr = 0;
    rc = atomic_target(qp, ar, &addr, &cause);
    if (rc != 0)
        return fail(x, cause, rc);
    if (qp->irq_count >= IWARP_CORE_MAX_IRD) /* queue 1 never holds more buffers */
        return fail(x, cause_catastrophic, IWARP_ERR_STATE);
    qp->rx_cur.atomic_req = *ar;
    x->ndst = 0;
    return 0;
}

static int done_atomic_req(struct iwarp_core_qp *qp)
{
    const struct iwarp_rdmap_atomic_req *ar = &qp->rx_cur.atomic_req;
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_read);
    /* RFC 7306 §5.4 rules 3 and 8: performed once Delivered, in the order Delivered. The
     * target is checked again: the ULP may have deregistered it since phase 1. */
    uint64_t addr = 0;
    struct iwarp_term_cause cause;
    int rc = atomic_target(qp, ar, &addr, &cause);
    if (rc != 0)
        return fail_cur(qp, cause, rc);
    uint64_t *word = (uint64_t *)(uintptr_t)addr;
    uint64_t orig = ar->aopcode == IWARP_ATOMIC_FETCH_ADD
                        ? iwarp_core_atomic_fetch_add(word, ar->add_swap, ar->add_swap_mask)
                        : iwarp_core_atomic_cmp_swap(word, ar->compare, ar->compare_mask,
                                                     ar->add_swap, ar->add_swap_mask);
    /* RFC 7306 §5.2.2 rule 8: the Response goes out in request order, Reads included. */
    irq_push(qp,
             &(struct iwarp_core_irqe){.atomic = true, .req_id = ar->req_id, .orig_value = orig});
    return 0;
}

/* ---- Atomic Response (RFC 7306 §5.2.2) ----------------------------------------------- */

static int rx_atomic_resp(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    const struct iwarp_rdmap_atomic_resp *resp = &x->s.body.atomic_resp;
    /* RFC 7306 §5.2.2 rules 2, 3 and 5: one buffer of queue 3 (ORD of them posted). */
    int rc = take_untagged_buffer(x, &qp->uq_atomic_resp);
    if (rc != 0)
        return rc;
    /* RFC 7306 §7: responses come in request order. One with no atomic at the head of the
     * ORQ (none outstanding, or a Read's turn) is unexpected, as a Read Response without a
     * Read (0/2/0x06); one naming another request is invalid (§5.2.2 rule 7): 0/2/0x07. */
    if (qp->orq_count == 0 || !qp->orq[qp->orq_head].atomic)
        return fail(x, cause_opcode, IWARP_ERR_RDMAP_OPCODE);
    if (resp->req_id != qp->orq[qp->orq_head].req_id) {
        read_fail(qp, IWARP_WC_BAD_RESP_ERR, cause_stream);
        return fail(x, cause_stream, IWARP_ERR_ATOMIC_RESP);
    }
    qp->rx_cur.atomic_resp = *resp;
    x->ndst = 0;
    return 0;
}

static void done_atomic_resp(struct iwarp_core_qp *qp)
{
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_atomic_resp);
    (void)iwarp_ddp_rx_uq_post(&qp->uq_atomic_resp, 0); /* the ORQ slot is free again */
    struct iwarp_core_orqe *o = &qp->orq[qp->orq_head];
    struct iwarp_core_sqe *e = &qp->sq[o->sq_index];
    /* RFC 7306 §5.1: the Original Remote Data Value, in this host's order, to the 8-octet
     * sink (held since the post); §5.4 rule 7: the atomic completes now. */
    uint64_t orig = qp->rx_cur.atomic_resp.orig_value;
    if (!iwarp_core_held_usable(&e->held, qp->cfg.mem)) {
        /* the sink was deregistered since the post: the value has nowhere to go (locally) */
        read_fail(qp, IWARP_WC_LOC_PROT_ERR, cause_catastrophic);
        return;
    }
    iwarp_copy(e->iov[0].iov_base, &orig, sizeof orig);
    iwarp_core_qp_sq_finish(qp, o->sq_index, IWARP_WC_SUCCESS, 0);
    orq_pop(qp);
}

/* ---- Terminate (RFC 5040 §5.4) ------------------------------------------------------- */

/*
 * Whether a Terminate read the RFC way names an MPA set-up cause that is siw's bit-reversed
 * RDMAP one. RFC 6581 §9.1-§9.2: 2/0/0x06 (insufficient IRD) and 2/0/0x07 (no matching RTR)
 * answer the MPA exchange, as the initiator's first FPDU, before either side sends anything
 * else. Once this side has sent an RFC 7306 message the exchange is long over, and the one
 * peer that answers such a message with a Terminate of that shape is siw: its 0/2/0x06
 * (Unexpected OpCode: siw has no RFC 7306) and 0/2/0x07 with Layer and EType swapped and
 * without headers, where nothing tells its layout from the RFC's (wire_term.c needs reserved
 * bits to). Those two are then read siw's way (docs/interop-siw.md).
 */
static bool siw_setup_cause_in_full_operation(const struct iwarp_core_qp *qp,
                                              const struct iwarp_term *t)
{
    const struct iwarp_term_cause c = t->ctrl.cause;
    return qp->tx_rdmap_ext_sent && !t->siw_swapped && t->ctrl.hdrct == 0 &&
           c.layer == IWARP_TERM_LAYER_LLP && c.etype == IWARP_TERM_LLP_ETYPE_MPA &&
           (c.ecode == IWARP_TERM_MPA_IRD || c.ecode == IWARP_TERM_MPA_NO_RTR);
}

static int rx_terminate(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    /* RFC 5040 §5.4: one Terminate consumes the one buffer of queue 2 (MSN 1, MO 0). */
    int rc = take_untagged_buffer(x, &qp->uq_term);
    if (rc != 0)
        return rc;
    /* A siw peer's bit-reversed header is read its way (wire_term.h). */
    qp->rx_cur.term = iwarp_term_layout(&x->s.body.term)->cause;
    if (siw_setup_cause_in_full_operation(qp, &x->s.body.term))
        qp->rx_cur.term = x->s.body.term.siw_ctrl.cause;
    x->ndst = 0;
    return 0;
}

static void done_terminate(struct iwarp_core_qp *qp)
{
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_term);
    /* RFC 5040 §5.4: Delivered to the ULP. */
    iwarp_core_qp_peer_terminated(qp, qp->rx_cur.term);
}

/* ---- entry points ---------------------------------------------------------------------- */

/* Whether opcode op carries a payload after its headers (RFC 5040 Figure 4). */
static bool has_payload(uint8_t op)
{
    return op == IWARP_RDMAP_OP_WRITE || op == IWARP_RDMAP_OP_READ_RESP ||
           op == IWARP_RDMAP_OP_SEND || op == IWARP_RDMAP_OP_SEND_INV ||
           op == IWARP_RDMAP_OP_SEND_SE || op == IWARP_RDMAP_OP_SEND_SE_INV;
}

uint32_t iwarp_core_qp_rx_hdr_len(const uint8_t *p, size_t avail, uint32_t seg_len)
{
    if (p == NULL || avail < 2)
        return seg_len;
    /* RFC 5041 §4.1: T selects the DDP header (14 or 18 octets); RFC 5040 §4.1, Figure 4:
     * the RDMAP opcode says whether an RDMAP header follows (the payload carriers have none).
     * A T flag that does not fit the opcode is an error decode reports on the whole segment. */
    bool tagged = (p[0] & IWARP_DDP_FLAG_TAGGED) != 0;
    uint8_t op = (uint8_t)(p[1] & IWARP_RDMAP_MASK_OPCODE);
    uint32_t need = seg_len;
    if (has_payload(op) && tagged == (op == IWARP_RDMAP_OP_WRITE || op == IWARP_RDMAP_OP_READ_RESP))
        need = tagged ? IWARP_DDP_TAGGED_HDR_LEN : IWARP_DDP_UNTAGGED_HDR_LEN;
    return need < seg_len ? need : seg_len;
}

int iwarp_core_qp_rx_hdr(struct iwarp_core_qp *qp, const uint8_t *hdr, size_t hdr_len,
                         size_t seg_len, struct iovec *dst, uint32_t max, uint32_t *ndst)
{
    if (ndst != NULL)
        *ndst = 0;
    if (qp == NULL || (hdr == NULL && hdr_len != 0) || hdr_len > seg_len || seg_len > UINT32_MAX ||
        dst == NULL || max < IWARP_CORE_RX_IOV_MAX || ndst == NULL)
        return IWARP_ERR_INVAL;
    /* Only the payload carriers may arrive without the rest of the segment. */
    if (hdr_len < seg_len && hdr_len < iwarp_core_qp_rx_hdr_len(hdr, hdr_len, (uint32_t)seg_len))
        return IWARP_ERR_INVAL;
    switch (qp->stream.state) {
    case IWARP_CORE_STREAM_RUNNING:
    case IWARP_CORE_STREAM_CLOSING:
        break;
    case IWARP_CORE_STREAM_TERMINATING:
    case IWARP_CORE_STREAM_ERROR:
        /* RFC 5041 §7.1: after an error, silently drop every later segment; RFC 5040 §5.4:
         * nothing more is exchanged after a Terminate. */
        return 0;
    default:
        return IWARP_ERR_STATE; /* not in full operation: the LLP delivers nothing yet */
    }
    if (qp->rx_cur.active) /* the previous segment's payload_done is missing */
        return IWARP_ERR_STATE;

    /* x.s is left to iwarp_wire_segment_decode, which clears it first: zeroing the whole of
     * x here would clear it twice on every segment */
    struct rx x;
    x.qp = qp;
    x.seg = hdr;
    x.avail = hdr_len;
    x.seg_len = (uint32_t)seg_len;
    x.plen = 0;
    x.dst = dst;
    x.ndst = 0;
    struct iwarp_term_cause cause;
    /* RFC 5041 §7.1, RFC 5040 §7.2 checks 1-3: the stateless header checks. For the payload
     * carriers they read the headers only, so hdr_len octets decide as the whole would. */
    int rc = iwarp_wire_segment_decode(hdr, hdr_len, &x.s, &cause);
    if (rc != 0)
        return fail(&x, cause, rc);
    x.plen = (uint32_t)(seg_len - x.s.hdr_len - x.s.body_len);

    struct iwarp_core_rx_cur *c = &qp->rx_cur;
    *c = (struct iwarp_core_rx_cur){.opcode = x.s.opcode,
                                    .last = x.s.ddp.last,
                                    .hdr_len = (uint8_t)x.s.hdr_len,
                                    .seg_len = (uint32_t)seg_len,
                                    .payload_len = x.plen,
                                    .inv_stag = x.s.inv_stag};
    memcpy(c->hdr, hdr, x.s.hdr_len);
    switch (x.s.opcode) {
    case IWARP_RDMAP_OP_WRITE:
        rc = rx_write(&x);
        break;
    case IWARP_RDMAP_OP_READ_RESP:
        rc = rx_read_resp(&x);
        break;
    case IWARP_RDMAP_OP_SEND:
    case IWARP_RDMAP_OP_SEND_INV:
    case IWARP_RDMAP_OP_SEND_SE:
    case IWARP_RDMAP_OP_SEND_SE_INV:
        rc = rx_send(&x);
        break;
    case IWARP_RDMAP_OP_READ_REQ:
        rc = rx_read_req(&x);
        break;
    case IWARP_RDMAP_OP_TERMINATE:
        rc = rx_terminate(&x);
        break;
    case IWARP_RDMAP_OP_IMM_DATA:
    case IWARP_RDMAP_OP_IMM_DATA_SE:
        if (!(qp->cfg.rdmap_ext & IWARP_RDMAP_EXT_IMM_DATA))
            goto unsupported;
        c->imm = x.s.body.imm;
        rc = rx_send(&x); /* RFC 7306 §6.3: the untagged checks of a zero-length Send */
        break;
    case IWARP_RDMAP_OP_ATOMIC_REQ:
        if (!(qp->cfg.rdmap_ext & IWARP_RDMAP_EXT_ATOMICS))
            goto unsupported;
        rc = rx_atomic_req(&x);
        break;
    case IWARP_RDMAP_OP_ATOMIC_RESP:
        if (!(qp->cfg.rdmap_ext & IWARP_RDMAP_EXT_ATOMICS))
            goto unsupported;
        rc = rx_atomic_resp(&x);
        break;
    default:
    unsupported:
        /* RFC 7306 Immediate Data and atomics not enabled on this connection: an RDMAP that
         * does not implement them answers Unexpected OpCode (RFC 7306 §1.1, §4.1). */
        rc = fail(&x, cause_opcode, IWARP_ERR_NOTSUP);
        break;
    }
    if (rc != 0)
        return rc;
    c->active = true;
    *ndst = x.ndst;
    return 0;
}

static bool receiving(const struct iwarp_core_qp *qp)
{
    return iwarp_core_stream_open(&qp->stream);
}

bool iwarp_core_qp_rx_dst_valid(struct iwarp_core_qp *qp)
{
    struct iwarp_core_rx_cur *c = &qp->rx_cur;
    if (!c->active)
        return true;
    if (c->lost || !receiving(qp)) /* flushed: its buffers are the ULP's again */
        return false;
    bool tagged = c->opcode == IWARP_RDMAP_OP_WRITE || c->opcode == IWARP_RDMAP_OP_READ_RESP;
    if (c->payload_len == 0)
        return true;
    if (!tagged) {
        /* A Send's receive: its MRs may have been deregistered since phase 1 */
        const struct iwarp_core_rqe *rqe = iwarp_core_qp_cur_rqe(qp);
        if (rqe == NULL || iwarp_core_held_usable(&rqe->held, qp->cfg.mem))
            return true;
        c->lost = true;
        c->lost_err = IWARP_ERR_STAG_INVALID;
        c->lost_cause = cause_catastrophic;
        return false;
    }
    /* Nothing has stopped naming what it named since phase 1 checked the STag (every
     * deregistration, invalidation and rebinding moves gen), so the checks would pass again. */
    if (c->dst_gen == qp->cfg.mem->gen)
        return true;
    /* RFC 5041 §7.1 checks 1-5 again, DDP causes: the STag may have been deregistered,
     * invalidated or rebound since phase 1. */
    struct iwarp_mem_req r = iwarp_core_qp_mem_req(qp, c->stag, c->to, c->payload_len, c->need);
    uint64_t addr = 0;
    struct iwarp_term_cause cause = cause_catastrophic;
    int rc = iwarp_ddp_rx_tagged_target(qp->cfg.mem, &r, &addr, &cause);
    if (rc == 0 && addr == c->addr) {
        c->dst_gen = qp->cfg.mem->gen; /* checked at this gen: the next look is free again */
        return true;
    }
    c->lost = true;
    c->lost_err = rc != 0 ? rc : IWARP_ERR_STAG_INVALID;
    /* Registered again elsewhere: for this segment the STag names no buffer it may use. */
    c->lost_cause =
        rc == 0 || rc == IWARP_ERR_INVAL
            ? (struct iwarp_term_cause){IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_TAGGED,
                                        IWARP_TERM_DDP_T_INVALID_STAG}
            : cause;
    return false;
}

int iwarp_core_qp_rx_payload_done(struct iwarp_core_qp *qp)
{
    if (qp == NULL)
        return IWARP_ERR_INVAL;
    if (!qp->rx_cur.active)
        return 0;
    /* Stopped in between (a local error, a disconnect): its WR was flushed, nothing delivers. */
    if (!receiving(qp)) {
        qp->rx_cur.active = false;
        return 0;
    }
    /* The tagged buffer went away while the payload arrived: the rest was not placed. As for a
     * segment that finds it gone (rx_read_resp): the Read fails locally, and the Terminate. */
    if (!iwarp_core_qp_rx_dst_valid(qp)) {
        qp->rx_cur.active = false;
        if (qp->rx_cur.opcode == IWARP_RDMAP_OP_READ_RESP)
            read_fail(qp, IWARP_WC_LOC_PROT_ERR, qp->rx_cur.lost_cause);
        else if (qp->rx_cur.opcode != IWARP_RDMAP_OP_WRITE) /* a Send's receive went away */
            recv_fail(qp, IWARP_WC_LOC_PROT_ERR, qp->rx_cur.lost_cause, 0);
        return fail_cur(qp, qp->rx_cur.lost_cause, qp->rx_cur.lost_err);
    }
    qp->rx_cur.active = false;
    switch (qp->rx_cur.opcode) {
    case IWARP_RDMAP_OP_READ_RESP:
        done_read_resp(qp);
        return 0;
    case IWARP_RDMAP_OP_SEND:
    case IWARP_RDMAP_OP_SEND_INV:
    case IWARP_RDMAP_OP_SEND_SE:
    case IWARP_RDMAP_OP_SEND_SE_INV:
    case IWARP_RDMAP_OP_IMM_DATA:
    case IWARP_RDMAP_OP_IMM_DATA_SE:
        return done_send(qp);
    case IWARP_RDMAP_OP_ATOMIC_REQ:
        return done_atomic_req(qp);
    case IWARP_RDMAP_OP_ATOMIC_RESP:
        done_atomic_resp(qp);
        return 0;
    case IWARP_RDMAP_OP_READ_REQ:
        done_read_req(qp);
        return 0;
    case IWARP_RDMAP_OP_TERMINATE:
        done_terminate(qp);
        return 0;
    default: /* RDMA Write: placed, nothing to deliver (RFC 5040 §5.1) */
        return 0;
    }
}

/* ---- header prediction ------------------------------------------------------------------ */

/*
 * In a stream of small messages nearly every segment is a whole one-segment Send into the
 * current receive, or an RDMA Write, with every reserved bit clear. As in TCP's header
 * prediction, such a segment is recognised by comparing its headers with what the stream
 * expects, octet for octet: RFC 5041 §7.1's and RFC 5040 §7.2's stateless header checks (DV 1,
 * RV 1, a defined opcode and its T flag and QN, reserved bits) then hold by construction. The
 * stateful checks are the general path's own functions (the untagged queue's MSN, buffer, MO and
 * length; the STag's validity, rights, PD and bounds), the placement its copy and the delivery
 * its completion: what is left out is the general decode and the bookkeeping that carries a
 * segment across two phases (iwarp_core_qp_rx_hdr, iwarp_core_qp_rx_payload_done), which a
 * segment whole in memory does not need. Anything else, and every check that fails, returns
 * false with nothing changed, and the general path handles the segment and reports the error.
 */

/* A whole one-segment Send or Send with SE (QN 0, MO 0, no Invalidate STag) for the current
 * receive of a QP without an SRQ; len >= IWARP_DDP_UNTAGGED_HDR_LEN. */
static bool rx_predicted_send(struct iwarp_core_qp *qp, const uint8_t *seg, size_t len)
{
    if (qp->cfg.srq != NULL || iwarp_load_be32(seg + 2) != 0u || iwarp_load_be32(seg + 6) != 0u ||
        iwarp_load_be32(seg + 14) != 0u)
        return false;
    struct iwarp_core_rqe *rqe = iwarp_core_qp_cur_rqe(qp);
    if (rqe == NULL || !iwarp_core_held_usable(&rqe->held, qp->cfg.mem))
        return false;
    uint32_t plen = (uint32_t)(len - IWARP_DDP_UNTAGGED_HDR_LEN);
    struct iwarp_ddp_hdr h = {
        .last = true, .dv = IWARP_DDP_VERSION, .msn = iwarp_load_be32(seg + 10)};
    struct iwarp_ddp_rx_place place;
    if (iwarp_ddp_rx_uq_segment(&qp->uq_send, &h, plen, &place, NULL) != 0)
        return false;
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t ndst = gather(rqe, 0, plen, dst);
    iwarp_copy_scatter(dst, ndst, seg + IWARP_DDP_UNTAGGED_HDR_LEN, plen);
    deliver_send(qp, rqe, (uint32_t)place.msg_len, 0, false,
                 seg[1] == iwarp_rdmap_ctrl(IWARP_RDMAP_OP_SEND_SE));
    return true;
}

/* A whole RDMA Write segment with payload (rx_write): placed, nothing to deliver (RFC 5040
 * §5.1); len > IWARP_DDP_TAGGED_HDR_LEN. */
static bool rx_predicted_write(struct iwarp_core_qp *qp, const uint8_t *seg, size_t len)
{
    struct iwarp_mem_req r =
        iwarp_core_qp_mem_req(qp, iwarp_load_be32(seg + 2), iwarp_load_be64(seg + 6),
                              len - IWARP_DDP_TAGGED_HDR_LEN, IWARP_MEM_ACCESS_REMOTE_WRITE);
    uint64_t addr = 0;
    if (iwarp_ddp_rx_tagged_target(qp->cfg.mem, &r, &addr, NULL) != 0)
        return false;
    iwarp_copy((void *)(uintptr_t)addr, seg + IWARP_DDP_TAGGED_HDR_LEN, (size_t)r.len);
    return true;
}

/* Whether the segment was one of the predicted kinds and has been placed and delivered. */
static bool rx_predicted(struct iwarp_core_qp *qp, const uint8_t *seg, size_t len)
{
    if (qp->rx_cur.active || qp->stream.state != IWARP_CORE_STREAM_RUNNING)
        return false;
    const uint8_t untagged_last = IWARP_DDP_FLAG_LAST | IWARP_DDP_VERSION;
    const uint8_t tagged = IWARP_DDP_FLAG_TAGGED | IWARP_DDP_VERSION;
    if (len >= IWARP_DDP_UNTAGGED_HDR_LEN && seg[0] == untagged_last &&
        (seg[1] == iwarp_rdmap_ctrl(IWARP_RDMAP_OP_SEND) ||
         seg[1] == iwarp_rdmap_ctrl(IWARP_RDMAP_OP_SEND_SE)))
        return rx_predicted_send(qp, seg, len);
    if (len > IWARP_DDP_TAGGED_HDR_LEN && (seg[0] & ~IWARP_DDP_FLAG_LAST) == tagged &&
        seg[1] == iwarp_rdmap_ctrl(IWARP_RDMAP_OP_WRITE))
        return rx_predicted_write(qp, seg, len);
    return false;
}

int iwarp_core_qp_rx_segment(struct iwarp_core_qp *qp, const uint8_t *seg, size_t len)
{
    if (qp == NULL || (seg == NULL && len != 0) || len > UINT32_MAX)
        return IWARP_ERR_INVAL;
    if (qp->rx_predict && rx_predicted(qp, seg, len)) {
        qp->rx_predicted++;
        return 0;
    }
    /* The two phases over the segment in memory: the payload is its tail. */
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t ndst = 0;
    int rc = iwarp_core_qp_rx_hdr(qp, seg, len, len, dst, IWARP_CORE_RX_IOV_MAX, &ndst);
    if (rc != 0 || !qp->rx_cur.active)
        return rc;
    size_t plen = qp->rx_cur.payload_len;
    iwarp_copy_scatter(dst, ndst, seg + (len - plen), plen);
    return iwarp_core_qp_rx_payload_done(qp);
}
void iwarp_core_qp_rx_llp_error(struct iwarp_core_qp *qp, struct iwarp_term_cause cause,
                                const uint8_t *hdr, size_t hdr_len)
{
    /* RFC 5044 §8: MPA reports the error to the ULP, which terminates the stream; the LLP cause
     * carries no headers (RFC 5040 §4.8 Figure 10; iwarp_term_build decides). */
    iwarp_core_qp_terminate(qp, cause, hdr, hdr_len);
}

void iwarp_core_qp_rx_start(struct iwarp_core_qp *qp)
{
    /* RFC 5040 §5.2.2: "a sufficient number of Untagged Buffers" on queue 1 for IRD Read
     * Requests; a Read Request carries no payload, so each buffer is zero octets long. */
    uint32_t ird = qp->ird < IWARP_CORE_MAX_IRD ? qp->ird : IWARP_CORE_MAX_IRD;
    for (uint32_t i = 0; i < ird; i++)
        (void)iwarp_ddp_rx_uq_post(&qp->uq_read, 0);
    /* RFC 5040 §5.4: one Terminate per stream, one buffer on queue 2. */
    (void)iwarp_ddp_rx_uq_post(&qp->uq_term, 0);
    /* RFC 7306 §5.2.2 rule 5: queue 3 buffers for every Atomic Request ORD lets out. */
    uint32_t ord = qp->ord < IWARP_CORE_MAX_ORD ? qp->ord : IWARP_CORE_MAX_ORD;
    for (uint32_t i = 0; qp->cfg.rdmap_ext & IWARP_RDMAP_EXT_ATOMICS && i < ord; i++)
        (void)iwarp_ddp_rx_uq_post(&qp->uq_atomic_resp, 0);
}

void iwarp_core_qp_rx_read_slot_free(struct iwarp_core_qp *qp)
{
    (void)iwarp_ddp_rx_uq_post(&qp->uq_read, 0);
}
