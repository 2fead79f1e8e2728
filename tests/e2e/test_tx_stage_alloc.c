/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An MPA/TCP connection's TX staging ring (IWARP_LLP_CONN_TX_STAGE octets, 127 KiB: cm_tcp.c
 * conn_stage_tx) is allocated only on a side whose Read Responses need it, once the MPA
 * negotiation has settled: CRC on (RFC 5044 §7.1.1: either frame's C=1) and an IRD above 0 on
 * that side (RFC 6581 §9.1). Each side's context counts, through its allocation hooks, the
 * blocks of that size it is asked for while a pair connects over loopback, and then while it
 * moves data (none: nothing is allocated on the data path).
 *  - CRC off: none, and Reads both ways go from registered memory;
 *  - CRC on, IRD 0 on both sides: none (a Read Request would be Terminated, never answered);
 *  - CRC on, IRD 4: one on each side, and Reads both ways go through them;
 *  - CRC on, IRD 0 asked with a Read RTR: RFC 6581 §9.1 raises the responder's IRD to 1, so
 *    the server has one and the client none; the client's Read is answered.
 * The whole-life allocation failures, this one included, are e2e.test_alloc_failures's.
 */
#define _GNU_SOURCE 1

#include "alloc_count.h"
#include "llp/llp_conn.h"
#include "stack_pair.h"

#define LEN (64u << 10)

static struct alloc_count srv_allocs, cli_allocs;

/* A Read of LEN octets by the client (else the server) from the other end's buffer, the data
 * checked. */
static void read_from_peer(struct sp_rig *r, bool by_client, uint32_t seed)
{
    struct sp_side *me = by_client ? &r->cli : &r->srv, *peer = by_client ? &r->srv : &r->cli;
    struct sp_end *e = by_client ? &r->pair.cli : &r->pair.srv;
    uint8_t *src = by_client ? r->sbuf : r->cbuf, *dst = by_client ? r->cbuf : r->sbuf;
    struct iwarp_mr *mr = by_client ? r->cmr : r->smr;
    sp_fill(src, LEN, seed);
    memset(dst, 0, LEN);
    ASSERT_EQ(
        sp_post(e->qp, seed, IWARP_WR_RDMA_READ, 0, dst, LEN, mr->lkey, e->peer.addr, e->peer.rkey),
        0);
    ASSERT_EQ_U(sp_poll_ok(me, peer, IWARP_WC_RDMA_READ).wr_id, seed);
    SP_ASSERT_PATTERN(dst, LEN, seed);
}

/* Connect a pair with param on both sides and expect srv_stages and cli_stages staging rings;
 * then Reads by the client and by the server as asked, nothing more allocated meanwhile. */
static void expect_stages(const struct iwarp_conn_param *param, unsigned srv_stages,
                          unsigned cli_stages, bool cli_reads, bool srv_reads)
{
    struct sp_rig r;
    memset(&r, 0, sizeof r);
    alloc_count_init(&srv_allocs, IWARP_LLP_CONN_TX_STAGE);
    alloc_count_init(&cli_allocs, IWARP_LLP_CONN_TX_STAGE);
    sp_side_init_full(&r.srv, NULL, IWARP_PROGRESS_CALLER, &srv_allocs.hooks, 0, 64, false);
    sp_side_init_full(&r.cli, NULL, IWARP_PROGRESS_CALLER, &cli_allocs.hooks, 0, 64, false);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 8, .max_recv_wr = 8}, .sq_sig_all = 1};
    cfg.param = *param;
    sp_rig_connect(&r, LEN, &cfg);
    ASSERT_EQ_U(atomic_load(&srv_allocs.watched), srv_stages);
    ASSERT_EQ_U(atomic_load(&cli_allocs.watched), cli_stages);
    unsigned srv_before = atomic_load(&srv_allocs.allocs);
    unsigned cli_before = atomic_load(&cli_allocs.allocs);
    for (uint32_t k = 0; k < 4; k++) {
        if (cli_reads)
            read_from_peer(&r, true, 10 + k);
        if (srv_reads)
            read_from_peer(&r, false, 20 + k);
    }
    ASSERT_EQ_U(atomic_load(&srv_allocs.allocs), srv_before);
    ASSERT_EQ_U(atomic_load(&cli_allocs.allocs), cli_before);
    sp_rig_down(&r);
}

TEST(crc_off_allocates_no_staging_ring)
{
    struct iwarp_conn_param p = {.crc = false, .responder_resources = 4, .initiator_depth = 4};
    expect_stages(&p, 0, 0, true, true);
}

TEST(crc_on_with_ird_0_allocates_no_staging_ring)
{
    struct iwarp_conn_param p = {.crc = true, .responder_resources = 0, .initiator_depth = 0};
    expect_stages(&p, 0, 0, false, false);
}

TEST(crc_on_with_ird_4_allocates_one_on_each_side)
{
    struct iwarp_conn_param p = {.crc = true, .responder_resources = 4, .initiator_depth = 4};
    expect_stages(&p, 1, 1, true, true);
}

TEST(crc_on_with_a_read_rtr_raising_the_responders_ird_allocates_on_the_server_only)
{
    /* RFC 6581 §9.1: the responder's IRD 0 becomes 1 for a zero-length Read RTR; the
     * initiator's stays 0 and the responder's ORD is at most it: only the client reads */
    struct iwarp_conn_param p = {.crc = true,
                                 .responder_resources = 0,
                                 .initiator_depth = 1,
                                 .peer_to_peer = true,
                                 .rtr_types = IWARP_CM_RTR_READ};
    expect_stages(&p, 1, 0, true, false);
}
