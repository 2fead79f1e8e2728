/* SPDX-License-Identifier: BSD-2-Clause */
/* Random sequences of memory operations (register, fast-register, windows, bind, invalidate,
 * data-path checks) on a small STag table, with the table's invariants checked after each:
 * every allocated STag resolves to its entry, no two allocated entries share an STag, INVALID
 * STags never pass a check, an STag that an operation killed fails at once, window and MR
 * bookkeeping agree, the free list is exactly the FREE entries, and a reused index never gets
 * back its previous key. */
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"

enum { CAP = 12, NPD = 2, NQP = 3 };

static uint32_t rng_fn(void *ctx)
{
    return fuzz_rng_next(ctx);
}

struct ctx {
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[CAP];
    uint8_t last_key[CAP]; /* key of each index when it was last freed */
    uint8_t was_freed[CAP];
    const uint8_t *p;
    size_t n;
};

static uint8_t take(struct ctx *c)
{
    return fuzz_take(&c->p, &c->n);
}

/* A 64-bit value biased towards the interesting ones around a base. */
static uint64_t take_u64(struct ctx *c, uint64_t base, uint64_t len)
{
    uint8_t k = take(c);
    uint64_t small = take(c);
    switch (k % 8) {
    case 0:
        return base + small;
    case 1:
        return base + len - small;
    case 2:
        return base - small;
    case 3:
        return UINT64_MAX - small;
    case 4:
        return small;
    case 5:
        return len + small;
    case 6:
        return base + len + small;
    default: {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = v << 8 | take(c);
        return v;
    }
    }
}

/* Some STag: an allocated entry's current one, perturbed now and then, or raw bytes. */
static uint32_t take_stag(struct ctx *c)
{
    uint8_t k = take(c);
    uint32_t idx = take(c) % CAP;
    /* prefer allocated entries: the next one from idx on, if any */
    for (uint32_t i = 0; i < CAP && c->e[idx].state == IWARP_MEM_FREE; i++)
        idx = (idx + 1) % CAP;
    uint32_t stag = iwarp_mem_stag_of(&c->t, &c->e[idx]);
    switch (k % 8) {
    case 0:
        return stag ^ (uint32_t)(take(c) | 1u);
    case 1:
        return (uint32_t)take(c) << 24 | (uint32_t)take(c) << 16 | (uint32_t)take(c) << 8 | take(c);
    case 2:
        return iwarp_stag_inc_key(stag);
    default:
        return stag;
    }
}

/* Mostly the current STag of an allocated MR (want_mr) or window, from a random start; else
 * any STag as take_stag() makes it. */
static uint32_t take_stag_of(struct ctx *c, int want_mr)
{
    if (take(c) % 8 == 0)
        return take_stag(c);
    uint32_t idx = take(c) % CAP;
    for (uint32_t i = 0; i < CAP; i++, idx = (idx + 1) % CAP) {
        const struct iwarp_mem_entry *e = &c->e[idx];
        if (e->state != IWARP_MEM_FREE && (e->kind == IWARP_MEM_MR) == want_mr)
            return iwarp_mem_stag_of(&c->t, e);
    }
    return take_stag(c);
}

/* The entry an STag names, or NULL. */
static struct iwarp_mem_entry *entry_of(struct ctx *c, uint32_t stag)
{
    struct iwarp_mem_entry *e;
    return iwarp_mem_stag_lookup(&c->t, stag, &e) == 0 ? e : NULL;
}

static void check_dead(struct ctx *c, uint32_t stag)
{
    struct iwarp_mem_req r = {stag, 0, 1, 0, 0, 0};
    struct iwarp_mem_entry *e = entry_of(c, stag);
    FUZZ_CHECK(e == NULL || e->state != IWARP_MEM_VALID);
    for (uint32_t pd = 0; pd < NPD; pd++) {
        r.pd = pd;
        FUZZ_CHECK(iwarp_mem_check_tagged(&c->t, &r, IWARP_MEM_CAUSE_DDP, NULL, NULL) ==
                   IWARP_ERR_STAG_INVALID);
    }
}

static void invariants(struct ctx *c)
{
    struct iwarp_mem_table *t = &c->t;
    uint32_t nfree = 0, nbound[CAP] = {0};
    for (uint32_t i = 1; i < CAP; i++) {
        struct iwarp_mem_entry *e = &c->e[i];
        uint32_t stag = iwarp_mem_stag_of(t, e);
        FUZZ_CHECK(iwarp_stag_index(stag) == i && stag != 0);
        if (e->state == IWARP_MEM_FREE) {
            nfree++;
            FUZZ_CHECK(entry_of(c, stag) == NULL);
            continue;
        }
        /* every allocated STag resolves to its entry; other keys do not */
        FUZZ_CHECK(entry_of(c, stag) == e);
        FUZZ_CHECK(entry_of(c, stag ^ 0x5Au) == NULL);
        for (uint32_t j = 1; j < i; j++)
            FUZZ_CHECK(c->e[j].state == IWARP_MEM_FREE || iwarp_mem_stag_of(t, &c->e[j]) != stag);
        struct iwarp_mem_req r = {stag, e->base, 1, 0, e->pd, e->qp};
        int rc = iwarp_mem_check_tagged(t, &r, IWARP_MEM_CAUSE_RDMAP, NULL, NULL);
        if (e->state == IWARP_MEM_INVALID) {
            FUZZ_CHECK(rc == IWARP_ERR_STAG_INVALID);
            continue;
        }
        FUZZ_CHECK(e->base + e->length >= e->base && e->base + e->length != 0);
        FUZZ_CHECK(rc == (e->length ? 0 : IWARP_ERR_MEM_BOUNDS));
        if (e->kind == IWARP_MEM_MR)
            continue;
        /* a VALID window sits inside a VALID MR of its PD that allows binding */
        FUZZ_CHECK(e->mr_index > 0 && e->mr_index < CAP);
        struct iwarp_mem_entry *mr = &c->e[e->mr_index];
        nbound[e->mr_index]++;
        FUZZ_CHECK(mr->kind == IWARP_MEM_MR && mr->state == IWARP_MEM_VALID);
        FUZZ_CHECK(mr->pd == e->pd && (mr->access & IWARP_MEM_ACCESS_MW_BIND));
        FUZZ_CHECK((e->access & ~IWARP_MEM_ACCESS_REMOTE) == 0);
        FUZZ_CHECK(e->base >= mr->base && e->base + e->length <= mr->base + mr->length);
        FUZZ_CHECK(e->addr == mr->addr + (e->base - mr->base));
    }
    for (uint32_t i = 1; i < CAP; i++)
        FUZZ_CHECK(c->e[i].kind != IWARP_MEM_MR || c->e[i].state == IWARP_MEM_FREE ||
                   c->e[i].nbound == nbound[i]);
    FUZZ_CHECK(nfree == t->nfree);
    /* the free list holds the freed indices, the rest of the free ones were never used */
    uint32_t walked = 0;
    for (uint32_t i = t->free_head; i != 0; i = c->e[i].next) {
        FUZZ_CHECK(i < CAP && c->e[i].state == IWARP_MEM_FREE && walked < nfree);
        FUZZ_CHECK(c->e[i].flags & IWARP_MEM_F_SEEDED);
        walked++;
    }
    FUZZ_CHECK(walked + t->nfresh == nfree);
}

static struct iwarp_mem_range take_range(struct ctx *c)
{
    struct iwarp_mem_range r;
    r.addr = (uint64_t)take(c) << 12;
    r.iova = take(c) & 1 ? r.addr : take_u64(c, 0, 0);
    r.length = take_u64(c, 0, 0x1000);
    uint8_t a = take(c);
    r.access = (a & 0x3Fu) | (a & 0x40u ? 0x11u : 0u); /* often LOCAL_WRITE | MW_BIND */
    return r;
}

static void op(struct ctx *c)
{
    struct iwarp_mem_table *t = &c->t;
    uint8_t o = take(c);
    uint32_t pd = take(c) % NPD, qp = take(c) % NQP, stag, out = 0;
    struct iwarp_mem_entry *e;
    int rc;
    switch (o % 11) {
    case 0: {
        struct iwarp_mem_range r = take_range(c);
        rc = iwarp_mem_reg_mr(t, pd, &r, &out);
        if (rc == 0) {
            uint32_t i = iwarp_stag_index(out);
            FUZZ_CHECK(!c->was_freed[i] || iwarp_stag_key(out) != c->last_key[i]);
        }
        break;
    }
    case 1:
        rc = iwarp_mem_alloc_stag(t, pd, &out);
        if (rc == 0) {
            uint32_t i = iwarp_stag_index(out);
            FUZZ_CHECK(!c->was_freed[i] || iwarp_stag_key(out) != c->last_key[i]);
        }
        break;
    case 2: {
        stag = take_stag(c);
        struct iwarp_mem_range r = take_range(c);
        uint32_t ns = take(c) & 1 ? iwarp_stag_inc_key(stag) : stag ^ take(c);
        e = entry_of(c, stag);
        uint8_t old_key = e ? e->key : 0;
        rc = iwarp_mem_fast_reg(t, stag, pd, ns, &r);
        if (rc == 0) {
            FUZZ_CHECK(iwarp_stag_key(ns) != old_key);
            FUZZ_CHECK(entry_of(c, ns) != NULL);
            check_dead(c, stag);
        }
        break;
    }
    case 3:
    case 5:
        stag = take_stag(c);
        rc = o % 11 == 3 ? iwarp_mem_dereg_mr(t, stag) : iwarp_mem_dealloc_mw(t, stag);
        if (rc == 0) {
            uint32_t i = iwarp_stag_index(stag);
            c->last_key[i] = iwarp_stag_key(stag);
            c->was_freed[i] = 1;
            check_dead(c, stag);
        }
        break;
    case 4:
        rc = iwarp_mem_alloc_mw(t, pd, (uint8_t)(take(c) % 4), &out);
        break;
    case 6: {
        stag = take_stag_of(c, 0);
        struct iwarp_mem_bind b;
        b.mr_stag = take_stag_of(c, 1);
        struct iwarp_mem_entry *mr = entry_of(c, b.mr_stag);
        uint64_t base = mr ? mr->base : 0, len = mr ? mr->length : 0;
        b.addr = take_u64(c, base, len);
        b.length = take_u64(c, 0, len);
        b.access = take(c) & 0x1Fu;
        if (b.access & 0x10u)
            b.access &= IWARP_MEM_ACCESS_REMOTE; /* mostly remote rights only */
        b.new_stag = take(c) % 4 ? iwarp_stag_inc_key(stag) : take_stag(c);
        e = entry_of(c, stag);
        if (e != NULL && take(c) % 4 != 0)
            pd = e->pd; /* mostly posted on a QP of the window's PD */
        int was_valid = e && e->state == IWARP_MEM_VALID;
        rc = iwarp_mem_bind_mw(t, stag, pd, qp, &b, &out);
        if (rc == 0 && was_valid && out != stag)
            check_dead(c, stag); /* a type-1 rebind kills the old STag */
        if (rc == 0 && entry_of(c, out)->state == IWARP_MEM_INVALID)
            check_dead(c, out); /* a zero-length type-1 bind unbinds */
        if (rc != 0 && e != NULL)
            FUZZ_CHECK(e->state == (was_valid ? IWARP_MEM_VALID : IWARP_MEM_INVALID));
        break;
    }
    case 7:
        stag = take_stag(c);
        rc = iwarp_mem_local_inv(t, stag, pd);
        if (rc == 0)
            check_dead(c, stag);
        break;
    case 8: {
        stag = take_stag_of(c, take(c) & 1);
        if ((e = entry_of(c, stag)) != NULL && take(c) % 4 != 0)
            pd = e->pd;
        struct iwarp_term_cause cause = {0};
        rc = iwarp_mem_remote_inv(t, stag, pd, qp, &cause);
        if (rc == 0) {
            check_dead(c, stag);
        } else {
            FUZZ_CHECK(cause.layer == IWARP_TERM_LAYER_RDMAP && cause.ecode == 0x09);
            FUZZ_CHECK(cause.etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT ||
                       cause.etype == IWARP_TERM_RDMAP_ETYPE_REMOTE_OP);
        }
        break;
    }
    case 9: {
        struct iwarp_mem_req r;
        r.stag = take_stag_of(c, take(c) & 1);
        e = entry_of(c, r.stag);
        if (e != NULL && take(c) % 4 != 0)
            pd = e->pd;
        r.to = take_u64(c, e ? e->base : 0, e ? e->length : 0);
        r.len = take_u64(c, 0, e ? e->length : 0);
        r.need = take(c) & 0xF;
        r.pd = pd;
        r.qp = qp;
        struct iwarp_term_cause cause = {0xFF, 0xFF, 0xFF};
        uint64_t la;
        enum iwarp_mem_cause fl = take(c) & 1 ? IWARP_MEM_CAUSE_RDMAP : IWARP_MEM_CAUSE_DDP;
        rc = iwarp_mem_check_tagged(t, &r, fl, &la, &cause);
        if (rc == 0 && r.len != 0) {
            /* a pass means: valid, associated, rights, inside, no wrap */
            FUZZ_CHECK(e != NULL && e->state == IWARP_MEM_VALID && e->pd == pd);
            FUZZ_CHECK(e->kind != IWARP_MEM_MW_TYPE2 || e->qp == qp);
            FUZZ_CHECK((e->access & r.need) == r.need);
            FUZZ_CHECK(r.to >= e->base && r.len <= e->length &&
                       r.to - e->base <= e->length - r.len);
            FUZZ_CHECK(la == e->addr + (r.to - e->base));
        } else if (rc != 0) {
            FUZZ_CHECK(rc <= IWARP_ERR_STAG_INVALID && rc >= IWARP_ERR_MEM_TO_WRAP);
            FUZZ_CHECK(cause.layer == (fl == IWARP_MEM_CAUSE_DDP ? 1 : 0) && cause.etype == 1);
            FUZZ_CHECK(cause.ecode <= 4);
        }
        break;
    }
    default:
        stag = take_stag(c);
        e = entry_of(c, stag);
        uint64_t a = take_u64(c, e ? e->base : 0, e ? e->length : 0);
        uint64_t len = take_u64(c, 0, e ? e->length : 0);
        uint32_t need = take(c) & 1;
        rc = iwarp_mem_check_local(t, stag, a, len, need, pd, NULL);
        /* a pass on a non-empty SGE means: a VALID MR of this PD with the right, around it */
        FUZZ_CHECK(rc != 0 || len == 0 ||
                   (e != NULL && e->kind == IWARP_MEM_MR && e->state == IWARP_MEM_VALID &&
                    e->pd == pd && (e->access & need) == need && a >= e->base && len <= e->length &&
                    a - e->base <= e->length - len));
        break;
    }
    (void)rc;
    invariants(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ctx c;
    memset(&c, 0, sizeof c);
    c.p = data;
    c.n = size;
    uint32_t seed = (uint32_t)take(&c) | (uint32_t)take(&c) << 8;
    if (iwarp_mem_table_init(&c.t, c.e, CAP, rng_fn, &seed) != 0)
        __builtin_trap();
    invariants(&c);
    for (int steps = 0; c.n > 0 && steps < 4096; steps++)
        op(&c);
    return 0;
}
