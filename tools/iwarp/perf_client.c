/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: the active side. It connects --qps QPs (each MPA Request carries the hello), then
 * runs phases: PHASE -> READY, the measured traffic, a zero-length Send per QP, RESULT.
 *
 * Bandwidth keeps qd operations in flight per QP, cycling through the slots the data region
 * holds at this size (perf_layout_init: without --verify they share one buffer, as perftest's
 * do); --verify keeps at most one operation per slot in flight, so none is reused early. Write and
 * Send bandwidth are timed from the first post until the server's RESULT arrives (the zero-length
 * Send that asks for it follows every Write, so the RESULT proves placement); Read bandwidth until
 * the last Read completes (placed locally). Send bandwidth is flow-controlled by the server's
 * CREDIT Sends.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

/* Iterations per QP of a phase (0: run for the duration). */
static uint64_t phase_iters(const struct perf_client *c, uint32_t size, bool lat)
{
    const struct perf_opts *o = c->o;
    if (o->duration > 0)
        return 0;
    if (o->iters_auto && !lat) {
        uint64_t cap = ((uint64_t)1 << 30) / size;
        return o->iters < cap ? o->iters : (cap ? cap : 1);
    }
    return o->iters;
}

static int connect_qp(struct perf_client *c, uint32_t q, const struct sockaddr *peer)
{
    struct perf_ep *e = &c->ep;
    struct iwarp_cm_event *ev;
    int rc = perf_ep_resolve_qp(e, q, peer, e->ps);
    if (rc < 0)
        return rc;
    for (uint32_t k = 0; k < e->lay.rq_depth; k++)
        if ((rc = perf_ep_post_recv(e, q, k)) < 0)
            return rc;
    struct perf_hello h = {.p = c->p,
                           .qp_index = q,
                           .addr = (uint64_t)(uintptr_t)e->buf,
                           .rkey = e->mr->rkey,
                           .len = e->lay.total};
    uint8_t pd[PERF_HELLO_LEN];
    perf_hello_encode(pd, &h);
    uint8_t depth = (uint8_t)(c->p.qd < 128 ? c->p.qd : 128);
    struct iwarp_conn_param p = {.private_data = pd,
                                 .private_data_len = sizeof pd,
                                 .responder_resources = depth,
                                 .initiator_depth = depth,
                                 .crc = c->p.crc,
                                 .mpa_rev = c->o->mpa_rev};
    if ((rc = iwarp_cm_connect(e->ids[q], &p)) < 0)
        return perf_ep_fail(e, rc, "iwarp_cm_connect");
    if ((rc = perf_ep_cm_event(e, IWARP_CM_EVENT_ESTABLISHED, &ev, PERF_TIMEOUT_MS)) < 0) {
        /* UDP has no refusal: a port nobody serves over SCTP only ever times out */
        if (rc == IWARP_ERR_TIMEDOUT && e->ps == IWARP_PS_SCTP)
            snprintf(e->err, sizeof e->err,
                     "no SCTP association within %d s: is `iwarp perf --server --transport "
                     "sctp` running on that UDP port?",
                     PERF_TIMEOUT_MS / 1000);
        return rc;
    }
    struct perf_welcome w;
    rc = perf_welcome_decode(&w, ev->param.private_data, ev->param.private_data_len);
    iwarp_cm_ack_event(ev);
    if (rc == 0 &&
        (w.status != 0 || w.rq_depth != e->peer_lay.rq_depth || w.len < e->peer_lay.total))
        rc = IWARP_ERR_PERF_PROTO;
    if (rc < 0)
        return perf_ep_fail(e, rc, "the server's welcome");
    e->peer_addr = w.addr;
    e->peer_rkey = w.rkey;
    e->peer_len = w.len;
    return 0;
}

/*
 * Connect to the server at `peer` with options o: open the endpoint (pinning is the caller's),
 * allocate the buffer for the largest size, connect o->qps QPs. Returns 0 or a negative
 * IWARP_ERR_* (c->ep.err says what failed). Ownership: c keeps o.
 */
int perf_client_connect(struct perf_client *c, const struct perf_opts *o,
                        const struct sockaddr *peer)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    uint32_t max = 0;
    for (uint32_t i = 0; i < o->nsizes; i++)
        max = o->sizes[i] > max ? o->sizes[i] : max;
    c->p = (struct perf_params){.op = o->op,
                                .lat = o->lat,
                                .verify = o->verify,
                                .crc = o->crc,
                                .nqps = o->qps,
                                .qd = o->qd,
                                .max_size = max};
    memcpy(&c->peer, peer,
           peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    int rc = perf_ep_open(&c->ep, o->busy_poll, o->trace, o->sctp, o->sctp_mtu, o->tx_batch);
    if (rc < 0)
        return rc;
    if ((rc = perf_ep_alloc(&c->ep, &c->p, false)) < 0)
        return rc;
    if (o->lat || o->compare_tcp) {
        c->max_samples =
            o->iters && o->iters < PERF_LAT_MAX_SAMPLES ? o->iters : PERF_LAT_MAX_SAMPLES;
        c->samples = malloc(c->max_samples * sizeof *c->samples);
        if (!c->samples)
            return perf_ep_fail(&c->ep, IWARP_ERR_NOMEM, "latency samples");
    }
    for (uint32_t q = 0; q < o->qps; q++)
        if ((rc = connect_qp(c, q, peer)) < 0)
            return rc;
    return 0;
}

/* The next control message of the current phase of type `type` (stale CREDITs are skipped). */
static int expect_ctl(struct perf_client *c, uint8_t type, struct perf_ctl *out)
{
    for (;;) {
        uint32_t q;
        int rc = perf_ep_recv_ctl(&c->ep, out, &q, PERF_TIMEOUT_MS);
        if (rc < 0)
            return rc;
        if (out->type == PERF_CTL_CREDIT)
            continue;
        if (out->type != type || out->seq != c->seq || q != 0)
            return perf_ep_fail(&c->ep, IWARP_ERR_PERF_PROTO, "unexpected control message");
        return 0;
    }
}

/* Start phase `kind` (a new phase number) and wait for the server's READY. */
static int start_phase(struct perf_client *c, uint8_t kind, uint32_t size, uint64_t iters,
                       struct perf_ctl *ready)
{
    struct perf_ctl ph = {
        .type = PERF_CTL_PHASE, .kind = kind, .size = size, .seq = ++c->seq, .a = iters};
    int rc = perf_ep_send_ctl(&c->ep, 0, &ph);
    if (rc < 0)
        return rc;
    if ((rc = expect_ctl(c, PERF_CTL_READY, ready)) < 0)
        return rc;
    if (ready->status)
        return perf_ep_fail(&c->ep, IWARP_ERR_IO, "the server could not set up the phase");
    return 0;
}

/* End the phase: a zero-length Send on every QP, then the server's RESULT. */
static int end_phase(struct perf_client *c, struct perf_ctl *res)
{
    for (uint32_t q = 0; q < c->p.nqps; q++) {
        int rc = perf_ep_post(&c->ep, q, IWARP_WR_SEND, 0, 0, 0, perf_wr_id(PERF_WR_END, q, 0));
        if (rc < 0)
            return rc;
    }
    return expect_ctl(c, PERF_CTL_RESULT, res);
}

static double fraction(uint64_t done, uint64_t total, uint64_t now, uint64_t t0, uint64_t end)
{
    return total ? (double)done / (double)total : (double)(now - t0) / (double)(end - t0);
}

/* Bandwidth state of one phase. */
struct bw_run {
    uint32_t size, used, inflight, rq; /* used: slots cycled through; inflight: per QP */
    uint64_t iters, end, now;
    uint64_t posted[PERF_MAX_QPS], done[PERF_MAX_QPS], credit[PERF_MAX_QPS];
    bool busy[PERF_MAX_QPS]; /* counted in the phase's count of QPs with work left */
    uint64_t bad;
};

static bool wants_more(const struct perf_client *c, const struct bw_run *r, uint32_t q)
{
    if (r->iters)
        return r->posted[q] < r->iters;
    /* --verify: every slot is written at least once, so the server can check them all */
    return r->now < r->end || (c->p.verify && r->posted[q] < r->used);
}

/* The work request opcode of a perf operation. */
static enum iwarp_wr_opcode wr_opcode(enum perf_op op)
{
    switch (op) {
    case PERF_OP_WRITE:
        return IWARP_WR_RDMA_WRITE;
    case PERF_OP_READ:
        return IWARP_WR_RDMA_READ;
    case PERF_OP_ATOMIC:
        return IWARP_WR_ATOMIC_FETCH_AND_ADD;
    case PERF_OP_CMP_SWAP:
        return IWARP_WR_ATOMIC_CMP_AND_SWP;
    case PERF_OP_WRITE_IMM:
        return IWARP_WR_RDMA_WRITE_WITH_IMM;
    default:
        return IWARP_WR_SEND;
    }
}

/* Whether the server's RNIC alone answers the operation (a Read, an atomic): its time ends
 * with its completion here, the server's application does nothing. */
static bool answered_by_rnic(enum perf_op op)
{
    return op == PERF_OP_READ || perf_op_atomic(op);
}

static bool may_post(const struct perf_client *c, const struct bw_run *r, uint32_t q)
{
    if (!wants_more(c, r, q) || r->posted[q] - r->done[q] >= r->inflight)
        return false;
    /* A Send needs a posted receive (RFC 5040 §5.3): stay within the server's credit, one
     * receive kept for the zero-length Send that ends the phase. */
    return !perf_op_consumes_recv(c->p.op) || r->posted[q] < r->credit[q] + r->rq - 1;
}

static int post_bw(struct perf_client *c, struct bw_run *r, uint32_t q)
{
    struct perf_ep *e = &c->ep;
    uint32_t k = (uint32_t)(r->posted[q] % r->used);
    size_t loff = perf_slot_off(&e->lay, q, k, r->size);
    size_t roff = perf_slot_off(&e->peer_lay, q, k, r->size);
    enum iwarp_wr_opcode op = wr_opcode(c->p.op);
    if (c->p.verify && c->p.op == PERF_OP_SEND)
        perf_pattern_fill(e->buf + loff, r->size, perf_seed(c->seq, q, r->posted[q]));
    if (c->p.verify && c->p.op == PERF_OP_READ) /* poison: any octet not placed is caught */
        perf_pattern_poison(e->buf + loff, r->size, perf_seed(c->seq, q, k));
    int rc = perf_ep_post(e, q, op, loff, r->size, roff, perf_wr_id(PERF_WR_DATA, q, k));
    if (rc == 0)
        r->posted[q]++;
    return rc;
}

/* Post on QP q while its window and credit allow. */
static int fill_qp(struct perf_client *c, struct bw_run *r, uint32_t q)
{
    while (may_post(c, r, q)) {
        int rc = post_bw(c, r, q);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* QP q has work left: operations to post or to see complete. */
static bool qp_busy(const struct perf_client *c, const struct bw_run *r, uint32_t q)
{
    return wants_more(c, r, q) || r->done[q] < r->posted[q];
}

static int on_bw_wc(struct perf_client *c, struct bw_run *r, const struct iwarp_wc *wc,
                    struct perf_meter *m)
{
    struct perf_ep *e = &c->ep;
    uint32_t q = perf_wr_qp(wc->wr_id), k = perf_wr_slot(wc->wr_id);
    if (q >= c->p.nqps)
        return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "completion of an unknown QP");
    if (wc->opcode == IWARP_WC_RECV) {
        struct perf_ctl cr;
        int rc = perf_ctl_decode(&cr, e->buf + perf_recv_off(&e->lay, q, k), wc->byte_len);
        if (rc < 0 || cr.type != PERF_CTL_CREDIT)
            return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "unexpected Send during a phase");
        if (cr.seq == c->seq && cr.a > r->credit[q])
            r->credit[q] = cr.a;
        return perf_ep_post_recv(e, q, k);
    }
    if (perf_wr_kind(wc->wr_id) != PERF_WR_DATA)
        return 0;
    r->done[q]++;
    perf_meter_add(m, r->size, r->now);
    if (c->p.verify && c->p.op == PERF_OP_READ)
        r->bad += perf_pattern_check(e->buf + perf_slot_off(&e->lay, q, k, r->size), r->size,
                                     perf_seed(c->seq, q, k));
    return 0;
}

/*
 * One bandwidth pass of messages of `size` octets: fills *out; *bad: octets that differed
 * (--verify; the server's count for Writes and Sends, ours for Reads). Returns 0 or IWARP_ERR_*.
 */
int perf_client_bw(struct perf_client *c, uint32_t size, struct perf_bw *out, uint64_t *bad)
{
    struct perf_ep *e = &c->ep;
    struct bw_run r = {.size = size, .iters = phase_iters(c, size, false)};
    r.used = perf_layout_slots(&e->lay, c->p.qd, size);
    if (r.iters && r.iters < r.used)
        r.used = (uint32_t)r.iters;
    r.inflight = c->p.verify ? r.used : c->p.qd;
    r.rq = e->peer_lay.rq_depth;
    if (c->p.verify && c->p.op == PERF_OP_WRITE)
        for (uint32_t q = 0; q < c->p.nqps; q++)
            for (uint32_t k = 0; k < r.used; k++)
                perf_pattern_fill(e->buf + perf_slot_off(&e->lay, q, k, size), size,
                                  perf_seed(c->seq + 1, q, k));
    struct perf_ctl ready, res;
    int rc = start_phase(c, PERF_PH_BW, size, r.iters, &ready);
    if (rc < 0)
        return rc;
    struct perf_meter m;
    uint64_t t0 = perf_now_ns(), total = r.iters * c->p.nqps;
    r.now = t0;
    r.end = t0 + (uint64_t)(c->o->duration * 1e9);
    perf_meter_start(&m, t0);
    /* Fill every QP, then look again only at the QP a completion belongs to (its window
     * opened, or a CREDIT arrived): a pass over all QPs per completion would cost the client
     * more than the transfer at hundreds of QPs. A QP in duration mode that stops posting once
     * the time is up is looked at again by its remaining completions. */
    uint32_t busy = 0;
    uint64_t n = 0;
    for (uint32_t q = 0; q < c->p.nqps; q++) {
        if ((rc = fill_qp(c, &r, q)) < 0)
            return rc;
        r.busy[q] = qp_busy(c, &r, q);
        busy += r.busy[q];
    }
    while (busy) {
        struct iwarp_wc wc;
        if ((rc = perf_ep_wait_wc(e, &wc, PERF_TIMEOUT_MS)) < 0)
            return rc;
        r.now = perf_now_ns();
        uint32_t q = perf_wr_qp(wc.wr_id);
        uint64_t before = q < c->p.nqps ? r.done[q] : 0;
        if ((rc = on_bw_wc(c, &r, &wc, &m)) < 0) /* fails for a QP out of range */
            return rc;
        n += r.done[q] - before;
        if ((rc = fill_qp(c, &r, q)) < 0)
            return rc;
        if (r.busy[q] && !qp_busy(c, &r, q)) {
            r.busy[q] = false;
            busy--;
        }
        perf_progress_tick(&c->progress, fraction(n, total, r.now, t0, r.end), r.now);
    }
    uint64_t t_data = perf_now_ns();
    if ((rc = end_phase(c, &res)) < 0)
        return rc;
    uint64_t t1 = answered_by_rnic(c->p.op) ? t_data : perf_now_ns();
    if (perf_op_consumes_recv(c->p.op) && res.a != n)
        return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "the server counted other Sends");
    double dt = (double)(t1 - t0) / 1e9;
    out->avg = (double)n * size / dt;
    out->peak = m.peak > out->avg ? m.peak : out->avg;
    out->mpps = (double)n / dt / 1e6;
    out->iters = n / c->p.nqps;
    out->octets = n * size;
    *bad = r.bad + res.c;
    return 0;
}

/* Consume completions without waiting (event mode: they would pile up in the CQ). */
static int drain(struct perf_ep *e)
{
    struct iwarp_wc wc;
    int rc;
    while ((rc = perf_ep_try_wc(e, &wc)) == 1)
        if (wc.opcode == IWARP_WC_RECV)
            return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "unexpected Send");
    return rc;
}

/* One write round trip k: Write slot 0 (ending with stamp k) into the server's slot 0, then
 * poll our slot 1 until the server's echo ends with the same stamp. */
static int rt_write(struct perf_client *c, uint32_t size, uint64_t k, uint64_t *bad)
{
    struct perf_ep *e = &c->ep;
    size_t src = perf_slot_off(&e->lay, 0, 0, size), dst = perf_slot_off(&e->lay, 0, 1, size);
    uint64_t seed = perf_seed(c->seq, 0, k);
    if (c->p.verify)
        perf_pattern_fill(e->buf + src, size - 1, seed);
    e->buf[src + size - 1] = perf_stamp(k);
    int rc = perf_ep_post(e, 0, IWARP_WR_RDMA_WRITE, src, size,
                          perf_slot_off(&e->peer_lay, 0, 0, size), perf_wr_id(PERF_WR_DATA, 0, 0));
    /* The completions are taken now, while the answer travels, as perftest polls its send CQ
     * after posting: taken after the echo is seen, each would be a read of the socket (a
     * system call) between the echo and the next Write. */
    if (rc < 0 || (rc = drain(e)) < 0)
        return rc;
    const uint8_t *last = e->buf + dst + size - 1;
    /* acquire: the octets placed before the last one are seen too */
    for (unsigned spin = 0; __atomic_load_n(last, __ATOMIC_ACQUIRE) != perf_stamp(k); spin++) {
        if (!e->busy && (spin & 255) != 255)
            continue;
        if ((rc = drain(e)) < 0)
            return rc;
        perf_ep_await_write(e);
    }
    if (c->p.verify)
        *bad += perf_pattern_check(e->buf + dst, size - 1, seed);
    return 0;
}

/* One Send round trip k: Send slot 0, wait for the server's Send back. With write-imm: an RDMA
 * Write with Immediate into the server's slot 0, answered by one into our slot 1 (its
 * completion here is the receive an Immediate Data message consumes, RFC 7306 §6). */
static int rt_send(struct perf_client *c, uint32_t size, uint64_t k, uint64_t *bad)
{
    struct perf_ep *e = &c->ep;
    bool imm = c->p.op == PERF_OP_WRITE_IMM;
    size_t src = perf_slot_off(&e->lay, 0, 0, size);
    uint64_t seed = perf_seed(c->seq, 0, k);
    if (c->p.verify)
        perf_pattern_fill(e->buf + src, size, seed);
    int rc = perf_ep_post(e, 0, wr_opcode(c->p.op), src, size,
                          perf_slot_off(&e->peer_lay, 0, 0, size), perf_wr_id(PERF_WR_DATA, 0, 0));
    if (rc < 0)
        return rc;
    for (;;) {
        struct iwarp_wc wc;
        if ((rc = perf_ep_wait_wc(e, &wc, PERF_TIMEOUT_MS)) < 0)
            return rc;
        if (wc.opcode != (imm ? IWARP_WC_RECV_RDMA_WITH_IMM : IWARP_WC_RECV))
            continue;
        uint32_t slot = perf_wr_slot(wc.wr_id);
        if (imm)
            return perf_ep_post_recv(e, 0, slot);
        if (wc.byte_len != size)
            return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "answer of another size");
        if (c->p.verify)
            *bad += perf_pattern_check(e->buf + perf_recv_off(&e->lay, 0, slot), size, seed);
        return perf_ep_post_recv(e, 0, slot);
    }
}

/* One Read k of the server's slot 0 into our slot 0 (poisoned first under --verify); or one
 * atomic on the server's slot 0, its original value into our slot 0. */
static int rt_read(struct perf_client *c, uint32_t size, uint64_t *bad)
{
    struct perf_ep *e = &c->ep;
    size_t dst = perf_slot_off(&e->lay, 0, 0, size);
    if (c->p.verify)
        perf_pattern_poison(e->buf + dst, size, perf_seed(c->seq, 0, 0));
    int rc = perf_ep_post(e, 0, wr_opcode(c->p.op), dst, size,
                          perf_slot_off(&e->peer_lay, 0, 0, size), perf_wr_id(PERF_WR_DATA, 0, 0));
    if (rc < 0)
        return rc;
    struct iwarp_wc wc;
    do {
        if ((rc = perf_ep_wait_wc(e, &wc, PERF_TIMEOUT_MS)) < 0)
            return rc;
        if (wc.opcode == IWARP_WC_RECV)
            return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "unexpected Send");
    } while (perf_wr_kind(wc.wr_id) != PERF_WR_DATA);
    if (c->p.verify)
        *bad += perf_pattern_check(e->buf + dst, size, perf_seed(c->seq, 0, 0));
    return 0;
}

/*
 * One latency pass of messages of `size` octets: perf_warmup() unmeasured round trips, then
 * the measured ones. Write and Send samples are RTT/2, Read samples the whole Read (perftest's
 * conventions). Fills *out; *bad: octets that differed. Returns 0 or IWARP_ERR_*.
 */
int perf_client_lat(struct perf_client *c, uint32_t size, struct perf_lat *out, uint64_t *bad)
{
    struct perf_ep *e = &c->ep;
    uint64_t iters = phase_iters(c, size, true), warm = perf_warmup(iters);
    *bad = 0;
    e->buf[perf_slot_off(&e->lay, 0, 1, size) + size - 1] = 0;
    struct perf_ctl ready, res;
    int rc = start_phase(c, PERF_PH_LAT, size, iters, &ready);
    if (rc < 0)
        return rc;
    uint64_t n = 0, t0 = 0, end = 0, now = 0;
    for (uint64_t k = 0;; k++) {
        if (k == warm) {
            t0 = now = perf_now_ns();
            end = t0 + (uint64_t)(c->o->duration * 1e9);
        }
        if (k >= warm && (iters ? n >= iters : now >= end || n == c->max_samples))
            break;
        uint64_t a = perf_now_ns();
        rc = c->p.op == PERF_OP_WRITE         ? rt_write(c, size, k, bad)
             : perf_op_consumes_recv(c->p.op) ? rt_send(c, size, k, bad)
                                              : rt_read(c, size, bad);
        if (rc < 0)
            return rc;
        now = perf_now_ns();
        if (k >= warm) {
            c->samples[n++] = (double)(now - a) / (answered_by_rnic(c->p.op) ? 1 : 2);
            perf_progress_tick(&c->progress, fraction(n, iters, now, t0, end), now);
        }
    }
    if ((rc = end_phase(c, &res)) < 0)
        return rc;
    *bad += res.c;
    perf_lat_summarize(out, c->samples, n);
    return 0;
}

/*
 * The plain-TCP baseline of one size (bandwidth, or latency when lat): the server opens a TCP
 * port beside the iWARP connection; same iterations (or duration), same polling mode, the
 * same threads (so the same pinning). Returns 0 or a negative IWARP_ERR_*.
 */
int perf_client_tcp(struct perf_client *c, bool lat, uint32_t size, struct perf_bw *bw,
                    struct perf_lat *lt)
{
    struct perf_ep *e = &c->ep;
    uint64_t iters = phase_iters(c, size, lat);
    struct perf_ctl ready, res;
    int rc = start_phase(c, lat ? PERF_PH_TCP_LAT : PERF_PH_TCP_BW, size, iters, &ready);
    if (rc < 0)
        return rc;
    uint32_t n = lat ? 1 : c->p.nqps; /* bandwidth: a stream per QP */
    int fds[PERF_MAX_QPS];
    for (uint32_t q = 0; q < n; q++) {
        if ((rc = perf_tcp_connect(&c->peer, (uint16_t)ready.a, lat, &fds[q])) < 0) {
            while (q--)
                close(fds[q]);
            return perf_ep_fail(e, rc, "TCP baseline connect");
        }
    }
    bool busy = c->o->busy_poll;
    uint8_t *buf = e->buf; /* the data region holds at least the largest size per QP */
    if (lat)
        rc = perf_tcp_lat(fds[0], size, iters, c->o->duration, busy, buf, c->samples,
                          c->max_samples, lt, &c->progress);
    else
        rc = perf_tcp_bw(fds, n, size, iters, c->o->duration, busy, buf, &e->lay, bw, &c->progress);
    if (rc < 0)
        return perf_ep_fail(e, rc, "TCP baseline");
    if ((rc = expect_ctl(c, PERF_CTL_RESULT, &res)) < 0)
        return rc;
    if (res.status || (!lat && res.b != bw->octets))
        return perf_ep_fail(e, IWARP_ERR_IO, "the server's side of the TCP baseline");
    return 0;
}

/* Disconnect QPs [from, to) gracefully and take their DISCONNECTED (or give up after 5 s). */
static void disconnect_qps(struct perf_ep *e, uint32_t from, uint32_t to)
{
    uint32_t left = 0;
    for (uint32_t q = from; q < to; q++)
        left += e->ids[q] && iwarp_cm_disconnect(e->ids[q]) == 0;
    while (left) {
        struct iwarp_cm_event *ev;
        if (iwarp_cm_get_event_timeout(e->cmch, &ev, 5000) < 0)
            break;
        if (ev->event == IWARP_CM_EVENT_DISCONNECTED)
            left--;
        iwarp_cm_ack_event(ev);
    }
}

/* Say goodbye (PHASE quit), disconnect every QP gracefully and release everything. */
void perf_client_close(struct perf_client *c)
{
    struct perf_ep *e = &c->ep;
    if (e->ids[0] && e->ids[0]->qp) {
        struct perf_ctl quit = {.type = PERF_CTL_PHASE, .kind = PERF_PH_QUIT, .seq = ++c->seq};
        struct iwarp_wc wc;
        int rc = perf_ep_send_ctl(e, 0, &quit);
        while (rc == 0 && (rc = perf_ep_wait_wc(e, &wc, 5000)) == 1 &&
               perf_wr_kind(wc.wr_id) != PERF_WR_CTL)
            ;
        /* QP 0 first, and alone: its DISCONNECTED means the server read the stream to its end,
         * so QUIT is in the server's CQ ahead of the flushed receives of the other QPs (closed
         * together, another QP's end could overtake QUIT and look like an error there). */
        disconnect_qps(e, 0, 1);
        disconnect_qps(e, 1, c->p.nqps);
    }
    perf_ep_close(e);
    free(c->samples);
    c->samples = NULL;
}
