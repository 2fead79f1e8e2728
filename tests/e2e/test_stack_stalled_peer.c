/* SPDX-License-Identifier: BSD-2-Clause */
/* A peer that stops reading, over real loopback TCP. The peer is a context in caller-driven
 * progress that the test stops calling into: its socket stays open and its kernel keeps
 * acknowledging, but nothing reads, so its receive window shuts and our sends back up.
 *  - While stalled the sender's memory stays bounded: posts beyond the send queue fail with
 *    IWARP_ERR_NOSPC, and nothing is allocated.
 *  - After iwarp_ctx_attr.llp_timeout_ms the connection is dropped: every WR not completed is
 *    flushed in order, QP_FATAL and DISCONNECTED are reported (TCP_USER_TIMEOUT).
 *  - A peer that pauses for less than that and resumes loses nothing.
 *  - Sockets carry the limit: 60000 ms by default, none when the application asks for 0.
 * The same over DDP over SCTP: test_stack_sctp_stalled_peer. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/stat.h>

#include "stalled_peer.h"

#define MIB (1u << 20)

/* The client's allocations (stall_rig_up). */
static struct alloc_count allocs;

#define SQ       32u
#define N_WRITES 32u /* 32 MiB into a peer that does not read: far more than loopback buffers */

TEST(a_peer_that_stops_reading_is_dropped_after_the_llp_timeout_with_a_flush)
{
    const uint32_t timeout_ms = 1500;
    struct sp_rig r;
    stall_rig_up(&r, &allocs, IWARP_PS_TCP, MIB, SQ, timeout_ms);
    struct iwarp_wc wc[N_WRITES + SQ];
    struct stall_drop d = stall_until_dropped(&r, &allocs, wc, N_WRITES, MIB, SQ);
    /* at least the slots of the WRs completed (a few more may have gone into the socket) */
    ASSERT_TRUE(d.extra >= d.done);
    /* not before the limit: the window shut at most a few milliseconds before the last write
     * the kernel took (the last completion); the kernel checks at its probe times, so later is
     * allowed */
    printf("  dropped %" PRIu64 " ms after the last completion (timeout %u ms)\n", d.waited_ms,
           timeout_ms);
    ASSERT_TRUE(d.waited_ms + 100u >= timeout_ms);
    ASSERT_TRUE(d.waited_ms < timeout_ms + 10000u);

    /* the stalled side is still whole: its teardown is the abortive one */
    sp_destroy_pairs(&r.pair, 1);
    sp_rig_release(&r);
}

#define PAUSE_WRITES 16u

TEST(a_peer_that_pauses_for_less_than_the_timeout_loses_nothing)
{
    struct sp_rig r;
    stall_rig_up(&r, &allocs, IWARP_PS_TCP, (size_t)PAUSE_WRITES * MIB, SQ, 4000);
    struct iwarp_wc wc[PAUSE_WRITES + 1];
    stall_pause_then_resume(&r, wc, PAUSE_WRITES, MIB, 11);
    sp_rig_down(&r);
}

/* The TCP_USER_TIMEOUT of every connected TCP socket of this process, in fd order. */
static int connected_socket_timeouts(unsigned *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    int fds[256], nfds = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && nfds < 256)
        if (de->d_name[0] != '.')
            fds[nfds++] = atoi(de->d_name);
    closedir(d);
    for (int i = 0; i < nfds && n < max; i++) {
        struct stat st;
        int type = 0, listening = 0;
        socklen_t len = sizeof type;
        if (fstat(fds[i], &st) != 0 || !S_ISSOCK(st.st_mode) ||
            getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
            continue;
        len = sizeof listening;
        if (getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening)
            continue;
        unsigned v = 0;
        len = sizeof v;
        if (getsockopt(fds[i], IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &len) == 0)
            out[n++] = v;
    }
    return n;
}

TEST(sockets_carry_the_limit_60_s_by_default_none_for_0)
{
    struct sp_rig r;
    stall_rig_up(&r, &allocs, IWARP_PS_TCP, 4096, 8,
                 0); /* server: the default; client: 0, no limit */
    unsigned t[8];
    int n = connected_socket_timeouts(t, 8);
    ASSERT_EQ(n, 2);
    ASSERT_TRUE((t[0] == 60000u && t[1] == 0u) || (t[0] == 0u && t[1] == 60000u));
    sp_rig_down(&r);
}
