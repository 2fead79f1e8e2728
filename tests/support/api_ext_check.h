/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Checks of the extensible-struct rules (src/api/api_ext.h, include/iwarp/common.h) shared by
 * test_api_ext (unit) and test_api_ext_cm (e2e): a log hook that remembers the last line, the
 * comp_mask contract of an input struct, and structs placed against a PROT_NONE page so that a
 * read past their base faults.
 *
 * Everything is static: each test file is its own executable.
 */
#ifndef IWARP_TESTS_API_EXT_CHECK_H
#define IWARP_TESTS_API_EXT_CHECK_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include"
#endif

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/api_ext.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "iwarp/verbs.h"

/* What the log hook saw. */
static struct {
    int lines;
    enum iwarp_log_level level;
    char msg[512];
} logged;

static inline void log_hook(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    logged.lines++;
    logged.level = level;
    snprintf(logged.msg, sizeof logged.msg, "%s", msg);
}

/* The refusal was logged once, at IWARP_LOG_ERROR, naming fn and the struct. */
static inline void expect_refusal_logged(const char *fn, const char *type)
{
    ASSERT_EQ(logged.lines, 1);
    ASSERT_EQ(logged.level, IWARP_LOG_ERROR);
    if (!strstr(logged.msg, fn) || !strstr(logged.msg, type) || !strstr(logged.msg, "comp_mask"))
        harness_fail(__FILE__, __LINE__, "log line \"%s\" should name %s, %s and comp_mask",
                     logged.msg, fn, type);
    memset(&logged, 0, sizeof logged);
}

/* Two comp_mask bits this version does not know for a struct: its lowest and highest. */
static inline void unknown_bits(uint32_t known, uint32_t out[2])
{
    uint32_t unknown = ~known;
    ASSERT_NE(unknown, 0);
    out[0] = unknown & (0u - unknown);
    out[1] = 1u << 31;
    while (!(out[1] & unknown))
        out[1] >>= 1;
}

/* Calls call(arg) once with each of two comp_mask bits this version does not know set in
 * *comp_mask (known: the bits it knows): each call must fail with IWARP_ERR_NOTSUP, leave
 * *comp_mask alone and log one refusal naming fn and type. Then once with *comp_mask 0 (a
 * zero-initialised caller), which must succeed. call checks that a refused call created and
 * wrote nothing. */
static inline void expect_comp_mask_contract(uint32_t known, uint32_t *comp_mask,
                                             int (*call)(void *), void *arg, const char *fn,
                                             const char *type)
{
    uint32_t bits[2];
    unknown_bits(known, bits);
    for (int i = 0; i < 2; i++) {
        memset(&logged, 0, sizeof logged);
        *comp_mask = bits[i];
        ASSERT_EQ(call(arg), IWARP_ERR_NOTSUP);
        ASSERT_EQ(*comp_mask, bits[i]); /* an input's comp_mask is never changed */
        expect_refusal_logged(fn, type);
    }
    *comp_mask = 0;
    ASSERT_EQ(call(arg), 0);
    ASSERT_EQ(logged.lines, 0);
}

/* Zeroed room for a struct of base octets (rounded up to align) that ends where a PROT_NONE
 * page begins: reading past the rounded-up base faults. Ownership: unmapped by guard_free. */
static inline void *guarded(size_t base, size_t align)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = (base + align - 1) / align * align;
    ASSERT_TRUE(n <= pg);
    uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_TRUE(m != MAP_FAILED);
    ASSERT_EQ(mprotect(m + pg, pg, PROT_NONE), 0);
    return m + pg - n;
}

static inline void guard_free(void *p)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    ASSERT_EQ(munmap((void *)((uintptr_t)p & ~(uintptr_t)(pg - 1)), 2 * pg), 0);
}

#define GUARDED(type) ((type *)guarded(IWARP_API_EXT_BASE(type), alignof(type)))

#endif
