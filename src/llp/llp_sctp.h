/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SCTP back-end (L6), lower half of DDP over SCTP (RFC 5043): usrsctp 0.9.5 in its
 * no-threads AF_CONN mode, its packets carried as UDP datagrams (RFC 6951 encapsulation) over
 * sockets this file owns. It moves whole SCTP user messages (DDP-SSN + DDP segment, or a
 * session control message) between the owner and one unordered SCTP stream each; the DDP-SSN,
 * the PPID rules and session control belong to the layers above (src/wire, src/session).
 * This is the only file of libiwarp that includes usrsctp.h.
 *
 * Structure:
 * - One process-wide usrsctp stack, initialised with usrsctp_init_nothreads() when the first
 *   endpoint opens and finished (bounded, deterministic) when the last one closes. Its CRC32c
 *   is offloaded to us: the packets this file sends get theirs from ISA-L, and a packet that
 *   arrives with a wrong one is discarded here (RFC 9260 §6.8) before usrsctp sees it.
 * - An endpoint = one non-blocking UDP socket (bound to the given address, 127.0.0.1:0 by
 *   default) + one registered AF_CONN address per remote UDP address it talks to (a "path";
 *   usrsctp hands that address to the output function, so it names the datagram's
 *   destination). Every endpoint acts as a separate SCTP host.
 * - Associations are 1:1 (SOCK_STREAM) and non-blocking: iwarp_llp_sctp_connect() and
 *   iwarp_llp_sctp_listen() + its accept callback.
 * - No thread, no clock of its own: the owner polls each endpoint's fd for reading and calls
 *   iwarp_llp_sctp_on_readable(), polls its wake fd and calls iwarp_llp_sctp_owner_collect(),
 *   and calls iwarp_llp_sctp_timers() by the deadline it returns (the timer wheel is usrsctp's,
 *   process-wide). Both take the owner's monotonic time in ns.
 *   Nothing here knows the progress loop (src/loop): its sources map onto these calls as
 *   llp_tcp's do.
 *
 * Receive path: usrsctp's receive callback, not usrsctp_recvv + upcalls. In no-threads mode the
 * callback runs inside usrsctp_conninput()/usrsctp_handle_timers(), that is inside
 * iwarp_llp_sctp_on_readable()/iwarp_llp_sctp_timers(), on the owner's thread and under its
 * lock; it hands over a buffer it malloc'ed holding exactly one message, which on_chunk passes
 * on: the owner keeps it as long as it likes (a DDP-SSN reorder window holds out-of-order
 * chunks without copying) and frees it with iwarp_llp_sctp_chunk_free(). recvv would need a
 * read per message into a buffer of ours (a copy whenever a chunk must wait) and a second
 * readiness mechanism. The callback also delivers notifications in order with the data.
 *
 * Owners, the usrsctp lock and threads: usrsctp's stack, timer wheel and callbacks are
 * process-wide (a retransmission timeout of association A runs inside whichever call drove the
 * timers), while its users are several: an owner (iwarp_llp_sctp_owner_open; in libiwarp, a
 * context) is a party with its own lock and its own thread(s) that opens endpoints and drives
 * them. This file is the one owner of usrsctp: every function below takes its process-wide
 * usrsctp lock, which serialises all of usrsctp for all owners (a function called from inside
 * a callback, on the thread that holds it already, does not take it again). A call made for
 * owner O (an endpoint's, an association's or listener's of O's endpoints, or timers(O)) runs
 * only O's callbacks: whatever usrsctp reports for another owner's association in it (a timer
 * of that association firing, typically: it was lost, or can send again) is noted under the
 * lock with the association and that owner's wake fd (iwarp_llp_sctp_owner_fd) becomes
 * readable; its callbacks then run in its next iwarp_llp_sctp_owner_collect(). Received data
 * only comes in through the endpoint's own socket, i.e. in its owner's on_readable(), so the
 * data path never needs that detour.
 *
 * Lock order: an owner calls in holding its own lock (in libiwarp the context lock), and the
 * usrsctp lock is taken inside: owner's lock, then the usrsctp lock, never the reverse. So a
 * callback (which runs with both held) must not take another owner's lock, nor wait for a
 * thread that might; an owner must not call in from a thread that holds the usrsctp lock for
 * another owner (no cross-owner calls from callbacks).
 *
 * Callbacks (on_up, on_down, on_chunk, on_writable, accept) run inside on_readable, timers,
 * send_chunk, shutdown, connect, close and owner_collect of their owner, with the owner's lock
 * and the usrsctp lock held. They may call any function here except
 * iwarp_llp_sctp_ep_close(), iwarp_llp_sctp_listener_close() and the owner_* functions; a close
 * from a callback is carried out when the outermost call returns, and no callback of that
 * association runs after iwarp_llp_sctp_close() returns. The capture hook is the exception: it
 * runs in whichever owner's call sends or receives the packet.
 *
 * Error returns: 0 or a negative IWARP_ERR_*.
 */
#ifndef IWARP_LLP_LLP_SCTP_H
#define IWARP_LLP_LLP_SCTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "wire/wire_sctp.h"

/* The RFC 5043 constants and checks (the Adaptation Layer Indication value, the DDP-SSN
 * length, the 516-octet minimum of the maximum segment; §5.1 and §8 after COMM_UP) are
 * wire_sctp's (wire/wire.h, wire/wire_sctp.h). */

/* The network MTU an endpoint mimics unless told otherwise (IP MTU: UDP/IP headers inside). */
#define IWARP_LLP_SCTP_DEFAULT_MTU      1500u
/* RFC 5043 §9 SHOULD: room left below the fragmentation point so a SACK can be bundled. */
#define IWARP_LLP_SCTP_DEFAULT_HEADROOM 32u
#define IWARP_LLP_SCTP_DEFAULT_STREAMS  8u

/*
 * Memory. Everything this file allocates for an owner (its endpoints, listeners, associations,
 * paths, buffers, queue entries, messages put together from pieces) comes from the allocator
 * the owner gave iwarp_llp_sctp_owner_open(), and is given back to it. These use libc instead
 * (include/iwarp/verbs.h lists them for the application):
 * - usrsctp's own allocations (stack, sockets, timers, mbufs): it has no allocator hook;
 * - a message usrsctp hands over (on_chunk) in a buffer it malloc'ed: freed with libc's free
 *   (iwarp_llp_sctp_chunk_free), as its receive callback requires; copying it into the
 *   owner's memory would cost a copy per message;
 * - the process-wide table of path handles (one pointer per remote UDP address of any
 *   owner's endpoints): it outlives the owner whose endpoint grew it and is freed with the
 *   last endpoint of the process, possibly another owner's, so no owner's allocator fits;
 * - fault injection's delayed copies of outgoing packets (a test hook): usrsctp sends in
 *   whichever owner's call its timers run, and an owner's allocator is only called in that
 *   owner's own calls.
 * So the allocator runs in its owner's calls only (with the usrsctp lock held too): what needs
 * memory at once inside usrsctp's callbacks (a message, an incoming association until it is
 * accepted, which is in the same call) comes in through the endpoint's own socket, i.e. in
 * the owner's on_readable(), and whatever else concerns an owner is settled in its calls.
 */
struct iwarp_llp_sctp_alloc {
    void *(*calloc_fn)(void *user, size_t n, size_t size); /* zeroed, or NULL */
    void (*free_fn)(void *user, void *ptr);                /* ptr is never NULL */
    void *user;
};

struct iwarp_llp_sctp_owner;
struct iwarp_llp_sctp_ep;
struct iwarp_llp_sctp_assoc;
struct iwarp_llp_sctp_listener;

/*
 * Fault injection on an endpoint's outgoing packets, reproducible from the seed (each endpoint
 * has its own generator). Probabilities in parts per million, drawn per packet in this order:
 * drop; else duplicate (sent twice); else delay by delay_ms (later packets overtake it); else
 * corrupt (one bit flipped after the checksum is computed: the peer must discard it).
 */
struct iwarp_llp_sctp_fault {
    uint64_t seed; /* 0: no fault injection */
    uint32_t drop_ppm, dup_ppm, delay_ppm;
    uint32_t delay_ms;
    uint32_t corrupt_ppm;
};

/* Packet capture hook: each datagram payload (an SCTP packet) as it leaves (after fault
 * injection: duplicates twice, drops never) or arrives, with the UDP addresses. */
enum { IWARP_LLP_SCTP_PKT_OUT = 0, IWARP_LLP_SCTP_PKT_IN = 1 };
typedef void (*iwarp_llp_sctp_capture_fn)(void *user, int dir, const struct sockaddr *local,
                                          const struct sockaddr *peer, const uint8_t *pkt,
                                          size_t len, uint64_t now_ns);

struct iwarp_llp_sctp_ep_cfg {
    const struct sockaddr *addr; /* local UDP address (IPv4/IPv6; port 0: any); NULL: 127.0.0.1:0 */
    struct iwarp_llp_sctp_owner *owner; /* whose calls run its callbacks (required) */
    uint16_t nstreams;       /* INITMSG N in / N out (RFC 5043 §8); 0: DEFAULT_STREAMS */
    uint32_t mtu;            /* network MTU to mimic (the path MTU is mtu - IP - UDP); 0: 1500 */
    uint32_t headroom;       /* bytes kept below the fragmentation point; 0: DEFAULT_HEADROOM */
    uint32_t sndbuf, rcvbuf; /* SCTP socket buffers; 0: usrsctp's defaults */
    uint32_t udp_rcvbuf;     /* UDP socket receive buffer; 0: 4 MiB */
    struct iwarp_llp_sctp_fault fault;
    iwarp_llp_sctp_capture_fn capture; /* NULL: none */
    void *capture_user;
    /* Test hooks: make this endpoint a non-conforming peer. */
    bool test_no_adaptation;      /* send no Adaptation Layer Indication */
    uint32_t test_adaptation_ind; /* send this value instead of 1 (0: 1) */
    uint16_t test_max_instreams;  /* INITMSG max inbound streams (0: nstreams) */
    uint32_t test_msg_max;        /* send messages up to this size, above the maximum segment
                                     (SCTP fragments them: RFC 5043 §9 broken); 0: no */
};

struct iwarp_llp_sctp_stats {
    uint64_t pkts_out, bytes_out, pkts_in, bytes_in;
    uint64_t fault_dropped, fault_duplicated, fault_delayed, fault_corrupted;
    uint64_t udp_errors;                   /* sendto failures (the packet is lost) */
    uint64_t rx_dropped;                   /* datagrams not fed to the stack (short, foreign) */
    uint64_t rx_bad_crc;                   /* packets discarded for their CRC32c (§6.8) */
    uint64_t tx_gathered, tx_gather_bytes; /* sends copied into the gather buffer */
    uint64_t rx_reassembled;               /* messages that came in pieces (copied together) */
    uint64_t send_failed, remote_errors;   /* SEND_FAILED / REMOTE_ERROR notifications */
};

/* The owner's side of an association. user is passed back to each. */
struct iwarp_llp_sctp_ops {
    /* The association is up and conforms to RFC 5043 (§5.1 adaptation, §8 equal stream
     * counts): nstreams streams each way, DDP segments up to max_seg octets (§9). */
    void (*on_up)(void *user, uint16_t nstreams, uint32_t max_seg);
    /* It is over: 0 after a graceful shutdown, IWARP_ERR_SCTP_ASSOC_LOST (aborted or lost),
     * IWARP_ERR_UNREACHABLE (could not be set up), IWARP_ERR_SCTP_ADAPTATION /
     * IWARP_ERR_SCTP_STREAMS (we refused the peer and aborted), IWARP_ERR_SCTP_MSGSIZE (the
     * peer sent a message too large to take). Called once; the owner still calls
     * iwarp_llp_sctp_close(). */
    void (*on_down)(void *user, int err);
    /* One complete message on stream sid. ppid in host order; unordered: the U bit (RFC 5043
     * §10 requires it; checking is the session layer's job). Ownership: buf (len octets)
     * passes to the owner, who frees it with iwarp_llp_sctp_chunk_free() before it closes. */
    void (*on_chunk)(void *user, uint16_t sid, uint32_t ppid, bool unordered, void *buf,
                     size_t len);
    /* A send that returned IWARP_ERR_BUSY can be retried. NULL: not wanted. */
    void (*on_writable)(void *user);
};

/* An incoming association: a (the owner calls iwarp_llp_sctp_set_ops on it inside this
 * callback; on_up follows at once) with err 0, or a == NULL and the reason an association
 * was refused and aborted (IWARP_ERR_SCTP_ADAPTATION, IWARP_ERR_SCTP_STREAMS, ...). */
typedef void (*iwarp_llp_sctp_accept_fn)(void *user, struct iwarp_llp_sctp_assoc *a, int err);

/*
 * Test hook, process-wide: RTO min/initial/max in ms (also the INIT RTO max; the delayed-SACK
 * time becomes min(200, rto_min / 2) and the timer tick min(10, rto_min / 4) ms). Applied now
 * if the stack is up and after every init. All zero: usrsctp's defaults (1 s / 3 s / 60 s).
 */
void iwarp_llp_sctp_set_test_timers(uint32_t rto_min_ms, uint32_t rto_initial_ms,
                                    uint32_t rto_max_ms);

/*
 * Test hook, process-wide: the heartbeat interval in ms (usrsctp adds the path's RTO to it).
 * A peer that dies while the association is idle (nothing to retransmit) is only found by
 * unanswered heartbeats: assoc_rtx_max + 1 of them. Applied now if the stack is up and after
 * every init. Zero: usrsctp's default (30 s).
 */
void iwarp_llp_sctp_set_test_heartbeat(uint32_t hb_ms);

/* Whether the usrsctp stack is initialised (tests: it is finished once the last endpoint
 * closes). */
bool iwarp_llp_sctp_stack_active(void);

/*
 * A new owner (see "Owners" above), with its wake fd (an eventfd). alloc: its allocator (see
 * "Memory"; copied; NULL: libc's); the owner itself is allocated with it. Returns 0 (*out
 * set), IWARP_ERR_INVAL, IWARP_ERR_NOMEM, IWARP_ERR_IO. Not from inside a callback.
 */
int iwarp_llp_sctp_owner_open(const struct iwarp_llp_sctp_alloc *alloc,
                              struct iwarp_llp_sctp_owner **out);

/* Free an owner whose endpoints are all closed and whose messages are all given back. Not from
 * inside a callback. */
void iwarp_llp_sctp_owner_close(struct iwarp_llp_sctp_owner *o);

/* The fd to poll for reading: readable while events of o's associations noted in another
 * owner's call wait for iwarp_llp_sctp_owner_collect(). */
int iwarp_llp_sctp_owner_fd(const struct iwarp_llp_sctp_owner *o);

/* Run the callbacks of the events noted for o in other owners' calls (on_up, on_down,
 * on_chunk, on_writable, accept; in o's call now) and make the wake fd quiet again. */
void iwarp_llp_sctp_owner_collect(struct iwarp_llp_sctp_owner *o);

/*
 * Open an endpoint of cfg->owner (and the stack with the first one of the process). Ownership:
 * cfg and its addr are copied; the owner must outlive the endpoint. Returns 0; IWARP_ERR_INVAL
 * (bad cfg: no owner, address family, mtu too small for RFC 5043's 516 B segment);
 * IWARP_ERR_ADDR (cannot bind); IWARP_ERR_NOMEM; IWARP_ERR_IO.
 */
int iwarp_llp_sctp_ep_open(const struct iwarp_llp_sctp_ep_cfg *cfg,
                           struct iwarp_llp_sctp_ep **ep_out);

/* Test hook: ep's fault injection from now on (NULL: none). Packets already delayed still
 * leave when due. */
void iwarp_llp_sctp_ep_set_fault(struct iwarp_llp_sctp_ep *ep,
                                 const struct iwarp_llp_sctp_fault *fault);

/*
 * Close an endpoint: aborts its associations (peers see them lost; no callback runs), closes
 * its listeners, frees everything, and with the last endpoint finishes the stack (bounded: a
 * stack that will not finish stays initialised for the next open). Every association and
 * listener pointer of ep is invalid afterwards. Not from inside a callback.
 */
void iwarp_llp_sctp_ep_close(struct iwarp_llp_sctp_ep *ep);

/* The UDP socket to poll for reading (POLLIN / EPOLLIN). */
int iwarp_llp_sctp_ep_fd(const struct iwarp_llp_sctp_ep *ep);

/* The bound local UDP address (port filled in); returns its length. */
socklen_t iwarp_llp_sctp_ep_local(const struct iwarp_llp_sctp_ep *ep, struct sockaddr_storage *out);

/* Counters of the endpoint (a copy). */
void iwarp_llp_sctp_ep_stats(const struct iwarp_llp_sctp_ep *ep, struct iwarp_llp_sctp_stats *out);

/*
 * The fd is readable: read the waiting datagrams (a bounded batch; call again while it stays
 * readable), feed them to the stack and run the resulting callbacks. now_ns: monotonic time.
 * Returns false when the first read brought nothing (EAGAIN, or an error): then nothing else
 * was done.
 */
bool iwarp_llp_sctp_on_readable(struct iwarp_llp_sctp_ep *ep, uint64_t now_ns);

/*
 * Drive the process-wide timers up to now_ns (retransmissions, delayed SACKs, heartbeats,
 * shutdown guard) and send fault-delayed packets that are due, in owner o's call (o's
 * callbacks run; other owners' are noted for them). Returns the next deadline (absolute, ns),
 * UINT64_MAX when no endpoint is open. Harmless to call early or often.
 */
uint64_t iwarp_llp_sctp_timers(struct iwarp_llp_sctp_owner *o, uint64_t now_ns);

/*
 * Listen for associations on SCTP port sctp_port (0: the endpoint's UDP port number) of ep.
 * Each incoming association is accepted and checked (RFC 5043 §5.1, §8) and then given to
 * accept_fn. Ownership: the listener belongs to ep (closed with it or by
 * iwarp_llp_sctp_listener_close). Returns 0, IWARP_ERR_ADDR (port taken), IWARP_ERR_NOMEM,
 * IWARP_ERR_IO.
 */
int iwarp_llp_sctp_listen(struct iwarp_llp_sctp_ep *ep, uint16_t sctp_port, int backlog,
                          iwarp_llp_sctp_accept_fn accept_fn, void *user,
                          struct iwarp_llp_sctp_listener **l_out);

/* Close a listener; associations it has handed out stay. Not from inside a callback. */
void iwarp_llp_sctp_listener_close(struct iwarp_llp_sctp_listener *l);

/*
 * Start an association from ep to the peer at UDP address peer (SCTP port peer_sctp_port; 0:
 * the peer's UDP port number). ops->on_up or ops->on_down follows. Ownership: peer is copied;
 * ops is borrowed until close. Returns 0 (*a_out set), IWARP_ERR_INVAL, IWARP_ERR_NOMEM,
 * IWARP_ERR_IO.
 */
int iwarp_llp_sctp_connect(struct iwarp_llp_sctp_ep *ep, const struct sockaddr *peer,
                           uint16_t peer_sctp_port, const struct iwarp_llp_sctp_ops *ops,
                           void *user, struct iwarp_llp_sctp_assoc **a_out);

/* Set (or change) the owner callbacks of an association (of an accepted one: inside
 * accept_fn). Ownership: ops is borrowed until close. */
void iwarp_llp_sctp_set_ops(struct iwarp_llp_sctp_assoc *a, const struct iwarp_llp_sctp_ops *ops,
                            void *user);

/*
 * Send one message (iov[0..n) gathered: the DDP-SSN and the segment) on stream sid with PPID
 * ppid (host order), always unordered (RFC 5043 §10). The message may not exceed
 * max_seg + IWARP_SCTP_SSN_LEN octets (RFC 5043 §9: reject larger segments). Ownership: the
 * data is copied (usrsctp's send buffer; more than one iovec is first gathered into the
 * association's buffer). Returns 0; IWARP_ERR_SCTP_MSGSIZE; IWARP_ERR_BUSY (send buffer full:
 * on_writable follows); IWARP_ERR_INVAL (sid >= nstreams, empty message); IWARP_ERR_STATE (not
 * up yet); IWARP_ERR_SCTP_ASSOC_LOST or the on_down error (it is over); IWARP_ERR_IO.
 */
int iwarp_llp_sctp_send_chunk(struct iwarp_llp_sctp_assoc *a, uint16_t sid, uint32_t ppid,
                              const struct iovec *iov, size_t n);

/* Test hook: send a's later chunks ordered (U=0) while ordered is true, against RFC 5043 §10,
 * to make this side a non-conforming peer. */
void iwarp_llp_sctp_test_set_ordered(struct iwarp_llp_sctp_assoc *a, bool ordered);

/* Whether src is the bound address of an endpoint of this process with a capture hook: a
 * datagram from it was already captured as it left (a capture hook may skip its arrival so a
 * process talking to itself records each packet once). Owner lock held. */
bool iwarp_llp_sctp_captured_here(const struct sockaddr *src);

/* DATA chunks sent and not yet acknowledged by the peer (SCTP_STATUS; RFC 5043 §10's bound is
 * kept against it). 0 when closed. */
uint32_t iwarp_llp_sctp_unacked(const struct iwarp_llp_sctp_assoc *a);

/* The peer's UDP address (its length; 0 when unknown, e.g. after close). */
socklen_t iwarp_llp_sctp_peer(const struct iwarp_llp_sctp_assoc *a, struct sockaddr_storage *out);

/* Largest DDP segment (0 until up) and stream count (0 until up). */
uint32_t iwarp_llp_sctp_max_seg(const struct iwarp_llp_sctp_assoc *a);
uint16_t iwarp_llp_sctp_nstreams(const struct iwarp_llp_sctp_assoc *a);

/* Graceful shutdown: SHUTDOWN once everything sent is acknowledged; the peer sees its end
 * (on_down 0 on both sides when complete). Receiving continues meanwhile. */
int iwarp_llp_sctp_shutdown(struct iwarp_llp_sctp_assoc *a);

/*
 * Release an association (exactly once, also after on_down). abortive: ABORT now (SO_LINGER
 * {1,0}; the peer sees it lost); otherwise a graceful SHUTDOWN completes in the background
 * (aborted if its endpoint closes first). No callback of a runs after this returns; a is
 * invalid.
 */
void iwarp_llp_sctp_close(struct iwarp_llp_sctp_assoc *a, bool abortive);

/* Give back a message received through on_chunk: to libc's free when usrsctp allocated it, to
 * its owner's allocator when it was put together from pieces here. From any thread; it takes
 * the usrsctp lock (lock order above) only while such put-together messages are out. */
void iwarp_llp_sctp_chunk_free(void *buf);

#endif
