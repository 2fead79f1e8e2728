/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The objects behind the public handles, shared by the files of the API layer (L8): the
 * context (lock, allocator, STag table, progress loop, async events), and the internal
 * halves of PDs, CQs, QPs and SRQs. Nothing outside src/api includes this.
 *
 * Locking: one mutex per context (ctx->lock) serialises every object of the context. Public
 * functions take it on entry and let go of it through iwarp_api_unlock. It is not held across a
 * system call of the data path: a connection's I/O owner lets go of it around each (I/O
 * windows, docs/design.md "Locking and progress"), and the loop waits without it. Functions here
 * whose names end in _locked expect it held.
 */
#ifndef IWARP_API_API_INTERNAL_H
#define IWARP_API_API_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core_cq.h"
#include "core/core_engine.h"
#include "core/core_qp.h"
#include "core/core_srq.h"
#include "iwarp/verbs.h"
#include "loop/loop.h"
#include "mem/mem_stag.h"

/* Largest CQ. */
#define IWARP_API_MAX_CQE (1u << 22)

/* Random words drawn from the rng hook at once. */
#define IWARP_API_RNG_POOL 256u

/* The transmit batching window, in microseconds, without IWARP_CTX_ATTR_TX_BATCH
 * (iwarp_ctx_attr.tx_batch_us). */
#define IWARP_API_TX_BATCH_US 50u

/* How long a peer may leave our data unacknowledged or unread before its connection (TCP) or
 * association (SCTP) is dropped, without IWARP_CTX_ATTR_LLP_TIMEOUT
 * (iwarp_ctx_attr.llp_timeout_ms). */
#define IWARP_API_LLP_TIMEOUT_MS 60000u

/* Accepted TCP connections per listener whose MPA Request is incomplete, at most, without
 * IWARP_CTX_ATTR_MPA_PENDING_MAX (iwarp_ctx_attr.mpa_pending_max; docs/design.md, "Floods"). */
#define IWARP_API_MPA_PENDING_MAX 256u

/* How long an accepted TCP connection has for its MPA Request (and RTR), without
 * IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT (iwarp_ctx_attr.mpa_startup_timeout_ms): as long as an
 * initiator waits for the Reply. Not siw's 5 s: after a lost SYN TCP may take 9 s to deliver a
 * Request it sent twice (RFC 6298 §5.7: 3 s, then 6 s; test_cm_late_request). */
#define IWARP_API_MPA_STARTUP_TIMEOUT_MS 10000u

/* Pending async events, at most (further ones are counted as lost and logged). */
#define IWARP_API_ASYNC_MAX 1024u

struct iwarp_cm_channel; /* cm.c */
struct iwarp_api_doorbell;
struct cm_transport;     /* cm_internal.h */
struct cm_sctp_ctx;      /* cm_sctp.c */
struct iwarp_trace_sink; /* trace/trace_sink.h */

/* IWARP_LOG / IWARP_STATS (diag.c): the context's own log writer, used when the application
 * installed no log hook and IWARP_LOG asks for one, and whether to print the counters at
 * iwarp_ctx_destroy. */
struct iwarp_api_diag {
    int log_fd;        /* where the lines go: 2 (stderr), a file opened for it, or -1 (off) */
    bool log_fd_owned; /* log_fd is the context's to close */
    bool stats_at_exit;
    uint32_t id; /* the context's number in this process (1, 2, ...), in every line */
};

struct iwarp_qp_impl;

struct iwarp_ctx {
    struct iwarp_ctx_attr attr;
    struct iwarp_api_diag diag;
    /* every live QP (RDMAP and DDP-level), and the counters of the destroyed ones
     * (iwarp_query_ctx_stats) */
    struct iwarp_qp_impl *qps;
    struct iwarp_stats retired;
    struct iwarp_mem_hooks mem_hooks;
    pthread_mutex_t lock;
    struct iwarp_mem_table mem;
    struct iwarp_mem_entry *mem_entries;
    struct iwarp_loop loop;               /* the progress engine (loop.h) */
    uint32_t next_handle;                 /* PD handles and QP numbers */
    uint32_t n_pd, n_cq, n_channel, n_cm; /* live objects, for destroy-order checks */
    /* async events: ring + eventfd */
    struct iwarp_async_event async_ring[IWARP_API_ASYNC_MAX];
    uint32_t async_head, async_count, async_lost;
    int async_fd;
    /* the context's packet trace file (attr.trace_pcap / IWARP_PCAP; shared per path per
     * process, one reference held), or NULL (then the process-wide one, if started) */
    struct iwarp_trace_sink *trace;
    /* the STag table's random words, drawn from attr.rng in batches (lock held) */
    uint32_t rng_pool[IWARP_API_RNG_POOL];
    uint32_t rng_left;
    /* the CM's transports (cm_internal.h), installed at create; cm_sctp NULL when the
     * library was built without usrsctp */
    const struct cm_transport *cm_tcp, *cm_sctp;
    /* DDP over SCTP: the context's endpoints and associations (cm_sctp.c), or NULL */
    struct cm_sctp_ctx *sctp;
    /* connections whose posted work waits in a transmit batch (iwarp_api_doorbell_defer), and
     * the batching window (iwarp_ctx_attr.tx_batch_us; 0: off) */
    struct iwarp_api_doorbell *doorbells;
    uint64_t tx_batch_ns;
    /* iwarp_ctx_attr.llp_timeout_ms: each TCP socket's TCP_USER_TIMEOUT, and cm_sctp's stall
     * rule for associations (0: none) */
    uint32_t llp_timeout_ms;
    /* iwarp_ctx_attr.mpa_pending_max (0: none) and .mpa_startup_timeout_ms (in ns; 0: none):
     * the bounds on accepted TCP connections before their MPA Request is complete (cm_tcp.c) */
    uint32_t mpa_pending_max;
    uint64_t mpa_startup_timeout_ns;
    /* I/O windows: system calls that move a connection's octets run without the lock
     * (docs/design.md, "Locking and progress"). Windows open now, counted by the epoch they opened
     * in, and threads waiting for a connection's owner or for a grace period (io_idle). */
    uint32_t io_windows[2];
    uint8_t io_epoch;
    uint32_t io_waiters;
    pthread_cond_t io_idle;
    /* completion channels whose fd must follow their queue, and whether a thread is at it
     * (iwarp_api_channels_sync) */
    struct iwarp_comp_channel_impl *chan_sync;
    bool chan_syncing;
};

/*
 * A connection's deferred doorbell. A transport that batches small posts (cm_tcp) queues one
 * here instead of writing at once; the next poll of, or wait on, any CQ of the context rings
 * every queued one (the application is about to look for completions: the batch must leave),
 * and so does the transport's own deadline. Lock held throughout.
 */
struct iwarp_api_doorbell {
    struct iwarp_api_doorbell *next;
    void (*ring)(struct iwarp_api_doorbell *db); /* write what was deferred */
    bool queued;
};

/* Queue db on ctx (once: a queued doorbell stays queued until rung or cancelled). */
void iwarp_api_doorbell_defer(struct iwarp_ctx *ctx, struct iwarp_api_doorbell *db);
/* Take db off ctx's queue (its connection goes away). */
void iwarp_api_doorbell_cancel(struct iwarp_ctx *ctx, struct iwarp_api_doorbell *db);
/* Ring and dequeue every queued doorbell of ctx (a CQ is polled or waited on). */
void iwarp_api_doorbells_ring(struct iwarp_ctx *ctx);

struct iwarp_pd {
    struct iwarp_ctx *ctx;
    uint32_t handle;
    uint32_t n_obj; /* MRs, MWs, QPs, SRQs */
};

struct iwarp_cq {
    struct iwarp_ctx *ctx;
    struct iwarp_core_cq core;
    struct iwarp_wc *ring;
    struct iwarp_comp_channel *channel;
    void *cq_context;
    uint32_t n_users; /* QPs and SRQs using it */
    /* the one QP using it (as send CQ, receive CQ or both), else NULL (iwarp_api_cq_use) */
    struct iwarp_qp_impl *sole_qp;
    uint64_t loop_pass_ns;     /* when a busy poll last ran the loop instead (iwarp_poll_cq) */
    uint64_t events_delivered; /* get_cq_event */
    uint64_t events_acked;
    bool event_pending;          /* an arm fired and get_cq_event has not taken it */
    struct iwarp_cq *next_fired; /* the channel's queue of fired CQs */
    bool waiting;                /* a thread waits in iwarp_cq_wait */
};

/* A completion channel and its queue of CQs whose arm fired. */
struct iwarp_comp_channel_impl {
    struct iwarp_comp_channel pub; /* first */
    struct iwarp_cq *fired_head, *fired_tail;
    uint32_t n_cq;
    uint32_t n_waiters; /* threads waiting in the loop for its next event (verbs_cq.c) */
    /* the fd follows the queue without the lock (iwarp_api_channels_sync) */
    bool fd_readable; /* what it was last made: the eventfd's counter is 1, else 0 */
    bool sync_queued; /* on ctx->chan_sync */
    bool sync_busy;   /* a thread writes or reads the fd now */
    struct iwarp_comp_channel_impl *next_sync;
};

struct iwarp_srq {
    struct iwarp_ctx *ctx;
    struct iwarp_pd *pd;
    void *srq_context;
    struct iwarp_core_srq core;
    struct iwarp_core_rqe *ring;
    uint32_t n_users;
};

struct iwarp_qp_impl;

/* How a connected QP reaches its transport (set while a transport carries it). */
struct iwarp_qp_llp {
    void (*kick)(struct iwarp_qp_impl *qp); /* new TX work: send what can be sent now */
    /* read the connection now (a busy poll at now_ns, verbs_cq.c), or NULL */
    void (*poll_rx)(struct iwarp_qp_impl *qp, uint64_t now_ns);
    /* abortive close (modify to ERR): when it returns, the transport no longer references the
     * QP and llp is cleared */
    void (*abort)(struct iwarp_qp_impl *qp);
    /* the connection's TCP retransmissions so far (TCP_INFO; a closed one's last reading), or
     * NULL (SCTP) */
    void (*retrans)(struct iwarp_qp_impl *qp, uint64_t *bytes, uint64_t *segs);
};

struct iwarp_qp_impl {
    struct iwarp_qp pub; /* first: the public handle points here */
    /* Its engine (core_engine.h): an RDMAP queue pair (verbs_qp.c) or a DDP-level stream
     * (iwarp/ddp.h, ddp.c); eng->rdmap is NULL for the latter. */
    struct iwarp_core_engine *eng;
    struct iwarp_qp_llp llp;
    struct iwarp_qp_cap cap;
    void *cm_id; /* the CM id that owns the connection, or NULL */
    /* iwarp_destroy_qp of a QP a CM id owns: the id lets go of it first (cm.c), or NULL */
    void (*cm_release)(struct iwarp_qp_impl *qp);
    /* iwarp_destroy_qp (lock held), after the engine's teardown: frees the QP, its engine and
     * the memory they borrow (its creator's: verbs_qp.c, ddp.c) */
    void (*free)(struct iwarp_qp_impl *qp);
    /* ctx->qps (iwarp_api_qp_link) */
    struct iwarp_qp_impl *qp_prev, *qp_next;
    /* the last TCP retransmission counters read from its connection (llp.retrans) */
    uint64_t retrans_bytes, retrans_segs;
};

static inline struct iwarp_qp_impl *iwarp_api_qp(struct iwarp_qp *qp)
{
    return (struct iwarp_qp_impl *)qp;
}

/* Posts one WR of a chain (lock held); qn: the untagged queue of a DDP-level receive, else
 * unused. Returns 0 or a negative IWARP_ERR_*, and the chain's next WR in *next. */
typedef int (*iwarp_api_post_fn)(struct iwarp_qp_impl *q, void *wr, uint32_t qn, void **next);

/* The posting loop of every post function (post.c): takes the lock, posts the chain in order
 * with one until a WR fails, then, when kick and something was posted, lets the transport send
 * at once. Returns 0 or the failing WR's code (IWARP_ERR_INVAL for a NULL qp or wr); *bad is
 * the failing WR, or NULL. */
int iwarp_api_post_chain(struct iwarp_qp *qp, void *wr, uint32_t qn, iwarp_api_post_fn one,
                         bool kick, void **bad);

/* Allocation through the context's hooks (zeroed). NULL on failure. */
void *iwarp_api_calloc(struct iwarp_ctx *ctx, size_t n, size_t size);
/* The same, not zeroed: for large buffers whose every octet is written before it is read, so
 * that pages nobody touches never become resident (a zeroing calloc of a recycled block makes
 * all of them resident). NULL on failure. */
void *iwarp_api_malloc(struct iwarp_ctx *ctx, size_t size);
void iwarp_api_free(struct iwarp_ctx *ctx, void *p);

/* Log through the context's hook (printf-style). */
void iwarp_api_log(struct iwarp_ctx *ctx, enum iwarp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether a line of this level reaches the context's log (to skip formatting one). */
static inline bool iwarp_api_log_on(const struct iwarp_ctx *ctx, enum iwarp_log_level level)
{
    return ctx->attr.log && level <= ctx->attr.log_level;
}

/* IWARP_LOG and IWARP_STATS (diag.c), at iwarp_ctx_create once ctx->attr holds the caller's
 * attributes: when the application installed no log hook and IWARP_LOG names a level, the
 * context's log becomes a writer to stderr or IWARP_LOG's file. Never fails: a value it cannot
 * use is reported on stderr once per process and logging stays off. */
void iwarp_api_diag_init(struct iwarp_ctx *ctx);

/* At iwarp_ctx_destroy (and a failed create, print false): prints the context's counters when
 * IWARP_STATS=1 asked for them, then closes the log file. */
void iwarp_api_diag_fini(struct iwarp_ctx *ctx, bool print);

/* Write s as text, two or three lines each starting with prefix, into buf (NUL-terminated,
 * truncated to cap). Returns the length written. For IWARP_STATS and the tools. */
size_t iwarp_api_stats_str(const struct iwarp_stats *s, const char *prefix, char *buf, size_t cap);

/* q starts using cq (lock held): once as its send CQ, once as its receive CQ (the same CQ
 * twice is one user). Keeps cq->n_users and cq->sole_qp. */
void iwarp_api_cq_use(struct iwarp_cq *cq, struct iwarp_qp_impl *q);

/* A QP stops using cq (lock held), once for each iwarp_api_cq_use. */
void iwarp_api_cq_unuse(struct iwarp_cq *cq);

/* A new QP joins ctx->qps (lock held). */
void iwarp_api_qp_link(struct iwarp_ctx *ctx, struct iwarp_qp_impl *q);

/* A QP about to be freed leaves ctx->qps (lock held), its counters added to ctx->retired. */
void iwarp_api_qp_unlink(struct iwarp_ctx *ctx, struct iwarp_qp_impl *q);

/* The name and section of a Terminate cause for a log line ("RDMAP/Remote Protection/Invalid
 * STag (RFC 5040 §4.8)"), in buf. Returns buf. */
const char *iwarp_api_cause_str(uint32_t cause, char *buf, size_t cap);

/* Log through the hook of a (log, log_user, log_level; printf-style): for iwarp_ctx_create,
 * before the context exists. */
void iwarp_api_log_attr(const struct iwarp_ctx_attr *a, enum iwarp_log_level level, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));

/* Queue an async event (lock held). */
void iwarp_api_async_push_locked(struct iwarp_ctx *ctx, const struct iwarp_async_event *ev);

/* iwarp_destroy_qp: drop the queued events that name qp (lock held); nobody may be handed a
 * pointer to a freed QP. */
void iwarp_api_async_drop_qp_locked(struct iwarp_ctx *ctx, const struct iwarp_qp *qp);

/* Give a CM id its QP as iwarp_cm_create_qp does (cm.c; takes the lock). IWARP_ERR_BUSY when
 * the id has one. */
struct iwarp_cm_id;
int iwarp_api_cm_set_qp(struct iwarp_cm_id *id, struct iwarp_qp *qp);

/* Let go of ctx->lock; then the system calls decided under it are made (iwarp_loop_unlock,
 * which runs iwarp_api_channels_sync as the loop's deferred work). Every holder of the lock
 * lets go of it through this, or through iwarp_loop_unlock. */
void iwarp_api_unlock(struct iwarp_ctx *ctx);

/* Make the fds of the channels on ctx->chan_sync follow their queues (verbs_cq.c). Called
 * without the lock, by the one thread that set ctx->chan_syncing; clears it. */
void iwarp_api_channels_sync(struct iwarp_ctx *ctx);

/*
 * I/O windows (docs/design.md, "Locking and progress"). A transport lets go of ctx->lock around a
 * system call that moves a connection's octets, while it alone owns that connection's I/O: open a
 * window (lock held; it is let go of), make the call, close it (the lock is held again). *epoch
 * keeps what the close needs.
 */
void iwarp_api_window_open(struct iwarp_ctx *ctx, uint8_t *epoch);
void iwarp_api_window_close(struct iwarp_ctx *ctx, uint8_t epoch);

/* Wait (lock held; let go of meanwhile) until iwarp_api_io_idle is called: a connection's I/O
 * owner let go of it. The caller looks again at what it waits for. */
void iwarp_api_io_wait(struct iwarp_ctx *ctx);
void iwarp_api_io_idle(struct iwarp_ctx *ctx);

/* A grace period (lock held; let go of meanwhile): every window open when it was called has
 * closed when it returns. Deregistering memory waits for one, so that no read that began
 * before still places octets into it. */
void iwarp_api_io_grace(struct iwarp_ctx *ctx);

/* ---- packet trace (trace.c) ---- */

/* At iwarp_ctx_create: opens ctx->trace from path (attr.trace_pcap), else from IWARP_PCAP (or
 * its deprecated alias IWARP_TRACE_PCAP); nothing when none names a file. The bound comes from
 * IWARP_PCAP_MAX. Logs the reason of a failure. Ownership: path is copied.
 * Returns 0, IWARP_ERR_INVAL (IWARP_PCAP_MAX not a size), IWARP_ERR_NOMEM, IWARP_ERR_PCAP. */
int iwarp_api_trace_open(struct iwarp_ctx *ctx, const char *path);

/* At iwarp_ctx_destroy (or a failed create): lets go of ctx->trace (NULL is fine), logging a
 * write failure. Returns 0 or IWARP_ERR_IO. */
int iwarp_api_trace_close(struct iwarp_ctx *ctx);

/* The capture file a connection of ctx set up now records into: ctx->trace, else the
 * process-wide trace (iwarp_trace_start), else NULL. Ownership: the caller gets a reference
 * (iwarp_trace_sink_release). */
struct iwarp_trace_sink *iwarp_api_trace_sink(struct iwarp_ctx *ctx);

/* A connection's iwarp_trace_bound_fn (trace/trace_conn.h): user is its iwarp_ctx; logs the
 * one line that says the process's bound stopped the trace. */
void iwarp_api_trace_bound(void *user, uint64_t bound);

#endif
