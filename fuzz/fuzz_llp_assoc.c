/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the passive side of an SCTP association carrying DDP streams (llp_assoc, RFC 5043
 * §5-§10, RFC 6581 §7), with a real QP engine per stream over a registered MR, fed arbitrary
 * chunk sequences as usrsctp would deliver them (each in its own malloc'ed buffer).
 * Input: cfg(1): bit 0 passive sessions accept Enhanced Initiates, bits 1-2 window (4, 16, 64,
 *   512 slots), bits 3-4 max_seg (516, 1024, 1400, 9000), bits 5-7 pending limit - 1;
 *   then operations until the input ends, op(1) % 8:
 *   0-2 a raw chunk: sid(1) (% 5: stream 4 does not exist), flags(1): bit 0 U=0, bits 1-2 PPID
 *       (16, 17, 16, next octet), bit 3 the stream's next automatic DDP-SSN goes first, bit 4 a
 *       16-bit length, bits 5-6 the owner's answer to REQUESTs from now on (accept, reject,
 *       leave pending, accept); len(1 or 2); len octets;
 *   3   a segment built for the stream: sid(1) kind(1) (Send, Write or Read Request of the MR,
 *       or a Send with its MSN from the input) off(2) len(2), automatic DDP-SSN;
 *   4   a control chunk: sid(1) fc(2) pd_len(1) word(4), automatic DDP-SSN;
 *   5   send: n(1): tx_next/tx_done up to n chunks (0: all), sometimes asking twice first;
 *       n >= 0xF0: one tx_next only (the send buffer is full; the chunk stays produced);
 *   6   the owner acts: what(1) sid(1): post a receive, a Send, a Write or a Read (off(2)
 *       len(2)); disconnect; abort (and flush the QP, as the owner does); release; report SCTP
 *       acks; accept or reject a REQUEST left pending; let go of the stream (detach); advance
 *       the clock by us(2) microseconds and handle_timeout(); set the stream's deadline us(2)
 *       microseconds ahead;
 *   7   the association is lost (graceful: bit 3 of op).
 *   The owner accepts a REQUEST (ird/ord 4) with a fresh QP, rejects it or leaves it pending
 *   (bits 5-6 above), releases every stream that reports CLOSED, and flushes the QP and lets
 *   go of every stream that reports TIMEDOUT (cfg.linger_ns is 1 ms).
 * Properties:
 *   - never crashes (sanitizers); rx_chunk returns 0 or a negative IWARP_ERR_*;
 *   - every buffer handed in comes back through chunk_free exactly once (a registry: an unknown
 *     or repeated pointer traps), all of them after lost() and release();
 *   - every chunk handed out is PPID 16 or 17, as long as its iovecs, carries its stream's next
 *     DDP-SSN from 0 per session (§5.2.1, §6.1), a control chunk that decodes, or a segment of at
 *     most max_seg that decodes as RDMAP; tx_next returns the same chunk until tx_done;
 *   - rx_chunk's error return leaves no live session on the stream (llp_assoc.h); a REQUEST
 *     is only reported for a session that awaits the owner's answer;
 *   - a Reject the owner asked for goes out before the stream is released (§6.3), by the owner
 *     or by llp_assoc after detach(); no segment goes out once its QP was flushed (its WR
 *     memory is the ULP's again); next_timeout() is never in the past after handle_timeout();
 *   - nothing is placed outside the MR (guard zones).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_qp.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "llp/llp_assoc.h"
#include "mem/mem_region.h"
#include "wire/wire_sctp.h"
#include "wire/wire_segment.h"

#define NS       4u
#define WIN_MAX  512u
#define GUARD    256u
#define MRLEN    (64u << 10)
#define NWC      64u
#define SQ_CAP   16u
#define RQ_CAP   16u
#define LIVE_CAP (NS * WIN_MAX + 64u)

static uint8_t arena[GUARD + MRLEN + GUARD];
static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[8];
static uint32_t mr, mem_seed;

struct qpe {
    struct iwarp_wc sring[NWC], rring[NWC];
    struct iwarp_core_cq scq, rcq;
    struct iwarp_core_sqe sq[SQ_CAP];
    struct iwarp_core_rqe rq[RQ_CAP];
    uint64_t rq_lens[RQ_CAP], irq_lens[IWARP_CORE_MAX_IRD];
    struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
    struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
    struct iwarp_core_qp qp;
    bool used;
};

static struct qpe Q[NS];
static struct iwarp_llp_assoc A;
static struct iwarp_llp_assoc_stream ST[NS];
static struct iwarp_sess_ssn_slot SLOTS[NS * WIN_MAX];
static struct iwarp_sess_pending PEND;
static uint32_t max_seg;
static uint16_t rx_auto[NS];   /* the next automatic DDP-SSN of the peer's chunks */
static uint16_t tx_expect[NS]; /* the DDP-SSN our next chunk on the stream must carry */
static uint32_t send_msn[NS];  /* the peer's next Send MSN (template segments) */
static uint8_t policy;         /* REQUESTs: 0, 3 accept; 1 reject; 2 leave pending */
static bool waiting[NS];       /* a REQUEST left pending */
static bool rejected[NS];      /* the owner rejected the stream's session */
static bool reject_out[NS];    /* ... and its Reject went out */
static bool detached[NS];      /* the owner let go of the stream: llp_assoc releases it */
static uint64_t now_ns;        /* the owner's clock */
static uint8_t gather[2 + 65536];

/* ---- buffers handed in ---------------------------------------------------------------------- */

static void *live[LIVE_CAP];
static size_t nlive;

static void chunk_free(void *p)
{
    for (size_t i = 0; i < nlive; i++) {
        if (live[i] == p) {
            live[i] = live[--nlive];
            free(p);
            return;
        }
    }
    FUZZ_CHECK(false); /* not handed in, or given back twice */
}

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

static struct qpe *qp_fresh(uint16_t sid)
{
    struct qpe *e = &Q[sid];
    if (e->used)
        iwarp_core_qp_fini(&e->qp); /* its MR holds */
    memset(e, 0, sizeof *e);
    e->used = true;
    (void)iwarp_core_cq_init(&e->scq, e->sring, NWC, NULL, NULL);
    (void)iwarp_core_cq_init(&e->rcq, e->rring, NWC, NULL, NULL);
    struct iwarp_core_qp_cfg qc = {.qp_num = 10u + sid,
                                   .pd = 1,
                                   .mem = &T,
                                   .send_cq = &e->scq,
                                   .recv_cq = &e->rcq,
                                   .sq_cap = SQ_CAP,
                                   .rq_cap = RQ_CAP,
                                   .max_send_sge = 2,
                                   .max_recv_sge = 2,
                                   .sq_sig_all = true};
    struct iwarp_core_qp_mem qm = {.sq = e->sq,
                                   .rq = e->rq,
                                   .rq_lens = e->rq_lens,
                                   .orq = e->orq,
                                   .irq = e->irq,
                                   .irq_lens = e->irq_lens};
    FUZZ_CHECK(iwarp_core_qp_init(&e->qp, &qc, &qm) == 0);
    return e;
}

static void drain_cqs(void)
{
    struct iwarp_wc wc[NWC];
    for (uint16_t i = 0; i < NS; i++) {
        if (!Q[i].used)
            continue;
        (void)iwarp_core_cq_poll(&Q[i].scq, wc, NWC);
        (void)iwarp_core_cq_poll(&Q[i].rcq, wc, NWC);
    }
}

/* ---- the owner --------------------------------------------------------------------------- */

/* Stream sid was released (by the owner, or by llp_assoc after detach()); timed_out: because a
 * deadline of it passed, which gives up on what it still had to send. */
static void released(uint16_t sid, bool timed_out)
{
    /* §6.3: a Reject the owner asked for goes out before the stream can be released */
    FUZZ_CHECK(!rejected[sid] || reject_out[sid] || A.lost || timed_out);
    rejected[sid] = reject_out[sid] = false;
    detached[sid] = false;
    tx_expect[sid] = 0; /* §6.6: DDP-SSN 0 again */
    rx_auto[sid] = 0;
    send_msn[sid] = 1;
}

static void release(uint16_t sid)
{
    iwarp_llp_assoc_release(&A, sid);
    released(sid, false);
}

static void detach(uint16_t sid)
{
    waiting[sid] = false;
    bool had = ST[sid].state != IWARP_LLP_ASSOC_FREE, expired = ST[sid].expired;
    iwarp_llp_assoc_detach(&A, sid);
    detached[sid] = ST[sid].detached;
    if (had && !detached[sid])
        released(sid, expired); /* at once (a deadline of it passed, or it was done) */
}

/* The owner's answer to stream sid's REQUEST. */
static void answer(uint16_t sid, bool accept)
{
    waiting[sid] = false;
    if (!accept) {
        struct iwarp_sess_answer no = {.pd = (const uint8_t *)"no", .pd_len = 2};
        int rc = iwarp_llp_assoc_reject(&A, sid, &no);
        FUZZ_CHECK(rc == 0 || rc == IWARP_ERR_STATE); /* STATE: the session ended meanwhile */
        rejected[sid] = rc == 0;
        return;
    }
    struct qpe *e = qp_fresh(sid);
    struct iwarp_sess_answer ans = {.ird = 4, .ord = 4};
    int rc = iwarp_llp_assoc_accept(&A, sid, &ans, &e->qp.eng, 4, 4);
    FUZZ_CHECK(rc == 0 || iwarp_err_name(rc) != NULL);
}

static void owner_events(void)
{
    /* the scans of the streams stop at streams_end: all FREE from there on, without events */
    uint16_t end = iwarp_llp_assoc_streams_end(&A);
    FUZZ_CHECK(end <= NS && (end == 0 || ST[end - 1].state != IWARP_LLP_ASSOC_FREE));
    for (uint16_t sid = end; sid < NS; sid++)
        FUZZ_CHECK(ST[sid].state == IWARP_LLP_ASSOC_FREE && ST[sid].events == 0);
    for (uint16_t sid = 0; sid < NS; sid++) {
        if (detached[sid] && !ST[sid].detached)
            released(sid, false); /* llp_assoc released it (and a new session may have begun) */
        uint32_t ev = iwarp_llp_assoc_take_events(&A, sid);
        if (detached[sid])
            continue; /* of no interest any more */
        if (ev & IWARP_LLP_ASSOC_EV_REQUEST) {
            FUZZ_CHECK(ST[sid].state == IWARP_LLP_ASSOC_SESSION);
            if (policy == 2)
                waiting[sid] = true;
            else
                answer(sid, policy != 1);
            ev |= iwarp_llp_assoc_take_events(&A, sid);
        }
        if (ev & IWARP_LLP_ASSOC_EV_CLOSED) {
            waiting[sid] = false;
            FUZZ_CHECK(ST[sid].state == IWARP_LLP_ASSOC_OVER);
            release(sid);
            FUZZ_CHECK(ST[sid].state == IWARP_LLP_ASSOC_FREE);
        } else if (ev & IWARP_LLP_ASSOC_EV_TIMEDOUT) {
            FUZZ_CHECK(ST[sid].state != IWARP_LLP_ASSOC_FREE);
            if (Q[sid].used)
                iwarp_core_qp_llp_closed(&Q[sid].qp, false); /* the owner's flush */
            detach(sid);
        }
    }
    FUZZ_CHECK(iwarp_llp_assoc_in_use(&A) <= NS);
    FUZZ_CHECK(PEND.count <= PEND.limit);
}

/* Checks a chunk we send (gathered into `gather`). */
static void check_out(const struct iwarp_llp_assoc_chunk *c)
{
    FUZZ_CHECK(c->sid < NS);
    FUZZ_CHECK(c->niov >= 1 && c->niov <= sizeof c->iov / sizeof c->iov[0]);
    size_t len = 0;
    for (uint32_t i = 0; i < c->niov; i++) {
        FUZZ_CHECK(len + c->iov[i].iov_len <= sizeof gather);
        memcpy(gather + len, c->iov[i].iov_base, c->iov[i].iov_len);
        len += c->iov[i].iov_len;
    }
    FUZZ_CHECK(len == c->len && len >= IWARP_SCTP_SSN_LEN);
    /* §5.2.1, §6.1: the stream's next DDP-SSN, from 0 per session, control chunks included */
    FUZZ_CHECK(iwarp_sctp_ssn_peek(gather, len) == tx_expect[c->sid]);
    if (c->ppid == IWARP_SCTP_PPID_DDP_CONTROL) {
        struct iwarp_sctp_ctl ctl;
        FUZZ_CHECK(len <= IWARP_SCTP_CTL_MAX);
        FUZZ_CHECK(iwarp_sctp_ctl_decode(gather, len, &ctl) == (iwarp_ssize)len);
    } else {
        FUZZ_CHECK(c->ppid == IWARP_SCTP_PPID_DDP_SEGMENT);
        FUZZ_CHECK(len - IWARP_SCTP_SSN_LEN <= max_seg); /* §9 */
        struct iwarp_wire_segment seg;
        FUZZ_CHECK(iwarp_wire_segment_decode(gather + 2, len - 2, &seg, NULL) == 0);
    }
}

/* Sends up to n chunks (0: all there are; >= 0xF0: produce one and leave it unsent). */
static void send_some(uint32_t n, uint32_t *r)
{
    if (n >= 0xF0u) {
        const struct iwarp_llp_assoc_chunk *c = iwarp_llp_assoc_tx_next(&A);
        if (c)
            check_out(c);
        return;
    }
    for (uint32_t k = 0; n == 0 || k < n; k++) {
        bool ready = iwarp_llp_assoc_tx_ready(&A);
        const struct iwarp_llp_assoc_chunk *c = iwarp_llp_assoc_tx_next(&A);
        if (!c)
            break;
        FUZZ_CHECK(ready);
        check_out(c);
        if ((fuzz_xorshift(r) & 3u) == 0) {
            /* a full send buffer: the same chunk again */
            const struct iwarp_llp_assoc_chunk *again = iwarp_llp_assoc_tx_next(&A);
            FUZZ_CHECK(again == c && again->len == c->len);
            FUZZ_CHECK(iwarp_sctp_ssn_peek(c->iov[0].iov_base, c->iov[0].iov_len) ==
                       tx_expect[c->sid]);
        }
        if (c->ppid == IWARP_SCTP_PPID_DDP_SEGMENT) {
            /* a flushed QP's WRs went back to the ULP: none of their memory goes out */
            FUZZ_CHECK(Q[c->sid].qp.stream.state != IWARP_CORE_STREAM_ERROR);
        } else {
            uint16_t fc = (uint16_t)(gather[2] << 8 | gather[3]);
            reject_out[c->sid] |= fc == IWARP_SCTP_FC_REJECT || fc == IWARP_SCTP_FC_ENH_REJECT;
        }
        tx_expect[c->sid]++;
        iwarp_llp_assoc_tx_done(&A);
        owner_events();
        FUZZ_CHECK(k < 100000u);
    }
    drain_cqs();
}

static void post_op(uint16_t sid, uint8_t what, uint16_t off, uint16_t len)
{
    struct qpe *e = &Q[sid];
    if (!e->used)
        return;
    off %= MRLEN;
    uint32_t l = len;
    if (l > MRLEN - off)
        l = MRLEN - off;
    struct iwarp_sge sg = {.addr = (uintptr_t)(mr_base() + off), .length = l, .lkey = mr};
    if (what == 0) {
        struct iwarp_recv_wr wr = {.wr_id = off, .sg_list = &sg, .num_sge = 1};
        (void)iwarp_core_qp_post_recv(&e->qp, &wr);
        return;
    }
    static const enum iwarp_wr_opcode ops[3] = {IWARP_WR_SEND, IWARP_WR_RDMA_WRITE,
                                                IWARP_WR_RDMA_READ};
    struct iwarp_send_wr wr = {.wr_id = off, .sg_list = &sg, .num_sge = 1, .opcode = ops[what - 1]};
    wr.wr.rdma.remote_addr = 0x100000u + off;
    wr.wr.rdma.rkey = 0x4321;
    (void)iwarp_core_qp_post_send(&e->qp, &wr);
}

/* ---- chunks from the peer ------------------------------------------------------------------ */

static void rx(uint16_t sid, uint32_t ppid, bool unordered, const uint8_t *p, size_t len)
{
    FUZZ_CHECK(nlive < LIVE_CAP);
    uint8_t *b = malloc(len ? len : 1);
    FUZZ_CHECK(b != NULL);
    if (len)
        memcpy(b, p, len);
    live[nlive++] = b;
    int rc = iwarp_llp_assoc_rx_chunk(&A, sid, ppid, unordered, b, len);
    FUZZ_CHECK(rc == 0 || (rc < 0 && iwarp_err_name(rc) != NULL));
    /* llp_assoc.h: an error return means the stream has no live session any more (ended now,
     * or none to end): a refused chunk never leaves a session waiting for its DDP-SSN */
    FUZZ_CHECK(rc == 0 || sid >= NS || ST[sid].state != IWARP_LLP_ASSOC_SESSION);
    owner_events();
    drain_cqs();
    guards_intact();
}

static uint16_t take16(const uint8_t **d, size_t *n)
{
    uint16_t hi = fuzz_take(d, n);
    return (uint16_t)(hi << 8 | fuzz_take(d, n));
}

static uint16_t auto_ssn(uint16_t sid)
{
    return sid < NS ? rx_auto[sid]++ : 0;
}

static void op_raw(const uint8_t **d, size_t *n)
{
    uint16_t sid = fuzz_take(d, n) % (NS + 1u);
    uint8_t fl = fuzz_take(d, n);
    policy = (fl >> 5) & 3u;
    static const uint32_t ppids[3] = {16, 17, 16};
    uint32_t ppid = ((fl >> 1) & 3u) == 3u ? fuzz_take(d, n) : ppids[(fl >> 1) & 3u];
    size_t len = (fl & 16u) ? take16(d, n) : fuzz_take(d, n);
    static uint8_t buf[2 + 65536];
    size_t at = 0;
    if (fl & 8u) {
        uint16_t s = auto_ssn(sid);
        buf[at++] = (uint8_t)(s >> 8);
        buf[at++] = (uint8_t)s;
    }
    if (len > *n)
        len = *n;
    memcpy(buf + at, *d, len);
    *d += len;
    *n -= len;
    rx(sid, ppid, (fl & 1u) == 0, buf, at + len);
}

static void op_segment(const uint8_t **d, size_t *n)
{
    uint16_t sid = fuzz_take(d, n) % NS;
    uint8_t kind = fuzz_take(d, n);
    uint32_t off = take16(d, n) % MRLEN;
    uint32_t len = take16(d, n) % (max_seg - IWARP_DDP_UNTAGGED_HDR_LEN + 1u);
    static uint8_t buf[2 + 65536];
    static uint8_t payload[65536];
    memset(payload, (uint8_t)kind, len);
    struct iwarp_wire_msg m = {.last = (kind & 0x80u) == 0};
    switch (kind & 3u) {
    case 0:
    case 3:
        m.opcode = IWARP_RDMAP_OP_SEND;
        m.msn = (kind & 3u) == 3u ? fuzz_take(d, n) : send_msn[sid];
        m.mo = (kind & 0x40u) ? off : 0;
        if (m.last && (kind & 3u) == 0)
            send_msn[sid]++;
        break;
    case 1:
        m.opcode = IWARP_RDMAP_OP_WRITE;
        m.stag = mr;
        m.to = (uintptr_t)(mr_base() + off);
        break;
    default:
        m.opcode = IWARP_RDMAP_OP_READ_REQ;
        m.last = true;
        m.msn = 1;
        m.body.read_req = (struct iwarp_rdmap_read_req){.sink_stag = 0x77,
                                                        .sink_to = 0x1000,
                                                        .size = len,
                                                        .src_stag = mr,
                                                        .src_to = (uintptr_t)(mr_base() + off)};
        len = 0;
        break;
    }
    iwarp_ssize k = iwarp_wire_segment_encode(buf + 2, sizeof buf - 2, &m, payload, len);
    if (k < 0)
        return;
    uint16_t s = auto_ssn(sid);
    buf[0] = (uint8_t)(s >> 8);
    buf[1] = (uint8_t)s;
    rx(sid, IWARP_SCTP_PPID_DDP_SEGMENT, true, buf, 2 + (size_t)k);
}

static void op_control(const uint8_t **d, size_t *n)
{
    uint16_t sid = fuzz_take(d, n) % NS;
    uint16_t fc = take16(d, n);
    uint8_t pd_len = fuzz_take(d, n);
    uint8_t buf[4 + 4 + 255];
    uint16_t s = auto_ssn(sid);
    buf[0] = (uint8_t)(s >> 8);
    buf[1] = (uint8_t)s;
    buf[2] = (uint8_t)(fc >> 8);
    buf[3] = (uint8_t)fc;
    size_t len = 4;
    if (fc != IWARP_SCTP_FC_TERMINATE) {
        size_t extra =
            (fc == IWARP_SCTP_FC_ENH_INITIATE || fc == IWARP_SCTP_FC_ENH_ACCEPT) ? 4u : 0u;
        for (size_t i = 0; i < extra + pd_len; i++)
            buf[len++] = fuzz_take(d, n);
    }
    rx(sid, IWARP_SCTP_PPID_DDP_CONTROL, true, buf, len);
}

static void op_owner(const uint8_t **d, size_t *n, uint32_t *r)
{
    uint8_t what = fuzz_take(d, n);
    uint16_t sid = fuzz_take(d, n) % NS;
    switch (what % 13u) {
    case 0:
    case 1:
    case 2:
    case 3: {
        uint16_t off = take16(d, n);
        post_op(sid, what % 4u, off, take16(d, n));
        break;
    }
    case 4:
        iwarp_llp_assoc_disconnect(&A, sid, now_ns);
        break;
    case 5:
        iwarp_llp_assoc_abort(&A, sid);
        if (Q[sid].used)
            iwarp_core_qp_llp_closed(&Q[sid].qp, false); /* the owner's flush (llp_assoc.h) */
        break;
    case 6:
        if (ST[sid].state == IWARP_LLP_ASSOC_OVER)
            release(sid);
        break;
    case 7:
        iwarp_llp_assoc_unacked(&A, fuzz_xorshift(r) % 4u ? 0u : 40000u);
        break;
    case 8:
    case 9:
        if (waiting[sid])
            answer(sid, what % 13u == 8u);
        break;
    case 10:
        detach(sid);
        break;
    case 11:
        now_ns += (uint64_t)take16(d, n) * 1000u;
        (void)iwarp_llp_assoc_handle_timeout(&A, now_ns);
        FUZZ_CHECK(iwarp_llp_assoc_next_timeout(&A) > now_ns);
        for (uint16_t i = 0; i < NS; i++)
            if (detached[i] && !ST[i].detached)
                released(i, true); /* its linger passed */
        break;
    default:
        iwarp_llp_assoc_set_deadline(&A, sid, now_ns + (uint64_t)take16(d, n) * 1000u);
        break;
    }
    owner_events();
    drain_cqs();
    guards_intact();
}

static void setup(uint8_t cfgb)
{
    for (size_t i = 0; i < GUARD; i++) {
        arena[i] = (uint8_t)(0x5A ^ i);
        arena[GUARD + MRLEN + i] = (uint8_t)(0xC3 ^ i);
    }
    memset(mr_base(), 0xEE, MRLEN);
    mem_seed = 0x1234567u;
    FUZZ_CHECK(iwarp_mem_table_init(&T, E, 8, fuzz_xorshift, &mem_seed) == 0);
    struct iwarp_mem_range mrr = {.addr = (uintptr_t)mr_base(),
                                  .iova = (uintptr_t)mr_base(),
                                  .length = MRLEN,
                                  .access = IWARP_MEM_ACCESS_LOCAL_WRITE |
                                            IWARP_MEM_ACCESS_REMOTE_WRITE |
                                            IWARP_MEM_ACCESS_REMOTE_READ};
    FUZZ_CHECK(iwarp_mem_reg_mr(&T, 1, &mrr, &mr) == 0);
    memset(Q, 0, sizeof Q);
    static const uint16_t windows[4] = {4, 16, 64, WIN_MAX};
    static const uint32_t segs[4] = {516, 1024, 1400, 9000};
    max_seg = segs[(cfgb >> 3) & 3u];
    PEND = (struct iwarp_sess_pending){.limit = 1u + (cfgb >> 5)};
    struct iwarp_llp_assoc_cfg cfg = {.nstreams = NS,
                                      .max_seg = max_seg,
                                      .passive = true,
                                      .chunk_free = chunk_free,
                                      .window = windows[(cfgb >> 1) & 3u],
                                      .linger_ns = 1000000u};
    iwarp_sess_cfg_default(&cfg.passive_sess, IWARP_SESS_PASSIVE);
    cfg.passive_sess.enhanced = cfgb & 1u;
    cfg.passive_sess.pending = &PEND;
    FUZZ_CHECK(iwarp_llp_assoc_init(&A, &cfg, ST, SLOTS) == 0);
    for (uint16_t i = 0; i < NS; i++) {
        rx_auto[i] = tx_expect[i] = 0;
        send_msn[i] = 1;
    }
    policy = 0;
    memset(waiting, 0, sizeof waiting);
    memset(rejected, 0, sizeof rejected);
    memset(reject_out, 0, sizeof reject_out);
    memset(detached, 0, sizeof detached);
    now_ns = 1;
    nlive = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup(fuzz_take(&data, &size));
    uint32_t r = 0x9E3779B9u ^ (uint32_t)size;
    while (size) {
        uint8_t op = fuzz_take(&data, &size);
        switch (op % 8u) {
        case 0:
        case 1:
        case 2:
            op_raw(&data, &size);
            break;
        case 3:
            op_segment(&data, &size);
            break;
        case 4:
            op_control(&data, &size);
            break;
        case 5:
            send_some(fuzz_take(&data, &size), &r);
            break;
        case 6:
            op_owner(&data, &size, &r);
            break;
        default:
            iwarp_llp_assoc_lost(&A, (op & 8u) != 0);
            owner_events();
            break;
        }
    }
    send_some(0, &r);
    /* teardown: every buffer comes back */
    iwarp_llp_assoc_lost(&A, false);
    owner_events();
    for (uint16_t i = 0; i < NS; i++)
        iwarp_llp_assoc_release(&A, i);
    FUZZ_CHECK(nlive == 0);
    drain_cqs();
    for (uint16_t i = 0; i < NS; i++)
        if (Q[i].used)
            iwarp_core_qp_fini(&Q[i].qp);
    guards_intact();
    return 0;
}
