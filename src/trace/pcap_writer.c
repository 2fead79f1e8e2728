/* SPDX-License-Identifier: BSD-2-Clause */
/* Capture file writer and synthetic TCP connections (see pcap_writer.h). */
/* libpcap's headers use the BSD types (u_char, u_int) that strict C11 hides. */
#define _DEFAULT_SOURCE 1

#include "trace/pcap_writer.h"

#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/errors.h"
#include "trace/trace_pkt.h"

#define NS_PER_S         1000000000u
#define DEFAULT_START_NS (UINT64_C(1700000000) * NS_PER_S)
#define DEFAULT_STEP_NS  1000u
#define TCP_WINDOW       65535u
#define TCP_TTL          64u
#define FRAME_CAP                                                             \
    (IWARP_PKT_ETH_HDR_LEN + IWARP_PKT_IPV6_HDR_LEN + IWARP_PKT_TCP_HDR_LEN + \
     IWARP_PKT_IP_MAX_TOTAL_LEN)

struct iwarp_pcap_writer {
    pcap_t *pcap;
    pcap_dumper_t *dumper;
    uint64_t next_ns;
    uint64_t step_ns;
    bool io_failed;
    struct iwarp_pcap_budget *budget; /* NULL: unbounded */
    char errtext[IWARP_PCAP_ERRTEXT_LEN];
    uint8_t frame[FRAME_CAP]; /* where TCP segments and UDP datagrams are assembled */
};

static void copy_text(char *dst, size_t cap, const char *src)
{
    if (dst == NULL || cap == 0)
        return;
    snprintf(dst, cap, "%s", src);
}

int iwarp_pcap_writer_open(struct iwarp_pcap_writer **out, const char *path, char *errbuf,
                           size_t errlen)
{
    if (out == NULL || path == NULL)
        return IWARP_ERR_INVAL;
    *out = NULL;
    struct iwarp_pcap_writer *w = calloc(1, sizeof *w);
    if (w == NULL)
        return IWARP_ERR_NOMEM;
    w->pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)IWARP_PCAP_SNAPLEN,
                                                   PCAP_TSTAMP_PRECISION_NANO);
    if (w->pcap == NULL) {
        free(w);
        return IWARP_ERR_NOMEM;
    }
    w->dumper = pcap_dump_open(w->pcap, path);
    if (w->dumper == NULL) {
        copy_text(errbuf, errlen, pcap_geterr(w->pcap));
        pcap_close(w->pcap);
        free(w);
        return IWARP_ERR_PCAP;
    }
    w->next_ns = DEFAULT_START_NS;
    w->step_ns = DEFAULT_STEP_NS;
    *out = w;
    return 0;
}

/* Records an I/O failure of the dump file (errno from the stdio call that failed). */
static int io_error(struct iwarp_pcap_writer *w, const char *what)
{
    w->io_failed = true;
    snprintf(w->errtext, sizeof w->errtext, "%s: %s", what, strerror(errno));
    return IWARP_ERR_IO;
}

int iwarp_pcap_writer_flush(struct iwarp_pcap_writer *w)
{
    if (w == NULL)
        return IWARP_ERR_INVAL;
    if (pcap_dump_flush(w->dumper) != 0)
        return io_error(w, "flush");
    return w->io_failed ? IWARP_ERR_IO : 0;
}

int iwarp_pcap_writer_close(struct iwarp_pcap_writer *w)
{
    if (w == NULL)
        return 0;
    int rc = iwarp_pcap_writer_flush(w);
    pcap_dump_close(w->dumper);
    pcap_close(w->pcap);
    free(w);
    return rc;
}

const char *iwarp_pcap_writer_errtext(const struct iwarp_pcap_writer *w)
{
    return w != NULL ? w->errtext : "";
}

void iwarp_pcap_writer_set_time(struct iwarp_pcap_writer *w, uint64_t next_ns, uint64_t step_ns)
{
    if (w == NULL)
        return;
    w->next_ns = next_ns;
    w->step_ns = step_ns;
}

uint64_t iwarp_pcap_writer_time(const struct iwarp_pcap_writer *w)
{
    return w != NULL ? w->next_ns : 0;
}

void iwarp_pcap_writer_set_budget(struct iwarp_pcap_writer *w, struct iwarp_pcap_budget *b)
{
    if (w != NULL)
        w->budget = b;
}

int iwarp_pcap_writer_frame(struct iwarp_pcap_writer *w, const uint8_t *frame, size_t len)
{
    if (w == NULL || (frame == NULL && len != 0) || len > IWARP_PCAP_SNAPLEN)
        return IWARP_ERR_INVAL;
    if (w->budget != NULL) {
        uint64_t rec = IWARP_PCAP_REC_HDR_LEN + (uint64_t)len;
        if (w->budget->used > w->budget->max || rec > w->budget->max - w->budget->used)
            return IWARP_ERR_TRACE_BOUND;
        w->budget->used += rec;
    }
    struct pcap_pkthdr h;
    memset(&h, 0, sizeof h);
    h.ts.tv_sec = (time_t)(w->next_ns / NS_PER_S);
    h.ts.tv_usec = (suseconds_t)(w->next_ns % NS_PER_S); /* nanoseconds: a NANO dumper */
    h.caplen = (bpf_u_int32)len;
    h.len = (bpf_u_int32)len;
    pcap_dump((u_char *)w->dumper, &h, frame);
    w->next_ns += w->step_ns;
    if (ferror(pcap_dump_file(w->dumper)))
        return io_error(w, "write");
    return 0;
}

int iwarp_pcap_writer_udp(struct iwarp_pcap_writer *w, const struct iwarp_pkt_udp_dgram *d,
                          const uint8_t *payload, size_t len)
{
    if (w == NULL || d == NULL || (payload == NULL && len != 0))
        return IWARP_ERR_INVAL;
    size_t hdr = iwarp_pkt_udp_hdr_len(d->ip_version);
    if (hdr == 0)
        return IWARP_ERR_INVAL;
    size_t max = d->ip_version == 4 ? IWARP_PKT_UDP_MAX_PAYLOAD_V4 : IWARP_PKT_UDP_MAX_PAYLOAD_V6;
    if (len > max)
        return IWARP_ERR_PKT_TOO_BIG;
    if (len > 0)
        memcpy(w->frame + hdr, payload, len);
    iwarp_ssize n = iwarp_pkt_build_udp(w->frame, sizeof w->frame, d, len);
    if (n < 0)
        return (int)n;
    return iwarp_pcap_writer_frame(w, w->frame, (size_t)n);
}

/* ---- synthetic TCP ---- */

int iwarp_pcap_tcp_init(struct iwarp_pcap_tcp *c, struct iwarp_pcap_writer *w, uint8_t ip_version,
                        const struct iwarp_pcap_tcp_end *client,
                        const struct iwarp_pcap_tcp_end *server)
{
    if (c == NULL || w == NULL || client == NULL || server == NULL ||
        (ip_version != 4 && ip_version != 6))
        return IWARP_ERR_INVAL;
    memset(c, 0, sizeof *c);
    c->w = w;
    c->ip_version = ip_version;
    c->end[IWARP_PCAP_CLIENT] = *client;
    c->end[IWARP_PCAP_SERVER] = *server;
    for (int i = 0; i < 2; i++)
        c->snd_nxt[i] = c->end[i].isn + 1u; /* RFC 9293 §3.4: the SYN occupies the ISN */
    c->ip_id = 1;
    c->window = TCP_WINDOW;
    c->ttl = TCP_TTL;
    return 0;
}

/* Writes one segment from side `from` whose payload_len octets already sit in the writer's frame
 * buffer after the headers. ack is the acknowledgement number (ignored without the ACK flag). */
static int put_segment(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from, uint16_t flags,
                       uint32_t seq, uint32_t ack, size_t payload_len)
{
    const struct iwarp_pcap_tcp_end *me = &c->end[from];
    const struct iwarp_pcap_tcp_end *peer = &c->end[from == IWARP_PCAP_CLIENT ? 1 : 0];
    struct iwarp_pkt_tcp_seg s;
    memset(&s, 0, sizeof s);
    s.ip_version = c->ip_version;
    memcpy(s.src_mac, me->mac, 6);
    memcpy(s.dst_mac, peer->mac, 6);
    memcpy(s.src, me->addr, 16);
    memcpy(s.dst, peer->addr, 16);
    s.ttl = c->ttl;
    s.sport = me->port;
    s.dport = peer->port;
    s.seq = seq;
    s.ack = (flags & IWARP_PKT_TCP_ACK) ? ack : 0;
    s.tcp_flags = flags;
    s.window = c->window;
    if (c->ip_version == 4)
        s.ip_id = c->ip_id;
    iwarp_ssize n = iwarp_pkt_build_tcp(c->w->frame, sizeof c->w->frame, &s, payload_len);
    if (n < 0)
        return (int)n;
    if (c->ip_version == 4)
        c->ip_id++;
    c->started = true;
    return iwarp_pcap_writer_frame(c->w, c->w->frame, (size_t)n);
}

static int check_side(const struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from)
{
    if (c == NULL || (from != IWARP_PCAP_CLIENT && from != IWARP_PCAP_SERVER))
        return IWARP_ERR_INVAL;
    return c->reset ? IWARP_ERR_STATE : 0;
}

int iwarp_pcap_tcp_handshake(struct iwarp_pcap_tcp *c)
{
    if (c == NULL)
        return IWARP_ERR_INVAL;
    if (c->started || c->reset)
        return IWARP_ERR_STATE;
    const uint32_t cisn = c->end[IWARP_PCAP_CLIENT].isn, sisn = c->end[IWARP_PCAP_SERVER].isn;
    /* RFC 9293 §3.5 Figure 6: <SEQ=ISS><CTL=SYN>, <SEQ=IRS'><ACK=ISS+1><CTL=SYN,ACK>, <ACK> */
    int rc = put_segment(c, IWARP_PCAP_CLIENT, IWARP_PKT_TCP_SYN, cisn, 0, 0);
    if (rc == 0)
        rc = put_segment(c, IWARP_PCAP_SERVER, IWARP_PKT_TCP_SYN | IWARP_PKT_TCP_ACK, sisn,
                         cisn + 1u, 0);
    if (rc == 0)
        rc = put_segment(c, IWARP_PCAP_CLIENT, IWARP_PKT_TCP_ACK, cisn + 1u, sisn + 1u, 0);
    return rc;
}

/* Copies n octets from the iovec array, starting at (*idx, *off), to dst; advances the cursor. */
static void gather(uint8_t *dst, const struct iovec *iov, size_t *idx, size_t *off, size_t n)
{
    while (n > 0) {
        size_t avail = iov[*idx].iov_len - *off;
        size_t k = avail < n ? avail : n;
        if (k > 0) {
            memcpy(dst, (const uint8_t *)iov[*idx].iov_base + *off, k);
            dst += k;
        }
        n -= k;
        *off += k;
        if (*off == iov[*idx].iov_len) {
            (*idx)++;
            *off = 0;
        }
    }
}

int iwarp_pcap_tcp_send(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from,
                        const struct iovec *iov, size_t iovcnt, size_t max_seg)
{
    int rc = check_side(c, from);
    if (rc != 0)
        return rc;
    if (iov == NULL && iovcnt != 0)
        return IWARP_ERR_INVAL;
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; i++) {
        if (iov[i].iov_base == NULL && iov[i].iov_len != 0)
            return IWARP_ERR_INVAL;
        if (iov[i].iov_len > SIZE_MAX - total)
            return IWARP_ERR_INVAL;
        total += iov[i].iov_len;
    }
    if (total == 0)
        return IWARP_ERR_INVAL;
    if (c->fin[from])
        return IWARP_ERR_STATE; /* RFC 9293 §3.6: no data after one's own FIN */
    size_t seg = (max_seg == 0 || max_seg > total) ? total : max_seg;
    size_t limit = c->ip_version == 4 ? IWARP_PKT_TCP_MAX_PAYLOAD_V4 : IWARP_PKT_TCP_MAX_PAYLOAD_V6;
    if (seg > limit)
        return IWARP_ERR_PKT_TOO_BIG;

    size_t hdr = iwarp_pkt_tcp_hdr_len(c->ip_version);
    size_t idx = 0, off = 0;
    for (size_t left = total; left > 0;) {
        size_t n = left < seg ? left : seg;
        gather(c->w->frame + hdr, iov, &idx, &off, n);
        rc = put_segment(c, from, IWARP_PKT_TCP_PSH | IWARP_PKT_TCP_ACK, c->snd_nxt[from],
                         c->snd_nxt[1 - from], n);
        if (rc != 0)
            return rc;
        c->snd_nxt[from] += (uint32_t)n; /* RFC 9293 §3.4: sequence space, modulo 2^32 */
        left -= n;
    }
    return 0;
}

int iwarp_pcap_tcp_ack(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from)
{
    int rc = check_side(c, from);
    if (rc != 0)
        return rc;
    return put_segment(c, from, IWARP_PKT_TCP_ACK, c->snd_nxt[from], c->snd_nxt[1 - from], 0);
}

int iwarp_pcap_tcp_fin(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from)
{
    int rc = check_side(c, from);
    if (rc != 0)
        return rc;
    if (c->fin[from])
        return IWARP_ERR_STATE;
    rc = put_segment(c, from, IWARP_PKT_TCP_FIN | IWARP_PKT_TCP_ACK, c->snd_nxt[from],
                     c->snd_nxt[1 - from], 0);
    if (rc != 0)
        return rc;
    c->snd_nxt[from] += 1u; /* RFC 9293 §3.4: FIN occupies one sequence number */
    c->fin[from] = true;
    return 0;
}

int iwarp_pcap_tcp_rst(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from)
{
    int rc = check_side(c, from);
    if (rc != 0)
        return rc;
    rc = put_segment(c, from, IWARP_PKT_TCP_RST | IWARP_PKT_TCP_ACK, c->snd_nxt[from],
                     c->snd_nxt[1 - from], 0);
    if (rc == 0)
        c->reset = true;
    return rc;
}
