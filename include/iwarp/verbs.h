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
 * per context by one lock, which the progress thread also takes while it moves data.
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

/*
 * Allocator hooks (all three or none). Used for every allocation the library makes, with these
 * exceptions, all in DDP over SCTP (IWARP_PS_SCTP) and all made with libc's malloc/free:
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
 *   hook): they are made in whichever context's call usrsctp sends the packet.
 * A context's hooks are called only from the threads that call into the library with that
 * context and from its progress thread (with SCTP too: never in another context's call).
 */
struct iwarp_mem_hooks {
    void *(*malloc_fn)(size_t size, void *user);
    void *(*calloc_fn)(size_t n, size_t size, void *user);
    void (*free_fn)(void *ptr, void *user);
    void *user;
};

enum iwarp_log_level {
    IWARP_LOG_ERROR = 0,
    IWARP_LOG_WARN = 1,
    IWARP_LOG_INFO = 2,
    IWARP_LOG_DEBUG = 3,
};

/* Log hook: the library never writes to stderr by itself. msg has no trailing newline. */
typedef void (*iwarp_log_fn)(void *user, enum iwarp_log_level level, const char *msg);

/* Random source for STag keys: fills buf with len unpredictable octets. */
typedef void (*iwarp_rng_fn)(void *user, void *buf, size_t len);

enum iwarp_progress_mode {
    /* A progress thread moves data and answers RDMA Reads without the application. */
    IWARP_PROGRESS_THREAD = 0,
    /* The application drives progress: iwarp_poll_cq() and iwarp_ctx_progress() do it. Lowest
     * latency when the application busy-polls; nothing moves while it does not call in. */
    IWARP_PROGRESS_CALLER = 1,
};

struct iwarp_ctx_attr {
    enum iwarp_progress_mode progress; /* default IWARP_PROGRESS_THREAD */
    uint32_t max_mr;                   /* STag table size (MRs + MWs); 0: 65536 */
    const struct iwarp_mem_hooks *mem; /* NULL: libc */
    iwarp_log_fn log;                  /* NULL: no logging */
    void *log_user;
    enum iwarp_log_level log_level;
    iwarp_rng_fn rng; /* NULL: getrandom() */
    void *rng_user;
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
};

/* Fill attr with the defaults. */
IWARP_EXTERN void iwarp_ctx_attr_default(struct iwarp_ctx_attr *attr);

/* Create a context. attr may be NULL for the defaults. Ownership: attr is copied. */
IWARP_EXTERN int iwarp_ctx_create(const struct iwarp_ctx_attr *attr, struct iwarp_ctx **ctx);

/* Destroy a context; IWARP_ERR_BUSY while PDs, CQs, channels or CM ids remain. */
IWARP_EXTERN int iwarp_ctx_destroy(struct iwarp_ctx *ctx);

/* Run the progress engine once: read and write every ready connection, run expired timers.
 * timeout_ms: how long to wait for readiness (0: do not wait, -1: forever). Returns 0. */
IWARP_EXTERN int iwarp_ctx_progress(struct iwarp_ctx *ctx, int timeout_ms);

/* Device limits, as ibv_query_device reports them. */
struct iwarp_device_attr {
    uint32_t max_qp_wr;
    uint32_t max_sge;
    uint32_t max_sge_rd;
    uint32_t max_cqe;
    uint32_t max_mr;
    uint32_t max_qp_rd_atom;      /* IRD */
    uint32_t max_qp_init_rd_atom; /* ORD */
    uint32_t max_srq_wr;
    uint32_t max_inline_data;
};
IWARP_EXTERN int iwarp_query_device(struct iwarp_ctx *ctx, struct iwarp_device_attr *attr);

/* ---- protection domains and memory ---------------------------------------------------- */

/* Access flags, libibverbs numbering (enum ibv_access_flags). */
enum iwarp_access_flags {
    IWARP_ACCESS_LOCAL_WRITE = 1,
    IWARP_ACCESS_REMOTE_WRITE = 2,
    IWARP_ACCESS_REMOTE_READ = 4,
    IWARP_ACCESS_REMOTE_ATOMIC = 8,
    IWARP_ACCESS_MW_BIND = 16,
};

IWARP_EXTERN int iwarp_alloc_pd(struct iwarp_ctx *ctx, struct iwarp_pd **pd);
/* IWARP_ERR_BUSY while MRs, MWs, QPs or SRQs of the PD exist. */
IWARP_EXTERN int iwarp_dealloc_pd(struct iwarp_pd *pd);

/* A memory region. lkey == rkey == the STag (24-bit index << 8 | 8-bit key). */
struct iwarp_mr {
    struct iwarp_ctx *context;
    struct iwarp_pd *pd;
    void *addr;
    size_t length;
    uint32_t handle;
    uint32_t lkey;
    uint32_t rkey;
};

/* Register [addr, addr + length) with IWARP_ACCESS_* rights. REMOTE_WRITE and REMOTE_ATOMIC
 * need LOCAL_WRITE. Under iWARP the sink of an RDMA Read is written by tagged Read Responses,
 * so it needs REMOTE_WRITE too. Ownership: the memory stays the caller's and must stay valid
 * until iwarp_dereg_mr returns. */
IWARP_EXTERN int iwarp_reg_mr(struct iwarp_pd *pd, void *addr, size_t length, int access,
                              struct iwarp_mr **mr);
/* IWARP_ERR_BUSY while memory windows are bound to it. */
IWARP_EXTERN int iwarp_dereg_mr(struct iwarp_mr *mr);

/* Allocate an STag with no memory behind it (the RDMA verbs' "Allocate STag"); it becomes a
 * region through an IWARP_WR_REG_MR work request (fast registration). */
IWARP_EXTERN int iwarp_alloc_mr(struct iwarp_pd *pd, struct iwarp_mr **mr);

enum iwarp_mw_type { IWARP_MW_TYPE_1 = 1, IWARP_MW_TYPE_2 = 2 };

struct iwarp_mw {
    struct iwarp_ctx *context;
    struct iwarp_pd *pd;
    uint32_t rkey;
    uint32_t handle;
    enum iwarp_mw_type type;
};

IWARP_EXTERN int iwarp_alloc_mw(struct iwarp_pd *pd, enum iwarp_mw_type type, struct iwarp_mw **mw);
IWARP_EXTERN int iwarp_dealloc_mw(struct iwarp_mw *mw);

/* What a window covers (ibv_mw_bind_info). */
struct iwarp_mw_bind_info {
    struct iwarp_mr *mr;
    uint64_t addr;
    uint64_t length;
    unsigned int mw_access_flags; /* IWARP_ACCESS_REMOTE_* */
};

struct iwarp_mw_bind {
    uint64_t wr_id;
    unsigned int send_flags;
    struct iwarp_mw_bind_info bind_info;
};

/* Bind a type-1 window (a verb; type 2 binds through IWARP_WR_BIND_MW on the send queue).
 * Rotates the window's key and completes on the QP's send CQ when signaled. */
IWARP_EXTERN int iwarp_bind_mw(struct iwarp_qp *qp, struct iwarp_mw *mw,
                               const struct iwarp_mw_bind *bind);

/* The rkey with its 8-bit key rotated (ibv_inc_rkey). */
static inline uint32_t iwarp_inc_rkey(uint32_t rkey)
{
    return (rkey & 0xFFFFFF00u) | ((rkey + 1u) & 0xFFu);
}

/* ---- completion queues ------------------------------------------------------------------ */

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

/* Name of a completion status ("success", "remote access error", ...). */
IWARP_EXTERN const char *iwarp_wc_status_str(enum iwarp_wc_status status);

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

enum iwarp_wc_flags {
    IWARP_WC_GRH = 1 << 0,
    IWARP_WC_WITH_IMM = 1 << 1,
    IWARP_WC_WITH_INV = 1 << 3,
};

/* A work completion: struct ibv_wc's fields in its order, then libiwarp's DDP-level fields
 * (so the struct is larger than ibv_wc: a verbs shim converts arrays, it cannot cast them). */
struct iwarp_wc {
    uint64_t wr_id;
    enum iwarp_wc_status status;
    enum iwarp_wc_opcode opcode;
    uint32_t vendor_err; /* on errors: the RFC Terminate cause, layer << 16 | etype << 8 | code */
    uint32_t byte_len;
    union {
        uint32_t imm_data;
        uint32_t invalidated_rkey;
    };
    uint32_t qp_num;
    uint32_t src_qp;
    unsigned int wc_flags;
    uint16_t pkey_index;
    uint16_t slid;
    uint8_t sl;
    uint8_t dlid_path_bits;
    /* libiwarp: DDP-level indications only (IWARP_WC_DDP_*, iwarp/ddp.h); zero otherwise. */
    union {
        uint32_t ddp_qn;   /* IWARP_WC_DDP_RECV: the Queue Number */
        uint32_t ddp_stag; /* IWARP_WC_DDP_TAGGED_RECV: the STag */
    };
    uint32_t ddp_msn;       /* IWARP_WC_DDP_RECV: the Message Sequence Number */
    uint8_t ddp_rsvdulp[5]; /* RsvdULP as received: 5 octets untagged, [0] tagged */
};

/* A completion channel: a file descriptor that becomes readable when an armed CQ attached to
 * it gets a completion (ibv_comp_channel). Poll fd with poll/epoll, then iwarp_get_cq_event. */
struct iwarp_comp_channel {
    struct iwarp_ctx *context;
    int fd;
    int refcnt;
};

IWARP_EXTERN int iwarp_create_comp_channel(struct iwarp_ctx *ctx,
                                           struct iwarp_comp_channel **channel);
/* IWARP_ERR_BUSY while CQs use it. */
IWARP_EXTERN int iwarp_destroy_comp_channel(struct iwarp_comp_channel *channel);

/* Create a CQ of at least cqe entries. channel may be NULL. cq_context is returned by
 * iwarp_get_cq_event. */
IWARP_EXTERN int iwarp_create_cq(struct iwarp_ctx *ctx, int cqe, void *cq_context,
                                 struct iwarp_comp_channel *channel, int comp_vector,
                                 struct iwarp_cq **cq);
/* IWARP_ERR_BUSY while QPs or SRQs use it or events are unacknowledged. */
IWARP_EXTERN int iwarp_destroy_cq(struct iwarp_cq *cq);

/* Take up to num_entries completions. Returns how many (>= 0) or a negative IWARP_ERR_*.
 * In IWARP_PROGRESS_CALLER mode it also runs the progress engine once, without waiting. */
IWARP_EXTERN int iwarp_poll_cq(struct iwarp_cq *cq, int num_entries, struct iwarp_wc *wc);

/* Arm the CQ once: the channel fires for the next completion (solicited_only = 0) or the next
 * solicited receive or error completion (solicited_only = 1). */
IWARP_EXTERN int iwarp_req_notify_cq(struct iwarp_cq *cq, int solicited_only);

/* Wait for a CQ event on the channel (blocking unless the fd was made non-blocking, then
 * IWARP_ERR_BUSY when none is pending) and return the CQ and its context. Ack every event. */
IWARP_EXTERN int iwarp_get_cq_event(struct iwarp_comp_channel *channel, struct iwarp_cq **cq,
                                    void **cq_context);
IWARP_EXTERN void iwarp_ack_cq_events(struct iwarp_cq *cq, unsigned int nevents);

/* Wait up to timeout_ms (-1: forever) until the CQ has a completion (a "wait with
 * timeout"). Independent of iwarp_req_notify_cq: it neither consumes nor creates completion-
 * channel events. Returns 0 when the CQ has completions to poll, IWARP_ERR_TIMEDOUT otherwise. */
IWARP_EXTERN int iwarp_cq_wait(struct iwarp_cq *cq, int timeout_ms);

/* ---- queue pairs ---------------------------------------------------------------------------- */

enum iwarp_qp_type { IWARP_QPT_RC = 2 };

struct iwarp_qp_cap {
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
};

struct iwarp_qp_init_attr {
    void *qp_context;
    struct iwarp_cq *send_cq;
    struct iwarp_cq *recv_cq;
    struct iwarp_srq *srq;
    struct iwarp_qp_cap cap;
    enum iwarp_qp_type qp_type;
    int sq_sig_all;
};

/* QP states, libibverbs numbering; the iWARP stream states map onto them:
 * IDLE = INIT/RTR, RUNNING = RTS, TERMINATING = SQE (Terminate sent or received),
 * CLOSING = SQD (graceful disconnect), ERROR/CLOSED = ERR. */
enum iwarp_qp_state {
    IWARP_QPS_RESET = 0,
    IWARP_QPS_INIT = 1,
    IWARP_QPS_RTR = 2,
    IWARP_QPS_RTS = 3,
    IWARP_QPS_SQD = 4,
    IWARP_QPS_SQE = 5,
    IWARP_QPS_ERR = 6,
};

struct iwarp_qp {
    struct iwarp_ctx *context;
    void *qp_context;
    struct iwarp_pd *pd;
    struct iwarp_cq *send_cq;
    struct iwarp_cq *recv_cq;
    struct iwarp_srq *srq;
    uint32_t handle;
    uint32_t qp_num;
    enum iwarp_qp_state state;
    enum iwarp_qp_type qp_type;
};

/* Create a QP. Its cap is raised to what was allocated. A QP moves data once the CM has
 * connected it (iwarp_cm_create_qp). */
IWARP_EXTERN int iwarp_create_qp(struct iwarp_pd *pd, struct iwarp_qp_init_attr *attr,
                                 struct iwarp_qp **qp);
IWARP_EXTERN int iwarp_destroy_qp(struct iwarp_qp *qp);

struct iwarp_qp_attr {
    enum iwarp_qp_state qp_state;
    struct iwarp_qp_cap cap;
    uint8_t max_rd_atomic;      /* ORD */
    uint8_t max_dest_rd_atomic; /* IRD */
};
IWARP_EXTERN int iwarp_query_qp(struct iwarp_qp *qp, struct iwarp_qp_attr *attr);

/* Move the QP to IWARP_QPS_ERR (flush every WR; abortive close of the stream). Other
 * transitions are the CM's. */
IWARP_EXTERN int iwarp_modify_qp_err(struct iwarp_qp *qp);

struct iwarp_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

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
};

enum iwarp_send_flags {
    IWARP_SEND_FENCE = 1 << 0,
    IWARP_SEND_SIGNALED = 1 << 1,
    IWARP_SEND_SOLICITED = 1 << 2,
    IWARP_SEND_INLINE = 1 << 3,
};

struct iwarp_send_wr {
    uint64_t wr_id;
    struct iwarp_send_wr *next;
    struct iwarp_sge *sg_list;
    int num_sge;
    enum iwarp_wr_opcode opcode;
    unsigned int send_flags;
    union {
        uint32_t imm_data;
        uint32_t invalidate_rkey;
    };
    union {
        struct {
            uint64_t remote_addr;
            uint32_t rkey;
        } rdma;
        struct {
            uint64_t remote_addr;
            uint64_t compare_add;
            uint64_t swap;
            uint32_t rkey;
        } atomic;
    } wr;
    union {
        struct {
            struct iwarp_mw *mw;
            uint32_t rkey;
            struct iwarp_mw_bind_info bind_info;
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
    };
};

struct iwarp_recv_wr {
    uint64_t wr_id;
    struct iwarp_recv_wr *next;
    struct iwarp_sge *sg_list;
    int num_sge;
};

/* Post a linked list of send WRs. On failure *bad_wr is the first WR not posted and the
 * return is IWARP_ERR_INVAL (malformed WR), IWARP_ERR_NOSPC (SQ full), IWARP_ERR_STATE (QP not
 * connected or in error) or a memory error for an invalid lkey. Ownership: WRs and SGE lists
 * are read during the call; the memory the SGEs name is borrowed until the completion. */
IWARP_EXTERN int iwarp_post_send(struct iwarp_qp *qp, struct iwarp_send_wr *wr,
                                 struct iwarp_send_wr **bad_wr);
/* Post receive WRs (IWARP_ERR_INVAL when the QP uses an SRQ). */
IWARP_EXTERN int iwarp_post_recv(struct iwarp_qp *qp, struct iwarp_recv_wr *wr,
                                 struct iwarp_recv_wr **bad_wr);

/* ---- shared receive queues ------------------------------------------------------------ */

struct iwarp_srq_attr {
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t srq_limit;
};

struct iwarp_srq_init_attr {
    void *srq_context;
    struct iwarp_srq_attr attr;
};

enum iwarp_srq_attr_mask { IWARP_SRQ_MAX_WR = 1 << 0, IWARP_SRQ_LIMIT = 1 << 1 };

IWARP_EXTERN int iwarp_create_srq(struct iwarp_pd *pd, struct iwarp_srq_init_attr *attr,
                                  struct iwarp_srq **srq);
/* Arm the limit (IWARP_SRQ_LIMIT): one IWARP_EVENT_SRQ_LIMIT_REACHED when fewer than srq_limit
 * receives remain. Resizing (IWARP_SRQ_MAX_WR) is IWARP_ERR_NOTSUP. */
IWARP_EXTERN int iwarp_modify_srq(struct iwarp_srq *srq, struct iwarp_srq_attr *attr,
                                  int attr_mask);
IWARP_EXTERN int iwarp_query_srq(struct iwarp_srq *srq, struct iwarp_srq_attr *attr);
IWARP_EXTERN int iwarp_destroy_srq(struct iwarp_srq *srq);
IWARP_EXTERN int iwarp_post_srq_recv(struct iwarp_srq *srq, struct iwarp_recv_wr *wr,
                                     struct iwarp_recv_wr **bad_wr);

/* ---- asynchronous events -------------------------------------------------------------- */

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

struct iwarp_async_event {
    union {
        struct iwarp_cq *cq;
        struct iwarp_qp *qp;
        struct iwarp_srq *srq;
        int port_num;
    } element;
    enum iwarp_event_type event_type;
    /* libiwarp: for QP errors, the Terminate cause (layer << 16 | etype << 8 | code) sent or
     * received, and whether the peer sent it. */
    uint32_t term_cause;
    bool term_from_peer;
};

/* The async event fd: readable when iwarp_get_async_event has an event. */
IWARP_EXTERN int iwarp_async_fd(struct iwarp_ctx *ctx);
/* Take the next async event; IWARP_ERR_BUSY when none is pending (never blocks). */
IWARP_EXTERN int iwarp_get_async_event(struct iwarp_ctx *ctx, struct iwarp_async_event *event);
IWARP_EXTERN void iwarp_ack_async_event(struct iwarp_async_event *event);
IWARP_EXTERN const char *iwarp_event_type_str(enum iwarp_event_type type);

#ifdef __cplusplus
}
#endif
#endif
