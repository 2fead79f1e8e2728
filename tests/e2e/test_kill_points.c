/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Death at any point: a peer process (the victim, libiwarp) is killed with SIGKILL in the middle
 * of a mixed workload (Sends, RDMA Writes and RDMA Reads both ways), over MPA/TCP and DDP over
 * SCTP, as the client and as the server; this process (the survivor, libiwarp, a context with a
 * progress thread and one in caller mode per transport) must take every loss in its stride.
 *
 * Each kill is aimed at one phase of the survivor's connection, and the phase is recorded from
 * where the survivor stood when the loss came:
 *   neg       MPA negotiation not finished (SCTP: the session's Initiate/Accept): the victim
 *             server holds the CONNECT_REQUEST, or the survivor server has it (killed before or
 *             after its accept, the first FPDU held back by the relay);
 *   mid-fpdu  an FPDU partly received: a relay between the two (mpa_relay.h) forwards only the
 *             first octets of an FPDU the victim sends, at a random octet, then the victim dies
 *             (SCTP has no FPDUs: part of a multi-segment DDP message, sctp_relay.h's cut);
 *   mid-rr    an RDMA Read Response partly received (the survivor's Read) or partly sent (the
 *             victim's Read), cut inside one of its FPDUs (SCTP: after a segment that is not the
 *             response's last);
 *   teardown  the survivor has called iwarp_cm_disconnect; the victim dies 0-3 ms later.
 * After each kill the survivor asserts: the loss was reported (one terminal CM event), every
 * posted WR (send and receive queue) completed exactly once, successfully or flushed (wr_id
 * bookkeeping), within the bound below; iwarp_cm_destroy_qp/destroy_id succeed; its fd count is
 * back where it was; and the next connection, to a fresh victim, comes up (every kill but the
 * first is preceded by one, and a clean run with a full workload ends each group). LSan (ASan
 * builds) checks at exit that nothing leaked.
 *
 * Bounds (every wait of the survivor is one of these, from the kill):
 *   TCP:  the killed process's kernel ends the connection at once (FIN or RST), so the loss is
 *         seen immediately; the longest the library itself may wait is the CM's linger of a
 *         disconnect (3 s). Bound: KP_TCP_BOUND_MS.
 *   SCTP: nothing tells usrsctp that the peer died (its UDP port answers with ICMP, which
 *         usrsctp over UDP never sees). An association is aborted after assoc_rtx_max + 1
 *         retransmission timeouts of data it cannot get acknowledged (each at most rto_max)
 *         or, idle (a Read waiting for its response, nothing to retransmit), after
 *         assoc_rtx_max + 1 unanswered heartbeats, each hb + RTO * [0.5, 1.5) after the last.
 *         IWARP_SCTP_RTO_MS=KP_SCTP_RTO (min, initial, max ms) and IWARP_SCTP_HB_MS=KP_SCTP_HB
 *         set them here; usrsctp's assoc_rtx_max (10) is read, and all are printed. Bound:
 *         (assoc_rtx_max + 1) * (hb + 1.5 * rto_max) = 4.4 s, or the connect timeout
 *         (KP_CONNECT_MS) or the 3 s linger when larger, plus KP_SLACK_MS for a loaded machine.
 *         With usrsctp's defaults (heartbeat 30 s, RTO up to 60 s) an idle survivor would wait
 *         for minutes: see docs/design.md.
 *
 * Knobs (environment): IWARP_KILL_POINTS kills per transport (default 32 over TCP, 16 over
 * SCTP: each phase, role and survivor progress mode 4 and 2 times), IWARP_KILL_SEED,
 * IWARP_KILL_TRANSPORTS (tcp, sctp or tcp,sctp), IWARP_KILL_PHASE (one phase's name: every kill in
 * it). scripts/kill-long.sh runs 1,000. Each kill prints one line "kill N TRANSPORT ROLE PHASE ms";
 * a table follows.
 *
 * The victim is this executable run again (/proc/self/exe) with KP_VICTIM in its environment: a
 * constructor runs it instead of the tests, so it is a fresh process with its own usrsctp.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpa_relay.h"
#include "sctp_relay.h"
#include "stack_pair.h"
#ifdef IWARP_HAVE_SCTP
#include <usrsctp.h>
#endif

#define KP_TCP_BOUND_MS 8000u /* 3 s linger + 5 s scheduling slack */
#define KP_SCTP_RTO     "10,20,200"
#define KP_RTO_MAX_MS   200u
#define KP_SCTP_HB      "100"
#define KP_HB_MS        100u
#define KP_CONNECT_MS   2000u
#define KP_LINGER_MS    3000u
#define KP_SLACK_MS     5000u
#define KP_SETUP_MS     20000u /* a connection coming up, a victim starting (not after a kill) */

#define KP_REGION   (4u << 20) /* what each side advertises for Writes and Reads */
#define KP_SEND_MAX 16384u
#define KP_RQ       256u /* receives posted per side: each side sends at most KP_SENDS */
#define KP_SENDS    200u
#define KP_SQ       64u
#define KP_INFLIGHT 12u
#define KP_MAX_WR   4096u

/* PH_AFTER: aimed at teardown, but the survivor's disconnect was over before the kill */
enum kp_phase { PH_NEG, PH_FPDU, PH_RR, PH_TEARDOWN, PH_AFTER, PH_N };
#define PH_AIMED 4u /* the phases kills are aimed at */
static const char *const phase_name[PH_N] = {"neg", "mid-fpdu", "mid-rr", "teardown", "after-end"};
enum kp_tr { TR_TCP, TR_SCTP, TR_N };
static const char *const tr_name[TR_N] = {"tcp", "sctp"};
/* the victim's role */
enum kp_role { VICTIM_CLIENT, VICTIM_SERVER, ROLE_N };
static const char *const role_name[ROLE_N] = {"victim-client", "victim-server"};

static uint32_t rnd(uint32_t *s, uint32_t n)
{
    return n ? harness_xorshift32(s) % n : 0;
}

/* ---- the workload, the same on both sides ---------------------------------------------------- */

/* Where things are in a side's buffer (2 * KP_REGION). Nothing is written while a WR may still
 * read it: a source that changes under a posted Send, Write or Read Response is the
 * application's error, and with CRC on it makes the FPDU's CRC (computed before the kernel copies
 * the octets) wrong at the peer, which terminates the connection. */
#define AT_WRITE_SINK 0u                       /* [0, 2M): the peer's Writes land here */
#define AT_READ_SRC   (2u << 20)               /* [2M, 4M): the peer's Reads read this */
#define AT_RECV       KP_REGION                /* [4M, 4M + 16K): every receive */
#define AT_TX_SRC     (KP_REGION + (1u << 20)) /* [5M, 6M): Sends' and Writes' sources */
#define AT_READ_SINK  (KP_REGION + (2u << 20)) /* [6M, 8M): our Reads' sinks */

/* One side of a connection: what it posted and what completed. */
struct wl {
    struct sp_side *s;
    struct iwarp_qp *qp;
    struct iwarp_mr *mr;
    uint8_t *buf; /* KP_REGION advertised + KP_REGION local (sources and sinks) */
    struct sp_advert peer;
    uint32_t rng;
    unsigned shift;        /* RDMA sizes are divided by 1 << shift (SCTP moves less per second) */
    uint8_t st[KP_MAX_WR]; /* 0: free, 1: posted, 2: completed */
    uint32_t n_wr, inflight, sends, posted, completed, flushed;
    bool may_send; /* a server: after the client's first FPDU */
    bool saw_flush;
};

static void wl_init(struct wl *w, struct sp_side *s, struct iwarp_qp *qp, struct iwarp_mr *mr,
                    uint8_t *buf, uint32_t seed, enum kp_tr tr)
{
    memset(w, 0, sizeof *w);
    w->shift = tr == TR_SCTP ? 4u : 0u; /* at most 64 KiB Writes, 128 KiB Reads */
    w->s = s;
    w->qp = qp;
    w->mr = mr;
    w->buf = buf;
    w->rng = seed | 1u;
}

static uint32_t wl_take(struct wl *w)
{
    ASSERT_TRUE(w->n_wr < KP_MAX_WR);
    w->st[w->n_wr] = 1;
    w->posted++;
    return w->n_wr++;
}

static void wl_untake(struct wl *w, uint32_t id)
{
    ASSERT_EQ(id + 1u, w->n_wr);
    w->st[id] = 0;
    w->n_wr--;
    w->posted--;
}

/* KP_RQ receives, all into one buffer (their contents are never looked at). */
static void wl_post_recvs(struct wl *w)
{
    for (uint32_t i = 0; i < KP_RQ; i++) {
        uint32_t id = wl_take(w);
        int rc = sp_post_recv(w->qp, id, w->buf + AT_RECV, KP_SEND_MAX, w->mr->lkey);
        if (rc != 0) {
            wl_untake(w, id);
            return;
        }
    }
}

/* Post one random send-queue WR (Send, Write or Read; force_op >= 0: that one, of force_len
 * octets); false when the QP refused it. */
static bool wl_post_one(struct wl *w, int force_op, uint32_t force_len)
{
    uint32_t id = wl_take(w);
    int op = force_op >= 0 ? force_op : (int)rnd(&w->rng, 3);
    if (op == 0 && w->sends >= KP_SENDS)
        op = 1;
    int rc;
    if (op == 0) {
        uint32_t len = rnd(&w->rng, KP_SEND_MAX + 1u);
        rc = sp_post(w->qp, id, IWARP_WR_SEND, IWARP_SEND_SIGNALED, w->buf + AT_TX_SRC, len,
                     w->mr->lkey, 0, 0);
    } else if (op == 1) {
        uint32_t len = force_len ? force_len : 1u + rnd(&w->rng, (1u << 20) >> w->shift);
        uint64_t off = AT_WRITE_SINK + rnd(&w->rng, (2u << 20) - len + 1u);
        rc = sp_post(w->qp, id, IWARP_WR_RDMA_WRITE, IWARP_SEND_SIGNALED, w->buf + AT_TX_SRC, len,
                     w->mr->lkey, w->peer.addr + off, w->peer.rkey);
    } else {
        uint32_t len = force_len ? force_len : 1u + rnd(&w->rng, (2u << 20) >> w->shift);
        uint64_t off = AT_READ_SRC + rnd(&w->rng, (2u << 20) - len + 1u);
        rc = sp_post(w->qp, id, IWARP_WR_RDMA_READ, IWARP_SEND_SIGNALED, w->buf + AT_READ_SINK, len,
                     w->mr->lkey, w->peer.addr + off, w->peer.rkey);
    }
    if (rc != 0) {
        wl_untake(w, id);
        return false;
    }
    if (op == 0)
        w->sends++;
    w->inflight++;
    return true;
}

/* Take every completion there is; each WR completes once, successfully or flushed. */
static void wl_poll(struct wl *w)
{
    struct iwarp_wc wc[32];
    int k;
    while ((k = iwarp_poll_cq(w->s->cq, 32, wc)) > 0) {
        for (int i = 0; i < k; i++) {
            uint64_t id = wc[i].wr_id;
            if (id >= w->n_wr || w->st[id] != 1)
                harness_fail(__FILE__, __LINE__, "completion of wr_id %llu: %s",
                             (unsigned long long)id,
                             id >= w->n_wr ? "never posted" : "completed before");
            if (wc[i].status != IWARP_WC_SUCCESS && wc[i].status != IWARP_WC_WR_FLUSH_ERR)
                harness_fail(__FILE__, __LINE__, "wr_id %llu: status %s", (unsigned long long)id,
                             iwarp_wc_status_str(wc[i].status));
            w->st[id] = 2;
            w->completed++;
            if (wc[i].status == IWARP_WC_WR_FLUSH_ERR) {
                w->flushed++;
                w->saw_flush = true;
            }
            if (wc[i].opcode == IWARP_WC_RECV)
                w->may_send = true; /* the client's first FPDU came (or a flush) */
            else
                w->inflight--;
        }
    }
    ASSERT_TRUE(k >= 0);
}

/* Keep up to KP_INFLIGHT send-queue WRs posted (none after a flush). */
static void wl_pump(struct wl *w)
{
    wl_poll(w);
    while (w->may_send && !w->saw_flush && w->inflight < KP_INFLIGHT)
        if (!wl_post_one(w, -1, 0))
            break;
}

/* ---- the victim ----------------------------------------------------------------------------- */

struct victim_args {
    enum kp_role role;
    enum kp_tr tr;
    uint16_t port; /* a client: where to connect */
    int fd;        /* reports to the survivor */
    bool caller, crc, hold, clean;
    uint32_t seed;
};

static void vreport(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n)
        _exit(3);
}

/* Runs until killed (or, clean, until the survivor disconnects after its workload). */
static void victim_main(const struct victim_args *a)
{
    enum iwarp_port_space ps = a->tr == TR_SCTP ? IWARP_PS_SCTP : IWARP_PS_TCP;
    struct sp_side s;
    sp_side_init(&s, a->caller ? IWARP_PROGRESS_CALLER : IWARP_PROGRESS_THREAD,
                 (int)(KP_SQ + KP_RQ + 16u));
    uint8_t *buf = calloc(1, 2u * KP_REGION);
    ASSERT_TRUE(buf != NULL);
    sp_fill(buf, 2u * KP_REGION, a->seed);
    struct iwarp_mr *mr = sp_reg(&s, buf, 2u * KP_REGION, 0);
    struct sp_end e = {0};
    e.mine = (struct sp_advert){.rkey = mr->rkey, .addr = (uintptr_t)buf, .len = KP_REGION};
    struct sp_cfg cfg = {.cap = {.max_send_wr = KP_SQ, .max_recv_wr = KP_RQ}};
    struct iwarp_conn_param cp = {.private_data = &e.mine,
                                  .private_data_len = sizeof e.mine,
                                  .responder_resources = 8,
                                  .initiator_depth = 8,
                                  .crc = a->crc,
                                  .timeout_ms = KP_CONNECT_MS};
    struct wl w;
    if (a->role == VICTIM_SERVER) {
        uint16_t port = sp_listen_ps(&s, ps);
        vreport(a->fd, &port, sizeof port);
        struct iwarp_cm_event *ev = sp_expect_event(&s, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
        vreport(a->fd, "R", 1);
        if (a->hold)
            for (;;)
                pause(); /* never answers: the survivor waits in MPA negotiation */
        e.id = ev->id;
        sp_take_advert(ev, &e.peer);
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
        sp_create_qp(&s, &e, &cfg, NULL);
        wl_init(&w, &s, e.qp, mr, buf, a->seed, a->tr);
        w.peer = e.peer;
        wl_post_recvs(&w);
        ASSERT_EQ(iwarp_cm_accept(e.id, &cp), 0);
        sp_expect_ack(&s, NULL, IWARP_CM_EVENT_ESTABLISHED);
    } else {
        struct sockaddr_in dst;
        sp_loopback4(&dst, a->port);
        if (a->tr == TR_SCTP)
            dst.sin_addr.s_addr = htonl(0x7F000002u); /* the SCTP relay's front */
        ASSERT_EQ(iwarp_cm_create_id(s.ch, &e.id, &e, ps), 0);
        ASSERT_EQ(iwarp_cm_resolve_addr(e.id, NULL, (struct sockaddr *)&dst, 1000), 0);
        sp_expect_ack(&s, NULL, IWARP_CM_EVENT_ADDR_RESOLVED);
        ASSERT_EQ(iwarp_cm_resolve_route(e.id, 1000), 0);
        sp_expect_ack(&s, NULL, IWARP_CM_EVENT_ROUTE_RESOLVED);
        sp_create_qp(&s, &e, &cfg, NULL);
        wl_init(&w, &s, e.qp, mr, buf, a->seed, a->tr);
        wl_post_recvs(&w);
        ASSERT_EQ(iwarp_cm_connect(e.id, &cp), 0);
        struct iwarp_cm_event *ev = sp_expect_event(&s, NULL, IWARP_CM_EVENT_ESTABLISHED);
        sp_take_advert(ev, &w.peer);
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
        w.may_send = true;
    }
    vreport(a->fd, "E", 1);
    /* the workload, until the connection ends (only a clean run gets there) */
    bool down = false;
    while (!down || w.completed < w.posted) {
        wl_pump(&w);
        struct iwarp_cm_event *ev = sp_try_event(&s);
        if (ev) {
            ASSERT_EQ(ev->event, IWARP_CM_EVENT_DISCONNECTED);
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
            down = true;
        }
        if (a->caller)
            iwarp_ctx_progress(s.ctx, 1);
        else
            (void)iwarp_cq_wait(s.cq, 1);
    }
    sp_end_destroy(&e);
    ASSERT_EQ(iwarp_dereg_mr(mr), 0);
    sp_side_fini(&s);
    free(buf);
    vreport(a->fd, "D", 1);
}

__attribute__((constructor)) static void victim_entry(void)
{
    const char *v = getenv("KP_VICTIM");
    if (!v)
        return;
    struct victim_args a = {0};
    unsigned role, tr, port, caller, crc, hold, clean;
    int fd;
    if (sscanf(v, "%u,%u,%u,%d,%u,%u,%u,%u,%u", &role, &tr, &port, &fd, &caller, &crc, &hold,
               &clean, &a.seed) != 9)
        _exit(2);
    a.role = (enum kp_role)role;
    a.tr = (enum kp_tr)tr;
    a.port = (uint16_t)port;
    a.fd = fd;
    a.caller = caller;
    a.crc = crc;
    a.hold = hold;
    a.clean = clean;
    victim_main(&a);
    fflush(NULL);
    exit(0); /* LSan runs at exit */
}

/* ---- the survivor --------------------------------------------------------------------------- */

struct victim {
    pid_t pid;
    int fd; /* its reports */
};

static void victim_start(struct victim *v, enum kp_role role, enum kp_tr tr, uint16_t port,
                         bool caller, bool crc, bool hold, bool clean, uint32_t seed)
{
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    char env[160];
    snprintf(env, sizeof env, "KP_VICTIM=%u,%u,%u,%d,%u,%u,%u,%u,%u", (unsigned)role, (unsigned)tr,
             (unsigned)port, 3, (unsigned)caller, (unsigned)crc, (unsigned)hold, (unsigned)clean,
             seed);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        /* the report pipe becomes fd 3, without close-on-exec; nothing else is inherited */
        if (dup2(p[1], 3) < 0)
            _exit(4);
        putenv(env);
        static char name[] = "kill_victim";
        char *argv[] = {name, NULL};
        execv("/proc/self/exe", argv);
        _exit(5);
    }
    close(p[1]);
    v->pid = pid;
    v->fd = p[0];
}

/* Read n octets of the victim's reports within ms; false when it is gone or silent. */
static bool victim_read(struct victim *v, void *out, size_t n, unsigned ms, struct sp_side *drive)
{
    size_t got = 0;
    struct deadline dl = deadline_in_ms(ms);
    while (got < n) {
        struct pollfd p = {.fd = v->fd, .events = POLLIN};
        if (drive && drive->mode == IWARP_PROGRESS_CALLER)
            iwarp_ctx_progress(drive->ctx, 0);
        int k = poll(&p, 1, drive ? 1 : 50);
        if (k > 0) {
            ssize_t r = read(v->fd, (uint8_t *)out + got, n - got);
            if (r <= 0)
                return false;
            got += (size_t)r;
        } else if (deadline_passed(&dl)) {
            return false;
        }
    }
    return true;
}

static void victim_kill(struct victim *v)
{
    ASSERT_EQ(kill(v->pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(v->pid, &status, 0), v->pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    close(v->fd);
}

static void victim_reap_clean(struct victim *v)
{
    char c = 0;
    while (c != 'D') /* after its 'R' and 'E' */
        ASSERT_TRUE(victim_read(v, &c, 1, KP_SETUP_MS, NULL));
    int status = 0;
    ASSERT_EQ(waitpid(v->pid, &status, 0), v->pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        harness_fail(__FILE__, __LINE__, "the clean victim ended with status %#x", status);
    close(v->fd);
}

static unsigned count_fds(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1u; /* the directory's own */
}

/* The survivor's side of one transport in one progress mode. */
struct surv {
    struct sp_side s;
    uint8_t *buf;
    struct iwarp_mr *mr;
    uint16_t port; /* its listener */
    unsigned fds;  /* the fd count between connections */
};

struct kp_stats {
    uint32_t kills[TR_N][ROLE_N][PH_N];
    uint32_t worst_ms[TR_N];
    uint32_t late; /* TCP kills whose end the relay passed on only after its 2 s */
};

struct kp_run {
    struct mpa_relay mr;
    struct sctp_relay sr;
    uint32_t rng;
    uint32_t bound_ms[TR_N];
    int only; /* IWARP_KILL_PHASE: every kill in that phase (-1: all in turn) */
    struct kp_stats st;
};

/* One connection of the survivor's and what happened to it. */
struct conn {
    struct surv *sv;
    enum kp_tr tr;
    struct sp_end e;
    struct wl w;
    bool established, ended, got_request;
    enum iwarp_cm_event_type end_event;
    int end_status;
    int accept_rc;
    bool accept_failed;
};

static bool is_terminal(enum iwarp_cm_event_type t)
{
    return t == IWARP_CM_EVENT_DISCONNECTED || t == IWARP_CM_EVENT_REJECTED ||
           t == IWARP_CM_EVENT_CONNECT_ERROR || t == IWARP_CM_EVENT_UNREACHABLE;
}

/* Handle the survivor's CM events; a CONNECT_REQUEST gives the connection its id. */
static void conn_events(struct conn *c)
{
    struct iwarp_cm_event *ev;
    while ((ev = sp_try_event(&c->sv->s)) != NULL) {
        switch (ev->event) {
        case IWARP_CM_EVENT_ADDR_RESOLVED:
        case IWARP_CM_EVENT_ROUTE_RESOLVED:
            harness_fail(__FILE__, __LINE__, "resolution events are taken where they are asked");
        case IWARP_CM_EVENT_CONNECT_REQUEST:
            ASSERT_TRUE(c->e.id == NULL);
            c->e.id = ev->id;
            ev->id->context_user = c;
            sp_take_advert(ev, &c->e.peer);
            c->got_request = true;
            break;
        case IWARP_CM_EVENT_ESTABLISHED:
            ASSERT_TRUE(ev->id == c->e.id);
            ASSERT_FALSE(c->established || c->ended);
            c->established = true;
            if (!c->got_request)
                sp_take_advert(ev, &c->e.peer); /* the survivor connected: the server's */
            c->w.peer = c->e.peer;
            if (c->tr == TR_SCTP)
                c->w.may_send = true; /* either side may send first (RFC 5043 §6) */
            break;
        default:
            if (!is_terminal(ev->event))
                harness_fail(__FILE__, __LINE__, "unexpected %s (%s)",
                             iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
            ASSERT_TRUE(ev->id == c->e.id);
            if (c->ended)
                harness_fail(__FILE__, __LINE__, "a second end: %s after %s",
                             iwarp_cm_event_str(ev->event), iwarp_cm_event_str(c->end_event));
            c->ended = true;
            c->end_event = ev->event;
            c->end_status = ev->status;
            break;
        }
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    }
}

/* One round of the survivor: events, completions, more work, progress. */
static void conn_round(struct conn *c, bool pump)
{
    conn_events(c);
    if (c->w.qp) {
        if (pump && c->established && !c->ended)
            wl_pump(&c->w);
        else
            wl_poll(&c->w);
    }
    if (c->sv->s.mode == IWARP_PROGRESS_CALLER)
        iwarp_ctx_progress(c->sv->s.ctx, 1);
    else
        deadline_pause_us(300);
}

static void conn_qp(struct conn *c, uint32_t seed)
{
    struct sp_cfg cfg = {.cap = {.max_send_wr = KP_SQ, .max_recv_wr = KP_RQ}};
    sp_create_qp(&c->sv->s, &c->e, &cfg, NULL);
    wl_init(&c->w, &c->sv->s, c->e.qp, c->sv->mr, c->sv->buf, seed, c->tr);
    wl_post_recvs(&c->w);
}

static struct iwarp_conn_param conn_param(struct conn *c, bool crc)
{
    c->e.mine = (struct sp_advert){
        .rkey = c->sv->mr->rkey, .addr = (uintptr_t)c->sv->buf, .len = KP_REGION};
    return (struct iwarp_conn_param){.private_data = &c->e.mine,
                                     .private_data_len = sizeof c->e.mine,
                                     .responder_resources = 8,
                                     .initiator_depth = 8,
                                     .crc = crc,
                                     .timeout_ms = KP_CONNECT_MS};
}

/* The survivor as the client: an id toward dst (its resolution done here); connect. */
static void conn_connect(struct conn *c, const struct sockaddr_in *dst, bool crc, uint32_t seed)
{
    enum iwarp_port_space ps = c->tr == TR_SCTP ? IWARP_PS_SCTP : IWARP_PS_TCP;
    ASSERT_EQ(iwarp_cm_create_id(c->sv->s.ch, &c->e.id, c, ps), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(c->e.id, NULL, (const struct sockaddr *)dst, 1000), 0);
    sp_expect_ack(&c->sv->s, NULL, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_resolve_route(c->e.id, 1000), 0);
    sp_expect_ack(&c->sv->s, NULL, IWARP_CM_EVENT_ROUTE_RESOLVED);
    conn_qp(c, seed);
    struct iwarp_conn_param cp = conn_param(c, crc);
    ASSERT_EQ(iwarp_cm_connect(c->e.id, &cp), 0);
    c->w.may_send = true; /* the initiator sends first (RFC 5044 §7.1.2) */
}

/* The victim's state as a failure reports it: alive, or how it ended (reaped here). */
static const char *victim_state(struct victim *v, char *buf, size_t len)
{
    int status = 0;
    pid_t r = waitpid(v->pid, &status, WNOHANG);
    if (r == 0)
        snprintf(buf, len, "alive");
    else if (r != v->pid)
        snprintf(buf, len, "not known (waitpid: %s)", strerror(errno));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, len, "exited with %d", WEXITSTATUS(status));
    return buf;
}

/* The relay a victim's SCTP packets pass through, whose counters a failure reports; NULL over
 * TCP. */
static struct sctp_relay *relay_of(struct kp_run *R, enum kp_tr tr)
{
    return tr == TR_SCTP ? &R->sr : NULL;
}

/* The survivor as the server: the CONNECT_REQUEST of victim v, within ms; sr: the relay its
 * SCTP packets come through (NULL over TCP). A failure says whether the victim lived and what
 * the relay carried, so that a rare miss shows where the connection attempt was lost. */
static void conn_wait_request(struct conn *c, struct victim *v, struct sctp_relay *sr, unsigned ms)
{
    struct deadline dl = deadline_in_ms(ms);
    while (!c->got_request) {
        if (deadline_passed(&dl)) {
            char st[96], relay[160] = "";
            if (sr) {
                uint32_t inits = 0;
                struct sr_dir c2s, s2c;
                sctp_relay_snapshot(sr, &inits, NULL, NULL, &c2s, &s2c);
                snprintf(relay, sizeof relay,
                         "; relay: %u INITs, %llu packets to us, %llu back (dropped %llu/%llu)",
                         inits, (unsigned long long)c2s.packets, (unsigned long long)s2c.packets,
                         (unsigned long long)c2s.dropped, (unsigned long long)s2c.dropped);
            }
            DEADLINE_FAIL(&dl, "a CONNECT_REQUEST (victim %s%s)", victim_state(v, st, sizeof st),
                          relay);
        }
        conn_round(c, false);
    }
}

static void conn_accept(struct conn *c, bool crc, uint32_t seed)
{
    conn_qp(c, seed);
    struct iwarp_conn_param ap = conn_param(c, crc);
    /* the victim may be dead already: the accept may fail, the end comes as an event */
    c->accept_rc = iwarp_cm_accept(c->e.id, &ap);
    if (c->accept_rc != 0) {
        /* the request was withdrawn: the id is closed, no event follows (a second end would
         * be caught), and the QP is in error */
        ASSERT_EQ(c->accept_rc, IWARP_ERR_CONN_RESET);
        c->ended = true;
        c->accept_failed = true;
    }
}

/* Run the workload until cond(c, arg) holds (within ms). */
static bool conn_until(struct conn *c, bool (*cond)(struct conn *, void *), void *arg, unsigned ms)
{
    struct deadline dl = deadline_in_ms(ms);
    while (!cond(c, arg)) {
        if (deadline_passed(&dl))
            return false;
        conn_round(c, true);
    }
    return true;
}

static bool c_established(struct conn *c, void *arg)
{
    (void)arg;
    return c->established || c->ended;
}

struct mr_cut_ref {
    struct mpa_relay *r;
    int dir;
};

static bool c_mr_cut(struct conn *c, void *arg)
{
    const struct mr_cut_ref *ref = arg;
    (void)c;
    return mr_cut_wait(ref->r, ref->dir, 0);
}

static bool c_sr_cut(struct conn *c, void *arg)
{
    (void)c;
    return sctp_relay_cut_done(arg);
}

static bool c_running(struct conn *c, void *arg)
{
    uint32_t *n = arg;
    return c->w.completed >= *n || c->ended;
}

/* After the kill: the end reported, every WR completed, within bound_ms of t_kill. The
 * survivor keeps its work posted until it sees the loss (SCTP needs data to retransmit). */
static uint32_t conn_expect_loss(struct conn *c, uint64_t t_kill, unsigned bound_ms)
{
    while (!c->ended || c->w.completed < c->w.posted) {
        if (sp_now_ms() - t_kill > bound_ms)
            harness_fail(__FILE__, __LINE__,
                         "%s: %u ms after the kill: %s (%s, accept %s), %u of %u WRs completed",
                         tr_name[c->tr], bound_ms, c->ended ? "ended" : "no end event",
                         c->established ? "ESTABLISHED seen" : "never ESTABLISHED",
                         iwarp_err_name(c->accept_rc), c->w.completed, c->w.posted);
        conn_round(c, !c->ended);
    }
    return (uint32_t)(sp_now_ms() - t_kill);
}

/* Take the connection down and check the survivor is back where it started. */
static void conn_destroy(struct conn *c)
{
    if (c->e.id) {
        iwarp_cm_destroy_qp(c->e.id);
        ASSERT_EQ(iwarp_cm_destroy_id(c->e.id), 0);
    }
    /* nothing completes after the destroy */
    wl_poll(&c->w);
    ASSERT_EQ(c->w.completed, c->w.posted);
}

static void check_fds(struct surv *sv)
{
    /* the library closes a connection's socket as its id is destroyed; a TCP socket being
     * reset may linger in the loop for a round: poll, bounded */
    struct deadline dl = deadline_in_ms(KP_SLACK_MS);
    unsigned n;
    while ((n = count_fds()) != sv->fds) {
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the fd count to come back to %u (%u now)", sv->fds, n);
        if (sv->s.mode == IWARP_PROGRESS_CALLER)
            iwarp_ctx_progress(sv->s.ctx, 1);
        else
            deadline_pause_us(1000);
    }
}

/* A clean connection with a fresh victim: the full workload both ways, then the survivor's
 * disconnect; everything succeeds. */
static void clean_run(struct kp_run *R, struct surv *sv, enum kp_tr tr, enum kp_role role)
{
    uint64_t t0 = sp_now_ms();
    struct conn c = {.sv = sv, .tr = tr};
    struct victim v;
    bool crc = rnd(&R->rng, 2);
    bool vcaller = rnd(&R->rng, 2);
    uint32_t seed = harness_xorshift32(&R->rng);
    if (role == VICTIM_CLIENT) {
        if (tr == TR_SCTP)
            sctp_relay_start(&R->sr, sv->port); /* SCTP victim clients reach us through it */
        victim_start(&v, role, tr, sv->port, vcaller, crc, false, true, seed);
        conn_wait_request(&c, &v, relay_of(R, tr), KP_SETUP_MS);
        conn_accept(&c, crc, seed ^ 1u);
    } else {
        victim_start(&v, role, tr, 0, vcaller, crc, false, true, seed);
        uint16_t port = 0;
        ASSERT_TRUE(victim_read(&v, &port, sizeof port, KP_SETUP_MS, NULL));
        struct sockaddr_in dst;
        sp_loopback4(&dst, port);
        conn_connect(&c, &dst, crc, seed ^ 1u);
    }
    ASSERT_TRUE(conn_until(&c, c_established, NULL, KP_SETUP_MS));
    ASSERT_TRUE(c.established && !c.ended);
    uint32_t n = 60;
    ASSERT_TRUE(conn_until(&c, c_running, &n, KP_SETUP_MS * 3u));
    struct iwarp_async_event ae;
    if (c.ended && iwarp_get_async_event(sv->s.ctx, &ae) == 0)
        fprintf(stderr, "  async event %d cause %#x from peer %d\n", (int)ae.event_type,
                ae.term_cause, (int)ae.term_from_peer);
    if (c.ended)
        harness_fail(__FILE__, __LINE__, "%s %s: the clean connection ended: %s (%s) after %u WRs",
                     tr_name[tr], role_name[role], iwarp_cm_event_str(c.end_event),
                     iwarp_err_name(c.end_status), c.w.completed);
    /* stop posting, let everything complete, then disconnect */
    struct deadline dl = deadline_in_ms(KP_SETUP_MS);
    while (c.w.inflight > 0) {
        conn_round(&c, false);
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the clean run's sends: %u in flight", c.w.inflight);
    }
    ASSERT_FALSE(c.w.saw_flush);
    ASSERT_EQ(iwarp_cm_disconnect(c.e.id), 0);
    uint64_t t = sp_now_ms();
    while (!c.ended || c.w.completed < c.w.posted) {
        if (sp_now_ms() - t > KP_SETUP_MS)
            harness_fail(__FILE__, __LINE__, "the clean disconnect: %u of %u", c.w.completed,
                         c.w.posted);
        conn_round(&c, false);
    }
    ASSERT_EQ(c.end_event, IWARP_CM_EVENT_DISCONNECTED);
    conn_destroy(&c);
    uint64_t t_reap = sp_now_ms();
    victim_reap_clean(&v);
    fprintf(stderr, "clean %s %s %s: %u WRs, %.2f s, the victim ended %.2f s after\n", tr_name[tr],
            role_name[role], sv->s.mode == IWARP_PROGRESS_CALLER ? "caller" : "thread", c.w.posted,
            (double)(sp_now_ms() - t0) / 1000.0, (double)(sp_now_ms() - t_reap) / 1000.0);
    if (tr == TR_SCTP && role == VICTIM_CLIENT)
        sctp_relay_stop(&R->sr);
}

/* One kill: a fresh victim in role, the survivor's connection driven to phase, the kill, the
 * checks. */
static void one_kill(struct kp_run *R, struct surv *sv, enum kp_tr tr, enum kp_role role,
                     enum kp_phase ph, uint32_t nr)
{
    struct conn c = {.sv = sv, .tr = tr};
    struct victim v;
    bool crc = rnd(&R->rng, 2);
    bool vcaller = rnd(&R->rng, 2);
    uint32_t seed = harness_xorshift32(&R->rng);
    bool hold = ph == PH_NEG && role == VICTIM_SERVER;
    /* the survivor's direction in the relay's terms: 0 is client to server */
    int to_surv = role == VICTIM_CLIENT ? 0 : 1;
    int from_surv = 1 - to_surv;
    bool surv_reads = rnd(&R->rng, 2); /* mid-rr: the survivor's own Read, or the victim's */
    struct mr_dir plan[2];
    memset(plan, 0, sizeof plan);
    bool neg_after_accept = rnd(&R->rng, 2);
    if (tr == TR_TCP) {
        if (ph == PH_FPDU) {
            plan[to_surv].cut_armed = true;
            plan[to_surv].match = MR_ANY_FPDU;
            plan[to_surv].skip = rnd(&R->rng, 40);
            plan[to_surv].at = 4u + rnd(&R->rng, 70000);
        } else if (ph == PH_RR) {
            int dir = surv_reads ? to_surv : from_surv;
            plan[dir].cut_armed = true;
            plan[dir].match = MR_READ_RESP;
            plan[dir].skip = rnd(&R->rng, 8);
            plan[dir].at = 4u + rnd(&R->rng, 70000);
        } else if (ph == PH_NEG && role == VICTIM_CLIENT && neg_after_accept) {
            plan[0].hold_after_mpa = true; /* the client's first FPDU never arrives */
        }
    }
    uint16_t vport = 0;
    if (role == VICTIM_CLIENT) {
        uint16_t to = sv->port;
        if (tr == TR_TCP) {
            mr_arm(&R->mr, sv->port, plan);
            to = R->mr.port;
        } else {
            sctp_relay_start(&R->sr, sv->port);
        }
        victim_start(&v, role, tr, to, vcaller, crc, hold, false, seed);
    } else {
        victim_start(&v, role, tr, 0, vcaller, crc, hold, false, seed);
        ASSERT_TRUE(victim_read(&v, &vport, sizeof vport, KP_SETUP_MS, NULL));
        struct sockaddr_in dst;
        sp_loopback4(&dst, vport);
        if (tr == TR_TCP) {
            mr_arm(&R->mr, vport, plan);
            dst.sin_port = htons(R->mr.port);
        } else {
            sctp_relay_start(&R->sr, vport);
            dst = R->sr.front_addr;
        }
        conn_connect(&c, &dst, crc, seed ^ 1u);
    }
    if (tr == TR_SCTP && (ph == PH_FPDU || ph == PH_RR)) {
        bool victim_sends = ph == PH_FPDU || surv_reads;
        bool c2s = (role == VICTIM_CLIENT) == victim_sends;
        sctp_relay_cut_arm(&R->sr, ph == PH_FPDU ? SR_CUT_PARTIAL : SR_CUT_READ_RESP, c2s,
                           rnd(&R->rng, ph == PH_FPDU ? 40 : 8));
    }

    /* drive the connection to the phase */
    if (ph == PH_NEG) {
        if (role == VICTIM_SERVER) {
            char r = 0;
            ASSERT_TRUE(victim_read(&v, &r, 1, KP_SETUP_MS, &sv->s)); /* it holds the request */
            ASSERT_EQ(r, 'R');
            deadline_pause_us(rnd(&R->rng, 2000));
        } else {
            conn_wait_request(&c, &v, relay_of(R, tr), KP_SETUP_MS);
            if (neg_after_accept && tr == TR_TCP) /* the relay holds its first FPDU back */
                conn_accept(&c, crc, seed ^ 1u);
        }
    } else {
        if (role == VICTIM_CLIENT) {
            conn_wait_request(&c, &v, relay_of(R, tr), KP_SETUP_MS);
            conn_accept(&c, crc, seed ^ 1u);
        }
        ASSERT_TRUE(conn_until(&c, c_established, NULL, KP_SETUP_MS));
        ASSERT_TRUE(c.established && !c.ended);
        if (ph == PH_FPDU || ph == PH_RR) {
            /* the survivor's own Reads make mid-rr come sooner when it is the reader */
            if (ph == PH_RR && surv_reads && c.w.may_send)
                (void)wl_post_one(&c.w, 2, (1u << 20) >> c.w.shift);
            struct mr_cut_ref ref = {&R->mr, plan[0].cut_armed ? 0 : 1};
            bool cut = tr == TR_TCP ? conn_until(&c, c_mr_cut, &ref, KP_SETUP_MS)
                                    : conn_until(&c, c_sr_cut, &R->sr, KP_SETUP_MS);
            if (!cut)
                harness_fail(__FILE__, __LINE__,
                             "%s %s %s: the relay's cut never came (relay: stage %d/%d, FPDUs "
                             "%llu/%llu, matching %llu/%llu; survivor: %u of %u WRs done, %s)",
                             tr_name[tr], role_name[role], phase_name[ph], R->mr.d[0].stage,
                             R->mr.d[1].stage, (unsigned long long)R->mr.d[0].fpdus,
                             (unsigned long long)R->mr.d[1].fpdus,
                             (unsigned long long)R->mr.d[0].matching,
                             (unsigned long long)R->mr.d[1].matching, c.w.completed, c.w.posted,
                             c.ended ? "ended" : "up");
            ASSERT_FALSE(c.ended);
        } else {
            uint32_t n = c.w.completed + 1u + rnd(&R->rng, 40);
            ASSERT_TRUE(conn_until(&c, c_running, &n, KP_SETUP_MS));
            ASSERT_FALSE(c.ended);
            ASSERT_EQ(iwarp_cm_disconnect(c.e.id), 0);
            deadline_pause_us(rnd(&R->rng, 3000));
            /* the disconnect may have finished already (the victim answered at once): then
             * the kill came after the end, and is not counted as a teardown */
            conn_events(&c);
            if (c.ended)
                ph = PH_AFTER;
        }
    }
    /* the phase is where the survivor stands now: not ended (checked above for the data
     * phases; a negotiation cannot have ended either: the victim never answered or the
     * survivor has not answered) */
    if (ph == PH_NEG)
        ASSERT_FALSE(c.ended);
    uint64_t t_kill = sp_now_ms();
    victim_kill(&v);
    if (ph == PH_NEG && role == VICTIM_CLIENT && !(neg_after_accept && tr == TR_TCP))
        conn_accept(&c, crc, seed ^ 1u); /* an accept of a connection whose peer is dead */
    uint32_t took = conn_expect_loss(&c, t_kill, R->bound_ms[tr]);
    if (ph != PH_NEG)
        ASSERT_EQ(c.end_event, IWARP_CM_EVENT_DISCONNECTED);
    else if (role == VICTIM_SERVER)
        ASSERT_TRUE(c.end_event != IWARP_CM_EVENT_DISCONNECTED);
    conn_destroy(&c);
    if (tr == TR_TCP) {
        mr_wait_closed(&R->mr, KP_SLACK_MS);
        pthread_mutex_lock(&R->mr.lock);
        for (int i = 0; i < 2; i++)
            if (R->mr.late[i]) {
                /* the survivor saw the loss anyway; say what held the relay's FIN or reset */
                fprintf(stderr,
                        "  relay: the end toward the %s passed on after 2 s: %s (outq %d, "
                        "rxq %u, epoll interest %#lx)\n",
                        i == to_surv ? "survivor" : "victim",
                        R->mr.late[i] == 1 ? "octets unsent" : "octets unread", R->mr.late_outq[i],
                        R->mr.late_rxq[i], R->mr.late_interest[i]);
                R->st.late++;
            }
        pthread_mutex_unlock(&R->mr.lock);
    } else {
        sctp_relay_stop(&R->sr);
    }
    check_fds(sv);
    if (took > R->st.worst_ms[tr])
        R->st.worst_ms[tr] = took;
    R->st.kills[tr][role][ph]++;
    fprintf(stderr, "kill %u %s %s %s %s %u ms\n", nr, tr_name[tr], role_name[role], phase_name[ph],
            c.accept_failed ? "accept-failed" : iwarp_cm_event_str(c.end_event), took);
}

static uint32_t env_u32(const char *name, uint32_t dflt)
{
    const char *s = getenv(name);
    return s && *s ? (uint32_t)strtoul(s, NULL, 0) : dflt;
}

static void surv_init(struct surv *sv, enum kp_tr tr, enum iwarp_progress_mode mode)
{
    memset(sv, 0, sizeof *sv);
    sp_side_init(&sv->s, mode, (int)(KP_SQ + KP_RQ + 16u));
    sv->buf = calloc(1, 2u * KP_REGION);
    ASSERT_TRUE(sv->buf != NULL);
    sp_fill(sv->buf, 2u * KP_REGION, 77);
    sv->mr = sp_reg(&sv->s, sv->buf, 2u * KP_REGION, 0);
    sv->port = sp_listen_ps(&sv->s, tr == TR_SCTP ? IWARP_PS_SCTP : IWARP_PS_TCP);
}

static void surv_fini(struct surv *sv)
{
    ASSERT_EQ(iwarp_dereg_mr(sv->mr), 0);
    sp_side_fini(&sv->s);
    free(sv->buf);
}

static void print_table(const struct kp_run *R)
{
    if (R->st.late)
        fprintf(stderr, "  relay: %u ends passed on after 2 s\n", R->st.late);
    fprintf(stderr, "\n  %-5s %-14s %-9s %6s %9s\n", "tr", "victim", "phase", "kills", "survived");
    for (int t = 0; t < TR_N; t++)
        for (int r = 0; r < ROLE_N; r++)
            for (int p = 0; p < PH_N; p++)
                if (R->st.kills[t][r][p])
                    fprintf(stderr, "  %-5s %-14s %-9s %6u %9u\n", tr_name[t], role_name[r],
                            phase_name[p], R->st.kills[t][r][p], R->st.kills[t][r][p]);
    for (int t = 0; t < TR_N; t++)
        if (R->st.worst_ms[t])
            fprintf(stderr, "  %s: slowest loss seen %u ms after its kill (bound %u ms)\n",
                    tr_name[t], R->st.worst_ms[t], R->bound_ms[t]);
}

static void run_transport(struct kp_run *R, enum kp_tr tr, uint32_t kills)
{
    struct surv sv[2];
    unsigned fds0 = count_fds();
    surv_init(&sv[0], tr, IWARP_PROGRESS_THREAD);
    surv_init(&sv[1], tr, IWARP_PROGRESS_CALLER);
    /* a clean connection each way first: what a context creates on first use is there */
    for (int m = 0; m < 2; m++) {
        clean_run(R, &sv[m], tr, VICTIM_CLIENT);
        clean_run(R, &sv[m], tr, VICTIM_SERVER);
    }
    for (int m = 0; m < 2; m++)
        sv[m].fds = count_fds();
    ASSERT_EQ(sv[0].fds, sv[1].fds);
    for (uint32_t k = 0; k < kills; k++) {
        /* every phase, role and mode in turn; the point inside the phase at random */
        enum kp_phase ph = (enum kp_phase)(k % PH_AIMED);
        if (R->only >= 0)
            ph = (enum kp_phase)R->only;
        enum kp_role role = (enum kp_role)(k / PH_AIMED % ROLE_N);
        struct surv *s = &sv[k / (PH_AIMED * ROLE_N) % 2u];
        one_kill(R, s, tr, role, ph, k);
    }
    /* and it still accepts and makes connections */
    for (int m = 0; m < 2; m++) {
        clean_run(R, &sv[m], tr, VICTIM_CLIENT);
        clean_run(R, &sv[m], tr, VICTIM_SERVER);
        check_fds(&sv[m]);
    }
    surv_fini(&sv[1]);
    surv_fini(&sv[0]);
    unsigned n = count_fds();
    if (tr == TR_TCP)
        ASSERT_EQ(n, fds0);
    else
        ASSERT_TRUE(n <= fds0 + 2u); /* llp_sctp's process-wide usrsctp socketpair, if any */
}

TEST(a_peer_killed_at_any_point_leaves_the_survivor_whole)
{
    struct kp_run *R = calloc(1, sizeof *R);
    ASSERT_TRUE(R != NULL);
    signal(SIGPIPE, SIG_IGN);
    R->rng = env_u32("IWARP_KILL_SEED", 0x5eed1234u) | 1u;
    const char *trs = getenv("IWARP_KILL_TRANSPORTS");
    if (!trs || !*trs)
        trs = "tcp,sctp";
    R->bound_ms[TR_TCP] = KP_TCP_BOUND_MS;
    R->only = -1;
    const char *only = getenv("IWARP_KILL_PHASE");
    for (int p = 0; only && p < (int)PH_AIMED; p++)
        if (strcmp(only, phase_name[p]) == 0)
            R->only = p;
    ASSERT_EQ(setenv("IWARP_SCTP_RTO_MS", KP_SCTP_RTO, 1), 0);
    ASSERT_EQ(setenv("IWARP_SCTP_HB_MS", KP_SCTP_HB, 1), 0);
    ASSERT_EQ(unsetenv("IWARP_SCTP_FAULT"), 0);
    fprintf(stderr, "  seed %#x\n", R->rng);
    mr_start(&R->mr);
    if (strstr(trs, "tcp"))
        run_transport(R, TR_TCP, env_u32("IWARP_KILL_POINTS", 32));
#if defined(IWARP_HAVE_SCTP) && !defined(IWARP_TEST_HOOKS)
    /* the bounds below need usrsctp's timers shortened (IWARP_SCTP_RTO_MS), which only a build
     * with the test hooks reads (Release has none) */
    if (strstr(trs, "sctp"))
        fprintf(stderr, "  sctp: not run: this build has no test hooks (IWARP_TEST_HOOKS)\n");
#elif defined(IWARP_HAVE_SCTP)
    if (strstr(trs, "sctp")) {
        /* the stack is up once a context has an endpoint: read its limits then */
        struct sp_side probe;
        sp_side_init(&probe, IWARP_PROGRESS_THREAD, 4);
        (void)sp_listen_ps(&probe, IWARP_PS_SCTP);
        uint32_t rtx = usrsctp_sysctl_get_sctp_assoc_rtx_max_default();
        uint32_t hb = usrsctp_sysctl_get_sctp_heartbeat_interval_default();
        uint32_t rto_max = usrsctp_sysctl_get_sctp_rto_max_default();
        sp_side_fini(&probe);
        ASSERT_EQ(rto_max, KP_RTO_MAX_MS);
        ASSERT_EQ(hb, KP_HB_MS);
        /* data outstanding: rtx + 1 timeouts of at most rto_max; idle: rtx + 1 unanswered
         * heartbeats, each sent hb + RTO * [0.5, 1.5) after the last (usrsctp's jitter) */
        uint32_t rtx_ms = (rtx + 1u) * (hb + rto_max * 3u / 2u);
        uint32_t b = rtx_ms > KP_CONNECT_MS ? rtx_ms : KP_CONNECT_MS;
        b = b > KP_LINGER_MS ? b : KP_LINGER_MS;
        R->bound_ms[TR_SCTP] = b + KP_SLACK_MS;
        fprintf(stderr,
                "  sctp: RTO %s ms, assoc_rtx_max %u, heartbeat %u ms: loss within %u ms of "
                "retransmissions or heartbeats, bound %u ms\n",
                KP_SCTP_RTO, rtx, hb, rtx_ms, R->bound_ms[TR_SCTP]);
        run_transport(R, TR_SCTP, env_u32("IWARP_KILL_POINTS", 16));
    }
#endif
    mr_stop(&R->mr);
    print_table(R);
    free(R);
}
