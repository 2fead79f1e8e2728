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
    if (t == NULL || entries == NULL || rng == NULL || capacity < 2 ||
        capacity - 1u > IWARP_STAG_INDEX_MAX)
        return IWARP_ERR_INVAL;
    memset(entries, 0, sizeof *entries * capacity);
    t->entries = entries;
    t->capacity = capacity;
    t->rng = rng;
    t->rng_ctx = rng_ctx;

    /* RFC 5042 §6.1.1: allocation order hard to predict. Fisher-Yates shuffle of the indices
     * 1 .. capacity - 1, kept in the (still unused) base fields, then linked in that order. */
    uint32_t n = capacity - 1u;
    for (uint32_t i = 0; i < n; i++)
        entries[1 + i].base = 1u + i;
    for (uint32_t i = n - 1u; i > 0; i--) {
        uint32_t j = rng_below(t, i + 1u);
        uint64_t tmp = entries[1 + i].base;
        entries[1 + i].base = entries[1 + j].base;
        entries[1 + j].base = tmp;
    }
    t->free_head = (uint32_t)entries[1].base;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = (uint32_t)entries[1 + i].base;
        entries[idx].next = i + 1u < n ? (uint32_t)entries[2 + i].base : 0u;
    }
    t->free_tail = (uint32_t)entries[n].base;
    for (uint32_t i = 1; i < capacity; i++)
        entries[i].base = 0;
    t->nfree = n;
    return 0;
}

int iwarp_mem_stag_alloc(struct iwarp_mem_table *t, uint8_t kind, uint32_t pd, uint32_t *stag)
{
    if (t == NULL || stag == NULL || kind > IWARP_MEM_MW_TYPE2)
        return IWARP_ERR_INVAL;
    if (t->free_head == 0)
        return IWARP_ERR_STAG_EXHAUSTED;
    uint32_t idx = t->free_head;
    struct iwarp_mem_entry *e = &t->entries[idx];
    t->free_head = e->next;
    if (t->free_head == 0)
        t->free_tail = 0;
    t->nfree--;

    uint8_t key;
    if (e->flags & IWARP_MEM_F_SEEDED)
        key = fresh_key(t, e); /* RFC 5042 §6.1.1: no quick reuse of an STag */
    else
        key = (uint8_t)t->rng(t->rng_ctx); /* first key of this index: unpredictable */
    uint8_t keep = e->flags & IWARP_MEM_F_STALE;
    uint8_t stale = e->stale_key;
    memset(e, 0, sizeof *e);
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
    memset(e, 0, sizeof *e);
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
