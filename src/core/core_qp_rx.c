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
 *   RFC 7306 opcodes    not supported: Unexpected OpCode.
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

#include "core/core_qp_int.h"
#include "ddp/ddp_rx_tagged.h"
#include "ddp/ddp_rx_untagged.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

/* RFC 5040 §4.8: RDMAP Remote Operation, Unexpected OpCode. */
static const struct iwarp_term_cause cause_opcode = {
    IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_OP, IWARP_TERM_RDMAP_OPCODE};

/* An internal inconsistency no peer byte should reach: DDP Local Catastrophic (RFC 5041 §7.2). */
static const struct iwarp_term_cause cause_catastrophic = {IWARP_TERM_LAYER_DDP,
                                                           IWARP_TERM_DDP_ETYPE_CATASTROPHIC, 0x00};

/* One received segment, as the handlers see it. */
struct rx {
    struct iwarp_core_qp *qp;
    const uint8_t *seg; /* the whole segment: the Terminate's offender */
    size_t len;
    struct iwarp_wire_segment s;
};

/* Queue the Terminate for the segment and return err. */
static int fail(const struct rx *x, struct iwarp_term_cause cause, int err)
{
    iwarp_core_qp_terminate(x->qp, cause, x->seg, x->len);
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
    qp->orq_head = (qp->orq_head + 1u) % IWARP_CORE_MAX_ORD;
    qp->orq_count--;
}

/* Complete the Read at the ORQ head in error and drop it from the ORQ. */
static void read_fail(struct iwarp_core_qp *qp, uint8_t status, struct iwarp_term_cause cause)
{
    struct iwarp_core_orqe *o = &qp->orq[qp->orq_head];
    iwarp_core_qp_sq_finish(qp, o->sq_index, status, iwarp_core_cause_u32(cause));
    orq_pop(qp);
}

/* ---- RDMA Write (RFC 5040 §5.1) ------------------------------------------------------ */

static int rx_write(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    struct iwarp_term_cause cause;
    /* RFC 5041 §7.1 tagged checks on the Data Sink STag/TO; RFC 5040 §8.1.1 #5: the STag must
     * allow remote write. Every segment is checked on its own: tagged messages keep no state. */
    struct iwarp_mem_req r = {.stag = x->s.ddp.stag,
                              .to = x->s.ddp.to,
                              .len = x->s.payload_len,
                              .need = IWARP_MEM_ACCESS_REMOTE_WRITE,
                              .pd = qp->cfg.pd,
                              .qp = qp->cfg.qp_num};
    int rc = iwarp_ddp_rx_tagged_place(qp->cfg.mem, &r, x->s.payload, &cause);
    if (rc != 0)
        return fail(x, rc == IWARP_ERR_INVAL ? cause_catastrophic : cause, rc);
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
    uint32_t plen = (uint32_t)x->s.payload_len;
    /* RFC 5040 §5.2.2: the Data Sink MAY validate STag, TO and length against the Request; we
     * do (ddp_rx_tagged.h lists the causes: outside the sink is a DDP Tagged Buffer error,
     * the Data Sink being the only buffer this message may be placed in). */
    struct iwarp_ddp_rx_sink sink = {o->sink_stag, o->sink_to, o->len, o->received};
    int rc = iwarp_ddp_rx_sink_check(&sink, &x->s.ddp, plen, &cause);
    if (rc != 0) {
        read_fail(qp, IWARP_WC_BAD_RESP_ERR, cause);
        return fail(x, cause, rc);
    }
    /* The sink is our own memory (the Read's lkey): it must still be a valid MR of the PD with
     * local write (RFC 5041 §7.1 checks 1-5 before Placement); if the ULP deregistered it the
     * Read fails locally (LOC_PROT_ERR, as siw) and the Terminate carries the DDP cause. */
    struct iwarp_mem_req r = {.stag = o->sink_stag,
                              .to = x->s.ddp.to,
                              .len = plen,
                              .need = IWARP_MEM_ACCESS_LOCAL_WRITE,
                              .pd = qp->cfg.pd,
                              .qp = qp->cfg.qp_num};
    rc = iwarp_ddp_rx_tagged_place(qp->cfg.mem, &r, x->s.payload, &cause);
    if (rc != 0) {
        if (rc == IWARP_ERR_INVAL)
            cause = cause_catastrophic;
        read_fail(qp, IWARP_WC_LOC_PROT_ERR, cause);
        return fail(x, cause, rc);
    }
    o->received += plen;
    if (!x->s.ddp.last)
        return 0;
    /* RFC 5040 §5.5 rule 19: the Read completes once its Response is Delivered. */
    iwarp_core_qp_sq_finish(qp, o->sq_index, IWARP_WC_SUCCESS, 0);
    orq_pop(qp);
    return 0;
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
    uint32_t slot = (qp->srq_taken_head + qp->srq_taken_count) % IWARP_CORE_SRQ_WINDOW;
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

/* Copy n octets to offset off of the receive's SGE list (the untagged checks guarantee that
 * off + n is within rqe->len). */
static void scatter(const struct iwarp_core_rqe *rqe, uint64_t off, const uint8_t *src, size_t n)
{
    uint32_t nsge = rqe->nsge < IWARP_CORE_MAX_SGE ? rqe->nsge : IWARP_CORE_MAX_SGE;
    for (uint32_t i = 0; i < nsge && n > 0; i++) {
        size_t l = rqe->iov[i].iov_len;
        if (off >= l) {
            off -= l;
            continue;
        }
        size_t k = l - (size_t)off < n ? l - (size_t)off : n;
        memcpy((uint8_t *)rqe->iov[i].iov_base + off, src, k);
        src += k;
        n -= k;
        off = 0;
    }
}

static int rx_send(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    const struct iwarp_wire_segment *s = &x->s;
    uint8_t op = s->opcode;
    bool inv = op == IWARP_RDMAP_OP_SEND_INV || op == IWARP_RDMAP_OP_SEND_SE_INV;
    bool se = op == IWARP_RDMAP_OP_SEND_SE || op == IWARP_RDMAP_OP_SEND_SE_INV;
    struct iwarp_term_cause cause;
    struct iwarp_ddp_rx_place place;

    if (qp->cfg.srq != NULL)
        srq_pull(qp, &s->ddp);
    /* RFC 5041 §7.1 untagged checks (MSN, buffer, MO, length; RFC 5040 §5.3: a Send larger
     * than the buffer is an error). */
    int rc =
        iwarp_ddp_rx_uq_segment(&qp->uq_send, &s->ddp, (uint32_t)s->payload_len, &place, &cause);
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
    scatter(rqe, place.offset, s->payload, s->payload_len);
    if (!place.last)
        return 0;

    uint32_t msg_len = (uint32_t)place.msg_len; /* <= rqe->len, a uint32_t */
    if (inv) {
        /* RFC 5040 §5.3 and §7.2 checks 4-5: on Delivery of a Send with (SE and) Invalidate
         * the STag must be valid and associated with this stream, and is invalidated; else a
         * Terminate "STag cannot be Invalidated" (mem_region.h: 0/2/0x09 or 0/1/0x09). The
         * receive then completes with REM_INV_REQ_ERR (the peer's request was invalid; siw). */
        rc = iwarp_mem_remote_inv(qp->cfg.mem, s->inv_stag, qp->cfg.pd, qp->cfg.qp_num, &cause);
        if (rc != 0) {
            recv_fail(qp, IWARP_WC_REM_INV_REQ_ERR, cause, msg_len);
            return fail(x, cause, rc);
        }
    }
    /* RFC 5040 §5.3: Delivered in order, with the size written; SE variants are solicited. */
    iwarp_core_qp_recv_complete(qp, rqe->wr_id, IWARP_WC_SUCCESS, msg_len, 0, inv,
                                inv ? s->inv_stag : 0, se);
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_send);
    iwarp_core_qp_pop_rqe(qp);
    return 0;
}

/* ---- RDMA Read Request (RFC 5040 §5.2.1) --------------------------------------------- */

static int rx_read_req(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    const struct iwarp_rdmap_read_req *rr = &x->s.body.read_req;
    struct iwarp_term_cause cause;
    /* RFC 5040 §7.2 check 1, RFC 5041 §7.1 on queue 1. Its buffers are the free IRQ slots
     * (RFC 5040 §5.2.2: the Data Source keeps IRD Untagged Buffers on queue 1), so a Read
     * Request beyond IRD finds no buffer: 1/2/0x02 (siw sends 0/2/0x07 instead). */
    int rc = iwarp_ddp_rx_uq_segment(&qp->uq_read, &x->s.ddp, 0, NULL, &cause);
    if (rc != 0)
        return fail(x, rc == IWARP_ERR_PROTO ? cause : cause_catastrophic, rc);
    /* RFC 5040 §5.2.1, §7.2 checks 4a-4e on the Data Source, not for a zero-length Read;
     * Remote Protection causes 0/1/x, and the Terminate carries the Read Request header
     * (RFC 5040 §4.8 Figure 10, §7.1 rule 3). */
    struct iwarp_mem_req r = {.stag = rr->src_stag,
                              .to = rr->src_to,
                              .len = rr->size,
                              .need = IWARP_MEM_ACCESS_REMOTE_READ,
                              .pd = qp->cfg.pd,
                              .qp = qp->cfg.qp_num};
    uint64_t src = 0;
    rc = iwarp_mem_check_tagged(qp->cfg.mem, &r, IWARP_MEM_CAUSE_RDMAP, &src, &cause);
    if (rc != 0)
        return fail(x, rc == IWARP_ERR_INVAL ? cause_catastrophic : cause, rc);
    if (qp->irq_count >= IWARP_CORE_MAX_IRD) /* queue 1 never holds more buffers */
        return fail(x, cause_catastrophic, IWARP_ERR_STATE);
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_read);
    /* RFC 5040 §5.2.1: processed in the order sent; answered in that order (§5.5 rule 20). */
    qp->irq[(qp->irq_head + qp->irq_count) % IWARP_CORE_MAX_IRD] =
        (struct iwarp_core_irqe){.sink_stag = rr->sink_stag,
                                 .sink_to = rr->sink_to,
                                 .src_addr = src,
                                 .len = rr->size,
                                 .started = false};
    qp->irq_count++;
    return 0;
}

/* ---- Terminate (RFC 5040 §5.4) ------------------------------------------------------- */

static int rx_terminate(struct rx *x)
{
    struct iwarp_core_qp *qp = x->qp;
    struct iwarp_term_cause cause;
    /* RFC 5040 §5.4: one Terminate consumes the one buffer of queue 2 (MSN 1, MO 0). */
    int rc = iwarp_ddp_rx_uq_segment(&qp->uq_term, &x->s.ddp, 0, NULL, &cause);
    if (rc != 0)
        return fail(x, rc == IWARP_ERR_PROTO ? cause : cause_catastrophic, rc);
    (void)iwarp_ddp_rx_uq_complete(&qp->uq_term);
    /* RFC 5040 §5.4: Delivered to the ULP. A siw peer's bit-reversed header is read its way
     * (wire_term.h). */
    iwarp_core_qp_peer_terminated(qp, iwarp_term_layout(&x->s.body.term)->cause);
    return 0;
}

/* ---- entry points ---------------------------------------------------------------------- */

int iwarp_core_qp_rx_segment(struct iwarp_core_qp *qp, const uint8_t *seg, size_t len)
{
    if (qp == NULL || (seg == NULL && len != 0) || len > UINT32_MAX)
        return IWARP_ERR_INVAL;
    switch (qp->state) {
    case IWARP_CORE_QP_RUNNING:
    case IWARP_CORE_QP_CLOSING:
        break;
    case IWARP_CORE_QP_TERMINATING:
    case IWARP_CORE_QP_ERROR:
        /* RFC 5041 §7.1: after an error, silently drop every later segment; RFC 5040 §5.4:
         * nothing more is exchanged after a Terminate. */
        return 0;
    default:
        return IWARP_ERR_STATE; /* not in full operation: the LLP delivers nothing yet */
    }

    struct rx x = {.qp = qp, .seg = seg, .len = len};
    struct iwarp_term_cause cause;
    /* RFC 5041 §7.1, RFC 5040 §7.2 checks 1-3: the stateless header checks. */
    int rc = iwarp_wire_segment_decode(seg, len, &x.s, &cause);
    if (rc != 0)
        return fail(&x, cause, rc);

    switch (x.s.opcode) {
    case IWARP_RDMAP_OP_WRITE:
        return rx_write(&x);
    case IWARP_RDMAP_OP_READ_RESP:
        return rx_read_resp(&x);
    case IWARP_RDMAP_OP_SEND:
    case IWARP_RDMAP_OP_SEND_INV:
    case IWARP_RDMAP_OP_SEND_SE:
    case IWARP_RDMAP_OP_SEND_SE_INV:
        return rx_send(&x);
    case IWARP_RDMAP_OP_READ_REQ:
        return rx_read_req(&x);
    case IWARP_RDMAP_OP_TERMINATE:
        return rx_terminate(&x);
    default:
        /* RFC 7306 Immediate Data and atomics: not negotiated, not supported; an RDMAP that
         * does not implement them answers Unexpected OpCode (RFC 7306 §1.1, §4.1). */
        return fail(&x, cause_opcode, IWARP_ERR_NOTSUP);
    }
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
}

void iwarp_core_qp_rx_read_slot_free(struct iwarp_core_qp *qp)
{
    (void)iwarp_ddp_rx_uq_post(&qp->uq_read, 0);
}
