/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A UDP relay between a DDP-over-SCTP client and server (RFC 6951 encapsulation), for tests that
 * must see what goes on the wire without looking inside the library: it forwards every datagram
 * unchanged and reads the SCTP packets it carries (RFC 4960 §3) to count associations and the
 * streams each one uses, duplicated DATA (retransmissions or duplicates), and it can black-hole
 * one or both directions. It also notes where a datagram came twice back to back (within
 * SR_DUP_NS: a sender's duplicate, not a retransmission, which waits for an RTO): the
 * positions of those in each direction's datagram sequence depend only on the sender's fault
 * decisions, which makes them a fingerprint of a seeded fault run.
 *
 * Addressing: the relay listens on 127.0.0.2 at the server's own UDP port. The SCTP port in
 * the client's packets is the UDP port it connected to (the server's listener port), so the
 * packets can go on unchanged (no checksum to redo): the server receives them from the relay's
 * second socket, the client its answers from 127.0.0.2.
 *
 * A cut (sctp_relay_cut_arm): after `skip` matching packets one way, the relay forwards the next
 * one and then black-holes both directions, so the receiver holds part of a DDP message for good:
 * SR_CUT_PARTIAL (a packet with a DDP segment that is not its message's last, RFC 5041 §4.2 L=0)
 * or SR_CUT_READ_RESP (the same, of an RDMA Read Response, RFC 5040 §4.5).
 *
 * One thread, started by sctp_relay_start and ended by sctp_relay_stop. Counters are read
 * under the relay's lock (sctp_relay_snapshot).
 */
#ifndef IWARP_TESTS_SCTP_RELAY_H
#define IWARP_TESTS_SCTP_RELAY_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include"
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "wire/wire_sctp.h"

#define SR_MAX_ASSOC   512u
#define SR_MAX_STREAMS 256u  /* streams tracked per association */
#define SR_TSN_RING    8192u /* recent DATA TSNs per direction, for duplicates */

/* Chunk types (RFC 4960 §3.2; I-DATA RFC 8260 §2.1). */
enum { SR_DATA = 0, SR_INIT = 1, SR_IDATA = 64 };

#define SR_MAX_HI  16u /* associations whose highest TSN is followed, per direction */
#define SR_DUP_LOG 16u /* back-to-back duplicate positions kept, per direction */
#define SR_DUP_NS  2000000u

/* What one direction of the relay has seen. */
struct sr_dir {
    uint64_t packets, dropped;
    uint64_t bad_crc; /* datagrams whose SCTP CRC32c is wrong (corrupted on purpose) */
    uint64_t data_chunks, dup_data; /* DATA chunks; those whose (vtag, TSN) came before */
    uint64_t late_data;             /* new TSNs below the highest seen: a gap filled later */
    uint64_t tsn_key[SR_TSN_RING];  /* vtag << 32 | TSN, a ring of recent ones */
    uint32_t tsn_at;
    struct sr_hi {
        uint32_t vtag, tsn;
    } hi[SR_MAX_HI];
    uint32_t nhi;
    uint64_t prev_hash, prev_ns; /* the previous datagram */
    size_t prev_len;
    uint32_t ndup_at;
    uint64_t dup_at[SR_DUP_LOG]; /* datagram numbers (from 1) of back-to-back repeats */
};

/* An association as the client-to-server direction shows it: the verification tag of its
 * packets (the server's Initiate Tag, RFC 4960 §8.5) and the streams its DATA used. */
struct sr_assoc {
    uint32_t vtag;
    uint32_t nstreams;
    uint8_t used[SR_MAX_STREAMS / 8u];
};

enum { SR_CUT_NONE, SR_CUT_PARTIAL, SR_CUT_READ_RESP };

struct sctp_relay {
    int cut_mode; /* SR_CUT_*: armed (under the lock) */
    bool cut_c2s, cut_done;
    uint32_t cut_skip;
    int front, back; /* client-facing (127.0.0.2:port), server-facing (connected) */
    int stop[2];
    pthread_t thread;
    pthread_mutex_t lock;
    struct sockaddr_in client, front_addr;
    bool have_client;
    bool drop_c2s, drop_s2c; /* black holes, set through sctp_relay_drop */
    uint32_t inits;          /* INIT chunks with a new Initiate Tag (association attempts) */
    uint32_t init_tags[SR_MAX_ASSOC];
    uint32_t nassoc;
    struct sr_assoc assoc[SR_MAX_ASSOC];
    struct sr_dir c2s, s2c;
    uint8_t buf[65536];
};

static inline uint32_t sr_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint16_t sr_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void sr_note_tsn(struct sr_dir *d, uint32_t vtag, uint32_t tsn)
{
    uint64_t key = (uint64_t)vtag << 32 | tsn;
    d->data_chunks++;
    for (uint32_t i = 0; i < SR_TSN_RING; i++)
        if (d->tsn_key[i] == key) {
            d->dup_data++;
            return;
        }
    d->tsn_key[d->tsn_at++ % SR_TSN_RING] = key;
    for (uint32_t i = 0; i < d->nhi; i++) {
        if (d->hi[i].vtag != vtag)
            continue;
        if ((int32_t)(tsn - d->hi[i].tsn) < 0) /* serial number arithmetic, RFC 1982 */
            d->late_data++;
        else
            d->hi[i].tsn = tsn;
        return;
    }
    if (d->nhi < SR_MAX_HI)
        d->hi[d->nhi++] = (struct sr_hi){vtag, tsn};
}

/* The association of client-to-server verification tag vtag (added when new). */
static inline struct sr_assoc *sr_assoc_of(struct sctp_relay *r, uint32_t vtag)
{
    for (uint32_t i = 0; i < r->nassoc; i++)
        if (r->assoc[i].vtag == vtag)
            return &r->assoc[i];
    if (r->nassoc == SR_MAX_ASSOC)
        return NULL;
    struct sr_assoc *a = &r->assoc[r->nassoc++];
    memset(a, 0, sizeof *a);
    a->vtag = vtag;
    return a;
}

/* Walk the chunks of one SCTP packet (RFC 4960 §3: a 12-octet common header, then chunks of
 * type, flags, length, padded to 4 octets). */
static inline void sr_inspect(struct sctp_relay *r, bool c2s, const uint8_t *p, size_t n)
{
    struct sr_dir *d = c2s ? &r->c2s : &r->s2c;
    if (n < 12)
        return;
    if (!iwarp_sctp_crc_ok(p, n)) {
        d->bad_crc++; /* the receiver discards it (RFC 9260 §6.8): its chunks never arrived */
        return;
    }
    uint32_t vtag = sr_be32(p + 4);
    size_t at = 12;
    while (at + 4 <= n) {
        uint8_t type = p[at];
        uint16_t len = sr_be16(p + at + 2);
        if (len < 4 || at + len > n)
            return;
        if (type == SR_INIT && c2s && len >= 8) {
            uint32_t tag = sr_be32(p + at + 4);
            bool seen = false;
            for (uint32_t i = 0; i < r->inits && i < SR_MAX_ASSOC; i++)
                seen = seen || r->init_tags[i] == tag;
            if (!seen && r->inits < SR_MAX_ASSOC)
                r->init_tags[r->inits++] = tag;
        } else if ((type == SR_DATA && len >= 16) || (type == SR_IDATA && len >= 20)) {
            sr_note_tsn(d, vtag, sr_be32(p + at + 4));
            uint16_t sid = sr_be16(p + at + 8);
            struct sr_assoc *a = c2s ? sr_assoc_of(r, vtag) : NULL;
            if (a && sid < SR_MAX_STREAMS && !(a->used[sid / 8u] & (1u << (sid % 8u)))) {
                a->used[sid / 8u] |= (uint8_t)(1u << (sid % 8u));
                a->nstreams++;
            }
        }
        at += ((size_t)len + 3u) & ~(size_t)3u;
    }
}

/* Whether an SCTP packet carries a DDP segment chunk (PPID 16, RFC 5043 §5.2.2: DDP-SSN, then the
 * segment) the cut mode looks for. */
static inline bool sr_cut_match(int mode, const uint8_t *p, size_t n)
{
    size_t at = 12;
    while (at + 4 <= n) {
        uint8_t type = p[at];
        uint16_t len = sr_be16(p + at + 2);
        if (len < 4 || at + len > n)
            return false;
        if (type == SR_DATA && len >= 20 && sr_be32(p + at + 12) == 16u) {
            uint8_t ddp = p[at + 18], rdmap = p[at + 19];
            bool last = ddp & 0x40u, tagged = ddp & 0x80u;
            if (!last && (mode == SR_CUT_PARTIAL || (tagged && (rdmap & 0x0Fu) == 0x2u)))
                return true;
        }
        at += ((size_t)len + 3u) & ~(size_t)3u;
    }
    return false;
}

static inline uint64_t sr_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Datagram number d->packets of a direction: a repeat of the one before it, just now? */
static inline void sr_note_repeat(struct sr_dir *d, const uint8_t *p, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t h = sr_hash(p, n);
    if (d->packets > 1 && h == d->prev_hash && n == d->prev_len && now - d->prev_ns < SR_DUP_NS &&
        d->ndup_at < SR_DUP_LOG)
        d->dup_at[d->ndup_at++] = d->packets;
    d->prev_hash = h;
    d->prev_len = n;
    d->prev_ns = now;
}

static inline void *sr_main(void *arg)
{
    struct sctp_relay *r = arg;
    for (;;) {
        struct pollfd p[3] = {{.fd = r->front, .events = POLLIN},
                              {.fd = r->back, .events = POLLIN},
                              {.fd = r->stop[0], .events = POLLIN}};
        if (poll(p, 3, -1) < 0)
            continue;
        if (p[2].revents)
            return NULL;
        for (int i = 0; i < 2; i++) {
            if (!p[i].revents)
                continue;
            for (;;) {
                struct sockaddr_in from;
                socklen_t fl = sizeof from;
                ssize_t n = recvfrom(p[i].fd, r->buf, sizeof r->buf, MSG_DONTWAIT,
                                     (struct sockaddr *)&from, &fl);
                if (n < 0)
                    break; /* EAGAIN, or an ICMP error of an earlier datagram */
                bool c2s = i == 0;
                pthread_mutex_lock(&r->lock);
                struct sr_dir *d = c2s ? &r->c2s : &r->s2c;
                d->packets++;
                bool drop = c2s ? r->drop_c2s : r->drop_s2c;
                if (c2s) {
                    r->client = from;
                    r->have_client = true;
                }
                sr_note_repeat(d, r->buf, (size_t)n);
                if (drop)
                    d->dropped++;
                else
                    sr_inspect(r, c2s, r->buf, (size_t)n);
                if (!drop && r->cut_mode && r->cut_c2s == c2s &&
                    sr_cut_match(r->cut_mode, r->buf, (size_t)n)) {
                    if (r->cut_skip)
                        r->cut_skip--;
                    else {
                        /* this one goes; nothing after it, either way */
                        r->cut_mode = SR_CUT_NONE;
                        r->cut_done = true;
                        r->drop_c2s = r->drop_s2c = true;
                    }
                }
                struct sockaddr_in to = r->client;
                bool can = !drop && (c2s || r->have_client);
                pthread_mutex_unlock(&r->lock);
                if (!can)
                    continue;
                if (c2s)
                    (void)send(r->back, r->buf, (size_t)n, 0);
                else
                    (void)sendto(r->front, r->buf, (size_t)n, 0, (struct sockaddr *)&to, sizeof to);
            }
        }
    }
}

static inline int sr_socket(const struct sockaddr_in *bind_to)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_TRUE(fd >= 0);
    int sz = 4 << 20; /* a burst of many associations' packets must not overflow it */
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    ASSERT_EQ(bind(fd, (const struct sockaddr *)bind_to, sizeof *bind_to), 0);
    return fd;
}

/* Start a relay for the server listening on 127.0.0.1:server_port. Clients connect to
 * r->front_addr. */
static inline void sctp_relay_start(struct sctp_relay *r, uint16_t server_port)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(server_port)};
    a.sin_addr.s_addr = htonl(0x7F000002u); /* 127.0.0.2 */
    r->front = sr_socket(&a);
    r->front_addr = a;
    struct sockaddr_in b = {.sin_family = AF_INET};
    b.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    r->back = sr_socket(&b);
    b.sin_port = htons(server_port);
    ASSERT_EQ(connect(r->back, (struct sockaddr *)&b, sizeof b), 0);
    ASSERT_EQ(pipe(r->stop), 0);
    ASSERT_EQ(pthread_create(&r->thread, NULL, sr_main, r), 0);
}

static inline void sctp_relay_stop(struct sctp_relay *r)
{
    ASSERT_EQ(write(r->stop[1], "x", 1), 1);
    ASSERT_EQ(pthread_join(r->thread, NULL), 0);
    close(r->stop[0]);
    close(r->stop[1]);
    close(r->front);
    close(r->back);
    pthread_mutex_destroy(&r->lock);
}

/* Black-hole client-to-server and/or server-to-client datagrams from now on. */
static inline void sctp_relay_drop(struct sctp_relay *r, bool c2s, bool s2c)
{
    pthread_mutex_lock(&r->lock);
    r->drop_c2s = c2s;
    r->drop_s2c = s2c;
    pthread_mutex_unlock(&r->lock);
}

/* Arm a cut (SR_CUT_*) of the client-to-server (c2s) or server-to-client direction after skip
 * matching packets. */
static inline void sctp_relay_cut_arm(struct sctp_relay *r, int mode, bool c2s, uint32_t skip)
{
    pthread_mutex_lock(&r->lock);
    r->cut_mode = mode;
    r->cut_c2s = c2s;
    r->cut_skip = skip;
    r->cut_done = false;
    pthread_mutex_unlock(&r->lock);
}

static inline bool sctp_relay_cut_done(struct sctp_relay *r)
{
    pthread_mutex_lock(&r->lock);
    bool done = r->cut_done;
    pthread_mutex_unlock(&r->lock);
    return done;
}

/* A consistent copy of the counters (out must not be r). */
static inline void sctp_relay_snapshot(struct sctp_relay *r, uint32_t *inits, uint32_t *nassoc,
                                       struct sr_assoc *assoc, struct sr_dir *c2s,
                                       struct sr_dir *s2c)
{
    pthread_mutex_lock(&r->lock);
    if (inits)
        *inits = r->inits;
    if (nassoc)
        *nassoc = r->nassoc;
    if (assoc)
        memcpy(assoc, r->assoc, r->nassoc * sizeof *assoc);
    if (c2s)
        *c2s = r->c2s;
    if (s2c)
        *s2c = r->s2c;
    pthread_mutex_unlock(&r->lock);
}

#endif
