/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A TCP relay between an MPA client and server, for tests that must cut a connection at an exact
 * place of the stream: it forwards octets unchanged both ways and reads the MPA framing just
 * enough to know where each FPDU begins and ends (RFC 5044 §7.1: the Request and Reply frames,
 * 20 octets and PD_Length octets of private data; then FPDUs of ULPDU_Length, the ULPDU, PAD to 4
 * and the 4-octet CRC field, which is there whether or not CRC is in use, §4.1; markers are not
 * supported: the relay fails a connection that asks for them). From each FPDU's first two ULPDU
 * octets it knows the DDP flags and the RDMAP opcode (RFC 5041 §4.2, RFC 5040 §4.2).
 *
 * A cut (mr_cut_arm, one direction): after `skip` matching FPDUs, the relay forwards only the
 * first `at` octets of the next matching one and stops reading that direction (mid-FPDU, the rest
 * of the stream is held back for good); mr_cut_wait returns once that happened. Holding a
 * direction from the first FPDU on (mr_hold_after_mpa) keeps a connection in MPA negotiation for
 * the side that waits for the first FPDU.
 *
 * The end: when one side's connection ends (the process behind it was killed: FIN, or a reset
 * when it had unread data), the relay waits until the other side's stack has read everything
 * forwarded to it (its socket's receive queue, /proc/net/tcp, is empty, or holds less than the
 * SO_RCVLOWAT its reader in this process set: libiwarp waits for a large FPDU's whole rest), then
 * ends that side the same way (shutdown for a FIN; a reset through SO_LINGER 0). So the other side
 * sees what the killed peer's kernel did, with exactly the forwarded octets before it.
 *
 * One thread, one connection at a time: mr_start listens on 127.0.0.1 (port mr->port), and each
 * mr_arm(dst) makes it accept the next connection there and connect it to 127.0.0.1:dst.
 * mr_wait_closed waits until both of its sockets are closed.
 */
#ifndef IWARP_TESTS_MPA_RELAY_H
#define IWARP_TESTS_MPA_RELAY_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include"
#endif

#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "proc_probe.h"
#include "stack_pair.h"

#define MR_BUF 65536u

enum mr_match {
    MR_ANY_FPDU,  /* any FPDU of at least 16 octets of ULPDU */
    MR_READ_RESP, /* an FPDU of an RDMA Read Response (RFC 5040 §4.5) */
};

/* One direction: octets read from `from`, written to `to`. */
struct mr_dir {
    int from, to;
    uint8_t buf[MR_BUF];
    uint8_t sink[4096]; /* what is read, and dropped, once the direction is held */
    size_t head, tail;  /* buf[head, tail): read, not yet written */
    bool eof, reset, held;
    /* the framing: 0 the MPA frame's 20 octets, 1 its private data, 2 FPDUs */
    int stage;
    uint8_t frame[20];
    uint32_t frame_got, pd_left;
    uint32_t pos, total; /* octets of the current FPDU seen; its length (0: not known yet) */
    uint8_t fh[4];       /* its first four octets: ULPDU_Length, DDP and RDMAP control */
    uint64_t fpdus, matching;
    /* the cut */
    bool cut_armed, cutting, hold_after_mpa;
    enum mr_match match;
    uint32_t skip, at, cut_total;
    uint8_t cut_op;
    /* the end was passed on only after 2 s: 1 octets for the destination were still unsent,
     * 2 sent but not read (then outq: our socket's unacknowledged octets, rxq: the
     * destination socket's unread ones) */
    int late;
    uint16_t to_lport, to_rport; /* the ports of `to` (known while it is connected) */
    int outq;
    long interest; /* the epoll events its reader waits for then (-1: not watched) */
    uint32_t rxq;
    bool cut_hit;  /* the relay's thread: the cut happened */
    bool cut_done; /* the same, under the relay's lock */
};

struct mpa_relay {
    int listen_fd, stop[2];
    uint16_t port;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* set by the test, under lock */
    bool armed, quit;
    uint16_t dst;
    /* the connection (thread) */
    struct mr_dir d[2]; /* 0: client to server, 1: server to client */
    bool busy;          /* a connection is open (under lock) */
    bool markers_seen;
    int late[2], late_outq[2]; /* each direction's mr_dir.late, .outq, .rxq (under lock) */
    uint32_t late_rxq[2];
    long late_interest[2];
    uint64_t conns;
};

static inline bool mr_matches(const struct mr_dir *d)
{
    uint32_t ulen = (uint32_t)d->fh[0] << 8 | d->fh[1];
    if (d->match == MR_ANY_FPDU)
        return ulen >= 16u;
    /* RFC 5041 §4.2: tagged; RFC 5040 §4.2: the opcode in the RDMAP control octet's low bits */
    return (d->fh[2] & 0x80u) && (d->fh[3] & 0x0Fu) == 0x2u;
}

/* How many of the n octets at p may be forwarded now (the rest is held back for good when a cut
 * falls inside them); advances the framing over them. */
static inline size_t mr_walk(struct mr_dir *d, const uint8_t *p, size_t n)
{
    size_t k = 0;
    while (k < n) {
        if (d->held)
            return k;
        if (d->stage == 0) {
            d->frame[d->frame_got++] = p[k++];
            if (d->frame_got == 20) {
                d->pd_left = (uint32_t)d->frame[18] << 8 | d->frame[19];
                if (d->frame[16] & 0x80u)
                    d->stage = 3; /* markers: not followed */
                else
                    d->stage = d->pd_left ? 1 : 2;
                if (d->stage == 2 && d->hold_after_mpa)
                    d->held = true;
            }
            continue;
        }
        if (d->stage == 1) {
            size_t t = n - k < d->pd_left ? n - k : d->pd_left;
            k += t;
            d->pd_left -= (uint32_t)t;
            if (!d->pd_left) {
                d->stage = 2;
                if (d->hold_after_mpa)
                    d->held = true;
            }
            continue;
        }
        if (d->stage == 3)
            return n;
        /* an FPDU: its first four octets say what it is */
        if (d->pos < 4) {
            d->fh[d->pos] = p[k];
            if (d->pos == 1) {
                uint32_t ulen = (uint32_t)d->fh[0] << 8 | d->fh[1];
                uint32_t pad = (4u - (2u + ulen) % 4u) % 4u;
                d->total = 2u + ulen + pad + 4u;
            }
            if (d->pos == 3 && d->cut_armed && mr_matches(d)) {
                d->matching++;
                if (d->skip)
                    d->skip--;
                else {
                    d->cut_armed = false;
                    d->cutting = true;
                    d->cut_total = d->total;
                    d->cut_op = d->fh[3] & 0x0Fu;
                    if (d->at >= d->total)
                        d->at = d->total - 1u;
                    if (d->at < 4)
                        d->at = 4; /* the classifying octets must have gone through */
                }
            }
            d->pos++;
            k++;
        } else {
            size_t t = d->total - d->pos;
            if (d->cutting && d->at - d->pos < t)
                t = d->at - d->pos;
            if (t > n - k)
                t = n - k;
            d->pos += (uint32_t)t;
            k += t;
        }
        if (d->cutting && d->pos == d->at) {
            d->cutting = false;
            d->held = true;
            d->cut_hit = true;
            return k;
        }
        if (d->pos == d->total) {
            d->fpdus++;
            d->pos = 0;
            d->total = 0;
        }
    }
    return k;
}

static inline int mr_tcp_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_TRUE(fd >= 0);
    return fd;
}

/* fd's local (or peer's) port; 0 when it has none (a connection already reset). */
static inline uint16_t mr_port_of(int fd, bool peer)
{
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    int rc = peer ? getpeername(fd, (struct sockaddr *)&a, &l)
                  : getsockname(fd, (struct sockaddr *)&a, &l);
    return rc == 0 ? ntohs(a.sin_port) : 0;
}

/* The epoll interest this process has in the socket of inode ino (/proc/self/fdinfo of its
 * epoll fds), -1 when none watches it: what a stack that stopped reading still waits for. */
/* This process's fd of the socket of inode ino, -1 when it has none. */
static inline int mr_fd_of_inode(unsigned long ino)
{
    char path[64], link[64], want[64];
    snprintf(want, sizeof want, "socket:[%lu]", ino);
    for (int i = 0; i < 4096; i++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", i);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = 0;
            if (strcmp(link, want) == 0)
                return i;
        }
    }
    return -1;
}

static inline long mr_epoll_interest(unsigned long ino)
{
    char path[64];
    int fd = mr_fd_of_inode(ino);
    if (fd < 0)
        return -1;
    for (int i = 0; i < 4096; i++) {
        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char line[256];
        long ev = -1;
        while (fgets(line, sizeof line, f)) {
            int tfd;
            unsigned evm;
            if (sscanf(line, "tfd: %d events: %x", &tfd, &evm) == 2 && tfd == fd)
                ev = (long)evm;
        }
        fclose(f);
        if (ev >= 0)
            return ev;
    }
    return -1;
}

/* The stack behind x->to (a socket of ours) has read every octet we sent it. */
static inline bool mr_peer_drained(const struct mr_dir *x)
{
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    if (getsockopt(x->to, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 && ti.tcpi_state == TCP_CLOSE)
        return true; /* reset: nothing more will be read or acknowledged */
    int q = 0;
    if (ioctl(x->to, SIOCOUTQ, &q) == 0 && q > 0)
        return false; /* not even acknowledged */
    struct probe_tcp t;
    if (!probe_tcp_find(x->to_rport, x->to_lport, &t))
        return true; /* its socket is gone */
    if (t.rx_queue == 0)
        return true;
    /* A reader of this process that waits for a whole FPDU's rest (SO_RCVLOWAT, llp_tcp) leaves
     * a partial one in its socket by design: it has had all it will read. */
    int fd = mr_fd_of_inode(t.inode);
    int lowat = 0;
    socklen_t ll = sizeof lowat;
    return fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, &ll) == 0 &&
           (uint32_t)lowat > t.rx_queue;
}

/* End the connection toward the side of `to` as the killed side ended toward us. */
static inline void mr_end_toward(int to, bool reset)
{
    if (reset) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        (void)setsockopt(to, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    (void)shutdown(to, SHUT_WR);
}

/* Forward one connection until both sides are done. */
static inline void mr_serve(struct mpa_relay *r, int cfd, int sfd)
{
    struct mr_dir *d = r->d;
    d[0].from = cfd, d[0].to = sfd;
    d[1].from = sfd, d[1].to = cfd;
    for (int i = 0; i < 2; i++) {
        d[i].to_lport = mr_port_of(d[i].to, false);
        d[i].to_rport = mr_port_of(d[i].to, true);
    }
    bool passed[2] = {false, false}; /* direction i's end was passed on to its destination */
    uint64_t end_ns[2] = {0, 0};
    for (;;) {
        struct pollfd p[5];
        for (int i = 0; i < 2; i++) {
            bool can_read = !d[i].eof && (d[i].held || d[i].tail < MR_BUF);
            p[i] = (struct pollfd){.fd = d[i].from, .events = can_read ? POLLIN : 0};
            p[2 + i] =
                (struct pollfd){.fd = d[i].to, .events = d[i].head < d[i].tail ? POLLOUT : 0};
        }
        p[4] = (struct pollfd){.fd = r->stop[0], .events = POLLIN};
        bool waiting = (d[0].eof && !passed[0]) || (d[1].eof && !passed[1]);
        (void)poll(p, 5, waiting ? 2 : 50);
        if (p[4].revents)
            return;
        for (int i = 0; i < 2; i++) {
            struct mr_dir *x = &d[i];
            if (!x->eof && (x->held || x->tail < MR_BUF)) {
                ssize_t n;
                if (x->held) {
                    n = recv(x->from, x->sink, sizeof x->sink, MSG_DONTWAIT);
                } else {
                    if (x->head == x->tail)
                        x->head = x->tail = 0;
                    n = recv(x->from, x->buf + x->tail, MR_BUF - x->tail, MSG_DONTWAIT);
                    if (n > 0)
                        x->tail +=
                            mr_walk(x, x->buf + x->tail, (size_t)n); /* past a cut: dropped */
                }
                if (x->cut_hit && !x->cut_done) {
                    pthread_mutex_lock(&r->lock);
                    x->cut_done = true;
                    pthread_cond_broadcast(&r->cond);
                    pthread_mutex_unlock(&r->lock);
                }
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                    x->eof = true;
                    x->reset = n < 0;
                    end_ns[i] = deadline_now_ns();
                }
            }
            if (x->head < x->tail) {
                ssize_t n =
                    send(x->to, x->buf + x->head, x->tail - x->head, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0) {
                    x->head += (size_t)n;
                    if (x->head == x->tail)
                        x->head = x->tail = 0;
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    /* the destination is gone (reset): what is left for it is lost, and its
                     * own direction has ended too */
                    x->head = x->tail = 0;
                    x->held = true;
                    struct mr_dir *y = &d[1 - i];
                    if (!y->eof) {
                        y->eof = true;
                        y->reset = true;
                        end_ns[1 - i] = deadline_now_ns();
                    }
                }
            }
        }
        for (int i = 0; i < 2; i++) {
            /* pass an end on once the destination has read all it was given (or 2 s on) */
            struct mr_dir *x = &d[i];
            if (!x->eof || passed[i])
                continue;
            bool flushed = x->head == x->tail;
            bool late = deadline_now_ns() - end_ns[i] > 2000000000u;
            if (flushed && !mr_peer_drained(x) && late && !x->late) {
                x->late = 2;
                (void)ioctl(x->to, SIOCOUTQ, &x->outq);
                struct probe_tcp t;
                if (probe_tcp_find(x->to_rport, x->to_lport, &t)) {
                    x->rxq = t.rx_queue;
                    x->interest = mr_epoll_interest(t.inode);
                }
            }
            if (flushed && (mr_peer_drained(x) || late)) {
                mr_end_toward(x->to, x->reset);
                passed[i] = true;
                if (x->reset)
                    return; /* a reset ends both directions */
            } else if (!flushed && late) {
                x->head = x->tail; /* the destination stopped reading: give up on the rest */
                x->late = 1;
            }
        }
        if (passed[0] && passed[1])
            return;
    }
}

static inline void *mr_main(void *arg)
{
    struct mpa_relay *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        while (!r->armed && !r->quit)
            pthread_cond_wait(&r->cond, &r->lock);
        if (r->quit) {
            pthread_mutex_unlock(&r->lock);
            return NULL;
        }
        r->armed = false;
        uint16_t dst = r->dst;
        pthread_mutex_unlock(&r->lock);

        struct pollfd p[2] = {{.fd = r->listen_fd, .events = POLLIN},
                              {.fd = r->stop[0], .events = POLLIN}};
        while (poll(p, 2, -1) <= 0 || !(p[0].revents || p[1].revents))
            ;
        if (p[1].revents)
            return NULL;
        int cfd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        ASSERT_TRUE(cfd >= 0);
        int sfd = mr_tcp_socket();
        struct sockaddr_in a;
        sp_loopback4(&a, dst);
        int one = 1;
        (void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        (void)setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(sfd, (struct sockaddr *)&a, sizeof a) == 0) {
            mr_serve(r, cfd, sfd);
        } else {
            struct linger lg = {.l_onoff = 1, .l_linger = 0};
            (void)setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        close(cfd);
        close(sfd);
        pthread_mutex_lock(&r->lock);
        r->markers_seen = r->d[0].stage == 3 || r->d[1].stage == 3;
        for (int i = 0; i < 2; i++) {
            r->late[i] = r->d[i].late;
            r->late_outq[i] = r->d[i].outq;
            r->late_rxq[i] = r->d[i].rxq;
            r->late_interest[i] = r->d[i].interest;
        }
        r->busy = false;
        r->conns++;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
    }
}

static inline void mr_start(struct mpa_relay *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->listen_fd = mr_tcp_socket();
    struct sockaddr_in a;
    sp_loopback4(&a, 0);
    ASSERT_EQ(bind(r->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(r->listen_fd, 4), 0);
    r->port = mr_port_of(r->listen_fd, false);
    ASSERT_EQ(pipe2(r->stop, O_CLOEXEC), 0);
    ASSERT_EQ(pthread_create(&r->thread, NULL, mr_main, r), 0);
}

static inline void mr_stop(struct mpa_relay *r)
{
    pthread_mutex_lock(&r->lock);
    r->quit = true;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    ASSERT_EQ(write(r->stop[1], "x", 1), 1);
    ASSERT_EQ(pthread_join(r->thread, NULL), 0);
    close(r->stop[0]);
    close(r->stop[1]);
    close(r->listen_fd);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
}

/* The next connection to r->port goes to 127.0.0.1:dst. The plan for each direction (cuts,
 * holds) is set on r->d[] here, before the connection exists: dir 0 is client to server. */
static inline void mr_arm(struct mpa_relay *r, uint16_t dst, const struct mr_dir plan[2])
{
    pthread_mutex_lock(&r->lock);
    ASSERT_FALSE(r->busy);
    for (int i = 0; i < 2; i++) {
        memset(&r->d[i], 0, sizeof r->d[i]);
        r->d[i].cut_armed = plan[i].cut_armed;
        r->d[i].match = plan[i].match;
        r->d[i].skip = plan[i].skip;
        r->d[i].at = plan[i].at;
        r->d[i].hold_after_mpa = plan[i].hold_after_mpa;
    }
    r->dst = dst;
    r->armed = true;
    r->busy = true;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

/* Whether the cut of direction dir has happened (within ms milliseconds). */
static inline bool mr_cut_wait(struct mpa_relay *r, int dir, unsigned ms)
{
    struct deadline dl = deadline_in_ms(ms);
    pthread_mutex_lock(&r->lock);
    while (!r->d[dir].cut_done && !deadline_passed(&dl)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 2000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&r->cond, &r->lock, &ts);
    }
    bool done = r->d[dir].cut_done;
    pthread_mutex_unlock(&r->lock);
    return done;
}

/* Wait until the relay's connection is over (both its sockets closed). */
static inline void mr_wait_closed(struct mpa_relay *r, unsigned ms)
{
    struct deadline dl = deadline_in_ms(ms);
    pthread_mutex_lock(&r->lock);
    while (r->busy) {
        if (deadline_passed(&dl)) {
            pthread_mutex_unlock(&r->lock);
            DEADLINE_FAIL(&dl, "the relay's connection to end");
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&r->cond, &r->lock, &ts);
    }
    pthread_mutex_unlock(&r->lock);
}

#endif
