/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP segment headers (RFC 5041 §4): the 14-octet tagged and the 18-octet untagged header.
 *
 * Pure codec: explicit big-endian loads and stores into a host-order struct. The decoder checks
 * nothing but the length: the DDP version and the reserved bits are reported as received (RFC
 * 5041 §4.1: Rsvd is "not checked on receive"); validation is iwarp_wire_segment_decode()'s job.
 * Offsets count from the DDP Control octet, right after MPA's ULPDU_Length.
 */
#ifndef IWARP_WIRE_WIRE_DDP_H
#define IWARP_WIRE_WIRE_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "wire/wire.h"

/* One DDP header in host order. Fields of the other header model are zero after decode and
 * ignored by encode. */
struct iwarp_ddp_hdr {
    bool tagged;  /* T: Tagged Buffer Model (RFC 5041 §4.1) */
    bool last;    /* L: last segment of the DDP Message */
    uint8_t rsvd; /* the 4 Rsvd bits of octet 0 as received, shifted down (0..15) */
    uint8_t dv;   /* DV: DDP version, 0..3 (RFC 5041 §4.1: MUST be 1) */
    /* RsvdULP[0:7] (octet 1), opaque to DDP: RDMAP's control byte (RFC 5040 §4.1). */
    uint8_t rsvdulp;
    /* Tagged Buffer Model (RFC 5041 §4.2). */
    uint32_t stag; /* octets 2..5 */
    uint64_t to;   /* octets 6..13 */
    /* Untagged Buffer Model (RFC 5041 §4.3). */
    uint32_t rsvdulp_word; /* RsvdULP[8:39], octets 2..5: RDMAP's Invalidate STag slot */
    uint32_t qn;           /* octets 6..9 */
    uint32_t msn;          /* octets 10..13 */
    uint32_t mo;           /* octets 14..17 */
};

/*
 * The header length implied by a DDP Control octet: 14 when T is set, 18 otherwise.
 */
static inline size_t iwarp_ddp_hdr_len(uint8_t ddp_ctrl)
{
    return (ddp_ctrl & IWARP_DDP_FLAG_TAGGED) ? IWARP_DDP_TAGGED_HDR_LEN
                                              : IWARP_DDP_UNTAGGED_HDR_LEN;
}

/*
 * Decode the DDP header at the start of p.
 *   p, len: the received bytes starting at the DDP Control octet (p may be NULL when len is 0).
 *   out:    filled on success; untouched on error.
 * Ownership: nothing is kept.
 * Returns the header length (14 tagged, 18 untagged) or IWARP_ERR_SHORT when len is smaller.
 * Nothing but the length is checked.
 */
iwarp_ssize iwarp_ddp_hdr_decode(const uint8_t *p, size_t len, struct iwarp_ddp_hdr *out);

/*
 * Encode a DDP header into buf. The Rsvd bits are written as zero (RFC 5041 §4.1) whatever
 * in->rsvd says; the other fields are written as given (the DV of in->dv, so tests can build a
 * wrong version).
 *   buf, cap: the output space.
 *   in:       the header; in->tagged selects the model.
 * Ownership: nothing is kept.
 * Returns the header length (14/18), IWARP_ERR_NOSPC when cap is smaller, IWARP_ERR_INVAL when
 * in->dv does not fit in 2 bits.
 */
iwarp_ssize iwarp_ddp_hdr_encode(uint8_t *buf, size_t cap, const struct iwarp_ddp_hdr *in);

#endif
