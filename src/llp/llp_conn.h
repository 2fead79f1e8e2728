/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One MPA connection over a byte stream, sans I/O: the MPA startup negotiation (RFC 5044 §7,
 * RFC 6581), then full operation (RFC 5044 §4-§6): received octets are deframed, verified
 * and handed to the QP engine as DDP segments; the QP engine's segments are framed into
 * FPDUs and handed out as iovecs. The TCP back-end (llp_tcp) moves octets between a socket
 * and this object; the in-memory back-end (llp_mem) between two such objects.
 *
 * Driving it (BearSSL-style buf/ack pairs; every call with the context lock held):
 *   RX:  iwarp_llp_conn_rx_buf() says where to put the next received octets and how many
 *        are wanted; after reading n octets there, call iwarp_llp_conn_rx_ack(n).
 *   TX:  iwarp_llp_conn_tx_iov() fills iovecs with everything ready to send (negotiation
 *        frames, then FPDUs: header and CRC from the connection, payload straight from
 *        registered memory, except a Read Response's with CRC on: copied into the TX staging
 *        ring in the CRC pass, iwarp_llp_conn_set_tx_stage); after writing n octets of them,
 *        call iwarp_llp_conn_tx_ack(n).
 *   Time: iwarp_llp_conn_next_timeout() / iwarp_llp_conn_handle_timeout(now).
 *   Events: the state field after each call; on IWARP_LLP_CONN_REQUEST the CM decides
 *        with iwarp_llp_conn_accept()/reject().
 * Receive: rx_buf offers a read-ahead window in the bounce buffer, so that one read brings in
 * many small FPDUs; only inside a large ULPDU (more than 2 KiB to come) are reads exact.
 * CRC on: each FPDU is verified before the DDP segment inside is handed to the QP (RFC 5044
 * §6); a segment wholly inside the window is handed over in place, others are staged whole in
 * the bounce buffer (<= 64 KiB). CRC off: the payload of a Write, Read Response or Send is
 * placed in its destination (the MR, the posted receive's SGEs) that the engine's rx_hdr()
 * validated for the whole ULPDU_Length: copied from the window for the octets read ahead, read
 * straight into it for the rest of a large one. llp_conn_int.h has the details (the bounce
 * buffer's regions, the receive states); llp_conn.c negotiates and holds the entry points of
 * state, time and close, llp_conn_rx.c receives, llp_conn_tx.c frames and sends.
 * Responder: the QP starts at accept; its FPDUs are held until the initiator's first FPDU has
 * arrived (RFC 5044 §7.1.2 rule 4).
 */
#ifndef IWARP_LLP_LLP_CONN_H
#define IWARP_LLP_LLP_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/core_engine.h"
#include "core/core_qp.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"

enum iwarp_llp_conn_state {
    IWARP_LLP_CONN_NEGOTIATING = 0, /* MPA Request/Reply in progress */
    IWARP_LLP_CONN_REQUEST = 1,     /* responder: Request received; accept() or reject() */
    IWARP_LLP_CONN_ESTABLISHED = 2, /* full operation; the QP is running */
    IWARP_LLP_CONN_REJECTED = 3,    /* a Reject was received (initiator) or sent (responder) */
    IWARP_LLP_CONN_CLOSE = 4,       /* the transport must now be closed (graceful: after the
                                       pending TX octets are written) */
    IWARP_LLP_CONN_FAILED = 5,      /* negotiation failed (err set); close the transport */
};

/* FPDUs framed ahead of the socket, at most. */
#define IWARP_LLP_CONN_TX_SEGS  16u
/* iovecs one FPDU needs at most: length, header, payload SGEs, markers (each may split a
 * piece), pad+CRC: iwarp_mpa_tx_frame()'s bound for the header plus the payload iovecs. */
#define IWARP_LLP_CONN_FPDU_IOV IWARP_MPA_TX_IOV_MAX(IWARP_CORE_TX_IOV_MAX + 1u)

struct iwarp_llp_conn_cfg {
    struct iwarp_mpa_neg_cfg neg; /* role, revision, CRC, markers, IRD/ORD, RTR, private data */
    uint32_t emss;                /* the TCP connection's effective MSS (FPDU <= EMSS) */
    uint64_t first_fpdu_delay_ns; /* initiator: wait this long after the Reply before the
                                     first FPDU (siw race workaround, docs/design.md) */
};

/* One framed FPDU waiting for the transport. */
struct iwarp_llp_conn_txf {
    struct iwarp_core_tx_seg seg;
    struct iovec iov[IWARP_LLP_CONN_FPDU_IOV];
    uint32_t niov;
    uint32_t wire_len;                   /* octets of this FPDU on the wire */
    uint32_t stage_span;                 /* octets of the TX staging ring it holds (its payload
                                            and any gap skipped before it); 0: none */
    struct iwarp_mpa_tx_scratch scratch; /* length field, markers, pad and CRC that iov
                                            points to */
};

/* The TX staging ring (caller-owned, iwarp_llp_conn_set_tx_stage): with CRC on, a Read
 * Response's payload is copied here as its CRC is computed, so that the octets sent are those
 * the CRC covered even if the Data Source changes before sendmsg (docs/design.md, "Read
 * Responses with CRC on"). Each FPDU's payload is contiguous; the space is taken in framing
 * order and given back in the same order as FPDUs are written. */
struct iwarp_llp_conn_tx_stage {
    uint8_t *buf; /* NULL: no staging (payloads are sent from registered memory) */
    uint32_t cap;
    uint32_t head; /* where the next payload goes */
    uint32_t used; /* octets held by FPDUs not yet written, gaps included */
};

/* The staging ring's size: four of the largest FPDU payloads (RFC 5044 §3: 64768), so that one
 * sendmsg takes about three 64 KiB Read Responses (docs/design.md, "Four FPDUs of ring with
 * the shortening"). */
#define IWARP_LLP_CONN_TX_STAGE (4u * IWARP_MPA_MULPDU_MAX)

/* A Read Response segment shortened to the staging ring's room is at least this long (else it
 * waits for the room to grow): shorter FPDUs would cost more per octet on both sides than the
 * wait, with the ring then nearly full and the socket busy with what it holds. */
#define IWARP_LLP_CONN_STAGE_SEG_MIN (16u << 10)

/* The receive side's states; llp_conn_int.h says what each does and when it changes. */
enum iwarp_llp_conn_rx_state {
    IWARP_LLP_CONN_RX_NEG = 0, /* the peer's MPA Request or Reply */
    IWARP_LLP_CONN_RX_HDR,     /* an FPDU's ULPDU_Length and first ULPDU octets, staged */
    IWARP_LLP_CONN_RX_PAYLOAD, /* the rest of its ULPDU: placed directly, or dropped */
    IWARP_LLP_CONN_RX_TRAILER, /* its PAD and CRC; the FPDU's end delivers the ULPDU */
    IWARP_LLP_CONN_RX_DEAD,    /* receive stopped: octets are read and dropped */
};

/* How the current FPDU's ULPDU reaches the engine (llp_conn_int.h). */
enum iwarp_llp_conn_rx_place {
    IWARP_LLP_CONN_RX_STAGED = 0, /* staged whole, rx_segment() at the FPDU's end */
    IWARP_LLP_CONN_RX_DIRECT,     /* headers to rx_hdr(), payload read into its iovecs */
    IWARP_LLP_CONN_RX_DROPPED,    /* rx_hdr() refused the segment: its payload is dropped */
};

/* The regions of the caller's bounce buffer, set by init (llp_conn_int.h draws them). */
struct iwarp_llp_conn_bounce {
    uint8_t *stage;   /* ULPDUs staged at their ULPDU offsets, the read-ahead window behind */
    uint8_t *neg_in;  /* the peer's Request/Reply, read exactly to its end */
    uint8_t *neg_out; /* our Request/Reply/Reject while it is being written */
    uint8_t *scratch; /* a marker inside a large ULPDU; octets read once receive stopped */
    uint8_t *end;     /* one past the buffer: the read-ahead window ends here */
};

/* The FPDU being received (full operation). */
struct iwarp_llp_conn_rx_fpdu {
    enum iwarp_llp_conn_rx_place place;
    uint32_t ulpdu_len, ulpdu_done; /* its ULPDU_Length and octets seen (0: none yet) */
    /* Its first `staged` ULPDU octets (only the headers when placed directly), contiguous and
     * without markers, at seg: bounce.stage, or in place in the read-ahead window. */
    const uint8_t *seg;
    uint32_t staged;
    /* Direct placement: the iovecs rx_hdr() gave, the one being filled, its octets filled. */
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t ndst, dst_i;
    size_t dst_off;
};

/* The receive side (private to llp_conn*.c). */
struct iwarp_llp_conn_recv {
    enum iwarp_llp_conn_rx_state state;
    struct iwarp_llp_conn_rx_fpdu fpdu;
    bool ra_wide; /* the last read-ahead filled its window with small FPDUs: read the
                     most */
    /* rx_bufs gave two regions: the first's length (0: one region) and where the second
     * starts; rx_ack feeds the two in turn */
    size_t split;
    uint8_t *split_next;
    bool tagged_open;       /* the last tagged segment received did not end its message */
    uint32_t untagged_open; /* bit q: same for untagged queue q (q < 32) */
};

struct iwarp_llp_conn {
    struct iwarp_llp_conn_cfg cfg;
    enum iwarp_llp_conn_state state;
    int err;
    struct iwarp_mpa_neg neg;
    struct iwarp_core_engine *eng; /* set by attach(); the engine fed in full operation */
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_tx tx;
    uint32_t max_seg;                    /* largest DDP segment: MULPDU for the EMSS and markers */
    struct iwarp_llp_conn_bounce bounce; /* caller-owned, IWARP_LLP_CONN_BOUNCE octets */
    /* TX ring of framed FPDUs */
    struct iwarp_llp_conn_txf *txf; /* caller-owned, IWARP_LLP_CONN_TX_SEGS entries */
    uint32_t txf_head, txf_count;
    uint32_t txf_off; /* octets of the head FPDU already written */
    struct iwarp_llp_conn_tx_stage txs;
    uint64_t first_fpdu_at; /* initiator: earliest time of the first FPDU */
    uint64_t now_ns;        /* last time seen */
    /* Private to llp_conn*.c. */
    uint16_t neg_out_len, neg_out_off; /* our negotiation frame in bounce.neg_out, written */
    bool fullop;      /* deframer and framer set up (RFC 5044 §7.1.2 full operation) */
    bool started;     /* iwarp_core_qp_start() was called */
    bool rtr_pending; /* initiator: the negotiated RTR still has to be framed */
    bool rtr_wait;    /* initiator: awaiting the zero-length Read Response to our Read RTR */
    bool term_queued; /* a Terminate built by the connection is queued; nothing follows it */
    bool tx_hold;     /* responder: the QP runs but sends nothing before the initiator's first
                         FPDU has arrived (RFC 5044 §7.1.2 rule 4) */
    bool resp_framed; /* a Read or Atomic Response was framed: too late to give a TX staging
                         ring (iwarp_llp_conn_set_tx_stage) */
    struct iwarp_llp_conn_recv recv;
    /* Counters (read-only outside llp_conn*.c): ULPDU octets received with CRC off placed by
     * the transport straight into their destination, or copied there from the read-ahead
     * window; ULPDU octets moved from the window into the staging area (a ULPDU not wholly
     * inside one read). */
    uint64_t rx_direct_octets, rx_copied_octets, rx_moved_octets;
    /* reads acknowledged in full operation, those of them that filled two regions
     * (iwarp_llp_conn_rx_bufs), and FPDUs received */
    uint64_t rx_reads, rx_split_reads, rx_fpdus;
};

/* Read-ahead past the current FPDU's ULPDU when no backlog of small FPDUs was seen
 * (llp_conn_int.h); the bounce buffer has room for it behind the largest ULPDU too. */
#define IWARP_LLP_CONN_RA_SMALL 1024u
/* Largest ULPDUs the bounce buffer holds at once: a read of staged FPDUs (CRC on) takes up to
 * this many (llp_conn_int.h). */
#define IWARP_LLP_CONN_RX_FPDUS 4u
#define IWARP_LLP_CONN_BOUNCE \
    (IWARP_LLP_CONN_RX_FPDUS * IWARP_MPA_MULPDU_MAX + 16u + IWARP_LLP_CONN_RA_SMALL)

/*
 * Initialise a connection for role cfg->neg.role at time now_ns. bounce (IWARP_LLP_CONN_BOUNCE
 * octets) and txf (IWARP_LLP_CONN_TX_SEGS entries) are caller-owned and borrowed.
 * Returns 0 or the negotiation's init error.
 */
int iwarp_llp_conn_init(struct iwarp_llp_conn *c, const struct iwarp_llp_conn_cfg *cfg,
                        uint8_t *bounce, struct iwarp_llp_conn_txf *txf, uint64_t now_ns);

/*
 * Give the connection a TX staging ring of len octets (at least IWARP_MPA_MULPDU_MAX; normally
 * IWARP_LLP_CONN_TX_STAGE), once, after init and before the first Read Response is framed: at
 * the latest when the negotiation has settled (iwarp_llp_conn_tx_stage_wanted). With CRC on,
 * each Read Response FPDU's payload is then copied into it in the pass that computes the CRC,
 * and sent from there; the next segment is asked of the engine only when the ring has room for
 * the most a Read Response segment could then carry (iwarp_core_qp_tx_read_resp_max). Without
 * one (or with CRC off) payloads go straight from registered memory. Ownership: buf is
 * borrowed for the connection's life; it need not be zeroed. Returns 0, or IWARP_ERR_INVAL
 * (len too small, a ring already given, or a Read or Atomic Response already framed).
 */
int iwarp_llp_conn_set_tx_stage(struct iwarp_llp_conn *c, uint8_t *buf, size_t len);

/*
 * Whether this connection's Read Responses will need a TX staging ring and it has none: CRC
 * on, an RDMAP engine attached (a DDP-level stream answers no Reads), and an IRD above 0 (with
 * IRD 0 a Read Request finds no buffer and is Terminated, never answered). ans: the responder
 * in REQUEST, about to accept with ans: the outcome the acceptance would negotiate
 * (iwarp_mpa_neg_accept_outcome), so that a failure to provide the ring can still fail the
 * acceptance with nothing changed. NULL: the negotiation has settled (the engine started: the
 * initiator once the Reply is in, the responder after accept); before that, false. A
 * connection setup (not the data path) then allocates the ring and gives it with
 * iwarp_llp_conn_set_tx_stage.
 */
bool iwarp_llp_conn_tx_stage_wanted(const struct iwarp_llp_conn *c,
                                    const struct iwarp_mpa_neg_answer *ans);

/*
 * A local error in full operation that has no code of its own (e.g. the CM found no memory for
 * the connection's TX staging ring once the Reply was in): RFC 6581 §9.3, the Terminate
 * 2/0/0x05 goes out before the connection is reset. The connection is FAILED with err (close
 * the transport once the Terminate is written); the engine learns of the end when the
 * transport closes (iwarp_llp_conn_closed). Returns err.
 */
int iwarp_llp_conn_fail_locally(struct iwarp_llp_conn *c, int err);

/* Attach the engine that full operation feeds (core_engine.h: an RDMAP QP or a DDP-level
 * stream; NULL detaches), before ESTABLISHED is reached: the initiator at connect, the
 * responder at accept. Starts it when the connection reaches full operation, with the
 * negotiated IRD/ORD. A DDP-level stream's first FPDU is taken as plain DDP (no RDMAP opcode,
 * no RTR: the CM refuses peer-to-peer for it). Ownership: eng is borrowed while attached. */
void iwarp_llp_conn_attach(struct iwarp_llp_conn *c, struct iwarp_core_engine *eng);

/* Responder in REQUEST: accept with our IRD/ORD and private data, or reject. When the
 * Request negotiated no IRD/ORD (revision 1, or 0x3FFF: RFC 6581 §9.1), the QP starts with
 * the answer's (ans->ird/ord, unless IWARP_MPA_IRD_ORD_NONE: then cfg's). */
int iwarp_llp_conn_accept(struct iwarp_llp_conn *c, const struct iwarp_mpa_neg_answer *ans);
int iwarp_llp_conn_reject(struct iwarp_llp_conn *c, const struct iwarp_mpa_neg_answer *ans);

/* Where to read the next octets: *len octets at the returned pointer (>= 1), or NULL when
 * nothing may be read now (closed; our Reply still being written). In REQUEST it still reads:
 * an initiator that sends anything before our Reply fails the connection (RFC 5044 §7.1.2
 * rules 2, 3: IWARP_ERR_MPA_EARLY_DATA, close), so those octets are never taken as FPDUs. */
uint8_t *iwarp_llp_conn_rx_buf(struct iwarp_llp_conn *c, size_t *len);

/* Whether rx_buf would give a place to read now (len >= 1), without working out where: what
 * a transport's readiness interest needs after every pass. */
bool iwarp_llp_conn_rx_wanted(struct iwarp_llp_conn *c);

/* n octets were read into the buffer rx_buf gave. Runs the negotiation or the deframer and
 * the QP engine. Returns 0 or a negative error (the state then says what to do). */
int iwarp_llp_conn_rx_ack(struct iwarp_llp_conn *c, size_t n, uint64_t now_ns);

/*
 * iwarp_llp_conn_rx_buf() as up to two regions, filled in order by one read (readv, recvmsg).
 * The first is rx_buf's. A second follows when the first ends exactly where a ULPDU being
 * placed straight into its destination ends (CRC off): the read-ahead window, for the FPDU's
 * trailer and the start of the next, so that one read takes the end of the payload and the
 * next FPDU's headers instead of two. Returns how many regions were filled in iov (0: nothing
 * may be read now). After reading n octets across them, call iwarp_llp_conn_rx_ack(n).
 */
uint32_t iwarp_llp_conn_rx_bufs(struct iwarp_llp_conn *c, struct iovec iov[2]);

/*
 * The octets the receive side needs before it can finish the FPDU it is in (the rest of its
 * ULPDU, PAD and CRC; markers not counted, so never more than must come): 1 at an FPDU
 * boundary, outside full operation, or when nothing may be read. A transport that can wait
 * for that many at once (SO_RCVLOWAT) reads a large FPDU in one piece instead of as it trickles
 * in.
 */
uint32_t iwarp_llp_conn_rx_need(struct iwarp_llp_conn *c);

/* The TCP connection's EMSS is now emss (it grows once the path is known: on loopback from
 * 32741 at connect to 65483): FPDUs framed from here on follow it (RFC 5044 §4.5, §3: MULPDU
 * for the current EMSS, never above 64768), as Linux siw follows its socket's mss_cache. */
void iwarp_llp_conn_set_emss(struct iwarp_llp_conn *c, uint32_t emss);

/* Fill up to max iovecs with octets ready to send; returns how many iovecs (0: none now).
 * Frames new FPDUs from the QP as room allows. */
uint32_t iwarp_llp_conn_tx_iov(struct iwarp_llp_conn *c, struct iovec *iov, uint32_t max,
                               uint64_t now_ns);

/* n octets of what tx_iov described were written. Completes fully written segments. */
void iwarp_llp_conn_tx_ack(struct iwarp_llp_conn *c, size_t n);

/* Whether tx_iov would return something now. */
bool iwarp_llp_conn_tx_ready(struct iwarp_llp_conn *c, uint64_t now_ns);

/* tx_ready, plus what a tx_iov that finds nothing would still do (end the first FPDU's hold
 * once now_ns reaches it; CLOSE once the QP says so and everything is written), for a caller
 * that skips tx_iov when this returns false. */
bool iwarp_llp_conn_tx_check(struct iwarp_llp_conn *c, uint64_t now_ns);

/* Whether the receive side of full operation stands between two FPDUs: no octet of the next
 * one read (RFC 5044 §4.3: before its length field, or before the marker that precedes it) and
 * nothing of a segment pending. For drivers that insert octets into the stream (llp_e2e). */
bool iwarp_llp_conn_rx_between_fpdus(const struct iwarp_llp_conn *c);

/* Absolute time of the next deadline (UINT64_MAX: none) and its handling. */
uint64_t iwarp_llp_conn_next_timeout(const struct iwarp_llp_conn *c);
void iwarp_llp_conn_handle_timeout(struct iwarp_llp_conn *c, uint64_t now_ns);

/* The peer closed its side (EOF) or the transport failed: ends the QP (flush). graceful: the
 * QP sees an orderly close (no QP_FATAL event); false: the stream was lost. */
void iwarp_llp_conn_closed(struct iwarp_llp_conn *c, bool graceful);

/*
 * The transport read the peer's orderly end of stream (TCP FIN). Calls
 * iwarp_llp_conn_closed() with graceful true only when the stream ended at a message
 * boundary: no octet of an unfinished FPDU received, and the last segment of every DDP
 * message stream (tagged; each untagged queue) had L set. That is the peer's graceful
 * teardown (RFC 5041 §6.2.1: its ULP data was all transferred before the LLP stream closed).
 * An end inside an FPDU or a message means the stream was lost (RFC 5041 §6.2.2, RFC 5040
 * §6.2 LLP Abortive Termination): graceful false, so a RUNNING QP raises QP_FATAL; one that
 * was already disconnecting (CLOSING) or terminating raises nothing either way (core_qp).
 * Linux siw treats every FIN in RDMA mode as a disconnect (siw_cm PEER_CLOSE ->
 * siw_qp_llp_close, no fatal event); we are stricter only where data was lost.
 */
void iwarp_llp_conn_eof(struct iwarp_llp_conn *c);

#endif
