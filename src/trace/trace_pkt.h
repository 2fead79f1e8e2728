/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packet headers for capture files: build Ethernet/IPv4/IPv6/TCP and UDP headers with correct
 * checksums, and decode captured link/IP/TCP/UDP/SCTP headers. Pure code: no I/O, no allocation.
 * The decoder is what the pcap reader (trace/pcap_reader.h) and the fuzzer run on captured bytes;
 * the builder is what the pcap writer (trace/pcap_writer.h) uses.
 *
 * References: Ethernet II / IEEE 802.1Q, RFC 791 (IPv4), RFC 8200 (IPv6), RFC 9293 (TCP),
 * RFC 768 (UDP), RFC 9260 (SCTP), RFC 1071 (Internet checksum), the pcap LINKTYPE_ registry
 * (https://www.tcpdump.org/linktypes.html).
 */
#ifndef IWARP_TRACE_TRACE_PKT_H
#define IWARP_TRACE_TRACE_PKT_H

#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"

/* Link layers a capture may use (pcap_reader maps the file's DLT_ value onto these). */
enum iwarp_pkt_link {
    IWARP_PKT_LINK_NULL,       /* BSD loopback: 4-octet address family, capturing host's order */
    IWARP_PKT_LINK_LOOP,       /* OpenBSD loopback: 4-octet address family, network order */
    IWARP_PKT_LINK_ETHERNET,   /* Ethernet II (DLT_EN10MB); 802.1Q/802.1ad tags are skipped */
    IWARP_PKT_LINK_LINUX_SLL,  /* Linux cooked v1, 16-octet header (tcpdump/tshark -i any) */
    IWARP_PKT_LINK_LINUX_SLL2, /* Linux cooked v2, 20-octet header */
    IWARP_PKT_LINK_RAW,        /* raw IP; the version nibble tells IPv4 from IPv6 */
    IWARP_PKT_LINK_IPV4,       /* raw IPv4 only */
    IWARP_PKT_LINK_IPV6,       /* raw IPv6 only */
};

/* Header sizes and fields used by both directions. */
#define IWARP_PKT_ETH_HDR_LEN        14u
#define IWARP_PKT_SLL_HDR_LEN        16u
#define IWARP_PKT_SLL2_HDR_LEN       20u
#define IWARP_PKT_IPV4_HDR_LEN       20u /* without options (RFC 791 §3.1: IHL >= 5) */
#define IWARP_PKT_IPV6_HDR_LEN       40u /* RFC 8200 §3 */
#define IWARP_PKT_TCP_HDR_LEN        20u /* without options (RFC 9293 §3.1: Data Offset >= 5) */
#define IWARP_PKT_UDP_HDR_LEN        8u
#define IWARP_PKT_SCTP_HDR_LEN       12u /* RFC 9260 §3.1 common header */
#define IWARP_PKT_ETHERTYPE_IPV4     0x0800u
#define IWARP_PKT_ETHERTYPE_IPV6     0x86DDu
#define IWARP_PKT_ETHERTYPE_VLAN     0x8100u /* IEEE 802.1Q */
#define IWARP_PKT_ETHERTYPE_QINQ     0x88A8u /* IEEE 802.1ad */
#define IWARP_PKT_IPPROTO_TCP        6u
#define IWARP_PKT_IPPROTO_UDP        17u
#define IWARP_PKT_IPPROTO_SCTP       132u
#define IWARP_PKT_IP_MAX_TOTAL_LEN   65535u /* 16-bit IPv4 Total Length / IPv6 Payload Length */
/* Largest TCP payload in one packet without TCP options: IPv4 Total Length counts the 20-octet
 * IP and 20-octet TCP headers; IPv6 Payload Length counts only the TCP header (RFC 8200 §3). */
#define IWARP_PKT_TCP_MAX_PAYLOAD_V4 (65535u - 20u - 20u)
#define IWARP_PKT_TCP_MAX_PAYLOAD_V6 (65535u - 20u)
/* Largest UDP payload in one packet: likewise with the 8-octet UDP header (RFC 768). */
#define IWARP_PKT_UDP_MAX_PAYLOAD_V4 (65535u - 20u - 8u)
#define IWARP_PKT_UDP_MAX_PAYLOAD_V6 (65535u - 8u)

/* TCP control bits (RFC 9293 §3.1; NS from RFC 3540, octet 12 bit 0, shown here as 0x100). */
#define IWARP_PKT_TCP_FIN 0x001u
#define IWARP_PKT_TCP_SYN 0x002u
#define IWARP_PKT_TCP_RST 0x004u
#define IWARP_PKT_TCP_PSH 0x008u
#define IWARP_PKT_TCP_ACK 0x010u
#define IWARP_PKT_TCP_URG 0x020u
#define IWARP_PKT_TCP_ECE 0x040u
#define IWARP_PKT_TCP_CWR 0x080u
#define IWARP_PKT_TCP_NS  0x100u

/* How far iwarp_pkt_decode() got: every header up to this layer was present and consistent. */
enum iwarp_pkt_layer {
    IWARP_PKT_LAYER_NONE, /* not even the link header */
    IWARP_PKT_LAYER_LINK, /* link header; ethertype says what it carries */
    IWARP_PKT_LAYER_IP,   /* IP header (and skipped IPv6 extension headers) */
    IWARP_PKT_LAYER_L4,   /* TCP, UDP or SCTP header */
};

/* iwarp_pkt.flags */
#define IWARP_PKT_F_TRUNCATED     0x1u /* the capture holds fewer octets than the headers announce */
#define IWARP_PKT_F_FRAGMENT      0x2u /* an IP fragment: the L4 payload here is incomplete */
#define IWARP_PKT_F_NONFIRST_FRAG 0x4u /* fragment offset is not zero: no L4 header in it */
/* IP length field 0 (IPv4 capture of a TSO/GSO super-packet, IPv6 jumbogram per RFC 2675): the IP
 * payload length was taken from the packet's wire length instead. */
#define IWARP_PKT_F_LEN_FROM_WIRE 0x8u

/* A decoded packet. Every pointer points into the buffer given to iwarp_pkt_decode(). Only the
 * fields of the layers up to `layer` are meaningful; deeper ones are zero, or partly filled when
 * iwarp_pkt_decode() returned an error. With layer == IP, ip_proto, l4 and l4_len describe an
 * IP payload whose L4 header is truncated or absent (non-first fragment, a protocol not decoded
 * here, or an IPv6 extension header cut by the capture: ip_proto then names that header). */
struct iwarp_pkt {
    enum iwarp_pkt_layer layer;
    uint32_t flags;       /* IWARP_PKT_F_* */
    uint16_t ethertype;   /* network protocol per the link layer: 0x0800, 0x86DD, ... */
    uint8_t ip_version;   /* 4 or 6 */
    uint8_t ip_proto;     /* IPv4 Protocol, or the IPv6 Next Header after extension headers */
    uint8_t ttl;          /* IPv4 TTL / IPv6 Hop Limit */
    uint16_t ip_id;       /* IPv4 Identification (0 for IPv6) */
    uint16_t frag_offset; /* fragment offset in 8-octet units (IPv4, or IPv6 Fragment header) */
    uint8_t src[16];      /* source address; IPv4 in the first 4 octets, the rest zero */
    uint8_t dst[16];      /* destination address, likewise */
    const uint8_t *ip;    /* IP header */
    size_t ip_hdr_len;    /* IPv4 header with options; IPv6 header plus skipped extensions */
    const uint8_t *l4;    /* IP payload (first octet after ip_hdr_len) */
    size_t l4_len;        /* captured octets of the IP payload */
    size_t l4_wire_len;   /* IP payload length per the IP header */
    /* TCP, UDP, SCTP (layer == L4) */
    uint16_t sport, dport;
    uint32_t seq, ack;       /* TCP */
    uint16_t tcp_flags;      /* IWARP_PKT_TCP_* */
    uint16_t window;         /* TCP */
    uint16_t urgent;         /* TCP */
    uint8_t l4_hdr_len;      /* TCP Data Offset * 4 (options included), 8 (UDP) or 12 (SCTP) */
    uint32_t sctp_vtag;      /* SCTP Verification Tag */
    uint32_t checksum;       /* L4 checksum field as sent (SCTP CRC32c: least-significant first) */
    const uint8_t *payload;  /* TCP/UDP payload, SCTP chunks */
    size_t payload_len;      /* captured octets of it */
    size_t payload_wire_len; /* its length per the headers (> payload_len when truncated) */
};

/*
 * Decodes a captured packet: the link header for `link`, then IPv4 (options skipped, fragments
 * flagged) or IPv6 (Hop-by-Hop, Routing, Fragment, Destination Options, AH and the other RFC 8200
 * §4 style extension headers skipped), then TCP (options skipped), UDP or SCTP. Packets that do
 * not carry IP, or carry another IP protocol, decode successfully to a shallower layer.
 *   link     - the capture's link type.
 *   data     - the captured octets; caplen of them are readable.
 *   wire_len - the packet's length on the wire (pcap's len; >= caplen, else caplen is used): a
 *              header announcing more than caplen but no more than wire_len is a truncated capture,
 *              one announcing more than wire_len is malformed.
 *   out      - filled in completely (zeroed first).
 * Ownership: out's pointers point into data; nothing is kept.
 * Returns 0 (see out->layer and out->flags), IWARP_ERR_PKT_MALFORMED when a header is impossible
 * (out describes the layers before it), IWARP_ERR_INVAL on NULL arguments or an unknown link.
 */
int iwarp_pkt_decode(enum iwarp_pkt_link link, const uint8_t *data, size_t caplen, size_t wire_len,
                     struct iwarp_pkt *out);

/*
 * Adds n octets to a ones'-complement running sum (RFC 1071 §4.1). Octets pair up big-endian from
 * p[0]; an odd n pads the last octet with zero, so only the final call may have an odd n.
 * Returns the new running sum (pass 0 to start).
 */
uint32_t iwarp_pkt_csum_add(uint32_t sum, const uint8_t *p, size_t n);

/* Folds a running sum to 16 bits and complements it: the value to store in a checksum field
 * (RFC 1071 §4.1). A correct packet re-summed with its checksum folds to 0. */
uint16_t iwarp_pkt_csum_fold(uint32_t sum);

/*
 * Verifies the checksums of a decoded packet: the IPv4 header checksum (RFC 791 §3.1) and the
 * TCP/UDP checksum over the pseudo-header (RFC 9293 §3.1, RFC 768, RFC 8200 §8.1; a zero UDP
 * checksum over IPv4 means "none") or the SCTP CRC32c (RFC 9260 §6.8, Appendix A).
 * Returns 0 if all present checksums verify, IWARP_ERR_PKT_CSUM if one does not, IWARP_ERR_SHORT
 * if the L4 checksum cannot be checked (truncated, fragment, no L4 header; the IPv4 header
 * checksum was still checked when present), IWARP_ERR_INVAL on NULL.
 */
int iwarp_pkt_verify_checksums(const struct iwarp_pkt *pkt);

/* What iwarp_pkt_build_tcp() writes: one Ethernet + IPv4/IPv6 + TCP (no options) header. */
struct iwarp_pkt_tcp_seg {
    uint8_t ip_version; /* 4 or 6 */
    uint8_t src_mac[6]; /* Ethernet source */
    uint8_t dst_mac[6]; /* Ethernet destination */
    uint8_t src[16];    /* IP source; IPv4 in the first 4 octets */
    uint8_t dst[16];    /* IP destination */
    uint16_t ip_id;     /* IPv4 Identification (DF is always set; unused for IPv6) */
    uint8_t ttl;        /* TTL / Hop Limit */
    uint16_t sport, dport;
    uint32_t seq, ack;
    uint16_t tcp_flags; /* IWARP_PKT_TCP_* */
    uint16_t window;
};

/* Octets of Ethernet + IP + TCP header iwarp_pkt_build_tcp() writes: 54 (IPv4), 74 (IPv6), or 0
 * for another ip_version. The payload goes right after them. */
size_t iwarp_pkt_tcp_hdr_len(uint8_t ip_version);

/*
 * Writes the Ethernet, IP and TCP headers of one TCP segment in front of its payload, with the
 * IPv4 header checksum and the TCP checksum filled in.
 *   frame       - cap octets; the payload (payload_len octets) must already be at
 *                 frame + iwarp_pkt_tcp_hdr_len(seg->ip_version).
 *   seg         - the header fields.
 * Ownership: nothing is kept.
 * Returns the frame length (headers + payload), IWARP_ERR_PKT_TOO_BIG when the payload exceeds
 * IWARP_PKT_TCP_MAX_PAYLOAD_V4/_V6, IWARP_ERR_NOSPC when cap is too small, IWARP_ERR_INVAL on NULL
 * or an ip_version other than 4 and 6.
 */
iwarp_ssize iwarp_pkt_build_tcp(uint8_t *frame, size_t cap, const struct iwarp_pkt_tcp_seg *seg,
                                size_t payload_len);

/* What iwarp_pkt_build_udp() writes: one Ethernet + IPv4/IPv6 + UDP header. */
struct iwarp_pkt_udp_dgram {
    uint8_t ip_version; /* 4 or 6 */
    uint8_t src_mac[6]; /* Ethernet source */
    uint8_t dst_mac[6]; /* Ethernet destination */
    uint8_t src[16];    /* IP source; IPv4 in the first 4 octets */
    uint8_t dst[16];    /* IP destination */
    uint16_t ip_id;     /* IPv4 Identification (DF is always set; unused for IPv6) */
    uint8_t ttl;        /* TTL / Hop Limit */
    uint16_t sport, dport;
};

/* Octets of Ethernet + IP + UDP header iwarp_pkt_build_udp() writes: 42 (IPv4), 62 (IPv6), or 0
 * for another ip_version. The payload goes right after them. */
size_t iwarp_pkt_udp_hdr_len(uint8_t ip_version);

/*
 * Writes the Ethernet, IP and UDP headers of one UDP datagram in front of its payload, with the
 * IPv4 header checksum and the UDP checksum filled in (RFC 768: a computed 0 is sent as 0xFFFF;
 * RFC 8200 §8.1: IPv6 requires it).
 *   frame - cap octets; the payload (payload_len octets) must already be at
 *           frame + iwarp_pkt_udp_hdr_len(d->ip_version).
 * Ownership: nothing is kept.
 * Returns the frame length, IWARP_ERR_PKT_TOO_BIG when the payload exceeds
 * IWARP_PKT_UDP_MAX_PAYLOAD_V4/_V6, IWARP_ERR_NOSPC when cap is too small, IWARP_ERR_INVAL on NULL
 * or an ip_version other than 4 and 6.
 */
iwarp_ssize iwarp_pkt_build_udp(uint8_t *frame, size_t cap, const struct iwarp_pkt_udp_dgram *d,
                                size_t payload_len);

#endif
