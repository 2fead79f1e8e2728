/* SPDX-License-Identifier: BSD-2-Clause */
/* MPA transmit framing (RFC 5044 §4): ULPDU -> FPDU iovecs with markers, pad and CRC. */
#include "mpa/mpa_frame.h"

#include "iwarp/errors.h"
#include "util/bytes.h"
#include "util/copy.h"
#include "util/crc32c.h"

/* Staged octets are copied and CRC'd this many at a time, so the CRC reads the copy while it
 * is still in L1 (the source read once, the copy twice, both from cache). */
#define STAGE_CHUNK 8192u

/* One FPDU being laid out: the output iovec list, the running CRC and the stream position. */
struct emitter {
    bool crc;
    bool markers;
    uint32_t pos;     /* stream position of the next octet emitted */
    uint32_t hdr_pos; /* stream position of this FPDU's ULPDU_Length */
    uint32_t crc_state;
    struct iwarp_mpa_tx_scratch *scratch;
    unsigned nmarkers;
    struct iovec *out;
    size_t nout;
    size_t cap;
};

static int append(struct emitter *e, const uint8_t *p, size_t len)
{
    if (e->nout > 0) {
        struct iovec *last = &e->out[e->nout - 1];
        if ((const uint8_t *)last->iov_base + last->iov_len == p) {
            last->iov_len += len; /* contiguous with the previous piece: one iovec */
            return 0;
        }
    }
    if (e->nout == e->cap)
        return IWARP_ERR_NOSPC;
    /* iovec has a non-const base; the LLP only reads it (writev). */
    e->out[e->nout].iov_base = (void *)(uintptr_t)p;
    e->out[e->nout].iov_len = len;
    e->nout++;
    return 0;
}

/* Emits a marker at the current position (a multiple of 512 from SeqStart). */
static int put_marker(struct emitter *e, uint16_t fpduptr)
{
    uint8_t *m = e->scratch->markers[e->nmarkers++];
    /* RFC 5044 §4.3: FPDUPTR = octets from the ULPDU_Length's first octet to the marker's, or 0
     * for a marker that falls between FPDUs (then it belongs to the following FPDU). */
    iwarp_mpa_marker_store(m, fpduptr);
    /* RFC 5044 §4.3, §4.4: every marker is covered by its containing FPDU's CRC. */
    if (e->crc)
        e->crc_state = iwarp_crc32c_update(e->crc_state, m, IWARP_MPA_MARKER_LEN);
    e->pos += IWARP_MPA_MARKER_LEN;
    return append(e, m, IWARP_MPA_MARKER_LEN);
}

/* Emits len octets at p, inserting a marker wherever the stream reaches the 512-octet grid
 * (RFC 5044 §4.3); covered says whether the octets enter the CRC. dst (NULL: none) receives a
 * copy of the octets, and the FPDU then refers to (and the CRC covers) the copy. */
static int put(struct emitter *e, const uint8_t *p, size_t len, bool covered, uint8_t *dst)
{
    while (len > 0) {
        size_t chunk = len;
        if (e->markers) {
            uint32_t to_marker = iwarp_mpa_to_marker(e->pos);
            if (to_marker == IWARP_MPA_MARKER_PERIOD) {
                int rc = put_marker(e, (uint16_t)(e->pos - e->hdr_pos));
                if (rc < 0)
                    return rc;
                to_marker = IWARP_MPA_MARKER_PERIOD - IWARP_MPA_MARKER_LEN;
            }
            if (chunk > to_marker)
                chunk = to_marker;
        }
        const uint8_t *q = p;
        if (dst) {
            if (chunk > STAGE_CHUNK)
                chunk = STAGE_CHUNK;
            iwarp_copy(dst, p, chunk);
            q = dst;
            dst += chunk;
        }
        int rc = append(e, q, chunk);
        if (rc < 0)
            return rc;
        if (covered && e->crc)
            e->crc_state = iwarp_crc32c_update(e->crc_state, q, chunk);
        e->pos += (uint32_t)chunk;
        p += chunk;
        len -= chunk;
    }
    return 0;
}

bool iwarp_mpa_tx_small(const struct iwarp_mpa_tx *tx, size_t ulpdu_len)
{
    return !tx->markers && ulpdu_len <= IWARP_MPA_TX_SMALL_FPDU &&
           iwarp_mpa_fpdu_wire_len(tx->pos, (uint32_t)ulpdu_len, false) <= IWARP_MPA_TX_SMALL_FPDU;
}

/* A small FPDU, whole in scratch->fpdu (iwarp_mpa_tx_small; the caller checked the ULPDU's
 * length): the same octets as put() would emit without markers, as one iovec. */
static iwarp_ssize frame_small(struct iwarp_mpa_tx *tx, const struct iovec *ulpdu, size_t nulpdu,
                               uint32_t ulpdu_len, struct iwarp_mpa_tx_scratch *scratch,
                               struct iovec *out, size_t out_cap)
{
    if (out_cap < 1)
        return IWARP_ERR_NOSPC;
    uint8_t *p = scratch->fpdu;
    /* RFC 5044 §4.1: ULPDU_Length counts the ULPDU only. */
    iwarp_store_be16(p, (uint16_t)ulpdu_len);
    size_t at = IWARP_MPA_LEN_FIELD;
    for (size_t i = 0; i < nulpdu; i++) {
        iwarp_copy(p + at, ulpdu[i].iov_base, ulpdu[i].iov_len);
        at += ulpdu[i].iov_len;
    }
    /* RFC 5044 §4.1: the PAD (zeros) makes the FPDU a multiple of 4 octets. */
    uint32_t pad = iwarp_mpa_pad_len(ulpdu_len);
    memset(p + at, 0, pad);
    at += pad;
    /* RFC 5044 §4.4: the CRC covers length, ULPDU and PAD, stored least-significant octet
     * first; §4.1: with CRC off the field is zeros (as siw sends). */
    uint32_t crc = tx->crc ? iwarp_crc32c(p, at) : 0;
    iwarp_store_le32(p + at, crc);
    at += IWARP_MPA_CRC_LEN;
    out[0] = (struct iovec){.iov_base = p, .iov_len = at};
    tx->pos += (uint32_t)at;
    return 1;
}

int iwarp_mpa_tx_init(struct iwarp_mpa_tx *tx, const struct iwarp_mpa_tx_cfg *cfg)
{
    /* RFC 5044 §4.3: FPDUs and markers are multiples of 4 octets from the first marker on. */
    if (cfg->stream_pos & 3u)
        return IWARP_ERR_INVAL;
    tx->crc = cfg->crc;
    tx->markers = cfg->markers;
    tx->pos = cfg->stream_pos;
    return 0;
}

iwarp_ssize iwarp_mpa_tx_frame(struct iwarp_mpa_tx *tx, const struct iovec *ulpdu, size_t nulpdu,
                               struct iwarp_mpa_tx_scratch *scratch, struct iovec *out,
                               size_t out_cap)
{
    return iwarp_mpa_tx_frame_staged(tx, ulpdu, nulpdu, nulpdu, NULL, 0, scratch, out, out_cap);
}

iwarp_ssize iwarp_mpa_tx_frame_staged(struct iwarp_mpa_tx *tx, const struct iovec *ulpdu,
                                      size_t nulpdu, size_t from, uint8_t *stage, size_t stage_cap,
                                      struct iwarp_mpa_tx_scratch *scratch, struct iovec *out,
                                      size_t out_cap)
{
    size_t ulpdu_len = 0, staged = 0;
    for (size_t i = 0; i < nulpdu; i++) {
        /* RFC 5044 §3: DDP MUST NOT post a ULPDU larger than 64768 octets. */
        if (ulpdu[i].iov_len > IWARP_MPA_MULPDU_MAX - ulpdu_len)
            return IWARP_ERR_FPDU_LEN;
        ulpdu_len += ulpdu[i].iov_len;
        if (i >= from)
            staged += ulpdu[i].iov_len;
    }
    /* RFC 5044 §3: a ULPDU has between one and 64768 octets; §4.5: MULPDU is a maximum, and
     * ours with markers is IWARP_MPA_MARKED_ULPDU_MAX (the room for markers, mpa_frame.h). */
    if (ulpdu_len == 0 || (tx->markers && ulpdu_len > IWARP_MPA_MARKED_ULPDU_MAX))
        return IWARP_ERR_FPDU_LEN;
    if (iwarp_mpa_tx_small(tx, ulpdu_len))
        return frame_small(tx, ulpdu, nulpdu, (uint32_t)ulpdu_len, scratch, out, out_cap);
    if (staged > 0 && (!stage || staged > stage_cap))
        return IWARP_ERR_NOSPC;

    struct emitter e = {
        .crc = tx->crc,
        .markers = tx->markers,
        .pos = tx->pos,
        .hdr_pos = tx->pos,
        .crc_state = IWARP_CRC32C_INIT,
        .scratch = scratch,
        .out = out,
        .cap = out_cap,
    };
    int rc = 0;
    /* RFC 5044 §4.3: a marker falling right before the ULPDU_Length carries FPDUPTR 0 and belongs
     * to this FPDU (and its CRC, §4.4 rule 2). The first FPDU of Full Operation starts so. */
    if (e.markers && iwarp_mpa_to_marker(e.pos) == IWARP_MPA_MARKER_PERIOD) {
        rc = put_marker(&e, 0);
        e.hdr_pos = e.pos;
    }

    /* RFC 5044 §4.1: ULPDU_Length counts the ULPDU only (no header, pad, CRC or markers). */
    iwarp_store_be16(scratch->len, (uint16_t)ulpdu_len);
    if (rc == 0)
        rc = put(&e, scratch->len, IWARP_MPA_LEN_FIELD, true, NULL);
    for (size_t i = 0; i < nulpdu && rc == 0; i++) {
        uint8_t *dst = i >= from ? stage : NULL;
        rc = put(&e, ulpdu[i].iov_base, ulpdu[i].iov_len, true, dst);
        if (dst)
            stage += ulpdu[i].iov_len;
    }

    /* RFC 5044 §4.1: the PAD (zeros on send) makes the FPDU a multiple of 4 octets. */
    uint32_t pad = iwarp_mpa_pad_len((uint32_t)ulpdu_len);
    memset(scratch->trailer, 0, sizeof scratch->trailer);
    if (rc == 0)
        rc = put(&e, scratch->trailer, pad, true, NULL);
    /* A marker right after the PAD is emitted here, inside put(), and is CRC-covered by this
     * FPDU (RFC 5044 §4.4 rule 1); the CRC field itself is 4-aligned and never split. */
    uint8_t *crc_field = scratch->trailer + pad;
    if (rc == 0)
        rc = put(&e, crc_field, IWARP_MPA_CRC_LEN, false, NULL);
    if (rc < 0)
        return rc;

    /* RFC 5044 §4.4: CRC32C, stored least-significant octet first; §4.1: with CRC off the field
     * is still present and we send zeros (as siw does). */
    if (e.crc)
        iwarp_store_le32(crc_field, iwarp_crc32c_final(e.crc_state));
    tx->pos = e.pos;
    return (iwarp_ssize)e.nout;
}

uint32_t iwarp_mpa_mulpdu(uint32_t emss, bool markers)
{
    /* RFC 5044 §4.5: room for the 6-octet FPDU overhead, the pad, and with markers the
     * worst-case number of them. */
    int64_t mulpdu = (int64_t)emss - (int64_t)IWARP_MPA_FPDU_OVERHEAD - (int64_t)(emss % 4u);
    if (markers)
        mulpdu -= (int64_t)IWARP_MPA_MARKER_LEN *
                  (((int64_t)emss + IWARP_MPA_MARKER_PERIOD - 1) / IWARP_MPA_MARKER_PERIOD);
    /* RFC 5044 §3: MULPDU MUST be between 128 and 64768 octets; §4.5: never below 128. */
    if (mulpdu < (int64_t)IWARP_MPA_MULPDU_MIN)
        return IWARP_MPA_MULPDU_MIN;
    if (mulpdu > (int64_t)IWARP_MPA_MULPDU_MAX)
        mulpdu = IWARP_MPA_MULPDU_MAX;
    if (markers && mulpdu > (int64_t)IWARP_MPA_MARKED_ULPDU_MAX)
        mulpdu = IWARP_MPA_MARKED_ULPDU_MAX; /* within the markers we have room for */
    return (uint32_t)mulpdu;
}

uint32_t iwarp_mpa_fpdu_wire_len(uint32_t stream_pos, uint32_t ulpdu_len, bool markers)
{
    uint32_t rest = IWARP_MPA_FPDU_OVERHEAD + ulpdu_len + iwarp_mpa_pad_len(ulpdu_len);
    uint32_t total = rest;
    if (!markers)
        return total;
    /* Walk the FPDU as the framer lays it out: a marker at every grid point it reaches,
     * including one right before its ULPDU_Length, but not one right after its CRC. */
    uint32_t pos = stream_pos;
    while (rest > 0) {
        uint32_t to_marker = iwarp_mpa_to_marker(pos);
        if (to_marker == IWARP_MPA_MARKER_PERIOD) {
            total += IWARP_MPA_MARKER_LEN;
            pos += IWARP_MPA_MARKER_LEN;
            to_marker -= IWARP_MPA_MARKER_LEN;
        }
        uint32_t chunk = rest < to_marker ? rest : to_marker;
        pos += chunk;
        rest -= chunk;
    }
    return total;
}
