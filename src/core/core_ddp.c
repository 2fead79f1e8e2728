/* SPDX-License-Identifier: BSD-2-Clause */
/* The DDP-level stream engine (RFC 5041 with a non-RDMAP ULP); see core_ddp.h. */
#include "core/core_ddp.h"

#include <stddef.h>
#include <string.h>

#include "ddp/ddp_rx_tagged.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"
#include "util/bytes.h"
#include "util/ring.h"
#include "wire/wire_rdmap.h"
#include "util/copy.h"

static struct iwarp_term_cause ddp_cause(uint8_t etype, uint8_t ecode)
{
    return (struct iwarp_term_cause){IWARP_TERM_LAYER_DDP, etype, ecode};
}

static void event(struct iwarp_core_ddp *d, int type, uint32_t cause)
{
    if (d->cfg.event)
        d->cfg.event(d->cfg.event_user, type, cause);
}

int iwarp_core_ddp_init(struct iwarp_core_ddp *d, const struct iwarp_core_ddp_cfg *cfg,
                        const struct iwarp_core_ddp_mem *mem)
{
    if (!d || !cfg || !mem || !cfg->mem || !cfg->send_cq || !cfg->recv_cq || !mem->sq || !mem->uq ||
        !mem->rqe || !mem->lens || cfg->num_queues == 0 ||
        cfg->num_queues > IWARP_CORE_DDP_MAX_QUEUES || cfg->rq_cap == 0 ||
        cfg->rq_cap > IWARP_CORE_MAX_WR || cfg->sq_cap == 0 || cfg->sq_cap > IWARP_CORE_MAX_WR ||
        cfg->max_send_sge > IWARP_CORE_MAX_SGE || cfg->max_recv_sge > IWARP_CORE_MAX_SGE)
        return IWARP_ERR_INVAL;
    memset(d, 0, sizeof *d);
    d->eng = (struct iwarp_core_engine){.ops = &iwarp_core_ddp_engine_ops};
    d->cfg = *cfg;
    d->sq = mem->sq;
    iwarp_core_stream_init(&d->stream, cfg->mem, mem->sq, sizeof *mem->sq,
                           offsetof(struct iwarp_core_ddp_sqe, held), cfg->sq_cap);
    d->uq = mem->uq;
    for (uint32_t i = 0; i < cfg->num_queues; i++) {
        size_t base = (size_t)i * cfg->rq_cap;
        int rc = iwarp_core_rq_init(&d->uq[i].rq, mem->rqe + base, cfg->rq_cap, cfg->max_recv_sge);
        if (rc == 0)
            rc = iwarp_ddp_rx_uq_init(&d->uq[i].rx, mem->lens + base, cfg->rq_cap);
        if (rc != 0)
            return rc;
    }
    /* RFC 5041 §4.3: "The initial value for MSN MUST be one", per queue. */
    for (uint32_t i = 0; i < IWARP_CORE_DDP_MAX_QUEUES; i++)
        d->send_msn[i] = IWARP_DDP_MSN_INIT;
    return 0;
}

int iwarp_core_ddp_start(struct iwarp_core_ddp *d, uint32_t ird, uint32_t ord)
{
    (void)ird;
    (void)ord;
    if (d->stream.state != IWARP_CORE_STREAM_IDLE)
        return IWARP_ERR_STATE;
    d->stream.state = IWARP_CORE_STREAM_RUNNING; /* RFC 5041 §6.1: both directions at once */
    return 0;
}

/* ---- completions and flushing ------------------------------------------------------------ */

static void push_send(struct iwarp_core_ddp *d, const struct iwarp_core_ddp_sqe *e, uint8_t status)
{
    if (!e->signaled && status == IWARP_WC_SUCCESS)
        return;
    struct iwarp_wc wc = {
        .wr_id = e->wr_id,
        .status = (enum iwarp_wc_status)status,
        .opcode = IWARP_WC_DDP_SEND,
        .byte_len = status == IWARP_WC_SUCCESS ? e->len : 0,
        .qp_num = d->cfg.qp_num,
    };
    (void)iwarp_core_cq_push(d->cfg.send_cq, &wc, false);
}

static void flush_sq(struct iwarp_core_ddp *d)
{
    d->tx_active = false;
    while (d->stream.sq_count) {
        push_send(d, &d->sq[d->stream.sq_head], IWARP_WC_WR_FLUSH_ERR);
        iwarp_core_stream_sq_retire(&d->stream);
        d->eng.stats.flushed++;
    }
    iwarp_core_stream_sq_flushed(&d->stream);
}

static void flush_rqs(struct iwarp_core_ddp *d)
{
    for (uint32_t q = 0; q < d->cfg.num_queues; q++) {
        struct iwarp_core_rqe *r;
        while ((r = iwarp_core_rq_peek(&d->uq[q].rq)) != NULL) {
            struct iwarp_wc wc = {.wr_id = r->wr_id,
                                  .status = IWARP_WC_WR_FLUSH_ERR,
                                  .opcode = IWARP_WC_DDP_RECV,
                                  .qp_num = d->cfg.qp_num,
                                  .ddp_qn = q};
            (void)iwarp_core_cq_push(d->cfg.recv_cq, &wc, false);
            d->eng.stats.flushed++;
            iwarp_core_rqe_hold(r, d->cfg.mem, false);
            iwarp_core_rq_pop(&d->uq[q].rq);
        }
        /* Nothing is received any more; the DDP state only has to stay consistent. */
        (void)iwarp_ddp_rx_uq_init(&d->uq[q].rx, d->uq[q].rx.lens, d->uq[q].rx.cap);
    }
}

/* ---- posting ------------------------------------------------------------------------------ */

int iwarp_core_ddp_post_send(struct iwarp_core_ddp *d, const struct iwarp_core_ddp_send *s)
{
    if (!d || !s || s->num_sge < 0 || (uint32_t)s->num_sge > d->cfg.max_send_sge ||
        (s->num_sge > 0 && !s->sg_list) || (!s->tagged && s->qn >= IWARP_CORE_DDP_MAX_QUEUES))
        return IWARP_ERR_INVAL;
    /* RFC 5041 §6.2.1: after a graceful teardown request, data transfer requests fail. */
    if (d->stream.state != IWARP_CORE_STREAM_IDLE && d->stream.state != IWARP_CORE_STREAM_RUNNING)
        return IWARP_ERR_STATE;
    if (iwarp_core_stream_sq_full(&d->stream))
        return IWARP_ERR_NOSPC;
    struct iwarp_core_ddp_sqe *e =
        &d->sq[iwarp_core_stream_sq_slot(&d->stream, d->stream.sq_count)];
    /* A source: local read needs no right; each lkey must be an MR of the PD. RFC 5041 §5.2:
     * the ULP Message Length MUST be less than 2^32. */
    uint32_t total = 0;
    int rc = iwarp_core_sge_resolve(d->cfg.mem, d->cfg.pd, 0, s->sg_list, (uint32_t)s->num_sge,
                                    e->iov, &e->held, &total);
    if (rc != 0)
        return rc;
    /* RFC 5041 §7.1 check 5: the Data Sink rejects a tagged segment whose TO + length wraps
     * 64 bits. */
    if (s->tagged && total > UINT64_MAX - s->to)
        return IWARP_ERR_INVAL;
    e->wr_id = s->wr_id;
    e->tagged = s->tagged;
    e->signaled = s->signaled || d->cfg.sq_sig_all;
    e->qn = s->tagged ? 0 : s->qn;
    e->stag = s->tagged ? s->stag : 0;
    e->to = s->tagged ? s->to : 0;
    memset(e->rsvdulp, 0, sizeof e->rsvdulp);
    if (s->rsvdulp)
        memcpy(e->rsvdulp, s->rsvdulp, s->tagged ? 1u : IWARP_CORE_DDP_RSVDULP_LEN);
    e->nsge = (uint32_t)s->num_sge;
    e->len = total;
    iwarp_core_stream_sq_post(&d->stream);
    return 0;
}

int iwarp_core_ddp_post_recv(struct iwarp_core_ddp *d, uint32_t qn, const struct iwarp_recv_wr *wr)
{
    if (!d || !wr || qn >= d->cfg.num_queues)
        return IWARP_ERR_INVAL;
    /* RFC 5041 §7.1: after a receive error nothing is placed any more. */
    if (d->stream.state == IWARP_CORE_STREAM_ERROR || d->rx_stopped)
        return IWARP_ERR_STATE;
    struct iwarp_core_ddp_uq *q = &d->uq[qn];
    if (q->rq.count == q->rq.cap)
        return IWARP_ERR_NOSPC;
    struct iwarp_core_rqe rqe;
    int rc = iwarp_core_rqe_from_wr(&rqe, wr, d->cfg.max_recv_sge, d->cfg.mem, d->cfg.pd);
    if (rc != 0)
        return rc;
    /* The two rings move in lockstep: the oldest posted buffer takes the expected MSN. */
    rc = iwarp_ddp_rx_uq_post(&q->rx, rqe.len);
    if (rc == 0)
        rc = iwarp_core_rq_push(&q->rq, &rqe);
    if (rc == 0) /* the MRs stay registered while the receive is posted (mem_region.h) */
        iwarp_core_rqe_hold(&rqe, d->cfg.mem, true);
    return rc;
}

/* ---- transmit ----------------------------------------------------------------------------- */

bool iwarp_core_ddp_tx_pending(const struct iwarp_core_ddp *d)
{
    return iwarp_core_stream_open(&d->stream) &&
           (d->tx_active || d->stream.sq_next < d->stream.sq_count);
}

bool iwarp_core_ddp_tx_close(const struct iwarp_core_ddp *d)
{
    return d->stream.state == IWARP_CORE_STREAM_CLOSING && d->stream.sq_count == 0 &&
           d->stream.tx_unsent == 0;
}

/* Start segmenting the message at sq_next. ddp_tx segments it as an RDMAP Send (untagged) or
 * RDMA Write (tagged): their DDP headers are exactly DDP's (no RDMAP header follows, RFC 5040
 * Figure 5), so MO/TO, L and the payload slices are DDP's own; octet 1 (and the untagged
 * RsvdULP[8:39] and QN) are then rewritten with the ULP's values (see patch_hdr). */
static int tx_start(struct iwarp_core_ddp *d)
{
    const struct iwarp_core_ddp_sqe *e =
        &d->sq[iwarp_core_stream_sq_slot(&d->stream, d->stream.sq_next)];
    struct iwarp_wire_msg wm = {0};
    if (e->tagged) {
        wm.opcode = IWARP_RDMAP_OP_WRITE;
        wm.stag = e->stag;
        wm.to = e->to; /* RFC 5041 §5.2: the ULP gives the STag and the initial TO */
    } else {
        wm.opcode = IWARP_RDMAP_OP_SEND;
        wm.msn = d->send_msn[e->qn]; /* RFC 5041 §4.3: one MSN per QN */
    }
    int rc = iwarp_ddp_tx_init(&d->tx_msg, &wm, e->iov, e->nsge, e->len);
    if (rc != 0)
        return rc;
    if (!e->tagged)
        d->send_msn[e->qn]++; /* modulo 2^32 (RFC 5041 §4.3) */
    d->tx_active = true;
    d->stream.sq_next++;
    return 0;
}

/* RFC 5041 §4.2, §4.3: RsvdULP is the ULP's, the same in every segment of the message; the
 * untagged QN is the one the ULP chose. */
static int patch_hdr(const struct iwarp_core_ddp_sqe *e, uint8_t *hdr, size_t len)
{
    struct iwarp_ddp_hdr h;
    if (iwarp_ddp_hdr_decode(hdr, len, &h) < 0)
        return IWARP_ERR_INVAL;
    h.rsvdulp = e->rsvdulp[0];
    if (!e->tagged) {
        h.rsvdulp_word = iwarp_load_be32(e->rsvdulp + 1);
        h.qn = e->qn;
    }
    iwarp_ssize n = iwarp_ddp_hdr_encode(hdr, len, &h);
    return n < 0 ? (int)n : 0;
}

int iwarp_core_ddp_tx_next(struct iwarp_core_ddp *d, uint32_t max_seg,
                           struct iwarp_core_tx_seg *seg)
{
    if (!iwarp_core_stream_open(&d->stream))
        return 0;
    if (!d->tx_active && d->stream.sq_next >= d->stream.sq_count)
        return 0;
    uint32_t next = d->tx_active ? d->stream.sq_next - 1u : d->stream.sq_next;
    const struct iwarp_core_held *held = &d->sq[iwarp_core_stream_sq_slot(&d->stream, next)].held;
    if ((!d->tx_active || d->tx_msg.sent < d->tx_msg.len) &&
        !iwarp_core_held_usable(held, d->cfg.mem)) {
        /* An MR of the message was deregistered since the post: its memory may be gone. The
         * stream cannot skip a message (the peer's MSNs) nor finish a started one: a local
         * fatal error, everything flushed. */
        event(d, IWARP_EVENT_QP_FATAL,
              iwarp_core_cause_u32(ddp_cause(IWARP_TERM_DDP_ETYPE_CATASTROPHIC, 0)));
        iwarp_core_ddp_set_error(d);
        return 0;
    }
    if (!d->tx_active && tx_start(d) != 0)
        return 0; /* tx_start cannot fail: post_send checked the message */
    uint32_t index = iwarp_core_stream_sq_slot(&d->stream, d->stream.sq_next - 1u);
    const struct iwarp_core_ddp_sqe *e = &d->sq[index];
    memset(seg, 0, sizeof *seg);
    size_t npl = 0;
    iwarp_ssize h = iwarp_ddp_tx_next(&d->tx_msg, max_seg, seg->hdr, sizeof seg->hdr, seg->iov,
                                      IWARP_CORE_TX_IOV_MAX, &npl);
    if (h <= 0 || patch_hdr(e, seg->hdr, (size_t)h) != 0)
        return 0; /* max_seg below a header: the LLP's MULPDU never is */
    uint32_t pl = 0;
    for (size_t i = 0; i < npl; i++)
        pl += (uint32_t)seg->iov[i].iov_len;
    seg->hdr_len = (uint32_t)h;
    seg->niov = (uint32_t)npl;
    seg->payload_len = pl;
    seg->src = IWARP_CORE_TX_SQ;
    seg->last = iwarp_ddp_tx_done(&d->tx_msg);
    seg->index = index;
    if (seg->last)
        d->tx_active = false;
    iwarp_core_stream_tx_produced(&d->stream);
    return 1;
}

void iwarp_core_ddp_tx_sent(struct iwarp_core_ddp *d, const struct iwarp_core_tx_seg *seg)
{
    if (!iwarp_core_stream_tx_returned(&d->stream))
        return;
    /* RFC 5041 §5.4: at the Data Source a message is complete once the LLP has it. Messages
     * go out in posting order, so the one ending here is the oldest. */
    if (seg->last && d->stream.sq_count && seg->index == d->stream.sq_head &&
        d->stream.state != IWARP_CORE_STREAM_ERROR) {
        push_send(d, &d->sq[d->stream.sq_head], IWARP_WC_SUCCESS);
        iwarp_core_stream_sq_retire(&d->stream);
    }
    if (iwarp_core_stream_sq_flush_due(&d->stream))
        flush_sq(d);
}

/* ---- receive ------------------------------------------------------------------------------ */

/* RFC 5041 §7.1: report the first receive error with the offending header and segment length,
 * then drop every later segment. Nothing goes to the peer and the stream stays up (RFC 5041
 * §6.2: DDP never tears it down itself; §7.1: the ULP may still send). */
static int rx_fail(struct iwarp_core_ddp *d, int err, struct iwarp_term_cause cause,
                   const uint8_t *hdr, size_t hdr_len, size_t seg_len)
{
    if (d->rx_stopped)
        return err;
    d->rx_stopped = true; /* a pending segment stays pending: rx_dst_valid() now says no */
    d->err.cause = iwarp_core_cause_u32(cause);
    d->err.seg_len = seg_len > UINT32_MAX ? UINT32_MAX : (uint32_t)seg_len;
    size_t n = 0;
    if (hdr && hdr_len) {
        n = iwarp_ddp_hdr_len(hdr[0]);
        if (n > hdr_len)
            n = hdr_len;
        memcpy(d->err.hdr, hdr, n);
    }
    d->err.hdr_len = (uint8_t)n;
    /* Tagged Buffer errors are protection errors; the others are fatal to reception. */
    bool prot = cause.layer == IWARP_TERM_LAYER_DDP && cause.etype == IWARP_TERM_DDP_ETYPE_TAGGED &&
                cause.ecode != IWARP_TERM_DDP_T_VERSION;
    event(d, prot ? IWARP_EVENT_QP_ACCESS_ERR : IWARP_EVENT_QP_FATAL, d->err.cause);
    flush_rqs(d);
    return err;
}

uint32_t iwarp_core_ddp_rx_hdr_len(const uint8_t *p, size_t avail, uint32_t seg_len)
{
    if (avail == 0 || seg_len == 0)
        return 0;
    uint32_t n = (uint32_t)iwarp_ddp_hdr_len(p[0]);
    return n < seg_len ? n : seg_len;
}

/* The iovecs covering [off, off + len) of a receive's SGEs (inside them: checked by the
 * caller). Returns how many were written. */
static uint32_t slice_rqe(const struct iwarp_core_rqe *r, uint64_t off, uint64_t len,
                          struct iovec *out, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nsge && len > 0 && n < max; i++) {
        size_t l = r->iov[i].iov_len;
        if (off >= l) {
            off -= l;
            continue;
        }
        size_t take = l - (size_t)off;
        if (take > len)
            take = (size_t)len;
        out[n++] = (struct iovec){(uint8_t *)r->iov[i].iov_base + off, take};
        len -= take;
        off = 0;
    }
    return n;
}

static int rx_untagged(struct iwarp_core_ddp *d, const struct iwarp_ddp_hdr *h, const uint8_t *hdr,
                       size_t hdr_len, size_t seg_len, struct iovec *dst, uint32_t max,
                       uint32_t *ndst)
{
    uint32_t pl = (uint32_t)(seg_len - IWARP_DDP_UNTAGGED_HDR_LEN);
    /* RFC 5041 §7.1 check 1: the QN is valid for this stream. */
    if (h->qn >= d->cfg.num_queues)
        return rx_fail(d, IWARP_ERR_DDP_QN,
                       ddp_cause(IWARP_TERM_DDP_ETYPE_UNTAGGED, IWARP_TERM_DDP_U_INVALID_QN), hdr,
                       hdr_len, seg_len);
    struct iwarp_core_ddp_uq *q = &d->uq[h->qn];
    struct iwarp_ddp_rx_place place;
    struct iwarp_term_cause cause;
    /* RFC 5041 §7.1 checks 2-5 (MSN, buffer, MO, length; see ddp_rx_untagged.h). */
    int rc = iwarp_ddp_rx_uq_segment(&q->rx, h, pl, &place, &cause);
    if (rc != 0)
        return rx_fail(d, rc, cause, hdr, hdr_len, seg_len);
    const struct iwarp_core_rqe *r = iwarp_core_rq_peek(&q->rq);
    if (r && !iwarp_core_held_usable(&r->held, d->cfg.mem)) /* deregistered since the post */
        return rx_fail(d, IWARP_ERR_STAG_INVALID, ddp_cause(IWARP_TERM_DDP_ETYPE_CATASTROPHIC, 0),
                       hdr, hdr_len, seg_len);
    *ndst = r ? slice_rqe(r, place.offset, pl, dst, max) : 0;
    d->rx_cur = (struct iwarp_core_ddp_rx_cur){.active = true,
                                               .last = place.last,
                                               .qn = h->qn,
                                               .msn = h->msn,
                                               .payload_len = pl,
                                               .msg_len = place.msg_len};
    d->rx_cur.rsvdulp[0] = h->rsvdulp;
    iwarp_store_be32(d->rx_cur.rsvdulp + 1, h->rsvdulp_word);
    return 0;
}

static int rx_tagged(struct iwarp_core_ddp *d, const struct iwarp_ddp_hdr *h, const uint8_t *hdr,
                     size_t hdr_len, size_t seg_len, struct iovec *dst, uint32_t *ndst)
{
    uint32_t pl = (uint32_t)(seg_len - IWARP_DDP_TAGGED_HDR_LEN);
    if (pl > 0) {
        /* RFC 5041 §7.1 tagged checks 1-5 (STag valid for the stream's PD, buffer, bounds,
         * TO wrap); RFC 5041 §5.2: a zero-length segment's STag and TO are not checked. */
        struct iwarp_mem_req req = {.stag = h->stag,
                                    .to = h->to,
                                    .len = pl,
                                    .need = IWARP_MEM_ACCESS_REMOTE_WRITE,
                                    .pd = d->cfg.pd,
                                    .qp = d->cfg.qp_num};
        struct iwarp_term_cause cause;
        uint64_t addr = 0;
        int rc = iwarp_ddp_rx_tagged_target(d->cfg.mem, &req, &addr, &cause);
        if (rc != 0)
            return rx_fail(d, rc, cause, hdr, hdr_len, seg_len);
        dst[0] = (struct iovec){(void *)(uintptr_t)addr, pl};
        *ndst = 1;
    }
    d->rx_cur =
        (struct iwarp_core_ddp_rx_cur){.active = true,
                                       .last = h->last,
                                       .tagged = true,
                                       .stag = h->stag,
                                       .to = h->to,
                                       .addr = *ndst ? (uint64_t)(uintptr_t)dst[0].iov_base : 0,
                                       .gen = d->cfg.mem->gen,
                                       .payload_len = pl};
    d->rx_cur.rsvdulp[0] = h->rsvdulp;
    return 0;
}

int iwarp_core_ddp_rx_hdr(struct iwarp_core_ddp *d, const uint8_t *hdr, size_t hdr_len,
                          size_t seg_len, struct iovec *dst, uint32_t max, uint32_t *ndst)
{
    if (!d || (!hdr && hdr_len) || !dst || !ndst || max < IWARP_CORE_RX_IOV_MAX ||
        hdr_len > seg_len || seg_len > UINT32_MAX)
        return IWARP_ERR_INVAL;
    *ndst = 0;
    if (d->stream.state == IWARP_CORE_STREAM_IDLE)
        return IWARP_ERR_STATE;
    /* RFC 5041 §7.1: after an error (or teardown) every segment is silently dropped, and one
     * still pending from before it is over. */
    if (d->rx_stopped || d->stream.state == IWARP_CORE_STREAM_ERROR) {
        d->rx_cur.active = false;
        return 0;
    }
    if (d->rx_cur.active)
        return IWARP_ERR_STATE;
    struct iwarp_ddp_hdr h;
    if (iwarp_ddp_hdr_decode(hdr, hdr_len, &h) < 0) {
        if (hdr_len < seg_len)
            return IWARP_ERR_INVAL; /* the caller gave too few of the octets it has */
        /* A segment shorter than its DDP header: no field can be trusted (RFC 5041 §7.2
         * Local Catastrophic, as for the RDMAP stream, docs/design.md §6). */
        return rx_fail(d, IWARP_ERR_DDP_HDR_LEN, ddp_cause(IWARP_TERM_DDP_ETYPE_CATASTROPHIC, 0x00),
                       hdr, hdr_len, seg_len);
    }
    /* RFC 5041 §4.1: DV MUST be 1 on every segment of the stream (§7.2: 1/1/0x04 tagged,
     * 1/2/0x06 untagged). */
    if (h.dv != IWARP_DDP_VERSION)
        return rx_fail(d, IWARP_ERR_DDP_VERSION,
                       h.tagged
                           ? ddp_cause(IWARP_TERM_DDP_ETYPE_TAGGED, IWARP_TERM_DDP_T_VERSION)
                           : ddp_cause(IWARP_TERM_DDP_ETYPE_UNTAGGED, IWARP_TERM_DDP_U_VERSION),
                       hdr, hdr_len, seg_len);
    if (h.tagged)
        return rx_tagged(d, &h, hdr, hdr_len, seg_len, dst, ndst);
    return rx_untagged(d, &h, hdr, hdr_len, seg_len, dst, max, ndst);
}

bool iwarp_core_ddp_rx_dst_valid(struct iwarp_core_ddp *d)
{
    struct iwarp_core_ddp_rx_cur *c = &d->rx_cur;
    if (!c->active)
        return true;                                                 /* nothing pending */
    if (d->rx_stopped || d->stream.state == IWARP_CORE_STREAM_ERROR) /* flushed: the ULP's again */
        return false;
    if (c->payload_len == 0)
        return true;
    if (!c->tagged) {
        /* a posted receive leaves only by a flush; its MRs may be deregistered meanwhile */
        const struct iwarp_core_rqe *r = iwarp_core_rq_peek(&d->uq[c->qn].rq);
        if (r == NULL || iwarp_core_held_usable(&r->held, d->cfg.mem))
            return true;
        (void)rx_fail(d, IWARP_ERR_STAG_INVALID, ddp_cause(IWARP_TERM_DDP_ETYPE_CATASTROPHIC, 0),
                      NULL, 0, (size_t)c->payload_len + IWARP_DDP_UNTAGGED_HDR_LEN);
        return false;
    }
    /* Nothing has stopped naming what it named since rx_hdr checked the STag (every
     * deregistration, invalidation and rebinding moves gen): the checks would pass again. */
    if (c->gen == d->cfg.mem->gen)
        return true;
    /* RFC 5041 §7.1 tagged checks 1-5 again: the STag may have changed since rx_hdr. */
    struct iwarp_mem_req req = {.stag = c->stag,
                                .to = c->to,
                                .len = c->payload_len,
                                .need = IWARP_MEM_ACCESS_REMOTE_WRITE,
                                .pd = d->cfg.pd,
                                .qp = d->cfg.qp_num};
    struct iwarp_term_cause cause =
        ddp_cause(IWARP_TERM_DDP_ETYPE_TAGGED, IWARP_TERM_DDP_T_INVALID_STAG);
    uint64_t addr = 0;
    int rc = iwarp_ddp_rx_tagged_target(d->cfg.mem, &req, &addr, &cause);
    if (rc == 0 && addr == c->addr) {
        c->gen = d->cfg.mem->gen; /* checked at this gen: the next look is free again */
        return true;
    }
    /* registered again elsewhere: for this segment the STag names no buffer it may use */
    (void)rx_fail(d, rc != 0 ? rc : IWARP_ERR_STAG_INVALID, cause, NULL, 0,
                  (size_t)c->payload_len + IWARP_DDP_TAGGED_HDR_LEN);
    return false;
}

int iwarp_core_ddp_rx_payload_done(struct iwarp_core_ddp *d)
{
    if (!d || !d->rx_cur.active)
        return 0;
    struct iwarp_core_ddp_rx_cur c = d->rx_cur;
    d->rx_cur.active = false;
    if (d->rx_stopped || d->stream.state == IWARP_CORE_STREAM_ERROR || !c.last) {
        if (c.tagged && !d->rx_stopped)
            d->tagged_rx += c.payload_len;
        return 0;
    }
    /* RFC 5041 §5.4: the segment with L is Placed and so is everything before it (in-order
     * LLP, segments handled in arrival order): Deliver, with the ULP Message Length (untagged)
     * and the RsvdULP field; §4.2: the STag of a tagged message. */
    struct iwarp_wc wc = {.status = IWARP_WC_SUCCESS, .qp_num = d->cfg.qp_num};
    memcpy(wc.ddp_rsvdulp, c.rsvdulp, sizeof wc.ddp_rsvdulp);
    if (c.tagged) {
        uint64_t total = d->tagged_rx + c.payload_len;
        d->tagged_rx = 0;
        wc.opcode = IWARP_WC_DDP_TAGGED_RECV;
        wc.byte_len = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
        wc.ddp_stag = c.stag;
        (void)iwarp_core_cq_push(d->cfg.recv_cq, &wc, false);
        return 0;
    }
    struct iwarp_core_ddp_uq *q = &d->uq[c.qn];
    const struct iwarp_core_rqe *r = iwarp_core_rq_peek(&q->rq);
    wc.opcode = IWARP_WC_DDP_RECV;
    wc.wr_id = r ? r->wr_id : 0;
    wc.byte_len = (uint32_t)c.msg_len; /* <= the buffer's length, itself < 2^32 */
    wc.ddp_qn = c.qn;
    wc.ddp_msn = c.msn;
    (void)iwarp_core_cq_push(d->cfg.recv_cq, &wc, false);
    (void)iwarp_ddp_rx_uq_complete(&q->rx);
    if (r) {
        iwarp_core_rqe_hold(iwarp_core_rq_peek(&q->rq), d->cfg.mem, false);
        iwarp_core_rq_pop(&q->rq);
    }
    return 0;
}

int iwarp_core_ddp_rx_segment(struct iwarp_core_ddp *d, const uint8_t *seg, size_t len)
{
    if (!d || (!seg && len))
        return IWARP_ERR_INVAL;
    uint32_t hl =
        iwarp_core_ddp_rx_hdr_len(seg, len, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t n = 0;
    int rc = iwarp_core_ddp_rx_hdr(d, seg, hl, len, dst, IWARP_CORE_RX_IOV_MAX, &n);
    if (rc != 0)
        return rc;
    iwarp_copy_scatter(dst, n, seg + hl, len - hl);
    return iwarp_core_ddp_rx_payload_done(d);
}

void iwarp_core_ddp_rx_llp_error(struct iwarp_core_ddp *d, struct iwarp_term_cause cause,
                                 const uint8_t *hdr, size_t hdr_len)
{
    if (d->stream.state == IWARP_CORE_STREAM_ERROR)
        return;
    (void)rx_fail(d, IWARP_ERR_PROTO, cause, hdr, hdr_len, 0);
}

/* ---- teardown ------------------------------------------------------------------------------ */

void iwarp_core_ddp_disconnect(struct iwarp_core_ddp *d)
{
    if (d->stream.state == IWARP_CORE_STREAM_IDLE || d->stream.state == IWARP_CORE_STREAM_RUNNING)
        d->stream.state = IWARP_CORE_STREAM_CLOSING;
}

void iwarp_core_ddp_llp_closed(struct iwarp_core_ddp *d, bool graceful)
{
    bool fatal;
    if (!iwarp_core_stream_llp_closed(&d->stream, graceful, &fatal))
        return;
    /* RFC 5041 §6.2.2: a lost LLP connection is a fatal error the ULP is told of (RFC 5044 §8
     * code 1: TCP connection closed, terminated, or lost). */
    if (fatal)
        event(d, IWARP_EVENT_QP_FATAL,
              iwarp_core_cause_u32((struct iwarp_term_cause){
                  IWARP_TERM_LAYER_LLP, IWARP_TERM_LLP_ETYPE_MPA, IWARP_TERM_MPA_TCP_CLOSED}));
    flush_rqs(d);
    flush_sq(d);
}

void iwarp_core_ddp_set_error(struct iwarp_core_ddp *d)
{
    if (d->stream.state == IWARP_CORE_STREAM_ERROR)
        return;
    d->stream.state = IWARP_CORE_STREAM_ERROR;
    flush_rqs(d);
    if (iwarp_core_stream_sq_flush_now(&d->stream))
        flush_sq(d);
}

enum iwarp_qp_state iwarp_core_ddp_verbs_state(const struct iwarp_core_ddp *d)
{
    /* RFC 5041 §7.1: after a receive error the stream still sends (verbs SQE). */
    if (d->stream.state == IWARP_CORE_STREAM_RUNNING && d->rx_stopped)
        return IWARP_QPS_SQE;
    return iwarp_core_stream_verbs_state(&d->stream);
}

void iwarp_core_ddp_fini(struct iwarp_core_ddp *d)
{
    iwarp_core_stream_fini(&d->stream);
    for (uint32_t q = 0; q < d->cfg.num_queues; q++) {
        struct iwarp_core_rqe *r;
        while ((r = iwarp_core_rq_peek(&d->uq[q].rq)) != NULL) {
            iwarp_core_rqe_hold(r, d->cfg.mem, false);
            iwarp_core_rq_pop(&d->uq[q].rq);
        }
    }
}
