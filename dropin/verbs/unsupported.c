/* SPDX-License-Identifier: BSD-2-Clause */
/* What iWARP or libiwarp has not: address handles and multicast (UD only), ECE, importing
 * kernel objects, dma-buf memory. Each fails as rdma-core does for a provider without the op
 * (EOPNOTSUPP), never crashing on any argument. Also the sysfs and kernel-ABI helpers, which
 * need no device. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "internal.h"

/**
 * ibv_create_ah - no address handles on iWARP: NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    (void)pd;
    (void)attr;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_destroy_ah - EOPNOTSUPP (no AH can exist).
 */
IWD_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
    (void)ah;
    return EOPNOTSUPP;
}

/**
 * ibv_init_ah_from_wc - -1 with errno EOPNOTSUPP (no AH, no GRH on iWARP).
 */
IWD_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
                                   struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
    (void)context;
    (void)port_num;
    (void)wc;
    (void)grh;
    (void)ah_attr;
    errno = EOPNOTSUPP;
    return -1;
}

/**
 * ibv_create_ah_from_wc - NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
                                                struct ibv_grh *grh, uint8_t port_num)
{
    (void)pd;
    (void)wc;
    (void)grh;
    (void)port_num;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_attach_mcast - no multicast (UD) on iWARP: EOPNOTSUPP.
 */
IWD_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

/**
 * ibv_detach_mcast - EOPNOTSUPP.
 */
IWD_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

/**
 * ibv_resolve_eth_l2_from_gid - RoCE address resolution: EOPNOTSUPP on iWARP.
 */
IWD_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
                                           uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
    (void)context;
    (void)attr;
    (void)eth_mac;
    (void)vid;
    return EOPNOTSUPP;
}

/**
 * ibv_query_ece - no Enhanced Connection Establishment (an IB CM feature): EOPNOTSUPP.
 */
IWD_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    return EOPNOTSUPP;
}

/**
 * ibv_set_ece - EOPNOTSUPP.
 */
IWD_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    return EOPNOTSUPP;
}

/**
 * ibv_import_device - no kernel device to share: NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
    (void)cmd_fd;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_import_pd - NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
    (void)context;
    (void)pd_handle;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_unimport_pd - nothing was imported: does nothing.
 */
IWD_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
    (void)pd;
}

/**
 * ibv_import_mr - NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
    (void)pd;
    (void)mr_handle;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_unimport_mr - does nothing.
 */
IWD_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
    (void)mr;
}

/**
 * ibv_import_dm - no device memory: NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
    (void)context;
    (void)dm_handle;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_unimport_dm - does nothing.
 */
IWD_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
    (void)dm;
}

/**
 * ibv_reg_dmabuf_mr - no dma-buf registration: NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                            uint64_t iova, int fd, int access)
{
    (void)pd;
    (void)offset;
    (void)length;
    (void)iova;
    (void)fd;
    (void)access;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_qp_to_qp_ex - no QP is made with the new post-send API: NULL with errno EOPNOTSUPP.
 */
IWD_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    (void)qp;
    return iwd_fail_null(EOPNOTSUPP);
}

/**
 * ibv_query_qp_data_in_order - 0: no in-order placement guarantee is made (as siw answers).
 */
IWD_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
    (void)qp;
    (void)op;
    (void)flags;
    return 0;
}

/**
 * ibv_get_sysfs_path - where sysfs is mounted ("/sys"); never NULL.
 */
IWD_EXPORT const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

/**
 * ibv_read_sysfs_file - read dir/file into buf (NUL-terminated, a trailing newline removed):
 * the length, or -1 with errno.
 */
IWD_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    char path[512];
    ssize_t len;
    int fd;

    if (!dir || !file || !buf || !size) {
        errno = EINVAL;
        return -1;
    }
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    len = read(fd, buf, size);
    close(fd);
    if (len < 0)
        return -1;
    if ((size_t)len == size)
        len--;
    if (len > 0 && buf[len - 1] == '\n')
        len--;
    buf[len] = '\0';
    return (int)len;
}

static void ah_from_kern(struct ibv_ah_attr *dst, const struct ib_uverbs_ah_attr *src)
{
    memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof dst->grh.dgid);
    dst->grh.flow_label = src->grh.flow_label;
    dst->grh.sgid_index = src->grh.sgid_index;
    dst->grh.hop_limit = src->grh.hop_limit;
    dst->grh.traffic_class = src->grh.traffic_class;
    dst->dlid = src->dlid;
    dst->sl = src->sl;
    dst->src_path_bits = src->src_path_bits;
    dst->static_rate = src->static_rate;
    dst->is_global = src->is_global;
    dst->port_num = src->port_num;
}

/**
 * ibv_copy_ah_attr_from_kern - the kernel ABI's AH attributes as ibv_ah_attr.
 */
IWD_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
    if (dst && src)
        ah_from_kern(dst, src);
}

/**
 * ibv_copy_qp_attr_from_kern - the kernel ABI's QP attributes as ibv_qp_attr.
 */
IWD_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
    if (!dst || !src)
        return;
    dst->qp_state = (enum ibv_qp_state)src->qp_state;
    dst->cur_qp_state = (enum ibv_qp_state)src->cur_qp_state;
    dst->path_mtu = (enum ibv_mtu)src->path_mtu;
    dst->path_mig_state = (enum ibv_mig_state)src->path_mig_state;
    dst->qkey = src->qkey;
    dst->rq_psn = src->rq_psn;
    dst->sq_psn = src->sq_psn;
    dst->dest_qp_num = src->dest_qp_num;
    dst->qp_access_flags = src->qp_access_flags;
    dst->cap.max_send_wr = src->max_send_wr;
    dst->cap.max_recv_wr = src->max_recv_wr;
    dst->cap.max_send_sge = src->max_send_sge;
    dst->cap.max_recv_sge = src->max_recv_sge;
    dst->cap.max_inline_data = src->max_inline_data;
    ah_from_kern(&dst->ah_attr, &src->ah_attr);
    ah_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
    dst->pkey_index = src->pkey_index;
    dst->alt_pkey_index = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining = src->sq_draining;
    dst->max_rd_atomic = src->max_rd_atomic;
    dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
    dst->min_rnr_timer = src->min_rnr_timer;
    dst->port_num = src->port_num;
    dst->timeout = src->timeout;
    dst->retry_cnt = src->retry_cnt;
    dst->rnr_retry = src->rnr_retry;
    dst->alt_port_num = src->alt_port_num;
    dst->alt_timeout = src->alt_timeout;
}

/**
 * ibv_copy_path_rec_from_kern - the kernel ABI's path record as ibv_sa_path_rec.
 */
IWD_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
                                            struct ib_user_path_rec *src)
{
    if (!dst || !src)
        return;
    memcpy(dst->dgid.raw, src->dgid, sizeof dst->dgid);
    memcpy(dst->sgid.raw, src->sgid, sizeof dst->sgid);
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = (int)src->raw_traffic;
    dst->flow_label = src->flow_label;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->reversible = (int)src->reversible;
    dst->numb_path = src->numb_path;
    dst->pkey = src->pkey;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->mtu = (uint8_t)src->mtu;
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}

/**
 * ibv_copy_path_rec_to_kern - ibv_sa_path_rec as the kernel ABI's path record.
 */
IWD_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
    if (!dst || !src)
        return;
    memcpy(dst->dgid, src->dgid.raw, sizeof dst->dgid);
    memcpy(dst->sgid, src->sgid.raw, sizeof dst->sgid);
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = (uint32_t)src->raw_traffic;
    dst->flow_label = src->flow_label;
    dst->reversible = (uint32_t)src->reversible;
    dst->mtu = src->mtu;
    dst->pkey = src->pkey;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->numb_path = src->numb_path;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}
