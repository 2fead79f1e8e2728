/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the Terminate header (RFC 5040 §4.8) on arbitrary bytes.
 *   - iwarp_term_decode(), then iwarp_term_encode() of the result gives back the consumed input
 *     with Reserved cleared (RFC reading), or for a siw bit-reversed header an RFC-layout header
 *     that decodes to the siw meaning;
 *   - the cause names never fail, at any buffer size;
 *   - iwarp_term_build() with the input as the offending segment makes a Terminate segment that
 *     passes iwarp_wire_segment_decode() and carries the offender's header as received.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

static void names(struct iwarp_term_cause c)
{
    char s[160];
    size_t full = iwarp_term_cause_str(c, s, sizeof s);
    FUZZ_CHECK(full < sizeof s && strlen(s) == full);
    size_t cut = (size_t)c.ecode % 12;
    FUZZ_CHECK(iwarp_term_cause_str(c, s, cut) == full);
    FUZZ_CHECK(cut == 0 || strlen(s) == (full < cut ? full : cut - 1));
}

static void check_round_trip(const uint8_t *data, size_t n, const struct iwarp_term *t)
{
    uint8_t out[IWARP_TERM_MAX_LEN];
    struct iwarp_term e = *t;
    if (t->siw_swapped)
        e.ctrl = t->siw_ctrl;
    iwarp_ssize m = iwarp_term_encode(out, sizeof out, &e);
    FUZZ_CHECK(m == (iwarp_ssize)n);
    if (!t->siw_swapped) {
        FUZZ_CHECK(memcmp(out, data, 2) == 0);
        FUZZ_CHECK(out[2] == (data[2] & IWARP_TERM_HDRCT_MASK) && out[3] == 0);
        FUZZ_CHECK(memcmp(out + 4, data + 4, n - 4) == 0);
    }
    struct iwarp_term d;
    FUZZ_CHECK(iwarp_term_decode(out, (size_t)m, &d) == m);
    FUZZ_CHECK(!d.siw_swapped && d.rsvd == 0);
    FUZZ_CHECK(d.ctrl.hdrct == e.ctrl.hdrct && d.ctrl.cause.layer == e.ctrl.cause.layer &&
               d.ctrl.cause.etype == e.ctrl.cause.etype &&
               d.ctrl.cause.ecode == e.ctrl.cause.ecode);
    FUZZ_CHECK(d.ddp_seg_len == t->ddp_seg_len && d.ddp_hdr_len == t->ddp_hdr_len);
    FUZZ_CHECK(d.ddp_hdr_len == 0 || memcmp(d.ddp_hdr, t->ddp_hdr, d.ddp_hdr_len) == 0);
    if (e.ctrl.hdrct & IWARP_TERM_FLAG_R)
        FUZZ_CHECK(d.rdma.sink_stag == t->rdma.sink_stag && d.rdma.sink_to == t->rdma.sink_to &&
                   d.rdma.size == t->rdma.size && d.rdma.src_stag == t->rdma.src_stag &&
                   d.rdma.src_to == t->rdma.src_to);
}

static void check_build(const uint8_t *data, size_t size, struct iwarp_term_cause cause)
{
    uint8_t out[IWARP_TERM_SEG_MAX_LEN];
    struct iwarp_term_offender off = {
        .seg = data, .avail = size, .seg_len = (uint32_t)(size > UINT32_MAX ? UINT32_MAX : size)};
    iwarp_ssize n = iwarp_term_build(out, sizeof out, cause, &off);
    if (!iwarp_term_cause_defined(cause)) {
        FUZZ_CHECK(n == IWARP_ERR_INVAL);
        return;
    }
    FUZZ_CHECK(n >= 22);
    struct iwarp_wire_segment s;
    FUZZ_CHECK(iwarp_wire_segment_decode(out, (size_t)n, &s, NULL) == 0);
    FUZZ_CHECK(s.opcode == IWARP_RDMAP_OP_TERMINATE && s.ddp.msn == 1 && s.rsvd_set == 0);
    const struct iwarp_term *t = &s.body.term;
    FUZZ_CHECK(!t->siw_swapped);
    FUZZ_CHECK(t->ctrl.cause.layer == cause.layer && t->ctrl.cause.etype == cause.etype &&
               t->ctrl.cause.ecode == cause.ecode);
    if (t->ctrl.hdrct & IWARP_TERM_FLAG_D) {
        FUZZ_CHECK(memcmp(t->ddp_hdr, data, t->ddp_hdr_len) == 0);
        FUZZ_CHECK(!(t->ctrl.hdrct & IWARP_TERM_FLAG_M) || t->ddp_seg_len == size);
    }
    if (t->ctrl.hdrct & IWARP_TERM_FLAG_R)
        FUZZ_CHECK(memcmp(out + n - IWARP_RDMAP_READ_REQ_LEN, data + t->ddp_hdr_len,
                          IWARP_RDMAP_READ_REQ_LEN) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct iwarp_term t;
    iwarp_ssize n = iwarp_term_decode(data, size, &t);
    if (n >= 0) {
        FUZZ_CHECK((size_t)n <= size);
        names(t.ctrl.cause);
        names(t.siw_ctrl.cause);
        check_round_trip(data, (size_t)n, &t);
        check_build(data, size, t.siw_swapped ? t.siw_ctrl.cause : t.ctrl.cause);
    } else {
        FUZZ_CHECK(n == IWARP_ERR_SHORT);
    }
    /* The builder with every kind of cause, the input as the offender. */
    if (size >= 3)
        check_build(
            data + 3, size - 3,
            (struct iwarp_term_cause){(uint8_t)(data[0] % 4), (uint8_t)(data[1] % 5), data[2]});
    return 0;
}
