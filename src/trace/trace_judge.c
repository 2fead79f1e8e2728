/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP/RDMAP rules on captured segments, shared by the MPA and SCTP judges (see trace_judge.h). */
#include "trace/trace_judge.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "iwarp/errors.h"
#include "wire/wire_rdmap.h"

static const char *const class_names[IWARP_MS_CLASS_COUNT] = {
    [IWARP_MS_BAD_CRC] = "bad-crc",
    [IWARP_MS_MARKER] = "marker",
    [IWARP_MS_PAD] = "pad",
    [IWARP_MS_LENGTH] = "length",
    [IWARP_MS_UNDISSECTED] = "undissected",
    [IWARP_MS_NO_MPA] = "no-mpa",
    [IWARP_MS_STARTUP] = "startup",
    [IWARP_MS_MPA_REV] = "mpa-rev",
    [IWARP_MS_MPA_RES] = "mpa-res",
    [IWARP_MS_MPA_PD] = "mpa-pd",
    [IWARP_MS_MPA_RTR] = "mpa-rtr",
    [IWARP_MS_MPA_IRD] = "mpa-ird",
    [IWARP_MS_RTR] = "rtr",
    [IWARP_MS_DDP_VERSION] = "ddp-version",
    [IWARP_MS_DDP_RSVD] = "ddp-rsvd",
    [IWARP_MS_RDMAP_VERSION] = "rdmap-version",
    [IWARP_MS_RDMAP_RSVD] = "rdmap-rsvd",
    [IWARP_MS_OPCODE] = "opcode",
    [IWARP_MS_TFLAG] = "tflag",
    [IWARP_MS_QN] = "qn",
    [IWARP_MS_LAST_FLAG] = "last-flag",
    [IWARP_MS_MO] = "mo",
    [IWARP_MS_RSVDULP] = "rsvdulp",
    [IWARP_MS_MSN] = "msn",
    [IWARP_MS_TO] = "to",
    [IWARP_MS_READ_RESP] = "read-resp",
    [IWARP_MS_ATOMIC] = "atomic",
    [IWARP_MS_TERMINATE] = "terminate",
    [IWARP_MS_AFTER_TERMINATE] = "after-terminate",
    [IWARP_MS_CRC_OFF] = "crc-off",
    [IWARP_MS_SCTP] = "sctp",
    [IWARP_MS_SCTP_SSN] = "sctp-ssn",
    [IWARP_MS_SCTP_PPID] = "sctp-ppid",
    [IWARP_MS_SCTP_UNORDERED] = "sctp-unordered",
    [IWARP_MS_SCTP_ADAPTATION] = "sctp-adaptation",
    [IWARP_MS_SCTP_CTL] = "sctp-ctl",
};

const char *iwarp_mpa_stream_class_name(unsigned cls)
{
    return cls < IWARP_MS_CLASS_COUNT ? class_names[cls] : "?";
}

void iwarp_ddp_judge_reportf(iwarp_ddp_judge_report_fn fn, void *ctx, unsigned side, uint64_t index,
                             bool error, enum iwarp_mpa_stream_class cls, const char *fmt, ...)
{
    char msg[IWARP_DDP_JUDGE_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fn(ctx, side, index, error, cls, msg);
}

static const char *op_name(unsigned op)
{
    const struct iwarp_rdmap_opinfo *oi = iwarp_rdmap_opinfo(op);
    return oi ? oi->name : "reserved opcode";
}

/* The category of an iwarp_wire_segment_decode() error. */
static enum iwarp_mpa_stream_class seg_class(int rc)
{
    switch (rc) {
    case IWARP_ERR_DDP_VERSION:
        return IWARP_MS_DDP_VERSION;
    case IWARP_ERR_RDMAP_VERSION:
        return IWARP_MS_RDMAP_VERSION;
    case IWARP_ERR_RDMAP_OPCODE:
        return IWARP_MS_OPCODE;
    case IWARP_ERR_RDMAP_TAGGED:
        return IWARP_MS_TFLAG;
    case IWARP_ERR_DDP_QN:
        return IWARP_MS_QN;
    case IWARP_ERR_RDMAP_LAST:
        return IWARP_MS_LAST_FLAG;
    case IWARP_ERR_DDP_MO:
        return IWARP_MS_MO;
    default: /* IWARP_ERR_DDP_HDR_LEN, IWARP_ERR_RDMAP_LEN */
        return IWARP_MS_LENGTH;
    }
}

/* The untagged queue record of qn (-1 when the table is full). */
static int q_slot(struct iwarp_ddp_judge_dir *d, uint32_t qn)
{
    for (unsigned i = 0; i < IWARP_MS_MAX_QN; i++)
        if (d->q[i].used && d->q[i].qn == qn)
            return (int)i;
    for (unsigned i = 0; i < IWARP_MS_MAX_QN; i++)
        if (!d->q[i].used) {
            d->q[i].used = true;
            d->q[i].qn = qn;
            d->q[i].next_msn = 1; /* RFC 5041 §5.3: the first MSN of a queue is 1 */
            return (int)i;
        }
    return -1;
}

/* RFC 5041 §4.3, §5.3: MSN starts at 1 and grows by one per message on each queue; the
 * segments of one message share it and their MO is contiguous from 0. */
static void untagged_seq(struct iwarp_ddp_judge *j, unsigned side, uint64_t idx,
                         const struct iwarp_ddp_hdr *h, uint32_t payload)
{
    struct iwarp_ddp_judge_dir *d = &j->d[side];
    int i = q_slot(d, h->qn);
    if (i < 0)
        return;
    if (d->q[i].open) {
        if (h->msn != d->q[i].cur_msn)
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, idx, true, IWARP_MS_MSN,
                "QN %u MSN %u while message MSN %u is unfinished (L=0) (RFC 5041 §4.3)", h->qn,
                h->msn, d->q[i].cur_msn);
        else if (h->mo != d->q[i].cur_mo)
            iwarp_ddp_judge_reportf(j->report, j->ctx, side, idx, true, IWARP_MS_MO,
                                    "QN %u MSN %u MO %u, expected %u (RFC 5041 §4.3)", h->qn,
                                    h->msn, h->mo, d->q[i].cur_mo);
    } else {
        if (h->msn != d->q[i].next_msn)
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, idx, true, IWARP_MS_MSN,
                "QN %u MSN %u, expected %u (MSNs start at 1 and grow by one per message, "
                "RFC 5041 §4.3)",
                h->qn, h->msn, d->q[i].next_msn);
        if (h->mo != 0)
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, idx, true, IWARP_MS_MO,
                "first segment of QN %u MSN %u has MO %u, expected 0 (RFC 5041 §4.3)", h->qn,
                h->msn, h->mo);
    }
    if (h->last) {
        d->q[i].open = false;
        d->q[i].next_msn = h->msn + 1u; /* wraps modulo 2^32 (RFC 5041 §4.3) */
    } else {
        d->q[i].open = true;
        d->q[i].cur_msn = h->msn;
        d->q[i].cur_mo = h->mo + payload;
    }
}

/* RFC 5041 §4.2: the segments of a tagged message carry contiguous TOs. */
static void tagged_seq(struct iwarp_ddp_judge *j, unsigned side, uint64_t idx,
                       const struct iwarp_ddp_hdr *h, uint32_t payload)
{
    struct iwarp_ddp_judge_dir *d = &j->d[side];
    int slot = -1, fresh = -1;
    for (unsigned i = 0; i < IWARP_MS_MAX_STAGS; i++) {
        if (d->t[i].used && d->t[i].stag == h->stag)
            slot = (int)i;
        else if (!d->t[i].used && fresh < 0)
            fresh = (int)i;
    }
    if (slot >= 0 && h->to != d->t[slot].next_to)
        iwarp_ddp_judge_reportf(
            j->report, j->ctx, side, idx, true, IWARP_MS_TO,
            "TO 0x%llx for STag 0x%08x, expected 0x%llx (continues the previous segment, RFC "
            "5041 §4.2)",
            (unsigned long long)h->to, h->stag, (unsigned long long)d->t[slot].next_to);
    if (h->last) {
        if (slot >= 0)
            d->t[slot].used = false;
        return;
    }
    if (slot < 0)
        slot = fresh;
    if (slot >= 0) {
        d->t[slot].used = true;
        d->t[slot].stag = h->stag;
        d->t[slot].next_to = h->to + payload;
    }
}

/* Take the peer's oldest outstanding request of the kind a response of this side answers
 * (atomic or not) into *out. RFC 7306 §5.2.2 rule 8, §7: the responder answers Read and Atomic
 * Requests in the order they came, so one of the other kind before it is an error. Returns
 * false when there is none. */
static bool take_request(struct iwarp_ddp_judge *j, unsigned side, uint64_t idx, bool atomic,
                         unsigned *out_kept)
{
    struct iwarp_ddp_judge_dir *peer = &j->d[side ^ 1u];
    uint32_t k = 0;
    while (k < peer->nrequests && peer->requests[k].atomic != atomic)
        k++;
    if (k == peer->nrequests)
        return false;
    if (k != 0)
        iwarp_ddp_judge_reportf(
            j->report, j->ctx, side, idx, true, atomic ? IWARP_MS_ATOMIC : IWARP_MS_READ_RESP,
            "%s Response answers request #%llu before %s Request #%llu (responses go in "
            "request order, RFC 7306 §5.2.2 rule 8, §7)",
            atomic ? "Atomic" : "Read", (unsigned long long)peer->requests[k].index,
            atomic ? "Read" : "Atomic", (unsigned long long)peer->requests[0].index);
    *out_kept = k;
    return true;
}

/* Remove the peer's request k. */
static void drop_request(struct iwarp_ddp_judge_dir *peer, unsigned k)
{
    memmove(&peer->requests[k], &peer->requests[k + 1u],
            (peer->nrequests - 1u - k) * sizeof peer->requests[0]);
    peer->nrequests--;
}

/* RFC 7306 §5.2.2: an Atomic Response answers the peer's oldest Atomic Request and carries its
 * Request Identifier. */
static void atomic_resp(struct iwarp_ddp_judge *j, unsigned side, uint64_t idx,
                        const struct iwarp_rdmap_atomic_resp *resp)
{
    struct iwarp_ddp_judge_dir *peer = &j->d[side ^ 1u];
    if (peer->lost)
        return; /* its request may be among the octets that could not be decoded */
    unsigned k = 0;
    if (!take_request(j, side, idx, true, &k)) {
        iwarp_ddp_judge_reportf(
            j->report, j->ctx, side, idx, true, IWARP_MS_ATOMIC,
            "Atomic Response without an outstanding Atomic Request (RFC 7306 §5.2.2)");
        return;
    }
    if (resp->req_id != peer->requests[k].req_id)
        iwarp_ddp_judge_reportf(j->report, j->ctx, side, idx, true, IWARP_MS_ATOMIC,
                                "Original Request Identifier %u, Atomic Request #%llu carried %u "
                                "(RFC 7306 §5.2.2)",
                                resp->req_id, (unsigned long long)peer->requests[k].index,
                                peer->requests[k].req_id);
    drop_request(peer, k);
}

/* RFC 5040 §4.5: Read Responses answer the peer's Read Requests in order, at the sink STag and
 * TO, RDMARDSZ octets in all. */
static void read_resp(struct iwarp_ddp_judge *j, unsigned side, uint64_t idx,
                      const struct iwarp_ddp_hdr *h, uint32_t payload)
{
    struct iwarp_ddp_judge_dir *d = &j->d[side], *peer = &j->d[side ^ 1u];
    if (peer->lost) {
        /* The Read Requests may be among the peer's octets that could not be decoded: pairing
         * Responses with the Requests seen would accuse this side of the peer's damage. */
        if (!d->resp_unjudged)
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, idx, false, IWARP_MS_READ_RESP,
                "Read Responses from here on are not checked: the Read Requests they answer "
                "may be in the other direction's octets that could not be decoded");
        d->resp_unjudged = true;
        return;
    }
    if (!d->resp_open) {
        unsigned k = 0;
        if (!take_request(j, side, idx, false, &k)) {
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, idx, true, IWARP_MS_READ_RESP,
                "Read Response without an outstanding Read Request (RFC 5040 §4.5)");
            return;
        }
        d->resp_req.sink_stag = peer->requests[k].sink_stag;
        d->resp_req.sink_to = peer->requests[k].sink_to;
        d->resp_req.size = peer->requests[k].size;
        d->resp_req.index = peer->requests[k].index;
        drop_request(peer, k);
        d->resp_open = true;
        d->resp_sofar = 0;
    }
    if (h->stag != d->resp_req.sink_stag)
        iwarp_ddp_judge_reportf(
            j->report, j->ctx, side, idx, true, IWARP_MS_READ_RESP,
            "Read Response STag 0x%08x, Read Request #%llu asked for sink STag 0x%08x (RFC "
            "5040 §4.5)",
            h->stag, (unsigned long long)d->resp_req.index, d->resp_req.sink_stag);
    else if (h->to != d->resp_req.sink_to + d->resp_sofar)
        iwarp_ddp_judge_reportf(
            j->report, j->ctx, side, idx, true, IWARP_MS_READ_RESP,
            "Read Response TO 0x%llx, expected 0x%llx (Read Request #%llu, RFC 5040 §4.5)",
            (unsigned long long)h->to, (unsigned long long)(d->resp_req.sink_to + d->resp_sofar),
            (unsigned long long)d->resp_req.index);
    d->resp_sofar += payload;
    if (h->last) {
        if (d->resp_sofar != d->resp_req.size)
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, idx, true, IWARP_MS_READ_RESP,
                "Read Response carried %llu octets, Read Request #%llu asked for %u (RFC 5040 "
                "§4.4 RDMARDSZ)",
                (unsigned long long)d->resp_sofar, (unsigned long long)d->resp_req.index,
                d->resp_req.size);
        d->resp_open = false;
    } else if (d->resp_sofar > d->resp_req.size) {
        iwarp_ddp_judge_reportf(j->report, j->ctx, side, idx, true, IWARP_MS_READ_RESP,
                                "Read Response exceeds the %u octets requested (RFC 5040 §4.4)",
                                d->resp_req.size);
    }
}

/* Header rules beyond the first failure iwarp_wire_segment_decode() reports. */
static void segment_rules(struct iwarp_ddp_judge *j, unsigned side, uint64_t index,
                          const struct iwarp_ddp_judge_seg *p)
{
    struct iwarp_ddp_judge_dir *d = &j->d[side];
    if (p->seg_rc < 0) {
        char cs[128];
        iwarp_term_cause_str(p->cause, cs, sizeof cs);
        iwarp_ddp_judge_reportf(j->report, j->ctx, side, index, true, seg_class(p->seg_rc),
                                "%s; Terminate %u/%u/0x%02x %s", iwarp_strerror(p->seg_rc),
                                p->cause.layer, p->cause.etype, p->cause.ecode, cs);
    } else {
        unsigned r = p->seg.rsvd_set;
        /* RFC 5041 §4.1, RFC 5040 §4.1: reserved fields MUST be zero on send */
        if (r & IWARP_WIRE_RSVD_DDP)
            iwarp_ddp_judge_reportf(j->report, j->ctx, side, index, true, IWARP_MS_DDP_RSVD,
                                    "DDP reserved bits = 0x%x (RFC 5041 §4.1: MUST be 0)",
                                    p->ddp.rsvd);
        if (r & (IWARP_WIRE_RSVD_RDMAP | IWARP_WIRE_RSVD_ATOMIC))
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, index, true, IWARP_MS_RDMAP_RSVD,
                "RDMAP reserved bits set (RFC 5040 §4.1, RFC 7306 §5.2.1: MUST be 0)");
        /* RFC 7306 §5.2.1 Figure 5: FetchAdd (0) and CmpSwap (2) are the AOpCodes defined */
        if (p->seg.opcode == IWARP_RDMAP_OP_ATOMIC_REQ &&
            p->seg.body.atomic_req.aopcode != IWARP_ATOMIC_FETCH_ADD &&
            p->seg.body.atomic_req.aopcode != IWARP_ATOMIC_CMP_SWAP)
            iwarp_ddp_judge_reportf(j->report, j->ctx, side, index, true, IWARP_MS_ATOMIC,
                                    "AOpCode %u is not defined (RFC 7306 §5.2.1: 0 FetchAdd, "
                                    "2 CmpSwap)",
                                    p->seg.body.atomic_req.aopcode);
        if (r & IWARP_WIRE_RSVD_INV_STAG)
            iwarp_ddp_judge_reportf(
                j->report, j->ctx, side, index, true, IWARP_MS_RSVDULP,
                "Invalidate STag slot = 0x%08x, MUST be 0 for %s (RFC 5040 §4.1)",
                p->ddp.rsvdulp_word, p->seg.op->name);
        if (p->seg.opcode == IWARP_RDMAP_OP_TERMINATE) {
            const struct iwarp_term *t = &p->seg.body.term;
            if (t->siw_swapped) /* docs/interop-siw.md */
                iwarp_ddp_judge_reportf(
                    j->report, j->ctx, side, index, true, IWARP_MS_TERMINATE,
                    "Terminate control word in Linux siw's bit-reversed layout (siw's known "
                    "deviation from RFC 5040 §4.8)");
            else if (r & IWARP_WIRE_RSVD_TERM)
                iwarp_ddp_judge_reportf(j->report, j->ctx, side, index, true, IWARP_MS_TERMINATE,
                                        "Terminate reserved bits 0x%x (RFC 5040 §4.8: MUST be 0)",
                                        t->rsvd);
            else if (!iwarp_term_cause_defined(t->ctrl.cause))
                iwarp_ddp_judge_reportf(
                    j->report, j->ctx, side, index, true, IWARP_MS_TERMINATE,
                    "Terminate cause %u/%u/0x%02x is not defined (RFC 5040 §4.8)",
                    t->ctrl.cause.layer, t->ctrl.cause.etype, t->ctrl.cause.ecode);
        }
    }
    unsigned op = iwarp_rdmap_ctrl_opcode(p->ddp.rsvdulp);
    if (op == IWARP_RDMAP_OP_TERMINATE && !p->ddp.tagged) {
        if (d->terminated) /* RFC 5040 §5.4: one Terminate ends the stream */
            iwarp_ddp_judge_reportf(j->report, j->ctx, side, index, true, IWARP_MS_TERMINATE,
                                    "second Terminate on this stream");
        else
            d->terminated = index;
    }
}

void iwarp_ddp_judge_decode(const uint8_t *ulpdu, uint32_t len, struct iwarp_ddp_judge_seg *out)
{
    memset(out, 0, sizeof *out);
    out->ulpdu = ulpdu;
    out->len = len;
    out->has_ddp = iwarp_ddp_hdr_decode(ulpdu, len, &out->ddp) > 0;
    out->seg_rc = iwarp_wire_segment_decode(ulpdu, len, &out->seg, &out->cause);
}

void iwarp_ddp_judge_init(struct iwarp_ddp_judge *j, iwarp_ddp_judge_report_fn report_fn, void *ctx)
{
    memset(j, 0, sizeof *j);
    j->report = report_fn;
    j->ctx = ctx;
}

void iwarp_ddp_judge_segment(struct iwarp_ddp_judge *j, unsigned side, uint64_t index,
                             const struct iwarp_ddp_judge_seg *p)
{
    struct iwarp_ddp_judge_dir *d = &j->d[side];
    if (!p->has_ddp) {
        segment_rules(j, side, index, p);
        return;
    }
    unsigned op = iwarp_rdmap_ctrl_opcode(p->ddp.rsvdulp);
    if (d->terminated) /* RFC 5040 §5.4: nothing follows one's own Terminate */
        iwarp_ddp_judge_reportf(j->report, j->ctx, side, index, true, IWARP_MS_AFTER_TERMINATE,
                                "%s sent after this side's Terminate #%llu (RFC 5040 §5.4)",
                                op_name(op), (unsigned long long)d->terminated);
    segment_rules(j, side, index, p);

    size_t hdr = iwarp_ddp_hdr_len(p->ulpdu[0]);
    uint32_t payload = (uint32_t)(p->len - hdr);
    if (p->ddp.tagged) {
        if (op == IWARP_RDMAP_OP_WRITE || op == IWARP_RDMAP_OP_READ_RESP)
            tagged_seq(j, side, index, &p->ddp, payload);
        if (op == IWARP_RDMAP_OP_READ_RESP)
            read_resp(j, side, index, &p->ddp, payload);
        return;
    }
    untagged_seq(j, side, index, &p->ddp, payload);
    /* RFC 5040 §4.4, RFC 7306 §5.2: requests are remembered when their header decodes (a
     * segment error elsewhere, e.g. L clear, does not hide what was asked) */
    struct iwarp_rdmap_read_req rr;
    struct iwarp_rdmap_atomic_req ar;
    struct iwarp_rdmap_atomic_resp resp;
    if (op == IWARP_RDMAP_OP_ATOMIC_RESP &&
        iwarp_rdmap_atomic_resp_decode(p->ulpdu + hdr, payload, &resp) >= 0)
        atomic_resp(j, side, index, &resp);
    if (d->nrequests >= IWARP_MS_MAX_REQUESTS)
        return;
    if (op == IWARP_RDMAP_OP_READ_REQ &&
        iwarp_rdmap_read_req_decode(p->ulpdu + hdr, payload, &rr) >= 0) {
        d->requests[d->nrequests].atomic = false;
        d->requests[d->nrequests].sink_stag = rr.sink_stag;
        d->requests[d->nrequests].sink_to = rr.sink_to;
        d->requests[d->nrequests].size = rr.size;
    } else if (op == IWARP_RDMAP_OP_ATOMIC_REQ &&
               iwarp_rdmap_atomic_req_decode(p->ulpdu + hdr, payload, &ar) >= 0) {
        d->requests[d->nrequests].atomic = true;
        d->requests[d->nrequests].req_id = ar.req_id;
    } else {
        return;
    }
    d->requests[d->nrequests].index = index;
    d->nrequests++;
}

void iwarp_ddp_judge_lost(struct iwarp_ddp_judge *j, unsigned side)
{
    if (side < 2u)
        j->d[side].lost = true;
}

void iwarp_ddp_judge_finish(struct iwarp_ddp_judge *j)
{
    for (unsigned i = 0; i < 2; i++) {
        struct iwarp_ddp_judge_dir *d = &j->d[i];
        for (unsigned q = 0; q < IWARP_MS_MAX_QN; q++)
            if (d->q[q].used && d->q[q].open)
                iwarp_ddp_judge_reportf(
                    j->report, j->ctx, i, 0, false, IWARP_MS_MSN,
                    "QN %u MSN %u has no segment with L=1 by the end of the capture", d->q[q].qn,
                    d->q[q].cur_msn);
        if (d->resp_open)
            iwarp_ddp_judge_reportf(j->report, j->ctx, i, 0, false, IWARP_MS_READ_RESP,
                                    "Read Response unfinished at the end of the capture");
    }
}
