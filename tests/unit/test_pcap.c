/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pcap_writer and pcap_reader: a hand-made MPA exchange (wire-reference.md §1.8-§1.9 frames) is
 * written and compared packet by packet, byte for byte, with the same exchange written by the
 * independent Python generator of ../shared/tools/wire-check (tests/vectors/pcap/README.md), and
 * judged by check.sh --checksums (tshark); committed pcap, pcapng, Linux cooked v1 and v2
 * captures are read and every field compared with what tshark printed for them (*.tsv); link
 * types, segmentation, size limits, connection state, truncated and damaged files.
 */
#define _DEFAULT_SOURCE 1 /* mkstemp, and the BSD types libpcap's header uses */

#include <pcap/pcap.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "trace/pcap_reader.h"
#include "trace/pcap_writer.h"
#include "util/bytes.h"

#define VEC      IWARP_TEST_VECTORS_DIR "/pcap/"
#define CHECK_SH IWARP_SHARED_DIR "/tools/wire-check/check.sh"

#define CLIENT_PORT 40001u
#define SERVER_PORT 19875u
#define CLIENT_ISN  0x10000000u
#define SERVER_ISN  0x20000000u
#define T0_NS       UINT64_C(1700000000000123000) /* gen_pcap.py: 1700000000 s + 123 us steps */
#define STEP_NS     123000u

/* wire-reference.md §1.8: MPA Request/Reply, C=1, Rev 1, no private data. */
static const char REQ_HEX[] = "4d504120494420526571204672616d65 40 01 0000";
static const char REP_HEX[] = "4d504120494420526570204672616d65 40 01 0000";
/* wire-reference.md §1.9 CRC vectors (CRC octets least-significant first): */
static const char WRITE_RTR_HEX[] = "000e c140 00000001 0000000000000000 eb d3 4c 5f";
static const char SEND0_HEX[] = "0012 4143 00000000 00000000 00000001 00000000 58 7b e8 c4";
static const char TERM_HEX[] = "0016 4147 00000000 00000002 00000001 00000000 00000000 f9 a2 6f 1d";

struct bytes {
    uint8_t b[64];
    size_t n;
};

static struct bytes from_hex(const char *h)
{
    struct bytes x;
    x.n = harness_hex(h, x.b, sizeof x.b);
    return x;
}

static void tmp_path(char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/iwarp_test_pcap_XXXXXX");
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    close(fd);
}

static void make_ends(uint8_t ipv, struct iwarp_pcap_tcp_end *c, struct iwarp_pcap_tcp_end *s)
{
    memset(c, 0, sizeof *c);
    memset(s, 0, sizeof *s);
    if (ipv == 4) {
        const uint8_t lo[4] = {127, 0, 0, 1};
        memcpy(c->addr, lo, 4);
        memcpy(s->addr, lo, 4);
    } else {
        c->addr[15] = 1; /* ::1 */
        s->addr[15] = 1;
    }
    c->port = CLIENT_PORT;
    c->isn = CLIENT_ISN;
    s->port = SERVER_PORT;
    s->isn = SERVER_ISN;
}

static struct iwarp_pcap_writer *open_writer(const char *path)
{
    struct iwarp_pcap_writer *w = NULL;
    char err[IWARP_PCAP_ERRTEXT_LEN] = "";
    int rc = iwarp_pcap_writer_open(&w, path, err, sizeof err);
    if (rc != 0)
        harness_fail(__FILE__, __LINE__, "open %s: %s (%s)", path, iwarp_strerror(rc), err);
    return w;
}

/* One payload from `from`, then the pure ACK of the peer (what gen_pcap.py's Tcp.send does). */
static void send_acked(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from, const struct iovec *iov,
                       size_t iovcnt, size_t max_seg)
{
    ASSERT_EQ(iwarp_pcap_tcp_send(c, from, iov, iovcnt, max_seg), 0);
    ASSERT_EQ(
        iwarp_pcap_tcp_ack(c, from == IWARP_PCAP_CLIENT ? IWARP_PCAP_SERVER : IWARP_PCAP_CLIENT),
        0);
}

static void send_hex(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from, const char *h,
                     size_t max_seg)
{
    struct bytes x = from_hex(h);
    struct iovec iov = {x.b, x.n};
    send_acked(c, from, &iov, 1, max_seg);
}

/*
 * The exchange of tests/vectors/pcap/mpa_crc_genpcap.pcap: handshake, Request, Reply, a
 * zero-length Write RTR and a zero-length Send in one segment (two FPDUs given as iovecs, with an
 * empty iovec between), the responder's zero-length Send and a bare Terminate, FIN exchange.
 * max_seg > 0 splits every FPDU payload into segments of at most that many octets.
 */
static void write_mpa_exchange(const char *path, uint8_t ipv, size_t max_seg)
{
    struct iwarp_pcap_writer *w = open_writer(path);
    iwarp_pcap_writer_set_time(w, T0_NS, STEP_NS);
    struct iwarp_pcap_tcp_end ce, se;
    make_ends(ipv, &ce, &se);
    struct iwarp_pcap_tcp c;
    ASSERT_EQ(iwarp_pcap_tcp_init(&c, w, ipv, &ce, &se), 0);
    ASSERT_EQ(iwarp_pcap_tcp_handshake(&c), 0);
    /* Wireshark recognises MPA only from a segment that starts with the whole key
     * (wire-check/README.md), so the Request and Reply are never split */
    send_hex(&c, IWARP_PCAP_CLIENT, REQ_HEX, 0);
    send_hex(&c, IWARP_PCAP_SERVER, REP_HEX, 0);
    struct bytes rtr = from_hex(WRITE_RTR_HEX), snd = from_hex(SEND0_HEX);
    struct iovec two[3] = {{rtr.b, rtr.n}, {NULL, 0}, {snd.b, snd.n}};
    send_acked(&c, IWARP_PCAP_CLIENT, two, 3, max_seg);
    send_hex(&c, IWARP_PCAP_SERVER, SEND0_HEX, max_seg);
    send_hex(&c, IWARP_PCAP_SERVER, TERM_HEX, max_seg);
    ASSERT_EQ(iwarp_pcap_tcp_fin(&c, IWARP_PCAP_CLIENT), 0);
    ASSERT_EQ(iwarp_pcap_tcp_fin(&c, IWARP_PCAP_SERVER), 0);
    ASSERT_EQ(iwarp_pcap_tcp_ack(&c, IWARP_PCAP_CLIENT), 0);
    ASSERT_EQ(iwarp_pcap_writer_close(w), 0);
}

static struct iwarp_pcap_reader *open_reader(const char *path)
{
    struct iwarp_pcap_reader *r = NULL;
    char err[IWARP_PCAP_ERRTEXT_LEN] = "";
    int rc = iwarp_pcap_reader_open(&r, path, err, sizeof err);
    if (rc != 0)
        harness_fail(__FILE__, __LINE__, "open %s: %s (%s)", path, iwarp_strerror(rc), err);
    return r;
}

/* Runs ../shared/tools/wire-check/check.sh --checksums on a capture and expects its exit status
 * and, if given, a text in its output; SKIP (printed, not failed) without tshark. */
static void wire_check(const char *pcap, unsigned port, int expect_status, const char *expect_text)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0) {
        printf("  SKIP: tshark not installed, wire-check of %s not run\n", pcap);
        return;
    }
    char log[64], cmd[512];
    tmp_path(log, sizeof log);
    snprintf(cmd, sizeof cmd, "'%s' --checksums '%s' %u >'%s' 2>&1", CHECK_SH, pcap, port, log);
    int st = system(cmd);
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    static char out[1 << 16];
    FILE *f = fopen(log, "r");
    ASSERT_TRUE(f != NULL);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(log);
    if (status != expect_status || (expect_text != NULL && strstr(out, expect_text) == NULL)) {
        fputs(out, stdout);
        harness_fail(__FILE__, __LINE__, "check.sh %s: exit %d, expected %d and \"%s\"", pcap,
                     status, expect_status, expect_text ? expect_text : "");
    }
    printf("  wire-check %s: exit %d as expected\n", pcap, status);
}

/* ---- the MPA exchange against the independent generator and tshark ---- */

TEST(writer_matches_independent_generator)
{
    char path[64];
    tmp_path(path, sizeof path);
    write_mpa_exchange(path, 4, 0);
    struct iwarp_pcap_reader *mine = open_reader(path);
    struct iwarp_pcap_reader *ref = open_reader(VEC "mpa_crc_genpcap.pcap");
    ASSERT_EQ(iwarp_pcap_reader_link(mine), IWARP_PKT_LINK_ETHERNET);
    ASSERT_EQ(iwarp_pcap_reader_dlt(mine), DLT_EN10MB);
    unsigned count = 0;
    for (;;) {
        struct iwarp_pcap_packet a, b;
        int ra = iwarp_pcap_reader_next(mine, &a);
        int rb = iwarp_pcap_reader_next(ref, &b);
        ASSERT_EQ(ra, rb);
        if (ra == IWARP_ERR_PCAP_END)
            break;
        ASSERT_EQ(ra, 0);
        count++;
        ASSERT_EQ(a.index, b.index);
        ASSERT_EQ(a.ts_ns, b.ts_ns);
        ASSERT_EQ(a.caplen, b.caplen);
        ASSERT_EQ(a.wire_len, b.wire_len);
        ASSERT_MEM_EQ(a.data, b.data, a.caplen);
        ASSERT_EQ(a.decode_rc, 0);
        ASSERT_EQ(iwarp_pkt_verify_checksums(&a.pkt), 0);
    }
    ASSERT_EQ(count, 16);
    iwarp_pcap_reader_close(mine);
    iwarp_pcap_reader_close(ref);
    unlink(path);
}

/* Field-by-field expectations of the exchange (derived from the sequence space by hand). */
TEST(read_back_every_field)
{
    char path[64];
    tmp_path(path, sizeof path);
    write_mpa_exchange(path, 4, 0);
    struct bytes req = from_hex(REQ_HEX), rep = from_hex(REP_HEX), rtr = from_hex(WRITE_RTR_HEX),
                 snd = from_hex(SEND0_HEX), term = from_hex(TERM_HEX);
    uint8_t two[64];
    memcpy(two, rtr.b, rtr.n);
    memcpy(two + rtr.n, snd.b, snd.n);
    const uint32_t C = CLIENT_ISN, S = SERVER_ISN;
    enum { SYN = 0x02, SA = 0x12, A = 0x10, PA = 0x18, FA = 0x11 };
    /* c = client sends; seq/ack raw; payload */
    const struct {
        int c;
        uint32_t seq, ack;
        uint16_t flags;
        const uint8_t *pl;
        size_t n;
    } want[] = {
        {1, C, 0, SYN, NULL, 0},          {0, S, C + 1, SA, NULL, 0},
        {1, C + 1, S + 1, A, NULL, 0},    {1, C + 1, S + 1, PA, req.b, 20},
        {0, S + 1, C + 21, A, NULL, 0},   {0, S + 1, C + 21, PA, rep.b, 20},
        {1, C + 21, S + 21, A, NULL, 0},  {1, C + 21, S + 21, PA, two, 44},
        {0, S + 21, C + 65, A, NULL, 0},  {0, S + 21, C + 65, PA, snd.b, 24},
        {1, C + 65, S + 45, A, NULL, 0},  {0, S + 45, C + 65, PA, term.b, 28},
        {1, C + 65, S + 73, A, NULL, 0},  {1, C + 65, S + 73, FA, NULL, 0},
        {0, S + 73, C + 66, FA, NULL, 0}, {1, C + 66, S + 74, A, NULL, 0},
    };
    /* handshake (3), five payloads each with the peer's ACK (10), FIN, FIN, ACK (3) */
    struct iwarp_pcap_reader *r = open_reader(path);
    size_t i = 0;
    struct iwarp_pcap_packet p;
    int rc;
    uint64_t ts = T0_NS;
    size_t k = 0;
    while ((rc = iwarp_pcap_reader_next(r, &p)) == 0) {
        ASSERT_TRUE(k < 16);
        ASSERT_EQ(p.ts_ns, ts);
        ts += STEP_NS;
        k++;
        ASSERT_EQ(p.decode_rc, 0);
        const struct iwarp_pkt *d = &p.pkt;
        ASSERT_EQ(d->layer, IWARP_PKT_LAYER_L4);
        ASSERT_EQ(d->flags, 0);
        ASSERT_EQ(d->ip_version, 4);
        ASSERT_EQ(d->ip_proto, 6);
        ASSERT_EQ(d->ttl, 64);
        ASSERT_EQ(d->ip_id, k); /* one counter for both directions, from 1 */
        ASSERT_EQ(d->window, 65535);
        ASSERT_EQ(d->l4_hdr_len, 20);
        ASSERT_EQ(d->src[0], 127);
        ASSERT_EQ(d->dst[3], 1);
        if (i < sizeof want / sizeof want[0]) {
            ASSERT_EQ(d->sport, want[i].c ? CLIENT_PORT : SERVER_PORT);
            ASSERT_EQ(d->dport, want[i].c ? SERVER_PORT : CLIENT_PORT);
            ASSERT_EQ_U(d->seq, want[i].seq);
            ASSERT_EQ_U(d->ack, want[i].ack);
            ASSERT_EQ_U(d->tcp_flags, want[i].flags);
            ASSERT_EQ(d->payload_len, want[i].n);
            ASSERT_EQ(d->payload_wire_len, want[i].n);
            if (want[i].n)
                ASSERT_MEM_EQ(d->payload, want[i].pl, want[i].n);
        }
        i++;
    }
    ASSERT_EQ(rc, IWARP_ERR_PCAP_END);
    ASSERT_EQ(iwarp_pcap_reader_next(r, &p), IWARP_ERR_PCAP_END);
    ASSERT_EQ(i, 16);
    iwarp_pcap_reader_close(r);
    unlink(path);
}

TEST(wire_check_ipv4)
{
    char path[64];
    tmp_path(path, sizeof path);
    write_mpa_exchange(path, 4, 0);
    wire_check(path, SERVER_PORT, 0, "RESULT: PASS");
    unlink(path);
}

TEST(wire_check_ipv6)
{
    char path[64];
    tmp_path(path, sizeof path);
    write_mpa_exchange(path, 6, 0);
    wire_check(path, SERVER_PORT, 0, "RESULT: PASS");
    unlink(path);
}

/* FPDUs spanning TCP segments of at most 16, 12 and 5 octets: the judge frames MPA on the TCP
 * byte stream, so an FPDU header split at a segment's end (12: 4 octets into the next FPDU;
 * 5: at every offset in turn) changes nothing. */
TEST(wire_check_segmented)
{
    static const size_t seg[] = {16, 12, 5};
    for (size_t i = 0; i < sizeof seg / sizeof seg[0]; i++) {
        char path[64];
        tmp_path(path, sizeof path);
        write_mpa_exchange(path, 4, seg[i]);
        wire_check(path, SERVER_PORT, 0, "RESULT: PASS");
        unlink(path);
    }
}

/* check.sh --checksums notices a bad TCP checksum (so the passes above mean something). */
TEST(wire_check_catches_bad_checksum)
{
    char path[64];
    tmp_path(path, sizeof path);
    write_mpa_exchange(path, 4, 0);
    struct iwarp_pcap_reader *r = open_reader(path);
    char out[64];
    tmp_path(out, sizeof out);
    struct iwarp_pcap_writer *w = open_writer(out);
    struct iwarp_pcap_packet p;
    while (iwarp_pcap_reader_next(r, &p) == 0) {
        uint8_t f[256];
        memcpy(f, p.data, p.caplen);
        if (p.index == 10)
            f[14 + 20 + 16] ^= 0x01; /* the TCP checksum field of the responder's Send */
        iwarp_pcap_writer_set_time(w, p.ts_ns, 0);
        ASSERT_EQ(iwarp_pcap_writer_frame(w, f, p.caplen), 0);
    }
    iwarp_pcap_reader_close(r);
    ASSERT_EQ(iwarp_pcap_writer_close(w), 0);
    wire_check(out, SERVER_PORT, 1, "other-checksum=1");
    unlink(path);
    unlink(out);
}

/* ---- committed captures against tshark's field listing ---- */

/* Splits a tab-separated line in place; returns the number of fields. */
static size_t split_tabs(char *line, char **field, size_t max)
{
    size_t n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *s = line; n < max;) {
        field[n++] = s;
        char *t = strchr(s, '\t');
        if (t == NULL)
            break;
        *t = '\0';
        s = t + 1;
    }
    return n;
}

static uint64_t num(const char *s)
{
    return strtoull(s, NULL, 0);
}

/* "1700000000.000123000" -> ns */
static uint64_t epoch_ns(const char *s)
{
    char *dot;
    uint64_t sec = strtoull(s, &dot, 10), frac = 0;
    int digits = 0;
    if (*dot == '.')
        for (const char *p = dot + 1; *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
            frac = frac * 10 + (uint64_t)(*p - '0');
    for (; digits < 9; digits++)
        frac *= 10;
    return sec * 1000000000u + frac;
}

/*
 * Reads capture `name` with the reader and compares every packet with the line tshark printed
 * for it in `tsv` (see tests/vectors/pcap/README.md): frame number, time, lengths, IPv4
 * addresses, TTL, ID, ports, raw sequence and acknowledgement numbers, flags, window, TCP header
 * length, payload length and payload octets.
 */
static void compare_with_tshark(const char *name, const char *tsv, enum iwarp_pkt_link link,
                                size_t packets)
{
    static char line[1 << 16];
    FILE *f = fopen(tsv, "r");
    ASSERT_TRUE(f != NULL);
    ASSERT_TRUE(fgets(line, sizeof line, f) != NULL); /* the header line */
    struct iwarp_pcap_reader *r = open_reader(name);
    ASSERT_EQ(iwarp_pcap_reader_link(r), link);
    size_t count = 0;
    struct iwarp_pcap_packet p;
    while (fgets(line, sizeof line, f) != NULL) {
        char *v[18];
        ASSERT_EQ(split_tabs(line, v, 18), 18);
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
        count++;
        const struct iwarp_pkt *d = &p.pkt;
        ASSERT_EQ(p.decode_rc, 0);
        ASSERT_EQ(p.index, num(v[0]));
        ASSERT_EQ(p.ts_ns, epoch_ns(v[1]));
        ASSERT_EQ(p.wire_len, num(v[2]));
        ASSERT_EQ(p.caplen, num(v[3]));
        ASSERT_EQ(d->layer, IWARP_PKT_LAYER_L4);
        ASSERT_EQ(d->flags, 0);
        ASSERT_EQ(d->ip_version, num(v[4]));
        char a[20];
        snprintf(a, sizeof a, "%u.%u.%u.%u", d->src[0], d->src[1], d->src[2], d->src[3]);
        ASSERT_STR_EQ(a, v[5]);
        snprintf(a, sizeof a, "%u.%u.%u.%u", d->dst[0], d->dst[1], d->dst[2], d->dst[3]);
        ASSERT_STR_EQ(a, v[6]);
        ASSERT_EQ(d->ttl, num(v[7]));
        ASSERT_EQ(d->ip_id, num(v[8]));
        ASSERT_EQ(d->sport, num(v[9]));
        ASSERT_EQ(d->dport, num(v[10]));
        ASSERT_EQ_U(d->seq, num(v[11]));
        ASSERT_EQ_U(d->ack, num(v[12]));
        ASSERT_EQ_U(d->tcp_flags, num(v[13]));
        ASSERT_EQ(d->window, num(v[14]));
        ASSERT_EQ(d->l4_hdr_len, num(v[15]));
        ASSERT_EQ(d->payload_len, num(v[16]));
        ASSERT_EQ(d->payload_wire_len, num(v[16]));
        ASSERT_EQ(strlen(v[17]), 2 * d->payload_len);
        for (size_t i = 0; i < d->payload_len; i++) {
            char h[3];
            snprintf(h, sizeof h, "%02x", d->payload[i]);
            if (memcmp(h, v[17] + 2 * i, 2) != 0)
                harness_fail(__FILE__, __LINE__, "%s #%zu payload octet %zu: %s != %.2s", name,
                             count, i, h, v[17] + 2 * i);
        }
    }
    fclose(f);
    ASSERT_EQ(iwarp_pcap_reader_next(r, &p), IWARP_ERR_PCAP_END);
    ASSERT_EQ(count, packets);
    iwarp_pcap_reader_close(r);
}

TEST(vector_genpcap_pcap)
{
    compare_with_tshark(VEC "mpa_crc_genpcap.pcap", VEC "mpa_crc_genpcap.tsv",
                        IWARP_PKT_LINK_ETHERNET, 16);
}

TEST(vector_genpcap_pcapng)
{
    compare_with_tshark(VEC "mpa_crc_genpcap.pcapng", VEC "mpa_crc_genpcap.tsv",
                        IWARP_PKT_LINK_ETHERNET, 16);
}

/* Our own capture against tshark's listing of the generator's: the same fields. */
TEST(written_capture_matches_tshark_listing)
{
    char path[64];
    tmp_path(path, sizeof path);
    write_mpa_exchange(path, 4, 0);
    compare_with_tshark(path, VEC "mpa_crc_genpcap.tsv", IWARP_PKT_LINK_ETHERNET, 16);
    unlink(path);
}

/* Real kernel TCP on lo captured on "any": Linux cooked v1, TCP timestamps/MSS/SACK options. */
TEST(vector_linux_sll)
{
    compare_with_tshark(VEC "rev1_lo_any_sll.pcap", VEC "rev1_lo_any_sll.pcap.tsv",
                        IWARP_PKT_LINK_LINUX_SLL, 28);
}

TEST(vector_linux_sll2_pcapng)
{
    compare_with_tshark(VEC "rev1_lo_any_sll2.pcapng", VEC "rev1_lo_any_sll2.pcapng.tsv",
                        IWARP_PKT_LINK_LINUX_SLL2, 28);
}

/* ---- other link types, written with libpcap itself ---- */

static void write_one(const char *path, int dlt, const uint8_t *frame, size_t caplen, size_t len)
{
    pcap_t *pd = pcap_open_dead(dlt, 65535);
    ASSERT_TRUE(pd != NULL);
    pcap_dumper_t *d = pcap_dump_open(pd, path);
    ASSERT_TRUE(d != NULL);
    struct pcap_pkthdr h;
    memset(&h, 0, sizeof h);
    h.ts.tv_sec = 1;
    h.ts.tv_usec = 2;
    h.caplen = (bpf_u_int32)caplen;
    h.len = (bpf_u_int32)len;
    pcap_dump((u_char *)d, &h, frame);
    pcap_dump_close(d);
    pcap_close(pd);
}

/* The IPv4 packet of the exchange's MPA Request (frame 4 of the vector), link header stripped. */
static size_t mpa_request_ip(uint8_t *out, size_t cap)
{
    struct iwarp_pcap_reader *r = open_reader(VEC "mpa_crc_genpcap.pcap");
    struct iwarp_pcap_packet p;
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
    size_t n = p.caplen - 14;
    ASSERT_TRUE(n <= cap);
    memcpy(out, p.data + 14, n);
    iwarp_pcap_reader_close(r);
    return n;
}

TEST(link_types_through_libpcap)
{
    uint8_t ip[128], f[160];
    size_t n = mpa_request_ip(ip, sizeof ip);
    struct bytes req = from_hex(REQ_HEX);
    const struct {
        int dlt;
        enum iwarp_pkt_link link;
        uint8_t hdr[20];
        size_t hlen;
    } cases[] = {
        {DLT_NULL, IWARP_PKT_LINK_NULL, {2, 0, 0, 0}, 4},
        {DLT_LOOP, IWARP_PKT_LINK_LOOP, {0, 0, 0, 2}, 4},
        {DLT_RAW, IWARP_PKT_LINK_RAW, {0}, 0},
        {DLT_IPV4, IWARP_PKT_LINK_IPV4, {0}, 0},
        {DLT_LINUX_SLL,
         IWARP_PKT_LINK_LINUX_SLL,
         {0, 4, 3, 4, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0},
         16},
        {DLT_LINUX_SLL2,
         IWARP_PKT_LINK_LINUX_SLL2,
         {8, 0, 0, 0, 0, 0, 0, 1, 3, 4, 4, 6, 0, 0, 0, 0, 0, 0, 0, 0},
         20},
    };
    char path[64];
    tmp_path(path, sizeof path);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(f, cases[i].hdr, cases[i].hlen);
        memcpy(f + cases[i].hlen, ip, n);
        write_one(path, cases[i].dlt, f, cases[i].hlen + n, cases[i].hlen + n);
        struct iwarp_pcap_reader *r = open_reader(path);
        ASSERT_EQ(iwarp_pcap_reader_link(r), cases[i].link);
        struct iwarp_pcap_packet p;
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
        ASSERT_EQ(p.ts_ns, 1000002000u);
        ASSERT_EQ(p.decode_rc, 0);
        ASSERT_EQ(p.pkt.layer, IWARP_PKT_LAYER_L4);
        ASSERT_EQ(p.pkt.sport, CLIENT_PORT);
        ASSERT_EQ_U(p.pkt.seq, CLIENT_ISN + 1);
        ASSERT_EQ(p.pkt.payload_len, req.n);
        ASSERT_MEM_EQ(p.pkt.payload, req.b, req.n);
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), IWARP_ERR_PCAP_END);
        iwarp_pcap_reader_close(r);
    }
    unlink(path);
}

TEST(unsupported_link_type)
{
    char path[64], err[IWARP_PCAP_ERRTEXT_LEN] = "";
    tmp_path(path, sizeof path);
    const uint8_t f[4] = {1, 2, 3, 4};
    write_one(path, DLT_USER0, f, 4, 4);
    struct iwarp_pcap_reader *r = NULL;
    ASSERT_EQ(iwarp_pcap_reader_open(&r, path, err, sizeof err), IWARP_ERR_PCAP_LINKTYPE);
    ASSERT_TRUE(r == NULL);
    ASSERT_TRUE(strstr(err, "not supported") != NULL);
    printf("  %s\n", err);
    enum iwarp_pkt_link l;
    ASSERT_EQ(iwarp_pcap_link_from_dlt(DLT_IEEE802_11, &l), IWARP_ERR_PCAP_LINKTYPE);
    unlink(path);
}

/* A packet captured with a snaplen shorter than the packet: flagged, payload cut. */
TEST(truncated_packet_record)
{
    uint8_t ip[128];
    size_t n = mpa_request_ip(ip, sizeof ip);
    char path[64];
    tmp_path(path, sizeof path);
    write_one(path, DLT_RAW, ip, n - 8, n);
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet p;
    ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
    ASSERT_EQ(p.caplen, n - 8);
    ASSERT_EQ(p.wire_len, n);
    ASSERT_EQ(p.decode_rc, 0);
    ASSERT_EQ(p.pkt.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(p.pkt.flags, IWARP_PKT_F_TRUNCATED);
    ASSERT_EQ(p.pkt.payload_len, 12);
    ASSERT_EQ(p.pkt.payload_wire_len, 20);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&p.pkt), IWARP_ERR_SHORT);
    iwarp_pcap_reader_close(r);
    /* the same bytes as a whole packet: Total Length runs past it, malformed */
    write_one(path, DLT_RAW, ip, n - 8, n - 8);
    r = open_reader(path);
    ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
    ASSERT_EQ(p.decode_rc, IWARP_ERR_PKT_MALFORMED);
    ASSERT_EQ(p.pkt.layer, IWARP_PKT_LAYER_LINK);
    iwarp_pcap_reader_close(r);
    unlink(path);
}

/* ---- damaged files ---- */

TEST(open_errors)
{
    char err[IWARP_PCAP_ERRTEXT_LEN] = "";
    struct iwarp_pcap_writer *w = NULL;
    ASSERT_EQ(iwarp_pcap_writer_open(&w, "/nonexistent-dir/x.pcap", err, sizeof err),
              IWARP_ERR_PCAP);
    ASSERT_TRUE(w == NULL);
    ASSERT_TRUE(err[0] != '\0');
    ASSERT_EQ(iwarp_pcap_writer_open(&w, "/nonexistent-dir/x.pcap", NULL, 0), IWARP_ERR_PCAP);
    ASSERT_EQ(iwarp_pcap_writer_open(NULL, "x", NULL, 0), IWARP_ERR_INVAL);

    struct iwarp_pcap_reader *r = NULL;
    err[0] = '\0';
    ASSERT_EQ(iwarp_pcap_reader_open(&r, "/nonexistent-dir/x.pcap", err, sizeof err),
              IWARP_ERR_PCAP);
    ASSERT_TRUE(r == NULL);
    ASSERT_TRUE(err[0] != '\0');
    err[0] = '\0';
    ASSERT_EQ(iwarp_pcap_reader_open(&r, VEC "mpa_crc_genpcap.tsv", err, sizeof err),
              IWARP_ERR_PCAP); /* not a capture */
    ASSERT_TRUE(err[0] != '\0');
    ASSERT_EQ(iwarp_pcap_reader_open(&r, NULL, NULL, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pcap_reader_next(NULL, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pcap_writer_close(NULL), 0);
    iwarp_pcap_reader_close(NULL);
}

/* A file cut inside its fourth record: three packets, then IWARP_ERR_PCAP with libpcap's text. */
TEST(file_cut_mid_record)
{
    FILE *in = fopen(VEC "mpa_crc_genpcap.pcap", "rb");
    ASSERT_TRUE(in != NULL);
    uint8_t buf[2048];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    /* 24-octet file header, three 16 + 54 octet records, then 16 + 30 of the fourth */
    size_t cut = 24 + 3 * (16 + 54) + 16 + 30;
    ASSERT_TRUE(n > cut);
    char path[64];
    tmp_path(path, sizeof path);
    FILE *out = fopen(path, "wb");
    ASSERT_TRUE(out != NULL);
    ASSERT_EQ(fwrite(buf, 1, cut, out), cut);
    fclose(out);
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet p;
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
    ASSERT_EQ(iwarp_pcap_reader_next(r, &p), IWARP_ERR_PCAP);
    ASSERT_TRUE(strstr(iwarp_pcap_reader_errtext(r), "truncated") != NULL);
    printf("  %s\n", iwarp_pcap_reader_errtext(r));
    iwarp_pcap_reader_close(r);
    unlink(path);
}

/* ---- writer behaviour ---- */

/* Reads every packet of path into a callback-free summary: count and the concatenated payload
 * of each direction, checking seq continuity per direction. */
struct stream_summary {
    size_t packets;
    size_t segments[2];
    uint8_t data[2][3 << 16];
    size_t len[2];
};

static void summarize(const char *path, struct stream_summary *s)
{
    memset(s, 0, sizeof *s);
    uint32_t next[2] = {CLIENT_ISN + 1, SERVER_ISN + 1};
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet p;
    while (iwarp_pcap_reader_next(r, &p) == 0) {
        s->packets++;
        ASSERT_EQ(p.decode_rc, 0);
        ASSERT_EQ(iwarp_pkt_verify_checksums(&p.pkt), 0);
        int side = p.pkt.sport == CLIENT_PORT ? 0 : 1;
        if (p.pkt.payload_len == 0)
            continue;
        ASSERT_EQ_U(p.pkt.seq, next[side]);
        ASSERT_EQ_U(p.pkt.ack, next[1 - side]);
        ASSERT_EQ_U(p.pkt.tcp_flags, IWARP_PKT_TCP_PSH | IWARP_PKT_TCP_ACK);
        ASSERT_TRUE(s->len[side] + p.pkt.payload_len <= sizeof s->data[side]);
        memcpy(s->data[side] + s->len[side], p.pkt.payload, p.pkt.payload_len);
        s->len[side] += p.pkt.payload_len;
        s->segments[side]++;
        next[side] += (uint32_t)p.pkt.payload_len;
    }
    iwarp_pcap_reader_close(r);
}

TEST(segmented_send)
{
    char path[64];
    tmp_path(path, sizeof path);
    write_mpa_exchange(path, 6, 7);
    static struct stream_summary s;
    summarize(path, &s);
    /* client: 20 + 44 octets -> 1 + 7 segments; server: 20 + 24 + 28 -> 1 + 4 + 4 */
    ASSERT_EQ(s.len[0], 64);
    ASSERT_EQ(s.segments[0], 8);
    ASSERT_EQ(s.len[1], 72);
    ASSERT_EQ(s.segments[1], 9);
    struct bytes req = from_hex(REQ_HEX), rtr = from_hex(WRITE_RTR_HEX), snd = from_hex(SEND0_HEX);
    ASSERT_MEM_EQ(s.data[0], req.b, 20);
    ASSERT_MEM_EQ(s.data[0] + 20, rtr.b, 20);
    ASSERT_MEM_EQ(s.data[0] + 40, snd.b, 24);
    unlink(path);
}

/* The largest segments: 65495 octets over IPv4 and 65515 over IPv6 in one packet; one more is
 * refused without writing anything, and splits with max_seg. */
TEST(size_limits)
{
    static uint8_t big[65536 + 100];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7u + 3u);
    for (uint8_t ipv = 4; ipv <= 6; ipv += 2) {
        size_t max = ipv == 4 ? 65495 : 65515;
        char path[64];
        tmp_path(path, sizeof path);
        struct iwarp_pcap_writer *w = open_writer(path);
        struct iwarp_pcap_tcp_end ce, se;
        make_ends(ipv, &ce, &se);
        struct iwarp_pcap_tcp c;
        ASSERT_EQ(iwarp_pcap_tcp_init(&c, w, ipv, &ce, &se), 0);
        struct iovec one = {big, max + 1};
        uint64_t t = iwarp_pcap_writer_time(w);
        ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, &one, 1, 0), IWARP_ERR_PKT_TOO_BIG);
        ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, &one, 1, max + 1),
                  IWARP_ERR_PKT_TOO_BIG);
        ASSERT_EQ(iwarp_pcap_writer_time(w), t); /* nothing written */
        one.iov_len = max;
        ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, &one, 1, 0), 0);
        /* one iovec per octet range, split by max_seg: 65536 + 100 octets -> 2 segments */
        struct iovec parts[2] = {{big, 65536}, {big + 65536, 100}};
        ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, parts, 2, max), 0);
        ASSERT_EQ(iwarp_pcap_writer_close(w), 0);

        static struct stream_summary s;
        summarize(path, &s);
        ASSERT_EQ(s.packets, 3);
        ASSERT_EQ(s.segments[0], 3);
        ASSERT_EQ(s.len[0], max + sizeof big);
        ASSERT_MEM_EQ(s.data[0], big, max);
        ASSERT_MEM_EQ(s.data[0] + max, big, sizeof big);
        unlink(path);
    }
}

TEST(connection_state_and_arguments)
{
    char path[64];
    tmp_path(path, sizeof path);
    struct iwarp_pcap_writer *w = open_writer(path);
    struct iwarp_pcap_tcp_end ce, se;
    make_ends(4, &ce, &se);
    struct iwarp_pcap_tcp c;
    ASSERT_EQ(iwarp_pcap_tcp_init(&c, w, 5, &ce, &se), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pcap_tcp_init(&c, NULL, 4, &ce, &se), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pcap_tcp_init(&c, w, 4, &ce, &se), 0);
    uint8_t b[4] = {1, 2, 3, 4};
    struct iovec iov = {b, 4}, empty = {NULL, 0};
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, NULL, 0, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, &empty, 1, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, (enum iwarp_pcap_side)2, &iov, 1, 0), IWARP_ERR_INVAL);
    /* a capture starting mid-connection: data without a handshake, then no handshake */
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_SERVER, &iov, 1, 0), 0);
    ASSERT_EQ(iwarp_pcap_tcp_handshake(&c), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_pcap_tcp_fin(&c, IWARP_PCAP_SERVER), 0);
    ASSERT_EQ(iwarp_pcap_tcp_fin(&c, IWARP_PCAP_SERVER), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_SERVER, &iov, 1, 0), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, &iov, 1, 0), 0); /* half-close */
    ASSERT_EQ(iwarp_pcap_tcp_rst(&c, IWARP_PCAP_CLIENT), 0);
    ASSERT_EQ(iwarp_pcap_tcp_rst(&c, IWARP_PCAP_SERVER), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_pcap_tcp_ack(&c, IWARP_PCAP_SERVER), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, &iov, 1, 0), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_pcap_writer_close(w), 0);

    /* what was written: data S->C, FIN S, data C->S acknowledging the FIN, RST C */
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet p;
    const struct {
        uint16_t sport;
        uint32_t seq, ack;
        uint16_t flags;
        size_t len;
    } want[] = {
        {SERVER_PORT, SERVER_ISN + 1, CLIENT_ISN + 1, 0x18, 4},
        {SERVER_PORT, SERVER_ISN + 5, CLIENT_ISN + 1, 0x11, 0},
        {CLIENT_PORT, CLIENT_ISN + 1, SERVER_ISN + 6, 0x18, 4},
        {CLIENT_PORT, CLIENT_ISN + 5, SERVER_ISN + 6, 0x14, 0},
    };
    for (size_t i = 0; i < 4; i++) {
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
        ASSERT_EQ(p.pkt.sport, want[i].sport);
        ASSERT_EQ_U(p.pkt.seq, want[i].seq);
        ASSERT_EQ_U(p.pkt.ack, want[i].ack);
        ASSERT_EQ_U(p.pkt.tcp_flags, want[i].flags);
        ASSERT_EQ(p.pkt.payload_len, want[i].len);
    }
    ASSERT_EQ(iwarp_pcap_reader_next(r, &p), IWARP_ERR_PCAP_END);
    iwarp_pcap_reader_close(r);
    unlink(path);
}

/* Sequence numbers wrap modulo 2^32 (RFC 9293 §3.4). */
TEST(sequence_wraps)
{
    char path[64];
    tmp_path(path, sizeof path);
    struct iwarp_pcap_writer *w = open_writer(path);
    struct iwarp_pcap_tcp_end ce, se;
    make_ends(4, &ce, &se);
    ce.isn = 0xFFFFFFFEu;
    struct iwarp_pcap_tcp c;
    ASSERT_EQ(iwarp_pcap_tcp_init(&c, w, 4, &ce, &se), 0);
    ASSERT_EQ(iwarp_pcap_tcp_handshake(&c), 0);
    uint8_t b[8] = {0};
    struct iovec iov = {b, 8};
    ASSERT_EQ(iwarp_pcap_tcp_send(&c, IWARP_PCAP_CLIENT, &iov, 1, 3), 0);
    ASSERT_EQ(iwarp_pcap_tcp_ack(&c, IWARP_PCAP_SERVER), 0);
    ASSERT_EQ(iwarp_pcap_writer_close(w), 0);
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet p;
    const uint32_t seqs[] = {0xFFFFFFFEu, SERVER_ISN, 0xFFFFFFFFu, 0xFFFFFFFFu, 2, 5};
    for (size_t i = 0; i < 6; i++) {
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
        ASSERT_EQ_U(p.pkt.seq, seqs[i]);
    }
    ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
    ASSERT_EQ_U(p.pkt.ack, 7u); /* 0xFFFFFFFF + 8 */
    iwarp_pcap_reader_close(r);
    unlink(path);
}

TEST(timestamps)
{
    char path[64];
    tmp_path(path, sizeof path);
    struct iwarp_pcap_writer *w = open_writer(path);
    ASSERT_EQ(iwarp_pcap_writer_time(w), UINT64_C(1700000000000000000));
    const uint8_t f[60] = {0};
    ASSERT_EQ(iwarp_pcap_writer_frame(w, f, 60), 0);
    ASSERT_EQ(iwarp_pcap_writer_frame(w, f, 60), 0);
    iwarp_pcap_writer_set_time(w, UINT64_C(1234567890123456789), 0);
    ASSERT_EQ(iwarp_pcap_writer_frame(w, f, 60), 0);
    ASSERT_EQ(iwarp_pcap_writer_frame(w, f, 60), 0);
    ASSERT_EQ(iwarp_pcap_writer_frame(w, NULL, 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pcap_writer_flush(w), 0);
    ASSERT_STR_EQ(iwarp_pcap_writer_errtext(w), "");
    ASSERT_EQ(iwarp_pcap_writer_close(w), 0);
    const uint64_t want[4] = {UINT64_C(1700000000000000000), UINT64_C(1700000000000001000),
                              UINT64_C(1234567890123456789), UINT64_C(1234567890123456789)};
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet p;
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(iwarp_pcap_reader_next(r, &p), 0);
        ASSERT_EQ_U(p.ts_ns, want[i]);
        ASSERT_EQ(p.pkt.layer, IWARP_PKT_LAYER_LINK); /* ethertype 0: not IP */
    }
    iwarp_pcap_reader_close(r);
    unlink(path);
}

/* A full disk shows up as IWARP_ERR_IO with a text (the capture goes to /dev/full). */
TEST(write_error_reported)
{
    struct stat st;
    if (stat("/dev/full", &st) != 0) {
        printf("  SKIP: no /dev/full\n");
        return;
    }
    struct iwarp_pcap_writer *w = NULL;
    int rc = iwarp_pcap_writer_open(&w, "/dev/full", NULL, 0);
    if (rc == IWARP_ERR_PCAP) {
        /* libpcap writes the file header at open: a full device fails right there */
        printf("  open of /dev/full failed at the file header\n");
        return;
    }
    ASSERT_EQ(rc, 0);
    static uint8_t f[65536];
    for (int i = 0; i < 4 && rc == 0; i++)
        rc = iwarp_pcap_writer_frame(w, f, sizeof f);
    if (rc == 0)
        rc = iwarp_pcap_writer_flush(w);
    ASSERT_EQ(rc, IWARP_ERR_IO);
    ASSERT_TRUE(iwarp_pcap_writer_errtext(w)[0] != '\0');
    printf("  %s\n", iwarp_pcap_writer_errtext(w));
    ASSERT_EQ(iwarp_pcap_writer_close(w), IWARP_ERR_IO);
}
