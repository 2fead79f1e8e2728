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
 *  - iwarp_cq_wait (caller mode) wakes at once for a completion another thread makes.
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

    /* nobody waits on the client now: its progress thread answers the server's Reads */
    sp_fill(r.cbuf, READ_LEN, 11);
    ASSERT_EQ(sp_post(r.pair.srv.qp, 1, IWARP_WR_RDMA_READ, 0, r.sbuf, READ_LEN, r.smr->lkey,
                      r.pair.srv.peer.addr, r.pair.srv.peer.rkey),
              0);
    sp_poll_ok(&r.srv, NULL, IWARP_WC_RDMA_READ);
    SP_ASSERT_PATTERN(r.sbuf, READ_LEN, 11);
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
