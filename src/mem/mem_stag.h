/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The STag table (L2 mem): a caller-provided array of entries, one per STag index, with index
 * allocation, key rotation, lookup and the valid/invalid state of RFC 5040 §2.4/§5.3. Pure and
 * allocation-free: no malloc, no locks, no I/O; randomness comes in through a function pointer.
 * The layer above serialises access (one lock around the table).
 *
 * STag layout (a verbs convention, not a wire rule: the wire STag is opaque, RFC 5041 §4.2;
 * docs/interop-siw.md): STag = index(24) << 8 | key(8), lkey == rkey == STag, as
 * libibverbs and siw. The index is the slot in the entries array.
 *
 * Allocation rules (RFC 5040 §8.1.1 #8, RFC 5042 §6.1.1: STags "difficult to predict", "reused
 * at as slow a rate as possible"):
 *  - index 0 is never handed out, so STag 0 never names memory (Chelsio rejects STag 0; STag 0
 *    is what zero-length tagged segments carry, RFC 5041 §5.2);
 *  - indices never used yet come out in a random order (a Fisher-Yates shuffle drawn one step
 *    per allocation), then freed indices in a FIFO queue: a freed index is reused only after
 *    every other free index has been used;
 *  - the first key of an index comes from the rng; every later key the table picks (on
 *    reallocation, on a type-1 window bind) differs from the index's previous key, so a stale
 *    STag never becomes valid again on the next use of its index;
 *  - a key chosen by the consumer (type-2 window bind, fast-register: ibv_inc_rkey) must differ
 *    from the current key and from the key the index had when it was last valid or freed
 *    (IWARP_ERR_STAG_STALE; Linux rxe refuses a bind with the same key likewise).
 *
 * Entry states: FREE (not allocated), INVALID (allocated, not usable: RFC 5040 §2.4 "Invalidate
 * STag ... cannot be accessed remotely until it is explicitly Advertised again"), VALID.
 */
#ifndef IWARP_MEM_MEM_STAG_H
#define IWARP_MEM_MEM_STAG_H

#include <stdint.h>

#include "iwarp/common.h"

/* Access flags, numbered as libibverbs enum ibv_access_flags (verbs.h:615), so the verbs layer
 * passes its flags through unchanged. Local read is always allowed. */
#define IWARP_MEM_ACCESS_LOCAL_WRITE   1u
#define IWARP_MEM_ACCESS_REMOTE_WRITE  2u
#define IWARP_MEM_ACCESS_REMOTE_READ   4u
#define IWARP_MEM_ACCESS_REMOTE_ATOMIC 8u
#define IWARP_MEM_ACCESS_MW_BIND       16u
#define IWARP_MEM_ACCESS_REMOTE \
    (IWARP_MEM_ACCESS_REMOTE_WRITE | IWARP_MEM_ACCESS_REMOTE_READ | IWARP_MEM_ACCESS_REMOTE_ATOMIC)
#define IWARP_MEM_ACCESS_ALL \
    (IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE | IWARP_MEM_ACCESS_MW_BIND)

/* What an STag names. MW values are libibverbs enum ibv_mw_type (IBV_MW_TYPE_1/2). */
enum iwarp_mem_kind {
    IWARP_MEM_MR = 0,       /* memory region (registered, or fast-registered) */
    IWARP_MEM_MW_TYPE1 = 1, /* window bound by a verb, usable on every stream of its PD */
    IWARP_MEM_MW_TYPE2 = 2, /* window bound by a work request to one QP (stream) */
};

enum iwarp_mem_state {
    IWARP_MEM_FREE = 0,    /* not allocated */
    IWARP_MEM_INVALID = 1, /* allocated; every access fails with "Invalid STag" */
    IWARP_MEM_VALID = 2,
    /* An MR deregistered while posted work requests still name it (ibv_dereg_mr succeeds, as
     * on an RNIC): no STag reaches it and those WRs fail when they use it; the index is freed
     * when the last of them completes or is flushed. */
    IWARP_MEM_RETIRED = 3,
};

/* Entry flags. */
#define IWARP_MEM_F_SEEDED  0x01u /* key has been drawn from the rng at least once */
#define IWARP_MEM_F_STALE   0x02u /* stale_key holds the key of the last validity/free */
#define IWARP_MEM_F_FASTREG 0x04u /* MR from iwarp_mem_alloc_stag(): validated by fast-register */

/*
 * One STag index. The caller provides an array of these to iwarp_mem_table_init() and reads
 * entries through iwarp_mem_stag_lookup(); only src/mem writes them.
 * TO space: the entry covers Tagged Offsets [base, base + length); the byte at TO t lives at
 * local address addr + (t - base). base + length never wraps 64 bits.
 */
struct iwarp_mem_entry {
    uint64_t base;     /* TO of the first byte: the VA for ibv_reg_mr, 0 when zero-based */
    uint64_t length;   /* bytes (0 only for an unbound window or an unregistered STag) */
    uint64_t addr;     /* local address of the byte at TO base */
    uint32_t pd;       /* owner protection domain (opaque handle, RFC 5042 §2.2.4) */
    uint32_t qp;       /* type-2 window while bound: the QP (RDMAP stream) it is bound to */
    uint32_t access;   /* IWARP_MEM_ACCESS_* (windows: remote rights only) */
    uint32_t mr_index; /* window while VALID: index of the MR it is bound to */
    uint32_t nbound;   /* MR: number of VALID windows bound to it */
    uint32_t nwr;      /* MR: posted work requests whose SGEs name it */
    uint32_t next;     /* free-list link (index; 0 ends the list) */
    uint32_t perm;     /* the table's, kept through allocation and free: slot of the shuffle
                          of never-used indices (mem_stag.c, draw_fresh) */
    uint8_t key;       /* current 8-bit key */
    uint8_t stale_key; /* with IWARP_MEM_F_STALE: key that must not be reused next */
    uint8_t state;     /* enum iwarp_mem_state */
    uint8_t kind;      /* enum iwarp_mem_kind */
    uint8_t flags;     /* IWARP_MEM_F_* */
};

/* Random source: returns 32 random bits. Called with the ctx given to init. */
typedef uint32_t (*iwarp_mem_rng_fn)(void *ctx);

/* The table. Fields are read-only for callers (nfree is handy for tests and accounting). */
struct iwarp_mem_table {
    struct iwarp_mem_entry *entries;
    uint32_t capacity; /* entries in the array; usable indices are 1 .. capacity - 1 */
    uint32_t nfree;    /* indices currently free: never used, or freed */
    uint32_t nfresh;   /* indices never used yet (not on the free list) */
    uint32_t nretired; /* MRs IWARP_MEM_RETIRED (0: every held MR is usable, no check needed) */
    uint32_t gen;      /* bumped whenever an STag stops naming what it named (invalidated,
                        * freed, retired, re-keyed): a validation made at gen g still holds
                        * while gen == g */
    uint32_t free_head, free_tail; /* freed indices, oldest first */
    iwarp_mem_rng_fn rng;
    void *rng_ctx;
};

#define IWARP_STAG_INDEX_MAX 0xFFFFFFu /* 24-bit index */

/* STag <-> (index, key). */
static inline uint32_t iwarp_stag_make(uint32_t index, uint8_t key)
{
    return index << 8 | key;
}

static inline uint32_t iwarp_stag_index(uint32_t stag)
{
    return stag >> 8;
}

static inline uint8_t iwarp_stag_key(uint32_t stag)
{
    return (uint8_t)stag;
}

/* ibv_inc_rkey (verbs.h:2791): the same index with the key incremented modulo 256. */
static inline uint32_t iwarp_stag_inc_key(uint32_t stag)
{
    return (stag & ~0xFFu) | ((stag + 1u) & 0xFFu);
}

/*
 * Initialise a table over a caller-provided array. Every index 1 .. capacity - 1 becomes free;
 * they are handed out in a random order drawn from rng as they are first allocated (no rng call
 * here).
 * t: the table. entries: array of capacity entries (contents ignored and overwritten).
 * capacity: 2 .. 2^24 (index 0 is reserved). rng: random source (required); rng_ctx: its context.
 * Ownership: t keeps entries, rng and rng_ctx until the caller stops using t (no fini needed).
 * Returns 0, or IWARP_ERR_INVAL for a NULL pointer or a capacity out of range.
 */
int iwarp_mem_table_init(struct iwarp_mem_table *t, struct iwarp_mem_entry *entries,
                         uint32_t capacity, iwarp_mem_rng_fn rng, void *rng_ctx);

/* iwarp_mem_table_init over an array the caller has zeroed (calloc): writes no entry, so a large
 * table costs only the pages its allocations reach. */
int iwarp_mem_table_init_zeroed(struct iwarp_mem_table *t, struct iwarp_mem_entry *entries,
                                uint32_t capacity, iwarp_mem_rng_fn rng, void *rng_ctx);

/*
 * Allocate an STag: take the oldest free index and give it a fresh key (from the rng the first
 * time, else a key different from the index's previous one). The entry starts INVALID with the
 * given kind and PD, no memory (base = length = addr = 0) and no rights.
 * kind: enum iwarp_mem_kind. pd: owner PD. stag: receives the STag (never has index 0).
 * Returns 0, IWARP_ERR_INVAL (bad kind or NULL), or IWARP_ERR_STAG_EXHAUSTED (no free index).
 */
int iwarp_mem_stag_alloc(struct iwarp_mem_table *t, uint8_t kind, uint32_t pd, uint32_t *stag);

/*
 * Free an allocated STag (index and key must match) and queue its index at the tail of the free
 * list. A VALID window is unbound from its MR first. An MR with windows bound is refused: the
 * windows would name freed memory (deregistering under bound windows is an error in verbs too).
 * Returns 0, IWARP_ERR_STAG_INVALID (not allocated / wrong key), IWARP_ERR_BUSY (MR with bound
 * windows).
 */
int iwarp_mem_stag_free(struct iwarp_mem_table *t, uint32_t stag);

/* Free the entry e (any allocated state, RETIRED included) as iwarp_mem_stag_free does, with no
 * checks: for callers that already decided (the last release of a RETIRED MR). */
void iwarp_mem_entry_free(struct iwarp_mem_table *t, struct iwarp_mem_entry *e);

/*
 * Find the entry of an allocated STag: index in range, entry not FREE or RETIRED, key equal (a
 * wrong key is a different STag, hence "Invalid STag", RFC 5041 §7.1 check 1). The entry may be
 * INVALID; callers check the state. Ownership: *out points into the caller's entries array (valid
 * as long as the table). Returns 0, or IWARP_ERR_STAG_INVALID (and *out = NULL).
 */
int iwarp_mem_stag_lookup(const struct iwarp_mem_table *t, uint32_t stag,
                          struct iwarp_mem_entry **out);

/*
 * Find an allocated entry by the index of stag alone (the key is ignored): for local operations
 * that carry a consumer-chosen new key (type-2 bind, fast-register) for an object the consumer
 * names by index. Returns 0 or IWARP_ERR_STAG_INVALID (*out = NULL). Ownership as lookup.
 */
int iwarp_mem_stag_lookup_index(const struct iwarp_mem_table *t, uint32_t stag,
                                struct iwarp_mem_entry **out);

/* The current STag of an entry of t. */
uint32_t iwarp_mem_stag_of(const struct iwarp_mem_table *t, const struct iwarp_mem_entry *e);

/*
 * Make an allocated entry VALID under a key the consumer chose (type-2 bind, fast-register).
 * The key must differ from the current key and from the one the index had when it was last
 * valid or freed (RFC 5042 §6.1.1).
 * Returns 0 or IWARP_ERR_STAG_STALE (entry unchanged).
 */
int iwarp_mem_stag_validate_key(struct iwarp_mem_table *t, struct iwarp_mem_entry *e, uint8_t key);

/*
 * Make an allocated entry VALID under a new key the table picks (type-1 window bind): if the
 * entry was VALID, its old STag becomes stale. The new key differs from the current one.
 * Returns the new STag.
 */
uint32_t iwarp_mem_stag_validate_new_key(struct iwarp_mem_table *t, struct iwarp_mem_entry *e);

/*
 * Move a VALID entry to INVALID (RFC 5040 §2.4), remembering its key as stale; a window is
 * unbound from its MR. An entry that is already INVALID is left as it is. The caller has done
 * the permission checks (mem_region.h).
 */
void iwarp_mem_stag_invalidate(struct iwarp_mem_table *t, struct iwarp_mem_entry *e);

#endif
