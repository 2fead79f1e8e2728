/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Judging captured DDP segments, whatever carried them (MPA FPDUs: trace/trace_mpa_stream; SCTP
 * DDP Segment chunks: trace/trace_sctp_assoc): the finding categories `iwarp dump` reports
 * (wire-check's names, so the two judges can be compared) and the DDP/RDMAP rules on one DDP
 * stream's two directions, sans-I/O.
 *
 * Per segment: iwarp_wire_segment_decode() (the exact Terminate cause our stack would send),
 * reserved fields (RFC 5041 §4.1, RFC 5040 §4.1, RFC 7306 §5.2.1), the Terminate header (RFC
 * 5040 §4.8), nothing after one's own Terminate (RFC 5040 §5.4); stateful: MSN/MO per queue
 * (RFC 5041 §4.3, §5.3), TO continuity of tagged messages (RFC 5041 §4.2), Read Responses
 * against the peer's Read Requests (RFC 5040 §4.4, §4.5); RFC 7306: the AOpCode of Atomic
 * Requests (§5.2.1), and Atomic Responses against the peer's Atomic Requests (Original Request
 * Identifier, §5.2.2), Read and Atomic Responses in the order of their requests (§5.2.2 rule 8,
 * §7). Body lengths and queue numbers (1, 3, 0) are the segment decoder's checks. The segments of a
 * direction must be fed in the order their sender submitted them (MPA: stream order; SCTP: DDP-SSN
 * order). No allocation.
 */
#ifndef IWARP_TRACE_TRACE_JUDGE_H
#define IWARP_TRACE_TRACE_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire_ddp.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

/* Finding categories (wire-check's names, iwarp_mpa_stream_class_name()). The MPA ones first;
 * the SCTP ones are used by trace_sctp_assoc. */
enum iwarp_mpa_stream_class {
    IWARP_MS_BAD_CRC,         /* MPA CRC mismatch (RFC 5044 §4.4) */
    IWARP_MS_MARKER,          /* FPDUPTR wrong (RFC 5044 §4.3) */
    IWARP_MS_PAD,             /* PAD octets not zero (RFC 5044 §4.1) */
    IWARP_MS_LENGTH,          /* segment length wrong for its headers / ULPDU_Length unusable */
    IWARP_MS_UNDISSECTED,     /* octets that are not MPA PDUs */
    IWARP_MS_NO_MPA,          /* a stream required to be MPA shows no MPA Request */
    IWARP_MS_STARTUP,         /* RFC 5044 §7.1.2 startup order */
    IWARP_MS_MPA_REV,         /* Rev not 1/2, S with Rev < 2 */
    IWARP_MS_MPA_RES,         /* Res bits set */
    IWARP_MS_MPA_PD,          /* PD_Length over 512, S without the IRD/ORD word */
    IWARP_MS_MPA_RTR,         /* RFC 6581 §9.2 A/B/C/D */
    IWARP_MS_MPA_IRD,         /* RFC 6581 §9.1 IRD/ORD */
    IWARP_MS_RTR,             /* RFC 6581 §9.2: the initiator's first FPDU is not an RTR */
    IWARP_MS_DDP_VERSION,     /* RFC 5041 §4.1 */
    IWARP_MS_DDP_RSVD,        /* RFC 5041 §4.1 */
    IWARP_MS_RDMAP_VERSION,   /* RFC 5040 §4.1 */
    IWARP_MS_RDMAP_RSVD,      /* RFC 5040 §4.1, RFC 7306 §5.2.1 */
    IWARP_MS_OPCODE,          /* RFC 5040 Figure 4, RFC 7306 Figure 2 */
    IWARP_MS_TFLAG,           /* T flag vs opcode */
    IWARP_MS_QN,              /* QN vs opcode */
    IWARP_MS_LAST_FLAG,       /* single-segment message without L */
    IWARP_MS_MO,              /* RFC 5041 §4.3 MO */
    IWARP_MS_RSVDULP,         /* Invalidate STag slot not zero (RFC 5040 §4.1) */
    IWARP_MS_MSN,             /* RFC 5041 §4.3, §5.3 MSN sequence */
    IWARP_MS_TO,              /* tagged message TO continuity (RFC 5041 §4.2) */
    IWARP_MS_READ_RESP,       /* RFC 5040 §4.5 Read Response vs Read Request */
    IWARP_MS_ATOMIC,          /* RFC 7306 §5.2 AOpCode, Atomic Response vs Atomic Request */
    IWARP_MS_TERMINATE,       /* RFC 5040 §4.8 Terminate header */
    IWARP_MS_AFTER_TERMINATE, /* RFC 5040 §5.4 */
    IWARP_MS_CRC_OFF,         /* warning: neither side asked for CRC (RFC 5044 §4.4) */
    IWARP_MS_SCTP,            /* SCTP chunk/packet structure, fragments (RFC 9260) */
    IWARP_MS_SCTP_SSN,        /* DDP-SSN gaps and duplicates per stream (RFC 5043 §5.2.1, §6) */
    IWARP_MS_SCTP_PPID,       /* a PPID other than 16/17 on a DDP association (RFC 5043 §5.1) */
    IWARP_MS_SCTP_UNORDERED,  /* a DDP chunk without U (RFC 5043 §10) */
    IWARP_MS_SCTP_ADAPTATION, /* INIT/INIT-ACK without the DDP indication (RFC 5043 §5.1) */
    IWARP_MS_SCTP_CTL,        /* a Stream Session Control message that does not decode (§5.2.3) */
    IWARP_MS_CLASS_COUNT
};

/* The category's wire-check name ("bad-crc", "msn", "sctp-ssn", ...); "?" when out of range. */
const char *iwarp_mpa_stream_class_name(unsigned cls);

#define IWARP_MS_MAX_QN       8u  /* untagged queues tracked per direction (wire QNs 0..3 used) */
#define IWARP_MS_MAX_STAGS    16u /* unfinished tagged messages tracked per direction */
#define IWARP_MS_MAX_REQUESTS 64u /* outstanding Read and Atomic Requests tracked per direction */

/* What the rules remember of one direction (segments sent by one side). Private. */
struct iwarp_ddp_judge_dir {
    uint64_t terminated; /* index of this side's Terminate, 0 if none */
    struct {
        uint32_t qn, next_msn, cur_msn, cur_mo;
        bool used, open;
    } q[IWARP_MS_MAX_QN];
    struct {
        uint32_t stag;
        uint64_t next_to;
        bool used;
    } t[IWARP_MS_MAX_STAGS];
    struct {
        bool atomic; /* an Atomic Request (req_id); else a Read Request (sink, size) */
        uint32_t sink_stag, size, req_id;
        uint64_t sink_to, index;
    } requests[IWARP_MS_MAX_REQUESTS]; /* Read/Atomic Requests this side sent, oldest first */
    uint32_t nrequests;
    bool resp_open; /* a Read Response this side sends is under way */
    struct {
        uint32_t sink_stag, size;
        uint64_t sink_to, index;
    } resp_req;
    uint64_t resp_sofar;
    bool lost;          /* this side's later segments cannot be decoded (iwarp_ddp_judge_lost) */
    bool resp_unjudged; /* this side's Read Responses are no longer checked (peer lost) */
};

/* Receives each finding: the side whose segment it concerns, the segment's index (0: none),
 * error or warning, the category, the text (valid during the call). */
typedef void (*iwarp_ddp_judge_report_fn)(void *ctx, unsigned side, uint64_t index, bool error,
                                          enum iwarp_mpa_stream_class cls, const char *msg);

/* The longest finding text, its terminating NUL included (longer ones are cut). */
#define IWARP_DDP_JUDGE_MSG_MAX 256u

/*
 * The one report() of the judges (the DDP/RDMAP rules here, trace_mpa_stream,
 * trace_sctp_assoc): formats a finding's text printf-style (cut at IWARP_DDP_JUDGE_MSG_MAX - 1
 * octets) and hands it to fn with ctx, side, index, error and cls as they are.
 * Ownership: ctx is passed on as it is; the text is valid during fn's call only.
 * May be called from any judge's code, any number of times.
 */
void iwarp_ddp_judge_reportf(iwarp_ddp_judge_report_fn fn, void *ctx, unsigned side, uint64_t index,
                             bool error, enum iwarp_mpa_stream_class cls, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* One DDP stream, both directions. */
struct iwarp_ddp_judge {
    iwarp_ddp_judge_report_fn report;
    void *ctx;
    struct iwarp_ddp_judge_dir d[2];
};

/* A DDP segment decoded for judging and describing. Pointers point into the segment. */
struct iwarp_ddp_judge_seg {
    const uint8_t *ulpdu; /* the segment, from its DDP Control octet */
    uint32_t len;
    bool has_ddp; /* ddp is valid: the segment holds a whole DDP header */
    struct iwarp_ddp_hdr ddp;
    int seg_rc;                    /* iwarp_wire_segment_decode()'s result */
    struct iwarp_wire_segment seg; /* valid when seg_rc == 0 */
    struct iwarp_term_cause cause; /* the Terminate cause when seg_rc < 0 */
};

/* Decodes ulpdu[0..len) for iwarp_ddp_judge_segment() and for printing. */
void iwarp_ddp_judge_decode(const uint8_t *ulpdu, uint32_t len, struct iwarp_ddp_judge_seg *out);

/* Prepares j for one DDP stream. report_fn is required. Ownership: ctx is passed back as it is. */
void iwarp_ddp_judge_init(struct iwarp_ddp_judge *j, iwarp_ddp_judge_report_fn report_fn,
                          void *ctx);

/* Judges the next segment sent by side (0 or 1), numbered index (> 0) by the caller. */
void iwarp_ddp_judge_segment(struct iwarp_ddp_judge *j, unsigned side, uint64_t index,
                             const struct iwarp_ddp_judge_seg *s);

/*
 * What side sends can no longer be decoded (its framing was lost, octets are missing): from now
 * on the other side's Read Responses are not checked against the Read Requests seen, since the
 * ones they answer may be among the octets not decoded (one warning says so).
 */
void iwarp_ddp_judge_lost(struct iwarp_ddp_judge *j, unsigned side);

/* The end of the capture: warns about messages without their last segment and Read Responses
 * still under way. */
void iwarp_ddp_judge_finish(struct iwarp_ddp_judge *j);

#endif
