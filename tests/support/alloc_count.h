/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Allocation hooks (struct iwarp_mem_hooks, include/iwarp/verbs.h) that count what a context
 * asks of them: every block, and apart the blocks of one size a test watches (a connection's
 * TX staging ring, say). The blocks come from libc. The counters are atomic: a context's
 * progress thread allocates too.
 *
 * Everything is static inline: each test file is its own executable.
 */
#ifndef IWARP_TESTS_ALLOC_COUNT_H
#define IWARP_TESTS_ALLOC_COUNT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "iwarp/verbs.h"

struct alloc_count {
    struct iwarp_mem_hooks hooks; /* for iwarp_ctx_attr.mem (its user is this struct) */
    atomic_uint allocs;           /* malloc_fn and calloc_fn calls */
    size_t watch;                 /* the block size counted apart (0: none) */
    atomic_uint watched;          /* blocks of exactly watch octets asked for */
};

static inline void alloc_count_note(struct alloc_count *c, size_t size)
{
    atomic_fetch_add(&c->allocs, 1);
    if (c->watch != 0 && size == c->watch)
        atomic_fetch_add(&c->watched, 1);
}

static inline void *alloc_count_malloc(size_t size, void *user)
{
    alloc_count_note(user, size);
    return malloc(size);
}

static inline void *alloc_count_calloc(size_t n, size_t size, void *user)
{
    alloc_count_note(user, n * size);
    return calloc(n, size);
}

static inline void alloc_count_free(void *p, void *user)
{
    (void)user;
    free(p);
}

/* Zero the counters and set the hooks up; watch: a block size to count apart (0: none). c must
 * outlive every context created with &c->hooks. */
static inline void alloc_count_init(struct alloc_count *c, size_t watch)
{
    c->hooks = (struct iwarp_mem_hooks){.malloc_fn = alloc_count_malloc,
                                        .calloc_fn = alloc_count_calloc,
                                        .free_fn = alloc_count_free,
                                        .user = c};
    atomic_init(&c->allocs, 0);
    c->watch = watch;
    atomic_init(&c->watched, 0);
}

#endif
