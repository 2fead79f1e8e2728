/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: one MPA connection (llp_conn) attached to a real QP engine with posted
 * receives, a registered MR and outstanding RDMA Reads, fed the peer's byte stream.
 * Input: cfg(1): bit 0 role (0 initiator, 1 responder), bit 1 we ask for CRC, bit 2 we ask for
 *   markers, bit 3 MPA Rev 1 (else Rev 2), bits 4-5 RTR (initiator: peer-to-peer with Write,
 *   Read, Send; 0 none), bits 6-7 EMSS (1460, 536, 9000, 65483);
 *   split(1): piece sizes 1 .. 2^(split % 17) from a generator seeded with split;
 *   acts(1): seeds the choice, between pieces, of draining TX (all or part), posting a receive
 *   or a Read, and a partial rx_buf fill;
 *   then the peer's stream: its Reply (initiator) or Request (responder), then FPDUs.
 * Properties:
 *   - never crashes (sanitizers) and every call returns 0 or a negative IWARP_ERR_*;
 *   - rx_buf only ever points into the bounce buffer or the registered MR (never its guards),
 *     and nothing outside the MR changes (guard zones);
 *   - once the connection failed or the QP left RUNNING, the MR never changes again;
 *   - what the connection sends is a well-formed MPA stream: one Request/Reply frame, then
 *     FPDUs that the library's deframer accepts (CRC and markers as negotiated) each holding a
 *     DDP segment that iwarp_wire_segment_decode accepts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/core_qp.h"
#include "core/core_qp_int.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "llp/llp_conn.h"
#include "mem/mem_region.h"
#include "mpa/mpa_deframe.h"
#include "wire/wire_mpa.h"
#include "wire/wire_segment.h"

#define GUARD  512u
#define MRLEN  (128u << 10)
#define NWC    64u
#define RQ_CAP 16u
#define SQ_CAP 16u
#define OUTCAP (1u << 20)

static uint8_t arena[GUARD + MRLEN + GUARD];
static uint8_t snapshot[MRLEN];
static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[8];
static struct iwarp_wc sring[NWC], rring[NWC];
static struct iwarp_core_cq scq, rcq;
static struct iwarp_core_sqe sq[SQ_CAP];
static struct iwarp_core_rqe rq[RQ_CAP];
static uint64_t rq_lens[RQ_CAP];
static struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
static struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
static uint64_t irq_lens[IWARP_CORE_MAX_IRD];
static struct iwarp_core_qp Q;
static struct iwarp_llp_conn C;
static uint8_t bounce[IWARP_LLP_CONN_BOUNCE];
static struct iwarp_llp_conn_txf txf[IWARP_LLP_CONN_TX_SEGS];
static uint8_t tx_stage[IWARP_LLP_CONN_TX_STAGE]; /* Read Responses with CRC on */
static uint32_t mr;
static bool frozen; /* the MR must not change any more (snapshot taken) */

/* What the connection sent: the negotiation frame, then FPDUs, checked as they come. */
static struct {
    uint8_t frame[20 + 512];
    size_t frame_have, frame_len; /* frame_len 0: not known yet */
    bool deframing;
    struct iwarp_mpa_rx rx;
    uint8_t ulpdu[IWARP_MPA_MULPDU_MAX];
} out;

static uint8_t *mr_base(void)
{
    return arena + GUARD;
}

static void guards_intact(void)
{
    for (size_t i = 0; i < GUARD; i++) {
        FUZZ_CHECK(arena[i] == (uint8_t)(0x5A ^ i));
        FUZZ_CHECK(arena[GUARD + MRLEN + i] == (uint8_t)(0xC3 ^ i));
    }
}

/* After a failure or once the QP left RUNNING nothing is placed (RFC 5040 §4.8, RFC 5044 §8:
 * nothing is placed after an error); the first call takes the snapshot. */
static void check_frozen(void)
{
    enum iwarp_qp_state s = iwarp_core_qp_verbs_state(&Q);
    bool dead = C.state == IWARP_LLP_CONN_FAILED || C.state == IWARP_LLP_CONN_REJECTED ||
                s == IWARP_QPS_SQE || s == IWARP_QPS_ERR;
    if (frozen) {
        FUZZ_CHECK(memcmp(snapshot, mr_base(), MRLEN) == 0);
    } else if (dead) {
        memcpy(snapshot, mr_base(), MRLEN);
        frozen = true;
    }
}

static void post_recv(uint32_t off, uint32_t len)
{
    off %= MRLEN;
    if (len > MRLEN - off)
        len = MRLEN - off;
    struct iwarp_sge sg[2] = {
        {.addr = (uintptr_t)(mr_base() + off), .length = len / 2, .lkey = mr},
        {.addr = (uintptr_t)(mr_base() + off + len / 2), .length = len - len / 2, .lkey = mr}};
    struct iwarp_recv_wr wr = {.wr_id = off, .sg_list = sg, .num_sge = 2};
    (void)iwarp_core_qp_post_recv(&Q, &wr);
}

static void post_read(uint32_t off, uint32_t len)
{
    off %= MRLEN;
    if (len > MRLEN - off)
        len = MRLEN - off;
    struct iwarp_sge sg = {.addr = (uintptr_t)(mr_base() + off), .length = len, .lkey = mr};
    struct iwarp_send_wr wr = {.wr_id = off,
                               .sg_list = &sg,
                               .num_sge = len ? 1 : 0,
                               .opcode = IWARP_WR_RDMA_READ,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = 0x10000;
    wr.wr.rdma.rkey = 0x1234;
    (void)iwarp_core_qp_post_send(&Q, &wr);
}

/* One FPDU of our output: its DDP segment must decode (our own stream is well-formed). */
static void out_fpdu(uint32_t len)
{
    struct iwarp_wire_segment seg;
    struct iwarp_term_cause cause;
    FUZZ_CHECK(iwarp_wire_segment_decode(out.ulpdu, len, &seg, &cause) == 0);
}

/* n octets the connection sent. */
static void out_feed(const uint8_t *p, size_t n)
{
    while (n && !out.deframing) {
        size_t room = sizeof out.frame - out.frame_have;
        size_t want = out.frame_len ? out.frame_len - out.frame_have : room;
        size_t k = n < want ? n : want;
        memcpy(out.frame + out.frame_have, p, k);
        out.frame_have += k;
        p += k;
        n -= k;
        if (!out.frame_len) {
            struct iwarp_mpa_frame f;
            iwarp_ssize r = iwarp_mpa_frame_decode(out.frame, out.frame_have, &f);
            if (r == IWARP_ERR_SHORT)
                continue;
            FUZZ_CHECK(r > 0); /* our Request/Reply is well-formed (RFC 5044 §7.1) */
            out.frame_len = (size_t)r;
            /* bytes past the frame were copied: give them back */
            size_t extra = out.frame_have - out.frame_len;
            p -= extra;
            n += extra;
            out.frame_have = out.frame_len;
        }
        if (out.frame_len && out.frame_have == out.frame_len && n) {
            /* FPDUs follow only in full operation, framed as the framer was set up */
            FUZZ_CHECK(C.fullop);
            struct iwarp_mpa_rx_cfg rc = {.crc = C.tx.crc, .markers = C.tx.markers};
            FUZZ_CHECK(iwarp_mpa_rx_init(&out.rx, &rc) == 0);
            out.deframing = true;
        }
    }
    while (n) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize r = iwarp_mpa_rx_feed(&out.rx, p, n, &ev);
        FUZZ_CHECK(r >= 0);
        p += r;
        n -= (size_t)r;
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU) {
            FUZZ_CHECK(ev.ulpdu_off + ev.len <= sizeof out.ulpdu);
            memcpy(out.ulpdu + ev.ulpdu_off, ev.data, ev.len);
        } else if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            out_fpdu(ev.ulpdu_len);
        }
    }
}

/* Take what the connection has to send: everything, or (part) only a part. */
static void drain_tx(uint64_t now, bool part, uint32_t *r)
{
    for (int round = 0; round < 64; round++) {
        struct iovec iov[64];
        uint32_t k = iwarp_llp_conn_tx_iov(&C, iov, 64, now);
        if (k == 0)
            break;
        size_t total = 0;
        for (uint32_t i = 0; i < k; i++)
            total += iov[i].iov_len;
        size_t take = part ? 1u + fuzz_xorshift(r) % total : total;
        size_t left = take;
        for (uint32_t i = 0; i < k && left; i++) {
            size_t l = iov[i].iov_len < left ? iov[i].iov_len : left;
            out_feed(iov[i].iov_base, l);
            left -= l;
        }
        iwarp_llp_conn_tx_ack(&C, take);
        if (part)
            break;
    }
    struct iwarp_wc wc[NWC];
    (void)iwarp_core_cq_poll(&scq, wc, NWC);
    (void)iwarp_core_cq_poll(&rcq, wc, NWC);
}

/* The responder decides on the Request: accept with modest resources. */
static void maybe_accept(void)
{
    if (C.state != IWARP_LLP_CONN_REQUEST)
        return;
    iwarp_llp_conn_attach(&C, &Q.eng);
    struct iwarp_mpa_neg_answer a = {.ird = 4, .ord = 4};
    (void)iwarp_llp_conn_accept(&C, &a);
}

static void setup(uint8_t cfgb, uint32_t seed)
{
    static uint32_t rs;
    rs = seed | 1u;
    for (size_t i = 0; i < GUARD; i++) {
        arena[i] = (uint8_t)(0x5A ^ i);
        arena[GUARD + MRLEN + i] = (uint8_t)(0xC3 ^ i);
    }
    memset(mr_base(), 0xEE, MRLEN);
    frozen = false;
    memset(&out, 0, sizeof out);
    (void)iwarp_mem_table_init(&T, E, 8, fuzz_xorshift, &rs);
    struct iwarp_mem_range mrr = {.addr = (uintptr_t)mr_base(),
                                  .iova = (uintptr_t)mr_base(),
                                  .length = MRLEN,
                                  .access = IWARP_MEM_ACCESS_LOCAL_WRITE |
                                            IWARP_MEM_ACCESS_REMOTE_WRITE |
                                            IWARP_MEM_ACCESS_REMOTE_READ};
    FUZZ_CHECK(iwarp_mem_reg_mr(&T, 1, &mrr, &mr) == 0);
    (void)iwarp_core_cq_init(&scq, sring, NWC, NULL, NULL);
    (void)iwarp_core_cq_init(&rcq, rring, NWC, NULL, NULL);
    struct iwarp_core_qp_cfg qc = {.qp_num = 3,
                                   .pd = 1,
                                   .mem = &T,
                                   .send_cq = &scq,
                                   .recv_cq = &rcq,
                                   .sq_cap = SQ_CAP,
                                   .rq_cap = RQ_CAP,
                                   .max_send_sge = 2,
                                   .max_recv_sge = 2,
                                   .sq_sig_all = true};
    struct iwarp_core_qp_mem qm = {
        .sq = sq, .rq = rq, .rq_lens = rq_lens, .orq = orq, .irq = irq, .irq_lens = irq_lens};
    FUZZ_CHECK(iwarp_core_qp_init(&Q, &qc, &qm) == 0);

    static const uint32_t emss[4] = {1460, 536, 9000, 65483};
    bool resp = cfgb & 1u;
    struct iwarp_llp_conn_cfg cc = {.emss = emss[cfgb >> 6]};
    iwarp_mpa_neg_cfg_default(&cc.neg, resp ? IWARP_MPA_RESPONDER : IWARP_MPA_INITIATOR);
    cc.neg.crc = cfgb & 2u;
    cc.neg.markers = cfgb & 4u;
    cc.neg.revision = (cfgb & 8u) ? 1 : 2;
    cc.neg.enhanced = !resp && cc.neg.revision == 2;
    cc.neg.rtr = IWARP_MPA_RTR_ALL;
    uint8_t rtr = (uint8_t)((cfgb >> 4) & 3u);
    if (!resp && rtr && cc.neg.revision == 2) {
        cc.neg.peer2peer = true;
        cc.neg.rtr_pref = (uint8_t)(1u << (rtr - 1u));
    }
    FUZZ_CHECK(iwarp_llp_conn_init(&C, &cc, bounce, txf, 0) == 0);
    FUZZ_CHECK(iwarp_llp_conn_set_tx_stage(&C, tx_stage, sizeof tx_stage) == 0);
    if (!resp)
        iwarp_llp_conn_attach(&C, &Q.eng);
    /* receives of several sizes before anything arrives */
    post_recv(0, 64);
    post_recv(4096, 4000);
    post_recv(16384, 65536);
    post_recv(100, 0);
}

/* Is [p, p + n) inside the bounce buffer or the MR? */
static bool rx_target_ok(const uint8_t *p, size_t n)
{
    if (p >= bounce && p + n <= bounce + sizeof bounce)
        return true;
    return p >= mr_base() && p + n <= mr_base() + MRLEN;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t cfgb = fuzz_take(&data, &size);
    uint8_t split = fuzz_take(&data, &size);
    uint8_t acts = fuzz_take(&data, &size);
    setup(cfgb, (uint32_t)split << 8 | acts);
    uint32_t rs = (uint32_t)split * 2654435761u | 1u, ra = (uint32_t)acts * 40503u | 1u;
    uint32_t max_piece = 1u << (split % 17u);
    uint64_t now = 1000;
    bool reads_posted = false;
    drain_tx(now, false, &ra); /* the initiator's Request */
    while (size) {
        size_t piece = 1u + fuzz_xorshift(&rs) % max_piece;
        if (piece > size)
            piece = size;
        while (piece) {
            maybe_accept();
            size_t len = 0;
            uint8_t *buf = iwarp_llp_conn_rx_buf(&C, &len);
            if (!buf)
                break;
            FUZZ_CHECK(len >= 1);
            FUZZ_CHECK(rx_target_ok(buf, len));
            size_t k = piece < len ? piece : len;
            if ((fuzz_xorshift(&ra) & 7u) == 0 && k > 1)
                k = 1u + fuzz_xorshift(&ra) % k; /* a short read */
            memcpy(buf, data, k);
            data += k;
            size -= k;
            piece -= k;
            int rc = iwarp_llp_conn_rx_ack(&C, k, now);
            FUZZ_CHECK(rc == 0 || (rc < 0 && iwarp_err_name(rc) != NULL));
            guards_intact();
            check_frozen();
        }
        if (piece) /* nothing may be read now: the rest of the input is not looked at */
            break;
        now += 1000;
        uint32_t a = fuzz_xorshift(&ra);
        if (C.state == IWARP_LLP_CONN_ESTABLISHED && !reads_posted) {
            /* outstanding Reads whose Responses the peer may send (sinks at 32K, 48K) */
            post_read(32768, 5000);
            post_read(49152, 70000);
            reads_posted = true;
        }
        if (a & 1u)
            drain_tx(now, (a & 6u) == 0, &ra);
        if ((a & 0x70u) == 0x10u)
            post_recv(fuzz_xorshift(&ra), fuzz_xorshift(&ra) % 9000u);
        if ((a & 0x70u) == 0x20u)
            post_read(fuzz_xorshift(&ra), fuzz_xorshift(&ra) % 9000u);
        guards_intact();
        check_frozen();
    }
    maybe_accept();
    drain_tx(now, false, &ra);
    iwarp_llp_conn_closed(&C, true);
    drain_tx(now, false, &ra);
    guards_intact();
    check_frozen();
    return 0;
}
