/* SPDX-License-Identifier: BSD-2-Clause */
/* Multicast: rdma_join_multicast(_ex) and rdma_leave_multicast. iWARP has none: the kernel's
 * rdma_join_multicast answers ENOSYS for a bound or resolved UD id on an iWARP device and
 * EINVAL for any other id; with nothing joined, librdmacm's leave finds no group
 * (EADDRNOTAVAIL). */
#define _GNU_SOURCE 1
#include <errno.h>

#include "cma.h"

/* What joining gives on iWARP. */
static int join(struct rdma_cm_id *id, struct sockaddr *addr)
{
    if (!id || !addr)
        return iwd_cm_fail(EINVAL);
    bool bound = id->route.addr.src_storage.ss_family || id->route.addr.dst_storage.ss_family;
    if (id->qp_type != IBV_QPT_UD || !bound)
        return iwd_cm_fail(EINVAL);
    return iwd_cm_fail(ENOSYS);
}

/** rdma_join_multicast - ENOSYS (UD id, bound or resolved) or EINVAL: no multicast on iWARP. */
IWD_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
    (void)context;
    return join(id, addr);
}

/** rdma_join_multicast_ex - as rdma_join_multicast. */
IWD_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
                                      struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
    (void)context;
    if (!mc_join_attr)
        return iwd_cm_fail(EINVAL);
    return join(id, mc_join_attr->addr);
}

/** rdma_leave_multicast - EADDRNOTAVAIL: no group was joined (EINVAL for NULL arguments). */
IWD_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
    if (!id || !addr)
        return iwd_cm_fail(EINVAL);
    return iwd_cm_fail(EADDRNOTAVAIL);
}
