/* SPDX-License-Identifier: BSD-2-Clause */
/* A covering set over loopback TCP, through the public API only: every operation (Send,
 * Send+SE, Send+Inv, Send+SE+Inv, RDMA Write, RDMA Read) x every size (0, 1, 4095, 4096, the
 * largest DDP payload of one FPDU minus one, itself and plus one, 1 MiB, 16 MiB) x 1 SGE and
 * the device's maximum (6; 1 for Read), with every other axis at least once, spread over the
 * operations by the connection each cell runs on:
 *
 *   conn  family  progress srv/cli  MPA  CRC asked srv/cli  markers asked srv/cli  other
 *   0     IPv4    thread/thread     2    -/-                -/-                    Fence after Read
 *   1     IPv6    caller/caller     2    on/on              on/on                  sq_sig_all
 *   2     IPv4    thread/caller     1    on/-               -/on                   unsignaled,
 * inline 3     IPv6    thread/thread     2    -/on               -/-                    p2p RTR
 * Write, solicited-only arm 4     IPv4    caller/thread     2    -/-                on/- p2p RTR
 * Read, SRQ 5     IPv4    thread/thread     2    on/on              -/-                    p2p RTR
 * Send
 *
 * Markers are asked for by the side that wants to receive them (RFC 5044 §7.1.1 M flag), so
 * "-/on" inserts markers only on the server-to-client direction. CRC is on for both
 * directions when either side asks (RFC 5044 §7.1.1).
 *
 * Sizes at the segment boundary: MULPDU = EMSS - (6 + EMSS mod 4 [+ 4 * ceil(EMSS / 512) with
 * markers]), at most 64768 (RFC 5044 §4.5, §3); EMSS is TCP_MAXSEG of a loopback connection
 * (about 65483 for IPv4, 65464 for IPv6 here, so the cap applies). One FPDU then carries
 * MULPDU - 14 payload octets of a tagged message (RFC 5041 §4.2: 2-octet control + STag + TO)
 * and MULPDU - 18 of an untagged one (§4.3: control + RsvdULP/Invalidate STag + QN + MSN + MO),
 * and the boundary sizes are those payloads -1, +0 and +1 (Write and Read use the tagged one).
 *
 * Every cell checks every octet of its target, guard octets around and between every SGE
 * (and after the message in a larger receive), and every field of every completion. Writes
 * are checked after a zero-length Send behind them has been received (RFC 5040 §5.5: prior
 * messages are placed before a later Send is delivered).
 */
#define _GNU_SOURCE 1
#include <netinet/tcp.h>
#include <stdlib.h>
#include <unistd.h>

#include "stack_pair.h"

#define BIG        (16u << 20)
#define AREA       (BIG + 4096u) /* one source or target area: BIG, SGE gaps, guards */
#define GUARD      64u           /* guard octets around and between SGEs */
#define GUARD_BYTE 0xA5u
#define RECV_EXTRA 16u /* receives are this much larger than the message */
#define MAX_SGE    6u
#define NCONN      6u
#define CQE        256
#define PATLEN     65521u /* prime: pattern offsets differ for every seed */
#define MARK_ID    0xFEEDu
#define INLINE_MAX 80u /* the device's max_inline_data (siw's limit) */
#define FLUSH_ID   0xF1u

enum op { OP_SEND, OP_SEND_SE, OP_SEND_INV, OP_SEND_SE_INV, OP_WRITE, OP_READ, OP_COUNT };
static const char *const op_name[OP_COUNT] = {"Send",        "Send+SE",    "Send+Inv",
                                              "Send+SE+Inv", "RDMA Write", "RDMA Read"};

/* One connection's axis settings. */
struct axis {
    bool sctp; /* DDP over SCTP (RFC 5043): the MPA fields below do not apply */
    bool v6;
    enum iwarp_progress_mode srv_mode, cli_mode;
    uint8_t mpa_rev;
    bool srv_crc, cli_crc;
    bool srv_markers, cli_markers; /* markers this side asks the peer to insert */
    bool p2p;
    uint8_t rtr;
    int sq_sig_all;
    bool unsignaled; /* post cells without IWARP_SEND_SIGNALED, a signaled marker after */
    bool inline_sends;
    bool comp;  /* completion channels; solicited-only arm before every Send */
    bool srq;   /* the server's QP receives from an SRQ with a limit */
    bool fence; /* the Fence-after-Read case */
};

static const struct axis AXES[NCONN] = {
    {.srv_mode = IWARP_PROGRESS_THREAD, .cli_mode = IWARP_PROGRESS_THREAD, .fence = true},
    {.v6 = true,
     .srv_mode = IWARP_PROGRESS_CALLER,
     .cli_mode = IWARP_PROGRESS_CALLER,
     .srv_crc = true,
     .cli_crc = true,
     .srv_markers = true,
     .cli_markers = true,
     .sq_sig_all = 1},
    {.srv_mode = IWARP_PROGRESS_THREAD,
     .cli_mode = IWARP_PROGRESS_CALLER,
     .mpa_rev = 1,
     .srv_crc = true,
     .cli_markers = true,
     .unsignaled = true,
     .inline_sends = true},
    {.v6 = true,
     .srv_mode = IWARP_PROGRESS_THREAD,
     .cli_mode = IWARP_PROGRESS_THREAD,
     .cli_crc = true,
     .p2p = true,
     .rtr = IWARP_CM_RTR_WRITE,
     .comp = true},
    {.srv_mode = IWARP_PROGRESS_CALLER,
     .cli_mode = IWARP_PROGRESS_THREAD,
     .srv_markers = true,
     .p2p = true,
     .rtr = IWARP_CM_RTR_READ,
     .srq = true},
    {.srv_mode = IWARP_PROGRESS_THREAD,
     .cli_mode = IWARP_PROGRESS_THREAD,
     .srv_crc = true,
     .cli_crc = true,
     .p2p = true,
     .rtr = IWARP_CM_RTR_SEND},
};

/* The same matrix over SCTP: every axis that is not MPA's. */
#define NCONN_SCTP 5u
static const struct axis SCTP_AXES[NCONN_SCTP] = {
    {.sctp = true,
     .srv_mode = IWARP_PROGRESS_THREAD,
     .cli_mode = IWARP_PROGRESS_THREAD,
     .fence = true},
    {.sctp = true,
     .v6 = true,
     .srv_mode = IWARP_PROGRESS_CALLER,
     .cli_mode = IWARP_PROGRESS_CALLER,
     .sq_sig_all = 1},
    {.sctp = true,
     .srv_mode = IWARP_PROGRESS_THREAD,
     .cli_mode = IWARP_PROGRESS_CALLER,
     .unsignaled = true,
     .inline_sends = true},
    {.sctp = true,
     .v6 = true,
     .srv_mode = IWARP_PROGRESS_THREAD,
     .cli_mode = IWARP_PROGRESS_THREAD,
     .comp = true},
    {.sctp = true,
     .srv_mode = IWARP_PROGRESS_CALLER,
     .cli_mode = IWARP_PROGRESS_THREAD,
     .srq = true},
};

/* ---- patterns and guarded layouts ---------------------------------------------------------- */

static uint8_t pat_tab[PATLEN];

/* Octet k of message seed is pat_tab[(seed * 7919 + k) % PATLEN]. */
static size_t pat_at(uint32_t seed, uint64_t k)
{
    return (size_t)(((uint64_t)seed * 7919u + k) % PATLEN);
}

static void pat_fill(uint8_t *p, size_t n, uint32_t seed, uint64_t k)
{
    while (n) {
        size_t at = pat_at(seed, k), c = PATLEN - at < n ? PATLEN - at : n;
        memcpy(p, pat_tab + at, c);
        p += c;
        n -= c;
        k += c;
    }
}

/* The first octet of p[0..n) that differs from message seed at k, or n. */
static size_t pat_diff(const uint8_t *p, size_t n, uint32_t seed, uint64_t k)
{
    size_t done = 0;
    while (done < n) {
        size_t at = pat_at(seed, k + done), c = PATLEN - at < n - done ? PATLEN - at : n - done;
        if (memcmp(p + done, pat_tab + at, c) != 0)
            for (size_t i = 0; i < c; i++)
                if (p[done + i] != pat_tab[at + i])
                    return done + i;
        done += c;
    }
    return n;
}

static size_t guard_diff(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != GUARD_BYTE)
            return i;
    return n;
}

/* n SGEs of uneven alignment over total octets in an area, GUARD octets before, between and
 * after them. */
struct layout {
    uint32_t n;
    uint8_t *lo, *hi; /* the guarded span */
    uint8_t *p[MAX_SGE];
    uint32_t len[MAX_SGE];
};

static void layout(struct layout *l, uint8_t *area, uint64_t total, uint32_t n, uint32_t skew)
{
    l->n = n;
    l->lo = area;
    uint8_t *at = area + GUARD + skew % 8u;
    for (uint32_t i = 0; i < n; i++) {
        /* the first pieces get a third more than an even share, the last the rest */
        uint64_t share = n == 1 ? total : total / n + total / (8u * n);
        uint64_t len = i + 1 == n ? total : (share < total ? share : total);
        total -= len;
        l->p[i] = at;
        l->len[i] = (uint32_t)len;
        at += len + GUARD + i + 1u;
    }
    l->hi = at + GUARD;
}

static void layout_guard(const struct layout *l)
{
    memset(l->lo, GUARD_BYTE, (size_t)(l->hi - l->lo));
}

static void layout_fill(const struct layout *l, uint32_t seed)
{
    uint64_t k = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        pat_fill(l->p[i], l->len[i], seed, k);
        k += l->len[i];
    }
}

static void layout_sges(const struct layout *l, uint32_t lkey, struct iwarp_sge *sge)
{
    for (uint32_t i = 0; i < l->n; i++)
        sge[i] = (struct iwarp_sge){.addr = (uintptr_t)l->p[i], .length = l->len[i], .lkey = lkey};
}

/* The first msg_len octets of the layout hold message seed; every other octet of the span is
 * still a guard. */
static void layout_check(const struct layout *l, uint64_t msg_len, uint32_t seed, const char *what)
{
    uint64_t k = 0;
    const uint8_t *at = l->lo;
    for (uint32_t i = 0; i <= l->n; i++) {
        const uint8_t *end = i < l->n ? l->p[i] : l->hi;
        size_t d = guard_diff(at, (size_t)(end - at));
        if (d != (size_t)(end - at))
            harness_fail(__FILE__, __LINE__, "%s: guard before SGE %u overwritten at +%zu", what, i,
                         d);
        if (i == l->n)
            break;
        uint64_t data = msg_len - k < l->len[i] ? msg_len - k : l->len[i];
        d = pat_diff(l->p[i], (size_t)data, seed, k);
        if (d != data)
            harness_fail(__FILE__, __LINE__,
                         "%s: SGE %u differs at octet %zu (message %" PRIu64 ")", what, i, d,
                         k + d);
        d = guard_diff(l->p[i] + data, (size_t)(l->len[i] - data));
        if (d != l->len[i] - data)
            harness_fail(__FILE__, __LINE__, "%s: SGE %u written past the message at +%zu", what, i,
                         data + d);
        k += data;
        at = l->p[i] + l->len[i];
    }
}

/* ---- sizes -------------------------------------------------------------------------------- */

/* TCP_MAXSEG of both ends of a loopback TCP connection, read right after connect and accept
 * as the library reads its EMSS (the two differ here: 32741 and 32768 for IPv4). */
static void loopback_emss(bool v6, uint32_t *cli_emss, uint32_t *srv_emss)
{
    struct sockaddr_storage a;
    memset(&a, 0, sizeof a);
    socklen_t al;
    if (v6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_loopback;
        al = sizeof *s6;
    } else {
        sp_loopback4((struct sockaddr_in *)&a, 0);
        al = sizeof(struct sockaddr_in);
    }
    int l = socket(a.ss_family, SOCK_STREAM, 0), c = socket(a.ss_family, SOCK_STREAM, 0);
    ASSERT_TRUE(l >= 0 && c >= 0);
    ASSERT_EQ(bind(l, (struct sockaddr *)&a, al), 0);
    ASSERT_EQ(listen(l, 1), 0);
    ASSERT_EQ(getsockname(l, (struct sockaddr *)&a, &al), 0);
    ASSERT_EQ(connect(c, (struct sockaddr *)&a, al), 0);
    int s = accept(l, NULL, NULL);
    ASSERT_TRUE(s >= 0);
    int fds[2] = {c, s};
    uint32_t *out[2] = {cli_emss, srv_emss};
    for (int i = 0; i < 2; i++) {
        int mss = 0;
        socklen_t ml = sizeof mss;
        ASSERT_EQ(getsockopt(fds[i], IPPROTO_TCP, TCP_MAXSEG, &mss, &ml), 0);
        ASSERT_TRUE(mss >= 128);
        *out[i] = (uint32_t)mss;
    }
    close(s);
    close(c);
    close(l);
}

/* RFC 5044 §4.5 MULPDU for an EMSS, within 128..64768 (§3), written out here independently of
 * the library's iwarp_mpa_mulpdu. */
static uint32_t mulpdu(uint32_t emss, bool markers)
{
    uint32_t over = 6u + emss % 4u + (markers ? 4u * ((emss + 511u) / 512u) : 0u);
    uint32_t m = emss > over ? emss - over : 0u;
    return m < 128u ? 128u : m > 64768u ? 64768u : m;
}

#define N_SIZES          9u
#define DDP_TAGGED_HDR   14u /* RFC 5041 §4.2 */
#define DDP_UNTAGGED_HDR 18u /* RFC 5041 §4.3 */

/* Size index i of op, for a direction whose MULPDU is m. */
static uint32_t size_of(enum op op, uint32_t i, uint32_t m)
{
    uint32_t seg = m - (op == OP_WRITE || op == OP_READ ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR);
    static const uint32_t fixed[] = {0, 1, 4095, 4096};
    if (i < 4)
        return fixed[i];
    if (i < 7)
        return seg - 1u + (i - 4u);
    return i == 7 ? 1u << 20 : BIG;
}

/* ---- a connection ------------------------------------------------------------------------ */

struct end {
    struct sp_side side;
    struct sp_end e;
    uint8_t *mem; /* source area, then target area */
    struct iwarp_mr *mr;
    uint32_t mulpdu_rx; /* MULPDU of what this end receives (the peer's EMSS, our markers) */
    bool markers_rx;    /* this end asked for markers: what it receives carries them */
};

struct conn {
    const struct axis *ax;
    uint32_t index; /* the axis' number, for messages and seeds */
    struct end srv, cli;
    struct iwarp_srq *srq;
    uint64_t next_id;
    uint32_t seed;
};

static uint8_t *mem_buf[2];

static uint8_t *src_area(struct end *e)
{
    return e->mem;
}
static uint8_t *dst_area(struct end *e)
{
    return e->mem + AREA;
}

static void set_addr(struct sockaddr_storage *ss, bool v6, uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
    } else {
        sp_loopback4((struct sockaddr_in *)ss, port);
    }
}

static struct iwarp_conn_param conn_param(const struct axis *ax, bool srv)
{
    return (struct iwarp_conn_param){.responder_resources = 0xFF,
                                     .initiator_depth = 0xFF,
                                     .mpa_rev = ax->mpa_rev,
                                     .crc = srv ? ax->srv_crc : ax->cli_crc,
                                     .markers = srv ? ax->srv_markers : ax->cli_markers,
                                     .peer_to_peer = !srv && ax->p2p,
                                     .rtr_types = ax->rtr};
}

/* Drive both sides until qp reaches RTS (peer-to-peer: the responder's QP runs once the RTR
 * has arrived, RFC 6581 §5). */
static void wait_rts(struct conn *c, struct iwarp_qp *qp)
{
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    struct iwarp_qp_attr qa;
    for (;;) {
        ASSERT_EQ(iwarp_query_qp(qp, &qa), 0);
        if (qa.qp_state == IWARP_QPS_RTS)
            return;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the QP to reach RTS (state %d)", (int)qa.qp_state);
        sp_idle(&c->srv.side, &c->cli.side);
    }
}

static void post_srq(struct conn *c, uint64_t wr_id, struct iwarp_sge *sge, int n)
{
    struct iwarp_recv_wr wr = {.wr_id = wr_id, .sg_list = n ? sge : NULL, .num_sge = n};
    struct iwarp_recv_wr *bad = NULL;
    ASSERT_EQ(iwarp_post_srq_recv(c->srq, &wr, &bad), 0);
}

/* Post a receive on e (through the SRQ for the server when the connection has one). */
static void post_recv_on(struct conn *c, struct end *e, uint64_t wr_id, struct iwarp_sge *sge,
                         int n)
{
    if (e == &c->srv && c->srq) {
        post_srq(c, wr_id, sge, n);
        return;
    }
    struct iwarp_recv_wr wr = {.wr_id = wr_id, .sg_list = n ? sge : NULL, .num_sge = n};
    struct iwarp_recv_wr *bad = NULL;
    ASSERT_EQ(iwarp_post_recv(e->e.qp, &wr, &bad), 0);
}

static struct end *other(struct conn *c, struct end *e)
{
    return e == &c->srv ? &c->cli : &c->srv;
}

/* Take one completion on e and check every field. */
static void expect_wc(struct conn *c, struct end *e, uint64_t wr_id, enum iwarp_wc_opcode op,
                      uint32_t byte_len, uint32_t inv_rkey)
{
    struct iwarp_wc wc;
    memset(&wc, 0x5A, sizeof wc);
    sp_poll_n(&e->side, &other(c, e)->side, &wc, 1);
    if (wc.wr_id != wr_id || wc.status != IWARP_WC_SUCCESS || wc.opcode != op)
        harness_fail(__FILE__, __LINE__,
                     "completion: wr_id %#" PRIx64 " opcode %d status %s, expected wr_id %#" PRIx64
                     " opcode %d",
                     wc.wr_id, (int)wc.opcode, iwarp_wc_status_str(wc.status), wr_id, (int)op);
    ASSERT_EQ_U(wc.vendor_err, 0);
    ASSERT_EQ_U(wc.byte_len, byte_len);
    ASSERT_EQ_U(wc.qp_num, e->e.qp->qp_num);
    ASSERT_EQ_U(wc.src_qp, 0);
    ASSERT_EQ_U(wc.wc_flags, inv_rkey ? IWARP_WC_WITH_INV : 0);
    if (inv_rkey)
        ASSERT_EQ_U(wc.invalidated_rkey, inv_rkey);
    else
        ASSERT_EQ_U(wc.imm_data, 0);
    ASSERT_EQ_U(wc.pkey_index, 0);
    ASSERT_EQ_U(wc.slid, 0);
    ASSERT_EQ_U(wc.sl, 0);
    ASSERT_EQ_U(wc.dlid_path_bits, 0);
    ASSERT_EQ_U(wc.ddp_qn, 0);
    ASSERT_EQ_U(wc.ddp_msn, 0);
    static const uint8_t zero5[5];
    ASSERT_MEM_EQ(wc.ddp_rsvdulp, zero5, 5);
}

static void post_send_wr(struct end *e, struct iwarp_send_wr *wr)
{
    struct iwarp_send_wr *bad = NULL;
    int rc = iwarp_post_send(e->e.qp, wr, &bad);
    if (rc != 0)
        harness_fail(__FILE__, __LINE__, "post_send opcode %d: %s", (int)wr->opcode,
                     iwarp_err_name(rc));
}

/* a sends a zero-length Send to b and b receives it: every earlier message of a has then been
 * placed at b (RFC 5040 §5.5). */
static void flush_to(struct conn *c, struct end *a, struct end *b)
{
    post_recv_on(c, b, FLUSH_ID, NULL, 0);
    struct iwarp_send_wr wr = {
        .wr_id = FLUSH_ID, .opcode = IWARP_WR_SEND, .send_flags = IWARP_SEND_SIGNALED};
    post_send_wr(a, &wr);
    expect_wc(c, a, FLUSH_ID, IWARP_WC_SEND, 0, 0);
    expect_wc(c, b, FLUSH_ID, IWARP_WC_RECV, 0, 0);
}

/* The solicited-only arm (completion channel) fired or not, looked at with poll(). */
static void expect_cq_event(struct end *e, bool fired)
{
    struct pollfd p = {.fd = e->side.comp->fd, .events = POLLIN};
    int n = poll(&p, 1, fired ? SP_WAIT_MS : 0);
    ASSERT_EQ(n, fired ? 1 : 0);
    struct iwarp_cq *cq = NULL;
    void *ctx = NULL;
    int rc = iwarp_get_cq_event(e->side.comp, &cq, &ctx);
    if (!fired) {
        ASSERT_EQ(rc, IWARP_ERR_BUSY);
        return;
    }
    ASSERT_EQ(rc, 0);
    ASSERT_TRUE(cq == e->side.cq);
    ASSERT_TRUE(ctx == &e->side);
    iwarp_ack_cq_events(cq, 1);
    ASSERT_EQ(iwarp_get_cq_event(e->side.comp, &cq, &ctx), IWARP_ERR_BUSY);
}

/* ---- one cell ----------------------------------------------------------------------------- */

/* Run op of len octets in nsge SGEs from a to b on c, everything checked. */
static void run_cell(struct conn *c, struct end *a, enum op op, uint32_t len, uint32_t nsge)
{
    const struct axis *ax = c->ax;
    struct end *b = other(c, a);
    uint32_t seed = ++c->seed;
    uint64_t id = ++c->next_id;
    char what[96];
    snprintf(what, sizeof what, "%s %u octets %u SGE%s %s", op_name[op], len, nsge,
             nsge > 1 ? "s" : "", a == &c->cli ? "cli->srv" : "srv->cli");
    if (getenv("MATRIX_VERBOSE"))
        fprintf(stderr, "    conn %u: %s\n", c->index, what);
    bool send = op <= OP_SEND_SE_INV;
    bool se = op == OP_SEND_SE || op == OP_SEND_SE_INV;
    bool inv = op == OP_SEND_INV || op == OP_SEND_SE_INV;
    bool inl = send && ax->inline_sends && len <= INLINE_MAX;
    struct iwarp_sge sge[MAX_SGE];
    struct layout src, dst;
    struct iwarp_send_wr wr = {.wr_id = id, .num_sge = (int)(len ? nsge : 0), .sg_list = sge};
    if (!len)
        wr.sg_list = NULL;
    unsigned flags = ax->unsignaled || ax->sq_sig_all ? 0u : IWARP_SEND_SIGNALED;
    if (se)
        flags |= IWARP_SEND_SOLICITED;
    if (inl)
        flags |= IWARP_SEND_INLINE;
    wr.send_flags = flags;

    struct iwarp_mr *victim = NULL;
    uint8_t victim_buf[64];
    if (inv) {
        /* RFC 5040 §6.4.2: the Send with Invalidate names an STag of the receiver's stream */
        victim = sp_reg(&b->side, victim_buf, sizeof victim_buf, 0);
        wr.invalidate_rkey = victim->rkey;
    }

    if (send) {
        /* the receive: nsge SGEs with room for RECV_EXTRA more than the message */
        layout(&dst, dst_area(b), (uint64_t)len + RECV_EXTRA, nsge, seed);
        layout_guard(&dst);
        struct iwarp_sge rsge[MAX_SGE];
        layout_sges(&dst, b->mr->lkey, rsge);
        post_recv_on(c, b, id, rsge, (int)nsge);
        layout(&src, src_area(a), len, nsge, seed + 3u);
        layout_fill(&src, seed);
        layout_sges(&src, a->mr->lkey, sge);
        wr.opcode = inv ? IWARP_WR_SEND_WITH_INV : IWARP_WR_SEND;
        if (ax->comp)
            ASSERT_EQ(iwarp_req_notify_cq(b->side.cq, 1), 0);
    } else if (op == OP_WRITE) {
        layout(&dst, dst_area(b), len, 1, seed);
        layout_guard(&dst);
        layout(&src, src_area(a), len, nsge, seed + 3u);
        layout_fill(&src, seed);
        layout_sges(&src, a->mr->lkey, sge);
        wr.opcode = IWARP_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = (uintptr_t)dst.p[0];
        wr.wr.rdma.rkey = b->mr->rkey;
    } else {
        layout(&src, src_area(b), len, 1, seed + 3u);
        layout_fill(&src, seed);
        layout(&dst, dst_area(a), len, nsge, seed);
        layout_guard(&dst);
        layout_sges(&dst, a->mr->lkey, sge);
        wr.opcode = IWARP_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = (uintptr_t)src.p[0];
        wr.wr.rdma.rkey = b->mr->rkey;
    }
    post_send_wr(a, &wr);
    if (inl) /* inline: the data was copied at post time */
        for (uint32_t i = 0; i < src.n; i++)
            memset(src.p[i], 0x3C, src.len[i]);

    static const enum iwarp_wc_opcode wc_op[OP_COUNT] = {IWARP_WC_SEND,       IWARP_WC_SEND,
                                                         IWARP_WC_SEND,       IWARP_WC_SEND,
                                                         IWARP_WC_RDMA_WRITE, IWARP_WC_RDMA_READ};
    if (ax->unsignaled) {
        /* nothing for the unsignaled WR; the signaled marker after it completes (in order) */
        struct iwarp_send_wr m = {
            .wr_id = MARK_ID,
            .opcode = IWARP_WR_RDMA_WRITE,
            .send_flags = IWARP_SEND_SIGNALED,
            .wr.rdma = {.remote_addr = (uintptr_t)dst_area(b), .rkey = b->mr->rkey}};
        post_send_wr(a, &m);
        expect_wc(c, a, MARK_ID, IWARP_WC_RDMA_WRITE, 0, 0);
    } else {
        expect_wc(c, a, id, wc_op[op], len, 0);
    }
    if (send) {
        expect_wc(c, b, id, IWARP_WC_RECV, len, inv ? victim->rkey : 0);
        if (ax->comp)
            expect_cq_event(b, se);
    } else if (op == OP_WRITE) {
        flush_to(c, a, b);
    }
    layout_check(&dst, len, seed, what);
    if (victim) {
        /* invalidated: the STag may no longer be used, even locally (RFC 5040 §6.4.2) */
        struct iwarp_sge vs = {.addr = (uintptr_t)victim_buf, .length = 8, .lkey = victim->lkey};
        struct iwarp_send_wr vw = {
            .wr_id = 1, .sg_list = &vs, .num_sge = 1, .opcode = IWARP_WR_SEND};
        struct iwarp_send_wr *bad = NULL;
        ASSERT_TRUE(iwarp_post_send(b->e.qp, &vw, &bad) < 0);
        ASSERT_TRUE(bad == &vw);
        ASSERT_EQ(iwarp_dereg_mr(victim), 0);
    }
}

/* ---- connection set-up and teardown -------------------------------------------------------- */

static void end_init(struct conn *c, struct end *e, bool srv, uint8_t *mem)
{
    const struct axis *ax = c->ax;
    /* Poisoned (not zeroed) malloc_fn blocks: every case also shows that the connection's
     * buffers are written before they are read. */
    sp_side_init_full(&e->side, NULL, srv ? ax->srv_mode : ax->cli_mode, sp_poison_hooks(), 0, CQE,
                      ax->comp);
    e->mem = mem;
    e->mr = sp_reg(&e->side, mem, 2u * (size_t)AREA, 0);
    e->markers_rx = srv ? ax->srv_markers : ax->cli_markers;
    memset(&e->e, 0, sizeof e->e);
}

/* The largest DDP segment over SCTP for the default 1500-octet MTU (RFC 5043 §9: no SCTP or IP
 * fragmentation): the MTU less the IP, UDP (RFC 6951), SCTP common (12) and DATA chunk (16)
 * headers, the DDP-SSN (2) and the 32 octets the library keeps free for a bundled SACK. */
static uint32_t sctp_max_seg(bool v6)
{
    return 1500u - (v6 ? 40u : 20u) - 8u - 12u - 16u - 2u - 32u;
}

static void conn_up(struct conn *c, const struct axis *ax, uint32_t index)
{
    memset(c, 0, sizeof *c);
    c->ax = ax;
    c->index = index;
    c->seed = index * 1000u;
    end_init(c, &c->srv, true, mem_buf[0]);
    end_init(c, &c->cli, false, mem_buf[1]);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 64,
                                 .max_recv_wr = 64,
                                 .max_send_sge = MAX_SGE,
                                 .max_recv_sge = MAX_SGE,
                                 .max_inline_data = ax->inline_sends ? INLINE_MAX : 0},
                         .sq_sig_all = ax->sq_sig_all};
    if (ax->srq) {
        struct iwarp_srq_init_attr sa = {.attr = {.max_wr = 64, .max_sge = MAX_SGE}};
        ASSERT_EQ(iwarp_create_srq(c->srv.side.pd, &sa, &c->srq), 0);
    }
    if (ax->sctp) {
        c->srv.mulpdu_rx = c->cli.mulpdu_rx = sctp_max_seg(ax->v6);
    } else {
        uint32_t cli_emss, srv_emss;
        loopback_emss(ax->v6, &cli_emss, &srv_emss);
        c->srv.mulpdu_rx = mulpdu(cli_emss, ax->srv_markers);
        c->cli.mulpdu_rx = mulpdu(srv_emss, ax->cli_markers);
    }
    enum iwarp_port_space ps = ax->sctp ? IWARP_PS_SCTP : IWARP_PS_TCP;

    struct sp_side *srv = &c->srv.side, *cli = &c->cli.side;
    struct sockaddr_storage a;
    set_addr(&a, ax->v6, 0);
    ASSERT_EQ(iwarp_cm_create_id(srv->ch, &srv->listen, srv, ps), 0);
    ASSERT_EQ(iwarp_cm_bind_addr(srv->listen, (struct sockaddr *)&a), 0);
    ASSERT_EQ(iwarp_cm_listen(srv->listen, 4), 0);
    uint16_t port = ax->v6 ? ntohs(((struct sockaddr_in6 *)&srv->listen->local_addr)->sin6_port)
                           : ntohs(((struct sockaddr_in *)&srv->listen->local_addr)->sin_port);
    set_addr(&a, ax->v6, port);

    ASSERT_EQ(iwarp_cm_create_id(cli->ch, &c->cli.e.id, c, ps), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(c->cli.e.id, NULL, (struct sockaddr *)&a, 1000), 0);
    sp_expect_ack(cli, srv, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_resolve_route(c->cli.e.id, 1000), 0);
    sp_expect_ack(cli, srv, IWARP_CM_EVENT_ROUTE_RESOLVED);
    sp_create_qp(cli, &c->cli.e, &cfg, NULL);
    struct iwarp_conn_param cp = conn_param(ax, false);
    ASSERT_EQ(iwarp_cm_connect(c->cli.e.id, &cp), 0);

    struct iwarp_cm_event *ev = sp_expect_event(srv, cli, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(ev->status, 0);
    ASSERT_EQ(ev->param.mpa_rev, ax->sctp ? 0 : ax->mpa_rev ? ax->mpa_rev : 2);
    ASSERT_EQ(ev->param.peer_to_peer, ax->p2p);
    ASSERT_EQ(ev->id->peer_addr.ss_family, ax->v6 ? AF_INET6 : AF_INET);
    c->srv.e.id = ev->id;
    ev->id->context_user = c;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    sp_create_qp(srv, &c->srv.e, &cfg, c->srq);
    struct iwarp_conn_param ap = conn_param(ax, true);
    ASSERT_EQ(iwarp_cm_accept(c->srv.e.id, &ap), 0);
    sp_expect_ack(srv, cli, IWARP_CM_EVENT_ESTABLISHED);
    sp_expect_ack(cli, srv, IWARP_CM_EVENT_ESTABLISHED);

    if (ax->srq) {
        /* the limit: one event when fewer than 4 receives remain (ibv_modify_srq(3)) */
        for (uint32_t i = 0; i < 4; i++)
            post_srq(c, 0x500u + i, NULL, 0);
        struct iwarp_srq_attr sa = {.srq_limit = 4};
        ASSERT_EQ(iwarp_modify_srq(c->srq, &sa, IWARP_SRQ_LIMIT), 0);
        struct iwarp_async_event aev;
        ASSERT_EQ(iwarp_get_async_event(srv->ctx, &aev), IWARP_ERR_BUSY);
    }
    if (ax->p2p) {
        /* RFC 6581 peer-to-peer: once the RTR is in, the server may send first */
        wait_rts(c, c->cli.e.qp);
        wait_rts(c, c->srv.e.qp);
        flush_to(c, &c->srv, &c->cli);
    } else if (ax->sctp) {
        /* RFC 6581 §7: over SCTP either side may send first: the server does */
        flush_to(c, &c->srv, &c->cli);
    } else {
        /* RFC 5044 §7.1.2 rule 4: the client sends first */
        flush_to(c, &c->cli, &c->srv);
    }
    if (ax->srq) {
        /* four zero-length Sends take the four receives: the first one leaves 3 < 4 and
         * raises the event, the others do not raise it again */
        for (uint32_t i = 0; i < 4; i++) {
            struct iwarp_send_wr wr = {
                .wr_id = 0x600u + i, .opcode = IWARP_WR_SEND, .send_flags = IWARP_SEND_SIGNALED};
            post_send_wr(&c->cli, &wr);
            expect_wc(c, &c->cli, 0x600u + i, IWARP_WC_SEND, 0, 0);
            expect_wc(c, &c->srv, 0x500u + i, IWARP_WC_RECV, 0, 0);
            struct iwarp_async_event aev;
            if (i == 0) {
                aev = sp_async(srv);
                ASSERT_EQ(aev.event_type, IWARP_EVENT_SRQ_LIMIT_REACHED);
                ASSERT_TRUE(aev.element.srq == c->srq);
                struct iwarp_srq_attr q;
                ASSERT_EQ(iwarp_query_srq(c->srq, &q), 0);
                ASSERT_EQ_U(q.srq_limit, 0); /* disarmed */
            } else {
                ASSERT_EQ(iwarp_get_async_event(srv->ctx, &aev), IWARP_ERR_BUSY);
            }
        }
    }
}

/* Nothing left over on either side, graceful disconnect from the client, teardown. */
static void conn_down(struct conn *c)
{
    struct sp_side *srv = &c->srv.side, *cli = &c->cli.side;
    sp_expect_no_wc(srv, cli);
    sp_expect_no_wc(cli, srv);
    struct iwarp_async_event aev;
    ASSERT_EQ(iwarp_get_async_event(srv->ctx, &aev), IWARP_ERR_BUSY);
    ASSERT_EQ(iwarp_get_async_event(cli->ctx, &aev), IWARP_ERR_BUSY);
    ASSERT_EQ(iwarp_cm_disconnect(c->cli.e.id), 0);
    sp_expect_ack(srv, cli, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(cli, srv, IWARP_CM_EVENT_DISCONNECTED);
    sp_end_destroy(&c->srv.e);
    sp_end_destroy(&c->cli.e);
    if (c->srq)
        ASSERT_EQ(iwarp_destroy_srq(c->srq), 0);
    struct end *ends[2] = {&c->srv, &c->cli};
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(iwarp_dereg_mr(ends[i]->mr), 0);
        sp_side_fini(&ends[i]->side);
    }
}

/* ---- the matrix --------------------------------------------------------------------------- */

struct cell {
    enum op op;
    uint32_t size_i, nsge;
};

static uint32_t cells(struct cell *out)
{
    uint32_t n = 0;
    for (int op = 0; op < OP_COUNT; op++)
        for (uint32_t s = 0; s < N_SIZES; s++)
            for (uint32_t g = 0; g < 2; g++) {
                uint32_t nsge = g ? MAX_SGE : 1u;
                /* Read: the device's max_sge_rd is 1; 6 SGEs need 6 octets */
                if (g && (op == OP_READ || s < 2))
                    continue;
                out[n++] = (struct cell){(enum op)op, s, nsge};
            }
    return n;
}

/* Fence: a Write whose source is the sink of the Read before it carries what was read
 * (verbs IBV_SEND_FENCE; RFC 5040 §5.4 leaves ordering of Read Responses to the ULP). */
static void fence_after_read(struct conn *c)
{
    struct end *a = &c->cli, *b = &c->srv;
    uint32_t seed = ++c->seed, len = 1u << 20;
    struct layout rsrc, sink, dst;
    layout(&rsrc, src_area(b), len, 1, 1);
    layout_fill(&rsrc, seed);
    layout(&sink, src_area(a), len, 1, 2);
    memset(sink.p[0], 0, len);
    layout(&dst, dst_area(b), len, 1, 3);
    layout_guard(&dst);
    struct iwarp_sge s1 = {.addr = (uintptr_t)sink.p[0], .length = len, .lkey = a->mr->lkey};
    struct iwarp_send_wr rd = {.wr_id = 0xFE1,
                               .sg_list = &s1,
                               .num_sge = 1,
                               .opcode = IWARP_WR_RDMA_READ,
                               .send_flags = IWARP_SEND_SIGNALED,
                               .wr.rdma = {(uintptr_t)rsrc.p[0], b->mr->rkey}};
    struct iwarp_send_wr wr = {.wr_id = 0xFE2,
                               .sg_list = &s1,
                               .num_sge = 1,
                               .opcode = IWARP_WR_RDMA_WRITE,
                               .send_flags = IWARP_SEND_SIGNALED | IWARP_SEND_FENCE,
                               .wr.rdma = {(uintptr_t)dst.p[0], b->mr->rkey}};
    rd.next = &wr;
    post_send_wr(a, &rd);
    expect_wc(c, a, 0xFE1, IWARP_WC_RDMA_READ, len, 0);
    expect_wc(c, a, 0xFE2, IWARP_WC_RDMA_WRITE, len, 0);
    flush_to(c, a, b);
    layout_check(&dst, len, seed, "Write fenced after Read");
}

/* Inline Sends and Writes at the limit, with several SGEs (the source is scribbled over right
 * after posting). */
static void inline_extra(struct conn *c)
{
    struct end *a = &c->cli, *b = &c->srv;
    const uint32_t len = INLINE_MAX;
    for (int w = 0; w < 2; w++) {
        uint32_t seed = ++c->seed;
        struct layout src, dst;
        struct iwarp_sge sge[MAX_SGE], rsge[MAX_SGE];
        layout(&dst, dst_area(b), len + (w ? 0u : RECV_EXTRA), w ? 1u : MAX_SGE, seed);
        layout_guard(&dst);
        if (!w) {
            layout_sges(&dst, b->mr->lkey, rsge);
            post_recv_on(c, b, 0x1A, rsge, (int)MAX_SGE);
        }
        layout(&src, src_area(a), len, MAX_SGE, seed + 1u);
        layout_fill(&src, seed);
        layout_sges(&src, a->mr->lkey, sge);
        struct iwarp_send_wr wr = {.wr_id = 0x1A,
                                   .sg_list = sge,
                                   .num_sge = (int)MAX_SGE,
                                   .opcode = w ? IWARP_WR_RDMA_WRITE : IWARP_WR_SEND,
                                   .send_flags = IWARP_SEND_SIGNALED | IWARP_SEND_INLINE,
                                   .wr.rdma = {(uintptr_t)dst.p[0], b->mr->rkey}};
        post_send_wr(a, &wr);
        for (uint32_t i = 0; i < src.n; i++)
            memset(src.p[i], 0x3C, src.len[i]);
        expect_wc(c, a, 0x1A, w ? IWARP_WC_RDMA_WRITE : IWARP_WC_SEND, len, 0);
        if (w)
            flush_to(c, a, b);
        else
            expect_wc(c, b, 0x1A, IWARP_WC_RECV, len, 0);
        layout_check(&dst, len, seed, w ? "inline Write" : "inline Send");
    }
    /* over the limit: refused at post time */
    struct iwarp_sge big = {
        .addr = (uintptr_t)src_area(a), .length = len + 1u, .lkey = a->mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = 0x1B,
                               .sg_list = &big,
                               .num_sge = 1,
                               .opcode = IWARP_WR_SEND,
                               .send_flags = IWARP_SEND_INLINE};
    struct iwarp_send_wr *bad = NULL;
    ASSERT_TRUE(iwarp_post_send(a->e.qp, &wr, &bad) < 0);
    ASSERT_TRUE(bad == &wr);
}

/* Every cell of the matrix, spread over the connections of axes[0..naxes). */
static void run_matrix(const struct axis *axes, uint32_t naxes)
{
    uint64_t t0 = sp_now_ms();
    for (uint32_t i = 0; i < PATLEN; i++)
        pat_tab[i] = sp_pat(0x6D617472u, i);
    for (int i = 0; i < 2; i++) {
        mem_buf[i] = aligned_alloc(4096, 2u * (size_t)AREA);
        ASSERT_TRUE(mem_buf[i] != NULL);
    }
    struct iwarp_device_attr da;
    {
        struct iwarp_ctx *ctx;
        ASSERT_EQ(iwarp_ctx_create(NULL, &ctx), 0);
        ASSERT_EQ(iwarp_query_device(ctx, &da), 0);
        ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
    }
    ASSERT_EQ_U(da.max_sge, MAX_SGE);
    ASSERT_EQ_U(da.max_sge_rd, 1);
    ASSERT_EQ_U(da.max_inline_data, INLINE_MAX);

    struct cell all[OP_COUNT * N_SIZES * 2];
    uint32_t n = cells(all);
    uint32_t per_op_conn[OP_COUNT][NCONN] = {{0}};
    const char *only = getenv("MATRIX_CONN"); /* debugging: run one connection */
    ASSERT_FALSE(axes[naxes - 1u].srv_markers || axes[naxes - 1u].cli_markers);
    for (uint32_t k = 0; k < naxes; k++) {
        if (only && (uint32_t)atoi(only) != k)
            continue;
        uint64_t t = sp_now_ms();
        struct conn c;
        conn_up(&c, &axes[k], k);
        uint32_t ran = 0;
        for (uint32_t i = k; i < n; i += naxes) {
            /* alternate the direction within a connection */
            bool from_srv = (i / naxes) % 2u;
            struct end *a = from_srv ? &c.srv : &c.cli;
            /* the end the data flows to: Read Responses flow back to the requester */
            struct end *to = all[i].op == OP_READ ? a : other(&c, a);
            uint32_t len = size_of(all[i].op, all[i].size_i, to->mulpdu_rx);
            run_cell(&c, a, all[i].op, len, all[i].nsge);
            per_op_conn[all[i].op][k]++;
            ran++;
        }
        if (axes[k].fence)
            fence_after_read(&c);
        if (axes[k].inline_sends)
            inline_extra(&c);
        conn_down(&c);
        fprintf(stderr, "  connection %u%s: %u cells in %.2f s\n", k, axes[k].sctp ? " (SCTP)" : "",
                ran, (double)(sp_now_ms() - t) / 1000.0);
    }
    /* every operation ran on several connections (so met several axis settings) */
    for (int op = 0; op < OP_COUNT && !only; op++) {
        uint32_t conns = 0;
        for (uint32_t k = 0; k < naxes; k++)
            conns += per_op_conn[op][k] ? 1u : 0u;
        ASSERT_TRUE(conns >= 3);
    }
    free(mem_buf[0]);
    free(mem_buf[1]);
    fprintf(stderr, "  %u cells in %.2f s\n", n, (double)(sp_now_ms() - t0) / 1000.0);
}

TEST(every_operation_every_size_every_axis)
{
    run_matrix(AXES, NCONN);
}

#ifdef IWARP_HAVE_SCTP
/* RFC 5043: the same operations over DDP over SCTP, everything above the LLP seam unchanged. */
TEST(every_operation_every_size_over_sctp)
{
    run_matrix(SCTP_AXES, NCONN_SCTP);
}
#endif
