/* SPDX-License-Identifier: BSD-2-Clause */
/* Counted payload copies (copy.h). */
#include "util/copy.h"

_Thread_local uint64_t iwarp_copied_octets;

size_t iwarp_copy_scatter(const struct iovec *dst, uint32_t ndst, const uint8_t *src, size_t n)
{
    size_t done = 0;
    for (uint32_t i = 0; i < ndst && done < n; i++) {
        size_t k = dst[i].iov_len < n - done ? dst[i].iov_len : n - done;
        iwarp_copy(dst[i].iov_base, src + done, k);
        done += k;
    }
    return done;
}
