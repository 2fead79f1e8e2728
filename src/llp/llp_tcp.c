/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The TCP back-end: octets between a non-blocking kernel socket and an MPA connection.
 */
#define _GNU_SOURCE 1 /* accept4, SOCK_NONBLOCK, MSG_NOSIGNAL */
#include "llp/llp_tcp.h"
#include "llp/llp_tcp_info.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iwarp/errors.h"
#include "util/copy.h"
#include "util/critpath.h"

#ifdef IWARP_CRITPATH /* scripts/critpath.sh: the instrument's state (llp_sctp uses it too) */
#include <stdio.h>
#include <stdlib.h>

int iwarp_critpath_on;
static unsigned long critpath_paths;

static void critpath_report(void)
{
    fprintf(stderr, "critpath: %lu paths\n", critpath_paths);
}

void iwarp_critpath_count(void)
{
    if (critpath_paths++ == 0)
        atexit(critpath_report);
}
#endif

/* follow_emss: a write this large counts, and every this many of them read the EMSS again. */
#define TCP_EMSS_LARGE 16384u
#define TCP_EMSS_EVERY 16u
/* The smallest rest of an FPDU worth waiting for in one piece (wait_for_fpdu). */
#define TCP_LOWAT_MIN  2048u
/* iovecs handed to one sendmsg (several FPDUs per call). */
#define TCP_TX_IOV     128u
/* A write of at most this many octets is gathered into one buffer first (tcp_write). */
#define TCP_TX_GATHER  4096u
/* reads or writes per readiness callback, so one busy stream cannot starve the others */
#define TCP_BUDGET     64

/* The smallest EMSS TCP guarantees (RFC 9293 §3.7.1: 536 for IPv4; IPv6 gets 1220). */
#define TCP_MIN_EMSS 536u

static int map_errno(int e)
{
    switch (e) {
    case ECONNREFUSED:
        return IWARP_ERR_CONN_REFUSED;
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
        return IWARP_ERR_UNREACHABLE;
    case ECONNRESET:
    case ECONNABORTED:
    case EPIPE:
        return IWARP_ERR_CONN_RESET;
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case EAFNOSUPPORT:
    case EACCES:
        return IWARP_ERR_ADDR;
    default:
        return IWARP_ERR_IO;
    }
}

socklen_t iwarp_llp_tcp_addrlen(const struct sockaddr *sa)
{
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET)
        return (socklen_t)sizeof(struct sockaddr_in);
    if (sa->sa_family == AF_INET6)
        return (socklen_t)sizeof(struct sockaddr_in6);
    return 0;
}

/* The socket's TCP_MAXSEG, or 0 when it cannot be read or is below what TCP guarantees. */
static uint32_t socket_emss(const struct iwarp_llp_tcp *t)
{
    int mss = 0;
    socklen_t len = sizeof mss;
    if (getsockopt(t->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) != 0 || mss < (int)TCP_MIN_EMSS)
        return 0;
    return (uint32_t)mss;
}

/* TCP_NODELAY (an FPDU is a message: never wait to coalesce), then the EMSS and addresses;
 * the trace (if any) records the handshake. active: we connected. */
static int setup_connected(struct iwarp_llp_tcp *t, bool active)
{
    int one = 1;
    if (setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        return IWARP_ERR_IO;
    /* a peer that stops reading (its window shut) or answering is dropped after this long */
    unsigned int ut = t->user_timeout_ms;
    if (ut && setsockopt(t->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut) != 0)
        return IWARP_ERR_IO;
    t->emss = socket_emss(t);
    if (t->emss == 0)
        t->emss = TCP_MIN_EMSS;
    socklen_t len = sizeof t->local;
    getsockname(t->fd, (struct sockaddr *)&t->local, &len);
    len = sizeof t->peer;
    getpeername(t->fd, (struct sockaddr *)&t->peer, &len);
    t->phase = IWARP_LLP_TCP_OPEN;
    if (t->trace)
        (void)iwarp_trace_conn_open(t->trace, active, (const struct sockaddr *)&t->local,
                                    (const struct sockaddr *)&t->peer, t->emss);
    return 0;
}

/* The stream failed with IWARP_ERR_* err: tell the connection once, stop using the socket. */
static void fail(struct iwarp_llp_tcp *t, int err)
{
    if (!t->err)
        t->err = err;
    if (t->trace && err == IWARP_ERR_CONN_RESET && t->phase == IWARP_LLP_TCP_OPEN)
        iwarp_trace_conn_rst(t->trace, false); /* the peer's RST */
    t->phase = IWARP_LLP_TCP_DONE;
    if (t->conn_ready && !t->llp_closed) {
        t->llp_closed = true;
        iwarp_llp_conn_closed(&t->conn, false);
    }
}

int iwarp_llp_tcp_connect(struct iwarp_llp_tcp *t, const struct sockaddr *dst,
                          const struct sockaddr *src)
{
    socklen_t dlen = iwarp_llp_tcp_addrlen(dst);
    if (dlen == 0 || (src && src->sa_family != dst->sa_family))
        return IWARP_ERR_INVAL;
    t->fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (t->fd < 0)
        return map_errno(errno);
    int one = 1;
    setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (src && bind(t->fd, src, iwarp_llp_tcp_addrlen(src)) != 0) {
        int e = errno;
        close(t->fd);
        t->fd = -1;
        return e == EINVAL ? IWARP_ERR_ADDR : map_errno(e);
    }
    memcpy(&t->peer, dst, dlen);
    if (connect(t->fd, dst, dlen) == 0)
        return setup_connected(t, true);
    if (errno == EINPROGRESS) {
        t->phase = IWARP_LLP_TCP_CONNECTING;
        return 0;
    }
    int e = errno;
    close(t->fd);
    t->fd = -1;
    return map_errno(e);
}

int iwarp_llp_tcp_adopt(struct iwarp_llp_tcp *t, int fd)
{
    t->fd = fd;
    int rc = setup_connected(t, false);
    if (rc != 0) {
        close(fd);
        t->fd = -1;
        t->phase = IWARP_LLP_TCP_IDLE;
    }
    return rc;
}

bool iwarp_llp_tcp_connected(const struct iwarp_llp_tcp *t)
{
    return t->fd >= 0 && t->phase == IWARP_LLP_TCP_OPEN;
}

int iwarp_llp_tcp_start(struct iwarp_llp_tcp *t, const struct iwarp_llp_conn_cfg *cfg,
                        uint8_t *bounce, struct iwarp_llp_conn_txf *txf, uint64_t now_ns)
{
    if (!iwarp_llp_tcp_connected(t) || t->conn_ready)
        return IWARP_ERR_STATE;
    struct iwarp_llp_conn_cfg c = *cfg;
    /* RFC 5044 §4.5 (and every RNIC): an FPDU fits the connection's EMSS. */
    c.emss = t->emss;
    int rc = iwarp_llp_conn_init(&t->conn, &c, bounce, txf, now_ns);
    if (rc == 0)
        t->conn_ready = true;
    return rc;
}

/* A pending non-blocking connect() has finished one way or the other. */
static void finish_connect(struct iwarp_llp_tcp *t)
{
    int e = 0;
    socklen_t len = sizeof e;
    if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
        e = errno;
    if (e == 0) {
        if (setup_connected(t, true) != 0)
            fail(t, IWARP_ERR_IO);
        return;
    }
    if (e == EINPROGRESS || e == EALREADY)
        return;
    fail(t, map_errno(e));
}

/* Whether the connection wants the transport closed once its octets are written. */
static bool conn_wants_close(const struct iwarp_llp_tcp *t)
{
    enum iwarp_llp_conn_state s = t->conn.state;
    return s == IWARP_LLP_CONN_CLOSE || s == IWARP_LLP_CONN_REJECTED || s == IWARP_LLP_CONN_FAILED;
}

static void send_fin(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    if (t->fin_sent || t->phase != IWARP_LLP_TCP_OPEN)
        return;
    if (shutdown(t->fd, SHUT_WR) != 0 && errno != ENOTCONN) {
        fail(t, map_errno(errno));
        return;
    }
    t->fin_sent = true;
    if (t->trace)
        iwarp_trace_conn_fin(t->trace, true);
    if (t->rx_eof)
        t->phase = IWARP_LLP_TCP_DONE;
    else
        iwarp_llp_tcp_linger(t, now_ns); /* the peer's FIN is awaited so long */
}

/* Around a system call of the data path: the owner may let go of its lock (llp_tcp.h). errno
 * is the call's afterwards. */
static void io_begin(struct iwarp_llp_tcp *t)
{
    if (t->io_begin)
        t->io_begin(t->io_user);
}

static void io_end(struct iwarp_llp_tcp *t)
{
    int e = errno;
    if (t->io_end)
        t->io_end(t->io_user);
    errno = e;
}

/* The EMSS grows once TCP knows the path (loopback: 32741 at connect, 65483 after some data):
 * after every TCP_EMSS_EVERY large writes, read it again, so that FPDUs follow it (fewer FPDUs,
 * each read, checked and placed once). Small writes never pay the system call. */
static void follow_emss(struct iwarp_llp_tcp *t, size_t written)
{
    if (written < TCP_EMSS_LARGE || ++t->large_writes % TCP_EMSS_EVERY != 0)
        return;
    io_begin(t);
    uint32_t mss = socket_emss(t);
    io_end(t);
    if (mss == 0 || mss == t->emss)
        return;
    t->emss = mss;
    iwarp_llp_conn_set_emss(&t->conn, t->emss);
    if (t->trace)
        iwarp_trace_conn_set_emss(t->trace, t->emss);
}

/* One write of the iovecs (total octets in all). The kernel pays for a msghdr and for each
 * iovec it imports and copies from; a small FPDU is four (length, headers, payload, CRC), which
 * cost more than copying its octets once: a small write is gathered into one buffer and sent
 * with send. Busy-poll 64 B Send ping-pong, with the single-buffer read below: about 0.5 us
 * less per one-way. */
static ssize_t tcp_write(int fd, const struct iovec *iov, uint32_t n, size_t total)
{
    const int flags = MSG_NOSIGNAL | MSG_DONTWAIT;
    iwarp_critpath_end();
    if (n == 1)
        return send(fd, iov[0].iov_base, iov[0].iov_len, flags);
    if (total <= TCP_TX_GATHER) {
        uint8_t one[TCP_TX_GATHER];
        size_t at = 0;
        for (uint32_t i = 0; i < n; i++) {
            iwarp_copy(one + at, iov[i].iov_base, iov[i].iov_len);
            at += iov[i].iov_len;
        }
        return send(fd, one, at, flags);
    }
    struct msghdr m = {.msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = n};
    return sendmsg(fd, &m, flags);
}

/* One read into the iovecs; into one buffer with recv, which spares the kernel the msghdr and
 * iovec import that every busy poll of an empty socket would pay. */
static ssize_t tcp_read(int fd, struct iovec *iov, uint32_t n)
{
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = n};
    ssize_t r = n == 1 ? recv(fd, iov[0].iov_base, iov[0].iov_len, MSG_DONTWAIT)
                       : recvmsg(fd, &m, MSG_DONTWAIT);
    if (r > 0)
        iwarp_critpath_begin();
    return r;
}

/* Write what the connection has ready until it is empty or the socket is full. */
static void flush(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    struct iovec iov[TCP_TX_IOV];
    t->tx_blocked = false;
    t->tx_batched = 0; /* what waited goes now, or when the socket has room again */
    int budget = TCP_BUDGET;
    for (; budget > 0 && t->phase == IWARP_LLP_TCP_OPEN && !t->fin_sent; budget--) {
        uint32_t n = iwarp_llp_conn_tx_iov(&t->conn, iov, TCP_TX_IOV, now_ns);
        if (n == 0)
            break;
        size_t total = 0;
        for (uint32_t i = 0; i < n; i++)
            total += iov[i].iov_len;
        io_begin(t);
        ssize_t w = tcp_write(t->fd, iov, n, total);
        io_end(t);
        if (w > 0) {
            t->last_tx_ns = now_ns;
            t->rx_since_tx = false;
            if (t->trace)
                iwarp_trace_conn_tx(t->trace, iov, n, (size_t)w);
            iwarp_llp_conn_tx_ack(&t->conn, (size_t)w);
            follow_emss(t, (size_t)w);
            if ((size_t)w < total) {
                t->tx_blocked = true; /* the send buffer is full */
                break;
            }
            /* All of it went: framing again only pays when more may be ready (a full ring,
             * posts made while the lock was let go); tx_ready is far cheaper than a tx_iov
             * that finds nothing. */
            if (!iwarp_llp_conn_tx_ready(&t->conn, now_ns))
                break;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            t->tx_blocked = true;
            break;
        }
        fail(t, w < 0 ? map_errno(errno) : IWARP_ERR_IO);
        return;
    }
    if (t->phase != IWARP_LLP_TCP_OPEN || t->tx_blocked)
        return;
    /* The budget ran out with octets still to send (a long marker-bearing message is many
     * small iovecs): ask for writability, which a socket with room reports at once, so the
     * loop comes back here after serving the other connections instead of forgetting it. */
    if (budget == 0 && iwarp_llp_conn_tx_ready(&t->conn, now_ns)) {
        t->tx_blocked = true;
        return;
    }
    if ((t->fin_wanted || conn_wants_close(t)) && !iwarp_llp_conn_tx_ready(&t->conn, now_ns))
        send_fin(t, now_ns);
}

/* rx_buf gave nothing (no reading allowed now) yet the socket signalled: look for end of
 * stream or an error. Data is left in place while the connection may still take it (a
 * pending accept decision); once it is closing, what the peer still sends is discarded. */
static void peek_for_end(struct iwarp_llp_tcp *t)
{
    uint8_t b[2048];
    bool discard = t->fin_sent || t->llp_closed;
    ssize_t n;
    for (;;) {
        io_begin(t);
        n = recv(t->fd, b, discard ? sizeof b : 1,
                 discard ? MSG_DONTWAIT : MSG_PEEK | MSG_DONTWAIT);
        io_end(t);
        if (!discard || n <= 0)
            break;
        if (t->trace)
            iwarp_trace_conn_rx(t->trace, b, (size_t)n);
    }
    if (n == 0) {
        t->rx_eof = true;
        if (t->trace)
            iwarp_trace_conn_fin(t->trace, false);
        if (t->conn_ready && !t->llp_closed) {
            t->llp_closed = true;
            iwarp_llp_conn_eof(&t->conn); /* graceful only at a message boundary */
        }
        if (t->fin_sent)
            t->phase = IWARP_LLP_TCP_DONE;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        fail(t, map_errno(errno));
    }
}

/* Readiness for the rest of a large FPDU only once it has all arrived (SO_RCVLOWAT): one read
 * instead of one per piece as it trickles in, and one acknowledgement from us instead of one
 * per read, which on loopback also spares this core the sender's transmit work that each
 * acknowledgement triggers. The end of the stream and errors are reported whatever the mark. */
static void wait_for_fpdu(struct iwarp_llp_tcp *t)
{
    uint32_t need = iwarp_llp_conn_rx_need(&t->conn);
    uint32_t mark = need >= TCP_LOWAT_MIN ? need : 1;
    if (mark == t->rcvlowat)
        return;
    int v = (int)mark;
    io_begin(t);
    int rc = setsockopt(t->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v);
    io_end(t);
    if (rc == 0)
        t->rcvlowat = mark;
}

void iwarp_llp_tcp_on_readable(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    if (t->phase == IWARP_LLP_TCP_CONNECTING) {
        finish_connect(t);
        return;
    }
    if (t->phase != IWARP_LLP_TCP_OPEN || !t->conn_ready || t->rx_eof)
        return;
    for (int budget = TCP_BUDGET; budget > 0; budget--) {
        struct iovec iov[2];
        uint32_t niov = iwarp_llp_conn_rx_bufs(&t->conn, iov);
        if (niov == 0) {
            if (budget == TCP_BUDGET)
                peek_for_end(t);
            break;
        }
        size_t len = iov[0].iov_len + (niov > 1 ? iov[1].iov_len : 0);
        io_begin(t);
        ssize_t n = tcp_read(t->fd, iov, niov);
        io_end(t);
        if (n > 0) {
            t->rx_since_tx = true;
            if (t->trace) /* before rx_ack, which may reuse the buffer */
                for (uint32_t i = 0, left = (uint32_t)n; i < niov && left > 0; i++) {
                    uint32_t k = left < iov[i].iov_len ? left : (uint32_t)iov[i].iov_len;
                    iwarp_trace_conn_rx(t->trace, iov[i].iov_base, k);
                    left -= k;
                }
            iwarp_llp_conn_rx_ack(&t->conn, (size_t)n, now_ns);
            if ((size_t)n < len)
                break; /* the kernel had no more: save a recv that would say EAGAIN */
            continue;
        }
        if (n == 0) {
            /* The peer's FIN: an orderly end of its stream. */
            t->rx_eof = true;
            if (t->trace)
                iwarp_trace_conn_fin(t->trace, false);
            if (!t->llp_closed) {
                t->llp_closed = true;
                iwarp_llp_conn_eof(&t->conn); /* graceful only at a message boundary */
            }
            if (t->fin_sent)
                t->phase = IWARP_LLP_TCP_DONE;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        fail(t, map_errno(errno));
        return;
    }
    wait_for_fpdu(t);
    /* Receiving may have produced output (MPA Reply, Read Responses, a Terminate). Most reads
     * produce none, and flush would only find that out through an empty tx_iov; it still runs
     * whenever it would do anything (a batch, a blocked socket, our FIN). */
    if (iwarp_llp_conn_tx_check(&t->conn, now_ns) || t->tx_batched || t->tx_blocked ||
        t->fin_wanted || conn_wants_close(t))
        flush(t, now_ns);
}

void iwarp_llp_tcp_on_writable(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    if (t->phase == IWARP_LLP_TCP_CONNECTING) {
        finish_connect(t);
        return;
    }
    if (t->phase != IWARP_LLP_TCP_OPEN || !t->conn_ready)
        return;
    flush(t, now_ns);
}

uint32_t iwarp_llp_tcp_interest(struct iwarp_llp_tcp *t)
{
    if (t->phase == IWARP_LLP_TCP_CONNECTING)
        return IWARP_LLP_TCP_WANT_WRITE;
    if (t->phase != IWARP_LLP_TCP_OPEN || !t->conn_ready)
        return 0;
    uint32_t want = 0;
    if (!t->rx_eof && iwarp_llp_conn_rx_wanted(&t->conn))
        want |= IWARP_LLP_TCP_WANT_READ;
    else if (!t->rx_eof && t->fin_sent)
        want |= IWARP_LLP_TCP_WANT_READ; /* wait for the peer's FIN */
    if (t->tx_blocked)
        want |= IWARP_LLP_TCP_WANT_WRITE;
    return want;
}

void iwarp_llp_tcp_shutdown(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    t->fin_wanted = true;
    if (t->phase != IWARP_LLP_TCP_OPEN)
        return;
    if (t->conn_ready)
        flush(t, now_ns);
    else
        send_fin(t, now_ns);
}

void iwarp_llp_tcp_linger(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    if (t->linger_deadline == 0)
        t->linger_deadline = now_ns + (t->linger_ns ? t->linger_ns : IWARP_LLP_TCP_LINGER_NS);
}

bool iwarp_llp_tcp_post(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    if (t->tx_batched == 0 && (now_ns - t->last_tx_ns >= t->batch_ns || t->rx_since_tx))
        return true; /* an idle connection (or batching off): a lone post pays no delay */
    if (++t->tx_batched >= IWARP_LLP_TCP_BATCH_MAX)
        return true;
    if (t->tx_batched == 1)
        t->tx_batch_ns = now_ns + t->batch_ns;
    return false;
}

uint64_t iwarp_llp_tcp_next_timeout(const struct iwarp_llp_tcp *t)
{
    uint64_t next = t->linger_deadline ? t->linger_deadline : UINT64_MAX;
    if (t->tx_batched && t->tx_batch_ns < next)
        next = t->tx_batch_ns;
    if (t->conn_ready) {
        uint64_t c = iwarp_llp_conn_next_timeout(&t->conn);
        if (c < next)
            next = c;
    }
    return next;
}

void iwarp_llp_tcp_handle_timeout(struct iwarp_llp_tcp *t, uint64_t now_ns)
{
    if (t->linger_deadline && t->linger_deadline <= now_ns) {
        iwarp_llp_tcp_close(t, true); /* the peer did not end the stream in time */
        return;
    }
    if (t->conn_ready) {
        iwarp_llp_conn_handle_timeout(&t->conn, now_ns);
        iwarp_llp_tcp_on_writable(t, now_ns);
    }
}

void iwarp_llp_tcp_retrans(struct iwarp_llp_tcp *t, uint64_t *bytes, uint64_t *segs)
{
    if (t->fd >= 0)
        (void)iwarp_llp_tcp_info_retrans(t->fd, &t->retrans_bytes, &t->retrans_segs);
    *bytes = t->retrans_bytes;
    *segs = t->retrans_segs;
}

void iwarp_llp_tcp_close(struct iwarp_llp_tcp *t, bool abortive)
{
    if (t->fd >= 0) {
        if (abortive) {
            struct linger lg = {.l_onoff = 1, .l_linger = 0};
            setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        /* the statistics' last reading (iwarp_llp_tcp_retrans) */
        (void)iwarp_llp_tcp_info_retrans(t->fd, &t->retrans_bytes, &t->retrans_segs);
        if (t->trace && t->phase == IWARP_LLP_TCP_OPEN) {
            if (abortive)
                iwarp_trace_conn_rst(t->trace, true);
            else
                iwarp_trace_conn_fin(t->trace, true); /* close() sends our FIN if not yet */
        }
        close(t->fd);
        t->fd = -1;
    }
    if (t->trace)
        iwarp_trace_conn_close(t->trace);
    if (t->conn_ready && !t->llp_closed) {
        t->llp_closed = true;
        iwarp_llp_conn_closed(&t->conn, !abortive);
    }
    t->phase = IWARP_LLP_TCP_DONE;
    t->linger_deadline = 0;
}

int iwarp_llp_tcp_listen(struct iwarp_llp_tcp_listener *l, const struct sockaddr *addr, int backlog)
{
    l->fd = -1;
    socklen_t alen = iwarp_llp_tcp_addrlen(addr);
    if (alen == 0)
        return IWARP_ERR_INVAL;
    l->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (l->fd < 0)
        return map_errno(errno);
    int one = 1;
    setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6) {
        /* :: listens on both families (IPv4 peers as ::ffff:a.b.c.d), as rdma_cm's default;
         * any other IPv6 address on IPv6 only */
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)(const void *)addr;
        int v6only = !IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr);
        setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    }
    if (bind(l->fd, addr, alen) != 0 || listen(l->fd, backlog > 0 ? backlog : SOMAXCONN) != 0) {
        int e = errno;
        close(l->fd);
        l->fd = -1;
        return map_errno(e);
    }
    socklen_t len = sizeof l->local;
    getsockname(l->fd, (struct sockaddr *)&l->local, &len);
    return 0;
}

int iwarp_llp_tcp_accept(struct iwarp_llp_tcp_listener *l)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno == EINTR)
            continue;
        /* ECONNABORTED: that peer gave up before we accepted; others may still be queued. */
        if (errno == ECONNABORTED)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return IWARP_ERR_BUSY;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            return IWARP_ERR_NOMEM;
        return IWARP_ERR_IO;
    }
}

uint32_t iwarp_llp_tcp_listener_queued(const struct iwarp_llp_tcp_listener *l)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(l->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_unacked) + sizeof ti.tcpi_unacked)
        return 1;
    return ti.tcpi_unacked;
}

void iwarp_llp_tcp_listener_close(struct iwarp_llp_tcp_listener *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}
