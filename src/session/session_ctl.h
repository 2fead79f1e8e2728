/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP Stream Session control for one DDP stream over SCTP (RFC 5043 §5.2.3, §6; RFC 6581 §7,
 * §9), sans-I/O: fed received control chunks (in DDP-SSN order), the DDP-SSNs of received
 * segments and the ULP's decisions; produces control chunk payloads (PPID 17) into a caller
 * buffer, events, and a result. No sockets, clocks or allocation.
 *
 *   Active                                   Passive
 *   init(): Initiate queued (5 if enhanced)  init()                  -> LISTEN
 *   INITIATED <- Accept/Enhanced Accept      LISTEN <- Initiate      -> PENDING (EV_REQUEST);
 *               -> ESTABLISHED                 over the association's pending limit it is
 *             <- Reject/Enhanced Reject        answered with Terminate (§6.4) -> TERMINATED
 *               -> REJECTED                  accept(): Accept queued -> ESTABLISHED
 *             <- Terminate -> TERMINATED     reject(): Reject queued -> REJECTED
 *   ESTABLISHED: segments both ways; a Terminate either way -> TERMINATED (§6.2)
 *
 * Any other control chunk, function code or DDP segment is illegal (§6.1: "the DDP Stream Session
 * MUST be terminated"): the machine queues a Terminate and enters TERMINATED with result.err =
 * IWARP_ERR_SESSION_SEQUENCE (wrong message for the state; a segment before ESTABLISHED),
 * IWARP_ERR_SESSION_FUNCTION (unknown or experimental code, or an Enhanced Initiate to a passive
 * side without RFC 6581), IWARP_ERR_SCTP_SSN (a DDP-SSN out of order: the glue's window should
 * have prevented it), or the decoder's error for a malformed chunk. The machine never answers a
 * Terminate with one by itself (the peer already sent its final chunk). REJECTED and TERMINATED end
 * the session: to run another one on the stream, init() the machine again and reset the stream's
 * DDP-SSN counter and window (session_ssn.h) once no chunk of the old one can be in flight (§6.6).
 *
 * No RTR over SCTP (RFC 6581 §4.4.1): either side may send first once ESTABLISHED. The active
 * side sends A=0 (client-server); a passive side echoes an A=1 Initiate as §9.2 requires and then
 * result.p2p / result.rtr tell the glue which zero-length RTR the peer may send first.
 *
 * Ownership and use: the machine is caller-owned (embed it); private data given to init(),
 * accept() and reject() is copied; result.peer_pd points into the machine. tx() writes at most
 * IWARP_SCTP_CTL_MAX (516) octets and takes each chunk's DDP-SSN from the stream's send counter
 * (the same counter as the stream's DDP segments, §5.2.1), so call tx() until it returns 0
 * before sending segments and send chunks in the order their DDP-SSNs were taken. The pending
 * counter is caller-owned, one per association, shared by its passive machines. One thread (the
 * association's lock) drives everything.
 *
 * LLP glue, per received chunk in DDP-SSN order (after session_ssn's window):
 *   PPID 17: iwarp_sess_ctl_rx_ctl(ctl, payload, len)
 *   PPID 16: if iwarp_sess_ctl_rx_seg(ctl, ssn) == 0, hand the segment to
 *            iwarp_core_qp_rx_segment(); otherwise drop it.
 *   then: events() (EV_REQUEST -> ask the ULP; EV_ESTABLISHED -> start the QP; EV_REJECTED /
 *   EV_TERMINATED -> iwarp_core_qp_llp_closed()), tx() until 0, and DDP segments
 *   (iwarp_core_qp_tx_next) only while may_send_seg().
 */
#ifndef IWARP_SESSION_SESSION_CTL_H
#define IWARP_SESSION_SESSION_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "session/session_ssn.h"
#include "wire/wire.h"
#include "wire/wire_sctp.h"

enum iwarp_sess_role {
    IWARP_SESS_ACTIVE = 0, /* sends the Initiate (RFC 5043 §6.2 "active side") */
    IWARP_SESS_PASSIVE = 1,
};

enum iwarp_sess_state {
    IWARP_SESS_LISTEN = 0,  /* passive: no session yet; waiting for an Initiate */
    IWARP_SESS_INITIATED,   /* active: Initiate queued or sent; waiting for the answer */
    IWARP_SESS_PENDING,     /* passive: Initiate received; the ULP calls accept() or reject() */
    IWARP_SESS_ESTABLISHED, /* DDP segments may flow both ways (§6.2) */
    IWARP_SESS_REJECTED,    /* Reject sent (passive) or received (active): session over (§6.3) */
    IWARP_SESS_TERMINATED,  /* Terminate sent or received, or a failure: session over */
};

/* Events, accumulated until events() reads them. */
enum iwarp_sess_event {
    IWARP_SESS_EV_REQUEST = 0x1,     /* passive: an Initiate awaits accept()/reject() */
    IWARP_SESS_EV_ESTABLISHED = 0x2, /* the session is established */
    IWARP_SESS_EV_REJECTED = 0x4,    /* the session was rejected (by the peer or by us) */
    IWARP_SESS_EV_TERMINATED = 0x8,  /* the session ended: see result.err */
};

/* Initiates awaiting a ULP decision on one association (§6.4: "There MUST be a finite limit");
 * caller-owned, shared by the association's passive machines. */
struct iwarp_sess_pending {
    uint32_t count; /* maintained by the machines; start at 0 */
    uint32_t limit; /* more Initiates than this are answered with a Terminate */
};

/* Configuration, copied by init(). */
struct iwarp_sess_cfg {
    enum iwarp_sess_role role;
    bool enhanced;     /* active: send an Enhanced Initiate (5) with the RFC 6581 word; passive:
                          accept Enhanced Initiates (otherwise they are unknown codes) */
    uint16_t ird, ord; /* active, enhanced: the IRD/ORD offered (<= 0x3FFF; 0x3FFF = no automatic
                          negotiation, RFC 6581 §9.1) */
    uint8_t rtr;       /* passive, enhanced: RTR types (IWARP_MPA_RTR_*) echoed to an A=1
                          Initiate; at least one (RFC 6581 §9.2) */
    const uint8_t *pd; /* active: Initiate private data (copied); may be NULL when pd_len 0 */
    uint16_t pd_len;   /* <= 512, or <= 508 when enhanced (§5.2.3, RFC 6581 §7) */
    struct iwarp_sess_pending *pending; /* passive: required */
};

/* The passive side's decision. */
struct iwarp_sess_answer {
    uint16_t ird, ord;  /* accept, enhanced Initiate: our resources (RFC 6581 §9.1) */
    const uint8_t *pd;  /* private data (copied) */
    uint16_t pd_len;    /* <= 512, or <= 508 for an Enhanced Accept */
    bool enhanced_only; /* reject of an Enhanced Initiate: the unenhanced configuration would have
                           been accepted, so send Enhanced Reject (7) (RFC 6581 §7); else Reject */
};

/* The outcome; each field says when it is valid. */
struct iwarp_sess_result {
    /* The peer's Initiate (passive) or answer (active), once received. */
    bool enhanced;        /* Enhanced Initiate/Accept exchanged (RFC 6581 §7) */
    uint16_t peer_ird;    /* the peer's word as sent (RFC 6581 §9.1 "MUST pass ... to the ULP"); */
    uint16_t peer_ord;    /* 0x3FFF when not enhanced */
    bool peer_p2p;        /* A in the peer's word */
    uint8_t peer_rtr;     /* B/C/D in the peer's word */
    bool enhanced_reject; /* active: the peer sent Enhanced Reject (7): an unenhanced Initiate
                             might be accepted (RFC 6581 §7) */
    const uint8_t *peer_pd; /* the peer's ULP private data (Initiate, Accept or Reject) */
    uint16_t peer_pd_len;
    /* Negotiated (ESTABLISHED); 0x3FFF = left to the ULP (always so without enhancement). */
    uint16_t ird, ord;
    bool p2p;    /* passive: the peer asked for A=1; it may send a zero-length RTR first */
    uint8_t rtr; /* passive with p2p: the RTR types we echoed */
    /* End of the session (REJECTED, TERMINATED). */
    int err;         /* 0 when the ULP ended it (reject(), terminate()) or it is alive;
                        IWARP_ERR_SESSION_REJECTED / _TERMINATED for the peer's Reject /
                        Terminate; IWARP_ERR_SESSION_PENDING for our non-ULP reject (§6.4); the
                        failure otherwise */
    bool term_sent;  /* our Terminate was handed out by tx() */
    bool term_rcvd;  /* the peer's Terminate was received */
    bool term_valid; /* active: the session was accepted and failed on the RFC 6581 negotiation:
                        an RDMAP Terminate with `term` (2/0/6 IRD, 2/0/5 otherwise, RFC 6581 §8)
                        MAY go out as a DDP segment before the session Terminate */
    struct iwarp_term_cause term;
};

/* The machine; embed it and treat the fields as private. */
struct iwarp_sess_ctl {
    struct iwarp_sess_cfg cfg;
    enum iwarp_sess_state state;
    struct iwarp_sess_result res;
    uint32_t events;
    uint16_t rx_next;                 /* DDP-SSN the next received chunk carries */
    uint16_t tx_fc;                   /* queued Initiate/Accept/Reject (0: none) */
    struct iwarp_mpa_ird_ord tx_word; /* its word (fc 5, 6) */
    uint16_t tx_pd_len;
    bool tx_term;    /* a Terminate is queued (after tx_fc) */
    bool tx_any;     /* tx() has handed out a chunk of this session */
    bool in_pending; /* counted in cfg.pending */
    bool lost;       /* lost() was called: nothing more is sent */
    uint8_t tx_pd[IWARP_SCTP_PD_MAX];
    uint8_t peer_pd[IWARP_SCTP_PD_MAX];
};

/* Defaults for role: enhanced, IRD = ORD = 16, RTR types Write and Read (as MPA), no private
 * data, no pending counter (a passive caller must set cfg->pending). */
void iwarp_sess_cfg_default(struct iwarp_sess_cfg *cfg, enum iwarp_sess_role role);

/*
 * Starts a session on the stream: active -> INITIATED with the Initiate queued (RFC 5043 §6.2);
 * passive -> LISTEN.
 * Returns 0, or IWARP_ERR_INVAL for a bad cfg (role, IRD/ORD > 0x3FFF, private data too long or
 * NULL, unknown RTR bits, passive without a pending counter or enhanced without an RTR type).
 */
int iwarp_sess_ctl_init(struct iwarp_sess_ctl *ctl, const struct iwarp_sess_cfg *cfg);

/*
 * A received control chunk payload (PPID 17), in DDP-SSN order.
 * Returns 0 when the chunk was legal (the state and events() say what it did, e.g. the peer's
 * Reject or Terminate), a negative IWARP_ERR_* when it ended the session by our side (a
 * Terminate is queued unless the chunk was itself a Terminate; result.err is the same code), or
 * IWARP_ERR_STATE when the session is already over (the chunk is ignored; a first Terminate
 * from the peer is still noted in result.term_rcvd).
 */
int iwarp_sess_ctl_rx_ctl(struct iwarp_sess_ctl *ctl, const uint8_t *p, size_t len);

/*
 * A received DDP segment chunk's DDP-SSN, in DDP-SSN order.
 * Returns 0: hand the segment to DDP; IWARP_ERR_STATE: the session is over, drop it quietly (e.g.
 * the peer's segments in flight when we terminated); otherwise the failure (drop it; the session
 * is now TERMINATED: IWARP_ERR_SESSION_SEQUENCE for a segment before ESTABLISHED, §6.2, §6.6).
 */
int iwarp_sess_ctl_rx_seg(struct iwarp_sess_ctl *ctl, uint16_t ssn);

/*
 * Passive, in PENDING: accepts (Accept, or Enhanced Accept with the RFC 6581 §9.1 values for an
 * Enhanced Initiate) -> ESTABLISHED. Returns 0, IWARP_ERR_STATE, or IWARP_ERR_INVAL (bad ans).
 */
int iwarp_sess_ctl_accept(struct iwarp_sess_ctl *ctl, const struct iwarp_sess_answer *ans);

/*
 * Passive, in PENDING: rejects at the ULP's direction (§6.3) with Reject (3), or Enhanced Reject
 * (7) when ans->enhanced_only and the Initiate was enhanced -> REJECTED. ans may be NULL (no
 * private data). Returns 0, IWARP_ERR_STATE, or IWARP_ERR_INVAL (bad ans).
 */
int iwarp_sess_ctl_reject(struct iwarp_sess_ctl *ctl, const struct iwarp_sess_answer *ans);

/*
 * Ends the session from our side with a Terminate (§6.2: after any RDMAP Terminate, so call it
 * once the QP has sent its last segment): from INITIATED, PENDING (a non-ULP reject, §6.4) or
 * ESTABLISHED; in TERMINATED it answers the peer's Terminate if ours was not sent. An active
 * Initiate not yet handed out by tx() is withdrawn instead: nothing is sent. -> TERMINATED.
 * Returns 0, or IWARP_ERR_STATE (LISTEN, REJECTED, our Terminate already queued).
 */
int iwarp_sess_ctl_terminate(struct iwarp_sess_ctl *ctl);

/* The association is gone (§11.3): the session ends without sending anything; a pending Initiate
 * leaves the pending count. result.err becomes IWARP_ERR_SCTP_ASSOC_LOST if it was alive. */
void iwarp_sess_ctl_lost(struct iwarp_sess_ctl *ctl);

/*
 * Writes the next queued control chunk payload (send it with PPID 17, unordered) into buf,
 * taking its DDP-SSN from ssn_tx. Returns its length, 0 when nothing is queued,
 * IWARP_ERR_NOSPC (cap too small; nothing taken; 516 always suffices), or IWARP_ERR_BUSY
 * (ssn_tx has 32767 chunks unacknowledged, §10).
 */
iwarp_ssize iwarp_sess_ctl_tx(struct iwarp_sess_ctl *ctl, struct iwarp_sess_ssn_tx *ssn_tx,
                              uint8_t *buf, size_t cap);

/* Whether tx() has a chunk to write. */
bool iwarp_sess_ctl_tx_pending(const struct iwarp_sess_ctl *ctl);

/* Whether DDP segments may be sent now: ESTABLISHED with our Accept already handed out by tx()
 * (it carries the lower DDP-SSN) and no Terminate queued or sent. */
bool iwarp_sess_ctl_may_send_seg(const struct iwarp_sess_ctl *ctl);

/* Returns and clears the accumulated IWARP_SESS_EV_* bits. */
uint32_t iwarp_sess_ctl_events(struct iwarp_sess_ctl *ctl);

enum iwarp_sess_state iwarp_sess_ctl_state(const struct iwarp_sess_ctl *ctl);

/* Borrowed; valid while ctl lives (peer_pd points into ctl). */
const struct iwarp_sess_result *iwarp_sess_ctl_result(const struct iwarp_sess_ctl *ctl);

#endif
