/* SPDX-License-Identifier: BSD-2-Clause */
/* The cap on MPA startups a listener keeps (iwarp_ctx_attr.mpa_pending_max): raw TCP peers
 * that connect and send nothing fill it; each connection accepted beyond it resets the oldest
 * (logged at IWARP_LOG_INFO), the newest stay, and a libiwarp client still connects, evicting
 * the oldest in its turn. The startup timeout is set far beyond the test, so only the cap can
 * close anything here. */
#define _GNU_SOURCE 1
#include <stdatomic.h>

#include "raw_peer.h"
#include "stack_pair.h"

#define P        4u
#define N_STALL  7u    /* P + 3 */
#define CLOSE_MS 4000u /* eviction is at once; the 10 s default timeout must not be what closes */

static atomic_int n_evicted;

static void count_evictions(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    if (level == IWARP_LOG_INFO && strstr(msg, "mpa_pending_max"))
        atomic_fetch_add(&n_evicted, 1);
}

static void srv_init(struct sp_side *srv, uint32_t pending_max)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.log = count_evictions;
    a.log_level = IWARP_LOG_INFO;
    a.comp_mask = IWARP_CTX_ATTR_MPA_PENDING_MAX | IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT;
    a.mpa_pending_max = pending_max;
    a.mpa_startup_timeout_ms = 600000;
    sp_side_init_attr(srv, NULL, &a, 16, false);
}

/* Raw connections that send nothing, each accepted by the server before the next is made (so
 * that the server's accept order is the order of fds[]). */
static void stall(int *fds, uint32_t n, uint16_t port)
{
    for (uint32_t k = 0; k < n; k++) {
        fds[k] = raw_connect(port);
        raw_wait_accepted(fds[k], port, SP_WAIT_MS);
    }
}

TEST(startups_beyond_the_limit_reset_the_oldest_and_a_real_connect_still_succeeds)
{
    atomic_store(&n_evicted, 0);
    struct sp_side srv, cli;
    srv_init(&srv, P);
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, 16);
    uint16_t port = sp_listen(&srv);

    int fds[N_STALL];
    stall(fds, N_STALL, port);
    /* the oldest N_STALL - P are reset, the newest P are kept */
    for (uint32_t k = 0; k < N_STALL - P; k++)
        (void)raw_wait_closed(fds[k], CLOSE_MS, "the oldest stalled startups to be reset");
    for (uint32_t k = N_STALL - P; k < N_STALL; k++)
        ASSERT_TRUE(raw_open_now(fds[k]));
    ASSERT_EQ(atomic_load(&n_evicted), (int)(N_STALL - P));

    /* a legitimate connect is one startup more: it evicts the oldest stalled one and gets
     * through (a Send each way) */
    struct sp_pair pair = {0};
    struct sp_cfg cfg = {.cap = {.max_send_wr = 4, .max_recv_wr = 4},
                         .param = {.responder_resources = 4, .initiator_depth = 4}};
    sp_connect_pairs(&srv, &cli, &pair, 1, &cfg);
    sp_first_send(&srv, &cli, &pair, 1);
    (void)raw_wait_closed(fds[N_STALL - P], CLOSE_MS, "the oldest stalled startup to be reset");
    ASSERT_EQ(atomic_load(&n_evicted), (int)(N_STALL - P + 1));

    /* the others were kept and are still served: their Requests are announced */
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    for (uint32_t k = N_STALL - P + 1; k < N_STALL; k++) {
        ASSERT_TRUE(raw_open_now(fds[k]));
        ASSERT_EQ(send(fds[k], req, sizeof req, 0), (ssize_t)sizeof req);
        struct iwarp_cm_event *ev = sp_expect_event(&srv, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
        struct iwarp_cm_id *id = ev->id;
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
        ASSERT_EQ(iwarp_cm_reject(id, NULL, 0), 0);
        ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
    }
    ASSERT_EQ(atomic_load(&n_evicted), (int)(N_STALL - P + 1));

    sp_disconnect_pairs(&srv, &cli, &pair, 1, true);
    sp_destroy_pairs(&pair, 1);
    for (uint32_t k = 0; k < N_STALL; k++)
        close(fds[k]);
    sp_side_fini(&cli);
    sp_side_fini(&srv);
}

/* A Request that has arrived is not a stalled startup: the server accepts a batch of
 * connections (caller-mode progress: all of them in one turn of the loop) whose first has sent
 * its whole Request, and P more that are silent. The first is the oldest when the cap is
 * exceeded, but its Request is read before any eviction: it is announced, and the silent ones
 * stay within the cap. (Evicting it unread reset legitimate connects under a flood.) */
TEST(a_startup_whose_request_has_arrived_is_announced_not_evicted)
{
    atomic_store(&n_evicted, 0);
    struct sp_side srv;
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_CALLER;
    a.log = count_evictions;
    a.log_level = IWARP_LOG_INFO;
    a.comp_mask = IWARP_CTX_ATTR_MPA_PENDING_MAX | IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT;
    a.mpa_pending_max = P;
    a.mpa_startup_timeout_ms = 600000;
    sp_side_init_attr(&srv, NULL, &a, 16, false);
    uint16_t port = sp_listen(&srv);

    int fds[P + 1u];
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    fds[0] = raw_connect(port);
    ASSERT_EQ(send(fds[0], req, sizeof req, 0), (ssize_t)sizeof req);
    raw_wait_queued(fds[0], port, RAW_MPA_REQUEST_LEN, SP_WAIT_MS);
    for (uint32_t k = 1; k <= P; k++) {
        fds[k] = raw_connect(port);
        raw_wait_queued(fds[k], port, 0, SP_WAIT_MS);
    }
    /* one turn of the loop: the listener accepts all P + 1 */
    ASSERT_EQ(iwarp_ctx_progress(srv.ctx, 0), 0);
    ASSERT_EQ(atomic_load(&n_evicted), 0);
    for (uint32_t k = 0; k <= P; k++)
        ASSERT_TRUE(raw_open_now(fds[k]));
    struct iwarp_cm_event *ev = sp_expect_event(&srv, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_reject(id, NULL, 0), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
    for (uint32_t k = 0; k <= P; k++)
        close(fds[k]);
    sp_side_fini(&srv);
}

/* mpa_pending_max 0: no cap; the listener keeps every stalled startup. */
TEST(no_limit_keeps_every_stalled_startup)
{
    atomic_store(&n_evicted, 0);
    struct sp_side srv;
    srv_init(&srv, 0);
    uint16_t port = sp_listen(&srv);
    int fds[N_STALL];
    stall(fds, N_STALL, port);
    /* a Request on the oldest is still announced: nothing was evicted */
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    ASSERT_EQ(send(fds[0], req, sizeof req, 0), (ssize_t)sizeof req);
    struct iwarp_cm_event *ev = sp_expect_event(&srv, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_reject(id, NULL, 0), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
    for (uint32_t k = 1; k < N_STALL; k++)
        ASSERT_TRUE(raw_open_now(fds[k]));
    ASSERT_EQ(atomic_load(&n_evicted), 0);
    for (uint32_t k = 0; k < N_STALL; k++)
        close(fds[k]);
    sp_side_fini(&srv);
}
