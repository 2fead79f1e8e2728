/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp dump FILE: decodes the iWARP traffic of a capture (pcap or pcapng, through libpcap) with
 * the library's own decoders and judges it against the RFCs.
 *
 * Each TCP connection is reassembled in both directions (trace/trace_tcp_reasm: retransmitted,
 * duplicated and out-of-order segments give the same octets as in-order ones) and handed to
 * trace/trace_mpa_stream, which decodes the MPA startup frames, deframes the FPDUs
 * (mpa/mpa_deframe), validates each DDP segment (wire/wire_segment, with the Terminate cause
 * our stack would send) and checks the stateful rules. Each SCTP association (over IP, or over
 * UDP: RFC 6951) goes to trace/trace_sctp_assoc, which reassembles DATA fragments, orders the
 * chunks by DDP-SSN, decodes session control (wire/wire_sctp) and judges the DDP segments with
 * the same rules (trace/trace_judge). One line per PDU, one line per finding (wire-check's
 * category names), a summary; exit 1 when anything violates the RFCs.
 *
 * The output names PDUs by their order in the connection, not by capture frame, so the same
 * traffic decodes to the same text however TCP or SCTP delivered it (-v adds frame numbers).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "iwarp/errors.h"
#include "trace/pcap_reader.h"
#include "trace/trace_mpa_stream.h"
#include "trace/trace_sctp_assoc.h"
#include "trace/trace_sctp_pkt.h"
#include "trace/trace_tcp_reasm.h"
#include "wire/wire_sctp.h"
#include "wire/wire_term.h"

#define MAX_CONNS     1024u
#define REASM_CAP     (512u * 1024u) /* out-of-order window per direction */
#define MAX_UDP_PORTS 16u

struct conn;
struct assoc;

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
    struct assoc *assocs[MAX_CONNS];
    unsigned nassocs;
    uint16_t udp_ports[MAX_UDP_PORTS]; /* --sctp-udp */
    unsigned nudp;
    uint64_t packets, tcp_packets, sctp_packets, skipped;
    uint64_t errors, warnings;
    uint64_t err_by_class[IWARP_MS_CLASS_COUNT];
    uint64_t pdus;
};

static struct dump g;

/* --port: 1..65535 into the int field. */
static int parse_port(const char *arg, void *field)
{
    char *end;
    unsigned long v = strtoul(arg, &end, 10);
    if (!*arg || *arg == '-' || *end || v == 0 || v > 65535)
        return -1;
    int port = (int)v;
    memcpy(field, &port, sizeof port);
    return 0;
}

/* --sctp-udp: one more UDP port to decode as SCTP (into g; at most MAX_UDP_PORTS). */
static int parse_udp(const char *arg, void *field)
{
    (void)field;
    char *end;
    unsigned long v = strtoul(arg, &end, 10);
    if (!*arg || *arg == '-' || *end || v == 0 || v > 65535 || g.nudp == MAX_UDP_PORTS)
        return -1;
    g.udp_ports[g.nudp++] = (uint16_t)v;
    return 0;
}

static const struct cli_opt rows[] = {
    {CLI_LINE("\noptions:")},
    {CLI_OPTION(CLI_FN, "port", 'p', "N"), CLI_AT(struct dump, port), .fn = parse_port,
     .err = "--port takes 1..65535, not '{arg}'",
     .help = "judge only TCP connections and SCTP associations on port N, and\n"
             "report a TCP connection that does not carry MPA as an error\n"
             "(default: every connection, MPA recognised by its Request)"},
    {CLI_OPTION(CLI_FN, "sctp-udp", 0, "N"), .fn = parse_udp,
     .err = "--sctp-udp takes 1..65535 (at most 16 ports), not '{arg}'",
     .help = "decode UDP port N as SCTP (repeatable)"},
    {CLI_OPTION(CLI_FLAG, "verbose", 'v', NULL), CLI_AT(struct dump, verbose),
     .help = "header details, capture frame numbers and TCP reassembly counts"},
    {CLI_HELP_ROW},
};

static void usage(FILE *out);
static const struct cli_spec spec =
    CLI_SPEC("iwarp dump", "Try `iwarp dump --help`.", usage, 19, rows);

static void usage(FILE *out)
{
    fprintf(out,
            "usage: iwarp dump [OPTIONS] FILE\n\n"
            "Decodes the iWARP traffic in FILE (pcap or pcapng) with libiwarp's own decoders:\n"
            "each TCP connection is reassembled in both directions (retransmitted and\n"
            "out-of-order segments included); its MPA Request/Reply, then every FPDU with its\n"
            "DDP/RDMAP headers, is printed one line per PDU, and everything that violates\n"
            "RFC 5040/5041/5044/6581/7306 is reported as ERROR [category] (the category\n"
            "names of the Wireshark-based wire-check judge), with the Terminate cause our\n"
            "stack would send. After a CRC that fails (not merely byte-swapped) the next\n"
            "FPDU's position is in doubt: a second bad CRC in a row is listed but not decoded,\n"
            "a third (or a ULPDU_Length that cannot be delimited) means the framing is lost.\n"
            "An FPDU cut short by the receiver's TCP reset is listed as cut, not as an error.\n"
            "A TCP connection is taken as MPA when a side's first octets are the MPA Request key.\n"
            "DDP over SCTP (RFC 5043) is decoded too: SCTP over IP, and SCTP over UDP (RFC 6951)\n"
            "on port 9899, on --sctp-udp ports, and on any port where the payload's CRC32c\n"
            "checks out as an SCTP packet's. Fragments are put together, chunks put in DDP-SSN\n"
            "order per stream; each Stream Session Control message (PPID 17) and DDP segment\n"
            "(PPID 16) is printed and judged (U flag, PPIDs, DDP-SSN gaps and repeats, the INIT\n"
            "and INIT-ACK Adaptation Layer Indication, then the same DDP/RDMAP rules as MPA).\n"
            "Both transports are recognised by themselves: dump has no --transport.\n");
    cli_help(&spec, out);
    fprintf(out,
            "\n"
            "Lines: 's<conn> <dir> #<pdu>' (TCP) or 'a<assoc> <dir> #<pdu>' (SCTP, numbered in\n"
            "DDP-SSN order) with dir i>r (initiator to responder) or r>i.\n"
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
        const char *name = a->aopcode == IWARP_ATOMIC_FETCH_ADD  ? "FetchAdd"
                           : a->aopcode == IWARP_ATOMIC_CMP_SWAP ? "CmpSwap"
                                                                 : "AOpCode?";
        printf(" %s(%u) id=%u target=0x%08x@0x%llx data=0x%llx mask=0x%llx", name, a->aopcode,
               a->req_id, a->stag, (unsigned long long)a->to, (unsigned long long)a->add_swap,
               (unsigned long long)a->add_swap_mask);
        if (a->aopcode == IWARP_ATOMIC_CMP_SWAP)
            printf(" compare=0x%llx/0x%llx", (unsigned long long)a->compare,
                   (unsigned long long)a->compare_mask);
        break;
    }
    case IWARP_RDMAP_OP_ATOMIC_RESP:
        printf(" id=%u orig=0x%llx", s->body.atomic_resp.req_id,
               (unsigned long long)s->body.atomic_resp.orig_value);
        break;
    default:
        break;
    }
}

/* The DDP segment after "|": what the MPA and the SCTP lines share. */
static void print_ddp(bool has_ddp, const struct iwarp_ddp_hdr *h,
                      const struct iwarp_wire_segment *seg, int seg_rc, uint32_t len)
{
    if (!has_ddp) {
        printf(" (no DDP header: %u octets)", len);
        return;
    }
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
    if (seg) {
        print_body(seg);
        if (seg->op->payload)
            printf(" payload=%zu", seg->payload_len);
    } else {
        printf(" (invalid: %s)", iwarp_err_name(seg_rc));
    }
}

/* -v: the DDP and RDMAP control fields as sent. */
static void print_ddp_fields(bool has_ddp, const struct iwarp_ddp_hdr *h)
{
    if (has_ddp)
        printf(" ddp[T=%d L=%d rsvd=%u DV=%u] rdmap[RV=%u rsv=%u op=%u]", h->tagged, h->last,
               h->rsvd, h->dv, iwarp_rdmap_ctrl_rv(h->rsvdulp), iwarp_rdmap_ctrl_rsv(h->rsvdulp),
               iwarp_rdmap_ctrl_opcode(h->rsvdulp));
}

static void print_fpdu(const struct conn *c, const struct iwarp_mpa_stream_pdu *p)
{
    static const char *const crc[] = {"off", "good", "BAD"};
    printf("s%u %s #%-4llu FPDU ulpdu=%-5u crc=%-4s |", c->id, dir_label(c, p->side),
           (unsigned long long)p->index, p->ulpdu_len, crc[p->crc]);
    if (p->in_doubt)
        printf(" (not decoded: framing in doubt after a bad CRC)");
    else
        print_ddp(p->has_ddp, &p->ddp, p->seg, p->seg_rc, p->ulpdu_len);
    if (g.verbose) {
        printf(" (frame %llu) pad=%u markers=%u crc_field=0x%08x", (unsigned long long)p->tag,
               p->pad_len, p->markers, p->crc_field);
        print_ddp_fields(p->has_ddp, &p->ddp);
    }
    putchar('\n');
}

/* The start of an FPDU the receiver's reset cut short: listed, not judged. */
static void print_cut(const struct conn *c, const struct iwarp_mpa_stream_pdu *p)
{
    printf("s%u %s #%-4llu FPDU cut after %u octets", c->id, dir_label(c, p->side),
           (unsigned long long)p->index, p->cut_octets);
    if (p->cut_len_known)
        printf(" (ulpdu=%u)", p->ulpdu_len);
    printf(": the receiver reset the connection; not judged\n");
}

static void on_pdu(void *ctx, const struct iwarp_mpa_stream_pdu *p)
{
    const struct conn *c = ctx;
    if (p->kind == IWARP_MS_PDU_CUT) {
        print_cut(c, p);
        return;
    }
    g.pdus++;
    if (p->kind == IWARP_MS_PDU_FPDU)
        print_fpdu(c, p);
    else
        print_mpa_frame(c, p);
}

/* One finding line; id names the connection ('s') or association ('a'). */
static void finding_line(char kind, unsigned id, const char *dir, uint64_t index, bool error,
                         unsigned cls, const char *msg)
{
    if (error) {
        g.errors++;
        g.err_by_class[cls]++;
    } else {
        g.warnings++;
    }
    printf("  %-5s %c%u %s ", error ? "ERROR" : "WARN", kind, id, dir);
    if (index)
        printf("#%llu", (unsigned long long)index);
    else
        printf("#-");
    printf(" [%s] %s\n", iwarp_mpa_stream_class_name(cls), msg);
}

static void finding(const struct conn *c, unsigned side, uint64_t index, bool error, unsigned cls,
                    const char *msg)
{
    finding_line('s', c->id, dir_label(c, side), index, error, cls, msg);
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
    if (pkt->tcp_flags & IWARP_PKT_TCP_RST)
        iwarp_mpa_stream_reset(&c->ms, side);
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

/* ---- DDP over SCTP (RFC 5043) ---- */

/* One association: its two ends (IP address, UDP port when encapsulated, SCTP port). */
struct assoc {
    unsigned id;
    uint8_t ipv;
    uint8_t addr[2][16];
    uint16_t uport[2]; /* UDP ports (RFC 6951), 0 for SCTP straight over IP */
    uint16_t sport[2]; /* SCTP ports; [0]: the side that sent the INIT, or spoke first */
    struct iwarp_sctp_assoc *sa;
};

static const char *assoc_dir(const struct assoc *a, unsigned side)
{
    int init = iwarp_sctp_assoc_initiator(a->sa);
    if (init < 0)
        return side == 0 ? "a>b" : "b>a";
    return init == (int)side ? "i>r" : "r>i";
}

/* Stream Session Control function codes (RFC 5043 §5.2.3, RFC 6581 §7, RFC 6580 §3.5). */
static const char *fc_name(int fc)
{
    switch (fc) {
    case IWARP_SCTP_FC_INITIATE:
        return "Initiate";
    case IWARP_SCTP_FC_ACCEPT:
        return "Accept";
    case IWARP_SCTP_FC_REJECT:
        return "Reject";
    case IWARP_SCTP_FC_TERMINATE:
        return "Terminate";
    case IWARP_SCTP_FC_ENH_INITIATE:
        return "EnhancedInitiate";
    case IWARP_SCTP_FC_ENH_ACCEPT:
        return "EnhancedAccept";
    case IWARP_SCTP_FC_ENH_REJECT:
        return "EnhancedReject";
    case IWARP_SCTP_FC_EXPERIMENTAL:
        return "Experimental";
    default:
        return NULL;
    }
}

static void sctp_msg_verbose(const struct iwarp_sa_pdu *p)
{
    printf(" (frame %llu) tsn=%u fragments=%u U=%d len=%zu", (unsigned long long)p->tag, p->tsn,
           p->fragments, p->unordered, p->len);
}

static void on_sa_pdu(void *ctx, const struct iwarp_sa_pdu *p)
{
    const struct assoc *a = ctx;
    const char *dir = assoc_dir(a, p->side);
    if (p->kind == IWARP_SA_PDU_INIT) {
        printf("a%u %s #-    %s", a->id, dir,
               p->chunk_type == IWARP_SCTP_CHUNK_INIT ? "INIT" : "INIT-ACK");
        if (p->init) {
            printf(" streams=%u/%u", p->init->out_streams, p->init->in_streams);
            if (p->init->has_adaptation)
                printf(" adaptation=0x%08x%s", p->init->adaptation,
                       p->init->adaptation == IWARP_SCTP_ADAPTATION_DDP ? " (DDP)" : "");
            else
                printf(" adaptation=none");
        }
        if (g.verbose && p->init)
            printf(" (frame %llu) tag=0x%08x tsn=%u", (unsigned long long)p->tag, p->init->init_tag,
                   p->init->initial_tsn);
        putchar('\n');
        return;
    }
    if (p->kind == IWARP_SA_PDU_OTHER) {
        printf("a%u %s #%-4llu DATA sid=%u ppid=%u len=%zu (not DDP)", a->id, dir,
               (unsigned long long)p->index, p->sid, p->ppid, p->len);
        if (g.verbose)
            sctp_msg_verbose(p);
        putchar('\n');
        return;
    }
    g.pdus++;
    if (p->kind == IWARP_SA_PDU_CTL) {
        printf("a%u %s #%-4llu CTRL sid=%u ssn=%d", a->id, dir, (unsigned long long)p->index,
               p->sid, p->ssn);
        const char *name = fc_name(p->fc);
        if (name)
            printf(" %s", name);
        else if (p->fc >= 0)
            printf(" fc=0x%03x", (unsigned)p->fc);
        if (p->len >= IWARP_SCTP_CTL_HDR_LEN) /* the RFC 6581 word counts, as in MPA */
            printf(" pd_len=%zu", p->len - IWARP_SCTP_CTL_HDR_LEN);
        if (p->ctl && iwarp_sctp_fc_has_ird_ord(p->ctl->fc)) {
            const struct iwarp_mpa_ird_ord *w = &p->ctl->ird_ord;
            printf(" IRD=%u ORD=%u p2p=%d rtr=%s%s%s", w->ird, w->ord, w->p2p,
                   w->rtr & IWARP_MPA_RTR_SEND ? "S" : "", w->rtr & IWARP_MPA_RTR_WRITE ? "W" : "",
                   w->rtr & IWARP_MPA_RTR_READ ? "R" : "");
        }
        if (p->ctl_rc < 0)
            printf(" (invalid: %s)", iwarp_err_name(p->ctl_rc));
        if (g.verbose)
            sctp_msg_verbose(p);
        putchar('\n');
        return;
    }
    const struct iwarp_ddp_judge_seg *sg = p->seg;
    printf("a%u %s #%-4llu DDP  sid=%u ssn=%d seglen=%-5u |", a->id, dir,
           (unsigned long long)p->index, p->sid, p->ssn, sg ? sg->len : 0u);
    if (sg)
        print_ddp(sg->has_ddp, &sg->ddp, sg->seg_rc == 0 ? &sg->seg : NULL, sg->seg_rc, sg->len);
    else
        printf(" (no DDP segment)");
    if (g.verbose) {
        sctp_msg_verbose(p);
        if (sg)
            print_ddp_fields(sg->has_ddp, &sg->ddp);
    }
    putchar('\n');
}

static void on_sa_finding(void *ctx, const struct iwarp_sa_finding *f)
{
    const struct assoc *a = ctx;
    finding_line('a', a->id, assoc_dir(a, f->side), f->index, f->error, f->cls, f->msg);
}

static const struct iwarp_sa_ops sa_ops = {.pdu = on_sa_pdu, .finding = on_sa_finding};

static bool assoc_end(const struct assoc *a, unsigned side, const uint8_t *addr, uint16_t uport,
                      uint16_t sport)
{
    return a->uport[side] == uport && a->sport[side] == sport && !memcmp(a->addr[side], addr, 16);
}

/* The association of a packet and the side that sent it; created on first sight (NULL when the
 * table is full or memory runs out). first_chunk: the packet's first chunk type, or -1. */
static struct assoc *assoc_lookup(const struct iwarp_pkt *pkt, uint16_t usrc, uint16_t udst,
                                  const struct iwarp_sctp_common *h, int first_chunk,
                                  unsigned *side)
{
    for (unsigned i = 0; i < g.nassocs; i++) {
        struct assoc *a = g.assocs[i];
        if (a->ipv != pkt->ip_version)
            continue;
        for (unsigned s = 0; s < 2; s++)
            if (assoc_end(a, s, pkt->src, usrc, h->sport) &&
                assoc_end(a, s ^ 1u, pkt->dst, udst, h->dport)) {
                *side = s;
                return a;
            }
    }
    if (g.nassocs == MAX_CONNS)
        return NULL;
    struct assoc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->sa = iwarp_sctp_assoc_new(&sa_ops, a);
    if (!a->sa) {
        free(a);
        return NULL;
    }
    /* Side 0 started the association: an INIT's sender, an INIT-ACK's receiver (RFC 9260 §5.1),
     * else whoever is seen first. */
    unsigned s = first_chunk == IWARP_SCTP_CHUNK_INIT_ACK ? 1u : 0u;
    a->id = g.nassocs;
    a->ipv = pkt->ip_version;
    memcpy(a->addr[s], pkt->src, 16);
    memcpy(a->addr[s ^ 1u], pkt->dst, 16);
    a->uport[s] = usrc;
    a->uport[s ^ 1u] = udst;
    a->sport[s] = h->sport;
    a->sport[s ^ 1u] = h->dport;
    g.assocs[g.nassocs++] = a;
    *side = s;
    return a;
}

/* Whether the UDP payload of pkt is to be decoded as an SCTP packet (RFC 6951). */
static bool sctp_over_udp(const struct iwarp_pkt *pkt)
{
    /* 9899: the IANA port Wireshark decodes as SCTP by default */
    if (pkt->sport == 9899 || pkt->dport == 9899)
        return true;
    for (unsigned i = 0; i < g.nudp; i++)
        if (pkt->sport == g.udp_ports[i] || pkt->dport == g.udp_ports[i])
            return true;
    /* any other port: an SCTP packet recognised by its CRC32c (RFC 9260 §6.8), as usrsctp's
     * ephemeral ports are */
    return pkt->payload_len >= IWARP_SCTP_COMMON_HDR_LEN + IWARP_SCTP_CHUNK_HDR_LEN &&
           iwarp_sctp_crc_ok(pkt->payload, pkt->payload_len);
}

/* One SCTP packet, sent over IP (protocol 132) or in a UDP datagram (uport_* non-zero). */
static void sctp_packet(const struct iwarp_pcap_packet *pk, const uint8_t *sctp, size_t len,
                        uint16_t usrc, uint16_t udst)
{
    struct iwarp_sctp_common h;
    if (iwarp_sctp_common_decode(sctp, len, &h) < 0) {
        g.skipped++;
        return;
    }
    if (g.port >= 0 && h.sport != g.port && h.dport != g.port)
        return;
    g.sctp_packets++;
    int first = len > IWARP_SCTP_COMMON_HDR_LEN ? sctp[IWARP_SCTP_COMMON_HDR_LEN] : -1;
    unsigned side;
    struct assoc *a = assoc_lookup(&pk->pkt, usrc, udst, &h, first, &side);
    if (!a) {
        g.skipped++;
        return;
    }
    iwarp_sctp_assoc_packet(a->sa, side, sctp + IWARP_SCTP_COMMON_HDR_LEN,
                            len - IWARP_SCTP_COMMON_HDR_LEN, pk->index);
}

static void sctp_finish(void)
{
    for (unsigned i = 0; i < g.nassocs; i++) {
        struct assoc *a = g.assocs[i];
        iwarp_sctp_assoc_finish(a->sa);
        if (g.verbose) {
            struct iwarp_sa_stats st;
            iwarp_sctp_assoc_stats(a->sa, &st);
            printf("a%u SCTP: %llu packets, %llu DATA chunks (%llu seen again), %llu messages put "
                   "together from fragments, %llu waited for an earlier DDP-SSN\n",
                   a->id, (unsigned long long)st.packets, (unsigned long long)st.data_chunks,
                   (unsigned long long)st.dup_chunks, (unsigned long long)st.reassembled,
                   (unsigned long long)st.held);
        }
    }
}

/* Returns 0 to run, 1 after --help, 2 after a usage error was printed. */
static int parse(int argc, char **argv, const char **file)
{
    struct cli_result r;
    int rc = cli_parse(&spec, argc, argv, &g, &r);
    if (rc != CLI_PARSE_OK)
        return rc;
    if (r.first_arg != argc - 1)
        return cli_error(&spec, "%s",
                         r.first_arg >= argc ? "no capture file given" : "one capture file only");
    *file = argv[r.first_arg];
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
    if (g.nassocs) {
        unsigned ddp = 0;
        for (unsigned i = 0; i < g.nassocs; i++)
            ddp += iwarp_sctp_assoc_is_ddp(g.assocs[i]->sa);
        printf(" sctp_associations=%u ddp=%u", g.nassocs, ddp);
    }
    putchar('\n');
}

int iwarp_cli_dump(int argc, char **argv)
{
    const char *file = NULL;
    memset(&g, 0, sizeof g);
    g.port = -1;
    int prc = parse(argc, argv, &file);
    if (prc != CLI_PARSE_OK)
        return prc == CLI_PARSE_HELP ? 0 : 2;
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
        const struct iwarp_pkt *d = &pk.pkt;
        if (d->ip_proto == IWARP_PKT_IPPROTO_TCP) {
            tcp_packet(&pk);
        } else if (d->payload_len < d->payload_wire_len) {
            g.skipped++; /* cut by the snapshot length: not a whole SCTP packet */
        } else if (d->ip_proto == IWARP_PKT_IPPROTO_SCTP) {
            /* the decoder took the common header as the L4 header: hand over the whole packet */
            sctp_packet(&pk, d->l4, d->l4_hdr_len + d->payload_len, 0, 0);
        } else if (d->ip_proto == IWARP_PKT_IPPROTO_UDP && sctp_over_udp(d)) {
            sctp_packet(&pk, d->payload, d->payload_len, d->sport, d->dport); /* RFC 6951 */
        }
    }
    int status = 0;
    if (rc != IWARP_ERR_PCAP_END) {
        fprintf(stderr, "iwarp dump: %s: %s\n", file, iwarp_pcap_reader_errtext(r));
        status = 2;
    }
    iwarp_pcap_reader_close(r);
    finish();
    sctp_finish();
    summary();
    if (g.verbose)
        printf("SUMMARY: packets=%llu tcp=%llu sctp=%llu skipped=%llu\n",
               (unsigned long long)g.packets, (unsigned long long)g.tcp_packets,
               (unsigned long long)g.sctp_packets, (unsigned long long)g.skipped);
    bool none = g.pdus == 0;
    printf("RESULT: %s%s\n", g.errors || none ? "FAIL" : "PASS",
           none ? " (no iWARP PDUs found)" : "");
    for (unsigned i = 0; i < g.nconns; i++) {
        free(g.conns[i]->ring[0]);
        free(g.conns[i]->ring[1]);
        free(g.conns[i]);
    }
    for (unsigned i = 0; i < g.nassocs; i++) {
        iwarp_sctp_assoc_free(g.assocs[i]->sa);
        free(g.assocs[i]);
    }
    if (status)
        return status;
    return g.errors || none ? 1 : 0;
}
