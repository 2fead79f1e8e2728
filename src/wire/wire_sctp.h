/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP over SCTP chunk payloads (RFC 5043 §5.2, RFC 6581 §7), and the SCTP packet's CRC32c:
 * pure codecs, no state, no allocation. The PPID, adaptation and function code constants are in
 * wire/wire.h.
 *
 *   DDP Segment chunk (PPID 16, §5.2.2):          DDP-SSN(16) | DDP segment (RFC 5041)
 *   DDP Stream Session Control (PPID 17, §5.2.3): DDP-SSN(16) | Function Code(16) | Private Data
 *
 * Every chunk is unordered (U=1, §10). The DDP-SSN is the SSN the chunk would have had if sent
 * ordered: 0 at each session start, +1 per chunk of the stream, control chunks included (§5.2.1,
 * §6.1). Private data is at most 512 octets in every message (§5.2.3), present (maybe empty) in
 * Initiate/Accept/Reject and their enhanced forms, absent from Terminate. For Enhanced Initiate
 * (5) and Enhanced Accept (6) it begins with the RFC 6581 §9 word A|B|IRD(14) C|D|ORD(14), which
 * counts towards the 512 (RFC 6581 §7); Enhanced Reject (7) carries no word (RFC 6581 §7 names
 * only the Initiate and the Accept).
 */
#ifndef IWARP_WIRE_WIRE_SCTP_H
#define IWARP_WIRE_WIRE_SCTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "wire/wire.h"
#include "wire/wire_mpa.h"

#define IWARP_SCTP_SSN_LEN       2u     /* DDP-SSN at the start of every chunk (§5.2.1) */
#define IWARP_SCTP_CTL_HDR_LEN   4u     /* DDP-SSN + Function Code (§5.2.3) */
#define IWARP_SCTP_PD_MAX        512u   /* §5.2.3; RFC 6581 §7: the IRD/ORD word included */
#define IWARP_SCTP_CTL_MAX       516u   /* largest control chunk; §9: the minimum maximum size */
#define IWARP_SCTP_SSN_AHEAD_MAX 32767u /* §10: DDP-SSN order holds for < 32768 in flight */

/* One DDP Stream Session Control chunk payload, host form. */
struct iwarp_sctp_ctl {
    uint16_t ssn;                     /* DDP-SSN */
    uint16_t fc;                      /* enum iwarp_sctp_session_fc */
    struct iwarp_mpa_ird_ord ird_ord; /* fc 5 and 6 only: the RFC 6581 §9 word */
    const uint8_t *pd;                /* ULP private data (after the word for fc 5 and 6) */
    uint16_t pd_len;
};

/* One DDP Segment chunk payload. */
struct iwarp_sctp_seg {
    uint16_t ssn;       /* DDP-SSN */
    const uint8_t *seg; /* the DDP segment (RFC 5041 §4), borrowed from the payload */
    size_t len;
};

/* Whether fc is a function code this codec knows: 1..7 and 0xFFFF (RFC 5043 §5.2.3, RFC 6581
 * §7, RFC 6580 §3.5). */
bool iwarp_sctp_fc_known(uint16_t fc);

/* Whether fc's private data starts with the RFC 6581 §9 word (Enhanced Initiate/Accept). */
bool iwarp_sctp_fc_has_ird_ord(uint16_t fc);

/*
 * Decodes a whole control chunk payload (SCTP delivers messages: no bytes follow it).
 * Checks, in order: len >= 4 (IWARP_ERR_SHORT); a known function code
 * (IWARP_ERR_SESSION_FUNCTION); private data <= 512 and none in a Terminate
 * (IWARP_ERR_MPA_PD_LEN, §5.2.3); fc 5/6 hold the 4-octet word (IWARP_ERR_MPA_ENHANCED, RFC 6581
 * §7). B/C/D are cleared when A=0 (RFC 6581 §9.2). Experimental (0xFFFF) payloads are opaque
 * private data.
 * Ownership: out->pd points into p. out is filled only on success.
 * Returns len, or the error; IWARP_ERR_INVAL for NULL out or NULL p with len > 0.
 */
iwarp_ssize iwarp_sctp_ctl_decode(const uint8_t *p, size_t len, struct iwarp_sctp_ctl *out);

/*
 * Encodes a control chunk payload into buf (the word first for fc 5/6).
 * Returns its length (4 [+ 4] + pd_len); IWARP_ERR_NOSPC when cap is too small;
 * IWARP_ERR_MPA_PD_LEN when the private data (word included) exceeds 512 or a Terminate has
 * some; IWARP_ERR_INVAL for an unknown fc, IRD/ORD > 0x3FFF, RTR bits without A or unknown
 * ones, or NULL pointers.
 */
iwarp_ssize iwarp_sctp_ctl_encode(uint8_t *buf, size_t cap, const struct iwarp_sctp_ctl *in);

/*
 * Decodes a whole DDP Segment chunk payload. Checks, in order: len >= 2 (IWARP_ERR_SHORT); the
 * segment no longer than max_seg when max_seg != 0 (IWARP_ERR_SCTP_MSGSIZE: §9 "MUST reject DDP
 * Segments that are larger than the maximum size"); the segment at least as long as the DDP
 * header its T bit announces (IWARP_ERR_DDP_HDR_LEN, RFC 5041 §4). The DDP header itself is
 * validated by iwarp_wire_segment_decode() (core).
 * Ownership: out->seg points into p. Returns len or the error (IWARP_ERR_INVAL for NULL args).
 */
iwarp_ssize iwarp_sctp_seg_decode(const uint8_t *p, size_t len, size_t max_seg,
                                  struct iwarp_sctp_seg *out);

/*
 * Writes the 2-octet DDP-SSN prefix of a chunk; the DDP segment follows it (callers sending
 * iovecs put the segment's header and payload after these octets).
 * Returns 2, or IWARP_ERR_NOSPC / IWARP_ERR_INVAL (NULL buf).
 */
iwarp_ssize iwarp_sctp_ssn_encode(uint8_t *buf, size_t cap, uint16_t ssn);

/*
 * Reads the DDP-SSN of any chunk payload (both PPIDs start with it): what the receiver needs
 * to order the chunk before decoding it. Returns the DDP-SSN (0..65535) or IWARP_ERR_SHORT
 * (IWARP_ERR_INVAL for NULL p with len > 0).
 */
int iwarp_sctp_ssn_peek(const uint8_t *p, size_t len);

/*
 * Classifies a received DATA chunk by its PPID (§5.2) and U flag (§10: every chunk MUST be
 * unordered). Returns IWARP_SCTP_PPID_DDP_SEGMENT or IWARP_SCTP_PPID_DDP_CONTROL, or
 * IWARP_ERR_SCTP_PPID for another PPID or an ordered chunk.
 */
int iwarp_sctp_chunk_kind(uint32_t ppid, bool unordered);

/*
 * Checks the peer's Adaptation Layer Indication seen in INIT/INIT-ACK (§5.1, §11.1): present
 * and equal to 0x00000001, else IWARP_ERR_SCTP_ADAPTATION (NONE or ANY-OTHER: no DDP).
 */
int iwarp_sctp_adaptation_check(bool present, uint32_t indication);

/* Checks §8: equal, non-zero inbound and outbound stream counts, else IWARP_ERR_SCTP_STREAMS. */
int iwarp_sctp_streams_check(uint16_t inbound, uint16_t outbound);

/* ---- the SCTP packet's checksum ------------------------------------------------------------ */

#define IWARP_SCTP_COMMON_HDR_LEN 12u /* RFC 9260 §3.1 */
#define IWARP_SCTP_CHECKSUM_OFF   8u  /* the common header's Checksum field */

/*
 * The CRC32c of the SCTP packet p[0..len) (len >= 12), computed with its Checksum field taken
 * as zero (RFC 9260 §6.8); it belongs in the field least significant octet first
 * (iwarp_store_le32: RFC 9260 Appendix A's reflected CRC32c).
 */
uint32_t iwarp_sctp_packet_crc32c(const uint8_t *p, size_t len);

/* Whether the packet's CRC32c matches the value in its common header. False for fewer than 12
 * octets. */
bool iwarp_sctp_crc_ok(const uint8_t *p, size_t len);

#endif
