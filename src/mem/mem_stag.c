/* SPDX-License-Identifier: BSD-2-Clause */
/* The STag table: index allocation (random-order FIFO), key rotation, lookup, validity. */
#include "mem/mem_stag.h"

#include <string.h>

#include "iwarp/errors.h"

/* A value in [0, n) from 32 random bits (multiply-shift; the bias is below n / 2^32). */
static uint32_t rng_below(struct iwarp_mem_table *t, uint32_t n)
{
    return (uint32_t)(((uint64_t)t->rng(t->rng_ctx) * n) >> 32);
}

/* A fresh key for e, drawn uniformly from the keys other than e's current key and its stale
 * key (RFC 5042 §6.1.1: a reused index never gets back the key of the STag the peer last knew
 * as valid, and the next key is not predictable). Skips the excluded values in ascending order. */
static uint8_t fresh_key(struct iwarp_mem_table *t, const struct iwarp_mem_entry *e)
{
    uint32_t a = e->key;
    uint32_t b = (e->flags & IWARP_MEM_F_STALE) ? e->stale_key : e->key;
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    uint32_t k = rng_below(t, a == b ? 255u : 254u);
    if (k >= lo)
        k++;
    if (a != b && k >= hi)
        k++;
    return (uint8_t)k;
}

int iwarp_mem_table_init(struct iwarp_mem_table *t, struct iwarp_mem_entry *entries,
                         uint32_t capacity, iwarp_mem_rng_fn rng, void *rng_ctx)
{
    int rc = iwarp_mem_table_init_zeroed(t, entries, capacity, rng, rng_ctx);
    if (rc == 0) /* init_zeroed wrote no entry */
        memset(entries, 0, sizeof *entries * capacity);
    return rc;
}

int iwarp_mem_table_init_zeroed(struct iwarp_mem_table *t, struct iwarp_mem_entry *entries,
                                uint32_t capacity, iwarp_mem_rng_fn rng, void *rng_ctx)
{
    if (t == NULL || entries == NULL || rng == NULL || capacity < 2 ||
        capacity - 1u > IWARP_STAG_INDEX_MAX)
        return IWARP_ERR_INVAL;
    *t = (struct iwarp_mem_table){
        .entries = entries,
        .capacity = capacity,
        .nfree = capacity - 1u,
        .nfresh = capacity - 1u,
        .rng = rng,
        .rng_ctx = rng_ctx,
    };
    return 0;
}

/* The next never-used index, in an order drawn from the rng (RFC 5042 §6.1.1: allocation order
 * hard to predict). A Fisher-Yates shuffle of 1 .. capacity - 1 done one step per allocation:
 * slot p of the permutation is entries[1 + p].perm, 0 standing for 1 + p (the zeroed table is
 * the identity), and the slots below `drawn` are spent. Each step draws one of the slots left
 * and moves the first one left into it, so creating a table touches no entry and costs no rng
 * call. */
static uint32_t draw_fresh(struct iwarp_mem_table *t)
{
    uint32_t drawn = t->capacity - 1u - t->nfresh;
    uint32_t p = drawn + rng_below(t, t->nfresh);
    uint32_t *slot = &t->entries[1u + p].perm;
    uint32_t first = t->entries[1u + drawn].perm;
    uint32_t idx = *slot ? *slot : 1u + p;
    *slot = first ? first : 1u + drawn;
    t->nfresh--;
    return idx;
}

/* Zero an entry but for the table's own bookkeeping (its permutation slot). */
static void clear_entry(struct iwarp_mem_entry *e)
{
    uint32_t perm = e->perm;
    memset(e, 0, sizeof *e);
    e->perm = perm;
}

int iwarp_mem_stag_alloc(struct iwarp_mem_table *t, uint8_t kind, uint32_t pd, uint32_t *stag)
{
    if (t == NULL || stag == NULL || kind > IWARP_MEM_MW_TYPE2)
        return IWARP_ERR_INVAL;
    if (t->nfree == 0)
        return IWARP_ERR_STAG_EXHAUSTED;
    /* RFC 5042 §6.1.1: "reused at as slow a rate as possible": every never-used index goes
     * before a freed one, and freed ones come back oldest first. */
    uint32_t idx;
    if (t->nfresh > 0) {
        idx = draw_fresh(t);
    } else {
        idx = t->free_head;
        t->free_head = t->entries[idx].next;
        if (t->free_head == 0)
            t->free_tail = 0;
    }
    struct iwarp_mem_entry *e = &t->entries[idx];
    t->nfree--;

    uint8_t key;
    if (e->flags & IWARP_MEM_F_SEEDED)
        key = fresh_key(t, e); /* RFC 5042 §6.1.1: no quick reuse of an STag */
    else
        key = (uint8_t)t->rng(t->rng_ctx); /* first key of this index: unpredictable */
    uint8_t keep = e->flags & IWARP_MEM_F_STALE;
    uint8_t stale = e->stale_key;
    clear_entry(e);
    e->key = key;
    e->stale_key = stale;
    e->flags = (uint8_t)(keep | IWARP_MEM_F_SEEDED);
    e->kind = kind;
    e->pd = pd;
    e->state = IWARP_MEM_INVALID;
    *stag = iwarp_stag_make(idx, key);
    return 0;
}

static int find(const struct iwarp_mem_table *t, uint32_t stag, int match_key,
                struct iwarp_mem_entry **out)
{
    *out = NULL;
    uint32_t idx = iwarp_stag_index(stag);
    if (t == NULL || idx == 0 || idx >= t->capacity)
        return IWARP_ERR_STAG_INVALID;
    struct iwarp_mem_entry *e = &t->entries[idx];
    if (e->state == IWARP_MEM_FREE || e->state == IWARP_MEM_RETIRED ||
        (match_key && e->key != iwarp_stag_key(stag)))
        return IWARP_ERR_STAG_INVALID;
    *out = e;
    return 0;
}

int iwarp_mem_stag_lookup(const struct iwarp_mem_table *t, uint32_t stag,
                          struct iwarp_mem_entry **out)
{
    return find(t, stag, 1, out);
}

int iwarp_mem_stag_lookup_index(const struct iwarp_mem_table *t, uint32_t stag,
                                struct iwarp_mem_entry **out)
{
    return find(t, stag, 0, out);
}

uint32_t iwarp_mem_stag_of(const struct iwarp_mem_table *t, const struct iwarp_mem_entry *e)
{
    return iwarp_stag_make((uint32_t)(e - t->entries), e->key);
}

void iwarp_mem_stag_invalidate(struct iwarp_mem_table *t, struct iwarp_mem_entry *e)
{
    if (e->state != IWARP_MEM_VALID)
        return;
    if (e->kind != IWARP_MEM_MR) {
        struct iwarp_mem_entry *mr = &t->entries[e->mr_index];
        mr->nbound--;
        e->mr_index = 0;
        e->qp = 0;
    }
    e->stale_key = e->key;
    e->flags |= IWARP_MEM_F_STALE;
    e->state = IWARP_MEM_INVALID;
    t->gen++;
}

int iwarp_mem_stag_validate_key(struct iwarp_mem_table *t, struct iwarp_mem_entry *e, uint8_t key)
{
    (void)t;
    /* RFC 5042 §6.1.1: the STag the peer last knew as valid must not come straight back; and
     * a bind or fast-register changes the key (rxe_check_bind_mw: "bind MW with same key"). */
    if (key == e->key || ((e->flags & IWARP_MEM_F_STALE) && key == e->stale_key))
        return IWARP_ERR_STAG_STALE;
    e->key = key;
    e->state = IWARP_MEM_VALID;
    return 0;
}

uint32_t iwarp_mem_stag_validate_new_key(struct iwarp_mem_table *t, struct iwarp_mem_entry *e)
{
    if (e->state == IWARP_MEM_VALID) {
        e->stale_key = e->key;
        e->flags |= IWARP_MEM_F_STALE;
        t->gen++; /* the old STag names nothing now */
    }
    e->key = fresh_key(t, e);
    e->state = IWARP_MEM_VALID;
    return iwarp_mem_stag_of(t, e);
}

void iwarp_mem_entry_free(struct iwarp_mem_table *t, struct iwarp_mem_entry *e)
{
    iwarp_mem_stag_invalidate(t, e); /* unbinds a valid window from its MR */
    uint32_t idx = (uint32_t)(e - t->entries);
    if (e->state == IWARP_MEM_RETIRED)
        t->nretired--;
    uint8_t key = e->key;
    uint8_t seeded = e->flags & IWARP_MEM_F_SEEDED;
    clear_entry(e);
    e->key = key; /* kept: the next allocation of this index picks a different one */
    e->stale_key = key;
    e->flags = (uint8_t)(seeded | IWARP_MEM_F_STALE);
    e->state = IWARP_MEM_FREE;
    if (t->free_tail != 0)
        t->entries[t->free_tail].next = idx;
    else
        t->free_head = idx;
    t->free_tail = idx;
    t->nfree++;
}

int iwarp_mem_stag_free(struct iwarp_mem_table *t, uint32_t stag)
{
    struct iwarp_mem_entry *e;
    int rc = iwarp_mem_stag_lookup(t, stag, &e);
    if (rc != 0)
        return rc;
    if (e->kind == IWARP_MEM_MR && e->nbound != 0)
        return IWARP_ERR_BUSY;
    iwarp_mem_entry_free(t, e);
    return 0;
}
