/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The progress engine (L7): one epoll set, timers and, in thread mode, a progress thread.
 *
 * Sources (sockets, listeners) register a struct iwarp_loop_src with callbacks. The loop waits
 * without the context lock, then takes it (the lock given at init) around every callback, so
 * callbacks run with the lock held and may call any _locked function. A callback may let go of
 * the lock for a while (around a system call) and take it again: other threads may dispatch
 * meanwhile, and a source deleted meanwhile is still never called. In caller mode the
 * application's thread runs the loop itself (iwarp_ctx_progress, iwarp_poll_cq).
 */
#ifndef IWARP_LOOP_LOOP_H
#define IWARP_LOOP_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct iwarp_loop_src;

/* I/O readiness (EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP bits) on src->fd. Lock held. */
typedef void (*iwarp_loop_io_fn)(struct iwarp_loop_src *src, uint32_t events, uint64_t now_ns);
/* src's deadline has passed. Lock held. */
typedef void (*iwarp_loop_timer_fn)(struct iwarp_loop_src *src, uint64_t now_ns);

struct iwarp_loop_src {
    int fd;            /* -1 for a timer-only source */
    uint32_t events;   /* epoll interest (EPOLLIN, EPOLLOUT) */
    uint64_t deadline; /* absolute CLOCK_MONOTONIC ns; UINT64_MAX: none */
    iwarp_loop_io_fn on_io;
    iwarp_loop_timer_fn on_timer;
    void *user;
    /* private to loop.c */
    uint32_t heap_index; /* position in the timer heap, UINT32_MAX when not in it */
    bool registered;
    bool unwatched;        /* out of the epoll set: busy polls read it (iwarp_loop_direct) */
    uint32_t direct_reads; /* busy-poll reads since the loop's last other pass */
    uint64_t direct_pass;  /* the pass count (iwarp_loop.passes) they were counted at */
    struct iwarp_loop_src *unwatched_next; /* the loop's list of them */
};

/* Deletions remembered during one unlocked wait (more: that wait's events are dropped). */
#define IWARP_LOOP_GONE_MAX 16u

struct iwarp_loop {
    pthread_mutex_t *lock; /* the context lock (borrowed) */
    int epfd;
    int wake_fd;                  /* eventfd: wakes a waiting loop */
    int timer_fd;                 /* timerfd: fires at the first deadline */
    uint64_t timer_armed;         /* what timer_fd is set to (UINT64_MAX: disarmed) */
    bool timer_busy;              /* a thread is setting timer_fd (without the lock) */
    uint32_t timer_fires;         /* times timer_fd was seen to fire */
    bool wake_pending;            /* iwarp_loop_wake_locked: wake_fd is written at the unlock */
    struct iwarp_loop_src **heap; /* timer min-heap by deadline */
    uint32_t heap_len, heap_cap;  /* heap_cap >= n_src: a slot for every source */
    uint32_t n_src;               /* registered sources */
    pthread_t thread;
    bool thread_running;
    bool stop;
    /* application threads running the loop in the progress thread's place (iwarp_loop_help_locked);
     * while there are any, the progress thread stands aside on `parked` */
    uint32_t n_helpers;
    pthread_cond_t parked;
    uint32_t n_waiting;  /* threads inside epoll_wait: the progress thread, application threads
                            progressing in caller mode */
    uint32_t n_blocking; /* of those, the ones that may sleep there (a timeout other than 0):
                            only they need the timerfd set and the wake fd written */
    /* Application threads that wait in the loop (timeout not 0): one of them, the blocker, waits
     * in epoll_wait; the others follow on `followers` until it leaves (follow_gen counts its
     * departures). A single wake fd wakes a single waiter: with two application threads in
     * epoll_wait one could take the wake meant for the other and leave it asleep. */
    bool app_blocker;
    uint32_t n_followers;
    uint64_t follow_gen;
    bool followers_pending; /* the blocker left: iwarp_loop_unlock wakes the followers */
    pthread_cond_t followers;
    void *active; /* private to loop.c: ready lists being dispatched (iwarp_loop_del clears a
                     deleted source from them) */
    /* private to loop.c: the last sources deleted while a thread waited in epoll_wait without
     * the lock (compared as addresses, never dereferenced), a ring: deletion k is at
     * gone[k % IWARP_LOOP_GONE_MAX] and n_gone counts them all. A wait drops the entries of
     * every deletion since it began; one that began before more deletions than the ring holds
     * drops its whole list. */
    const void *gone[IWARP_LOOP_GONE_MAX];
    uint64_t n_gone;
    /* Sources busy polls read themselves, taken out of the epoll set (iwarp_loop_direct), and
     * the loop's passes other than those polls' own, which bring them back. */
    struct iwarp_loop_src *unwatched;
    uint64_t passes;
    /* The owner's own system calls decided under the lock (NULL: none): iwarp_loop_unlock
     * asks deferred_take (lock held) whether this thread is to make them, and then, without
     * the lock, calls deferred_run. */
    bool (*deferred_take)(void *user);
    void (*deferred_run)(void *user);
    void *deferred_user;
    void *(*alloc)(void *user, size_t size); /* heap growth (context allocator) */
    void (*dealloc)(void *user, void *p);
    void *alloc_user;
};

/* Monotonic clock in ns. */
uint64_t iwarp_loop_now(void);

/* Set up the epoll set and wake fd. Ownership: lock is borrowed. Returns 0 or IWARP_ERR_IO. */
int iwarp_loop_init(struct iwarp_loop *l, pthread_mutex_t *lock,
                    void *(*alloc)(void *user, size_t size), void (*dealloc)(void *user, void *p),
                    void *alloc_user);

/* Start the progress thread (thread mode). Returns 0 or IWARP_ERR_IO. */
int iwarp_loop_start_thread(struct iwarp_loop *l);

/* Stop the thread (if any; call without the lock) and close everything. */
void iwarp_loop_fini(struct iwarp_loop *l);

/* Register / change interest / remove a source (lock held). iwarp_loop_add takes the source's
 * room in the timer heap (the allocator given at init): it returns 0, IWARP_ERR_STATE (already
 * registered), IWARP_ERR_NOMEM or IWARP_ERR_IO, and on failure nothing is registered. */
int iwarp_loop_add(struct iwarp_loop *l, struct iwarp_loop_src *src);
int iwarp_loop_mod(struct iwarp_loop *l, struct iwarp_loop_src *src, uint32_t events);
void iwarp_loop_del(struct iwarp_loop *l, struct iwarp_loop_src *src);

/* Arm (or with UINT64_MAX disarm) src's timer (lock held). It never allocates (the room was
 * taken by iwarp_loop_add), so a registered source's deadline is never dropped for want of
 * memory: 0, or IWARP_ERR_STATE when src is not registered. */
int iwarp_loop_set_timer(struct iwarp_loop *l, struct iwarp_loop_src *src, uint64_t deadline);

/* Wait up to timeout_ms (0: poll, -1: until something happens) and run ready callbacks and
 * expired timers. Call WITHOUT the lock. Returns the number of callbacks run. */
int iwarp_loop_run_once(struct iwarp_loop *l, int timeout_ms);

/* The same, called with the lock held: it is let go of for the wait and held again on return
 * (iwarp_poll_cq in caller mode: two lock round trips fewer per poll). */
int iwarp_loop_run_once_locked(struct iwarp_loop *l, int timeout_ms);

/*
 * iwarp_loop_run_once for a thread that waits for something the loop produces (a completion
 * event): the progress thread, if any, stands aside while such helpers wait, so the readiness
 * a helper waits for wakes the helper itself, not the progress thread, which would then have to
 * wake it: one wakeup on the way to the application instead of two. The progress thread comes
 * back within IWARP_LOOP_PARK_NS once no helper is left. Called with the lock held, held again
 * on return (let go of for the wait): a waiter checks for what it waits for and starts waiting
 * in one hold of the lock, so nothing that comes in between goes unseen.
 */
int iwarp_loop_help_locked(struct iwarp_loop *l, int timeout_ms);

/* How long a parked progress thread sleeps before it looks whether helpers are still there. */
#define IWARP_LOOP_PARK_NS 1000000u

/*
 * A busy poll read src itself instead of asking epoll (lock held; iwarp_poll_cq reads the
 * socket of a CQ's sole QP). Once it has done so IWARP_LOOP_UNWATCH_AFTER times with no other pass
 * of the loop in between, and no thread may sleep in the loop, src leaves the epoll set: while
 * a socket is in an epoll set, each segment that reaches it runs epoll's wakeup callback in the
 * sender's system call, about 0.2 us of every one-way on loopback (docs/design.md, "Where a
 * busy-poll one-way goes"). Every other pass of the loop (iwarp_loop_run_once, _locked,
 * _help_locked, the progress thread) puts such sources back first, so whatever else runs the
 * loop sees them as before.
 */
void iwarp_loop_direct(struct iwarp_loop *l, struct iwarp_loop_src *src);
#define IWARP_LOOP_UNWATCH_AFTER 256u

/* iwarp_loop_run_once_locked(l, 0) for the busy poll's own periodic look at the rest of the
 * context (its other sockets, its timers): the sources it took out of the set stay out. */
int iwarp_loop_poll_locked(struct iwarp_loop *l);

/* Wake a thread waiting in run_once (e.g. after interest changed from another thread). Call
 * WITHOUT the lock; with it, iwarp_loop_wake_locked. */
void iwarp_loop_wake(struct iwarp_loop *l);

/*
 * No system call on the loop's own fds is made with the lock held (docs/design.md, "Locking and
 * progress"): what a thread decides under the lock (a wake, a new first deadline for the timerfd)
 * is done by iwarp_loop_unlock, right after it lets go of the lock. Every holder of the lock lets
 * go of it through iwarp_loop_unlock, so nothing decided is left undone.
 */
void iwarp_loop_wake_locked(struct iwarp_loop *l);
void iwarp_loop_unlock(struct iwarp_loop *l);

#endif
