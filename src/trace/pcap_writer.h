/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writing capture files: a pcap writer (libpcap, DLT_EN10MB, nanosecond timestamps) and, on top
 * of it, a synthetic TCP connection that turns "side X sent these bytes" into Ethernet/IP/TCP
 * packets with consistent sequence and acknowledgement numbers and correct checksums, so a test
 * can hand what it would send to Wireshark (and to a Wireshark-based judge).
 *
 * Timestamps come from the writer's clock: every packet takes the current time, then the clock
 * advances by a step (default: 1700000000 s, step 1 us). iwarp_pcap_writer_set_time() sets both,
 * so a caller can either drive the time or let it advance on its own.
 */
#ifndef IWARP_TRACE_PCAP_WRITER_H
#define IWARP_TRACE_PCAP_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iwarp/common.h"
#include "trace/trace_pkt.h"

/* Snapshot length written into the file header: a full 64 KiB IP packet plus its link header
 * (tcpdump's MAXIMUM_SNAPLEN). */
#define IWARP_PCAP_SNAPLEN 262144u

/* Enough for any libpcap error text (PCAP_ERRBUF_SIZE). */
#define IWARP_PCAP_ERRTEXT_LEN 256u

/* Octets of a classic pcap file header, and of each record's header before its frame. */
#define IWARP_PCAP_FILE_HDR_LEN 24u
#define IWARP_PCAP_REC_HDR_LEN  16u

struct iwarp_pcap_writer;

/* A size bound shared by writers: the octets they have written (file headers and records) and
 * the most they may write. */
struct iwarp_pcap_budget {
    uint64_t max;
    uint64_t used;
};

/*
 * Creates (or truncates) a classic pcap file at path, link type Ethernet, nanosecond timestamps,
 * snaplen IWARP_PCAP_SNAPLEN.
 *   out    - receives the writer on success.
 *   path   - file name; "-" is standard output.
 *   errbuf - optional (may be NULL): on IWARP_ERR_PCAP receives libpcap's text, NUL-terminated,
 *            truncated to errlen octets.
 * Ownership: the caller owns *out and must pass it to iwarp_pcap_writer_close().
 * Returns 0, IWARP_ERR_INVAL (NULL out/path), IWARP_ERR_NOMEM, IWARP_ERR_PCAP (cannot create).
 */
int iwarp_pcap_writer_open(struct iwarp_pcap_writer **out, const char *path, char *errbuf,
                           size_t errlen);

/*
 * Flushes and closes the file and frees the writer (NULL is accepted and ignored). Connections
 * on it must not be used afterwards.
 * Returns 0, or IWARP_ERR_IO if a write or the final flush failed (the writer is freed anyway).
 */
int iwarp_pcap_writer_close(struct iwarp_pcap_writer *w);

/* Flushes buffered packets to the file. Returns 0 or IWARP_ERR_IO (text: errtext). */
int iwarp_pcap_writer_flush(struct iwarp_pcap_writer *w);

/* The text of the writer's last error ("" if none). Ownership: valid until the next call on w. */
const char *iwarp_pcap_writer_errtext(const struct iwarp_pcap_writer *w);

/* Sets the timestamp of the next packet (ns since the Unix epoch) and how far the clock advances
 * after each packet (step_ns, may be 0). */
void iwarp_pcap_writer_set_time(struct iwarp_pcap_writer *w, uint64_t next_ns, uint64_t step_ns);

/* The timestamp the next packet will get. */
uint64_t iwarp_pcap_writer_time(const struct iwarp_pcap_writer *w);

/*
 * Makes w count every record it writes (IWARP_PCAP_REC_HDR_LEN + the frame) against b, and
 * refuse a record that would take b->used past b->max: iwarp_pcap_writer_frame() then writes
 * nothing and returns IWARP_ERR_TRACE_BOUND, so the file holds whole records only. The file
 * header is not counted here (the caller adds it). NULL: no bound (the default).
 * Ownership: w keeps b; b must outlive w's use. Writers sharing b must be serialised by their
 * callers (b is not atomic).
 */
void iwarp_pcap_writer_set_budget(struct iwarp_pcap_writer *w, struct iwarp_pcap_budget *b);

/*
 * Writes one Ethernet frame as it is (no checksums are touched) at the writer's clock.
 *   frame/len - the frame; len <= IWARP_PCAP_SNAPLEN.
 * Ownership: frame is copied into the file buffer; nothing is kept.
 * Returns 0, IWARP_ERR_INVAL (NULL, len too big), IWARP_ERR_TRACE_BOUND (the budget of
 * iwarp_pcap_writer_set_budget() has no room: nothing written), IWARP_ERR_IO (the file reported
 * an error).
 */
int iwarp_pcap_writer_frame(struct iwarp_pcap_writer *w, const uint8_t *frame, size_t len);

/*
 * Writes one UDP datagram (Ethernet + IPv4/IPv6 + UDP headers built by iwarp_pkt_build_udp(),
 * checksums filled in) carrying payload[0..len) at the writer's clock, as one frame whatever
 * its size (no IP fragmentation: loopback MTU). Assembled in the writer's own frame buffer.
 *   d - the header fields.
 * Ownership: payload is copied; nothing is kept.
 * Returns 0, IWARP_ERR_INVAL (NULL arguments, ip_version not 4 or 6), IWARP_ERR_PKT_TOO_BIG
 * (over IWARP_PKT_UDP_MAX_PAYLOAD_V4/_V6), or an iwarp_pcap_writer_frame() error.
 */
int iwarp_pcap_writer_udp(struct iwarp_pcap_writer *w, const struct iwarp_pkt_udp_dgram *d,
                          const uint8_t *payload, size_t len);

/* ---- a synthetic TCP connection ---- */

enum iwarp_pcap_side {
    IWARP_PCAP_CLIENT = 0, /* the active opener (MPA initiator) */
    IWARP_PCAP_SERVER = 1, /* the passive side (MPA responder) */
};

/* One end of a connection. */
struct iwarp_pcap_tcp_end {
    uint8_t mac[6];   /* Ethernet address (all zero, as on Linux "lo", is fine) */
    uint8_t addr[16]; /* IP address; IPv4 in the first 4 octets */
    uint16_t port;
    uint32_t isn; /* initial sequence number: the SYN carries it, data starts at isn + 1 */
};

/* A connection's state. Fields are read-only for callers; use the functions below. */
struct iwarp_pcap_tcp {
    struct iwarp_pcap_writer *w; /* not owned */
    uint8_t ip_version;          /* 4 or 6 */
    struct iwarp_pcap_tcp_end end[2];
    uint32_t snd_nxt[2]; /* next sequence number side i sends */
    uint16_t ip_id;      /* next IPv4 Identification (shared by both directions, starts at 1) */
    uint16_t window;     /* advertised by both sides (65535) */
    uint8_t ttl;         /* 64 */
    bool started;        /* something was written: the handshake is no longer allowed */
    bool fin[2];         /* side i sent FIN: no more data from it */
    bool reset;          /* an RST was sent: nothing more may be written */
};

/*
 * Sets up a connection from client to server on writer w. Nothing is written yet; sequence
 * numbers start as if the handshake happened (snd_nxt = isn + 1), so iwarp_pcap_tcp_handshake()
 * may be skipped (a capture that starts mid-connection).
 *   ip_version - 4 or 6.
 * Ownership: c keeps w (not owned; it must outlive c) and copies client and server.
 * Returns 0 or IWARP_ERR_INVAL (NULL argument, ip_version not 4 or 6).
 */
int iwarp_pcap_tcp_init(struct iwarp_pcap_tcp *c, struct iwarp_pcap_writer *w, uint8_t ip_version,
                        const struct iwarp_pcap_tcp_end *client,
                        const struct iwarp_pcap_tcp_end *server);

/*
 * Writes the three-way handshake (RFC 9293 §3.5): SYN (seq isn), SYN-ACK, ACK.
 * Returns 0, IWARP_ERR_STATE if anything was written on c before, or a writer error.
 */
int iwarp_pcap_tcp_handshake(struct iwarp_pcap_tcp *c);

/*
 * Writes the bytes side `from` sends: the concatenation of iov[0..iovcnt) as ONE TCP segment
 * (max_seg == 0), or as consecutive segments of at most max_seg octets. Each segment carries
 * PSH|ACK, the sender's next sequence number and an acknowledgement of all the peer sent. The
 * peer does not acknowledge: call iwarp_pcap_tcp_ack() for that.
 *   iov/iovcnt - the payload (e.g. an FPDU as header, data and CRC iovecs); at least one octet.
 *   max_seg    - 0 or the largest payload per segment.
 * Ownership: the bytes are copied; nothing is kept.
 * Returns 0, IWARP_ERR_INVAL (no payload, bad side), IWARP_ERR_STATE (side sent FIN, or RST
 * seen), IWARP_ERR_PKT_TOO_BIG (a segment would exceed IWARP_PKT_TCP_MAX_PAYLOAD_V4/_V6: pass a
 * smaller max_seg), IWARP_ERR_IO. Nothing is written when an argument error is returned.
 */
int iwarp_pcap_tcp_send(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from,
                        const struct iovec *iov, size_t iovcnt, size_t max_seg);

/* Writes a pure ACK from side `from` acknowledging everything the peer sent.
 * Returns 0, IWARP_ERR_INVAL, IWARP_ERR_STATE (after RST), IWARP_ERR_IO. */
int iwarp_pcap_tcp_ack(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from);

/* Writes FIN|ACK from side `from` (RFC 9293 §3.6); the FIN takes one sequence number. A full
 * close is fin(CLIENT), fin(SERVER), ack(CLIENT).
 * Returns 0, IWARP_ERR_INVAL, IWARP_ERR_STATE (FIN already sent, or after RST), IWARP_ERR_IO. */
int iwarp_pcap_tcp_fin(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from);

/* Writes RST|ACK from side `from` at its next sequence number; nothing may follow on c.
 * Returns 0, IWARP_ERR_INVAL, IWARP_ERR_STATE (RST already sent), IWARP_ERR_IO. */
int iwarp_pcap_tcp_rst(struct iwarp_pcap_tcp *c, enum iwarp_pcap_side from);

#endif
