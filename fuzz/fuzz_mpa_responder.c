/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the MPA responder (RFC 5044 §7.1, RFC 6581): a configuration, then the peer's bytes
 * in arbitrary pieces interleaved with time steps, tx drains, accept()/reject() with values
 * and first_fpdu() reports, all taken from the input. Invariants: rx never consumes more than
 * given; failures are sticky with an action; the Reply obeys RFC 6581 §9.1/§9.2/§10. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mpa/mpa_negotiate.h"

/* Checks a complete Reply against what the Request asked (RFC 6581 §9.1, §9.2, §10). */
static void check_reply(const struct iwarp_mpa_neg *neg, const uint8_t *b, size_t len)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(neg);
    struct iwarp_mpa_frame f;
    if (iwarp_mpa_frame_decode(b, len, &f) != (iwarp_ssize)len || !f.reply)
        abort();
    if (f.rev != r->peer_rev || f.s != r->enhanced)
        abort();
    if (!f.s || f.r)
        return;
    if (f.v2.p2p != r->peer_p2p)
        abort();
    if (f.v2.p2p && f.v2.rtr == 0)
        abort();
    if (r->peer_ord == 0x3FFF && f.v2.ird != 0x3FFF)
        abort();
    if (r->peer_ird == 0x3FFF && f.v2.ord != 0x3FFF)
        abort();
    if (f.v2.ord != 0x3FFF && f.v2.ord > r->peer_ird)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t n = size;
    struct iwarp_mpa_neg_cfg c;
    iwarp_mpa_neg_cfg_default(&c, IWARP_MPA_RESPONDER);
    uint8_t b0 = fuzz_take(&p, &n), b1 = fuzz_take(&p, &n);
    c.crc = b0 & 1;
    c.crc_required = (b0 >> 1) & 1;
    c.markers = (b0 >> 2) & 1;
    c.revision = (b0 >> 3) & 1 ? 1 : 2;
    c.rtr = (uint8_t)((b1 & 7) ? (b1 & 7) : IWARP_MPA_RTR_READ);
    c.pd_max_rx = (b0 >> 6) & 1 ? 256 : 0;
    c.timeout_ns = (uint64_t)fuzz_take(&p, &n) * 1000u;

    struct iwarp_mpa_neg neg;
    uint64_t now = 0;
    if (iwarp_mpa_neg_init(&neg, &c, now) != 0)
        abort();
    uint8_t sent[600];
    size_t sent_len = 0;
    static const uint8_t pd[16] = "responder-pdata";
    while (n > 0) {
        uint8_t op = fuzz_take(&p, &n);
        enum iwarp_mpa_neg_state before = iwarp_mpa_neg_state(&neg);
        switch (op % 7) {
        case 0:
        case 1:
        case 2: {
            size_t len = (size_t)(op >> 3) + 1;
            if (len > n)
                len = n;
            iwarp_ssize r = iwarp_mpa_neg_rx(&neg, p, len, now);
            if (r > (iwarp_ssize)len)
                abort();
            if (r == IWARP_ERR_STATE && iwarp_mpa_neg_state(&neg) != before)
                abort();
            p += len;
            n -= len;
            break;
        }
        case 3:
            now += (uint64_t)fuzz_take(&p, &n) * 100u;
            (void)iwarp_mpa_neg_handle_timeout(&neg, now);
            break;
        case 4: {
            struct iwarp_mpa_neg_answer a = {
                .ird = (uint16_t)(((unsigned)fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n)) & 0x3FFF),
                .ord = (uint16_t)(((unsigned)fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n)) & 0x3FFF),
                .pd = pd,
                .pd_len = (uint16_t)(op >> 4),
            };
            int r = (op >> 3) & 1 ? iwarp_mpa_neg_reject(&neg, &a)
                                  : iwarp_mpa_neg_accept(&neg, &a, now);
            if ((r == 0) != (before == IWARP_MPA_NEG_REQUEST))
                abort();
            if (r == 0) {
                uint8_t reply[600];
                size_t len = iwarp_mpa_neg_tx(&neg, reply, sizeof reply);
                check_reply(&neg, reply, len);
            }
            break;
        }
        case 5:
            sent_len += iwarp_mpa_neg_tx(&neg, sent + sent_len,
                                         (size_t)fuzz_take(&p, &n) % (sizeof sent - sent_len + 1));
            break;
        default: {
            uint8_t opcode = fuzz_take(&p, &n) & 0x0F;
            uint32_t len = fuzz_take(&p, &n) & 1;
            int r = iwarp_mpa_neg_first_fpdu(&neg, opcode, len, now);
            if (r == 0 && before != IWARP_MPA_NEG_WAIT_FIRST_FPDU)
                abort();
            if (r == 0 && iwarp_mpa_neg_result(&neg)->p2p && len != 0)
                abort();
            break;
        }
        }
        const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(&neg);
        if (iwarp_mpa_neg_state(&neg) == IWARP_MPA_NEG_FAILED) {
            if (r->err >= 0 || r->action == IWARP_MPA_ACT_NONE)
                abort();
        } else if (r->err != 0 || r->local_sends_first) {
            abort();
        }
    }
    (void)sent_len;
    return 0;
}
