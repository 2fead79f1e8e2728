/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A busy poll reads the socket itself (docs/design.md "Where a busy-poll one-way goes"): in
 * caller mode, iwarp_poll_cq on an empty CQ that one connected QP uses reads that QP's
 * connection directly, and runs the loop (epoll_wait) instead only once 100 µs have passed since
 * its last such pass (BUSY_LOOP_PASS_NS), for the context's other sockets and timers. A CQ that
 * more than one QP has used goes through epoll every time. Over SCTP the direct read is of the
 * association's endpoint (its UDP socket, recvmmsg), and the service of what it read waits for the
 * caller's next call or any loop pass. A socket read that way long enough leaves the epoll set, and
 * a pass of the loop that may wait brings it back. Counted in real system calls: this test is
 * linked with -Wl,--wrap=epoll_wait,--wrap=epoll_ctl,--wrap=recvmsg,--wrap=recv,--wrap=recvfrom,
 * --wrap=recvmmsg. Both contexts run in caller mode on this one thread, so what is counted
 * during one side's call is that side's.
 */
#define _GNU_SOURCE
#include "stack_pair.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proc_probe.h"

static unsigned long n_epoll_wait, n_recvmsg;

int __real_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout);
int __wrap_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout);
int __wrap_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
    __atomic_add_fetch(&n_epoll_wait, 1, __ATOMIC_RELAXED);
    return __real_epoll_wait(fd, ev, max, timeout);
}

/* The sockets taken out of an epoll set: how many, and the last one (its set and fd). */
static unsigned long n_unwatched;
static int unwatched_epfd = -1, unwatched_fd = -1;

int __real_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    int rc = __real_epoll_ctl(epfd, op, fd, ev);
    if (op == EPOLL_CTL_DEL && rc == 0) { /* this thread's: the test calls from one thread */
        n_unwatched++;
        unwatched_epfd = epfd;
        unwatched_fd = fd;
    }
    return rc;
}

ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
    __atomic_add_fetch(&n_recvmsg, 1, __ATOMIC_RELAXED);
    return __real_recvmsg(fd, m, flags);
}

ssize_t __real_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags)
{
    __atomic_add_fetch(&n_recvmsg, 1, __ATOMIC_RELAXED); /* a read into one buffer, as recvmsg */
    return __real_recv(fd, b, n, flags);
}

ssize_t __real_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                        socklen_t *fromlen);
ssize_t __wrap_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                        socklen_t *fromlen);
ssize_t __wrap_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                        socklen_t *fromlen)
{
    __atomic_add_fetch(&n_recvmsg, 1, __ATOMIC_RELAXED); /* a read, as recvmsg */
    return __real_recvfrom(fd, buf, len, flags, from, fromlen);
}

static unsigned long n_datagrams; /* what the recvmmsg calls returned */

int __real_recvmmsg(int fd, struct mmsghdr *mm, unsigned int n, int flags, struct timespec *t);
int __wrap_recvmmsg(int fd, struct mmsghdr *mm, unsigned int n, int flags, struct timespec *t);
int __wrap_recvmmsg(int fd, struct mmsghdr *mm, unsigned int n, int flags, struct timespec *t)
{
    __atomic_add_fetch(&n_recvmsg, 1, __ATOMIC_RELAXED); /* one read of several datagrams */
    int k = __real_recvmmsg(fd, mm, n, flags, t);
    if (k > 0)
        __atomic_add_fetch(&n_datagrams, (unsigned long)k, __ATOMIC_RELAXED);
    return k;
}

static unsigned long datagrams(void)
{
    return __atomic_load_n(&n_datagrams, __ATOMIC_RELAXED);
}

static unsigned long epoll_waits(void)
{
    return __atomic_load_n(&n_epoll_wait, __ATOMIC_RELAXED);
}

static unsigned long recvmsgs(void)
{
    return __atomic_load_n(&n_recvmsg, __ATOMIC_RELAXED);
}

enum { MSG = 64, BUF = 4096, EMPTY_POLLS = 64, LOOP_PASS_US = 100 };

/* The most loop passes polls spread over us microseconds may run: one at once (none may have
 * run for LOOP_PASS_US before), then one per LOOP_PASS_US. */
static unsigned long passes_at_most(uint64_t us)
{
    return 1 + (unsigned long)(us / LOOP_PASS_US);
}

static void rig_up_ps(struct sp_rig *r, enum iwarp_port_space ps)
{
    memset(r, 0, sizeof *r);
    sp_side_init(&r->srv, IWARP_PROGRESS_CALLER, 64);
    sp_side_init(&r->cli, IWARP_PROGRESS_CALLER, 64);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.crc = ps == IWARP_PS_TCP, .responder_resources = 4, .initiator_depth = 4},
        .ps = ps};
    sp_rig_connect(r, BUF, &cfg);
}

static void rig_up(struct sp_rig *r)
{
    rig_up_ps(r, IWARP_PS_TCP);
}

/* EMPTY_POLLS polls of the server's CQ with nothing on the way: how many epoll_waits; *us (when
 * not NULL): the microseconds they took. */
static unsigned long empty_polls_timed(struct sp_rig *r, unsigned long *reads, uint64_t *us)
{
    unsigned long e0 = epoll_waits(), m0 = recvmsgs();
    uint64_t t0 = deadline_now_ns();
    struct iwarp_wc wc;
    for (int i = 0; i < EMPTY_POLLS; i++)
        ASSERT_EQ(iwarp_poll_cq(r->srv.cq, 1, &wc), 0);
    if (us)
        *us = (deadline_now_ns() - t0) / 1000u;
    *reads = recvmsgs() - m0;
    return epoll_waits() - e0;
}

static unsigned long empty_polls(struct sp_rig *r, unsigned long *reads)
{
    return empty_polls_timed(r, reads, NULL);
}

/* The client Sends MSG octets; the server polls until the receive completes. Returns the
 * number of polls it took; *waits: epoll_waits among them; *us: the microseconds they took. */
static unsigned long send_and_poll_timed(struct sp_rig *r, uint32_t seed, unsigned long *waits,
                                         uint64_t *us)
{
    ASSERT_EQ(sp_post_recv(r->pair.srv.qp, seed, r->sbuf, MSG, r->smr->lkey), 0);
    sp_fill(r->cbuf, MSG, seed);
    ASSERT_EQ(sp_post(r->pair.cli.qp, seed, IWARP_WR_SEND, 0, r->cbuf, MSG, r->cmr->lkey, 0, 0), 0);
    /* a poll for no completion writes a batch the Send may have joined, and reads nothing */
    ASSERT_EQ(iwarp_poll_cq(r->cli.cq, 0, NULL), 0);
    unsigned long e0 = epoll_waits(), polls = 0;
    uint64_t t0 = deadline_now_ns();
    struct iwarp_wc wc;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    int n;
    while ((n = iwarp_poll_cq(r->srv.cq, 1, &wc)) == 0) {
        polls++;
        ASSERT_FALSE(deadline_passed(&dl));
    }
    *us = (deadline_now_ns() - t0) / 1000u;
    *waits = epoll_waits() - e0;
    ASSERT_EQ(n, 1);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ_U(wc.wr_id, seed);
    ASSERT_EQ_U(wc.byte_len, MSG);
    ASSERT_EQ_U(sp_check(r->sbuf, MSG, seed), MSG);
    ASSERT_EQ_U(sp_poll_ok(&r->cli, &r->srv, IWARP_WC_SEND).wr_id, seed);
    return polls + 1;
}

static unsigned long send_and_poll(struct sp_rig *r, uint32_t seed, unsigned long *waits)
{
    uint64_t us;
    return send_and_poll_timed(r, seed, waits, &us);
}

/* A CQ of one QP over ps: empty polls in a row are direct reads (one recv, or recvmmsg over
 * SCTP, each: nothing there) but for a loop pass at most every LOOP_PASS_US; a poll more than
 * LOOP_PASS_US after the last is a loop pass and reads nothing itself; and what comes is
 * received through them. */
static void direct_reads(enum iwarp_port_space ps)
{
    struct sp_rig r;
    rig_up_ps(&r, ps);
    unsigned long reads;
    uint64_t us;
    unsigned long waits = empty_polls_timed(&r, &reads, &us);
    ASSERT_TRUE(waits <= passes_at_most(us));
    ASSERT_EQ_U(reads, EMPTY_POLLS - waits);
    ASSERT_TRUE(reads >= EMPTY_POLLS / 2); /* 64 polls take well under 3 ms, even under TSan */
    for (int i = 0; i < 4; i++) {
        usleep(3 * LOOP_PASS_US / 2);
        unsigned long e0 = epoll_waits(), m0 = recvmsgs();
        struct iwarp_wc wc;
        ASSERT_EQ(iwarp_poll_cq(r.srv.cq, 1, &wc), 0);
        ASSERT_EQ_U(epoll_waits() - e0, 1);
        ASSERT_EQ_U(recvmsgs() - m0, 0);
    }
    for (uint32_t k = 1; k <= 20; k++) {
        (void)send_and_poll_timed(&r, k, &waits, &us);
        ASSERT_TRUE(waits <= passes_at_most(us));
    }
    sp_rig_down(&r);
}

TEST(a_busy_poll_reads_the_sole_qps_socket_and_asks_epoll_every_100_us)
{
    direct_reads(IWARP_PS_TCP);
}

TEST(over_sctp_a_busy_poll_reads_the_associations_endpoint)
{
    direct_reads(IWARP_PS_SCTP);
}

TEST(a_cq_that_two_qps_have_used_asks_epoll_every_time)
{
    struct sp_rig r;
    rig_up(&r);
    struct iwarp_qp_init_attr qa = {.send_cq = r.srv.cq,
                                    .recv_cq = r.srv.cq,
                                    .cap = {.max_send_wr = 1, .max_recv_wr = 1},
                                    .qp_type = IWARP_QPT_RC};
    struct iwarp_qp *other = NULL;
    ASSERT_EQ(iwarp_create_qp(r.srv.pd, &qa, &other), 0);
    unsigned long reads;
    ASSERT_EQ_U(empty_polls(&r, &reads), EMPTY_POLLS);
    unsigned long waits;
    send_and_poll(&r, 1, &waits);
    ASSERT_EQ(iwarp_destroy_qp(other), 0);
    /* the CQ does not learn which QP is left: epoll still */
    ASSERT_EQ_U(empty_polls(&r, &reads), EMPTY_POLLS);
    send_and_poll(&r, 2, &waits);
    sp_rig_down(&r);
}

/* Over SCTP a busy poll that read packets leaves the association's service (which sends what
 * they asked for) to the caller's next call, so that the completions they brought come back
 * first. A caller that runs the loop instead must still see it done, as a timer due at once
 * (a blocking wait sets the timerfd to it, so it does not sleep): the server reads a Read
 * Request in a direct poll (no completion: the Read Response is what it owes), then runs the
 * loop once without waiting, which runs only the timers already due (usrsctp's next tick is
 * up to 10 ms away). After that the server is left alone: the client's Read completes only if
 * the Response left in that one loop pass. */
TEST(over_sctp_a_loop_wait_after_a_busy_poll_serves_what_the_poll_read)
{
    struct sp_rig r;
    rig_up_ps(&r, IWARP_PS_SCTP);
    int direct = 0;
    for (uint32_t k = 1; k <= 8 && direct < 3; k++) {
        sp_fill(r.sbuf, MSG, k);
        /* a poll first: a loop pass it runs (none for 100 µs, while the client waited) leaves
         * the server's next polls, for 100 µs, to the direct reads */
        struct iwarp_wc wc;
        ASSERT_EQ(iwarp_poll_cq(r.srv.cq, 1, &wc), 0);
        ASSERT_EQ(sp_post(r.pair.cli.qp, k, IWARP_WR_RDMA_READ, 0, r.cbuf, MSG, r.cmr->lkey,
                          (uintptr_t)r.sbuf, r.smr->rkey),
                  0);
        /* the Read Request is in the server's socket once the client's sendto returned */
        unsigned long d0 = datagrams(), e0 = epoll_waits();
        struct deadline dl = deadline_in_ms(SP_WAIT_MS);
        while (datagrams() == d0) {
            ASSERT_EQ(iwarp_poll_cq(r.srv.cq, 1, &wc), 0);
            ASSERT_FALSE(deadline_passed(&dl));
        }
        bool was_direct = epoll_waits() == e0;
        if (was_direct) {
            direct++;
            ASSERT_TRUE(iwarp_ctx_progress(r.srv.ctx, 0) >= 0);
        }
        /* a read through the loop (a pass every 100 µs) served at once: nothing to show there */
        dl = deadline_in_ms(SP_WAIT_MS);
        int n;
        while ((n = iwarp_poll_cq(r.cli.cq, 1, &wc)) == 0)
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "Read %u: no Response after the server's loop pass", k);
        ASSERT_EQ(n, 1);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc.wr_id, k);
        ASSERT_EQ_U(sp_check(r.cbuf, MSG, k), MSG);
    }
    ASSERT_TRUE(direct >= 3);
    sp_rig_down(&r);
}

/* A socket the busy polls read themselves leaves its epoll set after IWARP_LOOP_UNWATCH_AFTER
 * reads in a row (each segment reaching a watched socket runs epoll's wakeup callback in the
 * sender's system call); messages still come in through the direct reads; and a pass of the
 * loop that may wait puts it back first: a Send that is in the socket before the server waits
 * 5 s for progress is received by that one pass, at once. */
static void out_of_the_set_and_back(enum iwarp_port_space ps)
{
    struct sp_rig r;
    rig_up_ps(&r, ps);
    unsigned long u0 = n_unwatched, reads;
    for (int i = 0; i < 5; i++) /* 320 polls: 256 and more direct reads */
        empty_polls(&r, &reads);
    ASSERT_EQ_U(n_unwatched - u0, 1);
    int epfd = unwatched_epfd, fd = unwatched_fd;
    ASSERT_FALSE(probe_epoll_watches(epfd, fd));
    unsigned long waits;
    for (uint32_t k = 1; k <= 5; k++)
        send_and_poll(&r, k, &waits);
    ASSERT_FALSE(probe_epoll_watches(epfd, fd));

    ASSERT_EQ(sp_post_recv(r.pair.srv.qp, 6, r.sbuf, MSG, r.smr->lkey), 0);
    sp_fill(r.cbuf, MSG, 6);
    ASSERT_EQ(sp_post(r.pair.cli.qp, 6, IWARP_WR_SEND, 0, r.cbuf, MSG, r.cmr->lkey, 0, 0), 0);
    ASSERT_EQ(iwarp_poll_cq(r.cli.cq, 0, NULL), 0); /* written: in the server's socket */
    struct deadline dl = deadline_in_ms(2000);
    ASSERT_EQ(iwarp_ctx_progress(r.srv.ctx, 5000), 0);
    ASSERT_FALSE(deadline_passed(&dl)); /* woken by the socket, not by the timeout */
    ASSERT_TRUE(probe_epoll_watches(epfd, fd));
    unsigned long m0 = recvmsgs();
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_poll_cq(r.srv.cq, 1, &wc), 1); /* there already: this poll reads nothing */
    ASSERT_EQ_U(recvmsgs(), m0);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ_U(wc.wr_id, 6);
    ASSERT_EQ_U(sp_check(r.sbuf, MSG, 6), MSG);
    ASSERT_EQ_U(sp_poll_ok(&r.cli, &r.srv, IWARP_WC_SEND).wr_id, 6);
    sp_rig_down(&r);
}

TEST(a_socket_busy_polls_read_leaves_the_epoll_set_and_a_waiting_pass_brings_it_back)
{
    out_of_the_set_and_back(IWARP_PS_TCP);
}

TEST(over_sctp_the_endpoint_busy_polls_read_leaves_the_epoll_set_and_comes_back)
{
    out_of_the_set_and_back(IWARP_PS_SCTP);
}
