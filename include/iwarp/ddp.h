/* SPDX-License-Identifier: BSD-2-Clause */
/* libiwarp DDP-level interface: a ULP that does not need RDMAP uses DDP (RFC 5041) directly
 * over MPA/TCP, as RFC 4296 §2.1.2 describes (ddp_send, ddp_send_ddp, ddp_post_recv, ddp_recv,
 * ddp_register). Shaped like the verbs: a QP created here is a struct iwarp_qp (destroy it with
 * iwarp_destroy_qp, abort it with iwarp_modify_qp_err, query it with iwarp_query_qp), its
 * buffers are MRs (iwarp_reg_mr: REMOTE_WRITE makes one a Tagged Buffer whose STag is the rkey;
 * LOCAL_WRITE for receive buffers), and it connects through the CM (iwarp_ddp_cm_create_qp,
 * then iwarp_cm_connect/accept as usual). The verbs post calls refuse it (IWARP_ERR_DDP_QP_MODE).
 *
 * The wire: DDP segments (RFC 5041 §4) in MPA FPDUs, no RDMAP header. Octet 1 of every segment
 * and, untagged, octets 2..5 are the ULP's RsvdULP (RFC 5041 §4.2: 8 bits tagged; §4.3: 40 bits
 * untagged), carried unmodified in every segment of the message. MSNs start at 1 per QN
 * (§4.3). Messages are segmented to the connection's MULPDU (§5.2) and sent in posting order
 * (§5.3). MPA setup is unchanged, but RFC 6581 RTR messages are RDMAP's: peer_to_peer is refused
 * (IWARP_ERR_DDP_RTR) at connect and, when the peer asks for it, at accept. As RFC 5044 §7.1.2
 * requires, the connector sends the first message.
 *
 * Indications (RFC 5041 §5.4 and nothing else: DDP indicates Delivery of whole messages, never
 * Placement of single segments), through iwarp_poll_cq on the recv CQ:
 *  - IWARP_WC_DDP_RECV: an untagged message was Delivered into the oldest buffer posted to its
 *    queue. wr_id: that buffer's; byte_len: the ULP Message Length (MO + payload of the last
 *    segment, §5.4); ddp_qn, ddp_msn; ddp_rsvdulp[0..4]: RsvdULP[0:39] (§4.3, §5.4).
 *  - IWARP_WC_DDP_TAGGED_RECV: a tagged message's last segment (L set) was Placed, and with it
 *    the whole message (in-order LLP). ddp_stag: its STag (§4.2 "MUST provide the STag field
 *    when the ULP Message is delivered"); ddp_rsvdulp[0]: RsvdULP (§4.2); byte_len: payload
 *    octets of tagged segments Placed since the previous tagged Delivery (information: DDP does
 *    not verify that a tagged message is whole, §5.2); wr_id 0 (no buffer was posted for it).
 * and on the send CQ:
 *  - IWARP_WC_DDP_SEND: the message was handed to the LLP completely (§5.4 "completed when the
 *    reliable, in-order transport LLP has indicated that the transfer will occur reliably"),
 *    when IWARP_SEND_SIGNALED or sq_sig_all; byte_len its length.
 * Flushed requests complete with IWARP_WC_WR_FLUSH_ERR (receives with ddp_qn set).
 *
 * Errors (RFC 5041 §7): the first receive error (§7.1 checks; a segment shorter than its header
 * is Local Catastrophic 1/0/0x00; an MPA error 2/0/x, RFC 5044 §8) is an async event for the QP
 * (IWARP_EVENT_QP_ACCESS_ERR for the Tagged Buffer errors 1/1/0x00-0x03, IWARP_EVENT_QP_FATAL
 * for the others) with term_cause = layer << 16 | etype << 8 | code (RFC 5041 §7.2 numbers);
 * iwarp_ddp_query_error gives the offending DDP header and segment length (§7.1 "SHOULD include
 * in the error report the DDP Header, the type of error, and the length of the DDP segment").
 * Nothing of that segment is Placed; every later segment is silently dropped; posted receives
 * complete with WR_FLUSH_ERR and post_recv then fails with IWARP_ERR_STATE.
 * What the peer sees: nothing. RFC 5041 defines no error message: the Terminate is RDMAP's
 * (RFC 5040 §4.8) and DDP "MUST NOT independently initiate Stream Teardown" (§6.2). The send
 * side keeps working so that the ULP can send its own last message(s) to the peer (§7.1 "SHOULD
 * enable the ULP to send one additional DDP Message before terminating the DDP Stream",
 * §6.2.2); the ULP then tears the stream down: iwarp_cm_disconnect (graceful, §6.2.1: posted
 * sends drain, later posts fail with IWARP_ERR_STATE, then TCP FIN) or iwarp_modify_qp_err
 * (abortive). A lost connection is IWARP_EVENT_QP_FATAL with 2/0/0x01 (§6.2.2).
 */
#ifndef IWARP_DDP_H
#define IWARP_DDP_H

#include <stdbool.h>
#include <stdint.h>

#include "iwarp/cm.h"
#include "iwarp/common.h"
#include "iwarp/verbs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Untagged queues of one DDP-level QP, at most (and the QNs it can send to: 0..63). */
#define IWARP_DDP_MAX_QUEUES 64u

/**
 * struct iwarp_ddp_qp_init_attr - how iwarp_ddp_create_qp makes a DDP-level QP. Input struct
 * (common.h); the defaults taken are written back.
 */
struct iwarp_ddp_qp_init_attr {
    void *qp_context;         /* copied to iwarp_qp.qp_context */
    struct iwarp_cq *send_cq; /* IWARP_WC_DDP_SEND */
    struct iwarp_cq *recv_cq; /* IWARP_WC_DDP_RECV, IWARP_WC_DDP_TAGGED_RECV */
    uint32_t num_queues;      /* untagged queues QN 0 .. num_queues - 1; 0: 1 */
    uint32_t max_recv_wr;     /* posted receives per queue; 0: 1 */
    uint32_t max_send_wr;     /* 0: 1 */
    uint32_t max_send_sge;    /* 0: 1; at most 6 */
    uint32_t max_recv_sge;    /* 0: 1; at most 6 */
    int sq_sig_all;           /* non-zero: every send completes as if signaled */
    uint32_t comp_mask;       /* extension fields set (common.h); none defined yet: 0 */
};

/**
 * iwarp_ddp_create_qp - create a DDP-level QP, not connected (see iwarp_ddp_cm_create_qp).
 *
 * Sends may be posted before it is connected (they go out once it is); so may receives.
 *
 * Returns:
 *   0                    *qp is the new QP; attr's zero sizes are raised to the defaults.
 *   IWARP_ERR_INVAL      pd, attr or qp is NULL; send_cq or recv_cq is NULL or of another
 *                        context; num_queues is over IWARP_DDP_MAX_QUEUES; a WR or SGE count
 *                        is over the device limit (iwarp_query_device).
 *   IWARP_ERR_NOTSUP     attr->comp_mask has a bit this version does not know; nothing else
 *                        was checked.
 *   IWARP_ERR_NOMEM      out of memory.
 * Ownership: attr is read (and written back) during the call only; qp_context and the CQs are
 *   borrowed for the QP's life. The QP belongs to the caller until iwarp_destroy_qp.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_ddp_create_qp(struct iwarp_pd *pd, struct iwarp_ddp_qp_init_attr *attr,
                                     struct iwarp_qp **qp);

/**
 * iwarp_ddp_cm_create_qp - create a DDP-level QP for a CM id (rdma_create_qp's shape).
 *
 * The id owns it as after iwarp_cm_create_qp (iwarp_cm_destroy_qp destroys it) and connects it
 * with iwarp_cm_connect or iwarp_cm_accept as usual.
 *
 * Returns:
 *   0                    id->qp is the new QP.
 *   IWARP_ERR_INVAL      id, pd or attr is NULL, or as iwarp_ddp_create_qp.
 *   IWARP_ERR_BUSY       the id has a QP already.
 *   IWARP_ERR_NOTSUP, IWARP_ERR_NOMEM  as iwarp_ddp_create_qp.
 * Ownership: as iwarp_ddp_create_qp.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_ddp_cm_create_qp(struct iwarp_cm_id *id, struct iwarp_pd *pd,
                                        struct iwarp_ddp_qp_init_attr *attr);

/**
 * struct iwarp_ddp_send_wr - one DDP message to send (RFC 4296 §2.1.2 ddp_send /
 * ddp_send_ddp). Fixed layout, posted in lists: not extensible (common.h).
 */
struct iwarp_ddp_send_wr {
    uint64_t wr_id;                 /* reported by the completion */
    struct iwarp_ddp_send_wr *next; /* the next WR of the list, or NULL */
    struct iwarp_sge *sg_list;      /* the payload: lkeys of the QP's PD */
    int num_sge;                    /* entries of sg_list, up to max_send_sge */
    unsigned int send_flags;        /* IWARP_SEND_SIGNALED (the others are RDMAP's: INVAL) */
    bool tagged;                    /* RFC 5041 §5.1.1 tagged, else §5.1.2 untagged */
    uint32_t qn;                    /* untagged: the peer's queue (0 .. IWARP_DDP_MAX_QUEUES - 1) */
    uint32_t stag;                  /* tagged: the peer's Tagged Buffer */
    uint64_t to;                    /* tagged: the TO of the first octet */
    uint8_t rsvdulp[5];             /* RsvdULP: all 5 octets untagged; tagged only rsvdulp[0] */
};

/**
 * iwarp_ddp_post_send - post DDP messages, in order (ddp_send, ddp_send_ddp).
 *
 * Each WR is checked and queued; the first that fails stops the list (those before it stay
 * posted). What can be sent is sent from the calling thread before it returns; before the QP
 * is connected the messages wait.
 *
 * Returns:
 *   0                    every WR is posted; *bad_wr is NULL.
 *   IWARP_ERR_INVAL      qp or wr is NULL; send_flags has a bit other than
 *                        IWARP_SEND_SIGNALED; num_sge < 0 or over max_send_sge; sg_list NULL
 *                        with num_sge > 0; untagged qn is IWARP_DDP_MAX_QUEUES or more; the
 *                        message is 2^32 octets or more; tagged TO + length wraps 64 bits.
 *   IWARP_ERR_STATE      a graceful teardown was requested, or the stream is torn down.
 *   IWARP_ERR_NOSPC      the send queue is full.
 *   IWARP_ERR_DDP_QP_MODE  qp is not a DDP-level QP.
 *   IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_MEM_BOUNDS,
 *   IWARP_ERR_MEM_TO_WRAP  an SGE is not inside an MR of the QP's PD.
 *   On failure *bad_wr (if bad_wr is not NULL) is the first WR not posted.
 * Ownership: the WRs are read during the call only; the SGE memory is borrowed until the
 *   completion.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_ddp_post_send(struct iwarp_qp *qp, struct iwarp_ddp_send_wr *wr,
                                     struct iwarp_ddp_send_wr **bad_wr);

/**
 * iwarp_ddp_post_recv - post receive buffers to untagged queue qn (ddp_post_recv).
 *
 * Each takes the next message of that queue, in posting order. Allowed before the QP is
 * connected.
 *
 * Returns:
 *   0                    every WR is posted; *bad_wr is NULL.
 *   IWARP_ERR_INVAL      qp or wr is NULL; qn is not below the QP's num_queues; num_sge < 0
 *                        or over max_recv_sge; sg_list NULL with num_sge > 0; the SGEs total
 *                        2^32 octets or more.
 *   IWARP_ERR_STATE      after a receive error (nothing is placed any more), or the QP is in
 *                        error.
 *   IWARP_ERR_NOSPC      the queue is full (max_recv_wr).
 *   IWARP_ERR_DDP_QP_MODE  qp is not a DDP-level QP.
 *   IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_MEM_ACCESS,
 *   IWARP_ERR_MEM_BOUNDS, IWARP_ERR_MEM_TO_WRAP  an SGE is not inside a LOCAL_WRITE MR of the
 *                        QP's PD.
 *   On failure *bad_wr (if bad_wr is not NULL) is the first WR not posted.
 * Ownership: the WRs are read during the call only; the memory is borrowed until the
 *   completion.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_ddp_post_recv(struct iwarp_qp *qp, uint32_t qn, struct iwarp_recv_wr *wr,
                                     struct iwarp_recv_wr **bad_wr);

/**
 * struct iwarp_ddp_error - the first receive error of a DDP-level QP (RFC 5041 §7.1 report).
 * Output struct (common.h).
 */
struct iwarp_ddp_error {
    uint32_t cause;     /* layer << 16 | etype << 8 | code; 0: no error so far */
    uint32_t seg_len;   /* the offending segment's length (MPA ULPDU_Length); 0 if unknown */
    uint8_t hdr_len;    /* octets of hdr valid: 14 tagged, 18 untagged, fewer if it was short */
    uint8_t hdr[18];    /* its DDP header as received */
    uint32_t comp_mask; /* output: extension fields filled (common.h); none defined yet: 0 */
};

/**
 * iwarp_ddp_query_error_sized - what iwarp_ddp_query_error calls: fill err, err_size octets
 * long.
 *
 * Writes the base of struct iwarp_ddp_error and each appended field that fits in err_size, and
 * sets comp_mask to the bits of the appended fields written (0 in this version). Call it
 * directly only where the inline wrapper cannot be used.
 *
 * Returns:
 *   0                    *err is filled (cause 0: no error so far).
 *   IWARP_ERR_INVAL      qp or err is NULL, or err_size is smaller than the base.
 *   IWARP_ERR_DDP_QP_MODE  qp is not a DDP-level QP.
 * Ownership: err is the caller's; nothing is kept.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_ddp_query_error_sized(struct iwarp_qp *qp, struct iwarp_ddp_error *err,
                                             size_t err_size);
/**
 * iwarp_ddp_query_error - the QP's first receive error, with the offending DDP header and
 * segment length (RFC 5041 §7.1).
 *
 * err need not be initialised: the wrapper passes sizeof *err to iwarp_ddp_query_error_sized.
 *
 * Returns: as iwarp_ddp_query_error_sized.
 * Ownership: as iwarp_ddp_query_error_sized.
 * Context: as iwarp_ddp_query_error_sized.
 */
static inline int iwarp_ddp_query_error(struct iwarp_qp *qp, struct iwarp_ddp_error *err)
{
    return iwarp_ddp_query_error_sized(qp, err, sizeof *err);
}

#ifdef __cplusplus
}
#endif
#endif
