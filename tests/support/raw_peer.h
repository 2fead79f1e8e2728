/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A raw TCP peer of a libiwarp server, for tests that must put exact octets on the wire: it
 * completes a valid MPA Request by hand (revision 1, CRC on) and reads the Reply; then the
 * test writes FPDUs itself (read_exact, expect_closed help it read the answers).
 */
#ifndef IWARP_TESTS_RAW_PEER_H
#define IWARP_TESTS_RAW_PEER_H

#include <errno.h>
#include <sys/time.h>
#include <unistd.h>

#include "proc_probe.h"
#include "stack_pair.h"

/* wire-reference §1.8: key "MPA ID Req Frame", flags C (0x40), Rev 1, PD_Length 0 */
#define RAW_MPA_REQUEST     "4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65 | 40 01 00 00"
#define RAW_MPA_REQUEST_LEN 20u

/* A blocking TCP connection from the raw peer to 127.0.0.1:port, nothing sent yet. */
static inline int raw_connect(uint16_t port)
{
    struct sockaddr_in a;
    sp_loopback4(&a, port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* The local port of the raw socket fd. */
static inline uint16_t raw_local_port(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* Waits until the server end of the raw connection fd (to this process's listener on port) has
 * been accept()ed: the kernel then lists it with an inode (/proc/net/tcp). */
static inline void raw_wait_accepted(int fd, uint16_t port, unsigned ms)
{
    uint16_t rport = raw_local_port(fd);
    struct probe_tcp t;
    WAIT_UNTIL(probe_tcp_find(port, rport, &t) && t.inode != 0, ms,
               "the server to accept the raw connection");
}

/* Waits until the server end of the raw connection fd (to this process's listener on port) is
 * in the listener's accept queue, not yet accept()ed, with rx octets received and unread. */
static inline void raw_wait_queued(int fd, uint16_t port, uint32_t rx, unsigned ms)
{
    uint16_t rport = raw_local_port(fd);
    struct probe_tcp t;
    WAIT_UNTIL(probe_tcp_find(port, rport, &t) && t.state == PROBE_TCP_ESTABLISHED &&
                   t.inode == 0 && t.rx_queue == rx,
               ms, "the raw connection in the accept queue with %u octets", rx);
}

/* Waits up to ms milliseconds for the end of fd's stream (the server's FIN or reset); nothing
 * else may arrive. Returns how long it took, in milliseconds. */
static inline uint64_t raw_wait_closed(int fd, unsigned ms, const char *what)
{
    struct deadline dl = deadline_in_ms(ms);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, 10);
        ASSERT_TRUE(n >= 0);
        if (n > 0) {
            uint8_t b[64];
            ssize_t k = recv(fd, b, sizeof b, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno == ECONNRESET))
                return deadline_waited_ms(&dl);
            if (k > 0)
                harness_fail(__FILE__, __LINE__, "%s: %zd octets came instead of the end", what, k);
        }
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%s", what);
    }
}

/* Whether fd's stream is open now: nothing to read and no end of stream. */
static inline bool raw_open_now(int fd)
{
    uint8_t b;
    ssize_t k = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
    return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static inline void read_exact(int fd, uint8_t *p, size_t n)
{
    struct timeval tv = {.tv_sec = 10};
    ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, p + got, n - got, 0);
        if (k <= 0)
            harness_fail(__FILE__, __LINE__, "raw socket: %zu of %zu octets (%s)", got, n,
                         k == 0 ? "end of stream" : strerror(errno));
        got += (size_t)k;
    }
}

/* The raw socket sees the end of the stream (FIN or RST) and nothing more. */
static inline void expect_closed(int fd)
{
    uint8_t b[64];
    ssize_t k = recv(fd, b, sizeof b, 0);
    ASSERT_TRUE(k == 0 || (k < 0 && errno == ECONNRESET));
}

/* A raw TCP peer of srv: a valid MPA Request by hand, accepted by srv (e: its id and QP, one
 * receive of buf posted as wr_id 1), the Reply read and checked. Returns the raw socket. */
static inline int raw_peer_up(struct sp_side *srv, struct sp_end *e, uint8_t *buf,
                              struct iwarp_mr *mr)
{
    int fd = raw_connect(sp_listen(srv));
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    ASSERT_EQ(send(fd, req, sizeof req, 0), (ssize_t)sizeof req);

    struct iwarp_cm_event *ev = sp_expect_event(srv, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(ev->param.mpa_rev, 1);
    ASSERT_TRUE(ev->param.crc);
    ASSERT_EQ(ev->param.private_data_len, 0);
    *e = (struct sp_end){.id = ev->id};
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 4, .max_recv_wr = 4}};
    sp_create_qp(srv, e, &cfg, NULL);
    ASSERT_EQ(sp_post_recv(e->qp, 1, buf, 4096, mr->lkey), 0);
    struct iwarp_conn_param ap = {.responder_resources = 4, .initiator_depth = 4};
    ASSERT_EQ(iwarp_cm_accept(e->id, &ap), 0);
    sp_expect_ack(srv, NULL, IWARP_CM_EVENT_ESTABLISHED);

    /* the Reply: "MPA ID Rep Frame", C echoed (RFC 5044 §7.1.1), Rev 1, no private data */
    uint8_t rep[20], want[20];
    read_exact(fd, rep, sizeof rep);
    harness_hex("4D 50 41 20 49 44 20 52 65 70 20 46 72 61 6D 65 | 40 01 00 00", want, sizeof want);
    ASSERT_MEM_EQ(rep, want, sizeof want);
    return fd;
}

#endif
