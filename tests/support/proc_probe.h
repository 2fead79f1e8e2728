/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What /proc shows of this process, for tests that must wait for a state no API reports: a
 * thread blocked in a given system call (/proc/self/task/<tid>/syscall: a progress thread
 * asleep in epoll_wait, or waiting for a lock in futex), a TCP socket's queues and whether
 * an application has accept()ed it (/proc/net/tcp, /proc/net/tcp6), and which fds an epoll set
 * watches (/proc/self/fdinfo). Waits use deadline.h.
 *
 * Everything is static inline: each test file is its own executable.
 */
#ifndef IWARP_TESTS_PROC_PROBE_H
#define IWARP_TESTS_PROC_PROBE_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include (syscall numbers, gettid)"
#endif

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "deadline.h"
#include "harness.h"

#define PROBE_RUNNING    (-1L) /* the thread runs in user space */
#define PROBE_UNREADABLE (-2L) /* the thread is gone, or its syscall file cannot be read */

/* The system call thread tid of this process is blocked in: its number (SYS_*), PROBE_RUNNING
 * or PROBE_UNREADABLE. */
static inline long probe_thread_syscall(pid_t tid)
{
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return PROBE_UNREADABLE;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (strncmp(buf, "running", 7) == 0)
        return PROBE_RUNNING;
    char *end;
    long nr = strtol(buf, &end, 10);
    return end == buf ? PROBE_UNREADABLE : nr;
}

/* The system calls a thread waiting in epoll_wait(2) can be in (glibc uses epoll_pwait where
 * the architecture has no epoll_wait), and those of a thread waiting for a pthread mutex. */
static const long probe_epoll_wait[] = {
#ifdef SYS_epoll_wait
    SYS_epoll_wait,
#endif
#ifdef SYS_epoll_pwait2
    SYS_epoll_pwait2,
#endif
    SYS_epoll_pwait,
};
static const long probe_futex[] = {
#ifdef SYS_futex_time64
    SYS_futex_time64,
#endif
    SYS_futex,
};
#define PROBE_NR(list) (list), sizeof(list) / sizeof((list)[0])

static inline bool probe_nr_in(long nr, const long *nrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (nr == nrs[i])
            return true;
    return false;
}

/* The threads of this process other than the caller: up to cap tids into tids; returns how
 * many there are (may exceed cap). */
static inline size_t probe_other_threads(pid_t *tids, size_t cap)
{
    pid_t self = (pid_t)syscall(SYS_gettid);
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t t = (pid_t)atoi(e->d_name);
        if (t <= 0 || t == self)
            continue;
        if (n < cap)
            tids[n] = t;
        n++;
    }
    closedir(d);
    return n;
}

/* The state letter of thread tid of this process (/proc/self/task/<tid>/stat: 'R' running,
 * 'S' sleeping, ...), 0 when it is gone. */
static inline char probe_thread_state(pid_t tid)
{
    char path[64], st[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[n] = 0;
    const char *r = strrchr(st, ')'); /* after the command name, which may hold anything */
    return r && r[1] == ' ' ? r[2] : 0;
}

/* How often thread tid of this process has gone to sleep and been woken since it started
 * (voluntary_ctxt_switches in /proc/self/task/<tid>/status), -1 when it cannot be read. */
static inline long probe_thread_wakeups(pid_t tid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

#define PROBE_MAX_THREADS 64u

/* Thread tid, or (tid 0) any thread of this process but the caller, blocked in one of nrs[]:
 * its tid, 0 when none is. Fails the test when the syscall file of a sleeping thread cannot be
 * read (the wait would then never end). */
static inline pid_t probe_thread_in(const char *file, int line, pid_t tid, const long *nrs,
                                    size_t n)
{
    pid_t tids[PROBE_MAX_THREADS];
    size_t nt = 1;
    if (tid)
        tids[0] = tid;
    else if ((nt = probe_other_threads(tids, PROBE_MAX_THREADS)) > PROBE_MAX_THREADS)
        nt = PROBE_MAX_THREADS;
    for (size_t i = 0; i < nt; i++) {
        long nr = probe_thread_syscall(tids[i]);
        if (nr == PROBE_UNREADABLE && probe_thread_state(tids[i]) == 'S')
            harness_fail(file, line, "cannot read /proc/self/task/%d/syscall", (int)tids[i]);
        if (probe_nr_in(nr, nrs, n))
            return tids[i];
    }
    return 0;
}

/* Waits until thread tid, or (tid 0) any thread of this process but the caller, is blocked in
 * one of the system calls nrs[0..n) (e.g. probe_epoll_wait); returns that thread's tid. Fails
 * the test after ms milliseconds, saying what (e.g. "the progress thread in epoll_wait"). */
#define PROBE_WAIT_THREAD_IN(tid, list, ms, what) \
    probe_wait_thread_in(__FILE__, __LINE__, (tid), PROBE_NR(list), (ms), (what))

static inline pid_t probe_wait_thread_in(const char *file, int line, pid_t tid, const long *nrs,
                                         size_t n, unsigned ms, const char *what)
{
    struct deadline dl = deadline_in_ms(ms);
    for (;;) {
        pid_t t = probe_thread_in(file, line, tid, nrs, n);
        if (t)
            return t;
        if (deadline_passed(&dl))
            deadline_fail(file, line, &dl, "%s", what);
        deadline_pause_us(200);
    }
}

/* ---- TCP sockets (/proc/net/tcp, tcp6: this network namespace) ---------------------------- */

#define PROBE_TCP_ESTABLISHED 0x01u
#define PROBE_TCP_TIME_WAIT   0x06u

/* One TCP socket as /proc/net/tcp lists it. */
struct probe_tcp {
    unsigned state;      /* TCP_ESTABLISHED (1), ... */
    uint32_t tx_queue;   /* octets sent and not yet acknowledged, or not yet sent */
    uint32_t rx_queue;   /* octets received and not yet read by the application */
    unsigned long inode; /* 0 while the socket has no file: not yet accept()ed */
};

static inline bool probe_tcp_scan(const char *path, uint16_t lport, uint16_t rport,
                                  struct probe_tcp *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    if (!fgets(line, sizeof line, f)) { /* the header line */
        fclose(f);
        return false;
    }
    while (!found && fgets(line, sizeof line, f)) {
        unsigned lp, rp, st, tx, rx;
        unsigned long inode;
        /* sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout
         * inode */
        if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%x %x %x:%x %*x:%*x %*x %*u %*u %lu",
                   &lp, &rp, &st, &tx, &rx, &inode) != 6)
            continue;
        if (lp != lport || rp != rport || st == PROBE_TCP_TIME_WAIT)
            continue;
        *out = (struct probe_tcp){.state = st, .tx_queue = tx, .rx_queue = rx, .inode = inode};
        found = true;
    }
    fclose(f);
    return found;
}

/* The TCP socket (IPv4 or IPv6, not in TIME_WAIT) with local port lport and remote port rport;
 * false when there is none. */
static inline bool probe_tcp_find(uint16_t lport, uint16_t rport, struct probe_tcp *out)
{
    return probe_tcp_scan("/proc/net/tcp", lport, rport, out) ||
           probe_tcp_scan("/proc/net/tcp6", lport, rport, out);
}

/* Whether the epoll set epfd watches fd (its fdinfo has a "tfd:" line for it). */
static inline bool probe_epoll_watches(int epfd, int fd)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
    FILE *f = fopen(path, "r");
    ASSERT_TRUE(f != NULL);
    bool found = false;
    int tfd;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd;
    fclose(f);
    return found;
}

#endif
