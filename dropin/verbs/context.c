/* SPDX-License-Identifier: BSD-2-Clause */
/* Device contexts: open/close, what the device and its one port report (libiwarp's real limits,
 * the interface's state and MTU, the GID from its MAC as siw gives it), async events. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "iwarp/version.h"

/**
 * ibv_open_device - a verbs context on the process's libiwarp context.
 * Returns NULL with errno (EINVAL for a NULL device; libiwarp's failure converted).
 */
IWD_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct iwd_context *c;

    if (!device)
        return iwd_fail_null(EINVAL);
    c = calloc(1, sizeof *c);
    if (!c)
        return iwd_fail_null(ENOMEM);
    c->ictx = iwd_ctx_get();
    if (!c->ictx) {
        int e = errno;

        free(c);
        return iwd_fail_null(e);
    }
    c->idev = (struct iwd_device *)device;
    c->vctx.sz = sizeof c->vctx;
    c->vctx.context.device = device;
    c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->vctx.context.async_fd = iwarp_async_fd(c->ictx);
    /* No kernel command channel: an fd of ours that reads nothing (ibv_import_device fails). */
    c->vctx.context.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    c->vctx.context.num_comp_vectors = 1;
    pthread_mutex_init(&c->vctx.context.mutex, NULL);
    iwd_fill_context_ops(c);
    return &c->vctx.context;
}

/**
 * ibv_close_device - close a context from ibv_open_device (0; EINVAL for NULL).
 */
IWD_EXPORT int ibv_close_device(struct ibv_context *context)
{
    struct iwd_context *c;

    if (!context)
        return EINVAL;
    c = to_ictx(context);
    if (c->vctx.context.cmd_fd >= 0)
        close(c->vctx.context.cmd_fd);
    pthread_mutex_destroy(&c->vctx.context.mutex);
    free(c);
    iwd_ctx_put();
    return 0;
}

static void fill_device_attr(struct iwd_context *c, struct ibv_device_attr *a,
                             const struct iwarp_device_attr *ia)
{
    long page = sysconf(_SC_PAGESIZE);

    memset(a, 0, sizeof *a);
    snprintf(a->fw_ver, sizeof a->fw_ver, "libiwarp %s", IWARP_VERSION_STRING);
    a->node_guid = c->idev->guid;
    a->sys_image_guid = c->idev->guid;
    a->max_mr_size = UINT64_MAX;
    a->page_size_cap = page > 0 ? (uint64_t)page : 4096;
    /* QPs, CQs, PDs and SRQs are bounded by memory only. */
    a->max_qp = INT32_MAX;
    a->max_qp_wr = (int)ia->max_qp_wr;
    a->device_cap_flags =
        IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS;
    a->max_sge = (int)ia->max_sge;
    a->max_sge_rd = (int)ia->max_sge_rd;
    a->max_cq = INT32_MAX;
    a->max_cqe = (int)ia->max_cqe;
    a->max_mr = (int)ia->max_mr;
    a->max_mw = (int)ia->max_mr;
    a->max_pd = INT32_MAX;
    a->max_qp_rd_atom = (int)ia->max_qp_rd_atom;
    a->max_qp_init_rd_atom = (int)ia->max_qp_init_rd_atom;
    a->max_res_rd_atom = 0;
    a->atomic_cap = (ia->comp_mask & IWARP_DEVICE_ATTR_ATOMIC_CAP) &&
                            (ia->rdmap_ext_cap & IWARP_RDMAP_EXT_ATOMICS)
                        ? (enum ibv_atomic_cap)ia->atomic_cap
                        : IBV_ATOMIC_NONE;
    a->max_srq = INT32_MAX;
    a->max_srq_wr = (int)ia->max_srq_wr;
    a->max_srq_sge = (int)ia->max_sge;
    a->max_pkeys = 1;
    a->phys_port_cnt = 1;
}

/**
 * ibv_query_device - the device's limits: libiwarp's (iwarp_query_device).
 * Returns 0 or EINVAL (NULL arguments).
 */
IWD_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    struct iwarp_device_attr ia;
    struct iwd_context *c;
    int rc;

    if (!context || !attr)
        return EINVAL;
    c = to_ictx(context);
    rc = iwarp_query_device(c->ictx, &ia);
    if (rc)
        return iwd_errno(rc);
    fill_device_attr(c, attr, &ia);
    return 0;
}

/**
 * iwd_op_query_device_ex - verbs_context.query_device_ex: the base attributes and zeros for
 * the extensions iWARP lacks (ODP, TSO, RSS, DM, ...), written up to attr_size.
 */
int iwd_op_query_device_ex(struct ibv_context *context,
                           const struct ibv_query_device_ex_input *input,
                           struct ibv_device_attr_ex *attr, size_t attr_size)
{
    struct ibv_device_attr_ex ex;
    int rc;

    if (!context || !attr || attr_size < sizeof ex.orig_attr)
        return EINVAL;
    if (input && input->comp_mask)
        return EINVAL;
    memset(&ex, 0, sizeof ex);
    rc = ibv_query_device(context, &ex.orig_attr);
    if (rc)
        return rc;
    ex.phys_port_cnt_ex = 1;
    memcpy(attr, &ex, attr_size < sizeof ex ? attr_size : sizeof ex);
    if (attr_size > sizeof ex)
        memset((char *)attr + sizeof ex, 0, attr_size - sizeof ex);
    return 0;
}

static enum ibv_mtu mtu_enum(int mtu)
{
    if (mtu >= 4096)
        return IBV_MTU_4096;
    if (mtu >= 2048)
        return IBV_MTU_2048;
    if (mtu >= 1024)
        return IBV_MTU_1024;
    if (mtu >= 512)
        return IBV_MTU_512;
    return IBV_MTU_256;
}

/* The link speed as the kernel's ib_get_eth_speed maps an Ethernet speed (Mb/s; an interface
 * without one, like lo, counts as 1000). */
static void eth_speed(const struct iwd_device *d, uint8_t *width, uint8_t *speed)
{
    char path[96];
    long mbps = 1000;
    FILE *f;

    snprintf(path, sizeof path, "/sys/class/net/%s/speed", d->ifname);
    f = fopen(path, "re");
    if (f) {
        if (fscanf(f, "%ld", &mbps) != 1 || mbps <= 0)
            mbps = 1000;
        fclose(f);
    }
    if (mbps <= 1000) {
        *width = 1; /* 1X */
        *speed = 1; /* SDR */
    } else if (mbps <= 10000) {
        *width = 1;
        *speed = 8; /* FDR10 */
    } else if (mbps <= 20000) {
        *width = 2; /* 4X */
        *speed = 2; /* DDR */
    } else if (mbps <= 25000) {
        *width = 1;
        *speed = 32; /* EDR */
    } else if (mbps <= 40000) {
        *width = 2;
        *speed = 8;
    } else {
        *width = 2;
        *speed = 32;
    }
}

/**
 * iwd_op_query_port - verbs_context.query_port: port 1 only (EINVAL otherwise); ACTIVE while
 * the interface is up, its MTU, Ethernet link layer, one GID and one P_Key as siw reports.
 */
int iwd_op_query_port(struct ibv_context *context, uint8_t port_num,
                      struct ibv_port_attr *port_attr, size_t port_attr_len)
{
    struct ibv_port_attr p;
    struct iwd_device *d;
    bool up;

    if (!context || !port_attr)
        return EINVAL;
    if (port_num != 1)
        return EINVAL;
    d = to_ictx(context)->idev;
    up = iwd_device_up(d);
    memset(&p, 0, sizeof p);
    p.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    p.max_mtu = p.active_mtu = mtu_enum(iwd_device_mtu(d));
    p.gid_tbl_len = 1;
    p.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_DEVICE_MGMT_SUP;
    p.max_msg_sz = UINT32_MAX;
    p.pkey_tbl_len = 1;
    eth_speed(d, &p.active_width, &p.active_speed);
    p.phys_state = up ? 5 /* LinkUp */ : 3 /* Disabled */;
    p.link_layer = IBV_LINK_LAYER_ETHERNET;
    memcpy(port_attr, &p, port_attr_len < sizeof p ? port_attr_len : sizeof p);
    return 0;
}

/**
 * ibv_query_port - the pre-1.4 entry (struct without port_cap_flags2): as the op.
 */
IWD_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                              struct _compat_ibv_port_attr *port_attr)
{
    return iwd_op_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
                             offsetof(struct ibv_port_attr, port_cap_flags2));
}

static void device_gid(const struct iwd_device *d, union ibv_gid *gid)
{
    /* siw_query_gid: the MAC in the first 6 octets, the rest zero. */
    memset(gid, 0, sizeof *gid);
    memcpy(gid->raw, d->mac, 6);
}

/**
 * ibv_query_gid - GID 0 of port 1 (the interface's MAC, as siw); -1 with errno EINVAL
 * otherwise.
 */
IWD_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                             union ibv_gid *gid)
{
    if (!context || !gid || port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    device_gid(to_ictx(context)->idev, gid);
    return 0;
}

static void gid_entry(const struct iwd_device *d, struct ibv_gid_entry *e)
{
    memset(e, 0, sizeof *e);
    device_gid(d, &e->gid);
    e->gid_index = 0;
    e->port_num = 1;
    e->gid_type = IBV_GID_TYPE_IB; /* what rdma-core reports for an iWARP port */
    e->ndev_ifindex = d->ifindex;
}

/**
 * _ibv_query_gid_ex - the GID table entry (port 1, index 0); an errno (EINVAL) otherwise.
 */
IWD_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                                 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
    struct ibv_gid_entry e;

    if (!context || !entry || flags || entry_size < sizeof e)
        return EINVAL;
    if (port_num != 1 || gid_index != 0)
        return port_num != 1 ? EINVAL : ENODATA;
    gid_entry(to_ictx(context)->idev, &e);
    memcpy(entry, &e, sizeof e);
    return 0;
}

/**
 * _ibv_query_gid_table - the one GID entry; the count (1) or a negative errno.
 */
IWD_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
                                        size_t max_entries, uint32_t flags, size_t entry_size)
{
    if (!context || !entries || flags || entry_size < sizeof *entries)
        return -EINVAL;
    if (max_entries < 1)
        return -EINVAL;
    gid_entry(to_ictx(context)->idev, entries);
    return 1;
}

/**
 * ibv_query_pkey - P_Key 0xffff at index 0 of port 1 (as siw); -1 with errno EINVAL otherwise.
 */
IWD_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                              __be16 *pkey)
{
    if (!context || !pkey || port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = 0xffff;
    return 0;
}

/**
 * ibv_get_pkey_index - 0 for the default P_Key; -1 with errno ENOENT for any other.
 */
IWD_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
    if (!context || port_num != 1) {
        errno = EINVAL;
        return -1;
    }
    if (pkey != 0xffff) {
        errno = ENOENT;
        return -1;
    }
    return 0;
}

/* Map libiwarp's async event objects back to ours: a QP's qp_context is its wrapper; CQs and
 * SRQs are opaque, so they are found in the object table. */
static void convert_event(const struct iwarp_async_event *ie, struct ibv_async_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->event_type = (enum ibv_event_type)ie->event_type;
    switch (ie->event_type) {
    case IWARP_EVENT_CQ_ERR:
        ev->element.cq = iwd_obj_find(ie->element.cq);
        break;
    case IWARP_EVENT_SRQ_LIMIT_REACHED:
    case IWARP_EVENT_SRQ_ERR:
        ev->element.srq = iwd_obj_find(ie->element.srq);
        break;
    case IWARP_EVENT_DEVICE_FATAL:
    case IWARP_EVENT_PORT_ACTIVE:
    case IWARP_EVENT_PORT_ERR:
    case IWARP_EVENT_LID_CHANGE:
    case IWARP_EVENT_PKEY_CHANGE:
    case IWARP_EVENT_SM_CHANGE:
    case IWARP_EVENT_CLIENT_REREGISTER:
    case IWARP_EVENT_GID_CHANGE:
        ev->element.port_num = 1;
        break;
    default:
        ev->element.qp = ie->element.qp ? (struct ibv_qp *)ie->element.qp->qp_context : NULL;
        break;
    }
}

/**
 * ibv_get_async_event - the next async event of the process's objects; blocks until one comes
 * unless async_fd was made O_NONBLOCK (then -1 with errno EAGAIN). -1 with errno EINVAL for
 * NULL arguments.
 */
IWD_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    struct iwarp_async_event ie;
    struct iwd_context *c;
    int fl, rc;

    if (!context || !event) {
        errno = EINVAL;
        return -1;
    }
    c = to_ictx(context);
    for (;;) {
        rc = iwarp_get_async_event(c->ictx, &ie);
        if (rc == 0)
            break;
        if (rc != IWARP_ERR_BUSY) {
            errno = iwd_errno(rc);
            return -1;
        }
        fl = fcntl(context->async_fd, F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK)) {
            errno = EAGAIN;
            return -1;
        }
        struct pollfd pfd = {.fd = context->async_fd, .events = POLLIN};

        if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
            return -1;
    }
    convert_event(&ie, event);
    return 0;
}

/**
 * ibv_ack_async_event - events hold no reference in libiwarp: nothing to do.
 */
IWD_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
    (void)event;
}

/**
 * iwd_fill_context_ops - see internal.h. Extended ops not listed stay NULL: rdma-core's
 * inlines then answer EOPNOTSUPP (or ENOSYS) themselves.
 */
void iwd_fill_context_ops(struct iwd_context *c)
{
    struct ibv_context_ops *ops = &c->vctx.context.ops;

    ops->poll_cq = iwd_op_poll_cq;
    ops->req_notify_cq = iwd_op_req_notify_cq;
    ops->post_send = iwd_op_post_send;
    ops->post_recv = iwd_op_post_recv;
    ops->post_srq_recv = iwd_op_post_srq_recv;
    ops->alloc_mw = iwd_op_alloc_mw;
    ops->bind_mw = iwd_op_bind_mw;
    ops->dealloc_mw = iwd_op_dealloc_mw;
    c->vctx.query_port = iwd_op_query_port;
    c->vctx.query_device_ex = iwd_op_query_device_ex;
    c->vctx.create_qp_ex = iwd_op_create_qp_ex;
}
