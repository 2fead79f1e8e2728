/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDMAP Terminate message (RFC 5040 §4.8, §7.1): the Terminate header codec, the names of
 * every Layer/EType/Error Code (RFC 5040 §4.8 Figure 9, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8),
 * the mapping from libiwarp's header errors to a Terminate cause, and a builder for the complete
 * outgoing Terminate DDP segment.
 *
 * Terminate header (offsets from the first octet after the 18-octet DDP header):
 *   0: Layer(4) EType(4)   1: Error Code(8)   2..3: M D R, Reserved(13)
 *   then, when D: DDP Segment Length(16) + the Terminated DDP Header (14/18 B by its own T bit),
 *   then, when R: the Terminated RDMA Header (the 28 B Read Request header).
 */
#ifndef IWARP_WIRE_WIRE_TERM_H
#define IWARP_WIRE_WIRE_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"
#include "wire/wire_rdmap.h"

#define IWARP_TERM_HDRCT_MASK (IWARP_TERM_FLAG_M | IWARP_TERM_FLAG_D | IWARP_TERM_FLAG_R)

/* The largest Terminate header: 4 + 2 + 18 + 28 octets; a whole Terminate segment adds 18. */
#define IWARP_TERM_MAX_LEN                                                                 \
    (IWARP_RDMAP_TERM_HDR_LEN + IWARP_RDMAP_TERM_SEGLEN_LEN + IWARP_DDP_UNTAGGED_HDR_LEN + \
     IWARP_RDMAP_READ_REQ_LEN)
#define IWARP_TERM_SEG_MAX_LEN (IWARP_DDP_UNTAGGED_HDR_LEN + IWARP_TERM_MAX_LEN)

/* One reading of the Terminate Control field. */
struct iwarp_term_ctrl {
    struct iwarp_term_cause cause; /* Layer, EType, Error Code */
    uint8_t hdrct;                 /* IWARP_TERM_FLAG_M | _D | _R, at their RFC positions */
};

/* A decoded (or to-be-encoded) Terminate header. */
struct iwarp_term {
    /* RFC 5040 §4.8 reading of octets 0..3; what encode writes. */
    struct iwarp_term_ctrl ctrl;
    uint16_t rsvd; /* the 13 Reserved bits as received (zero on send, ignored on receive) */
    /*
     * Linux siw's reading (decode only; docs/interop-siw.md): siw declares the control word as
     * little-endian bitfields, so on x86 it sends Layer in the low nibble of octet 0, EType in
     * the high nibble, and M/D/R in bits 0/1/2 of octet 2. Always filled by decode.
     * siw_swapped is set when the RFC reading has Reserved bits set and only the siw reading
     * makes sense (a defined cause, siw's own reserved bits zero, and exactly the length its
     * M/D/R imply, while the RFC reading has an undefined cause or the wrong length); the
     * optional parts below are then laid out by siw_ctrl.hdrct.
     */
    struct iwarp_term_ctrl siw_ctrl;
    bool siw_swapped;
    /* Optional parts (present per the hdrct of the reading used: iwarp_term_layout()). */
    uint16_t ddp_seg_len;             /* DDP Segment Length, when D (valid when M too) */
    const uint8_t *ddp_hdr;           /* Terminated DDP Header, when D; NULL otherwise */
    size_t ddp_hdr_len;               /* 14 or 18 (from the T bit of ddp_hdr[0]); 0 when absent */
    struct iwarp_ddp_hdr ddp;         /* ddp_hdr decoded (decode only) */
    struct iwarp_rdmap_read_req rdma; /* Terminated RDMA Header, when R */
};

/*
 * The reading of the control field whose M/D/R lay out the optional parts: siw_ctrl when
 * t->siw_swapped, ctrl otherwise.
 * Ownership: the result points into t.
 */
static inline const struct iwarp_term_ctrl *iwarp_term_layout(const struct iwarp_term *t)
{
    return t->siw_swapped ? &t->siw_ctrl : &t->ctrl;
}

/*
 * Decode a Terminate header.
 *   p, len: exactly the Terminate header, i.e. the rest of the Terminate segment after its
 *           18-octet DDP header (a Terminate carries no payload; the siw recognition compares
 *           lengths, so pass no trailing bytes).
 *   out:    filled on success.
 * Ownership: out->ddp_hdr points into p (borrowed for p's lifetime).
 * Returns the octets the header occupies (may be less than len: the caller decides whether
 * trailing octets are an error), or IWARP_ERR_SHORT when len is below what M/D/R announce.
 * Layer, EType and Error Code are not validated (iwarp_term_cause_defined() does that).
 */
iwarp_ssize iwarp_term_decode(const uint8_t *p, size_t len, struct iwarp_term *out);

/*
 * Encode a Terminate header in the RFC 5040 §4.8 layout from in->ctrl (the siw fields are
 * ignored; Reserved is written as zero): when D, in->ddp_seg_len and the in->ddp_hdr_len octets
 * of in->ddp_hdr copied verbatim; when R, in->rdma.
 * Ownership: nothing is kept.
 * Returns the octets written; IWARP_ERR_NOSPC when cap is too small; IWARP_ERR_INVAL when a
 * cause field does not fit its width, hdrct has bits outside M/D/R, or D is set and ddp_hdr is
 * NULL or ddp_hdr_len is not the length its T bit implies.
 */
iwarp_ssize iwarp_term_encode(uint8_t *buf, size_t cap, const struct iwarp_term *in);

/* ---- Names (for logs and the pcap dumper) ---- */

/* "RDMAP", "DDP", "LLP", or NULL for an undefined Layer. */
const char *iwarp_term_layer_name(unsigned layer);

/* The EType name ("Remote Operation", "Untagged", "MPA", ...), or NULL when undefined. */
const char *iwarp_term_etype_name(unsigned layer, unsigned etype);

/* The Error Code name as the RFC words it ("Invalid MSN - MSN range is not valid"), or NULL when
 * the code is undefined or its EType defines no codes (RDMAP Local Catastrophic, DDP EType 3). */
const char *iwarp_term_code_name(struct iwarp_term_cause cause);

/*
 * Whether cause is one the RFCs define: a known Layer/EType and a code defined for it (any
 * code for the two ETypes that define none: RDMAP Local Catastrophic and DDP's EType 3).
 */
bool iwarp_term_cause_defined(struct iwarp_term_cause cause);

/*
 * Write "Layer/EType/Code" into buf, e.g. "DDP/Untagged/Invalid MSN - MSN range is not valid";
 * undefined parts are written in hex ("DDP/etype 0x9/code 0x01", "RDMAP/Local Catastrophic/code
 * 0xFF"). Always NUL-terminates when cap > 0, truncating if needed.
 * Ownership: nothing is kept.
 * Returns the length of the full string (without the NUL), as snprintf does.
 */
size_t iwarp_term_cause_str(struct iwarp_term_cause cause, char *buf, size_t cap);

/*
 * The Terminate cause for a libiwarp error detected on an incoming segment.
 *   err:    an IWARP_ERR_* code (the DDP/RDMAP header errors, the MPA errors that RFC 5044 §8
 *           and RFC 6581 §8 name).
 *   tagged: the offending segment's T flag (Invalid DDP version is 1/1/0x04 for a tagged and
 *           1/2/0x06 for an untagged segment, RFC 5041 §7.2).
 *   out:    filled on success.
 * Returns 0, or IWARP_ERR_NOTSUP when err has no Terminate cause.
 */
int iwarp_term_cause_from_err(int err, bool tagged, struct iwarp_term_cause *out);

/* The incoming segment a Terminate reports (RFC 5040 §7.1 rules 2-4). */
struct iwarp_term_offender {
    const uint8_t *seg; /* the segment from its DDP Control octet: its DDP header at least, and
                           the 28 B Read Request header after it for an RDMA Read Request */
    size_t avail;       /* octets readable at seg */
    /* The segment's length as DDP handed it up: DDP header + payload, i.e. its MPA ULPDU_Length
     * (RFC 5040 §4.8 DDP Segment Length; not siw's payload-only value). */
    uint32_t seg_len;
    /* For a Remote Protection error on a Read Request: the Read Request header to report,
     * updated if the Read was partly served (RFC 5040 §4.8); NULL copies it from seg. */
    const struct iwarp_rdmap_read_req *read_req;
};

/*
 * Build the complete Terminate DDP segment: an untagged header (L, DV 1, RDMAP RV 1 opcode 7,
 * QN 2, MSN 1, MO 0; RFC 5040 §4.8, §5.4) and a Terminate header for cause, with the optional
 * parts RFC 5040 §4.8 Figure 10 and §7.1 call for:
 *   - DDP errors (except Local Catastrophic) and RDMAP Remote Protection/Operation errors: M, D,
 *     DDP Segment Length = off->seg_len (only D when it exceeds 16 bits), the offender's DDP
 * header;
 *   - RDMAP Remote Protection on an RDMA Read Request: also R and the Read Request header;
 *   - Local Catastrophic (RDMAP or DDP) and LLP errors: none; no offender (off NULL, or too
 *     short to hold its DDP header): none (HdrCt 0, §7.1 rule 1).
 *   buf, cap: output space (IWARP_TERM_SEG_MAX_LEN always suffices).
 * Ownership: nothing is kept.
 * Returns the segment length (what MPA sends as ULPDU_Length); IWARP_ERR_INVAL when cause is not
 * defined (iwarp_term_cause_defined()) or off->seg_len is below the offender's header length;
 * IWARP_ERR_NOSPC when cap is too small.
 */
iwarp_ssize iwarp_term_build(uint8_t *buf, size_t cap, struct iwarp_term_cause cause,
                             const struct iwarp_term_offender *off);

#endif
