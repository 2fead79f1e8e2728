/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The MPA connection (llp_conn) between two QP engines over the in-memory transport (llp_mem):
 * negotiation (Rev 1 / Rev 2, CRC, markers each way, each RTR type with the MSNs it takes,
 * Reject with private data, timeouts, the first-FPDU delay), then Send, Write and Read through
 * both connections with one-octet and random splits in every CRC x markers combination, data
 * verified octet by octet, and a corrupted octet answered by the LLP Terminate 2/0/0x02
 * (RFC 5044 §8: CRC error); a wrong marker and a bad ULPDU_Length (2/0/0x03), an RTR of the
 * wrong type (RFC 6581 §9.2: 2/0/0x07) and a decode error in the responder's first FPDU.
 * Direct placement (CRC off): every op and size with one-octet and random splits, markers on
 * and off, guard bytes around every target; the bounce buffer never sees a payload octet; a
 * ULPDU_Length reaching past the target places nothing and the Terminate carries it.
 * The startup rules (docs/startup-rules.md, startup_*): raw octets fed at one connection
 * around every startup violation; nothing of them is delivered as an FPDU, and the failures
 * that require it send exactly one Terminate (RFC 6581 §8, §9.3).
 */
#include <string.h>

#include "core/core_qp.h"
#include "core/core_qp_int.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "llp/llp_conn.h"
#include "llp/llp_mem.h"
#include "llp/llp_rtr.h"
#include "mem/mem_region.h"
#include "util/bytes.h"
#include "util/copy.h"
#include "util/ring.h"
#include "wire/wire_mpa.h"
#include "wire/wire_segment.h"

#define MEM_SIZE (3u << 20)
#define SRC_OFF  0u
#define DST_OFF  (3u << 19) /* 1.5 MiB */
#define PIPE_CAP 8192u
#define SQ_CAP   32u
#define RQ_CAP   32u
#define MIB      (1u << 20)

struct peer {
    struct iwarp_mem_table T;
    struct iwarp_mem_entry E[16];
    uint32_t seed;
    struct iwarp_wc scq_ring[64], rcq_ring[64];
    struct iwarp_core_cq scq, rcq;
    struct iwarp_core_sqe sq[SQ_CAP];
    struct iwarp_core_rqe rq[RQ_CAP];
    uint64_t rq_lens[RQ_CAP], irq_lens[IWARP_CORE_MAX_IRD];
    struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
    struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
    struct iwarp_core_qp qp;
    struct iwarp_llp_conn c;
    uint8_t bounce[IWARP_LLP_CONN_BOUNCE];
    struct iwarp_llp_conn_txf txf[IWARP_LLP_CONN_TX_SEGS];
    uint8_t tx_stage[IWARP_LLP_CONN_TX_STAGE];
    uint8_t *mem;
    uint32_t key;
    int last_type;       /* the last error event's type */
    uint32_t last_cause; /* the last error event's cause */
    bool last_from_peer;
    int nerr;
};

static struct peer P[2]; /* 0: initiator, 1: responder */
static uint8_t MEM[2][MEM_SIZE];
static uint8_t PIPES[2][PIPE_CAP];
static struct iwarp_llp_mem M;
static bool NO_TX_STAGE; /* setup() gives the connections no TX staging ring */

/* Connection options. */
struct opts {
    uint8_t rev;    /* 1 or 2 */
    bool crc;       /* initiator asks C=1 (the responder never does, so either decides) */
    bool mark_i;    /* initiator wants markers in what it receives */
    bool mark_r;    /* responder wants markers */
    uint8_t rtr;    /* peer-to-peer with this RTR (0: none) */
    uint32_t emss;  /* 0: 1460 */
    uint64_t delay; /* first FPDU delay */
    uint64_t tmo_i; /* initiator timeout (0: none) */
    uint64_t tmo_r; /* responder timeout (0: none) */
    bool ird0_i;    /* the initiator offers IRD 0 (else the default, 16) */
};

static void on_event(void *user, struct iwarp_core_qp *qp, int type, uint32_t cause, bool peer)
{
    (void)qp;
    struct peer *p = user;
    p->last_type = type;
    p->last_cause = cause;
    p->last_from_peer = peer;
    p->nerr++;
}

static void peer_init(struct peer *p, uint8_t *mem)
{
    p->seed = 0x2468ACEu;
    p->mem = mem;
    p->nerr = 0;
    p->last_type = 0;
    p->last_cause = 0;
    p->last_from_peer = false;
    ASSERT_EQ(iwarp_mem_table_init(&p->T, p->E, 16, harness_xorshift32, &p->seed), 0);
    struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)mem,
                                .iova = (uint64_t)(uintptr_t)mem,
                                .length = MEM_SIZE,
                                .access = IWARP_MEM_ACCESS_LOCAL_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_READ};
    ASSERT_EQ(iwarp_mem_reg_mr(&p->T, 1, &r, &p->key), 0);
    ASSERT_TRUE(p->key != IWARP_LLP_RTR_STAG);
    ASSERT_EQ(iwarp_core_cq_init(&p->scq, p->scq_ring, 64, NULL, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&p->rcq, p->rcq_ring, 64, NULL, NULL), 0);
    struct iwarp_core_qp_cfg cfg = {.qp_num = 5,
                                    .pd = 1,
                                    .mem = &p->T,
                                    .send_cq = &p->scq,
                                    .recv_cq = &p->rcq,
                                    .sq_cap = SQ_CAP,
                                    .rq_cap = RQ_CAP,
                                    .max_send_sge = 6,
                                    .max_recv_sge = 6,
                                    .max_inline = 80,
                                    .sq_sig_all = true,
                                    .event = on_event,
                                    .event_user = p};
    struct iwarp_core_qp_mem m = {.sq = p->sq,
                                  .rq = p->rq,
                                  .rq_lens = p->rq_lens,
                                  .orq = p->orq,
                                  .irq = p->irq,
                                  .irq_lens = p->irq_lens};
    ASSERT_EQ(iwarp_core_qp_init(&p->qp, &cfg, &m), 0);
}

/* Both ends initialised, the initiator's QP attached, the transport set up; nothing moved. */
static void setup(const struct opts *o)
{
    peer_init(&P[0], MEM[0]);
    peer_init(&P[1], MEM[1]);
    struct iwarp_llp_conn_cfg ci = {.emss = o->emss ? o->emss : 1460,
                                    .first_fpdu_delay_ns = o->delay};
    struct iwarp_llp_conn_cfg cr = {.emss = ci.emss};
    iwarp_mpa_neg_cfg_default(&ci.neg, IWARP_MPA_INITIATOR);
    iwarp_mpa_neg_cfg_default(&cr.neg, IWARP_MPA_RESPONDER);
    ci.neg.revision = o->rev;
    ci.neg.enhanced = o->rev == 2;
    ci.neg.crc = o->crc;
    cr.neg.crc = false;
    ci.neg.markers = o->mark_i;
    cr.neg.markers = o->mark_r;
    ci.neg.timeout_ns = o->tmo_i;
    if (o->ird0_i)
        ci.neg.ird = 0;
    cr.neg.timeout_ns = o->tmo_r;
    cr.neg.revision = 2;
    cr.neg.rtr = IWARP_MPA_RTR_ALL;
    if (o->rtr) {
        ci.neg.peer2peer = true;
        ci.neg.rtr = IWARP_MPA_RTR_ALL;
        ci.neg.rtr_pref = o->rtr;
    }
    ASSERT_EQ(iwarp_llp_conn_init(&P[0].c, &ci, P[0].bounce, P[0].txf, 0), 0);
    ASSERT_EQ(iwarp_llp_conn_init(&P[1].c, &cr, P[1].bounce, P[1].txf, 0), 0);
    for (unsigned i = 0; i < 2 && !NO_TX_STAGE; i++)
        ASSERT_EQ(iwarp_llp_conn_set_tx_stage(&P[i].c, P[i].tx_stage, sizeof P[i].tx_stage), 0);
    iwarp_llp_conn_attach(&P[0].c, &P[0].qp.eng);
    ASSERT_EQ(iwarp_llp_mem_init(&M, &P[0].c, &P[1].c, PIPES[0], PIPES[1], PIPE_CAP, 77), 0);
}

/* iwarp_llp_conn_rx_wanted (the transport's read interest) says what rx_buf's length does. */
static void expect_rx_wanted_agrees(void)
{
    for (int i = 0; i < 2; i++) {
        size_t len = 0;
        bool by_buf = iwarp_llp_conn_rx_buf(&P[i].c, &len) != NULL && len > 0;
        ASSERT_EQ(iwarp_llp_conn_rx_wanted(&P[i].c), by_buf);
    }
}

/* Pump until quiescent (bounded), checking expect_rx_wanted_agrees in every state the
 * connections pass through. */
static void pump(void)
{
    for (uint32_t steps = 1;; steps++) {
        ASSERT_TRUE(steps < 100000);
        expect_rx_wanted_agrees();
        if (!iwarp_llp_mem_pump_once(&M))
            break;
    }
    expect_rx_wanted_agrees();
}

/* Request -> REQUEST at the responder -> accept. */
static void accept_request(void)
{
    pump();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REQUEST);
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 16, .ord = 16};
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    pump();
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
}

static struct iwarp_sge sge(struct peer *p, uint32_t off, uint32_t len)
{
    return (struct iwarp_sge){(uint64_t)(uintptr_t)(p->mem + off), len, p->key};
}

static void post_send(struct peer *p, enum iwarp_wr_opcode op, uint64_t id, uint32_t off,
                      uint32_t len, uint64_t raddr, uint32_t rkey)
{
    struct iwarp_sge s = sge(p, off, len);
    struct iwarp_send_wr w = {.wr_id = id, .sg_list = &s, .num_sge = len ? 1 : 0, .opcode = op};
    w.wr.rdma.remote_addr = raddr;
    w.wr.rdma.rkey = rkey;
    ASSERT_EQ(iwarp_core_qp_post_send(&p->qp, &w), 0);
}

static void post_recv(struct peer *p, uint64_t id, uint32_t off, uint32_t len)
{
    struct iwarp_sge s = sge(p, off, len);
    struct iwarp_recv_wr w = {.wr_id = id, .sg_list = &s, .num_sge = 1};
    ASSERT_EQ(iwarp_core_qp_post_recv(&p->qp, &w), 0);
}

static void expect_wc(struct iwarp_core_cq *cq, uint64_t id, uint32_t byte_len, bool check_len)
{
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(cq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, id);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    if (check_len)
        ASSERT_EQ_U(wc.byte_len, byte_len);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

/* ---- negotiation ------------------------------------------------------------------------- */

/* The settings each side ended with. */
static void expect_settings(bool crc, bool mark_i, bool mark_r)
{
    ASSERT_EQ(P[0].c.rx.crc, crc);
    ASSERT_EQ(P[1].c.rx.crc, crc);
    ASSERT_EQ(P[0].c.tx.crc, crc);
    ASSERT_EQ(P[1].c.tx.crc, crc);
    /* RFC 5044 §7.1.1 M: the one who asked receives markers; the other inserts them. */
    ASSERT_EQ(P[0].c.rx.markers, mark_i);
    ASSERT_EQ(P[1].c.tx.markers, mark_i);
    ASSERT_EQ(P[1].c.rx.markers, mark_r);
    ASSERT_EQ(P[0].c.tx.markers, mark_r);
    ASSERT_EQ_U(P[0].c.max_seg, iwarp_mpa_mulpdu(1460, mark_r));
    ASSERT_EQ_U(P[1].c.max_seg, iwarp_mpa_mulpdu(1460, mark_i));
}

TEST(negotiate_rev1_and_rev2_each_crc_and_marker_setting)
{
    for (unsigned v = 0; v < 16; v++) {
        struct opts o = {.rev = (uint8_t)(1 + (v & 1)),
                         .crc = (v & 2) != 0,
                         .mark_i = (v & 4) != 0,
                         .mark_r = (v & 8) != 0};
        setup(&o);
        accept_request();
        /* No RTR: the responder's QP runs, but its FPDUs wait for the initiator's first FPDU
         * (RFC 5044 §7.1.2 rule 4), here the ULP's first Send. */
        ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
        ASSERT_EQ(P[1].qp.stream.state, IWARP_CORE_STREAM_RUNNING);
        ASSERT_TRUE(P[1].c.tx_hold);
        ASSERT_EQ(iwarp_mpa_neg_result(&P[0].c.neg)->rev, o.rev);
        expect_settings(o.crc, o.mark_i, o.mark_r);
        fill(MEM[0], 100, v);
        post_recv(&P[1], 1, DST_OFF, 100);
        post_send(&P[0], IWARP_WR_SEND, 2, SRC_OFF, 100, 0, 0);
        pump();
        ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
        ASSERT_EQ(iwarp_mpa_neg_state(&P[0].c.neg), IWARP_MPA_NEG_ESTABLISHED);
        expect_wc(&P[1].rcq, 1, 100, true);
        expect_wc(&P[0].scq, 2, 0, false);
        ASSERT_MEM_EQ(MEM[1] + DST_OFF, MEM[0], 100);
    }
}

TEST(rtr_write_takes_no_msn)
{
    struct opts o = {.rev = 2, .crc = true, .rtr = IWARP_MPA_RTR_WRITE};
    setup(&o);
    accept_request();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ(iwarp_mpa_neg_result(&P[0].c.neg)->rtr, IWARP_MPA_RTR_WRITE);
    ASSERT_EQ_U(P[0].qp.send_msn, 1);
    ASSERT_EQ_U(P[0].qp.read_msn, 1);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&P[1].qp.uq_send), 1);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&P[1].qp.uq_read), 1);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
}

TEST(rtr_send_takes_msn_1_of_queue_0_without_a_receive)
{
    struct opts o = {.rev = 2, .crc = true, .rtr = IWARP_MPA_RTR_SEND};
    setup(&o);
    /* The responder has a receive posted before the RTR arrives: the RTR must not take it. */
    post_recv(&P[1], 7, DST_OFF, 64);
    accept_request();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ(iwarp_mpa_neg_result(&P[0].c.neg)->rtr, IWARP_MPA_RTR_SEND);
    ASSERT_EQ_U(P[0].qp.send_msn, 2);
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&P[1].qp.uq_send), 2);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(&P[1].rcq, &wc, 1), 0);
    /* The next Send carries MSN 2 and lands in the first posted receive. */
    fill(MEM[0], 10, 3);
    post_send(&P[0], IWARP_WR_SEND, 8, SRC_OFF, 10, 0, 0);
    pump();
    expect_wc(&P[1].rcq, 7, 10, true);
    ASSERT_MEM_EQ(MEM[1] + DST_OFF, MEM[0], 10);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
}

TEST(rtr_read_takes_msn_1_of_queue_1_and_is_answered)
{
    struct opts o = {.rev = 2, .crc = false, .rtr = IWARP_MPA_RTR_READ};
    setup(&o);
    accept_request();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ(iwarp_mpa_neg_result(&P[0].c.neg)->rtr, IWARP_MPA_RTR_READ);
    ASSERT_EQ_U(P[0].qp.read_msn, 2);
    /* The responder's engine answered it with a zero-length Read Response (siw) and freed
     * the IRQ slot; the initiator consumed the answer. */
    ASSERT_EQ_U(iwarp_ddp_rx_uq_expected_msn(&P[1].qp.uq_read), 2);
    ASSERT_EQ_U(P[1].qp.irq_count, 0);
    ASSERT_FALSE(P[0].c.rtr_wait);
    ASSERT_EQ_U(P[0].qp.orq_count, 0);
    /* A real Read goes with MSN 2. */
    fill(MEM[1], 300, 9);
    post_send(&P[0], IWARP_WR_RDMA_READ, 4, DST_OFF, 300, (uint64_t)(uintptr_t)MEM[1], P[1].key);
    pump();
    expect_wc(&P[0].scq, 4, 300, false);
    ASSERT_MEM_EQ(MEM[0] + DST_OFF, MEM[1], 300);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
}

TEST(reject_with_private_data)
{
    struct opts o = {.rev = 2, .crc = true};
    setup(&o);
    pump();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REQUEST);
    static const uint8_t why[] = "no room at the inn";
    struct iwarp_mpa_neg_answer a = {.ird = 0x3FFF, .ord = 0x3FFF, .pd = why, .pd_len = sizeof why};
    ASSERT_EQ(iwarp_llp_conn_reject(&P[1].c, &a), 0);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REJECTED);
    pump();
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_REJECTED);
    ASSERT_EQ(P[0].c.err, IWARP_ERR_MPA_REJECTED);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&P[0].c.neg);
    ASSERT_EQ(r->peer_pd_len, sizeof why);
    ASSERT_MEM_EQ(r->peer_pd, why, sizeof why);
    ASSERT_TRUE(M.closed[0] && M.closed[1]);
    ASSERT_EQ(P[0].qp.stream.state, IWARP_CORE_STREAM_ERROR);
}

TEST(timeout_waiting_for_the_reply)
{
    struct opts o = {.rev = 2, .crc = true, .tmo_i = 1000};
    setup(&o);
    pump();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REQUEST); /* the CM never decides */
    ASSERT_EQ_U(iwarp_llp_conn_next_timeout(&P[0].c), 1000);
    iwarp_llp_conn_handle_timeout(&P[0].c, 999);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_NEGOTIATING);
    iwarp_llp_conn_handle_timeout(&P[0].c, 1000);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_FAILED);
    ASSERT_EQ(P[0].c.err, IWARP_ERR_TIMEDOUT);
}

TEST(first_fpdu_delay_holds_the_rtr_and_responder_rtr_timeout)
{
    /* The initiator holds its RTR 5000 ns after the Reply; a responder that waits 3000 ns for
     * it gives up first (RFC 5044 §7.1.2 rule 10). */
    struct opts o = {
        .rev = 2, .crc = true, .rtr = IWARP_MPA_RTR_WRITE, .delay = 5000, .tmo_r = 3000};
    setup(&o);
    M.now_ns = 100;
    pump();
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
    P[1].c.now_ns = 100;
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    pump();
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ_U(iwarp_llp_conn_next_timeout(&P[0].c), 5100);
    ASSERT_FALSE(iwarp_llp_conn_tx_ready(&P[0].c, 5099));
    ASSERT_TRUE(iwarp_llp_conn_tx_ready(&P[0].c, 5100));
    ASSERT_EQ_U(iwarp_llp_conn_next_timeout(&P[1].c), 3100);
    M.now_ns = 3100;
    iwarp_llp_conn_handle_timeout(&P[1].c, 3100);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_FAILED);
    ASSERT_EQ(P[1].c.err, IWARP_ERR_TIMEDOUT);
}

TEST(first_fpdu_delay_then_established)
{
    struct opts o = {.rev = 2, .crc = true, .rtr = IWARP_MPA_RTR_READ, .delay = 5000};
    setup(&o);
    pump();
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    pump();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED); /* the QP runs since accept */
    ASSERT_TRUE(P[1].c.tx_hold);                         /* but nothing was sent yet */
    ASSERT_EQ_U(M.pipe[0].off, 20u + 4u); /* only the Request (with the RFC 6581 word) */
    M.now_ns = 5000;
    iwarp_llp_conn_handle_timeout(&P[0].c, 5000);
    pump();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_FALSE(P[1].c.tx_hold);
    ASSERT_FALSE(P[0].c.rtr_wait);
    ASSERT_EQ_U(iwarp_llp_conn_next_timeout(&P[0].c), UINT64_MAX);
}

/* ---- data transfer ---------------------------------------------------------------------- */

enum op { OP_SEND, OP_WRITE, OP_READ };

/* Move size octets with op from the initiator to the responder (Read: the initiator reads
 * from the responder), nreads Reads at once for OP_READ; verify every octet. */
static void transfer(enum op op, uint32_t size, unsigned nreads)
{
    uint32_t seed = size * 31u + (uint32_t)op;
    if (op == OP_READ) {
        uint32_t each = size;
        fill(MEM[1] + SRC_OFF, (size_t)each * nreads, seed);
        memset(MEM[0] + DST_OFF, 0, (size_t)each * nreads);
        for (unsigned i = 0; i < nreads; i++)
            post_send(&P[0], IWARP_WR_RDMA_READ, 100 + i, DST_OFF + i * each, each,
                      (uint64_t)(uintptr_t)(MEM[1] + SRC_OFF + i * each), P[1].key);
        pump();
        for (unsigned i = 0; i < nreads; i++)
            expect_wc(&P[0].scq, 100 + i, each, false);
        ASSERT_MEM_EQ(MEM[0] + DST_OFF, MEM[1] + SRC_OFF, (size_t)each * nreads);
        return;
    }
    fill(MEM[0] + SRC_OFF, size, seed);
    memset(MEM[1] + DST_OFF, 0, (size_t)size + 1);
    if (op == OP_SEND) {
        post_recv(&P[1], 200, DST_OFF, size + 1);
        post_send(&P[0], IWARP_WR_SEND, 201, SRC_OFF, size, 0, 0);
    } else {
        post_send(&P[0], IWARP_WR_RDMA_WRITE, 201, SRC_OFF, size,
                  (uint64_t)(uintptr_t)(MEM[1] + DST_OFF), P[1].key);
    }
    pump();
    expect_wc(&P[0].scq, 201, 0, false);
    if (op == OP_SEND)
        expect_wc(&P[1].rcq, 200, size, true);
    ASSERT_MEM_EQ(MEM[1] + DST_OFF, MEM[0] + SRC_OFF, size);
    ASSERT_EQ(MEM[1][DST_OFF + size], 0); /* nothing beyond */
}

/* Connect with crc/markers (peer-to-peer, Write RTR) and the given split faults. */
static void connect_with(bool crc, bool markers, size_t split, bool random)
{
    struct opts o = {
        .rev = 2, .crc = crc, .mark_i = markers, .mark_r = markers, .rtr = IWARP_MPA_RTR_WRITE};
    setup(&o);
    for (unsigned d = 0; d < 2; d++) {
        M.pipe[d].max_read = split;
        M.pipe[d].max_write = split;
        M.pipe[d].random = random;
    }
    accept_request();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
}

static void sizes_for(uint32_t *sz, unsigned *n)
{
    uint32_t m = P[0].c.max_seg; /* MULPDU toward the responder (RFC 5044 §4.5) */
    uint32_t list[] = {0, 1, 4095, m - 1, m, m + 1, m - 18, m - 17};
    *n = 0;
    for (unsigned i = 0; i < sizeof list / sizeof list[0]; i++)
        sz[(*n)++] = list[i];
}

static void matrix(size_t split, bool random)
{
    for (unsigned v = 0; v < 4; v++) {
        connect_with((v & 1) != 0, (v & 2) != 0, split, random);
        uint32_t sz[16];
        unsigned n;
        sizes_for(sz, &n);
        for (unsigned i = 0; i < n; i++) {
            transfer(OP_SEND, sz[i], 1);
            transfer(OP_WRITE, sz[i], 1);
            if (sz[i] > 0)
                transfer(OP_READ, sz[i], 3);
        }
        ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
    }
}

TEST(data_one_octet_splits_every_crc_marker_combination)
{
    matrix(1, false);
}

TEST(data_random_splits_every_crc_marker_combination)
{
    matrix(0, true);
}

TEST(data_one_mib_random_splits_every_crc_marker_combination)
{
    for (unsigned v = 0; v < 4; v++) {
        connect_with((v & 1) != 0, (v & 2) != 0, 0, true);
        transfer(OP_SEND, MIB, 1);
        transfer(OP_WRITE, MIB, 1);
        transfer(OP_READ, MIB / 4, 4); /* four outstanding Reads of 256 KiB */
        ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
    }
}

TEST(data_one_mib_one_octet_splits_crc_and_markers)
{
    connect_with(true, true, 1, false);
    transfer(OP_WRITE, MIB, 1);
    transfer(OP_READ, MIB, 1);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
}

/* ---- errors ------------------------------------------------------------------------------- */

static uint64_t corrupt_at;
static uint8_t corrupt_xor; /* 0: 0x10 */
static uint8_t CAP[4096];   /* what the responder sends, from capture_from on */
static uint64_t capture_from = UINT64_MAX;
static size_t cap_len;

static void flip(void *user, unsigned dir, uint64_t off, uint8_t *p, size_t n)
{
    (void)user;
    if (dir == 0 && corrupt_at >= off && corrupt_at < off + n)
        p[corrupt_at - off] ^= corrupt_xor ? corrupt_xor : 0x10;
    for (size_t i = 0; dir == 1 && i < n; i++)
        if (off + i >= capture_from && cap_len < sizeof CAP)
            CAP[cap_len++] = p[i];
}

/* Fault state back to none (each test that uses the hook starts here). */
static void hook_reset(void)
{
    corrupt_at = UINT64_MAX;
    corrupt_xor = 0;
    capture_from = UINT64_MAX;
    cap_len = 0;
    M.hook = flip;
}

TEST(corrupted_octet_with_crc_gets_the_llp_terminate)
{
    connect_with(true, false, 0, true);
    /* RFC 5044 §8: a CRC error is reported with Layer 2 (LLP), EType 0 (MPA), Code 0x02. */
    corrupt_at = M.pipe[0].off + 25; /* inside the Send's payload */
    M.hook = flip;
    fill(MEM[0], 100, 5);
    post_recv(&P[1], 1, DST_OFF, 100);
    post_send(&P[0], IWARP_WR_SEND, 2, SRC_OFF, 100, 0, 0);
    pump();
    ASSERT_TRUE(P[1].nerr > 0);
    ASSERT_EQ_U(P[1].last_cause, 0x020002u);
    ASSERT_FALSE(P[1].last_from_peer);
    /* The initiator got the Terminate and reports the peer's cause. */
    ASSERT_TRUE(P[0].nerr > 0);
    ASSERT_EQ_U(P[0].last_cause, 0x020002u);
    ASSERT_TRUE(P[0].last_from_peer);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_CLOSE);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_CLOSE);
    ASSERT_TRUE(M.closed[0] && M.closed[1]);
    /* Nothing was delivered. */
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(&P[1].rcq, &wc, 1), 1);
    ASSERT_NE(wc.status, IWARP_WC_SUCCESS);
}

/* A Read of RSIZE octets whose Data Source the responder's application rewrites (memset to
 * 0xEE) once the responder has framed Read Response FPDUs ahead of the pipe, with CRC on. */
#define RSIZE (256u << 10)
static void read_while_the_source_changes(void)
{
    connect_with(true, true, 0, false);
    fill(MEM[1] + SRC_OFF, RSIZE, 9);
    memset(MEM[0] + DST_OFF, 0, RSIZE);
    post_send(&P[0], IWARP_WR_RDMA_READ, 3, DST_OFF, RSIZE, (uint64_t)(uintptr_t)(MEM[1] + SRC_OFF),
              P[1].key);
    for (unsigned i = 0; i < 100 && P[1].c.txf_count < IWARP_LLP_CONN_TX_SEGS / 2; i++)
        (void)iwarp_llp_mem_step(&M);
    ASSERT_TRUE(P[1].c.txf_count >= IWARP_LLP_CONN_TX_SEGS / 2); /* framed, not yet written */
    memset(MEM[1] + SRC_OFF, 0xEE, RSIZE);
    pump();
}

TEST(read_source_rewritten_after_framing_is_sent_as_framed_with_crc_on)
{
    /* RFC 5040 orders no local write against a remote Read: the requester may get either
     * octet, but the CRC must cover what is sent (RFC 5044 §6), so the stream survives. */
    read_while_the_source_changes();
    ASSERT_EQ(P[0].nerr, 0);
    ASSERT_EQ(P[1].nerr, 0);
    expect_wc(&P[0].scq, 3, RSIZE, false);
    size_t old = 0;
    uint8_t *want = MEM[1] + MEM_SIZE - RSIZE; /* the pattern again, out of the way */
    fill(want, RSIZE, 9);
    for (size_t i = 0; i < RSIZE; i++) {
        uint8_t got = MEM[0][DST_OFF + i];
        ASSERT_TRUE(got == want[i] || got == 0xEE);
        old += got == want[i] && want[i] != 0xEE;
    }
    /* the FPDUs framed before the rewrite carried the old octets, the rest the new */
    ASSERT_TRUE(old > 0 && old < RSIZE);
    /* the connection goes on */
    transfer(OP_READ, 4096, 1);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ(P[1].c.txs.used, 0);
}

TEST(reads_with_crc_on_progress_through_the_staging_ring_at_the_largest_fpdus)
{
    /* EMSS 65483: FPDUs of 64768-octet ULPDUs, so the 2 x 64768 staging ring holds two Read
     * Response payloads at most and the framing waits for it (tx_fill, tx_seg_max). */
    struct opts o = {.rev = 2, .crc = true, .emss = 65483, .rtr = IWARP_MPA_RTR_WRITE};
    setup(&o);
    accept_request();
    ASSERT_EQ_U(P[1].c.max_seg, IWARP_MPA_MULPDU_MAX);
    uint64_t copied = iwarp_copied_octets;
    transfer(OP_READ, 65536, 8); /* each a 64740-octet FPDU and a 796-octet one */
    transfer(OP_READ, MIB, 1);
    transfer(OP_READ, 1, 16);
    /* every Read Response octet was staged: the requester copies each once more */
    ASSERT_TRUE(iwarp_copied_octets - copied >= 2u * (65536u * 8u + MIB + 16u));
    ASSERT_EQ(P[0].nerr, 0);
    ASSERT_EQ(P[1].nerr, 0);
    ASSERT_EQ_U(P[1].c.txs.used, 0);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_ESTABLISHED);
}

TEST(read_responses_fill_the_staging_ring_with_a_shortened_segment)
{
    /* 64 KiB Reads at 64768-octet FPDUs: a Response takes 65536 octets of the 2 x 64768 ring,
     * and the next one's first segment is shortened to the 64000 left (tx_seg_max) instead of
     * waiting until the first is written, so the ring holds two Responses for one write. */
    struct opts o = {.rev = 2, .crc = true, .emss = 65483, .rtr = IWARP_MPA_RTR_WRITE};
    setup(&o);
    accept_request();
    pump();
    enum { N = 4, EACH = 65536 };
    fill(MEM[1] + SRC_OFF, (size_t)N * EACH, 77);
    memset(MEM[0] + DST_OFF, 0, (size_t)N * EACH);
    for (unsigned i = 0; i < N; i++)
        post_send(&P[0], IWARP_WR_RDMA_READ, 300 + i, DST_OFF + i * EACH, EACH,
                  (uint64_t)(uintptr_t)(MEM[1] + SRC_OFF + i * EACH), P[1].key);
    struct iwarp_llp_conn *c = &P[1].c;
    uint32_t most_held = 0, shortened = 0;
    for (uint32_t steps = 1; iwarp_llp_mem_pump_once(&M); steps++) {
        ASSERT_TRUE(steps < 100000);
        most_held = c->txs.used > most_held ? c->txs.used : most_held;
        for (uint32_t f = 0; f < c->txf_count; f++) {
            const struct iwarp_llp_conn_txf *t =
                &c->txf[iwarp_ring_slot(c->txf_head, f, IWARP_LLP_CONN_TX_SEGS)];
            if (t->seg.src == IWARP_CORE_TX_IRQ && !t->seg.last &&
                t->seg.hdr_len + t->seg.payload_len < c->max_seg) {
                ASSERT_TRUE(t->seg.payload_len >= IWARP_LLP_CONN_STAGE_SEG_MIN);
                shortened++;
            }
        }
    }
    ASSERT_TRUE(shortened > 0);
    ASSERT_TRUE(most_held > EACH && most_held <= c->txs.cap);
    for (unsigned i = 0; i < N; i++)
        expect_wc(&P[0].scq, 300 + i, EACH, false);
    ASSERT_MEM_EQ(MEM[0] + DST_OFF, MEM[1] + SRC_OFF, (size_t)N * EACH);
    ASSERT_EQ(P[0].nerr, 0);
    ASSERT_EQ(P[1].nerr, 0);
    ASSERT_EQ_U(c->txs.used, 0);
}

TEST(without_tx_staging_a_rewritten_read_source_fails_the_crc)
{
    /* What the staging ring prevents: the CRC computed at framing no longer matches the
     * octets written, and the requester Terminates with 2/0/0x02 (RFC 5044 §8). */
    NO_TX_STAGE = true;
    read_while_the_source_changes();
    NO_TX_STAGE = false;
    ASSERT_TRUE(P[0].nerr > 0);
    ASSERT_EQ_U(P[0].last_cause, 0x020002u);
    ASSERT_FALSE(P[0].last_from_peer);
}

TEST(a_tx_stage_is_wanted_with_crc_on_and_an_ird_to_answer_reads_with)
{
    /* CRC from either side's C=1 (RFC 5044 §7.1.1); the IRD the QP starts with (RFC 6581
     * §9.1: the answer's, 0 raised to 1 for a Read RTR; 0x3FFF: the configured 16) */
    static const struct {
        bool crc_i, crc_ans;
        uint16_t ird;
        uint8_t rtr;
        bool ird0_i;
        bool srv, cli; /* wanted on the responder, the initiator */
    } cases[] = {
        {false, false, 4, 0, false, false, false},
        {true, false, 4, 0, false, true, true},
        {false, true, 4, 0, false, true, true},
        {true, false, 0, 0, false, false, true},
        {true, false, 0, IWARP_MPA_RTR_READ, false, true, true},
        /* Write preferred, but the initiator offers every type: Read raises the IRD too */
        {true, false, 0, IWARP_MPA_RTR_WRITE, false, true, true},
        {true, false, 0x3FFF, 0, false, true, true},
        {true, false, 4, 0, true, true, false},
    };
    NO_TX_STAGE = true; /* as the CM: none until the outcome says */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct opts o = {
            .rev = 2, .crc = cases[i].crc_i, .rtr = cases[i].rtr, .ird0_i = cases[i].ird0_i};
        setup(&o);
        pump();
        ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REQUEST);
        struct iwarp_mpa_neg_answer a = {.ird = cases[i].ird, .ord = 4, .crc = cases[i].crc_ans};
        ASSERT_FALSE(iwarp_llp_conn_tx_stage_wanted(&P[1].c, &a)); /* no engine yet */
        iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
        ASSERT_FALSE(iwarp_llp_conn_tx_stage_wanted(&P[1].c, NULL)); /* not settled yet */
        ASSERT_EQ(iwarp_llp_conn_tx_stage_wanted(&P[1].c, &a), cases[i].srv);
        ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
        ASSERT_EQ(iwarp_llp_conn_tx_stage_wanted(&P[1].c, NULL), cases[i].srv);
        pump();
        ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
        ASSERT_EQ(iwarp_llp_conn_tx_stage_wanted(&P[0].c, NULL), cases[i].cli);
    }
    NO_TX_STAGE = false;
}

TEST(a_tx_stage_given_in_full_operation_stages_every_read_response)
{
    /* The CM gives the ring once the negotiation has settled, before any Read Response; once
     * a Read Response has been framed from registered memory it is too late, and a ring is
     * given only once. */
    NO_TX_STAGE = true;
    connect_with(true, false, 0, false);
    NO_TX_STAGE = false;
    ASSERT_TRUE(iwarp_llp_conn_tx_stage_wanted(&P[1].c, NULL));
    ASSERT_EQ(iwarp_llp_conn_set_tx_stage(&P[1].c, P[1].tx_stage, sizeof P[1].tx_stage), 0);
    ASSERT_FALSE(iwarp_llp_conn_tx_stage_wanted(&P[1].c, NULL));
    ASSERT_EQ(iwarp_llp_conn_set_tx_stage(&P[1].c, P[1].tx_stage, sizeof P[1].tx_stage),
              IWARP_ERR_INVAL);
    uint64_t copied = iwarp_copied_octets;
    transfer(OP_READ, 65536, 3);
    /* staged: one copy at the responder, one more at the requester (CRC on) */
    ASSERT_TRUE(iwarp_copied_octets - copied >= 2u * 3u * 65536u);
    ASSERT_EQ_U(P[1].c.txs.used, 0);
    /* the initiator has none: it answers a Read from registered memory, then refuses one */
    ASSERT_TRUE(iwarp_llp_conn_tx_stage_wanted(&P[0].c, NULL));
    fill(MEM[0] + SRC_OFF, 4096, 77);
    post_send(&P[1], IWARP_WR_RDMA_READ, 5, DST_OFF, 4096, (uint64_t)(uintptr_t)(MEM[0] + SRC_OFF),
              P[0].key);
    pump();
    expect_wc(&P[1].scq, 5, 4096, false);
    ASSERT_MEM_EQ(MEM[1] + DST_OFF, MEM[0] + SRC_OFF, 4096);
    ASSERT_EQ(iwarp_llp_conn_set_tx_stage(&P[0].c, P[0].tx_stage, sizeof P[0].tx_stage),
              IWARP_ERR_INVAL);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
}

TEST(a_read_request_to_ird_0_is_terminated_before_any_read_response)
{
    /* RFC 5040 §5.2.2, §7.2; RFC 5041 §7.2: accepted with IRD 0, the responder holds no
     * queue-1 buffer, so the Read Request is Terminated with 1/2/0x02 and never answered; with
     * CRC on no staging ring was wanted, and none is needed. Rev 1: no IRD/ORD negotiation, so
     * the initiator's ORD (its configured 16) lets the Read go. */
    NO_TX_STAGE = true;
    struct opts o = {.rev = 1, .crc = true};
    setup(&o);
    NO_TX_STAGE = false;
    pump();
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REQUEST);
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 0, .ord = 4};
    ASSERT_FALSE(iwarp_llp_conn_tx_stage_wanted(&P[1].c, &a));
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    pump();
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ_U(P[1].qp.ird, 0);
    ASSERT_TRUE(P[0].qp.ord > 0);
    fill(MEM[1] + SRC_OFF, 4096, 5);
    post_send(&P[0], IWARP_WR_RDMA_READ, 9, DST_OFF, 4096, (uint64_t)(uintptr_t)(MEM[1] + SRC_OFF),
              P[1].key);
    pump();
    ASSERT_FALSE(P[1].c.resp_framed);
    ASSERT_TRUE(P[1].c.txs.buf == NULL);
    ASSERT_EQ_U(P[1].qp.irq_count, 0);
    ASSERT_EQ(P[1].nerr, 1);
    ASSERT_EQ_U(P[1].last_cause, 0x010202u);
    ASSERT_FALSE(P[1].last_from_peer);
    ASSERT_TRUE(P[0].nerr > 0);
    ASSERT_EQ_U(P[0].last_cause, 0x010202u);
    ASSERT_TRUE(P[0].last_from_peer);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(&P[0].scq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, 9);
    ASSERT_NE(wc.status, IWARP_WC_SUCCESS);
}

TEST(a_local_failure_in_full_operation_sends_2_0_5)
{
    /* RFC 6581 §9.3: e.g. the CM found no memory for the staging ring once the Reply was in:
     * the Terminate goes out before the connection is reset. */
    connect_with(true, false, 0, false);
    ASSERT_EQ(iwarp_llp_conn_fail_locally(&P[0].c, IWARP_ERR_NOMEM), IWARP_ERR_NOMEM);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_FAILED);
    ASSERT_EQ(P[0].c.err, IWARP_ERR_NOMEM);
    pump();
    ASSERT_TRUE(P[1].nerr > 0);
    ASSERT_EQ_U(P[1].last_cause, 0x020005u);
    ASSERT_TRUE(P[1].last_from_peer);
}

TEST(corrupted_rtr_gets_the_responder_qps_llp_terminate)
{
    struct opts o = {.rev = 2, .crc = true, .rtr = IWARP_MPA_RTR_WRITE};
    setup(&o);
    corrupt_at = 24 + 8; /* the RTR FPDU follows the 24-octet Request */
    M.hook = flip;
    pump();
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    pump();
    /* The responder's QP runs since accept: the CRC error is its error (async event, its
     * Terminate), like any later one. */
    ASSERT_EQ(P[1].nerr, 1);
    ASSERT_EQ(P[1].last_type, IWARP_EVENT_QP_FATAL);
    ASSERT_EQ_U(P[1].last_cause, 0x020002u);
    ASSERT_FALSE(P[1].last_from_peer);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_CLOSE);
    ASSERT_EQ_U(P[0].last_cause, 0x020002u);
    ASSERT_TRUE(P[0].last_from_peer);
}

TEST(stalled_direction_delivers_nothing_until_it_resumes)
{
    connect_with(true, false, 0, false);
    M.pipe[0].stall = 3;
    fill(MEM[0], 50, 1);
    post_recv(&P[1], 1, DST_OFF, 50);
    post_send(&P[0], IWARP_WR_SEND, 2, SRC_OFF, 50, 0, 0);
    struct iwarp_wc wc;
    for (int i = 0; i < 3; i++) {
        iwarp_llp_mem_step(&M);
        ASSERT_EQ(iwarp_core_cq_poll(&P[1].rcq, &wc, 1), 0);
        ASSERT_TRUE(M.pipe[0].len > 0);
    }
    pump();
    expect_wc(&P[1].rcq, 1, 50, true);
    ASSERT_MEM_EQ(MEM[1] + DST_OFF, MEM[0], 50);
}

TEST(early_data_from_the_responder_fails_the_initiator)
{
    /* RFC 5044 §7.1.2 rule 4: the responder sends nothing before the initiator's first FPDU;
     * octets right after the Reply are refused with 2/0/0x04 and TCP is closed. (No RTR, so
     * the first FPDU is the ULP's, and none is posted.) */
    struct opts o = {.rev = 2, .crc = true};
    setup(&o);
    pump();
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    pump();
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
    size_t len;
    uint8_t *p = iwarp_llp_conn_rx_buf(&P[0].c, &len);
    ASSERT_TRUE(p != NULL && len >= 4);
    memset(p, 0, 4);
    ASSERT_EQ(iwarp_llp_conn_rx_ack(&P[0].c, 4, 0), IWARP_ERR_MPA_EARLY_DATA);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_FAILED);
    ASSERT_FALSE(iwarp_llp_conn_tx_ready(&P[0].c, 2000)); /* no FPDU after ACT_CLOSE */
}

TEST(wrong_marker_without_crc_gets_2_0_3_and_nothing_after_it_is_placed)
{
    connect_with(false, true, 0, true);
    hook_reset();
    /* The initiator's full operation starts after its 24-octet Request (RFC 6581 word, no
     * private data); a marker every 512 octets from there (RFC 5044 §4.3). Bend the FPDUPTR
     * of the one at 1024, inside the Write's first FPDU. */
    corrupt_at = 24u + 1024u + 3u;
    memset(MEM[1] + DST_OFF, 0, 4000);
    fill(MEM[0], 4000, 17);
    post_send(&P[0], IWARP_WR_RDMA_WRITE, 1, SRC_OFF, 4000, (uint64_t)(uintptr_t)(MEM[1] + DST_OFF),
              P[1].key);
    pump();
    /* RFC 5044 §8 code 3: marker error (CRC off: reported at once, not held for a CRC). */
    ASSERT_EQ_U(P[1].last_cause, 0x020003u);
    ASSERT_FALSE(P[1].last_from_peer);
    ASSERT_EQ_U(P[0].last_cause, 0x020003u);
    ASSERT_TRUE(P[0].last_from_peer);
    ASSERT_TRUE(M.closed[0] && M.closed[1]);
    /* The FPDUs after the failing one were not placed (RFC 5041 §7.1: drop after an error). */
    static const uint8_t zero[2000];
    ASSERT_MEM_EQ(MEM[1] + DST_OFF + 2000, zero, 2000);
}

TEST(ulpdu_length_zero_or_over_the_maximum_gets_2_0_3)
{
    for (unsigned v = 0; v < 4; v++) {
        connect_with((v & 2) != 0, false, 0, false);
        hook_reset();
        /* A Send of 100 octets: ULPDU_Length 18 + 100 = 0x0076. v&1 0: made 0; 1: 0xFE76
         * (over 64768, RFC 5044 §3). */
        uint64_t start = M.pipe[0].off;
        corrupt_at = (v & 1) ? start : start + 1;
        corrupt_xor = (v & 1) ? 0xFE : 0x76;
        memset(MEM[1] + DST_OFF, 0xEE, 100);
        fill(MEM[0], 100, 3);
        post_recv(&P[1], 1, DST_OFF, 100);
        post_send(&P[0], IWARP_WR_SEND, 2, SRC_OFF, 100, 0, 0);
        pump();
        ASSERT_EQ_U(P[1].last_cause, 0x020003u);
        ASSERT_FALSE(P[1].last_from_peer);
        ASSERT_EQ_U(P[0].last_cause, 0x020003u);
        ASSERT_TRUE(P[0].last_from_peer);
        struct iwarp_wc wc;
        ASSERT_EQ(iwarp_core_cq_poll(&P[1].rcq, &wc, 1), 1);
        ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
        for (unsigned i = 0; i < 100; i++)
            ASSERT_EQ(MEM[1][DST_OFF + i], 0xEE);
    }
}

/* The responder's first FPDU, changed on the way: xor x at stream offset off. */
static void first_fpdu_changed(uint64_t off, uint8_t x)
{
    struct opts o = {.rev = 2, .crc = false, .rtr = IWARP_MPA_RTR_WRITE};
    setup(&o);
    hook_reset();
    corrupt_at = off;
    corrupt_xor = x;
    pump();
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    pump();
}

TEST(rtr_of_another_type_gets_2_0_7)
{
    /* The Write RTR's RDMAP Control octet (after the 24-octet Request, the ULPDU_Length and
     * the DDP Control octet): opcode 0x0 Write becomes 0x2 Read Response, which is no RTR.
     * RFC 6581 §9.2: "the TERM message MUST contain Layer 2, Error Type 0, Error Code 7". */
    first_fpdu_changed(24u + 2u + 1u, 0x02);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_CLOSE);
    ASSERT_EQ(P[1].c.err, IWARP_ERR_MPA_RTR_MISMATCH);
    ASSERT_EQ(P[1].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    /* The responder's QP reports it (it runs since accept) and sends the Terminate. */
    ASSERT_EQ(P[1].nerr, 1);
    ASSERT_EQ_U(P[1].last_cause, 0x020007u);
    ASSERT_FALSE(P[1].last_from_peer);
    ASSERT_EQ_U(P[0].last_cause, 0x020007u);
    ASSERT_TRUE(P[0].last_from_peer);
    ASSERT_TRUE(M.closed[0] && M.closed[1]);
}

TEST(decode_error_in_the_responders_first_fpdu_gets_its_cause)
{
    /* DDP Control octet of the RTR: DV 1 becomes 2. RFC 5041 §7.2: tagged "Invalid DDP
     * version", 1/1/0x04, reported and sent by the responder's QP (running since accept). */
    first_fpdu_changed(24u + 2u, 0x03);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_CLOSE);
    ASSERT_EQ(P[1].c.err, IWARP_ERR_DDP_VERSION);
    ASSERT_EQ(P[1].nerr, 1);
    ASSERT_EQ_U(P[1].last_cause, 0x010104u);
    ASSERT_FALSE(P[1].last_from_peer);
    ASSERT_EQ_U(P[0].last_cause, 0x010104u);
    ASSERT_TRUE(P[0].last_from_peer);
    ASSERT_TRUE(M.closed[0] && M.closed[1]);
}

/* ---- direct placement (CRC off) ---------------------------------------------------------- */

#define GUARD 0xEEu

static void expect_guard(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != GUARD)
            ASSERT_EQ_U(p[i], GUARD);
}

/* One Write, one Send (into three SGEs with gaps; SE on odd sizes) and one Read of size
 * octets, every target surrounded by guard bytes that must stay untouched. */
static void guarded_ops(uint32_t size)
{
    uint32_t seed = size * 7u + 1u;
    uint8_t *src0 = MEM[0] + SRC_OFF, *src1 = MEM[1] + SRC_OFF;
    /* Write: initiator -> responder at DST_OFF + 64. */
    fill(src0, size, seed);
    memset(MEM[1] + DST_OFF, GUARD, (size_t)size + 128);
    post_send(&P[0], IWARP_WR_RDMA_WRITE, 1, SRC_OFF, size,
              (uint64_t)(uintptr_t)(MEM[1] + DST_OFF + 64), P[1].key);
    pump();
    expect_wc(&P[0].scq, 1, 0, false);
    expect_guard(MEM[1] + DST_OFF, 64);
    ASSERT_MEM_EQ(MEM[1] + DST_OFF + 64, src0, size);
    expect_guard(MEM[1] + DST_OFF + 64 + size, 64);

    /* Send: the receive is 3 SGEs (a third, a third, the rest + 1) 16 guard octets apart. */
    fill(src0, size, seed + 1);
    uint32_t a = size / 3, b = size / 3, c = size - a - b + 1;
    uint32_t o1 = DST_OFF + 16, o2 = o1 + a + 16, o3 = o2 + b + 16;
    memset(MEM[1] + DST_OFF, GUARD, (size_t)o3 + c + 16 - DST_OFF);
    struct iwarp_sge sg[3] = {sge(&P[1], o1, a), sge(&P[1], o2, b), sge(&P[1], o3, c)};
    struct iwarp_recv_wr rw = {.wr_id = 2, .sg_list = sg, .num_sge = 3};
    ASSERT_EQ(iwarp_core_qp_post_recv(&P[1].qp, &rw), 0);
    struct iwarp_sge ss = sge(&P[0], SRC_OFF, size);
    struct iwarp_send_wr sw = {.wr_id = 3,
                               .sg_list = &ss,
                               .num_sge = size ? 1 : 0,
                               .opcode = IWARP_WR_SEND,
                               .send_flags = (size & 1) ? IWARP_SEND_SOLICITED : 0};
    ASSERT_EQ(iwarp_core_qp_post_send(&P[0].qp, &sw), 0);
    pump();
    expect_wc(&P[0].scq, 3, 0, false);
    expect_wc(&P[1].rcq, 2, size, true);
    expect_guard(MEM[1] + DST_OFF, 16);
    ASSERT_MEM_EQ(MEM[1] + o1, src0, a);
    expect_guard(MEM[1] + o1 + a, 16);
    ASSERT_MEM_EQ(MEM[1] + o2, src0 + a, b);
    expect_guard(MEM[1] + o2 + b, 16);
    ASSERT_MEM_EQ(MEM[1] + o3, src0 + a + b, c - 1);
    expect_guard(MEM[1] + o3 + c - 1, 17); /* the receive's last octet, unused, and beyond */

    /* Read: the initiator reads size octets of the responder's memory to DST_OFF + 64. */
    if (size == 0)
        return;
    fill(src1, size, seed + 2);
    memset(MEM[0] + DST_OFF, GUARD, (size_t)size + 128);
    post_send(&P[0], IWARP_WR_RDMA_READ, 4, DST_OFF + 64, size, (uint64_t)(uintptr_t)src1,
              P[1].key);
    pump();
    expect_wc(&P[0].scq, 4, size, false);
    expect_guard(MEM[0] + DST_OFF, 64);
    ASSERT_MEM_EQ(MEM[0] + DST_OFF + 64, src1, size);
    expect_guard(MEM[0] + DST_OFF + 64 + size, 64);
}

static void direct_matrix(size_t split, bool random, bool big)
{
    for (unsigned markers = 0; markers < 2; markers++) {
        connect_with(false, markers != 0, split, random);
        uint32_t m = P[0].c.max_seg; /* MULPDU toward the responder (RFC 5044 §4.5) */
        uint32_t m1 = P[1].c.max_seg;
        uint32_t list[] = {0,      1,     2, 3,     13,     m - 18,    m - 17,
                           m - 14, m - 1, m, m + 1, m1 + 1, 3 * m + 7, big ? MIB : 2 * m};
        for (unsigned i = 0; i < sizeof list / sizeof list[0]; i++)
            guarded_ops(list[i]);
        ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
    }
}

TEST(direct_placement_one_octet_splits_guarded)
{
    direct_matrix(1, false, false);
}

TEST(direct_placement_random_splits_guarded_up_to_one_mib)
{
    direct_matrix(0, true, true);
}

/* Payload octets the responder received: 1 MiB Write, 60000-octet Send, two Read Requests. */
#define NSC_PAYLOAD (MIB + 60000u)

TEST(no_staging_copy_without_crc)
{
    /* Large FPDUs (loopback EMSS: MULPDU 64768): with CRC off the transport places all but
     * the octets read ahead with each FPDU's headers (at most RA_SMALL + COPY_MAX = 3 KiB per
     * FPDU, about 5% of a 64 KiB one) straight into the MR or the receive; with CRC on
     * nothing is placed directly. Small FPDUs (EMSS 1460) are read ahead whole and their
     * payload is copied from the window: one recv() for many FPDUs costs less than the copy. */
    for (unsigned v = 0; v < 4; v++) {
        bool crc = (v & 1) != 0, big = (v & 2) == 0;
        struct opts o = {.rev = 2,
                         .crc = crc,
                         .mark_i = v == 2,
                         .mark_r = v == 2,
                         .rtr = IWARP_MPA_RTR_WRITE,
                         .emss = big ? 65483u : 1460u};
        setup(&o);
        M.pipe[0].random = M.pipe[1].random = true;
        accept_request();
        transfer(OP_WRITE, MIB, 1);
        transfer(OP_SEND, 60000, 1);
        transfer(OP_READ, 100000, 2); /* the responder answers: it receives Read Requests */
        ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
        const struct iwarp_llp_conn *c = &P[1].c;
        uint64_t placed = c->rx_direct_octets + c->rx_copied_octets;
        if (crc) {
            ASSERT_EQ_U(placed, 0);
        } else {
            ASSERT_EQ_U(placed, NSC_PAYLOAD);
            if (big)
                ASSERT_TRUE(c->rx_copied_octets < NSC_PAYLOAD / 16);
            else
                ASSERT_EQ_U(c->rx_direct_octets, 0);
        }
    }
}

TEST(a_large_fpdus_payload_end_and_the_next_headers_come_in_one_read)
{
    /* CRC off, loopback EMSS (64 KiB FPDUs): a read that ends a directly placed payload goes
     * on into the read-ahead window (iwarp_llp_conn_rx_bufs), so the end of the payload, the
     * trailer and the next FPDU's headers come in one read instead of two. (How many reads a
     * whole FPDU takes depends on how much the pipe holds at once.) transfer() checks every
     * octet placed. */
    struct opts o = {.rev = 2, .crc = false, .rtr = IWARP_MPA_RTR_WRITE, .emss = 65483u};
    setup(&o);
    accept_request();
    const struct iwarp_llp_conn *c = &P[1].c;
    uint64_t r0 = c->rx_reads, s0 = c->rx_split_reads, f0 = c->rx_fpdus;
    transfer(OP_WRITE, MIB, 1);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
    uint64_t reads = c->rx_reads - r0, split = c->rx_split_reads - s0, fpdus = c->rx_fpdus - f0;
    ASSERT_TRUE(fpdus >= 16u);
    ASSERT_TRUE(split * 4u >= fpdus * 3u); /* most FPDUs' ends were two-region reads */
    ASSERT_TRUE(reads > 0);
}

/* Feed b[0, n) to c as the transport would, in pieces of at most piece octets. Returns the
 * first error rx_ack reported. */
static int inject(struct iwarp_llp_conn *c, const uint8_t *b, size_t n, size_t piece)
{
    int ret = 0;
    while (n > 0) {
        size_t cap = 0;
        uint8_t *p = iwarp_llp_conn_rx_buf(c, &cap);
        ASSERT_TRUE(p != NULL && cap > 0);
        size_t k = n < cap ? n : cap;
        k = k < piece ? k : piece;
        memcpy(p, b, k);
        int rc = iwarp_llp_conn_rx_ack(c, k, 0);
        if (rc != 0 && ret == 0)
            ret = rc;
        b += k;
        n -= k;
    }
    return ret;
}

/* An FPDU without markers, CRC field zero (CRC off), around segment header m and payload. */
static size_t raw_fpdu(uint8_t *out, const struct iwarp_wire_msg *m, size_t payload_len)
{
    iwarp_ssize h = iwarp_wire_segment_encode_hdr(out + 2, 64, m);
    ASSERT_TRUE(h > 0);
    size_t ulpdu = (size_t)h + payload_len;
    iwarp_store_be16(out, (uint16_t)ulpdu);
    fill(out + 2 + h, payload_len, 99);
    size_t total = 2 + ulpdu;
    while (total % 4)
        out[total++] = 0;
    memset(out + total, 0, 4);
    return total + 4;
}

/* The Terminate the responder sent (captured): its cause, DDP Segment Length and header. */
static void expect_sent_terminate(uint32_t cause, uint16_t seg_len, const uint8_t *hdr,
                                  size_t hdr_len)
{
    ASSERT_TRUE(cap_len > 2);
    size_t ulpdu = iwarp_load_be16(CAP);
    ASSERT_TRUE(cap_len >= 2 + ulpdu);
    struct iwarp_wire_segment s;
    ASSERT_EQ(iwarp_wire_segment_decode(CAP + 2, ulpdu, &s, NULL), 0);
    ASSERT_EQ(s.opcode, IWARP_RDMAP_OP_TERMINATE);
    const struct iwarp_term *t = &s.body.term;
    ASSERT_EQ_U(iwarp_core_cause_u32(t->ctrl.cause), cause);
    ASSERT_TRUE(t->ctrl.hdrct & IWARP_TERM_FLAG_M);
    ASSERT_TRUE(t->ctrl.hdrct & IWARP_TERM_FLAG_D);
    ASSERT_EQ_U(t->ddp_seg_len, seg_len);
    ASSERT_EQ_U(t->ddp_hdr_len, hdr_len);
    ASSERT_MEM_EQ(t->ddp_hdr, hdr, hdr_len);
}

TEST(ulpdu_length_past_the_target_places_nothing)
{
    static uint8_t fpdu[4096];
    for (unsigned v = 0; v < 4; v++) {
        connect_with(false, false, 0, false);
        hook_reset();
        capture_from = M.pipe[1].off;
        size_t piece = (v & 2) ? 1 : 4096;
        struct iwarp_wire_msg m = {.last = true};
        size_t plen;
        if ((v & 1) == 0) {
            /* A Write whose ULPDU_Length reaches one octet past the MR (RFC 5041 §7.1 check 4:
             * 1/1/0x01): the 100 octets before the end that it would fit stay untouched. */
            memset(MEM[1] + MEM_SIZE - 100, 0x5A, 100);
            m.opcode = IWARP_RDMAP_OP_WRITE;
            m.stag = P[1].key;
            m.to = (uint64_t)(uintptr_t)(MEM[1] + MEM_SIZE - 100);
            plen = 101;
        } else {
            /* A Send one octet longer than the 50-octet receive (RFC 5041 §7.2 1/2/0x05). */
            memset(MEM[1] + DST_OFF, 0x5A, 100);
            post_recv(&P[1], 1, DST_OFF, 50);
            m.opcode = IWARP_RDMAP_OP_SEND;
            m.msn = iwarp_ddp_rx_uq_expected_msn(&P[1].qp.uq_send);
            plen = 51;
        }
        size_t n = raw_fpdu(fpdu, &m, plen);
        ASSERT_TRUE(inject(&P[1].c, fpdu, n, piece) < 0);
        ASSERT_FALSE(P[1].last_from_peer);
        size_t hl = (v & 1) ? IWARP_DDP_UNTAGGED_HDR_LEN : IWARP_DDP_TAGGED_HDR_LEN;
        uint32_t cause = (v & 1) ? 0x010205u : 0x010101u;
        ASSERT_EQ_U(P[1].last_cause, cause);
        const uint8_t *dst = (v & 1) ? MEM[1] + DST_OFF : MEM[1] + MEM_SIZE - 100;
        for (unsigned i = 0; i < 100; i++)
            ASSERT_EQ(dst[i], 0x5A);
        if (v & 1) {
            struct iwarp_wc wc;
            ASSERT_EQ(iwarp_core_cq_poll(&P[1].rcq, &wc, 1), 1);
            ASSERT_EQ(wc.status, IWARP_WC_LOC_LEN_ERR);
        }
        /* RFC 5040 §4.8: the Terminate copies the DDP header and gives the whole segment's
         * length, though only the header was read before the error. */
        pump();
        expect_sent_terminate(cause, (uint16_t)(hl + plen), fpdu + 2, hl);
        ASSERT_EQ_U(P[0].last_cause, cause);
        ASSERT_TRUE(P[0].last_from_peer);
    }
}

TEST(buffer_gone_while_the_payload_arrives_gets_nothing_more)
{
    static uint8_t fpdu[4096];
    for (unsigned v = 0; v < 2; v++) {
        connect_with(false, false, 0, false);
        hook_reset();
        capture_from = M.pipe[1].off;
        memset(MEM[1] + DST_OFF, 0x5A, 1000);
        struct iwarp_wire_msg m = {.last = true};
        if (v == 0) {
            m.opcode = IWARP_RDMAP_OP_WRITE;
            m.stag = P[1].key;
            m.to = (uint64_t)(uintptr_t)(MEM[1] + DST_OFF);
        } else {
            post_recv(&P[1], 1, DST_OFF, 1000);
            m.opcode = IWARP_RDMAP_OP_SEND;
            m.msn = iwarp_ddp_rx_uq_expected_msn(&P[1].qp.uq_send);
        }
        size_t hl = v == 0 ? IWARP_DDP_TAGGED_HDR_LEN : IWARP_DDP_UNTAGGED_HDR_LEN;
        size_t n = raw_fpdu(fpdu, &m, 1000);
        size_t first = 2 + hl + 100; /* the headers and 100 payload octets */
        ASSERT_EQ(inject(&P[1].c, fpdu, first, 4096), 0);
        ASSERT_MEM_EQ(MEM[1] + DST_OFF, fpdu + 2 + hl, 100);
        if (v == 0) {
            /* The ULP deregisters the Write's target between two reads. */
            ASSERT_EQ(iwarp_mem_dereg_mr(&P[1].T, P[1].key), 0);
        } else {
            /* The ULP moves the QP to ERROR: the receive comes back flushed. */
            iwarp_core_qp_set_error(&P[1].qp);
            struct iwarp_wc wc;
            ASSERT_EQ(iwarp_core_cq_poll(&P[1].rcq, &wc, 1), 1);
            ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
        }
        int rc = inject(&P[1].c, fpdu + first, n - first, 7);
        for (unsigned i = 100; i < 1000; i++)
            ASSERT_EQ(MEM[1][DST_OFF + i], 0x5A);
        if (v == 0) {
            /* RFC 5041 §7.1 check 1 fails now: 1/1/0x00 Invalid STag, for the whole segment. */
            ASSERT_EQ(rc, IWARP_ERR_STAG_INVALID);
            ASSERT_EQ_U(P[1].last_cause, 0x010100u);
            pump();
            expect_sent_terminate(0x010100u, (uint16_t)(hl + 1000), fpdu + 2, hl);
        } else {
            ASSERT_EQ(rc, 0);
            struct iwarp_wc wc;
            ASSERT_EQ(iwarp_core_cq_poll(&P[1].rcq, &wc, 1), 0);
        }
    }
}

/* ---- read-ahead -------------------------------------------------------------------------- */

static uint8_t STREAM[1u << 20];

/* Frame k Writes of each octets to the responder at DST_OFF + i * each (payload from fill with
 * seed + i; L = last on the final one, L set on the others unless open) with the initiator's
 * own framer, so CRC and markers continue its stream; appended to STREAM[*len]. */
static void frame_writes_at(size_t *len, unsigned k, uint32_t each, uint32_t seed, bool last,
                            size_t off)
{
    static uint8_t hdr[64], pay[IWARP_MPA_MULPDU_MAX];
    for (unsigned i = 0; i < k; i++) {
        struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_WRITE,
                                   .last = last || i + 1 < k,
                                   .stag = P[1].key,
                                   .to = (uint64_t)(uintptr_t)(MEM[1] + DST_OFF + off + i * each)};
        iwarp_ssize h = iwarp_wire_segment_encode_hdr(hdr, sizeof hdr, &m);
        ASSERT_TRUE(h > 0 && each <= sizeof pay);
        fill(pay, each, seed + i);
        struct iovec in[2] = {{hdr, (size_t)h}, {pay, each}};
        struct iwarp_mpa_tx_scratch sc;
        struct iovec out[IWARP_LLP_CONN_FPDU_IOV];
        iwarp_ssize n = iwarp_mpa_tx_frame(&P[0].c.tx, in, 2, &sc, out, IWARP_LLP_CONN_FPDU_IOV);
        ASSERT_TRUE(n > 0);
        for (iwarp_ssize j = 0; j < n; j++) {
            ASSERT_TRUE(*len + out[j].iov_len <= sizeof STREAM);
            memcpy(STREAM + *len, out[j].iov_base, out[j].iov_len);
            *len += out[j].iov_len;
        }
    }
}

static void frame_writes(size_t *len, unsigned k, uint32_t each, uint32_t seed, bool last)
{
    frame_writes_at(len, k, each, seed, last, 0);
}

/* What frame_writes(k, each, seed) placed is in the responder's memory. */
static void expect_writes_at(unsigned k, uint32_t each, uint32_t seed, size_t off)
{
    static uint8_t want[IWARP_MPA_MULPDU_MAX];
    for (unsigned i = 0; i < k; i++) {
        fill(want, each, seed + i);
        ASSERT_MEM_EQ(MEM[1] + DST_OFF + off + i * each, want, each);
    }
}

static void expect_writes(unsigned k, uint32_t each, uint32_t seed)
{
    expect_writes_at(k, each, seed, 0);
}

/* Feed STREAM[0, n) to the responder in reads of at most piece octets (0: as much as rx_buf
 * offers). Returns the number of reads. */
static unsigned feed_stream(size_t n, size_t piece)
{
    unsigned reads = 0;
    const uint8_t *b = STREAM;
    while (n > 0) {
        size_t cap = 0;
        uint8_t *p = iwarp_llp_conn_rx_buf(&P[1].c, &cap);
        ASSERT_TRUE(p != NULL && cap > 0);
        size_t k = n < cap ? n : cap;
        if (piece && k > piece)
            k = piece;
        memcpy(p, b, k);
        ASSERT_EQ(iwarp_llp_conn_rx_ack(&P[1].c, k, 0), 0);
        b += k;
        n -= k;
        reads++;
    }
    return reads;
}

/* Connected (Write RTR), nothing in flight; the responder's counters at zero. */
static void quiet_pair(bool crc, bool markers)
{
    connect_with(crc, markers, 0, false);
    P[1].c.rx_direct_octets = P[1].c.rx_copied_octets = P[1].c.rx_moved_octets = 0;
}

TEST(fpdus_follow_an_emss_that_grows)
{
    /* TCP learns the path after connect (loopback: 32741, then 65483); llp_tcp passes the new
     * EMSS on and the FPDUs framed from then on follow it (RFC 5044 §4.5), with and without
     * markers, which take their share of the MULPDU. */
    for (unsigned v = 0; v < 2; v++) {
        connect_with(false, v == 1, 0, false);
        uint32_t small = P[0].c.max_seg;
        uint64_t f0 = P[1].c.rx_fpdus;
        transfer(OP_WRITE, 65536, 1);
        uint64_t before = P[1].c.rx_fpdus - f0;
        ASSERT_TRUE(before >= 65536u / small);
        iwarp_llp_conn_set_emss(&P[0].c, 9000);
        ASSERT_EQ_U(P[0].c.max_seg, iwarp_mpa_mulpdu(9000, v == 1));
        ASSERT_TRUE(P[0].c.max_seg > small);
        f0 = P[1].c.rx_fpdus;
        transfer(OP_WRITE, 65536, 1);
        uint64_t after = P[1].c.rx_fpdus - f0;
        ASSERT_TRUE(after <= 65536u / (P[0].c.max_seg - IWARP_DDP_TAGGED_HDR_LEN) + 1u);
        ASSERT_TRUE(after < before / 4);
        ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
    }
}

TEST(many_small_fpdus_arrive_in_one_read)
{
    for (unsigned v = 0; v < 2; v++) {
        bool crc = v == 1;
        quiet_pair(crc, false);
        /* At a boundary with nothing known the window is RA_SMALL (1 KiB) long. */
        size_t cap = 0;
        ASSERT_TRUE(iwarp_llp_conn_rx_buf(&P[1].c, &cap) != NULL);
        ASSERT_EQ_U(cap, 1024);
        size_t n = 0;
        frame_writes(&n, 300, 64, 40 + v, true); /* 300 FPDUs of 84 octets: 25,200 octets */
        /* The first read fills the small window; it ended in small FPDUs, so the second
         * offers the rest of the buffer and takes everything else. */
        ASSERT_EQ(feed_stream(n, 0), 2);
        expect_writes(300, 64, 40 + v);
        ASSERT_EQ(P[1].nerr, 0);
        ASSERT_TRUE(iwarp_llp_conn_rx_buf(&P[1].c, &cap) != NULL);
        ASSERT_EQ_U(cap, 1024); /* that read was short: back to the small window */
        if (crc) {
            /* Verified and handed over in place: only the one FPDU the first window cut in
             * two was staged (moved), its 78 ULPDU octets. */
            ASSERT_TRUE(P[1].c.rx_moved_octets <= 78);
        } else {
            ASSERT_EQ_U(P[1].c.rx_copied_octets, 300u * 64u);
        }
    }
}

TEST(the_largest_fpdu_and_a_small_one_behind_it_arrive_in_one_read)
{
    /* With CRC on a ULPDU is staged whole and read through the read-ahead window; the bounce
     * buffer keeps RA_SMALL behind even the largest ULPDU, so a 64 KiB Write at loopback's
     * EMSS (FPDUs of 64754 and 782 payload octets) needs one read after the first window. */
    quiet_pair(true, false);
    const uint32_t big = IWARP_MPA_MULPDU_MAX - IWARP_DDP_TAGGED_HDR_LEN, small = 65536 - big;
    size_t n = 0;
    frame_writes_at(&n, 1, big, 60, false, 0);
    frame_writes_at(&n, 1, small, 61, true, big);
    ASSERT_EQ(feed_stream(n, 0), 2); /* the 1 KiB window at a boundary, then the rest */
    expect_writes_at(1, big, 60, 0);
    expect_writes_at(1, small, 61, big);
    ASSERT_EQ(P[1].nerr, 0);
}

TEST(largest_fpdus_with_crc_on_come_several_per_read)
{
    /* CRC on: a read that takes the rest of a large staged ULPDU also takes whole FPDUs behind
     * it, as many as the bounce buffer holds (IWARP_LLP_CONN_RX_FPDUS), and ends RA_SMALL past a
     * boundary, so that only the next FPDU's first octets are moved to the staging area. Reads
     * cut anywhere (piece) leave a ULPDU in place when the rest of its FPDU fits behind it. */
    const uint32_t big = IWARP_MPA_MULPDU_MAX - IWARP_DDP_TAGGED_HDR_LEN;
    const size_t pieces[] = {0, 50000, 4096, 100003};
    for (size_t v = 0; v < sizeof pieces / sizeof pieces[0]; v++) {
        quiet_pair(true, false);
        size_t n = 0;
        frame_writes_at(&n, 12, big, 70 + (uint32_t)v, true, 0);
        unsigned reads = feed_stream(n, pieces[v]);
        expect_writes_at(12, big, 70 + (uint32_t)v, 0);
        ASSERT_EQ(P[1].nerr, 0);
        if (pieces[v] == 0) {
            /* a 1 KiB window at the first boundary, then IWARP_LLP_CONN_RX_FPDUS - 1 whole
             * FPDUs a read (one per read before) */
            ASSERT_TRUE(reads <=
                        1 + (12 + IWARP_LLP_CONN_RX_FPDUS - 2) / (IWARP_LLP_CONN_RX_FPDUS - 1));
            ASSERT_TRUE(P[1].c.rx_moved_octets <= (uint64_t)reads * IWARP_LLP_CONN_RA_SMALL);
        } else {
            /* moved only when a cut ULPDU's FPDU would not fit behind it: far less than the
             * 12 ULPDUs (each was moved before) */
            ASSERT_TRUE(P[1].c.rx_moved_octets < 4u * big);
        }
    }
}

TEST(fpdu_straddling_the_read_ahead_end_at_every_octet)
{
    /* Three FPDUs; the first read ends after s octets, for every s: inside a length field, a
     * header, a payload, the pad, the CRC; the rest follows in one read. */
    for (unsigned v = 0; v < 2; v++) {
        quiet_pair(v == 1, false);
        for (size_t s = 1;; s++) {
            size_t n = 0;
            frame_writes(&n, 3, 61, (uint32_t)s, true); /* 61: pad 1 with 14 + 61 */
            if (s >= n)
                break;
            size_t cap = 0;
            uint8_t *p = iwarp_llp_conn_rx_buf(&P[1].c, &cap);
            ASSERT_TRUE(p != NULL && cap >= s);
            memcpy(p, STREAM, s);
            ASSERT_EQ(iwarp_llp_conn_rx_ack(&P[1].c, s, 0), 0);
            p = iwarp_llp_conn_rx_buf(&P[1].c, &cap);
            ASSERT_TRUE(p != NULL && cap >= n - s);
            memcpy(p, STREAM + s, n - s);
            ASSERT_EQ(iwarp_llp_conn_rx_ack(&P[1].c, n - s, 0), 0);
            expect_writes(3, 61, (uint32_t)s);
        }
        ASSERT_EQ(P[1].nerr, 0);
    }
}

TEST(markers_inside_the_read_ahead_window)
{
    /* Markers every 512 octets (RFC 5044 §4.3) fall into length fields' neighbourhood,
     * headers, payloads and trailers of FPDUs read ahead many at a time, in one-octet, random
     * and whole reads; a ULPDU cut by a marker is staged, the others are handed over in
     * place (CRC on) or copied (CRC off). */
    for (unsigned v = 0; v < 6; v++) {
        quiet_pair((v & 1) != 0, true);
        uint32_t each = v < 4 ? 100u : 1000u;
        size_t n = 0;
        frame_writes(&n, 40, each, 7 + v, true);
        size_t piece = (v >> 1) == 0 ? 1 : (v >> 1) == 1 ? 0 : 333;
        feed_stream(n, piece);
        expect_writes(40, each, 7 + v);
        ASSERT_EQ(P[1].nerr, 0);
        if ((v & 1) != 0 && piece == 0)
            ASSERT_TRUE(P[1].c.rx_moved_octets < 40u * (14u + each));
    }
}

TEST(large_fpdu_behind_small_ones_is_placed_by_the_transport)
{
    /* CRC off, loopback EMSS: small Writes, then a 60000-octet one. Only what the small
     * window read ahead with its header (<= RA_SMALL) is copied; the rest of its payload is
     * read straight into the MR. */
    struct opts o = {.rev = 2, .rtr = IWARP_MPA_RTR_WRITE, .emss = 65483};
    setup(&o);
    accept_request();
    P[1].c.rx_copied_octets = P[1].c.rx_direct_octets = 0;
    fill(MEM[0] + SRC_OFF, 60000, 3);
    for (unsigned i = 0; i < 3; i++)
        post_send(&P[0], IWARP_WR_RDMA_WRITE, 1 + i, SRC_OFF, 10,
                  (uint64_t)(uintptr_t)(MEM[1] + DST_OFF + 100000 + i * 10), P[1].key);
    post_send(&P[0], IWARP_WR_RDMA_WRITE, 9, SRC_OFF, 60000,
              (uint64_t)(uintptr_t)(MEM[1] + DST_OFF), P[1].key);
    pump();
    ASSERT_MEM_EQ(MEM[1] + DST_OFF, MEM[0] + SRC_OFF, 60000);
    ASSERT_EQ_U(P[1].c.rx_copied_octets + P[1].c.rx_direct_octets, 60030);
    ASSERT_TRUE(P[1].c.rx_copied_octets <= 30 + 1024 + 2048);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
}

/* ---- responder start and end of stream ------------------------------------------------------ */

TEST(responder_qp_runs_at_accept_and_holds_its_fpdus_until_the_first_one)
{
    struct opts o = {.rev = 2, .crc = true};
    setup(&o);
    accept_request();
    ASSERT_EQ(P[1].qp.stream.state, IWARP_CORE_STREAM_RUNNING);
    ASSERT_EQ_U(P[1].qp.ird, 16); /* the negotiated IRD/ORD */
    ASSERT_EQ_U(P[1].qp.ord, 16);
    /* The ULP posts at once (not IWARP_ERR_STATE); RFC 5044 §7.1.2 rule 4 holds the FPDU. */
    uint64_t reply_end = M.pipe[1].off;
    fill(MEM[1] + SRC_OFF, 77, 5);
    post_recv(&P[0], 1, DST_OFF, 100);
    post_send(&P[1], IWARP_WR_SEND, 2, SRC_OFF, 77, 0, 0);
    ASSERT_FALSE(iwarp_llp_conn_tx_ready(&P[1].c, 0));
    pump();
    ASSERT_EQ_U(M.pipe[1].off, reply_end);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(&P[1].scq, &wc, 1), 0);
    /* The initiator's first FPDU releases it. */
    post_recv(&P[1], 3, DST_OFF, 10);
    post_send(&P[0], IWARP_WR_SEND, 4, SRC_OFF, 10, 0, 0);
    pump();
    ASSERT_FALSE(P[1].c.tx_hold);
    expect_wc(&P[1].rcq, 3, 10, true);
    expect_wc(&P[1].scq, 2, 0, false);
    expect_wc(&P[0].rcq, 1, 77, true);
    ASSERT_MEM_EQ(MEM[0] + DST_OFF, MEM[1] + SRC_OFF, 77);
    ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
}

TEST(end_of_stream_at_a_message_boundary_is_graceful)
{
    quiet_pair(true, false);
    size_t n = 0;
    frame_writes(&n, 2, 64, 1, true);
    feed_stream(n, 0);
    iwarp_llp_conn_eof(&P[1].c);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_CLOSE);
    ASSERT_EQ(P[1].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(P[1].nerr, 0); /* RFC 5041 §6.2.1: the peer's graceful teardown */
}

TEST(end_of_stream_inside_an_fpdu_or_a_message_is_fatal)
{
    /* v 0..: the stream ends after s octets of an FPDU (CRC on and off); v = last: after
     * whole FPDUs whose Write message has no Last segment yet. */
    for (unsigned v = 0; v < 6; v++) {
        bool crc = (v & 1) != 0;
        quiet_pair(crc, false);
        size_t n = 0;
        frame_writes(&n, 2, 64, 1, v < 4); /* v 4, 5: the second Write segment has L = 0 */
        size_t cut = v < 2 ? n - 1 : v < 4 ? n - 40 : n;
        feed_stream(cut, 0);
        ASSERT_EQ(P[1].nerr, 0);
        iwarp_llp_conn_eof(&P[1].c);
        ASSERT_EQ(P[1].nerr, 1);
        ASSERT_EQ(P[1].last_type, IWARP_EVENT_QP_FATAL);
        ASSERT_EQ(P[1].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    }
}

/* ---- the startup rules (docs/startup-rules.md): nothing around a violation is an FPDU ------- */

#define RAW_REQ_KEY "4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65" /* "MPA ID Req Frame" */
#define RAW_REP_KEY "4D 50 41 20 49 44 20 52 65 70 20 46 72 61 6D 65" /* "MPA ID Rep Frame" */
#define RAW_MAX     2048u

/* A valid FPDU (CRC on, no markers, at the start of full operation) carrying a 64-octet RDMA
 * Write to key at target, appended to buf at *len. Not framed by either connection. */
static void raw_write_fpdu(uint8_t *buf, size_t *len, uint32_t key, uint8_t *target)
{
    struct iwarp_mpa_tx tx;
    struct iwarp_mpa_tx_cfg tc = {.crc = true};
    ASSERT_EQ(iwarp_mpa_tx_init(&tx, &tc), 0);
    static uint8_t hdr[64], pay[64];
    struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_WRITE,
                               .last = true,
                               .stag = key,
                               .to = (uint64_t)(uintptr_t)target};
    iwarp_ssize h = iwarp_wire_segment_encode_hdr(hdr, sizeof hdr, &m);
    ASSERT_TRUE(h > 0);
    fill(pay, sizeof pay, 99);
    struct iovec in[2] = {{hdr, (size_t)h}, {pay, sizeof pay}};
    struct iwarp_mpa_tx_scratch sc;
    struct iovec out[IWARP_LLP_CONN_FPDU_IOV];
    iwarp_ssize n = iwarp_mpa_tx_frame(&tx, in, 2, &sc, out, IWARP_LLP_CONN_FPDU_IOV);
    ASSERT_TRUE(n > 0);
    for (iwarp_ssize j = 0; j < n; j++) {
        ASSERT_TRUE(*len + out[j].iov_len <= RAW_MAX);
        memcpy(buf + *len, out[j].iov_base, out[j].iov_len);
        *len += out[j].iov_len;
    }
}

/* hex (a startup frame), then the Write FPDU to p's memory, as one stream in buf. */
static size_t raw_frame_and_fpdu(uint8_t *buf, const char *hex, struct peer *p)
{
    size_t len = harness_hex(hex, buf, RAW_MAX);
    ASSERT_TRUE(len > 0);
    raw_write_fpdu(buf, &len, p->key, p->mem + DST_OFF);
    return len;
}

/* Offers b[0, n) to c the way a transport reads: into rx_buf, then rx_ack, as long as c takes
 * octets. Returns how many it took (read octets, dropped ones included). */
static size_t raw_feed(struct iwarp_llp_conn *c, const uint8_t *b, size_t n)
{
    size_t done = 0;
    while (done < n) {
        size_t cap = 0;
        uint8_t *at = iwarp_llp_conn_rx_buf(c, &cap);
        if (!at || cap == 0)
            break;
        size_t k = n - done < cap ? n - done : cap;
        memcpy(at, b + done, k);
        (void)iwarp_llp_conn_rx_ack(c, k, 0);
        done += k;
    }
    return done;
}

/* Nothing reached p as an FPDU: no FPDU counted, no octet placed, no completion, nothing for
 * the connection to send (RFC 5044 §7.1.2: close without an FPDU). */
static void expect_nothing_delivered(struct peer *p)
{
    static const uint8_t zero[64];
    ASSERT_EQ_U(p->c.rx_fpdus, 0);
    ASSERT_MEM_EQ(p->mem + DST_OFF, zero, sizeof zero);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(&p->rcq, &wc, 1), 0);
    ASSERT_FALSE(iwarp_llp_conn_tx_ready(&p->c, 0));
}

/* Both ends set up with o, nothing moved; the octets are fed by hand (M is never pumped). */
static void raw_setup_with(const struct opts *o)
{
    uint8_t rev = o->rev;
    setup(o);
    memset(MEM[0] + DST_OFF, 0, 64);
    memset(MEM[1] + DST_OFF, 0, 64);
    /* The initiator's Request is written (and dropped: the responder is fed by hand). */
    struct iovec iov[4];
    uint32_t k = iwarp_llp_conn_tx_iov(&P[0].c, iov, 4, 0);
    size_t rl = 0;
    for (uint32_t i = 0; i < k; i++)
        rl += iov[i].iov_len;
    ASSERT_EQ_U(rl, rev == 2 ? 24u : 20u);
    iwarp_llp_conn_tx_ack(&P[0].c, rl);
    ASSERT_FALSE(iwarp_llp_conn_tx_ready(&P[0].c, 0));
}

static void raw_setup(uint8_t rev, bool crc)
{
    struct opts o = {.rev = rev, .crc = crc};
    raw_setup_with(&o);
}

TEST(startup_request_and_fpdu_in_one_segment_is_closed_unread)
{
    /* RFC 5044 §7.1.2 rules 2, 3: the initiator enters full operation only on the Reply, so an
     * FPDU right behind its Request breaks the startup sequence: close (2/0/0x04 locally, no
     * Reply, no FPDU), and the FPDU is never delivered, not even after the ULP's accept. */
    for (unsigned later = 0; later < 2; later++) {
        raw_setup(2, false);
        uint8_t buf[RAW_MAX];
        size_t n = raw_frame_and_fpdu(buf, RAW_REQ_KEY "40 01 0000", &P[1]);
        if (later) { /* the FPDU comes while the ULP decides */
            ASSERT_EQ(raw_feed(&P[1].c, buf, 20), 20);
            ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REQUEST);
            ASSERT_TRUE(raw_feed(&P[1].c, buf + 20, n - 20) > 0);
        } else {
            ASSERT_TRUE(raw_feed(&P[1].c, buf, n) > 20);
        }
        ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_FAILED);
        ASSERT_EQ(P[1].c.err, IWARP_ERR_MPA_EARLY_DATA);
        iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
        struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
        ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), IWARP_ERR_STATE);
        ASSERT_EQ(raw_feed(&P[1].c, buf, n), 0); /* closed: nothing more is read */
        expect_nothing_delivered(&P[1]);
    }
}

TEST(startup_bad_request_then_fpdu_closes_and_delivers_nothing)
{
    /* RFC 5044 §7.1.2 rule 2 (improperly formatted Request: close), rule 5 (a Key that does
     * not match: close, error to the ULP), rule 9 (PD_Length over the buffer: improperly
     * formatted), each followed in the same segment by a valid FPDU. */
    static const struct {
        const char *hex;
        int err;
    } cases[] = {
        {RAW_REP_KEY "40 01 0000", IWARP_ERR_MPA_KEY}, /* rule 5 */
        {"4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 66 40 01 0000", IWARP_ERR_MPA_KEY}, /* 5 */
        {RAW_REQ_KEY "40 01 0201", IWARP_ERR_MPA_PD_LEN},             /* rule 9 */
        {RAW_REQ_KEY "50 01 0004 0001 0001", IWARP_ERR_MPA_ENHANCED}, /* rule 2 */
        {RAW_REQ_KEY "40 00 0000", IWARP_ERR_MPA_REV},                /* rule 2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        raw_setup(2, false);
        uint8_t buf[RAW_MAX];
        size_t n = raw_frame_and_fpdu(buf, cases[i].hex, &P[1]);
        (void)raw_feed(&P[1].c, buf, n);
        ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_FAILED);
        ASSERT_EQ(P[1].c.err, cases[i].err);
        ASSERT_EQ(raw_feed(&P[1].c, buf, n), 0);
        expect_nothing_delivered(&P[1]);
        struct iovec iov[4];
        ASSERT_EQ_U(iwarp_llp_conn_tx_iov(&P[1].c, iov, 4, 0), 0); /* no Reply either */
    }
}

TEST(startup_reject_then_fpdu_delivers_nothing)
{
    /* RFC 5044 §7.1.2 rule 3: a Reply with R=1 exits MPA, leaving TCP to the ULP; the FPDU
     * behind it is not read by MPA, so it is never delivered. */
    raw_setup(1, true);
    uint8_t buf[RAW_MAX];
    size_t n = raw_frame_and_fpdu(buf, RAW_REP_KEY "60 01 0000", &P[0]);
    ASSERT_EQ(raw_feed(&P[0].c, buf, n), 20);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_REJECTED);
    ASSERT_EQ(P[0].c.err, IWARP_ERR_MPA_REJECTED);
    ASSERT_EQ_U(iwarp_mpa_neg_result(&P[0].c.neg)->rx_consumed, 20);
    expect_nothing_delivered(&P[0]);
}

TEST(startup_reply_and_responder_fpdu_in_one_segment_fails_the_initiator)
{
    /* RFC 5044 §7.1.2 rule 4 as the initiator sees it: an FPDU right behind the Reply was
     * sent before the responder could have received ours: 2/0/0x04, close, not delivered. */
    raw_setup(1, true);
    uint8_t buf[RAW_MAX];
    size_t n = raw_frame_and_fpdu(buf, RAW_REP_KEY "40 01 0000", &P[0]);
    (void)raw_feed(&P[0].c, buf, n);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_FAILED);
    ASSERT_EQ(P[0].c.err, IWARP_ERR_MPA_EARLY_DATA);
    expect_nothing_delivered(&P[0]);
}

TEST(startup_responder_fpdu_while_the_first_fpdu_is_held_is_taken)
{
    /* The same FPDU while our first one is held by first_fpdu_delay_ns (siw's race): without
     * the hold ours would already be out and the two would cross, which rule 4 cannot tell
     * from a responder that waited. It is delivered; ours still waits out the hold. */
    struct opts o = {.rev = 1, .crc = true, .delay = 5000};
    raw_setup_with(&o);
    uint8_t buf[RAW_MAX];
    size_t n = raw_frame_and_fpdu(buf, RAW_REP_KEY "40 01 0000", &P[0]);
    ASSERT_EQ(raw_feed(&P[0].c, buf, n), n);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ_U(P[0].c.rx_fpdus, 1);
    uint8_t want[64];
    fill(want, sizeof want, 99);
    ASSERT_MEM_EQ(P[0].mem + DST_OFF, want, sizeof want);
    ASSERT_FALSE(iwarp_llp_conn_tx_ready(&P[0].c, 4999));
}

TEST(startup_bad_reply_then_fpdu_closes_and_delivers_nothing)
{
    /* RFC 5044 §7.1.2 rule 3 (improperly formatted Reply: close), rule 5 (Key), rule 8 (a
     * Request key: Initiator/Initiator), rule 9 (PD_Length). */
    static const struct {
        const char *hex;
        int err;
    } cases[] = {
        {RAW_REQ_KEY "40 01 0000", IWARP_ERR_MPA_INIT_INIT},
        {"4D 50 41 20 49 44 20 52 65 70 20 46 72 61 6D 66 40 01 0000", IWARP_ERR_MPA_KEY},
        {RAW_REP_KEY "40 01 FFFF", IWARP_ERR_MPA_PD_LEN},
        {RAW_REP_KEY "40 02 0000", IWARP_ERR_MPA_REV},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        raw_setup(1, true);
        uint8_t buf[RAW_MAX];
        size_t n = raw_frame_and_fpdu(buf, cases[i].hex, &P[0]);
        (void)raw_feed(&P[0].c, buf, n);
        ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_FAILED);
        ASSERT_EQ(P[0].c.err, cases[i].err);
        expect_nothing_delivered(&P[0]);
    }
}

TEST(startup_first_fpdu_that_is_no_rtr_is_not_delivered)
{
    /* RFC 6581 §5, §9.2: with a Write RTR negotiated the initiator's first FPDU must be that
     * zero-length Write; a 64-octet Write instead gets TERM 2/0/0x07 and places nothing. */
    raw_setup(2, false);
    uint8_t buf[RAW_MAX];
    size_t n = harness_hex(RAW_REQ_KEY "50 02 0004 8004 8004", buf, sizeof buf);
    ASSERT_EQ(raw_feed(&P[1].c, buf, n), n);
    ASSERT_EQ(P[1].c.state, IWARP_LLP_CONN_REQUEST);
    iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
    ASSERT_EQ(iwarp_mpa_neg_result(&P[1].c.neg)->rtr, IWARP_MPA_RTR_WRITE);
    struct iovec iov[4];
    uint32_t k = iwarp_llp_conn_tx_iov(&P[1].c, iov, 4, 0); /* the Reply */
    ASSERT_TRUE(k > 0);
    size_t rl = 0;
    for (uint32_t i = 0; i < k; i++)
        rl += iov[i].iov_len;
    iwarp_llp_conn_tx_ack(&P[1].c, rl);
    n = 0;
    raw_write_fpdu(buf, &n, P[1].key, P[1].mem + DST_OFF);
    (void)raw_feed(&P[1].c, buf, n);
    ASSERT_EQ(P[1].c.err, IWARP_ERR_MPA_RTR_MISMATCH);
    ASSERT_EQ_U(P[1].last_cause, 0x020007u);
    static const uint8_t zero[64];
    ASSERT_MEM_EQ(P[1].mem + DST_OFF, zero, sizeof zero);
}

TEST(startup_rtr_goes_before_any_ulp_fpdu)
{
    /* RFC 6581 §5: "The RDMA connection initiator MUST NOT allow any later FULPDUs to be
     * transmitted before the RTR indication." A Send posted while the RTR is held (the first
     * FPDU delay) still follows it: the responder sees its RTR first (else 2/0/0x07). */
    for (uint8_t rtr = IWARP_MPA_RTR_SEND; rtr <= IWARP_MPA_RTR_READ; rtr = (uint8_t)(rtr << 1)) {
        struct opts o = {.rev = 2, .crc = true, .rtr = rtr, .delay = 5000};
        setup(&o);
        pump();
        iwarp_llp_conn_attach(&P[1].c, &P[1].qp.eng);
        struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
        ASSERT_EQ(iwarp_llp_conn_accept(&P[1].c, &a), 0);
        pump();
        ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
        fill(MEM[0] + SRC_OFF, 10, 4);
        post_recv(&P[1], 1, DST_OFF, 10);
        post_send(&P[0], IWARP_WR_SEND, 2, SRC_OFF, 10, 0, 0);
        pump();
        ASSERT_EQ_U(M.pipe[0].off, 24u); /* only the Request: the Send waits behind the RTR */
        M.now_ns = 5000;
        iwarp_llp_conn_handle_timeout(&P[0].c, 5000);
        pump();
        ASSERT_EQ(P[0].nerr + P[1].nerr, 0);
        expect_wc(&P[1].rcq, 1, 10, true);
        ASSERT_MEM_EQ(MEM[1] + DST_OFF, MEM[0] + SRC_OFF, 10);
    }
}

/* The octets the initiator sends after its Request, deframed (CRC on): exactly one FPDU, a
 * Terminate, whose cause is returned. */
static uint32_t sent_terminate_cause(struct peer *p)
{
    static uint8_t out[RAW_MAX];
    size_t n = 0;
    struct iovec iov[8];
    uint32_t k;
    while ((k = iwarp_llp_conn_tx_iov(&p->c, iov, 8, 0)) > 0) {
        size_t w = 0;
        for (uint32_t i = 0; i < k; i++) {
            ASSERT_TRUE(n + iov[i].iov_len <= sizeof out);
            memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
            n += iov[i].iov_len;
            w += iov[i].iov_len;
        }
        iwarp_llp_conn_tx_ack(&p->c, w);
    }
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_cfg rc = {.crc = true};
    ASSERT_EQ(iwarp_mpa_rx_init(&rx, &rc), 0);
    static uint8_t ulpdu[RAW_MAX];
    size_t got = 0, used = 0;
    unsigned fpdus = 0;
    while (used < n) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize r = iwarp_mpa_rx_feed(&rx, out + used, n - used, &ev);
        ASSERT_TRUE(r > 0);
        used += (size_t)r;
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU) {
            memcpy(ulpdu + ev.ulpdu_off, ev.data, ev.len);
            got = ev.ulpdu_off + ev.len;
        } else if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            fpdus++;
        }
    }
    ASSERT_EQ(fpdus, 1); /* the Terminate and nothing else */
    struct iwarp_wire_segment s;
    ASSERT_EQ(iwarp_wire_segment_decode(ulpdu, got, &s, NULL), 0);
    ASSERT_EQ(s.opcode, IWARP_RDMAP_OP_TERMINATE);
    const struct iwarp_term_cause *c = &s.body.term.ctrl.cause;
    return (uint32_t)c->layer << 16 | (uint32_t)c->etype << 8 | c->ecode;
}

TEST(startup_enhanced_failures_send_their_terminate_first)
{
    /* RFC 6581 §8: an enhanced connection establishment error generates an MPA Terminate
     * (Layer 2, EType 0): §9.1 responder ORD above our IRD (16): 2/0/0x06; §9.2 A not echoed
     * to our A=1, no RTR left: 2/0/0x07; §9.3 A=1 to our A=0, a local error without its own
     * code: 2/0/0x05. Then the connection closes; nothing of the peer is delivered. */
    static const struct {
        uint8_t rtr;
        const char *reply;
        uint32_t cause;
        int err;
    } cases[] = {
        {0, RAW_REP_KEY "50 02 0004 0004 0011", 0x020006u, IWARP_ERR_MPA_IRD_ORD},
        {IWARP_MPA_RTR_WRITE, RAW_REP_KEY "50 02 0004 0004 0004", 0x020007u, IWARP_ERR_MPA_P2P},
        {0, RAW_REP_KEY "50 02 0004 8004 8004", 0x020005u, IWARP_ERR_MPA_P2P},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct opts o = {.rev = 2, .crc = true, .rtr = cases[i].rtr};
        setup(&o);
        memset(MEM[0] + DST_OFF, 0, 64);
        struct iovec iov[4];
        uint32_t k = iwarp_llp_conn_tx_iov(&P[0].c, iov, 4, 0); /* the Request */
        ASSERT_EQ_U(k, 1);
        iwarp_llp_conn_tx_ack(&P[0].c, iov[0].iov_len);
        uint8_t buf[RAW_MAX];
        size_t n = harness_hex(cases[i].reply, buf, sizeof buf);
        (void)raw_feed(&P[0].c, buf, n);
        ASSERT_EQ(P[0].c.err, cases[i].err);
        ASSERT_EQ_U(sent_terminate_cause(&P[0]), cases[i].cause);
        ASSERT_NE(P[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
        expect_nothing_delivered(&P[0]);
    }
}

TEST(startup_local_failure_after_the_reply_sends_2_0_5)
{
    /* RFC 6581 §9.3: "The initiator or responder MUST generate the TERM message that contains
     * Layer 2, Error Type 0, Error Code 5 when it encounters any error locally for which the
     * special Error Code is not defined in Section 8 before resetting the connection." Our
     * QP cannot start when the Reply arrives (the application moved it to error meanwhile). */
    struct opts o = {.rev = 2, .crc = true};
    setup(&o);
    memset(MEM[0] + DST_OFF, 0, 64);
    struct iovec iov[4];
    ASSERT_EQ_U(iwarp_llp_conn_tx_iov(&P[0].c, iov, 4, 0), 1); /* the Request */
    iwarp_llp_conn_tx_ack(&P[0].c, iov[0].iov_len);
    P[0].qp.stream.state = IWARP_CORE_STREAM_ERROR;
    uint8_t buf[RAW_MAX];
    size_t n = harness_hex(RAW_REP_KEY "50 02 0004 0010 0010", buf, sizeof buf);
    (void)raw_feed(&P[0].c, buf, n);
    ASSERT_EQ(P[0].c.state, IWARP_LLP_CONN_FAILED);
    ASSERT_EQ(P[0].c.err, IWARP_ERR_STATE);
    ASSERT_EQ_U(sent_terminate_cause(&P[0]), 0x020005u);
    expect_nothing_delivered(&P[0]);
}
