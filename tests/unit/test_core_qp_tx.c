/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP engine's send side: work requests become the exact DDP segments of RFC 5040/5041
 * (golden header bytes written from the RFC figures), completions leave in posting order and
 * only once the LLP has sent the last segment, Reads obey ORD and Fence, local operations run
 * in order, and errors flush.
 */
#include <string.h>

#include "core/core_qp.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"
#include "predict.h"
#include "wire/wire_segment.h"

enum { PD = 3, QPN = 9, SQ = 8, RQ = 4 };

static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[64];
static uint32_t seed = 0x1234567u;
static struct iwarp_wc scq_ring[32], rcq_ring[32];
static struct iwarp_core_cq scq, rcq;
static struct iwarp_core_sqe sq[SQ];
static struct iwarp_core_rqe rq[RQ];
static uint64_t rq_lens[RQ], irq_lens[IWARP_CORE_MAX_IRD];
static struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
static struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
static struct iwarp_core_qp Q;
static uint8_t buf[8192];
static uint32_t lkey;
static int events[32], nevents;
static uint32_t rdmap_ext;  /* the RFC 7306 extensions the next setup enables */
static uint32_t read_batch; /* and its read_batch_octets */

static void on_event(void *user, struct iwarp_core_qp *qp, int type, uint32_t cause, bool peer)
{
    (void)user, (void)qp, (void)cause, (void)peer;
    if (nevents < 32)
        events[nevents++] = type;
}

static void setup(bool sig_all)
{
    ASSERT_EQ(iwarp_mem_table_init(&T, E, 64, harness_xorshift32, &seed), 0);
    struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)buf,
                                .iova = (uint64_t)(uintptr_t)buf,
                                .length = sizeof buf,
                                .access = IWARP_MEM_ACCESS_LOCAL_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_READ};
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &lkey), 0);
    ASSERT_EQ(iwarp_core_cq_init(&scq, scq_ring, 32, NULL, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&rcq, rcq_ring, 32, NULL, NULL), 0);
    struct iwarp_core_qp_cfg cfg = {.qp_num = QPN,
                                    .pd = PD,
                                    .mem = &T,
                                    .send_cq = &scq,
                                    .recv_cq = &rcq,
                                    .sq_cap = SQ,
                                    .rq_cap = RQ,
                                    .max_send_sge = 6,
                                    .max_recv_sge = 6,
                                    .max_inline = 80,
                                    .rdmap_ext = rdmap_ext,
                                    .read_batch_octets = read_batch,
                                    .sq_sig_all = sig_all,
                                    .event = on_event};
    struct iwarp_core_qp_mem m = {
        .sq = sq, .rq = rq, .rq_lens = rq_lens, .orq = orq, .irq = irq, .irq_lens = irq_lens};
    ASSERT_EQ(iwarp_core_qp_init(&Q, &cfg, &m), 0);
    general_path(&Q);
    nevents = 0;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 7u + 1u);
}

static struct iwarp_send_wr wr_of(enum iwarp_wr_opcode op, uint64_t id, struct iwarp_sge *sge,
                                  int nsge, unsigned flags)
{
    struct iwarp_send_wr w = {.wr_id = id, .sg_list = sge, .num_sge = nsge, .opcode = op};
    w.send_flags = flags;
    return w;
}

static struct iwarp_sge sge_of(size_t off, uint32_t len)
{
    return (struct iwarp_sge){(uint64_t)(uintptr_t)(buf + off), len, lkey};
}

/* Concatenate a segment's payload iovecs. */
static size_t gather(const struct iwarp_core_tx_seg *s, uint8_t *out)
{
    size_t n = 0;
    for (uint32_t i = 0; i < s->niov; i++) {
        memcpy(out + n, s->iov[i].iov_base, s->iov[i].iov_len);
        n += s->iov[i].iov_len;
    }
    return n;
}

TEST(post_needs_running_stream)
{
    setup(false);
    struct iwarp_sge s = sge_of(0, 4);
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_STATE); /* IDLE */
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
}

TEST(send_golden_header_and_completion_after_sent)
{
    setup(false);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s[2] = {sge_of(0, 3), sge_of(100, 2)};
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 77, s, 2, IWARP_SEND_SIGNALED);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    ASSERT_TRUE(iwarp_core_qp_tx_pending(&Q));
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    /* RFC 5041 §4.2/§4.4 + RFC 5040 §4.1: T=0 L=1 DV=1; RV=1 Send (0x3); Inv STag 0; QN 0;
     * MSN 1 (§4.3: the first MSN is 1); MO 0. */
    static const uint8_t hdr[18] = {0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    ASSERT_EQ_U(seg.hdr_len, 18);
    ASSERT_MEM_EQ(seg.hdr, hdr, 18);
    uint8_t pl[8];
    ASSERT_EQ_U(gather(&seg, pl), 5);
    ASSERT_MEM_EQ(pl, buf, 3);
    ASSERT_MEM_EQ(pl + 3, buf + 100, 2);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
    struct iwarp_wc wc[2];
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, wc, 2), 0); /* not yet handed to the LLP */
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, wc, 2), 1);
    ASSERT_EQ_U(wc[0].wr_id, 77);
    ASSERT_EQ(wc[0].status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc[0].opcode, IWARP_WC_SEND);
    ASSERT_EQ_U(wc[0].byte_len, 5);
    ASSERT_EQ_U(wc[0].qp_num, QPN);
}

TEST(send_se_inv_and_msn_sequence)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_send_wr w1 = wr_of(IWARP_WR_SEND, 1, NULL, 0, IWARP_SEND_SOLICITED);
    struct iwarp_send_wr w2 = wr_of(IWARP_WR_SEND_WITH_INV, 2, NULL, 0, 0);
    w2.invalidate_rkey = 0xAABBCCDDu;
    struct iwarp_send_wr w3 = wr_of(IWARP_WR_SEND_WITH_INV, 3, NULL, 0, IWARP_SEND_SOLICITED);
    w3.invalidate_rkey = 0x01020304u;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w1), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w2), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w3), 0);
    struct iwarp_core_tx_seg s;
    /* Send with SE = 0x5, Send with Invalidate = 0x4, with SE = 0x6 (RFC 5040 §4.1 Table);
     * zero-length messages are one segment each (seed 001 §4.4); MSN 1, 2, 3. */
    static const uint8_t h1[18] = {0x41, 0x45, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    static const uint8_t h2[18] = {0x41, 0x44, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0,
                                   0,    0,    0,    0,    2,    0,    0, 0, 0};
    static const uint8_t h3[18] = {0x41, 0x46, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0};
    const uint8_t *want[3] = {h1, h2, h3};
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &s), 1);
        ASSERT_EQ_U(s.hdr_len, 18);
        ASSERT_MEM_EQ(s.hdr, want[i], 18);
        ASSERT_EQ_U(s.payload_len, 0);
        iwarp_core_qp_tx_sent(&Q, &s);
    }
    struct iwarp_wc wc[4];
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, wc, 4), 3); /* sq_sig_all */
}

/* Which WRs the fast path produces (none in the ".general" run): a Send, a Send with SE and a
 * Write whose payload fits one segment. The rest start the general way; every segment is the
 * same either way (the golden headers of this file, checked in both runs). */
TEST(header_prediction_takes_one_segment_sends_and_writes)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s5 = sge_of(0, 5), s40 = sge_of(8, 40);
    struct iwarp_send_wr w[] = {
        wr_of(IWARP_WR_SEND, 1, &s5, 1, 0),                    /* predicted */
        wr_of(IWARP_WR_SEND, 2, &s5, 1, IWARP_SEND_SOLICITED), /* predicted */
        wr_of(IWARP_WR_RDMA_WRITE, 3, &s5, 1, 0),              /* predicted */
        wr_of(IWARP_WR_SEND, 4, &s40, 1, 0),                   /* two segments */
        wr_of(IWARP_WR_SEND, 5, NULL, 0, 0),                   /* no payload */
        wr_of(IWARP_WR_SEND, 6, &s5, 1, IWARP_SEND_FENCE),     /* fenced */
        wr_of(IWARP_WR_SEND_WITH_INV, 7, &s5, 1, 0),
    };
    w[2].wr.rdma.remote_addr = 0x2000;
    w[2].wr.rdma.rkey = 0x11223344u;
    uint8_t want[] = {1, 2, 3, 3, 3, 3, 3, 3};
    struct iwarp_core_tx_seg seg;
    uint32_t msn = 0, nseg = 0;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w[i]), 0);
        while (iwarp_core_qp_tx_next(&Q, 50, &seg) == 1) {
            ASSERT_EQ_U(Q.tx_predicted, general_run() ? 0 : want[nseg]);
            if (!(seg.hdr[0] & 0x80) && seg.last) /* untagged: RFC 5041 §4.3 MSN 1, 2, ... */
                ASSERT_EQ_U(((uint32_t)seg.hdr[12] << 8 | seg.hdr[13]), ++msn);
            iwarp_core_qp_tx_sent(&Q, &seg);
            nseg++;
        }
    }
    ASSERT_EQ_U(nseg, 8);
    struct iwarp_wc wc[8];
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, wc, 8), 7);
    for (int i = 0; i < 7; i++) {
        ASSERT_EQ_U(wc[i].wr_id, (uint64_t)i + 1);
        ASSERT_EQ(wc[i].status, IWARP_WC_SUCCESS);
    }
}

TEST(write_segmented_with_tagged_offsets)
{
    setup(false);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 100);
    struct iwarp_send_wr w = wr_of(IWARP_WR_RDMA_WRITE, 5, &s, 1, IWARP_SEND_SIGNALED);
    w.wr.rdma.remote_addr = 0x1000;
    w.wr.rdma.rkey = 0x12345678u;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    /* max segment 14 + 40: segments of 40, 40, 20 payload octets; TO advances per segment
     * (RFC 5041 §5.2); only the last has L. */
    uint8_t got[100];
    size_t n = 0;
    struct iwarp_core_tx_seg seg[3];
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 54, &seg[i]), 1);
        ASSERT_EQ_U(seg[i].hdr_len, 14);
        uint64_t to = 0x1000u + 40u * (unsigned)i;
        uint8_t h[14] = {i == 2 ? 0xC1 : 0x81, 0x40,       0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0, 0,
                         (uint8_t)(to >> 8),   (uint8_t)to};
        ASSERT_MEM_EQ(seg[i].hdr, h, 14);
        n += gather(&seg[i], got + n);
    }
    ASSERT_EQ_U(n, 100);
    ASSERT_MEM_EQ(got, buf, 100);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 54, &seg[0]), 0);
    struct iwarp_wc wc;
    iwarp_core_qp_tx_sent(&Q, &seg[0]);
    iwarp_core_qp_tx_sent(&Q, &seg[1]);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 0);
    iwarp_core_qp_tx_sent(&Q, &seg[2]);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_WRITE);
    ASSERT_EQ_U(wc.byte_len, 100);
}

TEST(read_request_golden_ord_limit_and_fence)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 1), 0); /* ORD 1 */
    struct iwarp_sge s = sge_of(16, 64);
    struct iwarp_send_wr r1 = wr_of(IWARP_WR_RDMA_READ, 1, &s, 1, 0);
    r1.wr.rdma.remote_addr = 0x0102030405060708u;
    r1.wr.rdma.rkey = 0xCAFEBABEu;
    struct iwarp_send_wr r2 = r1;
    r2.wr_id = 2;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &r1), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &r2), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    /* RFC 5040 §4.4: untagged, QN 1, MSN 1, then Sink STag/TO, RDMARDSZ, Source STag/TO. */
    uint64_t sink_to = (uint64_t)(uintptr_t)(buf + 16);
    uint8_t h[46] = {0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        h[18 + i] = (uint8_t)(lkey >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        h[22 + i] = (uint8_t)(sink_to >> (56 - 8 * i));
    h[33] = 64;
    static const uint8_t src[12] = {0xCA, 0xFE, 0xBA, 0xBE, 1, 2, 3, 4, 5, 6, 7, 8};
    memcpy(h + 34, src, 12);
    ASSERT_EQ_U(seg.hdr_len, 46);
    ASSERT_MEM_EQ(seg.hdr, h, 46);
    ASSERT_EQ_U(seg.payload_len, 0);
    iwarp_core_qp_tx_sent(&Q, &seg);
    /* ORD 1: the second Read waits for the first to complete (RFC 5040 §5.4). */
    ASSERT_FALSE(iwarp_core_qp_tx_pending(&Q));
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 0); /* a Read completes on its response */
    ASSERT_EQ_U(Q.orq_count, 1);
    ASSERT_EQ_U(Q.orq[Q.orq_head].len, 64);
    ASSERT_EQ_U(Q.orq[Q.orq_head].sink_stag, lkey);
}

/* Post a signaled Read of 16 octets into buf[16 * id]. */
static void post_read16(uint64_t id)
{
    struct iwarp_sge s = sge_of(16 * id, 16);
    struct iwarp_send_wr r = wr_of(IWARP_WR_RDMA_READ, id, &s, 1, 0);
    r.wr.rdma.rkey = 0x100;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &r), 0);
}

/* Produce and send every segment that may go now; returns how many Read Requests they were. */
static int send_ready(void)
{
    struct iwarp_core_tx_seg seg;
    int n = 0;
    while (iwarp_core_qp_tx_next(&Q, 1024, &seg) == 1) {
        ASSERT_EQ(seg.hdr[1] & 0x0F, 0x1);
        iwarp_core_qp_tx_sent(&Q, &seg);
        n++;
    }
    return n;
}

/* The last (only) Read Response segment for the Read of post_read16(id); its completion. */
static void answer_read16(uint64_t id)
{
    struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_READ_RESP,
                               .last = true,
                               .stag = lkey,
                               .to = (uint64_t)(uintptr_t)(buf + 16 * id)};
    uint8_t s[64];
    iwarp_ssize n = iwarp_wire_segment_encode(s, sizeof s, &m, buf, 16);
    ASSERT_EQ(n, 30);
    ASSERT_EQ(iwarp_core_qp_rx_segment(&Q, s, (size_t)n), 0);
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, id);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
}

TEST(read_requests_go_in_batches_while_many_large_reads_are_outstanding)
{
    read_batch = 64; /* 4 Reads of 16 octets */
    setup(true);
    read_batch = 0;
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, SQ), 0); /* ORD 8 */
    for (uint64_t id = 1; id <= 8; id++)
        post_read16(id);
    ASSERT_EQ(send_ready(), 8); /* the first fill: up to the ORD */
    /* 7 outstanding (over half the ORD, 112 octets asked): the next Request waits */
    answer_read16(1);
    post_read16(9);
    ASSERT_FALSE(iwarp_core_qp_tx_pending(&Q));
    ASSERT_EQ(send_ready(), 0);
    answer_read16(2);
    answer_read16(3);
    answer_read16(4); /* 4 outstanding, 64 octets: still waiting */
    post_read16(10);
    post_read16(11);
    post_read16(12);
    ASSERT_FALSE(iwarp_core_qp_tx_pending(&Q));
    /* under half the ORD: all four go together, in order */
    answer_read16(5);
    ASSERT_TRUE(iwarp_core_qp_tx_pending(&Q));
    uint32_t msn = Q.read_msn;
    ASSERT_EQ(send_ready(), 4);
    ASSERT_EQ_U(Q.read_msn, msn + 4);
    ASSERT_EQ_U(Q.orq_count, 7);
    /* the batch ended with the SQ: the next one waits again */
    answer_read16(6);
    post_read16(13);
    ASSERT_EQ(send_ready(), 0);
    int sent = 0;
    for (uint64_t id = 7; id <= 13; id++) {
        answer_read16(id);
        sent += send_ready();
        ASSERT_EQ(sent, id >= 9 ? 1 : 0); /* 13 goes once 3 are outstanding */
    }
    ASSERT_EQ_U(Q.orq_count, 0);
    ASSERT_EQ_U(Q.orq_octets, 0);
}

TEST(small_reads_go_at_once_up_to_the_ord)
{
    setup(true); /* the default batch: 256 KiB, far more than 8 Reads of 16 octets ask */
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, SQ), 0);
    for (uint64_t id = 1; id <= 8; id++)
        post_read16(id);
    ASSERT_EQ(send_ready(), 8);
    for (uint64_t id = 9; id <= 16; id++) {
        answer_read16(id - 8);
        post_read16(id);
        ASSERT_EQ(send_ready(), 1);
    }
}

TEST(fence_waits_for_prior_reads)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr r = wr_of(IWARP_WR_RDMA_READ, 1, &s, 1, 0);
    r.wr.rdma.rkey = 0x100;
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 2, &s, 1, IWARP_SEND_FENCE);
    struct iwarp_send_wr w3 = wr_of(IWARP_WR_SEND, 3, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &r), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w3), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0x1);
    iwarp_core_qp_tx_sent(&Q, &seg);
    /* the fenced Send (and everything after it) waits */
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
}

TEST(inline_copies_at_post_time)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    uint8_t data[80];
    memset(data, 0x5A, sizeof data);
    struct iwarp_sge s = {(uint64_t)(uintptr_t)data, 80, 0 /* lkey ignored for inline */};
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, IWARP_SEND_INLINE);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    memset(data, 0, sizeof data); /* the caller may reuse the buffer at once */
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    uint8_t pl[80], want[80];
    memset(want, 0x5A, sizeof want);
    ASSERT_EQ_U(gather(&seg, pl), 80);
    ASSERT_MEM_EQ(pl, want, 80);
    s.length = 81;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL); /* over max_inline */
}

TEST(post_validation)
{
    setup(false);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    w.send_flags = 1u << 7; /* unknown flag */
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    /* RFC 7306 work requests on a connection that did not enable the extensions */
    const enum iwarp_wr_opcode ext_ops[] = {
        IWARP_WR_ATOMIC_FETCH_AND_ADD,        IWARP_WR_ATOMIC_CMP_AND_SWP,
        IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD, IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP,
        IWARP_WR_RDMA_WRITE_WITH_IMM,         IWARP_WR_IMM_DATA};
    for (size_t i = 0; i < sizeof ext_ops / sizeof ext_ops[0]; i++) {
        w = wr_of(ext_ops[i], 1, &s, ext_ops[i] == IWARP_WR_IMM_DATA ? 0 : 1, 0);
        ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_RDMAP_EXT_OFF);
    }
    w = wr_of(IWARP_WR_SEND_WITH_IMM, 1, &s, 1, 0); /* docs/design.md: never */
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_NOTSUP);
    w = wr_of(IWARP_WR_TSO, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    struct iwarp_sge two[2] = {sge_of(0, 8), sge_of(8, 8)};
    w = wr_of(IWARP_WR_RDMA_READ, 1, two, 2, 0); /* one sink SGE */
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    struct iwarp_sge bad = sge_of(8190, 8); /* past the MR */
    w = wr_of(IWARP_WR_SEND, 1, &bad, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_MEM_BOUNDS);
    bad = sge_of(0, 8);
    bad.lkey ^= 0xFFu; /* wrong key */
    w = wr_of(IWARP_WR_SEND, 1, &bad, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_STAG_INVALID);
    w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    for (int i = 0; i < SQ; i++)
        ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_NOSPC);
}

TEST(a_read_on_a_connection_without_ord_is_refused_at_post)
{
    setup(false);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 0), 0); /* ORD 0: no Read may ever be outstanding */
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr w = wr_of(IWARP_WR_RDMA_READ, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    ASSERT_FALSE(iwarp_core_qp_tx_pending(&Q));
}

TEST(completions_keep_posting_order_and_unsignaled_are_silent)
{
    setup(false);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr r = wr_of(IWARP_WR_RDMA_READ, 1, &s, 1, IWARP_SEND_SIGNALED);
    struct iwarp_send_wr w2 = wr_of(IWARP_WR_SEND, 2, &s, 1, 0);
    struct iwarp_send_wr w3 = wr_of(IWARP_WR_SEND, 3, &s, 1, IWARP_SEND_SIGNALED);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &r), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w2), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w3), 0);
    struct iwarp_core_tx_seg seg;
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
        iwarp_core_qp_tx_sent(&Q, &seg);
    }
    struct iwarp_wc wc[4];
    /* the Sends are sent but wait behind the outstanding Read */
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, wc, 4), 0);
    iwarp_core_qp_set_error(&Q); /* flush: the Read fails, the rest follow in order */
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, wc, 4), 3);
    ASSERT_EQ_U(wc[0].wr_id, 1);
    ASSERT_EQ(wc[0].status, IWARP_WC_WR_FLUSH_ERR);
    /* the two Sends had been sent before the flush but wait behind the Read: verbs reports
     * only flushes after the first error, so 2 and 3 are flushed (and reported, signaled or
     * not) */
    ASSERT_EQ_U(wc[1].wr_id, 2);
    ASSERT_EQ(wc[1].status, IWARP_WC_WR_FLUSH_ERR);
}

TEST(local_invalidate_runs_in_order_without_wire_traffic)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_send_wr w = wr_of(IWARP_WR_LOCAL_INV, 4, NULL, 0, 0);
    w.invalidate_rkey = lkey;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ(wc.opcode, IWARP_WC_LOCAL_INV);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    uint64_t local;
    ASSERT_EQ(iwarp_mem_check_local(&T, lkey, (uint64_t)(uintptr_t)buf, 1, 0, PD, &local),
              IWARP_ERR_STAG_INVALID);
    /* invalidating it again is allowed; a wrong key is a local protection error */
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    w.invalidate_rkey = lkey ^ 0xFFu;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
}

TEST(terminate_goes_first_and_flushes)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    /* RDMAP Remote Operation Invalid Opcode (0/2/0x06), no offender header */
    iwarp_core_qp_terminate(&Q, (struct iwarp_term_cause){0, 2, 6}, NULL, 0);
    ASSERT_EQ(nevents, 1);
    ASSERT_EQ(events[0], IWARP_EVENT_QP_FATAL);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    /* RFC 5040 §4.8: untagged L, opcode 7, QN 2, MSN 1, MO 0; Terminate Control 0x02 0x06
     * (layer 0, etype 2, code 0x06), no header copies, reserved. */
    static const uint8_t t[22] = {0x41, 0x47, 0, 0, 0, 0, 0, 0,    0,    2, 0,
                                  0,    0,    1, 0, 0, 0, 0, 0x02, 0x06, 0, 0};
    ASSERT_EQ_U(seg.hdr_len, 22);
    ASSERT_MEM_EQ(seg.hdr, t, 22);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0); /* nothing after a Terminate */
    ASSERT_FALSE(iwarp_core_qp_tx_close(&Q));
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_TRUE(iwarp_core_qp_tx_close(&Q));
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    /* posting after the error completes at once with a flush */
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
}

TEST(graceful_disconnect_drains_then_closes)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    iwarp_core_qp_disconnect(&Q);
    ASSERT_EQ(iwarp_core_qp_verbs_state(&Q), IWARP_QPS_SQD);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_STATE);
    ASSERT_FALSE(iwarp_core_qp_tx_close(&Q));
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    ASSERT_FALSE(iwarp_core_qp_tx_close(&Q));
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_TRUE(iwarp_core_qp_tx_close(&Q));
    iwarp_core_qp_llp_closed(&Q, true);
    ASSERT_EQ(iwarp_core_qp_verbs_state(&Q), IWARP_QPS_ERR);
    ASSERT_EQ(nevents, 0); /* an orderly close is not an error */
}

TEST(memory_deregistered_under_posted_work_fails_it_without_touching_it)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    w.wr_id = 2;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    struct iwarp_recv_wr r = {.wr_id = 9, .sg_list = &s, .num_sge = 1};
    ASSERT_EQ(iwarp_core_qp_post_recv(&Q, &r), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    iwarp_core_qp_tx_sent(&Q, &seg);
    /* ibv_dereg_mr does not wait for the WRs (an RNIC's does not): the STag goes at once */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, lkey), 0);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, lkey), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_STAG_INVALID);
    /* the second Send reaches it at TX: LOC_PROT_ERR, nothing of it on the wire */
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
    struct iwarp_wc wc[3];
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, wc, 3), 2u);
    ASSERT_EQ_U(wc[0].wr_id, 1u);
    ASSERT_EQ(wc[0].status, IWARP_WC_SUCCESS);
    ASSERT_EQ_U(wc[1].wr_id, 2u);
    ASSERT_EQ(wc[1].status, IWARP_WC_LOC_PROT_ERR);
    /* the receive still names the index: it stays taken until the receive is flushed */
    ASSERT_EQ_U(E[iwarp_stag_index(lkey)].state, IWARP_MEM_RETIRED);
    iwarp_core_qp_set_error(&Q);
    ASSERT_EQ_U(E[iwarp_stag_index(lkey)].state, IWARP_MEM_FREE);
    ASSERT_EQ_U(T.nretired, 0u);
}

TEST(memory_deregistered_under_a_half_sent_message_ends_the_stream)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 2048);
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    ASSERT_FALSE(seg.last);
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, lkey), 0);
    /* the rest cannot be read: a Terminate, RDMAP local catastrophic (RFC 5040 §7.2) */
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    ASSERT_EQ(seg.src, IWARP_CORE_TX_TERM);
    ASSERT_EQ_U(seg.payload_len, 0u);
    ASSERT_EQ_U(seg.hdr[18], 0x00u); /* layer RDMAP, etype local catastrophic */
    ASSERT_EQ_U(seg.hdr[19], 0x00u);
    ASSERT_EQ(nevents, 1);
    ASSERT_EQ(events[0], IWARP_EVENT_QP_FATAL);
    iwarp_core_qp_tx_sent(&Q, &seg);
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1u);
    ASSERT_NE(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ_U(E[iwarp_stag_index(lkey)].state, IWARP_MEM_FREE);
}

TEST(fini_releases_work_never_completed)
{
    setup(true);
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    struct iwarp_sge s = sge_of(0, 8);
    struct iwarp_send_wr w = wr_of(IWARP_WR_SEND, 1, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1); /* the LLP holds it: flush waits */
    iwarp_core_qp_set_error(&Q);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, lkey), 0);
    ASSERT_EQ_U(E[iwarp_stag_index(lkey)].state, IWARP_MEM_RETIRED); /* the flush waits */
    iwarp_core_qp_fini(&Q);
    ASSERT_EQ_U(E[iwarp_stag_index(lkey)].state, IWARP_MEM_FREE);
}

/* ---- RFC 7306: Immediate Data and atomics ------------------------------------------------ */

static void setup_rdmap_ext(uint32_t ird, uint32_t ord)
{
    rdmap_ext = IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS;
    setup(true);
    rdmap_ext = 0;
    ASSERT_EQ(iwarp_core_qp_start(&Q, ird, ord), 0);
}

/* The next segment is produced, equals want[0..n) (header) and is handed back as sent. */
static struct iwarp_core_tx_seg expect_seg(const uint8_t *want, size_t n)
{
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    ASSERT_EQ_U(seg.hdr_len, n);
    ASSERT_MEM_EQ(seg.hdr, want, n);
    return seg;
}

static void put_be(uint8_t *p, uint64_t v, int octets)
{
    for (int i = 0; i < octets; i++)
        p[i] = (uint8_t)(v >> (8 * (octets - 1 - i)));
}

TEST(write_with_immediate_is_a_write_then_immediate_data)
{
    setup_rdmap_ext(4, 4);
    struct iwarp_sge s = sge_of(0, 5);
    struct iwarp_send_wr w = wr_of(IWARP_WR_RDMA_WRITE_WITH_IMM, 7, &s, 1, IWARP_SEND_SOLICITED);
    w.wr.rdma.remote_addr = 0x0102030405060708u;
    w.wr.rdma.rkey = 0xCAFEBABEu;
    const uint8_t imm4[4] = {0x11, 0x22, 0x33, 0x44};
    memcpy(&w.imm_data, imm4, 4);
    struct iwarp_send_wr send = wr_of(IWARP_WR_SEND, 8, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &send), 0);
    /* RFC 5040 §4.3: the Write, tagged, with its payload */
    static const uint8_t wr_hdr[14] = {0xC1, 0x40, 0xCA, 0xFE, 0xBA, 0xBE, 1, 2, 3, 4, 5, 6, 7, 8};
    struct iwarp_core_tx_seg w1 = expect_seg(wr_hdr, 14);
    ASSERT_EQ_U(w1.payload_len, 5);
    ASSERT_FALSE(w1.wr_done);
    iwarp_core_qp_tx_sent(&Q, &w1);
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 0); /* not before its Immediate Data */
    /* RFC 7306 §6.2-§6.3: Immediate Data with SE (0x9), QN 0, MSN 1, MO 0, then the 8
     * octets: imm_data's 4 as posted, then zeros */
    static const uint8_t imm_hdr[26] = {0x41, 0x49, 0, 0, 0, 0,    0,    0,    0,    0, 0, 0, 0,
                                        1,    0,    0, 0, 0, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0};
    struct iwarp_core_tx_seg i1 = expect_seg(imm_hdr, 26);
    ASSERT_EQ_U(i1.payload_len, 0);
    ASSERT_TRUE(i1.wr_done);
    iwarp_core_qp_tx_sent(&Q, &i1);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, 7);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_WRITE);
    ASSERT_EQ_U(wc.byte_len, 5);
    /* the Send after it continues queue 0's MSNs: 2 */
    struct iwarp_core_tx_seg s2;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &s2), 1);
    ASSERT_EQ(s2.hdr[1], 0x43);
    ASSERT_EQ(s2.hdr[13], 2);
    /* the Immediate Data message alone: the 8 octets of imm_data64, big-endian */
    struct iwarp_send_wr imm = wr_of(IWARP_WR_IMM_DATA, 9, NULL, 0, 0);
    imm.imm_data64 = 0xA1A2A3A4A5A6A7A8u;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &imm), 0);
    iwarp_core_qp_tx_sent(&Q, &s2);
    static const uint8_t imm_alone[26] = {0x41, 0x48, 0,    0,    0,    0,    0,    0,   0,
                                          0,    0,    0,    0,    3,    0,    0,    0,   0,
                                          0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8};
    struct iwarp_core_tx_seg i2 = expect_seg(imm_alone, 26);
    iwarp_core_qp_tx_sent(&Q, &i2);
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1); /* the Send */
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, 9);
    ASSERT_EQ(wc.opcode, IWARP_WC_SEND);
    ASSERT_EQ_U(wc.byte_len, 0);
    /* the Immediate Data message carries nothing else */
    struct iwarp_send_wr bad = wr_of(IWARP_WR_IMM_DATA, 10, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &bad), IWARP_ERR_INVAL);
}

TEST(write_with_immediate_segments_and_lets_no_message_between)
{
    /* a Write of several segments: the Read Response waiting in the IRQ goes only after the
     * Immediate Data (messages never interleave, and the pair is one work request) */
    setup_rdmap_ext(4, 4);
    struct iwarp_sge s = sge_of(0, 3000);
    struct iwarp_send_wr w = wr_of(IWARP_WR_RDMA_WRITE_WITH_IMM, 1, &s, 1, 0);
    w.wr.rdma.rkey = 0x100;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    Q.irq[0] = (struct iwarp_core_irqe){.atomic = true, .req_id = 5, .orig_value = 6};
    Q.irq_count = 1;
    uint32_t written = 0;
    struct iwarp_core_tx_seg seg;
    for (;;) {
        ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
        if ((seg.hdr[1] & 0x0F) != 0x0)
            break;
        written += seg.payload_len;
        iwarp_core_qp_tx_sent(&Q, &seg);
    }
    ASSERT_EQ_U(written, 3000);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0x8); /* Immediate Data, not the Atomic Response */
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0xB);
}

/* The Atomic Request an atomic WR of sink buf[8..16) to STag 0xCAFEBABE at TO 0x0102..08
 * produces (RFC 7306 §5.2.1 Figure 4): untagged QN 1 with msn, then the 52-octet header. */
static void expect_atomic_req(uint32_t msn, uint8_t aopcode, uint32_t req_id, uint64_t add_swap,
                              uint64_t add_swap_mask, uint64_t compare, uint64_t compare_mask)
{
    uint8_t h[70] = {0x41, 0x4A, 0, 0, 0, 0, 0, 0, 0, 1};
    put_be(h + 10, msn, 4);
    put_be(h + 18, aopcode, 4); /* Reserved (28 bits, zero) and AOpCode */
    put_be(h + 22, req_id, 4);
    put_be(h + 26, 0xCAFEBABEu, 4);
    put_be(h + 30, 0x0102030405060708u, 8);
    put_be(h + 38, add_swap, 8);
    put_be(h + 46, add_swap_mask, 8);
    put_be(h + 54, compare, 8);
    put_be(h + 62, compare_mask, 8);
    struct iwarp_core_tx_seg seg = expect_seg(h, 70);
    ASSERT_EQ_U(seg.payload_len, 0);
    iwarp_core_qp_tx_sent(&Q, &seg);
}

static struct iwarp_send_wr atomic_wr(enum iwarp_wr_opcode op, uint64_t id, struct iwarp_sge *s)
{
    struct iwarp_send_wr w = wr_of(op, id, s, 1, 0);
    w.wr.atomic.remote_addr = 0x0102030405060708u;
    w.wr.atomic.rkey = 0xCAFEBABEu;
    w.wr.atomic.compare_add = 0x1111111111111111u;
    w.wr.atomic.swap = 0x2222222222222222u;
    w.masked_atomic.compare_add_mask = 0x00000000FFFFFFFFu;
    w.masked_atomic.swap_mask = 0xFFFFFFFF00000000u;
    return w;
}

TEST(atomic_requests_golden_share_ord_and_queue_1_with_reads)
{
    setup_rdmap_ext(4, 4);
    struct iwarp_sge s = sge_of(8, 8);
    const uint64_t ones = UINT64_MAX;
    const enum iwarp_wr_opcode ops[4] = {IWARP_WR_ATOMIC_FETCH_AND_ADD, IWARP_WR_ATOMIC_CMP_AND_SWP,
                                         IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD,
                                         IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP};
    for (int i = 0; i < 4; i++) {
        struct iwarp_send_wr w = atomic_wr(ops[i], (uint64_t)i, &s);
        ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    }
    struct iwarp_sge rs = sge_of(100, 4);
    struct iwarp_send_wr r = wr_of(IWARP_WR_RDMA_READ, 5, &rs, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &r), 0);
    /* the verbs forms: Add Mask 0, all-ones Swap and Compare Masks, FetchAdd's Compare Data 0
     * (RFC 7306 §5.2.1: "set to zero ... ffffffffffffffffh on transmit"); Request
     * Identifiers 0, 1, ... */
    expect_atomic_req(1, 0, 0, 0x1111111111111111u, 0, 0, ones);
    expect_atomic_req(2, 2, 1, 0x2222222222222222u, ones, 0x1111111111111111u, ones);
    /* the masked forms carry the masks */
    expect_atomic_req(3, 0, 2, 0x1111111111111111u, 0x00000000FFFFFFFFu, 0, ones);
    expect_atomic_req(4, 2, 3, 0x2222222222222222u, 0xFFFFFFFF00000000u, 0x1111111111111111u,
                      0x00000000FFFFFFFFu);
    /* ORD 4 is full of atomics: the Read waits (RFC 7306 §5.2: the same ORD) */
    ASSERT_FALSE(iwarp_core_qp_tx_pending(&Q));
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
    ASSERT_EQ_U(Q.orq_count, 4);
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(&scq, &wc, 1), 0); /* atomics complete on their response */
}

TEST(atomic_post_validation)
{
    setup_rdmap_ext(4, 4);
    struct iwarp_sge s = sge_of(8, 8);
    struct iwarp_send_wr w = atomic_wr(IWARP_WR_ATOMIC_FETCH_AND_ADD, 1, &s);
    s.length = 4; /* the sink is the 8 octets of the original value */
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    s.length = 8;
    w.num_sge = 0;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    w.num_sge = 1;
    w.send_flags = IWARP_SEND_INLINE;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    w.send_flags = 0;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
    /* ORD 0: no Atomic Request could ever be issued, as a Read */
    setup_rdmap_ext(4, 0);
    w = atomic_wr(IWARP_WR_ATOMIC_CMP_AND_SWP, 1, &s);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_INVAL);
    /* only Immediate Data enabled: the atomics are still refused */
    rdmap_ext = IWARP_RDMAP_EXT_IMM_DATA;
    setup(true);
    rdmap_ext = 0;
    ASSERT_EQ(iwarp_core_qp_start(&Q, 4, 4), 0);
    s = sge_of(8, 8); /* this setup's MR */
    w = atomic_wr(IWARP_WR_ATOMIC_CMP_AND_SWP, 1, &s);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), IWARP_ERR_RDMAP_EXT_OFF);
    w = wr_of(IWARP_WR_RDMA_WRITE_WITH_IMM, 2, &s, 1, 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &w), 0);
}

TEST(fence_waits_for_prior_atomics)
{
    setup_rdmap_ext(4, 4);
    struct iwarp_sge s = sge_of(8, 8);
    struct iwarp_send_wr a = atomic_wr(IWARP_WR_ATOMIC_FETCH_AND_ADD, 1, &s);
    struct iwarp_send_wr f = wr_of(IWARP_WR_SEND, 2, &s, 1, IWARP_SEND_FENCE);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &a), 0);
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &f), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0xA);
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_FALSE(iwarp_core_qp_tx_pending(&Q)); /* verbs Fence: until the atomic completes */
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1024, &seg), 0);
}
