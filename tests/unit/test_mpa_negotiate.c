/* SPDX-License-Identifier: BSD-2-Clause */
/* MPA connection setup state machines (RFC 5044 §7.1, RFC 6581): every transition and failure
 * with its exact error, action and Terminate cause; siw and Chelsio interop rules
 * (wire-reference.md §2, field.md); both machines against each other over the whole matrix;
 * one byte at a time; injected time. Golden frames are written by hand. */
#include "harness.h"
#include "iwarp/errors.h"
#include "mpa/mpa_negotiate.h"

#define REQ_KEY "4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65"
#define REP_KEY "4D 50 41 20 49 44 20 52 65 70 20 46 72 61 6D 65"
#define NONE    0x3FFF
#define SEC     1000000000ull

static struct iwarp_mpa_neg_cfg cfg_of(enum iwarp_mpa_role role)
{
    struct iwarp_mpa_neg_cfg c;
    iwarp_mpa_neg_cfg_default(&c, role);
    return c;
}

static void start(struct iwarp_mpa_neg *n, const struct iwarp_mpa_neg_cfg *c)
{
    ASSERT_EQ(iwarp_mpa_neg_init(n, c, 0), 0);
}

static size_t drain(struct iwarp_mpa_neg *n, uint8_t *buf)
{
    size_t len = 0, k;
    while ((k = iwarp_mpa_neg_tx(n, buf + len, 7)) > 0) /* odd chunks on purpose */
        len += k;
    return len;
}

/* Feeds hex bytes; returns rx()'s result. */
static iwarp_ssize feed_hex(struct iwarp_mpa_neg *n, const char *hex)
{
    uint8_t b[700];
    size_t len = harness_hex(hex, b, sizeof b);
    return iwarp_mpa_neg_rx(n, b, len, 1);
}

static void expect_fail(const struct iwarp_mpa_neg *n, int err, enum iwarp_mpa_action act,
                        int ecode)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(n);
    ASSERT_EQ(iwarp_mpa_neg_state(n), IWARP_MPA_NEG_FAILED);
    ASSERT_EQ(r->err, err);
    ASSERT_EQ(r->action, act);
    if (ecode < 0) {
        ASSERT_FALSE(r->term_valid);
    } else {
        ASSERT_TRUE(r->term_valid);
        ASSERT_EQ(r->term.layer, 2);
        ASSERT_EQ(r->term.etype, 0);
        ASSERT_EQ(r->term.ecode, ecode);
    }
}

static const struct iwarp_mpa_neg_answer ans16 = {.ird = 16, .ord = 16};

/* accept_outcome() with a, the responder in REQUEST: what accept() will negotiate, the machine
 * left as it was (state, result, nothing to send). */
static struct iwarp_mpa_neg_result outcome_of(const struct iwarp_mpa_neg *n,
                                              const struct iwarp_mpa_neg_answer *a)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(n);
    struct iwarp_mpa_neg_result before = *r, o;
    ASSERT_EQ(iwarp_mpa_neg_accept_outcome(n, a, &o), 0);
    ASSERT_EQ(iwarp_mpa_neg_state(n), IWARP_MPA_NEG_REQUEST);
    ASSERT_EQ(iwarp_mpa_neg_tx_pending(n), 0);
    ASSERT_EQ(r->crc, before.crc);
    ASSERT_EQ(r->markers_rx, before.markers_rx);
    ASSERT_EQ(r->ird, before.ird);
    ASSERT_EQ(r->ord, before.ord);
    return o;
}

/* ---- configuration ---- */

TEST(init_rejects_bad_cfg)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    start(&n, &c);
#define BAD(stmt)                                                  \
    do {                                                           \
        c = cfg_of(IWARP_MPA_INITIATOR);                           \
        stmt;                                                      \
        ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 0), IWARP_ERR_INVAL); \
    } while (0)
    BAD(c.revision = 0);
    BAD(c.revision = 3);
    BAD(c.revision = 1); /* enhanced needs Rev 2 */
    BAD(c.ird = 0x4000);
    BAD(c.ord = 0x4000);
    BAD(c.enhanced = false; c.peer2peer = true);
    BAD(c.peer2peer = true; c.rtr = 0);
    BAD(c.rtr = 8);
    BAD(c.rtr_pref = IWARP_MPA_RTR_SEND); /* not in rtr */
    BAD(c.rtr_pref = 3);
    BAD(c.pd_len = 1); /* NULL pd */
    BAD(c.pd_len = 509; c.pd = (const uint8_t *)"x");
    BAD(c.pd_max_rx = 513);
    BAD(c.role = 7);
    c = cfg_of(IWARP_MPA_RESPONDER);
    c.rtr = 0; /* RFC 6581 §9.2: a Rev 2 responder supports at least one RTR */
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 0), IWARP_ERR_INVAL);
    c.revision = 1;
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 0), 0);
    ASSERT_EQ(iwarp_mpa_neg_init(NULL, &c, 0), IWARP_ERR_INVAL);
#undef BAD
}

/* ---- initiator Request bytes ---- */

/* The rping Request (wire-reference §2): S only, Rev 2, IRD = ORD = 1. */
TEST(initiator_request_rping_golden)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.crc = false;
    c.ird = c.ord = 1;
    start(&n, &c);
    uint8_t got[600], want[64];
    ASSERT_EQ(iwarp_mpa_neg_tx_pending(&n), 24);
    size_t len = drain(&n, got);
    size_t wl = harness_hex(REQ_KEY "10 02 0004 0001 0001", want, sizeof want);
    ASSERT_EQ(len, wl);
    ASSERT_MEM_EQ(got, want, wl);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_WAIT_REPLY);
    ASSERT_EQ(iwarp_mpa_neg_tx(&n, got, sizeof got), 0);
}

/* RFC 6581 §10: no enhanced feature wanted -> no S, and Rev 1 (§6 "MAY be set to one"). */
TEST(initiator_request_unenhanced_is_rev1)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.enhanced = false;
    c.pd = (const uint8_t *)"hi";
    c.pd_len = 2;
    start(&n, &c);
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REQ_KEY "40 01 0002 6869", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
}

/* RFC 6581 §9.2: A=1 and B/C/D for every supported type; M and C. */
TEST(initiator_request_p2p_golden)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.markers = true;
    c.peer2peer = true;
    c.rtr = IWARP_MPA_RTR_ALL;
    c.ird = 2;
    c.ord = NONE;
    start(&n, &c);
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REQ_KEY "D0 02 0004 C002 FFFF", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
}

/* ---- responder against a siw initiator ---- */

/* wire-reference §2: a siw initiator's Request must get a Rev 2 Reply with S set. */
TEST(responder_answers_siw_request_enhanced)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(iwarp_mpa_neg_tx_pending(&n), 0);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0008 0001 0001 CAFEBABE"), 28);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_REQUEST);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&n);
    ASSERT_EQ(r->peer_rev, 2);
    ASSERT_TRUE(r->enhanced);
    ASSERT_EQ(r->peer_ird, 1);
    ASSERT_EQ(r->peer_ord, 1);
    ASSERT_FALSE(r->peer_p2p);
    ASSERT_EQ(r->peer_pd_len, 4);
    ASSERT_EQ(r->peer_pd[0], 0xCA);
    ASSERT_TRUE(r->crc); /* our C=1 turns CRC on both ways (RFC 5044 §7.1.1) */
    ASSERT_EQ(iwarp_mpa_neg_tx_pending(&n), 0);

    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 2), 0);
    /* Reply: C|S, Rev 2, IRD 16 (>= initiator ORD 1), ORD min(16, initiator IRD 1) = 1. */
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REP_KEY "50 02 0004 0010 0001", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_WAIT_FIRST_FPDU);
    ASSERT_EQ(r->ird, 16);
    ASSERT_EQ(r->ord, 1);
    ASSERT_FALSE(r->p2p);
    ASSERT_FALSE(r->local_sends_first);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), UINT64_MAX); /* no RTR: no MPA timer */
    /* siw's first FPDU is a 16-octet Send (wire-reference §2). */
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, IWARP_RDMAP_OP_SEND, 16, 3), 0);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_ESTABLISHED);
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, IWARP_RDMAP_OP_SEND, 0, 3), IWARP_ERR_STATE);
}

/* The ULP's accept may turn CRC on (C=1) and ask for markers (M=1) per connection, over a
 * configuration with neither (RFC 5044 §7.1.1). */
TEST(responder_accept_chooses_crc_and_markers)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.crc = false;
    c.markers = false;
    start(&n, &c);
    /* siw's Request: S, Rev 2, no C, no M. */
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001"), 24);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&n);
    ASSERT_FALSE(r->crc);
    struct iwarp_mpa_neg_answer a = ans16;
    a.crc = true;
    a.markers = true;
    struct iwarp_mpa_neg_result o = outcome_of(&n, &a);
    ASSERT_TRUE(o.crc);
    ASSERT_TRUE(o.markers_rx);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &a, 2), 0);
    /* Reply: M|C|S = 0xD0, Rev 2, IRD 16, ORD 1. */
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REP_KEY "D0 02 0004 0010 0001", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    ASSERT_TRUE(r->crc);
    ASSERT_TRUE(r->markers_rx);
    ASSERT_FALSE(r->markers_tx);
}

/* RFC 6581 §6, §10: a Rev 1 Request MUST be accepted and gets a Rev 1 unenhanced Reply. */
TEST(responder_answers_rev1_with_rev1)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.crc = false;
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "40 01 0000"), 20);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&n);
    ASSERT_FALSE(r->enhanced);
    ASSERT_EQ(r->peer_ird, NONE);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
    uint8_t got[600], want[64];
    /* C echoed (siw does the same): CRC on because the Request had C=1. */
    size_t wl = harness_hex(REP_KEY "40 01 0000", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    ASSERT_TRUE(r->crc);
    ASSERT_EQ(r->ird, NONE); /* not negotiated: the ULP's business */
    ASSERT_EQ(r->rev, 1);
}

/* A Rev 2 Request without S is answered Rev 2 without S. */
TEST(responder_answers_rev2_unenhanced)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.crc = false;
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "00 02 0000"), 20);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REP_KEY "00 02 0000", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    ASSERT_FALSE(iwarp_mpa_neg_result(&n)->crc);
}

/* siw may set Res bit 0x08 (wire-reference §1.8): ignored. */
TEST(responder_ignores_siw_res_bit)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "18 02 0004 0001 0001"), 24);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_REQUEST);
    ASSERT_TRUE(iwarp_mpa_neg_result(&n)->enhanced);
}

/* RFC 5044 §4.3: we always agree to insert markers; M in our Reply asks for them back. */
TEST(responder_markers_both_directions)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.markers = true;
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "80 01 0000"), 20);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REP_KEY "C0 01 0000", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    ASSERT_TRUE(iwarp_mpa_neg_result(&n)->markers_tx);
    ASSERT_TRUE(iwarp_mpa_neg_result(&n)->markers_rx);
}

/* ---- responder: Chelsio initiator (field.md: CRC, p2p, zero-length Read RTR, depth 32) ---- */

TEST(responder_chelsio_read_rtr)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "50 02 0004 8020 4020"), 24);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&n);
    ASSERT_TRUE(r->peer_p2p);
    ASSERT_EQ(r->peer_rtr, IWARP_MPA_RTR_READ);
    ASSERT_EQ(r->rtr, IWARP_MPA_RTR_READ); /* what we will offer */
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 100), 0);
    /* A echoed, IRD 16; D, ORD min(16, 32) = 16. */
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REP_KEY "50 02 0004 8010 4010", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    /* RFC 6581 §9.2: established only when the RTR arrives, under the startup timer. */
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), 100 + 10 * SEC);
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, IWARP_RDMAP_OP_READ_REQ, 0, 200), 0);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_ESTABLISHED);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), UINT64_MAX);
}

/* The wrong RTR type, a non-zero length or a non-RTR first FPDU: TERM 2/0/0x07. */
TEST(responder_rtr_mismatch)
{
    static const struct {
        uint8_t op;
        uint32_t len;
    } bad[] = {{IWARP_RDMAP_OP_WRITE, 0},
               {IWARP_RDMAP_OP_READ_REQ, 1},
               {IWARP_RDMAP_OP_SEND, 0},
               {IWARP_RDMAP_OP_SEND_SE, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct iwarp_mpa_neg n;
        struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
        start(&n, &c);
        ASSERT_EQ(feed_hex(&n, REQ_KEY "50 02 0004 8020 4020"), 24);
        ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
        size_t reply = iwarp_mpa_neg_tx_pending(&n);
        ASSERT_TRUE(reply > 0);
        ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, bad[i].op, bad[i].len, 1),
                  IWARP_ERR_MPA_RTR_MISMATCH);
        expect_fail(&n, IWARP_ERR_MPA_RTR_MISMATCH, IWARP_MPA_ACT_TERMINATE, 0x07);
        /* The Terminate is an FPDU of full operation: the Reply not yet written still goes
         * out before it (found by fuzz_llp_conn: a lone Terminate was sent instead). */
        ASSERT_EQ(iwarp_mpa_neg_tx_pending(&n), reply);
    }
}

TEST(responder_first_fpdu_terminate)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "50 02 0004 8020 4020"), 24);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, 16, 0, 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, IWARP_RDMAP_OP_TERMINATE, 28, 1),
              IWARP_ERR_MPA_PEER_TERM);
    expect_fail(&n, IWARP_ERR_MPA_PEER_TERM, IWARP_MPA_ACT_CLOSE, -1);
}

/* RFC 6581 §9.2: offered types we support, else every type we support ("MUST set at least
 * one"); siw's responder offers Write if offered, else Read (wire-reference §1.8). */
TEST(responder_rtr_selection)
{
    static const struct {
        const char *word;
        uint8_t ours, want;
    } cases[] = {
        {"C000 0000", IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ,
         IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ}, /* Send only */
        {"8000 C000", IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ,
         IWARP_MPA_RTR_WRITE | IWARP_MPA_RTR_READ},                                 /* W+R */
        {"C000 8000", IWARP_MPA_RTR_ALL, IWARP_MPA_RTR_SEND | IWARP_MPA_RTR_WRITE}, /* S+W */
        {"8000 0000", IWARP_MPA_RTR_READ, IWARP_MPA_RTR_READ}, /* none offered */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct iwarp_mpa_neg n;
        struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
        c.rtr = cases[i].ours;
        start(&n, &c);
        char hex[200];
        snprintf(hex, sizeof hex, "%s 10 02 0004 %s", REQ_KEY, cases[i].word);
        ASSERT_EQ(feed_hex(&n, hex), 24);
        ASSERT_EQ(iwarp_mpa_neg_result(&n)->rtr, cases[i].want);
        ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
        uint8_t got[600];
        ASSERT_EQ(drain(&n, got), 24);
        struct iwarp_mpa_frame f;
        ASSERT_EQ(iwarp_mpa_frame_decode(got, 24, &f), 24);
        ASSERT_TRUE(f.v2.p2p);
        ASSERT_EQ(f.v2.rtr, cases[i].want);
    }
}

/* RFC 6581 §9.1: 0x3FFF in each position; responder ORD capped by the initiator IRD; IRD
 * raised to 1 for a Read RTR. */
TEST(responder_ird_ord_rules)
{
    static const struct {
        const char *word;
        uint16_t a_ird, a_ord;
        const char *reply_word;
        uint16_t ird, ord;
    } cases[] = {
        {"0004 0002", 8, 8, "0008 0004", 8, 4},       /* ORD <= initiator IRD */
        {"0004 3FFF", 8, 8, "3FFF 0004", 8, 4},       /* initiator ORD 0x3FFF -> IRD 0x3FFF */
        {"3FFF 0002", 8, 8, "0008 3FFF", 8, 8},       /* initiator IRD 0x3FFF -> ORD 0x3FFF */
        {"3FFF 3FFF", 3, 5, "3FFF 3FFF", 3, 5},       /* both: values unchanged */
        {"0004 0002", NONE, 2, "3FFF 0002", NONE, 2}, /* our IRD left to the ULP */
        {"8000 4000", 0, 0, "8001 4000", 1, 0},       /* Read RTR: IRD 0 -> 1 */
        {"8000 8000", 0, 0, "8000 8000", 0, 0},       /* Write RTR: stays 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct iwarp_mpa_neg n;
        struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
        c.crc = false;
        start(&n, &c);
        char hex[200];
        snprintf(hex, sizeof hex, "%s 10 02 0004 %s", REQ_KEY, cases[i].word);
        ASSERT_EQ(feed_hex(&n, hex), 24);
        struct iwarp_mpa_neg_answer a = {.ird = cases[i].a_ird, .ord = cases[i].a_ord};
        struct iwarp_mpa_neg_result o = outcome_of(&n, &a); /* known before accepting */
        ASSERT_EQ(o.ird, cases[i].ird);
        ASSERT_EQ(o.ord, cases[i].ord);
        ASSERT_FALSE(o.crc);
        ASSERT_EQ(iwarp_mpa_neg_accept(&n, &a, 0), 0);
        uint8_t got[600], want[64];
        snprintf(hex, sizeof hex, "%s 10 02 0004 %s", REP_KEY, cases[i].reply_word);
        size_t wl = harness_hex(hex, want, sizeof want);
        ASSERT_EQ(drain(&n, got), wl);
        ASSERT_MEM_EQ(got, want, wl);
        ASSERT_EQ(iwarp_mpa_neg_result(&n)->ird, cases[i].ird);
        ASSERT_EQ(iwarp_mpa_neg_result(&n)->ord, cases[i].ord);
    }
}

/* RFC 5044 §7.1.2 rule 2: Reject with private data; RFC 6581 §9.1: naming the ORD needed. */
TEST(responder_reject)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001"), 24);
    struct iwarp_mpa_neg_answer a = {.ird = 0, .ord = 8, .pd = (const uint8_t *)"no", .pd_len = 2};
    ASSERT_EQ(iwarp_mpa_neg_reject(&n, &a), 0);
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REP_KEY "70 02 0006 0000 0008 6E6F", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_REJECTED);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->action, IWARP_MPA_ACT_EXIT);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->err, 0);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), IWARP_ERR_STATE);
    ASSERT_EQ(feed_hex(&n, "00"), IWARP_ERR_STATE);

    /* Unenhanced, no answer: a bare Reject. */
    c.crc = false;
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "00 01 0000"), 20);
    ASSERT_EQ(iwarp_mpa_neg_reject(&n, NULL), 0);
    wl = harness_hex(REP_KEY "20 01 0000", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
}

TEST(responder_answer_validation)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    struct iwarp_mpa_neg_result o;
    start(&n, &c);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_mpa_neg_accept_outcome(&n, &ans16, &o), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_mpa_neg_reject(&n, NULL), IWARP_ERR_STATE);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001"), 24);
    static const uint8_t pd[512];
    struct iwarp_mpa_neg_answer a = {.pd = pd, .pd_len = 509}; /* 508 max with the word */
    ASSERT_EQ(iwarp_mpa_neg_accept_outcome(&n, &a, &o), IWARP_ERR_INVAL); /* as accept() */
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &a, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_neg_reject(&n, &a), IWARP_ERR_INVAL);
    a = (struct iwarp_mpa_neg_answer){.ird = 0x4000};
    ASSERT_EQ(iwarp_mpa_neg_accept_outcome(&n, &a, &o), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &a, 0), IWARP_ERR_INVAL);
    a = (struct iwarp_mpa_neg_answer){.pd_len = 1};
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &a, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, NULL, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mpa_neg_accept_outcome(&n, NULL, &o), IWARP_ERR_INVAL);
    a = (struct iwarp_mpa_neg_answer){.pd = pd, .pd_len = 508};
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &a, 0), 0);
    ASSERT_EQ(iwarp_mpa_neg_tx_pending(&n), 532);
    ASSERT_EQ(iwarp_mpa_neg_first_sent(&n), IWARP_ERR_STATE);
}

/* ---- responder failures ---- */

TEST(responder_bad_frames)
{
    static const struct {
        const char *hex;
        int err;
    } cases[] = {
        {"47 45 54 20", IWARP_ERR_MPA_KEY},                       /* "GET " */
        {REP_KEY "00 01 0000", IWARP_ERR_MPA_KEY},                /* a Reply to a responder */
        {REQ_KEY "00 01 0201", IWARP_ERR_MPA_PD_LEN},             /* 513 */
        {REQ_KEY "10 01 0004 0001 0001", IWARP_ERR_MPA_ENHANCED}, /* S with Rev 1 */
        {REQ_KEY "10 02 0002 0001", IWARP_ERR_MPA_ENHANCED},      /* S without the word */
        {REQ_KEY "C0 00 0000", IWARP_ERR_MPA_REV},                /* RDMA Consortium (App. C.2.1) */
        {REQ_KEY "00 03 0000", IWARP_ERR_MPA_REV},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct iwarp_mpa_neg n;
        struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
        start(&n, &c);
        ASSERT_EQ(feed_hex(&n, cases[i].hex), cases[i].err);
        expect_fail(&n, cases[i].err, IWARP_MPA_ACT_CLOSE, 0x04);
        ASSERT_EQ(iwarp_mpa_neg_tx_pending(&n), 0);
        ASSERT_EQ(feed_hex(&n, "00"), cases[i].err); /* sticky */
    }
}

/* The Reply key is caught at octet 10, before the rest arrives. */
TEST(responder_reply_key_caught_early)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, "4D 50 41 20 49 44 20 52 65"), 9);
    ASSERT_EQ(feed_hex(&n, "70"), IWARP_ERR_MPA_KEY);
}

/* RFC 6581 §10: a revision-1 responder treats an enhanced Request as malformed. */
TEST(responder_rev1_refuses_rev2)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.revision = 1;
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001"), IWARP_ERR_MPA_REV);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "00 01 0000"), 20);
}

/* RFC 5044 §7.1.2 rule 9: the local private data limit (siw: 256). */
TEST(responder_local_pd_limit)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.pd_max_rx = 256;
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "00 01 0101"), IWARP_ERR_MPA_PD_LEN);
    expect_fail(&n, IWARP_ERR_MPA_PD_LEN, IWARP_MPA_ACT_CLOSE, 0x04);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "00 01 0100"), 20); /* 256 is fine: waits for the data */
}

/* siw drops an initiator that sends bytes after its Request ("peer sent extra data"). */
TEST(responder_extra_bytes_after_request)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001 00"), IWARP_ERR_MPA_EARLY_DATA);
    expect_fail(&n, IWARP_ERR_MPA_EARLY_DATA, IWARP_MPA_ACT_CLOSE, 0x04);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001"), 24);
    ASSERT_EQ(iwarp_mpa_neg_rx(&n, NULL, 0, 1), 0);
    ASSERT_EQ(feed_hex(&n, "00 12"), IWARP_ERR_MPA_EARLY_DATA);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), IWARP_ERR_STATE);
    /* After accept(), bytes are FPDUs for the layer above. */
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001"), 24);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
    ASSERT_EQ(feed_hex(&n, "00 12"), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_WAIT_FIRST_FPDU);
}

/* Local policy: CRC insisted on and the Request has C=0 -> automatic Reject. */
TEST(responder_crc_required)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.crc_required = true;
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 0001 0001"), IWARP_ERR_MPA_CRC_REQUIRED);
    expect_fail(&n, IWARP_ERR_MPA_CRC_REQUIRED, IWARP_MPA_ACT_EXIT, -1);
    uint8_t got[600], want[64];
    size_t wl = harness_hex(REP_KEY "70 02 0004 3FFF 3FFF", want, sizeof want);
    ASSERT_EQ(drain(&n, got), wl);
    ASSERT_MEM_EQ(got, want, wl);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "50 02 0004 0001 0001"), 24);
}

/* ---- initiator ---- */

static void initiator_with(struct iwarp_mpa_neg *n, struct iwarp_mpa_neg_cfg *c)
{
    start(n, c);
    uint8_t tmp[600];
    drain(n, tmp);
}

/* siw as responder (wire-reference §2): echoes C, caps IRD/ORD at 128, Write RTR if offered. */
TEST(initiator_siw_responder_reply)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.peer2peer = true;
    c.rtr = IWARP_MPA_RTR_ALL;
    c.rtr_pref = 0;
    c.ird = c.ord = 200;
    c.crc_required = true;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "50 02 0004 8080 8080"), 24);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_SEND_FIRST);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&n);
    ASSERT_EQ(r->rev, 2);
    ASSERT_TRUE(r->crc);
    ASSERT_TRUE(r->enhanced);
    ASSERT_EQ(r->peer_ird, 128);
    ASSERT_EQ(r->peer_ord, 128);
    ASSERT_EQ(r->ord, 128); /* at most the responder IRD */
    ASSERT_EQ(r->ird, 200);
    ASSERT_TRUE(r->p2p);
    ASSERT_EQ(r->rtr, IWARP_MPA_RTR_WRITE);
    ASSERT_TRUE(r->local_sends_first);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), UINT64_MAX);
    ASSERT_EQ(iwarp_mpa_neg_first_sent(&n), 0);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_ESTABLISHED);
    ASSERT_EQ(feed_hex(&n, "00"), IWARP_ERR_STATE);
}

/* siw echoes C=1 (wire-reference §1.8); an initiator insisting on CRC fails without it. */
TEST(initiator_crc_required)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.crc_required = true;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "10 02 0004 0010 0010"), IWARP_ERR_MPA_CRC_REQUIRED);
    expect_fail(&n, IWARP_ERR_MPA_CRC_REQUIRED, IWARP_MPA_ACT_CLOSE, -1);
    /* Without insisting, our C=1 alone turns CRC on (RFC 5044 §7.1.1). */
    c.crc_required = false;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "10 02 0004 0010 0010"), 24);
    ASSERT_TRUE(iwarp_mpa_neg_result(&n)->crc);
    /* The responder's C=1 alone turns it on too. */
    c.crc = false;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "50 02 0004 0010 0010"), 24);
    ASSERT_TRUE(iwarp_mpa_neg_result(&n)->crc);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "10 02 0004 0010 0010"), 24);
    ASSERT_FALSE(iwarp_mpa_neg_result(&n)->crc);
}

/* siw rejects M=1 with R=1 and M cleared (wire-reference §2): reported as a markers refusal. */
TEST(initiator_markers_rejected_by_siw)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.markers = true;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "70 02 0004 0010 0010"), IWARP_ERR_MPA_MARKERS);
    expect_fail(&n, IWARP_ERR_MPA_MARKERS, IWARP_MPA_ACT_EXIT, -1);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->peer_ird, 16);
}

/* A Reply with M=1 obliges us to insert markers (RFC 5044 §4.3). */
TEST(initiator_markers_accepted)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.markers = true;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "D0 02 0004 0010 0010"), 24);
    ASSERT_TRUE(iwarp_mpa_neg_result(&n)->markers_tx);
    ASSERT_TRUE(iwarp_mpa_neg_result(&n)->markers_rx);
}

/* RFC 5044 §7.1.2 rule 3, RFC 6581 §9.1: the Reject's private data and IRD/ORD reach the ULP. */
TEST(initiator_rejected_with_pd)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "30 02 0007 0000 0020 627573 79 EE"), IWARP_ERR_MPA_REJECTED);
    expect_fail(&n, IWARP_ERR_MPA_REJECTED, IWARP_MPA_ACT_EXIT, -1);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&n);
    ASSERT_EQ(r->peer_pd_len, 3);
    ASSERT_MEM_EQ(r->peer_pd, "bus", 3);
    ASSERT_EQ(r->peer_ord, 32);
    ASSERT_EQ(r->rx_consumed, 27); /* the trailing 79 EE were left to the ULP */
}

TEST(initiator_bad_frames)
{
    static const struct {
        const char *hex;
        int err;
    } cases[] = {
        {"00", IWARP_ERR_MPA_KEY},
        {REQ_KEY "10 02 0004 0001 0001", IWARP_ERR_MPA_INIT_INIT}, /* RFC 5044 rule 8 */
        {REP_KEY "10 02 0201", IWARP_ERR_MPA_PD_LEN},
        {REP_KEY "C0 00 0000", IWARP_ERR_MPA_REV}, /* RDMAC (App. C.2.2) */
        {REP_KEY "10 03 0004 0001 0001", IWARP_ERR_MPA_REV},
        {REP_KEY "10 01 0004 0001 0001", IWARP_ERR_MPA_ENHANCED},
        {REP_KEY "40 01 0000", IWARP_ERR_MPA_ENHANCED}, /* unenhanced Reply: siw fails too */
        {REP_KEY "50 02 0000", IWARP_ERR_MPA_ENHANCED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct iwarp_mpa_neg n;
        struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
        initiator_with(&n, &c);
        ASSERT_EQ(feed_hex(&n, cases[i].hex), cases[i].err);
        expect_fail(&n, cases[i].err, IWARP_MPA_ACT_CLOSE, 0x04);
    }
}

/* The Request key is recognised at octet 10 (Initiator/Initiator, RFC 5044 §7.1.2 rule 8). */
TEST(initiator_init_init_early)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, "4D 50 41 20 49 44 20 52 65"), 9);
    ASSERT_EQ(feed_hex(&n, "71"), IWARP_ERR_MPA_INIT_INIT);
}

/* An unenhanced S=1 Reply to an unenhanced Request; Rev 2 to a Rev 1 initiator. */
TEST(initiator_unenhanced_rules)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.enhanced = false;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "50 02 0004 0001 0001"), IWARP_ERR_MPA_ENHANCED);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "00 02 0000"), 20); /* Rev 2 understood */
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->ird, NONE);
    c.revision = 1;
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "00 02 0000"), IWARP_ERR_MPA_REV);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "00 01 0000"), 20);
}

/* RFC 6581 §9.1 at the initiator, including 0x3FFF in each position. */
TEST(initiator_ird_ord_rules)
{
    static const struct {
        uint16_t ird, ord;
        const char *word;
        int err;
        uint16_t want_ird, want_ord;
    } cases[] = {
        {4, 4, "0002 0004", 0, 4, 2}, /* ORD lowered to the responder IRD */
        {4, 4, "0008 0004", 0, 4, 4},
        {4, 4, "0008 0005", IWARP_ERR_MPA_IRD_ORD, 0, 0}, /* responder ORD > our IRD */
        {4, 4, "3FFF 0004", 0, 4, 4},                     /* responder IRD 0x3FFF: ORD unchanged */
        {4, 4, "0002 3FFF", 0, 4, 2},                     /* responder ORD 0x3FFF: IRD unchanged */
        {NONE, 4, "0002 0009", 0, NONE, 2},               /* our IRD left to the ULP */
        {4, NONE, "0002 0001", 0, 4, NONE},               /* our ORD left to the ULP */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct iwarp_mpa_neg n;
        struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
        c.ird = cases[i].ird;
        c.ord = cases[i].ord;
        initiator_with(&n, &c);
        char hex[200];
        snprintf(hex, sizeof hex, "%s 50 02 0004 %s", REP_KEY, cases[i].word);
        if (cases[i].err) {
            ASSERT_EQ(feed_hex(&n, hex), cases[i].err);
            expect_fail(&n, cases[i].err, IWARP_MPA_ACT_TERMINATE, 0x06);
            continue;
        }
        ASSERT_EQ(feed_hex(&n, hex), 24);
        ASSERT_EQ(iwarp_mpa_neg_result(&n)->ird, cases[i].want_ird);
        ASSERT_EQ(iwarp_mpa_neg_result(&n)->ord, cases[i].want_ord);
    }
}

/* RFC 6581 §9.2 at the initiator: preference, intersection, Read needs responder IRD >= 1,
 * A not echoed, no match. */
TEST(initiator_rtr_rules)
{
    static const struct {
        uint8_t ours, pref;
        const char *word;
        int err, ecode;
        uint8_t want;
    } cases[] = {
        {IWARP_MPA_RTR_ALL, IWARP_MPA_RTR_READ, "8004 C004", 0, 0, IWARP_MPA_RTR_READ},
        {IWARP_MPA_RTR_ALL, 0, "C004 C004", 0, 0, IWARP_MPA_RTR_WRITE},
        {IWARP_MPA_RTR_ALL, 0, "C004 0004", 0, 0, IWARP_MPA_RTR_SEND},
        {IWARP_MPA_RTR_READ, 0, "8004 4004", 0, 0, IWARP_MPA_RTR_READ}, /* Chelsio */
        {IWARP_MPA_RTR_ALL, IWARP_MPA_RTR_READ, "8000 C004", 0, 0, IWARP_MPA_RTR_WRITE},
        {IWARP_MPA_RTR_READ, 0, "8000 4004", IWARP_ERR_MPA_RTR, 0x07, 0}, /* IRD 0 */
        {IWARP_MPA_RTR_READ, 0, "8004 8004", IWARP_ERR_MPA_RTR, 0x07, 0},
        {IWARP_MPA_RTR_READ, 0, "0004 4004", IWARP_ERR_MPA_P2P, 0x07, 0}, /* A dropped */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct iwarp_mpa_neg n;
        struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
        c.peer2peer = true;
        c.rtr = cases[i].ours;
        c.rtr_pref = cases[i].pref;
        initiator_with(&n, &c);
        char hex[200];
        snprintf(hex, sizeof hex, "%s 50 02 0004 %s", REP_KEY, cases[i].word);
        if (cases[i].err) {
            ASSERT_EQ(feed_hex(&n, hex), cases[i].err);
            expect_fail(&n, cases[i].err, IWARP_MPA_ACT_TERMINATE, cases[i].ecode);
            continue;
        }
        ASSERT_EQ(feed_hex(&n, hex), 24);
        ASSERT_EQ(iwarp_mpa_neg_result(&n)->rtr, cases[i].want);
    }
    /* A=1 in the Reply to our A=0: RFC 6581 §9.2 violation, TERM 2/0/0x05 (§9.3). */
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "50 02 0004 8004 8004"), IWARP_ERR_MPA_P2P);
    expect_fail(&n, IWARP_ERR_MPA_P2P, IWARP_MPA_ACT_TERMINATE, 0x05);
}

/* RFC 5044 §7.1.2 rule 4: the responder sends nothing before our first FPDU. */
TEST(initiator_early_data_from_responder)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "50 02 0004 0010 0010 0012"), IWARP_ERR_MPA_EARLY_DATA);
    expect_fail(&n, IWARP_ERR_MPA_EARLY_DATA, IWARP_MPA_ACT_CLOSE, 0x04);
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "50 02 0004 0010 0010"), 24);
    ASSERT_EQ(feed_hex(&n, "00"), IWARP_ERR_MPA_EARLY_DATA);
    ASSERT_EQ(iwarp_mpa_neg_first_sent(&n), IWARP_ERR_STATE);
}

/* RFC 6581 §9.2: "If Control Flag A is set to 0, then Control Flags B, C, and D MUST also be
 * set to 0. On reception, if Control Flag A is set to 0, then Control Flags B, C, and D MUST
 * be ignored." Both machines, fed A=0 with B, C and D set. */
TEST(a_zero_ignores_b_c_d_on_reception)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    start(&n, &c);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "50 02 0004 4004 C004"), 24);
    ASSERT_FALSE(iwarp_mpa_neg_result(&n)->p2p);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->rtr, 0);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 0), 0);
    uint8_t got[600];
    size_t gl = drain(&n, got);
    struct iwarp_mpa_frame f;
    ASSERT_EQ(iwarp_mpa_frame_decode(got, gl, &f), (iwarp_ssize)gl);
    ASSERT_TRUE(f.s);
    ASSERT_FALSE(f.v2.p2p); /* A echoed as 0 ... */
    ASSERT_EQ(f.v2.rtr, 0); /* ... and B, C, D sent as 0 */
    /* No RTR is awaited: the initiator's first FPDU may be any message. */
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, IWARP_RDMAP_OP_SEND, 100, 0), 0);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_ESTABLISHED);

    c = cfg_of(IWARP_MPA_INITIATOR); /* client-server: A=0 */
    initiator_with(&n, &c);
    ASSERT_EQ(feed_hex(&n, REP_KEY "50 02 0004 4004 C004"), 24);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_SEND_FIRST);
    ASSERT_FALSE(iwarp_mpa_neg_result(&n)->p2p);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->rtr, 0); /* no RTR to send */
}

/* ---- time ---- */

TEST(timeouts_initiator)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.timeout_ns = 1000;
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 500), 0);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), 1500);
    ASSERT_EQ(iwarp_mpa_neg_handle_timeout(&n, 1499), 0);
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_WAIT_REPLY);
    ASSERT_EQ(iwarp_mpa_neg_handle_timeout(&n, 1500), IWARP_ERR_TIMEDOUT);
    expect_fail(&n, IWARP_ERR_TIMEDOUT, IWARP_MPA_ACT_CLOSE, -1);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), UINT64_MAX);
    ASSERT_EQ(iwarp_mpa_neg_tx_pending(&n), 0); /* the unsent Request is dropped */

    /* Bytes arriving late fail too; a partial Reply does not extend the deadline. */
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 0), 0);
    uint8_t b[64];
    size_t len = harness_hex(REP_KEY "50 02 0004 0010 0010", b, sizeof b);
    ASSERT_EQ(iwarp_mpa_neg_rx(&n, b, 10, 999), 10);
    ASSERT_EQ(iwarp_mpa_neg_rx(&n, b + 10, len - 10, 1000), IWARP_ERR_TIMEDOUT);

    /* Timeout 0: none; saturation near the end of time. */
    c.timeout_ns = 0;
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 5), 0);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), UINT64_MAX);
    ASSERT_EQ(iwarp_mpa_neg_handle_timeout(&n, UINT64_MAX), 0);
    c.timeout_ns = 10;
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, UINT64_MAX - 3), 0);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), UINT64_MAX - 1);
}

TEST(timeouts_responder)
{
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_RESPONDER);
    c.timeout_ns = 100;
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 0), 0);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), 100);
    ASSERT_EQ(iwarp_mpa_neg_handle_timeout(&n, 100), IWARP_ERR_TIMEDOUT);
    /* The Request arrived in time: no timer while the ULP decides; the RTR wait re-arms it. */
    ASSERT_EQ(iwarp_mpa_neg_init(&n, &c, 0), 0);
    ASSERT_EQ(feed_hex(&n, REQ_KEY "10 02 0004 8001 4001"), 24);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), UINT64_MAX);
    ASSERT_EQ(iwarp_mpa_neg_handle_timeout(&n, 10000), 0);
    ASSERT_EQ(iwarp_mpa_neg_accept(&n, &ans16, 10000), 0);
    ASSERT_EQ(iwarp_mpa_neg_next_timeout(&n), 10100);
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&n, IWARP_RDMAP_OP_READ_REQ, 0, 10100), IWARP_ERR_TIMEDOUT);
    expect_fail(&n, IWARP_ERR_TIMEDOUT, IWARP_MPA_ACT_CLOSE, -1);
}

/* ---- one byte at a time ---- */

TEST(byte_at_a_time)
{
    uint8_t req[64], rep[64];
    size_t rql = harness_hex(REQ_KEY "50 02 0007 8020 4020 414243", req, sizeof req);
    struct iwarp_mpa_neg r;
    struct iwarp_mpa_neg_cfg rc = cfg_of(IWARP_MPA_RESPONDER);
    start(&r, &rc);
    for (size_t i = 0; i < rql; i++) {
        ASSERT_EQ(iwarp_mpa_neg_state(&r), IWARP_MPA_NEG_WAIT_REQUEST);
        ASSERT_EQ(iwarp_mpa_neg_rx(&r, req + i, 1, i), 1);
    }
    ASSERT_EQ(iwarp_mpa_neg_state(&r), IWARP_MPA_NEG_REQUEST);
    ASSERT_MEM_EQ(iwarp_mpa_neg_result(&r)->peer_pd, "ABC", 3);

    size_t rpl = harness_hex(REP_KEY "50 02 0005 8010 4010 5A", rep, sizeof rep);
    struct iwarp_mpa_neg n;
    struct iwarp_mpa_neg_cfg c = cfg_of(IWARP_MPA_INITIATOR);
    c.peer2peer = true;
    initiator_with(&n, &c);
    for (size_t i = 0; i < rpl; i++) {
        ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_WAIT_REPLY);
        ASSERT_EQ(iwarp_mpa_neg_rx(&n, rep + i, 1, i), 1);
    }
    ASSERT_EQ(iwarp_mpa_neg_state(&n), IWARP_MPA_NEG_SEND_FIRST);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->rtr, IWARP_MPA_RTR_READ);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->peer_pd_len, 1);
    ASSERT_EQ(iwarp_mpa_neg_result(&n)->rx_consumed, rpl);
}

/* ---- both machines against each other, the whole matrix ---- */

static const uint16_t irdord[][2] = {{1, 1}, {0, 0}, {NONE, 5}, {5, NONE}, {NONE, NONE}, {128, 3}};

static uint8_t opcode_of(uint8_t rtr)
{
    return rtr == IWARP_MPA_RTR_SEND    ? IWARP_RDMAP_OP_SEND
           : rtr == IWARP_MPA_RTR_WRITE ? IWARP_RDMAP_OP_WRITE
                                        : IWARP_RDMAP_OP_READ_REQ;
}

/* Runs one pairing; returns the number of established connections (0 or 1). */
static int pair(const struct iwarp_mpa_neg_cfg *ic, const struct iwarp_mpa_neg_cfg *rc,
                const struct iwarp_mpa_neg_answer *ans)
{
    struct iwarp_mpa_neg i, r;
    ASSERT_EQ(iwarp_mpa_neg_init(&i, ic, 0), 0);
    ASSERT_EQ(iwarp_mpa_neg_init(&r, rc, 0), 0);
    uint8_t buf[600];
    size_t len = drain(&i, buf);
    iwarp_ssize got = iwarp_mpa_neg_rx(&r, buf, len, 1);
    bool enh = ic->enhanced;
    if (enh && rc->revision < 2) {
        /* RFC 6581 §10: an unenhanced responder closes. */
        ASSERT_EQ(got, IWARP_ERR_MPA_REV);
        return 0;
    }
    ASSERT_EQ(got, (iwarp_ssize)len);
    ASSERT_EQ(iwarp_mpa_neg_accept(&r, ans, 2), 0);
    len = drain(&r, buf);
    got = iwarp_mpa_neg_rx(&i, buf, len, 3);
    const struct iwarp_mpa_neg_result *ir = iwarp_mpa_neg_result(&i);
    const struct iwarp_mpa_neg_result *rr = iwarp_mpa_neg_result(&r);
    bool p2p = ic->peer2peer;
    /* RFC 6581 §9.2: the responder offers the common types, else all of its own; our
     * responder raises its IRD to 1 whenever it offers Read, so Read is never excluded. */
    uint8_t offered = (uint8_t)(ic->rtr & rc->rtr) ? (uint8_t)(ic->rtr & rc->rtr) : rc->rtr;
    uint8_t common = (uint8_t)(ic->rtr & offered);
    if (p2p && common == 0) {
        ASSERT_EQ(got, IWARP_ERR_MPA_RTR);
        expect_fail(&i, IWARP_ERR_MPA_RTR, IWARP_MPA_ACT_TERMINATE, 0x07);
        return 0;
    }
    ASSERT_EQ(got, (iwarp_ssize)len);
    ASSERT_EQ(iwarp_mpa_neg_state(&i), IWARP_MPA_NEG_SEND_FIRST);
    /* RFC 5044 §7.1.1: CRC iff either C; markers per direction. */
    ASSERT_EQ(ir->crc, ic->crc || rc->crc);
    ASSERT_EQ(rr->crc, ir->crc);
    ASSERT_EQ(ir->markers_tx, rc->markers);
    ASSERT_EQ(ir->markers_rx, ic->markers);
    ASSERT_EQ(rr->markers_tx, ic->markers);
    ASSERT_EQ(rr->markers_rx, rc->markers);
    ASSERT_EQ(ir->enhanced, enh);
    ASSERT_EQ(rr->enhanced, enh);
    ASSERT_EQ(ir->rev, enh ? 2 : 1);
    ASSERT_EQ(rr->rev, ir->rev);
    if (enh) {
        /* RFC 6581 §9.1: initiator ORD <= responder IRD, responder ORD <= initiator IRD. */
        if (ir->ord != NONE && rr->ird != NONE)
            ASSERT_TRUE(ir->ord <= rr->ird);
        if (rr->ord != NONE && ir->ird != NONE)
            ASSERT_TRUE(rr->ord <= ir->ird);
        ASSERT_EQ(ir->peer_ird, rr->ird == NONE || ic->ord == NONE ? NONE : rr->ird);
        ASSERT_EQ(rr->peer_ird, ic->ird);
        ASSERT_EQ(rr->peer_ord, ic->ord);
        ASSERT_EQ(ir->ird, ic->ird);
    } else {
        ASSERT_EQ(ir->ird, NONE);
        ASSERT_EQ(rr->ord, NONE);
    }
    ASSERT_EQ(ir->p2p, p2p);
    ASSERT_EQ(rr->p2p, p2p);
    ASSERT_TRUE(ir->local_sends_first);
    ASSERT_FALSE(rr->local_sends_first);
    if (p2p) {
        ASSERT_TRUE(ir->rtr & common);
        ASSERT_TRUE(ir->rtr & rr->rtr);
        if (ic->rtr_pref & common)
            ASSERT_EQ(ir->rtr, ic->rtr_pref);
    } else {
        ASSERT_EQ(ir->rtr, 0);
    }
    ASSERT_EQ(iwarp_mpa_neg_first_sent(&i), 0);
    ASSERT_EQ(iwarp_mpa_neg_first_fpdu(&r, p2p ? opcode_of(ir->rtr) : IWARP_RDMAP_OP_SEND,
                                       p2p ? 0 : 100, 4),
              0);
    ASSERT_EQ(iwarp_mpa_neg_state(&i), IWARP_MPA_NEG_ESTABLISHED);
    ASSERT_EQ(iwarp_mpa_neg_state(&r), IWARP_MPA_NEG_ESTABLISHED);
    return 1;
}

TEST(matrix_both_machines)
{
    static const uint8_t rtr_sets[] = {IWARP_MPA_RTR_SEND, IWARP_MPA_RTR_WRITE, IWARP_MPA_RTR_READ,
                                       IWARP_MPA_RTR_ALL};
    unsigned runs = 0, established = 0;
    for (unsigned bits = 0; bits < 64; bits++) {
        for (size_t io = 0; io < sizeof irdord / sizeof irdord[0]; io++) {
            for (size_t ro = 0; ro < sizeof irdord / sizeof irdord[0]; ro++) {
                for (int p2p = -1; p2p < 4; p2p++) { /* -1: client-server */
                    for (size_t rs = 0; rs < 4; rs++) {
                        struct iwarp_mpa_neg_cfg ic = cfg_of(IWARP_MPA_INITIATOR);
                        struct iwarp_mpa_neg_cfg rc = cfg_of(IWARP_MPA_RESPONDER);
                        ic.crc = bits & 1;
                        rc.crc = (bits >> 1) & 1;
                        ic.markers = (bits >> 2) & 1;
                        rc.markers = (bits >> 3) & 1;
                        ic.enhanced = (bits >> 4) & 1;
                        ic.revision = ic.enhanced ? 2 : (uint8_t)(1 + ((bits >> 5) & 1));
                        rc.revision = (bits >> 5) & 1 ? 2 : 1;
                        if (!ic.enhanced && (p2p >= 0 || io > 0))
                            continue;
                        ic.ird = irdord[io][0];
                        ic.ord = irdord[io][1];
                        rc.rtr = rtr_sets[rs];
                        if (p2p >= 0) {
                            ic.peer2peer = true;
                            ic.rtr = rtr_sets[p2p];
                            ic.rtr_pref = p2p == 3 ? IWARP_MPA_RTR_READ : 0;
                        }
                        struct iwarp_mpa_neg_answer a = {.ird = irdord[ro][0],
                                                         .ord = irdord[ro][1]};
                        runs++;
                        established += (unsigned)pair(&ic, &rc, &a);
                    }
                }
            }
        }
    }
    printf("  matrix: %u pairings, %u established\n", runs, established);
    ASSERT_TRUE(established > 1000);
    ASSERT_TRUE(established < runs);
}
