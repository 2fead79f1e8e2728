/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf --perftest: the test protocol of perftest (linux-rdma/perftest 4.5, the
 * ib_{write,read,send}_{bw,lat} programs run with -R), so that `iwarp perf --server --perftest`
 * serves those clients and `iwarp perf --perftest HOST` runs against their servers.
 *
 * The protocol, as perftest 4.5 (src/perftest_communication.c, perftest_resources.c and the six
 * programs' main()) speaks it with -R, for one QP, one size, a run of -n iterations, no -a, no
 * duplex (facts read there; nothing below is perftest's code):
 *
 * Two rdma_cm connections, both to the server's port (default 18515), both RC over MPA with no
 * private data (rdma_getaddrinfo gives no ai_connect for TCP):
 *  1. the "comm" connection: a QP with one Send and one Receive, used only for control.
 *     conn_param responder_resources = initiator_depth = 0 (its verb is Send), so siw's MPA
 *     Request carries IRD = ORD = 0. Each side posts ONE Receive of sizeof(struct
 *     pingpong_dest) = 56 octets before connecting/accepting and reposts it after each message.
 *  2. the data connection, set up later (below). conn_param: IRD = ORD = out_reads (the device's
 *     max_qp_rd_atom; siw: 128) for the Read tests, 0/0 otherwise. The perftest server destroys
 *     its first listener after accepting the comm connection and listens again only for this
 *     one, so a client's first try can be refused: perftest's client retries 10 times, 100 ms
 *     apart.
 *
 * Every control message is one exchange: the client Sends its message and then waits for the
 * server's; the server waits first and answers. The receiver never checks the length (it
 * copies the size it expects out of its 56-octet buffer), so messages are at most 56 octets
 * and strictly alternate (one Receive is all either side has posted). Integers are big-endian.
 *  E1  version: 16 octets, a NUL-terminated string (perftest 4.5: "6.10"); a peer below "5.70"
 *      is refused. Exchanged with atof() semantics.
 *  E2  cycle buffer (page size, 4096): 4-octet int; both then use the larger.
 *  E3  cache line size (64): 4-octet int; both use the larger.
 *  E4  MTU: 2 octets, the first two characters of the decimal MTU ("10" for 1024).
 *  E5  a handshake (below) with an all-zero pingpong_dest, then the data connection (2.),
 *  E6  a handshake after it.
 * A handshake (ctx_hand_shake) exchanges a struct pingpong_dest, 56 octets:
 *      0 lid, 4 out_reads, 8 qpn, 12 psn, 16 rkey (32 bits each), 20 padding (unset),
 *      24 vaddr (64), 32 gid (16 octets), 48 srqn, 52 gid_index.
 *  The rkey/vaddr name the sender's data buffer: vaddr = buf + BUFF_SIZE, where BUFF_SIZE =
 *  max(size, cycle buffer) and [buf, buf + BUFF_SIZE) holds what it sends (Write source,
 *  Read target). ib_send_bw on iWARP instead puts there a 4-octet credit word (below).
 * Then, per program (D = handshake of the QP's dest, S = the same used as a sync; after each
 * one the receiver takes the peer's rkey/vaddr):
 *  ib_write_bw, ib_read_bw: D D S; the client runs, then both: S, the bandwidth report (five
 *      exchanges: size 8 octets, iterations 8 octets (4 if the peer is below "5.33"), peak,
 *      average and message rate as IEEE doubles in big-endian order; MiB/s), S (close).
 *      The server is passive; it prints the client's report.
 *  ib_send_bw: D S D, the server posts its receives, S, the run, S (close). No report.
 *      iWARP has no RNR retry, so perftest flow-controls Sends with credits: each side's dest
 *      names its credit word; the server, every rx_depth/3 receives, RDMA Writes its count of
 *      receives so far (4 octets, host order: little-endian on x86) there; the client keeps
 *      sends - credit < rx_depth. rx_depth = min(512, iterations) on both sides.
 *  ib_send_lat: D S D, both post receives, S, the run (client Sends first, each side answers
 *      every Send with one), S (close).
 *  ib_write_lat: S D D S, the run, then no close exchange. The SERVER Writes first: each side
 *      RDMA Writes `size` octets (zeros, the last octet = the round-trip number mod 256) to the
 *      peer's vaddr and polls its own buffer's last octet for the peer's number.
 *  ib_read_lat: S D D S; the server then does S (close) at once; the client Reads one at a
 *      time, then S (close).
 * Sizes and iterations are never sent before the run: both sides take them from their own
 * command line (-s, -n) and must agree; only the bandwidth report carries the client's.
 * At the end the client disconnects the data QP (rdma_disconnect) and destroys everything.
 *
 * One conflict with the RFCs: in ib_write_lat the MPA Responder sends the first FPDU, which
 * RFC 5044 §7.1.2 forbids before the Initiator's first FPDU arrives (RFC 6581 solves it with an
 * RTR, which siw does not send unless peer-to-peer). siw does not enforce the rule; libiwarp
 * does, so `iwarp perf --server --perftest --lat --op write` cannot serve ib_write_lat. Our
 * client therefore sends one zero-length RDMA Write (valid STag and offset; RFC 5040 §4.4
 * permits zero-length Writes) on the data QP before the last sync, which lets our own server go.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"
#include "util/bytes.h"

enum {
    PT_DEST_LEN = 56,              /* sizeof(struct pingpong_dest) */
    PT_VERSION_LEN = 16,           /* MAX_VERSION */
    PT_CYCLE_BUFFER = 4096,        /* what we announce (perftest: the page size) */
    PT_CACHE_LINE = 64,            /* what we announce */
    PT_MIN_BUF = 65536,            /* our BUFF_SIZE floor: a peer's cycle buffer up to this fits */
    PT_MAX_RX = 512,               /* DEF_RX_SEND */
    PT_MSG_SLOTS = 2,              /* control receives posted */
    PT_CONNECT_TRIES = 50,         /* data and comm connects: 100 ms apart */
    PT_FIRST_DELAY_NS = 250000000, /* siw 6.1 as responder: see tests/interop/siw_rping.sh */
};
static const char PT_VERSION[] = "6.10";

/* The QPs of the endpoint: ids[PT_COMM] and ids[PT_DATA]. */
enum { PT_COMM = 0, PT_DATA = 1 };

struct pt {
    const struct perf_opts *o;
    bool server, busy;
    enum perf_op op;
    bool lat;
    uint32_t size;
    uint64_t iters;
    uint32_t rx, qd, credit_every;
    size_t bsize;             /* BUFF_SIZE: data source at 0, target (our vaddr) at bsize */
    size_t off_ctrl, off_msg; /* credit to send / credit received at +4; control send */
    struct perf_ep e;
    uint8_t msg[64]; /* the last control message received */
    uint32_t msg_len;
    bool got_msg;
    double rem_version;
    uint64_t rem_vaddr;
    uint32_t rem_rkey;
    uint64_t scnt, ccnt, rcnt, rposted;
    uint64_t bad;     /* octets that differed (--verify, write-latency zeros) */
    bool ending;      /* no control message is due any more */
    uint64_t done;    /* messages the run moved (the client's count on a passive
                         server, from its report) */
    uint64_t *stamps; /* post times, latency */
    double *samples;
};

static const char *test_name(const struct pt *t)
{
    static const char *names[2][3] = {{"ib_write_bw", "ib_read_bw", "ib_send_bw"},
                                      {"ib_write_lat", "ib_read_lat", "ib_send_lat"}};
    return names[t->lat][t->op];
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

static int post_data_recv(struct pt *t, uint32_t slot)
{
    t->rposted++;
    return perf_ep_post_recv(&t->e, PT_DATA, slot);
}

/* The credit Write of ib_send_bw's server: our receive count, little-endian (x86 host order). */
static int send_credit(struct pt *t)
{
    iwarp_store_le32(t->e.buf + t->off_ctrl, (uint32_t)t->rcnt);
    return perf_ep_post(&t->e, PT_DATA, IWARP_WR_RDMA_WRITE, t->off_ctrl, 4, 0,
                        perf_wr_id(PERF_WR_END, PT_DATA, 0));
}

/* Account for one completion. Returns 0 or a negative IWARP_ERR_*. */
static int dispatch(struct pt *t, const struct iwarp_wc *wc)
{
    struct perf_ep *e = &t->e;
    uint32_t q = perf_wr_qp(wc->wr_id), slot = perf_wr_slot(wc->wr_id);
    switch (perf_wr_kind(wc->wr_id)) {
    case PERF_WR_RECV:
        if (q == PT_COMM) {
            if (t->got_msg)
                return perf_ep_fail(e, IWARP_ERR_PERF_PROTO, "two control messages at once");
            t->msg_len = wc->byte_len < sizeof t->msg ? wc->byte_len : (uint32_t)sizeof t->msg;
            memcpy(t->msg, e->buf + perf_recv_off(&e->lay, q, slot), t->msg_len);
            t->got_msg = true;
            return perf_ep_post_recv(e, q, slot);
        }
        if (wc->byte_len != t->size) {
            t->bad += t->size;
        } else if (t->o->verify) {
            t->bad += perf_pattern_check(e->buf + perf_recv_off(&e->lay, q, slot), t->size,
                                         perf_seed(0, 0, t->lat ? t->rcnt : 0));
        }
        t->rcnt++;
        if (t->rposted < t->iters) {
            int rc = post_data_recv(t, slot);
            if (rc < 0)
                return rc;
        }
        if (!t->lat && t->server && t->rcnt % t->credit_every == 0)
            return send_credit(t);
        return 0;
    case PERF_WR_DATA:
        t->ccnt++;
        if (t->op == PERF_OP_READ && t->o->verify)
            t->bad += perf_pattern_check(e->buf, t->size, perf_seed(0, 0, 0));
        return 0;
    default: /* control Sends, credit and zero-length Writes */
        return 0;
    }
}

/* Take and account one completion, waiting up to timeout_ms (0: do not wait). Returns 1 when one
 * was taken, 0 when none came within a zero timeout, or a negative IWARP_ERR_*. */
static int step(struct pt *t, int timeout_ms)
{
    struct iwarp_wc wc;
    int rc = timeout_ms ? perf_ep_wait_wc(&t->e, &wc, timeout_ms) : perf_ep_try_wc(&t->e, &wc);
    if (rc == IWARP_ERR_IO && t->ending && wc.status == IWARP_WC_WR_FLUSH_ERR &&
        perf_wr_kind(wc.wr_id) == PERF_WR_RECV && perf_wr_qp(wc.wr_id) == PT_COMM) {
        t->e.err[0] = 0; /* the peer finished first and closed the control connection */
        return 1;
    }
    if (rc <= 0)
        return rc;
    rc = dispatch(t, &wc);
    return rc < 0 ? rc : 1;
}

/* Send a control message on the comm QP (inline: at most 56 octets). */
static int send_msg(struct pt *t, const void *m, size_t len)
{
    memcpy(t->e.buf + t->off_msg, m, len);
    return perf_ep_post(&t->e, PT_COMM, IWARP_WR_SEND, t->off_msg, (uint32_t)len, 0,
                        perf_wr_id(PERF_WR_CTL, PT_COMM, 0));
}

static int recv_msg(struct pt *t)
{
    while (!t->got_msg) {
        int rc = step(t, PERF_TIMEOUT_MS);
        if (rc < 0)
            return rc;
    }
    t->got_msg = false;
    return 0;
}

/* One exchange: the client sends first, the server answers (ctx_xchg_data). theirs receives
 * want octets (zero-filled past what came). Returns 0 or a negative IWARP_ERR_*. */
static int xchg(struct pt *t, const void *mine, size_t len, void *theirs, size_t want)
{
    int rc;
    if (!t->server && (rc = send_msg(t, mine, len)) < 0)
        return rc;
    if ((rc = recv_msg(t)) < 0)
        return rc;
    memset(theirs, 0, want);
    memcpy(theirs, t->msg, t->msg_len < want ? t->msg_len : want);
    if (t->server && (rc = send_msg(t, mine, len)) < 0)
        return rc;
    return 0;
}

/* A handshake: our pingpong_dest (real: rkey/vaddr of our target or credit word; else zeros)
 * for the peer's, whose rkey and vaddr we keep when real. */
static int handshake(struct pt *t, bool real)
{
    uint8_t mine[PT_DEST_LEN] = {0}, theirs[PT_DEST_LEN];
    if (real) {
        bool credit = t->op == PERF_OP_SEND && !t->lat;
        size_t off = credit ? t->off_ctrl + 4 : t->bsize;
        iwarp_store_be32(mine + 4, t->op == PERF_OP_READ ? t->qd : 0); /* out_reads */
        iwarp_store_be32(mine + 8, 1 + PT_DATA);                       /* "qpn" */
        iwarp_store_be32(mine + 16, t->e.mr->rkey);
        iwarp_store_be64(mine + 24, (uint64_t)(uintptr_t)(t->e.buf + off));
        iwarp_store_be32(mine + 52, UINT32_MAX); /* gid_index -1 */
    }
    int rc = xchg(t, mine, sizeof mine, theirs, sizeof theirs);
    if (rc == 0 && real) {
        t->rem_rkey = iwarp_load_be32(theirs + 16);
        t->rem_vaddr = iwarp_load_be64(theirs + 24);
        t->e.peer_addr = t->rem_vaddr;
        t->e.peer_rkey = t->rem_rkey;
    }
    return rc;
}

/* E1-E4: version, cycle buffer, cache line, MTU. */
static int prelude(struct pt *t)
{
    char mine[PT_VERSION_LEN] = {0}, theirs[PT_VERSION_LEN + 1] = {0};
    memcpy(mine, PT_VERSION, sizeof PT_VERSION);
    int rc = xchg(t, mine, sizeof mine, theirs, PT_VERSION_LEN);
    if (rc < 0)
        return rc;
    t->rem_version = atof(theirs);
    if (t->rem_version < 5.70)
        return perf_ep_fail(&t->e, IWARP_ERR_PERF_PROTO, "the peer's perftest is older than 5.70");
    uint8_t m4[4], r4[4];
    iwarp_store_be32(m4, PT_CYCLE_BUFFER);
    if ((rc = xchg(t, m4, 4, r4, 4)) < 0)
        return rc;
    if (iwarp_load_be32(r4) > t->bsize)
        return perf_ep_fail(&t->e, IWARP_ERR_PERF_PROTO, "the peer's cycle buffer is too large");
    iwarp_store_be32(m4, PT_CACHE_LINE);
    if ((rc = xchg(t, m4, 4, r4, 4)) < 0)
        return rc;
    char mtu[2] = {'1', '0'}, rmtu[2]; /* "1024", as siw reports its active MTU */
    return xchg(t, mtu, sizeof mtu, rmtu, sizeof rmtu);
}

/* ---- connections -------------------------------------------------------------------------- */

/* IRD = ORD of the data connection: perftest asks for its out_reads (siw: 128) for Reads and
 * 0 otherwise; we ask the same, so that neither side's RFC 6581 answer exceeds the other's. */
static int data_depth(const struct pt *t)
{
    return t->op == PERF_OP_READ ? 128 : 0;
}

/* Active side: connect ids[q] to peer, retrying a refused or dropped attempt. */
static int connect_id(struct pt *t, uint32_t q, const struct sockaddr *peer)
{
    struct perf_ep *e = &t->e;
    int rc = 0;
    for (int tries = 0; tries < PT_CONNECT_TRIES; tries++) {
        if (tries)
            sleep_ns(100000000);
        struct iwarp_cm_event *ev;
        e->err[0] = 0;
        if ((rc = perf_ep_resolve_qp(e, q, peer, IWARP_PS_TCP)) < 0)
            return rc;
        uint8_t depth = (uint8_t)(q == PT_DATA ? data_depth(t) : 0);
        struct iwarp_conn_param p = {.responder_resources = depth,
                                     .initiator_depth = depth,
                                     .crc = t->o->crc_given && t->o->crc,
                                     .mpa_rev = t->o->mpa_rev};
        if ((rc = iwarp_cm_connect(e->ids[q], &p)) < 0)
            return perf_ep_fail(e, rc, "iwarp_cm_connect");
        rc = perf_ep_cm_event(e, IWARP_CM_EVENT_ESTABLISHED, &ev, PERF_TIMEOUT_MS);
        if (rc == 0) {
            iwarp_cm_ack_event(ev);
            sleep_ns(PT_FIRST_DELAY_NS);
            return 0;
        }
        /* Refused, or a hostfwd connection that ended at once: nothing was posted on the QP. */
        iwarp_cm_destroy_qp(e->ids[q]);
        iwarp_cm_destroy_id(e->ids[q]);
        e->ids[q] = NULL;
    }
    return rc;
}

/* Passive side: wait for the next CONNECT_REQUEST and accept it as ids[q], with receives posted
 * (the peer may Send as soon as it is established). */
static int accept_id(struct pt *t, uint32_t q, uint32_t recvs, int timeout_ms)
{
    struct perf_ep *e = &t->e;
    struct iwarp_cm_event *ev;
    int rc;
    for (;;) {
        if ((rc = iwarp_cm_get_event_timeout(e->cmch, &ev, timeout_ms)) < 0)
            return perf_ep_fail(e, rc, "waiting for the client's connection");
        if (ev->event == IWARP_CM_EVENT_CONNECT_REQUEST)
            break;
        enum iwarp_cm_event_type type = ev->event;
        iwarp_cm_ack_event(ev);
        if (type != IWARP_CM_EVENT_ESTABLISHED)
            return perf_ep_fail(e, IWARP_ERR_STATE, iwarp_cm_event_str(type));
    }
    e->ids[q] = ev->id;
    if ((rc = perf_ep_create_qp(e, ev->id)) < 0) {
        iwarp_cm_ack_event(ev);
        return rc;
    }
    for (uint32_t k = 0; k < recvs && rc == 0; k++)
        rc = q == PT_COMM ? perf_ep_post_recv(e, q, k) : post_data_recv(t, k);
    /* As rdma_accept: answer with the IRD/ORD the request asked for (RFC 6581 §3). */
    struct iwarp_conn_param ap = {.responder_resources = ev->param.responder_resources,
                                  .initiator_depth = ev->param.initiator_depth,
                                  .crc = t->o->crc_given ? t->o->crc : ev->param.crc};
    if (rc == 0 && (rc = iwarp_cm_accept(ev->id, &ap)) < 0)
        perf_ep_fail(e, rc, "iwarp_cm_accept");
    iwarp_cm_ack_event(ev);
    return rc;
}

/* ---- the runs ---------------------------------------------------------------------------- */

static int bw_client(struct pt *t)
{
    struct perf_ep *e = &t->e;
    enum iwarp_wr_opcode op = t->op == PERF_OP_WRITE  ? IWARP_WR_RDMA_WRITE
                              : t->op == PERF_OP_READ ? IWARP_WR_RDMA_READ
                                                      : IWARP_WR_SEND;
    /* Reads in flight stay within the ORD of data_depth(). */
    uint32_t depth = t->op == PERF_OP_READ && t->qd > 128 ? 128 : t->qd;
    const volatile uint32_t *credit = (const volatile uint32_t *)(void *)(e->buf + t->off_ctrl + 4);
    uint64_t deadline = perf_now_ns() + (uint64_t)PERF_TIMEOUT_MS * 1000000u;
    while (t->ccnt < t->iters) {
        while (t->scnt < t->iters && t->scnt - t->ccnt < depth) {
            /* ib_send_bw on iWARP: at most rx_depth Sends beyond the server's credit. */
            if (op == IWARP_WR_SEND &&
                t->scnt + 1 - __atomic_load_n(credit, __ATOMIC_ACQUIRE) >= t->rx)
                break;
            int rc =
                perf_ep_post(e, PT_DATA, op, 0, t->size, 0, perf_wr_id(PERF_WR_DATA, PT_DATA, 0));
            if (rc < 0)
                return rc;
            t->scnt++;
        }
        /* Waiting only for a credit (an RDMA Write: no completion here): poll. */
        int rc = step(t, t->scnt > t->ccnt ? PERF_TIMEOUT_MS : 0);
        if (rc < 0)
            return rc;
        if (rc == 0 && perf_now_ns() > deadline)
            return perf_ep_fail(e, IWARP_ERR_TIMEDOUT, "waiting for ib_send_bw's credit");
    }
    return 0;
}

/* ib_send_bw's server: take every Send, crediting as they come. */
static int bw_recv_all(struct pt *t)
{
    while (t->rcnt < t->iters) {
        int rc = step(t, PERF_TIMEOUT_MS);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Wait until the last octet of our target holds `want` (write latency), checking the rest is
 * still perftest's zeros. */
static int wait_stamp(struct pt *t, uint8_t want)
{
    const volatile uint8_t *p = t->e.buf + t->bsize + t->size - 1;
    uint64_t deadline = perf_now_ns() + (uint64_t)PERF_TIMEOUT_MS * 1000000u;
    for (unsigned spins = 0; *p != want; spins++) {
        int rc = step(t, 0);
        if (rc < 0)
            return rc;
        if ((spins & 1023) == 1023 && perf_now_ns() > deadline)
            return perf_ep_fail(&t->e, IWARP_ERR_TIMEDOUT, "waiting for the peer's Write");
    }
    for (uint32_t i = 0; i + 1 < t->size; i++)
        t->bad += t->e.buf[t->bsize + i] != 0;
    return 0;
}

static int lat_run(struct pt *t)
{
    struct perf_ep *e = &t->e;
    for (uint64_t k = 0; k < t->iters; k++) {
        int rc = 0;
        if (t->op == PERF_OP_WRITE) {
            /* run_iter_lat_write: the server posts first; each waits for the peer's number. */
            if ((!t->server || k > 0) && (rc = wait_stamp(t, (uint8_t)(t->server ? k : k + 1))) < 0)
                return rc;
            t->stamps[k] = perf_now_ns();
            e->buf[t->size - 1] = (uint8_t)(k + 1);
            rc = perf_ep_post(e, PT_DATA, IWARP_WR_RDMA_WRITE, 0, t->size, 0,
                              perf_wr_id(PERF_WR_DATA, PT_DATA, 0));
        } else if (t->op == PERF_OP_SEND) {
            /* run_iter_lat_send: the client sends first; each answers the peer's Send. */
            while (t->server && t->rcnt <= k)
                if ((rc = step(t, PERF_TIMEOUT_MS)) < 0)
                    return rc;
            t->stamps[k] = perf_now_ns();
            if (t->o->verify)
                perf_pattern_fill(e->buf, t->size, perf_seed(0, 0, k));
            rc = perf_ep_post(e, PT_DATA, IWARP_WR_SEND, 0, t->size, 0,
                              perf_wr_id(PERF_WR_DATA, PT_DATA, 0));
            while (rc == 0 && (t->ccnt <= k || (!t->server && t->rcnt <= k)))
                rc = step(t, PERF_TIMEOUT_MS) < 0 ? -1 : 0;
        } else {
            t->stamps[k] = perf_now_ns();
            rc = perf_ep_post(e, PT_DATA, IWARP_WR_RDMA_READ, 0, t->size, 0,
                              perf_wr_id(PERF_WR_DATA, PT_DATA, 0));
            while (rc == 0 && t->ccnt <= k)
                rc = step(t, PERF_TIMEOUT_MS) < 0 ? -1 : 0;
        }
        if (rc < 0)
            return perf_ep_fail(e, IWARP_ERR_IO, "latency run");
    }
    int rc = 0;
    if (t->op == PERF_OP_WRITE && t->server) /* the client's last Write */
        rc = wait_stamp(t, (uint8_t)t->iters);
    /* ib_write_lat has no closing exchange: the peer may close as soon as it has ours. */
    t->ending = t->op == PERF_OP_WRITE;
    while (rc == 0 && t->ccnt < t->iters)
        rc = step(t, PERF_TIMEOUT_MS) < 0 ? IWARP_ERR_IO : 0;
    return rc;
}

/* perftest's figures: RTT/2 between consecutive posts (Write, Send), the full gap for Read. */
static void lat_report(struct pt *t)
{
    size_t n = t->iters > 1 ? (size_t)t->iters - 1 : 0;
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        double d = (double)(t->stamps[i + 1] - t->stamps[i]);
        t->samples[i] = t->op == PERF_OP_READ ? d : d / 2;
    }
    struct perf_lat l;
    perf_lat_summarize(&l, t->samples, n);
    printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n"
           " %-6u %-11" PRIu64 " %-14.2f %-14.2f %-16.2f %-.2f\n",
           t->size, t->iters, l.min, l.max, l.typical, l.avg);
}

/* The five-exchange bandwidth report (xchg_bw_reports); rsize, riters, ravg: the peer's. */
static int bw_reports(struct pt *t, double mib_s, double mpps, uint64_t *rsize, uint64_t *riters,
                      double *ravg)
{
    uint8_t m[8], r[8];
    bool wide = t->rem_version >= 5.33;
    iwarp_store_be64(m, t->size);
    int rc = xchg(t, m, 8, r, 8);
    *rsize = iwarp_load_be64(r);
    if (wide)
        iwarp_store_be64(m, t->iters);
    else
        iwarp_store_be32(m, (uint32_t)t->iters);
    if (rc == 0 && (rc = xchg(t, m, wide ? 8 : 4, r, 8)) == 0)
        *riters = wide ? iwarp_load_be64(r) : iwarp_load_be32(r);
    double d[3] = {mib_s, mib_s, mpps};
    for (int i = 0; i < 3 && rc == 0; i++) {
        uint64_t bits;
        memcpy(&bits, &d[i], 8);
        iwarp_store_be64(m, bits);
        if ((rc = xchg(t, m, 8, r, 8)) == 0 && i == 1) {
            bits = iwarp_load_be64(r);
            memcpy(ravg, &bits, 8);
        }
    }
    return rc;
}

/* The test after E6 (see the file comment), both roles. */
static int run_test(struct pt *t)
{
    int rc = 0;
    uint64_t t0 = 0, t1 = 0;
    if (!t->lat && t->op != PERF_OP_SEND) { /* ib_write_bw, ib_read_bw */
        for (int i = 0; i < 3 && rc == 0; i++)
            rc = handshake(t, true);
        if (rc == 0 && !t->server) {
            t0 = perf_now_ns();
            rc = bw_client(t);
            t1 = perf_now_ns();
        }
        if (rc == 0)
            rc = handshake(t, true);
        double secs = (double)(t1 - t0) / 1e9, mib = 0, mpps = 0;
        if (!t->server && secs > 0) {
            mib = (double)t->size * (double)t->iters / secs / 1048576.0;
            mpps = (double)t->iters / secs / 1e6;
        }
        uint64_t rsize = 0, riters = 0;
        double ravg = 0;
        if (rc == 0)
            rc = bw_reports(t, mib, mpps, &rsize, &riters, &ravg);
        if (rc == 0)
            rc = handshake(t, true);
        if (rc < 0)
            return rc;
        if (t->server && t->op == PERF_OP_WRITE && t->o->verify)
            t->bad += perf_pattern_check(t->e.buf + t->bsize, t->size, perf_seed(0, 0, 0));
        printf(" #bytes     #iterations    BW average[MiB/sec]   MsgRate[Mpps]\n");
        if (t->server)
            printf(" %-10" PRIu64 " %-14" PRIu64 " %-21.2f (the client's report)\n", rsize, riters,
                   ravg);
        else
            printf(" %-10u %-14" PRIu64 " %-21.2f %.6f\n", t->size, t->iters, mib, mpps);
        t->done = t->server ? riters : t->ccnt;
        if (t->server && (rsize != t->size || riters != t->iters)) {
            snprintf(t->e.err, sizeof t->e.err,
                     "the client ran %" PRIu64 " x %" PRIu64 " octets, we expected %" PRIu64
                     " x %u (give the same -n and -s)",
                     riters, rsize, t->iters, t->size);
            return IWARP_ERR_PERF_PROTO;
        }
        return 0;
    }
    if (t->op == PERF_OP_SEND) { /* ib_send_bw, ib_send_lat: D S D, receives, S */
        rc = handshake(t, true);
        for (int i = 0; i < 2 && rc == 0; i++)
            rc = handshake(t, true);
        if (rc == 0 && (t->server || t->lat))
            for (uint32_t k = 0; k < t->rx && rc == 0; k++)
                rc = post_data_recv(t, k);
        if (rc == 0 && !t->lat && !t->server && t->o->verify)
            perf_pattern_fill(t->e.buf, t->size, perf_seed(0, 0, 0));
        if (rc == 0)
            rc = handshake(t, true);
        t0 = perf_now_ns();
        if (rc == 0)
            rc = t->lat ? lat_run(t) : t->server ? bw_recv_all(t) : bw_client(t);
        t1 = perf_now_ns();
        if (rc == 0)
            rc = handshake(t, true);
        if (rc < 0)
            return rc;
        if (t->lat) {
            t->done = t->ccnt;
            lat_report(t);
        } else {
            double secs = (double)(t1 - t0) / 1e9;
            uint64_t n = t->server ? t->rcnt : t->ccnt;
            t->done = n;
            printf(" #bytes     #iterations    BW average[MiB/sec]\n %-10u %-14" PRIu64 " %.2f\n",
                   t->size, n, secs > 0 ? (double)t->size * (double)n / secs / 1048576.0 : 0.0);
        }
        return 0;
    }
    /* ib_write_lat, ib_read_lat: S D D S */
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = handshake(t, true);
    if (rc == 0 && t->op == PERF_OP_WRITE && !t->server)
        rc = perf_ep_post(&t->e, PT_DATA, IWARP_WR_RDMA_WRITE, 0, 0, 0,
                          perf_wr_id(PERF_WR_END, PT_DATA, 0));
    if (rc == 0)
        rc = handshake(t, true);
    if (rc < 0)
        return rc;
    if (t->op == PERF_OP_READ) {
        if (!t->server && (rc = lat_run(t)) < 0)
            return rc;
        if ((rc = handshake(t, true)) < 0)
            return rc;
        if (!t->server)
            lat_report(t);
        t->done = t->server ? 0 : t->ccnt;
        return 0;
    }
    if ((rc = lat_run(t)) < 0)
        return rc;
    t->done = t->ccnt;
    lat_report(t);
    return 0;
}

/* ---- setup --------------------------------------------------------------------------------- */

static int setup(struct pt *t, const struct perf_opts *o)
{
    memset(t, 0, sizeof *t);
    t->o = o;
    t->server = o->server;
    t->op = o->op;
    t->lat = o->lat;
    t->size = o->nsizes ? o->sizes[0] : 65536;
    if (o->iters_auto) /* perftest's defaults */
        t->iters = !t->lat && t->op == PERF_OP_WRITE ? 5000 : 1000;
    else
        t->iters = o->iters;
    t->qd = o->qd;
    t->rx = (uint32_t)(t->iters < PT_MAX_RX ? t->iters : PT_MAX_RX);
    t->credit_every = t->rx / 3 ? t->rx / 3 : 1;
    t->bsize = t->size > PT_MIN_BUF ? t->size : PT_MIN_BUF;
    t->off_ctrl = 2 * t->bsize;
    t->off_msg = t->off_ctrl + 64;
    struct perf_ep *e = &t->e;
    int rc = perf_ep_open(e, o->busy_poll, o->trace, false, 0, o->tx_batch);
    if (rc < 0)
        return rc;
    uint32_t recv_len = t->size > 64 ? t->size : 64;
    uint32_t rq = t->rx > PT_MSG_SLOTS ? t->rx : PT_MSG_SLOTS;
    e->lay = (struct perf_layout){.nqps = 2, .rq_depth = rq, .recv_len = recv_len};
    e->lay.recv_off = t->off_msg + 64;
    e->lay.total = e->lay.recv_off + (size_t)2 * rq * recv_len;
    e->nqps = 2;
    e->sq_depth = (t->qd > t->rx ? t->qd : t->rx) + 16;
    size_t len = (e->lay.total + 4095) & ~(size_t)4095;
    if (!(e->buf = aligned_alloc(4096, len)))
        return perf_ep_fail(e, IWARP_ERR_NOMEM, "buffer");
    memset(e->buf, 0, len);
    if (t->op == PERF_OP_READ && t->server && o->verify)
        perf_pattern_fill(e->buf + t->bsize, t->size, perf_seed(0, 0, 0));
    if (t->op == PERF_OP_WRITE && !t->lat && !t->server && o->verify)
        perf_pattern_fill(e->buf, t->size, perf_seed(0, 0, 0));
    if ((rc = iwarp_reg_mr(e->pd, e->buf, len,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                               IWARP_ACCESS_REMOTE_READ,
                           &e->mr)) < 0)
        return perf_ep_fail(e, rc, "iwarp_reg_mr");
    int cqe = (int)(2 * (e->sq_depth + rq) + 16);
    if ((rc = iwarp_create_cq(e->ctx, cqe, NULL, e->cch, 0, &e->cq)) < 0)
        return perf_ep_fail(e, rc, "iwarp_create_cq");
    t->stamps = calloc(t->iters + 1, sizeof *t->stamps);
    t->samples = calloc(t->iters + 1, sizeof *t->samples);
    if (!t->stamps || !t->samples)
        return perf_ep_fail(e, IWARP_ERR_NOMEM, "latency samples");
    return 0;
}

/* Close both connections, letting the peer close first: siw completes a Send only after its
 * transmit pass ends, and a connection closed under it before then completes the peer's last
 * control Send with IBV_WC_LOC_QP_OP_ERR (perftest then fails), though we received it. Each
 * perftest side destroys its QPs as soon as its last exchange is done; a client of ours waits
 * up to 2 s for that, a server up to 5 s (an iwarp perf client waits too, then closes). */
static void teardown(struct pt *t)
{
    struct perf_ep *e = &t->e;
    struct iwarp_cm_event *ev;
    int left = (e->ids[PT_DATA] != NULL) + (e->ids[PT_COMM] != NULL);
    uint64_t until = perf_now_ns() + (t->server ? 5000000000u : 2000000000u);
    while (left > 0 && perf_now_ns() < until &&
           iwarp_cm_get_event_timeout(e->cmch, &ev, 200) == 0) {
        left -= ev->event == IWARP_CM_EVENT_DISCONNECTED;
        iwarp_cm_ack_event(ev);
    }
    for (int q = PT_DATA; q >= PT_COMM; q--)
        if (e->ids[q] && e->ids[q]->qp)
            (void)iwarp_cm_disconnect(e->ids[q]);
    until = perf_now_ns() + 2000000000u;
    while (left > 0 && perf_now_ns() < until &&
           iwarp_cm_get_event_timeout(e->cmch, &ev, 200) == 0) {
        left -= ev->event == IWARP_CM_EVENT_DISCONNECTED;
        iwarp_cm_ack_event(ev);
    }
    while (iwarp_cm_get_event_timeout(e->cmch, &ev, 0) == 0)
        iwarp_cm_ack_event(ev);
    perf_ep_close(e);
    free(t->stamps);
    free(t->samples);
}

static int run(struct pt *t, const struct perf_opts *o)
{
    struct perf_ep *e = &t->e;
    uint16_t port = o->port ? o->port : PERF_DEFAULT_PORT;
    struct sockaddr_storage peer;
    memset(&peer, 0, sizeof peer);
    int rc;
    if (t->server) {
        struct sockaddr_in sin = {
            .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
        if ((rc = iwarp_cm_create_id(e->cmch, &e->listen, NULL, IWARP_PS_TCP)) < 0)
            return perf_ep_fail(e, rc, "iwarp_cm_create_id");
        if ((rc = iwarp_cm_bind_addr(e->listen, (const struct sockaddr *)&sin)) < 0)
            return perf_ep_fail(e, rc, "bind");
        if ((rc = iwarp_cm_listen(e->listen, 4)) < 0)
            return perf_ep_fail(e, rc, "listen");
        printf("iwarp perf --perftest: %s server on port %u; waiting for one client\n",
               test_name(t), port);
        fflush(stdout);
        if ((rc = accept_id(t, PT_COMM, PT_MSG_SLOTS, -1)) < 0)
            return rc;
    } else {
        if (perf_resolve(o->host, port, false, &peer) < 0)
            return perf_ep_fail(e, IWARP_ERR_INVAL, "cannot resolve the host");
        if ((rc = connect_id(t, PT_COMM, (const struct sockaddr *)&peer)) < 0)
            return rc;
        for (uint32_t k = 0; k < PT_MSG_SLOTS && rc == 0; k++)
            rc = perf_ep_post_recv(e, PT_COMM, k);
        if (rc < 0)
            return rc;
    }
    if ((rc = prelude(t)) < 0 || (rc = handshake(t, false)) < 0)
        return rc;
    /* The data connection (the server listened all along; perftest's listens anew). */
    if (t->server)
        rc = accept_id(t, PT_DATA, 0, PERF_TIMEOUT_MS);
    else
        rc = connect_id(t, PT_DATA, (const struct sockaddr *)&peer);
    if (rc < 0 || (rc = handshake(t, false)) < 0)
        return rc;
    printf("iwarp perf --perftest: %s %s, peer version %.2f, %u octets x %" PRIu64 "\n",
           test_name(t), t->server ? "server" : "client", t->rem_version, t->size, t->iters);
    if ((rc = run_test(t)) < 0)
        return rc;
    if (t->bad) {
        snprintf(e->err, sizeof e->err, "%" PRIu64 " octets differed from what was sent", t->bad);
        return IWARP_ERR_PERF_VERIFY;
    }
    if (t->server && t->lat && t->op == PERF_OP_READ)
        printf("iwarp perf --perftest: done (the client's Reads complete on its side only)\n");
    else
        printf("iwarp perf --perftest: done: %" PRIu64 " %s of %u octets%s\n", t->done,
               t->op == PERF_OP_SEND   ? "Sends"
               : t->op == PERF_OP_READ ? "Reads"
                                       : "Writes",
               t->size, t->o->verify ? ", data verified" : "");
    return 0;
}

/*
 * `iwarp perf --perftest`: run one perftest (-R) test against perftest or serve its client; see
 * the protocol at the top of this file. o: parsed options (--server or HOST, --op, --lat, -s,
 * -n, --qd, -p, --crc, --busy-poll, --verify, --trace). Returns the exit status: 0 success,
 * 1 failure.
 */
int perf_perftest_run(const struct perf_opts *o)
{
    static struct pt t;
    int rc = setup(&t, o);
    if (rc == 0)
        rc = run(&t, o);
    if (rc < 0)
        fprintf(stderr, "iwarp perf --perftest: %s: %s\n", test_name(&t),
                t.e.err[0] ? t.e.err : iwarp_strerror(rc));
    teardown(&t);
    return rc < 0 ? 1 : 0;
}
