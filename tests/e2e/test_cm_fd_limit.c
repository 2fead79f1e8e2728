/* SPDX-License-Identifier: BSD-2-Clause */
/* A listener when the process has no file descriptor left (a flood that reaches the fd limit):
 * accept() fails with EMFILE while the connection stays queued. With stalled MPA startups
 * pending, the oldest is reset and its fd goes to the waiting connection; with none, the
 * listener stops listening for a while instead of being reported readable again at once, for
 * ever (the progress thread spun), and accepts once fds are free. */
#define _GNU_SOURCE 1
#include <sys/resource.h>

#include "proc_probe.h"
#include "raw_peer.h"
#include "stack_pair.h"

static unsigned count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    unsigned n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3u; /* ".", ".." and the directory's own fd */
}

/* Takes every free fd of the process but `leave` (after lowering the soft limit to a little
 * above what is open, so that this is quick). Returns the fds taken; *n says how many. */
static int *take_fds(unsigned leave, unsigned *n)
{
    struct rlimit rl;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = count_fds() + 64u;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    int *fds = malloc(sizeof(int) * (size_t)rl.rlim_cur);
    ASSERT_TRUE(fds != NULL);
    *n = 0;
    for (;;) {
        int fd = dup(0);
        if (fd < 0) {
            ASSERT_EQ(errno, EMFILE);
            break;
        }
        fds[(*n)++] = fd;
    }
    ASSERT_TRUE(*n >= leave);
    for (unsigned k = 0; k < leave; k++)
        close(fds[--*n]);
    return fds;
}

static void give_fds(int *fds, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        close(fds[k]);
    free(fds);
}

/* The state letter of the thread whose /proc/self/task/<tid>/stat is open as fd ('R' running
 * or runnable, 'S' asleep), read again from the start: no new file is opened, as none can be
 * while the process is out of fds. */
static char thread_state(int fd)
{
    char st[512];
    ssize_t n = pread(fd, st, sizeof st - 1, 0);
    ASSERT_TRUE(n > 0);
    st[n] = 0;
    const char *r = strrchr(st, ')'); /* after the command name, which may hold anything */
    ASSERT_TRUE(r && r[1] == ' ');
    return r[2];
}

static void srv_init(struct sp_side *srv)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.comp_mask = IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT;
    a.mpa_startup_timeout_ms = 600000; /* only what is tested here closes anything */
    sp_side_init_attr(srv, NULL, &a, 16, false);
}

/* A Request on fd is announced; the server rejects it. */
static void announced(struct sp_side *srv, int fd)
{
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    ASSERT_EQ(send(fd, req, sizeof req, 0), (ssize_t)sizeof req);
    struct iwarp_cm_event *ev = sp_expect_event(srv, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *id = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ASSERT_EQ(iwarp_cm_reject(id, NULL, 0), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
}

TEST(out_of_fds_a_stalled_startup_is_reset_for_a_new_connection)
{
    struct sp_side srv;
    srv_init(&srv);
    uint16_t port = sp_listen(&srv);
    int s1 = raw_connect(port);
    raw_wait_accepted(s1, port, SP_WAIT_MS);
    int s2 = raw_connect(port);
    raw_wait_accepted(s2, port, SP_WAIT_MS);
    unsigned n;
    int *fds = take_fds(1, &n);
    int c = raw_connect(port); /* the last fd: the server has none to accept it with */
    /* the oldest stalled startup makes room: reset at once (nothing else would close it), and
     * the new connection is served while the process is still out of fds (nothing here may
     * open a file now: no /proc probe) */
    (void)raw_wait_closed(s1, 4000, "the oldest stalled startup to be reset");
    announced(&srv, c);
    ASSERT_TRUE(raw_open_now(s2));
    give_fds(fds, n);
    close(s1);
    close(s2);
    close(c);
    sp_side_fini(&srv);
}

TEST(out_of_fds_with_nothing_to_reset_the_listener_waits_without_spinning)
{
    struct sp_side srv;
    srv_init(&srv);
    uint16_t port = sp_listen(&srv);
    pid_t loop =
        PROBE_WAIT_THREAD_IN(0, probe_epoll_wait, SP_WAIT_MS, "the progress thread in epoll_wait");
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)loop);
    int stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(stat_fd >= 0);
    ASSERT_EQ(thread_state(stat_fd), 'S');
    unsigned n;
    int *fds = take_fds(1, &n);
    int c = raw_connect(port);
    /* The accept fails from now on. A fixed window, for what must not happen: the progress
     * thread running all along. Sampled 200 times over 1 s, a thread asleep in epoll_wait
     * between tries every 100 ms is seldom running; one that spins always is (running or
     * runnable: 'R', whatever the load). */
    unsigned running = 0;
    for (int k = 0; k < 200; k++) {
        if (thread_state(stat_fd) == 'R')
            running++;
        deadline_pause_us(5000);
    }
    if (running > 40u)
        harness_fail(__FILE__, __LINE__, "the progress thread was running in %u of 200 samples",
                     running);
    give_fds(fds, n);
    close(stat_fd);
    /* fds are free again: the queued connection is accepted at the next try */
    raw_wait_accepted(c, port, SP_WAIT_MS);
    announced(&srv, c);
    close(c);
    sp_side_fini(&srv);
}
