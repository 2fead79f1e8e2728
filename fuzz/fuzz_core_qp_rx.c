/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: iwarp_core_qp_rx_segment on a running QP with posted receives (or an SRQ), a
 * registered MR, outstanding RDMA Reads and a TX side that answers inbound Reads.
 * With cfg bit 3 the QP enables RFC 7306 (Immediate Data, atomics; the MR allows remote
 * atomics): Atomic Requests are performed on it and Atomic Responses complete posted atomics.
 * Input: cfg(1): bit 0 SRQ, bits 1-2 IRD - 1, bit 3 RFC 7306; nrecv(1); then operations op(1)
 * and arguments:
 *   op % 6 == 0  raw segment: len(1), then len octets as they are
 *   op % 6 == 1  untagged segment: opcode(1), flags(1) (L, MSN/MO jitter), inv/stag choice(1),
 *                len(1) payload octets (the rest of the header follows the QP's expectations
 *                shifted by the jitter, so that deep states are reached); a Read Request, an
 *                Atomic Request or an Atomic Response gets a body built from those octets
 *                (target offsets and alignment, AOpCode, Request Identifier near the expected)
 *   op % 6 == 2  tagged segment: opcode(1) (Write or Read Response), L, STag choice(1),
 *                TO offset(2), len(1)
 *   op % 6 == 3  drain TX: every produced segment is "sent" (Read Responses read memory)
 *   op % 6 == 4  post a receive: offset(2), len(1)
 *   op % 6 == 5  post an RDMA Read into the MR: offset(2), len(1), and send its Request; with
 *                op bit 6 an atomic (FetchAdd or CmpSwap by op bit 7) whose sink is at offset
 * Properties:
 *   - nothing is written outside the registered MR (guard zones around it keep their pattern);
 *   - once the QP left RUNNING, nothing more is placed (the MR is unchanged by later segments);
 *   - every call returns 0 or a negative IWARP_ERR_* and never crashes (sanitizers);
 *   - the input runs twice, with the QP's header prediction (core_qp_rx.c, core_qp_tx.c) and
 *     without: the two runs return the same codes, complete the same work requests the same
 *     way, produce the same segments octet for octet and leave the same MR and QP state.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/core_qp.h"
#include "core/core_qp_int.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mem/mem_region.h"

#define GUARD  256u
#define MRLEN  2048u
#define NWC    64u
#define RQ_CAP 8u

static uint8_t arena[GUARD + MRLEN + GUARD];
static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[8];
static struct iwarp_wc sring[NWC], rring[NWC];
static struct iwarp_core_cq scq, rcq;
static struct iwarp_core_sqe sq[8];
static struct iwarp_core_rqe rq[RQ_CAP], srq_ring[RQ_CAP];
static uint64_t rq_lens[RQ_CAP];
static struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
static struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
static uint64_t irq_lens[IWARP_CORE_MAX_IRD];
static struct iwarp_core_srq srq;
static struct iwarp_core_qp Q;
static uint32_t mr, ro_mr;
static uint8_t snapshot[MRLEN];

/* Everything a run shows the outside (fuzz_digest): compared between the two runs. */
static uint64_t digest;

static void mix(const void *p, size_t n)
{
    fuzz_digest(&digest, p, n);
}

static void mix_u64(uint64_t v)
{
    mix(&v, sizeof v);
}

static uint64_t mr_va(uint32_t off)
{
    return (uint64_t)(uintptr_t)(arena + GUARD + off % MRLEN);
}

static void guards_intact(void)
{
    for (size_t i = 0; i < GUARD; i++) {
        FUZZ_CHECK(arena[i] == (uint8_t)(0x5A ^ i));
        FUZZ_CHECK(arena[GUARD + MRLEN + i] == (uint8_t)(0xC3 ^ i));
    }
}

static void mix_wcs(const struct iwarp_wc *wc, uint32_t n)
{
    mix_u64(n);
    for (uint32_t i = 0; i < n; i++) {
        const struct iwarp_wc *w = &wc[i];
        uint64_t f[] = {w->wr_id,    w->status,   w->opcode,   w->vendor_err,
                        w->byte_len, w->imm_data, w->wc_flags, w->qp_num};
        mix(f, sizeof f);
    }
}

/* A CQ's notification (an arm that fired, an overrun): which one, and why. */
static void on_notify(void *user, struct iwarp_core_cq *cq, enum iwarp_core_cq_why why)
{
    (void)user;
    mix_u64((uint64_t)(cq == &rcq) << 8 | why);
}

/* Take the completions; the receive CQ is armed again for solicited ones (Sends with SE). */
static void drain_cqs(void)
{
    struct iwarp_wc wc[NWC];
    mix_wcs(wc, iwarp_core_cq_poll(&scq, wc, NWC));
    mix_wcs(wc, iwarp_core_cq_poll(&rcq, wc, NWC));
    iwarp_core_cq_arm(&rcq, true);
}

static void drain_tx(void)
{
    struct iwarp_core_tx_seg seg;
    for (int i = 0; i < 64 && iwarp_core_qp_tx_next(&Q, 256, &seg) == 1; i++) {
        uint64_t f[] = {seg.src, seg.last, seg.wr_done, seg.index, seg.hdr_len, seg.payload_len};
        mix(f, sizeof f);
        mix(seg.hdr, seg.hdr_len);
        for (uint32_t k = 0; k < seg.niov; k++) /* read what the LLP would send */
            mix(seg.iov[k].iov_base, seg.iov[k].iov_len);
        iwarp_core_qp_tx_sent(&Q, &seg);
    }
}

static void post_recv(uint32_t off, uint32_t len)
{
    off %= MRLEN;
    if (len > MRLEN - off)
        len = MRLEN - off;
    struct iwarp_sge sg[2] = {{.addr = mr_va(off), .length = len / 2, .lkey = mr},
                              {.addr = mr_va(off + len / 2), .length = len - len / 2, .lkey = mr}};
    struct iwarp_recv_wr wr = {.wr_id = off, .sg_list = sg, .num_sge = 2};
    if (Q.cfg.srq) {
        struct iwarp_core_rqe rqe;
        if (iwarp_core_rqe_from_wr(&rqe, &wr, IWARP_CORE_MAX_SGE, &T, 1) == 0)
            (void)iwarp_core_rq_push(&srq.rq, &rqe);
    } else {
        (void)iwarp_core_qp_post_recv(&Q, &wr);
    }
}

static void post_read(uint32_t off, uint32_t len)
{
    off %= MRLEN;
    if (len > MRLEN - off)
        len = MRLEN - off;
    struct iwarp_sge sg = {.addr = mr_va(off), .length = len, .lkey = mr};
    struct iwarp_send_wr wr = {.wr_id = off,
                               .sg_list = &sg,
                               .num_sge = len ? 1 : 0,
                               .opcode = IWARP_WR_RDMA_READ,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = 0x1000;
    wr.wr.rdma.rkey = 0x99;
    (void)iwarp_core_qp_post_send(&Q, &wr);
    drain_tx();
}

static void post_atomic(uint8_t op, uint32_t off)
{
    off = off % MRLEN & ~7u;
    if (off > MRLEN - 8)
        off = MRLEN - 8;
    struct iwarp_sge sg = {.addr = mr_va(off), .length = 8, .lkey = mr};
    struct iwarp_send_wr wr = {.wr_id = off,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .opcode = (op & 0x80) ? IWARP_WR_ATOMIC_CMP_AND_SWP
                                                     : IWARP_WR_ATOMIC_FETCH_AND_ADD,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.atomic.remote_addr = 0x2000;
    wr.wr.atomic.rkey = 0x99;
    wr.wr.atomic.compare_add = off;
    (void)iwarp_core_qp_post_send(&Q, &wr);
    drain_tx();
}

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void be64(uint8_t *p, uint64_t v)
{
    be32(p, (uint32_t)(v >> 32));
    be32(p + 4, (uint32_t)v);
}

/* An STag the peer might use: ours, read-only, the ORQ head's sink, a stale key, or junk. */
static uint32_t pick_stag(uint8_t c)
{
    switch (c % 5) {
    case 0:
        return mr;
    case 1:
        return ro_mr;
    case 2:
        return Q.orq_count ? Q.orq[Q.orq_head].sink_stag : mr;
    case 3:
        return mr ^ 1u;
    default:
        return (uint32_t)c * 0x01010101u;
    }
}

static void feed(const uint8_t *seg, size_t len)
{
    bool placing =
        Q.stream.state == IWARP_CORE_STREAM_RUNNING || Q.stream.state == IWARP_CORE_STREAM_CLOSING;
    if (!placing)
        memcpy(snapshot, arena + GUARD, MRLEN);
    int rc = iwarp_core_qp_rx_segment(&Q, seg, len);
    FUZZ_CHECK(rc <= 0);
    mix_u64((uint64_t)(int64_t)rc);
    if (!placing) /* RFC 5041 §7.1: nothing placed after an error */
        FUZZ_CHECK(memcmp(snapshot, arena + GUARD, MRLEN) == 0);
    guards_intact();
    drain_cqs();
}

/* One run of the input; the QP predicts headers or not. Returns its digest. */
static uint64_t run(const uint8_t *data, size_t size, bool predict)
{
    digest = fuzz_digest_start();
    uint32_t seed = 0x1234567u;
    for (size_t i = 0; i < GUARD; i++) {
        arena[i] = (uint8_t)(0x5A ^ i);
        arena[GUARD + MRLEN + i] = (uint8_t)(0xC3 ^ i);
    }
    memset(arena + GUARD, 0, MRLEN);
    FUZZ_CHECK(iwarp_mem_table_init(&T, E, 8, fuzz_xorshift, &seed) == 0);
    struct iwarp_mem_range r = {.addr = mr_va(0),
                                .iova = mr_va(0),
                                .length = MRLEN,
                                .access =
                                    IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE |
                                    IWARP_MEM_ACCESS_REMOTE_READ | IWARP_MEM_ACCESS_REMOTE_ATOMIC};
    FUZZ_CHECK(iwarp_mem_reg_mr(&T, 1, &r, &mr) == 0);
    r.access = IWARP_MEM_ACCESS_REMOTE_READ;
    r.length = MRLEN / 2;
    FUZZ_CHECK(iwarp_mem_reg_mr(&T, 1, &r, &ro_mr) == 0);
    FUZZ_CHECK(iwarp_core_cq_init(&scq, sring, NWC, on_notify, NULL) == 0);
    FUZZ_CHECK(iwarp_core_cq_init(&rcq, rring, NWC, on_notify, NULL) == 0);
    iwarp_core_cq_arm(&rcq, true);

    uint8_t cfgb = fuzz_take(&data, &size);
    bool use_srq = cfgb & 1;
    if (use_srq) {
        FUZZ_CHECK(iwarp_core_rq_init(&srq.rq, srq_ring, RQ_CAP, IWARP_CORE_MAX_SGE) == 0);
        srq.pd = 1;
        srq.limit = 2;
        srq.limit_fired = false;
    }
    struct iwarp_core_qp_cfg cfg = {
        .qp_num = 5,
        .pd = 1,
        .mem = &T,
        .send_cq = &scq,
        .recv_cq = &rcq,
        .srq = use_srq ? &srq : NULL,
        .sq_cap = 8,
        .rq_cap = use_srq ? 0 : RQ_CAP,
        .max_send_sge = 2,
        .max_recv_sge = 2,
        .rdmap_ext = (cfgb & 8) ? IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS : 0u};
    struct iwarp_core_qp_mem m = {.sq = sq,
                                  .rq = use_srq ? NULL : rq,
                                  .rq_lens = rq_lens,
                                  .orq = orq,
                                  .irq = irq,
                                  .irq_lens = irq_lens};
    FUZZ_CHECK(iwarp_core_qp_init(&Q, &cfg, &m) == 0);
    Q.rx_predict = Q.tx_predict = predict;
    FUZZ_CHECK(iwarp_core_qp_start(&Q, 1u + ((cfgb >> 1) & 3u), 4) == 0);
    uint8_t nrecv = fuzz_take(&data, &size) % RQ_CAP;
    for (uint32_t i = 0; i < nrecv; i++)
        post_recv(i * 200u, 150);
    post_read(1500, 64);

    uint8_t seg[300];
    while (size > 0) {
        uint8_t op = fuzz_take(&data, &size);
        switch (op % 6) {
        case 0: {
            size_t n = fuzz_take(&data, &size);
            if (n > size)
                n = size;
            feed(data, n);
            data += n;
            size -= n;
            break;
        }
        case 1: {
            uint8_t opc = fuzz_take(&data, &size) % 12;
            uint8_t fl = fuzz_take(&data, &size);
            uint8_t sc = fuzz_take(&data, &size);
            uint8_t n = fuzz_take(&data, &size);
            const struct iwarp_ddp_rx_uq *q = opc == 1 || opc == 0xA ? &Q.uq_read
                                              : opc == 7             ? &Q.uq_term
                                              : opc == 0xB           ? &Q.uq_atomic_resp
                                                                     : &Q.uq_send;
            uint32_t qn = opc == 1 || opc == 0xA ? 1u : opc == 7 ? 2u : opc == 0xB ? 3u : 0u;
            seg[0] = (uint8_t)(0x01 | ((fl & 1) ? 0x40 : 0));
            seg[1] = (uint8_t)(0x40 | opc);
            be32(seg + 2, pick_stag(sc));
            be32(seg + 6, qn);
            be32(seg + 10, iwarp_ddp_rx_uq_expected_msn(q) + ((fl >> 1) & 3u) - 1u);
            be32(seg + 14, (uint32_t)iwarp_ddp_rx_uq_received(q) + ((fl >> 3) & 3u) - 1u);
            if (opc == 1) { /* a Read Request body: sink, size, source */
                be32(seg + 18, 0x77);
                be64(seg + 22, 0x88);
                be32(seg + 30, n);
                be32(seg + 34, pick_stag(sc >> 3));
                be64(seg + 38, mr_va((uint32_t)fl << 4));
                n = 28;
            } else if (opc == 0xA) { /* an Atomic Request: AOpCode, target (maybe misaligned) */
                be32(seg + 18, (uint32_t)(n & 3u)); /* 0 FetchAdd, 2 CmpSwap, 1 and 3 unknown */
                be32(seg + 22, n);
                be32(seg + 26, pick_stag(sc >> 3));
                be64(seg + 30, mr_va((uint32_t)fl << 4) + ((n >> 2) & 7u));
                be64(seg + 38, 0x0101010101010101u * n);
                be64(seg + 46, (n & 0x40) ? 0x8080808080808080u : 0);
                be64(seg + 54, 0);
                be64(seg + 62, (n & 0x80) ? 0xFFu : UINT64_MAX);
                n = 52;
            } else if (opc == 0xB) { /* an Atomic Response: the head's Request Identifier,
                                        or (n bit 2) one up to 3 past it */
                uint32_t id = Q.orq_count ? Q.orq[Q.orq_head].req_id : 0;
                be32(seg + 18, id + ((n & 4u) ? (uint32_t)(n & 3u) : 0u));
                be64(seg + 22, 0x1111111111111111u * n);
                n = 12;
            }
            bool body = opc == 1 || opc == 0xA || opc == 0xB;
            size_t take = n < size ? n : size;
            if (!body)
                memcpy(seg + 18, data, take);
            if (!body) {
                data += take;
                size -= take;
                n = (uint8_t)take;
            }
            feed(seg, 18u + n);
            break;
        }
        case 2: {
            uint8_t opc = (fuzz_take(&data, &size) & 1) ? 0x2 : 0x0;
            uint8_t sc = fuzz_take(&data, &size);
            uint32_t to = (uint32_t)fuzz_take(&data, &size) << 8;
            to |= fuzz_take(&data, &size);
            uint8_t n = fuzz_take(&data, &size);
            size_t take = n < size ? n : size;
            seg[0] = (uint8_t)(0x81 | ((op & 0x40) ? 0x40 : 0));
            seg[1] = (uint8_t)(0x40 | opc);
            uint32_t stag = pick_stag(sc);
            be32(seg + 2, stag);
            uint64_t base = opc == 0x2 && Q.orq_count ? Q.orq[Q.orq_head].sink_to : mr_va(0);
            be64(seg + 6, base + to - 0x80u);
            memcpy(seg + 14, data, take);
            data += take;
            size -= take;
            feed(seg, 14u + take);
            break;
        }
        case 3:
            drain_tx();
            guards_intact();
            drain_cqs();
            break;
        case 4: {
            uint32_t off = (uint32_t)fuzz_take(&data, &size) << 8;
            off |= fuzz_take(&data, &size);
            post_recv(off, fuzz_take(&data, &size));
            break;
        }
        default: {
            uint32_t off = (uint32_t)fuzz_take(&data, &size) << 8;
            off |= fuzz_take(&data, &size);
            uint8_t len = fuzz_take(&data, &size);
            if (op & 0x40)
                post_atomic(op, off);
            else
                post_read(off, len);
            guards_intact();
            break;
        }
        }
    }
    drain_tx();
    drain_cqs();
    guards_intact();
    mix(arena + GUARD, MRLEN);
    uint64_t f[] = {Q.stream.state,   iwarp_core_cause_u32(Q.term_cause),
                    Q.term_from_peer, iwarp_ddp_rx_uq_expected_msn(&Q.uq_send),
                    Q.rq.count,       Q.irq_count,
                    Q.orq_count,      Q.send_msn};
    mix(f, sizeof f);
    return digest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t predicted = run(data, size, true);
    FUZZ_CHECK(run(data, size, false) == predicted);
    return 0;
}
