/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32C throughput next to memcpy, measured in the same run (several passes, medians, ratios
 * whose two sides come from the same pass).
 *
 *   bench_crc32c [--passes N] [--ms PER_MEASUREMENT] [--json]
 *
 * For each size it times iwarp_crc32c_update (ISA-L when built with it), the portable
 * slicing-by-8 fallback, and memcpy of the same buffer, and prints the median GB/s
 * (10^9 bytes/s) over the passes, min..max, and the median per-pass ratio CRC/memcpy.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/crc32c.h"

enum { MAX_PASSES = 64 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;

/* Runs fn over buf repeatedly for about ms milliseconds; returns GB/s. */
static double measure(int kind, uint8_t *dst, const uint8_t *src, size_t len, double ms)
{
    size_t iters = 0;
    double t0 = now_s(), t;
    uint32_t acc = 0;
    do {
        for (int k = 0; k < 16; k++) {
            if (kind == 0)
                acc ^= iwarp_crc32c_update(IWARP_CRC32C_INIT, src, len);
            else if (kind == 1)
                acc ^= iwarp_crc32c_update_portable(IWARP_CRC32C_INIT, src, len);
            else {
                memcpy(dst, src, len);
                __asm__ volatile("" : : "r"(dst) : "memory");
            }
        }
        iters += 16;
        t = now_s();
    } while ((t - t0) * 1e3 < ms);
    sink = acc;
    return (double)len * (double)iters / (t - t0) / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    double tmp[MAX_PASSES];
    memcpy(tmp, v, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static double vmin(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static double vmax(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

int main(int argc, char **argv)
{
    int passes = 7, json = 0;
    double ms = 150;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--passes") && i + 1 < argc)
            passes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
            ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else {
            fprintf(stderr, "usage: bench_crc32c [--passes N] [--ms MS] [--json]\n");
            return 2;
        }
    }
    if (passes < 1 || passes > MAX_PASSES) {
        fprintf(stderr, "bench_crc32c: --passes must be 1..%d\n", MAX_PASSES);
        return 2;
    }
    static const size_t sizes[] = {4096, 65536, 4u << 20};
    const char *names[] = {"crc32c", "crc32c-portable", "memcpy"};
    size_t maxlen = 4u << 20;
    uint8_t *src = malloc(maxlen + 64), *dst = malloc(maxlen + 64);
    if (!src || !dst)
        return 1;
    for (size_t i = 0; i < maxlen + 64; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 24);
    memset(dst, 0, maxlen + 64);

    if (!json)
        printf("crc32c implementation: %s; %d passes x %.0f ms; GB/s = 1e9 B/s\n",
               iwarp_crc32c_impl(), passes, ms);
    if (json)
        printf("{\"impl\":\"%s\",\"passes\":%d,\"results\":[", iwarp_crc32c_impl(), passes);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        double r[3][MAX_PASSES], ratio[MAX_PASSES];
        for (int p = 0; p < passes; p++) {
            for (int k = 0; k < 3; k++)
                r[k][p] = measure(k, dst, src, sizes[s], ms);
            ratio[p] = r[0][p] / r[2][p];
        }
        for (int k = 0; k < 3; k++) {
            if (json)
                printf("%s{\"size\":%zu,\"what\":\"%s\",\"median_gbps\":%.3f,\"min\":%.3f,"
                       "\"max\":%.3f}",
                       s == 0 && k == 0 ? "" : ",", sizes[s], names[k], median(r[k], passes),
                       vmin(r[k], passes), vmax(r[k], passes));
            else
                printf("%8zu B  %-16s %8.2f GB/s  [%.2f..%.2f]\n", sizes[s], names[k],
                       median(r[k], passes), vmin(r[k], passes), vmax(r[k], passes));
        }
        if (json)
            printf(",{\"size\":%zu,\"what\":\"ratio crc32c/memcpy\",\"median\":%.3f}", sizes[s],
                   median(ratio, passes));
        else
            printf("%8zu B  ratio crc32c/memcpy %.2f  [%.2f..%.2f]\n", sizes[s],
                   median(ratio, passes), vmin(ratio, passes), vmax(ratio, passes));
    }
    if (json)
        printf("]}\n");
    free(src);
    free(dst);
    return 0;
}
