/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A DDP-level stream (core_ddp, RFC 4296 §2.1.2) through the MPA connection (llp_conn) over the
 * in-memory transport, through the one engine interface (core_engine.h): with CRC off its
 * payload is placed directly, as an RDMAP QP's is (the connection's rx_direct_octets counts
 * it, and the bounce buffer never sees it); with CRC on every FPDU is staged and verified
 * first (RFC 5044 §6). Tagged and untagged messages of several segments, data checked octet
 * by octet, deliveries field by field (RFC 5041 §5.4).
 */
#include <string.h>

#include "core/core_ddp.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "llp/llp_conn.h"
#include "llp/llp_mem.h"
#include "mem/mem_region.h"

#define MEM_SIZE (1u << 20)
#define PIPE_CAP 8192u
#define NQ       2u
#define RQ       4u
#define SQ       8u
#define TAG_LEN  40000u /* many FPDUs at EMSS 1460 */
#define UNT_LEN  3000u

struct end {
    struct iwarp_mem_table T;
    struct iwarp_mem_entry E[8];
    uint32_t seed;
    struct iwarp_wc sring[32], rring[32];
    struct iwarp_core_cq scq, rcq;
    struct iwarp_core_ddp_sqe sq[SQ];
    struct iwarp_core_ddp_uq uq[NQ];
    struct iwarp_core_rqe rqe[NQ * RQ];
    uint64_t lens[NQ * RQ];
    struct iwarp_core_ddp d;
    struct iwarp_llp_conn c;
    uint8_t bounce[IWARP_LLP_CONN_BOUNCE];
    struct iwarp_llp_conn_txf txf[IWARP_LLP_CONN_TX_SEGS];
    uint32_t mr;
};

static struct end X[2]; /* 0: initiator, 1: responder */
static uint8_t MEM[2][MEM_SIZE];
static uint8_t PIPES[2][PIPE_CAP];
static struct iwarp_llp_mem M;

static void end_init(struct end *e, uint8_t *mem)
{
    memset(e, 0, sizeof *e);
    e->seed = 0x5eedu;
    ASSERT_EQ(iwarp_mem_table_init(&e->T, e->E, 8, harness_xorshift32, &e->seed), 0);
    struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)mem,
                                .iova = (uint64_t)(uintptr_t)mem,
                                .length = MEM_SIZE,
                                .access =
                                    IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE};
    ASSERT_EQ(iwarp_mem_reg_mr(&e->T, 1, &r, &e->mr), 0);
    ASSERT_EQ(iwarp_core_cq_init(&e->scq, e->sring, 32, NULL, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&e->rcq, e->rring, 32, NULL, NULL), 0);
    struct iwarp_core_ddp_cfg cfg = {.qp_num = 9,
                                     .pd = 1,
                                     .mem = &e->T,
                                     .send_cq = &e->scq,
                                     .recv_cq = &e->rcq,
                                     .num_queues = NQ,
                                     .rq_cap = RQ,
                                     .sq_cap = SQ,
                                     .max_send_sge = 2,
                                     .max_recv_sge = 2,
                                     .sq_sig_all = true};
    struct iwarp_core_ddp_mem m = {.sq = e->sq, .uq = e->uq, .rqe = e->rqe, .lens = e->lens};
    ASSERT_EQ(iwarp_core_ddp_init(&e->d, &cfg, &m), 0);
}

static void pump(void)
{
    ASSERT_TRUE(iwarp_llp_mem_pump(&M, 200000) < 200000);
}

/* Both ends connected (CRC as asked, FPDUs of at most emss octets), engines attached and
 * started. */
static void connect(bool crc, uint32_t emss)
{
    end_init(&X[0], MEM[0]);
    end_init(&X[1], MEM[1]);
    struct iwarp_llp_conn_cfg ci = {.emss = emss}, cr = {.emss = emss};
    iwarp_mpa_neg_cfg_default(&ci.neg, IWARP_MPA_INITIATOR);
    iwarp_mpa_neg_cfg_default(&cr.neg, IWARP_MPA_RESPONDER);
    ci.neg.crc = crc;
    cr.neg.crc = false;
    ASSERT_EQ(iwarp_llp_conn_init(&X[0].c, &ci, X[0].bounce, X[0].txf, 0), 0);
    ASSERT_EQ(iwarp_llp_conn_init(&X[1].c, &cr, X[1].bounce, X[1].txf, 0), 0);
    iwarp_llp_conn_attach(&X[0].c, &X[0].d.eng);
    ASSERT_EQ(iwarp_llp_mem_init(&M, &X[0].c, &X[1].c, PIPES[0], PIPES[1], PIPE_CAP, 5), 0);
    pump();
    ASSERT_EQ(X[1].c.state, IWARP_LLP_CONN_REQUEST);
    iwarp_llp_conn_attach(&X[1].c, &X[1].d.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 1, .ord = 1};
    ASSERT_EQ(iwarp_llp_conn_accept(&X[1].c, &a), 0);
    pump();
    ASSERT_EQ(X[0].c.state, IWARP_LLP_CONN_ESTABLISHED);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static void send_msg(bool tagged, uint32_t src_off, uint32_t len, uint32_t stag, uint64_t to)
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)(MEM[0] + src_off), len, X[0].mr};
    static const uint8_t ulp[5] = {1, 2, 3, 4, 5};
    struct iwarp_core_ddp_send s = {.wr_id = len,
                                    .sg_list = &sge,
                                    .num_sge = 1,
                                    .signaled = true,
                                    .tagged = tagged,
                                    .qn = 1,
                                    .stag = stag,
                                    .to = to,
                                    .rsvdulp = ulp};
    ASSERT_EQ(iwarp_core_ddp_post_send(&X[0].d, &s), 0);
}

/* The initiator sends an untagged message (its first FPDU, RFC 5044 §7.1.2 rule 4) and a
 * tagged one; the responder's buffers get exactly the octets, with the indications. */
static void exchange(bool crc, uint32_t emss)
{
    connect(crc, emss);
    struct iwarp_sge rsge = {(uint64_t)(uintptr_t)(MEM[1] + 100), UNT_LEN, X[1].mr};
    struct iwarp_recv_wr rwr = {.wr_id = 77, .sg_list = &rsge, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_recv(&X[1].d, 1, &rwr), 0);
    fill(MEM[0], UNT_LEN, 1);
    fill(MEM[0] + 8192, TAG_LEN, 2);
    uint64_t sink = (uint64_t)(uintptr_t)(MEM[1] + 65536);
    send_msg(false, 0, UNT_LEN, 0, 0);
    send_msg(true, 8192, TAG_LEN, X[1].mr, sink);
    pump();
    ASSERT_MEM_EQ(MEM[1] + 100, MEM[0], UNT_LEN);
    ASSERT_MEM_EQ(MEM[1] + 65536, MEM[0] + 8192, TAG_LEN);
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&X[1].rcq, &wc, 1), 1u);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
    ASSERT_EQ_U(wc.wr_id, 77u);
    ASSERT_EQ_U(wc.byte_len, UNT_LEN);
    ASSERT_EQ_U(wc.ddp_qn, 1u);
    ASSERT_EQ_U(wc.ddp_msn, 1u);
    ASSERT_EQ_U(iwarp_core_cq_poll(&X[1].rcq, &wc, 1), 1u);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_TAGGED_RECV);
    ASSERT_EQ_U(wc.byte_len, TAG_LEN);
    ASSERT_EQ_U(wc.ddp_stag, X[1].mr);
    ASSERT_EQ_U(iwarp_core_cq_poll(&X[0].scq, &wc, 1), 1u);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_SEND);
    ASSERT_EQ_U(iwarp_core_cq_poll(&X[0].scq, &wc, 1), 1u);
    ASSERT_EQ_U(X[1].d.err.cause, 0u);
}

TEST(ddp_level_stream_is_placed_directly_with_crc_off)
{
    /* small FPDUs: each is read ahead whole and its payload copied from the read window
     * straight to the sink; only the first FPDU (RFC 5044 §7.1.2 rule 4) is staged */
    exchange(false, 1460);
    const struct iwarp_llp_conn *c = &X[1].c;
    ASSERT_TRUE(c->rx_direct_octets + c->rx_copied_octets >= TAG_LEN);
    /* large FPDUs: the payload beyond the read-ahead is read from the transport into the
     * sink itself */
    exchange(false, 9000);
    ASSERT_TRUE(c->rx_direct_octets > TAG_LEN / 2);
    ASSERT_TRUE(c->rx_direct_octets + c->rx_copied_octets >= TAG_LEN);
}

TEST(ddp_level_stream_is_staged_and_verified_with_crc_on)
{
    exchange(true, 9000);
    ASSERT_EQ_U(X[1].c.rx_direct_octets, 0u);
    ASSERT_EQ_U(X[1].c.rx_copied_octets, 0u);
}
