/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP receive-side validation of Untagged DDP Segments for one untagged queue (RFC 5041 §7.1):
 * QN 0 (Send), QN 1 (RDMA Read Request), QN 2 (Terminate), each with its own state.
 *
 * Pure and stateful: the caller decodes the segment (iwarp_wire_segment_decode() checks the
 * versions and the QN for the opcode, RFC 5041 §7.1 check 1), picks the queue by QN and asks
 * iwarp_ddp_rx_uq_segment() whether the payload may be placed, and where. Per queue this keeps:
 *   - the next expected MSN: 1 for the first message (RFC 5041 §4.3), modulo 2^32;
 *   - the posted receive buffers' lengths, in posting order, in a ring the caller provides; the
 *     oldest one is the buffer the current message lands in (RFC 5041 §1.2: "An Untagged DDP
 *     Message from the Data Source consumes an Untagged Buffer", in the order the Data Sink
 *     queued them);
 *   - the octets of the current message received so far.
 *
 * Decisions the RFC leaves to the implementation (for an in-order LLP: MPA over TCP, ordered
 * SCTP streams; placement follows arrival, as in Linux siw):
 *   - MSN: check 5 of RFC 5041 §7.1 allows the MSNs between the first and the last posted
 *     buffer. Over an in-order LLP the Data Source "MUST transmit DDP Messages in the order they
 *     were submitted" (RFC 5041 §5.3) and every segment of message N arrives before any of
 *     N + 1, so a segment whose MSN is not the expected one (behind it, or ahead of it even
 *     inside the posted window) means a message was skipped or repeated: 1/2/0x03 "MSN range
 *     not valid", as siw (siw_send_check_ntoh). An out-of-order placing receiver (RFC 5041 §5.3
 *     "MAY perform Placement of DDP Segments out of order") would need the whole window.
 *   - MO: the next segment's MO must equal the octets already received for the message (RFC
 *     5041 §5.3: the Data Source sends segments in increasing MO order; over an in-order LLP
 *     without gaps they are contiguous), else 1/2/0x04 "Invalid MO"; siw requires exactly this.
 *   - Zero-length segments: RFC 5041 §7.1 lists the checks "for non-zero-length Untagged DDP
 *     Segments", but a zero-length Send "MUST consume an Untagged Buffer at the Data Sink"
 *     (RFC 5040 §5.3), so the MSN, buffer and MO checks apply to them too (as siw).
 *   - Check order: MSN (0x03), then a buffer for it (0x02), then MO (0x04), then the length
 *     (0x05): the order in which each check's premise becomes available.
 *   - Message too long: RFC 5041 §7.2 says 1/2/0x05 "DDP Message too long for available
 *     buffer" and that is what we report. Linux siw sends 1/2/0x02 for an over-long Send (with
 *     WC LOC_LEN_ERR; docs/interop-siw.md: siw deviates).
 * After any error the state is unchanged; the caller terminates the stream and "MUST silently
 * drop any subsequent incoming DDP Segments" (RFC 5041 §7.1).
 */
#ifndef IWARP_DDP_DDP_RX_UNTAGGED_H
#define IWARP_DDP_DDP_RX_UNTAGGED_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/wire.h"
#include "wire/wire_ddp.h"

/* One untagged queue's receive state. Fields are private to ddp_rx_untagged.c. */
struct iwarp_ddp_rx_uq {
    uint64_t *lens;     /* ring of posted buffer lengths (caller-owned), cap entries */
    uint32_t cap;       /* ring capacity: the most buffers that can be posted at once */
    uint32_t head;      /* ring index of the oldest posted buffer (the current message's) */
    uint32_t posted;    /* buffers posted and not yet consumed */
    uint32_t msn;       /* MSN of the current (or next) message */
    uint64_t received;  /* octets of the current message accepted so far */
    bool last_received; /* the current message's segment with L set has been accepted */
};

/* Where an accepted segment's payload goes. */
struct iwarp_ddp_rx_place {
    uint64_t offset;  /* octet offset in the current buffer: the segment's MO */
    bool last;        /* L set: this segment completes the message */
    uint64_t msg_len; /* when last: the ULP Message Length, MO + payload (RFC 5041 §5.4) */
};

/*
 * Initialise a queue with no buffer posted and the expected MSN 1 (RFC 5041 §4.3).
 *   q:    the state to initialise.
 *   lens: storage for cap buffer lengths (may be NULL when cap is 0: no buffer can be posted).
 *   cap:  how many buffers may be posted at once (the receive queue depth).
 * Ownership: q keeps lens until it is no longer used; the caller keeps it alive.
 * Returns 0, or IWARP_ERR_INVAL for NULL q, or lens NULL with cap > 0.
 */
int iwarp_ddp_rx_uq_init(struct iwarp_ddp_rx_uq *q, uint64_t *lens, uint32_t cap);

/*
 * Post a receive buffer of len octets at the tail of the queue. It receives the message whose
 * MSN is the expected MSN plus the number of buffers already posted (RFC 5041 §7.1 check 5).
 *   q:   the queue. len: the buffer's length (its SGEs' total).
 * Ownership: nothing is kept.
 * Returns 0, or IWARP_ERR_NOSPC when cap buffers are already posted (IWARP_ERR_INVAL for NULL).
 */
int iwarp_ddp_rx_uq_post(struct iwarp_ddp_rx_uq *q, uint64_t len);

/*
 * Validate one received Untagged DDP Segment (RFC 5041 §7.1) and, if it may be placed, account
 * its payload to the current message (the state then expects the next MO).
 *   q:     the queue the segment's QN selects.
 *   h:     the decoded DDP header (untagged; h->msn, h->mo and h->last are used).
 *   len:   the segment's payload length (after the DDP and RDMAP headers).
 *   place: on success, where the payload goes; may be NULL.
 *   cause: on IWARP_ERR_PROTO, the Terminate cause, Layer 1 (DDP) EType 2 (Untagged Buffer,
 *          RFC 5041 §7.2); may be NULL.
 * Ownership: nothing is kept.
 * Returns 0 (place the payload at place->offset of the current buffer; when place->last,
 * deliver it and then call iwarp_ddp_rx_uq_complete()), or IWARP_ERR_PROTO with cause:
 *   0x03 MSN range not valid  h->msn is not the expected MSN
 *   0x02 no buffer available  the expected MSN, but no buffer posted
 *   0x04 invalid MO           h->mo differs from the octets received for the message
 *   0x05 message too long     h->mo + len exceeds the buffer's length
 * IWARP_ERR_INVAL (no cause) for NULL q or h, or a tagged header; IWARP_ERR_STATE (no cause)
 * when the current message's last segment was accepted and iwarp_ddp_rx_uq_complete() has not
 * been called yet. On any error q is unchanged. Safe on any header a peer can send.
 */
int iwarp_ddp_rx_uq_segment(struct iwarp_ddp_rx_uq *q, const struct iwarp_ddp_hdr *h, uint32_t len,
                            struct iwarp_ddp_rx_place *place, struct iwarp_term_cause *cause);

/*
 * Complete the current message after its last segment was accepted: consume its buffer and
 * expect the next MSN (plus one, wrapping 0xFFFFFFFF to 0, RFC 5041 §4.3) at MO 0.
 *   q: the queue.
 * Ownership: nothing is kept.
 * Returns 0, or IWARP_ERR_STATE when the last segment has not been accepted (IWARP_ERR_INVAL
 * for NULL).
 */
int iwarp_ddp_rx_uq_complete(struct iwarp_ddp_rx_uq *q);

/*
 * Accept a zero-length message that consumes no buffer: the RFC 6581 Send RTR, which belongs
 * to MPA setup and not to the ULP. It must be a whole message at the expected MSN: no message
 * in progress and h->msn expected (RFC 5041 §7.1 check 5, else 0x03 MSN range not valid),
 * MO 0 and L set (check 3, §5.2: a zero-length message is one segment; else 0x04 invalid MO).
 * The expected MSN then moves on (wrapping, RFC 5041 §4.3); the posted buffers are untouched.
 *   q, h:  as for iwarp_ddp_rx_uq_segment(); len: the payload length, which must be 0.
 *   cause: on IWARP_ERR_PROTO, the Terminate cause (1/2/x); may be NULL.
 * Ownership: nothing is kept.
 * Returns 0, IWARP_ERR_PROTO with cause (q unchanged), or IWARP_ERR_INVAL for NULL q or h, a
 * tagged header or a non-zero len.
 */
int iwarp_ddp_rx_uq_skip(struct iwarp_ddp_rx_uq *q, const struct iwarp_ddp_hdr *h, uint32_t len,
                         struct iwarp_term_cause *cause);

/* The MSN the next accepted segment must carry (the current message's). */
static inline uint32_t iwarp_ddp_rx_uq_expected_msn(const struct iwarp_ddp_rx_uq *q)
{
    return q->msn;
}

/* Buffers posted and not yet consumed (the current message's included). */
static inline uint32_t iwarp_ddp_rx_uq_posted(const struct iwarp_ddp_rx_uq *q)
{
    return q->posted;
}

/* Octets of the current message accepted so far: the MO the next segment must carry. */
static inline uint64_t iwarp_ddp_rx_uq_received(const struct iwarp_ddp_rx_uq *q)
{
    return q->received;
}

#endif
