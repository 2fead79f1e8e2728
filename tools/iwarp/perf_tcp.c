/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: the plain-TCP baseline of --compare-tcp, both sides. Bandwidth is one stream of
 * writes of the message size with Nagle's algorithm on (the best plain TCP does for a stream:
 * small writes coalesce), timed at the sender from the first write until the receiver has read
 * everything and closed (as the libiwarp figure runs until the server's RESULT); latency is a
 * TCP_NODELAY ping-pong of the message size, RTT/2. --busy-poll spins with MSG_DONTWAIT,
 * otherwise the calls block.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

static void nodelay(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static socklen_t addr_len(const struct sockaddr_storage *a)
{
    return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
    if (a->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)a)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)a)->sin_port = htons(port);
}

/*
 * Listen for the baseline's connection on the address `local` (its port is ignored: an
 * ephemeral one is bound). Returns 0 with the socket in *fd and the port in *port, or
 * IWARP_ERR_IO.
 */
int perf_tcp_listen(const struct sockaddr_storage *local, int *fd, uint16_t *port)
{
    struct sockaddr_storage a = *local;
    set_port(&a, 0);
    int s = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return IWARP_ERR_IO;
    socklen_t len = addr_len(&a);
    if (bind(s, (struct sockaddr *)&a, len) < 0 || listen(s, 1) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) < 0) {
        close(s);
        return IWARP_ERR_IO;
    }
    *fd = s;
    *port = ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
                                          : ((struct sockaddr_in *)&a)->sin_port);
    return 0;
}

/* Move exactly len octets (send or receive); 0, 1 on EOF before any octet, or IWARP_ERR_IO. */
static int xfer(int fd, uint8_t *p, size_t len, bool is_send, bool busy)
{
    int flags = (busy ? MSG_DONTWAIT : 0) | (is_send ? MSG_NOSIGNAL : 0);
    size_t off = 0;
    while (off < len) {
        ssize_t n =
            is_send ? send(fd, p + off, len - off, flags) : recv(fd, p + off, len - off, flags);
        if (n > 0) {
            off += (size_t)n;
        } else if (n == 0) {
            return off == 0 ? 1 : IWARP_ERR_IO;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return IWARP_ERR_IO;
        }
    }
    return 0;
}

/*
 * Server side: accept one connection on lfd (30 s at most), then either sink everything
 * (bandwidth) or echo messages of `size` octets (latency) until the client closes; then close.
 * buf holds at least size octets. *bytes: octets received. Returns 0 or IWARP_ERR_*.
 */
int perf_tcp_serve(int lfd, bool lat, uint32_t size, bool busy, uint8_t *buf, uint64_t *bytes)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    if (poll(&p, 1, PERF_TIMEOUT_MS) <= 0)
        return IWARP_ERR_TIMEDOUT;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return IWARP_ERR_IO;
    if (lat)
        nodelay(fd);
    *bytes = 0;
    int rc = 0;
    for (;;) {
        if (lat) {
            rc = xfer(fd, buf, size, false, busy);
            if (rc)
                break;
            *bytes += size;
            if ((rc = xfer(fd, buf, size, true, busy)) < 0)
                break;
            continue;
        }
        ssize_t n = recv(fd, buf, size, busy ? MSG_DONTWAIT : 0);
        if (n > 0)
            *bytes += (uint64_t)n;
        else if (n == 0)
            break;
        else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            rc = IWARP_ERR_IO;
            break;
        }
    }
    close(fd);
    return rc < 0 ? rc : 0;
}

/* Client side: connect to the peer's address at `port` (TCP_NODELAY for latency). Returns 0
 * with *fd, or IWARP_ERR_IO. */
int perf_tcp_connect(const struct sockaddr_storage *peer, uint16_t port, bool lat, int *fd)
{
    struct sockaddr_storage a = *peer;
    set_port(&a, port);
    int s = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return IWARP_ERR_IO;
    if (connect(s, (struct sockaddr *)&a, addr_len(&a)) < 0) {
        close(s);
        return IWARP_ERR_IO;
    }
    if (lat)
        nodelay(s);
    *fd = s;
    return 0;
}

/* Half-close and wait for the server to close: everything sent has been received. */
static int finish(int fd)
{
    shutdown(fd, SHUT_WR);
    uint8_t b[64];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n == 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return IWARP_ERR_IO;
    }
}

static bool more(uint64_t done, uint64_t iters, uint64_t now, uint64_t end)
{
    return iters ? done < iters : now < end;
}

static double fraction(uint64_t done, uint64_t iters, uint64_t now, uint64_t t0, uint64_t end)
{
    return iters ? (double)done / (double)iters : (double)(now - t0) / (double)(end - t0);
}

/*
 * Client side, bandwidth: write `iters` messages of `size` octets from buf (or for `duration`
 * seconds), then half-close and wait for the server's close. Fills *out (octets/s at the
 * receiver's pace; peak over 10 ms windows of sender progress). Closes fd. Returns 0 or
 * IWARP_ERR_IO.
 */
int perf_tcp_bw(int fd, uint32_t size, uint64_t iters, double duration, bool busy,
                const uint8_t *buf, struct perf_bw *out, struct perf_progress *pr)
{
    struct perf_meter m;
    uint64_t t0 = perf_now_ns(), now = t0, n = 0;
    uint64_t end = t0 + (uint64_t)(duration * 1e9);
    perf_meter_start(&m, t0);
    int rc = 0;
    while (more(n, iters, now, end)) {
        if ((rc = xfer(fd, (uint8_t *)(uintptr_t)buf, size, true, busy)) != 0)
            break;
        n++;
        now = perf_now_ns();
        perf_meter_add(&m, size, now);
        perf_progress_tick(pr, fraction(n, iters, now, t0, end), now);
    }
    if (rc == 0)
        rc = finish(fd);
    close(fd);
    if (rc)
        return IWARP_ERR_IO;
    double dt = (double)(perf_now_ns() - t0) / 1e9;
    out->avg = (double)n * size / dt;
    out->peak = m.peak > out->avg ? m.peak : out->avg;
    out->mpps = (double)n / dt / 1e6;
    out->iters = n;
    return 0;
}

/*
 * Client side, latency: perf_warmup(iters) unmeasured round trips, then `iters` (or `duration`
 * seconds, at most max_samples) ping-pongs of `size` octets; each sample is RTT/2. Closes fd.
 * Returns 0 or IWARP_ERR_IO.
 */
int perf_tcp_lat(int fd, uint32_t size, uint64_t iters, double duration, bool busy, uint8_t *buf,
                 double *samples, size_t max_samples, struct perf_lat *out,
                 struct perf_progress *pr)
{
    uint64_t warm = perf_warmup(iters), n = 0, k = 0;
    uint64_t t0 = perf_now_ns(), now = t0, end = 0;
    int rc = 0;
    for (;;) {
        if (k == warm) {
            t0 = now = perf_now_ns();
            end = t0 + (uint64_t)(duration * 1e9);
        }
        if (k >= warm && (!more(n, iters, now, end) || n == max_samples))
            break;
        uint64_t a = perf_now_ns();
        if ((rc = xfer(fd, buf, size, true, busy)) != 0 ||
            (rc = xfer(fd, buf, size, false, busy)) != 0)
            break;
        now = perf_now_ns();
        if (k++ >= warm) {
            samples[n++] = (double)(now - a) / 2;
            perf_progress_tick(pr, fraction(n, iters, now, t0, end), now);
        }
    }
    if (rc == 0)
        rc = finish(fd);
    close(fd);
    if (rc || n == 0)
        return IWARP_ERR_IO;
    perf_lat_summarize(out, samples, n);
    return 0;
}
