/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace/trace_sctp (SCTP packets recorded as UDP datagrams, RFC 6951) and the UDP frame builder
 * under it (trace/trace_pkt): the builder reproduces gen_pcap.py's SCTP-over-UDP frame octet for
 * octet; packets written through a capture sink, both directions, IPv4 and IPv6, read back with
 * the pcap reader with every header field, the payload, the checksums and the timestamps
 * checked; a computed UDP checksum of zero goes out as 0xFFFF (RFC 768); size limits; the
 * process's size bound stops recording at a whole record and is reported once. Then what
 * `iwarp dump` reads SCTP with: the packet codec (trace/trace_sctp_pkt: chunk walk, padding,
 * malformed Lengths, DATA and INIT fields, CRC32c) and the association judge
 * (trace/trace_sctp_assoc: fragments, retransmissions, DDP-SSN order, sessions, RFC 5043 rules).
 */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "trace/pcap_reader.h"
#include "trace/trace_pkt.h"
#include "trace/trace_sctp.h"
#include "trace/trace_sctp_assoc.h"
#include "trace/trace_sctp_pkt.h"
#include "trace/trace_sink.h"
#include "util/bytes.h"
#include "wire/wire_sctp.h"
#include "wire/wire_segment.h"

/* gen_pcap.py good_sctp_udp frame 1 (also in test_trace_pkt.c): the INIT 40002 -> 19876 over
 * UDP 9899 -> 9899, IP ID 1, DF, TTL 64; UDP checksum 0x1fb7 (confirmed by tshark 4.0). */
static const char SCTP_UDP_V4[] = "000000000000 000000000000 0800"
                                  "4500 0044 0001 4000 4011 3ca6 7f000001 7f000001"
                                  "26ab 26ab 0030 1fb7"
                                  "9c42 4da4 00000000 83d72e64"
                                  "0100001c 11112222 00010000 000a000a 000003e8 c0060008 00000001";

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void tmp_path(char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/iwarp_test_sctp_XXXXXX");
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    close(fd);
}

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ASSERT_EQ(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    return a;
}

static struct sockaddr_in6 v6(const char *ip, uint16_t port)
{
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    ASSERT_EQ(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
    return a;
}

static struct iwarp_pcap_reader *open_reader(const char *path)
{
    struct iwarp_pcap_reader *r = NULL;
    char err[256] = "";
    ASSERT_EQ(iwarp_pcap_reader_open(&r, path, err, sizeof err), 0);
    ASSERT_EQ(iwarp_pcap_reader_link(r), IWARP_PKT_LINK_ETHERNET);
    return r;
}

/* A packet-like payload of n octets: a pattern that differs per packet. */
static uint8_t *pattern(size_t n, uint8_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    ASSERT_TRUE(p != NULL);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 13u + seed);
    return p;
}

/* ---- the builder ---- */

TEST(build_udp_matches_gen_pcap)
{
    uint8_t want[128], got[128];
    size_t n = harness_hex(SCTP_UDP_V4, want, sizeof want);
    struct iwarp_pkt_udp_dgram d;
    memset(&d, 0, sizeof d);
    d.ip_version = 4;
    d.src[0] = d.dst[0] = 127;
    d.src[3] = d.dst[3] = 1;
    d.ip_id = 1;
    d.ttl = 64;
    d.sport = d.dport = 9899;
    ASSERT_EQ(iwarp_pkt_udp_hdr_len(4), 42);
    ASSERT_EQ(iwarp_pkt_udp_hdr_len(6), 62);
    ASSERT_EQ(iwarp_pkt_udp_hdr_len(5), 0);
    memcpy(got + 42, want + 42, n - 42); /* the SCTP packet as payload */
    ASSERT_EQ(iwarp_pkt_build_udp(got, sizeof got, &d, n - 42), (iwarp_ssize)n);
    ASSERT_MEM_EQ(got, want, n);
}

TEST(build_udp_errors_and_limits)
{
    static uint8_t big[62 + 65527 + 1];
    struct iwarp_pkt_udp_dgram d;
    memset(&d, 0, sizeof d);
    d.ip_version = 4;
    ASSERT_EQ(iwarp_pkt_build_udp(NULL, 10, &d, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pkt_build_udp(big, sizeof big, NULL, 0), IWARP_ERR_INVAL);
    d.ip_version = 5;
    ASSERT_EQ(iwarp_pkt_build_udp(big, sizeof big, &d, 0), IWARP_ERR_INVAL);
    d.ip_version = 4; /* 65535 - 20 - 8 (RFC 791 Total Length) */
    ASSERT_EQ(iwarp_pkt_build_udp(big, sizeof big, &d, 65507), 42 + 65507);
    ASSERT_EQ(iwarp_pkt_build_udp(big, sizeof big, &d, 65508), IWARP_ERR_PKT_TOO_BIG);
    ASSERT_EQ(iwarp_pkt_build_udp(big, 41, &d, 0), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_pkt_build_udp(big, 42 + 9, &d, 10), IWARP_ERR_NOSPC);
    d.ip_version = 6; /* 65535 - 8 (RFC 8200 Payload Length counts the UDP header) */
    ASSERT_EQ(iwarp_pkt_build_udp(big, sizeof big, &d, 65527), 62 + 65527);
    ASSERT_EQ(iwarp_pkt_build_udp(big, sizeof big, &d, 65528), IWARP_ERR_PKT_TOO_BIG);
}

/* RFC 768: a checksum that computes to zero is sent as all ones (zero means "none"). Every
 * 2-octet payload is tried: exactly one sums to zero, and it verifies as 0xFFFF. */
TEST(build_udp_zero_checksum_sent_as_ones)
{
    uint8_t f[64];
    struct iwarp_pkt_udp_dgram d;
    memset(&d, 0, sizeof d);
    d.ip_version = 4;
    d.src[0] = d.dst[0] = 10;
    d.src[3] = 7;
    d.dst[3] = 9;
    d.ttl = 64;
    d.sport = 5000;
    d.dport = 6000;
    unsigned ones = 0;
    for (uint32_t x = 0; x <= 0xFFFFu; x++) {
        iwarp_store_be16(f + 42, (uint16_t)x);
        ASSERT_EQ(iwarp_pkt_build_udp(f, sizeof f, &d, 2), 44);
        uint16_t c = iwarp_load_be16(f + 40);
        ASSERT_NE(c, 0);
        if (c == 0xFFFFu) {
            ones++;
            struct iwarp_pkt p;
            ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, 44, 44, &p), 0);
            ASSERT_EQ(iwarp_pkt_verify_checksums(&p), 0);
        }
    }
    ASSERT_EQ(ones, 1);
}

/* ---- records through a sink ---- */

struct sent {
    bool out;
    bool ipv6;
    size_t len;
    uint8_t seed;
    uint64_t ago_ns; /* seen this long before the call */
};

TEST(packets_read_back_with_every_field)
{
    char path[64];
    tmp_path(path, sizeof path);
    struct iwarp_trace_sink *s = NULL;
    ASSERT_EQ(iwarp_trace_sink_open(&s, path, 0, NULL, 0), 0);
    struct sockaddr_in l4 = v4("127.0.0.1", 40001), p4 = v4("127.0.0.2", 9899);
    struct sockaddr_in6 l6 = v6("fd00::1", 50001), p6 = v6("fd00::2:3", 50002);
    /* both directions, odd and even lengths, empty, one larger than an Ethernet frame (written
     * whole) and the largest an IPv4 UDP datagram carries; the last one was seen 5 ms before
     * the call, earlier than the record ahead of it: it is stamped right after that one */
    const struct sent want[] = {
        {true, false, 48, 1, 0},    {false, false, 33, 2, 0},        {true, false, 0, 3, 0},
        {false, false, 9000, 4, 0}, {true, true, 61, 5, 0},          {false, true, 1452, 6, 0},
        {true, false, 65507, 7, 0}, {false, false, 100, 8, 5000000},
    };
    const size_t n = sizeof want / sizeof want[0];
    uint64_t lo[16], hi[16];
    for (size_t i = 0; i < n; i++) {
        uint8_t *pl = pattern(want[i].len, want[i].seed);
        const struct sockaddr *l =
            want[i].ipv6 ? (const struct sockaddr *)&l6 : (const struct sockaddr *)&l4;
        const struct sockaddr *p =
            want[i].ipv6 ? (const struct sockaddr *)&p6 : (const struct sockaddr *)&p4;
        lo[i] = clock_ns(CLOCK_REALTIME) - want[i].ago_ns;
        uint64_t seen = clock_ns(CLOCK_MONOTONIC) - want[i].ago_ns;
        ASSERT_EQ(iwarp_trace_sctp_pkt(s, want[i].out, l, p, pl, want[i].len, seen), 0);
        hi[i] = clock_ns(CLOCK_REALTIME) - want[i].ago_ns;
        free(pl);
    }
    ASSERT_EQ(iwarp_trace_sink_release(s), 0);

    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet pk;
    uint64_t prev_ts = 0;
    uint16_t prev_id = 0;
    size_t i = 0;
    int rc;
    while ((rc = iwarp_pcap_reader_next(r, &pk)) == 0) {
        ASSERT_TRUE(i < n);
        const struct sent *w = &want[i];
        const struct iwarp_pkt *d = &pk.pkt;
        size_t hdr = w->ipv6 ? 62u : 42u;
        ASSERT_EQ(pk.caplen, hdr + w->len);
        ASSERT_EQ(pk.wire_len, hdr + w->len);
        ASSERT_EQ(pk.decode_rc, 0);
        ASSERT_EQ(d->layer, IWARP_PKT_LAYER_L4);
        ASSERT_EQ(d->flags, 0); /* no fragment, nothing truncated */
        ASSERT_EQ(d->ethertype, w->ipv6 ? IWARP_PKT_ETHERTYPE_IPV6 : IWARP_PKT_ETHERTYPE_IPV4);
        ASSERT_EQ(d->ip_version, w->ipv6 ? 6 : 4);
        ASSERT_EQ(d->ip_proto, IWARP_PKT_IPPROTO_UDP);
        ASSERT_EQ(d->ttl, 64);
        ASSERT_EQ(d->l4_hdr_len, 8);
        /* source = local when outgoing, else the peer */
        const uint8_t *la, *pa;
        uint16_t lport, pport;
        if (w->ipv6) {
            la = l6.sin6_addr.s6_addr;
            pa = p6.sin6_addr.s6_addr;
            lport = 50001;
            pport = 50002;
        } else {
            la = (const uint8_t *)&l4.sin_addr;
            pa = (const uint8_t *)&p4.sin_addr;
            lport = 40001;
            pport = 9899;
        }
        size_t alen = w->ipv6 ? 16u : 4u;
        ASSERT_MEM_EQ(d->src, w->out ? la : pa, alen);
        ASSERT_MEM_EQ(d->dst, w->out ? pa : la, alen);
        ASSERT_EQ(d->sport, w->out ? lport : pport);
        ASSERT_EQ(d->dport, w->out ? pport : lport);
        ASSERT_EQ(d->payload_len, w->len);
        ASSERT_EQ(d->payload_wire_len, w->len);
        uint8_t *pl = pattern(w->len, w->seed);
        ASSERT_MEM_EQ(d->payload, pl, w->len);
        free(pl);
        /* IPv4 header checksum, UDP checksum over the pseudo-header (RFC 768, RFC 8200 §8.1) */
        ASSERT_EQ(iwarp_pkt_verify_checksums(d), 0);
        ASSERT_NE(d->checksum, 0);
        if (!w->ipv6) {
            ASSERT_EQ_U(iwarp_load_be16(d->ip + 6), 0x4000u); /* DF, offset 0 */
            ASSERT_TRUE(prev_id == 0 || d->ip_id == (uint16_t)(prev_id + 1u));
            prev_id = d->ip_id;
        }
        /* the wall-clock time of the moment given, never before the previous record */
        uint64_t want_lo = lo[i] > prev_ts ? lo[i] : prev_ts + 1u;
        uint64_t want_hi = (hi[i] > prev_ts ? hi[i] : prev_ts + 1u) + 1000000u;
        ASSERT_TRUE(pk.ts_ns + 1000000u >= want_lo);
        ASSERT_TRUE(pk.ts_ns <= want_hi);
        ASSERT_TRUE(pk.ts_ns > prev_ts);
        prev_ts = pk.ts_ns;
        i++;
    }
    ASSERT_EQ(rc, IWARP_ERR_PCAP_END);
    ASSERT_EQ(i, n);
    iwarp_pcap_reader_close(r);
    unlink(path);
}

/* now_ns 0 (llp_sctp before its first poll: the INIT of a connect) is stamped as now, not as the
 * wall-clock time of the monotonic clock's zero (the boot). */
TEST(an_unknown_time_is_stamped_now)
{
    char path[64];
    tmp_path(path, sizeof path);
    struct iwarp_trace_sink *s = NULL;
    ASSERT_EQ(iwarp_trace_sink_open(&s, path, 0, NULL, 0), 0);
    struct sockaddr_in l4 = v4("127.0.0.1", 40001), p4 = v4("127.0.0.2", 9899);
    uint8_t *pl = pattern(48, 1);
    uint64_t lo = clock_ns(CLOCK_REALTIME);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, (const struct sockaddr *)&l4,
                                   (const struct sockaddr *)&p4, pl, 48, 0),
              0);
    uint64_t hi = clock_ns(CLOCK_REALTIME);
    free(pl);
    ASSERT_EQ(iwarp_trace_sink_release(s), 0);
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet pk;
    ASSERT_EQ(iwarp_pcap_reader_next(r, &pk), 0);
    ASSERT_TRUE(pk.ts_ns + 1000000u >= lo); /* pcap keeps microseconds */
    ASSERT_TRUE(pk.ts_ns <= hi);
    iwarp_pcap_reader_close(r);
    unlink(path);
}

TEST(argument_errors_write_nothing)
{
    char path[64];
    tmp_path(path, sizeof path);
    struct iwarp_trace_sink *s = NULL;
    ASSERT_EQ(iwarp_trace_sink_open(&s, path, 0, NULL, 0), 0);
    struct sockaddr_in l4 = v4("127.0.0.1", 1), p4 = v4("127.0.0.1", 2);
    struct sockaddr_in6 p6 = v6("::1", 3);
    struct sockaddr un = {.sa_family = AF_UNIX};
    uint8_t pkt[16] = {0};
    uint64_t t = clock_ns(CLOCK_MONOTONIC);
    const struct sockaddr *L = (const struct sockaddr *)&l4, *P = (const struct sockaddr *)&p4;
    ASSERT_EQ(iwarp_trace_sctp_pkt(NULL, true, L, P, pkt, 16, t), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, NULL, P, pkt, 16, t), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, L, NULL, pkt, 16, t), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, L, P, NULL, 16, t), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, L, (const struct sockaddr *)&p6, pkt, 16, t),
              IWARP_ERR_INVAL); /* mixed families */
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, &un, &un, pkt, 16, t), IWARP_ERR_INVAL);
    uint8_t *big = calloc(1, 65508);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, false, L, P, big, 65508, t), IWARP_ERR_PKT_TOO_BIG);
    free(big);
    ASSERT_EQ(iwarp_trace_sink_release(s), 0);
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_size, 24); /* the file header only */
    unlink(path);
}

/* The process's bound: the record that does not fit is not written, the call that reached it
 * hears IWARP_ERR_TRACE_BOUND once, later ones IWARP_TRACE_SCTP_STOPPED; the file holds whole
 * records only. */
TEST(bound_stops_at_a_whole_record)
{
    char path[64];
    tmp_path(path, sizeof path);
    struct iwarp_trace_sink *s = NULL;
    /* file header 24 + 3 records of 16 + 42 + 100 = 158: room for three, not four */
    ASSERT_EQ(iwarp_trace_sink_open(&s, path, 24 + 3 * 158 + 100, NULL, 0), 0);
    struct sockaddr_in l4 = v4("127.0.0.1", 7), p4 = v4("127.0.0.1", 8);
    uint8_t pkt[100] = {1, 2, 3};
    const struct sockaddr *L = (const struct sockaddr *)&l4, *P = (const struct sockaddr *)&p4;
    uint64_t t = clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(iwarp_trace_sctp_pkt(s, i & 1, L, P, pkt, sizeof pkt, t), 0);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, L, P, pkt, sizeof pkt, t), IWARP_ERR_TRACE_BOUND);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, true, L, P, pkt, 1, t), IWARP_TRACE_SCTP_STOPPED);
    ASSERT_EQ(iwarp_trace_sctp_pkt(s, false, L, P, pkt, 1, t), IWARP_TRACE_SCTP_STOPPED);
    /* the capture on disk is valid already (flushed at the bound) */
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_size, 24 + 3 * 158);
    ASSERT_EQ(iwarp_trace_sink_release(s), 0);
    struct iwarp_pcap_reader *r = open_reader(path);
    struct iwarp_pcap_packet pk;
    int n = 0, rc;
    while ((rc = iwarp_pcap_reader_next(r, &pk)) == 0) {
        ASSERT_EQ(pk.caplen, 142);
        ASSERT_EQ(iwarp_pkt_verify_checksums(&pk.pkt), 0);
        n++;
    }
    ASSERT_EQ(rc, IWARP_ERR_PCAP_END);
    ASSERT_EQ(n, 3);
    iwarp_pcap_reader_close(r);
    unlink(path);
}

/* ---- the SCTP packet codec (trace/trace_sctp_pkt) ---- */

/* Appends one chunk (header, value, zero padding to 4: RFC 9260 §3.2) to buf at *n. */
static void put_chunk(uint8_t *buf, size_t *n, uint8_t type, uint8_t flags, const uint8_t *v,
                      size_t vlen)
{
    buf[*n] = type;
    buf[*n + 1] = flags;
    iwarp_store_be16(buf + *n + 2, (uint16_t)(4u + vlen));
    memcpy(buf + *n + 4, v, vlen);
    *n += 4u + vlen;
    while (*n % 4u)
        buf[(*n)++] = 0;
}

/* A DATA chunk's value: TSN, SID, SSN 0, PPID, user data. */
static size_t data_value(uint8_t *v, uint32_t tsn, uint16_t sid, uint32_t ppid, const uint8_t *u,
                         size_t ulen)
{
    iwarp_store_be32(v, tsn);
    iwarp_store_be16(v + 4, sid);
    iwarp_store_be16(v + 6, 0);
    iwarp_store_be32(v + 8, ppid);
    memcpy(v + 12, u, ulen);
    return 12u + ulen;
}

TEST(codec_chunks_padding_and_malformed_lengths)
{
    uint8_t area[64], v[32];
    size_t n = 0;
    memset(v, 0xab, sizeof v);
    put_chunk(area, &n, IWARP_SCTP_CHUNK_SACK, 0, v, 5); /* 9 octets + 3 of padding */
    put_chunk(area, &n, IWARP_SCTP_CHUNK_COOKIE_ECHO, 0x80, v, 4);
    ASSERT_EQ(n, 20);
    struct iwarp_sctp_chunk_iter it;
    struct iwarp_sctp_chunk c;
    iwarp_sctp_chunks_init(&it, area, n);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(c.type, IWARP_SCTP_CHUNK_SACK);
    ASSERT_EQ(c.length, 9);
    ASSERT_EQ(c.value_len, 5);
    ASSERT_EQ(c.offset, 0);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(c.type, IWARP_SCTP_CHUNK_COOKIE_ECHO);
    ASSERT_EQ(c.flags, 0x80);
    ASSERT_EQ(c.offset, 12);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 0);
    /* the last chunk's padding missing from the packet is tolerated */
    iwarp_sctp_chunks_init(&it, area, 9);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 0);
    /* Length below 4, Length past the packet, a cut chunk header: malformed, the walk ends */
    iwarp_store_be16(area + 14, 3);
    iwarp_sctp_chunks_init(&it, area, n);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), IWARP_ERR_PKT_MALFORMED);
    ASSERT_EQ(c.offset, 12);
    ASSERT_EQ(c.length, 3);
    ASSERT_TRUE(it.bad);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 0);
    iwarp_store_be16(area + 14, 9);
    iwarp_sctp_chunks_init(&it, area, n);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), IWARP_ERR_PKT_MALFORMED);
    iwarp_sctp_chunks_init(&it, area, 14);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), IWARP_ERR_PKT_MALFORMED);
    ASSERT_STR_EQ(iwarp_sctp_chunk_name(IWARP_SCTP_CHUNK_INIT_ACK), "INIT-ACK");
    ASSERT_STR_EQ(iwarp_sctp_chunk_name(IWARP_SCTP_CHUNK_I_DATA), "I-DATA");
    ASSERT_TRUE(iwarp_sctp_chunk_name(99) == NULL);
}

TEST(codec_data_and_init_fields)
{
    /* gen_pcap.py's INIT (SCTP_UDP_V4 above, after the UDP header): CRC32c and fields */
    uint8_t f[128];
    size_t n = harness_hex(SCTP_UDP_V4, f, sizeof f);
    const uint8_t *pkt = f + 42;
    size_t len = n - 42;
    struct iwarp_sctp_common h;
    ASSERT_EQ(iwarp_sctp_common_decode(pkt, len, &h), 0);
    ASSERT_EQ(h.sport, 40002);
    ASSERT_EQ(h.dport, 19876);
    ASSERT_EQ(h.vtag, 0);
    ASSERT_EQ_U(h.checksum, 0x642ed783u); /* sent least-significant octet first */
    ASSERT_TRUE(iwarp_sctp_crc_ok(pkt, len));
    f[42 + 20] ^= 1; /* the INIT's Initiate Tag */
    ASSERT_FALSE(iwarp_sctp_crc_ok(pkt, len));
    f[42 + 20] ^= 1;
    ASSERT_EQ(iwarp_sctp_common_decode(pkt, 11, &h), IWARP_ERR_SHORT);
    struct iwarp_sctp_chunk_iter it;
    struct iwarp_sctp_chunk c;
    iwarp_sctp_chunks_init(&it, pkt + 12, len - 12);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    struct iwarp_sctp_init in;
    ASSERT_EQ(iwarp_sctp_init_decode(&c, &in), 0);
    ASSERT_EQ_U(in.init_tag, 0x11112222u);
    ASSERT_EQ(in.a_rwnd, 65536);
    ASSERT_EQ(in.out_streams, 10);
    ASSERT_EQ(in.in_streams, 10);
    ASSERT_EQ(in.initial_tsn, 1000);
    ASSERT_TRUE(in.has_adaptation);
    ASSERT_EQ(in.adaptation, 1); /* RFC 5043 §5.1 */
    ASSERT_FALSE(in.has_cookie);
    /* RFC 5061 §4.2.7: the indication parameter is 8 octets; a parameter Length past the chunk */
    uint8_t *param = f + 42 + 12 + 20;
    iwarp_store_be16(param + 2, 6);
    ASSERT_EQ(iwarp_sctp_init_decode(&c, &in), IWARP_ERR_PKT_MALFORMED);
    iwarp_store_be16(param + 2, 12);
    ASSERT_EQ(iwarp_sctp_init_decode(&c, &in), IWARP_ERR_PKT_MALFORMED);
    ASSERT_EQ(in.initial_tsn, 1000); /* the fixed fields are filled in still */
    iwarp_store_be16(param, 0x0005); /* another parameter: no indication */
    iwarp_store_be16(param + 2, 8);
    ASSERT_EQ(iwarp_sctp_init_decode(&c, &in), 0);
    ASSERT_FALSE(in.has_adaptation);
    struct iwarp_sctp_data d;
    ASSERT_EQ(iwarp_sctp_data_decode(&c, &d), IWARP_ERR_INVAL); /* not DATA */

    uint8_t area[64], v[48];
    const uint8_t user[3] = {1, 2, 3};
    size_t an = 0;
    put_chunk(area, &an, IWARP_SCTP_CHUNK_DATA, 0x07, v, data_value(v, 77, 5, 16, user, 3));
    put_chunk(area, &an, IWARP_SCTP_CHUNK_DATA, 0x03, v, data_value(v, 78, 5, 16, user, 0));
    iwarp_sctp_chunks_init(&it, area, an);
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(iwarp_sctp_data_decode(&c, &d), 0);
    ASSERT_EQ(d.flags, IWARP_SCTP_DATA_U | IWARP_SCTP_DATA_B | IWARP_SCTP_DATA_E);
    ASSERT_EQ(d.tsn, 77);
    ASSERT_EQ(d.sid, 5);
    ASSERT_EQ(d.ppid, 16);
    ASSERT_EQ(d.data_len, 3);
    ASSERT_MEM_EQ(d.data, user, 3);
    /* RFC 9260 §6.2: no user data */
    ASSERT_EQ(iwarp_sctp_chunk_next(&it, &c), 1);
    ASSERT_EQ(iwarp_sctp_data_decode(&c, &d), IWARP_ERR_SHORT);
}

/* ---- the association judge (trace/trace_sctp_assoc) ---- */

struct judged {
    char lines[64][160];
    int n;
    int classes[IWARP_MS_CLASS_COUNT];
    int errors;
};

static void j_pdu(void *ctx, const struct iwarp_sa_pdu *p)
{
    struct judged *j = ctx;
    if (j->n == 64)
        return;
    if (p->kind == IWARP_SA_PDU_SEG && p->seg && p->seg->has_ddp)
        snprintf(j->lines[j->n++], sizeof j->lines[0], "#%llu seg sid=%u ssn=%d msn=%u frags=%u",
                 (unsigned long long)p->index, p->sid, p->ssn, p->seg->ddp.msn, p->fragments);
    else if (p->kind == IWARP_SA_PDU_CTL)
        snprintf(j->lines[j->n++], sizeof j->lines[0], "#%llu ctl sid=%u ssn=%d fc=%d",
                 (unsigned long long)p->index, p->sid, p->ssn, p->fc);
}

static void j_finding(void *ctx, const struct iwarp_sa_finding *f)
{
    struct judged *j = ctx;
    if (f->error) {
        j->errors++;
        j->classes[f->cls]++;
    }
}

/* A DATA chunk (one packet) of side with a DDP-SSN + user octets. */
static void feed_data(struct iwarp_sctp_assoc *a, unsigned side, uint32_t tsn, uint16_t sid,
                      uint32_t ppid, uint8_t flags, const uint8_t *u, size_t ulen)
{
    uint8_t area[256], v[240];
    size_t n = 0;
    put_chunk(area, &n, IWARP_SCTP_CHUNK_DATA, flags, v, data_value(v, tsn, sid, ppid, u, ulen));
    iwarp_sctp_assoc_packet(a, side, area, n, tsn);
}

/* DDP-SSN + an untagged Send (QN 0) with msn and 4 octets of payload. */
static size_t send_msg(uint8_t *u, uint16_t ssn, uint32_t msn)
{
    iwarp_store_be16(u, ssn);
    struct iwarp_wire_msg m = {.opcode = IWARP_RDMAP_OP_SEND, .last = true, .msn = msn};
    const uint8_t pl[4] = {9, 8, 7, 6};
    iwarp_ssize k = iwarp_wire_segment_encode(u + 2, 64, &m, pl, 4);
    ASSERT_TRUE(k > 0);
    return 2u + (size_t)k;
}

static size_t initiate(uint8_t *u, uint16_t ssn)
{
    struct iwarp_sctp_ctl c = {.ssn = ssn, .fc = IWARP_SCTP_FC_INITIATE};
    iwarp_ssize k = iwarp_sctp_ctl_encode(u, 64, &c);
    ASSERT_TRUE(k > 0);
    return (size_t)k;
}

TEST(assoc_fragments_duplicates_and_ddp_ssn_order)
{
    static const struct iwarp_sa_ops ops = {.pdu = j_pdu, .finding = j_finding};
    struct judged j;
    memset(&j, 0, sizeof j);
    struct iwarp_sctp_assoc *a = iwarp_sctp_assoc_new(&ops, &j);
    ASSERT_TRUE(a != NULL);
    uint8_t u[96];
    const uint8_t U = IWARP_SCTP_DATA_U, BE = IWARP_SCTP_DATA_B | IWARP_SCTP_DATA_E;
    feed_data(a, 0, 10, 0, 17, U | BE, u, initiate(u, 0));
    /* DDP-SSN 2 first (held), then 1: decoded as 1, 2 (RFC 5043 §6.1 normative order) */
    feed_data(a, 0, 11, 0, 16, U | BE, u, send_msg(u, 2, 2));
    feed_data(a, 0, 12, 0, 16, U | BE, u, send_msg(u, 1, 1));
    /* TSN 12 again (a retransmission): dropped, no duplicate DDP-SSN reported */
    feed_data(a, 0, 12, 0, 16, U | BE, u, send_msg(u, 1, 1));
    /* DDP-SSN 3 in three fragments arriving E, middle, B (RFC 9260 §6.9) */
    size_t n = send_msg(u, 3, 3);
    feed_data(a, 0, 15, 0, 16, U | IWARP_SCTP_DATA_E, u + 10, n - 10);
    feed_data(a, 0, 14, 0, 16, U, u + 5, 5);
    ASSERT_EQ(j.n, 3);
    feed_data(a, 0, 13, 0, 16, U | IWARP_SCTP_DATA_B, u, 5);
    ASSERT_EQ(j.n, 4);
    /* the same DDP-SSN from another TSN is a repeat */
    feed_data(a, 0, 16, 0, 16, U | BE, u, send_msg(u, 2, 2));
    ASSERT_EQ(j.classes[IWARP_MS_SCTP_SSN], 1);
    /* another stream counts its own DDP-SSNs and MSNs (RFC 5043 §6, RFC 5041 §5.3) */
    feed_data(a, 0, 17, 7, 16, U | BE, u, send_msg(u, 0, 1));
    /* a new session on stream 0: Initiate with DDP-SSN 0 again, then MSN 1 again */
    feed_data(a, 0, 18, 0, 17, U | BE, u, initiate(u, 0));
    feed_data(a, 0, 19, 0, 16, U | BE, u, send_msg(u, 1, 1));
    /* a gap: DDP-SSN 3 waits for 2, which never comes */
    feed_data(a, 0, 20, 0, 16, U | BE, u, send_msg(u, 3, 3));
    ASSERT_EQ(j.n, 7);
    iwarp_sctp_assoc_finish(a);
    ASSERT_EQ(j.n, 8);
    const char *want[] = {"#1 ctl sid=0 ssn=0 fc=1",          "#2 seg sid=0 ssn=1 msn=1 frags=1",
                          "#3 seg sid=0 ssn=2 msn=2 frags=1", "#4 seg sid=0 ssn=3 msn=3 frags=3",
                          "#5 seg sid=7 ssn=0 msn=1 frags=1", "#6 ctl sid=0 ssn=0 fc=1",
                          "#7 seg sid=0 ssn=1 msn=1 frags=1", "#8 seg sid=0 ssn=3 msn=3 frags=1"};
    for (int i = 0; i < 8; i++)
        ASSERT_STR_EQ(j.lines[i], want[i]);
    /* the repeat, the gap, and the MSN jump after the gap (MSN 2 is missing too); no
     * adaptation finding: no INIT seen is only a warning */
    ASSERT_EQ(j.classes[IWARP_MS_SCTP_SSN], 2);
    ASSERT_EQ(j.classes[IWARP_MS_MSN], 1);
    ASSERT_EQ(j.errors, 3);
    struct iwarp_sa_stats st;
    iwarp_sctp_assoc_stats(a, &st);
    ASSERT_EQ(st.dup_chunks, 1);
    ASSERT_EQ(st.reassembled, 1);
    ASSERT_EQ(st.held, 2);
    ASSERT_TRUE(iwarp_sctp_assoc_is_ddp(a));
    ASSERT_EQ(iwarp_sctp_assoc_initiator(a), 0); /* the session's Initiate, without an INIT */
    iwarp_sctp_assoc_free(a);
}

TEST(assoc_rfc5043_rules)
{
    static const struct iwarp_sa_ops ops = {.pdu = j_pdu, .finding = j_finding};
    struct judged j;
    memset(&j, 0, sizeof j);
    struct iwarp_sctp_assoc *a = iwarp_sctp_assoc_new(&ops, &j);
    uint8_t area[128], v[64], u[96];
    size_t n = 0;
    /* INIT with the DDP indication from side 0, INIT-ACK with another one from side 1 */
    uint8_t f[128];
    size_t fl = harness_hex(SCTP_UDP_V4, f, sizeof f);
    iwarp_sctp_assoc_packet(a, 0, f + 42 + 12, fl - 42 - 12, 1);
    f[42 + 12] = IWARP_SCTP_CHUNK_INIT_ACK;
    f[fl - 1] = 2; /* Adaptation Layer Indication 2 */
    iwarp_sctp_assoc_packet(a, 1, f + 42 + 12, fl - 42 - 12, 2);
    ASSERT_EQ(iwarp_sctp_assoc_initiator(a), 0);
    ASSERT_TRUE(iwarp_sctp_assoc_is_ddp(a)); /* announced by the INIT */
    const uint8_t U = IWARP_SCTP_DATA_U, BE = IWARP_SCTP_DATA_B | IWARP_SCTP_DATA_E;
    /* TSNs from the INIT's Initial TSN (1000) */
    feed_data(a, 0, 1000, 0, 17, U | BE, u, initiate(u, 0));
    feed_data(a, 0, 1001, 0, 16, BE, u, send_msg(u, 1, 1)); /* RFC 5043 §10: not unordered */
    feed_data(a, 0, 1002, 0, 51, U | BE, u, 4);             /* RFC 5043 §5.1: PPID 51 */
    const uint8_t bad_fc[4] = {0, 2, 0, 9};
    feed_data(a, 0, 1003, 0, 17, U | BE, bad_fc, 4); /* §5.2.3: function code 9 */
    /* an I-DATA chunk, and a chunk whose Length runs past the packet (RFC 9260 §3.2) */
    put_chunk(area, &n, IWARP_SCTP_CHUNK_I_DATA, 0, v, 20);
    put_chunk(area, &n, IWARP_SCTP_CHUNK_SACK, 0, v, 12);
    iwarp_store_be16(area + n - 14, 200);
    iwarp_sctp_assoc_packet(a, 1, area, n, 9);
    iwarp_sctp_assoc_finish(a);
    ASSERT_EQ(j.classes[IWARP_MS_SCTP_UNORDERED], 1);
    ASSERT_EQ(j.classes[IWARP_MS_SCTP_PPID], 1);
    ASSERT_EQ(j.classes[IWARP_MS_SCTP_CTL], 1);
    ASSERT_EQ(j.classes[IWARP_MS_SCTP_ADAPTATION], 1); /* the INIT-ACK's 2 */
    ASSERT_EQ(j.classes[IWARP_MS_SCTP], 2);            /* I-DATA, the Length */
    ASSERT_EQ(j.errors, 6);
    iwarp_sctp_assoc_free(a);
}
