/* SPDX-License-Identifier: BSD-2-Clause */
/* MPA receive deframer (RFC 5044 §4-§6): stream octets in pieces of any size -> FPDU events. */
#include "mpa/mpa_deframe.h"

#include <string.h>

#include "iwarp/errors.h"
#include "mpa/mpa_frame.h"
#include "util/bytes.h"
#include "util/crc32c.h"

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static iwarp_ssize fail(struct iwarp_mpa_rx *rx, int err)
{
    rx->err = err;
    rx->part = IWARP_MPA_RX_PART_FAILED;
    return err;
}

/* Octets at p enter the current FPDU's CRC (ULPDU_Length, ULPDU, markers, PAD; RFC 5044 §4.4). */
static void cover(struct iwarp_mpa_rx *rx, const uint8_t *p, size_t n)
{
    if (rx->crc)
        rx->crc_state = iwarp_crc32c_update(rx->crc_state, p, n);
}

/* Whether the next octet belongs to a marker: one starts at every 512th stream octet counted from
 * the first marker (RFC 5044 §4.3). */
static bool in_marker(const struct iwarp_mpa_rx *rx)
{
    return rx->markers &&
           (rx->marker_got > 0 || iwarp_mpa_to_marker(rx->pos) == IWARP_MPA_MARKER_PERIOD);
}

/* A complete marker has been collected; checks its FPDUPTR. Returns 0 or a negative error. */
static int check_marker(struct iwarp_mpa_rx *rx)
{
    uint32_t marker_pos = rx->pos - IWARP_MPA_MARKER_LEN;
    uint32_t expect;
    if (rx->part == IWARP_MPA_RX_PART_HDR && rx->got == 0)
        expect = 0; /* RFC 5044 §4.3: between FPDUs, FPDUPTR is 0 (marker joins the next FPDU) */
    else
        expect = marker_pos - rx->fpdu_pos; /* RFC 5044 §4.3: back-pointer to ULPDU_Length */
    /* RFC 5044 §4.2: the two low bits of FPDUPTR are treated as zero (done by the load). */
    if (iwarp_mpa_marker_fpduptr(rx->marker) == expect)
        return 0;
    /* RFC 5044 §8 code 3 applies "in the event that the CRC is valid": with CRC checking on,
     * hold the error until the CRC decides between code 2 and code 3. */
    if (!rx->crc)
        return IWARP_ERR_FPDU_MARKER;
    if (rx->marker_err == 0)
        rx->marker_err = IWARP_ERR_FPDU_MARKER;
    return 0;
}

/* Consumes up to n marker octets at p. Returns the count consumed or a negative error. */
static iwarp_ssize take_marker(struct iwarp_mpa_rx *rx, const uint8_t *p, size_t n)
{
    n = min_size(n, IWARP_MPA_MARKER_LEN - rx->marker_got);
    memcpy(rx->marker + rx->marker_got, p, n);
    /* RFC 5044 §4.3: markers are CRC-covered by the FPDU containing them; one right before a
     * ULPDU_Length belongs to that next FPDU (§4.4 rule 2), one right after a PAD to this one. */
    cover(rx, p, n);
    rx->marker_got = (uint8_t)(rx->marker_got + n);
    rx->pos += (uint32_t)n;
    if (rx->marker_got == IWARP_MPA_MARKER_LEN) {
        rx->marker_got = 0;
        int rc = check_marker(rx);
        if (rc < 0)
            return rc;
    }
    return (iwarp_ssize)n;
}

/* RFC 5044 §3: a ULPDU has 1..64768 octets (we accept up to the configured maximum); §6: the
 * ULPDU_Length is what delimits the FPDU, so a bad one is fatal at once. */
static bool ulpdu_len_ok(const struct iwarp_mpa_rx *rx, uint32_t len)
{
    return len != 0 && len <= rx->max_ulpdu;
}

/* Consumes up to n ULPDU_Length octets at p. Returns the count consumed or a negative error. */
static iwarp_ssize take_hdr(struct iwarp_mpa_rx *rx, const uint8_t *p, size_t n)
{
    if (rx->got == 0)
        rx->fpdu_pos = rx->pos;
    n = min_size(n, IWARP_MPA_LEN_FIELD - rx->got);
    memcpy(rx->buf + rx->got, p, n);
    cover(rx, p, n);
    rx->got = (uint8_t)(rx->got + n);
    rx->pos += (uint32_t)n;
    if (rx->got == IWARP_MPA_LEN_FIELD) {
        uint32_t len = iwarp_load_be16(rx->buf);
        if (!ulpdu_len_ok(rx, len))
            return IWARP_ERR_FPDU_LEN;
        rx->ulpdu_len = len;
        rx->got = 0;
        rx->done = 0;
        rx->part = IWARP_MPA_RX_PART_ULPDU;
    }
    return (iwarp_ssize)n;
}

/* Consumes up to n PAD and CRC octets at p; fills ev at the end of the FPDU.
 * Returns the count consumed or a negative error. */
static iwarp_ssize take_trailer(struct iwarp_mpa_rx *rx, const uint8_t *p, size_t n,
                                struct iwarp_mpa_rx_ev *ev)
{
    uint32_t pad = iwarp_mpa_pad_len(rx->ulpdu_len);
    if (rx->done < pad) {
        /* RFC 5044 §4.1: PAD octets are ignored on receive, except for the CRC. */
        n = min_size(n, pad - rx->done);
        cover(rx, p, n);
        rx->done += (uint32_t)n;
        rx->pos += (uint32_t)n;
        return (iwarp_ssize)n;
    }
    n = min_size(n, IWARP_MPA_CRC_LEN - rx->got);
    memcpy(rx->buf + rx->got, p, n);
    rx->got = (uint8_t)(rx->got + n);
    rx->pos += (uint32_t)n;
    if (rx->got < IWARP_MPA_CRC_LEN)
        return (iwarp_ssize)n;

    /* RFC 5044 §4.4: the CRC32C travels least-significant octet first; §4.1: with CRC off the
     * field may hold anything and MUST NOT be checked. */
    if (rx->crc && iwarp_crc32c_final(rx->crc_state) != iwarp_load_le32(rx->buf))
        return IWARP_ERR_FPDU_CRC;
    if (rx->marker_err != 0)
        return rx->marker_err; /* RFC 5044 §8 code 3, now that the CRC is known to be valid */
    ev->kind = IWARP_MPA_RX_EV_FPDU;
    ev->ulpdu_len = rx->ulpdu_len;
    ev->crc_checked = rx->crc;
    ev->fpdu_pos = rx->fpdu_pos;
    rx->part = IWARP_MPA_RX_PART_HDR;
    rx->got = 0;
    rx->done = 0;
    rx->crc_state = IWARP_CRC32C_INIT;
    return (iwarp_ssize)n;
}

int iwarp_mpa_rx_init(struct iwarp_mpa_rx *rx, const struct iwarp_mpa_rx_cfg *cfg)
{
    /* RFC 5044 §3: no ULPDU exceeds 64768 octets. */
    if (cfg->max_ulpdu > IWARP_MPA_MULPDU_MAX)
        return IWARP_ERR_INVAL;
    /* RFC 5044 §4.3: FPDUs and markers are multiples of 4 octets from the first marker on. */
    if (cfg->stream_pos & 3u)
        return IWARP_ERR_INVAL;
    memset(rx, 0, sizeof *rx);
    rx->crc = cfg->crc;
    rx->markers = cfg->markers;
    rx->max_ulpdu = cfg->max_ulpdu ? cfg->max_ulpdu : IWARP_MPA_MULPDU_MAX;
    rx->part = IWARP_MPA_RX_PART_HDR;
    rx->pos = cfg->stream_pos;
    rx->crc_state = IWARP_CRC32C_INIT;
    return 0;
}

iwarp_ssize iwarp_mpa_rx_feed(struct iwarp_mpa_rx *rx, const uint8_t *data, size_t len,
                              struct iwarp_mpa_rx_ev *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = IWARP_MPA_RX_EV_NONE;
    if (rx->err != 0)
        return rx->err;

    size_t used = 0;
    while (used < len) {
        const uint8_t *p = data + used;
        size_t avail = len - used;
        iwarp_ssize n;
        if (in_marker(rx)) {
            n = take_marker(rx, p, avail);
        } else {
            if (rx->markers) /* stop at the next marker */
                avail = min_size(avail, iwarp_mpa_to_marker(rx->pos));
            switch ((enum iwarp_mpa_rx_part)rx->part) {
            case IWARP_MPA_RX_PART_HDR:
                n = take_hdr(rx, p, avail);
                break;
            case IWARP_MPA_RX_PART_ULPDU:
                n = (iwarp_ssize)min_size(avail, rx->ulpdu_len - rx->done);
                cover(rx, p, (size_t)n);
                ev->kind = IWARP_MPA_RX_EV_ULPDU;
                ev->data = p;
                ev->len = (size_t)n;
                ev->ulpdu_off = rx->done;
                ev->ulpdu_len = rx->ulpdu_len;
                ev->fpdu_pos = rx->fpdu_pos;
                rx->done += (uint32_t)n;
                rx->pos += (uint32_t)n;
                if (rx->done == rx->ulpdu_len) {
                    rx->part = IWARP_MPA_RX_PART_TRAILER;
                    rx->done = 0;
                }
                break;
            case IWARP_MPA_RX_PART_TRAILER:
                n = take_trailer(rx, p, avail, ev);
                break;
            default:
                n = IWARP_ERR_STATE; /* unreachable: a failed deframer returned above */
                break;
            }
        }
        if (n < 0)
            return fail(rx, (int)n);
        used += (size_t)n;
        if (ev->kind != IWARP_MPA_RX_EV_NONE)
            break;
    }
    return (iwarp_ssize)used;
}

iwarp_ssize iwarp_mpa_rx_whole(struct iwarp_mpa_rx *rx, const uint8_t *data, size_t len,
                               struct iwarp_mpa_rx_ev *ev)
{
    ev->kind = IWARP_MPA_RX_EV_NONE;
    if (rx->part != IWARP_MPA_RX_PART_HDR || rx->got != 0 || rx->markers || rx->err != 0 ||
        len < IWARP_MPA_FPDU_OVERHEAD + 1u)
        return 0;
    uint32_t ulpdu_len = iwarp_load_be16(data);
    if (!ulpdu_len_ok(rx, ulpdu_len))
        return 0;
    uint32_t wire = iwarp_mpa_fpdu_wire_len(rx->pos, ulpdu_len, false);
    if (len < wire)
        return 0;
    /* RFC 5044 §6: verified before the ULPDU is passed on; §4.4: the CRC covers all but itself
     * and is sent low octet first. */
    size_t covered = wire - IWARP_MPA_CRC_LEN;
    if (rx->crc && iwarp_crc32c(data, covered) != iwarp_load_le32(data + covered))
        return 0;
    *ev = (struct iwarp_mpa_rx_ev){.kind = IWARP_MPA_RX_EV_FPDU,
                                   .data = data + IWARP_MPA_LEN_FIELD,
                                   .len = ulpdu_len,
                                   .ulpdu_len = ulpdu_len,
                                   .crc_checked = rx->crc,
                                   .fpdu_pos = rx->pos};
    rx->fpdu_pos = rx->pos;
    rx->pos += wire;
    return (iwarp_ssize)wire;
}

size_t iwarp_mpa_rx_want(const struct iwarp_mpa_rx *rx, struct iwarp_mpa_rx_want *want)
{
    memset(want, 0, sizeof *want);
    want->part = (enum iwarp_mpa_rx_part)rx->part;
    if (iwarp_mpa_rx_failed(rx)) {
        want->part = IWARP_MPA_RX_PART_FAILED;
        return 0;
    }
    if (in_marker(rx)) {
        want->part = IWARP_MPA_RX_PART_MARKER;
        want->len = IWARP_MPA_MARKER_LEN - rx->marker_got;
        return want->len;
    }
    size_t len;
    switch (want->part) {
    case IWARP_MPA_RX_PART_HDR:
        len = IWARP_MPA_LEN_FIELD - rx->got;
        break;
    case IWARP_MPA_RX_PART_ULPDU:
        len = rx->ulpdu_len - rx->done;
        want->ulpdu_off = rx->done;
        want->ulpdu_len = rx->ulpdu_len;
        break;
    default: /* IWARP_MPA_RX_PART_TRAILER */
        len = iwarp_mpa_pad_len(rx->ulpdu_len) - rx->done + IWARP_MPA_CRC_LEN - rx->got;
        want->ulpdu_len = rx->ulpdu_len;
        break;
    }
    if (rx->markers)
        len = min_size(len, iwarp_mpa_to_marker(rx->pos));
    want->len = len;
    return len;
}

uint32_t iwarp_mpa_rx_crc_expected(const struct iwarp_mpa_rx *rx)
{
    /* take_trailer() leaves the running CRC as it was when the comparison failed */
    return iwarp_crc32c_final(rx->crc_state);
}

bool iwarp_mpa_rx_term_cause(int err, struct iwarp_term_cause *cause)
{
    uint8_t ecode;
    switch (err) {
    case IWARP_ERR_FPDU_CRC:
        ecode = IWARP_TERM_MPA_CRC; /* RFC 5044 §8 code 2 */
        break;
    case IWARP_ERR_FPDU_MARKER:
    case IWARP_ERR_FPDU_LEN:
        ecode = IWARP_TERM_MPA_MARKER; /* RFC 5044 §8 code 3 */
        break;
    default:
        return false;
    }
    cause->layer = IWARP_TERM_LAYER_LLP;
    cause->etype = IWARP_TERM_LLP_ETYPE_MPA;
    cause->ecode = ecode;
    return true;
}
