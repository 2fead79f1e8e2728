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

#include "stack_pair.h"

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
    struct sockaddr_in a;
    sp_loopback4(&a, sp_listen(srv));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof a), 0);

    /* wire-reference §1.8: key "MPA ID Req Frame", flags C (0x40), Rev 1, PD_Length 0 */
    uint8_t req[20];
    harness_hex("4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65 | 40 01 00 00", req, sizeof req);
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
