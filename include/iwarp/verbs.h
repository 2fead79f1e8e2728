/* SPDX-License-Identifier: BSD-2-Clause */
/* libiwarp verbs: context, protection domains, memory, completion queues, queue pairs.
 *
 * Shapes, names and numbering mirror libibverbs (ibv_X becomes iwarp_X), so RDMA code ports by
 * swapping the prefix. The one difference is the return convention: every int function returns
 * 0 or a negative IWARP_ERR_* (errors.h); objects come back through out-parameters.
 *
 * Completion semantics (RFC 5040 §5.5 leaves "complete" to the implementation):
 * - Send, Send with Invalidate and RDMA Write complete locally once their last octet has been
 *   handed to the lower layer (written to the TCP socket). This is what siw and iWARP RNICs do:
 *   TCP delivery, not remote placement. Use a following Send or Read to learn of placement.
 * - RDMA Read completes when the last Read Response has been placed in the local sink buffer.
 * - Receive completions report byte_len, and IWARP_WC_WITH_INV plus invalidated_rkey after a
 *   Send with Invalidate.
 * - Send queue completions are reported in posting order; so are receive completions.
 *
 * Threads: every function may be called from any thread. Posting and polling are serialised
 * per context by one lock, which the progress thread also takes while it moves data. The
 * comment layout is described in common.h.
 */
#ifndef IWARP_VERBS_H
#define IWARP_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include "iwarp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct iwarp_ctx;
struct iwarp_pd;
struct iwarp_mr;
struct iwarp_mw;
struct iwarp_cq;
struct iwarp_comp_channel;
struct iwarp_qp;
struct iwarp_srq;

/* ---- context ------------------------------------------------------------------------- */

/**
 * struct iwarp_mem_hooks - the allocator every allocation of a context goes through.
 *
 * All three functions or none (iwarp_ctx_attr.mem NULL: libc). calloc_fn must return zeroed
 * memory. The hooks may be called from any thread of the library, with the context lock held:
 * they must not call into libiwarp. Input struct (common.h).
 *
 * Used for every allocation the library makes, with these exceptions, all made with libc's
 * malloc/free, all but the last in DDP over SCTP (IWARP_PS_SCTP):
 * - usrsctp's own allocations (its stack, sockets, timers, packet buffers): usrsctp has no
 *   allocator hook;
 * - each SCTP message usrsctp hands over: usrsctp allocates its buffer with malloc and the
 *   library, which holds it until the message is placed, frees it with free (taking it into
 *   hooked memory would cost a copy per message). A message that arrives in pieces is put
 *   together in memory from the hooks;
 * - one process-wide table of pointers, one per remote UDP address any context's SCTP
 *   endpoints talk to: it is shared by every context, outlives the context whose endpoint grew
 *   it, and is freed with the last SCTP endpoint of the process, so no context's hooks fit;
 * - the copies of delayed packets that SCTP fault injection makes (the IWARP_SCTP_FAULT test
 *   hook): they are made in whichever context's call usrsctp sends the packet;
 * - a packet trace file's state (iwarp/trace.h): one per file per process, shared by every
 *   context that traces to it (each connection's trace buffers do come from the hooks).
 * A context's hooks are called only from the threads that call into the library with that
 * context and from its progress thread (with SCTP too: never in another context's call).
 */
struct iwarp_mem_hooks {
    void *(*malloc_fn)(size_t size, void *user);           /* malloc(3) */
    void *(*calloc_fn)(size_t n, size_t size, void *user); /* calloc(3) */
    void (*free_fn)(void *ptr, void *user);                /* free(3); never called with NULL */
    void *user;                                            /* passed to every hook */
    uint32_t comp_mask; /* extension fields set (common.h); none defined yet: 0 */
};

/**
 * enum iwarp_log_level - severity of a log line; a context passes lines at or below its
 * iwarp_ctx_attr.log_level.
 */
enum iwarp_log_level {
    IWARP_LOG_ERROR = 0, /* a call failed or data was lost */
    IWARP_LOG_WARN = 1,  /* something the application should know (a trace bound reached) */
    IWARP_LOG_INFO = 2,  /* connection and QP life (Terminates, fallbacks) */
    IWARP_LOG_DEBUG = 3, /* everything else */
};

/**
 * iwarp_log_fn - the log hook: where a context's log lines go.
 *
 * msg is one line without a trailing newline, valid during the call only. Called from any
 * library thread (the progress thread too), possibly with the context lock held: the hook must
 * not call into libiwarp. Without a hook the library writes nothing, unless the environment
 * asks for it (IWARP_LOG=level[:file], docs/environment.md; a hook, when set, wins over it).
 */
typedef void (*iwarp_log_fn)(void *user, enum iwarp_log_level level, const char *msg);

/**
 * iwarp_rng_fn - the random source for STag keys and the STag table's allocation order (RFC
 * 5042 §6.1.1): fills buf with len unpredictable octets. It cannot fail. Called with the
 * context lock held (or inside iwarp_ctx_create): it must not call into libiwarp.
 */
typedef void (*iwarp_rng_fn)(void *user, void *buf, size_t len);

/**
 * enum iwarp_progress_mode - who moves data.
 */
enum iwarp_progress_mode {
    /* A progress thread moves data and answers RDMA Reads without the application. */
    IWARP_PROGRESS_THREAD = 0,
    /* The application drives progress: iwarp_poll_cq() and iwarp_ctx_progress() do it. Lowest
     * latency when the application busy-polls; nothing moves while it does not call in. */
    IWARP_PROGRESS_CALLER = 1,
};

/**
 * struct iwarp_ctx_attr - how iwarp_ctx_create sets a context up.
 *
 * All-zero is valid (a zero field means its default, except log_level: zero is
 * IWARP_LOG_ERROR); iwarp_ctx_attr_default fills the same defaults with log_level
 * IWARP_LOG_WARN. Input struct (common.h).
 */
struct iwarp_ctx_attr {
    enum iwarp_progress_mode progress; /* default IWARP_PROGRESS_THREAD */
    uint32_t max_mr; /* STag table entries (MRs + MWs + 1), 2 .. 2^24 - 1; 0: 65536 */
    const struct iwarp_mem_hooks *mem; /* NULL: libc; the struct is copied */
    iwarp_log_fn log;                  /* NULL: no logging, or IWARP_LOG's (docs/environment.md) */
    void *log_user;                    /* passed to log */
    enum iwarp_log_level log_level;    /* lines at or below this level reach log */
    iwarp_rng_fn rng;                  /* NULL: getrandom() */
    void *rng_user;                    /* passed to rng */
    /* Packet trace (iwarp/trace.h): a capture file path (pcap) into which every TCP connection
     * of the context records its MPA stream, both directions, as a TCP conversation with its
     * real addresses and ports (SYN/SYN-ACK/ACK at connect, FIN or RST at close; each MPA frame
     * and FPDU as its own segment(s) of at most the EMSS, so Wireshark frames it). What goes on
     * the wire is unchanged. NULL: the environment variable IWARP_PCAP names the file if it is
     * set and not empty (IWARP_TRACE_PCAP: a deprecated alias), else the process-wide trace of
     * iwarp_trace_start() applies, if started, else no trace. One file per path per process:
     * contexts tracing to the same path share it (created or truncated when first opened, closed
     * when its last context or connection lets go). Bounded per process (IWARP_PCAP_MAX, default
     * 256 MiB): at the bound recording stops with one log line, the file stays valid. Read only
     * during iwarp_ctx_create, which fails with IWARP_ERR_PCAP when the file cannot be created
     * and IWARP_ERR_INVAL when IWARP_PCAP_MAX is not a size. */
    const char *trace_pcap;
    /* DDP over SCTP (IWARP_PS_SCTP, RFC 5043): SCTP streams each way per association, i.e. DDP
     * streams (QPs) one association carries at once (0: 16); and the network MTU the UDP-
     * encapsulated packets mimic (RFC 6951; 0: 1500; DDP segments never exceed what fits
     * unfragmented, RFC 5043 §9). */
    uint16_t sctp_streams;
    uint32_t sctp_mtu;
    uint32_t comp_mask; /* extension fields set (common.h): IWARP_CTX_ATTR_* bits */
    /* IWARP_CTX_ATTR_TX_BATCH: transmit batching of small posts over TCP, in microseconds. A
     * post leaves at once when its connection has written nothing for this long, or when the
     * peer has sent something since the connection's last write (an answer: request-response
     * exchanges never wait); any other post joins a batch, written (in writes of up to 16
     * FPDUs, back to back) when 64 posts wait, when the application next polls, waits on or
     * progresses a CQ of the context,
     * or this long after the batch began. 0 turns batching off (every post is written at once,
     * one system call each). Without the bit: 50 us. */
    uint32_t tx_batch_us;
    /* IWARP_CTX_ATTR_LLP_TIMEOUT: how long a connection may make no progress while data of
     * ours waits to go out before it is dropped: a peer that stopped reading (its process
     * hangs, or it is in IWARP_PROGRESS_CALLER mode and never calls in) or vanished. Over TCP:
     * how long octets we sent may stay unacknowledged, or unsent because the peer's receive
     * window stays shut (the socket's TCP_USER_TIMEOUT; the kernel checks at its
     * retransmission or window-probe times, so the drop comes up to a few hundred
     * milliseconds late). Over SCTP: how long an association with chunks unacknowledged or
     * held back may go without handing a chunk to SCTP or seeing SCTP's count of
     * unacknowledged chunks change; it is checked every eighth of the limit from the
     * context's progress, so the drop comes up to an eighth of the limit late, and the
     * association is aborted (SCTP ABORT), every QP on it with it. Either way the QP then
     * goes to the error state as for a lost connection: IWARP_EVENT_QP_FATAL, every WR not
     * completed flushed (IWARP_WC_WR_FLUSH_ERR), DISCONNECTED. A connection with nothing to
     * send is never dropped by this limit, however long its peer is silent. 0: no limit of
     * libiwarp's (TCP: the kernel's retransmission limit alone, about 15 minutes, and a peer
     * that acknowledges but never reads is kept for ever; SCTP: usrsctp's retransmission
     * limit alone, 10 retransmissions with a backoff to 60 s, about 6 minutes, and a peer
     * that acknowledges with a shut window is kept for ever). Without the bit: 60000 ms. */
    uint32_t llp_timeout_ms;
    /* IWARP_CTX_ATTR_MPA_PENDING_MAX: over TCP, how many accepted connections each listener of
     * the context keeps while their MPA Request is incomplete (not yet announced as
     * IWARP_CM_EVENT_CONNECT_REQUEST). A connection accepted beyond it resets the oldest of them
     * (an abortive close, logged at IWARP_LOG_INFO), so peers that connect and then stall,
     * trickle or vanish hold at most this many sockets per listener. A startup whose Request is
     * complete is announced and no longer counts. 0: no limit. Without the bit: 256. */
    uint32_t mpa_pending_max;
    /* IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT: over TCP, how long an accepted connection has, from
     * its accept, to deliver its complete MPA Request, and, when the peer-to-peer model was
     * negotiated, from iwarp_cm_accept to deliver its RTR (RFC 5044 §7.1.2 rules 8 and 10,
     * RFC 6581 §9.2), in milliseconds; then it is closed (one not yet announced silently). The
     * time the application takes to decide a CONNECT_REQUEST is not limited. 0: no limit (not
     * advised: only mpa_pending_max then bounds stalled startups). Without the bit: 10000 ms. The
     * active side's limit is per connection (iwarp_conn_param.timeout_ms). */
    uint32_t mpa_startup_timeout_ms;
};

/* iwarp_ctx_attr.comp_mask bits. */
#define IWARP_CTX_ATTR_TX_BATCH            (1u << 0) /* tx_batch_us is set */
#define IWARP_CTX_ATTR_LLP_TIMEOUT         (1u << 1) /* llp_timeout_ms is set */
#define IWARP_CTX_ATTR_MPA_PENDING_MAX     (1u << 2) /* mpa_pending_max is set */
#define IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT (1u << 3) /* mpa_startup_timeout_ms is set */

/**
 * iwarp_ctx_attr_default - fill attr with the defaults.
 *
 * Sets every field up to and including comp_mask: progress IWARP_PROGRESS_THREAD, max_mr
 * 65536, log_level IWARP_LOG_WARN, everything else 0 or NULL. Fields a later version appends
 * after comp_mask are left untouched (their defaults apply while their bits are clear), so a
 * caller built against this header never has more written than it has room for.
 *
 * Returns: nothing.
 * Ownership: attr is the caller's (non-NULL); nothing is kept.
 * Context: any thread, any time; no lock.
 */
IWARP_EXTERN void iwarp_ctx_attr_default(struct iwarp_ctx_attr *attr);

/**
 * iwarp_ctx_create - create a context: allocator, STag table, progress engine, async events.
 *
 * attr may be NULL for the defaults (iwarp_ctx_attr_default). With IWARP_PROGRESS_THREAD a
 * progress thread starts now. The packet trace file (attr->trace_pcap, else IWARP_PCAP) is
 * opened now. The environment is read now: IWARP_PCAP, IWARP_PCAP_MAX, and, for diagnostics,
 * IWARP_LOG (without attr->log: the context's own log writer, to stderr or a file) and
 * IWARP_STATS (docs/environment.md); a value of the last two it cannot use is reported on
 * stderr and ignored. On failure *ctx is NULL and nothing is left allocated; the reason of a
 * trace or comp_mask failure is logged through attr->log.
 *
 * Returns:
 *   0                    *ctx is the new context.
 *   IWARP_ERR_INVAL      ctx is NULL; progress is not a known mode; max_mr is 1 or over
 *                        2^24 - 1; mem is set but lacks one of its three functions;
 *                        IWARP_PCAP_MAX is set but is not a size.
 *   IWARP_ERR_NOTSUP     attr->comp_mask or attr->mem->comp_mask has a bit this version does
 *                        not know (common.h).
 *   IWARP_ERR_NOMEM      an allocation failed.
 *   IWARP_ERR_PCAP       the trace file cannot be created.
 *   IWARP_ERR_IO         an eventfd, the epoll set or the progress thread cannot be created.
 * Ownership: attr (and *attr->mem) is copied; attr->trace_pcap is read during the call only.
 *   The context belongs to the caller until iwarp_ctx_destroy.
 * Context: any thread. The hooks in attr may be called before it returns.
 */
IWARP_EXTERN int iwarp_ctx_create(const struct iwarp_ctx_attr *attr, struct iwarp_ctx **ctx);

/**
 * iwarp_ctx_destroy - destroy a context.
 *
 * Stops the progress thread (waiting for it), aborts SCTP associations still shutting down,
 * closes the context's trace file reference and frees everything. With IWARP_STATS=1 at its
 * creation, first writes its counters (iwarp_query_ctx_stats) to stderr or IWARP_LOG's file.
 *
 * Returns:
 *   0                    destroyed; ctx is gone.
 *   IWARP_ERR_INVAL      ctx is NULL.
 *   IWARP_ERR_BUSY       PDs, CQs, completion channels, CM channels or CM ids of the context
 *                        remain (destroy them first); nothing was done.
 * Ownership: ctx is freed on success.
 * Context: any thread, once no other thread uses the context or any of its objects; not from a
 *   hook of the context.
 */
IWARP_EXTERN int iwarp_ctx_destroy(struct iwarp_ctx *ctx);

/**
 * iwarp_ctx_progress - run the progress engine once.
 *
 * Reads and writes every ready connection and runs expired timers (MPA, linger, SCTP), after
 * waiting up to timeout_ms for readiness (0: do not wait, -1: until something happens). This
 * is how an IWARP_PROGRESS_CALLER context moves data while the application does not poll a
 * CQ. In IWARP_PROGRESS_THREAD mode it is not needed, and it is how a thread waits for data
 * that raises no completion (an RDMA Write into its memory): while it waits, the progress
 * thread stands aside, so the data wakes the waiting thread, which places it itself, instead
 * of waking the progress thread (as iwarp_get_cq_event and iwarp_cq_wait do).
 *
 * Returns:
 *   0                    done (whether or not anything was ready).
 *   IWARP_ERR_INVAL      ctx is NULL.
 * Ownership: none.
 * Context: any thread; waits without the context lock, takes it around the work. Blocks up to
 *   timeout_ms.
 */
IWARP_EXTERN int iwarp_ctx_progress(struct iwarp_ctx *ctx, int timeout_ms);

/**
 * enum iwarp_rdmap_ext - the RDMAP extensions of RFC 7306, as bits. Nothing on the wire says
 * whether a peer has them (RFC 7306 §1.1): a QP enables them for its connection
 * (iwarp_qp_init_attr.rdmap_ext) when the application knows the peer has them, or probes with
 * a FetchAdd of 0, which a peer without them answers with a Terminate.
 */
enum iwarp_rdmap_ext {
    IWARP_RDMAP_EXT_IMM_DATA = 1 << 0, /* Immediate Data (RFC 7306 §6): *_WITH_IMM, IMM_DATA */
    IWARP_RDMAP_EXT_ATOMICS = 1 << 1,  /* FetchAdd and CmpSwap, masked too (RFC 7306 §5) */
};

/**
 * enum iwarp_atomic_cap - the scope in which remote atomic operations are atomic, libibverbs
 * numbering (enum ibv_atomic_cap).
 */
enum iwarp_atomic_cap {
    IWARP_ATOMIC_NONE = 0, /* no atomics */
    IWARP_ATOMIC_HCA = 1,  /* among every atomic operation of the process (every QP, context) */
    IWARP_ATOMIC_GLOB = 2, /* also with every other access (never reported) */
};

/**
 * struct iwarp_device_attr - device limits, as ibv_query_device reports them. Output struct
 * (common.h).
 */
struct iwarp_device_attr {
    uint32_t max_qp_wr;           /* send or receive WRs per QP */
    uint32_t max_sge;             /* SGEs per send or receive WR */
    uint32_t max_sge_rd;          /* SGEs of an RDMA Read's sink (1) */
    uint32_t max_cqe;             /* entries per CQ */
    uint32_t max_mr;              /* STags (MRs + MWs): iwarp_ctx_attr.max_mr - 1 */
    uint32_t max_qp_rd_atom;      /* IRD */
    uint32_t max_qp_init_rd_atom; /* ORD */
    uint32_t max_srq_wr;          /* WRs per SRQ */
    uint32_t max_inline_data;     /* octets of an IWARP_SEND_INLINE WR */
    uint32_t comp_mask; /* output: extension fields filled (common.h): IWARP_DEVICE_ATTR_* */
    /* IWARP_DEVICE_ATTR_RDMAP_EXT: the RFC 7306 extensions a QP may enable
     * (iwarp_qp_init_attr.rdmap_ext): IWARP_RDMAP_EXT_* bits. */
    uint32_t rdmap_ext_cap;
    /* IWARP_DEVICE_ATTR_ATOMIC_CAP: the scope of atomicity (docs/design.md, "Atomics"). */
    enum iwarp_atomic_cap atomic_cap;
    /* IWARP_DEVICE_ATTR_MAX_ATOMIC: Atomic Requests outstanding per QP, inbound (answered at
     * once) and outbound (issued at once). RFC 7306 §5.2: they share the RDMA Read queues, so
     * these are the IRD and ORD limits, counted together with RDMA Reads. */
    uint32_t max_qp_atomic_in;
    uint32_t max_qp_atomic_out;
};

/* iwarp_device_attr.comp_mask bits. */
#define IWARP_DEVICE_ATTR_RDMAP_EXT  (1u << 0) /* rdmap_ext_cap is filled */
#define IWARP_DEVICE_ATTR_ATOMIC_CAP (1u << 1) /* atomic_cap is filled */
#define IWARP_DEVICE_ATTR_MAX_ATOMIC (1u << 2) /* max_qp_atomic_in and _out are filled */

/**
 * iwarp_query_device_sized - what iwarp_query_device calls: fill attr, attr_size octets long.
 *
 * Writes the base of struct iwarp_device_attr and each appended field that fits whole in
 * attr_size, and sets comp_mask to the bits of the appended fields written
 * (IWARP_DEVICE_ATTR_*). Call it
 * directly only where the inline wrapper cannot be used (a language binding): attr_size is the
 * size of the caller's struct.
 *
 * Returns:
 *   0                    *attr is filled.
 *   IWARP_ERR_INVAL      ctx or attr is NULL, or attr_size is smaller than the base; nothing
 *                        is written.
 * Ownership: attr is the caller's; nothing is kept.
 * Context: any thread; no lock (the limits are constant for the context's life).
 */
IWARP_EXTERN int iwarp_query_device_sized(struct iwarp_ctx *ctx, struct iwarp_device_attr *attr,
                                          size_t attr_size);

/**
 * iwarp_query_device - fill attr with the context's limits (ibv_query_device).
 *
 * attr need not be initialised: the wrapper passes sizeof *attr to iwarp_query_device_sized.
 *
 * Returns: as iwarp_query_device_sized.
 * Ownership: as iwarp_query_device_sized.
 * Context: as iwarp_query_device_sized.
 */
static inline int iwarp_query_device(struct iwarp_ctx *ctx, struct iwarp_device_attr *attr)
{
    return iwarp_query_device_sized(ctx, attr, sizeof *attr);
}

/* ---- protection domains and memory ---------------------------------------------------- */

/**
 * enum iwarp_access_flags - memory access rights, libibverbs numbering (enum
 * ibv_access_flags).
 */
enum iwarp_access_flags {
    IWARP_ACCESS_LOCAL_WRITE = 1,   /* local writes: receive buffers, Read sinks */
    IWARP_ACCESS_REMOTE_WRITE = 2,  /* RDMA Writes and Read Responses (needs LOCAL_WRITE) */
    IWARP_ACCESS_REMOTE_READ = 4,   /* RDMA Read sources */
    IWARP_ACCESS_REMOTE_ATOMIC = 8, /* RFC 7306 atomics (needs LOCAL_WRITE) */
    IWARP_ACCESS_MW_BIND = 16,      /* memory windows may be bound to the MR */
};

/**
 * iwarp_alloc_pd - allocate a protection domain.
 *
 * Returns:
 *   0                    *pd is the new PD.
 *   IWARP_ERR_INVAL      ctx or pd is NULL.
 *   IWARP_ERR_NOMEM      out of memory.
 * Ownership: the PD belongs to the caller until iwarp_dealloc_pd.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_alloc_pd(struct iwarp_ctx *ctx, struct iwarp_pd **pd);

/**
 * iwarp_dealloc_pd - free a protection domain.
 *
 * Returns:
 *   0                    freed.
 *   IWARP_ERR_INVAL      pd is NULL.
 *   IWARP_ERR_BUSY       MRs, MWs, QPs or SRQs of the PD remain; nothing was done.
 * Ownership: pd is freed on success.
 * Context: any thread; takes the context lock. No other thread may use pd during or after.
 */
IWARP_EXTERN int iwarp_dealloc_pd(struct iwarp_pd *pd);

/**
 * struct iwarp_mr - a memory region (ibv_mr). lkey == rkey == the STag (24-bit index << 8 |
 * 8-bit key). Library storage: read it, never allocate, copy or change it.
 */
struct iwarp_mr {
    struct iwarp_ctx *context;
    struct iwarp_pd *pd;
    void *addr;      /* the registered memory (NULL for iwarp_alloc_mr) */
    size_t length;   /* its length in octets */
    uint32_t handle; /* the STag as registered */
    uint32_t lkey;   /* the STag for local use; IWARP_WR_REG_MR changes its key at post */
    uint32_t rkey;   /* the STag to advertise to the peer (== lkey) */
};

/**
 * iwarp_reg_mr - register [addr, addr + length) with IWARP_ACCESS_* rights (ibv_reg_mr).
 *
 * The Tagged Offset of the region is the virtual address (ibv_reg_mr's iova == addr).
 * REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE. Under iWARP the sink of an RDMA Read is
 * written by tagged Read Responses, so it needs REMOTE_WRITE too.
 *
 * Returns:
 *   0                    *mr is the new region, valid at once.
 *   IWARP_ERR_INVAL      pd, addr or mr is NULL; length is 0; access has an unknown bit, or
 *                        REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE; the range wraps.
 *   IWARP_ERR_NOMEM      out of memory.
 *   IWARP_ERR_STAG_EXHAUSTED  every STag of the context is in use (iwarp_ctx_attr.max_mr).
 * Ownership: the memory stays the caller's and must stay valid until iwarp_dereg_mr returns 0.
 *   The MR belongs to the caller until then.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_reg_mr(struct iwarp_pd *pd, void *addr, size_t length, int access,
                              struct iwarp_mr **mr);

/**
 * iwarp_dereg_mr - deregister a memory region (from iwarp_reg_mr or iwarp_alloc_mr).
 *
 * Returns:
 *   0                    deregistered; the STag is invalid and mr is freed. Posted work
 *                        requests that still name it (sends not yet completed, receives not
 *                        yet consumed) do not hold it up, as on an RNIC: each fails with
 *                        IWARP_WC_LOC_PROT_ERR when it would touch the memory (a receive then
 *                        ends the connection with a Terminate, as a send cut short does) or is
 *                        flushed; none of them reads or writes the memory afterwards.
 *   IWARP_ERR_INVAL      mr is NULL.
 *   IWARP_ERR_BUSY       memory windows are bound to it; nothing was done.
 *   IWARP_ERR_STAG_INVALID  mr->lkey names no region of the context (a handle not from
 *                        iwarp_reg_mr/iwarp_alloc_mr, or already deregistered).
 * Ownership: mr is freed on success; the memory is the caller's again.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_dereg_mr(struct iwarp_mr *mr);

/**
 * iwarp_alloc_mr - allocate an STag with no memory behind it (the RDMA verbs' "Allocate STag").
 *
 * It becomes a region through an IWARP_WR_REG_MR work request (fast registration); until then
 * every access through it fails.
 *
 * Returns:
 *   0                    *mr is the new, invalid STag.
 *   IWARP_ERR_INVAL      pd or mr is NULL.
 *   IWARP_ERR_NOMEM      out of memory.
 *   IWARP_ERR_STAG_EXHAUSTED  every STag of the context is in use.
 * Ownership: the MR belongs to the caller until iwarp_dereg_mr.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_alloc_mr(struct iwarp_pd *pd, struct iwarp_mr **mr);

/**
 * enum iwarp_mw_type - memory window types: 1 binds through iwarp_bind_mw, 2 through an
 * IWARP_WR_BIND_MW work request and is then tied to that QP's stream (RFC 5042 §2.2.5).
 */
enum iwarp_mw_type { IWARP_MW_TYPE_1 = 1, IWARP_MW_TYPE_2 = 2 };

/**
 * struct iwarp_mw - a memory window (ibv_mw). Library storage: read it, never allocate, copy
 * or change it.
 */
struct iwarp_mw {
    struct iwarp_ctx *context;
    struct iwarp_pd *pd;
    uint32_t rkey;   /* the STag; every bind changes its key */
    uint32_t handle; /* the STag at allocation */
    enum iwarp_mw_type type;
};

/**
 * iwarp_alloc_mw - allocate a memory window of the given type (unbound: no access).
 *
 * Returns:
 *   0                    *mw is the new window.
 *   IWARP_ERR_INVAL      pd or mw is NULL, or type is not IWARP_MW_TYPE_1 or _2.
 *   IWARP_ERR_NOMEM      out of memory.
 *   IWARP_ERR_STAG_EXHAUSTED  every STag of the context is in use.
 * Ownership: the window belongs to the caller until iwarp_dealloc_mw.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_alloc_mw(struct iwarp_pd *pd, enum iwarp_mw_type type, struct iwarp_mw **mw);

/**
 * iwarp_dealloc_mw - free a memory window; a bound window is unbound first.
 *
 * Returns:
 *   0                    freed.
 *   IWARP_ERR_INVAL      mw is NULL.
 *   IWARP_ERR_STAG_INVALID  mw->rkey names no window of the context.
 * Ownership: mw is freed on success.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_dealloc_mw(struct iwarp_mw *mw);

/**
 * struct iwarp_mw_bind_info - what a window covers (ibv_mw_bind_info). Embedded in
 * iwarp_mw_bind and iwarp_send_wr: its layout is frozen (common.h).
 */
struct iwarp_mw_bind_info {
    struct iwarp_mr *mr;          /* the region the window lies in (IWARP_ACCESS_MW_BIND) */
    uint64_t addr;                /* first Tagged Offset of the window, inside mr */
    uint64_t length;              /* octets; 0 unbinds a type-1 window */
    unsigned int mw_access_flags; /* IWARP_ACCESS_REMOTE_* only */
};

/**
 * struct iwarp_mw_bind - a type-1 bind (ibv_mw_bind). Input struct (common.h).
 */
struct iwarp_mw_bind {
    uint64_t wr_id;                      /* reported by the completion */
    unsigned int send_flags;             /* IWARP_SEND_SIGNALED: complete on the send CQ */
    struct iwarp_mw_bind_info bind_info; /* what to bind */
    uint32_t comp_mask;                  /* extension fields set (common.h); none defined yet: 0 */
};

/**
 * iwarp_bind_mw - bind a type-1 window (a verb; type 2 binds through IWARP_WR_BIND_MW).
 *
 * Rotates the window's key (mw->rkey becomes iwarp_inc_rkey of it) and makes the window grant
 * bind_info's rights over its range; a length of 0 only invalidates the window. The bind takes
 * effect at once, whatever the QP's state (it need not be connected). When
 * bind->send_flags has IWARP_SEND_SIGNALED or the QP was created with sq_sig_all, an
 * IWARP_WC_BIND_MW completion with bind->wr_id is queued on the QP's send CQ; a failed bind
 * completes nothing.
 *
 * Returns:
 *   0                    bound; mw->rkey is the new STag.
 *   IWARP_ERR_INVAL      qp, mw or bind is NULL; mw is not type 1; mw_access_flags has a bit
 *                        other than IWARP_ACCESS_REMOTE_*.
 *   IWARP_ERR_NOTSUP     bind->comp_mask has a bit this version does not know.
 *   IWARP_ERR_STAG_INVALID  the window or bind_info.mr is not a live STag of the context, or
 *                        the MR is not valid (an unregistered iwarp_alloc_mr STag).
 *   IWARP_ERR_STAG_NOT_ASSOC  the window, the MR and the QP are not all of one PD.
 *   IWARP_ERR_MEM_ACCESS the MR lacks IWARP_ACCESS_MW_BIND, or a writable window would lie in
 *                        an MR without IWARP_ACCESS_LOCAL_WRITE.
 *   IWARP_ERR_MEM_TO_WRAP  addr + length wraps 64 bits.
 *   IWARP_ERR_MEM_BOUNDS the range is not inside the MR.
 * Ownership: bind is read during the call only; the window stays the caller's.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_bind_mw(struct iwarp_qp *qp, struct iwarp_mw *mw,
                               const struct iwarp_mw_bind *bind);

/**
 * iwarp_inc_rkey - the rkey with its 8-bit key rotated (ibv_inc_rkey): the STag a type-2 bind
 * or a fast registration may name next.
 *
 * Returns: the new STag.
 * Ownership: none.
 * Context: any thread; pure.
 */
static inline uint32_t iwarp_inc_rkey(uint32_t rkey)
{
    return (rkey & 0xFFFFFF00u) | ((rkey + 1u) & 0xFFu);
}

/* ---- completion queues ------------------------------------------------------------------ */

/**
 * enum iwarp_wc_status - completion status, libibverbs numbering (enum ibv_wc_status).
 */
enum iwarp_wc_status {
    IWARP_WC_SUCCESS = 0,
    IWARP_WC_LOC_LEN_ERR = 1,
    IWARP_WC_LOC_QP_OP_ERR = 2,
    IWARP_WC_LOC_EEC_OP_ERR = 3,
    IWARP_WC_LOC_PROT_ERR = 4,
    IWARP_WC_WR_FLUSH_ERR = 5,
    IWARP_WC_MW_BIND_ERR = 6,
    IWARP_WC_BAD_RESP_ERR = 7,
    IWARP_WC_LOC_ACCESS_ERR = 8,
    IWARP_WC_REM_INV_REQ_ERR = 9,
    IWARP_WC_REM_ACCESS_ERR = 10,
    IWARP_WC_REM_OP_ERR = 11,
    IWARP_WC_RETRY_EXC_ERR = 12,
    IWARP_WC_RNR_RETRY_EXC_ERR = 13,
    IWARP_WC_LOC_RDD_VIOL_ERR = 14,
    IWARP_WC_REM_INV_RD_REQ_ERR = 15,
    IWARP_WC_REM_ABORT_ERR = 16,
    IWARP_WC_INV_EECN_ERR = 17,
    IWARP_WC_INV_EEC_STATE_ERR = 18,
    IWARP_WC_FATAL_ERR = 19,
    IWARP_WC_RESP_TIMEOUT_ERR = 20,
    IWARP_WC_GENERAL_ERR = 21,
};

/**
 * iwarp_wc_status_str - the name of a completion status, as ibv_wc_status_str spells it
 * ("success", "remote access error", ...).
 *
 * Returns: a static string; "unknown" for a value not in enum iwarp_wc_status. Never NULL.
 * Ownership: the string is the library's; never free it.
 * Context: any thread; pure.
 */
IWARP_EXTERN const char *iwarp_wc_status_str(enum iwarp_wc_status status);

/**
 * enum iwarp_wc_opcode - what a completion completes, libibverbs numbering (enum ibv_wc_opcode)
 * plus the DDP-level interface's indications.
 */
enum iwarp_wc_opcode {
    IWARP_WC_SEND = 0,
    IWARP_WC_RDMA_WRITE = 1,
    IWARP_WC_RDMA_READ = 2,
    IWARP_WC_COMP_SWAP = 3,
    IWARP_WC_FETCH_ADD = 4,
    IWARP_WC_BIND_MW = 5,
    IWARP_WC_LOCAL_INV = 6,
    IWARP_WC_REG_MR = 8,
    IWARP_WC_RECV = 128,
    IWARP_WC_RECV_RDMA_WITH_IMM = 129,
    /* libiwarp: the DDP-level interface's indications (iwarp/ddp.h describes them). */
    IWARP_WC_DDP_RECV = 0x100,
    IWARP_WC_DDP_TAGGED_RECV = 0x101,
    IWARP_WC_DDP_SEND = 0x102,
};

/**
 * enum iwarp_wc_flags - iwarp_wc.wc_flags bits, libibverbs numbering.
 */
enum iwarp_wc_flags {
    IWARP_WC_GRH = 1 << 0,      /* never set (no GRH under iWARP) */
    IWARP_WC_WITH_IMM = 1 << 1, /* imm_data is valid */
    IWARP_WC_WITH_INV = 1 << 3, /* invalidated_rkey is valid (Send with Invalidate) */
};

/**
 * struct iwarp_wc - a work completion: struct ibv_wc's fields in its order, then libiwarp's
 * DDP-level fields (so the struct is larger than ibv_wc: a verbs shim converts arrays, it
 * cannot cast them). Fixed layout, polled in arrays: not extensible (common.h).
 */
struct iwarp_wc {
    uint64_t wr_id;              /* the WR's wr_id */
    enum iwarp_wc_status status; /* IWARP_WC_SUCCESS or why it failed */
    enum iwarp_wc_opcode opcode; /* what completed */
    uint32_t vendor_err; /* on errors: the RFC Terminate cause, layer << 16 | etype << 8 | code */
    uint32_t byte_len;   /* octets sent, read or received (0 on errors) */
    union {
        uint32_t imm_data;         /* IWARP_WC_WITH_IMM */
        uint32_t invalidated_rkey; /* IWARP_WC_WITH_INV */
    };
    uint32_t qp_num;        /* the QP's qp_num */
    uint32_t src_qp;        /* 0 */
    unsigned int wc_flags;  /* IWARP_WC_* flags */
    uint16_t pkey_index;    /* 0 */
    uint16_t slid;          /* 0 */
    uint8_t sl;             /* 0 */
    uint8_t dlid_path_bits; /* 0 */
    /* libiwarp: DDP-level indications (IWARP_WC_DDP_*, iwarp/ddp.h), or the whole Immediate
     * Data (IWARP_WC_WITH_IMM); zero otherwise. */
    union {
        IWARP_ANON_STRUCT
        {
            union {
                uint32_t ddp_qn;   /* IWARP_WC_DDP_RECV: the Queue Number */
                uint32_t ddp_stag; /* IWARP_WC_DDP_TAGGED_RECV: the STag */
            };
            uint32_t ddp_msn; /* IWARP_WC_DDP_RECV: the Message Sequence Number */
        };
        /* IWARP_WC_WITH_IMM: the 8 octets of RFC 7306 Immediate Data as a big-endian number
         * (octet 0 most significant); imm_data holds octets 0-3 as they came. */
        uint64_t imm_data64;
    };
    uint8_t ddp_rsvdulp[5]; /* RsvdULP as received: 5 octets untagged, [0] tagged */
};

/**
 * struct iwarp_comp_channel - a completion channel (ibv_comp_channel): a file descriptor that
 * becomes readable when an armed CQ attached to it gets a completion. Poll fd with poll/epoll,
 * then call iwarp_get_cq_event. Library storage: read it, never allocate, copy or change it.
 */
struct iwarp_comp_channel {
    struct iwarp_ctx *context;
    int fd;     /* readable while CQ events are pending; may be made O_NONBLOCK */
    int refcnt; /* unused (ibv_comp_channel compatibility) */
};

/**
 * iwarp_create_comp_channel - create a completion channel.
 *
 * Returns:
 *   0                    *channel is the new channel.
 *   IWARP_ERR_INVAL      ctx or channel is NULL.
 *   IWARP_ERR_NOMEM      out of memory.
 *   IWARP_ERR_IO         its eventfd cannot be created.
 * Ownership: the channel (and its fd) belongs to the caller until iwarp_destroy_comp_channel;
 *   never close the fd directly.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_create_comp_channel(struct iwarp_ctx *ctx,
                                           struct iwarp_comp_channel **channel);

/**
 * iwarp_destroy_comp_channel - destroy a completion channel and close its fd.
 *
 * Returns:
 *   0                    destroyed.
 *   IWARP_ERR_INVAL      channel is NULL.
 *   IWARP_ERR_BUSY       CQs are attached to it; nothing was done.
 * Ownership: channel is freed on success.
 * Context: any thread; takes the context lock. No thread may wait on it.
 */
IWARP_EXTERN int iwarp_destroy_comp_channel(struct iwarp_comp_channel *channel);

/**
 * iwarp_create_cq - create a completion queue of cqe entries (ibv_create_cq).
 *
 * channel (may be NULL) is where the CQ's events go once armed (iwarp_req_notify_cq);
 * cq_context is handed back by iwarp_get_cq_event; comp_vector is ignored. A completion that
 * finds the CQ full is lost: IWARP_EVENT_CQ_ERR is queued and logged.
 *
 * Returns:
 *   0                    *cq is the new CQ.
 *   IWARP_ERR_INVAL      ctx or cq is NULL; cqe is not 1 .. max_cqe
 *                        (iwarp_query_device); channel belongs to another context.
 *   IWARP_ERR_NOMEM      out of memory.
 * Ownership: cq_context and channel are borrowed for the CQ's life. The CQ belongs to the
 *   caller until iwarp_destroy_cq.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_create_cq(struct iwarp_ctx *ctx, int cqe, void *cq_context,
                                 struct iwarp_comp_channel *channel, int comp_vector,
                                 struct iwarp_cq **cq);

/**
 * iwarp_destroy_cq - destroy a completion queue; completions still in it are dropped.
 *
 * Returns:
 *   0                    destroyed.
 *   IWARP_ERR_INVAL      cq is NULL.
 *   IWARP_ERR_BUSY       QPs use it, or events taken with iwarp_get_cq_event are not all
 *                        acknowledged (iwarp_ack_cq_events); nothing was done.
 * Ownership: cq is freed on success.
 * Context: any thread; takes the context lock. No thread may poll or wait on it.
 */
IWARP_EXTERN int iwarp_destroy_cq(struct iwarp_cq *cq);

/**
 * iwarp_poll_cq - take up to num_entries completions, oldest first (ibv_poll_cq).
 *
 * In IWARP_PROGRESS_CALLER mode, when fewer than num_entries are queued it first runs the
 * progress engine once, without waiting. Never blocks otherwise.
 *
 * Returns:
 *   >= 0                 how many completions were written to wc[0 ..].
 *   IWARP_ERR_INVAL      cq is NULL, num_entries < 0, or wc is NULL with num_entries > 0.
 * Ownership: wc is the caller's array of num_entries; nothing is kept.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_poll_cq(struct iwarp_cq *cq, int num_entries, struct iwarp_wc *wc);

/**
 * iwarp_req_notify_cq - arm the CQ once (ibv_req_notify_cq).
 *
 * The CQ's channel fires for the next completion (solicited_only = 0) or for the next
 * solicited receive or error completion (solicited_only = 1); then the CQ is disarmed. Without
 * a channel nothing fires. Completions already queued do not fire it: poll after arming.
 *
 * Returns:
 *   0                    armed.
 *   IWARP_ERR_INVAL      cq is NULL.
 * Ownership: none.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_req_notify_cq(struct iwarp_cq *cq, int solicited_only);

/**
 * iwarp_get_cq_event - take the next CQ event of a channel (ibv_get_cq_event).
 *
 * Blocks until an armed CQ of the channel fires, unless the channel's fd was made non-blocking
 * (O_NONBLOCK). While it waits, the calling thread drives the context's progress itself, in
 * either progress mode (a progress thread stands aside meanwhile and comes back within a
 * millisecond once nobody waits): the data that produces its event wakes it directly. Each
 * event taken must be acknowledged (iwarp_ack_cq_events) before the CQ can be destroyed; the CQ
 * must be armed again for the next one.
 *
 * Returns:
 *   0                    *cq is the CQ that fired, *cq_context its cq_context.
 *   IWARP_ERR_INVAL      channel or cq is NULL.
 *   IWARP_ERR_BUSY       the fd is non-blocking and no event is pending (after one pass of
 *                        progress).
 * Ownership: the CQ stays the caller's; cq_context may be NULL (not wanted).
 * Context: any thread; waits without the context lock.
 */
IWARP_EXTERN int iwarp_get_cq_event(struct iwarp_comp_channel *channel, struct iwarp_cq **cq,
                                    void **cq_context);

/**
 * iwarp_get_cq_event_timeout - iwarp_get_cq_event with a timeout (-1: forever, 0: one pass of
 * progress), whatever the fd's O_NONBLOCK.
 *
 * Returns:
 *   0                    *cq is the CQ that fired, *cq_context its cq_context.
 *   IWARP_ERR_INVAL      channel or cq is NULL.
 *   IWARP_ERR_TIMEDOUT   no event within timeout_ms.
 * Ownership: as iwarp_get_cq_event.
 * Context: any thread; waits without the context lock.
 */
IWARP_EXTERN int iwarp_get_cq_event_timeout(struct iwarp_comp_channel *channel,
                                            struct iwarp_cq **cq, void **cq_context,
                                            int timeout_ms);

/**
 * iwarp_ack_cq_events - acknowledge nevents events taken for cq with iwarp_get_cq_event.
 *
 * Returns: nothing; a NULL cq is ignored.
 * Ownership: none.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN void iwarp_ack_cq_events(struct iwarp_cq *cq, unsigned int nevents);

/**
 * iwarp_cq_wait - wait up to timeout_ms (-1: forever) until the CQ has a completion.
 *
 * A "wait with timeout" independent of iwarp_req_notify_cq: it neither consumes nor creates
 * completion-channel events, and does not take the completion. The calling thread drives the
 * context's progress while it waits, as in iwarp_get_cq_event.
 *
 * Returns:
 *   0                    the CQ has completions to poll.
 *   IWARP_ERR_INVAL      cq is NULL.
 *   IWARP_ERR_TIMEDOUT   none came within timeout_ms.
 * Ownership: none.
 * Context: any thread, one waiter per CQ at a time; waits without the context lock.
 */
IWARP_EXTERN int iwarp_cq_wait(struct iwarp_cq *cq, int timeout_ms);

/* ---- queue pairs ---------------------------------------------------------------------------- */

/** enum iwarp_qp_type - QP types: iWARP has reliable connected QPs only. */
enum iwarp_qp_type { IWARP_QPT_RC = 2 };

/**
 * struct iwarp_qp_cap - a QP's queue sizes (ibv_qp_cap). Embedded in iwarp_qp_init_attr and
 * iwarp_qp_attr: its layout is frozen (common.h).
 */
struct iwarp_qp_cap {
    uint32_t max_send_wr;     /* send queue depth, 1 .. max_qp_wr */
    uint32_t max_recv_wr;     /* receive queue depth (0 with an SRQ); 0: 1 */
    uint32_t max_send_sge;    /* SGEs per send WR, up to max_sge; 0: 1 */
    uint32_t max_recv_sge;    /* SGEs per receive WR, up to max_sge; 0: 1 */
    uint32_t max_inline_data; /* octets an IWARP_SEND_INLINE WR may carry, up to max_inline_data */
};

/**
 * struct iwarp_qp_init_attr - how iwarp_create_qp makes a QP (ibv_qp_init_attr). Input struct
 * (common.h); cap is written back.
 */
struct iwarp_qp_init_attr {
    void *qp_context;           /* copied to iwarp_qp.qp_context */
    struct iwarp_cq *send_cq;   /* send completions (required) */
    struct iwarp_cq *recv_cq;   /* receive completions (required; may be send_cq) */
    struct iwarp_srq *srq;      /* NULL, or the SRQ of the same PD that feeds its receives */
    struct iwarp_qp_cap cap;    /* wanted; raised to what was allocated */
    enum iwarp_qp_type qp_type; /* IWARP_QPT_RC */
    int sq_sig_all;             /* non-zero: every send WR completes as if signaled */
    uint32_t comp_mask;         /* extension fields set (common.h): IWARP_QP_INIT_ATTR_* */
    /* IWARP_QP_INIT_ATTR_RDMAP_EXT: the RFC 7306 extensions this QP's connection uses
     * (IWARP_RDMAP_EXT_* bits, within iwarp_device_attr.rdmap_ext_cap). Without the bit: none.
     * Set it only when the peer is known to have them (RFC 7306 §1.1: an application-level
     * agreement); the QP then sends their messages and accepts them, where without the bit it
     * answers them with a Terminate (Unexpected OpCode) as an RFC 5040 RNIC does. */
    uint32_t rdmap_ext;
};

/* iwarp_qp_init_attr.comp_mask bits. */
#define IWARP_QP_INIT_ATTR_RDMAP_EXT (1u << 0) /* rdmap_ext is set */

/**
 * enum iwarp_qp_state - QP states, libibverbs numbering; the iWARP stream states map onto them:
 * IDLE = INIT/RTR, RUNNING = RTS, TERMINATING = SQE (Terminate sent or received),
 * CLOSING = SQD (graceful disconnect), ERROR/CLOSED = ERR.
 */
enum iwarp_qp_state {
    IWARP_QPS_RESET = 0,
    IWARP_QPS_INIT = 1,
    IWARP_QPS_RTR = 2,
    IWARP_QPS_RTS = 3,
    IWARP_QPS_SQD = 4,
    IWARP_QPS_SQE = 5,
    IWARP_QPS_ERR = 6,
};

/**
 * struct iwarp_qp - a queue pair (ibv_qp). Library storage: read it, never allocate, copy or
 * change it.
 */
struct iwarp_qp {
    struct iwarp_ctx *context;
    void *qp_context; /* iwarp_qp_init_attr.qp_context */
    struct iwarp_pd *pd;
    struct iwarp_cq *send_cq;
    struct iwarp_cq *recv_cq;
    struct iwarp_srq *srq;
    uint32_t handle;
    uint32_t qp_num;           /* reported in every completion (iwarp_wc.qp_num) */
    enum iwarp_qp_state state; /* as of the last iwarp_query_qp or iwarp_modify_qp_err */
    enum iwarp_qp_type qp_type;
};

/**
 * iwarp_create_qp - create a reliable connected QP (ibv_create_qp).
 *
 * The QP starts in IWARP_QPS_INIT. It moves data once the CM has connected it: create it for a
 * CM id with iwarp_cm_create_qp instead, or attach nothing (a QP made here has no connection).
 * Receives may be posted at once; sends fail with IWARP_ERR_STATE until it is connected.
 *
 * Returns:
 *   0                    *qp is the new QP; attr->cap is raised to what was allocated.
 *   IWARP_ERR_INVAL      pd, attr or qp is NULL; send_cq or recv_cq is NULL or of another
 *                        context; srq is of another PD; qp_type is not IWARP_QPT_RC;
 *                        max_send_wr is 0; a cap is over the device limit
 *                        (iwarp_query_device); rdmap_ext (with its bit) names an extension
 *                        not in iwarp_device_attr.rdmap_ext_cap.
 *   IWARP_ERR_NOTSUP     attr->comp_mask has a bit this version does not know; nothing else
 *                        was checked.
 *   IWARP_ERR_NOMEM      out of memory.
 * Ownership: attr is read (and cap written) during the call only; qp_context, the CQs and the
 *   SRQ are borrowed for the QP's life. The QP belongs to the caller until iwarp_destroy_qp.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_create_qp(struct iwarp_pd *pd, struct iwarp_qp_init_attr *attr,
                                 struct iwarp_qp **qp);

/**
 * iwarp_destroy_qp - destroy a QP (verbs or DDP-level).
 *
 * Its connection, if any, ends without a CM event as in iwarp_cm_destroy_qp (as
 * rdma_destroy_qp; an id already disconnecting, iwarp_cm_disconnect, still gets its
 * DISCONNECTED); a CM id that owned
 * it lets go of it (as after iwarp_cm_destroy_qp). Outstanding work requests are
 * flushed; their IWARP_WC_WR_FLUSH_ERR completions may remain in the CQs. Async events naming
 * the QP that were not yet taken are dropped.
 *
 * Returns:
 *   0                    destroyed.
 *   IWARP_ERR_INVAL      qp is NULL.
 * Ownership: qp is freed; memory its WRs borrowed is the caller's again.
 * Context: any thread; takes the context lock. No other thread may post to it meanwhile.
 */
IWARP_EXTERN int iwarp_destroy_qp(struct iwarp_qp *qp);

/**
 * struct iwarp_qp_attr - a QP's state and sizes (ibv_qp_attr's subset). Output struct
 * (common.h).
 */
struct iwarp_qp_attr {
    enum iwarp_qp_state qp_state; /* current state */
    struct iwarp_qp_cap cap;      /* as allocated */
    uint8_t max_rd_atomic;        /* ORD (negotiated once connected) */
    uint8_t max_dest_rd_atomic;   /* IRD (negotiated once connected) */
    uint32_t comp_mask; /* output: extension fields filled (common.h); none defined yet: 0 */
};

/**
 * iwarp_query_qp_sized - what iwarp_query_qp calls: fill attr, attr_size octets long.
 *
 * Writes the base of struct iwarp_qp_attr and each appended field that fits in attr_size, sets
 * comp_mask to the bits of the appended fields written (0 in this version), and updates
 * qp->state. Call it directly only where the inline wrapper cannot be used.
 *
 * Returns:
 *   0                    *attr is filled.
 *   IWARP_ERR_INVAL      qp or attr is NULL, or attr_size is smaller than the base; nothing
 *                        is written.
 * Ownership: attr is the caller's; nothing is kept.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_query_qp_sized(struct iwarp_qp *qp, struct iwarp_qp_attr *attr,
                                      size_t attr_size);

/**
 * iwarp_query_qp - fill attr with the QP's state and sizes (ibv_query_qp); qp->state follows.
 *
 * attr need not be initialised: the wrapper passes sizeof *attr to iwarp_query_qp_sized.
 *
 * Returns: as iwarp_query_qp_sized.
 * Ownership: as iwarp_query_qp_sized.
 * Context: as iwarp_query_qp_sized.
 */
static inline int iwarp_query_qp(struct iwarp_qp *qp, struct iwarp_qp_attr *attr)
{
    return iwarp_query_qp_sized(qp, attr, sizeof *attr);
}

/* ---- statistics ----------------------------------------------------------------------- */

/**
 * enum iwarp_term_class - the classes Terminates are counted under (iwarp_stats.term_sent,
 * term_received): one per Layer/EType of RFC 5040 §4.8 (RDMAP), RFC 5041 §7.2 (DDP) and
 * RFC 5044 §8 (LLP: MPA, which RFC 6581 §8 extends), and one for any other cause.
 */
enum iwarp_term_class {
    IWARP_TERM_CLASS_RDMAP_CATASTROPHIC = 0, /* RDMAP Local Catastrophic (layer 0, EType 0) */
    IWARP_TERM_CLASS_RDMAP_REMOTE_PROT = 1,  /* RDMAP Remote Protection (0/1): STag, bounds */
    IWARP_TERM_CLASS_RDMAP_REMOTE_OP = 2,    /* RDMAP Remote Operation (0/2): opcode, version */
    IWARP_TERM_CLASS_DDP_CATASTROPHIC = 3,   /* DDP Local Catastrophic (1/0) */
    IWARP_TERM_CLASS_DDP_TAGGED = 4,         /* DDP Tagged Buffer (1/1) */
    IWARP_TERM_CLASS_DDP_UNTAGGED = 5,       /* DDP Untagged Buffer (1/2): QN, MSN, no buffer */
    IWARP_TERM_CLASS_LLP_MPA = 6,            /* LLP MPA (2/0): CRC, marker, framing, RTR */
    IWARP_TERM_CLASS_OTHER = 7,              /* a cause outside the RFC tables */
    IWARP_TERM_CLASS_NUM = 8,                /* the number of classes */
};

/**
 * struct iwarp_stats - a QP's or a context's counters (iwarp_query_qp_stats,
 * iwarp_query_ctx_stats). Output struct (common.h).
 *
 * Counted since the QP was created (a QP) or the context was created (a context: the sum over
 * every QP it has had, destroyed ones included). Segments are DDP segments: one per MPA FPDU
 * over TCP, one per SCTP DATA message over SCTP. Octets are each segment's DDP payload: what
 * follows its 14-octet (tagged) or 18-octet (untagged) DDP header, so RDMAP's own headers
 * carried there (a Read Request, a Terminate) count; MPA framing, markers, CRCs and TCP/SCTP
 * headers do not. A counter never goes back.
 */
struct iwarp_stats {
    uint64_t tx_segments; /* DDP segments handed to the transport (MPA FPDUs over TCP) */
    uint64_t tx_bytes;    /* their DDP payload octets */
    uint64_t rx_segments; /* DDP segments received (with their header intact) */
    uint64_t rx_bytes;    /* their DDP payload octets */
    uint64_t crc_errors;  /* received FPDUs whose MPA CRC was wrong (RFC 5044 §8 code 2) */
    uint64_t flushed_wrs; /* work requests completed with IWARP_WC_WR_FLUSH_ERR */
    /* Terminates by enum iwarp_term_class: sent (decided by this side; the last one on a
     * stream that broke first may not reach the peer) and received from the peer. A DDP-level
     * QP (iwarp/ddp.h) neither sends nor receives Terminates: its are always 0. */
    uint64_t term_sent[IWARP_TERM_CLASS_NUM];
    uint64_t term_received[IWARP_TERM_CLASS_NUM];
    /* TCP retransmissions (Linux TCP_INFO: tcpi_bytes_retrans and tcpi_total_retrans) of the
     * QPs' connections, read when queried or when the connection closed; 0 over SCTP and
     * for a QP never connected. */
    uint64_t retrans_bytes;
    uint64_t retrans_segments;
    uint32_t qps;       /* QPs counted: 1 for a QP; for a context, every QP it has created */
    uint32_t comp_mask; /* output: extension fields filled (common.h); none defined yet: 0 */
};

/**
 * iwarp_query_qp_stats_sized - what iwarp_query_qp_stats calls: fill stats, stats_size octets.
 *
 * Writes the base of struct iwarp_stats with the QP's counters and sets comp_mask to the bits
 * of the appended fields written (0 in this version). The TCP retransmission counters are read
 * from the connection's socket now (getsockopt TCP_INFO), or were read when it closed. Call it
 * directly only where the inline wrapper cannot be used.
 *
 * Returns:
 *   0                    *stats is filled.
 *   IWARP_ERR_INVAL      qp or stats is NULL, or stats_size is smaller than the base; nothing
 *                        is written.
 * Ownership: stats is the caller's; nothing is kept.
 * Context: any thread; takes the context lock briefly (one getsockopt under it). The counters
 *   of a QP that moves data meanwhile are each exact, read at one instant.
 */
IWARP_EXTERN int iwarp_query_qp_stats_sized(struct iwarp_qp *qp, struct iwarp_stats *stats,
                                            size_t stats_size);

/**
 * iwarp_query_qp_stats - fill stats with the QP's counters (struct iwarp_stats).
 *
 * stats need not be initialised: the wrapper passes sizeof *stats to
 * iwarp_query_qp_stats_sized.
 *
 * Returns: as iwarp_query_qp_stats_sized.
 * Ownership: as iwarp_query_qp_stats_sized.
 * Context: as iwarp_query_qp_stats_sized.
 */
static inline int iwarp_query_qp_stats(struct iwarp_qp *qp, struct iwarp_stats *stats)
{
    return iwarp_query_qp_stats_sized(qp, stats, sizeof *stats);
}

/**
 * iwarp_query_ctx_stats_sized - what iwarp_query_ctx_stats calls: fill stats, stats_size
 * octets long.
 *
 * Writes the base of struct iwarp_stats with the sum over every QP of the context, live or
 * destroyed (RDMAP and DDP-level alike; a destroyed QP's counters as they were when it was
 * destroyed), and sets comp_mask to the bits of the appended fields written (0 in this
 * version). Call it directly only where the inline wrapper cannot be used.
 *
 * Returns:
 *   0                    *stats is filled.
 *   IWARP_ERR_INVAL      ctx or stats is NULL, or stats_size is smaller than the base; nothing
 *                        is written.
 * Ownership: stats is the caller's; nothing is kept.
 * Context: any thread; takes the context lock (one getsockopt per live TCP connection under
 *   it).
 */
IWARP_EXTERN int iwarp_query_ctx_stats_sized(struct iwarp_ctx *ctx, struct iwarp_stats *stats,
                                             size_t stats_size);

/**
 * iwarp_query_ctx_stats - fill stats with the context's counters (struct iwarp_stats).
 *
 * stats need not be initialised: the wrapper passes sizeof *stats to
 * iwarp_query_ctx_stats_sized. IWARP_STATS=1 in the environment prints the same counters when
 * the context is destroyed (docs/environment.md).
 *
 * Returns: as iwarp_query_ctx_stats_sized.
 * Ownership: as iwarp_query_ctx_stats_sized.
 * Context: as iwarp_query_ctx_stats_sized.
 */
static inline int iwarp_query_ctx_stats(struct iwarp_ctx *ctx, struct iwarp_stats *stats)
{
    return iwarp_query_ctx_stats_sized(ctx, stats, sizeof *stats);
}

/**
 * iwarp_modify_qp_err - move the QP to IWARP_QPS_ERR (the only transition not the CM's).
 *
 * Every outstanding WR is flushed (IWARP_WC_WR_FLUSH_ERR) and the connection, if any, is
 * closed abortively (TCP reset, or the SCTP stream's Terminate): its CM id then reports
 * DISCONNECTED, or CONNECT_ERROR while it was still connecting. WRs posted later complete with
 * IWARP_WC_WR_FLUSH_ERR.
 *
 * Returns:
 *   0                    the QP is in error (also when it already was).
 *   IWARP_ERR_INVAL      qp is NULL.
 * Ownership: none.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_modify_qp_err(struct iwarp_qp *qp);

/**
 * struct iwarp_sge - a scatter/gather element (ibv_sge): length octets at addr inside the MR
 * whose lkey is given. Fixed layout (common.h).
 */
struct iwarp_sge {
    uint64_t addr;   /* virtual address */
    uint32_t length; /* octets; 0 is allowed and names no memory */
    uint32_t lkey;   /* an MR of the QP's PD */
};

/**
 * enum iwarp_wr_opcode - send work request opcodes, libibverbs numbering, then libiwarp's.
 * Posting accepts RDMA_WRITE, SEND, RDMA_READ, LOCAL_INV, BIND_MW, SEND_WITH_INV and REG_MR
 * always; the RFC 7306 ones only on a QP that enabled them (iwarp_qp_init_attr.rdmap_ext,
 * else IWARP_ERR_RDMAP_EXT_OFF):
 *  - RDMA_WRITE_WITH_IMM: an RDMA Write, then an Immediate Data message (with SE when
 *    IWARP_SEND_SOLICITED) carrying imm_data in its octets 0-3 and zeros in 4-7. One receive
 *    is consumed at the peer, which completes IWARP_WC_RECV_RDMA_WITH_IMM after the Write is
 *    placed (RFC 7306 §7). The send completion is IWARP_WC_RDMA_WRITE.
 *  - IMM_DATA (libiwarp): the Immediate Data message alone, its 8 octets from imm_data64
 *    (big-endian). Completes IWARP_WC_SEND.
 *  - ATOMIC_FETCH_AND_ADD, ATOMIC_CMP_AND_SWP: RFC 7306 FetchAdd (Add Mask 0) and CmpSwap
 *    (all-ones masks) on the peer's 8 aligned octets at wr.atomic; the original value is
 *    written to the one 8-octet SGE (LOCAL_WRITE). Completes IWARP_WC_FETCH_ADD/_COMP_SWAP.
 *  - MASKED_ATOMIC_FETCH_AND_ADD, MASKED_ATOMIC_CMP_AND_SWP (libiwarp; the Linux kernel's
 *    masked atomics): the same with the masks of masked_atomic.
 * SEND_WITH_IMM is refused (IWARP_ERR_NOTSUP): RFC 7306 has no Send with Immediate Data, and
 * a Send followed by an Immediate Data message would consume two receives at the peer where a
 * verbs application expects one (docs/design.md, "Immediate Data"). TSO and DRIVER1 are
 * refused with IWARP_ERR_INVAL.
 */
enum iwarp_wr_opcode {
    IWARP_WR_RDMA_WRITE = 0,
    IWARP_WR_RDMA_WRITE_WITH_IMM = 1,
    IWARP_WR_SEND = 2,
    IWARP_WR_SEND_WITH_IMM = 3,
    IWARP_WR_RDMA_READ = 4,
    IWARP_WR_ATOMIC_CMP_AND_SWP = 5,
    IWARP_WR_ATOMIC_FETCH_AND_ADD = 6,
    IWARP_WR_LOCAL_INV = 7,
    IWARP_WR_BIND_MW = 8,
    IWARP_WR_SEND_WITH_INV = 9,
    IWARP_WR_TSO = 10,
    IWARP_WR_DRIVER1 = 11,
    /* libiwarp: fast-register an STag from iwarp_alloc_mr (libibverbs: IB_WR_REG_MR). */
    IWARP_WR_REG_MR = 12,
    /* libiwarp: RFC 7306 masked atomics and the Immediate Data message alone (see above). */
    IWARP_WR_MASKED_ATOMIC_CMP_AND_SWP = 13,
    IWARP_WR_MASKED_ATOMIC_FETCH_AND_ADD = 14,
    IWARP_WR_IMM_DATA = 15,
};

/**
 * enum iwarp_send_flags - iwarp_send_wr.send_flags bits, libibverbs numbering.
 */
enum iwarp_send_flags {
    IWARP_SEND_FENCE = 1 << 0,     /* wait for earlier RDMA Reads to complete first */
    IWARP_SEND_SIGNALED = 1 << 1,  /* complete on the send CQ (always with sq_sig_all) */
    IWARP_SEND_SOLICITED = 1 << 2, /* Send with Solicited Event (RFC 5040 §4.3) */
    IWARP_SEND_INLINE = 1 << 3,    /* copy the data at post (up to max_inline_data) */
};

/**
 * struct iwarp_send_wr - a send work request (ibv_send_wr). Fixed layout, posted in lists: not
 * extensible (common.h).
 */
struct iwarp_send_wr {
    uint64_t wr_id;              /* reported by the completion */
    struct iwarp_send_wr *next;  /* the next WR of the list, or NULL */
    struct iwarp_sge *sg_list;   /* the data (source; RDMA_READ: the one sink SGE) */
    int num_sge;                 /* entries of sg_list */
    enum iwarp_wr_opcode opcode; /* what to do */
    unsigned int send_flags;     /* IWARP_SEND_* */
    union {
        uint32_t imm_data;        /* RDMA_WRITE_WITH_IMM: Immediate Data octets 0-3 */
        uint32_t invalidate_rkey; /* SEND_WITH_INV: the peer's STag; LOCAL_INV: ours */
    };
    union {
        struct {
            uint64_t remote_addr; /* RDMA_WRITE / RDMA_READ: the peer's Tagged Offset */
            uint32_t rkey;        /* ... and its STag */
        } rdma;
        struct {
            uint64_t remote_addr; /* the peer's Tagged Offset of the 8 octets */
            uint64_t compare_add; /* FetchAdd: Add Data; CmpSwap: Compare Data */
            uint64_t swap;        /* CmpSwap: Swap Data */
            uint32_t rkey;        /* the peer's STag (IWARP_ACCESS_REMOTE_ATOMIC) */
        } atomic;                 /* the atomics */
    } wr;
    union {
        struct {
            struct iwarp_mw *mw;                 /* a type-2 window */
            uint32_t rkey;                       /* its new STag (iwarp_inc_rkey) */
            struct iwarp_mw_bind_info bind_info; /* what it covers */
        } bind_mw;
        /* IWARP_WR_REG_MR. Posting it sets mr->lkey/rkey to the STag with the new key (as the
         * kernel's ib_update_fast_reg_key); likewise IWARP_WR_BIND_MW sets mw->rkey to
         * bind_mw.rkey. */
        struct {
            struct iwarp_mr *mr; /* from iwarp_alloc_mr */
            uint32_t key;        /* the new 8-bit key */
            void *addr;
            uint64_t length;
            unsigned int access;
        } reg;
        /* IWARP_WR_MASKED_ATOMIC_*: the RFC 7306 §5.1 masks (the kernel's compare_add_mask and
         * swap_mask). FetchAdd: compare_add_mask is the Add Mask (a set bit ends a field: no
         * carry out of it), swap_mask unused. CmpSwap: compare_add_mask is the Compare Mask,
         * swap_mask the Swap Mask. */
        struct {
            uint64_t compare_add_mask;
            uint64_t swap_mask;
        } masked_atomic;
        uint64_t imm_data64; /* IWARP_WR_IMM_DATA: the 8 octets, big-endian */
    };
};

/**
 * struct iwarp_recv_wr - a receive work request (ibv_recv_wr). Fixed layout (common.h).
 */
struct iwarp_recv_wr {
    uint64_t wr_id;             /* reported by the completion */
    struct iwarp_recv_wr *next; /* the next WR of the list, or NULL */
    struct iwarp_sge *sg_list;  /* where the message goes (IWARP_ACCESS_LOCAL_WRITE MRs) */
    int num_sge;                /* entries of sg_list, up to max_recv_sge */
};

/**
 * iwarp_post_send - post a linked list of send work requests, in order (ibv_post_send).
 *
 * Each WR is checked and queued; the first that fails stops the list (those before it stay
 * posted). What can be sent is sent from the calling thread before it returns. RDMA Reads and
 * atomics are outstanding at most ORD at once; the next waits in the send queue, and the WRs
 * behind it with it. While half the ORD or more are outstanding and they ask for 256 KiB or
 * more together, a new one waits too, until half of them have completed; the waiting ones then
 * go together (one system call, not one per completion). On a QP in error (Terminate sent or
 * received, iwarp_modify_qp_err, connection lost) posting succeeds and the WR completes with
 * IWARP_WC_WR_FLUSH_ERR. Posting IWARP_WR_REG_MR updates the MR's lkey/rkey, IWARP_WR_BIND_MW
 * the window's rkey, at once.
 *
 * Returns:
 *   0                    every WR is posted; *bad_wr is NULL.
 *   IWARP_ERR_INVAL      qp or wr is NULL; a WR is malformed: unknown send_flags,
 *                        num_sge < 0 or over max_send_sge, sg_list NULL with num_sge > 0,
 *                        inline data over max_inline_data, an RDMA Read with INLINE or more
 *                        than one SGE, or on a connection whose ORD is 0 (initiator_depth
 *                        0: no Read could ever be issued), BIND_MW/REG_MR without its
 *                        window/MR, a message of 2^32 octets or more, an opcode not
 *                        supported (TSO, DRIVER1); an atomic whose sink is not one 8-octet
 *                        SGE, or on a connection whose ORD is 0; IMM_DATA with SGEs.
 *   IWARP_ERR_NOTSUP     IWARP_WR_SEND_WITH_IMM (RFC 7306 has no Send with Immediate Data).
 *   IWARP_ERR_RDMAP_EXT_OFF  an RFC 7306 opcode (atomics, RDMA_WRITE_WITH_IMM, IMM_DATA) on a
 *                        QP that did not enable its extension (iwarp_qp_init_attr.rdmap_ext).
 *   IWARP_ERR_STATE      the QP is not connected yet, or a graceful disconnect is under way.
 *   IWARP_ERR_NOSPC      the send queue is full (max_send_wr WRs not yet completed).
 *   IWARP_ERR_DDP_QP_MODE  qp is a DDP-level QP (iwarp/ddp.h).
 *   IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_MEM_ACCESS,
 *   IWARP_ERR_MEM_BOUNDS, IWARP_ERR_MEM_TO_WRAP  an SGE's lkey is not a valid MR of the QP's
 *                        PD, lacks LOCAL_WRITE (a Read sink), or the SGE is outside it.
 *   On failure *bad_wr (if bad_wr is not NULL) is the first WR not posted.
 * Ownership: the WRs and SGE lists are read during the call only; the memory the SGEs name is
 *   borrowed until the WR's completion (deregistering its MR meanwhile succeeds, and the WR
 *   then fails with IWARP_WC_LOC_PROT_ERR without touching the memory: iwarp_dereg_mr).
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_post_send(struct iwarp_qp *qp, struct iwarp_send_wr *wr,
                                 struct iwarp_send_wr **bad_wr);

/**
 * iwarp_post_recv - post a linked list of receive work requests, in order (ibv_post_recv).
 *
 * Receives may be posted before the QP is connected. On a QP in error they complete at once
 * with IWARP_WC_WR_FLUSH_ERR.
 *
 * Returns:
 *   0                    every WR is posted; *bad_wr is NULL.
 *   IWARP_ERR_INVAL      qp or wr is NULL; the QP uses an SRQ; num_sge < 0 or over
 *                        max_recv_sge; sg_list NULL with num_sge > 0; the SGEs total 2^32
 *                        octets or more.
 *   IWARP_ERR_NOSPC      the receive queue is full.
 *   IWARP_ERR_DDP_QP_MODE  qp is a DDP-level QP (use iwarp_ddp_post_recv).
 *   IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_MEM_ACCESS,
 *   IWARP_ERR_MEM_BOUNDS, IWARP_ERR_MEM_TO_WRAP  an SGE is not inside a LOCAL_WRITE MR of the
 *                        QP's PD.
 *   On failure *bad_wr (if bad_wr is not NULL) is the first WR not posted.
 * Ownership: the WRs are read during the call only; the memory is borrowed until the
 *   completion.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_post_recv(struct iwarp_qp *qp, struct iwarp_recv_wr *wr,
                                 struct iwarp_recv_wr **bad_wr);

/* ---- shared receive queues ------------------------------------------------------------ */

/**
 * struct iwarp_srq_attr - an SRQ's sizes and limit (ibv_srq_attr). Embedded in
 * iwarp_srq_init_attr: its layout is frozen (common.h); iwarp_modify_srq's attr_mask names its
 * valid fields.
 */
struct iwarp_srq_attr {
    uint32_t max_wr;    /* receives it holds, 1 .. max_srq_wr */
    uint32_t max_sge;   /* SGEs per receive, up to max_sge; 0: 1 */
    uint32_t srq_limit; /* 0: no limit event; else one event when fewer remain */
};

/**
 * struct iwarp_srq_init_attr - how iwarp_create_srq makes an SRQ (ibv_srq_init_attr). Input
 * struct (common.h); attr.max_sge is written back.
 */
struct iwarp_srq_init_attr {
    void *srq_context;          /* kept with the SRQ */
    struct iwarp_srq_attr attr; /* sizes and limit */
    uint32_t comp_mask;         /* extension fields set (common.h); none defined yet: 0 */
};

/**
 * enum iwarp_srq_attr_mask - which fields iwarp_modify_srq changes.
 */
enum iwarp_srq_attr_mask { IWARP_SRQ_MAX_WR = 1 << 0, IWARP_SRQ_LIMIT = 1 << 1 };

/**
 * iwarp_create_srq - create a shared receive queue (ibv_create_srq).
 *
 * QPs of the same PD created with it take their receives from it in posting order.
 *
 * Returns:
 *   0                    *srq is the new SRQ; attr->attr.max_sge is raised to 1 if it was 0.
 *   IWARP_ERR_INVAL      pd, attr or srq is NULL; max_wr is 0 or over max_srq_wr; max_sge is
 *                        over max_sge; srq_limit is over max_wr.
 *   IWARP_ERR_NOTSUP     attr->comp_mask has a bit this version does not know; nothing else
 *                        was checked.
 *   IWARP_ERR_NOMEM      out of memory.
 * Ownership: attr is read during the call only; the SRQ belongs to the caller until
 *   iwarp_destroy_srq.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_create_srq(struct iwarp_pd *pd, struct iwarp_srq_init_attr *attr,
                                  struct iwarp_srq **srq);

/**
 * iwarp_modify_srq - change an SRQ (ibv_modify_srq): IWARP_SRQ_LIMIT arms the limit, one
 * IWARP_EVENT_SRQ_LIMIT_REACHED when fewer than srq_limit receives remain (0 disarms).
 *
 * Returns:
 *   0                    done.
 *   IWARP_ERR_INVAL      srq or attr is NULL; attr_mask has an unknown bit; srq_limit is over
 *                        the SRQ's max_wr.
 *   IWARP_ERR_NOTSUP     attr_mask has IWARP_SRQ_MAX_WR (resizing is not supported).
 * Ownership: attr is read during the call only.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_modify_srq(struct iwarp_srq *srq, struct iwarp_srq_attr *attr,
                                  int attr_mask);

/**
 * iwarp_query_srq - fill attr with the SRQ's max_wr, max_sge and current srq_limit (0 once the
 * limit event has fired).
 *
 * Returns:
 *   0                    *attr is filled.
 *   IWARP_ERR_INVAL      srq or attr is NULL.
 * Ownership: attr is the caller's; nothing is kept.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_query_srq(struct iwarp_srq *srq, struct iwarp_srq_attr *attr);

/**
 * iwarp_destroy_srq - destroy an SRQ; receives still posted to it are dropped without
 * completions, and their memory is released.
 *
 * Returns:
 *   0                    destroyed.
 *   IWARP_ERR_INVAL      srq is NULL.
 *   IWARP_ERR_BUSY       QPs use it; nothing was done.
 * Ownership: srq is freed on success.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_destroy_srq(struct iwarp_srq *srq);

/**
 * iwarp_post_srq_recv - post a linked list of receive work requests to an SRQ, in order.
 *
 * Returns:
 *   0                    every WR is posted; *bad_wr is NULL.
 *   IWARP_ERR_INVAL      srq or wr is NULL; num_sge < 0 or over the SRQ's max_sge; sg_list
 *                        NULL with num_sge > 0; the SGEs total 2^32 octets or more.
 *   IWARP_ERR_NOSPC      the SRQ is full.
 *   IWARP_ERR_STAG_INVALID, IWARP_ERR_STAG_NOT_ASSOC, IWARP_ERR_MEM_ACCESS,
 *   IWARP_ERR_MEM_BOUNDS, IWARP_ERR_MEM_TO_WRAP  an SGE is not inside a LOCAL_WRITE MR of the
 *                        SRQ's PD.
 *   On failure *bad_wr (if bad_wr is not NULL) is the first WR not posted.
 * Ownership: the WRs are read during the call only; the memory is borrowed until the
 *   completion (or iwarp_destroy_srq).
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_post_srq_recv(struct iwarp_srq *srq, struct iwarp_recv_wr *wr,
                                     struct iwarp_recv_wr **bad_wr);

/* ---- asynchronous events -------------------------------------------------------------- */

/**
 * enum iwarp_event_type - async event types, libibverbs numbering (enum ibv_event_type). The
 * library reports CQ_ERR (a CQ overran), QP_FATAL and QP_ACCESS_ERR (a Terminate sent or
 * received, a lost connection; QP_ACCESS_ERR for protection errors), SRQ_LIMIT_REACHED and
 * QP_LAST_WQE_REACHED (an SRQ-attached QP in error has no more receives).
 */
enum iwarp_event_type {
    IWARP_EVENT_CQ_ERR = 0,
    IWARP_EVENT_QP_FATAL = 1,
    IWARP_EVENT_QP_REQ_ERR = 2,
    IWARP_EVENT_QP_ACCESS_ERR = 3,
    IWARP_EVENT_COMM_EST = 4,
    IWARP_EVENT_SQ_DRAINED = 5,
    IWARP_EVENT_PATH_MIG = 6,
    IWARP_EVENT_PATH_MIG_ERR = 7,
    IWARP_EVENT_DEVICE_FATAL = 8,
    IWARP_EVENT_PORT_ACTIVE = 9,
    IWARP_EVENT_PORT_ERR = 10,
    IWARP_EVENT_LID_CHANGE = 11,
    IWARP_EVENT_PKEY_CHANGE = 12,
    IWARP_EVENT_SM_CHANGE = 13,
    IWARP_EVENT_SRQ_ERR = 14,
    IWARP_EVENT_SRQ_LIMIT_REACHED = 15,
    IWARP_EVENT_QP_LAST_WQE_REACHED = 16,
    IWARP_EVENT_CLIENT_REREGISTER = 17,
    IWARP_EVENT_GID_CHANGE = 18,
    IWARP_EVENT_WQ_FATAL = 19,
};

/**
 * struct iwarp_async_event - an async event (ibv_async_event). Output struct (common.h).
 */
struct iwarp_async_event {
    union {
        struct iwarp_cq *cq;   /* IWARP_EVENT_CQ_ERR */
        struct iwarp_qp *qp;   /* QP events */
        struct iwarp_srq *srq; /* IWARP_EVENT_SRQ_LIMIT_REACHED */
        int port_num;
    } element;
    enum iwarp_event_type event_type;
    /* libiwarp: for QP errors, the Terminate cause (layer << 16 | etype << 8 | code) sent or
     * received, and whether the peer sent it. */
    uint32_t term_cause;
    bool term_from_peer;
    uint32_t comp_mask; /* output: extension fields filled (common.h); none defined yet: 0 */
};

/**
 * iwarp_async_fd - the context's async event fd: readable while iwarp_get_async_event has an
 * event.
 *
 * Returns:
 *   >= 0                 the fd.
 *   IWARP_ERR_INVAL      ctx is NULL.
 * Ownership: the fd is the library's; poll it, never read, write or close it.
 * Context: any thread; no lock.
 */
IWARP_EXTERN int iwarp_async_fd(struct iwarp_ctx *ctx);

/**
 * iwarp_get_async_event_sized - what iwarp_get_async_event calls: take the next event into
 * event, event_size octets long.
 *
 * Writes the base of struct iwarp_async_event and each appended field that fits in event_size,
 * and sets comp_mask to the bits of the appended fields written (0 in this version). Events are
 * kept in order, up to 1024; further ones are lost and logged. Never blocks.
 *
 * Returns:
 *   0                    *event is the oldest pending event, now taken.
 *   IWARP_ERR_INVAL      ctx or event is NULL, or event_size is smaller than the base.
 *   IWARP_ERR_BUSY       no event is pending.
 * Ownership: event is the caller's. The objects it names stay the caller's; an event naming a
 *   QP is dropped, not delivered, once that QP is destroyed.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_get_async_event_sized(struct iwarp_ctx *ctx, struct iwarp_async_event *event,
                                             size_t event_size);

/**
 * iwarp_get_async_event - take the next async event (ibv_get_async_event, but never blocking:
 * wait for iwarp_async_fd to become readable).
 *
 * event need not be initialised: the wrapper passes sizeof *event to
 * iwarp_get_async_event_sized.
 *
 * Returns: as iwarp_get_async_event_sized.
 * Ownership: as iwarp_get_async_event_sized.
 * Context: as iwarp_get_async_event_sized.
 */
static inline int iwarp_get_async_event(struct iwarp_ctx *ctx, struct iwarp_async_event *event)
{
    return iwarp_get_async_event_sized(ctx, event, sizeof *event);
}

/**
 * iwarp_ack_async_event - acknowledge an event (ibv_ack_async_event). Events hold no
 * reference, so this does nothing; it is kept for porting.
 *
 * Returns: nothing.
 * Ownership: none.
 * Context: any thread.
 */
IWARP_EXTERN void iwarp_ack_async_event(struct iwarp_async_event *event);

/**
 * iwarp_event_type_str - the name of an async event type, as ibv_event_type_str spells it.
 *
 * Returns: a static string; "unknown" for a value not in enum iwarp_event_type. Never NULL.
 * Ownership: the string is the library's.
 * Context: any thread; pure.
 */
IWARP_EXTERN const char *iwarp_event_type_str(enum iwarp_event_type type);

#ifdef __cplusplus
}
#endif
#endif
