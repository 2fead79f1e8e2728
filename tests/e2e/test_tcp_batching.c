/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transmit batching over TCP (iwarp_ctx_attr.tx_batch_us; docs/design.md "Batching small
 * posts"), counted in real system calls: this test is linked with -Wl,--wrap=sendmsg,--wrap=send,
 * so every write the library makes passes through the counter below (a small one is a send:
 * llp_tcp.c tcp_write; both are counted as "sendmsg" here). Both contexts run in caller
 * mode, driven by this one thread, so a call counted during one of the client's calls is the
 * client's own.
 *  - A post on an idle connection leaves at once: one sendmsg inside iwarp_post_send.
 *  - Posts that follow a recent write wait: no sendmsg while they are posted, then the next
 *    iwarp_poll_cq writes them all in one sendmsg, and every one completes and lands in order.
 *  - The 64th waiting post (IWARP_LLP_TCP_BATCH_MAX) writes the batch by itself, in writes of
 *    up to 16 FPDUs (IWARP_LLP_CONN_TX_SEGS, the TX ring) back to back.
 *  - A post after the peer has answered (sent something since our last write) leaves at once,
 *    however recent that write: a request-response exchange never waits in a batch.
 *  - A chain of WRs in one iwarp_post_send is one sendmsg.
 *  - With a progress thread and nobody polling, the batch leaves by its deadline.
 *  - tx_batch_us = 0 turns batching off: one sendmsg per post.
 */
#define _GNU_SOURCE
#include "llp/llp_tcp.h"
#include "stack_pair.h"

#include <sys/socket.h>

static unsigned long n_sendmsg; /* writes: sendmsg, or send for a small one */

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
    __atomic_add_fetch(&n_sendmsg, 1, __ATOMIC_RELAXED);
    return __real_sendmsg(fd, m, flags);
}

ssize_t __real_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags)
{
    __atomic_add_fetch(&n_sendmsg, 1, __ATOMIC_RELAXED);
    return __real_send(fd, b, n, flags);
}

static unsigned long sendmsgs(void)
{
    return __atomic_load_n(&n_sendmsg, __ATOMIC_RELAXED);
}

enum { MSG = 64, SLOTS = IWARP_LLP_TCP_BATCH_MAX + 16, BUF = MSG * SLOTS };

/* A connected pair; the client batches with a window of batch_us (UINT32_MAX: the default). */
static void rig_up(struct sp_rig *r, enum iwarp_progress_mode cli_mode, uint32_t batch_us)
{
    memset(r, 0, sizeof *r);
    sp_side_init(&r->srv, IWARP_PROGRESS_CALLER, 256);
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = cli_mode;
    if (batch_us != UINT32_MAX) {
        a.comp_mask |= IWARP_CTX_ATTR_TX_BATCH;
        a.tx_batch_us = batch_us;
    }
    sp_side_init_attr(&r->cli, NULL, &a, 256, false);
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 128, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.crc = true}};
    sp_rig_connect(r, BUF, &cfg);
}

/* Write slot k of the client's buffer (filled with pattern k) into slot k of the server's. */
static int post_write(struct sp_rig *r, uint32_t k)
{
    sp_fill(r->cbuf + k * MSG, MSG, 100 + k);
    return sp_post(r->pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r->cbuf + k * MSG, MSG, r->cmr->lkey,
                   r->pair.cli.peer.addr + k * MSG, r->pair.cli.peer.rkey);
}

/* Let the connection go idle for longer than any window used here. */
static void go_idle(struct sp_rig *r, uint32_t ms)
{
    struct iwarp_wc wc[8];
    while (iwarp_poll_cq(r->cli.cq, 8, wc) > 0)
        ;
    deadline_pause_us(ms * 1000u);
}

/* The server has every slot in [from, to) with its pattern (driving both sides). */
static void expect_landed(struct sp_rig *r, uint32_t from, uint32_t to)
{
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    for (;;) {
        uint32_t bad = 0;
        for (uint32_t k = from; k < to; k++)
            bad += sp_check(r->sbuf + k * MSG, MSG, 100 + k) != 0;
        if (bad == 0)
            return;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%u of %u Writes not placed", bad, to - from);
        iwarp_ctx_progress(r->srv.ctx, 0);
        if (r->cli.mode == IWARP_PROGRESS_CALLER)
            iwarp_ctx_progress(r->cli.ctx, 0);
        deadline_pause_us(100);
    }
}

TEST(a_lone_post_leaves_at_once_and_a_burst_waits_for_the_poll)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PROGRESS_CALLER, 100000); /* 100 ms: the burst below is well inside it */
    go_idle(&r, 150);
    unsigned long c0 = sendmsgs();
    ASSERT_EQ(post_write(&r, 0), 0);
    ASSERT_EQ(sendmsgs() - c0, 1ul); /* written inside iwarp_post_send */
    c0 = sendmsgs();
    for (uint32_t k = 1; k <= 12; k++)
        ASSERT_EQ(post_write(&r, k), 0);
    ASSERT_EQ(sendmsgs() - c0, 0ul); /* they follow a write: they wait */
    struct iwarp_wc wc[32];
    c0 = sendmsgs();
    int n = iwarp_poll_cq(r.cli.cq, 32, wc);
    ASSERT_EQ(sendmsgs() - c0, 1ul); /* the poll wrote the 12 FPDUs in one call */
    /* the Writes completed as they were handed to TCP, in posting order */
    uint32_t got = 0;
    for (;;) {
        for (int i = 0; i < n; i++) {
            ASSERT_EQ(wc[i].status, IWARP_WC_SUCCESS);
            ASSERT_EQ_U(wc[i].wr_id, got++);
        }
        if (got == 13)
            break;
        n = iwarp_poll_cq(r.cli.cq, 32, wc);
        ASSERT_TRUE(n >= 0);
    }
    expect_landed(&r, 0, 13);
    sp_rig_down(&r);
}

TEST(a_full_batch_leaves_without_a_poll)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PROGRESS_CALLER, 100000);
    go_idle(&r, 150);
    unsigned long c0 = sendmsgs();
    enum { B = IWARP_LLP_TCP_BATCH_MAX, RING = IWARP_LLP_CONN_TX_SEGS };
    ASSERT_EQ(post_write(&r, 0), 0); /* at once */
    for (uint32_t k = 1; k < B; k++)
        ASSERT_EQ(post_write(&r, k), 0);
    ASSERT_EQ(sendmsgs() - c0, 1ul); /* B - 1 wait */
    ASSERT_EQ(post_write(&r, B), 0);
    /* the B-th waiting post writes all B, RING FPDUs per write */
    ASSERT_EQ(sendmsgs() - c0, 1ul + B / RING);
    struct iwarp_wc wc[B + 1];
    sp_poll_n(&r.cli, &r.srv, wc, B + 1);
    expect_landed(&r, 0, B + 1);
    sp_rig_down(&r);
}

TEST(a_post_answering_the_peer_leaves_at_once)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PROGRESS_CALLER, 100000); /* 100 ms: every post below is within it */
    ASSERT_EQ(post_write(&r, 0), 0);
    struct iwarp_wc wc[2];
    sp_poll_n(&r.cli, &r.srv, wc, 1);
    unsigned long c0 = sendmsgs();
    ASSERT_EQ(post_write(&r, 1), 0);
    ASSERT_EQ(sendmsgs() - c0, 0ul); /* nothing heard since the last write: it waits */
    sp_poll_n(&r.cli, &r.srv, wc, 1);
    /* the server answers: a Write into the client's last slot */
    enum { ANSWER = SLOTS - 1 };
    sp_fill(r.sbuf + ANSWER * MSG, MSG, 7);
    ASSERT_EQ(sp_post(r.pair.srv.qp, 99, IWARP_WR_RDMA_WRITE, 0, r.sbuf + ANSWER * MSG, MSG,
                      r.smr->lkey, r.pair.srv.peer.addr + ANSWER * MSG, r.pair.srv.peer.rkey),
              0);
    sp_poll_n(&r.srv, &r.cli, wc, 1);
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (sp_check(r.cbuf + ANSWER * MSG, MSG, 7) != MSG) { /* the client reads it */
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%s", "the server's Write did not land");
        iwarp_ctx_progress(r.cli.ctx, 1);
    }
    c0 = sendmsgs();
    ASSERT_EQ(post_write(&r, 2), 0);
    ASSERT_EQ(sendmsgs() - c0, 1ul); /* the peer answered: written inside iwarp_post_send */
    ASSERT_EQ(post_write(&r, 3), 0);
    ASSERT_EQ(sendmsgs() - c0, 1ul); /* nothing heard since: the next one waits again */
    sp_poll_n(&r.cli, &r.srv, wc, 2);
    expect_landed(&r, 0, 4);
    sp_rig_down(&r);
}

TEST(a_chain_is_one_system_call)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PROGRESS_CALLER, 100000);
    go_idle(&r, 150);
    struct iwarp_sge sge[8];
    struct iwarp_send_wr wr[8];
    for (uint32_t k = 0; k < 8; k++) {
        sp_fill(r.cbuf + k * MSG, MSG, 100 + k);
        sge[k] = (struct iwarp_sge){(uintptr_t)(r.cbuf + k * MSG), MSG, r.cmr->lkey};
        wr[k] = (struct iwarp_send_wr){.wr_id = k,
                                       .next = k < 7 ? &wr[k + 1] : NULL,
                                       .sg_list = &sge[k],
                                       .num_sge = 1,
                                       .opcode = IWARP_WR_RDMA_WRITE};
        wr[k].wr.rdma.remote_addr = r.pair.cli.peer.addr + k * MSG;
        wr[k].wr.rdma.rkey = r.pair.cli.peer.rkey;
    }
    struct iwarp_send_wr *bad = NULL;
    unsigned long c0 = sendmsgs();
    ASSERT_EQ(iwarp_post_send(r.pair.cli.qp, wr, &bad), 0);
    ASSERT_EQ(sendmsgs() - c0, 1ul);
    struct iwarp_wc wc[8];
    sp_poll_n(&r.cli, &r.srv, wc, 8);
    expect_landed(&r, 0, 8);
    sp_rig_down(&r);
}

TEST(a_batch_nobody_polls_for_leaves_by_its_deadline)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PROGRESS_THREAD, 2000); /* 2 ms */
    /* a write right before, so the next posts wait */
    ASSERT_EQ(post_write(&r, 0), 0);
    for (uint32_t k = 1; k < 4; k++)
        ASSERT_EQ(post_write(&r, k), 0);
    /* no poll on the client: its progress thread's timer must write them */
    expect_landed(&r, 0, 4);
    struct iwarp_wc wc[4];
    sp_poll_n(&r.cli, &r.srv, wc, 4);
    sp_rig_down(&r);
}

TEST(batching_off_writes_every_post_at_once)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PROGRESS_CALLER, 0);
    unsigned long c0 = sendmsgs();
    for (uint32_t k = 0; k < 10; k++)
        ASSERT_EQ(post_write(&r, k), 0);
    ASSERT_EQ(sendmsgs() - c0, 10ul);
    struct iwarp_wc wc[10];
    sp_poll_n(&r.cli, &r.srv, wc, 10);
    expect_landed(&r, 0, 10);
    sp_rig_down(&r);
}
