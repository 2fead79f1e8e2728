/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the fuzz targets. */
#ifndef IWARP_FUZZ_COMMON_H
#define IWARP_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the target checks: trap (a crash libFuzzer reports) when it does not hold. */
#define FUZZ_CHECK(c)         \
    do {                      \
        if (!(c))             \
            __builtin_trap(); \
    } while (0)

/* Takes the next input octet (0 once the input is used up). */
static inline uint8_t fuzz_take(const uint8_t **p, size_t *n)
{
    if (*n == 0)
        return 0;
    (*n)--;
    return *(*p)++;
}

/* A differential target folds everything a run shows the outside into a digest (FNV-1a) and
 * compares the digests of two runs: fuzz_digest_start(), then fuzz_digest(d, p, n) per item. */
static inline uint64_t fuzz_digest_start(void)
{
    return 0xcbf29ce484222325u;
}

static inline void fuzz_digest(uint64_t *d, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        *d = (*d ^ b[i]) * 0x100000001b3u;
}

/* A small deterministic generator seeded from the input, for piece sizes and the like. */
static inline uint32_t fuzz_rng_next(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* A xorshift generator with the shape iwarp_mem_table_init wants for STag keys (ctx: its
 * uint32_t state, not 0); also used for piece sizes and the like. */
static inline uint32_t fuzz_xorshift(void *ctx)
{
    uint32_t *s = ctx;
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

#endif
