/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP streams over one SCTP association (llp_assoc, RFC 5043 §5-§10, RFC 6581 §7, §9), without
 * sockets: two associations, A active and B passive, joined in memory. Every chunk tx_next()
 * produces is checked (PPID 16/17, the DDP-SSN the stream's counter must give it, a control
 * chunk that decodes, a segment within max_seg that decodes), gathered into a malloc'ed buffer
 * as usrsctp would hand it over, and given to the peer's rx_chunk(), in order or in a seeded
 * shuffled order. chunk_free is a counting free over a registry of the buffers handed in: a
 * buffer given back twice or never, or one we never handed in, fails the test.
 * Engines are real: core_qp queue pairs and core_ddp DDP-level streams over STag tables and
 * registered memory; data are compared octet by octet and every completion is checked.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_ddp.h"
#include "core/core_qp.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "llp/llp_assoc.h"
#include "mem/mem_region.h"
#include "mpa/mpa_ird_ord.h"
#include "wire/wire_sctp.h"
#include "wire/wire_segment.h"

#define NS       4u         /* SCTP streams of the association */
#define MEM_SIZE (4u << 20) /* registered memory per side */
#define KIB      1024u
#define SQ_CAP   64u
#define RQ_CAP   32u
#define CQ_CAP   256u
#define LOG_MAX  4096u
#define PUMP_MAX 100000u
#define NONE     IWARP_MPA_IRD_ORD_NONE

enum { SIDE_A = 0, SIDE_B = 1 };
enum {
    EV_REQ = IWARP_LLP_ASSOC_EV_REQUEST,
    EV_EST = IWARP_LLP_ASSOC_EV_ESTABLISHED,
    EV_REJ = IWARP_LLP_ASSOC_EV_REJECTED,
    EV_CLOSED = IWARP_LLP_ASSOC_EV_CLOSED,
    EV_TIMEDOUT = IWARP_LLP_ASSOC_EV_TIMEDOUT
};

/* ---- received buffers: every one handed in must come back through chunk_free once -------- */

static void **LIVE;
static size_t NLIVE, CAPLIVE, NFREED;

static void *chunk_alloc(size_t len)
{
    void *p = malloc(len ? len : 1);
    ASSERT_TRUE(p != NULL);
    if (NLIVE == CAPLIVE) {
        CAPLIVE = CAPLIVE ? 2 * CAPLIVE : 1024;
        LIVE = realloc(LIVE, CAPLIVE * sizeof *LIVE);
        ASSERT_TRUE(LIVE != NULL);
    }
    LIVE[NLIVE++] = p;
    return p;
}

static bool is_live(const void *p)
{
    for (size_t i = 0; i < NLIVE; i++)
        if (LIVE[i] == p)
            return true;
    return false;
}

/* cfg.chunk_free: a buffer we never handed in, or one given back twice, fails the test. */
static void chunk_free_counted(void *p)
{
    for (size_t i = 0; i < NLIVE; i++) {
        if (LIVE[i] == p) {
            LIVE[i] = LIVE[--NLIVE];
            free(p);
            NFREED++;
            return;
        }
    }
    harness_fail(__FILE__, __LINE__, "chunk_free(%p): not a buffer handed in, or given back twice",
                 p);
}

/* ---- memory and engines -------------------------------------------------------------------- */

struct node {
    struct iwarp_mem_table T;
    struct iwarp_mem_entry E[16];
    uint32_t seed;
    uint8_t *mem;
    uint32_t key; /* the whole memory, local and remote rights */
};

static struct node N[2];
static uint8_t MEM[2][MEM_SIZE];

/* An RDMAP queue pair with its own CQs. */
struct qpe {
    struct iwarp_core_sqe sq[SQ_CAP];
    struct iwarp_core_rqe rq[RQ_CAP];
    uint64_t rq_lens[RQ_CAP], irq_lens[IWARP_CORE_MAX_IRD];
    struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
    struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
    struct iwarp_wc sring[CQ_CAP], rring[CQ_CAP];
    struct iwarp_core_cq scq, rcq;
    struct iwarp_core_qp qp;
    unsigned side;
    int nerr; /* async error events */
    uint32_t cause;
};

/* A DDP-level stream (two untagged queues) with its own CQs. */
struct ddpe {
    struct iwarp_core_ddp_sqe sq[8];
    struct iwarp_core_ddp_uq uq[2];
    struct iwarp_core_rqe rqe[2 * 8];
    uint64_t lens[2 * 8];
    struct iwarp_wc sring[CQ_CAP], rring[CQ_CAP];
    struct iwarp_core_cq scq, rcq;
    struct iwarp_core_ddp d;
    unsigned side;
    int nerr;
};

static struct qpe Q[2][6]; /* [side][n] */
static struct ddpe D[2];

static void on_qp_event(void *user, struct iwarp_core_qp *qp, int type, uint32_t cause, bool peer)
{
    (void)qp;
    (void)type;
    (void)peer;
    struct qpe *e = user;
    e->nerr++;
    e->cause = cause;
}

static void on_ddp_event(void *user, int type, uint32_t cause)
{
    (void)type;
    (void)cause;
    struct ddpe *e = user;
    e->nerr++;
}

static void node_init(unsigned s)
{
    struct node *n = &N[s];
    memset(n, 0, sizeof *n);
    n->seed = s ? 0x13579BDu : 0x2468ACEu;
    n->mem = MEM[s];
    ASSERT_EQ(iwarp_mem_table_init(&n->T, n->E, 16, harness_xorshift32, &n->seed), 0);
    uint64_t a = (uint64_t)(uintptr_t)n->mem;
    struct iwarp_mem_range r = {.addr = a,
                                .iova = a,
                                .length = MEM_SIZE,
                                .access = IWARP_MEM_ACCESS_LOCAL_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_WRITE |
                                          IWARP_MEM_ACCESS_REMOTE_READ};
    ASSERT_EQ(iwarp_mem_reg_mr(&n->T, 1, &r, &n->key), 0);
}

static struct qpe *qp_new(unsigned s, unsigned i)
{
    struct qpe *e = &Q[s][i];
    memset(e, 0, sizeof *e);
    e->side = s;
    ASSERT_EQ(iwarp_core_cq_init(&e->scq, e->sring, CQ_CAP, NULL, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&e->rcq, e->rring, CQ_CAP, NULL, NULL), 0);
    struct iwarp_core_qp_cfg cfg = {.qp_num = 0x100u * (s + 1u) + i,
                                    .pd = 1,
                                    .mem = &N[s].T,
                                    .send_cq = &e->scq,
                                    .recv_cq = &e->rcq,
                                    .sq_cap = SQ_CAP,
                                    .rq_cap = RQ_CAP,
                                    .max_send_sge = 4,
                                    .max_recv_sge = 4,
                                    .max_inline = IWARP_CORE_MAX_INLINE,
                                    .sq_sig_all = true,
                                    .event = on_qp_event,
                                    .event_user = e};
    struct iwarp_core_qp_mem m = {.sq = e->sq,
                                  .rq = e->rq,
                                  .rq_lens = e->rq_lens,
                                  .orq = e->orq,
                                  .irq = e->irq,
                                  .irq_lens = e->irq_lens};
    ASSERT_EQ(iwarp_core_qp_init(&e->qp, &cfg, &m), 0);
    return e;
}

static struct ddpe *ddp_new(unsigned s)
{
    struct ddpe *e = &D[s];
    memset(e, 0, sizeof *e);
    e->side = s;
    ASSERT_EQ(iwarp_core_cq_init(&e->scq, e->sring, CQ_CAP, NULL, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&e->rcq, e->rring, CQ_CAP, NULL, NULL), 0);
    struct iwarp_core_ddp_cfg cfg = {.qp_num = 0x500u + s,
                                     .pd = 1,
                                     .mem = &N[s].T,
                                     .send_cq = &e->scq,
                                     .recv_cq = &e->rcq,
                                     .num_queues = 2,
                                     .rq_cap = 8,
                                     .sq_cap = 8,
                                     .max_send_sge = 4,
                                     .max_recv_sge = 4,
                                     .sq_sig_all = true,
                                     .event = on_ddp_event,
                                     .event_user = e};
    struct iwarp_core_ddp_mem m = {.sq = e->sq, .uq = e->uq, .rqe = e->rqe, .lens = e->lens};
    ASSERT_EQ(iwarp_core_ddp_init(&e->d, &cfg, &m), 0);
    return e;
}

static struct iwarp_core_engine *eng_qp(struct qpe *e)
{
    return &e->qp.eng;
}

static struct iwarp_core_engine *eng_ddp(struct ddpe *e)
{
    return &e->d.eng;
}

static uint64_t va(unsigned s, uint32_t off)
{
    return (uint64_t)(uintptr_t)(N[s].mem + off);
}

static void fill(unsigned s, uint32_t off, uint32_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1u;
    for (uint32_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        N[s].mem[off + i] = (uint8_t)(x >> 16);
    }
}

/* mem[s1] + o1 == mem[s2] + o2 over len octets; reports the first difference. */
static void same(unsigned s1, uint32_t o1, unsigned s2, uint32_t o2, uint32_t len)
{
    const uint8_t *a = N[s1].mem + o1, *b = N[s2].mem + o2;
    if (memcmp(a, b, len) == 0)
        return;
    uint32_t i = 0;
    while (a[i] == b[i])
        i++;
    harness_fail(__FILE__, __LINE__, "octet %u of %u differs: %02x != %02x", i, len, a[i], b[i]);
}

static void post_recv(struct qpe *e, uint64_t wr_id, uint32_t off, uint32_t len)
{
    struct iwarp_sge sg = {.addr = va(e->side, off), .length = len, .lkey = N[e->side].key};
    struct iwarp_recv_wr wr = {.wr_id = wr_id, .sg_list = &sg, .num_sge = 1};
    ASSERT_EQ(iwarp_core_qp_post_recv(&e->qp, &wr), 0);
}

/* Posts a Send, Write or Read; Write/Read name the peer's memory at roff. */
static int post_send_rc(struct qpe *e, enum iwarp_wr_opcode op, uint64_t wr_id, uint32_t off,
                        uint32_t len, uint32_t roff)
{
    unsigned peer = 1u - e->side;
    struct iwarp_sge sg = {.addr = va(e->side, off), .length = len, .lkey = N[e->side].key};
    struct iwarp_send_wr wr = {.wr_id = wr_id, .sg_list = &sg, .num_sge = 1, .opcode = op};
    wr.wr.rdma.remote_addr = va(peer, roff);
    wr.wr.rdma.rkey = N[peer].key;
    return iwarp_core_qp_post_send(&e->qp, &wr);
}

static void post_send(struct qpe *e, enum iwarp_wr_opcode op, uint64_t wr_id, uint32_t off,
                      uint32_t len, uint32_t roff)
{
    ASSERT_EQ(post_send_rc(e, op, wr_id, off, len, roff), 0);
}

/* The next completion of cq is (wr_id, status, opcode[, byte_len]). */
static struct iwarp_wc wc_next(struct iwarp_core_cq *cq, uint64_t wr_id, int status, int opcode)
{
    struct iwarp_wc wc;
    memset(&wc, 0, sizeof wc);
    ASSERT_EQ_U(iwarp_core_cq_poll(cq, &wc, 1), 1u);
    ASSERT_EQ_U(wc.wr_id, wr_id);
    ASSERT_EQ(wc.status, status);
    if (status == IWARP_WC_SUCCESS)
        ASSERT_EQ(wc.opcode, opcode);
    return wc;
}

static void cq_empty(struct iwarp_core_cq *cq)
{
    struct iwarp_wc wc;
    ASSERT_EQ_U(iwarp_core_cq_poll(cq, &wc, 1), 0u);
}

/* ---- the two associations and the wire between them --------------------------------------- */

struct side {
    struct iwarp_llp_assoc a;
    struct iwarp_llp_assoc_stream st[NS];
    struct iwarp_sess_ssn_slot slots[NS * IWARP_LLP_ASSOC_WINDOW];
    struct iwarp_sess_pending pend;
    uint32_t ev[NS];     /* events taken, not yet looked at */
    uint16_t tx_ssn[NS]; /* the DDP-SSN the stream's next chunk must carry (§5.2.1) */
    bool rdmap[NS];      /* the stream's engine is a QP: its segments decode as RDMAP */
    uint16_t max_held;   /* most chunks one window held at once */
    uint32_t max_seg;
};

static struct side S[2];

/* A chunk on the wire, in a buffer as usrsctp hands it over. */
struct wchunk {
    uint16_t sid;
    uint32_t ppid;
    bool unordered;
    uint8_t *buf;
    size_t len;
};

struct flight {
    struct wchunk *c;
    size_t n, cap;
};

static struct flight FL[2]; /* FL[s]: sent by side s, not yet delivered to the other */

/* What each side sent, in order. */
struct logent {
    uint16_t sid;
    uint32_t ppid;
    uint16_t ssn;
    uint16_t fc;    /* control chunks: the function code */
    uint8_t opcode; /* RDMAP segments: the opcode */
    size_t len;
    uint8_t head[16];
};

static struct logent LOG[2][LOG_MAX];
static size_t NLOG[2];

static uint32_t RNG;
static bool SHUFFLE; /* deliver each batch in a seeded random order */
static bool STALL;   /* ask tx_next() again before taking a chunk (a full send buffer) */
static int RX_ALLOW; /* the one error rx_chunk() may return while pumping (0: none) */
static unsigned RX_ERRS;
static uint32_t CFG_CAP;    /* world(): both sides' cfg.inflight_max */
static uint64_t CFG_LINGER; /* world(): both sides' cfg.linger_ns */

static uint32_t rnd(void)
{
    return harness_xorshift32(&RNG);
}

/* llp_assoc's scans stop at iwarp_llp_assoc_streams_end: every stream from there on is FREE
 * with no events, and the one before it is not FREE. */
static void expect_streams_end(unsigned s)
{
    const struct iwarp_llp_assoc *a = &S[s].a;
    uint16_t end = iwarp_llp_assoc_streams_end(a);
    ASSERT_TRUE(end <= NS);
    for (uint16_t i = end; i < NS; i++) {
        ASSERT_EQ(a->st[i].state, IWARP_LLP_ASSOC_FREE);
        ASSERT_EQ_U(a->st[i].events, 0u);
    }
    ASSERT_TRUE(end == 0 || a->st[end - 1].state != IWARP_LLP_ASSOC_FREE);
}

static void collect(unsigned s)
{
    expect_streams_end(s);
    for (uint16_t i = 0; i < NS; i++)
        S[s].ev[i] |= iwarp_llp_assoc_take_events(&S[s].a, i);
}

/* The events of stream sid of side s since the last take. */
static uint32_t take(unsigned s, uint16_t sid)
{
    collect(s);
    uint32_t ev = S[s].ev[sid];
    S[s].ev[sid] = 0;
    return ev;
}

static void flight_push(unsigned s, struct wchunk w)
{
    struct flight *f = &FL[s];
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 256;
        f->c = realloc(f->c, f->cap * sizeof *f->c);
        ASSERT_TRUE(f->c != NULL);
    }
    f->c[f->n++] = w;
}

/* A chunk built by the test, as if side `from` had sent it. */
static struct wchunk make_chunk(uint16_t sid, uint32_t ppid, bool unordered, const uint8_t *p,
                                size_t len)
{
    struct wchunk w = {.sid = sid, .ppid = ppid, .unordered = unordered, .len = len};
    w.buf = chunk_alloc(len);
    if (len)
        memcpy(w.buf, p, len);
    return w;
}

/* A copy of chunk i side s sent (still in flight). */
static struct wchunk copy_chunk(unsigned s, size_t i)
{
    const struct wchunk *w = &FL[s].c[i];
    return make_chunk(w->sid, w->ppid, w->unordered, w->buf, w->len);
}

/* Hands w to side s's rx_chunk (ownership passes in). */
static int inject(unsigned s, struct wchunk w)
{
    int rc = iwarp_llp_assoc_rx_chunk(&S[s].a, w.sid, w.ppid, w.unordered, w.buf, w.len);
    collect(s);
    return rc;
}

/* Checks one chunk side s produced (already gathered into b) and logs it. */
static void check_chunk(unsigned s, const struct iwarp_llp_assoc_chunk *c, const uint8_t *b)
{
    struct side *x = &S[s];
    ASSERT_TRUE(c->sid < NS);
    ASSERT_TRUE(c->len >= IWARP_SCTP_SSN_LEN);
    /* §5.2.1: every chunk of the stream, control or segment, takes the next DDP-SSN, from 0
     * at the session's start (§6.1) */
    uint16_t ssn = (uint16_t)(b[0] << 8 | b[1]);
    ASSERT_EQ(ssn, x->tx_ssn[c->sid]);
    x->tx_ssn[c->sid]++;
    struct logent *l = &LOG[s][NLOG[s] < LOG_MAX ? NLOG[s]++ : LOG_MAX - 1];
    memset(l, 0, sizeof *l);
    l->sid = c->sid;
    l->ppid = c->ppid;
    l->ssn = ssn;
    l->len = c->len;
    memcpy(l->head, b, c->len < sizeof l->head ? c->len : sizeof l->head);
    if (c->ppid == IWARP_SCTP_PPID_DDP_CONTROL) {
        struct iwarp_sctp_ctl ctl;
        ASSERT_EQ(iwarp_sctp_ctl_decode(b, c->len, &ctl), (iwarp_ssize)c->len);
        ASSERT_TRUE(c->len <= IWARP_SCTP_CTL_MAX);
        l->fc = ctl.fc;
        return;
    }
    ASSERT_EQ_U(c->ppid, IWARP_SCTP_PPID_DDP_SEGMENT); /* §5.2.2 */
    /* §9: no segment above the maximum the association gave DDP */
    ASSERT_TRUE(c->len - IWARP_SCTP_SSN_LEN <= x->max_seg);
    if (x->rdmap[c->sid]) {
        struct iwarp_wire_segment seg;
        ASSERT_EQ(iwarp_wire_segment_decode(b + 2, c->len - 2, &seg, NULL), 0);
        l->opcode = seg.opcode;
    }
}

/* Takes what side s has to send. Returns the number of chunks. */
static unsigned ship(unsigned s)
{
    unsigned n = 0;
    const struct iwarp_llp_assoc_chunk *c;
    while ((c = iwarp_llp_assoc_tx_next(&S[s].a)) != NULL) {
        ASSERT_TRUE(iwarp_llp_assoc_tx_ready(&S[s].a));
        size_t len = 0;
        for (uint32_t i = 0; i < c->niov; i++)
            len += c->iov[i].iov_len;
        ASSERT_EQ_U(len, c->len);
        ASSERT_TRUE(c->niov <= sizeof c->iov / sizeof c->iov[0]);
        uint8_t *b = chunk_alloc(c->len);
        size_t at = 0;
        for (uint32_t i = 0; i < c->niov; i++) {
            memcpy(b + at, c->iov[i].iov_base, c->iov[i].iov_len);
            at += c->iov[i].iov_len;
        }
        if (STALL && (rnd() & 3u) == 0) {
            /* the send buffer is full: the same chunk comes back, octet for octet */
            const struct iwarp_llp_assoc_chunk *again = iwarp_llp_assoc_tx_next(&S[s].a);
            ASSERT_TRUE(again == c);
            ASSERT_EQ_U(again->len, len);
            ASSERT_MEM_EQ(again->iov[0].iov_base, b, again->iov[0].iov_len);
        }
        check_chunk(s, c, b);
        flight_push(s, (struct wchunk){c->sid, c->ppid, true, b, c->len});
        iwarp_llp_assoc_tx_done(&S[s].a);
        collect(s);
        ASSERT_TRUE(++n < PUMP_MAX);
    }
    ASSERT_FALSE(iwarp_llp_assoc_tx_ready(&S[s].a));
    return n;
}

/* Delivers everything side s sent to the other side (shuffled when SHUFFLE). */
static unsigned deliver(unsigned s)
{
    struct flight *f = &FL[s];
    size_t n = f->n;
    if (n == 0)
        return 0;
    struct wchunk *batch = malloc(n * sizeof *batch);
    ASSERT_TRUE(batch != NULL);
    memcpy(batch, f->c, n * sizeof *batch);
    f->n = 0;
    if (SHUFFLE)
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = rnd() % (i + 1);
            struct wchunk t = batch[i];
            batch[i] = batch[j];
            batch[j] = t;
        }
    unsigned r = 1u - s;
    for (size_t i = 0; i < n; i++) {
        unsigned sid = batch[i].sid, ppid = batch[i].ppid;
        int rc = inject(r, batch[i]);
        if (rc != 0 && rc == RX_ALLOW)
            RX_ERRS++;
        else if (rc != 0)
            harness_fail(__FILE__, __LINE__, "rx_chunk(sid %u, ppid %u) = %d (%s)", sid, ppid, rc,
                         iwarp_err_name(rc));
        for (uint16_t k = 0; k < NS; k++) {
            uint16_t h = iwarp_sess_ssn_rx_held(&S[r].st[k].ssn_rx);
            if (h > S[r].max_held)
                S[r].max_held = h;
        }
    }
    free(batch);
    iwarp_llp_assoc_unacked(&S[s].a, 0); /* the peer's SCTP acknowledged all of it */
    return (unsigned)n;
}

/* Moves chunks both ways until nothing moves. */
static void pump(void)
{
    for (unsigned round = 0;; round++) {
        ASSERT_TRUE(round < PUMP_MAX);
        expect_streams_end(SIDE_A);
        expect_streams_end(SIDE_B);
        unsigned moved = ship(SIDE_A) + ship(SIDE_B);
        moved += deliver(SIDE_A) + deliver(SIDE_B);
        if (!moved)
            return;
    }
}

/* Only side s's chunks move (the other side's stay unproduced). */
static void pump_from(unsigned s)
{
    while (ship(s) + deliver(s))
        ;
}

static void discard_flights(void)
{
    for (unsigned s = 0; s < 2; s++) {
        for (size_t i = 0; i < FL[s].n; i++)
            chunk_free_counted(FL[s].c[i].buf);
        free(FL[s].c);
        FL[s] = (struct flight){0};
    }
}

/*
 * Both associations, fresh: A active, B passive (pending limit `limit`, enhanced or not).
 * window 0: the default.
 */
static void world(uint16_t window, uint32_t max_seg, uint32_t limit, bool b_enhanced)
{
    memset(S, 0, sizeof S);
    memset(LOG, 0, sizeof LOG);
    memset(NLOG, 0, sizeof NLOG);
    LIVE = NULL;
    NLIVE = CAPLIVE = NFREED = 0;
    RNG = 0xC0FFEEu;
    SHUFFLE = STALL = false;
    RX_ALLOW = 0;
    RX_ERRS = 0;
    node_init(SIDE_A);
    node_init(SIDE_B);
    for (unsigned s = 0; s < 2; s++) {
        struct iwarp_llp_assoc_cfg cfg = {.nstreams = NS,
                                          .max_seg = max_seg,
                                          .passive = s == SIDE_B,
                                          .chunk_free = chunk_free_counted,
                                          .window = window,
                                          .inflight_max = CFG_CAP,
                                          .linger_ns = CFG_LINGER};
        if (s == SIDE_B) {
            iwarp_sess_cfg_default(&cfg.passive_sess, IWARP_SESS_PASSIVE);
            cfg.passive_sess.enhanced = b_enhanced;
            cfg.passive_sess.pending = &S[s].pend;
            S[s].pend.limit = limit;
        }
        S[s].max_seg = max_seg;
        ASSERT_EQ(iwarp_llp_assoc_init(&S[s].a, &cfg, S[s].st, S[s].slots), 0);
    }
}

/* The end of every test: the associations go away (lost) and every buffer is back. */
static void finish(void)
{
    discard_flights();
    iwarp_llp_assoc_lost(&S[SIDE_A].a, true);
    iwarp_llp_assoc_lost(&S[SIDE_B].a, true);
    for (uint16_t i = 0; i < NS; i++) {
        iwarp_llp_assoc_release(&S[SIDE_A].a, i);
        iwarp_llp_assoc_release(&S[SIDE_B].a, i);
    }
    ASSERT_EQ_U(NLIVE, 0u);
    free(LIVE);
    LIVE = NULL;
    CAPLIVE = 0;
}

static void release(unsigned s, uint16_t sid)
{
    iwarp_llp_assoc_release(&S[s].a, sid);
    S[s].tx_ssn[sid] = 0; /* §6.6: the next session starts at DDP-SSN 0 */
}

static struct iwarp_sess_cfg active_cfg(bool enhanced)
{
    struct iwarp_sess_cfg c;
    iwarp_sess_cfg_default(&c, IWARP_SESS_ACTIVE);
    c.enhanced = enhanced;
    return c;
}

/* Opens stream sid from A with engine ea, B accepts with eb: both ESTABLISHED. */
static void establish(uint16_t sid, bool enhanced, struct iwarp_core_engine *ea,
                      struct iwarp_core_engine *eb)
{
    struct iwarp_sess_cfg c = active_cfg(enhanced);
    S[SIDE_A].rdmap[sid] = ea->rdmap != NULL;
    S[SIDE_B].rdmap[sid] = eb->rdmap != NULL;
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, sid, &c, ea, 16, 16, NULL), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, sid), EV_REQ);
    struct iwarp_sess_answer ans = {.ird = 16, .ord = 16};
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, sid, &ans, eb, 16, 16), 0);
    ASSERT_EQ_U(take(SIDE_B, sid), EV_EST);
    pump();
    ASSERT_EQ_U(take(SIDE_A, sid), EV_EST);
}

/* The log entries of side s on stream sid: index of the k-th one (k < 0: from the end). */
static const struct logent *log_at(unsigned s, uint16_t sid, int k)
{
    size_t n = 0;
    for (size_t i = 0; i < NLOG[s]; i++)
        n += LOG[s][i].sid == sid;
    size_t want = k >= 0 ? (size_t)k : n - (size_t)(-k);
    ASSERT_TRUE(want < n);
    for (size_t i = 0, j = 0; i < NLOG[s]; i++)
        if (LOG[s][i].sid == sid && j++ == want)
            return &LOG[s][i];
    return NULL;
}

static size_t log_count(unsigned s, uint16_t sid, uint32_t ppid)
{
    size_t n = 0;
    for (size_t i = 0; i < NLOG[s]; i++)
        n += LOG[s][i].sid == sid && LOG[s][i].ppid == ppid;
    return n;
}

static void expect_head(const struct logent *l, const char *hex)
{
    uint8_t want[64];
    size_t n = harness_hex(hex, want, sizeof want);
    ASSERT_TRUE(n <= l->len);
    ASSERT_MEM_EQ(l->head, want, n < sizeof l->head ? n : sizeof l->head);
}

/* A DDP segment chunk: DDP-SSN ssn, then an RDMAP Send of plen octets (MSN msn). */
static struct wchunk send_chunk(uint16_t sid, uint16_t ssn, uint32_t msn, uint32_t plen)
{
    uint8_t b[2 + 64 + 256];
    ASSERT_TRUE(plen <= 256);
    b[0] = (uint8_t)(ssn >> 8);
    b[1] = (uint8_t)ssn;
    uint8_t payload[256];
    memset(payload, 0x5A, sizeof payload);
    struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_SEND, .last = true, .msn = msn};
    iwarp_ssize n = iwarp_wire_segment_encode(b + 2, sizeof b - 2, &m, payload, plen);
    ASSERT_TRUE(n > 0);
    return make_chunk(sid, IWARP_SCTP_PPID_DDP_SEGMENT, true, b, 2 + (size_t)n);
}

/* A control chunk: DDP-SSN ssn and function code fc, no private data. */
static struct wchunk ctl_chunk(uint16_t sid, uint16_t ssn, uint16_t fc)
{
    uint8_t b[4] = {(uint8_t)(ssn >> 8), (uint8_t)ssn, (uint8_t)(fc >> 8), (uint8_t)fc};
    return make_chunk(sid, IWARP_SCTP_PPID_DDP_CONTROL, true, b, 4);
}

/* ---- session setup ----------------------------------------------------------------------- */

/* The streams' scans stop past the highest stream with a session (streams_end), which follows
 * opens and releases in any order; free_stream still finds the lowest free one. */
TEST(stream_scans_end_past_the_highest_stream_in_use)
{
    world(0, 1400, 4, false);
    struct iwarp_llp_assoc *a = &S[SIDE_A].a;
    struct iwarp_sess_cfg c = active_cfg(false);
    ASSERT_EQ(iwarp_llp_assoc_streams_end(a), 0);
    ASSERT_EQ(iwarp_llp_assoc_open(a, 2, &c, eng_qp(qp_new(SIDE_A, 0)), 16, 16, NULL), 0);
    ASSERT_EQ(iwarp_llp_assoc_streams_end(a), 3);
    ASSERT_EQ(iwarp_llp_assoc_free_stream(a), 0);
    ASSERT_EQ(iwarp_llp_assoc_open(a, 0, &c, eng_qp(qp_new(SIDE_A, 1)), 16, 16, NULL), 0);
    ASSERT_EQ(iwarp_llp_assoc_open(a, 1, &c, eng_qp(qp_new(SIDE_A, 2)), 16, 16, NULL), 0);
    ASSERT_EQ(iwarp_llp_assoc_free_stream(a), 3); /* past the end */
    ASSERT_EQ(iwarp_llp_assoc_streams_end(a), 3);
    expect_streams_end(SIDE_A);
    iwarp_llp_assoc_release(a, 2); /* withdrawn before any chunk went out */
    ASSERT_EQ(iwarp_llp_assoc_streams_end(a), 2);
    iwarp_llp_assoc_release(a, 0);
    ASSERT_EQ(iwarp_llp_assoc_streams_end(a), 2); /* stream 1 still has its session */
    ASSERT_EQ(iwarp_llp_assoc_free_stream(a), 0);
    iwarp_llp_assoc_release(a, 1);
    ASSERT_EQ(iwarp_llp_assoc_streams_end(a), 0);
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(a), 0u);
    /* sessions on every stream from the last down: served round robin, each Initiate once */
    for (uint16_t i = NS; i-- > 0;)
        ASSERT_EQ(iwarp_llp_assoc_open(a, i, &c, eng_qp(qp_new(SIDE_A, i)), 16, 16, NULL), 0);
    ASSERT_EQ(iwarp_llp_assoc_free_stream(a), -1);
    for (uint16_t i = 0; i < NS; i++) {
        const struct iwarp_llp_assoc_chunk *ch = iwarp_llp_assoc_tx_next(a);
        ASSERT_TRUE(ch != NULL);
        ASSERT_EQ(ch->sid, i);
        iwarp_llp_assoc_tx_done(a);
    }
    ASSERT_TRUE(iwarp_llp_assoc_tx_next(a) == NULL); /* all wait for their answers */
}

TEST(enhanced_session_starts_engines_with_negotiated_ird_ord)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    S[SIDE_A].rdmap[2] = S[SIDE_B].rdmap[2] = true;
    struct iwarp_sess_cfg c = active_cfg(true);
    c.ird = 8;
    c.ord = 6;
    c.pd = (const uint8_t *)"hello";
    c.pd_len = 5;
    ASSERT_EQ(iwarp_llp_assoc_free_stream(&S[SIDE_A].a), 0);
    /* the ULP's 100/100 must not be used: the session negotiates (RFC 6581 §9.1) */
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 2, &c, eng_qp(qa), 100, 100, NULL), 0);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 2, &c, eng_qp(qa), 100, 100, NULL),
              IWARP_ERR_BUSY);
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(&S[SIDE_A].a), 1u);
    pump();
    /* A's Enhanced Initiate (RFC 6581 §7): DDP-SSN 0, fc 5, A=0 IRD 8, ORD 6, the ULP's data */
    ASSERT_EQ_U(NLOG[SIDE_A], 1u);
    ASSERT_EQ(log_at(SIDE_A, 2, 0)->ppid, IWARP_SCTP_PPID_DDP_CONTROL);
    expect_head(log_at(SIDE_A, 2, 0), "0000 0005 0008 0006 68656c6c6f");
    ASSERT_EQ_U(take(SIDE_B, 2), EV_REQ);
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(&S[SIDE_B].a), 1u);
    const struct iwarp_sess_result *rb = iwarp_sess_ctl_result(&S[SIDE_B].st[2].ctl);
    ASSERT_TRUE(rb->enhanced);
    ASSERT_EQ(rb->peer_ird, 8);
    ASSERT_EQ(rb->peer_ord, 6);
    ASSERT_EQ(rb->peer_pd_len, 5);
    ASSERT_MEM_EQ(rb->peer_pd, "hello", 5);
    ASSERT_EQ_U(S[SIDE_B].pend.count, 1u);

    struct iwarp_sess_answer ans = {.ird = 4, .ord = 12, .pd = (const uint8_t *)"ok", .pd_len = 2};
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, 2, &ans, eng_qp(qb), 100, 100), 0);
    ASSERT_EQ_U(take(SIDE_B, 2), EV_EST);
    ASSERT_EQ_U(S[SIDE_B].pend.count, 0u);
    /* RFC 6581 §9.1: responder IRD 4 (its own), ORD at most the initiator IRD: 8 */
    ASSERT_EQ(qb->qp.stream.state, IWARP_CORE_STREAM_RUNNING);
    ASSERT_EQ_U(qb->qp.ird, 4u);
    ASSERT_EQ_U(qb->qp.ord, 8u);
    ASSERT_EQ(qa->qp.stream.state, IWARP_CORE_STREAM_IDLE); /* not before the Accept arrives */
    /* RFC 6581 §7: the passive side may send first, right behind its Accept */
    post_recv(qa, 0xA1, 0, 64);
    fill(SIDE_B, 4096, 40, 1);
    post_send(qb, IWARP_WR_SEND, 0xB1, 4096, 40, 0);
    pump();
    ASSERT_EQ_U(take(SIDE_A, 2), EV_EST);
    /* initiator: ORD at most the responder IRD (4), IRD as offered (8) */
    ASSERT_EQ_U(qa->qp.ird, 8u);
    ASSERT_EQ_U(qa->qp.ord, 4u);
    const struct iwarp_sess_result *ra = iwarp_sess_ctl_result(&S[SIDE_A].st[2].ctl);
    ASSERT_EQ(ra->peer_pd_len, 2);
    ASSERT_MEM_EQ(ra->peer_pd, "ok", 2);
    /* B's Enhanced Accept (fc 6, IRD 4, ORD 8) took DDP-SSN 0, its Send DDP-SSN 1 */
    expect_head(log_at(SIDE_B, 2, 0), "0000 0006 0004 0008 6f6b");
    ASSERT_EQ(log_at(SIDE_B, 2, 1)->ppid, IWARP_SCTP_PPID_DDP_SEGMENT);
    ASSERT_EQ(log_at(SIDE_B, 2, 1)->ssn, 1);
    ASSERT_EQ(log_at(SIDE_B, 2, 1)->opcode, IWARP_RDMAP_OP_SEND);
    struct iwarp_wc wc = wc_next(&qa->rcq, 0xA1, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    ASSERT_EQ_U(wc.byte_len, 40u);
    same(SIDE_A, 0, SIDE_B, 4096, 40);
    wc_next(&qb->scq, 0xB1, IWARP_WC_SUCCESS, IWARP_WC_SEND);
    /* and A's first segment takes DDP-SSN 1: its Initiate took 0 */
    post_recv(qb, 0xB2, 8192, 64);
    fill(SIDE_A, 4096, 33, 2);
    post_send(qa, IWARP_WR_SEND, 0xA2, 4096, 33, 0);
    pump();
    ASSERT_EQ(log_at(SIDE_A, 2, 1)->ssn, 1);
    ASSERT_EQ(log_at(SIDE_A, 2, 1)->ppid, IWARP_SCTP_PPID_DDP_SEGMENT);
    wc_next(&qb->rcq, 0xB2, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    same(SIDE_B, 8192, SIDE_A, 4096, 33);
    ASSERT_EQ(qa->nerr + qb->nerr, 0);
    finish();
}

TEST(plain_session_leaves_ird_ord_to_the_ulp)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    struct iwarp_sess_cfg c = active_cfg(false);
    c.pd = (const uint8_t *)"xy";
    c.pd_len = 2;
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa), 3, 5, NULL), 0);
    pump();
    expect_head(log_at(SIDE_A, 0, 0), "0000 0001 7879"); /* Initiate (§5.2.3), no word */
    ASSERT_EQ_U(take(SIDE_B, 0), EV_REQ);
    const struct iwarp_sess_result *rb = iwarp_sess_ctl_result(&S[SIDE_B].st[0].ctl);
    ASSERT_FALSE(rb->enhanced);
    ASSERT_EQ(rb->peer_ird, NONE);
    struct iwarp_sess_answer ans = {.ird = 9, .ord = 9};
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, 0, &ans, eng_qp(qb), 7, 2), 0);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_EST);
    pump();
    ASSERT_EQ_U(take(SIDE_A, 0), EV_EST);
    expect_head(log_at(SIDE_B, 0, 0), "0000 0002"); /* Accept, plain answer to plain */
    ASSERT_EQ_U(log_at(SIDE_B, 0, 0)->len, 4u);
    /* no RFC 6581 exchange: each engine runs with its ULP's values */
    ASSERT_EQ_U(qa->qp.ird, 3u);
    ASSERT_EQ_U(qa->qp.ord, 5u);
    ASSERT_EQ_U(qb->qp.ird, 7u);
    ASSERT_EQ_U(qb->qp.ord, 2u);
    finish();
}

TEST(reject_reaches_the_active_side_with_private_data)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0);
    post_recv(qa, 0xA1, 0, 64); /* flushed when the session ends */
    struct iwarp_sess_cfg c = active_cfg(false);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 1, &c, eng_qp(qa), 4, 4, NULL), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 1), EV_REQ);
    struct iwarp_sess_answer no = {.pd = (const uint8_t *)"busy", .pd_len = 4};
    ASSERT_EQ(iwarp_llp_assoc_reject(&S[SIDE_B].a, 1, &no), 0);
    ASSERT_EQ_U(take(SIDE_B, 1), 0u); /* the owner rejected: no event for it */
    ASSERT_EQ_U(S[SIDE_B].pend.count, 0u);
    ASSERT_TRUE(iwarp_llp_assoc_tx_ready(&S[SIDE_B].a)); /* the Reject must go out (§6.3) */
    pump();
    expect_head(log_at(SIDE_B, 1, 0), "0000 0003 62757379");
    ASSERT_EQ_U(take(SIDE_A, 1), EV_REJ);
    const struct iwarp_sess_result *ra = iwarp_sess_ctl_result(&S[SIDE_A].st[1].ctl);
    ASSERT_EQ(ra->err, IWARP_ERR_SESSION_REJECTED);
    ASSERT_EQ(ra->peer_pd_len, 4);
    ASSERT_MEM_EQ(ra->peer_pd, "busy", 4); /* §5.2.3: available to the ULP */
    ASSERT_EQ(S[SIDE_A].st[1].err, IWARP_ERR_SESSION_REJECTED);
    wc_next(&qa->rcq, 0xA1, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_EQ_U(take(SIDE_B, 1), EV_CLOSED); /* B's Reject is out: the stream may go */
    release(SIDE_A, 1);
    release(SIDE_B, 1);
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(&S[SIDE_A].a), 0u);
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(&S[SIDE_B].a), 0u);

    /* RFC 6581 §7: an Enhanced Reject (7) to an Enhanced Initiate, on the same stream again */
    qa = qp_new(SIDE_A, 1);
    c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 1, &c, eng_qp(qa), 4, 4, NULL), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 1), EV_REQ);
    no.enhanced_only = true;
    ASSERT_EQ(iwarp_llp_assoc_reject(&S[SIDE_B].a, 1, &no), 0);
    pump();
    expect_head(log_at(SIDE_A, 1, -1), "0000 0005"); /* the new session's DDP-SSN 0 */
    expect_head(log_at(SIDE_B, 1, -1), "0000 0007 62757379");
    ASSERT_EQ_U(take(SIDE_A, 1), EV_REJ);
    ASSERT_TRUE(iwarp_sess_ctl_result(&S[SIDE_A].st[1].ctl)->enhanced_reject);
    ASSERT_EQ_U(take(SIDE_B, 1), EV_CLOSED);
    finish();
}

TEST(several_sessions_on_different_streams_at_once)
{
    world(0, 1400, 8, true);
    struct qpe *qa[3], *qb[3];
    for (unsigned i = 0; i < 3; i++) {
        qa[i] = qp_new(SIDE_A, i);
        qb[i] = qp_new(SIDE_B, i);
        S[SIDE_A].rdmap[i] = S[SIDE_B].rdmap[i] = true;
    }
    struct ddpe *da = ddp_new(SIDE_A), *db = ddp_new(SIDE_B);
    /* all four Initiates before any answer */
    struct iwarp_sess_cfg c = active_cfg(true);
    for (uint16_t i = 0; i < 3; i++)
        ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, i, &c, eng_qp(qa[i]), 16, 16, NULL), 0);
    c = active_cfg(false);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 3, &c, eng_ddp(da), 0, 0, NULL), 0);
    ASSERT_EQ(iwarp_llp_assoc_free_stream(&S[SIDE_A].a), -1);
    pump();
    for (uint16_t i = 0; i < NS; i++)
        ASSERT_EQ_U(take(SIDE_B, i), EV_REQ);
    ASSERT_EQ_U(S[SIDE_B].pend.count, 4u);
    struct iwarp_sess_answer ans = {.ird = 16, .ord = 16};
    for (uint16_t i = 0; i < 3; i++)
        ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, i, &ans, eng_qp(qb[i]), 16, 16), 0);
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, 3, &ans, eng_ddp(db), 0, 0), 0);
    pump();
    for (uint16_t i = 0; i < NS; i++) {
        ASSERT_EQ_U(take(SIDE_A, i), EV_EST);
        ASSERT_EQ_U(take(SIDE_B, i), EV_EST);
    }
    ASSERT_EQ(da->d.stream.state, IWARP_CORE_STREAM_RUNNING);

    /* stream 0: Send A->B; 1: Write A->B and Send B->A; 2: Read by A of B's memory;
     * 3 (DDP-level): an untagged message to QN 1 and a tagged one A->B */
    const uint32_t base[NS] = {0, 1u << 20, 2u << 20, 3u << 20};
    fill(SIDE_A, base[0], 3000, 10);
    post_recv(qb[0], 0x10, base[0] + 65536, 4000);
    post_send(qa[0], IWARP_WR_SEND, 0x11, base[0], 3000, 0);
    fill(SIDE_A, base[1], 20000, 11);
    fill(SIDE_B, base[1], 500, 12);
    post_send(qa[1], IWARP_WR_RDMA_WRITE, 0x12, base[1], 20000, base[1] + 65536);
    post_recv(qa[1], 0x13, base[1] + 65536, 600);
    post_send(qb[1], IWARP_WR_SEND, 0x14, base[1], 500, 0);
    fill(SIDE_B, base[2], 9000, 13);
    post_send(qa[2], IWARP_WR_RDMA_READ, 0x15, base[2] + 65536, 9000, base[2]);
    fill(SIDE_A, base[3], 2500, 14);
    fill(SIDE_A, base[3] + 8192, 5000, 15);
    struct iwarp_sge sg = {.addr = va(SIDE_B, base[3] + 65536), .length = 3000, .lkey = N[1].key};
    struct iwarp_recv_wr rw = {.wr_id = 0x16, .sg_list = &sg, .num_sge = 1};
    ASSERT_EQ(iwarp_core_ddp_post_recv(&db->d, 1, &rw), 0);
    struct iwarp_sge s1 = {.addr = va(SIDE_A, base[3]), .length = 2500, .lkey = N[0].key};
    const uint8_t rsvd[5] = {1, 2, 3, 4, 5};
    struct iwarp_core_ddp_send ds = {
        .wr_id = 0x17, .sg_list = &s1, .num_sge = 1, .signaled = true, .qn = 1, .rsvdulp = rsvd};
    ASSERT_EQ(iwarp_core_ddp_post_send(&da->d, &ds), 0);
    struct iwarp_sge s2 = {.addr = va(SIDE_A, base[3] + 8192), .length = 5000, .lkey = N[0].key};
    struct iwarp_core_ddp_send dt = {.wr_id = 0x18,
                                     .sg_list = &s2,
                                     .num_sge = 1,
                                     .signaled = true,
                                     .tagged = true,
                                     .stag = N[1].key,
                                     .to = va(SIDE_B, base[3] + 131072)};
    ASSERT_EQ(iwarp_core_ddp_post_send(&da->d, &dt), 0);
    SHUFFLE = true;
    pump();

    struct iwarp_wc wc = wc_next(&qb[0]->rcq, 0x10, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    ASSERT_EQ_U(wc.byte_len, 3000u);
    ASSERT_EQ_U(wc.qp_num, qb[0]->qp.cfg.qp_num);
    same(SIDE_B, base[0] + 65536, SIDE_A, base[0], 3000);
    wc_next(&qa[0]->scq, 0x11, IWARP_WC_SUCCESS, IWARP_WC_SEND);
    wc_next(&qa[1]->scq, 0x12, IWARP_WC_SUCCESS, IWARP_WC_RDMA_WRITE);
    same(SIDE_B, base[1] + 65536, SIDE_A, base[1], 20000);
    wc = wc_next(&qa[1]->rcq, 0x13, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    ASSERT_EQ_U(wc.byte_len, 500u);
    same(SIDE_A, base[1] + 65536, SIDE_B, base[1], 500);
    wc_next(&qb[1]->scq, 0x14, IWARP_WC_SUCCESS, IWARP_WC_SEND);
    wc = wc_next(&qa[2]->scq, 0x15, IWARP_WC_SUCCESS, IWARP_WC_RDMA_READ);
    ASSERT_EQ_U(wc.byte_len, 9000u);
    same(SIDE_A, base[2] + 65536, SIDE_B, base[2], 9000);
    wc = wc_next(&db->rcq, 0x16, IWARP_WC_SUCCESS, IWARP_WC_DDP_RECV);
    ASSERT_EQ_U(wc.byte_len, 2500u);
    ASSERT_EQ_U(wc.ddp_qn, 1u);
    ASSERT_EQ_U(wc.ddp_msn, 1u);
    ASSERT_MEM_EQ(wc.ddp_rsvdulp, rsvd, 5);
    same(SIDE_B, base[3] + 65536, SIDE_A, base[3], 2500);
    wc = wc_next(&db->rcq, 0, IWARP_WC_SUCCESS, IWARP_WC_DDP_TAGGED_RECV);
    ASSERT_EQ_U(wc.ddp_stag, N[1].key);
    same(SIDE_B, base[3] + 131072, SIDE_A, base[3] + 8192, 5000);
    wc_next(&da->scq, 0x17, IWARP_WC_SUCCESS, IWARP_WC_DDP_SEND);
    wc_next(&da->scq, 0x18, IWARP_WC_SUCCESS, IWARP_WC_DDP_SEND);
    /* nothing crossed streams */
    for (unsigned i = 0; i < 3; i++) {
        cq_empty(&qa[i]->scq);
        cq_empty(&qa[i]->rcq);
        cq_empty(&qb[i]->scq);
        cq_empty(&qb[i]->rcq);
        ASSERT_EQ(qa[i]->nerr + qb[i]->nerr, 0);
    }
    cq_empty(&db->rcq);
    ASSERT_EQ(da->nerr + db->nerr, 0);
    /* every stream numbered its own chunks from 0 (checked per chunk by ship()) */
    for (uint16_t i = 0; i < NS; i++)
        ASSERT_EQ(log_at(SIDE_A, i, 0)->ssn, 0);
    finish();
}

/* ---- segments ---------------------------------------------------------------------------- */

TEST(write_and_read_of_256k_split_into_max_seg_segments)
{
    const uint32_t big = 256u * KIB, max_seg = 1024;
    world(0, max_seg, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    fill(SIDE_A, 0, big, 21);
    fill(SIDE_B, 1u << 20, big, 22);
    post_send(qa, IWARP_WR_RDMA_WRITE, 1, 0, big, 2u << 20);
    post_send(qa, IWARP_WR_RDMA_READ, 2, 1u << 20, big, 1u << 20);
    pump();
    wc_next(&qa->scq, 1, IWARP_WC_SUCCESS, IWARP_WC_RDMA_WRITE);
    struct iwarp_wc wc = wc_next(&qa->scq, 2, IWARP_WC_SUCCESS, IWARP_WC_RDMA_READ);
    ASSERT_EQ_U(wc.byte_len, big);
    same(SIDE_B, 2u << 20, SIDE_A, 0, big);
    same(SIDE_A, 1u << 20, SIDE_B, 1u << 20, big);
    /* each segment at most max_seg (checked per chunk); the payload needed this many */
    uint32_t per = max_seg - IWARP_DDP_TAGGED_HDR_LEN;
    size_t writes = 0, responses = 0;
    for (size_t i = 0; i < NLOG[SIDE_A]; i++)
        writes += LOG[SIDE_A][i].ppid == IWARP_SCTP_PPID_DDP_SEGMENT &&
                  LOG[SIDE_A][i].opcode == IWARP_RDMAP_OP_WRITE;
    for (size_t i = 0; i < NLOG[SIDE_B]; i++)
        responses += LOG[SIDE_B][i].ppid == IWARP_SCTP_PPID_DDP_SEGMENT &&
                     LOG[SIDE_B][i].opcode == IWARP_RDMAP_OP_READ_RESP;
    ASSERT_EQ_U(writes, (big + per - 1) / per);
    ASSERT_EQ_U(responses, (big + per - 1) / per);
    ASSERT_EQ(qa->nerr + qb->nerr, 0);
    finish();
}

TEST(shuffled_chunks_reach_ddp_in_ddp_ssn_order)
{
    world(0, 1024, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    SHUFFLE = true; /* the session exchange too: B's first Send may overtake its Accept */
    RNG = 0x5EED1234u;
    S[SIDE_A].rdmap[0] = S[SIDE_B].rdmap[0] = true;
    struct iwarp_sess_cfg c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa), 16, 16, NULL), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 0), EV_REQ);
    struct iwarp_sess_answer ans = {.ird = 16, .ord = 16};
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, 0, &ans, eng_qp(qb), 16, 16), 0);
    /* a multi-segment Send (untagged: DDP takes its segments only in MO order, RFC 5041 §5.3
     * over an in-order LLP), a Write and twenty small Sends from B; a Send and a Read from A */
    post_recv(qa, 0xA0, 0, 64 * KIB);
    for (unsigned i = 0; i < 20; i++)
        post_recv(qa, 0xA1 + i, 65536 + i * 256, 256);
    fill(SIDE_B, 0, 64 * KIB, 31);
    fill(SIDE_B, 65536, 128 * KIB, 32);
    post_send(qb, IWARP_WR_SEND, 0xB0, 0, 64 * KIB, 0);
    post_send(qb, IWARP_WR_RDMA_WRITE, 0xB1, 65536, 128 * KIB, 1u << 20);
    for (unsigned i = 0; i < 20; i++) {
        fill(SIDE_B, 262144 + i * 256, 100 + i, 40 + i);
        post_send(qb, IWARP_WR_SEND, 0xB2 + i, 262144 + i * 256, 100 + i, 0);
    }
    pump();
    ASSERT_EQ_U(take(SIDE_A, 0), EV_EST);
    post_recv(qb, 0xBF, 2u << 20, 70000);
    fill(SIDE_A, 2u << 20, 70000, 33);
    fill(SIDE_B, 3u << 20, 100000, 34);
    post_send(qa, IWARP_WR_SEND, 0xAF, 2u << 20, 70000, 0);
    post_send(qa, IWARP_WR_RDMA_READ, 0xAE, 3u << 20, 100000, 3u << 20);
    pump();
    /* the shuffle really reordered: windows held chunks that came early */
    ASSERT_TRUE(S[SIDE_A].max_held > 10);
    ASSERT_TRUE(S[SIDE_B].max_held > 10);
    ASSERT_EQ(qa->nerr + qb->nerr, 0);
    struct iwarp_wc wc = wc_next(&qa->rcq, 0xA0, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    ASSERT_EQ_U(wc.byte_len, 64 * KIB);
    same(SIDE_A, 0, SIDE_B, 0, 64 * KIB);
    for (unsigned i = 0; i < 20; i++) {
        wc = wc_next(&qa->rcq, 0xA1 + i, IWARP_WC_SUCCESS, IWARP_WC_RECV);
        ASSERT_EQ_U(wc.byte_len, 100 + i);
        same(SIDE_A, 65536 + i * 256, SIDE_B, 262144 + i * 256, 100 + i);
    }
    same(SIDE_A, 1u << 20, SIDE_B, 65536, 128 * KIB);
    wc_next(&qb->scq, 0xB0, IWARP_WC_SUCCESS, IWARP_WC_SEND);
    wc_next(&qb->scq, 0xB1, IWARP_WC_SUCCESS, IWARP_WC_RDMA_WRITE);
    for (unsigned i = 0; i < 20; i++)
        wc_next(&qb->scq, 0xB2 + i, IWARP_WC_SUCCESS, IWARP_WC_SEND);
    wc_next(&qb->rcq, 0xBF, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    same(SIDE_B, 2u << 20, SIDE_A, 2u << 20, 70000);
    wc_next(&qa->scq, 0xAF, IWARP_WC_SUCCESS, IWARP_WC_SEND);
    wc_next(&qa->scq, 0xAE, IWARP_WC_SUCCESS, IWARP_WC_RDMA_READ);
    same(SIDE_A, 3u << 20, SIDE_B, 3u << 20, 100000);
    finish();
}

TEST(tx_next_returns_the_same_chunk_until_tx_done)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(1, true, eng_qp(qa), eng_qp(qb));
    for (unsigned i = 0; i < 3; i++) {
        fill(SIDE_A, i * 4096, 1000, 50 + i); /* one segment each */
        post_recv(qb, 0xB0 + i, 65536 + i * 4096, 4096);
        post_send(qa, IWARP_WR_SEND, 0xA0 + i, i * 4096, 1000, 0);
    }
    const struct iwarp_llp_assoc_chunk *c1 = iwarp_llp_assoc_tx_next(&S[SIDE_A].a);
    ASSERT_TRUE(c1 != NULL);
    ASSERT_EQ_U(c1->ppid, IWARP_SCTP_PPID_DDP_SEGMENT);
    uint8_t first[2 + IWARP_DDP_TX_HDR_MAX];
    size_t hl = c1->iov[0].iov_len + c1->iov[1].iov_len;
    ASSERT_TRUE(hl <= sizeof first);
    memcpy(first, c1->iov[0].iov_base, c1->iov[0].iov_len);
    memcpy(first + c1->iov[0].iov_len, c1->iov[1].iov_base, c1->iov[1].iov_len);
    size_t len1 = c1->len;
    for (int k = 0; k < 5; k++) { /* the send buffer stays full */
        const struct iwarp_llp_assoc_chunk *c = iwarp_llp_assoc_tx_next(&S[SIDE_A].a);
        ASSERT_TRUE(c == c1);
        ASSERT_EQ_U(c->len, len1);
        ASSERT_MEM_EQ(c->iov[0].iov_base, first, 2);
        ASSERT_MEM_EQ(c->iov[1].iov_base, first + 2, c->iov[1].iov_len);
        ASSERT_TRUE(iwarp_llp_assoc_tx_ready(&S[SIDE_A].a));
    }
    cq_empty(&qa->scq);                     /* nothing completes before the chunk is handed over */
    ASSERT_EQ(first[0] << 8 | first[1], 1); /* after the Initiate's 0 */
    /* the test's ship() takes it (a gathered copy) and the rest, asking twice now and then */
    STALL = true;
    pump();
    ASSERT_EQ_U(log_count(SIDE_A, 1, IWARP_SCTP_PPID_DDP_SEGMENT), 3u);
    ASSERT_EQ(log_at(SIDE_A, 1, 1)->ssn, 1);
    ASSERT_EQ(log_at(SIDE_A, 1, 2)->ssn, 2); /* the next one after tx_done, no gap */
    for (unsigned i = 0; i < 3; i++) {
        wc_next(&qa->scq, 0xA0 + i, IWARP_WC_SUCCESS, IWARP_WC_SEND);
        struct iwarp_wc wc = wc_next(&qb->rcq, 0xB0 + i, IWARP_WC_SUCCESS, IWARP_WC_RECV);
        ASSERT_EQ_U(wc.byte_len, 1000u);
        same(SIDE_B, 65536 + i * 4096, SIDE_A, i * 4096, 1000);
    }
    finish();
}

/* ---- errors -------------------------------------------------------------------------------- */

/* B ended stream sid's session with a Terminate; A answers; both CLOSED. */
static void both_close_after_b_failed(uint16_t sid, int err)
{
    ASSERT_EQ(S[SIDE_B].st[sid].err, err);
    ASSERT_EQ(S[SIDE_B].st[sid].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_TRUE(iwarp_llp_assoc_tx_ready(&S[SIDE_B].a));
    pump();
    const struct logent *t = log_at(SIDE_B, sid, -1);
    ASSERT_EQ_U(t->ppid, IWARP_SCTP_PPID_DDP_CONTROL);
    ASSERT_EQ(t->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(log_at(SIDE_A, sid, -1)->fc, IWARP_SCTP_FC_TERMINATE); /* A's answer (§6.2) */
    ASSERT_TRUE(take(SIDE_A, sid) & EV_CLOSED);
    ASSERT_TRUE(take(SIDE_B, sid) & EV_CLOSED);
}

TEST(duplicate_ddp_ssn_ends_the_session)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    post_recv(qb, 0xB0, 0, 4096);
    post_recv(qb, 0xB1, 4096, 4096);
    post_send(qa, IWARP_WR_SEND, 0xA0, 0, 100, 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    struct wchunk dup = copy_chunk(SIDE_A, 0);
    ASSERT_EQ_U(deliver(SIDE_A), 1u);
    wc_next(&qb->rcq, 0xB0, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    size_t freed = NFREED;
    /* §6.1: no repeats; §10: an invalid DDP-SSN MAY end the stream: it does */
    ASSERT_EQ(inject(SIDE_B, dup), IWARP_ERR_SCTP_SSN);
    ASSERT_EQ_U(NFREED, freed + 1); /* dropped and given back at once */
    ASSERT_EQ_U(S[SIDE_B].a.rx_dropped, 1u);
    ASSERT_EQ(qb->qp.stream.state, IWARP_CORE_STREAM_ERROR);
    wc_next(&qb->rcq, 0xB1, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_TRUE(qb->nerr > 0); /* not an orderly close */
    both_close_after_b_failed(0, IWARP_ERR_SCTP_SSN);
    finish();
}

TEST(duplicate_of_a_held_chunk_and_a_ddp_ssn_beyond_the_window)
{
    world(8, 1400, 4, true); /* 8 slots per stream */
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    establish(1, true, eng_qp(qp_new(SIDE_A, 1)), eng_qp(qp_new(SIDE_B, 1)));
    for (unsigned i = 0; i < 4; i++)
        post_recv(qb, 0xB0 + i, i * 4096, 4096);
    /* B expects DDP-SSN 1 on both streams (the Initiate took 0) */
    struct wchunk early = send_chunk(0, 3, 3, 10);
    void *early_buf = early.buf;
    ASSERT_EQ(inject(SIDE_B, early), 0); /* held: two ahead */
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&S[SIDE_B].st[0].ssn_rx), 1);
    ASSERT_TRUE(is_live(early_buf));              /* the window keeps it */
    struct wchunk edge = send_chunk(0, 9, 9, 10); /* 8 ahead: the last slot */
    void *edge_buf = edge.buf;
    ASSERT_EQ(inject(SIDE_B, edge), 0);
    ASSERT_EQ(iwarp_sess_ssn_rx_held(&S[SIDE_B].st[0].ssn_rx), 2);
    ASSERT_EQ(inject(SIDE_B, send_chunk(0, 3, 3, 10)), IWARP_ERR_SCTP_SSN); /* held twice */
    both_close_after_b_failed(0, IWARP_ERR_SCTP_SSN);
    ASSERT_TRUE(is_live(early_buf) && is_live(edge_buf)); /* until release() */
    release(SIDE_B, 0);
    ASSERT_FALSE(is_live(early_buf) || is_live(edge_buf));
    release(SIDE_A, 0);

    /* stream 1: 9 ahead of the expected DDP-SSN does not fit in 8 slots (§10 validity) */
    ASSERT_EQ(inject(SIDE_B, send_chunk(1, 10, 10, 10)), IWARP_ERR_SCTP_SSN);
    both_close_after_b_failed(1, IWARP_ERR_SCTP_SSN);
    /* stream 0 was released; stream 1 waits for its release() */
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(&S[SIDE_B].a), 1u);
    ASSERT_EQ(iwarp_llp_assoc_free_stream(&S[SIDE_B].a), 0);
    finish();
}

TEST(ordered_chunk_and_unknown_ppid_end_the_session)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    establish(1, true, eng_qp(qp_new(SIDE_A, 1)), eng_qp(qp_new(SIDE_B, 1)));
    post_recv(qb, 0xB0, 0, 4096);
    /* §10: every chunk MUST be unordered; A's Send goes out ordered: it conforms to no legal
     * pattern, §6.1 "the DDP Stream Session MUST be terminated". It holds its DDP-SSN's place
     * (A counted it, §5.2.1): A's answering Terminate after it still arrives in order. */
    post_send(qa, IWARP_WR_SEND, 0xA0, 0, 10, 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    FL[SIDE_A].c[0].unordered = false;
    void *buf = FL[SIDE_A].c[0].buf;
    RX_ALLOW = IWARP_ERR_SCTP_PPID;
    ASSERT_EQ_U(deliver(SIDE_A), 1u);
    RX_ALLOW = 0;
    ASSERT_EQ_U(RX_ERRS, 1u);
    ASSERT_FALSE(is_live(buf)); /* given back at once */
    ASSERT_EQ(qb->qp.stream.state,
              IWARP_CORE_STREAM_ERROR);                /* the engine is closed: the Send never */
    wc_next(&qb->rcq, 0xB0, IWARP_WC_WR_FLUSH_ERR, 0); /* reached the receive */
    both_close_after_b_failed(0, IWARP_ERR_SCTP_PPID);
    ASSERT_EQ(log_at(SIDE_A, 0, -1)->ssn, 2); /* after the ordered Send's 1 */

    /* §5.2: PPIDs 16 and 17 only; the octets of another PPID are no DDP-SSN */
    struct wchunk w = send_chunk(1, 1, 1, 10);
    w.ppid = 18;
    buf = w.buf;
    ASSERT_EQ(inject(SIDE_B, w), IWARP_ERR_SCTP_PPID);
    ASSERT_FALSE(is_live(buf));
    both_close_after_b_failed(1, IWARP_ERR_SCTP_PPID);

    /* no session on the stream: nothing to end, nothing opened; still given back */
    ASSERT_EQ(inject(SIDE_B,
                     (struct wchunk){
                         .sid = 2, .ppid = 0, .unordered = true, .buf = chunk_alloc(8), .len = 8}),
              IWARP_ERR_SCTP_PPID);
    struct wchunk init = ctl_chunk(2, 0, IWARP_SCTP_FC_INITIATE);
    init.unordered = false;
    ASSERT_EQ(inject(SIDE_B, init), IWARP_ERR_SCTP_PPID);
    ASSERT_EQ(S[SIDE_B].st[2].state, IWARP_LLP_ASSOC_FREE);
    ASSERT_EQ_U(take(SIDE_B, 2), 0u);
    /* a chunk too short for its DDP-SSN, and one for a stream the association lacks */
    ASSERT_EQ(inject(SIDE_B,
                     (struct wchunk){
                         .sid = 2, .ppid = 16, .unordered = true, .buf = chunk_alloc(1), .len = 1}),
              IWARP_ERR_SHORT);
    ASSERT_TRUE(inject(SIDE_B, send_chunk(NS, 0, 1, 1)) < 0);
    ASSERT_EQ_U(NLIVE, 0u);
    finish();
}

TEST(segment_chunk_without_a_ddp_segment_is_a_ddp_error)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    post_recv(qb, 0xB0, 0, 4096);
    post_send(qa, IWARP_WR_SEND, 0xA0, 0, 100, 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    FL[SIDE_A].c[0].len = IWARP_SCTP_SSN_LEN; /* cut after its DDP-SSN on the way */
    ASSERT_EQ_U(deliver(SIDE_A), 1u);
    /* it took its place in the sequence and DDP refused it (RFC 5041 §7.1: no header) */
    ASSERT_EQ(qb->qp.stream.state, IWARP_CORE_STREAM_TERMINATING);
    ASSERT_EQ(qb->qp.term_cause.layer, IWARP_TERM_LAYER_DDP);
    pump();
    /* B's RDMAP Terminate, then its session Terminate after it (§6.2); A answers */
    ASSERT_EQ(log_at(SIDE_B, 0, -2)->opcode, IWARP_RDMAP_OP_TERMINATE);
    ASSERT_EQ(log_at(SIDE_B, 0, -1)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(log_at(SIDE_A, 0, -1)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(qa->qp.stream.state, IWARP_CORE_STREAM_ERROR);
    wc_next(&qb->rcq, 0xB0, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_TRUE(take(SIDE_A, 0) & EV_CLOSED);
    ASSERT_TRUE(take(SIDE_B, 0) & EV_CLOSED);
    finish();
}

TEST(segment_before_the_session_is_established)
{
    world(0, 1400, 4, true);
    /* no session on the stream: the segment has nobody to go to; dropped, nothing opened */
    ASSERT_EQ(inject(SIDE_B, send_chunk(0, 0, 1, 10)), 0);
    ASSERT_EQ_U(S[SIDE_B].a.rx_dropped, 1u);
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(&S[SIDE_B].a), 0u);
    ASSERT_EQ_U(take(SIDE_B, 0), 0u);
    ASSERT_EQ_U(NLIVE, 0u);

    /* passive, PENDING: the active side's segment after its Initiate and before any Accept
     * breaks §6.2/§6.6: the session is terminated (§6.1) and accept() comes too late */
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    post_recv(qa, 0xA0, 0, 64);
    struct iwarp_sess_cfg c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa), 4, 4, NULL), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 0), EV_REQ);
    ASSERT_EQ(inject(SIDE_B, send_chunk(0, 1, 1, 10)), IWARP_ERR_SESSION_SEQUENCE);
    ASSERT_EQ_U(S[SIDE_B].pend.count, 0u);
    struct iwarp_sess_answer ans = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, 0, &ans, eng_qp(qb), 4, 4), IWARP_ERR_STATE);
    ASSERT_EQ(qb->qp.stream.state, IWARP_CORE_STREAM_IDLE); /* never attached */
    ASSERT_EQ(S[SIDE_B].st[0].err, IWARP_ERR_SESSION_SEQUENCE);
    /* B's Terminate (its first chunk: DDP-SSN 0) answers A's Initiate: §6.4's sequence is
     * complete, nobody answers it, both streams are CLOSED */
    pump();
    ASSERT_EQ(log_at(SIDE_B, 0, 0)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(log_at(SIDE_B, 0, 0)->ssn, 0);
    ASSERT_EQ_U(log_count(SIDE_A, 0, IWARP_SCTP_PPID_DDP_CONTROL), 1u); /* the Initiate only */
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_CLOSED);
    wc_next(&qa->rcq, 0xA0, IWARP_WC_WR_FLUSH_ERR, 0); /* A's engine never started: flushed */
    ASSERT_EQ(S[SIDE_A].st[0].err, IWARP_ERR_SESSION_TERMINATED);
    release(SIDE_A, 0);
    release(SIDE_B, 0);

    /* active, INITIATED: a segment where the Accept (DDP-SSN 0) belongs */
    qa = qp_new(SIDE_A, 1);
    post_recv(qa, 0xA1, 0, 64);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa), 4, 4, NULL), 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u); /* the Initiate leaves, and is lost */
    discard_flights();
    ASSERT_EQ(inject(SIDE_A, send_chunk(0, 0, 1, 10)), IWARP_ERR_SESSION_SEQUENCE);
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_EQ(S[SIDE_A].st[0].err, IWARP_ERR_SESSION_SEQUENCE);
    wc_next(&qa->rcq, 0xA1, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    ASSERT_EQ(log_at(SIDE_A, 0, -1)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(log_at(SIDE_A, 0, -1)->ssn, 1);
    finish();
}

TEST(initiates_beyond_the_pending_limit_are_terminated)
{
    world(0, 1400, 1, true); /* one Initiate may await the ULP (§6.4) */
    struct qpe *qa0 = qp_new(SIDE_A, 0), *qa1 = qp_new(SIDE_A, 1);
    struct iwarp_sess_cfg c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa0), 4, 4, NULL), 0);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 1, &c, eng_qp(qa1), 4, 4, NULL), 0);
    RX_ALLOW = IWARP_ERR_SESSION_PENDING; /* rx_chunk() says why the session ended */
    pump();
    ASSERT_EQ_U(RX_ERRS, 1u);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_REQ);
    ASSERT_EQ_U(S[SIDE_B].pend.count, 1u);
    /* the second is answered with a Terminate, the owner is never asked */
    uint32_t ev = take(SIDE_B, 1);
    ASSERT_FALSE(ev & EV_REQ);
    ASSERT_EQ(log_at(SIDE_B, 1, 0)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(log_at(SIDE_B, 1, 0)->ssn, 0);
    ASSERT_EQ(S[SIDE_B].st[1].err, IWARP_ERR_SESSION_PENDING);
    ASSERT_EQ_U(ev, EV_CLOSED); /* Initiate, Terminate: complete, B awaits nothing more */
    ASSERT_EQ_U(take(SIDE_A, 1), EV_CLOSED);
    ASSERT_EQ(S[SIDE_A].st[1].err, IWARP_ERR_SESSION_TERMINATED);
    ASSERT_EQ_U(log_count(SIDE_A, 1, IWARP_SCTP_PPID_DDP_CONTROL), 1u); /* no answer (§6.4) */
    /* §6.6: nothing of that session is outstanding: A may start another one there at once */
    release(SIDE_A, 1);
    release(SIDE_B, 1);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 1, &c, eng_qp(qa1), 4, 4, NULL), 0);
    pump();
    ASSERT_EQ_U(RX_ERRS, 2u);
    ASSERT_EQ(log_at(SIDE_A, 1, -1)->ssn, 0);
    ASSERT_EQ_U(take(SIDE_B, 1), EV_CLOSED); /* still over the limit: Terminated again */
    ASSERT_EQ_U(take(SIDE_A, 1), EV_CLOSED);
    release(SIDE_A, 1);
    release(SIDE_B, 1);
    /* the first one goes on */
    struct qpe *qb = qp_new(SIDE_B, 0);
    struct iwarp_sess_answer ans = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, 0, &ans, eng_qp(qb), 4, 4), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_A, 0), EV_EST);
    finish();
}

/* ---- teardown ------------------------------------------------------------------------------ */

TEST(graceful_disconnect_drains_then_terminates_and_the_stream_is_reused)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(3, true, eng_qp(qa), eng_qp(qb));
    fill(SIDE_A, 0, 8192, 60);
    fill(SIDE_A, 16384, 2000, 61);
    fill(SIDE_B, 32768, 5000, 62);
    post_recv(qb, 0xB0, 0, 4096);
    post_send(qa, IWARP_WR_RDMA_WRITE, 0xA0, 0, 8192, 65536);
    post_send(qa, IWARP_WR_SEND, 0xA1, 16384, 2000, 0);
    post_send(qa, IWARP_WR_RDMA_READ, 0xA2, 32768, 5000, 32768);
    iwarp_llp_assoc_disconnect(&S[SIDE_A].a, 3, 0);
    ASSERT_EQ(post_send_rc(qa, IWARP_WR_SEND, 0xA3, 0, 1, 0), IWARP_ERR_STATE);
    pump();
    /* everything posted completed (drained, not flushed) */
    wc_next(&qa->scq, 0xA0, IWARP_WC_SUCCESS, IWARP_WC_RDMA_WRITE);
    wc_next(&qa->scq, 0xA1, IWARP_WC_SUCCESS, IWARP_WC_SEND);
    wc_next(&qa->scq, 0xA2, IWARP_WC_SUCCESS, IWARP_WC_RDMA_READ);
    cq_empty(&qa->scq);
    same(SIDE_B, 65536, SIDE_A, 0, 8192);
    same(SIDE_A, 32768, SIDE_B, 32768, 5000);
    wc_next(&qb->rcq, 0xB0, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    /* §6.2: A's Terminate is its last chunk, after its last segment; B answers */
    const struct logent *last = log_at(SIDE_A, 3, -1);
    ASSERT_EQ_U(last->ppid, IWARP_SCTP_PPID_DDP_CONTROL);
    ASSERT_EQ(last->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(log_at(SIDE_A, 3, -2)->ppid, IWARP_SCTP_PPID_DDP_SEGMENT);
    ASSERT_EQ_U(log_count(SIDE_A, 3, IWARP_SCTP_PPID_DDP_CONTROL), 2u); /* Initiate, Terminate */
    ASSERT_EQ(log_at(SIDE_B, 3, -1)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ_U(log_count(SIDE_B, 3, IWARP_SCTP_PPID_DDP_CONTROL), 2u); /* Accept, Terminate */
    ASSERT_EQ_U(take(SIDE_A, 3), EV_CLOSED);
    ASSERT_EQ_U(take(SIDE_B, 3), EV_CLOSED);
    ASSERT_TRUE(S[SIDE_A].st[3].graceful && S[SIDE_B].st[3].graceful);
    ASSERT_EQ(qa->qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(qb->qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(qa->nerr + qb->nerr, 0); /* orderly: no fatal event */
    ASSERT_EQ(iwarp_llp_assoc_free_stream(&S[SIDE_A].a), 0);
    struct iwarp_sess_cfg c;
    iwarp_sess_cfg_default(&c, IWARP_SESS_PASSIVE);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 3, &c, eng_qp(qa), 1, 1, NULL), IWARP_ERR_INVAL);
    c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 3, &c, eng_qp(qa), 1, 1, NULL), IWARP_ERR_BUSY);
    release(SIDE_A, 3);
    release(SIDE_B, 3);
    ASSERT_EQ_U(iwarp_llp_assoc_in_use(&S[SIDE_A].a) + iwarp_llp_assoc_in_use(&S[SIDE_B].a), 0u);

    /* §6.6: a new session on the same stream, DDP-SSN from 0 on both sides */
    size_t a0 = NLOG[SIDE_A], b0 = NLOG[SIDE_B];
    struct qpe *qa2 = qp_new(SIDE_A, 1), *qb2 = qp_new(SIDE_B, 1);
    establish(3, true, eng_qp(qa2), eng_qp(qb2));
    ASSERT_EQ(LOG[SIDE_A][a0].ssn, 0);
    ASSERT_EQ(LOG[SIDE_A][a0].fc, IWARP_SCTP_FC_ENH_INITIATE);
    ASSERT_EQ(LOG[SIDE_B][b0].ssn, 0);
    ASSERT_EQ(LOG[SIDE_B][b0].fc, IWARP_SCTP_FC_ENH_ACCEPT);
    post_recv(qb2, 0xB1, 0, 4096);
    fill(SIDE_A, 0, 1000, 63);
    post_send(qa2, IWARP_WR_SEND, 0xA4, 0, 1000, 0);
    pump();
    ASSERT_EQ(LOG[SIDE_A][NLOG[SIDE_A] - 1].ssn, 1);
    wc_next(&qb2->rcq, 0xB1, IWARP_WC_SUCCESS, IWARP_WC_RECV);
    same(SIDE_B, 0, SIDE_A, 0, 1000);
    finish();
}

TEST(closed_waits_until_our_last_chunk_is_handed_to_sctp)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    /* both close at once; B's Terminate waits for room in its send buffer */
    iwarp_llp_assoc_disconnect(&S[SIDE_A].a, 0, 0);
    iwarp_llp_assoc_disconnect(&S[SIDE_B].a, 0, 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    const struct iwarp_llp_assoc_chunk *c = iwarp_llp_assoc_tx_next(&S[SIDE_B].a);
    ASSERT_TRUE(c != NULL && c->ppid == IWARP_SCTP_PPID_DDP_CONTROL);
    ASSERT_EQ_U(deliver(SIDE_A), 1u); /* A's Terminate crosses it */
    /* §6.2: B's Terminate is its final chunk and has not left: released now, it never would,
     * and A would wait for it for ever */
    ASSERT_EQ_U(take(SIDE_B, 0), 0u);
    ASSERT_EQ(S[SIDE_B].st[0].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_TRUE(iwarp_llp_assoc_tx_next(&S[SIDE_B].a) == c);
    ASSERT_EQ_U(ship(SIDE_B), 1u);
    ASSERT_EQ(log_at(SIDE_B, 0, -1)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_CLOSED);
    pump();
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    ASSERT_EQ(qa->nerr + qb->nerr, 0);

    /* the same for a Reject crossed by the active side's withdrawal (abort) */
    release(SIDE_A, 0);
    release(SIDE_B, 0);
    struct iwarp_sess_cfg cfg = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &cfg, eng_qp(qp_new(SIDE_A, 1)), 4, 4, NULL),
              0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 0), EV_REQ);
    ASSERT_EQ(iwarp_llp_assoc_reject(&S[SIDE_B].a, 0, NULL), 0);
    c = iwarp_llp_assoc_tx_next(&S[SIDE_B].a);
    ASSERT_TRUE(c != NULL && c->ppid == IWARP_SCTP_PPID_DDP_CONTROL);
    iwarp_llp_assoc_abort(&S[SIDE_A].a, 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    ASSERT_EQ_U(deliver(SIDE_A), 1u);
    ASSERT_EQ_U(take(SIDE_B, 0), 0u);
    ASSERT_EQ_U(ship(SIDE_B), 1u);
    ASSERT_EQ(log_at(SIDE_B, 0, -1)->fc, IWARP_SCTP_FC_REJECT);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_CLOSED);
    /* A, over already, takes the Reject as B's final chunk (§6.3): no Terminate follows it */
    ASSERT_EQ_U(take(SIDE_A, 0), 0u);
    pump();
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    finish();
}

TEST(abort_flushes_terminates_and_gives_held_chunks_back)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    post_recv(qb, 0xB0, 0, 4096);
    post_recv(qb, 0xB1, 4096, 4096);
    post_recv(qa, 0xAF, 0, 4096);
    for (unsigned i = 0; i < 3; i++)
        post_send(qa, IWARP_WR_SEND, 0xA0 + i, i * 4096, 3000, 0);
    post_send(qa, IWARP_WR_RDMA_READ, 0xA3, 65536, 4096, 65536);
    /* a segment produced and not sent (full send buffer), and a chunk from B held early */
    const struct iwarp_llp_assoc_chunk *c = iwarp_llp_assoc_tx_next(&S[SIDE_A].a);
    ASSERT_TRUE(c != NULL && c->ppid == IWARP_SCTP_PPID_DDP_SEGMENT);
    struct wchunk early = send_chunk(0, 3, 3, 10);
    void *held = early.buf;
    ASSERT_EQ(inject(SIDE_A, early), 0);
    ASSERT_TRUE(is_live(held));

    iwarp_llp_assoc_abort(&S[SIDE_A].a, 0);
    /* the engine is detached; flushing it is the owner's call (llp_assoc.h) */
    iwarp_core_qp_llp_closed(&qa->qp, false);
    for (unsigned i = 0; i < 4; i++)
        wc_next(&qa->scq, 0xA0 + i, IWARP_WC_WR_FLUSH_ERR, 0);
    wc_next(&qa->rcq, 0xAF, IWARP_WC_WR_FLUSH_ERR, 0);
    /* the withdrawn segment gave its DDP-SSN back: the Terminate takes 1, no gap (§6) */
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    const struct logent *t = log_at(SIDE_A, 0, -1);
    ASSERT_EQ_U(t->ppid, IWARP_SCTP_PPID_DDP_CONTROL);
    ASSERT_EQ(t->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(t->ssn, 1);
    ASSERT_EQ_U(log_count(SIDE_A, 0, IWARP_SCTP_PPID_DDP_SEGMENT), 0u);
    ASSERT_EQ_U(take(SIDE_A, 0), 0u); /* CLOSED once B answers */
    pump();
    /* B: the peer's Terminate ends its session; its engine closes: receives flushed */
    wc_next(&qb->rcq, 0xB0, IWARP_WC_WR_FLUSH_ERR, 0);
    wc_next(&qb->rcq, 0xB1, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_EQ(S[SIDE_B].st[0].err, IWARP_ERR_SESSION_TERMINATED);
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_CLOSED);
    ASSERT_TRUE(is_live(held));
    release(SIDE_A, 0);
    ASSERT_FALSE(is_live(held));
    release(SIDE_B, 0);
    ASSERT_EQ_U(NLIVE, 0u);
    finish();
}

TEST(abort_of_an_unanswered_session)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0);
    post_recv(qa, 0xA0, 0, 64);
    struct iwarp_sess_cfg c = active_cfg(true);
    /* the Initiate never left: withdrawn, nothing on the wire, CLOSED at once */
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa), 4, 4, NULL), 0);
    iwarp_llp_assoc_abort(&S[SIDE_A].a, 0);
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    ASSERT_EQ_U(ship(SIDE_A), 0u);
    release(SIDE_A, 0);
    /* it left: a Terminate follows it; B, PENDING, answers */
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa), 4, 4, NULL), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 0), EV_REQ);
    iwarp_llp_assoc_abort(&S[SIDE_A].a, 0);
    pump();
    ASSERT_EQ(log_at(SIDE_A, 0, -1)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_CLOSED);
    ASSERT_EQ_U(S[SIDE_B].pend.count, 0u);
    release(SIDE_A, 0);
    release(SIDE_B, 0);

    /* the Terminate overtakes its Initiate (both unordered): B holds it, and once the
     * Initiate is in, the session is withdrawn before the owner took the REQUEST: the owner
     * is never asked, CLOSED alone follows B's answer */
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 0, &c, eng_qp(qa), 4, 4, NULL), 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    iwarp_llp_assoc_abort(&S[SIDE_A].a, 0);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    ASSERT_EQ_U(FL[SIDE_A].n, 2u);
    struct wchunk first = FL[SIDE_A].c[0];
    FL[SIDE_A].c[0] = FL[SIDE_A].c[1];
    FL[SIDE_A].c[1] = first;
    ASSERT_EQ_U(deliver(SIDE_A), 2u);
    ASSERT_EQ_U(take(SIDE_B, 0), 0u);
    ASSERT_EQ_U(S[SIDE_B].pend.count, 0u);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 0), EV_CLOSED);
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    finish();
}

TEST(a_closed_engine_never_sends_its_unsent_segment)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 0), *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(qa), eng_qp(qb));
    post_send(qa, IWARP_WR_RDMA_WRITE, 0xA0, 0, 1000, 0);
    const struct iwarp_llp_assoc_chunk *c = iwarp_llp_assoc_tx_next(&S[SIDE_A].a);
    ASSERT_TRUE(c != NULL && c->ppid == IWARP_SCTP_PPID_DDP_SEGMENT); /* waits for room */
    /* meanwhile B closes: its Terminate reaches A, A's engine closes and flushes the Write,
     * whose memory the ULP may now reuse: the segment pointing at it must not go out */
    iwarp_llp_assoc_disconnect(&S[SIDE_B].a, 0, 0);
    pump_from(SIDE_B);
    wc_next(&qa->scq, 0xA0, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_EQ(qa->qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    const struct logent *t = log_at(SIDE_A, 0, -1);
    ASSERT_EQ_U(t->ppid, IWARP_SCTP_PPID_DDP_CONTROL);
    ASSERT_EQ(t->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ(t->ssn, 1); /* the withdrawn segment's DDP-SSN */
    pump();
    ASSERT_EQ_U(take(SIDE_A, 0), EV_CLOSED);
    ASSERT_EQ_U(take(SIDE_B, 0), EV_CLOSED);
    finish();
}

TEST(lost_association_flushes_every_engine)
{
    world(0, 1400, 4, true);
    struct qpe *qa0 = qp_new(SIDE_A, 0), *qb0 = qp_new(SIDE_B, 0);
    struct qpe *qa1 = qp_new(SIDE_A, 1), *qb1 = qp_new(SIDE_B, 1);
    establish(0, true, eng_qp(qa0), eng_qp(qb0));
    establish(1, true, eng_qp(qa1), eng_qp(qb1));
    struct qpe *qa2 = qp_new(SIDE_A, 2);
    post_recv(qa2, 0xC0, 0, 64);
    struct iwarp_sess_cfg c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 2, &c, eng_qp(qa2), 4, 4, NULL), 0);
    post_recv(qa0, 0xA0, 0, 4096);
    post_recv(qb1, 0xB0, 0, 4096);
    post_send(qa0, IWARP_WR_SEND, 0xA1, 0, 100, 0);
    post_send(qa1, IWARP_WR_RDMA_WRITE, 0xA2, 0, 100, 0);
    post_send(qb0, IWARP_WR_SEND, 0xB1, 0, 100, 0);
    const struct iwarp_llp_assoc_chunk *ch = iwarp_llp_assoc_tx_next(&S[SIDE_A].a);
    ASSERT_TRUE(ch != NULL); /* produced, not sent */
    void *held = NULL;
    {
        struct wchunk early = send_chunk(1, 5, 5, 10);
        held = early.buf;
        ASSERT_EQ(inject(SIDE_A, early), 0);
    }
    ASSERT_TRUE(is_live(held));
    iwarp_llp_assoc_lost(&S[SIDE_A].a, false);
    ASSERT_FALSE(is_live(held)); /* given back */
    for (uint16_t i = 0; i < 3; i++)
        ASSERT_TRUE(take(SIDE_A, i) & EV_CLOSED);
    ASSERT_EQ(S[SIDE_A].st[0].err, IWARP_ERR_SCTP_ASSOC_LOST);
    wc_next(&qa0->rcq, 0xA0, IWARP_WC_WR_FLUSH_ERR, 0);
    wc_next(&qa0->scq, 0xA1, IWARP_WC_WR_FLUSH_ERR, 0);
    wc_next(&qa1->scq, 0xA2, IWARP_WC_WR_FLUSH_ERR, 0);
    wc_next(&qa2->rcq, 0xC0, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_EQ(qa0->qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_TRUE(qa0->nerr > 0 && qa1->nerr > 0); /* not graceful: fatal events */
    ASSERT_TRUE(iwarp_llp_assoc_tx_next(&S[SIDE_A].a) == NULL);
    ASSERT_FALSE(iwarp_llp_assoc_tx_ready(&S[SIDE_A].a));
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 3, &c, eng_qp(qp_new(SIDE_A, 3)), 4, 4, NULL),
              IWARP_ERR_STATE);
    size_t freed = NFREED;
    ASSERT_TRUE(inject(SIDE_A, send_chunk(0, 1, 1, 1)) < 0); /* nothing is taken any more */
    ASSERT_EQ_U(NFREED, freed + 1);

    /* B's side of it, orderly this time */
    discard_flights();
    iwarp_llp_assoc_lost(&S[SIDE_B].a, true);
    ASSERT_TRUE(take(SIDE_B, 0) & EV_CLOSED);
    ASSERT_TRUE(take(SIDE_B, 1) & EV_CLOSED);
    wc_next(&qb0->scq, 0xB1, IWARP_WC_WR_FLUSH_ERR, 0);
    wc_next(&qb1->rcq, 0xB0, IWARP_WC_WR_FLUSH_ERR, 0);
    ASSERT_EQ(qb0->nerr + qb1->nerr, 0);
    finish();
}

/* ---- policy: the in-flight cap, deadlines, lingers, streams let go of ----------------------- */

/* A fresh world whose associations have the in-flight cap `cap` and the linger `linger_ns`,
 * with stream 0 established between A's QP *qa and B's *qb. Returns A's association. */
static struct iwarp_llp_assoc *policy_world(uint32_t cap, uint64_t linger_ns, struct qpe **qa,
                                            struct qpe **qb)
{
    CFG_CAP = cap;
    CFG_LINGER = linger_ns;
    world(0, 1400, 4, true);
    *qa = qp_new(SIDE_A, 0);
    *qb = qp_new(SIDE_B, 0);
    establish(0, true, eng_qp(*qa), eng_qp(*qb));
    return &S[SIDE_A].a;
}

/* At cfg.inflight_max chunks in flight the next one is produced and held: tx_next() gives it
 * only once SCTP's count (unacked()) is below the cap; at the cap still, the association waits
 * for packets (packets_in() says so once). */
TEST(in_flight_cap_holds_the_next_chunk_until_sctp_counts_fewer)
{
    struct qpe *qa, *qb;
    struct iwarp_llp_assoc *a = policy_world(3, 0, &qa, &qb);
    for (unsigned i = 0; i < 5; i++) {
        post_recv(qb, 0xB0 + i, i * 256, 256);
        post_send(qa, IWARP_WR_SEND, 0xA0 + i, i * 256, 100 + i, 0);
    }
    ASSERT_FALSE(iwarp_llp_assoc_tx_capped(a));
    ASSERT_EQ_U(ship(SIDE_A), 3u); /* tx_ready() is false at the cap (ship() checks it) */
    ASSERT_TRUE(iwarp_llp_assoc_tx_capped(a));
    ASSERT_FALSE(iwarp_llp_assoc_packets_in(a)); /* nothing waits for packets yet */
    /* SCTP still counts all three: blocked until packets come in */
    iwarp_llp_assoc_unacked(a, 3);
    ASSERT_TRUE(iwarp_llp_assoc_tx_next(a) == NULL);
    ASSERT_TRUE(iwarp_llp_assoc_tx_capped(a));
    ASSERT_TRUE(iwarp_llp_assoc_packets_in(a));
    ASSERT_FALSE(iwarp_llp_assoc_packets_in(a)); /* once */
    /* one acknowledged: the held chunk goes, then the cap holds again */
    iwarp_llp_assoc_unacked(a, 2);
    ASSERT_FALSE(iwarp_llp_assoc_packets_in(a));
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    ASSERT_EQ(log_at(SIDE_A, 0, -1)->ssn, 4); /* after the Initiate (0): the fourth Send */
    ASSERT_TRUE(iwarp_llp_assoc_tx_capped(a));
    /* all acknowledged (deliver() reports it): the rest goes, in order */
    pump();
    for (unsigned i = 0; i < 5; i++) {
        struct iwarp_wc wc = wc_next(&qb->rcq, 0xB0 + i, IWARP_WC_SUCCESS, IWARP_WC_RECV);
        ASSERT_EQ_U(wc.byte_len, 100 + i);
    }
    ASSERT_FALSE(iwarp_llp_assoc_tx_capped(a));
    finish();
}

/* §6.2 does not oblige the peer to answer our Terminate: the stream waits cfg.linger_ns for
 * it, counted from the first handle_timeout() after it began ending, then reports TIMEDOUT;
 * one the owner let go of is released then, without an event. */
TEST(a_terminate_the_peer_does_not_answer_times_out_after_the_linger)
{
    struct qpe *qa, *qb;
    struct iwarp_llp_assoc *a = policy_world(0, 1000, &qa, &qb);
    struct qpe *qa1 = qp_new(SIDE_A, 1), *qb1 = qp_new(SIDE_B, 1);
    establish(1, true, eng_qp(qa1), eng_qp(qb1));
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), UINT64_MAX);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 1));

    iwarp_llp_assoc_abort(a, 0);
    iwarp_core_qp_llp_closed(&qa->qp, false);
    ASSERT_EQ_U(ship(SIDE_A), 1u); /* our Terminate: it never reaches B */
    discard_flights();
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), 0u); /* the linger starts at the next call */
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 5000));
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), 6000u);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 5999));
    ASSERT_EQ_U(take(SIDE_A, 0), 0u);
    ASSERT_TRUE(iwarp_llp_assoc_handle_timeout(a, 6000));
    ASSERT_EQ_U(take(SIDE_A, 0), EV_TIMEDOUT);
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_ENDING); /* the owner's until detached */
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), UINT64_MAX);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 100000)); /* once */
    iwarp_llp_assoc_detach(a, 0);
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_FREE);

    /* let go of while waiting: released when the linger passes, and nobody is told */
    iwarp_llp_assoc_abort(a, 1);
    iwarp_core_qp_llp_closed(&qa1->qp, false);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    discard_flights();
    iwarp_llp_assoc_detach(a, 1);
    ASSERT_EQ(S[SIDE_A].st[1].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 7000));
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 7999));
    ASSERT_EQ(S[SIDE_A].st[1].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 8000));
    ASSERT_EQ(S[SIDE_A].st[1].state, IWARP_LLP_ASSOC_FREE);
    ASSERT_EQ_U(take(SIDE_A, 1), 0u);
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), UINT64_MAX);
    finish();
}

/* The owner's connect deadline: an Initiate unanswered by then is withdrawn with our Terminate
 * (§6.2) and TIMEDOUT reported; the stream, let go of, is free once the peer answers. A
 * session established in time loses the deadline. */
TEST(an_unanswered_initiate_is_withdrawn_at_the_deadline)
{
    CFG_LINGER = 1000;
    world(0, 1400, 4, true);
    struct iwarp_llp_assoc *a = &S[SIDE_A].a;
    struct qpe *qa = qp_new(SIDE_A, 0);
    struct iwarp_sess_cfg c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(a, 0, &c, eng_qp(qa), 4, 4, NULL), 0);
    iwarp_llp_assoc_set_deadline(a, 0, 10000);
    ASSERT_EQ_U(ship(SIDE_A), 1u); /* the Initiate; B does not see it yet */
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), 10000u);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 9999));
    ASSERT_EQ_U(take(SIDE_A, 0), 0u);
    ASSERT_EQ_U(ship(SIDE_A), 0u);
    ASSERT_TRUE(iwarp_llp_assoc_handle_timeout(a, 10000));
    ASSERT_EQ_U(take(SIDE_A, 0), EV_TIMEDOUT);
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_EQ_U(ship(SIDE_A), 1u);
    ASSERT_EQ(log_at(SIDE_A, 0, -1)->fc, IWARP_SCTP_FC_TERMINATE);
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), 11000u); /* now the linger for B's answer */
    iwarp_core_qp_llp_closed(&qa->qp, false);             /* the owner's flush */
    iwarp_llp_assoc_detach(a, 0);
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_ENDING); /* B's Terminate is awaited */
    pump(); /* B takes the Initiate and the Terminate and answers it */
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_FREE);
    ASSERT_EQ_U(take(SIDE_A, 0), 0u);
    ASSERT_TRUE(take(SIDE_B, 0) & EV_CLOSED);
    release(SIDE_B, 0);

    /* in time: ESTABLISHED clears the deadline */
    struct qpe *qa1 = qp_new(SIDE_A, 1), *qb1 = qp_new(SIDE_B, 1);
    ASSERT_EQ(iwarp_llp_assoc_open(a, 1, &c, eng_qp(qa1), 4, 4, NULL), 0);
    iwarp_llp_assoc_set_deadline(a, 1, 20000);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 1), EV_REQ);
    struct iwarp_sess_answer ans = {.ird = 4, .ord = 4};
    ASSERT_EQ(iwarp_llp_assoc_accept(&S[SIDE_B].a, 1, &ans, eng_qp(qb1), 4, 4), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_A, 1), EV_EST);
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), UINT64_MAX);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 50000));
    ASSERT_EQ_U(take(SIDE_A, 1), 0u);
    ASSERT_EQ(S[SIDE_A].st[1].state, IWARP_LLP_ASSOC_SESSION);
    finish();
}

/* A graceful disconnect drains for at most cfg.linger_ns from the owner's now: past it,
 * TIMEDOUT, and the stream is released as soon as the owner lets go of it. */
TEST(a_disconnect_that_does_not_drain_times_out)
{
    struct qpe *qa, *qb;
    struct iwarp_llp_assoc *a = policy_world(0, 1000, &qa, &qb);
    post_send(qa, IWARP_WR_SEND, 0xA0, 0, 100, 0); /* never shipped: the drain cannot end */
    iwarp_llp_assoc_disconnect(a, 0, 3000);
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), 4000u);
    ASSERT_FALSE(iwarp_llp_assoc_handle_timeout(a, 3999));
    ASSERT_EQ_U(take(SIDE_A, 0), 0u);
    ASSERT_TRUE(iwarp_llp_assoc_handle_timeout(a, 4000));
    ASSERT_EQ_U(take(SIDE_A, 0), EV_TIMEDOUT);
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_SESSION);
    iwarp_core_qp_llp_closed(&qa->qp, false); /* the owner's flush */
    wc_next(&qa->scq, 0xA0, IWARP_WC_WR_FLUSH_ERR, 0);
    iwarp_llp_assoc_detach(a, 0);
    ASSERT_EQ(S[SIDE_A].st[0].state, IWARP_LLP_ASSOC_FREE); /* at once: its deadline passed */
    ASSERT_EQ_U(ship(SIDE_A), 0u);
    ASSERT_EQ_U(iwarp_llp_assoc_next_timeout(a), UINT64_MAX);
    finish();
}

/* A stream the owner let go of after rejecting is released once the Reject is handed to SCTP
 * (§6.3), not before: released earlier, the Reject would never leave. */
TEST(a_detached_stream_is_released_once_its_last_chunk_is_out)
{
    world(0, 1400, 4, true);
    struct qpe *qa = qp_new(SIDE_A, 2);
    struct iwarp_sess_cfg c = active_cfg(true);
    ASSERT_EQ(iwarp_llp_assoc_open(&S[SIDE_A].a, 2, &c, eng_qp(qa), 4, 4, NULL), 0);
    pump();
    ASSERT_EQ_U(take(SIDE_B, 2), EV_REQ);
    struct iwarp_llp_assoc *b = &S[SIDE_B].a;
    ASSERT_EQ(iwarp_llp_assoc_reject(b, 2, NULL), 0);
    iwarp_llp_assoc_detach(b, 2);
    ASSERT_EQ(S[SIDE_B].st[2].state, IWARP_LLP_ASSOC_ENDING);
    const struct iwarp_llp_assoc_chunk *ch = iwarp_llp_assoc_tx_next(b);
    ASSERT_TRUE(ch != NULL && ch->sid == 2); /* produced, the send buffer is full */
    ASSERT_EQ(S[SIDE_B].st[2].state, IWARP_LLP_ASSOC_ENDING);
    ASSERT_EQ_U(ship(SIDE_B), 1u);
    ASSERT_EQ(log_at(SIDE_B, 2, -1)->fc, IWARP_SCTP_FC_REJECT);
    ASSERT_EQ(S[SIDE_B].st[2].state, IWARP_LLP_ASSOC_FREE);
    ASSERT_EQ_U(take(SIDE_B, 2), 0u);
    pump();
    ASSERT_EQ_U(take(SIDE_A, 2), EV_REJ);
    /* a stream nobody had is not the owner's to let go of: nothing happens */
    iwarp_llp_assoc_detach(b, 3);
    ASSERT_EQ(S[SIDE_B].st[3].state, IWARP_LLP_ASSOC_FREE);
    ASSERT_FALSE(S[SIDE_B].st[3].detached);
    finish();
}
