/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Access checks for the data path (L2 mem): may this stream touch [TO, TO + len) through this
 * STag with these rights, and where does that memory live. Pure lookups on the STag table; the
 * layer above holds the table's lock across the check and the copy.
 *
 * Checks, in this order (RFC 5041 §7.1 for tagged DDP segments, RFC 5040 §7.2 check 4a-e for an
 * RDMA Read Request's Data Source; RFC 5040 §8.1.1 and RFC 5042 §6 for the security rules):
 *   1. Invalid STag: index not allocated, key mismatch, or STag INVALID (RFC 5040 §2.4).
 *   2. STag not associated with the stream: PD of the STag != PD of the stream (RFC 5041 §8.2,
 *      RFC 5042 §2.2.4), or a type-2 window bound to another QP (RFC 5042 §2.2.5 single-stream
 *      scope, RFC 5040 §8.1.1 #2).
 *   3. Access rights: the STag lacks a required right (RFC 5040 §8.1.1 #5, RFC 5042 §6.3.5).
 *   4. TO wrap: TO + len overflows 64 bits (RFC 5041 §7.1 check 5, RFC 5040 §7.2 check 4e).
 *      Checked before the bounds because a wrapped sum would make the end comparison
 *      meaningless; a wrapping segment is always also out of bounds (no region ends past
 *      2^64 - 1) and the more specific code is reported.
 *   5. Base or bounds: TO < base, or TO + len > base + length (RFC 5041 §7.1 checks 3-4,
 *      RFC 5040 §7.2 checks 4c-4d; RFC 5042 §6.2.1, §6.3.1).
 * A zero-length access passes without any check: RFC 5041 §5.2 "The STag and TO fields MUST NOT
 * be checked for a zero-length Tagged DDP Message"; RFC 5040 §5.2.1: for a zero-length Read
 * Request the Data Source "MUST NOT validate the Data Source STag and Data Source Tagged Offset".
 *
 * Which Terminate cause (RFC 5040 §4.8 Figures 9-10, §7.1; RFC 5041 §7.2):
 *  - IWARP_MEM_CAUSE_DDP, for placing a tagged segment (RDMA Write, RDMA Read Response): the
 *    DDP layer validates it before Placement (RFC 5041 §7.1) and reports DDP errors, which
 *    Figure 10 allows for any message: Layer 1 EType 1 - 0x00 Invalid STag, 0x01 Base or bounds,
 *    0x02 STag not associated with DDP Stream, 0x03 TO wrap. RFC 5041 has no access-rights code
 *    (its check 2, "an associated buffer that allows Placement", fails): 0x00 Invalid STag, the
 *    STag is not a valid target, as Linux siw does (siw_tagged_error). RDMAP Remote Protection
 *    cannot be used here: Figure 10 limits it to Read Request and Send with Invalidate.
 *  - IWARP_MEM_CAUSE_RDMAP, for the Data Source of an RDMA Read Request: RDMAP validates it
 *    (RFC 5040 §5.2.1, §7.2 check 4) and Figure 10 maps this to Remote Protection: Layer 0
 *    EType 1 - 0x00 Invalid STag, 0x01 Base or bounds, 0x02 Access rights, 0x03 STag not
 *    associated with RDMAP Stream, 0x04 TO wrap. (Terminate with D and R set, §7.1 case 3.)
 *
 * Which right (IWARP_MEM_ACCESS_*; several may be required at once):
 *  - RDMA Write placement: REMOTE_WRITE.
 *  - RDMA Read Request Data Source: REMOTE_READ.
 *  - RDMA Read Response placement into the local sink, and receive buffers: LOCAL_WRITE (the
 *    Linux siw rule; hardware RNICs also want REMOTE_WRITE on a Read sink, api-conventions.md
 *    §2, which the verbs layer may require on top).
 *  - RFC 7306 atomics: REMOTE_ATOMIC.
 * Windows carry remote rights only, so a LOCAL_WRITE access through a window STag fails.
 */
#ifndef IWARP_MEM_MEM_ACCESS_H
#define IWARP_MEM_MEM_ACCESS_H

#include <stdint.h>

#include "mem/mem_stag.h"
#include "wire/wire.h"

/* Terminate cause flavour: see the top of this file. */
enum iwarp_mem_cause {
    IWARP_MEM_CAUSE_DDP = 0,   /* 1/1/x: tagged placement (Write, Read Response) */
    IWARP_MEM_CAUSE_RDMAP = 1, /* 0/1/x: Read Request Data Source */
};

/* One access by the data path. */
struct iwarp_mem_req {
    uint32_t stag; /* from the wire (tagged header, or Read Request source STag) */
    uint64_t to;   /* Tagged Offset of the first byte */
    uint64_t len;  /* bytes (0: no check) */
    uint32_t need; /* required IWARP_MEM_ACCESS_* rights (all of them) */
    uint32_t pd;   /* PD of the stream (QP) it arrived on */
    uint32_t qp;   /* that QP, for type-2 windows */
};

/*
 * Check one tagged access and translate its TO to a local address.
 * t: the table. r: the access. flavour: which Terminate cause family to report.
 * local_addr: on success, the local address of the byte at r->to (0 for a zero-length access);
 * may be NULL. cause: on failure, the Terminate cause (layer/etype/ecode); may be NULL.
 * Returns 0, or IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_MEM_ACCESS,
 * IWARP_ERR_MEM_TO_WRAP, IWARP_ERR_MEM_BOUNDS (IWARP_ERR_INVAL for NULL t or r, no cause).
 * Safe on any STag/TO/len a peer can send.
 */
int iwarp_mem_check_tagged(const struct iwarp_mem_table *t, const struct iwarp_mem_req *r,
                           enum iwarp_mem_cause flavour, uint64_t *local_addr,
                           struct iwarp_term_cause *cause);

/*
 * Check a local SGE (lkey, addr, length) of a work request or receive buffer: the lkey must be
 * a VALID MR (windows are not lkeys) in the QP's PD, with the rights in need (0 for a source:
 * local read is always allowed; IWARP_MEM_ACCESS_LOCAL_WRITE for a sink), and [addr, addr +
 * len) inside it. A zero-length SGE passes. local_addr as for iwarp_mem_check_tagged.
 * Returns 0, IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_MEM_ACCESS,
 * IWARP_ERR_MEM_TO_WRAP or IWARP_ERR_MEM_BOUNDS (the verbs layer reports LOC_PROT_ERR).
 */
int iwarp_mem_check_local(const struct iwarp_mem_table *t, uint32_t lkey, uint64_t addr,
                          uint64_t len, uint32_t need, uint32_t pd, uint64_t *local_addr);

#endif
