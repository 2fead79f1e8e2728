/*
 * Decoding and judging one captured MPA connection (both directions), sans-I/O: the reassembled
 * octets of each TCP direction go in, PDU records and findings come out through callbacks. What
 * `iwarp dump` prints.
 *
 * Each direction starts with its MPA startup frame (RFC 5044 §7.1.1; the side that sends the
 * Request is the initiator), decoded with iwarp_mpa_frame_decode(); once both frames are known
 * the direction's FPDUs are deframed by the library's deframer (src/mpa/mpa_deframe.h: CRC if
 * either frame has C=1, markers where the receiver's frame has M=1, RFC 5044 §7.1.1) and each
 * DDP segment goes through iwarp_wire_segment_decode(), which gives the exact Terminate cause
 * our stack would send. Stateful rules are checked on top: MSN/MO continuity per direction and
 * QN (RFC 5041 §4.3, §5.3), TO continuity of tagged messages, Read Responses against the Read
 * Requests (RFC 5040 §4.4, §4.5), RFC 6581 RTR and IRD/ORD, the startup order (RFC 5044 §7.1.2),
 * PAD octets (RFC 5044 §4.1), nothing after one's own Terminate (RFC 5040 §5.4). Findings use
 * the category names of ../shared/tools/wire-check so the two can be compared.
 *
 * After a CRC or marker error the deframer is restarted at the end of the failed FPDU (as a
 * dissector would), so one damaged FPDU does not hide the rest; a ULPDU_Length that cannot be
 * delimited ends the direction's decoding. No allocation: the state embeds its buffers.
 */
#ifndef IWARP_TRACE_TRACE_MPA_STREAM_H
#define IWARP_TRACE_TRACE_MPA_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa/mpa_deframe.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"
#include "wire/wire_mpa.h"
#include "wire/wire_segment.h"

/* Finding categories (wire-check's names, iwarp_mpa_stream_class_name()). */
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
    IWARP_MS_TERMINATE,       /* RFC 5040 §4.8 Terminate header */
    IWARP_MS_AFTER_TERMINATE, /* RFC 5040 §5.4 */
    IWARP_MS_CRC_OFF,         /* warning: neither side asked for CRC (RFC 5044 §4.4) */
    IWARP_MS_CLASS_COUNT
};

/* The category's wire-check name ("bad-crc", "msn", ...); "?" when out of range. */
const char *iwarp_mpa_stream_class_name(unsigned cls);

enum iwarp_mpa_stream_pdu_kind {
    IWARP_MS_PDU_REQUEST, /* MPA Request */
    IWARP_MS_PDU_REPLY,   /* MPA Reply (or Reject) */
    IWARP_MS_PDU_FPDU,
};

enum iwarp_mpa_stream_crc {
    IWARP_MS_CRC_NONE, /* CRC not negotiated: the field is not checked (RFC 5044 §4.1) */
    IWARP_MS_CRC_GOOD,
    IWARP_MS_CRC_BAD,
};

/* One decoded PDU. Pointers are valid during the callback only. */
struct iwarp_mpa_stream_pdu {
    enum iwarp_mpa_stream_pdu_kind kind;
    unsigned side;       /* 0 or 1, as fed */
    bool from_initiator; /* sent by the side that sent the MPA Request */
    uint64_t index;      /* 1, 2, ... in the connection, both directions */
    uint64_t tag;        /* the caller's tag of the feed that completed it (frame number) */
    /* REQUEST/REPLY */
    const struct iwarp_mpa_frame *frame; /* NULL when the frame did not decode */
    uint8_t flags, rev;                  /* octets 16 and 17 as sent */
    uint16_t pd_length;                  /* PD_Length as sent */
    /* FPDU */
    uint32_t ulpdu_len, pad_len, markers; /* markers: octets of marker / 4 in front of/in it */
    enum iwarp_mpa_stream_crc crc;
    uint32_t crc_field;   /* the CRC field (least-significant octet first) */
    const uint8_t *ulpdu; /* the ULPDU (the DDP segment) */
    bool has_ddp;         /* ddp is valid (the ULPDU holds a DDP header) */
    struct iwarp_ddp_hdr ddp;
    int seg_rc;                           /* iwarp_wire_segment_decode()'s result */
    const struct iwarp_wire_segment *seg; /* valid when seg_rc == 0 */
    struct iwarp_term_cause cause;        /* the Terminate cause when seg_rc < 0 */
};

/* One finding. msg is valid during the callback only. */
struct iwarp_mpa_stream_finding {
    enum iwarp_mpa_stream_class cls;
    bool error;          /* false: a warning */
    unsigned side;       /* the direction it concerns (its sender) */
    bool from_initiator; /* that side sent the MPA Request (false also while unknown) */
    uint64_t index;      /* the PDU it concerns, 0 for none (end of capture, raw octets) */
    uint64_t tag;        /* the caller's tag of the feed that raised it (0 at finish) */
    const char *msg;
};

struct iwarp_mpa_stream_ops {
    void (*pdu)(void *ctx, const struct iwarp_mpa_stream_pdu *pdu);
    void (*finding)(void *ctx, const struct iwarp_mpa_stream_finding *f);
};

#define IWARP_MS_MAX_QN    8u  /* untagged queues tracked per direction (wire QNs 0..3 used) */
#define IWARP_MS_MAX_STAGS 16u /* unfinished tagged messages tracked per direction */
#define IWARP_MS_MAX_READS 64u /* outstanding Read Requests tracked per direction */

/* One direction (octets sent by one side). Private to trace_mpa_stream.c. */
struct iwarp_mpa_stream_dir {
    uint8_t phase;
    uint8_t frame[IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX];
    uint32_t frame_len;
    struct iwarp_mpa_rx rx;
    uint32_t pos;        /* stream position (RFC 5044 §4.3) of the next octet */
    uint32_t partial;    /* octets of the FPDU being received */
    uint32_t marker_oct; /* marker octets in it */
    uint8_t trailer[8];  /* PAD and CRC */
    uint32_t trailer_got;
    uint64_t raw; /* octets not decoded */
    uint64_t fpdus;
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
        uint32_t sink_stag, size;
        uint64_t sink_to, index;
    } reads[IWARP_MS_MAX_READS]; /* Read Requests this side sent, oldest first */
    uint32_t nreads;
    bool resp_open; /* a Read Response this side sends is under way */
    struct {
        uint32_t sink_stag, size;
        uint64_t sink_to, index;
    } resp_req;
    uint64_t resp_sofar;
    uint8_t ulpdu[IWARP_MPA_MULPDU_MAX];
};

/* Settings. */
struct iwarp_mpa_stream_cfg {
    /* The stream is expected to be MPA (a port given by the user): one that starts otherwise is
     * an IWARP_MS_NO_MPA error instead of being ignored. */
    bool require_mpa;
};

/* One connection. Private to trace_mpa_stream.c except the read-only summary fields. */
struct iwarp_mpa_stream {
    struct iwarp_mpa_stream_cfg cfg;
    const struct iwarp_mpa_stream_ops *ops;
    void *ctx;
    uint8_t state; /* unknown, MPA, not MPA */
    int initiator; /* side of the Request, -1 before */
    bool have_req, have_rep, rejected, crc, p2p;
    uint8_t req_flags, rep_flags;
    struct iwarp_mpa_ird_ord req_v2, rep_v2;
    bool req_s, rep_s;
    uint8_t rtr_offered; /* IWARP_MPA_RTR_* bits of the Reply, when p2p */
    uint64_t tag;        /* of the current feed */
    uint64_t pdus;       /* PDUs reported (summary) */
    uint64_t errors, warnings;
    struct iwarp_mpa_stream_dir d[2];
};

/*
 * Prepares s for one connection.
 *   cfg - settings (copied); ops - callbacks (both required); ctx - passed to them.
 * Ownership: s keeps ops and ctx (borrowed; they must outlive s's use).
 */
void iwarp_mpa_stream_init(struct iwarp_mpa_stream *s, const struct iwarp_mpa_stream_cfg *cfg,
                           const struct iwarp_mpa_stream_ops *ops, void *ctx);

/*
 * Feeds the next in-order octets p[0..n) sent by side (0 or 1), tagged with tag (e.g. the frame
 * number of the packet that delivered them; it is passed back in PDU records and findings).
 * The two directions must be fed in the order they appeared (the startup rules depend on it).
 * Ownership: p is read during the call only.
 */
void iwarp_mpa_stream_feed(struct iwarp_mpa_stream *s, unsigned side, const uint8_t *p, size_t n,
                           uint64_t tag);

/*
 * The capture has ended: reports what is unfinished (octets inside a frame or FPDU, messages
 * without their last segment, Read Responses still owed).
 */
void iwarp_mpa_stream_finish(struct iwarp_mpa_stream *s);

/* Whether the stream was recognised as MPA (a Request or Reply was seen). */
bool iwarp_mpa_stream_is_mpa(const struct iwarp_mpa_stream *s);

#endif
