/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End to end over the in-memory transport: two nodes (STag table, memory, CQs, SRQ), QP
 * engines joined by MPA connections (llp_conn) through llp_mem pipes that split, stall and
 * corrupt octets deterministically.
 *
 * - The data matrix: Send, Send+SE, Send+Inv, Send+SE+Inv, RDMA Write and RDMA Read, in both
 *   directions, with 1 and 6 SGEs (1 for Read sinks), sizes 0, 1, 4095, 4096, MULPDU-1..+1,
 *   the segment payload limit -1..+1 and 1 MiB, over every CRC x markers setting, MPA Rev 1
 *   and Rev 2 without RTR and with each RTR type; random splits and stalls, and one-octet
 *   splits for the small sizes; 16 MiB for CRC on/off. Every octet is compared, the octets
 *   around the sink are guards, and every completion is checked (status, opcode, byte_len,
 *   wr_id, qp_num, WITH_INV and the invalidated rkey).
 * - Fence, solicited events, an SRQ shared by two QPs, memory windows (type 1 and 2),
 *   remote and local invalidation.
 * - Every error class a peer can cause: the Terminate captured on the wire and decoded, the
 *   async event on both sides, the completions (error status, then WR_FLUSH_ERR), and nothing
 *   placed after the error. Malformed segments are written into the pipe in place of the
 *   initiator's connection, framed by its own MPA framer (correct CRC and markers).
 * - A peer that vanishes mid-transfer, one that sends garbage, and teardown (graceful and
 *   abortive) while traffic flows.
 */
#include <string.h>

#include "core/core_qp.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "llp/llp_conn.h"
#include "llp/llp_mem.h"
#include "llp/llp_rtr.h"
#include "mem/mem_region.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

/* ---- layout ------------------------------------------------------------------------------- */

#define MIB       (1u << 20)
#define BIG       (16u * MIB)
#define NODE_MEM  (40u * MIB)
#define SRC_OFF   0u
#define DST_OFF   (18u * MIB)
#define AUX_OFF   (36u * MIB)
#define AUX_LEN   (256u << 10)
#define RO_OFF    (AUX_OFF)          /* MR without remote rights */
#define PD2_OFF   (AUX_OFF + 8192u)  /* MR of another PD */
#define SMALL_OFF (AUX_OFF + 16384u) /* 4 KiB MR with remote rights */
#define INV_OFF   (AUX_OFF + 32768u) /* MRs made to be invalidated */
#define WIN_OFF   (AUX_OFF + 65536u) /* memory windows */
#define GAP       64u                /* guard octets between SGE pieces */
#define GUARD     0xA5u
#define PIPE_CAP  (256u << 10)
#define NENT      64u
#define SQ_CAP    64u
#define RQ_CAP    32u
#define CQ_CAP    512u
#define SRQ_CAP   16u
#define MAX_SGE   6u
#define PD1       1u
#define PD2       2u
#define IRD       4u
#define PUMP_MAX  4000000u
#define QPN(i)    (0x100u + (uint32_t)(i))

struct node {
    struct iwarp_mem_table T;
    struct iwarp_mem_entry ent[NENT];
    uint32_t seed;
    uint8_t *mem;
    uint32_t key;   /* whole memory, every right, PD 1 */
    uint32_t ro;    /* local write only */
    uint32_t pd2;   /* PD 2, remote rights */
    uint32_t small; /* 4 KiB, remote rights */
    struct iwarp_wc scq_ring[CQ_CAP], rcq_ring[CQ_CAP];
    struct iwarp_core_cq scq, rcq;
    unsigned notified; /* CQ arm firings */
    struct iwarp_core_srq srq;
    struct iwarp_core_rqe srq_ring[SRQ_CAP];
};

struct ev {
    int type;
    uint32_t cause;
    bool peer;
};

struct end {
    struct node *n;
    struct iwarp_core_sqe sq[SQ_CAP];
    struct iwarp_core_rqe rq[RQ_CAP];
    uint64_t rq_lens[RQ_CAP], irq_lens[IWARP_CORE_MAX_IRD];
    struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
    struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
    struct iwarp_core_qp qp;
    struct iwarp_llp_conn c;
    uint8_t bounce[IWARP_LLP_CONN_BOUNCE];
    struct iwarp_llp_conn_txf txf[IWARP_LLP_CONN_TX_SEGS];
    struct ev ev[16];
    unsigned nev;
};

static struct node N[2];
static uint8_t NMEM[2][NODE_MEM];
static struct end E[4]; /* link l joins E[2l] (initiator, node 0) and E[2l+1] (node 1) */
static uint8_t PIPES[2][2][PIPE_CAP];
static struct iwarp_llp_mem L[2];
static unsigned LINK_ID[2] = {0, 1};
static uint32_t RNG = 0x1234567u;

static uint32_t rnd(void)
{
    return harness_xorshift32(&RNG);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1u;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        x = x * 1103515245u + 12345u;
        memcpy(p + i, &x, 4);
    }
    for (; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

static bool all_eq(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return false;
    return true;
}

/* got[0..n) == want[0..n); on a mismatch, report the first differing offset only. */
static void mem_eq(const uint8_t *got, const uint8_t *want, size_t n)
{
    if (memcmp(got, want, n) == 0)
        return;
    size_t i = 0;
    while (got[i] == want[i])
        i++;
    size_t k = n - i < 32 ? n - i : 32;
    harness_hexdump("got", got + i, k);
    harness_hexdump("want", want + i, k);
    harness_fail(__FILE__, __LINE__, "octet %zu of %zu differs", i, n);
}

static uint32_t cause_u32(uint8_t layer, uint8_t etype, uint8_t code)
{
    return (uint32_t)layer << 16 | (uint32_t)etype << 8 | code;
}

/* The async event the core raises for a cause (protection errors are access errors). */
static int event_for(uint32_t cause)
{
    uint8_t layer = (uint8_t)(cause >> 16), etype = (uint8_t)(cause >> 8);
    if ((layer == IWARP_TERM_LAYER_RDMAP && etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT) ||
        (layer == IWARP_TERM_LAYER_DDP && etype == IWARP_TERM_DDP_ETYPE_TAGGED))
        return IWARP_EVENT_QP_ACCESS_ERR;
    return IWARP_EVENT_QP_FATAL;
}

/* ---- nodes and ends ----------------------------------------------------------------------- */

static void on_event(void *user, struct iwarp_core_qp *qp, int type, uint32_t cause, bool peer)
{
    (void)qp;
    struct end *e = user;
    if (e->nev < 16)
        e->ev[e->nev] = (struct ev){type, cause, peer};
    e->nev++;
}

static void on_notify(void *user, struct iwarp_core_cq *cq, enum iwarp_core_cq_why why)
{
    (void)cq;
    struct node *n = user;
    ASSERT_EQ(why, IWARP_CORE_CQ_FIRED);
    n->notified++;
}

static uint32_t reg(struct node *n, uint32_t pd, uint32_t off, uint32_t len, uint32_t access)
{
    uint64_t a = (uint64_t)(uintptr_t)(n->mem + off);
    struct iwarp_mem_range r = {.addr = a, .iova = a, .length = len, .access = access};
    uint32_t stag = 0;
    ASSERT_EQ(iwarp_mem_reg_mr(&n->T, pd, &r, &stag), 0);
    ASSERT_TRUE(stag != IWARP_LLP_RTR_STAG);
    return stag;
}

static void node_init(struct node *n, uint8_t *mem, uint32_t seed)
{
    memset(n, 0, sizeof *n);
    n->seed = seed;
    n->mem = mem;
    ASSERT_EQ(iwarp_mem_table_init(&n->T, n->ent, NENT, harness_xorshift32, &n->seed), 0);
    const uint32_t remote =
        IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE | IWARP_MEM_ACCESS_REMOTE_READ;
    n->key = reg(n, PD1, 0, NODE_MEM, IWARP_MEM_ACCESS_ALL);
    n->ro = reg(n, PD1, RO_OFF, 4096, IWARP_MEM_ACCESS_LOCAL_WRITE);
    n->pd2 = reg(n, PD2, PD2_OFF, 4096, remote);
    n->small = reg(n, PD1, SMALL_OFF, 4096, remote);
    ASSERT_EQ(iwarp_core_cq_init(&n->scq, n->scq_ring, CQ_CAP, on_notify, n), 0);
    ASSERT_EQ(iwarp_core_cq_init(&n->rcq, n->rcq_ring, CQ_CAP, on_notify, n), 0);
    ASSERT_EQ(iwarp_core_rq_init(&n->srq.rq, n->srq_ring, SRQ_CAP, MAX_SGE), 0);
    n->srq.pd = PD1;
}

static void nodes_init(void)
{
    node_init(&N[0], NMEM[0], 0x2468ACEu);
    node_init(&N[1], NMEM[1], 0x13579BDu);
}

static uint32_t RDMAP_EXT; /* the RFC 7306 extensions end_init's QPs enable */

static void end_init(struct end *e, struct node *n, uint32_t qpn, bool srq)
{
    memset(e, 0, sizeof *e);
    e->n = n;
    struct iwarp_core_qp_cfg cfg = {.qp_num = qpn,
                                    .pd = PD1,
                                    .mem = &n->T,
                                    .send_cq = &n->scq,
                                    .recv_cq = &n->rcq,
                                    .srq = srq ? &n->srq : NULL,
                                    .sq_cap = SQ_CAP,
                                    .rq_cap = srq ? 0 : RQ_CAP,
                                    .max_send_sge = MAX_SGE,
                                    .max_recv_sge = MAX_SGE,
                                    .max_inline = IWARP_CORE_MAX_INLINE,
                                    .rdmap_ext = RDMAP_EXT,
                                    .sq_sig_all = true,
                                    .event = on_event,
                                    .event_user = e};
    struct iwarp_core_qp_mem m = {.sq = e->sq,
                                  .rq = srq ? NULL : e->rq,
                                  .rq_lens = e->rq_lens,
                                  .orq = e->orq,
                                  .irq = e->irq,
                                  .irq_lens = e->irq_lens};
    ASSERT_EQ(iwarp_core_qp_init(&e->qp, &cfg, &m), 0);
}

/* ---- the wire: hook, capture, flips, injection ------------------------------------------- */

/* One direction's octets as they entered the pipe, from a point in full operation on. */
struct capture {
    bool on;
    uint64_t base;     /* pipe offset of buf[0] */
    uint32_t pos;      /* MPA stream position of buf[0] */
    bool crc, markers; /* the sender's framing */
    uint8_t buf[4u * MIB];
    size_t len;
};
static struct capture CAP[2][2]; /* [link][dir] */

/* Flip octet FLIP_AT (pipe offset) of FLIP_LINK/FLIP_DIR with FLIP_MASK. */
static bool FLIP_ON;
static unsigned FLIP_LINK, FLIP_DIR;
static uint64_t FLIP_AT;
static uint8_t FLIP_MASK;

/* Fence observation: octets written by end 0 of link 0 while it had a Read outstanding. */
static bool FENCE_WATCH;
static size_t FENCE_OCTETS;

static void hook(void *user, unsigned dir, uint64_t off, uint8_t *p, size_t n)
{
    unsigned l = *(const unsigned *)user;
    if (FLIP_ON && l == FLIP_LINK && dir == FLIP_DIR && FLIP_AT >= off && FLIP_AT < off + n) {
        p[FLIP_AT - off] ^= FLIP_MASK;
        FLIP_ON = false;
    }
    if (FENCE_WATCH && l == 0 && dir == 0 && E[0].qp.orq_count > 0)
        FENCE_OCTETS += n;
    struct capture *c = &CAP[l][dir];
    if (c->on && off + n > c->base) {
        size_t skip = off < c->base ? (size_t)(c->base - off) : 0;
        size_t k = n - skip;
        ASSERT_TRUE(c->len + k <= sizeof c->buf);
        memcpy(c->buf + c->len, p + skip, k);
        c->len += k;
    }
}

/* Everything end e framed has been written into its pipe. */
static void assert_tx_idle(const struct end *e)
{
    ASSERT_EQ(e->c.txf_count, 0);
    ASSERT_EQ(e->c.txf_off, 0);
    ASSERT_TRUE(e->c.fullop);
}

/* Start capturing what end d of link l writes from now on. */
static void capture_start(unsigned l, unsigned d)
{
    struct end *e = &E[2 * l + d];
    assert_tx_idle(e);
    struct capture *c = &CAP[l][d];
    c->on = true;
    c->base = L[l].pipe[d].off;
    c->pos = e->c.tx.pos;
    c->crc = e->c.tx.crc;
    c->markers = e->c.tx.markers;
    c->len = 0;
}

/* Octets of the next FPDU end d of link l frames: the position of its next marker. */
static uint64_t next_marker_off(unsigned l, unsigned d)
{
    const struct end *e = &E[2 * l + d];
    assert_tx_idle(e);
    uint32_t pos = e->c.tx.pos;
    uint32_t to =
        (IWARP_MPA_MARKER_PERIOD - (pos % IWARP_MPA_MARKER_PERIOD)) % IWARP_MPA_MARKER_PERIOD;
    return L[l].pipe[d].off + to;
}

/* Write raw octets into pipe d of link l as if end d had sent them. */
static void pipe_put(unsigned l, unsigned d, const uint8_t *src, size_t n)
{
    ASSERT_EQ(iwarp_llp_mem_put(&L[l], d, src, n), 0);
}

/* Send one DDP segment from end d of link l, framed by that end's own MPA framer (so CRC and
 * markers are right and the connection's later FPDUs stay in step). */
static void inject(unsigned l, unsigned d, const uint8_t *seg, size_t len)
{
    struct end *e = &E[2 * l + d];
    assert_tx_idle(e);
    static struct iwarp_mpa_tx_scratch sc;
    static struct iovec out[IWARP_MPA_TX_IOV_MAX(1)];
    struct iovec in = {(void *)(uintptr_t)seg, len};
    iwarp_ssize n = iwarp_mpa_tx_frame(&e->c.tx, &in, 1, &sc, out, IWARP_MPA_TX_IOV_MAX(1));
    ASSERT_TRUE(n > 0);
    for (iwarp_ssize i = 0; i < n; i++)
        pipe_put(l, d, out[i].iov_base, out[i].iov_len);
}

/* The segments of a capture, deframed. */
struct captured {
    unsigned nseg;
    unsigned nterm;
    bool term_last;
    uint8_t term[IWARP_TERM_SEG_MAX_LEN + 64]; /* the Terminate segment as received */
    size_t term_len;
};

static void deframe_capture(const struct capture *c, struct captured *out)
{
    static uint8_t ulpdu[IWARP_MPA_MULPDU_MAX];
    memset(out, 0, sizeof *out);
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_cfg cfg = {.crc = c->crc, .markers = c->markers, .stream_pos = c->pos};
    ASSERT_EQ(iwarp_mpa_rx_init(&rx, &cfg), 0);
    const uint8_t *p = c->buf;
    size_t n = c->len;
    while (n > 0) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize k = iwarp_mpa_rx_feed(&rx, p, n, &ev);
        ASSERT_TRUE(k >= 0);
        p += k;
        n -= (size_t)k;
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU) {
            memcpy(ulpdu + ev.ulpdu_off, ev.data, ev.len);
        } else if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            out->nseg++;
            struct iwarp_wire_segment s;
            bool term = iwarp_wire_segment_decode(ulpdu, ev.ulpdu_len, &s, NULL) == 0 &&
                        s.opcode == IWARP_RDMAP_OP_TERMINATE;
            out->term_last = term;
            if (term) {
                out->nterm++;
                ASSERT_TRUE(ev.ulpdu_len <= sizeof out->term);
                memcpy(out->term, ulpdu, ev.ulpdu_len);
                out->term_len = ev.ulpdu_len;
            }
        }
    }
}

/* ---- connections ---------------------------------------------------------------------------- */

struct cfg {
    uint8_t rev; /* 1 or 2 */
    bool crc;    /* the initiator asks for CRC */
    bool mark;   /* both ends ask for markers */
    uint8_t rtr; /* Rev 2 peer-to-peer with this RTR type (0: none) */
};

enum split { SPLIT_NONE, SPLIT_ONE, SPLIT_RANDOM };
static enum split SPLIT[2];

/* Pump link l until nothing moves. iwarp_llp_mem_pump() may return while octets still wait in
 * a pipe whose stall has just expired (see LLP_MEM_STALL_BUG below), so one more step proves
 * quiescence. */
static void pump(unsigned l)
{
    for (unsigned i = 0; i < 1000; i++) {
        ASSERT_TRUE(iwarp_llp_mem_pump(&L[l], PUMP_MAX) < PUMP_MAX);
        if (L[l].pipe[0].stall == 0 && L[l].pipe[1].stall == 0 && iwarp_llp_mem_step(&L[l]) == 0)
            return;
    }
    harness_fail(__FILE__, __LINE__, "link %u never quiesces", l);
}

/* Random stalls of up to 3 pumps in each direction (with random splits). */
static void maybe_stall(unsigned l)
{
    if (SPLIT[l] != SPLIT_RANDOM)
        return;
    L[l].pipe[0].stall = rnd() % 4u;
    L[l].pipe[1].stall = rnd() % 4u;
}

/* Connect link l: negotiation with o, faults per sp, the responder on the SRQ when srq. */
static void link_up(unsigned l, const struct cfg *o, enum split sp, uint32_t seed, bool srq)
{
    struct end *a = &E[2 * l], *b = &E[2 * l + 1];
    end_init(a, &N[0], QPN(2 * l), false);
    end_init(b, &N[1], QPN(2 * l + 1), srq);
    struct iwarp_llp_conn_cfg ci = {.emss = 1460}, cr = {.emss = 1460};
    iwarp_mpa_neg_cfg_default(&ci.neg, IWARP_MPA_INITIATOR);
    iwarp_mpa_neg_cfg_default(&cr.neg, IWARP_MPA_RESPONDER);
    ci.neg.revision = o->rev;
    ci.neg.enhanced = o->rev == 2;
    ci.neg.crc = o->crc;
    cr.neg.crc = false;
    ci.neg.markers = o->mark;
    cr.neg.markers = o->mark;
    ci.neg.timeout_ns = 0;
    cr.neg.timeout_ns = 0;
    cr.neg.revision = 2;
    cr.neg.rtr = IWARP_MPA_RTR_ALL;
    if (o->rtr) {
        ci.neg.peer2peer = true;
        ci.neg.rtr = IWARP_MPA_RTR_ALL;
        ci.neg.rtr_pref = o->rtr;
    }
    ASSERT_EQ(iwarp_llp_conn_init(&a->c, &ci, a->bounce, a->txf, 0), 0);
    ASSERT_EQ(iwarp_llp_conn_init(&b->c, &cr, b->bounce, b->txf, 0), 0);
    iwarp_llp_conn_attach(&a->c, &a->qp.eng);
    ASSERT_EQ(iwarp_llp_mem_init(&L[l], &a->c, &b->c, PIPES[l][0], PIPES[l][1], PIPE_CAP, seed), 0);
    L[l].hook = hook;
    L[l].hook_user = &LINK_ID[l];
    SPLIT[l] = sp;
    for (unsigned d = 0; d < 2; d++) {
        L[l].pipe[d].max_read = sp == SPLIT_ONE ? 1 : 0;
        L[l].pipe[d].max_write = sp == SPLIT_ONE ? 1 : 0;
        L[l].pipe[d].random = sp == SPLIT_RANDOM;
    }
    memset(CAP[l], 0, sizeof CAP[l]);
    maybe_stall(l);
    pump(l);
    ASSERT_EQ(b->c.state, IWARP_LLP_CONN_REQUEST);
    iwarp_llp_conn_attach(&b->c, &b->qp.eng);
    struct iwarp_mpa_neg_answer ans = {.ird = IRD, .ord = IRD};
    ASSERT_EQ(iwarp_llp_conn_accept(&b->c, &ans), 0);
    pump(l);
    ASSERT_EQ(a->c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ(iwarp_mpa_neg_result(&a->c.neg)->rev, o->rev);
    ASSERT_EQ(iwarp_mpa_neg_result(&a->c.neg)->rtr, o->rtr);
    if (o->rtr)
        ASSERT_EQ(b->c.state, IWARP_LLP_CONN_ESTABLISHED);
    ASSERT_EQ(a->nev + b->nev, 0);
}

/* ---- completions ---------------------------------------------------------------------------- */

struct want_wc {
    uint64_t wr_id;
    int status;
    int opcode;
    uint32_t byte_len;
    uint32_t qp_num;
    unsigned flags;
    uint32_t inv_rkey;
};

static void expect_wc(struct iwarp_core_cq *cq, const struct want_wc *w)
{
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(cq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, w->wr_id);
    ASSERT_EQ(wc.status, w->status);
    ASSERT_EQ(wc.opcode, w->opcode);
    ASSERT_EQ_U(wc.qp_num, w->qp_num);
    if (w->status == IWARP_WC_SUCCESS) {
        ASSERT_EQ_U(wc.byte_len, w->byte_len);
        ASSERT_EQ(wc.wc_flags, w->flags);
        if (w->flags & IWARP_WC_WITH_INV)
            ASSERT_EQ_U(wc.invalidated_rkey, w->inv_rkey);
    }
}

static void expect_cq_empty(struct iwarp_core_cq *cq)
{
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(cq, &wc, 1), 0);
}

/* ---- posting -------------------------------------------------------------------------------- */

static void post_recv_sges(struct end *e, uint64_t id, struct iwarp_sge *s, uint32_t n)
{
    struct iwarp_recv_wr w = {.wr_id = id, .sg_list = s, .num_sge = (int)n};
    ASSERT_EQ(iwarp_core_qp_post_recv(&e->qp, &w), 0);
}

static void post_recv(struct end *e, uint64_t id, uint32_t off, uint32_t len)
{
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(e->n->mem + off), len, e->n->key};
    post_recv_sges(e, id, &s, 1);
}

static void srq_post(struct node *n, uint64_t id, uint32_t off, uint32_t len)
{
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(n->mem + off), len, n->key};
    struct iwarp_recv_wr w = {.wr_id = id, .sg_list = &s, .num_sge = 1};
    struct iwarp_core_rqe rqe;
    ASSERT_EQ(iwarp_core_rqe_from_wr(&rqe, &w, MAX_SGE, &n->T, n->srq.pd), 0);
    ASSERT_EQ(iwarp_core_rq_push(&n->srq.rq, &rqe), 0);
}

/* Post one send-queue WR with a single SGE (len 0: none). */
static int post_wr(struct end *e, enum iwarp_wr_opcode op, unsigned flags, uint64_t id,
                   uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t inv)
{
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(e->n->mem + off), len, e->n->key};
    struct iwarp_send_wr w = {
        .wr_id = id, .sg_list = &s, .num_sge = len ? 1 : 0, .opcode = op, .send_flags = flags};
    w.wr.rdma.remote_addr = raddr;
    w.wr.rdma.rkey = rkey;
    if (op == IWARP_WR_SEND_WITH_INV || op == IWARP_WR_LOCAL_INV)
        w.invalidate_rkey = inv;
    return iwarp_core_qp_post_send(&e->qp, &w);
}

static uint64_t addr_of(const struct end *e, uint32_t off)
{
    return (uint64_t)(uintptr_t)(e->n->mem + off);
}

/* ---- the data matrix ----------------------------------------------------------------------- */

enum op { OP_SEND, OP_SEND_SE, OP_SEND_INV, OP_SEND_SE_INV, OP_WRITE, OP_READ, OP_COUNT };

static const char *const OP_NAME[OP_COUNT] = {"send",        "send+se", "send+inv",
                                              "send+se+inv", "write",   "read"};

/* SGE pieces of one side of a transfer: n pieces, GAP guard octets after each. */
struct layout {
    uint32_t n;
    uint32_t off[MAX_SGE];
    uint32_t len[MAX_SGE];
    uint32_t span; /* octets from the first piece to the end of the last gap */
};

/* Split size over n pieces; reversed: the larger pieces last; extra: octets added to the last
 * piece (a receive larger than the message). */
static void layout_make(struct layout *lo, uint32_t size, uint32_t n, bool reversed, uint32_t extra)
{
    lo->n = n;
    uint32_t cur = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = reversed ? n - 1 - i : i;
        lo->len[i] = size / n + (k < size % n ? 1u : 0u);
        if (i == n - 1)
            lo->len[i] += extra;
        lo->off[i] = cur;
        cur += lo->len[i] + GAP;
    }
    lo->span = cur;
}

/* The first size octets of the concatenated pieces of a and b are equal. */
static void layout_compare(const uint8_t *abase, const struct layout *a, const uint8_t *bbase,
                           const struct layout *b, uint32_t size)
{
    uint32_t ia = 0, ib = 0, oa = 0, ob = 0;
    while (size > 0) {
        while (oa == a->len[ia]) {
            ia++;
            oa = 0;
        }
        while (ob == b->len[ib]) {
            ib++;
            ob = 0;
        }
        uint32_t k = a->len[ia] - oa < b->len[ib] - ob ? a->len[ia] - oa : b->len[ib] - ob;
        if (k > size)
            k = size;
        mem_eq(bbase + b->off[ib] + ob, abase + a->off[ia] + oa, k);
        oa += k;
        ob += k;
        size -= k;
    }
}

/* Every octet of the sink's span outside the first size octets of its pieces is a guard. */
static void layout_guards(const uint8_t *base, const struct layout *lo, uint32_t size)
{
    for (uint32_t i = 0; i < lo->n; i++) {
        uint32_t used = lo->len[i] < size ? lo->len[i] : size;
        size -= used;
        ASSERT_TRUE(all_eq(base + lo->off[i] + used, lo->len[i] - used + GAP, GUARD));
    }
}

static void sges_of(const struct end *e, uint32_t area, const struct layout *lo,
                    struct iwarp_sge *s)
{
    for (uint32_t i = 0; i < lo->n; i++)
        s[i] = (struct iwarp_sge){addr_of(e, area + lo->off[i]), lo->len[i], e->n->key};
}

static uint64_t WR_ID = 1000;

/* One transfer on link l: end s (dir 0: the initiator) acts with op, size octets over nsge
 * SGEs; end t is the peer. Verifies every octet, the guards and every completion. */
static void xfer(unsigned l, unsigned dir, enum op op, uint32_t size, uint32_t nsge)
{
    struct end *s = &E[2 * l + dir], *t = &E[2 * l + 1 - dir];
    uint64_t id = WR_ID++;
    bool sendish = op <= OP_SEND_SE_INV;
    bool se = op == OP_SEND_SE || op == OP_SEND_SE_INV;
    bool inv = op == OP_SEND_INV || op == OP_SEND_SE_INV;
    if (op == OP_READ)
        nsge = 1; /* siw's max_sge_rd */
    struct layout src, dst;
    struct end *from = op == OP_READ ? t : s, *to = op == OP_READ ? s : t;
    layout_make(&src, size, op == OP_READ ? 1 : nsge, false, 0);
    if (sendish)
        layout_make(&dst, size, nsge, true, 7);
    else
        layout_make(&dst, size, 1, false, 0);
    uint8_t *sbase = from->n->mem + SRC_OFF, *dbase = to->n->mem + DST_OFF;
    fill(sbase, src.span, (uint32_t)id);
    memset(dbase, GUARD, dst.span);

    uint32_t inv_stag = 0;
    if (inv) /* an MR of the receiver for the Send to invalidate */
        inv_stag = reg(t->n, PD1, INV_OFF, 4096,
                       IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE);
    struct iwarp_sge ssg[MAX_SGE], dsg[MAX_SGE];
    sges_of(from, SRC_OFF, &src, ssg);
    sges_of(to, DST_OFF, &dst, dsg);
    unsigned notified = t->n->notified;
    if (sendish) {
        post_recv_sges(t, id + 500000, dsg, nsge);
        t->n->rcq.arm = IWARP_CORE_CQ_DISARMED;
        iwarp_core_cq_arm(&t->n->rcq, true); /* solicited only */
    }
    struct iwarp_send_wr w = {.wr_id = id, .sg_list = ssg, .num_sge = (int)src.n};
    switch (op) {
    case OP_SEND:
    case OP_SEND_SE:
        w.opcode = IWARP_WR_SEND;
        break;
    case OP_SEND_INV:
    case OP_SEND_SE_INV:
        w.opcode = IWARP_WR_SEND_WITH_INV;
        w.invalidate_rkey = inv_stag;
        break;
    case OP_WRITE:
        w.opcode = IWARP_WR_RDMA_WRITE;
        w.wr.rdma.remote_addr = addr_of(t, DST_OFF);
        w.wr.rdma.rkey = t->n->key;
        break;
    default:
        w.opcode = IWARP_WR_RDMA_READ;
        w.sg_list = dsg;
        w.wr.rdma.remote_addr = addr_of(t, SRC_OFF);
        w.wr.rdma.rkey = t->n->key;
        break;
    }
    if (se)
        w.send_flags = IWARP_SEND_SOLICITED;
    ASSERT_EQ(iwarp_core_qp_post_send(&s->qp, &w), 0);
    maybe_stall(l);
    pump(l);

    layout_compare(sbase, &src, dbase, &dst, size);
    layout_guards(dbase, &dst, size);
    static const int wc_op[OP_COUNT] = {IWARP_WC_SEND, IWARP_WC_SEND,       IWARP_WC_SEND,
                                        IWARP_WC_SEND, IWARP_WC_RDMA_WRITE, IWARP_WC_RDMA_READ};
    expect_wc(&s->n->scq,
              &(struct want_wc){id, IWARP_WC_SUCCESS, wc_op[op], size, s->qp.cfg.qp_num, 0, 0});
    if (sendish) {
        expect_wc(&t->n->rcq,
                  &(struct want_wc){id + 500000, IWARP_WC_SUCCESS, IWARP_WC_RECV, size,
                                    t->qp.cfg.qp_num, inv ? IWARP_WC_WITH_INV : 0u, inv_stag});
        /* Solicited-only arm: fires for SE only. */
        ASSERT_EQ(t->n->notified - notified, se ? 1u : 0u);
        t->n->rcq.arm = IWARP_CORE_CQ_DISARMED;
    }
    if (inv) {
        struct iwarp_mem_entry *ent;
        ASSERT_EQ(iwarp_mem_stag_lookup(&t->n->T, inv_stag, &ent), 0);
        ASSERT_EQ(ent->state, IWARP_MEM_INVALID); /* RFC 5040 §5.3: invalidated on delivery */
        ASSERT_EQ(iwarp_mem_dereg_mr(&t->n->T, inv_stag), 0);
    }
    expect_cq_empty(&s->n->scq);
    expect_cq_empty(&t->n->rcq);
    expect_cq_empty(&t->n->scq);
    expect_cq_empty(&s->n->rcq);
    if (s->nev + t->nev != 0)
        harness_fail(__FILE__, __LINE__, "%s of %u octets x %u SGEs: error event", OP_NAME[op],
                     size, nsge);
}

/* MULPDU of the direction the data of op flows in, and the payload one segment carries. */
static void limits(unsigned l, unsigned dir, enum op op, uint32_t *mulpdu, uint32_t *payload)
{
    const struct end *sender = &E[2 * l + (op == OP_READ ? 1 - dir : dir)];
    *mulpdu = sender->c.max_seg;
    *payload = *mulpdu - (op >= OP_WRITE ? IWARP_DDP_TAGGED_HDR_LEN : IWARP_DDP_UNTAGGED_HDR_LEN);
}

enum size_set { SIZES_SMALL, SIZES_ALL };

/* Every op in both directions with 1 and MAX_SGE SGEs over the size list. */
static void matrix(unsigned l, enum size_set set)
{
    for (unsigned si = 0; si < 11; si++) {
        if (set == SIZES_SMALL && si >= 10)
            break;
        for (unsigned op = 0; op < OP_COUNT; op++) {
            unsigned dir = (op + si) & 1u;
            uint32_t m, pl;
            limits(l, dir, (enum op)op, &m, &pl);
            const uint32_t sizes[11] = {0, 1, 4095, 4096, m - 1, m, m + 1, pl - 1, pl, pl + 1, MIB};
            for (uint32_t nsge = 1; nsge <= MAX_SGE; nsge += MAX_SGE - 1) {
                if (op == OP_READ && nsge > 1)
                    continue;
                xfer(l, dir, (enum op)op, sizes[si], nsge);
            }
        }
    }
}

/* The MPA configurations: Rev 1, and Rev 2 without RTR and with each RTR type. */
static const uint8_t RTRS[4] = {0, IWARP_MPA_RTR_WRITE, IWARP_MPA_RTR_READ, IWARP_MPA_RTR_SEND};

static void matrix_for(uint8_t rev, uint8_t rtr)
{
    for (unsigned v = 0; v < 4; v++) {
        struct cfg o = {.rev = rev, .crc = (v & 1) != 0, .mark = (v & 2) != 0, .rtr = rtr};
        nodes_init();
        link_up(0, &o, SPLIT_RANDOM, 77u + v + rev * 10u + rtr * 100u, false);
        matrix(0, SIZES_ALL);
        nodes_init();
        link_up(0, &o, SPLIT_ONE, 5u, false);
        matrix(0, SIZES_SMALL);
    }
}

TEST(matrix_rev1_every_crc_and_marker_setting)
{
    matrix_for(1, 0);
}

TEST(matrix_rev2_without_rtr)
{
    matrix_for(2, RTRS[0]);
}

TEST(matrix_rev2_rtr_write)
{
    matrix_for(2, RTRS[1]);
}

TEST(matrix_rev2_rtr_read)
{
    matrix_for(2, RTRS[2]);
}

TEST(matrix_rev2_rtr_send)
{
    matrix_for(2, RTRS[3]);
}

TEST(sixteen_mib_crc_on_and_off)
{
    for (unsigned v = 0; v < 2; v++) {
        struct cfg o = {.rev = 2, .crc = v == 1, .mark = false, .rtr = IWARP_MPA_RTR_WRITE};
        nodes_init();
        link_up(0, &o, SPLIT_RANDOM, 99u + v, false);
        xfer(0, 0, OP_SEND, BIG, 1);
        xfer(0, 1, OP_SEND_SE_INV, BIG, MAX_SGE);
        xfer(0, 0, OP_WRITE, BIG, MAX_SGE);
        xfer(0, 1, OP_WRITE, BIG, 1);
        xfer(0, 0, OP_READ, BIG, 1);
    }
}

/* ---- Fence ---------------------------------------------------------------------------------- */

static const struct cfg STD = {.rev = 2, .crc = true, .mark = false, .rtr = IWARP_MPA_RTR_WRITE};

/* Octets end 0 wrote while its Read was outstanding, with and without a Fence on the Send
 * posted right after the Read. */
static size_t fence_run(bool fence)
{
    nodes_init();
    link_up(0, &STD, SPLIT_RANDOM, 31, false);
    fill(N[1].mem + SRC_OFF, 256u << 10, 3);
    fill(N[0].mem + SRC_OFF, 100, 4);
    post_recv(&E[1], 1, DST_OFF, 100);
    FENCE_OCTETS = 0;
    FENCE_WATCH = true;
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 2, DST_OFF, 256u << 10, addr_of(&E[1], SRC_OFF),
                      N[1].key, 0),
              0);
    ASSERT_EQ(
        post_wr(&E[0], IWARP_WR_SEND, fence ? IWARP_SEND_FENCE : 0u, 3, SRC_OFF, 100, 0, 0, 0), 0);
    pump(0);
    FENCE_WATCH = false;
    mem_eq(N[0].mem + DST_OFF, N[1].mem + SRC_OFF, 256u << 10);
    mem_eq(N[1].mem + DST_OFF, N[0].mem + SRC_OFF, 100);
    expect_wc(&N[0].scq,
              &(struct want_wc){2, IWARP_WC_SUCCESS, IWARP_WC_RDMA_READ, 256u << 10, QPN(0), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){3, IWARP_WC_SUCCESS, IWARP_WC_SEND, 100, QPN(0), 0, 0});
    expect_wc(&N[1].rcq, &(struct want_wc){1, IWARP_WC_SUCCESS, IWARP_WC_RECV, 100, QPN(1), 0, 0});
    return FENCE_OCTETS;
}

TEST(fence_holds_the_send_until_the_read_completed)
{
    /* RFC 5040 §5.5 / verbs Fence: with it, only the Read Request's FPDU (2 + 18 + 28 + 4
     * octets) went out while the Read was outstanding; without it the Send went too. */
    ASSERT_EQ(fence_run(true), 2u + 18u + 28u + 4u);
    ASSERT_TRUE(fence_run(false) > 2u + 18u + 28u + 4u + 100u);
}

/* ---- solicited events ------------------------------------------------------------------------ */

TEST(solicited_only_arm_fires_for_se_and_errors)
{
    nodes_init();
    link_up(0, &STD, SPLIT_RANDOM, 41, false);
    struct node *r = &N[1];
    for (unsigned i = 0; i < 6; i++)
        post_recv(&E[1], 10 + i, DST_OFF + i * 256u, 200);
    fill(N[0].mem, 4096, 8);
    struct iwarp_wc wc;
    /* A plain Send does not fire a solicited-only arm; SE does (RFC 5040 §5.3 solicited). */
    iwarp_core_cq_arm(&r->rcq, true);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 1, 0, 50, 0, 0, 0), 0);
    pump(0);
    ASSERT_EQ(r->notified, 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, IWARP_SEND_SOLICITED, 2, 0, 50, 0, 0, 0), 0);
    pump(0);
    ASSERT_EQ(r->notified, 1);
    /* One-shot: a second SE without re-arming fires nothing. */
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, IWARP_SEND_SOLICITED, 3, 0, 50, 0, 0, 0), 0);
    pump(0);
    ASSERT_EQ(r->notified, 1);
    /* Send with SE and Invalidate. */
    uint32_t mr =
        reg(r, PD1, INV_OFF, 4096, IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE);
    iwarp_core_cq_arm(&r->rcq, true);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND_WITH_INV, IWARP_SEND_SOLICITED, 4, 0, 50, 0, 0, mr), 0);
    pump(0);
    ASSERT_EQ(r->notified, 2);
    /* Writes complete nothing at the target; successful send completions at the initiator do
     * not fire a solicited-only arm either. */
    iwarp_core_cq_arm(&r->rcq, true);
    iwarp_core_cq_arm(&N[0].scq, true);
    ASSERT_EQ(
        post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 5, 0, 50, addr_of(&E[1], DST_OFF + 4096), r->key, 0),
        0);
    pump(0);
    ASSERT_EQ(r->notified, 2);
    ASSERT_EQ(N[0].notified, 0);
    /* An arm for the next completion fires for a plain Send. */
    r->rcq.arm = IWARP_CORE_CQ_DISARMED;
    iwarp_core_cq_arm(&r->rcq, false);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 6, 0, 50, 0, 0, 0), 0);
    pump(0);
    ASSERT_EQ(r->notified, 3);
    ASSERT_EQ(iwarp_core_cq_poll(&r->rcq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, 10);
    ASSERT_EQ(iwarp_core_cq_poll(&r->rcq, &wc, 1), 1);
    ASSERT_EQ(iwarp_core_cq_poll(&r->rcq, &wc, 1), 1);
    ASSERT_EQ(iwarp_core_cq_poll(&r->rcq, &wc, 1), 1);
    ASSERT_EQ(wc.wc_flags, IWARP_WC_WITH_INV);
    ASSERT_EQ_U(wc.invalidated_rkey, mr);
    ASSERT_EQ(iwarp_core_cq_poll(&r->rcq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, 14);
    /* An error completion fires a solicited-only arm (message too long for the receive). */
    iwarp_core_cq_arm(&r->rcq, true);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 7, 0, 300, 0, 0, 0), 0);
    pump(0);
    ASSERT_EQ(r->notified, 4);
    ASSERT_EQ(iwarp_core_cq_poll(&r->rcq, &wc, 1), 1);
    ASSERT_EQ_U(wc.wr_id, 15);
    ASSERT_EQ(wc.status, IWARP_WC_LOC_LEN_ERR);
}

/* ---- RFC 7306 --------------------------------------------------------------------------- */

/* An atomic of end 0 on node 1's word at off (sink: node 0's memory at sink_off). */
static int post_atomic(enum iwarp_wr_opcode op, uint64_t id, uint32_t sink_off, uint32_t rkey,
                       uint32_t off, uint64_t compare_add, uint64_t swap, uint64_t cmask,
                       uint64_t smask)
{
    struct iwarp_sge s = {addr_of(&E[0], sink_off), 8, N[0].key};
    struct iwarp_send_wr w = {.wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = op};
    w.wr.atomic.remote_addr = addr_of(&E[1], off);
    w.wr.atomic.rkey = rkey;
    w.wr.atomic.compare_add = compare_add;
    w.wr.atomic.swap = swap;
    w.masked_atomic.compare_add_mask = cmask;
    w.masked_atomic.swap_mask = smask;
    return iwarp_core_qp_post_send(&E[0].qp, &w);
}

static uint64_t u64_at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

TEST(rfc7306_immediate_data_and_atomics_over_mpa)
{
    /* every octet split and stalled at random: MPA framing of the new messages both ways */
    nodes_init();
    RDMAP_EXT = IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS;
    link_up(0, &STD, SPLIT_RANDOM, 51, false);
    RDMAP_EXT = 0;
    struct node *r = &N[1];
    /* a Write with Immediate and SE into a zero-length receive: placed, then completed with
     * the 8 octets; a solicited-only arm fires */
    fill(N[0].mem + SRC_OFF, 3000, 9);
    post_recv(&E[1], 1, DST_OFF, 0);
    iwarp_core_cq_arm(&r->rcq, true);
    struct iwarp_sge src = {addr_of(&E[0], SRC_OFF), 3000, N[0].key};
    struct iwarp_send_wr w = {.wr_id = 2,
                              .sg_list = &src,
                              .num_sge = 1,
                              .opcode = IWARP_WR_RDMA_WRITE_WITH_IMM,
                              .send_flags = IWARP_SEND_SOLICITED};
    w.wr.rdma.remote_addr = addr_of(&E[1], DST_OFF + 4096);
    w.wr.rdma.rkey = r->key;
    memcpy(&w.imm_data, "\xCA\xFE\xF0\x0D", 4);
    ASSERT_EQ(iwarp_core_qp_post_send(&E[0].qp, &w), 0);
    pump(0);
    mem_eq(r->mem + DST_OFF + 4096, N[0].mem + SRC_OFF, 3000);
    ASSERT_EQ(r->notified, 1);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(&r->rcq, &wc, 1), 1);
    ASSERT_EQ(wc.opcode, IWARP_WC_RECV_RDMA_WITH_IMM);
    ASSERT_EQ(wc.wc_flags, IWARP_WC_WITH_IMM);
    ASSERT_EQ_U(wc.imm_data64, 0xCAFEF00D00000000u);
    ASSERT_EQ(wc.byte_len, 0);
    expect_wc(&N[0].scq,
              &(struct want_wc){2, IWARP_WC_SUCCESS, IWARP_WC_RDMA_WRITE, 3000, QPN(0), 0, 0});
    /* FetchAdd and a masked CmpSwap on an aligned word of an atomic-only MR */
    uint32_t off = INV_OFF + (uint32_t)(8u - (uintptr_t)(r->mem + INV_OFF) % 8u) % 8u;
    uint32_t ra =
        reg(r, PD1, off, 64, IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_ATOMIC);
    uint64_t v = 1000;
    memcpy(r->mem + off, &v, 8);
    ASSERT_EQ(post_atomic(IWARP_WR_ATOMIC_FETCH_AND_ADD, 3, DST_OFF, ra, off, 24, 0, 0, 0), 0);
    ASSERT_EQ(post_atomic(IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP, 4, DST_OFF + 8, ra, off, 0x24, 0x100,
                          0xFF, 0xF00),
              0);
    pump(0);
    expect_wc(&N[0].scq,
              &(struct want_wc){3, IWARP_WC_SUCCESS, IWARP_WC_FETCH_ADD, 8, QPN(0), 0, 0});
    expect_wc(&N[0].scq,
              &(struct want_wc){4, IWARP_WC_SUCCESS, IWARP_WC_COMP_SWAP, 8, QPN(0), 0, 0});
    ASSERT_EQ_U(u64_at(N[0].mem + DST_OFF), 1000);
    ASSERT_EQ_U(u64_at(N[0].mem + DST_OFF + 8), 1024); /* 0x400: low octet 0x00 */
    ASSERT_EQ_U(u64_at(r->mem + off), 1024);           /* 0x24 != 0x00: unchanged */
    /* misaligned: RFC 7306 §8.2, 0/2/0x07 both ways; the atomic fails REM_OP_ERR */
    ASSERT_EQ(post_atomic(IWARP_WR_ATOMIC_FETCH_AND_ADD, 5, DST_OFF, ra, off + 4, 1, 0, 0, 0), 0);
    pump(0);
    struct iwarp_wc f;
    ASSERT_EQ(iwarp_core_cq_poll(&N[0].scq, &f, 1), 1);
    ASSERT_EQ_U(f.wr_id, 5);
    ASSERT_EQ(f.status, IWARP_WC_REM_OP_ERR);
    ASSERT_EQ_U(f.vendor_err, cause_u32(0, 2, 0x07));
    ASSERT_EQ(E[1].nev, 1);
    ASSERT_EQ_U(E[1].ev[0].cause, cause_u32(0, 2, 0x07));
    ASSERT_FALSE(E[1].ev[0].peer);
    ASSERT_EQ(E[0].nev, 1);
    ASSERT_TRUE(E[0].ev[0].peer);
    ASSERT_EQ_U(u64_at(r->mem + off), 1024);
}

/* ---- SRQ ----------------------------------------------------------------------------------- */

TEST(srq_shared_by_two_qps)
{
    nodes_init();
    link_up(0, &STD, SPLIT_RANDOM, 51, true);
    link_up(1, &STD, SPLIT_ONE, 52, true);
    struct node *r = &N[1];
    for (unsigned i = 0; i < 5; i++)
        srq_post(r, 1 + i, DST_OFF + i * 4096u, 4000);
    r->srq.limit = 3; /* fires once when fewer than 3 remain */
    fill(N[0].mem, 16384, 9);
    /* Sends alternate between the links; the SRQ hands out receives in posting order. */
    static const uint32_t len[4] = {100, 3000, 1, 4000};
    for (unsigned i = 0; i < 4; i++) {
        unsigned l = i & 1u;
        ASSERT_EQ(post_wr(&E[2 * l], IWARP_WR_SEND, 0, 20 + i, i * 4096u, len[i], 0, 0, 0), 0);
        pump(l);
        expect_wc(&r->rcq, &(struct want_wc){1 + i, IWARP_WC_SUCCESS, IWARP_WC_RECV, len[i],
                                             QPN(2 * l + 1), 0, 0});
        expect_wc(&N[0].scq, &(struct want_wc){20 + i, IWARP_WC_SUCCESS, IWARP_WC_SEND, len[i],
                                               QPN(2 * l), 0, 0});
        mem_eq(r->mem + DST_OFF + i * 4096u, N[0].mem + i * 4096u, len[i]);
    }
    /* The limit event came from the QP whose pull left 2 (the third Send, link 0). */
    ASSERT_EQ(E[1].nev, 1);
    ASSERT_EQ(E[1].ev[0].type, IWARP_EVENT_SRQ_LIMIT_REACHED);
    ASSERT_EQ(E[3].nev, 0);
    /* One receive left: link 0 takes it; link 1's next Send finds the SRQ empty: DDP "no
     * buffer" (RFC 5041 §7.1 check 4), on link 1 only. */
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 30, 0, 10, 0, 0, 0), 0);
    pump(0);
    expect_wc(&r->rcq, &(struct want_wc){5, IWARP_WC_SUCCESS, IWARP_WC_RECV, 10, QPN(1), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){30, IWARP_WC_SUCCESS, IWARP_WC_SEND, 10, QPN(0), 0, 0});
    ASSERT_EQ(post_wr(&E[2], IWARP_WR_SEND, 0, 31, 0, 10, 0, 0, 0), 0);
    pump(1);
    /* The QP that failed: the fatal error, then Last WQE Reached once (its SRQ receives are
     * all flushed). */
    ASSERT_TRUE(E[3].nev >= 2);
    ASSERT_EQ(E[3].ev[0].type, IWARP_EVENT_QP_FATAL);
    ASSERT_EQ_U(E[3].ev[0].cause, cause_u32(1, 2, 0x02));
    ASSERT_FALSE(E[3].ev[0].peer);
    ASSERT_EQ(E[3].ev[1].type, IWARP_EVENT_QP_LAST_WQE_REACHED);
    ASSERT_EQ(E[3].nev, 2); /* BUG 3: a second Last WQE Reached when the transport closes */
    ASSERT_EQ(E[1].nev, 1);
    ASSERT_EQ(E[2].nev, 1);
    ASSERT_EQ_U(E[2].ev[0].cause, cause_u32(1, 2, 0x02));
    ASSERT_TRUE(E[2].ev[0].peer);
    expect_wc(&N[0].scq, &(struct want_wc){31, IWARP_WC_SUCCESS, IWARP_WC_SEND, 10, QPN(2), 0, 0});
    /* Link 0 still works with the same SRQ. */
    srq_post(r, 6, DST_OFF + 8 * 4096u, 100);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 32, 0, 99, 0, 0, 0), 0);
    pump(0);
    expect_wc(&r->rcq, &(struct want_wc){6, IWARP_WC_SUCCESS, IWARP_WC_RECV, 99, QPN(1), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){32, IWARP_WC_SUCCESS, IWARP_WC_SEND, 99, QPN(0), 0, 0});
    ASSERT_EQ(E[1].qp.stream.state, IWARP_CORE_STREAM_RUNNING);
    ASSERT_EQ(E[3].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    expect_cq_empty(&r->rcq);
}

/* ---- memory windows and invalidation ------------------------------------------------------- */

static const uint32_t WREMOTE = IWARP_MEM_ACCESS_REMOTE_WRITE | IWARP_MEM_ACCESS_REMOTE_READ;

/* A type-1 window over [WIN_OFF + off, + len) of node n, bound by the verb. */
static uint32_t bind_type1(struct node *n, uint32_t off, uint32_t len)
{
    uint32_t mw = 0, stag = 0;
    ASSERT_EQ(iwarp_mem_alloc_mw(&n->T, PD1, IWARP_MEM_MW_TYPE1, &mw), 0);
    struct iwarp_mem_bind b = {.mr_stag = n->key,
                               .addr = (uint64_t)(uintptr_t)(n->mem + WIN_OFF + off),
                               .length = len,
                               .access = WREMOTE};
    ASSERT_EQ(iwarp_mem_bind_mw(&n->T, mw, PD1, 0, &b, &stag), 0);
    ASSERT_TRUE(stag != mw); /* each bind picks a new key */
    return stag;
}

/* A type-2 window bound by IWARP_WR_BIND_MW on end e's send queue (link l pumped). */
static uint32_t bind_type2(unsigned l, struct end *e, uint32_t off, uint32_t len)
{
    struct node *n = e->n;
    uint32_t mw = 0;
    ASSERT_EQ(iwarp_mem_alloc_mw(&n->T, PD1, IWARP_MEM_MW_TYPE2, &mw), 0);
    struct iwarp_mw mwo = {.rkey = mw, .type = IWARP_MW_TYPE_2};
    struct iwarp_mr mro = {.lkey = n->key, .rkey = n->key};
    struct iwarp_send_wr w = {.wr_id = 77, .opcode = IWARP_WR_BIND_MW};
    w.bind_mw.mw = &mwo;
    w.bind_mw.rkey = iwarp_inc_rkey(mw);
    w.bind_mw.bind_info =
        (struct iwarp_mw_bind_info){.mr = &mro,
                                    .addr = (uint64_t)(uintptr_t)(n->mem + WIN_OFF + off),
                                    .length = len,
                                    .mw_access_flags = WREMOTE};
    ASSERT_EQ(iwarp_core_qp_post_send(&e->qp, &w), 0);
    pump(l);
    expect_wc(&n->scq,
              &(struct want_wc){77, IWARP_WC_SUCCESS, IWARP_WC_BIND_MW, 0, e->qp.cfg.qp_num, 0, 0});
    return iwarp_inc_rkey(mw);
}

TEST(memory_windows_type1_and_type2_carry_writes_and_reads)
{
    nodes_init();
    link_up(0, &STD, SPLIT_RANDOM, 61, false);
    struct node *r = &N[1];
    uint32_t w1 = bind_type1(r, 0, 8192);
    uint32_t w2 = bind_type2(0, &E[1], 16384, 8192);
    uint64_t to1 = (uint64_t)(uintptr_t)(r->mem + WIN_OFF);
    uint64_t to2 = (uint64_t)(uintptr_t)(r->mem + WIN_OFF + 16384);
    memset(r->mem + WIN_OFF, GUARD, 32768);
    fill(N[0].mem, 16384, 12);
    /* Writes through both windows, right up to their ends. */
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 1, 0, 5000, to1 + 3192, w1, 0), 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 2, 8192, 8192, to2, w2, 0), 0);
    pump(0);
    mem_eq(r->mem + WIN_OFF + 3192, N[0].mem, 5000);
    mem_eq(r->mem + WIN_OFF + 16384, N[0].mem + 8192, 8192);
    ASSERT_TRUE(all_eq(r->mem + WIN_OFF, 3192, GUARD));
    ASSERT_TRUE(all_eq(r->mem + WIN_OFF + 8192, 8192, GUARD));
    /* Reads back through them. */
    memset(N[0].mem + DST_OFF, 0, 16384);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 3, DST_OFF, 5000, to1 + 3192, w1, 0), 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 4, DST_OFF + 8192, 8192, to2, w2, 0), 0);
    pump(0);
    mem_eq(N[0].mem + DST_OFF, N[0].mem, 5000);
    mem_eq(N[0].mem + DST_OFF + 8192, N[0].mem + 8192, 8192);
    expect_wc(&N[0].scq, &(struct want_wc){1, 0, IWARP_WC_RDMA_WRITE, 5000, QPN(0), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){2, 0, IWARP_WC_RDMA_WRITE, 8192, QPN(0), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){3, 0, IWARP_WC_RDMA_READ, 5000, QPN(0), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){4, 0, IWARP_WC_RDMA_READ, 8192, QPN(0), 0, 0});
    /* Send with Invalidate of the type-2 window, then a local invalidate of an MR: both STags
     * are now invalid (RFC 5040 §2.4, §5.3). */
    post_recv(&E[1], 5, DST_OFF, 64);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND_WITH_INV, 0, 6, 0, 64, 0, 0, w2), 0);
    uint32_t mr =
        reg(r, PD1, INV_OFF, 4096, IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(post_wr(&E[1], IWARP_WR_LOCAL_INV, 0, 7, 0, 0, 0, 0, mr), 0);
    pump(0);
    expect_wc(&r->rcq, &(struct want_wc){5, 0, IWARP_WC_RECV, 64, QPN(1), IWARP_WC_WITH_INV, w2});
    expect_wc(&r->scq, &(struct want_wc){7, 0, IWARP_WC_LOCAL_INV, 0, QPN(1), 0, 0});
    struct iwarp_mem_entry *ent;
    ASSERT_EQ(iwarp_mem_stag_lookup(&r->T, w2, &ent), 0);
    ASSERT_EQ(ent->state, IWARP_MEM_INVALID);
    ASSERT_EQ(iwarp_mem_stag_lookup(&r->T, mr, &ent), 0);
    ASSERT_EQ(ent->state, IWARP_MEM_INVALID);
    ASSERT_EQ(E[0].nev + E[1].nev, 0);
}

/* ---- errors from the remote side --------------------------------------------------------- */

/* What the offender's segment looked like, for the Terminate's header copies. */
struct offender {
    bool tagged;
    uint32_t stag;    /* tagged */
    uint32_t qn, msn; /* untagged */
    bool rr;
    uint32_t rr_src_stag;
    uint32_t seg_len; /* ULPDU_Length; 0: not checked */
};
static struct offender OFF;

struct err_case {
    const char *name;
    void (*provoke)(void);
    uint32_t cause;
    uint8_t hdrct;
    int recv_status; /* the first receive's completion (WR_FLUSH_ERR: not addressed) */
    bool no_recv;    /* post no receive */
    bool crc, mark;
    void (*prep)(void); /* run before the receives are posted and the capture starts */
};

#define MD  (IWARP_TERM_FLAG_M | IWARP_TERM_FLAG_D)
#define MDR (IWARP_TERM_FLAG_M | IWARP_TERM_FLAG_D | IWARP_TERM_FLAG_R)

static void bad_write(uint32_t rkey, uint64_t to, uint32_t len)
{
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 1, SRC_OFF, len, to, rkey, 0), 0);
    OFF = (struct offender){.tagged = true, .stag = rkey, .seg_len = 14u + len};
}

static void bad_read(uint32_t rkey, uint64_t to, uint32_t len)
{
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 1, DST_OFF, len, to, rkey, 0), 0);
    OFF = (struct offender){
        .qn = 1, .msn = E[0].qp.read_msn, .rr = true, .rr_src_stag = rkey, .seg_len = 46};
}

static uint32_t bad_stag(void)
{
    return (NENT + 3u) << 8 | 0x11u; /* an index beyond the table */
}

static uint64_t raddr(uint32_t off)
{
    return addr_of(&E[1], off);
}

static void p_write_bad_stag(void)
{
    bad_write(bad_stag(), raddr(DST_OFF), 64);
}
static void p_write_bad_key(void)
{
    bad_write(N[1].key ^ 0x5Au, raddr(DST_OFF), 64);
}
static void p_write_pd(void)
{
    bad_write(N[1].pd2, raddr(PD2_OFF), 64);
}
static void p_write_rights(void)
{
    bad_write(N[1].ro, raddr(RO_OFF), 64);
}
static void p_write_bounds(void)
{
    bad_write(N[1].small, raddr(SMALL_OFF + 4096 - 50), 100);
}
static void p_read_bad_stag(void)
{
    bad_read(bad_stag(), raddr(SRC_OFF), 64);
}
static void p_read_bad_key(void)
{
    bad_read(N[1].key ^ 0x5Au, raddr(SRC_OFF), 64);
}
static void p_read_pd(void)
{
    bad_read(N[1].pd2, raddr(PD2_OFF), 64);
}
static void p_read_rights(void)
{
    bad_read(N[1].ro, raddr(RO_OFF), 64);
}
static void p_read_bounds(void)
{
    bad_read(N[1].small, raddr(SMALL_OFF + 4096 - 50), 100);
}
static void p_read_to_wrap(void)
{
    bad_read(N[1].key, UINT64_MAX - 10u, 64);
}

/* Encode msg with payload, let patch change it, and inject it from the initiator. */
static void inject_msg(const struct iwarp_wire_msg *m, size_t payload, void (*patch)(uint8_t *))
{
    static uint8_t seg[512];
    static uint8_t data[256];
    fill(data, sizeof data, 5);
    iwarp_ssize n = iwarp_wire_segment_encode(seg, sizeof seg, m, data, payload);
    ASSERT_TRUE(n > 0);
    if (patch)
        patch(seg);
    bool tagged = seg[0] & IWARP_DDP_FLAG_TAGGED;
    OFF = (struct offender){.tagged = tagged,
                            .stag = m->stag,
                            .qn = tagged ? 0
                                         : (uint32_t)seg[6] << 24 | (uint32_t)seg[7] << 16 |
                                               (uint32_t)seg[8] << 8 | seg[9],
                            .msn = m->msn,
                            .seg_len = (uint32_t)n};
    inject(0, 0, seg, (size_t)n);
}

static struct iwarp_wire_msg send_msg(uint32_t msn, uint32_t mo)
{
    return (struct iwarp_wire_msg){
        .opcode = IWARP_RDMAP_OP_SEND, .last = true, .msn = msn, .mo = mo};
}

static void p_write_to_wrap(void)
{
    struct iwarp_wire_msg m = {
        .opcode = IWARP_RDMAP_OP_WRITE, .last = true, .stag = N[1].key, .to = UINT64_MAX - 10u};
    inject_msg(&m, 64, NULL);
}
static void patch_qn3(uint8_t *s)
{
    s[9] = 3; /* QN 3: no such queue (RFC 5040 Figure 4) */
}
static void p_wrong_qn(void)
{
    struct iwarp_wire_msg m = send_msg(E[0].qp.send_msn, 0);
    inject_msg(&m, 32, patch_qn3);
}
static void p_msn_gap(void)
{
    struct iwarp_wire_msg m = send_msg(E[0].qp.send_msn + 1u, 0);
    inject_msg(&m, 32, NULL);
}
static void p_mo_mismatch(void)
{
    struct iwarp_wire_msg m = send_msg(E[0].qp.send_msn, 96);
    inject_msg(&m, 32, NULL);
}
static void p_too_long(void)
{
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 1, SRC_OFF, 300, 0, 0, 0), 0);
    OFF = (struct offender){.qn = 0, .msn = E[0].qp.send_msn, .seg_len = 18u + 300u};
}
static void p_no_recv(void)
{
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 1, SRC_OFF, 30, 0, 0, 0), 0);
    OFF = (struct offender){.qn = 0, .msn = E[0].qp.send_msn, .seg_len = 18u + 30u};
}
static void p_ird_exceeded(void)
{
    /* The initiator ignores the negotiated IRD (RFC 6581 §9.1) and sends IRD + 1 Reads. */
    ASSERT_EQ_U(E[1].qp.ird, IRD);
    E[0].qp.ord = IWARP_CORE_MAX_ORD;
    for (uint32_t i = 0; i <= IRD; i++)
        ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 1 + i, DST_OFF + i * 1024u, 1000,
                          raddr(SRC_OFF), N[1].key, 0),
                  0);
    OFF = (struct offender){.qn = 1, .msn = E[0].qp.read_msn + IRD, .seg_len = 46};
}
static void patch_dv2(uint8_t *s)
{
    s[0] = (uint8_t)((s[0] & ~IWARP_DDP_MASK_DV) | 2u);
}
static void p_ddp_version_untagged(void)
{
    struct iwarp_wire_msg m = send_msg(E[0].qp.send_msn, 0);
    inject_msg(&m, 32, patch_dv2);
}
static void p_ddp_version_tagged(void)
{
    struct iwarp_wire_msg m = {
        .opcode = IWARP_RDMAP_OP_WRITE, .last = true, .stag = N[1].key, .to = raddr(DST_OFF)};
    inject_msg(&m, 64, patch_dv2);
}
static void patch_rv2(uint8_t *s)
{
    s[1] = (uint8_t)((s[1] & 0x3Fu) | 0x80u); /* RV 2 in the top two bits */
}
static void p_rdmap_version(void)
{
    struct iwarp_wire_msg m = send_msg(E[0].qp.send_msn, 0);
    inject_msg(&m, 32, patch_rv2);
}
static void patch_op_c(uint8_t *s)
{
    s[1] = (uint8_t)((s[1] & 0xF0u) | 0x0Cu); /* OpCode 0xC: undefined */
}
static void p_opcode_undefined(void)
{
    struct iwarp_wire_msg m = send_msg(E[0].qp.send_msn, 0);
    inject_msg(&m, 32, patch_op_c);
}
static void p_opcode_immediate(void)
{
    struct iwarp_wire_msg m = {
        .opcode = IWARP_RDMAP_OP_IMM_DATA, .last = true, .msn = E[0].qp.send_msn};
    inject_msg(&m, 0, NULL);
}
static void p_read_response_unsolicited(void)
{
    struct iwarp_wire_msg m = {
        .opcode = IWARP_RDMAP_OP_READ_RESP, .last = true, .stag = N[1].key, .to = raddr(DST_OFF)};
    inject_msg(&m, 64, NULL);
}
static void p_crc(void)
{
    FLIP_ON = true;
    FLIP_LINK = 0;
    FLIP_DIR = 0;
    FLIP_AT = L[0].pipe[0].off + 40; /* inside the next FPDU's payload */
    FLIP_MASK = 0x10;
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 1, SRC_OFF, 100, 0, 0, 0), 0);
    OFF = (struct offender){0};
}
static void p_marker(void)
{
    FLIP_ON = true;
    FLIP_LINK = 0;
    FLIP_DIR = 0;
    FLIP_AT = next_marker_off(0, 0) + 3; /* FPDUPTR's low octet */
    FLIP_MASK = 0x10;
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 1, SRC_OFF, 3000, raddr(DST_OFF + 8192),
                      N[1].key, 0),
              0);
    OFF = (struct offender){0};
}
static void p_mw1_write_beyond(void)
{
    uint32_t w = bind_type1(&N[1], 0, 4096);
    bad_write(w, raddr(WIN_OFF + 4000), 200);
}
static void p_mw2_read_beyond(void)
{
    uint32_t w = bind_type2(0, &E[1], 8192, 4096);
    bad_read(w, raddr(WIN_OFF + 8192 + 4096), 1);
}
static uint32_t INVALIDATED;
static void prep_send_inv(void)
{
    /* A type-2 window, invalidated by the peer's Send with Invalidate (RFC 5040 §5.3). */
    uint32_t w = bind_type2(0, &E[1], 8192, 4096);
    post_recv(&E[1], 899, DST_OFF + 2048, 16);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND_WITH_INV, 0, 2, SRC_OFF, 0, 0, 0, w), 0);
    pump(0);
    expect_wc(&N[1].rcq, &(struct want_wc){899, 0, IWARP_WC_RECV, 0, QPN(1), IWARP_WC_WITH_INV, w});
    expect_wc(&N[0].scq, &(struct want_wc){2, 0, IWARP_WC_SEND, 0, QPN(0), 0, 0});
    INVALIDATED = w;
}
static void p_write_after_send_inv(void)
{
    bad_write(INVALIDATED, raddr(WIN_OFF + 8192), 64);
}
static void p_write_after_local_inv(void)
{
    uint32_t mr = reg(&N[1], PD1, INV_OFF, 4096,
                      IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(post_wr(&E[1], IWARP_WR_LOCAL_INV, 0, 78, 0, 0, 0, 0, mr), 0);
    pump(0);
    expect_wc(&N[1].scq, &(struct want_wc){78, 0, IWARP_WC_LOCAL_INV, 0, QPN(1), 0, 0});
    bad_write(mr, raddr(INV_OFF), 64);
}
static void p_send_inv_type1(void)
{
    /* RFC 5040 §7.2 check 5 / mem_region.h: a type-1 window cannot be invalidated remotely. */
    uint32_t w = bind_type1(&N[1], 0, 4096);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND_WITH_INV, 0, 1, SRC_OFF, 16, 0, 0, w), 0);
    OFF = (struct offender){.qn = 0, .msn = E[0].qp.send_msn, .seg_len = 18u + 16u};
}

/* ---- RFC 7306 errors (docs/design.md, "Atomic errors") ---- */

/* An atomic of the initiator on the responder's memory at rkey, offset off; the offender it
 * sends is its Atomic Request (QN 1, 70 octets). */
static void bad_atomic(uint32_t rkey, uint32_t off)
{
    ASSERT_EQ(post_atomic(IWARP_WR_ATOMIC_FETCH_AND_ADD, 1, DST_OFF, rkey, off, 1, 0, 0, 0), 0);
    OFF = (struct offender){.qn = 1, .msn = E[0].qp.read_msn, .seg_len = 70};
}
static void p_atomic_misaligned(void)
{
    bad_atomic(N[1].key, DST_OFF + 4); /* RFC 7306 §8.2 */
}
static void p_atomic_rights(void)
{
    bad_atomic(N[1].small, SMALL_OFF); /* remote read and write, not atomic */
}
static void p_atomic_bounds(void)
{
    bad_atomic(N[1].key, NODE_MEM - 4);
}
static void p_atomic_bad_stag(void)
{
    bad_atomic(bad_stag(), DST_OFF);
}
static void patch_aopcode_1(uint8_t *s)
{
    s[IWARP_DDP_UNTAGGED_HDR_LEN + 3] = 1; /* AOpCode 1 (Swap): not one RFC 7306 defines */
}
static void p_atomic_aopcode(void)
{
    struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_ATOMIC_REQ,
                               .last = true,
                               .msn = E[0].qp.read_msn,
                               .body.atomic_req = {.stag = N[1].key, .to = raddr(DST_OFF)}};
    inject_msg(&m, 0, patch_aopcode_1);
}
static void p_atomic_short(void)
{
    /* RFC 7306 §5.2.1: 52 octets of header; 48 is 0/2/0xFF as for any fixed-size message */
    static uint8_t seg[128];
    struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_ATOMIC_REQ,
                               .last = true,
                               .msn = E[0].qp.read_msn,
                               .body.atomic_req = {.stag = N[1].key, .to = raddr(DST_OFF)}};
    iwarp_ssize n = iwarp_wire_segment_encode(seg, sizeof seg, &m, NULL, 0);
    ASSERT_EQ(n, 70);
    OFF = (struct offender){.qn = 1, .msn = m.msn, .seg_len = 66};
    inject(0, 0, seg, 66);
}
static void p_atomic_ird_exceeded(void)
{
    /* IRD + 1 atomics: the Read Requests' excess, 1/2/0x02 (RFC 7306 §5.2.2 rule 4) */
    E[0].qp.ord = IWARP_CORE_MAX_ORD;
    for (uint32_t i = 0; i <= IRD; i++)
        ASSERT_EQ(post_atomic(IWARP_WR_ATOMIC_CMP_AND_SWP, 1 + i, DST_OFF + 8 * i, N[1].key,
                              DST_OFF, 0, 1, 0, 0),
                  0);
    OFF = (struct offender){.qn = 1, .msn = E[0].qp.read_msn + IRD, .seg_len = 70};
}
static void p_atomic_response_unsolicited(void)
{
    struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_ATOMIC_RESP, .last = true, .msn = 1};
    inject_msg(&m, 0, NULL);
}
static void p_immediate_data_no_recv(void)
{
    struct iwarp_send_wr w = {.wr_id = 1, .opcode = IWARP_WR_IMM_DATA};
    w.imm_data64 = 7;
    ASSERT_EQ(iwarp_core_qp_post_send(&E[0].qp, &w), 0);
    OFF = (struct offender){.qn = 0, .msn = E[0].qp.send_msn, .seg_len = 26};
}

static const struct err_case ERRS[] = {
    /* RFC 5041 §7.2 tagged buffer errors on a Write (DDP layer; mem_access.h) */
    {"write bad stag", p_write_bad_stag, 0x010100, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false,
     NULL},
    {"write bad key", p_write_bad_key, 0x010100, MD, IWARP_WC_WR_FLUSH_ERR, false, false, true,
     NULL},
    {"write pd", p_write_pd, 0x010102, MD, IWARP_WC_WR_FLUSH_ERR, false, true, true, NULL},
    {"write rights", p_write_rights, 0x010100, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false, NULL},
    {"write bounds", p_write_bounds, 0x010101, MD, IWARP_WC_WR_FLUSH_ERR, false, false, false,
     NULL},
    {"write to wrap", p_write_to_wrap, 0x010103, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false,
     NULL},
    {"write ddp version", p_ddp_version_tagged, 0x010104, MD, IWARP_WC_WR_FLUSH_ERR, false, true,
     true, NULL},
    /* RFC 5040 §7.2 check 4 on a Read Request's Data Source (RDMAP Remote Protection + R) */
    {"read bad stag", p_read_bad_stag, 0x000100, MDR, IWARP_WC_WR_FLUSH_ERR, false, true, false,
     NULL},
    {"read bad key", p_read_bad_key, 0x000100, MDR, IWARP_WC_WR_FLUSH_ERR, false, false, true,
     NULL},
    {"read pd", p_read_pd, 0x000103, MDR, IWARP_WC_WR_FLUSH_ERR, false, true, false, NULL},
    {"read rights", p_read_rights, 0x000102, MDR, IWARP_WC_WR_FLUSH_ERR, false, true, true, NULL},
    {"read bounds", p_read_bounds, 0x000101, MDR, IWARP_WC_WR_FLUSH_ERR, false, false, false, NULL},
    {"read to wrap", p_read_to_wrap, 0x000104, MDR, IWARP_WC_WR_FLUSH_ERR, false, true, false,
     NULL},
    /* RFC 5041 §7.2 untagged buffer errors */
    {"wrong qn", p_wrong_qn, 0x010201, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false, NULL},
    {"no receive", p_no_recv, 0x010202, MD, IWARP_WC_WR_FLUSH_ERR, true, true, true, NULL},
    {"ird exceeded", p_ird_exceeded, 0x010202, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false, NULL},
    {"msn gap", p_msn_gap, 0x010203, MD, IWARP_WC_WR_FLUSH_ERR, false, false, true, NULL},
    {"mo mismatch", p_mo_mismatch, 0x010204, MD, IWARP_WC_LOC_QP_OP_ERR, false, true, false, NULL},
    {"too long", p_too_long, 0x010205, MD, IWARP_WC_LOC_LEN_ERR, false, true, true, NULL},
    {"send ddp version", p_ddp_version_untagged, 0x010206, MD, IWARP_WC_WR_FLUSH_ERR, false, true,
     false, NULL},
    /* RFC 5040 §4.8 Remote Operation errors */
    {"rdmap version", p_rdmap_version, 0x000205, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false,
     NULL},
    {"opcode undefined", p_opcode_undefined, 0x000206, MD, IWARP_WC_WR_FLUSH_ERR, false, false,
     false, NULL},
    {"opcode rfc7306", p_opcode_immediate, 0x000206, MD, IWARP_WC_WR_FLUSH_ERR, false, true, true,
     NULL},
    {"read response unsolicited", p_read_response_unsolicited, 0x000206, MD, IWARP_WC_WR_FLUSH_ERR,
     false, true, false, NULL},
    /* RFC 5044 §8 LLP errors: no header copies */
    {"crc", p_crc, 0x020002, 0, IWARP_WC_WR_FLUSH_ERR, false, true, false, NULL},
    {"marker crc off", p_marker, 0x020003, 0, IWARP_WC_WR_FLUSH_ERR, false, false, true, NULL},
    {"marker crc on", p_marker, 0x020002, 0, IWARP_WC_WR_FLUSH_ERR, false, true, true, NULL},
    /* windows and invalidation */
    {"mw1 write beyond", p_mw1_write_beyond, 0x010101, MD, IWARP_WC_WR_FLUSH_ERR, false, true,
     false, NULL},
    {"mw2 read beyond", p_mw2_read_beyond, 0x000101, MDR, IWARP_WC_WR_FLUSH_ERR, false, true, true,
     NULL},
    {"write after send inv", p_write_after_send_inv, 0x010100, MD, IWARP_WC_WR_FLUSH_ERR, false,
     true, false, prep_send_inv},
    {"write after local inv", p_write_after_local_inv, 0x010100, MD, IWARP_WC_WR_FLUSH_ERR, false,
     false, false, NULL},
    {"send inv type1", p_send_inv_type1, 0x000109, MD, IWARP_WC_REM_INV_REQ_ERR, false, true, false,
     NULL},
};

/* RFC 7306 errors, with the extensions enabled on both QPs (RDMAP_EXT): M and D, no RDMA
 * header (RFC 7306 §8.1 rule 2). */
static const struct err_case ERRS_7306[] = {
    {"atomic misaligned", p_atomic_misaligned, 0x000207, MD, IWARP_WC_WR_FLUSH_ERR, false, true,
     false, NULL},
    {"atomic rights", p_atomic_rights, 0x000102, MD, IWARP_WC_WR_FLUSH_ERR, false, false, true,
     NULL},
    {"atomic bounds", p_atomic_bounds, 0x000101, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false,
     NULL},
    {"atomic bad stag", p_atomic_bad_stag, 0x000100, MD, IWARP_WC_WR_FLUSH_ERR, false, false, false,
     NULL},
    {"atomic aopcode", p_atomic_aopcode, 0x000206, MD, IWARP_WC_WR_FLUSH_ERR, false, true, false,
     NULL},
    {"atomic short", p_atomic_short, 0x0002FF, MD, IWARP_WC_WR_FLUSH_ERR, false, true, true, NULL},
    {"atomic ird exceeded", p_atomic_ird_exceeded, 0x010202, MD, IWARP_WC_WR_FLUSH_ERR, false, true,
     false, NULL},
    {"atomic response unsolicited", p_atomic_response_unsolicited, 0x000206, MD,
     IWARP_WC_WR_FLUSH_ERR, false, true, false, NULL},
    {"immediate data no receive", p_immediate_data_no_recv, 0x010202, MD, IWARP_WC_WR_FLUSH_ERR,
     true, true, false, NULL},
};

/* Check the Terminate as decoded from the detector's side of the wire. */
static void check_terminate(const struct err_case *c)
{
    static struct captured cap;
    deframe_capture(&CAP[0][1], &cap);
    if (cap.nterm != 1 || !cap.term_last)
        harness_fail(__FILE__, __LINE__, "%s: %u Terminates, last %d", c->name, cap.nterm,
                     cap.term_last);
    struct iwarp_term t;
    const uint8_t *seg = cap.term;
    /* RFC 5040 §4.8: an untagged DDP header on queue 2, MSN 1, MO 0, L. */
    ASSERT_EQ(seg[0], IWARP_DDP_FLAG_LAST | IWARP_DDP_VERSION);
    ASSERT_EQ(seg[1], 0x40u | IWARP_RDMAP_OP_TERMINATE);
    ASSERT_EQ(seg[9], 2);
    ASSERT_EQ(seg[13], 1);
    iwarp_ssize n = iwarp_term_decode(seg + IWARP_DDP_UNTAGGED_HDR_LEN,
                                      cap.term_len - IWARP_DDP_UNTAGGED_HDR_LEN, &t);
    ASSERT_EQ(n, (iwarp_ssize)(cap.term_len - IWARP_DDP_UNTAGGED_HDR_LEN));
    ASSERT_FALSE(t.siw_swapped);
    uint32_t got = cause_u32(t.ctrl.cause.layer, t.ctrl.cause.etype, t.ctrl.cause.ecode);
    if (got != c->cause)
        harness_fail(__FILE__, __LINE__, "%s: Terminate cause 0x%06x, want 0x%06x", c->name, got,
                     c->cause);
    ASSERT_EQ(t.ctrl.hdrct, c->hdrct);
    if (c->hdrct & IWARP_TERM_FLAG_D) {
        /* RFC 5040 §4.8: DDP Segment Length and the offending DDP header. */
        if (OFF.seg_len)
            ASSERT_EQ(t.ddp_seg_len, OFF.seg_len);
        ASSERT_EQ(t.ddp.tagged, OFF.tagged);
        if (OFF.tagged) {
            ASSERT_EQ_U(t.ddp.stag, OFF.stag);
        } else {
            ASSERT_EQ_U(t.ddp.qn, OFF.qn);
            ASSERT_EQ_U(t.ddp.msn, OFF.msn);
        }
    }
    if (c->hdrct & IWARP_TERM_FLAG_R)
        ASSERT_EQ_U(t.rdma.src_stag, OFF.rr_src_stag);
}

static void run_error(const struct err_case *c, unsigned idx)
{
    if (getenv("E2E_VERBOSE"))
        fprintf(stderr, "error case: %s\n", c->name);
    nodes_init();
    struct cfg o = {.rev = 2, .crc = c->crc, .mark = c->mark, .rtr = IWARP_MPA_RTR_WRITE};
    link_up(0, &o, SPLIT_RANDOM, 1000u + idx, false);
    struct node *a = &N[0], *b = &N[1];
    fill(a->mem + SRC_OFF, 65536, idx);
    memset(b->mem + DST_OFF, GUARD, 65536);
    memset(b->mem + AUX_OFF, GUARD, AUX_LEN);
    memset(a->mem + DST_OFF, GUARD, 65536);
    if (c->prep)
        c->prep();
    if (!c->no_recv) {
        post_recv(&E[1], 900, DST_OFF, 256);
        post_recv(&E[1], 901, DST_OFF + 1024, 256);
    }
    capture_start(0, 1);
    c->provoke();
    /* Work posted behind the offending operation: nothing of it may be placed. */
    ASSERT_EQ(
        post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 50, SRC_OFF, 64, raddr(DST_OFF + 4096), b->key, 0),
        0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 51, SRC_OFF, 16, 0, 0, 0), 0);
    ASSERT_EQ(
        post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 52, DST_OFF + 32768, 64, raddr(SRC_OFF), b->key, 0),
        0);
    maybe_stall(0);
    pump(0);

    check_terminate(c);
    /* Async events: the detector's (local) and the offender's (the peer's cause). */
    if (E[1].nev != 1 || E[0].nev != 1)
        harness_fail(__FILE__, __LINE__, "%s: %u/%u events", c->name, E[1].nev, E[0].nev);
    ASSERT_EQ(E[1].ev[0].type, event_for(c->cause));
    ASSERT_EQ_U(E[1].ev[0].cause, c->cause);
    ASSERT_FALSE(E[1].ev[0].peer);
    ASSERT_EQ(E[0].ev[0].type, event_for(c->cause));
    ASSERT_EQ_U(E[0].ev[0].cause, c->cause);
    ASSERT_TRUE(E[0].ev[0].peer);
    /* The detector: the receive the message was addressed to fails with its status, the
     * others flush. */
    if (!c->no_recv) {
        struct want_wc w = {900, c->recv_status, IWARP_WC_RECV, 0, QPN(1), 0, 0};
        expect_wc(&b->rcq, &w);
        w.wr_id = 901;
        w.status = IWARP_WC_WR_FLUSH_ERR;
        expect_wc(&b->rcq, &w);
    }
    expect_cq_empty(&b->rcq);
    expect_cq_empty(&b->scq);
    /* The offender: completions in posting order; once one failed, the rest are flushed. */
    struct iwarp_wc wc;
    bool failed = false;
    unsigned nwc = 0;
    while (iwarp_core_cq_poll(&a->scq, &wc, 1) == 1) {
        nwc++;
        ASSERT_EQ_U(wc.qp_num, QPN(0));
        if (failed && wc.status != IWARP_WC_WR_FLUSH_ERR) {
            harness_fail(__FILE__, __LINE__, "%s: wr %" PRIu64 " status %d after an error", c->name,
                         wc.wr_id, wc.status);
        }
        if (wc.status != IWARP_WC_SUCCESS)
            failed = true;
        if (wc.opcode == IWARP_WC_RDMA_READ) /* no Read can have been answered after it */
            ASSERT_NE(wc.status, IWARP_WC_SUCCESS);
    }
    ASSERT_TRUE(failed);
    ASSERT_TRUE(nwc >= 3);
    expect_cq_empty(&a->rcq);
    /* Nothing was placed: every guard is intact. With CRC off the octets of the damaged FPDU
     * that came before its bad marker may already be in place (RFC 5044 §4.4: nothing to
     * verify; direct placement), never one after it. */
    if (c->provoke == p_marker && !c->crc) {
        const uint8_t *d = b->mem + DST_OFF + 8192, *src = a->mem + SRC_OFF;
        size_t i = 0;
        while (i < 3000 && d[i] == src[i])
            i++;
        ASSERT_TRUE(i < 3000);
        ASSERT_TRUE(all_eq(d + i, 3000 - i, GUARD));
        memset(b->mem + DST_OFF + 8192, GUARD, 3000);
    }
    if (c->provoke == p_send_inv_type1) {
        /* RFC 5040 §5.3: the Invalidate STag is checked at Delivery, after Placement: the
         * receive holds the message and completes in error. */
        mem_eq(b->mem + DST_OFF, a->mem + SRC_OFF, 16);
        memset(b->mem + DST_OFF, GUARD, 16);
    }
    ASSERT_TRUE(all_eq(b->mem + DST_OFF, 65536, GUARD));
    ASSERT_TRUE(all_eq(b->mem + AUX_OFF, AUX_LEN, GUARD));
    ASSERT_TRUE(all_eq(a->mem + DST_OFF, 65536, GUARD));
    /* Both streams are over and their transports closed; later work flushes at once. */
    ASSERT_EQ(E[0].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(E[1].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_TRUE(L[0].closed[0] && L[0].closed[1]);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 60, SRC_OFF, 8, 0, 0, 0), 0);
    expect_wc(&a->scq,
              &(struct want_wc){60, IWARP_WC_WR_FLUSH_ERR, IWARP_WC_SEND, 0, QPN(0), 0, 0});
}

TEST(every_remote_error_class_terminates_both_sides)
{
    for (unsigned i = 0; i < sizeof ERRS / sizeof ERRS[0]; i++)
        run_error(&ERRS[i], i);
}

TEST(every_rfc7306_error_terminates_both_sides)
{
    RDMAP_EXT = IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS;
    for (unsigned i = 0; i < sizeof ERRS_7306 / sizeof ERRS_7306[0]; i++)
        run_error(&ERRS_7306[i], 100u + i);
    RDMAP_EXT = 0;
}

/* ---- a peer that vanishes, one that sends garbage --------------------------------------- */

/* Count the completions of a CQ: each wr_id once, statuses per allowed mask. */
static unsigned drain(struct iwarp_core_cq *cq, uint32_t qpn, uint32_t allowed)
{
    struct iwarp_wc wc;
    unsigned n = 0;
    while (iwarp_core_cq_poll(cq, &wc, 1) == 1) {
        ASSERT_EQ_U(wc.qp_num, qpn);
        if (!(allowed & (1u << wc.status)))
            harness_fail(__FILE__, __LINE__, "wr %" PRIu64 ": status %d", wc.wr_id, wc.status);
        n++;
    }
    return n;
}

#define OK_OR_FLUSH ((1u << IWARP_WC_SUCCESS) | (1u << IWARP_WC_WR_FLUSH_ERR))
#define FLUSH_ONLY  (1u << IWARP_WC_WR_FLUSH_ERR)

/* End d of link 0 disappears (transport reset) after roughly at octets of a 1 MiB Write. */
static void vanish_run(unsigned d, uint64_t at)
{
    nodes_init();
    link_up(0, &STD, SPLIT_RANDOM, 71, false);
    fill(N[0].mem, MIB, 1);
    post_recv(&E[1], 1, DST_OFF + 2 * MIB, 128);
    post_recv(&E[1], 2, DST_OFF + 2 * MIB + 256, 128);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 10, 0, MIB, raddr(DST_OFF), N[1].key, 0), 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 11, 0, 100, 0, 0, 0), 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 12, DST_OFF, 4096, raddr(SRC_OFF), N[1].key, 0),
              0);
    uint32_t steps = 0;
    while (L[0].pipe[0].off < at && steps++ < 100000)
        iwarp_llp_mem_step(&L[0]);
    ASSERT_TRUE(L[0].pipe[0].off < MIB);
    /* As llp_mem closes a transport, but abortively (a reset, not a FIN). */
    L[0].closed[d] = true;
    L[0].pipe[d].eof = true;
    iwarp_llp_conn_closed(&E[d].c, false);
    pump(0);
    ASSERT_TRUE(L[0].closed[0] && L[0].closed[1]);
    ASSERT_EQ(E[0].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(E[1].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    /* The one that vanished saw a fatal error. The survivor's stream ended: when it was the
     * receiver, in the middle of the 1 MiB Write (RFC 5041 §6.2.2: the stream was lost, a
     * fatal error); when it was the sender, at a message boundary of what it receives (an
     * orderly end as far as its receive side can tell; its own WRs are flushed). */
    ASSERT_EQ(E[d].nev, 1);
    ASSERT_EQ(E[d].ev[0].type, IWARP_EVENT_QP_FATAL);
    if (d == 0) {
        ASSERT_EQ(E[1].nev, 1);
        ASSERT_EQ(E[1].ev[0].type, IWARP_EVENT_QP_FATAL);
    } else {
        ASSERT_EQ(E[0].nev, 0);
    }
    /* Every WR completes exactly once: the Write, Send and Read were cut off (flushed). */
    ASSERT_EQ(drain(&N[0].scq, QPN(0), FLUSH_ONLY), 3);
    ASSERT_EQ(drain(&N[1].rcq, QPN(1), FLUSH_ONLY), 2);
    ASSERT_EQ(E[0].qp.stream.sq_count, 0);
    ASSERT_EQ(E[0].qp.stream.tx_unsent, 0);
    ASSERT_EQ(E[0].c.txf_count, 0);
}

TEST(peer_vanishes_mid_transfer)
{
    vanish_run(0, 256u << 10); /* the writer */
    vanish_run(1, 300u << 10); /* the reader */
}

TEST(peer_sends_garbage_after_establishment)
{
    static uint8_t junk[128u << 10];
    for (unsigned v = 0; v < 8; v++) {
        struct cfg o = {
            .rev = 2, .crc = (v & 1) != 0, .mark = (v & 2) != 0, .rtr = IWARP_MPA_RTR_WRITE};
        nodes_init();
        link_up(0, &o, SPLIT_RANDOM, 81u + v, false);
        post_recv(&E[1], 1, DST_OFF, 4096);
        memset(N[1].mem + DST_OFF, GUARD, 8192);
        capture_start(0, 1);
        fill(junk, sizeof junk, 1000u + v);
        pipe_put(0, 0, junk, sizeof junk);
        pump(0);
        /* The responder refused it with one Terminate the initiator received. */
        ASSERT_EQ(E[1].nev, 1);
        ASSERT_FALSE(E[1].ev[0].peer);
        uint32_t cause = E[1].ev[0].cause;
        struct iwarp_term_cause tc = {(uint8_t)(cause >> 16), (uint8_t)(cause >> 8),
                                      (uint8_t)cause};
        ASSERT_TRUE(iwarp_term_cause_defined(tc));
        static struct captured cap;
        deframe_capture(&CAP[0][1], &cap);
        ASSERT_EQ(cap.nterm, 1);
        ASSERT_TRUE(cap.term_last);
        struct iwarp_term t;
        ASSERT_TRUE(iwarp_term_decode(cap.term + 18, cap.term_len - 18, &t) > 0);
        ASSERT_EQ_U(cause_u32(t.ctrl.cause.layer, t.ctrl.cause.etype, t.ctrl.cause.ecode), cause);
        ASSERT_EQ(E[0].nev, 1);
        ASSERT_TRUE(E[0].ev[0].peer);
        ASSERT_EQ_U(E[0].ev[0].cause, cause);
        ASSERT_EQ(drain(&N[1].rcq, QPN(1), FLUSH_ONLY), 1);
        ASSERT_TRUE(all_eq(N[1].mem + DST_OFF, 8192, GUARD));
        ASSERT_TRUE(L[0].closed[0] && L[0].closed[1]);
    }
}

/* ---- teardown while traffic flows ------------------------------------------------------ */

TEST(graceful_disconnect_with_work_posted)
{
    nodes_init();
    link_up(0, &STD, SPLIT_RANDOM, 91, false);
    fill(N[0].mem, 4 * MIB, 2);
    fill(N[1].mem + SRC_OFF, MIB, 3);
    for (unsigned i = 0; i < 3; i++)
        post_recv(&E[1], 1 + i, DST_OFF + 4 * MIB + i * 8192u, 8192);
    for (unsigned i = 0; i < 3; i++)
        ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 10 + i, i * MIB, MIB,
                          raddr(DST_OFF + i * MIB), N[1].key, 0),
                  0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 20, 0, 5000, 0, 0, 0), 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 21, DST_OFF, MIB, raddr(SRC_OFF), N[1].key, 0),
              0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 22, MIB, 7000, 0, 0, 0), 0);
    /* The peer has a Write of its own in flight. */
    ASSERT_EQ(post_wr(&E[1], IWARP_WR_RDMA_WRITE, 0, 30, SRC_OFF, MIB,
                      addr_of(&E[0], DST_OFF + 2 * MIB), N[0].key, 0),
              0);
    iwarp_llp_mem_step(&L[0]);
    /* RFC 5040 §5.5 / seed 001 §6.2: graceful: no new work, posted work drains. */
    iwarp_core_qp_disconnect(&E[0].qp);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 23, 0, 1, 0, 0, 0), IWARP_ERR_STATE);
    pump(0);
    ASSERT_TRUE(L[0].closed[0] && L[0].closed[1]);
    for (unsigned i = 0; i < 3; i++)
        expect_wc(&N[0].scq, &(struct want_wc){10 + i, 0, IWARP_WC_RDMA_WRITE, MIB, QPN(0), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){20, 0, IWARP_WC_SEND, 5000, QPN(0), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){21, 0, IWARP_WC_RDMA_READ, MIB, QPN(0), 0, 0});
    expect_wc(&N[0].scq, &(struct want_wc){22, 0, IWARP_WC_SEND, 7000, QPN(0), 0, 0});
    mem_eq(N[1].mem + DST_OFF, N[0].mem, 3 * MIB);
    mem_eq(N[0].mem + DST_OFF, N[1].mem + SRC_OFF, MIB);
    expect_wc(&N[1].rcq, &(struct want_wc){1, 0, IWARP_WC_RECV, 5000, QPN(1), 0, 0});
    expect_wc(&N[1].rcq, &(struct want_wc){2, 0, IWARP_WC_RECV, 7000, QPN(1), 0, 0});
    mem_eq(N[1].mem + DST_OFF + 4 * MIB, N[0].mem, 5000);
    mem_eq(N[1].mem + DST_OFF + 4 * MIB + 8192, N[0].mem + MIB, 7000);
    expect_wc(&N[1].rcq,
              &(struct want_wc){3, IWARP_WC_WR_FLUSH_ERR, IWARP_WC_RECV, 0, QPN(1), 0, 0});
    /* The peer's own Write either made it out before the close or was flushed. */
    ASSERT_EQ(drain(&N[1].scq, QPN(1), OK_OR_FLUSH), 1);
    expect_cq_empty(&N[0].scq);
    ASSERT_EQ(E[0].nev + E[1].nev, 0);
    ASSERT_EQ(E[0].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(E[1].qp.stream.state, IWARP_CORE_STREAM_ERROR);
}

TEST(abortive_close_with_work_in_flight)
{
    nodes_init();
    link_up(0, &STD, SPLIT_RANDOM, 92, false);
    fill(N[0].mem, 2 * MIB, 2);
    post_recv(&E[1], 1, DST_OFF + 4 * MIB, 8192);
    post_recv(&E[1], 2, DST_OFF + 4 * MIB + 8192, 8192);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 10, 0, MIB, raddr(DST_OFF), N[1].key, 0), 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 11, 0, 5000, 0, 0, 0), 0);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_RDMA_READ, 0, 12, DST_OFF, MIB, raddr(SRC_OFF), N[1].key, 0),
              0);
    ASSERT_EQ(
        post_wr(&E[0], IWARP_WR_RDMA_WRITE, 0, 13, MIB, MIB, raddr(DST_OFF + MIB), N[1].key, 0), 0);
    for (unsigned i = 0; i < 3; i++)
        iwarp_llp_mem_step(&L[0]);
    ASSERT_TRUE(L[0].pipe[0].off < MIB);
    /* modify_qp(ERR): every WR completes (done ones) or flushes, and the stream ends. */
    iwarp_core_qp_set_error(&E[0].qp);
    pump(0);
    ASSERT_TRUE(L[0].closed[0] && L[0].closed[1]);
    ASSERT_EQ(drain(&N[0].scq, QPN(0), OK_OR_FLUSH), 4);
    ASSERT_EQ(drain(&N[1].rcq, QPN(1), OK_OR_FLUSH), 2);
    ASSERT_EQ(E[0].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(E[1].qp.stream.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ(E[0].qp.stream.sq_count, 0);
    ASSERT_EQ(E[0].c.txf_count, 0);
}

/* ---- regressions of library bugs this suite found (all fixed) -------------------------------
 *
 * BUG 1 (src/llp/llp_mem.c, iwarp_llp_mem_pump): with a stall of 2 or more on a direction,
 *   the step that counts the stall down to 0 moves nothing, and pump() stops right there
 *   ("moved == 0 and no stall left") although octets still wait in the pipe: a pump that
 *   should deliver them returns with them undelivered. The test below.
 * BUG 2 (src/core/core_qp.c, flush_sq / iwarp_core_qp_sq_finish): when an RDMA Read fails (the
 *   peer's Terminate), Sends and Writes posted after it that were already handed to the LLP
 *   complete IWARP_WC_SUCCESS after the Read's error completion, so the CQ shows an error
 *   followed by successes (verbs: after a completion in error, the QP's later WRs complete
 *   with WR_FLUSH_ERR). Checked in every_remote_error_class ("read bad stag" etc.).
 * BUG 3 (src/core/core_qp.c, flush_rq): a QP on an SRQ raises IWARP_EVENT_QP_LAST_WQE_REACHED
 *   twice: once when it terminates (flush_all) and again when the transport closes
 *   (iwarp_core_qp_llp_closed calls flush_rq again). Checked in srq_shared_by_two_qps.
 */
TEST(bug_1_pump_delivers_octets_behind_an_expired_stall)
{
    nodes_init();
    link_up(0, &STD, SPLIT_NONE, 3, false);
    post_recv(&E[1], 1, DST_OFF, 64);
    ASSERT_EQ(post_wr(&E[0], IWARP_WR_SEND, 0, 2, SRC_OFF, 64, 0, 0, 0), 0);
    L[0].pipe[0].stall = 2;
    iwarp_llp_mem_pump(&L[0], PUMP_MAX);
    ASSERT_EQ(L[0].pipe[0].len, 0); /* the Send's FPDU was delivered */
}
