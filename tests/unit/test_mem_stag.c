/* SPDX-License-Identifier: BSD-2-Clause */
/* STag table: index allocation (never 0, FIFO, random order), key rotation, lookup, stale keys. */
#include <string.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_stag.h"

/* xorshift32; ctx points at the state. */
static uint32_t const_rng(void *ctx)
{
    return *(uint32_t *)ctx;
}

TEST(stag_layout_and_inc_key)
{
    ASSERT_EQ_U(iwarp_stag_make(0x123456, 0x78), 0x12345678u);
    ASSERT_EQ_U(iwarp_stag_index(0x12345678u), 0x123456u);
    ASSERT_EQ_U(iwarp_stag_key(0x12345678u), 0x78u);
    /* ibv_inc_rkey: only the low 8 bits move, and they wrap. */
    ASSERT_EQ_U(iwarp_stag_inc_key(0x123456FFu), 0x12345600u);
    ASSERT_EQ_U(iwarp_stag_inc_key(0x00000101u), 0x00000102u);
}

TEST(init_rejects_bad_arguments)
{
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[4];
    uint32_t s = 1;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 0, harness_xorshift32, &s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 1, harness_xorshift32, &s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 4, NULL, &s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mem_table_init(&t, NULL, 4, harness_xorshift32, &s), IWARP_ERR_INVAL);
    /* 2^24 + 1 entries would need index 2^24, which does not fit 24 bits (not touched). */
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 0x1000001u, harness_xorshift32, &s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 4, harness_xorshift32, &s), 0);
    ASSERT_EQ(t.nfree, 3);
}

TEST(first_key_comes_from_rng)
{
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[2];
    uint32_t v = 0x123456A7u;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 2, const_rng, &v), 0);
    uint32_t stag;
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 9, &stag), 0);
    ASSERT_EQ_U(stag, 0x000001A7u); /* index 1, key = low octet of the rng */
    struct iwarp_mem_entry *p;
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, stag, &p), 0);
    ASSERT_EQ(p->state, IWARP_MEM_INVALID);
    ASSERT_EQ(p->pd, 9);
    ASSERT_EQ(p->kind, IWARP_MEM_MR);
}

/* 300 allocate/free cycles of the only index: the key never repeats consecutively, STag 0
 * never appears, and the keys are not a simple counter. */
static void rotate_300(iwarp_mem_rng_fn rng, uint32_t seed, int expect_spread)
{
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[2];
    uint32_t s = seed;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 2, rng, &s), 0);
    uint32_t prev = 0;
    int seen[256] = {0}, distinct = 0, unit_steps = 0;
    for (int i = 0; i < 300; i++) {
        uint32_t stag;
        ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 1, &stag), 0);
        ASSERT_NE(stag, 0);
        ASSERT_EQ_U(iwarp_stag_index(stag), 1u);
        if (i > 0) {
            ASSERT_NE(iwarp_stag_key(stag), iwarp_stag_key(prev));
            if ((uint8_t)(iwarp_stag_key(stag) - iwarp_stag_key(prev)) == 1)
                unit_steps++;
        }
        if (!seen[iwarp_stag_key(stag)]++)
            distinct++;
        ASSERT_EQ(iwarp_mem_stag_free(&t, stag), 0);
        /* the freed STag is gone at once */
        struct iwarp_mem_entry *p;
        ASSERT_EQ(iwarp_mem_stag_lookup(&t, stag, &p), IWARP_ERR_STAG_INVALID);
        prev = stag;
    }
    if (expect_spread) {
        ASSERT_TRUE(distinct > 150); /* 300 uniform draws over 255 values: ~175 expected */
        ASSERT_TRUE(unit_steps < 20);
    }
}

TEST(key_rotation_300_random_rng)
{
    rotate_300(harness_xorshift32, 0x9E3779B9u, 1);
}

TEST(key_rotation_300_constant_rng)
{
    /* Even a broken rng that always returns 0 cannot make a key repeat. */
    rotate_300(const_rng, 0, 0);
    rotate_300(const_rng, 0xFFFFFFFFu, 0);
}

TEST(exhaustion_and_reuse_fifo)
{
    enum { CAP = 17 };
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[CAP];
    uint32_t s = 12345;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, CAP, harness_xorshift32, &s), 0);
    uint32_t stags[CAP - 1];
    int used[CAP] = {0};
    for (int i = 0; i < CAP - 1; i++) {
        ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MW_TYPE2, 3, &stags[i]), 0);
        uint32_t idx = iwarp_stag_index(stags[i]);
        ASSERT_TRUE(idx >= 1 && idx < CAP); /* never index 0 */
        ASSERT_EQ(used[idx], 0);            /* never twice */
        used[idx] = 1;
    }
    ASSERT_EQ(t.nfree, 0);
    uint32_t extra;
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 3, &extra), IWARP_ERR_STAG_EXHAUSTED);
    /* FIFO: freed indices come back in the order they were freed. */
    ASSERT_EQ(iwarp_mem_stag_free(&t, stags[5]), 0);
    ASSERT_EQ(iwarp_mem_stag_free(&t, stags[2]), 0);
    ASSERT_EQ(t.nfree, 2);
    uint32_t a, b;
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 3, &a), 0);
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 3, &b), 0);
    ASSERT_EQ_U(iwarp_stag_index(a), iwarp_stag_index(stags[5]));
    ASSERT_EQ_U(iwarp_stag_index(b), iwarp_stag_index(stags[2]));
    ASSERT_NE(a, stags[5]);
    ASSERT_NE(b, stags[2]);
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 3, &extra), IWARP_ERR_STAG_EXHAUSTED);
}

/* Without frees, indices come out as a permutation of 1..n whose order depends on the rng. */
static void alloc_order(uint32_t seed, uint32_t *order, int n)
{
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[64];
    uint32_t s = seed;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, (uint32_t)n + 1, harness_xorshift32, &s), 0);
    for (int i = 0; i < n; i++) {
        uint32_t stag;
        ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &stag), 0);
        order[i] = iwarp_stag_index(stag);
    }
}

TEST(initial_order_is_random_permutation)
{
    uint32_t a[63], b[63];
    alloc_order(1, a, 63);
    alloc_order(2, b, 63);
    int same = 0, seq = 0;
    for (int i = 0; i < 63; i++) {
        int found = 0;
        for (int j = 0; j < 63; j++)
            found += a[j] == (uint32_t)i + 1;
        ASSERT_EQ(found, 1);
        same += a[i] == b[i];
        seq += a[i] == (uint32_t)i + 1;
    }
    ASSERT_TRUE(same < 10);
    ASSERT_TRUE(seq < 10);
}

/* The shuffle drawn one step per allocation is uniform: over 4,800 seeds, each of the 4 indices
 * of a 5-entry table comes out in each of the 4 positions about 1,200 times (a step drawing from
 * the wrong range, or a slot not moved, skews these counts far outside the bounds). */
TEST(initial_order_is_uniform)
{
    enum { CAP = 5, N = CAP - 1, SEEDS = 4800 };
    uint32_t count[N][CAP] = {{0}};
    for (uint32_t seed = 1; seed <= SEEDS; seed++) {
        uint32_t order[N];
        alloc_order(seed * 2654435761u, order, N);
        for (int pos = 0; pos < N; pos++)
            count[pos][order[pos]]++;
    }
    for (int pos = 0; pos < N; pos++)
        for (int idx = 1; idx < CAP; idx++)
            ASSERT_TRUE(count[pos][idx] > 1050 && count[pos][idx] < 1350);
}

/* Every never-used index goes before any freed one (RFC 5042 §6.1.1: reuse as slowly as
 * possible), whatever the frees in between, and freed ones then come back oldest first. */
TEST(never_used_indices_go_before_freed_ones)
{
    enum { CAP = 9 };
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[CAP];
    uint32_t s = 99;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, CAP, harness_xorshift32, &s), 0);
    uint32_t a, b, c;
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &a), 0);
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &b), 0);
    ASSERT_EQ(iwarp_mem_stag_free(&t, b), 0);
    ASSERT_EQ(iwarp_mem_stag_free(&t, a), 0);
    ASSERT_EQ(t.nfree, CAP - 1);
    int seen[CAP] = {0};
    seen[iwarp_stag_index(a)] = seen[iwarp_stag_index(b)] = 1;
    for (int i = 0; i < CAP - 3; i++) {
        ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &c), 0);
        ASSERT_EQ(seen[iwarp_stag_index(c)], 0); /* a never-used index */
        seen[iwarp_stag_index(c)] = 1;
    }
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &c), 0);
    ASSERT_EQ_U(iwarp_stag_index(c), iwarp_stag_index(b)); /* freed first */
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &c), 0);
    ASSERT_EQ_U(iwarp_stag_index(c), iwarp_stag_index(a));
    ASSERT_EQ(t.nfree, 0);
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &c), IWARP_ERR_STAG_EXHAUSTED);
}

/* A table over a zeroed array writes no entry when created, and an allocation writes at most its
 * own entry and one slot of the shuffle: a large table costs only the pages its STags reach. */
TEST(zeroed_table_is_touched_only_where_allocated)
{
    enum { CAP = 4096 };
    static struct iwarp_mem_entry e[CAP];
    static const struct iwarp_mem_entry zero;
    struct iwarp_mem_table t;
    uint32_t s = 5;
    ASSERT_EQ(iwarp_mem_table_init_zeroed(&t, e, CAP, harness_xorshift32, &s), 0);
    ASSERT_EQ(s, 5u); /* no rng call */
    for (int i = 0; i < CAP; i++)
        ASSERT_TRUE(memcmp(&e[i], &zero, sizeof zero) == 0);
    ASSERT_EQ(t.nfree, CAP - 1);
    for (int k = 1; k <= 3; k++) {
        uint32_t stag;
        ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 0, &stag), 0);
        int touched = 0;
        for (int i = 0; i < CAP; i++)
            touched += memcmp(&e[i], &zero, sizeof zero) != 0;
        ASSERT_TRUE(touched <= 2 * k);
    }
}

TEST(lookup_requires_index_and_key)
{
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[8];
    uint32_t s = 77;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 8, harness_xorshift32, &s), 0);
    uint32_t stag;
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 1, &stag), 0);
    struct iwarp_mem_entry *p;
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, stag, &p), 0);
    ASSERT_TRUE(p == &e[iwarp_stag_index(stag)]);
    ASSERT_EQ_U(iwarp_mem_stag_of(&t, p), stag);
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, stag ^ 0x01u, &p), IWARP_ERR_STAG_INVALID);
    ASSERT_TRUE(p == NULL);
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, stag ^ 0x80u, &p), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, 0, &p), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, 0x000000FFu, &p), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, iwarp_stag_make(8, 0), &p), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, 0xFFFFFFFFu, &p), IWARP_ERR_STAG_INVALID);
    /* the index alone finds it (for consumer re-keying), but not a free index */
    ASSERT_EQ(iwarp_mem_stag_lookup_index(&t, stag ^ 0x5Au, &p), 0);
    uint32_t other = stag + 0x100u > iwarp_stag_make(7, 0xFF) ? stag - 0x100u : stag + 0x100u;
    ASSERT_EQ(iwarp_mem_stag_lookup_index(&t, other, &p), IWARP_ERR_STAG_INVALID);
    /* double free / wrong key free */
    ASSERT_EQ(iwarp_mem_stag_free(&t, stag ^ 1u), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_stag_free(&t, stag), 0);
    ASSERT_EQ(iwarp_mem_stag_free(&t, stag), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, 3, 1, &stag), IWARP_ERR_INVAL);
}

TEST(consumer_keys_never_stale)
{
    struct iwarp_mem_table t;
    struct iwarp_mem_entry e[2];
    uint32_t s = 4242;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 2, harness_xorshift32, &s), 0);
    uint32_t stag;
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 1, &stag), 0);
    struct iwarp_mem_entry *p;
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, stag, &p), 0);
    uint8_t k0 = iwarp_stag_key(stag);
    /* the same key is refused; a new one validates */
    ASSERT_EQ(iwarp_mem_stag_validate_key(&t, p, k0), IWARP_ERR_STAG_STALE);
    ASSERT_EQ(p->state, IWARP_MEM_INVALID);
    ASSERT_EQ(iwarp_mem_stag_validate_key(&t, p, (uint8_t)(k0 + 1)), 0);
    ASSERT_EQ(p->state, IWARP_MEM_VALID);
    iwarp_mem_stag_invalidate(&t, p);
    ASSERT_EQ(p->state, IWARP_MEM_INVALID);
    /* the key of the last valid STag cannot come straight back */
    ASSERT_EQ(iwarp_mem_stag_validate_key(&t, p, (uint8_t)(k0 + 1)), IWARP_ERR_STAG_STALE);
    ASSERT_EQ(iwarp_mem_stag_validate_key(&t, p, (uint8_t)(k0 + 2)), 0);
    /* free + reallocate: the table's key differs, and the old one stays refused */
    uint32_t live = iwarp_mem_stag_of(&t, p);
    ASSERT_EQ(iwarp_mem_stag_free(&t, live), 0);
    uint32_t again;
    ASSERT_EQ(iwarp_mem_stag_alloc(&t, IWARP_MEM_MR, 1, &again), 0);
    ASSERT_NE(again, live);
    ASSERT_EQ(iwarp_mem_stag_lookup(&t, again, &p), 0);
    ASSERT_EQ(iwarp_mem_stag_validate_key(&t, p, iwarp_stag_key(live)), IWARP_ERR_STAG_STALE);
    /* table-picked keys avoid both the current and the stale key */
    for (int i = 0; i < 200; i++) {
        uint8_t cur = p->key, stale = p->stale_key;
        uint32_t n = iwarp_mem_stag_validate_new_key(&t, p);
        ASSERT_NE(iwarp_stag_key(n), cur);
        ASSERT_NE(iwarp_stag_key(n), stale);
        ASSERT_EQ(p->state, IWARP_MEM_VALID);
    }
}
