/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Payload copies the library makes itself (the kernel's copies into and out of sockets are not
 * its own): every one goes through these helpers, which add the octets to a per-thread counter.
 * Tests read it to state copies per payload octet for each mode (docs/design.md, "Copies per
 * octet"); the cost is one thread-local add per copy, not per octet.
 */
#ifndef IWARP_UTIL_COPY_H
#define IWARP_UTIL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

/* Octets this thread has copied through iwarp_copy*, since it started. */
extern _Thread_local uint64_t iwarp_copied_octets;

/* memcpy, counted. */
static inline void iwarp_copy(void *dst, const void *src, size_t n)
{
    iwarp_copied_octets += n;
    memcpy(dst, src, n);
}

/* memmove (the regions may overlap), counted. */
static inline void iwarp_copy_move(void *dst, const void *src, size_t n)
{
    iwarp_copied_octets += n;
    memmove(dst, src, n);
}

/* Copy n octets of src into the iovecs dst[0, ndst), in order, counted; stops where either
 * ends. Returns the octets copied. */
size_t iwarp_copy_scatter(const struct iovec *dst, uint32_t ndst, const uint8_t *src, size_t n);

#endif
