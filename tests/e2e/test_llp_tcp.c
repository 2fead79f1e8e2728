/* SPDX-License-Identifier: BSD-2-Clause */
/* The TCP back-end on its own (no loop, no QP): listener and non-blocking connect over IPv4
 * and IPv6, TCP_NODELAY and the EMSS, the MPA Request/Reject exchange driven by hand through
 * on_readable/on_writable and interest(), FIN handling, the close's time limit (a peer that
 * never answers our FIN is reset), a refused connect, and the IPv6 wildcard listening
 * dual-stack. */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "llp/llp_tcp.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void loopback(struct sockaddr_storage *ss, bool v6, uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
    }
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Wait until fd has any of the poll events. */
static bool wait_fd(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    return poll(&p, 1, 5000) == 1;
}

struct end {
    struct iwarp_llp_tcp t;
    uint8_t *bounce;
    struct iwarp_llp_conn_txf *txf;
};

static void end_alloc(struct end *e)
{
    memset(e, 0, sizeof *e);
    e->t.fd = -1;
    e->bounce = calloc(1, IWARP_LLP_CONN_BOUNCE);
    e->txf = calloc(IWARP_LLP_CONN_TX_SEGS, sizeof *e->txf);
}

static void end_free(struct end *e)
{
    iwarp_llp_tcp_close(&e->t, false);
    free(e->bounce);
    free(e->txf);
}

/* Drive both ends until cond holds (what the loop would do on readiness), for up to 5 s. */
#define PUMP_UNTIL(a, b, cond)                            \
    do {                                                  \
        struct deadline pump_dl_ = deadline_in_ms(5000);  \
        while (!(cond)) {                                 \
            if (deadline_passed(&pump_dl_))               \
                DEADLINE_FAIL(&pump_dl_, "%s", #cond);    \
            iwarp_llp_tcp_on_readable(&(a)->t, now_ns()); \
            iwarp_llp_tcp_on_writable(&(a)->t, now_ns()); \
            iwarp_llp_tcp_on_readable(&(b)->t, now_ns()); \
            iwarp_llp_tcp_on_writable(&(b)->t, now_ns()); \
            deadline_pause_us(1000);                      \
        }                                                 \
    } while (0)

static void connect_pair(bool v6, struct end *ini, struct end *rsp)
{
    struct iwarp_llp_tcp_listener l;
    struct sockaddr_storage a;
    loopback(&a, v6, 0);
    ASSERT_EQ(iwarp_llp_tcp_listen(&l, (struct sockaddr *)&a, 4), 0);
    ASSERT_NE(port_of(&l.local), 0);
    ASSERT_EQ(iwarp_llp_tcp_accept(&l), IWARP_ERR_BUSY); /* nothing pending */

    end_alloc(ini);
    end_alloc(rsp);
    ASSERT_EQ(iwarp_llp_tcp_connect(&ini->t, (struct sockaddr *)&l.local, NULL), 0);
    if (ini->t.phase == IWARP_LLP_TCP_CONNECTING) {
        ASSERT_EQ(iwarp_llp_tcp_interest(&ini->t), IWARP_LLP_TCP_WANT_WRITE);
        ASSERT_TRUE(wait_fd(ini->t.fd, POLLOUT));
        iwarp_llp_tcp_on_writable(&ini->t, now_ns());
    }
    ASSERT_TRUE(iwarp_llp_tcp_connected(&ini->t));
    ASSERT_TRUE(wait_fd(l.fd, POLLIN));
    int fd = iwarp_llp_tcp_accept(&l);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(iwarp_llp_tcp_adopt(&rsp->t, fd), 0);
    iwarp_llp_tcp_listener_close(&l);
    iwarp_llp_tcp_listener_close(&l); /* twice is harmless */

    /* EMSS is the socket's TCP_MAXSEG; Nagle is off on both ends */
    for (int i = 0; i < 2; i++) {
        struct iwarp_llp_tcp *t = i ? &rsp->t : &ini->t;
        int mss = 0, nd = 0;
        socklen_t len = sizeof mss;
        ASSERT_EQ(getsockopt(t->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len), 0);
        ASSERT_EQ(t->emss, (uint32_t)mss);
        ASSERT_TRUE(t->emss >= 536);
        len = sizeof nd;
        ASSERT_EQ(getsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &nd, &len), 0);
        ASSERT_NE(nd, 0);
        ASSERT_EQ(t->peer.ss_family, v6 ? AF_INET6 : AF_INET);
    }
    ASSERT_EQ(port_of(&rsp->t.peer), port_of(&ini->t.local));
}

static void reject_run(bool v6)
{
    struct end ini, rsp;
    connect_pair(v6, &ini, &rsp);
    uint64_t now = now_ns();
    struct iwarp_llp_conn_cfg ci = {0}, cr = {0};
    iwarp_mpa_neg_cfg_default(&ci.neg, IWARP_MPA_INITIATOR);
    iwarp_mpa_neg_cfg_default(&cr.neg, IWARP_MPA_RESPONDER);
    static const uint8_t pd[] = "request";
    ci.neg.pd = pd;
    ci.neg.pd_len = sizeof pd;
    ci.emss = 1; /* replaced by the socket's EMSS */
    ASSERT_EQ(iwarp_llp_tcp_start(&ini.t, &ci, ini.bounce, ini.txf, now), 0);
    ASSERT_EQ(ini.t.conn.cfg.emss, ini.t.emss);
    ASSERT_EQ(iwarp_llp_tcp_start(&ini.t, &ci, ini.bounce, ini.txf, now), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_llp_tcp_start(&rsp.t, &cr, rsp.bounce, rsp.txf, now), 0);
    ASSERT_EQ(iwarp_llp_tcp_interest(&rsp.t), IWARP_LLP_TCP_WANT_READ);

    PUMP_UNTIL(&ini, &rsp, rsp.t.conn.state == IWARP_LLP_CONN_REQUEST);
    /* deciding: the responder still watches the stream, where anything the initiator sends
     * now breaks RFC 5044 §7.1.2 rules 2, 3 and fails the connection (never an FPDU later) */
    ASSERT_EQ(iwarp_llp_tcp_interest(&rsp.t), IWARP_LLP_TCP_WANT_READ);
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&rsp.t.conn.neg);
    ASSERT_EQ(r->peer_pd_len, sizeof pd);
    ASSERT_MEM_EQ(r->peer_pd, pd, sizeof pd);

    static const uint8_t why[] = "go away";
    struct iwarp_mpa_neg_answer ans = {.ird = IWARP_MPA_IRD_ORD_NONE,
                                       .ord = IWARP_MPA_IRD_ORD_NONE,
                                       .pd = why,
                                       .pd_len = sizeof why};
    ASSERT_EQ(iwarp_llp_conn_reject(&rsp.t.conn, &ans), 0);
    iwarp_llp_tcp_on_writable(&rsp.t, now_ns());
    ASSERT_TRUE(rsp.t.fin_sent); /* the Reject, then our FIN */

    PUMP_UNTIL(&ini, &rsp, ini.t.conn.state == IWARP_LLP_CONN_REJECTED);
    r = iwarp_mpa_neg_result(&ini.t.conn.neg);
    ASSERT_EQ(r->peer_pd_len, sizeof why);
    ASSERT_MEM_EQ(r->peer_pd, why, sizeof why);
    /* both FINs exchanged: both streams are over */
    PUMP_UNTIL(&ini, &rsp, ini.t.phase == IWARP_LLP_TCP_DONE && rsp.t.phase == IWARP_LLP_TCP_DONE);
    ASSERT_TRUE(ini.t.rx_eof && ini.t.fin_sent && rsp.t.rx_eof);
    ASSERT_EQ(ini.t.err, 0);
    ASSERT_EQ(iwarp_llp_tcp_interest(&ini.t), 0);
    end_free(&ini);
    end_free(&rsp);
}

TEST(request_reject_and_fin_exchange_ipv4)
{
    reject_run(false);
}

TEST(request_reject_and_fin_exchange_ipv6)
{
    reject_run(true);
}

TEST(peer_reset_during_negotiation_fails_the_connection)
{
    struct end ini, rsp;
    connect_pair(false, &ini, &rsp);
    struct iwarp_llp_conn_cfg cr = {0};
    iwarp_mpa_neg_cfg_default(&cr.neg, IWARP_MPA_RESPONDER);
    ASSERT_EQ(iwarp_llp_tcp_start(&rsp.t, &cr, rsp.bounce, rsp.txf, now_ns()), 0);
    iwarp_llp_tcp_close(&ini.t, true); /* RST */
    ASSERT_TRUE(wait_fd(rsp.t.fd, POLLIN));
    iwarp_llp_tcp_on_readable(&rsp.t, now_ns());
    ASSERT_EQ(rsp.t.phase, IWARP_LLP_TCP_DONE);
    ASSERT_EQ(rsp.t.err, IWARP_ERR_CONN_RESET);
    ASSERT_EQ(rsp.t.conn.state, IWARP_LLP_CONN_FAILED);
    end_free(&ini);
    end_free(&rsp);
}

TEST(octets_behind_the_request_fail_the_responder_before_any_decision)
{
    /* RFC 5044 §7.1.2 rules 2, 3: the initiator may send nothing before the Reply. A Request
     * (Rev 1, C=1) with FPDU octets behind it in one segment: the responder fails at once
     * (never announces the Request, sends no Reply) and closes; no octet becomes an FPDU. */
    struct end ini, rsp;
    connect_pair(false, &ini, &rsp);
    struct iwarp_llp_conn_cfg cr = {0};
    iwarp_mpa_neg_cfg_default(&cr.neg, IWARP_MPA_RESPONDER);
    ASSERT_EQ(iwarp_llp_tcp_start(&rsp.t, &cr, rsp.bounce, rsp.txf, now_ns()), 0);
    static const uint8_t seg[] = {'M',  'P',  'A',  ' ',  'I', 'D',  ' ',  'R',  'e',  'q', ' ',
                                  'F',  'r',  'a',  'm',  'e', 0x40, 0x01, 0x00, 0x00, /* Request */
                                  0x00, 0x12, 0x41, 0x40, 0,   0,    0,    0,    0,    0,   0,
                                  0}; /* an FPDU */
    ASSERT_EQ(send(ini.t.fd, seg, sizeof seg, 0), (ssize_t)sizeof seg);
    struct deadline dl = deadline_in_ms(5000);
    while (rsp.t.conn.state == IWARP_LLP_CONN_NEGOTIATING && !deadline_passed(&dl)) {
        ASSERT_TRUE(wait_fd(rsp.t.fd, POLLIN));
        iwarp_llp_tcp_on_readable(&rsp.t, now_ns());
    }
    ASSERT_EQ(rsp.t.conn.state, IWARP_LLP_CONN_FAILED);
    ASSERT_EQ(rsp.t.conn.err, IWARP_ERR_MPA_EARLY_DATA);
    ASSERT_EQ_U(rsp.t.conn.rx_fpdus, 0);
    /* the initiator gets no Reply: the stream ends (FIN or reset) without an octet */
    char c;
    ASSERT_TRUE(wait_fd(ini.t.fd, POLLIN));
    ASSERT_TRUE(recv(ini.t.fd, &c, 1, 0) <= 0);
    end_free(&ini);
    end_free(&rsp);
}

TEST(a_close_the_peer_never_answers_is_reset_at_its_limit)
{
    struct end ini, rsp;
    connect_pair(false, &ini, &rsp);
    ini.t.linger_ns = 50000000ull;                               /* 50 ms */
    ASSERT_EQ_U(iwarp_llp_tcp_next_timeout(&ini.t), UINT64_MAX); /* no close yet */
    uint64_t t0 = now_ns();
    iwarp_llp_tcp_shutdown(&ini.t, t0); /* our FIN; the peer never answers it */
    ASSERT_TRUE(ini.t.fin_sent);
    uint64_t limit = iwarp_llp_tcp_next_timeout(&ini.t);
    ASSERT_EQ_U(limit, t0 + 50000000ull);
    iwarp_llp_tcp_linger(&ini.t, t0 + 1000); /* a limit already running is kept */
    ASSERT_EQ_U(iwarp_llp_tcp_next_timeout(&ini.t), limit);
    iwarp_llp_tcp_handle_timeout(&ini.t, limit - 1);
    ASSERT_EQ(ini.t.phase, IWARP_LLP_TCP_OPEN); /* not yet */
    iwarp_llp_tcp_handle_timeout(&ini.t, limit);
    ASSERT_EQ(ini.t.phase, IWARP_LLP_TCP_DONE);
    ASSERT_EQ(ini.t.fd, -1);
    ASSERT_EQ_U(iwarp_llp_tcp_next_timeout(&ini.t), UINT64_MAX);
    /* the peer sees our FIN, then the reset */
    char c;
    ASSERT_TRUE(wait_fd(rsp.t.fd, POLLIN));
    ASSERT_EQ(recv(rsp.t.fd, &c, 1, 0), 0);
    struct deadline dl = deadline_in_ms(5000);
    int err = 0;
    socklen_t len = sizeof err;
    while (err == 0 && !deadline_passed(&dl)) {
        ASSERT_EQ(getsockopt(rsp.t.fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
        if (err == 0)
            deadline_pause_us(1000);
    }
    /* Linux reports a reset in CLOSE_WAIT (our FIN already read) as EPIPE, else ECONNRESET */
    ASSERT_TRUE(err == EPIPE || err == ECONNRESET);
    end_free(&ini);
    end_free(&rsp);
}

TEST(connect_to_a_closed_port_is_refused)
{
    int s = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_storage a;
    loopback(&a, true, 0);
    ASSERT_EQ(bind(s, (struct sockaddr *)&a, sizeof(struct sockaddr_in6)), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);
    struct end e;
    end_alloc(&e);
    int rc = iwarp_llp_tcp_connect(&e.t, (struct sockaddr *)&a, NULL);
    if (rc == 0) {
        ASSERT_TRUE(wait_fd(e.t.fd, POLLOUT));
        iwarp_llp_tcp_on_writable(&e.t, now_ns());
        ASSERT_FALSE(iwarp_llp_tcp_connected(&e.t));
        rc = e.t.err;
    }
    ASSERT_EQ(rc, IWARP_ERR_CONN_REFUSED);
    struct sockaddr_storage v4;
    loopback(&v4, false, 1);
    ASSERT_EQ(iwarp_llp_tcp_connect(&e.t, (struct sockaddr *)&a, (struct sockaddr *)&v4),
              IWARP_ERR_INVAL); /* mixed families */
    end_free(&e);
}

/* A listener on the IPv6 wildcard :: takes IPv4 connections too (dual-stack, IPv4 peers as
 * ::ffff:127.0.0.1), as rdma_cm's; one on ::1 is IPv6 only. */
static int dial(bool v6, uint16_t port)
{
    struct sockaddr_storage a;
    loopback(&a, v6, port);
    int s = socket(a.ss_family, SOCK_STREAM, 0);
    int rc = connect(s, (struct sockaddr *)&a,
                     v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    if (rc != 0) {
        close(s);
        return -1;
    }
    return s;
}

TEST(a_listener_on_the_ipv6_wildcard_takes_ipv4_and_ipv6)
{
    struct iwarp_llp_tcp_listener l;
    struct sockaddr_in6 any = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
    ASSERT_EQ(iwarp_llp_tcp_listen(&l, (struct sockaddr *)&any, 4), 0);
    uint16_t port = port_of(&l.local);
    for (int v6 = 0; v6 < 2; v6++) {
        int c = dial(v6, port);
        ASSERT_TRUE(c >= 0);
        ASSERT_TRUE(wait_fd(l.fd, POLLIN));
        int fd = iwarp_llp_tcp_accept(&l);
        ASSERT_TRUE(fd >= 0);
        struct sockaddr_in6 peer;
        socklen_t len = sizeof peer;
        ASSERT_EQ(getpeername(fd, (struct sockaddr *)&peer, &len), 0);
        ASSERT_EQ(peer.sin6_family, AF_INET6);
        ASSERT_TRUE(v6 ? IN6_IS_ADDR_LOOPBACK(&peer.sin6_addr)
                       : IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr));
        close(fd);
        close(c);
    }
    iwarp_llp_tcp_listener_close(&l);

    struct sockaddr_storage lo6;
    loopback(&lo6, true, 0);
    ASSERT_EQ(iwarp_llp_tcp_listen(&l, (struct sockaddr *)&lo6, 4), 0);
    port = port_of(&l.local);
    int c = dial(true, port);
    ASSERT_TRUE(c >= 0);
    close(c);
    /* IPv6 only: an IPv4 dial to the same port finds no listener (a stranger could hold the
     * port on 127.0.0.1 meanwhile; the kernel's ephemeral ports make that unlikely) */
    ASSERT_EQ(dial(false, port), -1);
    iwarp_llp_tcp_listener_close(&l);
}
