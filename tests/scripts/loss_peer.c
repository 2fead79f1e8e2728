/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loss_peer: one side of tests/scripts/loss.sh's workload, through the public API only.
 *
 *   loss_peer server ADDR PORT QPS BYTES CRC
 *   loss_peer client ADDR PORT QPS BYTES CRC [SEED]
 *
 * The server listens on ADDR:PORT and accepts QPS connections; the client opens QPS connections
 * to it (one QP each, MPA with CRC when CRC is 1) and moves BYTES octets of payload in all,
 * BYTES / QPS per QP: a deterministic mix (from SEED) of RDMA Writes, RDMA Reads and Sends of
 * 1 B to 64 KiB, up to 8 work requests in flight per QP. Every octet is checked:
 *   - Writes go, without overlap, to consecutive offsets of the server's write region of the
 *     QP, with a pattern of (QP, offset). Each Send carries the Write high-water mark at the
 *     time it was posted: when the Send is delivered, the server checks every Written octet up
 *     to that mark (RFC 5040 §5.5: a Send is Delivered after the Writes posted before it are
 *     Placed), so the whole write region is checked, and in order.
 *   - Reads read either the server's source region (a pattern of (QP, offset)) or, once Writes
 *     were posted, a range already Written on the same QP (RFC 5040 §5.5 rule 12: data written
 *     can be read back); the client checks the sink at the Read's completion.
 *   - Sends carry (QP, sequence number) and a payload with the pattern of both; the server
 *     requires each QP's sequence numbers in order, each exactly once, and the payload intact.
 *     The server's receive queue is kept from running dry by credits: after every few Sends it
 *     reposts, it Sends back how many receives it has reposted and how far it has checked.
 *   - Every work request is signaled; each QP's send completions must come in posting order,
 *     each exactly once (wr_id carries the QP and the WR's number), with status SUCCESS, the
 *     expected opcode and byte_len; receive completions likewise on both sides.
 *   - No Terminate: any completion error, any async event (QP_FATAL, QP_ACCESS_ERR...) and any
 *     CM event other than the expected ones (a DISCONNECTED before the end) fails the run.
 * The client ends each QP with a final Send; the server answers with a final credit saying how
 * far it checked, which must be every octet Written. Then the client disconnects.
 *
 * Prints one line of figures and exits 0, or says what failed and exits 1. Every wait has a
 * deadline (LP_STALL_MS without progress). Environment: LOSS_PEER_LOG=0..3 the library's log
 * level on stderr (default 2, INFO); LOSS_PEER_PCAP=PREFIX records each side's connections in
 * PREFIX.server.pcap / PREFIX.client.pcap (iwarp dump reads them).
 */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "iwarp/iwarp.h"

enum {
    LP_MAX_QPS = 256,
    LP_QD = 8,                /* client: WRs in flight per QP */
    LP_MAX_MSG = 64 * 1024,   /* largest Write or Read */
    LP_MAX_SEND = 16 * 1024,  /* largest Send, header included */
    LP_HDR = 32,              /* a Send's header; a credit message is one header */
    LP_RQ_SRV = 16,           /* server receives per QP */
    LP_RQ_CLI = 16,           /* client receives per QP (credit messages) */
    LP_CREDIT_BATCH = 4,      /* the server returns credits every this many receives */
    LP_SRC_LEN = 1024 * 1024, /* the server's Read source region per QP */
    LP_STALL_MS = 60000,      /* no completion for this long fails the run */
    LP_PD_LEN = 24,           /* private data */
};
#define LP_MAGIC_SEND   0x4c4f5353u /* "LOSS" */
#define LP_MAGIC_CREDIT 0x43524544u /* "CRED" */
#define LP_MAGIC_HELLO  0x48454c4fu /* "HELO" */
#define LP_FINAL        1u

enum { LP_WR_SQ = 1, LP_WR_RQ = 2 };
enum lp_kind { LP_WRITE = 0, LP_READ = 1, LP_SEND = 2 };

static const char *g_role = "loss_peer";

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: FAIL: ", g_role);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

#define CHECK_RC(call)                                                            \
    do {                                                                          \
        int rc_ = (call);                                                         \
        if (rc_ < 0)                                                              \
            die("%s:%d: %s: %s", __FILE__, __LINE__, #call, iwarp_err_name(rc_)); \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- patterns --------------------------------------------------------------------------- */

/* Keys of the three patterns: the write region, the source region, a Send's payload. */
static uint64_t key_write(uint32_t q)
{
    return 1ull << 56 | q;
}
static uint64_t key_src(uint32_t q)
{
    return 2ull << 56 | q;
}
static uint64_t key_send(uint32_t q, uint64_t seq)
{
    return 3ull << 56 | (uint64_t)q << 32 | (seq & 0xffffffffu);
}

/* The 8 octets of pattern key at word w (octet offset w * 8): depends on both, so a misplaced
 * or shifted range does not match. */
static uint64_t pat_word(uint64_t key, uint64_t w)
{
    uint64_t x = key * 0x9E3779B97F4A7C15ull ^ (w + 1) * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return x;
}

/* Fill p[0..len) with pattern key from offset off. */
static void pat_fill(uint8_t *p, size_t len, uint64_t key, uint64_t off)
{
    size_t i = 0;
    while (i < len) {
        uint64_t o = off + i, x = pat_word(key, o / 8);
        for (unsigned b = (unsigned)(o % 8); b < 8 && i < len; b++, i++)
            p[i] = (uint8_t)(x >> (b * 8));
    }
}

/* The first octet of p[0..len) that differs from pattern key at offset off, or len. */
static size_t pat_check(const uint8_t *p, size_t len, uint64_t key, uint64_t off)
{
    size_t i = 0;
    while (i < len) {
        uint64_t o = off + i, x = pat_word(key, o / 8);
        for (unsigned b = (unsigned)(o % 8); b < 8 && i < len; b++, i++)
            if (p[i] != (uint8_t)(x >> (b * 8)))
                return i;
    }
    return len;
}

/* ---- wire helpers (little-endian headers of our own protocol) ----------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A header: magic, QP, flags, seq, mark (write high-water mark, or checked mark), count. */
struct lp_hdr {
    uint32_t magic, q, flags, seq;
    uint64_t mark, count;
};
static void hdr_put(uint8_t *p, const struct lp_hdr *h)
{
    put32(p, h->magic);
    put32(p + 4, h->q);
    put32(p + 8, h->flags);
    put32(p + 12, h->seq);
    put64(p + 16, h->mark);
    put64(p + 24, h->count);
}
static void hdr_get(const uint8_t *p, struct lp_hdr *h)
{
    h->magic = get32(p);
    h->q = get32(p + 4);
    h->flags = get32(p + 8);
    h->seq = get32(p + 12);
    h->mark = get64(p + 16);
    h->count = get64(p + 24);
}

static uint64_t wr_id(unsigned kind, uint32_t q, uint32_t n)
{
    return (uint64_t)kind << 60 | (uint64_t)q << 32 | n;
}
static unsigned wr_kind(uint64_t id)
{
    return (unsigned)(id >> 60);
}
static uint32_t wr_q(uint64_t id)
{
    return (uint32_t)(id >> 32) & 0xfffffffu;
}
static uint32_t wr_n(uint64_t id)
{
    return (uint32_t)id;
}

/* ---- the common part of both sides ---------------------------------------------------------- */

struct lp_side {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    uint32_t nqps;
    bool crc;
    uint64_t per_qp; /* payload octets per QP */
    struct iwarp_wc wc[64];
    int wc_n, wc_i;
    uint64_t last_progress;
    /* A CM event while data moves that is no failure (cm_ok returns true: it is taken and
     * acknowledged, and counted in early_disconnects); NULL: every one fails. */
    bool (*cm_ok)(struct lp_side *s, const struct iwarp_cm_event *ev);
    void *cm_user;
    uint32_t early_disconnects;
};

/* The library's log lines (INFO: connections, Terminates; LOSS_PEER_LOG=3 for DEBUG) go to
 * stderr, so that a failure says what the library saw. */
static void log_line(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    fprintf(stderr, "%s: libiwarp[%d]: %s\n", g_role, (int)level, msg);
}

static void side_open(struct lp_side *s, uint32_t nqps, bool crc, uint64_t per_qp)
{
    memset(s, 0, sizeof *s);
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.log = log_line;
    a.log_level = IWARP_LOG_INFO;
    const char *lv = getenv("LOSS_PEER_LOG");
    if (lv && *lv >= '0' && *lv <= '3')
        a.log_level = (enum iwarp_log_level)(*lv - '0');
    /* LOSS_PEER_PCAP=PREFIX: each side records its connections in PREFIX.<role>.pcap */
    char pcap[4096];
    const char *pp = getenv("LOSS_PEER_PCAP");
    if (pp && *pp) {
        snprintf(pcap, sizeof pcap, "%s.%s.pcap", pp, strchr(g_role, ' ') + 1);
        a.trace_pcap = pcap;
    }
    CHECK_RC(iwarp_ctx_create(&a, &s->ctx));
    CHECK_RC(iwarp_cm_create_channel(s->ctx, &s->ch));
    CHECK_RC(iwarp_alloc_pd(s->ctx, &s->pd));
    int cqe = (int)(nqps * (LP_QD + LP_RQ_SRV + LP_RQ_CLI + 8));
    CHECK_RC(iwarp_create_cq(s->ctx, cqe, NULL, NULL, 0, &s->cq));
    s->nqps = nqps;
    s->crc = crc;
    s->per_qp = per_qp;
    s->last_progress = now_ns();
}

static void side_close(struct lp_side *s)
{
    CHECK_RC(iwarp_destroy_cq(s->cq));
    CHECK_RC(iwarp_dealloc_pd(s->pd));
    CHECK_RC(iwarp_cm_destroy_channel(s->ch));
    CHECK_RC(iwarp_ctx_destroy(s->ctx));
}

/* Fails on any async event: a Terminate sent or received, a lost connection, a CQ overrun. */
static void no_async_event(struct lp_side *s)
{
    struct iwarp_async_event ev;
    if (iwarp_get_async_event(s->ctx, &ev) == 0)
        die("async event %s (a Terminate or a lost connection)",
            iwarp_event_type_str(ev.event_type));
}

/* Fails on any CM event while data moves (a DISCONNECTED: the peer or TCP gave up). */
static void no_cm_event(struct lp_side *s)
{
    struct iwarp_cm_event *ev = NULL;
    if (iwarp_cm_get_event_timeout(s->ch, &ev, 0) != 0)
        return;
    if (s->cm_ok && s->cm_ok(s, ev)) {
        s->early_disconnects++;
        CHECK_RC(iwarp_cm_ack_event(ev));
        return;
    }
    die("unexpected CM event %s (status %s) while data moves", iwarp_cm_event_str(ev->event),
        iwarp_err_name(ev->status));
}

/* Fails on a completion in error (a Terminate, a lost connection: its WRs are flushed). */
static void wc_ok(struct lp_side *s, const struct iwarp_wc *wc)
{
    if (wc->status != IWARP_WC_SUCCESS)
        no_async_event(s); /* the reason first: a Terminate's QP_FATAL, QP_ACCESS_ERR */
    if (wc->status != IWARP_WC_SUCCESS)
        die("completion of wr_id %#llx (QP %u): %s, Terminate cause %#08x",
            (unsigned long long)wc->wr_id, wr_q(wc->wr_id), iwarp_wc_status_str(wc->status),
            (unsigned)wc->vendor_err);
}

/* The next completion, waiting for it; what = what is awaited, for the message. Its status is
 * the caller's to check. */
static void next_wc(struct lp_side *s, struct iwarp_wc *wc, const char *what)
{
    for (;;) {
        if (s->wc_i < s->wc_n) {
            *wc = s->wc[s->wc_i++];
            s->last_progress = now_ns();
            return;
        }
        int n = iwarp_poll_cq(s->cq, (int)(sizeof s->wc / sizeof s->wc[0]), s->wc);
        if (n < 0)
            die("iwarp_poll_cq: %s", iwarp_err_name(n));
        s->wc_n = n;
        s->wc_i = 0;
        if (n > 0)
            continue;
        no_async_event(s);
        no_cm_event(s);
        if (now_ns() - s->last_progress > (uint64_t)LP_STALL_MS * 1000000u)
            die("no completion for %d ms while waiting for %s", LP_STALL_MS, what);
        int rc = iwarp_cq_wait(s->cq, 200);
        if (rc < 0 && rc != IWARP_ERR_TIMEDOUT)
            die("iwarp_cq_wait: %s", iwarp_err_name(rc));
    }
}

static struct iwarp_cm_event *expect_event(struct lp_side *s, enum iwarp_cm_event_type want,
                                           int timeout_ms)
{
    struct iwarp_cm_event *ev;
    int rc = iwarp_cm_get_event_timeout(s->ch, &ev, timeout_ms);
    if (rc < 0)
        die("waiting for a CM %s event: %s", iwarp_cm_event_str(want), iwarp_err_name(rc));
    if (ev->event != want || ev->status != 0)
        die("expected CM event %s, got %s (status %s)", iwarp_cm_event_str(want),
            iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
    return ev;
}

static struct iwarp_qp *create_qp(struct lp_side *s, struct iwarp_cm_id *id, uint32_t sq,
                                  uint32_t rq)
{
    struct iwarp_qp_init_attr qa = {.send_cq = s->cq,
                                    .recv_cq = s->cq,
                                    .cap = {.max_send_wr = sq,
                                            .max_recv_wr = rq,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1,
                                            .max_inline_data = LP_HDR},
                                    .qp_type = IWARP_QPT_RC,
                                    .sq_sig_all = 1};
    CHECK_RC(iwarp_cm_create_qp(id, s->pd, &qa));
    return id->qp;
}

static void post_recv(struct iwarp_qp *qp, uint64_t id, void *buf, uint32_t len, uint32_t lkey)
{
    struct iwarp_sge sge = {.addr = (uint64_t)(uintptr_t)buf, .length = len, .lkey = lkey};
    struct iwarp_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
    struct iwarp_recv_wr *bad;
    CHECK_RC(iwarp_post_recv(qp, &wr, &bad));
}

static void conn_param(struct iwarp_conn_param *cp, bool crc, const uint8_t *pd)
{
    memset(cp, 0, sizeof *cp);
    cp->private_data = pd;
    cp->private_data_len = LP_PD_LEN;
    cp->responder_resources = 0xFF;
    cp->initiator_depth = 0xFF;
    cp->crc = crc;
}

/* ---- server ------------------------------------------------------------------------------- */

struct srv_qp {
    struct iwarp_cm_id *id;
    struct iwarp_qp *qp;
    struct iwarp_mr *mr;
    uint8_t *buf; /* [write region][source][receives] */
    size_t wlen;
    uint32_t next_seq; /* the next Send expected */
    uint64_t checked;  /* write region checked up to here */
    uint64_t reposted; /* receives consumed and posted again */
    uint32_t credits_posted, credits_done;
    uint64_t sends, send_octets;
    uint32_t flushed; /* receives flushed by the client's disconnect, after the final Send */
    bool final;
};

static uint8_t *srv_recv_buf(struct srv_qp *e, uint32_t slot)
{
    return e->buf + e->wlen + LP_SRC_LEN + (size_t)slot * LP_MAX_SEND;
}

static void srv_credit(struct srv_qp *e, uint32_t q, bool final)
{
    uint8_t msg[LP_HDR];
    struct lp_hdr h = {.magic = LP_MAGIC_CREDIT,
                       .q = q,
                       .flags = final ? LP_FINAL : 0,
                       .seq = e->credits_posted,
                       .mark = e->checked,
                       .count = e->reposted};
    hdr_put(msg, &h);
    struct iwarp_sge sge = {.addr = (uint64_t)(uintptr_t)msg, .length = LP_HDR, .lkey = 0};
    struct iwarp_send_wr wr = {.wr_id = wr_id(LP_WR_SQ, q, e->credits_posted),
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = IWARP_WR_SEND,
                               .send_flags = IWARP_SEND_SIGNALED | IWARP_SEND_INLINE};
    struct iwarp_send_wr *bad;
    CHECK_RC(iwarp_post_send(e->qp, &wr, &bad));
    e->credits_posted++;
}

static void srv_on_recv(struct srv_qp *e, uint32_t q, const struct iwarp_wc *wc, uint32_t *finals)
{
    uint32_t slot = wr_n(wc->wr_id);
    if (wc->opcode != IWARP_WC_RECV || slot >= LP_RQ_SRV)
        die("QP %u: receive completion with opcode %d, slot %u", q, wc->opcode, slot);
    if (e->final)
        die("QP %u: a Send after the final one", q);
    const uint8_t *m = srv_recv_buf(e, slot);
    struct lp_hdr h;
    if (wc->byte_len < LP_HDR)
        die("QP %u: a Send of %u octets, shorter than its header", q, wc->byte_len);
    hdr_get(m, &h);
    if (h.magic != LP_MAGIC_SEND || h.q != q)
        die("QP %u: Send with magic %#x for QP %u", q, h.magic, h.q);
    if (h.seq != e->next_seq)
        die("QP %u: Send number %u where %u was due (lost, repeated or out of order)", q, h.seq,
            e->next_seq);
    size_t plen = wc->byte_len - LP_HDR;
    if (h.count != plen)
        die("QP %u: Send %u has %zu payload octets, its header says %llu", q, h.seq, plen,
            (unsigned long long)h.count);
    size_t at = pat_check(m + LP_HDR, plen, key_send(q, h.seq), 0);
    if (at != plen)
        die("QP %u: Send %u's payload differs at octet %zu of %zu", q, h.seq, at, plen);
    /* RFC 5040 §5.5: the Writes posted before this Send are Placed by now. */
    if (h.mark < e->checked || h.mark > e->wlen)
        die("QP %u: Send %u says %llu octets Written (checked %llu, region %zu)", q, h.seq,
            (unsigned long long)h.mark, (unsigned long long)e->checked, e->wlen);
    size_t wn = (size_t)(h.mark - e->checked);
    at = pat_check(e->buf + e->checked, wn, key_write(q), e->checked);
    if (at != wn)
        die("QP %u: Written octet %llu differs when Send %u (posted after it) arrived", q,
            (unsigned long long)(e->checked + at), h.seq);
    e->checked = h.mark;
    e->next_seq++;
    e->sends++;
    e->send_octets += plen;
    memset(srv_recv_buf(e, slot), 0, LP_HDR); /* a stale header never passes again */
    post_recv(e->qp, wc->wr_id, srv_recv_buf(e, slot), LP_MAX_SEND, e->mr->lkey);
    e->reposted++;
    if (h.flags & LP_FINAL) {
        e->final = true;
        (*finals)++;
        srv_credit(e, q, true);
    } else if (e->reposted % LP_CREDIT_BATCH == 0) {
        srv_credit(e, q, false);
    }
}

/* The client disconnects every QP once it has each one's final credit; the server may see a
 * DISCONNECTED before its own completion of the last credit Send (the Send is on the wire before
 * the thread that wrote it reports it). That is no failure for a QP whose final Send was checked.
 */
static bool srv_disconnect_ok(struct lp_side *s, const struct iwarp_cm_event *ev)
{
    const struct srv_qp *qps = s->cm_user;
    if (ev->event != IWARP_CM_EVENT_DISCONNECTED || ev->status != 0)
        return false;
    for (uint32_t i = 0; i < s->nqps; i++)
        if (qps[i].id == ev->id)
            return qps[i].final;
    return false;
}

static int run_server(const struct sockaddr_in *addr, uint32_t nqps, uint64_t per_qp, bool crc)
{
    struct lp_side s;
    side_open(&s, nqps, crc, per_qp);
    struct srv_qp *qps = calloc(nqps, sizeof *qps);
    if (!qps)
        die("out of memory");
    s.cm_ok = srv_disconnect_ok;
    s.cm_user = qps;
    struct iwarp_cm_id *listen;
    CHECK_RC(iwarp_cm_create_id(s.ch, &listen, NULL, IWARP_PS_TCP));
    CHECK_RC(iwarp_cm_bind_addr(listen, (const struct sockaddr *)addr));
    CHECK_RC(iwarp_cm_listen(listen, 1024));
    printf("listening\n");
    fflush(stdout);

    /* Accept QPS connections; each Request names its QP index. */
    uint32_t up = 0, requests = 0;
    while (up < nqps) {
        struct iwarp_cm_event *ev;
        int rc = iwarp_cm_get_event_timeout(s.ch, &ev, LP_STALL_MS);
        if (rc < 0)
            die("waiting for connections (%u of %u up): %s", up, nqps, iwarp_err_name(rc));
        if (ev->status != 0)
            die("CM event %s with status %s", iwarp_cm_event_str(ev->event),
                iwarp_err_name(ev->status));
        if (ev->event == IWARP_CM_EVENT_CONNECT_REQUEST) {
            const uint8_t *pd = ev->param.private_data;
            if (ev->param.private_data_len != LP_PD_LEN || get32(pd) != LP_MAGIC_HELLO ||
                get32(pd + 4) >= nqps || get32(pd + 8) != nqps || get64(pd + 16) != per_qp)
                die("a connection request that does not match this run");
            uint32_t q = get32(pd + 4);
            struct srv_qp *e = &qps[q];
            if (e->id)
                die("QP %u requested twice", q);
            if (ev->param.crc != crc)
                die("QP %u: the client asks for CRC %s", q, ev->param.crc ? "on" : "off");
            e->id = ev->id;
            ev->id->context_user = e;
            e->wlen = (size_t)per_qp;
            size_t total = e->wlen + LP_SRC_LEN + (size_t)LP_RQ_SRV * LP_MAX_SEND;
            e->buf = malloc(total);
            if (!e->buf)
                die("out of memory (%zu octets)", total);
            memset(e->buf, 0, e->wlen);
            pat_fill(e->buf + e->wlen, LP_SRC_LEN, key_src(q), 0);
            CHECK_RC(iwarp_reg_mr(s.pd, e->buf, total,
                                  IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                                      IWARP_ACCESS_REMOTE_READ,
                                  &e->mr));
            e->qp = create_qp(&s, ev->id, LP_RQ_SRV / LP_CREDIT_BATCH + 4, LP_RQ_SRV);
            for (uint32_t i = 0; i < LP_RQ_SRV; i++)
                post_recv(e->qp, wr_id(LP_WR_RQ, q, i), srv_recv_buf(e, i), LP_MAX_SEND,
                          e->mr->lkey);
            uint8_t rep[LP_PD_LEN];
            put32(rep, e->mr->rkey);
            put32(rep + 4, q);
            put64(rep + 8, (uint64_t)(uintptr_t)e->buf);
            put64(rep + 16, (uint64_t)(uintptr_t)(e->buf + e->wlen));
            struct iwarp_conn_param cp;
            conn_param(&cp, crc, rep);
            CHECK_RC(iwarp_cm_accept(ev->id, &cp));
            requests++;
        } else if (ev->event == IWARP_CM_EVENT_ESTABLISHED) {
            struct srv_qp *e = ev->id->context_user;
            if (ev->param.crc != crc)
                die("QP %zu established with CRC %s", (size_t)(e - qps),
                    ev->param.crc ? "on" : "off");
            up++;
        } else {
            die("unexpected CM event %s while accepting", iwarp_cm_event_str(ev->event));
        }
        CHECK_RC(iwarp_cm_ack_event(ev));
    }

    /* Serve until every QP's final Send is checked and its final credit completed. */
    uint32_t finals = 0, credits_left = 1;
    while (finals < nqps || credits_left) {
        struct iwarp_wc wc;
        next_wc(&s, &wc, "Sends from the client");
        uint32_t q = wr_q(wc.wr_id);
        if (q >= nqps)
            die("a completion for QP %u", q);
        struct srv_qp *e = &qps[q];
        if (wc.status == IWARP_WC_WR_FLUSH_ERR && wr_kind(wc.wr_id) == LP_WR_RQ && e->final &&
            e->flushed < LP_RQ_SRV) {
            /* The client disconnects a QP once it has our final credit, which may be before
             * this CQ reports the credit Sends of other QPs: the QP's receives, all posted
             * again after its final Send, are flushed then. Nothing else may fail. */
            e->flushed++;
            continue;
        }
        wc_ok(&s, &wc);
        if (wr_kind(wc.wr_id) == LP_WR_RQ) {
            srv_on_recv(e, q, &wc, &finals);
        } else {
            if (wc.opcode != IWARP_WC_SEND || wr_n(wc.wr_id) != e->credits_done)
                die("QP %u: credit completion %u (opcode %d) where %u was due", q, wr_n(wc.wr_id),
                    wc.opcode, e->credits_done);
            e->credits_done++;
        }
        credits_left = 0;
        for (uint32_t i = 0; i < nqps; i++)
            credits_left += qps[i].credits_posted - qps[i].credits_done;
    }

    /* The client disconnects every QP (some DISCONNECTEDs may have come already); nothing else
     * may happen. */
    uint64_t sends = 0, send_octets = 0, written = 0;
    for (uint32_t i = s.early_disconnects; i < nqps; i++) {
        struct iwarp_cm_event *ev = expect_event(&s, IWARP_CM_EVENT_DISCONNECTED, LP_STALL_MS);
        CHECK_RC(iwarp_cm_ack_event(ev));
    }
    no_async_event(&s);
    for (uint32_t i = 0; i < nqps; i++) {
        struct srv_qp *e = &qps[i];
        sends += e->sends;
        send_octets += e->send_octets;
        written += e->checked;
        /* The final Send's mark covers every Write; check the region beyond it is untouched. */
        for (size_t k = (size_t)e->checked; k < e->wlen; k++)
            if (e->buf[k] != 0)
                die("QP %u: octet %zu beyond the last Write (%llu) was written", i, k,
                    (unsigned long long)e->checked);
        /* The source region was only read. */
        size_t at = pat_check(e->buf + e->wlen, LP_SRC_LEN, key_src(i), 0);
        if (at != LP_SRC_LEN)
            die("QP %u: the Read source changed at octet %zu", i, at);
        iwarp_cm_destroy_qp(e->id);
        CHECK_RC(iwarp_cm_destroy_id(e->id));
        CHECK_RC(iwarp_dereg_mr(e->mr));
        free(e->buf);
    }
    printf("server: %u QPs, %llu Sends in order (%llu payload octets) and %llu Written octets "
           "checked, no Terminate\n",
           nqps, (unsigned long long)sends, (unsigned long long)send_octets,
           (unsigned long long)written);
    CHECK_RC(iwarp_cm_destroy_id(listen));
    free(qps);
    side_close(&s);
    return 0;
}

/* ---- client ------------------------------------------------------------------------------- */

struct cli_wr {
    enum lp_kind kind;
    uint32_t len; /* payload octets (a Send: header included) */
    uint64_t key; /* a Read: the pattern its sink must hold */
    uint64_t off; /* ... from this offset */
    bool final;
};

struct cli_qp {
    struct iwarp_cm_id *id;
    struct iwarp_qp *qp;
    struct iwarp_mr *mr;
    uint8_t *buf; /* [LP_QD slots of LP_MAX_MSG][LP_RQ_CLI receives of LP_HDR] */
    uint32_t rkey;
    uint64_t waddr, saddr; /* the server's write region and source */
    uint64_t rng;
    uint64_t budget;            /* payload octets still to move */
    uint64_t written;           /* Write high-water mark */
    uint32_t posted, completed; /* SQ WRs */
    uint32_t sends_posted;      /* Sends (final included) */
    uint64_t credit_limit;      /* Sends the server can take */
    uint32_t credit_seq;        /* the next credit message due */
    uint64_t checked;           /* the server's checked mark */
    bool final_posted, final_acked, done;
    struct cli_wr wr[LP_QD];
    bool have_next;
    struct cli_wr next;
    uint64_t n_op[3], octets_op[3];
};

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* A size from 1 B to max: a quarter small, half medium, a quarter large. */
static uint32_t pick_len(uint64_t *rng, uint32_t max)
{
    uint64_t r = rng_next(rng);
    uint32_t len;
    switch (r & 3) {
    case 0:
        len = (uint32_t)((r >> 8) % 256) + 1;
        break;
    case 3:
        len = (uint32_t)((r >> 8) % (uint64_t)(LP_MAX_MSG - 8192)) + 8193;
        break;
    default:
        len = (uint32_t)((r >> 8) % 8192) + 1;
        break;
    }
    return len > max ? max : len;
}

/* The QP's next work request (not yet posted). */
static void cli_gen(struct cli_qp *c, uint32_t q)
{
    struct cli_wr *w = &c->next;
    memset(w, 0, sizeof *w);
    if (c->budget == 0) {
        w->kind = LP_SEND;
        w->len = LP_HDR;
        w->final = true;
        c->have_next = true;
        return;
    }
    uint64_t r = rng_next(&c->rng);
    w->kind = (enum lp_kind)(r % 3);
    uint32_t max = w->kind == LP_SEND ? LP_MAX_SEND - LP_HDR : LP_MAX_MSG;
    if (c->budget < max)
        max = (uint32_t)c->budget;
    w->len = pick_len(&c->rng, max);
    c->budget -= w->len;
    c->n_op[w->kind]++;
    c->octets_op[w->kind] += w->len;
    if (w->kind == LP_READ) {
        r = rng_next(&c->rng);
        if (c->written > 0 && (r & 1)) { /* read back a range Written earlier on this QP */
            if (w->len > c->written)
                w->len = (uint32_t)c->written; /* the budget counted the asked length */
            w->key = key_write(q);
            w->off = (r >> 1) % (c->written - w->len + 1);
        } else {
            w->key = key_src(q);
            w->off = (r >> 1) % (LP_SRC_LEN - w->len + 1);
        }
    } else if (w->kind == LP_SEND) {
        w->len += LP_HDR;
    }
    c->have_next = true;
}

/* Post c's next WR if there is room (and, for a Send, a receive at the server). */
static bool cli_try_post(struct cli_qp *c, uint32_t q)
{
    if (c->final_posted || c->posted - c->completed >= LP_QD)
        return false;
    if (!c->have_next)
        cli_gen(c, q);
    struct cli_wr *w = &c->next;
    if (w->kind == LP_SEND && c->sends_posted >= c->credit_limit)
        return false;
    uint32_t slot = c->posted % LP_QD;
    uint8_t *p = c->buf + (size_t)slot * LP_MAX_MSG;
    struct iwarp_sge sge = {.addr = (uint64_t)(uintptr_t)p, .length = w->len, .lkey = c->mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = wr_id(LP_WR_SQ, q, c->posted),
                               .sg_list = &sge,
                               .num_sge = 1,
                               .send_flags = IWARP_SEND_SIGNALED};
    switch (w->kind) {
    case LP_WRITE:
        pat_fill(p, w->len, key_write(q), c->written);
        wr.opcode = IWARP_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = c->waddr + c->written;
        wr.wr.rdma.rkey = c->rkey;
        c->written += w->len;
        break;
    case LP_READ:
        memset(p, 0xA5, w->len); /* poison: a Read that places nothing fails the check */
        wr.opcode = IWARP_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = (w->key == key_src(q) ? c->saddr : c->waddr) + w->off;
        wr.wr.rdma.rkey = c->rkey;
        break;
    case LP_SEND: {
        struct lp_hdr h = {.magic = LP_MAGIC_SEND,
                           .q = q,
                           .flags = w->final ? LP_FINAL : 0,
                           .seq = c->sends_posted,
                           .mark = c->written,
                           .count = w->len - LP_HDR};
        hdr_put(p, &h);
        pat_fill(p + LP_HDR, w->len - LP_HDR, key_send(q, c->sends_posted), 0);
        wr.opcode = IWARP_WR_SEND;
        c->sends_posted++;
        break;
    }
    }
    struct iwarp_send_wr *bad;
    CHECK_RC(iwarp_post_send(c->qp, &wr, &bad));
    c->wr[slot] = *w;
    c->posted++;
    c->have_next = false;
    if (w->final)
        c->final_posted = true;
    return true;
}

static void cli_on_sq(struct cli_qp *c, uint32_t q, const struct iwarp_wc *wc)
{
    uint32_t n = wr_n(wc->wr_id);
    if (n != c->completed || c->completed == c->posted)
        die("QP %u: send completion of WR %u where WR %u was due (%u posted): lost, repeated "
            "or out of order",
            q, n, c->completed, c->posted);
    const struct cli_wr *w = &c->wr[n % LP_QD];
    static const enum iwarp_wc_opcode want[3] = {IWARP_WC_RDMA_WRITE, IWARP_WC_RDMA_READ,
                                                 IWARP_WC_SEND};
    if (wc->opcode != want[w->kind] || wc->byte_len != w->len)
        die("QP %u: WR %u completed as opcode %d, %u octets; posted as opcode %d, %u octets", q, n,
            wc->opcode, wc->byte_len, want[w->kind], w->len);
    if (w->kind == LP_READ) {
        const uint8_t *p = c->buf + (size_t)(n % LP_QD) * LP_MAX_MSG;
        size_t at = pat_check(p, w->len, w->key, w->off);
        if (at != w->len)
            die("QP %u: Read %u (%u octets of the %s at %llu) differs at octet %zu", q, n, w->len,
                w->key == key_src(q) ? "source" : "Written region", (unsigned long long)w->off, at);
    }
    c->completed++;
}

static void cli_on_rq(struct cli_qp *c, uint32_t q, const struct iwarp_wc *wc)
{
    uint32_t slot = wr_n(wc->wr_id);
    if (wc->opcode != IWARP_WC_RECV || slot >= LP_RQ_CLI || wc->byte_len != LP_HDR)
        die("QP %u: receive completion with opcode %d, slot %u, %u octets", q, wc->opcode, slot,
            wc->byte_len);
    uint8_t *m = c->buf + (size_t)LP_QD * LP_MAX_MSG + (size_t)slot * LP_HDR;
    struct lp_hdr h;
    hdr_get(m, &h);
    if (h.magic != LP_MAGIC_CREDIT || h.q != q || h.seq != c->credit_seq)
        die("QP %u: credit message %u (magic %#x, QP %u) where %u was due", q, h.seq, h.magic, h.q,
            c->credit_seq);
    if (h.count + LP_RQ_SRV < c->credit_limit || h.mark < c->checked || h.mark > c->written)
        die("QP %u: credit message %u goes back (%llu reposted, %llu checked)", q, h.seq,
            (unsigned long long)h.count, (unsigned long long)h.mark);
    c->credit_seq++;
    c->credit_limit = h.count + LP_RQ_SRV;
    c->checked = h.mark;
    if (h.flags & LP_FINAL) {
        if (!c->final_posted || h.mark != c->written || h.count != c->sends_posted)
            die("QP %u: the server's final word: %llu Sends, %llu octets checked; we sent %u "
                "Sends and Wrote %llu octets",
                q, (unsigned long long)h.count, (unsigned long long)h.mark, c->sends_posted,
                (unsigned long long)c->written);
        c->final_acked = true;
    }
    memset(m, 0, LP_HDR);
    post_recv(c->qp, wc->wr_id, m, LP_HDR, c->mr->lkey);
}

static int run_client(const struct sockaddr_in *addr, uint32_t nqps, uint64_t per_qp, bool crc,
                      uint64_t seed)
{
    struct lp_side s;
    side_open(&s, nqps, crc, per_qp);
    struct cli_qp *qps = calloc(nqps, sizeof *qps);
    if (!qps)
        die("out of memory");
    uint64_t t0 = now_ns();
    /* Connect every QP: resolve, create the QP, connect with our index. */
    for (uint32_t q = 0; q < nqps; q++) {
        struct cli_qp *c = &qps[q];
        size_t total = (size_t)LP_QD * LP_MAX_MSG + (size_t)LP_RQ_CLI * LP_HDR;
        c->buf = calloc(1, total);
        if (!c->buf)
            die("out of memory");
        CHECK_RC(iwarp_reg_mr(s.pd, c->buf, total,
                              IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE, &c->mr));
        c->rng = seed * 0x9E3779B97F4A7C15ull + q + 1;
        c->budget = per_qp;
        c->credit_limit = LP_RQ_SRV;
        CHECK_RC(iwarp_cm_create_id(s.ch, &c->id, c, IWARP_PS_TCP));
        CHECK_RC(iwarp_cm_resolve_addr(c->id, NULL, (const struct sockaddr *)addr, 2000));
    }
    uint32_t up = 0;
    while (up < nqps) {
        struct iwarp_cm_event *ev;
        int rc = iwarp_cm_get_event_timeout(s.ch, &ev, LP_STALL_MS);
        if (rc < 0)
            die("connecting (%u of %u up): %s", up, nqps, iwarp_err_name(rc));
        if (ev->status != 0)
            die("CM event %s with status %s", iwarp_cm_event_str(ev->event),
                iwarp_err_name(ev->status));
        struct cli_qp *c = ev->id->context_user;
        uint32_t q = (uint32_t)(c - qps);
        switch (ev->event) {
        case IWARP_CM_EVENT_ADDR_RESOLVED:
            CHECK_RC(iwarp_cm_resolve_route(ev->id, 2000));
            break;
        case IWARP_CM_EVENT_ROUTE_RESOLVED: {
            c->qp = create_qp(&s, ev->id, LP_QD, LP_RQ_CLI);
            for (uint32_t i = 0; i < LP_RQ_CLI; i++)
                post_recv(c->qp, wr_id(LP_WR_RQ, q, i),
                          c->buf + (size_t)LP_QD * LP_MAX_MSG + (size_t)i * LP_HDR, LP_HDR,
                          c->mr->lkey);
            uint8_t pd[LP_PD_LEN];
            put32(pd, LP_MAGIC_HELLO);
            put32(pd + 4, q);
            put32(pd + 8, nqps);
            put32(pd + 12, 0);
            put64(pd + 16, per_qp);
            struct iwarp_conn_param cp;
            conn_param(&cp, crc, pd);
            CHECK_RC(iwarp_cm_connect(ev->id, &cp));
            break;
        }
        case IWARP_CM_EVENT_ESTABLISHED: {
            const uint8_t *pd = ev->param.private_data;
            if (ev->param.private_data_len != LP_PD_LEN || get32(pd + 4) != q)
                die("QP %u: the server's reply does not match", q);
            if (ev->param.crc != crc)
                die("QP %u established with CRC %s", q, ev->param.crc ? "on" : "off");
            c->rkey = get32(pd);
            c->waddr = get64(pd + 8);
            c->saddr = get64(pd + 16);
            up++;
            break;
        }
        default:
            die("unexpected CM event %s while connecting", iwarp_cm_event_str(ev->event));
        }
        CHECK_RC(iwarp_cm_ack_event(ev));
    }
    uint64_t t1 = now_ns();

    /* Move the data: post what fits; a QP gets room only from its own completions (a send
     * completion frees a slot, a credit message lets more Sends go). */
    for (uint32_t q = 0; q < nqps; q++)
        while (cli_try_post(&qps[q], q))
            ;
    uint32_t done = 0;
    while (done < nqps) {
        struct iwarp_wc wc;
        next_wc(&s, &wc, "the server");
        uint32_t q = wr_q(wc.wr_id);
        if (q >= nqps)
            die("a completion for QP %u", q);
        struct cli_qp *c = &qps[q];
        wc_ok(&s, &wc);
        if (wr_kind(wc.wr_id) == LP_WR_SQ)
            cli_on_sq(c, q, &wc);
        else
            cli_on_rq(c, q, &wc);
        while (cli_try_post(c, q))
            ;
        if (!c->done && c->final_acked && c->completed == c->posted) {
            c->done = true;
            done++;
        }
    }
    uint64_t t2 = now_ns();
    no_async_event(&s);
    no_cm_event(&s);

    for (uint32_t q = 0; q < nqps; q++)
        CHECK_RC(iwarp_cm_disconnect(qps[q].id));
    for (uint32_t q = 0; q < nqps; q++) {
        struct iwarp_cm_event *ev = expect_event(&s, IWARP_CM_EVENT_DISCONNECTED, LP_STALL_MS);
        CHECK_RC(iwarp_cm_ack_event(ev));
    }
    no_async_event(&s);
    uint64_t n_op[3] = {0}, oct[3] = {0}, wrs = 0, sends = 0;
    for (uint32_t q = 0; q < nqps; q++) {
        struct cli_qp *c = &qps[q];
        for (int k = 0; k < 3; k++) {
            n_op[k] += c->n_op[k];
            oct[k] += c->octets_op[k];
        }
        wrs += c->posted;
        sends += c->sends_posted;
        iwarp_cm_destroy_qp(c->id);
        CHECK_RC(iwarp_cm_destroy_id(c->id));
        CHECK_RC(iwarp_dereg_mr(c->mr));
        free(c->buf);
    }
    double secs = (double)(t2 - t1) / 1e9;
    uint64_t total = oct[0] + oct[1] + oct[2];
    printf("client: qps=%u crc=%s payload=%llu connect_s=%.2f data_s=%.2f MB/s=%.1f wrs=%llu "
           "writes=%llu/%llu reads=%llu/%llu sends=%llu/%llu: every WR completed once, in "
           "order, data checked, no Terminate\n",
           nqps, crc ? "on" : "off", (unsigned long long)total, (double)(t1 - t0) / 1e9, secs,
           (double)total / secs / 1e6, (unsigned long long)wrs, (unsigned long long)n_op[0],
           (unsigned long long)oct[0], (unsigned long long)n_op[1], (unsigned long long)oct[1],
           (unsigned long long)sends, (unsigned long long)oct[2]);
    free(qps);
    side_close(&s);
    return 0;
}

static uint64_t parse_u64(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (!*s || *end)
        die("bad %s: %s", what, s);
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 7 || argc > 8 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: loss_peer server|client ADDR PORT QPS BYTES CRC [SEED]\n");
        return 2;
    }
    bool server = strcmp(argv[1], "server") == 0;
    g_role = server ? "loss_peer server" : "loss_peer client";
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1)
        die("bad address %s", argv[2]);
    a.sin_port = htons((uint16_t)parse_u64(argv[3], "port"));
    uint64_t nqps = parse_u64(argv[4], "QPS"), bytes = parse_u64(argv[5], "BYTES");
    uint64_t crc = parse_u64(argv[6], "CRC");
    uint64_t seed = argc > 7 ? parse_u64(argv[7], "SEED") : 1;
    if (nqps < 1 || nqps > LP_MAX_QPS || bytes < nqps || crc > 1)
        die("QPS must be 1..%d, BYTES at least QPS, CRC 0 or 1", LP_MAX_QPS);
    uint64_t per_qp = bytes / nqps;
    return server ? run_server(&a, (uint32_t)nqps, per_qp, crc != 0)
                  : run_client(&a, (uint32_t)nqps, per_qp, crc != 0, seed);
}
