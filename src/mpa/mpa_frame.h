/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA transmit framing (RFC 5044 §4): one ULPDU (a DDP segment) becomes one FPDU, described as
 * iovecs ready for writev()/sendmsg():
 *
 *   [Marker?] ULPDU_Length(2, BE) | ULPDU | PAD(0..3) | CRC(4, CRC32C least-significant octet
 * first)
 *
 * with 4-octet markers `Reserved(16) | FPDUPTR(16)` inserted wherever the stream reaches a
 * multiple of 512 octets counted from the first marker (RFC 5044 §4.2-4.3). The caller's ULPDU
 * (DDP header and payload) is referenced in place, never copied; the few octets the framer owns
 * (length field, markers, pad and CRC) live in a caller-provided struct iwarp_mpa_tx_scratch, one
 * per FPDU in flight. MPA knows nothing of DDP: the ULPDU is opaque.
 *
 * Stream positions: every position here counts octets of the TCP stream from the first octet of
 * the first marker of Full Operation ("SeqStart", RFC 5044 §4.3), modulo 2^32 (a multiple of 512,
 * so wrap-around keeps the marker grid). With markers off the position is only bookkeeping.
 * Positions must be multiples of 4: FPDUs and markers are multiples of 4 octets and the first
 * marker starts the grid, so every FPDU starts 4-aligned (RFC 5044 §4.3: the FPDUPTR's two low
 * bits are zero). As a consequence a marker never splits the ULPDU_Length or the CRC field; it can
 * fall right before the ULPDU_Length (FPDUPTR 0, part of this FPDU and of its CRC), inside the
 * ULPDU (between ULPDU octets 4k+1 and 4k+2), or right after the PAD, before the CRC.
 *
 * Sizing (RFC 5044 §3, §4.5): DDP asks iwarp_mpa_mulpdu() for the largest ULPDU that keeps an
 * FPDU within one TCP segment and posts ULPDUs of at most that size; the framer rejects a ULPDU
 * over 64768 octets (or empty) with IWARP_ERR_FPDU_LEN.
 *
 * The helpers below the framer (pad length, marker layout) are shared with the deframer.
 */
#ifndef IWARP_MPA_MPA_FRAME_H
#define IWARP_MPA_MPA_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iwarp/common.h"
#include "wire/wire.h"

/* FPDU overhead without markers: ULPDU_Length + CRC (RFC 5044 §4.1: "a minimum of 6 octets"). */
#define IWARP_MPA_FPDU_OVERHEAD (IWARP_MPA_LEN_FIELD + IWARP_MPA_CRC_LEN)

/* RFC 5044 §4.2: receivers MUST treat the two low bits of FPDUPTR as zero. */
#define IWARP_MPA_FPDUPTR_MASK 0xFFFCu

/*
 * The most markers an FPDU we frame contains (RFC 5044 §4.3), counting one right before its
 * ULPDU_Length. An implementation MAY adjust MULPDU (§4.5) and need not take a ULPDU over it
 * (§3): with markers on, ours is at most IWARP_MPA_MARKED_ULPDU_MAX octets, the largest that holds
 * no more than this many markers wherever it starts, so that the iovecs and scratch of a
 * marker-bearing FPDU, which every TX slot of a connection has room for, stay small (an FPDU of
 * 64768 octets could hold 128: 4,572 octets of room per slot, for markers almost no connection
 * uses). 18 keep a jumbo frame's MULPDU whole (EMSS 8948: 8870 octets); only loopback-sized
 * segments are cut. Both checked by test_mpa_frame.
 */
#define IWARP_MPA_TX_MAX_MARKERS   18u
#define IWARP_MPA_MARKED_ULPDU_MAX 9138u

/*
 * Upper bound on the iovecs iwarp_mpa_tx_frame() produces for a ULPDU given as n iovecs: the
 * length field, the trailer, the input pieces, and per marker the marker plus one split piece.
 */
#define IWARP_MPA_TX_IOV_MAX(n) ((size_t)(n) + 2u + 2u * IWARP_MPA_TX_MAX_MARKERS)

/* Transmit settings, fixed once MPA negotiation has finished (RFC 5044 §7.1). */
struct iwarp_mpa_tx_cfg {
    bool crc;     /* compute the CRC32C (RFC 5044 §4.4); false: send a zero CRC field (§4.1) */
    bool markers; /* insert markers: the peer asked for them with M=1 (RFC 5044 §4.3, §7.1.1) */
    /* Stream position of the next octet this framer emits (see the top of this file): 0 at the
     * start of Full Operation, so that the first FPDU starts with the first marker. Must be a
     * multiple of 4. */
    uint32_t stream_pos;
};

/* Framer state: settings plus the stream position. Plain data, embeddable, no fini needed. */
struct iwarp_mpa_tx {
    bool crc;
    bool markers;
    uint32_t pos; /* stream position of the next FPDU's first octet */
};

/*
 * A small FPDU (without markers, at most this many octets on the wire) is laid out whole in its
 * scratch: ULPDU_Length, the ULPDU copied, PAD and CRC, computed in one pass, as one iovec. For
 * a 64 B Send that is one copy and one CRC call instead of four pieces (each a CRC call) that the
 * LLP would gather into one buffer for its write anyway (docs/design.md, "One buffer for small
 * FPDUs"). 256 octets: a ULPDU of up to 250, which covers perftest's inline sizes.
 */
#define IWARP_MPA_TX_SMALL_FPDU 256u

/* Framer-owned octets of one FPDU; the iovecs of that FPDU point into it. */
struct iwarp_mpa_tx_scratch {
    uint8_t fpdu[IWARP_MPA_TX_SMALL_FPDU];  /* a small FPDU, whole (iwarp_mpa_tx_small) */
    uint8_t len[IWARP_MPA_LEN_FIELD];       /* ULPDU_Length, BE */
    uint8_t trailer[3 + IWARP_MPA_CRC_LEN]; /* PAD (zeros) then CRC */
    uint8_t markers[IWARP_MPA_TX_MAX_MARKERS][IWARP_MPA_MARKER_LEN]; /* in stream order */
};

/*
 * Initialises a framer.
 * tx: the framer to set up. cfg: settings (copied).
 * Returns 0, or IWARP_ERR_INVAL if cfg->stream_pos is not a multiple of 4.
 */
int iwarp_mpa_tx_init(struct iwarp_mpa_tx *tx, const struct iwarp_mpa_tx_cfg *cfg);

/*
 * Frames one ULPDU as one FPDU and advances the framer's stream position past it.
 *
 * ulpdu/nulpdu: the ULPDU (DDP header and payload) as iovecs, in order; empty entries are
 *   skipped. With CRC on, the ULPDU octets are read once to compute the CRC.
 * scratch: receives the length field, markers, pad and CRC of this FPDU.
 * out/out_cap: receives the FPDU's iovecs, in wire order, none empty. IWARP_MPA_TX_IOV_MAX(nulpdu)
 *   entries always suffice.
 * Ownership: out[] points into scratch and into the caller's ULPDU buffers; both must stay
 *   valid and unchanged until the FPDU has been handed to the LLP (fully written). Nothing is
 *   kept by the framer.
 * Returns the number of iovecs written to out (> 0), or
 *   IWARP_ERR_FPDU_LEN: the ULPDU is empty or over 64768 octets (RFC 5044 §3), or with
 *                       markers over IWARP_MPA_MARKED_ULPDU_MAX;
 *   IWARP_ERR_NOSPC: out_cap is too small.
 * On error the framer is unchanged (the FPDU was not framed) and may be used again.
 */
iwarp_ssize iwarp_mpa_tx_frame(struct iwarp_mpa_tx *tx, const struct iovec *ulpdu, size_t nulpdu,
                               struct iwarp_mpa_tx_scratch *scratch, struct iovec *out,
                               size_t out_cap);

/*
 * iwarp_mpa_tx_frame(), with the ULPDU's iovecs from index from on (the payload) copied into
 * stage as they are framed: each piece is copied (util/copy.h, counted) and the CRC is computed
 * over the copy while it is hot in cache, so the source is read once, and the FPDU's iovecs
 * refer to the copy. The octets sent are then exactly the octets the CRC covered, whatever
 * happens to the source afterwards (a Read Response's Data Source, which its application may
 * rewrite at any time: RFC 5040 orders no local write against a remote Read).
 *
 * from: the first ulpdu index to stage (nulpdu or more: none; then stage may be NULL).
 * stage/stage_cap: where the staged octets go, contiguous, in ULPDU order.
 * Ownership: out[] points into scratch, into the caller's unstaged ULPDU buffers and into
 *   stage; all must stay valid (and stage unchanged) until the FPDU has been fully written.
 * Returns as iwarp_mpa_tx_frame(), and IWARP_ERR_NOSPC when the staged octets exceed
 *   stage_cap. With CRC off the copy is made all the same (the caller decides when to stage).
 */
iwarp_ssize iwarp_mpa_tx_frame_staged(struct iwarp_mpa_tx *tx, const struct iovec *ulpdu,
                                      size_t nulpdu, size_t from, uint8_t *stage, size_t stage_cap,
                                      struct iwarp_mpa_tx_scratch *scratch, struct iovec *out,
                                      size_t out_cap);

/*
 * Whether a ULPDU of ulpdu_len octets makes a small FPDU (IWARP_MPA_TX_SMALL_FPDU): framed as
 * one iovec into its scratch, a copy of the whole ULPDU that the CRC covered. Such an FPDU
 * uses no stage (iwarp_mpa_tx_frame_staged ignores it): its scratch is the staged copy.
 */
bool iwarp_mpa_tx_small(const struct iwarp_mpa_tx *tx, size_t ulpdu_len);

/*
 * The largest ULPDU for an FPDU that fits an empty TCP segment of emss octets (RFC 5044 §4.5):
 * EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4) with markers, EMSS - (6 + EMSS mod 4) without,
 * kept within 128..64768 (RFC 5044 §3, §4.5), and with markers within
 * IWARP_MPA_MARKED_ULPDU_MAX. Examples: EMSS 1448 -> 1442; 1460 -> 1454 (1442 with markers);
 * 65483 -> 64768 (9138 with markers).
 */
uint32_t iwarp_mpa_mulpdu(uint32_t emss, bool markers);

/*
 * Octets on the wire of an FPDU carrying a ULPDU of ulpdu_len octets whose first octet (its
 * leading marker, if one falls there) is at stream position stream_pos (a multiple of 4):
 * 2 + ulpdu_len + pad + 4, plus 4 per marker that falls inside it (markers true).
 */
uint32_t iwarp_mpa_fpdu_wire_len(uint32_t stream_pos, uint32_t ulpdu_len, bool markers);

/* PAD octets after a ULPDU of ulpdu_len octets: the FPDU is a multiple of 4 (RFC 5044 §4.1). */
static inline uint32_t iwarp_mpa_pad_len(uint32_t ulpdu_len)
{
    return (4u - ((IWARP_MPA_LEN_FIELD + ulpdu_len) & 3u)) & 3u;
}

/* Octets from stream position pos to the next marker (1..512; 512 when a marker starts at pos). */
static inline uint32_t iwarp_mpa_to_marker(uint32_t pos)
{
    return IWARP_MPA_MARKER_PERIOD - (pos & (IWARP_MPA_MARKER_PERIOD - 1u));
}

/* Writes a marker with the given FPDUPTR: Reserved (zero on send) then FPDUPTR (RFC 5044 §4.2). */
static inline void iwarp_mpa_marker_store(uint8_t *p, uint16_t fpduptr)
{
    p[0] = 0;
    p[1] = 0;
    p[2] = (uint8_t)(fpduptr >> 8);
    p[3] = (uint8_t)fpduptr;
}

/* A received marker's FPDUPTR with its two low bits treated as zero (RFC 5044 §4.2); the
 * Reserved field is ignored. */
static inline uint16_t iwarp_mpa_marker_fpduptr(const uint8_t *p)
{
    return (uint16_t)(((uint32_t)p[2] << 8 | (uint32_t)p[3]) & IWARP_MPA_FPDUPTR_MASK);
}

#endif
