/* SPDX-License-Identifier: BSD-2-Clause */
/* ibv_query_gid_type, the one entry of rdma-core's private ABI (IBVERBS_PRIVATE_34) offered:
 * Debian 12's ibv_devinfo binds it, so without it the unmodified binary does not load. */
#include <errno.h>

#include "internal.h"

/* rdma-core's enum ibv_gid_type_sysfs (private header): 0 is "IB/RoCE v1". */
enum { IWD_GID_TYPE_SYSFS_IB_ROCE_V1 = 0 };

IWD_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
                                  int *type);

/**
 * ibv_query_gid_type - the GID's type as sysfs names it: an iWARP port has no type file, for
 * which rdma-core answers IB/RoCE v1 (0). 0, or -1 with errno EINVAL for anything but GID 0
 * of port 1.
 */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, int *type)
{
    if (!context || !type || port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *type = IWD_GID_TYPE_SYSFS_IB_ROCE_V1;
    return 0;
}
