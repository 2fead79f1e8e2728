/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp ping: rping (rdma-core librdmacm/examples/rping.c) over libiwarp's public API (verbs and
 * CM over MPA/TCP). It speaks rping's upper-layer protocol, so `iwarp ping -s` serves a real
 * `rping -c` and `iwarp ping -c` works against a real `rping -s` (tests/interop/siw_rping.sh runs
 * both against Linux siw). With --transport sctp both sides run DDP over SCTP instead (RFC 5043,
 * IWARP_PS_SCTP: usrsctp over UDP), libiwarp to libiwarp; the MPA options are refused then.
 *
 * One ping (rping's loop):
 *   client: Send {start buffer TO, STag, size}   (16 octets: be64 address, be32 rkey, be32 size)
 *   server: RDMA Read of the whole start buffer, then a Send ("go ahead", 16 zero octets)
 *   client: Send {sink buffer TO, STag, size}
 *   server: RDMA Write of strlen(data) + 1 octets into the sink, then a Send ("go ahead")
 *   client: with -V compares sink and start buffer; with -v prints "ping data: ..."
 * The start buffer of ping N holds "rdma-ping-N: ", then the letters 'A'..'z' cycling from
 * 'A' + N % 58, and a final NUL.
 *
 * Everything runs in one thread: poll() on the CM channel, one completion channel shared by the
 * connections' CQs, and the async event fd; each connection is a small state machine advanced by
 * its completions. -P serves any number of clients at once (up to MAX_SESSIONS).
 *
 * Hidden test options (not in --help; tests/interop/siw_*.sh use them against Linux siw):
 *   --x-markers        client: ask for MPA markers (siw refuses M=1: REJECTED, MPA_MARKERS)
 *   --x-markers-fallback  client: ask for markers, and connect again without them when the
 *                      peer rejects them (iwarp_conn_param.markers_fallback)
 *   --x-p2p TYPES      client: RFC 6581 peer-to-peer, offering the RTR types in TYPES, a
 *                      string of w (Write), r (Read), s (Send)
 *   --x-bad-rkey       server: RDMA-Read the client's start buffer with a corrupted STag (a
 *                      protection error we commit against the peer: its Terminate comes back)
 *   --x-bad-sink       client: advertise the sink buffer with a corrupted STag (the server's
 *                      RDMA Write hits an invalid STag here: we send the Terminate)
 *   --x-atomic         client: enable RFC 7306 atomics on the connection and, once it is up,
 *                      probe the peer as RFC 7306 §1.1 suggests: a FetchAdd of 0 (to STag 0:
 *                      rping advertises no buffer to its client). A peer without atomics
 *                      (siw) answers with a Terminate, which is reported (the FetchAdd's
 *                      completion and the async event, with the cause) and ends the run with
 *                      exit 1; a peer with them answers, and the pings follow
 *   --x-audit          account for every WR: each must complete (success, error or flush)
 *                      exactly once by the end, and every destroy must succeed; prints an
 *                      "audit:" line, and the exit status is 0 iff the audit passed, whatever
 *                      happened to the connection (for tests that end connections abruptly)
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
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

#include "cli.h"
#include "cli_opts.h"
#include "iwarp/iwarp.h"

#define PING_PORT      7174u  /* rping's default port */
#define PING_SIZE      64u    /* rping's default -S */
#define PING_MIN_SIZE  26u    /* rping: sizeof "2147483647" + sizeof "rdma-ping-%d: " */
#define PING_MAX_SIZE  65535u /* rping: RPING_BUFSIZE - 1 */
#define INFO_LEN       16u    /* the advertisement: be64 buf, be32 rkey, be32 size */
#define SQ_DEPTH       16u    /* rping's RPING_SQ_DEPTH */
#define RQ_DEPTH       2u
#define CQ_DEPTH       (2 * SQ_DEPTH)
#define MAX_SESSIONS   64
#define AUDIT_SLOTS    64          /* --x-audit: outstanding WRs tracked */
#define BAD_STAG_XOR   0x5a5a5a00u /* --x-bad-rkey/--x-bad-sink: corrupts the STag index */
#define RESOLVE_MS     2000        /* rping's rdma_resolve_addr/route timeouts */
#define DISCONNECT_MS  10000
#define RETRY_PAUSE_MS 200
#define LETTER_FIRST   65  /* 'A' */
#define LETTER_LAST    122 /* 'z' */
#define LETTER_COUNT   (LETTER_LAST - LETTER_FIRST + 1)

struct opts {
    bool server, client, persistent, validate, crc, ipv6;
    bool sctp;         /* --transport sctp: DDP over SCTP (IWARP_PS_SCTP) */
    uint32_t sctp_mtu; /* --sctp-mtu; 0: the library's default (1500) */
    bool x_markers, x_markers_fallback, x_bad_rkey, x_bad_sink, x_atomic,
        x_audit;   /* hidden test options (see above) */
    uint8_t x_p2p; /* IWARP_CM_RTR_* offered; 0: no P2P */
    int verbose, debug;
    long count; /* 0: forever */
    uint32_t size;
    unsigned port;
    int first_delay_ms, retry_s;
    const char *addr_arg, *src_arg, *pcap;
    struct sockaddr_storage addr, src;
    bool have_src;
};

enum phase {
    PH_FREE,       /* slot unused */
    PH_SETUP,      /* client: resolving and connecting; server: accepting (set up) */
    PH_START_ADV,  /* client: start buffer advertised, waiting for the go-ahead */
    PH_SINK_ADV,   /* client: sink buffer advertised, waiting for the go-ahead */
    PH_WAIT_START, /* server: waiting for the start buffer's advertisement */
    PH_READING,    /* server: RDMA Read outstanding */
    PH_WAIT_SINK,  /* server: waiting for the sink buffer's advertisement */
    PH_WRITING,    /* server: RDMA Write outstanding */
    PH_CLOSING,    /* disconnect requested, waiting for DISCONNECTED */
};

enum { WR_SEND = 1, WR_RECV, WR_RDMA };

struct ping;

/* One connection: its CQ, QP (through the CM id), buffers and where it is in the loop. */
struct session {
    struct ping *p;
    struct iwarp_cm_id *id;
    struct iwarp_cq *cq;
    enum phase phase;
    long ping;      /* pings completed */
    bool send_busy; /* our Send is outstanding: send_buf is the HCA's */
    bool reply_in;  /* client: the go-ahead arrived */
    bool failed;    /* an error ends this session */
    bool cq_kick;   /* a CQ event arrived: re-arm and poll */
    uint64_t close_deadline;
    uint32_t read_len; /* server: octets of the last RDMA Read */
    uint8_t send_buf[INFO_LEN], recv_buf[INFO_LEN];
    uint8_t *start_buf, *rdma_buf;
    struct iwarp_mr *send_mr, *recv_mr, *start_mr, *rdma_mr;
};

struct ping {
    struct opts o;
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_comp_channel *comp;
    struct iwarp_pd *pd;
    struct iwarp_cm_id *listen;
    struct session s[MAX_SESSIONS];
    bool finished;
    int status; /* the exit status once finished */
    uint64_t retry_deadline;
    struct audit {                 /* --x-audit */
        uint64_t seq;              /* the last WR sequence number given out */
        uint64_t out[AUDIT_SLOTS]; /* outstanding WRs' wr_ids (0: free slot) */
        long posted, ok, failed, flushed, unknown, destroy_failed;
    } audit;
};

/* ---- --x-audit: every WR completes exactly once ----------------------------------------- */

/* A wr_id for a new WR of type (WR_*): a fresh sequence number above the type. */
static uint64_t audit_wr_id(struct ping *p, int type)
{
    return (++p->audit.seq << 8) | (uint64_t)type;
}

/* The WR wr_id was posted: it is outstanding until its completion. */
static void audit_posted(struct ping *p, uint64_t wr_id)
{
    p->audit.posted++;
    for (int i = 0; i < AUDIT_SLOTS; i++)
        if (!p->audit.out[i]) {
            p->audit.out[i] = wr_id;
            return;
        }
    p->audit.unknown++; /* more outstanding than the table holds: cannot be checked */
}

/* A completion: it must match an outstanding WR, which it retires. */
static void audit_completed(struct ping *p, const struct iwarp_wc *wc)
{
    if (wc->status == IWARP_WC_SUCCESS)
        p->audit.ok++;
    else if (wc->status == IWARP_WC_WR_FLUSH_ERR)
        p->audit.flushed++;
    else
        p->audit.failed++;
    for (int i = 0; i < AUDIT_SLOTS; i++)
        if (wc->wr_id && p->audit.out[i] == wc->wr_id) {
            p->audit.out[i] = 0;
            return;
        }
    p->audit.unknown++; /* a second completion, or one for a WR never posted */
}

/* A destroy's return code: count the failures. Returns rc. */
static int audit_destroy(struct ping *p, int rc)
{
    if (rc < 0)
        p->audit.destroy_failed++;
    return rc;
}

/* Prints the audit line; true if every WR completed exactly once and every destroy worked. */
static bool audit_report(const struct ping *p)
{
    const struct audit *a = &p->audit;
    long open = 0;
    for (int i = 0; i < AUDIT_SLOTS; i++)
        open += a->out[i] != 0;
    bool ok = open == 0 && a->unknown == 0 && a->destroy_failed == 0 &&
              a->ok + a->failed + a->flushed == a->posted;
    printf("audit: %ld WRs posted, %ld completed ok, %ld with an error, %ld flushed, %ld never "
           "completed, %ld unexpected completions, %ld failed destroys: %s\n",
           a->posted, a->ok, a->failed, a->flushed, open, a->unknown, a->destroy_failed,
           ok ? "PASS" : "FAIL");
    return ok;
}

/* ---- small helpers ---------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static void dbg(const struct ping *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void dbg(const struct ping *p, const char *fmt, ...)
{
    if (!p->o.debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

static int err(const char *what, int rc)
{
    fprintf(stderr, "iwarp ping: %s: %s\n", what, iwarp_strerror(rc));
    return rc;
}

static const char *role(const struct ping *p)
{
    return p->o.server ? "server" : "client";
}

static enum iwarp_port_space port_space(const struct ping *p)
{
    return p->o.sctp ? IWARP_PS_SCTP : IWARP_PS_TCP;
}

/* The address as text ("10.0.2.15", "::1") and its port. */
static void addr_str(const struct sockaddr_storage *a, char *buf, size_t len, unsigned *port)
{
    const void *in = a->ss_family == AF_INET6
                         ? (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr
                         : (const void *)&((const struct sockaddr_in *)a)->sin_addr;
    if (!inet_ntop(a->ss_family, in, buf, (socklen_t)len))
        snprintf(buf, len, "?");
    *port = ntohs(a->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
                                           : ((const struct sockaddr_in *)a)->sin_port);
}

/* ---- the data pattern (rping's client) ---------------------------------------------------- */

/* Ping N's start buffer: "rdma-ping-N: ", then letters from 'A' + N % 58 cycling through
 * 'A'..'z', the last octet NUL. size >= PING_MIN_SIZE, so the prefix always fits. */
static void fill_pattern(uint8_t *buf, uint32_t size, long ping)
{
    int n = snprintf((char *)buf, size, "rdma-ping-%ld: ", ping);
    int c = LETTER_FIRST + (int)(ping % LETTER_COUNT);
    for (uint32_t i = (uint32_t)n; i < size - 1; i++) {
        buf[i] = (uint8_t)c;
        c = c == LETTER_LAST ? LETTER_FIRST : c + 1;
    }
    buf[size - 1] = 0;
}

/* ---- posting ----------------------------------------------------------------------------- */

static int post_recv(struct session *s)
{
    struct iwarp_sge sge = {(uintptr_t)s->recv_buf, INFO_LEN, s->recv_mr->lkey};
    struct iwarp_recv_wr wr = {.wr_id = audit_wr_id(s->p, WR_RECV), .sg_list = &sge, .num_sge = 1};
    int rc = iwarp_post_recv(s->id->qp, &wr, NULL);
    if (rc < 0)
        return err("posting a receive", rc);
    audit_posted(s->p, wr.wr_id);
    return 0;
}

static int post_send(struct session *s)
{
    struct iwarp_sge sge = {(uintptr_t)s->send_buf, INFO_LEN, s->send_mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = audit_wr_id(s->p, WR_SEND),
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = IWARP_WR_SEND,
                               .send_flags = IWARP_SEND_SIGNALED};
    int rc = iwarp_post_send(s->id->qp, &wr, NULL);
    if (rc < 0)
        return err("posting a Send", rc);
    audit_posted(s->p, wr.wr_id);
    s->send_busy = true;
    return 0;
}

static int post_rdma(struct session *s, enum iwarp_wr_opcode op, uint64_t remote, uint32_t rkey,
                     uint32_t len)
{
    struct iwarp_sge sge = {(uintptr_t)s->rdma_buf, len, s->rdma_mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = audit_wr_id(s->p, WR_RDMA),
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = op,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    int rc = iwarp_post_send(s->id->qp, &wr, NULL);
    if (rc < 0)
        return err(op == IWARP_WR_RDMA_READ ? "posting the RDMA Read" : "posting the RDMA Write",
                   rc);
    audit_posted(s->p, wr.wr_id);
    return 0;
}

/* Client: advertise buf (start or sink) in a Send. */
static int advertise(struct session *s, const uint8_t *buf, const struct iwarp_mr *mr)
{
    uint32_t rkey = mr->rkey;
    if (s->p->o.x_bad_sink && buf == s->rdma_buf)
        rkey ^= BAD_STAG_XOR; /* --x-bad-sink: an STag no MR of ours has */
    put_be(s->send_buf, (uintptr_t)buf, 8);
    put_be(s->send_buf + 8, rkey, 4);
    put_be(s->send_buf + 12, s->p->o.size, 4);
    dbg(s->p, "RDMA addr %llx rkey %x len %u\n", (unsigned long long)(uintptr_t)buf, rkey,
        s->p->o.size);
    return post_send(s);
}

/* ---- session lifetime -------------------------------------------------------------------- */

static int session_alloc(struct ping *p, struct session *s)
{
    int rw = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE;
    uint32_t size = p->o.size;
    *s = (struct session){.p = p, .phase = PH_SETUP};
    int rc = iwarp_create_cq(p->ctx, CQ_DEPTH, s, p->comp, 0, &s->cq);
    if (rc < 0)
        return err("creating a CQ", rc);
    if ((rc = iwarp_req_notify_cq(s->cq, 0)) < 0)
        return err("arming the CQ", rc);
    s->rdma_buf = calloc(1, size);
    if (p->o.client)
        s->start_buf = calloc(1, size);
    if (!s->rdma_buf || (p->o.client && !s->start_buf))
        return err("allocating buffers", IWARP_ERR_NOMEM);
    if ((rc = iwarp_reg_mr(p->pd, s->send_buf, INFO_LEN, 0, &s->send_mr)) < 0 ||
        (rc = iwarp_reg_mr(p->pd, s->recv_buf, INFO_LEN, IWARP_ACCESS_LOCAL_WRITE, &s->recv_mr)) <
            0 ||
        (rc = iwarp_reg_mr(p->pd, s->rdma_buf, size, rw, &s->rdma_mr)) < 0 ||
        (p->o.client && (rc = iwarp_reg_mr(p->pd, s->start_buf, size, rw, &s->start_mr)) < 0))
        return err("registering buffers", rc);
    return 0;
}

static int create_qp(struct session *s)
{
    struct iwarp_qp_init_attr a = {.send_cq = s->cq,
                                   .recv_cq = s->cq,
                                   .cap = {.max_send_wr = SQ_DEPTH,
                                           .max_recv_wr = RQ_DEPTH,
                                           .max_send_sge = 1,
                                           .max_recv_sge = 1},
                                   .qp_type = IWARP_QPT_RC};
    if (s->p->o.x_atomic) {
        a.comp_mask = IWARP_QP_INIT_ATTR_RDMAP_EXT;
        a.rdmap_ext = IWARP_RDMAP_EXT_ATOMICS;
    }
    int rc = iwarp_cm_create_qp(s->id, s->p->pd, &a);
    return rc < 0 ? err("creating the QP", rc) : 0;
}

/* --x-atomic: the RFC 7306 §1.1 probe, a FetchAdd of 0; the original value lands in rdma_buf. */
static int post_atomic_probe(struct session *s)
{
    struct iwarp_sge sge = {(uintptr_t)s->rdma_buf, 8, s->rdma_mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = audit_wr_id(s->p, WR_RDMA),
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = IWARP_WR_ATOMIC_FETCH_AND_ADD,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.atomic.compare_add = 0;
    int rc = iwarp_post_send(s->id->qp, &wr, NULL);
    if (rc < 0)
        return err("posting the FetchAdd probe", rc);
    audit_posted(s->p, wr.wr_id);
    fprintf(stderr, "iwarp ping: atomic probe: FetchAdd of 0 posted (RFC 7306 §1.1)\n");
    return 0;
}

/* Take every pending CQ event off the channel, acknowledge it and mark its session. Runs
 * before a CQ is destroyed too (an event delivered must be acknowledged first). */
static void take_cq_events(struct ping *p)
{
    struct iwarp_cq *cq;
    void *ctx;
    while (iwarp_get_cq_event(p->comp, &cq, &ctx) == 0) {
        iwarp_ack_cq_events(cq, 1);
        ((struct session *)ctx)->cq_kick = true;
    }
}

/* Destroy the session's QP and CM id (the CQ and buffers stay, for a client's redial). */
static void drop_connection(struct session *s)
{
    if (!s->id)
        return;
    if (s->id->qp)
        iwarp_cm_destroy_qp(s->id);
    /* IWARP_ERR_BUSY while an event for it is still queued: run_cm destroys it then. */
    s->id->context_user = NULL;
    (void)iwarp_cm_destroy_id(s->id);
    s->id = NULL;
    take_cq_events(s->p);
    struct iwarp_wc wc;
    while (iwarp_poll_cq(s->cq, 1, &wc) > 0) /* the flushed WRs of the QP just destroyed */
        audit_completed(s->p, &wc);
    s->send_busy = s->reply_in = false;
}

static void session_free(struct session *s)
{
    drop_connection(s);
    struct iwarp_mr *mrs[] = {s->send_mr, s->recv_mr, s->rdma_mr, s->start_mr};
    for (size_t i = 0; i < sizeof mrs / sizeof mrs[0]; i++)
        if (mrs[i])
            audit_destroy(s->p, iwarp_dereg_mr(mrs[i]));
    if (s->cq) {
        take_cq_events(s->p);
        int rc = audit_destroy(s->p, iwarp_destroy_cq(s->cq));
        if (rc < 0)
            err("destroying a CQ", rc);
    }
    free(s->rdma_buf);
    free(s->start_buf);
    *s = (struct session){.phase = PH_FREE};
}

/* The session is over (DISCONNECTED, or its disconnect timed out): free it, and end the run
 * unless this is a persistent server. */
static void session_end(struct session *s)
{
    struct ping *p = s->p;
    bool ok = !s->failed;
    if (p->o.client && ok && p->o.count && s->ping < p->o.count) {
        fprintf(stderr, "iwarp ping: the connection ended after %ld of %ld pings\n", s->ping,
                p->o.count);
        ok = false;
    }
    dbg(p, "%s: %ld pings of %u octets done\n", role(p), s->ping, p->o.size);
    session_free(s);
    if (!p->o.persistent) {
        p->finished = true;
        p->status = ok ? 0 : 1;
    }
}

/* Begin the end: a graceful disconnect (RFC 5040 §6: the stream closes after the posted work),
 * then DISCONNECTED ends the session; after DISCONNECT_MS it ends anyway. */
static void session_close(struct session *s, bool failed)
{
    s->failed |= failed;
    if (s->phase == PH_CLOSING)
        return;
    s->phase = PH_CLOSING;
    s->close_deadline = now_ms() + DISCONNECT_MS;
    if (!s->id || iwarp_cm_disconnect(s->id) < 0)
        s->close_deadline = 0; /* nothing to wait for */
}

static void session_fail(struct session *s)
{
    session_close(s, true);
}

/* ---- the client ------------------------------------------------------------------------ */

static void client_start_ping(struct session *s)
{
    fill_pattern(s->start_buf, s->p->o.size, s->ping);
    memset(s->rdma_buf, 0, s->p->o.size);
    s->phase = PH_START_ADV;
    if (advertise(s, s->start_buf, s->start_mr) < 0)
        session_fail(s);
}

/* The go-ahead for the current advertisement arrived and our Send completed: next step. */
static void client_step(struct session *s)
{
    struct ping *p = s->p;
    if (s->send_busy || !s->reply_in)
        return;
    s->reply_in = false;
    if (s->phase == PH_START_ADV) {
        s->phase = PH_SINK_ADV;
        if (advertise(s, s->rdma_buf, s->rdma_mr) < 0)
            session_fail(s);
        return;
    }
    /* PH_SINK_ADV: the server has written the ping back into our sink. */
    if (p->o.validate && memcmp(s->start_buf, s->rdma_buf, p->o.size) != 0) {
        uint32_t at = 0;
        while (s->start_buf[at] == s->rdma_buf[at])
            at++;
        fprintf(stderr, "iwarp ping: data mismatch in ping %ld at octet %u\n", s->ping, at);
        session_fail(s);
        return;
    }
    if (p->o.verbose)
        printf("ping data: %.*s\n", (int)strnlen((char *)s->rdma_buf, p->o.size), s->rdma_buf);
    s->ping++;
    if (p->o.count && s->ping == p->o.count)
        session_close(s, false);
    else
        client_start_ping(s);
}

/* Client: the server's go-ahead (its content is not used, as in rping). */
static void client_recv(struct session *s)
{
    if ((s->phase != PH_START_ADV && s->phase != PH_SINK_ADV) || s->reply_in) {
        fprintf(stderr, "iwarp ping: unexpected Send from the server\n");
        session_fail(s);
        return;
    }
    s->reply_in = true;
}

static int client_dial(struct ping *p, struct session *s)
{
    int rc = iwarp_cm_create_id(p->ch, &s->id, s, port_space(p));
    if (rc < 0)
        return err("creating a CM id", rc);
    rc = iwarp_cm_resolve_addr(s->id, p->o.have_src ? (struct sockaddr *)&p->o.src : NULL,
                               (struct sockaddr *)&p->o.addr, RESOLVE_MS);
    return rc < 0 ? err("resolving the address", rc) : 0;
}

static int client_connect(struct ping *p, struct session *s)
{
    if (create_qp(s) < 0 || post_recv(s) < 0)
        return -1;
    struct iwarp_conn_param cp = {.responder_resources = 1,
                                  .initiator_depth = 1,
                                  .mpa_rev = 2,
                                  .crc = p->o.crc,
                                  .markers = p->o.x_markers,
                                  .markers_fallback = p->o.x_markers_fallback,
                                  .peer_to_peer = p->o.x_p2p != 0,
                                  .rtr_types = p->o.x_p2p};
    /* With peer-to-peer the first FPDU is the library's RTR, sent right after the Reply: the
     * library holds it (--first-delay's siw race); otherwise the sleep after ESTABLISHED
     * holds our first Send. */
    if (cp.peer_to_peer)
        cp.first_fpdu_delay_ms =
            (uint16_t)(p->o.first_delay_ms > 60000 ? 60000 : p->o.first_delay_ms);
    int rc = iwarp_cm_connect(s->id, &cp);
    return rc < 0 ? err("connecting", rc) : 0;
}

/* A failed connection attempt: dial again while --retry allows, else give up. */
static void client_retry(struct ping *p, struct session *s, enum iwarp_cm_event_type t, int st)
{
    fprintf(stderr, "iwarp ping: cm event %s, error %d (%s)\n", iwarp_cm_event_str(t), st,
            iwarp_strerror(st));
    drop_connection(s);
    if (now_ms() < p->retry_deadline) {
        sleep_ms(RETRY_PAUSE_MS);
        if (client_dial(p, s) == 0)
            return;
    }
    s->failed = true;
    session_end(s);
}

/* ---- the server ------------------------------------------------------------------------- */

/* Server: the client's advertisement (start or sink buffer). */
static void server_recv(struct session *s)
{
    struct ping *p = s->p;
    uint64_t addr = get_be(s->recv_buf, 8);
    uint32_t rkey = (uint32_t)get_be(s->recv_buf + 8, 4);
    uint32_t len = (uint32_t)get_be(s->recv_buf + 12, 4);
    dbg(p, "Received rkey %x addr %llx len %u from peer\n", rkey, (unsigned long long)addr, len);
    if (s->phase == PH_WAIT_START) {
        if (len > p->o.size) {
            fprintf(stderr,
                    "iwarp ping: the client's buffer of %u octets is larger than this server's "
                    "-S %u\n",
                    len, p->o.size);
            session_fail(s);
            return;
        }
        s->read_len = len;
        s->phase = PH_READING;
        if (p->o.x_bad_rkey)
            rkey ^= BAD_STAG_XOR; /* --x-bad-rkey: a protection error against the client */
        if (post_rdma(s, IWARP_WR_RDMA_READ, addr, rkey, len) < 0) {
            session_fail(s);
            return;
        }
        dbg(p, "server posted rdma read req\n");
    } else if (s->phase == PH_WAIT_SINK) {
        /* rping writes back the string read and its NUL; never more than was read. */
        uint32_t wlen = (uint32_t)strnlen((char *)s->rdma_buf, s->read_len) + 1;
        if (wlen > s->read_len)
            wlen = s->read_len;
        if (wlen > len) {
            fprintf(stderr, "iwarp ping: the client's sink of %u octets cannot take %u\n", len,
                    wlen);
            session_fail(s);
            return;
        }
        s->phase = PH_WRITING;
        dbg(p, "rdma write from lkey %x laddr %llx len %u\n", s->rdma_mr->lkey,
            (unsigned long long)(uintptr_t)s->rdma_buf, wlen);
        if (post_rdma(s, IWARP_WR_RDMA_WRITE, addr, rkey, wlen) < 0)
            session_fail(s);
    } else {
        fprintf(stderr, "iwarp ping: unexpected Send from the client\n");
        session_fail(s);
    }
}

static void server_go_ahead(struct session *s, enum phase next)
{
    s->phase = next;
    if (post_send(s) < 0) {
        session_fail(s);
        return;
    }
    dbg(s->p, "server posted go ahead\n");
}

static void server_read_done(struct session *s)
{
    struct ping *p = s->p;
    if (s->phase != PH_READING)
        return;
    dbg(p, "server received read complete\n");
    if (p->o.verbose)
        printf("server ping data: %.*s\n", (int)strnlen((char *)s->rdma_buf, s->read_len),
               s->rdma_buf);
    server_go_ahead(s, PH_WAIT_SINK);
}

static void server_write_done(struct session *s)
{
    if (s->phase != PH_WRITING)
        return;
    dbg(s->p, "server rdma write complete\n");
    s->ping++;
    server_go_ahead(s, PH_WAIT_START);
}

static struct session *free_slot(struct ping *p)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (p->s[i].phase == PH_FREE)
            return &p->s[i];
    return NULL;
}

static void server_connect_request(struct ping *p, struct iwarp_cm_id *id)
{
    struct session *s = free_slot(p);
    bool busy = !s || (!p->o.persistent && s != &p->s[0]);
    if (busy) {
        fprintf(stderr, "iwarp ping: rejecting a connection: %s\n",
                p->o.persistent ? "too many clients" : "already serving one (use -P)");
        iwarp_cm_reject(id, NULL, 0);
        (void)iwarp_cm_destroy_id(id); /* BUSY: run_cm destroys it after its last event */
        return;
    }
    dbg(p, "accepting client connection request\n");
    if (session_alloc(p, s) < 0)
        goto fail;
    s->id = id;
    id->context_user = s;
    if (create_qp(s) < 0 || post_recv(s) < 0)
        goto fail;
    struct iwarp_conn_param cp = {
        .responder_resources = 1, .initiator_depth = 1, .mpa_rev = 2, .crc = p->o.crc};
    int rc = iwarp_cm_accept(id, &cp);
    if (rc < 0) {
        err("accepting", rc);
        goto fail;
    }
    s->phase = PH_WAIT_START; /* the first Send may complete before ESTABLISHED is seen */
    return;
fail:
    if (!s->id) {
        iwarp_cm_reject(id, NULL, 0);
        (void)iwarp_cm_destroy_id(id);
    }
    s->failed = true;
    session_end(s);
}

/* ---- events ------------------------------------------------------------------------------ */

static void on_wc(struct session *s, const struct iwarp_wc *wc)
{
    struct ping *p = s->p;
    audit_completed(p, wc);
    if (wc->status != IWARP_WC_SUCCESS) {
        if (wc->status == IWARP_WC_WR_FLUSH_ERR) /* the connection is going: as rping */
            return;
        fprintf(stderr, "iwarp ping: cq completion failed: %s (Terminate cause %06x)\n",
                iwarp_wc_status_str(wc->status), wc->vendor_err);
        session_fail(s);
        return;
    }
    if (s->phase == PH_CLOSING)
        return;
    switch (wc->opcode) {
    case IWARP_WC_SEND:
        dbg(p, "send completion\n");
        s->send_busy = false;
        break;
    case IWARP_WC_RDMA_READ:
        dbg(p, "rdma read completion\n");
        server_read_done(s);
        break;
    case IWARP_WC_RDMA_WRITE:
        dbg(p, "rdma write completion\n");
        server_write_done(s);
        break;
    case IWARP_WC_FETCH_ADD: /* --x-atomic: the peer has RFC 7306 atomics */
        fprintf(stderr, "iwarp ping: atomic probe: the peer answered (RFC 7306 atomics)\n");
        return;
    case IWARP_WC_RECV:
        dbg(p, "recv completion\n");
        if (wc->byte_len != INFO_LEN) {
            fprintf(stderr, "iwarp ping: received bogus data, size %u\n", wc->byte_len);
            session_fail(s);
            return;
        }
        if (p->o.server)
            server_recv(s); /* reads recv_buf before it is posted again */
        else
            client_recv(s);
        if (s->phase != PH_CLOSING && post_recv(s) < 0)
            session_fail(s);
        break;
    default:
        fprintf(stderr, "iwarp ping: unexpected completion opcode %d\n", (int)wc->opcode);
        session_fail(s);
        return;
    }
    if (p->o.client && s->phase != PH_CLOSING)
        client_step(s);
}

/* Take and handle every completion in s's CQ. */
static void drain_cq(struct session *s)
{
    struct iwarp_wc wc;
    int rc = 0;
    while (s->phase != PH_FREE && (rc = iwarp_poll_cq(s->cq, 1, &wc)) > 0)
        on_wc(s, &wc);
    if (rc < 0) {
        err("polling the CQ", rc);
        session_fail(s);
    }
}

/* Re-arm and drain the CQs that had an event. */
static void run_cqs(struct ping *p)
{
    for (int i = 0; i < MAX_SESSIONS; i++) {
        struct session *s = &p->s[i];
        if (s->phase == PH_FREE || !s->cq_kick)
            continue;
        s->cq_kick = false;
        int rc = iwarp_req_notify_cq(s->cq, 0);
        if (rc < 0) {
            err("arming the CQ", rc);
            session_fail(s);
        }
        drain_cq(s);
    }
}

static struct session *session_of_qp(struct ping *p, const struct iwarp_qp *qp)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (p->s[i].phase != PH_FREE && p->s[i].id && p->s[i].id->qp == qp)
            return &p->s[i];
    return NULL;
}

/* Async errors: a Terminate sent or received, with its RFC 5040 §7.4 cause. */
static void run_async(struct ping *p)
{
    struct iwarp_async_event ev;
    while (iwarp_get_async_event(p->ctx, &ev) == 0) {
        if (ev.term_cause || ev.term_from_peer)
            fprintf(stderr, "iwarp ping: async event %s (Terminate cause %06x%s)\n",
                    iwarp_event_type_str(ev.event_type), ev.term_cause,
                    ev.term_from_peer ? ", from the peer" : "");
        else
            fprintf(stderr, "iwarp ping: async event %s (the connection failed)\n",
                    iwarp_event_type_str(ev.event_type));
        struct session *s =
            ev.event_type == IWARP_EVENT_COMM_EST ? NULL : session_of_qp(p, ev.element.qp);
        iwarp_ack_async_event(&ev);
        if (s) {
            /* the completions the error came with are reported before the session ends: the
             * DISCONNECTED that follows may free it before its CQ's own event is handled */
            drain_cq(s);
            session_fail(s);
        }
    }
}

/* DISCONNECTED: report what the connection left before session_end destroys its QP. poll()
 * looked at the fds a moment ago; a Terminate's async event and error completion, queued before
 * this event (after the Terminate the stream closes, RFC 5040 §5.4), may have come since.
 * Destroying the QP discards its unread async events (as ib_uverbs does), and drop_connection
 * only audits the completions. The connection is gone: nothing more is posted, so the session
 * closes first and only errors are reported. */
static void session_catch_up(struct session *s)
{
    s->phase = PH_CLOSING;
    s->close_deadline = 0;
    run_async(s->p);
    drain_cq(s);
}

static void on_established(struct ping *p, struct session *s, const struct iwarp_conn_param *cp)
{
    if (p->o.sctp)
        dbg(p, "DDP over SCTP: IRD %u ORD %u\n", cp->responder_resources, cp->initiator_depth);
    else
        dbg(p, "MPA: rev %u, CRC %s, markers %s, IRD %u ORD %u%s\n", cp->mpa_rev,
            cp->crc ? "on" : "off", cp->markers ? "on" : "off", cp->responder_resources,
            cp->initiator_depth,
            !cp->peer_to_peer                     ? ""
            : cp->rtr_types == IWARP_CM_RTR_WRITE ? ", peer-to-peer, Write RTR"
            : cp->rtr_types == IWARP_CM_RTR_READ  ? ", peer-to-peer, Read RTR"
            : cp->rtr_types == IWARP_CM_RTR_SEND  ? ", peer-to-peer, Send RTR"
                                                  : ", peer-to-peer");
    if (p->o.server)
        return; /* the server moves when the first advertisement arrives */
    dbg(p, "rdma_connect successful\n");
    if (p->o.first_delay_ms)
        sleep_ms(p->o.first_delay_ms);
    if (p->o.x_atomic && post_atomic_probe(s) < 0) {
        session_fail(s);
        return;
    }
    if (p->o.count == 0 || s->ping < p->o.count)
        client_start_ping(s);
    else
        session_close(s, false);
}

static void run_cm(struct ping *p)
{
    struct iwarp_cm_event *ev;
    while (iwarp_cm_get_event_timeout(p->ch, &ev, 0) == 0) {
        enum iwarp_cm_event_type t = ev->event;
        int st = ev->status;
        struct iwarp_cm_id *id = ev->id;
        struct iwarp_conn_param cp = ev->param;
        bool child = id != p->listen && p->o.server;
        iwarp_cm_ack_event(ev);
        struct session *s = t == IWARP_CM_EVENT_CONNECT_REQUEST ? NULL : id->context_user;
        dbg(p, "cma_event type %s cma_id %p (%s)\n", iwarp_cm_event_str(t), (void *)id,
            child ? "child" : "parent");
        if (!s && t != IWARP_CM_EVENT_CONNECT_REQUEST && id != p->listen) {
            (void)iwarp_cm_destroy_id(id); /* a dropped connection's last event */
            continue;
        }
        switch (t) {
        case IWARP_CM_EVENT_ADDR_RESOLVED: {
            int rc = iwarp_cm_resolve_route(id, RESOLVE_MS);
            if (rc < 0)
                client_retry(p, s, IWARP_CM_EVENT_ROUTE_ERROR, rc);
            break;
        }
        case IWARP_CM_EVENT_ROUTE_RESOLVED:
            if (client_connect(p, s) < 0) {
                s->failed = true;
                drop_connection(s);
                session_end(s);
            }
            break;
        case IWARP_CM_EVENT_CONNECT_REQUEST:
            server_connect_request(p, id);
            break;
        case IWARP_CM_EVENT_ESTABLISHED:
            if (s)
                on_established(p, s, &cp);
            break;
        case IWARP_CM_EVENT_DISCONNECTED:
            if (s)
                session_catch_up(s);
            fprintf(stderr, "%s DISCONNECT EVENT...\n", role(p));
            if (s)
                session_end(s);
            break;
        case IWARP_CM_EVENT_ADDR_ERROR:
        case IWARP_CM_EVENT_ROUTE_ERROR:
        case IWARP_CM_EVENT_CONNECT_ERROR:
        case IWARP_CM_EVENT_UNREACHABLE:
        case IWARP_CM_EVENT_REJECTED:
            if (s && p->o.client && s->phase == PH_SETUP) {
                client_retry(p, s, t, st);
            } else if (s) {
                fprintf(stderr, "iwarp ping: cm event %s, error %d (%s)\n", iwarp_cm_event_str(t),
                        st, iwarp_strerror(st));
                s->failed = true;
                session_end(s);
            }
            break;
        default:
            fprintf(stderr, "iwarp ping: unhandled event: %s, ignoring\n", iwarp_cm_event_str(t));
            break;
        }
    }
}

/* Sessions whose disconnect did not complete in time end anyway. Returns the poll timeout. */
static int run_deadlines(struct ping *p)
{
    int timeout = -1;
    uint64_t now = now_ms();
    for (int i = 0; i < MAX_SESSIONS; i++) {
        struct session *s = &p->s[i];
        if (s->phase != PH_CLOSING)
            continue;
        if (now >= s->close_deadline) {
            if (s->close_deadline)
                fprintf(stderr, "iwarp ping: no DISCONNECTED within %d ms\n", DISCONNECT_MS);
            /* A session with nothing to wait for (its disconnect failed: a Terminate already
             * ended the connection) ends at once: first the async event that Terminate queued
             * with its error completion, which destroying the QP would discard (interop.siw_scen
             * bad-rkey missed siw's cause when the error completion was handled first). */
            run_async(p);
            session_end(s);
        } else {
            uint64_t left = s->close_deadline - now;
            if (timeout < 0 || left < (uint64_t)timeout)
                timeout = (int)left;
        }
    }
    return timeout;
}

/* Whether a CQ event was taken off the channel (by take_cq_events while a session was freed)
 * and its CQ is not yet polled: then poll() must not wait. */
static bool kick_pending(const struct ping *p)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (p->s[i].phase != PH_FREE && p->s[i].cq_kick)
            return true;
    return false;
}

static void event_loop(struct ping *p)
{
    while (!p->finished) {
        int timeout = run_deadlines(p);
        if (p->finished)
            break;
        if (kick_pending(p))
            timeout = 0;
        struct pollfd fds[3] = {{.fd = p->ch->fd, .events = POLLIN},
                                {.fd = p->comp->fd, .events = POLLIN},
                                {.fd = iwarp_async_fd(p->ctx), .events = POLLIN}};
        if (poll(fds, 3, timeout) < 0)
            continue; /* EINTR */
        if (fds[2].revents)
            run_async(p);
        if (fds[1].revents)
            take_cq_events(p);
        run_cqs(p);
        if (fds[0].revents)
            run_cm(p);
    }
}

/* ---- setup and options ---------------------------------------------------------------------- */

static int setup(struct ping *p)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.trace_pcap = p->o.pcap;
    a.sctp_mtu = p->o.sctp_mtu;
    int rc = iwarp_ctx_create(&a, &p->ctx);
    if (rc < 0)
        return err("creating the context", rc);
    if ((rc = iwarp_cm_create_channel(p->ctx, &p->ch)) < 0)
        return err("creating the CM channel", rc);
    if ((rc = iwarp_create_comp_channel(p->ctx, &p->comp)) < 0)
        return err("creating the completion channel", rc);
    int fl = fcntl(p->comp->fd, F_GETFL);
    if (fl < 0 || fcntl(p->comp->fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return err("making the completion channel non-blocking", IWARP_ERR_IO);
    if ((rc = iwarp_alloc_pd(p->ctx, &p->pd)) < 0)
        return err("allocating the PD", rc);
    dbg(p, "created pd %p\n", (void *)p->pd);
    return 0;
}

static void set_port(struct sockaddr_storage *a, unsigned port);

static int start_server(struct ping *p)
{
    char host[INET6_ADDRSTRLEN];
    unsigned port;
    int rc = iwarp_cm_create_id(p->ch, &p->listen, NULL, port_space(p));
    if (rc < 0)
        return err("creating a CM id", rc);
    addr_str(&p->o.addr, host, sizeof host, &port);
    if ((rc = iwarp_cm_bind_addr(p->listen, (struct sockaddr *)&p->o.addr)) < 0) {
        fprintf(stderr, "iwarp ping: binding %s port %u: %s\n", host, port, iwarp_strerror(rc));
        return rc;
    }
    rc = iwarp_cm_listen(p->listen, 3);
    if (rc < 0 && !p->o.addr_arg && p->o.addr.ss_family == AF_INET6) {
        /* no IPv6 on this system: IPv4's wildcard, as rping */
        (void)iwarp_cm_destroy_id(p->listen);
        p->listen = NULL;
        memset(&p->o.addr, 0, sizeof p->o.addr);
        p->o.addr.ss_family = AF_INET;
        set_port(&p->o.addr, p->o.port);
        return start_server(p);
    }
    if (rc < 0)
        return err("listening", rc);
    dbg(p, "listening on %s port %u\n", host, port);
    return 0;
}

static void teardown(struct ping *p)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (p->s[i].phase != PH_FREE)
            session_free(&p->s[i]);
    struct iwarp_cm_event *ev;
    while (p->ch && iwarp_cm_get_event_timeout(p->ch, &ev, 0) == 0) {
        struct iwarp_cm_id *id = ev->id;
        bool request = ev->event == IWARP_CM_EVENT_CONNECT_REQUEST;
        iwarp_cm_ack_event(ev);
        if (request)
            iwarp_cm_reject(id, NULL, 0);
        if (id != p->listen)
            (void)iwarp_cm_destroy_id(id);
    }
    if (p->listen)
        audit_destroy(p, iwarp_cm_destroy_id(p->listen));
    if (p->pd)
        audit_destroy(p, iwarp_dealloc_pd(p->pd));
    if (p->comp)
        audit_destroy(p, iwarp_destroy_comp_channel(p->comp));
    if (p->ch)
        audit_destroy(p, iwarp_cm_destroy_channel(p->ch));
    if (p->ctx && audit_destroy(p, iwarp_ctx_destroy(p->ctx)) < 0)
        fprintf(stderr, "iwarp ping: iwarp_ctx_destroy: an object was left\n");
}

/* --x-p2p: the RTR types in a string of w (Write), r (Read), s (Send); at least one. */
static int parse_p2p(const char *arg, void *field)
{
    uint8_t types = 0;
    for (const char *t = arg; *t; t++)
        if (*t == 'w')
            types |= IWARP_CM_RTR_WRITE;
        else if (*t == 'r')
            types |= IWARP_CM_RTR_READ;
        else if (*t == 's')
            types |= IWARP_CM_RTR_SEND;
        else
            return -1;
    memcpy(field, &types, sizeof types);
    return types ? 0 : -1;
}

#define AT(field) CLI_AT(struct opts, field)

/* The options and their --help, in --help's order; the --x-* ones are hidden (see the top). */
static const struct cli_opt rows[] = {
    {CLI_LINE("\noptions (rping's):")},
    {CLI_OPTION(CLI_FLAG, "server", 's', NULL), AT(server),
     .help = "server side; serves one client, then exits (see -P)"},
    {CLI_OPTION(CLI_FLAG, "client", 'c', NULL), AT(client), .help = "client side"},
    {CLI_OPTION(CLI_STR, "addr", 'a', "ADDR"), AT(addr_arg),
     .help = "server: address to listen on (default ::, IPv4 and IPv6\n"
             "clients alike; 0.0.0.0 on a system without IPv6); client:\n"
             "the server's address. IPv4, IPv6 or a name"},
    {CLI_OPTION(CLI_STR, "source", 'I', "ADDR"), AT(src_arg),
     .help = "client: local address to connect from"},
    {CLI_OPTION(CLI_UINT, "port", 'p', "PORT"), AT(port), CLI_RANGE(1, 65535), .def = PING_PORT,
     .err = "invalid port '{arg}' ({min}..{max})",
     .help = "TCP port; with --transport sctp the UDP port SCTP runs\n"
             "over (RFC 6951) (default {def})"},
    {CLI_OPTION(CLI_UINT, "count", 'C', "N"), AT(count), CLI_RANGE(0, 0x7fffffff),
     .err = "invalid count '{arg}' ({min}..{max}; 0: forever)",
     .help = "client: pings to do (default 0: until interrupted); the\n"
             "server, as rping's, serves until the client disconnects"},
    {CLI_OPTION(CLI_UINT, "size", 'S', "N"), AT(size), CLI_RANGE(PING_MIN_SIZE, PING_MAX_SIZE),
     .def = PING_SIZE, .err = "invalid size '{arg}' (valid range is {min} to {max})",
     .help = "ping size in octets, {min}..{max} (default {def}); a server reads\n"
             "at most its own -S"},
    {CLI_OPTION(CLI_COUNT, "verbose", 'v', NULL), AT(verbose),
     .help = "print the data: \"ping data: ...\" (client), \"server ping\n"
             "data: ...\" (server)"},
    {CLI_OPTION(CLI_FLAG, "validate", 'V', NULL), AT(validate),
     .help = "client: check that what came back is what was sent"},
    {CLI_OPTION(CLI_COUNT, "debug", 'd', NULL), AT(debug),
     .help = "trace every step (CM events, advertisements, completions)"},
    {CLI_OPTION(CLI_FLAG, "persistent", 'P', NULL), AT(persistent),
     .help = "server: serve clients (several at once) until killed"},
    {CLI_OPTION(CLI_IGNORE, NULL, 'q', NULL),
     .help = "accepted for rping compatibility (the QP is always the CM's)"},
    {CLI_LINE("options (libiwarp's):")},
    {CLI_TRANSPORT(struct opts, sctp), .err = "invalid --transport '{arg}' (tcp or sctp)",
     .help = "lower layer (default tcp: MPA over TCP, as rping). sctp:\n"
             "DDP over SCTP (RFC 5043, RFC 6581 §7) on usrsctp over UDP,\n"
             "libiwarp to libiwarp; give it to the server and the client\n"
             "alike. There is no MPA over SCTP, so --crc and --no-crc are\n"
             "refused with it (exit 2); SCTP's CRC32c checks every packet"},
    {CLI_SCTP_MTU(struct opts, sctp_mtu), .err = "invalid --sctp-mtu '{arg}' ({min}..{max})",
     .help = "with --transport sctp: the network MTU the packets mimic,\n"
             "{min}..{max} (default 1500; IPv6 needs at least 616); DDP\n"
             "segments are sized so that nothing fragments"},
    {CLI_CRC(struct opts, crc), .help =
                                    "ask for MPA CRC32C or not (RFC 5044 §4.4; default off, as\n"
                                    "rping on siw)"},
    {CLI_NO_CRC(struct opts, crc)},
    {CLI_IPV6(struct opts, ipv6), .help =
                                      "IPv6: the client resolves -a to an IPv6 address; a server\n"
                                      "without -a listens on :: with or without it"},
    {CLI_OPTION(CLI_UINT, "first-delay", 0, "MS"), AT(first_delay_ms), CLI_RANGE(0, 600000),
     .err = "invalid --first-delay '{arg}' ({min}..{max} ms)",
     .help = "client: wait MS ms after ESTABLISHED before the first Send.\n"
             "siw 6.1 as responder sends its MPA Reply before it installs\n"
             "its socket callbacks; an FPDU arriving in between can stall"},
    {CLI_OPTION(CLI_UINT, "retry", 0, "SECS"), AT(retry_s), CLI_RANGE(0, 86400),
     .err = "invalid --retry '{arg}' ({min}..{max} s)",
     .help = "client: redial a refused or dropped connection attempt for\n"
             "up to SECS seconds (a listener that is not up yet)"},
    {CLI_TRACE(struct opts, pcap), .help =
                                       "record the connection's MPA stream (SCTP: its packets in\n"
                                       "UDP) to FILE.pcap (default $IWARP_PCAP)"},
    {CLI_TRACE_OLD(struct opts, pcap)},
    {CLI_HELP_ROW},
    {CLI_OPTION(CLI_FLAG, "x-markers", 0, NULL), AT(x_markers)},
    {CLI_OPTION(CLI_FLAG, "x-markers-fallback", 0, NULL), AT(x_markers_fallback)},
    {CLI_OPTION(CLI_FN, "x-p2p", 0, "TYPES"), AT(x_p2p), .fn = parse_p2p,
     .err = "invalid --x-p2p '{arg}' (w, r, s)"},
    {CLI_OPTION(CLI_FLAG, "x-bad-rkey", 0, NULL), AT(x_bad_rkey)},
    {CLI_OPTION(CLI_FLAG, "x-bad-sink", 0, NULL), AT(x_bad_sink)},
    {CLI_OPTION(CLI_FLAG, "x-atomic", 0, NULL), AT(x_atomic)},
    {CLI_OPTION(CLI_FLAG, "x-audit", 0, NULL), AT(x_audit)},
};

static void usage(FILE *out);
static const struct cli_spec spec =
    CLI_SPEC("iwarp ping", "Try `iwarp ping --help`.", usage, 22, rows);

static void usage(FILE *out)
{
    fputs("usage: iwarp ping -s [-vVdP] [-S size] [-C count] [-a addr] [-p port] [OPTIONS]\n"
          "       iwarp ping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port] "
          "[OPTIONS]\n\n"
          "rping (rdma-core) over libiwarp: the client advertises its start buffer in a Send,\n"
          "the server RDMA-Reads it and answers with a Send; the client advertises its sink\n"
          "buffer, the server RDMA-Writes the data back and answers again. Interoperates with\n"
          "rping on any iWARP device (e.g. Linux siw) in either role.\n",
          out);
    cli_help(&spec, out);
    fputs("\nExit status: 0 when every ping completed (and verified, with -V) and the connection\n"
          "closed; 1 on a connection failure, an error completion, a Terminate, a data\n"
          "mismatch or a connection that ended early; 2 for bad options. A server serves\n"
          "as many pings as the client asks for, so it cannot tell a client that was done\n"
          "from one killed between two pings with nothing left unread: both close the\n"
          "connection gracefully (exit 0). A client killed with data still unread resets it\n"
          "(exit 1).\n",
          out);
}

/* name (an address or a host name; v6: IPv6 only) into out. 0, or -1 after a message. */
static int resolve(const char *name, bool v6, struct sockaddr_storage *out)
{
    struct addrinfo hints = {.ai_family = v6 ? AF_INET6 : AF_UNSPEC, .ai_socktype = SOCK_STREAM},
                    *res;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "iwarp ping: %s: %s (invalid host name or IP address)\n", name,
                gai_strerror(rc));
        return -1;
    }
    bool ok = res->ai_family == AF_INET || res->ai_family == AF_INET6;
    if (ok)
        memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (!ok)
        cli_error(&spec, "%s: not an IPv4 or IPv6 address", name);
    return ok ? 0 : -1;
}

static void set_port(struct sockaddr_storage *a, unsigned port)
{
    if (a->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)a)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)a)->sin_port = htons((uint16_t)port);
}

/* Returns 0 to run, 1 after --help, 2 after a usage error was printed. */
static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.size = PING_SIZE, .port = PING_PORT};
    struct cli_result r;
    int rc = cli_parse(&spec, argc, argv, o, &r);
    if (rc != CLI_PARSE_OK)
        return rc;
    if (o->x_markers_fallback)
        o->x_markers = true;
    if (r.first_arg < argc)
        return cli_error(&spec, "unexpected argument '%s'", argv[r.first_arg]);
    if (o->server == o->client)
        return cli_error(&spec, "%s",
                         o->server ? "-s and -c exclude each other"
                                   : "one of -s (server) or -c (client) is needed");
    if (o->client && !o->addr_arg)
        return cli_error(&spec, "%s", "the client needs the server's address (-a ADDR)");
    if (o->server && (o->src_arg || o->first_delay_ms || o->retry_s))
        return cli_error(&spec, "%s", "-I, --first-delay and --retry are client options");
    if (o->client && o->persistent)
        return cli_error(&spec, "%s", "-P is a server option");
    if (o->sctp_mtu && !o->sctp)
        return cli_error(&spec, "%s", "--sctp-mtu needs --transport sctp");
    /* RFC 5043: DDP runs on SCTP directly, without MPA's CRC, markers or RTR (RFC 6581 §7:
     * either side may send first) */
    if (o->sctp &&
        (cli_seen(&spec, &r, "crc") || cli_seen(&spec, &r, "no-crc") || o->x_markers || o->x_p2p))
        return cli_error(&spec, "%s",
                         "--crc, --no-crc, --x-markers and --x-p2p are MPA options; DDP over SCTP "
                         "(--transport sctp) has no MPA: leave them out");
    if (o->addr_arg && resolve(o->addr_arg, o->ipv6, &o->addr) < 0)
        return CLI_PARSE_USAGE;
    if (!o->addr_arg) /* ::, both families (start_server falls back to rping's 0.0.0.0) */
        o->addr.ss_family = AF_INET6;
    set_port(&o->addr, o->port);
    if (o->src_arg) {
        if (resolve(o->src_arg, o->ipv6, &o->src) < 0)
            return CLI_PARSE_USAGE;
        if (o->src.ss_family != o->addr.ss_family)
            return cli_error(&spec, "-I %s is not of the server address's family", o->src_arg);
        o->have_src = true;
    }
    return 0;
}

/*
 * `iwarp ping`: parses rping's options (argv[0] is "ping"), then runs the server or the client
 * until it is done. Returns the exit status: 0 success, 1 failure, 2 bad options (0 for --help).
 */
int iwarp_cli_ping(int argc, char **argv)
{
    static struct ping ping;
    struct ping *p = &ping;
    int rc = parse(argc, argv, &p->o);
    if (rc != CLI_PARSE_OK)
        return rc == CLI_PARSE_HELP ? 0 : 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    p->status = 1;
    if (setup(p) < 0) {
        teardown(p);
        return 1;
    }
    if (p->o.server) {
        if (start_server(p) == 0)
            event_loop(p);
    } else {
        struct session *s = &p->s[0];
        p->retry_deadline = now_ms() + (uint64_t)p->o.retry_s * 1000u;
        if (session_alloc(p, s) < 0 || client_dial(p, s) < 0)
            session_free(s);
        else
            event_loop(p);
    }
    teardown(p);
    if (p->o.x_audit)
        return audit_report(p) ? 0 : 1;
    return p->status;
}
