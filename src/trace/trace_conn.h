/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tracing one live TCP connection into a capture file (L6): what the TCP back-end writes to and
 * reads from its socket is recorded, as it happens, as a synthetic TCP conversation in a capture
 * file shared process-wide (trace/trace_sink.h): the connection's real addresses and ports,
 * SYN/SYN-ACK/ACK when it is set up, FIN or RST when it ends.
 *
 * MPA-aware segmentation: every MPA Request/Reply and every FPDU is written as its own TCP
 * segment (or several of at most the EMSS, which an FPDU never exceeds: RFC 5044 §4.5), so
 * Wireshark's MPA dissector can frame marker-bearing FPDUs (it locates markers from the TCP
 * segment and needs one FPDU per segment). The boundaries are found by re-deframing a copy of
 * each direction's octets with the library's own parsers: iwarp_mpa_frame_decode() for the
 * startup frames, then an iwarp_mpa_rx deframer set up from the two frames (RFC 5044 §7.1.1:
 * CRC if either frame has C=1; markers in a direction when the receiver's frame has M=1). The
 * traced connection is only observed: nothing here changes what goes on the wire, and a write
 * error only stops the tracing. Octets that are not MPA (a damaged or rejected stream) are
 * written as they come, in segments of at most the EMSS.
 *
 * The process's size bound (trace_sink.h): when a record would exceed it, this connection and
 * every other one stop recording, and the connection that reached it calls its bound callback,
 * once per process, after the sink lock is released.
 *
 * No allocation: the caller provides the two direction buffers at set-up.
 * Every call expects the owner's lock held (the connection's state); each takes the sink lock
 * (the file is shared by connections of every context) for its writes.
 */
#ifndef IWARP_TRACE_TRACE_CONN_H
#define IWARP_TRACE_TRACE_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "mpa/mpa_deframe.h"
#include "trace/pcap_writer.h"
#include "trace/trace_sink.h"

/* Octets one direction buffer holds: the largest FPDU (ULPDU_Length, a 64768-octet ULPDU, PAD,
 * CRC: 64777 octets, RFC 5044 §3) with a marker every 508 octets of it, rounded up. */
#define IWARP_TRACE_CONN_BUF 66560u

/* What one direction's octets are, at the current position. */
enum iwarp_trace_dir_phase {
    IWARP_TRACE_DIR_FRAME = 0, /* the MPA Request (client) or Reply (server) */
    IWARP_TRACE_DIR_WAIT = 1,  /* after the frame, waiting for the other side's frame */
    IWARP_TRACE_DIR_FPDU = 2,  /* full operation: FPDUs */
    IWARP_TRACE_DIR_RAW = 3,   /* not MPA (damaged, rejected): octets as they come */
};

/* One direction (octets sent by one side). Private to trace_conn.c. */
struct iwarp_trace_dir {
    uint8_t *buf;  /* IWARP_TRACE_CONN_BUF octets: the PDU being collected */
    uint32_t len;  /* octets in buf */
    uint8_t phase; /* enum iwarp_trace_dir_phase */
    bool frame_c;  /* this side's MPA frame: C (CRC) */
    bool frame_m;  /* this side's MPA frame: M (markers in what this side receives) */
    bool frame_r;  /* this side's MPA frame: a Reply with R (rejected) */
    struct iwarp_mpa_rx rx;
};

/* Called once per process when the size bound stops the trace: bound in octets. */
typedef void (*iwarp_trace_bound_fn)(void *user, uint64_t bound);

/* The time to stamp the next packets with, in ns since the Unix epoch. */
typedef uint64_t (*iwarp_trace_clock_fn)(void *user);

struct iwarp_trace_conn {
    struct iwarp_trace_sink *sink; /* shared, a reference held by the caller */
    iwarp_trace_bound_fn on_bound; /* may be NULL */
    void *on_bound_user;
    iwarp_trace_clock_fn clock; /* packet timestamps; NULL: the wall clock (CLOCK_REALTIME) */
    void *clock_user;
    struct iwarp_pcap_tcp tcp;     /* the synthetic conversation */
    enum iwarp_pcap_side local;    /* our side: CLIENT when we connected */
    uint32_t max_seg;              /* largest TCP payload we send: the connection's EMSS */
    uint32_t max_pkt;              /* largest TCP payload the peer sends: an IP packet's */
    bool open;                     /* the handshake was written: recording */
    bool done;                     /* closed, a write failed, or the bound: nothing recorded */
    bool bound_first;              /* this connection reached the bound first: report it */
    int err;                       /* the first writer error (IWARP_ERR_*, not the bound), or 0 */
    struct iwarp_trace_dir dir[2]; /* by sender: [IWARP_PCAP_CLIENT], [IWARP_PCAP_SERVER] */
};

/*
 * Prepares tc to trace one connection into sink. Nothing is written yet.
 *   bufs     - 2 * IWARP_TRACE_CONN_BUF octets for the two directions.
 *   on_bound - called (with user) when this connection's record is the one that reaches the
 *              process's size bound, outside the sink lock, owner's lock held; may be NULL.
 * Ownership: tc borrows sink (the caller holds a reference until it is done with tc) and bufs
 * (caller-owned, until the caller frees tc); user is passed back as it is.
 */
void iwarp_trace_conn_init(struct iwarp_trace_conn *tc, struct iwarp_trace_sink *sink,
                           uint8_t *bufs, iwarp_trace_bound_fn on_bound, void *user);

/*
 * Stamps tc's packets with clock's time instead of the wall clock (a reproducible capture: a
 * fixed clock gives fixed timestamps); the packets of one call to it are 1 ns apart. A time
 * earlier than the writer's next one is ignored, as the wall clock's is: the writer's own clock
 * then advances it (connections share a writer).
 * Call after iwarp_trace_conn_init(), before iwarp_trace_conn_open(). Ownership: user is passed
 * back to clock as it is.
 */
void iwarp_trace_conn_set_clock(struct iwarp_trace_conn *tc, iwarp_trace_clock_fn clock,
                                void *user);

/*
 * The TCP connection is established: writes the three-way handshake from the client (active
 * opener) to the server with the real addresses and ports.
 *   active      - true when we connected (we are the client), false when we accepted.
 *   local, peer - the socket's own and the peer's address (AF_INET or AF_INET6, same family).
 *   emss        - the connection's EMSS: the largest TCP payload recorded per segment we
 *                 send (the peer's FPDUs are recorded whole: they fit the peer's EMSS).
 * Ownership: the addresses are copied. Returns 0, IWARP_ERR_INVAL (family), IWARP_ERR_STATE
 * (opened before), IWARP_ERR_TRACE_BOUND (the process's bound is reached) or a writer error
 * (tracing of tc stops; the connection is unaffected).
 */
int iwarp_trace_conn_open(struct iwarp_trace_conn *tc, bool active, const struct sockaddr *local,
                          const struct sockaddr *peer, uint32_t emss);

/* The connection's EMSS is now emss: our segments in the capture follow it (as TCP's do). */
void iwarp_trace_conn_set_emss(struct iwarp_trace_conn *tc, uint32_t emss);

/*
 * Records that the first n octets described by iov[0..iovcnt) were written to the socket.
 * Ownership: the octets are copied as needed; nothing is kept.
 */
void iwarp_trace_conn_tx(struct iwarp_trace_conn *tc, const struct iovec *iov, size_t iovcnt,
                         size_t n);

/* Records that data[0..n) was read from the socket. Ownership: copied as needed, not kept. */
void iwarp_trace_conn_rx(struct iwarp_trace_conn *tc, const uint8_t *data, size_t n);

/* Records a FIN: sent by us (local) or read from the peer (end of stream). A direction's
 * unfinished PDU is written first, as it is. Ignored after a FIN from that side or a RST. */
void iwarp_trace_conn_fin(struct iwarp_trace_conn *tc, bool local);

/* Records a RST: ours (abortive close) or the peer's (connection reset). Ignored after one. */
void iwarp_trace_conn_rst(struct iwarp_trace_conn *tc, bool local);

/*
 * The socket is closed: writes what is still buffered (unfinished PDUs, as they are), flushes
 * the file (a valid capture of the connection on disk) and stops recording. Safe to call more
 * than once and on a connection never opened.
 */
void iwarp_trace_conn_close(struct iwarp_trace_conn *tc);

#endif
