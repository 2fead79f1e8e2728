/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the DDP-SSN window and counter (RFC 5043 §5.2.1, §6.1, §10) against a model: a window
 * size and start from the input, then accept() of DDP-SSNs near or far from the expected one,
 * next() (sometimes skipped, as a careless caller would), drain()+reset(), counter take/acked.
 * Invariants: every accepted handle comes back exactly once, in consecutive DDP-SSN order while
 * the session runs; each verdict agrees with the model (and with classify()); counts match. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "session/session_ssn.h"

static struct iwarp_sess_ssn_slot slots[2048];

/* Model: which DDP-SSNs are held (with their handle tag), the expected one, the count. */
static uint32_t held_tag[65536];
static uint8_t held[65536];

static void take_back(uint32_t tag, uint32_t *out_count, uint8_t *returned)
{
    if (tag == 0 || returned[tag])
        abort(); /* a handle given back twice, or one never accepted */
    returned[tag] = 1;
    (*out_count)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t n = size;
    uint8_t b0 = fuzz_take(&p, &n);
    uint16_t cap = (uint16_t)(1 + (b0 & 0x3F));
    if (b0 & 0x40)
        cap = (uint16_t)(1 + ((unsigned)fuzz_take(&p, &n) << 3 | (b0 & 7)));
    if (cap > sizeof slots / sizeof slots[0])
        cap = sizeof slots / sizeof slots[0];
    struct iwarp_sess_ssn_rx rx;
    if (iwarp_sess_ssn_rx_init(&rx, slots, cap) != 0)
        abort();
    /* Start anywhere: the window is relative, so an empty window at any expected DDP-SSN is a
     * reachable state (white-box shortcut for 65535 in-order chunks). */
    uint16_t start = (uint16_t)((unsigned)fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n));
    rx.expected = start;
    uint16_t exp = start;
    memset(held, 0, sizeof held);
    uint32_t nheld = 0, tag_next = 1, accepted = 0, returned_n = 0;
    static uint8_t returned[1u << 16];
    memset(returned, 0, sizeof returned);

    struct iwarp_sess_ssn_tx tx;
    iwarp_sess_ssn_tx_init(&tx);
    uint16_t tx_next = 0;
    uint32_t tx_unacked = 0;

    while (n > 0 && tag_next < (1u << 16) - 1) {
        uint8_t op = fuzz_take(&p, &n);
        switch (op % 6) {
        case 0:
        case 1:
        case 2: { /* accept */
            uint16_t ssn;
            if (op & 0x80)
                ssn = (uint16_t)((unsigned)fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n));
            else
                ssn = (uint16_t)(exp + (int8_t)fuzz_take(&p, &n) / 2 + (op & 0x40 ? cap : 0));
            uint16_t d = (uint16_t)(ssn - exp);
            /* The model's verdict. */
            int want;
            if (d >= 32768u || d > cap || held[ssn])
                want = IWARP_ERR_SCTP_SSN;
            else if (d == cap && held[exp])
                want = IWARP_ERR_SCTP_SSN; /* shares the slot of a ready, unpopped chunk */
            else
                want = d == 0 ? IWARP_SESS_SSN_IN_ORDER : IWARP_SESS_SSN_HELD;
            enum iwarp_sess_ssn_class cls = iwarp_sess_ssn_rx_classify(&rx, ssn);
            uint32_t tag = tag_next++;
            int r = iwarp_sess_ssn_rx_accept(
                &rx, ssn, (struct iwarp_sess_chunk){.ptr = (void *)(uintptr_t)tag, .len = ssn});
            if (r != want)
                abort();
            if ((r == IWARP_SESS_SSN_IN_ORDER) != (cls == IWARP_SESS_SSN_EXPECTED) ||
                (r == IWARP_SESS_SSN_HELD) != (cls == IWARP_SESS_SSN_AHEAD))
                abort();
            if (r == IWARP_SESS_SSN_IN_ORDER) {
                accepted++;
                take_back(tag, &returned_n, returned);
                exp++;
            } else if (r == IWARP_SESS_SSN_HELD) {
                accepted++;
                held[ssn] = 1;
                held_tag[ssn] = tag;
                nheld++;
            }
            break;
        }
        case 3: { /* next: pops exactly the expected one if held */
            struct iwarp_sess_chunk c;
            bool got = iwarp_sess_ssn_rx_next(&rx, &c);
            if (got != (held[exp] != 0))
                abort();
            if (got) {
                if (c.len != exp || (uintptr_t)c.ptr != held_tag[exp])
                    abort();
                take_back((uint32_t)(uintptr_t)c.ptr, &returned_n, returned);
                held[exp] = 0;
                nheld--;
                exp++;
            }
            break;
        }
        case 4: { /* teardown: drain everything ascending, then a new session at 0 */
            if ((op & 0x10) == 0)
                break;
            if (iwarp_sess_ssn_rx_reset(&rx) != (nheld ? IWARP_ERR_BUSY : 0))
                abort();
            struct iwarp_sess_chunk c;
            uint16_t last_d = 0;
            bool first = true;
            while (iwarp_sess_ssn_rx_drain(&rx, &c)) {
                uint16_t s = (uint16_t)c.len, dd = (uint16_t)(s - exp);
                if (!held[s] || (uintptr_t)c.ptr != held_tag[s] || (!first && dd <= last_d))
                    abort();
                first = false;
                last_d = dd;
                held[s] = 0;
                nheld--;
                take_back((uint32_t)(uintptr_t)c.ptr, &returned_n, returned);
            }
            if (nheld != 0 || iwarp_sess_ssn_rx_reset(&rx) != 0)
                abort();
            exp = 0;
            break;
        }
        default: { /* the send counter (§10) */
            uint8_t k = fuzz_take(&p, &n);
            if (k & 1) {
                iwarp_sess_ssn_tx_acked(&tx, k);
                tx_unacked = k >= tx_unacked ? 0 : tx_unacked - k;
            } else {
                for (unsigned i = 0; i < (unsigned)k * 97u; i++) {
                    int s = iwarp_sess_ssn_tx_take(&tx);
                    if (tx_unacked >= 32767u) {
                        if (s != IWARP_ERR_BUSY)
                            abort();
                        break;
                    }
                    if (s != tx_next)
                        abort();
                    tx_next++;
                    tx_unacked++;
                }
            }
            if (iwarp_sess_ssn_tx_peek(&tx) != tx_next)
                abort();
            break;
        }
        }
        if (iwarp_sess_ssn_rx_expected(&rx) != exp || iwarp_sess_ssn_rx_held(&rx) != nheld)
            abort();
        if (accepted != returned_n + nheld)
            abort();
    }
    /* Every handle the window took comes back. */
    struct iwarp_sess_chunk c;
    while (iwarp_sess_ssn_rx_drain(&rx, &c))
        take_back((uint32_t)(uintptr_t)c.ptr, &returned_n, returned);
    if (returned_n != accepted || iwarp_sess_ssn_rx_held(&rx) != 0)
        abort();
    return 0;
}
