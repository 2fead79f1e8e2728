/* SPDX-License-Identifier: BSD-2-Clause */
/* rdma-core's provider ABI (IBVERBS_PRIVATE_34) is not offered: no rdma-core provider can run
 * on libiwarp. But Debian 12's direct-verbs libraries (libmlx5, libmlx4, libefa, libmana), which
 * perftest and others link, bind these entries at load time (BIND_NOW), so without them those
 * unmodified programs would not start. Each is a stub: the providers' constructors register
 * with verbs_register_driver_34, which is ignored (no provider is ever asked for a device), and
 * every command fails with EOPNOTSUPP. The list is what those libraries import
 * (tests/dropin/symbols.sh checks that each is here and nothing else private is). */
#include <errno.h>
#include <stdbool.h>

#include "internal.h"

#define PROVIDER_INT(name)     \
    IWD_EXPORT int name(void); \
    int name(void)             \
    {                          \
        return EOPNOTSUPP;     \
    }
#define PROVIDER_VOID(name)     \
    IWD_EXPORT void name(void); \
    void name(void)             \
    {                           \
    }
#define PROVIDER_NULL(name)               \
    IWD_EXPORT void *name(void);          \
    void *name(void)                      \
    {                                     \
        return iwd_fail_null(EOPNOTSUPP); \
    }
#define PROVIDER_FALSE(name)    \
    IWD_EXPORT bool name(void); \
    bool name(void)             \
    {                           \
        return false;           \
    }

PROVIDER_VOID(__verbs_log)
PROVIDER_NULL(_verbs_init_and_alloc_context)
PROVIDER_INT(execute_ioctl)
PROVIDER_INT(ibv_cmd_advise_mr)
PROVIDER_INT(ibv_cmd_alloc_dm)
PROVIDER_INT(ibv_cmd_alloc_mw)
PROVIDER_INT(ibv_cmd_alloc_pd)
PROVIDER_INT(ibv_cmd_attach_mcast)
PROVIDER_INT(ibv_cmd_close_xrcd)
PROVIDER_INT(ibv_cmd_create_ah)
PROVIDER_INT(ibv_cmd_create_counters)
PROVIDER_INT(ibv_cmd_create_cq)
PROVIDER_INT(ibv_cmd_create_cq_ex)
PROVIDER_INT(ibv_cmd_create_flow)
PROVIDER_INT(ibv_cmd_create_flow_action_esp)
PROVIDER_INT(ibv_cmd_create_qp)
PROVIDER_INT(ibv_cmd_create_qp_ex)
PROVIDER_INT(ibv_cmd_create_qp_ex2)
PROVIDER_INT(ibv_cmd_create_rwq_ind_table)
PROVIDER_INT(ibv_cmd_create_srq)
PROVIDER_INT(ibv_cmd_create_srq_ex)
PROVIDER_INT(ibv_cmd_create_wq)
PROVIDER_INT(ibv_cmd_dealloc_mw)
PROVIDER_INT(ibv_cmd_dealloc_pd)
PROVIDER_INT(ibv_cmd_dereg_mr)
PROVIDER_INT(ibv_cmd_destroy_ah)
PROVIDER_INT(ibv_cmd_destroy_counters)
PROVIDER_INT(ibv_cmd_destroy_cq)
PROVIDER_INT(ibv_cmd_destroy_flow)
PROVIDER_INT(ibv_cmd_destroy_flow_action)
PROVIDER_INT(ibv_cmd_destroy_qp)
PROVIDER_INT(ibv_cmd_destroy_rwq_ind_table)
PROVIDER_INT(ibv_cmd_destroy_srq)
PROVIDER_INT(ibv_cmd_destroy_wq)
PROVIDER_INT(ibv_cmd_detach_mcast)
PROVIDER_INT(ibv_cmd_free_dm)
PROVIDER_INT(ibv_cmd_get_context)
PROVIDER_INT(ibv_cmd_modify_cq)
PROVIDER_INT(ibv_cmd_modify_flow_action_esp)
PROVIDER_INT(ibv_cmd_modify_qp)
PROVIDER_INT(ibv_cmd_modify_qp_ex)
PROVIDER_INT(ibv_cmd_modify_srq)
PROVIDER_INT(ibv_cmd_modify_wq)
PROVIDER_INT(ibv_cmd_open_qp)
PROVIDER_INT(ibv_cmd_open_xrcd)
PROVIDER_INT(ibv_cmd_query_context)
PROVIDER_INT(ibv_cmd_query_device_any)
PROVIDER_INT(ibv_cmd_query_mr)
PROVIDER_INT(ibv_cmd_query_port)
PROVIDER_INT(ibv_cmd_query_qp)
PROVIDER_INT(ibv_cmd_query_srq)
PROVIDER_INT(ibv_cmd_read_counters)
PROVIDER_INT(ibv_cmd_reg_dm_mr)
PROVIDER_INT(ibv_cmd_reg_dmabuf_mr)
PROVIDER_INT(ibv_cmd_reg_mr)
PROVIDER_INT(ibv_cmd_rereg_mr)
PROVIDER_INT(ibv_cmd_resize_cq)
PROVIDER_FALSE(verbs_allow_disassociate_destroy)
PROVIDER_VOID(verbs_init_cq)
PROVIDER_NULL(verbs_open_device)
PROVIDER_VOID(verbs_register_driver_34)
PROVIDER_VOID(verbs_set_ops)
PROVIDER_VOID(verbs_uninit_context)
