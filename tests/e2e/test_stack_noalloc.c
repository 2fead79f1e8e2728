/* SPDX-License-Identifier: BSD-2-Clause */
/* No allocation on the data path, proven over real TCP.
 *
 * Both contexts get a struct iwarp_mem_hooks that serves every request from a static pool and
 * counts calls. After connecting and warming up, a loop runs every data-path verb: Send, Send
 * with Solicited Event, Send with Invalidate, zero-length Send, RDMA Write (through an MR and
 * through a type-2 window), zero-length Write, RDMA Read, zero-length Read, fast registration
 * (REG_MR), local invalidate, type-1 bind (iwarp_bind_mw) and type-2 bind (BIND_MW WR),
 * post_recv, post_srq_recv, poll_cq, req_notify_cq + get_cq_event + ack_cq_events. The hook
 * counts of both contexts must not move during the loop.
 *
 * What else this proves, and how: the hooks never call libc, so any allocation the process
 * makes through libc is one the library made behind the hooks' back (or libc made for it).
 * Under a sanitizer (ASan in the normal suite, TSan) __sanitizer_install_malloc_and_free_hooks
 * reports every malloc/calloc/realloc/aligned allocation of the process, from every thread
 * (the progress threads included); in a plain build the test interposes malloc/calloc/realloc
 * itself. The test makes none of its own in the measured windows, so:
 *  - during the loop: zero libc allocations (nothing allocates on the data path, hooked or not);
 *  - from before connecting to after the last teardown call but context destruction: zero
 *    libc allocations, i.e. every allocation of the CM, QPs, CQs, MRs, SRQ and channels went
 *    through the hooks (context creation is outside the window, and the window opens once the
 *    new progress thread sleeps: the sanitizer runtime and glibc allocate during a thread's
 *    start-up, on that thread);
 *  - after both contexts are destroyed, every hook allocation has been freed. */
#define _GNU_SOURCE 1
#include <stdatomic.h>
#include <unistd.h>

#include "proc_probe.h"
#include "stack_pair.h"

/* ---- a counting allocator over a static pool ------------------------------------------------ */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NA_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define NA_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define NA_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define NA_TSAN 1
#endif

#ifdef NA_ASAN
#include <sanitizer/asan_interface.h>
#define NA_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define NA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define NA_POISON(p, n)   ((void)(p), (void)(n))
#define NA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define POOL_SIZE (64u << 20)
#define HDR       32u /* size header, and a poisoned gap before each block */

static _Alignas(64) uint8_t pool[POOL_SIZE];
static atomic_size_t pool_top;

struct counting_hooks {
    struct iwarp_mem_hooks hooks;
    atomic_ulong calls; /* malloc + calloc + free */
    atomic_ulong live;  /* allocations not yet freed */
};

static void *pool_take(struct counting_hooks *h, size_t n)
{
    atomic_fetch_add(&h->calls, 1);
    size_t need = HDR + ((n + 15u) & ~(size_t)15u);
    size_t off = atomic_fetch_add(&pool_top, need);
    if (off + need > POOL_SIZE || n > POOL_SIZE)
        return NULL;
    uint8_t *p = pool + off + HDR;
    NA_UNPOISON(p, n);
    memset(p, 0, n); /* calloc's promise; malloc callers get zeroes too */
    NA_UNPOISON(pool + off, sizeof n);
    memcpy(pool + off, &n, sizeof n);
    NA_POISON(pool + off, sizeof n);
    atomic_fetch_add(&h->live, 1);
    return p;
}

static void *hook_malloc(size_t n, void *user)
{
    return pool_take(user, n);
}

static void *hook_calloc(size_t k, size_t n, void *user)
{
    if (n && k > SIZE_MAX / n)
        return NULL;
    return pool_take(user, k * n);
}

static void hook_free(void *p, void *user)
{
    struct counting_hooks *h = user;
    atomic_fetch_add(&h->calls, 1);
    if (!p)
        return;
    uint8_t *b = p;
    ASSERT_TRUE(b >= pool + HDR && b < pool + POOL_SIZE);
    size_t n;
    NA_UNPOISON(b - HDR, sizeof n);
    memcpy(&n, b - HDR, sizeof n);
    NA_POISON(b - HDR, sizeof n);
    NA_POISON(b, n); /* never reused: a use after free is an ASan report */
    atomic_fetch_sub(&h->live, 1);
}

static void hooks_init(struct counting_hooks *h)
{
    h->hooks = (struct iwarp_mem_hooks){
        .malloc_fn = hook_malloc, .calloc_fn = hook_calloc, .free_fn = hook_free, .user = h};
    atomic_init(&h->calls, 0);
    atomic_init(&h->live, 0);
}

/* ---- every libc allocation of the process ---------------------------------------------------- */

static atomic_ulong libc_allocs;

#if defined(NA_ASAN) || defined(NA_TSAN)
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n)
{
    (void)p;
    (void)n;
    atomic_fetch_add(&libc_allocs, 1);
}

static void on_free(const volatile void *p)
{
    (void)p;
}

static void libc_watch_start(void)
{
    ASSERT_NE(__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free), 0);
}
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n)
{
    atomic_fetch_add(&libc_allocs, 1);
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    atomic_fetch_add(&libc_allocs, 1);
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    atomic_fetch_add(&libc_allocs, 1);
    return __libc_realloc(p, n);
}

static void libc_watch_start(void)
{
}
#endif

/* Wait until every other thread of the process sleeps (the progress thread in epoll_wait):
 * a new thread's start-up (ASan's, glibc's) allocates through libc on that thread, after
 * pthread_create has returned, and must not be counted against the library. */
static void wait_threads_asleep(void)
{
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    for (;;) {
        pid_t tids[PROBE_MAX_THREADS], awake = 0;
        size_t n = probe_other_threads(tids, PROBE_MAX_THREADS);
        ASSERT_TRUE(n <= PROBE_MAX_THREADS);
        for (size_t i = 0; i < n && !awake; i++) {
            char st = probe_thread_state(tids[i]);
            if (st != 0 && st != 'S') /* 0: gone */
                awake = tids[i];
        }
        if (!awake)
            return;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "every other thread asleep (thread %d is not)", (int)awake);
        deadline_pause_us(1000);
    }
}

/* ---- the data path --------------------------------------------------------------------------- */

#define MSG       2048u
#define BUF       65536u
#define N_WARM    16u
#define N_LOOP    200u
#define N_RECV    4u /* per iteration on the RQ: Send, Send+SE, Send+Inv, zero-length Send */
#define SEED_SEND 0x1000u

/* Server buffer layout */
#define S_RECV  0u     /* N_RECV receive buffers of MSG */
#define S_SRQ   8192u  /* the SRQ pair's receive buffer */
#define S_WRITE 16384u /* Write sink (MR) */
#define S_MW    24576u /* Write sink through the type-2 window */
#define S_READ  32768u /* Read source */
#define S_FAST  40960u /* fast-registered region, invalidated by the peer each round */
/* Client buffer layout */
#define C_SRC   0u     /* Send / Write sources */
#define C_SINK  16384u /* Read sink */
#define C_FAST  32768u /* the client's own fast-registered region */

struct world {
    struct sp_side srv, cli;
    struct sp_pair pairs[2]; /* 0: server QP with an RQ; 1: server QP on an SRQ */
    struct iwarp_srq *srq;
    uint8_t *sbuf, *cbuf;
    struct iwarp_mr *smr, *cmr;
    struct iwarp_mr *sfast, *cfast; /* from iwarp_alloc_mr */
    struct iwarp_mw *mw1, *mw2;
    uint32_t mw2_rkey; /* the type-2 window's current STag (the consumer picks its keys) */
    uint8_t sfast_key, cfast_key;
};

static void poll_ok(struct sp_side *s, struct sp_side *o, enum iwarp_wc_opcode op, uint64_t wr_id)
{
    struct iwarp_wc wc = sp_poll_ok(s, o, op);
    ASSERT_EQ(wc.wr_id, wr_id);
}

/* Wait for the completion channel event the solicited arm promised. */
static void wait_cq_event(struct world *w)
{
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    struct iwarp_cq *cq = NULL;
    void *cq_ctx = NULL;
    int rc;
    while ((rc = iwarp_get_cq_event(w->srv.comp, &cq, &cq_ctx)) == IWARP_ERR_BUSY) {
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the completion channel event of the solicited arm");
        iwarp_ctx_progress(w->cli.ctx, 0);
        struct pollfd p = {.fd = w->srv.comp->fd, .events = POLLIN};
        (void)poll(&p, 1, 1);
    }
    ASSERT_EQ(rc, 0);
    ASSERT_TRUE(cq == w->srv.cq);
    ASSERT_TRUE(cq_ctx == &w->srv);
    iwarp_ack_cq_events(cq, 1);
}

/* One round of every data-path operation; everything checked. */
static void one_round(struct world *w, uint32_t round)
{
    struct sp_side *srv = &w->srv, *cli = &w->cli;
    struct iwarp_qp *sq = w->pairs[0].srv.qp, *cq = w->pairs[0].cli.qp;
    struct iwarp_qp *cq2 = w->pairs[1].cli.qp;
    const struct sp_advert *r = &w->pairs[0].cli.peer;
    uint8_t *s = w->sbuf, *c = w->cbuf;
    uint32_t sl = w->smr->lkey, cl = w->cmr->lkey;
    uint32_t seed = SEED_SEND + round * 8u;
    uint32_t len = 1u + (round * 61u) % MSG;

    /* receives: the RQ (three Sends and a zero-length one: no SGE) and the SRQ */
    for (uint32_t k = 0; k < N_RECV - 1u; k++)
        ASSERT_EQ(sp_post_recv(sq, 100u + k, s + S_RECV + k * MSG, MSG, sl), 0);
    ASSERT_EQ(sp_post_recv(sq, 100u + N_RECV - 1u, NULL, 0, 0), 0);
    struct iwarp_sge sge = {.addr = (uintptr_t)(s + S_SRQ), .length = MSG, .lkey = sl};
    struct iwarp_recv_wr rwr = {.wr_id = 200, .sg_list = &sge, .num_sge = 1};
    struct iwarp_recv_wr *bad = NULL;
    ASSERT_EQ(iwarp_post_srq_recv(w->srq, &rwr, &bad), 0);

    /* server: fast-register its STag with a fresh key (RFC 5040 §2.4 STag key rotation) */
    w->sfast_key = (uint8_t)(w->sfast_key + 1u);
    struct iwarp_send_wr fr = {.wr_id = 300, .opcode = IWARP_WR_REG_MR};
    fr.reg.mr = w->sfast;
    fr.reg.key = w->sfast_key;
    fr.reg.addr = s + S_FAST;
    fr.reg.length = 4096;
    fr.reg.access = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE;
    struct iwarp_send_wr *sbad = NULL;
    ASSERT_EQ(iwarp_post_send(sq, &fr, &sbad), 0);
    poll_ok(srv, cli, IWARP_WC_REG_MR, 300);
    uint32_t sfast_stag = (w->sfast->lkey & 0xFFFFFF00u) | w->sfast_key;
    /* the MR now answers to the new STag (as ib_update_fast_reg_key does in the kernel):
     * libiwarp looks the next REG_MR and dereg_mr up by the full STag in mr->lkey */
    w->sfast->lkey = w->sfast->rkey = sfast_stag;

    /* server: type-2 window bound by a WR (new key each round), type-1 by the verb */
    w->mw2_rkey = iwarp_inc_rkey(w->mw2_rkey);
    struct iwarp_send_wr bw = {.wr_id = 301, .opcode = IWARP_WR_BIND_MW};
    bw.bind_mw.mw = w->mw2;
    bw.bind_mw.rkey = w->mw2_rkey;
    bw.bind_mw.bind_info = (struct iwarp_mw_bind_info){
        .mr = w->smr,
        .addr = (uintptr_t)(s + S_MW),
        .length = 4096,
        .mw_access_flags = IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ};
    ASSERT_EQ(iwarp_post_send(sq, &bw, &sbad), 0);
    poll_ok(srv, cli, IWARP_WC_BIND_MW, 301);
    /* likewise the window: the next bind names it by mw->rkey, key included */
    w->mw2->rkey = w->mw2_rkey;
    struct iwarp_mw_bind b1 = {.wr_id = 302,
                               .send_flags = IWARP_SEND_SIGNALED,
                               .bind_info = {.mr = w->smr,
                                             .addr = (uintptr_t)(s + S_READ),
                                             .length = 4096,
                                             .mw_access_flags = IWARP_ACCESS_REMOTE_READ}};
    uint32_t mw1_old = w->mw1->rkey;
    ASSERT_EQ(iwarp_bind_mw(sq, w->mw1, &b1), 0);
    ASSERT_NE(w->mw1->rkey, mw1_old);
    poll_ok(srv, cli, IWARP_WC_BIND_MW, 302);

    /* arm for solicited completions only: an unsolicited Send does not fire it */
    sp_fill(c + C_SRC, len, seed);
    sp_fill(s + S_READ, len, seed + 1u);
    ASSERT_EQ(iwarp_req_notify_cq(srv->cq, 1), 0);
    ASSERT_EQ(sp_post(cq, 1, IWARP_WR_SEND, 0, c + C_SRC, len, cl, 0, 0), 0);
    poll_ok(srv, cli, IWARP_WC_RECV, 100);
    struct iwarp_cq *ev_cq = NULL;
    ASSERT_EQ(iwarp_get_cq_event(srv->comp, &ev_cq, NULL), IWARP_ERR_BUSY);

    /* client: the other sends, then Writes and Reads (zero-length ones too) */
    ASSERT_EQ(sp_post(cq, 2, IWARP_WR_SEND, IWARP_SEND_SOLICITED, c + C_SRC, len, cl, 0, 0), 0);
    ASSERT_EQ(sp_post(cq, 3, IWARP_WR_SEND_WITH_INV, 0, c + C_SRC, len, cl, 0, sfast_stag), 0);
    ASSERT_EQ(sp_post(cq, 4, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    ASSERT_EQ(
        sp_post(cq, 5, IWARP_WR_RDMA_WRITE, 0, c + C_SRC, len, cl, r->addr + S_WRITE, r->rkey), 0);
    ASSERT_EQ(sp_post(cq, 6, IWARP_WR_RDMA_WRITE, 0, c + C_SRC, len, cl, (uintptr_t)(s + S_MW),
                      w->mw2_rkey),
              0);
    ASSERT_EQ(sp_post(cq, 7, IWARP_WR_RDMA_WRITE, 0, NULL, 0, 0, r->addr + S_WRITE, r->rkey), 0);
    ASSERT_EQ(sp_post(cq, 8, IWARP_WR_RDMA_READ, 0, c + C_SINK, len, cl, (uintptr_t)(s + S_READ),
                      w->mw1->rkey),
              0);
    ASSERT_EQ(sp_post(cq, 9, IWARP_WR_RDMA_READ, 0, c + C_SINK, 0, cl, r->addr + S_READ, r->rkey),
              0);
    ASSERT_EQ(sp_post(cq2, 10, IWARP_WR_SEND, 0, c + C_SRC, len, cl, 0, 0), 0);

    /* client: its own fast registration and local invalidation */
    w->cfast_key = (uint8_t)(w->cfast_key + 1u);
    fr = (struct iwarp_send_wr){.wr_id = 11, .opcode = IWARP_WR_REG_MR};
    fr.reg.mr = w->cfast;
    fr.reg.key = w->cfast_key;
    fr.reg.addr = c + C_FAST;
    fr.reg.length = 4096;
    fr.reg.access = IWARP_ACCESS_LOCAL_WRITE;
    ASSERT_EQ(iwarp_post_send(cq, &fr, &sbad), 0);
    struct iwarp_send_wr li = {.wr_id = 12, .opcode = IWARP_WR_LOCAL_INV};
    li.invalidate_rkey = (w->cfast->lkey & 0xFFFFFF00u) | w->cfast_key;
    ASSERT_EQ(iwarp_post_send(cq, &li, &sbad), 0);
    w->cfast->lkey = w->cfast->rkey = li.invalidate_rkey;

    /* the client's completions, in posting order per QP */
    static const enum iwarp_wc_opcode want[] = {
        0,
        IWARP_WC_SEND,
        IWARP_WC_SEND,
        IWARP_WC_SEND,
        IWARP_WC_SEND,
        IWARP_WC_RDMA_WRITE,
        IWARP_WC_RDMA_WRITE,
        IWARP_WC_RDMA_WRITE,
        IWARP_WC_RDMA_READ,
        IWARP_WC_RDMA_READ,
        IWARP_WC_SEND,
        IWARP_WC_REG_MR,
        IWARP_WC_LOCAL_INV,
    };
    struct iwarp_wc wc[16];
    sp_poll_n(cli, srv, wc, 12);
    uint32_t next = 1;
    bool saw10 = false;
    for (int k = 0; k < 12; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        if (wc[k].wr_id == 10) {
            ASSERT_FALSE(saw10);
            saw10 = true;
            ASSERT_EQ(wc[k].qp_num, cq2->qp_num);
        } else {
            ASSERT_EQ(wc[k].wr_id, next++);
        }
        ASSERT_EQ(wc[k].opcode, want[wc[k].wr_id]);
        if (next == 10)
            next = 11;
    }
    ASSERT_TRUE(saw10);
    ASSERT_EQ(next, 13);
    SP_ASSERT_PATTERN(c + C_SINK, len, seed + 1u);

    /* the server: the solicited arm fired, once; the other RQ receives in order, the SRQ's */
    wait_cq_event(w);
    sp_poll_n(srv, cli, wc, N_RECV);
    ASSERT_EQ(iwarp_get_cq_event(srv->comp, &ev_cq, NULL), IWARP_ERR_BUSY);
    uint32_t rq_next = 101;
    for (uint32_t k = 0; k < N_RECV; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        ASSERT_EQ(wc[k].opcode, IWARP_WC_RECV);
        if (wc[k].wr_id == 200) {
            ASSERT_EQ(wc[k].qp_num, w->pairs[1].srv.qp->qp_num);
            ASSERT_EQ(wc[k].byte_len, len);
            continue;
        }
        ASSERT_EQ(wc[k].wr_id, rq_next);
        uint32_t k_rq = (uint32_t)(rq_next++ - 100u);
        ASSERT_EQ(wc[k].byte_len, k_rq == N_RECV - 1u ? 0u : len);
        if (k_rq == 2) {
            /* RFC 5040 §5.3: the Send with Invalidate invalidated the fast-registered STag */
            ASSERT_TRUE(wc[k].wc_flags & IWARP_WC_WITH_INV);
            ASSERT_EQ_U(wc[k].invalidated_rkey, sfast_stag);
        } else {
            ASSERT_FALSE(wc[k].wc_flags & IWARP_WC_WITH_INV);
        }
    }
    ASSERT_EQ(rq_next, 100u + N_RECV);
    for (uint32_t k = 0; k < N_RECV - 1u; k++)
        SP_ASSERT_PATTERN(s + S_RECV + k * MSG, len, seed);
    SP_ASSERT_PATTERN(s + S_SRQ, len, seed);
    /* the Writes: the Read that followed on the same stream proves they were placed */
    SP_ASSERT_PATTERN(s + S_WRITE, len, seed);
    SP_ASSERT_PATTERN(s + S_MW, len, seed);

    /* server: take the type-2 window back so the next round can bind it again */
    li = (struct iwarp_send_wr){.wr_id = 303, .opcode = IWARP_WR_LOCAL_INV};
    li.invalidate_rkey = w->mw2_rkey;
    ASSERT_EQ(iwarp_post_send(sq, &li, &sbad), 0);
    poll_ok(srv, cli, IWARP_WC_LOCAL_INV, 303);
}

TEST(no_allocation_on_the_data_path)
{
    static struct counting_hooks hs, hc;
    hooks_init(&hs);
    hooks_init(&hc);
    NA_POISON(pool, POOL_SIZE);
    libc_watch_start();

    struct world *w = calloc(1, sizeof *w);
    ASSERT_TRUE(w != NULL);
    w->sbuf = calloc(1, BUF);
    w->cbuf = calloc(1, BUF);
    ASSERT_TRUE(w->sbuf && w->cbuf);
    /* the contexts first: their creation is outside the libc window (see the top) */
    struct sp_side base[2] = {{.mode = IWARP_PROGRESS_THREAD}, {.mode = IWARP_PROGRESS_CALLER}};
    struct counting_hooks *hk[2] = {&hs, &hc};
    for (int i = 0; i < 2; i++) {
        struct iwarp_ctx_attr a;
        iwarp_ctx_attr_default(&a);
        a.progress = base[i].mode;
        a.mem = &hk[i]->hooks;
        a.max_mr = 64;
        ASSERT_EQ(iwarp_ctx_create(&a, &base[i].ctx), 0);
        ASSERT_NE(atomic_load(&hk[i]->calls), 0);
    }

    wait_threads_asleep();

    /* from here to the end of teardown (context destruction aside): no libc allocation */
    unsigned long libc0 = atomic_load(&libc_allocs);
    sp_side_init_full(&w->srv, &base[0], IWARP_PROGRESS_THREAD, NULL, 0, 64, true);
    sp_side_init_full(&w->cli, &base[1], IWARP_PROGRESS_CALLER, NULL, 0, 64, false);
    w->smr = sp_reg(&w->srv, w->sbuf, BUF, IWARP_ACCESS_MW_BIND);
    w->cmr = sp_reg(&w->cli, w->cbuf, BUF, 0);
    ASSERT_EQ(iwarp_alloc_mr(w->srv.pd, &w->sfast), 0);
    ASSERT_EQ(iwarp_alloc_mr(w->cli.pd, &w->cfast), 0);
    ASSERT_EQ(iwarp_alloc_mw(w->srv.pd, IWARP_MW_TYPE_1, &w->mw1), 0);
    ASSERT_EQ(iwarp_alloc_mw(w->srv.pd, IWARP_MW_TYPE_2, &w->mw2), 0);
    w->mw2_rkey = w->mw2->rkey;
    w->sfast_key = (uint8_t)w->sfast->lkey;
    w->cfast_key = (uint8_t)w->cfast->lkey;
    struct iwarp_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
    ASSERT_EQ(iwarp_create_srq(w->srv.pd, &sa, &w->srq), 0);

    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 16, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.responder_resources = 4, .initiator_depth = 4, .crc = true},
    };
    w->pairs[0].srv.mine =
        (struct sp_advert){.rkey = w->smr->rkey, .addr = (uintptr_t)w->sbuf, .len = BUF};
    sp_connect_pairs(&w->srv, &w->cli, w->pairs, 1, &cfg);
    cfg.srv_srq = w->srq;
    w->pairs[1].cli.mine.index = 1;
    w->pairs[1].srv.mine.index = 1;
    /* the second pair: its own id on the same listener, its server QP on the SRQ */
    struct sp_pair *p1 = &w->pairs[1];
    struct sockaddr_in dst;
    sp_loopback4(&dst, ntohs(((const struct sockaddr_in *)&w->srv.listen->local_addr)->sin_port));
    ASSERT_EQ(iwarp_cm_create_id(w->cli.ch, &p1->cli.id, p1, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(p1->cli.id, NULL, (struct sockaddr *)&dst, 1000), 0);
    uint32_t up = 0;
    while (up < 2) {
        struct sp_side *sides[2] = {&w->srv, &w->cli};
        bool any = false;
        for (int i = 0; i < 2; i++) {
            struct iwarp_cm_event *ev;
            while ((ev = sp_try_event(sides[i])) != NULL) {
                sp_connect_event(&w->srv, &w->cli, ev, w->pairs, 2, &cfg, &up);
                ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
                any = true;
            }
        }
        if (!any)
            sp_idle(&w->srv, &w->cli);
    }

    sp_first_send(&w->srv, &w->cli, w->pairs, 1);
    /* the SRQ pair's first FPDU: a Send into the SRQ */
    struct iwarp_sge sge0 = {.addr = (uintptr_t)w->sbuf, .length = 1, .lkey = w->smr->lkey};
    struct iwarp_recv_wr rwr0 = {.wr_id = 0, .sg_list = &sge0, .num_sge = 1}, *bad0;
    ASSERT_EQ(iwarp_post_srq_recv(w->srq, &rwr0, &bad0), 0);
    ASSERT_EQ(sp_post(w->pairs[1].cli.qp, 0, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    sp_poll_ok(&w->cli, &w->srv, IWARP_WC_SEND);
    sp_poll_ok(&w->srv, &w->cli, IWARP_WC_RECV);

    for (uint32_t i = 0; i < N_WARM; i++)
        one_round(w, i);

    unsigned long s0 = atomic_load(&hs.calls), c0 = atomic_load(&hc.calls);
    unsigned long l0 = atomic_load(&libc_allocs);
    for (uint32_t i = N_WARM; i < N_WARM + N_LOOP; i++)
        one_round(w, i);
    ASSERT_EQ(atomic_load(&hs.calls) - s0, 0);
    ASSERT_EQ(atomic_load(&hc.calls) - c0, 0);
    ASSERT_EQ(atomic_load(&libc_allocs) - l0, 0);

    sp_disconnect_pairs(&w->srv, &w->cli, w->pairs, 2, true);
    sp_destroy_pairs(w->pairs, 2);
    ASSERT_EQ(iwarp_destroy_srq(w->srq), 0);
    ASSERT_EQ(iwarp_dealloc_mw(w->mw1), 0);
    ASSERT_EQ(iwarp_dealloc_mw(w->mw2), 0);
    ASSERT_EQ(iwarp_dereg_mr(w->sfast), 0);
    ASSERT_EQ(iwarp_dereg_mr(w->cfast), 0);
    ASSERT_EQ(iwarp_dereg_mr(w->smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(w->cmr), 0);
    sp_side_fini(&w->srv);
    sp_side_fini(&w->cli);
    ASSERT_EQ(atomic_load(&libc_allocs) - libc0, 0);
    ASSERT_EQ(iwarp_ctx_destroy(base[0].ctx), 0);
    ASSERT_EQ(iwarp_ctx_destroy(base[1].ctx), 0);
    /* every allocation the library made through the hooks was given back */
    ASSERT_EQ(atomic_load(&hs.live), 0);
    ASSERT_EQ(atomic_load(&hc.live), 0);
    free(w->sbuf);
    free(w->cbuf);
    free(w);
}
