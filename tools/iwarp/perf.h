/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: declarations shared by the perf subcommand's files.
 *
 *   perf_opts.c    command line, --help, validation
 *   perf_proto.c   the test protocol: hello/welcome (MPA private data), control messages,
 *                  buffer layout, data pattern
 *   perf_ep.c      one libiwarp endpoint: context, memory, QPs, completion waiting, posting
 *   perf_server.c  the passive side: accepts, then serves phases until QUIT
 *   perf_client.c  the active side: connects, runs one phase (bandwidth or latency)
 *   perf_tcp.c     the plain-TCP baseline (both sides)
 *   perf_stats.c   medians, latency statistics, peak-window bandwidth, progress line
 *   perf_out.c     the perftest-style table and --json
 *   perf_svg.c     --plot
 *   perf.c         iwarp_cli_perf: loopback / --server / HOST, sweeps and passes
 */
#ifndef IWARP_PERF_H
#define IWARP_PERF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "iwarp/iwarp.h"

enum {
    PERF_DEFAULT_PORT = 18515, /* perftest's */
    PERF_MAX_QPS = 1024,
    PERF_MAX_QD = 256,
    PERF_MAX_PASSES = 31,
    PERF_MIN_SIZE = 2,
    PERF_MAX_SIZE = 8u << 20,
    PERF_MAX_SIZES = 23, /* 2 B .. 8 MiB, powers of two */
    PERF_CTL_LEN = 40,   /* a control message; sent inline */
    PERF_HELLO_LEN = 40,
    PERF_WELCOME_LEN = 32,
    PERF_LAT_MAX_SAMPLES = 1000000, /* latency samples kept per pass (-D stops when full) */
    PERF_TIMEOUT_MS = 30000,        /* a silent peer fails the run after this long */
};

/* The measured operation. The RFC 7306 ones (docs/design.md) need libiwarp on both sides:
 * atomic (FetchAdd of 1) and cmp-swap (CmpSwap) on 8 octets, answered by the server's RNIC
 * alone as a Read is; write-imm, RDMA Write with Immediate, consuming a server receive each as
 * a Send does. */
enum perf_op {
    PERF_OP_WRITE = 0,
    PERF_OP_READ = 1,
    PERF_OP_SEND = 2,
    PERF_OP_ATOMIC = 3,
    PERF_OP_CMP_SWAP = 4,
    PERF_OP_WRITE_IMM = 5,
};

/* Whether op is an RFC 7306 atomic (8 octets, served by the server's RNIC, like a Read). */
static inline bool perf_op_atomic(enum perf_op op)
{
    return op == PERF_OP_ATOMIC || op == PERF_OP_CMP_SWAP;
}

/* Whether each operation consumes a receive at the server (Send, Write with Immediate). */
static inline bool perf_op_consumes_recv(enum perf_op op)
{
    return op == PERF_OP_SEND || op == PERF_OP_WRITE_IMM;
}

/* Unmeasured warm-up round trips before a latency run: a tenth, at most 100. */
static inline uint64_t perf_warmup(uint64_t iters)
{
    return iters && iters / 10 < 100 ? iters / 10 : 100;
}

/* The octet a write-latency message ends with in round trip k: never 0, changes every time. */
static inline uint8_t perf_stamp(uint64_t k)
{
    return (uint8_t)(k % 255 + 1);
}

/* ---- options (perf_opts.c) ------------------------------------------------------------- */

/* --tx-batch US: the contexts' transmit batching window (iwarp_ctx_attr.tx_batch_us). */
struct perf_tx_batch {
    bool set; /* given; else the library's default */
    uint32_t us;
};

struct perf_opts {
    bool server;      /* --server */
    const char *host; /* HOST (client), NULL in loopback and server mode */
    uint16_t port;    /* 0: PERF_DEFAULT_PORT (ephemeral in loopback) */
    enum perf_op op;
    uint32_t sizes[PERF_MAX_SIZES];
    uint32_t nsizes;
    uint64_t iters;  /* per QP and pass; 0 with duration */
    bool iters_auto; /* -n not given: bandwidth caps each size at 1 GiB */
    double duration; /* seconds per size and pass; 0 with iters */
    uint32_t qd, qps, passes;
    bool crc;        /* ask for MPA CRC (RFC 5044 §4.4) */
    bool crc_given;  /* --crc or --no-crc given (a server follows the client otherwise) */
    uint8_t mpa_rev; /* 1 or 2 */
    bool lat, busy_poll, verify, compare_tcp, json, pin;
    bool stats;        /* --stats: both endpoints' counters (iwarp_query_ctx_stats) at the end */
    const char *plot;  /* --plot FILE.svg */
    const char *trace; /* --trace FILE.pcap (default: $IWARP_TRACE_PCAP) */
    bool perftest;     /* --perftest: perftest's -R protocol (perf_perftest.c) */
    bool sctp;         /* --transport sctp: DDP over SCTP (IWARP_PS_SCTP) */
    uint32_t sctp_mtu; /* --sctp-mtu; 0: the library's default (1500) */
    struct perf_tx_batch tx_batch; /* --tx-batch */
    bool ipv6;                     /* -6, --ipv6: loopback on ::1, HOST resolved to IPv6 */
    uint8_t units;                 /* --units: PERF_UNITS_SI (MB = 10^6) or _PERFTEST (2^20) */
};

/* --units: what a MB is. perftest prints MiB/s (2^20 octets) under the label MB/sec. */
enum { PERF_UNITS_SI, PERF_UNITS_PERFTEST };

/* The octets in one MB of the output under o's --units. */
static inline double perf_mb(const struct perf_opts *o)
{
    return o->units == PERF_UNITS_PERFTEST ? 1048576.0 : 1e6;
}

/* Parse the perf command line (argv[0] is "perf"). Returns 0 to run, 1 when --help was printed
 * (exit 0), 2 after printing a usage error to stderr (exit 2). */
int perf_opts_parse(int argc, char **argv, struct perf_opts *o);

/* "RDMA_Write", "RDMA_Read" or "Send" (perftest's test names). */
const char *perf_op_title(enum perf_op op);
/* "write", "read" or "send". */
const char *perf_op_name(enum perf_op op);

/* ---- protocol (perf_proto.c) ------------------------------------------------------------ */

/* What both sides must agree on; the client sends it in its hello. */
struct perf_params {
    enum perf_op op;
    bool lat, verify, crc;
    uint32_t nqps, qd, max_size;
};

/* A side's registered buffer: [data region: nqps x region][receive region: nqps x rq_depth x
 * recv_len]. Data slots of a phase are `size` apart inside a QP's region. */
struct perf_layout {
    uint32_t nqps, rq_depth, recv_len;
    size_t region; /* data bytes per QP */
    size_t recv_off, total;
};

/* The layout of the server's (server = true) or the client's buffer for params p. */
void perf_layout_init(struct perf_layout *l, const struct perf_params *p, bool server);
/* Slots a phase of message size `size` uses per QP: min(qd, region / size), at least 1. */
uint32_t perf_layout_slots(const struct perf_layout *l, uint32_t qd, uint32_t size);
/* Offset of data slot `slot` of QP q for messages of `size` octets. */
size_t perf_slot_off(const struct perf_layout *l, uint32_t q, uint32_t slot, uint32_t size);
/* Offset of receive buffer `slot` of QP q. */
size_t perf_recv_off(const struct perf_layout *l, uint32_t q, uint32_t slot);

/* The client's hello, carried in each connection's MPA Request private data. */
struct perf_hello {
    struct perf_params p;
    uint32_t qp_index;
    uint64_t addr; /* the client's buffer (target of the server's write-latency replies) */
    uint32_t rkey;
    uint64_t len;
};
/* The server's answer in the MPA Reply private data. */
struct perf_welcome {
    uint32_t status; /* 0, or 1: parameters refused */
    uint32_t rq_depth;
    uint64_t addr;
    uint32_t rkey;
    uint64_t len;
};

void perf_hello_encode(uint8_t out[PERF_HELLO_LEN], const struct perf_hello *h);
/* Returns 0 or IWARP_ERR_PERF_PROTO (wrong length, magic, version or a value out of range). */
int perf_hello_decode(struct perf_hello *h, const uint8_t *in, size_t len);
void perf_welcome_encode(uint8_t out[PERF_WELCOME_LEN], const struct perf_welcome *w);
int perf_welcome_decode(struct perf_welcome *w, const uint8_t *in, size_t len);

enum perf_ctl_type {
    PERF_CTL_PHASE = 1,  /* client: run a phase (kind, size, iters, seq) */
    PERF_CTL_READY = 2,  /* server: phase set up (a = TCP port for the baselines) */
    PERF_CTL_RESULT = 3, /* server: phase over (a = messages, b = octets, c = octets wrong) */
    PERF_CTL_CREDIT = 4, /* server: a = data Sends consumed on this QP in phase seq */
};
enum perf_phase_kind {
    PERF_PH_BW = 1,
    PERF_PH_LAT = 2,
    PERF_PH_TCP_BW = 3,
    PERF_PH_TCP_LAT = 4,
    PERF_PH_QUIT = 5,
};
struct perf_ctl {
    uint8_t type, kind, status;
    uint32_t size, seq;
    uint64_t a, b, c;
};
void perf_ctl_encode(uint8_t out[PERF_CTL_LEN], const struct perf_ctl *c);
int perf_ctl_decode(struct perf_ctl *c, const uint8_t *in, size_t len);

/* Seed of the data a message carries: the slot's for write/read bandwidth, the message's
 * (phase seq, QP, number) for Sends and latency. */
uint64_t perf_seed(uint32_t seq, uint32_t q, uint64_t n);
/* Fill p[0..len) with the pattern of seed. */
void perf_pattern_fill(uint8_t *p, size_t len, uint64_t seed);
/* Fill p[0..len) with the complement of that pattern (poison). */
void perf_pattern_poison(uint8_t *p, size_t len, uint64_t seed);
/* Octets of p[0..len) that differ from the pattern of seed. */
uint64_t perf_pattern_check(const uint8_t *p, size_t len, uint64_t seed);

/* ---- endpoint (perf_ep.c) -------------------------------------------------------------- */

struct perf_ep {
    bool busy; /* caller-driven progress and spinning; else progress thread + completion channel */
    enum iwarp_port_space ps; /* IWARP_PS_TCP (MPA) or IWARP_PS_SCTP */
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *cmch;
    struct iwarp_comp_channel *cch;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *mr;
    uint8_t *buf;
    struct perf_layout lay;
    struct iwarp_cm_id *listen;
    struct iwarp_cm_id *ids[PERF_MAX_QPS];
    uint32_t nqps;
    uint32_t sq_depth;
    uint64_t peer_addr; /* the peer's buffer */
    uint32_t peer_rkey;
    uint64_t peer_len;
    struct perf_layout peer_lay;
    bool rdmap_ext; /* QPs enable the RFC 7306 extensions (an RFC 7306 op) */
    bool armed;
    struct iwarp_wc wc[32];
    int wc_n, wc_i;
    char err[160]; /* what failed, for the message */
    /* the context's counters, read by perf_ep_close once its QPs are gone (--stats) */
    struct iwarp_stats stats;
    bool have_stats;
};

/* wr_id tags: which kind of work request and where its buffer is. */
enum { PERF_WR_DATA = 1, PERF_WR_RECV = 2, PERF_WR_CTL = 3, PERF_WR_END = 4 };
static inline uint64_t perf_wr_id(unsigned kind, uint32_t q, uint32_t slot)
{
    return (uint64_t)kind << 56 | (uint64_t)q << 32 | slot;
}
static inline unsigned perf_wr_kind(uint64_t id)
{
    return (unsigned)(id >> 56);
}
static inline uint32_t perf_wr_qp(uint64_t id)
{
    return (uint32_t)(id >> 32) & 0xFFFFFFu;
}
static inline uint32_t perf_wr_slot(uint64_t id)
{
    return (uint32_t)id;
}

int perf_ep_open(struct perf_ep *e, bool busy, const char *trace, bool sctp, uint32_t sctp_mtu,
                 struct perf_tx_batch tx_batch);
int perf_ep_alloc(struct perf_ep *e, const struct perf_params *p, bool server);
int perf_ep_create_qp(struct perf_ep *e, struct iwarp_cm_id *id);
int perf_ep_post_recv(struct perf_ep *e, uint32_t q, uint32_t slot);
int perf_ep_post(struct perf_ep *e, uint32_t q, enum iwarp_wr_opcode op, size_t loff, uint32_t len,
                 size_t roff, uint64_t wr_id);
int perf_ep_send_ctl(struct perf_ep *e, uint32_t q, const struct perf_ctl *c);
int perf_ep_try_wc(struct perf_ep *e, struct iwarp_wc *wc);
void perf_ep_await_write(struct perf_ep *e);
int perf_ep_wait_wc(struct perf_ep *e, struct iwarp_wc *wc, int timeout_ms);
int perf_ep_recv_ctl(struct perf_ep *e, struct perf_ctl *c, uint32_t *q, int timeout_ms);
int perf_ep_cm_event(struct perf_ep *e, enum iwarp_cm_event_type want, struct iwarp_cm_event **ev,
                     int timeout_ms);
int perf_ep_resolve_qp(struct perf_ep *e, uint32_t q, const struct sockaddr *peer,
                       enum iwarp_port_space ps);
int perf_ep_fail(struct perf_ep *e, int rc, const char *what);
int perf_resolve(const char *host, uint16_t port, bool v6, struct sockaddr_storage *out);
void perf_ep_close(struct perf_ep *e);

/* ---- results and statistics (perf_stats.c) ---------------------------------------------- */

struct perf_bw {
    double peak, avg;    /* octets per second */
    double mpps;         /* million messages per second */
    uint64_t iters;      /* per QP (or stream) */
    uint64_t octets;     /* moved in all */
    double cpu_s_per_gb; /* this process's CPU seconds per 10^9 octets (both sides in loopback) */
};
struct perf_lat {
    double min, max, typical, avg, stdev, p99, p999; /* microseconds */
    uint64_t iters;
};
/* One size: medians over the passes of each figure, libiwarp and (have_tcp) the baseline. */
struct perf_row {
    uint32_t size;
    uint32_t passes;
    struct perf_bw bw, tcp_bw;
    struct perf_lat lat, tcp_lat;
    double lo, hi, tcp_lo, tcp_hi; /* min and max over passes of the headline figure */
    double ratio;                  /* median over passes of libiwarp / TCP (headline figures) */
    bool have_tcp;
    uint64_t verify_errors;
};

/* Median of v[0..n) (sorts v). */
double perf_median(double *v, size_t n);
/* Latency statistics of samples (nanoseconds, sorted in place). */
void perf_lat_summarize(struct perf_lat *out, double *ns, size_t n);
/* Fieldwise medians of passes into row; the headline is avg (bandwidth) or typical. */
void perf_row_bw(struct perf_bw *out, double *lo, double *hi, const struct perf_bw *v, size_t n);
void perf_row_lat(struct perf_lat *out, double *lo, double *hi, const struct perf_lat *v, size_t n);

/* Highest rate over windows of at least PERF_PEAK_WINDOW_NS. */
enum { PERF_PEAK_WINDOW_NS = 10000000 };
struct perf_meter {
    uint64_t win_start, win_bytes;
    double peak;
};
void perf_meter_start(struct perf_meter *m, uint64_t now);
void perf_meter_add(struct perf_meter *m, uint64_t bytes, uint64_t now);

/* The progress line (stderr, only on a terminal, only after two seconds). */
struct perf_progress {
    bool tty, shown;
    uint64_t start, last;
    char what[64];
};
void perf_progress_begin(struct perf_progress *p, const char *what, uint64_t now);
void perf_progress_tick(struct perf_progress *p, double fraction, uint64_t now);
void perf_progress_end(struct perf_progress *p);

uint64_t perf_now_ns(void);
/* CPU time (user + system) this process has used so far, in seconds. */
double perf_cpu_s(void);
/* Pin the calling thread to cpu (modulo the online CPUs); threads it creates inherit it. */
void perf_pin(int cpu);

/* ---- client (perf_client.c) -------------------------------------------------------------- */

struct perf_client {
    const struct perf_opts *o;
    struct perf_params p;
    struct perf_ep ep;
    struct sockaddr_storage peer;
    uint32_t seq; /* phase number */
    double *samples;
    size_t max_samples;
    struct perf_progress progress;
    const char *pass_label; /* "pass 2/5" for the progress line */
};

int perf_client_connect(struct perf_client *c, const struct perf_opts *o,
                        const struct sockaddr *peer);
int perf_client_bw(struct perf_client *c, uint32_t size, struct perf_bw *out, uint64_t *bad);
int perf_client_lat(struct perf_client *c, uint32_t size, struct perf_lat *out, uint64_t *bad);
int perf_client_tcp(struct perf_client *c, bool lat, uint32_t size, struct perf_bw *bw,
                    struct perf_lat *lt);
void perf_client_close(struct perf_client *c);

/* ---- server (perf_server.c) -------------------------------------------------------------- */

struct perf_server {
    bool busy, crc, crc_given;
    bool sctp;         /* listen for DDP over SCTP (IWARP_PS_SCTP) */
    uint32_t sctp_mtu; /* 0: the library's default */
    struct perf_tx_batch tx_batch;
    const char *trace;
    struct perf_ep ep;
    struct perf_params p;
    uint16_t port; /* the bound port, once listening */
    /* loopback: the client gave up before connecting; stop waiting for it */
    atomic_bool abandoned;
};

int perf_server_listen(struct perf_server *s, const struct sockaddr *addr);
int perf_server_serve(struct perf_server *s);
void perf_server_close(struct perf_server *s);

/* ---- plain TCP baseline (perf_tcp.c) ------------------------------------------------------ */

int perf_tcp_listen(const struct sockaddr_storage *local, int *fd, uint16_t *port);
int perf_tcp_serve(int lfd, bool lat, uint32_t size, bool busy, uint8_t *buf,
                   const struct perf_layout *lay, uint64_t *bytes);
int perf_tcp_connect(const struct sockaddr_storage *peer, uint16_t port, bool lat, int *fd);
int perf_tcp_bw(const int *fds, uint32_t n, uint32_t size, uint64_t iters, double duration,
                bool busy, const uint8_t *buf, const struct perf_layout *lay, struct perf_bw *out,
                struct perf_progress *pr);
int perf_tcp_lat(int fd, uint32_t size, uint64_t iters, double duration, bool busy, uint8_t *buf,
                 double *samples, size_t max_samples, struct perf_lat *out,
                 struct perf_progress *pr);
/* The congestion control this host gives new TCP sockets (libiwarp's connections and the
 * baseline's alike: neither sets its own), into buf; "unknown" when it cannot be read. On
 * loopback it moves large transfers by 2x (docs/performance.md). */
void perf_tcp_cc(char *buf, size_t len);

/* ---- perftest's protocol (perf_perftest.c) ------------------------------------------------ */

/* Run one perftest -R test (--op, --lat, -s, -n) against perftest's server at o->host, or serve
 * one perftest client (o->server). Returns the exit status (0, or 1 after printing why). */
int perf_perftest_run(const struct perf_opts *o);

/* ---- output (perf_out.c, perf_svg.c) ------------------------------------------------------ */

struct perf_report {
    const struct perf_opts *o;
    const char *connection; /* "loopback 127.0.0.1:40123" or "HOST:PORT" */
    struct perf_row rows[PERF_MAX_SIZES];
    uint32_t nrows;
};

/* The lower layer in words: "TCP, MPA rev 2, CRC on" or "SCTP over UDP, MTU 1500". */
void perf_out_transport(const struct perf_opts *o, char *buf, size_t len);
void perf_out_header(FILE *f, const struct perf_report *r);
void perf_out_row(FILE *f, const struct perf_report *r, const struct perf_row *row);
void perf_out_footer(FILE *f, const struct perf_report *r);
void perf_out_json(FILE *f, const struct perf_report *r);
/* --stats: one endpoint's counters (who: "client" or "server"), when e has them. */
void perf_out_stats(FILE *f, const char *who, const struct perf_ep *e);
int perf_svg_write(const char *path, const struct perf_report *r);

#endif
