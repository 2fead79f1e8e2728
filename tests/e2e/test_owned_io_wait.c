/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A thread told of readiness on a connection whose I/O another thread owns waits for that
 * owner instead of returning to epoll_wait (docs/design.md, "Locking and progress"): epoll is
 * level-triggered, so until the owner has read, every epoll_wait would report the same
 * readiness again at once, and the progress thread would spin beside the owner.
 *
 * The server runs a progress thread. The test's thread posts a Send on the server's QP and so
 * owns that connection's I/O while its sendmsg runs, which a link-time wrapper stalls for
 * STALL_MS; meanwhile a second thread has the client Send to the server, so the server's socket
 * is readable for the rest of the stall and its progress thread is told so. Counted: the
 * epoll_wait calls of threads other than these two during the stall (the client runs in caller
 * mode: no thread of its own). Linked with -Wl,--wrap=sendmsg,--wrap=send,--wrap=epoll_wait.
 */
#define _GNU_SOURCE
#include "stack_pair.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MSG = 64, BUF = 4096, STALL_MS = 200 };

static pthread_t poster, sender;  /* the test's thread; the client's sending thread */
static int stall_armed, in_stall; /* atomics */
static unsigned long others_waits;

static bool is_test_thread(void)
{
    pthread_t self = pthread_self();
    return pthread_equal(self, poster) || pthread_equal(self, sender);
}

/* The poster's first write once armed is stalled (sendmsg, or send for a small write). */
static void maybe_stall(void)
{
    if (pthread_equal(pthread_self(), poster) &&
        __atomic_exchange_n(&stall_armed, 0, __ATOMIC_ACQ_REL)) {
        __atomic_store_n(&in_stall, 1, __ATOMIC_RELEASE);
        usleep(STALL_MS * 1000);
        __atomic_store_n(&in_stall, 0, __ATOMIC_RELEASE);
    }
}

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
    maybe_stall();
    return __real_sendmsg(fd, m, flags);
}

ssize_t __real_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags)
{
    maybe_stall();
    return __real_send(fd, b, n, flags);
}

int __real_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout);
int __wrap_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout);
int __wrap_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
    if (__atomic_load_n(&in_stall, __ATOMIC_ACQUIRE) && !is_test_thread())
        __atomic_add_fetch(&others_waits, 1, __ATOMIC_RELAXED);
    return __real_epoll_wait(fd, ev, max, timeout);
}

static struct sp_rig rig;

/* The second thread: once the poster's sendmsg is stalled, the client Sends to the server. */
static void *client_sends(void *arg)
{
    (void)arg;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (!__atomic_load_n(&in_stall, __ATOMIC_ACQUIRE)) {
        if (deadline_passed(&dl))
            return (void *)1;
        usleep(100);
    }
    usleep(STALL_MS * 1000 / 10); /* well inside the stall */
    sp_fill(rig.cbuf, MSG, 7);
    return (void *)(intptr_t)sp_post(rig.pair.cli.qp, 7, IWARP_WR_SEND, 0, rig.cbuf, MSG,
                                     rig.cmr->lkey, 0, 0);
}

TEST(readiness_of_a_connection_another_thread_owns_is_waited_out_not_spun_on)
{
    sp_side_init(&rig.srv, IWARP_PROGRESS_THREAD, 64);
    sp_side_init(&rig.cli, IWARP_PROGRESS_CALLER, 64);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.crc = true}};
    sp_rig_connect(&rig, BUF, &cfg);
    ASSERT_EQ(sp_post_recv(rig.pair.srv.qp, 7, rig.sbuf, MSG, rig.smr->lkey), 0);
    ASSERT_EQ(sp_post_recv(rig.pair.cli.qp, 8, rig.cbuf + MSG, MSG, rig.cmr->lkey), 0);
    usleep(1000); /* the server's connection is idle: its Send leaves from the post */

    poster = pthread_self();
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, client_sends, NULL), 0);
    sender = t;
    __atomic_store_n(&stall_armed, 1, __ATOMIC_RELEASE);
    sp_fill(rig.sbuf + MSG, MSG, 8);
    ASSERT_EQ(
        sp_post(rig.pair.srv.qp, 8, IWARP_WR_SEND, 0, rig.sbuf + MSG, MSG, rig.smr->lkey, 0, 0), 0);
    void *rc = NULL;
    ASSERT_EQ(pthread_join(t, &rc), 0);
    ASSERT_TRUE(rc == NULL);
    ASSERT_EQ(__atomic_load_n(&stall_armed, __ATOMIC_ACQUIRE), 0); /* the stall happened */

    /* Told of the readiness once, the progress thread waited for the owner: a spinning one
     * makes thousands of calls in STALL_MS. */
    unsigned long waits = __atomic_load_n(&others_waits, __ATOMIC_RELAXED);
    fprintf(stderr, "epoll_wait calls of the progress thread during the stall: %lu\n", waits);
    ASSERT_TRUE(waits <= 4);

    /* and both Sends arrived: each side has its Send's and its receive's completions */
    struct sp_side *side[2] = {&rig.srv, &rig.cli};
    uint8_t *got[2] = {rig.sbuf, rig.cbuf + MSG};
    for (int i = 0; i < 2; i++) {
        struct iwarp_wc wc[2];
        sp_poll_n(side[i], side[i ^ 1], wc, 2);
        for (int k = 0; k < 2; k++) {
            ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
            bool recv = wc[k].opcode == IWARP_WC_RECV;
            ASSERT_TRUE(recv || wc[k].opcode == IWARP_WC_SEND);
            /* the server received 7 and sent 8; the client the other way round */
            ASSERT_EQ_U(wc[k].wr_id, (uint64_t)(recv == (i == 0) ? 7 : 8));
            if (recv)
                ASSERT_EQ_U(wc[k].byte_len, MSG);
        }
        ASSERT_EQ_U(sp_check(got[i], MSG, i == 0 ? 7 : 8), MSG);
    }
    sp_rig_down(&rig);
}
