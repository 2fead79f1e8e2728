/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP Stream Session control (RFC 5043 §5.2.3, §6; RFC 6581 §7, §9), sans-I/O. */
#include "session/session_ctl.h"

#include <string.h>

#include "iwarp/errors.h"
#include "mpa/mpa_ird_ord.h"

#define NONE IWARP_MPA_IRD_ORD_NONE

static bool over(enum iwarp_sess_state s)
{
    return s == IWARP_SESS_REJECTED || s == IWARP_SESS_TERMINATED;
}

/* The pending count covers exactly the passive machines in PENDING (RFC 5043 §6.4). */
static void leave_pending(struct iwarp_sess_ctl *ctl)
{
    if (ctl->in_pending) {
        ctl->in_pending = false;
        if (ctl->cfg.pending->count > 0)
            ctl->cfg.pending->count--;
    }
}

static void end(struct iwarp_sess_ctl *ctl, enum iwarp_sess_state st, int err, uint32_t ev)
{
    leave_pending(ctl);
    ctl->state = st;
    ctl->res.err = err;
    ctl->events |= ev;
}

/* Ends the session by our side because of what the peer sent (RFC 5043 §6.1: "the DDP Stream
 * Session MUST be terminated"). A message of ours not handed out yet is replaced by the
 * Terminate, which is then the reply (§6.4 form). answer = false when the peer's chunk was a
 * Terminate: it already sent its final chunk (§6.2), and answering could only echo back. */
static int fail(struct iwarp_sess_ctl *ctl, int err, bool answer)
{
    end(ctl, IWARP_SESS_TERMINATED, err, IWARP_SESS_EV_TERMINATED);
    ctl->tx_fc = 0;
    if (answer && !ctl->res.term_sent)
        ctl->tx_term = true;
    return err;
}

/* fail() for the peer's chunk with function code fc: a Terminate, even an illegal one, was the
 * peer's final chunk (§6.2), so it is noted and not answered. */
static int fail_on(struct iwarp_sess_ctl *ctl, int err, uint16_t fc)
{
    bool term = fc == IWARP_SCTP_FC_TERMINATE;
    if (term)
        ctl->res.term_rcvd = true;
    return fail(ctl, err, !term);
}

static int check_pd(const uint8_t *pd, uint16_t len, bool word)
{
    /* RFC 5043 §5.2.3, RFC 6581 §7: <= 512 octets including the 4-octet word. */
    size_t room = IWARP_SCTP_PD_MAX - (word ? IWARP_MPA_IRD_ORD_LEN : 0u);
    if (len > room || (len > 0 && !pd))
        return IWARP_ERR_INVAL;
    return 0;
}

void iwarp_sess_cfg_default(struct iwarp_sess_cfg *cfg, enum iwarp_sess_role role)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->role = role;
    cfg->enhanced = true;
    cfg->ird = 16;
    cfg->ord = 16;
    cfg->rtr = IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ;
}

static int check_cfg(const struct iwarp_sess_cfg *c)
{
    if (c->role != IWARP_SESS_ACTIVE && c->role != IWARP_SESS_PASSIVE)
        return IWARP_ERR_INVAL;
    if (c->ird > IWARP_MPA_V2_IRD_ORD_MASK || c->ord > IWARP_MPA_V2_IRD_ORD_MASK)
        return IWARP_ERR_INVAL;
    if ((c->rtr & ~IWARP_MPA_RTR_ALL) != 0)
        return IWARP_ERR_INVAL;
    if (c->role == IWARP_SESS_PASSIVE) {
        /* RFC 5043 §6.4: a finite limit needs a counter; RFC 6581 §9.2: an enhanced responder
         * "MUST support at least one RTR indication option". */
        if (!c->pending || (c->enhanced && c->rtr == 0))
            return IWARP_ERR_INVAL;
        return 0;
    }
    return check_pd(c->pd, c->pd_len, c->enhanced);
}

int iwarp_sess_ctl_init(struct iwarp_sess_ctl *ctl, const struct iwarp_sess_cfg *cfg)
{
    if (!ctl || !cfg)
        return IWARP_ERR_INVAL;
    int rc = check_cfg(cfg);
    if (rc != 0)
        return rc;
    memset(ctl, 0, sizeof *ctl);
    ctl->cfg = *cfg;
    ctl->cfg.pd = NULL;
    ctl->cfg.pd_len = 0;
    ctl->res.peer_ird = ctl->res.peer_ord = NONE;
    ctl->res.ird = ctl->res.ord = NONE;
    ctl->res.peer_pd = ctl->peer_pd;
    if (cfg->role == IWARP_SESS_PASSIVE) {
        ctl->state = IWARP_SESS_LISTEN;
        return 0;
    }
    /* RFC 5043 §6.2: "Active side sends a DDP Stream Session Initiate message"; RFC 6581 §7,
     * §10: the enhanced code only when enhanced features are wanted; A=0 since no RTR is needed
     * over SCTP (RFC 6581 §4.4.1). */
    ctl->tx_fc = cfg->enhanced ? IWARP_SCTP_FC_ENH_INITIATE : IWARP_SCTP_FC_INITIATE;
    ctl->tx_word = (struct iwarp_mpa_ird_ord){.ird = cfg->ird, .ord = cfg->ord};
    ctl->tx_pd_len = cfg->pd_len;
    if (cfg->pd_len > 0)
        memcpy(ctl->tx_pd, cfg->pd, cfg->pd_len);
    ctl->state = IWARP_SESS_INITIATED;
    return 0;
}

/* Keeps what the peer's Initiate/Accept/Reject says for the ULP (RFC 5043 §5.2.3: "any supplied
 * Private Data MUST be available for the ULP"; RFC 6581 §9.1: the peer's IRD/ORD too). */
static void note_peer(struct iwarp_sess_ctl *ctl, const struct iwarp_sctp_ctl *c)
{
    struct iwarp_sess_result *r = &ctl->res;
    bool word = iwarp_sctp_fc_has_ird_ord(c->fc);
    r->enhanced = word;
    r->peer_ird = word ? c->ird_ord.ird : NONE;
    r->peer_ord = word ? c->ird_ord.ord : NONE;
    r->peer_p2p = word && c->ird_ord.p2p;
    r->peer_rtr = word ? c->ird_ord.rtr : 0;
    memcpy(ctl->peer_pd, c->pd, c->pd_len);
    r->peer_pd_len = c->pd_len;
}

/* Function codes no state takes: unknown ones never pass the decoder; the experimental code is
 * for "additional sequences" that "MUST NOT" be used unless the ULP asked (§6.5). */
static int other_code(struct iwarp_sess_ctl *ctl, uint16_t fc)
{
    if (fc == IWARP_SCTP_FC_EXPERIMENTAL)
        return fail(ctl, IWARP_ERR_SESSION_FUNCTION, true);
    return fail_on(ctl, IWARP_ERR_SESSION_SEQUENCE, fc);
}

/* Passive, LISTEN. */
static int on_listen(struct iwarp_sess_ctl *ctl, const struct iwarp_sctp_ctl *c)
{
    if (c->fc != IWARP_SCTP_FC_INITIATE && c->fc != IWARP_SCTP_FC_ENH_INITIATE)
        return other_code(ctl, c->fc); /* §6.2-§6.4: every session starts with an Initiate */
    /* RFC 6581 §10: a responder without the enhancement treats the enhanced request as
     * incorrectly formatted: for SCTP, a function code it does not know. */
    if (c->fc == IWARP_SCTP_FC_ENH_INITIATE && !ctl->cfg.enhanced)
        return fail(ctl, IWARP_ERR_SESSION_FUNCTION, true);
    note_peer(ctl, c);
    struct iwarp_sess_pending *pend = ctl->cfg.pending;
    /* RFC 5043 §5.2.3, §6.4: past the limit of Initiates pending a ULP decision, "the passive
     * side MUST respond to the Initiate message with a DDP Stream Terminate Message" (RFC 6581
     * §7: the same for the enhanced codes). */
    if (pend->count >= pend->limit)
        return fail(ctl, IWARP_ERR_SESSION_PENDING, true);
    pend->count++;
    ctl->in_pending = true;
    ctl->state = IWARP_SESS_PENDING;
    ctl->events |= IWARP_SESS_EV_REQUEST;
    return 0;
}

/* Active: an Enhanced Accept to our Enhanced Initiate (RFC 6581 §9.1, §9.2). */
static int on_enh_accept(struct iwarp_sess_ctl *ctl, const struct iwarp_sctp_ctl *c)
{
    struct iwarp_sess_result *r = &ctl->res;
    struct iwarp_term_cause cause = {.layer = IWARP_TERM_LAYER_LLP,
                                     .etype = IWARP_TERM_LLP_ETYPE_MPA};
    int err = 0;
    /* RFC 6581 §9.2: "The responder MUST set Control Flag A to 0 if Control Flag A is 0 in the
     * request": a local error without a special code (RFC 6581 §9.3: TERM 2/0/5). */
    if (c->ird_ord.p2p) {
        err = IWARP_ERR_MPA_P2P;
        cause.ecode = IWARP_TERM_MPA_CATASTROPHIC;
    } else {
        /* RFC 6581 §9.1, shared with MPA: insufficient IRD -> TERM 2/0/6. */
        err = iwarp_ird_ord_complete(ctl->cfg.ird, ctl->cfg.ord, c->ird_ord.ird, c->ird_ord.ord,
                                     &r->ird, &r->ord);
        cause.ecode = IWARP_TERM_MPA_IRD;
    }
    if (err != 0) {
        r->ird = r->ord = NONE;
        r->term_valid = true;
        r->term = cause;
        return fail(ctl, err, true);
    }
    ctl->state = IWARP_SESS_ESTABLISHED;
    ctl->events |= IWARP_SESS_EV_ESTABLISHED;
    return 0;
}

/* Active, INITIATED. */
static int on_initiated(struct iwarp_sess_ctl *ctl, const struct iwarp_sctp_ctl *c)
{
    bool enh = ctl->cfg.enhanced;
    switch (c->fc) {
    case IWARP_SCTP_FC_ACCEPT:
    case IWARP_SCTP_FC_ENH_ACCEPT:
        /* RFC 6581 §7, §10: the enhanced sequences use the enhanced codes throughout. */
        if ((c->fc == IWARP_SCTP_FC_ENH_ACCEPT) != enh)
            return fail(ctl, IWARP_ERR_SESSION_SEQUENCE, true);
        note_peer(ctl, c);
        if (enh)
            return on_enh_accept(ctl, c);
        ctl->state = IWARP_SESS_ESTABLISHED; /* §6.2 */
        ctl->events |= IWARP_SESS_EV_ESTABLISHED;
        return 0;
    case IWARP_SCTP_FC_REJECT:
    case IWARP_SCTP_FC_ENH_REJECT:
        /* §6.3; RFC 6581 §7: Enhanced Reject answers only an Enhanced Initiate. A plain Reject
         * may answer one too: the ULP refused whatever the enhancement. */
        if (c->fc == IWARP_SCTP_FC_ENH_REJECT && !enh)
            return fail(ctl, IWARP_ERR_SESSION_SEQUENCE, true);
        note_peer(ctl, c);
        ctl->res.enhanced = enh;
        ctl->res.enhanced_reject = c->fc == IWARP_SCTP_FC_ENH_REJECT;
        end(ctl, IWARP_SESS_REJECTED, IWARP_ERR_SESSION_REJECTED, IWARP_SESS_EV_REJECTED);
        return 0;
    case IWARP_SCTP_FC_TERMINATE:
        /* §6.4: the passive side's non-ULP reject. */
        ctl->res.term_rcvd = true;
        end(ctl, IWARP_SESS_TERMINATED, IWARP_ERR_SESSION_TERMINATED, IWARP_SESS_EV_TERMINATED);
        return 0;
    default:
        return other_code(ctl, c->fc); /* an Initiate here: both sides active */
    }
}

int iwarp_sess_ctl_rx_ctl(struct iwarp_sess_ctl *ctl, const uint8_t *p, size_t len)
{
    if (!ctl || (!p && len > 0))
        return IWARP_ERR_INVAL;
    struct iwarp_sctp_ctl c;
    iwarp_ssize n = iwarp_sctp_ctl_decode(p, len, &c);
    if (over(ctl->state)) {
        /* §6.2: the peer's final chunk may still come after ours. */
        if (n >= 0 && c.fc == IWARP_SCTP_FC_TERMINATE && !ctl->res.term_rcvd) {
            ctl->res.term_rcvd = true;
            return 0;
        }
        return IWARP_ERR_STATE;
    }
    if (n < 0) /* §5.2.3 format rules broken: the session cannot go on */
        return fail(ctl, (int)n, true);
    /* §6.1: chunks are considered in DDP-SSN order, from 0 at the session's start. */
    if (c.ssn != ctl->rx_next)
        return fail_on(ctl, IWARP_ERR_SCTP_SSN, c.fc);
    ctl->rx_next++;
    switch (ctl->state) {
    case IWARP_SESS_LISTEN:
        return on_listen(ctl, &c);
    case IWARP_SESS_INITIATED:
        return on_initiated(ctl, &c);
    default: /* PENDING, ESTABLISHED */
        if (c.fc == IWARP_SCTP_FC_TERMINATE) {
            /* §6.2: the final chunk of the peer's side; in PENDING the active side withdrew. */
            ctl->res.term_rcvd = true;
            end(ctl, IWARP_SESS_TERMINATED, IWARP_ERR_SESSION_TERMINATED, IWARP_SESS_EV_TERMINATED);
            return 0;
        }
        /* §6.6 / §6.2: one Initiate and one answer per session; nothing else but Terminate. */
        return other_code(ctl, c.fc);
    }
}

int iwarp_sess_ctl_rx_seg(struct iwarp_sess_ctl *ctl, uint16_t ssn)
{
    if (!ctl)
        return IWARP_ERR_INVAL;
    if (over(ctl->state))
        return IWARP_ERR_STATE;
    if (ssn != ctl->rx_next)
        return fail(ctl, IWARP_ERR_SCTP_SSN, true); /* §6.1 */
    ctl->rx_next++;
    /* §6.2: segments follow the Accept; §6.6: the active side sends none that could arrive
     * before its Initiate; RFC 6581 §4.4.1: once accepted, either side may send first. */
    if (ctl->state != IWARP_SESS_ESTABLISHED)
        return fail(ctl, IWARP_ERR_SESSION_SEQUENCE, true);
    return 0;
}

int iwarp_sess_ctl_accept(struct iwarp_sess_ctl *ctl, const struct iwarp_sess_answer *ans)
{
    if (!ctl || !ans)
        return IWARP_ERR_INVAL;
    if (ctl->state != IWARP_SESS_PENDING)
        return IWARP_ERR_STATE;
    struct iwarp_sess_result *r = &ctl->res;
    if (ans->ird > IWARP_MPA_V2_IRD_ORD_MASK || ans->ord > IWARP_MPA_V2_IRD_ORD_MASK ||
        check_pd(ans->pd, ans->pd_len, r->enhanced) != 0)
        return IWARP_ERR_INVAL;
    if (r->enhanced) {
        /* RFC 6581 §9.2: A echoed; the RTR types as for MPA. §9.1: IRD/ORD as for MPA (shared
         * helper); a Read RTR may need IRD 1. RFC 6581 §10: enhanced answer to enhanced. */
        r->p2p = r->peer_p2p;
        r->rtr = r->p2p ? iwarp_rtr_reply_set(r->peer_rtr, ctl->cfg.rtr) : 0;
        struct iwarp_ird_ord_answer a;
        iwarp_ird_ord_respond(r->peer_ird, r->peer_ord, ans->ird, ans->ord,
                              (r->rtr & IWARP_MPA_RTR_READ) != 0, &a);
        r->ird = a.ird;
        r->ord = a.ord;
        ctl->tx_word = (struct iwarp_mpa_ird_ord){
            .p2p = r->p2p, .rtr = r->rtr, .ird = a.ird_sent, .ord = a.ord_sent};
        ctl->tx_fc = IWARP_SCTP_FC_ENH_ACCEPT;
    } else {
        ctl->tx_fc = IWARP_SCTP_FC_ACCEPT; /* §6.2; RFC 6581 §10: plain answer to plain */
    }
    ctl->tx_pd_len = ans->pd_len;
    if (ans->pd_len > 0)
        memcpy(ctl->tx_pd, ans->pd, ans->pd_len);
    leave_pending(ctl);
    ctl->state = IWARP_SESS_ESTABLISHED;
    ctl->events |= IWARP_SESS_EV_ESTABLISHED;
    return 0;
}

int iwarp_sess_ctl_reject(struct iwarp_sess_ctl *ctl, const struct iwarp_sess_answer *ans)
{
    if (!ctl)
        return IWARP_ERR_INVAL;
    if (ctl->state != IWARP_SESS_PENDING)
        return IWARP_ERR_STATE;
    if (ans && check_pd(ans->pd, ans->pd_len, false) != 0)
        return IWARP_ERR_INVAL;
    /* §6.3: only at the ULP's direction, which this call is. RFC 6581 §7: Enhanced Reject
     * "MUST be used" when the unenhanced configuration would have been accepted. Neither
     * carries the RFC 6581 word (§7 puts it in the Initiate and the Accept only). */
    bool enh = ctl->res.enhanced && ans && ans->enhanced_only;
    ctl->tx_fc = enh ? IWARP_SCTP_FC_ENH_REJECT : IWARP_SCTP_FC_REJECT;
    ctl->tx_pd_len = ans ? ans->pd_len : 0;
    if (ctl->tx_pd_len > 0)
        memcpy(ctl->tx_pd, ans->pd, ans->pd_len);
    end(ctl, IWARP_SESS_REJECTED, 0, IWARP_SESS_EV_REJECTED);
    return 0;
}

int iwarp_sess_ctl_terminate(struct iwarp_sess_ctl *ctl)
{
    if (!ctl)
        return IWARP_ERR_INVAL;
    switch (ctl->state) {
    case IWARP_SESS_INITIATED:
    case IWARP_SESS_PENDING:     /* §6.4: a Terminate answers the Initiate */
    case IWARP_SESS_ESTABLISHED: /* §6.2: our final chunk */
        /* An Initiate that never left withdraws the session: none exists on the wire. */
        if (ctl->state == IWARP_SESS_INITIATED && !ctl->tx_any)
            ctl->tx_fc = 0;
        else
            ctl->tx_term = true;
        end(ctl, IWARP_SESS_TERMINATED, 0, IWARP_SESS_EV_TERMINATED);
        return 0;
    case IWARP_SESS_TERMINATED:
        /* §6.2: "The final User Data Chunk for each side MAY be a DDP Stream Terminate". */
        if (!ctl->res.term_rcvd || ctl->tx_term || ctl->res.term_sent || ctl->lost)
            return IWARP_ERR_STATE;
        ctl->tx_term = true;
        return 0;
    default:
        return IWARP_ERR_STATE;
    }
}

void iwarp_sess_ctl_lost(struct iwarp_sess_ctl *ctl)
{
    if (!ctl)
        return;
    /* §11.3: nothing can be sent any more; a pending Initiate leaves the count. */
    ctl->tx_fc = 0;
    ctl->tx_term = false;
    ctl->lost = true;
    if (!over(ctl->state))
        end(ctl, IWARP_SESS_TERMINATED, IWARP_ERR_SCTP_ASSOC_LOST, IWARP_SESS_EV_TERMINATED);
}

iwarp_ssize iwarp_sess_ctl_tx(struct iwarp_sess_ctl *ctl, struct iwarp_sess_ssn_tx *ssn_tx,
                              uint8_t *buf, size_t cap)
{
    if (!ctl || !ssn_tx || (!buf && cap > 0))
        return IWARP_ERR_INVAL;
    struct iwarp_sctp_ctl c = {.fc = IWARP_SCTP_FC_TERMINATE};
    if (ctl->tx_fc != 0) {
        c.fc = ctl->tx_fc;
        c.ird_ord = ctl->tx_word;
        c.pd = ctl->tx_pd;
        c.pd_len = ctl->tx_pd_len;
    } else if (!ctl->tx_term) {
        return 0;
    }
    size_t need = IWARP_SCTP_CTL_HDR_LEN + c.pd_len +
                  (iwarp_sctp_fc_has_ird_ord(c.fc) ? IWARP_MPA_IRD_ORD_LEN : 0u);
    if (cap < need)
        return IWARP_ERR_NOSPC;
    /* §5.2.1: control chunks take DDP-SSNs from the stream's one sequence. */
    int ssn = iwarp_sess_ssn_tx_take(ssn_tx);
    if (ssn < 0)
        return ssn;
    c.ssn = (uint16_t)ssn;
    iwarp_ssize n = iwarp_sctp_ctl_encode(buf, cap, &c); /* fields checked when queued */
    if (ctl->tx_fc != 0) {
        ctl->tx_fc = 0;
    } else {
        ctl->tx_term = false;
        ctl->res.term_sent = true;
    }
    ctl->tx_any = true;
    return n;
}

bool iwarp_sess_ctl_tx_pending(const struct iwarp_sess_ctl *ctl)
{
    return ctl->tx_fc != 0 || ctl->tx_term;
}

bool iwarp_sess_ctl_may_send_seg(const struct iwarp_sess_ctl *ctl)
{
    /* §6.2: segments after the Accept (ours carries the lower DDP-SSN); none after our
     * Terminate, the final chunk. */
    return ctl->state == IWARP_SESS_ESTABLISHED && ctl->tx_fc == 0 && !ctl->tx_term &&
           !ctl->res.term_sent;
}

uint32_t iwarp_sess_ctl_events(struct iwarp_sess_ctl *ctl)
{
    uint32_t ev = ctl->events;
    ctl->events = 0;
    return ev;
}

enum iwarp_sess_state iwarp_sess_ctl_state(const struct iwarp_sess_ctl *ctl)
{
    return ctl->state;
}

const struct iwarp_sess_result *iwarp_sess_ctl_result(const struct iwarp_sess_ctl *ctl)
{
    return &ctl->res;
}
