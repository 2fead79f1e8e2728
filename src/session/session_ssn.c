/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP-SSN send counter and receive reorder window (RFC 5043 §5.2.1, §6.1, §10). */
#include "session/session_ssn.h"

#include "iwarp/errors.h"
#include "util/ring.h"
#include "wire/wire_sctp.h"

void iwarp_sess_ssn_tx_init(struct iwarp_sess_ssn_tx *tx)
{
    /* RFC 5043 §6.1: "The DDP-SSN is reset to zero at the beginning of each DDP Stream
     * Session." */
    tx->next = 0;
    tx->unacked = 0;
}

int iwarp_sess_ssn_tx_take(struct iwarp_sess_ssn_tx *tx)
{
    /* RFC 5043 §10: DDP-SSN order is unambiguous only with fewer than 32768 chunks in
     * flight; the sender "MUST NOT rely upon ULP flow control for this purpose". */
    if (tx->unacked >= IWARP_SCTP_SSN_AHEAD_MAX)
        return IWARP_ERR_BUSY;
    tx->unacked++;
    return tx->next++; /* §5.2.1: +1 per chunk, wrapping like the SCTP SSN */
}

void iwarp_sess_ssn_tx_untake(struct iwarp_sess_ssn_tx *tx)
{
    /* The chunk that took the last DDP-SSN will never be sent: give the number back so the
     * next chunk carries it and the peer sees no gap (§6.1). */
    tx->next--;
    if (tx->unacked)
        tx->unacked--;
}

uint16_t iwarp_sess_ssn_tx_peek(const struct iwarp_sess_ssn_tx *tx)
{
    return tx->next;
}

void iwarp_sess_ssn_tx_acked(struct iwarp_sess_ssn_tx *tx, uint32_t n)
{
    tx->unacked = n >= tx->unacked ? 0 : (uint16_t)(tx->unacked - n);
}

int iwarp_sess_ssn_rx_init(struct iwarp_sess_ssn_rx *rx, struct iwarp_sess_ssn_slot *slots,
                           uint16_t nslots)
{
    /* RFC 5043 §10: DDP-SSNs 32768 or more ahead cannot be told from old ones. */
    if (!rx || !slots || nslots == 0 || nslots > IWARP_SCTP_SSN_AHEAD_MAX)
        return IWARP_ERR_INVAL;
    rx->slot = slots;
    rx->cap = nslots;
    rx->expected = 0;
    rx->base = 0;
    rx->held = 0;
    for (uint16_t i = 0; i < nslots; i++)
        slots[i].used = false;
    return 0;
}

int iwarp_sess_ssn_rx_reset(struct iwarp_sess_ssn_rx *rx)
{
    if (rx->held != 0)
        return IWARP_ERR_BUSY;
    rx->expected = 0; /* RFC 5043 §6.1 */
    rx->base = 0;
    return 0;
}

/* The slot of the chunk d (0..cap) ahead of the expected one. d = 0 and d = cap share the slot
 * `base`: an expected chunk is stored only when it arrived early and its turn has come but
 * next() has not popped it yet. */
static struct iwarp_sess_ssn_slot *slot_at(const struct iwarp_sess_ssn_rx *rx, uint32_t d)
{
    return &rx->slot[iwarp_ring_slot(rx->base, d, rx->cap)];
}

enum iwarp_sess_ssn_class iwarp_sess_ssn_rx_classify(const struct iwarp_sess_ssn_rx *rx,
                                                     uint16_t ssn)
{
    uint16_t d = (uint16_t)(ssn - rx->expected);
    /* RFC 5043 §10: with < 32768 in flight, a DDP-SSN "behind" by 16-bit serial arithmetic was
     * already handed over: a duplicate (§6.1: no repeats within a session). */
    if (d > IWARP_SCTP_SSN_AHEAD_MAX)
        return IWARP_SESS_SSN_DUP_OLD;
    if (d > rx->cap)
        return IWARP_SESS_SSN_TOO_FAR;
    const struct iwarp_sess_ssn_slot *s = slot_at(rx, d);
    if (s->used) {
        if (s->ssn == ssn)
            return IWARP_SESS_SSN_DUP_HELD;
        /* The slot is taken by the other DDP-SSN mapping to it (d = cap vs. a ready d = 0
         * chunk not yet popped): no room for this one yet. */
        if (d != 0)
            return IWARP_SESS_SSN_TOO_FAR;
    }
    return d == 0 ? IWARP_SESS_SSN_EXPECTED : IWARP_SESS_SSN_AHEAD;
}

static void advance(struct iwarp_sess_ssn_rx *rx)
{
    rx->expected++;
    rx->base = (uint16_t)iwarp_ring_advance(rx->base, 1, rx->cap);
}

int iwarp_sess_ssn_rx_accept(struct iwarp_sess_ssn_rx *rx, uint16_t ssn,
                             struct iwarp_sess_chunk chunk)
{
    switch (iwarp_sess_ssn_rx_classify(rx, ssn)) {
    case IWARP_SESS_SSN_EXPECTED:
        advance(rx);
        return IWARP_SESS_SSN_IN_ORDER;
    case IWARP_SESS_SSN_AHEAD: {
        /* A gap before it: hold it until the gap fills (RFC 5043 §6.1 normative order). */
        struct iwarp_sess_ssn_slot *s = slot_at(rx, (uint16_t)(ssn - rx->expected));
        s->chunk = chunk;
        s->ssn = ssn;
        s->used = true;
        rx->held++;
        return IWARP_SESS_SSN_HELD;
    }
    default:
        return IWARP_ERR_SCTP_SSN;
    }
}

bool iwarp_sess_ssn_rx_next(struct iwarp_sess_ssn_rx *rx, struct iwarp_sess_chunk *out)
{
    struct iwarp_sess_ssn_slot *s = &rx->slot[rx->base];
    if (!s->used || s->ssn != rx->expected)
        return false;
    *out = s->chunk;
    s->used = false;
    rx->held--;
    advance(rx);
    return true;
}

bool iwarp_sess_ssn_rx_drain(struct iwarp_sess_ssn_rx *rx, struct iwarp_sess_chunk *out)
{
    /* Held chunks lie at most cap ahead, so this walks at most cap + 1 positions in all. */
    while (rx->held > 0) {
        if (iwarp_sess_ssn_rx_next(rx, out))
            return true;
        advance(rx);
    }
    return false;
}

uint16_t iwarp_sess_ssn_rx_expected(const struct iwarp_sess_ssn_rx *rx)
{
    return rx->expected;
}

uint16_t iwarp_sess_ssn_rx_held(const struct iwarp_sess_ssn_rx *rx)
{
    return rx->held;
}
