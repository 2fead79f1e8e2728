/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RFC 7306 end to end through the public API, over loopback TCP (MPA) and DDP over SCTP: the
 * extensions enabled per connection (iwarp_qp_init_attr.rdmap_ext), Immediate Data with and
 * without SE (solicited-only arming, zero-length receives), RDMA Write with Immediate placed
 * before its completion, FetchAdd and CmpSwap with and without masks, ordering against Writes,
 * Reads and Sends on the same QP, the errors a peer reports with a Terminate (alignment,
 * rights, bounds, STag; a peer without the extensions), the local refusals, and a contention
 * test: several QPs of several contexts, one thread each, plus a local CPU thread, hammering
 * one counter with FetchAdd and another with CmpSwap.
 */
#define _GNU_SOURCE 1
#include <endian.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "stack_pair.h"

#define BUF     65536u
#define CQE     256
#define EXT_ALL ((uint32_t)(IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS))
#define ATOM    4096u /* the server's atomic words live at sbuf + ATOM */

/* A rig whose server also registers [ATOM, ATOM + 4096) for remote atomics (amr, with the
 * remote read and write rights too). */
struct ext_rig {
    struct sp_rig r;
    struct iwarp_mr *amr;
};

static struct sp_cfg ext_cfg(enum iwarp_port_space ps, uint32_t srv_off)
{
    return (struct sp_cfg){
        .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1},
        .param = {.responder_resources = 8, .initiator_depth = 8},
        .ps = ps,
        .rdmap_ext = EXT_ALL,
        .srv_rdmap_ext_off = srv_off};
}

static void rig_up(struct ext_rig *x, enum iwarp_port_space ps, uint32_t srv_off)
{
    memset(x, 0, sizeof *x);
    sp_side_init_full(&x->r.srv, NULL, IWARP_PROGRESS_THREAD, NULL, 0, CQE, true);
    sp_side_init(&x->r.cli, IWARP_PROGRESS_THREAD, CQE);
    struct sp_cfg cfg = ext_cfg(ps, srv_off);
    sp_rig_connect(&x->r, BUF, &cfg);
    ASSERT_EQ(iwarp_reg_mr(x->r.srv.pd, x->r.sbuf + ATOM, 4096,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                               IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_ATOMIC,
                           &x->amr),
              0);
}

static void rig_down(struct ext_rig *x)
{
    ASSERT_EQ(iwarp_dereg_mr(x->amr), 0);
    sp_rig_down(&x->r);
}

/* The rig after a Terminate: both ends see DISCONNECTED, then everything goes. */
static void rig_down_terminated(struct ext_rig *x)
{
    sp_expect_ack(&x->r.srv, &x->r.cli, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(&x->r.cli, &x->r.srv, IWARP_CM_EVENT_DISCONNECTED);
    sp_destroy_pairs(&x->r.pair, 1);
    ASSERT_EQ(iwarp_dereg_mr(x->amr), 0);
    ASSERT_EQ(iwarp_dereg_mr(x->r.smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(x->r.cmr), 0);
    sp_side_fini(&x->r.cli);
    sp_side_fini(&x->r.srv);
    free(x->r.sbuf);
    free(x->r.cbuf);
}

static uint64_t *srv_word(struct ext_rig *x, uint32_t i)
{
    return (uint64_t *)(void *)(x->r.sbuf + ATOM + 8u * i);
}

static uint64_t srv_word_addr(struct ext_rig *x, uint32_t i)
{
    return (uint64_t)(uintptr_t)srv_word(x, i);
}

/* Post one atomic from the client: sink at cbuf + sink_off, target word i of the server. */
static int post_atomic(struct ext_rig *x, uint64_t wr_id, enum iwarp_wr_opcode op, uint64_t target,
                       uint32_t rkey, uint64_t compare_add, uint64_t swap,
                       uint64_t compare_add_mask, uint64_t swap_mask, uint32_t sink_off)
{
    struct iwarp_sge sge = {
        .addr = (uintptr_t)(x->r.cbuf + sink_off), .length = 8, .lkey = x->r.cmr->lkey};
    struct iwarp_send_wr wr = {.wr_id = wr_id,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = op,
                               .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.atomic.remote_addr = target;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap = swap;
    wr.masked_atomic.compare_add_mask = compare_add_mask;
    wr.masked_atomic.swap_mask = swap_mask;
    struct iwarp_send_wr *bad = NULL;
    return iwarp_post_send(x->r.pair.cli.qp, &wr, &bad);
}

static uint64_t cli_u64(struct ext_rig *x, uint32_t off)
{
    uint64_t v;
    memcpy(&v, x->r.cbuf + off, sizeof v);
    return v;
}

/* Post a Write with Immediate (or the Immediate Data message alone when len is 0 and imm64 is
 * set) from the client. */
static int post_imm(struct ext_rig *x, uint64_t wr_id, enum iwarp_wr_opcode op, unsigned flags,
                    uint32_t src_off, uint32_t len, uint32_t dst_off, uint32_t imm32,
                    uint64_t imm64)
{
    struct iwarp_sge sge = {
        .addr = (uintptr_t)(x->r.cbuf + src_off), .length = len, .lkey = x->r.cmr->lkey};
    struct iwarp_send_wr wr = {.wr_id = wr_id,
                               .sg_list = len ? &sge : NULL,
                               .num_sge = len ? 1 : 0,
                               .opcode = op,
                               .send_flags = flags | IWARP_SEND_SIGNALED};
    if (op == IWARP_WR_IMM_DATA) {
        wr.imm_data64 = imm64;
    } else {
        wr.imm_data = imm32;
        wr.wr.rdma.remote_addr = x->r.pair.cli.peer.addr + dst_off;
        wr.wr.rdma.rkey = x->r.pair.cli.peer.rkey;
    }
    struct iwarp_send_wr *bad = NULL;
    return iwarp_post_send(x->r.pair.cli.qp, &wr, &bad);
}

/* Whether the server's completion channel has an event (it must have one when fired). */
static void expect_srv_cq_event(struct ext_rig *x, bool fired)
{
    struct pollfd p = {.fd = x->r.srv.comp->fd, .events = POLLIN};
    ASSERT_EQ(poll(&p, 1, fired ? SP_WAIT_MS : 0), fired ? 1 : 0);
    struct iwarp_cq *cq = NULL;
    void *ctx = NULL;
    int rc = iwarp_get_cq_event(x->r.srv.comp, &cq, &ctx);
    if (!fired) {
        ASSERT_EQ(rc, IWARP_ERR_BUSY);
        return;
    }
    ASSERT_EQ(rc, 0);
    ASSERT_TRUE(cq == x->r.srv.cq);
    iwarp_ack_cq_events(cq, 1);
}

/* The 64-bit Immediate Data a verbs imm_data becomes: its 4 octets as they lie in memory,
 * then 4 zero octets, read big-endian (verbs.h). */
static uint64_t imm64_of(uint32_t imm32)
{
    return (uint64_t)be32toh(imm32) << 32;
}

static void expect_imm_wc(struct ext_rig *x, uint64_t wr_id, uint32_t imm32, uint64_t imm64)
{
    struct iwarp_wc wc = sp_poll_ok(&x->r.srv, &x->r.cli, IWARP_WC_RECV_RDMA_WITH_IMM);
    ASSERT_EQ_U(wc.wr_id, wr_id);
    ASSERT_EQ(wc.wc_flags, IWARP_WC_WITH_IMM);
    ASSERT_EQ(wc.byte_len, 0);
    ASSERT_EQ_U(wc.imm_data, imm32);
    ASSERT_EQ_U(wc.imm_data64, imm64);
    ASSERT_EQ_U(wc.qp_num, x->r.pair.srv.qp->qp_num);
}

/* ---- Immediate Data -------------------------------------------------------------------------- */

static void immediate_data(enum iwarp_port_space ps)
{
    struct ext_rig x;
    rig_up(&x, ps, 0);
    struct iwarp_qp *sqp = x.r.pair.srv.qp;
    sp_fill(x.r.cbuf, 8192, 11);
    /* zero-length receives suffice (RFC 7306 §6: nothing is placed) */
    for (uint64_t i = 0; i < 6; i++)
        ASSERT_EQ(sp_post_recv(sqp, 100 + i, i == 2 ? x.r.sbuf + 60000 : NULL, i == 2 ? 64 : 0,
                               x.r.smr->lkey),
                  0);
    ASSERT_EQ(iwarp_req_notify_cq(x.r.srv.cq, 1), 0);
    /* a Write with Immediate without SE: the Write is placed when its completion comes
     * (RFC 7306 §7: "Immediate Data is Completed after RDMA Write is Placed and Delivered");
     * imm_data is octets 0-3, in memory order both ways */
    uint32_t imm32;
    memcpy(&imm32, "\x12\x34\x56\x78", 4);
    ASSERT_EQ(post_imm(&x, 1, IWARP_WR_RDMA_WRITE_WITH_IMM, 0, 0, 5000, 0, imm32, 0), 0);
    expect_imm_wc(&x, 100, imm32, 0x1234567800000000u);
    ASSERT_EQ_U(imm64_of(imm32), 0x1234567800000000u);
    SP_ASSERT_PATTERN(x.r.sbuf, 5000, 11);
    struct iwarp_wc wc = sp_poll_ok(&x.r.cli, &x.r.srv, IWARP_WC_RDMA_WRITE);
    ASSERT_EQ_U(wc.wr_id, 1);
    ASSERT_EQ(wc.byte_len, 5000);
    expect_srv_cq_event(&x, false); /* a solicited-only arm waits for SE */
    /* with SE: the arm fires; the Send after it and a 64-bit Immediate Data alone complete in
     * order (RFC 7306 §6.4: as Sends) */
    ASSERT_EQ(post_imm(&x, 2, IWARP_WR_RDMA_WRITE_WITH_IMM, IWARP_SEND_SOLICITED, 8, 0, 8000, 7, 0),
              0);
    ASSERT_EQ(sp_post(x.r.pair.cli.qp, 3, IWARP_WR_SEND, IWARP_SEND_SIGNALED, x.r.cbuf, 64,
                      x.r.cmr->lkey, 0, 0),
              0);
    ASSERT_EQ(post_imm(&x, 4, IWARP_WR_IMM_DATA, 0, 0, 0, 0, 0, 0x0102030405060708u), 0);
    expect_imm_wc(&x, 101, 7, imm64_of(7));
    expect_srv_cq_event(&x, true);
    wc = sp_poll_ok(&x.r.srv, &x.r.cli, IWARP_WC_RECV);
    ASSERT_EQ_U(wc.wr_id, 102);
    ASSERT_EQ(wc.byte_len, 64);
    SP_ASSERT_PATTERN(x.r.sbuf + 60000, 64, 11);
    uint32_t hi = htobe32(0x01020304u);
    expect_imm_wc(&x, 103, hi, 0x0102030405060708u);
    for (uint64_t id = 2; id <= 4; id++)
        ASSERT_EQ_U(
            sp_poll_ok(&x.r.cli, &x.r.srv, id == 2 ? IWARP_WC_RDMA_WRITE : IWARP_WC_SEND).wr_id,
            id);
    /* RFC 7306 has no Send with Immediate Data: refused at post (docs/design.md) */
    ASSERT_EQ(
        sp_post(x.r.pair.cli.qp, 5, IWARP_WR_SEND_WITH_IMM, 0, x.r.cbuf, 4, x.r.cmr->lkey, 0, 0),
        IWARP_ERR_NOTSUP);
    rig_down(&x);
}

TEST(immediate_data_over_tcp)
{
    immediate_data(IWARP_PS_TCP);
}

TEST(immediate_data_over_sctp)
{
    immediate_data(IWARP_PS_SCTP);
}

/* ---- atomics ---------------------------------------------------------------------------- */

static void expect_atomic_wc(struct ext_rig *x, uint64_t wr_id, enum iwarp_wc_opcode op)
{
    struct iwarp_wc wc = sp_poll_ok(&x->r.cli, &x->r.srv, op);
    ASSERT_EQ_U(wc.wr_id, wr_id);
    ASSERT_EQ(wc.byte_len, 8);
}

static void atomics(enum iwarp_port_space ps)
{
    struct ext_rig x;
    rig_up(&x, ps, 0);
    uint32_t rkey = x.amr->rkey;
    *srv_word(&x, 0) = 100;
    *srv_word(&x, 1) = 0xAAAAAAAA12345678u;
    /* FetchAdd, then CmpSwap that matches and one that does not */
    ASSERT_EQ(post_atomic(&x, 1, IWARP_WR_ATOMIC_FETCH_AND_ADD, srv_word_addr(&x, 0), rkey, 5, 0, 0,
                          0, 0),
              0);
    ASSERT_EQ(post_atomic(&x, 2, IWARP_WR_ATOMIC_CMP_AND_SWP, srv_word_addr(&x, 0), rkey, 105, 7, 0,
                          0, 8),
              0);
    ASSERT_EQ(post_atomic(&x, 3, IWARP_WR_ATOMIC_CMP_AND_SWP, srv_word_addr(&x, 0), rkey, 105, 9, 0,
                          0, 16),
              0);
    /* masked FetchAdd: two 32-bit fields, no carry between them (RFC 7306 §5.1.1) */
    *srv_word(&x, 2) = 0x00000001FFFFFFFFu;
    ASSERT_EQ(post_atomic(&x, 4, IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD, srv_word_addr(&x, 2), rkey,
                          0x0000000100000001u, 0, 0x8000000080000000u, 0, 24),
              0);
    /* masked CmpSwap: compare the low half, swap the high half (§5.1.2) */
    ASSERT_EQ(post_atomic(&x, 5, IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP, srv_word_addr(&x, 1), rkey,
                          0x0000000012345678u, 0x5555555500000000u, 0x00000000FFFFFFFFu,
                          0xFFFFFFFF00000000u, 32),
              0);
    expect_atomic_wc(&x, 1, IWARP_WC_FETCH_ADD);
    expect_atomic_wc(&x, 2, IWARP_WC_COMP_SWAP);
    expect_atomic_wc(&x, 3, IWARP_WC_COMP_SWAP);
    expect_atomic_wc(&x, 4, IWARP_WC_FETCH_ADD);
    expect_atomic_wc(&x, 5, IWARP_WC_COMP_SWAP);
    ASSERT_EQ_U(cli_u64(&x, 0), 100);
    ASSERT_EQ_U(cli_u64(&x, 8), 105);
    ASSERT_EQ_U(cli_u64(&x, 16), 7);
    ASSERT_EQ_U(*srv_word(&x, 0), 7);
    ASSERT_EQ_U(cli_u64(&x, 24), 0x00000001FFFFFFFFu);
    ASSERT_EQ_U(*srv_word(&x, 2), 0x0000000200000000u);
    ASSERT_EQ_U(cli_u64(&x, 32), 0xAAAAAAAA12345678u);
    ASSERT_EQ_U(*srv_word(&x, 1), 0x5555555512345678u);

    /* ordering on one QP (RFC 7306 §5.4, §7): a Write to the word, then a FetchAdd sees it;
     * a Read after the FetchAdd sees its result; a Send after it arrives after the Write */
    uint64_t seven = 7000;
    memcpy(x.r.cbuf + 1024, &seven, 8);
    ASSERT_EQ(sp_post_recv(x.r.pair.srv.qp, 200, x.r.sbuf, 16, x.r.smr->lkey), 0);
    ASSERT_EQ(sp_post(x.r.pair.cli.qp, 10, IWARP_WR_RDMA_WRITE, IWARP_SEND_SIGNALED,
                      x.r.cbuf + 1024, 8, x.r.cmr->lkey, srv_word_addr(&x, 3), rkey),
              0);
    ASSERT_EQ(post_atomic(&x, 11, IWARP_WR_ATOMIC_FETCH_AND_ADD, srv_word_addr(&x, 3), rkey, 1, 0,
                          0, 0, 40),
              0);
    ASSERT_EQ(sp_post(x.r.pair.cli.qp, 12, IWARP_WR_RDMA_READ, IWARP_SEND_SIGNALED, x.r.cbuf + 48,
                      8, x.r.cmr->lkey, srv_word_addr(&x, 3), rkey),
              0);
    ASSERT_EQ(sp_post(x.r.pair.cli.qp, 13, IWARP_WR_SEND, IWARP_SEND_SIGNALED, x.r.cbuf, 16,
                      x.r.cmr->lkey, 0, 0),
              0);
    ASSERT_EQ_U(sp_poll_ok(&x.r.cli, &x.r.srv, IWARP_WC_RDMA_WRITE).wr_id, 10);
    expect_atomic_wc(&x, 11, IWARP_WC_FETCH_ADD);
    ASSERT_EQ_U(sp_poll_ok(&x.r.cli, &x.r.srv, IWARP_WC_RDMA_READ).wr_id, 12);
    ASSERT_EQ_U(sp_poll_ok(&x.r.cli, &x.r.srv, IWARP_WC_SEND).wr_id, 13);
    ASSERT_EQ_U(sp_poll_ok(&x.r.srv, &x.r.cli, IWARP_WC_RECV).wr_id, 200);
    ASSERT_EQ_U(cli_u64(&x, 40), 7000);
    ASSERT_EQ_U(cli_u64(&x, 48), 7001);
    rig_down(&x);
}

TEST(atomics_over_tcp)
{
    atomics(IWARP_PS_TCP);
}

TEST(atomics_over_sctp)
{
    atomics(IWARP_PS_SCTP);
}

/* ---- errors ---------------------------------------------------------------------------- */

/* One atomic the server refuses: the client's WR fails with status and the Terminate cause,
 * the server reports the error it sent, memory is unchanged, the connection ends. */
static void atomic_error(enum iwarp_port_space ps, uint32_t srv_off, int bad, int status,
                         uint32_t cause)
{
    struct ext_rig x;
    rig_up(&x, ps, srv_off);
    *srv_word(&x, 0) = 42;
    uint64_t target = srv_word_addr(&x, 0);
    uint32_t rkey = x.amr->rkey;
    if (bad == 0)
        target += 4; /* RFC 7306 §8.2: not 64-bit aligned */
    else if (bad == 1)
        rkey = x.r.smr->rkey; /* no REMOTE_ATOMIC right */
    else if (bad == 2)
        target = srv_word_addr(&x, 512); /* aligned, just past the MR */
    else if (bad == 3)
        rkey ^= 0x80u; /* another key */
    ASSERT_EQ(post_atomic(&x, 1, IWARP_WR_ATOMIC_FETCH_AND_ADD, target, rkey, 1, 0, 0, 0, 0), 0);
    struct iwarp_wc wc;
    sp_poll_n(&x.r.cli, &x.r.srv, &wc, 1);
    ASSERT_EQ_U(wc.wr_id, 1);
    ASSERT_EQ(wc.status, status);
    ASSERT_EQ(wc.opcode, IWARP_WC_FETCH_ADD);
    ASSERT_EQ_U(wc.vendor_err, cause);
    struct iwarp_async_event ev = sp_async(&x.r.cli);
    ASSERT_TRUE(ev.term_from_peer);
    ASSERT_EQ_U(ev.term_cause, cause);
    ev = sp_async(&x.r.srv);
    ASSERT_FALSE(ev.term_from_peer);
    ASSERT_EQ_U(ev.term_cause, cause);
    ASSERT_EQ_U(*srv_word(&x, 0), 42);
    rig_down_terminated(&x);
}

static void atomic_errors(enum iwarp_port_space ps)
{
    atomic_error(ps, 0, 0, IWARP_WC_REM_OP_ERR, SP_CAUSE(0, 2, 0x07));
    atomic_error(ps, 0, 1, IWARP_WC_REM_ACCESS_ERR, SP_CAUSE(0, 1, 0x02));
    atomic_error(ps, 0, 2, IWARP_WC_REM_ACCESS_ERR, SP_CAUSE(0, 1, 0x01));
    atomic_error(ps, 0, 3, IWARP_WC_REM_ACCESS_ERR, SP_CAUSE(0, 1, 0x00));
    /* RFC 7306 §1.1: a peer without the extension answers Unexpected OpCode; the probe of
     * §1.1 (a FetchAdd of 0) reports it the same way */
    atomic_error(ps, IWARP_RDMAP_EXT_ATOMICS, 4, IWARP_WC_REM_OP_ERR, SP_CAUSE(0, 2, 0x06));
}

TEST(atomic_errors_over_tcp)
{
    atomic_errors(IWARP_PS_TCP);
}

TEST(atomic_errors_over_sctp)
{
    atomic_errors(IWARP_PS_SCTP);
}

TEST(extensions_not_enabled_are_refused_locally_and_remotely)
{
    /* a client QP without the bit: IWARP_ERR_RDMAP_EXT_OFF at post, nothing sent */
    struct ext_rig x;
    memset(&x, 0, sizeof x);
    sp_side_init_full(&x.r.srv, NULL, IWARP_PROGRESS_THREAD, NULL, 0, CQE, true);
    sp_side_init(&x.r.cli, IWARP_PROGRESS_THREAD, CQE);
    struct sp_cfg cfg = ext_cfg(IWARP_PS_TCP, 0);
    cfg.rdmap_ext = 0;
    sp_rig_connect(&x.r, BUF, &cfg);
    ASSERT_EQ(iwarp_reg_mr(x.r.srv.pd, x.r.sbuf + ATOM, 4096,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_ATOMIC, &x.amr),
              0);
    ASSERT_EQ(post_atomic(&x, 1, IWARP_WR_ATOMIC_FETCH_AND_ADD, srv_word_addr(&x, 0), x.amr->rkey,
                          0, 0, 0, 0, 0),
              IWARP_ERR_RDMAP_EXT_OFF);
    ASSERT_EQ(post_imm(&x, 2, IWARP_WR_RDMA_WRITE_WITH_IMM, 0, 0, 4, 0, 1, 0),
              IWARP_ERR_RDMAP_EXT_OFF);
    sp_expect_no_wc(&x.r.cli, &x.r.srv);
    rig_down(&x);
    /* the server without Immediate Data: the Write is placed, the Immediate Data message is
     * answered with Unexpected OpCode (RFC 7306 §1.1) */
    rig_up(&x, IWARP_PS_TCP, IWARP_RDMAP_EXT_IMM_DATA);
    ASSERT_EQ(sp_post_recv(x.r.pair.srv.qp, 300, NULL, 0, 0), 0);
    sp_fill(x.r.cbuf, 64, 5);
    ASSERT_EQ(post_imm(&x, 3, IWARP_WR_RDMA_WRITE_WITH_IMM, 0, 0, 64, 0, 1, 0), 0);
    struct iwarp_async_event ev = sp_async(&x.r.cli);
    ASSERT_TRUE(ev.term_from_peer);
    ASSERT_EQ_U(ev.term_cause, SP_CAUSE(0, 2, 0x06));
    SP_ASSERT_PATTERN(x.r.sbuf, 64, 5);
    struct iwarp_wc wc;
    sp_poll_n(&x.r.srv, &x.r.cli, &wc, 1);
    ASSERT_EQ_U(wc.wr_id, 300);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    rig_down_terminated(&x);
}

/* ---- contention ------------------------------------------------------------------------- */

#define NTHREADS  4u
#define NFETCH    400u   /* FetchAdds of 1 per thread, 8 in flight */
#define NCAS      150u   /* successful CmpSwap increments per thread */
#define NLOCAL    50000u /* local __atomic increments of the FetchAdd counter */
#define FETCH_WIN 8u

static uint64_t counters[2] __attribute__((aligned(64))); /* [0] FetchAdd, [1] CmpSwap */

struct hammer {
    pthread_t th;
    uint32_t index;
    uint64_t fetched[NFETCH]; /* the Original Remote Data Values of its FetchAdds */
    uint64_t swapped[NCAS];   /* those of its successful CmpSwaps */
    uint32_t cas_tries;
};

/* One thread: a client and a server context of its own (caller progress), one QP pair, the
 * process's counters registered for remote atomics in its server context. */
static void *hammer_run(void *arg)
{
    struct hammer *h = arg;
    struct ext_rig x;
    memset(&x, 0, sizeof x);
    sp_side_init(&x.r.srv, IWARP_PROGRESS_CALLER, CQE);
    sp_side_init(&x.r.cli, IWARP_PROGRESS_CALLER, CQE);
    struct sp_cfg cfg = ext_cfg(IWARP_PS_TCP, 0);
    sp_rig_connect(&x.r, BUF, &cfg);
    ASSERT_EQ(iwarp_reg_mr(x.r.srv.pd, counters, sizeof counters,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_ATOMIC, &x.amr),
              0);
    uint64_t fetch = (uint64_t)(uintptr_t)&counters[0], cas = (uint64_t)(uintptr_t)&counters[1];
    uint32_t posted = 0, done = 0;
    struct iwarp_wc wc[FETCH_WIN];
    while (done < NFETCH) {
        while (posted < NFETCH && posted - done < FETCH_WIN) {
            ASSERT_EQ(post_atomic(&x, posted, IWARP_WR_ATOMIC_FETCH_AND_ADD, fetch, x.amr->rkey, 1,
                                  0, 0, 0, 8u * (posted % FETCH_WIN)),
                      0);
            posted++;
        }
        sp_poll_n(&x.r.cli, &x.r.srv, wc, 1);
        ASSERT_EQ(wc[0].status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc[0].wr_id, done); /* in order */
        h->fetched[done] = cli_u64(&x, 8u * (done % FETCH_WIN));
        done++;
    }
    uint64_t expect = 0;
    for (uint32_t ok = 0; ok < NCAS;) {
        ASSERT_EQ(post_atomic(&x, 1000, IWARP_WR_ATOMIC_CMP_AND_SWP, cas, x.amr->rkey, expect,
                              expect + 1, 0, 0, 128),
                  0);
        sp_poll_n(&x.r.cli, &x.r.srv, wc, 1);
        ASSERT_EQ(wc[0].status, IWARP_WC_SUCCESS);
        uint64_t orig = cli_u64(&x, 128);
        h->cas_tries++;
        if (orig == expect)
            h->swapped[ok++] = orig;
        expect = orig == expect ? orig + 1 : orig;
    }
    rig_down(&x);
    return NULL;
}

static void *local_run(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < NLOCAL; i++)
        __atomic_fetch_add(&counters[0], 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

TEST(contention_several_qps_and_threads_on_one_counter)
{
    static struct hammer H[NTHREADS];
    static uint64_t all[NTHREADS * NFETCH];
    memset(counters, 0, sizeof counters);
    pthread_t local;
    for (uint32_t t = 0; t < NTHREADS; t++) {
        H[t].index = t;
        ASSERT_EQ(pthread_create(&H[t].th, NULL, hammer_run, &H[t]), 0);
    }
    ASSERT_EQ(pthread_create(&local, NULL, local_run, NULL), 0);
    for (uint32_t t = 0; t < NTHREADS; t++)
        ASSERT_EQ(pthread_join(H[t].th, NULL), 0);
    ASSERT_EQ(pthread_join(local, NULL), 0);
    /* FetchAdd: no update lost (local __atomic increments included: core_atomic.h), and no
     * two operations saw the same original value */
    ASSERT_EQ_U(counters[0], NTHREADS * NFETCH + NLOCAL);
    uint32_t n = 0, tries = 0;
    for (uint32_t t = 0; t < NTHREADS; t++)
        for (uint32_t i = 0; i < NFETCH; i++)
            all[n++] = H[t].fetched[i];
    qsort(all, n, sizeof all[0], cmp_u64);
    for (uint32_t i = 1; i < n; i++)
        if (all[i] == all[i - 1])
            harness_fail(__FILE__, __LINE__, "two FetchAdds returned %llu",
                         (unsigned long long)all[i]);
    ASSERT_TRUE(all[n - 1] < NTHREADS * NFETCH + NLOCAL);
    /* CmpSwap: the successful swaps' original values are exactly 0 .. total - 1 */
    n = 0;
    for (uint32_t t = 0; t < NTHREADS; t++) {
        tries += H[t].cas_tries;
        for (uint32_t i = 0; i < NCAS; i++)
            all[n++] = H[t].swapped[i];
    }
    qsort(all, n, sizeof all[0], cmp_u64);
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ_U(all[i], i);
    ASSERT_EQ_U(counters[1], NTHREADS * NCAS);
    ASSERT_TRUE(tries >= NTHREADS * NCAS);
    printf("CmpSwap: %u attempts for %u increments\n", tries, NTHREADS * NCAS);
}
