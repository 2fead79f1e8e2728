/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: posting to a running QP (iwarp_core_qp_post_send, _post_recv) with whatever a
 * caller may pass, and the segments its transmitter then produces (iwarp_core_qp_tx_next,
 * _tx_sent), checked against a model of the posts it accepted.
 * Input: cfg(1): bit 0 RFC 7306, bit 1 sq_sig_all, bits 2-3 ORD - 1, bits 4-5 SQ size - 1
 * (x2); then operations op(1) and arguments:
 *   op % 5 == 0  post a send WR: opcode(1) (any value), flags(1) (any bits), nsge(1) (0..3),
 *                per SGE: offset(2), length(1, x4), key choice(1); remote choice(1), then
 *                imm/invalidate(1)
 *   op % 5 == 1  transmit: max_seg(1) (64 + 4x), up to count(1) % 16 segments, each "sent"
 *   op % 5 == 2  post a receive: offset(2), length(1), key choice(1), nsge(1)
 *   op % 5 == 3  key(1): the key of the fast-register MR object (op bit 7: of the window),
 *                as a caller moves it for REG_MR and BIND_MW posts (iwarp_inc_rkey)
 *   op % 5 == 4  the QP goes to error (iwarp_core_qp_set_error): what is queued is flushed
 * Properties:
 *   - every call returns 0 or a negative IWARP_ERR_* and never crashes (sanitizers);
 *   - every segment decodes (iwarp_wire_segment_decode: the checks a receiver makes), fits
 *     max_seg, and, while the QP runs, is the next one the accepted posts call for, in order:
 *     its opcode; a Write's STag and Tagged Offset, a Send's MO; the payload octets those of
 *     the posted SGEs (or the inline copy); L on the message's last segment only; untagged
 *     MSNs one apart per queue (RFC 5041 §5.1); a Read Request's sink, size and source
 *     (RFC 5040 §4.4) exactly as posted;
 *   - a successful send completion comes once per signaled WR, in the order of posting, only
 *     after its last segment was sent, and never for a Read or an atomic (no response comes);
 *     no WR completes twice;
 *   - transmitting reads memory only: the registered region and the guards around it keep
 *     their octets;
 *   - the input runs twice, with the QP's header prediction (core_qp_tx.c, core_qp_rx.c) and
 *     without: the same segments octet for octet, the same completions, the same end state.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/core_qp.h"
#include "core/core_qp_int.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mem/mem_region.h"
#include "wire/wire.h"
#include "wire/wire_segment.h"

#define GUARD   64u
#define MRLEN   1024u
#define NWC     64u
#define SQ_MAX  8u
#define RQ_CAP  4u
#define MAX_INL 64u
#define MODEL   64u /* posts the model follows per input */
#define WIRE    (IWARP_DDP_TX_HDR_MAX + 4u * MRLEN)

static uint8_t arena[GUARD + MRLEN + GUARD], before[sizeof arena];
static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[8];
static struct iwarp_wc sring[NWC], rring[NWC];
static struct iwarp_core_cq scq, rcq;
static struct iwarp_core_sqe sq[SQ_MAX];
static struct iwarp_core_rqe rq[RQ_CAP];
static uint64_t rq_lens[RQ_CAP];
static struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
static struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
static uint64_t irq_lens[IWARP_CORE_MAX_IRD];
static struct iwarp_core_qp Q;
static uint32_t mr, ro_mr, frmr, mw;
static struct iwarp_mr frmr_obj, mr_obj;
static struct iwarp_mw mw_obj;

/* What one accepted send WR must put on the wire. */
struct post {
    uint64_t wr_id;
    int opcode; /* enum iwarp_wr_opcode */
    bool signaled, sent, completed;
    uint32_t len, at; /* the payload's length; octets already seen on the wire */
    bool imm_pending; /* WRITE_WITH_IMM: the Immediate Data message is still to come */
    bool write_done;  /* ... and the Write before it has gone */
    uint32_t rkey, lkey0;
    uint64_t raddr, laddr0;
    uint8_t data[4u * MRLEN]; /* the payload: the SGEs' octets at post, in order (last: the
                                 rest is cleared for each post) */
};
static struct post model[MODEL];
static uint32_t n_posts, cur; /* accepted posts; the one the wire is at */
static uint32_t msn[4];       /* last MSN seen per untagged queue */
static bool in_msg[4];        /* a message on that queue is partly seen */
static uint64_t next_success; /* the next successful completion expected (model index) */
static bool running;          /* no error seen: the model is followed */
static uint8_t wire[WIRE];

static uint64_t mr_va(uint32_t off)
{
    return (uint64_t)(uintptr_t)(arena + GUARD + off % MRLEN);
}

/* A key a caller might pass: the MR, a read-only one, the fast-register STag, the window, a
 * stale key, or junk. */
static uint32_t pick_key(uint8_t c)
{
    const uint32_t keys[] = {mr, ro_mr, frmr_obj.lkey, mw_obj.rkey};
    if (c % 6 < 4)
        return keys[c % 6];
    return c % 6 == 4 ? mr ^ 0x01u : (uint32_t)c * 0x01010101u;
}

/* Everything a run shows the outside (fuzz_digest): compared between the two runs. */
static uint64_t digest;

static void mix(const void *p, size_t n)
{
    fuzz_digest(&digest, p, n);
}

static bool is_read_or_atomic(int opcode)
{
    return opcode == IWARP_WR_RDMA_READ || iwarp_core_qp_is_atomic((uint8_t)opcode);
}

static bool is_local(int opcode)
{
    return opcode == IWARP_WR_LOCAL_INV || opcode == IWARP_WR_BIND_MW || opcode == IWARP_WR_REG_MR;
}

/* Completions: at most once each; successes in posting order (Reads and atomics, which wait
 * for a response, aside), of signaled WRs whose last segment went, never of a Read or an
 * atomic. Anything else than success ends the model. */
static void drain_cqs(void)
{
    struct iwarp_wc wc[NWC];
    uint32_t n = iwarp_core_cq_poll(&scq, wc, NWC);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t f[] = {wc[i].wr_id,    wc[i].status,   wc[i].opcode,
                        wc[i].byte_len, wc[i].wc_flags, wc[i].vendor_err};
        mix(f, sizeof f);
        FUZZ_CHECK(wc[i].wr_id < n_posts);
        struct post *p = &model[wc[i].wr_id];
        FUZZ_CHECK(!p->completed);
        p->completed = true;
        if (wc[i].status != IWARP_WC_SUCCESS || !running) {
            running = false;
            continue;
        }
        FUZZ_CHECK(!is_read_or_atomic(p->opcode));
        if (!is_local(p->opcode))
            FUZZ_CHECK(p->sent);
        /* what was posted before it has completed, or completes silently (unsignaled), or
         * waits for its response (a Read or an atomic) */
        for (; next_success < wc[i].wr_id; next_success++) {
            const struct post *q = &model[next_success];
            FUZZ_CHECK(!q->signaled || q->completed || is_read_or_atomic(q->opcode));
        }
        FUZZ_CHECK(next_success == wc[i].wr_id);
        next_success++;
    }
    (void)iwarp_core_cq_poll(&rcq, wc, NWC);
}

/* The model's next post that puts something on the wire (local operations put nothing). */
static struct post *expected(void)
{
    while (cur < n_posts && is_local(model[cur].opcode))
        cur++;
    return cur < n_posts ? &model[cur] : NULL;
}

/* A segment of queue qn: its MSN is the last one's, or one more when a message starts. */
static void check_msn(const struct iwarp_wire_segment *s)
{
    uint32_t qn = s->ddp.qn;
    FUZZ_CHECK(qn < 4);
    FUZZ_CHECK(s->ddp.msn == (in_msg[qn] ? msn[qn] : msn[qn] + 1u));
    msn[qn] = s->ddp.msn;
    in_msg[qn] = !s->ddp.last;
}

/* The payload and its place: the next octets of the post's data. */
static void check_payload(struct post *p, const struct iwarp_wire_segment *s, uint64_t place)
{
    FUZZ_CHECK(place == p->at);
    FUZZ_CHECK(s->payload_len <= p->len - p->at);
    FUZZ_CHECK(s->payload_len == 0 || memcmp(s->payload, p->data + p->at, s->payload_len) == 0);
    p->at += (uint32_t)s->payload_len;
    FUZZ_CHECK(s->ddp.last == (p->at == p->len));
}

static void follow(const struct iwarp_wire_segment *s)
{
    if (s->opcode == IWARP_RDMAP_OP_TERMINATE) {
        running = false;
        return;
    }
    struct post *p = expected();
    FUZZ_CHECK(p != NULL);
    if (!s->ddp.tagged)
        check_msn(s);
    switch (p->opcode) {
    case IWARP_WR_SEND:
    case IWARP_WR_SEND_WITH_INV:
        FUZZ_CHECK(s->opcode == IWARP_RDMAP_OP_SEND || s->opcode == IWARP_RDMAP_OP_SEND_SE ||
                   s->opcode == IWARP_RDMAP_OP_SEND_INV || s->opcode == IWARP_RDMAP_OP_SEND_SE_INV);
        FUZZ_CHECK(
            (s->opcode == IWARP_RDMAP_OP_SEND_INV || s->opcode == IWARP_RDMAP_OP_SEND_SE_INV) ==
            (p->opcode == IWARP_WR_SEND_WITH_INV));
        check_payload(p, s, s->ddp.mo);
        break;
    case IWARP_WR_RDMA_WRITE:
    case IWARP_WR_RDMA_WRITE_WITH_IMM:
        if (p->write_done) { /* RFC 7306 §7: the Immediate Data message follows the Write */
            FUZZ_CHECK(s->opcode == IWARP_RDMAP_OP_IMM_DATA ||
                       s->opcode == IWARP_RDMAP_OP_IMM_DATA_SE);
            break;
        }
        FUZZ_CHECK(s->opcode == IWARP_RDMAP_OP_WRITE);
        FUZZ_CHECK(s->ddp.stag == p->rkey);
        check_payload(p, s, s->ddp.to - p->raddr);
        if (s->ddp.last && p->imm_pending) {
            p->write_done = true;
            return; /* the same post goes on with its Immediate Data */
        }
        break;
    case IWARP_WR_RDMA_READ:
        FUZZ_CHECK(s->opcode == IWARP_RDMAP_OP_READ_REQ);
        FUZZ_CHECK(s->body.read_req.size == p->len);
        FUZZ_CHECK(s->body.read_req.src_stag == p->rkey && s->body.read_req.src_to == p->raddr);
        if (p->len > 0)
            FUZZ_CHECK(s->body.read_req.sink_stag == p->lkey0 &&
                       s->body.read_req.sink_to == p->laddr0);
        break;
    case IWARP_WR_IMM_DATA:
        FUZZ_CHECK(s->opcode == IWARP_RDMAP_OP_IMM_DATA || s->opcode == IWARP_RDMAP_OP_IMM_DATA_SE);
        break;
    default: /* the atomics */
        FUZZ_CHECK(s->opcode == IWARP_RDMAP_OP_ATOMIC_REQ);
        break;
    }
    if (s->ddp.last) {
        p->sent = true;
        cur++;
    }
}

static void transmit(uint32_t max_seg, uint32_t count)
{
    struct iwarp_core_tx_seg seg;
    for (uint32_t i = 0; i < count; i++) {
        int rc = iwarp_core_qp_tx_next(&Q, max_seg, &seg);
        FUZZ_CHECK(rc == 0 || rc == 1);
        if (rc == 0)
            break;
        FUZZ_CHECK(seg.hdr_len + seg.payload_len <= max_seg);
        size_t len = seg.hdr_len;
        memcpy(wire, seg.hdr, seg.hdr_len);
        for (uint32_t k = 0; k < seg.niov; k++) {
            FUZZ_CHECK(len + seg.iov[k].iov_len <= sizeof wire);
            if (seg.iov[k].iov_len)
                memcpy(wire + len, seg.iov[k].iov_base, seg.iov[k].iov_len);
            len += seg.iov[k].iov_len;
        }
        FUZZ_CHECK(len == seg.hdr_len + seg.payload_len);
        uint64_t f[] = {seg.src, seg.last, seg.wr_done, seg.index, len};
        mix(f, sizeof f);
        mix(wire, len);
        struct iwarp_wire_segment s;
        FUZZ_CHECK(iwarp_wire_segment_decode(wire, len, &s, NULL) == 0);
        if (running)
            follow(&s);
        iwarp_core_qp_tx_sent(&Q, &seg);
        drain_cqs();
    }
}

/* The SGEs of a post: offsets and lengths from the input, inside the region. */
static int take_sges(const uint8_t **data, size_t *size, struct iwarp_sge *sg, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t off = (uint32_t)fuzz_take(data, size) << 8;
        off = (off | fuzz_take(data, size)) % MRLEN;
        uint32_t len = (uint32_t)fuzz_take(data, size) * 4u;
        if (len > MRLEN - off)
            len = MRLEN - off;
        sg[i] = (struct iwarp_sge){
            .addr = mr_va(off), .length = len, .lkey = pick_key(fuzz_take(data, size))};
    }
    return n;
}

static void post_send(const uint8_t **data, size_t *size)
{
    struct iwarp_sge sg[3];
    struct iwarp_send_wr wr = {.wr_id = n_posts, .sg_list = sg};
    wr.opcode = (enum iwarp_wr_opcode)(fuzz_take(data, size) % 17);
    wr.send_flags = fuzz_take(data, size);
    if (wr.send_flags & 0x80u)
        wr.send_flags &= 0x0Fu; /* mostly the known flags */
    wr.num_sge = take_sges(data, size, sg, fuzz_take(data, size) % 4);
    uint8_t rc_choice = fuzz_take(data, size);
    uint8_t v = fuzz_take(data, size);
    wr.invalidate_rkey = pick_key(v);
    if (wr.opcode == IWARP_WR_RDMA_WRITE_WITH_IMM)
        wr.imm_data = v;
    if (iwarp_core_qp_is_atomic((uint8_t)wr.opcode)) {
        wr.wr.atomic.rkey = pick_key(rc_choice);
        wr.wr.atomic.remote_addr = (uint64_t)rc_choice << 3 | (rc_choice & 1u);
        wr.wr.atomic.compare_add = v;
        wr.wr.atomic.swap = (uint64_t)v << 8;
    } else {
        wr.wr.rdma.rkey = pick_key(rc_choice);
        wr.wr.rdma.remote_addr = (uint64_t)rc_choice * 0x10001u;
    }
    if (wr.opcode == IWARP_WR_REG_MR) {
        wr.reg.mr = (v & 1) ? &frmr_obj : &mr_obj;
        wr.reg.key = v;
        wr.reg.addr = (void *)(uintptr_t)mr_va(rc_choice);
        wr.reg.length = MRLEN - rc_choice % MRLEN;
        wr.reg.access = v & 0x0Fu;
    } else if (wr.opcode == IWARP_WR_BIND_MW) {
        wr.bind_mw.mw = (v & 1) ? &mw_obj : NULL;
        wr.bind_mw.rkey = (mw & 0xFFFFFF00u) | v;
        wr.bind_mw.bind_info.mr = (v & 2) ? &frmr_obj : &mr_obj;
        wr.bind_mw.bind_info.addr = mr_va(rc_choice);
        wr.bind_mw.bind_info.length = rc_choice;
        wr.bind_mw.bind_info.mw_access_flags = v >> 4;
    }
    if (n_posts == MODEL)
        return;
    struct post *p = &model[n_posts];
    memset(p, 0, offsetof(struct post, data));
    uint32_t len = 0;
    for (int i = 0; i < wr.num_sge; i++) {
        memcpy(p->data + len, (const void *)(uintptr_t)sg[i].addr, sg[i].length);
        len += sg[i].length;
    }
    int rc = iwarp_core_qp_post_send(&Q, &wr);
    FUZZ_CHECK(rc <= 0);
    if (rc != 0)
        return;
    p->wr_id = wr.wr_id;
    p->opcode = (int)wr.opcode;
    p->signaled = Q.cfg.sq_sig_all || (wr.send_flags & IWARP_SEND_SIGNALED);
    p->len = len;
    p->imm_pending = wr.opcode == IWARP_WR_RDMA_WRITE_WITH_IMM;
    p->rkey = iwarp_core_qp_is_atomic((uint8_t)wr.opcode) ? wr.wr.atomic.rkey : wr.wr.rdma.rkey;
    p->raddr = wr.wr.rdma.remote_addr;
    if (wr.num_sge > 0) {
        p->lkey0 = sg[0].lkey;
        p->laddr0 = sg[0].addr;
    }
    n_posts++;
    drain_cqs(); /* a post to a QP in error completes at once */
}

static void post_recv(const uint8_t **data, size_t *size)
{
    struct iwarp_sge sg[3];
    uint32_t off = (uint32_t)fuzz_take(data, size) << 8;
    off = (off | fuzz_take(data, size)) % MRLEN;
    uint32_t len = fuzz_take(data, size);
    if (len > MRLEN - off)
        len = MRLEN - off;
    uint32_t key = pick_key(fuzz_take(data, size));
    int n = fuzz_take(data, size) % 4;
    for (int i = 0; i < n; i++)
        sg[i] = (struct iwarp_sge){.addr = mr_va(off), .length = len, .lkey = key};
    struct iwarp_recv_wr wr = {.wr_id = 1000u + off, .sg_list = n ? sg : NULL, .num_sge = n};
    FUZZ_CHECK(iwarp_core_qp_post_recv(&Q, &wr) <= 0);
    drain_cqs();
}

/* One run of the input; the QP predicts headers or not. Returns its digest. */
static uint64_t run(const uint8_t *data, size_t size, bool predict)
{
    digest = fuzz_digest_start();
    uint32_t seed = 0x2468aceu;
    for (size_t i = 0; i < sizeof arena; i++)
        arena[i] = (uint8_t)(i * 7u + 3u);
    memcpy(before, arena, sizeof arena);
    FUZZ_CHECK(iwarp_mem_table_init(&T, E, 8, fuzz_xorshift, &seed) == 0);
    struct iwarp_mem_range r = {.addr = mr_va(0),
                                .iova = mr_va(0),
                                .length = MRLEN,
                                .access = IWARP_MEM_ACCESS_LOCAL_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_READ | IWARP_MEM_ACCESS_MW_BIND};
    FUZZ_CHECK(iwarp_mem_reg_mr(&T, 1, &r, &mr) == 0);
    r.access = 0; /* local read only: a Read's sink is refused */
    r.length = MRLEN / 2;
    FUZZ_CHECK(iwarp_mem_reg_mr(&T, 1, &r, &ro_mr) == 0);
    FUZZ_CHECK(iwarp_mem_alloc_stag(&T, 1, &frmr) == 0);
    FUZZ_CHECK(iwarp_mem_alloc_mw(&T, 1, IWARP_MEM_MW_TYPE2, &mw) == 0);
    frmr_obj = (struct iwarp_mr){.handle = frmr, .lkey = frmr, .rkey = frmr};
    mr_obj = (struct iwarp_mr){.handle = mr, .lkey = mr, .rkey = mr};
    mw_obj = (struct iwarp_mw){.handle = mw, .rkey = mw, .type = IWARP_MW_TYPE_2};
    FUZZ_CHECK(iwarp_core_cq_init(&scq, sring, NWC, NULL, NULL) == 0);
    FUZZ_CHECK(iwarp_core_cq_init(&rcq, rring, NWC, NULL, NULL) == 0);

    uint8_t cfgb = fuzz_take(&data, &size);
    struct iwarp_core_qp_cfg cfg = {
        .qp_num = 7,
        .pd = 1,
        .mem = &T,
        .send_cq = &scq,
        .recv_cq = &rcq,
        .sq_cap = 2u * (1u + ((cfgb >> 4) & 3u)),
        .rq_cap = RQ_CAP,
        .max_send_sge = 2,
        .max_recv_sge = 2,
        .max_inline = MAX_INL,
        .rdmap_ext = (cfgb & 1) ? IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS : 0u,
        .sq_sig_all = (cfgb & 2) != 0};
    struct iwarp_core_qp_mem m = {
        .sq = sq, .rq = rq, .rq_lens = rq_lens, .orq = orq, .irq = irq, .irq_lens = irq_lens};
    FUZZ_CHECK(iwarp_core_qp_init(&Q, &cfg, &m) == 0);
    Q.rx_predict = Q.tx_predict = predict;
    FUZZ_CHECK(iwarp_core_qp_start(&Q, 2, 1u + ((cfgb >> 2) & 3u)) == 0);
    n_posts = cur = 0;
    next_success = 0;
    memset(msn, 0, sizeof msn);
    memset(in_msg, 0, sizeof in_msg);
    running = true;

    while (size > 0) {
        uint8_t op = fuzz_take(&data, &size);
        switch (op % 5) {
        case 0:
            post_send(&data, &size);
            break;
        case 1: {
            uint32_t max_seg = 64u + 4u * fuzz_take(&data, &size);
            transmit(max_seg, fuzz_take(&data, &size) % 16u);
            break;
        }
        case 2:
            post_recv(&data, &size);
            break;
        case 3:
            /* REG_MR and BIND_MW are posts too; here their objects' keys move as a caller's
             * would after a failed post (iwarp_inc_rkey) */
            if (op & 0x80)
                mw_obj.rkey = (mw & 0xFFFFFF00u) | fuzz_take(&data, &size);
            else
                frmr_obj.lkey = frmr_obj.rkey = (frmr & 0xFFFFFF00u) | fuzz_take(&data, &size);
            break;
        default:
            iwarp_core_qp_set_error(&Q);
            running = false;
            drain_cqs();
            break;
        }
        FUZZ_CHECK(memcmp(arena, before, sizeof arena) == 0);
    }
    transmit(IWARP_MPA_MULPDU_MAX, 64);
    FUZZ_CHECK(memcmp(arena, before, sizeof arena) == 0);
    uint64_t f[] = {Q.stream.state, Q.send_msn, Q.stream.sq_count, Q.orq_count, n_posts};
    mix(f, sizeof f);
    iwarp_core_qp_fini(&Q);
    return digest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t predicted = run(data, size, true);
    FUZZ_CHECK(run(data, size, false) == predicted);
    return 0;
}
