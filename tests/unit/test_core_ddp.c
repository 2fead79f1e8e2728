/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DDP-level stream engine (core_ddp): segments written by hand from the RFC 5041 §4
 * layouts (Figure 3 control octet T|L|Rsvd|DV, Figure 4 tagged, Figure 5 untagged header) are
 * fed to a running engine over a real STag table; placement is checked byte for byte,
 * indications field by field (RFC 5041 §5.4: Delivery with the ULP Message Length and RsvdULP,
 * §4.2: the STag), every RFC 5041 §7.2 error by its cause, its saved header and segment length,
 * no placement, silent drop afterwards and a send side that keeps working (§6.2.2, §7.1).
 * Produced segments are compared with headers written out by hand.
 */
#include <stdio.h>

#include "core/core_ddp.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"

#define LW IWARP_MEM_ACCESS_LOCAL_WRITE
#define RW IWARP_MEM_ACCESS_REMOTE_WRITE

enum { PD = 3, PD2 = 4, QPN = 21, BUF = 4096, RQ = 4, NQ = 3, SQ = 8 };

static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[32];
static uint32_t seed = 0xdd9u;
static uint8_t buf[BUF];
static uint32_t mr;
static struct iwarp_wc sring[64], rring[64];
static struct iwarp_core_cq scq, rcq;
static struct iwarp_core_ddp_sqe sq[SQ];
static struct iwarp_core_ddp_uq uq[NQ];
static struct iwarp_core_rqe rqe[NQ * RQ];
static uint64_t lens[NQ * RQ];
static struct iwarp_core_ddp D;
static int nev, ev_type;
static uint32_t ev_cause;

static void on_event(void *user, int type, uint32_t cause)
{
    (void)user;
    nev++;
    ev_type = type;
    ev_cause = cause;
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

static void setup(void)
{
    ASSERT_EQ(iwarp_mem_table_init(&T, E, 32, harness_xorshift32, &seed), 0);
    for (size_t i = 0; i < BUF; i++)
        buf[i] = (uint8_t)(0xA5 ^ i);
    mr = reg(0, BUF, PD, LW | RW);
    ASSERT_EQ(iwarp_core_cq_init(&scq, sring, 64, NULL, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&rcq, rring, 64, NULL, NULL), 0);
    struct iwarp_core_ddp_cfg cfg = {.qp_num = QPN,
                                     .pd = PD,
                                     .mem = &T,
                                     .send_cq = &scq,
                                     .recv_cq = &rcq,
                                     .num_queues = NQ,
                                     .rq_cap = RQ,
                                     .sq_cap = SQ,
                                     .max_send_sge = IWARP_CORE_MAX_SGE,
                                     .max_recv_sge = IWARP_CORE_MAX_SGE,
                                     .event = on_event};
    struct iwarp_core_ddp_mem m = {.sq = sq, .uq = uq, .rqe = rqe, .lens = lens};
    ASSERT_EQ(iwarp_core_ddp_init(&D, &cfg, &m), 0);
    ASSERT_EQ(iwarp_core_ddp_start(&D, 0, 0), 0);
    nev = 0;
}

/* Post a receive of two SGEs [off, off + l1) and [off2, off2 + l2) on qn. */
static void post2(uint32_t qn, uint64_t wr_id, size_t off, uint32_t l1, size_t off2, uint32_t l2)
{
    struct iwarp_sge sge[2] = {{va(off), l1, mr}, {va(off2), l2, mr}};
    struct iwarp_recv_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = 2};
    ASSERT_EQ(iwarp_core_ddp_post_recv(&D, qn, &wr), 0);
}

static uint32_t seg_of(const char *hex, const uint8_t *payload, uint32_t plen, uint8_t *out)
{
    uint32_t n = (uint32_t)harness_hex(hex, out, 64);
    if (plen)
        memcpy(out + n, payload, plen);
    return n + plen;
}

static uint32_t poll1(struct iwarp_core_cq *cq, struct iwarp_wc *wc)
{
    return iwarp_core_cq_poll(cq, wc, 1);
}

/* ---- receive: untagged --------------------------------------------------------------------- */

TEST(untagged_multi_segment_two_queues)
{
    setup();
    post2(2, 0x202, 1000, 10, 2000, 30); /* 40 octets over two SGEs */
    post2(0, 0x100, 3000, 8, 3100, 8);
    uint8_t p[40], s[96];
    for (int i = 0; i < 40; i++)
        p[i] = (uint8_t)(0x30 + i);
    /* RFC 5041 Figure 5: 01 = T0 L0 DV1; RsvdULP[0:7] 9A; RsvdULP[8:39] 11223344; QN 2;
     * MSN 1; MO 0. Then the last segment (41 = L) at MO 25. */
    uint32_t n = seg_of("01 9A 11223344 00000002 00000001 00000000", p, 25, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    struct iwarp_wc wc;
    ASSERT_EQ_U(poll1(&rcq, &wc), 0u); /* not Delivered before the L segment */
    /* queue 0, interleaved between the two segments of queue 2's message */
    n = seg_of("41 00 00000000 00000000 00000001 00000000", p, 5, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
    ASSERT_EQ_U(wc.wr_id, 0x100u);
    ASSERT_EQ_U(wc.byte_len, 5u);
    ASSERT_EQ_U(wc.ddp_qn, 0u);
    ASSERT_EQ_U(wc.ddp_msn, 1u);
    n = seg_of("41 9A 11223344 00000002 00000001 00000019", p + 25, 15, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ_U(wc.wr_id, 0x202u);
    ASSERT_EQ_U(wc.byte_len, 40u); /* RFC 5041 §5.4: MO + payload of the L segment */
    ASSERT_EQ_U(wc.ddp_qn, 2u);
    ASSERT_EQ_U(wc.ddp_msn, 1u);
    ASSERT_EQ_U(wc.qp_num, (uint32_t)QPN);
    const uint8_t want_rsvd[5] = {0x9A, 0x11, 0x22, 0x33, 0x44};
    ASSERT_MEM_EQ(wc.ddp_rsvdulp, want_rsvd, 5);
    ASSERT_MEM_EQ(buf + 1000, p, 10);
    ASSERT_MEM_EQ(buf + 2000, p + 10, 30);
    ASSERT_MEM_EQ(buf + 3000, p, 5);
    ASSERT_EQ(buf[2030], (uint8_t)(0xA5 ^ 2030)); /* nothing past the message */
    ASSERT_EQ(nev, 0);
    /* the next message on queue 2 carries MSN 2 */
    post2(2, 0x203, 500, 4, 600, 0);
    n = seg_of("41 00 00000000 00000002 00000002 00000000", p, 0, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ_U(wc.byte_len, 0u); /* a zero-length message consumes its buffer */
    ASSERT_EQ_U(wc.ddp_msn, 2u);
}

/* ---- receive: tagged --------------------------------------------------------------------------
 */

TEST(tagged_multi_segment_delivered_once_with_stag)
{
    setup();
    uint8_t p[64], s[96], hex[80];
    for (int i = 0; i < 64; i++)
        p[i] = (uint8_t)(0xC0 ^ i);
    uint64_t to = va(800);
    /* RFC 5041 Figure 4: 81 = T1 L0 DV1; RsvdULP 5C; STag; TO. */
    snprintf((char *)hex, sizeof hex, "81 5C %08X %016llX", (unsigned)mr, (unsigned long long)to);
    uint32_t n = seg_of((const char *)hex, p, 40, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    struct iwarp_wc wc;
    ASSERT_EQ_U(poll1(&rcq, &wc), 0u);
    snprintf((char *)hex, sizeof hex, "C1 5C %08X %016llX", (unsigned)mr,
             (unsigned long long)(to + 40));
    n = seg_of((const char *)hex, p + 40, 24, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    ASSERT_MEM_EQ(buf + 800, p, 64);
    ASSERT_EQ(buf[864], (uint8_t)(0xA5 ^ 864));
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_TAGGED_RECV);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ_U(wc.ddp_stag, mr);
    ASSERT_EQ(wc.ddp_rsvdulp[0], 0x5C);
    ASSERT_EQ_U(wc.byte_len, 64u);
    ASSERT_EQ_U(wc.wr_id, 0u); /* no WR: the Data Source chose the buffer */
    /* RFC 5041 §5.2: a zero-length tagged segment's STag and TO are not checked */
    n = seg_of("C1 07 DEADBEEF FFFFFFFFFFFFFFFF", NULL, 0, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ_U(wc.ddp_stag, 0xDEADBEEFu);
    ASSERT_EQ_U(wc.byte_len, 0u);
    ASSERT_EQ(nev, 0);
}

TEST(two_phase_receive_places_before_delivery)
{
    setup();
    post2(1, 7, 100, 6, 200, 6);
    uint8_t s[32];
    uint32_t n = seg_of("01 00 00000000 00000001 00000001 00000000", NULL, 0, s);
    ASSERT_EQ_U(iwarp_core_ddp_rx_hdr_len(s, n, n + 8), 18u);
    ASSERT_EQ_U(iwarp_core_ddp_rx_hdr_len((const uint8_t *)"\x81", 1, 30), 14u);
    ASSERT_EQ_U(iwarp_core_ddp_rx_hdr_len((const uint8_t *)"\x01", 1, 5), 5u);
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 0;
    /* RFC 5041 §7.1: checked for the whole segment (8 payload octets) before any of it */
    ASSERT_EQ(iwarp_core_ddp_rx_hdr(&D, s, n, n + 8, dst, IWARP_CORE_RX_IOV_MAX, &nd), 0);
    ASSERT_EQ_U(nd, 2u); /* 6 in the first SGE, 2 in the second */
    ASSERT_TRUE(dst[0].iov_base == buf + 100 && dst[0].iov_len == 6);
    ASSERT_TRUE(dst[1].iov_base == buf + 200 && dst[1].iov_len == 2);
    /* a second header while one is pending */
    ASSERT_EQ(iwarp_core_ddp_rx_hdr(&D, s, n, n + 8, dst, IWARP_CORE_RX_IOV_MAX, &nd),
              IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_core_ddp_rx_payload_done(&D), 0);
    struct iwarp_wc wc;
    ASSERT_EQ_U(poll1(&rcq, &wc), 0u);
    n = seg_of("41 00 00000000 00000001 00000001 00000008", NULL, 0, s);
    ASSERT_EQ(iwarp_core_ddp_rx_hdr(&D, s, n, n + 4, dst, IWARP_CORE_RX_IOV_MAX, &nd), 0);
    ASSERT_EQ_U(nd, 1u);
    ASSERT_TRUE(dst[0].iov_base == buf + 202 && dst[0].iov_len == 4);
    ASSERT_EQ_U(poll1(&rcq, &wc), 0u); /* Delivered only in phase 2 */
    ASSERT_EQ(iwarp_core_ddp_rx_payload_done(&D), 0);
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ_U(wc.byte_len, 12u);
    ASSERT_EQ_U(wc.wr_id, 7u);
    ASSERT_EQ(iwarp_core_ddp_rx_payload_done(&D), 0); /* nothing pending: harmless */
}

/* Direct placement re-checks a tagged destination before each read of its payload: a buffer
 * deregistered after the header was validated gets nothing more (RFC 5041 §7.1 "MUST NOT
 * place"); the error is reported once, the segment is not delivered, later ones are dropped.
 * An untagged destination stays valid until a flush. */
TEST(direct_placement_rechecks_the_tagged_destination)
{
    setup();
    uint32_t sink = reg(1000, 64, PD, LW | RW);
    uint8_t s[32];
    char hex[96];
    snprintf(hex, sizeof hex, "C1 00 %08x %016llx", sink, (unsigned long long)va(1000));
    uint32_t n = seg_of(hex, NULL, 0, s);
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t nd = 0;
    ASSERT_TRUE(iwarp_core_ddp_rx_dst_valid(&D)); /* nothing pending */
    ASSERT_EQ(iwarp_core_ddp_rx_hdr(&D, s, n, n + 16, dst, IWARP_CORE_RX_IOV_MAX, &nd), 0);
    ASSERT_EQ_U(nd, 1u);
    ASSERT_TRUE(iwarp_core_ddp_rx_dst_valid(&D));
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, sink), 0);
    ASSERT_TRUE(!iwarp_core_ddp_rx_dst_valid(&D));
    ASSERT_EQ(nev, 1);
    ASSERT_EQ(ev_type, IWARP_EVENT_QP_ACCESS_ERR);
    ASSERT_EQ_U(ev_cause, 0x010100u);              /* DDP, tagged buffer, invalid STag */
    ASSERT_TRUE(!iwarp_core_ddp_rx_dst_valid(&D)); /* latched until payload_done */
    ASSERT_EQ(iwarp_core_ddp_rx_payload_done(&D), 0);
    struct iwarp_wc wc;
    ASSERT_EQ_U(poll1(&rcq, &wc), 0u); /* never delivered */
    ASSERT_EQ(iwarp_core_ddp_rx_hdr(&D, s, n, n + 16, dst, IWARP_CORE_RX_IOV_MAX, &nd), 0);
    ASSERT_EQ_U(nd, 0u); /* dropped after the error */

    setup();
    post2(1, 9, 100, 8, 200, 8);
    n = seg_of("41 00 00000000 00000001 00000001 00000000", NULL, 0, s);
    ASSERT_EQ(iwarp_core_ddp_rx_hdr(&D, s, n, n + 16, dst, IWARP_CORE_RX_IOV_MAX, &nd), 0);
    ASSERT_TRUE(iwarp_core_ddp_rx_dst_valid(&D)); /* a posted receive */
    iwarp_core_ddp_set_error(&D);
    ASSERT_TRUE(!iwarp_core_ddp_rx_dst_valid(&D)); /* flushed: the ULP's again */
}

/* ---- receive errors (RFC 5041 §7.1, §7.2) ---------------------------------------------------- */

struct rx_err_case {
    const char *name;
    const char *hdr; /* hex; a tagged case gives the first two octets, STag and TO follow */
    uint32_t payload;
    int err;
    uint32_t cause;
    int event;
};

/* Feed the case's segment to a fresh engine with a posted buffer on each queue and check
 * everything the RFC asks for. */
static void run_rx_error(const struct rx_err_case *c, uint32_t stag, uint64_t to)
{
    post2(0, 0xA0, 0, 16, 16, 16);
    post2(1, 0xA1, 64, 16, 80, 16);
    uint8_t before[BUF];
    memcpy(before, buf, BUF);
    char hex[96];
    if (c->hdr[0] == 'C')
        snprintf(hex, sizeof hex, "%s %08X %016llX", c->hdr, (unsigned)stag,
                 (unsigned long long)to);
    else
        snprintf(hex, sizeof hex, "%s", c->hdr);
    uint8_t p[64], s[128];
    memset(p, 0xEE, sizeof p);
    uint32_t n = seg_of(hex, p, c->payload, s);
    int rc = iwarp_core_ddp_rx_segment(&D, s, n);
    if (rc != c->err)
        harness_fail(__FILE__, __LINE__, "%s: rc %d, want %d", c->name, rc, c->err);
    ASSERT_EQ(nev, 1);
    ASSERT_EQ(ev_type, c->event);
    if (ev_cause != c->cause)
        harness_fail(__FILE__, __LINE__, "%s: cause %06x, want %06x", c->name, ev_cause, c->cause);
    /* RFC 5041 §7.1: the report carries the header, the error and the segment length */
    ASSERT_EQ_U(D.err.cause, c->cause);
    ASSERT_EQ_U(D.err.seg_len, n);
    size_t hl = n < 14 ? n : iwarp_ddp_hdr_len(s[0]) < n ? iwarp_ddp_hdr_len(s[0]) : n;
    ASSERT_EQ_U(D.err.hdr_len, hl);
    ASSERT_MEM_EQ(D.err.hdr, s, hl);
    ASSERT_MEM_EQ(buf, before, BUF); /* nothing Placed */
    /* posted receives complete with WR_FLUSH_ERR: nothing can arrive in them any more */
    struct iwarp_wc wc[4];
    ASSERT_EQ_U(iwarp_core_cq_poll(&rcq, wc, 4), 2u);
    ASSERT_EQ(wc[0].status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(wc[1].status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(iwarp_core_ddp_verbs_state(&D), IWARP_QPS_SQE);
    struct iwarp_sge sge = {va(0), 4, mr};
    struct iwarp_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_recv(&D, 0, &rwr), IWARP_ERR_STATE);
    /* a valid segment afterwards is silently dropped (RFC 5041 §7.1) */
    n = seg_of("41 00 00000000 00000000 00000001 00000000", p, 4, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), 0);
    ASSERT_MEM_EQ(buf, before, BUF);
    ASSERT_EQ(nev, 1);
    /* nothing went to the peer and the send side still works (RFC 5041 §6.2.2, §7.1): one
     * more message goes out */
    ASSERT_FALSE(iwarp_core_ddp_tx_close(&D));
    struct iwarp_core_ddp_send snd = {.wr_id = 9, .sg_list = &sge, .num_sge = 1, .qn = 0};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &snd), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 1000, &seg), 1);
    ASSERT_TRUE(seg.last);
}

TEST(every_ddp_receive_error)
{
    enum { FATAL = IWARP_EVENT_QP_FATAL, ACCESS = IWARP_EVENT_QP_ACCESS_ERR };
    const struct rx_err_case cases[] = {
        /* 1/0/0x00: shorter than its header (no field to trust) */
        {"short", "41 00 00000000 0000", 0, IWARP_ERR_DDP_HDR_LEN, 0x010000, FATAL},
        /* tagged: 1/1/0x00 invalid STag, 0x01 bounds, 0x02 not associated, 0x03 TO wrap,
         * 0x04 DDP version */
        {"invalid stag", "C1 00", 8, IWARP_ERR_STAG_INVALID, 0x010100, ACCESS},
        {"bounds", "C1 00", 8, IWARP_ERR_MEM_BOUNDS, 0x010101, ACCESS},
        {"not assoc", "C1 00", 8, IWARP_ERR_STAG_NOT_ASSOC, 0x010102, ACCESS},
        {"to wrap", "C1 00", 8, IWARP_ERR_MEM_TO_WRAP, 0x010103, ACCESS},
        {"tagged version", "C2 00", 8, IWARP_ERR_DDP_VERSION, 0x010104, FATAL},
        /* untagged: 1/2/0x01 QN, 0x02 no buffer, 0x03 MSN range, 0x04 MO, 0x05 too long,
         * 0x06 version */
        {"invalid qn", "41 00 00000000 00000003 00000001 00000000", 4, IWARP_ERR_DDP_QN, 0x010201,
         FATAL},
        {"no buffer", "41 00 00000000 00000002 00000001 00000000", 4, IWARP_ERR_PROTO, 0x010202,
         FATAL},
        {"msn range", "41 00 00000000 00000000 00000002 00000000", 4, IWARP_ERR_PROTO, 0x010203,
         FATAL},
        {"invalid mo", "41 00 00000000 00000000 00000001 00000004", 4, IWARP_ERR_PROTO, 0x010204,
         FATAL},
        {"too long", "41 00 00000000 00000001 00000001 00000000", 33, IWARP_ERR_PROTO, 0x010205,
         FATAL},
        {"untagged version", "40 00 00000000 00000000 00000001 00000000", 4, IWARP_ERR_DDP_VERSION,
         0x010206, FATAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setup();
        uint32_t stag = mr;
        uint64_t to = va(100);
        if (i == 1)
            stag = (mr & 0xFFFFFF00u) | ((mr + 1u) & 0xFFu); /* the right index, wrong key */
        else if (i == 2)
            to = va(BUF - 4); /* 8 octets over the end */
        else if (i == 3)
            stag = reg(0, 64, PD2, LW | RW); /* another stream's PD */
        else if (i == 4)
            to = UINT64_MAX - 3;
        run_rx_error(&cases[i], stag, to);
    }
}

TEST(tagged_needs_remote_write)
{
    setup();
    uint32_t ro = reg(0, 128, PD, LW); /* no REMOTE_WRITE: no buffer that allows Placement */
    char hex[64];
    snprintf(hex, sizeof hex, "C1 00 %08X %016llX", (unsigned)ro, (unsigned long long)va(0));
    uint8_t s[64];
    uint32_t n = seg_of(hex, (const uint8_t *)"abcd", 4, s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&D, s, n), IWARP_ERR_MEM_ACCESS);
    ASSERT_EQ_U(ev_cause, 0x010100u); /* 1/1/0x00 (mem_access.h: RFC 5041 has no rights code) */
    ASSERT_EQ(ev_type, IWARP_EVENT_QP_ACCESS_ERR);
}

TEST(llp_error_is_reported_and_stops_reception)
{
    setup();
    post2(0, 1, 0, 8, 8, 8);
    uint8_t h[18];
    harness_hex("41 00 00000000 00000000 00000001 00000000", h, sizeof h);
    iwarp_core_ddp_rx_llp_error(&D, (struct iwarp_term_cause){2, 0, 2}, h, sizeof h);
    ASSERT_EQ(nev, 1);
    ASSERT_EQ(ev_type, IWARP_EVENT_QP_FATAL);
    ASSERT_EQ_U(ev_cause, 0x020002u); /* RFC 5044 §8 code 2: CRC */
    ASSERT_EQ_U(D.err.hdr_len, 18u);
    ASSERT_EQ_U(D.err.seg_len, 0u);
    struct iwarp_wc wc;
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_FALSE(iwarp_core_ddp_tx_close(&D)); /* RFC 5044 §8: MPA does not close; the ULP does */
}

/* ---- transmit ---------------------------------------------------------------------------------
 */

static void expect_hdr(const struct iwarp_core_tx_seg *seg, const char *hex)
{
    uint8_t want[32];
    size_t n = harness_hex(hex, want, sizeof want);
    ASSERT_EQ_U(seg->hdr_len, n);
    ASSERT_MEM_EQ(seg->hdr, want, n);
}

TEST(tx_untagged_segments_per_qn_msn_and_rsvdulp)
{
    setup();
    struct iwarp_sge sge[2] = {{va(0), 30, mr}, {va(100), 10, mr}};
    const uint8_t r5[5] = {0xF1, 0xF2, 0xF3, 0xF4, 0xF5};
    struct iwarp_core_ddp_send a = {
        .wr_id = 1, .sg_list = sge, .num_sge = 2, .signaled = true, .qn = 5, .rsvdulp = r5};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &a), 0);
    struct iwarp_core_ddp_send b = {.wr_id = 2, .sg_list = sge, .num_sge = 1, .qn = 5};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &b), 0);
    struct iwarp_core_ddp_send c = {.wr_id = 3, .sg_list = sge, .num_sge = 1, .qn = 0};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &c), 0);
    struct iwarp_core_tx_seg s1, s2, s3, s4, s5;
    /* 18-octet header + 16 payload octets per segment: 16 + 16 + 8 */
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 34, &s1), 1);
    expect_hdr(&s1, "01 F1 F2F3F4F5 00000005 00000001 00000000");
    ASSERT_EQ_U(s1.payload_len, 16u);
    ASSERT_TRUE(s1.iov[0].iov_base == buf && s1.iov[0].iov_len == 16);
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 34, &s2), 1);
    expect_hdr(&s2, "01 F1 F2F3F4F5 00000005 00000001 00000010");
    ASSERT_EQ_U(s2.niov, 2u); /* 14 from the first SGE, 2 from the second */
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 34, &s3), 1);
    expect_hdr(&s3, "41 F1 F2F3F4F5 00000005 00000001 00000020");
    ASSERT_EQ_U(s3.payload_len, 8u);
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 1000, &s4), 1);
    expect_hdr(&s4, "41 00 00000000 00000005 00000002 00000000"); /* QN 5's second message */
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 1000, &s5), 1);
    expect_hdr(&s5, "41 00 00000000 00000000 00000001 00000000"); /* QN 0 starts at MSN 1 */
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 1000, &s5), 0);
    /* RFC 5041 §5.4: complete once the LLP has the whole message */
    struct iwarp_wc wc;
    iwarp_core_ddp_tx_sent(&D, &s1);
    iwarp_core_ddp_tx_sent(&D, &s2);
    ASSERT_EQ_U(poll1(&scq, &wc), 0u);
    iwarp_core_ddp_tx_sent(&D, &s3);
    ASSERT_EQ_U(poll1(&scq, &wc), 1u);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_SEND);
    ASSERT_EQ_U(wc.wr_id, 1u);
    ASSERT_EQ_U(wc.byte_len, 40u);
    iwarp_core_ddp_tx_sent(&D, &s4);
    iwarp_core_ddp_tx_sent(&D, &s5);
    ASSERT_EQ_U(poll1(&scq, &wc), 0u); /* unsignaled */
    ASSERT_EQ_U(D.stream.sq_count, 0u);
}

TEST(tx_tagged_segments_and_checks)
{
    setup();
    struct iwarp_sge sge = {va(0), 20, mr};
    const uint8_t r1[1] = {0x3C};
    struct iwarp_core_ddp_send t = {.wr_id = 4,
                                    .sg_list = &sge,
                                    .num_sge = 1,
                                    .signaled = true,
                                    .tagged = true,
                                    .stag = 0x0A0B0C0Du,
                                    .to = 0x1000,
                                    .rsvdulp = r1};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &t), 0);
    struct iwarp_core_tx_seg s1, s2;
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 26, &s1), 1); /* 14 + 12 */
    expect_hdr(&s1, "81 3C 0A0B0C0D 0000000000001000");
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 26, &s2), 1);
    expect_hdr(&s2, "C1 3C 0A0B0C0D 000000000000100C");
    ASSERT_EQ_U(s2.payload_len, 8u);
    /* RFC 5041 §7.1 check 5: TO + length must not wrap; §5.2: < 2^32 octets; bad lkey */
    t.to = UINT64_MAX - 10;
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &t), IWARP_ERR_INVAL);
    struct iwarp_sge bad = {va(0), 20, mr ^ 0x100u};
    t.to = 0;
    t.sg_list = &bad;
    ASSERT_NE(iwarp_core_ddp_post_send(&D, &t), 0);
    struct iwarp_core_ddp_send u = {.sg_list = &sge, .num_sge = 1, .qn = IWARP_CORE_DDP_MAX_QUEUES};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &u), IWARP_ERR_INVAL);
}

/* ---- teardown ---------------------------------------------------------------------------------
 */

TEST(graceful_teardown_drains_then_refuses)
{
    setup();
    struct iwarp_sge sge = {va(0), 8, mr};
    struct iwarp_core_ddp_send s = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .signaled = true};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &s), 0);
    iwarp_core_ddp_disconnect(&D);
    /* RFC 5041 §6.2.1: further data transfer requests MUST return an error */
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &s), IWARP_ERR_STATE);
    ASSERT_FALSE(iwarp_core_ddp_tx_close(&D));
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 1000, &seg), 1);
    ASSERT_FALSE(iwarp_core_ddp_tx_close(&D));
    iwarp_core_ddp_tx_sent(&D, &seg);
    ASSERT_TRUE(iwarp_core_ddp_tx_close(&D)); /* everything went to the LLP first */
    ASSERT_EQ(iwarp_core_ddp_verbs_state(&D), IWARP_QPS_SQD);
}

TEST(llp_loss_is_fatal_and_flushes)
{
    setup();
    post2(1, 0x11, 0, 8, 8, 8);
    struct iwarp_sge sge = {va(0), 8, mr};
    struct iwarp_core_ddp_send s = {.wr_id = 2, .sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &s), 0);
    iwarp_core_ddp_llp_closed(&D, false);
    ASSERT_EQ(nev, 1);
    ASSERT_EQ(ev_type, IWARP_EVENT_QP_FATAL);
    ASSERT_EQ_U(ev_cause, 0x020001u); /* RFC 5044 §8 code 1, RFC 5041 §6.2.2 */
    struct iwarp_wc wc;
    ASSERT_EQ_U(poll1(&rcq, &wc), 1u);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ_U(wc.wr_id, 0x11u);
    ASSERT_EQ_U(wc.ddp_qn, 1u);
    ASSERT_EQ_U(poll1(&scq, &wc), 1u); /* flushed even unsignaled */
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(iwarp_core_ddp_verbs_state(&D), IWARP_QPS_ERR);
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &s), IWARP_ERR_STATE);
}

TEST(abortive_flush_waits_for_the_llp)
{
    setup();
    struct iwarp_sge sge = {va(0), 8, mr};
    struct iwarp_core_ddp_send s = {.wr_id = 3, .sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &s), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 1000, &seg), 1);
    iwarp_core_ddp_set_error(&D);
    struct iwarp_wc wc;
    ASSERT_EQ_U(poll1(&scq, &wc), 0u); /* the LLP still reads the payload */
    iwarp_core_ddp_tx_sent(&D, &seg);
    ASSERT_EQ_U(poll1(&scq, &wc), 1u);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(nev, 0); /* the ULP's own teardown is no error */
}

TEST(fini_releases_the_mrs_a_pending_flush_and_posted_receives_hold)
{
    setup();
    uint32_t src = reg(0, 64, PD, LW), dst = reg(64, 64, PD, LW);
    struct iwarp_sge sge = {va(0), 8, src};
    struct iwarp_core_ddp_send s = {.wr_id = 4, .sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_send(&D, &s), 0);
    struct iwarp_sge rsge = {va(64), 8, dst};
    struct iwarp_recv_wr rwr = {.wr_id = 5, .sg_list = &rsge, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_recv(&D, 0, &rwr), 0);
    struct iwarp_core_tx_seg seg;
    ASSERT_EQ(iwarp_core_ddp_tx_next(&D, 1000, &seg), 1);
    iwarp_core_ddp_set_error(&D); /* the send's flush waits for the LLP, which never answers */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, src), 0);
    ASSERT_EQ_U(E[iwarp_stag_index(src)].state, IWARP_MEM_RETIRED); /* the index waits */
    iwarp_core_ddp_fini(&D); /* the QP is destroyed meanwhile */
    ASSERT_EQ_U(E[iwarp_stag_index(src)].state, IWARP_MEM_FREE);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, dst), 0);
    ASSERT_EQ_U(T.nretired, 0u);
}

TEST(idle_refuses_receive_and_bad_args)
{
    setup();
    struct iwarp_core_ddp idle;
    struct iwarp_core_ddp_cfg cfg = D.cfg;
    struct iwarp_core_ddp_mem m = {.sq = sq, .uq = uq, .rqe = rqe, .lens = lens};
    cfg.num_queues = 0;
    ASSERT_EQ(iwarp_core_ddp_init(&idle, &cfg, &m), IWARP_ERR_INVAL);
    cfg.num_queues = IWARP_CORE_DDP_MAX_QUEUES + 1;
    ASSERT_EQ(iwarp_core_ddp_init(&idle, &cfg, &m), IWARP_ERR_INVAL);
    cfg.num_queues = NQ;
    ASSERT_EQ(iwarp_core_ddp_init(&idle, &cfg, &m), 0);
    uint8_t s[18];
    harness_hex("41 00 00000000 00000000 00000001 00000000", s, sizeof s);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&idle, s, sizeof s), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_core_ddp_start(&idle, 0, 0), 0);
    ASSERT_EQ(iwarp_core_ddp_start(&idle, 0, 0), IWARP_ERR_STATE);
    struct iwarp_sge sge = {va(0), 8, mr};
    struct iwarp_recv_wr wr = {.sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_recv(&idle, NQ, &wr), IWARP_ERR_INVAL);
    for (int i = 0; i < RQ; i++)
        ASSERT_EQ(iwarp_core_ddp_post_recv(&idle, 0, &wr), 0);
    ASSERT_EQ(iwarp_core_ddp_post_recv(&idle, 0, &wr), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_core_ddp_rx_segment(&idle, s, 0), IWARP_ERR_DDP_HDR_LEN); /* empty */
}
