/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DDP-level stream engine: one DDP Stream (RFC 5041) whose ULP is not RDMAP, sans I/O.
 * The MPA connection feeds it instead of the RDMAP QP engine (core_qp.h) when the QP was
 * created through the DDP-level interface (include/iwarp/ddp.h, RFC 4296 §2.1.2).
 *
 * What it owns: a send queue of untagged (QN, RsvdULP[0:39]) and tagged (STag, TO,
 * RsvdULP[0:7]) messages, segmented with ddp_tx; num_queues untagged receive queues, each a
 * ring of posted receives checked by ddp_rx_untagged (RFC 5041 §7.1, MSN from 1 per queue);
 * tagged placement through ddp_rx_tagged and the context's STag table (REMOTE_WRITE in the
 * stream's PD).
 *
 * Indications (RFC 5041 §5.4, recv CQ): a message is Delivered when its segment with L has been
 * Placed (every earlier segment and message already was: the LLP is in order and segments are
 * processed in arrival order). Untagged: IWARP_WC_DDP_RECV with its buffer's wr_id, the ULP
 * Message Length (MO + payload of the last segment), QN, MSN and RsvdULP. Tagged:
 * IWARP_WC_DDP_TAGGED_RECV with the STag and RsvdULP (RFC 5041 §4.2), no WR consumed. DDP gives
 * no per-segment Placement indication. Send side (RFC 5041 §5.4: complete when the LLP has
 * accepted the message): IWARP_WC_DDP_SEND on the send CQ when the last segment was handed to
 * the transport.
 *
 * Errors (RFC 5041 §7.1, §7.2; §6.2.2): a receive error stops Placement of that segment and of
 * every later one (silently dropped), is reported once through the event hook with its DDP
 * cause (or the LLP's, RFC 5044 §8) and kept with the offending header and segment length
 * (iwarp_core_ddp_error). DDP sends nothing to the peer (there is no DDP error message: the
 * Terminate is RDMAP's, RFC 5040 §4.8) and does not close the stream (RFC 5041 §6.2: DDP never
 * initiates teardown); the send side keeps working so that the ULP can send its own last
 * message(s) (RFC 5041 §7.1, §6.2.2) before it tears the stream down. Posted receives are
 * completed with WR_FLUSH_ERR at the error: nothing can be received into them any more.
 *
 * LLP contract: exactly core_qp.h's (rx_hdr/rx_payload_done or rx_segment, rx_llp_error,
 * tx_next/tx_sent/tx_close/tx_pending, llp_closed), with struct iwarp_core_tx_seg segments.
 * Everything is called with the context lock held; nothing blocks or allocates.
 */
#ifndef IWARP_CORE_CORE_DDP_H
#define IWARP_CORE_CORE_DDP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/core_cq.h"
#include "core/core_engine.h"
#include "core/core_qp.h"
#include "core/core_srq.h"
#include "core/core_stream.h"
#include "ddp/ddp_rx_untagged.h"
#include "ddp/ddp_tx.h"
#include "mem/mem_stag.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"

/* Untagged queues per stream, at most (QN 0 .. IWARP_CORE_DDP_MAX_QUEUES - 1). */
#define IWARP_CORE_DDP_MAX_QUEUES  64u
/* RsvdULP octets: 5 in the untagged header (RFC 5041 §4.3), 1 in the tagged one (§4.2). */
#define IWARP_CORE_DDP_RSVDULP_LEN 5u

/* One posted send: an untagged or tagged message, its SGEs resolved at post time. */
struct iwarp_core_ddp_sqe {
    uint64_t wr_id;
    bool tagged;
    bool signaled;
    uint32_t qn;   /* untagged */
    uint32_t stag; /* tagged: Data Sink STag */
    uint64_t to;   /* tagged: initial TO */
    uint8_t rsvdulp[IWARP_CORE_DDP_RSVDULP_LEN];
    uint32_t nsge;
    uint32_t len;
    struct iovec iov[IWARP_CORE_MAX_SGE];
    struct iwarp_core_held held; /* MRs held until the completion */
};

/* One untagged queue: posted receives (iovecs) and their DDP state (lengths, MSN, MO). */
struct iwarp_core_ddp_uq {
    struct iwarp_core_rq rq;   /* posted receives, in posting order */
    struct iwarp_ddp_rx_uq rx; /* RFC 5041 §7.1 state over the same buffers */
};

/* What the first receive error was (RFC 5041 §7.1: "the DDP Header, the type of error, and the
 * length of the DDP segment, if available"). */
struct iwarp_core_ddp_err {
    uint32_t cause;   /* layer << 16 | etype << 8 | code; 0: no error */
    uint32_t seg_len; /* the segment's length (header + payload), 0 when unknown */
    uint8_t hdr_len;  /* octets of hdr valid (0 when unknown) */
    uint8_t hdr[IWARP_DDP_UNTAGGED_HDR_LEN];
};

/* Async event hook: event_type is enum iwarp_event_type, cause as in iwarp_core_ddp_err. */
typedef void (*iwarp_core_ddp_event_fn)(void *user, int event_type, uint32_t cause);

struct iwarp_core_ddp_cfg {
    uint32_t qp_num;
    uint32_t pd;
    struct iwarp_mem_table *mem;
    struct iwarp_core_cq *send_cq;
    struct iwarp_core_cq *recv_cq;
    uint32_t num_queues; /* 1 .. IWARP_CORE_DDP_MAX_QUEUES */
    uint32_t rq_cap;     /* posted receives per queue, 1 .. IWARP_CORE_MAX_WR */
    uint32_t sq_cap;     /* 1 .. IWARP_CORE_MAX_WR */
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    bool sq_sig_all;
    iwarp_core_ddp_event_fn event;
    void *event_user;
};

/* Memory the caller allocates (sizes in the comments). */
struct iwarp_core_ddp_mem {
    struct iwarp_core_ddp_sqe *sq; /* sq_cap */
    struct iwarp_core_ddp_uq *uq;  /* num_queues */
    struct iwarp_core_rqe *rqe;    /* num_queues * rq_cap */
    uint64_t *lens;                /* num_queues * rq_cap */
};

/* The segment between iwarp_core_ddp_rx_hdr() and _rx_payload_done(). */
struct iwarp_core_ddp_rx_cur {
    bool active;
    bool last;
    bool tagged;
    uint32_t qn;
    uint32_t msn;
    uint32_t stag;
    uint64_t to, addr; /* tagged: the segment's TO and where it is placed (rx_dst_valid) */
    uint32_t gen;      /* tagged: the mem table's gen when addr was checked */
    uint32_t payload_len;
    uint64_t msg_len; /* untagged with L: the ULP Message Length */
    uint8_t rsvdulp[IWARP_CORE_DDP_RSVDULP_LEN];
};

struct iwarp_core_ddp {
    struct iwarp_core_engine eng; /* first: what the LLPs drive (core_engine.h) */
    struct iwarp_core_ddp_cfg cfg;
    /* state (enum iwarp_core_stream_state: IDLE is RFC 5041 §6.1's not yet enabled; CLOSING
     * the ULP's graceful teardown, §6.2.1; never TERMINATING), the send queue ring over sq,
     * produced segments, the flush that waits for the LLP */
    struct iwarp_core_stream stream;
    struct iwarp_core_ddp_uq *uq;

    struct iwarp_core_ddp_sqe *sq; /* the send queue's entries (ring indices in stream) */
    bool tx_active;                /* a message is being segmented (the one at sq_next - 1) */
    struct iwarp_ddp_tx_msg tx_msg;
    /* next MSN we send per QN (RFC 5041 §4.3: from 1, per queue); QNs we can send to are
     * below IWARP_CORE_DDP_MAX_QUEUES, whatever the peer's count */
    uint32_t send_msn[IWARP_CORE_DDP_MAX_QUEUES];

    /* receive */
    bool rx_stopped;    /* a receive error: every later segment is dropped (RFC 5041 §7.1) */
    uint64_t tagged_rx; /* payload octets of the current tagged message placed so far */
    struct iwarp_core_ddp_rx_cur rx_cur;
    struct iwarp_core_ddp_err err;
};

/*
 * Initialise an engine in IDLE (RFC 5041 §6.1: not yet enabled), every queue expecting MSN 1.
 * Ownership: cfg is copied; mem's arrays, the CQs and the STag table are borrowed for the
 * engine's lifetime. Returns 0 or IWARP_ERR_INVAL (a limit above, a NULL pointer).
 */
int iwarp_core_ddp_init(struct iwarp_core_ddp *d, const struct iwarp_core_ddp_cfg *cfg,
                        const struct iwarp_core_ddp_mem *mem);

/* Enable the stream in both directions (RFC 5041 §6.1), once MPA is in full operation.
 * ird/ord are MPA's and mean nothing to DDP (no RDMA Read). Returns 0 or IWARP_ERR_STATE. */
int iwarp_core_ddp_start(struct iwarp_core_ddp *d, uint32_t ird, uint32_t ord);

/* One send request (see iwarp_ddp_post_send): a resolved message for the send queue. */
struct iwarp_core_ddp_send {
    uint64_t wr_id;
    const struct iwarp_sge *sg_list;
    int num_sge;
    bool signaled;
    bool tagged;
    uint32_t qn;
    uint32_t stag;
    uint64_t to;
    const uint8_t *rsvdulp; /* 5 octets untagged, 1 tagged; NULL: zeros */
};

/*
 * Queue one message. Checks: qn below IWARP_CORE_DDP_MAX_QUEUES (untagged; the peer decides
 * whether it is valid for the stream, RFC 5041 §7.1 check 1), num_sge within max_send_sge, every
 * SGE a local source in the PD (iwarp_mem_check_local), the total under 2^32 (RFC 5041 §5.2),
 * tagged TO + length without a 64-bit wrap (§7.1 check 5, which the peer would fail). Posting is
 * allowed in IDLE (sent once running) and RUNNING, also after a receive error (RFC 5041 §6.2.2,
 * §7.1). Ownership: the SGE memory is borrowed until the completion; s is read during the call.
 * Returns 0, IWARP_ERR_INVAL, IWARP_ERR_NOSPC (queue full), IWARP_ERR_STATE (closing or
 * torn down: RFC 5041 §6.2.1 "MUST return an error") or the mem error of a bad SGE.
 */
int iwarp_core_ddp_post_send(struct iwarp_core_ddp *d, const struct iwarp_core_ddp_send *s);

/*
 * Post a receive buffer to untagged queue qn (RFC 4296 §2.1.2 ddp_post_recv): SGEs checked for
 * LOCAL_WRITE in the PD. Returns 0, IWARP_ERR_INVAL (qn out of range, SGEs), IWARP_ERR_NOSPC
 * (queue full), IWARP_ERR_STATE (after a receive error or teardown: nothing can arrive) or a
 * mem error. Ownership: the memory is borrowed until its completion.
 */
int iwarp_core_ddp_post_recv(struct iwarp_core_ddp *d, uint32_t qn, const struct iwarp_recv_wr *wr);

/*
 * Receive one whole DDP segment (RFC 5041 §4, §7.1): validate, place, deliver. Returns 0
 * (placed, or silently dropped after an earlier error) or the error that stopped reception.
 */
int iwarp_core_ddp_rx_segment(struct iwarp_core_ddp *d, const uint8_t *seg, size_t len);

/*
 * Octets of a segment's start that iwarp_core_ddp_rx_hdr() needs: 14 for a tagged header, 18
 * for an untagged one (from the T flag of p[0]); never more than seg_len. avail >= 1.
 */
uint32_t iwarp_core_ddp_rx_hdr_len(const uint8_t *p, size_t avail, uint32_t seg_len);

/*
 * Two-phase receive, as iwarp_core_qp_rx_hdr(): validate the segment whose first hdr_len
 * octets are in hdr for its whole length seg_len (RFC 5041 §7.1: before any Placement) and
 * give where its payload goes (dst[0..*ndst), max >= IWARP_CORE_RX_IOV_MAX); octets of the
 * payload already in hdr are the caller's to copy too. Then iwarp_core_ddp_rx_payload_done().
 * Returns 0 (*ndst = 0 and nothing to place after an earlier error: drop the payload), the
 * error that stopped reception (*ndst = 0), IWARP_ERR_STATE (not running, or a segment pending),
 * IWARP_ERR_INVAL (bad arguments). Ownership: dst points into registered memory or posted
 * receives, valid until payload_done; hdr is not kept.
 */
int iwarp_core_ddp_rx_hdr(struct iwarp_core_ddp *d, const uint8_t *hdr, size_t hdr_len,
                          size_t seg_len, struct iovec *dst, uint32_t max, uint32_t *ndst);

/*
 * Whether the pending segment's destination may still be written (before each read of its
 * payload, as iwarp_core_qp_rx_dst_valid). A tagged buffer deregistered, invalidated or rebound
 * since iwarp_core_ddp_rx_hdr() is a receive error (RFC 5041 §7.1 "MUST NOT place"), reported
 * as any other; receives flushed by a teardown are the ULP's again. Returns false then.
 */
bool iwarp_core_ddp_rx_dst_valid(struct iwarp_core_ddp *d);

/* The payload of the pending segment is placed: deliver the message it ends (RFC 5041 §5.4).
 * Returns 0; does nothing when no segment is pending. */
int iwarp_core_ddp_rx_payload_done(struct iwarp_core_ddp *d);

/* An LLP error on receive (RFC 5044 §8: CRC, marker, length): report it to the ULP and stop
 * receiving (RFC 5041 §7: "All LLP errors reported to DDP SHOULD be passed up to the ULP"). */
void iwarp_core_ddp_rx_llp_error(struct iwarp_core_ddp *d, struct iwarp_term_cause cause,
                                 const uint8_t *hdr, size_t hdr_len);

/* Produce the next segment (at most max_seg octets) into seg. Returns 1 or 0 (nothing now). */
int iwarp_core_ddp_tx_next(struct iwarp_core_ddp *d, uint32_t max_seg,
                           struct iwarp_core_tx_seg *seg);

/* The LLP has written seg's last octet (in production order). */
void iwarp_core_ddp_tx_sent(struct iwarp_core_ddp *d, const struct iwarp_core_tx_seg *seg);

/* Whether tx_next may produce something now. */
bool iwarp_core_ddp_tx_pending(const struct iwarp_core_ddp *d);

/* Whether the stream must be closed now: a graceful teardown has drained the send queue. */
bool iwarp_core_ddp_tx_close(const struct iwarp_core_ddp *d);

/* ULP graceful teardown (RFC 5041 §6.2.1): refuse new sends, drain the posted ones. */
void iwarp_core_ddp_disconnect(struct iwarp_core_ddp *d);

/* The LLP stream is gone (RFC 5041 §6.2.2): flush everything; a fatal-error event unless
 * graceful (our or the peer's orderly close). */
void iwarp_core_ddp_llp_closed(struct iwarp_core_ddp *d, bool graceful);

/* ULP abortive teardown: enter ERROR and flush every request. */
void iwarp_core_ddp_set_error(struct iwarp_core_ddp *d);

/* The verbs QP state: INIT, RTS (SQE after a receive error), SQD, ERR. */
enum iwarp_qp_state iwarp_core_ddp_verbs_state(const struct iwarp_core_ddp *d);

/* Before the engine's memory is freed: release the MR holds of every send never completed and
 * of every receive still posted. */
void iwarp_core_ddp_fini(struct iwarp_core_ddp *d);

#endif
