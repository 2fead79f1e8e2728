/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP transmit segmentation: segment counts and boundaries, header fields decoded back, MO/TO
 * continuity, L only on the last, zero-copy slices, single-segment opcodes, every error. */
#include <sys/uio.h>

#include "ddp/ddp_tx.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "wire/wire_segment.h"

#define MAX_SEGS 4096

/* What one run of the segmenter produced, flattened. */
struct run {
    size_t nseg;
    uint8_t hdr[MAX_SEGS][IWARP_DDP_TX_HDR_MAX];
    size_t hlen[MAX_SEGS];
    size_t plen[MAX_SEGS];
    struct iovec sl[8 * MAX_SEGS]; /* all slices, in order */
    size_t nsl;
};

static struct run R; /* large: static, one test at a time per process */

/* Segments the whole message and checks the invariants every message must hold: each header
 * decodes (payload appended virtually: the decoder needs only the header here) with the
 * message's fields, MO/TO continuous, L only on the last segment, each segment <= max_seg,
 * and the slices cover the gather list's first len octets exactly once, in order, by pointer. */
static void run_and_check(const struct iwarp_wire_msg *wm, const struct iovec *iov, size_t iovcnt,
                          size_t len, uint32_t max_seg)
{
    struct iwarp_ddp_tx_msg m;
    ASSERT_EQ(iwarp_ddp_tx_init(&m, wm, iov, iovcnt, len), 0);
    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(wm->opcode);
    R.nseg = R.nsl = 0;
    uint64_t sent = 0;
    for (;;) {
        ASSERT_TRUE(R.nseg < MAX_SEGS);
        size_t np = 99;
        iwarp_ssize h = iwarp_ddp_tx_next(&m, max_seg, R.hdr[R.nseg], IWARP_DDP_TX_HDR_MAX,
                                          R.sl + R.nsl, 8, &np);
        ASSERT_TRUE(h >= 0);
        if (h == 0) {
            ASSERT_EQ(np, 0);
            break;
        }
        size_t pl = 0;
        for (size_t i = 0; i < np; i++) {
            ASSERT_TRUE(R.sl[R.nsl + i].iov_len > 0);
            pl += R.sl[R.nsl + i].iov_len;
        }
        ASSERT_TRUE((size_t)h + pl <= max_seg);
        /* decode the header: the decoder sees a segment of header + pl zero octets */
        static uint8_t seg[IWARP_DDP_SEG_MAX];
        memcpy(seg, R.hdr[R.nseg], (size_t)h);
        memset(seg + h, 0, pl);
        struct iwarp_wire_segment s;
        ASSERT_EQ(iwarp_wire_segment_decode(seg, (size_t)h + pl, &s, NULL), 0);
        ASSERT_EQ(s.opcode, wm->opcode);
        ASSERT_EQ(s.payload_len, pl);
        ASSERT_EQ(s.ddp.tagged, op->tagged);
        if (op->tagged) {
            ASSERT_EQ_U(s.ddp.stag, wm->stag);
            ASSERT_EQ_U(s.ddp.to, wm->to + sent); /* RFC 5041 §5.2 */
        } else {
            ASSERT_EQ_U(s.ddp.qn, op->qn);
            ASSERT_EQ_U(s.ddp.msn, wm->msn);
            ASSERT_EQ_U(s.ddp.mo, sent); /* RFC 5041 §4.3 */
            if (op->inv_stag)
                ASSERT_EQ_U(s.inv_stag, wm->inv_stag);
        }
        sent += pl;
        ASSERT_EQ(s.ddp.last, sent == len);
        ASSERT_EQ(iwarp_ddp_tx_done(&m), s.ddp.last);
        R.hlen[R.nseg] = (size_t)h;
        R.plen[R.nseg] = pl;
        R.nseg++;
        R.nsl += np;
    }
    ASSERT_EQ_U(sent, len);
    ASSERT_TRUE(R.nseg >= 1);
    ASSERT_TRUE(iwarp_ddp_tx_done(&m));
    /* pointer identity: walk the gather list alongside the slices */
    size_t i = 0, off = 0, covered = 0;
    for (size_t k = 0; k < R.nsl; k++) {
        while (off == iov[i].iov_len)
            i++, off = 0;
        ASSERT_TRUE(R.sl[k].iov_base == (uint8_t *)iov[i].iov_base + off);
        ASSERT_TRUE(R.sl[k].iov_len <= iov[i].iov_len - off);
        off += R.sl[k].iov_len;
        covered += R.sl[k].iov_len;
    }
    ASSERT_EQ(covered, len);
}

static uint8_t big[1u << 20];

static const struct iwarp_wire_msg SEND = {.opcode = IWARP_RDMAP_OP_SEND, .msn = 7};
static const struct iwarp_wire_msg WRITE = {
    .opcode = IWARP_RDMAP_OP_WRITE, .stag = 0x1234, .to = 0x100000000ull};

/* RFC 5041 §5.2 example: a 2048-octet untagged message, MULPDU 1500 -> MO 0 with 1482 octets,
 * MO 1482 with 566. Headers written by hand from RFC 5041 §4.1/§4.3 and RFC 5040 §4.1. */
TEST(rfc5041_untagged_example)
{
    struct iovec iov = {big, 2048};
    run_and_check(&SEND, &iov, 1, 2048, 1500);
    ASSERT_EQ(R.nseg, 2);
    ASSERT_EQ(R.plen[0], 1482);
    ASSERT_EQ(R.plen[1], 566);
    uint8_t e0[18], e1[18];
    /* DDP ctrl T0 L0 DV1; RDMAP RV1 Send(3); Inv STag 0; QN 0; MSN 7; MO */
    harness_hex("01 43 00000000 00000000 00000007 00000000", e0, sizeof e0);
    harness_hex("41 43 00000000 00000000 00000007 000005ca", e1, sizeof e1);
    ASSERT_EQ(R.hlen[0], 18);
    ASSERT_MEM_EQ(R.hdr[0], e0, 18);
    ASSERT_MEM_EQ(R.hdr[1], e1, 18);
}

/* RFC 5041 §5.2 example: tagged, 2048 octets, initial TO 16384, MULPDU 1500 -> TO 16384 with
 * 1486 octets, TO 17870 with 562. */
TEST(rfc5041_tagged_example)
{
    struct iwarp_wire_msg w = {.opcode = IWARP_RDMAP_OP_WRITE, .stag = 0xA1B2C3D4, .to = 16384};
    struct iovec iov = {big, 2048};
    run_and_check(&w, &iov, 1, 2048, 1500);
    ASSERT_EQ(R.nseg, 2);
    ASSERT_EQ(R.plen[0], 1486);
    ASSERT_EQ(R.plen[1], 562);
    uint8_t e0[14], e1[14];
    /* DDP ctrl T1 L0 DV1; RDMAP RV1 Write(0); STag; TO 0x4000 then 17870 = 0x45CE */
    harness_hex("81 40 a1b2c3d4 0000000000004000", e0, sizeof e0);
    harness_hex("c1 40 a1b2c3d4 00000000000045ce", e1, sizeof e1);
    ASSERT_MEM_EQ(R.hdr[0], e0, 14);
    ASSERT_MEM_EQ(R.hdr[1], e1, 14);
}

/* Sizes 0, 1, room-1, room, room+1 (room = max_seg - header) for both kinds. */
TEST(boundary_sizes)
{
    const struct iwarp_wire_msg *msgs[] = {&SEND, &WRITE};
    const uint32_t hl[] = {18, 14};
    for (int k = 0; k < 2; k++) {
        uint32_t max_seg = 1024, room = max_seg - hl[k];
        size_t sizes[] = {0, 1, room - 1, room, room + 1, 2 * room, 2 * room + 1};
        size_t segs[] = {1, 1, 1, 1, 2, 2, 3};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            struct iovec iov = {big, sizes[i]};
            run_and_check(msgs[k], &iov, 1, sizes[i], max_seg);
            ASSERT_EQ(R.nseg, segs[i]);
            for (size_t s = 0; s + 1 < R.nseg; s++)
                ASSERT_EQ(R.plen[s], room); /* every segment but the last is full */
        }
    }
}

/* 1 MiB over odd-sized pieces, with empty pieces in between, at MPA's largest MULPDU and at a
 * small one; untagged, tagged, and Send with Invalidate. */
TEST(one_mib_odd_pieces)
{
    static const size_t sz[] = {1, 3, 4095, 4096, 0, 4097, 65535, 65536, 7, 0, 131071};
    struct iovec iov[64];
    size_t n = 0, off = 0;
    for (size_t i = 0; off < sizeof big; i++) {
        size_t l = sz[i % (sizeof sz / sizeof sz[0])];
        if (l > sizeof big - off)
            l = sizeof big - off;
        iov[n++] = (struct iovec){big + off, l};
        off += l;
    }
    ASSERT_TRUE(n < 64);
    struct iwarp_wire_msg inv = {.opcode = IWARP_RDMAP_OP_SEND_INV, .msn = 1, .inv_stag = 0xabcd};
    const struct iwarp_wire_msg *msgs[] = {&SEND, &WRITE, &inv};
    for (int k = 0; k < 3; k++) {
        run_and_check(msgs[k], iov, n, sizeof big, IWARP_MPA_MULPDU_MAX);
        uint32_t room = IWARP_MPA_MULPDU_MAX - (k == 1 ? 14u : 18u);
        ASSERT_EQ(R.nseg, (sizeof big + room - 1) / room);
        run_and_check(msgs[k], iov, n, sizeof big, 1000);
        ASSERT_EQ(R.nseg, (sizeof big + (1000 - R.hlen[0]) - 1) / (1000 - R.hlen[0]));
    }
    /* the largest segment DDP allows */
    run_and_check(&WRITE, iov, n, sizeof big, IWARP_DDP_SEG_MAX);
    ASSERT_EQ(R.plen[0], IWARP_DDP_SEG_MAX - 14);
}

/* Octets beyond len in the gather list are not sent; the last piece is cut. */
TEST(gather_list_longer_than_len)
{
    struct iovec iov[2] = {{big, 10}, {big + 100, 10}};
    run_and_check(&SEND, iov, 2, 15, 100);
    ASSERT_EQ(R.nsl, 2);
    ASSERT_EQ(R.sl[1].iov_len, 5);
}

/* Read Response (tagged, opcode 2) with a TO near the top: TO + len == UINT64_MAX is fine. */
TEST(read_response_high_to)
{
    struct iwarp_wire_msg rr = {
        .opcode = IWARP_RDMAP_OP_READ_RESP, .stag = 9, .to = UINT64_MAX - 3000};
    struct iovec iov = {big, 3000};
    run_and_check(&rr, &iov, 1, 3000, 1500);
    ASSERT_EQ(R.nseg, 3);
    ASSERT_EQ(R.hdr[2][0], 0xC1); /* T, L, DV 1 */
    ASSERT_EQ(R.hdr[2][1], 0x42); /* RV 1, Read Response (0010b, RFC 5040 Figure 4) */
}

/* Single-segment opcodes: one segment with L, MO 0, the RDMAP header after the DDP header. */
TEST(single_segment_opcodes)
{
    struct iwarp_wire_msg rq = {.opcode = IWARP_RDMAP_OP_READ_REQ, .msn = 3};
    rq.body.read_req = (struct iwarp_rdmap_read_req){
        .sink_stag = 1, .sink_to = 2, .size = 3, .src_stag = 4, .src_to = 5};
    run_and_check(&rq, NULL, 0, 0, 46);
    ASSERT_EQ(R.nseg, 1);
    uint8_t e[46];
    /* RFC 5041 §4.3 + RFC 5040 §4.4 Figure 6: L, QN 1, MSN 3, MO 0, then the 28-octet body */
    harness_hex("41 41 00000000 00000001 00000003 00000000"
                "00000001 0000000000000002 00000003 00000004 0000000000000005",
                e, sizeof e);
    ASSERT_EQ(R.hlen[0], 46);
    ASSERT_MEM_EQ(R.hdr[0], e, 46);

    struct iwarp_wire_msg imm = {.opcode = IWARP_RDMAP_OP_IMM_DATA, .msn = 1};
    run_and_check(&imm, NULL, 0, 0, 26);
    struct iwarp_wire_msg ar = {.opcode = IWARP_RDMAP_OP_ATOMIC_REQ, .msn = 1};
    run_and_check(&ar, NULL, 0, 0, 70);
    struct iwarp_wire_msg as = {.opcode = IWARP_RDMAP_OP_ATOMIC_RESP, .msn = 1};
    run_and_check(&as, NULL, 0, 0, 30);
    struct iwarp_wire_msg t = {.opcode = IWARP_RDMAP_OP_TERMINATE, .msn = 1};
    t.body.term.ctrl.cause = (struct iwarp_term_cause){.layer = 0, .etype = 1, .ecode = 0};
    run_and_check(&t, NULL, 0, 0, 22);
    ASSERT_EQ(R.hlen[0], 22);

    /* one octet short of the header: no segment */
    struct iwarp_ddp_tx_msg m;
    uint8_t hdr[IWARP_DDP_TX_HDR_MAX];
    size_t np;
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &rq, NULL, 0, 0), 0);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 45, hdr, sizeof hdr, NULL, 0, &np), IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &t, NULL, 0, 0), 0);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 21, hdr, sizeof hdr, NULL, 0, &np), IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 22, hdr, sizeof hdr, NULL, 0, &np), 22);
    /* a Terminate the wire encoder refuses (D without the terminated header) */
    t.body.term.ctrl.hdrct = IWARP_TERM_FLAG_D;
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &t, NULL, 0, 0), 0);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 100, hdr, sizeof hdr, NULL, 0, &np), IWARP_ERR_INVAL);
    ASSERT_FALSE(iwarp_ddp_tx_done(&m));
}

TEST(init_errors)
{
    struct iwarp_ddp_tx_msg m;
    struct iovec iov = {big, 1};
    struct iwarp_wire_msg bad = {.opcode = 0xC};
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &bad, NULL, 0, 0), IWARP_ERR_INVAL); /* undefined opcode */
    struct iwarp_wire_msg rq = {.opcode = IWARP_RDMAP_OP_READ_REQ};
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &rq, &iov, 1, 1), IWARP_ERR_INVAL); /* payload on Read Req */
    struct iwarp_wire_msg term = {.opcode = IWARP_RDMAP_OP_TERMINATE};
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &term, &iov, 1, 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &SEND, NULL, 1, 0), IWARP_ERR_INVAL); /* NULL list */
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &SEND, &iov, 1, (size_t)UINT32_MAX + 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &SEND, &iov, 1, UINT32_MAX), 0); /* < 2^32 is allowed */
    struct iwarp_wire_msg w = {.opcode = IWARP_RDMAP_OP_WRITE, .to = UINT64_MAX - 9};
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &w, &iov, 1, 10), IWARP_ERR_INVAL); /* TO wrap */
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &w, &iov, 1, 9), 0);
    w.to = UINT64_MAX;
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &w, NULL, 0, 0), 0); /* zero length: no wrap */
}

/* Errors of next leave the message where it was: the same call with good arguments then
 * produces the segment an uninterrupted run would have. */
TEST(next_errors_do_not_advance)
{
    struct iovec iov[4] = {{big, 5}, {big + 5, 5}, {big + 10, 5}, {big + 15, 5}};
    struct iwarp_ddp_tx_msg m;
    uint8_t hdr[IWARP_DDP_TX_HDR_MAX];
    struct iovec out[4];
    size_t np = 7;
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &SEND, iov, 4, 20), 0);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, IWARP_DDP_SEG_MAX + 1, hdr, sizeof hdr, out, 4, &np),
              IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, out, 4, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 17, hdr, sizeof hdr, out, 4, &np), IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 18, hdr, sizeof hdr, out, 4, &np), IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, 17, out, 4, &np), IWARP_ERR_NOSPC);
    /* 12 octets span 3 pieces */
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, out, 2, &np), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, NULL, 0, &np), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, out, 3, &np), 18);
    ASSERT_EQ(np, 3);
    ASSERT_TRUE(out[0].iov_base == big && out[0].iov_len == 5);
    ASSERT_TRUE(out[2].iov_base == big + 10 && out[2].iov_len == 2);
    ASSERT_EQ(hdr[0], 0x01);
    /* the rest: 8 octets from big + 12 over 2 pieces; MO 12 */
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, out, 1, &np), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, out, 2, &np), 18);
    ASSERT_TRUE(out[0].iov_base == big + 12 && out[0].iov_len == 3);
    ASSERT_TRUE(out[1].iov_base == big + 15 && out[1].iov_len == 5);
    ASSERT_EQ(hdr[0], 0x41);
    ASSERT_EQ(hdr[17], 12);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, out, 2, &np), 0);
    ASSERT_EQ(np, 0);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 30, hdr, sizeof hdr, out, 2, &np), 0); /* stays done */
}

/* A gather list shorter than len fails when the segmenter reaches its end, not before. */
TEST(gather_list_too_short)
{
    struct iovec iov[2] = {{big, 10}, {big + 10, 0}};
    struct iwarp_ddp_tx_msg m;
    uint8_t hdr[IWARP_DDP_TX_HDR_MAX];
    struct iovec out[4];
    size_t np;
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &WRITE, iov, 2, 20), 0);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 14 + 8, hdr, sizeof hdr, out, 4, &np), 14);
    ASSERT_EQ(np, 1);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 14 + 8, hdr, sizeof hdr, out, 4, &np), IWARP_ERR_INVAL);
    ASSERT_FALSE(iwarp_ddp_tx_done(&m));
}

/* A zero-length message is one header-only segment with L, which may fill max_seg exactly. */
TEST(zero_length_header_only)
{
    struct iwarp_ddp_tx_msg m;
    uint8_t hdr[IWARP_DDP_TX_HDR_MAX];
    size_t np = 5;
    ASSERT_EQ(iwarp_ddp_tx_init(&m, &WRITE, NULL, 0, 0), 0);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 13, hdr, sizeof hdr, NULL, 0, &np), IWARP_ERR_FPDU_LEN);
    ASSERT_EQ(iwarp_ddp_tx_next(&m, 14, hdr, sizeof hdr, NULL, 0, &np), 14); /* exactly */
    ASSERT_EQ(np, 0);
    ASSERT_EQ(hdr[0], 0xC1);
    ASSERT_TRUE(iwarp_ddp_tx_done(&m));
}
