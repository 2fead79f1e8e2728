/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One SCTP association carrying DDP streams (RFC 5043), sans I/O: the upper half of DDP over
 * SCTP. Each SCTP stream of the association carries at most one DDP Stream Session at a time
 * (§5.2, §6): its session control machine (session_ctl), its DDP-SSN counter and reorder
 * window (session_ssn) and the engine it feeds (an RDMAP QP or a DDP-level stream,
 * core_engine.h). llp_sctp moves the chunks; this object decides what they mean.
 *
 * Driving it (every call under the owner's lock, as llp_conn):
 *   RX:  iwarp_llp_assoc_rx_chunk() with each message of the association as SCTP delivered it
 *        (any order: the DDP-SSN window restores §6.1's order per stream). Ownership of the
 *        buffer passes in: it is given back through cfg.chunk_free once processed (segment
 *        payload placed by the engine: the one copy of the receive path) or at teardown.
 *   TX:  while iwarp_llp_assoc_tx_next() returns a chunk, send it (PPID, stream, iovecs: the
 *        DDP-SSN, the headers, the payload in registered memory) and call
 *        iwarp_llp_assoc_tx_done(); when the send must wait (send buffer full) call nothing:
 *        the next tx_next() returns the same chunk again.
 *   Cap: with cfg.inflight_max, at most that many DATA chunks of the association are
 *        unacknowledged. tx_next() holds a produced chunk back at the cap; when
 *        iwarp_llp_assoc_tx_capped() says so, read SCTP's count of unacknowledged chunks and
 *        give it to iwarp_llp_assoc_unacked(), then call tx_next() again. When SCTP's count is
 *        at the cap too, the association waits for packets: call
 *        iwarp_llp_assoc_packets_in() when some of the association's come in.
 *   Events: iwarp_llp_assoc_take_events() per stream after each call (session requested,
 *        established, rejected, closed, timed out).
 *   Time: iwarp_llp_assoc_handle_timeout(now) after each round of calls and by the deadline
 *        iwarp_llp_assoc_next_timeout() returns (the owner's monotonic clock, ns): a stream
 *        waits at most cfg.linger_ns for the peer's answering Terminate, and a graceful
 *        disconnect drains at most that long; a session must be established by the deadline
 *        the owner set (iwarp_llp_assoc_set_deadline, the connect timeout). Nothing here reads
 *        a clock: a linger starts at the first handle_timeout() after the stream began ending.
 *   Loss: iwarp_llp_assoc_lost() when the association is gone: every session ends and every
 *        engine is flushed (§11.3).
 * Streams are chosen by the owner: iwarp_llp_assoc_open() starts an active session on a free
 * stream; on a passive association an Initiate on a free stream opens a passive session by
 * itself (limited by the shared pending counter, §6.4). A stream the owner has let go of
 * (iwarp_llp_assoc_detach) is released here once its session is over and nothing of it waits
 * to be sent, or at once when a deadline of it passed; the owner may also release() a stream
 * itself after EV_CLOSED. No allocation, no clock; memory is the owner's.
 */
#ifndef IWARP_LLP_LLP_ASSOC_H
#define IWARP_LLP_LLP_ASSOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/core_engine.h"
#include "core/core_qp.h"
#include "session/session_ctl.h"
#include "session/session_ssn.h"
#include "wire/wire_sctp.h"

/* Reorder window per stream when the owner does not say (DDP-SSNs held ahead of a gap). */
#define IWARP_LLP_ASSOC_WINDOW       512u
/* The in-flight cap a libiwarp association uses (cfg.inflight_max): DATA chunks of the
 * association unacknowledged at most. The peer's DDP-SSN window holds IWARP_LLP_ASSOC_WINDOW
 * chunks per stream, so whatever arrives after a loss always fits in it (RFC 5043 §6.1 order
 * restored, never a window overrun); it also keeps §10's bound of 32767 per stream. */
#define IWARP_LLP_ASSOC_INFLIGHT_MAX IWARP_LLP_ASSOC_WINDOW

/* Per-stream events (iwarp_llp_assoc_take_events). */
enum {
    IWARP_LLP_ASSOC_EV_REQUEST = 0x1,     /* passive: an Initiate awaits accept()/reject()
                                             (withdrawn, if not yet taken, when the session
                                             ends first: CLOSED alone follows) */
    IWARP_LLP_ASSOC_EV_ESTABLISHED = 0x2, /* the session is up and the engine started */
    IWARP_LLP_ASSOC_EV_REJECTED = 0x4,    /* rejected (by the peer, or by us) */
    IWARP_LLP_ASSOC_EV_CLOSED = 0x8,      /* the session is over and the engine closed: the
                                             stream may be released (release(), detach()) */
    IWARP_LLP_ASSOC_EV_TIMEDOUT = 0x10,   /* a deadline passed (handle_timeout): the session
                                             was not established in time (an unanswered
                                             Initiate is withdrawn with our Terminate), a
                                             disconnect did not drain, or the peer did not
                                             answer our Terminate (§6.2 does not oblige it
                                             to). The session is over for the owner, who
                                             flushes the engine and detaches the stream. */
};

enum iwarp_llp_assoc_stream_state {
    IWARP_LLP_ASSOC_FREE = 0, /* no session */
    IWARP_LLP_ASSOC_SESSION,  /* a session in progress or established */
    IWARP_LLP_ASSOC_ENDING,   /* our or the peer's Terminate is out; waiting for the other */
    IWARP_LLP_ASSOC_OVER,     /* session over (CLOSED reported): release() frees the stream */
};

/* One SCTP stream: fields private to llp_assoc.c. */
struct iwarp_llp_assoc_stream {
    enum iwarp_llp_assoc_stream_state state;
    struct iwarp_sess_ctl ctl;
    struct iwarp_sess_ssn_tx ssn_tx;
    struct iwarp_sess_ssn_rx ssn_rx;
    struct iwarp_core_engine *eng; /* NULL: none attached */
    uint32_t ird, ord;     /* the engine's IRD/ORD when the session leaves them to the ULP */
    bool started;          /* the engine runs */
    bool graceful;         /* the close was orderly (both Terminates, or a disconnect drained) */
    bool peer_done;        /* no Terminate of the peer's is awaited: its Reject crossed our
                              Terminate, or ours answered its Initiate (§6.4) */
    uint32_t events;       /* IWARP_LLP_ASSOC_EV_* not yet taken */
    int err;               /* why it ended (0: orderly) */
    void *user;            /* the owner's (e.g. its CM id) */
    bool detached;         /* the owner let go of it: released here once done */
    bool expired;          /* a deadline passed (TIMEDOUT): released once detached */
    uint64_t deadline;     /* TIMEDOUT by then: the owner's until ESTABLISHED, the drain after
                              disconnect() (UINT64_MAX: none) */
    uint64_t ending_until; /* ENDING: the peer's Terminate awaited until then (UINT64_MAX: not
                              ending, or the linger starts at the next handle_timeout) */
};

/* A chunk to send (tx_next). iov[0..niov) holds len octets. */
struct iwarp_llp_assoc_chunk {
    uint16_t sid;
    uint32_t ppid;
    struct iovec iov[2 + IWARP_CORE_TX_IOV_MAX];
    uint32_t niov;
    size_t len;
    /* private */
    bool is_seg;
    uint8_t ssn[IWARP_SCTP_SSN_LEN];
    struct iwarp_core_tx_seg seg;
    uint8_t ctl[IWARP_SCTP_CTL_MAX];
};

struct iwarp_llp_assoc_cfg {
    uint16_t nstreams; /* as negotiated (§8: equal both ways) */
    uint32_t max_seg;  /* largest DDP segment (§9), >= IWARP_SCTP_CTL_MAX */
    bool passive;      /* the peer may open sessions (we accepted the association) */
    struct iwarp_sess_cfg passive_sess; /* passive: the configuration of those sessions
                                           (pending counter required) */
    void (*chunk_free)(void *ptr);      /* gives a received buffer back */
    uint16_t window;                    /* slots per stream: 0 = IWARP_LLP_ASSOC_WINDOW */
    uint32_t inflight_max; /* DATA chunks unacknowledged at most (see Cap above); 0: no cap */
    uint64_t linger_ns;    /* how long a stream waits for the peer's Terminate and a graceful
                              disconnect drains (ns); 0: no limit */
};

struct iwarp_llp_assoc {
    struct iwarp_llp_assoc_cfg cfg;
    struct iwarp_llp_assoc_stream *st; /* cfg.nstreams, owner's memory */
    struct iwarp_sess_ssn_slot *slots; /* cfg.nstreams * window, owner's memory */
    struct iwarp_llp_assoc_chunk pend; /* produced, not yet sent */
    bool has_pend;
    uint16_t rr; /* next stream to serve (round robin) */
    uint16_t hi; /* streams from hi on are FREE: every scan of the streams stops there */
    bool lost;
    bool reap;           /* a detached stream may have become free to release */
    uint32_t inflight;   /* chunks unacknowledged at most: SCTP's count (unacked()) plus the
                            chunks handed to it since (counted with a cap only) */
    bool cap_blocked;    /* SCTP's count was at the cap too: packets_in() lets it go on */
    uint64_t rx_dropped; /* chunks not taken (bad PPID/SSN, no session) */
};

/* Memory the owner gives init(): nstreams streams and nstreams * window slots. */
int iwarp_llp_assoc_init(struct iwarp_llp_assoc *a, const struct iwarp_llp_assoc_cfg *cfg,
                         struct iwarp_llp_assoc_stream *streams, struct iwarp_sess_ssn_slot *slots);

/* The lowest free stream, or -1 when every stream has a session. */
int iwarp_llp_assoc_free_stream(const struct iwarp_llp_assoc *a);

/*
 * Starts an active session on free stream sid (the Initiate is queued, §6.2) with engine eng
 * attached (started once the peer accepts). ird/ord: the engine's when the session leaves
 * them to the ULP (no RFC 6581 negotiation). Returns 0, IWARP_ERR_BUSY (stream in use),
 * IWARP_ERR_STATE (association lost), IWARP_ERR_INVAL, or a session_ctl init error.
 */
int iwarp_llp_assoc_open(struct iwarp_llp_assoc *a, uint16_t sid, const struct iwarp_sess_cfg *cfg,
                         struct iwarp_core_engine *eng, uint32_t ird, uint32_t ord, void *user);

/* Passive, after EV_REQUEST: accept with engine eng (started at once: it may send first, RFC
 * 6581 §7) or reject (no EV_REJECTED for it; EV_CLOSED once the Reject is handed to SCTP, then
 * release()). Returns 0, IWARP_ERR_STATE, or a session_ctl error. */
int iwarp_llp_assoc_accept(struct iwarp_llp_assoc *a, uint16_t sid,
                           const struct iwarp_sess_answer *ans, struct iwarp_core_engine *eng,
                           uint32_t ird, uint32_t ord);
int iwarp_llp_assoc_reject(struct iwarp_llp_assoc *a, uint16_t sid,
                           const struct iwarp_sess_answer *ans);

/* Graceful close of the stream's session: the engine drains (its disconnect), then our
 * Terminate follows its last segment (§6.2). CLOSED follows once our Terminate is handed to
 * SCTP and the peer's received; a Terminate that answers an Initiate (§6.4: the pending limit,
 * an error, abort() before accepting) is the end of that exchange and is not answered. A
 * session never established is aborted (nothing to drain). now_ns: the owner's clock; the
 * stream's deadline becomes now_ns + cfg.linger_ns (TIMEDOUT if it has not closed by then). */
void iwarp_llp_assoc_disconnect(struct iwarp_llp_assoc *a, uint16_t sid, uint64_t now_ns);

/* Abortive: the engine is detached and flushed now (llp_closed(false) is the owner's call if
 * it wants one), a Terminate goes out; EV_CLOSED follows once it is answered. */
void iwarp_llp_assoc_abort(struct iwarp_llp_assoc *a, uint16_t sid);

/* After EV_CLOSED (or to withdraw an unanswered session, abortively): the stream is free for
 * a new session (§6.6: DDP-SSN from 0 again); held chunks are given back. */
void iwarp_llp_assoc_release(struct iwarp_llp_assoc *a, uint16_t sid);

/* The owner lets go of stream sid (nothing of its own is on it any more: it reported the
 * session's end, rejected or aborted it). The stream is released here (as release()) once its
 * session is over and nothing of it waits to be sent (a Reject, our Terminate), at once when a
 * deadline of it passed, or when cfg.linger_ns passes while it waits for the peer's
 * Terminate. Its later events are of no interest (take_events() may still return them). */
void iwarp_llp_assoc_detach(struct iwarp_llp_assoc *a, uint16_t sid);

/* The session on stream sid must be established by deadline_ns (absolute, the owner's
 * clock; UINT64_MAX: no limit): past it, handle_timeout() withdraws an unanswered Initiate
 * with our Terminate (§6.2) and reports TIMEDOUT. ESTABLISHED clears it. */
void iwarp_llp_assoc_set_deadline(struct iwarp_llp_assoc *a, uint16_t sid, uint64_t deadline_ns);

/*
 * A received message: stream sid, PPID ppid, U bit, buf (len octets; ownership passes in).
 * Returns 0, or the negative error that ended the stream's session (the chunk was dropped). A
 * chunk with another PPID, U=0 (§5.2, §10), no DDP-SSN, or a DDP-SSN repeated or beyond the
 * window (§6.1) is dropped with its error, and ends the stream's session if one is alive.
 */
int iwarp_llp_assoc_rx_chunk(struct iwarp_llp_assoc *a, uint16_t sid, uint32_t ppid, bool unordered,
                             void *buf, size_t len);

/* The next chunk to send, or NULL. The same chunk comes back until tx_done(). */
const struct iwarp_llp_assoc_chunk *iwarp_llp_assoc_tx_next(struct iwarp_llp_assoc *a);

/* The chunk tx_next() returned was handed to SCTP (copied into its send buffer). */
void iwarp_llp_assoc_tx_done(struct iwarp_llp_assoc *a);

/* Whether tx_next() has something to send now (without producing it; false at the cap). */
bool iwarp_llp_assoc_tx_ready(const struct iwarp_llp_assoc *a);

/* Whether tx_next() holds a produced chunk back at cfg.inflight_max: the owner should read
 * SCTP's count of unacknowledged chunks and give it to unacked() before trying again. */
bool iwarp_llp_assoc_tx_capped(const struct iwarp_llp_assoc *a);

/* SCTP reports `unacked` chunks of the association unacknowledged: no stream has more in
 * flight (§10's 32767 bound per stream is kept against this), and the in-flight estimate of
 * the cap becomes this count. At the cap still, the association waits for packets_in(). */
void iwarp_llp_assoc_unacked(struct iwarp_llp_assoc *a, uint32_t unacked);

/* Packets of the association came in (perhaps the SACK it waits for at the cap). Returns
 * whether it was waiting, i.e. whether tx_next() is worth another try. */
bool iwarp_llp_assoc_packets_in(struct iwarp_llp_assoc *a);

/* The earliest deadline of the association's streams (absolute ns; UINT64_MAX: none; 0: a
 * stream began ending since the last handle_timeout(), whose linger starts there). */
uint64_t iwarp_llp_assoc_next_timeout(const struct iwarp_llp_assoc *a);

/* Brings the streams' deadlines up to now_ns: starts the linger of streams that began
 * ending, fires the deadlines that passed (EV_TIMEDOUT; an unanswered Initiate is withdrawn
 * with our Terminate; a detached stream is released without an event), releases detached
 * streams that are done. Harmless to call early or often. Returns whether it reported an
 * event (take_events() has something). */
bool iwarp_llp_assoc_handle_timeout(struct iwarp_llp_assoc *a, uint64_t now_ns);

/* The association is gone (graceful: an orderly SCTP shutdown with no session alive):
 * every session ends, every engine closes (flush), held chunks are given back. */
void iwarp_llp_assoc_lost(struct iwarp_llp_assoc *a, bool graceful);

/* Returns and clears stream sid's events. */
uint32_t iwarp_llp_assoc_take_events(struct iwarp_llp_assoc *a, uint16_t sid);

/* Streams with a session (not FREE). */
uint32_t iwarp_llp_assoc_in_use(const struct iwarp_llp_assoc *a);

/* One past the highest stream that is not FREE (0: none): streams from here on have no
 * session and no events, so a scan of the streams may stop here. */
static inline uint16_t iwarp_llp_assoc_streams_end(const struct iwarp_llp_assoc *a)
{
    return a->hi;
}

#endif
