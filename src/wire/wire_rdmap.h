/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDMAP (RFC 5040 §4, RFC 7306 §4-§6) on the wire: the RDMAP Control octet, the per-opcode
 * table, and the fixed RDMAP headers that follow the DDP header: RDMA Read Request (28 B),
 * Atomic Request (52 B), Atomic Response (12 B), Immediate Data (8 B). The Terminate header is
 * in wire_term.h.
 *
 * Pure codecs: decoders return the octets consumed or IWARP_ERR_SHORT, encoders the octets
 * written or IWARP_ERR_NOSPC. They check lengths only; what a value means is the caller's.
 */
#ifndef IWARP_WIRE_WIRE_RDMAP_H
#define IWARP_WIRE_WIRE_RDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "wire/wire.h"

/* Opcodes 0x0..0xB are defined (RFC 5040 Figure 4, RFC 7306 Figure 2); 0xC..0xF are not. */
#define IWARP_RDMAP_OP_COUNT 12u

/* ---- RDMAP Control octet (RFC 5040 §4.1 Figure 3: RV(2) Rsv(2) Opcode(4)) ---- */

/* The RDMAP Control octet libiwarp sends for opcode: RV 1, Rsv 0 (RFC 5040 §4.1). */
static inline uint8_t iwarp_rdmap_ctrl(unsigned opcode)
{
    return (uint8_t)(IWARP_RDMAP_VERSION << 6 | (opcode & IWARP_RDMAP_MASK_OPCODE));
}

/* The RDMA Version (RV) of an RDMAP Control octet, 0..3. */
static inline unsigned iwarp_rdmap_ctrl_rv(uint8_t ctrl)
{
    return (ctrl & IWARP_RDMAP_MASK_RV) >> 6;
}

/* The two reserved (Rsv) bits of an RDMAP Control octet, 0..3: zero on send, ignored on receive. */
static inline unsigned iwarp_rdmap_ctrl_rsv(uint8_t ctrl)
{
    return (ctrl & IWARP_RDMAP_MASK_RSV) >> 4;
}

/* The OpCode of an RDMAP Control octet, 0..15. */
static inline unsigned iwarp_rdmap_ctrl_opcode(uint8_t ctrl)
{
    return ctrl & IWARP_RDMAP_MASK_OPCODE;
}

/* ---- Per-opcode properties ---- */
struct iwarp_rdmap_opinfo {
    const char *name;    /* RFC name, e.g. "Send with SE and Invalidate" */
    const char *rfc;     /* defining section, e.g. "RFC 5040 §4.7" */
    bool tagged;         /* DDP T flag (RFC 5040 Figure 4, RFC 7306 Figure 2) */
    uint8_t qn;          /* DDP Queue Number when untagged */
    uint8_t body_len;    /* RDMAP header after the DDP header: fixed length, or the minimum */
    bool body_variable;  /* the RDMAP header length depends on its contents (Terminate) */
    bool payload;        /* carries ULP payload (RFC 5040 Figure 5, RFC 7306 Figure 3) */
    bool single_segment; /* RDMAP header and no payload: always one segment with L=1, MO=0 */
    bool inv_stag;       /* RsvdULP[8:39] carries the Invalidate STag (RFC 5040 §4.1) */
};

/*
 * The properties of an RDMAP opcode.
 *   opcode: 0..15.
 * Ownership: the result points into a static table.
 * Returns NULL for an opcode that RFC 5040 and RFC 7306 do not define (0xC..0xF and larger).
 */
const struct iwarp_rdmap_opinfo *iwarp_rdmap_opinfo(unsigned opcode);

/* ---- RDMA Read Request header (RFC 5040 §4.4 Figure 6), 28 octets ---- */
struct iwarp_rdmap_read_req {
    uint32_t sink_stag; /* Data Sink STag */
    uint64_t sink_to;   /* Data Sink Tagged Offset */
    uint32_t size;      /* RDMA Read Message Size (RDMARDSZ) */
    uint32_t src_stag;  /* Data Source STag */
    uint64_t src_to;    /* Data Source Tagged Offset */
};

/*
 * Decode a 28-octet RDMA Read Request header.
 *   p, len: the bytes right after the DDP header.  out: filled on success.
 * Ownership: nothing is kept.
 * Returns 28, or IWARP_ERR_SHORT when len < 28.
 */
iwarp_ssize iwarp_rdmap_read_req_decode(const uint8_t *p, size_t len,
                                        struct iwarp_rdmap_read_req *out);

/*
 * Encode a 28-octet RDMA Read Request header.
 * Ownership: nothing is kept.
 * Returns 28, or IWARP_ERR_NOSPC when cap < 28.
 */
iwarp_ssize iwarp_rdmap_read_req_encode(uint8_t *buf, size_t cap,
                                        const struct iwarp_rdmap_read_req *in);

/* ---- Atomic Operation Request header (RFC 7306 §5.2.1 Figure 4), 52 octets ---- */
struct iwarp_rdmap_atomic_req {
    uint32_t rsvd;          /* the 28 reserved bits as received (zero on send) */
    uint8_t aopcode;        /* AOpCode, 0..15: enum iwarp_atomic_opcode */
    uint32_t req_id;        /* Request Identifier */
    uint32_t stag;          /* Remote STag */
    uint64_t to;            /* Remote Tagged Offset */
    uint64_t add_swap;      /* Add or Swap Data */
    uint64_t add_swap_mask; /* Add or Swap Mask */
    uint64_t compare;       /* Compare Data */
    uint64_t compare_mask;  /* Compare Mask */
};

/*
 * Decode a 52-octet Atomic Request header.
 * Ownership: nothing is kept.
 * Returns 52, or IWARP_ERR_SHORT when len < 52.
 */
iwarp_ssize iwarp_rdmap_atomic_req_decode(const uint8_t *p, size_t len,
                                          struct iwarp_rdmap_atomic_req *out);

/*
 * Encode a 52-octet Atomic Request header; the 28 reserved bits are written as zero (RFC 7306
 * §5.2.1) whatever in->rsvd says.
 * Ownership: nothing is kept.
 * Returns 52, IWARP_ERR_NOSPC when cap < 52, IWARP_ERR_INVAL when in->aopcode > 15.
 */
iwarp_ssize iwarp_rdmap_atomic_req_encode(uint8_t *buf, size_t cap,
                                          const struct iwarp_rdmap_atomic_req *in);

/* ---- Atomic Operation Response header (RFC 7306 §5.2.2 Figure 6), 12 octets ---- */
struct iwarp_rdmap_atomic_resp {
    uint32_t req_id;     /* Original Request Identifier */
    uint64_t orig_value; /* Original Remote Data Value */
};

/*
 * Decode a 12-octet Atomic Response header.
 * Ownership: nothing is kept.
 * Returns 12, or IWARP_ERR_SHORT when len < 12.
 */
iwarp_ssize iwarp_rdmap_atomic_resp_decode(const uint8_t *p, size_t len,
                                           struct iwarp_rdmap_atomic_resp *out);

/*
 * Encode a 12-octet Atomic Response header.
 * Ownership: nothing is kept.
 * Returns 12, or IWARP_ERR_NOSPC when cap < 12.
 */
iwarp_ssize iwarp_rdmap_atomic_resp_encode(uint8_t *buf, size_t cap,
                                           const struct iwarp_rdmap_atomic_resp *in);

/* ---- Immediate Data header (RFC 7306 §6.2 Figure 7), 8 octets ---- */
struct iwarp_rdmap_imm {
    uint8_t data[IWARP_RDMAP_IMM_DATA_LEN]; /* opaque ULP octets, in wire order */
};

/*
 * Decode the 8 octets of Immediate Data.
 * Ownership: nothing is kept (the octets are copied).
 * Returns 8, or IWARP_ERR_SHORT when len < 8.
 */
iwarp_ssize iwarp_rdmap_imm_decode(const uint8_t *p, size_t len, struct iwarp_rdmap_imm *out);

/*
 * Encode the 8 octets of Immediate Data.
 * Ownership: nothing is kept.
 * Returns 8, or IWARP_ERR_NOSPC when cap < 8.
 */
iwarp_ssize iwarp_rdmap_imm_encode(uint8_t *buf, size_t cap, const struct iwarp_rdmap_imm *in);

#endif
