/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Waiting for completion events (iwarp_get_cq_event, iwarp_get_cq_event_timeout) with a
 * progress thread, over loopback TCP:
 *  - the timeout: none fired within it is IWARP_ERR_TIMEDOUT, a zero timeout makes one pass,
 *    an event that fired is taken at once, a non-blocking channel says IWARP_ERR_BUSY;
 *  - the waiting thread makes the progress itself: RDMA Reads answered by the server's
 *    progress thread, each waited for with iwarp_get_cq_event_timeout; the client's Read
 *    Responses are received (CRC on: staged and copied into the sink) mostly by the waiting
 *    thread, as its own copy counter shows (util/copy.h counts per thread). Before, the
 *    client's progress thread received everything and woke the waiter through the channel.
 *    Once the client stops waiting its progress thread is back: the server's Reads of the
 *    client's memory, which only that thread can answer, complete;
 *  - a thread that waits in iwarp_ctx_progress (as a write-latency sink waits for RDMA Writes
 *    into its memory, which raise no completion) receives what comes itself, its own copy
 *    counter shows, the progress thread standing aside; once it stops waiting, that thread is
 *    back. Sends here: their completion lets the test look at the buffer without racing the
 *    placement;
 *  - iwarp_cq_wait (caller mode) wakes at once for a completion another thread makes;
 *  - caller mode, two application threads waiting in the loop at once (rping's shape: a CM
 *    thread in iwarp_cm_get_event, a CQ thread in iwarp_get_cq_event): each wakes at once for
 *    what it waits for, whichever thread made it. One wake fd wakes one waiter; before, the
 *    other thread could take the wake and leave the first asleep until its wait timed out, and
 *    a CM event queued by another thread (iwarp_cm_resolve_addr) woke nobody: rping stalled.
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <pthread.h>

#include "stack_pair.h"
#include "util/copy.h"

enum { BUF = 65536, READ_LEN = 4096, READS = 200 };

static void rig_up(struct sp_rig *r)
{
    memset(r, 0, sizeof *r);
    sp_side_init(&r->srv, IWARP_PROGRESS_THREAD, 64);
    sp_side_init_full(&r->cli, NULL, IWARP_PROGRESS_THREAD, NULL, 0, 64, true);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.crc = true, .responder_resources = 1, .initiator_depth = 1}};
    sp_rig_connect(r, BUF, &cfg);
}

/* One signaled Read of READ_LEN octets at off into the client's buffer at off. */
static void post_read(struct sp_rig *r, uint32_t off)
{
    ASSERT_EQ(sp_post(r->pair.cli.qp, off, IWARP_WR_RDMA_READ, 0, r->cbuf + off, READ_LEN,
                      r->cmr->lkey, r->pair.cli.peer.addr + off, r->pair.cli.peer.rkey),
              0);
}

/* Nobody waits on the client now: its progress thread answers the server's Read (seed: the
 * pattern it reads). */
static void expect_progress_thread_back(struct sp_rig *r, uint32_t seed)
{
    sp_fill(r->cbuf, READ_LEN, seed);
    ASSERT_EQ(sp_post(r->pair.srv.qp, 1, IWARP_WR_RDMA_READ, 0, r->sbuf, READ_LEN, r->smr->lkey,
                      r->pair.srv.peer.addr, r->pair.srv.peer.rkey),
              0);
    sp_poll_ok(&r->srv, NULL, IWARP_WC_RDMA_READ);
    SP_ASSERT_PATTERN(r->sbuf, READ_LEN, seed);
}

/* The next completion of the client's CQ, waited for through its channel. */
static struct iwarp_wc next_wc(struct sp_rig *r)
{
    struct iwarp_wc wc;
    for (;;) {
        ASSERT_EQ(iwarp_req_notify_cq(r->cli.cq, 0), 0);
        if (iwarp_poll_cq(r->cli.cq, 1, &wc) == 1)
            return wc;
        struct iwarp_cq *cq;
        void *ctx;
        ASSERT_EQ(iwarp_get_cq_event_timeout(r->cli.comp, &cq, &ctx, SP_WAIT_MS), 0);
        ASSERT_TRUE(cq == r->cli.cq && ctx == &r->cli);
        iwarp_ack_cq_events(cq, 1);
    }
}

TEST(the_timeout_and_a_non_blocking_channel)
{
    struct sp_rig r;
    rig_up(&r);
    struct iwarp_cq *cq;
    void *ctx;
    ASSERT_EQ(iwarp_req_notify_cq(r.cli.cq, 0), 0);
    uint64_t t0 = sp_now_ms();
    ASSERT_EQ(iwarp_get_cq_event_timeout(r.cli.comp, &cq, &ctx, 50), IWARP_ERR_TIMEDOUT);
    ASSERT_TRUE(sp_now_ms() - t0 >= 49);
    ASSERT_EQ(iwarp_get_cq_event_timeout(r.cli.comp, &cq, &ctx, 0), IWARP_ERR_TIMEDOUT);
    ASSERT_EQ(iwarp_get_cq_event(r.cli.comp, &cq, &ctx), IWARP_ERR_BUSY); /* sp: non-blocking */
    /* an event that fires while nobody waits is taken at once, with no wait */
    sp_fill(r.sbuf, READ_LEN, 3);
    post_read(&r, 0);
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    int rc;
    while ((rc = iwarp_get_cq_event_timeout(r.cli.comp, &cq, &ctx, 0)) == IWARP_ERR_TIMEDOUT)
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%s", "the Read's completion event");
    ASSERT_EQ(rc, 0);
    ASSERT_TRUE(cq == r.cli.cq);
    iwarp_ack_cq_events(cq, 1);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_poll_cq(r.cli.cq, 1, &wc), 1);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    SP_ASSERT_PATTERN(r.cbuf, READ_LEN, 3);
    ASSERT_EQ(iwarp_get_cq_event_timeout(NULL, &cq, &ctx, 0), IWARP_ERR_INVAL);
    sp_rig_down(&r);
}

TEST(the_waiting_thread_makes_the_progress_itself)
{
    struct sp_rig r;
    rig_up(&r);
    sp_fill(r.sbuf, BUF, 9);
    uint64_t before = iwarp_copied_octets;
    for (uint32_t k = 0; k < READS; k++) {
        uint32_t off = (k * READ_LEN) % BUF;
        post_read(&r, off);
        struct iwarp_wc wc = next_wc(&r);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc.wr_id, off);
    }
    SP_ASSERT_PATTERN(r.cbuf, BUF, 9);
    uint64_t mine = iwarp_copied_octets - before;
    uint64_t all = (uint64_t)READS * READ_LEN;
    printf("  the waiting thread copied %.2f octets per Read Response octet (staged: one copy "
           "each, and the headers read ahead moved)\n",
           (double)mine / (double)all);
    /* Most, not all: in the moments the thread is not waiting the progress thread comes back
     * (within a millisecond) and may take a Response first. */
    ASSERT_TRUE(mine >= all / 2);

    expect_progress_thread_back(&r, 11);
    sp_rig_down(&r);
}

/* The server's side of the next test, in a thread of its own: Send k once the client has
 * posted its receive (ready > k) and is waiting, a little later, so that the Send arrives
 * while the client's thread sleeps in the loop. */
struct sender {
    struct sp_rig *r;
    uint32_t ready; /* receives the client has posted (atomic) */
};

static void *send_each(void *arg)
{
    struct sender *sd = arg;
    for (uint32_t k = 0; k < READS; k++) {
        while (__atomic_load_n(&sd->ready, __ATOMIC_ACQUIRE) <= k)
            deadline_pause_us(50);
        deadline_pause_us(300);
        uint32_t off = (k * READ_LEN) % BUF;
        ASSERT_EQ(sp_post(sd->r->pair.srv.qp, k, IWARP_WR_SEND, 0, sd->r->sbuf + off, READ_LEN,
                          sd->r->smr->lkey, 0, 0),
                  0);
        sp_poll_ok(&sd->r->srv, NULL, IWARP_WC_SEND);
    }
    return NULL;
}

TEST(a_thread_waiting_in_ctx_progress_receives_itself)
{
    struct sp_rig r;
    rig_up(&r);
    sp_fill(r.sbuf, BUF, 5);
    struct sender sd = {.r = &r};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, send_each, &sd), 0);
    uint64_t before = iwarp_copied_octets;
    for (uint32_t k = 0; k < READS; k++) {
        uint32_t off = (k * READ_LEN) % BUF;
        ASSERT_EQ(sp_post_recv(r.pair.cli.qp, k, r.cbuf + off, READ_LEN, r.cmr->lkey), 0);
        __atomic_store_n(&sd.ready, k + 1, __ATOMIC_RELEASE);
        /* waiting in iwarp_ctx_progress; the CQ is looked at under the context's lock, so
         * this thread reads the buffer only once the Send has been placed */
        struct deadline dl = deadline_in_ms(SP_WAIT_MS);
        struct iwarp_wc wc;
        while (iwarp_poll_cq(r.cli.cq, 1, &wc) == 0) {
            ASSERT_EQ(iwarp_ctx_progress(r.cli.ctx, 1), 0);
            if (deadline_passed(&dl))
                DEADLINE_FAIL(&dl, "Send %u's receive", k);
        }
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc.wr_id, k);
        ASSERT_EQ_U(wc.byte_len, READ_LEN);
        ASSERT_MEM_EQ(r.cbuf + off, r.sbuf + off, READ_LEN);
    }
    ASSERT_EQ(pthread_join(t, NULL), 0);
    uint64_t mine = iwarp_copied_octets - before;
    uint64_t all = (uint64_t)READS * READ_LEN;
    printf("  the waiting thread copied %.2f octets per Send octet (staged: one copy each)\n",
           (double)mine / (double)all);
    /* Each Send is staged and copied once (1.1-1.25 with the headers read ahead): nearly all
     * by this thread. With iwarp_ctx_progress not standing the progress thread aside, the two
     * threads shared the Sends: 0.63-0.65 here. */
    ASSERT_TRUE(mine >= all * 4 / 5);

    expect_progress_thread_back(&r, 12);
    sp_rig_down(&r);
}

struct poster {
    struct sp_rig *r;
    uint64_t posted_ms;
};

static void *post_later(void *arg)
{
    struct poster *p = arg;
    deadline_pause_us(100000); /* the main thread is inside iwarp_cq_wait by now */
    p->posted_ms = sp_now_ms();
    ASSERT_EQ(sp_post(p->r->pair.cli.qp, 7, IWARP_WR_RDMA_WRITE, 0, p->r->cbuf, 64, p->r->cmr->lkey,
                      p->r->pair.cli.peer.addr, p->r->pair.cli.peer.rkey),
              0);
    return NULL;
}

/* Caller mode, two application threads: one waits in iwarp_cq_wait, the other posts a Write,
 * which completes in the poster's thread as it is handed to TCP. The waiter must wake for it
 * at once (the loop's wake fd), not when its wait in the loop times out. */
TEST(a_completion_made_by_another_thread_wakes_cq_wait)
{
    struct sp_rig r;
    memset(&r, 0, sizeof r);
    sp_side_init(&r.srv, IWARP_PROGRESS_CALLER, 64);
    sp_side_init(&r.cli, IWARP_PROGRESS_CALLER, 64);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1};
    sp_rig_connect(&r, BUF, &cfg);
    struct poster p = {.r = &r};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, post_later, &p), 0);
    ASSERT_EQ(iwarp_cq_wait(r.cli.cq, 5000), 0);
    uint64_t woke = sp_now_ms();
    ASSERT_EQ(pthread_join(t, NULL), 0);
    /* the loop's own waits last up to a second: well under that */
    ASSERT_TRUE(woke - p.posted_ms < 500);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_poll_cq(r.cli.cq, 1, &wc), 1);
    ASSERT_EQ(wc.wr_id, 7);
    sp_rig_down(&r);
}

struct cm_waiter {
    struct iwarp_cm_channel *ch;
    struct iwarp_cm_id *expect; /* the id whose ADDR_RESOLVED ends the wait */
    int rc;
    enum iwarp_cm_event_type got;
    uint64_t woke_ms;
};

/* Waits in the loop (caller mode) for one CM event, as rping's CM thread does. */
static void *wait_cm_event(void *arg)
{
    struct cm_waiter *w = arg;
    struct iwarp_cm_event *ev;
    w->rc = iwarp_cm_get_event_timeout(w->ch, &ev, 10000);
    w->woke_ms = sp_now_ms();
    if (w->rc == 0) {
        w->got = ev->event;
        if (ev->id != w->expect)
            w->rc = -1;
        (void)iwarp_cm_ack_event(ev);
    }
    return NULL;
}

/* Another thread queues the event (iwarp_cm_resolve_addr emits ADDR_RESOLVED at once): the
 * waiter, inside the loop, must wake for it; returns how long that took. */
static uint64_t cm_event_from_this_thread(struct cm_waiter *w, pthread_t t)
{
    deadline_pause_us(100000); /* the waiter is inside the loop by now */
    struct sockaddr_in dst;
    sp_loopback4(&dst, 9);
    uint64_t t0 = sp_now_ms();
    ASSERT_EQ(iwarp_cm_resolve_addr(w->expect, NULL, (struct sockaddr *)&dst, 1000), 0);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(w->rc, 0);
    ASSERT_EQ(w->got, IWARP_CM_EVENT_ADDR_RESOLVED);
    return w->woke_ms - t0;
}

TEST(two_threads_waiting_in_the_loop_each_wake_for_their_own)
{
    struct sp_rig r;
    memset(&r, 0, sizeof r);
    sp_side_init(&r.srv, IWARP_PROGRESS_THREAD, 64);
    sp_side_init_full(&r.cli, NULL, IWARP_PROGRESS_CALLER, NULL, 0, 64, true);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.responder_resources = 1, .initiator_depth = 1}};
    sp_rig_connect(&r, BUF, &cfg);

    /* 1. A CM event queued by another thread wakes the CM waiter. */
    struct cm_waiter w = {.ch = r.cli.ch};
    ASSERT_EQ(iwarp_cm_create_id(r.cli.ch, &w.expect, NULL, IWARP_PS_TCP), 0);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, wait_cm_event, &w), 0);
    uint64_t took = cm_event_from_this_thread(&w, t);
    printf("  CM waiter woke %llu ms after the event was queued by another thread\n",
           (unsigned long long)took);
    ASSERT_TRUE(took < 500); /* the loop's own waits last up to a second */
    ASSERT_EQ(iwarp_cm_destroy_id(w.expect), 0);

    /* 2. While a CM waiter sits in the loop, this thread waits for each Read's completion
     * event: the CM waiter may be the one woken by the Read Response, and must pass the
     * wake on. */
    memset(&w, 0, sizeof w);
    w.ch = r.cli.ch;
    ASSERT_EQ(iwarp_cm_create_id(r.cli.ch, &w.expect, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(pthread_create(&t, NULL, wait_cm_event, &w), 0);
    sp_fill(r.sbuf, BUF, 5);
    uint64_t worst = 0, t_all = sp_now_ms();
    for (uint32_t k = 0; k < READS; k++) {
        uint32_t off = (k * READ_LEN) % BUF;
        uint64_t t0 = sp_now_ms();
        post_read(&r, off);
        struct iwarp_wc wc = next_wc(&r);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc.wr_id, off);
        uint64_t d = sp_now_ms() - t0;
        worst = d > worst ? d : worst;
    }
    SP_ASSERT_PATTERN(r.cbuf, BUF, 5);
    printf("  %d Reads waited for beside a CM waiter in %llu ms, the slowest %llu ms\n", READS,
           (unsigned long long)(sp_now_ms() - t_all), (unsigned long long)worst);
    ASSERT_TRUE(worst < 500);
    took = cm_event_from_this_thread(&w, t);
    ASSERT_TRUE(took < 500);
    ASSERT_EQ(iwarp_cm_destroy_id(w.expect), 0);
    sp_rig_down(&r);
}
