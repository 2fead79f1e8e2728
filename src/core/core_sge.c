/* SPDX-License-Identifier: BSD-2-Clause */
/* Work request SGEs and the MR holds they take (see core_sge.h). */
#include "core/core_sge.h"

#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"

int iwarp_core_sge_resolve(const struct iwarp_mem_table *mem, uint32_t pd, uint32_t need,
                           const struct iwarp_sge *sg, uint32_t num_sge, struct iovec *iov,
                           struct iwarp_core_held *held, uint32_t *total)
{
    uint64_t sum = 0;
    held->n = 0;
    for (uint32_t i = 0; i < num_sge; i++) {
        uint64_t local = 0;
        if (sg[i].length) {
            int rc =
                iwarp_mem_check_local(mem, sg[i].lkey, sg[i].addr, sg[i].length, need, pd, &local);
            if (rc < 0)
                return rc;
            held->lkey[held->n++] = sg[i].lkey;
        }
        iov[i] = (struct iovec){(void *)(uintptr_t)local, sg[i].length};
        sum += sg[i].length;
    }
    /* RFC 5041 §5.2: a ULP message is less than 2^32 octets. */
    if (sum > UINT32_MAX)
        return IWARP_ERR_INVAL;
    *total = (uint32_t)sum;
    return 0;
}

void iwarp_core_held_take(const struct iwarp_core_held *h, struct iwarp_mem_table *mem)
{
    for (uint32_t i = 0; i < h->n; i++)
        iwarp_mem_hold(mem, h->lkey[i]);
}

void iwarp_core_held_release(struct iwarp_core_held *h, struct iwarp_mem_table *mem)
{
    for (uint32_t i = 0; i < h->n; i++)
        iwarp_mem_release(mem, h->lkey[i]);
    h->n = 0;
}

bool iwarp_core_held_usable(const struct iwarp_core_held *h, const struct iwarp_mem_table *mem)
{
    if (mem->nretired == 0) /* nothing deregistered under a WR: the common case */
        return true;
    for (uint32_t i = 0; i < h->n; i++)
        if (!iwarp_mem_held_usable(mem, h->lkey[i]))
            return false;
    return true;
}
