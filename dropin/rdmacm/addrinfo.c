/* SPDX-License-Identifier: BSD-2-Clause */
/* Addresses and endpoints: rdma_getaddrinfo / rdma_freeaddrinfo (getaddrinfo underneath, as
 * librdmacm: numeric and name hosts, services, RAI_PASSIVE, IPv4 and IPv6; no IB SA) and
 * rdma_create_ep / rdma_destroy_ep (a synchronous id, bound or resolved, with its QP). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cma.h"

static int copy_sa(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
                   socklen_t len)
{
    *dst = malloc(len);
    if (!*dst)
        return iwd_cm_fail(ENOMEM);
    memcpy(*dst, src, len);
    *dst_len = len;
    return 0;
}

/* hints -> getaddrinfo's hints. */
static void to_ai(const struct rdma_addrinfo *h, struct addrinfo *ai)
{
    memset(ai, 0, sizeof *ai);
    if (h->ai_flags & RAI_PASSIVE)
        ai->ai_flags = AI_PASSIVE;
    if (h->ai_flags & RAI_NUMERICHOST)
        ai->ai_flags |= AI_NUMERICHOST;
    if (h->ai_family != AF_IB)
        ai->ai_family = h->ai_family;
    switch (h->ai_qp_type) {
    case IBV_QPT_RC:
    case IBV_QPT_UC:
    case IBV_QPT_XRC_SEND:
    case IBV_QPT_XRC_RECV:
        ai->ai_socktype = SOCK_STREAM;
        break;
    case IBV_QPT_UD:
        ai->ai_socktype = SOCK_DGRAM;
        break;
    default: /* none asked for: any */
        break;
    }
    if (h->ai_port_space == RDMA_PS_TCP)
        ai->ai_protocol = IPPROTO_TCP;
    else if (h->ai_port_space == RDMA_PS_UDP || h->ai_port_space == RDMA_PS_IPOIB)
        ai->ai_protocol = IPPROTO_UDP;
    else if (h->ai_port_space == RDMA_PS_IB && ai->ai_socktype)
        ai->ai_protocol = ai->ai_socktype == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP;
}

/* getaddrinfo's first answer -> rai. */
static int from_ai(const struct rdma_addrinfo *h, const struct addrinfo *ai,
                   struct rdma_addrinfo *rai)
{
    rai->ai_qp_type =
        h->ai_qp_type ? h->ai_qp_type : (ai->ai_socktype == SOCK_DGRAM ? IBV_QPT_UD : IBV_QPT_RC);
    rai->ai_port_space = h->ai_port_space
                             ? h->ai_port_space
                             : (ai->ai_protocol == IPPROTO_UDP ? RDMA_PS_UDP : RDMA_PS_TCP);
    rai->ai_family = ai->ai_family;
    if (ai->ai_flags & AI_PASSIVE) {
        rai->ai_flags = RAI_PASSIVE;
        if (ai->ai_canonname && !(rai->ai_src_canonname = strdup(ai->ai_canonname)))
            return iwd_cm_fail(ENOMEM);
        return copy_sa(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr, ai->ai_addrlen);
    }
    if (ai->ai_canonname && !(rai->ai_dst_canonname = strdup(ai->ai_canonname)))
        return iwd_cm_fail(ENOMEM);
    return copy_sa(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
}

/** rdma_getaddrinfo - one rdma_addrinfo for node/service (getaddrinfo's EAI_* code when it
 * fails, as librdmacm returns it). */
IWD_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
                                const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
    if ((!service && !node && !hints) || !res)
        return iwd_cm_fail(EINVAL);
    static const struct rdma_addrinfo none;
    const struct rdma_addrinfo *h = hints ? hints : &none;
    struct rdma_addrinfo *rai = calloc(1, sizeof *rai);
    if (!rai)
        return iwd_cm_fail(ENOMEM);
    int ret = 0;
    if (node || service) {
        struct addrinfo aih, *ai;
        to_ai(h, &aih);
        ret = getaddrinfo(node, service, hints ? &aih : NULL, &ai);
        if (ret == 0) {
            ret = from_ai(h, ai, rai);
            freeaddrinfo(ai);
        }
    } else {
        rai->ai_flags = h->ai_flags;
        rai->ai_family = h->ai_family;
        rai->ai_qp_type = h->ai_qp_type;
        rai->ai_port_space = h->ai_port_space;
        if (h->ai_dst_len)
            ret = copy_sa(&rai->ai_dst_addr, &rai->ai_dst_len, h->ai_dst_addr, h->ai_dst_len);
    }
    if (ret == 0 && !rai->ai_src_len && h->ai_src_len)
        ret = copy_sa(&rai->ai_src_addr, &rai->ai_src_len, h->ai_src_addr, h->ai_src_len);
    if (ret != 0) {
        rdma_freeaddrinfo(rai);
        return ret;
    }
    *res = rai;
    return 0;
}

/** rdma_freeaddrinfo - free a list from rdma_getaddrinfo. */
IWD_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
    while (res) {
        struct rdma_addrinfo *next = res->ai_next;
        free(res->ai_connect);
        free(res->ai_route);
        free(res->ai_src_canonname);
        free(res->ai_dst_canonname);
        free(res->ai_src_addr);
        free(res->ai_dst_addr);
        free(res);
        res = next;
    }
}

/** rdma_create_ep - a synchronous id for res: passive (bound; rdma_get_request makes each
 * request's QP from qp_init_attr) or active (address and route resolved, QP made). */
IWD_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
                              struct ibv_qp_init_attr *qp_init_attr)
{
    if (!id || !res)
        return iwd_cm_fail(EINVAL);
    enum rdma_port_space ps = (enum rdma_port_space)res->ai_port_space;
    if (!ps)
        ps = RDMA_PS_TCP;
    struct rdma_cm_id *cm;
    if (rdma_create_id(NULL, &cm, NULL, ps) != 0)
        return -1;
    cm->qp_type = res->ai_qp_type ? (enum ibv_qp_type)res->ai_qp_type : cm->qp_type;
    struct iwd_id *iid = iwd_id_of(cm);
    if (res->ai_flags & RAI_PASSIVE) {
        if (rdma_bind_addr(cm, res->ai_src_addr) != 0)
            goto err;
        if (pd)
            cm->pd = pd;
        if (qp_init_attr) {
            iid->qp_init_attr = malloc(sizeof *iid->qp_init_attr);
            if (!iid->qp_init_attr) {
                errno = ENOMEM;
                goto err;
            }
            *iid->qp_init_attr = *qp_init_attr;
            iid->qp_init_attr->qp_type = cm->qp_type;
        }
    } else {
        if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) != 0)
            goto err;
        if (res->ai_route_len) {
            /* an IB path: nothing iWARP can use, as rdma_set_option says */
            if (rdma_set_option(cm, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route,
                                res->ai_route_len) != 0)
                goto err;
        } else if (rdma_resolve_route(cm, 2000) != 0) {
            goto err;
        }
        if (qp_init_attr) {
            qp_init_attr->qp_type = cm->qp_type;
            if (rdma_create_qp(cm, pd, qp_init_attr) != 0)
                goto err;
        }
    }
    *id = cm;
    return 0;
err : {
    int e = errno;
    rdma_destroy_ep(cm);
    errno = e;
    return -1;
}
}

/** rdma_destroy_ep - destroy an endpoint's QP, SRQ and id. */
IWD_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
    if (!id)
        return;
    if (id->qp)
        rdma_destroy_qp(id);
    if (id->srq)
        rdma_destroy_srq(id);
    rdma_destroy_id(id);
}
