/*
 * One MPA connection, sans I/O (see llp_conn.h).
 *
 * The bounce buffer (IWARP_LLP_CONN_BOUNCE octets):
 *   [0, bounce_len)        full operation: the staged first octets of the FPDU being received
 *                          (its ULPDU, contiguous, markers removed; or only its headers when
 *                          the payload is placed directly); negotiation: the peer's
 *                          Request/Reply, read exactly to its end so that no octet of full
 *                          operation is read into it;
 *   [bounce_len, end)      full operation: the read-ahead window (below);
 *   [64768, +16)           full operation, exact reads: a marker inside a large ULPDU;
 *   [STAGE_OFF, +532)      our own Request/Reply/Reject while it is being written. Full
 *                          operation reads nothing while it is pending (the initiator cannot
 *                          send its first FPDU before our whole Reply arrived, so this only
 *                          ever stalls a peer that breaks RFC 5044 §7.1.2 rule 4).
 *
 * Where each read goes (rx_land): a read either READS AHEAD into the window, so that one
 * recv() brings in the rest of the current FPDU and any number of following ones, or is
 * EXACT: it stops at the deframer's next boundary and lands where the octets belong. Reads are
 * exact only inside a ULPDU with more than COPY_MAX octets still to come (a large Write, Read
 * Response or Send): its octets are read straight into the bounce buffer at their ULPDU offset
 * (CRC on) or into their destination (CRC off), and a marker inside it into the scratch area.
 * Everything else reads ahead: FPDU boundaries, length fields, trailers, small ULPDUs and the
 * last COPY_MAX octets of large ones. The window is as long as the bounce buffer allows when
 * the previous read-ahead filled its window and ended outside a large ULPDU (a backlog of
 * small FPDUs: ra_wide); otherwise it reaches RA_SMALL octets past the current FPDU's ULPDU,
 * which bounds what a large FPDU right behind costs in copies: at most RA_SMALL + COPY_MAX of
 * its payload octets go through the window, the rest is placed by the transport.
 *
 * Octets in the window are fed to the deframer at once, in place:
 *   - a ULPDU wholly inside the window (no marker in it) is handed to the QP where it lies at
 *     its FPDU's end, after the CRC check (rx_seg points at it): no copy beyond today's
 *     staging read. If its FPDU's trailer is not yet in, it is moved to bounce[0] first;
 *   - other ULPDU spans (split by the window's end or by markers) are moved to their ULPDU
 *     offset in the bounce buffer (staged), or, when placed directly, copied to their
 *     destination iovecs.
 *
 * How a ULPDU is received (rx_mode):
 *   RX_STAGE    into bounce[0, ULPDU_Length) (or in place, above), handed to the QP whole at
 *               the FPDU's end (rx_segment). Always with CRC on (RFC 5044 §6: verified before
 *               DDP sees it); with CRC off, only until the headers are in.
 *   RX_DIRECT   CRC off (RFC 5044 §4.4: nothing to verify; ULPDU_Length is the only check):
 *               the first octets of a ULPDU are staged in bounce, as many as the engine's
 *               rx_hdr_len() says (RDMAP: the 14-octet tagged header first, which tells T and
 *               the opcode; 18 for a Send; the whole ULPDU for a Read Request, a Terminate and
 *               anything malformed; a DDP-level stream: its DDP header). Then the engine's
 *               rx_hdr() validates the segment for its full ULPDU_Length and gives the
 *               destination iovecs; exact reads land in them, octets already read ahead are
 *               copied to them. rx_payload_done() follows the CRC field. The same for both
 *               engines (core_engine.h).
 *   RX_DISCARD  rx_hdr refused the segment (a Terminate is queued, or a DDP-level stream
 *               stopped receiving): its payload is read into bounce and dropped.
 * While the responder waits for the initiator's first FPDU or our Read RTR waits for its
 * answer, ULPDUs are staged whole: the connection itself looks at them first.
 */
#include "llp/llp_conn.h"

#include <string.h>

#include "iwarp/errors.h"
#include "llp/llp_rtr.h"
#include "util/bytes.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

#define NEG_FRAME_MAX  (IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX)
#define RX_SCRATCH_OFF IWARP_MPA_MULPDU_MAX
#define RX_SCRATCH_LEN (IWARP_LLP_CONN_BOUNCE - IWARP_MPA_MULPDU_MAX)
#define STAGE_OFF      (IWARP_MPA_MULPDU_MAX - NEG_FRAME_MAX)
#define MPA_PD_LEN_OFF 18u /* PD_Length in the Request/Reply (RFC 5044 §7.1.1) */
#define TXF_SLOT(c, i) (&(c)->txf[((c)->txf_head + (i)) % IWARP_LLP_CONN_TX_SEGS])
#define NONE           IWARP_MPA_IRD_ORD_NONE
/* The first ULPDU octets staged before deciding: every payload carrier's header is as long. */
#define HDR_PROBE      IWARP_DDP_TAGGED_HDR_LEN

/* Exact reads only while more than this many ULPDU octets are still to come. */
#define COPY_MAX 2048u
/* Read-ahead past the current FPDU's ULPDU when no backlog of small FPDUs was seen. */
#define RA_SMALL 1024u

enum { RX_STAGE = 0, RX_DIRECT = 1, RX_DISCARD = 2 };

static enum iwarp_mpa_neg_state neg_state(const struct iwarp_llp_conn *c)
{
    return iwarp_mpa_neg_state(&c->neg);
}

/* The connection is over from MPA's point of view: nothing more is read. */
static bool finished(const struct iwarp_llp_conn *c)
{
    return c->state == IWARP_LLP_CONN_REJECTED || c->state == IWARP_LLP_CONN_FAILED ||
           c->state == IWARP_LLP_CONN_CLOSE;
}

/* RFC 5044 §7.1.2: full operation begins; set up the deframer, the framer and MULPDU with the
 * negotiated CRC and marker settings. */
static void enter_fullop(struct iwarp_llp_conn *c)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    if (c->fullop)
        return;
    /* RFC 5044 §4.3: the first marker sits at the first octet of full operation. */
    struct iwarp_mpa_rx_cfg rc = {
        .crc = r->crc, .markers = r->markers_rx, .max_ulpdu = 0, .stream_pos = 0};
    struct iwarp_mpa_tx_cfg tc = {.crc = r->crc, .markers = r->markers_tx, .stream_pos = 0};
    (void)iwarp_mpa_rx_init(&c->rx, &rc); /* valid: stream_pos 0, max_ulpdu default */
    (void)iwarp_mpa_tx_init(&c->tx, &tc);
    /* RFC 5044 §4.5 MULPDU for the EMSS; §3: never above 64768. */
    uint32_t m = iwarp_mpa_mulpdu(c->cfg.emss, r->markers_tx);
    c->max_seg = m > IWARP_MPA_MULPDU_MAX ? IWARP_MPA_MULPDU_MAX : m;
    c->bounce_len = 0;
    c->rx_seg = c->bounce;
    c->fullop = true;
}

/* Frame the segment in slot t as the next FPDU (RFC 5044 §4.1: length, ULPDU in place,
 * markers, pad, CRC). */
static int frame(struct iwarp_llp_conn *c, struct iwarp_llp_conn_txf *t)
{
    struct iovec in[1 + IWARP_CORE_TX_IOV_MAX];
    size_t nin = 0;
    in[nin++] = (struct iovec){t->seg.hdr, t->seg.hdr_len};
    for (uint32_t i = 0; i < t->seg.niov && i < IWARP_CORE_TX_IOV_MAX; i++)
        in[nin++] = t->seg.iov[i];
    iwarp_ssize n =
        iwarp_mpa_tx_frame(&c->tx, in, nin, &t->scratch, t->iov, IWARP_LLP_CONN_FPDU_IOV);
    if (n < 0)
        return (int)n;
    t->niov = (uint32_t)n;
    uint32_t len = 0;
    for (uint32_t i = 0; i < t->niov; i++)
        len += (uint32_t)t->iov[i].iov_len;
    t->wire_len = len;
    return 0;
}

/* Queue a Terminate the connection itself sends (no QP running yet: RFC 6581 §8, §9 after an
 * ACT_TERMINATE negotiation failure, or an error in the responder's first FPDU), with the
 * offending segment when there is one (RFC 5040 §4.8 Figure 10). Nothing follows it; the
 * connection is FAILED with err and closes once it is written. */
static void conn_terminate(struct iwarp_llp_conn *c, int err, struct iwarp_term_cause cause,
                           const uint8_t *seg, size_t len)
{
    c->state = IWARP_LLP_CONN_FAILED;
    c->err = err;
    c->rx_dead = true;
    c->rtr_pending = false;
    if (c->term_queued || !c->fullop || c->txf_count >= IWARP_LLP_CONN_TX_SEGS)
        return;
    struct iwarp_llp_conn_txf *t = TXF_SLOT(c, c->txf_count);
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

/* The negotiation failed or a Reject arrived: act as its result says. */
static int neg_failed(struct iwarp_llp_conn *c)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    c->rx_dead = true;
    switch (r->action) {
    case IWARP_MPA_ACT_EXIT: /* RFC 5044 §7.1.2 rule 3: rejected; TCP is left to the ULP */
        c->state = IWARP_LLP_CONN_REJECTED;
        c->err = r->err;
        break;
    case IWARP_MPA_ACT_TERMINATE: /* RFC 6581 §8, §9: a Terminate FPDU first */
        enter_fullop(c);
        conn_terminate(c, r->err, r->term, NULL, 0);
        break;
    default: /* RFC 5044 §7.1.2, §8 code 4: close, no FPDU */
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = r->err;
        break;
    }
    return r->err;
}

/* Enter full operation on the QP with the negotiated IRD/ORD (RFC 6581 §9.1); 0x3FFF leaves
 * them to the ULP: the configured values. */
static int start_qp(struct iwarp_llp_conn *c)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    if (c->eng == NULL) {
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = IWARP_ERR_STATE;
        c->rx_dead = true;
        return IWARP_ERR_STATE;
    }
    uint32_t ird = r->ird != NONE ? r->ird : c->cfg.neg.ird;
    uint32_t ord = r->ord != NONE ? r->ord : c->cfg.neg.ord;
    int rc = iwarp_core_eng_start(c->eng, ird, ord);
    if (rc != 0) {
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = rc;
        c->rx_dead = true;
        return rc;
    }
    c->started = true;
    c->state = IWARP_LLP_CONN_ESTABLISHED;
    return 0;
}

/* The running connection fails without a Terminate (RFC 5044 §7.1.2, §8: close TCP, no FPDU):
 * the LLP stream is lost to the engine, which flushes and reports the fatal error. */
static int started_failed(struct iwarp_llp_conn *c, int err)
{
    c->state = IWARP_LLP_CONN_FAILED;
    c->err = err;
    c->rx_dead = true;
    c->tx_hold = false;
    c->txf_count = 0;
    c->txf_off = 0;
    iwarp_core_eng_llp_closed(c->eng, false);
    return err;
}

/* The initiator's negotiation reached SEND_FIRST: full operation, the QP, the RTR. */
static int initiator_established(struct iwarp_llp_conn *c, uint64_t now_ns)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    enter_fullop(c);
    int rc = start_qp(c);
    if (rc != 0)
        return rc;
    /* RFC 6581 §5, §9.2: the negotiated RTR is our first FPDU. */
    c->rtr_pending = r->rtr != 0;
    /* siw race (docs/design.md): our first FPDU waits first_fpdu_delay_ns after the Reply. */
    uint64_t d = c->cfg.first_fpdu_delay_ns;
    c->first_fpdu_at = d == 0 ? 0 : (d > UINT64_MAX - 1 - now_ns ? UINT64_MAX - 1 : now_ns + d);
    return 0;
}

int iwarp_llp_conn_init(struct iwarp_llp_conn *c, const struct iwarp_llp_conn_cfg *cfg,
                        uint8_t *bounce, struct iwarp_llp_conn_txf *txf, uint64_t now_ns)
{
    if (!c || !cfg || !bounce || !txf)
        return IWARP_ERR_INVAL;
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->cfg.neg.pd = NULL; /* copied by the negotiation below; not kept here */
    c->bounce = bounce;
    c->rx_seg = bounce;
    c->txf = txf;
    c->now_ns = now_ns;
    c->state = IWARP_LLP_CONN_NEGOTIATING;
    return iwarp_mpa_neg_init(&c->neg, &cfg->neg, now_ns);
}

void iwarp_llp_conn_attach(struct iwarp_llp_conn *c, struct iwarp_core_engine *eng)
{
    c->eng = eng;
}

int iwarp_llp_conn_accept(struct iwarp_llp_conn *c, const struct iwarp_mpa_neg_answer *ans)
{
    if (c->state != IWARP_LLP_CONN_REQUEST)
        return IWARP_ERR_STATE;
    int rc = iwarp_mpa_neg_accept(&c->neg, ans, c->now_ns);
    if (rc != 0)
        return rc;
    /* RFC 5044 §7.1.2: the responder is in full operation once the Reply is sent. The QP
     * starts now with the negotiated IRD/ORD, so the ULP may post at once (local operations
     * run); rule 4: its FPDUs are held (tx_hold) until the initiator's first FPDU arrives. */
    enter_fullop(c);
    rc = start_qp(c);
    if (rc != 0)
        return rc;
    c->tx_hold = true;
    return 0;
}

int iwarp_llp_conn_reject(struct iwarp_llp_conn *c, const struct iwarp_mpa_neg_answer *ans)
{
    if (c->state != IWARP_LLP_CONN_REQUEST)
        return IWARP_ERR_STATE;
    int rc = iwarp_mpa_neg_reject(&c->neg, ans);
    if (rc != 0)
        return rc;
    /* RFC 5044 §7.1.2 rule 2: the Reject goes out (tx_iov), then MPA is done. */
    c->state = IWARP_LLP_CONN_REJECTED;
    c->rx_dead = true;
    return 0;
}

/* ---- receive --------------------------------------------------------------------------- */

/* Negotiation reads: the peer's frame goes to bounce[got..] and exactly up to its end. */
static bool neg_reading(const struct iwarp_llp_conn *c)
{
    enum iwarp_mpa_neg_state s = neg_state(c);
    return s == IWARP_MPA_NEG_WAIT_REPLY || s == IWARP_MPA_NEG_WAIT_REQUEST ||
           s == IWARP_MPA_NEG_SEND_FIRST;
}

static uint8_t *neg_land(struct iwarp_llp_conn *c, size_t *len)
{
    if (neg_state(c) == IWARP_MPA_NEG_SEND_FIRST) {
        /* RFC 5044 §7.1.2 rule 4: the responder is silent until our first FPDU; whatever
         * comes now is an error the negotiation reports (2/0/0x04). */
        *len = NEG_FRAME_MAX;
        return c->bounce;
    }
    uint64_t got = iwarp_mpa_neg_result(&c->neg)->rx_consumed;
    if (got >= NEG_FRAME_MAX) { /* cannot happen: a frame ends at NEG_FRAME_MAX at the latest */
        *len = 0;
        return NULL;
    }
    size_t need;
    if (got < IWARP_MPA_HDR_LEN) {
        need = IWARP_MPA_HDR_LEN - (size_t)got;
    } else {
        /* RFC 5044 §7.1.1: PD_Length octets follow the 20-octet header; the machine has
         * already refused a PD_Length over its limit (it failed at the header). */
        size_t pd = iwarp_load_be16(c->bounce + MPA_PD_LEN_OFF);
        if (pd > IWARP_MPA_PD_MAX)
            pd = IWARP_MPA_PD_MAX;
        size_t total = IWARP_MPA_HDR_LEN + pd;
        need = total > got ? total - (size_t)got : 1u;
    }
    *len = need;
    return c->bounce + got;
}

/* Whether this connection's ULPDUs may be placed directly (see the top of this file). */
static bool direct_ok(const struct iwarp_llp_conn *c)
{
    return !iwarp_mpa_neg_result(&c->neg)->crc && c->started && !c->rtr_wait && !c->tx_hold;
}

/* RX_STAGE with direct placement possible: how many of the first ULPDU octets to stage. */
static uint32_t stage_need(const struct iwarp_llp_conn *c, uint32_t have, uint32_t ulpdu_len)
{
    if (have < HDR_PROBE)
        return HDR_PROBE < ulpdu_len ? HDR_PROBE : ulpdu_len;
    return iwarp_core_eng_rx_hdr_len(c->eng, c->bounce, have, ulpdu_len);
}

/* The ULPDU part, read exactly: where its next octets land. */
static uint8_t *ulpdu_land(struct iwarp_llp_conn *c, const struct iwarp_mpa_rx_want *w, size_t *len)
{
    /* Checked before every read: the ULP may have deregistered the buffer or flushed the
     * receive since the last one (the lock is not held in between). */
    if (c->rx_mode == RX_DIRECT && c->rx_dst_i < c->rx_ndst &&
        iwarp_core_eng_rx_dst_valid(c->eng)) {
        const struct iovec *d = &c->rx_dst[c->rx_dst_i];
        size_t room = d->iov_len - c->rx_dst_off;
        *len = w->len < room ? w->len : room;
        return (uint8_t *)d->iov_base + c->rx_dst_off;
    }
    /* Staged, discarded, or (RX_DIRECT) a payload the QP drops or whose buffer went away. */
    *len = w->len;
    if (c->rx_mode == RX_STAGE && direct_ok(c)) {
        uint32_t need = stage_need(c, w->ulpdu_off, w->ulpdu_len);
        size_t left = w->ulpdu_off < need ? need - w->ulpdu_off : w->len;
        if (*len > left)
            *len = left; /* the headers only: the payload goes elsewhere */
    }
    return c->bounce + w->ulpdu_off;
}

/* ULPDU octets of the current FPDU still to come (0 at a boundary, in the length field or in
 * the trailer). A marker never precedes an FPDU's first ULPDU octet (RFC 5044 §4.3: FPDUs
 * and markers are 4-aligned, the length field is 2 octets), so rx_ulpdu_len is known there. */
static uint32_t ulpdu_left(const struct iwarp_llp_conn *c, const struct iwarp_mpa_rx_want *w)
{
    if (w->part == IWARP_MPA_RX_PART_ULPDU)
        return w->ulpdu_len - w->ulpdu_off;
    if (w->part == IWARP_MPA_RX_PART_MARKER)
        return c->rx_ulpdu_len - c->rx_ulpdu_done;
    return 0;
}

/* Full operation: where the next read lands and whether it reads ahead (see the top of this
 * file). NULL when nothing may be read. */
static uint8_t *rx_land(struct iwarp_llp_conn *c, size_t *len, bool *ahead)
{
    struct iwarp_mpa_rx_want w;
    iwarp_mpa_rx_want(&c->rx, &w);
    *ahead = false;
    if (w.part == IWARP_MPA_RX_PART_FAILED || w.len == 0) {
        *len = 0;
        return NULL;
    }
    uint32_t left = ulpdu_left(c, &w);
    if (left > COPY_MAX) {
        if (w.part == IWARP_MPA_RX_PART_ULPDU)
            return ulpdu_land(c, &w, len);
        *len = w.len < RX_SCRATCH_LEN ? w.len : RX_SCRATCH_LEN;
        return c->bounce + RX_SCRATCH_OFF;
    }
    /* The window follows what is staged of the current FPDU; it ends with the buffer. */
    size_t room = IWARP_LLP_CONN_BOUNCE - c->bounce_len;
    size_t span = c->ra_wide ? room : (size_t)left + RA_SMALL;
    *len = span < room ? span : room;
    *ahead = true;
    return c->bounce + c->bounce_len;
}

uint8_t *iwarp_llp_conn_rx_buf(struct iwarp_llp_conn *c, size_t *len)
{
    *len = 0;
    if (c->state == IWARP_LLP_CONN_REQUEST || finished(c))
        return NULL;
    if (c->rx_dead) {
        /* Nothing more is processed (RFC 5041 §7.1: drop segments after an error), but the
         * transport keeps being read so that its end is seen. */
        *len = RX_SCRATCH_LEN;
        return c->bounce + RX_SCRATCH_OFF;
    }
    if (!c->fullop || neg_reading(c))
        return neg_reading(c) ? neg_land(c, len) : NULL;
    if (c->stage_off < c->stage_len)
        return NULL;
    bool ahead;
    return rx_land(c, len, &ahead);
}

/* A DDP-level stream's first FPDU (RFC 5044 §7.1.2 rule 4): no RDMAP opcode to look at and
 * no RTR (never negotiated for it); the negotiation only learns that full operation began. */
static int ddp_first_fpdu(struct iwarp_llp_conn *c, const uint8_t *seg, uint32_t len)
{
    if (iwarp_mpa_neg_first_fpdu(&c->neg, IWARP_RDMAP_OP_SEND, len, c->now_ns) != 0)
        return started_failed(c, iwarp_mpa_neg_result(&c->neg)->err);
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
        return started_failed(c, r->err);
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

/* A complete, verified FPDU's ULPDU: seg[0, len), staged in bounce or in place. */
static int on_fpdu(struct iwarp_llp_conn *c, const uint8_t *seg, uint32_t len)
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

/* RX_STAGE: the ULPDU's first bounce_len octets are staged. Once they are the headers of a
 * segment with payload (CRC off), hand them to the QP and receive the payload in place. */
static int maybe_direct(struct iwarp_llp_conn *c, uint32_t ulpdu_len)
{
    if (!direct_ok(c) || c->bounce_len >= ulpdu_len ||
        c->bounce_len != stage_need(c, c->bounce_len, ulpdu_len))
        return 0;
    uint32_t n = 0;
    /* RFC 5041 §7.1: every check, for the whole ULPDU_Length, before any payload is read. */
    int rc = iwarp_core_eng_rx_hdr(c->eng, c->bounce, c->bounce_len, ulpdu_len, c->rx_dst,
                                   IWARP_CORE_RX_IOV_MAX, &n);
    c->rx_mode = rc == 0 ? RX_DIRECT : RX_DISCARD;
    c->rx_ndst = rc == 0 ? n : 0;
    c->rx_dst_i = 0;
    c->rx_dst_off = 0;
    return rc;
}

/* RX_DIRECT, RX_DISCARD: payload octets data[0, n), either read where ulpdu_land() pointed
 * or read ahead (then copied to the destination). Dropped when the segment is discarded or
 * its destination went away (rx_dst_valid). */
static void direct_put(struct iwarp_llp_conn *c, const uint8_t *data, size_t n)
{
    while (n > 0 && c->rx_dst_i < c->rx_ndst && iwarp_core_eng_rx_dst_valid(c->eng)) {
        const struct iovec *d = &c->rx_dst[c->rx_dst_i];
        uint8_t *at = (uint8_t *)d->iov_base + c->rx_dst_off;
        size_t k = d->iov_len - c->rx_dst_off;
        if (k > n)
            k = n;
        if (at != data) {
            memcpy(at, data, k);
            c->rx_copied_octets += k;
        } else {
            c->rx_direct_octets += k;
        }
        c->rx_dst_off += k;
        if (c->rx_dst_off == d->iov_len) {
            c->rx_dst_i++;
            c->rx_dst_off = 0;
        }
        data += k;
        n -= k;
    }
}

/* A ULPDU span from the deframer: data[0, n) are the ULPDU's octets [off, off + n). */
static int on_span(struct iwarp_llp_conn *c, const uint8_t *data, size_t n, uint32_t off,
                   uint32_t ulpdu_len)
{
    c->rx_ulpdu_len = ulpdu_len;
    c->rx_ulpdu_done = off + (uint32_t)n;
    if (c->rx_mode == RX_STAGE && off == 0 && n == ulpdu_len &&
        (!direct_ok(c) || iwarp_core_eng_rx_hdr_len(c->eng, data, n, ulpdu_len) >= ulpdu_len)) {
        /* The whole ULPDU in one piece: handed over where it lies at the FPDU's end. */
        c->rx_seg = data;
        c->bounce_len = ulpdu_len;
        return 0;
    }
    int ret = 0;
    while (n > 0) {
        if (c->rx_mode != RX_STAGE) {
            direct_put(c, data, n);
            return ret;
        }
        size_t k = n;
        if (direct_ok(c)) {
            uint32_t need = stage_need(c, off, ulpdu_len);
            if (off < need && k > need - off)
                k = need - off; /* the headers first: they decide where the payload goes */
        }
        /* Keep the ULPDU contiguous in the bounce buffer (it already is when the read was
         * exact; a window span lies above its ULPDU offset, so the move goes down). */
        uint8_t *dst = c->bounce + off;
        if (data != dst) {
            memmove(dst, data, k);
            c->rx_moved_octets += k;
        }
        c->rx_seg = c->bounce;
        c->bounce_len = off + (uint32_t)k;
        int rc = maybe_direct(c, ulpdu_len);
        if (rc != 0 && ret == 0)
            ret = rc;
        data += k;
        n -= k;
        off += (uint32_t)k;
    }
    return ret;
}

/* Message boundaries for the end of stream (iwarp_llp_conn_eof): a segment's DDP Control
 * octet (RFC 5041 §4.2: T, L) and, untagged, its QN (§4.4) say which message it leaves open. */
static void track_message(struct iwarp_llp_conn *c, const uint8_t *seg, uint32_t len)
{
    if (len == 0)
        return;
    bool last = (seg[0] & IWARP_DDP_FLAG_LAST) != 0;
    if (seg[0] & IWARP_DDP_FLAG_TAGGED) {
        c->rx_tagged_open = !last;
    } else if (len >= 6u) {
        uint32_t qn = iwarp_load_be32(seg + 2);
        uint32_t bit = qn < 32u ? 1u << qn : 0u;
        c->rx_untagged_open = last ? c->rx_untagged_open & ~bit : c->rx_untagged_open | bit;
    }
}

/* The FPDU is complete (its CRC checked when on): deliver its ULPDU as it was received. */
static int fpdu_end(struct iwarp_llp_conn *c, uint32_t ulpdu_len)
{
    uint8_t mode = c->rx_mode;
    const uint8_t *seg = c->rx_seg;
    track_message(c, seg, c->bounce_len);
    c->rx_mode = RX_STAGE;
    c->rx_ndst = c->rx_dst_i = 0;
    c->rx_dst_off = 0;
    c->rx_ulpdu_len = c->rx_ulpdu_done = 0;
    c->rx_seg = c->bounce;
    c->bounce_len = 0;
    if (mode == RX_STAGE)
        return on_fpdu(c, seg, ulpdu_len);
    /* RFC 5044 §4.1: with CRC off the trailer needs no check; the payload is in place. */
    return mode == RX_DIRECT ? iwarp_core_eng_rx_payload_done(c->eng) : 0;
}

/* The deframer failed (RFC 5044 §8: CRC 0x02, marker or length 0x03). */
static int rx_error(struct iwarp_llp_conn *c, int err)
{
    struct iwarp_term_cause cause;
    if (!iwarp_mpa_rx_term_cause(err, &cause))
        cause = (struct iwarp_term_cause){IWARP_TERM_LAYER_LLP, IWARP_TERM_LLP_ETYPE_MPA,
                                          IWARP_TERM_MPA_CATASTROPHIC};
    const uint8_t *hdr = c->bounce_len ? c->rx_seg : NULL;
    size_t hdr_len = c->bounce_len;
    c->rx_dead = true;
    c->tx_hold = false; /* a broken first FPDU has arrived too: the Terminate may go */
    if (c->started)
        iwarp_core_eng_rx_llp_error(c->eng, cause, hdr, hdr_len);
    else
        conn_terminate(c, err, cause, NULL, 0);
    c->bounce_len = 0;
    c->rx_seg = c->bounce;
    if (c->rx_mode == RX_DIRECT) /* the QP is terminating: this only ends the pending segment */
        (void)iwarp_core_eng_rx_payload_done(c->eng);
    c->rx_mode = RX_STAGE;
    return err;
}

/* After a read: a whole ULPDU kept in place whose FPDU is not complete yet moves to the
 * bounce buffer's start (the next read may overwrite the window). */
static void settle_in_place(struct iwarp_llp_conn *c)
{
    if (c->rx_seg == c->bounce || c->bounce_len == 0)
        return;
    memmove(c->bounce, c->rx_seg, c->bounce_len);
    c->rx_moved_octets += c->bounce_len;
    c->rx_seg = c->bounce;
}

int iwarp_llp_conn_rx_ack(struct iwarp_llp_conn *c, size_t n, uint64_t now_ns)
{
    c->now_ns = now_ns;
    if (n == 0 || c->state == IWARP_LLP_CONN_REQUEST || finished(c) || c->rx_dead)
        return 0;
    size_t cap;
    if (!c->fullop || neg_reading(c)) {
        if (!neg_reading(c))
            return IWARP_ERR_STATE;
        uint8_t *p = neg_land(c, &cap);
        if (n > cap)
            n = cap;
        iwarp_ssize r = iwarp_mpa_neg_rx(&c->neg, p, n, now_ns);
        if (r < 0)
            return neg_failed(c);
        if (neg_state(c) == IWARP_MPA_NEG_REQUEST)
            c->state = IWARP_LLP_CONN_REQUEST;
        else if (neg_state(c) == IWARP_MPA_NEG_SEND_FIRST && !c->fullop)
            return initiator_established(c, now_ns);
        return 0;
    }
    bool ahead;
    const uint8_t *p = rx_land(c, &cap, &ahead);
    if (p == NULL || n > cap)
        return IWARP_ERR_INVAL;
    bool filled = n == cap;
    int ret = 0;
    while (n > 0 && !c->rx_dead) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize k = iwarp_mpa_rx_feed(&c->rx, p, n, &ev);
        if (k < 0)
            return rx_error(c, (int)k);
        p += k;
        n -= (size_t)k;
        int rc = 0;
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU)
            rc = on_span(c, ev.data, ev.len, ev.ulpdu_off, ev.ulpdu_len);
        else if (ev.kind == IWARP_MPA_RX_EV_FPDU)
            rc = fpdu_end(c, ev.ulpdu_len);
        if (rc != 0 && ret == 0)
            ret = rc;
    }
    if (c->rx_dead)
        return ret;
    settle_in_place(c);
    if (ahead) {
        /* A full window that ended outside a large ULPDU: more small FPDUs are queued. */
        struct iwarp_mpa_rx_want w;
        iwarp_mpa_rx_want(&c->rx, &w);
        c->ra_wide = filled && ulpdu_left(c, &w) <= COPY_MAX;
    }
    return ret;
}

/* ---- transmit -------------------------------------------------------------------------- */

/* Stage the negotiation's pending frame when the previous one has been written. */
static void stage_neg(struct iwarp_llp_conn *c)
{
    if (c->stage_off < c->stage_len || iwarp_mpa_neg_tx_pending(&c->neg) == 0)
        return;
    c->stage_len = (uint16_t)iwarp_mpa_neg_tx(&c->neg, c->bounce + STAGE_OFF, NEG_FRAME_MAX);
    c->stage_off = 0;
}

/* The initiator's first FPDU is held until first_fpdu_at. */
static bool tx_gated(struct iwarp_llp_conn *c, uint64_t now_ns)
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
        struct iwarp_llp_conn_txf *t = TXF_SLOT(c, c->txf_count);
        if (c->rtr_pending) {
            uint8_t rtr = iwarp_mpa_neg_result(&c->neg)->rtr;
            if (iwarp_llp_rtr_build(c->eng->rdmap, rtr, &t->seg) != 0)
                break; /* cannot happen: the negotiation picked exactly one type */
            c->rtr_pending = false;
            c->rtr_wait = rtr == IWARP_MPA_RTR_READ;
        } else if (!qp_may_send(c) || !iwarp_core_eng_tx_next(c->eng, c->max_seg, &t->seg)) {
            break;
        }
        int rc = frame(c, t);
        if (rc != 0) {
            /* The QP produced a segment over max_seg or empty: an engine bug. */
            c->state = IWARP_LLP_CONN_FAILED;
            c->err = rc;
            c->rx_dead = true;
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
        c->rx_dead = true;
    }
}

uint32_t iwarp_llp_conn_tx_iov(struct iwarp_llp_conn *c, struct iovec *iov, uint32_t max,
                               uint64_t now_ns)
{
    c->now_ns = now_ns;
    uint32_t k = 0;
    stage_neg(c);
    if (c->stage_off < c->stage_len && k < max)
        iov[k++] = (struct iovec){c->bounce + STAGE_OFF + c->stage_off,
                                  (size_t)(c->stage_len - c->stage_off)};
    if (tx_gated(c, now_ns))
        return k;
    tx_fill(c);
    update_close(c);
    size_t skip = c->txf_off;
    for (uint32_t f = 0; f < c->txf_count && k < max; f++) {
        struct iwarp_llp_conn_txf *t = TXF_SLOT(c, f);
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
    size_t st = (size_t)(c->stage_len - c->stage_off);
    size_t take = n < st ? n : st;
    c->stage_off = (uint16_t)(c->stage_off + take);
    n -= take;
    while (n > 0 && c->txf_count > 0) {
        struct iwarp_llp_conn_txf *t = TXF_SLOT(c, 0);
        size_t rem = t->wire_len - c->txf_off;
        if (n < rem) {
            c->txf_off += (uint32_t)n;
            break;
        }
        n -= rem;
        c->txf_off = 0;
        c->txf_head = (c->txf_head + 1u) % IWARP_LLP_CONN_TX_SEGS;
        c->txf_count--;
        /* RFC 5044 §7.1.2 rule 4: the initiator's first FPDU is out. */
        if (neg_state(c) == IWARP_MPA_NEG_SEND_FIRST)
            (void)iwarp_mpa_neg_first_sent(&c->neg);
        if (t->seg.src != IWARP_CORE_TX_NONE && c->started)
            iwarp_core_eng_tx_sent(c->eng, &t->seg);
    }
    update_close(c);
}

bool iwarp_llp_conn_tx_ready(struct iwarp_llp_conn *c, uint64_t now_ns)
{
    if (c->stage_off < c->stage_len || iwarp_mpa_neg_tx_pending(&c->neg) > 0)
        return true;
    if (c->first_fpdu_at != 0 && now_ns < c->first_fpdu_at)
        return false;
    if (c->txf_count > 0 || (c->rtr_pending && c->state == IWARP_LLP_CONN_ESTABLISHED))
        return true;
    return qp_may_send(c) && iwarp_core_eng_tx_pending(c->eng);
}

/* ---- time and close -------------------------------------------------------------------- */

uint64_t iwarp_llp_conn_next_timeout(const struct iwarp_llp_conn *c)
{
    uint64_t t = UINT64_MAX;
    if (c->state == IWARP_LLP_CONN_NEGOTIATING || c->state == IWARP_LLP_CONN_REQUEST || c->tx_hold)
        t = iwarp_mpa_neg_next_timeout(&c->neg);
    if (c->first_fpdu_at != 0 && c->first_fpdu_at < t)
        t = c->first_fpdu_at;
    return t;
}

void iwarp_llp_conn_handle_timeout(struct iwarp_llp_conn *c, uint64_t now_ns)
{
    c->now_ns = now_ns;
    (void)tx_gated(c, now_ns);
    /* RFC 5044 §7.1.2 rules 8, 10: the Request, the Reply and the RTR are awaited with a
     * timer. */
    if ((c->state == IWARP_LLP_CONN_NEGOTIATING || c->state == IWARP_LLP_CONN_REQUEST) &&
        iwarp_mpa_neg_handle_timeout(&c->neg, now_ns) != 0)
        (void)neg_failed(c);
    else if (c->tx_hold && iwarp_mpa_neg_handle_timeout(&c->neg, now_ns) != 0)
        (void)started_failed(c, iwarp_mpa_neg_result(&c->neg)->err); /* rule 10: no RTR */
}

void iwarp_llp_conn_closed(struct iwarp_llp_conn *c, bool graceful)
{
    if (c->state == IWARP_LLP_CONN_NEGOTIATING || c->state == IWARP_LLP_CONN_REQUEST) {
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = IWARP_ERR_IO;
    } else if (c->state == IWARP_LLP_CONN_ESTABLISHED) {
        c->state = IWARP_LLP_CONN_CLOSE;
    }
    c->rx_dead = true;
    c->rtr_pending = false;
    c->txf_count = 0;
    c->txf_off = 0;
    c->stage_len = c->stage_off = 0;
    c->tx_hold = false;
    iwarp_core_eng_llp_closed(c->eng, graceful);
}

/* Whether the receive side stands at a message boundary (see iwarp_llp_conn_eof). */
static bool rx_at_message_boundary(const struct iwarp_llp_conn *c)
{
    if (!c->fullop || c->rx_dead)
        return true; /* nothing of full operation is being received */
    struct iwarp_mpa_rx_want w;
    iwarp_mpa_rx_want(&c->rx, &w);
    /* No octet of an FPDU yet: before its length field, or before a marker that would
     * precede it (RFC 5044 §4.3: a marker between FPDUs belongs to the next one). */
    bool fpdu_boundary = (w.part == IWARP_MPA_RX_PART_HDR && w.len == IWARP_MPA_LEN_FIELD) ||
                         (w.part == IWARP_MPA_RX_PART_MARKER && w.len == IWARP_MPA_MARKER_LEN &&
                          c->rx_ulpdu_len == 0);
    return fpdu_boundary && c->bounce_len == 0 && !c->rx_tagged_open && c->rx_untagged_open == 0;
}

void iwarp_llp_conn_eof(struct iwarp_llp_conn *c)
{
    /* RFC 5041 §6.2.1: the peer's graceful teardown closes the LLP stream after its last
     * message; RFC 5041 §6.2.2, RFC 5040 §6.2: a stream that ends inside an FPDU or a message
     * was lost (LLP abortive termination). */
    iwarp_llp_conn_closed(c, rx_at_message_boundary(c));
}
