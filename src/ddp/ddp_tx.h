/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP transmit segmentation (RFC 5041 §5.2): cuts one ULP (RDMAP) message into DDP segments no
 * larger than the LLP's maximum segment size, without copying its payload.
 *
 * LLP-agnostic (RFC 5041 §5): the caller passes the bound per segment (MULPDU for MPA,
 * iwarp_mpa_mulpdu(); the SCTP bound for RFC 5043), so a MULPDU change applies from the next
 * segment on (RFC 5041 §5.1 rule 2). Each call produces one segment as a header the caller's
 * buffer holds (DDP header + RDMAP header) and a slice of the caller's gather list (the
 * payload), ready for a vectored send.
 *
 * What stays the caller's: the MSN (one counter per QN, starting at 1, RFC 5041 §4.3), the STag
 * and initial TO of a tagged message (RFC 5041 §5.2), and the RDMAP header contents.
 *
 * Usage:
 *   struct iwarp_ddp_tx_msg m;
 *   iwarp_ddp_tx_init(&m, &(struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND, .msn = 7},
 *                     iov, iovcnt, len);
 *   while ((h = iwarp_ddp_tx_next(&m, mulpdu, hdr, sizeof hdr, pl, 8, &npl)) > 0)
 *       send hdr[0..h) followed by pl[0..npl);
 */
#ifndef IWARP_DDP_DDP_TX_H
#define IWARP_DDP_DDP_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iwarp/common.h"
#include "wire/wire.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

/* The largest DDP segment: the Terminate "DDP Segment Length" that must be able to report any
 * segment is 16 bits (RFC 5040 §4.8). Smaller LLP bounds (MPA's 64768, RFC 5044 §3) are the
 * caller's max_seg. */
#define IWARP_DDP_SEG_MAX 65535u

/* The largest header iwarp_ddp_tx_next() writes: an untagged DDP header plus the longest RDMAP
 * header (a Terminate with every optional part, 52 octets; an Atomic Request is 52 too). */
#define IWARP_DDP_TX_HDR_MAX IWARP_TERM_SEG_MAX_LEN

/* One message being segmented. Fields are private to ddp_tx.c; embed it, init it, call next
 * until it returns 0. */
struct iwarp_ddp_tx_msg {
    struct iwarp_wire_msg wm; /* the message: opcode, stag + initial to, or msn; inv_stag, body */
    const struct iovec *iov;  /* the payload as a gather list (caller-owned) */
    size_t iovcnt;            /* its pieces */
    uint32_t len;             /* payload octets in the message (< 2^32, RFC 5041 §5.2) */
    uint32_t sent;            /* payload octets already handed out in segments */
    size_t cur;               /* index of the piece the next payload octet is in */
    size_t cur_off;           /* offset of that octet in iov[cur] */
    bool done;                /* the segment with L set has been produced */
};

/*
 * Start segmenting one message. Nothing is computed on the payload: len is trusted as the
 * message length and the gather list is only walked by iwarp_ddp_tx_next().
 *   m:      the state to initialise.
 *   wm:     the message. Used: opcode; stag and to (the initial TO) for tagged opcodes; msn for
 *           untagged ones (the caller's per-QN counter, RFC 5041 §4.3); inv_stag; body (the
 *           RDMAP header of Read Request, Terminate, Immediate Data, atomics). Ignored: last
 *           and mo (set per segment).
 *   iov, iovcnt: the payload pieces, in order; zero-length pieces are allowed and skipped.
 *           Their total must be at least len (octets beyond len are not sent). iov may be NULL
 *           when iovcnt is 0.
 *   len:    the payload length.
 * Ownership: m keeps iov (and the memory it points to) until the message is done; nothing is
 * copied. wm is copied.
 * Returns 0; IWARP_ERR_INVAL for an undefined opcode, payload on an opcode that carries none
 * (RFC 5040 Figure 5, RFC 7306 Figure 3), len >= 2^32 (RFC 5041 §5.2), a tagged message whose
 * TO + len wraps 64 bits (the receiver rejects any segment whose does, RFC 5041 §7.1 check 5),
 * or iov NULL with iovcnt > 0.
 */
int iwarp_ddp_tx_init(struct iwarp_ddp_tx_msg *m, const struct iwarp_wire_msg *wm,
                      const struct iovec *iov, size_t iovcnt, size_t len);

/*
 * Produce the next segment of m (RFC 5041 §5.2): its header and the slice of the gather list
 * that is its payload. The payload is at most max_seg minus the header length; its MO
 * (untagged) or TO (tagged: initial TO + MO) is the payload already sent; L is set on the last
 * segment only (RFC 5041 §4.2, §4.3). A zero-length message is exactly one segment (RFC 5041
 * §5.2); opcodes without payload are one segment that must fit max_seg.
 *   max_seg:      the LLP's bound on the whole segment (header + payload) for this segment.
 *   hdr_buf, hdr_cap: where the DDP + RDMAP header is written (IWARP_DDP_TX_HDR_MAX is always
 *                 enough); its contents are unspecified after an error.
 *   payload_out, payload_cap: where the slice is written, as pointers into the caller's
 *                 pieces (split where a segment boundary falls inside one; never empty
 *                 entries). May be NULL when payload_cap is 0.
 *   npayload:     set to the entries written (0 for a segment without payload).
 * Ownership: payload_out[i].iov_base point into the caller's gather list; nothing is kept.
 * Returns the header length (> 0), or 0 when the message is done (npayload then 0). Errors,
 * after which m is unchanged (a later call may succeed with other arguments):
 *   IWARP_ERR_INVAL     max_seg > IWARP_DDP_SEG_MAX; npayload NULL; the gather list holds
 *                       fewer than len octets; an invalid Terminate header (iwarp_term_encode)
 *   IWARP_ERR_FPDU_LEN  max_seg too small for this segment: below its header, or equal to the
 *                       header while payload remains (no progress possible)
 *   IWARP_ERR_NOSPC     hdr_cap below the header, or payload_cap below the slice's entries
 */
iwarp_ssize iwarp_ddp_tx_next(struct iwarp_ddp_tx_msg *m, uint32_t max_seg, uint8_t *hdr_buf,
                              size_t hdr_cap, struct iovec *payload_out, size_t payload_cap,
                              size_t *npayload);

/* Whether the last segment of m has been produced (next would return 0). */
static inline bool iwarp_ddp_tx_done(const struct iwarp_ddp_tx_msg *m)
{
    return m->done;
}

#endif
