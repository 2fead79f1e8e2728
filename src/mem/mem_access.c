/* SPDX-License-Identifier: BSD-2-Clause */
/* Data-path access checks with their Terminate causes (RFC 5040 §7.2, RFC 5041 §7.1). */
#include "mem/mem_access.h"

#include "iwarp/errors.h"

/* Checks 1-5 of mem_access.h (local: the STag must name an MR). Returns 0 and the local
 * address of the byte at to, or an IWARP_ERR_*. */
static int check(const struct iwarp_mem_table *t, uint32_t stag, uint64_t to, uint64_t len,
                 uint32_t need, uint32_t pd, uint32_t qp, int local, uint64_t *local_addr)
{
    struct iwarp_mem_entry *e;
    /* RFC 5041 §7.1 check 1 / RFC 5040 §7.2 check 4a: the STag is valid. A wrong key is a
     * different STag; an invalidated one "cannot be accessed" (RFC 5040 §2.4). */
    if (iwarp_mem_stag_lookup(t, stag, &e) != 0 || e->state != IWARP_MEM_VALID)
        return IWARP_ERR_STAG_INVALID;
    if (local && e->kind != IWARP_MEM_MR) /* windows grant remote access only */
        return IWARP_ERR_STAG_INVALID;
    /* RFC 5041 §8.2, RFC 5042 §2.2.4 (PD), §2.2.5 (single-stream scope of a type-2 window);
     * RFC 5040 §7.2 check 4b. */
    if (e->pd != pd || (e->kind == IWARP_MEM_MW_TYPE2 && e->qp != qp))
        return IWARP_ERR_STAG_NOT_ASSOC;
    /* RFC 5041 §7.1 check 2 ("allows Placement"), RFC 5040 §8.1.1 #5, RFC 5042 §6.3.5. */
    if ((e->access & need) != need)
        return IWARP_ERR_MEM_ACCESS;
    /* RFC 5041 §7.1 check 5, RFC 5040 §7.2 check 4e: the 64-bit sum TO + len does not wrap. */
    if (len > UINT64_MAX - to)
        return IWARP_ERR_MEM_TO_WRAP;
    /* RFC 5041 §7.1 checks 3-4, RFC 5040 §7.2 checks 4c-4d: [TO, TO + len) inside the STag's
     * range (base + length cannot wrap: mem_region.c refuses such ranges). */
    if (to < e->base || to + len > e->base + e->length)
        return IWARP_ERR_MEM_BOUNDS;
    if (local_addr != NULL)
        *local_addr = e->addr + (to - e->base);
    return 0;
}

/* Cause codes per verdict, indexed by -(err) - 80 (IWARP_ERR_STAG_INVALID .. MEM_TO_WRAP). */
static const uint8_t ddp_code[5] = {
    IWARP_TERM_DDP_T_INVALID_STAG,   /* STAG_INVALID */
    IWARP_TERM_DDP_T_STAG_NOT_ASSOC, /* STAG_NOT_ASSOC */
    IWARP_TERM_DDP_T_INVALID_STAG,   /* MEM_ACCESS: RFC 5041 has no code (siw_tagged_error) */
    IWARP_TERM_DDP_T_BASE_BOUNDS,    /* MEM_BOUNDS */
    IWARP_TERM_DDP_T_TO_WRAP,        /* MEM_TO_WRAP */
};
static const uint8_t rdmap_code[5] = {
    IWARP_TERM_RDMAP_INVALID_STAG,   /* STAG_INVALID */
    IWARP_TERM_RDMAP_STAG_NOT_ASSOC, /* STAG_NOT_ASSOC */
    IWARP_TERM_RDMAP_ACCESS,         /* MEM_ACCESS */
    IWARP_TERM_RDMAP_BASE_BOUNDS,    /* MEM_BOUNDS */
    IWARP_TERM_RDMAP_TO_WRAP,        /* MEM_TO_WRAP */
};

_Static_assert(IWARP_ERR_STAG_NOT_ASSOC == IWARP_ERR_STAG_INVALID - 1 &&
                   IWARP_ERR_MEM_ACCESS == IWARP_ERR_STAG_INVALID - 2 &&
                   IWARP_ERR_MEM_BOUNDS == IWARP_ERR_STAG_INVALID - 3 &&
                   IWARP_ERR_MEM_TO_WRAP == IWARP_ERR_STAG_INVALID - 4,
               "cause tables follow the error numbering");

int iwarp_mem_check_tagged(const struct iwarp_mem_table *t, const struct iwarp_mem_req *r,
                           enum iwarp_mem_cause flavour, uint64_t *local_addr,
                           struct iwarp_term_cause *cause)
{
    if (t == NULL || r == NULL)
        return IWARP_ERR_INVAL;
    if (local_addr != NULL)
        *local_addr = 0;
    /* RFC 5041 §5.2, RFC 5040 §5.2.1: zero-length accesses are not checked. */
    if (r->len == 0)
        return 0;
    int rc = check(t, r->stag, r->to, r->len, r->need, r->pd, r->qp, 0, local_addr);
    if (rc != 0 && cause != NULL) {
        unsigned i = (unsigned)(IWARP_ERR_STAG_INVALID - rc);
        if (flavour == IWARP_MEM_CAUSE_RDMAP) {
            cause->layer = IWARP_TERM_LAYER_RDMAP;
            cause->etype = IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT;
            cause->ecode = rdmap_code[i];
        } else {
            cause->layer = IWARP_TERM_LAYER_DDP;
            cause->etype = IWARP_TERM_DDP_ETYPE_TAGGED;
            cause->ecode = ddp_code[i];
        }
    }
    return rc;
}

int iwarp_mem_check_local(const struct iwarp_mem_table *t, uint32_t lkey, uint64_t addr,
                          uint64_t len, uint32_t need, uint32_t pd, uint64_t *local_addr)
{
    if (t == NULL)
        return IWARP_ERR_INVAL;
    if (local_addr != NULL)
        *local_addr = 0;
    if (len == 0)
        return 0;
    return check(t, lkey, addr, len, need, pd, 0, 1, local_addr);
}
