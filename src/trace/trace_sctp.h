/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Recording DDP over SCTP traffic into a capture file (L6): each SCTP packet the SCTP back-end
 * sends or receives (src/llp/llp_sctp.h, its capture hook) is written as one Ethernet + IPv4/IPv6
 * + UDP frame (RFC 6951 encapsulation, the UDP addresses and ports the packet really used) into
 * a capture file shared process-wide (trace/trace_sink.h), with correct IP and UDP checksums.
 * The SCTP packet goes in as it is (its CRC32c included). A packet larger than an Ethernet
 * frame is written whole, as one frame (loopback MTU), never fragmented.
 *
 * Wireshark decodes UDP port 9899 as SCTP on its own; other ports need "Decode As" (tshark
 * -d udp.port==PORT,sctp); `iwarp dump` recognises the packets by their CRC32c.
 *
 * The process's size bound (trace_sink.h) applies as to the TCP traces: a record that would
 * exceed it is not written and every file stops recording.
 */
#ifndef IWARP_TRACE_TRACE_SCTP_H
#define IWARP_TRACE_TRACE_SCTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "trace/trace_sink.h"

/* iwarp_trace_sctp_pkt(): nothing written, the process's bound stopped recording earlier. */
#define IWARP_TRACE_SCTP_STOPPED 1

/*
 * Writes one SCTP packet as a UDP datagram record into s.
 *   outgoing    - true: sent by us (UDP source = local, destination = peer); false: received
 *                 (source = peer, destination = local).
 *   local, peer - the UDP socket's own and the remote address: AF_INET or AF_INET6, the same
 *                 family (as the capture hook hands them out).
 *   pkt/len     - the SCTP packet (the UDP payload).
 *   now_ns      - when it was seen, CLOCK_MONOTONIC in ns (what the capture hook passes; 0:
 *                 not known, taken as now). The record gets the wall-clock time of that moment,
 *                 never earlier than the file's previous record (the file is shared).
 * Takes the sink lock (lock order: the owner's lock, then the sink's).
 * Ownership: everything is copied; nothing is kept.
 * Returns 0 (written); IWARP_TRACE_SCTP_STOPPED (nothing written: recording stopped at the bound
 * before this call); IWARP_ERR_TRACE_BOUND (nothing written: this record reached the bound and
 * stopped every file: report it, once per process); IWARP_ERR_INVAL (NULL, unknown or mixed
 * families); IWARP_ERR_PKT_TOO_BIG (more than one UDP datagram can carry); IWARP_ERR_IO.
 */
int iwarp_trace_sctp_pkt(struct iwarp_trace_sink *s, bool outgoing, const struct sockaddr *local,
                         const struct sockaddr *peer, const uint8_t *pkt, size_t len,
                         uint64_t now_ns);

#endif
