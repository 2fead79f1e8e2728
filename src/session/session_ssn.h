/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP-SSN of one DDP stream over SCTP (RFC 5043 §5.2.1, §6.1, §10), sans-I/O.
 *
 * Send side: a counter. Every chunk of the stream takes the next DDP-SSN, control chunks
 * included; it is 0 at each session start and wraps at 65536. §10: fewer than 32768 chunks may
 * be in flight unacknowledged, so take() refuses the 32768th until acked() reports some.
 *
 * Receive side: SCTP delivers the stream's chunks unordered (U=1, §10), but DDP and the session
 * machine must see them in DDP-SSN order (§6.1 "the normative sequence ... is based upon each
 * Data Chunk's DDP-SSN"). The window holds chunks that arrived early until the gap before them
 * is filled.
 *
 * Ownership: a chunk is an opaque handle {ptr, len} for memory the CALLER owns (in practice the
 * buffer usrsctp handed over). The window never dereferences, copies or frees it: it stores the
 * handle in the caller-provided slot array and gives it back exactly once, through next() (in
 * order) or drain() (teardown). The slot array is caller-owned too and must outlive the window.
 * No allocation; no locking (the caller serialises calls, e.g. under the association's lock).
 *
 * Receive loop of the LLP glue:
 *   r = iwarp_sess_ssn_rx_accept(&rx, ssn, chunk);
 *   if (r == IWARP_SESS_SSN_IN_ORDER) { process(chunk); while (next(&rx, &c)) process(c); }
 *   else if (r == IWARP_SESS_SSN_HELD) { keep the buffer: the window has the handle }
 *   else { IWARP_ERR_SCTP_SSN: not accepted (caller still owns chunk); end the session }
 * At the session's end, drain() hands back every held chunk for the caller to free; reset()
 * then prepares the window for the next session (expected DDP-SSN 0).
 */
#ifndef IWARP_SESSION_SESSION_SSN_H
#define IWARP_SESSION_SESSION_SSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A caller-owned chunk: what the window stores and returns, never dereferenced. */
struct iwarp_sess_chunk {
    void *ptr;
    size_t len;
};

/* One window slot; the caller provides an array of them (contents private). */
struct iwarp_sess_ssn_slot {
    struct iwarp_sess_chunk chunk;
    uint16_t ssn;
    bool used;
};

/* Send counter (fields private). */
struct iwarp_sess_ssn_tx {
    uint16_t next;    /* DDP-SSN of the next chunk */
    uint16_t unacked; /* chunks taken and not yet acked() */
};

/* Starts a session: the next DDP-SSN is 0 (§6.1) and nothing is in flight. */
void iwarp_sess_ssn_tx_init(struct iwarp_sess_ssn_tx *tx);

/*
 * Takes the DDP-SSN for the next chunk of the stream (data or control, §5.2.1).
 * Returns it (0..65535), or IWARP_ERR_BUSY when 32767 chunks are unacknowledged (§10: "refrain
 * from sending more than 32767 Data Chunks for a single stream without acknowledgment").
 */
int iwarp_sess_ssn_tx_take(struct iwarp_sess_ssn_tx *tx);

/* Gives back the DDP-SSN the last take() returned (its chunk is withdrawn unsent; no take()
 * since). */
void iwarp_sess_ssn_tx_untake(struct iwarp_sess_ssn_tx *tx);

/* The DDP-SSN the next take() returns. */
uint16_t iwarp_sess_ssn_tx_peek(const struct iwarp_sess_ssn_tx *tx);

/* Reports n chunks acknowledged by the SCTP peer (clamped to what is in flight). */
void iwarp_sess_ssn_tx_acked(struct iwarp_sess_ssn_tx *tx, uint32_t n);

/* Verdicts of accept() (>= 0); errors are negative. */
enum iwarp_sess_ssn_verdict {
    IWARP_SESS_SSN_IN_ORDER = 0, /* the expected chunk: process it now (not stored), then
                                    drain next() */
    IWARP_SESS_SSN_HELD = 1,     /* early: stored; next() returns it when its turn comes */
};

/* What a DDP-SSN is relative to the window (classify()). */
enum iwarp_sess_ssn_class {
    IWARP_SESS_SSN_EXPECTED = 0, /* the next one in order */
    IWARP_SESS_SSN_AHEAD,        /* within the window after a gap: can be held */
    IWARP_SESS_SSN_DUP_HELD,     /* the same DDP-SSN is already held */
    IWARP_SESS_SSN_DUP_OLD,      /* before the expected one (already handed over): a duplicate
                                    (in 16-bit terms: 32768 or more ahead) */
    IWARP_SESS_SSN_TOO_FAR,      /* 1..32767 ahead but beyond the window */
};

/* Receive window (fields private). */
struct iwarp_sess_ssn_rx {
    struct iwarp_sess_ssn_slot *slot; /* caller-owned, cap entries */
    uint16_t cap;                     /* 1..32767 (§10) */
    uint16_t expected;                /* DDP-SSN of the next chunk to hand over */
    uint16_t base;                    /* slot index of `expected` */
    uint16_t held;                    /* handles stored */
};

/*
 * Sets up an empty window over slots[0..nslots-1] (at most 32767, §10) expecting DDP-SSN 0.
 * The window holds chunks up to nslots ahead of the expected one.
 * Returns 0 or IWARP_ERR_INVAL (NULL, nslots 0 or > 32767).
 */
int iwarp_sess_ssn_rx_init(struct iwarp_sess_ssn_rx *rx, struct iwarp_sess_ssn_slot *slots,
                           uint16_t nslots);

/*
 * Prepares for a new session (§6.1: DDP-SSN 0 again). Returns 0, or IWARP_ERR_BUSY while chunks
 * are held (drain() them first: the caller must get its buffers back).
 */
int iwarp_sess_ssn_rx_reset(struct iwarp_sess_ssn_rx *rx);

/* Where ssn falls relative to the window; changes nothing. */
enum iwarp_sess_ssn_class iwarp_sess_ssn_rx_classify(const struct iwarp_sess_ssn_rx *rx,
                                                     uint16_t ssn);

/*
 * Offers a received chunk with its DDP-SSN.
 * Returns IWARP_SESS_SSN_IN_ORDER (the window moved past it; the caller processes the chunk
 * now, then calls next() until it returns false), IWARP_SESS_SSN_HELD (the window keeps the
 * handle), or IWARP_ERR_SCTP_SSN for a duplicate or a DDP-SSN too far ahead (§6.1 no gaps and
 * no repeats; §10: an invalid DDP-SSN MAY terminate the stream; the window is unchanged and the
 * caller keeps the chunk).
 */
int iwarp_sess_ssn_rx_accept(struct iwarp_sess_ssn_rx *rx, uint16_t ssn,
                             struct iwarp_sess_chunk chunk);

/* Pops the held chunk whose turn it now is into *out. Returns false when the next DDP-SSN has
 * not arrived (a gap waits; nothing times out here). */
bool iwarp_sess_ssn_rx_next(struct iwarp_sess_ssn_rx *rx, struct iwarp_sess_chunk *out);

/* Teardown: pops any held chunk (ascending DDP-SSN, gaps skipped) into *out; the window moves
 * past it, so only reset() makes sense afterwards. Returns false when none is left. */
bool iwarp_sess_ssn_rx_drain(struct iwarp_sess_ssn_rx *rx, struct iwarp_sess_chunk *out);

/* The DDP-SSN the window expects next; the number of chunks it holds. */
uint16_t iwarp_sess_ssn_rx_expected(const struct iwarp_sess_ssn_rx *rx);
uint16_t iwarp_sess_ssn_rx_held(const struct iwarp_sess_ssn_rx *rx);

#endif
