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
#include <stdio.h>

#include "stalled_peer.h"

#define KIB (1u << 10)

/* The client's allocations (stall_rig_up). */
static struct alloc_count allocs;

#define SQ        32u
#define WRITE_LEN (64u * KIB)
#define N_WRITES                                                                \
    32u /* 2 MiB into a peer that acknowledges nothing: far more than usrsctp's \
           send buffer and our in-flight cap hold */
#define TIMEOUT_MS 1000u

TEST(a_peer_that_stops_reading_is_dropped_after_the_llp_timeout_with_a_flush)
{
    struct sp_rig r;
    stall_rig_up(&r, &allocs, IWARP_PS_SCTP, WRITE_LEN, SQ, TIMEOUT_MS);
    struct iwarp_wc wc[N_WRITES + SQ];
    struct stall_drop d = stall_until_dropped(&r, &allocs, wc, N_WRITES, WRITE_LEN, SQ);
    ASSERT_EQ_U(d.extra, d.done); /* exactly the slots of the WRs completed so far */
    /* not before the limit: the last chunk went into usrsctp at or after the last completion;
     * not much after it either: the association is checked every timeout / 8, so the drop
     * comes at most an eighth of the timeout after the limit counted from the last progress,
     * which follows the last completion closely (the bound allows twice that, plus
     * scheduling) */
    printf("  dropped %" PRIu64 " ms after the last completion (timeout %u ms)\n", d.waited_ms,
           TIMEOUT_MS);
    ASSERT_TRUE(d.waited_ms + 50u >= TIMEOUT_MS);
    ASSERT_TRUE(d.waited_ms < TIMEOUT_MS + TIMEOUT_MS / 4u + 500u);

    /* RFC 4960 §9.1: the ABORT reaches the peer once it reads again: its side ends too */
    sp_expect_ack(&r.srv, NULL, IWARP_CM_EVENT_DISCONNECTED);
    r.pair.srv.established = false;

    sp_destroy_pairs(&r.pair, 1);
    sp_rig_release(&r);
}

#define PAUSE_WRITES 32u

TEST(a_peer_that_pauses_for_less_than_the_timeout_loses_nothing)
{
    struct sp_rig r;
    stall_rig_up(&r, &allocs, IWARP_PS_SCTP, (size_t)PAUSE_WRITES * WRITE_LEN, SQ, 4000);
    struct iwarp_wc wc[PAUSE_WRITES + 1];
    stall_pause_then_resume(&r, wc, PAUSE_WRITES, WRITE_LEN, 11);
    sp_rig_down(&r);
}

TEST(an_idle_association_is_not_dropped_by_the_llp_timeout)
{
    struct sp_rig r;
    stall_rig_up(&r, &allocs, IWARP_PS_SCTP, WRITE_LEN, SQ, TIMEOUT_MS);
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
