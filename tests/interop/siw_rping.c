/*
 * siw_rping: rping's protocol (rdma-core librdmacm/examples/rping.c) spoken by libiwarp's
 * byte-level layers over a real TCP socket, against the real rping on Linux siw.
 *
 *   siw_rping client --port N [--count C] [--size S] [--crc] [--verbose]
 *       dials 127.0.0.1:N (a qemu hostfwd to `rping -s`), as the MPA initiator
 *   siw_rping server --port N [--count C] [--size S] [--crc] [--verbose]
 *       listens on 127.0.0.1:N (the guest runs `rping -c -a 10.0.2.2`), as the MPA responder
 *
 * One rping iteration (rping.c rping_test_client / rping_test_server):
 *   client: Send {start buffer TO, STag, size}   (struct rping_rdma_info, 16 octets, big-endian)
 *   server: RDMA Read of the whole start buffer, then a Send ("go ahead", its zeroed send_buf)
 *   client: Send {sink buffer TO, STag, size}
 *   server: RDMA Write of strlen(data) + 1 octets into the sink, then a Send ("go ahead")
 *   client: compares sink and start buffer (rping -V)
 * The start buffer holds "rdma-ping-%d: " followed by the letters 'A'..'z' cycling from a start
 * letter that advances by one per iteration, and a final NUL (rping_test_client).
 *
 * Pieces used: MPA negotiation (mpa/mpa_negotiate.h; Rev 2 enhanced, IRD = ORD = 1 as rping's
 * rdma_conn_param), the FPDU framer (mpa/mpa_frame.h, writev of its iovecs, FPDUs sized with
 * iwarp_mpa_mulpdu() from the socket's TCP_MAXSEG), the deframer (mpa/mpa_deframe.h, spans
 * staged until the FPDU event), the segment codec (wire/wire_segment.h) and Terminates
 * (wire/wire_term.h). Everything above those (queues, MSNs, STags, placement) is the small
 * RDMAP/DDP endpoint below, the seed of `iwarp ping`.
 *
 * Exit status: 0 when every iteration completed and verified; 1 on any protocol error, received
 * Terminate, data mismatch or I/O failure; 2 for bad options.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ddp/ddp_tx.h"
#include "iwarp/iwarp.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"
#include "util/bytes.h"
#include "wire/wire.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

#define RPING_INFO_LEN 16u    /* struct rping_rdma_info { __be64 buf; __be32 rkey, size; } */
#define RPING_MIN_SIZE 26u    /* RPING_MIN_BUFSIZE: sizeof "2147483647" + sizeof RPING_MSG_FMT */
#define RPING_MAX_SIZE 65535u /* RPING_BUFSIZE - 1 */
#define IO_TIMEOUT_MS  30000  /* no byte for this long during full operation: give up */
#define CONNECT_SECS   120    /* client: keep dialling (refused / EOF) for this long */

/* Our buffers and the peer-visible names we gave them (any non-zero STag, 64-bit TOs). */
#define START_STAG 0x00a11c01u /* client: rping's start_buf, source of the server's Read */
#define START_TO   0x00007e5100000000ull
#define SINK_STAG  0x00a11c02u /* client: rping's rdma_buf, sink of the server's Write */
#define SINK_TO    0x00007e5200000000ull
#define RDSNK_STAG 0x00a11c03u /* server: rping's rdma_buf, sink of our Read */
#define RDSNK_TO   0x00007e5300000000ull

struct opts {
    bool server, crc, verbose;
    uint16_t port;
    unsigned count;
    uint32_t size;
    long first_delay_ms; /* client: pause between the MPA Reply and our first FPDU */
};

/* A registered buffer: what an STag names, from TO `to` for `len` octets. */
struct region {
    uint32_t stag;
    uint64_t to;
    uint8_t *mem;
    uint32_t len;
    bool remote_read, remote_write; /* rights given to the peer (rping: both on its buffers) */
    uint32_t placed;                /* octets the peer placed since the app last cleared it */
};

/* What the receive loop hands up to the rping logic. */
enum app_ev { APP_NONE, APP_SEND, APP_READ_DONE, APP_EOF, APP_ERROR };

/* One iWARP connection: the socket, the MPA state in both directions, the DDP/RDMAP queues. */
struct conn {
    int fd;
    const struct opts *o;
    struct iwarp_mpa_neg neg;
    struct iwarp_mpa_tx tx;
    struct iwarp_mpa_rx rx;
    uint32_t mulpdu;
    uint32_t tx_msn[4], rx_msn[4]; /* next MSN per untagged queue (RFC 5041 §4.3: from 1) */
    struct region reg[2];
    size_t nreg;
    uint8_t recv_buf[RPING_INFO_LEN]; /* the one posted receive (rping posts recv_buf) */
    uint32_t recv_len;
    bool read_pending;    /* our RDMA Read is outstanding (ORD 1) */
    uint32_t read_served; /* octets we sent in Read Responses since the app last cleared it */
    bool term_seen;       /* a Terminate was sent or received: send nothing more */
    size_t in_off, in_len;
    uint8_t in[65536];
    uint8_t ulpdu[IWARP_MPA_MULPDU_MAX]; /* staging for the FPDU being received (RFC 5044 §6) */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* rping_test_client: "rdma-ping-%d: ", then 'A'..'z' cycling from 'A' + ping % 58, NUL last. */
static void rping_pattern(uint8_t *buf, uint32_t size, unsigned ping)
{
    int cc = snprintf((char *)buf, size, "rdma-ping-%u: ", ping);
    unsigned c = 65 + ping % 58;
    for (uint32_t i = (uint32_t)cc; i < size; i++) {
        buf[i] = (uint8_t)c;
        if (++c > 122)
            c = 65;
    }
    buf[size - 1] = 0;
}

/* ---- the send side ---- */

static int write_iov(int fd, struct iovec *iov, size_t n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, (int)n); /* n <= IWARP_MPA_TX_IOV_MAX(2) < UIO_MAXIOV */
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return perror("siw_rping: writev"), -1;
        size_t k = (size_t)w; /* skip what was written, resume inside a partial iovec */
        for (; n > 0 && k >= iov->iov_len; n--, iov++)
            k -= iov->iov_len;
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + k;
            iov->iov_len -= k;
        }
    }
    return 0;
}

/* Frames one ULPDU (a DDP segment given as iovecs) as one FPDU and writes it (RFC 5044 §4). */
static int send_ulpdu(struct conn *c, const struct iovec *ulpdu, size_t n)
{
    struct iwarp_mpa_tx_scratch scratch;
    struct iovec out[IWARP_MPA_TX_IOV_MAX(2)];
    iwarp_ssize niov =
        iwarp_mpa_tx_frame(&c->tx, ulpdu, n, &scratch, out, sizeof out / sizeof *out);
    if (niov < 0) {
        fprintf(stderr, "siw_rping: framing: %s\n", iwarp_strerror((int)niov));
        return -1;
    }
    return write_iov(c->fd, out, (size_t)niov);
}

static void trace(const struct conn *c, const char *dir, const struct iwarp_wire_segment *s)
{
    if (!c->o->verbose)
        return;
    if (s->ddp.tagged)
        printf("  %s %-18s STag=0x%08x TO=0x%llx L=%d payload=%zu\n", dir, s->op->name, s->ddp.stag,
               (unsigned long long)s->ddp.to, s->ddp.last, s->payload_len);
    else if (s->opcode == IWARP_RDMAP_OP_READ_REQ)
        printf("  %s %-18s QN=%u MSN=%u sink=0x%08x@0x%llx size=%u src=0x%08x@0x%llx\n", dir,
               s->op->name, s->ddp.qn, s->ddp.msn, s->body.read_req.sink_stag,
               (unsigned long long)s->body.read_req.sink_to, s->body.read_req.size,
               s->body.read_req.src_stag, (unsigned long long)s->body.read_req.src_to);
    else
        printf("  %s %-18s QN=%u MSN=%u MO=%u L=%d payload=%zu\n", dir, s->op->name, s->ddp.qn,
               s->ddp.msn, s->ddp.mo, s->ddp.last, s->payload_len);
}

/* Sends one RDMAP message, segmented to MULPDU (RFC 5041 §5.2, RFC 5044 §4.5): untagged
 * segments share one MSN and advance MO, tagged ones advance TO; only the last has L. */
static int send_message(struct conn *c, struct iwarp_wire_msg m, const uint8_t *payload,
                        uint32_t len)
{
    const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(m.opcode);
    if (!op->tagged)
        m.msn = c->tx_msn[op->qn]++; /* RFC 5041 §4.3: one MSN per message and queue */
    struct iovec iov = {(void *)(uintptr_t)payload, len};
    struct iwarp_ddp_tx_msg tx; /* RFC 5041 §5.2 segmentation to the MULPDU, payload in place */
    int e = iwarp_ddp_tx_init(&tx, &m, &iov, 1, len);
    for (;;) {
        struct iovec seg[2]; /* the header, then the payload slice (one piece: one buffer) */
        uint8_t hdr[IWARP_DDP_TX_HDR_MAX];
        size_t nslice = 0;
        iwarp_ssize h =
            e < 0 ? e : iwarp_ddp_tx_next(&tx, c->mulpdu, hdr, sizeof hdr, seg + 1, 1, &nslice);
        if (h == 0)
            return 0;
        if (h < 0) {
            fprintf(stderr, "siw_rping: segmenting %s: %s\n", op->name, iwarp_strerror((int)h));
            return -1;
        }
        struct iwarp_wire_segment s; /* trace what we encoded, decoded back (payload aside) */
        if (c->o->verbose && iwarp_wire_segment_decode(hdr, (size_t)h, &s, NULL) == 0) {
            s.payload_len = nslice ? seg[1].iov_len : 0;
            trace(c, "->", &s);
        }
        seg[0] = (struct iovec){hdr, (size_t)h};
        if (send_ulpdu(c, seg, 1 + nslice) < 0)
            return -1;
    }
}

/* Reports cause to the peer in a Terminate carrying the offending segment's headers as
 * RFC 5040 §4.8 and §7.1 require (iwarp_term_build decides which), and stops the connection. */
static enum app_ev terminate(struct conn *c, struct iwarp_term_cause cause, const uint8_t *seg,
                             uint32_t len)
{
    char cs[160];
    iwarp_term_cause_str(cause, cs, sizeof cs);
    fprintf(stderr, "siw_rping: sending Terminate: %s\n", cs);
    if (c->term_seen)
        return APP_ERROR;
    c->term_seen = true;
    struct iwarp_term_offender off = {.seg = seg, .avail = len, .seg_len = len};
    uint8_t term[IWARP_TERM_SEG_MAX_LEN];
    iwarp_ssize n = iwarp_term_build(term, sizeof term, cause, seg ? &off : NULL);
    if (n < 0) {
        fprintf(stderr, "siw_rping: building the Terminate: %s\n", iwarp_strerror((int)n));
        return APP_ERROR;
    }
    struct iovec iov = {term, (size_t)n};
    send_ulpdu(c, &iov, 1);
    return APP_ERROR;
}

static enum app_ev term3(struct conn *c, uint8_t layer, uint8_t etype, uint8_t ecode,
                         const uint8_t *seg, uint32_t len)
{
    return terminate(c, (struct iwarp_term_cause){layer, etype, ecode}, seg, len);
}

/* ---- the receive side ---- */

static struct region *find_region(struct conn *c, uint32_t stag)
{
    for (size_t i = 0; i < c->nreg; i++)
        if (c->reg[i].stag == stag)
            return &c->reg[i];
    return NULL;
}

/* RFC 5041 §7.1 check 5: the MSN must fall in the range of posted buffers; rping keeps one
 * receive posted (and we serve one Read at a time), so it is exactly the next MSN. */
static bool msn_ok(const struct conn *c, const struct iwarp_wire_segment *s)
{
    return s->ddp.msn == c->rx_msn[s->ddp.qn];
}

/* A Send into the posted receive buffer (RFC 5040 §5.3; DDP untagged placement RFC 5041 §5.3). */
static enum app_ev on_send(struct conn *c, const struct iwarp_wire_segment *s, const uint8_t *seg,
                           uint32_t len)
{
    if (!msn_ok(c, s)) /* RFC 5041 §7.2: Invalid MSN - MSN range is not valid */
        return term3(c, 1, 2, IWARP_TERM_DDP_U_MSN_RANGE, seg, len);
    if (s->ddp.mo > sizeof c->recv_buf) /* RFC 5041 §7.1 check 3, §7.2 Invalid MO */
        return term3(c, 1, 2, IWARP_TERM_DDP_U_INVALID_MO, seg, len);
    if (s->payload_len > sizeof c->recv_buf - s->ddp.mo) /* §7.1 check 4: message too long */
        return term3(c, 1, 2, IWARP_TERM_DDP_U_TOO_LONG, seg, len);
    memcpy(c->recv_buf + s->ddp.mo, s->payload, s->payload_len);
    if (!s->ddp.last)
        return APP_NONE;
    c->recv_len = s->ddp.mo + (uint32_t)s->payload_len;
    c->rx_msn[IWARP_QN_SEND]++;
    return APP_SEND;
}

/* RDMA Write and Read Response payload, placed by STag and TO (RFC 5041 §5.1, §7.1). */
static enum app_ev on_tagged(struct conn *c, const struct iwarp_wire_segment *s, const uint8_t *seg,
                             uint32_t len)
{
    bool resp = s->opcode == IWARP_RDMAP_OP_READ_RESP;
    if (s->payload_len > 0) { /* RFC 5041 §7.1: non-zero-length segments are validated */
        struct region *r = find_region(c, s->ddp.stag);
        if (!r) /* RFC 5041 §7.1 tagged check 1, §7.2 Invalid STag */
            return term3(c, 1, 1, IWARP_TERM_DDP_T_INVALID_STAG, seg, len);
        /* RFC 5040 §4.8: a Write needs remote write access; a Read Response may only target
         * the sink of our outstanding Read */
        if (resp ? !c->read_pending || r->stag != RDSNK_STAG : !r->remote_write)
            return term3(c, 0, 1, IWARP_TERM_RDMAP_ACCESS, seg, len);
        if (s->ddp.to > UINT64_MAX - s->payload_len) /* check 5: TO + length wraps */
            return term3(c, 1, 1, IWARP_TERM_DDP_T_TO_WRAP, seg, len);
        if (s->ddp.to < r->to || s->ddp.to - r->to > r->len ||
            s->payload_len > r->len - (s->ddp.to - r->to)) /* checks 3, 4: base and bounds */
            return term3(c, 1, 1, IWARP_TERM_DDP_T_BASE_BOUNDS, seg, len);
        memcpy(r->mem + (s->ddp.to - r->to), s->payload, s->payload_len);
        r->placed += (uint32_t)s->payload_len;
    }
    if (resp && s->ddp.last) { /* RFC 5040 §5.2: the last Read Response segment completes it */
        c->read_pending = false;
        return APP_READ_DONE;
    }
    return APP_NONE;
}

/* The peer's RDMA Read Request: answer with Read Response segments (RFC 5040 §4.5, §5.2). */
static enum app_ev on_read_req(struct conn *c, const struct iwarp_wire_segment *s,
                               const uint8_t *seg, uint32_t len)
{
    const struct iwarp_rdmap_read_req *q = &s->body.read_req;
    if (!msn_ok(c, s))
        return term3(c, 1, 2, IWARP_TERM_DDP_U_MSN_RANGE, seg, len);
    c->rx_msn[IWARP_QN_READ_REQ]++;
    struct region *r = find_region(c, q->src_stag);
    if (!r) /* RFC 5040 §4.8: Remote Protection errors on a Read Request carry its header too */
        return term3(c, 0, 1, IWARP_TERM_RDMAP_INVALID_STAG, seg, len);
    if (!r->remote_read)
        return term3(c, 0, 1, IWARP_TERM_RDMAP_ACCESS, seg, len);
    if (q->src_to < r->to || q->src_to - r->to > r->len || q->size > r->len - (q->src_to - r->to))
        return term3(c, 0, 1, IWARP_TERM_RDMAP_BASE_BOUNDS, seg, len);
    struct iwarp_wire_msg m = {
        .opcode = IWARP_RDMAP_OP_READ_RESP, .stag = q->sink_stag, .to = q->sink_to};
    if (send_message(c, m, r->mem + (q->src_to - r->to), q->size) < 0)
        return APP_ERROR;
    c->read_served += q->size;
    return APP_NONE;
}

/* Decodes and acts on one whole ULPDU (a DDP segment whose FPDU passed MPA's checks). */
static enum app_ev on_segment(struct conn *c, const uint8_t *seg, uint32_t len)
{
    struct iwarp_wire_segment s;
    struct iwarp_term_cause cause;
    char cs[160];
    int err = iwarp_wire_segment_decode(seg, len, &s, &cause);
    if (err < 0) {
        fprintf(stderr, "siw_rping: bad segment: %s\n", iwarp_strerror(err));
        return terminate(c, cause, seg, len);
    }
    trace(c, "<-", &s);
    if (iwarp_mpa_neg_state(&c->neg) == IWARP_MPA_NEG_WAIT_FIRST_FPDU) {
        /* RFC 5044 §7.1.2 rule 4: the initiator's first FPDU completes setup */
        uint32_t mlen =
            s.opcode == IWARP_RDMAP_OP_READ_REQ ? s.body.read_req.size : (uint32_t)s.payload_len;
        if ((err = iwarp_mpa_neg_first_fpdu(&c->neg, s.opcode, mlen, now_ns())) < 0) {
            const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
            fprintf(stderr, "siw_rping: first FPDU: %s\n", iwarp_strerror(err));
            return r->term_valid ? terminate(c, r->term, seg, len) : APP_ERROR;
        }
    }
    switch (s.opcode) {
    case IWARP_RDMAP_OP_SEND:
    case IWARP_RDMAP_OP_SEND_SE:
        return on_send(c, &s, seg, len);
    case IWARP_RDMAP_OP_WRITE:
    case IWARP_RDMAP_OP_READ_RESP:
        return on_tagged(c, &s, seg, len);
    case IWARP_RDMAP_OP_READ_REQ:
        return on_read_req(c, &s, seg, len);
    case IWARP_RDMAP_OP_TERMINATE: {
        const struct iwarp_term_ctrl *t = iwarp_term_layout(&s.body.term);
        iwarp_term_cause_str(t->cause, cs, sizeof cs);
        fprintf(stderr, "siw_rping: peer sent Terminate: %s (%u/%u/0x%02x%s)\n", cs, t->cause.layer,
                t->cause.etype, t->cause.ecode, s.body.term.siw_swapped ? ", siw bit layout" : "");
        c->term_seen = true; /* RFC 5040 §5.4: never answer a Terminate with one */
        return APP_ERROR;
    }
    default: /* rping uses none of the others (Invalidate, Immediate Data, atomics) */
        fprintf(stderr, "siw_rping: unexpected %s\n", s.op->name);
        return term3(c, 0, 2, IWARP_TERM_RDMAP_OPCODE, seg, len);
    }
}

/* Waits up to timeout_ms for bytes; returns what read() returned, or -1 on timeout/error. */
static ssize_t read_some(int fd, uint8_t *buf, size_t cap, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (r == 0) {
        fprintf(stderr, "siw_rping: no data from the peer for %d ms\n", timeout_ms);
        return -1;
    }
    ssize_t n;
    while ((n = read(fd, buf, cap)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        perror("siw_rping: read");
    return n;
}

/* The receive loop: deframes what arrives, acts on each FPDU, returns at the first event the
 * rping logic must see. Bytes after that FPDU stay buffered for the next call. */
static enum app_ev wait_event(struct conn *c)
{
    for (;;) {
        while (c->in_off < c->in_len) {
            struct iwarp_mpa_rx_ev ev;
            iwarp_ssize n =
                iwarp_mpa_rx_feed(&c->rx, c->in + c->in_off, c->in_len - c->in_off, &ev);
            if (n < 0) { /* RFC 5044 §8: LLP errors go to the peer in a Terminate */
                struct iwarp_term_cause cause;
                fprintf(stderr, "siw_rping: deframing: %s\n", iwarp_strerror((int)n));
                return iwarp_mpa_rx_term_cause((int)n, &cause) ? terminate(c, cause, NULL, 0)
                                                               : APP_ERROR;
            }
            c->in_off += (size_t)n;
            if (ev.kind == IWARP_MPA_RX_EV_ULPDU) {
                memcpy(c->ulpdu + ev.ulpdu_off, ev.data, ev.len);
            } else if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
                enum app_ev e = on_segment(c, c->ulpdu, ev.ulpdu_len);
                if (e != APP_NONE)
                    return e;
            }
        }
        c->in_off = c->in_len = 0;
        ssize_t n = read_some(c->fd, c->in, sizeof c->in, IO_TIMEOUT_MS);
        if (n < 0)
            return APP_ERROR;
        if (n == 0) {
            struct iwarp_mpa_rx_want w;
            iwarp_mpa_rx_want(&c->rx, &w);
            if (w.part != IWARP_MPA_RX_PART_HDR || w.len != IWARP_MPA_LEN_FIELD)
                fprintf(stderr, "siw_rping: connection closed inside an FPDU\n");
            return APP_EOF;
        }
        c->in_len = (size_t)n;
    }
}

static bool expect(enum app_ev got, enum app_ev want, const char *what)
{
    static const char *const names[] = {"nothing", "a Send", "the Read Response", "EOF",
                                        "an error"};
    if (got == want)
        return true;
    fprintf(stderr, "siw_rping: waiting for %s, got %s\n", what, names[got]);
    return false;
}

/* ---- connection setup ---- */

/* Flushes what the MPA machine has to send (Request, Reply). */
static int mpa_flush(struct conn *c)
{
    uint8_t buf[IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX];
    size_t n;
    while ((n = iwarp_mpa_neg_tx(&c->neg, buf, sizeof buf)) > 0) {
        struct iovec iov = {buf, n};
        if (write_iov(c->fd, &iov, 1) < 0)
            return -1;
    }
    return 0;
}

/* MPA connection setup (RFC 5044 §7.1, RFC 6581) up to full operation. Returns 0; 1 when the
 * peer closed before sending a single octet (qemu's hostfwd with no guest listener yet: retry);
 * -1 on failure. Octets after the peer's frame stay in c->in for the deframer. */
static int negotiate(struct conn *c)
{
    struct iwarp_mpa_neg_cfg cfg;
    enum iwarp_mpa_role role = c->o->server ? IWARP_MPA_RESPONDER : IWARP_MPA_INITIATOR;
    iwarp_mpa_neg_cfg_default(&cfg, role);
    cfg.revision = IWARP_MPA_REV2;
    cfg.enhanced = true;
    cfg.crc = c->o->crc; /* siw's default is off; C=1 from either side turns it on */
    cfg.markers = false;
    cfg.ird = cfg.ord = 1; /* rping: responder_resources = initiator_depth = 1 */
    int e = iwarp_mpa_neg_init(&c->neg, &cfg, now_ns());
    if (e < 0 || mpa_flush(c) < 0)
        return -1;
    size_t got = 0;
    for (;;) {
        enum iwarp_mpa_neg_state st = iwarp_mpa_neg_state(&c->neg);
        if (st == IWARP_MPA_NEG_REQUEST) {
            struct iwarp_mpa_neg_answer ans = {.ird = 1, .ord = 1};
            if (iwarp_mpa_neg_accept(&c->neg, &ans, now_ns()) < 0 || mpa_flush(c) < 0)
                return -1;
            continue;
        }
        if (st != IWARP_MPA_NEG_WAIT_REPLY && st != IWARP_MPA_NEG_WAIT_REQUEST)
            break;
        uint64_t dl = iwarp_mpa_neg_next_timeout(&c->neg), t = now_ns();
        int ms = dl == UINT64_MAX ? IO_TIMEOUT_MS : dl > t ? (int)((dl - t) / 1000000u) + 1 : 0;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, ms) == 0) {
            iwarp_mpa_neg_handle_timeout(&c->neg, now_ns());
            if (iwarp_mpa_neg_state(&c->neg) == IWARP_MPA_NEG_FAILED)
                break;
            continue;
        }
        ssize_t n = read(c->fd, c->in, sizeof c->in);
        if (n <= 0) {
            if (got == 0 && (n == 0 || errno == ECONNRESET))
                return 1; /* nobody behind the hostfwd yet */
            fprintf(stderr, "siw_rping: connection lost during MPA setup\n");
            return -1;
        }
        got += (size_t)n;
        size_t off = 0;
        while (off < (size_t)n) {
            st = iwarp_mpa_neg_state(&c->neg);
            if (st != IWARP_MPA_NEG_WAIT_REPLY && st != IWARP_MPA_NEG_WAIT_REQUEST)
                break;
            iwarp_ssize u = iwarp_mpa_neg_rx(&c->neg, c->in + off, (size_t)n - off, now_ns());
            if (u < 0)
                break;
            off += (size_t)u;
        }
        c->in_off = off, c->in_len = (size_t)n;
    }
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&c->neg);
    if (iwarp_mpa_neg_state(&c->neg) == IWARP_MPA_NEG_FAILED ||
        iwarp_mpa_neg_state(&c->neg) == IWARP_MPA_NEG_REJECTED) {
        char cs[160] = "none";
        if (r->term_valid)
            iwarp_term_cause_str(r->term, cs, sizeof cs);
        fprintf(stderr, "siw_rping: MPA setup failed: %s (%s); Terminate cause: %s\n",
                iwarp_err_name(r->err), iwarp_strerror(r->err), cs);
        return -1;
    }
    struct iwarp_mpa_tx_cfg tc = {.crc = r->crc, .markers = r->markers_tx};
    struct iwarp_mpa_rx_cfg rc = {.crc = r->crc, .markers = r->markers_rx};
    if (iwarp_mpa_tx_init(&c->tx, &tc) < 0 || iwarp_mpa_rx_init(&c->rx, &rc) < 0)
        return -1;
    int emss = 0;
    socklen_t sl = sizeof emss;
    if (getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &emss, &sl) < 0 || emss <= 0)
        emss = 1460;
    c->mulpdu = iwarp_mpa_mulpdu((uint32_t)emss, r->markers_tx || r->markers_rx);
    for (int q = 0; q < 4; q++)
        c->tx_msn[q] = c->rx_msn[q] = IWARP_DDP_MSN_INIT;
    printf("MPA: rev %u, peer IRD/ORD %u/%u, ours %u/%u, CRC %s, markers %s, EMSS %d, MULPDU "
           "%u\n",
           r->rev, r->peer_ird, r->peer_ord, r->ird, r->ord, r->crc ? "on" : "off",
           r->markers_tx || r->markers_rx ? "on" : "off", emss, c->mulpdu);
    if (c->o->crc && !r->crc)
        return fprintf(stderr, "siw_rping: CRC was asked for but is off\n"), -1;
    return 0;
}

static int tcp_nodelay(int fd)
{
    int one = 1; /* siw_tcp_nagle = false: FPDUs go out at once */
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Client: dial 127.0.0.1:port and negotiate, retrying while nobody answers (qemu's hostfwd
 * accepts at once and gives EOF while the guest has no listener; retry only after that). */
static int dial(struct conn *c)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c->o->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    uint64_t end = now_ns() + (uint64_t)CONNECT_SECS * 1000000000u;
    for (;;) {
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        if (c->fd < 0 || tcp_nodelay(c->fd) < 0)
            return perror("siw_rping: socket"), -1;
        int r = -1;
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            r = negotiate(c);
        else if (errno == ECONNREFUSED)
            r = 1;
        else
            perror("siw_rping: connect");
        if (r <= 0)
            return r;
        close(c->fd);
        if (now_ns() > end)
            return fprintf(stderr, "siw_rping: nobody answered on port %u\n", c->o->port), -1;
        sleep(1);
    }
}

/* Server: accept one connection on 127.0.0.1:port and negotiate. */
static int listen_accept(struct conn *c)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c->o->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 1) < 0)
        return perror("siw_rping: listen"), -1;
    printf("listening on 127.0.0.1:%u\n", c->o->port);
    fflush(stdout);
    struct pollfd p = {.fd = ls, .events = POLLIN};
    if (poll(&p, 1, CONNECT_SECS * 1000) <= 0)
        return fprintf(stderr, "siw_rping: no connection within %d s\n", CONNECT_SECS), -1;
    c->fd = accept(ls, NULL, NULL);
    close(ls);
    if (c->fd < 0 || tcp_nodelay(c->fd) < 0)
        return perror("siw_rping: accept"), -1;
    return negotiate(c) == 0 ? 0 : -1;
}

/* ---- rping ---- */

static int send_info(struct conn *c, const struct region *r, uint32_t size)
{
    uint8_t info[RPING_INFO_LEN];
    iwarp_store_be64(info, r->to);
    iwarp_store_be32(info + 8, r->stag);
    iwarp_store_be32(info + 12, size);
    if (iwarp_mpa_neg_state(&c->neg) == IWARP_MPA_NEG_SEND_FIRST) {
        /* RFC 5044 §7.1.2 rule 4: this is our first FPDU, which we may send at once (the
         * default); --first-delay holds it back (see usage()) */
        long ms = c->o->first_delay_ms;
        struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
        if (ms > 0)
            nanosleep(&ts, NULL);
        iwarp_mpa_neg_first_sent(&c->neg);
    }
    return send_message(c, (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND}, info,
                        sizeof info);
}

/* rping_test_client, with -V: the server Reads our start buffer and Writes it back. */
static int run_client(struct conn *c, uint8_t *start, uint8_t *sink)
{
    const struct opts *o = c->o;
    struct region *rs = &c->reg[0], *rk = &c->reg[1];
    *rs = (struct region){START_STAG, START_TO, start, o->size, true, true, 0};
    *rk = (struct region){SINK_STAG, SINK_TO, sink, o->size, true, true, 0};
    c->nreg = 2;
    for (unsigned ping = 0; ping < o->count; ping++) {
        rping_pattern(start, o->size, ping);
        memset(sink, 0, o->size);
        rk->placed = 0;
        c->read_served = 0;
        if (send_info(c, rs, o->size) < 0 || !expect(wait_event(c), APP_SEND, "the Read ack"))
            return -1;
        if (c->read_served != o->size || c->recv_len != RPING_INFO_LEN)
            return fprintf(stderr, "siw_rping: ping %u: ack after %u of %u octets read\n", ping,
                           c->read_served, o->size),
                   -1;
        if (send_info(c, rk, o->size) < 0 || !expect(wait_event(c), APP_SEND, "the Write ack"))
            return -1;
        if (rk->placed != o->size || memcmp(start, sink, o->size) != 0)
            return fprintf(stderr, "siw_rping: ping %u: data mismatch (%u octets written)\n", ping,
                           rk->placed),
                   -1;
        printf("ping %u: %u octets read and written back, verified: %.40s\n", ping, o->size,
               (const char *)sink);
    }
    return 0;
}

static bool take_info(struct conn *c, uint64_t *to, uint32_t *stag, uint32_t *size)
{
    if (c->recv_len != RPING_INFO_LEN) /* rping server_recv: "Received bogus data" */
        return fprintf(stderr, "siw_rping: %u-octet Send, want %u\n", c->recv_len, RPING_INFO_LEN),
               false;
    *to = iwarp_load_be64(c->recv_buf);
    *stag = iwarp_load_be32(c->recv_buf + 8);
    *size = iwarp_load_be32(c->recv_buf + 12);
    return true;
}

/* rping_test_server: Read the client's start buffer, Write it back into its sink. */
static int run_server(struct conn *c, uint8_t *data, uint8_t *want)
{
    const struct opts *o = c->o;
    static const uint8_t zero[RPING_INFO_LEN]; /* rping's server never fills its send_buf */
    struct region *r = &c->reg[0];
    *r = (struct region){RDSNK_STAG, RDSNK_TO, data, o->size, false, false, 0};
    c->nreg = 1;
    struct iwarp_wire_msg send = {.opcode = IWARP_RDMAP_OP_SEND};
    for (unsigned ping = 0; ping < o->count; ping++) {
        uint64_t to;
        uint32_t stag, size;
        if (!expect(wait_event(c), APP_SEND, "the start buffer") ||
            !take_info(c, &to, &stag, &size))
            return -1;
        if (size != o->size)
            return fprintf(stderr, "siw_rping: client buffer %u octets, want %u\n", size, o->size),
                   -1;
        memset(data, 0, o->size);
        r->placed = 0;
        struct iwarp_wire_msg rd = {.opcode = IWARP_RDMAP_OP_READ_REQ};
        rd.body.read_req = (struct iwarp_rdmap_read_req){.sink_stag = RDSNK_STAG,
                                                         .sink_to = RDSNK_TO,
                                                         .size = size,
                                                         .src_stag = stag,
                                                         .src_to = to};
        c->read_pending = true;
        if (send_message(c, rd, NULL, 0) < 0 ||
            !expect(wait_event(c), APP_READ_DONE, "the Read Response"))
            return -1;
        rping_pattern(want, o->size, ping);
        if (r->placed != size || memcmp(data, want, size) != 0)
            return fprintf(stderr, "siw_rping: ping %u: read data is not rping's pattern\n", ping),
                   -1;
        if (send_message(c, send, zero, sizeof zero) < 0 ||
            !expect(wait_event(c), APP_SEND, "the sink buffer") || !take_info(c, &to, &stag, &size))
            return -1;
        /* rping: RDMA Write of strlen(rdma_buf) + 1 octets */
        uint32_t wlen = (uint32_t)strnlen((const char *)data, o->size) + 1;
        if (wlen > size || wlen > o->size)
            return fprintf(stderr, "siw_rping: sink of %u octets too small\n", size), -1;
        struct iwarp_wire_msg wr = {.opcode = IWARP_RDMAP_OP_WRITE, .stag = stag, .to = to};
        if (send_message(c, wr, data, wlen) < 0 || send_message(c, send, zero, sizeof zero) < 0)
            return -1;
        printf("ping %u: %u octets read, verified, written back: %.40s\n", ping, size,
               (const char *)data);
    }
    /* rping's client disconnects after its count: a clean close, no Terminate. */
    return expect(wait_event(c), APP_EOF, "the client's close") ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: siw_rping client|server --port N [--count C] [--size S] [--crc] "
            "[--verbose] [--first-delay MS]\n"
            "  client: dial 127.0.0.1:N (rping -s behind a qemu hostfwd), MPA initiator\n"
            "  server: listen on 127.0.0.1:N (rping -c -a 10.0.2.2 in the guest), responder\n"
            "  --count C   iterations (default 10)   --size S  ping size %u..%u (default 64)\n"
            "  --crc       ask for MPA CRC32C (RFC 5044 §4.4; siw's default is off)\n"
            "  --verbose   print every DDP segment sent and received\n"
            "  --first-delay MS  client: wait MS ms after the MPA Reply before the first FPDU.\n"
            "              Linux 6.1 siw as responder (rping -s) sometimes never sends the RDMA\n"
            "              Read rping posts when the first FPDU follows its Reply at once\n"
            "              (a race on siw's side; RFC 5044 §7.1.2 allows sending at once).\n",
            RPING_MIN_SIZE, RPING_MAX_SIZE);
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"port", required_argument, NULL, 'p'},        {"count", required_argument, NULL, 'C'},
        {"size", required_argument, NULL, 'S'},        {"crc", no_argument, NULL, 'c'},
        {"verbose", no_argument, NULL, 'v'},           {"help", no_argument, NULL, 'h'},
        {"first-delay", required_argument, NULL, 'd'}, {NULL, 0, NULL, 0}};
    *o = (struct opts){.count = 10, .size = 64};
    if (argc < 2 || (strcmp(argv[1], "client") && strcmp(argv[1], "server")))
        return -1;
    o->server = !strcmp(argv[1], "server");
    unsigned long port = 0;
    int ch;
    optind = 2;
    while ((ch = getopt_long(argc, argv, "p:C:S:cvh", lo, NULL)) != -1) {
        switch (ch) {
        case 'p':
            port = strtoul(optarg, NULL, 10);
            break;
        case 'C':
            o->count = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'S':
            o->size = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'c':
            o->crc = true;
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'd':
            o->first_delay_ms = strtol(optarg, NULL, 10);
            if (o->first_delay_ms < 0 || o->first_delay_ms > 10000)
                return -1;
            break;
        default:
            return -1;
        }
    }
    if (optind < argc || port == 0 || port > 65535 || o->count == 0 || o->size < RPING_MIN_SIZE ||
        o->size > RPING_MAX_SIZE)
        return -1;
    o->port = (uint16_t)port;
    return 0;
}

int main(int argc, char **argv)
{
    static struct conn conn;
    static uint8_t buf_a[RPING_MAX_SIZE], buf_b[RPING_MAX_SIZE];
    struct opts o;
    if (parse(argc, argv, &o) < 0) {
        usage(stderr);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct conn *c = &conn;
    c->o = &o;
    c->fd = -1;
    uint64_t t0 = now_ns();
    int rc = o.server ? listen_accept(c) : dial(c);
    if (rc == 0)
        rc = o.server ? run_server(c, buf_a, buf_b) : run_client(c, buf_a, buf_b);
    if (c->fd >= 0)
        close(c->fd);
    printf("%s: %s, %u x %u octets, CRC %s, %.2f s\n", o.server ? "server" : "client",
           rc == 0 ? "PASS" : "FAIL", o.count, o.size, o.crc ? "requested" : "off",
           (double)(now_ns() - t0) / 1e9);
    return rc == 0 ? 0 : 1;
}
