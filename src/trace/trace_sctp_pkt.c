/* SPDX-License-Identifier: BSD-2-Clause */
/* SCTP packets as captured (see trace_sctp_pkt.h). */
#include "trace/trace_sctp_pkt.h"

#include <string.h>

#include "iwarp/errors.h"
#include "util/bytes.h"

/* RFC 9260 §3.2: chunks (and §3.2.1 parameters) are padded to a multiple of 4 octets. */
static size_t pad4(size_t n)
{
    return (n + 3u) & ~(size_t)3u;
}

int iwarp_sctp_common_decode(const uint8_t *p, size_t len, struct iwarp_sctp_common *out)
{
    if (!out || (!p && len > 0))
        return IWARP_ERR_INVAL;
    if (len < IWARP_SCTP_COMMON_HDR_LEN)
        return IWARP_ERR_SHORT;
    out->sport = iwarp_load_be16(p);
    out->dport = iwarp_load_be16(p + 2);
    out->vtag = iwarp_load_be32(p + 4);
    out->checksum = iwarp_load_le32(p + 8); /* RFC 9260 Appendix A: reflected CRC32c */
    return 0;
}

void iwarp_sctp_chunks_init(struct iwarp_sctp_chunk_iter *it, const uint8_t *p, size_t len)
{
    it->p = p;
    it->len = p ? len : 0;
    it->off = 0;
    it->bad = false;
}

int iwarp_sctp_chunk_next(struct iwarp_sctp_chunk_iter *it, struct iwarp_sctp_chunk *out)
{
    if (it->bad || it->off >= it->len)
        return 0;
    memset(out, 0, sizeof *out);
    const uint8_t *c = it->p + it->off;
    size_t left = it->len - it->off;
    out->offset = it->off;
    if (left < IWARP_SCTP_CHUNK_HDR_LEN) {
        it->bad = true; /* RFC 9260 §3.2: every chunk starts with a 4-octet header */
        return IWARP_ERR_PKT_MALFORMED;
    }
    out->type = c[0];
    out->flags = c[1];
    out->length = iwarp_load_be16(c + 2);
    /* RFC 9260 §3.2: Length counts the header and the value, not the padding */
    if (out->length < IWARP_SCTP_CHUNK_HDR_LEN || out->length > left) {
        it->bad = true;
        return IWARP_ERR_PKT_MALFORMED;
    }
    out->value = c + IWARP_SCTP_CHUNK_HDR_LEN;
    out->value_len = out->length - IWARP_SCTP_CHUNK_HDR_LEN;
    size_t step = pad4(out->length);
    it->off += step < left ? step : left; /* a last chunk's missing padding is tolerated */
    return 1;
}

int iwarp_sctp_data_decode(const struct iwarp_sctp_chunk *c, struct iwarp_sctp_data *out)
{
    if (!c || !out || c->type != IWARP_SCTP_CHUNK_DATA)
        return IWARP_ERR_INVAL;
    /* RFC 9260 §3.3.1: the fixed part is 16 octets; §6.2: a DATA chunk with no user data is a
     * protocol violation ("No User Data") */
    if (c->length <= IWARP_SCTP_DATA_HDR_LEN)
        return IWARP_ERR_SHORT;
    const uint8_t *v = c->value;
    out->flags = c->flags;
    out->tsn = iwarp_load_be32(v);
    out->sid = iwarp_load_be16(v + 4);
    out->ssn = iwarp_load_be16(v + 6);
    out->ppid = iwarp_load_be32(v + 8);
    out->data = v + 12;
    out->data_len = c->value_len - 12u;
    return 0;
}

int iwarp_sctp_init_decode(const struct iwarp_sctp_chunk *c, struct iwarp_sctp_init *out)
{
    if (!c || !out || (c->type != IWARP_SCTP_CHUNK_INIT && c->type != IWARP_SCTP_CHUNK_INIT_ACK))
        return IWARP_ERR_INVAL;
    memset(out, 0, sizeof *out);
    /* RFC 9260 §3.3.2: Initiate Tag, a_rwnd, OS, MIS, Initial TSN, then parameters */
    if (c->length < IWARP_SCTP_INIT_FIXED_LEN)
        return IWARP_ERR_SHORT;
    const uint8_t *v = c->value;
    out->init_tag = iwarp_load_be32(v);
    out->a_rwnd = iwarp_load_be32(v + 4);
    out->out_streams = iwarp_load_be16(v + 8);
    out->in_streams = iwarp_load_be16(v + 10);
    out->initial_tsn = iwarp_load_be32(v + 12);
    size_t off = 16, end = c->value_len;
    while (off < end) {
        /* RFC 9260 §3.2.1: Type(16) Length(16) value, Length >= 4, padded to 4 */
        if (end - off < 4)
            return IWARP_ERR_PKT_MALFORMED;
        uint16_t type = iwarp_load_be16(v + off);
        size_t plen = iwarp_load_be16(v + off + 2);
        if (plen < 4 || plen > end - off)
            return IWARP_ERR_PKT_MALFORMED;
        if (type == IWARP_SCTP_PARAM_ADAPTATION) {
            /* RFC 5061 §4.2.7: Type 0xC006, Length 8, the 32-bit indication */
            if (plen != 8)
                return IWARP_ERR_PKT_MALFORMED;
            out->has_adaptation = true;
            out->adaptation = iwarp_load_be32(v + off + 4);
        } else if (type == 7 && c->type == IWARP_SCTP_CHUNK_INIT_ACK) {
            out->has_cookie = true; /* RFC 9260 §3.3.3.1: State Cookie */
        }
        size_t step = pad4(plen);
        off += step < end - off ? step : end - off;
    }
    return 0;
}

const char *iwarp_sctp_chunk_name(uint8_t type)
{
    /* RFC 9260 §3.2, RFC 4895 (AUTH), RFC 5061 (ASCONF), RFC 6525 (RE-CONFIG), RFC 4820 (PAD),
     * RFC 3758 (FORWARD-TSN), RFC 8260 (I-DATA, I-FORWARD-TSN) */
    static const char *const names[] = {
        "DATA",  "INIT",     "INIT-ACK",          "SACK",  "HEARTBEAT",   "HEARTBEAT-ACK",
        "ABORT", "SHUTDOWN", "SHUTDOWN-ACK",      "ERROR", "COOKIE-ECHO", "COOKIE-ACK",
        "ECNE",  "CWR",      "SHUTDOWN-COMPLETE", "AUTH",
    };
    if (type < sizeof names / sizeof names[0])
        return names[type];
    switch (type) {
    case 64:
        return "I-DATA";
    case 128:
        return "ASCONF-ACK";
    case 130:
        return "RE-CONFIG";
    case 132:
        return "PAD";
    case 192:
        return "FORWARD-TSN";
    case 193:
        return "ASCONF";
    case 194:
        return "I-FORWARD-TSN";
    default:
        return NULL;
    }
}
