/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Soak: N connected QP pairs (default 1000) between a server context and a client context in
 * this one process, over loopback TCP, with connection churn for a long time, while the
 * process's RSS and open descriptors are sampled; at the end it judges whether both stayed
 * flat after the warm-up (issue 17 item 8; scripts/soak.sh runs it, docs/soak.md describes
 * the output).
 *
 * Every pair runs rounds, back to back, all the time: the client writes a pattern into the
 * server's buffer (RDMA Write) and sends a message naming it (Send); the server checks the
 * placed octets and the message, writes a new pattern into its own buffer and answers with a
 * Send; the client then reads that buffer (RDMA Read) and checks it. Every WR is signaled and
 * must complete successfully exactly once (each end counts what it has outstanding, per kind;
 * a completion nobody waits for, or of an earlier generation of the pair, is an error); every
 * octet is checked. Meanwhile, batch after batch, K pairs chosen at random run one last round
 * (the message says so, so that the server posts no receive a disconnect would flush), are
 * disconnected gracefully (from the client or the server end, alternately), their QPs, ids
 * and MRs destroyed, and new ones connected in their place. Any error ends the run with a
 * message and exit status 1.
 *
 * Samples are taken between batches, when all N pairs are connected, every --interval
 * seconds: elapsed time, connections made, rounds, octets moved, VmRSS and VmHWM, the count of
 * /proc/self/fd, the load average. Both contexts use the default progress thread; the main
 * thread handles CM events and completions (woken by completion channels).
 *
 *   bench_soak [--duration S] [--qps N] [--batch K] [--interval S] [--warmup S]
 *              [--max-len OCTETS] [--seed N] [--json FILE] [--no-judge-rss]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"
#include "iwarp/iwarp.h"

#define PROG "bench_soak"

enum {
    WINDOW = 64,          /* connections being set up at once */
    BACKLOG = 1024,       /* the listener's */
    STALL_S = 60,         /* a pair without progress this long fails the run */
    MAX_SAMPLES = 100000, /* more are not kept (the run says so) */
};

/* Completion kinds, the low 4 bits of a wr_id. */
enum kind { K_WRITE, K_SEND, K_RECV, K_READ, K_N };
static const char *const kind_name[K_N] = {"RDMA Write", "Send", "Receive", "RDMA Read"};

#define MSG_MAGIC 0x534f414bu /* "SOAK" */

/* The Send of either end: which pair, generation and round, and the pattern it announces
 * (client: written into the server's buffer; server: in its buffer for the client to read). */
struct msg {
    uint32_t magic, slot, gen, round;
    uint64_t seed;
    uint32_t len, last;
};

/* The private data of a connection: client → server names the pair; server → client also
 * advertises the server's buffer. */
struct advert {
    uint32_t slot, gen, rkey, pad;
    uint64_t addr;
};

/* One end's memory: [data area: max_len][read area: max_len][send msg][recv msg]. Client: the
 * Write's source and the Read's sink. Server: the Write's target and the Read's source. */
struct end {
    struct iwarp_cm_id *id;
    struct iwarp_mr *mr;
    uint8_t *buf;
    uint32_t out[K_N]; /* WRs posted and not completed, per kind */
    bool up, down;
};

enum pair_state { P_IDLE, P_QUEUED, P_CONNECTING, P_RUNNING, P_DISCONNECTING };

struct pair {
    uint32_t slot, gen;
    enum pair_state st;
    struct end cli, srv;
    struct advert peer; /* the server's advertisement, at the client */
    uint32_t round;
    struct msg sent, reply; /* the client's current message; the server's answer */
    bool read_done;         /* the current round's Read is checked */
    bool retire;            /* picked: the next round is the last */
    bool last_sent;         /* the last round has started */
    bool srv_last;          /* the server has seen the last round's message */
    bool in_batch;
    double t_progress; /* when this pair last moved on */
    uint32_t next_q;   /* connect queue link */
};

struct side {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_comp_channel *comp;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
};

struct sample {
    double t;
    uint64_t conns, rounds, octets, errors;
    long rss_kib, hwm_kib, fds;
    long heap_kib; /* malloc's octets in use (mallinfo2: arenas + mmapped), all threads */
    long lib_allocs, lib_kib; /* the library's live allocations (both contexts' mem hooks) */
    double load1;
    double cpu_self, cpu_other; /* since the previous sample, in CPUs (2.0: two CPUs busy) */
};

static struct {
    /* options */
    double duration, interval, warmup;
    uint32_t qps, batch, max_len;
    uint64_t seed;
    const char *json;
    bool judge_rss;
    /* state */
    bool tearing; /* disconnected pairs are not connected again */
    struct side cli, srv;
    struct iwarp_cm_id *listen;
    struct sockaddr_in dst;
    struct pair *pairs;
    uint32_t q_head, q_tail, q_len, connecting;
    uint32_t batch_left;
    uint64_t conns, rounds, octets, errors, wrs;
    uint64_t rng;
    double t0;
    struct sample *samples;
    uint32_t n_samples;
    long fds_start, fds_end;             /* fds_end: after the teardown, -1 before */
    double last_t, last_busy, last_self; /* at the previous sample */
    uint32_t *order, order_pos;          /* the batches' order of the pairs, and where it is */
    double t_replaced;                   /* when every pair had been replaced once (-1: not yet) */
} g;

#define NO_SLOT UINT32_MAX

static void write_json(const char *verdict, const char *why);

/* End the run: print why, keep the samples taken so far in the JSON file. */
static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    g.errors++;
    fprintf(stderr, PROG ": FAIL at %.1f s: %s\n", bench_now_s() - g.t0, why);
    fflush(stdout);
    write_json("error", why);
    exit(1);
}

#define CHECK(call)                                     \
    do {                                                \
        int rc_ = (call);                               \
        if (rc_ < 0)                                    \
            fail("%s: %s", #call, iwarp_strerror(rc_)); \
    } while (0)

/* ---- patterns ------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng_next(void)
{
    return mix64(g.rng += 0x9e3779b97f4a7c15ull);
}

/* Octet i of pattern seed: word i / 8 of a counter-mode mix, so any length and offset work. */
static void pat_fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t w = 0; w * 8 < n; w++) {
        uint64_t v = mix64(seed + w);
        size_t k = n - w * 8 < 8 ? n - w * 8 : 8;
        memcpy(p + w * 8, &v, k);
    }
}

/* The first octet where p differs from pattern seed, or n. */
static size_t pat_check(const uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t w = 0; w * 8 < n; w++) {
        uint64_t v = mix64(seed + w);
        size_t k = n - w * 8 < 8 ? n - w * 8 : 8;
        if (memcmp(p + w * 8, &v, k) != 0) {
            for (size_t i = 0; i < k; i++)
                if (p[w * 8 + i] != ((const uint8_t *)&v)[i])
                    return w * 8 + i;
        }
    }
    return n;
}

/* ---- /proc ---------------------------------------------------------------------------- */

static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    return v;
}

/* Open descriptors, the directory's own not counted. */
static long count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;
}

static long heap_in_use_kib(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)((m.uordblks + m.hblkhd) / 1024);
}

/* CPU seconds: the whole machine's busy time and this process's own (utime + stime). */
static void cpu_times(double *all_busy, double *self)
{
    double tick = (double)sysconf(_SC_CLK_TCK);
    unsigned long long v[8] = {0};
    *all_busy = *self = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) == 8)
            *all_busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tick;
        fclose(f);
    }
    f = fopen("/proc/self/stat", "r");
    if (f) {
        char buf[1024];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')'); /* the fields after the command name */
        unsigned long ut = 0, st = 0;
        if (p &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
            *self = (double)(ut + st) / tick;
        fclose(f);
    }
}

static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* ---- the library's allocations ------------------------------------------------------- */

/* Both contexts allocate through these hooks (iwarp_ctx_attr.mem), which count what is live:
 * a leak inside the library shows here as a count that grows between samples taken in the
 * same state, whatever malloc does with its free memory. Each block carries its size in a
 * 16-octet header (which keeps malloc's alignment). Called from the progress threads too. */
static atomic_long lib_allocs, lib_bytes;

enum { HOOK_HDR = 16 };

static void *hook_account(uint8_t *p, size_t size)
{
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    atomic_fetch_add_explicit(&lib_allocs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lib_bytes, (long)size, memory_order_relaxed);
    return p + HOOK_HDR;
}

static void *hook_malloc(size_t size, void *user)
{
    (void)user;
    return size > SIZE_MAX - HOOK_HDR ? NULL : hook_account(malloc(size + HOOK_HDR), size);
}

static void *hook_calloc(size_t n, size_t size, void *user)
{
    (void)user;
    if (size && n > (SIZE_MAX - HOOK_HDR) / size)
        return NULL;
    return hook_account(calloc(1, n * size + HOOK_HDR), n * size);
}

static void hook_free(void *ptr, void *user)
{
    (void)user;
    uint8_t *p = (uint8_t *)ptr - HOOK_HDR;
    size_t size;
    memcpy(&size, p, sizeof size);
    atomic_fetch_sub_explicit(&lib_allocs, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&lib_bytes, (long)size, memory_order_relaxed);
    free(p);
}

static const struct iwarp_mem_hooks counting_hooks = {
    .malloc_fn = hook_malloc, .calloc_fn = hook_calloc, .free_fn = hook_free};

/* ---- sides and pairs ------------------------------------------------------------------ */

static void side_init(struct side *s)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.mem = &counting_hooks;
    CHECK(iwarp_ctx_create(&a, &s->ctx));
    CHECK(iwarp_cm_create_channel(s->ctx, &s->ch));
    (void)fcntl(s->ch->fd, F_SETFL, fcntl(s->ch->fd, F_GETFL) | O_NONBLOCK);
    CHECK(iwarp_create_comp_channel(s->ctx, &s->comp));
    (void)fcntl(s->comp->fd, F_SETFL, fcntl(s->comp->fd, F_GETFL) | O_NONBLOCK);
    CHECK(iwarp_alloc_pd(s->ctx, &s->pd));
    CHECK(iwarp_create_cq(s->ctx, (int)(4 * g.qps + 64), s, s->comp, 0, &s->cq));
}

static void side_fini(struct side *s)
{
    CHECK(iwarp_destroy_cq(s->cq));
    CHECK(iwarp_destroy_comp_channel(s->comp));
    CHECK(iwarp_dealloc_pd(s->pd));
    CHECK(iwarp_cm_destroy_channel(s->ch));
    CHECK(iwarp_ctx_destroy(s->ctx));
}

static size_t end_len(void)
{
    return 2 * (size_t)g.max_len + 2 * sizeof(struct msg);
}
static uint8_t *area_data(struct end *e)
{
    return e->buf;
}
static uint8_t *area_read(struct end *e)
{
    return e->buf + g.max_len;
}
static struct msg *msg_send(struct end *e)
{
    return (struct msg *)(void *)(e->buf + 2 * (size_t)g.max_len);
}
static struct msg *msg_recv(struct end *e)
{
    return msg_send(e) + 1;
}

static uint64_t wr_id(const struct pair *p, enum kind k)
{
    return (uint64_t)p->gen << 32 | (uint64_t)p->slot << 4 | (uint64_t)k;
}

static void reg_end(struct side *s, struct end *e)
{
    CHECK(iwarp_reg_mr(
        s->pd, e->buf, end_len(),
        IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ, &e->mr));
}

static void create_qp(struct side *s, struct end *e, struct pair *p)
{
    struct iwarp_qp_init_attr qa = {
        .qp_context = p,
        .send_cq = s->cq,
        .recv_cq = s->cq,
        .cap = {.max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IWARP_QPT_RC};
    CHECK(iwarp_cm_create_qp(e->id, s->pd, &qa));
}

static void post_send(struct pair *p, struct end *e, enum kind k, enum iwarp_wr_opcode op,
                      void *addr, uint32_t len, uint64_t raddr, uint32_t rkey)
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)addr, len, e->mr->lkey};
    struct iwarp_send_wr w = {.wr_id = wr_id(p, k),
                              .sg_list = &sge,
                              .num_sge = 1,
                              .opcode = op,
                              .send_flags = IWARP_SEND_SIGNALED};
    w.wr.rdma.remote_addr = raddr;
    w.wr.rdma.rkey = rkey;
    int rc = iwarp_post_send(e->id->qp, &w, NULL);
    if (rc < 0)
        fail("pair %u gen %u: posting a %s: %s", p->slot, p->gen, kind_name[k], iwarp_strerror(rc));
    e->out[k]++;
    g.wrs++;
}

static void post_recv(struct pair *p, struct end *e)
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)msg_recv(e), sizeof(struct msg), e->mr->lkey};
    struct iwarp_recv_wr w = {.wr_id = wr_id(p, K_RECV), .sg_list = &sge, .num_sge = 1};
    int rc = iwarp_post_recv(e->id->qp, &w, NULL);
    if (rc < 0)
        fail("pair %u gen %u: posting a Receive: %s", p->slot, p->gen, iwarp_strerror(rc));
    e->out[K_RECV]++;
    g.wrs++;
}

/* Queue slot for a new connection (set up when the window has room). */
static void enqueue(struct pair *p)
{
    p->st = P_QUEUED;
    p->next_q = NO_SLOT;
    p->t_progress = bench_now_s();
    if (g.q_len++ == 0)
        g.q_head = p->slot;
    else
        g.pairs[g.q_tail].next_q = p->slot;
    g.q_tail = p->slot;
}

static void start_connect(struct pair *p)
{
    p->gen++;
    p->st = P_CONNECTING;
    p->round = 0;
    p->retire = p->last_sent = p->srv_last = p->read_done = false;
    p->cli.up = p->cli.down = p->srv.up = p->srv.down = false;
    p->t_progress = bench_now_s();
    reg_end(&g.cli, &p->cli);
    CHECK(iwarp_cm_create_id(g.cli.ch, &p->cli.id, p, IWARP_PS_TCP));
    CHECK(iwarp_cm_resolve_addr(p->cli.id, NULL, (struct sockaddr *)&g.dst, 1000));
    g.connecting++;
}

static void pump_queue(void)
{
    while (g.q_len && g.connecting < WINDOW) {
        struct pair *p = &g.pairs[g.q_head];
        g.q_head = p->next_q;
        g.q_len--;
        start_connect(p);
    }
}

/* ---- rounds --------------------------------------------------------------------------- */

static void start_round(struct pair *p)
{
    struct end *c = &p->cli;
    p->round++;
    p->read_done = false;
    uint64_t seed = rng_next();
    p->sent = (struct msg){.magic = MSG_MAGIC,
                           .slot = p->slot,
                           .gen = p->gen,
                           .round = p->round,
                           .seed = seed,
                           .len = 1 + (uint32_t)(seed >> 40) % g.max_len,
                           .last = p->retire};
    p->last_sent = p->retire;
    *msg_send(c) = p->sent;
    pat_fill(area_data(c), p->sent.len, seed);
    post_recv(p, c); /* for the server's answer, before our Send can cause it */
    post_send(p, c, K_WRITE, IWARP_WR_RDMA_WRITE, area_data(c), p->sent.len, p->peer.addr,
              p->peer.rkey);
    post_send(p, c, K_SEND, IWARP_WR_SEND, msg_send(c), sizeof(struct msg), 0, 0);
}

static bool end_idle(const struct end *e)
{
    for (int k = 0; k < K_N; k++)
        if (e->out[k])
            return false;
    return true;
}

/* After a client completion or the server's last one: the next round, or the disconnect. */
static void advance(struct pair *p)
{
    p->t_progress = bench_now_s();
    if (p->st != P_RUNNING || !p->read_done || !end_idle(&p->cli))
        return;
    if (!p->last_sent) {
        start_round(p);
        return;
    }
    if (!p->srv_last || !end_idle(&p->srv))
        return;
    /* the last round is done at both ends, nothing is posted: end it gracefully */
    p->st = P_DISCONNECTING;
    CHECK(iwarp_cm_disconnect(p->gen & 1 ? p->cli.id : p->srv.id));
}

static void check_msg(const struct pair *p, const struct msg *m, const char *who)
{
    if (m->magic != MSG_MAGIC || m->slot != p->slot || m->gen != p->gen || m->len == 0 ||
        m->len > g.max_len)
        fail("pair %u gen %u: the %s received a bad message (magic %#x slot %u gen %u len %u)",
             p->slot, p->gen, who, m->magic, m->slot, m->gen, m->len);
}

static void on_srv_recv(struct pair *p)
{
    struct end *s = &p->srv;
    struct msg m = *msg_recv(s);
    check_msg(p, &m, "server");
    if (m.round != p->round || m.seed != p->sent.seed || m.len != p->sent.len)
        fail("pair %u gen %u: the server received round %u, the client sent round %u", p->slot,
             p->gen, m.round, p->round);
    size_t at = pat_check(area_data(s), m.len, m.seed);
    if (at != m.len)
        fail("pair %u gen %u round %u: RDMA Write of %u octets differs at octet %zu", p->slot,
             p->gen, m.round, m.len, at);
    memset(area_data(s), 0, m.len); /* the next round's check cannot pass on these octets */
    if (m.last)
        p->srv_last = true;
    else
        post_recv(p, s);
    uint64_t seed = rng_next();
    struct msg r = {.magic = MSG_MAGIC,
                    .slot = p->slot,
                    .gen = p->gen,
                    .round = m.round,
                    .seed = seed,
                    .len = 1 + (uint32_t)(seed >> 40) % g.max_len,
                    .last = m.last};
    pat_fill(area_read(s), r.len, seed);
    *msg_send(s) = r;
    post_send(p, s, K_SEND, IWARP_WR_SEND, msg_send(s), sizeof r, 0, 0);
    g.octets += m.len + sizeof m;
}

static void on_cli_recv(struct pair *p)
{
    struct end *c = &p->cli;
    p->reply = *msg_recv(c);
    check_msg(p, &p->reply, "client");
    if (p->reply.round != p->round)
        fail("pair %u gen %u: answer to round %u in round %u", p->slot, p->gen, p->reply.round,
             p->round);
    memset(area_read(c), 0, p->reply.len);
    post_send(p, c, K_READ, IWARP_WR_RDMA_READ, area_read(c), p->reply.len,
              p->peer.addr + g.max_len, p->peer.rkey);
    g.octets += sizeof p->reply;
}

static void on_cli_read(struct pair *p)
{
    struct end *c = &p->cli;
    size_t at = pat_check(area_read(c), p->reply.len, p->reply.seed);
    if (at != p->reply.len)
        fail("pair %u gen %u round %u: RDMA Read of %u octets differs at octet %zu", p->slot,
             p->gen, p->round, p->reply.len, at);
    p->read_done = true;
    g.rounds++;
    g.octets += p->reply.len;
}

static const enum iwarp_wc_opcode kind_opcode[K_N] = {IWARP_WC_RDMA_WRITE, IWARP_WC_SEND,
                                                      IWARP_WC_RECV, IWARP_WC_RDMA_READ};

static void on_wc(const struct iwarp_wc *wc, bool at_srv)
{
    uint32_t slot = (uint32_t)(wc->wr_id >> 4) & 0x0fffffffu, gen = (uint32_t)(wc->wr_id >> 32);
    enum kind k = (enum kind)(wc->wr_id & 15);
    const char *who = at_srv ? "server" : "client";
    if (slot >= g.qps || k >= K_N)
        fail("%s: completion with an unknown wr_id %#" PRIx64, who, wc->wr_id);
    struct pair *p = &g.pairs[slot];
    struct end *e = at_srv ? &p->srv : &p->cli;
    if (wc->status != IWARP_WC_SUCCESS)
        fail("pair %u gen %u (now gen %u): %s %s completed with %s (vendor_err %#x)", slot, gen,
             p->gen, who, kind_name[k], iwarp_wc_status_str(wc->status), wc->vendor_err);
    if (gen != p->gen || e->out[k] == 0)
        fail("pair %u gen %u (now gen %u): %s %s completed without being outstanding", slot, gen,
             p->gen, who, kind_name[k]);
    if (wc->opcode != kind_opcode[k])
        fail("pair %u: %s %s completed with opcode %d", slot, who, kind_name[k], (int)wc->opcode);
    uint32_t want = k == K_WRITE  ? p->sent.len
                    : k == K_READ ? p->reply.len
                                  : (uint32_t)sizeof(struct msg);
    if (k != K_WRITE && k != K_SEND && wc->byte_len != want)
        fail("pair %u: %s %s completed with %u octets, not %u", slot, who, kind_name[k],
             wc->byte_len, want);
    e->out[k]--;
    if (at_srv && k == K_RECV)
        on_srv_recv(p);
    else if (!at_srv && k == K_RECV)
        on_cli_recv(p);
    else if (!at_srv && k == K_READ)
        on_cli_read(p);
    advance(p);
}

static bool poll_side(struct side *s, bool at_srv)
{
    struct iwarp_wc wc[64];
    bool any = false;
    for (;;) {
        int n = iwarp_poll_cq(s->cq, 64, wc);
        if (n < 0)
            fail("iwarp_poll_cq: %s", iwarp_strerror(n));
        if (n == 0)
            return any;
        any = true;
        for (int i = 0; i < n; i++)
            on_wc(&wc[i], at_srv);
    }
}

/* ---- connection events ---------------------------------------------------------------- */

static void destroy_end(struct end *e)
{
    iwarp_cm_destroy_qp(e->id);
    CHECK(iwarp_cm_destroy_id(e->id));
    CHECK(iwarp_dereg_mr(e->mr));
    e->id = NULL;
    e->mr = NULL;
}

static void pair_up(struct pair *p)
{
    if (!p->cli.up || !p->srv.up)
        return;
    p->st = P_RUNNING;
    g.conns++;
    g.connecting--;
    if (p->in_batch) {
        p->in_batch = false;
        g.batch_left--;
    }
    start_round(p);
}

/* *done: a pair disconnected at both ends, to destroy after the ack. */
static void on_cm(struct iwarp_cm_event *ev, bool at_srv, struct pair **done)
{
    const char *who = at_srv ? "server" : "client";
    if (ev->status != 0)
        fail("%s: CM event %s with status %s", who, iwarp_cm_event_str(ev->event),
             iwarp_err_name(ev->status));
    if (at_srv && ev->event == IWARP_CM_EVENT_CONNECT_REQUEST) {
        struct advert a;
        if (ev->param.private_data_len != sizeof a)
            fail("server: CONNECT_REQUEST with %u octets of private data",
                 ev->param.private_data_len);
        memcpy(&a, ev->param.private_data, sizeof a);
        struct pair *p = a.slot < g.qps ? &g.pairs[a.slot] : NULL;
        if (!p || a.gen != p->gen || p->st != P_CONNECTING || p->srv.id)
            fail("server: CONNECT_REQUEST for pair %u gen %u, unexpected", a.slot, a.gen);
        p->srv.id = ev->id;
        ev->id->context_user = p;
        reg_end(&g.srv, &p->srv);
        create_qp(&g.srv, &p->srv, p);
        post_recv(p, &p->srv); /* before the accept: the client sends first */
        struct advert mine = {.slot = p->slot,
                              .gen = p->gen,
                              .rkey = p->srv.mr->rkey,
                              .addr = (uint64_t)(uintptr_t)p->srv.buf};
        struct iwarp_conn_param cp = {.responder_resources = 1,
                                      .initiator_depth = 1,
                                      .crc = true,
                                      .private_data = &mine,
                                      .private_data_len = sizeof mine};
        CHECK(iwarp_cm_accept(ev->id, &cp));
        return;
    }
    struct pair *p = ev->id->context_user;
    struct end *e = at_srv ? &p->srv : &p->cli;
    switch (ev->event) {
    case IWARP_CM_EVENT_ADDR_RESOLVED:
        if (at_srv)
            break;
        CHECK(iwarp_cm_resolve_route(ev->id, 1000));
        return;
    case IWARP_CM_EVENT_ROUTE_RESOLVED: {
        if (at_srv)
            break;
        create_qp(&g.cli, &p->cli, p);
        struct advert mine = {.slot = p->slot, .gen = p->gen};
        struct iwarp_conn_param cp = {.responder_resources = 1,
                                      .initiator_depth = 1,
                                      .crc = true,
                                      .private_data = &mine,
                                      .private_data_len = sizeof mine};
        CHECK(iwarp_cm_connect(ev->id, &cp));
        return;
    }
    case IWARP_CM_EVENT_ESTABLISHED:
        if (p->st != P_CONNECTING || e->up)
            break;
        if (!at_srv) {
            if (ev->param.private_data_len != sizeof p->peer)
                fail("client: ESTABLISHED with %u octets of private data",
                     ev->param.private_data_len);
            memcpy(&p->peer, ev->param.private_data, sizeof p->peer);
            if (p->peer.slot != p->slot || p->peer.gen != p->gen)
                fail("pair %u gen %u: the server answered for pair %u gen %u", p->slot, p->gen,
                     p->peer.slot, p->peer.gen);
        }
        e->up = true;
        pair_up(p);
        return;
    case IWARP_CM_EVENT_DISCONNECTED:
        if (p->st != P_DISCONNECTING || e->down)
            break;
        e->down = true;
        if (p->cli.down && p->srv.down) {
            if (!end_idle(&p->cli) || !end_idle(&p->srv))
                fail("pair %u gen %u: disconnected with WRs outstanding", p->slot, p->gen);
            *done = p; /* destroyed once the event is acknowledged */
        }
        return;
    default:
        break;
    }
    fail("pair %u gen %u: %s: unexpected CM event %s in state %d", p->slot, p->gen, who,
         iwarp_cm_event_str(ev->event), (int)p->st);
}

static bool cm_side(struct side *s, bool at_srv)
{
    bool any = false;
    for (;;) {
        struct iwarp_cm_event *ev;
        int rc = iwarp_cm_get_event(s->ch, &ev);
        if (rc == IWARP_ERR_BUSY)
            return any;
        if (rc < 0)
            fail("iwarp_cm_get_event: %s", iwarp_strerror(rc));
        any = true;
        struct pair *done = NULL;
        on_cm(ev, at_srv, &done);
        CHECK(iwarp_cm_ack_event(ev));
        if (done) {
            destroy_end(&done->cli);
            destroy_end(&done->srv);
            done->st = P_IDLE;
            if (!g.tearing)
                enqueue(done);
        }
    }
}

/* Handle everything pending; when nothing was, sleep on the four channels (up to 10 ms). */
static void step(void)
{
    bool any = cm_side(&g.srv, true);
    any |= cm_side(&g.cli, false);
    any |= poll_side(&g.srv, true);
    any |= poll_side(&g.cli, false);
    if (any)
        return;
    CHECK(iwarp_req_notify_cq(g.srv.cq, 0));
    CHECK(iwarp_req_notify_cq(g.cli.cq, 0));
    bool srv_any = poll_side(&g.srv, true); /* both sides polled, whatever the first found */
    bool cli_any = poll_side(&g.cli, false);
    if (srv_any || cli_any)
        return;
    struct pollfd pf[4] = {{.fd = g.srv.ch->fd, .events = POLLIN},
                           {.fd = g.cli.ch->fd, .events = POLLIN},
                           {.fd = g.srv.comp->fd, .events = POLLIN},
                           {.fd = g.cli.comp->fd, .events = POLLIN}};
    (void)poll(pf, 4, 10);
    struct side *sides[2] = {&g.srv, &g.cli};
    for (int i = 0; i < 2; i++) {
        struct iwarp_cq *cq;
        void *cq_ctx;
        while (iwarp_get_cq_event(sides[i]->comp, &cq, &cq_ctx) == 0)
            iwarp_ack_cq_events(cq, 1);
    }
}

static void check_stalls(void)
{
    double now = bench_now_s();
    for (uint32_t i = 0; i < g.qps; i++) {
        struct pair *p = &g.pairs[i];
        if (p->st != P_IDLE && now - p->t_progress > STALL_S)
            fail("pair %u gen %u: no progress for %d s (state %d, round %u, client out "
                 "%u/%u/%u/%u, server out %u/%u/%u/%u, up %d/%d, down %d/%d)",
                 p->slot, p->gen, STALL_S, (int)p->st, p->round, p->cli.out[0], p->cli.out[1],
                 p->cli.out[2], p->cli.out[3], p->srv.out[0], p->srv.out[1], p->srv.out[2],
                 p->srv.out[3], p->cli.up, p->srv.up, p->cli.down, p->srv.down);
    }
}

/* Run until f() is true, handling everything meanwhile. */
static void run_until(bool (*f)(void), const char *what, double limit_s)
{
    double start = bench_now_s(), checked = start;
    while (!f()) {
        step();
        pump_queue();
        double now = bench_now_s();
        if (now - checked > 1) {
            check_stalls();
            checked = now;
        }
        if (now - start > limit_s)
            fail("%s: not done within %.0f s", what, limit_s);
    }
}

static bool all_running(void)
{
    return g.batch_left == 0 && g.connecting == 0 && g.q_len == 0;
}

/* The next K pairs of a random order of all of them (a new order when it is used up, so each
 * cycle replaces every pair once); their next round is their last. */
static void pick_batch(void)
{
    if (g.order_pos == g.qps || g.order_pos == 0) {
        if (g.order_pos == g.qps && g.t_replaced < 0) {
            g.t_replaced = bench_now_s() - g.t0;
            printf("# every pair replaced at least once at %.1f s\n", g.t_replaced);
        }
        for (uint32_t i = g.qps - 1; i > 0; i--) {
            uint32_t j = (uint32_t)(rng_next() % (i + 1)), t = g.order[i];
            g.order[i] = g.order[j];
            g.order[j] = t;
        }
        g.order_pos = 0;
    }
    uint32_t k = g.batch < g.qps - g.order_pos ? g.batch : g.qps - g.order_pos;
    for (uint32_t n = 0; n < k; n++) {
        struct pair *p = &g.pairs[g.order[g.order_pos++]];
        p->in_batch = true;
        p->retire = true;
    }
    g.batch_left = k;
}

/* ---- samples, verdict ----------------------------------------------------------------- */

static void take_sample(void)
{
    struct sample s = {.t = bench_now_s() - g.t0,
                       .conns = g.conns,
                       .rounds = g.rounds,
                       .octets = g.octets,
                       .errors = g.errors,
                       .rss_kib = status_kib("VmRSS"),
                       .hwm_kib = status_kib("VmHWM"),
                       .fds = count_fds(),
                       .heap_kib = heap_in_use_kib(),
                       .lib_allocs = atomic_load(&lib_allocs),
                       .lib_kib = atomic_load(&lib_bytes) / 1024,
                       .load1 = load1()};
    double busy, self;
    cpu_times(&busy, &self);
    if (s.t > g.last_t) {
        s.cpu_self = (self - g.last_self) / (s.t - g.last_t);
        s.cpu_other = (busy - g.last_busy) / (s.t - g.last_t) - s.cpu_self;
        if (s.cpu_other < 0)
            s.cpu_other = 0;
    }
    g.last_t = s.t, g.last_busy = busy, g.last_self = self;
    if (g.n_samples < MAX_SAMPLES)
        g.samples[g.n_samples++] = s;
    printf("%.1f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%ld,%ld,%ld,%ld,%ld,%ld,%" PRIu64
           ",%.2f,%.2f,%.2f\n",
           s.t, s.conns, s.rounds, s.octets, s.rss_kib, s.hwm_kib, s.heap_kib, s.lib_allocs,
           s.lib_kib, s.fds, s.errors, s.load1, s.cpu_self, s.cpu_other);
    fflush(stdout);
}

struct verdict {
    bool ok, rss_ok, fds_ok, enough;
    double warm, q1_end, q4_start;
    long rss_base, rss_end, rss_bound, rss_growth, fds_base, fds_min, fds_max;
    long lib_min, lib_max, lib_kib_min, lib_kib_max, heap_first, heap_last;
    bool lib_ok;
    uint32_t n_post;
    uint64_t conns_between;
    double slope_b_per_conn;
    char text[1536];
};

static struct verdict g_v;

/* Flat after warm-up (--warmup, and every pair replaced once): of the samples after it, RSS's
 * minimum over the last quarter may exceed its maximum over the first quarter by at most max(2 MiB,
 * 2 %), and every such sample shows the same count of descriptors (all are taken with all N pairs
 * connected). */
static void judge(void)
{
    struct verdict *v = &g_v;
    memset(v, 0, sizeof *v);
    /* the warm-up ends at --warmup, and not before every pair has been replaced once: only
     * then is each pair's memory in the state it keeps (freed and allocated again) */
    v->warm = g.warmup > g.t_replaced ? g.warmup : g.t_replaced;
    if (g.t_replaced < 0) {
        snprintf(v->text, sizeof v->text,
                 "the warm-up never ended: not every pair was replaced once: no verdict");
        return;
    }
    uint32_t first = 0;
    while (first < g.n_samples && g.samples[first].t < v->warm)
        first++;
    v->n_post = g.n_samples - first;
    v->enough = v->n_post >= 4;
    if (!v->enough) {
        snprintf(v->text, sizeof v->text,
                 "too few samples after the warm-up (%u; 4 needed): no verdict", v->n_post);
        return;
    }
    double t_a = g.samples[first].t, t_z = g.samples[g.n_samples - 1].t;
    v->q1_end = t_a + (t_z - t_a) / 4;
    v->q4_start = t_z - (t_z - t_a) / 4;
    v->rss_base = 0;
    v->rss_end = -1;
    v->fds_base = g.samples[first].fds;
    v->fds_min = v->fds_max = v->fds_base;
    v->lib_min = v->lib_max = g.samples[first].lib_allocs;
    v->lib_kib_min = v->lib_kib_max = g.samples[first].lib_kib;
    v->heap_first = g.samples[first].heap_kib;
    v->heap_last = g.samples[g.n_samples - 1].heap_kib;
    uint64_t c1 = 0, c4 = 0;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (uint32_t i = first; i < g.n_samples; i++) {
        const struct sample *s = &g.samples[i];
        if (s->t <= v->q1_end) {
            if (s->rss_kib > v->rss_base)
                v->rss_base = s->rss_kib;
            c1 = s->conns;
        }
        if (s->t >= v->q4_start) {
            if (v->rss_end < 0 || s->rss_kib < v->rss_end)
                v->rss_end = s->rss_kib;
            if (!c4)
                c4 = s->conns;
        }
        v->fds_min = s->fds < v->fds_min ? s->fds : v->fds_min;
        v->lib_min = s->lib_allocs < v->lib_min ? s->lib_allocs : v->lib_min;
        v->lib_max = s->lib_allocs > v->lib_max ? s->lib_allocs : v->lib_max;
        v->lib_kib_min = s->lib_kib < v->lib_kib_min ? s->lib_kib : v->lib_kib_min;
        v->lib_kib_max = s->lib_kib > v->lib_kib_max ? s->lib_kib : v->lib_kib_max;
        v->fds_max = s->fds > v->fds_max ? s->fds : v->fds_max;
        double x = (double)s->conns, y = (double)s->rss_kib * 1024;
        sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    double n = v->n_post, den = n * sxx - sx * sx;
    v->slope_b_per_conn = den > 0 ? (n * sxy - sx * sy) / den : 0;
    v->conns_between = c4 > c1 ? c4 - c1 : 0;
    v->rss_bound = v->rss_base / 50 > 2048 ? v->rss_base / 50 : 2048;
    v->rss_growth = v->rss_end - v->rss_base;
    v->rss_ok = v->rss_growth <= v->rss_bound;
    v->fds_ok = v->fds_min == v->fds_max;
    v->lib_ok = v->lib_min == v->lib_max && v->lib_kib_min == v->lib_kib_max;
    v->ok = v->fds_ok && v->lib_ok && (v->rss_ok || !g.judge_rss);
    int o = snprintf(
        v->text, sizeof v->text,
        "RSS %s: after the warm-up (%.0f s) the first quarter's maximum is %ld KiB, the last "
        "quarter's minimum %ld KiB: %+ld KiB (bound %ld KiB)%s; least-squares slope %.1f "
        "B/connection; a leak of %.0f B per connection or more would have crossed the bound\n",
        v->rss_ok ? "flat" : "GREW", v->warm, v->rss_base, v->rss_end, v->rss_growth, v->rss_bound,
        g.judge_rss ? "" : " (not judged: --no-judge-rss)", v->slope_b_per_conn,
        v->conns_between ? (double)v->rss_bound * 1024 / (double)v->conns_between : 0.0);
    o += snprintf(v->text + o, sizeof v->text - (size_t)o,
                  "fds %s: %ld..%ld over the %u samples after the warm-up (all at %u pairs up)\n",
                  v->fds_ok ? "flat" : "CHANGED", v->fds_min, v->fds_max, v->n_post, g.qps);
    snprintf(v->text + o, sizeof v->text - (size_t)o,
             "library allocations %s: %ld..%ld blocks, %ld..%ld KiB live; malloc's octets in use "
             "%ld KiB after the warm-up, %ld KiB at the end",
             v->lib_ok ? "flat" : "CHANGED", v->lib_min, v->lib_max, v->lib_kib_min, v->lib_kib_max,
             v->heap_first, v->heap_last);
}

static void write_json(const char *verdict, const char *why)
{
    if (!g.json)
        return;
    FILE *f = fopen(g.json, "w");
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", g.json, strerror(errno));
        return;
    }
    fprintf(f,
            "{\n  \"program\": \"bench_soak\",\n  \"config\": {\"duration_s\": %.0f, \"qps\": %u, "
            "\"batch\": %u, \"interval_s\": %.1f, \"warmup_s\": %.1f, \"max_len\": %u, "
            "\"seed\": %" PRIu64 ", \"processes\": 1, \"progress\": \"thread\", \"crc\": true},\n",
            g.duration, g.qps, g.batch, g.interval, g.warmup, g.max_len, g.seed);
    fprintf(f, "  \"samples\": [\n");
    for (uint32_t i = 0; i < g.n_samples; i++) {
        const struct sample *s = &g.samples[i];
        fprintf(f,
                "    {\"t_s\": %.1f, \"connections\": %" PRIu64 ", \"rounds\": %" PRIu64
                ", \"octets\": %" PRIu64 ", \"vmrss_kib\": %ld, \"vmhwm_kib\": %ld, "
                "\"heap_kib\": %ld, \"lib_allocs\": %ld, \"lib_kib\": %ld, \"fds\": %ld, "
                "\"errors\": %" PRIu64 ", \"load1\": %.2f, \"cpu_self\": %.2f, "
                "\"cpu_other\": %.2f}%s\n",
                s->t, s->conns, s->rounds, s->octets, s->rss_kib, s->hwm_kib, s->heap_kib,
                s->lib_allocs, s->lib_kib, s->fds, s->errors, s->load1, s->cpu_self, s->cpu_other,
                i + 1 < g.n_samples ? "," : "");
    }
    fprintf(f,
            "  ],\n  \"totals\": {\"connections\": %" PRIu64 ", \"rounds\": %" PRIu64
            ", \"octets\": %" PRIu64 ", \"wrs\": %" PRIu64 ", \"errors\": %" PRIu64
            ", \"fds_before\": %ld, \"fds_after\": %ld},\n",
            g.conns, g.rounds, g.octets, g.wrs, g.errors, g.fds_start, g.fds_end);
    const struct verdict *v = &g_v;
    fprintf(
        f,
        "  \"judgement\": {\"rss_base_kib\": %ld, \"rss_end_kib\": %ld, \"rss_growth_kib\": "
        "%ld, \"rss_bound_kib\": %ld, \"rss_flat\": %s, \"rss_judged\": %s, \"slope_b_per_conn\": "
        "%.1f, \"fds_min\": %ld, \"fds_max\": %ld, \"fds_flat\": %s, \"lib_allocs_min\": %ld, "
        "\"lib_allocs_max\": %ld, \"lib_kib_min\": %ld, \"lib_kib_max\": %ld, \"lib_flat\": %s, "
        "\"heap_kib_first\": %ld, \"heap_kib_last\": %ld, \"all_replaced_s\": %.1f, "
        "\"warmup_end_s\": %.1f, \"samples_after_warmup\": %u},\n",
        v->rss_base, v->rss_end, v->rss_growth, v->rss_bound, v->rss_ok ? "true" : "false",
        g.judge_rss ? "true" : "false", v->slope_b_per_conn, v->fds_min, v->fds_max,
        v->fds_ok ? "true" : "false", v->lib_min, v->lib_max, v->lib_kib_min, v->lib_kib_max,
        v->lib_ok ? "true" : "false", v->heap_first, v->heap_last, g.t_replaced, v->warm,
        v->n_post);
    fprintf(f, "  \"verdict\": \"%s\",\n  \"why\": \"", verdict);
    for (const char *c = why; *c; c++)
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("; ", f);
        else
            fputc(*c, f);
    fprintf(f, "\"\n}\n");
    fclose(f);
}

/* ---- teardown ------------------------------------------------------------------------- */

static bool all_down(void)
{
    for (uint32_t i = 0; i < g.qps; i++)
        if (g.pairs[i].st != P_IDLE)
            return false;
    return true;
}

/* Every pair runs its last round and is disconnected; nothing is reconnected. */
static void teardown(void)
{
    g.tearing = true;
    for (uint32_t i = 0; i < g.qps; i++)
        g.pairs[i].retire = true;
    double start = bench_now_s(), checked = start;
    while (!all_down()) {
        step();
        double now = bench_now_s();
        if (now - checked > 1) {
            check_stalls();
            checked = now;
        }
        if (now - start > 120)
            fail("teardown: not done within 120 s");
    }
    CHECK(iwarp_cm_destroy_id(g.listen));
    side_fini(&g.cli);
    side_fini(&g.srv);
}

/* ---- main ----------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: " PROG " [--duration S] [--qps N] [--batch K] [--interval S] [--warmup S]\n"
            "                  [--max-len OCTETS] [--seed N] [--json FILE] [--no-judge-rss]\n");
    exit(2);
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    rlim_t want = 2u * g.qps + 2u * WINDOW + 64u;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    if (rl.rlim_max < want) {
        fprintf(stderr, PROG ": %u QPs need %lu descriptors, the hard limit is %lu\n", g.qps,
                (unsigned long)want, (unsigned long)rl.rlim_max);
        exit(2);
    }
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        bench_die(PROG, "setrlimit", 0);
}

int main(int argc, char **argv)
{
    g.duration = 60;
    g.interval = 10;
    g.warmup = -1;
    g.qps = 1000;
    g.batch = 32;
    g.max_len = 8192;
    g.seed = 1;
    g.judge_rss = true;
    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        bool has = v != NULL;
        if (!strcmp(argv[a], "--no-judge-rss")) {
            g.judge_rss = false;
            continue;
        }
        if (!has)
            usage();
        if (!strcmp(argv[a], "--duration"))
            g.duration = atof(v);
        else if (!strcmp(argv[a], "--qps"))
            g.qps = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(argv[a], "--batch"))
            g.batch = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(argv[a], "--interval"))
            g.interval = atof(v);
        else if (!strcmp(argv[a], "--warmup"))
            g.warmup = atof(v);
        else if (!strcmp(argv[a], "--max-len"))
            g.max_len = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(argv[a], "--seed"))
            g.seed = strtoull(v, NULL, 0);
        else if (!strcmp(argv[a], "--json"))
            g.json = v;
        else
            usage();
        a++;
    }
    if (g.duration <= 0 || g.interval <= 0 || g.qps < 1 || g.qps > (1u << 20) || g.batch < 1 ||
        g.max_len < 1 || g.max_len > (1u << 24)) {
        fprintf(stderr, PROG ": --duration > 0, --interval > 0, --qps 1..1048576, --batch >= 1, "
                             "--max-len 1..16777216\n");
        return 2;
    }
    if (g.warmup < 0) { /* 10 % of the run, at least 60 s, at most half of it */
        g.warmup = g.duration / 10 > 60 ? g.duration / 10 : 60;
        if (g.warmup > g.duration / 2)
            g.warmup = g.duration / 2;
    }
    g.rng = g.seed;
    g.t_replaced = -1;
    g.fds_end = -1;
    raise_fd_limit();
    g.fds_start = count_fds();
    g.samples = calloc(MAX_SAMPLES, sizeof *g.samples);
    g.pairs = calloc(g.qps, sizeof *g.pairs);
    g.order = calloc(g.qps, sizeof *g.order);
    if (!g.samples || !g.pairs || !g.order)
        bench_die(PROG, "calloc", 0);
    for (uint32_t i = 0; i < g.qps; i++) {
        struct pair *p = &g.pairs[i];
        p->slot = i;
        g.order[i] = i;
        p->cli.buf = aligned_alloc(64, (end_len() + 63) / 64 * 64);
        p->srv.buf = aligned_alloc(64, (end_len() + 63) / 64 * 64);
        if (!p->cli.buf || !p->srv.buf)
            bench_die(PROG, "aligned_alloc", 0);
        memset(p->cli.buf, 0, end_len());
        memset(p->srv.buf, 0, end_len());
    }

    g.t0 = bench_now_s();
    cpu_times(&g.last_busy, &g.last_self);
    side_init(&g.srv);
    side_init(&g.cli);
    CHECK(iwarp_cm_create_id(g.srv.ch, &g.listen, NULL, IWARP_PS_TCP));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(iwarp_cm_bind_addr(g.listen, (struct sockaddr *)&sin));
    CHECK(iwarp_cm_listen(g.listen, BACKLOG));
    memcpy(&g.dst, &g.listen->local_addr, sizeof g.dst);

    printf("# bench_soak: %u QP pairs, batches of %u, %.0f s, samples every %.0f s, warm-up "
           "%.0f s and every pair replaced once, one process, progress threads, CRC on, messages "
           "of 1..%u octets\n",
           g.qps, g.batch, g.duration, g.interval, g.warmup, g.max_len);
    printf("t_s,connections,rounds,octets,vmrss_kib,vmhwm_kib,heap_kib,lib_allocs,lib_kib,fds,"
           "errors,load1,cpu_self,"
           "cpu_other\n");
    fflush(stdout);

    for (uint32_t i = 0; i < g.qps; i++)
        enqueue(&g.pairs[i]);
    pump_queue();
    run_until(all_running, "connecting every pair", 60 + g.qps / 10.0);
    take_sample();
    double next_sample = bench_now_s() - g.t0 + g.interval;
    while (bench_now_s() - g.t0 < g.duration) {
        pick_batch();
        run_until(all_running, "a batch", STALL_S);
        double t = bench_now_s() - g.t0;
        if (t >= next_sample || t >= g.duration) {
            take_sample();
            while (next_sample <= t)
                next_sample += g.interval;
        }
    }
    /* judged before the teardown, so that a teardown that fails (an MR or QP left over) still
     * shows how the samples went */
    judge();
    for (const char *l = g_v.text; *l;) {
        const char *nl = strchr(l, '\n');
        int len = nl ? (int)(nl - l) : (int)strlen(l);
        printf("# %.*s\n", len, l);
        l += len + (nl != NULL);
    }
    fflush(stdout);
    teardown();
    long fds_end = g.fds_end = count_fds();
    bool ok = g_v.enough && g_v.ok && fds_end == g.fds_start;
    printf("# %" PRIu64 " connections, %" PRIu64 " rounds, %" PRIu64 " WRs, %.3f GB moved in "
           "%.0f s, %" PRIu64 " errors; descriptors before %ld, after teardown %ld\n",
           g.conns, g.rounds, g.wrs, (double)g.octets / 1e9, bench_now_s() - g.t0, g.errors,
           g.fds_start, fds_end);
    char why[1700];
    snprintf(why, sizeof why, "%s%s", g_v.text,
             fds_end == g.fds_start ? "" : "; descriptors left after teardown");
    printf("# verdict: %s\n", ok ? "PASS (flat after warm-up)" : "FAIL");
    write_json(ok ? "pass" : "fail", why);
    return ok ? 0 : 1;
}
