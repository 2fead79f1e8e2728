/* SPDX-License-Identifier: BSD-2-Clause */
/* Devices: one iWARP device per up network interface, loopback included, as siw makes one per
 * netdev. Named "iwarp_<ifname>" so that the interface behind a device is plain to see (siw's
 * names are chosen by whoever adds the link; "siw_<ifname>" is the usual choice). */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iwd_device *devices; /* every device ever seen, in discovery order */

static int ifreq_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int rc;

    if (fd < 0)
        return -1;
    memset(ifr, 0, sizeof *ifr);
    snprintf(ifr->ifr_name, sizeof ifr->ifr_name, "%s", ifname);
    rc = ioctl(fd, req, ifr);
    close(fd);
    return rc;
}

/**
 * iwd_device_up - see internal.h.
 */
bool iwd_device_up(const struct iwd_device *d)
{
    struct ifreq ifr;

    return ifreq_ioctl(d->ifname, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP);
}

/**
 * iwd_device_mtu - see internal.h.
 */
int iwd_device_mtu(const struct iwd_device *d)
{
    struct ifreq ifr;

    if (ifreq_ioctl(d->ifname, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
        return ifr.ifr_mtu;
    return 1500;
}

/* The interface's MAC; an interface without one (lo, tun) gets a locally administered
 * unicast address derived from its name, stable across processes, as siw generates one so
 * that connection management sees a non-zero, per-device GID. */
static void device_mac(struct iwd_device *d)
{
    struct ifreq ifr;
    static const uint8_t zero[6];

    if (ifreq_ioctl(d->ifname, SIOCGIFHWADDR, &ifr) == 0)
        memcpy(d->mac, ifr.ifr_hwaddr.sa_data, 6);
    if (!memcmp(d->mac, zero, 6)) {
        uint32_t h = 2166136261u; /* FNV-1a of the name */

        for (const char *p = d->ifname; *p; p++)
            h = (h ^ (uint8_t)*p) * 16777619u;
        d->mac[0] = 0x02; /* locally administered, unicast */
        d->mac[1] = 'i';
        d->mac[2] = (uint8_t)(h >> 24);
        d->mac[3] = (uint8_t)(h >> 16);
        d->mac[4] = (uint8_t)(h >> 8);
        d->mac[5] = (uint8_t)h;
    }
    /* EUI-48 to EUI-64 (addrconf_addr_eui48): ff:fe in the middle, U/L bit flipped. */
    uint8_t g[8] = {(uint8_t)(d->mac[0] ^ 2),
                    d->mac[1],
                    d->mac[2],
                    0xff,
                    0xfe,
                    d->mac[3],
                    d->mac[4],
                    d->mac[5]};
    memcpy(&d->guid, g, 8);
}

static struct iwd_device *device_new(const char *ifname, unsigned int ifindex)
{
    struct iwd_device *d = calloc(1, sizeof *d);

    if (!d)
        return NULL;
    snprintf(d->ifname, sizeof d->ifname, "%s", ifname);
    d->ifindex = ifindex;
    d->dev.node_type = IBV_NODE_RNIC;
    d->dev.transport_type = IBV_TRANSPORT_IWARP;
    snprintf(d->dev.name, sizeof d->dev.name, "iwarp_%s", ifname);
    /* No uverbs character device or sysfs directory is behind it. */
    snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "iwarp_%s", ifname);
    device_mac(d);
    return d;
}

/**
 * iwd_devices_refresh - see internal.h. Call with devices_lock held.
 */
struct iwd_device *iwd_devices_refresh(void)
{
    struct if_nameindex *names = if_nameindex();

    if (!names)
        return NULL;
    for (struct iwd_device *d = devices; d; d = d->next)
        d->present = false;
    for (struct if_nameindex *n = names; n->if_index; n++) {
        struct iwd_device *d, **tail = &devices;
        struct ifreq ifr;

        if (ifreq_ioctl(n->if_name, SIOCGIFFLAGS, &ifr) || !(ifr.ifr_flags & IFF_UP))
            continue;
        for (d = devices; d; d = d->next) {
            if (!strcmp(d->ifname, n->if_name))
                break;
            tail = &d->next;
        }
        if (!d) {
            d = device_new(n->if_name, n->if_index);
            if (!d) {
                if_freenameindex(names);
                errno = ENOMEM;
                return NULL;
            }
            *tail = d;
        }
        d->ifindex = n->if_index;
        d->present = true;
    }
    if_freenameindex(names);
    if (!devices)
        errno = ENODEV;
    return devices;
}

/**
 * ibv_get_device_list - the devices of the up interfaces, NULL-terminated.
 * Returns NULL with errno (ENOMEM) on failure; an empty list when no interface is up.
 */
IWD_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list;
    int n = 0, i = 0;

    pthread_mutex_lock(&devices_lock);
    iwd_devices_refresh();
    for (struct iwd_device *d = devices; d; d = d->next)
        n += d->present;
    list = calloc((size_t)n + 1, sizeof *list);
    if (list)
        for (struct iwd_device *d = devices; d; d = d->next)
            if (d->present)
                list[i++] = &d->dev;
    pthread_mutex_unlock(&devices_lock);
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    if (num_devices)
        *num_devices = n;
    return list;
}

/**
 * ibv_free_device_list - free a list from ibv_get_device_list (the devices stay valid).
 */
IWD_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

/**
 * ibv_get_device_name - the device's name ("iwarp_lo"); NULL for a NULL device.
 */
IWD_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    if (!device)
        return iwd_fail_null(EINVAL);
    return device->name;
}

/**
 * ibv_get_device_guid - the node GUID (network byte order): the EUI-64 of the interface's MAC.
 */
IWD_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    if (!device)
        return 0;
    return ((struct iwd_device *)device)->guid;
}

/**
 * ibv_get_device_index - the device's index: its interface's index (stable while it exists).
 */
IWD_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    if (!device)
        return -1;
    return (int)((struct iwd_device *)device)->ifindex;
}

static bool addr_equal(const struct sockaddr *a, const struct sockaddr *ifa)
{
    if (!ifa)
        return false;
    if (a->sa_family == AF_INET && ifa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)ifa)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6 && ifa->sa_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                       &((const struct sockaddr_in6 *)ifa)->sin6_addr, 16);
    if (a->sa_family == AF_INET6 && ifa->sa_family == AF_INET) {
        /* an IPv4-mapped IPv6 address (::ffff:a.b.c.d) belongs to the IPv4 interface */
        const struct in6_addr *s6 = &((const struct sockaddr_in6 *)a)->sin6_addr;

        return IN6_IS_ADDR_V4MAPPED(s6) &&
               !memcmp(&s6->s6_addr[12], &((const struct sockaddr_in *)ifa)->sin_addr, 4);
    }
    return false;
}

static struct ibv_context *device_cm_context(struct iwd_device *d)
{
    if (!d->cm_ctx)
        d->cm_ctx = ibv_open_device(&d->dev);
    return d->cm_ctx;
}

/**
 * iwd_context_for_addr - see dropin.h.
 */
struct ibv_context *iwd_context_for_addr(const struct sockaddr *addr)
{
    struct ifaddrs *ifas, *match = NULL;
    struct ibv_context *ctx = NULL;

    if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
        return iwd_fail_null(ENODEV);
    if (getifaddrs(&ifas))
        return NULL;
    for (struct ifaddrs *i = ifas; i && !match; i = i->ifa_next)
        if (addr_equal(addr, i->ifa_addr))
            match = i;
    if (!match) {
        freeifaddrs(ifas);
        return iwd_fail_null(ENODEV);
    }
    /* an IPv4 alias is labelled "eth0:1"; its device is eth0's */
    size_t name_len = strcspn(match->ifa_name, ":");

    bool found = false;
    int open_errno = 0;

    pthread_mutex_lock(&devices_lock);
    iwd_devices_refresh();
    for (struct iwd_device *d = devices; d; d = d->next)
        if (d->present && strlen(d->ifname) == name_len &&
            !strncmp(d->ifname, match->ifa_name, name_len)) {
            found = true;
            ctx = device_cm_context(d);
            open_errno = errno;
            break;
        }
    pthread_mutex_unlock(&devices_lock);
    freeifaddrs(ifas);
    if (!ctx)
        errno = found ? open_errno : ENODEV; /* an interface that is down has no device */
    return ctx;
}

/**
 * iwd_contexts - see dropin.h. The array is the library's: kept while the set of devices is
 * the same, replaced (the old one kept, never freed: a caller may still be copying it) when
 * an interface comes or goes.
 */
struct ibv_context **iwd_contexts(int *count)
{
    static struct ibv_context **cached;
    static int cached_n;
    struct ibv_context **list = NULL;
    int n = 0, i = 0;

    pthread_mutex_lock(&devices_lock);
    iwd_devices_refresh();
    for (struct iwd_device *d = devices; d; d = d->next)
        n += d->present;
    list = calloc((size_t)n + 1, sizeof *list);
    if (!list) {
        pthread_mutex_unlock(&devices_lock);
        return iwd_fail_null(ENOMEM);
    }
    for (struct iwd_device *d = devices; d; d = d->next) {
        if (!d->present)
            continue;
        list[i] = device_cm_context(d);
        if (!list[i]) {
            pthread_mutex_unlock(&devices_lock);
            free(list);
            return NULL;
        }
        i++;
    }
    if (cached && cached_n == n && !memcmp(cached, list, (size_t)n * sizeof *list)) {
        free(list);
        list = cached;
    } else {
        cached = list;
        cached_n = n;
    }
    pthread_mutex_unlock(&devices_lock);
    if (count)
        *count = n;
    return list;
}
