/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading capture files through libpcap: classic pcap (micro- or nanosecond) and pcapng, as
 * written by iwarp_pcap_writer, tcpdump, dumpcap and tshark. Every packet comes back with its
 * headers decoded by iwarp_pkt_decode() (trace/trace_pkt.h): link layer (Ethernet, Linux cooked
 * v1/v2 as "-i any" writes, BSD loopback, raw IP), IPv4/IPv6, TCP/UDP/SCTP.
 */
#ifndef IWARP_TRACE_PCAP_READER_H
#define IWARP_TRACE_PCAP_READER_H

#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "trace/trace_pkt.h"

struct iwarp_pcap_reader;

/* One packet of a capture. */
struct iwarp_pcap_packet {
    uint64_t index;       /* 1 for the file's first packet (Wireshark's frame number) */
    uint64_t ts_ns;       /* capture time, ns since the Unix epoch */
    size_t caplen;        /* octets captured (data) */
    size_t wire_len;      /* octets the packet had on the wire */
    const uint8_t *data;  /* the captured octets, link header first */
    int decode_rc;        /* iwarp_pkt_decode()'s result: 0 or IWARP_ERR_PKT_MALFORMED */
    struct iwarp_pkt pkt; /* the decoded headers (as far as decode_rc allowed) */
};

/*
 * Maps a libpcap DLT_ value (pcap_datalink()) to the link type the decoder understands.
 * Returns 0 and sets *out, IWARP_ERR_PCAP_LINKTYPE for another link type, IWARP_ERR_INVAL (NULL).
 */
int iwarp_pcap_link_from_dlt(int dlt, enum iwarp_pkt_link *out);

/*
 * Opens a capture file (pcap or pcapng) for reading.
 *   out    - receives the reader on success.
 *   path   - file name; "-" is standard input.
 *   errbuf - optional (may be NULL): on an error other than INVAL/NOMEM receives a description
 *            (libpcap's text, or the unsupported link type's name), NUL-terminated, at most
 *            errlen octets.
 * Ownership: the caller owns *out and must pass it to iwarp_pcap_reader_close().
 * Returns 0, IWARP_ERR_INVAL, IWARP_ERR_NOMEM, IWARP_ERR_PCAP (missing file, not a capture),
 * IWARP_ERR_PCAP_LINKTYPE (a link type iwarp_pcap_link_from_dlt() does not map).
 */
int iwarp_pcap_reader_open(struct iwarp_pcap_reader **out, const char *path, char *errbuf,
                           size_t errlen);

/* Closes the file and frees the reader (NULL is ignored). */
void iwarp_pcap_reader_close(struct iwarp_pcap_reader *r);

/* The capture's link type, as mapped at open. r must not be NULL. */
enum iwarp_pkt_link iwarp_pcap_reader_link(const struct iwarp_pcap_reader *r);

/* The capture's libpcap DLT_ value. r must not be NULL. */
int iwarp_pcap_reader_dlt(const struct iwarp_pcap_reader *r);

/*
 * Reads the next packet and decodes its headers. A malformed packet is not an error of the
 * reader: it is returned with decode_rc set.
 *   out - filled in on success.
 * Ownership: out->data and every pointer in out->pkt point into libpcap's buffer and are valid
 * only until the next iwarp_pcap_reader_next() or iwarp_pcap_reader_close() on r.
 * Returns 0, IWARP_ERR_PCAP_END after the last packet, IWARP_ERR_PCAP when the file is damaged or
 * cut inside a record (text: iwarp_pcap_reader_errtext), IWARP_ERR_INVAL (NULL).
 */
int iwarp_pcap_reader_next(struct iwarp_pcap_reader *r, struct iwarp_pcap_packet *out);

/* libpcap's text for the reader's last error ("" if none). Ownership: valid until the next call
 * on r. */
const char *iwarp_pcap_reader_errtext(const struct iwarp_pcap_reader *r);

#endif
