/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP receive-side validation of Untagged DDP Segments (RFC 5041 §7.1); see ddp_rx_untagged.h. */
#include "ddp/ddp_rx_untagged.h"

#include <stddef.h>

#include "iwarp/errors.h"
#include "util/ring.h"

int iwarp_ddp_rx_uq_init(struct iwarp_ddp_rx_uq *q, uint64_t *lens, uint32_t cap)
{
    if (q == NULL || (lens == NULL && cap > 0))
        return IWARP_ERR_INVAL;
    *q = (struct iwarp_ddp_rx_uq){.lens = lens, .cap = cap, .msn = IWARP_DDP_MSN_INIT};
    return 0;
}

int iwarp_ddp_rx_uq_post(struct iwarp_ddp_rx_uq *q, uint64_t len)
{
    if (q == NULL)
        return IWARP_ERR_INVAL;
    if (q->posted == q->cap)
        return IWARP_ERR_NOSPC;
    q->lens[iwarp_ring_slot(q->head, q->posted, q->cap)] = len;
    q->posted++;
    return 0;
}

static int reject(struct iwarp_term_cause *cause, uint8_t ecode)
{
    if (cause != NULL)
        *cause = (struct iwarp_term_cause){
            .layer = IWARP_TERM_LAYER_DDP, .etype = IWARP_TERM_DDP_ETYPE_UNTAGGED, .ecode = ecode};
    return IWARP_ERR_PROTO;
}

int iwarp_ddp_rx_uq_segment(struct iwarp_ddp_rx_uq *q, const struct iwarp_ddp_hdr *h, uint32_t len,
                            struct iwarp_ddp_rx_place *place, struct iwarp_term_cause *cause)
{
    if (q == NULL || h == NULL || h->tagged)
        return IWARP_ERR_INVAL;
    if (q->last_received)
        return IWARP_ERR_STATE;
    /* RFC 5041 §7.1 check 5, §5.3: in order, only the expected MSN is legal (see the header). */
    if (h->msn != q->msn)
        return reject(cause, IWARP_TERM_DDP_U_MSN_RANGE);
    /* RFC 5041 §7.1 check 2: the QN and MSN need an associated buffer. */
    if (q->posted == 0)
        return reject(cause, IWARP_TERM_DDP_U_NO_BUFFER);
    /* RFC 5041 §7.1 check 3, §5.3: the MO continues the octets already received. */
    if (h->mo != q->received)
        return reject(cause, IWARP_TERM_DDP_U_INVALID_MO);
    /* RFC 5041 §7.1 check 4, §7.2 code 0x05: MO + payload must fit the buffer (64-bit sum of
     * two 32-bit values: no wrap). */
    uint64_t end = (uint64_t)h->mo + len;
    if (end > q->lens[q->head])
        return reject(cause, IWARP_TERM_DDP_U_TOO_LONG);

    if (place != NULL)
        *place = (struct iwarp_ddp_rx_place){
            .offset = h->mo, .last = h->last, .msg_len = h->last ? end : 0};
    q->received = end;
    q->last_received = h->last;
    return 0;
}

int iwarp_ddp_rx_uq_complete(struct iwarp_ddp_rx_uq *q)
{
    if (q == NULL)
        return IWARP_ERR_INVAL;
    if (!q->last_received)
        return IWARP_ERR_STATE;
    /* last_received implies an accepted segment, hence a posted buffer (posted > 0, cap > 0). */
    q->head = iwarp_ring_advance(q->head, 1, q->cap);
    q->posted--;
    q->msn++; /* RFC 5041 §4.3: modulo 2^32, 0xFFFFFFFF wraps to 0 */
    q->received = 0;
    q->last_received = false;
    return 0;
}

int iwarp_ddp_rx_uq_skip(struct iwarp_ddp_rx_uq *q, const struct iwarp_ddp_hdr *h, uint32_t len,
                         struct iwarp_term_cause *cause)
{
    if (q == NULL || h == NULL || h->tagged || len != 0)
        return IWARP_ERR_INVAL;
    /* RFC 5041 §7.1 check 5: the expected MSN, with no message of it in progress. */
    if (h->msn != q->msn || q->received != 0 || q->last_received)
        return reject(cause, IWARP_TERM_DDP_U_MSN_RANGE);
    /* RFC 5041 §7.1 check 3, §5.2: one segment at MO 0 with L set. */
    if (h->mo != 0 || !h->last)
        return reject(cause, IWARP_TERM_DDP_U_INVALID_MO);
    q->msn++; /* RFC 5041 §4.3: modulo 2^32 */
    return 0;
}
