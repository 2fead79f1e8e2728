/* SPDX-License-Identifier: BSD-2-Clause */
/* MPA connection setup state machines (RFC 5044 §7.1, RFC 6581), sans-I/O. */
#include "mpa/mpa_negotiate.h"

#include <string.h>

#include "iwarp/errors.h"
#include "mpa/mpa_ird_ord.h"
#include "util/bytes.h"

#define NO_DEADLINE UINT64_MAX
#define NONE        IWARP_MPA_IRD_ORD_NONE

/* Octet 9 of the key tells Request ('q') from Reply ('p') (RFC 5044 §7.1.1). */
#define KEY_KIND_OFF 9u

static uint64_t deadline_after(uint64_t now_ns, uint64_t timeout_ns)
{
    if (timeout_ns == 0)
        return NO_DEADLINE;
    if (timeout_ns >= NO_DEADLINE - now_ns)
        return NO_DEADLINE - 1; /* saturate; NO_DEADLINE itself means "none" */
    return now_ns + timeout_ns;
}

/* Enters FAILED. ecode != 0 records the Terminate cause 2/0/ecode (RFC 5044 §8, RFC 6581 §8):
 * with ACT_TERMINATE it must be sent, with ACT_CLOSE it is only reported locally. Nothing is
 * left to send except a Reject queued for ACT_EXIT. */
static int fail(struct iwarp_mpa_neg *neg, int err, enum iwarp_mpa_action act, uint8_t ecode)
{
    neg->state = IWARP_MPA_NEG_FAILED;
    neg->deadline = NO_DEADLINE;
    neg->res.err = err;
    neg->res.action = act;
    neg->res.term_valid = ecode != 0;
    if (ecode != 0) {
        neg->res.term.layer = IWARP_TERM_LAYER_LLP;
        neg->res.term.etype = IWARP_TERM_LLP_ETYPE_MPA;
        neg->res.term.ecode = ecode;
    }
    /* ACT_CLOSE: nothing more may be sent (RFC 5044 §7.1.2, §8 code 4). A Reject (ACT_EXIT)
     * still goes out, and so does our Reply before the Terminate of ACT_TERMINATE: that
     * Terminate is an FPDU of full operation (RFC 6581 §8, §9.2), which begins only after the
     * Reply, so a Reply not yet written when the initiator's bad first FPDU arrived stays. */
    if (act == IWARP_MPA_ACT_CLOSE)
        neg->tx_len = neg->tx_off = 0;
    return err;
}

static bool one_rtr_bit(uint8_t v)
{
    return v == IWARP_MPA_RTR_SEND || v == IWARP_MPA_RTR_WRITE || v == IWARP_MPA_RTR_READ;
}

static int check_cfg(const struct iwarp_mpa_neg_cfg *c)
{
    if (c->role != IWARP_MPA_INITIATOR && c->role != IWARP_MPA_RESPONDER)
        return IWARP_ERR_INVAL;
    if (c->revision != IWARP_MPA_REV1 && c->revision != IWARP_MPA_REV2)
        return IWARP_ERR_INVAL;
    if ((c->rtr & ~IWARP_MPA_RTR_ALL) != 0 || c->pd_max_rx > IWARP_MPA_PD_MAX)
        return IWARP_ERR_INVAL;
    if (c->role == IWARP_MPA_RESPONDER) {
        /* RFC 6581 §9.2: "The responder MUST support at least one RTR indication option if it
         * supports Enhanced RDMA connection establishment." */
        if (c->revision == IWARP_MPA_REV2 && c->rtr == 0)
            return IWARP_ERR_INVAL;
        return 0;
    }
    /* RFC 6581 §6: enhanced features need Rev 2. */
    if (c->enhanced && c->revision < IWARP_MPA_REV2)
        return IWARP_ERR_INVAL;
    if (c->ird > IWARP_MPA_V2_IRD_ORD_MASK || c->ord > IWARP_MPA_V2_IRD_ORD_MASK)
        return IWARP_ERR_INVAL;
    if (c->peer2peer && (!c->enhanced || c->rtr == 0))
        return IWARP_ERR_INVAL;
    if (c->rtr_pref != 0 && (!one_rtr_bit(c->rtr_pref) || (c->rtr_pref & c->rtr) == 0))
        return IWARP_ERR_INVAL;
    size_t room = IWARP_MPA_PD_MAX - (c->enhanced ? IWARP_MPA_IRD_ORD_LEN : 0u);
    if (c->pd_len > room || (c->pd_len > 0 && !c->pd))
        return IWARP_ERR_INVAL;
    return 0;
}

void iwarp_mpa_neg_cfg_default(struct iwarp_mpa_neg_cfg *cfg, enum iwarp_mpa_role role)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->role = role;
    cfg->revision = IWARP_MPA_REV2;
    cfg->crc = true;
    cfg->enhanced = true;
    cfg->ird = 16;
    cfg->ord = 16;
    cfg->rtr = IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ;
    cfg->rtr_pref = IWARP_MPA_RTR_WRITE;
    /* RFC 5044 §7.1.2 rule 8. Both roles wait 10 s (siw's responder waits 5 s): TCP may take
     * 9 s to deliver a Request it had to send twice after a lost SYN (RFC 6298 §5.7: 3 s,
     * then 6 s), and the responder must not close a connection its initiator still waits on
     * (test_cm_late_request). */
    cfg->timeout_ns = 10000000000ull;
}

static void queue_frame(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_frame *f)
{
    /* Every caller validated the frame's fields, and tx_buf holds the largest frame. */
    iwarp_ssize n = iwarp_mpa_frame_encode(neg->tx_buf, sizeof neg->tx_buf, f);
    neg->tx_len = n > 0 ? (uint16_t)n : 0;
    neg->tx_off = 0;
}

int iwarp_mpa_neg_init(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_cfg *cfg,
                       uint64_t now_ns)
{
    if (!neg || !cfg)
        return IWARP_ERR_INVAL;
    int rc = check_cfg(cfg);
    if (rc != 0)
        return rc;
    memset(neg, 0, sizeof *neg);
    neg->cfg = *cfg;
    if (cfg->pd_len > 0)
        memcpy(neg->pd_buf, cfg->pd, cfg->pd_len);
    neg->cfg.pd = neg->pd_buf;
    if (neg->cfg.pd_max_rx == 0)
        neg->cfg.pd_max_rx = IWARP_MPA_PD_MAX;
    neg->res.peer_ird = neg->res.peer_ord = NONE;
    neg->res.ird = neg->res.ord = NONE;
    neg->deadline = deadline_after(now_ns, cfg->timeout_ns);

    if (cfg->role == IWARP_MPA_RESPONDER) {
        neg->state = IWARP_MPA_NEG_WAIT_REQUEST;
        return 0;
    }
    /* RFC 5044 §7.1.2 rule 1: the initiator sends a valid Request. RFC 6581 §10: no S when no
     * enhanced feature is wanted; §6: Rev "MAY be set to one" then, which also suits Rev-1-only
     * responders. RFC 6581 §9.2: with A=1, B/C/D set for every RTR type supported. */
    struct iwarp_mpa_frame f = {
        .reply = false,
        .m = cfg->markers,
        .c = cfg->crc,
        .s = cfg->enhanced,
        .rev = cfg->enhanced ? IWARP_MPA_REV2 : IWARP_MPA_REV1,
        .v2 = {.p2p = cfg->peer2peer,
               .rtr = cfg->peer2peer ? cfg->rtr : 0,
               .ird = cfg->ird,
               .ord = cfg->ord},
        .pd = neg->pd_buf,
        .pd_len = cfg->pd_len,
    };
    queue_frame(neg, &f);
    neg->state = IWARP_MPA_NEG_WAIT_REPLY;
    return 0;
}

size_t iwarp_mpa_neg_tx(struct iwarp_mpa_neg *neg, uint8_t *buf, size_t cap)
{
    size_t n = iwarp_mpa_neg_tx_pending(neg);
    if (n > cap)
        n = cap;
    if (n > 0 && buf) {
        memcpy(buf, neg->tx_buf + neg->tx_off, n);
        neg->tx_off = (uint16_t)(neg->tx_off + n);
        return n;
    }
    return 0;
}

size_t iwarp_mpa_neg_tx_pending(const struct iwarp_mpa_neg *neg)
{
    return (size_t)(neg->tx_len - neg->tx_off);
}

/* Copies what the peer's frame says into the result. */
static void note_peer(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_frame *f)
{
    struct iwarp_mpa_neg_result *r = &neg->res;
    r->peer_rev = f->rev;
    r->enhanced = f->s;
    r->peer_ird = f->s ? f->v2.ird : NONE;
    r->peer_ord = f->s ? f->v2.ord : NONE;
    r->peer_p2p = f->s && f->v2.p2p;
    r->peer_rtr = f->s ? f->v2.rtr : 0;
    r->peer_pd = f->pd;
    r->peer_pd_len = f->pd_len;
}

/* Initiator's RTR choice among the types both support (RFC 6581 §1.1: "at the initiator's
 * sole discretion"): the preference, else Write, Read, Send. */
static uint8_t pick_rtr(uint8_t both, uint8_t pref)
{
    static const uint8_t order[] = {IWARP_MPA_RTR_WRITE, IWARP_MPA_RTR_READ, IWARP_MPA_RTR_SEND};
    if (pref & both)
        return pref;
    for (size_t i = 0; i < sizeof order; i++)
        if (order[i] & both)
            return order[i];
    return 0;
}

/* Initiator: a complete frame arrived in WAIT_REPLY. */
static int on_reply(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_frame *f)
{
    const struct iwarp_mpa_neg_cfg *c = &neg->cfg;
    struct iwarp_mpa_neg_result *r = &neg->res;

    /* RFC 5044 §7.1.2 rule 8: a Request key here means Initiator/Initiator; §8 code 4. */
    if (!f->reply)
        return fail(neg, IWARP_ERR_MPA_INIT_INIT, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    note_peer(neg, f);
    /* RFC 5044 §7.1.1 Rev: close if we cannot interoperate with it (Rev 0 is the RDMA
     * Consortium protocol, App. C.2.2; above our revision is unknown). */
    if (f->rev < IWARP_MPA_REV1 || f->rev > c->revision)
        return fail(neg, IWARP_ERR_MPA_REV, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    /* RFC 6581 §10: an enhanced Request gets an enhanced Reply, an unenhanced one an
     * unenhanced Reply (siw as initiator also insists, docs/interop-siw.md). */
    if (f->s != c->enhanced)
        return fail(neg, IWARP_ERR_MPA_ENHANCED, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    if (f->r) {
        /* RFC 5044 §7.1.2 rule 3: rejected, exit MPA leaving TCP to the ULP; RFC 6581 §9.1: the
         * peer's IRD/ORD and private data go to the ULP (note_peer). A responder that cannot
         * insert markers has no other way to refuse them than a Reject (siw does exactly this,
         * docs/interop-siw.md), so a Reject of a Request with M=1 is reported as such. */
        int err = c->markers ? IWARP_ERR_MPA_MARKERS : IWARP_ERR_MPA_REJECTED;
        return fail(neg, err, IWARP_MPA_ACT_EXIT, 0);
    }
    r->rev = f->rev;
    /* RFC 5044 §7.1.1 C: "When this bit is '1' in either the MPA Request Frame or MPA Reply
     * Frame, CRCs MUST be generated and checked by both endpoints." */
    r->crc = c->crc || f->c;
    if (c->crc_required && !f->c)
        return fail(neg, IWARP_ERR_MPA_CRC_REQUIRED, IWARP_MPA_ACT_CLOSE, 0);
    /* RFC 5044 §7.1.1 M: ours asks the responder for markers, the Reply's asks us; RFC 5044
     * §4.3: we MUST insert them when asked. */
    r->markers_rx = c->markers;
    r->markers_tx = f->m;

    if (f->s) {
        /* RFC 6581 §9.1 (shared with DDP over SCTP): ORD at most the responder IRD; a
         * responder ORD above our IRD is "insufficient resources": TERM 2/0/6. */
        if (iwarp_ird_ord_complete(c->ird, c->ord, f->v2.ird, f->v2.ord, &r->ird, &r->ord) != 0)
            return fail(neg, IWARP_ERR_MPA_IRD_ORD, IWARP_MPA_ACT_TERMINATE, IWARP_TERM_MPA_IRD);
        if (f->v2.p2p != c->peer2peer) {
            /* RFC 6581 §9.2: the responder MUST echo A. A=0 to our A=1 leaves no RTR option
             * (TERM 2/0/7, as iw_cxgb4 answers such a siw); A=1 to our A=0 is a local error
             * without a special code (RFC 6581 §9.3: TERM 2/0/5). */
            uint8_t ecode = c->peer2peer ? IWARP_TERM_MPA_NO_RTR : IWARP_TERM_MPA_CATASTROPHIC;
            return fail(neg, IWARP_ERR_MPA_P2P, IWARP_MPA_ACT_TERMINATE, ecode);
        }
        if (c->peer2peer) {
            /* RFC 6581 §9.2: generate one of the negotiated RTR indications; a zero-length
             * Read needs a responder IRD of at least 1 (RFC 6581 §9.1). */
            uint8_t both = (uint8_t)(c->rtr & f->v2.rtr);
            if (f->v2.ird == 0)
                both = (uint8_t)(both & ~IWARP_MPA_RTR_READ);
            r->rtr = pick_rtr(both, c->rtr_pref);
            /* RFC 6581 §9.2: none usable -> TERM 2/0/0x07. */
            if (r->rtr == 0)
                return fail(neg, IWARP_ERR_MPA_RTR, IWARP_MPA_ACT_TERMINATE, IWARP_TERM_MPA_NO_RTR);
            r->p2p = true;
        }
    }
    /* RFC 5044 §7.1.2 rule 4: the responder waits for our first FPDU, so we send first; with
     * an RTR it is the RTR (RFC 6581 §5). */
    r->local_sends_first = true;
    neg->deadline = NO_DEADLINE;
    neg->state = IWARP_MPA_NEG_SEND_FIRST;
    return 0;
}

/* Responder: the RTR types we set in the Reply (RFC 6581 §9.2, shared with SCTP). */
static uint8_t reply_rtr_set(const struct iwarp_mpa_neg *neg)
{
    return iwarp_rtr_reply_set(neg->res.peer_rtr, neg->cfg.rtr);
}

static int check_answer(const struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_answer *a)
{
    size_t room = IWARP_MPA_PD_MAX - (neg->req_s ? IWARP_MPA_IRD_ORD_LEN : 0u);
    if (a->ird > IWARP_MPA_V2_IRD_ORD_MASK || a->ord > IWARP_MPA_V2_IRD_ORD_MASK)
        return IWARP_ERR_INVAL;
    if (a->pd_len > room || (a->pd_len > 0 && !a->pd))
        return IWARP_ERR_INVAL;
    return 0;
}

/* Responder: queues a Reply (reject = false) or Reject with ans (which may be NULL). */
static void queue_reply(struct iwarp_mpa_neg *neg, bool reject, uint16_t ird, uint16_t ord,
                        const struct iwarp_mpa_neg_answer *ans)
{
    struct iwarp_mpa_frame f = {
        .reply = true,
        /* RFC 5044 §7.1.1 M: ours asks the initiator for markers; meaningless in a Reject. */
        .m = !reject && neg->cfg.markers,
        /* RFC 5044 §7.1.1 C: echoing the initiator's C=1 changes nothing on the wire rules and
         * confirms CRC to initiators that insist (siw mpa_crc_required). */
        .c = neg->cfg.crc || neg->req_c,
        .r = reject,
        /* RFC 6581 §10: enhanced Reply to an enhanced Request, unenhanced otherwise; the Rev of
         * the Request is answered as is (RFC 6581 §6: Rev 1 Requests MUST be accepted). */
        .s = neg->req_s,
        .rev = neg->res.peer_rev,
        /* RFC 6581 §9.2: "the responder MUST set Control Flag A to 1" iff it was 1. */
        .v2 = {.p2p = neg->req_p2p,
               .rtr = neg->req_p2p ? reply_rtr_set(neg) : 0,
               .ird = ird,
               .ord = ord},
        .pd = ans ? ans->pd : NULL,
        .pd_len = ans ? ans->pd_len : 0,
    };
    queue_frame(neg, &f);
}

/* Responder: a complete frame arrived in WAIT_REQUEST. */
static int on_request(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_frame *f)
{
    const struct iwarp_mpa_neg_cfg *c = &neg->cfg;
    struct iwarp_mpa_neg_result *r = &neg->res;

    /* RFC 5044 §7.1.1 Key: responder receivers MUST check for the Request key; §8 code 4. */
    if (f->reply)
        return fail(neg, IWARP_ERR_MPA_KEY, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    note_peer(neg, f);
    /* RFC 6581 §6: Rev 1 Requests MUST be accepted; RFC 5044 §7.1.1: close on a revision we
     * cannot interoperate with (Rev 0, App. C.2.1; above ours; a Rev 2 Request to a Rev 1
     * responder, RFC 6581 §10 "treats the enhanced request as incorrectly formatted"). */
    if (f->rev < IWARP_MPA_REV1 || f->rev > c->revision)
        return fail(neg, IWARP_ERR_MPA_REV, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    neg->req_s = f->s;
    neg->req_p2p = f->s && f->v2.p2p;
    neg->req_m = f->m;
    neg->req_c = f->c;
    r->rev = f->rev;
    /* RFC 5044 §7.1.1 C: on if either side sets it. */
    r->crc = c->crc || f->c;
    /* RFC 5044 §7.1.1 M / §4.3: we MUST insert markers when asked. */
    r->markers_tx = f->m;
    r->markers_rx = c->markers;
    r->p2p = neg->req_p2p;
    r->rtr = neg->req_p2p ? reply_rtr_set(neg) : 0;
    neg->deadline = NO_DEADLINE; /* the ULP's decision is local: no timer */
    if (c->crc_required && !f->c) {
        /* Local policy: the Request is acceptable MPA but not to us; RFC 5044 §7.1.2 rule 2:
         * reply with R=1 and exit MPA. */
        queue_reply(neg, true, NONE, NONE, NULL);
        return fail(neg, IWARP_ERR_MPA_CRC_REQUIRED, IWARP_MPA_ACT_EXIT, 0);
    }
    neg->state = IWARP_MPA_NEG_REQUEST;
    return 0;
}

/* Bytes of the current frame still missing (the header first, then PD_Length octets). */
static size_t frame_need(const struct iwarp_mpa_neg *neg)
{
    if (neg->rx_have < IWARP_MPA_HDR_LEN)
        return IWARP_MPA_HDR_LEN - neg->rx_have;
    size_t total = IWARP_MPA_HDR_LEN + (size_t)iwarp_load_be16(neg->rx_buf + 18);
    return total - neg->rx_have;
}

/* Checks a partial frame as early as possible: key kind against our role, the local PD limit.
 * Returns 0 or the failure. */
static int check_partial(struct iwarp_mpa_neg *neg)
{
    bool initiator = neg->cfg.role == IWARP_MPA_INITIATOR;
    if (neg->rx_have > KEY_KIND_OFF) {
        bool is_req = neg->rx_buf[KEY_KIND_OFF] == (uint8_t)IWARP_MPA_KEY_REQ[KEY_KIND_OFF];
        /* RFC 5044 §7.1.2 rule 8 (Initiator/Initiator) and rule 5 (wrong key). */
        if (initiator && is_req)
            return fail(neg, IWARP_ERR_MPA_INIT_INIT, IWARP_MPA_ACT_CLOSE,
                        IWARP_TERM_MPA_BAD_FRAME);
        if (!initiator && !is_req)
            return fail(neg, IWARP_ERR_MPA_KEY, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    }
    /* RFC 5044 §7.1.2 rule 9: the Private Data must fit the receiving buffer, else the frame
     * is improperly formatted. */
    if (neg->rx_have >= IWARP_MPA_HDR_LEN && iwarp_load_be16(neg->rx_buf + 18) > neg->cfg.pd_max_rx)
        return fail(neg, IWARP_ERR_MPA_PD_LEN, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    return 0;
}

static bool takes_frame(enum iwarp_mpa_neg_state s)
{
    return s == IWARP_MPA_NEG_WAIT_REPLY || s == IWARP_MPA_NEG_WAIT_REQUEST;
}

/* States in which the peer must be silent: the responder after the Request until its Reply
 * (RFC 5044 §7.1.2 rule 3: the initiator enters full operation only on the Reply; siw drops
 * such a peer, "peer sent extra data"), and the initiator after the Reply until it sent its
 * first FPDU (rule 4). Either way the bytes also contradict the frame's PD_Length
 * (RFC 5044 §7.1.1), hence 2/0/0x04. */
static bool must_be_silent(enum iwarp_mpa_neg_state s)
{
    return s == IWARP_MPA_NEG_REQUEST || s == IWARP_MPA_NEG_SEND_FIRST;
}

iwarp_ssize iwarp_mpa_neg_rx(struct iwarp_mpa_neg *neg, const uint8_t *data, size_t len,
                             uint64_t now_ns)
{
    if (!neg || (!data && len > 0))
        return IWARP_ERR_INVAL;
    if (neg->state == IWARP_MPA_NEG_FAILED)
        return neg->res.err;
    if (!takes_frame(neg->state) && !must_be_silent(neg->state))
        return IWARP_ERR_STATE;
    int rc = iwarp_mpa_neg_handle_timeout(neg, now_ns);
    if (rc != 0)
        return rc;

    size_t used = 0;
    while (used < len && takes_frame(neg->state)) {
        size_t take = frame_need(neg);
        if (take > len - used)
            take = len - used;
        memcpy(neg->rx_buf + neg->rx_have, data + used, take);
        neg->rx_have = (uint16_t)(neg->rx_have + take);
        used += take;
        neg->res.rx_consumed += take;

        struct iwarp_mpa_frame f;
        iwarp_ssize n = iwarp_mpa_frame_decode(neg->rx_buf, neg->rx_have, &f);
        if (n == IWARP_ERR_SHORT) {
            rc = check_partial(neg);
            if (rc != 0)
                return rc;
            continue;
        }
        if (n < 0) /* RFC 5044 §7.1.2 rules 2, 3, 5, 9; §8 code 4: close at once */
            return fail(neg, (int)n, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
        rc = neg->cfg.role == IWARP_MPA_INITIATOR ? on_reply(neg, &f) : on_request(neg, &f);
        if (rc != 0)
            return rc;
    }
    if (used < len && must_be_silent(neg->state))
        return fail(neg, IWARP_ERR_MPA_EARLY_DATA, IWARP_MPA_ACT_CLOSE, IWARP_TERM_MPA_BAD_FRAME);
    return (iwarp_ssize)used;
}

/* Responder: whether accept(neg, ans) may go: 0, or the error it returns. */
static int accept_check(const struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_answer *ans)
{
    if (!neg || !ans)
        return IWARP_ERR_INVAL;
    if (neg->state != IWARP_MPA_NEG_REQUEST)
        return IWARP_ERR_STATE;
    return check_answer(neg, ans);
}

/* Responder: what accepting with ans (checked) negotiates. r holds the result of the Request
 * and gets the answer's settings; *ird_sent, *ord_sent: the IRD/ORD the Reply's word carries. */
static void accept_outcome(const struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_answer *ans,
                           struct iwarp_mpa_neg_result *r, uint16_t *ird_sent, uint16_t *ord_sent)
{
    /* The ULP's per-connection choices (RFC 5044 §7.1.1): C=1 turns CRC on for both
     * directions; M=1 asks the initiator to insert markers in what we receive. */
    r->crc = r->crc || ans->crc;
    r->markers_rx = r->markers_rx || ans->markers;
    *ird_sent = *ord_sent = NONE;
    if (neg->req_s) {
        /* RFC 6581 §9.1 (shared with DDP over SCTP): 0x3FFF handling, ORD at most the
         * initiator IRD, IRD 0 -> 1 for a Read RTR. */
        struct iwarp_ird_ord_answer a;
        iwarp_ird_ord_respond(r->peer_ird, r->peer_ord, ans->ird, ans->ord,
                              (r->rtr & IWARP_MPA_RTR_READ) != 0, &a);
        r->ird = a.ird;
        r->ord = a.ord;
        *ird_sent = a.ird_sent;
        *ord_sent = a.ord_sent;
    }
}

int iwarp_mpa_neg_accept_outcome(const struct iwarp_mpa_neg *neg,
                                 const struct iwarp_mpa_neg_answer *ans,
                                 struct iwarp_mpa_neg_result *out)
{
    int rc = out ? accept_check(neg, ans) : IWARP_ERR_INVAL;
    if (rc != 0)
        return rc;
    *out = neg->res;
    uint16_t ird_sent, ord_sent;
    accept_outcome(neg, ans, out, &ird_sent, &ord_sent);
    return 0;
}

int iwarp_mpa_neg_accept(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_answer *ans,
                         uint64_t now_ns)
{
    int rc = accept_check(neg, ans);
    if (rc != 0)
        return rc;
    struct iwarp_mpa_neg_result *r = &neg->res;
    uint16_t ird, ord; /* sent in the word */
    accept_outcome(neg, ans, r, &ird, &ord);
    /* the Reply's C and M bits (queue_reply) */
    neg->cfg.crc = neg->cfg.crc || ans->crc;
    neg->cfg.markers = neg->cfg.markers || ans->markers;
    queue_reply(neg, false, ird, ord, ans);
    /* RFC 5044 §7.1.2 rule 4: nothing from us before the initiator's first FPDU; RFC 6581
     * §9.2: with an RTR we are established only when it arrives, under the startup timer
     * (RFC 5044 §7.1.2 rule 10). Without RTR the first FPDU is the ULP's: no MPA timer. */
    r->local_sends_first = false;
    neg->deadline = r->p2p ? deadline_after(now_ns, neg->cfg.timeout_ns) : NO_DEADLINE;
    neg->state = IWARP_MPA_NEG_WAIT_FIRST_FPDU;
    return 0;
}

int iwarp_mpa_neg_reject(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_answer *ans)
{
    if (!neg)
        return IWARP_ERR_INVAL;
    if (neg->state != IWARP_MPA_NEG_REQUEST)
        return IWARP_ERR_STATE;
    if (ans) {
        int rc = check_answer(neg, ans);
        if (rc != 0)
            return rc;
    }
    /* RFC 5044 §7.1.2 rule 2: Reply with R=1, optional private data, exit MPA leaving TCP
     * open. RFC 6581 §9.1: the Reject may name the ORD the responder needs. */
    queue_reply(neg, true, ans ? ans->ird : NONE, ans ? ans->ord : NONE, ans);
    neg->state = IWARP_MPA_NEG_REJECTED;
    neg->res.action = IWARP_MPA_ACT_EXIT;
    return 0;
}

int iwarp_mpa_neg_first_sent(struct iwarp_mpa_neg *neg)
{
    if (!neg)
        return IWARP_ERR_INVAL;
    if (neg->state != IWARP_MPA_NEG_SEND_FIRST)
        return IWARP_ERR_STATE;
    neg->state = IWARP_MPA_NEG_ESTABLISHED;
    return 0;
}

/* The RTR type a zero-length FPDU with this RDMAP opcode indicates (RFC 6581 §9.2). */
static uint8_t rtr_of_opcode(uint8_t opcode)
{
    switch (opcode) {
    case IWARP_RDMAP_OP_SEND:
        return IWARP_MPA_RTR_SEND;
    case IWARP_RDMAP_OP_WRITE:
        return IWARP_MPA_RTR_WRITE;
    case IWARP_RDMAP_OP_READ_REQ:
        return IWARP_MPA_RTR_READ;
    default:
        return 0;
    }
}

int iwarp_mpa_neg_first_fpdu(struct iwarp_mpa_neg *neg, uint8_t opcode, uint32_t len,
                             uint64_t now_ns)
{
    if (!neg || opcode > IWARP_RDMAP_MASK_OPCODE)
        return IWARP_ERR_INVAL;
    if (neg->state != IWARP_MPA_NEG_WAIT_FIRST_FPDU)
        return IWARP_ERR_STATE;
    int rc = iwarp_mpa_neg_handle_timeout(neg, now_ns);
    if (rc != 0)
        return rc;
    if (opcode == IWARP_RDMAP_OP_TERMINATE)
        return fail(neg, IWARP_ERR_MPA_PEER_TERM, IWARP_MPA_ACT_CLOSE, 0);
    if (neg->res.p2p) {
        /* RFC 6581 §9.2: the initiator MUST generate one of the negotiated RTR indications,
         * a zero-length Send, Write or Read; RFC 6581 §5: nothing may precede it. */
        uint8_t t = rtr_of_opcode(opcode);
        if (len != 0 || (t & neg->res.rtr) == 0)
            return fail(neg, IWARP_ERR_MPA_RTR_MISMATCH, IWARP_MPA_ACT_TERMINATE,
                        IWARP_TERM_MPA_NO_RTR);
    }
    neg->deadline = NO_DEADLINE;
    neg->state = IWARP_MPA_NEG_ESTABLISHED;
    return 0;
}

uint64_t iwarp_mpa_neg_next_timeout(const struct iwarp_mpa_neg *neg)
{
    return neg->deadline;
}

int iwarp_mpa_neg_handle_timeout(struct iwarp_mpa_neg *neg, uint64_t now_ns)
{
    if (neg->deadline == NO_DEADLINE || now_ns < neg->deadline)
        return 0;
    /* RFC 5044 §7.1.2 rules 8, 10: startup frames (and the RTR) are awaited with a timeout. */
    return fail(neg, IWARP_ERR_TIMEDOUT, IWARP_MPA_ACT_CLOSE, 0);
}

enum iwarp_mpa_neg_state iwarp_mpa_neg_state(const struct iwarp_mpa_neg *neg)
{
    return neg->state;
}

const struct iwarp_mpa_neg_result *iwarp_mpa_neg_result(const struct iwarp_mpa_neg *neg)
{
    return &neg->res;
}
