/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The progress engine: an epoll set (level-triggered), an eventfd that wakes a waiting thread,
 * a binary min-heap of timer deadlines grown through the context allocator, a timerfd set to
 * the first deadline, and an optional progress thread. The wait happens without the context
 * lock; callbacks run with it held, and may let go of it for a while (a connection's I/O
 * window), so several threads may be dispatching at once. No system call on the loop's fds is
 * made with the lock held: iwarp_loop_unlock makes them once it is let go of.
 *
 * Deadlines reach a waiting thread through the timerfd, not by waking it: a deadline armed
 * while a thread waits costs one timerfd_settime, and one taken back before it passes costs
 * another, but the thread sleeps on. A transmit batch arms and takes back a deadline per batch
 * (docs/design.md, "Batching small posts"); waking the progress thread for each, on the
 * poster's own core, cost three quarters of the event-mode message rate. The timerfd also keeps
 * nanosecond deadlines that epoll_wait's millisecond timeout would round up.
 *
 * Deleting a source while its readiness is already in a ready list (returned by epoll_wait but
 * not yet dispatched) is safe: every list being dispatched is linked from loop->active and
 * iwarp_loop_del() clears the source's entries there, so a freed source is never called. A
 * source deleted (and perhaps freed) while other threads are still inside epoll_wait, before
 * their lists exist, is remembered by address in a ring of recent deletions, and each wait drops
 * the entries of every deletion since it began: several threads may wait at once (the progress
 * thread and application threads, or application threads in caller mode), so the first to
 * return must not clear what the others still need. The epoll set is level-triggered, so a
 * dropped entry of a live source is reported again.
 *
 * A socket that busy polls read themselves leaves the epoll set (iwarp_loop_direct): epoll's
 * wakeup callback would otherwise run for each of its segments in the sender's system call.
 * Every pass of the loop but the busy poll's own puts it back before it waits.
 */
#define _GNU_SOURCE 1 /* eventfd, epoll, timerfd, clock_gettime */
#include "loop/loop.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "iwarp/errors.h"

/* Ready events taken from epoll per wait. */
#define LOOP_BATCH 64

/* One ready list being dispatched (lives on the dispatching thread's stack). */
struct loop_batch {
    struct loop_batch *next;
    struct epoll_event *ev;
    int n;
};

uint64_t iwarp_loop_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- timer heap ------------------------------------------------------------------------ */

static void heap_place(struct iwarp_loop *l, uint32_t i, struct iwarp_loop_src *s)
{
    l->heap[i] = s;
    s->heap_index = i;
}

static void heap_up(struct iwarp_loop *l, uint32_t i)
{
    struct iwarp_loop_src *s = l->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (l->heap[parent]->deadline <= s->deadline)
            break;
        heap_place(l, i, l->heap[parent]);
        i = parent;
    }
    heap_place(l, i, s);
}

static void heap_down(struct iwarp_loop *l, uint32_t i)
{
    struct iwarp_loop_src *s = l->heap[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= l->heap_len)
            break;
        if (child + 1 < l->heap_len && l->heap[child + 1]->deadline < l->heap[child]->deadline)
            child++;
        if (s->deadline <= l->heap[child]->deadline)
            break;
        heap_place(l, i, l->heap[child]);
        i = child;
    }
    heap_place(l, i, s);
}

static int heap_grow(struct iwarp_loop *l)
{
    uint32_t cap = l->heap_cap ? l->heap_cap * 2 : 16;
    struct iwarp_loop_src **h = l->alloc(l->alloc_user, cap * sizeof *h);
    if (!h)
        return IWARP_ERR_NOMEM;
    if (l->heap_len)
        memcpy(h, l->heap, l->heap_len * sizeof *h);
    if (l->heap)
        l->dealloc(l->alloc_user, l->heap);
    l->heap = h;
    l->heap_cap = cap;
    return 0;
}

static void heap_remove(struct iwarp_loop *l, struct iwarp_loop_src *s)
{
    uint32_t i = s->heap_index;
    if (i == UINT32_MAX)
        return;
    s->heap_index = UINT32_MAX;
    l->heap_len--;
    if (i == l->heap_len)
        return;
    struct iwarp_loop_src *moved = l->heap[l->heap_len];
    heap_place(l, i, moved);
    heap_up(l, i);
    heap_down(l, moved->heap_index);
}

/* Whether the timerfd must change so that a thread in epoll_wait wakes for the first deadline
 * (lock held); then *want is that deadline. Only a change costs a system call, and only while
 * a thread may sleep there (one about to counts): a busy poll's epoll_wait(0) returns at once,
 * and the expired timers run after it anyway (dispatch). */
static bool timer_stale(const struct iwarp_loop *l, uint64_t *want)
{
    *want = l->heap_len ? l->heap[0]->deadline : UINT64_MAX;
    return l->n_blocking > 0 && *want != l->timer_armed;
}

/* Set the timerfd to want (without the lock). */
static void set_timerfd(struct iwarp_loop *l, uint64_t want)
{
    struct itimerspec its = {{0, 0}, {0, 0}}; /* all zero: disarmed */
    if (want != UINT64_MAX) {
        its.it_value.tv_sec = (time_t)(want / 1000000000u);
        its.it_value.tv_nsec = (long)(want % 1000000000u);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1; /* zero would disarm: expire at once instead */
    }
    (void)timerfd_settime(l->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void iwarp_loop_wake_locked(struct iwarp_loop *l)
{
    /* Only a thread that may sleep in epoll_wait needs the wake fd. One that waits later looks
     * first, in the hold of the lock that counts it in n_blocking; a follower sleeps only while
     * a blocker is counted there; and the thread calling this, which dispatches, looks again
     * after it. */
    if (l->n_blocking > 0)
        l->wake_pending = true;
}

/*
 * iwarp_loop_unlock when something may have been decided (a wake, followers, the timerfd, the
 * owner's deferred work, already taken when `deferred`): let go of the lock, then make the
 * system calls decided under it. One thread at a time sets the timerfd (timer_busy), and it
 * looks again after each setting: a deadline changed by another thread meanwhile is set by it
 * too, so the last setting is always the current one.
 */
static void unlock_and_act(struct iwarp_loop *l, bool deferred)
{
    bool wake = l->wake_pending;
    l->wake_pending = false;
    bool followers = l->followers_pending;
    l->followers_pending = false;
    uint64_t want;
    bool arm = !l->timer_busy && timer_stale(l, &want);
    l->timer_busy |= arm;
    uint32_t fires = l->timer_fires;
    pthread_mutex_unlock(l->lock);
    if (wake)
        iwarp_loop_wake(l);
    if (followers) /* they wait on the condition since before the lock was let go */
        pthread_cond_broadcast(&l->followers);
    if (deferred)
        l->deferred_run(l->deferred_user);
    while (arm) {
        set_timerfd(l, want);
        pthread_mutex_lock(l->lock);
        /* a fire seen meanwhile may have been of this very setting: then it is spent */
        l->timer_armed = l->timer_fires == fires ? want : UINT64_MAX;
        arm = timer_stale(l, &want);
        l->timer_busy = arm;
        fires = l->timer_fires;
        pthread_mutex_unlock(l->lock);
    }
}

void iwarp_loop_unlock(struct iwarp_loop *l)
{
    bool deferred = l->deferred_take && l->deferred_take(l->deferred_user);
    /* The usual case, a busy poll's or a post's: nobody to wake and no thread that may sleep
     * (only such a thread needs the timerfd set: timer_stale). */
    if (!deferred && !l->wake_pending && !l->followers_pending && l->n_blocking == 0) {
        pthread_mutex_unlock(l->lock);
        return;
    }
    unlock_and_act(l, deferred);
}

/* ---- setup ----------------------------------------------------------------------------- */

static void close_fds(struct iwarp_loop *l)
{
    int *fds[] = {&l->timer_fd, &l->wake_fd, &l->epfd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

int iwarp_loop_init(struct iwarp_loop *l, pthread_mutex_t *lock,
                    void *(*alloc)(void *user, size_t size), void (*dealloc)(void *user, void *p),
                    void *alloc_user)
{
    memset(l, 0, sizeof *l);
    l->lock = lock;
    l->alloc = alloc;
    l->dealloc = dealloc;
    l->alloc_user = alloc_user;
    l->timer_armed = UINT64_MAX;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int crc = pthread_cond_init(&l->parked, &ca);
    if (crc == 0 && pthread_cond_init(&l->followers, &ca) != 0) {
        pthread_cond_destroy(&l->parked);
        crc = -1;
    }
    pthread_condattr_destroy(&ca);
    if (crc != 0)
        return IWARP_ERR_IO;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    /* The wake and timer fds are told apart from sources by their data pointers (the fd
     * fields themselves). */
    struct epoll_event wake = {.events = EPOLLIN, .data.ptr = &l->wake_fd};
    struct epoll_event timer = {.events = EPOLLIN, .data.ptr = &l->timer_fd};
    if (l->epfd < 0 || l->wake_fd < 0 || l->timer_fd < 0 ||
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wake_fd, &wake) != 0 ||
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->timer_fd, &timer) != 0) {
        close_fds(l);
        pthread_cond_destroy(&l->parked);
        pthread_cond_destroy(&l->followers);
        return IWARP_ERR_IO;
    }
    return 0;
}

static int run_once(struct iwarp_loop *l, int timeout_ms, bool thread);

/* ns from now on CLOCK_MONOTONIC, the clock the loop's conditions wait on. */
static struct timespec cond_deadline(uint64_t ns)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)(ns / 1000000000u);
    t.tv_nsec += (long)(ns % 1000000000u);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* The progress thread: it runs the loop, except while helpers run it (iwarp_loop_help_locked); then
 * it sleeps, looking every IWARP_LOOP_PARK_NS whether they are gone. Helpers leave without
 * waking it: a helper that comes back at once, as one waiting for completion after completion
 * does, finds it still aside. */
static void *loop_thread(void *arg)
{
    struct iwarp_loop *l = arg;
    for (;;) {
        pthread_mutex_lock(l->lock);
        while (!l->stop && l->n_helpers > 0) {
            struct timespec until = cond_deadline(IWARP_LOOP_PARK_NS);
            (void)pthread_cond_timedwait(&l->parked, l->lock, &until);
        }
        bool stop = l->stop;
        iwarp_loop_unlock(l);
        if (stop)
            break;
        run_once(l, -1, true);
    }
    return NULL;
}

int iwarp_loop_start_thread(struct iwarp_loop *l)
{
    if (l->thread_running)
        return IWARP_ERR_STATE;
    l->stop = false;
    if (pthread_create(&l->thread, NULL, loop_thread, l) != 0)
        return IWARP_ERR_IO;
    l->thread_running = true;
    return 0;
}

void iwarp_loop_fini(struct iwarp_loop *l)
{
    if (l->thread_running) {
        pthread_mutex_lock(l->lock);
        l->stop = true;
        pthread_cond_broadcast(&l->parked);
        pthread_mutex_unlock(l->lock);
        /* The eventfd stays readable until read, so a thread that has not reached
         * epoll_wait yet returns from it at once: the shutdown is bounded. */
        iwarp_loop_wake(l);
        pthread_join(l->thread, NULL);
        l->thread_running = false;
    }
    close_fds(l);
    pthread_cond_destroy(&l->parked);
    pthread_cond_destroy(&l->followers);
    if (l->heap)
        l->dealloc(l->alloc_user, l->heap);
    l->heap = NULL;
    l->heap_len = l->heap_cap = 0;
}

void iwarp_loop_wake(struct iwarp_loop *l)
{
    uint64_t one = 1;
    /* EAGAIN means the counter is already non-zero: the waiter will wake anyway. */
    ssize_t n = write(l->wake_fd, &one, sizeof one);
    (void)n;
}

/* ---- sources --------------------------------------------------------------------------- */

int iwarp_loop_add(struct iwarp_loop *l, struct iwarp_loop_src *src)
{
    if (src->registered)
        return IWARP_ERR_STATE;
    src->heap_index = UINT32_MAX;
    /* the source's room in the timer heap now, so that setting its timer never needs memory
     * (a deadline a caller could not set would be lost: an MPA exchange without its timeout) */
    if (l->n_src == l->heap_cap) {
        int rc = heap_grow(l);
        if (rc != 0)
            return rc;
    }
    if (src->fd >= 0) {
        struct epoll_event ev = {.events = src->events, .data.ptr = src};
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, src->fd, &ev) != 0)
            return IWARP_ERR_IO;
    }
    src->registered = true;
    src->unwatched = false;
    src->direct_reads = 0;
    l->n_src++;
    uint64_t deadline = src->deadline;
    src->deadline = UINT64_MAX;
    int rc = iwarp_loop_set_timer(l, src, deadline);
    if (rc != 0)
        iwarp_loop_del(l, src);
    return rc;
}

int iwarp_loop_mod(struct iwarp_loop *l, struct iwarp_loop_src *src, uint32_t events)
{
    if (!src->registered)
        return IWARP_ERR_STATE;
    if (src->fd < 0 || src->events == events)
        return 0;
    if (src->unwatched) { /* out of the set: it goes back with these */
        src->events = events;
        return 0;
    }
    struct epoll_event ev = {.events = events, .data.ptr = src};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, src->fd, &ev) != 0)
        return IWARP_ERR_IO;
    src->events = events;
    return 0;
}

/* ---- sources taken out of the epoll set (iwarp_loop_direct) --------------------------- */

static void unlink_unwatched(struct iwarp_loop *l, struct iwarp_loop_src *src)
{
    for (struct iwarp_loop_src **p = &l->unwatched; *p; p = &(*p)->unwatched_next)
        if (*p == src) {
            *p = src->unwatched_next;
            break;
        }
    src->unwatched = false;
}

void iwarp_loop_direct(struct iwarp_loop *l, struct iwarp_loop_src *src)
{
    if (src->direct_pass != l->passes) { /* another pass ran since: count afresh */
        src->direct_pass = l->passes;
        src->direct_reads = 0;
    }
    if (src->unwatched || ++src->direct_reads < IWARP_LOOP_UNWATCH_AFTER)
        return;
    /* Never while a thread may sleep in epoll_wait: it would not see this socket. */
    if (!src->registered || src->fd < 0 || l->n_blocking > 0 || l->thread_running)
        return;
    if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, src->fd, NULL) != 0)
        return;
    src->unwatched = true;
    src->unwatched_next = l->unwatched;
    l->unwatched = src;
}

/* Put every source taken out back into the epoll set (lock held). false: one could not go back
 * (the kernel's memory or its limit of watches) and stays out, to be tried at the next pass. */
static bool rewatch_all(struct iwarp_loop *l)
{
    bool all = true;
    for (struct iwarp_loop_src **p = &l->unwatched; *p;) {
        struct iwarp_loop_src *src = *p;
        struct epoll_event ev = {.events = src->events, .data.ptr = src};
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, src->fd, &ev) != 0) {
            all = false;
            p = &src->unwatched_next;
            continue;
        }
        *p = src->unwatched_next;
        src->unwatched = false;
    }
    return all;
}

void iwarp_loop_del(struct iwarp_loop *l, struct iwarp_loop_src *src)
{
    if (!src->registered)
        return;
    if (src->unwatched)
        unlink_unwatched(l, src);
    else if (src->fd >= 0)
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, src->fd, NULL);
    heap_remove(l, src);
    src->deadline = UINT64_MAX;
    src->registered = false;
    l->n_src--;
    if (l->n_waiting) {
        l->gone[l->n_gone % IWARP_LOOP_GONE_MAX] = src;
        l->n_gone++;
    }
    for (struct loop_batch *b = l->active; b; b = b->next)
        for (int i = 0; i < b->n; i++)
            if (b->ev[i].data.ptr == src)
                b->ev[i].data.ptr = NULL;
}

int iwarp_loop_set_timer(struct iwarp_loop *l, struct iwarp_loop_src *src, uint64_t deadline)
{
    if (!src->registered)
        return IWARP_ERR_STATE;
    if (deadline == UINT64_MAX) {
        heap_remove(l, src); /* taken back: the unlock disarms, no waiting thread wakes */
        src->deadline = UINT64_MAX;
        return 0;
    }
    if (src->heap_index == UINT32_MAX) {
        /* heap_len < n_src <= heap_cap: iwarp_loop_add took this source's room */
        src->deadline = deadline;
        heap_place(l, l->heap_len++, src);
        heap_up(l, src->heap_index);
    } else {
        uint64_t old = src->deadline;
        if (deadline == old)
            return 0; /* the busy-poll path sets the same deadline after every read and post */
        src->deadline = deadline;
        if (deadline < old)
            heap_up(l, src->heap_index);
        else
            heap_down(l, src->heap_index);
    }
    return 0; /* a waiting thread wakes at the first deadline: the unlock sets the timerfd */
}

/* ---- running --------------------------------------------------------------------------- */

/* Take batch b off the list of those being dispatched (lock held): callbacks let go of the lock
 * for a while, so other threads' batches may have been put before it meanwhile. */
static void active_unlink(struct iwarp_loop *l, struct loop_batch *b)
{
    for (struct loop_batch **p = (struct loop_batch **)&l->active; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            return;
        }
}

/* Dispatch n ready events and then the expired timers. Lock held (callbacks may let go of it
 * for a while). */
static int dispatch(struct iwarp_loop *l, struct epoll_event *ev, int n)
{
    int ran = 0;
    struct loop_batch b = {.next = l->active, .ev = ev, .n = n};
    l->active = &b;
    uint64_t now = n ? iwarp_loop_now() : 0; /* a busy poll mostly finds nothing */
    for (int i = 0; i < n; i++) {
        struct iwarp_loop_src *s = ev[i].data.ptr;
        if (!s || !s->on_io)
            continue;
        s->on_io(s, ev[i].events, now);
        ran++;
    }
    active_unlink(l, &b);
    if (l->heap_len == 0)
        return ran;

    /* Timers: at most as many as were armed on entry, so a callback that re-arms for a time
     * already past cannot keep this loop running. */
    now = iwarp_loop_now();
    for (uint32_t budget = l->heap_len; budget > 0 && l->heap_len > 0; budget--) {
        struct iwarp_loop_src *s = l->heap[0];
        if (s->deadline > now)
            break;
        heap_remove(l, s);
        s->deadline = UINT64_MAX;
        if (s->on_timer) {
            s->on_timer(s, now);
            ran++;
        }
    }
    return ran;
}

/* After an unlocked wait that began when n_gone was `since` (lock held): drop the entries of
 * sources deleted since; other threads may still be waiting, so the ring stays as it is.
 * Returns the entries left. */
static int drop_gone(struct iwarp_loop *l, struct epoll_event *ev, int n, uint64_t since)
{
    if (l->n_gone - since > IWARP_LOOP_GONE_MAX)
        return 0; /* some of them are no longer in the ring: level-triggered, live ones return */
    for (int i = 0; i < n; i++)
        for (uint64_t g = since; g < l->n_gone; g++)
            if (ev[i].data.ptr == l->gone[g % IWARP_LOOP_GONE_MAX])
                ev[i].data.ptr = NULL;
    return n;
}

/* Read the wake and timer fds that epoll reported (without the lock) and take them off the
 * list; *woken, *fired say which were there. */
static void take_own(struct iwarp_loop *l, struct epoll_event *ev, int n, bool *woken, bool *fired)
{
    for (int i = 0; i < n; i++) {
        void *p = ev[i].data.ptr;
        if (p != &l->wake_fd && p != &l->timer_fd)
            continue;
        uint64_t v;
        ssize_t r = read(*(int *)p, &v, sizeof v);
        (void)r;
        *(p == &l->timer_fd ? fired : woken) = true;
        ev[i].data.ptr = NULL;
    }
}

int iwarp_loop_run_once(struct iwarp_loop *l, int timeout_ms)
{
    return run_once(l, timeout_ms, false);
}

/* An application thread waits while another one blocks in the loop (lock held on entry and on
 * return): until that blocker leaves or timeout_ms pass. The caller then looks again for what
 * it waits for, and waits again (then perhaps as the blocker). */
static void follow(struct iwarp_loop *l, int timeout_ms)
{
    struct timespec until = {0};
    if (timeout_ms > 0)
        until = cond_deadline((uint64_t)timeout_ms * 1000000u);
    uint64_t gen = l->follow_gen;
    l->n_followers++;
    /* What the caller decided under the lock (a doorbell's write, a timer) is done first; the
     * blocker may leave meanwhile: follow_gen then says so. */
    iwarp_loop_unlock(l);
    pthread_mutex_lock(l->lock);
    while (l->follow_gen == gen && l->app_blocker && !l->stop) {
        int rc = timeout_ms > 0 ? pthread_cond_timedwait(&l->followers, l->lock, &until)
                                : pthread_cond_wait(&l->followers, l->lock);
        if (rc == ETIMEDOUT)
            break;
    }
    l->n_followers--;
}

/* run_once with the lock held on entry and on return (it is let go of for the wait). direct: a
 * busy poll's own look at the rest of the context, which leaves out what the poll reads itself. */
static int run_once_held(struct iwarp_loop *l, int timeout_ms, bool thread, bool direct)
{
    if (!direct) {
        l->passes++;
        /* a source that could not go back is not seen by epoll: this pass must not sleep */
        if (l->unwatched && !rewatch_all(l))
            timeout_ms = 0;
    }
    bool blocker = false;
    if (!thread && timeout_ms != 0) {
        if (l->app_blocker) {
            follow(l, timeout_ms);
            return 0;
        }
        l->app_blocker = blocker = true;
    }
    struct epoll_event ev[LOOP_BATCH];
    l->n_waiting++;
    l->n_blocking += timeout_ms != 0;
    uint64_t since = l->n_gone;
    iwarp_loop_unlock(l); /* sets the timerfd for the first deadline, if that changed */

    int n = epoll_wait(l->epfd, ev, LOOP_BATCH, timeout_ms);
    if (n < 0)
        n = 0; /* EINTR: run the timers and return */
    bool woken = false, fired = false;
    take_own(l, ev, n, &woken, &fired);

    pthread_mutex_lock(l->lock);
    l->n_waiting--;
    l->n_blocking -= timeout_ms != 0;
    if (fired) { /* a one-shot timer: it has fired */
        l->timer_armed = UINT64_MAX;
        l->timer_fires++;
    }
    if (woken && thread && l->n_helpers > 0)
        l->wake_pending = true; /* a wake for a helper: leave it to one (this thread parks) */
    if (blocker) {
        l->app_blocker = false;
        l->follow_gen++;
        l->followers_pending |= l->n_followers > 0; /* one of them blocks next */
    } else if (woken && l->app_blocker) {
        l->wake_pending = true; /* a wake for the blocker (or its followers): pass it on */
    }
    n = drop_gone(l, ev, n, since);
    return dispatch(l, ev, n);
}

int iwarp_loop_help_locked(struct iwarp_loop *l, int timeout_ms)
{
    l->n_helpers++;
    int ran = run_once_held(l, timeout_ms, false, false);
    l->n_helpers--;
    return ran;
}

static int run_once(struct iwarp_loop *l, int timeout_ms, bool thread)
{
    pthread_mutex_lock(l->lock);
    int ran = run_once_held(l, timeout_ms, thread, false);
    iwarp_loop_unlock(l);
    return ran;
}

int iwarp_loop_run_once_locked(struct iwarp_loop *l, int timeout_ms)
{
    return run_once_held(l, timeout_ms, false, false);
}

int iwarp_loop_poll_locked(struct iwarp_loop *l)
{
    return run_once_held(l, 0, false, true);
}
