/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dump_reorder_gen DIR: writes DIR/inorder.pcap and DIR/reordered.pcap with the library's pcap
 * writer. Both hold the same MPA connection (rev 2, CRC, markers both ways, a multi-segment
 * RDMA Write, Sends, a Read Request answered by a two-segment Read Response, FPDUs split over
 * TCP segments); the second delivers it the way a lossy network does: two segments swapped,
 * one segment retransmitted after a later one, one retransmission overlapping two segments
 * partly, and a duplicated MPA Request. `iwarp dump` must print the same text for both
 * (tests/wire/dump_reorder.sh).
 */
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "iwarp/errors.h"
#include "mpa/mpa_frame.h"
#include "trace/pcap_writer.h"
#include "trace/trace_pkt.h"
#include "wire/wire_mpa.h"
#include "wire/wire_segment.h"

#define STREAM_MAX 32768u
#define SEG_MAX    700u /* TCP payload per segment: FPDUs span segments */
#define MAX_SEGS   256u

struct seg {
    unsigned side;
    uint32_t off, len; /* in the side's stream */
};

static uint8_t stream[2][STREAM_MAX];
static uint32_t slen[2];
static struct seg segs[MAX_SEGS];
static unsigned nsegs;
static struct iwarp_mpa_tx tx[2];

/* Appends octets sent by side as one write: cut into segments of at most SEG_MAX. */
static void put(unsigned side, const uint8_t *p, uint32_t n)
{
    memcpy(stream[side] + slen[side], p, n);
    for (uint32_t o = 0; o < n; o += SEG_MAX)
        segs[nsegs++] = (struct seg){side, slen[side] + o, n - o < SEG_MAX ? n - o : SEG_MAX};
    slen[side] += n;
}

static void frame(unsigned side, bool reply)
{
    struct iwarp_mpa_frame f = {.reply = reply, .m = true, .c = true, .s = true, .rev = 2};
    f.v2 = (struct iwarp_mpa_ird_ord){.ird = 4, .ord = 4};
    f.pd = (const uint8_t *)"dump";
    f.pd_len = 4;
    uint8_t b[64];
    iwarp_ssize n = iwarp_mpa_frame_encode(b, sizeof b, &f);
    if (n > 0)
        put(side, b, (uint32_t)n);
}

/* One DDP segment from side, framed as one FPDU with the library's framer. */
static void fpdu(unsigned side, struct iwarp_wire_msg m, const uint8_t *payload, uint32_t len)
{
    static uint8_t seg[4096];
    iwarp_ssize n = iwarp_wire_segment_encode(seg, sizeof seg, &m, payload, len);
    if (n < 0)
        return;
    struct iovec in = {seg, (size_t)n}, out[IWARP_MPA_TX_IOV_MAX(1)];
    static struct iwarp_mpa_tx_scratch sc;
    iwarp_ssize k = iwarp_mpa_tx_frame(&tx[side], &in, 1, &sc, out, IWARP_MPA_TX_IOV_MAX(1));
    uint8_t buf[8192];
    uint32_t o = 0;
    for (iwarp_ssize i = 0; i < k; i++) {
        memcpy(buf + o, out[i].iov_base, out[i].iov_len);
        o += (uint32_t)out[i].iov_len;
    }
    put(side, buf, o);
}

static void build(void)
{
    uint8_t data[3000];
    for (unsigned i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7u + 1u);
    frame(0, false);
    frame(1, true);
    struct iwarp_mpa_tx_cfg cfg = {.crc = true, .markers = true, .stream_pos = 0};
    iwarp_mpa_tx_init(&tx[0], &cfg);
    iwarp_mpa_tx_init(&tx[1], &cfg);
    for (uint32_t i = 0; i < 3; i++) /* RDMA Write, 3 segments, TO contiguous */
        fpdu(0,
             (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_WRITE,
                                     .last = i == 2,
                                     .stag = 0x1234,
                                     .to = 0x10000 + i * 900u},
             data + i * 900u, 900);
    for (uint32_t i = 1; i <= 3; i++)
        fpdu(0, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND, .last = true, .msn = i},
             data, 100u * i);
    struct iwarp_wire_msg rr = {.opcode = IWARP_RDMAP_OP_READ_REQ, .last = true, .msn = 1};
    rr.body.read_req = (struct iwarp_rdmap_read_req){
        .sink_stag = 0x77, .sink_to = 0x4000, .size = 1600, .src_stag = 0x88, .src_to = 0};
    fpdu(0, rr, NULL, 0);
    fpdu(1, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_READ_RESP, .stag = 0x77, .to = 0x4000},
         data, 1000);
    fpdu(1,
         (struct iwarp_wire_msg){
             .opcode = IWARP_RDMAP_OP_READ_RESP, .last = true, .stag = 0x77, .to = 0x4000 + 1000},
         data + 1000, 600);
    fpdu(1, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND, .last = true, .msn = 1}, data,
         33);
}

static struct iwarp_pcap_writer *w;
static int failed;

/* Writes octets [off, off+len) of side's stream as one TCP segment (flags PSH|ACK; syn: SYN). */
static void emit(unsigned side, uint32_t off, uint32_t len, uint16_t flags)
{
    static const uint32_t isn[2] = {1000, 5000};
    uint8_t f[100 + SEG_MAX + 64];
    struct iwarp_pkt_tcp_seg h = {.ip_version = 4, .ttl = 64, .window = 65535};
    memcpy(h.src, "\x7f\x00\x00\x01", 4);
    memcpy(h.dst, "\x7f\x00\x00\x01", 4);
    h.sport = side ? 19875 : 40001;
    h.dport = side ? 40001 : 19875;
    h.seq = isn[side] + 1u + off - ((flags & IWARP_PKT_TCP_SYN) ? 1u : 0u);
    h.ack = isn[side ^ 1u] + 1u;
    h.tcp_flags = flags;
    size_t hl = iwarp_pkt_tcp_hdr_len(4);
    memcpy(f + hl, stream[side] + off, len);
    iwarp_ssize n = iwarp_pkt_build_tcp(f, sizeof f, &h, len);
    if (n < 0 || iwarp_pcap_writer_frame(w, f, (size_t)n) < 0)
        failed = 1;
}

static int write_file(const char *path, bool disorder)
{
    char err[IWARP_PCAP_ERRTEXT_LEN];
    if (iwarp_pcap_writer_open(&w, path, err, sizeof err) < 0) {
        fprintf(stderr, "dump_reorder_gen: %s: %s\n", path, err);
        return 1;
    }
    emit(0, 0, 0, IWARP_PKT_TCP_SYN);
    emit(1, 0, 0, IWARP_PKT_TCP_SYN | IWARP_PKT_TCP_ACK);
    emit(0, 0, 0, IWARP_PKT_TCP_ACK);
    const uint16_t pa = IWARP_PKT_TCP_PSH | IWARP_PKT_TCP_ACK;
    for (unsigned i = 0; i < nsegs; i++) {
        const struct seg *s = &segs[i];
        if (disorder && i == 0) { /* the MPA Request, then its retransmission */
            emit(s->side, s->off, s->len, pa);
            emit(s->side, s->off, s->len, pa);
            continue;
        }
        if (disorder && i == 4 && segs[5].side == s->side) { /* 5 before 4 */
            emit(segs[5].side, segs[5].off, segs[5].len, pa);
            emit(s->side, s->off, s->len, pa);
            i++;
            continue;
        }
        emit(s->side, s->off, s->len, pa);
        if (disorder && i == 7) /* segment 6 again, after 7 (a retransmission) */
            emit(segs[6].side, segs[6].off, segs[6].len, pa);
        if (disorder && i == 9 && segs[8].side == s->side) /* half of 8 and half of 9 again */
            emit(s->side, segs[8].off + segs[8].len / 2u, segs[8].len / 2u + segs[9].len / 2u, pa);
    }
    emit(0, slen[0], 0, IWARP_PKT_TCP_FIN | IWARP_PKT_TCP_ACK);
    if (iwarp_pcap_writer_close(w) < 0)
        failed = 1;
    return failed;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dump_reorder_gen DIR\n");
        return 2;
    }
    build();
    /* The disorder needs segments 4..9 to be the initiator's (the Write's FPDUs). */
    for (unsigned i = 4; i <= 9; i++)
        if (segs[i].side != 0)
            return fprintf(stderr, "dump_reorder_gen: unexpected segment layout\n"), 1;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/inorder.pcap", argv[1]);
    snprintf(b, sizeof b, "%s/reordered.pcap", argv[1]);
    return write_file(a, false) || write_file(b, true);
}
