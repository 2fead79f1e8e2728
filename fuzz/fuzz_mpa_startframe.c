/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the MPA Request/Reply decoder (RFC 5044 §7.1.1, RFC 6581 §6, §9). Invariants: the
 * result is a frame length within the input, SHORT or an MPA error; a decoded frame re-encodes
 * to the input with Res bits cleared, R cleared in a Request and B/C/D cleared without A. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "wire/wire.h"
#include "wire/wire_mpa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct iwarp_mpa_frame f;
    iwarp_ssize n = iwarp_mpa_frame_decode(data, size, &f);
    if (n < 0) {
        if (n != IWARP_ERR_SHORT && n != IWARP_ERR_MPA_KEY && n != IWARP_ERR_MPA_PD_LEN &&
            n != IWARP_ERR_MPA_ENHANCED)
            abort();
        return 0;
    }
    if ((size_t)n > size || n < (iwarp_ssize)IWARP_MPA_HDR_LEN)
        abort();
    uint8_t out[IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX];
    iwarp_ssize m = iwarp_mpa_frame_encode(out, sizeof out, &f);
    if (m != n)
        abort();
    uint8_t want[IWARP_MPA_HDR_LEN + IWARP_MPA_PD_MAX];
    memcpy(want, data, (size_t)n);
    want[16] &= (uint8_t)~IWARP_MPA_FLAG_RES;
    if (!f.reply)
        want[16] &= (uint8_t)~IWARP_MPA_FLAG_R;
    if (f.s && !f.v2.p2p) {
        want[20] &= (uint8_t) ~(IWARP_MPA_V2_RTR_SEND >> 8);
        want[22] &= (uint8_t) ~((IWARP_MPA_V2_RTR_WRITE | IWARP_MPA_V2_RTR_READ) >> 8);
    }
    if (memcmp(out, want, (size_t)n) != 0)
        abort();
    /* Any prefix is SHORT or the same error class, never a frame. */
    for (size_t cut = 0; cut < (size_t)n; cut += 7) {
        iwarp_ssize p = iwarp_mpa_frame_decode(data, cut, &f);
        if (p >= 0)
            abort();
    }
    return 0;
}
