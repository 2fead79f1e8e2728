/* SPDX-License-Identifier: BSD-2-Clause */
/* The CM's SCTP listener (IWARP_PS_SCTP, progress thread, 127.0.0.1) against a hand-driven,
 * misbehaving DDP/SCTP peer (RFC 5043, RFC 6581 §7). The peer is built directly on llp_sctp
 * and runs in a forked child process, with a usrsctp stack of its own as a remote peer has (in
 * one process the two would share usrsctp's stack and timers). The child is forked before any
 * libiwarp context exists, drives its endpoint as its one llp_sctp owner with poll() +
 * iwarp_llp_sctp_timers(), and obeys a script of commands sent through a pipe,
 * answering each (chunks received, association up/down) through another.
 *
 * Each test asserts both sides: what the peer receives (function code, DDP-SSN, private data,
 * stream, U bit) and what the application sees (CM events, QP state, flushed receives).
 * Every wait is bounded; the child is killed at the end (and by PR_SET_PDEATHSIG if the test
 * process dies first). */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "harness.h"
#include "iwarp/cm.h"
#include "iwarp/errors.h"
#include "iwarp/verbs.h"
#include "llp/llp_sctp.h"
#include "wire/wire_ddp.h"
#include "wire/wire_rdmap.h"
#include "wire/wire_sctp.h"

#define PPID_SEG      16u /* RFC 5043 §5.2 */
#define PPID_CTL      17u
/* Shortened SCTP timers for both sides (min, initial, max RTO in ms). */
#define RTO_MIN       50u
#define RTO_INI       200u
#define RTO_MAX       1000u
#define RTO_ENV       "50,200,1000"
#define WAIT_MS       3000 /* an expected event, chunk or completion */
#define QUIET_MS      300  /* how long "nothing happens" is watched */
#define RECV_LEN      256u /* each posted receive */
#define PEER_DATA_MAX 1536u

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ==== the raw peer (child process) ========================================================= */

enum peer_op { OP_CONNECT = 1, OP_SEND, OP_RECV, OP_WAIT_DOWN, OP_EXIT };

struct peer_cmd {
    uint32_t op;
    uint32_t timeout_ms;
    uint16_t port;           /* CONNECT: the listener's UDP (= SCTP) port on 127.0.0.1 */
    uint16_t nstreams;       /* CONNECT: INITMSG streams (0: 16) */
    uint16_t max_instreams;  /* CONNECT: test hook (0: nstreams) */
    bool no_adaptation;      /* CONNECT: test hook */
    uint32_t adaptation_ind; /* CONNECT: test hook (0: 1) */
    uint16_t sid;            /* SEND; CONNECT: the stream of the chunk in data, sent once up */
    uint32_t ppid;           /* SEND */
    bool ordered;            /* SEND: U=0, against RFC 5043 §10 */
    uint32_t len;
    uint8_t data[PEER_DATA_MAX];
};

struct peer_rep {
    int32_t rc;
    int32_t up, down, down_err; /* the association's state */
    uint16_t nstreams;
    uint16_t sid; /* RECV: the chunk */
    uint32_t ppid;
    bool unordered;
    uint32_t len;
    uint8_t data[PEER_DATA_MAX];
};

struct rx_chunk {
    void *buf;
    size_t len;
    uint16_t sid;
    uint32_t ppid;
    bool unordered;
};

#define RXQ 64u
static struct iwarp_llp_sctp_owner *peer_owner; /* the child's */
static struct {
    struct iwarp_llp_sctp_ep *ep;
    struct iwarp_llp_sctp_assoc *a;
    int up, down, down_err;
    uint16_t nstreams;
    struct rx_chunk q[RXQ];
    uint32_t qhead, qn;
    uint8_t first[PEER_DATA_MAX]; /* CONNECT: sent from on_up, as early as it can be */
    size_t first_len;
    uint16_t first_sid;
} pc;

static void pc_up(void *user, uint16_t nstreams, uint32_t max_seg)
{
    (void)user, (void)max_seg;
    pc.up++;
    pc.nstreams = nstreams;
    if (pc.first_len) {
        struct iovec v = {pc.first, pc.first_len};
        (void)iwarp_llp_sctp_send_chunk(pc.a, pc.first_sid, PPID_CTL, &v, 1);
        pc.first_len = 0;
    }
}

static void pc_down(void *user, int err)
{
    (void)user;
    pc.down++;
    pc.down_err = err;
}

static void pc_chunk(void *user, uint16_t sid, uint32_t ppid, bool unordered, void *buf, size_t len)
{
    (void)user;
    if (pc.qn == RXQ) {
        iwarp_llp_sctp_chunk_free(buf);
        return;
    }
    pc.q[(pc.qhead + pc.qn++) % RXQ] = (struct rx_chunk){buf, len, sid, ppid, unordered};
}

static const struct iwarp_llp_sctp_ops pc_ops = {
    .on_up = pc_up, .on_down = pc_down, .on_chunk = pc_chunk};

static void pc_drop_queue(void)
{
    while (pc.qn) {
        iwarp_llp_sctp_chunk_free(pc.q[pc.qhead].buf);
        pc.qhead = (pc.qhead + 1) % RXQ;
        pc.qn--;
    }
}

/* Drive the endpoint for at most max_ms (less when a timer is due or a datagram arrives). */
static void pc_pump(int max_ms, int cmd_fd)
{
    uint64_t now = now_ns();
    uint64_t dl = iwarp_llp_sctp_timers(peer_owner, now);
    int to = max_ms;
    if (dl != UINT64_MAX) {
        uint64_t ms = dl <= now ? 0 : (dl - now + 999999) / 1000000;
        if (ms < (uint64_t)to)
            to = (int)ms;
    }
    struct pollfd pf[2];
    nfds_t n = 0;
    if (cmd_fd >= 0)
        pf[n++] = (struct pollfd){.fd = cmd_fd, .events = POLLIN};
    if (pc.ep)
        pf[n++] = (struct pollfd){.fd = iwarp_llp_sctp_ep_fd(pc.ep), .events = POLLIN};
    if (poll(pf, n, to) > 0 && pc.ep && pf[n - 1].revents)
        iwarp_llp_sctp_on_readable(pc.ep, now_ns());
}

static bool pc_read_full(int fd, void *p, size_t len)
{
    uint8_t *b = p;
    while (len) {
        ssize_t r = read(fd, b, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        b += r;
        len -= (size_t)r;
    }
    return true;
}

static void pc_close_ep(void)
{
    if (pc.a)
        iwarp_llp_sctp_close(pc.a, true);
    pc.a = NULL;
    pc_drop_queue();
    if (pc.ep)
        iwarp_llp_sctp_ep_close(pc.ep);
    pc.ep = NULL;
}

static void pc_exec(const struct peer_cmd *c, struct peer_rep *r)
{
    uint64_t deadline = now_ns() + (uint64_t)c->timeout_ms * 1000000u;
    r->rc = 0;
    switch (c->op) {
    case OP_CONNECT: {
        /* a new endpoint (each may be non-conforming in its own way); the previous one goes,
         * its association aborted */
        if (!peer_owner && (r->rc = iwarp_llp_sctp_owner_open(NULL, &peer_owner)) != 0)
            break;
        struct iwarp_llp_sctp_ep_cfg cfg = {.owner = peer_owner,
                                            .nstreams = c->nstreams ? c->nstreams : 16,
                                            .test_no_adaptation = c->no_adaptation,
                                            .test_adaptation_ind = c->adaptation_ind,
                                            .test_max_instreams = c->max_instreams};
        struct iwarp_llp_sctp_ep *ep = NULL;
        r->rc = iwarp_llp_sctp_ep_open(&cfg, &ep);
        if (r->rc != 0)
            break;
        pc_close_ep();
        pc.ep = ep;
        pc.up = pc.down = pc.down_err = 0;
        pc.nstreams = 0;
        pc.first_len = c->len;
        pc.first_sid = c->sid;
        memcpy(pc.first, c->data, c->len);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(c->port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        r->rc = iwarp_llp_sctp_connect(pc.ep, (struct sockaddr *)&sa, 0, &pc_ops, NULL, &pc.a);
        if (r->rc != 0) {
            pc.a = NULL;
            break;
        }
        while (!pc.up && !pc.down && now_ns() < deadline)
            pc_pump(5, -1);
        r->rc = pc.down ? pc.down_err : pc.up ? 0 : IWARP_ERR_TIMEDOUT;
        break;
    }
    case OP_SEND: {
        if (!pc.a) {
            r->rc = IWARP_ERR_STATE;
            break;
        }
        struct iovec v = {(void *)(uintptr_t)c->data, c->len};
        iwarp_llp_sctp_test_set_ordered(pc.a, c->ordered);
        r->rc = iwarp_llp_sctp_send_chunk(pc.a, c->sid, c->ppid, &v, 1);
        iwarp_llp_sctp_test_set_ordered(pc.a, false);
        break;
    }
    case OP_RECV:
        while (!pc.qn && !pc.down && now_ns() < deadline)
            pc_pump(5, -1);
        if (!pc.qn) {
            r->rc = IWARP_ERR_TIMEDOUT;
            break;
        }
        {
            struct rx_chunk *q = &pc.q[pc.qhead];
            r->sid = q->sid;
            r->ppid = q->ppid;
            r->unordered = q->unordered;
            r->len = (uint32_t)(q->len < PEER_DATA_MAX ? q->len : PEER_DATA_MAX);
            memcpy(r->data, q->buf, r->len);
            iwarp_llp_sctp_chunk_free(q->buf);
            pc.qhead = (pc.qhead + 1) % RXQ;
            pc.qn--;
        }
        break;
    case OP_WAIT_DOWN:
        while (!pc.down && now_ns() < deadline)
            pc_pump(5, -1);
        r->rc = pc.down ? pc.down_err : IWARP_ERR_TIMEDOUT;
        break;
    default:
        r->rc = IWARP_ERR_INVAL;
        break;
    }
    r->up = pc.up;
    r->down = pc.down;
    r->down_err = pc.down_err;
    r->nstreams = pc.nstreams;
}

static _Noreturn void peer_main(int cmd_fd, int rep_fd, pid_t parent)
{
    /* never outlive the test */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
    alarm(60);
    iwarp_llp_sctp_set_test_timers(RTO_MIN, RTO_INI, RTO_MAX);
    static struct peer_cmd c;
    static struct peer_rep r;
    for (;;) {
        /* keep the association going (SACKs, timers) while no command is pending */
        pc_pump(50, cmd_fd);
        struct pollfd pf = {.fd = cmd_fd, .events = POLLIN};
        if (poll(&pf, 1, 0) <= 0)
            continue;
        if (!pc_read_full(cmd_fd, &c, sizeof c) || c.op == OP_EXIT)
            break;
        memset(&r, 0, sizeof r);
        pc_exec(&c, &r);
        if (write(rep_fd, &r, sizeof r) != (ssize_t)sizeof r)
            break;
    }
    pc_close_ep();
    _exit(0);
}

/* ---- the test's side of the pipe ---------------------------------------------------------- */

static struct {
    pid_t pid;
    int cmd_fd, rep_fd;
} peer;

static void peer_start(void)
{
    int c[2], r[2];
    ASSERT_EQ(pipe2(c, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(r, O_CLOEXEC), 0);
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        close(c[1]);
        close(r[0]);
        peer_main(c[0], r[1], parent);
    }
    close(c[0]);
    close(r[1]);
    peer.pid = pid;
    peer.cmd_fd = c[1];
    peer.rep_fd = r[0];
}

static void peer_stop(void)
{
    struct peer_cmd c = {.op = OP_EXIT};
    ssize_t n = write(peer.cmd_fd, &c, sizeof c);
    (void)n;
    close(peer.cmd_fd);
    close(peer.rep_fd);
    /* up to a second to close its endpoint cleanly, then it is killed in any case */
    struct deadline dl = deadline_in_ms(1000);
    while (waitpid(peer.pid, NULL, WNOHANG) == 0 && !deadline_passed(&dl))
        deadline_pause_us(1000);
    kill(peer.pid, SIGKILL);
    (void)waitpid(peer.pid, NULL, 0);
}

static struct peer_rep rep;

static const struct peer_rep *peer_call(struct peer_cmd *c)
{
    ASSERT_EQ(write(peer.cmd_fd, c, sizeof *c), (ssize_t)sizeof *c);
    uint8_t *p = (uint8_t *)&rep;
    size_t left = sizeof rep;
    uint64_t end = now_ns() + ((uint64_t)c->timeout_ms + 5000u) * 1000000u;
    while (left) {
        struct pollfd pf = {.fd = peer.rep_fd, .events = POLLIN};
        int ms = (int)((end - now_ns()) / 1000000u);
        if (now_ns() >= end || poll(&pf, 1, ms) <= 0)
            harness_fail(__FILE__, __LINE__, "the raw peer does not answer command %u", c->op);
        ssize_t r = read(peer.rep_fd, p, left);
        if (r <= 0)
            harness_fail(__FILE__, __LINE__, "the raw peer is gone (command %u)", c->op);
        p += r;
        left -= (size_t)r;
    }
    return &rep;
}

/* Non-conforming association parameters for CONNECT. */
struct peer_assoc_cfg {
    bool no_adaptation;
    uint32_t adaptation_ind;
    uint16_t max_instreams;
};

/* Associate with the listener; ctl (len octets, may be 0) goes out on stream sid once up. */
static const struct peer_rep *peer_connect(uint16_t port, const struct peer_assoc_cfg *cfg,
                                           uint16_t sid, const uint8_t *ctl, size_t len)
{
    static struct peer_cmd c;
    memset(&c, 0, sizeof c);
    c.op = OP_CONNECT;
    c.timeout_ms = WAIT_MS;
    c.port = port;
    if (cfg) {
        c.no_adaptation = cfg->no_adaptation;
        c.adaptation_ind = cfg->adaptation_ind;
        c.max_instreams = cfg->max_instreams;
    }
    c.sid = sid;
    c.len = (uint32_t)len;
    if (len)
        memcpy(c.data, ctl, len);
    return peer_call(&c);
}

static int peer_send(uint16_t sid, uint32_t ppid, const uint8_t *p, size_t len, bool ordered)
{
    static struct peer_cmd c;
    memset(&c, 0, sizeof c);
    c.op = OP_SEND;
    c.timeout_ms = 0;
    c.sid = sid;
    c.ppid = ppid;
    c.ordered = ordered;
    ASSERT_TRUE(len <= PEER_DATA_MAX);
    c.len = (uint32_t)len;
    memcpy(c.data, p, len);
    return peer_call(&c)->rc;
}

static const struct peer_rep *peer_recv(uint32_t ms)
{
    static struct peer_cmd c;
    memset(&c, 0, sizeof c);
    c.op = OP_RECV;
    c.timeout_ms = ms;
    return peer_call(&c);
}

static int peer_wait_down(uint32_t ms)
{
    static struct peer_cmd c;
    memset(&c, 0, sizeof c);
    c.op = OP_WAIT_DOWN;
    c.timeout_ms = ms;
    return peer_call(&c)->rc;
}

/* ---- chunks the peer sends ----------------------------------------------------------------- */

/* A session control chunk (RFC 5043 §5.2.3; fc 5/6 with the RFC 6581 §9 word). */
static size_t ctl_chunk(uint8_t *out, uint16_t ssn, uint16_t fc, uint16_t ird, uint16_t ord,
                        const char *pd)
{
    struct iwarp_sctp_ctl c = {.ssn = ssn,
                               .fc = fc,
                               .ird_ord = {.ird = ird, .ord = ord},
                               .pd = (const uint8_t *)(pd ? pd : ""),
                               .pd_len = (uint16_t)(pd ? strlen(pd) : 0)};
    iwarp_ssize n = iwarp_sctp_ctl_encode(out, IWARP_SCTP_CTL_MAX, &c);
    ASSERT_TRUE(n > 0);
    return (size_t)n;
}

static void peer_ctl(uint16_t sid, uint16_t ssn, uint16_t fc, uint16_t ird, uint16_t ord,
                     const char *pd)
{
    uint8_t b[IWARP_SCTP_CTL_MAX];
    size_t n = ctl_chunk(b, ssn, fc, ird, ord, pd);
    ASSERT_EQ(peer_send(sid, PPID_CTL, b, n, false), 0);
}

/* A DDP Segment chunk (§5.2.2) carrying a one-segment RDMAP Send (RFC 5040 §4.6). */
static void peer_send_msg(uint16_t sid, uint16_t ssn, uint32_t msn, const char *text, bool ordered)
{
    uint8_t b[64 + RECV_LEN];
    ASSERT_EQ(iwarp_sctp_ssn_encode(b, sizeof b, ssn), 2);
    struct iwarp_ddp_hdr h = {.tagged = false,
                              .last = true,
                              .dv = IWARP_DDP_VERSION,
                              .rsvdulp = iwarp_rdmap_ctrl(IWARP_RDMAP_OP_SEND),
                              .qn = IWARP_QN_SEND,
                              .msn = msn,
                              .mo = 0};
    iwarp_ssize n = iwarp_ddp_hdr_encode(b + 2, sizeof b - 2, &h);
    ASSERT_EQ(n, IWARP_DDP_UNTAGGED_HDR_LEN);
    size_t tl = strlen(text);
    memcpy(b + 2 + n, text, tl);
    ASSERT_EQ(peer_send(sid, PPID_SEG, b, 2 + (size_t)n + tl, ordered), 0);
}

/* The next chunk the peer receives must be a session control chunk on stream sid with function
 * code fc and DDP-SSN ssn, unordered (§10); returns it decoded (pd points into a static copy). */
static struct iwarp_sctp_ctl peer_expect_ctl(uint16_t sid, uint16_t fc, uint16_t ssn)
{
    const struct peer_rep *r = peer_recv(WAIT_MS);
    if (r->rc != 0)
        harness_fail(__FILE__, __LINE__,
                     "the peer received nothing (waiting for fc %u on stream %u): up %d down %d "
                     "(%s)",
                     fc, sid, r->up, r->down, iwarp_err_name(r->down_err));
    static uint8_t copy[PEER_DATA_MAX];
    memcpy(copy, r->data, r->len);
    if (r->ppid != PPID_CTL || r->sid != sid)
        harness_fail(__FILE__, __LINE__,
                     "expected fc %u on stream %u, got PPID %u on stream %u (%u octets)", fc, sid,
                     r->ppid, r->sid, r->len);
    ASSERT_TRUE(r->unordered); /* RFC 5043 §10 */
    struct iwarp_sctp_ctl c;
    ASSERT_EQ(iwarp_sctp_ctl_decode(copy, r->len, &c), (iwarp_ssize)r->len);
    if (c.fc != fc || c.ssn != ssn)
        harness_fail(__FILE__, __LINE__,
                     "expected fc %u DDP-SSN %u on stream %u, got fc %u DDP-SSN %u", fc, ssn, sid,
                     c.fc, c.ssn);
    return c;
}

/* Our Stream Session Terminate (fc 4): exactly DDP-SSN + function code, no private data
 * (§5.2.3 "Private Data MUST NOT be included"). */
static void peer_expect_terminate(uint16_t sid, uint16_t ssn)
{
    struct iwarp_sctp_ctl c = peer_expect_ctl(sid, IWARP_SCTP_FC_TERMINATE, ssn);
    ASSERT_EQ(c.pd_len, 0);
    ASSERT_EQ(rep.len, IWARP_SCTP_CTL_HDR_LEN);
}

static void peer_expect_quiet(void)
{
    const struct peer_rep *r = peer_recv(QUIET_MS);
    if (r->rc == 0)
        harness_fail(__FILE__, __LINE__, "the peer received PPID %u on stream %u (%u octets)",
                     r->ppid, r->sid, r->len);
    ASSERT_EQ(r->down, 0);
}

/* ==== the application (this process) ====================================================== */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[16384];
static size_t log_len;

static void app_log(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user, (void)level;
    pthread_mutex_lock(&log_lock);
    size_t n = strlen(msg);
    if (log_len + n + 2 < sizeof log_text) {
        memcpy(log_text + log_len, msg, n);
        log_len += n;
        log_text[log_len++] = '\n';
        log_text[log_len] = 0;
    }
    pthread_mutex_unlock(&log_lock);
}

static bool log_has(const char *s)
{
    pthread_mutex_lock(&log_lock);
    bool has = strstr(log_text, s) != NULL;
    pthread_mutex_unlock(&log_lock);
    return has;
}

#define MAX_IDS 16

struct app {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *mr;
    uint8_t *buf;
    struct iwarp_cm_id *listen;
    uint16_t port;
    struct iwarp_cm_id *ids[MAX_IDS]; /* every id a CONNECT_REQUEST brought (destroyed at fini) */
    int nids;
    uint64_t next_wr;
};

/* Fork the peer, then set up the application: a progress-thread context listening on
 * 127.0.0.1 over SCTP with the given backlog (§6.4's pending limit). */
static void app_init(struct app *a, int backlog)
{
    peer_start(); /* before any context: the child must not inherit one */
    memset(a, 0, sizeof *a);
    ASSERT_EQ(setenv("IWARP_SCTP_RTO_MS", RTO_ENV, 1), 0);
    struct iwarp_ctx_attr at;
    iwarp_ctx_attr_default(&at);
    at.progress = IWARP_PROGRESS_THREAD;
    at.log = app_log;
    at.log_level = IWARP_LOG_INFO;
    ASSERT_EQ(iwarp_ctx_create(&at, &a->ctx), 0);
    ASSERT_EQ(iwarp_cm_create_channel(a->ctx, &a->ch), 0);
    ASSERT_EQ(iwarp_alloc_pd(a->ctx, &a->pd), 0);
    ASSERT_EQ(iwarp_create_cq(a->ctx, 256, NULL, NULL, 0, &a->cq), 0);
    a->buf = calloc(MAX_IDS * 16, RECV_LEN);
    ASSERT_TRUE(a->buf != NULL);
    ASSERT_EQ(
        iwarp_reg_mr(a->pd, a->buf, MAX_IDS * 16 * RECV_LEN, IWARP_ACCESS_LOCAL_WRITE, &a->mr), 0);
    ASSERT_EQ(iwarp_cm_create_id(a->ch, &a->listen, NULL, IWARP_PS_SCTP), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(iwarp_cm_bind_addr(a->listen, (struct sockaddr *)&sa), 0);
    ASSERT_EQ(iwarp_cm_listen(a->listen, backlog), 0);
    a->port = ntohs(((struct sockaddr_in *)&a->listen->local_addr)->sin_port);
    ASSERT_NE(a->port, 0);
}

static void app_fini(struct app *a)
{
    /* the peer goes (its association aborted): every session still alive ends with it (§11.3)
     * and its DISCONNECTED is acknowledged before the ids go */
    peer_stop();
    struct iwarp_cm_event *ev;
    while (iwarp_cm_get_event_timeout(a->ch, &ev, QUIET_MS) == 0) {
        ASSERT_EQ(ev->event, IWARP_CM_EVENT_DISCONNECTED);
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    }
    for (int i = 0; i < a->nids; i++) {
        if (a->ids[i]->qp)
            iwarp_cm_destroy_qp(a->ids[i]);
        ASSERT_EQ(iwarp_cm_destroy_id(a->ids[i]), 0);
    }
    ASSERT_EQ(iwarp_cm_destroy_id(a->listen), 0);
    ASSERT_EQ(iwarp_dereg_mr(a->mr), 0);
    ASSERT_EQ(iwarp_destroy_cq(a->cq), 0);
    ASSERT_EQ(iwarp_dealloc_pd(a->pd), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(a->ch), 0);
    ASSERT_EQ(iwarp_ctx_destroy(a->ctx), 0);
    free(a->buf);
}

/* The next CM event, which must be `want`; the caller acks it. */
static struct iwarp_cm_event *app_event_at(struct app *a, enum iwarp_cm_event_type want, int ms,
                                           int line)
{
    struct iwarp_cm_event *ev = NULL;
    int rc = iwarp_cm_get_event_timeout(a->ch, &ev, ms);
    if (rc != 0)
        harness_fail(__FILE__, line, "no %s event within %d ms: %s", iwarp_cm_event_str(want), ms,
                     iwarp_err_name(rc));
    if (ev->event != want)
        harness_fail(__FILE__, line, "expected %s, got %s (status %s)", iwarp_cm_event_str(want),
                     iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
    return ev;
}
#define app_event(a, want, ms) app_event_at((a), (want), (ms), __LINE__)

static void app_no_event_at(struct app *a, int ms, int line)
{
    struct iwarp_cm_event *ev = NULL;
    int rc = iwarp_cm_get_event_timeout(a->ch, &ev, ms);
    if (rc == 0)
        harness_fail(__FILE__, line, "unexpected %s event (status %s)",
                     iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
    ASSERT_EQ(rc, IWARP_ERR_TIMEDOUT);
}
#define app_no_event(a, ms) app_no_event_at((a), (ms), __LINE__)

/* A CONNECT_REQUEST: checks the listener and the private data, keeps the id; returns the event
 * (acked by the caller). */
static struct iwarp_cm_event *app_request(struct app *a, const char *pd)
{
    struct iwarp_cm_event *ev = app_event(a, IWARP_CM_EVENT_CONNECT_REQUEST, WAIT_MS);
    ASSERT_EQ(ev->status, 0);
    ASSERT_TRUE(ev->listen_id == a->listen);
    ASSERT_EQ(ev->id->ps, IWARP_PS_SCTP);
    ASSERT_EQ(ev->param.private_data_len, strlen(pd)); /* §5.2.3: available to the ULP */
    if (*pd)
        ASSERT_MEM_EQ(ev->param.private_data, pd, strlen(pd));
    ASSERT_TRUE(a->nids < MAX_IDS);
    a->ids[a->nids++] = ev->id;
    return ev;
}

static void app_create_qp(struct app *a, struct iwarp_cm_id *id)
{
    struct iwarp_qp_init_attr qa = {
        .send_cq = a->cq,
        .recv_cq = a->cq,
        .cap = {.max_send_wr = 8, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IWARP_QPT_RC,
        .sq_sig_all = 1};
    ASSERT_EQ(iwarp_cm_create_qp(id, a->pd, &qa), 0);
}

/* Accept on id (QP created first); returns the ESTABLISHED event's param (a copy). */
static struct iwarp_conn_param app_accept(struct app *a, struct iwarp_cm_id *id, uint8_t ird,
                                          uint8_t ord, const char *pd)
{
    app_create_qp(a, id);
    struct iwarp_conn_param p = {.private_data = pd,
                                 .private_data_len = (uint16_t)(pd ? strlen(pd) : 0),
                                 .responder_resources = ird,
                                 .initiator_depth = ord};
    ASSERT_EQ(iwarp_cm_accept(id, &p), 0);
    struct iwarp_cm_event *ev = app_event(a, IWARP_CM_EVENT_ESTABLISHED, WAIT_MS);
    ASSERT_TRUE(ev->id == id);
    struct iwarp_conn_param got = ev->param;
    got.private_data = NULL;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    return got;
}

/* Post n receives on id's QP; returns the first wr_id (they follow on). */
static uint64_t app_post_recvs(struct app *a, struct iwarp_cm_id *id, int n)
{
    uint64_t first = a->next_wr;
    for (int i = 0; i < n; i++) {
        uint64_t wr = a->next_wr++;
        ASSERT_TRUE(wr < MAX_IDS * 16);
        struct iwarp_sge sge = {.addr = (uint64_t)(uintptr_t)(a->buf + wr * RECV_LEN),
                                .length = RECV_LEN,
                                .lkey = a->mr->lkey};
        struct iwarp_recv_wr rw = {.wr_id = wr, .sg_list = &sge, .num_sge = 1};
        struct iwarp_recv_wr *bad = NULL;
        ASSERT_EQ(iwarp_post_recv(id->qp, &rw, &bad), 0);
    }
    return first;
}

static struct iwarp_wc app_wc_at(struct app *a, int line)
{
    struct iwarp_wc wc;
    struct deadline dl = deadline_in_ms(WAIT_MS);
    for (;;) {
        int n = iwarp_poll_cq(a->cq, 1, &wc);
        ASSERT_TRUE(n >= 0);
        if (n == 1)
            return wc;
        if (deadline_passed(&dl))
            deadline_fail(__FILE__, line, &dl, "a completion");
        deadline_pause_us(1000);
    }
}

/* Receive wr completed successfully with text. */
static void app_expect_recv_at(struct app *a, uint64_t wr, const char *text, int line)
{
    struct iwarp_wc wc = app_wc_at(a, line);
    if (wc.status != IWARP_WC_SUCCESS || wc.wr_id != wr)
        harness_fail(__FILE__, line, "expected receive %" PRIu64 " ok, got %" PRIu64 " %s", wr,
                     wc.wr_id, iwarp_wc_status_str(wc.status));
    ASSERT_EQ(wc.opcode, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, strlen(text));
    ASSERT_MEM_EQ(a->buf + wr * RECV_LEN, text, strlen(text));
}
#define app_expect_recv(a, wr, text) app_expect_recv_at((a), (wr), (text), __LINE__)

/* Receives first..first+n-1 flushed (the QP went to ERROR), in order, then nothing more. */
static void app_expect_flushed_at(struct app *a, uint64_t first, int n, int line)
{
    for (int i = 0; i < n; i++) {
        struct iwarp_wc wc = app_wc_at(a, line);
        if (wc.status != IWARP_WC_WR_FLUSH_ERR || wc.wr_id != first + (uint64_t)i)
            harness_fail(__FILE__, line, "expected receive %" PRIu64 " flushed, got %" PRIu64 " %s",
                         first + (uint64_t)i, wc.wr_id, iwarp_wc_status_str(wc.status));
    }
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_poll_cq(a->cq, 1, &wc), 0);
}
#define app_expect_flushed(a, first, n) app_expect_flushed_at((a), (first), (n), __LINE__)

static enum iwarp_qp_state qp_state(struct iwarp_cm_id *id)
{
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(id->qp, &qa), 0);
    return qa.qp_state;
}

/* ---- a session, the usual way -----------------------------------------------------------------
 */

struct sess {
    struct iwarp_cm_id *id;
    uint16_t sid;
    uint64_t wr; /* the first receive posted */
    int nrecv;
};

/* The peer opens a session on stream sid with a plain Initiate (DDP-SSN 0); the application
 * accepts it and posts nrecv receives; the peer gets the Accept (fc 2, our DDP-SSN 0). */
static void open_session(struct app *a, struct sess *s, uint16_t sid, int nrecv)
{
    peer_ctl(sid, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "open");
    struct iwarp_cm_event *ev = app_request(a, "open");
    s->id = ev->id;
    s->sid = sid;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    (void)app_accept(a, s->id, 4, 4, NULL);
    s->nrecv = nrecv;
    s->wr = app_post_recvs(a, s->id, nrecv);
    struct iwarp_sctp_ctl c = peer_expect_ctl(sid, IWARP_SCTP_FC_ACCEPT, 0);
    ASSERT_EQ(c.pd_len, 0);
    ASSERT_EQ(qp_state(s->id), IWARP_QPS_RTS);
}

static void connect_conforming(struct app *a)
{
    const struct peer_rep *r = peer_connect(a->port, NULL, 0, NULL, 0);
    ASSERT_EQ(r->rc, 0);
    ASSERT_EQ(r->nstreams, 16); /* §8: equal counts both ways, the CM's default */
}

/* The session was ended by our Terminate (DDP-SSN ssn): the QP is in ERROR with every receive
 * not consumed flushed; the peer's answering Terminate (its DDP-SSN peer_ssn, §6.2) closes it
 * and the application sees DISCONNECTED; nothing more comes on the stream. */
static void expect_session_failed(struct app *a, struct sess *s, uint16_t ssn, int consumed,
                                  uint16_t peer_ssn)
{
    peer_expect_terminate(s->sid, ssn);
    ASSERT_EQ(qp_state(s->id), IWARP_QPS_ERR);
    app_expect_flushed(a, s->wr + (uint64_t)consumed, s->nrecv - consumed);
    peer_ctl(s->sid, peer_ssn, IWARP_SCTP_FC_TERMINATE, 0, 0, NULL);
    struct iwarp_cm_event *ev = app_event(a, IWARP_CM_EVENT_DISCONNECTED, WAIT_MS);
    ASSERT_TRUE(ev->id == s->id);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    peer_expect_quiet(); /* our Terminate went out once; the peer's is not answered again */
}

/* ==== 1, 2: association set-up (RFC 5043 §5.1, §8, §11.1) ================================== */

/* A refused association: the peer sees it aborted (it may have seen it up for a moment and
 * sent its Initiate); the listener logged why; no CONNECT_REQUEST reaches the application. */
static void expect_refused(struct app *a, const struct peer_assoc_cfg *cfg, int peer_errs_ok,
                           const char *why)
{
    uint8_t init[IWARP_SCTP_CTL_MAX];
    size_t n = ctl_chunk(init, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "let me in");
    const struct peer_rep *r = peer_connect(a->port, cfg, 1, init, n);
    int err = r->rc == 0 ? peer_wait_down(WAIT_MS) : r->rc;
    if (err != IWARP_ERR_SCTP_ASSOC_LOST && err != peer_errs_ok)
        harness_fail(__FILE__, __LINE__, "the peer's association ended with %s, not aborted",
                     iwarp_err_name(err));
    app_no_event(a, QUIET_MS);
    char line[128];
    snprintf(line, sizeof line, "SCTP association refused (%s)", why);
    if (!log_has(line))
        harness_fail(__FILE__, __LINE__, "the listener did not log \"%s\"; log:\n%s", line,
                     log_text);
}

/* ... and afterwards a conforming peer gets its session. */
static void expect_conforming_after(struct app *a)
{
    connect_conforming(a);
    struct sess s;
    open_session(a, &s, 1, 1);
    peer_send_msg(1, 1, 1, "after", false);
    app_expect_recv(a, s.wr, "after");
}

TEST(association_without_or_with_a_wrong_adaptation_indication_is_refused)
{
    struct app a;
    app_init(&a, 4);
    /* §5.1: the indication MUST appear in the INIT; §11.1: NONE -> no DDP on it */
    struct peer_assoc_cfg none = {.no_adaptation = true};
    expect_refused(&a, &none, IWARP_ERR_SCTP_ASSOC_LOST, "IWARP_ERR_SCTP_ADAPTATION");
    /* §11.1: ANY-OTHER indication -> no DDP either */
    struct peer_assoc_cfg other = {.adaptation_ind = 0x00000002u};
    expect_refused(&a, &other, IWARP_ERR_SCTP_ASSOC_LOST, "IWARP_ERR_SCTP_ADAPTATION");
    expect_conforming_after(&a);
    app_fini(&a);
}

TEST(association_with_unequal_stream_counts_is_refused)
{
    struct app a;
    app_init(&a, 4);
    /* §8: "The adaptation MUST initialize all of its SCTP associations with the same number of
     * inbound and outbound streams": 16 out, 4 in. The peer's own llp_sctp sees the inequality
     * as well and may abort first from its side (IWARP_ERR_SCTP_STREAMS); the log says that
     * ours refused it. */
    struct peer_assoc_cfg uneq = {.max_instreams = 4};
    expect_refused(&a, &uneq, IWARP_ERR_SCTP_STREAMS, "IWARP_ERR_SCTP_STREAMS");
    expect_conforming_after(&a);
    app_fini(&a);
}

/* ==== 3: session control on a conforming association (§6.2, §6.3; RFC 6581 §7, §9.1) ====== */

TEST(initiate_reject_accept_and_enhanced_accept)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);

    /* Enhanced Initiate (fc 5) on stream 1: initiator IRD 5, ORD 3 */
    peer_ctl(1, 0, IWARP_SCTP_FC_ENH_INITIATE, 5, 3, "enhanced please");
    struct iwarp_cm_event *ev = app_request(&a, "enhanced please");
    /* cm.h: the peer's IRD/ORD swapped into our view (what we may answer with) */
    ASSERT_EQ(ev->param.responder_resources, 3);
    ASSERT_EQ(ev->param.initiator_depth, 5);
    struct iwarp_cm_id *id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    /* §6.3: rejected at the ULP's direction -> Reject (fc 3) with its private data, our first
     * chunk of the session (DDP-SSN 0, §6.1); no IRD/ORD word (RFC 6581 §7) */
    ASSERT_EQ(iwarp_cm_reject(id, "no thanks", 9), 0);
    struct iwarp_sctp_ctl c = peer_expect_ctl(1, IWARP_SCTP_FC_REJECT, 0);
    ASSERT_EQ(c.pd_len, 9);
    ASSERT_MEM_EQ(c.pd, "no thanks", 9);
    ASSERT_EQ(rep.len, IWARP_SCTP_CTL_HDR_LEN + 9);
    app_no_event(&a, QUIET_MS); /* the application rejected: nothing to report */

    /* plain Initiate (fc 1) on the same stream: the rejected session is over (§6.3), a new one
     * starts at DDP-SSN 0 (§6.1) -> Accept (fc 2) with our private data */
    peer_ctl(1, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "plain");
    ev = app_request(&a, "plain");
    struct iwarp_cm_id *plain = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    (void)app_accept(&a, plain, 4, 4, "welcome");
    uint64_t wr = app_post_recvs(&a, plain, 1);
    c = peer_expect_ctl(1, IWARP_SCTP_FC_ACCEPT, 0);
    ASSERT_EQ(c.pd_len, 7);
    ASSERT_MEM_EQ(c.pd, "welcome", 7);
    ASSERT_EQ(rep.len, IWARP_SCTP_CTL_HDR_LEN + 7); /* no word in a plain Accept */
    peer_send_msg(1, 1, 1, "data", false);
    app_expect_recv(&a, wr, "data");

    /* Enhanced Initiate on stream 2, IRD 5 ORD 3; we accept with IRD 8, ORD 7 */
    peer_ctl(2, 0, IWARP_SCTP_FC_ENH_INITIATE, 5, 3, "e2");
    ev = app_request(&a, "e2");
    struct iwarp_cm_id *enh = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    struct iwarp_conn_param est = app_accept(&a, enh, 8, 7, "ok2");
    c = peer_expect_ctl(2, IWARP_SCTP_FC_ENH_ACCEPT, 0);
    /* RFC 6581 §9.1: responder IRD = ours (>= initiator ORD 3); responder ORD at most the
     * initiator IRD (ours 7 -> 5); §9.2: A = 0 as in the request; then the ULP's data */
    ASSERT_FALSE(c.ird_ord.p2p);
    ASSERT_EQ(c.ird_ord.ird, 8);
    ASSERT_EQ(c.ird_ord.ord, 5);
    ASSERT_TRUE(c.ird_ord.ird >= 3);
    ASSERT_TRUE(c.ird_ord.ord <= 5);
    ASSERT_EQ(c.pd_len, 3);
    ASSERT_MEM_EQ(c.pd, "ok2", 3);
    ASSERT_EQ(est.responder_resources, 8);
    ASSERT_EQ(est.initiator_depth, 5);
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(enh->qp, &qa), 0);
    ASSERT_EQ(qa.max_dest_rd_atomic, 8);
    ASSERT_EQ(qa.max_rd_atomic, 5);

    /* Enhanced Initiate with 0x3FFF both ways on stream 3: RFC 6581 §9.1 "MUST respond ... by
     * setting the IRD [and ORD] to 0x3FFF in its reply" */
    peer_ctl(3, 0, IWARP_SCTP_FC_ENH_INITIATE, IWARP_MPA_IRD_ORD_NONE, IWARP_MPA_IRD_ORD_NONE, "");
    ev = app_request(&a, "");
    struct iwarp_cm_id *none = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    (void)app_accept(&a, none, 4, 4, NULL);
    c = peer_expect_ctl(3, IWARP_SCTP_FC_ENH_ACCEPT, 0);
    ASSERT_EQ(c.ird_ord.ird, IWARP_MPA_IRD_ORD_NONE);
    ASSERT_EQ(c.ird_ord.ord, IWARP_MPA_IRD_ORD_NONE);
    ASSERT_EQ(c.pd_len, 0);

    /* the sessions are independent: stream 1 still carries data */
    uint64_t wr2 = app_post_recvs(&a, plain, 1);
    peer_send_msg(1, 2, 2, "more", false);
    app_expect_recv(&a, wr2, "more");
    app_fini(&a);
}

/* ==== 4: illegal sequences (§6.1: "the DDP Stream Session MUST be terminated") ============= */

TEST(second_initiate_after_acceptance_terminates_only_that_session)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s1, s2;
    open_session(&a, &s1, 1, 3);
    open_session(&a, &s2, 2, 1);
    /* §6.2: after the Accept only segments and a Terminate are legal */
    peer_ctl(1, 1, IWARP_SCTP_FC_INITIATE, 0, 0, "again");
    app_no_event(&a, QUIET_MS); /* no second CONNECT_REQUEST */
    expect_session_failed(&a, &s1, 1, 0, 2);
    /* §11.3: the end of one DDP stream is not the end of the association: stream 2 lives on */
    peer_send_msg(2, 1, 1, "stream two", false);
    app_expect_recv(&a, s2.wr, "stream two");
    ASSERT_EQ(qp_state(s2.id), IWARP_QPS_RTS);
    app_fini(&a);
}

TEST(unknown_function_code_terminates_the_session)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s;
    open_session(&a, &s, 1, 2);
    /* §5.2.3 defines 1-4 (RFC 6581 §7: 5-7); 0x0042 is none of them */
    uint8_t b[4] = {0x00, 0x01, 0x00, 0x42};
    ASSERT_EQ(peer_send(1, PPID_CTL, b, sizeof b, false), 0);
    expect_session_failed(&a, &s, 1, 0, 2);
    app_fini(&a);
}

TEST(duplicate_ddp_ssn_terminates_the_session)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s;
    open_session(&a, &s, 1, 3);
    peer_send_msg(1, 1, 1, "first", false);
    app_expect_recv(&a, s.wr, "first");
    /* §6.1: DDP-SSNs without gaps or repeats; DDP-SSN 1 again */
    peer_send_msg(1, 1, 2, "again", false);
    expect_session_failed(&a, &s, 1, 1, 2);
    app_fini(&a);
}

TEST(ddp_ssn_reorder_within_the_window_and_gap_beyond_it)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s;
    open_session(&a, &s, 1, 4);
    /* §6.1, §10: unordered chunks are considered in DDP-SSN order: 2 is held until 1 comes */
    peer_send_msg(1, 2, 2, "second", false);
    peer_send_msg(1, 1, 1, "first", false);
    app_expect_recv(&a, s.wr, "first");
    app_expect_recv(&a, s.wr + 1, "second");
    /* §10: a DDP-SSN 1000 ahead of the expected 3, beyond what the receiver holds (a 512-chunk
     * window, design.md §9): invalid -> the stream is terminated */
    peer_send_msg(1, 3 + 1000, 3, "far", false);
    expect_session_failed(&a, &s, 1, 2, 3);
    app_fini(&a);
}

TEST(ordered_chunk_terminates_the_session)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s;
    open_session(&a, &s, 1, 2);
    /* §10 "MUST use the Unordered option on all Data Chunks"; §5.1: a DDP association carries
     * only the chunks defined there; §6.1: a chunk of no legal pattern ends the session */
    peer_send_msg(1, 1, 1, "ordered", true);
    expect_session_failed(&a, &s, 1, 0, 2);
    app_fini(&a);
}

TEST(segment_on_a_stream_without_session_is_dropped)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s;
    open_session(&a, &s, 1, 2);
    /* a DDP segment on stream 5, where no session was ever initiated: nobody to deliver it to;
     * no answer, no request, no harm to stream 1 */
    peer_send_msg(5, 0, 1, "stray", false);
    peer_expect_quiet();
    app_no_event(&a, QUIET_MS);
    peer_send_msg(1, 1, 1, "still here", false);
    app_expect_recv(&a, s.wr, "still here");
    ASSERT_EQ(qp_state(s.id), IWARP_QPS_RTS);
    /* and stream 5 is still free: a session starts there at DDP-SSN 0 */
    struct sess s5;
    open_session(&a, &s5, 5, 1);
    peer_send_msg(5, 1, 1, "five", false);
    app_expect_recv(&a, s5.wr, "five");
    app_fini(&a);
}

/* §6.2: "At least one side MUST send a DDP Stream Terminate": the peer need not answer ours.
 * The application must still learn that the session is over. */
TEST(terminated_session_is_reported_when_the_peer_does_not_answer)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s;
    open_session(&a, &s, 1, 2);
    peer_ctl(1, 1, IWARP_SCTP_FC_INITIATE, 0, 0, "again");
    peer_expect_terminate(1, 1);
    ASSERT_EQ(qp_state(s.id), IWARP_QPS_ERR);
    app_expect_flushed(&a, s.wr, 2);
    /* no Terminate from the peer: DISCONNECTED within the CM's linger (3 s) and some slack */
    struct iwarp_cm_event *ev = app_event(&a, IWARP_CM_EVENT_DISCONNECTED, 5000);
    ASSERT_TRUE(ev->id == s.id);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    app_fini(&a);
}

/* ==== 5: the peer's Terminate (§6.2) ======================================================== */

TEST(peer_terminate_is_answered_and_reported)
{
    struct app a;
    app_init(&a, 4);
    connect_conforming(&a);
    struct sess s;
    open_session(&a, &s, 1, 3);
    peer_send_msg(1, 1, 1, "bye soon", false);
    app_expect_recv(&a, s.wr, "bye soon");
    peer_ctl(1, 2, IWARP_SCTP_FC_TERMINATE, 0, 0, NULL);
    /* our Terminate answers it: the first chunk we send after the Accept (DDP-SSN 1), no
     * private data, nothing before it */
    peer_expect_terminate(1, 1);
    struct iwarp_cm_event *ev = app_event(&a, IWARP_CM_EVENT_DISCONNECTED, WAIT_MS);
    ASSERT_TRUE(ev->id == s.id);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(qp_state(s.id), IWARP_QPS_ERR);
    app_expect_flushed(&a, s.wr + 1, 2);
    peer_expect_quiet();
    app_fini(&a);
}

/* ==== 6: the pending-Initiate limit (§5.2.3, §6.4) =========================================== */

TEST(initiates_beyond_the_pending_limit_are_terminated)
{
    struct app a;
    app_init(&a, 2); /* the listener's backlog: two Initiates may await the application */
    connect_conforming(&a);
    peer_ctl(1, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "one");
    peer_ctl(2, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "two");
    struct iwarp_cm_event *ev = app_request(&a, "one");
    struct iwarp_cm_id *one = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ev = app_request(&a, "two");
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    /* §6.4: "When more session requests are received, the passive side MUST respond to the
     * Initiate message with a DDP Stream Terminate Message" */
    peer_ctl(3, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "three");
    peer_ctl(4, 0, IWARP_SCTP_FC_ENH_INITIATE, 4, 4, "four"); /* RFC 6581 §7: the same */
    const struct peer_rep *r1 = peer_recv(WAIT_MS);
    ASSERT_EQ(r1->rc, 0);
    uint16_t first_sid = r1->sid;
    ASSERT_TRUE(first_sid == 3 || first_sid == 4);
    {
        struct iwarp_sctp_ctl c;
        ASSERT_EQ(r1->ppid, PPID_CTL);
        ASSERT_TRUE(r1->unordered);
        ASSERT_EQ(iwarp_sctp_ctl_decode(r1->data, r1->len, &c), (iwarp_ssize)r1->len);
        ASSERT_EQ(c.fc, IWARP_SCTP_FC_TERMINATE);
        ASSERT_EQ(c.ssn, 0);
        ASSERT_EQ(r1->len, IWARP_SCTP_CTL_HDR_LEN);
    }
    peer_expect_terminate(first_sid == 3 ? 4 : 3, 0);
    app_no_event(&a, QUIET_MS); /* neither reached the application */
    /* the limit counts Initiates pending a decision: once one is answered, another may come */
    ASSERT_EQ(iwarp_cm_reject(one, NULL, 0), 0);
    (void)peer_expect_ctl(1, IWARP_SCTP_FC_REJECT, 0);
    peer_ctl(5, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "five");
    ev = app_request(&a, "five");
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    peer_expect_quiet();
    app_fini(&a);
}

/* §6.4's Terminate ends the peer's session on that stream: it may start another one there
 * (§6.6: nothing of the first is outstanding once our Terminate was received). */
TEST(stream_of_a_terminated_excess_initiate_can_be_used_again)
{
    struct app a;
    app_init(&a, 1);
    connect_conforming(&a);
    peer_ctl(1, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "one");
    struct iwarp_cm_event *ev = app_request(&a, "one");
    struct iwarp_cm_id *one = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    peer_ctl(2, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "two");
    peer_expect_terminate(2, 0);
    ASSERT_EQ(iwarp_cm_reject(one, NULL, 0), 0);
    (void)peer_expect_ctl(1, IWARP_SCTP_FC_REJECT, 0);
    /* room again: the peer retries on stream 2 with a new session (DDP-SSN 0) */
    peer_ctl(2, 0, IWARP_SCTP_FC_INITIATE, 0, 0, "two again");
    ev = app_request(&a, "two again");
    struct iwarp_cm_id *two = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    (void)app_accept(&a, two, 4, 4, NULL);
    (void)peer_expect_ctl(2, IWARP_SCTP_FC_ACCEPT, 0);
    app_fini(&a);
}
