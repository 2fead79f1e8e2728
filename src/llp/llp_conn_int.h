/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the MPA connection's files share (llp_conn.c: negotiation and the entry points of state,
 * time and close; llp_conn_rx.c: receive; llp_conn_tx.c: framing and transmit). Not used
 * outside src/llp.
 *
 * The bounce buffer (IWARP_LLP_CONN_BOUNCE = IWARP_LLP_CONN_RX_FPDUS (4) x 64768 + 16 + 1024
 * = 260,112 octets, caller-owned), cut into the regions of struct iwarp_llp_conn_bounce:
 *
 *   0                                  64236      64768                             260112
 *   |<----------- stage (at least the largest ULPDU) ------>|                            |
 *   |<-- fpdu.staged -->|<-------------------- read-ahead window ----------------------->| end
 *   |<- neg_in (532) ->|               |<- neg_out (532)->|<--------- scratch --------->|
 *
 *   stage    full operation: the current FPDU's first fpdu.staged ULPDU octets at their
 *            ULPDU offsets (contiguous, markers removed: the whole ULPDU, or only its headers
 *            when the payload is placed directly), at fpdu.seg: the start of the buffer, or
 *            (staged whole) wherever in the window its first octets were read;
 *   window   [fpdu.seg + fpdu.staged, end): where reads ahead land (below);
 *   neg_in   negotiation: the peer's Request/Reply, read exactly to its end so that no octet
 *            of full operation is read into it;
 *   neg_out  our own Request/Reply/Reject while it is being written (neg_out_len/_off). Full
 *            operation reads nothing while it is pending (the initiator cannot send its first
 *            FPDU before our whole Reply arrived, so this only ever stalls a peer that breaks
 *            RFC 5044 §7.1.2 rule 4);
 *   scratch  full operation, exact reads: a marker inside a large ULPDU; once receive
 *            stopped, every octet still read (and dropped).
 *
 * Where each read goes (llp_conn_rx.c, fpdu_land): a read either READS AHEAD into the window,
 * so that one recv() brings in the rest of the current FPDU and any number of following ones,
 * or is EXACT: it stops at the deframer's next boundary and lands where the octets belong.
 * Reads are exact only inside a ULPDU placed directly (CRC off) with more than COPY_MAX octets
 * still to come (a large Write, Read Response or Send): its octets are read straight into their
 * destination, and a marker inside it into scratch. Everything else reads ahead: FPDU
 * boundaries, length fields, trailers, small ULPDUs, the last COPY_MAX octets of large ones,
 * and every ULPDU staged whole (CRC on: verified before placement, RFC 5044 §6). How far:
 *   - a large ULPDU staged whole: the rest of its FPDU and as many whole FPDUs behind it as the
 *     window holds, taken to be as long as this one (a large message's FPDUs are, but its
 *     last), and RA_SMALL more (staged_span): one read brings up to IWARP_LLP_CONN_RX_FPDUS
 *     FPDUs, and ends a little past a boundary, so that little of a cut FPDU is left to move;
 *   - after a read-ahead that filled its window and ended outside a large ULPDU (a backlog of
 *     small FPDUs: recv.ra_wide): the whole window;
 *   - otherwise RA_SMALL octets past the current FPDU's ULPDU, which bounds what a large FPDU
 *     right behind costs in copies when it is placed directly: at most RA_SMALL + COPY_MAX of
 *     its payload octets go through the window, the rest is placed by the transport. The
 *     largest ULPDU leaves at least RA_SMALL of window behind it, so that the small FPDU that
 *     often follows a full one (a 64 KiB message is FPDUs of 64754 and 782 payload octets at
 *     loopback's EMSS) comes in the same read.
 *
 * Octets in the window are fed to the deframer at once, in place:
 *   - a ULPDU wholly inside the window (no marker in it) is handed to the engine where it lies
 *     at its FPDU's end, after the CRC check (fpdu.seg points at it): no copy beyond the read.
 *   - a ULPDU staged whole that a read's end cuts (in it, or before its trailer) stays where
 *     it is when the whole ULPDU and RA_SMALL more (its PAD and CRC, and a read-ahead) fit from
 *     there (the next read lands behind it), and is moved to the start of the buffer otherwise
 *     (stage_span, settle_in_place);
 *   - other ULPDU spans (split by markers, or the headers of a ULPDU placed directly) are moved
 *     to their ULPDU offset in stage, or, when placed directly, copied to their destination
 *     iovecs.
 *
 * The receive states (recv.state). The deframer (mpa_deframe) consumes the length field,
 * markers, PAD and CRC itself; it reports ULPDU spans and each FPDU's end, which move the
 * state on:
 *
 *        NEG
 *         |  accept (responder); our first FPDU written (initiator, RFC 5044 §7.1.2 rule 4)
 *         v
 *   +--> HDR ---- headers staged, rx_hdr() (place DIRECT or DROPPED) ----> PAYLOAD
 *   |     |                                                                   |
 *   |     | the ULPDU's last octet (staged whole: place STAGED)               | its last octet
 *   |     v                                                                   |
 *   |   TRAILER <-------------------------------------------------------------+
 *   |     |
 *   +-----+  the FPDU's end (CRC checked): the ULPDU is delivered
 *
 *   and from any state to DEAD (iwarp_llp_conn_rx_stop): a deframer error; a failed
 *   negotiation, engine start or first FPDU, or no RTR in time; a Reject; a Terminate the
 *   connection sends; the engine's close or a segment it produced that cannot be framed;
 *   the transport's end.
 *
 *   NEG      the peer's Request/Reply goes to neg_in, read exactly to its end (mpa_negotiate).
 *            An initiator stays here after the Reply until its first FPDU is written: whatever
 *            the responder sends before that is an error the negotiation reports (2/0/0x04);
 *            so is whatever the initiator sends after its Request while the responder's ULP
 *            decides (REQUEST): nothing of it is read later as an FPDU.
 *   HDR      an FPDU starts: the deframer takes its ULPDU_Length, then its first ULPDU octets
 *            are staged (fpdu.place STAGED). When the payload may be placed directly
 *            (direct_ok: CRC off, RFC 5044 §4.4: nothing to verify; the engine running; the
 *            connection not looking at this FPDU itself), only as many as the engine's
 *            rx_hdr_len() asks (RDMAP: the 14-octet tagged header first, which tells T and the
 *            opcode; 18 for a Send; the whole ULPDU for a Read Request, a Terminate and anything
 *            malformed; a DDP-level stream: its DDP header). Then rx_hdr() validates the
 *            segment for its full ULPDU_Length and gives the destination iovecs: PAYLOAD with
 *            place DIRECT, or DROPPED when it refused (a Terminate is queued, or a DDP-level
 *            stream stopped receiving). Otherwise (CRC on, RFC 5044 §6: verified before DDP
 *            sees it; the responder awaiting the initiator's first FPDU; our Read RTR awaiting
 *            its answer) the whole ULPDU is staged, or kept in place in the window.
 *   PAYLOAD  the payload after the headers: DIRECT: exact reads land in fpdu.dst, octets read
 *            ahead are copied there (rx_dst_valid() before each: a destination gone gets
 *            nothing more); DROPPED: read into stage and dropped.
 *   TRAILER  the whole ULPDU is in; the deframer reads PAD and CRC (and markers). Its FPDU
 *            event, returned only for a matching CRC, delivers the ULPDU by fpdu.place:
 *            STAGED: rx_segment() (first the connection's own checks: the responder's first
 *            FPDU, the answer to our Read RTR); DIRECT: rx_payload_done(); DROPPED: nothing.
 *            The next FPDU starts in HDR.
 *   DEAD     nothing more is processed (RFC 5041 §7.1: segments after an error are dropped)
 *            but the transport keeps being read into scratch so that its end is seen.
 * A deframer error (CRC, marker, length: RFC 5044 §8) goes to the engine with the staged
 * headers (or, before the engine runs, to the connection's own Terminate), ends a DIRECT
 * segment with rx_payload_done(), and leads to DEAD.
 */
#ifndef IWARP_LLP_LLP_CONN_INT_H
#define IWARP_LLP_LLP_CONN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "llp/llp_conn.h"
#include "mpa/mpa_negotiate.h"
#include "wire/wire.h"

/* The negotiation frames: the 20-octet header and at most 512 octets of private data. */
#define IWARP_LLP_CONN_NEG_FRAME_MAX (IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX)
/* Where the regions start in the bounce buffer (the drawing above). */
#define IWARP_LLP_CONN_SCRATCH_OFF   IWARP_MPA_MULPDU_MAX
#define IWARP_LLP_CONN_SCRATCH_LEN   (IWARP_LLP_CONN_BOUNCE - IWARP_MPA_MULPDU_MAX)
#define IWARP_LLP_CONN_NEG_OUT_OFF   (IWARP_MPA_MULPDU_MAX - IWARP_LLP_CONN_NEG_FRAME_MAX)

static inline enum iwarp_mpa_neg_state iwarp_llp_conn_neg_state(const struct iwarp_llp_conn *c)
{
    return iwarp_mpa_neg_state(&c->neg);
}

/* The connection is over from MPA's point of view: nothing more is read. */
static inline bool iwarp_llp_conn_finished(const struct iwarp_llp_conn *c)
{
    return c->state == IWARP_LLP_CONN_REJECTED || c->state == IWARP_LLP_CONN_FAILED ||
           c->state == IWARP_LLP_CONN_CLOSE;
}

/* Receive stops for good (-> DEAD): whatever still arrives is read and dropped. */
static inline void iwarp_llp_conn_rx_stop(struct iwarp_llp_conn *c)
{
    c->recv.state = IWARP_LLP_CONN_RX_DEAD;
}

/* Our negotiation frame is still (partly) unwritten. */
static inline bool iwarp_llp_conn_neg_out_pending(const struct iwarp_llp_conn *c)
{
    return c->neg_out_off < c->neg_out_len;
}

/* llp_conn.c: the negotiation failed or a Reject arrived: act as its result says. Returns the
 * negotiation's error. */
int iwarp_llp_conn_neg_failed(struct iwarp_llp_conn *c);

/* llp_conn.c: the initiator's negotiation reached SEND_FIRST: full operation, the engine, the
 * RTR. Returns 0 or the engine's start error (the connection is then FAILED). */
int iwarp_llp_conn_initiator_established(struct iwarp_llp_conn *c, uint64_t now_ns);

/* llp_conn.c: the running connection fails without a Terminate (RFC 5044 §7.1.2, §8: close
 * TCP, no FPDU): the LLP stream is lost to the engine. Returns err. */
int iwarp_llp_conn_started_failed(struct iwarp_llp_conn *c, int err);

/* llp_conn_rx.c: full operation reads FPDUs from now on (NEG -> HDR; any other state stays):
 * the responder has accepted, or the initiator's first FPDU is written. */
void iwarp_llp_conn_rx_begin(struct iwarp_llp_conn *c);

/* llp_conn_rx.c: whether the receive side stands at a message boundary (iwarp_llp_conn_eof):
 * no octet of an unfinished FPDU received, no DDP message left open. */
bool iwarp_llp_conn_rx_at_message_boundary(const struct iwarp_llp_conn *c);

/* llp_conn_tx.c: whether the initiator's first FPDU is still held (first_fpdu_delay_ns); once
 * now_ns reaches first_fpdu_at, clears it and returns false. */
bool iwarp_llp_conn_tx_gated(struct iwarp_llp_conn *c, uint64_t now_ns);

/* llp_conn_tx.c: queue a Terminate the connection itself sends (no engine running yet: RFC
 * 6581 §8, §9 after an ACT_TERMINATE negotiation failure, or a deframer error before the
 * engine started), with the offending segment seg[0, len) when there is one (RFC 5040 §4.8
 * Figure 10; NULL: none). Nothing follows it; the connection is FAILED with err and closes
 * once it is written. Ownership: seg is read during the call. */
void iwarp_llp_conn_terminate(struct iwarp_llp_conn *c, int err, struct iwarp_term_cause cause,
                              const uint8_t *seg, size_t len);

#endif
