/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire constants of RDMAP (RFC 5040), DDP (RFC 5041), MPA (RFC 5044), DDP over SCTP (RFC 5043),
 * enhanced connection establishment (RFC 6581), the IANA registries (RFC 6580) and the RDMAP
 * extensions (RFC 7306). Names follow the RFCs. Offsets count from the first octet of the DDP
 * segment (right after MPA's ULPDU_Length), as RFC 5040 §4 and RFC 5041 §4 lay them out.
 */
#ifndef IWARP_WIRE_WIRE_H
#define IWARP_WIRE_WIRE_H

#include <stdint.h>

/* ---- DDP (RFC 5041 §4) ---- */
/* Byte 0 of every DDP segment: T(1) L(1) Rsvd(4) DV(2). */
#define IWARP_DDP_FLAG_TAGGED 0x80u
#define IWARP_DDP_FLAG_LAST   0x40u
#define IWARP_DDP_MASK_RSVD   0x3Cu /* zero on send, not checked on receive (RFC 5041 §4.1) */
#define IWARP_DDP_MASK_DV     0x03u
#define IWARP_DDP_VERSION     1u /* RFC 5041 §4.1: DV MUST be 1 */

#define IWARP_DDP_TAGGED_HDR_LEN   14u /* ctrl, RsvdULP(8), STag(32), TO(64) */
#define IWARP_DDP_UNTAGGED_HDR_LEN 18u /* ctrl, RsvdULP(40), QN(32), MSN(32), MO(32) */

/* Untagged queue numbers used by RDMAP (RFC 5040 §4.1 Figure 4; RFC 7306 §10.2). */
#define IWARP_QN_SEND       0u
#define IWARP_QN_READ_REQ   1u /* also Atomic Request */
#define IWARP_QN_TERMINATE  2u
#define IWARP_QN_ATOMIC_RSP 3u

#define IWARP_DDP_MSN_INIT 1u /* RFC 5041 §4.3: "The initial value for MSN MUST be one" */

/* ---- RDMAP (RFC 5040 §4) ---- */
/* Byte 1 (the RsvdULP octet DDP carries for RDMAP): RV(2) Rsv(2) Opcode(4). */
#define IWARP_RDMAP_MASK_RV     0xC0u
#define IWARP_RDMAP_MASK_RSV    0x30u /* zero on send, ignored on receive (RFC 5040 §4.1) */
#define IWARP_RDMAP_MASK_OPCODE 0x0Fu
#define IWARP_RDMAP_VERSION     1u /* RFC 5040 §4.1: RV 01b (IETF) */

enum iwarp_rdmap_opcode {
    IWARP_RDMAP_OP_WRITE = 0x0,        /* RFC 5040 §4.3 */
    IWARP_RDMAP_OP_READ_REQ = 0x1,     /* RFC 5040 §4.4 */
    IWARP_RDMAP_OP_READ_RESP = 0x2,    /* RFC 5040 §4.5 */
    IWARP_RDMAP_OP_SEND = 0x3,         /* RFC 5040 §4.6 */
    IWARP_RDMAP_OP_SEND_INV = 0x4,     /* RFC 5040 §4.7 */
    IWARP_RDMAP_OP_SEND_SE = 0x5,      /* RFC 5040 §4.6 */
    IWARP_RDMAP_OP_SEND_SE_INV = 0x6,  /* RFC 5040 §4.7 */
    IWARP_RDMAP_OP_TERMINATE = 0x7,    /* RFC 5040 §4.8 */
    IWARP_RDMAP_OP_IMM_DATA = 0x8,     /* RFC 7306 §6.2 */
    IWARP_RDMAP_OP_IMM_DATA_SE = 0x9,  /* RFC 7306 §6.2 */
    IWARP_RDMAP_OP_ATOMIC_REQ = 0xA,   /* RFC 7306 §5.2.1 */
    IWARP_RDMAP_OP_ATOMIC_RESP = 0xB,  /* RFC 7306 §5.2.2 */
    IWARP_RDMAP_OP_EXPERIMENTAL = 0xF, /* RFC 6580 §3.4: reserved for experimental use */
};

/* RFC 5040 §4.4: sink STag, sink TO, size, source STag, source TO */
#define IWARP_RDMAP_READ_REQ_LEN    28u
#define IWARP_RDMAP_TERM_HDR_LEN    4u  /* RFC 5040 §4.8: Layer/EType/Code + HdrCt + reserved */
#define IWARP_RDMAP_TERM_SEGLEN_LEN 2u  /* DDP Segment Length, present when D=1 */
#define IWARP_RDMAP_IMM_DATA_LEN    8u  /* RFC 7306 §6.2: exactly 8 octets */
#define IWARP_RDMAP_ATOMIC_REQ_LEN  52u /* RFC 7306 §5.2.1 */
/* RFC 7306 §5.2.2 (Figure 6; the "32 bytes" of the prose is wrong) */
#define IWARP_RDMAP_ATOMIC_RESP_LEN 12u

/* Terminate header-control bits (octet 20 of the segment; RFC 5040 §4.8). */
#define IWARP_TERM_FLAG_M 0x80u /* DDP Segment Length valid */
#define IWARP_TERM_FLAG_D 0x40u /* DDP Segment Length and terminated DDP header present */
#define IWARP_TERM_FLAG_R 0x20u /* terminated RDMA Read Request header present */

/* RFC 7306 §5.2.1 / §10.1 atomic operation codes. */
enum iwarp_atomic_opcode {
    IWARP_ATOMIC_FETCH_ADD = 0x0,
    IWARP_ATOMIC_CMP_SWAP = 0x2,
};

/* ---- Terminate causes (RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8) ---- */
enum iwarp_term_layer {
    IWARP_TERM_LAYER_RDMAP = 0x0,
    IWARP_TERM_LAYER_DDP = 0x1,
    IWARP_TERM_LAYER_LLP = 0x2,
};

/* RDMAP error types (RFC 5040 §4.8). */
enum iwarp_term_rdmap_etype {
    IWARP_TERM_RDMAP_ETYPE_CATASTROPHIC = 0x0,
    IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT = 0x1,
    IWARP_TERM_RDMAP_ETYPE_REMOTE_OP = 0x2,
};

/* RDMAP error codes (RFC 5040 §4.8). Remote Protection uses 0x00-0x04, 0x09, 0xFF; Remote
 * Operation uses 0x05-0x09, 0xFF. Local Catastrophic defines none (siw sends 0xFF). */
enum iwarp_term_rdmap_ecode {
    IWARP_TERM_RDMAP_INVALID_STAG = 0x00,
    IWARP_TERM_RDMAP_BASE_BOUNDS = 0x01,
    IWARP_TERM_RDMAP_ACCESS = 0x02,
    IWARP_TERM_RDMAP_STAG_NOT_ASSOC = 0x03,
    IWARP_TERM_RDMAP_TO_WRAP = 0x04,
    IWARP_TERM_RDMAP_VERSION = 0x05,
    IWARP_TERM_RDMAP_OPCODE = 0x06,
    IWARP_TERM_RDMAP_CATASTROPHIC_STREAM = 0x07,
    IWARP_TERM_RDMAP_CATASTROPHIC_GLOBAL = 0x08,
    IWARP_TERM_RDMAP_CANT_INVALIDATE = 0x09,
    IWARP_TERM_RDMAP_UNSPECIFIED = 0xFF,
};

/* DDP error types (RFC 5041 §7.2). EType 3 is reserved for the LLP. */
enum iwarp_term_ddp_etype {
    IWARP_TERM_DDP_ETYPE_CATASTROPHIC = 0x0,
    IWARP_TERM_DDP_ETYPE_TAGGED = 0x1,
    IWARP_TERM_DDP_ETYPE_UNTAGGED = 0x2,
    IWARP_TERM_DDP_ETYPE_RSVD_LLP = 0x3,
};

/* DDP tagged buffer error codes (RFC 5041 §7.2, EType 1). */
enum iwarp_term_ddp_tagged_ecode {
    IWARP_TERM_DDP_T_INVALID_STAG = 0x00,
    IWARP_TERM_DDP_T_BASE_BOUNDS = 0x01,
    IWARP_TERM_DDP_T_STAG_NOT_ASSOC = 0x02,
    IWARP_TERM_DDP_T_TO_WRAP = 0x03,
    IWARP_TERM_DDP_T_VERSION = 0x04,
};

/* DDP untagged buffer error codes (RFC 5041 §7.2, EType 2). */
enum iwarp_term_ddp_untagged_ecode {
    IWARP_TERM_DDP_U_INVALID_QN = 0x01,
    IWARP_TERM_DDP_U_NO_BUFFER = 0x02,
    IWARP_TERM_DDP_U_MSN_RANGE = 0x03,
    IWARP_TERM_DDP_U_INVALID_MO = 0x04,
    IWARP_TERM_DDP_U_TOO_LONG = 0x05,
    IWARP_TERM_DDP_U_VERSION = 0x06,
};

/* LLP error type for MPA (EType 0) and its codes (RFC 5044 §8; RFC 6581 §8 adds 0x05-0x07). */
#define IWARP_TERM_LLP_ETYPE_MPA 0x0u
enum iwarp_term_mpa_ecode {
    IWARP_TERM_MPA_TCP_CLOSED = 0x01,
    IWARP_TERM_MPA_CRC = 0x02,
    IWARP_TERM_MPA_MARKER = 0x03,
    IWARP_TERM_MPA_BAD_FRAME = 0x04,
    IWARP_TERM_MPA_CATASTROPHIC = 0x05,
    IWARP_TERM_MPA_IRD = 0x06,
    IWARP_TERM_MPA_NO_RTR = 0x07,
};

/* ---- MPA (RFC 5044 §4, §7; RFC 6581) ---- */
#define IWARP_MPA_KEY_LEN         16u
#define IWARP_MPA_KEY_REQ         "MPA ID Req Frame"
#define IWARP_MPA_KEY_REP         "MPA ID Rep Frame"
#define IWARP_MPA_HDR_LEN         20u   /* key(16) flags(1) rev(1) PD_Length(2) */
#define IWARP_MPA_PD_MAX          512u  /* RFC 5044 §7.1.1 */
#define IWARP_MPA_PD_MAX_LINUX    256u  /* Linux iWCM / siw MPA_MAX_PRIVDATA */
#define IWARP_MPA_FLAG_M          0x80u /* markers wanted by the sender of this frame */
#define IWARP_MPA_FLAG_C          0x40u /* CRC */
#define IWARP_MPA_FLAG_R          0x20u /* reject (Reply only) */
#define IWARP_MPA_FLAG_S          0x10u /* RFC 6581 enhanced establishment (Rev 2) */
#define IWARP_MPA_FLAG_RES        0x0Fu /* zero on send, not checked on receive */
#define IWARP_MPA_REV1            1u
#define IWARP_MPA_REV2            2u
#define IWARP_MPA_IRD_ORD_LEN     4u      /* RFC 6581 §9 word at the start of private data */
#define IWARP_MPA_V2_PEER2PEER    0x8000u /* A, IRD half-word */
#define IWARP_MPA_V2_RTR_SEND     0x4000u /* B, IRD half-word: zero-length Send RTR */
#define IWARP_MPA_V2_RTR_WRITE    0x8000u /* C, ORD half-word: zero-length Write RTR */
#define IWARP_MPA_V2_RTR_READ     0x4000u /* D, ORD half-word: zero-length Read RTR */
#define IWARP_MPA_V2_IRD_ORD_MASK 0x3FFFu
#define IWARP_MPA_IRD_ORD_NONE    0x3FFFu /* RFC 6581 §9.1: no automatic negotiation */

#define IWARP_MPA_CRC_LEN       4u
#define IWARP_MPA_LEN_FIELD     2u     /* ULPDU_Length */
#define IWARP_MPA_MARKER_LEN    4u     /* Reserved(16) | FPDUPTR(16) (RFC 5044 §4.3) */
#define IWARP_MPA_MARKER_PERIOD 512u   /* RFC 5044 §4.2 */
#define IWARP_MPA_MULPDU_MIN    128u   /* RFC 5044 §3 */
#define IWARP_MPA_MULPDU_MAX    64768u /* RFC 5044 §3: DDP MUST NOT post a larger ULPDU */

/* ---- DDP over SCTP (RFC 5043, RFC 6581 §7) ---- */
#define IWARP_SCTP_PPID_DDP_SEGMENT 16u
#define IWARP_SCTP_PPID_DDP_CONTROL 17u
#define IWARP_SCTP_ADAPTATION_DDP   0x00000001u
enum iwarp_sctp_session_fc {
    IWARP_SCTP_FC_INITIATE = 0x1,
    IWARP_SCTP_FC_ACCEPT = 0x2,
    IWARP_SCTP_FC_REJECT = 0x3,
    IWARP_SCTP_FC_TERMINATE = 0x4,
    IWARP_SCTP_FC_ENH_INITIATE = 0x5,
    IWARP_SCTP_FC_ENH_ACCEPT = 0x6,
    IWARP_SCTP_FC_ENH_REJECT = 0x7,
    IWARP_SCTP_FC_EXPERIMENTAL = 0xFFFF,
};

/* A Terminate cause: what goes into octets 18-19 of a Terminate (RFC 5040 §4.8). */
struct iwarp_term_cause {
    uint8_t layer; /* enum iwarp_term_layer */
    uint8_t etype;
    uint8_t ecode;
};

#endif
