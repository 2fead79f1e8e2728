/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP engine's receive half: segments written by hand from the RFC 5040 §4 / RFC 5041 §4
 * layouts are fed to a running QP over a real STag table; placement is checked byte for byte,
 * completions field by field, and every error by the exact Terminate the QP then sends
 * (written out by hand from RFC 5040 §4.8: control, offender length and header copy).
 * The two-phase receive (iwarp_core_qp_rx_hdr / _rx_payload_done) that direct placement uses:
 * destinations for the whole payload, checks before any octet, delivery only in phase 2.
 */
#include "core/core_qp.h"
#include "core/core_qp_int.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"
#include "predict.h"

#define LW IWARP_MEM_ACCESS_LOCAL_WRITE
#define RW IWARP_MEM_ACCESS_REMOTE_WRITE
#define RR IWARP_MEM_ACCESS_REMOTE_READ
#define RA IWARP_MEM_ACCESS_REMOTE_ATOMIC

enum { PD = 3, PD2 = 4, QPN = 17, BUF = 4096, RQ = 8 };

/* ---- fixture --------------------------------------------------------------------------- */

static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[32];
static uint32_t seed = 0x5eed1u;
static uint8_t buf[BUF];    /* registered LW|RW|RR, VA-based: TO == address */
static uint8_t shadow[BUF]; /* what buf must hold */
static uint32_t mr;
static struct iwarp_wc sring[64], rring[64];
static struct iwarp_core_cq scq, rcq;
static struct iwarp_core_sqe sq[16];
static struct iwarp_core_rqe rq[RQ];
static uint64_t rq_lens[RQ];
static struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
static struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
static uint64_t irq_lens[IWARP_CORE_MAX_IRD];
static struct iwarp_core_srq srq;
static struct iwarp_core_rqe srq_ring[4];
static struct iwarp_core_qp Q;
static int nev, ev_type[8];
static uint32_t ev_cause[8];
static bool ev_peer[8];
static int nnotify;
static uint32_t rdmap_ext; /* the RFC 7306 extensions the next setup enables */

static void on_event(void *user, struct iwarp_core_qp *qp, int type, uint32_t cause, bool peer)
{
    (void)user;
    (void)qp;
    if (nev < 8) {
        ev_type[nev] = type;
        ev_cause[nev] = cause;
        ev_peer[nev] = peer;
    }
    nev++;
}

static void on_notify(void *user, struct iwarp_core_cq *cq, enum iwarp_core_cq_why why)
{
    (void)user;
    (void)cq;
    if (why == IWARP_CORE_CQ_FIRED)
        nnotify++;
}

static uint64_t va(size_t off)
{
    return (uint64_t)(uintptr_t)(buf + off);
}

static uint32_t reg(size_t off, size_t len, uint32_t pd, uint32_t access)
{
    struct iwarp_mem_range r = {.addr = va(off), .iova = va(off), .length = len, .access = access};
    uint32_t stag = 0;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, pd, &r, &stag), 0);
    return stag;
}

static void setup_ext(bool use_srq, uint32_t ird)
{
    ASSERT_EQ(iwarp_mem_table_init(&T, E, 32, harness_xorshift32, &seed), 0);
    for (size_t i = 0; i < BUF; i++)
        buf[i] = shadow[i] = (uint8_t)(0xA5 ^ i);
    mr = reg(0, BUF, PD, LW | RW | RR);
    ASSERT_EQ(iwarp_core_cq_init(&scq, sring, 64, on_notify, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&rcq, rring, 64, on_notify, NULL), 0);
    if (use_srq) {
        ASSERT_EQ(iwarp_core_rq_init(&srq.rq, srq_ring, 4, IWARP_CORE_MAX_SGE), 0);
        srq.pd = PD;
        srq.limit = 0;
        srq.limit_fired = false;
    }
    struct iwarp_core_qp_cfg cfg = {.qp_num = QPN,
                                    .pd = PD,
                                    .mem = &T,
                                    .send_cq = &scq,
                                    .recv_cq = &rcq,
                                    .srq = use_srq ? &srq : NULL,
                                    .sq_cap = 16,
                                    .rq_cap = use_srq ? 0 : RQ,
                                    .max_send_sge = IWARP_CORE_MAX_SGE,
                                    .max_recv_sge = IWARP_CORE_MAX_SGE,
                                    .max_inline = 0,
                                    .rdmap_ext = rdmap_ext,
                                    .event = on_event};
    struct iwarp_core_qp_mem m = {.sq = sq,
                                  .rq = use_srq ? NULL : rq,
                                  .rq_lens = rq_lens,
                                  .orq = orq,
                                  .irq = irq,
                                  .irq_lens = irq_lens};
    ASSERT_EQ(iwarp_core_qp_init(&Q, &cfg, &m), 0);
    general_path(&Q);
    ASSERT_EQ(iwarp_core_qp_start(&Q, ird, 4), 0);
    nev = 0;
    nnotify = 0;
}

static void setup(void)
{
    setup_ext(false, 2);
}

/* Post a receive of the given SGEs (offset, length) pairs in buf. */
static void post_recv(uint64_t wr_id, int n, const size_t *sges)
{
    struct iwarp_sge sg[IWARP_CORE_MAX_SGE];
    for (int i = 0; i < n; i++)
        sg[i] = (struct iwarp_sge){
            .addr = va(sges[2 * i]), .length = (uint32_t)sges[2 * i + 1], .lkey = mr};
    struct iwarp_recv_wr wr = {.wr_id = wr_id, .sg_list = sg, .num_sge = n};
    ASSERT_EQ(iwarp_core_qp_post_recv(&Q, &wr), 0);
}

static void post_recv1(uint64_t wr_id, size_t off, size_t len)
{
    size_t s[2] = {off, len};
    post_recv(wr_id, 1, s);
}

static struct iwarp_wc poll1(struct iwarp_core_cq *cq)
{
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(cq, &wc, 1), 1);
    return wc;
}

static void expect_empty(struct iwarp_core_cq *cq)
{
    ASSERT_EQ(cq->count, 0);
}

/* buf must equal shadow: nothing was placed except what the test put into shadow. */
static void expect_buf(void)
{
    ASSERT_MEM_EQ(buf, shadow, BUF);
}

/* ---- segments by hand (RFC 5041 §4.2-4.3, RFC 5040 §4.1) ---------------------------------- */

static size_t be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
    return 4;
}

static size_t be64(uint8_t *p, uint64_t v)
{
    be32(p, (uint32_t)(v >> 32));
    be32(p + 4, (uint32_t)v);
    return 8;
}

/* Untagged: T=0, L, DV=1 | RV=1, opcode | Inv STag | QN | MSN | MO, then n payload octets. */
static size_t untagged(uint8_t *p, bool last, uint8_t op, uint32_t inv, uint32_t qn, uint32_t msn,
                       uint32_t mo, const void *payload, size_t n)
{
    p[0] = (uint8_t)(0x01 | (last ? 0x40 : 0));
    p[1] = (uint8_t)(0x40 | op);
    be32(p + 2, inv);
    be32(p + 6, qn);
    be32(p + 10, msn);
    be32(p + 14, mo);
    if (n)
        memcpy(p + 18, payload, n);
    return 18 + n;
}

/* Tagged: T=1, L, DV=1 | RV=1, opcode | STag | TO, then n payload octets. */
static size_t tagged(uint8_t *p, bool last, uint8_t op, uint32_t stag, uint64_t to,
                     const void *payload, size_t n)
{
    p[0] = (uint8_t)(0x81 | (last ? 0x40 : 0));
    p[1] = (uint8_t)(0x40 | op);
    be32(p + 2, stag);
    be64(p + 6, to);
    if (n)
        memcpy(p + 14, payload, n);
    return 14 + n;
}

/* Read Request (RFC 5040 §4.4): untagged QN 1, then sink STag/TO, size, source STag/TO. */
static size_t read_req(uint8_t *p, uint32_t msn, uint32_t sink, uint64_t sink_to, uint32_t size,
                       uint32_t src, uint64_t src_to)
{
    size_t n = untagged(p, true, 0x1, 0, 1, msn, 0, NULL, 0);
    n += be32(p + n, sink);
    n += be64(p + n, sink_to);
    n += be32(p + n, size);
    n += be32(p + n, src);
    n += be64(p + n, src_to);
    return n;
}

static const uint8_t data[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

static int feed(const uint8_t *seg, size_t n)
{
    return iwarp_core_qp_rx_segment(&Q, seg, n);
}

/*
 * The Terminate the QP must send (RFC 5040 §4.8): the untagged header of opcode 7 on QN 2 with
 * MSN 1 and MO 0, Layer|EType, Error Code, HdrCt (M D R) and Reserved; with D the offender's
 * length (its ULPDU_Length) and its DDP header (14/18 octets by T), with R its 28-octet Read
 * Request header. Checked against what tx_next produces.
 */
static void expect_term(uint8_t layer, uint8_t etype, uint8_t code, uint8_t hdrct,
                        const uint8_t *off, size_t off_len)
{
    uint8_t want[96];
    size_t n = untagged(want, true, 0x7, 0, 2, 1, 0, NULL, 0);
    want[n++] = (uint8_t)(layer << 4 | etype);
    want[n++] = code;
    want[n++] = hdrct;
    want[n++] = 0;
    if (hdrct & 0x40) {
        want[n++] = (uint8_t)(off_len >> 8);
        want[n++] = (uint8_t)off_len;
        size_t h = (off[0] & 0x80) ? 14 : 18;
        memcpy(want + n, off, h);
        n += h;
        if (hdrct & 0x20) {
            memcpy(want + n, off + 18, 28);
            n += 28;
        }
    }
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 1);
    ASSERT_EQ(seg.src, IWARP_CORE_TX_TERM);
    ASSERT_EQ(seg.payload_len, 0);
    ASSERT_EQ(seg.hdr_len, n);
    ASSERT_MEM_EQ(seg.hdr, want, n);
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_TERMINATING);
    ASSERT_EQ(Q.term_cause.layer, layer);
    ASSERT_EQ(Q.term_cause.etype, etype);
    ASSERT_EQ(Q.term_cause.ecode, code);
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 0); /* nothing after the Terminate */
}

static uint32_t cause_u32(uint8_t layer, uint8_t etype, uint8_t code)
{
    return (uint32_t)layer << 16 | (uint32_t)etype << 8 | code;
}

/* After an error: a later valid segment is dropped silently and places nothing. */
static void expect_dropped_after_error(void)
{
    uint8_t s[64];
    size_t n = tagged(s, true, 0x0, mr, va(3000), data, 8);
    ASSERT_EQ(feed(s, n), 0);
    n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 4);
    ASSERT_EQ(feed(s, n), 0);
    expect_buf();
}

/* ---- Sends ---------------------------------------------------------------------------- */

TEST(send_scattered_over_sges)
{
    setup();
    size_t sges[6] = {100, 3, 200, 0, 300, 20};
    post_recv(7, 3, sges);
    uint8_t s[64];
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 10);
    ASSERT_EQ(feed(s, n), 0);
    memcpy(shadow + 100, data, 3);
    memcpy(shadow + 300, data + 3, 7);
    expect_buf();
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 7);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, 10);
    ASSERT_EQ(wc.wc_flags, 0);
    ASSERT_EQ(wc.qp_num, QPN);
    ASSERT_EQ(Q.rq.count, 0);
    ASSERT_EQ(iwarp_ddp_rx_uq_expected_msn(&Q.uq_send), 2);
}

TEST(send_multi_segment_and_zero_length)
{
    setup();
    post_recv1(1, 64, 32);
    post_recv1(2, 128, 8);
    uint8_t s[64];
    ASSERT_EQ(feed(s, untagged(s, false, 0x3, 0, 0, 1, 0, data, 5)), 0);
    ASSERT_EQ(feed(s, untagged(s, false, 0x3, 0, 0, 1, 5, data + 5, 6)), 0);
    expect_empty(&rcq); /* delivered only with L (RFC 5040 §5.5 rule 16) */
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 1, 11, data + 11, 9)), 0);
    memcpy(shadow + 64, data, 20);
    expect_buf();
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 1);
    ASSERT_EQ(wc.byte_len, 20);
    /* RFC 5040 §5.3: a zero-length Send consumes a buffer */
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 2, 0, NULL, 0)), 0);
    wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 2);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 0);
    expect_buf();
}

TEST(send_into_a_receive_deregistered_since_the_post)
{
    /* ibv_dereg_mr does not wait for posted receives (as an RNIC's): the Send that reaches the
     * receive places nothing, the receive fails LOC_PROT_ERR and the stream ends DDP 1/0/0x00
     * (local catastrophic, as siw's for an unusable receive). */
    setup();
    post_recv1(1, 64, 32);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, mr), 0);
    uint8_t s[64];
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 10);
    ASSERT_EQ(feed(s, n), IWARP_ERR_STAG_INVALID);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 1);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(1, 0, 0x00));
    expect_term(1, 0, 0x00, 0x00, NULL, 0); /* a catastrophic cause carries no header */
    expect_buf();
    ASSERT_EQ_U(T.nretired, 0u); /* the receive let go: the index is free */
}

TEST(send_whose_receive_is_deregistered_while_it_arrives)
{
    /* Phase 1 found the receive usable; the payload then arrives after the deregistration
     * (placement checks iwarp_core_qp_rx_dst_valid before each write): nothing placed. */
    setup();
    post_recv1(1, 64, 32);
    uint8_t s[64];
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 10);
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t ndst = 0;
    ASSERT_EQ(iwarp_core_qp_rx_hdr(&Q, s, n, n, dst, IWARP_CORE_RX_IOV_MAX, &ndst), 0);
    ASSERT_EQ_U(ndst, 1u);
    ASSERT_TRUE(iwarp_core_qp_rx_dst_valid(&Q));
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, mr), 0);
    ASSERT_FALSE(iwarp_core_qp_rx_dst_valid(&Q));
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), IWARP_ERR_STAG_INVALID);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 1);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
    expect_buf();
    ASSERT_EQ_U(T.nretired, 0u);
}

TEST(send_se_fires_solicited_arm)
{
    setup();
    post_recv1(1, 0, 16);
    post_recv1(2, 16, 16);
    iwarp_core_cq_arm(&rcq, true);
    uint8_t s[64];
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 1, 0, data, 4)), 0);
    ASSERT_EQ(nnotify, 0); /* a Send without SE does not satisfy a solicited-only arm */
    ASSERT_EQ(feed(s, untagged(s, true, 0x5, 0, 0, 2, 0, data, 4)), 0);
    ASSERT_EQ(nnotify, 1);
    ASSERT_EQ(poll1(&rcq).byte_len, 4);
    ASSERT_EQ(poll1(&rcq).byte_len, 4);
}

TEST(send_with_invalidate)
{
    setup();
    uint32_t victim = reg(2048, 64, PD, LW | RW);
    uint32_t victim2 = reg(2112, 64, PD, LW | RR);
    post_recv1(1, 0, 16);
    post_recv1(2, 16, 16);
    iwarp_core_cq_arm(&rcq, true);
    uint8_t s[64];
    ASSERT_EQ(feed(s, untagged(s, true, 0x4, victim, 0, 1, 0, data, 6)), 0);
    ASSERT_EQ(nnotify, 0);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 6);
    ASSERT_EQ(wc.wc_flags, IWARP_WC_WITH_INV);
    ASSERT_EQ_U(wc.invalidated_rkey, victim);
    /* Send with SE and Invalidate: solicited too */
    ASSERT_EQ(feed(s, untagged(s, true, 0x6, victim2, 0, 2, 0, data, 2)), 0);
    ASSERT_EQ(nnotify, 1);
    wc = poll1(&rcq);
    ASSERT_EQ(wc.wc_flags, IWARP_WC_WITH_INV);
    ASSERT_EQ_U(wc.invalidated_rkey, victim2);
    memcpy(shadow, data, 6);
    memcpy(shadow + 16, data, 2);
    expect_buf();
    /* both STags are now invalid (RFC 5040 §2.4) */
    struct iwarp_mem_req r = {victim, va(2048), 1, RW, PD, QPN};
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_DDP, NULL, NULL),
              IWARP_ERR_STAG_INVALID);
    r = (struct iwarp_mem_req){victim2, va(2112), 1, RR, PD, QPN};
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_DDP, NULL, NULL),
              IWARP_ERR_STAG_INVALID);
}

TEST(send_with_invalidate_refused)
{
    /* RFC 5040 §5.3, §7.2 checks 4-5: an invalid STag is 0/2/0x09, a valid one of another PD
     * 0/1/0x09; the receive completes with REM_INV_REQ_ERR, then the Terminate. */
    setup();
    post_recv1(1, 0, 16);
    post_recv1(2, 16, 16);
    uint8_t s[64];
    uint32_t bogus = mr ^ 0x5500u;
    size_t n = untagged(s, true, 0x4, bogus, 0, 1, 0, data, 3);
    ASSERT_EQ(feed(s, n), IWARP_ERR_STAG_INVALID);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 1);
    ASSERT_EQ(wc.status, IWARP_WC_REM_INV_REQ_ERR);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(0, 2, 0x09));
    ASSERT_EQ(wc.wc_flags, 0);
    wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 2);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    expect_term(0, 2, 0x09, 0xC0, s, n);
    ASSERT_EQ(ev_type[0], IWARP_EVENT_QP_FATAL);
    ASSERT_EQ_U(ev_cause[0], cause_u32(0, 2, 0x09));
    ASSERT_FALSE(ev_peer[0]);
    memcpy(shadow, data, 3); /* placed before Delivery; the invalidation is checked then */
    expect_dropped_after_error();

    setup();
    uint32_t other = reg(2048, 64, PD2, LW | RW);
    post_recv1(1, 0, 16);
    n = untagged(s, true, 0x6, other, 0, 1, 0, data, 3);
    ASSERT_EQ(feed(s, n), IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_REM_INV_REQ_ERR);
    expect_term(0, 1, 0x09, 0xC0, s, n);
    ASSERT_EQ(ev_type[0], IWARP_EVENT_QP_ACCESS_ERR);
}

TEST(send_too_long)
{
    /* RFC 5041 §7.2: 1/2/0x05; the receive completes with LOC_LEN_ERR; nothing placed. */
    setup();
    post_recv1(9, 0, 8);
    post_recv1(10, 8, 8);
    uint8_t s[64];
    ASSERT_EQ(feed(s, untagged(s, false, 0x3, 0, 0, 1, 0, data, 6)), 0);
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 6, data + 6, 3);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    memcpy(shadow, data, 6);
    expect_buf();
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 9);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_LEN_ERR);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(1, 2, 0x05));
    wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 10);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    expect_term(1, 2, 0x05, 0xC0, s, n);
    expect_dropped_after_error();
}

TEST(send_untagged_errors)
{
    uint8_t s[64];
    size_t n;
    /* no receive posted: 1/2/0x02 */
    setup();
    n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 4);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    expect_term(1, 2, 0x02, 0xC0, s, n);
    expect_buf();
    /* MSN not the expected one: 1/2/0x03; the receive is flushed, not failed */
    setup();
    post_recv1(1, 0, 16);
    n = untagged(s, true, 0x5, 0, 0, 2, 0, data, 4);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_WR_FLUSH_ERR);
    expect_term(1, 2, 0x03, 0xC0, s, n);
    expect_buf();
    /* MO out of sequence inside a message: 1/2/0x04; that receive fails LOC_QP_OP_ERR */
    setup();
    post_recv1(1, 0, 16);
    ASSERT_EQ(feed(s, untagged(s, false, 0x3, 0, 0, 1, 0, data, 4)), 0);
    n = untagged(s, true, 0x3, 0, 0, 1, 5, data, 4);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_QP_OP_ERR);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(1, 2, 0x04));
    expect_term(1, 2, 0x04, 0xC0, s, n);
    memcpy(shadow, data, 4);
    expect_buf();
}

/* ---- header errors (iwarp_wire_segment_decode) -------------------------------------------- */

TEST(header_errors)
{
    uint8_t s[96];
    size_t n;
    /* DDP version 0 on an untagged segment: 1/2/0x06 (RFC 5041 §7.2) */
    setup();
    post_recv1(1, 0, 16);
    n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 4);
    s[0] = 0x40;
    ASSERT_EQ(feed(s, n), IWARP_ERR_DDP_VERSION);
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_WR_FLUSH_ERR);
    expect_term(1, 2, 0x06, 0xC0, s, n);
    expect_buf();
    /* RDMAP version 0: 0/2/0x05 (RFC 5040 §7.2 check 3) */
    setup();
    n = tagged(s, true, 0x0, mr, va(0), data, 4);
    s[1] = 0x00;
    ASSERT_EQ(feed(s, n), IWARP_ERR_RDMAP_VERSION);
    expect_term(0, 2, 0x05, 0xC0, s, n);
    expect_buf();
    /* a Send on QN 1: 1/2/0x01 */
    setup();
    n = untagged(s, true, 0x3, 0, 1, 1, 0, data, 4);
    ASSERT_EQ(feed(s, n), IWARP_ERR_DDP_QN);
    expect_term(1, 2, 0x01, 0xC0, s, n);
    /* too short for its header: DDP Local Catastrophic, no header copy */
    setup();
    ASSERT_EQ(feed(s, 9), IWARP_ERR_DDP_HDR_LEN);
    expect_term(1, 0, 0x00, 0x00, NULL, 0);
}

TEST(unsupported_rfc7306_opcodes)
{
    /* Immediate Data (0x8) and Atomic Request (0xA): Unexpected OpCode 0/2/0x06 */
    uint8_t s[96];
    setup();
    post_recv1(1, 0, 16);
    size_t n = untagged(s, true, 0x8, 0, 0, 1, 0, data, 8);
    ASSERT_EQ(feed(s, n), IWARP_ERR_NOTSUP);
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_WR_FLUSH_ERR);
    expect_term(0, 2, 0x06, 0xC0, s, n);
    expect_buf();
    setup();
    n = untagged(s, true, 0xA, 0, 1, 1, 0, data, 52);
    ASSERT_EQ(feed(s, n), IWARP_ERR_NOTSUP);
    expect_term(0, 2, 0x06, 0xC0, s, n);
    ASSERT_EQ(Q.irq_count, 0);
}

/* ---- header prediction ----------------------------------------------------------------- */

/* Which segments the fast path takes (none in the ".general" run): whole one-segment Sends and
 * Sends with SE into the current receive, and Writes with payload; everything else goes the
 * general way, with the same results (the rest of this file, in both runs). */
TEST(header_prediction_takes_plain_sends_and_writes)
{
    setup();
    post_recv1(1, 0, 16);
    post_recv1(2, 16, 16);
    post_recv1(3, 32, 16);
    post_recv1(4, 48, 16);
    uint8_t s[64];
    uint64_t want = 0;
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 1, 0, data, 5)), 0); /* Send */
    want++;
    ASSERT_EQ(feed(s, untagged(s, true, 0x5, 0, 0, 2, 0, data, 6)), 0); /* Send with SE */
    want++;
    ASSERT_EQ(feed(s, tagged(s, false, 0x0, mr, va(100), data, 3)), 0); /* Write, not last */
    want++;
    ASSERT_EQ(feed(s, tagged(s, true, 0x0, mr, va(103), data, 4)), 0); /* Write, last */
    want++;
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 3, 0, NULL, 0)), 0); /* zero-length Send */
    want++;
    /* general: a Send in two segments, a Write without payload, a DDP control octet with a
     * reserved bit set (accepted: RFC 5041 §4.2) */
    ASSERT_EQ(feed(s, untagged(s, false, 0x3, 0, 0, 4, 0, data, 2)), 0);
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 4, 2, data + 2, 2)), 0);
    ASSERT_EQ(feed(s, tagged(s, true, 0x0, 0, 0, NULL, 0)), 0);
    size_t n = tagged(s, true, 0x0, mr, va(110), data, 1);
    s[0] |= 0x04;
    ASSERT_EQ(feed(s, n), 0);
    ASSERT_EQ_U(Q.rx_predicted, general_run() ? 0 : want);
    memcpy(shadow, data, 5);
    memcpy(shadow + 16, data, 6);
    memcpy(shadow + 48, data, 4);
    memcpy(shadow + 100, data, 3);
    memcpy(shadow + 103, data, 4);
    shadow[110] = data[0];
    expect_buf();
    uint32_t len[4] = {5, 6, 0, 4};
    for (uint64_t i = 0; i < 4; i++) {
        struct iwarp_wc wc = poll1(&rcq);
        ASSERT_EQ_U(wc.wr_id, i + 1);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc.byte_len, len[i]);
    }
    expect_empty(&rcq);
    ASSERT_EQ(nnotify, 0); /* nothing armed */
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_RUNNING);
}

/* A segment the prediction recognises whose stateful checks fail goes the general way, which
 * reports it exactly (send_untagged_errors, send_too_long and write_errors check the same in
 * both runs): here, that nothing of it was taken as predicted. */
TEST(header_prediction_leaves_errors_to_the_general_path)
{
    uint8_t s[64];
    setup();
    post_recv1(1, 0, 4);
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 5); /* 5 octets into 4 */
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_LEN_ERR);
    expect_term(1, 2, 0x05, 0xC0, s, n);
    ASSERT_EQ_U(Q.rx_predicted, 0);
    setup();
    n = tagged(s, true, 0x0, mr ^ 1u, va(0), data, 3); /* no such STag */
    ASSERT_EQ(feed(s, n), IWARP_ERR_STAG_INVALID);
    expect_term(1, 1, 0x00, 0xC0, s, n);
    expect_buf();
    ASSERT_EQ_U(Q.rx_predicted, 0);
}

/* ---- RDMA Write ------------------------------------------------------------------------ */

TEST(write_placed)
{
    setup();
    uint8_t s[64];
    ASSERT_EQ(feed(s, tagged(s, false, 0x0, mr, va(1000), data, 10)), 0);
    ASSERT_EQ(feed(s, tagged(s, true, 0x0, mr, va(1010), data + 10, 7)), 0);
    /* zero-length: STag and TO not checked (RFC 5041 §5.2) */
    ASSERT_EQ(feed(s, tagged(s, true, 0x0, 0, 0xFFFFFFFFFFFFFFFFu, NULL, 0)), 0);
    /* the last octet of the region */
    ASSERT_EQ(feed(s, tagged(s, true, 0x0, mr, va(BUF - 1), data, 1)), 0);
    memcpy(shadow + 1000, data, 17);
    shadow[BUF - 1] = data[0];
    expect_buf();
    expect_empty(&rcq);
    expect_empty(&scq);
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_RUNNING);
}

TEST(write_closing_state_places)
{
    setup();
    iwarp_core_qp_disconnect(&Q);
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_CLOSING);
    uint8_t s[64];
    ASSERT_EQ(feed(s, tagged(s, true, 0x0, mr, va(8), data, 4)), 0);
    memcpy(shadow + 8, data, 4);
    expect_buf();
}

static void write_error(uint32_t stag, uint64_t to, size_t len, int err, uint8_t code)
{
    uint8_t s[96];
    size_t n = tagged(s, true, 0x0, stag, to, data, len);
    ASSERT_EQ(feed(s, n), err);
    expect_buf();
    expect_term(1, 1, code, 0xC0, s, n);
    ASSERT_EQ(ev_type[0], IWARP_EVENT_QP_ACCESS_ERR);
    ASSERT_EQ_U(ev_cause[0], cause_u32(1, 1, code));
    expect_dropped_after_error();
}

TEST(write_errors)
{
    /* RFC 5041 §7.1 checks 1-5 with the DDP Tagged Buffer codes of §7.2 */
    setup();
    write_error(mr ^ 1u, va(0), 4, IWARP_ERR_STAG_INVALID, 0x00);
    setup();
    write_error(mr, va(BUF - 3), 4, IWARP_ERR_MEM_BOUNDS, 0x01);
    setup();
    write_error(mr, va(0) - 1, 4, IWARP_ERR_MEM_BOUNDS, 0x01);
    setup();
    write_error(mr, 0xFFFFFFFFFFFFFFFEu, 4, IWARP_ERR_MEM_TO_WRAP, 0x03);
    setup();
    write_error(reg(0, 64, PD2, LW | RW), va(0), 4, IWARP_ERR_STAG_NOT_ASSOC, 0x02);
    setup();
    write_error(reg(0, 64, PD, LW | RR), va(0), 4, IWARP_ERR_MEM_ACCESS, 0x00);
}

/* ---- RDMA Read Response ---------------------------------------------------------------- */

/* Post a signaled Read into buf[off, off + len) (sink STag sink) and let TX send its Request. */
static void post_read(uint64_t wr_id, uint32_t sink, size_t off, uint32_t len)
{
    struct iwarp_sge sg = {.addr = va(off), .length = len, .lkey = sink};
    struct iwarp_send_wr wr = {.wr_id = wr_id,
                               .sg_list = &sg,
                               .num_sge = len ? 1 : 0,
                               .opcode = IWARP_WR_RDMA_READ,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = 0x1000;
    wr.wr.rdma.rkey = 0x1234;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &wr), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0x1); /* the Read Request */
    iwarp_core_qp_tx_sent(&Q, &seg);
}

TEST(read_response_placed_in_order)
{
    setup();
    post_read(41, mr, 500, 20);
    post_read(42, mr, 600, 5);
    ASSERT_EQ(Q.orq_count, 2);
    uint8_t s[64];
    ASSERT_EQ(feed(s, tagged(s, false, 0x2, mr, va(500), data, 12)), 0);
    expect_empty(&scq); /* RFC 5040 §5.5 rule 19: completes on the last segment */
    ASSERT_EQ(feed(s, tagged(s, true, 0x2, mr, va(512), data + 12, 8)), 0);
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 41);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
    ASSERT_EQ(wc.byte_len, 20);
    /* interleaved with a Send (Chelsio does this; wire-reference §0 #8) */
    post_recv1(3, 700, 16);
    ASSERT_EQ(feed(s, tagged(s, false, 0x2, mr, va(600), data + 40, 2)), 0);
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 1, 0, data, 4)), 0);
    ASSERT_EQ(feed(s, tagged(s, true, 0x2, mr, va(602), data + 42, 3)), 0);
    ASSERT_EQ_U(poll1(&scq).wr_id, 42);
    ASSERT_EQ_U(poll1(&rcq).wr_id, 3);
    ASSERT_EQ(Q.orq_count, 0);
    memcpy(shadow + 500, data, 20);
    memcpy(shadow + 600, data + 40, 5);
    memcpy(shadow + 700, data, 4);
    expect_buf();
}

TEST(read_response_zero_length)
{
    setup();
    post_read(5, mr, 0, 0);
    uint8_t s[32];
    /* RFC 5041 §5.2: STag and TO of a zero-length segment are not checked */
    ASSERT_EQ(feed(s, tagged(s, true, 0x2, 0, 0, NULL, 0)), 0);
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 5);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 0);
    expect_buf();
}

TEST(read_response_without_read)
{
    /* no outstanding Read: Unexpected OpCode 0/2/0x06, with the tagged header copy */
    setup();
    uint8_t s[64];
    size_t n = tagged(s, true, 0x2, mr, va(0), data, 4);
    ASSERT_EQ(feed(s, n), IWARP_ERR_RDMAP_OPCODE);
    expect_term(0, 2, 0x06, 0xC0, s, n);
    expect_buf();
}

/* A Read of 16 octets at buf[800]; a response with STag mr ^ stag_xor fails with code; the Read
 * completes with status, everything else is flushed. */
static void read_resp_error(uint32_t stag_xor, uint64_t to, size_t len, bool last, int err,
                            uint8_t code, uint8_t status)
{
    setup();
    uint32_t stag = mr ^ stag_xor; /* mr is this setup's */
    post_read(50, mr, 800, 16);
    post_read(51, mr, 900, 16);
    uint8_t s[64];
    size_t n = tagged(s, last, 0x2, stag, to, data, len);
    ASSERT_EQ(feed(s, n), err);
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 50);
    ASSERT_EQ(wc.status, status);
    ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(1, 1, code));
    expect_term(1, 1, code, 0xC0, s, n);
    wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 51);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    expect_buf();
    expect_dropped_after_error();
}

TEST(read_response_outside_its_sink)
{
    /* RFC 5040 §5.2.2 checks against the Request; DDP Tagged Buffer codes (ddp_rx_tagged.h) */
    read_resp_error(0x100u, va(800), 16, true, IWARP_ERR_READ_RESP, 0x00,
                    IWARP_WC_BAD_RESP_ERR); /* other STag */
    read_resp_error(0, va(799), 16, true, IWARP_ERR_READ_RESP, 0x01,
                    IWARP_WC_BAD_RESP_ERR); /* below the sink */
    read_resp_error(0, va(801), 16, true, IWARP_ERR_READ_RESP, 0x01,
                    IWARP_WC_BAD_RESP_ERR); /* past its end (still inside the MR) */
    read_resp_error(0, va(800), 12, true, IWARP_ERR_READ_RESP, 0x01,
                    IWARP_WC_BAD_RESP_ERR); /* L with fewer octets than the Read asked */
    read_resp_error(0, 0xFFFFFFFFFFFFFFF8u, 16, false, IWARP_ERR_READ_RESP, 0x03,
                    IWARP_WC_BAD_RESP_ERR); /* TO wrap */
}

TEST(read_response_sink_deregistered)
{
    /* the sink became invalid under the Read: LOC_PROT_ERR and DDP 1/1/0x00 (as siw), whether
     * deregistered (the STag is gone at once) or invalidated */
    for (int dereg = 0; dereg < 2; dereg++) {
        setup();
        uint32_t sink = reg(1024, 64, PD, LW);
        post_read(60, sink, 1024, 8);
        if (dereg)
            ASSERT_EQ(iwarp_mem_dereg_mr(&T, sink), 0);
        else
            ASSERT_EQ(iwarp_mem_local_inv(&T, sink, PD), 0);
        uint8_t s[64];
        size_t n = tagged(s, true, 0x2, sink, va(1024), data, 8);
        ASSERT_EQ(feed(s, n), IWARP_ERR_STAG_INVALID);
        struct iwarp_wc wc = poll1(&scq);
        ASSERT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
        ASSERT_EQ_U(wc.vendor_err, cause_u32(1, 1, 0x00));
        expect_term(1, 1, 0x00, 0xC0, s, n);
        expect_buf();
    }
}

/* ---- RDMA Read Request ----------------------------------------------------------------- */

TEST(read_request_queued_and_answered)
{
    setup();
    uint8_t s[64];
    size_t n = read_req(s, 1, 0xAABBCCDDu, 0x1122334455667788u, 24, mr, va(40));
    ASSERT_EQ(n, 46);
    ASSERT_EQ(feed(s, n), 0);
    ASSERT_EQ(Q.irq_count, 1);
    struct iwarp_core_irqe *e = &Q.irq[Q.irq_head];
    ASSERT_EQ_U(e->sink_stag, 0xAABBCCDDu);
    ASSERT_EQ_U(e->sink_to, 0x1122334455667788u);
    ASSERT_EQ_U(e->src_addr, va(40));
    ASSERT_EQ(e->len, 24);
    /* zero-length: the source is not validated (RFC 5040 §5.2.1) */
    n = read_req(s, 2, 0x1, 0x2, 0, 0xDEAD0000u, 0xFFFFFFFFFFFFFFFFu);
    ASSERT_EQ(feed(s, n), 0);
    ASSERT_EQ(Q.irq_count, 2);
    ASSERT_EQ(Q.irq[(Q.irq_head + 1) % IWARP_CORE_MAX_IRD].len, 0);
    /* IRD 2 is used up: a third is "no buffer" on queue 1 until a response went out */
    ASSERT_EQ(iwarp_ddp_rx_uq_posted(&Q.uq_read), 0);
    /* TX answers the first with a Read Response carrying buf[40, 64) */
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0x2);
    ASSERT_EQ(seg.payload_len, 24);
    ASSERT_TRUE(seg.iov[0].iov_base == buf + 40);
    iwarp_core_qp_tx_sent(&Q, &seg);
    ASSERT_EQ(iwarp_ddp_rx_uq_posted(&Q.uq_read), 1); /* the slot is free again */
    n = read_req(s, 3, 0x1, 0x2, 4, mr, va(0));
    ASSERT_EQ(feed(s, n), 0);
    ASSERT_EQ(Q.irq_count, 2);
}

TEST(read_response_stops_when_its_source_goes_away)
{
    /* The Data Source was validated when the Request came; a Response still being produced
     * validates it again once any STag changed (the mem table's gen), so it never reads memory
     * the application deregistered: the rest becomes a Terminate, RDMAP 0/1/0x00 (RFC 5040
     * §7.2 remote protection, invalid STag). */
    setup();
    uint32_t src = reg(0, 512, PD, RR);
    uint8_t s[64];
    size_t n = read_req(s, 1, 0xAABBCCDDu, 0x1000u, 200, src, va(0));
    ASSERT_EQ(feed(s, n), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 64, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0x2);
    ASSERT_EQ(seg.payload_len, 50);
    iwarp_core_qp_tx_sent(&Q, &seg);
    /* another STag changing: validated again, still fine, the Response goes on */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, reg(600, 8, PD, RR)), 0);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 64, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0x2);
    ASSERT_TRUE(seg.iov[0].iov_base == buf + 50);
    iwarp_core_qp_tx_sent(&Q, &seg);
    /* the source itself deregistered: nothing more of it is read */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, src), 0);
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 64, &seg), 1);
    ASSERT_EQ(seg.src, IWARP_CORE_TX_TERM);
    ASSERT_EQ(seg.payload_len, 0);
    ASSERT_EQ(seg.hdr[18], 0x01); /* layer RDMAP, etype remote protection */
    ASSERT_EQ(seg.hdr[19], 0x00); /* invalid STag */
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_TERMINATING);
}

TEST(read_request_beyond_ird)
{
    /* IRD 1: the second Read Request finds no queue-1 buffer, 1/2/0x02 */
    setup_ext(false, 1);
    uint8_t s[64];
    ASSERT_EQ(feed(s, read_req(s, 1, 0x1, 0x2, 4, mr, va(0))), 0);
    size_t n = read_req(s, 2, 0x1, 0x2, 4, mr, va(0));
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    expect_term(1, 2, 0x02, 0xC0, s, n);
    /* the wrong MSN on queue 1: 1/2/0x03 */
    setup();
    n = read_req(s, 7, 0x1, 0x2, 4, mr, va(0));
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    expect_term(1, 2, 0x03, 0xC0, s, n);
}

static void read_req_error(uint32_t src, uint64_t src_to, uint32_t size, int err, uint8_t code)
{
    uint8_t s[64];
    size_t n = read_req(s, 1, 0x77, 0x88, size, src, src_to);
    ASSERT_EQ(feed(s, n), err);
    ASSERT_EQ(Q.irq_count, 0);
    /* RFC 5040 §4.8 Figure 10, §7.1 rule 3: M, D and R, with the Read Request header */
    expect_term(0, 1, code, 0xE0, s, n);
    ASSERT_EQ(ev_type[0], IWARP_EVENT_QP_ACCESS_ERR);
}

TEST(read_request_source_errors)
{
    /* RFC 5040 §7.2 checks 4a-4e: Remote Protection 0/1/x */
    setup();
    read_req_error(mr ^ 0x7u, va(0), 4, IWARP_ERR_STAG_INVALID, 0x00);
    setup();
    read_req_error(mr, va(BUF - 2), 4, IWARP_ERR_MEM_BOUNDS, 0x01);
    setup();
    read_req_error(reg(0, 64, PD, LW | RW), va(0), 4, IWARP_ERR_MEM_ACCESS, 0x02);
    setup();
    read_req_error(reg(0, 64, PD2, RR), va(0), 4, IWARP_ERR_STAG_NOT_ASSOC, 0x03);
    setup();
    read_req_error(mr, 0xFFFFFFFFFFFFFFF0u, 0x20, IWARP_ERR_MEM_TO_WRAP, 0x04);
}

/* ---- Terminate ------------------------------------------------------------------------- */

TEST(terminate_received)
{
    setup();
    post_recv1(1, 0, 16);
    post_read(2, mr, 100, 8);
    uint8_t s[64];
    /* RFC 5040 §4.8: DDP 1/2/0x03 about one of our Sends, M+D and its 18-octet header */
    size_t n = untagged(s, true, 0x7, 0, 2, 1, 0, NULL, 0);
    s[n++] = 0x12;
    s[n++] = 0x03;
    s[n++] = 0xC0;
    s[n++] = 0x00;
    s[n++] = 0x00;
    s[n++] = 0x16;
    n += untagged(s + n, true, 0x3, 0, 0, 9, 0, NULL, 0);
    ASSERT_EQ(feed(s, n), 0);
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_TERMINATING);
    ASSERT_TRUE(Q.term_from_peer);
    ASSERT_EQ(Q.term_cause.layer, 1);
    ASSERT_EQ(Q.term_cause.etype, 2);
    ASSERT_EQ(Q.term_cause.ecode, 3);
    ASSERT_EQ(ev_type[0], IWARP_EVENT_QP_FATAL);
    ASSERT_EQ_U(ev_cause[0], cause_u32(1, 2, 3));
    ASSERT_TRUE(ev_peer[0]);
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(poll1(&scq).status, IWARP_WC_WR_FLUSH_ERR);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 0); /* no Terminate back */
    expect_dropped_after_error();
}

TEST(terminate_wrong_msn)
{
    /* RFC 5040 §5.4: one Terminate, MSN 1 on queue 2; MSN 2 is 1/2/0x03 */
    setup();
    uint8_t s[64];
    size_t n = untagged(s, true, 0x7, 0, 2, 2, 0, NULL, 0);
    memset(s + n, 0, 4);
    s[n] = 0x00;
    s[n + 1] = 0xFF;
    n += 4;
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    ASSERT_FALSE(Q.term_from_peer);
    expect_term(1, 2, 0x03, 0xC0, s, n);
}

/* ---- LLP errors, states ------------------------------------------------------------------ */

TEST(llp_error_bare_terminate)
{
    /* RFC 5044 §8 CRC error: 2/0/0x02, no headers (RFC 5040 §4.8 Figure 10) */
    setup();
    post_recv1(1, 0, 16);
    iwarp_core_qp_rx_llp_error(&Q, (struct iwarp_term_cause){2, 0, 0x02}, NULL, 0);
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_WR_FLUSH_ERR);
    expect_term(2, 0, 0x02, 0x00, NULL, 0);
    expect_dropped_after_error();
}

TEST(states)
{
    ASSERT_EQ(iwarp_core_qp_rx_segment(NULL, NULL, 0), IWARP_ERR_INVAL);
    setup();
    ASSERT_EQ(iwarp_core_qp_rx_segment(&Q, NULL, 4), IWARP_ERR_INVAL);
    /* not started: the LLP cannot deliver yet */
    struct iwarp_core_qp_mem m = {
        .sq = sq, .rq = rq, .rq_lens = rq_lens, .orq = orq, .irq = irq, .irq_lens = irq_lens};
    struct iwarp_core_qp_cfg cfg = Q.cfg;
    ASSERT_EQ(iwarp_core_qp_init(&Q, &cfg, &m), 0);
    uint8_t s[64];
    size_t n = tagged(s, true, 0x0, mr, va(0), data, 4);
    ASSERT_EQ(feed(s, n), IWARP_ERR_STATE);
    expect_buf();
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_IDLE);
    /* ERROR: dropped */
    ASSERT_EQ(iwarp_core_qp_start(&Q, 1, 1), 0);
    iwarp_core_qp_set_error(&Q);
    ASSERT_EQ(feed(s, n), 0);
    expect_buf();
}

/* ---- SRQ ------------------------------------------------------------------------------- */

static void srq_post(uint64_t wr_id, size_t off, size_t len)
{
    struct iwarp_sge sg = {.addr = va(off), .length = (uint32_t)len, .lkey = mr};
    struct iwarp_recv_wr wr = {.wr_id = wr_id, .sg_list = &sg, .num_sge = 1};
    struct iwarp_core_rqe rqe;
    ASSERT_EQ(iwarp_core_rqe_from_wr(&rqe, &wr, IWARP_CORE_MAX_SGE, &T, PD), 0);
    ASSERT_EQ(iwarp_core_rq_push(&srq.rq, &rqe), 0);
}

TEST(srq_pulls_on_demand)
{
    setup_ext(true, 2);
    srq_post(11, 0, 8);
    srq_post(12, 8, 8);
    srq_post(13, 16, 4);
    srq.limit = 2;
    uint8_t s[64];
    /* a segment with the wrong MSN consumes no SRQ receive (checked later below) */
    ASSERT_EQ(feed(s, untagged(s, false, 0x3, 0, 0, 1, 0, data, 3)), 0);
    ASSERT_EQ(srq.rq.count, 2);
    ASSERT_EQ(nev, 0); /* 2 left: not below the limit */
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 1, 3, data + 3, 2)), 0);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 11);
    ASSERT_EQ(wc.byte_len, 5);
    ASSERT_EQ(feed(s, untagged(s, true, 0x5, 0, 0, 2, 0, data, 8)), 0);
    ASSERT_EQ(nev, 1);
    ASSERT_EQ(ev_type[0], IWARP_EVENT_SRQ_LIMIT_REACHED);
    ASSERT_FALSE(srq.limit_fired);
    ASSERT_EQ_U(poll1(&rcq).wr_id, 12);
    memcpy(shadow, data, 5);
    memcpy(shadow + 8, data, 8);
    expect_buf();
    /* a wrong MSN is refused without pulling the last receive, which stays in the SRQ */
    size_t n = untagged(s, true, 0x3, 0, 0, 9, 0, data, 4);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    ASSERT_EQ(srq.rq.count, 1);
    expect_term(1, 2, 0x03, 0xC0, s, n);
    expect_empty(&rcq);
}

TEST(srq_too_long_and_empty)
{
    setup_ext(true, 2);
    srq_post(21, 0, 4);
    uint8_t s[64];
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 6);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 21);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_LEN_ERR);
    expect_term(1, 2, 0x05, 0xC0, s, n);
    expect_buf();
    /* an empty SRQ: no buffer, 1/2/0x02 */
    setup_ext(true, 2);
    n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 2);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    expect_term(1, 2, 0x02, 0xC0, s, n);
}

/* ---- two phases: headers, then payload in place ------------------------------------------ */

/* Phase 1 on the first hdr_len octets of the segment s of seg_len octets. */
static int hdr_phase(const uint8_t *seg, size_t hdr_len, size_t seg_len, struct iovec *dst,
                     uint32_t *ndst)
{
    return iwarp_core_qp_rx_hdr(&Q, seg, hdr_len, seg_len, dst, IWARP_CORE_RX_IOV_MAX, ndst);
}

TEST(two_phase_send_gives_the_sges_and_completes_in_phase_two)
{
    setup();
    size_t sges[6] = {100, 3, 200, 0, 300, 20};
    post_recv(7, 3, sges);
    uint8_t s[64];
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 10);
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 99;
    ASSERT_EQ(hdr_phase(s, 18, n, dst, &nd), 0);
    /* The payload's 10 octets: 3 at the first SGE, the empty one skipped, 7 at the third. */
    ASSERT_EQ_U(nd, 2);
    ASSERT_TRUE(dst[0].iov_base == buf + 100 && dst[0].iov_len == 3);
    ASSERT_TRUE(dst[1].iov_base == buf + 300 && dst[1].iov_len == 7);
    expect_buf(); /* nothing placed by the engine itself */
    expect_empty(&rcq);
    memcpy(dst[0].iov_base, data, 3);
    memcpy(dst[1].iov_base, data + 3, 7);
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), 0);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 7);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 10);
    ASSERT_EQ(iwarp_ddp_rx_uq_expected_msn(&Q.uq_send), 2);
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), 0); /* nothing pending: no-op */
    expect_empty(&rcq);
}

TEST(two_phase_write_is_checked_for_the_whole_ulpdu_length)
{
    setup();
    uint8_t s[200];
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 99;
    size_t n = tagged(s, true, 0x0, mr, va(1000), data, 50);
    ASSERT_EQ(hdr_phase(s, 14, n, dst, &nd), 0);
    ASSERT_EQ_U(nd, 1);
    ASSERT_TRUE(dst[0].iov_base == buf + 1000 && dst[0].iov_len == 50);
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), 0);
    /* Only the 14-octet header is given; the ULPDU_Length says 100 payload octets at TO
     * 4000 of a 4096-octet MR: RFC 5041 §7.1 check 4, 1/1/0x01, nothing placed, and the
     * Terminate's DDP Segment Length is the whole segment's (RFC 5040 §4.8). */
    n = tagged(s, true, 0x0, mr, va(4000), NULL, 0);
    ASSERT_EQ(hdr_phase(s, n, n + 100, dst, &nd), IWARP_ERR_MEM_BOUNDS);
    ASSERT_EQ_U(nd, 0);
    expect_buf();
    expect_term(1, 1, 0x01, 0xC0, s, 114);
}

TEST(two_phase_send_too_long_for_the_receive_before_any_octet)
{
    setup();
    post_recv1(9, 100, 40);
    uint8_t s[32];
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, NULL, 0);
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 99;
    /* RFC 5041 §7.1 check 4 for the ULPDU_Length's 41 payload octets: 1/2/0x05. */
    ASSERT_EQ(hdr_phase(s, n, n + 41, dst, &nd), IWARP_ERR_PROTO);
    ASSERT_EQ_U(nd, 0);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 9);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_LEN_ERR);
    expect_term(1, 2, 0x05, 0xC0, s, 18 + 41);
    expect_buf();
}

TEST(two_phase_read_response_completes_in_phase_two)
{
    setup();
    post_read(41, mr, 500, 20);
    uint8_t s[32];
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 0;
    size_t n = tagged(s, true, 0x2, mr, va(500), NULL, 0);
    ASSERT_EQ(hdr_phase(s, n, n + 20, dst, &nd), 0);
    ASSERT_EQ_U(nd, 1);
    ASSERT_TRUE(dst[0].iov_base == buf + 500 && dst[0].iov_len == 20);
    expect_empty(&scq);
    memcpy(dst[0].iov_base, data, 20);
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), 0);
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 41);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(Q.orq_count, 0);
    memcpy(shadow + 500, data, 20);
    expect_buf();
}

TEST(two_phase_misuse_and_states)
{
    setup();
    post_recv1(1, 0, 64);
    uint8_t s[64];
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 0;
    size_t n = untagged(s, true, 0x3, 0, 0, 1, 0, data, 4);
    ASSERT_EQ(hdr_phase(s, n + 1, n, dst, &nd), IWARP_ERR_INVAL); /* hdr_len > seg_len */
    ASSERT_EQ(iwarp_core_qp_rx_hdr(&Q, s, n, n, dst, IWARP_CORE_RX_IOV_MAX - 1, &nd),
              IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_core_qp_rx_hdr(NULL, s, n, n, dst, IWARP_CORE_RX_IOV_MAX, &nd),
              IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(NULL), IWARP_ERR_INVAL);
    /* Fewer octets than the headers, or part of a segment whose opcode has no payload (a
     * Read Request must come whole): refused without a Terminate. */
    ASSERT_EQ(hdr_phase(s, 17, n, dst, &nd), IWARP_ERR_INVAL);
    uint8_t rr[64];
    size_t rn = read_req(rr, 1, mr, 0, 4, mr, va(0));
    ASSERT_EQ(hdr_phase(rr, 18, rn, dst, &nd), IWARP_ERR_INVAL);
    ASSERT_EQ(Q.stream.state, IWARP_CORE_STREAM_RUNNING);
    ASSERT_EQ(nev, 0);
    /* A second phase 1 before phase 2. */
    ASSERT_EQ(hdr_phase(s, 18, n, dst, &nd), 0);
    ASSERT_EQ(hdr_phase(s, 18, n, dst, &nd), IWARP_ERR_STATE);
    /* The stream stops in between (modify to ERROR): phase 2 delivers nothing. */
    iwarp_core_qp_set_error(&Q);
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), 0);
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    /* After it, segments are dropped: no destination, nothing to do. */
    nd = 99;
    ASSERT_EQ(hdr_phase(s, 18, n, dst, &nd), 0);
    ASSERT_EQ_U(nd, 0);
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), 0);
    expect_buf();
}

TEST(rx_hdr_len_by_t_flag_and_opcode)
{
    uint8_t s[64];
    tagged(s, true, 0x0, mr, 0, NULL, 0);
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 2, 1000), 14); /* RDMA Write */
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 14, 10), 10);  /* never past the segment */
    tagged(s, true, 0x2, mr, 0, NULL, 0);
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 2, 1000), 14); /* Read Response */
    for (uint8_t op = 0x3; op <= 0x6; op++) {
        untagged(s, true, op, 0, 0, 1, 0, NULL, 0);
        ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 2, 1000), 18); /* the Sends */
    }
    untagged(s, true, 0x1, 0, 1, 1, 0, NULL, 0);
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 2, 46), 46); /* Read Request: whole */
    untagged(s, true, 0x7, 0, 2, 1, 0, NULL, 0);
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 2, 40), 40); /* Terminate: whole */
    untagged(s, true, 0x0, 0, 0, 1, 0, NULL, 0);
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 2, 500), 500); /* Write with T=0: whole */
    tagged(s, true, 0x3, mr, 0, NULL, 0);
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 2, 500), 500); /* Send with T=1: whole */
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(s, 1, 500), 500); /* cannot tell yet */
    ASSERT_EQ_U(iwarp_core_qp_rx_hdr_len(NULL, 0, 7), 7);
}

/* Phase 1 of a last Write segment of `payload` octets to stag/to (its header built in s, *n
 * octets): the engine checked the target; the payload is still to come. */
static int write_phase_one(uint8_t *s, uint32_t stag, uint64_t to, size_t payload, size_t *n)
{
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 0;
    *n = tagged(s, true, 0x0, stag, to, NULL, 0);
    return hdr_phase(s, *n, *n + payload, dst, &nd);
}

TEST(two_phase_tagged_buffer_gone_before_phase_two)
{
    /* A Write whose target MR is deregistered while its payload arrives: the rest is not
     * placed (rx_dst_valid false from then on) and the Terminate says Invalid STag, 1/1/0x00
     * (RFC 5041 §7.1 check 1), with the whole segment's length. */
    setup();
    uint32_t target = reg(500, 100, PD, LW | RW);
    uint8_t s[32];
    size_t n;
    ASSERT_EQ(write_phase_one(s, target, va(500), 20, &n), 0);
    ASSERT_TRUE(iwarp_core_qp_rx_dst_valid(&Q));
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, target), 0);
    ASSERT_FALSE(iwarp_core_qp_rx_dst_valid(&Q));
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), IWARP_ERR_STAG_INVALID);
    expect_term(1, 1, 0x00, 0xC0, s, 14 + 20);
    ASSERT_TRUE(iwarp_core_qp_rx_dst_valid(&Q)); /* nothing pending any more */
    expect_buf();
}

TEST(two_phase_write_target_registered_elsewhere_is_lost)
{
    /* Same STag valid again but at another place (a window rebound, say): never the old
     * address; the Write is lost with Invalid STag. Modelled by writing a different local
     * address into the table entry behind the STag; a rebinding goes through an invalidation,
     * which moves the table's gen (without that, rx_dst_valid trusts phase 1's check). */
    setup();
    uint8_t s[32];
    size_t n;
    ASSERT_EQ(write_phase_one(s, mr, va(100), 8, &n), 0);
    Q.rx_cur.addr ^= 0x40; /* what phase 1 saw differs from what the table says now */
    ASSERT_TRUE(iwarp_core_qp_rx_dst_valid(&Q)); /* gen unmoved: phase 1's check stands */
    T.gen++;
    ASSERT_FALSE(iwarp_core_qp_rx_dst_valid(&Q));
    ASSERT_FALSE(iwarp_core_qp_rx_dst_valid(&Q)); /* latched */
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), IWARP_ERR_STAG_INVALID);
    expect_term(1, 1, 0x00, 0xC0, s, 14 + 8);
}

TEST(two_phase_write_target_checked_again_once_another_stag_changes)
{
    /* Another STag's deregistration moves the table's gen: the next look checks the target in
     * full (it still passes) and takes the new gen, so the looks after it are free again. */
    setup();
    uint32_t other = reg(500, 100, PD, LW | RW);
    uint8_t s[32];
    size_t n;
    ASSERT_EQ(write_phase_one(s, mr, va(100), 8, &n), 0);
    uint32_t gen = T.gen;
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, other), 0);
    ASSERT_TRUE(T.gen != gen);
    ASSERT_TRUE(iwarp_core_qp_rx_dst_valid(&Q)); /* checked in full: the target is intact */
    ASSERT_EQ(Q.rx_cur.dst_gen, T.gen);
    Q.rx_cur.addr ^= 0x40; /* a full check would now fail: the next look makes none */
    ASSERT_TRUE(iwarp_core_qp_rx_dst_valid(&Q));
    Q.rx_cur.addr ^= 0x40;
    ASSERT_EQ(iwarp_core_qp_rx_payload_done(&Q), 0);
    expect_buf();
}

/* ---- RFC 7306: Immediate Data and atomics, enabled on the connection ------------------- */

static void setup_rdmap_ext(uint32_t ird)
{
    rdmap_ext = IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS;
    setup_ext(false, ird);
    rdmap_ext = 0;
}

/* Immediate Data (RFC 7306 §6.2 Figure 7): untagged QN 0, then the 8 octets. */
static size_t imm_data(uint8_t *p, bool se, uint32_t msn, const uint8_t imm[8])
{
    size_t n = untagged(p, true, se ? 0x9 : 0x8, 0, 0, msn, 0, NULL, 0);
    memcpy(p + n, imm, 8);
    return n + 8;
}

TEST(immediate_data_completes_a_zero_length_receive)
{
    setup_rdmap_ext(2);
    post_recv(1, 0, NULL); /* RFC 7306 §6: nothing is placed, a zero-length receive suffices */
    post_recv1(2, 0, 16);
    iwarp_core_cq_arm(&rcq, true);
    static const uint8_t imm[8] = {0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x02, 0x03, 0x04};
    uint8_t s[64];
    ASSERT_EQ(feed(s, imm_data(s, false, 1, imm)), 0);
    ASSERT_EQ(nnotify, 0); /* without SE a solicited-only arm does not fire */
    struct iwarp_wc wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 1);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RECV_RDMA_WITH_IMM);
    ASSERT_EQ(wc.wc_flags, IWARP_WC_WITH_IMM);
    ASSERT_EQ(wc.byte_len, 0);
    ASSERT_MEM_EQ(&wc.imm_data, imm, 4); /* octets 0-3 as they came (verbs: big-endian) */
    ASSERT_EQ_U(wc.imm_data64, 0xDEADBEEF01020304u);
    /* with SE: solicited; the MSN sequence is the Sends' (RFC 7306 §6.3: queue 0) */
    ASSERT_EQ(feed(s, imm_data(s, true, 2, imm)), 0);
    ASSERT_EQ(nnotify, 1);
    wc = poll1(&rcq);
    ASSERT_EQ_U(wc.wr_id, 2);
    ASSERT_EQ(wc.opcode, IWARP_WC_RECV_RDMA_WITH_IMM);
    expect_buf(); /* the 16-octet receive got nothing */
    post_recv1(3, 0, 16);
    ASSERT_EQ(feed(s, untagged(s, true, 0x3, 0, 0, 3, 0, data, 4)), 0); /* then a Send */
    ASSERT_EQ(poll1(&rcq).opcode, IWARP_WC_RECV);
}

TEST(immediate_data_errors)
{
    static const uint8_t imm[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t s[64];
    /* no receive posted: 1/2/0x02, as a Send (RFC 7306 §6.3: it consumes one) */
    setup_rdmap_ext(2);
    size_t n = imm_data(s, false, 1, imm);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    expect_term(1, 2, 0x02, 0xC0, s, n);
    /* a wrong MSN: 1/2/0x03 */
    setup_rdmap_ext(2);
    post_recv1(1, 0, 16);
    n = imm_data(s, true, 5, imm);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_WR_FLUSH_ERR);
    expect_term(1, 2, 0x03, 0xC0, s, n);
    /* RFC 7306 §6.3: exactly 8 octets, else 0/2/0xFF (wire_segment.h check 8) */
    setup_rdmap_ext(2);
    post_recv1(1, 0, 16);
    n = untagged(s, true, 0x8, 0, 0, 1, 0, imm, 7);
    ASSERT_NE(feed(s, n), 0);
    ASSERT_EQ(Q.term_cause.layer, 0);
    ASSERT_EQ(Q.term_cause.etype, 2);
    ASSERT_EQ(Q.term_cause.ecode, 0xFF);
}

/* Atomic Request (RFC 7306 §5.2.1 Figure 4): untagged QN 1, Reserved|AOpCode, Request
 * Identifier, Remote STag, Remote TO, Add or Swap Data and Mask, Compare Data and Mask. */
static size_t atomic_req(uint8_t *p, uint32_t msn, uint8_t aopcode, uint32_t req_id, uint32_t stag,
                         uint64_t to, uint64_t add_swap, uint64_t add_swap_mask, uint64_t compare,
                         uint64_t compare_mask)
{
    size_t n = untagged(p, true, 0xA, 0, 1, msn, 0, NULL, 0);
    n += be32(p + n, aopcode);
    n += be32(p + n, req_id);
    n += be32(p + n, stag);
    n += be64(p + n, to);
    n += be64(p + n, add_swap);
    n += be64(p + n, add_swap_mask);
    n += be64(p + n, compare);
    n += be64(p + n, compare_mask);
    return n;
}

/* Atomic Response (RFC 7306 §5.2.2 Figure 6): untagged QN 3, Original Request Identifier,
 * Original Remote Data Value. */
static size_t atomic_resp(uint8_t *p, uint32_t msn, uint32_t req_id, uint64_t orig)
{
    size_t n = untagged(p, true, 0xB, 0, 3, msn, 0, NULL, 0);
    n += be32(p + n, req_id);
    n += be64(p + n, orig);
    return n;
}

static uint64_t word_at(size_t off)
{
    uint64_t v;
    memcpy(&v, buf + off, sizeof v);
    return v;
}

static void set_word(size_t off, uint64_t v)
{
    memcpy(buf + off, &v, sizeof v);
    memcpy(shadow + off, &v, sizeof v);
}

/* The next segment TX produces is the Atomic Response with this MSN, id and value. */
static void expect_atomic_resp(uint32_t msn, uint32_t req_id, uint64_t orig)
{
    uint8_t want[32];
    size_t n = atomic_resp(want, msn, req_id, orig);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 1);
    ASSERT_EQ(seg.src, IWARP_CORE_TX_IRQ);
    ASSERT_EQ(seg.payload_len, 0);
    ASSERT_EQ(seg.hdr_len, n);
    ASSERT_MEM_EQ(seg.hdr, want, n);
    iwarp_core_qp_tx_sent(&Q, &seg);
}

TEST(atomic_requests_performed_and_answered_in_order)
{
    setup_rdmap_ext(4);
    uint32_t ra = reg(1024, 64, PD, LW | RA);
    set_word(1024, 40);
    set_word(1032, 0x1111222233334444u);
    uint8_t s[96];
    const uint64_t ones = UINT64_MAX;
    /* FetchAdd (Add Mask 0): +2; the Read Request after it shares queue 1's MSNs */
    ASSERT_EQ(feed(s, atomic_req(s, 1, 0, 0x100, ra, va(1024), 2, 0, 0, ones)), 0);
    ASSERT_EQ(feed(s, read_req(s, 2, 0x77, 0x88, 8, mr, va(1024))), 0);
    /* CmpSwap that matches, then one that does not */
    ASSERT_EQ(feed(s, atomic_req(s, 3, 2, 0x101, ra, va(1032), 7, ones, 0x1111222233334444u, ones)),
              0);
    ASSERT_EQ(feed(s, atomic_req(s, 4, 2, 0x102, ra, va(1032), 9, ones, 0x1111222233334444u, ones)),
              0);
    ASSERT_EQ(Q.irq_count, 4);
    /* RFC 7306 §5.4 rule 3: performed once Delivered, in order */
    ASSERT_EQ_U(word_at(1024), 42);
    ASSERT_EQ_U(word_at(1032), 7);
    /* RFC 7306 §5.2.2 rule 8, §7: responses in request order, the Read's among them; queue 3
     * numbers its own messages from 1 */
    expect_atomic_resp(1, 0x100, 40);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0x2); /* the Read Response, reading the updated word */
    ASSERT_TRUE(seg.iov[0].iov_base == buf + 1024);
    iwarp_core_qp_tx_sent(&Q, &seg);
    expect_atomic_resp(2, 0x101, 0x1111222233334444u);
    expect_atomic_resp(3, 0x102, 7);
    ASSERT_EQ(Q.irq_count, 0);
    ASSERT_EQ(iwarp_ddp_rx_uq_posted(&Q.uq_read), 4); /* every IRD slot free again */
    expect_empty(&rcq); /* RFC 7306 §5.2.1 rule 3: not Delivered to the ULP */
}

TEST(masked_atomics_follow_the_rfc_pseudocode)
{
    setup_rdmap_ext(4);
    uint32_t ra = reg(1024, 64, PD, LW | RA);
    uint8_t s[96];
    /* FetchAdd with an Add Mask of 8-bit fields: 0xFF + 0x01 in each field wraps to 0 without
     * a carry into the next (RFC 7306 §5.1.1) */
    set_word(1024, 0x00FF00FF00FF00FFu);
    ASSERT_EQ(feed(s, atomic_req(s, 1, 0, 1, ra, va(1024), 0x0101010101010101u, 0x8080808080808080u,
                                 0, UINT64_MAX)),
              0);
    ASSERT_EQ_U(word_at(1024), 0x0100010001000100u);
    /* CmpSwap comparing only the low half and swapping only the high half (§5.1.2) */
    set_word(1032, 0xAAAAAAAA12345678u);
    ASSERT_EQ(feed(s, atomic_req(s, 2, 2, 2, ra, va(1032), 0x5555555500000000u, 0xFFFFFFFF00000000u,
                                 0xFFFFFFFF12345678u, 0x00000000FFFFFFFFu)),
              0);
    ASSERT_EQ_U(word_at(1032), 0x5555555512345678u);
    /* a masked compare that differs: nothing changes */
    ASSERT_EQ(feed(s, atomic_req(s, 3, 2, 3, ra, va(1032), 0, UINT64_MAX, 0x12345679u,
                                 0x00000000FFFFFFFFu)),
              0);
    ASSERT_EQ_U(word_at(1032), 0x5555555512345678u);
    expect_atomic_resp(1, 1, 0x00FF00FF00FF00FFu);
    expect_atomic_resp(2, 2, 0xAAAAAAAA12345678u);
    expect_atomic_resp(3, 3, 0x5555555512345678u);
}

/* An Atomic Request at to in an STag with these rights fails with err and the Terminate
 * layer/etype/code (M and D: RFC 7306 §8.1 rule 2, no RDMA header); memory is unchanged. */
static void atomic_req_error(uint8_t aopcode, uint32_t stag, uint64_t to, int err, uint8_t layer,
                             uint8_t etype, uint8_t code)
{
    uint8_t s[96];
    size_t n = atomic_req(s, 1, aopcode, 9, stag, to, 1, 0, 0, UINT64_MAX);
    ASSERT_EQ(feed(s, n), err);
    ASSERT_EQ(Q.irq_count, 0);
    expect_term(layer, etype, code, 0xC0, s, n);
    expect_buf();
}

TEST(atomic_request_errors)
{
    /* RFC 7306 §8.2: a target not 64-bit aligned, 0/2/0x07 */
    setup_rdmap_ext(2);
    uint32_t ra = reg(1024, 64, PD, LW | RA);
    atomic_req_error(0, ra, va(1028), IWARP_ERR_ATOMIC_ALIGN, 0, 2, 0x07);
    setup_rdmap_ext(2);
    ra = reg(1024, 64, PD, LW | RA);
    atomic_req_error(2, ra, va(1025), IWARP_ERR_ATOMIC_ALIGN, 0, 2, 0x07);
    /* an AOpCode we do not implement (1, Swap; 0xF): 0/2/0x06 (docs/design.md) */
    setup_rdmap_ext(2);
    ra = reg(1024, 64, PD, LW | RA);
    atomic_req_error(1, ra, va(1024), IWARP_ERR_RDMAP_OPCODE, 0, 2, 0x06);
    setup_rdmap_ext(2);
    ra = reg(1024, 64, PD, LW | RA);
    atomic_req_error(0xF, ra, va(1024), IWARP_ERR_RDMAP_OPCODE, 0, 2, 0x06);
    /* the Read Request's Remote Protection checks (RFC 5040 §7.2 4a-4e): 0/1/x */
    setup_rdmap_ext(2);
    atomic_req_error(0, mr, va(1024), IWARP_ERR_MEM_ACCESS, 0, 1, 0x02); /* no REMOTE_ATOMIC */
    setup_rdmap_ext(2);
    ra = reg(1024, 64, PD, LW | RA);
    atomic_req_error(0, ra ^ 0x7u, va(1024), IWARP_ERR_STAG_INVALID, 0, 1, 0x00);
    setup_rdmap_ext(2);
    ra = reg(1024, 64, PD, LW | RA);
    atomic_req_error(0, ra, va(1024 + 60), IWARP_ERR_MEM_BOUNDS, 0, 1, 0x01);
    setup_rdmap_ext(2);
    ra = reg(1024, 64, PD2, LW | RA);
    atomic_req_error(0, ra, va(1024), IWARP_ERR_STAG_NOT_ASSOC, 0, 1, 0x03);
    /* the wrong length: 0/2/0xFF (RFC 7306 §4.2, wire_segment.h check 8) */
    setup_rdmap_ext(2);
    uint8_t s[96];
    size_t n = atomic_req(s, 1, 0, 9, mr, va(1024), 1, 0, 0, UINT64_MAX) - 4;
    ASSERT_NE(feed(s, n), 0);
    ASSERT_EQ(Q.term_cause.ecode, 0xFF);
    ASSERT_EQ(Q.irq_count, 0);
}

TEST(atomic_requests_beyond_ird_as_reads)
{
    /* IRD 2, shared: a Read Request and an Atomic Request fill it; the next of either kind
     * finds no queue 1 buffer, 1/2/0x02 as an excess Read Request (RFC 7306 §5.2.2 rule 4) */
    setup_rdmap_ext(2);
    uint32_t ra = reg(1024, 64, PD, LW | RA);
    uint8_t s[96];
    ASSERT_EQ(feed(s, read_req(s, 1, 0x77, 0x88, 8, mr, va(0))), 0);
    ASSERT_EQ(feed(s, atomic_req(s, 2, 0, 1, ra, va(1024), 1, 0, 0, UINT64_MAX)), 0);
    size_t n = atomic_req(s, 3, 0, 2, ra, va(1024), 1, 0, 0, UINT64_MAX);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    expect_term(1, 2, 0x02, 0xC0, s, n);
}

/* Post an atomic of Q to the peer (its Atomic Request is produced and sent). */
static void post_atomic(uint64_t wr_id, enum iwarp_wr_opcode op, size_t sink_off)
{
    struct iwarp_sge sg = {.addr = va(sink_off), .length = 8, .lkey = mr};
    struct iwarp_send_wr wr = {.wr_id = wr_id,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .opcode = op,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.atomic.remote_addr = 0x1000;
    wr.wr.atomic.rkey = 0x1234;
    wr.wr.atomic.compare_add = 5;
    ASSERT_EQ(iwarp_core_qp_post_send(&Q, &wr), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_qp_tx_next(&Q, 1500, &seg), 1);
    ASSERT_EQ(seg.hdr[1] & 0x0F, 0xA); /* the Atomic Request */
    iwarp_core_qp_tx_sent(&Q, &seg);
}

TEST(atomic_response_completes_its_request_in_order)
{
    setup_rdmap_ext(2);
    post_atomic(61, IWARP_WR_ATOMIC_FETCH_AND_ADD, 64);
    post_read(62, mr, 100, 4);
    post_atomic(63, IWARP_WR_ATOMIC_CMP_AND_SWP, 72);
    ASSERT_EQ(Q.orq_count, 3);
    expect_empty(&scq); /* RFC 7306 §5.4 rule 7: not before the Response */
    uint8_t s[96];
    ASSERT_EQ(feed(s, atomic_resp(s, 1, 0, 0x0102030405060708u)), 0); /* Request Identifier 0 */
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 61);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_FETCH_ADD);
    ASSERT_EQ(wc.byte_len, 8);
    set_word(64, 0x0102030405060708u); /* the original value, in host order, in the sink */
    ASSERT_EQ(feed(s, tagged(s, true, 0x2, mr, va(100), data, 4)), 0);
    memcpy(shadow + 100, data, 4);
    ASSERT_EQ_U(poll1(&scq).wr_id, 62);
    ASSERT_EQ(feed(s, atomic_resp(s, 2, 1, 77)), 0);
    wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 63);
    ASSERT_EQ(wc.opcode, IWARP_WC_COMP_SWAP);
    set_word(72, 77);
    ASSERT_EQ(Q.orq_count, 0);
    expect_buf();
}

TEST(atomic_response_errors)
{
    uint8_t s[96];
    /* none outstanding: Unexpected OpCode 0/2/0x06, as a Read Response without a Read */
    setup_rdmap_ext(2);
    size_t n = atomic_resp(s, 1, 0, 1);
    ASSERT_EQ(feed(s, n), IWARP_ERR_RDMAP_OPCODE);
    expect_term(0, 2, 0x06, 0xC0, s, n);
    /* a Read's turn: responses come in request order (RFC 7306 §7) */
    setup_rdmap_ext(2);
    post_read(1, mr, 100, 4);
    post_atomic(2, IWARP_WR_ATOMIC_FETCH_AND_ADD, 64);
    n = atomic_resp(s, 1, 0, 1);
    ASSERT_EQ(feed(s, n), IWARP_ERR_RDMAP_OPCODE);
    expect_term(0, 2, 0x06, 0xC0, s, n);
    /* another Request Identifier (§5.2.2 rule 7): 0/2/0x07; the atomic fails BAD_RESP_ERR */
    setup_rdmap_ext(2);
    post_atomic(3, IWARP_WR_ATOMIC_FETCH_AND_ADD, 64);
    n = atomic_resp(s, 1, 5, 1);
    ASSERT_EQ(feed(s, n), IWARP_ERR_ATOMIC_RESP);
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 3);
    ASSERT_EQ(wc.status, IWARP_WC_BAD_RESP_ERR);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(0, 2, 0x07));
    expect_term(0, 2, 0x07, 0xC0, s, n);
    /* the wrong MSN on queue 3: 1/2/0x03 */
    setup_rdmap_ext(2);
    post_atomic(4, IWARP_WR_ATOMIC_FETCH_AND_ADD, 64);
    n = atomic_resp(s, 2, 0, 1);
    ASSERT_EQ(feed(s, n), IWARP_ERR_PROTO);
    expect_term(1, 2, 0x03, 0xC0, s, n);
    expect_buf(); /* no sink was written */
}

TEST(atomic_answered_by_a_terminate_fails_with_its_cause)
{
    /* RFC 7306 §1.1: a peer without the extension answers Unexpected OpCode (siw does); the
     * atomic completes REM_OP_ERR with the peer's cause, the rest is flushed */
    setup_rdmap_ext(2);
    post_atomic(7, IWARP_WR_ATOMIC_FETCH_AND_ADD, 64);
    post_recv1(8, 0, 16);
    uint8_t s[96];
    size_t n = untagged(s, true, 0x7, 0, 2, 1, 0, NULL, 0);
    s[n++] = 0x02;
    s[n++] = 0x06;
    s[n++] = 0x00;
    s[n++] = 0x00;
    ASSERT_EQ(feed(s, n), 0);
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 7);
    ASSERT_EQ(wc.status, IWARP_WC_REM_OP_ERR);
    ASSERT_EQ(wc.opcode, IWARP_WC_FETCH_ADD);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(0, 2, 0x06));
    ASSERT_EQ(poll1(&rcq).status, IWARP_WC_WR_FLUSH_ERR);
    expect_buf();
}

TEST(siws_headerless_unexpected_opcode_terminate_is_read_its_way)
{
    /* siw answers an opcode it does not know (RFC 7306's, siw has none) with its 0/2/0x06
     * bit-reversed and no headers: octets 0x20 0x06, which the RFC reading calls 2/0/0x06, an
     * MPA set-up cause no stream in full operation receives (docs/interop-siw.md) */
    setup_rdmap_ext(2);
    post_atomic(9, IWARP_WR_ATOMIC_FETCH_AND_ADD, 64);
    uint8_t s[64];
    size_t n = untagged(s, true, 0x7, 0, 2, 1, 0, NULL, 0);
    s[n++] = 0x20;
    s[n++] = 0x06;
    s[n++] = 0x00;
    s[n++] = 0x00;
    ASSERT_EQ(feed(s, n), 0);
    struct iwarp_wc wc = poll1(&scq);
    ASSERT_EQ_U(wc.wr_id, 9);
    ASSERT_EQ(wc.status, IWARP_WC_REM_OP_ERR);
    ASSERT_EQ_U(wc.vendor_err, cause_u32(0, 2, 0x06));
    ASSERT_EQ_U(ev_cause[0], cause_u32(0, 2, 0x06));
    ASSERT_TRUE(ev_peer[0]);
    /* before we sent an RFC 7306 message the same octets are RFC 6581 §9.1's 2/0/0x06 (an
     * initiator's answer to the MPA exchange), and another LLP cause is read the RFC way */
    static const uint8_t llp_causes[2] = {0x06, 0x02};
    for (int i = 0; i < 2; i++) {
        setup_rdmap_ext(2);
        if (i == 1)
            post_atomic(10, IWARP_WR_ATOMIC_FETCH_AND_ADD, 64);
        n = untagged(s, true, 0x7, 0, 2, 1, 0, NULL, 0);
        s[n++] = 0x20;
        s[n++] = llp_causes[i];
        s[n++] = 0x00;
        s[n++] = 0x00;
        ASSERT_EQ(feed(s, n), 0);
        ASSERT_EQ_U(ev_cause[0], cause_u32(2, 0, llp_causes[i]));
    }
}
