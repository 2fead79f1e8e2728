/*
 * iwarp demo: the whole byte-level stack, both ends in one process, no sockets.
 *
 * An MPA initiator and responder negotiate (src/mpa/mpa_negotiate), then the initiator sends
 * every RDMAP message type and the responder answers Read Requests and atomics. Every DDP segment
 * is encoded (src/wire), framed into an FPDU (src/mpa/mpa_frame), written to a capture file as
 * one TCP segment (src/trace), and delivered to the peer's deframer (src/mpa/mpa_deframe) in
 * pieces of varying size, then decoded and validated (src/wire/wire_segment) and printed. Tagged
 * payload is placed into the peer's (simulated) registered buffers and checked at the end.
 * The exchange ends with the responder's Terminate (a DDP error with the offending header).
 *
 * --corrupt KIND damages one PDU the way a faulty peer would and shows the receiver detecting
 * it: the error, the RFC Terminate cause, and the Terminate sent back when the connection is in
 * full operation. The wire judge (../shared/tools/wire-check) must reject the same capture for
 * the same reason: tests/wire/judge.sh checks both.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "cli.h"
#include "iwarp/iwarp.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"
#include "ddp/ddp_tx.h"
#include "trace/pcap_writer.h"
#include "util/bytes.h"
#include "wire/wire.h"
#include "wire/wire_mpa.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

/* The (simulated) registered buffers the exchange uses. */
#define WRITE_STAG     0x00abcd01u /* responder's buffer, target of the RDMA Write */
#define WRITE_TO       0x1000u
#define READ_SRC_STAG  0x00c0ffeeu /* responder's buffer, source of the RDMA Read */
#define READ_SRC_TO    0x123456780000ull
#define READ_SINK_STAG 0x00beef02u /* initiator's buffer, sink of the RDMA Read */
#define READ_SINK_TO   0x2000u
#define RTR_STAG       0x00000001u /* non-zero STag for zero-length RTRs (Chelsio rejects 0) */
#define WRITE_LEN      6000u
#define READ_LEN       3000u
#define SEND_BIG_LEN   5000u
#define MAX_SLICE      4u /* payload pieces per segment: the demo sends one contiguous buffer */

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
    bool crc, markers, ipv6, quiet;
    uint8_t rtr; /* IWARP_MPA_RTR_* bit for peer-to-peer, 0 without */
    uint32_t emss;
    const char *pcap;
    enum corrupt corrupt;
};

struct peer {
    const char *dir; /* how this peer's PDUs are labelled: "i>r" or "r>i" */
    enum iwarp_pcap_side side;
    struct iwarp_mpa_neg neg;
    struct iwarp_mpa_tx tx;
    struct iwarp_mpa_rx rx;
    uint32_t next_msn[4]; /* per untagged QN, for what this peer sends (RFC 5041 §4.3) */
    uint8_t ulpdu[65536]; /* the FPDU being received (staged until its CRC is checked) */
    bool terminated;      /* this peer sent or received a Terminate */
};

struct demo {
    struct opts o;
    struct iwarp_pcap_writer *w;
    struct iwarp_pcap_tcp tcp;
    struct peer p[2]; /* [0] initiator, [1] responder */
    uint32_t mulpdu;
    uint32_t rng;
    unsigned fpdus;
    bool corrupt_armed; /* damage the next segment sent */
    bool done;          /* an error was detected: stop the exchange */
    int detected;       /* the receiver's error code */
    uint8_t write_sink[WRITE_LEN], write_src[WRITE_LEN];
    uint8_t read_src[READ_LEN], read_sink[READ_LEN];
    uint8_t last_send_hdr[IWARP_DDP_UNTAGGED_HDR_LEN]; /* header of the initiator's last Send */
    uint32_t last_send_len;
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

static uint32_t rnd(struct demo *d)
{
    d->rng = d->rng * 1103515245u + 12345u;
    return d->rng >> 8;
}

static struct peer *other(struct demo *d, const struct peer *p)
{
    return p == &d->p[0] ? &d->p[1] : &d->p[0];
}

/* ---- reporting ---- */

static void report_detection(struct demo *d, const struct peer *rx, int err,
                             const struct iwarp_term_cause *cause)
{
    char cs[128] = "none (close the TCP connection)";
    if (cause)
        iwarp_term_cause_str(*cause, cs, sizeof cs);
    printf("detected: %s by the %s: %s; Terminate cause: %s\n", iwarp_err_name(err),
           rx == &d->p[0] ? "initiator" : "responder", iwarp_strerror(err), cs);
    if (cause)
        printf("detected-cause: %u/%u/0x%02x\n", cause->layer, cause->etype, cause->ecode);
    d->detected = err;
    d->done = true;
}

static void print_segment(const struct demo *d, const struct peer *from,
                          const struct iwarp_wire_segment *s, uint32_t ulpdu_len, bool crc_checked)
{
    if (d->o.quiet)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "#%-3u %s FPDU ulpdu=%-5u crc=%-9s| %-26s", d->fpdus,
                     from->dir, ulpdu_len, crc_checked ? "ok" : "unchecked", s->op->name);
    size_t cap = sizeof line;
    size_t off = (size_t)n;
#define ADD(...) (off += (size_t)snprintf(line + off, off < cap ? cap - off : 0, __VA_ARGS__))
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

static void print_mpa_frame(const struct demo *d, const char *dir, const uint8_t *p, size_t len)
{
    struct iwarp_mpa_frame f;
    if (d->o.quiet || iwarp_mpa_frame_decode(p, len, &f) < 0)
        return;
    printf("     %s MPA %-7s rev=%u M=%d C=%d R=%d S=%d", dir, f.reply ? "Reply" : "Request", f.rev,
           f.m, f.c, f.r, f.s);
    if (f.s)
        printf(" IRD=%u ORD=%u p2p=%d rtr=%s%s%s", f.v2.ird, f.v2.ord, f.v2.p2p,
               f.v2.rtr & IWARP_MPA_RTR_SEND ? "S" : "", f.v2.rtr & IWARP_MPA_RTR_WRITE ? "W" : "",
               f.v2.rtr & IWARP_MPA_RTR_READ ? "R" : "");
    printf(" private data %u octets \"%.*s\"\n", f.pd_len, (int)f.pd_len, (const char *)f.pd);
}

/* ---- the receive side ---- */

static void send_segment(struct demo *d, struct peer *from, uint8_t *hdr, size_t hlen,
                         const struct iovec *payload, size_t npayload);
static void send_message(struct demo *d, struct peer *from, struct iwarp_wire_msg m,
                         const uint8_t *payload, uint32_t len);

/* Sends the Terminate for cause from `from`, reporting the offending segment's headers as
 * RFC 5040 §4.8 Figure 10 and §7.1 require (iwarp_term_build decides which), then stops. */
static void send_terminate(struct demo *d, struct peer *from, struct iwarp_term_cause cause,
                           const uint8_t *seg, uint32_t seg_len)
{
    struct iwarp_term_offender off = {.seg = seg, .avail = seg_len, .seg_len = seg_len};
    uint8_t term[IWARP_TERM_SEG_MAX_LEN];
    iwarp_ssize n = iwarp_term_build(term, sizeof term, cause, seg ? &off : NULL);
    if (n < 0) {
        fprintf(stderr, "demo: building the Terminate failed: %s\n", iwarp_strerror((int)n));
        exit(1);
    }
    bool was_done = d->done;
    d->done = false; /* let the Terminate itself go out */
    send_segment(d, from, term, (size_t)n, NULL, 0);
    d->done = was_done;
}

static void place_tagged(struct demo *d, const struct iwarp_wire_segment *s)
{
    uint8_t *base;
    uint64_t base_to;
    size_t size;
    if (s->ddp.stag == WRITE_STAG) {
        base = d->write_sink, base_to = WRITE_TO, size = sizeof d->write_sink;
    } else if (s->ddp.stag == READ_SINK_STAG) {
        base = d->read_sink, base_to = READ_SINK_TO, size = sizeof d->read_sink;
    } else {
        return; /* a zero-length RTR: nothing to place, no STag check (RFC 5041 §5.2) */
    }
    if (s->payload_len == 0)
        return;
    if (s->ddp.to < base_to || s->ddp.to - base_to + s->payload_len > size) {
        fprintf(stderr, "demo: tagged segment outside its buffer\n");
        exit(1);
    }
    memcpy(base + (s->ddp.to - base_to), s->payload, s->payload_len);
}

/* The responder's RDMAP answers: Read Response segments for a Read Request, an Atomic
 * Response for an Atomic Request. */
static void answer(struct demo *d, struct peer *rx, const struct iwarp_wire_segment *s)
{
    if (s->opcode == IWARP_RDMAP_OP_READ_REQ) {
        /* RFC 5040 §4.5: the Read Response goes to the sink STag/TO of the request. */
        const struct iwarp_rdmap_read_req *r = &s->body.read_req;
        struct iwarp_wire_msg m = {
            .opcode = IWARP_RDMAP_OP_READ_RESP, .stag = r->sink_stag, .to = r->sink_to};
        send_message(d, rx, m, r->size ? d->read_src : NULL, r->size);
    } else if (s->opcode == IWARP_RDMAP_OP_ATOMIC_REQ) {
        struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_ATOMIC_RESP};
        m.body.atomic_resp.req_id = s->body.atomic_req.req_id;
        m.body.atomic_resp.orig_value = 41;
        send_message(d, rx, m, NULL, 0);
    }
}

static void on_segment(struct demo *d, struct peer *rx, const uint8_t *seg, uint32_t len,
                       bool crc_checked)
{
    struct iwarp_wire_segment s;
    struct iwarp_term_cause cause;
    int err = iwarp_wire_segment_decode(seg, len, &s, &cause);
    if (err < 0) {
        report_detection(d, rx, err, &cause);
        send_terminate(d, rx, cause, seg, len);
        return;
    }
    print_segment(d, other(d, rx), &s, len, crc_checked);
    if (rx == &d->p[1] && iwarp_mpa_neg_state(&rx->neg) == IWARP_MPA_NEG_WAIT_FIRST_FPDU) {
        /* RFC 6581 §9.2 / RFC 5044 §7.1.2 rule 4: the initiator's first FPDU completes setup. */
        uint32_t mlen =
            s.opcode == IWARP_RDMAP_OP_READ_REQ ? s.body.read_req.size : (uint32_t)s.payload_len;
        int e = iwarp_mpa_neg_first_fpdu(&rx->neg, s.opcode, mlen, 0);
        if (e < 0) {
            const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&rx->neg);
            report_detection(d, rx, e, r->term_valid ? &r->term : NULL);
            return;
        }
    }
    if (s.ddp.tagged)
        place_tagged(d, &s);
    if (s.opcode == IWARP_RDMAP_OP_TERMINATE)
        rx->terminated = true;
    else
        answer(d, rx, &s);
}

/* Delivers wire octets to rx's deframer in pieces of varying size (1..97 octets). */
static void deliver(struct demo *d, struct peer *rx, const uint8_t *data, size_t len)
{
    while (len > 0 && !d->done) {
        size_t piece = 1 + rnd(d) % 97;
        if (piece > len)
            piece = len;
        const uint8_t *p = data;
        size_t left = piece;
        while (left > 0 && !d->done) {
            struct iwarp_mpa_rx_ev ev;
            iwarp_ssize used = iwarp_mpa_rx_feed(&rx->rx, p, left, &ev);
            if (used < 0) {
                struct iwarp_term_cause cause;
                bool has = iwarp_mpa_rx_term_cause((int)used, &cause);
                report_detection(d, rx, (int)used, has ? &cause : NULL);
                if (has) /* RFC 5044 §8: the LLP error goes to the peer in a Terminate */
                    send_terminate(d, rx, cause, NULL, 0);
                return;
            }
            p += used;
            left -= (size_t)used;
            if (ev.kind == IWARP_MPA_RX_EV_ULPDU)
                memcpy(rx->ulpdu + ev.ulpdu_off, ev.data, ev.len);
            else if (ev.kind == IWARP_MPA_RX_EV_FPDU)
                on_segment(d, rx, rx->ulpdu, ev.ulpdu_len, ev.crc_checked);
        }
        data += piece;
        len -= piece;
    }
}

/* ---- the send side ---- */

static void damage_header(struct demo *d, uint8_t *hdr)
{
    switch (d->o.corrupt) {
    case CORRUPT_DDP_VERSION:
        hdr[0] = (uint8_t)((hdr[0] & ~IWARP_DDP_MASK_DV) | 2u);
        break;
    case CORRUPT_RDMAP_VERSION:
        hdr[1] = (uint8_t)((hdr[1] & ~IWARP_RDMAP_MASK_RV) | (2u << 6));
        break;
    case CORRUPT_OPCODE:
        hdr[1] = (uint8_t)((hdr[1] & ~IWARP_RDMAP_MASK_OPCODE) | 0xCu);
        break;
    case CORRUPT_QN:
        iwarp_store_be32(hdr + 6, 1);
        break;
    default:
        break;
    }
}

/* Frames, captures and delivers one DDP segment (header bytes + payload slice) from `from` to
 * its peer, damaging it first if --corrupt asked for that. hdr has room for 4 more octets. */
static void send_segment(struct demo *d, struct peer *from, uint8_t *hdr, size_t hlen,
                         const struct iovec *payload, size_t npayload)
{
    if (d->done)
        return;
    size_t len = 0;
    for (size_t i = 0; i < npayload; i++)
        len += payload[i].iov_len;
    bool damage = d->corrupt_armed;
    d->corrupt_armed = false;
    if (damage && d->o.corrupt == CORRUPT_READREQ_LEN) {
        memset(hdr + hlen, 0, 4); /* RFC 5040 §4.4: the body is exactly 28 octets */
        hlen += 4;
    } else if (damage) {
        damage_header(d, hdr);
    }
    if (from == &d->p[0] && (hdr[1] & IWARP_RDMAP_MASK_OPCODE) == IWARP_RDMAP_OP_SEND) {
        memcpy(d->last_send_hdr, hdr, IWARP_DDP_UNTAGGED_HDR_LEN);
        d->last_send_len = (uint32_t)(hlen + len);
    }
    struct iovec ulpdu[1 + MAX_SLICE];
    ulpdu[0] = (struct iovec){hdr, hlen};
    if (npayload > 0)
        memcpy(ulpdu + 1, payload, npayload * sizeof *payload);
    struct iwarp_mpa_tx_scratch scratch;
    struct iovec out[IWARP_MPA_TX_IOV_MAX(1 + MAX_SLICE)];
    iwarp_ssize niov = iwarp_mpa_tx_frame(&from->tx, ulpdu, 1 + npayload, &scratch, out,
                                          sizeof out / sizeof out[0]);
    if (niov < 0) {
        fprintf(stderr, "demo: frame: %s\n", iwarp_strerror((int)niov));
        exit(1);
    }
    if (damage && d->o.corrupt == CORRUPT_CRC)
        scratch.trailer[iwarp_mpa_pad_len((uint32_t)(hlen + len)) + 3] ^= 0x10;
    if (damage && d->o.corrupt == CORRUPT_MARKER)
        scratch.markers[0][3] ^= 0x04;
    d->fpdus++;
    /* One FPDU = one TCP segment, as a stack sends them (RFC 5044 §4.5: an FPDU fits the EMSS). */
    if (d->w && iwarp_pcap_tcp_send(&d->tcp, from->side, out, (size_t)niov, 0) < 0) {
        fprintf(stderr, "demo: pcap: %s\n", iwarp_pcap_writer_errtext(d->w));
        exit(1);
    }
    static uint8_t wire[70000];
    size_t wlen = 0;
    for (iwarp_ssize i = 0; i < niov; i++) {
        memcpy(wire + wlen, out[i].iov_base, out[i].iov_len);
        wlen += out[i].iov_len;
    }
    deliver(d, other(d, from), wire, wlen);
}

/* Sends one RDMAP message, segmented by DDP to the connection's MULPDU (RFC 5041 §5.2,
 * RFC 5044 §4.5); untagged messages take the next MSN of their queue (RFC 5041 §4.3). */
static void send_message(struct demo *d, struct peer *from, struct iwarp_wire_msg m,
                         const uint8_t *payload, uint32_t len)
{
    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(m.opcode);
    if (!op->tagged)
        m.msn = from->next_msn[op->qn]++;
    struct iovec iov = {(void *)(uintptr_t)payload, len};
    struct iwarp_ddp_tx_msg tx;
    int e = iwarp_ddp_tx_init(&tx, &m, &iov, 1, len);
    while (e == 0 && !d->done) {
        uint8_t hdr[IWARP_DDP_TX_HDR_MAX + 4];
        struct iovec slice[MAX_SLICE];
        size_t nslice;
        iwarp_ssize hlen =
            iwarp_ddp_tx_next(&tx, d->mulpdu, hdr, IWARP_DDP_TX_HDR_MAX, slice, MAX_SLICE, &nslice);
        if (hlen <= 0) {
            e = (int)hlen;
            break;
        }
        send_segment(d, from, hdr, (size_t)hlen, slice, nslice);
    }
    if (e < 0) {
        fprintf(stderr, "demo: segmenting %s: %s\n", op->name, iwarp_strerror(e));
        exit(1);
    }
}

/* ---- MPA connection setup ---- */

static void pump_mpa(struct demo *d, struct peer *from)
{
    uint8_t buf[IWARP_MPA_HDR_LEN + 1024];
    size_t n = iwarp_mpa_neg_tx(&from->neg, buf, sizeof buf);
    if (n == 0)
        return;
    if (from == &d->p[0] && d->o.corrupt == CORRUPT_MPA_REV) {
        buf[17] = 3;
    } else if (from == &d->p[0] && d->o.corrupt == CORRUPT_MPA_PD_LEN) {
        uint16_t pd = iwarp_load_be16(buf + 18);
        memset(buf + n, 'x', 600u - pd); /* RFC 5044 §7.1.1: at most 512 */
        n += 600u - pd;
        iwarp_store_be16(buf + 18, 600);
    }
    print_mpa_frame(d, from->dir, buf, n);
    struct iovec iov = {buf, n};
    if (d->w && iwarp_pcap_tcp_send(&d->tcp, from->side, &iov, 1, 0) < 0)
        exit(1);
    struct peer *to = other(d, from);
    for (size_t off = 0; off < n;) {
        size_t piece = 1 + rnd(d) % 13;
        piece = piece > n - off ? n - off : piece;
        iwarp_ssize used = iwarp_mpa_neg_rx(&to->neg, buf + off, piece, 0);
        if (used < 0) {
            const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&to->neg);
            report_detection(d, to, (int)used, r->term_valid ? &r->term : NULL);
            return;
        }
        if (used == 0)
            break;
        off += (size_t)used;
    }
}

static int negotiate(struct demo *d)
{
    struct iwarp_mpa_neg_cfg ci, cr;
    iwarp_mpa_neg_cfg_default(&ci, IWARP_MPA_INITIATOR);
    iwarp_mpa_neg_cfg_default(&cr, IWARP_MPA_RESPONDER);
    static const char ipd[] = "libiwarp demo initiator", rpd[] = "libiwarp demo responder";
    ci.revision = (uint8_t)d->o.rev;
    ci.enhanced = d->o.rev == 2;
    ci.crc = d->o.crc;
    cr.crc = d->o.crc;
    ci.markers = cr.markers = d->o.markers; /* both directions: Wireshark assumes both */
    ci.peer2peer = d->o.rtr != 0;
    if (d->o.rtr)
        ci.rtr = ci.rtr_pref = d->o.rtr;
    cr.rtr = IWARP_MPA_RTR_ALL;
    ci.pd = (const uint8_t *)ipd;
    ci.pd_len = sizeof ipd - 1;
    int e;
    if ((e = iwarp_mpa_neg_init(&d->p[0].neg, &ci, 0)) < 0 ||
        (e = iwarp_mpa_neg_init(&d->p[1].neg, &cr, 0)) < 0) {
        fprintf(stderr, "demo: MPA configuration: %s\n", iwarp_strerror(e));
        return e;
    }
    pump_mpa(d, &d->p[0]);
    if (d->done)
        return 0;
    if (iwarp_mpa_neg_state(&d->p[1].neg) != IWARP_MPA_NEG_REQUEST) {
        fprintf(stderr, "demo: responder did not receive the Request\n");
        return IWARP_ERR_PROTO;
    }
    struct iwarp_mpa_neg_answer ans = {
        .ird = 16, .ord = 16, .pd = (const uint8_t *)rpd, .pd_len = sizeof rpd - 1};
    if ((e = iwarp_mpa_neg_accept(&d->p[1].neg, &ans, 0)) < 0)
        return e;
    pump_mpa(d, &d->p[1]);
    if (d->done)
        return 0;
    for (int i = 0; i < 2; i++) {
        const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&d->p[i].neg);
        if (r->err < 0) {
            fprintf(stderr, "demo: MPA setup failed: %s\n", iwarp_strerror(r->err));
            return r->err;
        }
        struct iwarp_mpa_tx_cfg tc = {.crc = r->crc, .markers = r->markers_tx};
        struct iwarp_mpa_rx_cfg rc = {.crc = r->crc, .markers = r->markers_rx};
        if ((e = iwarp_mpa_tx_init(&d->p[i].tx, &tc)) < 0 ||
            (e = iwarp_mpa_rx_init(&d->p[i].rx, &rc)) < 0)
            return e;
        d->p[i].next_msn[0] = d->p[i].next_msn[1] = IWARP_DDP_MSN_INIT;
        d->p[i].next_msn[2] = d->p[i].next_msn[3] = IWARP_DDP_MSN_INIT;
    }
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&d->p[0].neg);
    d->mulpdu = iwarp_mpa_mulpdu(d->o.emss, r->markers_tx || r->markers_rx);
    say(d, "     MPA full operation: rev %u, CRC %s, markers %s, IRD/ORD %u/%u, %s, MULPDU %u\n",
        r->rev, r->crc ? "on" : "off", r->markers_tx ? "both ways" : "off", r->ird, r->ord,
        r->p2p ? (r->rtr == IWARP_MPA_RTR_WRITE  ? "peer-to-peer, Write RTR"
                  : r->rtr == IWARP_MPA_RTR_READ ? "peer-to-peer, Read RTR"
                                                 : "peer-to-peer, Send RTR")
               : "initiator sends first",
        d->mulpdu);
    return 0;
}

/* The initiator's first FPDU: the negotiated zero-length RTR (RFC 6581 §5, §9.2). */
static void send_rtr(struct demo *d)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&d->p[0].neg);
    struct peer *i = &d->p[0];
    iwarp_mpa_neg_first_sent(&i->neg); /* the RTR is handed to the framer right below */
    if (r->rtr == IWARP_MPA_RTR_SEND) {
        send_message(d, i, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND}, NULL, 0);
    } else if (r->rtr == IWARP_MPA_RTR_WRITE) {
        send_message(d, i,
                     (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_WRITE, .stag = RTR_STAG},
                     NULL, 0);
    } else {
        struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_READ_REQ};
        m.body.read_req =
            (struct iwarp_rdmap_read_req){.sink_stag = RTR_STAG, .src_stag = RTR_STAG};
        send_message(d, i, m, NULL, 0);
    }
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t k = 0; k < n; k++)
        p[k] = (uint8_t)(seed + k * 7u + (k >> 8));
}

static void exchange(struct demo *d)
{
    struct peer *ini = &d->p[0], *rsp = &d->p[1];
    static const char hello[] = "Hello from the libiwarp initiator";
    static uint8_t big[SEND_BIG_LEN];
    fill(big, sizeof big, 3);
    fill(d->write_src, sizeof d->write_src, 11);
    fill(d->read_src, sizeof d->read_src, 29);

    if (iwarp_mpa_neg_result(&ini->neg)->rtr)
        send_rtr(d);
    else
        iwarp_mpa_neg_first_sent(&ini->neg); /* the ULP's first message follows right below */
    send_message(d, ini, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND},
                 (const uint8_t *)hello, sizeof hello - 1);
    send_message(d, ini, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND}, big, sizeof big);
    d->corrupt_armed = d->o.corrupt == CORRUPT_CRC || d->o.corrupt == CORRUPT_MARKER;
    send_message(
        d, ini,
        (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_WRITE, .stag = WRITE_STAG, .to = WRITE_TO},
        d->write_src, WRITE_LEN);
    send_message(d, ini, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND_SE},
                 (const uint8_t *)"solicited", 9);
    d->corrupt_armed = d->o.corrupt >= CORRUPT_DDP_VERSION && d->o.corrupt <= CORRUPT_QN;
    send_message(d, ini,
                 (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND_INV, .inv_stag = WRITE_STAG},
                 (const uint8_t *)"invalidate", 10);
    send_message(
        d, ini,
        (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND_SE_INV, .inv_stag = WRITE_STAG + 1},
        (const uint8_t *)"solicited+invalidate", 20);
    send_message(
        d, ini,
        (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_WRITE, .stag = WRITE_STAG, .to = WRITE_TO},
        NULL, 0);
    struct iwarp_wire_msg rr = {.opcode = IWARP_RDMAP_OP_READ_REQ};
    rr.body.read_req = (struct iwarp_rdmap_read_req){.sink_stag = READ_SINK_STAG,
                                                     .sink_to = READ_SINK_TO,
                                                     .size = READ_LEN,
                                                     .src_stag = READ_SRC_STAG,
                                                     .src_to = READ_SRC_TO};
    d->corrupt_armed = d->o.corrupt == CORRUPT_READREQ_LEN;
    send_message(d, ini, rr, NULL, 0);
    struct iwarp_wire_msg imm = {.opcode = IWARP_RDMAP_OP_IMM_DATA};
    memcpy(imm.body.imm.data, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8);
    send_message(d, ini, imm, NULL, 0);
    imm.opcode = IWARP_RDMAP_OP_IMM_DATA_SE;
    send_message(d, ini, imm, NULL, 0);
    struct iwarp_wire_msg at = {.opcode = IWARP_RDMAP_OP_ATOMIC_REQ};
    at.body.atomic_req = (struct iwarp_rdmap_atomic_req){.aopcode = IWARP_ATOMIC_FETCH_ADD,
                                                         .req_id = 7,
                                                         .stag = WRITE_STAG,
                                                         .to = WRITE_TO,
                                                         .add_swap = 1,
                                                         .compare_mask = UINT64_MAX};
    send_message(d, ini, at, NULL, 0);
    send_message(d, ini, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND},
                 (const uint8_t *)"no buffer for this one", 22);
    if (d->done)
        return;
    /* The responder has no receive buffer for that last Send: RFC 5041 §7.2 DDP untagged
     * "no buffer available", reported with the offending header (RFC 5040 §4.8, §7.1). */
    say(d, "     responder: no receive buffer posted for the last Send -> Terminate\n");
    struct iwarp_term_cause cause = {IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_UNTAGGED,
                                     IWARP_TERM_DDP_U_NO_BUFFER};
    send_terminate(d, rsp, cause, d->last_send_hdr, d->last_send_len);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: iwarp demo [OPTIONS]\n\n"
            "Runs an MPA initiator and responder in one process (no sockets): they negotiate,\n"
            "then every RDMAP operation is encoded, framed into FPDUs, delivered to the peer's\n"
            "deframer in pieces, decoded, checked and printed, one line per PDU. The bytes go\n"
            "to a capture file that Wireshark/tshark can open.\n\n"
            "options:\n"
            "  --pcap FILE        write the exchange to FILE (pcap, Ethernet/IPv4/TCP)\n"
            "  --ipv6             use IPv6 addresses in the capture\n"
            "  --mpa-rev 1|2      MPA revision (default 2: RFC 6581 enhanced, IRD/ORD)\n"
            "  --crc / --no-crc   ask for CRC32C (default on, RFC 5044 §4.4)\n"
            "  --markers          ask for markers in both directions (RFC 5044 §4.3)\n"
            "  --p2p send|write|read  peer-to-peer model with that zero-length RTR (rev 2)\n"
            "  --emss N           TCP payload size the FPDUs are sized to (default 1460)\n"
            "  --corrupt KIND     damage one PDU and show the receiver detecting it:\n");
    for (size_t i = 0; i < sizeof corrupt_kinds / sizeof corrupt_kinds[0]; i++)
        fprintf(out, "                     %-14s %s\n", corrupt_kinds[i].name,
                corrupt_kinds[i].what);
    fprintf(out, "  -q, --quiet        print only the summary\n"
                 "  -h, --help         this text\n\n"
                 "Exit status: 0 when the exchange completed and verified (or, with --corrupt,\n"
                 "when the damage was detected), 1 otherwise, 2 for bad options.\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"pcap", required_argument, NULL, 'P'},    {"ipv6", no_argument, NULL, '6'},
        {"mpa-rev", required_argument, NULL, 'r'}, {"crc", no_argument, NULL, 'c'},
        {"no-crc", no_argument, NULL, 'C'},        {"markers", no_argument, NULL, 'm'},
        {"p2p", required_argument, NULL, 'p'},     {"emss", required_argument, NULL, 'e'},
        {"corrupt", required_argument, NULL, 'x'}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    *o = (struct opts){.rev = 2, .crc = true, .emss = 1460};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case 'P':
            o->pcap = optarg;
            break;
        case '6':
            o->ipv6 = true;
            break;
        case 'r':
            o->rev = atoi(optarg);
            if (o->rev != 1 && o->rev != 2)
                return fprintf(stderr, "iwarp demo: --mpa-rev must be 1 or 2\n"), -1;
            break;
        case 'c':
            o->crc = true;
            break;
        case 'C':
            o->crc = false;
            break;
        case 'm':
            o->markers = true;
            break;
        case 'p':
            o->rtr = !strcmp(optarg, "send")    ? IWARP_MPA_RTR_SEND
                     : !strcmp(optarg, "write") ? IWARP_MPA_RTR_WRITE
                     : !strcmp(optarg, "read")  ? IWARP_MPA_RTR_READ
                                                : 0;
            if (!o->rtr)
                return fprintf(stderr, "iwarp demo: --p2p takes send, write or read\n"), -1;
            break;
        case 'e':
            o->emss = (uint32_t)strtoul(optarg, NULL, 0);
            if (o->emss < 256 || o->emss > 65495)
                return fprintf(stderr, "iwarp demo: --emss must be 256..65495\n"), -1;
            break;
        case 'x':
            for (size_t i = 0; i < sizeof corrupt_kinds / sizeof corrupt_kinds[0]; i++)
                if (!strcmp(optarg, corrupt_kinds[i].name))
                    o->corrupt = corrupt_kinds[i].kind;
            if (o->corrupt == CORRUPT_NONE)
                return fprintf(stderr, "iwarp demo: unknown --corrupt kind '%s'\n", optarg), -1;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc)
        return fprintf(stderr, "iwarp demo: unexpected argument '%s'\n", argv[optind]), -1;
    if (o->rtr && o->rev != 2)
        return fprintf(stderr, "iwarp demo: --p2p needs --mpa-rev 2 (RFC 6581)\n"), -1;
    if (o->corrupt == CORRUPT_CRC && !o->crc)
        return fprintf(stderr, "iwarp demo: --corrupt crc needs CRC on\n"), -1;
    if (o->corrupt == CORRUPT_MARKER && !o->markers)
        return fprintf(stderr, "iwarp demo: --corrupt marker needs --markers\n"), -1;
    return 0;
}

static int open_capture(struct demo *d)
{
    char err[IWARP_PCAP_ERRTEXT_LEN];
    int e = iwarp_pcap_writer_open(&d->w, d->o.pcap, err, sizeof err);
    if (e < 0) {
        fprintf(stderr, "iwarp demo: %s: %s\n", d->o.pcap, err);
        return e;
    }
    struct iwarp_pcap_tcp_end cl = {.port = 40001, .isn = 1000}, sv = {.port = 19875, .isn = 5000};
    if (d->o.ipv6) {
        cl.addr[15] = 1;
        sv.addr[15] = 1;
    } else {
        memcpy(cl.addr, "\x7f\x00\x00\x01", 4);
        memcpy(sv.addr, "\x7f\x00\x00\x01", 4);
    }
    if ((e = iwarp_pcap_tcp_init(&d->tcp, d->w, d->o.ipv6 ? 6 : 4, &cl, &sv)) < 0 ||
        (e = iwarp_pcap_tcp_handshake(&d->tcp)) < 0)
        fprintf(stderr, "iwarp demo: capture: %s\n", iwarp_strerror(e));
    return e;
}

int iwarp_cli_demo(int argc, char **argv)
{
    static struct demo demo;
    struct demo *d = &demo;
    if (parse(argc, argv, &d->o) < 0)
        return 2;
    d->rng = 0x1234567u;
    d->p[0].dir = "i>r";
    d->p[0].side = IWARP_PCAP_CLIENT;
    d->p[1].dir = "r>i";
    d->p[1].side = IWARP_PCAP_SERVER;
    if (d->o.pcap && open_capture(d) < 0)
        return 1;
    int rc = negotiate(d) < 0;
    if (!rc && !d->done)
        exchange(d);
    if (d->w) {
        iwarp_pcap_tcp_fin(&d->tcp, IWARP_PCAP_CLIENT);
        iwarp_pcap_tcp_fin(&d->tcp, IWARP_PCAP_SERVER);
        if (iwarp_pcap_writer_close(d->w) < 0)
            rc = 1;
    }
    if (rc)
        return 1;
    if (d->o.corrupt != CORRUPT_NONE) {
        if (!d->detected) {
            printf("NOT detected: the damaged PDU was accepted\n");
            return 1;
        }
        return 0;
    }
    if (d->detected)
        return 1;
    bool ok = !memcmp(d->write_sink, d->write_src, WRITE_LEN) &&
              !memcmp(d->read_sink, d->read_src, READ_LEN) && d->p[0].terminated;
    printf("%u FPDUs; RDMA Write %u B and RDMA Read %u B placed and verified: %s%s%s\n", d->fpdus,
           WRITE_LEN, READ_LEN, ok ? "OK" : "MISMATCH", d->o.pcap ? "; capture: " : "",
           d->o.pcap ? d->o.pcap : "");
    return ok ? 0 : 1;
}
