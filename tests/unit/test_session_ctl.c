/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP Stream Session control (RFC 5043 §5.2.3, §6; RFC 6581 §7, §9): every legal sequence of
 * §6.2-§6.4 from both sides with the exact chunks (written by hand), every illegal function code
 * and sequence with its error and Terminate, the association's pending limit, the plain/enhanced
 * matrix, IRD/ORD negotiated exactly as the MPA machine does, and a full exchange through the
 * DDP-SSN windows with chunks reordered at random. */
#include "harness.h"
#include "iwarp/errors.h"
#include "mpa/mpa_negotiate.h"
#include "session/session_ctl.h"
#include "session/session_ssn.h"

#define NONE 0x3FFF

/* One end of a stream: its machine and its DDP-SSN send counter. */
struct end {
    struct iwarp_sess_ctl m;
    struct iwarp_sess_ssn_tx tx;
};

static struct iwarp_sess_pending pend;

static void mk_active(struct end *e, bool enh, uint16_t ird, uint16_t ord, const char *pd)
{
    struct iwarp_sess_cfg c;
    iwarp_sess_cfg_default(&c, IWARP_SESS_ACTIVE);
    c.enhanced = enh;
    c.ird = ird;
    c.ord = ord;
    c.pd = (const uint8_t *)pd;
    c.pd_len = pd ? (uint16_t)strlen(pd) : 0;
    ASSERT_EQ(iwarp_sess_ctl_init(&e->m, &c), 0);
    iwarp_sess_ssn_tx_init(&e->tx);
}

static void mk_passive_on(struct end *e, bool enh, struct iwarp_sess_pending *p)
{
    struct iwarp_sess_cfg c;
    iwarp_sess_cfg_default(&c, IWARP_SESS_PASSIVE);
    c.enhanced = enh;
    c.pending = p;
    ASSERT_EQ(iwarp_sess_ctl_init(&e->m, &c), 0);
    iwarp_sess_ssn_tx_init(&e->tx);
}

static void mk_passive(struct end *e, bool enh)
{
    pend = (struct iwarp_sess_pending){.count = 0, .limit = 4};
    mk_passive_on(e, enh, &pend);
}

/* The next chunk e sends must be exactly `want` (hex); "" = nothing. */
static void expect_tx(struct end *e, const char *want)
{
    uint8_t w[600], got[600];
    size_t n = harness_hex(want, w, sizeof w);
    iwarp_ssize r = iwarp_sess_ctl_tx(&e->m, &e->tx, got, sizeof got);
    ASSERT_EQ(r, (iwarp_ssize)n);
    ASSERT_MEM_EQ(got, w, n);
}

static int feed(struct end *e, const char *hex)
{
    uint8_t b[600];
    size_t n = harness_hex(hex, b, sizeof b);
    return iwarp_sess_ctl_rx_ctl(&e->m, b, n);
}

static enum iwarp_sess_state st(const struct end *e)
{
    return iwarp_sess_ctl_state(&e->m);
}

static const struct iwarp_sess_result *res(const struct end *e)
{
    return iwarp_sess_ctl_result(&e->m);
}

/* The session ended by our side with err; a Terminate is the next chunk when answered. */
static void expect_failed(struct end *e, int err, bool answered, const char *term_hex)
{
    ASSERT_EQ(st(e), IWARP_SESS_TERMINATED);
    ASSERT_EQ(res(e)->err, err);
    ASSERT_TRUE(iwarp_sess_ctl_events(&e->m) & IWARP_SESS_EV_TERMINATED);
    ASSERT_FALSE(iwarp_sess_ctl_may_send_seg(&e->m));
    if (answered) {
        expect_tx(e, term_hex);
        ASSERT_TRUE(res(e)->term_sent);
    }
    expect_tx(e, "");
}

/* ---- Active side ---- */

/* §6.2: Initiate -> Accept -> segments -> Terminate. */
TEST(active_plain_accepted_then_peer_terminates)
{
    struct end a;
    mk_active(&a, false, 16, 16, "hello");
    ASSERT_EQ(st(&a), IWARP_SESS_INITIATED);
    ASSERT_TRUE(iwarp_sess_ctl_tx_pending(&a.m));
    ASSERT_FALSE(iwarp_sess_ctl_may_send_seg(&a.m)); /* §6.6 */
    expect_tx(&a, "0000 0001 68 65 6C 6C 6F");
    expect_tx(&a, "");
    ASSERT_FALSE(iwarp_sess_ctl_may_send_seg(&a.m)); /* not before the answer */
    ASSERT_EQ(iwarp_sess_ctl_events(&a.m), 0);
    ASSERT_EQ(feed(&a, "0000 0002 6F 6B"), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_ESTABLISHED);
    ASSERT_EQ(iwarp_sess_ctl_events(&a.m), IWARP_SESS_EV_ESTABLISHED);
    ASSERT_EQ(iwarp_sess_ctl_events(&a.m), 0); /* read clears */
    ASSERT_EQ(res(&a)->peer_pd_len, 2);
    ASSERT_MEM_EQ(res(&a)->peer_pd, "ok", 2);
    ASSERT_FALSE(res(&a)->enhanced);
    ASSERT_EQ(res(&a)->ird, NONE);
    ASSERT_EQ(res(&a)->ord, NONE);
    ASSERT_TRUE(iwarp_sess_ctl_may_send_seg(&a.m));
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 1), 0);
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 2), 0);
    ASSERT_EQ(feed(&a, "0003 0004"), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_TERMINATED);
    ASSERT_EQ(res(&a)->err, IWARP_ERR_SESSION_TERMINATED);
    ASSERT_TRUE(res(&a)->term_rcvd);
    ASSERT_FALSE(res(&a)->term_sent);
    ASSERT_EQ(iwarp_sess_ctl_events(&a.m), IWARP_SESS_EV_TERMINATED);
    ASSERT_FALSE(iwarp_sess_ctl_may_send_seg(&a.m));
    expect_tx(&a, ""); /* never answered by itself */
    /* The session is over: late chunks are dropped. */
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 4), IWARP_ERR_STATE);
    ASSERT_EQ(feed(&a, "0004 0002"), IWARP_ERR_STATE);
    /* §6.2: our final chunk MAY be a Terminate too. */
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), 0);
    expect_tx(&a, "0001 0004");
    ASSERT_TRUE(res(&a)->term_sent);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), IWARP_ERR_STATE);
}

TEST(active_local_terminate_after_peer_segments)
{
    struct end a;
    mk_active(&a, false, 0, 0, NULL);
    expect_tx(&a, "0000 0001");
    ASSERT_EQ(feed(&a, "0000 0002"), 0);
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 1), 0);
    (void)iwarp_sess_ctl_events(&a.m);
    ASSERT_EQ(iwarp_sess_ssn_tx_take(&a.tx), 1); /* one DDP segment of ours */
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_TERMINATED);
    ASSERT_EQ(res(&a)->err, 0);
    ASSERT_EQ(iwarp_sess_ctl_events(&a.m), IWARP_SESS_EV_TERMINATED);
    ASSERT_FALSE(iwarp_sess_ctl_may_send_seg(&a.m));
    expect_tx(&a, "0002 0004");
    /* The peer's segments in flight are dropped quietly; its own Terminate is noted. */
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 2), IWARP_ERR_STATE);
    ASSERT_FALSE(res(&a)->term_rcvd);
    ASSERT_EQ(feed(&a, "0003 0004"), 0);
    ASSERT_TRUE(res(&a)->term_rcvd);
    ASSERT_EQ(feed(&a, "0004 0004"), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), IWARP_ERR_STATE);
}

/* RFC 6581 §7, §9.1: Enhanced Initiate -> Enhanced Accept. */
TEST(active_enhanced_accepted)
{
    struct end a;
    mk_active(&a, true, 16, 16, "q");
    expect_tx(&a, "0000 0005 | 0010 0010 | 71");
    /* Responder IRD 8, ORD 4, private data "a". */
    ASSERT_EQ(feed(&a, "0000 0006 | 0008 0004 | 61"), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_ESTABLISHED);
    ASSERT_TRUE(res(&a)->enhanced);
    ASSERT_EQ(res(&a)->peer_ird, 8);
    ASSERT_EQ(res(&a)->peer_ord, 4);
    ASSERT_EQ(res(&a)->ird, 16); /* at least the responder ORD: ours */
    ASSERT_EQ(res(&a)->ord, 8);  /* at most the responder IRD */
    ASSERT_EQ(res(&a)->peer_pd_len, 1);
    ASSERT_MEM_EQ(res(&a)->peer_pd, "a", 1);
    ASSERT_FALSE(res(&a)->term_valid);
}

TEST(enhanced_session_ends_with_the_terminate_code)
{
    /* RFC 6581 §7: "The enhanced DDP stream management MUST use the DDP stream session
     * termination function code to terminate a stream established using enhanced DDP stream
     * session function codes": 0x0004, as for a plain session, never an enhanced code. */
    struct end a;
    mk_active(&a, true, 16, 16, NULL);
    expect_tx(&a, "0000 0005 | 0010 0010");
    ASSERT_EQ(feed(&a, "0000 0006 | 0008 0004"), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_ESTABLISHED);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_TERMINATED);
    expect_tx(&a, "0001 0004");
}

TEST(active_enhanced_ird_ord_none)
{
    /* RFC 6581 §9.1: a responder IRD of 0x3FFF leaves our ORD unchanged; likewise ORD/IRD. */
    struct end a;
    mk_active(&a, true, 3, 5, NULL);
    expect_tx(&a, "0000 0005 0003 0005");
    ASSERT_EQ(feed(&a, "0000 0006 3FFF 3FFF"), 0);
    ASSERT_EQ(res(&a)->ird, 3);
    ASSERT_EQ(res(&a)->ord, 5);
    mk_active(&a, true, NONE, NONE, NULL);
    expect_tx(&a, "0000 0005 3FFF 3FFF");
    ASSERT_EQ(feed(&a, "0000 0006 0001 3FFE"), 0);
    ASSERT_EQ(res(&a)->ird, NONE);
    ASSERT_EQ(res(&a)->ord, NONE);
}

TEST(active_enhanced_insufficient_ird)
{
    /* RFC 6581 §9.1: responder ORD above our IRD -> TERM 2/0/6 and terminate. */
    struct end a;
    mk_active(&a, true, 4, 4, NULL);
    expect_tx(&a, "0000 0005 0004 0004");
    ASSERT_EQ(feed(&a, "0000 0006 0004 0005"), IWARP_ERR_MPA_IRD_ORD);
    ASSERT_TRUE(res(&a)->term_valid);
    ASSERT_EQ(res(&a)->term.layer, 2);
    ASSERT_EQ(res(&a)->term.etype, 0);
    ASSERT_EQ(res(&a)->term.ecode, 6);
    ASSERT_EQ(res(&a)->peer_ord, 5); /* still passed to the ULP */
    expect_failed(&a, IWARP_ERR_MPA_IRD_ORD, true, "0001 0004");
}

TEST(active_enhanced_p2p_not_echoed)
{
    /* RFC 6581 §9.2: A must be 0 in the Accept when it was 0 in the Initiate (TERM 2/0/5). */
    struct end a;
    mk_active(&a, true, 4, 4, NULL);
    expect_tx(&a, "0000 0005 0004 0004");
    ASSERT_EQ(feed(&a, "0000 0006 8004 8004"), IWARP_ERR_MPA_P2P);
    ASSERT_TRUE(res(&a)->term_valid);
    ASSERT_EQ(res(&a)->term.ecode, 5);
    expect_failed(&a, IWARP_ERR_MPA_P2P, true, "0001 0004");
}

/* §6.3: Initiate -> Reject. */
TEST(active_rejected)
{
    struct end a;
    mk_active(&a, false, 1, 1, NULL);
    expect_tx(&a, "0000 0001");
    ASSERT_EQ(feed(&a, "0000 0003 6E 6F"), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_REJECTED);
    ASSERT_EQ(res(&a)->err, IWARP_ERR_SESSION_REJECTED);
    ASSERT_EQ(iwarp_sess_ctl_events(&a.m), IWARP_SESS_EV_REJECTED);
    ASSERT_MEM_EQ(res(&a)->peer_pd, "no", 2);
    ASSERT_FALSE(res(&a)->enhanced_reject);
    expect_tx(&a, "");
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 1), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), IWARP_ERR_STATE);
}

TEST(active_enhanced_rejected_both_codes)
{
    /* RFC 6581 §7: Enhanced Reject = the unenhanced configuration would have been accepted. */
    struct end a;
    mk_active(&a, true, 1, 1, NULL);
    expect_tx(&a, "0000 0005 0001 0001");
    ASSERT_EQ(feed(&a, "0000 0007 7A"), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_REJECTED);
    ASSERT_TRUE(res(&a)->enhanced_reject);
    ASSERT_TRUE(res(&a)->enhanced);
    ASSERT_MEM_EQ(res(&a)->peer_pd, "z", 1);
    /* A plain Reject answers an Enhanced Initiate too: refused whatever the enhancement. */
    mk_active(&a, true, 1, 1, NULL);
    expect_tx(&a, "0000 0005 0001 0001");
    ASSERT_EQ(feed(&a, "0000 0003"), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_REJECTED);
    ASSERT_FALSE(res(&a)->enhanced_reject);
}

/* §6.4: Initiate -> Terminate (the passive side's pending limit). */
TEST(active_non_ulp_rejected)
{
    for (int enh = 0; enh < 2; enh++) {
        struct end a;
        mk_active(&a, enh, 1, 1, NULL);
        ASSERT_TRUE(iwarp_sess_ctl_tx(&a.m, &a.tx, (uint8_t[600]){0}, 600) > 0);
        ASSERT_EQ(feed(&a, "0000 0004"), 0);
        ASSERT_EQ(st(&a), IWARP_SESS_TERMINATED);
        ASSERT_EQ(res(&a)->err, IWARP_ERR_SESSION_TERMINATED);
        ASSERT_TRUE(res(&a)->term_rcvd);
        expect_tx(&a, "");
    }
}

TEST(active_withdraws_unsent_initiate)
{
    struct end a;
    mk_active(&a, false, 1, 1, NULL);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), 0);
    ASSERT_EQ(st(&a), IWARP_SESS_TERMINATED);
    ASSERT_EQ(res(&a)->err, 0);
    expect_tx(&a, ""); /* no session existed on the wire: nothing at all */
    ASSERT_EQ(iwarp_sess_ssn_tx_peek(&a.tx), 0);
    /* Once the Initiate is out, a Terminate follows it (DDP-SSN 1). */
    mk_active(&a, false, 1, 1, NULL);
    expect_tx(&a, "0000 0001");
    ASSERT_EQ(iwarp_sess_ctl_terminate(&a.m), 0);
    expect_tx(&a, "0001 0004");
}

/* Every illegal answer to an Initiate (§6.1: the session MUST be terminated). */
TEST(active_illegal_answers)
{
    static const struct {
        bool enh;
        const char *chunk;
        int err;
        bool answered;
    } cases[] = {
        {false, "0000 0001", IWARP_ERR_SESSION_SEQUENCE, true}, /* Initiate: both active */
        {false, "0000 0005 0001 0001", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0000 0001", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0000 0002", IWARP_ERR_SESSION_SEQUENCE, true},            /* plain answer to 5 */
        {false, "0000 0006 0001 0001", IWARP_ERR_SESSION_SEQUENCE, true}, /* enhanced to 1 */
        {false, "0000 0007", IWARP_ERR_SESSION_SEQUENCE, true},
        {false, "0000 FFFF", IWARP_ERR_SESSION_FUNCTION, true}, /* experimental */
        {true, "0000 FFFF 01", IWARP_ERR_SESSION_FUNCTION, true},
        {false, "0000 0000", IWARP_ERR_SESSION_FUNCTION, true}, /* unknown codes */
        {false, "0000 0008", IWARP_ERR_SESSION_FUNCTION, true},
        {false, "0000 00", IWARP_ERR_SHORT, true},              /* truncated */
        {false, "0000 0004 00", IWARP_ERR_MPA_PD_LEN, true},    /* data in Terminate */
        {true, "0000 0006 0001", IWARP_ERR_MPA_ENHANCED, true}, /* word cut short */
        {false, "0001 0002", IWARP_ERR_SCTP_SSN, true},         /* DDP-SSN must be 0 */
        {false, "0001 0004", IWARP_ERR_SCTP_SSN, false},        /* a Terminate: noted */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct end a;
        mk_active(&a, cases[i].enh, 1, 1, NULL);
        ASSERT_TRUE(iwarp_sess_ctl_tx(&a.m, &a.tx, (uint8_t[600]){0}, 600) > 0);
        ASSERT_EQ(feed(&a, cases[i].chunk), cases[i].err);
        expect_failed(&a, cases[i].err, cases[i].answered, "0001 0004");
    }
    /* A 1025-octet chunk: private data over 512. */
    struct end a;
    mk_active(&a, false, 1, 1, NULL);
    ASSERT_TRUE(iwarp_sess_ctl_tx(&a.m, &a.tx, (uint8_t[600]){0}, 600) > 0);
    static uint8_t big[4 + 513] = {0, 0, 0, 2};
    ASSERT_EQ(iwarp_sess_ctl_rx_ctl(&a.m, big, sizeof big), IWARP_ERR_MPA_PD_LEN);
    expect_failed(&a, IWARP_ERR_MPA_PD_LEN, true, "0001 0004");
    /* A DDP segment before the answer: §6.2 (the passive side sends none before its Accept). */
    mk_active(&a, false, 1, 1, NULL);
    ASSERT_TRUE(iwarp_sess_ctl_tx(&a.m, &a.tx, (uint8_t[600]){0}, 600) > 0);
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 0), IWARP_ERR_SESSION_SEQUENCE);
    expect_failed(&a, IWARP_ERR_SESSION_SEQUENCE, true, "0001 0004");
}

TEST(established_illegal_chunks)
{
    static const struct {
        const char *chunk;
        int err;
    } cases[] = {
        {"0001 0001", IWARP_ERR_SESSION_SEQUENCE},
        {"0001 0002", IWARP_ERR_SESSION_SEQUENCE},
        {"0001 0003", IWARP_ERR_SESSION_SEQUENCE},
        {"0001 0005 0001 0001", IWARP_ERR_SESSION_SEQUENCE},
        {"0001 0006 0001 0001", IWARP_ERR_SESSION_SEQUENCE},
        {"0001 0007", IWARP_ERR_SESSION_SEQUENCE},
        {"0001 FFFF", IWARP_ERR_SESSION_FUNCTION},
        {"0001 0009", IWARP_ERR_SESSION_FUNCTION},
        {"0002 0004", IWARP_ERR_SCTP_SSN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct end a;
        mk_active(&a, false, 1, 1, NULL);
        expect_tx(&a, "0000 0001");
        ASSERT_EQ(feed(&a, "0000 0002"), 0);
        (void)iwarp_sess_ctl_events(&a.m);
        ASSERT_EQ(feed(&a, cases[i].chunk), cases[i].err);
        /* A Terminate out of DDP-SSN order is not answered. */
        bool answered = cases[i].err != IWARP_ERR_SCTP_SSN;
        expect_failed(&a, cases[i].err, answered, "0001 0004");
    }
    /* A segment out of DDP-SSN order (the glue's window should have caught it). */
    struct end a;
    mk_active(&a, false, 1, 1, NULL);
    expect_tx(&a, "0000 0001");
    ASSERT_EQ(feed(&a, "0000 0002"), 0);
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&a.m, 2), IWARP_ERR_SCTP_SSN);
    expect_failed(&a, IWARP_ERR_SCTP_SSN, true, "0001 0004");
}

/* ---- Passive side ---- */

TEST(passive_plain_accept)
{
    struct end p;
    mk_passive(&p, true);
    ASSERT_EQ(st(&p), IWARP_SESS_LISTEN);
    expect_tx(&p, "");
    ASSERT_EQ(feed(&p, "0000 0001 70 71"), 0);
    ASSERT_EQ(st(&p), IWARP_SESS_PENDING);
    ASSERT_EQ(iwarp_sess_ctl_events(&p.m), IWARP_SESS_EV_REQUEST);
    ASSERT_EQ(pend.count, 1);
    ASSERT_FALSE(res(&p)->enhanced);
    ASSERT_EQ(res(&p)->peer_ird, NONE);
    ASSERT_MEM_EQ(res(&p)->peer_pd, "pq", 2);
    expect_tx(&p, "");
    struct iwarp_sess_answer ans = {.ird = 8, .ord = 8, .pd = (const uint8_t *)"ok", .pd_len = 2};
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), 0);
    ASSERT_EQ(st(&p), IWARP_SESS_ESTABLISHED);
    ASSERT_EQ(iwarp_sess_ctl_events(&p.m), IWARP_SESS_EV_ESTABLISHED);
    ASSERT_EQ(pend.count, 0);
    /* RFC 6581 §10: a plain Initiate gets a plain Accept; IRD/ORD are the ULP's business. */
    ASSERT_EQ(res(&p)->ird, NONE);
    ASSERT_EQ(res(&p)->ord, NONE);
    /* Our Accept carries the lower DDP-SSN: no segment before it is handed out. */
    ASSERT_FALSE(iwarp_sess_ctl_may_send_seg(&p.m));
    expect_tx(&p, "0000 0002 6F 6B");
    ASSERT_TRUE(iwarp_sess_ctl_may_send_seg(&p.m));
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&p.m, 1), 0);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&p.m), 0);
    expect_tx(&p, "0001 0004");
}

TEST(passive_enhanced_accept)
{
    struct end p;
    mk_passive(&p, true);
    /* Initiator IRD 4, ORD 8, data "i". */
    ASSERT_EQ(feed(&p, "0000 0005 | 0004 0008 | 69"), 0);
    ASSERT_TRUE(res(&p)->enhanced);
    ASSERT_EQ(res(&p)->peer_ird, 4);
    ASSERT_EQ(res(&p)->peer_ord, 8);
    ASSERT_MEM_EQ(res(&p)->peer_pd, "i", 1);
    struct iwarp_sess_answer ans = {.ird = 16, .ord = 16};
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), 0);
    /* RFC 6581 §9.1: our ORD at most the initiator IRD; our IRD as we have it. */
    ASSERT_EQ(res(&p)->ird, 16);
    ASSERT_EQ(res(&p)->ord, 4);
    ASSERT_FALSE(res(&p)->p2p);
    expect_tx(&p, "0000 0006 | 0010 0004");
}

TEST(passive_enhanced_p2p_echoed)
{
    /* RFC 6581 §9.2: A=1 echoed with an RTR type; a zero-length Read RTR lifts IRD 0 to 1. */
    struct end p;
    mk_passive(&p, true);
    /* A=1, IRD 4 | D (Read), ORD 0. */
    ASSERT_EQ(feed(&p, "0000 0005 | 8004 4000"), 0);
    ASSERT_TRUE(res(&p)->peer_p2p);
    ASSERT_EQ(res(&p)->peer_rtr, IWARP_MPA_RTR_READ);
    struct iwarp_sess_answer ans = {.ird = 0, .ord = 2};
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), 0);
    ASSERT_TRUE(res(&p)->p2p);
    ASSERT_EQ(res(&p)->rtr, IWARP_MPA_RTR_READ);
    ASSERT_EQ(res(&p)->ird, 1);
    ASSERT_EQ(res(&p)->ord, 2);
    expect_tx(&p, "0000 0006 | 8001 4002");
    /* No offered type supported (Send only offered): every type of ours is set. */
    mk_passive(&p, true);
    ASSERT_EQ(feed(&p, "0000 0005 | C004 0004"), 0);
    ASSERT_EQ(res(&p)->peer_rtr, IWARP_MPA_RTR_SEND);
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), 0);
    ASSERT_EQ(res(&p)->rtr, IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ);
    expect_tx(&p, "0000 0006 | 8001 C002");
}

TEST(passive_enhanced_initiate_without_rfc6581)
{
    /* RFC 6581 §10: an unenhanced responder does not know the code. */
    struct end p;
    mk_passive(&p, false);
    ASSERT_EQ(feed(&p, "0000 0005 0001 0001"), IWARP_ERR_SESSION_FUNCTION);
    ASSERT_EQ(pend.count, 0);
    expect_failed(&p, IWARP_ERR_SESSION_FUNCTION, true, "0000 0004");
    /* A plain Initiate is fine. */
    mk_passive(&p, false);
    ASSERT_EQ(feed(&p, "0000 0001"), 0);
    ASSERT_EQ(st(&p), IWARP_SESS_PENDING);
}

/* §6.3: Initiate -> Reject, at the ULP's direction. */
TEST(passive_reject)
{
    struct end p;
    mk_passive(&p, true);
    ASSERT_EQ(feed(&p, "0000 0001"), 0);
    (void)iwarp_sess_ctl_events(&p.m);
    struct iwarp_sess_answer ans = {
        .pd = (const uint8_t *)"go", .pd_len = 2, .enhanced_only = true};
    ASSERT_EQ(iwarp_sess_ctl_reject(&p.m, &ans), 0);
    ASSERT_EQ(st(&p), IWARP_SESS_REJECTED);
    ASSERT_EQ(res(&p)->err, 0);
    ASSERT_EQ(iwarp_sess_ctl_events(&p.m), IWARP_SESS_EV_REJECTED);
    ASSERT_EQ(pend.count, 0);
    ASSERT_FALSE(iwarp_sess_ctl_may_send_seg(&p.m));
    expect_tx(&p, "0000 0003 67 6F"); /* plain Initiate: plain Reject whatever the flag */
    expect_tx(&p, "");
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&p.m, 1), IWARP_ERR_STATE);
    ASSERT_EQ(feed(&p, "0001 0004"), 0);
    ASSERT_TRUE(res(&p)->term_rcvd);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&p.m), IWARP_ERR_STATE);
    /* NULL answer: empty private data. */
    mk_passive(&p, true);
    ASSERT_EQ(feed(&p, "0000 0001"), 0);
    ASSERT_EQ(iwarp_sess_ctl_reject(&p.m, NULL), 0);
    expect_tx(&p, "0000 0003");
}

TEST(passive_enhanced_reject_codes)
{
    /* RFC 6581 §7: 7 when the unenhanced configuration would have been accepted, else 3; no
     * word in either. */
    struct end p;
    mk_passive(&p, true);
    ASSERT_EQ(feed(&p, "0000 0005 0001 0001"), 0);
    struct iwarp_sess_answer ans = {.ird = 9, .ord = 9, .enhanced_only = true};
    ASSERT_EQ(iwarp_sess_ctl_reject(&p.m, &ans), 0);
    expect_tx(&p, "0000 0007");
    mk_passive(&p, true);
    ASSERT_EQ(feed(&p, "0000 0005 0001 0001"), 0);
    ans.enhanced_only = false;
    ans.pd = (const uint8_t *)"r";
    ans.pd_len = 1;
    ASSERT_EQ(iwarp_sess_ctl_reject(&p.m, &ans), 0);
    expect_tx(&p, "0000 0003 72");
}

/* §6.4: past the association's limit an Initiate gets a Terminate. */
TEST(pending_limit_per_association)
{
    struct iwarp_sess_pending assoc = {.count = 0, .limit = 2};
    struct end s[5];
    for (int i = 0; i < 5; i++)
        mk_passive_on(&s[i], true, &assoc);
    ASSERT_EQ(feed(&s[0], "0000 0001"), 0);
    ASSERT_EQ(feed(&s[1], "0000 0005 0001 0001"), 0);
    ASSERT_EQ(assoc.count, 2);
    ASSERT_EQ(feed(&s[2], "0000 0001 61"), IWARP_ERR_SESSION_PENDING);
    ASSERT_EQ(assoc.count, 2);
    ASSERT_EQ(res(&s[2])->peer_pd_len, 1); /* seen, not forwarded */
    expect_failed(&s[2], IWARP_ERR_SESSION_PENDING, true, "0000 0004");
    /* A decision frees a place. */
    struct iwarp_sess_answer ans = {.ird = 1, .ord = 1};
    ASSERT_EQ(iwarp_sess_ctl_accept(&s[0].m, &ans), 0);
    ASSERT_EQ(assoc.count, 1);
    ASSERT_EQ(feed(&s[3], "0000 0001"), 0);
    ASSERT_EQ(assoc.count, 2);
    ASSERT_EQ(feed(&s[4], "0000 0005 0001 0001"), IWARP_ERR_SESSION_PENDING);
    /* Every way out of PENDING gives the place back: the peer withdraws, ... */
    ASSERT_EQ(feed(&s[1], "0001 0004"), 0);
    ASSERT_EQ(st(&s[1]), IWARP_SESS_TERMINATED);
    ASSERT_EQ(res(&s[1])->err, IWARP_ERR_SESSION_TERMINATED);
    expect_tx(&s[1], "");
    ASSERT_EQ(assoc.count, 1);
    /* ... the association is lost, ... */
    iwarp_sess_ctl_lost(&s[3].m);
    ASSERT_EQ(assoc.count, 0);
    ASSERT_EQ(res(&s[3])->err, IWARP_ERR_SCTP_ASSOC_LOST);
    expect_tx(&s[3], "");
    ASSERT_EQ(iwarp_sess_ctl_terminate(&s[3].m), IWARP_ERR_STATE);
    iwarp_sess_ctl_lost(&s[3].m); /* idempotent */
    ASSERT_EQ(assoc.count, 0);
    /* ... we terminate (a non-ULP reject), or the peer breaks the sequence. */
    mk_passive_on(&s[3], true, &assoc);
    mk_passive_on(&s[4], true, &assoc);
    ASSERT_EQ(feed(&s[3], "0000 0001"), 0);
    ASSERT_EQ(feed(&s[4], "0000 0001"), 0);
    ASSERT_EQ(assoc.count, 2);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&s[3].m), 0);
    expect_tx(&s[3], "0000 0004");
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(&s[4].m, 1), IWARP_ERR_SESSION_SEQUENCE);
    ASSERT_EQ(assoc.count, 0);
    /* Limit 0: every Initiate is refused. */
    struct iwarp_sess_pending none = {.limit = 0};
    mk_passive_on(&s[0], false, &none);
    ASSERT_EQ(feed(&s[0], "0000 0001"), IWARP_ERR_SESSION_PENDING);
    ASSERT_EQ(none.count, 0);
}

TEST(passive_illegal_sequences)
{
    static const struct {
        bool pending; /* after an Initiate, else in LISTEN */
        const char *chunk;
        int err;
        bool answered;
    } cases[] = {
        /* LISTEN: every session starts with an Initiate at DDP-SSN 0 (§6.1-§6.4). */
        {false, "0000 0002", IWARP_ERR_SESSION_SEQUENCE, true},
        {false, "0000 0003", IWARP_ERR_SESSION_SEQUENCE, true},
        {false, "0000 0006 0001 0001", IWARP_ERR_SESSION_SEQUENCE, true},
        {false, "0000 0007", IWARP_ERR_SESSION_SEQUENCE, true},
        {false, "0000 0004", IWARP_ERR_SESSION_SEQUENCE, false},
        {false, "0000 FFFF", IWARP_ERR_SESSION_FUNCTION, true},
        {false, "0000 1234", IWARP_ERR_SESSION_FUNCTION, true},
        {false, "0001 0001", IWARP_ERR_SCTP_SSN, true},
        /* PENDING: nothing but a Terminate until we answer (§6.6). */
        {true, "0001 0001", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0001 0005 0001 0001", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0001 0002", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0001 0003", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0001 0006 0001 0001", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0001 0007", IWARP_ERR_SESSION_SEQUENCE, true},
        {true, "0001 FFFF", IWARP_ERR_SESSION_FUNCTION, true},
        {true, "0001 0004 00", IWARP_ERR_MPA_PD_LEN, true},
        {true, "0000 0004", IWARP_ERR_SCTP_SSN, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct end p;
        mk_passive(&p, true);
        if (cases[i].pending) {
            ASSERT_EQ(feed(&p, "0000 0001"), 0);
            (void)iwarp_sess_ctl_events(&p.m);
        }
        ASSERT_EQ(feed(&p, cases[i].chunk), cases[i].err);
        ASSERT_EQ(pend.count, 0);
        expect_failed(&p, cases[i].err, cases[i].answered, "0000 0004");
    }
    /* Segments before our Accept: LISTEN and PENDING. */
    for (int pending = 0; pending < 2; pending++) {
        struct end p;
        mk_passive(&p, true);
        if (pending)
            ASSERT_EQ(feed(&p, "0000 0001"), 0);
        ASSERT_EQ(iwarp_sess_ctl_rx_seg(&p.m, (uint16_t)pending), IWARP_ERR_SESSION_SEQUENCE);
        ASSERT_EQ(pend.count, 0);
        expect_failed(&p, IWARP_ERR_SESSION_SEQUENCE, true, "0000 0004");
    }
}

TEST(failure_replaces_unsent_answer)
{
    /* An Accept not handed out yet gives way to the Terminate (a §6.4-shaped reply); one
     * already handed out is followed by it. */
    struct end p;
    mk_passive(&p, true);
    ASSERT_EQ(feed(&p, "0000 0001"), 0);
    struct iwarp_sess_answer ans = {.ird = 1, .ord = 1};
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), 0);
    ASSERT_EQ(feed(&p, "0001 0001"), IWARP_ERR_SESSION_SEQUENCE);
    expect_failed(&p, IWARP_ERR_SESSION_SEQUENCE, true, "0000 0004");
    /* accept() then terminate() before tx(): Accept, then Terminate. */
    mk_passive(&p, true);
    ASSERT_EQ(feed(&p, "0000 0001"), 0);
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), 0);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&p.m), 0);
    expect_tx(&p, "0000 0002");
    expect_tx(&p, "0001 0004");
    expect_tx(&p, "");
}

/* ---- API misuse ---- */

TEST(api_errors)
{
    struct iwarp_sess_ctl m;
    struct iwarp_sess_cfg c;
    struct iwarp_sess_pending pp = {.limit = 1};
    static const uint8_t pd[600];
    iwarp_sess_cfg_default(&c, IWARP_SESS_ACTIVE);
    ASSERT_EQ(iwarp_sess_ctl_init(NULL, &c), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sess_ctl_init(&m, NULL), IWARP_ERR_INVAL);
    c.role = (enum iwarp_sess_role)7;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL);
    iwarp_sess_cfg_default(&c, IWARP_SESS_ACTIVE);
    c.ird = 0x4000;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL);
    iwarp_sess_cfg_default(&c, IWARP_SESS_ACTIVE);
    c.pd = pd;
    c.pd_len = 509; /* 508 + the word at most */
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL);
    c.pd_len = 508;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), 0);
    c.enhanced = false;
    c.pd_len = 513;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL);
    c.pd_len = 512;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), 0);
    c.pd = NULL;
    c.pd_len = 1;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL);
    iwarp_sess_cfg_default(&c, IWARP_SESS_PASSIVE);
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL); /* no pending counter */
    c.pending = &pp;
    c.rtr = 0; /* RFC 6581 §9.2: at least one RTR type when enhanced */
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL);
    c.enhanced = false;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), 0);
    c.rtr = 0x8;
    ASSERT_EQ(iwarp_sess_ctl_init(&m, &c), IWARP_ERR_INVAL);

    /* Decisions outside PENDING, bad answers. */
    struct end p;
    mk_passive(&p, true);
    struct iwarp_sess_answer ans = {.ird = 1, .ord = 1};
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_sess_ctl_reject(&p.m, &ans), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_sess_ctl_terminate(&p.m), IWARP_ERR_STATE);
    ASSERT_EQ(feed(&p, "0000 0005 0001 0001"), 0);
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, NULL), IWARP_ERR_INVAL);
    ans.ird = 0x4000;
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), IWARP_ERR_INVAL);
    ans.ird = 1;
    ans.pd = pd;
    ans.pd_len = 509; /* Enhanced Accept: 508 at most */
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), IWARP_ERR_INVAL);
    ans.pd_len = 513;
    ASSERT_EQ(iwarp_sess_ctl_reject(&p.m, &ans), IWARP_ERR_INVAL);
    ans.pd_len = 512; /* a Reject has no word: 512 fits */
    ASSERT_EQ(st(&p), IWARP_SESS_PENDING);
    ASSERT_EQ(iwarp_sess_ctl_reject(&p.m, &ans), 0);
    uint8_t buf[600];
    ASSERT_EQ(iwarp_sess_ctl_tx(&p.m, &p.tx, buf, 515), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_sess_ssn_tx_peek(&p.tx), 0); /* nothing taken */
    ASSERT_EQ(iwarp_sess_ctl_tx(&p.m, &p.tx, buf, IWARP_SCTP_CTL_MAX), IWARP_SCTP_CTL_MAX);
    ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_sess_ctl_rx_ctl(NULL, buf, 4), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sess_ctl_rx_ctl(&p.m, NULL, 4), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sess_ctl_rx_seg(NULL, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_sess_ctl_tx(&p.m, NULL, buf, 10), IWARP_ERR_INVAL);

    /* §10: the stream's counter is full: the control chunk waits. */
    struct end a;
    mk_active(&a, false, 1, 1, NULL);
    for (int i = 0; i < 32767; i++)
        ASSERT_TRUE(iwarp_sess_ssn_tx_take(&a.tx) >= 0);
    ASSERT_EQ(iwarp_sess_ctl_tx(&a.m, &a.tx, buf, sizeof buf), IWARP_ERR_BUSY);
    ASSERT_TRUE(iwarp_sess_ctl_tx_pending(&a.m));
    iwarp_sess_ssn_tx_acked(&a.tx, 1);
    ASSERT_EQ(iwarp_sess_ctl_tx(&a.m, &a.tx, buf, sizeof buf), 4);
    ASSERT_EQ(buf[0], 0x7F);
    ASSERT_EQ(buf[1], 0xFF);
}

/* ---- Both machines ---- */

/* Moves every chunk `from` has queued into `to`; returns the last rx result. */
static int pump(struct end *from, struct end *to)
{
    uint8_t buf[600];
    int rc = 0;
    iwarp_ssize n;
    while ((n = iwarp_sess_ctl_tx(&from->m, &from->tx, buf, sizeof buf)) > 0)
        rc = iwarp_sess_ctl_rx_ctl(&to->m, buf, (size_t)n);
    ASSERT_EQ(n, 0);
    return rc;
}

TEST(plain_enhanced_matrix)
{
    for (int ae = 0; ae < 2; ae++) {
        for (int pe = 0; pe < 2; pe++) {
            struct end a, p;
            mk_active(&a, ae, 16, 8, "A");
            mk_passive(&p, pe);
            pump(&a, &p);
            if (ae && !pe) {
                /* RFC 6581 §10: the unenhanced passive side does not know code 5. */
                ASSERT_EQ(res(&p)->err, IWARP_ERR_SESSION_FUNCTION);
                ASSERT_EQ(pump(&p, &a), 0);
                ASSERT_EQ(st(&a), IWARP_SESS_TERMINATED);
                ASSERT_EQ(res(&a)->err, IWARP_ERR_SESSION_TERMINATED);
                continue;
            }
            ASSERT_EQ(st(&p), IWARP_SESS_PENDING);
            ASSERT_EQ(res(&p)->enhanced, ae);
            struct iwarp_sess_answer ans = {
                .ird = 4, .ord = 32, .pd = (const uint8_t *)"P", .pd_len = 1};
            ASSERT_EQ(iwarp_sess_ctl_accept(&p.m, &ans), 0);
            ASSERT_EQ(pump(&p, &a), 0);
            ASSERT_EQ(st(&a), IWARP_SESS_ESTABLISHED);
            ASSERT_EQ(res(&a)->enhanced, ae);
            ASSERT_MEM_EQ(res(&a)->peer_pd, "P", 1);
            ASSERT_MEM_EQ(res(&p)->peer_pd, "A", 1);
            if (ae) {
                ASSERT_EQ(res(&a)->ird, 16);
                ASSERT_EQ(res(&a)->ord, 4);
                ASSERT_EQ(res(&p)->ird, 4);
                ASSERT_EQ(res(&p)->ord, 16);
            } else {
                ASSERT_EQ(res(&a)->ord, NONE);
                ASSERT_EQ(res(&p)->ord, NONE);
            }
            ASSERT_TRUE(iwarp_sess_ctl_may_send_seg(&a.m));
            ASSERT_TRUE(iwarp_sess_ctl_may_send_seg(&p.m));
            ASSERT_EQ(iwarp_sess_ctl_terminate(&p.m), 0);
            ASSERT_EQ(pump(&p, &a), 0);
            ASSERT_EQ(res(&a)->err, IWARP_ERR_SESSION_TERMINATED);
        }
    }
}

/* Runs an MPA Request/Reply with the same IRD/ORD and reports its outcome. */
static int mpa_run(uint16_t i_ird, uint16_t i_ord, uint16_t r_ird, uint16_t r_ord, uint16_t *ai,
                   uint16_t *ao, uint16_t *pi, uint16_t *po)
{
    struct iwarp_mpa_neg_cfg ic, rc;
    iwarp_mpa_neg_cfg_default(&ic, IWARP_MPA_INITIATOR);
    iwarp_mpa_neg_cfg_default(&rc, IWARP_MPA_RESPONDER);
    ic.ird = i_ird;
    ic.ord = i_ord;
    static struct iwarp_mpa_neg in, rn;
    ASSERT_EQ(iwarp_mpa_neg_init(&in, &ic, 0), 0);
    ASSERT_EQ(iwarp_mpa_neg_init(&rn, &rc, 0), 0);
    uint8_t b[600];
    size_t n = iwarp_mpa_neg_tx(&in, b, sizeof b);
    ASSERT_EQ(iwarp_mpa_neg_rx(&rn, b, n, 0), (iwarp_ssize)n);
    struct iwarp_mpa_neg_answer ans = {.ird = r_ird, .ord = r_ord};
    ASSERT_EQ(iwarp_mpa_neg_accept(&rn, &ans, 0), 0);
    n = iwarp_mpa_neg_tx(&rn, b, sizeof b);
    iwarp_ssize r = iwarp_mpa_neg_rx(&in, b, n, 0);
    *pi = iwarp_mpa_neg_result(&rn)->ird;
    *po = iwarp_mpa_neg_result(&rn)->ord;
    *ai = iwarp_mpa_neg_result(&in)->ird;
    *ao = iwarp_mpa_neg_result(&in)->ord;
    return r < 0 ? (int)r : 0;
}

TEST(ird_ord_same_as_mpa)
{
    /* RFC 6581 §9.1 is transport-neutral: the SCTP sessions must land where MPA does. */
    static const uint16_t v[] = {0, 1, 2, 16, 127, 0x3FFE, 0x3FFF};
    size_t nv = sizeof v / sizeof v[0], clipped = 0;
    for (size_t a = 0; a < nv; a++)
        for (size_t b = 0; b < nv; b++)
            for (size_t c = 0; c < nv; c++)
                for (size_t d = 0; d < nv; d++) {
                    uint16_t ai, ao, pi, po;
                    int mr = mpa_run(v[a], v[b], v[c], v[d], &ai, &ao, &pi, &po);
                    struct end x, y;
                    mk_active(&x, true, v[a], v[b], NULL);
                    mk_passive(&y, true);
                    pump(&x, &y);
                    struct iwarp_sess_answer ans = {.ird = v[c], .ord = v[d]};
                    ASSERT_EQ(iwarp_sess_ctl_accept(&y.m, &ans), 0);
                    int sr = pump(&y, &x);
                    ASSERT_EQ(sr, mr);
                    ASSERT_EQ(res(&y)->ird, pi);
                    ASSERT_EQ(res(&y)->ord, po);
                    if (mr == 0) {
                        ASSERT_EQ(st(&x), IWARP_SESS_ESTABLISHED);
                        ASSERT_EQ(res(&x)->ird, ai);
                        ASSERT_EQ(res(&x)->ord, ao);
                        clipped += ao != v[b];
                    } else {
                        /* A responder following §9.1 never sends an ORD above our IRD. */
                        ASSERT_TRUE(false);
                    }
                }
    ASSERT_TRUE(clipped > 0);
}

/* The glue's loop in miniature: both ends send through a "network" that delivers chunks in a
 * random order; each receiver orders them with a DDP-SSN window before the machine sees them. */
struct wire_chunk {
    uint8_t data[600];
    size_t len;
    uint32_t ppid;
};

struct side {
    struct end e;
    struct iwarp_sess_ssn_rx win;
    struct iwarp_sess_ssn_slot slot[8];
    uint32_t segs_rx; /* DDP segments delivered, checked in order by their payload */
    uint32_t segs_tx;
    bool closed;
};

static struct wire_chunk net[2][4096];
static uint32_t net_n[2];

static void send_chunk(int dir, const uint8_t *p, size_t len, uint32_t ppid)
{
    struct wire_chunk *w = &net[dir][net_n[dir]++];
    memcpy(w->data, p, len);
    w->len = len;
    w->ppid = ppid;
}

static void process(struct side *s, struct wire_chunk *w)
{
    if (w->ppid == IWARP_SCTP_PPID_DDP_CONTROL) {
        ASSERT_EQ(iwarp_sess_ctl_rx_ctl(&s->e.m, w->data, w->len), 0);
        return;
    }
    struct iwarp_sctp_seg sg;
    ASSERT_EQ(iwarp_sctp_seg_decode(w->data, w->len, 0, &sg), (iwarp_ssize)w->len);
    int r = iwarp_sess_ctl_rx_seg(&s->e.m, sg.ssn);
    if (r == IWARP_ERR_STATE)
        return;
    ASSERT_EQ(r, 0);
    /* The payload after an 18-octet untagged header numbers the segment. */
    ASSERT_EQ(sg.seg[18], (uint8_t)s->segs_rx);
    ASSERT_EQ(sg.seg[19], (uint8_t)(s->segs_rx >> 8));
    s->segs_rx++;
}

/* Delivers every chunk queued for s, in a random order, through its window. */
static void deliver(struct side *s, int dir, uint32_t *seed)
{
    uint32_t n = net_n[dir];
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = harness_xorshift32(seed) % i;
        struct wire_chunk t = net[dir][i - 1];
        net[dir][i - 1] = net[dir][j];
        net[dir][j] = t;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct wire_chunk *w = &net[dir][i];
        int ssn = iwarp_sctp_ssn_peek(w->data, w->len);
        ASSERT_TRUE(ssn >= 0);
        int v = iwarp_sess_ssn_rx_accept(&s->win, (uint16_t)ssn,
                                         (struct iwarp_sess_chunk){.ptr = w, .len = w->len});
        ASSERT_TRUE(v >= 0);
        if (v == IWARP_SESS_SSN_IN_ORDER) {
            process(s, w);
            struct iwarp_sess_chunk c;
            while (iwarp_sess_ssn_rx_next(&s->win, &c))
                process(s, c.ptr);
        }
    }
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&s->win), 0);
    net_n[dir] = 0;
}

/* Sends s's control chunks, then up to `segs` DDP segments if the machine allows. */
static void send_all(struct side *s, int dir, uint32_t segs)
{
    uint8_t buf[600];
    iwarp_ssize n;
    while ((n = iwarp_sess_ctl_tx(&s->e.m, &s->e.tx, buf, sizeof buf)) > 0)
        send_chunk(dir, buf, (size_t)n, IWARP_SCTP_PPID_DDP_CONTROL);
    ASSERT_EQ(n, 0);
    for (uint32_t i = 0; i < segs && iwarp_sess_ctl_may_send_seg(&s->e.m); i++) {
        int ssn = iwarp_sess_ssn_tx_take(&s->e.tx);
        ASSERT_TRUE(ssn >= 0);
        iwarp_sess_ssn_tx_acked(&s->e.tx, 1);
        uint8_t seg[2 + 20] = {0};
        ASSERT_EQ(iwarp_sctp_ssn_encode(seg, sizeof seg, (uint16_t)ssn), 2);
        seg[2] = 0x41; /* untagged, last, DDP version 1 */
        seg[2 + 18] = (uint8_t)s->segs_tx;
        seg[2 + 19] = (uint8_t)(s->segs_tx >> 8);
        s->segs_tx++;
        send_chunk(dir, seg, sizeof seg, IWARP_SCTP_PPID_DDP_SEGMENT);
    }
}

TEST(exchange_through_reordering_windows)
{
    for (uint32_t run = 0; run < 50; run++) {
        uint32_t seed = 0xA5A5u + run;
        static struct side A, P;
        memset(&A, 0, sizeof A);
        memset(&P, 0, sizeof P);
        mk_active(&A.e, run & 1, 8, 8, "hi");
        mk_passive(&P.e, true);
        ASSERT_EQ(iwarp_sess_ssn_rx_init(&A.win, A.slot, 8), 0);
        ASSERT_EQ(iwarp_sess_ssn_rx_init(&P.win, P.slot, 8), 0);
        send_all(&A, 0, 8); /* the Initiate only: §6.6 */
        ASSERT_EQ(net_n[0], 1);
        deliver(&P, 0, &seed);
        ASSERT_EQ(st(&P.e), IWARP_SESS_PENDING);
        struct iwarp_sess_answer ans = {.ird = 8, .ord = 8};
        ASSERT_EQ(iwarp_sess_ctl_accept(&P.e.m, &ans), 0);
        /* The passive side may send at once (RFC 6581 §4.4.1): the Accept and 7 segments,
         * delivered in any order; the window puts the Accept first. */
        send_all(&P, 1, 7);
        ASSERT_EQ(net_n[1], 8);
        deliver(&A, 1, &seed);
        ASSERT_EQ(st(&A.e), IWARP_SESS_ESTABLISHED);
        ASSERT_EQ(A.segs_rx, 7);
        for (int round = 0; round < 20; round++) {
            send_all(&A, 0, 1 + harness_xorshift32(&seed) % 8);
            send_all(&P, 1, 1 + harness_xorshift32(&seed) % 8);
            deliver(&P, 0, &seed);
            deliver(&A, 1, &seed);
        }
        /* The active side ends it: its last segments and the Terminate arrive shuffled. */
        send_all(&A, 0, 5);
        ASSERT_EQ(iwarp_sess_ctl_terminate(&A.e.m), 0);
        send_all(&A, 0, 5);
        deliver(&P, 0, &seed);
        ASSERT_EQ(st(&P.e), IWARP_SESS_TERMINATED);
        ASSERT_EQ(res(&P.e)->err, IWARP_ERR_SESSION_TERMINATED);
        ASSERT_EQ(P.segs_rx, A.segs_tx);
        ASSERT_EQ(A.segs_rx, P.segs_tx);
        ASSERT_TRUE(A.segs_tx > 20);
    }
}
