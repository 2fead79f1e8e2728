/* SPDX-License-Identifier: BSD-2-Clause */
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
 * our stack would send. Stateful rules are checked on top: the DDP/RDMAP ones shared with the
 * SCTP judge (trace/trace_judge.h: MSN/MO continuity per direction and QN, TO continuity of
 * tagged messages, Read Responses against the Read Requests, nothing after one's own
 * Terminate), and the MPA ones here: RFC 6581 RTR and IRD/ORD, the startup order (RFC 5044
 * §7.1.2), PAD octets (RFC 5044 §4.1). Findings use the category names of the project's
 * Wireshark-based wire judge so the two can be compared.
 *
 * After a CRC or marker error the deframer is restarted at the end of the failed FPDU (as a
 * dissector would), so one damaged FPDU does not hide the rest. A bad CRC that is not merely
 * byte-swapped puts the next FPDU's position in doubt (the failed FPDU's ULPDU_Length may be what
 * was damaged): an FPDU that follows one and fails its CRC too is listed but not decoded or
 * judged, and a third in a row, or a ULPDU_Length that cannot be delimited after a bad CRC,
 * means the framing is lost: one [undissected] finding, and the rest of the direction is not
 * decoded (the same rule as the wire-check judge). A ULPDU_Length that cannot be delimited
 * otherwise is a [length] error and also ends the direction's decoding.
 *
 * The end of a direction must be an FPDU boundary, except that an FPDU cut short after which the
 * receiver reset the connection (iwarp_mpa_stream_reset(); its header plausible) is listed as
 * cut, not as an error: a receiver may abort a connection at any time. No allocation: the state
 * embeds its buffers.
 */
#ifndef IWARP_TRACE_TRACE_MPA_STREAM_H
#define IWARP_TRACE_TRACE_MPA_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa/mpa_deframe.h"
#include "trace/trace_judge.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"
#include "wire/wire_mpa.h"
#include "wire/wire_segment.h"

enum iwarp_mpa_stream_pdu_kind {
    IWARP_MS_PDU_REQUEST, /* MPA Request */
    IWARP_MS_PDU_REPLY,   /* MPA Reply (or Reject) */
    IWARP_MS_PDU_FPDU,
    IWARP_MS_PDU_CUT, /* the start of an FPDU, cut short by the receiver's reset (at finish) */
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
    uint32_t crc_field; /* the CRC field (least-significant octet first) */
    uint32_t crc_want;  /* CRC_BAD: the CRC32C the FPDU should carry */
    bool crc_swapped;   /* CRC_BAD: the field holds crc_want's octets in reverse order */
    bool in_doubt;      /* framing in doubt (after a bad CRC): the ULPDU is not decoded */
    /* CUT: octets of the FPDU in the capture (markers included); ulpdu_len when known */
    uint32_t cut_octets;
    bool cut_len_known;
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
    uint64_t raw;      /* octets not decoded */
    bool raw_reported; /* why the rest is not decoded was reported: nothing more at finish */
    bool reset;        /* this side sent a TCP RST (iwarp_mpa_stream_reset) */
    uint8_t bad_run;   /* FPDUs in a row with a bad CRC that is not merely byte-swapped */
    bool len_known;    /* cur_ulen holds the current FPDU's ULPDU_Length */
    uint32_t cur_ulen;
    uint32_t ulpdu_got; /* ULPDU octets of the current FPDU staged in ulpdu[] */
    uint64_t fpdus;
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
    struct iwarp_ddp_judge judge; /* the DDP/RDMAP rules (trace/trace_judge.h) */
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
 * side sent a TCP RST (at any point of the capture): an FPDU of the other side that the capture
 * ends inside of is then taken as cut by that reset, not as an error.
 */
void iwarp_mpa_stream_reset(struct iwarp_mpa_stream *s, unsigned side);

/*
 * The capture has ended: reports what is unfinished (octets inside a frame or FPDU, messages
 * without their last segment, Read Responses still owed).
 */
void iwarp_mpa_stream_finish(struct iwarp_mpa_stream *s);

/* Whether the stream was recognised as MPA (a Request or Reply was seen). */
bool iwarp_mpa_stream_is_mpa(const struct iwarp_mpa_stream *s);

#endif
