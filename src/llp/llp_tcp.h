/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The TCP back-end (L6): a kernel TCP socket (non-blocking, TCP_NODELAY) and the MPA
 * connection (llp_conn) it carries, and a listening socket. It moves octets between the
 * socket and the connection's buf/ack calls and turns end of stream and socket errors into
 * iwarp_llp_conn_closed(). It knows nothing of the progress loop: its owner watches the fd,
 * calls iwarp_llp_tcp_on_readable()/on_writable() when the socket is ready (or when new TX
 * work is posted), and asks iwarp_llp_tcp_interest() which readiness to wait for next.
 *
 * Every call expects the context lock held (the connection's QP engine is reached through it).
 * The owner may let go of it around the system calls that move octets on the open socket
 * (io_begin/io_end below).
 *
 * Tracing: when t->trace is set (before iwarp_llp_tcp_connect/adopt), the connection's octets
 * in both directions, its set-up and its end are recorded through it (trace/trace_conn.h); when
 * it is NULL the cost is one branch per read or write.
 */
#ifndef IWARP_LLP_LLP_TCP_H
#define IWARP_LLP_LLP_TCP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "llp/llp_conn.h"
#include "trace/trace_conn.h"

/* How long a closing stream may take to end both ways when the owner sets no linger_ns. */
#define IWARP_LLP_TCP_LINGER_NS 3000000000ull

/*
 * Transmit batching (docs/design.md, "Batching small posts"). A post leaves at once (a lone WR
 * pays no delay) when nothing waits in a batch and the connection is idle: it has written
 * nothing for batch_ns, or the peer has sent something since our last write (an answer: a
 * request-response exchange never waits). Any other post joins a batch, written when
 * IWARP_LLP_TCP_BATCH_MAX posts are waiting, when the application next polls or waits on a CQ, or
 * batch_ns after the batch began, whichever comes first.
 */
/* Four times the FPDUs one write describes (IWARP_LLP_CONN_TX_SEGS): a full batch is written in
 * writes of up to 16 FPDUs, back to back, which a sleeping peer takes in about one wakeup; a
 * batch of 16 cost a wakeup per 16 posts (docs/design.md: 64 B Writes in event mode 1.7-1.9x
 * faster at 64). */
#define IWARP_LLP_TCP_BATCH_MAX (4u * IWARP_LLP_CONN_TX_SEGS)

/* Interest bits returned by iwarp_llp_tcp_interest(). */
#define IWARP_LLP_TCP_WANT_READ  1u
#define IWARP_LLP_TCP_WANT_WRITE 2u

enum iwarp_llp_tcp_phase {
    IWARP_LLP_TCP_IDLE = 0,       /* no socket */
    IWARP_LLP_TCP_CONNECTING = 1, /* non-blocking connect() in progress */
    IWARP_LLP_TCP_OPEN = 2,       /* connected; the MPA connection runs */
    IWARP_LLP_TCP_DONE = 3,       /* the stream is over (both directions, or failed) */
};

struct iwarp_llp_tcp {
    int fd;
    uint8_t phase;     /* enum iwarp_llp_tcp_phase */
    bool conn_ready;   /* conn was initialised (iwarp_llp_tcp_start) */
    bool rx_eof;       /* the peer's FIN was read */
    bool fin_sent;     /* shutdown(SHUT_WR) done: our FIN is queued */
    bool fin_wanted;   /* iwarp_llp_tcp_shutdown(): FIN once the pending octets are written */
    bool llp_closed;   /* iwarp_llp_conn_closed() was called */
    bool tx_blocked;   /* the last write would have blocked: wait for writability */
    uint64_t batch_ns; /* the batching window, set by the owner (0: no batching) */
    /* Set by the owner before connect/adopt: the connected socket's TCP_USER_TIMEOUT, how long
     * sent octets may stay unacknowledged or unsent behind a shut window before the kernel
     * drops the connection (ETIMEDOUT: IWARP_ERR_UNREACHABLE). 0: the kernel's own limits. */
    uint32_t user_timeout_ms;
    uint64_t last_tx_ns;   /* when a write last moved octets */
    bool rx_since_tx;      /* octets were read after that write (the peer answered) */
    uint32_t rcvlowat;     /* the socket's SO_RCVLOWAT (0: never set, the kernel's 1) */
    uint32_t large_writes; /* writes of at least TCP_EMSS_LARGE octets (llp_tcp.c follow_emss) */
    uint32_t tx_batched;   /* posts waiting in the current batch (0: none) */
    uint64_t tx_batch_ns;  /* the batch's latest departure, when tx_batched */
    int err;               /* first transport error (IWARP_ERR_CONN_*), or 0 */
    uint32_t emss;         /* TCP_MAXSEG of the connected socket */
    /* TCP_INFO's retransmission counters as read when the socket was closed
     * (iwarp_llp_tcp_retrans) */
    uint64_t retrans_bytes, retrans_segs;
    struct sockaddr_storage local, peer;
    struct iwarp_llp_conn conn;
    /* NULL: no tracing. Set by the owner on a zeroed t before connect/adopt; borrowed (the
     * owner frees it after iwarp_llp_tcp_close, which closes it). */
    struct iwarp_trace_conn *trace;
    /* The close's time limit, set by the owner before the close begins (0:
     * IWARP_LLP_TCP_LINGER_NS). Once
     * the close has begun (iwarp_llp_tcp_linger, or our FIN sent), the stream has this long to
     * end both ways; then it is reset. */
    uint64_t linger_ns;
    uint64_t linger_deadline; /* 0: the close has not begun */
    /* Called just before and just after each system call on the open socket that moves octets
     * or follows the stream (recvmsg, recv, sendmsg, the EMSS and receive-mark options), with
     * io_user; NULL: not called. Between them the owner may let go of its lock, provided that
     * no other thread calls into t meanwhile except iwarp_llp_tcp_post, _interest and
     * _next_timeout (which only look at state, or add to a batch), and that the memory the
     * iovecs name stays. */
    void (*io_begin)(void *user);
    void (*io_end)(void *user);
    void *io_user;
};

/* A listening socket. */
struct iwarp_llp_tcp_listener {
    int fd;
    struct sockaddr_storage local; /* the bound address (port filled in) */
};

/*
 * Start a non-blocking TCP connection to dst (IPv4 or IPv6), from src when it is not NULL.
 * t must be zeroed. The connection is complete when the socket becomes writable: then call
 * iwarp_llp_tcp_on_writable(), which finishes it (iwarp_llp_tcp_connected() tells).
 * Returns 0; IWARP_ERR_INVAL (bad address); IWARP_ERR_ADDR (src not bindable);
 * IWARP_ERR_CONN_REFUSED / IWARP_ERR_UNREACHABLE when connect() fails at once; IWARP_ERR_IO.
 */
int iwarp_llp_tcp_connect(struct iwarp_llp_tcp *t, const struct sockaddr *dst,
                          const struct sockaddr *src);

/*
 * Adopt an accepted, connected, non-blocking socket (iwarp_llp_tcp_accept). t must be zeroed.
 * Ownership: fd is owned by t from now on (closed by iwarp_llp_tcp_close). Returns 0 or
 * IWARP_ERR_IO (fd is closed then).
 */
int iwarp_llp_tcp_adopt(struct iwarp_llp_tcp *t, int fd);

/*
 * The connection's TCP retransmissions (llp_tcp_info.h): read from the socket while it is
 * open, else as read when iwarp_llp_tcp_close closed it (0 for one never opened). A
 * getsockopt under the owner's lock: statistics queries only, never the data path.
 */
void iwarp_llp_tcp_retrans(struct iwarp_llp_tcp *t, uint64_t *bytes, uint64_t *segs);

/* Whether the TCP connection is established (phase OPEN or later with no connect error). */
bool iwarp_llp_tcp_connected(const struct iwarp_llp_tcp *t);

/*
 * Initialise the MPA connection once TCP is connected: cfg->emss is replaced by the socket's
 * TCP_MAXSEG so every FPDU fits one TCP segment (RFC 5044 §3, §4.5 EMSS). Queued negotiation
 * octets (the initiator's Request) go out on the next on_writable.
 * Ownership: bounce and txf are borrowed as by iwarp_llp_conn_init. Returns 0, IWARP_ERR_STATE
 * (not connected) or the iwarp_llp_conn_init error.
 */
int iwarp_llp_tcp_start(struct iwarp_llp_tcp *t, const struct iwarp_llp_conn_cfg *cfg,
                        uint8_t *bounce, struct iwarp_llp_conn_txf *txf, uint64_t now_ns);

/*
 * The socket is readable (or has an error/hangup): read until the kernel has nothing more or
 * the connection takes nothing more, feeding the MPA connection. End of stream and errors are
 * reported to the connection (iwarp_llp_conn_closed). Then writes whatever became ready (MPA
 * Reply, Terminate, Read Responses). now_ns: the current time.
 */
void iwarp_llp_tcp_on_readable(struct iwarp_llp_tcp *t, uint64_t now_ns);

/*
 * The socket is writable, or new TX work was posted (the QP's kick): finish a pending
 * connect, then write what the connection has ready until it is empty or the socket is full.
 * When the connection wants the transport closed and everything is written, sends our FIN.
 */
void iwarp_llp_tcp_on_writable(struct iwarp_llp_tcp *t, uint64_t now_ns);

/*
 * New work was posted at now_ns (the QP's kick). Returns true when the caller writes it now
 * (iwarp_llp_tcp_on_writable): the connection is idle (see above), or the batch is full. False: the
 * post joins the batch; the caller makes sure it is written by the next poll of a CQ, and arms
 * its timer for iwarp_llp_tcp_next_timeout() (the batch's deadline, when this post began it).
 */
bool iwarp_llp_tcp_post(struct iwarp_llp_tcp *t, uint64_t now_ns);

/* The readiness to wait for next (IWARP_LLP_TCP_WANT_*; 0 when the stream is over). */
uint32_t iwarp_llp_tcp_interest(struct iwarp_llp_tcp *t);

/*
 * Graceful close: flush what can be written and send our FIN (the connection's own CLOSE
 * state does the same by itself). Use after the QP has drained.
 */
void iwarp_llp_tcp_shutdown(struct iwarp_llp_tcp *t, uint64_t now_ns);

/*
 * The close has begun (our disconnect with the QP still draining, an MPA Reject on its way):
 * from now_ns the stream has t->linger_ns to end both ways, else iwarp_llp_tcp_handle_timeout()
 * resets it. Sending our FIN starts the same limit by itself; a limit already running is kept.
 */
void iwarp_llp_tcp_linger(struct iwarp_llp_tcp *t, uint64_t now_ns);

/* When iwarp_llp_tcp_handle_timeout() must run next: the close's limit, a batch's deadline or
 * the MPA connection's own timer (iwarp_llp_conn_next_timeout), whichever is first;
 * UINT64_MAX when none runs. */
uint64_t iwarp_llp_tcp_next_timeout(const struct iwarp_llp_tcp *t);

/* Time has come (now_ns >= the next timeout): a close past its limit is reset (the MPA
 * connection learns of the end); otherwise the MPA connection's timer runs and what it queued
 * is written, a waiting batch included. */
void iwarp_llp_tcp_handle_timeout(struct iwarp_llp_tcp *t, uint64_t now_ns);

/*
 * Close the socket. abortive: reset the connection (SO_LINGER 0: the peer sees a RST);
 * otherwise a normal close. Reports the end to the MPA connection if it had not seen it.
 * Safe to call more than once.
 */
void iwarp_llp_tcp_close(struct iwarp_llp_tcp *t, bool abortive);

/*
 * Bind (SO_REUSEADDR; IPV6_V6ONLY for IPv6 addresses but ::, which takes IPv4 connections too,
 * as ::ffff:a.b.c.d) and listen with backlog on addr. l
 * need not be initialised. Returns 0, IWARP_ERR_INVAL, IWARP_ERR_ADDR (address in use or not
 * local) or IWARP_ERR_IO.
 */
int iwarp_llp_tcp_listen(struct iwarp_llp_tcp_listener *l, const struct sockaddr *addr,
                         int backlog);

/*
 * Accept one pending connection as a non-blocking socket. Returns the fd (>= 0, owned by the
 * caller: pass it to iwarp_llp_tcp_adopt), IWARP_ERR_BUSY when none is pending,
 * IWARP_ERR_NOMEM when the process or the system is out of file descriptors or socket memory
 * (EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays queued), or IWARP_ERR_IO.
 */
int iwarp_llp_tcp_accept(struct iwarp_llp_tcp_listener *l);

/* How many connections wait in the listener's accept queue (TCP_INFO's tcpi_unacked, which
 * Linux fills with the queue's length for a listening socket); 1 when it cannot be read. An
 * accept() out of file descriptors fails before it looks at the queue: this tells whether a
 * connection is really waiting. */
uint32_t iwarp_llp_tcp_listener_queued(const struct iwarp_llp_tcp_listener *l);

/* Close the listening socket (safe to call more than once). */
void iwarp_llp_tcp_listener_close(struct iwarp_llp_tcp_listener *l);

/* Length of a sockaddr by its family (0 for families other than AF_INET/AF_INET6). */
socklen_t iwarp_llp_tcp_addrlen(const struct sockaddr *sa);

#endif
