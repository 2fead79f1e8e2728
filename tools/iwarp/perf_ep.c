/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: one libiwarp endpoint (context, memory, QPs) and the two ways of waiting for
 * completions it measures: busy-polling a caller-progress context, or sleeping on a completion
 * channel while the context's progress thread moves data.
 */
#define _POSIX_C_SOURCE 200809L
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* The traced context's log: the trace's own lines (capture bound reached, write failures). */
static void trace_log(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    fprintf(stderr, "iwarp perf: %s\n", msg);
}

/*
 * Create e's context (caller progress when busy, a progress thread otherwise), CM channel,
 * completion channel (event mode) and PD. trace: a capture file for the context's connections
 * or NULL (then the context logs nothing; with a trace, warnings go to stderr). sctp: its CM
 * ids run DDP over SCTP (IWARP_PS_SCTP) with network MTU sctp_mtu (0: the library's default),
 * else MPA over TCP. The caller pins the thread first: the progress thread inherits its CPU set.
 * Returns 0 or a negative IWARP_ERR_* (e->err says what failed).
 */
int perf_ep_open(struct perf_ep *e, bool busy, const char *trace, bool sctp, uint32_t sctp_mtu,
                 struct perf_tx_batch tx_batch)
{
    memset(e, 0, sizeof *e);
    e->busy = busy;
    e->ps = sctp ? IWARP_PS_SCTP : IWARP_PS_TCP;
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = busy ? IWARP_PROGRESS_CALLER : IWARP_PROGRESS_THREAD;
    a.trace_pcap = trace;
    a.sctp_mtu = sctp_mtu;
    if (tx_batch.set) {
        a.comp_mask |= IWARP_CTX_ATTR_TX_BATCH;
        a.tx_batch_us = tx_batch.us;
    }
    if (trace)
        a.log = trace_log; /* log_level: IWARP_LOG_WARN */
    int rc = iwarp_ctx_create(&a, &e->ctx);
    if (rc < 0)
        return perf_ep_fail(e, rc, "iwarp_ctx_create");
    if ((rc = iwarp_cm_create_channel(e->ctx, &e->cmch)) < 0)
        return perf_ep_fail(e, rc, "iwarp_cm_create_channel");
    if (!busy) {
        if ((rc = iwarp_create_comp_channel(e->ctx, &e->cch)) < 0)
            return perf_ep_fail(e, rc, "iwarp_create_comp_channel");
    }
    if ((rc = iwarp_alloc_pd(e->ctx, &e->pd)) < 0)
        return perf_ep_fail(e, rc, "iwarp_alloc_pd");
    return 0;
}

/*
 * Allocate and register this side's buffer for parameters p (layout from perf_layout_init) and
 * create the CQ shared by every QP's send and receive queue. Also computes the peer's layout.
 * Returns 0 or a negative IWARP_ERR_*.
 */
int perf_ep_alloc(struct perf_ep *e, const struct perf_params *p, bool server)
{
    perf_layout_init(&e->lay, p, server);
    perf_layout_init(&e->peer_lay, p, !server);
    e->nqps = p->nqps;
    e->sq_depth = p->qd + 16;
    e->rdmap_ext = perf_op_atomic(p->op) || p->op == PERF_OP_WRITE_IMM;
    size_t len = (e->lay.total + 4095) & ~(size_t)4095;
    e->buf = aligned_alloc(4096, len);
    if (!e->buf)
        return perf_ep_fail(e, IWARP_ERR_NOMEM, "buffer");
    memset(e->buf, 0, len);
    int rc =
        iwarp_reg_mr(e->pd, e->buf, len,
                     IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                         IWARP_ACCESS_REMOTE_READ | (e->rdmap_ext ? IWARP_ACCESS_REMOTE_ATOMIC : 0),
                     &e->mr);
    if (rc < 0)
        return perf_ep_fail(e, rc, "iwarp_reg_mr");
    int cqe = (int)(e->nqps * (e->sq_depth + e->lay.rq_depth) + 16);
    if ((rc = iwarp_create_cq(e->ctx, cqe, NULL, e->cch, 0, &e->cq)) < 0)
        return perf_ep_fail(e, rc, "iwarp_create_cq");
    return 0;
}

/* Create the QP of CM id `id` on e's PD and CQ. Returns 0 or a negative IWARP_ERR_*. */
int perf_ep_create_qp(struct perf_ep *e, struct iwarp_cm_id *id)
{
    struct iwarp_qp_init_attr qa = {.send_cq = e->cq,
                                    .recv_cq = e->cq,
                                    .cap = {.max_send_wr = e->sq_depth,
                                            .max_recv_wr = e->lay.rq_depth,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1,
                                            .max_inline_data = 64},
                                    .qp_type = IWARP_QPT_RC};
    if (e->rdmap_ext) {
        qa.comp_mask = IWARP_QP_INIT_ATTR_RDMAP_EXT;
        qa.rdmap_ext = IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS;
    }
    int rc = iwarp_cm_create_qp(id, e->pd, &qa);
    return rc < 0 ? perf_ep_fail(e, rc, "iwarp_cm_create_qp") : 0;
}

/* Post receive buffer `slot` of QP q (its wr_id names both). Returns 0 or IWARP_ERR_*. */
int perf_ep_post_recv(struct perf_ep *e, uint32_t q, uint32_t slot)
{
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(e->buf + perf_recv_off(&e->lay, q, slot)),
                          e->lay.recv_len, e->mr->lkey};
    struct iwarp_recv_wr w = {
        .wr_id = perf_wr_id(PERF_WR_RECV, q, slot), .sg_list = &s, .num_sge = 1};
    int rc = iwarp_post_recv(e->ids[q]->qp, &w, NULL);
    return rc < 0 ? perf_ep_fail(e, rc, "iwarp_post_recv") : 0;
}

/*
 * Post one signaled work request on QP q: op (Write, Read or Send) of len octets from (Read:
 * into) this side's buffer at loff; Writes and Reads address the peer's buffer at roff.
 * Messages of at most 64 octets other than Reads go inline. len 0 posts a zero-length Send.
 * Returns 0 or a negative IWARP_ERR_*.
 */
int perf_ep_post(struct perf_ep *e, uint32_t q, enum iwarp_wr_opcode op, size_t loff, uint32_t len,
                 size_t roff, uint64_t wr_id)
{
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(e->buf + loff), len, e->mr->lkey};
    struct iwarp_send_wr w = {.wr_id = wr_id,
                              .sg_list = len ? &s : NULL,
                              .num_sge = len ? 1 : 0,
                              .opcode = op,
                              .send_flags = IWARP_SEND_SIGNALED};
    bool atomic = op == IWARP_WR_ATOMIC_FETCH_AND_ADD || op == IWARP_WR_ATOMIC_CMP_AND_SWP;
    if (op != IWARP_WR_RDMA_READ && !atomic && len && len <= 64)
        w.send_flags |= IWARP_SEND_INLINE;
    if (atomic) {
        /* FetchAdd adds 1; CmpSwap compares with 0 and swaps in 1 (either outcome costs the
         * same) */
        w.wr.atomic.remote_addr = e->peer_addr + roff;
        w.wr.atomic.rkey = e->peer_rkey;
        w.wr.atomic.compare_add = op == IWARP_WR_ATOMIC_FETCH_AND_ADD ? 1 : 0;
        w.wr.atomic.swap = 1;
    } else if (op != IWARP_WR_SEND) {
        w.wr.rdma.remote_addr = e->peer_addr + roff;
        w.wr.rdma.rkey = e->peer_rkey;
    }
    int rc = iwarp_post_send(e->ids[q]->qp, &w, NULL);
    return rc < 0 ? perf_ep_fail(e, rc, "iwarp_post_send") : 0;
}

/* Send control message c on QP q (inline; its completion is tagged PERF_WR_CTL). */
int perf_ep_send_ctl(struct perf_ep *e, uint32_t q, const struct perf_ctl *c)
{
    uint8_t m[PERF_CTL_LEN];
    perf_ctl_encode(m, c);
    struct iwarp_sge s = {(uint64_t)(uintptr_t)m, PERF_CTL_LEN, e->mr->lkey};
    struct iwarp_send_wr w = {.wr_id = perf_wr_id(PERF_WR_CTL, q, 0),
                              .sg_list = &s,
                              .num_sge = 1,
                              .opcode = IWARP_WR_SEND,
                              .send_flags = IWARP_SEND_SIGNALED | IWARP_SEND_INLINE};
    int rc = iwarp_post_send(e->ids[q]->qp, &w, NULL);
    return rc < 0 ? perf_ep_fail(e, rc, "post control message") : 0;
}

/*
 * Between two looks at the memory an RDMA Write lands in, when no completion says it came (a
 * write latency sink): in event mode, wait in the library up to 1 ms for the connection, which
 * places the data in this thread as it comes (its progress thread stands aside meanwhile:
 * iwarp_ctx_progress), instead of yielding the CPU and leaving the placement to a second thread
 * that the data must wake first. A busy poll's looks run the engine themselves.
 */
void perf_ep_await_write(struct perf_ep *e)
{
    if (!e->busy)
        (void)iwarp_ctx_progress(e->ctx, 1);
}

/*
 * Take one completion without waiting (caller progress: runs the engine once). Returns 1 with
 * *wc filled, 0 when there is none, or a negative IWARP_ERR_*; a completion in error is
 * IWARP_ERR_IO with its status and Terminate cause in e->err.
 */
int perf_ep_try_wc(struct perf_ep *e, struct iwarp_wc *wc)
{
    if (e->wc_i == e->wc_n) {
        int n = iwarp_poll_cq(e->cq, (int)(sizeof e->wc / sizeof e->wc[0]), e->wc);
        if (n < 0)
            return perf_ep_fail(e, n, "iwarp_poll_cq");
        e->wc_n = n;
        e->wc_i = 0;
        if (n == 0)
            return 0;
    }
    *wc = e->wc[e->wc_i++];
    if (wc->status != IWARP_WC_SUCCESS) {
        if (!e->err[0])
            snprintf(e->err, sizeof e->err, "completion error: %s (Terminate cause 0x%06x)",
                     iwarp_wc_status_str(wc->status), (unsigned)wc->vendor_err);
        return IWARP_ERR_IO;
    }
    return 1;
}

/* Whether a wait of timeout_ms (< 0: no limit) is over at now; *deadline 0: the wait's first
 * reading of the clock, from which it counts. */
static bool wait_expired(uint64_t *deadline, int timeout_ms, uint64_t now)
{
    if (*deadline == 0)
        *deadline = timeout_ms < 0 ? UINT64_MAX : now + (uint64_t)timeout_ms * 1000000u;
    return now >= *deadline;
}

/*
 * Wait up to timeout_ms (< 0: no limit; a dead peer still ends the wait with flushed work
 * requests) for one completion: spinning (busy), or arming the CQ and sleeping on the
 * completion channel. Returns 1 with *wc, IWARP_ERR_TIMEDOUT, or a negative IWARP_ERR_*.
 */
int perf_ep_wait_wc(struct perf_ep *e, struct iwarp_wc *wc, int timeout_ms)
{
    /* The clock is read only once a completion is not there at once: a busy wait that ends
     * within 1,024 polls (a latency round trip) reads it not at all, as the plain-TCP
     * baseline's loop does not (a reading costs about 30 ns). The deadline (0: not yet set)
     * counts from the first reading. */
    uint64_t deadline = 0;
    for (unsigned spins = 0;; spins++) {
        int rc = perf_ep_try_wc(e, wc);
        if (rc != 0)
            return rc;
        if (e->busy) {
            if ((spins & 1023) == 1023 && wait_expired(&deadline, timeout_ms, perf_now_ns()))
                return perf_ep_fail(e, IWARP_ERR_TIMEDOUT, "waiting for the peer");
            continue;
        }
        if (!e->armed) {
            /* Arm, then poll once more: a completion that came in between raises no event. */
            if ((rc = iwarp_req_notify_cq(e->cq, 0)) < 0)
                return perf_ep_fail(e, rc, "iwarp_req_notify_cq");
            e->armed = true;
            continue;
        }
        uint64_t now = perf_now_ns();
        if (wait_expired(&deadline, timeout_ms, now))
            return perf_ep_fail(e, IWARP_ERR_TIMEDOUT, "waiting for the peer");
        /* the library's wait: this thread makes the progress itself while it waits */
        uint64_t left = (deadline - now) / 1000000u + 1;
        struct iwarp_cq *cq;
        void *cq_ctx;
        if (iwarp_get_cq_event_timeout(e->cch, &cq, &cq_ctx, left > 1000 ? 1000 : (int)left) == 0) {
            iwarp_ack_cq_events(cq, 1);
            e->armed = false;
        }
    }
}

/*
 * Wait for the next control message, skipping send completions. The receive buffer is reposted
 * before returning. *q receives the QP it came on. Returns 0, or IWARP_ERR_PERF_PROTO for
 * anything else received (a data or zero-length Send), or another negative IWARP_ERR_*.
 */
int perf_ep_recv_ctl(struct perf_ep *e, struct perf_ctl *c, uint32_t *q, int timeout_ms)
{
    for (;;) {
        struct iwarp_wc wc;
        int rc = perf_ep_wait_wc(e, &wc, timeout_ms);
        if (rc < 0)
            return rc;
        if (wc.opcode != IWARP_WC_RECV)
            continue;
        uint32_t qp = perf_wr_qp(wc.wr_id), slot = perf_wr_slot(wc.wr_id);
        rc = perf_ctl_decode(c, e->buf + perf_recv_off(&e->lay, qp, slot), wc.byte_len);
        if (rc < 0)
            return perf_ep_fail(e, rc, "control message");
        if ((rc = perf_ep_post_recv(e, qp, slot)) < 0)
            return rc;
        *q = qp;
        return 0;
    }
}

/*
 * The active side's steps before iwarp_cm_connect: create CM id e->ids[q] on e's channel in
 * port space ps, resolve its address (peer) and route, each awaited as its CM event, and
 * create its QP (perf_ep_create_qp). Returns 0, or a negative IWARP_ERR_* with e->err set; the
 * id stays in e->ids[q] for perf_ep_close either way.
 */
int perf_ep_resolve_qp(struct perf_ep *e, uint32_t q, const struct sockaddr *peer,
                       enum iwarp_port_space ps)
{
    struct iwarp_cm_event *ev;
    int rc = iwarp_cm_create_id(e->cmch, &e->ids[q], NULL, ps);
    if (rc < 0)
        return perf_ep_fail(e, rc, "iwarp_cm_create_id");
    if ((rc = iwarp_cm_resolve_addr(e->ids[q], NULL, peer, 2000)) < 0)
        return perf_ep_fail(e, rc, "iwarp_cm_resolve_addr");
    if ((rc = perf_ep_cm_event(e, IWARP_CM_EVENT_ADDR_RESOLVED, &ev, PERF_TIMEOUT_MS)) < 0)
        return rc;
    iwarp_cm_ack_event(ev);
    if ((rc = iwarp_cm_resolve_route(e->ids[q], 2000)) < 0)
        return perf_ep_fail(e, rc, "iwarp_cm_resolve_route");
    if ((rc = perf_ep_cm_event(e, IWARP_CM_EVENT_ROUTE_RESOLVED, &ev, PERF_TIMEOUT_MS)) < 0)
        return rc;
    iwarp_cm_ack_event(ev);
    return perf_ep_create_qp(e, e->ids[q]);
}

/*
 * Wait up to timeout_ms for the next CM event on e's channel and require type want. Returns 0
 * with *ev (the caller acks it), or a negative IWARP_ERR_* (the unexpected event is acked).
 */
int perf_ep_cm_event(struct perf_ep *e, enum iwarp_cm_event_type want, struct iwarp_cm_event **ev,
                     int timeout_ms)
{
    int rc = iwarp_cm_get_event_timeout(e->cmch, ev, timeout_ms);
    if (rc < 0)
        return perf_ep_fail(e, rc, iwarp_cm_event_str(want));
    if ((*ev)->event == want)
        return 0;
    snprintf(e->err, sizeof e->err, "%s (%s) where %s was expected",
             iwarp_cm_event_str((*ev)->event),
             (*ev)->status ? iwarp_strerror((*ev)->status) : "no status", iwarp_cm_event_str(want));
    rc = (*ev)->status < 0 ? (*ev)->status : IWARP_ERR_STATE;
    iwarp_cm_ack_event(*ev);
    return rc;
}

/*
 * Resolve host (an address or a host name; v6: IPv6 only, else either family) and port into
 * out, the first address getaddrinfo gives. Returns 0, or -1 when it gives none (no message).
 */
int perf_resolve(const char *host, uint16_t port, bool v6, struct sockaddr_storage *out)
{
    struct addrinfo hints = {.ai_family = v6 ? AF_INET6 : AF_UNSPEC, .ai_socktype = SOCK_STREAM},
                    *res;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    if (getaddrinfo(host, ps, &hints, &res) != 0 || !res)
        return -1;
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

/* Record "what: error" in e->err unless an earlier failure is there already; returns rc. */
int perf_ep_fail(struct perf_ep *e, int rc, const char *what)
{
    if (!e->err[0])
        snprintf(e->err, sizeof e->err, "%s: %s", what, iwarp_strerror(rc));
    return rc;
}

/* Destroy everything e holds, in reverse order of creation (connected QPs close abortively). */
void perf_ep_close(struct perf_ep *e)
{
    for (uint32_t q = 0; q < PERF_MAX_QPS; q++) {
        if (!e->ids[q])
            continue;
        if (e->ids[q]->qp)
            iwarp_cm_destroy_qp(e->ids[q]);
        iwarp_cm_destroy_id(e->ids[q]);
        e->ids[q] = NULL;
    }
    if (e->listen)
        iwarp_cm_destroy_id(e->listen);
    /* every QP is gone: the context's counters are final (--stats) */
    e->have_stats = e->ctx && iwarp_query_ctx_stats(e->ctx, &e->stats) == 0;
    if (e->mr)
        iwarp_dereg_mr(e->mr);
    free(e->buf);
    if (e->cq)
        iwarp_destroy_cq(e->cq);
    if (e->cch)
        iwarp_destroy_comp_channel(e->cch);
    if (e->pd)
        iwarp_dealloc_pd(e->pd);
    if (e->cmch)
        iwarp_cm_destroy_channel(e->cmch);
    if (e->ctx)
        iwarp_ctx_destroy(e->ctx);
    e->listen = NULL;
    e->mr = NULL;
    e->buf = NULL;
    e->cq = NULL;
    e->cch = NULL;
    e->pd = NULL;
    e->cmch = NULL;
    e->ctx = NULL;
}
