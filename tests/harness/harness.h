/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A tiny test harness: TEST(name) { ... } registers a test; ASSERT_* stop the test on failure.
 * Each test runs in a forked child (a crash or a sanitizer report fails that test only; LSan
 * checks each test's leaks at its exit). Set HARNESS_NOFORK=1 to run in-process (for gdb).
 * `./test_x [substring]` runs the tests whose name contains substring.
 * Output ends with "N passed, N failed"; the exit status is 0 only if none failed.
 */
#ifndef IWARP_TEST_HARNESS_H
#define IWARP_TEST_HARNESS_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*harness_fn)(void);
void harness_register(const char *name, harness_fn fn);
void harness_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void harness_hexdump(const char *label, const void *p, size_t n);

#define TEST(name)                                                    \
    static void name(void);                                           \
    __attribute__((constructor)) static void harness_reg_##name(void) \
    {                                                                 \
        harness_register(#name, name);                                \
    }                                                                 \
    static void name(void)

#define ASSERT_TRUE(c)                                               \
    do {                                                             \
        if (!(c))                                                    \
            harness_fail(__FILE__, __LINE__, "ASSERT_TRUE(%s)", #c); \
    } while (0)

#define ASSERT_FALSE(c) ASSERT_TRUE(!(c))

#define ASSERT_EQ(a, b)                                                                            \
    do {                                                                                           \
        intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                                           \
        if (a_ != b_)                                                                              \
            harness_fail(__FILE__, __LINE__, "ASSERT_EQ(%s, %s): %jd != %jd (0x%jx != 0x%jx)", #a, \
                         #b, a_, b_, (uintmax_t)a_, (uintmax_t)b_);                                \
    } while (0)

#define ASSERT_NE(a, b)                                                                  \
    do {                                                                                 \
        intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                                 \
        if (a_ == b_)                                                                    \
            harness_fail(__FILE__, __LINE__, "ASSERT_NE(%s, %s): both %jd", #a, #b, a_); \
    } while (0)

#define ASSERT_EQ_U(a, b)                                                                       \
    do {                                                                                        \
        uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b);                                     \
        if (a_ != b_)                                                                           \
            harness_fail(__FILE__, __LINE__, "ASSERT_EQ_U(%s, %s): 0x%jx != 0x%jx", #a, #b, a_, \
                         b_);                                                                   \
    } while (0)

#define ASSERT_MEM_EQ(a, b, n)                                                          \
    do {                                                                                \
        const void *a_ = (a), *b_ = (b);                                                \
        size_t n_ = (n);                                                                \
        if (memcmp(a_, b_, n_) != 0) {                                                  \
            harness_hexdump(#a, a_, n_);                                                \
            harness_hexdump(#b, b_, n_);                                                \
            harness_fail(__FILE__, __LINE__, "ASSERT_MEM_EQ(%s, %s, %zu)", #a, #b, n_); \
        }                                                                               \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                                     \
    do {                                                                                        \
        const char *a_ = (a), *b_ = (b);                                                        \
        if (strcmp(a_, b_) != 0)                                                                \
            harness_fail(__FILE__, __LINE__, "ASSERT_STR_EQ(%s, %s): \"%s\" != \"%s\"", #a, #b, \
                         a_, b_);                                                               \
    } while (0)

/* A deterministic xorshift32 generator with the `uint32_t (*)(void *ctx)` shape of the library's
 * rng hooks; ctx points at the uint32_t state (non-zero). */
uint32_t harness_xorshift32(void *ctx);

/* Parse a hex string ("00 2a 41 43", whitespace and '|' ignored) into out; returns the length.
 * Fails the test on a malformed string or if it does not fit. */
size_t harness_hex(const char *hex, uint8_t *out, size_t cap);

#endif
