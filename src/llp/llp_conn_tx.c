/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The MPA connection's transmit side (see llp_conn.h, llp_conn_int.h): our negotiation frame,
 * then the engine's segments (and the RTR, and the connection's own Terminate) framed into
 * FPDUs in the TX ring, handed to the transport as iovecs and given back as written.
 */
#include <string.h>

#include "iwarp/errors.h"
#include "llp/llp_conn.h"
#include "llp/llp_conn_int.h"
#include "llp/llp_rtr.h"
#include "util/ring.h"
#include "wire/wire_term.h"

/* The TX ring's slot of the i-th FPDU after the oldest. */
static struct iwarp_llp_conn_txf *txf_slot(struct iwarp_llp_conn *c, uint32_t i)
{
    return &c->txf[iwarp_ring_slot(c->txf_head, i, IWARP_LLP_CONN_TX_SEGS)];
}

int iwarp_llp_conn_set_tx_stage(struct iwarp_llp_conn *c, uint8_t *buf, size_t len)
{
    /* One ring, in place before the first Read Response: one framed without it went from
     * registered memory, and the ring's accounting starts empty. */
    if (!buf || len < IWARP_MPA_MULPDU_MAX || len > UINT32_MAX || c->txs.buf || c->resp_framed)
        return IWARP_ERR_INVAL;
    c->txs = (struct iwarp_llp_conn_tx_stage){.buf = buf, .cap = (uint32_t)len};
    return 0;
}

/* Whether Read Response payloads are staged: CRC on and a staging ring given. */
static bool staging(const struct iwarp_llp_conn *c)
{
    return c->tx.crc && c->txs.buf != NULL;
}

/* The largest payload the staging ring can take now, contiguous. */
static uint32_t stage_room(struct iwarp_llp_conn *c)
{
    struct iwarp_llp_conn_tx_stage *s = &c->txs;
    if (s->used == 0)
        s->head = 0; /* empty: start over, the whole ring contiguous */
    if (s->used == s->cap)
        return 0;
    uint32_t tail = (s->head + s->cap - s->used) % s->cap; /* the oldest payload held */
    if (s->head < tail)
        return tail - s->head;
    uint32_t end = s->cap - s->head; /* up to the ring's end, or from its start up to tail */
    return end > tail ? end : tail;
}

/* Take n contiguous octets of the staging ring (stage_room() >= n); *span: what the FPDU
 * gives back when written (n, plus the ring's end skipped to start at 0). */
static uint8_t *stage_take(struct iwarp_llp_conn *c, uint32_t n, uint32_t *span)
{
    struct iwarp_llp_conn_tx_stage *s = &c->txs;
    if (stage_room(c) < n)
        return NULL;
    uint32_t off = s->head;
    *span = n;
    if (s->cap - s->head < n) {
        off = 0; /* the free space is at the ring's start (stage_room) */
        *span += s->cap - s->head;
    }
    s->head = (off + n) % s->cap;
    s->used += *span;
    return s->buf + off;
}

/* The largest DDP segment (header included) the engine may produce next, as
 * iwarp_core_eng_tx_next takes it; 0: none now. Should the next segment be a Read Response
 * (iwarp_core_qp_tx_read_resp_max bounds it; the engine decides which comes next), the staging
 * ring must take its payload: when the ring has less room than the Response could fill, the
 * segment is shortened to the room (RFC 5041 §5.2 bounds a DDP Segment by MULPDU, nothing
 * more), so that the ring fills up and one sendmsg takes as much as it holds. With the ring at
 * two FPDUs and 64 KiB Reads (FPDUs of 64768 and 768 octets), waiting for room for a whole one
 * made every Read Response its own sendmsg (docs/design.md, "Read Responses with CRC on"). An
 * empty ring takes any segment, so a Read of any size progresses. */
static uint32_t tx_seg_max(struct iwarp_llp_conn *c)
{
    if (!staging(c) || !c->eng->rdmap)
        return c->max_seg; /* a DDP-level stream answers no Reads */
    uint32_t need = iwarp_core_qp_tx_read_resp_max(c->eng->rdmap, c->max_seg);
    uint32_t room = stage_room(c);
    if (need == 0 || room >= need)
        return c->max_seg;
    return room >= IWARP_LLP_CONN_STAGE_SEG_MIN ? room : 0;
}

/* Frame the segment in slot t as the next FPDU (RFC 5044 §4.1: length, ULPDU in place,
 * markers, pad, CRC). With CRC on and a staging ring, a Read Response's payload is copied
 * into the ring in the pass that computes the CRC, and sent from there: the Data Source may
 * change before sendmsg copies it (RFC 5040 orders no local write against a remote Read), and
 * the octets sent must be those the CRC covered (RFC 5044 §6: else the peer Terminates). */
static int frame(struct iwarp_llp_conn *c, struct iwarp_llp_conn_txf *t)
{
    struct iovec in[1 + IWARP_CORE_TX_IOV_MAX];
    size_t nin = 0;
    in[nin++] = (struct iovec){t->seg.hdr, t->seg.hdr_len};
    for (uint32_t i = 0; i < t->seg.niov && i < IWARP_CORE_TX_IOV_MAX; i++)
        in[nin++] = t->seg.iov[i];
    t->stage_span = 0;
    uint8_t *stage = NULL;
    uint32_t span = 0;
    /* a small FPDU is a copy in its scratch already (iwarp_mpa_tx_small) */
    if (staging(c) && t->seg.src == IWARP_CORE_TX_IRQ && t->seg.payload_len > 0 &&
        !iwarp_mpa_tx_small(&c->tx, t->seg.hdr_len + t->seg.payload_len)) {
        stage = stage_take(c, t->seg.payload_len, &span);
        if (!stage)
            return IWARP_ERR_NOSPC; /* tx_fill checked the room: cannot happen */
    }
    iwarp_ssize n =
        iwarp_mpa_tx_frame_staged(&c->tx, in, nin, stage ? 1u : nin, stage, t->seg.payload_len,
                                  &t->scratch, t->iov, IWARP_LLP_CONN_FPDU_IOV);
    if (n < 0) {
        if (stage) { /* give the space back: it was the last taken */
            c->txs.used -= span;
            c->txs.head = (c->txs.head + c->txs.cap - span) % c->txs.cap;
        }
        return (int)n;
    }
    t->stage_span = span;
    c->resp_framed = c->resp_framed || t->seg.src == IWARP_CORE_TX_IRQ;
    t->niov = (uint32_t)n;
    uint32_t len = 0;
    for (uint32_t i = 0; i < t->niov; i++)
        len += (uint32_t)t->iov[i].iov_len;
    t->wire_len = len;
    return 0;
}

void iwarp_llp_conn_terminate(struct iwarp_llp_conn *c, int err, struct iwarp_term_cause cause,
                              const uint8_t *seg, size_t len)
{
    c->state = IWARP_LLP_CONN_FAILED;
    c->err = err;
    iwarp_llp_conn_rx_stop(c);
    c->rtr_pending = false;
    if (c->term_queued || !c->fullop || c->txf_count >= IWARP_LLP_CONN_TX_SEGS)
        return;
    struct iwarp_llp_conn_txf *t = txf_slot(c, c->txf_count);
    struct iwarp_term_offender off = {
        .seg = seg, .avail = len, .seg_len = (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len)};
    memset(&t->seg, 0, sizeof t->seg);
    iwarp_ssize n = iwarp_term_build(t->seg.hdr, sizeof t->seg.hdr, cause, seg ? &off : NULL);
    if (n <= 0)
        return;
    t->seg.hdr_len = (uint32_t)n;
    t->seg.src = IWARP_CORE_TX_NONE;
    t->seg.last = true;
    if (frame(c, t) != 0)
        return;
    c->txf_count++;
    c->term_queued = true;
}

/* Stage the negotiation's pending frame in neg_out when the previous one has been written. */
static void stage_neg(struct iwarp_llp_conn *c)
{
    if (iwarp_llp_conn_neg_out_pending(c) || iwarp_mpa_neg_tx_pending(&c->neg) == 0)
        return;
    c->neg_out_len =
        (uint16_t)iwarp_mpa_neg_tx(&c->neg, c->bounce.neg_out, IWARP_LLP_CONN_NEG_FRAME_MAX);
    c->neg_out_off = 0;
}

bool iwarp_llp_conn_tx_gated(struct iwarp_llp_conn *c, uint64_t now_ns)
{
    if (c->first_fpdu_at == 0)
        return false;
    if (now_ns < c->first_fpdu_at)
        return true;
    c->first_fpdu_at = 0;
    return false;
}

/* Whether the QP may produce segments now. */
static bool qp_may_send(const struct iwarp_llp_conn *c)
{
    if (c->state != IWARP_LLP_CONN_ESTABLISHED || !c->started || c->term_queued || c->tx_hold)
        return false;
    /* While our Read RTR is unanswered only a Terminate may go (see llp_rtr.h). */
    return !c->rtr_wait || c->eng->rdmap->term_pending;
}

/* Frame FPDUs ahead while the ring has room. */
static void tx_fill(struct iwarp_llp_conn *c)
{
    while (c->fullop && c->txf_count < IWARP_LLP_CONN_TX_SEGS &&
           c->state == IWARP_LLP_CONN_ESTABLISHED) {
        struct iwarp_llp_conn_txf *t = txf_slot(c, c->txf_count);
        if (c->rtr_pending) {
            uint8_t rtr = iwarp_mpa_neg_result(&c->neg)->rtr;
            if (iwarp_llp_rtr_build(c->eng->rdmap, rtr, &t->seg) != 0)
                break; /* cannot happen: the negotiation picked exactly one type */
            c->rtr_pending = false;
            c->rtr_wait = rtr == IWARP_MPA_RTR_READ;
        } else {
            uint32_t seg_max = qp_may_send(c) ? tx_seg_max(c) : 0;
            if (seg_max == 0 || !iwarp_core_eng_tx_next(c->eng, seg_max, &t->seg))
                break;
        }
        int rc = frame(c, t);
        if (rc != 0) {
            /* The QP produced a segment over max_seg or empty: an engine bug. */
            c->state = IWARP_LLP_CONN_FAILED;
            c->err = rc;
            iwarp_llp_conn_rx_stop(c);
            break;
        }
        c->txf_count++;
    }
}

/* Full operation is over once the QP says so and everything framed has been written. */
static void update_close(struct iwarp_llp_conn *c)
{
    if (c->state == IWARP_LLP_CONN_ESTABLISHED && c->started && c->txf_count == 0 &&
        !c->rtr_pending && iwarp_core_eng_tx_close(c->eng)) {
        c->state = IWARP_LLP_CONN_CLOSE;
        iwarp_llp_conn_rx_stop(c);
    }
}

uint32_t iwarp_llp_conn_tx_iov(struct iwarp_llp_conn *c, struct iovec *iov, uint32_t max,
                               uint64_t now_ns)
{
    c->now_ns = now_ns;
    uint32_t k = 0;
    stage_neg(c);
    if (iwarp_llp_conn_neg_out_pending(c) && k < max)
        iov[k++] = (struct iovec){c->bounce.neg_out + c->neg_out_off,
                                  (size_t)(c->neg_out_len - c->neg_out_off)};
    if (iwarp_llp_conn_tx_gated(c, now_ns))
        return k;
    tx_fill(c);
    update_close(c);
    size_t skip = c->txf_off;
    for (uint32_t f = 0; f < c->txf_count && k < max; f++) {
        struct iwarp_llp_conn_txf *t = txf_slot(c, f);
        for (uint32_t i = 0; i < t->niov && k < max; i++) {
            size_t l = t->iov[i].iov_len;
            if (skip >= l) {
                skip -= l;
                continue;
            }
            iov[k++] = (struct iovec){(uint8_t *)t->iov[i].iov_base + skip, l - skip};
            skip = 0;
        }
    }
    return k;
}

void iwarp_llp_conn_tx_ack(struct iwarp_llp_conn *c, size_t n)
{
    size_t st = (size_t)(c->neg_out_len - c->neg_out_off);
    size_t take = n < st ? n : st;
    c->neg_out_off = (uint16_t)(c->neg_out_off + take);
    n -= take;
    while (n > 0 && c->txf_count > 0) {
        struct iwarp_llp_conn_txf *t = txf_slot(c, 0);
        size_t rem = t->wire_len - c->txf_off;
        if (n < rem) {
            c->txf_off += (uint32_t)n;
            break;
        }
        n -= rem;
        c->txf_off = 0;
        c->txf_head = iwarp_ring_advance(c->txf_head, 1, IWARP_LLP_CONN_TX_SEGS);
        c->txf_count--;
        c->txs.used -= t->stage_span; /* written: its staged payload's space comes back */
        /* RFC 5044 §7.1.2 rule 4: the initiator's first FPDU is out; the responder may now
         * send, so what arrives is FPDUs. */
        if (iwarp_llp_conn_neg_state(c) == IWARP_MPA_NEG_SEND_FIRST) {
            (void)iwarp_mpa_neg_first_sent(&c->neg);
            iwarp_llp_conn_rx_begin(c);
        }
        if (t->seg.src != IWARP_CORE_TX_NONE && c->started)
            iwarp_core_eng_tx_sent(c->eng, &t->seg);
    }
    update_close(c);
}

bool iwarp_llp_conn_tx_ready(struct iwarp_llp_conn *c, uint64_t now_ns)
{
    if (iwarp_llp_conn_neg_out_pending(c) || iwarp_mpa_neg_tx_pending(&c->neg) > 0)
        return true;
    if (c->first_fpdu_at != 0 && now_ns < c->first_fpdu_at)
        return false;
    if (c->txf_count > 0 || (c->rtr_pending && c->state == IWARP_LLP_CONN_ESTABLISHED))
        return true;
    return qp_may_send(c) && iwarp_core_eng_tx_pending(c->eng);
}

bool iwarp_llp_conn_tx_check(struct iwarp_llp_conn *c, uint64_t now_ns)
{
    if (iwarp_llp_conn_tx_ready(c, now_ns))
        return true;
    /* what an empty tx_iov does besides: the first FPDU's hold ends, the close is noticed */
    c->now_ns = now_ns;
    if (!iwarp_llp_conn_tx_gated(c, now_ns))
        update_close(c);
    return false;
}
