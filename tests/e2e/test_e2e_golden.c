/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Golden captures: the library's real engines end to end over the in-memory transport
 * (llp/llp_e2e: RDMAP queue pairs or DDP-level streams, MPA connections, llp_mem pipes, the
 * packet trace), with fixed STag generators, addresses, ports, Tagged Offsets and timestamps,
 * must write captures identical, octet for octet, to the ones under tests/vectors/golden/. They
 * pin what goes on the wire while the engine and transport layers are restructured: a change
 * that moves one octet fails here, naming the first packet and octet that differ.
 *
 * Each capture's exchange is also checked for what it must do (completions, placed data, the
 * Terminate's cause), so a golden file can only be regenerated from a run that works:
 *   IWARP_GOLDEN_UPDATE=1 build/dev/tests/test_e2e_golden
 * rewrites the .pcap files of tests/vectors/golden (see the README there); nothing else ever
 * writes them.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "llp/llp_e2e.h"
#include "mem/mem_stag.h"
#include "wire/wire.h"
#include "wire/wire_segment.h"

#define GOLDEN_DIR IWARP_TEST_VECTORS_DIR "/golden"

/* Each side's memory: one local MR over all of it, remote MRs over parts, fixed TOs. */
#define MEM_LEN    (64u << 10)
#define LOCAL_TO   0x10000000u /* the local MR's TO of octet 0 */
#define RECV_OFF   0x0000u     /* side 1: receive buffers; side 0: send sources */
#define RECV_LEN   0x8000u
#define SINK_OFF   0x8000u /* side 1: the Write sink; side 0: the Read sink */
#define SINK_LEN   0x2000u
#define SRC_OFF    0xa000u /* side 1: the Read source; side 0: its receive buffer */
#define SRC_LEN    0x2000u
#define INV_OFF    0xc000u /* side 1: two MRs of 4 KiB to be invalidated by the peer */
#define BACK_OFF   0xe000u /* side 1: what it sends back */
#define SINK_TO(s) ((s) == 1 ? 0x00a00000u : 0x00e00000u)
#define SRC_TO     0x00b00000u
#define INV_TO     0x00c00000u

#define SEND_A   33u
#define SEND_B   5000u /* several segments */
#define SEND_INV 10u
#define SEND_SEI 20u
#define WRITE    6000u
#define READ     5000u /* several Read Responses */
#define SEND_BK  100u
#define NRECV    4u

static struct iwarp_llp_e2e E;
static uint8_t MEM[2][MEM_LEN];
static uint32_t LKEY[2], SINK[2], SRC, INV[2];

static uint8_t pat(uint32_t seed, size_t i)
{
    uint32_t x = seed * 2654435761u ^ (uint32_t)i * 40503u;
    x ^= x >> 13;
    return (uint8_t)(x * 0x5bd1e995u >> 24);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pat(seed, i);
}

/* ---- comparing a capture with its golden file -------------------------------------------- */

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1u << 16, n = 0;
    uint8_t *b = malloc(cap);
    ASSERT_TRUE(b != NULL);
    size_t k;
    while ((k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap);
            ASSERT_TRUE(b != NULL);
        }
    }
    fclose(f);
    *len = n;
    return b;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Octets of a frame's Ethernet, IP and TCP headers (0 when it is not Ethernet/IP/TCP). */
static size_t headers_len(const uint8_t *d, size_t n)
{
    if (n < 14)
        return 0;
    size_t ip = 14, tcp;
    if (be16(d + 12) == 0x0800 && n >= ip + 20)
        tcp = ip + (size_t)(d[ip] & 0x0f) * 4u;
    else if (be16(d + 12) == 0x86dd && n >= ip + 40)
        tcp = ip + 40;
    else
        return 0;
    return n >= tcp + 20 ? tcp + (size_t)(d[tcp + 12] >> 4) * 4u : 0;
}

/* Where file offset off of capture f (the golden one) lies, the run's capture being g: "the
 * file header", or the packet (1 = the first, as Wireshark numbers frames) and its octet, in its
 * record header, its Ethernet/IP/TCP headers or its TCP payload; a header octet that differs
 * (a checksum, a length) is followed by the first payload octet of that packet that differs. */
static void locate(const uint8_t *f, size_t len, const uint8_t *g, size_t glen, size_t off,
                   char *out, size_t cap)
{
    if (off < 24) {
        snprintf(out, cap, "the pcap file header, octet %zu", off);
        return;
    }
    size_t p = 24, n = 1;
    while (p + 16 <= len) {
        size_t incl = le32(f + p + 8), end = p + 16 + incl;
        if (off < p + 16) {
            snprintf(out, cap, "packet #%zu, octet %zu of its record header (timestamp, lengths)",
                     n, off - p);
            return;
        }
        if (off < end) {
            const uint8_t *d = f + p + 16;
            size_t k = off - p - 16, h = headers_len(d, incl);
            if (k >= h) {
                snprintf(out, cap, "packet #%zu, octet %zu of its TCP payload", n, k - h);
                return;
            }
            size_t j = h;
            while (j < incl && p + 16 + j < glen && d[j] == g[p + 16 + j])
                j++;
            if (j < incl)
                snprintf(out, cap,
                         "packet #%zu, octet %zu of its Ethernet/IP/TCP headers (first "
                         "differing octet of its TCP payload: %zu)",
                         n, k, j - h);
            else
                snprintf(out, cap, "packet #%zu, octet %zu of its Ethernet/IP/TCP headers", n, k);
            return;
        }
        p = end;
        n++;
    }
    snprintf(out, cap, "past the last whole packet (#%zu)", n - 1);
}

static size_t count_packets(const uint8_t *f, size_t len)
{
    size_t p = 24, n = 0;
    while (p + 16 <= len) {
        p += 16 + le32(f + p + 8);
        n++;
    }
    return n;
}

/* The capture at got must equal the golden file name, octet for octet; with
 * IWARP_GOLDEN_UPDATE=1 it replaces the golden file instead, when it is the run that makes it
 * (update). */
static void expect_golden(const char *got, const char *name, bool update)
{
    char want_path[4096];
    snprintf(want_path, sizeof want_path, "%s/%s", GOLDEN_DIR, name);
    size_t glen = 0, wlen = 0;
    uint8_t *g = slurp(got, &glen);
    ASSERT_TRUE(g != NULL);
    const char *upd = getenv("IWARP_GOLDEN_UPDATE");
    if (update && upd && strcmp(upd, "1") == 0) {
        FILE *f = fopen(want_path, "wb");
        ASSERT_TRUE(f != NULL);
        ASSERT_EQ(fwrite(g, 1, glen, f), glen);
        ASSERT_EQ(fclose(f), 0);
        printf("  updated %s (%zu octets, %zu packets)\n", want_path, glen, count_packets(g, glen));
        free(g);
        return;
    }
    uint8_t *w = slurp(want_path, &wlen);
    if (!w)
        harness_fail(__FILE__, __LINE__,
                     "%s: cannot read the golden capture (regenerate with "
                     "IWARP_GOLDEN_UPDATE=1, see tests/vectors/golden/README.md)",
                     want_path);
    size_t i = 0;
    while (i < glen && i < wlen && g[i] == w[i])
        i++;
    if (i < glen || i < wlen) {
        char where[256];
        locate(w, wlen, g, glen, i, where, sizeof where);
        size_t k = 16;
        if (i < glen)
            harness_hexdump("run", g + i, glen - i < k ? glen - i : k);
        if (i < wlen)
            harness_hexdump("golden", w + i, wlen - i < k ? wlen - i : k);
        harness_fail(__FILE__, __LINE__,
                     "%s differs from the golden capture at file offset %zu: %s (run: %zu octets, "
                     "%zu packets; golden: %zu octets, %zu packets; the run's capture is kept "
                     "at %s)",
                     name, i, where, glen, count_packets(g, glen), wlen, count_packets(w, wlen),
                     got);
    }
    free(g);
    free(w);
    unlink(got);
}

/* ---- running a capture ------------------------------------------------------------------ */

static void tmp_path(char *path, size_t cap, const char *name)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, cap, "%s/golden_%d_%s", dir && *dir ? dir : "/tmp", (int)getpid(), name);
}

/* Set up E with cfg, writing to path; each side's memory registered. */
static void start(struct iwarp_llp_e2e_cfg *cfg, const char *path)
{
    cfg->pcap = path;
    ASSERT_EQ(iwarp_llp_e2e_init(&E, cfg), 0);
    const uint32_t lw = IWARP_MEM_ACCESS_LOCAL_WRITE, rw = IWARP_MEM_ACCESS_REMOTE_WRITE;
    for (unsigned s = 0; s < 2; s++) {
        memset(MEM[s], 0, MEM_LEN);
        ASSERT_EQ(iwarp_llp_e2e_reg(&E, s, MEM[s], LOCAL_TO, MEM_LEN, lw, &LKEY[s]), 0);
        ASSERT_EQ(
            iwarp_llp_e2e_reg(&E, s, MEM[s] + SINK_OFF, SINK_TO(s), SINK_LEN, lw | rw, &SINK[s]),
            0);
    }
    ASSERT_EQ(iwarp_llp_e2e_reg(&E, 1, MEM[1] + SRC_OFF, SRC_TO, SRC_LEN,
                                IWARP_MEM_ACCESS_REMOTE_READ, &SRC),
              0);
    for (unsigned k = 0; k < 2; k++)
        ASSERT_EQ(iwarp_llp_e2e_reg(&E, 1, MEM[1] + INV_OFF + k * 4096u, INV_TO + k * 0x10000u,
                                    4096, lw | rw, &INV[k]),
                  0);
}

/* One golden capture: exchange() run over a connection set up with cfg must end with both
 * streams closed and write exactly the golden file name. */
static void run(struct iwarp_llp_e2e_cfg *cfg, const char *name, void (*exchange)(void))
{
    char path[4096];
    tmp_path(path, sizeof path, name);
    start(cfg, path);
    exchange();
    ASSERT_TRUE(E.side[0].fin && E.side[1].fin); /* both ends of the stream were closed */
    ASSERT_EQ(iwarp_llp_e2e_fini(&E), 0);
    expect_golden(path, name, cfg->editor == NULL);
}

static void post(unsigned s, uint64_t id, enum iwarp_wr_opcode op, unsigned flags, uint32_t off,
                 uint32_t len, uint64_t raddr, uint32_t rkey)
{
    bool read = op == IWARP_WR_RDMA_READ; /* the sink: its STag and TO go to the peer */
    struct iwarp_sge sge = {.addr = (read ? SINK_TO(s) : LOCAL_TO) + off,
                            .length = len,
                            .lkey = read ? SINK[s] : LKEY[s]};
    ASSERT_EQ(iwarp_llp_e2e_post(&E, s, id, op, flags, &sge, raddr, rkey), 0);
}

/* A receive of [off, off + len) of side s's memory; DDP level: on queue id >> 8. */
static void post_recv(unsigned s, uint64_t id, uint32_t off, uint32_t len)
{
    struct iwarp_sge sge = {.addr = LOCAL_TO + off, .length = len, .lkey = LKEY[s]};
    ASSERT_EQ(iwarp_llp_e2e_post_recv(&E, s, (uint32_t)(id >> 8), id, &sge), 0);
}

static struct iwarp_wc wc_next(struct iwarp_core_cq *cq)
{
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(cq, &wc, 1), 1);
    return wc;
}

static void expect_wc(struct iwarp_core_cq *cq, uint64_t id, int opcode, uint32_t len,
                      unsigned flags)
{
    struct iwarp_wc wc = wc_next(cq);
    ASSERT_EQ_U(wc.wr_id, id);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, opcode);
    ASSERT_EQ(wc.byte_len, len);
    ASSERT_EQ(wc.wc_flags, flags);
}

static void expect_no_wc(struct iwarp_core_cq *cq)
{
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_core_cq_poll(cq, &wc, 1), 0);
}

/* ---- the RDMAP exchange ------------------------------------------------------------------- */

/* Side 0 sends Send, Send with SE, Send with Invalidate, Send with SE and Invalidate, an RDMA
 * Write of several segments, a zero-length Write and an RDMA Read answered by several Read
 * Responses; side 1 sends a Send back; side 0 disconnects gracefully. Every completion and every
 * placed octet is checked. */
static void rdmap_exchange(void)
{
    uint8_t *src = MEM[0] + RECV_OFF;
    fill(src, RECV_LEN, 1);
    fill(MEM[1] + SRC_OFF, SRC_LEN, 2);
    fill(MEM[1] + BACK_OFF, 0x1000, 3); /* the Send back */
    for (uint32_t k = 0; k < NRECV; k++)
        post_recv(1, 100 + k, RECV_OFF + k * RECV_LEN / NRECV, RECV_LEN / NRECV);
    post_recv(0, 200, SRC_OFF, SRC_LEN);
    ASSERT_EQ(iwarp_llp_e2e_connect(&E, NULL), 0);

    post(0, 1, IWARP_WR_SEND, 0, 0, SEND_A, 0, 0);
    post(0, 2, IWARP_WR_SEND, IWARP_SEND_SOLICITED, 0, SEND_B, 0, 0);
    post(0, 3, IWARP_WR_SEND_WITH_INV, 0, 0, SEND_INV, 0, INV[0]);
    post(0, 4, IWARP_WR_SEND_WITH_INV, IWARP_SEND_SOLICITED, 0, SEND_SEI, 0, INV[1]);
    post(0, 5, IWARP_WR_RDMA_WRITE, 0, 0, WRITE, SINK_TO(1), SINK[1]);
    post(0, 6, IWARP_WR_RDMA_WRITE, 0, 0, 0, SINK_TO(1), SINK[1]);
    post(0, 7, IWARP_WR_RDMA_READ, 0, 0, READ, SRC_TO, SRC);
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);

    static const uint32_t send_len[NRECV] = {SEND_A, SEND_B, SEND_INV, SEND_SEI};
    for (uint32_t k = 0; k < NRECV; k++) {
        struct iwarp_wc wc = wc_next(&E.side[1].rcq);
        ASSERT_EQ_U(wc.wr_id, 100 + k);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ(wc.opcode, IWARP_WC_RECV);
        ASSERT_EQ(wc.byte_len, send_len[k]);
        ASSERT_EQ(wc.wc_flags, k >= 2 ? IWARP_WC_WITH_INV : 0);
        if (k >= 2)
            ASSERT_EQ_U(wc.invalidated_rkey, INV[k - 2]);
        ASSERT_MEM_EQ(MEM[1] + RECV_OFF + k * RECV_LEN / NRECV, src, send_len[k]);
    }
    expect_no_wc(&E.side[1].rcq);
    static const int op[] = {IWARP_WC_SEND,     IWARP_WC_SEND,       IWARP_WC_SEND,
                             IWARP_WC_SEND,     IWARP_WC_RDMA_WRITE, IWARP_WC_RDMA_WRITE,
                             IWARP_WC_RDMA_READ};
    static const uint32_t len[] = {SEND_A, SEND_B, SEND_INV, SEND_SEI, WRITE, 0, READ};
    for (uint32_t k = 0; k < 7; k++)
        expect_wc(&E.side[0].scq, k + 1, op[k], len[k], 0);
    ASSERT_MEM_EQ(MEM[1] + SINK_OFF, src, WRITE);
    ASSERT_MEM_EQ(MEM[0] + SINK_OFF, MEM[1] + SRC_OFF, READ);

    post(1, 9, IWARP_WR_SEND, 0, BACK_OFF, SEND_BK, 0, 0);
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);
    expect_wc(&E.side[1].scq, 9, IWARP_WC_SEND, SEND_BK, 0);
    expect_wc(&E.side[0].rcq, 200, IWARP_WC_RECV, SEND_BK, 0);
    ASSERT_MEM_EQ(MEM[0] + SRC_OFF, MEM[1] + BACK_OFF, SEND_BK);

    ASSERT_EQ(iwarp_llp_e2e_disconnect(&E, 0), 0);
    ASSERT_EQ(E.side[0].nev + E.side[1].nev, 0);
}

TEST(rdmap_rev2_crc)
{
    /* RFC 6581 Rev 2, CRC asked by the initiator (RFC 5044 §7.1.1: on for both), no markers */
    struct iwarp_llp_e2e_cfg cfg;
    iwarp_llp_e2e_cfg_default(&cfg);
    run(&cfg, "rdmap_rev2_crc.pcap", rdmap_exchange);
}

TEST(rdmap_rev1_nocrc_markers)
{
    /* RFC 5044 Rev 1 (no enhanced word), CRC off, markers asked by both (both directions) */
    struct iwarp_llp_e2e_cfg cfg;
    iwarp_llp_e2e_cfg_default(&cfg);
    cfg.conn[0].neg.revision = 1;
    cfg.conn[0].neg.enhanced = false;
    cfg.conn[0].neg.crc = false;
    for (unsigned s = 0; s < 2; s++)
        cfg.conn[s].neg.markers = true;
    run(&cfg, "rdmap_rev1_nocrc_markers.pcap", rdmap_exchange);
}

/* RFC 6581 peer-to-peer: the initiator's first FPDU is a zero-length Read RTR, answered by a
 * zero-length Read Response; CRC and markers on; over IPv6 */
static void p2p_read_crc_markers_ipv6(struct iwarp_llp_e2e_cfg *cfg)
{
    iwarp_llp_e2e_cfg_default(cfg);
    cfg->conn[0].neg.peer2peer = true;
    cfg->conn[0].neg.rtr = cfg->conn[0].neg.rtr_pref = IWARP_MPA_RTR_READ;
    for (unsigned s = 0; s < 2; s++)
        cfg->conn[s].neg.markers = true;
    cfg->ipv6 = true;
}

TEST(rdmap_p2p_read_crc_markers_ipv6)
{
    struct iwarp_llp_e2e_cfg cfg;
    p2p_read_crc_markers_ipv6(&cfg);
    run(&cfg, "rdmap_p2p_read_crc_markers_ipv6.pcap", rdmap_exchange);
}

TEST(rdmap_p2p_send_nocrc)
{
    /* peer-to-peer with a Send RTR (queue 0's MSN 1, no receive consumed), CRC off, jumbo EMSS */
    struct iwarp_llp_e2e_cfg cfg;
    iwarp_llp_e2e_cfg_default(&cfg);
    cfg.conn[0].neg.crc = false;
    cfg.conn[0].neg.peer2peer = true;
    cfg.conn[0].neg.rtr = cfg.conn[0].neg.rtr_pref = IWARP_MPA_RTR_SEND;
    cfg.conn[0].emss = cfg.conn[1].emss = 9000;
    run(&cfg, "rdmap_p2p_send_nocrc.pcap", rdmap_exchange);
}

static void terminate_exchange(void)
{
    fill(MEM[0] + RECV_OFF, 64, 4);
    post_recv(1, 100, RECV_OFF, 64);
    ASSERT_EQ(iwarp_llp_e2e_connect(&E, NULL), 0);
    post(0, 1, IWARP_WR_SEND, 0, 0, 64, 0, 0);
    post(0, 2, IWARP_WR_RDMA_READ, 0, 0, 512, SRC_TO, SRC ^ 0xffu);
    post(0, 3, IWARP_WR_SEND, 0, 0, 16, 0, 0); /* flushed */
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);
    expect_wc(&E.side[1].rcq, 100, IWARP_WC_RECV, 64, 0);
    expect_wc(&E.side[0].scq, 1, IWARP_WC_SEND, 64, 0);
    const uint32_t cause = (uint32_t)IWARP_TERM_LAYER_RDMAP << 16 |
                           (uint32_t)IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT << 8 |
                           IWARP_TERM_RDMAP_INVALID_STAG;
    struct iwarp_wc wc = wc_next(&E.side[0].scq);
    ASSERT_EQ_U(wc.wr_id, 2);
    ASSERT_NE(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ_U(wc.vendor_err, cause);
    ASSERT_EQ(wc_next(&E.side[0].scq).status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(E.side[1].nev, 1);
    ASSERT_EQ(E.side[1].ev[0].type, IWARP_EVENT_QP_ACCESS_ERR);
    ASSERT_EQ_U(E.side[1].ev[0].cause, cause);
    ASSERT_FALSE(E.side[1].ev[0].from_peer);
    ASSERT_EQ(E.side[0].nev, 1);
    ASSERT_EQ_U(E.side[0].ev[0].cause, cause);
    ASSERT_TRUE(E.side[0].ev[0].from_peer);
}

TEST(rdmap_terminate)
{
    /* A Read Request naming a Data Source STag with the wrong key: the responder sends a
     * Terminate (RFC 5040 §4.8: Remote Protection Error, Invalid STag, with the Read Request
     * header: M, D and R), both streams end and the Read completes in error */
    struct iwarp_llp_e2e_cfg cfg;
    iwarp_llp_e2e_cfg_default(&cfg);
    run(&cfg, "rdmap_terminate.pcap", terminate_exchange);
}

/* ---- the DDP-level exchange --------------------------------------------------------------- */

static void ddp_send(unsigned s, uint64_t id, bool tagged, uint32_t qn_or_stag, uint64_t to,
                     uint32_t off, uint32_t len, const uint8_t *rsvdulp)
{
    struct iwarp_sge sge = {.addr = LOCAL_TO + off, .length = len, .lkey = LKEY[s]};
    ASSERT_EQ(iwarp_llp_e2e_ddp_send(&E, s, id, tagged, tagged ? 0 : qn_or_stag,
                                     tagged ? qn_or_stag : 0, to, &sge, rsvdulp),
              0);
}

static void ddp_exchange(void)
{
    uint8_t *src = MEM[0] + RECV_OFF;
    fill(src, RECV_LEN, 5);
    fill(MEM[1] + BACK_OFF, 64, 6);
    post_recv(1, 0, RECV_OFF, 0x800); /* queue 0 (the queue is wr_id >> 8) */
    post_recv(1, 1, RECV_OFF + 0x800, 0x1000);
    post_recv(1, 2, RECV_OFF + 0x1800, 0x800);
    post_recv(0, 3, SRC_OFF, 64);
    ASSERT_EQ(iwarp_llp_e2e_connect(&E, NULL), 0);
    static const uint8_t send_ulp[5] = {0x43, 0, 0, 0, 0},
                         inv_ulp[5] = {0x44, 0x12, 0x34, 0x56, 0x78}, write_ulp[1] = {0x40};
    ddp_send(0, 1, false, 0, 0, 0, 40, send_ulp);
    ddp_send(0, 2, false, 0, 0, 0, 3000, inv_ulp);
    ddp_send(0, 3, true, SINK[1], SINK_TO(1), 0, 4000, write_ulp);
    ddp_send(0, 4, false, 0, 0, 0, 0, send_ulp);
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);
    static const uint32_t len[] = {40, 3000, 4000, 0};
    for (uint32_t k = 0; k < 4; k++)
        expect_wc(&E.side[0].scq, k + 1, IWARP_WC_DDP_SEND, len[k], 0);
    static const uint32_t at[] = {0, 0x800, 0, 0x1800};
    for (uint32_t k = 0; k < 4; k++) {
        struct iwarp_wc wc = wc_next(&E.side[1].rcq);
        if (k == 2) { /* RFC 5041 §5.4: a tagged message is Delivered with its STag */
            ASSERT_EQ(wc.opcode, IWARP_WC_DDP_TAGGED_RECV);
            ASSERT_EQ_U(wc.ddp_stag, SINK[1]);
            ASSERT_EQ(wc.ddp_rsvdulp[0], 0x40);
            continue;
        }
        ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
        ASSERT_EQ_U(wc.wr_id, k < 2 ? k : 2);
        ASSERT_EQ(wc.ddp_qn, 0);
        ASSERT_EQ(wc.ddp_msn, k < 2 ? k + 1 : 3); /* RFC 5041 §4.3: MSN from 1 per queue */
        ASSERT_EQ(wc.byte_len, len[k]);
        ASSERT_MEM_EQ(wc.ddp_rsvdulp, k == 1 ? inv_ulp : send_ulp, 5);
        ASSERT_MEM_EQ(MEM[1] + RECV_OFF + at[k], src, len[k]);
    }
    expect_no_wc(&E.side[1].rcq);
    ASSERT_MEM_EQ(MEM[1] + SINK_OFF, src, 4000);
    ddp_send(1, 9, false, 0, 0, BACK_OFF, 64, send_ulp);
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);
    ASSERT_EQ(wc_next(&E.side[1].scq).opcode, IWARP_WC_DDP_SEND);
    struct iwarp_wc wc = wc_next(&E.side[0].rcq);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
    ASSERT_EQ(wc.byte_len, 64);
    ASSERT_MEM_EQ(MEM[0] + SRC_OFF, MEM[1] + BACK_OFF, 64);
    ASSERT_EQ(iwarp_llp_e2e_disconnect(&E, 0), 0);
    ASSERT_EQ(E.side[0].nev + E.side[1].nev, 0);
}

TEST(ddp_level_crc)
{
    /* RFC 5041 without RDMAP (RFC 4296 §2.1.2, include/iwarp/ddp.h): untagged messages (one of
     * several segments, one empty) and a tagged one of several segments, each with its RsvdULP,
     * one message back; CRC on. The RsvdULP values and the queue are RDMAP's (Send 0x43, Send
     * with Invalidate 0x44 and its STag, RDMA Write 0x40; queue 0), so that the wire judge,
     * which reads every DDP segment as RDMAP, judges this capture's DDP layer too. */
    struct iwarp_llp_e2e_cfg cfg;
    iwarp_llp_e2e_cfg_default(&cfg);
    cfg.ddp = true;
    run(&cfg, "ddp_level_crc.pcap", ddp_exchange);
}

/* ---- the driver's editor and injection ---------------------------------------------------- */

static unsigned segments_seen;

static unsigned count_segments(void *user, unsigned side, uint8_t *seg, uint32_t *len, uint32_t cap)
{
    (void)user, (void)side, (void)seg, (void)len, (void)cap;
    segments_seen++;
    return 0;
}

TEST(editor_that_changes_nothing_changes_no_octet)
{
    /* every FPDU taken apart below the engine and framed again by the library's framer from its
     * own stream position, with CRC and markers: the capture is still the golden one */
    static const struct iwarp_llp_e2e_editor ed = {.segment = count_segments};
    struct iwarp_llp_e2e_cfg cfg;
    p2p_read_crc_markers_ipv6(&cfg);
    cfg.editor = &ed;
    run(&cfg, "rdmap_p2p_read_crc_markers_ipv6.pcap", rdmap_exchange);
    ASSERT_EQ(segments_seen, 21); /* every FPDU of the capture went through it */
}

/* RFC 5040 §4.4: a Read Request's body is 28 octets; this editor sends 32. */
static unsigned long_read_request(void *user, unsigned side, uint8_t *seg, uint32_t *len,
                                  uint32_t cap)
{
    (void)user;
    if (side == 0 && (seg[1] & IWARP_RDMAP_MASK_OPCODE) == IWARP_RDMAP_OP_READ_REQ &&
        *len + 4u <= cap) {
        memset(seg + *len, 0, 4);
        *len += 4u;
    }
    return 0;
}

static void long_read_request_exchange(void)
{
    post_recv(1, 100, RECV_OFF, 64);
    ASSERT_EQ(iwarp_llp_e2e_connect(&E, NULL), 0);
    post(0, 1, IWARP_WR_SEND, 0, 0, 64, 0, 0);
    post(0, 2, IWARP_WR_RDMA_READ, 0, 0, 512, SRC_TO, SRC);
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);
    /* the responder's engine rejects it (RFC 5040 §7.2 "invalid length": 0/2/0xFF, our choice,
     * docs/design.md §6) and terminates; nothing is read */
    ASSERT_EQ(E.link.rx_err[1], IWARP_ERR_RDMAP_LEN);
    ASSERT_EQ(E.side[1].nev, 1);
    ASSERT_EQ_U(E.side[1].ev[0].cause,
                (uint32_t)IWARP_TERM_RDMAP_ETYPE_REMOTE_OP << 8 | IWARP_TERM_RDMAP_UNSPECIFIED);
    ASSERT_TRUE(E.side[0].nev == 1 && E.side[0].ev[0].from_peer);
    expect_wc(&E.side[0].scq, 1, IWARP_WC_SEND, 64, 0);
    ASSERT_NE(wc_next(&E.side[0].scq).status, IWARP_WC_SUCCESS);
}

TEST(editor_grows_a_read_request)
{
    static const struct iwarp_llp_e2e_editor ed = {.segment = long_read_request};
    struct iwarp_llp_e2e_cfg cfg;
    iwarp_llp_e2e_cfg_default(&cfg);
    cfg.editor = &ed;
    char path[4096];
    tmp_path(path, sizeof path, "long_read_request.pcap");
    start(&cfg, path);
    long_read_request_exchange();
    ASSERT_EQ(iwarp_llp_e2e_fini(&E), 0);
    unlink(path);
}

/* Encodes one single-segment message (no payload) into buf. */
static size_t encode(uint8_t *buf, size_t cap, const struct iwarp_wire_msg *m)
{
    iwarp_ssize n = iwarp_wire_segment_encode(buf, cap, m, NULL, 0);
    ASSERT_TRUE(n > 0);
    return (size_t)n;
}

TEST(injected_segments_keep_both_streams_in_step)
{
    /* RFC 7306 segments the engines do not make, injected both ways between engine traffic
     * with CRC and markers on: they are in the capture, and every later FPDU still deframes
     * (markers where the peer expects them, CRCs right) */
    struct iwarp_llp_e2e_cfg cfg;
    iwarp_llp_e2e_cfg_default(&cfg);
    for (unsigned s = 0; s < 2; s++)
        cfg.conn[s].neg.markers = true;
    char path[4096];
    tmp_path(path, sizeof path, "inject.pcap");
    start(&cfg, path);
    fill(MEM[0] + RECV_OFF, RECV_LEN, 7);
    post_recv(1, 100, RECV_OFF, 64);
    ASSERT_EQ(iwarp_llp_e2e_connect(&E, NULL), 0);
    uint8_t seg[64];
    struct iwarp_wire_msg imm = {.opcode = IWARP_RDMAP_OP_IMM_DATA, .last = true, .msn = 1};
    size_t n = encode(seg, sizeof seg, &imm);
    /* the responder has not seen the initiator's first FPDU yet (RFC 5044 §7.1.2 rule 4) */
    ASSERT_EQ(iwarp_llp_e2e_inject(&E, 0, seg, n), IWARP_ERR_STATE);
    post(0, 1, IWARP_WR_SEND, 0, 0, 5, 0, 0);
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);
    for (uint32_t k = 0; k < 3; k++) {
        imm.msn = 2 + k;
        ASSERT_EQ(iwarp_llp_e2e_inject(&E, 0, seg, encode(seg, sizeof seg, &imm)), 0);
    }
    struct iwarp_wire_msg resp = {.opcode = IWARP_RDMAP_OP_ATOMIC_RESP, .last = true, .msn = 1};
    ASSERT_EQ(iwarp_llp_e2e_inject(&E, 1, seg, encode(seg, sizeof seg, &resp)), 0);
    post(0, 2, IWARP_WR_RDMA_WRITE, 0, 0, WRITE, SINK_TO(1), SINK[1]);
    post(0, 3, IWARP_WR_RDMA_READ, 0, 0, READ, SRC_TO, SRC);
    ASSERT_EQ(iwarp_llp_e2e_pump(&E), 0);
    ASSERT_EQ(E.link.rx_err[0] | E.link.rx_err[1], 0);
    ASSERT_EQ(E.side[0].nev + E.side[1].nev, 0);
    expect_wc(&E.side[0].scq, 1, IWARP_WC_SEND, 5, 0);
    expect_wc(&E.side[0].scq, 2, IWARP_WC_RDMA_WRITE, WRITE, 0);
    expect_wc(&E.side[0].scq, 3, IWARP_WC_RDMA_READ, READ, 0);
    expect_wc(&E.side[1].rcq, 100, IWARP_WC_RECV, 5, 0);
    expect_no_wc(&E.side[1].rcq);
    ASSERT_MEM_EQ(MEM[1] + SINK_OFF, MEM[0] + RECV_OFF, WRITE);
    ASSERT_MEM_EQ(MEM[0] + SINK_OFF, MEM[1] + SRC_OFF, READ);
    ASSERT_EQ(iwarp_llp_e2e_disconnect(&E, 0), 0);
    ASSERT_TRUE(E.side[0].fin && E.side[1].fin);
    ASSERT_EQ(iwarp_llp_e2e_fini(&E), 0);
    unlink(path);
}
