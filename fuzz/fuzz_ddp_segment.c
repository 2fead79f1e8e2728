/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: iwarp_wire_segment_decode() on arbitrary bytes (one DDP segment).
 * Properties:
 *   - an error always comes with a Terminate cause the RFCs define;
 *   - a decoded segment re-encodes (iwarp_wire_msg_from_segment + iwarp_wire_segment_encode)
 *     to the input octets with the reserved fields zeroed (RFC reading), and re-encoding the
 *     re-decoded output is a fixed point (siw bit-reversed Terminates included).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "wire/wire_segment.h"

/* The input with every reserved field cleared, as our encoder writes them. */
static void mask_reserved(uint8_t *p, const struct iwarp_wire_segment *s)
{
    p[0] &= (uint8_t)~IWARP_DDP_MASK_RSVD;
    p[1] &= (uint8_t)~IWARP_RDMAP_MASK_RSV;
    if (!s->ddp.tagged && !s->op->inv_stag)
        memset(p + 2, 0, 4);
    uint8_t *body = p + s->hdr_len;
    if (s->opcode == IWARP_RDMAP_OP_TERMINATE) {
        body[2] &= IWARP_TERM_HDRCT_MASK;
        body[3] = 0;
    }
    if (s->opcode == IWARP_RDMAP_OP_ATOMIC_REQ) {
        memset(body, 0, 3);
        body[3] &= 0x0F;
    }
}

static size_t reencode(const struct iwarp_wire_segment *s, uint8_t *out, size_t cap)
{
    struct iwarp_wire_msg m;
    iwarp_wire_msg_from_segment(&m, s);
    iwarp_ssize n = iwarp_wire_segment_encode(out, cap, &m, s->payload, s->payload_len);
    FUZZ_CHECK(n >= 0);
    return (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct iwarp_wire_segment s;
    struct iwarp_term_cause cause = {0xEE, 0xEE, 0xEE};
    int rc = iwarp_wire_segment_decode(data, size, &s, &cause);
    if (rc < 0) {
        FUZZ_CHECK(iwarp_term_cause_defined(cause));
        return 0;
    }
    FUZZ_CHECK(cause.layer == 0xEE);
    FUZZ_CHECK(s.hdr_len + s.body_len + s.payload_len == size);

    size_t cap = size + IWARP_TERM_SEG_MAX_LEN;
    uint8_t *out = malloc(cap), *out2 = malloc(cap), *masked = malloc(size);
    FUZZ_CHECK(out && out2 && masked);
    size_t n = reencode(&s, out, cap);
    bool siw = s.opcode == IWARP_RDMAP_OP_TERMINATE && s.body.term.siw_swapped;
    if (!siw) {
        memcpy(masked, data, size);
        mask_reserved(masked, &s);
        FUZZ_CHECK(n == size);
        FUZZ_CHECK(memcmp(out, masked, size) == 0);
    }

    struct iwarp_wire_segment s2;
    FUZZ_CHECK(iwarp_wire_segment_decode(out, n, &s2, NULL) == 0);
    FUZZ_CHECK(s2.rsvd_set == 0);
    FUZZ_CHECK(s2.opcode == s.opcode && s2.payload_len == s.payload_len);
    FUZZ_CHECK(memcmp(s2.payload, s.payload, s.payload_len) == 0);
    if (siw) {
        const struct iwarp_term *t = &s.body.term, *t2 = &s2.body.term;
        FUZZ_CHECK(!t2->siw_swapped);
        FUZZ_CHECK(t2->ctrl.hdrct == t->siw_ctrl.hdrct);
        FUZZ_CHECK(t2->ctrl.cause.layer == t->siw_ctrl.cause.layer);
        FUZZ_CHECK(t2->ctrl.cause.etype == t->siw_ctrl.cause.etype);
        FUZZ_CHECK(t2->ctrl.cause.ecode == t->siw_ctrl.cause.ecode);
        FUZZ_CHECK(t2->ddp_hdr_len == t->ddp_hdr_len);
        FUZZ_CHECK(t2->ddp_hdr_len == 0 || memcmp(t2->ddp_hdr, t->ddp_hdr, t->ddp_hdr_len) == 0);
    }
    size_t n2 = reencode(&s2, out2, cap);
    FUZZ_CHECK(n2 == n && memcmp(out, out2, n) == 0);

    free(out);
    free(out2);
    free(masked);
    return 0;
}
