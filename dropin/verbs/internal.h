/* SPDX-License-Identifier: BSD-2-Clause */
/* The drop-in libibverbs's own objects: each verbs object the application sees is the first
 * member of a struct that also holds the libiwarp object behind it, so a pointer converts both
 * ways without a lookup (the post and poll paths allocate and search nothing).
 *
 * Every libiwarp object's user context (qp_context, cq_context, srq_context) points back at
 * its wrapper, so libiwarp events (CQ events, async events) come back as verbs objects.
 */
#ifndef IWD_VERBS_INTERNAL_H
#define IWD_VERBS_INTERNAL_H

#include <net/if.h>
#include <pthread.h>

#include "dropin.h"
#include "iwarp/errors.h"

/* rdma-core's headers turn these names into macros over inline wrappers; this library
 * defines the functions themselves. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_get_device_list

/* Exported symbols of rdma-core 44's ABI whose declarations its installed headers no longer
 * carry (they are in its private headers, or kept for old binaries only). */
struct ib_uverbs_ah_attr;
struct ib_uverbs_qp_attr;
struct ib_user_path_rec;
struct ibv_sa_path_rec;
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

/* One device: an up network interface. Never freed (contexts and lists keep pointers). */
struct iwd_device {
    struct ibv_device dev;
    char ifname[IF_NAMESIZE];
    unsigned int ifindex;
    uint8_t mac[6]; /* the interface's address, or one generated for it (no MAC, like lo) */
    uint64_t guid;  /* network byte order, EUI-64 from mac */
    bool present;   /* seen up by the last ibv_get_device_list */
    struct ibv_context *cm_ctx; /* opened by iwd_context_for_addr, never closed */
    struct iwd_device *next;
};

struct iwd_context {
    struct verbs_context vctx;
    struct iwarp_ctx *ictx;
    struct iwd_device *idev;
};

struct iwd_pd {
    struct ibv_pd pd;
    struct iwarp_pd *ipd;
};

struct iwd_mr {
    struct ibv_mr mr;
    struct iwarp_mr *imr;
};

struct iwd_mw {
    struct ibv_mw mw;
    struct iwarp_mw *imw;
};

struct iwd_comp_channel {
    struct ibv_comp_channel ch;
    struct iwarp_comp_channel *ich;
};

struct iwd_cq {
    struct ibv_cq cq;
    struct iwarp_cq *icq;
};

struct iwd_srq {
    struct ibv_srq srq;
    struct iwarp_srq *isrq;
};

struct iwd_qp {
    struct ibv_qp qp;
    struct iwarp_qp *iqp;
    enum ibv_qp_state recorded; /* INIT/RTR/RESET as modified while libiwarp says INIT */
    bool sq_sig_all;
    struct ibv_qp_cap cap;
    struct iwd_qp *next; /* the process's QP table (iwd_qp_by_num) */
};

static inline struct iwd_context *to_ictx(struct ibv_context *c)
{
    return (struct iwd_context *)((char *)c - offsetof(struct iwd_context, vctx.context));
}

/* iwd_ret - a libiwarp result as rdma-core's int verbs give it: 0 or a positive errno. */
static inline int iwd_ret(int iwarp_err)
{
    return iwarp_err ? iwd_errno(iwarp_err) : 0;
}

/**
 * iwd_fail_null - set errno to e and return NULL (the pointer-returning verbs' error path).
 */
void *iwd_fail_null(int e);

/**
 * iwd_device_mtu - the interface MTU of a device (1500 when it cannot be read).
 */
int iwd_device_mtu(const struct iwd_device *d);

/**
 * iwd_device_up - whether the device's interface is up now.
 */
bool iwd_device_up(const struct iwd_device *d);

/**
 * iwd_devices_refresh - rescan the interfaces (under the device lock); returns the head of
 * the device list (present ones first in interface order) or NULL with errno.
 */
struct iwd_device *iwd_devices_refresh(void);

/**
 * iwd_fill_context_ops - fill a new context's ops and the verbs_context extension ops.
 */
void iwd_fill_context_ops(struct iwd_context *c);

/* ops (context->ops and verbs_context) implemented across the files */
int iwd_op_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int iwd_op_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int iwd_op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int iwd_op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int iwd_op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
struct ibv_mw *iwd_op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int iwd_op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
int iwd_op_dealloc_mw(struct ibv_mw *mw);
int iwd_op_query_port(struct ibv_context *context, uint8_t port_num,
                      struct ibv_port_attr *port_attr, size_t port_attr_len);
int iwd_op_query_device_ex(struct ibv_context *context,
                           const struct ibv_query_device_ex_input *input,
                           struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_qp *iwd_op_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);

/**
 * iwd_obj_add / iwd_obj_del / iwd_obj_find - the wrapper of an opaque libiwarp object (a CQ or
 * an SRQ) for async events; never used on the post and poll paths. add returns 0 or ENOMEM.
 */
int iwd_obj_add(const void *iwarp_obj, void *wrapper);
void iwd_obj_del(const void *iwarp_obj);
void *iwd_obj_find(const void *iwarp_obj);

/**
 * iwd_qp_table_add / iwd_qp_table_del - the process's QP table, under its own lock.
 */
void iwd_qp_table_add(struct iwd_qp *q);
void iwd_qp_table_del(struct iwd_qp *q);

#endif /* IWD_VERBS_INTERNAL_H */
