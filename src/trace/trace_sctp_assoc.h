/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Decoding and judging one captured DDP-over-SCTP association (RFC 5043), sans-I/O: the chunks
 * of each SCTP packet go in with the side that sent it, PDU records and findings come out
 * through callbacks. What `iwarp dump` prints for SCTP.
 *
 * Per packet, the chunks are walked with trace/trace_sctp_pkt (a malformed chunk Length ends
 * the packet: [sctp]). INIT and INIT-ACK are decoded; each must carry the DDP Adaptation Layer
 * Indication 0x00000001 (RFC 5043 §5.1, §11.1: [sctp-adaptation], judged at the end when the
 * association carried DDP chunks or announced DDP). DATA chunks are taken once per TSN
 * (retransmissions and duplicates are dropped: RFC 9260 §6.2) and fragments are put together
 * by consecutive TSNs from a B chunk to an E chunk of the same stream (RFC 9260 §6.9). Each
 * message then:
 *   - PPID 16 or 17 only on a DDP association (RFC 5043 §5.1: [sctp-ppid]);
 *   - is put in DDP-SSN order per stream and direction with the library's reorder window
 *     (session/session_ssn.h; RFC 5043 §5.2.1, §6.1): a DDP-SSN already seen or held is a
 *     duplicate, one that never arrives a gap ([sctp-ssn]); a Session Initiate/Accept/Reject
 *     with DDP-SSN 0 starts a new session (§6.1);
 *   - in that order: U must be set (RFC 5043 §10: [sctp-unordered]); PPID 17 is decoded with
 *     wire/wire_sctp.h ([sctp-ctl] when it does not decode: §5.2.3, RFC 6581 §7); PPID 16 is
 *     the DDP-SSN and a DDP segment, judged by trace/trace_judge.h per DDP stream (the pair of
 *     like-numbered streams, RFC 5043 §6) exactly as over MPA.
 * Findings use wire-check's category names where it has one.
 *
 * Allocation (L6): the association, its streams, copies of fragments and of chunks waiting for
 * their DDP-SSN turn; all bounded (limits below; beyond them a finding says what was not
 * decoded). Not thread-safe: one caller.
 */
#ifndef IWARP_TRACE_TRACE_SCTP_ASSOC_H
#define IWARP_TRACE_TRACE_SCTP_ASSOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/trace_judge.h"
#include "trace/trace_sctp_pkt.h"
#include "wire/wire_sctp.h"

#define IWARP_SA_MAX_STREAMS 256u       /* DDP streams decoded per association */
#define IWARP_SA_REORDER     1024u      /* chunks held per stream and direction (DDP-SSN) */
#define IWARP_SA_MAX_FRAGS   4096u      /* fragments waiting per direction */
#define IWARP_SA_MAX_MSG     (1u << 20) /* largest message put together from fragments */
#define IWARP_SA_TSN_WINDOW  16384u     /* TSNs remembered per direction for duplicates */

struct iwarp_sctp_assoc;

enum iwarp_sa_pdu_kind {
    IWARP_SA_PDU_INIT,  /* an INIT or INIT-ACK chunk (not an iWARP PDU; index 0) */
    IWARP_SA_PDU_CTL,   /* PPID 17: DDP Stream Session Control */
    IWARP_SA_PDU_SEG,   /* PPID 16: DDP Segment */
    IWARP_SA_PDU_OTHER, /* a message with another PPID */
};

/* One record. Pointers are valid during the callback only. */
struct iwarp_sa_pdu {
    enum iwarp_sa_pdu_kind kind;
    unsigned side;       /* 0 or 1, as fed */
    bool from_initiator; /* sent by the side that sent the INIT (or the session Initiate) */
    uint64_t index;      /* 1, 2, ... per association for messages, in DDP-SSN order; 0 INIT */
    uint64_t tag;        /* the caller's tag of the packet that completed it (frame number) */
    /* INIT */
    uint8_t chunk_type; /* IWARP_SCTP_CHUNK_INIT or _INIT_ACK */
    int init_rc;        /* iwarp_sctp_init_decode()'s result */
    const struct iwarp_sctp_init *init;
    /* messages (CTL, SEG, OTHER) */
    uint16_t sid;
    uint32_t ppid;
    bool unordered;     /* U flag */
    uint32_t tsn;       /* of its first chunk */
    uint32_t fragments; /* DATA chunks it came in (1: not fragmented) */
    size_t len;         /* the user message's octets */
    int ssn;            /* the DDP-SSN, -1 when the message is shorter than one */
    /* CTL */
    int ctl_rc;                       /* iwarp_sctp_ctl_decode()'s result */
    const struct iwarp_sctp_ctl *ctl; /* when ctl_rc >= 0 */
    int fc;                           /* the Function Code as sent, -1 when absent */
    /* SEG */
    const struct iwarp_ddp_judge_seg *seg; /* NULL when no octet follows the DDP-SSN */
};

/* One finding. msg is valid during the callback only. */
struct iwarp_sa_finding {
    enum iwarp_mpa_stream_class cls;
    bool error;          /* false: a warning */
    unsigned side;       /* the direction it concerns (its sender) */
    bool from_initiator; /* as in the PDU record */
    uint64_t index;      /* the message it concerns, 0 for none */
    uint64_t tag;        /* the caller's tag of the packet concerned (0 at the end) */
    int sid;             /* the stream, -1 for none */
    const char *msg;
};

struct iwarp_sa_ops {
    void (*pdu)(void *ctx, const struct iwarp_sa_pdu *pdu);
    void (*finding)(void *ctx, const struct iwarp_sa_finding *f);
};

/* Counters (read-only, iwarp_sctp_assoc_stats()). */
struct iwarp_sa_stats {
    uint64_t packets, chunks, data_chunks;
    uint64_t dup_chunks;  /* DATA chunks seen again (same TSN) and dropped */
    uint64_t reassembled; /* messages put together from fragments */
    uint64_t held;        /* messages that waited for an earlier DDP-SSN */
    uint64_t ddp_pdus;    /* CTL and SEG records */
};

/*
 * A new association judge. ops: both callbacks required; ctx is passed back to them.
 * Ownership: the caller frees it with iwarp_sctp_assoc_free(); ops and ctx are borrowed.
 * Returns NULL when memory runs out.
 */
struct iwarp_sctp_assoc *iwarp_sctp_assoc_new(const struct iwarp_sa_ops *ops, void *ctx);

/* Frees a (NULL is ignored); chunks still held are dropped without a report. */
void iwarp_sctp_assoc_free(struct iwarp_sctp_assoc *a);

/*
 * Feeds one SCTP packet's chunk area (the octets after the 12-octet common header) sent by side
 * (0 or 1), tagged with tag (e.g. the frame number; passed back in records and findings).
 * Ownership: chunks is read during the call only (what must wait is copied).
 */
void iwarp_sctp_assoc_packet(struct iwarp_sctp_assoc *a, unsigned side, const uint8_t *chunks,
                             size_t len, uint64_t tag);

/* The capture has ended: reports gaps, unfinished fragments and messages, the adaptation
 * indications; chunks held behind a gap are decoded then, in DDP-SSN order. Once. */
void iwarp_sctp_assoc_finish(struct iwarp_sctp_assoc *a);

/* Whether the association is DDP: announced (an Adaptation Layer Indication of 1) or carrying
 * PPID 16/17 chunks. */
bool iwarp_sctp_assoc_is_ddp(const struct iwarp_sctp_assoc *a);

/* The side that sent the INIT (or, without one, the first session Initiate); -1 unknown. */
int iwarp_sctp_assoc_initiator(const struct iwarp_sctp_assoc *a);

/* A copy of the counters. */
void iwarp_sctp_assoc_stats(const struct iwarp_sctp_assoc *a, struct iwarp_sa_stats *out);

#endif
