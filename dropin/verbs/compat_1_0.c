/* SPDX-License-Identifier: BSD-2-Clause */
/* The IBVERBS_1.0 compatibility entries (rdma-core keeps them, as non-default versions, for
 * binaries linked against libibverbs 1.0, whose structs differ) and ibv_register_driver of
 * IBVERBS_1.1 (the old provider interface). Nothing built in the last fifteen years binds
 * them; each fails with ENOSYS: NULL with errno for the pointer-returning ones, -ENOSYS with
 * errno for the int ones, and one log line. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>

#include "internal.h"

static void *compat_null(const char *name)
{
    iwd_log(0, "%s@IBVERBS_1.0 (the libibverbs 1.0 ABI) is not supported", name);
    errno = ENOSYS;
    return NULL;
}

static int compat_int(const char *name)
{
    iwd_log(0, "%s@IBVERBS_1.0 (the libibverbs 1.0 ABI) is not supported", name);
    errno = ENOSYS;
    return -ENOSYS;
}

/* Each stub is bound to NAME@IBVERBS_1.0 (never the default version). */
#define COMPAT_NULL(name)                                         \
    IWD_EXPORT void *compat10_##name(void);                       \
    __asm__(".symver compat10_" #name ", " #name "@IBVERBS_1.0"); \
    void *compat10_##name(void)                                   \
    {                                                             \
        return compat_null(#name);                                \
    }
#define COMPAT_INT(name)                                          \
    IWD_EXPORT int compat10_##name(void);                         \
    __asm__(".symver compat10_" #name ", " #name "@IBVERBS_1.0"); \
    int compat10_##name(void)                                     \
    {                                                             \
        return compat_int(#name);                                 \
    }
#define COMPAT_VOID(name)                                         \
    IWD_EXPORT void compat10_##name(void);                        \
    __asm__(".symver compat10_" #name ", " #name "@IBVERBS_1.0"); \
    void compat10_##name(void)                                    \
    {                                                             \
        (void)compat_null(#name);                                 \
    }

COMPAT_NULL(ibv_get_device_list)
COMPAT_VOID(ibv_free_device_list)
COMPAT_NULL(ibv_get_device_name)
COMPAT_INT(ibv_get_device_guid)
COMPAT_NULL(ibv_open_device)
COMPAT_INT(ibv_close_device)
COMPAT_INT(ibv_get_async_event)
COMPAT_VOID(ibv_ack_async_event)
COMPAT_INT(ibv_query_device)
COMPAT_INT(ibv_query_port)
COMPAT_INT(ibv_query_gid)
COMPAT_INT(ibv_query_pkey)
COMPAT_NULL(ibv_alloc_pd)
COMPAT_INT(ibv_dealloc_pd)
COMPAT_NULL(ibv_reg_mr)
COMPAT_INT(ibv_dereg_mr)
COMPAT_NULL(ibv_create_cq)
COMPAT_INT(ibv_resize_cq)
COMPAT_INT(ibv_destroy_cq)
COMPAT_INT(ibv_get_cq_event)
COMPAT_VOID(ibv_ack_cq_events)
COMPAT_NULL(ibv_create_srq)
COMPAT_INT(ibv_modify_srq)
COMPAT_INT(ibv_query_srq)
COMPAT_INT(ibv_destroy_srq)
COMPAT_NULL(ibv_create_qp)
COMPAT_INT(ibv_query_qp)
COMPAT_INT(ibv_modify_qp)
COMPAT_INT(ibv_destroy_qp)
COMPAT_NULL(ibv_create_ah)
COMPAT_INT(ibv_destroy_ah)
COMPAT_INT(ibv_attach_mcast)
COMPAT_INT(ibv_detach_mcast)

/* ibv_register_driver@IBVERBS_1.1: providers register with rdma-core, never with us. */
IWD_EXPORT void compat10_ibv_register_driver(void);
__asm__(".symver compat10_ibv_register_driver, ibv_register_driver@IBVERBS_1.1");
void compat10_ibv_register_driver(void)
{
    iwd_log(0, "ibv_register_driver@IBVERBS_1.1 (an rdma-core provider) is not supported");
}
