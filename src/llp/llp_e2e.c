/* SPDX-License-Identifier: BSD-2-Clause */
/* One deterministic end-to-end connection over the in-memory transport (see llp_e2e.h). */
#include "llp/llp_e2e.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "iwarp/errors.h"
#include "mem/mem_region.h"
#include "trace/trace_sink.h"
#include "util/bytes.h"

/* Steps without quiescence after which the link is taken to be stuck. */
#define PUMP_MAX 1000000u

void iwarp_llp_e2e_cfg_default(struct iwarp_llp_e2e_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (unsigned i = 0; i < 2; i++) {
        struct iwarp_llp_conn_cfg *c = &cfg->conn[i];
        iwarp_mpa_neg_cfg_default(&c->neg, i == 0 ? IWARP_MPA_INITIATOR : IWARP_MPA_RESPONDER);
        c->neg.crc = i == 0;
        c->neg.rtr = i == 0 ? c->neg.rtr : IWARP_MPA_RTR_ALL;
        c->emss = 1460;
    }
    cfg->answer = (struct iwarp_mpa_neg_answer){.ird = 16, .ord = 16};
    cfg->seed[0] = 0x2468aceu;
    cfg->seed[1] = 0x13579bdu;
    cfg->port[0] = 40001;
    cfg->port[1] = 19875;
    cfg->time_ns = UINT64_C(1700000000) * 1000000000u;
}

/* The STag tables' key generator (xorshift32): a fixed seed gives fixed STags. */
static uint32_t rng(void *ctx)
{
    uint32_t *s = ctx;
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return x;
}

static void keep_event(struct iwarp_llp_e2e_side *s, int type, uint32_t cause, bool from_peer)
{
    if (s->nev < IWARP_LLP_E2E_EVENTS)
        s->ev[s->nev] = (struct iwarp_llp_e2e_event){type, cause, from_peer};
    s->nev++;
}

static void on_qp_event(void *user, struct iwarp_core_qp *qp, int type, uint32_t cause,
                        bool from_peer)
{
    (void)qp;
    keep_event(user, type, cause, from_peer);
}

static void on_ddp_event(void *user, int type, uint32_t cause)
{
    keep_event(user, type, cause, false);
}

/* The packet timestamps: time_ns, then 10 us later at each stamp (a stamp covers a PDU's
 * segment, or the handshake's or a FIN's packets, which trace_conn puts 1 ns apart). */
#define STAMP_NS 10000u
static uint64_t clock_now(void *user)
{
    struct iwarp_llp_e2e *e = user;
    e->clock_ns += STAMP_NS;
    return e->clock_ns;
}

/* Octets p[0, n) entered pipe side (sent by side): the capture and the tap see them. */
static void wire(struct iwarp_llp_e2e *e, unsigned side, const uint8_t *p, size_t n)
{
    if (e->sink) {
        if (side == 0) {
            struct iovec iov = {(void *)(uintptr_t)p, n};
            iwarp_trace_conn_tx(&e->tc, &iov, 1, n);
        } else {
            iwarp_trace_conn_rx(&e->tc, p, n);
        }
    }
    if (e->cfg.tap)
        e->cfg.tap(e->cfg.user, side, p, n);
}

/* ---- the editor (llp_mem's filter): deframe, edit, frame again ---------------------------- */

enum { EDIT_FRAME = 0, EDIT_START = 1, EDIT_FPDU = 2, EDIT_RAW = 3 };
#define PD_LEN_OFF 18u /* PD_Length in the Request/Reply (RFC 5044 §7.1.1) */

static void note(struct iwarp_llp_e2e *e, int err)
{
    if (err < 0 && e->err == 0)
        e->err = err;
}

/* Edited octets enter the pipe (the hook records them). */
static void put(struct iwarp_llp_e2e *e, unsigned side, const uint8_t *p, size_t n)
{
    note(e, iwarp_llp_mem_put(&e->link, side, p, n));
}

/* The MPA Request or Reply (RFC 5044 §7.1.1: 20 octets, then PD_Length of private data),
 * collected whole, edited, sent on. Returns the octets consumed. */
static size_t edit_frame(struct iwarp_llp_e2e *e, unsigned side, const uint8_t *p, size_t n)
{
    struct iwarp_llp_e2e_edit *x = &e->edit[side];
    size_t need = IWARP_MPA_HDR_LEN;
    if (x->frame_len >= IWARP_MPA_HDR_LEN)
        need += iwarp_load_be16(x->frame + PD_LEN_OFF);
    if (need > IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX) { /* not a frame a connection makes */
        put(e, side, x->frame, x->frame_len);
        x->phase = EDIT_RAW;
        return 0;
    }
    size_t k = need - x->frame_len < n ? need - x->frame_len : n;
    memcpy(x->frame + x->frame_len, p, k);
    x->frame_len += (uint32_t)k;
    bool header_only = need == IWARP_MPA_HDR_LEN && iwarp_load_be16(x->frame + PD_LEN_OFF) != 0;
    if (x->frame_len < need || header_only)
        return k; /* more to come (the private data, once the header is in) */
    size_t len = x->frame_len;
    if (e->cfg.editor->frame)
        e->cfg.editor->frame(e->cfg.user, side, x->frame, &len, sizeof x->frame);
    put(e, side, x->frame, len);
    x->phase = EDIT_START;
    return k;
}

/* The first octet after the frame: full operation, with the sender's CRC and marker settings
 * (RFC 5044 §7.1.2), from stream position 0; anything else (a Reject's sender, RFC 5044 §7.1.2
 * rule 3) goes on as it is. */
static void edit_start(struct iwarp_llp_e2e *e, unsigned side)
{
    struct iwarp_llp_e2e_edit *x = &e->edit[side];
    const struct iwarp_llp_conn *c = &e->side[side].conn;
    x->phase = EDIT_RAW;
    if (!c->fullop)
        return;
    struct iwarp_mpa_rx_cfg rc = {.crc = c->tx.crc, .markers = c->tx.markers};
    struct iwarp_mpa_tx_cfg tc = {.crc = c->tx.crc, .markers = c->tx.markers};
    if (iwarp_mpa_rx_init(&x->rx, &rc) == 0 && iwarp_mpa_tx_init(&x->tx, &tc) == 0)
        x->phase = EDIT_FPDU;
}

/* One whole DDP segment in x->seg: edited, framed again, sent on. */
static void edit_segment(struct iwarp_llp_e2e *e, unsigned side, uint32_t len)
{
    struct iwarp_llp_e2e_edit *x = &e->edit[side];
    unsigned damage = 0;
    if (e->cfg.editor->segment)
        damage = e->cfg.editor->segment(e->cfg.user, side, x->seg, &len, sizeof x->seg);
    struct iovec in = {x->seg, len};
    iwarp_ssize n =
        iwarp_mpa_tx_frame(&x->tx, &in, 1, &x->scratch, x->out, IWARP_MPA_TX_IOV_MAX(1));
    if (n < 0) {
        note(e, (int)n);
        return;
    }
    if (damage & IWARP_LLP_E2E_BAD_CRC) /* the CRC field follows the PAD (RFC 5044 §4.1) */
        x->scratch.trailer[iwarp_mpa_pad_len(len) + 3u] ^= 0x10u;
    for (iwarp_ssize i = 0; i < n; i++) {
        if ((damage & IWARP_LLP_E2E_BAD_MARKER) && x->out[i].iov_base == x->scratch.markers[0])
            x->scratch.markers[0][3] ^= 0x04u; /* FPDUPTR's low octet (RFC 5044 §4.2) */
        put(e, side, x->out[i].iov_base, x->out[i].iov_len);
    }
}

/* Full operation: the library's deframer collects each segment. Returns the octets consumed. */
static size_t edit_fpdus(struct iwarp_llp_e2e *e, unsigned side, const uint8_t *p, size_t n)
{
    struct iwarp_llp_e2e_edit *x = &e->edit[side];
    size_t used = 0;
    while (used < n) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize k = iwarp_mpa_rx_feed(&x->rx, p + used, n - used, &ev);
        if (k < 0) { /* not FPDUs after all: the rest goes on as it is */
            x->phase = EDIT_RAW;
            break;
        }
        used += (size_t)k;
        if (ev.kind == IWARP_MPA_RX_EV_ULPDU)
            memcpy(x->seg + ev.ulpdu_off, ev.data, ev.len);
        else if (ev.kind == IWARP_MPA_RX_EV_FPDU)
            edit_segment(e, side, ev.ulpdu_len);
    }
    return used;
}

static void filter(void *user, unsigned side, const uint8_t *p, size_t n)
{
    struct iwarp_llp_e2e *e = user;
    struct iwarp_llp_e2e_edit *x = &e->edit[side];
    while (n > 0) {
        size_t k = n;
        if (x->phase == EDIT_FRAME) {
            k = edit_frame(e, side, p, n);
        } else if (x->phase == EDIT_START) {
            edit_start(e, side);
            k = 0;
        } else if (x->phase == EDIT_FPDU) {
            k = edit_fpdus(e, side, p, n);
        } else {
            put(e, side, p, n);
        }
        p += k;
        n -= k;
    }
}

static void hook(void *user, unsigned dir, uint64_t off, uint8_t *p, size_t n)
{
    (void)off;
    wire(user, dir, p, n);
}

/* Side's transport closed: its FIN follows its last octet in the capture. */
static void closed(void *user, unsigned side)
{
    struct iwarp_llp_e2e *e = user;
    e->side[side].fin = true;
    if (e->sink)
        iwarp_trace_conn_fin(&e->tc, side == 0); /* RFC 9293 §3.6 */
}

/* What the RDMAP and the DDP-level engine configurations have in common. */
#define ENGINE_CFG(s, i)                                                                        \
    .qp_num = (i) + 1u, .pd = IWARP_LLP_E2E_PD, .mem = &(s)->mem, .send_cq = &(s)->scq,         \
    .recv_cq = &(s)->rcq, .sq_cap = IWARP_LLP_E2E_SQ, .rq_cap = IWARP_LLP_E2E_RQ,               \
    .max_send_sge = IWARP_CORE_MAX_SGE, .max_recv_sge = IWARP_CORE_MAX_SGE, .sq_sig_all = true, \
    .event_user = (s)

/* Side i's engine, in IDLE: every send WR signalled, the most SGEs, its own receive queue. */
static int engine_init(struct iwarp_llp_e2e *e, unsigned i)
{
    struct iwarp_llp_e2e_side *s = &e->side[i];
    if (e->cfg.ddp) {
        struct iwarp_core_ddp_cfg c = {ENGINE_CFG(s, i), .num_queues = IWARP_LLP_E2E_DDP_QN,
                                       .event = on_ddp_event};
        struct iwarp_core_ddp_mem m = {
            .sq = s->dsq, .uq = s->duq, .rqe = s->drqe, .lens = s->dlens};
        return iwarp_core_ddp_init(&s->ddp, &c, &m);
    }
    struct iwarp_core_qp_cfg c = {ENGINE_CFG(s, i), .max_inline = IWARP_CORE_MAX_INLINE,
                                  .event = on_qp_event};
    struct iwarp_core_qp_mem m = {.sq = s->sq, .rq = s->rq, .orq = s->orq, .irq = s->irq};
    m.rq_lens = s->rq_lens; /* what the receive queues' entries hold */
    m.irq_lens = s->irq_lens;
    return iwarp_core_qp_init(&s->qp, &c, &m);
}

static int side_init(struct iwarp_llp_e2e *e, unsigned i)
{
    struct iwarp_llp_e2e_side *s = &e->side[i];
    s->rng = e->cfg.seed[i] ? e->cfg.seed[i] : 1u;
    int rc = iwarp_mem_table_init(&s->mem, s->ent, IWARP_LLP_E2E_STAGS, rng, &s->rng);
    if (rc == 0)
        rc = iwarp_core_cq_init(&s->scq, s->scq_ring, IWARP_LLP_E2E_CQ, NULL, NULL);
    if (rc == 0)
        rc = iwarp_core_cq_init(&s->rcq, s->rcq_ring, IWARP_LLP_E2E_CQ, NULL, NULL);
    if (rc == 0)
        rc = engine_init(e, i);
    if (rc == 0)
        rc = iwarp_llp_conn_init(&s->conn, &e->cfg.conn[i], s->bounce, s->txf, 0);
    return rc;
}

/* Side i's engine, whichever kind the conversation uses. */
static struct iwarp_core_engine *side_engine(struct iwarp_llp_e2e *e, unsigned i)
{
    return e->cfg.ddp ? &e->side[i].ddp.eng : &e->side[i].qp.eng;
}

static void attach(struct iwarp_llp_e2e *e, unsigned i)
{
    iwarp_llp_conn_attach(&e->side[i].conn, side_engine(e, i));
}

/* Loopback address and port of one end of the conversation. */
static void end_addr(const struct iwarp_llp_e2e *e, unsigned i, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (e->cfg.ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(e->cfg.port[i]);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(e->cfg.port[i]);
    }
}

static int capture_open(struct iwarp_llp_e2e *e, const char *path)
{
    int rc = iwarp_trace_sink_open(&e->sink, path, 0, NULL, 0);
    if (rc != 0) {
        e->sink = NULL;
        return rc;
    }
    iwarp_trace_conn_init(&e->tc, e->sink, e->trace_buf, NULL, NULL);
    e->clock_ns = e->cfg.time_ns - STAMP_NS;
    iwarp_trace_conn_set_clock(&e->tc, clock_now, e);
    struct sockaddr_storage cli, srv;
    end_addr(e, 0, &cli);
    end_addr(e, 1, &srv);
    /* RFC 9293 §3.5: the handshake; the client is the MPA initiator */
    return iwarp_trace_conn_open(&e->tc, true, (const struct sockaddr *)&cli,
                                 (const struct sockaddr *)&srv, e->cfg.conn[0].emss);
}

int iwarp_llp_e2e_init(struct iwarp_llp_e2e *e, const struct iwarp_llp_e2e_cfg *cfg)
{
    memset(e, 0, sizeof *e);
    if (cfg->conn[0].neg.role != IWARP_MPA_INITIATOR ||
        cfg->conn[1].neg.role != IWARP_MPA_RESPONDER)
        return IWARP_ERR_INVAL;
    e->cfg = *cfg;
    for (unsigned i = 0; i < 2; i++) {
        int rc = side_init(e, i);
        if (rc != 0)
            return rc;
        e->cfg.conn[i].neg.pd = NULL; /* copied by the negotiation */
    }
    e->cfg.pcap = NULL;
    attach(e, 0); /* the initiator's engine runs from the Reply on */
    int rc = iwarp_llp_mem_init(&e->link, &e->side[0].conn, &e->side[1].conn, e->pipe[0],
                                e->pipe[1], IWARP_LLP_E2E_PIPE, 1);
    if (rc != 0)
        return rc;
    e->link.hook = hook;
    e->link.close_hook = closed;
    e->link.filter = cfg->editor ? filter : NULL;
    e->link.hook_user = e;
    if (cfg->pcap && (rc = capture_open(e, cfg->pcap)) != 0) {
        (void)iwarp_llp_e2e_fini(e);
        return rc;
    }
    return 0;
}

int iwarp_llp_e2e_reg(struct iwarp_llp_e2e *e, unsigned side, void *addr, uint64_t iova,
                      uint64_t len, uint32_t access, uint32_t *stag)
{
    struct iwarp_mem_range r = {
        .addr = (uint64_t)(uintptr_t)addr, .iova = iova, .length = len, .access = access};
    return iwarp_mem_reg_mr(&e->side[side & 1u].mem, IWARP_LLP_E2E_PD, &r, stag);
}

int iwarp_llp_e2e_pump(struct iwarp_llp_e2e *e)
{
    for (uint32_t i = 0; i < PUMP_MAX; i++) {
        size_t moved = iwarp_llp_mem_step(&e->link);
        if (moved == 0)
            return e->err; /* no stalls are set: nothing moved means nothing will */
    }
    if (e->err == 0)
        e->err = IWARP_ERR_STATE;
    return IWARP_ERR_STATE;
}

int iwarp_llp_e2e_post(struct iwarp_llp_e2e *e, unsigned side, uint64_t wr_id,
                       enum iwarp_wr_opcode op, unsigned flags, const struct iwarp_sge *sge,
                       uint64_t raddr, uint32_t rkey)
{
    struct iwarp_send_wr wr = {.wr_id = wr_id,
                               .sg_list = (struct iwarp_sge *)(uintptr_t)sge,
                               .num_sge = sge && sge->length > 0,
                               .opcode = op,
                               .send_flags = flags,
                               .invalidate_rkey = rkey, /* read by Send with Invalidate only */
                               .wr.rdma = {.remote_addr = raddr, .rkey = rkey}};
    return iwarp_core_qp_post_send(&e->side[side & 1u].qp, &wr);
}

int iwarp_llp_e2e_post_recv(struct iwarp_llp_e2e *e, unsigned side, uint32_t qn, uint64_t wr_id,
                            const struct iwarp_sge *sge)
{
    struct iwarp_llp_e2e_side *s = &e->side[side & 1u];
    struct iwarp_recv_wr wr = {
        .wr_id = wr_id, .sg_list = (struct iwarp_sge *)(uintptr_t)sge, .num_sge = sge != NULL};
    return e->cfg.ddp ? iwarp_core_ddp_post_recv(&s->ddp, qn, &wr)
                      : iwarp_core_qp_post_recv(&s->qp, &wr);
}

int iwarp_llp_e2e_ddp_send(struct iwarp_llp_e2e *e, unsigned side, uint64_t wr_id, bool tagged,
                           uint32_t qn, uint32_t stag, uint64_t to, const struct iwarp_sge *sge,
                           const uint8_t *rsvdulp)
{
    struct iwarp_core_ddp_send m = {.wr_id = wr_id, .sg_list = sge, .num_sge = sge != NULL};
    m.signaled = true;
    m.tagged = tagged; /* RFC 5041 §4.2: STag and TO; §4.3: QN (the MSN is the engine's) */
    m.qn = qn;
    m.stag = stag;
    m.to = to;
    m.rsvdulp = rsvdulp;
    return iwarp_core_ddp_post_send(&e->side[side & 1u].ddp, &m);
}

/* The side whose negotiation failed first, and why: a side that failed on its own (not just
 * because the other closed the stream: IWARP_ERR_IO) before one that only saw the end. */
static int neg_failure(const struct iwarp_llp_e2e *e, unsigned *failed)
{
    const struct iwarp_llp_conn *a = &e->side[0].conn, *b = &e->side[1].conn;
    unsigned who = 1;
    if (!(b->err != 0 && b->err != IWARP_ERR_IO) && a->err != 0)
        who = 0;
    if (failed)
        *failed = who;
    int err = e->side[who].conn.err;
    return err != 0 ? err : IWARP_ERR_STATE;
}

int iwarp_llp_e2e_connect(struct iwarp_llp_e2e *e, unsigned *failed)
{
    struct iwarp_llp_e2e_side *rsp = &e->side[1];
    int rc = iwarp_llp_e2e_pump(e);
    if (rc != 0)
        return rc;
    if (rsp->conn.state != IWARP_LLP_CONN_REQUEST)
        return neg_failure(e, failed);
    attach(e, 1);
    rc = iwarp_llp_conn_accept(&rsp->conn, &e->cfg.answer);
    e->cfg.answer.pd = NULL; /* copied by the negotiation */
    if (rc != 0) {
        if (failed)
            *failed = 1;
        return rc;
    }
    rc = iwarp_llp_e2e_pump(e);
    if (rc != 0)
        return rc;
    if (e->side[0].conn.state != IWARP_LLP_CONN_ESTABLISHED)
        return neg_failure(e, failed);
    return 0;
}

/* Whether c is in full operation with nothing framed ahead and nothing held. */
static bool conn_idle(const struct iwarp_llp_conn *c)
{
    return c->state == IWARP_LLP_CONN_ESTABLISHED && c->fullop &&
           c->recv.state != IWARP_LLP_CONN_RX_DEAD && !c->tx_hold && !c->rtr_pending &&
           !c->rtr_wait && c->txf_count == 0;
}

int iwarp_llp_e2e_inject(struct iwarp_llp_e2e *e, unsigned side, const uint8_t *seg, size_t len)
{
    struct iwarp_llp_conn *tx = &e->side[side & 1u].conn, *rx = &e->side[(side & 1u) ^ 1u].conn;
    if (e->cfg.editor || e->link.pipe[0].len || e->link.pipe[1].len || !conn_idle(tx) ||
        !conn_idle(rx) || !iwarp_llp_conn_rx_between_fpdus(rx))
        return IWARP_ERR_STATE;
    struct iovec in = {(void *)(uintptr_t)seg, len};
    iwarp_ssize n =
        iwarp_mpa_tx_frame(&tx->tx, &in, 1, &e->inj_scratch, e->inj_out, IWARP_MPA_TX_IOV_MAX(1));
    if (n < 0)
        return (int)n;
    bool whole = false;
    for (iwarp_ssize i = 0; i < n; i++) {
        const uint8_t *p = e->inj_out[i].iov_base;
        size_t left = e->inj_out[i].iov_len;
        wire(e, side & 1u, p, left);
        while (left > 0) { /* ULPDU spans are dropped: the engine never sees this segment */
            struct iwarp_mpa_rx_ev ev;
            iwarp_ssize k = iwarp_mpa_rx_feed(&rx->rx, p, left, &ev);
            if (k < 0)
                return (int)k;
            p += k;
            left -= (size_t)k;
            whole = ev.kind == IWARP_MPA_RX_EV_FPDU;
        }
    }
    return whole ? 0 : IWARP_ERR_STATE;
}

int iwarp_llp_e2e_disconnect(struct iwarp_llp_e2e *e, unsigned side)
{
    iwarp_core_eng_disconnect(side_engine(e, side & 1u));
    return iwarp_llp_e2e_pump(e);
}

int iwarp_llp_e2e_fini(struct iwarp_llp_e2e *e)
{
    int rc = 0;
    if (e->sink) {
        iwarp_trace_conn_close(&e->tc);
        rc = e->tc.err;
        int r2 = iwarp_trace_sink_release(e->sink);
        if (rc == 0)
            rc = r2;
        e->sink = NULL;
    }
    for (unsigned i = 0; i < 2; i++)
        if (side_engine(e, i)->ops) /* not when its initialisation failed */
            iwarp_core_eng_fini(side_engine(e, i));
    return rc;
}
