/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One whole DDP segment carrying RDMAP (what MPA delivers as one ULPDU, or one SCTP message):
 * decode + stateless validation with the exact Terminate cause, and encoders that build any
 * RDMAP message's DDP header + RDMAP header in one call.
 *
 * Stateless checks only: what needs stream state (expected MSN, MO continuity, STag and buffer
 * checks, DV constant on the stream) belongs to the DDP and RDMAP layers.
 */
#ifndef IWARP_WIRE_WIRE_SEGMENT_H
#define IWARP_WIRE_WIRE_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"
#include "wire/wire_rdmap.h"
#include "wire/wire_term.h"

/* The RDMAP header after the DDP header; which member is valid depends on the opcode
 * (Write, Read Response and the Sends have none). */
union iwarp_wire_body {
    struct iwarp_rdmap_read_req read_req;       /* IWARP_RDMAP_OP_READ_REQ */
    struct iwarp_term term;                     /* IWARP_RDMAP_OP_TERMINATE */
    struct iwarp_rdmap_imm imm;                 /* IWARP_RDMAP_OP_IMM_DATA, _IMM_DATA_SE */
    struct iwarp_rdmap_atomic_req atomic_req;   /* IWARP_RDMAP_OP_ATOMIC_REQ */
    struct iwarp_rdmap_atomic_resp atomic_resp; /* IWARP_RDMAP_OP_ATOMIC_RESP */
};

/* Reserved fields found non-zero. Never an error (the RFCs say "not checked"/"ignored on
 * receive"); exposed so a dump tool can warn. */
enum iwarp_wire_rsvd {
    IWARP_WIRE_RSVD_DDP = 1u << 0,      /* DDP Control Rsvd (RFC 5041 §4.1) */
    IWARP_WIRE_RSVD_RDMAP = 1u << 1,    /* RDMAP Control Rsv (RFC 5040 §4.1) */
    IWARP_WIRE_RSVD_INV_STAG = 1u << 2, /* octets 2..5 of an untagged message other than a
                                           Send with Invalidate (RFC 5040 §4.1, RFC 7306 §4.1) */
    IWARP_WIRE_RSVD_TERM = 1u << 3,     /* Terminate Reserved (RFC 5040 §4.8; set by siw's
                                           bit-reversed layout, see iwarp_term.siw_swapped) */
    IWARP_WIRE_RSVD_ATOMIC = 1u << 4,   /* Atomic Request Reserved (RFC 7306 §5.2.1) */
};

/* A decoded, validated segment. */
struct iwarp_wire_segment {
    struct iwarp_ddp_hdr ddp;            /* the DDP header as received */
    size_t hdr_len;                      /* 14 (tagged) or 18 (untagged) */
    uint8_t opcode;                      /* RDMAP OpCode, 0x0..0xB */
    const struct iwarp_rdmap_opinfo *op; /* its properties (static table) */
    uint32_t inv_stag;                   /* Invalidate STag, for Send with Invalidate (SE) */
    union iwarp_wire_body body;          /* the RDMAP header, by opcode */
    size_t body_len;                     /* its length: 0, 28, 4..52, 8, 52 or 12 */
    const uint8_t *payload;              /* ULP payload (opcodes with op->payload) */
    size_t payload_len;                  /* 0 when none (payload then points past the end) */
    unsigned rsvd_set;                   /* enum iwarp_wire_rsvd bits */
};

/*
 * Decode and validate one DDP segment. The checks, in order (the first failure is reported;
 * Linux siw also checks the DDP version, then the RDMAP version, then the opcode):
 *   1. the segment holds its DDP header (14/18 octets by T)  -> DDP_HDR_LEN   1/0/0x00
 *   2. DV == 1 (RFC 5041 §4.1)                                -> DDP_VERSION   1/1/0x04 tagged,
 *                                                                               1/2/0x06 untagged
 *   3. RV == 1 (RFC 5040 §4.1, §7.2)                          -> RDMAP_VERSION 0/2/0x05
 *   4. OpCode defined: 0x0..0xB (RFC 5040 Figure 4, RFC 7306 Figure 2)
 *                                                             -> RDMAP_OPCODE  0/2/0x06
 *   5. T flag as the opcode requires (RFC 5040 §4.1)         -> RDMAP_TAGGED  0/2/0x06
 *   6. untagged: QN as the opcode requires (RFC 5040 Figure 4, RFC 7306 §10.2; RFC 5041 §7.1)
 *                                                             -> DDP_QN        1/2/0x01
 *   7. single-segment opcodes (Read Request, Terminate, Immediate Data, atomics): L set
 *                                                             -> RDMAP_LAST    0/2/0xFF
 *      and MO 0 (RFC 5041 §4.3)                               -> DDP_MO        1/2/0x04
 *   8. RDMAP header of exactly its length and no payload where the opcode carries none
 *      (Read Request 28, Terminate per its M/D/R, Immediate Data 8, Atomic Request 52, Atomic
 *      Response 12; RFC 5040 §4.2 Figure 5, RFC 7306 §4.2, §6.3)  -> RDMAP_LEN 0/2/0xFF
 * Reserved bits are not checked (RFC 5041 §4.1, RFC 5040 §4.1): see out->rsvd_set.
 *   seg, len: the segment from its DDP Control octet (seg may be NULL when len is 0).
 *   out:      filled on success (partly filled on error).
 *   cause:    when not NULL, set on error to the Terminate cause listed above; untouched on
 *             success.
 * Ownership: out->payload and out->body.term.ddp_hdr point into seg.
 * Returns 0, or the negative IWARP_ERR_* listed above.
 */
int iwarp_wire_segment_decode(const uint8_t *seg, size_t len, struct iwarp_wire_segment *out,
                              struct iwarp_term_cause *cause);

/* What a sender chooses for one segment; the rest (T, QN, DV, RV, reserved bits) follows from
 * the opcode. Build one with a designated initializer, e.g.
 *   (struct iwarp_wire_msg){.opcode = IWARP_RDMAP_OP_SEND, .last = true, .msn = 1}. */
struct iwarp_wire_msg {
    uint8_t opcode;    /* 0x0..0xB */
    bool last;         /* L; always set for single-segment opcodes */
    uint32_t stag;     /* tagged (Write, Read Response): Data Sink STag */
    uint64_t to;       /* tagged: this segment's Tagged Offset */
    uint32_t msn;      /* untagged: Message Sequence Number */
    uint32_t mo;       /* untagged: Message Offset (must be 0 for single-segment opcodes) */
    uint32_t inv_stag; /* Send with Invalidate (SE): the STag to invalidate; else ignored */
    union iwarp_wire_body body; /* the RDMAP header, by opcode (Terminate: body.term) */
};

/*
 * Encode the DDP header and the RDMAP header of one segment: header + body, without payload.
 *   buf, cap: output space.  m: the segment.
 * Ownership: nothing is kept.
 * Returns the octets written (what precedes the payload); IWARP_ERR_INVAL for an opcode outside
 * 0x0..0xB, a non-zero MO on a single-segment opcode, or an invalid Terminate header
 * (iwarp_term_encode()); IWARP_ERR_NOSPC when cap is too small.
 */
iwarp_ssize iwarp_wire_segment_encode_hdr(uint8_t *buf, size_t cap, const struct iwarp_wire_msg *m);

/*
 * Encode one whole segment: header, body and payload_len octets of payload.
 *   payload: may be NULL when payload_len is 0.
 * Ownership: nothing is kept (the payload is copied).
 * Returns the segment length (its MPA ULPDU_Length); the errors of
 * iwarp_wire_segment_encode_hdr(), and IWARP_ERR_INVAL for payload on an opcode that carries
 * none.
 */
iwarp_ssize iwarp_wire_segment_encode(uint8_t *buf, size_t cap, const struct iwarp_wire_msg *m,
                                      const uint8_t *payload, size_t payload_len);

/*
 * The message fields of a decoded segment, so that encoding them rebuilds it (reserved bits
 * aside, and a siw-layout Terminate in the RFC layout).
 * Ownership: m->body.term.ddp_hdr, if set, points into the segment s was decoded from.
 */
void iwarp_wire_msg_from_segment(struct iwarp_wire_msg *m, const struct iwarp_wire_segment *s);

#endif
