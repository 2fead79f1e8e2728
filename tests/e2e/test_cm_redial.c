/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connector dialing again (iwarp_conn_param.retry_refused_ms, IWARP_CONN_PARAM_RETRY_REFUSED)
 * over loopback TCP: a port nobody listens on yet (a socket bound to it without listening, so
 * that no other program can take it meanwhile) refuses; with the option the connection is made
 * once a listener appears within the window, on the same id and QP, and a Send flows both
 * ways (the receive the client posted before connect() was not flushed by the refusals). A
 * "relay" that accepts and at once closes or resets (qemu's user-mode hostfwd in front of a
 * guest that does not listen yet) is dialed again too. Without the option a refusal is
 * REJECTED / IWARP_ERR_CONN_REFUSED at once; with it and no listener, the same after the
 * window. iwarp_cm_disconnect during the wait reports CONNECT_ERROR; destroying the QP and the
 * id during the wait is clean (no file descriptor left open; the ASan build checks for leaks).
 * The same fake listener also plays a responder whose Reply has a wrong Key (RFC 5044 §7.1.2
 * rule 5: CONNECT_ERROR / IWARP_ERR_MPA_KEY and a close).
 */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stack_pair.h"

#define CQE 16

/* A TCP socket bound to a free loopback port, not listening: connections to it are refused
 * (RST) and no other program can take the port. Returns the fd; *port is the port. */
static int reserve_port(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_TRUE(fd >= 0);
    int one = 1;
    ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
    struct sockaddr_in a;
    sp_loopback4(&a, 0);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* How many file descriptors the process has open (the sockets of every dial included). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Listen on 127.0.0.1:port with the CM. */
static void listen_on(struct sp_side *srv, uint16_t port)
{
    struct sockaddr_in a;
    sp_loopback4(&a, port);
    ASSERT_EQ(iwarp_cm_create_id(srv->ch, &srv->listen, srv, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_bind_addr(srv->listen, (struct sockaddr *)&a), 0);
    ASSERT_EQ(iwarp_cm_listen(srv->listen, 16), 0);
}

/* A client id resolved to 127.0.0.1:port, with a QP. */
static void client_to(struct sp_side *cli, struct sp_end *e, uint16_t port)
{
    struct sockaddr_in dst;
    sp_loopback4(&dst, port);
    ASSERT_EQ(iwarp_cm_create_id(cli->ch, &e->id, e, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(e->id, NULL, (struct sockaddr *)&dst, 1000), 0);
    sp_expect_ack(cli, NULL, IWARP_CM_EVENT_ADDR_RESOLVED);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
    sp_create_qp(cli, e, &cfg, NULL);
}

static int connect_with(struct sp_end *e, uint32_t retry_ms, bool with_bit)
{
    struct iwarp_conn_param p = {0};
    if (with_bit) {
        p.comp_mask = IWARP_CONN_PARAM_RETRY_REFUSED;
        p.retry_refused_ms = retry_ms;
    }
    return iwarp_cm_connect(e->id, &p);
}

/* No CM event on s for ms milliseconds. A fixed window is right here: it is the time in which
 * an event that must not exist (the connection given up too early) has its chance to come. */
static void expect_no_event_for(struct sp_side *s, uint64_t ms)
{
    struct deadline dl = deadline_in_ms(ms);
    while (!deadline_passed(&dl)) {
        struct iwarp_cm_event *ev = sp_try_event(s);
        if (ev)
            harness_fail(__FILE__, __LINE__, "still dialing: got %s (status %s)",
                         iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
        sp_idle(s, NULL);
    }
}

/* The CM's client end is up (the client's ESTABLISHED is waited for, the server's request
 * accepted): the client sends "ping" and the server answers "pong" into the receive the client
 * posted before it connected. */
static void accept_and_exchange(struct sp_side *srv, struct sp_side *cli, struct sp_end *ce,
                                uint8_t *cbuf, struct iwarp_mr *cmr)
{
    struct sp_end se = {0};
    struct iwarp_cm_event *ev = sp_expect_event(srv, cli, IWARP_CM_EVENT_CONNECT_REQUEST);
    se.id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
    sp_create_qp(srv, &se, &cfg, NULL);
    uint8_t sbuf[16] = {0};
    struct iwarp_mr *smr = sp_reg(srv, sbuf, sizeof sbuf, 0);
    ASSERT_EQ(sp_post_recv(se.qp, 21, sbuf, 8, smr->lkey), 0);
    struct iwarp_conn_param ap = {0};
    ASSERT_EQ(iwarp_cm_accept(se.id, &ap), 0);
    sp_expect_ack(srv, cli, IWARP_CM_EVENT_ESTABLISHED);
    sp_expect_ack(cli, srv, IWARP_CM_EVENT_ESTABLISHED);

    memcpy(cbuf + 8, "ping", 4);
    ASSERT_EQ(sp_post(ce->qp, 11, IWARP_WR_SEND, IWARP_SEND_SIGNALED, cbuf + 8, 4, cmr->lkey, 0, 0),
              0);
    ASSERT_EQ_U(sp_poll_ok(cli, srv, IWARP_WC_SEND).wr_id, 11);
    struct iwarp_wc wc = sp_poll_ok(srv, cli, IWARP_WC_RECV);
    ASSERT_EQ_U(wc.wr_id, 21);
    ASSERT_EQ(wc.byte_len, 4);
    ASSERT_MEM_EQ(sbuf, "ping", 4);
    memcpy(sbuf + 8, "pong", 4);
    ASSERT_EQ(sp_post(se.qp, 22, IWARP_WR_SEND, IWARP_SEND_SIGNALED, sbuf + 8, 4, smr->lkey, 0, 0),
              0);
    ASSERT_EQ_U(sp_poll_ok(srv, cli, IWARP_WC_SEND).wr_id, 22);
    wc = sp_poll_ok(cli, srv, IWARP_WC_RECV);
    ASSERT_EQ_U(wc.wr_id, 12); /* posted before connect(): it survived the refusals */
    ASSERT_EQ(wc.byte_len, 4);
    ASSERT_MEM_EQ(cbuf, "pong", 4);

    ASSERT_EQ(iwarp_cm_disconnect(ce->id), 0);
    sp_expect_ack(cli, srv, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(srv, cli, IWARP_CM_EVENT_DISCONNECTED);
    sp_end_destroy(&se);
    ASSERT_EQ(iwarp_dereg_mr(smr), 0);
}

/* A listener appears 300 ms after connect(): the connection is made (once without a relay in
 * front; then with one that accepts and closes, or resets, each connection before MPA). */
static void connect_before_listen(int relay /* 0: none, 1: close, 2: reset */)
{
    struct sp_side srv, cli;
    sp_side_init(&srv, IWARP_PROGRESS_THREAD, CQE);
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, CQE);
    uint16_t port;
    int hold = reserve_port(&port);
    if (relay) {
        ASSERT_EQ(listen(hold, 16), 0);
        sp_set_nonblock(hold);
    }
    struct sp_end ce = {0};
    client_to(&cli, &ce, port);
    uint8_t cbuf[16] = {0};
    struct iwarp_mr *cmr = sp_reg(&cli, cbuf, sizeof cbuf, 0);
    ASSERT_EQ(sp_post_recv(ce.qp, 12, cbuf, 8, cmr->lkey), 0);

    ASSERT_EQ(connect_with(&ce, 5000, true), 0);
    uint32_t relayed = 0;
    struct deadline dl = deadline_in_ms(300);
    while (!deadline_passed(&dl)) {
        struct iwarp_cm_event *ev = sp_try_event(&cli);
        if (ev)
            harness_fail(__FILE__, __LINE__, "still dialing: got %s (status %s)",
                         iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
        if (relay) {
            /* the relay: each connection is taken and ended before any MPA octet */
            int fd = accept4(hold, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                if (relay == 2) {
                    struct linger lg = {.l_onoff = 1, .l_linger = 0};
                    ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
                }
                close(fd);
                relayed++;
                continue;
            }
            ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
        }
        sp_idle(&cli, NULL);
    }
    if (relay && relayed < 2)
        harness_fail(__FILE__, __LINE__, "the relay saw %u connections in 300 ms, not 2 or more",
                     relayed);
    close(hold);
    listen_on(&srv, port);
    accept_and_exchange(&srv, &cli, &ce, cbuf, cmr);
    sp_end_destroy(&ce);
    ASSERT_EQ(iwarp_dereg_mr(cmr), 0);
    sp_side_fini(&cli);
    sp_side_fini(&srv);
}

TEST(refused_then_a_listener_appears_within_the_window_connects)
{
    connect_before_listen(0);
}

TEST(accepted_and_closed_before_the_reply_dials_again)
{
    connect_before_listen(1);
}

TEST(accepted_and_reset_before_the_reply_dials_again)
{
    connect_before_listen(2);
}

/* Refused with no listener: REJECTED / IWARP_ERR_CONN_REFUSED; returns the milliseconds from
 * connect() to the event. */
static uint64_t refused_after(uint32_t retry_ms, bool with_bit)
{
    int fds = open_fds();
    struct sp_side cli;
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, CQE);
    uint16_t port;
    int hold = reserve_port(&port);
    struct sp_end ce = {0};
    client_to(&cli, &ce, port);
    uint64_t t0 = sp_now_ms();
    ASSERT_EQ(connect_with(&ce, retry_ms, with_bit), 0);
    struct iwarp_cm_event *ev = sp_expect_event(&cli, NULL, IWARP_CM_EVENT_REJECTED);
    uint64_t took = sp_now_ms() - t0;
    ASSERT_EQ(ev->status, IWARP_ERR_CONN_REFUSED);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    sp_end_destroy(&ce);
    sp_side_fini(&cli);
    close(hold);
    ASSERT_EQ(open_fds(), fds); /* no socket of any dial is left open */
    return took;
}

TEST(without_the_option_a_refusal_is_reported_at_once)
{
    /* generous bounds: not a timing benchmark, only "no dialing again" (100 ms each) */
    ASSERT_TRUE(refused_after(0, false) < 1000);
    ASSERT_TRUE(refused_after(5000, false) < 1000); /* the field without its bit: not read */
    ASSERT_TRUE(refused_after(0, true) < 1000);     /* the bit with 0: no dialing again */
}

TEST(with_the_option_and_no_listener_the_refusal_comes_after_the_window)
{
    uint64_t took = refused_after(700, true);
    if (took < 700 || took > 700 + 4000)
        harness_fail(__FILE__, __LINE__, "REJECTED after %llu ms, not 700 .. 4700",
                     (unsigned long long)took);
}

TEST(disconnect_during_the_wait_reports_connect_error)
{
    struct sp_side cli;
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, CQE);
    uint16_t port;
    int hold = reserve_port(&port);
    struct sp_end ce = {0};
    client_to(&cli, &ce, port);
    ASSERT_EQ(connect_with(&ce, 10000, true), 0);
    expect_no_event_for(&cli, 250);
    ASSERT_EQ(iwarp_cm_disconnect(ce.id), 0);
    struct iwarp_cm_event *ev = sp_expect_event(&cli, NULL, IWARP_CM_EVENT_CONNECT_ERROR);
    ASSERT_EQ(ev->status, IWARP_ERR_CONN_RESET);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_disconnect(ce.id), IWARP_ERR_STATE); /* over */
    expect_no_event_for(&cli, 250);                         /* nothing dials any more */
    sp_end_destroy(&ce);
    sp_side_fini(&cli);
    close(hold);
}

TEST(destroy_during_the_wait_is_clean)
{
    for (int caller = 0; caller <= 1; caller++) {
        int fds = open_fds();
        struct sp_side cli;
        sp_side_init(&cli, caller ? IWARP_PROGRESS_CALLER : IWARP_PROGRESS_THREAD, CQE);
        uint16_t port;
        int hold = reserve_port(&port);
        struct sp_end ce = {0};
        client_to(&cli, &ce, port);
        ASSERT_EQ(connect_with(&ce, 10000, true), 0);
        expect_no_event_for(&cli, 250);
        sp_end_destroy(&ce); /* the QP, then the id, in the middle of the wait */
        /* then the context (sp_side_fini): nothing of the connection may be left */
        sp_side_fini(&cli);
        close(hold);
        ASSERT_EQ(open_fds(), fds); /* no socket of any dial is left open */
    }
}

/* RFC 5044 §7.1.2 rule 5: a received Key that does not match closes the connection "and an
 * error returned to the ULP". A fake responder answers our Request with a Reply whose Key is
 * one octet off, and an FPDU's first octets behind it: the application gets CONNECT_ERROR with
 * IWARP_ERR_MPA_KEY, nothing is received, and the stream is closed. */
TEST(a_reply_with_a_wrong_key_is_a_connect_error_and_a_close)
{
    struct sp_side cli;
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, CQE);
    uint16_t port;
    int hold = reserve_port(&port);
    ASSERT_EQ(listen(hold, 16), 0);
    struct sp_end ce = {0};
    client_to(&cli, &ce, port);
    uint8_t cbuf[16] = {0};
    struct iwarp_mr *cmr = sp_reg(&cli, cbuf, sizeof cbuf, 0);
    ASSERT_EQ(sp_post_recv(ce.qp, 12, cbuf, 8, cmr->lkey), 0);
    ASSERT_EQ(connect_with(&ce, 0, false), 0);
    int fd = accept4(hold, NULL, NULL, SOCK_CLOEXEC); /* the progress thread dials */
    ASSERT_TRUE(fd >= 0);
    uint8_t req[64];
    ASSERT_TRUE(recv(fd, req, sizeof req, 0) >= 20); /* the Request (one segment on loopback) */
    static const uint8_t
        bad[] = {'M',  'P',  'A',  ' ',  'I',  'D',  ' ',  'R',  'e',  'p',
                 ' ',  'F',  'r',  'a',  'n',  'e',  0x50, 0x02, 0x00, 0x04,
                 0x00, 0x10, 0x00, 0x10, 0x00, 0x12, 0x41, 0x40}; /* + an FPDU's start */
    ASSERT_EQ(send(fd, bad, sizeof bad, MSG_NOSIGNAL), (ssize_t)sizeof bad);
    struct iwarp_cm_event *ev = sp_expect_event(&cli, NULL, IWARP_CM_EVENT_CONNECT_ERROR);
    ASSERT_EQ(ev->status, IWARP_ERR_MPA_KEY);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    /* closed: the fake responder reads the end of the stream (FIN or reset), never a byte */
    uint8_t b;
    ASSERT_TRUE(recv(fd, &b, 1, 0) <= 0);
    struct iwarp_wc wc;
    ASSERT_TRUE(iwarp_poll_cq(cli.cq, 1, &wc) <= 0 || wc.status != IWARP_WC_SUCCESS);
    close(fd);
    close(hold);
    sp_end_destroy(&ce);
    ASSERT_EQ(iwarp_dereg_mr(cmr), 0);
    sp_side_fini(&cli);
}
