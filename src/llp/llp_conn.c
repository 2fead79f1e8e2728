/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One MPA connection, sans I/O (see llp_conn.h): set-up, the negotiation's outcomes (full
 * operation, the engine's start, failures), and the entry points of state, time and close.
 * Receive is llp_conn_rx.c, transmit llp_conn_tx.c; llp_conn_int.h has what they share.
 */
#include "llp/llp_conn.h"

#include <string.h>

#include "iwarp/errors.h"
#include "llp/llp_conn_int.h"

#define NONE IWARP_MPA_IRD_ORD_NONE

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
    c->fullop = true;
    iwarp_llp_conn_set_emss(c, c->cfg.emss);
}

void iwarp_llp_conn_set_emss(struct iwarp_llp_conn *c, uint32_t emss)
{
    c->cfg.emss = emss;
    if (!c->fullop)
        return;
    /* RFC 5044 §4.5 MULPDU for the EMSS; §3: never above 64768. */
    uint32_t m = iwarp_mpa_mulpdu(emss, iwarp_mpa_neg_result(&c->neg)->markers_tx);
    c->max_seg = m > IWARP_MPA_MULPDU_MAX ? IWARP_MPA_MULPDU_MAX : m;
}

int iwarp_llp_conn_neg_failed(struct iwarp_llp_conn *c)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    iwarp_llp_conn_rx_stop(c);
    switch (r->action) {
    case IWARP_MPA_ACT_EXIT: /* RFC 5044 §7.1.2 rule 3: rejected; TCP is left to the ULP */
        c->state = IWARP_LLP_CONN_REJECTED;
        c->err = r->err;
        break;
    case IWARP_MPA_ACT_TERMINATE: /* RFC 6581 §8, §9: a Terminate FPDU first */
        enter_fullop(c);
        iwarp_llp_conn_terminate(c, r->err, r->term, NULL, 0);
        break;
    default: /* RFC 5044 §7.1.2, §8 code 4: close, no FPDU */
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = r->err;
        break;
    }
    return r->err;
}

/* The IRD or ORD the QP starts with: the negotiated one, or when there was none (0x3FFF, RFC
 * 6581 §9.1: left to the ULP) the configured one. */
static uint16_t ird_ord_in_use(uint16_t negotiated, uint16_t configured)
{
    return negotiated != NONE ? negotiated : configured;
}

/* Enter full operation on the QP with the negotiated IRD/ORD (RFC 6581 §9.1). */
static int start_qp(struct iwarp_llp_conn *c)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    if (c->eng == NULL) {
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = IWARP_ERR_STATE;
        iwarp_llp_conn_rx_stop(c);
        return IWARP_ERR_STATE;
    }
    uint32_t ird = ird_ord_in_use(r->ird, c->cfg.neg.ird);
    uint32_t ord = ird_ord_in_use(r->ord, c->cfg.neg.ord);
    int rc = iwarp_core_eng_start(c->eng, ird, ord);
    if (rc != 0) {
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = rc;
        iwarp_llp_conn_rx_stop(c);
        return rc;
    }
    c->started = true;
    c->state = IWARP_LLP_CONN_ESTABLISHED;
    return 0;
}

int iwarp_llp_conn_started_failed(struct iwarp_llp_conn *c, int err)
{
    c->state = IWARP_LLP_CONN_FAILED;
    c->err = err;
    iwarp_llp_conn_rx_stop(c);
    c->tx_hold = false;
    c->txf_count = 0;
    c->txf_off = 0;
    iwarp_core_eng_llp_closed(c->eng, false);
    return err;
}

int iwarp_llp_conn_fail_locally(struct iwarp_llp_conn *c, int err)
{
    /* RFC 6581 §9.3: a local error without its own code is reported to the peer with TERM
     * 2/0/0x05 before the connection is reset; in full operation the Terminate FPDU may go
     * (the connection frames it, whether an engine runs or not). */
    struct iwarp_term_cause cause = {IWARP_TERM_LAYER_LLP, IWARP_TERM_LLP_ETYPE_MPA,
                                     IWARP_TERM_MPA_CATASTROPHIC};
    iwarp_llp_conn_terminate(c, err, cause, NULL, 0);
    return err;
}

int iwarp_llp_conn_initiator_established(struct iwarp_llp_conn *c, uint64_t now_ns)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    enter_fullop(c);
    int rc = start_qp(c);
    if (rc != 0) /* after the Reply we are in full operation */
        return iwarp_llp_conn_fail_locally(c, rc);
    /* RFC 6581 §5, §9.2: the negotiated RTR is our first FPDU. */
    c->rtr_pending = r->rtr != 0;
    /* siw race (docs/design.md): our first FPDU waits first_fpdu_delay_ns after the Reply. */
    uint64_t d = c->cfg.first_fpdu_delay_ns;
    c->first_fpdu_at = d == 0 ? 0 : (d > UINT64_MAX - 1 - now_ns ? UINT64_MAX - 1 : now_ns + d);
    /* RFC 5044 §7.1.2 rule 4 as the initiator sees it (docs/startup-rules.md): a responder's
     * FPDU before ours is written fails the connection, but one that crosses ours is taken.
     * While we hold ours on purpose, what the responder sends would have crossed it: take it. */
    if (d != 0)
        iwarp_llp_conn_rx_begin(c);
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
    c->bounce = (struct iwarp_llp_conn_bounce){
        .stage = bounce,
        .neg_in = bounce,
        .neg_out = bounce + IWARP_LLP_CONN_NEG_OUT_OFF,
        .scratch = bounce + IWARP_LLP_CONN_SCRATCH_OFF,
        .end = bounce + IWARP_LLP_CONN_BOUNCE,
    };
    c->recv.state = IWARP_LLP_CONN_RX_NEG; /* nothing staged yet: fpdu.staged is 0 */
    c->recv.fpdu.seg = c->bounce.stage;
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
    /* Without a negotiation (RFC 6581 §9.1: revision 1, or 0x3FFF) IRD and ORD are the ULP's
     * choice: the answer's, not the configuration's defaults (start_qp). An IRD larger than
     * the one the ULP allowed would take more Read Requests from the peer. */
    if (ans->ird != NONE)
        c->cfg.neg.ird = ans->ird;
    if (ans->ord != NONE)
        c->cfg.neg.ord = ans->ord;
    /* RFC 5044 §7.1.2: the responder is in full operation once the Reply is sent. The QP
     * starts now with the negotiated IRD/ORD, so the ULP may post at once (local operations
     * run); rule 4: its FPDUs are held (tx_hold) until the initiator's first FPDU arrives. */
    enter_fullop(c);
    rc = start_qp(c);
    if (rc != 0)
        return rc;
    c->tx_hold = true;
    iwarp_llp_conn_rx_begin(c);
    return 0;
}

bool iwarp_llp_conn_tx_stage_wanted(const struct iwarp_llp_conn *c,
                                    const struct iwarp_mpa_neg_answer *ans)
{
    if (c->txs.buf || !c->eng || !c->eng->rdmap)
        return false; /* given already; a DDP-level stream answers no Reads */
    if (!ans)
        return c->started && c->tx.crc && c->eng->rdmap->ird > 0;
    struct iwarp_mpa_neg_result r;
    if (c->state != IWARP_LLP_CONN_REQUEST || iwarp_mpa_neg_accept_outcome(&c->neg, ans, &r) != 0)
        return false; /* accept() would fail: nothing to prepare */
    /* the configured IRD as iwarp_llp_conn_accept() leaves it for start_qp(): the answer's
     * unless it left IRD to the configuration */
    uint16_t configured = ird_ord_in_use(ans->ird, c->cfg.neg.ird);
    /* RFC 5040 §5.2.2, §7.2: with IRD 0 queue 1 holds no buffer, so a Read Request is
     * Terminated (RFC 5041 §7.2: 1/2/0x02) and never answered */
    return r.crc && ird_ord_in_use(r.ird, configured) > 0;
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
    iwarp_llp_conn_rx_stop(c);
    return 0;
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
    (void)iwarp_llp_conn_tx_gated(c, now_ns);
    /* RFC 5044 §7.1.2 rules 8, 10: the Request, the Reply and the RTR are awaited with a
     * timer. */
    if ((c->state == IWARP_LLP_CONN_NEGOTIATING || c->state == IWARP_LLP_CONN_REQUEST) &&
        iwarp_mpa_neg_handle_timeout(&c->neg, now_ns) != 0)
        (void)iwarp_llp_conn_neg_failed(c);
    else if (c->tx_hold && iwarp_mpa_neg_handle_timeout(&c->neg, now_ns) != 0)
        /* rule 10: no RTR */
        (void)iwarp_llp_conn_started_failed(c, iwarp_mpa_neg_result(&c->neg)->err);
}

void iwarp_llp_conn_closed(struct iwarp_llp_conn *c, bool graceful)
{
    if (c->state == IWARP_LLP_CONN_NEGOTIATING || c->state == IWARP_LLP_CONN_REQUEST) {
        c->state = IWARP_LLP_CONN_FAILED;
        c->err = IWARP_ERR_IO;
    } else if (c->state == IWARP_LLP_CONN_ESTABLISHED) {
        c->state = IWARP_LLP_CONN_CLOSE;
    }
    iwarp_llp_conn_rx_stop(c);
    c->rtr_pending = false;
    c->txf_count = 0;
    c->txf_off = 0;
    c->neg_out_len = c->neg_out_off = 0;
    c->tx_hold = false;
    iwarp_core_eng_llp_closed(c->eng, graceful);
}

void iwarp_llp_conn_eof(struct iwarp_llp_conn *c)
{
    /* RFC 5041 §6.2.1: the peer's graceful teardown closes the LLP stream after its last
     * message; RFC 5041 §6.2.2, RFC 5040 §6.2: a stream that ends inside an FPDU or a message
     * was lost (LLP abortive termination). */
    iwarp_llp_conn_closed(c, iwarp_llp_conn_rx_at_message_boundary(c));
}
