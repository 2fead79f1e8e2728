/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SCTP back-end: usrsctp (no-threads, AF_CONN) over our own UDP sockets. See llp_sctp.h for
 * the model (one stack, one usrsctp lock, owners, receive callback) and docs/design.md
 * §9 ("DDP over SCTP") for the usrsctp behaviour this relies on.
 *
 * Object lifetimes. usrsctp calls back with the socket's ulp_info: an endpoint never, a
 * listener (for sockets it created that are not accepted yet: they inherit its ulp_info) or an
 * association; both start with a kind tag. Before we close a socket its ulp_info is set to
 * NULL, so a late callback finds nothing. usrsctp hands our output function the registered
 * AF_CONN address of the destination; that "address" is a generation-checked handle into a
 * table of paths, not a pointer, so a packet usrsctp still sends for a path we have freed is
 * dropped instead of touching freed memory.
 *
 * Re-entrancy. Callbacks from usrsctp only record what happened (and deliver data); the rest
 * (accepting, the RFC 5043 checks after COMM_UP, on_up/on_down/on_writable, closing sockets)
 * runs in post_process() when the outermost entry point returns, outside usrsctp but still
 * under the usrsctp lock. An association of another owner than the call's is not settled
 * there: it goes on its owner's deferred list (defer()) and the owner's wake fd is written;
 * owner_collect() settles it in that owner's call. Data that arrives for it meanwhile waits in
 * its `early` queue, as data bundled with the handshake does.
 */
#define _GNU_SOURCE 1
#include "llp/llp_sctp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <usrsctp.h>

#include "iwarp/errors.h"
#include "util/bytes.h"
#include "util/copy.h"
#include "util/critpath.h"
#include "wire/wire_sctp.h"
#ifdef IWARP_CRITPATH
#include "trace/trace_sctp_pkt.h" /* its chunk walk */
#endif

enum { KIND_LISTENER = 0x4c53, KIND_ASSOC = 0x4153 };

enum {
    ST_CONNECTING = 0, /* INIT sent / not accepted yet */
    ST_UP_PENDING = 1, /* COMM_UP seen, RFC 5043 checks not run yet */
    ST_UP = 2,
    ST_DOWN = 3,
};

#define RXBUF_LEN          65536u
#define RX_SLOTS           2u      /* datagrams per recvmmsg (RXBUF_LEN each) */
#define RX_BATCH           256     /* datagrams per on_readable call */
#define RX_MSG_MAX         262144u /* a message reassembled from pieces, at most */
#define MAX_PATHS_PER_EP   4096u
#define SLOT_BITS          24
#define FINISH_TRIES       300 /* usrsctp_finish attempts, 10 virtual ms apart */
#define DEFAULT_UDP_RCVBUF (4u << 20)

struct path {
    struct iwarp_llp_sctp_ep *ep;
    struct sockaddr_storage peer;
    socklen_t peerlen;
    uint32_t slot, gen;
    void *handle; /* the registered AF_CONN address */
    struct path *next;
};

struct early { /* a message that came before on_up could be reported */
    struct early *next;
    void *buf;
    size_t len;
    uint16_t sid;
    uint32_t ppid;
    bool unordered;
};

/* A message usrsctp delivered in pieces, put together in a buffer of its owner's allocator:
 * unlike usrsctp's own buffers it must go back to that allocator, so while the owner holds it
 * it is in G.bigs, where iwarp_llp_sctp_chunk_free() tells the two kinds apart. */
struct big {
    struct big *prev, *next; /* G.bigs once handed out */
    struct iwarp_llp_sctp_owner *owner;
    size_t cap;
    max_align_t data[]; /* cap octets */
};

struct delayed { /* a fault-delayed outgoing packet */
    struct delayed *next;
    struct path *path;
    uint64_t due;
    size_t len;
    uint8_t data[];
};

struct iwarp_llp_sctp_assoc {
    uint32_t kind;
    struct iwarp_llp_sctp_ep *ep;
    struct socket *so;                       /* NULL once the socket is closed */
    struct iwarp_llp_sctp_listener *lsn;     /* set while not accepted yet */
    struct iwarp_llp_sctp_listener *acc_lsn; /* passive: the listener it came from */
    const struct iwarp_llp_sctp_ops *ops;
    void *user;
    uint8_t state;
    bool handed;       /* the owner knows it (connect, or accept_fn called) */
    bool owner_closed; /* iwarp_llp_sctp_close called: no more callbacks */
    bool graceful;     /* ... without abortive */
    bool shut_sent;
    bool down_noted;
    bool tx_blocked, writable_pending;
    bool adapt_seen;
    bool dirty;
    bool deferred;     /* on its owner's list: noted in another owner's call */
    bool test_ordered; /* test hook: send with U=0 (iwarp_llp_sctp_test_set_ordered) */
    int down_err;
    uint32_t adapt_ind;
    uint16_t in, out;
    uint32_t max_seg, max_msg;
    uint8_t *txbuf;
    struct big *part; /* a message arriving in pieces */
    size_t part_len;
    struct early *early, **early_tail;
    struct iwarp_llp_sctp_assoc *next, **pprev; /* ep->assocs or lsn->pending */
    struct iwarp_llp_sctp_assoc *dnext;         /* dirty list */
    struct iwarp_llp_sctp_assoc *fnext;         /* its owner's deferred list */
};

struct iwarp_llp_sctp_listener {
    uint32_t kind;
    struct iwarp_llp_sctp_ep *ep;
    struct socket *so;
    uint16_t port;
    bool dirty, closing;
    iwarp_llp_sctp_accept_fn accept_fn;
    void *user;
    struct iwarp_llp_sctp_assoc *pending; /* created by the stack, not accepted yet */
    struct iwarp_llp_sctp_listener *next;
};

struct iwarp_llp_sctp_ep {
    struct iwarp_llp_sctp_owner *owner;
    uint32_t test_msg_max; /* cfg's */
    int fd;
    struct sockaddr_storage local;
    socklen_t locallen;
    uint16_t nstreams, max_in;
    uint32_t pmtu; /* AF_CONN path MTU: the SCTP packet, without IP and UDP headers */
    uint32_t headroom, sndbuf, rcvbuf;
    bool no_adaptation;
    uint32_t adaptation_ind;
    struct iwarp_llp_sctp_fault fault;
    uint64_t rng;
    iwarp_llp_sctp_capture_fn capture;
    void *capture_user;
    struct path *paths, *last_path;
    uint32_t npaths;
    struct iwarp_llp_sctp_listener *listeners;
    struct iwarp_llp_sctp_assoc *assocs;
    struct delayed *dq, **dq_tail;
    uint8_t *rxbuf;
    struct iwarp_llp_sctp_stats st;
    struct iwarp_llp_sctp_ep *next;
};

/* An owner: whose calls run the callbacks of its endpoints' associations. */
struct iwarp_llp_sctp_owner {
    struct iwarp_llp_sctp_alloc alloc;     /* every allocation made for it */
    int wake_fd;                           /* eventfd: events were noted for it */
    bool woken;                            /* ... and it has not collected them yet */
    struct iwarp_llp_sctp_assoc *deferred; /* those associations (their fnext) */
};

/*
 * The usrsctp lock: one process-wide mutex around every call into this file, and so around
 * everything usrsctp does (its stack, timer wheel and callbacks are process-wide). A call
 * takes it unless its thread holds it already (a callback calling back in: `held`); `holder`
 * is the owner whose call it is, and only that owner's callbacks run in it (post_process
 * defers the others'). Lock order: an owner's own lock, then this one (llp_sctp.h).
 */
static pthread_mutex_t sctp_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread unsigned held;
static __thread struct iwarp_llp_sctp_owner *holder;

static void lock_enter(struct iwarp_llp_sctp_owner *o)
{
    if (held++ == 0) {
        pthread_mutex_lock(&sctp_lock);
        holder = o;
    }
}

static void lock_leave(void)
{
    if (--held == 0) {
        holder = NULL;
        pthread_mutex_unlock(&sctp_lock);
    }
}

/* Process-wide state, under sctp_lock. */
static struct {
    unsigned n_ep;
    bool stack_up;
    uint32_t rto_min, rto_init, rto_max;
    uint32_t hb_ms; /* heartbeat interval (test hook; 0: usrsctp's) */

    struct iwarp_llp_sctp_ep *eps;
    uint64_t now_ns, timer_last;
    bool timer_started;
    uint32_t tick_ms;
    unsigned depth;
    struct iwarp_llp_sctp_assoc *dirty;
    bool lsn_dirty;
    struct path **slots; /* slot 0 unused; libc's (iwarp/verbs.h: it outlives its owners) */
    uint32_t nslots;
    struct big *bigs; /* put-together messages the owners hold */
} G;

/* The deadline iwarp_llp_sctp_timers() last returned, read without the lock: before it no tick
 * is due for usrsctp and no fault-delayed packet is due, so a call before it has nothing to do
 * and answers at once (the busy-poll path calls it after every read and post). 0 makes the next
 * call take the lock: an endpoint opened or closed, a packet delayed. */
static _Atomic uint64_t timers_next;

/* How many entries G.bigs has: read without the lock by iwarp_llp_sctp_chunk_free(), which
 * needs the lock only when there are some (a buffer an owner frees was counted before the
 * owner got it). */
static atomic_size_t nbig;

/* ---- memory: the owner's allocator, and the few buffers that are libc's -------------------- */

static void *libc_calloc(void *user, size_t n, size_t size)
{
    (void)user;
    return calloc(n, size); /* libc: an owner that gave no allocator */
}

static void libc_free(void *user, void *ptr)
{
    (void)user;
    free(ptr); /* libc: an owner that gave no allocator */
}

static void *o_alloc(const struct iwarp_llp_sctp_owner *o, size_t size)
{
    return o->alloc.calloc_fn(o->alloc.user, 1, size ? size : 1);
}

static void o_free(const struct iwarp_llp_sctp_owner *o, void *ptr)
{
    if (ptr)
        o->alloc.free_fn(o->alloc.user, ptr);
}

/* A buffer usrsctp allocated and handed to us (a message, a notification): libc's free, as its
 * receive callback contract says (iwarp/verbs.h: not the owner's allocator). */
static void usrsctp_buf_free(void *buf)
{
    free(buf); /* libc: usrsctp malloc'ed it */
}

/* A part-built message (not handed out) of capacity >= need, holding the first len octets of
 * b (b is freed; NULL: a new one). NULL when out of memory (b is left as it was). */
static struct big *big_grow(struct iwarp_llp_sctp_owner *o, struct big *b, size_t len, size_t need)
{
    if (b && b->cap >= need)
        return b;
    size_t cap = b && 2 * b->cap > need ? 2 * b->cap : need;
    struct big *n = o_alloc(o, offsetof(struct big, data) + cap);
    if (!n)
        return NULL;
    n->owner = o;
    n->cap = cap;
    if (b) {
        iwarp_copy(n->data, b->data, len);
        o_free(o, b);
    }
    return n;
}

/* A put-together message goes to its owner: its octets, registered for chunk_free. */
static void *big_hand_out(struct big *b)
{
    b->prev = NULL;
    b->next = G.bigs;
    if (G.bigs)
        G.bigs->prev = b;
    G.bigs = b;
    atomic_fetch_add(&nbig, 1);
    return b->data;
}

/* Give back a received message (sctp_lock held): a put-together one to its owner's allocator,
 * one of usrsctp's with libc's free. */
static void msg_free(void *buf)
{
    if (atomic_load(&nbig) != 0) {
        for (struct big *b = G.bigs; b; b = b->next) {
            if ((void *)b->data != buf)
                continue;
            if (b->prev)
                b->prev->next = b->next;
            else
                G.bigs = b->next;
            if (b->next)
                b->next->prev = b->prev;
            atomic_fetch_sub(&nbig, 1);
            o_free(b->owner, b);
            return;
        }
    }
    usrsctp_buf_free(buf);
}

/* ---- paths: registered AF_CONN addresses behind generation-checked handles -------------- */

static struct path *path_from_handle(void *handle)
{
    uintptr_t h = (uintptr_t)handle;
    uint32_t slot = (uint32_t)(h & ((1u << SLOT_BITS) - 1));
    uint32_t gen = (uint32_t)(h >> SLOT_BITS);
    if (slot == 0 || slot >= G.nslots || !G.slots[slot] || G.slots[slot]->gen != gen)
        return NULL;
    return G.slots[slot];
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr *b)
{
    if (a->ss_family != b->sa_family)
        return false;
    if (b->sa_family == AF_INET) {
        const struct sockaddr_in *x = (const struct sockaddr_in *)a;
        const struct sockaddr_in *y = (const struct sockaddr_in *)(const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a;
    const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)(const void *)b;
    return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16) &&
           x->sin6_scope_id == y->sin6_scope_id;
}

static socklen_t addr_len(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return sizeof(struct sockaddr_in);
    if (sa->sa_family == AF_INET6)
        return sizeof(struct sockaddr_in6);
    return 0;
}

static uint16_t addr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* The path of ep to peer; created (and registered with usrsctp) when create is set. */
static struct path *path_get(struct iwarp_llp_sctp_ep *ep, const struct sockaddr *peer, bool create)
{
    if (ep->last_path && same_addr(&ep->last_path->peer, peer))
        return ep->last_path;
    for (struct path *p = ep->paths; p; p = p->next)
        if (same_addr(&p->peer, peer))
            return ep->last_path = p;
    socklen_t len = addr_len(peer);
    if (!create || len == 0 || peer->sa_family != ep->local.ss_family ||
        ep->npaths >= MAX_PATHS_PER_EP)
        return NULL;
    uint32_t slot = 1;
    while (slot < G.nslots && G.slots[slot])
        slot++;
    if (slot >= G.nslots) {
        uint32_t n = G.nslots ? G.nslots * 2 : 16;
        if (n > (1u << SLOT_BITS))
            return NULL;
        struct path **s = realloc(G.slots, n * sizeof *s); /* libc: process-wide */
        if (!s)
            return NULL;
        memset(s + G.nslots, 0, (n - G.nslots) * sizeof *s);
        if (G.nslots == 0)
            slot = 1;
        G.slots = s;
        G.nslots = n;
    }
    struct path *p = o_alloc(ep->owner, sizeof *p);
    if (!p)
        return NULL;
    static uint32_t gen_counter;
    p->ep = ep;
    memcpy(&p->peer, peer, len);
    p->peerlen = len;
    p->slot = slot;
    /* a handle is never 0 and never reused for another path (the generation differs) */
    p->gen = (++gen_counter) & (uint32_t)(UINTPTR_MAX >> SLOT_BITS);
    p->handle = (void *)(((uintptr_t)p->gen << SLOT_BITS) | slot);
    G.slots[slot] = p;
    usrsctp_register_address(p->handle);
    p->next = ep->paths;
    ep->paths = p;
    ep->npaths++;
    return ep->last_path = p;
}

static void path_free(struct path *p)
{
    /* before usrsctp_finish (after it usrsctp crashes: usrsctp.md) */
    usrsctp_deregister_address(p->handle);
    G.slots[p->slot] = NULL;
    o_free(p->ep->owner, p);
}

/* ---- output: usrsctp -> UDP, with fault injection and capture ------------------------------ */

static uint64_t rng_next(struct iwarp_llp_sctp_ep *ep)
{
    /* splitmix64: reproducible per endpoint from its seed */
    uint64_t z = (ep->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool roll(struct iwarp_llp_sctp_ep *ep, uint32_t ppm)
{
    return ppm && rng_next(ep) % 1000000u < ppm;
}

static void udp_send(struct path *p, const void *buf, size_t len)
{
    struct iwarp_llp_sctp_ep *ep = p->ep;
    ssize_t n = sendto(ep->fd, buf, len, 0, (const struct sockaddr *)&p->peer, p->peerlen);
    if (n != (ssize_t)len) {
        ep->st.udp_errors++; /* the packet is lost; SCTP retransmits */
        return;
    }
    ep->st.pkts_out++;
    ep->st.bytes_out += len;
    if (ep->capture)
        ep->capture(ep->capture_user, IWARP_LLP_SCTP_PKT_OUT, (const struct sockaddr *)&ep->local,
                    (const struct sockaddr *)&p->peer, buf, len, G.now_ns);
}

#ifdef IWARP_CRITPATH
/* scripts/critpath-sctp.sh: a packet with a DATA (or I-DATA) chunk ends the path a read began;
 * a lone SACK sent on the way does not. */
static bool critpath_carries_data(const uint8_t *p, size_t len)
{
    struct iwarp_sctp_chunk_iter it;
    struct iwarp_sctp_chunk c;
    iwarp_sctp_chunks_init(&it, p + IWARP_SCTP_COMMON_HDR_LEN, len - IWARP_SCTP_COMMON_HDR_LEN);
    while (iwarp_sctp_chunk_next(&it, &c) == 1)
        if (c.type == IWARP_SCTP_CHUNK_DATA || c.type == IWARP_SCTP_CHUNK_I_DATA)
            return true;
    return false;
}
#endif

static int conn_output(void *addr, void *buf, size_t len, uint8_t tos, uint8_t set_df)
{
    (void)tos;
    (void)set_df;
    struct path *p = path_from_handle(addr);
    if (!p)
        return 0; /* a path we have let go of: drop */
    struct iwarp_llp_sctp_ep *ep = p->ep;
    if (len < IWARP_SCTP_COMMON_HDR_LEN)
        return 0; /* never from usrsctp: every packet has its common header */
    /* usrsctp runs with its CRC32c "offloaded" (usrsctp_enable_crc32c_offload at init): it
     * leaves the field zero here and checks nothing on input, and we do both with ISA-L
     * (util/crc32c), an order of magnitude faster than usrsctp's table walk */
    iwarp_store_le32((uint8_t *)buf + IWARP_SCTP_CHECKSUM_OFF, iwarp_sctp_packet_crc32c(buf, len));
#ifdef IWARP_CRITPATH
    if (critpath_carries_data(buf, len))
        iwarp_critpath_end();
#endif
    if (ep->fault.seed) {
        if (roll(ep, ep->fault.drop_ppm)) {
            ep->st.fault_dropped++;
            return 0;
        }
        if (roll(ep, ep->fault.dup_ppm)) {
            ep->st.fault_duplicated++;
            udp_send(p, buf, len);
        } else if (roll(ep, ep->fault.delay_ppm)) {
            /* libc: usrsctp sends in any owner's call, and an owner's allocator is only
             * called in its own calls (a test hook's copy) */
            struct delayed *d = malloc(sizeof *d + len); /* libc: see above */
            if (d) {
                ep->st.fault_delayed++;
                d->next = NULL;
                d->path = p;
                d->due = G.now_ns + (uint64_t)ep->fault.delay_ms * 1000000u;
                d->len = len;
                memcpy(d->data, buf, len);
                *ep->dq_tail = d;
                ep->dq_tail = &d->next;
                atomic_store(&timers_next, 0); /* due before the deadline last returned */
                return 0;
            }
        } else if (roll(ep, ep->fault.corrupt_ppm)) {
            ep->st.fault_corrupted++;
            uint64_t bit = rng_next(ep) % (len * 8u);
            ((uint8_t *)buf)[bit / 8u] ^= (uint8_t)(1u << (bit % 8u));
        }
    }
    udp_send(p, buf, len);
    return 0;
}

static void flush_delayed(struct iwarp_llp_sctp_ep *ep, uint64_t now, bool all)
{
    struct delayed *d;
    while ((d = ep->dq) && (all || d->due <= now)) {
        ep->dq = d->next;
        if (!ep->dq)
            ep->dq_tail = &ep->dq;
        if (!all)
            udp_send(d->path, d->data, d->len);
        free(d); /* libc: fault injection's copy (conn_output) */
    }
}

/* ---- stack init / finish ------------------------------------------------------------------ */

static void apply_sysctls(void)
{
    /* usrsctp_init resets every sysctl: set ours after it (usrsctp.md) */
    G.tick_ms = 10;
    if (G.rto_min) {
        usrsctp_sysctl_set_sctp_rto_min_default(G.rto_min);
        usrsctp_sysctl_set_sctp_rto_initial_default(G.rto_init ? G.rto_init : G.rto_min);
        usrsctp_sysctl_set_sctp_rto_max_default(G.rto_max ? G.rto_max : G.rto_min * 4);
        usrsctp_sysctl_set_sctp_init_rto_max_default(G.rto_max ? G.rto_max : G.rto_min * 4);
        /* a delayed SACK longer than the RTO would make every lone packet "lost" */
        uint32_t ds = G.rto_min / 2;
        usrsctp_sysctl_set_sctp_delayed_sack_time_default(ds < 1 ? 1 : ds > 200 ? 200 : ds);
        uint32_t tick = G.rto_min / 4;
        G.tick_ms = tick < 1 ? 1 : tick > 10 ? 10 : tick;
    }
    usrsctp_sysctl_set_sctp_heartbeat_interval_default(G.hb_ms ? G.hb_ms : 30000);
}

void iwarp_llp_sctp_set_test_timers(uint32_t rto_min_ms, uint32_t rto_initial_ms,
                                    uint32_t rto_max_ms)
{
    lock_enter(NULL);
    G.rto_min = rto_min_ms;
    G.rto_init = rto_initial_ms;
    G.rto_max = rto_max_ms;
    if (G.stack_up) {
        if (!rto_min_ms) {
            usrsctp_sysctl_set_sctp_rto_min_default(1000);
            usrsctp_sysctl_set_sctp_rto_initial_default(3000);
            usrsctp_sysctl_set_sctp_rto_max_default(60000);
            usrsctp_sysctl_set_sctp_init_rto_max_default(60000);
            usrsctp_sysctl_set_sctp_delayed_sack_time_default(200);
        }
        apply_sysctls();
    }
    lock_leave();
}

void iwarp_llp_sctp_set_test_heartbeat(uint32_t hb_ms)
{
    lock_enter(NULL);
    G.hb_ms = hb_ms;
    if (G.stack_up)
        apply_sysctls();
    lock_leave();
}

bool iwarp_llp_sctp_stack_active(void)
{
    lock_enter(NULL);
    bool up = G.stack_up;
    lock_leave();
    return up;
}

/* sctp_lock held. */
static void stack_release_locked(void)
{
    if (--G.n_ep > 0)
        return;
    G.timer_started = false;
    if (G.stack_up) {
        /* finish() is -1 while any socket lingers; advance virtual time so deferred frees run,
         * with a bound: a stack that will not finish stays up for the next user (usrsctp.md) */
        for (int i = 0; i < FINISH_TRIES; i++) {
            if (usrsctp_finish() == 0) {
                G.stack_up = false;
                break;
            }
            usrsctp_handle_timers(10);
        }
    }
    free(G.slots); /* libc: process-wide */
    G.slots = NULL;
    G.nslots = 0;
}

/* ---- association helpers ------------------------------------------------------------------ */

static void mark_dirty(struct iwarp_llp_sctp_assoc *a)
{
    if (!a->dirty) {
        a->dirty = true;
        a->dnext = G.dirty;
        G.dirty = a;
    }
}

static void list_add(struct iwarp_llp_sctp_assoc **head, struct iwarp_llp_sctp_assoc *a)
{
    a->next = *head;
    if (a->next)
        a->next->pprev = &a->next;
    a->pprev = head;
    *head = a;
}

static void list_del(struct iwarp_llp_sctp_assoc *a)
{
    if (a->pprev) {
        *a->pprev = a->next;
        if (a->next)
            a->next->pprev = a->pprev;
    }
    a->next = NULL;
    a->pprev = NULL;
}

static void note_down(struct iwarp_llp_sctp_assoc *a, int err)
{
    if (!a->down_noted) {
        a->down_noted = true;
        a->down_err = err;
    }
    mark_dirty(a);
}

/* Close the usrsctp socket now (ABORT if the association still exists). */
static void kill_socket(struct iwarp_llp_sctp_assoc *a)
{
    if (!a->so)
        return;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    (void)usrsctp_setsockopt(a->so, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    (void)usrsctp_set_ulpinfo(a->so, NULL);
    usrsctp_close(a->so);
    a->so = NULL;
}

static void assoc_free(struct iwarp_llp_sctp_assoc *a)
{
    list_del(a);
    if (a->dirty) /* rare: freed while queued for post_process */
        for (struct iwarp_llp_sctp_assoc **pp = &G.dirty; *pp; pp = &(*pp)->dnext)
            if (*pp == a) {
                *pp = a->dnext;
                break;
            }
    if (a->deferred) /* ... or for its owner's collect */
        for (struct iwarp_llp_sctp_assoc **pp = &a->ep->owner->deferred; *pp; pp = &(*pp)->fnext)
            if (*pp == a) {
                *pp = a->fnext;
                break;
            }
    const struct iwarp_llp_sctp_owner *o = a->ep->owner;
    for (struct early *e = a->early, *n; e; e = n) {
        n = e->next;
        msg_free(e->buf);
        o_free(o, e);
    }
    o_free(o, a->part);
    o_free(o, a->txbuf);
    o_free(o, a);
}

static struct iwarp_llp_sctp_assoc *assoc_new(struct iwarp_llp_sctp_ep *ep)
{
    struct iwarp_llp_sctp_assoc *a = o_alloc(ep->owner, sizeof *a);
    if (a) {
        a->kind = KIND_ASSOC;
        a->ep = ep;
        a->early_tail = &a->early;
    }
    return a;
}

static bool may_call(const struct iwarp_llp_sctp_assoc *a)
{
    return a->handed && !a->owner_closed && a->ops;
}

/* ---- input: usrsctp callbacks --------------------------------------------------------------- */

/* A message to the owner now (its call: holder), or freed when nobody takes it any more. */
static void hand_over(struct iwarp_llp_sctp_assoc *a, uint16_t sid, uint32_t ppid, bool unordered,
                      void *buf, size_t len)
{
    if (a->state == ST_UP && !a->down_noted && may_call(a) && a->ops->on_chunk) {
        a->ops->on_chunk(a->user, sid, ppid, unordered, buf, len);
        return;
    }
    msg_free(buf);
}

static void deliver(struct iwarp_llp_sctp_assoc *a, uint16_t sid, uint32_t ppid, bool unordered,
                    void *buf, size_t len)
{
    if (a->state == ST_UP && !a->down_noted && !a->early && a->ep->owner == holder) {
        hand_over(a, sid, ppid, unordered, buf, len);
        return;
    }
    if (a->state <= ST_UP && !a->down_noted) {
        /* before on_up could be reported (bundled with the handshake), behind such messages,
         * or in another owner's call: queued in order, handed over by settle() */
        struct early *e = o_alloc(a->ep->owner, sizeof *e);
        if (e) {
            *e = (struct early){NULL, buf, len, sid, ppid, unordered};
            *a->early_tail = e;
            a->early_tail = &e->next;
            if (a->state == ST_UP)
                mark_dirty(a);
            return;
        }
    }
    msg_free(buf);
}

static void on_data(struct iwarp_llp_sctp_assoc *a, void *data, size_t len,
                    const struct sctp_rcvinfo *rcv, int flags)
{
    uint16_t sid = rcv->rcv_sid;
    uint32_t ppid = ntohl(rcv->rcv_ppid); /* network order in rcvinfo (usrsctp.md) */
    bool unordered = (rcv->rcv_flags & SCTP_UNORDERED) != 0;
    if (!(flags & MSG_EOR) || a->part) {
        /* above the partial delivery point a message comes in pieces: put it together */
        struct iwarp_llp_sctp_owner *o = a->ep->owner;
        if (a->part_len + len > RX_MSG_MAX) {
            usrsctp_buf_free(data);
            o_free(o, a->part);
            a->part = NULL;
            a->part_len = 0;
            note_down(a, IWARP_ERR_SCTP_MSGSIZE);
            return;
        }
        struct big *b = big_grow(o, a->part, a->part_len, a->part_len + len);
        if (!b) {
            usrsctp_buf_free(data);
            note_down(a, IWARP_ERR_NOMEM);
            return;
        }
        iwarp_copy((uint8_t *)b->data + a->part_len, data, len);
        usrsctp_buf_free(data);
        a->part = b;
        a->part_len += len;
        if (!(flags & MSG_EOR))
            return;
        data = big_hand_out(a->part);
        len = a->part_len;
        a->part = NULL;
        a->part_len = 0;
        a->ep->st.rx_reassembled++;
    }
    deliver(a, sid, ppid, unordered, data, len);
}

static void on_notification(struct iwarp_llp_sctp_assoc *a, const void *data, size_t len)
{
    const union sctp_notification *n = data;
    if (len < sizeof n->sn_header)
        return;
    switch (n->sn_header.sn_type) {
    case SCTP_ASSOC_CHANGE:
        if (len < sizeof n->sn_assoc_change)
            return;
        switch (n->sn_assoc_change.sac_state) {
        case SCTP_COMM_UP:
            if (a->state == ST_CONNECTING) {
                a->in = n->sn_assoc_change.sac_inbound_streams;
                a->out = n->sn_assoc_change.sac_outbound_streams;
                a->state = ST_UP_PENDING;
                mark_dirty(a);
            }
            break;
        case SCTP_SHUTDOWN_COMP:
            note_down(a, 0);
            break;
        case SCTP_COMM_LOST:
        case SCTP_CANT_STR_ASSOC:
            note_down(a, a->state == ST_CONNECTING ? IWARP_ERR_UNREACHABLE
                                                   : IWARP_ERR_SCTP_ASSOC_LOST);
            break;
        case SCTP_RESTART: /* the peer restarted: its DDP streams are gone */
            note_down(a, IWARP_ERR_SCTP_ASSOC_LOST);
            break;
        default:
            break;
        }
        break;
    case SCTP_ADAPTATION_INDICATION:
        if (len < sizeof n->sn_adaptation_event)
            return;
        /* RFC 5043 §5.1: queued right after COMM_UP when the peer sent one (usrsctp.md) */
        a->adapt_seen = true;
        a->adapt_ind = n->sn_adaptation_event.sai_adaptation_ind;
        break;
    case SCTP_PARTIAL_DELIVERY_EVENT:
        o_free(a->ep->owner, a->part); /* the partly delivered message is aborted */
        a->part = NULL;
        a->part_len = 0;
        break;
    case SCTP_SEND_FAILED_EVENT:
        a->ep->st.send_failed++;
        break;
    case SCTP_REMOTE_ERROR:
        a->ep->st.remote_errors++;
        break;
    case SCTP_SHUTDOWN_EVENT: /* the peer shuts down; SHUTDOWN_COMP follows */
    default:
        break;
    }
}

static struct iwarp_llp_sctp_assoc *pending_for(struct iwarp_llp_sctp_listener *l,
                                                struct socket *so)
{
    for (struct iwarp_llp_sctp_assoc *a = l->pending; a; a = a->next)
        if (a->so == so)
            return a;
    struct iwarp_llp_sctp_assoc *a = assoc_new(l->ep);
    if (!a)
        return NULL;
    a->so = so;
    a->lsn = l;
    a->acc_lsn = l;
    list_add(&l->pending, a);
    return a;
}

static int recv_cb(struct socket *so, union sctp_sockstore addr, void *data, size_t len,
                   struct sctp_rcvinfo rcv, int flags, void *ulp_info)
{
    (void)addr;
    struct iwarp_llp_sctp_assoc *a = NULL;
    if (ulp_info && *(const uint32_t *)ulp_info == KIND_LISTENER) {
        /* a socket the stack created for a listener and we have not accepted yet: it inherited
         * the listener's ulp_info */
        struct iwarp_llp_sctp_listener *l = ulp_info;
        if (!l->closing && (a = pending_for(l, so)) != NULL) {
            l->dirty = true;
            G.lsn_dirty = true;
        }
    } else if (ulp_info) {
        a = ulp_info;
    }
    if (!a || (a->owner_closed && data)) {
        usrsctp_buf_free(data);
        return 1;
    }
    if (!data) { /* the association is gone */
        note_down(a, a->shut_sent ? 0 : IWARP_ERR_SCTP_ASSOC_LOST);
        return 1;
    }
    if (flags & MSG_NOTIFICATION) {
        on_notification(a, data, len);
        usrsctp_buf_free(data);
        return 1;
    }
    on_data(a, data, len, &rcv, flags);
    return 1;
}

static int send_cb(struct socket *so, uint32_t sb_free, void *ulp_info)
{
    (void)so;
    (void)sb_free;
    if (ulp_info && *(const uint32_t *)ulp_info == KIND_ASSOC) {
        struct iwarp_llp_sctp_assoc *a = ulp_info;
        if (a->tx_blocked) {
            a->tx_blocked = false;
            a->writable_pending = true;
            mark_dirty(a);
        }
    }
    return 1;
}

/* ---- sockets ------------------------------------------------------------------------------- */

static struct socket *new_socket(struct iwarp_llp_sctp_ep *ep, void *ulp_info)
{
    /* send_cb fires on SACKs once this much send buffer is free */
    uint32_t sb = ep->sndbuf ? ep->sndbuf : usrsctp_sysctl_get_sctp_sendspace();
    uint32_t thr = sb / 4 > 2 * ep->pmtu ? sb / 4 : 2 * ep->pmtu;
    struct socket *so =
        usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, recv_cb, send_cb, thr, ulp_info);
    if (!so)
        return NULL;
    /* blocking calls never return in no-threads mode (usrsctp.md) */
    if (usrsctp_set_non_blocking(so, 1) < 0)
        goto fail;
    /* RFC 5043 §8: N streams each way */
    struct sctp_initmsg im = {.sinit_num_ostreams = ep->nstreams,
                              .sinit_max_instreams = ep->max_in};
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_INITMSG, &im, sizeof im) < 0)
        goto fail;
    /* RFC 5043 §5.1: Adaptation Layer Indication 1 in INIT / INIT-ACK (host order here) */
    if (!ep->no_adaptation) {
        struct sctp_setadaptation ad = {.ssb_adaptation_ind = ep->adaptation_ind};
        if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, &ad, sizeof ad) < 0)
            goto fail;
    }
    static const uint16_t ev[] = {SCTP_ASSOC_CHANGE,           SCTP_ADAPTATION_INDICATION,
                                  SCTP_PARTIAL_DELIVERY_EVENT, SCTP_SEND_FAILED_EVENT,
                                  SCTP_SHUTDOWN_EVENT,         SCTP_REMOTE_ERROR};
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        struct sctp_event e = {.se_assoc_id = SCTP_FUTURE_ASSOC, .se_type = ev[i], .se_on = 1};
        if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_EVENT, &e, sizeof e) < 0)
            goto fail;
    }
    int on = 1;
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) < 0)
        goto fail;
    /* RFC 5043 §11.2: untagged segments SHOULD NOT be delayed for bundling */
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on) < 0)
        goto fail;
    /* the fragmentation point follows the path MTU, which must be set before connect/listen */
    struct sctp_paddrparams pp;
    memset(&pp, 0, sizeof pp);
    pp.spp_address.ss_family = AF_CONN;
    pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
    pp.spp_flags = SPP_PMTUD_DISABLE;
    /* usrsctp adds the SCTP common header to this value for AF_CONN (sctp_pcb.c,
     * sctp_add_remote_addr): the packets are at most ep->pmtu octets */
    pp.spp_pathmtu = ep->pmtu - IWARP_SCTP_COMMON_HDR_LEN;
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp, sizeof pp) < 0)
        goto fail;
    if (ep->sndbuf) {
        int v = (int)ep->sndbuf;
        if (usrsctp_setsockopt(so, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) < 0)
            goto fail;
    }
    if (ep->rcvbuf) {
        int v = (int)ep->rcvbuf;
        if (usrsctp_setsockopt(so, SOL_SOCKET, SO_RCVBUF, &v, sizeof v) < 0)
            goto fail;
    }
    return so;
fail:
    (void)usrsctp_set_ulpinfo(so, NULL);
    usrsctp_close(so);
    return NULL;
}

/* ---- post-processing: everything that must not run inside usrsctp ------------------------ */

/* Owner o's call into usrsctp: the lock, and post_process() when the outermost one ends. */
static void enter(struct iwarp_llp_sctp_owner *o)
{
    lock_enter(o);
    G.depth++;
}

static void post_process(void);

static void leave(void)
{
    if (--G.depth == 0)
        post_process();
    lock_leave();
}

/* RFC 5043 checks once COMM_UP is seen (wire_sctp's). 0 or the refusal reason. */
static int check_up(const struct iwarp_llp_sctp_assoc *a)
{
    /* RFC 5043 §5.1, §11.1: a peer indication of NONE (no notification) or any other value
     * means no DDP on this association */
    int rc = iwarp_sctp_adaptation_check(a->adapt_seen, a->adapt_ind);
    /* RFC 5043 §8: inbound and outbound stream counts MUST be equal */
    return rc != 0 ? rc : iwarp_sctp_streams_check(a->in, a->out);
}

static int compute_seg(struct iwarp_llp_sctp_assoc *a)
{
    struct sctp_status st;
    socklen_t len = sizeof st;
    memset(&st, 0, sizeof st);
    if (!a->so || usrsctp_getsockopt(a->so, IPPROTO_SCTP, SCTP_STATUS, &st, &len) < 0)
        return IWARP_ERR_SCTP_ASSOC_LOST;
    /* RFC 5043 §9: the largest segment that needs no SCTP or IP fragmentation (the frag point
     * less the DDP-SSN and room for bundling), but at least 516 */
    uint32_t fp = st.sstat_fragmentation_point;
    uint32_t below = IWARP_SCTP_SSN_LEN + a->ep->headroom;
    uint32_t seg = fp > below ? fp - below : 0;
    if (seg < IWARP_SCTP_CTL_MAX)
        seg = IWARP_SCTP_CTL_MAX; /* §9: a control message with 512 octets of private data */
    a->max_seg = seg;
    a->max_msg = seg + IWARP_SCTP_SSN_LEN; /* §5.2.1: the DDP-SSN before the segment */
    /* the gather buffer: the largest message we may send (a test may allow more, see cfg) */
    a->txbuf =
        o_alloc(a->ep->owner, a->max_msg > a->ep->test_msg_max ? a->max_msg : a->ep->test_msg_max);
    return a->txbuf ? 0 : IWARP_ERR_NOMEM;
}

/* Tell the owner it is over (or, for an association the owner never saw, the listener). */
static void report_down(struct iwarp_llp_sctp_assoc *a, int err)
{
    if (!a->handed) {
        struct iwarp_llp_sctp_listener *l = a->acc_lsn;
        assoc_free(a);
        if (l && err && l->accept_fn)
            l->accept_fn(l->user, NULL, err);
        return;
    }
    if (may_call(a) && a->ops->on_down)
        a->ops->on_down(a->user, err);
}

static void finish_close(struct iwarp_llp_sctp_assoc *a)
{
    if (a->graceful && a->so && a->state == ST_UP && !a->down_noted) {
        if (!a->shut_sent) {
            a->shut_sent = true;
            if (usrsctp_shutdown(a->so, SHUT_WR) == 0)
                return; /* SHUTDOWN_COMP (or loss) brings it back here */
        } else {
            return;
        }
    }
    kill_socket(a);
    assoc_free(a);
}

static void settle(struct iwarp_llp_sctp_assoc *a)
{
    if (a->lsn)
        return; /* not accepted yet: the listener's turn comes first */
    if (a->owner_closed) {
        finish_close(a);
        return;
    }
    if (a->state == ST_UP_PENDING) {
        int err = check_up(a);
        if (!err && a->down_noted)
            err = a->down_err ? a->down_err : IWARP_ERR_SCTP_ASSOC_LOST;
        if (!err)
            err = compute_seg(a);
        if (err) {
            kill_socket(a); /* ABORT: usrsctp cannot refuse the INIT itself (usrsctp.md) */
            a->state = ST_DOWN;
            a->down_noted = true;
            a->down_err = err;
            report_down(a, err);
            return;
        }
        a->state = ST_UP;
        if (!a->handed) {
            a->handed = true;
            struct iwarp_llp_sctp_listener *l = a->acc_lsn;
            l->accept_fn(l->user, a, 0);
        }
        if (may_call(a) && a->ops->on_up)
            a->ops->on_up(a->user, a->out, a->max_seg);
    }
    while (a->early && a->state == ST_UP && !a->owner_closed && !a->down_noted) {
        struct early *e = a->early;
        a->early = e->next;
        if (!a->early)
            a->early_tail = &a->early;
        void *buf = e->buf;
        size_t len = e->len;
        uint16_t sid = e->sid;
        uint32_t ppid = e->ppid;
        bool unordered = e->unordered;
        o_free(a->ep->owner, e);
        hand_over(a, sid, ppid, unordered, buf, len);
    }
    if (a->owner_closed) {
        mark_dirty(a); /* closed by a callback: the rest on the next round */
        return;
    }
    if (a->down_noted && a->state != ST_DOWN) {
        a->state = ST_DOWN;
        kill_socket(a); /* nothing left to shut down: free the socket now */
        report_down(a, a->down_err);
        return;
    }
    if (a->writable_pending) {
        a->writable_pending = false;
        if (a->state == ST_UP && may_call(a) && a->ops->on_writable)
            a->ops->on_writable(a->user);
    }
}

static void lsn_accept_all(struct iwarp_llp_sctp_listener *l)
{
    struct socket *so;
    while ((so = usrsctp_accept(l->so, NULL, NULL)) != NULL) {
        struct iwarp_llp_sctp_assoc *a = NULL;
        for (a = l->pending; a && a->so != so; a = a->next)
            ;
        if (!a) { /* no notification came for it (cannot allocate?): start from scratch */
            a = assoc_new(l->ep);
            if (!a) {
                (void)usrsctp_set_ulpinfo(so, NULL);
                usrsctp_close(so);
                continue;
            }
            a->so = so;
            a->acc_lsn = l;
        }
        list_del(a);
        a->lsn = NULL;
        list_add(&l->ep->assocs, a);
        (void)usrsctp_set_ulpinfo(so, a);
        (void)usrsctp_set_non_blocking(so, 1);
        mark_dirty(a);
    }
}

/* a's events were noted in another owner's call: its owner collects them (its wake fd). */
static void defer(struct iwarp_llp_sctp_assoc *a)
{
    struct iwarp_llp_sctp_owner *o = a->ep->owner;
    if (!a->deferred) {
        a->deferred = true;
        a->fnext = o->deferred;
        o->deferred = a;
    }
    if (!o->woken) {
        o->woken = true;
        uint64_t one = 1;
        ssize_t n = write(o->wake_fd, &one, sizeof one);
        (void)n; /* a full counter is readable all the same */
    }
}

static void post_process(void)
{
    G.depth++;
    for (;;) {
        if (G.lsn_dirty) {
            G.lsn_dirty = false;
            for (struct iwarp_llp_sctp_ep *ep = G.eps; ep; ep = ep->next)
                for (struct iwarp_llp_sctp_listener *l = ep->listeners; l; l = l->next)
                    if (l->dirty) {
                        l->dirty = false;
                        lsn_accept_all(l);
                    }
        }
        struct iwarp_llp_sctp_assoc *a = G.dirty;
        if (!a) {
            if (G.lsn_dirty)
                continue;
            break;
        }
        G.dirty = a->dnext;
        a->dirty = false;
        a->dnext = NULL;
        if (a->ep->owner != holder)
            defer(a); /* its callbacks (and its owner's allocator) in its owner's call */
        else
            settle(a);
    }
    G.depth--;
}

/* ---- owners -------------------------------------------------------------------------------- */

int iwarp_llp_sctp_owner_open(const struct iwarp_llp_sctp_alloc *alloc,
                              struct iwarp_llp_sctp_owner **out)
{
    if (!out || (alloc && (!alloc->calloc_fn || !alloc->free_fn)))
        return IWARP_ERR_INVAL;
    struct iwarp_llp_sctp_alloc a =
        alloc ? *alloc : (struct iwarp_llp_sctp_alloc){libc_calloc, libc_free, NULL};
    struct iwarp_llp_sctp_owner *o = a.calloc_fn(a.user, 1, sizeof *o);
    if (!o)
        return IWARP_ERR_NOMEM;
    o->alloc = a;
    o->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (o->wake_fd < 0) {
        o_free(o, o);
        return IWARP_ERR_IO;
    }
    *out = o;
    return 0;
}

void iwarp_llp_sctp_owner_close(struct iwarp_llp_sctp_owner *o)
{
    if (!o)
        return;
    close(o->wake_fd);
    struct iwarp_llp_sctp_alloc a = o->alloc;
    a.free_fn(a.user, o);
}

int iwarp_llp_sctp_owner_fd(const struct iwarp_llp_sctp_owner *o)
{
    return o->wake_fd;
}

void iwarp_llp_sctp_owner_collect(struct iwarp_llp_sctp_owner *o)
{
    enter(o);
    uint64_t v;
    ssize_t n = read(o->wake_fd, &v, sizeof v);
    (void)n; /* nothing to read: woken already */
    o->woken = false;
    while (o->deferred) { /* settled by post_process, now in o's call */
        struct iwarp_llp_sctp_assoc *a = o->deferred;
        o->deferred = a->fnext;
        a->deferred = false;
        a->fnext = NULL;
        mark_dirty(a);
    }
    leave();
}

/* ---- endpoints ----------------------------------------------------------------------------- */

void iwarp_llp_sctp_ep_set_fault(struct iwarp_llp_sctp_ep *ep,
                                 const struct iwarp_llp_sctp_fault *fault)
{
    static const struct iwarp_llp_sctp_fault none;
    ep->fault = fault ? *fault : none;
}

int iwarp_llp_sctp_ep_open(const struct iwarp_llp_sctp_ep_cfg *cfg,
                           struct iwarp_llp_sctp_ep **ep_out)
{
    if (!cfg || !ep_out || !cfg->owner)
        return IWARP_ERR_INVAL;
    struct sockaddr_storage local;
    memset(&local, 0, sizeof local);
    if (cfg->addr) {
        socklen_t l = addr_len(cfg->addr);
        if (!l)
            return IWARP_ERR_INVAL;
        memcpy(&local, cfg->addr, l);
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)&local;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    uint32_t mtu = cfg->mtu ? cfg->mtu : IWARP_LLP_SCTP_DEFAULT_MTU;
    uint32_t iphdr = local.ss_family == AF_INET6 ? 40u : 20u;
    /* a UDP datagram holds at most 65535 - 8 - IP header octets */
    if (mtu < 576 + iphdr || mtu > 65535)
        return IWARP_ERR_INVAL;

    struct iwarp_llp_sctp_ep *ep = o_alloc(cfg->owner, sizeof *ep);
    if (!ep)
        return IWARP_ERR_NOMEM;
    ep->owner = cfg->owner;
    ep->test_msg_max = cfg->test_msg_max;
    ep->fd = -1;
    ep->nstreams = cfg->nstreams ? cfg->nstreams : IWARP_LLP_SCTP_DEFAULT_STREAMS;
    ep->max_in = cfg->test_max_instreams ? cfg->test_max_instreams : ep->nstreams;
    ep->pmtu = mtu - iphdr - 8u; /* the SCTP packet inside IP + UDP (RFC 6951) */
    ep->headroom = cfg->headroom ? cfg->headroom : IWARP_LLP_SCTP_DEFAULT_HEADROOM;
    ep->sndbuf = cfg->sndbuf;
    ep->rcvbuf = cfg->rcvbuf;
    ep->no_adaptation = cfg->test_no_adaptation;
    ep->adaptation_ind =
        cfg->test_adaptation_ind ? cfg->test_adaptation_ind : IWARP_SCTP_ADAPTATION_DDP;
    ep->fault = cfg->fault;
    ep->rng = cfg->fault.seed;
    ep->capture = cfg->capture;
    ep->capture_user = cfg->capture_user;
    ep->dq_tail = &ep->dq;
    ep->rxbuf = o_alloc(ep->owner, (size_t)RX_SLOTS * RXBUF_LEN);
    if (!ep->rxbuf) {
        o_free(ep->owner, ep);
        return IWARP_ERR_NOMEM;
    }

    lock_enter(ep->owner);
    if (!G.stack_up) {
        /* no threads, no sockets of its own: packets leave through conn_output */
        usrsctp_init_nothreads(0, conn_output, NULL);
        usrsctp_enable_crc32c_offload(); /* conn_output and the receive loop do it */
        G.stack_up = true;
        apply_sysctls();
    }
    G.n_ep++;

    int rc = IWARP_ERR_IO;
    ep->fd = socket(local.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ep->fd < 0)
        goto fail;
    if (local.ss_family == AF_INET6) {
        /* :: takes IPv4 peers too (as ::ffff:a.b.c.d), whatever net.ipv6.bindv6only says, as
         * the TCP listener does; any other IPv6 address is IPv6 only */
        int v6only = !IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)&local)->sin6_addr);
        (void)setsockopt(ep->fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    }
    if (bind(ep->fd, (const struct sockaddr *)&local, addr_len((const struct sockaddr *)&local)) <
        0) {
        rc = errno == EADDRINUSE || errno == EADDRNOTAVAIL ? IWARP_ERR_ADDR : IWARP_ERR_IO;
        goto fail;
    }
    /* a burst of packets must not overflow the UDP socket (usrsctp.md: retransmissions) */
    int rb = (int)(cfg->udp_rcvbuf ? cfg->udp_rcvbuf : DEFAULT_UDP_RCVBUF);
    if (setsockopt(ep->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof rb) < 0)
        (void)setsockopt(ep->fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof rb);
    (void)setsockopt(ep->fd, SOL_SOCKET, SO_SNDBUF, &rb, sizeof rb);
    ep->locallen = sizeof ep->local;
    if (getsockname(ep->fd, (struct sockaddr *)&ep->local, &ep->locallen) < 0)
        goto fail;
    ep->next = G.eps;
    G.eps = ep;
    atomic_store(&timers_next, 0); /* the stack may have (re)started: its timers begin now */
    lock_leave();
    *ep_out = ep;
    return 0;
fail:
    if (ep->fd >= 0)
        close(ep->fd);
    stack_release_locked();
    lock_leave();
    o_free(ep->owner, ep->rxbuf);
    o_free(ep->owner, ep);
    return rc;
}

int iwarp_llp_sctp_ep_fd(const struct iwarp_llp_sctp_ep *ep)
{
    return ep->fd;
}

socklen_t iwarp_llp_sctp_ep_local(const struct iwarp_llp_sctp_ep *ep, struct sockaddr_storage *out)
{
    memcpy(out, &ep->local, sizeof *out);
    return ep->locallen;
}

void iwarp_llp_sctp_ep_stats(const struct iwarp_llp_sctp_ep *ep, struct iwarp_llp_sctp_stats *out)
{
    lock_enter(ep->owner); /* another owner's call may count this endpoint's packets */
    *out = ep->st;
    lock_leave();
}

static void lsn_destroy(struct iwarp_llp_sctp_listener *l)
{
    l->closing = true;
    /* sockets waiting in the accept queue: take them and abort them */
    struct socket *so;
    while ((so = usrsctp_accept(l->so, NULL, NULL)) != NULL) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        (void)usrsctp_setsockopt(so, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        (void)usrsctp_set_ulpinfo(so, NULL);
        usrsctp_close(so);
    }
    while (l->pending) /* their sockets are gone with the queue: free only our side */
        assoc_free(l->pending);
    /* accepted but not handed to the owner yet: nobody else will close them */
    for (struct iwarp_llp_sctp_assoc *a = l->ep->assocs, *n; a; a = n) {
        n = a->next;
        if (a->acc_lsn == l) {
            a->acc_lsn = NULL;
            if (!a->handed) {
                kill_socket(a);
                a->owner_closed = true; /* freed by post_process (it may be dirty) */
                mark_dirty(a);
            }
        }
    }
    (void)usrsctp_set_ulpinfo(l->so, NULL);
    usrsctp_close(l->so);
    o_free(l->ep->owner, l);
}

void iwarp_llp_sctp_listener_close(struct iwarp_llp_sctp_listener *l)
{
    if (!l)
        return;
    enter(l->ep->owner);
    for (struct iwarp_llp_sctp_listener **pp = &l->ep->listeners; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    lsn_destroy(l);
    leave();
}

void iwarp_llp_sctp_ep_close(struct iwarp_llp_sctp_ep *ep)
{
    if (!ep)
        return;
    iwarp_critpath_end(); /* a path its set-up began (no DATA yet) ends with it */
    lock_enter(ep->owner);
    enter(ep->owner);
    for (struct iwarp_llp_sctp_ep **pp = &G.eps; *pp; pp = &(*pp)->next)
        if (*pp == ep) {
            *pp = ep->next;
            break;
        }
    atomic_store(&timers_next, 0); /* the last endpoint gone: no deadline any more */
    while (ep->listeners) {
        struct iwarp_llp_sctp_listener *l = ep->listeners;
        ep->listeners = l->next;
        lsn_destroy(l);
    }
    /* drop this endpoint's associations from the dirty list before freeing them */
    for (struct iwarp_llp_sctp_assoc **pp = &G.dirty; *pp;) {
        if ((*pp)->ep == ep) {
            (*pp)->dirty = false;
            *pp = (*pp)->dnext;
        } else {
            pp = &(*pp)->dnext;
        }
    }
    while (ep->assocs) {
        struct iwarp_llp_sctp_assoc *a = ep->assocs;
        kill_socket(a);
        assoc_free(a);
    }
    flush_delayed(ep, 0, true);
    while (ep->paths) {
        struct path *p = ep->paths;
        ep->paths = p->next;
        path_free(p);
    }
    close(ep->fd);
    o_free(ep->owner, ep->rxbuf);
    o_free(ep->owner, ep);
    leave(); /* post_process, still under the lock */
    stack_release_locked();
    lock_leave();
}

/* ---- driving ------------------------------------------------------------------------------- */

/* Whether another endpoint listens on SCTP port port (a bound-to-all listener would otherwise
 * take an INIT that arrived on this endpoint's socket). */
static bool foreign_port(const struct iwarp_llp_sctp_ep *ep, uint16_t port)
{
    for (const struct iwarp_llp_sctp_ep *o = G.eps; o; o = o->next)
        if (o != ep)
            for (const struct iwarp_llp_sctp_listener *l = o->listeners; l; l = l->next)
                if (l->port == port)
                    return true;
    return false;
}

/* Read up to RX_SLOTS datagrams in one call, each into its slot of ep->rxbuf. Returns their
 * number (mm[k].msg_len their lengths, src[k] their senders), or -errno. */
static int read_batch(struct iwarp_llp_sctp_ep *ep, struct mmsghdr *mm, struct iovec *iov,
                      struct sockaddr_storage *src)
{
    for (unsigned k = 0; k < RX_SLOTS; k++) {
        iov[k] = (struct iovec){ep->rxbuf + (size_t)k * RXBUF_LEN, RXBUF_LEN};
        mm[k].msg_hdr = (struct msghdr){
            .msg_name = &src[k], .msg_namelen = sizeof src[k], .msg_iov = &iov[k], .msg_iovlen = 1};
    }
    int got = recvmmsg(ep->fd, mm, RX_SLOTS, MSG_DONTWAIT, NULL);
    if (got > 0)
        iwarp_critpath_begin();
    return got < 0 ? -errno : got;
}

/* A failed read that leaves more to read: a signal, or an ICMP error of an earlier datagram. */
static bool read_again(int got)
{
    return got == -EINTR || got == -ECONNREFUSED;
}

/* One datagram of n octets from src, read into buf: checked and fed to usrsctp. */
static void take_datagram(struct iwarp_llp_sctp_ep *ep, uint8_t *buf, size_t n,
                          const struct sockaddr_storage *src, uint64_t now_ns)
{
    ep->st.pkts_in++;
    ep->st.bytes_in += (uint64_t)n;
    /* RFC 4960 §3.1: no SCTP packet is shorter than its common header */
    if (n < IWARP_SCTP_COMMON_HDR_LEN) {
        ep->st.rx_dropped++;
        return;
    }
    /* unknown senders get a path only where something listens */
    struct path *p = path_get(ep, (const struct sockaddr *)src, ep->listeners != NULL);
    if (!p) {
        ep->st.rx_dropped++;
        return;
    }
    if (ep->capture)
        ep->capture(ep->capture_user, IWARP_LLP_SCTP_PKT_IN, (const struct sockaddr *)&ep->local,
                    (const struct sockaddr *)src, buf, n, now_ns);
    if (!iwarp_sctp_crc_ok(buf, n)) {
        ep->st.rx_bad_crc++; /* RFC 4960 §6.8: silently discarded; SCTP retransmits */
        return;
    }
    uint16_t dport = (uint16_t)(buf[2] << 8 | buf[3]);
    if (foreign_port(ep, dport)) {
        ep->st.rx_dropped++;
        return;
    }
    usrsctp_conninput(p->handle, buf, n, 0);
}

bool iwarp_llp_sctp_on_readable(struct iwarp_llp_sctp_ep *ep, uint64_t now_ns)
{
    struct mmsghdr mm[RX_SLOTS];
    struct iovec iov[RX_SLOTS];
    struct sockaddr_storage src[RX_SLOTS];
    /* The first read comes before the usrsctp lock, so that a busy poll that finds nothing
     * costs one system call and no more (the fd and rxbuf are read only in the owner's calls). */
    int got = read_batch(ep, mm, iov, src);
    if (got < 0 && !read_again(got))
        return false;
    enter(ep->owner);
    G.now_ns = now_ns;
    for (int taken = 0; taken < RX_BATCH;) {
        if (got < 0 && !read_again(got))
            break; /* EAGAIN: nothing more */
        for (int k = 0; k < got; k++)
            take_datagram(ep, iov[k].iov_base, mm[k].msg_len, &src[k], now_ns);
        if (got >= 0 && got < (int)RX_SLOTS)
            break; /* fewer than asked for: the socket was empty, a further read would say so */
        taken += got > 0 ? got : 1;
        got = read_batch(ep, mm, iov, src);
    }
    leave();
    return true;
}

uint64_t iwarp_llp_sctp_timers(struct iwarp_llp_sctp_owner *o, uint64_t now_ns)
{
    uint64_t due = atomic_load(&timers_next);
    if (now_ns < due)
        return due;
    lock_enter(o); /* held across post_process and the deadline below */
    if (!G.eps) {
        atomic_store(&timers_next, 0);
        lock_leave();
        return UINT64_MAX;
    }
    enter(o);
    G.now_ns = now_ns;
    if (!G.timer_started) {
        G.timer_started = true;
        G.timer_last = now_ns;
    }
    if (now_ns > G.timer_last) {
        uint64_t ms = (now_ns - G.timer_last) / 1000000u;
        if (ms) {
            G.timer_last += ms * 1000000u;
            usrsctp_handle_timers(ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms);
        }
    }
    for (struct iwarp_llp_sctp_ep *ep = G.eps; ep; ep = ep->next)
        flush_delayed(ep, now_ns, false);
    leave();
    uint64_t next = G.timer_last + (uint64_t)G.tick_ms * 1000000u;
    for (struct iwarp_llp_sctp_ep *ep = G.eps; ep; ep = ep->next)
        if (ep->dq && ep->dq->due < next)
            next = ep->dq->due;
    atomic_store(&timers_next, next);
    lock_leave();
    return next;
}

/* ---- listen / connect / send / close -------------------------------------------------------- */

static int listen_locked(struct iwarp_llp_sctp_ep *ep, uint16_t sctp_port, int backlog,
                         iwarp_llp_sctp_accept_fn accept_fn, void *user,
                         struct iwarp_llp_sctp_listener **l_out)
{
    struct iwarp_llp_sctp_listener *l = o_alloc(ep->owner, sizeof *l);
    if (!l)
        return IWARP_ERR_NOMEM;
    l->kind = KIND_LISTENER;
    l->ep = ep;
    l->port = sctp_port ? sctp_port : addr_port(&ep->local);
    l->accept_fn = accept_fn;
    l->user = user;
    int rc = IWARP_ERR_IO;
    l->so = new_socket(ep, l);
    if (!l->so)
        goto fail;
    /* bound to every AF_CONN address: the INIT may come over any path of this endpoint (and
     * on_readable keeps other endpoints' packets away from it) */
    struct sockaddr_conn sc;
    memset(&sc, 0, sizeof sc);
    sc.sconn_family = AF_CONN;
    sc.sconn_port = htons(l->port);
    sc.sconn_addr = NULL;
    if (usrsctp_bind(l->so, (struct sockaddr *)&sc, sizeof sc) < 0) {
        rc = errno == EADDRINUSE ? IWARP_ERR_ADDR : IWARP_ERR_IO;
        goto fail;
    }
    if (usrsctp_listen(l->so, backlog > 0 ? backlog : 128) < 0)
        goto fail;
    l->next = ep->listeners;
    ep->listeners = l;
    *l_out = l;
    return 0;
fail:
    if (l->so) {
        (void)usrsctp_set_ulpinfo(l->so, NULL);
        usrsctp_close(l->so);
    }
    o_free(ep->owner, l);
    return rc;
}

int iwarp_llp_sctp_listen(struct iwarp_llp_sctp_ep *ep, uint16_t sctp_port, int backlog,
                          iwarp_llp_sctp_accept_fn accept_fn, void *user,
                          struct iwarp_llp_sctp_listener **l_out)
{
    if (!ep || !accept_fn || !l_out)
        return IWARP_ERR_INVAL;
    enter(ep->owner);
    int rc = listen_locked(ep, sctp_port, backlog, accept_fn, user, l_out);
    leave();
    return rc;
}

static int connect_locked(struct iwarp_llp_sctp_ep *ep, const struct sockaddr *peer,
                          uint16_t peer_sctp_port, const struct iwarp_llp_sctp_ops *ops, void *user,
                          struct iwarp_llp_sctp_assoc **a_out)
{
    struct sockaddr_storage ps;
    memset(&ps, 0, sizeof ps);
    memcpy(&ps, peer, addr_len(peer));
    uint16_t port = peer_sctp_port ? peer_sctp_port : addr_port(&ps);
    if (port == 0)
        return IWARP_ERR_INVAL;
    struct path *p = path_get(ep, peer, true);
    if (!p)
        return IWARP_ERR_NOMEM;
    struct iwarp_llp_sctp_assoc *a = assoc_new(ep);
    if (!a)
        return IWARP_ERR_NOMEM;
    a->ops = ops;
    a->user = user;
    a->handed = true;
    a->so = new_socket(ep, a);
    if (!a->so) {
        o_free(ep->owner, a);
        return IWARP_ERR_IO;
    }
    struct sockaddr_conn sc;
    memset(&sc, 0, sizeof sc);
    sc.sconn_family = AF_CONN;
    sc.sconn_addr = p->handle;
    /* bound to this path only (ephemeral port): packets of other paths never reach it */
    if (usrsctp_bind(a->so, (struct sockaddr *)&sc, sizeof sc) < 0) {
        kill_socket(a);
        o_free(ep->owner, a);
        return IWARP_ERR_IO;
    }
    list_add(&ep->assocs, a);
    sc.sconn_port = htons(port);
    if (usrsctp_connect(a->so, (struct sockaddr *)&sc, sizeof sc) < 0 && errno != EINPROGRESS) {
        a->owner_closed = true;
        mark_dirty(a); /* post_process frees it */
        return IWARP_ERR_IO;
    }
    *a_out = a;
    return 0;
}

int iwarp_llp_sctp_connect(struct iwarp_llp_sctp_ep *ep, const struct sockaddr *peer,
                           uint16_t peer_sctp_port, const struct iwarp_llp_sctp_ops *ops,
                           void *user, struct iwarp_llp_sctp_assoc **a_out)
{
    if (!ep || !peer || !a_out || !addr_len(peer) || peer->sa_family != ep->local.ss_family)
        return IWARP_ERR_INVAL;
    enter(ep->owner);
    int rc = connect_locked(ep, peer, peer_sctp_port, ops, user, a_out);
    leave();
    return rc;
}

void iwarp_llp_sctp_set_ops(struct iwarp_llp_sctp_assoc *a, const struct iwarp_llp_sctp_ops *ops,
                            void *user)
{
    lock_enter(a->ep->owner);
    a->ops = ops;
    a->user = user;
    lock_leave();
}

bool iwarp_llp_sctp_captured_here(const struct sockaddr *src)
{
    bool here = false;
    lock_enter(NULL);
    for (const struct iwarp_llp_sctp_ep *ep = G.eps; ep && !here; ep = ep->next)
        here = ep->capture && same_addr(&ep->local, src);
    lock_leave();
    return here;
}

uint32_t iwarp_llp_sctp_unacked(const struct iwarp_llp_sctp_assoc *a)
{
    struct sctp_status st;
    socklen_t len = sizeof st;
    memset(&st, 0, sizeof st);
    if (!a)
        return 0;
    lock_enter(a->ep->owner);
    if (!a->so || usrsctp_getsockopt(a->so, IPPROTO_SCTP, SCTP_STATUS, &st, &len) < 0)
        st.sstat_unackdata = 0;
    lock_leave();
    return st.sstat_unackdata;
}

static socklen_t peer_locked(const struct iwarp_llp_sctp_assoc *a, struct sockaddr_storage *out)
{
    if (!a->so)
        return 0;
    struct sockaddr *addrs = NULL;
    int n = usrsctp_getpaddrs(a->so, 0, &addrs);
    socklen_t len = 0;
    if (n > 0 && addrs->sa_family == AF_CONN) {
        /* the peer's AF_CONN address is the path we registered: it names the UDP peer */
        struct path *p = path_from_handle(((struct sockaddr_conn *)addrs)->sconn_addr);
        if (p) {
            memcpy(out, &p->peer, p->peerlen);
            len = p->peerlen;
        }
    }
    if (n > 0)
        usrsctp_freepaddrs(addrs);
    return len;
}

socklen_t iwarp_llp_sctp_peer(const struct iwarp_llp_sctp_assoc *a, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof *out);
    if (!a)
        return 0;
    lock_enter(a->ep->owner);
    socklen_t len = peer_locked(a, out);
    lock_leave();
    return len;
}

uint32_t iwarp_llp_sctp_max_seg(const struct iwarp_llp_sctp_assoc *a)
{
    lock_enter(a->ep->owner);
    uint32_t seg = a->state == ST_UP ? a->max_seg : 0;
    lock_leave();
    return seg;
}

uint16_t iwarp_llp_sctp_nstreams(const struct iwarp_llp_sctp_assoc *a)
{
    lock_enter(a->ep->owner);
    uint16_t n = a->state == ST_UP ? a->out : 0;
    lock_leave();
    return n;
}

void iwarp_llp_sctp_test_set_ordered(struct iwarp_llp_sctp_assoc *a, bool ordered)
{
    lock_enter(a->ep->owner);
    a->test_ordered = ordered;
    lock_leave();
}

static int send_locked(struct iwarp_llp_sctp_assoc *a, uint16_t sid, uint32_t ppid,
                       const struct iovec *iov, size_t n)
{
    if (a->owner_closed)
        return IWARP_ERR_STATE;
    if (a->state != ST_UP || a->down_noted) {
        if (a->state == ST_DOWN || a->down_noted)
            return a->down_err ? a->down_err : IWARP_ERR_SCTP_ASSOC_LOST;
        return IWARP_ERR_STATE;
    }
    if (sid >= a->out || (n && !iov))
        return IWARP_ERR_INVAL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += iov[i].iov_len;
    if (total == 0)
        return IWARP_ERR_INVAL;
    /* RFC 5043 §9: the adaptation layer MUST reject segments above the maximum it announced
     * (unless a test makes us a non-conforming peer whose messages SCTP fragments) */
    if (total > a->max_msg && total > a->ep->test_msg_max)
        return IWARP_ERR_SCTP_MSGSIZE;
    const void *buf;
    if (n == 1) {
        buf = iov[0].iov_base;
    } else {
        /* usrsctp_sendv takes one buffer (usrsctp.md): gather */
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            iwarp_copy(a->txbuf + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
        buf = a->txbuf;
        a->ep->st.tx_gathered++;
        a->ep->st.tx_gather_bytes += total;
    }
    /* RFC 5043 §10: every DDP chunk unordered (unless a test makes us a non-conforming peer);
     * the PPID goes in network order (usrsctp.md) */
    struct sctp_sndinfo si = {
        .snd_sid = sid, .snd_flags = a->test_ordered ? 0 : SCTP_UNORDERED, .snd_ppid = htonl(ppid)};
    ssize_t r =
        usrsctp_sendv(a->so, buf, total, NULL, 0, &si, (socklen_t)sizeof si, SCTP_SENDV_SNDINFO, 0);
    int err = errno;
    int rc = 0;
    if (r < 0) {
        if (err == EWOULDBLOCK || err == EAGAIN) {
            a->tx_blocked = true; /* send_cb -> on_writable */
            rc = IWARP_ERR_BUSY;
        } else if (err == EMSGSIZE) {
            rc = IWARP_ERR_SCTP_MSGSIZE;
        } else if (err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == ECONNABORTED) {
            rc = IWARP_ERR_SCTP_ASSOC_LOST;
        } else if (err == EINVAL) {
            rc = IWARP_ERR_INVAL;
        } else {
            rc = IWARP_ERR_IO;
        }
    } else if ((size_t)r != total) {
        rc = IWARP_ERR_IO;
    }
    return rc;
}

int iwarp_llp_sctp_send_chunk(struct iwarp_llp_sctp_assoc *a, uint16_t sid, uint32_t ppid,
                              const struct iovec *iov, size_t n)
{
    enter(a->ep->owner);
    int rc = send_locked(a, sid, ppid, iov, n);
    leave();
    return rc;
}

int iwarp_llp_sctp_shutdown(struct iwarp_llp_sctp_assoc *a)
{
    enter(a->ep->owner);
    int rc = 0;
    if (a->owner_closed || a->state != ST_UP || !a->so || a->down_noted) {
        rc = IWARP_ERR_STATE;
    } else if (!a->shut_sent) {
        a->shut_sent = true;
        rc = usrsctp_shutdown(a->so, SHUT_WR) < 0 ? IWARP_ERR_IO : 0;
    }
    leave();
    return rc;
}

void iwarp_llp_sctp_close(struct iwarp_llp_sctp_assoc *a, bool abortive)
{
    if (!a)
        return;
    enter(a->ep->owner);
    if (!a->owner_closed) {
        a->owner_closed = true;
        a->graceful = !abortive;
        mark_dirty(a); /* carried out when the outermost call returns */
    }
    leave();
}

void iwarp_llp_sctp_chunk_free(void *buf)
{
    if (!buf)
        return;
    if (atomic_load(&nbig) == 0) {
        usrsctp_buf_free(buf); /* none of ours is out: usrsctp's */
        return;
    }
    lock_enter(NULL);
    msg_free(buf);
    lock_leave();
}
