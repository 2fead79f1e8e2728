/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: iwarp_ddp_rx_uq_* on random sequences of buffer posts, segments and completions
 * for one untagged queue, against a reference model kept here.
 * Input: cap(1), then operations: op(1) and its arguments:
 *   op % 4 == 0  post:     len(2), scaled by op >> 6
 *   op % 4 == 1  segment near the expected MSN/MO: dmsn(1), dmo(1) (0x80: +0), len(2), L = op & 4
 *   op % 4 == 2  segment with any MSN(4), MO(4), len(2), L = op & 4
 *   op % 4 == 3  complete
 * Properties:
 *   - a segment is accepted only with the expected MSN, a posted buffer, MO = octets received so
 *     far and MO + len within the current buffer (never OK past the buffer end), and then
 *     place = {MO, L, MO + len when L};
 *   - a rejection carries the cause the model predicts (1/2/0x03, 0x02, 0x04, 0x05 in that
 *     order, or STATE after L) and leaves the state unchanged;
 *   - complete succeeds exactly after an accepted L segment and advances the MSN by exactly one
 *     (mod 2^32) and consumes exactly one buffer; posts fail exactly when cap are outstanding.
 */
#include <stdbool.h>
#include <stdint.h>

#include "ddp/ddp_rx_untagged.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"

#define MAX_CAP 8

/* The reference model: a plain array, oldest first. */
struct model {
    uint64_t lens[MAX_CAP];
    uint32_t posted;
    uint32_t msn;
    uint64_t received;
    bool last;
};

static uint64_t take_be(const uint8_t **p, size_t *n, int octets)
{
    uint64_t v = 0;
    while (octets-- > 0)
        v = v << 8 | fuzz_take(p, n);
    return v;
}

static void check_same(const struct iwarp_ddp_rx_uq *q, const struct model *m)
{
    FUZZ_CHECK(iwarp_ddp_rx_uq_expected_msn(q) == m->msn);
    FUZZ_CHECK(iwarp_ddp_rx_uq_posted(q) == m->posted);
    FUZZ_CHECK(iwarp_ddp_rx_uq_received(q) == m->received);
}

/* What the model expects for a segment: 0, IWARP_ERR_STATE, or the Untagged error code. */
static int predict(const struct model *m, const struct iwarp_ddp_hdr *h, uint32_t len)
{
    if (m->last)
        return IWARP_ERR_STATE;
    if (h->msn != m->msn)
        return IWARP_TERM_DDP_U_MSN_RANGE;
    if (m->posted == 0)
        return IWARP_TERM_DDP_U_NO_BUFFER;
    if (h->mo != m->received)
        return IWARP_TERM_DDP_U_INVALID_MO;
    if ((uint64_t)h->mo + len > m->lens[0])
        return IWARP_TERM_DDP_U_TOO_LONG;
    return 0;
}

static void do_segment(struct iwarp_ddp_rx_uq *q, struct model *m, const struct iwarp_ddp_hdr *h,
                       uint32_t len)
{
    int want = predict(m, h, len);
    struct iwarp_ddp_rx_place pl = {.offset = 0xABCD};
    struct iwarp_term_cause c = {0xEE, 0xEE, 0xEE};
    int rc = iwarp_ddp_rx_uq_segment(q, h, len, &pl, &c);
    if (want == 0) {
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(pl.offset == h->mo && pl.last == h->last);
        FUZZ_CHECK(pl.offset + len <= m->lens[0]); /* never past the buffer end */
        FUZZ_CHECK(pl.msg_len == (h->last ? (uint64_t)h->mo + len : 0));
        m->received += len;
        m->last = h->last;
    } else if (want == IWARP_ERR_STATE) {
        FUZZ_CHECK(rc == IWARP_ERR_STATE && c.ecode == 0xEE && pl.offset == 0xABCD);
    } else {
        FUZZ_CHECK(rc == IWARP_ERR_PROTO && pl.offset == 0xABCD);
        FUZZ_CHECK(c.layer == IWARP_TERM_LAYER_DDP && c.etype == IWARP_TERM_DDP_ETYPE_UNTAGGED);
        FUZZ_CHECK(c.ecode == want);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t n = size;
    uint32_t cap = fuzz_take(&p, &n) % (MAX_CAP + 1);
    uint64_t ring[MAX_CAP];
    struct iwarp_ddp_rx_uq q;
    FUZZ_CHECK(iwarp_ddp_rx_uq_init(&q, cap ? ring : NULL, cap) == 0);
    struct model m = {.msn = IWARP_DDP_MSN_INIT};
    uint32_t completed = 0;

    while (n > 0) {
        uint8_t op = fuzz_take(&p, &n);
        switch (op % 4) {
        case 0: {
            uint64_t len = take_be(&p, &n, 2) << (8 * (op >> 6)); /* up to 2^40 */
            int rc = iwarp_ddp_rx_uq_post(&q, len);
            if (m.posted == cap) {
                FUZZ_CHECK(rc == IWARP_ERR_NOSPC);
            } else {
                FUZZ_CHECK(rc == 0);
                m.lens[m.posted++] = len;
            }
            break;
        }
        case 1:
        case 2: {
            struct iwarp_ddp_hdr h = {.last = (op & 4) != 0, .dv = 1};
            if (op % 4 == 1) {
                /* Offset binary: 0x80 is the expected value itself. */
                h.msn = m.msn + fuzz_take(&p, &n) - 0x80u;
                h.mo = (uint32_t)(m.received + fuzz_take(&p, &n) - 0x80u);
            } else {
                h.msn = (uint32_t)take_be(&p, &n, 4);
                h.mo = (uint32_t)take_be(&p, &n, 4);
            }
            uint32_t len = (uint32_t)take_be(&p, &n, 2);
            do_segment(&q, &m, &h, len);
            break;
        }
        default: {
            int rc = iwarp_ddp_rx_uq_complete(&q);
            if (!m.last) {
                FUZZ_CHECK(rc == IWARP_ERR_STATE);
                break;
            }
            FUZZ_CHECK(rc == 0);
            uint32_t old = m.msn;
            for (uint32_t i = 1; i < m.posted; i++)
                m.lens[i - 1] = m.lens[i];
            m.posted--;
            m.msn++;
            m.received = 0;
            m.last = false;
            completed++;
            FUZZ_CHECK(iwarp_ddp_rx_uq_expected_msn(&q) == (uint32_t)(old + 1u));
            FUZZ_CHECK(iwarp_ddp_rx_uq_expected_msn(&q) ==
                       (uint32_t)(IWARP_DDP_MSN_INIT + completed));
            break;
        }
        }
        check_same(&q, &m);
    }
    return 0;
}
