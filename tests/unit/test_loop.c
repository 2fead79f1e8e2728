/* SPDX-License-Identifier: BSD-2-Clause */
/* The progress loop: timers in deadline order through a grown heap, readiness callbacks under
 * the lock, deletion of a source already in the ready list, the progress thread (woken for a
 * new earlier timer and for new readiness), caller mode, sockets a busy poll reads itself taken
 * out of the epoll set and put back, and bounded shutdown. */
#define _GNU_SOURCE 1 /* socketpair flags, syscall numbers */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deadline.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "loop/loop.h"
#include "proc_probe.h"

#define WAIT_MS 5000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t n_allocs, n_frees;
static bool t_out_of_memory; /* t_alloc fails while set */

static void *t_alloc(void *user, size_t size)
{
    (void)user;
    if (t_out_of_memory)
        return NULL;
    n_allocs++;
    return malloc(size);
}

static void t_free(void *user, void *p)
{
    (void)user;
    n_frees++;
    free(p);
}

struct rec {
    struct iwarp_loop_src src;
    struct iwarp_loop *loop;
    int id;
    int *order; /* where fired ids are appended */
    int *n_order;
    int fired;
    uint32_t last_events;
    bool lock_held;
    struct iwarp_loop_src *victim; /* deleted from the callback */
};

static bool lock_is_held(void)
{
    if (pthread_mutex_trylock(&lock) == 0) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    return true;
}

static void on_timer(struct iwarp_loop_src *s, uint64_t now)
{
    struct rec *r = s->user;
    ASSERT_TRUE(now >= 1);
    r->fired++;
    r->lock_held = lock_is_held();
    if (r->order)
        r->order[(*r->n_order)++] = r->id;
}

static void on_io(struct iwarp_loop_src *s, uint32_t events, uint64_t now)
{
    (void)now;
    struct rec *r = s->user;
    r->fired++;
    r->last_events = events;
    r->lock_held = lock_is_held();
    if (r->order)
        r->order[(*r->n_order)++] = r->id;
    if (r->victim)
        iwarp_loop_del(r->loop, r->victim);
    if (events & EPOLLIN) {
        char buf[64];
        ssize_t n = read(s->fd, buf, sizeof buf);
        (void)n;
    }
}

static void rec_init(struct rec *r, struct iwarp_loop *l, int fd, uint32_t events, int id)
{
    memset(r, 0, sizeof *r);
    r->src.fd = fd;
    r->src.events = events;
    r->src.deadline = UINT64_MAX;
    r->src.on_io = on_io;
    r->src.on_timer = on_timer;
    r->src.user = r;
    r->loop = l;
    r->id = id;
}

static void loop_init(struct iwarp_loop *l)
{
    ASSERT_EQ(iwarp_loop_init(l, &lock, t_alloc, t_free, NULL), 0);
}

TEST(timers_fire_in_deadline_order_through_a_grown_heap)
{
    struct iwarp_loop l;
    enum { N = 40 }; /* more than the first heap allocation holds */
    static struct rec r[N];
    int order[N], n_order = 0;
    uint64_t now = iwarp_loop_now();
    size_t allocs0 = n_allocs;
    loop_init(&l);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N; i++) {
        rec_init(&r[i], &l, -1, 0, i);
        r[i].order = order;
        r[i].n_order = &n_order;
        uint64_t k = (uint64_t)((i * 17) % N);
        r[i].src.deadline = now - 1000000000ull + k * 1000u;
        ASSERT_EQ(iwarp_loop_add(&l, &r[i].src), 0);
    }
    /* one moved later, one disarmed, one moved to the front */
    ASSERT_EQ(iwarp_loop_set_timer(&l, &r[3].src, now + 3600000000000ull), 0);
    ASSERT_EQ(iwarp_loop_set_timer(&l, &r[5].src, UINT64_MAX), 0);
    ASSERT_EQ(iwarp_loop_set_timer(&l, &r[7].src, 1), 0);
    iwarp_loop_unlock(&l);
    ASSERT_TRUE(n_allocs - allocs0 >= 2); /* grown at least once */

    ASSERT_EQ(iwarp_loop_run_once(&l, 0), N - 2);
    ASSERT_EQ(n_order, N - 2);
    ASSERT_EQ(order[0], 7);
    for (int i = 2; i < n_order; i++) {
        int a = order[i - 1], b = order[i];
        ASSERT_TRUE(r[a].src.deadline == UINT64_MAX && r[b].src.deadline == UINT64_MAX);
        ASSERT_TRUE((a * 17) % N < (b * 17) % N);
    }
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(r[i].fired, (i == 3 || i == 5) ? 0 : 1);
        if (r[i].fired)
            ASSERT_TRUE(r[i].lock_held);
    }
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N; i++)
        iwarp_loop_del(&l, &r[i].src);
    iwarp_loop_unlock(&l);
    ASSERT_EQ(iwarp_loop_run_once(&l, 0), 0);
    iwarp_loop_fini(&l);
    ASSERT_EQ(n_allocs, n_frees);
}

/* Memory running out (docs/design.md): a source that was added can always set its timer, so
 * that no caller has a deadline silently dropped (cm_tcp's MPA and close timers); the room is
 * taken when the source is added, and an add without it fails with nothing registered. */
TEST(a_registered_source_sets_its_timer_without_memory)
{
    struct iwarp_loop l;
    enum { N = 40 }; /* more than the first heap allocation holds */
    static struct rec r[N];
    int order[N], n_order = 0;
    loop_init(&l);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N; i++) {
        rec_init(&r[i], &l, -1, 0, i);
        r[i].order = order;
        r[i].n_order = &n_order;
        ASSERT_EQ(iwarp_loop_add(&l, &r[i].src), 0);
    }
    t_out_of_memory = true;
    uint64_t now = iwarp_loop_now();
    for (int i = 0; i < N; i++)
        ASSERT_EQ(iwarp_loop_set_timer(&l, &r[i].src, now - 1000000u + (uint64_t)i), 0);
    iwarp_loop_unlock(&l);
    ASSERT_EQ(iwarp_loop_run_once(&l, 0), N);
    ASSERT_EQ(n_order, N);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(order[i], i);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N; i++)
        iwarp_loop_del(&l, &r[i].src);
    iwarp_loop_unlock(&l);
    iwarp_loop_fini(&l);

    /* no memory for the room: the add fails and leaves nothing behind (the fd is not watched) */
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    loop_init(&l);
    struct rec a;
    rec_init(&a, &l, sv[0], EPOLLIN, 0);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &a.src), IWARP_ERR_NOMEM);
    ASSERT_FALSE(a.src.registered);
    t_out_of_memory = false;
    ASSERT_EQ(iwarp_loop_add(&l, &a.src), 0); /* EEXIST from epoll if the first had added it */
    iwarp_loop_del(&l, &a.src);
    iwarp_loop_unlock(&l);
    iwarp_loop_fini(&l);
    close(sv[0]);
    close(sv[1]);
    ASSERT_EQ(n_allocs, n_frees);
}

TEST(readiness_runs_callbacks_with_the_lock_and_mod_changes_interest)
{
    struct iwarp_loop l;
    loop_init(&l);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct rec r;
    rec_init(&r, &l, sv[0], EPOLLIN, 1);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &r.src), 0);
    ASSERT_EQ(iwarp_loop_add(&l, &r.src), IWARP_ERR_STATE);
    iwarp_loop_unlock(&l);

    ASSERT_EQ(iwarp_loop_run_once(&l, 0), 0); /* nothing readable */
    ASSERT_EQ(write(sv[1], "x", 1), 1);
    ASSERT_EQ(iwarp_loop_run_once(&l, 1000), 1);
    ASSERT_EQ(r.fired, 1);
    ASSERT_TRUE(r.lock_held);
    ASSERT_TRUE(r.last_events & EPOLLIN);

    /* EPOLLOUT interest: a socket with room is writable at once. */
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_mod(&l, &r.src, EPOLLIN | EPOLLOUT), 0);
    iwarp_loop_unlock(&l);
    ASSERT_EQ(iwarp_loop_run_once(&l, 0), 1);
    ASSERT_TRUE(r.last_events & EPOLLOUT);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_mod(&l, &r.src, EPOLLIN), 0);
    iwarp_loop_unlock(&l);
    ASSERT_EQ(iwarp_loop_run_once(&l, 0), 0);

    /* The peer closes: EPOLLIN (EOF) is reported. */
    close(sv[1]);
    ASSERT_EQ(iwarp_loop_run_once(&l, 1000), 1);
    ASSERT_TRUE(r.last_events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP));
    pthread_mutex_lock(&lock);
    iwarp_loop_del(&l, &r.src);
    iwarp_loop_unlock(&l);
    close(sv[0]);
    iwarp_loop_fini(&l);
}

/* fd has octets to read, now. */
static bool readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

TEST(a_source_deleted_by_an_earlier_callback_is_not_called)
{
    struct iwarp_loop l;
    loop_init(&l);
    int a[2], b[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
    struct rec *ra = calloc(1, sizeof *ra), *rb = calloc(1, sizeof *rb);
    rec_init(ra, &l, a[0], EPOLLIN, 1);
    rec_init(rb, &l, b[0], EPOLLIN, 2);
    ra->victim = &rb->src;
    rb->victim = &ra->src;
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &ra->src), 0);
    ASSERT_EQ(iwarp_loop_add(&l, &rb->src), 0);
    iwarp_loop_unlock(&l);
    ASSERT_EQ(write(a[1], "x", 1), 1);
    ASSERT_EQ(write(b[1], "x", 1), 1);
    WAIT_UNTIL(readable(a[0]) && readable(b[0]), WAIT_MS, "both sockets to be readable");
    /* Both are in the same ready list; whichever runs first deletes the other. */
    ASSERT_EQ(iwarp_loop_run_once(&l, 1000), 1);
    ASSERT_EQ(ra->fired + rb->fired, 1);
    ASSERT_FALSE(ra->src.registered && rb->src.registered);
    pthread_mutex_lock(&lock);
    iwarp_loop_del(&l, &ra->src);
    iwarp_loop_del(&l, &rb->src);
    iwarp_loop_unlock(&l);
    free(ra);
    free(rb);
    ASSERT_EQ(iwarp_loop_run_once(&l, 0), 0);
    close(a[0]), close(a[1]), close(b[0]), close(b[1]);
    iwarp_loop_fini(&l);
}

TEST(run_once_waits_for_its_timeout_or_the_first_deadline)
{
    struct iwarp_loop l;
    loop_init(&l);
    uint64_t t0 = iwarp_loop_now();
    ASSERT_EQ(iwarp_loop_run_once(&l, 30), 0);
    uint64_t waited = iwarp_loop_now() - t0;
    ASSERT_TRUE(waited >= 29000000ull && waited < 1000000000ull);

    struct rec r;
    rec_init(&r, &l, -1, 0, 1);
    /* t0 before the deadline is set: a pause between the two (a loaded machine) must not make
     * the wait look shorter than it was */
    t0 = iwarp_loop_now();
    r.src.deadline = t0 + 20000000ull;
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &r.src), 0);
    iwarp_loop_unlock(&l);
    int ran = 0;
    while (ran == 0 && iwarp_loop_now() - t0 < 2000000000ull)
        ran = iwarp_loop_run_once(&l, -1); /* bounded by the deadline, not forever */
    ASSERT_EQ(ran, 1);
    ASSERT_EQ(r.fired, 1);
    ASSERT_TRUE(iwarp_loop_now() - t0 >= 19000000ull);
    iwarp_loop_fini(&l);
}

static int read_fired(const struct rec *r)
{
    pthread_mutex_lock(&lock);
    int f = r->fired;
    pthread_mutex_unlock(&lock);
    return f;
}

TEST(progress_thread_is_woken_for_timers_and_io_and_stops_promptly)
{
    struct iwarp_loop l;
    loop_init(&l);
    ASSERT_EQ(iwarp_loop_start_thread(&l), 0);
    ASSERT_EQ(iwarp_loop_start_thread(&l), IWARP_ERR_STATE);
    PROBE_WAIT_THREAD_IN(0, probe_epoll_wait, WAIT_MS, "the progress thread in epoll_wait(-1)");

    /* A timer armed after the thread started waiting forever must still fire. */
    struct rec t;
    rec_init(&t, &l, -1, 0, 1);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &t.src), 0);
    ASSERT_EQ(iwarp_loop_set_timer(&l, &t.src, iwarp_loop_now() + 10000000ull), 0);
    iwarp_loop_unlock(&l);
    WAIT_UNTIL(read_fired(&t) == 1, WAIT_MS, "the timer set while the thread waits to fire");
    ASSERT_TRUE(t.lock_held);

    /* A source registered while the thread waits is served. */
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct rec r;
    rec_init(&r, &l, sv[0], EPOLLIN, 2);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &r.src), 0);
    iwarp_loop_unlock(&l);
    for (int i = 1; i <= 3; i++) {
        ASSERT_EQ(write(sv[1], "x", 1), 1);
        WAIT_UNTIL(read_fired(&r) == i, WAIT_MS, "readiness %d of the new source served", i);
    }
    pthread_mutex_lock(&lock);
    iwarp_loop_del(&l, &r.src);
    iwarp_loop_del(&l, &t.src);
    iwarp_loop_unlock(&l);

    uint64_t t0 = iwarp_loop_now();
    iwarp_loop_fini(&l);
    ASSERT_TRUE(iwarp_loop_now() - t0 < 1000000000ull);
    close(sv[0]);
    close(sv[1]);
    ASSERT_EQ(n_allocs, n_frees);
}

/* A transmit batch arms a deadline and takes it back when the application polls, once per
 * batch: a sleeping progress thread must not be woken for either (loop.c: the timerfd), and a
 * deadline that stays armed must still wake it. */
TEST(deadlines_armed_and_taken_back_do_not_wake_a_sleeping_thread)
{
    struct iwarp_loop l;
    loop_init(&l);
    ASSERT_EQ(iwarp_loop_start_thread(&l), 0);
    pid_t tid =
        PROBE_WAIT_THREAD_IN(0, probe_epoll_wait, WAIT_MS, "the progress thread in epoll_wait(-1)");
    struct rec t;
    rec_init(&t, &l, -1, 0, 1);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &t.src), 0);
    iwarp_loop_unlock(&l);
    long before = probe_thread_wakeups(tid);
    ASSERT_TRUE(before >= 0);
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&lock);
        ASSERT_EQ(iwarp_loop_set_timer(&l, &t.src, iwarp_loop_now() + 50000000ull), 0);
        ASSERT_EQ(iwarp_loop_set_timer(&l, &t.src, UINT64_MAX), 0);
        iwarp_loop_unlock(&l);
    }
    deadline_pause_us(100000); /* past every deadline taken back */
    ASSERT_EQ(read_fired(&t), 0);
    /* the lock taken while the thread slept is the only wakeup allowed: none at all here */
    ASSERT_EQ(probe_thread_wakeups(tid), before);
    /* one that stays armed fires, from the timerfd */
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_set_timer(&l, &t.src, iwarp_loop_now() + 300000ull), 0);
    iwarp_loop_unlock(&l);
    WAIT_UNTIL(read_fired(&t) == 1, WAIT_MS, "the deadline left armed to fire");
    pthread_mutex_lock(&lock);
    iwarp_loop_del(&l, &t.src);
    iwarp_loop_unlock(&l);
    iwarp_loop_fini(&l);
}

/* A loop with a progress thread (*thread, once it waits in epoll_wait) watching sv[0] (a new
 * socket pair) through a source on the heap, which the caller frees. */
static struct rec *watched_socket(struct iwarp_loop *l, int sv[2], pid_t *thread)
{
    loop_init(l);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct rec *r = calloc(1, sizeof *r);
    ASSERT_TRUE(r != NULL);
    rec_init(r, l, sv[0], EPOLLIN, 1);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(l, &r->src), 0);
    iwarp_loop_unlock(l);
    ASSERT_EQ(iwarp_loop_start_thread(l), 0);
    *thread =
        PROBE_WAIT_THREAD_IN(0, probe_epoll_wait, WAIT_MS, "the progress thread in epoll_wait(-1)");
    return r;
}

/* The race CI found (test_cm under ASan): epoll_wait returns a source's readiness while another
 * thread holds the lock, deletes that source and frees it; the waiting thread must not call it
 * when it gets the lock. Holding the lock across the readiness makes the order certain. */
TEST(a_source_freed_while_the_thread_waits_outside_the_lock_is_not_called)
{
    struct iwarp_loop l;
    int sv[2];
    pid_t tid;
    struct rec *r = watched_socket(&l, sv, &tid);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(write(sv[1], "x", 1), 1);
    /* epoll_wait returns with r's readiness; the thread waits for the lock */
    PROBE_WAIT_THREAD_IN(tid, probe_futex, WAIT_MS,
                         "the progress thread, woken by the readiness, waiting for the lock");
    iwarp_loop_del(&l, &r->src);
    free(r); /* ASan reports any later call through r */
    iwarp_loop_unlock(&l);
    /* it takes the lock, passes over r's stale readiness and waits again */
    PROBE_WAIT_THREAD_IN(tid, probe_epoll_wait, WAIT_MS,
                         "the progress thread back in epoll_wait after the freed source");
    /* a live source after it is still served */
    struct rec q;
    rec_init(&q, &l, sv[0], EPOLLIN, 2);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &q.src), 0);
    iwarp_loop_unlock(&l);
    WAIT_UNTIL(read_fired(&q) == 1, WAIT_MS, "the live source after the freed one served");
    pthread_mutex_lock(&lock);
    iwarp_loop_del(&l, &q.src);
    iwarp_loop_unlock(&l);
    iwarp_loop_fini(&l);
    close(sv[0]);
    close(sv[1]);
}

static void *run_once_forever(void *arg)
{
    iwarp_loop_run_once(arg, -1);
    return NULL;
}

/* Two threads wait at once (the progress thread and an application thread that progresses
 * itself, or two application threads in caller mode): both are handed the same readiness, the
 * source is deleted and freed before either gets the lock, and the first to dispatch must not
 * make the second forget it. */
TEST(a_source_freed_while_two_threads_wait_is_called_by_neither)
{
    struct iwarp_loop l;
    int sv[2];
    pid_t a;
    struct rec *r = watched_socket(&l, sv, &a);
    pthread_t tb;
    ASSERT_EQ(pthread_create(&tb, NULL, run_once_forever, &l), 0);
    pid_t tids[PROBE_MAX_THREADS];
    pid_t b = 0;
    struct deadline dl = deadline_in_ms(WAIT_MS);
    while (!b) { /* the second waiter: the thread other than the progress thread */
        size_t n = probe_other_threads(tids, PROBE_MAX_THREADS);
        for (size_t i = 0; i < n; i++)
            if (tids[i] != a &&
                probe_nr_in(probe_thread_syscall(tids[i]), PROBE_NR(probe_epoll_wait)))
                b = tids[i];
        if (!b && deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%s", "a second thread in epoll_wait");
        deadline_pause_us(1000);
    }
    pthread_mutex_lock(&lock);
    ASSERT_EQ(write(sv[1], "x", 1), 1);
    /* level-triggered: both are handed the readiness and wait for the lock */
    PROBE_WAIT_THREAD_IN(a, probe_futex, WAIT_MS, "the progress thread waiting for the lock");
    PROBE_WAIT_THREAD_IN(b, probe_futex, WAIT_MS, "the second waiter waiting for the lock");
    iwarp_loop_del(&l, &r->src);
    free(r); /* ASan reports any later call through r */
    iwarp_loop_unlock(&l);
    ASSERT_EQ(pthread_join(tb, NULL), 0);
    PROBE_WAIT_THREAD_IN(a, probe_epoll_wait, WAIT_MS, "the progress thread back in epoll_wait");
    iwarp_loop_fini(&l);
    close(sv[0]);
    close(sv[1]);
}

/* A loop watching one end of a socket pair (sv[0], EPOLLIN) through r; and its end. */
static void pair_up(struct iwarp_loop *l, int sv[2], struct rec *r)
{
    loop_init(l);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    rec_init(r, l, sv[0], EPOLLIN, 1);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(l, &r->src), 0);
    iwarp_loop_unlock(l);
}

static void pair_down(struct iwarp_loop *l, int sv[2], struct rec *r)
{
    pthread_mutex_lock(&lock);
    iwarp_loop_del(l, &r->src);
    iwarp_loop_unlock(l);
    iwarp_loop_fini(l);
    close(sv[0]);
    close(sv[1]);
}

/* n direct reads of src (iwarp_loop_direct), lock taken for them. */
static void direct_reads(struct iwarp_loop *l, struct iwarp_loop_src *src, uint32_t n)
{
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < n; i++)
        iwarp_loop_direct(l, src);
    iwarp_loop_unlock(l);
}

/* A busy poll that reads a socket itself takes it out of the epoll set after
 * IWARP_LOOP_UNWATCH_AFTER reads in a row; the busy poll's own loop pass leaves it out, an
 * interest change waits for its return, and any other pass puts it back (with that interest)
 * before it waits, so a blocking wait sees its readiness. Another pass also starts the count
 * again, and a source deleted while out is gone for good. */
TEST(a_socket_busy_polls_read_leaves_the_epoll_set_until_another_pass)
{
    struct iwarp_loop l;
    int sv[2];
    struct rec r;
    pair_up(&l, sv, &r);
    ASSERT_TRUE(probe_epoll_watches(l.epfd, sv[0]));

    direct_reads(&l, &r.src, IWARP_LOOP_UNWATCH_AFTER - 1);
    ASSERT_TRUE(probe_epoll_watches(l.epfd, sv[0]));
    direct_reads(&l, &r.src, 1);
    ASSERT_FALSE(probe_epoll_watches(l.epfd, sv[0]));

    /* readable, but the busy poll's own pass does not see it: the poll reads it itself */
    ASSERT_EQ(write(sv[1], "x", 1), 1);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_poll_locked(&l), 0);
    ASSERT_EQ(iwarp_loop_mod(&l, &r.src, EPOLLIN | EPOLLOUT), 0);
    iwarp_loop_unlock(&l);
    ASSERT_EQ(r.fired, 0);
    ASSERT_FALSE(probe_epoll_watches(l.epfd, sv[0]));

    /* any other pass: back in the set with the interest set meanwhile, and served */
    ASSERT_EQ(iwarp_loop_run_once(&l, 1000), 1);
    ASSERT_TRUE(probe_epoll_watches(l.epfd, sv[0]));
    ASSERT_EQ(r.fired, 1);
    ASSERT_EQ_U(r.last_events & (EPOLLIN | EPOLLOUT), EPOLLIN | EPOLLOUT);
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_mod(&l, &r.src, EPOLLIN), 0);
    iwarp_loop_unlock(&l);

    /* the count starts again after that pass; a blocking wait brings the socket back */
    direct_reads(&l, &r.src, IWARP_LOOP_UNWATCH_AFTER - 1);
    ASSERT_TRUE(probe_epoll_watches(l.epfd, sv[0]));
    direct_reads(&l, &r.src, 1);
    ASSERT_FALSE(probe_epoll_watches(l.epfd, sv[0]));
    ASSERT_EQ(write(sv[1], "y", 1), 1);
    uint64_t t0 = iwarp_loop_now();
    ASSERT_EQ(iwarp_loop_run_once(&l, 5000), 1);
    ASSERT_TRUE(iwarp_loop_now() - t0 < 2000000000ull); /* woken by the socket, not the timeout */
    ASSERT_EQ(r.fired, 2);

    /* deleted while out of the set: nothing left behind, and it can be added again */
    direct_reads(&l, &r.src, IWARP_LOOP_UNWATCH_AFTER);
    ASSERT_FALSE(probe_epoll_watches(l.epfd, sv[0]));
    pthread_mutex_lock(&lock);
    iwarp_loop_del(&l, &r.src);
    iwarp_loop_unlock(&l);
    ASSERT_EQ(iwarp_loop_run_once(&l, 0), 0);
    ASSERT_FALSE(probe_epoll_watches(l.epfd, sv[0]));
    pthread_mutex_lock(&lock);
    ASSERT_EQ(iwarp_loop_add(&l, &r.src), 0);
    iwarp_loop_unlock(&l);
    ASSERT_TRUE(probe_epoll_watches(l.epfd, sv[0]));
    ASSERT_EQ(iwarp_loop_run_once(&l, 1000), 0); /* both octets were read by the callbacks */
    pair_down(&l, sv, &r);
}

/* While a thread may sleep in epoll_wait (here an application thread in a blocking pass; a
 * progress thread likewise), busy-poll reads never take a socket out of the set: that thread
 * would not see it. */
TEST(no_socket_leaves_the_set_while_a_thread_may_sleep_there)
{
    struct iwarp_loop l;
    int sv[2];
    struct rec r;
    pair_up(&l, sv, &r);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, run_once_forever, &l), 0);
    PROBE_WAIT_THREAD_IN(0, probe_epoll_wait, WAIT_MS, "the other thread asleep in epoll_wait");
    direct_reads(&l, &r.src, 2 * IWARP_LOOP_UNWATCH_AFTER);
    ASSERT_TRUE(probe_epoll_watches(l.epfd, sv[0]));
    ASSERT_EQ(write(sv[1], "x", 1), 1); /* the sleeper sees it and returns */
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(read_fired(&r), 1);

    ASSERT_EQ(iwarp_loop_start_thread(&l), 0);
    PROBE_WAIT_THREAD_IN(0, probe_epoll_wait, WAIT_MS, "the progress thread in epoll_wait(-1)");
    direct_reads(&l, &r.src, 2 * IWARP_LOOP_UNWATCH_AFTER);
    ASSERT_TRUE(probe_epoll_watches(l.epfd, sv[0]));
    pair_down(&l, sv, &r);
}

TEST(fini_without_a_thread_and_with_nothing_registered)
{
    struct iwarp_loop l;
    loop_init(&l);
    iwarp_loop_wake(&l);
    ASSERT_EQ(iwarp_loop_run_once(&l, 1000), 0); /* the wake is consumed, returns at once */
    iwarp_loop_fini(&l);
    ASSERT_EQ(l.epfd, -1);
}
