/* SPDX-License-Identifier: BSD-2-Clause */
/* CM ids and their addresses: rdma_create_id, rdma_destroy_id, rdma_bind_addr,
 * rdma_resolve_addr, rdma_resolve_route, rdma_listen, rdma_migrate_id, rdma_set_option,
 * rdma_get_src_port / rdma_get_dst_port, rdma_get_devices / rdma_free_devices. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cma.h"
#include "iwarp/errors.h"

void iwd_cm_copy_addr(struct sockaddr_storage *dst, const struct sockaddr *sa)
{
    memset(dst, 0, sizeof *dst);
    if (!sa)
        return;
    if (sa->sa_family == AF_INET)
        memcpy(dst, sa, sizeof(struct sockaddr_in));
    else if (sa->sa_family == AF_INET6)
        memcpy(dst, sa, sizeof(struct sockaddr_in6));
}

static bool addr_family_ok(const struct sockaddr *sa)
{
    return sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

static bool is_wildcard(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(a);
}

/* librdmacm gives every id on a device that device's one PD (made at first use, kept for the
 * life of the process) until the application names its own. */
static struct {
    pthread_mutex_t lock;
    int n;
    struct ibv_context *verbs[IWD_CM_MAX_DEVICES];
    struct ibv_pd *pd[IWD_CM_MAX_DEVICES];
} device_pds = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct ibv_pd *device_pd(struct ibv_context *verbs)
{
    struct ibv_pd *pd = NULL;
    pthread_mutex_lock(&device_pds.lock);
    for (int i = 0; i < device_pds.n && !pd; i++)
        if (device_pds.verbs[i] == verbs)
            pd = device_pds.pd[i];
    if (!pd && device_pds.n < IWD_CM_MAX_DEVICES) {
        pd = ibv_alloc_pd(verbs);
        if (pd) {
            device_pds.verbs[device_pds.n] = verbs;
            device_pds.pd[device_pds.n++] = pd;
        }
    }
    pthread_mutex_unlock(&device_pds.lock);
    return pd;
}

void iwd_cm_use_device(struct iwd_id *id, struct ibv_context *verbs)
{
    id->pub.verbs = verbs;
    id->pub.port_num = 1;
    if (!id->pub.pd)
        id->pub.pd = device_pd(verbs);
}

bool iwd_cm_set_verbs(struct iwd_id *id, const struct sockaddr *addr)
{
    if (!addr_family_ok(addr) || is_wildcard(addr))
        return false;
    struct ibv_context *verbs = iwd_context_for_addr(addr);
    if (!verbs)
        return false;
    iwd_cm_use_device(id, verbs);
    return true;
}

void iwd_cm_qp_state(struct iwd_id *id, enum ibv_qp_state state)
{
    /* a QP the application destroyed (ibv_destroy_qp) has let go of the id: not touched */
    if (!id->iw->qp) {
        id->user_qp = NULL;
        return;
    }
    struct ibv_qp *qp = id->pub.qp ? id->pub.qp : id->user_qp;
    if (qp)
        iwd_qp_set_state(qp, state);
}

struct iwd_id *iwd_cm_id_new(struct iwd_channel *ch, struct iwarp_cm_id *iw, void *context,
                             enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
    struct iwd_id *id = calloc(1, sizeof *id);
    if (!id) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ch) {
        ch = iwd_cm_channel_new();
        if (!ch) {
            int e = errno;
            free(id);
            errno = e;
            return NULL;
        }
        id->sync = true;
    }
    if (!iw) {
        /* every port space runs over TCP: iWARP has no other (UD QPs fail at creation) */
        int rc = iwarp_cm_create_id(ch->iw, &iw, id, IWARP_PS_TCP);
        if (rc != 0) {
            if (id->sync)
                iwd_cm_channel_free(ch);
            free(id);
            errno = iwd_cm_errno(rc);
            return NULL;
        }
    } else if (ch->iw != iw->channel) {
        int rc = iwarp_cm_migrate_id(iw, ch->iw);
        if (rc != 0) {
            if (id->sync)
                iwd_cm_channel_free(ch);
            free(id);
            errno = iwd_cm_errno(rc);
            return NULL;
        }
    }
    iw->context_user = id;
    id->iw = iw;
    id->pub.channel = &ch->pub;
    id->pub.context = context;
    id->pub.ps = ps;
    id->pub.qp_type = qp_type;
    return id;
}

/** rdma_create_id - a new id; channel NULL: synchronous mode (a channel of its own). */
IWD_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
                              void *context, enum rdma_port_space ps)
{
    if (!id)
        return iwd_cm_fail(EINVAL);
    enum ibv_qp_type qp_type;
    switch (ps) {
    case RDMA_PS_TCP:
    case RDMA_PS_IB:
        qp_type = IBV_QPT_RC;
        break;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB:
        /* as the kernel: the id is made; a UD QP for it is not (EOPNOTSUPP, as siw) */
        qp_type = IBV_QPT_UD;
        break;
    default:
        return iwd_cm_fail(EINVAL);
    }
    struct iwd_id *nid =
        iwd_cm_id_new(channel ? iwd_channel_of(channel) : NULL, NULL, context, ps, qp_type);
    if (!nid)
        return -1;
    *id = &nid->pub;
    return 0;
}

/* Take every event still queued for the id and release it (the kernel drops them with the
 * id): the id moves to a channel of its own first, so other ids' events stay where they are.
 * A listener's queued requests are refused. */
static void drain(struct iwd_id *id)
{
    struct iwarp_cm_channel *tmp;
    if (iwarp_cm_create_channel(id->iw->context, &tmp) != 0)
        return;
    struct iwarp_cm_channel *was = id->iw->channel;
    if (iwarp_cm_migrate_id(id->iw, tmp) != 0) {
        iwarp_cm_destroy_channel(tmp);
        return;
    }
    struct iwarp_cm_event *ev;
    while (iwarp_cm_get_event_timeout(tmp, &ev, 0) == 0) {
        struct iwarp_cm_id *req =
            ev->event == IWARP_CM_EVENT_CONNECT_REQUEST && ev->listen_id && ev->id != id->iw
                ? ev->id
                : NULL;
        if (req)
            iwarp_cm_reject(req, NULL, 0);
        iwarp_cm_ack_event(ev);
        if (req)
            iwarp_cm_destroy_id(req);
    }
    iwarp_cm_migrate_id(id->iw, was);
    iwarp_cm_destroy_channel(tmp);
}

/** rdma_destroy_id - destroy an id; waits while events of it are taken but not acked. */
IWD_EXPORT int rdma_destroy_id(struct rdma_cm_id *pub)
{
    if (!pub)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *id = iwd_id_of(pub);
    if (pub->event) {
        rdma_ack_cm_event(pub->event);
        pub->event = NULL;
    }
    if (id->req_event) {
        /* its CONNECT_REQUEST, not acked yet: librdmacm counts it as the listener's event, so
         * the id goes now and the event is released here (the application still acks it) */
        iwarp_cm_ack_event(id->req_event->iw);
        id->req_event->iw = NULL;
        id->req_event = NULL;
    }
    /* the QP outlives the id, as in librdmacm (the application destroys it) */
    if (id->iw->qp)
        iwarp_cm_attach_qp(id->iw, NULL);
    id->user_qp = NULL;
    drain(id);
    for (;;) {
        int rc = iwarp_cm_destroy_id(id->iw);
        if (rc == 0)
            break;
        if (rc != IWARP_ERR_BUSY)
            return iwd_cm_fail(iwd_cm_errno(rc));
        /* the application holds events of it: librdmacm waits for their acks too */
        drain(id);
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    if (id->sync)
        iwd_cm_channel_free(iwd_channel_of(pub->channel));
    free(id->qp_init_attr);
    free(id);
    return 0;
}

/* Whether some interface has the address (up or not). */
static bool addr_is_local(const struct sockaddr *sa)
{
    struct ifaddrs *all, *i;
    bool found = false;
    if (getifaddrs(&all) != 0)
        return false;
    for (i = all; i && !found; i = i->ifa_next) {
        const struct sockaddr *a = i->ifa_addr;
        if (!a || a->sa_family != sa->sa_family)
            continue;
        if (sa->sa_family == AF_INET)
            found = ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                    ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
        else
            found = IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
                                       &((const struct sockaddr_in6 *)sa)->sin6_addr);
    }
    freeifaddrs(all);
    return found;
}

/* The errno for a local address no device serves: the kernel's rdma_translate_ip finds no
 * interface with it (EADDRNOTAVAIL), or cma_acquire_dev no device on that interface (ENODEV). */
static int no_device_errno(const struct sockaddr *sa)
{
    return addr_is_local(sa) ? ENODEV : EADDRNOTAVAIL;
}

/** rdma_bind_addr - bind to a local address (port 0: one is picked at rdma_listen). */
IWD_EXPORT int rdma_bind_addr(struct rdma_cm_id *pub, struct sockaddr *addr)
{
    if (!pub || !addr)
        return iwd_cm_fail(EINVAL);
    if (!addr_family_ok(addr))
        return iwd_cm_fail(EAFNOSUPPORT);
    struct iwd_id *id = iwd_id_of(pub);
    if (!is_wildcard(addr) && !iwd_cm_set_verbs(id, addr))
        return iwd_cm_fail(no_device_errno(addr));
    int rc = iwarp_cm_bind_addr(id->iw, addr);
    if (rc != 0)
        return iwd_cm_fail(iwd_cm_errno(rc));
    iwd_cm_copy_addr(&pub->route.addr.src_storage, addr);
    return 0;
}

/* The local address the system would use to reach dst (a connected UDP socket tells). */
static int route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
    int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_storage d;
    iwd_cm_copy_addr(&d, dst);
    if (d.ss_family == AF_INET && ((struct sockaddr_in *)&d)->sin_port == 0)
        ((struct sockaddr_in *)&d)->sin_port = htons(9); /* connect needs some port */
    if (d.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&d)->sin6_port == 0)
        ((struct sockaddr_in6 *)&d)->sin6_port = htons(9);
    socklen_t len = sizeof *src;
    int rc =
        connect(fd, (struct sockaddr *)&d,
                d.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
    if (rc == 0)
        rc = getsockname(fd, (struct sockaddr *)src, &len);
    int e = errno;
    close(fd);
    errno = e;
    if (rc == 0) {
        if (src->ss_family == AF_INET)
            ((struct sockaddr_in *)src)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)src)->sin6_port = 0;
    }
    return rc;
}

/** rdma_resolve_addr - resolve dst (numeric) and the device to reach it from; src optional. */
IWD_EXPORT int rdma_resolve_addr(struct rdma_cm_id *pub, struct sockaddr *src_addr,
                                 struct sockaddr *dst_addr, int timeout_ms)
{
    if (!pub || !dst_addr)
        return iwd_cm_fail(EINVAL);
    if (!addr_family_ok(dst_addr) ||
        (src_addr && !addr_family_ok(src_addr) && src_addr->sa_family != AF_UNSPEC))
        return iwd_cm_fail(EAFNOSUPPORT);
    struct iwd_id *id = iwd_id_of(pub);
    if (src_addr && src_addr->sa_family == AF_UNSPEC)
        src_addr = NULL;
    struct sockaddr_storage local;
    const struct sockaddr *bound = (const struct sockaddr *)&pub->route.addr.src_storage;
    if (src_addr && !is_wildcard(src_addr))
        iwd_cm_copy_addr(&local, src_addr);
    else if (addr_family_ok(bound) && !is_wildcard(bound))
        iwd_cm_copy_addr(&local, bound);
    else if (route_src(dst_addr, &local) != 0)
        return iwd_cm_fail(errno == ENETUNREACH ? ENETUNREACH : EADDRNOTAVAIL);
    if (!iwd_cm_set_verbs(id, (struct sockaddr *)&local))
        return iwd_cm_fail(no_device_errno((struct sockaddr *)&local));
    int rc = iwarp_cm_resolve_addr(id->iw, src_addr, dst_addr, timeout_ms);
    if (rc != 0)
        return iwd_cm_fail(iwd_cm_errno(rc));
    iwd_cm_copy_addr(&pub->route.addr.dst_storage, dst_addr);
    if (!addr_family_ok(bound))
        iwd_cm_copy_addr(&pub->route.addr.src_storage, (struct sockaddr *)&local);
    return iwd_cm_sync_wait(id);
}

/** rdma_resolve_route - iWARP has no path records: resolved at once (num_paths stays 0). */
IWD_EXPORT int rdma_resolve_route(struct rdma_cm_id *pub, int timeout_ms)
{
    if (!pub)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *id = iwd_id_of(pub);
    int rc = iwarp_cm_resolve_route(id->iw, timeout_ms);
    if (rc != 0)
        return iwd_cm_fail(iwd_cm_errno(rc));
    return iwd_cm_sync_wait(id);
}

/** rdma_listen - listen on the bound address; connection requests arrive as events. */
IWD_EXPORT int rdma_listen(struct rdma_cm_id *pub, int backlog)
{
    if (!pub)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *id = iwd_id_of(pub);
    int rc = iwarp_cm_listen(id->iw, backlog);
    if (rc != 0)
        return iwd_cm_fail(iwd_cm_errno(rc));
    id->listening = true;
    id->iw_cm = true;
    iwd_cm_copy_addr(&pub->route.addr.src_storage, (struct sockaddr *)&id->iw->local_addr);
    return 0;
}

/** rdma_migrate_id - move the id (and its queued events) to channel; NULL: one of its own. */
IWD_EXPORT int rdma_migrate_id(struct rdma_cm_id *pub, struct rdma_event_channel *channel)
{
    if (!pub)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *id = iwd_id_of(pub);
    if (id->sync && !channel)
        return iwd_cm_fail(EINVAL);
    struct iwd_channel *to = channel ? iwd_channel_of(channel) : iwd_cm_channel_new();
    if (!to)
        return -1;
    int rc = iwarp_cm_migrate_id(id->iw, to->iw);
    if (rc != 0) {
        if (!channel)
            iwd_cm_channel_free(to);
        return iwd_cm_fail(iwd_cm_errno(rc));
    }
    if (id->sync) {
        if (pub->event) {
            rdma_ack_cm_event(pub->event);
            pub->event = NULL;
        }
        iwd_cm_channel_free(iwd_channel_of(pub->channel));
    }
    id->sync = channel == NULL;
    pub->channel = &to->pub;
    return 0;
}

/** rdma_set_option - RDMA_OPTION_ID's TOS, REUSEADDR, AFONLY, ACK_TIMEOUT are accepted (TCP
 * sets the first three itself); RDMA_OPTION_IB_PATH is EINVAL (iWARP has no paths), anything
 * else ENOSYS, as the kernel answers. */
IWD_EXPORT int rdma_set_option(struct rdma_cm_id *pub, int level, int optname, void *optval,
                               size_t optlen)
{
    if (!pub || !optval)
        return iwd_cm_fail(EINVAL);
    if (level == RDMA_OPTION_ID) {
        switch (optname) {
        case RDMA_OPTION_ID_TOS:
        case RDMA_OPTION_ID_ACK_TIMEOUT:
            return optlen == sizeof(uint8_t) ? 0 : iwd_cm_fail(EINVAL);
        case RDMA_OPTION_ID_REUSEADDR:
        case RDMA_OPTION_ID_AFONLY:
            return optlen == sizeof(int) ? 0 : iwd_cm_fail(EINVAL);
        default:
            return iwd_cm_fail(ENOSYS);
        }
    }
    if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
        return iwd_cm_fail(EINVAL);
    return iwd_cm_fail(ENOSYS);
}

static __be16 port_of(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_port;
    if (ss->ss_family == AF_INET6)
        return ((const struct sockaddr_in6 *)ss)->sin6_port;
    return 0;
}

/** rdma_get_src_port - the local port, network order (0 while unknown). */
IWD_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *pub)
{
    if (!pub)
        return 0;
    struct iwd_id *id = iwd_id_of(pub);
    __be16 p = port_of(&id->iw->local_addr);
    return p ? p : port_of(&pub->route.addr.src_storage);
}

/** rdma_get_dst_port - the peer's port, network order (0 while unknown). */
IWD_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *pub)
{
    if (!pub)
        return 0;
    return port_of(&pub->route.addr.dst_storage);
}

/** rdma_get_devices - every device's context, NULL-terminated; free with rdma_free_devices. */
IWD_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
    int n = 0;
    struct ibv_context **all = iwd_contexts(&n);
    if (!all)
        return NULL;
    struct ibv_context **list = calloc((size_t)n + 1, sizeof *list);
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(list, all, (size_t)n * sizeof *list);
    if (num_devices)
        *num_devices = n;
    return list;
}

/** rdma_free_devices - free rdma_get_devices' list (the contexts stay open, as librdmacm's). */
IWD_EXPORT void rdma_free_devices(struct ibv_context **list)
{
    free(list);
}
