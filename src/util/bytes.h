/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Explicit big/little-endian loads and stores on unaligned byte buffers.
 * Every wire field goes through these: no casts of buffers to structs, no bitfields.
 */
#ifndef IWARP_UTIL_BYTES_H
#define IWARP_UTIL_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t iwarp_load_be16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t iwarp_load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t iwarp_load_be64(const uint8_t *p)
{
    return (uint64_t)iwarp_load_be32(p) << 32 | iwarp_load_be32(p + 4);
}

static inline uint32_t iwarp_load_le32(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | (uint32_t)p[0];
}

static inline void iwarp_store_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void iwarp_store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void iwarp_store_be64(uint8_t *p, uint64_t v)
{
    iwarp_store_be32(p, (uint32_t)(v >> 32));
    iwarp_store_be32(p + 4, (uint32_t)v);
}

static inline void iwarp_store_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#endif
