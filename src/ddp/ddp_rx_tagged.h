/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP receive-side Placement of Tagged DDP Segments (RFC 5041 §5.1, §7.1): the access checks
 * on the Data Sink STag/TO that say where a segment's payload goes, and the match of a tagged
 * segment against the one buffer its message was solicited for (an RDMA Read Response against
 * its RDMA Read Request's Data Sink, RFC 5040 §5.2.2).
 *
 * Pure and stateless: the caller keeps per-message state (octets received so far), places the
 * payload itself (straight from the socket) once the checks passed, and holds the STag table's
 * lock across the check and the placement (RFC 5041 §7.1: DDP "MUST NOT place" a segment that
 * fails the checks).
 */
#ifndef IWARP_DDP_DDP_RX_TAGGED_H
#define IWARP_DDP_DDP_RX_TAGGED_H

#include <stddef.h>
#include <stdint.h>

#include "mem/mem_access.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"

/*
 * Check one tagged access (RFC 5041 §7.1 checks 1-5 through iwarp_mem_check_tagged() with
 * DDP causes, Layer 1 EType 1) and say where its payload goes: the caller receives the payload
 * straight into that memory (zero-copy placement), after this check and never before, so a
 * segment that fails it places nothing (RFC 5041 §7.1: DDP "MUST NOT place" it).
 *   t:      the STag table.
 *   r:      the access: Data Sink STag, TO of the first payload octet, r->len, the rights the
 *           placement needs (REMOTE_WRITE for an RDMA Write, LOCAL_WRITE for a Read Response
 *           into the local sink), the stream's PD and QP.
 *   addr:   on success, the local address of the octet at r->to (0 when r->len is 0: a
 *           zero-length segment is neither checked nor placed, RFC 5041 §5.2); the r->len
 *           octets from there are inside the buffer the STag names.
 *   cause:  on a failed check, the Terminate cause (1/1/0x00..0x03); may be NULL.
 * Ownership: nothing is kept; addr is valid while the STag stays registered.
 * Returns 0, the mem error of the failed check (IWARP_ERR_STAG_INVALID, _STAG_NOT_ASSOC,
 * _MEM_ACCESS, _MEM_TO_WRAP, _MEM_BOUNDS), or IWARP_ERR_INVAL for NULL t, r or addr.
 */
int iwarp_ddp_rx_tagged_target(const struct iwarp_mem_table *t, const struct iwarp_mem_req *r,
                               uint64_t *addr, struct iwarp_term_cause *cause);

/* The one Tagged Buffer a tagged message was solicited for (an RDMA Read's Data Sink) and the
 * octets of that message accepted so far. */
struct iwarp_ddp_rx_sink {
    uint32_t stag;     /* the Data Sink STag the request named */
    uint64_t to;       /* the Data Sink TO of its first octet */
    uint32_t len;      /* the message size the request asked for */
    uint32_t received; /* payload octets of the message accepted so far */
};

/*
 * Check that a tagged segment belongs inside the solicited sink (RFC 5040 §5.2.2: the Data
 * Sink "MAY validate that the STag, Tagged Offset, and length of the RDMA Read Response
 * Message are the same as ... in the corresponding RDMA Read Request Message"; libiwarp does,
 * as Linux siw). RFC 5040/5041 have no code for "not the buffer this message was for"; the
 * closest DDP Tagged Buffer codes (RFC 5041 §7.2) are used, as siw (siw_rresp_check_ntoh):
 *   - a non-zero-length segment whose STag differs from the sink's: 1/1/0x00 Invalid STag (for
 *     this message the STag names no buffer it may be placed in);
 *   - TO + len wraps 64 bits: 1/1/0x03 TO wrap (RFC 5041 §7.1 check 5);
 *   - [TO, TO + len) not inside [sink TO, sink TO + sink len): 1/1/0x01 Base or bounds
 *     (RFC 5041 §7.1 checks 3-4, the sink being the bounds);
 *   - more octets than the sink's length, or on the segment with L a total other than the
 *     sink's length: 1/1/0x01 Base or bounds (the message does not fill exactly its buffer).
 * A zero-length segment's STag and TO are not checked (RFC 5041 §5.2); the length rules apply.
 *   s:     the sink and the octets received before this segment (not updated here).
 *   h:     the decoded tagged DDP header (h->stag, h->to, h->last are used).
 *   len:   the segment's payload length.
 *   cause: on error, the Terminate cause; may be NULL.
 * Ownership: nothing is kept.
 * Returns 0, IWARP_ERR_READ_RESP with the cause above, or IWARP_ERR_INVAL (no cause) for NULL
 * s or h. Safe on any header a peer can send.
 */
int iwarp_ddp_rx_sink_check(const struct iwarp_ddp_rx_sink *s, const struct iwarp_ddp_hdr *h,
                            uint32_t len, struct iwarp_term_cause *cause);

#endif
