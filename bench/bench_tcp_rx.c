/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How fast a plain TCP receiver drains one loopback stream when it reads in calls of a given
 * size: the ceiling that libiwarp's receiver of large FPDUs reads against. With CRC off
 * libiwarp reads each FPDU's payload straight into its destination, one call per FPDU (at
 * loopback's EMSS a 64754-octet payload, plus its trailer and the next FPDU's headers in a
 * second iovec); this program does the same reads without any protocol, so that the cost of
 * the read size itself can be told from the cost of the protocol around it.
 *
 *   bench_tcp_rx [--sizes N,N,...] [--iov2] [--passes N] [--mib N]
 *
 * A sender thread (CPU 1) writes 1 MiB per send() into a blocking socket; the main thread (CPU
 * 0) spins on recv() with MSG_DONTWAIT in calls of at most N octets, into a 1 MiB buffer it
 * walks through as libiwarp places a message. --iov2: recvmsg() into two iovecs instead, N
 * octets and a 1024-octet window behind them, as libiwarp reads. The sizes alternate pass by
 * pass (each pass a fresh connection, --mib MiB); the table gives each size's median GB/s
 * (10^9 octets/s), its range, the octets one call brought on average, and the median of the
 * per-pass ratios to the first size.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "bench_util.h"

enum { MAX_SIZES = 8, MAX_PASSES = 64, WINDOW = 1024 };
#define SEND_CHUNK (1u << 20)
#define PROG       "bench_tcp_rx"

struct stream {
    int fd;       /* the sender's socket */
    uint64_t mib; /* what it writes */
};

static void *sender(void *arg)
{
    struct stream *s = arg;
    bench_pin(1);
    uint8_t *buf = malloc(SEND_CHUNK);
    if (!buf)
        bench_die(PROG, "malloc", 0);
    memset(buf, 0x5a, SEND_CHUNK);
    uint64_t left = s->mib * SEND_CHUNK;
    while (left > 0) {
        ssize_t w = send(s->fd, buf, SEND_CHUNK < left ? SEND_CHUNK : left, 0);
        if (w <= 0)
            bench_die(PROG, "send", 0);
        left -= (uint64_t)w;
    }
    close(s->fd);
    free(buf);
    return NULL;
}

/* A connected loopback pair: *rx the receiver's end, the sender's in s->fd. */
static void connect_pair(int *rx, struct stream *s)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        bench_die(PROG, "listen", 0);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&a, sizeof a) != 0)
        bench_die(PROG, "connect", 0);
    int one = 1; /* as libiwarp's connections */
    (void)setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *rx = accept(l, NULL, NULL);
    if (*rx < 0)
        bench_die(PROG, "accept", 0);
    close(l);
}

/* One pass: drain a fresh stream of mib MiB in calls of at most size octets. Returns GB/s;
 * *per_call: octets per call that brought data. */
static double pass(size_t size, bool iov2, uint64_t mib, uint8_t *dst, double *per_call)
{
    struct stream s = {.mib = mib};
    int fd;
    connect_pair(&fd, &s);
    pthread_t t;
    if (pthread_create(&t, NULL, sender, &s) != 0)
        bench_die(PROG, "pthread_create", 0);
    uint8_t window[WINDOW];
    uint64_t got = 0, calls = 0, total = mib * SEND_CHUNK;
    size_t off = 0;
    double t0 = bench_now_s();
    while (got < total) {
        ssize_t n;
        if (iov2) {
            struct iovec iov[2] = {{dst + off, size}, {window, WINDOW}};
            struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
            n = recvmsg(fd, &m, MSG_DONTWAIT);
        } else {
            n = recv(fd, dst + off, size, MSG_DONTWAIT);
        }
        if (n == 0)
            break;
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR)
                bench_die(PROG, "recv", 0);
            continue;
        }
        got += (uint64_t)n;
        calls++;
        off += (size_t)n < size ? (size_t)n : size; /* walk the 1 MiB "message" */
        if (off + size > SEND_CHUNK)
            off = 0;
    }
    double dt = bench_now_s() - t0;
    pthread_join(t, NULL);
    close(fd);
    *per_call = calls ? (double)got / (double)calls : 0;
    return (double)got / dt / 1e9;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " [--sizes N,N,...] [--iov2] [--passes N] [--mib N]\n"
               "Plain TCP over loopback: a sender (CPU 1) writes 1 MiB per send(), the receiver\n"
               "(CPU 0) spins on recv(MSG_DONTWAIT) in calls of at most N octets (default sizes\n"
               "64754,65536,1048576; --iov2: recvmsg into N octets and a 1024-octet window, as\n"
               "libiwarp reads an FPDU's payload with CRC off). Sizes alternate pass by pass\n"
               "(--passes, default 5), --mib MiB per pass (default 4096).\n");
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = {64754, 65536, SEND_CHUNK};
    int nsizes = 3, passes = 5;
    uint64_t mib = 4096;
    bool iov2 = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = 0;
            for (char *tok = strtok(argv[++i], ","); tok && nsizes < MAX_SIZES;
                 tok = strtok(NULL, ","))
                sizes[nsizes++] = strtoul(tok, NULL, 0);
        } else if (!strcmp(argv[i], "--iov2")) {
            iov2 = true;
        } else if (!strcmp(argv[i], "--passes") && i + 1 < argc) {
            passes = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
            mib = strtoull(argv[++i], NULL, 0);
        } else {
            usage(!strcmp(argv[i], "--help") ? stdout : stderr);
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] == 0 || sizes[k] > SEND_CHUNK) {
            fprintf(stderr, PROG ": a size is 1 .. %u\n", SEND_CHUNK);
            return 2;
        }
    if (nsizes == 0 || passes < 1 || passes > MAX_PASSES || mib == 0) {
        usage(stderr);
        return 2;
    }
    bench_pin(0);
    uint8_t *dst = malloc(SEND_CHUNK);
    if (!dst)
        bench_die(PROG, "malloc", 0);
    memset(dst, 0, SEND_CHUNK);
    static double gbs[MAX_SIZES][MAX_PASSES], ratio[MAX_SIZES][MAX_PASSES], per[MAX_SIZES];
    for (int p = 0; p < passes; p++)
        for (int k = 0; k < nsizes; k++) {
            double pc;
            gbs[k][p] = pass(sizes[k], iov2, mib, dst, &pc);
            per[k] += pc / passes;
        }
    printf("%-10s %10s %17s %14s %10s\n", "read size", "GB/s", "min..max", "octets/call",
           "/ first");
    for (int k = 0; k < nsizes; k++) {
        double sorted[MAX_PASSES];
        for (int p = 0; p < passes; p++) {
            ratio[k][p] = gbs[k][p] / gbs[0][p];
            sorted[p] = gbs[k][p];
        }
        double med = bench_median(sorted, passes);
        printf("%-10zu %10.2f %8.2f..%-8.2f %14.0f %10.3f\n", sizes[k], med, sorted[0],
               sorted[passes - 1], per[k], bench_median(ratio[k], passes));
    }
    free(dst);
    return 0;
}
