/* SPDX-License-Identifier: BSD-2-Clause */
/* RDMAP Terminate: header codec, cause names, error mapping, builder (RFC 5040 §4.8, §7.1). */
#include "wire/wire_term.h"

#include <string.h>

#include "iwarp/errors.h"
#include "util/bytes.h"

/* ---- Terminate header codec ---- */

/* RFC 5040 §4.8 Figure 8: Layer(4) EType(4) Error Code(8) M D R, then Reserved(13). */
static struct iwarp_term_ctrl ctrl_rfc(const uint8_t *p)
{
    return (struct iwarp_term_ctrl){
        .cause = {.layer = (uint8_t)(p[0] >> 4), .etype = (uint8_t)(p[0] & 0x0Fu), .ecode = p[1]},
        .hdrct = (uint8_t)(p[2] & IWARP_TERM_HDRCT_MASK),
    };
}

/* Linux siw's struct iwarp_terminate bitfields as laid out by a little-endian compiler
 * (docs/interop-siw.md): Layer low nibble, EType high nibble, M/D/R in bits 0/1/2 of octet 2. */
#define SIW_LE_FLAG_M    0x01u
#define SIW_LE_FLAG_D    0x02u
#define SIW_LE_FLAG_R    0x04u
#define SIW_LE_RSVD_MASK 0xF8u

static struct iwarp_term_ctrl ctrl_siw_le(const uint8_t *p)
{
    uint8_t hdrct = 0;
    if (p[2] & SIW_LE_FLAG_M)
        hdrct |= IWARP_TERM_FLAG_M;
    if (p[2] & SIW_LE_FLAG_D)
        hdrct |= IWARP_TERM_FLAG_D;
    if (p[2] & SIW_LE_FLAG_R)
        hdrct |= IWARP_TERM_FLAG_R;
    return (struct iwarp_term_ctrl){
        .cause = {.layer = (uint8_t)(p[0] & 0x0Fu), .etype = (uint8_t)(p[0] >> 4), .ecode = p[1]},
        .hdrct = hdrct,
    };
}

/* The Terminate header length that hdrct announces for the header at p, or IWARP_ERR_SHORT when
 * the T bit of the Terminated DDP Header (which sizes it) is not within len. */
static iwarp_ssize layout_len(const uint8_t *p, size_t len, uint8_t hdrct)
{
    size_t n = IWARP_RDMAP_TERM_HDR_LEN;
    if (hdrct & IWARP_TERM_FLAG_D) {
        /* RFC 5040 §4.8: 112 bits for a tagged, 144 for an untagged header; the header's own T
         * bit says which (not the EType, as Wireshark assumes). */
        n += IWARP_RDMAP_TERM_SEGLEN_LEN;
        if (len <= n)
            return IWARP_ERR_SHORT;
        n += iwarp_ddp_hdr_len(p[n]);
    }
    if (hdrct & IWARP_TERM_FLAG_R)
        n += IWARP_RDMAP_READ_REQ_LEN;
    return (iwarp_ssize)n;
}

/* Whether reading c lays out exactly len octets. */
static bool fits_exactly(const uint8_t *p, size_t len, const struct iwarp_term_ctrl *c)
{
    iwarp_ssize n = layout_len(p, len, c->hdrct);
    return n >= 0 && (size_t)n == len;
}

iwarp_ssize iwarp_term_decode(const uint8_t *p, size_t len, struct iwarp_term *out)
{
    if (len < IWARP_RDMAP_TERM_HDR_LEN)
        return IWARP_ERR_SHORT;

    struct iwarp_term t = {
        .ctrl = ctrl_rfc(p),
        .rsvd = (uint16_t)((p[2] & ~IWARP_TERM_HDRCT_MASK & 0xFFu) << 8 | p[3]),
        .siw_ctrl = ctrl_siw_le(p),
    };

    /* RFC 5040 §4.8: Reserved is "ignored on receive", so the RFC reading stands unless only
     * siw's bit-reversed reading explains the message (docs/interop-siw.md). */
    if (t.rsvd != 0 && (p[2] & SIW_LE_RSVD_MASK) == 0 && p[3] == 0 &&
        iwarp_term_cause_defined(t.siw_ctrl.cause) && fits_exactly(p, len, &t.siw_ctrl) &&
        !(iwarp_term_cause_defined(t.ctrl.cause) && fits_exactly(p, len, &t.ctrl)))
        t.siw_swapped = true;

    uint8_t hdrct = iwarp_term_layout(&t)->hdrct;
    iwarp_ssize need = layout_len(p, len, hdrct);
    if (need < 0 || (size_t)need > len)
        return IWARP_ERR_SHORT;

    size_t off = IWARP_RDMAP_TERM_HDR_LEN;
    if (hdrct & IWARP_TERM_FLAG_D) {
        t.ddp_seg_len = iwarp_load_be16(p + off);
        off += IWARP_RDMAP_TERM_SEGLEN_LEN;
        iwarp_ssize h = iwarp_ddp_hdr_decode(p + off, len - off, &t.ddp);
        if (h < 0)
            return h; /* unreachable: layout_len() sized it */
        t.ddp_hdr = p + off;
        t.ddp_hdr_len = (size_t)h;
        off += (size_t)h;
    }
    if (hdrct & IWARP_TERM_FLAG_R) {
        iwarp_ssize r = iwarp_rdmap_read_req_decode(p + off, len - off, &t.rdma);
        if (r < 0)
            return r; /* unreachable, as above */
        off += (size_t)r;
    }
    *out = t;
    return (iwarp_ssize)off;
}

iwarp_ssize iwarp_term_encode(uint8_t *buf, size_t cap, const struct iwarp_term *in)
{
    const struct iwarp_term_ctrl *c = &in->ctrl;
    if (c->cause.layer > 0x0Fu || c->cause.etype > 0x0Fu || (c->hdrct & ~IWARP_TERM_HDRCT_MASK))
        return IWARP_ERR_INVAL;
    size_t need = IWARP_RDMAP_TERM_HDR_LEN;
    if (c->hdrct & IWARP_TERM_FLAG_D) {
        if (!in->ddp_hdr || in->ddp_hdr_len != iwarp_ddp_hdr_len(in->ddp_hdr[0]))
            return IWARP_ERR_INVAL;
        need += IWARP_RDMAP_TERM_SEGLEN_LEN + in->ddp_hdr_len;
    }
    if (c->hdrct & IWARP_TERM_FLAG_R)
        need += IWARP_RDMAP_READ_REQ_LEN;
    if (cap < need)
        return IWARP_ERR_NOSPC;

    /* RFC 5040 §4.8: Reserved "MUST be set to zero on transmit". */
    buf[0] = (uint8_t)(c->cause.layer << 4 | c->cause.etype);
    buf[1] = c->cause.ecode;
    buf[2] = c->hdrct;
    buf[3] = 0;
    size_t off = IWARP_RDMAP_TERM_HDR_LEN;
    if (c->hdrct & IWARP_TERM_FLAG_D) {
        iwarp_store_be16(buf + off, in->ddp_seg_len);
        off += IWARP_RDMAP_TERM_SEGLEN_LEN;
        memcpy(buf + off, in->ddp_hdr, in->ddp_hdr_len);
        off += in->ddp_hdr_len;
    }
    if (c->hdrct & IWARP_TERM_FLAG_R)
        off += (size_t)iwarp_rdmap_read_req_encode(buf + off, cap - off, &in->rdma);
    return (iwarp_ssize)off;
}

/* ---- Names ---- */

static const char *const layer_names[] = {
    [IWARP_TERM_LAYER_RDMAP] = "RDMAP",
    [IWARP_TERM_LAYER_DDP] = "DDP",
    [IWARP_TERM_LAYER_LLP] = "LLP",
};

struct etype_name {
    uint8_t layer, etype;
    bool any_code; /* the EType defines no codes: any value is acceptable */
    const char *name;
};

static const struct etype_name etype_names[] = {
    /* RFC 5040 §4.8 Figure 9 */
    {IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_CATASTROPHIC, true, "Local Catastrophic"},
    {IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT, false, "Remote Protection"},
    {IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_OP, false, "Remote Operation"},
    /* RFC 5041 §7.2 */
    {IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_CATASTROPHIC, false, "Local Catastrophic"},
    {IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_TAGGED, false, "Tagged"},
    {IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_UNTAGGED, false, "Untagged"},
    {IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_RSVD_LLP, true, "Reserved for LLP"},
    /* RFC 5044 §8, RFC 6581 §8 */
    {IWARP_TERM_LAYER_LLP, IWARP_TERM_LLP_ETYPE_MPA, false, "MPA"},
};

struct code_name {
    uint8_t layer, etype, ecode;
    const char *name;
};

#define RDMAP_PROT IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT
#define RDMAP_OP   IWARP_TERM_LAYER_RDMAP, IWARP_TERM_RDMAP_ETYPE_REMOTE_OP
#define DDP_CAT    IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_CATASTROPHIC
#define DDP_T      IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_TAGGED
#define DDP_U      IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_UNTAGGED
#define LLP_MPA    IWARP_TERM_LAYER_LLP, IWARP_TERM_LLP_ETYPE_MPA

static const struct code_name code_names[] = {
    /* RFC 5040 §4.8 Figure 9 */
    {RDMAP_PROT, IWARP_TERM_RDMAP_INVALID_STAG, "Invalid STag"},
    {RDMAP_PROT, IWARP_TERM_RDMAP_BASE_BOUNDS, "Base or bounds violation"},
    {RDMAP_PROT, IWARP_TERM_RDMAP_ACCESS, "Access rights violation"},
    {RDMAP_PROT, IWARP_TERM_RDMAP_STAG_NOT_ASSOC, "STag not associated with RDMAP Stream"},
    {RDMAP_PROT, IWARP_TERM_RDMAP_TO_WRAP, "TO wrap"},
    {RDMAP_PROT, IWARP_TERM_RDMAP_CANT_INVALIDATE, "STag cannot be Invalidated"},
    {RDMAP_PROT, IWARP_TERM_RDMAP_UNSPECIFIED, "Unspecified Error"},
    {RDMAP_OP, IWARP_TERM_RDMAP_VERSION, "Invalid RDMAP version"},
    {RDMAP_OP, IWARP_TERM_RDMAP_OPCODE, "Unexpected OpCode"},
    {RDMAP_OP, IWARP_TERM_RDMAP_CATASTROPHIC_STREAM,
     "Catastrophic error, localized to RDMAP Stream"},
    {RDMAP_OP, IWARP_TERM_RDMAP_CATASTROPHIC_GLOBAL, "Catastrophic error, global"},
    {RDMAP_OP, IWARP_TERM_RDMAP_CANT_INVALIDATE, "STag cannot be Invalidated"},
    {RDMAP_OP, IWARP_TERM_RDMAP_UNSPECIFIED, "Unspecified Error"},
    /* RFC 5041 §7.2 */
    {DDP_CAT, 0x00, "Local Catastrophic"},
    {DDP_T, IWARP_TERM_DDP_T_INVALID_STAG, "Invalid STag"},
    {DDP_T, IWARP_TERM_DDP_T_BASE_BOUNDS, "Base or bounds violation"},
    {DDP_T, IWARP_TERM_DDP_T_STAG_NOT_ASSOC, "STag not associated with DDP Stream"},
    {DDP_T, IWARP_TERM_DDP_T_TO_WRAP, "TO wrap"},
    {DDP_T, IWARP_TERM_DDP_T_VERSION, "Invalid DDP version"},
    {DDP_U, IWARP_TERM_DDP_U_INVALID_QN, "Invalid QN"},
    {DDP_U, IWARP_TERM_DDP_U_NO_BUFFER, "Invalid MSN - no buffer available"},
    {DDP_U, IWARP_TERM_DDP_U_MSN_RANGE, "Invalid MSN - MSN range is not valid"},
    {DDP_U, IWARP_TERM_DDP_U_INVALID_MO, "Invalid MO"},
    {DDP_U, IWARP_TERM_DDP_U_TOO_LONG, "DDP Message too long for available buffer"},
    {DDP_U, IWARP_TERM_DDP_U_VERSION, "Invalid DDP version"},
    /* RFC 5044 §8 */
    {LLP_MPA, IWARP_TERM_MPA_TCP_CLOSED, "TCP connection closed, terminated, or lost"},
    {LLP_MPA, IWARP_TERM_MPA_CRC, "MPA CRC error"},
    {LLP_MPA, IWARP_TERM_MPA_MARKER, "MPA Marker and ULPDU Length mismatch"},
    {LLP_MPA, IWARP_TERM_MPA_BAD_FRAME, "Invalid MPA Request or Reply frame"},
    /* RFC 6581 §8 */
    {LLP_MPA, IWARP_TERM_MPA_CATASTROPHIC, "Local catastrophic"},
    {LLP_MPA, IWARP_TERM_MPA_IRD, "Insufficient IRD resources"},
    {LLP_MPA, IWARP_TERM_MPA_NO_RTR, "No matching RTR option"},
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *iwarp_term_layer_name(unsigned layer)
{
    return layer < ARRAY_LEN(layer_names) ? layer_names[layer] : NULL;
}

static const struct etype_name *find_etype(unsigned layer, unsigned etype)
{
    for (size_t i = 0; i < ARRAY_LEN(etype_names); i++)
        if (etype_names[i].layer == layer && etype_names[i].etype == etype)
            return &etype_names[i];
    return NULL;
}

const char *iwarp_term_etype_name(unsigned layer, unsigned etype)
{
    const struct etype_name *e = find_etype(layer, etype);
    return e ? e->name : NULL;
}

const char *iwarp_term_code_name(struct iwarp_term_cause cause)
{
    for (size_t i = 0; i < ARRAY_LEN(code_names); i++) {
        const struct code_name *c = &code_names[i];
        if (c->layer == cause.layer && c->etype == cause.etype && c->ecode == cause.ecode)
            return c->name;
    }
    return NULL;
}

bool iwarp_term_cause_defined(struct iwarp_term_cause cause)
{
    const struct etype_name *e = find_etype(cause.layer, cause.etype);
    return e && (e->any_code || iwarp_term_code_name(cause) != NULL);
}

/* A bounded string builder: counts the full length, writes what fits, keeps a NUL. */
struct strbuf {
    char *buf;
    size_t cap, len;
};

static void sb_puts(struct strbuf *sb, const char *s)
{
    for (; *s; s++, sb->len++)
        if (sb->len + 1 < sb->cap)
            sb->buf[sb->len] = *s;
}

static void sb_hex(struct strbuf *sb, const char *label, unsigned v, int digits)
{
    static const char hex[] = "0123456789ABCDEF";
    char s[8] = "0x";
    int n = 2;
    for (int d = digits - 1; d >= 0; d--)
        s[n++] = hex[(v >> (4 * d)) & 0xFu];
    s[n] = '\0';
    sb_puts(sb, label);
    sb_puts(sb, s);
}

size_t iwarp_term_cause_str(struct iwarp_term_cause cause, char *buf, size_t cap)
{
    struct strbuf sb = {buf, cap, 0};
    const char *layer = iwarp_term_layer_name(cause.layer);
    const char *etype = iwarp_term_etype_name(cause.layer, cause.etype);
    const char *code = iwarp_term_code_name(cause);
    if (layer)
        sb_puts(&sb, layer);
    else
        sb_hex(&sb, "layer ", cause.layer, 1);
    sb_puts(&sb, "/");
    if (etype)
        sb_puts(&sb, etype);
    else
        sb_hex(&sb, "etype ", cause.etype, 1);
    sb_puts(&sb, "/");
    if (code)
        sb_puts(&sb, code);
    else
        sb_hex(&sb, "code ", cause.ecode, 2);
    if (cap > 0)
        buf[sb.len < cap ? sb.len : cap - 1] = '\0';
    return sb.len;
}

/* ---- Error mapping ---- */

int iwarp_term_cause_from_err(int err, bool tagged, struct iwarp_term_cause *out)
{
    struct iwarp_term_cause c;
    switch (err) {
    case IWARP_ERR_DDP_VERSION:
        /* RFC 5041 §7.2: "Invalid DDP version" exists once per buffer model. */
        c = tagged ? (struct iwarp_term_cause){DDP_T, IWARP_TERM_DDP_T_VERSION}
                   : (struct iwarp_term_cause){DDP_U, IWARP_TERM_DDP_U_VERSION};
        break;
    case IWARP_ERR_DDP_HDR_LEN:
        /* No RFC 5041 §7.2 code describes an unparseable segment; DDP cannot place it nor
         * copy its header: DDP Local Catastrophic (no headers, RFC 5040 §4.8). */
        c = (struct iwarp_term_cause){DDP_CAT, 0x00};
        break;
    case IWARP_ERR_DDP_QN:
        c = (struct iwarp_term_cause){DDP_U, IWARP_TERM_DDP_U_INVALID_QN}; /* RFC 5041 §7.1 (1) */
        break;
    case IWARP_ERR_DDP_MO:
        c = (struct iwarp_term_cause){DDP_U, IWARP_TERM_DDP_U_INVALID_MO}; /* RFC 5041 §7.1 (3) */
        break;
    case IWARP_ERR_RDMAP_VERSION:
        c = (struct iwarp_term_cause){RDMAP_OP, IWARP_TERM_RDMAP_VERSION}; /* RFC 5040 §7.2 (3) */
        break;
    case IWARP_ERR_RDMAP_OPCODE:
    case IWARP_ERR_RDMAP_TAGGED:
        c = (struct iwarp_term_cause){RDMAP_OP, IWARP_TERM_RDMAP_OPCODE}; /* RFC 5040 §7.2 (2) */
        break;
    case IWARP_ERR_RDMAP_LEN:
    case IWARP_ERR_RDMAP_LAST:
        /* RFC 5040 Figure 9 has no code for a malformed RDMAP header: Unspecified. */
        c = (struct iwarp_term_cause){RDMAP_OP, IWARP_TERM_RDMAP_UNSPECIFIED};
        break;
    case IWARP_ERR_FPDU_CRC:
        c = (struct iwarp_term_cause){LLP_MPA, IWARP_TERM_MPA_CRC}; /* RFC 5044 §8 code 2 */
        break;
    case IWARP_ERR_FPDU_MARKER:
        c = (struct iwarp_term_cause){LLP_MPA, IWARP_TERM_MPA_MARKER}; /* RFC 5044 §8 code 3 */
        break;
    case IWARP_ERR_MPA_KEY:
    case IWARP_ERR_MPA_REV:
    case IWARP_ERR_MPA_PD_LEN:
    case IWARP_ERR_MPA_ENHANCED:
        c = (struct iwarp_term_cause){LLP_MPA, IWARP_TERM_MPA_BAD_FRAME}; /* RFC 5044 §8 code 4 */
        break;
    case IWARP_ERR_MPA_IRD_ORD:
        c = (struct iwarp_term_cause){LLP_MPA, IWARP_TERM_MPA_IRD}; /* RFC 6581 §8 */
        break;
    case IWARP_ERR_MPA_RTR:
        c = (struct iwarp_term_cause){LLP_MPA, IWARP_TERM_MPA_NO_RTR}; /* RFC 6581 §8 */
        break;
    default:
        return IWARP_ERR_NOTSUP;
    }
    *out = c;
    return 0;
}

/* ---- Builder ---- */

/* RFC 5040 §4.8 Figure 10: does this cause report the offending segment's DDP header? */
static bool reports_ddp_hdr(struct iwarp_term_cause c)
{
    switch (c.layer) {
    case IWARP_TERM_LAYER_RDMAP:
        return c.etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT ||
               c.etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_OP;
    case IWARP_TERM_LAYER_DDP:
        /* §4.8: "The DDP Header is not present if the Terminate Error Type is a Local
         * Catastrophic Error." */
        return c.etype != IWARP_TERM_DDP_ETYPE_CATASTROPHIC;
    default:
        return false; /* LLP: "No" */
    }
}

iwarp_ssize iwarp_term_build(uint8_t *buf, size_t cap, struct iwarp_term_cause cause,
                             const struct iwarp_term_offender *off)
{
    if (!iwarp_term_cause_defined(cause))
        return IWARP_ERR_INVAL;

    struct iwarp_term t = {.ctrl = {.cause = cause}};
    /* §7.1 rule 1: no offending message (or none we can copy) -> no headers. */
    if (off && off->seg && off->avail >= 1 && reports_ddp_hdr(cause) &&
        off->avail >= iwarp_ddp_hdr_len(off->seg[0])) {
        t.ddp_hdr = off->seg;
        t.ddp_hdr_len = iwarp_ddp_hdr_len(off->seg[0]);
        if (off->seg_len < t.ddp_hdr_len)
            return IWARP_ERR_INVAL;
        /* §4.8 DDP Segment Length: "MUST be valid if the M bit is set. It MUST be present when
         * the D bit is set." A length that does not fit 16 bits is sent as D without M. */
        t.ctrl.hdrct = IWARP_TERM_FLAG_D;
        if (off->seg_len <= UINT16_MAX) {
            t.ctrl.hdrct |= IWARP_TERM_FLAG_M;
            t.ddp_seg_len = (uint16_t)off->seg_len;
        }
        /* Figure 10: a Remote Protection error on an RDMA Read Request also returns the Read
         * Request header (§7.1 rule 3). */
        bool read_req = !(off->seg[0] & IWARP_DDP_FLAG_TAGGED) &&
                        iwarp_rdmap_ctrl_opcode(off->seg[1]) == IWARP_RDMAP_OP_READ_REQ;
        if (read_req && cause.layer == IWARP_TERM_LAYER_RDMAP &&
            cause.etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT) {
            if (off->read_req) {
                t.rdma = *off->read_req;
                t.ctrl.hdrct |= IWARP_TERM_FLAG_R;
            } else if (iwarp_rdmap_read_req_decode(off->seg + t.ddp_hdr_len,
                                                   off->avail - t.ddp_hdr_len, &t.rdma) > 0) {
                t.ctrl.hdrct |= IWARP_TERM_FLAG_R;
            }
        }
    }

    /* RFC 5040 §4.1 Figure 4: untagged, QN 2; §5.4: one Terminate per stream, so MSN 1. */
    struct iwarp_ddp_hdr h = {
        .last = true,
        .dv = IWARP_DDP_VERSION,
        .rsvdulp = iwarp_rdmap_ctrl(IWARP_RDMAP_OP_TERMINATE),
        .qn = IWARP_QN_TERMINATE,
        .msn = IWARP_DDP_MSN_INIT,
        .mo = 0,
    };
    iwarp_ssize n = iwarp_ddp_hdr_encode(buf, cap, &h);
    if (n < 0)
        return n;
    iwarp_ssize m = iwarp_term_encode(buf + n, cap - (size_t)n, &t);
    if (m < 0)
        return m;
    return n + m;
}
