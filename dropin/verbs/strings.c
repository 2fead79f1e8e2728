/* SPDX-License-Identifier: BSD-2-Clause */
/* The pure helpers: names of enum values, rate conversions, fork support. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>

#include "internal.h"

/**
 * ibv_wc_status_str - the status's name (libiwarp has the same spelling as rdma-core).
 */
IWD_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    return iwarp_wc_status_str((enum iwarp_wc_status)status);
}

/**
 * ibv_event_type_str - the async event type's name.
 */
IWD_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
    return iwarp_event_type_str((enum iwarp_event_type)event);
}

/**
 * ibv_node_type_str - the node type's name ("iWARP NIC" for ours); "unknown" out of range.
 */
IWD_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
    static const char *const names[] = {
        [IBV_NODE_CA] = "InfiniBand channel adapter",
        [IBV_NODE_SWITCH] = "InfiniBand switch",
        [IBV_NODE_ROUTER] = "InfiniBand router",
        [IBV_NODE_RNIC] = "iWARP NIC",
        [IBV_NODE_USNIC] = "usNIC",
        [IBV_NODE_USNIC_UDP] = "usNIC UDP",
        [IBV_NODE_UNSPECIFIED] = "unspecified",
    };

    if (node_type < IBV_NODE_CA || node_type > IBV_NODE_UNSPECIFIED)
        return "unknown";
    return names[node_type];
}

/**
 * ibv_port_state_str - the port state's name; "unknown" out of range.
 */
IWD_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
    static const char *const names[] = {
        [IBV_PORT_NOP] = "no state change (NOP)",
        [IBV_PORT_DOWN] = "down",
        [IBV_PORT_INIT] = "init",
        [IBV_PORT_ARMED] = "armed",
        [IBV_PORT_ACTIVE] = "active",
        [IBV_PORT_ACTIVE_DEFER] = "active deferred",
    };

    if (port_state < IBV_PORT_NOP || port_state > IBV_PORT_ACTIVE_DEFER)
        return "unknown";
    return names[port_state];
}

/* Each rate: its enum value, multiple of 2.5 Gb/s (0: not a multiple), Mb/s. */
static const struct {
    enum ibv_rate rate;
    int mult;
    int mbps;
} rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 0, 25781},
    {IBV_RATE_100_GBPS, 0, 103125},   {IBV_RATE_200_GBPS, 0, 206250},
    {IBV_RATE_300_GBPS, 0, 309375},   {IBV_RATE_28_GBPS, 0, 28125},
    {IBV_RATE_50_GBPS, 0, 53125},     {IBV_RATE_400_GBPS, 0, 425000},
    {IBV_RATE_600_GBPS, 0, 637500},   {IBV_RATE_800_GBPS, 0, 850000},
    {IBV_RATE_1200_GBPS, 0, 1275000},
};
#define N_RATES (sizeof rates / sizeof rates[0])

/**
 * ibv_rate_to_mult - the rate as a multiple of 2.5 Gb/s; -1 when it is not one.
 */
IWD_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
    for (size_t i = 0; i < N_RATES; i++)
        if (rates[i].rate == rate)
            return rates[i].mult ? rates[i].mult : -1;
    return -1;
}

/**
 * mult_to_ibv_rate - the rate of a multiple of 2.5 Gb/s; IBV_RATE_MAX when there is none.
 */
IWD_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
    for (size_t i = 0; i < N_RATES; i++)
        if (rates[i].mult && rates[i].mult == mult)
            return rates[i].rate;
    return IBV_RATE_MAX;
}

/**
 * ibv_rate_to_mbps - the rate in Mb/s; -1 for an unknown rate.
 */
IWD_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
    for (size_t i = 0; i < N_RATES; i++)
        if (rates[i].rate == rate)
            return rates[i].mbps;
    return -1;
}

/**
 * mbps_to_ibv_rate - the rate of exactly mbps Mb/s; IBV_RATE_MAX when there is none.
 */
IWD_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    for (size_t i = 0; i < N_RATES; i++)
        if (rates[i].mbps == mbps)
            return rates[i].rate;
    return IBV_RATE_MAX;
}

/**
 * ibv_fork_init - 0: libiwarp registers plain process memory (no DMA pinning), so a fork
 * cannot break a registration.
 */
IWD_EXPORT int ibv_fork_init(void)
{
    return 0;
}

/**
 * ibv_is_fork_initialized - IBV_FORK_UNNEEDED (see ibv_fork_init).
 */
IWD_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

/**
 * ibv_dontfork_range - 0 (nothing to protect, see ibv_fork_init).
 */
IWD_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}

/**
 * ibv_dofork_range - 0 (see ibv_dontfork_range).
 */
IWD_EXPORT int ibv_dofork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}
