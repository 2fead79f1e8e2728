/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA framing cost per byte, next to memcpy, measured in the same run: a stream of FPDUs (ULPDU
 * size given) is framed into iovecs (the payload stays in place, as writev would send it) and
 * deframed back in receive-sized pieces, with the ULPDU spans copied out (as with CRC on, where
 * the FPDU is staged before DDP acts on it). Several passes, medians.
 *
 *   bench_mpa [--passes N] [--ms PER_MEASUREMENT] [--ulpdu BYTES] [--read BYTES]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "iwarp/errors.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"

enum { MAX_PASSES = 64, STREAM_FPDUS = 64 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct setup {
    uint32_t ulpdu, read;
    uint8_t *payload, *wire, *staging;
    size_t wire_len;
};

/* Frames STREAM_FPDUS FPDUs; with gather, also copies the iovecs into s->wire (what the kernel
 * does on writev; not part of the measured framing cost). Returns the ULPDU octets framed or 0. */
static size_t frame_stream(struct setup *s, bool crc, bool markers, bool gather)
{
    struct iwarp_mpa_tx tx;
    struct iwarp_mpa_tx_cfg cfg = {.crc = crc, .markers = markers};
    if (iwarp_mpa_tx_init(&tx, &cfg) < 0)
        return 0;
    static struct iwarp_mpa_tx_scratch scratch;
    static struct iovec out[IWARP_MPA_TX_IOV_MAX(1)];
    if (gather)
        s->wire_len = 0;
    for (int i = 0; i < STREAM_FPDUS; i++) {
        struct iovec in = {s->payload, s->ulpdu};
        iwarp_ssize n = iwarp_mpa_tx_frame(&tx, &in, 1, &scratch, out, sizeof out / sizeof out[0]);
        if (n < 0)
            return 0;
        for (iwarp_ssize k = 0; gather && k < n; k++) {
            memcpy(s->wire + s->wire_len, out[k].iov_base, out[k].iov_len);
            s->wire_len += out[k].iov_len;
        }
    }
    return (size_t)STREAM_FPDUS * s->ulpdu;
}

/* Deframes s->wire in s->read-sized pieces, copying spans to staging; returns ULPDU octets. */
static size_t deframe_stream(struct setup *s, bool crc, bool markers)
{
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_rx_cfg cfg = {.crc = crc, .markers = markers};
    if (iwarp_mpa_rx_init(&rx, &cfg) < 0)
        return 0;
    size_t got = 0;
    for (size_t off = 0; off < s->wire_len;) {
        size_t piece = s->wire_len - off < s->read ? s->wire_len - off : s->read;
        const uint8_t *p = s->wire + off;
        off += piece;
        while (piece > 0) {
            struct iwarp_mpa_rx_ev ev;
            iwarp_ssize n = iwarp_mpa_rx_feed(&rx, p, piece, &ev);
            if (n < 0)
                return 0;
            p += n;
            piece -= (size_t)n;
            if (ev.kind == IWARP_MPA_RX_EV_ULPDU)
                memcpy(s->staging + ev.ulpdu_off, ev.data, ev.len);
            else if (ev.kind == IWARP_MPA_RX_EV_FPDU)
                got += ev.ulpdu_len;
        }
    }
    return got;
}

/* GB/s of ULPDU octets for kind 0 = frame (TX iovecs, CRC computed), 1 = deframe (RX), 2 = memcpy
 * of the same octets once. The deframer reads the stream framed by main() for this setting. */
static double measure(struct setup *s, int kind, bool crc, bool markers, double ms)
{
    double t0 = now_s(), t;
    size_t bytes = 0;
    do {
        size_t n;
        if (kind == 0)
            n = frame_stream(s, crc, markers, false);
        else if (kind == 1)
            n = deframe_stream(s, crc, markers);
        else {
            for (int i = 0; i < STREAM_FPDUS; i++)
                memcpy(s->staging, s->payload, s->ulpdu);
            __asm__ volatile("" : : "r"(s->staging) : "memory");
            n = (size_t)STREAM_FPDUS * s->ulpdu;
        }
        if (n == 0) {
            fprintf(stderr, "bench_mpa: %s failed\n", kind == 0 ? "framing" : "deframing");
            exit(1);
        }
        bytes += n;
        t = now_s();
    } while ((t - t0) * 1e3 < ms);
    return (double)bytes / (t - t0) / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double tmp[MAX_PASSES];
    memcpy(tmp, v, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int passes = 7;
    double ms = 150;
    struct setup s = {.ulpdu = 64768, .read = 65536};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--passes") && i + 1 < argc)
            passes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
            ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--ulpdu") && i + 1 < argc)
            s.ulpdu = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--read") && i + 1 < argc)
            s.read = (uint32_t)strtoul(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: bench_mpa [--passes N] [--ms MS] [--ulpdu B] [--read B]\n");
            return 2;
        }
    }
    if (passes < 1 || passes > MAX_PASSES || s.ulpdu < 1 || s.ulpdu > IWARP_MPA_MULPDU_MAX ||
        s.read < 1) {
        fprintf(stderr, "bench_mpa: bad arguments\n");
        return 2;
    }
    s.payload = malloc(s.ulpdu);
    s.staging = malloc(s.ulpdu);
    s.wire = malloc((size_t)STREAM_FPDUS * (s.ulpdu + 16 + 4u * 130u));
    if (!s.payload || !s.staging || !s.wire)
        return 1;
    for (uint32_t i = 0; i < s.ulpdu; i++)
        s.payload[i] = (uint8_t)(i * 2654435761u >> 24);

    printf("MPA framing, ULPDU %u B, receive pieces %u B, %d passes x %.0f ms (GB/s of ULPDU)\n",
           s.ulpdu, s.read, passes, ms);
    static const struct {
        const char *name;
        bool crc, markers;
    } cfgs[] = {
        {"crc off", false, false}, {"crc on", true, false}, {"crc on, markers", true, true}};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        double r[3][MAX_PASSES], rx_ratio[MAX_PASSES];
        if (frame_stream(&s, cfgs[c].crc, cfgs[c].markers, true) == 0)
            return 1;
        for (int p = 0; p < passes; p++) {
            for (int k = 0; k < 3; k++)
                r[k][p] = measure(&s, k, cfgs[c].crc, cfgs[c].markers, ms);
            rx_ratio[p] = r[1][p] / r[2][p];
        }
        /* With CRC off, framing never touches the payload: its rate is FPDUs per second. */
        double fr = median(r[0], passes);
        printf("  %-16s frame %8.2f (%6.2f M FPDU/s)  deframe+stage %6.2f  memcpy %6.2f  "
               "deframe/memcpy %.2f\n",
               cfgs[c].name, fr, fr * 1e3 / s.ulpdu, median(r[1], passes), median(r[2], passes),
               median(rx_ratio, passes));
    }
    free(s.payload);
    free(s.staging);
    free(s.wire);
    return 0;
}
