/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp demo: the library's own stack, both ends in one process, no sockets.
 *
 * Two nodes run the library's engines, RDMAP queue pairs (or DDP-level streams with --ddp), over
 * MPA connections joined by the in-memory transport, through src/llp/llp_e2e (the driver of the
 * golden-capture test): the initiator and the responder negotiate MPA, then the initiator posts
 * every operation the engine supports (Send, Send with Solicited Event, Send with Invalidate,
 * Send with SE and Invalidate, RDMA Writes, an RDMA Read) and the engines do the rest:
 * segmentation, framing with CRC and markers, deframing, placement, Read Responses, completions.
 * Each PDU is listed as it crosses, decoded by iwarp dump's decoder (trace/trace_mpa_stream), and
 * --pcap writes the octets the connections wrote through the library's packet trace. Placed data
 * is checked at the end. The exchange ends with the responder's Terminate: a last RDMA Write
 * names the buffer a Send with Invalidate invalidated.
 *
 * RFC 7306 (Immediate Data, Atomics) is not in the engine: those segments are built by hand
 * (src/wire), framed by the connection's own framer and checked by the peer's deframer beside the
 * engines (iwarp_llp_e2e_inject), with the MSNs that follow the capture's.
 *
 * --corrupt KIND damages one PDU below the engine, the way a faulty peer would (the driver's
 * editor takes apart what the initiator's connection writes, changes one MPA frame or DDP
 * segment and frames it again), and shows the receiving engine detecting it: the error, the RFC
 * Terminate cause, and the Terminate it sends when the connection is in full operation. The wire
 * judge (a Wireshark-based checker) must reject the same capture for the same reason:
 * tests/wire/judge.sh checks both.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "iwarp/iwarp.h"
#include "llp/llp_e2e.h"
#include "trace/trace_mpa_stream.h"
#include "util/bytes.h"
#include "wire/wire.h"
#include "wire/wire_mpa.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

/* The Tagged Offsets of the registered buffers: fixed, so the capture does not depend on where
 * the buffers happen to be. */
#define WRITE_TO     0x1000u           /* responder: target of the RDMA Writes */
#define READ_SRC_TO  0x123456780000ull /* responder: source of the RDMA Read */
#define READ_SINK_TO 0x2000u           /* initiator: sink of the RDMA Read */
#define INV_TO       0x3000u           /* responder: two buffers the initiator invalidates */
#define LOCAL_TO     0x10000000u       /* each side's buffers for its own use */
#define WRITE_LEN    6000u
#define READ_LEN     3000u
#define SEND_BIG_LEN 5000u
#define INV_LEN      64u
#define NRECV        6u /* the responder's receives */
#define RECV_LEN     8192u
#define BACK_LEN     64u /* DDP level: the responder's message back, from rsp[NRECV] */
/* The initiator's own buffer: what it sends and writes. */
#define OFF_HELLO    0x0000u
#define OFF_BIG      0x0100u
#define OFF_WRITE    0x1500u
#define OFF_STR      0x3000u /* short strings, 32 octets apart */
#define OFF_BACK     0x3400u /* DDP level: the message back arrives here */
#define LOCAL_LEN    0x4000u

enum corrupt {
    CORRUPT_NONE,
    CORRUPT_CRC,
    CORRUPT_MARKER,
    CORRUPT_DDP_VERSION,
    CORRUPT_RDMAP_VERSION,
    CORRUPT_OPCODE,
    CORRUPT_QN,
    CORRUPT_READREQ_LEN,
    CORRUPT_MPA_REV,
    CORRUPT_MPA_PD_LEN,
};

static const struct {
    const char *name;
    enum corrupt kind;
    const char *what;
} corrupt_kinds[] = {
    {"crc", CORRUPT_CRC, "flip a bit of one FPDU's CRC (needs CRC on)"},
    {"marker", CORRUPT_MARKER, "make one marker point elsewhere (needs --markers)"},
    {"ddp-version", CORRUPT_DDP_VERSION, "DDP version 2 on a Send with Invalidate"},
    {"rdmap-version", CORRUPT_RDMAP_VERSION, "RDMAP version 2 on a Send with Invalidate"},
    {"opcode", CORRUPT_OPCODE, "reserved RDMAP opcode 0xC instead of a Send with Invalidate"},
    {"qn", CORRUPT_QN, "a Send with Invalidate sent to queue number 1"},
    {"readreq-len", CORRUPT_READREQ_LEN, "a Read Request with 4 octets too many"},
    {"mpa-rev", CORRUPT_MPA_REV, "an MPA Request with revision 3"},
    {"mpa-pd-len", CORRUPT_MPA_PD_LEN, "an MPA Request with 600 octets of private data"},
};

struct opts {
    int rev;
    bool crc, markers, ipv6, quiet, ddp;
    uint8_t rtr; /* IWARP_MPA_RTR_* bit for peer-to-peer, 0 without */
    uint32_t emss;
    const char *pcap;
    enum corrupt corrupt;
};

struct demo {
    struct opts o;
    struct iwarp_llp_e2e e;
    struct iwarp_mpa_stream ms; /* the listing: the capture's octets, decoded */
    unsigned fpdus;
    uint32_t next_msn[2][4]; /* [side][QN]: the MSN after the last one the listing showed */
    bool damaged;            /* --corrupt: the damage is done */
    bool detected;           /* a receiver reported an error (the damage, or the last Write) */
    /* memory: the initiator's buffer and Read sink; the responder's receives and targets */
    uint8_t local[LOCAL_LEN], read_sink[READ_LEN];
    uint8_t rsp[NRECV + 1][RECV_LEN], write_sink[WRITE_LEN], read_src[READ_LEN], inv[2][INV_LEN];
    uint64_t wr_id;
    uint32_t lkey[2], write_stag, read_src_stag, read_sink_stag, inv_stag[2];
};

static void say(const struct demo *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(const struct demo *d, const char *fmt, ...)
{
    if (d->o.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

/* ---- the listing: every PDU as it crosses ---- */

static void print_segment(const struct demo *d, const char *dir,
                          const struct iwarp_mpa_stream_pdu *p)
{
    if (d->o.quiet)
        return;
    static const char *const crc[] = {"unchecked", "ok", "BAD"};
    char line[512];
    int n = snprintf(line, sizeof line, "#%-3u %s FPDU ulpdu=%-5u crc=%-9s| ", d->fpdus, dir,
                     p->ulpdu_len, crc[p->crc]);
    size_t cap = sizeof line;
    size_t off = (size_t)n;
#define ADD(...) (off += (size_t)snprintf(line + off, off < cap ? cap - off : 0, __VA_ARGS__))
    const struct iwarp_wire_segment *s = p->seg;
    if (p->seg_rc != 0 || s == NULL) {
        ADD("(not a valid segment: %s)", iwarp_err_name(p->seg_rc));
        puts(line);
        return;
    }
    ADD("%-26s", s->op->name);
    if (s->ddp.tagged)
        ADD(" STag=0x%08x TO=0x%llx", s->ddp.stag, (unsigned long long)s->ddp.to);
    else
        ADD(" QN=%u MSN=%u MO=%u", s->ddp.qn, s->ddp.msn, s->ddp.mo);
    ADD(" L=%d", s->ddp.last);
    switch (s->opcode) {
    case IWARP_RDMAP_OP_SEND_INV:
    case IWARP_RDMAP_OP_SEND_SE_INV:
        ADD(" inval=0x%08x", s->inv_stag);
        break;
    case IWARP_RDMAP_OP_READ_REQ: {
        const struct iwarp_rdmap_read_req *r = &s->body.read_req;
        ADD(" sink=0x%08x@0x%llx size=%u src=0x%08x@0x%llx", r->sink_stag,
            (unsigned long long)r->sink_to, r->size, r->src_stag, (unsigned long long)r->src_to);
        break;
    }
    case IWARP_RDMAP_OP_TERMINATE: {
        const struct iwarp_term *t = &s->body.term;
        char cs[128];
        iwarp_term_cause_str(t->ctrl.cause, cs, sizeof cs);
        ADD(" [%s] M=%d D=%d R=%d", cs, !!(t->ctrl.hdrct & IWARP_TERM_FLAG_M),
            !!(t->ctrl.hdrct & IWARP_TERM_FLAG_D), !!(t->ctrl.hdrct & IWARP_TERM_FLAG_R));
        if (t->ddp_hdr)
            ADD(" seglen=%u hdr=%uB", t->ddp_seg_len, (unsigned)t->ddp_hdr_len);
        break;
    }
    case IWARP_RDMAP_OP_IMM_DATA:
    case IWARP_RDMAP_OP_IMM_DATA_SE:
        ADD(" imm=");
        for (int i = 0; i < 8; i++)
            ADD("%02x", s->body.imm.data[i]);
        break;
    case IWARP_RDMAP_OP_ATOMIC_REQ: {
        const struct iwarp_rdmap_atomic_req *a = &s->body.atomic_req;
        ADD(" %s id=%u target=0x%08x@0x%llx add/swap=%llu", a->aopcode ? "CmpSwap" : "FetchAdd",
            a->req_id, a->stag, (unsigned long long)a->to, (unsigned long long)a->add_swap);
        break;
    }
    case IWARP_RDMAP_OP_ATOMIC_RESP:
        ADD(" id=%u original=%llu", s->body.atomic_resp.req_id,
            (unsigned long long)s->body.atomic_resp.orig_value);
        break;
    default:
        break;
    }
    if (s->op->payload)
        ADD(" payload=%zu", s->payload_len);
#undef ADD
    puts(line);
}

static void print_mpa_frame(const struct demo *d, const char *dir, const struct iwarp_mpa_frame *f)
{
    if (d->o.quiet || f == NULL)
        return;
    printf("     %s MPA %-7s rev=%u M=%d C=%d R=%d S=%d", dir, f->reply ? "Reply" : "Request",
           f->rev, f->m, f->c, f->r, f->s);
    if (f->s)
        printf(" IRD=%u ORD=%u p2p=%d rtr=%s%s%s", f->v2.ird, f->v2.ord, f->v2.p2p,
               f->v2.rtr & IWARP_MPA_RTR_SEND ? "S" : "",
               f->v2.rtr & IWARP_MPA_RTR_WRITE ? "W" : "",
               f->v2.rtr & IWARP_MPA_RTR_READ ? "R" : "");
    printf(" private data %u octets \"%.*s\"\n", f->pd_len, (int)f->pd_len, (const char *)f->pd);
}

static void on_pdu(void *ctx, const struct iwarp_mpa_stream_pdu *p)
{
    struct demo *d = ctx;
    const char *dir = p->side == 0 ? "i>r" : "r>i";
    if (p->kind == IWARP_MS_PDU_REQUEST || p->kind == IWARP_MS_PDU_REPLY) {
        print_mpa_frame(d, dir, p->frame);
        return;
    }
    if (p->kind != IWARP_MS_PDU_FPDU)
        return;
    d->fpdus++;
    /* RFC 5041 §4.3: the hand-built RFC 7306 segments continue each queue's MSNs */
    if (p->seg_rc == 0 && p->seg && !p->seg->ddp.tagged && p->seg->ddp.qn < 4)
        d->next_msn[p->side & 1u][p->seg->ddp.qn] = p->seg->ddp.msn + 1u;
    print_segment(d, dir, p);
}

static void on_finding(void *ctx, const struct iwarp_mpa_stream_finding *f)
{
    say(ctx, "     iwarp dump finds: %s [%s] %s\n", f->error ? "ERROR" : "WARN",
        iwarp_mpa_stream_class_name(f->cls), f->msg);
}

static const struct iwarp_mpa_stream_ops listing = {.pdu = on_pdu, .finding = on_finding};

static void tap(void *user, unsigned side, const uint8_t *p, size_t n)
{
    struct demo *d = user;
    iwarp_mpa_stream_feed(&d->ms, side, p, n, 0);
}

/* ---- the damage (--corrupt), below the engine ---- */

static void damage_frame(void *user, unsigned side, uint8_t *f, size_t *len, size_t cap)
{
    struct demo *d = user;
    if (side != 0 || d->damaged)
        return;
    if (d->o.corrupt == CORRUPT_MPA_REV) {
        f[17] = 3; /* RFC 5044 §7.1.1: Rev is 1 (RFC 6581: 2) */
        d->damaged = true;
    } else if (d->o.corrupt == CORRUPT_MPA_PD_LEN && IWARP_MPA_HDR_LEN + 600u <= cap) {
        memset(f + *len, 'x', IWARP_MPA_HDR_LEN + 600u - *len); /* RFC 5044 §7.1.1: at most 512 */
        *len = IWARP_MPA_HDR_LEN + 600u;
        iwarp_store_be16(f + 18, 600);
        d->damaged = true;
    }
}

static unsigned damage_segment(void *user, unsigned side, uint8_t *seg, uint32_t *len, uint32_t cap)
{
    struct demo *d = user;
    if (side != 0 || d->damaged || *len < IWARP_DDP_TAGGED_HDR_LEN)
        return 0;
    bool tagged = seg[0] & IWARP_DDP_FLAG_TAGGED;
    unsigned op = seg[1] & IWARP_RDMAP_MASK_OPCODE;
    bool write = tagged && op == IWARP_RDMAP_OP_WRITE && *len > IWARP_DDP_TAGGED_HDR_LEN;
    bool send_inv = !tagged && op == IWARP_RDMAP_OP_SEND_INV;
    /* RFC 5040 §4.4: a Read Request of a non-zero size (not a Read RTR, RFC 6581 §5) */
    bool read_req = !tagged && op == IWARP_RDMAP_OP_READ_REQ &&
                    *len == IWARP_DDP_UNTAGGED_HDR_LEN + IWARP_RDMAP_READ_REQ_LEN &&
                    iwarp_load_be32(seg + IWARP_DDP_UNTAGGED_HDR_LEN + 12u) != 0;
    unsigned bad = 0;
    switch (d->o.corrupt) {
    case CORRUPT_CRC: /* the first segment of the RDMA Write */
        if (!write)
            return 0;
        bad = IWARP_LLP_E2E_BAD_CRC;
        break;
    case CORRUPT_MARKER:
        if (!write)
            return 0;
        bad = IWARP_LLP_E2E_BAD_MARKER;
        break;
    case CORRUPT_DDP_VERSION:
        if (!send_inv)
            return 0;
        seg[0] = (uint8_t)((seg[0] & ~IWARP_DDP_MASK_DV) | 2u);
        break;
    case CORRUPT_RDMAP_VERSION:
        if (!send_inv)
            return 0;
        seg[1] = (uint8_t)((seg[1] & ~IWARP_RDMAP_MASK_RV) | (2u << 6));
        break;
    case CORRUPT_OPCODE:
        if (!send_inv)
            return 0;
        seg[1] = (uint8_t)((seg[1] & ~IWARP_RDMAP_MASK_OPCODE) | 0xCu);
        break;
    case CORRUPT_QN:
        if (!send_inv)
            return 0;
        iwarp_store_be32(seg + 6, 1);
        break;
    case CORRUPT_READREQ_LEN: /* RFC 5040 §4.4: the body is exactly 28 octets */
        if (!read_req || *len + 4u > cap)
            return 0;
        memset(seg + *len, 0, 4);
        *len += 4u;
        break;
    default:
        return 0;
    }
    d->damaged = true;
    return bad;
}

static const struct iwarp_llp_e2e_editor damage = {.frame = damage_frame,
                                                   .segment = damage_segment};

/* ---- what the receivers detect ---- */

static void report_detection(struct demo *d, unsigned side, int err, const uint32_t *cause)
{
    char cs[128] = "none (close the TCP connection)";
    struct iwarp_term_cause c = {0};
    if (cause) {
        c = (struct iwarp_term_cause){(uint8_t)(*cause >> 16), (uint8_t)(*cause >> 8),
                                      (uint8_t)*cause};
        iwarp_term_cause_str(c, cs, sizeof cs);
    }
    printf("detected: %s by the %s: %s; Terminate cause: %s\n", iwarp_err_name(err),
           side == 0 ? "initiator" : "responder", iwarp_strerror(err), cs);
    if (cause)
        printf("detected-cause: %u/%u/0x%02x\n", c.layer, c.etype, c.ecode);
    d->detected = true;
}

/* Whether a receiver has reported an error of its own (not the peer's Terminate) since the
 * start; reports the first such one. */
static bool check_detection(struct demo *d)
{
    if (d->detected)
        return true;
    for (unsigned k = 0; k < 2; k++) {
        unsigned side = 1u - k; /* the responder first: the damage goes its way */
        const struct iwarp_llp_e2e_side *s = &d->e.side[side];
        int err = d->e.link.rx_err[side];
        if (err == 0 || (s->nev > 0 && s->ev[0].from_peer))
            continue;
        report_detection(d, side, err, s->nev > 0 ? &s->ev[0].cause : NULL);
        return true;
    }
    return false;
}

/* ---- the exchange ---- */

static void fail(const char *what, int err)
{
    fprintf(stderr, "iwarp demo: %s: %s\n", what, iwarp_strerror(err));
    exit(1);
}

/* Post one send WR of the initiator and move everything it starts. Returns false when a
 * receiver has detected an error (the exchange stops). */
static bool step(struct demo *d, enum iwarp_wr_opcode op, unsigned flags, uint64_t to, uint32_t len,
                 uint64_t raddr, uint32_t rkey)
{
    struct iwarp_sge sge = {.addr = to, .length = len, .lkey = d->lkey[0]};
    if (op == IWARP_WR_RDMA_READ)
        sge.lkey = d->read_sink_stag;
    int rc = iwarp_llp_e2e_post(&d->e, 0, ++d->wr_id, op, flags, &sge, raddr, rkey);
    if (rc != 0)
        fail("posting a work request", rc);
    if ((rc = iwarp_llp_e2e_pump(&d->e)) != 0)
        fail("moving the octets", rc);
    return !check_detection(d);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t k = 0; k < n; k++)
        p[k] = (uint8_t)(seed + k * 7u + (k >> 8));
}

static void reg(struct demo *d, unsigned side, void *p, uint64_t to, size_t len, uint32_t acc,
                uint32_t *stag)
{
    int rc = iwarp_llp_e2e_reg(&d->e, side, p, to, len, acc, stag);
    if (rc != 0)
        fail("registering memory", rc);
}

/* Memory: the initiator's buffer and Read sink, the responder's receives, Write target, Read
 * source and the two buffers the initiator invalidates. Receives are posted. */
static void memory(struct demo *d)
{
    const uint32_t lw = IWARP_MEM_ACCESS_LOCAL_WRITE, rw = IWARP_MEM_ACCESS_REMOTE_WRITE;
    static const char hello[] = "Hello from the libiwarp initiator";
    memcpy(d->local + OFF_HELLO, hello, sizeof hello - 1);
    fill(d->local + OFF_BIG, SEND_BIG_LEN, 3);
    fill(d->local + OFF_WRITE, WRITE_LEN, 11);
    static const char *const str[] = {"solicited", "invalidate", "solicited+invalidate",
                                      "no longer yours"};
    for (unsigned k = 0; k < 4; k++)
        memcpy(d->local + OFF_STR + 32u * k, str[k], strlen(str[k]));
    fill(d->read_src, READ_LEN, 29);
    reg(d, 0, d->local, LOCAL_TO, LOCAL_LEN, lw, &d->lkey[0]);
    reg(d, 0, d->read_sink, READ_SINK_TO, READ_LEN, lw | rw, &d->read_sink_stag);
    reg(d, 1, d->rsp, LOCAL_TO, sizeof d->rsp, lw, &d->lkey[1]);
    reg(d, 1, d->write_sink, WRITE_TO, WRITE_LEN, lw | rw, &d->write_stag);
    reg(d, 1, d->read_src, READ_SRC_TO, READ_LEN, IWARP_MEM_ACCESS_REMOTE_READ, &d->read_src_stag);
    for (unsigned k = 0; k < 2; k++)
        reg(d, 1, d->inv[k], INV_TO + k * 0x1000u, INV_LEN, lw | rw, &d->inv_stag[k]);
    for (unsigned k = 0; k < NRECV; k++) {
        struct iwarp_sge sge = {
            .addr = LOCAL_TO + k * RECV_LEN, .length = RECV_LEN, .lkey = d->lkey[1]};
        int rc = iwarp_llp_e2e_post_recv(&d->e, 1, 0, k, &sge);
        if (rc != 0)
            fail("posting a receive", rc);
    }
    if (d->o.ddp) { /* the responder's message back */
        struct iwarp_sge sge = {
            .addr = LOCAL_TO + OFF_BACK, .length = BACK_LEN, .lkey = d->lkey[0]};
        int rc = iwarp_llp_e2e_post_recv(&d->e, 0, 0, 0, &sge);
        if (rc != 0)
            fail("posting a receive", rc);
    }
}

/* Hand-built RFC 7306 segments (the engine has no RFC 7306): Immediate Data, Immediate Data
 * with SE, an Atomic Fetch-and-Add request and the responder's answer, on the MSNs the listing
 * showed last. */
static void rfc7306(struct demo *d)
{
    uint8_t seg[128];
    struct iwarp_wire_msg imm = {.opcode = IWARP_RDMAP_OP_IMM_DATA, .last = true};
    memcpy(imm.body.imm.data, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8);
    struct iwarp_wire_msg at = {.opcode = IWARP_RDMAP_OP_ATOMIC_REQ, .last = true};
    at.body.atomic_req = (struct iwarp_rdmap_atomic_req){.aopcode = IWARP_ATOMIC_FETCH_ADD,
                                                         .req_id = 7,
                                                         .stag = d->write_stag,
                                                         .to = WRITE_TO,
                                                         .add_swap = 1,
                                                         .compare_mask = UINT64_MAX};
    struct iwarp_wire_msg resp = {.opcode = IWARP_RDMAP_OP_ATOMIC_RESP, .last = true};
    resp.body.atomic_resp.req_id = 7;
    resp.body.atomic_resp.orig_value = 41;
    struct {
        unsigned side;
        struct iwarp_wire_msg *m;
        uint8_t opcode;
    } seq[] = {{0, &imm, IWARP_RDMAP_OP_IMM_DATA},
               {0, &imm, IWARP_RDMAP_OP_IMM_DATA_SE},
               {0, &at, IWARP_RDMAP_OP_ATOMIC_REQ},
               {1, &resp, IWARP_RDMAP_OP_ATOMIC_RESP}};
    say(d,
        "     RFC 7306 segments, built by hand (the engine has none), framed by the connection:\n");
    for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++) {
        struct iwarp_wire_msg *m = seq[k].m;
        m->opcode = seq[k].opcode;
        uint32_t qn = iwarp_rdmap_opinfo(m->opcode)->qn;
        uint32_t *next = &d->next_msn[seq[k].side][qn];
        m->msn = *next ? *next : IWARP_DDP_MSN_INIT; /* RFC 5041 §4.3 */
        iwarp_ssize n = iwarp_wire_segment_encode(seg, sizeof seg, m, NULL, 0);
        if (n < 0)
            fail("encoding an RFC 7306 segment", (int)n);
        int rc = iwarp_llp_e2e_inject(&d->e, seq[k].side, seg, (size_t)n);
        if (rc != 0)
            fail("sending an RFC 7306 segment", rc);
    }
}

static void rdmap_exchange(struct demo *d)
{
    uint64_t str = LOCAL_TO + OFF_STR;
    if (!step(d, IWARP_WR_SEND, 0, LOCAL_TO + OFF_HELLO, 33, 0, 0) ||
        !step(d, IWARP_WR_SEND, 0, LOCAL_TO + OFF_BIG, SEND_BIG_LEN, 0, 0) ||
        !step(d, IWARP_WR_RDMA_WRITE, 0, LOCAL_TO + OFF_WRITE, WRITE_LEN, WRITE_TO,
              d->write_stag) ||
        !step(d, IWARP_WR_SEND, IWARP_SEND_SOLICITED, str, 9, 0, 0) ||
        !step(d, IWARP_WR_SEND_WITH_INV, 0, str + 32, 10, 0, d->inv_stag[0]) ||
        !step(d, IWARP_WR_SEND_WITH_INV, IWARP_SEND_SOLICITED, str + 64, 20, 0, d->inv_stag[1]) ||
        !step(d, IWARP_WR_RDMA_WRITE, 0, 0, 0, WRITE_TO, d->write_stag) ||
        !step(d, IWARP_WR_RDMA_READ, 0, READ_SINK_TO, READ_LEN, READ_SRC_TO, d->read_src_stag))
        return;
    rfc7306(d);
    /* RFC 5040 §5.3: the Send with Invalidate made that STag invalid; RFC 5041 §7.1 check 1:
     * a tagged segment naming it is refused with a Terminate */
    say(d,
        "     responder: STag 0x%08x was invalidated by the Send with Invalidate; a last RDMA "
        "Write to it -> Terminate\n",
        d->inv_stag[0]);
    struct iwarp_sge sge = {.addr = str + 96, .length = 15, .lkey = d->lkey[0]};
    int rc = iwarp_llp_e2e_post(&d->e, 0, ++d->wr_id, IWARP_WR_RDMA_WRITE, 0, &sge, INV_TO,
                                d->inv_stag[0]);
    if (rc != 0 || (rc = iwarp_llp_e2e_pump(&d->e)) != 0)
        fail("the last RDMA Write", rc);
}

static void ddp_exchange(struct demo *d)
{
    /* RsvdULP as RDMAP's control octet and Invalidate STag would be (Send 0x43, Send with
     * Invalidate 0x44, Write 0x40), so that the wire judge can read these segments too */
    static const uint8_t send_ulp[5] = {0x43, 0, 0, 0, 0}, inv_ulp[5] = {0x44, 'i', 'w', 'r', 'p'},
                         write_ulp[1] = {0x40};
    struct iwarp_sge hello = {.addr = LOCAL_TO + OFF_HELLO, .length = 33, .lkey = d->lkey[0]};
    struct iwarp_sge big = {.addr = LOCAL_TO + OFF_BIG, .length = SEND_BIG_LEN, .lkey = d->lkey[0]};
    struct iwarp_sge wr = {.addr = LOCAL_TO + OFF_WRITE, .length = WRITE_LEN, .lkey = d->lkey[0]};
    struct iwarp_sge back = {.addr = LOCAL_TO, .length = BACK_LEN, .lkey = d->lkey[1]};
    memcpy(d->rsp[NRECV], "DDP-level message back to the initiator", 39);
    int rc;
    if ((rc = iwarp_llp_e2e_ddp_send(&d->e, 0, 1, false, 0, 0, 0, &hello, send_ulp)) != 0 ||
        (rc = iwarp_llp_e2e_ddp_send(&d->e, 0, 2, false, 0, 0, 0, &big, inv_ulp)) != 0 ||
        (rc = iwarp_llp_e2e_ddp_send(&d->e, 0, 3, true, 0, d->write_stag, WRITE_TO, &wr,
                                     write_ulp)) != 0 ||
        (rc = iwarp_llp_e2e_pump(&d->e)) != 0)
        fail("DDP-level messages", rc);
    back.addr = LOCAL_TO + NRECV * RECV_LEN;
    if ((rc = iwarp_llp_e2e_ddp_send(&d->e, 1, 4, false, 0, 0, 0, &back, send_ulp)) != 0 ||
        (rc = iwarp_llp_e2e_pump(&d->e)) != 0)
        fail("the DDP-level message back", rc);
    for (unsigned side = 1; side < 3; side++) {
        struct iwarp_wc wc;
        while (iwarp_core_cq_poll(&d->e.side[side & 1u].rcq, &wc, 1) == 1) {
            if (wc.opcode == IWARP_WC_DDP_TAGGED_RECV)
                say(d, "     %s: tagged message delivered: STag=0x%08x RsvdULP=%02x\n",
                    side & 1u ? "responder" : "initiator", wc.ddp_stag, wc.ddp_rsvdulp[0]);
            else
                say(d,
                    "     %s: untagged message delivered: QN=%u MSN=%u %u octets "
                    "RsvdULP=%02x%02x%02x%02x%02x\n",
                    side & 1u ? "responder" : "initiator", wc.ddp_qn, wc.ddp_msn, wc.byte_len,
                    wc.ddp_rsvdulp[0], wc.ddp_rsvdulp[1], wc.ddp_rsvdulp[2], wc.ddp_rsvdulp[3],
                    wc.ddp_rsvdulp[4]);
        }
    }
    if ((rc = iwarp_llp_e2e_disconnect(&d->e, 0)) != 0)
        fail("disconnecting", rc);
}

/* What the exchange had to achieve. */
static bool verified(const struct demo *d)
{
    if (memcmp(d->write_sink, d->local + OFF_WRITE, WRITE_LEN) != 0 ||
        memcmp(d->rsp[0], d->local + OFF_HELLO, 33) != 0 ||
        memcmp(d->rsp[1], d->local + OFF_BIG, SEND_BIG_LEN) != 0)
        return false;
    if (d->o.ddp)
        return memcmp(d->local + OFF_BACK, d->rsp[NRECV], BACK_LEN) == 0 && d->e.side[0].fin &&
               d->e.side[1].fin && !d->e.link.rx_err[0] && !d->e.link.rx_err[1];
    /* the Read placed; the initiator got the responder's Terminate, for the last Write */
    const struct iwarp_llp_e2e_side *i = &d->e.side[0], *r = &d->e.side[1];
    return memcmp(d->read_sink, d->read_src, READ_LEN) == 0 && i->nev == 1 && i->ev[0].from_peer &&
           r->nev == 1 && !r->ev[0].from_peer && i->ev[0].cause == r->ev[0].cause;
}

/* ---- setting up ---- */

/* --p2p: the zero-length RTR of the peer-to-peer model. */
static int parse_p2p(const char *arg, void *field)
{
    uint8_t rtr = !strcmp(arg, "send")    ? IWARP_MPA_RTR_SEND
                  : !strcmp(arg, "write") ? IWARP_MPA_RTR_WRITE
                  : !strcmp(arg, "read")  ? IWARP_MPA_RTR_READ
                                          : 0;
    memcpy(field, &rtr, sizeof rtr);
    return rtr ? 0 : -1;
}

/* --corrupt: one of corrupt_kinds. */
static int parse_corrupt(const char *arg, void *field)
{
    for (size_t i = 0; i < sizeof corrupt_kinds / sizeof corrupt_kinds[0]; i++)
        if (!strcmp(arg, corrupt_kinds[i].name)) {
            memcpy(field, &corrupt_kinds[i].kind, sizeof corrupt_kinds[i].kind);
            return 0;
        }
    return -1;
}

#define AT(field) CLI_AT(struct opts, field)

/* The options and their --help, in --help's order. */
static const struct cli_opt rows[] = {
    {CLI_LINE("\noptions:")},
    {CLI_TRACE(struct opts, pcap),
     .help = "write the exchange to FILE.pcap (Ethernet/IPv4/TCP; default:\n"
             "none, IWARP_PCAP is not read: nothing here is a live connection)"},
    {CLI_TRACE_OLD(struct opts, pcap)},
    {CLI_IPV6(struct opts, ipv6), .help = "use IPv6 addresses in the capture (default IPv4)"},
    {CLI_OPTION(CLI_CHOICE, "mpa-rev", 0, "1|2"), AT(rev), .min = 1,
     .err = "--mpa-rev must be 1 or 2, not '{arg}'",
     .help = "MPA revision (default 2: RFC 6581 enhanced, IRD/ORD)"},
    {CLI_CRC(struct opts, crc), .help = "ask for CRC32C or not (default on, RFC 5044 §4.4)"},
    {CLI_NO_CRC(struct opts, crc)},
    {CLI_OPTION(CLI_FLAG, "markers", 0, NULL), AT(markers),
     .help = "ask for markers in both directions (RFC 5044 §4.3)"},
    {CLI_OPTION(CLI_FN, "p2p", 0, "send|write|read"), AT(rtr), .fn = parse_p2p,
     .err = "--p2p takes send, write or read, not '{arg}'",
     .help = "peer-to-peer model with that zero-length RTR (rev 2)"},
    {CLI_OPTION(CLI_UINT, "emss", 0, "N"), AT(emss), CLI_RANGE(256, 65495), .def = 1460,
     .err = "--emss must be {min}..{max}, not '{arg}'",
     .help = "TCP payload size the FPDUs are sized to (default {def})"},
    {CLI_OPTION(CLI_FLAG, "ddp", 0, NULL), AT(ddp),
     .help = "DDP-level streams (RFC 5041 without RDMAP, iwarp/ddp.h)"},
    {CLI_OPTION(CLI_FN, "corrupt", 0, "KIND"), AT(corrupt), .fn = parse_corrupt,
     .err = "unknown --corrupt kind '{arg}'",
     .help = "damage one PDU and show the receiver detecting it (KIND:\n"
             "below)"},
    {CLI_OPTION(CLI_FLAG, "quiet", 'q', NULL), AT(quiet), .help = "print only the summary"},
    {CLI_HELP_ROW},
};

static void usage(FILE *out);
static const struct cli_spec spec =
    CLI_SPEC("iwarp demo", "Try `iwarp demo --help`.", usage, 21, rows);

static void usage(FILE *out)
{
    fputs("usage: iwarp demo [OPTIONS]\n\n"
          "Runs the library's stack between an MPA initiator and responder in one process\n"
          "(no sockets: the in-memory transport, MPA over TCP only; there is no --transport):\n"
          "they negotiate, then the initiator posts every RDMAP operation and the engines\n"
          "segment, frame, deframe, place and answer; RFC 7306 segments are built by hand.\n"
          "One line per PDU as it crosses; the bytes go to a capture file that\n"
          "Wireshark/tshark can open.\n",
          out);
    cli_help(&spec, out);
    fputs("\n--corrupt KIND:\n", out);
    for (size_t i = 0; i < sizeof corrupt_kinds / sizeof corrupt_kinds[0]; i++)
        fprintf(out, "  %-15s %s\n", corrupt_kinds[i].name, corrupt_kinds[i].what);
    fputs("\nExit status: 0 when the exchange completed and verified (or, with --corrupt,\n"
          "when the damage was detected), 1 otherwise, 2 for bad options.\n",
          out);
}

/* Returns 0 to run, 1 after --help, 2 after a usage error was printed. */
static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.rev = 2, .crc = true, .emss = 1460};
    struct cli_result r;
    int rc = cli_parse(&spec, argc, argv, o, &r);
    if (rc != CLI_PARSE_OK)
        return rc;
    if (r.first_arg < argc)
        return cli_error(&spec, "unexpected argument '%s'", argv[r.first_arg]);
    if (o->rtr && o->rev != 2)
        return cli_error(&spec, "%s", "--p2p needs --mpa-rev 2 (RFC 6581)");
    if (o->corrupt == CORRUPT_CRC && !o->crc)
        return cli_error(&spec, "%s", "--corrupt crc needs CRC on");
    if (o->corrupt == CORRUPT_MARKER && !o->markers)
        return cli_error(&spec, "%s", "--corrupt marker needs --markers");
    if (o->ddp && (o->rtr || o->corrupt != CORRUPT_NONE))
        return cli_error(&spec, "%s",
                         "--ddp takes neither --p2p (RTR is RDMAP's, RFC 6581 §5) nor --corrupt");
    return 0;
}

/* The driver's configuration for the options. */
static void configure(struct demo *d, struct iwarp_llp_e2e_cfg *cfg)
{
    static const char ipd[] = "libiwarp demo initiator", rpd[] = "libiwarp demo responder";
    iwarp_llp_e2e_cfg_default(cfg);
    struct iwarp_mpa_neg_cfg *ci = &cfg->conn[0].neg, *cr = &cfg->conn[1].neg;
    ci->revision = (uint8_t)d->o.rev;
    ci->enhanced = d->o.rev == 2;
    ci->crc = cr->crc = d->o.crc;
    ci->markers = cr->markers = d->o.markers; /* both directions: Wireshark assumes both */
    ci->peer2peer = d->o.rtr != 0;
    if (d->o.rtr)
        ci->rtr = ci->rtr_pref = d->o.rtr;
    ci->pd = (const uint8_t *)ipd;
    ci->pd_len = sizeof ipd - 1;
    cfg->answer.pd = (const uint8_t *)rpd;
    cfg->answer.pd_len = sizeof rpd - 1;
    cfg->conn[0].emss = cfg->conn[1].emss = d->o.emss;
    cfg->ddp = d->o.ddp;
    cfg->pcap = d->o.pcap;
    cfg->ipv6 = d->o.ipv6;
    cfg->tap = tap;
    cfg->editor = d->o.corrupt != CORRUPT_NONE ? &damage : NULL;
    cfg->user = d;
}

static void full_operation(const struct demo *d)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&d->e.side[0].conn.neg);
    say(d, "     MPA full operation: rev %u, CRC %s, markers %s, IRD/ORD %u/%u, %s, MULPDU %u\n",
        r->rev, r->crc ? "on" : "off", r->markers_tx ? "both ways" : "off", r->ird, r->ord,
        r->p2p ? (r->rtr == IWARP_MPA_RTR_WRITE  ? "peer-to-peer, Write RTR"
                  : r->rtr == IWARP_MPA_RTR_READ ? "peer-to-peer, Read RTR"
                                                 : "peer-to-peer, Send RTR")
               : "initiator sends first",
        d->e.side[0].conn.max_seg);
}

int iwarp_cli_demo(int argc, char **argv)
{
    static struct demo demo;
    struct demo *d = &demo;
    int prc = parse(argc, argv, &d->o);
    if (prc != CLI_PARSE_OK)
        return prc == CLI_PARSE_HELP ? 0 : 2;
    struct iwarp_mpa_stream_cfg mc = {.require_mpa = true};
    iwarp_mpa_stream_init(&d->ms, &mc, &listing, d);
    struct iwarp_llp_e2e_cfg cfg;
    configure(d, &cfg);
    int rc = iwarp_llp_e2e_init(&d->e, &cfg);
    if (rc != 0) {
        fprintf(stderr, "iwarp demo: %s: %s\n", d->o.pcap ? d->o.pcap : "setting up",
                iwarp_strerror(rc));
        return 1;
    }
    memory(d);
    unsigned failed = 0;
    rc = iwarp_llp_e2e_connect(&d->e, &failed);
    if (rc != 0) {
        report_detection(d, failed, rc, NULL);
        (void)iwarp_llp_e2e_pump(&d->e);
    } else {
        full_operation(d);
        if (d->o.ddp)
            ddp_exchange(d);
        else
            rdmap_exchange(d);
    }
    iwarp_mpa_stream_finish(&d->ms);
    if (iwarp_llp_e2e_fini(&d->e) != 0) {
        fprintf(stderr, "iwarp demo: writing the capture failed\n");
        return 1;
    }
    if (d->o.corrupt != CORRUPT_NONE) {
        if (!d->detected) {
            printf("NOT detected: the damaged PDU was accepted\n");
            return 1;
        }
        return 0;
    }
    if (rc != 0 || d->detected)
        return 1;
    bool ok = verified(d);
    if (d->o.ddp)
        printf("%u FPDUs; DDP-level untagged %u B and tagged %u B placed and verified: %s",
               d->fpdus, 33u + SEND_BIG_LEN, WRITE_LEN, ok ? "OK" : "MISMATCH");
    else
        printf("%u FPDUs; RDMA Write %u B and RDMA Read %u B placed and verified: %s", d->fpdus,
               WRITE_LEN, READ_LEN, ok ? "OK" : "MISMATCH");
    printf("%s%s\n", d->o.pcap ? "; capture: " : "", d->o.pcap ? d->o.pcap : "");
    return ok ? 0 : 1;
}
