/* SPDX-License-Identifier: BSD-2-Clause */
/* Four application threads post Sends, RDMA Writes and RDMA Reads on ONE QP and poll ONE CQ
 * while the progress thread runs; the peer (a thread of its own context) echoes every Send.
 *
 * verbs.h promises that every function may be called from any thread. Completions are taken
 * by whichever thread polls first, so each completion is checked by the thread that gets it:
 * a Read's sink must hold what the same application thread wrote just before (the Read
 * follows the Write on the stream), an echo must carry the octets its Send carried, each
 * wr_id must come back exactly once and the counts must add up. Receives are reposted by the
 * thread that took them. Run under ThreadSanitizer as the CTest test tsan.stack_threads (only
 * registered in a -DIWARP_TSAN=ON build) it must produce no report; in the normal suite ASan
 * and UBSan watch the same run. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <stdatomic.h>

#include "stack_pair.h"

#define N_THREADS 4u
#define N_ITERS   600u /* per thread, each a Send + Write + Read + echo */
#define W         8u   /* slots per thread: operations in flight per thread */
#define CHUNK     1024u
#define N_RECV    64u /* receives posted per side (>= N_THREADS * W echoes in flight) */

/* wr_id: iter << 4 | thread << 2 | op; receives: RECV_TAG | buffer */
enum { OP_SEND = 0, OP_WRITE = 1, OP_READ = 2, N_OPS = 3 };
#define RECV_TAG (1ull << 62)

/* Client buffer: per thread and slot a Send source, a Write source and a Read sink; then the
 * receive buffers. Server buffer: receive buffers, then per thread and slot a Write sink that
 * the Read reads back. */
#define SLOT_BYTES (3u * CHUNK)
#define C_RECV     (N_THREADS * W * SLOT_BYTES)
#define C_BYTES    (C_RECV + N_RECV * CHUNK)
#define S_SINK     (N_RECV * CHUNK)
#define S_BYTES    (S_SINK + N_THREADS * W * CHUNK)

struct shared {
    struct sp_side srv, cli;
    struct sp_pair pair;
    uint8_t *cbuf, *sbuf;
    struct iwarp_mr *cmr, *smr;
    atomic_uint pending[N_THREADS][W]; /* Read completion + echo still to come for a slot */
    atomic_uint outstanding;           /* client completions still to come, all threads */
    atomic_uint posters_done;
    atomic_uint n_ok[N_OPS];
    atomic_uint n_echo;
    atomic_uchar seen[N_THREADS][N_ITERS][N_OPS];
    atomic_uchar echo_seen[N_THREADS][N_ITERS];
    atomic_bool srv_stop;
    unsigned srv_recvs, srv_sends; /* the echo thread's own counts */
};

struct worker {
    struct shared *sh;
    uint32_t t;
    pthread_t tid;
};

static uint32_t len_of(uint32_t t, uint32_t i)
{
    return 8u + (t * 131u + i * 37u) % (CHUNK - 8u);
}

static uint32_t seed_of(uint32_t t, uint32_t i, int op)
{
    return (t * N_ITERS + i) * 4u + (uint32_t)op;
}

static uint8_t *c_slot(struct shared *sh, uint32_t t, uint32_t s, int op)
{
    return sh->cbuf + (size_t)(t * W + s) * SLOT_BYTES + (size_t)op * CHUNK;
}

static uint8_t *s_sink(struct shared *sh, uint32_t t, uint32_t s)
{
    return sh->sbuf + S_SINK + (size_t)(t * W + s) * CHUNK;
}

/* A Send's payload: the pattern with thread and iteration in its first 8 octets. */
static void make_send(uint8_t *p, uint32_t t, uint32_t i)
{
    sp_fill(p, len_of(t, i), seed_of(t, i, OP_SEND));
    memcpy(p, &t, 4);
    memcpy(p + 4, &i, 4);
}

/* Check one client completion (any thread may take any completion). */
static void handle_wc(struct shared *sh, const struct iwarp_wc *wc)
{
    if (wc->status != IWARP_WC_SUCCESS)
        harness_fail(__FILE__, __LINE__, "client wr_id %#" PRIx64 ": %s", wc->wr_id,
                     iwarp_wc_status_str(wc->status));
    ASSERT_EQ(wc->qp_num, sh->pair.cli.qp->qp_num);
    uint32_t t, i;
    if (wc->wr_id & RECV_TAG) {
        uint32_t b = (uint32_t)(wc->wr_id & ~RECV_TAG);
        ASSERT_TRUE(b < N_RECV);
        ASSERT_EQ(wc->opcode, IWARP_WC_RECV);
        uint8_t *p = sh->cbuf + C_RECV + (size_t)b * CHUNK;
        memcpy(&t, p, 4);
        memcpy(&i, p + 4, 4);
        ASSERT_TRUE(t < N_THREADS && i < N_ITERS);
        ASSERT_EQ(wc->byte_len, len_of(t, i));
        for (uint32_t k = 8; k < wc->byte_len; k++)
            ASSERT_EQ(p[k], sp_pat(seed_of(t, i, OP_SEND), k));
        ASSERT_EQ(atomic_fetch_add(&sh->echo_seen[t][i], 1), 0);
        atomic_fetch_add(&sh->n_echo, 1);
        /* the receive goes back from whichever thread took it */
        ASSERT_EQ(sp_post_recv(sh->pair.cli.qp, wc->wr_id, p, CHUNK, sh->cmr->lkey), 0);
        atomic_fetch_sub(&sh->pending[t][i % W], 1);
        atomic_fetch_sub(&sh->outstanding, 1);
        return;
    }
    int op = (int)(wc->wr_id & 3u);
    t = (uint32_t)(wc->wr_id >> 2) & 3u;
    i = (uint32_t)(wc->wr_id >> 4);
    ASSERT_TRUE(op < N_OPS && i < N_ITERS);
    static const enum iwarp_wc_opcode want[] = {IWARP_WC_SEND, IWARP_WC_RDMA_WRITE,
                                                IWARP_WC_RDMA_READ};
    ASSERT_EQ(wc->opcode, want[op]);
    ASSERT_EQ(wc->byte_len, len_of(t, i));
    ASSERT_EQ(atomic_fetch_add(&sh->seen[t][i][op], 1), 0);
    atomic_fetch_add(&sh->n_ok[op], 1);
    if (op == OP_READ) {
        /* what this Read brought back is what the same thread's Write put there */
        SP_ASSERT_PATTERN(c_slot(sh, t, i % W, OP_READ), len_of(t, i), seed_of(t, i, OP_WRITE));
        atomic_fetch_sub(&sh->pending[t][i % W], 1);
    }
    atomic_fetch_sub(&sh->outstanding, 1);
}

/* Poll a few completions and handle them; returns how many. */
static int poll_some(struct shared *sh)
{
    struct iwarp_wc wc[4];
    int n = iwarp_poll_cq(sh->cli.cq, 4, wc);
    ASSERT_TRUE(n >= 0);
    for (int k = 0; k < n; k++)
        handle_wc(sh, &wc[k]);
    return n;
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    struct shared *sh = wk->sh;
    uint32_t t = wk->t;
    struct iwarp_qp *qp = sh->pair.cli.qp;
    uint32_t lkey = sh->cmr->lkey, rkey = sh->pair.cli.peer.rkey;
    struct deadline dl = deadline_in_ms(120000u);
    for (uint32_t i = 0; i < N_ITERS; i++) {
        uint32_t s = i % W;
        while (atomic_load(&sh->pending[t][s]) != 0) {
            if (poll_some(sh) == 0)
                sched_yield();
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "thread %u: slot %u free for iteration %u", t, s, i);
        }
        uint32_t len = len_of(t, i);
        atomic_store(&sh->pending[t][s], 2u); /* the Read and the echo */
        atomic_fetch_add(&sh->outstanding, 4u);
        make_send(c_slot(sh, t, s, OP_SEND), t, i);
        sp_fill(c_slot(sh, t, s, OP_WRITE), len, seed_of(t, i, OP_WRITE));
        memset(c_slot(sh, t, s, OP_READ), 0, CHUNK);
        uint64_t id = (uint64_t)i << 4 | t << 2;
        uint64_t sink = (uintptr_t)s_sink(sh, t, s);
        ASSERT_EQ(
            sp_post(qp, id | OP_SEND, IWARP_WR_SEND, 0, c_slot(sh, t, s, OP_SEND), len, lkey, 0, 0),
            0);
        ASSERT_EQ(sp_post(qp, id | OP_WRITE, IWARP_WR_RDMA_WRITE, 0, c_slot(sh, t, s, OP_WRITE),
                          len, lkey, sink, rkey),
                  0);
        ASSERT_EQ(sp_post(qp, id | OP_READ, IWARP_WR_RDMA_READ, 0, c_slot(sh, t, s, OP_READ), len,
                          lkey, sink, rkey),
                  0);
        poll_some(sh);
    }
    atomic_fetch_add(&sh->posters_done, 1);
    /* keep taking completions (anyone's) until every thread's work is in */
    while (atomic_load(&sh->posters_done) < N_THREADS || atomic_load(&sh->outstanding) != 0) {
        if (poll_some(sh) == 0)
            sched_yield();
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "every thread's work in (%u posters done, %u outstanding)",
                          (unsigned)atomic_load(&sh->posters_done),
                          (unsigned)atomic_load(&sh->outstanding));
    }
    return NULL;
}

/* The peer: echo every Send back from its receive buffer, repost it when the echo is out. */
static void *echo_main(void *arg)
{
    struct shared *sh = arg;
    struct iwarp_qp *qp = sh->pair.srv.qp;
    uint32_t lkey = sh->smr->lkey;
    struct deadline dl = deadline_in_ms(120000u);
    while (!atomic_load(&sh->srv_stop) || sh->srv_sends != sh->srv_recvs) {
        struct iwarp_wc wc[8];
        int n = iwarp_poll_cq(sh->srv.cq, 8, wc);
        ASSERT_TRUE(n >= 0);
        if (n == 0) {
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "the server's completions (%u Sends echoed of %u received)",
                              (unsigned)sh->srv_sends, (unsigned)sh->srv_recvs);
            (void)iwarp_cq_wait(sh->srv.cq, 1);
            continue;
        }
        for (int k = 0; k < n; k++) {
            if (wc[k].status != IWARP_WC_SUCCESS)
                harness_fail(__FILE__, __LINE__, "server wr_id %#" PRIx64 ": %s", wc[k].wr_id,
                             iwarp_wc_status_str(wc[k].status));
            uint8_t *p = sh->sbuf + (size_t)wc[k].wr_id * CHUNK;
            if (wc[k].opcode == IWARP_WC_RECV) {
                sh->srv_recvs++;
                ASSERT_EQ(sp_post(qp, wc[k].wr_id, IWARP_WR_SEND, 0, p, wc[k].byte_len, lkey, 0, 0),
                          0);
            } else {
                ASSERT_EQ(wc[k].opcode, IWARP_WC_SEND);
                sh->srv_sends++;
                ASSERT_EQ(sp_post_recv(qp, wc[k].wr_id, p, CHUNK, lkey), 0);
            }
        }
    }
    return NULL;
}

TEST(four_threads_post_and_poll_one_qp_while_the_progress_thread_runs)
{
    struct shared *sh = calloc(1, sizeof *sh);
    ASSERT_TRUE(sh != NULL);
    sp_side_init(&sh->srv, IWARP_PROGRESS_THREAD, 256);
    sp_side_init(&sh->cli, IWARP_PROGRESS_THREAD, 512);
    sh->cbuf = calloc(1, C_BYTES);
    sh->sbuf = calloc(1, S_BYTES);
    ASSERT_TRUE(sh->cbuf && sh->sbuf);
    sh->cmr = sp_reg(&sh->cli, sh->cbuf, C_BYTES, 0);
    sh->smr = sp_reg(&sh->srv, sh->sbuf, S_BYTES, 0);
    sh->pair.srv.mine = (struct sp_advert){.rkey = sh->smr->rkey, .addr = (uintptr_t)sh->sbuf};
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 128,
                .max_recv_wr = N_RECV + 1u,
                .max_send_sge = 1,
                .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.responder_resources = 32, .initiator_depth = 32},
    };
    sp_connect_pairs(&sh->srv, &sh->cli, &sh->pair, 1, &cfg);
    sp_first_send(&sh->srv, &sh->cli, &sh->pair, 1);
    for (uint32_t b = 0; b < N_RECV; b++) {
        ASSERT_EQ(
            sp_post_recv(sh->pair.srv.qp, b, sh->sbuf + (size_t)b * CHUNK, CHUNK, sh->smr->lkey),
            0);
        ASSERT_EQ(sp_post_recv(sh->pair.cli.qp, RECV_TAG | b, sh->cbuf + C_RECV + (size_t)b * CHUNK,
                               CHUNK, sh->cmr->lkey),
                  0);
    }

    uint64_t t0 = sp_now_ms();
    pthread_t echo;
    ASSERT_EQ(pthread_create(&echo, NULL, echo_main, sh), 0);
    struct worker wk[N_THREADS];
    for (uint32_t t = 0; t < N_THREADS; t++) {
        wk[t] = (struct worker){.sh = sh, .t = t};
        ASSERT_EQ(pthread_create(&wk[t].tid, NULL, worker_main, &wk[t]), 0);
    }
    for (uint32_t t = 0; t < N_THREADS; t++)
        ASSERT_EQ(pthread_join(wk[t].tid, NULL), 0);
    atomic_store(&sh->srv_stop, true);
    ASSERT_EQ(pthread_join(echo, NULL), 0);
    fprintf(stderr, "  %u threads x %u iterations: %.2fs\n", N_THREADS, N_ITERS,
            (double)(sp_now_ms() - t0) / 1000.0);

    const unsigned total = N_THREADS * N_ITERS;
    for (int op = 0; op < N_OPS; op++)
        ASSERT_EQ(atomic_load(&sh->n_ok[op]), total);
    ASSERT_EQ(atomic_load(&sh->n_echo), total);
    ASSERT_EQ(sh->srv_recvs, total);
    ASSERT_EQ(sh->srv_sends, total);
    for (uint32_t t = 0; t < N_THREADS; t++)
        for (uint32_t i = 0; i < N_ITERS; i++) {
            ASSERT_EQ(atomic_load(&sh->echo_seen[t][i]), 1);
            for (int op = 0; op < N_OPS; op++)
                ASSERT_EQ(atomic_load(&sh->seen[t][i][op]), 1);
        }
    sp_expect_no_wc(&sh->cli, &sh->srv);
    sp_expect_no_wc(&sh->srv, &sh->cli);

    /* a graceful close from the server this time: the posted receives flush */
    sp_disconnect_pairs(&sh->srv, &sh->cli, &sh->pair, 1, false);
    struct iwarp_wc wc[N_RECV];
    sp_poll_n(&sh->cli, &sh->srv, wc, N_RECV);
    for (uint32_t k = 0; k < N_RECV; k++)
        ASSERT_EQ(wc[k].status, IWARP_WC_WR_FLUSH_ERR);
    sp_poll_n(&sh->srv, &sh->cli, wc, N_RECV);
    for (uint32_t k = 0; k < N_RECV; k++)
        ASSERT_EQ(wc[k].status, IWARP_WC_WR_FLUSH_ERR);
    sp_destroy_pairs(&sh->pair, 1);
    ASSERT_EQ(iwarp_dereg_mr(sh->cmr), 0);
    ASSERT_EQ(iwarp_dereg_mr(sh->smr), 0);
    sp_side_fini(&sh->cli);
    sp_side_fini(&sh->srv);
    free(sh->cbuf);
    free(sh->sbuf);
    free(sh);
}
