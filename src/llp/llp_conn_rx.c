/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The MPA connection's receive side (see llp_conn.h): where each read lands, the negotiation
 * frame, then full operation through the deframer: staging, direct placement, the responder's
 * first FPDU, deframer errors. llp_conn_int.h draws the bounce buffer's regions and the
 * receive states (recv.state) this file moves through.
 */
#include <string.h>

#include "iwarp/errors.h"
#include "llp/llp_conn.h"
#include "llp/llp_conn_int.h"
#include "llp/llp_rtr.h"
#include "util/bytes.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"
#include "util/copy.h"

#define MPA_PD_LEN_OFF 18u /* PD_Length in the Request/Reply (RFC 5044 §7.1.1) */
/* The first ULPDU octets staged before deciding: every payload carrier's header is as long. */
#define HDR_PROBE      IWARP_DDP_TAGGED_HDR_LEN

/* Exact reads only while more than this many ULPDU octets are still to come. */
#define COPY_MAX 2048u
#define RA_SMALL IWARP_LLP_CONN_RA_SMALL

/* p as a writable pointer into the bounce buffer, or NULL when p lies outside it. */
static uint8_t *bounce_at(struct iwarp_llp_conn *c, const uint8_t *p)
{
    return p >= c->bounce.stage && p < c->bounce.end ? c->bounce.stage + (p - c->bounce.stage)
                                                     : NULL;
}

/* Where the current FPDU's staged ULPDU lies (fpdu.seg, always in the bounce buffer). */
static uint8_t *fpdu_base(struct iwarp_llp_conn *c)
{
    return bounce_at(c, c->recv.fpdu.seg);
}

/* The staged ULPDU moves to the start of the bounce buffer. */
static void move_to_start(struct iwarp_llp_conn *c)
{
    struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    iwarp_copy_move(c->bounce.stage, f->seg, f->staged);
    c->rx_moved_octets += f->staged;
    f->seg = c->bounce.stage;
}

/* Whether a ULPDU of ulpdu_len octets starting at p fits in the bounce buffer with RA_SMALL
 * more behind it (its PAD and CRC, and a read-ahead): a ULPDU staged whole may then stay where
 * its first octets were read, the reads of its rest and of what follows landing behind them. */
static bool fits_from(const struct iwarp_llp_conn *c, const uint8_t *p, uint32_t ulpdu_len)
{
    return (size_t)(c->bounce.end - p) >= (size_t)ulpdu_len + RA_SMALL;
}

/* The next FPDU starts from nothing staged, in the staging area. */
static void fpdu_reset(struct iwarp_llp_conn *c)
{
    struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    f->place = IWARP_LLP_CONN_RX_STAGED;
    f->ulpdu_len = f->ulpdu_done = 0;
    f->seg = c->bounce.stage;
    f->staged = 0;
    f->ndst = f->dst_i = 0;
    f->dst_off = 0;
}

void iwarp_llp_conn_rx_begin(struct iwarp_llp_conn *c)
{
    if (c->recv.state == IWARP_LLP_CONN_RX_NEG)
        c->recv.state = IWARP_LLP_CONN_RX_HDR;
}

/* ---- NEG: the peer's Request/Reply ----------------------------------------------------- */

/* Whether the negotiation still reads (NEG): the peer's frame, or anything the peer sends
 * where it must be silent: the initiator after its Request while our ULP decides (responder,
 * REQUEST), the responder before our first FPDU is out (initiator, SEND_FIRST). */
static bool neg_reading(const struct iwarp_llp_conn *c)
{
    enum iwarp_mpa_neg_state s = iwarp_llp_conn_neg_state(c);
    return s == IWARP_MPA_NEG_WAIT_REPLY || s == IWARP_MPA_NEG_WAIT_REQUEST ||
           s == IWARP_MPA_NEG_REQUEST || s == IWARP_MPA_NEG_SEND_FIRST;
}

/* The peer's frame goes to neg_in[got..] and exactly up to its end. */
static uint8_t *neg_land(struct iwarp_llp_conn *c, size_t *len)
{
    uint8_t *in = c->bounce.neg_in;
    enum iwarp_mpa_neg_state s = iwarp_llp_conn_neg_state(c);
    if (s == IWARP_MPA_NEG_SEND_FIRST || s == IWARP_MPA_NEG_REQUEST) {
        /* RFC 5044 §7.1.2 rule 4: the responder is silent until our first FPDU; rules 2, 3:
         * the initiator until our Reply (it enters full operation only on the Reply).
         * Whatever comes now is an error the negotiation reports (2/0/0x04, close): read it
         * here, never later as an FPDU. */
        *len = IWARP_LLP_CONN_NEG_FRAME_MAX;
        return in;
    }
    uint64_t got = iwarp_mpa_neg_result(&c->neg)->rx_consumed;
    if (got >= IWARP_LLP_CONN_NEG_FRAME_MAX) { /* cannot happen: a frame ends there at the
                                                  latest */
        *len = 0;
        return NULL;
    }
    size_t need;
    if (got < IWARP_MPA_HDR_LEN) {
        need = IWARP_MPA_HDR_LEN - (size_t)got;
    } else {
        /* RFC 5044 §7.1.1: PD_Length octets follow the 20-octet header; the machine has
         * already refused a PD_Length over its limit (it failed at the header). */
        size_t pd = iwarp_load_be16(in + MPA_PD_LEN_OFF);
        if (pd > IWARP_MPA_PD_MAX)
            pd = IWARP_MPA_PD_MAX;
        size_t total = IWARP_MPA_HDR_LEN + pd;
        need = total > got ? total - (size_t)got : 1u;
    }
    *len = need;
    return in + got;
}

/* n octets of the peer's frame were read where neg_land() said. */
static int neg_ack(struct iwarp_llp_conn *c, size_t n, uint64_t now_ns)
{
    if (!neg_reading(c))
        return IWARP_ERR_STATE;
    size_t cap;
    uint8_t *p = neg_land(c, &cap);
    if (n > cap)
        n = cap;
    iwarp_ssize r = iwarp_mpa_neg_rx(&c->neg, p, n, now_ns);
    if (r < 0)
        return iwarp_llp_conn_neg_failed(c);
    if (iwarp_llp_conn_neg_state(c) == IWARP_MPA_NEG_REQUEST)
        c->state = IWARP_LLP_CONN_REQUEST;
    else if (iwarp_llp_conn_neg_state(c) == IWARP_MPA_NEG_SEND_FIRST && !c->fullop)
        return iwarp_llp_conn_initiator_established(c, now_ns);
    return 0;
}

/* ---- where full operation's reads land --------------------------------------------------- */

/* Whether this connection's ULPDUs may be placed directly (llp_conn_int.h: HDR). */
static bool direct_ok(const struct iwarp_llp_conn *c)
{
    return !iwarp_mpa_neg_result(&c->neg)->crc && c->started && !c->rtr_wait && !c->tx_hold;
}

/* HDR with direct placement possible: how many of the first ULPDU octets to stage. */
static uint32_t stage_need(const struct iwarp_llp_conn *c, uint32_t have, uint32_t ulpdu_len)
{
    if (have < HDR_PROBE)
        return HDR_PROBE < ulpdu_len ? HDR_PROBE : ulpdu_len;
    return iwarp_core_eng_rx_hdr_len(c->eng, c->bounce.stage, have, ulpdu_len);
}

/* The ULPDU part, read exactly: where its next octets land. */
static uint8_t *ulpdu_land(struct iwarp_llp_conn *c, const struct iwarp_mpa_rx_want *w, size_t *len)
{
    const struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    /* Checked before every read: the ULP may have deregistered the buffer or flushed the
     * receive since the last one (the lock is not held in between). */
    if (f->place == IWARP_LLP_CONN_RX_DIRECT && f->dst_i < f->ndst &&
        iwarp_core_eng_rx_dst_valid(c->eng)) {
        const struct iovec *d = &f->dst[f->dst_i];
        size_t room = d->iov_len - f->dst_off;
        *len = w->len < room ? w->len : room;
        return (uint8_t *)d->iov_base + f->dst_off;
    }
    /* Staged, dropped, or (DIRECT) a payload the engine drops or whose buffer went away. */
    *len = w->len;
    if (c->recv.state == IWARP_LLP_CONN_RX_HDR && direct_ok(c)) {
        uint32_t need = stage_need(c, w->ulpdu_off, w->ulpdu_len);
        size_t left = w->ulpdu_off < need ? need - w->ulpdu_off : w->len;
        if (*len > left)
            *len = left; /* the headers only: the payload goes elsewhere */
    }
    return c->bounce.stage + w->ulpdu_off;
}

/* ULPDU octets of the current FPDU still to come (0 at a boundary, in the length field or in
 * the trailer). A marker never precedes an FPDU's first ULPDU octet (RFC 5044 §4.3: FPDUs
 * and markers are 4-aligned, the length field is 2 octets), so fpdu.ulpdu_len is known
 * there. */
static uint32_t ulpdu_left(const struct iwarp_llp_conn *c, const struct iwarp_mpa_rx_want *w)
{
    if (w->part == IWARP_MPA_RX_PART_ULPDU)
        return w->ulpdu_len - w->ulpdu_off;
    if (w->part == IWARP_MPA_RX_PART_MARKER)
        return c->recv.fpdu.ulpdu_len - c->recv.fpdu.ulpdu_done;
    return 0;
}

/* A large ULPDU staged whole (CRC on), `left` octets of it to come: the read takes the rest of
 * its FPDU and as many whole FPDUs behind it as the window has room for, taking them to be as
 * long as this one (a large message's FPDUs are, but its last), and RA_SMALL octets more. One
 * read then brings several FPDUs and ends a little past a boundary: of the FPDU it cuts, only
 * the first octets are moved to the start of the buffer when they do not fit where they lie
 * (stage_span). */
static size_t staged_span(uint32_t left, uint32_t ulpdu_len, size_t room)
{
    size_t rest = (size_t)left + iwarp_mpa_pad_len(ulpdu_len) + IWARP_MPA_CRC_LEN;
    size_t fpdu = iwarp_mpa_fpdu_wire_len(0, ulpdu_len, false); /* as the length predicts */
    if (room <= rest + RA_SMALL)
        return (size_t)left + RA_SMALL;
    return rest + (room - rest - RA_SMALL) / fpdu * fpdu + RA_SMALL;
}

/* Full operation: where the next read lands and whether it reads ahead (llp_conn_int.h).
 * NULL when nothing may be read. */
static uint8_t *fpdu_land(struct iwarp_llp_conn *c, size_t *len, bool *ahead)
{
    struct iwarp_mpa_rx_want w;
    iwarp_mpa_rx_want(&c->rx, &w);
    *ahead = false;
    if (w.part == IWARP_MPA_RX_PART_FAILED || w.len == 0) {
        *len = 0;
        return NULL;
    }
    uint32_t left = ulpdu_left(c, &w);
    /* A ULPDU staged whole (CRC on: verified before placement) is read through the window
     * too, whatever its size: the same read takes its trailer and the next FPDU's headers. */
    bool staged_whole = c->recv.state == IWARP_LLP_CONN_RX_HDR && !direct_ok(c) &&
                        w.part == IWARP_MPA_RX_PART_ULPDU;
    if (left > COPY_MAX && !staged_whole) {
        if (w.part == IWARP_MPA_RX_PART_ULPDU)
            return ulpdu_land(c, &w, len);
        *len = w.len < IWARP_LLP_CONN_SCRATCH_LEN ? w.len : IWARP_LLP_CONN_SCRATCH_LEN;
        return c->bounce.scratch;
    }
    /* The read-ahead window follows what is staged of the current FPDU, up to the end. */
    uint8_t *window = fpdu_base(c) + c->recv.fpdu.staged;
    size_t room = (size_t)(c->bounce.end - window);
    size_t span = c->recv.ra_wide ? room : (size_t)left + RA_SMALL;
    if (staged_whole && left > COPY_MAX)
        span = staged_span(left, w.ulpdu_len, room);
    *len = span < room ? span : room;
    *ahead = true;
    return window;
}

uint8_t *iwarp_llp_conn_rx_buf(struct iwarp_llp_conn *c, size_t *len)
{
    *len = 0;
    c->recv.split = 0;
    if (iwarp_llp_conn_finished(c))
        return NULL;
    switch (c->recv.state) {
    case IWARP_LLP_CONN_RX_DEAD:
        /* Nothing more is processed (RFC 5041 §7.1: drop segments after an error), but the
         * transport keeps being read so that its end is seen. */
        *len = IWARP_LLP_CONN_SCRATCH_LEN;
        return c->bounce.scratch;
    case IWARP_LLP_CONN_RX_NEG:
        return neg_reading(c) ? neg_land(c, len) : NULL;
    default: {
        if (iwarp_llp_conn_neg_out_pending(c))
            return NULL; /* our Reply is still being written (llp_conn_int.h: neg_out) */
        bool ahead;
        return fpdu_land(c, len, &ahead);
    }
    }
}

bool iwarp_llp_conn_rx_wanted(struct iwarp_llp_conn *c)
{
    if (iwarp_llp_conn_finished(c))
        return false;
    if (c->recv.state == IWARP_LLP_CONN_RX_DEAD)
        return true; /* read on to see the end (rx_buf) */
    if (c->recv.state == IWARP_LLP_CONN_RX_NEG) {
        size_t len;
        return iwarp_llp_conn_rx_buf(c, &len) && len > 0;
    }
    /* fpdu_land: a healthy deframer always wants at least one octet (a marker, the rest of
     * a ULPDU_Length, ULPDU or trailer) */
    return !iwarp_llp_conn_neg_out_pending(c) && !iwarp_mpa_rx_failed(&c->rx);
}

uint32_t iwarp_llp_conn_rx_bufs(struct iwarp_llp_conn *c, struct iovec iov[2])
{
    size_t len = 0;
    uint8_t *p = iwarp_llp_conn_rx_buf(c, &len);
    if (!p || len == 0)
        return 0;
    iov[0] = (struct iovec){p, len};
    const struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    if (c->recv.state != IWARP_LLP_CONN_RX_PAYLOAD || f->place != IWARP_LLP_CONN_RX_DIRECT ||
        bounce_at(c, p))
        return 1; /* not a read into the destination */
    struct iwarp_mpa_rx_want w;
    iwarp_mpa_rx_want(&c->rx, &w);
    if (w.part != IWARP_MPA_RX_PART_ULPDU || w.ulpdu_off + len != w.ulpdu_len)
        return 1; /* the read stops before the ULPDU's end (a marker, the next SGE) */
    /* What fpdu_land gives in TRAILER: the window behind the staged headers, which stay as
     * they are until the FPDU's end. */
    uint8_t *window = fpdu_base(c) + f->staged;
    size_t room = (size_t)(c->bounce.end - window);
    size_t span = c->recv.ra_wide ? room : RA_SMALL;
    iov[1] = (struct iovec){window, span < room ? span : room};
    c->recv.split = len;
    c->recv.split_next = window;
    return 2;
}

uint32_t iwarp_llp_conn_rx_need(struct iwarp_llp_conn *c)
{
    if (c->recv.state != IWARP_LLP_CONN_RX_HDR && c->recv.state != IWARP_LLP_CONN_RX_PAYLOAD)
        return 1;
    struct iwarp_mpa_rx_want w;
    iwarp_mpa_rx_want(&c->rx, &w);
    if (w.part != IWARP_MPA_RX_PART_ULPDU)
        return 1;
    return w.ulpdu_len - w.ulpdu_off + iwarp_mpa_pad_len(w.ulpdu_len) + IWARP_MPA_CRC_LEN;
}

/* ---- TRAILER: delivering a complete FPDU's ULPDU ----------------------------------------- */

/* A DDP-level stream's first FPDU (RFC 5044 §7.1.2 rule 4): no RDMAP opcode to look at and
 * no RTR (never negotiated for it); the negotiation only learns that full operation began. */
static int ddp_first_fpdu(struct iwarp_llp_conn *c, const uint8_t *seg, uint32_t len)
{
    if (iwarp_mpa_neg_first_fpdu(&c->neg, IWARP_RDMAP_OP_SEND, len, c->now_ns) != 0)
        return iwarp_llp_conn_started_failed(c, iwarp_mpa_neg_result(&c->neg)->err);
    return iwarp_core_eng_rx_segment(c->eng, seg, len);
}

/* The responder's first FPDU (RFC 5044 §7.1.2 rule 4, RFC 6581 §9.2). The QP runs since
 * accept; whatever is wrong with this FPDU is the QP's error, reported by its async event and
 * answered by its Terminate like any later one. */
static int first_fpdu(struct iwarp_llp_conn *c, const uint8_t *seg, uint32_t len)
{
    c->tx_hold = false; /* rule 4 is satisfied: the QP's FPDUs may follow */
    struct iwarp_core_qp *qp = c->eng->rdmap;
    if (!qp) /* a DDP-level stream: no RDMAP opcode, no RTR */
        return ddp_first_fpdu(c, seg, len);
    iwarp_core_eng_count_rx(c->eng, seg, len); /* not through iwarp_core_eng_rx_segment */
    struct iwarp_wire_segment s;
    struct iwarp_term_cause cause;
    int rc = iwarp_wire_segment_decode(seg, len, &s, &cause);
    if (rc != 0) {
        /* RFC 5040 §4.8: the decode error's cause, with the offending header. */
        c->err = rc;
        iwarp_core_qp_terminate(qp, cause, seg, len);
        return rc;
    }
    uint32_t mlen =
        s.opcode == IWARP_RDMAP_OP_READ_REQ ? s.body.read_req.size : (uint32_t)s.payload_len;
    rc = iwarp_mpa_neg_first_fpdu(&c->neg, s.opcode, mlen, c->now_ns);
    if (rc != 0) {
        const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
        c->err = r->err;
        if (s.opcode == IWARP_RDMAP_OP_TERMINATE) /* the peer's Terminate: the QP reports it */
            return iwarp_core_qp_rx_segment(qp, seg, len);
        if (r->action == IWARP_MPA_ACT_TERMINATE) { /* RFC 6581 §9.2: no RTR, 2/0/0x07 */
            iwarp_core_qp_terminate(qp, r->term, NULL, 0);
            return r->err;
        }
        return iwarp_llp_conn_started_failed(c, r->err);
    }
    if (iwarp_mpa_neg_result(&c->neg)->p2p && s.opcode == IWARP_RDMAP_OP_SEND) {
        /* A Send RTR is MPA's, not the ULP's: it takes queue 0's MSN but no receive. */
        rc = iwarp_llp_rtr_consume_send(qp, &s, &cause);
        if (rc != 0)
            iwarp_core_qp_terminate(qp, cause, seg, len);
        return rc;
    }
    /* Write and Read RTRs are ordinary zero-length messages to the QP (siw: no placement for
     * the Write; the Read is answered with a zero-length Read Response through the QP's IRQ);
     * without RTR this is the ULP's first message. */
    return iwarp_core_qp_rx_segment(qp, seg, len);
}

/* A complete, verified FPDU's staged ULPDU: seg[0, len), in the staging area or in place. */
static int deliver_staged(struct iwarp_llp_conn *c, const uint8_t *seg, uint32_t len)
{
    if (c->tx_hold)
        return first_fpdu(c, seg, len);
    if (!c->started)
        return IWARP_ERR_STATE;
    if (c->rtr_wait) {
        struct iwarp_wire_segment s;
        if (iwarp_wire_segment_decode(seg, len, &s, NULL) == 0 &&
            iwarp_llp_rtr_is_read_answer(&s)) {
            c->rtr_wait = false; /* RFC 6581 §9.2: our Read RTR has been answered */
            return 0;
        }
    }
    return iwarp_core_eng_rx_segment(c->eng, seg, len);
}

/* Message boundaries for the end of stream (iwarp_llp_conn_eof): a segment's DDP Control
 * octet (RFC 5041 §4.2: T, L) and, untagged, its QN (§4.4) say which message it leaves open. */
static void track_message(struct iwarp_llp_conn *c, const uint8_t *seg, uint32_t len)
{
    if (len == 0)
        return;
    bool last = (seg[0] & IWARP_DDP_FLAG_LAST) != 0;
    if (seg[0] & IWARP_DDP_FLAG_TAGGED) {
        c->recv.tagged_open = !last;
    } else if (len >= 6u) {
        uint32_t qn = iwarp_load_be32(seg + 2);
        uint32_t bit = qn < 32u ? 1u << qn : 0u;
        uint32_t open = c->recv.untagged_open;
        c->recv.untagged_open = last ? open & ~bit : open | bit;
    }
}

/* TRAILER: the FPDU is complete (its CRC checked when on): deliver its ULPDU as fpdu.place
 * says, then the next FPDU starts (HDR). */
static int fpdu_end(struct iwarp_llp_conn *c, uint32_t ulpdu_len)
{
    c->rx_fpdus++;
    enum iwarp_llp_conn_rx_place place = c->recv.fpdu.place;
    const uint8_t *seg = c->recv.fpdu.seg;
    track_message(c, seg, c->recv.fpdu.staged);
    fpdu_reset(c);
    c->recv.state = IWARP_LLP_CONN_RX_HDR;
    if (place == IWARP_LLP_CONN_RX_STAGED)
        return deliver_staged(c, seg, ulpdu_len);
    /* RFC 5044 §4.1: with CRC off the trailer needs no check; the payload is in place. */
    return place == IWARP_LLP_CONN_RX_DIRECT ? iwarp_core_eng_rx_payload_done(c->eng) : 0;
}

/* ---- HDR and PAYLOAD: the ULPDU's octets --------------------------------------------------- */

/* HDR: the ULPDU's first fpdu.staged octets are in the staging area. Once they are the
 * headers of a segment with payload (direct_ok), hand them to the engine: PAYLOAD, placed
 * directly where rx_hdr() says, or dropped when it refused the segment. */
static int maybe_direct(struct iwarp_llp_conn *c, uint32_t ulpdu_len)
{
    struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    if (!direct_ok(c) || f->staged >= ulpdu_len || f->staged != stage_need(c, f->staged, ulpdu_len))
        return 0;
    uint32_t n = 0;
    /* RFC 5041 §7.1: every check, for the whole ULPDU_Length, before any payload is read. */
    int rc = iwarp_core_eng_rx_hdr(c->eng, c->bounce.stage, f->staged, ulpdu_len, f->dst,
                                   IWARP_CORE_RX_IOV_MAX, &n);
    c->recv.state = IWARP_LLP_CONN_RX_PAYLOAD;
    f->place = rc == 0 ? IWARP_LLP_CONN_RX_DIRECT : IWARP_LLP_CONN_RX_DROPPED;
    f->ndst = rc == 0 ? n : 0;
    f->dst_i = 0;
    f->dst_off = 0;
    return rc;
}

/* PAYLOAD: octets data[0, n), either read where ulpdu_land() pointed or read ahead (then
 * copied to the destination). Dropped when the segment is (DROPPED) or its destination went
 * away (rx_dst_valid). */
static void direct_put(struct iwarp_llp_conn *c, const uint8_t *data, size_t n)
{
    struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    while (n > 0 && f->dst_i < f->ndst && iwarp_core_eng_rx_dst_valid(c->eng)) {
        const struct iovec *d = &f->dst[f->dst_i];
        uint8_t *at = (uint8_t *)d->iov_base + f->dst_off;
        size_t k = d->iov_len - f->dst_off;
        if (k > n)
            k = n;
        if (at != data) {
            iwarp_copy(at, data, k);
            c->rx_copied_octets += k;
        } else {
            c->rx_direct_octets += k;
        }
        f->dst_off += k;
        if (f->dst_off == d->iov_len) {
            f->dst_i++;
            f->dst_off = 0;
        }
        data += k;
        n -= k;
    }
}

/* HDR: data[0, n) are the ULPDU's octets [off, off + n): staged (or, a whole ULPDU in one
 * piece, kept in place); once the headers are in, the rest goes on as PAYLOAD. */
static int stage_span(struct iwarp_llp_conn *c, const uint8_t *data, size_t n, uint32_t off,
                      uint32_t ulpdu_len)
{
    struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    if (off == 0 && n == ulpdu_len &&
        (!direct_ok(c) || iwarp_core_eng_rx_hdr_len(c->eng, data, n, ulpdu_len) >= ulpdu_len)) {
        /* The whole ULPDU in one piece: handed over where it lies at the FPDU's end. */
        f->seg = data;
        f->staged = ulpdu_len;
        return 0;
    }
    if (!direct_ok(c)) {
        /* Staged whole: the ULPDU stays where its first octets were read if it fits there
         * (fits_from; the next reads land behind them, fpdu_land), else it starts at the
         * staging area; a span after a marker moves down onto the octets before it. */
        uint8_t *base = fpdu_base(c);
        if (off == 0) {
            base = bounce_at(c, data);
            if (!base || !fits_from(c, base, ulpdu_len))
                base = c->bounce.stage;
        }
        if (data != base + off) {
            iwarp_copy_move(base + off, data, n);
            c->rx_moved_octets += n;
        }
        f->seg = base;
        f->staged = off + (uint32_t)n;
        return 0;
    }
    if (off > 0 && f->seg != c->bounce.stage)
        move_to_start(c); /* staged in place before direct placement became possible: its
                             headers go where maybe_direct looks */
    int ret = 0;
    while (n > 0) {
        if (c->recv.state != IWARP_LLP_CONN_RX_HDR) {
            direct_put(c, data, n);
            return ret;
        }
        size_t k = n;
        if (direct_ok(c)) {
            uint32_t need = stage_need(c, off, ulpdu_len);
            if (off < need && k > need - off)
                k = need - off; /* the headers first: they decide where the payload goes */
        }
        /* Keep the ULPDU contiguous in the staging area (it already is when the read was
         * exact; a window span lies above its ULPDU offset, so the move goes down). */
        uint8_t *dst = c->bounce.stage + off;
        if (data != dst) {
            iwarp_copy_move(dst, data, k);
            c->rx_moved_octets += k;
        }
        f->seg = c->bounce.stage;
        f->staged = off + (uint32_t)k;
        int rc = maybe_direct(c, ulpdu_len);
        if (rc != 0 && ret == 0)
            ret = rc;
        data += k;
        n -= k;
        off += (uint32_t)k;
    }
    return ret;
}

/* A ULPDU span from the deframer: data[0, n) are the ULPDU's octets [off, off + n). Its last
 * octet leads to TRAILER. */
static int on_span(struct iwarp_llp_conn *c, const uint8_t *data, size_t n, uint32_t off,
                   uint32_t ulpdu_len)
{
    struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    f->ulpdu_len = ulpdu_len;
    f->ulpdu_done = off + (uint32_t)n;
    int rc = 0;
    if (c->recv.state == IWARP_LLP_CONN_RX_HDR)
        rc = stage_span(c, data, n, off, ulpdu_len);
    else
        direct_put(c, data, n);
    if (f->ulpdu_done == ulpdu_len && c->recv.state != IWARP_LLP_CONN_RX_DEAD)
        c->recv.state = IWARP_LLP_CONN_RX_TRAILER;
    return rc;
}

/* ---- errors and the feed loop --------------------------------------------------------- */

/* The deframer failed (RFC 5044 §8: CRC 0x02, marker or length 0x03): DEAD. */
static int rx_error(struct iwarp_llp_conn *c, int err)
{
    struct iwarp_term_cause cause;
    if (!iwarp_mpa_rx_term_cause(err, &cause))
        cause = (struct iwarp_term_cause){IWARP_TERM_LAYER_LLP, IWARP_TERM_LLP_ETYPE_MPA,
                                          IWARP_TERM_MPA_CATASTROPHIC};
    const struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    const uint8_t *hdr = f->staged ? f->seg : NULL;
    size_t hdr_len = f->staged;
    bool direct = f->place == IWARP_LLP_CONN_RX_DIRECT;
    iwarp_llp_conn_rx_stop(c);
    c->tx_hold = false; /* a broken first FPDU has arrived too: the Terminate may go */
    if (c->started)
        iwarp_core_eng_rx_llp_error(c->eng, cause, hdr, hdr_len);
    else
        iwarp_llp_conn_terminate(c, err, cause, NULL, 0);
    fpdu_reset(c);
    if (direct) /* the engine is terminating: this only ends the pending segment */
        (void)iwarp_core_eng_rx_payload_done(c->eng);
    return err;
}

/* After a read: a ULPDU kept in place whose FPDU is not complete yet moves to the staging area
 * unless it fits where it lies (fits_from), the next read landing behind it. */
static void settle_in_place(struct iwarp_llp_conn *c)
{
    struct iwarp_llp_conn_rx_fpdu *f = &c->recv.fpdu;
    if (f->seg != c->bounce.stage && f->staged != 0 && !fits_from(c, f->seg, f->ulpdu_len))
        move_to_start(c);
}

/* n octets of full operation were read at p, where fpdu_land() said (cap, ahead: what else it
 * said): feed them to the deframer and act on its events, in place. */
static int fpdu_feed(struct iwarp_llp_conn *c, const uint8_t *p, size_t cap, bool ahead, size_t n)
{
    bool filled = n == cap;
    int ret = 0;
    while (n > 0 && c->recv.state != IWARP_LLP_CONN_RX_DEAD) {
        struct iwarp_mpa_rx_ev ev;
        /* a whole FPDU, verified at once, is its ULPDU span and its end together */
        iwarp_ssize k = iwarp_mpa_rx_whole(&c->rx, p, n, &ev);
        if (k == 0)
            k = iwarp_mpa_rx_feed(&c->rx, p, n, &ev);
        if (k < 0)
            return rx_error(c, (int)k);
        p += k;
        n -= (size_t)k;
        int rc = 0;
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU || (ev.kind == IWARP_MPA_RX_EV_FPDU && ev.data))
            rc = on_span(c, ev.data, ev.len, ev.ulpdu_off, ev.ulpdu_len);
        if (ev.kind == IWARP_MPA_RX_EV_FPDU && c->recv.state != IWARP_LLP_CONN_RX_DEAD) {
            int end = fpdu_end(c, ev.ulpdu_len);
            rc = rc != 0 ? rc : end;
        }
        if (rc != 0 && ret == 0)
            ret = rc;
    }
    if (c->recv.state == IWARP_LLP_CONN_RX_DEAD)
        return ret;
    settle_in_place(c);
    if (ahead) {
        /* A full window that ended outside a large ULPDU: more small FPDUs are queued. */
        struct iwarp_mpa_rx_want w;
        iwarp_mpa_rx_want(&c->rx, &w);
        c->recv.ra_wide = filled && ulpdu_left(c, &w) <= COPY_MAX;
    }
    return ret;
}

/* n octets of full operation were read where fpdu_land() says. */
static int fpdu_ack(struct iwarp_llp_conn *c, size_t n)
{
    size_t cap;
    bool ahead;
    const uint8_t *p = fpdu_land(c, &cap, &ahead);
    if (p == NULL || n > cap)
        return IWARP_ERR_INVAL;
    return fpdu_feed(c, p, cap, ahead, n);
}

int iwarp_llp_conn_rx_ack(struct iwarp_llp_conn *c, size_t n, uint64_t now_ns)
{
    c->now_ns = now_ns;
    if (n == 0 || iwarp_llp_conn_finished(c) || c->recv.state == IWARP_LLP_CONN_RX_DEAD)
        return 0;
    if (c->recv.state == IWARP_LLP_CONN_RX_NEG)
        return neg_ack(c, n, now_ns);
    size_t n0 = c->recv.split;
    uint8_t *next = c->recv.split_next;
    c->recv.split = 0;
    c->rx_reads++;
    if (n0 == 0 || n <= n0)
        return fpdu_ack(c, n);
    c->rx_split_reads++;
    /* Two regions (rx_bufs): the end of the payload, then the window. */
    int rc = fpdu_ack(c, n0);
    if (c->recv.state == IWARP_LLP_CONN_RX_DEAD)
        return rc;
    size_t cap = 0;
    bool ahead;
    uint8_t *p = fpdu_land(c, &cap, &ahead);
    if (p != next || n - n0 > cap)
        return rx_error(c, IWARP_ERR_INVAL); /* rx_bufs mispredicted the window: a bug */
    int rc2 = fpdu_feed(c, p, cap, ahead, n - n0);
    return rc != 0 ? rc : rc2;
}

bool iwarp_llp_conn_rx_between_fpdus(const struct iwarp_llp_conn *c)
{
    struct iwarp_mpa_rx_want w;
    iwarp_mpa_rx_want(&c->rx, &w);
    /* No octet of an FPDU yet: before its length field, or before a marker that would
     * precede it (RFC 5044 §4.3: a marker between FPDUs belongs to the next one). */
    bool boundary = (w.part == IWARP_MPA_RX_PART_HDR && w.len == IWARP_MPA_LEN_FIELD) ||
                    (w.part == IWARP_MPA_RX_PART_MARKER && w.len == IWARP_MPA_MARKER_LEN);
    return boundary && c->recv.fpdu.staged == 0 && c->recv.fpdu.ulpdu_len == 0;
}

bool iwarp_llp_conn_rx_at_message_boundary(const struct iwarp_llp_conn *c)
{
    if (c->recv.state == IWARP_LLP_CONN_RX_NEG || c->recv.state == IWARP_LLP_CONN_RX_DEAD)
        return true; /* nothing of full operation is being received */
    return iwarp_llp_conn_rx_between_fpdus(c) && !c->recv.tagged_open && c->recv.untagged_open == 0;
}
