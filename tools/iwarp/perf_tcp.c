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
#include <sys/epoll.h>
#include <unistd.h>

#include "perf.h"

void perf_tcp_cc(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
    if (!f)
        return;
    char name[32];
    if (fscanf(f, "%31s", name) == 1)
        snprintf(buf, len, "%s", name);
    fclose(f);
}

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
 * Listen for the baseline's connections on the address `local` (its port is ignored: an
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
    if (bind(s, (struct sockaddr *)&a, len) < 0 || listen(s, SOMAXCONN) < 0 ||
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

/* Accept one connection on lfd (30 s at most). Returns 0 with *fd, or IWARP_ERR_*. */
static int accept_one(int lfd, int *fd)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    if (poll(&p, 1, PERF_TIMEOUT_MS) <= 0)
        return IWARP_ERR_TIMEDOUT;
    *fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    return *fd < 0 ? IWARP_ERR_IO : 0;
}

/* Echo messages of `size` octets until the client closes (latency). */
static int echo(int fd, uint32_t size, bool busy, uint8_t *buf, uint64_t *bytes)
{
    for (;;) {
        int rc = xfer(fd, buf, size, false, busy);
        if (rc)
            return rc < 0 ? rc : 0;
        *bytes += size;
        if ((rc = xfer(fd, buf, size, true, busy)) < 0)
            return rc;
    }
}

/*
 * Drive n sockets through epoll (level-triggered, for `events`) until each is finished:
 * on_ready(ctx, q) is called for socket fds[q] when it is ready and returns 1 once that socket
 * is done with, 0 to go on, or an IWARP_ERR_*. A busy caller spins (timeout 0); otherwise 30 s
 * without any socket ready is IWARP_ERR_TIMEDOUT. Returns 0 or the first error.
 */
static int each_ready(const int *fds, uint32_t n, uint32_t events, bool busy,
                      int (*on_ready)(void *ctx, uint32_t q), void *ctx)
{
    int ep = epoll_create1(EPOLL_CLOEXEC), rc = ep < 0 ? IWARP_ERR_IO : 0;
    for (uint32_t q = 0; q < n && rc == 0; q++) {
        struct epoll_event ev = {.events = events, .data.u32 = q};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[q], &ev) < 0)
            rc = IWARP_ERR_IO;
    }
    for (uint32_t left = n; left && rc == 0;) {
        struct epoll_event ev[64];
        int k = epoll_wait(ep, ev, 64, busy ? 0 : PERF_TIMEOUT_MS);
        if (k < 0 && errno != EINTR)
            rc = IWARP_ERR_IO;
        else if (k == 0 && !busy)
            rc = IWARP_ERR_TIMEDOUT;
        for (int i = 0; i < k && rc == 0; i++) {
            uint32_t q = ev[i].data.u32;
            if ((rc = on_ready(ctx, q)) == 1) {
                rc = epoll_ctl(ep, EPOLL_CTL_DEL, fds[q], NULL) < 0 ? IWARP_ERR_IO : 0;
                left--;
            }
        }
    }
    if (ep >= 0)
        close(ep);
    return rc;
}

/*
 * Read what is there into buf (at most size octets; blocking unless dontwait). Returns 1 on
 * EOF, 0 otherwise (nothing there included), or IWARP_ERR_IO.
 */
static int sink_some(int fd, uint8_t *buf, uint32_t size, bool dontwait, uint64_t *bytes)
{
    ssize_t n = recv(fd, buf, size, dontwait ? MSG_DONTWAIT : 0);
    if (n > 0)
        *bytes += (uint64_t)n;
    else if (n == 0)
        return 1;
    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return IWARP_ERR_IO;
    return 0;
}

/* Many streams being sunk: each into its QP's region of buf. */
struct sink_run {
    const int *fds;
    uint32_t size;
    uint8_t *buf;
    const struct perf_layout *lay;
    uint64_t *bytes;
};

/* Stream q of many is readable: read what is there; 1 on EOF. */
static int sink_ready(void *ctx, uint32_t q)
{
    struct sink_run *r = ctx;
    return sink_some(r->fds[q], r->buf + perf_slot_off(r->lay, q, 0, r->size), r->size, true,
                     r->bytes);
}

/*
 * Sink n streams, stream q into its QP's region of buf (lay), until every one is closed.
 * One stream is read by itself (spinning with MSG_DONTWAIT or blocking in recv); more are
 * read as epoll reports them, as an application serving many connections would.
 */
static int sink(const int *fds, uint32_t n, uint32_t size, bool busy, uint8_t *buf,
                const struct perf_layout *lay, uint64_t *bytes)
{
    if (n == 1) {
        int rc;
        while ((rc = sink_some(fds[0], buf, size, busy, bytes)) == 0)
            ;
        return rc < 0 ? rc : 0;
    }
    struct sink_run r = {.fds = fds, .size = size, .buf = buf, .lay = lay, .bytes = bytes};
    return each_ready(fds, n, EPOLLIN, busy, sink_ready, &r);
}

/*
 * Server side: accept the baseline's connections on lfd (30 s at most each), then either
 * echo messages of `size` octets (latency: one connection) or sink lay->nqps streams
 * (bandwidth) until the client closes; then close. buf holds lay's regions, each at least
 * size octets. *bytes: octets received. Returns 0 or IWARP_ERR_*.
 */
int perf_tcp_serve(int lfd, bool lat, uint32_t size, bool busy, uint8_t *buf,
                   const struct perf_layout *lay, uint64_t *bytes)
{
    uint32_t n = lat ? 1 : lay->nqps, open = 0;
    int fds[PERF_MAX_QPS];
    int rc = 0;
    while (open < n && (rc = accept_one(lfd, &fds[open])) == 0)
        open++;
    *bytes = 0;
    if (rc == 0 && lat) {
        nodelay(fds[0]);
        rc = echo(fds[0], size, busy, buf, bytes);
    } else if (rc == 0) {
        rc = sink(fds, n, size, busy, buf, lay, bytes);
    }
    for (uint32_t q = 0; q < open; q++)
        close(fds[q]);
    return rc;
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

/* Wait for the server to close fd: everything sent has been received. */
static int await_close(int fd)
{
    uint8_t b[64];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n == 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return IWARP_ERR_IO;
    }
}

/* Half-close and wait for the server to close. */
static int finish(int fd)
{
    shutdown(fd, SHUT_WR);
    return await_close(fd);
}

static bool more(uint64_t done, uint64_t iters, uint64_t now, uint64_t end)
{
    return iters ? done < iters : now < end;
}

static double fraction(uint64_t done, uint64_t iters, uint64_t now, uint64_t t0, uint64_t end)
{
    return iters ? (double)done / (double)iters : (double)(now - t0) / (double)(end - t0);
}

/* One stream of the bandwidth baseline: where its current message is, how many it wrote. */
struct tcp_stream {
    const uint8_t *buf;
    uint32_t off;
    uint64_t msgs;
    bool done; /* half-closed */
};

/* The client's side of a bandwidth pass: iters messages per stream, or until end. */
struct tcp_bw_run {
    const int *fds;
    struct tcp_stream *st;
    uint32_t n, size, open;
    uint64_t iters, t0, end, msgs;
    int flags;
    struct perf_meter m;
    struct perf_progress *pr;
};

/*
 * Write stream q's messages until its socket is full (or, blocking, until it is done);
 * half-close it once it has written all it will. Returns 0 or IWARP_ERR_IO.
 */
static int pump(struct tcp_bw_run *r, uint32_t q)
{
    struct tcp_stream *s = &r->st[q];
    uint64_t now = perf_now_ns();
    while (!s->done) {
        if (s->off == 0 && !more(s->msgs, r->iters, now, r->end)) {
            shutdown(r->fds[q], SHUT_WR);
            s->done = true;
            r->open--;
            break;
        }
        ssize_t k = send(r->fds[q], s->buf + s->off, r->size - s->off, r->flags);
        if (k < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : IWARP_ERR_IO;
        s->off += (uint32_t)k;
        if (s->off < r->size)
            continue;
        s->off = 0;
        s->msgs++;
        r->msgs++;
        now = perf_now_ns();
        perf_meter_add(&r->m, r->size, now);
        perf_progress_tick(r->pr, fraction(r->msgs, r->iters * r->n, now, r->t0, r->end), now);
    }
    return 0;
}

/* Write stream q as epoll reports room; 1 once it is half-closed. */
static int pump_ready(void *ctx, uint32_t q)
{
    struct tcp_bw_run *r = ctx;
    int rc = pump(r, q);
    return rc < 0 ? rc : r->st[q].done;
}

/*
 * Client side, bandwidth: over each of the n connections in fds, write `iters` messages of
 * `size` octets from that QP's region of buf (lay), or write for `duration` seconds; then
 * half-close and wait for the server's close. One stream writes by itself (spinning with
 * MSG_DONTWAIT or blocking in send), more as epoll reports room. Fills *out (octets/s at the
 * receiver's pace; peak over 10 ms windows of sender progress). Closes the
 * fds. Returns 0 or IWARP_ERR_*.
 */
int perf_tcp_bw(const int *fds, uint32_t n, uint32_t size, uint64_t iters, double duration,
                bool busy, const uint8_t *buf, const struct perf_layout *lay, struct perf_bw *out,
                struct perf_progress *pr)
{
    struct tcp_stream st[PERF_MAX_QPS];
    struct tcp_bw_run r = {.fds = fds,
                           .st = st,
                           .n = n,
                           .size = size,
                           .open = n,
                           .iters = iters,
                           .flags = MSG_NOSIGNAL | (busy || n > 1 ? MSG_DONTWAIT : 0),
                           .pr = pr};
    for (uint32_t q = 0; q < n; q++)
        st[q] = (struct tcp_stream){.buf = buf + perf_slot_off(lay, q, 0, size)};
    r.t0 = perf_now_ns();
    r.end = r.t0 + (uint64_t)(duration * 1e9);
    perf_meter_start(&r.m, r.t0);
    int rc = 0;
    if (n > 1)
        rc = each_ready(fds, n, EPOLLOUT, busy, pump_ready, &r);
    else
        while (r.open && (rc = pump(&r, 0)) == 0)
            ;
    for (uint32_t q = 0; q < n; q++) {
        if (rc == 0)
            rc = await_close(fds[q]);
        close(fds[q]);
    }
    if (rc)
        return rc;
    double dt = (double)(perf_now_ns() - r.t0) / 1e9;
    out->avg = (double)r.msgs * size / dt;
    out->peak = r.m.peak > out->avg ? r.m.peak : out->avg;
    out->mpps = (double)r.msgs / dt / 1e6;
    out->iters = r.msgs / n;
    out->octets = r.msgs * size;
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
