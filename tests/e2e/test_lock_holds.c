/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * No context-wide lock is held across a system call of the data path (docs/design.md,
 * "Locking and progress"). Link-time wrappers around the system calls the library makes while data
 * moves record, for each call, whether the calling thread holds the lock of a context under watch
 * (the mutex's owner field against gettid). Real traffic over loopback TCP with CRC on runs in
 * between: RDMA Writes large enough to fill the socket, Reads, small Sends that form transmit
 * batches, busy polling, completion events, caller progress, two posting threads while a third
 * deregisters memory. Every kind of call must have been seen, and none made with the lock
 * (write and read: the loop's wake and timer fds; eventfd_*: the completion channel's fd).
 * Set-up and teardown (socket, connect, accept, close, epoll_ctl ADD/DEL) are outside the probe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "stack_pair.h"

enum probe_call {
    P_SEND, /* sendmsg or send */
    P_RECV, /* recvmsg or recv */
    P_EPOLL_WAIT,
    P_EPOLL_CTL,
    P_TIMERFD,
    P_GETSOCKOPT,
    P_SETSOCKOPT,
    P_WRITE,
    P_READ,
    P_EVENTFD_WRITE,
    P_EVENTFD_READ,
    P_N
};
static const char *const call_names[P_N] = {
    "send(msg)",  "recv(msg)", "epoll_wait", "epoll_ctl",     "timerfd_settime", "getsockopt",
    "setsockopt", "write",     "read",       "eventfd_write", "eventfd_read"};

#define MAX_WATCHED 2
static struct iwarp_ctx *_Atomic watched[MAX_WATCHED];
static atomic_bool probing;
static atomic_ulong calls[P_N], held[P_N];
static atomic_ulong sends_full; /* writes that found the socket full (note_full) */

static void probe(enum probe_call c)
{
    if (!atomic_load(&probing))
        return;
    atomic_fetch_add(&calls[c], 1);
    pid_t me = gettid();
    for (int i = 0; i < MAX_WATCHED; i++) {
        struct iwarp_ctx *ctx = atomic_load(&watched[i]);
        if (ctx && __atomic_load_n(&ctx->lock.__data.__owner, __ATOMIC_RELAXED) == me)
            atomic_fetch_add(&held[c], 1);
    }
}

/* A write that found the socket full (EAGAIN, or fewer octets taken than offered): only then
 * does the library ask for writability (epoll_ctl), so only then must epoll_ctl be seen. */
static void note_full(ssize_t w, size_t want)
{
    int e = errno;
    if (atomic_load(&probing) && (w < 0 ? (e == EAGAIN || e == EWOULDBLOCK) : (size_t)w < want))
        atomic_fetch_add(&sends_full, 1);
    errno = e;
}

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
    probe(P_SEND);
    ssize_t w = __real_sendmsg(fd, m, flags);
    size_t want = 0;
    for (size_t i = 0; i < m->msg_iovlen; i++)
        want += m->msg_iov[i].iov_len;
    note_full(w, want);
    return w;
}

ssize_t __real_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags)
{
    probe(P_SEND);
    ssize_t w = __real_send(fd, b, n, flags);
    note_full(w, n);
    return w;
}

ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
    probe(P_RECV);
    return __real_recvmsg(fd, m, flags);
}

ssize_t __real_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags)
{
    probe(P_RECV);
    return __real_recv(fd, b, n, flags);
}

int __real_epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout);
int __wrap_epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout);
int __wrap_epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout)
{
    probe(P_EPOLL_WAIT);
    return __real_epoll_wait(epfd, ev, n, timeout);
}

int __real_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    probe(P_EPOLL_CTL);
    return __real_epoll_ctl(epfd, op, fd, ev);
}

int __real_timerfd_settime(int fd, int flags, const struct itimerspec *n, struct itimerspec *o);
int __wrap_timerfd_settime(int fd, int flags, const struct itimerspec *n, struct itimerspec *o);
int __wrap_timerfd_settime(int fd, int flags, const struct itimerspec *n, struct itimerspec *o)
{
    probe(P_TIMERFD);
    return __real_timerfd_settime(fd, flags, n, o);
}

int __real_getsockopt(int fd, int level, int name, void *v, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *v, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *v, socklen_t *len)
{
    probe(P_GETSOCKOPT);
    return __real_getsockopt(fd, level, name, v, len);
}

int __real_setsockopt(int fd, int level, int name, const void *v, socklen_t len);
int __wrap_setsockopt(int fd, int level, int name, const void *v, socklen_t len);
int __wrap_setsockopt(int fd, int level, int name, const void *v, socklen_t len)
{
    probe(P_SETSOCKOPT);
    return __real_setsockopt(fd, level, name, v, len);
}

ssize_t __real_write(int fd, const void *b, size_t n);
ssize_t __wrap_write(int fd, const void *b, size_t n);
ssize_t __wrap_write(int fd, const void *b, size_t n)
{
    probe(P_WRITE);
    return __real_write(fd, b, n);
}

ssize_t __real_read(int fd, void *b, size_t n);
ssize_t __wrap_read(int fd, void *b, size_t n);
ssize_t __wrap_read(int fd, void *b, size_t n)
{
    probe(P_READ);
    return __real_read(fd, b, n);
}

int __real_eventfd_write(int fd, eventfd_t v);
int __wrap_eventfd_write(int fd, eventfd_t v);
int __wrap_eventfd_write(int fd, eventfd_t v)
{
    probe(P_EVENTFD_WRITE);
    return __real_eventfd_write(fd, v);
}

int __real_eventfd_read(int fd, eventfd_t *v);
int __wrap_eventfd_read(int fd, eventfd_t *v);
int __wrap_eventfd_read(int fd, eventfd_t *v)
{
    probe(P_EVENTFD_READ);
    return __real_eventfd_read(fd, v);
}

#define BIG      (1u << 20) /* a Write this size fills the socket's send buffer within a few */
#define N_PAIRS  2u
#define N_BIG    24u
#define N_MID    64u /* 64 KiB Writes and Reads */
#define N_SMALL  256u
#define QD       16u
#define N_THREAD 400u /* Writes per posting thread */

static struct sp_cfg crc_cfg(void)
{
    struct sp_cfg cfg = {.cap = {.max_send_wr = 256,
                                 .max_recv_wr = 256,
                                 .max_send_sge = 1,
                                 .max_recv_sge = 1,
                                 .max_inline_data = 64}};
    cfg.param.crc = 1;
    cfg.param.initiator_depth = 16;
    cfg.param.responder_resources = 16;
    return cfg;
}

/* Two sides, N_PAIRS connected pairs, and a BIG buffer registered on each side per pair. */
struct rig {
    struct sp_side srv, cli;
    struct sp_pair pairs[N_PAIRS];
    uint8_t *sbuf[N_PAIRS], *cbuf[N_PAIRS];
    struct iwarp_mr *smr[N_PAIRS], *cmr[N_PAIRS];
};

static void rig_up(struct rig *r, enum iwarp_progress_mode cli_mode, bool events)
{
    sp_side_init(&r->srv, IWARP_PROGRESS_THREAD, 4096);
    sp_side_init_full(&r->cli, NULL, cli_mode, NULL, 0, 4096, events);
    memset(r->pairs, 0, sizeof r->pairs);
    for (uint32_t i = 0; i < N_PAIRS; i++) {
        r->sbuf[i] = calloc(1, BIG);
        r->cbuf[i] = calloc(1, BIG);
        ASSERT_TRUE(r->sbuf[i] && r->cbuf[i]);
        r->smr[i] = sp_reg(&r->srv, r->sbuf[i], BIG, 0);
        r->cmr[i] = sp_reg(&r->cli, r->cbuf[i], BIG, 0);
        r->pairs[i].srv.mine = (struct sp_advert){
            .index = i, .rkey = r->smr[i]->rkey, .addr = (uintptr_t)r->sbuf[i], .len = BIG};
        r->pairs[i].cli.mine = (struct sp_advert){
            .index = i, .rkey = r->cmr[i]->rkey, .addr = (uintptr_t)r->cbuf[i], .len = BIG};
    }
    struct sp_cfg cfg = crc_cfg();
    sp_connect_pairs(&r->srv, &r->cli, r->pairs, N_PAIRS, &cfg);
    sp_first_send(&r->srv, &r->cli, r->pairs, N_PAIRS);
    atomic_store(&watched[0], r->srv.ctx);
    atomic_store(&watched[1], r->cli.ctx);
    for (int c = 0; c < P_N; c++)
        atomic_store(&calls[c], 0), atomic_store(&held[c], 0);
    atomic_store(&sends_full, 0);
    atomic_store(&probing, true);
}

/* Stop probing; every call kind in `seen` must have been made, none with the lock. Pairs from
 * `first` on are disconnected (the ones before were ended by the test). */
static void rig_judge_from(struct rig *r, unsigned seen, uint32_t first)
{
    atomic_store(&probing, false);
    /* The big Writes usually fill the socket, but a receiver that keeps up (seen once in CI,
     * on a loaded machine) leaves nothing to wait for: then no epoll_ctl is owed. */
    unsigned long full = atomic_load(&sends_full);
    printf("    a write found the socket full %lu times\n", full);
    if (full == 0)
        seen &= ~(1u << P_EPOLL_CTL);
    for (int c = 0; c < P_N; c++) {
        unsigned long n = atomic_load(&calls[c]), h = atomic_load(&held[c]);
        printf("    %-16s %8lu calls, %lu with a context lock held\n", call_names[c], n, h);
        if (h != 0)
            harness_fail(__FILE__, __LINE__, "%s made %lu times with a context lock held",
                         call_names[c], h);
        if ((seen & (1u << c)) && n == 0)
            harness_fail(__FILE__, __LINE__, "%s never made: the probe proves nothing of it",
                         call_names[c]);
    }
    atomic_store(&watched[0], NULL);
    atomic_store(&watched[1], NULL);
    sp_disconnect_pairs(&r->srv, &r->cli, r->pairs + first, N_PAIRS - first, true);
    sp_destroy_pairs(r->pairs, N_PAIRS);
    for (uint32_t i = 0; i < N_PAIRS; i++) {
        ASSERT_EQ(iwarp_dereg_mr(r->smr[i]), 0);
        ASSERT_EQ(iwarp_dereg_mr(r->cmr[i]), 0);
        free(r->sbuf[i]);
        free(r->cbuf[i]);
    }
    sp_side_fini(&r->cli);
    sp_side_fini(&r->srv);
}

static void rig_judge(struct rig *r, unsigned seen)
{
    rig_judge_from(r, seen, 0);
}

/* n one-sided operations of len octets on pair 0 with QD in flight, each completion taken (busy
 * polling, or through completion events when the client has a channel). */
static void one_sided(struct rig *r, enum iwarp_wr_opcode op, uint32_t len, uint32_t n)
{
    struct sp_end *c = &r->pairs[0].cli;
    uint32_t posted = 0, done = 0;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (done < n) {
        while (posted < n && posted - done < QD) {
            ASSERT_EQ(sp_post(c->qp, posted, op, IWARP_SEND_SIGNALED, r->cbuf[0], len,
                              r->cmr[0]->lkey, c->peer.addr, c->peer.rkey),
                      0);
            posted++;
        }
        struct iwarp_wc wc[QD];
        int k = iwarp_poll_cq(r->cli.cq, QD, wc);
        ASSERT_TRUE(k >= 0);
        for (int i = 0; i < k; i++)
            ASSERT_EQ(wc[i].status, IWARP_WC_SUCCESS);
        done += (uint32_t)k;
        if (k == 0 && r->cli.comp) {
            ASSERT_EQ(iwarp_req_notify_cq(r->cli.cq, 0), 0);
            if ((k = iwarp_poll_cq(r->cli.cq, QD, wc)) > 0) { /* came before the arm */
                done += (uint32_t)k;
                continue;
            }
            struct iwarp_cq *ev_cq;
            void *ev_ctx;
            if (iwarp_get_cq_event_timeout(r->cli.comp, &ev_cq, &ev_ctx, 100) == 0)
                iwarp_ack_cq_events(ev_cq, 1);
        }
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%s x %u: %u done", op == IWARP_WR_RDMA_READ ? "Read" : "Write", n,
                          done);
    }
}

/* n (at most N_SMALL) 64-octet Sends on pair 0, posted back to back (they form batches),
 * received by the server. */
static void small_sends(struct rig *r, uint32_t n)
{
    struct sp_end *c = &r->pairs[0].cli, *s = &r->pairs[0].srv;
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ(sp_post_recv(s->qp, i, r->sbuf[0] + 64u * i, 64, r->smr[0]->lkey), 0);
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ(sp_post(c->qp, i, IWARP_WR_SEND, 0, r->cbuf[0], 64, r->cmr[0]->lkey, 0, 0), 0);
    struct iwarp_wc wc[N_SMALL];
    sp_poll_n(&r->srv, &r->cli, wc, n);
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ(wc[i].status, IWARP_WC_SUCCESS);
}

static void the_traffic(struct rig *r)
{
    one_sided(r, IWARP_WR_RDMA_WRITE, BIG, N_BIG);
    one_sided(r, IWARP_WR_RDMA_WRITE, 64u << 10, N_MID);
    one_sided(r, IWARP_WR_RDMA_READ, 64u << 10, N_MID);
    small_sends(r, N_SMALL);
}

/* A batch's deadline reaches the timerfd only while a thread sleeps in the loop; in the traffic
 * above the progress thread is usually busy then (CI once saw no timerfd_settime at all, under
 * TSan). So, until one is made: let the client's progress thread fall asleep, then post a few
 * Sends back to back, the second of which joins a batch and arms its deadline. */
static void batch_while_the_thread_sleeps(struct rig *r)
{
    for (int round = 0; round < 50 && atomic_load(&calls[P_TIMERFD]) == 0; round++) {
        usleep(5000);
        small_sends(r, 8);
    }
}

/* The calls every run makes (epoll_ctl: EPOLLOUT wanted once the big Writes fill the socket;
 * setsockopt: the receive mark of a large FPDU; getsockopt: the EMSS looked at again). */
#define SEEN_ALWAYS                                                                 \
    ((1u << P_SEND) | (1u << P_RECV) | (1u << P_EPOLL_WAIT) | (1u << P_EPOLL_CTL) | \
     (1u << P_GETSOCKOPT) | (1u << P_SETSOCKOPT))

TEST(busy_polling_with_a_progress_thread_holds_no_lock_across_a_system_call)
{
    struct rig r;
    rig_up(&r, IWARP_PROGRESS_THREAD, false);
    the_traffic(&r);
    rig_judge(&r, SEEN_ALWAYS);
}

TEST(waiting_for_completion_events_holds_no_lock_across_a_system_call)
{
    struct rig r;
    rig_up(&r, IWARP_PROGRESS_THREAD, true);
    the_traffic(&r);
    batch_while_the_thread_sleeps(&r);
    rig_judge(&r,
              SEEN_ALWAYS | (1u << P_TIMERFD) | (1u << P_EVENTFD_WRITE) | (1u << P_EVENTFD_READ));
}

TEST(caller_progress_holds_no_lock_across_a_system_call)
{
    struct rig r;
    rig_up(&r, IWARP_PROGRESS_CALLER, false);
    the_traffic(&r);
    rig_judge(&r, SEEN_ALWAYS);
}

/* The probe itself: a call made with a watched lock held is counted (else the tests above would
 * pass whatever the library did). */
TEST(the_probe_counts_a_call_made_with_the_lock_held)
{
    struct iwarp_ctx *ctx;
    ASSERT_EQ(iwarp_ctx_create(NULL, &ctx), 0);
    atomic_store(&watched[0], ctx);
    atomic_store(&held[P_EPOLL_WAIT], 0);
    atomic_store(&probing, true);
    struct epoll_event ev;
    (void)epoll_wait(ctx->loop.epfd, &ev, 1, 0); /* without the lock: not counted */
    ASSERT_EQ(atomic_load(&held[P_EPOLL_WAIT]), 0);
    pthread_mutex_lock(&ctx->lock);
    (void)epoll_wait(ctx->loop.epfd, &ev, 1, 0);
    pthread_mutex_unlock(&ctx->lock);
    atomic_store(&probing, false);
    ASSERT_EQ(atomic_load(&held[P_EPOLL_WAIT]), 1);
    atomic_store(&watched[0], NULL);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
}

/* ---- two posting threads, and memory deregistered meanwhile ------------------------------ */

struct poster {
    struct rig *r;
    uint32_t pair;
    atomic_uint *outstanding; /* posted and not yet completed, per pair */
};

static void *post_writes(void *arg)
{
    struct poster *p = arg;
    struct sp_end *c = &p->r->pairs[p->pair].cli;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    for (uint32_t i = 0; i < N_THREAD; i++) {
        while (atomic_load(p->outstanding) >= QD) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "pair %u: room to post", p->pair);
            sched_yield();
        }
        atomic_fetch_add(p->outstanding, 1);
        ASSERT_EQ(sp_post(c->qp, ((uint64_t)p->pair << 32) | i, IWARP_WR_RDMA_WRITE,
                          IWARP_SEND_SIGNALED, p->r->cbuf[p->pair], 64u << 10,
                          p->r->cmr[p->pair]->lkey, c->peer.addr, c->peer.rkey),
                  0);
    }
    return NULL;
}

static atomic_bool churning;

/* Registers and deregisters memory while the Writes place: each dereg waits for a grace period
 * of the I/O windows (it must end, however busy the connections are). */
static void *churn_memory(void *arg)
{
    struct rig *r = arg;
    uint8_t page[4096];
    uint32_t rounds = 0;
    while (atomic_load(&churning)) {
        struct iwarp_mr *mr = sp_reg(&r->srv, page, sizeof page, 0);
        ASSERT_EQ(iwarp_dereg_mr(mr), 0);
        rounds++;
    }
    ASSERT_TRUE(rounds > 0);
    return NULL;
}

TEST(two_posting_threads_and_a_deregistering_one_hold_no_lock_across_a_system_call)
{
    struct rig r;
    rig_up(&r, IWARP_PROGRESS_THREAD, false);
    atomic_uint outstanding[N_PAIRS];
    struct poster p[N_PAIRS];
    pthread_t th[N_PAIRS], churn;
    atomic_store(&churning, true);
    ASSERT_EQ(pthread_create(&churn, NULL, churn_memory, &r), 0);
    for (uint32_t i = 0; i < N_PAIRS; i++) {
        atomic_init(&outstanding[i], 0);
        p[i] = (struct poster){.r = &r, .pair = i, .outstanding = &outstanding[i]};
        ASSERT_EQ(pthread_create(&th[i], NULL, post_writes, &p[i]), 0);
    }
    /* this thread takes every completion of both */
    uint32_t done = 0;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (done < N_PAIRS * N_THREAD) {
        struct iwarp_wc wc[32];
        int k = iwarp_poll_cq(r.cli.cq, 32, wc);
        ASSERT_TRUE(k >= 0);
        for (int i = 0; i < k; i++) {
            ASSERT_EQ(wc[i].status, IWARP_WC_SUCCESS);
            atomic_fetch_sub(&outstanding[wc[i].wr_id >> 32], 1);
        }
        done += (uint32_t)k;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "Writes of both threads: %u done", done);
    }
    for (uint32_t i = 0; i < N_PAIRS; i++)
        ASSERT_EQ(pthread_join(th[i], NULL), 0);
    atomic_store(&churning, false);
    ASSERT_EQ(pthread_join(churn, NULL), 0);
    rig_judge(&r, (1u << P_SEND) | (1u << P_RECV) | (1u << P_EPOLL_WAIT));
}

/* ---- a connection ended while another thread moves its octets --------------------------- */

struct pump {
    struct rig *r;
    atomic_bool stop;
    uint32_t posted, ok, flushed;
};

/* Writes on pair 0 until told to stop and every one posted has completed (or was refused: the
 * QP went to ERR under it). */
static void *pump_writes(void *arg)
{
    struct pump *p = arg;
    struct sp_end *c = &p->r->pairs[0].cli;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    bool refused = false;
    while (!(atomic_load(&p->stop) || refused) || p->ok + p->flushed < p->posted) {
        if (!atomic_load(&p->stop) && !refused && p->posted - p->ok - p->flushed < QD) {
            int rc =
                sp_post(c->qp, p->posted, IWARP_WR_RDMA_WRITE, IWARP_SEND_SIGNALED, p->r->cbuf[0],
                        64u << 10, p->r->cmr[0]->lkey, c->peer.addr, c->peer.rkey);
            if (rc == 0)
                p->posted++;
            else
                refused = true; /* IWARP_ERR_STATE once the QP is in ERR */
        }
        struct iwarp_wc wc[QD];
        int k = iwarp_poll_cq(p->r->cli.cq, QD, wc);
        ASSERT_TRUE(k >= 0);
        for (int i = 0; i < k; i++) {
            if (wc[i].status == IWARP_WC_SUCCESS)
                __atomic_add_fetch(&p->ok, 1, __ATOMIC_RELAXED); /* the test's thread looks */
            else if (wc[i].status == IWARP_WC_WR_FLUSH_ERR)
                p->flushed++;
            else
                harness_fail(__FILE__, __LINE__, "completion %s",
                             iwarp_wc_status_str(wc[i].status));
        }
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "Writes: %u posted, %u done, %u flushed", p->posted, p->ok,
                          p->flushed);
    }
    return NULL;
}

/* modify_qp to ERR from one thread while another posts and polls on the QP: the abort waits
 * until nobody moves the connection's octets (cm_transport.quiesce), every WR completes once,
 * flushed or not, and both sides are told. */
TEST(a_qp_put_in_error_while_another_thread_moves_its_octets)
{
    struct rig r;
    rig_up(&r, IWARP_PROGRESS_THREAD, false);
    struct pump p = {.r = &r};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, pump_writes, &p), 0);
    deadline_pause_us(30000);
    /* at least one Write done first (a loaded machine may not have got there in 30 ms) */
    WAIT_UNTIL(__atomic_load_n(&p.ok, __ATOMIC_RELAXED) > 0, SP_WAIT_MS, "a Write completed");
    atomic_store(&probing, false); /* the abort is the control path (epoll_ctl DEL, close) */
    ASSERT_EQ(iwarp_modify_qp_err(r.pairs[0].cli.qp), 0);
    atomic_store(&p.stop, true);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    printf("    %u Writes posted: %u completed, %u flushed\n", p.posted, p.ok, p.flushed);
    ASSERT_TRUE(p.ok > 0);
    ASSERT_EQ(p.ok + p.flushed, p.posted);
    sp_expect_ack(&r.cli, &r.srv, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(&r.srv, &r.cli, IWARP_CM_EVENT_DISCONNECTED);
    rig_judge_from(&r, (1u << P_SEND), 1);
}
