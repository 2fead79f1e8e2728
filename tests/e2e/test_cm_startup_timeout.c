/* SPDX-License-Identifier: BSD-2-Clause */
/* The startup timeout of accepted connections (iwarp_ctx_attr.mpa_startup_timeout_ms, RFC 5044
 * §7.1.2 rules 8 and 10): a raw TCP peer that sends half an MPA Request and stops, or nothing at
 * all, is closed once the limit has passed (not before it, and well before the 10 s default); a
 * complete Request within the limit is announced, and the time the application then takes to
 * decide is not limited. */
#define _GNU_SOURCE 1

#include "raw_peer.h"
#include "stack_pair.h"

#define T_MS    300u
/* The close comes at T (the loop's timer), late by at most a loaded machine's scheduling delay;
 * anything from 10 s on would be the default limit, not the one set. */
#define LATE_MS 4000u

static void srv_init(struct sp_side *srv, uint32_t t_ms)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.comp_mask = IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT;
    a.mpa_startup_timeout_ms = t_ms;
    sp_side_init_attr(srv, NULL, &a, 16, false);
}

/* A raw connection that sends the first `half` octets of an MPA Request and then nothing: it
 * is closed T_MS after its accept. */
static void stalled_after(uint32_t half)
{
    struct sp_side srv;
    srv_init(&srv, T_MS);
    uint16_t port = sp_listen(&srv);
    uint64_t t0 = sp_now_ms(); /* before the connect, so no earlier than the accept */
    int fd = raw_connect(port);
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    if (half)
        ASSERT_EQ(send(fd, req, half, 0), (ssize_t)half);
    (void)raw_wait_closed(fd, T_MS + LATE_MS, "the stalled startup to be closed");
    uint64_t took = sp_now_ms() - t0;
    if (took + 5u < T_MS) /* 5 ms: CLOCK_MONOTONIC read in two places, rounded down */
        harness_fail(__FILE__, __LINE__, "closed after %llu ms, before the %u ms limit",
                     (unsigned long long)took, T_MS);
    printf("startup with %u of %u octets of its Request closed after %llu ms (T = %u ms)\n", half,
           RAW_MPA_REQUEST_LEN, (unsigned long long)took, T_MS);
    close(fd);
    sp_side_fini(&srv);
}

TEST(half_a_request_is_closed_after_the_startup_timeout)
{
    stalled_after(RAW_MPA_REQUEST_LEN / 2u);
}

TEST(a_silent_connection_is_closed_after_the_startup_timeout)
{
    stalled_after(0);
}

/* A Request completed within T is announced; the application may then take longer than T to
 * decide (RFC 5044 §7.1.2: the ULP's decision is local, no MPA timer runs). */
TEST(a_request_within_the_limit_is_announced_and_the_decision_is_not_timed)
{
    struct sp_side srv;
    srv_init(&srv, T_MS);
    uint16_t port = sp_listen(&srv);
    int fd = raw_connect(port);
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    ASSERT_EQ(send(fd, req, sizeof req, 0), (ssize_t)sizeof req);
    struct iwarp_cm_event *ev = sp_expect_event(&srv, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    /* 3 T without deciding: this window checks that nothing happens, so it is a fixed wait */
    deadline_pause_us(3u * T_MS * 1000u);
    ASSERT_TRUE(raw_open_now(fd));
    ASSERT_EQ(iwarp_cm_reject(id, NULL, 0), 0);
    uint8_t rep[RAW_MPA_REQUEST_LEN];
    read_exact(fd, rep, sizeof rep);
    ASSERT_EQ(rep[16] & 0x20u, 0x20u); /* RFC 5044 §7.1.1: R, the Reject */
    ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
    close(fd);
    sp_side_fini(&srv);
}
