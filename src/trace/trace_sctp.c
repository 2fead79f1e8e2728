/* SPDX-License-Identifier: BSD-2-Clause */
/* Recording SCTP packets as UDP datagrams into a shared capture file (see trace_sctp.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "trace/trace_sctp.h"

#include <netinet/in.h>
#include <string.h>
#include <time.h>

#include "iwarp/errors.h"
#include "trace/pcap_writer.h"
#include "trace/trace_pkt.h"

#define SCTP_TRACE_TTL 64u

/* IPv4 Identification of the next datagram, one counter for every SCTP record of the process
 * (RFC 791 §3.1: unique per source/destination/protocol while in flight; DF is set anyway).
 * Guarded by the sink lock. */
static uint16_t g_ip_id = 1;

/* Copies sa's address and port into addr/port; returns its IP version, 0 for another family. */
static uint8_t addr_from(const struct sockaddr *sa, uint8_t addr[16], uint16_t *port)
{
    memset(addr, 0, 16);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
        memcpy(addr, &a->sin_addr, 4);
        *port = ntohs(a->sin_port);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)sa;
        memcpy(addr, &a->sin6_addr, 16);
        *port = ntohs(a->sin6_port);
        return 6;
    }
    return 0;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The wall-clock time of the monotonic instant mono_ns: the two clocks' current distance
 * applied to it (both read now, so a packet seen a moment ago keeps its own time). */
static uint64_t wall_of(uint64_t mono_ns)
{
    uint64_t real = clock_ns(CLOCK_REALTIME), mono = clock_ns(CLOCK_MONOTONIC);
    /* 0: not known (llp_sctp had no time yet: an INIT sent before its first poll); from the
     * future: either way, now */
    if (mono_ns == 0 || mono_ns > mono)
        mono_ns = mono;
    uint64_t ago = mono - mono_ns;
    return real > ago ? real - ago : 0;
}

int iwarp_trace_sctp_pkt(struct iwarp_trace_sink *s, bool outgoing, const struct sockaddr *local,
                         const struct sockaddr *peer, const uint8_t *pkt, size_t len,
                         uint64_t now_ns)
{
    if (!s || !local || !peer || (!pkt && len > 0))
        return IWARP_ERR_INVAL;
    struct iwarp_pkt_udp_dgram d;
    memset(&d, 0, sizeof d); /* MAC addresses zero, as on Linux "lo" */
    uint8_t me[16], them[16];
    uint16_t me_port, them_port;
    uint8_t v = addr_from(local, me, &me_port);
    if (v == 0 || addr_from(peer, them, &them_port) != v)
        return IWARP_ERR_INVAL;
    d.ip_version = v;
    d.ttl = SCTP_TRACE_TTL;
    memcpy(d.src, outgoing ? me : them, 16);
    memcpy(d.dst, outgoing ? them : me, 16);
    d.sport = outgoing ? me_port : them_port;
    d.dport = outgoing ? them_port : me_port;
    if (len > (v == 4 ? IWARP_PKT_UDP_MAX_PAYLOAD_V4 : IWARP_PKT_UDP_MAX_PAYLOAD_V6))
        return IWARP_ERR_PKT_TOO_BIG;
    uint64_t wall = wall_of(now_ns);

    iwarp_trace_sink_lock();
    struct iwarp_pcap_writer *w = iwarp_trace_sink_writer(s);
    if (!w) {
        iwarp_trace_sink_unlock();
        return IWARP_TRACE_SCTP_STOPPED;
    }
    /* the file is shared: never earlier than its previous record (which advanced the clock) */
    if (wall > iwarp_pcap_writer_time(w))
        iwarp_pcap_writer_set_time(w, wall, 1);
    if (v == 4)
        d.ip_id = g_ip_id++;
    int rc = iwarp_pcap_writer_udp(w, &d, pkt, len);
    if (rc == IWARP_ERR_TRACE_BOUND && !iwarp_trace_sink_bound_reached())
        rc = IWARP_TRACE_SCTP_STOPPED; /* another writer reported it already */
    iwarp_trace_sink_unlock();
    return rc;
}
