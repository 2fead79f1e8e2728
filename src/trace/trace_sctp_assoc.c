/* SPDX-License-Identifier: BSD-2-Clause */
/* Decoding and judging one captured DDP-over-SCTP association (see trace_sctp_assoc.h). */
#include "trace/trace_sctp_assoc.h"

#include <stdlib.h>
#include <string.h>

#include "iwarp/errors.h"
#include "session/session_ssn.h"
#include "util/bytes.h"
#include "wire/wire.h"

#define MAX_FRAG_BYTES (16u << 20) /* fragment octets waiting per direction */

/* A user message: decoded in place, or held (a copy after the struct) until its turn. */
struct msg {
    unsigned side;
    uint16_t sid;
    uint32_t ppid, tsn, fragments;
    bool unordered;
    uint64_t tag;
    size_t len;
    const uint8_t *data;
};

/* A DATA chunk that is part of a fragmented message (RFC 9260 §6.9). */
struct frag {
    uint32_t tsn, ppid;
    uint16_t sid;
    uint8_t flags;
    uint8_t *data; /* a copy */
    size_t len;
};

/* The TSNs a direction has sent, for dropping retransmissions: every TSN before base and the
 * marked ones after it have been seen (serial arithmetic, RFC 9260 §3.3.1, RFC 1982). */
struct tsn_window {
    bool init;
    uint32_t base;
    uint64_t bits[IWARP_SA_TSN_WINDOW / 64u];
};

/* One direction of one DDP stream: its DDP-SSN reorder window. */
struct sdir {
    struct iwarp_sess_ssn_rx rx;
    uint64_t too_far; /* chunks beyond the window, decoded out of order */
    struct iwarp_sess_ssn_slot slots[IWARP_SA_REORDER];
};

/* One DDP stream: SCTP stream sid both ways (RFC 5043 §6). */
struct stream {
    struct iwarp_sctp_assoc *a;
    uint16_t sid;
    struct iwarp_ddp_judge judge;
    struct sdir d[2];
};

/* One direction of the association. */
struct adir {
    struct tsn_window tsn;
    struct frag *frags; /* IWARP_SA_MAX_FRAGS, allocated with the first fragment */
    uint32_t nfrags;
    size_t frag_bytes;
    bool frags_full_reported;
    bool init_seen; /* this side sent an INIT or INIT-ACK */
    uint8_t init_type;
    int init_rc;
    struct iwarp_sctp_init init;
    uint64_t init_tag;
};

struct iwarp_sctp_assoc {
    const struct iwarp_sa_ops *ops;
    void *ctx;
    int initiator;
    bool ddp_ppid_seen, finished, streams_full_reported;
    uint64_t pdus;
    uint64_t cur_tag; /* of what is being reported */
    struct adir d[2];
    struct stream *streams[IWARP_SA_MAX_STREAMS];
    uint32_t nstreams;
    struct {
        bool seen, reported;
        unsigned side;
        uint32_t ppid;
        uint64_t tag, index;
    } other; /* the first message with a PPID other than 16/17 */
    struct iwarp_sa_stats st;
};

static bool from_init(const struct iwarp_sctp_assoc *a, unsigned side)
{
    return a->initiator == (int)side;
}

/* Where a finding is: the association and the stream it concerns (-1: none). */
struct sa_at {
    struct iwarp_sctp_assoc *a;
    int sid;
};

/* Where every finding of the association goes (iwarp_ddp_judge_reportf's fn, ctx a struct
 * sa_at): its callback. */
static void to_finding(void *ctx, unsigned side, uint64_t index, bool error,
                       enum iwarp_mpa_stream_class cls, const char *msg)
{
    const struct sa_at *at = ctx;
    struct iwarp_sctp_assoc *a = at->a;
    struct iwarp_sa_finding f = {.cls = cls,
                                 .error = error,
                                 .side = side,
                                 .from_initiator = from_init(a, side),
                                 .index = index,
                                 .tag = a->cur_tag,
                                 .sid = at->sid,
                                 .msg = msg};
    a->ops->finding(a->ctx, &f);
}

/* The DDP/RDMAP rules of a stream report as findings of the association. */
static void judge_to_finding(void *ctx, unsigned side, uint64_t index, bool error,
                             enum iwarp_mpa_stream_class cls, const char *msg)
{
    const struct stream *st = ctx;
    to_finding(&(struct sa_at){st->a, st->sid}, side, index, error, cls, msg);
}

struct iwarp_sctp_assoc *iwarp_sctp_assoc_new(const struct iwarp_sa_ops *ops, void *ctx)
{
    struct iwarp_sctp_assoc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->ops = ops;
    a->ctx = ctx;
    a->initiator = -1;
    return a;
}

void iwarp_sctp_assoc_free(struct iwarp_sctp_assoc *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->nstreams; i++) {
        struct stream *st = a->streams[i];
        for (unsigned s = 0; s < 2; s++) {
            struct iwarp_sess_chunk c;
            while (iwarp_sess_ssn_rx_drain(&st->d[s].rx, &c))
                free(c.ptr);
        }
        free(st);
    }
    for (unsigned s = 0; s < 2; s++) {
        for (uint32_t i = 0; i < a->d[s].nfrags; i++)
            free(a->d[s].frags[i].data);
        free(a->d[s].frags);
    }
    free(a);
}

bool iwarp_sctp_assoc_is_ddp(const struct iwarp_sctp_assoc *a)
{
    if (a->ddp_ppid_seen)
        return true;
    for (unsigned s = 0; s < 2; s++)
        if (a->d[s].init_seen && a->d[s].init.has_adaptation &&
            a->d[s].init.adaptation == IWARP_SCTP_ADAPTATION_DDP)
            return true;
    return false;
}

int iwarp_sctp_assoc_initiator(const struct iwarp_sctp_assoc *a)
{
    return a->initiator;
}

void iwarp_sctp_assoc_stats(const struct iwarp_sctp_assoc *a, struct iwarp_sa_stats *out)
{
    *out = a->st;
}

/* ---- DDP streams ---- */

static struct stream *stream_get(struct iwarp_sctp_assoc *a, unsigned side, uint16_t sid)
{
    for (uint32_t i = 0; i < a->nstreams; i++)
        if (a->streams[i]->sid == sid)
            return a->streams[i];
    struct stream *st = NULL;
    if (a->nstreams < IWARP_SA_MAX_STREAMS)
        st = calloc(1, sizeof *st);
    if (!st) {
        if (!a->streams_full_reported)
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, sid}, side, 0, true, IWARP_MS_SCTP,
                "more than %u DDP streams in the association: stream %u and later ones are "
                "not decoded",
                IWARP_SA_MAX_STREAMS, sid);
        a->streams_full_reported = true;
        return NULL;
    }
    st->a = a;
    st->sid = sid;
    iwarp_ddp_judge_init(&st->judge, judge_to_finding, st);
    for (unsigned s = 0; s < 2; s++)
        (void)iwarp_sess_ssn_rx_init(&st->d[s].rx, st->d[s].slots, IWARP_SA_REORDER);
    a->streams[a->nstreams++] = st;
    return st;
}

/* ---- one message in DDP-SSN order ---- */

static bool fc_starts_session(int fc)
{
    /* RFC 5043 §6.2, §6.3, RFC 6581 §7: a session's first chunk each way */
    return fc == IWARP_SCTP_FC_INITIATE || fc == IWARP_SCTP_FC_ACCEPT ||
           fc == IWARP_SCTP_FC_REJECT || fc == IWARP_SCTP_FC_ENH_INITIATE ||
           fc == IWARP_SCTP_FC_ENH_ACCEPT || fc == IWARP_SCTP_FC_ENH_REJECT;
}

static void ctl_finding(struct iwarp_sctp_assoc *a, const struct msg *m, uint64_t index, int rc,
                        int fc)
{
    switch (rc) {
    case IWARP_ERR_SHORT:
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, index, true, IWARP_MS_SCTP_CTL,
            "Stream Session Control message of %zu octets: shorter than DDP-SSN and Function "
            "Code (RFC 5043 §5.2.3)",
            m->len);
        break;
    case IWARP_ERR_SESSION_FUNCTION:
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, index, true, IWARP_MS_SCTP_CTL,
            "unknown Function Code 0x%03x (RFC 5043 §5.2.3, RFC 6581 §7)", (unsigned)fc);
        break;
    case IWARP_ERR_MPA_PD_LEN:
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, index, true, IWARP_MS_SCTP_CTL,
            "%zu octets of private data (RFC 5043 §5.2.3: at most 512, none in a Terminate)",
            m->len - IWARP_SCTP_CTL_HDR_LEN);
        break;
    default: /* IWARP_ERR_MPA_ENHANCED */
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, index, true, IWARP_MS_SCTP_CTL,
            "Enhanced Initiate/Accept without the 4-octet IRD/ORD word (RFC 6581 §7)");
        break;
    }
}

/* Decodes, reports and judges one DDP message (PPID 16/17), in its stream's DDP-SSN order. st
 * is NULL for a message too short for a DDP-SSN. */
static void process(struct iwarp_sctp_assoc *a, struct stream *st, const struct msg *m)
{
    uint64_t index = ++a->pdus;
    a->cur_tag = m->tag;
    a->st.ddp_pdus++;
    struct iwarp_sa_pdu p = {.kind = m->ppid == IWARP_SCTP_PPID_DDP_CONTROL ? IWARP_SA_PDU_CTL
                                                                            : IWARP_SA_PDU_SEG,
                             .side = m->side,
                             .index = index,
                             .tag = m->tag,
                             .sid = m->sid,
                             .ppid = m->ppid,
                             .unordered = m->unordered,
                             .tsn = m->tsn,
                             .fragments = m->fragments,
                             .len = m->len,
                             .ssn = iwarp_sctp_ssn_peek(m->data, m->len),
                             .fc = -1};
    if (p.ssn < 0)
        p.ssn = -1;
    if (p.kind == IWARP_SA_PDU_CTL) {
        struct iwarp_sctp_ctl ctl;
        p.ctl_rc = (int)iwarp_sctp_ctl_decode(m->data, m->len, &ctl);
        p.ctl = p.ctl_rc >= 0 ? &ctl : NULL;
        if (m->len >= IWARP_SCTP_CTL_HDR_LEN)
            p.fc = iwarp_load_be16(m->data + 2);
        /* the association's initiator, when no INIT showed it: the session's active side */
        if (a->initiator < 0 &&
            (p.fc == IWARP_SCTP_FC_INITIATE || p.fc == IWARP_SCTP_FC_ENH_INITIATE))
            a->initiator = (int)m->side;
        p.from_initiator = from_init(a, m->side);
        a->ops->pdu(a->ctx, &p);
        if (p.ctl_rc < 0)
            ctl_finding(a, m, index, p.ctl_rc, p.fc);
    } else {
        struct iwarp_ddp_judge_seg js;
        if (m->len > IWARP_SCTP_SSN_LEN) {
            iwarp_ddp_judge_decode(m->data + IWARP_SCTP_SSN_LEN,
                                   (uint32_t)(m->len - IWARP_SCTP_SSN_LEN), &js);
            p.seg = &js;
        }
        p.from_initiator = from_init(a, m->side);
        a->ops->pdu(a->ctx, &p);
        if (!p.seg)
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, m->sid}, m->side, index, true, IWARP_MS_LENGTH,
                "DDP Segment chunk of %zu octets holds no DDP segment after the DDP-SSN (RFC "
                "5043 §5.2.2)",
                m->len);
        else if (st)
            iwarp_ddp_judge_segment(&st->judge, m->side, index, &js);
    }
    if (!m->unordered) /* RFC 5043 §10 */
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, index, true, IWARP_MS_SCTP_UNORDERED,
            "DATA chunk without the U flag (RFC 5043 §10: the adaptation layer MUST use the "
            "Unordered option on all Data Chunks)");
}

/* A copy of m (and its octets) that can wait in a reorder window. */
static struct msg *msg_copy(const struct msg *m)
{
    struct msg *c = malloc(sizeof *c + m->len);
    if (!c)
        return NULL;
    *c = *m;
    memcpy(c + 1, m->data, m->len);
    c->data = (const uint8_t *)(c + 1);
    return c;
}

/* Puts a DDP message in its stream's DDP-SSN order (RFC 5043 §5.2.1, §6.1). */
static void ddp_message(struct iwarp_sctp_assoc *a, const struct msg *m)
{
    a->ddp_ppid_seen = true;
    if (m->len < IWARP_SCTP_SSN_LEN) {
        process(a, NULL, m); /* nothing to order it by */
        return;
    }
    struct stream *st = stream_get(a, m->side, m->sid);
    if (!st)
        return;
    struct sdir *w = &st->d[m->side];
    uint16_t ssn = iwarp_load_be16(m->data);
    if (m->ppid == IWARP_SCTP_PPID_DDP_CONTROL && m->len >= IWARP_SCTP_CTL_HDR_LEN && ssn == 0 &&
        iwarp_sess_ssn_rx_expected(&w->rx) != 0 && iwarp_sess_ssn_rx_held(&w->rx) == 0) {
        int fc = iwarp_load_be16(m->data + 2);
        if (fc_starts_session(fc)) {
            /* RFC 5043 §6.1: the DDP-SSN restarts at zero with each session */
            (void)iwarp_sess_ssn_rx_reset(&w->rx);
            if (fc == IWARP_SCTP_FC_INITIATE || fc == IWARP_SCTP_FC_ENH_INITIATE)
                iwarp_ddp_judge_init(&st->judge, judge_to_finding, st);
        }
    }
    uint16_t expected = iwarp_sess_ssn_rx_expected(&w->rx);
    a->cur_tag = m->tag;
    switch (iwarp_sess_ssn_rx_classify(&w->rx, ssn)) {
    case IWARP_SESS_SSN_EXPECTED: {
        (void)iwarp_sess_ssn_rx_accept(&w->rx, ssn, (struct iwarp_sess_chunk){NULL, 0});
        process(a, st, m);
        struct iwarp_sess_chunk c;
        while (iwarp_sess_ssn_rx_next(&w->rx, &c)) {
            process(a, st, c.ptr);
            free(c.ptr);
        }
        break;
    }
    case IWARP_SESS_SSN_AHEAD: {
        struct msg *c = msg_copy(m);
        if (!c) {
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, m->sid}, m->side, 0, true, IWARP_MS_SCTP,
                "out of memory: DDP-SSN %u on stream %u is not decoded", ssn, m->sid);
            break;
        }
        (void)iwarp_sess_ssn_rx_accept(&w->rx, ssn, (struct iwarp_sess_chunk){c, m->len});
        a->st.held++;
        break;
    }
    case IWARP_SESS_SSN_DUP_HELD:
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, 0, true, IWARP_MS_SCTP_SSN,
            "DDP-SSN %u on stream %u sent twice (TSN %u is the second; RFC 5043 §6.1: no "
            "repeats in a session): not decoded",
            ssn, m->sid, m->tsn);
        break;
    case IWARP_SESS_SSN_DUP_OLD:
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, 0, true, IWARP_MS_SCTP_SSN,
            "DDP-SSN %u on stream %u repeats one already decoded (%u expected next; RFC 5043 "
            "§6.1: no repeats in a session): not decoded",
            ssn, m->sid, expected);
        break;
    default: /* IWARP_SESS_SSN_TOO_FAR */
        if (w->too_far++ == 0)
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, m->sid}, m->side, 0, true, IWARP_MS_SCTP_SSN,
                "DDP-SSN %u on stream %u while %u is expected: beyond the %u chunks a gap may "
                "hold back (RFC 5043 §6.1, §10); decoded out of order",
                ssn, m->sid, expected, IWARP_SA_REORDER);
        process(a, st, m);
        break;
    }
}

/* A whole user message (RFC 9260 §6.9: reassembled when it came in fragments). */
static void deliver(struct iwarp_sctp_assoc *a, const struct msg *m)
{
    if (m->ppid == IWARP_SCTP_PPID_DDP_SEGMENT || m->ppid == IWARP_SCTP_PPID_DDP_CONTROL) {
        ddp_message(a, m);
        return;
    }
    uint64_t index = ++a->pdus;
    a->cur_tag = m->tag;
    struct iwarp_sa_pdu p = {.kind = IWARP_SA_PDU_OTHER,
                             .side = m->side,
                             .from_initiator = from_init(a, m->side),
                             .index = index,
                             .tag = m->tag,
                             .sid = m->sid,
                             .ppid = m->ppid,
                             .unordered = m->unordered,
                             .tsn = m->tsn,
                             .fragments = m->fragments,
                             .len = m->len,
                             .ssn = -1,
                             .fc = -1};
    a->ops->pdu(a->ctx, &p);
    if (a->other.seen)
        return;
    a->other.seen = true;
    a->other.side = m->side;
    a->other.ppid = m->ppid;
    a->other.tag = m->tag;
    a->other.index = index;
    if (iwarp_sctp_assoc_is_ddp(a)) {
        a->other.reported = true; /* RFC 5043 §5.1 */
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, m->sid}, m->side, index, true, IWARP_MS_SCTP_PPID,
            "PPID %u on a DDP association (RFC 5043 §5.1: it carries only DDP Segment (16) "
            "and Stream Session Control (17) chunks)",
            m->ppid);
    }
}

/* ---- DATA chunks: duplicates and fragments ---- */

/* Whether tsn was seen before in this direction; marks it seen. */
static bool tsn_seen(struct tsn_window *w, uint32_t tsn)
{
    const uint32_t span = IWARP_SA_TSN_WINDOW, words = span / 64u;
    if (!w->init) {
        w->init = true;
        w->base = tsn;
    }
    uint32_t d = tsn - w->base;
    if (d >= 0x80000000u)
        return true; /* before the window: long since seen (RFC 1982 serial order) */
    if (d >= span) {
        /* slide the window forward so tsn is its last TSN */
        uint32_t shift = (d - span) / 64u + 1u;
        if (shift >= words) {
            memset(w->bits, 0, sizeof w->bits);
        } else {
            memmove(w->bits, w->bits + shift, (words - shift) * sizeof w->bits[0]);
            memset(w->bits + (words - shift), 0, shift * sizeof w->bits[0]);
        }
        w->base += shift * 64u;
        d = tsn - w->base;
    }
    uint64_t bit = UINT64_C(1) << (d % 64u);
    if (w->bits[d / 64u] & bit)
        return true;
    w->bits[d / 64u] |= bit;
    return false;
}

static int frag_find(const struct adir *d, uint32_t tsn)
{
    for (uint32_t i = 0; i < d->nfrags; i++)
        if (d->frags[i].tsn == tsn)
            return (int)i;
    return -1;
}

/* Removes the fragments with TSNs first..last (those present). */
static void frag_drop(struct adir *d, uint32_t first, uint32_t last)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < d->nfrags; i++) {
        struct frag *f = &d->frags[i];
        if (f->tsn - first <= last - first) {
            d->frag_bytes -= f->len;
            free(f->data);
        } else {
            d->frags[k++] = *f;
        }
    }
    d->nfrags = k;
}

/* Tries to complete the message the fragment with TSN tsn belongs to (RFC 9260 §6.9:
 * consecutive TSNs from a B chunk to an E chunk, one stream, one U flag): walks back to its B
 * chunk, then forward to its E chunk. Returns the TSN to try next after a broken run (the
 * fragment that broke it), or tsn itself when done. */
static uint32_t frag_try(struct iwarp_sctp_assoc *a, unsigned side, uint32_t tsn, uint64_t tag)
{
    struct adir *d = &a->d[side];
    uint32_t first = tsn;
    for (uint32_t steps = 0;; steps++) {
        int j = frag_find(d, first);
        if (j < 0 || steps > d->nfrags)
            return tsn; /* its beginning is not here (yet) */
        if (d->frags[j].flags & IWARP_SCTP_DATA_B)
            break;
        first--;
    }
    const struct frag *b = &d->frags[frag_find(d, first)];
    size_t total = b->len;
    if (b->flags & IWARP_SCTP_DATA_E)
        return tsn; /* a whole message is never stored */
    for (uint32_t k = 1; k < d->nfrags; k++) {
        int j = frag_find(d, first + k);
        if (j < 0)
            return tsn; /* not all here yet */
        const struct frag *f = &d->frags[j];
        const char *why = NULL;
        if (f->flags & IWARP_SCTP_DATA_B)
            why = "starts a new message before the one from TSN";
        else if (f->sid != b->sid || ((f->flags ^ b->flags) & IWARP_SCTP_DATA_U))
            why = "differs in stream or U flag from the first fragment, TSN";
        else if (f->len > IWARP_SA_MAX_MSG - total)
            why = "makes too large a message (this tool's limit) of the one from TSN";
        if (why) {
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, b->sid}, side, 0, true, IWARP_MS_SCTP,
                "DATA fragment TSN %u %s %u (RFC 9260 §6.9); the fragments before it are "
                "dropped",
                first + k, why, first);
            frag_drop(d, first, first + k - 1u);
            return first + k;
        }
        total += f->len;
        if (!(f->flags & IWARP_SCTP_DATA_E))
            continue;
        uint8_t *buf = malloc(total);
        if (!buf) {
            iwarp_ddp_judge_reportf(to_finding, &(struct sa_at){a, b->sid}, side, 0, true,
                                    IWARP_MS_SCTP,
                                    "out of memory: the message from TSN %u is not decoded", first);
            frag_drop(d, first, first + k);
            return tsn;
        }
        size_t off = 0;
        for (uint32_t t = 0; t <= k; t++) {
            const struct frag *g = &d->frags[frag_find(d, first + t)];
            memcpy(buf + off, g->data, g->len);
            off += g->len;
        }
        struct msg m = {.side = side,
                        .sid = b->sid,
                        .ppid = b->ppid,
                        .tsn = first,
                        .fragments = k + 1u,
                        .unordered = b->flags & IWARP_SCTP_DATA_U,
                        .tag = tag,
                        .len = total,
                        .data = buf};
        frag_drop(d, first, first + k);
        a->st.reassembled++;
        deliver(a, &m);
        free(buf);
        return tsn;
    }
    return tsn;
}

/* A fragment with TSN tsn was stored: completes what it completes. A B fragment right after an
 * unfinished run also ends that run (reported by the walk from the run's start). */
static void frag_assemble(struct iwarp_sctp_assoc *a, unsigned side, uint32_t tsn, uint8_t flags,
                          uint64_t tag)
{
    struct adir *d = &a->d[side];
    if (flags & IWARP_SCTP_DATA_B) {
        int j = frag_find(d, tsn - 1u);
        if (j >= 0 && !(d->frags[j].flags & IWARP_SCTP_DATA_E))
            (void)frag_try(a, side, tsn - 1u, tag);
    }
    /* each broken run drops at least one fragment, so this ends */
    for (uint32_t t = tsn;;) {
        uint32_t next = frag_try(a, side, t, tag);
        if (next == t)
            break;
        t = next;
    }
}

/* Keeps a fragment until its message is whole. */
static void frag_store(struct iwarp_sctp_assoc *a, unsigned side, const struct iwarp_sctp_data *c,
                       uint64_t tag)
{
    struct adir *d = &a->d[side];
    if (!d->frags)
        d->frags = calloc(IWARP_SA_MAX_FRAGS, sizeof *d->frags);
    uint8_t *copy = NULL;
    if (d->frags && d->nfrags < IWARP_SA_MAX_FRAGS && c->data_len <= MAX_FRAG_BYTES - d->frag_bytes)
        copy = malloc(c->data_len);
    if (!copy) {
        if (!d->frags_full_reported)
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, c->sid}, side, 0, true, IWARP_MS_SCTP,
                "more fragmented DATA waiting than this tool keeps (%u chunks, %u octets): "
                "TSN %u and later fragments are not decoded",
                IWARP_SA_MAX_FRAGS, MAX_FRAG_BYTES, c->tsn);
        d->frags_full_reported = true;
        return;
    }
    memcpy(copy, c->data, c->data_len);
    d->frags[d->nfrags++] = (struct frag){.tsn = c->tsn,
                                          .ppid = c->ppid,
                                          .sid = c->sid,
                                          .flags = c->flags,
                                          .data = copy,
                                          .len = c->data_len};
    d->frag_bytes += c->data_len;
    frag_assemble(a, side, c->tsn, c->flags, tag);
}

static void data_chunk(struct iwarp_sctp_assoc *a, unsigned side, const struct iwarp_sctp_chunk *c,
                       uint64_t tag)
{
    struct iwarp_sctp_data dc;
    if (iwarp_sctp_data_decode(c, &dc) < 0) {
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, -1}, side, 0, true, IWARP_MS_SCTP,
            "DATA chunk of Length %u carries no user data (RFC 9260 §3.3.1, §6.2)", c->length);
        return;
    }
    a->st.data_chunks++;
    if (tsn_seen(&a->d[side].tsn, dc.tsn)) {
        a->st.dup_chunks++; /* RFC 9260 §6.2: a duplicate is acknowledged and dropped */
        return;
    }
    if ((dc.flags & (IWARP_SCTP_DATA_B | IWARP_SCTP_DATA_E)) ==
        (IWARP_SCTP_DATA_B | IWARP_SCTP_DATA_E)) {
        struct msg m = {.side = side,
                        .sid = dc.sid,
                        .ppid = dc.ppid,
                        .tsn = dc.tsn,
                        .fragments = 1,
                        .unordered = dc.flags & IWARP_SCTP_DATA_U,
                        .tag = tag,
                        .len = dc.data_len,
                        .data = dc.data};
        deliver(a, &m);
        return;
    }
    frag_store(a, side, &dc, tag);
}

static void init_chunk(struct iwarp_sctp_assoc *a, unsigned side, const struct iwarp_sctp_chunk *c,
                       uint64_t tag)
{
    struct adir *d = &a->d[side];
    struct iwarp_sctp_init init;
    int rc = iwarp_sctp_init_decode(c, &init);
    /* RFC 9260 §5.1: the INIT's sender starts the association, the INIT-ACK answers it */
    if (a->initiator < 0)
        a->initiator = c->type == IWARP_SCTP_CHUNK_INIT ? (int)side : (int)(side ^ 1u);
    d->init_seen = true;
    d->init_type = c->type;
    d->init_rc = rc;
    d->init = init;
    d->init_tag = tag;
    /* RFC 9260 §5.1: the sender's DATA starts at its Initial TSN */
    if (rc != IWARP_ERR_SHORT && !d->tsn.init) {
        d->tsn.init = true;
        d->tsn.base = init.initial_tsn;
    }
    struct iwarp_sa_pdu p = {.kind = IWARP_SA_PDU_INIT,
                             .side = side,
                             .from_initiator = from_init(a, side),
                             .tag = tag,
                             .chunk_type = c->type,
                             .init_rc = rc,
                             .init = rc == IWARP_ERR_SHORT ? NULL : &init,
                             .ssn = -1,
                             .fc = -1};
    a->ops->pdu(a->ctx, &p);
    if (rc < 0)
        iwarp_ddp_judge_reportf(to_finding, &(struct sa_at){a, -1}, side, 0, true, IWARP_MS_SCTP,
                                "%s chunk of Length %u: %s (RFC 9260 §3.3.2, §3.2.1)",
                                iwarp_sctp_chunk_name(c->type), c->length,
                                rc == IWARP_ERR_SHORT ? "shorter than its fixed fields"
                                                      : "a parameter is malformed");
}

void iwarp_sctp_assoc_packet(struct iwarp_sctp_assoc *a, unsigned side, const uint8_t *chunks,
                             size_t len, uint64_t tag)
{
    if (side > 1u || a->finished)
        return;
    a->st.packets++;
    a->cur_tag = tag;
    struct iwarp_sctp_chunk_iter it;
    struct iwarp_sctp_chunk c;
    iwarp_sctp_chunks_init(&it, chunks, len);
    int rc;
    while ((rc = iwarp_sctp_chunk_next(&it, &c)) > 0) {
        a->st.chunks++;
        a->cur_tag = tag;
        switch (c.type) {
        case IWARP_SCTP_CHUNK_DATA:
            data_chunk(a, side, &c, tag);
            break;
        case IWARP_SCTP_CHUNK_INIT:
        case IWARP_SCTP_CHUNK_INIT_ACK:
            init_chunk(a, side, &c, tag);
            break;
        case IWARP_SCTP_CHUNK_I_DATA:
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, -1}, side, 0, true, IWARP_MS_SCTP,
                "I-DATA chunk (RFC 8260): not part of RFC 5043's DDP adaptation, not decoded");
            break;
        default:
            break;
        }
    }
    if (rc < 0) {
        a->cur_tag = tag;
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, -1}, side, 0, true, IWARP_MS_SCTP,
            "chunk at offset %zu has Length %u but %zu octets are left in the packet (RFC 9260 "
            "§3.2: at least 4, within the packet); the rest of the packet is not decoded",
            c.offset, c.length, len - c.offset);
    }
}

/* ---- the end ---- */

static void adaptation_rules(struct iwarp_sctp_assoc *a)
{
    bool any = a->d[0].init_seen || a->d[1].init_seen;
    for (unsigned s = 0; s < 2; s++) {
        const struct adir *d = &a->d[s];
        a->cur_tag = d->init_tag;
        if (!d->init_seen) {
            if (any) /* the other side's chunk is in the capture, this one's is not */
                iwarp_ddp_judge_reportf(
                    to_finding, &(struct sa_at){a, -1}, s, 0, false, IWARP_MS_SCTP_ADAPTATION,
                    "this side's INIT/INIT-ACK is not in the capture: its Adaptation Layer "
                    "Indication (RFC 5043 §5.1) is not checked");
            continue;
        }
        const char *name = iwarp_sctp_chunk_name(d->init_type);
        if (d->init_rc == IWARP_ERR_SHORT)
            continue; /* reported as malformed */
        if (!d->init.has_adaptation)
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, -1}, s, 0, true, IWARP_MS_SCTP_ADAPTATION,
                "the %s carries no Adaptation Layer Indication (RFC 5043 §5.1, §11.1: DDP "
                "needs 0x00000001 in each side's INIT/INIT-ACK)",
                name);
        else if (d->init.adaptation != IWARP_SCTP_ADAPTATION_DDP)
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, -1}, s, 0, true, IWARP_MS_SCTP_ADAPTATION,
                "the %s's Adaptation Layer Indication is 0x%08x, not DDP's 0x00000001 (RFC "
                "5043 §5.1, §11.1: DDP procedures MUST NOT be performed)",
                name, d->init.adaptation);
    }
    a->cur_tag = 0;
    if (!any)
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, -1}, 0, 0, false, IWARP_MS_SCTP_ADAPTATION,
            "no INIT/INIT-ACK in the capture: the Adaptation Layer Indications (RFC 5043 "
            "§5.1) are not checked");
}

void iwarp_sctp_assoc_finish(struct iwarp_sctp_assoc *a)
{
    if (a->finished)
        return;
    a->finished = true;
    a->cur_tag = 0;
    for (unsigned s = 0; s < 2; s++) {
        struct adir *d = &a->d[s];
        if (d->nfrags == 0)
            continue;
        uint32_t lo = d->frags[0].tsn;
        for (uint32_t i = 1; i < d->nfrags; i++)
            if ((int32_t)(d->frags[i].tsn - lo) < 0)
                lo = d->frags[i].tsn;
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, d->frags[0].sid}, s, 0, true, IWARP_MS_SCTP,
            "%u DATA fragments (the first TSN %u) never became a whole message (RFC 9260 "
            "§6.9: a fragment is missing from the capture)",
            d->nfrags, lo);
        frag_drop(d, 0, UINT32_MAX);
    }
    for (uint32_t i = 0; i < a->nstreams; i++) {
        struct stream *st = a->streams[i];
        for (unsigned s = 0; s < 2; s++) {
            struct sdir *w = &st->d[s];
            a->cur_tag = 0;
            if (w->too_far > 1)
                iwarp_ddp_judge_reportf(
                    to_finding, &(struct sa_at){a, st->sid}, s, 0, true, IWARP_MS_SCTP_SSN,
                    "%llu chunks on stream %u were beyond the reorder window in all",
                    (unsigned long long)w->too_far, st->sid);
            uint16_t held = iwarp_sess_ssn_rx_held(&w->rx);
            if (held == 0)
                continue;
            iwarp_ddp_judge_reportf(
                to_finding, &(struct sa_at){a, st->sid}, s, 0, true, IWARP_MS_SCTP_SSN,
                "DDP-SSN %u on stream %u never arrived; %u later chunk%s waited for it (RFC "
                "5043 §6: no gaps in a session); decoded now",
                iwarp_sess_ssn_rx_expected(&w->rx), st->sid, held, held == 1 ? "" : "s");
            struct iwarp_sess_chunk c;
            while (iwarp_sess_ssn_rx_drain(&w->rx, &c)) {
                process(a, st, c.ptr);
                free(c.ptr);
            }
        }
    }
    a->cur_tag = 0;
    for (uint32_t i = 0; i < a->nstreams; i++)
        iwarp_ddp_judge_finish(&a->streams[i]->judge);
    if (!iwarp_sctp_assoc_is_ddp(a))
        return;
    adaptation_rules(a);
    if (a->other.seen && !a->other.reported) {
        a->cur_tag = a->other.tag;
        iwarp_ddp_judge_reportf(
            to_finding, &(struct sa_at){a, -1}, a->other.side, a->other.index, true,
            IWARP_MS_SCTP_PPID,
            "PPID %u on a DDP association (RFC 5043 §5.1: it carries only DDP Segment (16) "
            "and Stream Session Control (17) chunks)",
            a->other.ppid);
    }
}
