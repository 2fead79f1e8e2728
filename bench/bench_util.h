/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the libiwarp benchmark programs share: the clock, pinning, medians and the exit on a
 * failed call. Header-only: each bench_*.c is its own program.
 */
#ifndef IWARP_BENCH_UTIL_H
#define IWARP_BENCH_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "iwarp/iwarp.h"

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_n_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Pin the calling thread to cpu (modulo the CPUs there are). */
static inline void bench_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((size_t)(cpu % bench_n_cpus()), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Exit after a failed call: rc an IWARP_ERR_* (< 0), else errno says why. */
static inline void bench_die(const char *prog, const char *what, int rc)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, rc < 0 ? iwarp_strerror(rc) : strerror(errno));
    exit(1);
}

#endif
