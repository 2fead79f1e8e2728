/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA receive deframer (RFC 5044 §4-§6), sans-I/O: turns the byte stream of Full Operation,
 * arriving in pieces of any size (down to one octet), into FPDUs.
 *
 * Feed it what the LLP received; each call consumes octets up to the next event and says how many
 * it consumed, so the caller loops until its buffer is used up:
 *
 *     while (len > 0) {
 *         iwarp_ssize n = iwarp_mpa_rx_feed(&rx, data, len, &ev);
 *         if (n < 0) -> send Terminate with iwarp_mpa_rx_term_cause(n), stop reading
 *         data += n; len -= n;
 *         switch (ev.kind) { NONE: nothing yet; ULPDU: ev.data/ev.len at ev.ulpdu_off; FPDU: done }
 *     }
 *
 * Events, in stream order, for each FPDU: one or more IWARP_MPA_RX_EV_ULPDU spans covering the
 * ULPDU exactly once in increasing offset order (markers, ULPDU_Length, pad and CRC removed), then
 * one IWARP_MPA_RX_EV_FPDU after the last CRC octet. A span points INTO the caller's buffer, so
 * DDP can place it without an intermediate copy.
 *
 * Verification before use (RFC 5044 §6: "An MPA receiver MUST first verify the FPDU before passing
 * the ULPDU to DDP"). With CRC checking on, spans are unverified when they are reported: a
 * corrupted DDP header could steer placement anywhere. The layer above therefore stages them:
 * copy each span to staging[ev.ulpdu_off] (ev.ulpdu_len, known from the first span, sizes the
 * staging buffer; at most the configured max_ulpdu) and hand the staged ULPDU to DDP only on
 * IWARP_MPA_RX_EV_FPDU, which is returned only if the CRC matched. When a single span holds the
 * whole ULPDU (ev.ulpdu_off == 0 && ev.len == ev.ulpdu_len), the common case for a whole FPDU in
 * one receive buffer, the caller may skip the copy and keep the pointer until the FPDU event,
 * provided its buffer stays untouched until then. With CRC off (both sides declined it, RFC 5044
 * §4.4), the ULPDU_Length is the only check and spans may be placed as they come.
 *
 * Errors are sticky: after a negative return every later call returns the same error. The
 * IWARP_ERR_* values map to MPA Terminate causes (RFC 5044 §8, layer 2 / EType 0):
 *   IWARP_ERR_FPDU_CRC    0x02 CRC mismatch;
 *   IWARP_ERR_FPDU_MARKER 0x03 a marker whose FPDUPTR does not point at the current FPDU's
 *                              ULPDU_Length (or is not zero between FPDUs). RFC 5044 §8 reports
 *                              code 3 "in the event that the CRC is valid": with CRC on, the
 *                              error is held until the FPDU's CRC has been checked, and a CRC
 *                              mismatch is reported instead;
 *   IWARP_ERR_FPDU_LEN    0x03 ULPDU_Length zero or over the configured maximum: the FPDU cannot
 *                              be delimited, so its CRC cannot be found (RFC 5044 §8 has no
 *                              closer code than the marker/ULPDU_Length disagreement).
 * Markers cannot fall inside the ULPDU_Length or CRC fields: positions are 4-aligned (see
 * mpa_frame.h), so the only marker error is a wrong FPDUPTR.
 *
 * Zero-copy receive: iwarp_mpa_rx_want() says how many octets of which part (length field,
 * ULPDU, marker, pad+CRC) come before the deframer's next boundary, so an LLP can recv() ULPDU
 * octets straight into their destination and the rest into a small buffer, then feed them.
 *
 * Stream positions are counted as in mpa_frame.h (from the first octet of the first marker).
 */
#ifndef IWARP_MPA_MPA_DEFRAME_H
#define IWARP_MPA_MPA_DEFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "wire/wire.h"

/* Receive settings, fixed once MPA negotiation has finished (RFC 5044 §7.1). */
struct iwarp_mpa_rx_cfg {
    bool crc; /* check the CRC (RFC 5044 §4.4); false: the field is skipped unchecked (§4.1) */
    bool markers; /* the stream carries markers: we asked for them with M=1 (RFC 5044 §7.1.1) */
    /* Largest ULPDU_Length accepted, 1..64768; 0 means 64768 (RFC 5044 §3). */
    uint32_t max_ulpdu;
    /* Stream position of the first octet fed, which must start an FPDU (or the marker right
     * before it): 0 at the start of Full Operation, where the first marker sits (RFC 5044 §4.3).
     * Must be a multiple of 4. */
    uint32_t stream_pos;
};

/* Which part of the stream an octet belongs to (see iwarp_mpa_rx_want()). */
enum iwarp_mpa_rx_part {
    IWARP_MPA_RX_PART_HDR,     /* the 2-octet ULPDU_Length */
    IWARP_MPA_RX_PART_ULPDU,   /* ULPDU octets */
    IWARP_MPA_RX_PART_MARKER,  /* a 4-octet marker */
    IWARP_MPA_RX_PART_TRAILER, /* PAD and CRC */
    IWARP_MPA_RX_PART_FAILED,  /* the deframer has failed: nothing more is accepted */
};

enum iwarp_mpa_rx_ev_kind {
    IWARP_MPA_RX_EV_NONE,  /* all octets given were consumed, no event yet */
    IWARP_MPA_RX_EV_ULPDU, /* a span of ULPDU octets */
    IWARP_MPA_RX_EV_FPDU,  /* the FPDU is complete (and its CRC matched when checked) */
};

struct iwarp_mpa_rx_ev {
    enum iwarp_mpa_rx_ev_kind kind;
    const uint8_t *data; /* ULPDU: first octet of the span, inside the buffer given to feed */
    size_t len;          /* ULPDU: octets in the span (> 0) */
    uint32_t ulpdu_off;  /* ULPDU: offset of data[0] inside the ULPDU */
    uint32_t ulpdu_len;  /* ULPDU, FPDU: the FPDU's ULPDU_Length */
    bool crc_checked;    /* FPDU: the CRC was checked (and matched); false with CRC off */
    uint32_t fpdu_pos;   /* ULPDU, FPDU: stream position of the FPDU's ULPDU_Length */
};

/* Deframer state. Plain data, embeddable, no fini needed; fields are private. */
struct iwarp_mpa_rx {
    bool crc;
    bool markers;
    uint8_t part;       /* enum iwarp_mpa_rx_part of the next non-marker octet */
    uint8_t got;        /* octets of the ULPDU_Length / CRC field collected so far */
    uint8_t marker_got; /* octets of the current marker collected; 0 when not inside one */
    uint8_t buf[IWARP_MPA_CRC_LEN];       /* ULPDU_Length or CRC octets */
    uint8_t marker[IWARP_MPA_MARKER_LEN]; /* the marker being collected */
    uint32_t max_ulpdu;
    uint32_t pos;       /* stream position of the next octet */
    uint32_t fpdu_pos;  /* stream position of the current FPDU's ULPDU_Length */
    uint32_t ulpdu_len; /* current FPDU's ULPDU_Length */
    uint32_t done;      /* octets of the ULPDU (then of the PAD) consumed */
    uint32_t crc_state; /* CRC32C over the FPDU so far */
    int marker_err;     /* marker error held until the CRC is checked (CRC on), else 0 */
    int err;            /* sticky error, 0 while healthy */
};

/* What the deframer expects next (iwarp_mpa_rx_want()). */
struct iwarp_mpa_rx_want {
    enum iwarp_mpa_rx_part part;
    size_t len;         /* octets of that part before the next boundary; 0 once failed */
    uint32_t ulpdu_off; /* PART_ULPDU: offset inside the ULPDU of the next octet */
    uint32_t ulpdu_len; /* PART_ULPDU, PART_TRAILER: the current FPDU's ULPDU_Length */
};

/*
 * Initialises a deframer at the start of an FPDU.
 * rx: the deframer. cfg: settings (copied).
 * Returns 0, or IWARP_ERR_INVAL if cfg->max_ulpdu is over 64768 or cfg->stream_pos is not a
 * multiple of 4.
 */
int iwarp_mpa_rx_init(struct iwarp_mpa_rx *rx, const struct iwarp_mpa_rx_cfg *cfg);

/*
 * Consumes stream octets up to and including the next event.
 * data/len: the next octets of the stream, in order (data may be NULL when len is 0).
 * ev: receives the event (kind NONE when every octet was consumed without one).
 * Ownership: an ULPDU event's data points into data[]; nothing is kept by the deframer.
 * Returns the number of octets consumed (0..len; less than len only when ev->kind is not NONE),
 * or a negative IWARP_ERR_FPDU_CRC / _FPDU_MARKER / _FPDU_LEN (sticky, see the top of this file).
 */
iwarp_ssize iwarp_mpa_rx_feed(struct iwarp_mpa_rx *rx, const uint8_t *data, size_t len,
                              struct iwarp_mpa_rx_ev *ev);

/*
 * iwarp_mpa_rx_feed's short cut for an FPDU given whole: when the deframer is at an FPDU
 * boundary, markers are off and data[0, len) holds the complete FPDU, checks it at once (the
 * ULPDU_Length, then one CRC pass over the FPDU when CRC is on) and consumes it. ev is then an
 * IWARP_MPA_RX_EV_FPDU event that also carries the whole ULPDU (data, len = ulpdu_len,
 * ulpdu_off 0): what one ULPDU span and the FPDU event would have said, verified before use.
 * Returns the FPDU's length on the wire, or 0 with nothing consumed and ev kind NONE when it
 * does not apply, including a bad FPDU: iwarp_mpa_rx_feed then finds and reports the error.
 */
iwarp_ssize iwarp_mpa_rx_whole(struct iwarp_mpa_rx *rx, const uint8_t *data, size_t len,
                               struct iwarp_mpa_rx_ev *ev);

/* Whether the deframer has failed (sticky): it wants nothing more (iwarp_mpa_rx_want). */
static inline bool iwarp_mpa_rx_failed(const struct iwarp_mpa_rx *rx)
{
    return rx->err != 0;
}

/*
 * Says what the deframer expects next: want->len octets of want->part (>= 1 unless failed).
 * Feeding exactly that many octets is consumed by one iwarp_mpa_rx_feed() call, which reports
 * them as one ULPDU span for PART_ULPDU, and the FPDU event when they end the CRC.
 * Returns want->len.
 */
size_t iwarp_mpa_rx_want(const struct iwarp_mpa_rx *rx, struct iwarp_mpa_rx_want *want);

/*
 * After iwarp_mpa_rx_feed() returned IWARP_ERR_FPDU_CRC: the CRC32C value the failed FPDU should
 * have carried (RFC 5044 §4.4; sent least-significant octet first), for diagnostics such as
 * telling a byte-swapped CRC from a damaged FPDU. Meaningless in any other state.
 */
uint32_t iwarp_mpa_rx_crc_expected(const struct iwarp_mpa_rx *rx);

/*
 * The Terminate cause for a deframer error (RFC 5044 §8: layer LLP, EType MPA): CRC 0x02,
 * marker or length 0x03. Returns false if err is not a deframer error.
 */
bool iwarp_mpa_rx_term_cause(int err, struct iwarp_term_cause *cause);

#endif
