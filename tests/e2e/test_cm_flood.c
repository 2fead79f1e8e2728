/* SPDX-License-Identifier: BSD-2-Clause */
/* Legitimate connects under a flood of MPA startups that never finish (docs/design.md,
 * "Floods"). A child process (raw sockets only) opens R connections a second to a libiwarp
 * listener whose context caps its pending startups at P (iwarp_ctx_attr.mpa_pending_max) and
 * times them out after T (mpa_startup_timeout_ms), in three kinds, in turn:
 *   stalling:   connect and send nothing;
 *   trickling:  send an MPA Request one octet every 100 ms (84 octets: never done within T);
 *   abandoning: connect and close at once (a FIN, or every other time a RST).
 * Meanwhile a libiwarp client connects N times (and on for at least S seconds of flood), does
 * one Send each way (verified) and disconnects. At least 99% of the connects must be up within 2 s
 * each; the peak number of open fds of the process (server, client and test) must stay within P of
 * where it was before the flood. The figures are printed: R achieved, P, T, the success rate, the
 * longest connect, the peak RSS (VmHWM) and fds.
 *
 * Bigger runs: IWARP_FLOOD_RATE (attempts a second, default 450), IWARP_FLOOD_CONNECTS (N,
 * default 100), IWARP_FLOOD_SECONDS (S, default 5), IWARP_FLOOD_P (default 64), IWARP_FLOOD_T_MS
 * (default 1000).
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stack_pair.h"

#define CONNECT_LIMIT_MS 2000u
#ifdef __SANITIZE_ADDRESS__
#define ASAN_NOTE "; ASan build: freed memory stays in its quarantine"
#else
#define ASAN_NOTE ""
#endif
#define TRICKLE_PD_LEN   64u /* the trickled Request's PD_Length: 84 octets in all */
#define TRICKLE_EVERY_NS 100000000ull
#define FLOOD_MAX_OPEN   4000u /* the child's open sockets, at most */
#define FLOOD_MAX_S      120u  /* the child stops by itself after this long */

static unsigned env_u(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

/* ---- the flood (child process) ----------------------------------------------------------- */

enum kind { STALL = 0, TRICKLE, ABANDON };

struct flood_stats {
    uint64_t attempts[3];    /* connections opened, per kind */
    uint64_t refused;        /* connect() failed at once */
    uint64_t closed_by_srv;  /* stalling or trickling connections the server closed or reset */
    uint64_t closed_after_t; /* ... of which at least T after their connect (timed out) */
    uint64_t skipped;        /* attempts not made: FLOOD_MAX_OPEN sockets open */
    uint64_t duration_ns;    /* from the first attempt to the stop */
};

struct slot {
    int fd;
    enum kind kind;
    uint32_t off;     /* trickling: octets sent */
    uint64_t next_at; /* trickling: when the next octet goes */
    uint64_t opened;  /* when it connected */
};

/* The server closed s (or it failed): count it and close it. */
static void flood_close(struct slot *s, struct slot *open, uint32_t *n_open, uint64_t t_ns,
                        struct flood_stats *st)
{
    st->closed_by_srv++;
    if (deadline_now_ns() - s->opened >= t_ns)
        st->closed_after_t++;
    close(s->fd);
    *s = open[--*n_open];
}

/* Opens one connection of kind k to dst; returns its fd (-1: refused at once, or abandoned). */
static int flood_open(const struct sockaddr_in *dst, enum kind k, uint32_t nth,
                      struct flood_stats *st)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    st->attempts[k]++;
    if (connect(fd, (const struct sockaddr *)dst, sizeof *dst) != 0 && errno != EINPROGRESS) {
        st->refused++;
        close(fd);
        return -1;
    }
    if (k == ABANDON) {
        if (nth & 1u) { /* a RST instead of a FIN */
            struct linger lg = {.l_onoff = 1, .l_linger = 0};
            (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        close(fd);
        return -1;
    }
    return fd;
}

/* The child: floods 127.0.0.1:port at rate attempts a second until ctl is readable (or closed),
 * then writes its flood_stats to out (t_ms: the server's T, to tell its timeouts). Never
 * returns. */
static void flood(uint16_t port, unsigned rate, unsigned t_ms, int ctl, int out)
{
    uint64_t t_ns = (uint64_t)t_ms * 1000000u;
    struct sockaddr_in dst;
    sp_loopback4(&dst, port);
    /* RFC 5044 §7.1.1: key "MPA ID Req Frame", C (0x40), Rev 1, PD_Length TRICKLE_PD_LEN */
    uint8_t req[20 + TRICKLE_PD_LEN] = "MPA ID Req Frame";
    req[16] = 0x40;
    req[17] = 1;
    req[19] = (uint8_t)TRICKLE_PD_LEN;
    static struct slot open[FLOOD_MAX_OPEN];
    static struct pollfd pfd[FLOOD_MAX_OPEN + 1u];
    uint32_t n_open = 0, nth = 0;
    struct flood_stats st = {0};
    uint64_t period = 1000000000ull / (rate ? rate : 1u);
    uint64_t start = deadline_now_ns(), next = start;
    bool told = false;
    for (;;) {
        uint64_t now = deadline_now_ns();
        if (now - start > FLOOD_MAX_S * 1000000000ull)
            break;
        /* the attempts due (a late wake-up makes up for the missed ones, at most 64 at once) */
        for (int burst = 0; next <= now && burst < 64; burst++, next += period) {
            enum kind k = (enum kind)(nth % 3u);
            if (n_open == FLOOD_MAX_OPEN && k != ABANDON) {
                st.skipped++;
                nth++;
                continue;
            }
            int fd = flood_open(&dst, k, nth / 3u, &st);
            nth++;
            if (fd >= 0)
                open[n_open++] = (struct slot){.fd = fd, .kind = k, .next_at = now, .opened = now};
        }
        if (next + 64u * period < now)
            next = now;                       /* far behind: do not try to catch up */
        if (!told && write(out, "s", 1) != 1) /* started: the parent may go on */
            _exit(1);
        told = true;
        /* trickle what is due */
        uint64_t wake = next;
        for (uint32_t i = 0; i < n_open; i++) {
            struct slot *s = &open[i];
            if (s->kind != TRICKLE || s->off >= sizeof req)
                continue;
            if (s->next_at <= now) {
                ssize_t k = send(s->fd, req + s->off, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k == 1) {
                    s->off++;
                } else if (errno != EAGAIN && errno != ENOTCONN) {
                    flood_close(s, open, &n_open, t_ns, &st);
                    i--;
                    continue;
                }
                s->next_at = now + TRICKLE_EVERY_NS;
            }
            if (s->next_at < wake)
                wake = s->next_at;
        }
        /* the server's closes, and the stop */
        for (uint32_t i = 0; i < n_open; i++)
            pfd[i] = (struct pollfd){.fd = open[i].fd, .events = POLLIN};
        pfd[n_open] = (struct pollfd){.fd = ctl, .events = POLLIN};
        now = deadline_now_ns();
        uint64_t wait_ns = wake > now ? wake - now : 0;
        struct timespec ts = {.tv_sec = (time_t)(wait_ns / 1000000000u),
                              .tv_nsec = (long)(wait_ns % 1000000000u)};
        int n = ppoll(pfd, n_open + 1u, &ts, NULL);
        if (n <= 0)
            continue;
        if (pfd[n_open].revents)
            break;
        for (uint32_t i = n_open; i-- > 0;) {
            if (!pfd[i].revents)
                continue;
            uint8_t b[16];
            ssize_t k = recv(open[i].fd, b, sizeof b, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                flood_close(&open[i], open, &n_open, t_ns, &st);
        }
    }
    st.duration_ns = deadline_now_ns() - start;
    (void)!write(out, &st, sizeof st);
    _exit(0);
}

/* ---- measuring the process --------------------------------------------------------------- */

static unsigned count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    unsigned n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3u; /* ".", ".." and the directory's own fd */
}

/* A /proc/self/status field in kB ("VmHWM:", "VmRSS:"). */
static unsigned long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long kb = 0;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n))
            kb = strtoul(line + n, NULL, 10);
    fclose(f);
    return kb;
}

static atomic_bool sampling;
static atomic_uint peak_fds;

static void *fd_sampler(void *arg)
{
    (void)arg;
    while (atomic_load(&sampling)) {
        unsigned n = count_fds();
        if (n > atomic_load(&peak_fds))
            atomic_store(&peak_fds, n);
        deadline_pause_us(2000);
    }
    return NULL;
}

static atomic_int n_evicted;

static void count_evictions(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    if (level == IWARP_LOG_INFO && strstr(msg, "mpa_pending_max"))
        atomic_fetch_add(&n_evicted, 1);
}

/* ---- the legitimate client ---------------------------------------------------------------- */

#define MSG_LEN 64u

struct legit {
    struct sp_side *srv, *cli;
    uint8_t *sbuf, *cbuf; /* [0, MSG_LEN): receive, [MSG_LEN, 2 MSG_LEN): send */
    struct iwarp_mr *smr, *cmr;
    uint32_t magic;
};

/* A CONNECT_REQUEST on the server: the legitimate one (its private data is magic, seq) gets a
 * QP, a receive and an accept; anything else is rejected. Returns the accepted id or NULL. */
static struct iwarp_cm_id *srv_request(struct legit *g, struct iwarp_cm_event *ev, uint32_t seq)
{
    uint32_t want[2] = {g->magic, seq};
    struct iwarp_cm_id *id = ev->id;
    bool ours =
        ev->param.private_data_len == sizeof want && !memcmp(ev->param.private_data, want, 8);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    if (!ours) {
        ASSERT_EQ(iwarp_cm_reject(id, NULL, 0), 0);
        ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
        return NULL;
    }
    struct sp_end e = {.id = id};
    struct sp_cfg cfg = {.cap = {.max_send_wr = 4, .max_recv_wr = 4}};
    sp_create_qp(g->srv, &e, &cfg, NULL);
    ASSERT_EQ(sp_post_recv(e.qp, 1, g->sbuf, MSG_LEN, g->smr->lkey), 0);
    struct iwarp_conn_param ap = {.responder_resources = 4, .initiator_depth = 4};
    ASSERT_EQ(iwarp_cm_accept(id, &ap), 0);
    return id;
}

/* One legitimate connection: connect, a verified Send each way, disconnect. Returns the
 * milliseconds from iwarp_cm_connect to ESTABLISHED at the client, or UINT64_MAX when the
 * connect failed (its event is printed). */
static uint64_t legit_once(struct legit *g, uint32_t seq)
{
    struct sp_side *srv = g->srv, *cli = g->cli;
    struct sockaddr_in dst;
    sp_loopback4(&dst, ntohs(((const struct sockaddr_in *)&srv->listen->local_addr)->sin_port));
    struct sp_end c = {0};
    ASSERT_EQ(iwarp_cm_create_id(cli->ch, &c.id, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(c.id, NULL, (struct sockaddr *)&dst, 1000), 0);
    sp_expect_ack(cli, NULL, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_resolve_route(c.id, 1000), 0);
    sp_expect_ack(cli, NULL, IWARP_CM_EVENT_ROUTE_RESOLVED);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 4, .max_recv_wr = 4}};
    sp_create_qp(cli, &c, &cfg, NULL);
    ASSERT_EQ(sp_post_recv(c.qp, 2, g->cbuf, MSG_LEN, g->cmr->lkey), 0);
    uint32_t pd[2] = {g->magic, seq};
    struct iwarp_conn_param cp = {.private_data = pd,
                                  .private_data_len = sizeof pd,
                                  .responder_resources = 4,
                                  .initiator_depth = 4};
    uint64_t t0 = deadline_now_ns(), took = UINT64_MAX;
    ASSERT_EQ(iwarp_cm_connect(c.id, &cp), 0);

    struct iwarp_cm_id *sid = NULL;
    bool srv_up = false, cli_done = false;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (!cli_done || (took != UINT64_MAX && !srv_up)) {
        struct iwarp_cm_event *ev;
        bool any = false;
        while ((ev = sp_try_event(srv)) != NULL) {
            any = true;
            if (ev->event == IWARP_CM_EVENT_CONNECT_REQUEST) {
                struct iwarp_cm_id *id = srv_request(g, ev, seq);
                if (id)
                    sid = id;
                continue;
            }
            if (ev->event == IWARP_CM_EVENT_ESTABLISHED && ev->id == sid)
                srv_up = true;
            else
                harness_fail(__FILE__, __LINE__, "server: unexpected %s (status %s)",
                             iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
        }
        while ((ev = sp_try_event(cli)) != NULL) {
            any = true;
            cli_done = true;
            if (ev->event == IWARP_CM_EVENT_ESTABLISHED)
                took = (deadline_now_ns() - t0) / 1000000u;
            else
                printf("connect %u: %s (status %s)\n", seq, iwarp_cm_event_str(ev->event),
                       iwarp_err_name(ev->status));
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
        }
        if (!any) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "connect %u to end (client %s, server %s)", seq,
                              cli_done ? "done" : "waiting", srv_up ? "up" : "not up");
            sp_idle(srv, cli);
        }
    }
    if (took == UINT64_MAX) {
        if (sid) { /* the server accepted what the client gave up on */
            iwarp_cm_destroy_qp(sid);
            ASSERT_EQ(iwarp_cm_destroy_id(sid), 0);
        }
        sp_end_destroy(&c);
        return took;
    }
    struct sp_end s = {.id = sid, .qp = sid->qp};

    /* a Send each way, the client's first (RFC 5044 §7.1.2 rule 4), each verified */
    sp_fill(g->cbuf + MSG_LEN, MSG_LEN, 2 * seq);
    ASSERT_EQ(sp_post(c.qp, 3, IWARP_WR_SEND, IWARP_SEND_SIGNALED, g->cbuf + MSG_LEN, MSG_LEN,
                      g->cmr->lkey, 0, 0),
              0);
    sp_poll_ok(cli, srv, IWARP_WC_SEND);
    struct iwarp_wc wc = sp_poll_ok(srv, cli, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, MSG_LEN);
    SP_ASSERT_PATTERN(g->sbuf, MSG_LEN, 2 * seq);
    sp_fill(g->sbuf + MSG_LEN, MSG_LEN, 2 * seq + 1);
    ASSERT_EQ(sp_post(s.qp, 4, IWARP_WR_SEND, IWARP_SEND_SIGNALED, g->sbuf + MSG_LEN, MSG_LEN,
                      g->smr->lkey, 0, 0),
              0);
    sp_poll_ok(srv, cli, IWARP_WC_SEND);
    wc = sp_poll_ok(cli, srv, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, MSG_LEN);
    SP_ASSERT_PATTERN(g->cbuf, MSG_LEN, 2 * seq + 1);

    ASSERT_EQ(iwarp_cm_disconnect(c.id), 0);
    sp_expect_ack(cli, srv, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(srv, cli, IWARP_CM_EVENT_DISCONNECTED);
    sp_end_destroy(&c);
    sp_end_destroy(&s);
    return took;
}

TEST(legitimate_connects_succeed_under_a_flood_of_stalled_startups)
{
    unsigned rate = env_u("IWARP_FLOOD_RATE", 450);
    unsigned n_min = env_u("IWARP_FLOOD_CONNECTS", 100);
    unsigned min_s = env_u("IWARP_FLOOD_SECONDS", 5);
    unsigned p = env_u("IWARP_FLOOD_P", 64);
    unsigned t_ms = env_u("IWARP_FLOOD_T_MS", 1000);
    ASSERT_TRUE(n_min > 0);

    /* the child first, while this process has no thread */
    int to_child[2], from_child[2];
    ASSERT_EQ(pipe(to_child), 0);
    ASSERT_EQ(pipe(from_child), 0);
    pid_t child = fork();
    ASSERT_TRUE(child >= 0);
    if (child == 0) {
        close(to_child[1]);
        close(from_child[0]);
        uint16_t port;
        if (read(to_child[0], &port, sizeof port) != (ssize_t)sizeof port)
            _exit(1);
        flood(port, rate, t_ms, to_child[0], from_child[1]);
    }
    close(to_child[0]);
    close(from_child[1]);

    atomic_store(&n_evicted, 0);
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.log = count_evictions;
    a.log_level = IWARP_LOG_INFO;
    a.comp_mask = IWARP_CTX_ATTR_MPA_PENDING_MAX | IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT;
    a.mpa_pending_max = p;
    a.mpa_startup_timeout_ms = t_ms;
    struct sp_side srv, cli;
    sp_side_init_attr(&srv, NULL, &a, 16, false);
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, 16);
    struct legit g = {.srv = &srv, .cli = &cli, .magic = 0x6c656769u};
    g.sbuf = calloc(1, 2 * MSG_LEN);
    g.cbuf = calloc(1, 2 * MSG_LEN);
    g.smr = sp_reg(&srv, g.sbuf, 2 * MSG_LEN, 0);
    g.cmr = sp_reg(&cli, g.cbuf, 2 * MSG_LEN, 0);
    uint16_t port = sp_listen(&srv);

    /* one connect before the flood: what the process holds at rest */
    ASSERT_TRUE(legit_once(&g, 0) != UINT64_MAX);
    unsigned base_fds = count_fds();
    unsigned long base_rss = status_kb("VmRSS:");
    atomic_store(&peak_fds, base_fds);
    atomic_store(&sampling, true);
    pthread_t sampler;
    ASSERT_EQ(pthread_create(&sampler, NULL, fd_sampler, NULL), 0);

    /* the flood */
    ASSERT_EQ(write(to_child[1], &port, sizeof port), (ssize_t)sizeof port);
    char started;
    ASSERT_EQ(read(from_child[0], &started, 1), 1);

    unsigned ok = 0, n = 0;
    uint64_t max_ms = 0, sum_ms = 0;
    struct deadline flood_for = deadline_in_ms(1000u * min_s);
    for (uint32_t k = 1; k <= n_min || !deadline_passed(&flood_for); k++) {
        n++;
        uint64_t ms = legit_once(&g, k);
        if (ms != UINT64_MAX) {
            sum_ms += ms;
            if (ms > max_ms)
                max_ms = ms;
        }
        if (ms <= CONNECT_LIMIT_MS)
            ok++;
        else if (ms != UINT64_MAX)
            printf("connect %u took %llu ms\n", k, (unsigned long long)ms);
    }
    int evicted = atomic_load(&n_evicted);

    /* stop the flood and take its figures */
    ASSERT_EQ(write(to_child[1], "x", 1), 1);
    struct flood_stats st;
    ASSERT_EQ(read(from_child[0], &st, sizeof st), (ssize_t)sizeof st);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    atomic_store(&sampling, false);
    ASSERT_EQ(pthread_join(sampler, NULL), 0);
    unsigned fds = atomic_load(&peak_fds);
    unsigned long hwm = status_kb("VmHWM:");

    uint64_t total = st.attempts[STALL] + st.attempts[TRICKLE] + st.attempts[ABANDON];
    double secs = (double)st.duration_ns / 1e9;
    printf("flood: P = %u, T = %u ms, R = %.0f attempts/s achieved (asked %u; %llu stalling, "
           "%llu trickling, %llu abandoning in %.1f s; %llu refused, %llu skipped, %llu closed "
           "by the server, %llu of them after T, %d evictions logged)\n",
           p, t_ms, (double)total / secs, rate, (unsigned long long)st.attempts[STALL],
           (unsigned long long)st.attempts[TRICKLE], (unsigned long long)st.attempts[ABANDON], secs,
           (unsigned long long)st.refused, (unsigned long long)st.skipped,
           (unsigned long long)st.closed_by_srv, (unsigned long long)st.closed_after_t, evicted);
    printf("legitimate: %u of %u connects up within %u ms (%.1f%%), longest %llu ms, mean %.1f "
           "ms\n",
           ok, n, CONNECT_LIMIT_MS, 100.0 * ok / n, (unsigned long long)max_ms,
           ok ? (double)sum_ms / ok : 0.0);
    printf("process: peak RSS (VmHWM) %lu KiB (VmRSS %lu KiB before the flood%s), peak fds %u (%u "
           "before the flood)\n",
           hwm, base_rss, ASAN_NOTE, fds, base_fds);

    ASSERT_TRUE(100u * ok >= 99u * n);
    /* the flood was one: the server reaped stalled startups (evicted, or timed out) */
    ASSERT_TRUE(evicted > 0 || st.closed_after_t > 0);
    /* the server held at most P startups (plus the one just accepted before an eviction and
     * the legitimate connection's two sockets) */
    if (fds > base_fds + p + 8u)
        harness_fail(__FILE__, __LINE__, "%u fds at the peak: more than %u + P (%u) + 8", fds,
                     base_fds, p);

    close(to_child[1]);
    close(from_child[0]);
    ASSERT_EQ(iwarp_dereg_mr(g.smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(g.cmr), 0);
    free(g.sbuf);
    free(g.cbuf);
    sp_side_fini(&cli);
    sp_side_fini(&srv);
}
