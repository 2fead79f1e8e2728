/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA connection setup (RFC 5044 §7.1, RFC 6581): the initiator and responder state machines,
 * sans-I/O. The machine is fed received bytes, local decisions and time; it produces the bytes
 * to send and a result. It never touches sockets, clocks or the heap.
 *
 * Initiator                                   Responder
 *   init()        -> tx() holds the Request      init()           -> WAIT_REQUEST
 *   WAIT_REPLY    <- rx(Reply)                   rx(Request)      -> REQUEST (ULP decides:
 *   SEND_FIRST: the layer above sends the RTR                         result() has the peer's
 *     (result.rtr != 0) or the ULP's first                            offer and private data)
 *     message, then calls first_sent()           accept()/reject() -> tx() holds the Reply
 *   ESTABLISHED                                  WAIT_FIRST_FPDU: first_fpdu() with the
 *                                                  initiator's first FPDU -> ESTABLISHED
 * Any failure -> FAILED (sticky): result() says what to do with the connection (close TCP,
 * leave it to the ULP after a Reject, or send a Terminate with the given cause first).
 *
 * rx() consumes exactly one frame and never the bytes after it: what follows a Reply belongs to
 * full operation (or, after a Reject, to the ULP). A peer that sends anything where nothing is
 * allowed (the initiator between its Request and the Reply; the responder after its Reply
 * before the initiator's first FPDU) fails with IWARP_ERR_MPA_EARLY_DATA.
 */
#ifndef IWARP_MPA_MPA_NEGOTIATE_H
#define IWARP_MPA_MPA_NEGOTIATE_H

#include <stdbool.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "wire/wire.h"
#include "wire/wire_mpa.h"

enum iwarp_mpa_role {
    IWARP_MPA_INITIATOR = 0, /* sends the Request (RFC 5044 §7.1 "Initiator") */
    IWARP_MPA_RESPONDER = 1,
};

enum iwarp_mpa_neg_state {
    IWARP_MPA_NEG_WAIT_REPLY = 0,  /* initiator: Request queued/sent, waiting for the Reply */
    IWARP_MPA_NEG_SEND_FIRST,      /* initiator: Reply accepted; we must send the first FPDU */
    IWARP_MPA_NEG_WAIT_REQUEST,    /* responder: waiting for the Request */
    IWARP_MPA_NEG_REQUEST,         /* responder: Request received; accept() or reject() */
    IWARP_MPA_NEG_WAIT_FIRST_FPDU, /* responder: Reply queued; send nothing until the
                                      initiator's first FPDU (RFC 5044 §7.1.2 rule 4) */
    IWARP_MPA_NEG_ESTABLISHED,     /* full operation in both directions */
    IWARP_MPA_NEG_REJECTED,        /* responder: we rejected; tx() holds the Reject */
    IWARP_MPA_NEG_FAILED,          /* see result.err / result.action */
};

/* What a failure requires of the connection. */
enum iwarp_mpa_action {
    IWARP_MPA_ACT_NONE = 0,  /* no failure */
    IWARP_MPA_ACT_CLOSE,     /* close TCP now; no FPDU may be sent (RFC 5044 §7.1.2, §8 code 4) */
    IWARP_MPA_ACT_EXIT,      /* MPA exited after a Reject (sent or received); flush tx() and
                                leave TCP to the ULP, which usually closes it (RFC 5044 §7.1.2
                                rules 2, 3) */
    IWARP_MPA_ACT_TERMINATE, /* full operation was reached: send a Terminate FPDU carrying
                                result.term, then close (RFC 6581 §8, §9) */
};

/* Configuration, copied by init(). iwarp_mpa_neg_cfg_default() gives interoperable values. */
struct iwarp_mpa_neg_cfg {
    enum iwarp_mpa_role role;
    uint8_t revision;  /* highest MPA revision spoken: 1 (RFC 5044) or 2 (RFC 6581) */
    bool crc;          /* C=1 in our frame; CRC is on if either frame has C=1 (RFC 5044 §7.1.1) */
    bool crc_required; /* also demand C=1 in the peer's frame (siw mpa_crc_required+strict) */
    bool markers;      /* M=1: the peer must insert markers in what WE receive (RFC 5044 §7.1.1) */
    bool enhanced;     /* initiator: send an RFC 6581 Request (Rev 2, S=1, IRD/ORD word). When
                          false the Request has S=0 and Rev 1 (RFC 6581 §6, §10). A responder
                          with revision 2 always answers enhanced Requests enhanced. */
    uint16_t ird, ord; /* initiator: the IRD/ORD offered (0..0x3FFE, or 0x3FFF = no automatic
                          negotiation, RFC 6581 §9.1) */
    bool peer2peer;    /* initiator: request the peer-to-peer model, i.e. an RTR (A=1) */
    uint8_t rtr;       /* RTR types we support (IWARP_MPA_RTR_*); the initiator offers all of
                          them (RFC 6581 §9.2); a revision-2 responder needs at least one */
    uint8_t rtr_pref;  /* initiator: preferred type when several match (0: Write, Read, Send) */
    const uint8_t *pd; /* initiator: Request private data (copied by init()) */
    uint16_t pd_len;   /* <= 512, or <= 508 when enhanced (siw/iWCM take <= 256 in total) */
    uint16_t pd_max_rx;  /* largest peer PD_Length accepted (0: 512, RFC 5044 §7.1.2 rule 9) */
    uint64_t timeout_ns; /* initiator: for the Reply; responder: for the Request, and for the
                            RTR after accept() when one was negotiated; 0 = none
                            (RFC 5044 §7.1.2 rules 8, 10) */
};

/* The responder's decision: what accept() and reject() put in the Reply. */
struct iwarp_mpa_neg_answer {
    uint16_t ird, ord; /* our resources (0..0x3FFF); see RFC 6581 §9.1 for what is sent */
    const uint8_t *pd; /* ULP private data (copied) */
    uint16_t pd_len;   /* <= 512, or <= 508 when the Request was enhanced */
    bool crc;          /* accept: set C=1 in the Reply even if neither side's cfg asked (CRC is
                          then on, RFC 5044 §7.1.1); false keeps the configured choice */
    bool markers;      /* accept: set M=1, asking the initiator for markers (RFC 5044 §4.3) */
};

/* The outcome; valid fields depend on the state (see each comment). */
struct iwarp_mpa_neg_result {
    /* From the peer's frame (REQUEST, and every state after a frame was received). */
    uint8_t peer_rev;
    bool enhanced;     /* RFC 6581 word exchanged (S=1) */
    uint16_t peer_ird; /* the peer's raw IRD/ORD (RFC 6581 §9.1 "MUST pass ... to the
                          ULP"); 0x3FFF when not enhanced */
    uint16_t peer_ord;
    bool peer_p2p;          /* A in the peer's frame */
    uint8_t peer_rtr;       /* B/C/D in the peer's frame */
    const uint8_t *peer_pd; /* the peer's ULP private data (after the RFC 6581 word) */
    uint16_t peer_pd_len;
    /* Negotiated (SEND_FIRST, WAIT_FIRST_FPDU, ESTABLISHED). */
    uint8_t rev;            /* the Reply's revision */
    bool crc;               /* CRC generated and checked in both directions */
    bool markers_rx;        /* the peer inserts markers in what we receive */
    bool markers_tx;        /* we insert markers in what we send (RFC 5044 §4.3 MUST) */
    uint16_t ird, ord;      /* our negotiated IRD/ORD; 0x3FFF = left to the ULP */
    bool p2p;               /* peer-to-peer model negotiated */
    uint8_t rtr;            /* the RTR type (one IWARP_MPA_RTR_* bit) the initiator sends; on
                               the responder the set it accepts; 0 without RTR */
    bool local_sends_first; /* initiator: true (RTR or the ULP's first message, RFC 5044
                               §7.1.2 rule 4); responder: false, hold every FPDU until
                               first_fpdu() */
    /* Failure (FAILED; also REJECTED with err 0 and action EXIT). */
    int err;
    enum iwarp_mpa_action action;
    bool term_valid; /* term is meaningful (with ACT_TERMINATE it must be sent) */
    struct iwarp_term_cause term;
    uint64_t rx_consumed; /* total bytes rx() consumed (for a ULP reusing TCP after a Reject) */
};

/* The machine; embed it and treat the fields as private. */
struct iwarp_mpa_neg {
    struct iwarp_mpa_neg_cfg cfg;
    enum iwarp_mpa_neg_state state;
    struct iwarp_mpa_neg_result res;
    uint64_t deadline;      /* UINT64_MAX = none */
    uint8_t req_s, req_p2p; /* responder: what the Request asked */
    uint8_t req_m, req_c;
    uint16_t rx_have;
    uint16_t tx_len, tx_off;
    uint8_t rx_buf[IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX];
    uint8_t tx_buf[IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX];
    uint8_t pd_buf[IWARP_MPA_PD_MAX]; /* initiator: copy of cfg.pd */
};

/*
 * Fills cfg with interoperable defaults for role (docs/interop-siw.md): Rev 2,
 * C=1 (RFC 5044 §4.4: CRC on by default; siw and Chelsio honour it), no markers, enhanced with
 * IRD = ORD = 16, no peer-to-peer, RTR types Write and Read, Write preferred, no private data,
 * peer PD limited to 512, timeout 10 s for both roles (siw's responder waits 5 s: see the .c).
 */
void iwarp_mpa_neg_cfg_default(struct iwarp_mpa_neg_cfg *cfg, enum iwarp_mpa_role role);

/*
 * Starts a machine. The initiator queues its Request (RFC 5044 §7.1.2 rule 1) for tx().
 * Parameters: neg: the machine; cfg: copied (cfg->pd too); now_ns: the current time.
 * Returns 0, or IWARP_ERR_INVAL for an inconsistent cfg (revision not 1/2, enhanced without
 * revision 2, IRD/ORD > 0x3FFF, peer2peer without enhanced or without RTR types, rtr_pref not
 * one of rtr, private data too long, a revision-2 responder with no RTR type).
 */
int iwarp_mpa_neg_init(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_cfg *cfg,
                       uint64_t now_ns);

/*
 * Copies up to cap bytes that must be sent now (the Request; the Reply or Reject) into buf and
 * marks them sent. Call until it returns 0.
 * Returns the number of bytes copied (0 when nothing is pending).
 */
size_t iwarp_mpa_neg_tx(struct iwarp_mpa_neg *neg, uint8_t *buf, size_t cap);

/* Returns the number of bytes tx() still has to hand out. */
size_t iwarp_mpa_neg_tx_pending(const struct iwarp_mpa_neg *neg);

/*
 * Feeds received bytes (any split, down to one byte). Bytes arriving at or after the deadline
 * fail with IWARP_ERR_TIMEDOUT first.
 * Returns the number of bytes consumed (the frame's bytes; never bytes after a frame), or on
 * failure a negative IWARP_ERR_* (the machine is then FAILED; see result()). IWARP_ERR_STATE
 * (machine unchanged) when the state takes no bytes: after the Reply/Reject, bytes belong to
 * full operation or the ULP.
 */
iwarp_ssize iwarp_mpa_neg_rx(struct iwarp_mpa_neg *neg, const uint8_t *data, size_t len,
                             uint64_t now_ns);

/*
 * Responder, in REQUEST: accepts with ans (see RFC 6581 §9.1 for the IRD/ORD sent) and queues
 * the Reply. Moves to WAIT_FIRST_FPDU.
 * Returns 0; IWARP_ERR_STATE outside REQUEST; IWARP_ERR_INVAL for bad ans values.
 */
int iwarp_mpa_neg_accept(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_answer *ans,
                         uint64_t now_ns);

/*
 * Responder, in REQUEST: what accept(neg, ans) would negotiate, the machine unchanged: *out is
 * the result accept() would leave (crc, markers_rx, ird, ord with the answer applied), so that
 * the layer above can prepare what the outcome needs before it commits to it.
 * Returns 0; IWARP_ERR_STATE outside REQUEST; IWARP_ERR_INVAL for bad ans values (accept()
 * would fail alike). Ownership: out->peer_pd points into neg, as result()'s does.
 */
int iwarp_mpa_neg_accept_outcome(const struct iwarp_mpa_neg *neg,
                                 const struct iwarp_mpa_neg_answer *ans,
                                 struct iwarp_mpa_neg_result *out);

/*
 * Responder, in REQUEST: rejects (R=1, RFC 5044 §7.1.2 rule 2), with ans->pd and, for an
 * enhanced Request, ans->ird/ord in the word (RFC 6581 §9.1: e.g. the ORD the ULP needs).
 * Moves to REJECTED (action EXIT). ans may be NULL (no private data, IRD/ORD 0x3FFF).
 * Returns 0; IWARP_ERR_STATE outside REQUEST; IWARP_ERR_INVAL for bad ans values.
 */
int iwarp_mpa_neg_reject(struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_answer *ans);

/*
 * Initiator, in SEND_FIRST: the layer above reports that it has sent its first FPDU (the RTR
 * of type result.rtr when non-zero, RFC 6581 §5, §9.2; otherwise the ULP's first message).
 * Moves to ESTABLISHED. Returns 0 or IWARP_ERR_STATE.
 */
int iwarp_mpa_neg_first_sent(struct iwarp_mpa_neg *neg);

/*
 * Responder, in WAIT_FIRST_FPDU: the layer above reports the initiator's first FPDU, which it
 * has validated: its RDMAP opcode and length (Send/Write: payload octets; Read Request: RDMA
 * Read Message Size). With an RTR negotiated it must be a zero-length Send, Write or Read
 * Request of a type we set in the Reply (RFC 6581 §9.2); without, any FPDU completes setup
 * (RFC 5044 §7.1.2 rule 4).
 * Returns 0 (ESTABLISHED); IWARP_ERR_STATE; IWARP_ERR_INVAL for opcode > 15; on failure
 * (FAILED) IWARP_ERR_MPA_RTR_MISMATCH (Terminate 2/0/0x07) or IWARP_ERR_MPA_PEER_TERM.
 */
int iwarp_mpa_neg_first_fpdu(struct iwarp_mpa_neg *neg, uint8_t opcode, uint32_t len,
                             uint64_t now_ns);

/* Returns the absolute time (ns) of the next deadline, or UINT64_MAX when none is armed. */
uint64_t iwarp_mpa_neg_next_timeout(const struct iwarp_mpa_neg *neg);

/*
 * Fires the deadline if now_ns has reached it (RFC 5044 §7.1.2 rules 8, 10).
 * Returns 0 (nothing expired), or IWARP_ERR_TIMEDOUT (machine FAILED, action CLOSE).
 */
int iwarp_mpa_neg_handle_timeout(struct iwarp_mpa_neg *neg, uint64_t now_ns);

/* Returns the current state. */
enum iwarp_mpa_neg_state iwarp_mpa_neg_state(const struct iwarp_mpa_neg *neg);

/*
 * Returns the result (see the field comments for when each is valid).
 * Ownership: borrowed, valid while neg lives; peer_pd points into neg.
 */
const struct iwarp_mpa_neg_result *iwarp_mpa_neg_result(const struct iwarp_mpa_neg *neg);

#endif
