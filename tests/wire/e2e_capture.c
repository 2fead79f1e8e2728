/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end captures for the wire judge: two contexts over 127.0.0.1, one of them traced
 * (struct iwarp_ctx_attr.trace_pcap), run Send, Send with Solicited Event, Send with
 * Invalidate, a 1 MiB RDMA Write (many FPDUs), a 1 MiB RDMA Read (many Read Response
 * segments), zero-length Send/Write/Read, a Send the other way, and a graceful disconnect, for
 * each MPA variant (one test each). Each test writes $IWARP_E2E_CAPTURE_DIR/<test>.pcap;
 * tests/wire/e2e_capture.sh hands every file to ../shared/tools/wire-check/check.sh.
 * The traced side alternates between client and server so both roles' tracing is judged.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>

#include "../support/stack_pair.h"

#define BIG        (1u << 20) /* the Write and the Read */
#define BUF        (2u * BIG) /* [0, BIG): Write sink / Send buffers, [BIG, 2 BIG): Read source */
#define SEND_A     1000u
#define SEND_B     3000u
#define SEND_BACK  2000u
#define RECV_SLOTS 4u

/* A side in thread-progress mode on its own context, traced into path (NULL: not traced). */
static void side_up(struct sp_side *s, const char *path)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_THREAD;
    a.trace_pcap = path;
    struct sp_side with = {.mode = IWARP_PROGRESS_THREAD};
    ASSERT_EQ(iwarp_ctx_create(&a, &with.ctx), 0);
    sp_side_init_full(s, &with, IWARP_PROGRESS_THREAD, NULL, 0, 64, false);
}

static void side_down(struct sp_side *s)
{
    struct iwarp_ctx *ctx = s->ctx;
    sp_side_fini(s);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0); /* flushes and closes the capture */
}

/* One capture: the whole workload over one connection made with param (used by both sides:
 * the accept's CRC and markers choices too). trace_server: which context is traced. */
static void capture(const char *name, const struct iwarp_conn_param *param, bool trace_server)
{
    const char *dir = getenv("IWARP_E2E_CAPTURE_DIR");
    if (!dir || !*dir)
        harness_fail(__FILE__, __LINE__, "IWARP_E2E_CAPTURE_DIR is not set");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.pcap", dir, name);
    remove(path);

    struct sp_side srv, cli;
    side_up(&srv, trace_server ? path : NULL);
    side_up(&cli, trace_server ? NULL : path);
    uint8_t *sb = calloc(1, BUF), *cb = calloc(1, BUF);
    ASSERT_TRUE(sb && cb);
    struct iwarp_mr *smr = sp_reg(&srv, sb, BUF, 0), *cmr = sp_reg(&cli, cb, BUF, 0);
    struct sp_pair p;
    memset(&p, 0, sizeof p);
    p.srv.mine = (struct sp_advert){.rkey = smr->rkey, .addr = (uintptr_t)sb, .len = BUF};
    p.cli.mine = (struct sp_advert){.rkey = cmr->rkey, .addr = (uintptr_t)cb, .len = BUF};
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = *param};
    cfg.param.responder_resources = 8;
    cfg.param.initiator_depth = 8;
    sp_connect_pairs(&srv, &cli, &p, 1, &cfg);
    /* zero-length Send (the initiator's first FPDU, after the RTR in peer-to-peer mode) */
    sp_first_send(&srv, &cli, &p, 1);

    /* Sends client -> server: plain, with Solicited Event, zero-length */
    for (uint32_t i = 0; i < RECV_SLOTS; i++)
        ASSERT_EQ(sp_post_recv(p.srv.qp, 100 + i, sb + i * 4096u, 4096, smr->lkey), 0);
    sp_fill(cb, SEND_A, 1);
    sp_fill(cb + 4096, SEND_B, 2);
    ASSERT_EQ(sp_post(p.cli.qp, 1, IWARP_WR_SEND, 0, cb, SEND_A, cmr->lkey, 0, 0), 0);
    ASSERT_EQ(sp_post(p.cli.qp, 2, IWARP_WR_SEND, IWARP_SEND_SOLICITED, cb + 4096, SEND_B,
                      cmr->lkey, 0, 0),
              0);
    ASSERT_EQ(sp_post(p.cli.qp, 3, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    for (int i = 0; i < 3; i++)
        sp_poll_ok(&cli, &srv, IWARP_WC_SEND);
    struct iwarp_wc wc = sp_poll_ok(&srv, &cli, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, SEND_A);
    SP_ASSERT_PATTERN(sb, SEND_A, 1);
    wc = sp_poll_ok(&srv, &cli, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, SEND_B);
    SP_ASSERT_PATTERN(sb + 4096, SEND_B, 2);
    wc = sp_poll_ok(&srv, &cli, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, 0);

    /* RDMA Write of 1 MiB (MULPDU-sized FPDUs) and a zero-length one */
    sp_fill(cb, BIG, 3);
    ASSERT_EQ(sp_post(p.cli.qp, 4, IWARP_WR_RDMA_WRITE, 0, cb, BIG, cmr->lkey, p.cli.peer.addr,
                      p.cli.peer.rkey),
              0);
    ASSERT_EQ(
        sp_post(p.cli.qp, 5, IWARP_WR_RDMA_WRITE, 0, NULL, 0, 0, p.cli.peer.addr, p.cli.peer.rkey),
        0);
    /* RDMA Read of 1 MiB by the client (many Read Response segments from the server) and a
     * zero-length one */
    uint8_t *sink = cb + BIG;
    sp_fill(sb + BIG, BIG, 4);
    ASSERT_EQ(sp_post(p.cli.qp, 6, IWARP_WR_RDMA_READ, 0, sink, BIG, cmr->lkey,
                      p.cli.peer.addr + BIG, p.cli.peer.rkey),
              0);
    ASSERT_EQ(sp_post(p.cli.qp, 7, IWARP_WR_RDMA_READ, 0, sink, 0, cmr->lkey, p.cli.peer.addr + BIG,
                      p.cli.peer.rkey),
              0);
    sp_poll_ok(&cli, &srv, IWARP_WC_RDMA_WRITE);
    sp_poll_ok(&cli, &srv, IWARP_WC_RDMA_WRITE);
    sp_poll_ok(&cli, &srv, IWARP_WC_RDMA_READ);
    sp_poll_ok(&cli, &srv, IWARP_WC_RDMA_READ);
    SP_ASSERT_PATTERN(sb, BIG, 3);
    SP_ASSERT_PATTERN(sink, BIG, 4);

    /* a Send server -> client */
    ASSERT_EQ(sp_post_recv(p.cli.qp, 200, cb, 4096, cmr->lkey), 0);
    sp_fill(sb + 8192, SEND_BACK, 5);
    ASSERT_EQ(sp_post(p.srv.qp, 8, IWARP_WR_SEND, 0, sb + 8192, SEND_BACK, smr->lkey, 0, 0), 0);
    sp_poll_ok(&srv, &cli, IWARP_WC_SEND);
    wc = sp_poll_ok(&cli, &srv, IWARP_WC_RECV);
    ASSERT_EQ(wc.byte_len, SEND_BACK);
    SP_ASSERT_PATTERN(cb, SEND_BACK, 5);

    /* Send with Invalidate of the server's STag, last: the server's MR is unusable after it */
    sp_fill(cb + 4096, 16, 6);
    ASSERT_EQ(sp_post(p.cli.qp, 9, IWARP_WR_SEND_WITH_INV, 0, cb + 4096, 16, cmr->lkey, 0,
                      p.cli.peer.rkey),
              0);
    sp_poll_ok(&cli, &srv, IWARP_WC_SEND);
    wc = sp_poll_ok(&srv, &cli, IWARP_WC_RECV);
    ASSERT_TRUE(wc.wc_flags & IWARP_WC_WITH_INV);
    ASSERT_EQ_U(wc.invalidated_rkey, p.cli.peer.rkey);

    sp_disconnect_pairs(&srv, &cli, &p, 1, true);
    sp_destroy_pairs(&p, 1);
    ASSERT_EQ(iwarp_dereg_mr(smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(cmr), 0);
    side_down(&cli);
    side_down(&srv);
    free(sb);
    free(cb);
    FILE *f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    ASSERT_EQ(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    fclose(f);
    ASSERT_TRUE(size > (long)(2 * BIG)); /* the Write and the Read are in it */
    printf("  %s: %ld octets\n", path, size);
}

TEST(rev2_crc)
{
    capture("rev2_crc", &(struct iwarp_conn_param){.mpa_rev = 2, .crc = true}, false);
}

TEST(rev2_nocrc)
{
    capture("rev2_nocrc", &(struct iwarp_conn_param){.mpa_rev = 2}, true);
}

TEST(rev1_crc)
{
    capture("rev1_crc", &(struct iwarp_conn_param){.mpa_rev = 1, .crc = true}, true);
}

TEST(rev1_nocrc)
{
    capture("rev1_nocrc", &(struct iwarp_conn_param){.mpa_rev = 1}, false);
}

TEST(rev2_p2p_write)
{
    capture("rev2_p2p_write",
            &(struct iwarp_conn_param){
                .mpa_rev = 2, .crc = true, .peer_to_peer = true, .rtr_types = IWARP_CM_RTR_WRITE},
            false);
}

TEST(rev2_p2p_read)
{
    capture("rev2_p2p_read",
            &(struct iwarp_conn_param){
                .mpa_rev = 2, .crc = true, .peer_to_peer = true, .rtr_types = IWARP_CM_RTR_READ},
            true);
}

TEST(rev2_p2p_send)
{
    capture("rev2_p2p_send",
            &(struct iwarp_conn_param){
                .mpa_rev = 2, .peer_to_peer = true, .rtr_types = IWARP_CM_RTR_SEND},
            false);
}

/* Markers on live loopback: Linux reports TCP_MAXSEG 32768 on the accepted socket (32741 on the
 * connecting one), so every full-size FPDU the server sends (the Read Responses) is 32768 octets,
 * a multiple of the 512-octet marker interval, and ends exactly where the next marker goes:
 * RFC 5044 §4.3 puts that marker (FPDUPTR 0) at the start of the next FPDU. */
TEST(rev2_crc_markers)
{
    capture("rev2_crc_markers",
            &(struct iwarp_conn_param){.mpa_rev = 2, .crc = true, .markers = true}, false);
}

TEST(rev1_nocrc_markers)
{
    capture("rev1_nocrc_markers", &(struct iwarp_conn_param){.mpa_rev = 1, .markers = true}, true);
}
