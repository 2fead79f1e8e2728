/*
 * iwarp dump FILE: decodes the iWARP traffic of a capture (pcap or pcapng, through libpcap) with
 * the library's own decoders and judges it against the RFCs.
 *
 * Each TCP connection is reassembled in both directions (trace/trace_tcp_reasm: retransmitted,
 * duplicated and out-of-order segments give the same octets as in-order ones) and handed to
 * trace/trace_mpa_stream, which decodes the MPA startup frames, deframes the FPDUs
 * (mpa/mpa_deframe), validates each DDP segment (wire/wire_segment, with the Terminate cause
 * our stack would send) and checks the stateful rules. One line per PDU, one line per finding
 * (wire-check's category names), a summary; exit 1 when anything violates the RFCs.
 *
 * The output names PDUs by their order in the connection, not by capture frame, so the same
 * traffic decodes to the same text however TCP delivered it (-v adds frame numbers).
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "iwarp/errors.h"
#include "trace/pcap_reader.h"
#include "trace/trace_mpa_stream.h"
#include "trace/trace_tcp_reasm.h"
#include "wire/wire_term.h"

#define MAX_CONNS 1024u
#define REASM_CAP (512u * 1024u) /* out-of-order window per direction */

struct conn;

/* One direction's delivery context. */
struct dir_ctx {
    struct conn *c;
    unsigned side;
};

struct conn {
    unsigned id;
    uint8_t ipv;
    uint8_t addr[2][16];
    uint16_t port[2]; /* [0]: the side that opened (SYN) or spoke first */
    bool syn_seen[2];
    uint64_t cur_frame; /* frame being fed */
    struct dir_ctx dc[2];
    struct iwarp_tcp_reasm rs[2];
    uint8_t *ring[2];
    struct iwarp_mpa_stream ms;
};

struct dump {
    bool verbose;
    int port; /* -1: any, detect MPA by the Request key */
    struct conn *conns[MAX_CONNS];
    unsigned nconns;
    uint64_t packets, tcp_packets, sctp_packets, skipped;
    uint64_t errors, warnings;
    uint64_t err_by_class[IWARP_MS_CLASS_COUNT];
    uint64_t pdus;
};

static struct dump g;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: iwarp dump [OPTIONS] FILE\n\n"
        "Decodes the iWARP traffic in FILE (pcap or pcapng) with libiwarp's own decoders:\n"
        "each TCP connection is reassembled in both directions (retransmitted and\n"
        "out-of-order segments included); its MPA Request/Reply, then every FPDU with its\n"
        "DDP/RDMAP headers, is printed one line per PDU, and everything that violates\n"
        "RFC 5040/5041/5044/6581/7306 is reported as ERROR [category] (the categories of\n"
        "../shared/tools/wire-check), with the Terminate cause our stack would send.\n"
        "A TCP connection is taken as MPA when a side's first octets are the MPA Request key.\n\n"
        "options:\n"
        "  --port N     judge only TCP connections on port N, and report one that does\n"
        "               not carry MPA as an error (default: every connection, MPA\n"
        "               recognised by its Request)\n"
        "  -v, --verbose  header details, capture frame numbers and TCP reassembly counts\n"
        "  -h, --help   this text\n\n"
        "Lines: 's<conn> <dir> #<pdu>' with dir i>r (initiator to responder) or r>i.\n"
        "Exit status: 0 when every PDU is valid, 1 when anything is wrong (or no iWARP\n"
        "PDU was found), 2 for bad options or an unreadable file.\n");
}

static const char *dir_label(const struct conn *c, unsigned side)
{
    if (c->ms.initiator < 0)
        return side == 0 ? "a>b" : "b>a";
    return c->ms.initiator == (int)side ? "i>r" : "r>i";
}

/* ---- printing ---- */

static void print_mpa_frame(const struct conn *c, const struct iwarp_mpa_stream_pdu *p)
{
    printf("s%u %s #%-4llu MPA %-7s rev=%u M=%d C=%d R=%d S=%d pd_len=%u", c->id,
           dir_label(c, p->side), (unsigned long long)p->index,
           p->kind == IWARP_MS_PDU_REQUEST ? "Request" : "Reply", p->rev, !!(p->flags & 0x80),
           !!(p->flags & 0x40), !!(p->flags & 0x20), !!(p->flags & 0x10), p->pd_length);
    const struct iwarp_mpa_frame *f = p->frame;
    if (f && f->s)
        printf(" IRD=%u ORD=%u p2p=%d rtr=%s%s%s", f->v2.ird, f->v2.ord, f->v2.p2p,
               f->v2.rtr & IWARP_MPA_RTR_SEND ? "S" : "",
               f->v2.rtr & IWARP_MPA_RTR_WRITE ? "W" : "",
               f->v2.rtr & IWARP_MPA_RTR_READ ? "R" : "");
    if (p->kind == IWARP_MS_PDU_REPLY && (p->flags & 0x20))
        printf(" (connection REJECTED)");
    if (g.verbose) {
        printf(" (frame %llu)", (unsigned long long)p->tag);
        if (f) {
            printf(" private data \"");
            for (unsigned i = 0; i < f->pd_len; i++)
                putchar(f->pd[i] >= 0x20 && f->pd[i] < 0x7f ? f->pd[i] : '.');
            putchar('"');
        }
    }
    putchar('\n');
}

static void print_body(const struct iwarp_wire_segment *s)
{
    switch (s->opcode) {
    case IWARP_RDMAP_OP_SEND_INV:
    case IWARP_RDMAP_OP_SEND_SE_INV:
        printf(" inval=0x%08x", s->inv_stag);
        break;
    case IWARP_RDMAP_OP_READ_REQ: {
        const struct iwarp_rdmap_read_req *r = &s->body.read_req;
        printf(" sink=0x%08x@0x%llx size=%u src=0x%08x@0x%llx", r->sink_stag,
               (unsigned long long)r->sink_to, r->size, r->src_stag, (unsigned long long)r->src_to);
        break;
    }
    case IWARP_RDMAP_OP_TERMINATE: {
        const struct iwarp_term *t = &s->body.term;
        const struct iwarp_term_ctrl *ct = iwarp_term_layout(t);
        char cs[128];
        iwarp_term_cause_str(ct->cause, cs, sizeof cs);
        printf(" %u/%u/0x%02x [%s] M=%d D=%d R=%d%s", ct->cause.layer, ct->cause.etype,
               ct->cause.ecode, cs, !!(ct->hdrct & IWARP_TERM_FLAG_M),
               !!(ct->hdrct & IWARP_TERM_FLAG_D), !!(ct->hdrct & IWARP_TERM_FLAG_R),
               t->siw_swapped ? " (siw layout)" : "");
        if (t->ddp_hdr) {
            printf(" seglen=%u", t->ddp_seg_len);
            if (t->ddp.tagged)
                printf(" offender=[T STag=0x%08x TO=0x%llx]", t->ddp.stag,
                       (unsigned long long)t->ddp.to);
            else
                printf(" offender=[QN=%u MSN=%u MO=%u]", t->ddp.qn, t->ddp.msn, t->ddp.mo);
        }
        break;
    }
    case IWARP_RDMAP_OP_IMM_DATA:
    case IWARP_RDMAP_OP_IMM_DATA_SE:
        printf(" imm=");
        for (int i = 0; i < 8; i++)
            printf("%02x", s->body.imm.data[i]);
        break;
    case IWARP_RDMAP_OP_ATOMIC_REQ: {
        const struct iwarp_rdmap_atomic_req *a = &s->body.atomic_req;
        printf(" %s id=%u target=0x%08x@0x%llx", a->aopcode ? "CmpSwap" : "FetchAdd", a->req_id,
               a->stag, (unsigned long long)a->to);
        break;
    }
    case IWARP_RDMAP_OP_ATOMIC_RESP:
        printf(" id=%u", s->body.atomic_resp.req_id);
        break;
    default:
        break;
    }
}

static void print_fpdu(const struct conn *c, const struct iwarp_mpa_stream_pdu *p)
{
    static const char *const crc[] = {"off", "good", "BAD"};
    printf("s%u %s #%-4llu FPDU ulpdu=%-5u crc=%-4s |", c->id, dir_label(c, p->side),
           (unsigned long long)p->index, p->ulpdu_len, crc[p->crc]);
    if (!p->has_ddp) {
        printf(" (no DDP header: %u octets)", p->ulpdu_len);
    } else {
        const struct iwarp_ddp_hdr *h = &p->ddp;
        unsigned op = iwarp_rdmap_ctrl_opcode(h->rsvdulp);
        const struct iwarp_rdmap_opinfo *oi = iwarp_rdmap_opinfo(op);
        printf(" %s", oi ? oi->name : "reserved opcode");
        if (!oi)
            printf(" 0x%x", op);
        if (h->tagged)
            printf(" STag=0x%08x TO=0x%llx", h->stag, (unsigned long long)h->to);
        else
            printf(" QN=%u MSN=%u MO=%u", h->qn, h->msn, h->mo);
        printf(" L=%d", h->last);
        if (p->seg) {
            print_body(p->seg);
            if (p->seg->op->payload)
                printf(" payload=%zu", p->seg->payload_len);
        } else {
            printf(" (invalid: %s)", iwarp_err_name(p->seg_rc));
        }
    }
    if (g.verbose) {
        printf(" (frame %llu) pad=%u markers=%u crc_field=0x%08x", (unsigned long long)p->tag,
               p->pad_len, p->markers, p->crc_field);
        if (p->has_ddp)
            printf(" ddp[T=%d L=%d rsvd=%u DV=%u] rdmap[RV=%u rsv=%u op=%u]", p->ddp.tagged,
                   p->ddp.last, p->ddp.rsvd, p->ddp.dv, iwarp_rdmap_ctrl_rv(p->ddp.rsvdulp),
                   iwarp_rdmap_ctrl_rsv(p->ddp.rsvdulp), iwarp_rdmap_ctrl_opcode(p->ddp.rsvdulp));
    }
    putchar('\n');
}

static void on_pdu(void *ctx, const struct iwarp_mpa_stream_pdu *p)
{
    const struct conn *c = ctx;
    g.pdus++;
    if (p->kind == IWARP_MS_PDU_FPDU)
        print_fpdu(c, p);
    else
        print_mpa_frame(c, p);
}

static void finding(const struct conn *c, unsigned side, uint64_t index, bool error, unsigned cls,
                    const char *msg)
{
    if (error) {
        g.errors++;
        g.err_by_class[cls]++;
    } else {
        g.warnings++;
    }
    printf("  %-5s s%u %s ", error ? "ERROR" : "WARN", c->id, dir_label(c, side));
    if (index)
        printf("#%llu", (unsigned long long)index);
    else
        printf("#-");
    printf(" [%s] %s\n", iwarp_mpa_stream_class_name(cls), msg);
}

static void on_finding(void *ctx, const struct iwarp_mpa_stream_finding *f)
{
    finding(ctx, f->side, f->index, f->error, f->cls, f->msg);
}

static const struct iwarp_mpa_stream_ops ops = {.pdu = on_pdu, .finding = on_finding};

/* ---- connections ---- */

static void deliver(void *ctx, const uint8_t *p, size_t n)
{
    struct dir_ctx *dc = ctx;
    iwarp_mpa_stream_feed(&dc->c->ms, dc->side, p, n, dc->c->cur_frame);
}

static bool same_end(const struct conn *c, unsigned side, const uint8_t *addr, uint16_t port)
{
    return c->port[side] == port && !memcmp(c->addr[side], addr, 16);
}

/* The connection of pkt and the side that sent it; created on first sight (NULL when the table
 * is full or memory runs out). */
static struct conn *lookup(const struct iwarp_pkt *pkt, unsigned *side)
{
    for (unsigned i = 0; i < g.nconns; i++) {
        struct conn *c = g.conns[i];
        if (c->ipv != pkt->ip_version)
            continue;
        if (same_end(c, 0, pkt->src, pkt->sport) && same_end(c, 1, pkt->dst, pkt->dport)) {
            *side = 0;
            return c;
        }
        if (same_end(c, 1, pkt->src, pkt->sport) && same_end(c, 0, pkt->dst, pkt->dport)) {
            *side = 1;
            return c;
        }
    }
    if (g.nconns == MAX_CONNS)
        return NULL;
    struct conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ring[0] = malloc(REASM_CAP);
    c->ring[1] = malloc(REASM_CAP);
    if (!c->ring[0] || !c->ring[1]) {
        free(c->ring[0]);
        free(c->ring[1]);
        free(c);
        return NULL;
    }
    /* Side 0 opened the connection: the source of a SYN without ACK, else of a SYN-ACK's
     * destination, else whoever is seen first (RFC 9293 §3.5). */
    bool synack = (pkt->tcp_flags & IWARP_PKT_TCP_SYN) && (pkt->tcp_flags & IWARP_PKT_TCP_ACK);
    unsigned s = synack ? 1u : 0u;
    c->id = g.nconns;
    c->ipv = pkt->ip_version;
    memcpy(c->addr[s], pkt->src, 16);
    memcpy(c->addr[s ^ 1u], pkt->dst, 16);
    c->port[s] = pkt->sport;
    c->port[s ^ 1u] = pkt->dport;
    for (unsigned i = 0; i < 2; i++) {
        c->dc[i] = (struct dir_ctx){.c = c, .side = i};
        iwarp_tcp_reasm_init(&c->rs[i], c->ring[i], REASM_CAP);
    }
    struct iwarp_mpa_stream_cfg cfg = {.require_mpa = g.port >= 0};
    iwarp_mpa_stream_init(&c->ms, &cfg, &ops, c);
    g.conns[g.nconns++] = c;
    *side = s;
    return c;
}

static void tcp_packet(const struct iwarp_pcap_packet *pk)
{
    const struct iwarp_pkt *pkt = &pk->pkt;
    if (g.port >= 0 && pkt->sport != g.port && pkt->dport != g.port)
        return;
    g.tcp_packets++;
    unsigned side;
    struct conn *c = lookup(pkt, &side);
    if (!c) {
        g.skipped++;
        return;
    }
    c->cur_frame = pk->index;
    uint32_t seq = pkt->seq;
    if (pkt->tcp_flags & IWARP_PKT_TCP_SYN) {
        iwarp_tcp_reasm_syn(&c->rs[side], seq);
        seq += 1u; /* RFC 9293 §3.4: data in a SYN follows the SYN's sequence number */
    }
    if (pkt->payload_len == 0)
        return;
    if (pkt->payload_len < pkt->payload_wire_len) {
        g.skipped++; /* cut by the snapshot length: leaves a hole */
        return;
    }
    (void)iwarp_tcp_reasm_segment(&c->rs[side], seq, pkt->payload, pkt->payload_len, deliver,
                                  &c->dc[side]);
}

static void finish(void)
{
    for (unsigned i = 0; i < g.nconns; i++) {
        struct conn *c = g.conns[i];
        iwarp_mpa_stream_finish(&c->ms);
        for (unsigned s = 0; s < 2 && iwarp_mpa_stream_is_mpa(&c->ms); s++) {
            uint64_t lost = iwarp_tcp_reasm_held(&c->rs[s]) + c->rs[s].dropped;
            if (lost) {
                char msg[160];
                snprintf(msg, sizeof msg,
                         "%llu octets follow a TCP segment missing from the capture and were "
                         "never decoded",
                         (unsigned long long)lost);
                finding(c, s, 0, true, IWARP_MS_UNDISSECTED, msg);
            }
            if (g.verbose)
                printf("s%u %s TCP: %llu octets delivered, %llu seen again (retransmitted), %llu "
                       "segments out of order\n",
                       c->id, dir_label(c, s), (unsigned long long)c->rs[s].delivered,
                       (unsigned long long)c->rs[s].dup_octets,
                       (unsigned long long)c->rs[s].ooo_segments);
        }
    }
}

static int parse(int argc, char **argv, const char **file)
{
    static const struct option lo[] = {{"port", required_argument, NULL, 'p'},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
        switch (c) {
        case 'p': {
            char *end;
            unsigned long v = strtoul(optarg, &end, 10);
            if (!*optarg || *end || v == 0 || v > 65535)
                return fprintf(stderr, "iwarp dump: --port takes 1..65535, not '%s'\n", optarg), -1;
            g.port = (int)v;
            break;
        }
        case 'v':
            g.verbose = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, optind >= argc ? "iwarp dump: no capture file given\n"
                                       : "iwarp dump: one capture file only\n");
        usage(stderr);
        return -1;
    }
    *file = argv[optind];
    return 0;
}

static void summary(void)
{
    unsigned mpa = 0;
    for (unsigned i = 0; i < g.nconns; i++)
        mpa += iwarp_mpa_stream_is_mpa(&g.conns[i]->ms);
    printf("SUMMARY: tcp_connections=%u mpa=%u pdus=%llu errors=%llu", g.nconns, mpa,
           (unsigned long long)g.pdus, (unsigned long long)g.errors);
    const char *sep = " (";
    for (unsigned i = 0; i < IWARP_MS_CLASS_COUNT; i++)
        if (g.err_by_class[i]) {
            printf("%s%s=%llu", sep, iwarp_mpa_stream_class_name(i),
                   (unsigned long long)g.err_by_class[i]);
            sep = ", ";
        }
    printf("%s warnings=%llu", *sep == ',' ? ")" : "", (unsigned long long)g.warnings);
    if (g.sctp_packets)
        printf(" sctp_packets_not_decoded=%llu", (unsigned long long)g.sctp_packets);
    putchar('\n');
}

int iwarp_cli_dump(int argc, char **argv)
{
    const char *file = NULL;
    memset(&g, 0, sizeof g);
    g.port = -1;
    if (parse(argc, argv, &file) < 0)
        return 2;
    struct iwarp_pcap_reader *r;
    char err[256] = "";
    int rc = iwarp_pcap_reader_open(&r, file, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "iwarp dump: %s: %s\n", file, *err ? err : iwarp_strerror(rc));
        return 2;
    }
    struct iwarp_pcap_packet pk;
    while ((rc = iwarp_pcap_reader_next(r, &pk)) == 0) {
        g.packets++;
        if (pk.decode_rc < 0 || pk.pkt.layer < IWARP_PKT_LAYER_L4 ||
            (pk.pkt.flags & IWARP_PKT_F_FRAGMENT)) {
            g.skipped++;
            continue;
        }
        if (pk.pkt.ip_proto == IWARP_PKT_IPPROTO_TCP)
            tcp_packet(&pk);
        else if (pk.pkt.ip_proto == IWARP_PKT_IPPROTO_SCTP ||
                 (pk.pkt.ip_proto == IWARP_PKT_IPPROTO_UDP &&
                  (pk.pkt.sport == 9899 || pk.pkt.dport == 9899)))
            g.sctp_packets++; /* DDP over SCTP (RFC 5043): not decoded yet */
    }
    int status = 0;
    if (rc != IWARP_ERR_PCAP_END) {
        fprintf(stderr, "iwarp dump: %s: %s\n", file, iwarp_pcap_reader_errtext(r));
        status = 2;
    }
    iwarp_pcap_reader_close(r);
    finish();
    summary();
    if (g.verbose)
        printf("SUMMARY: packets=%llu tcp=%llu skipped=%llu\n", (unsigned long long)g.packets,
               (unsigned long long)g.tcp_packets, (unsigned long long)g.skipped);
    bool none = g.pdus == 0;
    printf("RESULT: %s%s\n", g.errors || none ? "FAIL" : "PASS",
           none ? " (no iWARP PDUs found)" : "");
    for (unsigned i = 0; i < g.nconns; i++) {
        free(g.conns[i]->ring[0]);
        free(g.conns[i]->ring[1]);
        free(g.conns[i]);
    }
    if (status)
        return status;
    return g.errors || none ? 1 : 0;
}
