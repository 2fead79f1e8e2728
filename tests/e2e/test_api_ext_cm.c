/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Extensible public structs end to end (include/iwarp/common.h): iwarp_conn_param, the one input
 * struct only a connection exercises. Over loopback TCP: a zero-initialised param connects and
 * accepts; an unknown comp_mask bit is refused by iwarp_cm_connect and iwarp_cm_accept with
 * IWARP_ERR_NOTSUP and a log line, leaving the request waiting for an answer; the params of
 * CONNECT_REQUEST and ESTABLISHED carry comp_mask 0, so one handed back to accept as it came
 * works. The params lie against a PROT_NONE page: a read past their base faults.
 */
#define _GNU_SOURCE
#include "api_ext_check.h"
#include "stack_pair.h"

/* ---- iwarp_conn_param, end to end -------------------------------------------------------- */

struct conn_try {
    struct iwarp_cm_id *id;
    struct iwarp_conn_param *param;
};

static int try_connect(void *p)
{
    struct conn_try *t = p;
    return iwarp_cm_connect(t->id, t->param);
}

static int try_accept(void *p)
{
    struct conn_try *t = p; /* refused: the request still waits for an answer */
    return iwarp_cm_accept(t->id, t->param);
}

TEST(conn_param_zero_connects_unknown_bit_refused)
{
    struct sp_side srv, cli;
    struct iwarp_ctx_attr a = {
        .progress = IWARP_PROGRESS_THREAD, .log = log_hook, .log_level = IWARP_LOG_ERROR};
    sp_side_init_attr(&srv, NULL, &a, 16, false);
    sp_side_init_attr(&cli, NULL, &a, 16, false);
    memset(&logged, 0, sizeof logged);
    uint16_t port = sp_listen(&srv);
    struct sockaddr_in dst;
    sp_loopback4(&dst, port);
    struct sp_end ce = {0}, se = {0};
    struct sp_cfg cfg = {.cap = {.max_send_wr = 4, .max_recv_wr = 4}};
    ASSERT_EQ(iwarp_cm_create_id(cli.ch, &ce.id, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(ce.id, NULL, (struct sockaddr *)&dst, 1000), 0);
    sp_expect_ack(&cli, NULL, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_resolve_route(ce.id, 1000), 0);
    sp_expect_ack(&cli, NULL, IWARP_CM_EVENT_ROUTE_RESOLVED);
    sp_create_qp(&cli, &ce, &cfg, NULL);

    struct conn_try t = {ce.id, GUARDED(struct iwarp_conn_param)}; /* zero: connects */
    expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_conn_param, &t.param->comp_mask, try_connect,
                              &t, "iwarp_cm_connect", "iwarp_conn_param");
    guard_free(t.param);

    struct iwarp_cm_event *ev = sp_expect_event(&srv, &cli, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(ev->param.comp_mask, 0); /* the library reports base fields only */
    se.id = ev->id;
    t = (struct conn_try){se.id, GUARDED(struct iwarp_conn_param)};
    /* handed back as it came, as librdmacm programs do; the guarded room holds the base only */
    memcpy(t.param, &ev->param, IWARP_API_EXT_BASE(struct iwarp_conn_param));
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    sp_create_qp(&srv, &se, &cfg, NULL);
    expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_conn_param, &t.param->comp_mask, try_accept, &t,
                              "iwarp_cm_accept", "iwarp_conn_param");
    guard_free(t.param);
    ev = sp_expect_event(&srv, &cli, IWARP_CM_EVENT_ESTABLISHED);
    ASSERT_EQ(ev->param.comp_mask, 0);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ev = sp_expect_event(&cli, &srv, IWARP_CM_EVENT_ESTABLISHED);
    ASSERT_EQ(ev->param.comp_mask, 0);
    ASSERT_EQ(ev->param.mpa_rev, 2); /* the all-zero defaults: RFC 6581 */
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(logged.lines, 0);

    /* Both connections are released once both QPs are gone (no event for that); an end may
     * have heard of the other's abort before: whatever was queued by then is taken now, and
     * nothing can come later. */
    iwarp_cm_destroy_qp(ce.id);
    iwarp_cm_destroy_qp(se.id);
    struct sp_side *sides[2] = {&cli, &srv};
    for (int i = 0; i < 2; i++) {
        struct iwarp_cm_event *e;
        while ((e = sp_try_event(sides[i])) != NULL)
            ASSERT_EQ(iwarp_cm_ack_event(e), 0);
    }
    ASSERT_EQ(iwarp_cm_destroy_id(ce.id), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(se.id), 0);
    sp_side_fini(&cli);
    sp_side_fini(&srv);
}
