/* SPDX-License-Identifier: BSD-2-Clause */
/* Packet header build and decode for capture files (see trace_pkt.h). */
#include "trace/trace_pkt.h"

#include <string.h>

#include "iwarp/errors.h"
#include "util/bytes.h"
#include "util/crc32c.h"

/* IPv6 extension headers (RFC 8200 §4; IANA "IPv6 Extension Header Types"). */
#define IP6_HOPOPTS  0u
#define IP6_ROUTING  43u
#define IP6_FRAGMENT 44u
#define IP6_ESP      50u
#define IP6_AH       51u
#define IP6_DSTOPTS  60u
#define IP6_MOBILITY 135u
#define IP6_HIP      139u
#define IP6_SHIM6    140u

/* Address-family values a DLT_NULL/DLT_LOOP header may carry (linktypes.html, LINKTYPE_NULL). */
#define BSD_AF_INET 2u

/* What a header of `need` octets at the start of a region finds: it is there, the capture was
 * cut short of it (the packet on the wire had it), or the packet itself is too short. */
enum fit { FIT_OK, FIT_CUT, FIT_BAD };

static enum fit fit(size_t need, size_t cap, size_t wire)
{
    if (need > wire)
        return FIT_BAD;
    return need > cap ? FIT_CUT : FIT_OK;
}

/* Returns 0 after flagging truncation, or IWARP_ERR_PKT_MALFORMED, for a header that does not fit.
 */
static int not_fit(enum fit f, struct iwarp_pkt *out)
{
    if (f == FIT_BAD)
        return IWARP_ERR_PKT_MALFORMED;
    out->flags |= IWARP_PKT_F_TRUNCATED;
    return 0;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- L4 ---- */

/* TCP header (RFC 9293 §3.1). A fragment's payload may legitimately end early. */
static int decode_tcp(struct iwarp_pkt *out)
{
    const uint8_t *p = out->l4;
    size_t cap = out->l4_len, wire = out->l4_wire_len;
    enum fit f = fit(IWARP_PKT_TCP_HDR_LEN, cap, wire);
    if (f == FIT_BAD && (out->flags & IWARP_PKT_F_FRAGMENT))
        return 0; /* the rest of the header is in the next fragment */
    if (f != FIT_OK)
        return not_fit(f, out);
    size_t doff = (size_t)(p[12] >> 4) * 4u;
    if (doff < IWARP_PKT_TCP_HDR_LEN) /* RFC 9293 §3.1: Data Offset counts 32-bit words, >= 5 */
        return IWARP_ERR_PKT_MALFORMED;
    f = fit(doff, cap, wire);
    if (f == FIT_BAD && (out->flags & IWARP_PKT_F_FRAGMENT))
        return 0;
    if (f != FIT_OK)
        return not_fit(f, out);
    out->sport = iwarp_load_be16(p);
    out->dport = iwarp_load_be16(p + 2);
    out->seq = iwarp_load_be32(p + 4);
    out->ack = iwarp_load_be32(p + 8);
    out->tcp_flags = (uint16_t)(p[13] | (p[12] & 0x01u) << 8);
    out->window = iwarp_load_be16(p + 14);
    out->checksum = iwarp_load_be16(p + 16);
    out->urgent = iwarp_load_be16(p + 18);
    out->l4_hdr_len = (uint8_t)doff;
    out->payload = p + doff;
    out->payload_len = cap - doff;
    out->payload_wire_len = wire - doff;
    out->layer = IWARP_PKT_LAYER_L4;
    return 0;
}

/* UDP header (RFC 768). Length 0 over IPv6 is a jumbogram (RFC 2675 §4): length from IP. */
static int decode_udp(struct iwarp_pkt *out)
{
    const uint8_t *p = out->l4;
    size_t cap = out->l4_len, wire = out->l4_wire_len;
    enum fit f = fit(IWARP_PKT_UDP_HDR_LEN, cap, wire);
    if (f == FIT_BAD && (out->flags & IWARP_PKT_F_FRAGMENT))
        return 0;
    if (f != FIT_OK)
        return not_fit(f, out);
    size_t ulen = iwarp_load_be16(p + 4);
    if (ulen == 0 && out->ip_version == 6)
        ulen = wire;
    if (ulen < IWARP_PKT_UDP_HDR_LEN) /* RFC 768: Length includes the 8-octet header */
        return IWARP_ERR_PKT_MALFORMED;
    if (ulen > wire) {
        if (!(out->flags & IWARP_PKT_F_FRAGMENT))
            return IWARP_ERR_PKT_MALFORMED;
        ulen = wire; /* a first fragment carries only part of the datagram */
    }
    out->sport = iwarp_load_be16(p);
    out->dport = iwarp_load_be16(p + 2);
    out->checksum = iwarp_load_be16(p + 6);
    out->l4_hdr_len = IWARP_PKT_UDP_HDR_LEN;
    out->payload = p + IWARP_PKT_UDP_HDR_LEN;
    out->payload_wire_len = ulen - IWARP_PKT_UDP_HDR_LEN;
    out->payload_len = min_size(cap, ulen) - IWARP_PKT_UDP_HDR_LEN;
    out->layer = IWARP_PKT_LAYER_L4;
    return 0;
}

/* SCTP common header (RFC 9260 §3.1); the chunks are the payload. */
static int decode_sctp(struct iwarp_pkt *out)
{
    const uint8_t *p = out->l4;
    enum fit f = fit(IWARP_PKT_SCTP_HDR_LEN, out->l4_len, out->l4_wire_len);
    if (f == FIT_BAD && (out->flags & IWARP_PKT_F_FRAGMENT))
        return 0;
    if (f != FIT_OK)
        return not_fit(f, out);
    out->sport = iwarp_load_be16(p);
    out->dport = iwarp_load_be16(p + 2);
    out->sctp_vtag = iwarp_load_be32(p + 4);
    out->checksum = iwarp_load_le32(p + 8); /* RFC 9260 Appendix A: CRC32c, reflected order */
    out->l4_hdr_len = IWARP_PKT_SCTP_HDR_LEN;
    out->payload = p + IWARP_PKT_SCTP_HDR_LEN;
    out->payload_len = out->l4_len - IWARP_PKT_SCTP_HDR_LEN;
    out->payload_wire_len = out->l4_wire_len - IWARP_PKT_SCTP_HDR_LEN;
    out->layer = IWARP_PKT_LAYER_L4;
    return 0;
}

static int decode_l4(struct iwarp_pkt *out)
{
    if (out->flags & IWARP_PKT_F_NONFIRST_FRAG)
        return 0; /* the L4 header is in the first fragment */
    switch (out->ip_proto) {
    case IWARP_PKT_IPPROTO_TCP:
        return decode_tcp(out);
    case IWARP_PKT_IPPROTO_UDP:
        return decode_udp(out);
    case IWARP_PKT_IPPROTO_SCTP:
        return decode_sctp(out);
    default:
        return 0;
    }
}

/* Sets the IP payload of a packet whose IP header (with extensions) is hdr octets of p. */
static void set_l4(struct iwarp_pkt *out, const uint8_t *p, size_t hdr, size_t cap, size_t total)
{
    out->ip = p;
    out->ip_hdr_len = hdr;
    out->l4 = p + hdr;
    out->l4_wire_len = total - hdr;
    if (cap < total) {
        out->flags |= IWARP_PKT_F_TRUNCATED;
        out->l4_len = cap - hdr;
    } else {
        out->l4_len = total - hdr;
    }
}

/* ---- IP ---- */

/* IPv4 header (RFC 791 §3.1). cap/wire count from the first octet of the IP header. */
static int decode_ipv4(const uint8_t *p, size_t cap, size_t wire, struct iwarp_pkt *out)
{
    enum fit f = fit(IWARP_PKT_IPV4_HDR_LEN, cap, wire);
    if (f != FIT_OK)
        return not_fit(f, out);
    if (p[0] >> 4 != 4) /* RFC 791 §3.1: Version 4 */
        return IWARP_ERR_PKT_MALFORMED;
    size_t ihl = (size_t)(p[0] & 0x0Fu) * 4u;
    size_t total = iwarp_load_be16(p + 2);
    if (ihl < IWARP_PKT_IPV4_HDR_LEN) /* RFC 791 §3.1: minimum IHL is 5 */
        return IWARP_ERR_PKT_MALFORMED;
    if (total == 0 && wire >= ihl) {
        /* A TSO/GSO super-packet captured before segmentation: Wireshark's "Bogus IP length
         * (0, may be caused by TSO)"; the length is what was captured on the wire. */
        total = wire;
        out->flags |= IWARP_PKT_F_LEN_FROM_WIRE;
    }
    if (total < ihl || total > wire) /* RFC 791 §3.1: Total Length includes the header */
        return IWARP_ERR_PKT_MALFORMED;
    f = fit(ihl, cap, wire);
    if (f != FIT_OK)
        return not_fit(f, out);
    out->ip_version = 4;
    out->ttl = p[8];
    out->ip_proto = p[9];
    out->ip_id = iwarp_load_be16(p + 4);
    memcpy(out->src, p + 12, 4);
    memcpy(out->dst, p + 16, 4);
    /* RFC 791 §3.1: flags Reserved/DF/MF, then Fragment Offset in 8-octet units */
    uint16_t frag = iwarp_load_be16(p + 6);
    out->frag_offset = frag & 0x1FFFu;
    if (frag & 0x2000u)
        out->flags |= IWARP_PKT_F_FRAGMENT;
    if (out->frag_offset != 0)
        out->flags |= IWARP_PKT_F_FRAGMENT | IWARP_PKT_F_NONFIRST_FRAG;
    set_l4(out, p, ihl, cap, total);
    out->layer = IWARP_PKT_LAYER_IP;
    return decode_l4(out);
}

/* Whether nh is an IPv6 extension header in the RFC 8200 §4 generic format (Hdr Ext Len in
 * 8-octet units, not counting the first 8), RFC 8200 §4.8. */
static int ip6_generic_ext(uint8_t nh)
{
    return nh == IP6_HOPOPTS || nh == IP6_ROUTING || nh == IP6_DSTOPTS || nh == IP6_MOBILITY ||
           nh == IP6_HIP || nh == IP6_SHIM6;
}

/* IPv6 header (RFC 8200 §3) and its extension headers (§4). */
static int decode_ipv6(const uint8_t *p, size_t cap, size_t wire, struct iwarp_pkt *out)
{
    enum fit f = fit(IWARP_PKT_IPV6_HDR_LEN, cap, wire);
    if (f != FIT_OK)
        return not_fit(f, out);
    if (p[0] >> 4 != 6) /* RFC 8200 §3: Version 6 */
        return IWARP_ERR_PKT_MALFORMED;
    size_t total = IWARP_PKT_IPV6_HDR_LEN + iwarp_load_be16(p + 4);
    uint8_t nh = p[6];
    if (total == IWARP_PKT_IPV6_HDR_LEN && nh == IP6_HOPOPTS) {
        total = wire; /* RFC 2675 §2: Payload Length 0 + Jumbo Payload option */
        out->flags |= IWARP_PKT_F_LEN_FROM_WIRE;
    }
    if (total > wire) /* RFC 8200 §3: Payload Length counts what follows the header */
        return IWARP_ERR_PKT_MALFORMED;
    out->ip_version = 6;
    out->ttl = p[7];
    memcpy(out->src, p + 8, 16);
    memcpy(out->dst, p + 24, 16);
    size_t end_cap = min_size(cap, total);
    size_t off = IWARP_PKT_IPV6_HDR_LEN;
    /* Every extension header is at least 8 octets, so this ends within total/8 rounds. */
    for (;;) {
        size_t hlen;
        if (ip6_generic_ext(nh) || nh == IP6_AH || nh == IP6_FRAGMENT) {
            f = fit(off + 2, end_cap, total);
            if (f != FIT_OK)
                break;
            if (nh == IP6_FRAGMENT)
                hlen = 8; /* RFC 8200 §4.5: fixed size */
            else if (nh == IP6_AH)
                hlen = ((size_t)p[off + 1] + 2u) * 4u; /* RFC 4302 §2.2: 32-bit words minus 2 */
            else
                hlen = ((size_t)p[off + 1] + 1u) * 8u; /* RFC 8200 §4.3-§4.6 */
            f = fit(off + hlen, end_cap, total);
            if (f != FIT_OK)
                break;
        } else {
            break; /* an upper-layer protocol, ESP (RFC 4303: opaque), or No Next Header */
        }
        if (nh == IP6_FRAGMENT) {
            /* RFC 8200 §4.5: Fragment Offset(13) Res(2) M(1) */
            uint16_t fo = iwarp_load_be16(p + off + 2);
            out->frag_offset = (uint16_t)(fo >> 3);
            out->flags |= IWARP_PKT_F_FRAGMENT;
            if (out->frag_offset != 0)
                out->flags |= IWARP_PKT_F_NONFIRST_FRAG;
        }
        nh = p[off];
        off += hlen;
        if (out->flags & IWARP_PKT_F_NONFIRST_FRAG)
            break; /* later headers are only in the first fragment */
    }
    out->ip_proto = nh;
    if (f != FIT_OK) {
        /* An extension header runs past the capture or the packet: the IP header is complete,
         * the upper-layer protocol unknown (ip_proto names the extension header). */
        int rc = not_fit(f, out);
        if (rc != 0)
            return rc;
        set_l4(out, p, off, cap, total);
        out->layer = IWARP_PKT_LAYER_IP;
        return 0;
    }
    set_l4(out, p, off, cap, total);
    out->layer = IWARP_PKT_LAYER_IP;
    return decode_l4(out);
}

/* IP by the ethertype the link layer announced; other ethertypes end the decode at the link. */
static int decode_by_ethertype(const uint8_t *p, size_t cap, size_t wire, struct iwarp_pkt *out)
{
    out->layer = IWARP_PKT_LAYER_LINK;
    if (out->ethertype == IWARP_PKT_ETHERTYPE_IPV4)
        return decode_ipv4(p, cap, wire, out);
    if (out->ethertype == IWARP_PKT_ETHERTYPE_IPV6)
        return decode_ipv6(p, cap, wire, out);
    return 0;
}

/* ---- link ---- */

/* BSD loopback address family to an ethertype: AF_INET is 2 everywhere; AF_INET6 is 10 (Linux),
 * 23 (Windows), 24 (NetBSD/OpenBSD), 28 (FreeBSD), 30 (Darwin) (linktypes.html, LINKTYPE_NULL). */
static uint16_t bsd_af_to_ethertype(uint32_t af)
{
    if (af == BSD_AF_INET)
        return IWARP_PKT_ETHERTYPE_IPV4;
    if (af == 10 || af == 23 || af == 24 || af == 28 || af == 30)
        return IWARP_PKT_ETHERTYPE_IPV6;
    return 0;
}

/* Ethernet II: destination(6) source(6) type(2); 802.1Q/802.1ad tags TPID(2) TCI(2) before it. */
static int decode_ethernet(const uint8_t *p, size_t cap, size_t wire, struct iwarp_pkt *out)
{
    size_t off = 12;
    for (;;) {
        enum fit f = fit(off + 2, cap, wire);
        if (f != FIT_OK)
            return not_fit(f, out);
        uint16_t type = iwarp_load_be16(p + off);
        off += 2;
        if (type != IWARP_PKT_ETHERTYPE_VLAN && type != IWARP_PKT_ETHERTYPE_QINQ) {
            out->ethertype = type; /* <= 1500: an IEEE 802.3 length, not IP */
            break;
        }
        off += 2; /* the tag's TCI; the next type follows it */
    }
    return decode_by_ethertype(p + off, cap - off, wire - off, out);
}

int iwarp_pkt_decode(enum iwarp_pkt_link link, const uint8_t *data, size_t caplen, size_t wire_len,
                     struct iwarp_pkt *out)
{
    if (out == NULL)
        return IWARP_ERR_INVAL;
    memset(out, 0, sizeof *out);
    if (data == NULL && caplen != 0)
        return IWARP_ERR_INVAL;
    if (wire_len < caplen)
        wire_len = caplen;
    size_t hdr;
    enum fit f;
    switch (link) {
    case IWARP_PKT_LINK_ETHERNET:
        return decode_ethernet(data, caplen, wire_len, out);
    case IWARP_PKT_LINK_NULL:
    case IWARP_PKT_LINK_LOOP: {
        hdr = 4;
        f = fit(hdr, caplen, wire_len);
        if (f != FIT_OK)
            return not_fit(f, out);
        uint32_t af = iwarp_load_be32(data);
        if (link == IWARP_PKT_LINK_NULL) {
            /* host order of the capturing machine: a value with only its upper half set was
             * written by a host of the other byte order (as Wireshark decides) */
            af = iwarp_load_le32(data);
            if ((af & 0xFFFF0000u) != 0 && (af & 0x0000FFFFu) == 0)
                af = iwarp_load_be32(data);
        }
        out->ethertype = bsd_af_to_ethertype(af);
        break;
    }
    case IWARP_PKT_LINK_LINUX_SLL:
        /* packet type(2) ARPHRD(2) address length(2) address(8) protocol(2) */
        hdr = IWARP_PKT_SLL_HDR_LEN;
        f = fit(hdr, caplen, wire_len);
        if (f != FIT_OK)
            return not_fit(f, out);
        out->ethertype = iwarp_load_be16(data + 14);
        break;
    case IWARP_PKT_LINK_LINUX_SLL2:
        /* protocol(2) reserved(2) ifindex(4) ARPHRD(2) packet type(1) address length(1)
         * address(8) */
        hdr = IWARP_PKT_SLL2_HDR_LEN;
        f = fit(hdr, caplen, wire_len);
        if (f != FIT_OK)
            return not_fit(f, out);
        out->ethertype = iwarp_load_be16(data);
        break;
    case IWARP_PKT_LINK_RAW:
    case IWARP_PKT_LINK_IPV4:
    case IWARP_PKT_LINK_IPV6:
        hdr = 0;
        f = fit(1, caplen, wire_len);
        if (f != FIT_OK)
            return not_fit(f, out);
        if (link == IWARP_PKT_LINK_IPV4 || (link == IWARP_PKT_LINK_RAW && data[0] >> 4 == 4))
            out->ethertype = IWARP_PKT_ETHERTYPE_IPV4;
        else if (link == IWARP_PKT_LINK_IPV6 || (link == IWARP_PKT_LINK_RAW && data[0] >> 4 == 6))
            out->ethertype = IWARP_PKT_ETHERTYPE_IPV6;
        else
            return IWARP_ERR_PKT_MALFORMED; /* raw IP that is neither version */
        break;
    default:
        return IWARP_ERR_INVAL;
    }
    return decode_by_ethertype(data + hdr, caplen - hdr, wire_len - hdr, out);
}

/* ---- checksums ---- */

uint32_t iwarp_pkt_csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
    uint64_t s = sum;
    size_t i = 0;
    for (; i + 1 < n; i += 2)
        s += iwarp_load_be16(p + i);
    if (i < n)
        s += (uint32_t)p[i] << 8;
    while (s >> 16)
        s = (s & 0xFFFFu) + (s >> 16);
    return (uint32_t)s;
}

uint16_t iwarp_pkt_csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xFFFFu) + (sum >> 16);
    return (uint16_t)~sum;
}

/* The running sum of the TCP/UDP pseudo-header (RFC 9293 §3.1 for IPv4, RFC 8200 §8.1 for
 * IPv6) for an upper-layer packet of len octets. */
static uint32_t pseudo_sum(uint8_t ip_version, const uint8_t *src, const uint8_t *dst,
                           uint8_t proto, size_t len)
{
    uint8_t ph[40];
    size_t n;
    if (ip_version == 4) {
        memcpy(ph, src, 4);
        memcpy(ph + 4, dst, 4);
        ph[8] = 0;
        ph[9] = proto;
        iwarp_store_be16(ph + 10, (uint16_t)len);
        n = 12;
    } else {
        memcpy(ph, src, 16);
        memcpy(ph + 16, dst, 16);
        iwarp_store_be32(ph + 32, (uint32_t)len);
        ph[36] = ph[37] = ph[38] = 0;
        ph[39] = proto;
        n = 40;
    }
    return iwarp_pkt_csum_add(0, ph, n);
}

int iwarp_pkt_verify_checksums(const struct iwarp_pkt *pkt)
{
    if (pkt == NULL)
        return IWARP_ERR_INVAL;
    if (pkt->layer < IWARP_PKT_LAYER_IP)
        return IWARP_ERR_SHORT;
    /* RFC 791 §3.1: the header, checksum field included, sums to all ones */
    if (pkt->ip_version == 4 &&
        iwarp_pkt_csum_fold(iwarp_pkt_csum_add(0, pkt->ip, pkt->ip_hdr_len)))
        return IWARP_ERR_PKT_CSUM;
    if (pkt->layer < IWARP_PKT_LAYER_L4 || (pkt->flags & IWARP_PKT_F_FRAGMENT))
        return IWARP_ERR_SHORT;
    size_t len = pkt->l4_hdr_len + pkt->payload_wire_len;
    if (pkt->l4_hdr_len + pkt->payload_len < len)
        return IWARP_ERR_SHORT; /* truncated: the checksummed octets are not all here */
    if (pkt->ip_proto == IWARP_PKT_IPPROTO_SCTP) {
        /* RFC 9260 §6.8: CRC32c over the packet with the checksum field taken as zero */
        static const uint8_t zero[4];
        uint32_t c = iwarp_crc32c_update(IWARP_CRC32C_INIT, pkt->l4, 8);
        c = iwarp_crc32c_update(c, zero, 4);
        c = iwarp_crc32c_update(c, pkt->l4 + 12, len - 12);
        return iwarp_crc32c_final(c) == pkt->checksum ? 0 : IWARP_ERR_PKT_CSUM;
    }
    if (pkt->ip_proto == IWARP_PKT_IPPROTO_UDP && pkt->checksum == 0)
        /* RFC 768: zero means no checksum over IPv4; RFC 8200 §8.1: IPv6 receivers discard it */
        return pkt->ip_version == 4 ? 0 : IWARP_ERR_PKT_CSUM;
    if (len > UINT32_MAX)
        return IWARP_ERR_PKT_CSUM;
    uint32_t s = pseudo_sum(pkt->ip_version, pkt->src, pkt->dst, pkt->ip_proto, len);
    s = iwarp_pkt_csum_add(s, pkt->l4, len);
    return iwarp_pkt_csum_fold(s) == 0 ? 0 : IWARP_ERR_PKT_CSUM;
}

/* ---- build ---- */

size_t iwarp_pkt_tcp_hdr_len(uint8_t ip_version)
{
    if (ip_version == 4)
        return IWARP_PKT_ETH_HDR_LEN + IWARP_PKT_IPV4_HDR_LEN + IWARP_PKT_TCP_HDR_LEN;
    if (ip_version == 6)
        return IWARP_PKT_ETH_HDR_LEN + IWARP_PKT_IPV6_HDR_LEN + IWARP_PKT_TCP_HDR_LEN;
    return 0;
}

/* Writes the Ethernet header and the IPv4 (no options) or IPv6 header of a packet carrying
 * l4_len octets of protocol proto; returns the first octet after them. ip_version is 4 or 6. */
static uint8_t *put_eth_ip(uint8_t *frame, uint8_t ip_version, const uint8_t *src_mac,
                           const uint8_t *dst_mac, const uint8_t *src, const uint8_t *dst,
                           uint16_t ip_id, uint8_t ttl, uint8_t proto, size_t l4_len)
{
    uint8_t *eth = frame;
    memcpy(eth, dst_mac, 6);
    memcpy(eth + 6, src_mac, 6);
    uint8_t *ip = eth + IWARP_PKT_ETH_HDR_LEN;
    if (ip_version == 4) {
        iwarp_store_be16(eth + 12, IWARP_PKT_ETHERTYPE_IPV4);
        /* RFC 791 §3.1: Version 4, IHL 5, TOS 0, Total Length, Identification, DF, TTL,
         * Protocol, Header Checksum (computed with the field zero), addresses */
        ip[0] = 0x45;
        ip[1] = 0;
        iwarp_store_be16(ip + 2, (uint16_t)(IWARP_PKT_IPV4_HDR_LEN + l4_len));
        iwarp_store_be16(ip + 4, ip_id);
        iwarp_store_be16(ip + 6, 0x4000u);
        ip[8] = ttl;
        ip[9] = proto;
        iwarp_store_be16(ip + 10, 0);
        memcpy(ip + 12, src, 4);
        memcpy(ip + 16, dst, 4);
        iwarp_store_be16(ip + 10,
                         iwarp_pkt_csum_fold(iwarp_pkt_csum_add(0, ip, IWARP_PKT_IPV4_HDR_LEN)));
        return ip + IWARP_PKT_IPV4_HDR_LEN;
    }
    iwarp_store_be16(eth + 12, IWARP_PKT_ETHERTYPE_IPV6);
    /* RFC 8200 §3: Version 6, Traffic Class 0, Flow Label 0, Payload Length, Next Header,
     * Hop Limit, addresses */
    iwarp_store_be32(ip, 0x60000000u);
    iwarp_store_be16(ip + 4, (uint16_t)l4_len);
    ip[6] = proto;
    ip[7] = ttl;
    memcpy(ip + 8, src, 16);
    memcpy(ip + 24, dst, 16);
    return ip + IWARP_PKT_IPV6_HDR_LEN;
}

iwarp_ssize iwarp_pkt_build_tcp(uint8_t *frame, size_t cap, const struct iwarp_pkt_tcp_seg *seg,
                                size_t payload_len)
{
    if (frame == NULL || seg == NULL)
        return IWARP_ERR_INVAL;
    size_t hdr = iwarp_pkt_tcp_hdr_len(seg->ip_version);
    if (hdr == 0)
        return IWARP_ERR_INVAL;
    size_t max = seg->ip_version == 4 ? IWARP_PKT_TCP_MAX_PAYLOAD_V4 : IWARP_PKT_TCP_MAX_PAYLOAD_V6;
    if (payload_len > max)
        return IWARP_ERR_PKT_TOO_BIG;
    if (cap < hdr || cap - hdr < payload_len)
        return IWARP_ERR_NOSPC;

    size_t tcp_len = IWARP_PKT_TCP_HDR_LEN + payload_len;
    uint8_t *tcp = put_eth_ip(frame, seg->ip_version, seg->src_mac, seg->dst_mac, seg->src,
                              seg->dst, seg->ip_id, seg->ttl, IWARP_PKT_IPPROTO_TCP, tcp_len);
    /* RFC 9293 §3.1: ports, Sequence, Acknowledgment, Data Offset 5 (no options), control bits,
     * Window, Checksum over pseudo-header + segment, Urgent Pointer 0 */
    iwarp_store_be16(tcp, seg->sport);
    iwarp_store_be16(tcp + 2, seg->dport);
    iwarp_store_be32(tcp + 4, seg->seq);
    iwarp_store_be32(tcp + 8, seg->ack);
    tcp[12] = (uint8_t)(5u << 4 | ((seg->tcp_flags & IWARP_PKT_TCP_NS) ? 1u : 0u));
    tcp[13] = (uint8_t)seg->tcp_flags;
    iwarp_store_be16(tcp + 14, seg->window);
    iwarp_store_be16(tcp + 16, 0);
    iwarp_store_be16(tcp + 18, 0);
    uint32_t s = pseudo_sum(seg->ip_version, seg->src, seg->dst, IWARP_PKT_IPPROTO_TCP, tcp_len);
    iwarp_store_be16(tcp + 16, iwarp_pkt_csum_fold(iwarp_pkt_csum_add(s, tcp, tcp_len)));
    return (iwarp_ssize)(hdr + payload_len);
}

size_t iwarp_pkt_udp_hdr_len(uint8_t ip_version)
{
    if (ip_version == 4)
        return IWARP_PKT_ETH_HDR_LEN + IWARP_PKT_IPV4_HDR_LEN + IWARP_PKT_UDP_HDR_LEN;
    if (ip_version == 6)
        return IWARP_PKT_ETH_HDR_LEN + IWARP_PKT_IPV6_HDR_LEN + IWARP_PKT_UDP_HDR_LEN;
    return 0;
}

iwarp_ssize iwarp_pkt_build_udp(uint8_t *frame, size_t cap, const struct iwarp_pkt_udp_dgram *d,
                                size_t payload_len)
{
    if (frame == NULL || d == NULL)
        return IWARP_ERR_INVAL;
    size_t hdr = iwarp_pkt_udp_hdr_len(d->ip_version);
    if (hdr == 0)
        return IWARP_ERR_INVAL;
    size_t max = d->ip_version == 4 ? IWARP_PKT_UDP_MAX_PAYLOAD_V4 : IWARP_PKT_UDP_MAX_PAYLOAD_V6;
    if (payload_len > max)
        return IWARP_ERR_PKT_TOO_BIG;
    if (cap < hdr || cap - hdr < payload_len)
        return IWARP_ERR_NOSPC;

    size_t udp_len = IWARP_PKT_UDP_HDR_LEN + payload_len;
    uint8_t *udp = put_eth_ip(frame, d->ip_version, d->src_mac, d->dst_mac, d->src, d->dst,
                              d->ip_id, d->ttl, IWARP_PKT_IPPROTO_UDP, udp_len);
    /* RFC 768: ports, Length (header included), Checksum over pseudo-header + datagram */
    iwarp_store_be16(udp, d->sport);
    iwarp_store_be16(udp + 2, d->dport);
    iwarp_store_be16(udp + 4, (uint16_t)udp_len);
    iwarp_store_be16(udp + 6, 0);
    uint32_t s = pseudo_sum(d->ip_version, d->src, d->dst, IWARP_PKT_IPPROTO_UDP, udp_len);
    uint16_t c = iwarp_pkt_csum_fold(iwarp_pkt_csum_add(s, udp, udp_len));
    /* RFC 768: a computed zero is sent as all ones (zero means "no checksum") */
    iwarp_store_be16(udp + 6, c == 0 ? 0xFFFFu : c);
    return (iwarp_ssize)(hdr + payload_len);
}
