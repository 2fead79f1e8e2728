/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes DDP Stream Session control (RFC 5043 §6, RFC 6581 §7, §9): an active machine paired
 * with a passive one (their chunks delivered to each other), a second passive machine on the
 * same association (shared pending limit), and random control chunks, segments, ULP decisions,
 * terminate() and lost() from the input. Invariants after every call: the pending count equals
 * the passive machines in PENDING and stays within the limit; REJECTED/TERMINATED are final;
 * a failure return leaves TERMINATED with the same err; segments are allowed only when
 * ESTABLISHED with nothing queued; every produced chunk decodes, carries the next DDP-SSN of its
 * machine, and is a code its role may send in that order (one Initiate/answer first, Terminate
 * last and at most once); an Enhanced Accept obeys RFC 6581 §9.1/§9.2. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "session/session_ctl.h"
#include "wire/wire_sctp.h"

#define NONE 0x3FFF

struct node {
    struct iwarp_sess_ctl m;
    struct iwarp_sess_ssn_tx tx;
    uint16_t tx_expect; /* DDP-SSN the next produced chunk must carry */
    uint32_t tx_count;  /* chunks produced */
    bool term_out;      /* a Terminate was produced */
    bool was_over;      /* REJECTED or TERMINATED was reached */
};

static bool is_over(enum iwarp_sess_state s)
{
    return s == IWARP_SESS_REJECTED || s == IWARP_SESS_TERMINATED;
}

/* Checks one chunk node x produced. */
static void check_out(struct node *x, const uint8_t *b, iwarp_ssize len)
{
    struct iwarp_sctp_ctl c;
    if (len < 4 || len > IWARP_SCTP_CTL_MAX || iwarp_sctp_ctl_decode(b, (size_t)len, &c) != len)
        abort();
    if (c.ssn != x->tx_expect || x->term_out)
        abort(); /* §5.2.1 sequence; §6.2 nothing after our Terminate */
    x->tx_expect++;
    bool active = x->m.cfg.role == IWARP_SESS_ACTIVE;
    if (c.fc == IWARP_SCTP_FC_TERMINATE) {
        x->term_out = true;
    } else {
        if (x->tx_count != 0)
            abort(); /* at most one Initiate/answer, and first */
        if (active) {
            if (c.fc != (x->m.cfg.enhanced ? IWARP_SCTP_FC_ENH_INITIATE : IWARP_SCTP_FC_INITIATE))
                abort();
            if (c.ird_ord.p2p) /* RFC 6581 §4.4.1: no RTR over SCTP */
                abort();
        } else {
            const struct iwarp_sess_result *r = iwarp_sess_ctl_result(&x->m);
            switch (c.fc) {
            case IWARP_SCTP_FC_ACCEPT:
            case IWARP_SCTP_FC_REJECT:
                break;
            case IWARP_SCTP_FC_ENH_REJECT:
                if (!r->enhanced)
                    abort(); /* RFC 6581 §7 */
                break;
            case IWARP_SCTP_FC_ENH_ACCEPT:
                /* RFC 6581 §9.1, §9.2, §10. */
                if (!r->enhanced || c.ird_ord.p2p != r->peer_p2p)
                    abort();
                if (c.ird_ord.p2p && c.ird_ord.rtr == 0)
                    abort();
                if (r->peer_ord == NONE && c.ird_ord.ird != NONE)
                    abort();
                if (r->peer_ird == NONE && c.ird_ord.ord != NONE)
                    abort();
                if (c.ird_ord.ord != NONE && c.ird_ord.ord > r->peer_ird)
                    abort();
                break;
            default:
                abort();
            }
            if (c.fc == IWARP_SCTP_FC_ACCEPT && r->enhanced)
                abort();
        }
    }
    x->tx_count++;
}

static iwarp_ssize drain_one(struct node *x, uint8_t *buf, size_t cap)
{
    iwarp_ssize n = iwarp_sess_ctl_tx(&x->m, &x->tx, buf, cap);
    if (n > 0)
        check_out(x, buf, n);
    else if (n != 0 && n != IWARP_ERR_NOSPC)
        abort();
    if (n == IWARP_ERR_NOSPC && cap >= IWARP_SCTP_CTL_MAX)
        abort();
    return n;
}

static void check_rx(const struct node *x, int r)
{
    if (r == 0 || r == IWARP_ERR_STATE)
        return;
    const struct iwarp_sess_result *res = iwarp_sess_ctl_result(&x->m);
    if (r >= 0 || iwarp_sess_ctl_state(&x->m) != IWARP_SESS_TERMINATED || res->err != r)
        abort();
}

static void check_node(struct node *x)
{
    enum iwarp_sess_state s = iwarp_sess_ctl_state(&x->m);
    const struct iwarp_sess_result *r = iwarp_sess_ctl_result(&x->m);
    if (s > IWARP_SESS_TERMINATED)
        abort();
    if (x->was_over && !is_over(s))
        abort();
    x->was_over = is_over(s);
    if (!is_over(s) && r->err != 0)
        abort();
    if (iwarp_sess_ctl_may_send_seg(&x->m) &&
        (s != IWARP_SESS_ESTABLISHED || iwarp_sess_ctl_tx_pending(&x->m)))
        abort();
    if (s == IWARP_SESS_ESTABLISHED && x->m.cfg.role == IWARP_SESS_ACTIVE && r->enhanced) {
        /* RFC 6581 §9.1: initiator ORD <= responder IRD, initiator IRD >= responder ORD. */
        if (r->ord != NONE && r->peer_ird != NONE && r->ord > r->peer_ird)
            abort();
        if (r->ird != NONE && r->peer_ord != NONE && r->ird < r->peer_ord)
            abort();
    }
    if (r->peer_pd_len > IWARP_SCTP_PD_MAX)
        abort();
}

/* A random control chunk payload from the input. */
static size_t make_ctl(const uint8_t **p, size_t *n, const struct node *x, uint8_t *b)
{
    static const uint16_t fcs[] = {1, 2, 3, 4, 5, 6, 7, 0xFFFF, 0, 8};
    uint8_t k = fuzz_take(p, n);
    uint16_t ssn = x->m.rx_next;
    if (k & 0x80)
        ssn = (uint16_t)(fuzz_take(p, n) << 8 | fuzz_take(p, n));
    uint16_t fc = fcs[(k & 0x7F) % (sizeof fcs / sizeof fcs[0])];
    size_t len = 4;
    b[0] = (uint8_t)(ssn >> 8);
    b[1] = (uint8_t)ssn;
    b[2] = (uint8_t)(fc >> 8);
    b[3] = (uint8_t)fc;
    uint8_t pl = fuzz_take(p, n);
    size_t pd = pl < 0xF0 ? (size_t)(pl % 12) : (size_t)(500 + (pl & 0x0F) * 2);
    if (fc == IWARP_SCTP_FC_TERMINATE && (k & 0x40) == 0)
        pd = 0;
    for (size_t i = 0; i < pd; i++)
        b[len++] = fuzz_take(p, n);
    if (k & 0x20 && len > 0)
        len--; /* truncate */
    return len;
}

static void deliver(struct node *to, const uint8_t *b, size_t len)
{
    int r = iwarp_sess_ctl_rx_ctl(&to->m, b, len);
    check_rx(to, r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t n = size;
    uint8_t b0 = fuzz_take(&p, &n), b1 = fuzz_take(&p, &n);
    struct iwarp_sess_pending pend = {.count = 0, .limit = b0 & 3};
    static struct node nd[3]; /* 0: active, 1: its passive peer, 2: another passive stream */
    memset(nd, 0, sizeof nd);
    struct iwarp_sess_cfg c;
    iwarp_sess_cfg_default(&c, IWARP_SESS_ACTIVE);
    c.enhanced = (b0 >> 2) & 1;
    c.ird = (b1 & 0x80) ? NONE : (uint16_t)(b1 & 0x0F);
    c.ord = (b1 & 0x40) ? NONE : (uint16_t)((b1 >> 4) & 0x03);
    static const uint8_t pd[512] = "active private data";
    c.pd = pd;
    c.pd_len = (uint16_t)((b0 >> 5) * 3);
    if (iwarp_sess_ctl_init(&nd[0].m, &c) != 0)
        abort();
    for (int i = 1; i < 3; i++) {
        iwarp_sess_cfg_default(&c, IWARP_SESS_PASSIVE);
        c.enhanced = (b0 >> (2 + i)) & 1;
        c.rtr = (uint8_t)((b1 & 7) ? (b1 & 7) : IWARP_MPA_RTR_WRITE);
        c.pending = &pend;
        if (iwarp_sess_ctl_init(&nd[i].m, &c) != 0)
            abort();
    }
    for (int i = 0; i < 3; i++)
        iwarp_sess_ssn_tx_init(&nd[i].tx);

    uint8_t buf[600];
    while (n > 0) {
        uint8_t op = fuzz_take(&p, &n);
        struct node *x = &nd[(op >> 4) % 3]; /* high nibble: target and flags */
        switch ((op & 0x0F) % 9) {
        case 0: { /* the active side's next chunk goes to its peer */
            iwarp_ssize k = drain_one(&nd[0], buf, (op & 0x80) ? 100 : sizeof buf);
            if (k > 0)
                deliver(&nd[1], buf, (size_t)k);
            break;
        }
        case 1: { /* the paired passive side's next chunk goes to the active side */
            iwarp_ssize k = drain_one(&nd[1], buf, sizeof buf);
            if (k > 0)
                deliver(&nd[0], buf, (size_t)k);
            break;
        }
        case 2: { /* a forged control chunk */
            size_t len = make_ctl(&p, &n, x, buf);
            deliver(x, buf, len);
            break;
        }
        case 3: { /* a forged segment */
            uint16_t ssn = x->m.rx_next;
            if (op & 0x80)
                ssn = (uint16_t)(ssn + fuzz_take(&p, &n));
            check_rx(x, iwarp_sess_ctl_rx_seg(&x->m, ssn));
            break;
        }
        case 4: { /* a DDP segment from a machine that may send one, to its peer */
            int from = (op >> 7) & 1, to = 1 - from;
            if (!iwarp_sess_ctl_may_send_seg(&nd[from].m))
                break;
            int ssn = iwarp_sess_ssn_tx_take(&nd[from].tx);
            if (ssn < 0 || ssn != nd[from].tx_expect)
                abort();
            nd[from].tx_expect++;
            int r = iwarp_sess_ctl_rx_seg(&nd[to].m, (uint16_t)ssn);
            check_rx(&nd[to], r);
            break;
        }
        case 5:
        case 6: { /* the ULP decides */
            struct node *y = &nd[1 + ((op >> 4) & 1)];
            enum iwarp_sess_state before = iwarp_sess_ctl_state(&y->m);
            struct iwarp_sess_answer a = {
                .ird = (uint16_t)(fuzz_take(&p, &n) & 0x1F),
                .ord = (uint16_t)(fuzz_take(&p, &n) & 0x1F),
                .pd = pd,
                .pd_len = (uint16_t)(op & 0x80 ? 508 : op >> 5),
                .enhanced_only = (op >> 6) & 1,
            };
            if (a.ird == 0x1F)
                a.ird = NONE;
            if (a.ord == 0x1F)
                a.ord = NONE;
            int r = (op & 0x0F) % 9 == 5 ? iwarp_sess_ctl_accept(&y->m, &a)
                                         : iwarp_sess_ctl_reject(&y->m, &a);
            if ((r == 0) != (before == IWARP_SESS_PENDING))
                abort();
            break;
        }
        case 7: { /* terminate */
            enum iwarp_sess_state before = iwarp_sess_ctl_state(&x->m);
            int r = iwarp_sess_ctl_terminate(&x->m);
            if (r == 0 && iwarp_sess_ctl_state(&x->m) != IWARP_SESS_TERMINATED)
                abort();
            if (r != 0 && (r != IWARP_ERR_STATE || iwarp_sess_ctl_state(&x->m) != before))
                abort();
            break;
        }
        default: /* drain the second passive stream, or rarely lose the association */
            if ((op & 0xF0) == 0xF0) {
                for (int i = 0; i < 3; i++)
                    iwarp_sess_ctl_lost(&nd[i].m);
                for (int i = 0; i < 3; i++)
                    if (iwarp_sess_ctl_tx(&nd[i].m, &nd[i].tx, buf, sizeof buf) != 0)
                        abort();
            } else {
                (void)drain_one(&nd[2], buf, sizeof buf);
            }
            break;
        }
        uint32_t pending = 0;
        for (int i = 0; i < 3; i++) {
            check_node(&nd[i]);
            (void)iwarp_sess_ctl_events(&nd[i].m);
            if (i > 0 && iwarp_sess_ctl_state(&nd[i].m) == IWARP_SESS_PENDING)
                pending++;
        }
        if (pend.count != pending || pend.count > pend.limit)
            abort();
    }
    return 0;
}
