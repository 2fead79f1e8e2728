/* SPDX-License-Identifier: BSD-2-Clause */
/* A peer that stops reading, over DDP over SCTP (usrsctp, loopback UDP): the SCTP counterpart of
 * test_stack_stalled_peer. The peer is a context in caller-driven progress that the test stops
 * calling into: its association stays up but nothing reads its UDP socket, so its SCTP stack
 * acknowledges nothing and our sends back up (usrsctp's send buffer, then the send queue).
 *  - While stalled the sender's memory stays bounded: posts beyond the send queue fail with
 *    IWARP_ERR_NOSPC, and nothing is allocated through the context's hooks.
 *  - After iwarp_ctx_attr.llp_timeout_ms without progress while data waits to go out, the
 *    association is aborted (RFC 4960 §9.1 ABORT): every WR not completed is flushed in order,
 *    QP_FATAL and DISCONNECTED are reported, within a bound; the peer, when it reads again,
 *    finds its side aborted too.
 *  - A peer that pauses for less than that and resumes loses nothing: every message arrives
 *    intact and in order.
 *  - An idle association (nothing to send), its peer silent too, is never dropped by the rule,
 *    however many timeouts pass. */
#define _GNU_SOURCE 1
#include <stdatomic.h>
#include <stdio.h>

#include "stack_pair.h"

#define KIB (1u << 10)

/* Allocations made through the sender's hooks. */
static atomic_uint allocs;
static void *count_malloc(size_t n, void *user)
{
    (void)user;
    atomic_fetch_add(&allocs, 1);
    return malloc(n);
}
static void *count_calloc(size_t k, size_t n, void *user)
{
    (void)user;
    atomic_fetch_add(&allocs, 1);
    return calloc(k, n);
}
static void count_free(void *p, void *user)
{
    (void)user;
    free(p);
}
static const struct iwarp_mem_hooks counting_hooks = {
    .malloc_fn = count_malloc, .calloc_fn = count_calloc, .free_fn = count_free};

/* A rig over SCTP whose server is in caller mode (it reads only while the test drives it) and
 * whose client has a progress thread, counted allocations and llp_timeout_ms = timeout_ms. */
static void stalled_rig_up(struct sp_rig *r, size_t len, uint32_t sq, uint32_t timeout_ms)
{
    memset(r, 0, sizeof *r);
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_CALLER;
    sp_side_init_attr(&r->srv, NULL, &a, 64, false);
    iwarp_ctx_attr_default(&a);
    a.mem = &counting_hooks;
    a.comp_mask = IWARP_CTX_ATTR_LLP_TIMEOUT;
    a.llp_timeout_ms = timeout_ms;
    sp_side_init_attr(&r->cli, NULL, &a, 2 * (int)sq + 8, false);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = sq, .max_recv_wr = 8}, .sq_sig_all = 1, .ps = IWARP_PS_SCTP};
    sp_rig_connect(r, len, &cfg);
}

/* Wait, polling the client only (the server is not driven: it does not read), until no
 * completion has come for 300 ms. Returns how many came (into wc), all successful and in order
 * from first_id; *last_ms: when the last one came (or the wait began). */
static uint32_t wait_for_stall(struct sp_rig *r, struct iwarp_wc *wc, uint32_t max,
                               uint64_t first_id, uint64_t *last_ms)
{
    uint32_t done = 0;
    *last_ms = sp_now_ms();
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (sp_now_ms() - *last_ms < 300u) {
        int k = iwarp_poll_cq(r->cli.cq, (int)(max - done), wc + done);
        ASSERT_TRUE(k >= 0);
        if (k > 0)
            *last_ms = sp_now_ms();
        done += (uint32_t)k;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the stream to stall (%u completions so far)", done);
        (void)iwarp_cq_wait(r->cli.cq, 10);
    }
    for (uint32_t k = 0; k < done; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc[k].wr_id, first_id + k);
    }
    return done;
}

#define SQ        32u
#define WRITE_LEN (64u * KIB)
#define N_WRITES                                                                \
    32u /* 2 MiB into a peer that acknowledges nothing: far more than usrsctp's \
           send buffer and our in-flight cap hold */
#define TIMEOUT_MS 1000u

TEST(a_peer_that_stops_reading_is_dropped_after_the_llp_timeout_with_a_flush)
{
    struct sp_rig r;
    stalled_rig_up(&r, WRITE_LEN, SQ, TIMEOUT_MS);
    sp_fill(r.cbuf, WRITE_LEN, 3);
    for (uint64_t k = 0; k < N_WRITES; k++)
        ASSERT_EQ(sp_post(r.pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r.cbuf, WRITE_LEN, r.cmr->lkey,
                          r.pair.cli.peer.addr, r.pair.cli.peer.rkey),
                  0);
    struct iwarp_wc wc[2 * SQ + 8];
    uint64_t last_ms;
    uint32_t done = wait_for_stall(&r, wc, N_WRITES, 0, &last_ms);
    ASSERT_TRUE(done < N_WRITES); /* really stalled in the middle */

    /* bounded: the send queue takes exactly the completed WRs' slots back, then refuses, and
     * nothing is allocated while the association waits */
    unsigned allocs_before = atomic_load(&allocs);
    uint32_t extra = 0;
    for (;;) {
        int rc = sp_post(r.pair.cli.qp, N_WRITES + extra, IWARP_WR_RDMA_WRITE, 0, r.cbuf, WRITE_LEN,
                         r.cmr->lkey, r.pair.cli.peer.addr, r.pair.cli.peer.rkey);
        if (rc == IWARP_ERR_NOSPC)
            break;
        ASSERT_EQ(rc, 0);
        ASSERT_TRUE(++extra <= SQ);
    }
    ASSERT_EQ_U(extra, done); /* exactly the slots of the WRs completed so far */
    deadline_pause_us(200000);
    ASSERT_EQ_U(atomic_load(&allocs), allocs_before);

    /* dropped after the timeout: every outstanding WR flushed, in posting order (a few may
     * still have gone into usrsctp first) */
    uint32_t outstanding = N_WRITES + extra - done;
    struct iwarp_wc *rest = wc + done;
    sp_poll_n(&r.cli, NULL, rest, outstanding);
    uint64_t dropped_ms = sp_now_ms();
    uint32_t flushed = 0;
    for (uint32_t k = 0; k < outstanding; k++) {
        ASSERT_EQ_U(rest[k].wr_id, done + k);
        if (rest[k].status == IWARP_WC_SUCCESS)
            ASSERT_EQ(flushed, 0);
        else {
            ASSERT_EQ(rest[k].status, IWARP_WC_WR_FLUSH_ERR);
            flushed++;
        }
    }
    ASSERT_TRUE(flushed > 0);
    /* not before the limit: the last chunk went into usrsctp at or after the last completion
     * (last_ms); not much after it either: the association is checked every timeout / 8, so
     * the drop comes at most an eighth of the timeout after the limit counted from the last
     * progress, which follows last_ms closely (the bound allows twice that, plus scheduling) */
    uint64_t waited = dropped_ms - last_ms;
    printf("  dropped %" PRIu64 " ms after the last completion (timeout %u ms)\n", waited,
           TIMEOUT_MS);
    ASSERT_TRUE(waited + 50u >= TIMEOUT_MS);
    ASSERT_TRUE(waited < TIMEOUT_MS + TIMEOUT_MS / 4u + 500u);
    sp_expect_ack(&r.cli, NULL, IWARP_CM_EVENT_DISCONNECTED);
    struct iwarp_async_event ae = sp_async(&r.cli);
    ASSERT_EQ(ae.event_type, IWARP_EVENT_QP_FATAL);
    ASSERT_TRUE(ae.element.qp == r.pair.cli.qp);
    r.pair.cli.established = false;

    /* RFC 4960 §9.1: the ABORT reaches the peer once it reads again: its side ends too */
    sp_expect_ack(&r.srv, NULL, IWARP_CM_EVENT_DISCONNECTED);
    r.pair.srv.established = false;

    sp_destroy_pairs(&r.pair, 1);
    ASSERT_EQ(iwarp_dereg_mr(r.smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(r.cmr), 0);
    sp_side_fini(&r.cli);
    sp_side_fini(&r.srv);
    free(r.sbuf);
    free(r.cbuf);
}

#define PAUSE_WRITES 32u

TEST(a_peer_that_pauses_for_less_than_the_timeout_loses_nothing)
{
    struct sp_rig r;
    stalled_rig_up(&r, (size_t)PAUSE_WRITES * WRITE_LEN, SQ, 4000);
    sp_fill(r.cbuf, (size_t)PAUSE_WRITES * WRITE_LEN, 11);
    ASSERT_EQ(sp_post_recv(r.pair.srv.qp, 500, NULL, 0, 0), 0);
    for (uint64_t k = 0; k < PAUSE_WRITES; k++)
        ASSERT_EQ(sp_post(r.pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r.cbuf + k * WRITE_LEN,
                          WRITE_LEN, r.cmr->lkey, r.pair.cli.peer.addr + k * WRITE_LEN,
                          r.pair.cli.peer.rkey),
                  0);
    struct iwarp_wc wc[PAUSE_WRITES + 1];
    uint64_t last_ms;
    uint32_t done = wait_for_stall(&r, wc, PAUSE_WRITES, 0, &last_ms);
    ASSERT_TRUE(done < PAUSE_WRITES);
    deadline_pause_us(1000000); /* about 1.3 s without reading in all */

    /* the peer reads again: the rest completes in order, and a Send behind the Writes finds
     * them placed (RFC 5040 §5.4: in posting order) */
    ASSERT_EQ(sp_post(r.pair.cli.qp, PAUSE_WRITES, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    sp_poll_n(&r.cli, &r.srv, wc + done, PAUSE_WRITES + 1u - done);
    for (uint32_t k = done; k <= PAUSE_WRITES; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc[k].wr_id, k);
    }
    struct iwarp_wc got = sp_poll_ok(&r.srv, &r.cli, IWARP_WC_RECV);
    ASSERT_EQ_U(got.wr_id, 500);
    SP_ASSERT_PATTERN(r.sbuf, (size_t)PAUSE_WRITES * WRITE_LEN, 11);
    ASSERT_TRUE(sp_try_event(&r.cli) == NULL);
    sp_rig_down(&r);
}

TEST(an_idle_association_is_not_dropped_by_the_llp_timeout)
{
    struct sp_rig r;
    stalled_rig_up(&r, WRITE_LEN, SQ, TIMEOUT_MS);
    /* Nothing to send, and the peer silent too (never driven): the rule must not fire however
     * many timeouts pass. A fixed window is right here: it checks that something does not
     * happen. The first Send's acknowledgement may still be owed when the window begins
     * (usrsctp's delayed SACK, sent from the peer's timer, which any context drives). */
    deadline_pause_us(4u * TIMEOUT_MS * 1000u);
    ASSERT_TRUE(sp_try_event(&r.cli) == NULL);
    struct iwarp_async_event ae;
    ASSERT_EQ(iwarp_get_async_event(r.cli.ctx, &ae), IWARP_ERR_BUSY);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_poll_cq(r.cli.cq, 1, &wc), 0);

    /* and it still carries data both ways */
    sp_fill(r.cbuf, WRITE_LEN, 21);
    ASSERT_EQ(sp_post_recv(r.pair.srv.qp, 600, NULL, 0, 0), 0);
    ASSERT_EQ(sp_post(r.pair.cli.qp, 1, IWARP_WR_RDMA_WRITE, 0, r.cbuf, WRITE_LEN, r.cmr->lkey,
                      r.pair.cli.peer.addr, r.pair.cli.peer.rkey),
              0);
    ASSERT_EQ(sp_post(r.pair.cli.qp, 2, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    ASSERT_EQ_U(sp_poll_ok(&r.cli, &r.srv, IWARP_WC_RDMA_WRITE).wr_id, 1);
    ASSERT_EQ_U(sp_poll_ok(&r.cli, &r.srv, IWARP_WC_SEND).wr_id, 2);
    ASSERT_EQ_U(sp_poll_ok(&r.srv, &r.cli, IWARP_WC_RECV).wr_id, 600);
    SP_ASSERT_PATTERN(r.sbuf, WRITE_LEN, 21);
    sp_rig_down(&r);
}
