/* SPDX-License-Identifier: BSD-2-Clause */
/* Where Tagged DDP Segments are placed and whether they match a solicited sink (RFC 5041 §7.1). */
#include "ddp/ddp_rx_tagged.h"

#include "iwarp/errors.h"

int iwarp_ddp_rx_tagged_target(const struct iwarp_mem_table *t, const struct iwarp_mem_req *r,
                               uint64_t *addr, struct iwarp_term_cause *cause)
{
    if (t == NULL || r == NULL || addr == NULL)
        return IWARP_ERR_INVAL;
    *addr = 0;
    /* RFC 5041 §7.1 checks 1-5 on the Data Sink STag and TO, DDP causes (RFC 5041 §7.2). A
     * zero-length segment passes unchecked (RFC 5041 §5.2) and places nothing. */
    return iwarp_mem_check_tagged(t, r, IWARP_MEM_CAUSE_DDP, addr, cause);
}

static int sink_error(struct iwarp_term_cause *cause, uint8_t ecode)
{
    if (cause != NULL)
        *cause =
            (struct iwarp_term_cause){IWARP_TERM_LAYER_DDP, IWARP_TERM_DDP_ETYPE_TAGGED, ecode};
    return IWARP_ERR_READ_RESP;
}

int iwarp_ddp_rx_sink_check(const struct iwarp_ddp_rx_sink *s, const struct iwarp_ddp_hdr *h,
                            uint32_t len, struct iwarp_term_cause *cause)
{
    if (s == NULL || h == NULL)
        return IWARP_ERR_INVAL;
    if (len != 0) {
        /* RFC 5041 §5.2: the STag and TO of a zero-length segment are not checked. */
        /* RFC 5040 §5.2.2, RFC 5041 §7.1 check 1: the STag the Read Request named. */
        if (h->stag != s->stag)
            return sink_error(cause, IWARP_TERM_DDP_T_INVALID_STAG);
        /* RFC 5041 §7.1 check 5: TO + len does not wrap. */
        if (len > UINT64_MAX - h->to)
            return sink_error(cause, IWARP_TERM_DDP_T_TO_WRAP);
        /* RFC 5041 §7.1 checks 3-4 against the sink: sink TO <= TO, TO + len <= sink end
         * (computed as offsets: the sink end itself may not be representable). */
        if (h->to < s->to || h->to - s->to > s->len || len > s->len - (h->to - s->to))
            return sink_error(cause, IWARP_TERM_DDP_T_BASE_BOUNDS);
    }
    /* RFC 5040 §5.2.2: the Response carries exactly the Read Message Size; never more octets
     * than that, and on the last segment exactly that many. */
    uint64_t total = (uint64_t)s->received + len;
    if (total > s->len || (h->last && total != s->len))
        return sink_error(cause, IWARP_TERM_DDP_T_BASE_BOUNDS);
    return 0;
}
