/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Waiting in tests: poll the condition waited for until a deadline, and fail the test with a
 * message saying what did not happen and how long it was waited for. A short pause between
 * polls is fine; a fixed sleep in place of checking is not: too short on a loaded machine (the
 * test fails at random), too long everywhere else (every run pays for it).
 *
 *   WAIT_UNTIL(iwarp_poll_cq(cq, 1, &wc) == 1, 5000, "a completion on the client's CQ");
 *
 *   struct deadline dl = deadline_in_ms(SP_WAIT_MS);      (a loop that does more per round)
 *   while (!done) {
 *       ...
 *       if (deadline_passed(&dl))
 *           DEADLINE_FAIL(&dl, "%u of %u completions", got, n);
 *       deadline_pause_us(1000);
 *   }
 *
 * Everything is static inline: each test file is its own executable.
 */
#ifndef IWARP_TESTS_DEADLINE_H
#define IWARP_TESTS_DEADLINE_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include (clock_gettime, nanosleep)"
#endif

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "harness.h"

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t deadline_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A point in time to wait until, and when the wait started (for the failure message). */
struct deadline {
    uint64_t start_ns, end_ns;
};

/* The deadline ms milliseconds from now. */
static inline struct deadline deadline_in_ms(uint64_t ms)
{
    uint64_t now = deadline_now_ns();
    return (struct deadline){.start_ns = now, .end_ns = now + ms * 1000000u};
}

static inline bool deadline_passed(const struct deadline *d)
{
    return deadline_now_ns() >= d->end_ns;
}

/* Milliseconds since the wait started. */
static inline uint64_t deadline_waited_ms(const struct deadline *d)
{
    return (deadline_now_ns() - d->start_ns) / 1000000u;
}

/* The pause between two polls of a condition. */
static inline void deadline_pause_us(unsigned us)
{
    struct timespec ts = {.tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000};
    nanosleep(&ts, NULL);
}

/* Fails the test at file:line: "timed out after N ms waiting for <what>". */
static inline void deadline_fail(const char *file, int line, const struct deadline *d,
                                 const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

static inline void deadline_fail(const char *file, int line, const struct deadline *d,
                                 const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    harness_fail(file, line, "timed out after %llu ms waiting for %s",
                 (unsigned long long)deadline_waited_ms(d), what);
}

/* deadline_fail() at the caller's line. */
#define DEADLINE_FAIL(d, ...) deadline_fail(__FILE__, __LINE__, (d), __VA_ARGS__)

/* Polls cond every millisecond until it holds; fails the test after ms milliseconds with the
 * printf-style description that follows (what was waited for). */
#define WAIT_UNTIL(cond, ms, ...)                                                \
    do {                                                                         \
        struct deadline wait_until_dl_ = deadline_in_ms(ms);                     \
        while (!(cond)) {                                                        \
            if (deadline_passed(&wait_until_dl_))                                \
                deadline_fail(__FILE__, __LINE__, &wait_until_dl_, __VA_ARGS__); \
            deadline_pause_us(1000);                                             \
        }                                                                        \
    } while (0)

#endif
