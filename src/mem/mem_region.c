/* SPDX-License-Identifier: BSD-2-Clause */
/* Memory regions and windows: registration, fast-register, bind, local/remote invalidation. */
#include "mem/mem_region.h"

#include "iwarp/errors.h"

/* ibv_reg_mr(3): known flags only; "If IBV_ACCESS_REMOTE_WRITE or IBV_ACCESS_REMOTE_ATOMIC is
 * set, then IBV_ACCESS_LOCAL_WRITE must be set too." Then the range must not wrap. */
static int check_range(const struct iwarp_mem_range *r)
{
    if (r == NULL || (r->access & ~IWARP_MEM_ACCESS_ALL) != 0)
        return IWARP_ERR_INVAL;
    if ((r->access & (IWARP_MEM_ACCESS_REMOTE_WRITE | IWARP_MEM_ACCESS_REMOTE_ATOMIC)) &&
        !(r->access & IWARP_MEM_ACCESS_LOCAL_WRITE))
        return IWARP_ERR_INVAL;
    /* RFC 5041 §7.1 check 5: no TO of the region may need a wrapping sum, so neither may its
     * end (base + length is at most 2^64 - 1); the local range must not wrap either. */
    if (r->length == 0 || r->length > UINT64_MAX - r->iova || r->length > UINT64_MAX - r->addr)
        return IWARP_ERR_INVAL;
    return 0;
}

static void set_range(struct iwarp_mem_entry *e, const struct iwarp_mem_range *r)
{
    e->addr = r->addr;
    e->base = r->iova;
    e->length = r->length;
    e->access = r->access;
}

int iwarp_mem_reg_mr(struct iwarp_mem_table *t, uint32_t pd, const struct iwarp_mem_range *r,
                     uint32_t *stag)
{
    int rc = check_range(r);
    if (rc != 0)
        return rc;
    uint32_t s;
    rc = iwarp_mem_stag_alloc(t, IWARP_MEM_MR, pd, &s);
    if (rc != 0)
        return rc;
    struct iwarp_mem_entry *e;
    (void)iwarp_mem_stag_lookup(t, s, &e);
    set_range(e, r);
    e->state = IWARP_MEM_VALID; /* a registered MR is valid at once (ibv_reg_mr) */
    *stag = s;
    return 0;
}

int iwarp_mem_alloc_stag(struct iwarp_mem_table *t, uint32_t pd, uint32_t *stag)
{
    uint32_t s;
    int rc = iwarp_mem_stag_alloc(t, IWARP_MEM_MR, pd, &s);
    if (rc != 0)
        return rc;
    struct iwarp_mem_entry *e;
    (void)iwarp_mem_stag_lookup(t, s, &e);
    e->flags |= IWARP_MEM_F_FASTREG; /* stays INVALID until fast-registered */
    *stag = s;
    return 0;
}

int iwarp_mem_fast_reg(struct iwarp_mem_table *t, uint32_t stag, uint32_t pd, uint32_t new_stag,
                       const struct iwarp_mem_range *r)
{
    struct iwarp_mem_entry *e;
    int rc = iwarp_mem_stag_lookup(t, stag, &e);
    if (rc != 0)
        return rc;
    if (e->kind != IWARP_MEM_MR || !(e->flags & IWARP_MEM_F_FASTREG))
        return IWARP_ERR_STAG_INVALID;
    if (e->pd != pd) /* RFC 5042 §2.2.4: resources of one PD only */
        return IWARP_ERR_STAG_NOT_ASSOC;
    if (e->state == IWARP_MEM_VALID) /* siw_fastreg_mr: "STag already valid" */
        return IWARP_ERR_STATE;
    if (iwarp_stag_index(new_stag) != iwarp_stag_index(stag))
        return IWARP_ERR_INVAL;
    rc = check_range(r);
    if (rc != 0)
        return rc;
    rc = iwarp_mem_stag_validate_key(t, e, iwarp_stag_key(new_stag));
    if (rc != 0)
        return rc;
    set_range(e, r);
    return 0;
}

static struct iwarp_mem_entry *mr_by_index(struct iwarp_mem_table *t, uint32_t lkey)
{
    uint32_t i = iwarp_stag_index(lkey);
    if (i == 0 || i >= t->capacity)
        return NULL;
    struct iwarp_mem_entry *e = &t->entries[i];
    return e->state != IWARP_MEM_FREE && e->kind == IWARP_MEM_MR ? e : NULL;
}

void iwarp_mem_hold(struct iwarp_mem_table *t, uint32_t lkey)
{
    struct iwarp_mem_entry *e = mr_by_index(t, lkey);
    if (e)
        e->nwr++;
}

void iwarp_mem_release(struct iwarp_mem_table *t, uint32_t lkey)
{
    struct iwarp_mem_entry *e = mr_by_index(t, lkey);
    if (e && e->nwr && --e->nwr == 0 && e->state == IWARP_MEM_RETIRED)
        iwarp_mem_entry_free(t, e); /* deregistered meanwhile: the last user let go */
}

bool iwarp_mem_held_usable(const struct iwarp_mem_table *t, uint32_t lkey)
{
    /* A held index is never freed, so the index alone names the MR the WR resolved. */
    uint32_t i = iwarp_stag_index(lkey);
    return t->nretired == 0 || i >= t->capacity || t->entries[i].state != IWARP_MEM_RETIRED;
}

int iwarp_mem_dereg_mr(struct iwarp_mem_table *t, uint32_t stag)
{
    struct iwarp_mem_entry *e;
    int rc = iwarp_mem_stag_lookup(t, stag, &e);
    if (rc != 0)
        return rc;
    if (e->kind != IWARP_MEM_MR)
        return IWARP_ERR_STAG_INVALID;
    if (e->nbound != 0) /* verbs: deregistering under bound windows is an error */
        return IWARP_ERR_BUSY;
    if (e->nwr == 0)
        return iwarp_mem_stag_free(t, stag);
    /* Posted work requests still name it: it goes at once, as an RNIC's (ibv_dereg_mr does not
     * wait for them), and they fail when they reach it (iwarp_mem_held_usable). The index
     * stays taken until the last of them lets go, so none of them can reach a newer MR. */
    iwarp_mem_stag_invalidate(t, e);
    e->state = IWARP_MEM_RETIRED;
    t->nretired++;
    return 0;
}

int iwarp_mem_alloc_mw(struct iwarp_mem_table *t, uint32_t pd, uint8_t type, uint32_t *stag)
{
    if (type != IWARP_MEM_MW_TYPE1 && type != IWARP_MEM_MW_TYPE2)
        return IWARP_ERR_INVAL;
    return iwarp_mem_stag_alloc(t, type, pd, stag);
}

int iwarp_mem_dealloc_mw(struct iwarp_mem_table *t, uint32_t stag)
{
    struct iwarp_mem_entry *e;
    int rc = iwarp_mem_stag_lookup(t, stag, &e);
    if (rc != 0)
        return rc;
    if (e->kind == IWARP_MEM_MR)
        return IWARP_ERR_STAG_INVALID;
    return iwarp_mem_stag_free(t, stag); /* ibv_alloc_mw(3): unbinds a bound window */
}

/* The MR side of a bind: which MR, and may this window cover this range with these rights. */
static int check_bind_mr(const struct iwarp_mem_table *t, const struct iwarp_mem_entry *mw,
                         const struct iwarp_mem_bind *b, struct iwarp_mem_entry **mr_out)
{
    struct iwarp_mem_entry *mr;
    int rc = iwarp_mem_stag_lookup(t, b->mr_stag, &mr);
    if (rc != 0 || mr->kind != IWARP_MEM_MR || mr->state != IWARP_MEM_VALID)
        return IWARP_ERR_STAG_INVALID;
    if (mr->pd != mw->pd) /* RFC 5042 §2.2.4 */
        return IWARP_ERR_STAG_NOT_ASSOC;
    if (!(mr->access & IWARP_MEM_ACCESS_MW_BIND)) /* IBTA C10-73 */
        return IWARP_ERR_MEM_ACCESS;
    /* IBTA C10-74: a writable window needs memory the MR lets be written. */
    if ((b->access & (IWARP_MEM_ACCESS_REMOTE_WRITE | IWARP_MEM_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & IWARP_MEM_ACCESS_LOCAL_WRITE))
        return IWARP_ERR_MEM_ACCESS;
    if (b->length > UINT64_MAX - b->addr) /* RFC 5041 §7.1 check 5 for every TO of it */
        return IWARP_ERR_MEM_TO_WRAP;
    /* RFC 5042 §6.3.4: the window exposes only TOs of its MR (IBTA C10-75). */
    if (b->addr < mr->base || b->addr + b->length > mr->base + mr->length)
        return IWARP_ERR_MEM_BOUNDS;
    *mr_out = mr;
    return 0;
}

int iwarp_mem_bind_mw(struct iwarp_mem_table *t, uint32_t mw_stag, uint32_t pd, uint32_t qp,
                      const struct iwarp_mem_bind *b, uint32_t *stag)
{
    struct iwarp_mem_entry *mw, *mr = NULL;
    if (b == NULL || stag == NULL)
        return IWARP_ERR_INVAL;
    int rc = iwarp_mem_stag_lookup(t, mw_stag, &mw);
    if (rc != 0)
        return rc;
    if (mw->kind == IWARP_MEM_MR)
        return IWARP_ERR_STAG_INVALID;
    if (mw->pd != pd) /* the QP posting the bind must be in the window's PD */
        return IWARP_ERR_STAG_NOT_ASSOC;
    if ((b->access & ~IWARP_MEM_ACCESS_REMOTE) != 0) /* windows carry remote rights only */
        return IWARP_ERR_INVAL;

    if (mw->kind == IWARP_MEM_MW_TYPE1 && b->length == 0) {
        /* ibv_alloc_mw(3): a zero-length bind invalidates a type-1 window. */
        iwarp_mem_stag_invalidate(t, mw);
        *stag = iwarp_mem_stag_of(t, mw);
        return 0;
    }
    if (mw->kind == IWARP_MEM_MW_TYPE2) {
        if (b->length == 0) /* IBTA o10-37.2.40: type 2 is invalidated by a WR, not a bind */
            return IWARP_ERR_INVAL;
        if (mw->state == IWARP_MEM_VALID) /* IBTA o10-37.2.30: bind only a free type-2 MW */
            return IWARP_ERR_STATE;
        if (iwarp_stag_index(b->new_stag) != iwarp_stag_index(mw_stag))
            return IWARP_ERR_INVAL;
    }
    rc = check_bind_mr(t, mw, b, &mr);
    if (rc != 0)
        return rc;
    if (mw->kind == IWARP_MEM_MW_TYPE2) {
        rc = iwarp_mem_stag_validate_key(t, mw, iwarp_stag_key(b->new_stag));
        if (rc != 0)
            return rc;
        mw->qp = qp; /* RFC 5041 §8.2 DDP Stream association */
    } else {
        iwarp_mem_stag_invalidate(t, mw); /* a rebind unbinds from the old MR first */
        (void)iwarp_mem_stag_validate_new_key(t, mw);
    }
    mw->mr_index = iwarp_stag_index(b->mr_stag);
    mr->nbound++;
    mw->base = b->addr;
    mw->length = b->length;
    mw->addr = mr->addr + (b->addr - mr->base);
    mw->access = b->access;
    *stag = iwarp_mem_stag_of(t, mw);
    return 0;
}

int iwarp_mem_local_inv(struct iwarp_mem_table *t, uint32_t stag, uint32_t pd)
{
    struct iwarp_mem_entry *e;
    int rc = iwarp_mem_stag_lookup(t, stag, &e);
    if (rc != 0)
        return rc;
    if (e->pd != pd) /* RFC 5042 §2.2.4: only a QP of the owner PD */
        return IWARP_ERR_STAG_NOT_ASSOC;
    if (e->kind == IWARP_MEM_MW_TYPE1) /* ibv_alloc_mw(3): unbound by a zero-length bind */
        return IWARP_ERR_STAG_CANT_INVAL;
    if (e->kind == IWARP_MEM_MR && e->nbound != 0)
        return IWARP_ERR_BUSY;
    iwarp_mem_stag_invalidate(t, e); /* no-op when already INVALID (verbs semantics) */
    return 0;
}

static int inv_fail(struct iwarp_term_cause *cause, uint8_t etype, int err)
{
    if (cause != NULL) {
        cause->layer = IWARP_TERM_LAYER_RDMAP;
        cause->etype = etype;
        cause->ecode = IWARP_TERM_RDMAP_CANT_INVALIDATE;
    }
    return err;
}

int iwarp_mem_remote_inv(struct iwarp_mem_table *t, uint32_t stag, uint32_t pd, uint32_t qp,
                         struct iwarp_term_cause *cause)
{
    const uint8_t op = IWARP_TERM_RDMAP_ETYPE_REMOTE_OP;
    const uint8_t prot = IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT;
    struct iwarp_mem_entry *e;
    /* RFC 5040 §7.2 check 4: "The Invalidate STag MUST be valid." */
    if (iwarp_mem_stag_lookup(t, stag, &e) != 0 || e->state != IWARP_MEM_VALID)
        return inv_fail(cause, op, IWARP_ERR_STAG_INVALID);
    /* RFC 5040 §7.2 check 5, §5.3: "The STag MUST be associated to this RDMAP Stream." */
    if (e->pd != pd || (e->kind == IWARP_MEM_MW_TYPE2 && e->qp != qp))
        return inv_fail(cause, prot, IWARP_ERR_STAG_NOT_ASSOC);
    /* Type-1 windows are not invalidated by Send with Invalidate (ibv_alloc_mw(3)); an MR
     * without remote rights was never Advertised (RFC 5040 §2.4 "Invalidate STag"). */
    if (e->kind == IWARP_MEM_MW_TYPE1 ||
        (e->kind == IWARP_MEM_MR && !(e->access & IWARP_MEM_ACCESS_REMOTE)))
        return inv_fail(cause, prot, IWARP_ERR_STAG_CANT_INVAL);
    if (e->kind == IWARP_MEM_MR && e->nbound != 0)
        return inv_fail(cause, op, IWARP_ERR_BUSY);
    iwarp_mem_stag_invalidate(t, e);
    return 0;
}
