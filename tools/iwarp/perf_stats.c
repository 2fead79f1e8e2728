/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: statistics (medians over passes, latency percentiles, peak-window bandwidth),
 * the clock, CPU pinning and the progress line.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t perf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time (user + system) this process has used so far, in seconds. */
double perf_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Pin the calling thread to cpu modulo the online CPUs. Threads it creates later (a context's
 * progress thread) inherit the CPU set. */
void perf_pin(int cpu)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((size_t)cpu % (size_t)(n > 0 ? n : 1), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1); sorts v. */
double perf_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The q-quantile of sorted v[0..n) by the nearest-rank method (as perftest's percentiles). */
static double quantile(const double *v, size_t n, double q)
{
    double x = q * (double)n;
    size_t k = (size_t)x;
    if ((double)k < x)
        k++;
    return v[k ? k - 1 : 0];
}

/* Square root by Newton's method (no libm for one call). */
static double root(double x)
{
    if (!(x > 0))
        return 0;
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 200; i++) {
        double next = 0.5 * (r + x / r);
        if (next >= r)
            break;
        r = next;
    }
    return r;
}

/* Summarise n >= 1 latency samples in nanoseconds (sorted in place) into microseconds:
 * min, max, typical (median), mean, standard deviation, 99th and 99.9th percentile. */
void perf_lat_summarize(struct perf_lat *out, double *ns, size_t n)
{
    qsort(ns, n, sizeof *ns, cmp_double);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        sum += ns[i];
    double mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += (ns[i] - mean) * (ns[i] - mean);
    out->min = ns[0] / 1e3;
    out->max = ns[n - 1] / 1e3;
    out->typical = (n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2) / 1e3;
    out->avg = mean / 1e3;
    out->stdev = root(sq / (double)n) / 1e3;
    out->p99 = quantile(ns, n, 0.99) / 1e3;
    out->p999 = quantile(ns, n, 0.999) / 1e3;
    out->iters = n;
}

/* The median over n passes of each field of v; *lo and *hi: the range of avg. */
void perf_row_bw(struct perf_bw *out, double *lo, double *hi, const struct perf_bw *v, size_t n)
{
    double a[PERF_MAX_PASSES], b[PERF_MAX_PASSES], c[PERF_MAX_PASSES], it[PERF_MAX_PASSES];
    double cpu[PERF_MAX_PASSES];
    for (size_t i = 0; i < n; i++) {
        a[i] = v[i].peak;
        b[i] = v[i].avg;
        c[i] = v[i].mpps;
        it[i] = (double)v[i].iters;
        cpu[i] = v[i].cpu_s_per_gb;
    }
    out->cpu_s_per_gb = perf_median(cpu, n);
    out->peak = perf_median(a, n);
    out->avg = perf_median(b, n); /* sorts b: b[0] and b[n-1] are the range */
    out->mpps = perf_median(c, n);
    out->iters = (uint64_t)perf_median(it, n);
    *lo = b[0];
    *hi = b[n - 1];
}

/* The median over n passes of each field of v; *lo and *hi: the range of typical. */
void perf_row_lat(struct perf_lat *out, double *lo, double *hi, const struct perf_lat *v, size_t n)
{
    double f[8][PERF_MAX_PASSES];
    for (size_t i = 0; i < n; i++) {
        f[0][i] = v[i].min;
        f[1][i] = v[i].max;
        f[2][i] = v[i].typical;
        f[3][i] = v[i].avg;
        f[4][i] = v[i].stdev;
        f[5][i] = v[i].p99;
        f[6][i] = v[i].p999;
        f[7][i] = (double)v[i].iters;
    }
    out->min = perf_median(f[0], n);
    out->max = perf_median(f[1], n);
    out->typical = perf_median(f[2], n);
    out->avg = perf_median(f[3], n);
    out->stdev = perf_median(f[4], n);
    out->p99 = perf_median(f[5], n);
    out->p999 = perf_median(f[6], n);
    out->iters = (uint64_t)perf_median(f[7], n);
    *lo = f[2][0];
    *hi = f[2][n - 1];
}

/* Start a peak-bandwidth meter at time now. */
void perf_meter_start(struct perf_meter *m, uint64_t now)
{
    m->win_start = now;
    m->win_bytes = 0;
    m->peak = 0;
}

/* Count `bytes` completed at time now; closes a window once PERF_PEAK_WINDOW_NS have passed. */
void perf_meter_add(struct perf_meter *m, uint64_t bytes, uint64_t now)
{
    m->win_bytes += bytes;
    uint64_t dt = now - m->win_start;
    if (dt < PERF_PEAK_WINDOW_NS)
        return;
    double r = (double)m->win_bytes * 1e9 / (double)dt;
    if (r > m->peak)
        m->peak = r;
    m->win_start = now;
    m->win_bytes = 0;
}

/* Begin a run named `what` (e.g. "write 65536 B pass 1/5"); the line shows only on a
 * terminal and only once the run has lasted two seconds. */
void perf_progress_begin(struct perf_progress *p, const char *what, uint64_t now)
{
    p->tty = isatty(STDERR_FILENO);
    p->shown = false;
    p->start = now;
    p->last = now;
    snprintf(p->what, sizeof p->what, "%s", what);
}

/* Update the line to `fraction` done (0..1), at most four times a second. */
void perf_progress_tick(struct perf_progress *p, double fraction, uint64_t now)
{
    if (!p->tty || now - p->start < 2000000000u || now - p->last < 250000000u)
        return;
    p->last = now;
    p->shown = true;
    fprintf(stderr, "\r  %s: %3.0f%% (%.1f s)   ", p->what, fraction * 100,
            (double)(now - p->start) / 1e9);
    fflush(stderr);
}

/* Erase the line if it was shown. */
void perf_progress_end(struct perf_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r%*s\r", 70, "");
    p->shown = false;
}
