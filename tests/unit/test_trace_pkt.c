/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace_pkt: header building against frames written by an independent implementation
 * (../shared/tools/wire-check/gen_pcap.py, checksums re-derived by hand below and verified by
 * tshark), decoding of every supported link layer, IPv4 options and fragments, IPv6 extension
 * headers, UDP and SCTP, truncated and malformed packets, and checksum verification.
 */
#include "harness.h"
#include "iwarp/errors.h"
#include "trace/trace_pkt.h"
#include "util/bytes.h"

/* gen_pcap.py frame 1 of tests/vectors/pcap/mpa_crc_genpcap.pcap: the client's SYN,
 * 127.0.0.1:40001 -> 127.0.0.1:19875, ISN 0x10000000, IP ID 1, DF, TTL 64, window 65535.
 * IPv4 header checksum by hand (RFC 1071): 4500+0028+0001+4000+4006+7f00+0001+7f00+0001 =
 * 0x1c331 -> 0xc332 -> ~ = 0x3ccd. TCP: pseudo 7f00+0001+7f00+0001+0006+0014 plus
 * 9c41+4da3+1000+5002+ffff = 0x34801 -> 0x4804 -> ~ = 0xb7fb. */
static const char SYN_V4[] = "000000000000 000000000000 0800"
                             "4500 0028 0001 4000 4006 3ccd 7f000001 7f000001"
                             "9c41 4da3 10000000 00000000 5002 ffff b7fb 0000";

/* gen_pcap.py frame 4: the MPA Request (wire-reference.md §1.8, C=1 Rev 1) as PSH|ACK. */
static const char REQ_V4[] = "000000000000 000000000000 0800"
                             "4500 003c 0004 4000 4006 3cb6 7f000001 7f000001"
                             "9c41 4da3 10000001 20000001 5018 ffff fa48 0000"
                             "4d504120494420526571204672616d65 40 01 0000";

/* The same Request over IPv6 ::1 -> ::1 (RFC 8200 §3; TCP checksum with the RFC 8200 §8.1
 * pseudo-header computed by gen_pcap.inet_csum and confirmed "correct" by tshark 4.0). */
static const char REQ_V6[] = "000000000000 000000000000 86dd"
                             "60000000 0028 06 40"
                             "00000000000000000000000000000001 00000000000000000000000000000001"
                             "9c41 4da3 10000001 20000001 5018 ffff f849 0000"
                             "4d504120494420526571204672616d65 40 01 0000";

/* gen_pcap.py good_sctp frame 1: SCTP INIT 40002 -> 19876, CRC32c sent least-significant first
 * (RFC 9260 Appendix A), Adaptation Layer Indication 1 (RFC 5043 §3.1). */
static const char SCTP_INIT_V4[] = "000000000000 000000000000 0800"
                                   "4500 003c 0001 4000 4084 3c3b 7f000001 7f000001"
                                   "9c42 4da4 00000000 83d72e64"
                                   "0100001c 11112222 00010000 000a000a 000003e8 c0060008 00000001";

/* gen_pcap.py good_sctp_udp frame 1: the same INIT over UDP 9899 (RFC 6951). */
static const char SCTP_UDP_V4[] = "000000000000 000000000000 0800"
                                  "4500 0044 0001 4000 4011 3ca6 7f000001 7f000001"
                                  "26ab 26ab 0030 1fb7"
                                  "9c42 4da4 00000000 83d72e64"
                                  "0100001c 11112222 00010000 000a000a 000003e8 c0060008 00000001";

static const uint8_t LOOPBACK4[4] = {127, 0, 0, 1};
static const uint8_t MPA_REQ[20] = {'M', 'P', 'A', ' ', 'I', 'D', ' ',  'R',  'e',  'q',
                                    ' ', 'F', 'r', 'a', 'm', 'e', 0x40, 0x01, 0x00, 0x00};

static size_t hex(const char *h, uint8_t *buf, size_t cap)
{
    return harness_hex(h, buf, cap);
}

static void decode_ok(enum iwarp_pkt_link link, const uint8_t *p, size_t n, struct iwarp_pkt *d)
{
    ASSERT_EQ(iwarp_pkt_decode(link, p, n, n, d), 0);
}

/* ---- checksum primitive ---- */

/* RFC 1071 §3 numerical example: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 (checksum 0x220d). */
TEST(csum_rfc1071_example)
{
    const uint8_t b[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    ASSERT_EQ_U(iwarp_pkt_csum_add(0, b, 8), 0xddf2u);
    ASSERT_EQ_U(iwarp_pkt_csum_fold(iwarp_pkt_csum_add(0, b, 8)), 0x220du);
    /* in two even pieces */
    ASSERT_EQ_U(iwarp_pkt_csum_add(iwarp_pkt_csum_add(0, b, 4), b + 4, 4), 0xddf2u);
    /* an odd tail is padded with a zero octet */
    const uint8_t odd[3] = {0x12, 0x34, 0x56};
    ASSERT_EQ_U(iwarp_pkt_csum_add(0, odd, 3), 0x1234u + 0x5600u);
    ASSERT_EQ_U(iwarp_pkt_csum_fold(0xffffu), 0x0000u);
}

/* ---- builder against the independent frames ---- */

static struct iwarp_pkt_tcp_seg seg_v4(uint32_t seq, uint32_t ack, uint16_t flags, uint16_t id)
{
    struct iwarp_pkt_tcp_seg s;
    memset(&s, 0, sizeof s);
    s.ip_version = 4;
    memcpy(s.src, LOOPBACK4, 4);
    memcpy(s.dst, LOOPBACK4, 4);
    s.ip_id = id;
    s.ttl = 64;
    s.sport = 40001;
    s.dport = 19875;
    s.seq = seq;
    s.ack = ack;
    s.tcp_flags = flags;
    s.window = 65535;
    return s;
}

TEST(build_syn_v4_matches_gen_pcap)
{
    uint8_t want[128], got[128];
    size_t n = hex(SYN_V4, want, sizeof want);
    struct iwarp_pkt_tcp_seg s = seg_v4(0x10000000u, 0, IWARP_PKT_TCP_SYN, 1);
    ASSERT_EQ(iwarp_pkt_tcp_hdr_len(4), 54);
    ASSERT_EQ(iwarp_pkt_build_tcp(got, sizeof got, &s, 0), (iwarp_ssize)n);
    ASSERT_MEM_EQ(got, want, n);
}

TEST(build_data_v4_matches_gen_pcap)
{
    uint8_t want[128], got[128];
    size_t n = hex(REQ_V4, want, sizeof want);
    struct iwarp_pkt_tcp_seg s =
        seg_v4(0x10000001u, 0x20000001u, IWARP_PKT_TCP_PSH | IWARP_PKT_TCP_ACK, 4);
    memcpy(got + 54, MPA_REQ, sizeof MPA_REQ);
    ASSERT_EQ(iwarp_pkt_build_tcp(got, sizeof got, &s, sizeof MPA_REQ), (iwarp_ssize)n);
    ASSERT_MEM_EQ(got, want, n);
}

TEST(build_data_v6_matches_reference)
{
    uint8_t want[128], got[128];
    size_t n = hex(REQ_V6, want, sizeof want);
    struct iwarp_pkt_tcp_seg s =
        seg_v4(0x10000001u, 0x20000001u, IWARP_PKT_TCP_PSH | IWARP_PKT_TCP_ACK, 4);
    s.ip_version = 6;
    memset(s.src, 0, 16);
    memset(s.dst, 0, 16);
    s.src[15] = 1;
    s.dst[15] = 1;
    ASSERT_EQ(iwarp_pkt_tcp_hdr_len(6), 74);
    memcpy(got + 74, MPA_REQ, sizeof MPA_REQ);
    ASSERT_EQ(iwarp_pkt_build_tcp(got, sizeof got, &s, sizeof MPA_REQ), (iwarp_ssize)n);
    ASSERT_MEM_EQ(got, want, n);
}

TEST(build_errors)
{
    static uint8_t big[54 + 65496];
    struct iwarp_pkt_tcp_seg s = seg_v4(1, 2, IWARP_PKT_TCP_ACK, 1);
    /* RFC 791 §3.1: Total Length is 16 bits, so 65535 - 20 - 20 octets of payload at most */
    ASSERT_EQ(iwarp_pkt_build_tcp(big, sizeof big, &s, 65496), IWARP_ERR_PKT_TOO_BIG);
    ASSERT_EQ(iwarp_pkt_build_tcp(big, sizeof big, &s, 65495), 54 + 65495);
    ASSERT_EQ(iwarp_pkt_build_tcp(big, 53, &s, 0), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_pkt_build_tcp(big, 60, &s, 7), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_pkt_build_tcp(NULL, 60, &s, 0), IWARP_ERR_INVAL);
    s.ip_version = 5;
    ASSERT_EQ(iwarp_pkt_build_tcp(big, sizeof big, &s, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pkt_tcp_hdr_len(5), 0);
    s.ip_version = 6; /* RFC 8200 §3: Payload Length counts the TCP header only */
    ASSERT_EQ(iwarp_pkt_build_tcp(big, sizeof big, &s, 65516), IWARP_ERR_PKT_TOO_BIG);
}

/* ---- decoding ---- */

TEST(decode_syn_v4_fields)
{
    uint8_t f[128];
    size_t n = hex(SYN_V4, f, sizeof f);
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.flags, 0);
    ASSERT_EQ_U(d.ethertype, 0x0800u);
    ASSERT_EQ(d.ip_version, 4);
    ASSERT_EQ(d.ip_proto, 6);
    ASSERT_EQ(d.ttl, 64);
    ASSERT_EQ(d.ip_id, 1);
    ASSERT_EQ(d.frag_offset, 0);
    ASSERT_MEM_EQ(d.src, LOOPBACK4, 4);
    ASSERT_MEM_EQ(d.dst, LOOPBACK4, 4);
    ASSERT_TRUE(d.ip == f + 14);
    ASSERT_EQ(d.ip_hdr_len, 20);
    ASSERT_EQ(d.l4_len, 20);
    ASSERT_EQ(d.l4_wire_len, 20);
    ASSERT_EQ(d.sport, 40001);
    ASSERT_EQ(d.dport, 19875);
    ASSERT_EQ_U(d.seq, 0x10000000u);
    ASSERT_EQ_U(d.ack, 0);
    ASSERT_EQ_U(d.tcp_flags, IWARP_PKT_TCP_SYN);
    ASSERT_EQ(d.window, 65535);
    ASSERT_EQ_U(d.checksum, 0xb7fbu);
    ASSERT_EQ(d.l4_hdr_len, 20);
    ASSERT_EQ(d.payload_len, 0);
    ASSERT_EQ(d.payload_wire_len, 0);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0);
}

TEST(decode_data_v6_fields)
{
    uint8_t f[128];
    size_t n = hex(REQ_V6, f, sizeof f);
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.ip_version, 6);
    ASSERT_EQ(d.ip_proto, 6);
    ASSERT_EQ(d.ttl, 64);
    ASSERT_EQ(d.src[15], 1);
    ASSERT_EQ(d.dst[15], 1);
    ASSERT_EQ(d.ip_hdr_len, 40);
    ASSERT_EQ_U(d.seq, 0x10000001u);
    ASSERT_EQ_U(d.ack, 0x20000001u);
    ASSERT_EQ_U(d.tcp_flags, IWARP_PKT_TCP_PSH | IWARP_PKT_TCP_ACK);
    ASSERT_EQ(d.payload_len, 20);
    ASSERT_EQ(d.payload_wire_len, 20);
    ASSERT_MEM_EQ(d.payload, MPA_REQ, 20);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0);
}

/* Ethernet minimum-size padding after the IP packet is not payload (RFC 791 Total Length). */
TEST(decode_ethernet_padding_ignored)
{
    uint8_t f[128];
    size_t n = hex(SYN_V4, f, sizeof f);
    memset(f + n, 0xEE, 6);
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n + 6, &d);
    ASSERT_EQ(d.payload_len, 0);
    ASSERT_EQ(d.flags, 0);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0);
}

/* Builds link header + the IPv4 packet of REQ_V4 into out; returns the length. */
static size_t with_link(const uint8_t *link_hdr, size_t link_len, uint8_t *out)
{
    uint8_t f[128];
    size_t n = hex(REQ_V4, f, sizeof f);
    if (link_len > 0)
        memcpy(out, link_hdr, link_len);
    memcpy(out + link_len, f + 14, n - 14);
    return link_len + n - 14;
}

static void expect_mpa_req_v4(const struct iwarp_pkt *d)
{
    ASSERT_EQ(d->layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ_U(d->ethertype, 0x0800u);
    ASSERT_EQ(d->sport, 40001);
    ASSERT_EQ_U(d->seq, 0x10000001u);
    ASSERT_EQ(d->payload_len, 20);
    ASSERT_MEM_EQ(d->payload, MPA_REQ, 20);
    ASSERT_EQ(iwarp_pkt_verify_checksums(d), 0);
}

TEST(decode_link_types)
{
    uint8_t f[160];
    struct iwarp_pkt d;
    size_t n;
    /* LINKTYPE_NULL: AF_INET (2) in the capturing host's order, both orders */
    const uint8_t null_le[4] = {2, 0, 0, 0}, null_be[4] = {0, 0, 0, 2};
    n = with_link(null_le, 4, f);
    decode_ok(IWARP_PKT_LINK_NULL, f, n, &d);
    expect_mpa_req_v4(&d);
    n = with_link(null_be, 4, f);
    decode_ok(IWARP_PKT_LINK_NULL, f, n, &d);
    expect_mpa_req_v4(&d);
    /* LINKTYPE_LOOP: network order */
    n = with_link(null_be, 4, f);
    decode_ok(IWARP_PKT_LINK_LOOP, f, n, &d);
    expect_mpa_req_v4(&d);
    /* LINKTYPE_LINUX_SLL: outgoing (4), ARPHRD_LOOPBACK (772), 6 address octets, IPv4 */
    const uint8_t sll[16] = {0, 4, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00};
    n = with_link(sll, 16, f);
    decode_ok(IWARP_PKT_LINK_LINUX_SLL, f, n, &d);
    expect_mpa_req_v4(&d);
    /* LINKTYPE_LINUX_SLL2: protocol first, then reserved, ifindex, ARPHRD, type, addr len */
    const uint8_t sll2[20] = {0x08, 0x00, 0, 0, 0, 0, 0, 1, 0x03, 0x04,
                              4,    6,    0, 0, 0, 0, 0, 0, 0,    0};
    n = with_link(sll2, 20, f);
    decode_ok(IWARP_PKT_LINK_LINUX_SLL2, f, n, &d);
    expect_mpa_req_v4(&d);
    /* raw IP, and raw IPv4 */
    n = with_link(NULL, 0, f);
    decode_ok(IWARP_PKT_LINK_RAW, f, n, &d);
    expect_mpa_req_v4(&d);
    decode_ok(IWARP_PKT_LINK_IPV4, f, n, &d);
    expect_mpa_req_v4(&d);
    /* 802.1Q tag, then an 802.1ad + 802.1Q stack */
    const uint8_t vlan[18] = {0, 0, 0, 0,    0,    0,    0,    0,    0,
                              0, 0, 0, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00};
    n = with_link(vlan, 18, f);
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    expect_mpa_req_v4(&d);
    const uint8_t qinq[22] = {0, 0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                              0, 0x88, 0xa8, 0x00, 0x07, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00};
    n = with_link(qinq, 22, f);
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    expect_mpa_req_v4(&d);
}

TEST(decode_link_ipv6_variants)
{
    uint8_t v6[160], f[200];
    size_t n = hex(REQ_V6, v6, sizeof v6) - 14;
    struct iwarp_pkt d;
    /* raw */
    decode_ok(IWARP_PKT_LINK_RAW, v6 + 14, n, &d);
    ASSERT_EQ(d.ip_version, 6);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    decode_ok(IWARP_PKT_LINK_IPV6, v6 + 14, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    /* LINKTYPE_NULL with the AF_INET6 values of Linux (10), FreeBSD (28) and Darwin (30) */
    const uint8_t afs[3] = {10, 28, 30};
    for (int i = 0; i < 3; i++) {
        memset(f, 0, 4);
        f[0] = afs[i];
        memcpy(f + 4, v6 + 14, n);
        decode_ok(IWARP_PKT_LINK_NULL, f, n + 4, &d);
        ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
        ASSERT_EQ_U(d.ethertype, 0x86DDu);
    }
    /* SLL carrying IPv6 */
    const uint8_t sll[16] = {0, 0, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0x86, 0xdd};
    memcpy(f, sll, 16);
    memcpy(f + 16, v6 + 14, n);
    decode_ok(IWARP_PKT_LINK_LINUX_SLL, f, n + 16, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0);
}

TEST(decode_non_ip_stops_at_link)
{
    uint8_t f[64] = {0};
    struct iwarp_pkt d;
    f[12] = 0x08;
    f[13] = 0x06; /* ARP */
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, 42, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_LINK);
    ASSERT_EQ_U(d.ethertype, 0x0806u);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), IWARP_ERR_SHORT);
    /* LINKTYPE_NULL with an unknown family */
    f[0] = 99;
    decode_ok(IWARP_PKT_LINK_NULL, f, 30, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_LINK);
    ASSERT_EQ(d.ethertype, 0);
}

/* IPv4 with a 4-octet option (IHL 6): header checksum recomputed here by the RFC 1071 sum. */
TEST(decode_ipv4_options)
{
    uint8_t f[160], g[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    memcpy(g, f, 34);
    g[34] = 0x01; /* RFC 791 §3.1: No Operation options */
    g[35] = 0x01;
    g[36] = 0x01;
    g[37] = 0x00; /* End of Option List */
    memcpy(g + 38, f + 34, n - 34);
    g[14] = 0x46;
    iwarp_store_be16(g + 16, (uint16_t)(iwarp_load_be16(f + 16) + 4));
    iwarp_store_be16(g + 24, 0);
    iwarp_store_be16(g + 24, iwarp_pkt_csum_fold(iwarp_pkt_csum_add(0, g + 14, 24)));
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, g, n + 4, &d);
    ASSERT_EQ(d.ip_hdr_len, 24);
    expect_mpa_req_v4(&d);
}

TEST(decode_ipv4_fragments)
{
    uint8_t f[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    struct iwarp_pkt d;
    /* first fragment: MF set, offset 0; the TCP header is decoded, the packet flagged */
    iwarp_store_be16(f + 20, 0x2000);
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.flags, IWARP_PKT_F_FRAGMENT);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), IWARP_ERR_PKT_CSUM); /* header changed */
    /* a non-first fragment (offset 185 * 8): no L4 header in it */
    iwarp_store_be16(f + 20, 185);
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    ASSERT_EQ(d.flags, IWARP_PKT_F_FRAGMENT | IWARP_PKT_F_NONFIRST_FRAG);
    ASSERT_EQ(d.frag_offset, 185);
    ASSERT_EQ(d.ip_proto, 6);
    ASSERT_EQ(d.l4_len, 40);
    ASSERT_EQ(d.sport, 0);
    /* a first fragment too short for the TCP header (8 octets of it) */
    iwarp_store_be16(f + 20, 0x2000);
    iwarp_store_be16(f + 16, 28);
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, 42, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    ASSERT_EQ(d.flags, IWARP_PKT_F_FRAGMENT);
}

/* IPv6 with Hop-by-Hop (8 octets, PadN) and Destination Options (16 octets) before TCP. */
TEST(decode_ipv6_extension_headers)
{
    uint8_t v6[160], f[200];
    size_t n = hex(REQ_V6, v6, sizeof v6);
    memcpy(f, v6, 54);
    f[20] = 0; /* Next Header: Hop-by-Hop */
    iwarp_store_be16(f + 18, (uint16_t)(40 + 24));
    const uint8_t hbh[8] = {60, 0, 1, 4, 0, 0, 0, 0};                    /* -> Dest Options */
    const uint8_t dst[16] = {6, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; /* -> TCP, PadN */
    memcpy(f + 54, hbh, 8);
    memcpy(f + 62, dst, 16);
    memcpy(f + 78, v6 + 54, n - 54);
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n + 24, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.ip_proto, 6);
    ASSERT_EQ(d.ip_hdr_len, 64);
    ASSERT_EQ(d.l4_wire_len, 40);
    ASSERT_EQ_U(d.seq, 0x10000001u);
    ASSERT_MEM_EQ(d.payload, MPA_REQ, 20);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0); /* the pseudo-header counts TCP only */
    /* ESP (RFC 4303) is opaque: decoding stops at IP with ip_proto 50 */
    f[54] = 50;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n + 24, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    ASSERT_EQ(d.ip_proto, 50);
    ASSERT_EQ(d.ip_hdr_len, 48);
    /* an extension header running past Payload Length is malformed */
    f[54] = 60;
    f[63] = 200;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, n + 24, n + 24, &d),
              IWARP_ERR_PKT_MALFORMED);
    /* ... and one cut by the capture is truncated */
    f[63] = 1;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, 60, n + 24, &d), 0);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    ASSERT_TRUE(d.flags & IWARP_PKT_F_TRUNCATED);
}

TEST(decode_ipv6_fragment_header)
{
    uint8_t v6[160], f[200];
    size_t n = hex(REQ_V6, v6, sizeof v6);
    memcpy(f, v6, 54);
    f[20] = 44; /* Fragment (RFC 8200 §4.5) */
    iwarp_store_be16(f + 18, (uint16_t)(40 + 8));
    const uint8_t frag_first[8] = {6, 0, 0x00, 0x01, 0, 0, 0, 7}; /* offset 0, M=1 */
    memcpy(f + 54, frag_first, 8);
    memcpy(f + 62, v6 + 54, n - 54);
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n + 8, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.flags, IWARP_PKT_F_FRAGMENT);
    ASSERT_EQ(d.ip_proto, 6);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), IWARP_ERR_SHORT);
    f[56] = 0x05; /* Fragment Offset 0x0500 >> 3 = 160 units, M = 0 */
    f[57] = 0x00;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n + 8, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    ASSERT_EQ(d.flags, IWARP_PKT_F_FRAGMENT | IWARP_PKT_F_NONFIRST_FRAG);
    ASSERT_EQ(d.frag_offset, 160);
    ASSERT_EQ(d.ip_proto, 6);
}

TEST(decode_sctp_and_udp)
{
    uint8_t f[160];
    size_t n = hex(SCTP_INIT_V4, f, sizeof f);
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.ip_proto, 132);
    ASSERT_EQ(d.sport, 40002);
    ASSERT_EQ(d.dport, 19876);
    ASSERT_EQ_U(d.sctp_vtag, 0);
    ASSERT_EQ_U(d.checksum, 0x642ed783u);
    ASSERT_EQ(d.payload_len, 28);
    ASSERT_EQ(d.payload[0], 1); /* INIT chunk */
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0);
    f[n - 1] ^= 1;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), IWARP_ERR_PKT_CSUM);

    n = hex(SCTP_UDP_V4, f, sizeof f);
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.ip_proto, 17);
    ASSERT_EQ(d.sport, 9899);
    ASSERT_EQ(d.dport, 9899);
    ASSERT_EQ(d.payload_len, 40);
    ASSERT_EQ(d.payload_wire_len, 40);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0);
    /* RFC 768: checksum 0 over IPv4 means none was computed */
    iwarp_store_be16(f + 40, 0);
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), 0);
    /* UDP Length below 8 or beyond the IP payload */
    iwarp_store_be16(f + 38, 7);
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, n, n, &d), IWARP_ERR_PKT_MALFORMED);
    iwarp_store_be16(f + 38, 49);
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, n, n, &d), IWARP_ERR_PKT_MALFORMED);
}

TEST(decode_other_ip_protocol)
{
    uint8_t f[160];
    size_t n = hex(SYN_V4, f, sizeof f);
    f[23] = 1; /* ICMP */
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    ASSERT_EQ(d.ip_proto, 1);
    ASSERT_TRUE(d.l4 == f + 34);
    ASSERT_EQ(d.l4_len, 20);
}

/* A capture cut at every length: never malformed while the wire length is the full packet;
 * the deepest layer only grows with the cut; payload octets are what was captured. */
TEST(decode_truncated_every_length)
{
    uint8_t f[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    enum iwarp_pkt_layer prev = IWARP_PKT_LAYER_NONE;
    for (size_t cut = 0; cut <= n; cut++) {
        struct iwarp_pkt d;
        ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, cut, n, &d), 0);
        ASSERT_TRUE(d.layer >= prev);
        prev = d.layer;
        ASSERT_EQ(!!(d.flags & IWARP_PKT_F_TRUNCATED), cut < n);
        if (cut < 14)
            ASSERT_EQ(d.layer, IWARP_PKT_LAYER_NONE);
        else if (cut < 34)
            ASSERT_EQ(d.layer, IWARP_PKT_LAYER_LINK);
        else if (cut < 54)
            ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
        else {
            ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
            ASSERT_EQ(d.payload_len, cut - 54);
            ASSERT_EQ(d.payload_wire_len, 20);
            ASSERT_EQ(iwarp_pkt_verify_checksums(&d), cut < n ? IWARP_ERR_SHORT : 0);
        }
    }
}

/* The same cuts as whole packets (wire length = capture length): headers that announce more
 * than the packet has are malformed. */
TEST(decode_short_packets_malformed)
{
    uint8_t f[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    struct iwarp_pkt d;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, 10, 10, &d), IWARP_ERR_PKT_MALFORMED);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_NONE);
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, 30, 30, &d), IWARP_ERR_PKT_MALFORMED);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_LINK);
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, n - 1, n - 1, &d),
              IWARP_ERR_PKT_MALFORMED); /* Total Length beyond the frame */
}

TEST(decode_malformed_headers)
{
    uint8_t f[160], g[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    struct iwarp_pkt d;
    /* RFC 791 §3.1: Version must be 4 on an IPv4 ethertype */
    memcpy(g, f, n);
    g[14] = 0x65;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, g, n, n, &d), IWARP_ERR_PKT_MALFORMED);
    /* IHL below 5 */
    memcpy(g, f, n);
    g[14] = 0x44;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, g, n, n, &d), IWARP_ERR_PKT_MALFORMED);
    /* Total Length below IHL */
    memcpy(g, f, n);
    iwarp_store_be16(g + 16, 19);
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, g, n, n, &d), IWARP_ERR_PKT_MALFORMED);
    /* RFC 9293 §3.1: Data Offset below 5, and beyond the segment */
    memcpy(g, f, n);
    g[46] = 0x40;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, g, n, n, &d), IWARP_ERR_PKT_MALFORMED);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    g[46] = 0xb0;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, g, n, n, &d), IWARP_ERR_PKT_MALFORMED);
    /* raw IP of neither version */
    g[0] = 0x50;
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_RAW, g, 20, 20, &d), IWARP_ERR_PKT_MALFORMED);
    /* IPv6 Payload Length beyond the frame */
    uint8_t v6[160];
    size_t m = hex(REQ_V6, v6, sizeof v6);
    iwarp_store_be16(v6 + 18, 41);
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, v6, m, m, &d), IWARP_ERR_PKT_MALFORMED);
    /* bad arguments */
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, f, n, n, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, NULL, 4, 4, &d), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_pkt_decode((enum iwarp_pkt_link)99, f, n, n, &d), IWARP_ERR_INVAL);
}

/* TCP options are skipped: Data Offset 8 with MSS, SACK-permitted, window scale and NOPs. */
TEST(decode_tcp_options)
{
    uint8_t f[160], g[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    memcpy(g, f, 54);
    const uint8_t opts[12] = {2, 4, 0xff, 0xd7, 4, 2, 1, 3, 3, 10, 1, 1};
    memcpy(g + 54, opts, 12);
    memcpy(g + 66, f + 54, n - 54);
    g[46] = 0x80;
    iwarp_store_be16(g + 16, (uint16_t)(iwarp_load_be16(f + 16) + 12));
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, g, n + 12, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_EQ(d.l4_hdr_len, 32);
    ASSERT_EQ(d.payload_len, 20);
    ASSERT_MEM_EQ(d.payload, MPA_REQ, 20);
    /* cut inside the options: the header is incomplete, flagged truncated */
    ASSERT_EQ(iwarp_pkt_decode(IWARP_PKT_LINK_ETHERNET, g, 60, n + 12, &d), 0);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_IP);
    ASSERT_TRUE(d.flags & IWARP_PKT_F_TRUNCATED);
}

/* IPv4 Total Length 0 (a TSO super-packet captured before segmentation) takes the wire length. */
TEST(decode_ipv4_tso_zero_length)
{
    uint8_t f[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    iwarp_store_be16(f + 16, 0);
    struct iwarp_pkt d;
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(d.layer, IWARP_PKT_LAYER_L4);
    ASSERT_TRUE(d.flags & IWARP_PKT_F_LEN_FROM_WIRE);
    ASSERT_EQ(d.payload_len, 20);
}

TEST(verify_detects_corruption)
{
    uint8_t f[160];
    size_t n = hex(REQ_V4, f, sizeof f);
    struct iwarp_pkt d;
    f[n - 5] ^= 0x20; /* a payload bit */
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), IWARP_ERR_PKT_CSUM);
    f[n - 5] ^= 0x20;
    f[22] ^= 0x01; /* TTL */
    decode_ok(IWARP_PKT_LINK_ETHERNET, f, n, &d);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), IWARP_ERR_PKT_CSUM);
    uint8_t v6[160];
    size_t m = hex(REQ_V6, v6, sizeof v6);
    v6[30] ^= 0x01; /* source address: part of the pseudo-header */
    decode_ok(IWARP_PKT_LINK_ETHERNET, v6, m, &d);
    ASSERT_EQ(iwarp_pkt_verify_checksums(&d), IWARP_ERR_PKT_CSUM);
    ASSERT_EQ(iwarp_pkt_verify_checksums(NULL), IWARP_ERR_INVAL);
}
