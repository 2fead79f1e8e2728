/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the MPA initiator (RFC 5044 §7.1, RFC 6581): a configuration, then the peer's bytes
 * in arbitrary pieces interleaved with time steps, tx drains and first_sent(), all taken from
 * the input. Invariants: rx never consumes more than given; a failure is sticky and carries an
 * action; a negotiated result obeys RFC 6581 §9.1/§9.2; what tx() produced is our Request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mpa/mpa_negotiate.h"

static void check_result(const struct iwarp_mpa_neg *neg, const struct iwarp_mpa_neg_cfg *c)
{
    const struct iwarp_mpa_neg_result *r = iwarp_mpa_neg_result(neg);
    enum iwarp_mpa_neg_state s = iwarp_mpa_neg_state(neg);
    if (s == IWARP_MPA_NEG_FAILED) {
        if (r->err >= 0 || r->action == IWARP_MPA_ACT_NONE)
            abort();
        return;
    }
    if (r->err != 0)
        abort();
    if (s != IWARP_MPA_NEG_SEND_FIRST && s != IWARP_MPA_NEG_ESTABLISHED)
        return;
    if (!r->local_sends_first || r->crc != (c->crc || r->crc) || r->markers_rx != c->markers)
        abort();
    if (r->enhanced != c->enhanced || r->rev < 1 || r->rev > c->revision)
        abort();
    if (r->enhanced) {
        /* RFC 6581 §9.1 */
        if (r->ord != 0x3FFF && r->peer_ird != 0x3FFF && r->ord > r->peer_ird)
            abort();
        if (r->ird != 0x3FFF && r->peer_ord != 0x3FFF && r->peer_ord > r->ird)
            abort();
    }
    if (r->p2p) {
        /* RFC 6581 §9.2: exactly one type, supported by both. */
        if ((r->rtr & (r->rtr - 1)) != 0 || (r->rtr & c->rtr & r->peer_rtr) == 0)
            abort();
        if (r->rtr == IWARP_MPA_RTR_READ && r->peer_ird == 0)
            abort();
    } else if (r->rtr != 0 || c->peer2peer) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t n = size;
    struct iwarp_mpa_neg_cfg c;
    iwarp_mpa_neg_cfg_default(&c, IWARP_MPA_INITIATOR);
    uint8_t b0 = fuzz_take(&p, &n), b1 = fuzz_take(&p, &n);
    c.crc = b0 & 1;
    c.crc_required = (b0 >> 1) & 1;
    c.markers = (b0 >> 2) & 1;
    c.enhanced = !((b0 >> 3) & 1);
    c.peer2peer = c.enhanced && ((b0 >> 4) & 1);
    c.revision = c.enhanced || ((b0 >> 5) & 1) ? 2 : 1;
    c.rtr = (uint8_t)((b1 & 7) ? (b1 & 7) : IWARP_MPA_RTR_WRITE);
    c.rtr_pref = (uint8_t)(c.rtr & (1u << ((b1 >> 3) % 3)));
    c.ird = (uint16_t)(((unsigned)fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n)) & 0x3FFF);
    c.ord = (uint16_t)(((unsigned)fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n)) & 0x3FFF);
    static const uint8_t pd[8] = "privdata";
    c.pd = pd;
    c.pd_len = (uint16_t)(b1 >> 5);
    c.pd_max_rx = (b0 >> 6) & 1 ? 256 : 0;
    c.timeout_ns = (uint64_t)fuzz_take(&p, &n) * 1000u;

    struct iwarp_mpa_neg neg;
    uint64_t now = 0;
    if (iwarp_mpa_neg_init(&neg, &c, now) != 0)
        abort(); /* every cfg built above is valid */
    uint8_t sent[600];
    size_t sent_len = 0;
    while (n > 0) {
        uint8_t op = fuzz_take(&p, &n);
        switch (op % 6) {
        case 0:
        case 1:
        case 2: {
            size_t len = (size_t)(op >> 3) + 1;
            if (len > n)
                len = n;
            enum iwarp_mpa_neg_state before = iwarp_mpa_neg_state(&neg);
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
        case 4:
            sent_len += iwarp_mpa_neg_tx(&neg, sent + sent_len,
                                         (size_t)fuzz_take(&p, &n) % (sizeof sent - sent_len + 1));
            break;
        default: {
            enum iwarp_mpa_neg_state before = iwarp_mpa_neg_state(&neg);
            int r = iwarp_mpa_neg_first_sent(&neg);
            if ((r == 0) != (before == IWARP_MPA_NEG_SEND_FIRST))
                abort();
            break;
        }
        }
        check_result(&neg, &c);
    }
    sent_len += iwarp_mpa_neg_tx(&neg, sent + sent_len, sizeof sent - sent_len);
    if (sent_len > 0) {
        /* What we sent is our own Request (or nothing, if the machine failed first). */
        struct iwarp_mpa_frame f;
        iwarp_ssize r = iwarp_mpa_frame_decode(sent, sent_len, &f);
        if (r == IWARP_ERR_SHORT)
            return 0; /* dropped by a failure half-way */
        if (r != (iwarp_ssize)sent_len || f.reply || f.s != c.enhanced || f.m != c.markers)
            abort();
    }
    return 0;
}
