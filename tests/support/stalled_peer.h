/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A peer that stops reading, shared by test_stack_stalled_peer (loopback TCP) and
 * test_stack_sctp_stalled_peer (DDP over SCTP): a rig (stack_pair.h) whose server is a context
 * in caller-driven progress, which reads only while the test calls into it, and whose client
 * has a progress thread, counted allocations (alloc_count.h) and iwarp_ctx_attr.llp_timeout_ms;
 * the wait until the client's stream has stalled; and the two scenarios both transports run,
 * each test checking its own bounds: dropped after the limit, paused for less.
 *
 * Everything is static inline: each test file is its own executable.
 */
#ifndef IWARP_TESTS_STALLED_PEER_H
#define IWARP_TESTS_STALLED_PEER_H

#include "alloc_count.h"
#include "stack_pair.h"

/* Sets r up over ps with len-octet buffers, sq send WRs on the client and its llp_timeout_ms
 * (0: no limit); the client's allocations are counted in allocs, which this initialises and
 * which must outlive the rig. */
static inline void stall_rig_up(struct sp_rig *r, struct alloc_count *allocs,
                                enum iwarp_port_space ps, size_t len, uint32_t sq,
                                uint32_t timeout_ms)
{
    memset(r, 0, sizeof *r);
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_CALLER;
    sp_side_init_attr(&r->srv, NULL, &a, 64, false);
    alloc_count_init(allocs, 0);
    iwarp_ctx_attr_default(&a);
    a.mem = &allocs->hooks;
    a.comp_mask = IWARP_CTX_ATTR_LLP_TIMEOUT;
    a.llp_timeout_ms = timeout_ms;
    sp_side_init_attr(&r->cli, NULL, &a, 2 * (int)sq + 8, false);
    struct sp_cfg cfg = {.cap = {.max_send_wr = sq, .max_recv_wr = 8}, .sq_sig_all = 1, .ps = ps};
    sp_rig_connect(r, len, &cfg);
}

/* Wait, polling the client only (the server is not driven: it does not read), until no
 * completion has come for 300 ms. Returns how many came (into wc), all successful and in order
 * from first_id; *last_ms: when the last one came (or the wait began). */
static inline uint32_t stall_wait(struct sp_rig *r, struct iwarp_wc *wc, uint32_t max,
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

/* Post len-octet Writes from the start of the client's buffer, wr_id first_id on, until the
 * send queue refuses (IWARP_ERR_NOSPC; at most sq taken), with nothing allocated through
 * allocs meanwhile: the stalled sender's memory stays bounded. Returns how many it took. */
static inline uint32_t stall_fill_sq(struct sp_rig *r, struct alloc_count *allocs,
                                     uint64_t first_id, uint32_t len, uint32_t sq)
{
    unsigned allocs_before = atomic_load(&allocs->allocs);
    uint32_t taken = 0;
    for (;;) {
        int rc = sp_post(r->pair.cli.qp, first_id + taken, IWARP_WR_RDMA_WRITE, 0, r->cbuf, len,
                         r->cmr->lkey, r->pair.cli.peer.addr, r->pair.cli.peer.rkey);
        if (rc == IWARP_ERR_NOSPC)
            break;
        ASSERT_EQ(rc, 0);
        ASSERT_TRUE(++taken <= sq);
    }
    deadline_pause_us(200000); /* a window in which an allocation must not come */
    ASSERT_EQ_U(atomic_load(&allocs->allocs), allocs_before);
    return taken;
}

/* The client's n outstanding WRs, wr_id first_id on, complete in posting order once the
 * connection is dropped: some may still succeed, then every later one is flushed, and at least
 * one is. Returns when the last completion came (ms). */
static inline uint64_t stall_expect_flush(struct sp_rig *r, struct iwarp_wc *wc, uint64_t first_id,
                                          uint32_t n)
{
    sp_poll_n(&r->cli, NULL, wc, n);
    uint64_t dropped_ms = sp_now_ms();
    uint32_t flushed = 0;
    for (uint32_t k = 0; k < n; k++) {
        ASSERT_EQ_U(wc[k].wr_id, first_id + k);
        if (wc[k].status == IWARP_WC_SUCCESS) {
            ASSERT_EQ(flushed, 0);
        } else {
            ASSERT_EQ(wc[k].status, IWARP_WC_WR_FLUSH_ERR);
            flushed++;
        }
    }
    ASSERT_TRUE(flushed > 0);
    return dropped_ms;
}

/* What stall_until_dropped saw. */
struct stall_drop {
    uint32_t done;      /* Writes completed before the stream stalled */
    uint32_t extra;     /* Writes the send queue took once it had */
    uint64_t waited_ms; /* from the last completion before the stall to the flush */
};

/* A peer that stops reading is dropped after the limit: the client posts n Writes of len
 * octets (far more than the path holds) and the stream stalls in the middle; the send queue
 * then takes only the freed slots, nothing allocated (stall_fill_sq); once the limit has passed
 * every outstanding WR is flushed in order (stall_expect_flush), and the client hears
 * DISCONNECTED and QP_FATAL (its end is marked down). wc: room for n + sq completions. */
static inline struct stall_drop stall_until_dropped(struct sp_rig *r, struct alloc_count *allocs,
                                                    struct iwarp_wc *wc, uint32_t n, uint32_t len,
                                                    uint32_t sq)
{
    struct stall_drop d;
    sp_fill(r->cbuf, len, 3);
    for (uint64_t k = 0; k < n; k++)
        ASSERT_EQ(sp_post(r->pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r->cbuf, len, r->cmr->lkey,
                          r->pair.cli.peer.addr, r->pair.cli.peer.rkey),
                  0);
    uint64_t last_ms;
    d.done = stall_wait(r, wc, n, 0, &last_ms);
    ASSERT_TRUE(d.done < n); /* really stalled in the middle */
    d.extra = stall_fill_sq(r, allocs, n, len, sq);
    uint64_t dropped_ms = stall_expect_flush(r, wc + d.done, d.done, n + d.extra - d.done);
    d.waited_ms = dropped_ms - last_ms;
    sp_expect_ack(&r->cli, NULL, IWARP_CM_EVENT_DISCONNECTED);
    struct iwarp_async_event ae = sp_async(&r->cli);
    ASSERT_EQ(ae.event_type, IWARP_EVENT_QP_FATAL);
    ASSERT_TRUE(ae.element.qp == r->pair.cli.qp);
    r->pair.cli.established = false;
    return d;
}

/* A peer that pauses for less than the limit loses nothing: the client Writes its whole
 * buffer to the server's as n Writes of len octets (pattern seed), the stream stalls, the
 * server is not driven for a second more; then it reads again, the rest completes in order, a
 * Send behind the Writes finds them placed (RFC 5040 §5.4: in posting order), and the
 * connection is still up. wc: room for n + 1 completions. */
static inline void stall_pause_then_resume(struct sp_rig *r, struct iwarp_wc *wc, uint32_t n,
                                           uint32_t len, uint32_t seed)
{
    size_t all = (size_t)n * len;
    sp_fill(r->cbuf, all, seed);
    ASSERT_EQ(sp_post_recv(r->pair.srv.qp, 500, NULL, 0, 0), 0);
    for (uint64_t k = 0; k < n; k++)
        ASSERT_EQ(sp_post(r->pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r->cbuf + k * len, len,
                          r->cmr->lkey, r->pair.cli.peer.addr + k * len, r->pair.cli.peer.rkey),
                  0);
    uint64_t last_ms;
    uint32_t done = stall_wait(r, wc, n, 0, &last_ms);
    ASSERT_TRUE(done < n);
    deadline_pause_us(1000000); /* about 1.3 s without reading in all */

    ASSERT_EQ(sp_post(r->pair.cli.qp, n, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    sp_poll_n(&r->cli, &r->srv, wc + done, n + 1u - done);
    for (uint32_t k = done; k <= n; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc[k].wr_id, k);
    }
    ASSERT_EQ_U(sp_poll_ok(&r->srv, &r->cli, IWARP_WC_RECV).wr_id, 500);
    SP_ASSERT_PATTERN(r->sbuf, all, seed);
    ASSERT_TRUE(sp_try_event(&r->cli) == NULL);
}

#endif
