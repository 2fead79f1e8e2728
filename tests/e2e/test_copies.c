/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Copies per payload octet, for each mode (docs/design.md, "Copies per octet"): counted by the
 * library's own copy counter (util/copy.h: every payload copy the library makes; the kernel's
 * copies into and out of sockets are not its own). Both sides run in caller mode on this one
 * thread, so every copy lands on this thread's counter. For each mode one message crosses a
 * connected pair over real loopback, and the copies it cost per payload octet must match the
 * figure the design states:
 *  - MPA/TCP, CRC off, a large Write, Read or Send: nothing but the read-ahead bound, at most
 *    COPY_BOUND octets per FPDU (llp_conn_rx.c: the exact-read threshold and the read-ahead
 *    window behind a payload's end);
 *  - MPA/TCP, CRC on, a large Write: one copy (staged, verified, then placed), plus at most the
 *    same bound for the staging moves;
 *  - MPA/TCP, CRC on, a large Read: two, the one above at the requester and one at the
 *    responder, whose Read Response payload is copied into its TX staging ring in the pass that
 *    computes the CRC (llp_conn_tx.c: the Data Source may change before sendmsg);
 *  - an inline 64-octet Send: two (into the send queue at post; the small FPDU is read ahead
 *    and placed from there), plus its ULPDU copied into the FPDU the framer lays out whole
 *    for one send (mpa_frame.c frame_small: 82 octets, 1.28 per payload octet at 64), CRC on
 *    or off; with CRC off the headers read ahead may be moved once to the start of the
 *    staging area (18 octets: 0.28 per payload octet at 64);
 *  - DDP over SCTP, a large Write: two (gathered into one buffer for usrsctp_sendv; placed from
 *    usrsctp's receive buffer), plus a reassembly bound for a message usrsctp hands over in
 *    parts.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>

#include "mpa/mpa_frame.h"
#include "stack_pair.h"
#include "util/copy.h"
#include "wire/wire.h"

enum { BIG = 1u << 20, SMALL = 64 };
/* llp_conn_rx.c: ULPDU octets read exactly below COPY_MAX (2048) plus the RA_SMALL (1024)
 * window read ahead behind a directly placed payload. */
#define COPY_BOUND   3072.0
/* A small FPDU's ULPDU (header and payload) copied whole into its scratch by the framer, per
 * payload octet (mpa_frame.c frame_small): one send, nothing gathered. */
#define SMALL_FRAMED ((double)(IWARP_DDP_UNTAGGED_HDR_LEN + SMALL) / SMALL)
/* Loopback's MSS gives FPDUs of up to 64768 ULPDU octets (RFC 5044 §3): at least this many
 * FPDUs carry BIG octets. */
#define FPDUS_MIN    (BIG / 64768.0)

static void rig_up(struct sp_rig *r, enum iwarp_port_space ps, bool crc)
{
    memset(r, 0, sizeof *r);
    sp_side_init(&r->srv, IWARP_PROGRESS_CALLER, 64);
    sp_side_init(&r->cli, IWARP_PROGRESS_CALLER, 64);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 8,
                                 .max_recv_wr = 8,
                                 .max_send_sge = 1,
                                 .max_recv_sge = 1,
                                 .max_inline_data = SMALL},
                         .sq_sig_all = 1,
                         .param = {.crc = crc, .responder_resources = 1, .initiator_depth = 1},
                         .ps = ps};
    sp_rig_connect(r, BIG, &cfg);
}

/* Move len octets client -> server by op (a Read moves them server -> client) and return the
 * copies per octet it cost, both sides together; the data is checked. */
static double copies_per_octet(struct sp_rig *r, enum iwarp_wr_opcode op, uint32_t len,
                               unsigned flags)
{
    bool read = op == IWARP_WR_RDMA_READ;
    uint8_t *from = read ? r->sbuf : r->cbuf, *to = read ? r->cbuf : r->sbuf;
    sp_fill(from, len, len);
    memset(to, 0, len);
    struct iwarp_wc wc;
    if (op == IWARP_WR_SEND)
        ASSERT_EQ(sp_post_recv(r->pair.srv.qp, 1, r->sbuf, len, r->smr->lkey), 0);
    uint64_t before = iwarp_copied_octets;
    ASSERT_EQ(sp_post(r->pair.cli.qp, 2, op, flags, r->cbuf, len, r->cmr->lkey,
                      r->pair.cli.peer.addr, r->pair.cli.peer.rkey),
              0);
    sp_poll_n(&r->cli, &r->srv, &wc, 1);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    if (op == IWARP_WR_SEND) {
        sp_poll_n(&r->srv, &r->cli, &wc, 1);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ_U(wc.byte_len, len);
    } else if (op == IWARP_WR_RDMA_WRITE) {
        /* a Send behind it: its arrival proves the Write placed (RFC 5040 §5: in order) */
        ASSERT_EQ(sp_post_recv(r->pair.srv.qp, 3, NULL, 0, 0), 0);
        ASSERT_EQ(sp_post(r->pair.cli.qp, 4, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
        sp_poll_n(&r->cli, &r->srv, &wc, 1);
        sp_poll_n(&r->srv, &r->cli, &wc, 1);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    }
    uint64_t copied = iwarp_copied_octets - before;
    SP_ASSERT_PATTERN(to, len, len);
    return (double)copied / len;
}

static void expect_between(const char *mode, double got, double lo, double hi)
{
    printf("  %-44s %.4f copies per octet (expected %.4f .. %.4f)\n", mode, got, lo, hi);
    if (got < lo || got > hi)
        harness_fail(__FILE__, __LINE__, "%s: %.4f copies per octet, not in %.4f .. %.4f", mode,
                     got, lo, hi);
}

TEST(tcp_crc_off_places_large_messages_without_copying_them)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PS_TCP, false);
    /* at most COPY_BOUND per FPDU; FPDUs are at least BIG / 64768 */
    double bound = COPY_BOUND * (FPDUS_MIN + 1.0) / BIG;
    expect_between("TCP, CRC off, 1 MiB Write", copies_per_octet(&r, IWARP_WR_RDMA_WRITE, BIG, 0),
                   0, bound);
    expect_between("TCP, CRC off, 1 MiB Read", copies_per_octet(&r, IWARP_WR_RDMA_READ, BIG, 0), 0,
                   bound);
    expect_between("TCP, CRC off, 1 MiB Send", copies_per_octet(&r, IWARP_WR_SEND, BIG, 0), 0,
                   bound);
    expect_between("TCP, CRC off, inline 64 B Send",
                   copies_per_octet(&r, IWARP_WR_SEND, SMALL, IWARP_SEND_INLINE), 2 + SMALL_FRAMED,
                   2 + SMALL_FRAMED + (double)IWARP_DDP_UNTAGGED_HDR_LEN / SMALL);
    sp_rig_down(&r);
}

TEST(tcp_crc_on_copies_once_after_verifying)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PS_TCP, true);
    double bound = COPY_BOUND * (FPDUS_MIN + 1.0) / BIG;
    expect_between("TCP, CRC on, 1 MiB Write", copies_per_octet(&r, IWARP_WR_RDMA_WRITE, BIG, 0), 1,
                   1 + bound);
    expect_between("TCP, CRC on, 1 MiB Read", copies_per_octet(&r, IWARP_WR_RDMA_READ, BIG, 0), 2,
                   2 + bound);
    expect_between("TCP, CRC on, inline 64 B Send",
                   copies_per_octet(&r, IWARP_WR_SEND, SMALL, IWARP_SEND_INLINE), 2 + SMALL_FRAMED,
                   2 + SMALL_FRAMED);
    sp_rig_down(&r);
}

TEST(sctp_copies_twice)
{
    struct sp_rig r;
    rig_up(&r, IWARP_PS_SCTP, false);
    /* usrsctp may hand a message over in parts: reassembly copies it once more, at most */
    expect_between("SCTP, 1 MiB Write", copies_per_octet(&r, IWARP_WR_RDMA_WRITE, BIG, 0), 2, 3);
    sp_rig_down(&r);
}
