/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The queue pair engine: one RDMAP stream (RFC 5040) over DDP (RFC 5041), sans I/O.
 *
 * It owns the send queue, the receive queue (or a link to an SRQ), the outbound Read queue
 * (ORQ, ORD deep), the inbound Read queue (IRQ, IRD deep), the untagged-queue receive state of
 * DDP queues 0 (Send, Immediate Data), 1 (Read Request, Atomic Request), 2 (Terminate) and 3
 * (Atomic Response), the stream state (core_stream.h) and the sticky Terminate cause. RFC 7306
 * Atomic Requests share the ORQ and the IRQ with RDMA Reads (§5.2: the same ORD/IRD). It sees whole
 * DDP segments in both directions and never knows whether MPA or SCTP carries them: this is the LLP
 * seam.
 *
 * Lower layer (LLP back-end) contract:
 *  - RX: hand every received DDP segment, whole and verified (MPA CRC checked when on), to
 *    iwarp_core_qp_rx_segment(); or, when nothing needs verifying first (MPA CRC off), its
 *    headers to iwarp_core_qp_rx_hdr(), its payload straight into the iovecs that returns, then
 *    iwarp_core_qp_rx_payload_done(). Report a lower-layer error (CRC, marker, framing) with
 *    iwarp_core_qp_rx_llp_error() so the right Terminate goes out.
 *  - TX: while iwarp_core_qp_tx_next() produces segments, send them (header octets, then the
 *    payload iovecs in place, then LLP trailer) and call iwarp_core_qp_tx_sent() for each one
 *    once its last octet is handed to the transport, in production order. Several segments may
 *    be produced before the first is sent; their payload memory stays valid until tx_sent.
 *  - After tx_next returns 0, iwarp_core_qp_tx_close() says whether the stream must now be
 *    closed (Terminate sent, or graceful disconnect drained).
 *  - When the transport fails or closes, call iwarp_core_qp_llp_closed().
 * Everything is called with the context lock held; nothing here blocks or allocates.
 */
#ifndef IWARP_CORE_CORE_QP_H
#define IWARP_CORE_CORE_QP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/core_cq.h"
#include "core/core_engine.h"
#include "core/core_srq.h"
#include "core/core_stream.h"
#include "ddp/ddp_rx_untagged.h"
#include "ddp/ddp_tx.h"
#include "iwarp/verbs.h"
#include "mem/mem_stag.h"
#include "wire/wire.h"
#include "wire/wire_segment.h"

/* siw's limits (docs/interop-siw.md). */
#define IWARP_CORE_MAX_INLINE        80u
#define IWARP_CORE_MAX_IRD           128u
#define IWARP_CORE_MAX_ORD           128u
/* The default of iwarp_core_qp_cfg.read_batch_octets (docs/design.md, "Read Requests in
 * batches"). */
#define IWARP_CORE_READ_BATCH_OCTETS (256u * 1024u)
#define IWARP_CORE_MAX_WR            32768u

/* The RFC 7306 extensions the engine implements (IWARP_RDMAP_EXT_* bits a QP may enable). */
#define IWARP_CORE_RDMAP_EXT ((uint32_t)(IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS))

/* Payload iovecs of one produced segment: the SGEs it spans. */
#define IWARP_CORE_TX_IOV_MAX IWARP_CORE_MAX_SGE

/* One send queue entry: a posted WR, resolved at post time. */
struct iwarp_core_sqe {
    uint64_t wr_id;
    uint8_t opcode; /* enum iwarp_wr_opcode */
    uint8_t flags;  /* enum iwarp_send_flags */
    bool signaled;  /* IWARP_SEND_SIGNALED or sq_sig_all */
    bool started;   /* TX has begun producing this WR */
    bool done;      /* finished (status valid); completion pending until it is the oldest */
    uint8_t status; /* enum iwarp_wc_status once done */
    uint32_t vendor_err;
    uint32_t nsge;
    uint32_t len;         /* payload octets (sum of SGEs) */
    uint64_t remote_addr; /* Write: sink TO; Read: source TO; atomics: the target's TO */
    uint32_t rkey;        /* Write: sink STag; Read: source STag; atomics: the target's STag */
    /* RFC 7306 atomics: the Atomic Request's fields (§5.2.1 Figure 5); FetchAdd: add_swap is
     * the Add Data, add_swap_mask the Add Mask */
    uint8_t aopcode; /* enum iwarp_atomic_opcode */
    uint64_t add_swap, add_swap_mask, compare, compare_mask;
    uint8_t imm[IWARP_RDMAP_IMM_DATA_LEN]; /* Write with Immediate, Immediate Data: the octets */
    uint32_t inv_stag;                     /* Send with Invalidate */
    uint32_t lkey0;  /* Read: the sink STag (our first SGE's lkey, tagged by responses) */
    uint64_t laddr0; /* Read: the sink TO (first SGE's addr) */
    /* local operations (LOCAL_INV, BIND_MW, REG_MR) */
    uint32_t stag; /* LOCAL_INV: the STag; BIND_MW/REG_MR: the object's STag */
    uint32_t new_stag;
    uint32_t mr_stag;
    uint64_t addr;
    uint64_t length;
    uint32_t access;
    /* Written only as far as used, so not cleared at post (fill_sqe clears what is above and
     * held.n): the lkeys of held.n, the nsge iovecs, len octets of inline data. */
    struct iwarp_core_held held;               /* MRs held until the WR completes */
    struct iovec iov[IWARP_CORE_MAX_SGE];      /* local memory (resolved lkeys) */
    uint8_t inline_buf[IWARP_CORE_MAX_INLINE]; /* IWARP_SEND_INLINE copies the data here */
};

/* One outstanding outbound RDMA Read or Atomic Request (ORQ entry; RFC 5040 §5.4, RFC 7306
 * §5.2: the same ORD). Responses come back in request order (RFC 7306 §7). */
struct iwarp_core_orqe {
    bool atomic;       /* an Atomic Request: answered by an Atomic Response, not a Read */
    uint32_t req_id;   /* atomic: its Request Identifier (RFC 7306 §5.2.1) */
    uint32_t sq_index; /* the Read's SQ slot */
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t len;      /* Read Message Size */
    uint32_t received; /* Read Response payload octets placed so far */
};

/* One inbound RDMA Read or Atomic Request being answered (IRQ entry; RFC 5040 §4.4, §5.4;
 * RFC 7306 §5.2.2 rule 8: answered in the order received, Reads and atomics alike). */
struct iwarp_core_irqe {
    bool atomic;         /* an Atomic Request, already performed: its Response is due */
    uint32_t req_id;     /* atomic: the Original Request Identifier */
    uint64_t orig_value; /* atomic: the Original Remote Data Value */
    uint32_t sink_stag;  /* Data Sink STag/TO: where our Read Responses go */
    uint64_t sink_to;
    uint64_t src_addr; /* local address of the source (validated on arrival) */
    uint32_t src_stag; /* the Data Source STag/TO, to validate again (src_gen) */
    uint64_t src_to;
    uint32_t src_gen; /* the mem table's gen when src_addr was last validated */
    uint32_t len;
    bool started;
};

/* What the TX side is producing right now. */
enum iwarp_core_tx_src {
    IWARP_CORE_TX_NONE = 0,
    IWARP_CORE_TX_SQ = 1,   /* a Send/Write/Read Request of the SQ */
    IWARP_CORE_TX_IRQ = 2,  /* a Read Response or an Atomic Response */
    IWARP_CORE_TX_TERM = 3, /* the Terminate */
};

/* One DDP segment produced for the LLP. */
struct iwarp_core_tx_seg {
    uint8_t hdr[IWARP_DDP_TX_HDR_MAX]; /* DDP + RDMAP header (and the Terminate body) */
    uint32_t hdr_len;
    struct iovec iov[IWARP_CORE_TX_IOV_MAX]; /* payload, pointing into registered memory */
    uint32_t niov;
    uint32_t payload_len;
    /* completion bookkeeping, private to the core */
    uint8_t src;    /* enum iwarp_core_tx_src */
    bool last;      /* ends its message */
    bool wr_done;   /* ends its work request (a Write with Immediate is two messages) */
    uint32_t index; /* SQ or IRQ slot */
};

/* Payload iovecs of one received segment (iwarp_core_qp_rx_hdr): the receive's SGEs it
 * spans, or one range of a tagged buffer. */
#define IWARP_CORE_RX_IOV_MAX IWARP_CORE_MAX_SGE

/* The received segment between iwarp_core_qp_rx_hdr() and iwarp_core_qp_rx_payload_done():
 * validated, its payload being placed; what delivery still needs. Private to core_qp_rx.c. */
struct iwarp_core_rx_cur {
    bool active;     /* a segment is between the two phases */
    uint8_t opcode;  /* its RDMAP opcode */
    bool last;       /* DDP L: the segment ends its message */
    uint8_t hdr_len; /* octets of hdr: its DDP header (the Terminate's offender copy) */
    uint8_t hdr[IWARP_DDP_UNTAGGED_HDR_LEN];
    uint32_t seg_len;                     /* its ULPDU_Length (RFC 5040 §4.8 DDP Segment Length) */
    uint32_t payload_len;                 /* payload octets */
    uint32_t inv_stag;                    /* Send with Invalidate: the STag */
    uint64_t msg_len;                     /* Send with L: the message length */
    uint64_t src_addr;                    /* Read Request: the validated Data Source address */
    uint32_t src_gen;                     /* Read Request: the mem table's gen then */
    struct iwarp_rdmap_read_req read_req; /* Read Request: its RDMAP header */
    struct iwarp_rdmap_atomic_req atomic_req;   /* Atomic Request: its header */
    struct iwarp_rdmap_atomic_resp atomic_resp; /* Atomic Response: its header */
    struct iwarp_rdmap_imm imm;                 /* Immediate Data: the 8 octets */
    struct iwarp_term_cause term;               /* Terminate: the peer's cause */
    /* A tagged destination, re-checked while the payload arrives (rx_dst_valid) unless the
     * mem table's gen is still dst_gen, the gen it was checked at */
    uint32_t stag, need, dst_gen;
    uint64_t to, addr;
    bool lost; /* the destination went away before the payload was in: no delivery */
    int lost_err;
    struct iwarp_term_cause lost_cause;
};

struct iwarp_core_qp;

/* Async event hook: event_type is enum iwarp_event_type; cause is the Terminate cause
 * (layer << 16 | etype << 8 | code) for errors, else 0. */
typedef void (*iwarp_core_qp_event_fn)(void *user, struct iwarp_core_qp *qp, int event_type,
                                       uint32_t cause, bool from_peer);

/* Creation parameters. */
struct iwarp_core_qp_cfg {
    uint32_t qp_num;
    uint32_t pd;
    struct iwarp_mem_table *mem; /* the context's STag table */
    struct iwarp_core_cq *send_cq;
    struct iwarp_core_cq *recv_cq;
    struct iwarp_core_srq *srq; /* NULL: the QP's own RQ */
    uint32_t sq_cap;            /* max_send_wr */
    uint32_t rq_cap;            /* max_recv_wr (0 with an SRQ) */
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline;
    uint32_t rdmap_ext; /* the RFC 7306 extensions enabled (enum iwarp_rdmap_ext bits) */
    /* Read Requests go out in batches while the Reads outstanding ask for at least this many
     * octets (core_qp_tx.c, orq_waits); 0: IWARP_CORE_READ_BATCH_OCTETS (set at init) */
    uint32_t read_batch_octets;
    bool sq_sig_all;
    iwarp_core_qp_event_fn event;
    void *event_user;
};

/* Memory the caller allocates for a QP (sizes from iwarp_core_qp_mem_sizes). */
struct iwarp_core_qp_mem {
    struct iwarp_core_sqe *sq;   /* sq_cap */
    struct iwarp_core_rqe *rq;   /* rq_cap (may be NULL with an SRQ) */
    uint64_t *rq_lens;           /* rq_cap, or sq... with an SRQ: IWARP_CORE_SRQ_WINDOW */
    struct iwarp_core_orqe *orq; /* IWARP_CORE_MAX_ORD */
    struct iwarp_core_irqe *irq; /* IWARP_CORE_MAX_IRD */
    uint64_t *irq_lens;          /* IWARP_CORE_MAX_IRD: DDP queue 1 buffers */
};

/* With an SRQ, receives are pulled into the QP's queue-0 window this many at most. */
#define IWARP_CORE_SRQ_WINDOW 2u

struct iwarp_core_qp {
    struct iwarp_core_engine eng; /* first: what the LLPs drive (core_engine.h) */
    struct iwarp_core_qp_cfg cfg;
    /* state (enum iwarp_core_stream_state), the send queue ring over sq, produced segments,
     * the flush that waits for the LLP */
    struct iwarp_core_stream stream;

    /* negotiated at connection time (iwarp_core_qp_start) */
    uint32_t ird; /* inbound Read Requests we accept at once */
    uint32_t ord; /* outbound Reads we keep outstanding at once */

    struct iwarp_core_sqe *sq; /* the send queue's entries (ring indices in stream) */

    /* receive side: queue 0 (Send), 1 (Read Request), 2 (Terminate) */
    struct iwarp_core_rq rq;                                /* unused with an SRQ */
    struct iwarp_core_rqe srq_taken[IWARP_CORE_SRQ_WINDOW]; /* SRQ receives pulled for queue 0 */
    uint32_t srq_taken_head, srq_taken_count;
    struct iwarp_ddp_rx_uq uq_send;
    struct iwarp_ddp_rx_uq uq_read;
    uint64_t uq_term_lens[1];
    struct iwarp_ddp_rx_uq uq_term;
    /* RFC 7306 §5.2.2 rule 5: one queue 3 buffer per Atomic Request we may have outstanding */
    uint64_t uq_atomic_resp_lens[IWARP_CORE_MAX_ORD];
    struct iwarp_ddp_rx_uq uq_atomic_resp;
    uint32_t send_msn;        /* next MSN we send on queue 0 (RFC 5041 §4.3: from 1) */
    uint32_t read_msn;        /* next MSN we send on queue 1 (Read and Atomic Requests) */
    uint32_t atomic_resp_msn; /* next MSN we send on queue 3 */
    uint32_t atomic_req_id;   /* the next Atomic Request's Request Identifier */

    /* outbound Reads */
    struct iwarp_core_orqe *orq;
    uint32_t orq_head, orq_count;
    uint64_t orq_octets; /* what the outstanding Reads ask for, together */
    bool orq_refill;     /* Requests go until the ORD is full (orq_waits) */

    /* inbound Reads */
    struct iwarp_core_irqe *irq;
    uint32_t irq_head, irq_count;

    /* TX: the message being segmented */
    uint8_t tx_src; /* enum iwarp_core_tx_src */
    uint32_t tx_index;
    struct iwarp_ddp_tx_msg tx_msg;
    struct iovec tx_iov[IWARP_CORE_MAX_SGE];
    bool tx_irq_turn; /* fairness: next message boundary favours the IRQ */
    bool tx_imm_next; /* the Write of a Write with Immediate is out: its Immediate Data next */
    bool tx_rdmap_ext_sent; /* an RFC 7306 message (Atomic Request, Immediate Data) went out */

    /* Terminate */
    bool term_pending;  /* built, not yet produced */
    bool term_produced; /* handed to the LLP */
    bool term_sent;
    uint8_t term_buf[IWARP_DDP_TX_HDR_MAX];
    uint32_t term_len;
    struct iwarp_term_cause term_cause; /* sticky first error */
    bool term_from_peer;

    /* RX: the segment between iwarp_core_qp_rx_hdr() and _rx_payload_done() */
    struct iwarp_core_rx_cur rx_cur;

    bool last_wqe_reported; /* QP_LAST_WQE_REACHED raised (SRQ) */

    /* Header prediction on receive (core_qp_rx.c) and transmit (core_qp_tx.c): on from init;
     * tests turn them off to run the same traffic through the general paths and compare. */
    bool rx_predict, tx_predict;
    uint64_t rx_predicted, tx_predicted; /* the segments that took them */
};

/*
 * Initialise a QP in IDLE. Ownership: cfg is copied; mem's arrays and the CQs/SRQ/mem table
 * are borrowed for the QP's lifetime. Returns 0 or IWARP_ERR_INVAL.
 */
int iwarp_core_qp_init(struct iwarp_core_qp *qp, const struct iwarp_core_qp_cfg *cfg,
                       const struct iwarp_core_qp_mem *mem);

/* Enter full operation (RUNNING) with the negotiated IRD/ORD (0 is raised to 1 for IRD only
 * when... see core_qp.c). Returns 0 or IWARP_ERR_STATE. */
int iwarp_core_qp_start(struct iwarp_core_qp *qp, uint32_t ird, uint32_t ord);

/* Validate and queue one send WR. Returns 0, IWARP_ERR_STATE, IWARP_ERR_NOSPC,
 * IWARP_ERR_INVAL or a mem error (bad lkey/bounds/rights of an SGE). */
int iwarp_core_qp_post_send(struct iwarp_core_qp *qp, const struct iwarp_send_wr *wr);

/* Validate and queue one receive WR (IWARP_ERR_INVAL when the QP uses an SRQ). */
int iwarp_core_qp_post_recv(struct iwarp_core_qp *qp, const struct iwarp_recv_wr *wr);

/* Process one received DDP segment (RFC 5041 §7, RFC 5040 §7 checks; placement; completions;
 * Read Requests queued for response; Terminate reception). Returns 0, or the negative error
 * that moved the stream to TERMINATING (a Terminate is then queued for TX). */
int iwarp_core_qp_rx_segment(struct iwarp_core_qp *qp, const uint8_t *seg, size_t len);

/*
 * Receive in two phases (zero-copy placement; rx_segment is the same two phases over a whole
 * segment in memory). Phase 1: the segment's headers arrived, its payload has not.
 *   hdr, hdr_len: the first hdr_len octets of the segment (from its DDP Control octet): the
 *            DDP and RDMAP headers at least, and the whole segment unless the opcode carries
 *            a payload (RDMA Write, Read Response, the Sends): iwarp_core_qp_rx_hdr_len() says
 *            how many octets that is. Octets after the headers are the payload's first ones.
 *   seg_len: the whole segment's length (its MPA ULPDU_Length), >= hdr_len, <= UINT32_MAX.
 *   dst, max: room for the destination iovecs, max >= IWARP_CORE_RX_IOV_MAX.
 *   ndst:    set to the number of iovecs filled.
 * Every check rx_segment makes runs here, for the full payload length seg_len minus the
 * headers (RFC 5041 §7.1: a segment is validated before any of it is placed): the same
 * causes and the same Terminate (its DDP Segment Length is seg_len). The payload's octets go,
 * in order, to dst[0..*ndst): into the MR for a tagged segment, into the current receive's
 * SGEs at the segment's MO for a Send. The caller puts them there (including any already in
 * hdr) and then calls iwarp_core_qp_rx_payload_done(), which delivers (completions, Read
 * Requests queued, a peer Terminate reported). No other rx call may come in between.
 * Ownership: dst points into registered memory or posted receives; check
 * iwarp_core_qp_rx_dst_valid() before each write into it (the ULP may deregister, invalidate
 * or flush in between). Nothing of hdr is kept.
 * Returns 0: the iovecs' lengths sum to the payload length, or to 0 when the stream no longer
 * receives (TERMINATING/ERROR: RFC 5041 §7.1 silent drop): the caller then discards the
 * payload; payload_done is harmless either way. Or the negative error that queued the
 * Terminate (*ndst = 0: discard the payload; nothing was placed). IWARP_ERR_STATE before full
 * operation or while a segment is pending, IWARP_ERR_INVAL for bad arguments (nothing done).
 */
int iwarp_core_qp_rx_hdr(struct iwarp_core_qp *qp, const uint8_t *hdr, size_t hdr_len,
                         size_t seg_len, struct iovec *dst, uint32_t max, uint32_t *ndst);

/*
 * Phase 2: every payload octet of the segment iwarp_core_qp_rx_hdr() accepted is now in its
 * iovecs. Completes what the segment finishes (RFC 5040 §5: a Send's receive, a Read; a Read
 * Request is queued for its Response; a Terminate reported). Does nothing when no segment is
 * pending or the stream stopped receiving in between.
 * Returns 0 or the negative error that moved the stream to TERMINATING (Send with Invalidate
 * of an STag that cannot be invalidated, RFC 5040 §7.2).
 */
int iwarp_core_qp_rx_payload_done(struct iwarp_core_qp *qp);

/*
 * Whether the pending segment's destination iovecs may still be written, checked before every
 * read into them: the stream still receives (a flush would have handed the receive or the
 * Read's buffer back to the ULP) and a tagged buffer is still registered at the same place
 * with the rights the segment needs (RFC 5041 §7.1 checks 1-5 again; the ULP may deregister or
 * invalidate it while the payload is on its way). Once false it stays false for the segment:
 * the caller discards the rest of the payload, and iwarp_core_qp_rx_payload_done() sends the
 * Terminate with the failed check's cause instead of delivering (RFC 5041 §7.1: "MUST NOT
 * place"). True when no segment is pending.
 */
bool iwarp_core_qp_rx_dst_valid(struct iwarp_core_qp *qp);

/*
 * How many of a segment's first octets iwarp_core_qp_rx_hdr() needs, from its first two (the
 * DDP and RDMAP Control octets: T flag and opcode): the 14-octet tagged header for an RDMA
 * Write or Read Response, the 18-octet untagged header for a Send, the whole segment for
 * every other (and malformed) combination; never more than seg_len.
 *   p, avail: the segment's first octets (avail >= 2, or >= seg_len when that is smaller).
 * Returns that count, or seg_len when avail is too small to tell.
 */
uint32_t iwarp_core_qp_rx_hdr_len(const uint8_t *p, size_t avail, uint32_t seg_len);

/* A lower-layer error on receive (RFC 5044 §8: CRC, marker, length): queue the Terminate with
 * cause and, when the offending segment's header is known, its copy (hdr may be NULL). */
void iwarp_core_qp_rx_llp_error(struct iwarp_core_qp *qp, struct iwarp_term_cause cause,
                                const uint8_t *hdr, size_t hdr_len);

/* Produce the next DDP segment of at most max_seg octets (header + payload) into seg.
 * Returns 1 when one was produced, 0 when there is nothing to send now. */
int iwarp_core_qp_tx_next(struct iwarp_core_qp *qp, uint32_t max_seg,
                          struct iwarp_core_tx_seg *seg);

/* The LLP has handed seg's last octet to the transport (in production order). */
void iwarp_core_qp_tx_sent(struct iwarp_core_qp *qp, const struct iwarp_core_tx_seg *seg);

/* Whether the stream should be closed now: a Terminate was sent, or a graceful disconnect has
 * drained the send queue. */
bool iwarp_core_qp_tx_close(const struct iwarp_core_qp *qp);

/* Whether tx_next may produce something now. */
bool iwarp_core_qp_tx_pending(const struct iwarp_core_qp *qp);

/*
 * At most how many payload octets of a Read Response the next iwarp_core_qp_tx_next(max_seg)
 * can produce: min(max_seg, what is left of the Read Response being sent, or of the oldest one
 * not yet started); 0 when the next segment surely carries none (the Terminate, an SQ message
 * under way, no Read to answer). For an LLP that must set room aside for a Read Response's
 * payload before asking for the segment (llp_conn's TX staging ring). Reads only.
 */
uint32_t iwarp_core_qp_tx_read_resp_max(const struct iwarp_core_qp *qp, uint32_t max_seg);

/* Graceful disconnect (RFC 5040 §5.4 orderly close): stop accepting WRs, let posted ones drain,
 * then iwarp_core_qp_tx_close() says close. */
void iwarp_core_qp_disconnect(struct iwarp_core_qp *qp);

/* The transport is gone (FIN, reset, error): flush everything and enter ERROR. graceful: the
 * close followed our or the peer's orderly disconnect (no fatal event). */
void iwarp_core_qp_llp_closed(struct iwarp_core_qp *qp, bool graceful);

/* Enter ERROR now (iwarp_modify_qp_err): flush every WR. */
void iwarp_core_qp_set_error(struct iwarp_core_qp *qp);

/* Queue a Terminate with cause (and the offending header copy when hdr is not NULL), enter
 * TERMINATING and report the local async event. Only the first error counts. */
void iwarp_core_qp_terminate(struct iwarp_core_qp *qp, struct iwarp_term_cause cause,
                             const uint8_t *hdr, size_t hdr_len);

/* Before the QP's memory is freed: release the MR holds of every WR never completed. */
void iwarp_core_qp_fini(struct iwarp_core_qp *qp);

/* The verbs state for a stream state. */
enum iwarp_qp_state iwarp_core_qp_verbs_state(const struct iwarp_core_qp *qp);

#endif
