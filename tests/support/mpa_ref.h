/* SPDX-License-Identifier: BSD-2-Clause */
/* A reference MPA framer for the tests, independent of src/mpa. */
#ifndef IWARP_TESTS_MPA_REF_H
#define IWARP_TESTS_MPA_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/bytes.h"
#include "util/crc32c.h"

/*
 * A deliberately naive reference, octet by octet, straight from RFC 5044 §4.1-§4.4: a marker at
 * every stream position that is a multiple of 512 (FPDUPTR 0 before the ULPDU_Length, else the
 * distance from it), zero PAD, CRC32C over everything before the CRC field.
 */
static inline size_t ref_fpdu(uint32_t pos, const uint8_t *ulpdu, size_t len, bool crc,
                              bool markers, uint8_t *out)
{
    size_t n = 0;
    uint32_t hdr_pos = pos;
    if (markers && pos % 512 == 0) {
        memset(out, 0, 4);
        n = 4;
        pos += 4;
        hdr_pos = pos;
    }
    size_t body = 2 + len + (4 - (2 + len) % 4) % 4 + 4;
    for (size_t i = 0; i < body; i++) {
        if (markers && pos % 512 == 0) {
            uint32_t ptr = pos - hdr_pos;
            out[n++] = 0;
            out[n++] = 0;
            out[n++] = (uint8_t)(ptr >> 8);
            out[n++] = (uint8_t)ptr;
            pos += 4;
        }
        uint8_t b = 0;
        if (i == 0)
            b = (uint8_t)(len >> 8);
        else if (i == 1)
            b = (uint8_t)len;
        else if (i < 2 + len)
            b = ulpdu[i - 2];
        out[n++] = b;
        pos++;
    }
    if (crc)
        iwarp_store_le32(out + n - 4, iwarp_crc32c(out, n - 4));
    return n;
}

#endif
