/* SPDX-License-Identifier: BSD-2-Clause */
/* A peer that stops reading, over real loopback TCP. The peer is a context in caller-driven
 * progress that the test stops calling into: its socket stays open and its kernel keeps
 * acknowledging, but nothing reads, so its receive window shuts and our sends back up.
 *  - While stalled the sender's memory stays bounded: posts beyond the send queue fail with
 *    IWARP_ERR_NOSPC, and nothing is allocated.
 *  - After iwarp_ctx_attr.llp_timeout_ms the connection is dropped: every WR not completed is
 *    flushed in order, QP_FATAL and DISCONNECTED are reported (TCP_USER_TIMEOUT).
 *  - A peer that pauses for less than that and resumes loses nothing.
 *  - Sockets carry the limit: 60000 ms by default, none when the application asks for 0.
 * The same over DDP over SCTP: test_stack_sctp_stalled_peer. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>

#include "stack_pair.h"

#define MIB (1u << 20)

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

/* A rig whose server is in caller mode (it reads only while the test drives it) and whose client
 * has a progress thread, counted allocations and llp_timeout_ms (set: the bit and the value). */
static void stalled_rig_up(struct sp_rig *r, size_t len, uint32_t sq, bool set, uint32_t timeout_ms)
{
    memset(r, 0, sizeof *r);
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_CALLER;
    sp_side_init_attr(&r->srv, NULL, &a, 64, false);
    iwarp_ctx_attr_default(&a);
    a.mem = &counting_hooks;
    if (set) {
        a.comp_mask = IWARP_CTX_ATTR_LLP_TIMEOUT;
        a.llp_timeout_ms = timeout_ms;
    }
    sp_side_init_attr(&r->cli, NULL, &a, 2 * (int)sq + 8, false);
    struct sp_cfg cfg = {.cap = {.max_send_wr = sq, .max_recv_wr = 8}, .sq_sig_all = 1};
    sp_rig_connect(r, len, &cfg);
}

/* Wait, polling the client only (the server is not driven: it does not read), until no
 * completion has come for 300 ms. Returns how many came (into wc), all successful and in order
 * from first_id; *last_ms: when the last one came. */
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

#define SQ       32u
#define N_WRITES 32u /* 32 MiB into a peer that does not read: far more than loopback buffers */

TEST(a_peer_that_stops_reading_is_dropped_after_the_llp_timeout_with_a_flush)
{
    const uint32_t timeout_ms = 1500;
    struct sp_rig r;
    stalled_rig_up(&r, MIB, SQ, true, timeout_ms);
    sp_fill(r.cbuf, MIB, 3);
    for (uint64_t k = 0; k < N_WRITES; k++)
        ASSERT_EQ(sp_post(r.pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r.cbuf, MIB, r.cmr->lkey,
                          r.pair.cli.peer.addr, r.pair.cli.peer.rkey),
                  0);
    struct iwarp_wc wc[2 * SQ + 8];
    uint64_t last_ms;
    uint32_t done = wait_for_stall(&r, wc, N_WRITES, 0, &last_ms);
    ASSERT_TRUE(done < N_WRITES); /* really stalled in the middle */

    /* bounded: the send queue takes exactly the completed WRs' slots back, then refuses, and
     * nothing is allocated while the connection waits */
    unsigned allocs_before = atomic_load(&allocs);
    uint32_t extra = 0;
    for (;;) {
        int rc = sp_post(r.pair.cli.qp, N_WRITES + extra, IWARP_WR_RDMA_WRITE, 0, r.cbuf, MIB,
                         r.cmr->lkey, r.pair.cli.peer.addr, r.pair.cli.peer.rkey);
        if (rc == IWARP_ERR_NOSPC)
            break;
        ASSERT_EQ(rc, 0);
        ASSERT_TRUE(++extra <= SQ);
    }
    ASSERT_TRUE(extra >= done); /* at least the slots of the WRs completed so far */
    deadline_pause_us(200000);
    ASSERT_EQ_U(atomic_load(&allocs), allocs_before);

    /* dropped after the timeout: every outstanding WR flushed, in posting order (a few may
     * still have gone into the socket first) */
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
    /* not before the limit: the window shut at most a few milliseconds before the last write
     * the kernel took (last_ms); the kernel checks at its probe times, so later is allowed */
    uint64_t waited = dropped_ms - last_ms;
    printf("  dropped %" PRIu64 " ms after the last completion (timeout %u ms)\n", waited,
           timeout_ms);
    ASSERT_TRUE(waited + 100u >= timeout_ms);
    ASSERT_TRUE(waited < timeout_ms + 10000u);
    sp_expect_ack(&r.cli, NULL, IWARP_CM_EVENT_DISCONNECTED);
    struct iwarp_async_event ae = sp_async(&r.cli);
    ASSERT_EQ(ae.event_type, IWARP_EVENT_QP_FATAL);
    ASSERT_TRUE(ae.element.qp == r.pair.cli.qp);
    r.pair.cli.established = false;

    /* the stalled side is still whole: its teardown is the abortive one */
    sp_destroy_pairs(&r.pair, 1);
    ASSERT_EQ(iwarp_dereg_mr(r.smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(r.cmr), 0);
    sp_side_fini(&r.cli);
    sp_side_fini(&r.srv);
    free(r.sbuf);
    free(r.cbuf);
}

#define PAUSE_WRITES 16u

TEST(a_peer_that_pauses_for_less_than_the_timeout_loses_nothing)
{
    struct sp_rig r;
    stalled_rig_up(&r, (size_t)PAUSE_WRITES * MIB, SQ, true, 4000);
    sp_fill(r.cbuf, (size_t)PAUSE_WRITES * MIB, 11);
    ASSERT_EQ(sp_post_recv(r.pair.srv.qp, 500, NULL, 0, 0), 0);
    for (uint64_t k = 0; k < PAUSE_WRITES; k++)
        ASSERT_EQ(sp_post(r.pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r.cbuf + k * MIB, MIB,
                          r.cmr->lkey, r.pair.cli.peer.addr + k * MIB, r.pair.cli.peer.rkey),
                  0);
    struct iwarp_wc wc[PAUSE_WRITES + 1];
    uint64_t last_ms;
    uint32_t done = wait_for_stall(&r, wc, PAUSE_WRITES, 0, &last_ms);
    ASSERT_TRUE(done < PAUSE_WRITES);
    deadline_pause_us(1000000); /* about 1.3 s without reading in all */

    /* the peer reads again: the rest completes, and a Send behind the Writes finds them placed */
    ASSERT_EQ(sp_post(r.pair.cli.qp, PAUSE_WRITES, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    sp_poll_n(&r.cli, &r.srv, wc + done, PAUSE_WRITES + 1u - done);
    for (uint32_t k = done; k <= PAUSE_WRITES; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc[k].wr_id, k);
    }
    struct iwarp_wc got = sp_poll_ok(&r.srv, &r.cli, IWARP_WC_RECV);
    ASSERT_EQ_U(got.wr_id, 500);
    SP_ASSERT_PATTERN(r.sbuf, (size_t)PAUSE_WRITES * MIB, 11);
    sp_rig_down(&r);
}

/* The TCP_USER_TIMEOUT of every connected TCP socket of this process, in fd order. */
static int connected_socket_timeouts(unsigned *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    int fds[256], nfds = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && nfds < 256)
        if (de->d_name[0] != '.')
            fds[nfds++] = atoi(de->d_name);
    closedir(d);
    for (int i = 0; i < nfds && n < max; i++) {
        struct stat st;
        int type = 0, listening = 0;
        socklen_t len = sizeof type;
        if (fstat(fds[i], &st) != 0 || !S_ISSOCK(st.st_mode) ||
            getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
            continue;
        len = sizeof listening;
        if (getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening)
            continue;
        unsigned v = 0;
        len = sizeof v;
        if (getsockopt(fds[i], IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &len) == 0)
            out[n++] = v;
    }
    return n;
}

TEST(sockets_carry_the_limit_60_s_by_default_none_for_0)
{
    struct sp_rig r;
    stalled_rig_up(&r, 4096, 8, true, 0); /* server: the default; client: 0, no limit */
    unsigned t[8];
    int n = connected_socket_timeouts(t, 8);
    ASSERT_EQ(n, 2);
    ASSERT_TRUE((t[0] == 60000u && t[1] == 0u) || (t[0] == 0u && t[1] == 60000u));
    sp_rig_down(&r);
}
