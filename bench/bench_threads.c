/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Posting threads against one context: the aggregate RDMA Write bandwidth of N QPs driven by one
 * thread, next to the same N QPs driven by one thread each, measured pass by pass in the same
 * run (medians, and the median of the per-pass ratios). A context lock held across system calls
 * would serialise the threads; without it they only share the CPUs.
 *
 * Both contexts are in IWARP_PROGRESS_CALLER mode. The target is one thread pinned to the last
 * CPU that drives its context; the initiator's threads post and busy-poll their own CQs (each
 * poll also makes the context's progress) and, unless --spread, share CPU 0, so that on a
 * 2-core machine both cases have the same CPUs and the ratio shows what the threads cost each
 * other. --spread puts initiator thread k on CPU k (on machines with more cores than threads).
 * Each pass runs both, the one first in even passes and the threads first in odd ones
 * (--threads-first: the other way round; scripts/bench.py alternates it over its passes of one).
 *
 *   bench_threads [--qps N] [--passes N] [--ms MS_PER_PASS] [--size OCTETS] [--no-crc] [--spread]
 *                 [--threads-first]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "iwarp/iwarp.h"

enum { MAX_QPS = 16, MAX_PASSES = 32, QD = 16 };

#define CHECK(call)                                 \
    do {                                            \
        int rc_ = (call);                           \
        if (rc_ < 0)                                \
            bench_die("bench_threads", #call, rc_); \
    } while (0)

/* One side: a context, its CM channel and PD, one buffer, and a CQ per QP. */
struct side {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_mr *mr;
    uint8_t *buf;
    size_t len;
    struct iwarp_cm_id *listen, *ids[MAX_QPS];
    struct iwarp_cq *cqs[MAX_QPS];
};

static void side_init(struct side *s, size_t len, uint32_t nqps)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = IWARP_PROGRESS_CALLER;
    CHECK(iwarp_ctx_create(&a, &s->ctx));
    CHECK(iwarp_cm_create_channel(s->ctx, &s->ch));
    (void)fcntl(s->ch->fd, F_SETFL, fcntl(s->ch->fd, F_GETFL) | O_NONBLOCK);
    CHECK(iwarp_alloc_pd(s->ctx, &s->pd));
    for (uint32_t q = 0; q < nqps; q++)
        CHECK(iwarp_create_cq(s->ctx, 4 * QD + 8, NULL, NULL, 0, &s->cqs[q]));
    s->len = len;
    if (!(s->buf = aligned_alloc(4096, len)))
        bench_die("bench_threads", "aligned_alloc", 0);
    memset(s->buf, 0xA5, len);
    CHECK(iwarp_reg_mr(s->pd, s->buf, len, IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE,
                       &s->mr));
}

static void make_qp(struct side *s, struct iwarp_cm_id *id, uint32_t q)
{
    struct iwarp_qp_init_attr qa = {
        .send_cq = s->cqs[q],
        .recv_cq = s->cqs[q],
        .cap = {.max_send_wr = 2 * QD, .max_recv_wr = 2 * QD, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IWARP_QPT_RC};
    CHECK(iwarp_cm_create_qp(id, s->pd, &qa));
}

/* The next CM event of s, of type t, driving both contexts meanwhile. */
static struct iwarp_cm_event *expect_event(struct side *s, struct side *other,
                                           enum iwarp_cm_event_type t)
{
    for (double deadline = bench_now_s() + 10;;) {
        struct iwarp_cm_event *ev;
        int rc = iwarp_cm_get_event(s->ch, &ev);
        if (rc == 0) {
            if (ev->event != t) {
                fprintf(stderr, "bench_threads: CM event %s, expected %s\n",
                        iwarp_cm_event_str(ev->event), iwarp_cm_event_str(t));
                exit(1);
            }
            return ev;
        }
        if (rc != IWARP_ERR_BUSY)
            bench_die("bench_threads", "iwarp_cm_get_event", rc);
        if (bench_now_s() > deadline)
            bench_die("bench_threads", "connection set-up", IWARP_ERR_TIMEDOUT);
        iwarp_ctx_progress(s->ctx, 0);
        iwarp_ctx_progress(other->ctx, 0);
    }
}

/* Connect QP q of i to a new QP of t over 127.0.0.1 (t listens on *addr); the initiator sends
 * first (RFC 5044 §7.1.2). */
static void connect_qp(struct side *i, struct side *t, uint32_t q, const struct sockaddr_in *addr,
                       bool crc)
{
    CHECK(iwarp_cm_create_id(i->ch, &i->ids[q], NULL, IWARP_PS_TCP));
    CHECK(iwarp_cm_resolve_addr(i->ids[q], NULL, (const struct sockaddr *)addr, 1000));
    iwarp_cm_ack_event(expect_event(i, t, IWARP_CM_EVENT_ADDR_RESOLVED));
    CHECK(iwarp_cm_resolve_route(i->ids[q], 1000));
    iwarp_cm_ack_event(expect_event(i, t, IWARP_CM_EVENT_ROUTE_RESOLVED));
    make_qp(i, i->ids[q], q);
    struct iwarp_conn_param p = {.responder_resources = 16, .initiator_depth = 16, .crc = crc};
    CHECK(iwarp_cm_connect(i->ids[q], &p));
    struct iwarp_cm_event *ev = expect_event(t, i, IWARP_CM_EVENT_CONNECT_REQUEST);
    t->ids[q] = ev->id;
    iwarp_cm_ack_event(ev);
    make_qp(t, t->ids[q], q);
    CHECK(iwarp_cm_accept(t->ids[q], &p));
    iwarp_cm_ack_event(expect_event(i, t, IWARP_CM_EVENT_ESTABLISHED));
    struct iwarp_recv_wr rw = {.wr_id = 1};
    CHECK(iwarp_post_recv(t->ids[q]->qp, &rw, NULL));
    struct iwarp_send_wr sw = {
        .wr_id = 1, .opcode = IWARP_WR_SEND, .send_flags = IWARP_SEND_SIGNALED};
    CHECK(iwarp_post_send(i->ids[q]->qp, &sw, NULL));
    iwarp_cm_ack_event(expect_event(t, i, IWARP_CM_EVENT_ESTABLISHED));
    struct iwarp_wc wc;
    int got = 0;
    for (double d = bench_now_s() + 5; got < 2 && bench_now_s() < d;) {
        got += iwarp_poll_cq(i->cqs[q], 1, &wc) > 0;
        got += iwarp_poll_cq(t->cqs[q], 1, &wc) > 0;
    }
    if (got < 2)
        bench_die("bench_threads", "first Send", IWARP_ERR_TIMEDOUT);
}

/* ---- one pass -------------------------------------------------------------------------- */

struct pass {
    struct side *i, *t;
    uint64_t t_addr;
    uint32_t t_rkey, size, nqps, nthreads;
    double seconds;
    bool spread;
    atomic_bool stop;
    atomic_uint_fast64_t octets;
};

struct poster {
    struct pass *p;
    uint32_t k; /* thread k drives QPs k, k + nthreads, ... */
};

static void post_write(struct pass *p, uint32_t q, uint64_t n)
{
    size_t slots = p->i->len / p->size / p->nqps;
    size_t off = ((size_t)q * slots + (size_t)(n % slots)) * p->size;
    struct iwarp_sge s = {(uint64_t)(uintptr_t)(p->i->buf + off), p->size, p->i->mr->lkey};
    struct iwarp_send_wr w = {.wr_id = n,
                              .sg_list = &s,
                              .num_sge = 1,
                              .opcode = IWARP_WR_RDMA_WRITE,
                              .send_flags = IWARP_SEND_SIGNALED};
    w.wr.rdma.remote_addr = p->t_addr + off;
    w.wr.rdma.rkey = p->t_rkey;
    CHECK(iwarp_post_send(p->i->ids[q]->qp, &w, NULL));
}

/* Keep QD Writes in flight on each of this thread's QPs until the time is up. */
static void *poster_thread(void *arg)
{
    struct poster *me = arg;
    struct pass *p = me->p;
    bench_pin(p->spread ? (int)me->k : 0);
    uint64_t posted[MAX_QPS] = {0}, done[MAX_QPS] = {0}, octets = 0;
    for (uint32_t q = me->k; q < p->nqps; q += p->nthreads)
        for (; posted[q] < QD; posted[q]++)
            post_write(p, q, posted[q]);
    double end = bench_now_s() + p->seconds;
    for (bool more = true; more;) {
        more = false;
        bool open = bench_now_s() < end, idle = true;
        for (uint32_t q = me->k; q < p->nqps; q += p->nthreads) {
            struct iwarp_wc wc[QD];
            int n = iwarp_poll_cq(p->i->cqs[q], QD, wc);
            if (n < 0)
                bench_die("bench_threads", "iwarp_poll_cq", n);
            idle &= n == 0;
            for (int c = 0; c < n; c++) {
                if (wc[c].status != IWARP_WC_SUCCESS) {
                    fprintf(stderr, "bench_threads: %s\n", iwarp_wc_status_str(wc[c].status));
                    exit(1);
                }
                done[q]++;
                octets += p->size;
                if (open)
                    post_write(p, q, posted[q]++);
            }
            more |= done[q] < posted[q];
        }
        if (idle) /* threads that share a CPU: spinning would take the time the other needs */
            sched_yield();
    }
    atomic_fetch_add(&p->octets, octets);
    return NULL;
}

static void *target_thread(void *arg)
{
    struct pass *p = arg;
    bench_pin(bench_n_cpus() - 1);
    while (!atomic_load_explicit(&p->stop, memory_order_relaxed))
        iwarp_ctx_progress(p->t->ctx, 0);
    return NULL;
}

/* Aggregate GB/s of one pass with p->nthreads initiator threads. */
static double run_pass(struct pass *p)
{
    pthread_t tt, th[MAX_QPS];
    struct poster ps[MAX_QPS];
    atomic_store(&p->stop, false);
    atomic_store(&p->octets, 0);
    pthread_create(&tt, NULL, target_thread, p);
    double t0 = bench_now_s();
    for (uint32_t k = 0; k < p->nthreads; k++) {
        ps[k] = (struct poster){p, k};
        pthread_create(&th[k], NULL, poster_thread, &ps[k]);
    }
    for (uint32_t k = 0; k < p->nthreads; k++)
        pthread_join(th[k], NULL);
    double t = bench_now_s() - t0;
    atomic_store(&p->stop, true);
    pthread_join(tt, NULL);
    return (double)atomic_load(&p->octets) / t / 1e9;
}

int main(int argc, char **argv)
{
    uint32_t nqps = 2, passes = 7, ms = 1000, size = 65536;
    bool crc = true, spread = false, threads_first = false;
    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : "";
        if (!strcmp(argv[a], "--qps"))
            nqps = (uint32_t)atoi(v), a++;
        else if (!strcmp(argv[a], "--passes"))
            passes = (uint32_t)atoi(v), a++;
        else if (!strcmp(argv[a], "--ms"))
            ms = (uint32_t)atoi(v), a++;
        else if (!strcmp(argv[a], "--size"))
            size = (uint32_t)atoi(v), a++;
        else if (!strcmp(argv[a], "--no-crc"))
            crc = false;
        else if (!strcmp(argv[a], "--spread"))
            spread = true;
        else if (!strcmp(argv[a], "--threads-first"))
            threads_first = true;
        else {
            fprintf(stderr, "usage: bench_threads [--qps N] [--passes N] [--ms MS] [--size OCTETS] "
                            "[--no-crc] [--spread] [--threads-first]\n");
            return 2;
        }
    }
    if (nqps < 2 || nqps > MAX_QPS || passes < 1 || passes > MAX_PASSES || size < 64 ||
        size > (1u << 20)) {
        fprintf(stderr, "bench_threads: --qps 2..%d, --passes 1..%d, --size 64..1048576\n", MAX_QPS,
                MAX_PASSES);
        return 2;
    }
    size_t len = (size_t)size * QD * nqps;
    struct side i = {0}, t = {0};
    side_init(&i, len, nqps);
    side_init(&t, len, nqps);
    CHECK(iwarp_cm_create_id(t.ch, &t.listen, NULL, IWARP_PS_TCP));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(iwarp_cm_bind_addr(t.listen, (struct sockaddr *)&sin));
    CHECK(iwarp_cm_listen(t.listen, MAX_QPS));
    struct sockaddr_in bound;
    memcpy(&bound, &t.listen->local_addr, sizeof bound);
    for (uint32_t q = 0; q < nqps; q++)
        connect_qp(&i, &t, q, &bound, crc);

    struct pass p = {.i = &i,
                     .t = &t,
                     .t_addr = (uint64_t)(uintptr_t)t.buf,
                     .t_rkey = t.mr->rkey,
                     .size = size,
                     .nqps = nqps,
                     .seconds = ms / 1000.0,
                     .spread = spread};
    double one[MAX_PASSES], many[MAX_PASSES], ratio[MAX_PASSES];
    printf("RDMA Write %u octets, CRC %s, %u QPs, %u passes of %u ms, initiator threads %s\n", size,
           crc ? "on" : "off", nqps, passes, ms, spread ? "one per CPU" : "all on CPU 0");
    printf("%-6s %14s %14s %8s\n", "pass", "1 thread GB/s", "threads GB/s", "ratio");
    for (uint32_t k = 0; k < passes; k++) {
        /* The two alternate, and which goes first alternates too (1 N, N 1, ...), so that an
         * effect of running first or second hits both alike. Four runs of 8 passes each way:
         * 0.81-0.99 (median 0.92) with one thread always first, 0.86-1.05 (0.97) with the
         * threads first; two runs of the same kind in a pair, 0.96-1.01. */
        bool threads_go_first = (k % 2 == 1) != threads_first;
        for (uint32_t r = 0; r < 2; r++) {
            bool threads = (r == 0) == threads_go_first;
            p.nthreads = threads ? nqps : 1;
            *(threads ? &many[k] : &one[k]) = run_pass(&p);
        }
        ratio[k] = many[k] / one[k];
        printf("%-6u %14.3f %14.3f %8.3f\n", k + 1, one[k], many[k], ratio[k]);
    }
    double mo = bench_median(one, (int)passes), mm = bench_median(many, (int)passes);
    printf("median %14.3f %14.3f %8.3f  (median of the per-pass ratios)\n", mo, mm,
           bench_median(ratio, (int)passes));
    return 0;
}
