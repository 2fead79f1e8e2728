/* SPDX-License-Identifier: BSD-2-Clause */
/* Decoding and judging one captured MPA connection (see trace_mpa_stream.h). */
#include "trace/trace_mpa_stream.h"

#include <stdio.h>
#include <string.h>

#include "iwarp/errors.h"
#include "mpa/mpa_frame.h"
#include "util/bytes.h"
#include "wire/wire_rdmap.h"

enum { ST_UNKNOWN, ST_MPA, ST_NOT_MPA };
enum { PH_FRAME, PH_WAIT, PH_FPDU, PH_RAW };

static bool from_init(const struct iwarp_mpa_stream *s, unsigned side)
{
    return s->initiator == (int)side;
}

/* Where every finding of the stream goes (iwarp_ddp_judge_reportf's fn, ctx the stream): its
 * counters and its callback. The shared DDP/RDMAP rules report here too. */
static void to_finding(void *ctx, unsigned side, uint64_t index, bool error,
                       enum iwarp_mpa_stream_class cls, const char *msg)
{
    struct iwarp_mpa_stream *s = ctx;
    if (error)
        s->errors++;
    else
        s->warnings++;
    struct iwarp_mpa_stream_finding f = {.cls = cls,
                                         .error = error,
                                         .side = side,
                                         .from_initiator = from_init(s, side),
                                         .index = index,
                                         .tag = s->tag,
                                         .msg = msg};
    s->ops->finding(s->ctx, &f);
}

void iwarp_mpa_stream_init(struct iwarp_mpa_stream *s, const struct iwarp_mpa_stream_cfg *cfg,
                           const struct iwarp_mpa_stream_ops *ops, void *ctx)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->ops = ops;
    s->ctx = ctx;
    s->initiator = -1;
    iwarp_ddp_judge_init(&s->judge, to_finding, s);
}

bool iwarp_mpa_stream_is_mpa(const struct iwarp_mpa_stream *s)
{
    return s->state == ST_MPA;
}

/* ---- startup frames (RFC 5044 §7.1.1, RFC 6581 §9) ---- */

/* Rules on one frame's Rev/Res/PD_Length/RFC 6581 word (wire-check's mpa-* categories). */
static void frame_rules(struct iwarp_mpa_stream *s, unsigned side, uint64_t idx, const uint8_t *b,
                        bool reply)
{
    uint8_t flags = b[16], rev = b[17];
    uint16_t pdl = iwarp_load_be16(b + 18);
    bool sbit = flags & IWARP_MPA_FLAG_S;
    /* RFC 5044 §7.1.1 Rev 1; RFC 6581 §4 Rev 2 */
    if (rev != IWARP_MPA_REV1 && rev != IWARP_MPA_REV2)
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_MPA_REV,
                                "MPA Rev=%u (1 = RFC 5044, 2 = RFC 6581)", rev);
    /* RFC 5044 §7.1.1: Res MUST be zero on send; RFC 6581 §6 takes bit S from it for Rev 2 */
    if (rev == IWARP_MPA_REV1 && (flags & (IWARP_MPA_FLAG_RES | IWARP_MPA_FLAG_S)))
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_MPA_RES,
                                "Res bits 0x%02x set in a Rev 1 frame (RFC 5044 §7.1.1: MUST be 0)",
                                flags & (IWARP_MPA_FLAG_RES | IWARP_MPA_FLAG_S));
    if (rev >= IWARP_MPA_REV2 && (flags & IWARP_MPA_FLAG_RES))
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_MPA_RES,
                                "Res bits 0x%02x set (RFC 6581 §6: only S may be set)",
                                flags & IWARP_MPA_FLAG_RES);
    if (!sbit)
        return;
    if (rev < IWARP_MPA_REV2)
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_MPA_REV,
                                "S bit set with Rev %u (RFC 6581 §6 needs Rev 2)", rev);
    if (pdl < IWARP_MPA_IRD_ORD_LEN) {
        iwarp_ddp_judge_reportf(
            to_finding, s, side, idx, true, IWARP_MS_MPA_PD,
            "S bit set but the private data is shorter than the IRD/ORD word (RFC 6581 §9)");
        return;
    }
    uint16_t w1 = iwarp_load_be16(b + IWARP_MPA_HDR_LEN);
    uint16_t w2 = iwarp_load_be16(b + IWARP_MPA_HDR_LEN + 2u);
    /* RFC 6581 §9.2: B, C and D MUST be zero when A is zero */
    if (!(w1 & IWARP_MPA_V2_PEER2PEER) &&
        ((w1 & IWARP_MPA_V2_RTR_SEND) || (w2 & (IWARP_MPA_V2_RTR_WRITE | IWARP_MPA_V2_RTR_READ))))
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_MPA_RTR,
                                "A=0 but B/C/D set (RFC 6581 §9.2: MUST be 0)");
    struct iwarp_mpa_ird_ord v2;
    iwarp_mpa_ird_ord_decode(b + IWARP_MPA_HDR_LEN, &v2);
    if (!reply) {
        s->req_s = true;
        s->req_v2 = v2;
        return;
    }
    s->rep_s = true;
    s->rep_v2 = v2;
    if (!s->have_req || !s->req_s)
        return;
    bool rejected = flags & IWARP_MPA_FLAG_R;
    /* RFC 6581 §9.2: a responder accepting peer-to-peer echoes A and picks an RTR type */
    if (s->req_v2.p2p && !v2.p2p)
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_MPA_RTR,
                                "Request had A=1, Reply must too (RFC 6581 §9.2)");
    if (s->req_v2.p2p && v2.p2p && !v2.rtr)
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_MPA_RTR,
                                "peer-to-peer Reply names no RTR type (RFC 6581 §9.2)");
    if (rejected)
        return;
    /* RFC 6581 §9.1: the responder's ORD MUST NOT exceed the initiator's IRD */
    if (v2.ord != IWARP_MPA_IRD_ORD_NONE && s->req_v2.ird != IWARP_MPA_IRD_ORD_NONE &&
        v2.ord > s->req_v2.ird)
        iwarp_ddp_judge_reportf(
            to_finding, s, side, idx, true, IWARP_MS_MPA_IRD,
            "responder ORD %u > initiator IRD %u (RFC 6581 §9.1: MUST be at most)", v2.ord,
            s->req_v2.ird);
    if (s->req_v2.ord != IWARP_MPA_IRD_ORD_NONE && v2.ird != IWARP_MPA_IRD_ORD_NONE &&
        s->req_v2.ord > v2.ird)
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, false, IWARP_MS_MPA_IRD,
                                "initiator ORD %u > responder IRD %u", s->req_v2.ord, v2.ird);
}

static void start_fpdus(struct iwarp_mpa_stream *s, unsigned side)
{
    struct iwarp_mpa_stream_dir *d = &s->d[side];
    /* RFC 5044 §7.1.1: markers in what the sender of a frame receives when its M is set */
    bool receiver_m =
        from_init(s, side) ? (s->rep_flags & IWARP_MPA_FLAG_M) : (s->req_flags & IWARP_MPA_FLAG_M);
    struct iwarp_mpa_rx_cfg cfg = {.crc = s->crc, .markers = receiver_m, .stream_pos = d->pos};
    (void)iwarp_mpa_rx_init(&d->rx, &cfg); /* stream_pos is a multiple of 4: valid */
    d->phase = PH_FPDU;
}

/* A complete startup frame of side (frame[0..frame_len)). */
static void frame_done(struct iwarp_mpa_stream *s, unsigned side)
{
    struct iwarp_mpa_stream_dir *d = &s->d[side];
    const uint8_t *b = d->frame;
    bool reply = !memcmp(b, IWARP_MPA_KEY_REP, IWARP_MPA_KEY_LEN);
    struct iwarp_mpa_frame f;
    iwarp_ssize rc = iwarp_mpa_frame_decode(b, d->frame_len, &f);
    uint64_t idx = ++s->pdus;
    bool second_req = !reply && s->have_req, orphan_rep = reply && !s->have_req;
    if (!reply) {
        s->have_req = true;
        s->initiator = (int)side;
        s->req_flags = b[16];
    } else {
        s->have_rep = true;
        s->rep_flags = b[16];
        if (s->initiator < 0)
            s->initiator = (int)(side ^ 1u);
    }
    struct iwarp_mpa_stream_pdu pdu = {.kind = reply ? IWARP_MS_PDU_REPLY : IWARP_MS_PDU_REQUEST,
                                       .side = side,
                                       .from_initiator = from_init(s, side),
                                       .index = idx,
                                       .tag = s->tag,
                                       .frame = rc >= 0 ? &f : NULL,
                                       .flags = b[16],
                                       .rev = b[17],
                                       .pd_length = iwarp_load_be16(b + 18)};
    s->ops->pdu(s->ctx, &pdu);
    if (second_req) /* RFC 5044 §7.1.2: one Request per connection */
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_STARTUP,
                                "second MPA Request on the connection");
    if (orphan_rep)
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, true, IWARP_MS_STARTUP,
                                "MPA Reply without a Request");
    frame_rules(s, side, idx, b, reply);
    d->frame_len = 0;
    if (!reply) {
        d->phase = PH_WAIT;
        return;
    }
    s->rejected = b[16] & IWARP_MPA_FLAG_R;
    if (s->req_s && !(b[16] & IWARP_MPA_FLAG_S) && !s->rejected)
        iwarp_ddp_judge_reportf(to_finding, s, side, idx, false, IWARP_MS_MPA_REV,
                                "enhanced Request answered without the S bit");
    /* RFC 5044 §7.1.1: CRCs are used when either side asks for them */
    s->crc = ((s->req_flags | s->rep_flags) & IWARP_MPA_FLAG_C) != 0;
    if (!s->crc && !s->rejected)
        iwarp_ddp_judge_reportf(
            to_finding, s, side, idx, false, IWARP_MS_CRC_OFF,
            "neither side asked for CRCs (RFC 5044 §4.4: CRCs are the default); nothing "
            "verifies the FPDUs");
    s->p2p = s->req_s && s->rep_s && s->req_v2.p2p && s->rep_v2.p2p && !s->rejected;
    s->rtr_offered = s->p2p ? s->rep_v2.rtr : 0;
    for (unsigned i = 0; i < 2; i++) {
        struct iwarp_mpa_stream_dir *x = &s->d[i];
        if (s->rejected) { /* RFC 5044 §7.1.2 rule 3: nothing follows a Reject */
            x->phase = PH_RAW;
            continue;
        }
        if (i == side || x->phase == PH_WAIT) {
            if (x->raw > 0) /* RFC 5044 §7.1.2: the initiator waits for the Reply */
                iwarp_ddp_judge_reportf(
                    to_finding, s, i, 0, true, IWARP_MS_UNDISSECTED,
                    "%llu octets sent before the MPA Reply were not decoded (RFC 5044 "
                    "§7.1.2: no FPDU before the Reply)",
                    (unsigned long long)x->raw);
            x->raw = 0;
            x->pos = 0; /* RFC 5044 §4.3: positions count from the start of full operation */
            start_fpdus(s, i);
        }
    }
}

/* Collects side's startup frame. Returns the octets consumed. */
static size_t frame_feed(struct iwarp_mpa_stream *s, unsigned side, const uint8_t *p, size_t n)
{
    struct iwarp_mpa_stream_dir *d = &s->d[side];
    size_t used = 0;
    while (used < n && d->phase == PH_FRAME) {
        size_t need = d->frame_len < IWARP_MPA_HDR_LEN
                          ? IWARP_MPA_HDR_LEN
                          : IWARP_MPA_HDR_LEN + iwarp_load_be16(d->frame + 18);
        size_t k = need - d->frame_len < n - used ? need - d->frame_len : n - used;
        memcpy(d->frame + d->frame_len, p + used, k);
        d->frame_len += (uint32_t)k;
        used += k;
        /* RFC 5044 §7.1.2 rule 5: the key comes first; anything else is not MPA */
        size_t key = d->frame_len < IWARP_MPA_KEY_LEN ? d->frame_len : IWARP_MPA_KEY_LEN;
        bool is_req = !memcmp(d->frame, IWARP_MPA_KEY_REQ, key);
        bool is_rep = !memcmp(d->frame, IWARP_MPA_KEY_REP, key);
        if (!is_req && !is_rep) {
            if (s->state == ST_UNKNOWN) {
                s->state = ST_NOT_MPA;
                if (s->cfg.require_mpa)
                    iwarp_ddp_judge_reportf(
                        to_finding, s, side, 0, true, IWARP_MS_NO_MPA,
                        "the stream carries payload that does not start with an MPA "
                        "Request");
                return n;
            }
            iwarp_ddp_judge_reportf(
                to_finding, s, side, 0, true, IWARP_MS_STARTUP,
                "the side's first octets are not an MPA Request or Reply (RFC 5044 §7.1.2)");
            d->raw += d->frame_len;
            d->frame_len = 0;
            d->phase = PH_RAW;
            break;
        }
        s->state = ST_MPA;
        if (d->frame_len < need)
            continue;
        if (need == IWARP_MPA_HDR_LEN) {
            uint16_t pdl = iwarp_load_be16(d->frame + 18);
            if (pdl > IWARP_MPA_PD_MAX) { /* RFC 5044 §7.1.1: at most 512 octets */
                iwarp_ddp_judge_reportf(
                    to_finding, s, side, 0, true, IWARP_MS_MPA_PD,
                    "PD_Length %u > 512 (RFC 5044 §7.1.1): the frame cannot be delimited", pdl);
                d->raw += d->frame_len;
                d->frame_len = 0;
                d->phase = PH_RAW;
                break;
            }
            if (pdl > 0)
                continue;
        }
        frame_done(s, side);
    }
    return used;
}

/* ---- FPDUs ---- */

static const char *op_name(unsigned op)
{
    const struct iwarp_rdmap_opinfo *oi = iwarp_rdmap_opinfo(op);
    return oi ? oi->name : "reserved opcode";
}

/* Names the RTR types in bits (IWARP_MPA_RTR_*), e.g. "Send Write ". */
static const char *rtr_names(uint8_t bits, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s", bits & IWARP_MPA_RTR_SEND ? "Send " : "",
             bits & IWARP_MPA_RTR_WRITE ? "Write " : "", bits & IWARP_MPA_RTR_READ ? "Read " : "");
    return buf;
}

/* Whether p is a Terminate with the cause 2/0/0x07, No matching RTR option (RFC 6581 §8). */
static bool rtr_mismatch_term(const struct iwarp_mpa_stream_pdu *p)
{
    if (!p->seg || p->seg->opcode != IWARP_RDMAP_OP_TERMINATE)
        return false;
    const struct iwarp_term_cause *c = &iwarp_term_layout(&p->seg->body.term)->cause;
    return c->layer == IWARP_TERM_LAYER_LLP && c->etype == IWARP_TERM_LLP_ETYPE_MPA &&
           c->ecode == IWARP_TERM_MPA_NO_RTR;
}

/* RFC 6581 §9.2: in peer-to-peer mode the initiator's first FPDU is a zero-length RTR of a
 * type the Reply offered; an initiator that can generate none of them "MUST send a TERM message
 * ... Layer 2, Error Type 0, Error Code 7" instead. */
static void rtr_rule(struct iwarp_mpa_stream *s, unsigned side,
                     const struct iwarp_mpa_stream_pdu *p)
{
    char offered[24], common[24];
    if (rtr_mismatch_term(p)) {
        uint8_t both = s->rtr_offered & s->req_v2.rtr;
        if (both)
            iwarp_ddp_judge_reportf(
                to_finding, s, side, p->index, true, IWARP_MS_RTR,
                "Terminate 2/0/0x07 (no matching RTR option) although the Reply offered %s"
                "which the Request listed (RFC 6581 §9.2)",
                rtr_names(both, common, sizeof common));
        return;
    }
    unsigned op = iwarp_rdmap_ctrl_opcode(p->ddp.rsvdulp);
    size_t hdr = iwarp_ddp_hdr_len(p->ulpdu[0]);
    size_t payload = p->ulpdu_len - hdr;
    struct iwarp_rdmap_read_req rr;
    bool ok = (op == IWARP_RDMAP_OP_WRITE && (s->rtr_offered & IWARP_MPA_RTR_WRITE) && !payload) ||
              (op == IWARP_RDMAP_OP_SEND && (s->rtr_offered & IWARP_MPA_RTR_SEND) && !payload) ||
              (op == IWARP_RDMAP_OP_READ_REQ && (s->rtr_offered & IWARP_MPA_RTR_READ) &&
               iwarp_rdmap_read_req_decode(p->ulpdu + hdr, payload, &rr) >= 0 && rr.size == 0);
    if (!ok)
        iwarp_ddp_judge_reportf(
            to_finding, s, side, p->index, true, IWARP_MS_RTR,
            "peer-to-peer connection: the initiator's first FPDU must be a zero-length RTR "
            "the Reply offered (%s), not %s with %zu payload octets (RFC 6581 §9.2)",
            rtr_names(s->rtr_offered, offered, sizeof offered), op_name(op), payload);
}

/* The direction stops being decodable: the rest is counted as raw octets. */
static void to_raw(struct iwarp_mpa_stream_dir *d)
{
    d->raw += d->partial;
    d->partial = 0;
    d->phase = PH_RAW;
}

/* The direction's framing is lost: says why once, and nothing more of it is decoded. The other
 * side's Read Responses are then not judged (their Requests may be in what is lost). */
static void framing_lost(struct iwarp_mpa_stream *s, unsigned side, uint64_t index, const char *why)
{
    iwarp_ddp_judge_reportf(to_finding, s, side, index, true, IWARP_MS_UNDISSECTED,
                            "MPA framing lost: %s; the rest of this direction is not decoded", why);
    s->d[side].raw_reported = true;
    to_raw(&s->d[side]);
    iwarp_ddp_judge_lost(&s->judge, side);
}

static uint32_t bswap32(uint32_t v)
{
    return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

/* A complete FPDU of side (its ULPDU staged in d->ulpdu). crc_want: the CRC32C it should carry
 * (when crc is IWARP_MS_CRC_BAD). The direction leaves PH_FPDU when its framing is now lost. */
static void fpdu_done(struct iwarp_mpa_stream *s, unsigned side, uint32_t ulpdu_len,
                      enum iwarp_mpa_stream_crc crc, uint32_t crc_want, bool marker_bad)
{
    struct iwarp_mpa_stream_dir *d = &s->d[side];
    uint32_t pad = iwarp_mpa_pad_len(ulpdu_len);
    uint32_t crc_field = iwarp_load_le32(d->trailer + pad);
    bool swapped = crc == IWARP_MS_CRC_BAD && crc_field == bswap32(crc_want);
    /* A byte-swapped CRC is a sender's mistake in an FPDU framed right; any other bad CRC may
     * come from a damaged ULPDU_Length, which misplaces the next FPDU (RFC 5044 §4.4, §8). */
    d->bad_run = crc == IWARP_MS_CRC_BAD && !swapped ? (uint8_t)(d->bad_run + 1u) : 0u;
    bool doubt = d->bad_run >= 2u;
    struct iwarp_ddp_judge_seg js;
    iwarp_ddp_judge_decode(d->ulpdu, doubt ? 0u : ulpdu_len, &js);
    struct iwarp_mpa_stream_pdu p = {.kind = IWARP_MS_PDU_FPDU,
                                     .side = side,
                                     .from_initiator = from_init(s, side),
                                     .index = ++s->pdus,
                                     .tag = s->tag,
                                     .ulpdu_len = ulpdu_len,
                                     .pad_len = pad,
                                     .markers = d->marker_oct / IWARP_MPA_MARKER_LEN,
                                     .crc = crc,
                                     .crc_field = crc_field,
                                     .crc_want = crc_want,
                                     .crc_swapped = swapped,
                                     .in_doubt = doubt,
                                     .ulpdu = d->ulpdu,
                                     .has_ddp = js.has_ddp,
                                     .ddp = js.ddp,
                                     .seg_rc = js.seg_rc,
                                     .seg = js.seg_rc == 0 ? &js.seg : NULL,
                                     .cause = js.cause};
    bool first = d->fpdus++ == 0;
    s->ops->pdu(s->ctx, &p);

    if (crc == IWARP_MS_CRC_BAD) /* RFC 5044 §4.4, §8 code 2 */
        iwarp_ddp_judge_reportf(
            to_finding, s, side, p.index, true, IWARP_MS_BAD_CRC,
            "MPA CRC field 0x%08x does not match the FPDU, whose CRC32C is 0x%08x (RFC 5044 "
            "§4.4)%s",
            crc_field, crc_want,
            swapped ? ": the CRC is BYTE-SWAPPED (it travels least-significant octet first)" : "");
    if (d->bad_run >= 3u) {
        framing_lost(s, side, p.index, "3 FPDUs in a row with a bad CRC (a wrong ULPDU_Length?)");
        return;
    }
    if (doubt) /* delimited by a length that may be garbage: nothing in it is judged */
        return;
    if (marker_bad) /* RFC 5044 §4.3, §8 code 3 */
        iwarp_ddp_judge_reportf(
            to_finding, s, side, p.index, true, IWARP_MS_MARKER,
            "a marker's FPDUPTR does not point at this FPDU's ULPDU_Length (RFC 5044 §4.3)");
    for (uint32_t i = 0; i < pad; i++)
        if (d->trailer[i]) { /* RFC 5044 §4.1: PAD octets MUST be zero */
            iwarp_ddp_judge_reportf(to_finding, s, side, p.index, true, IWARP_MS_PAD,
                                    "PAD octets are not zero (RFC 5044 §4.1)");
            break;
        }
    /* RFC 5044 §7.1.2 rule 4: the responder sends no FPDU before the initiator's first */
    if (first && !from_init(s, side) && s->have_req && s->d[side ^ 1u].fpdus == 0)
        iwarp_ddp_judge_reportf(
            to_finding, s, side, p.index, true, IWARP_MS_STARTUP,
            "responder sent an FPDU before receiving the initiator's first FPDU (RFC 5044 "
            "§7.1.2 rule 4)");
    if (js.has_ddp && first && from_init(s, side) && s->p2p)
        rtr_rule(s, side, &p);
    iwarp_ddp_judge_segment(&s->judge, side, p.index, &js);
}

/* The current FPDU is over (complete or failed): the next one starts from scratch. */
static void fpdu_reset(struct iwarp_mpa_stream_dir *d)
{
    d->partial = d->marker_oct = d->trailer_got = d->ulpdu_got = d->cur_ulen = 0;
    d->len_known = false;
}

/* The deframer failed in the middle of an FPDU: it cannot be delimited. */
static void undelimited(struct iwarp_mpa_stream *s, unsigned side, iwarp_ssize r)
{
    struct iwarp_mpa_stream_dir *d = &s->d[side];
    if (r == IWARP_ERR_FPDU_LEN && d->bad_run > 0u)
        framing_lost(s, side, 0,
                     "after an FPDU with a bad CRC, the next ULPDU_Length is 0 or over 64768");
    else if (r == IWARP_ERR_FPDU_LEN)
        iwarp_ddp_judge_reportf(to_finding, s, side, 0, true, IWARP_MS_LENGTH,
                                "ULPDU_Length is 0 or over 64768 (RFC 5044 §3): the FPDU cannot be "
                                "delimited; the rest of this direction is not decoded");
    else
        iwarp_ddp_judge_reportf(
            to_finding, s, side, 0, true, IWARP_MS_MARKER,
            "a marker's FPDUPTR does not point at the current FPDU (RFC 5044 §4.3); "
            "the rest of this direction is not decoded");
    d->raw_reported = true;
    to_raw(d);
}

/* Full operation: feeds side's octets to its deframer one part at a time, so the end of each
 * part (and of a failed FPDU) is known. Returns the octets consumed. */
static size_t fpdu_feed(struct iwarp_mpa_stream *s, unsigned side, const uint8_t *p, size_t n)
{
    struct iwarp_mpa_stream_dir *d = &s->d[side];
    size_t used = 0;
    while (used < n && d->phase == PH_FPDU) {
        struct iwarp_mpa_rx_want w;
        size_t k = iwarp_mpa_rx_want(&d->rx, &w);
        if (k > n - used)
            k = n - used;
        if (w.part == IWARP_MPA_RX_PART_TRAILER) {
            for (size_t i = 0; i < k && d->trailer_got < sizeof d->trailer; i++)
                d->trailer[d->trailer_got++] = p[used + i];
        } else if (w.part == IWARP_MPA_RX_PART_MARKER) {
            d->marker_oct += (uint32_t)k;
        }
        if (w.part == IWARP_MPA_RX_PART_ULPDU || w.part == IWARP_MPA_RX_PART_TRAILER) {
            d->cur_ulen = w.ulpdu_len;
            d->len_known = true;
        }
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize r = iwarp_mpa_rx_feed(&d->rx, p + used, k, &ev);
        if (r < 0) {
            bool fpdu_end = w.part == IWARP_MPA_RX_PART_TRAILER && k == w.len;
            used += k;
            if (!fpdu_end || (r != IWARP_ERR_FPDU_CRC && r != IWARP_ERR_FPDU_MARKER)) {
                d->partial += (uint32_t)k;
                undelimited(s, side, r);
                break;
            }
            /* The FPDU is delimited: report it and restart after it. */
            d->pos += (uint32_t)k;
            uint32_t want = iwarp_mpa_rx_crc_expected(&d->rx);
            fpdu_done(s, side, w.ulpdu_len,
                      r == IWARP_ERR_FPDU_CRC ? IWARP_MS_CRC_BAD : IWARP_MS_CRC_GOOD, want,
                      r == IWARP_ERR_FPDU_MARKER);
            fpdu_reset(d);
            if (d->phase == PH_FPDU) /* still framed: restart after the failed FPDU */
                start_fpdus(s, side);
            continue;
        }
        k = (size_t)r;
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU && ev.ulpdu_off + ev.len <= sizeof d->ulpdu) {
            memcpy(d->ulpdu + ev.ulpdu_off, ev.data, ev.len);
            d->ulpdu_got = ev.ulpdu_off + (uint32_t)ev.len;
        }
        d->pos += (uint32_t)k;
        d->partial += (uint32_t)k;
        used += k;
        if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            fpdu_done(s, side, ev.ulpdu_len, ev.crc_checked ? IWARP_MS_CRC_GOOD : IWARP_MS_CRC_NONE,
                      0, false);
            fpdu_reset(d);
        }
    }
    return used;
}

void iwarp_mpa_stream_feed(struct iwarp_mpa_stream *s, unsigned side, const uint8_t *p, size_t n,
                           uint64_t tag)
{
    if (side > 1u || s->state == ST_NOT_MPA)
        return;
    s->tag = tag;
    struct iwarp_mpa_stream_dir *d = &s->d[side];
    while (n > 0 && s->state != ST_NOT_MPA) {
        size_t k;
        switch (d->phase) {
        case PH_FRAME:
            k = frame_feed(s, side, p, n);
            break;
        case PH_FPDU:
            k = fpdu_feed(s, side, p, n);
            break;
        default: /* PH_WAIT (before the Reply), PH_RAW */
            d->raw += n;
            k = n;
            break;
        }
        p += k;
        n -= k;
    }
}

void iwarp_mpa_stream_reset(struct iwarp_mpa_stream *s, unsigned side)
{
    if (side < 2u)
        s->d[side].reset = true;
}

/* Whether the start of an FPDU that a reset cut short looks like one: a ULPDU_Length that holds
 * a DDP header, DDP Version 1, RDMAP Version 1, as far as they were captured (RFC 5041 §4.1,
 * RFC 5040 §4.1). */
static bool plausible_cut(const struct iwarp_mpa_stream_dir *d)
{
    if (!d->len_known)
        return true;
    if (d->cur_ulen < IWARP_DDP_TAGGED_HDR_LEN)
        return false;
    if (d->ulpdu_got >= 1u && (d->cur_ulen < iwarp_ddp_hdr_len(d->ulpdu[0]) ||
                               (d->ulpdu[0] & IWARP_DDP_MASK_DV) != IWARP_DDP_VERSION))
        return false;
    return d->ulpdu_got < 2u || iwarp_rdmap_ctrl_rv(d->ulpdu[1]) == IWARP_RDMAP_VERSION;
}

void iwarp_mpa_stream_finish(struct iwarp_mpa_stream *s)
{
    if (s->state != ST_MPA)
        return;
    s->tag = 0;
    for (unsigned i = 0; i < 2; i++) {
        struct iwarp_mpa_stream_dir *d = &s->d[i];
        if (d->phase == PH_FPDU && d->partial > 0 && d->raw == 0 && s->d[i ^ 1u].reset &&
            plausible_cut(d)) {
            struct iwarp_mpa_stream_pdu cut = {.kind = IWARP_MS_PDU_CUT,
                                               .side = i,
                                               .from_initiator = from_init(s, i),
                                               .index = ++s->pdus,
                                               .ulpdu_len = d->cur_ulen,
                                               .cut_octets = d->partial,
                                               .cut_len_known = d->len_known};
            s->ops->pdu(s->ctx, &cut);
            continue;
        }
        uint64_t left = d->raw + d->partial + d->frame_len;
        if (left > 0 && !d->raw_reported)
            iwarp_ddp_judge_reportf(
                to_finding, s, i, 0, true, IWARP_MS_UNDISSECTED,
                "%llu octets are not part of a complete MPA frame or FPDU (garbage, a lost "
                "framing, data before the Reply or after a Reject, or a capture that ends "
                "inside a PDU)",
                (unsigned long long)left);
    }
    iwarp_ddp_judge_finish(&s->judge);
}
