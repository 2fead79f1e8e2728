/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: the passive side. It listens, accepts the client's QPs (the hello in each MPA
 * Request says how many and what test), then serves the phases the client asks for on QP 0
 * until PHASE(quit). The same code runs in a thread for loopback and as `iwarp perf --server`.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

/*
 * Open s's endpoint (s->busy, s->trace) and listen on addr. s->port receives the bound port.
 * Returns 0 or a negative IWARP_ERR_* (s->ep.err says what failed).
 */
int perf_server_listen(struct perf_server *s, const struct sockaddr *addr)
{
    int rc = perf_ep_open(&s->ep, s->busy, s->trace, s->sctp, s->sctp_mtu, s->tx_batch);
    if (rc < 0)
        return rc;
    if ((rc = iwarp_cm_create_id(s->ep.cmch, &s->ep.listen, NULL, s->ep.ps)) < 0)
        return perf_ep_fail(&s->ep, rc, "iwarp_cm_create_id");
    if ((rc = iwarp_cm_bind_addr(s->ep.listen, addr)) < 0)
        return perf_ep_fail(&s->ep, rc, "bind");
    if ((rc = iwarp_cm_listen(s->ep.listen, PERF_MAX_QPS)) < 0)
        return perf_ep_fail(&s->ep, rc, "listen");
    const struct sockaddr_storage *b = &s->ep.listen->local_addr;
    s->port = ntohs(b->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)b)->sin6_port
                                             : ((const struct sockaddr_in *)b)->sin_port);
    return 0;
}

static bool same_params(const struct perf_params *a, const struct perf_params *b)
{
    return a->op == b->op && a->lat == b->lat && a->verify == b->verify && a->crc == b->crc &&
           a->nqps == b->nqps && a->qd == b->qd && a->max_size == b->max_size;
}

/* One CONNECT_REQUEST: check the hello, set up on the first, create the QP, post every
 * receive and accept with the welcome. */
static int accept_one(struct perf_server *s, struct iwarp_cm_event *ev, uint32_t *accepted)
{
    struct perf_ep *e = &s->ep;
    struct perf_hello h;
    int rc = perf_hello_decode(&h, ev->param.private_data, ev->param.private_data_len);
    if (rc == 0 && *accepted > 0 && (!same_params(&h.p, &s->p) || e->ids[h.qp_index]))
        rc = IWARP_ERR_PERF_PROTO;
    if (rc < 0) {
        iwarp_cm_reject(ev->id, NULL, 0);
        return perf_ep_fail(e, rc, "the client's hello");
    }
    if (*accepted == 0) {
        s->p = h.p;
        if ((rc = perf_ep_alloc(e, &s->p, true)) < 0)
            return rc;
        e->peer_addr = h.addr;
        e->peer_rkey = h.rkey;
        e->peer_len = h.len;
    }
    uint32_t q = h.qp_index;
    e->ids[q] = ev->id;
    if ((rc = perf_ep_create_qp(e, ev->id)) < 0)
        return rc;
    for (uint32_t k = 0; k < e->lay.rq_depth; k++)
        if ((rc = perf_ep_post_recv(e, q, k)) < 0)
            return rc;
    struct perf_welcome w = {.rq_depth = e->lay.rq_depth,
                             .addr = (uint64_t)(uintptr_t)e->buf,
                             .rkey = e->mr->rkey,
                             .len = e->lay.total};
    uint8_t pd[PERF_WELCOME_LEN];
    perf_welcome_encode(pd, &w);
    uint8_t depth = (uint8_t)(s->p.qd < 128 ? s->p.qd : 128);
    struct iwarp_conn_param ap = {.private_data = pd,
                                  .private_data_len = sizeof pd,
                                  .responder_resources = depth,
                                  .initiator_depth = depth,
                                  .crc = s->crc_given ? s->crc : h.p.crc};
    if ((rc = iwarp_cm_accept(ev->id, &ap)) < 0)
        return perf_ep_fail(e, rc, "iwarp_cm_accept");
    (*accepted)++;
    return 0;
}

/* Accept the client's QPs. ESTABLISHED comes for each once the client's first FPDU arrives
 * (RFC 5044 §7.1.2: the initiator sends first), so those are taken as they come. */
static int accept_all(struct perf_server *s)
{
    uint32_t accepted = 0, want = 1;
    while (accepted < want) {
        struct iwarp_cm_event *ev;
        /* Before the first connection, wake up now and then to see whether a loopback client
         * gave up (it could not even connect); after it, the client has PERF_TIMEOUT_MS. */
        int rc = iwarp_cm_get_event_timeout(s->ep.cmch, &ev, accepted ? PERF_TIMEOUT_MS : 200);
        if (rc == IWARP_ERR_TIMEDOUT && !accepted && !s->abandoned)
            continue;
        if (rc < 0)
            return perf_ep_fail(&s->ep, rc, "waiting for the client's connections");
        if (ev->event == IWARP_CM_EVENT_CONNECT_REQUEST) {
            rc = accept_one(s, ev, &accepted);
            want = s->p.nqps;
        } else if (ev->event != IWARP_CM_EVENT_ESTABLISHED) {
            rc = perf_ep_fail(&s->ep, IWARP_ERR_STATE, iwarp_cm_event_str(ev->event));
        }
        iwarp_cm_ack_event(ev);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The server's data slots of one phase: poisoned for a Write phase under --verify (the
 * complement of what must arrive, so any octet not written is caught), the pattern for Reads. */
static void prepare_slots(struct perf_server *s, const struct perf_ctl *c, uint32_t used)
{
    struct perf_ep *e = &s->ep;
    if (!s->p.verify || s->p.lat || s->p.op == PERF_OP_SEND)
        return;
    for (uint32_t q = 0; q < s->p.nqps; q++) {
        for (uint32_t k = 0; k < used; k++) {
            uint8_t *p = e->buf + perf_slot_off(&e->lay, q, k, c->size);
            if (s->p.op == PERF_OP_WRITE)
                perf_pattern_poison(p, c->size, perf_seed(c->seq, q, k));
            else
                perf_pattern_fill(p, c->size, perf_seed(c->seq, q, k));
        }
    }
}

/* Wait for the zero-length Send that ends the phase on every QP; Send bandwidth consumes,
 * checks and credits the data Sends meanwhile. */
static int run_bw(struct perf_server *s, const struct perf_ctl *c, struct perf_ctl *res)
{
    struct perf_ep *e = &s->ep;
    bool ended[PERF_MAX_QPS] = {false};
    uint64_t count[PERF_MAX_QPS] = {0};
    uint32_t left = s->p.nqps, grant = e->lay.rq_depth / 4 ? e->lay.rq_depth / 4 : 1;
    while (left) {
        struct iwarp_wc wc;
        int rc = perf_ep_wait_wc(e, &wc, -1);
        if (rc < 0)
            return rc;
        /* a Write with Immediate completes here as the receive its Immediate Data consumes */
        bool imm = wc.opcode == IWARP_WC_RECV_RDMA_WITH_IMM;
        if (wc.opcode != IWARP_WC_RECV && !imm)
            continue;
        uint32_t q = perf_wr_qp(wc.wr_id), slot = perf_wr_slot(wc.wr_id);
        bool end = !imm && wc.byte_len == 0; /* the zero-length Send that ends the phase */
        if (q >= s->p.nqps || ended[q] ||
            (imm ? s->p.op != PERF_OP_WRITE_IMM
                 : wc.byte_len && (s->p.op != PERF_OP_SEND || wc.byte_len != c->size)))
            return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "unexpected Send in a phase");
        if (end) {
            ended[q] = true;
            left--;
        } else {
            if (s->p.verify)
                res->c += perf_pattern_check(e->buf + perf_recv_off(&e->lay, q, slot), c->size,
                                             perf_seed(c->seq, q, count[q]));
            count[q]++;
            res->a++;
            res->b += c->size;
        }
        if ((rc = perf_ep_post_recv(e, q, slot)) < 0)
            return rc;
        if (!end && count[q] % grant == 0) {
            struct perf_ctl cr = {.type = PERF_CTL_CREDIT, .seq = c->seq, .a = count[q]};
            if ((rc = perf_ep_send_ctl(e, q, &cr)) < 0)
                return rc;
        }
    }
    if (s->p.verify && s->p.op == PERF_OP_WRITE) {
        uint32_t used = perf_layout_slots(&e->lay, s->p.qd, c->size);
        if (c->a && c->a < used)
            used = (uint32_t)c->a;
        for (uint32_t q = 0; q < s->p.nqps; q++)
            for (uint32_t k = 0; k < used; k++)
                res->c += perf_pattern_check(e->buf + perf_slot_off(&e->lay, q, k, c->size),
                                             c->size, perf_seed(c->seq, q, k));
    }
    return 0;
}

/* Send latency: answer every ping with a Send of the same size from slot 0. Under --verify
 * the ping is checked and the answer carries the same pattern (filled, not copied: without
 * --verify the server touches no payload, as perftest). write-imm: every Write with Immediate
 * (its receive completion) is answered by one into the client's slot 1. */
static int lat_send(struct perf_server *s, const struct perf_ctl *c, struct perf_ctl *res)
{
    struct perf_ep *e = &s->ep;
    bool write_imm = s->p.op == PERF_OP_WRITE_IMM;
    for (;;) {
        struct iwarp_wc wc;
        int rc = perf_ep_wait_wc(e, &wc, -1);
        if (rc < 0)
            return rc;
        bool imm = wc.opcode == IWARP_WC_RECV_RDMA_WITH_IMM;
        if (wc.opcode != IWARP_WC_RECV && !imm)
            continue;
        uint32_t slot = perf_wr_slot(wc.wr_id);
        if (perf_wr_qp(wc.wr_id) != 0 || (imm && !write_imm) ||
            (!imm && wc.byte_len && (write_imm || wc.byte_len != c->size)))
            return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "unexpected Send in a latency phase");
        const uint8_t *in = e->buf + perf_recv_off(&e->lay, 0, slot);
        size_t src = perf_slot_off(&e->lay, 0, 0, c->size);
        uint64_t seed = perf_seed(c->seq, 0, res->a);
        if (s->p.verify && wc.byte_len) {
            res->c += perf_pattern_check(in, c->size, seed);
            perf_pattern_fill(e->buf + src, c->size, seed);
        }
        if ((rc = perf_ep_post_recv(e, 0, slot)) < 0)
            return rc;
        if (!imm && wc.byte_len == 0)
            return 0;
        res->a++;
        res->b += c->size;
        rc = perf_ep_post(e, 0, write_imm ? IWARP_WR_RDMA_WRITE_WITH_IMM : IWARP_WR_SEND, src,
                          c->size, perf_slot_off(&e->peer_lay, 0, 1, c->size),
                          perf_wr_id(PERF_WR_DATA, 0, 0));
        if (rc < 0)
            return rc;
    }
}

/* Write latency: wait for the client's Write to end with this round trip's stamp (polling
 * memory, as perftest's write_lat), then write the same octets back into its slot 1. */
static int lat_write(struct perf_server *s, const struct perf_ctl *c, struct perf_ctl *res)
{
    struct perf_ep *e = &s->ep;
    size_t mine = perf_slot_off(&e->lay, 0, 0, c->size);
    const uint8_t *last = e->buf + mine + c->size - 1;
    for (uint64_t k = 0;; k++) {
        uint8_t want = perf_stamp(k);
        /* acquire: the octets placed before the last one are seen too */
        for (unsigned spin = 0; __atomic_load_n(last, __ATOMIC_ACQUIRE) != want; spin++) {
            if (!e->busy && (spin & 255) != 255)
                continue;
            struct iwarp_wc wc;
            int rc = perf_ep_try_wc(e, &wc);
            if (rc < 0)
                return rc;
            if (rc == 1 && wc.opcode == IWARP_WC_RECV) {
                if (wc.byte_len != 0)
                    return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "Send in a write phase");
                return perf_ep_post_recv(e, 0, perf_wr_slot(wc.wr_id));
            }
            perf_ep_await_write(e);
        }
        if (s->p.verify)
            res->c += perf_pattern_check(e->buf + mine, c->size - 1, perf_seed(c->seq, 0, k));
        res->a++;
        res->b += c->size;
        size_t theirs = perf_slot_off(&e->peer_lay, 0, 1, c->size);
        int rc = perf_ep_post(e, 0, IWARP_WR_RDMA_WRITE, mine, c->size, theirs,
                              perf_wr_id(PERF_WR_DATA, 0, 0));
        if (rc < 0)
            return rc;
    }
}

/* A plain-TCP baseline phase: listen beside the iWARP connection, tell the client the port,
 * sink or echo until it closes. */
static int run_tcp(struct perf_server *s, const struct perf_ctl *c, struct perf_ctl *res)
{
    struct perf_ep *e = &s->ep;
    int lfd;
    uint16_t port;
    int rc = perf_tcp_listen(&e->ids[0]->local_addr, &lfd, &port);
    struct perf_ctl ready = {.type = PERF_CTL_READY, .seq = c->seq, .a = port, .status = rc < 0};
    int rc2 = perf_ep_send_ctl(e, 0, &ready);
    if (rc < 0 || rc2 < 0)
        return rc < 0 ? perf_ep_fail(e, rc, "TCP baseline listen") : rc2;
    /* The next calls block in the kernel: see READY onto the wire first (caller progress). */
    struct iwarp_wc wc;
    do {
        rc = perf_ep_wait_wc(e, &wc, PERF_TIMEOUT_MS);
    } while (rc == 1 && perf_wr_kind(wc.wr_id) != PERF_WR_CTL);
    if (rc < 0) {
        close(lfd);
        return rc;
    }
    rc =
        perf_tcp_serve(lfd, c->kind == PERF_PH_TCP_LAT, c->size, s->busy, e->buf, &e->lay, &res->b);
    close(lfd);
    res->status = rc < 0;
    return 0;
}

/* Serve one phase; fills the RESULT. */
static int run_phase(struct perf_server *s, const struct perf_ctl *c, struct perf_ctl *res)
{
    struct perf_ep *e = &s->ep;
    if (c->kind == PERF_PH_TCP_BW || c->kind == PERF_PH_TCP_LAT)
        return run_tcp(s, c, res);
    if (c->size > s->p.max_size || (c->kind == PERF_PH_LAT) != s->p.lat)
        return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "phase outside the hello's parameters");
    uint32_t used = perf_layout_slots(&e->lay, s->p.qd, c->size);
    if (c->a && c->a < used)
        used = (uint32_t)c->a;
    prepare_slots(s, c, used);
    if (s->p.lat && s->p.op == PERF_OP_WRITE)
        e->buf[perf_slot_off(&e->lay, 0, 0, c->size) + c->size - 1] = 0;
    if (s->p.lat && s->p.op == PERF_OP_READ && s->p.verify)
        perf_pattern_fill(e->buf + perf_slot_off(&e->lay, 0, 0, c->size), c->size,
                          perf_seed(c->seq, 0, 0));
    struct perf_ctl ready = {.type = PERF_CTL_READY, .seq = c->seq};
    int rc = perf_ep_send_ctl(e, 0, &ready);
    if (rc < 0)
        return rc;
    if (!s->p.lat)
        return run_bw(s, c, res);
    if (perf_op_consumes_recv(s->p.op))
        return lat_send(s, c, res);
    if (s->p.op == PERF_OP_WRITE)
        return lat_write(s, c, res);
    return run_bw(s, c, res); /* Read, atomic latency: the RNIC answers; wait for the end */
}

/* After QUIT: the client disconnects every QP; take those events (or give up after 5 s). */
static void drain_disconnects(struct perf_server *s)
{
    uint32_t left = s->p.nqps;
    while (left) {
        struct iwarp_cm_event *ev;
        if (iwarp_cm_get_event_timeout(s->ep.cmch, &ev, 5000) < 0)
            return;
        if (ev->event == IWARP_CM_EVENT_DISCONNECTED)
            left--;
        iwarp_cm_ack_event(ev);
    }
}

/*
 * Accept the client's QPs and serve its phases until PHASE(quit). Returns 0, or a negative
 * IWARP_ERR_* (s->ep.err says what failed). Call after perf_server_listen.
 */
int perf_server_serve(struct perf_server *s)
{
    int rc = accept_all(s);
    if (rc < 0)
        return rc;
    for (;;) {
        struct perf_ctl c;
        uint32_t q;
        if ((rc = perf_ep_recv_ctl(&s->ep, &c, &q, -1)) < 0)
            return rc;
        if (c.type != PERF_CTL_PHASE || q != 0)
            return perf_ep_fail(&s->ep, IWARP_ERR_PERF_PROTO, "expected a PHASE on QP 0");
        if (c.kind == PERF_PH_QUIT)
            break;
        struct perf_ctl res = {.type = PERF_CTL_RESULT, .kind = c.kind, .seq = c.seq};
        if ((rc = run_phase(s, &c, &res)) < 0)
            return rc;
        if (res.c)
            res.status = 1;
        if ((rc = perf_ep_send_ctl(&s->ep, 0, &res)) < 0)
            return rc;
    }
    drain_disconnects(s);
    return 0;
}

/* Release everything the server holds. */
void perf_server_close(struct perf_server *s)
{
    perf_ep_close(&s->ep);
}
