/* SPDX-License-Identifier: BSD-2-Clause */
/* CRC32C: ISA-L when available, portable slicing-by-8 otherwise (see crc32c.h). */
#include "util/crc32c.h"

#ifdef IWARP_HAVE_ISAL
#include <isa-l/crc.h>
#endif

/* Slicing-by-8 tables, built once before main() runs (no locking needed afterwards). */
static uint32_t crc_table[8][256];

__attribute__((constructor)) static void crc_table_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

uint32_t iwarp_crc32c_update_portable(uint32_t state, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t c = state;
    while (len >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
            crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
            crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    return c;
}

uint32_t iwarp_crc32c_update(uint32_t state, const void *data, size_t len)
{
#ifdef IWARP_HAVE_ISAL
    if (len == 0)
        return state;
    /* crc32_iscsi takes the running (non-inverted) register and returns it the same way; its
     * length parameter is an int, so feed very large buffers in pieces. */
    const unsigned char *p = data;
    while (len > 0) {
        int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
        state = crc32_iscsi((unsigned char *)(uintptr_t)p, chunk, state);
        p += chunk;
        len -= (size_t)chunk;
    }
    return state;
#else
    return iwarp_crc32c_update_portable(state, data, len);
#endif
}

const char *iwarp_crc32c_impl(void)
{
#ifdef IWARP_HAVE_ISAL
    return "isa-l";
#else
    return "slicing-by-8";
#endif
}
