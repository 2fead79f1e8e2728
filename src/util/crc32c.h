/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32C (Castagnoli), as MPA uses it (RFC 5044 §4.4: "in the manner described in the iSCSI
 * Protocol"): reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF.
 *
 * Chained use: state = IWARP_CRC32C_INIT; state = iwarp_crc32c_update(state, piece, n) for every
 * piece in order; value = iwarp_crc32c_final(state). MPA puts the value on the wire least
 * significant octet first (iwarp_store_le32).
 *
 * Backed by ISA-L's crc32_iscsi when built with it (tens of GB/s), otherwise by a portable
 * slicing-by-8 implementation. Both are always compiled so tests can compare them.
 */
#ifndef IWARP_UTIL_CRC32C_H
#define IWARP_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#define IWARP_CRC32C_INIT 0xFFFFFFFFu

/* Feed len bytes at data into a running state. data may be NULL when len is 0. */
uint32_t iwarp_crc32c_update(uint32_t state, const void *data, size_t len);

/* The same, always with the portable implementation (for tests and builds without ISA-L). */
uint32_t iwarp_crc32c_update_portable(uint32_t state, const void *data, size_t len);

static inline uint32_t iwarp_crc32c_final(uint32_t state)
{
    return ~state;
}

/* One-shot CRC32C of a buffer: "123456789" gives 0xE3069283. */
static inline uint32_t iwarp_crc32c(const void *data, size_t len)
{
    return iwarp_crc32c_final(iwarp_crc32c_update(IWARP_CRC32C_INIT, data, len));
}

/* Which implementation iwarp_crc32c_update uses: "isa-l" or "slicing-by-8". */
const char *iwarp_crc32c_impl(void);

#endif
