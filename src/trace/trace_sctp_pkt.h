/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SCTP packets as captured (RFC 9260): the common header, the chunks, and the fields of the
 * chunks `iwarp dump` needs (DATA, INIT/INIT-ACK with the RFC 5061 Adaptation Layer Indication
 * of RFC 5043 §5.1). A pure codec: no I/O, no allocation, no state; every pointer it returns
 * points into the caller's buffer. Fuzzed by fuzz/fuzz_sctp_pkt.c.
 *
 * It reads what a peer sent and says what is wrong with it; it never trusts a length field.
 */
#ifndef IWARP_TRACE_TRACE_SCTP_PKT_H
#define IWARP_TRACE_TRACE_SCTP_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire_sctp.h" /* the common header's length, its CRC32c */

/* Chunk types (RFC 9260 §3.2, RFC 8260 I-DATA). */
enum iwarp_sctp_chunk_type {
    IWARP_SCTP_CHUNK_DATA = 0,
    IWARP_SCTP_CHUNK_INIT = 1,
    IWARP_SCTP_CHUNK_INIT_ACK = 2,
    IWARP_SCTP_CHUNK_SACK = 3,
    IWARP_SCTP_CHUNK_ABORT = 6,
    IWARP_SCTP_CHUNK_SHUTDOWN = 7,
    IWARP_SCTP_CHUNK_COOKIE_ECHO = 10,
    IWARP_SCTP_CHUNK_I_DATA = 64,
};

#define IWARP_SCTP_CHUNK_HDR_LEN    4u      /* type, flags, length (RFC 9260 §3.2) */
#define IWARP_SCTP_DATA_HDR_LEN     16u     /* chunk header + TSN, SID, SSN, PPID (§3.3.1) */
#define IWARP_SCTP_INIT_FIXED_LEN   20u     /* chunk header + 16 octets of fixed fields (§3.3.2) */
#define IWARP_SCTP_PARAM_ADAPTATION 0xC006u /* RFC 5061 §4.2.7 */

/* DATA chunk flags (RFC 9260 §3.3.1; I: RFC 7053). */
#define IWARP_SCTP_DATA_E 0x01u /* last fragment */
#define IWARP_SCTP_DATA_B 0x02u /* first fragment */
#define IWARP_SCTP_DATA_U 0x04u /* unordered */
#define IWARP_SCTP_DATA_I 0x08u /* SACK immediately */

/* The common header (RFC 9260 §3.1). */
struct iwarp_sctp_common {
    uint16_t sport, dport;
    uint32_t vtag;
    uint32_t checksum; /* CRC32c as sent: least-significant octet first (RFC 9260 App. A) */
};

/* One chunk. */
struct iwarp_sctp_chunk {
    uint8_t type, flags;
    uint16_t length;      /* the Length field: header + value, padding excluded */
    const uint8_t *value; /* length - 4 octets */
    size_t value_len;
    size_t offset; /* of the chunk in the chunk area */
};

/* Walks the chunks of one packet (initialise with iwarp_sctp_chunks_init). */
struct iwarp_sctp_chunk_iter {
    const uint8_t *p;
    size_t len, off;
    bool bad; /* a malformed chunk ended the walk */
};

/* A DATA chunk (RFC 9260 §3.3.1). */
struct iwarp_sctp_data {
    uint8_t flags; /* IWARP_SCTP_DATA_* */
    uint32_t tsn;
    uint16_t sid;
    uint16_t ssn;        /* the SCTP Stream Sequence Number (meaningless when U = 1) */
    uint32_t ppid;       /* in network order on the wire; here as the number it is */
    const uint8_t *data; /* user data */
    size_t data_len;
};

/* An INIT or INIT-ACK chunk (RFC 9260 §3.3.2, §3.3.3). */
struct iwarp_sctp_init {
    uint32_t init_tag, a_rwnd;
    uint16_t out_streams, in_streams; /* OS, MIS */
    uint32_t initial_tsn;
    bool has_adaptation; /* an Adaptation Layer Indication parameter (RFC 5061 §4.2.7) */
    uint32_t adaptation; /* its value (RFC 5043 §5.1: 0x00000001 for DDP) */
    bool has_cookie;     /* INIT-ACK: a State Cookie */
};

/*
 * Decodes the common header of the SCTP packet p[0..len).
 * Returns 0, IWARP_ERR_SHORT (fewer than 12 octets), IWARP_ERR_INVAL (NULL).
 */
int iwarp_sctp_common_decode(const uint8_t *p, size_t len, struct iwarp_sctp_common *out);

/* Prepares a walk over the chunk area p[0..len) (a packet's octets after the common header). */
void iwarp_sctp_chunks_init(struct iwarp_sctp_chunk_iter *it, const uint8_t *p, size_t len);

/*
 * The next chunk. RFC 9260 §3.2: Length counts header and value, at least 4, and the chunk is
 * padded to a multiple of 4 octets; padding the packet does not have after its last chunk is
 * tolerated.
 * Returns 1 with *out set, 0 at the end, IWARP_ERR_PKT_MALFORMED for a chunk whose Length is
 * below 4 or runs past the packet (it->bad is set, the walk is over; out->offset and
 * out->length tell which), or for trailing octets too short for a chunk header.
 */
int iwarp_sctp_chunk_next(struct iwarp_sctp_chunk_iter *it, struct iwarp_sctp_chunk *out);

/*
 * Decodes a DATA chunk. RFC 9260 §3.3.1/§6.2: at least one octet of user data.
 * Returns 0, IWARP_ERR_SHORT (Length below 17: no user data or no room for the fixed fields),
 * IWARP_ERR_INVAL (NULL, or not a DATA chunk).
 */
int iwarp_sctp_data_decode(const struct iwarp_sctp_chunk *c, struct iwarp_sctp_data *out);

/*
 * Decodes an INIT or INIT-ACK chunk and scans its parameters (RFC 9260 §3.2.1: Type, Length
 * at least 4, padded to 4) for the Adaptation Layer Indication and the State Cookie.
 * Returns 0, IWARP_ERR_SHORT (shorter than the fixed fields), IWARP_ERR_PKT_MALFORMED (a
 * parameter's Length is below 4 or runs past the chunk, or an Adaptation Layer Indication is
 * not 8 octets long; the fields before it are filled in), IWARP_ERR_INVAL (NULL, other type).
 */
int iwarp_sctp_init_decode(const struct iwarp_sctp_chunk *c, struct iwarp_sctp_init *out);

/* A chunk type's name ("DATA", "INIT", ...), or NULL for a type not listed in RFC 9260 §3.2 or
 * its extensions. */
const char *iwarp_sctp_chunk_name(uint8_t type);

#endif
