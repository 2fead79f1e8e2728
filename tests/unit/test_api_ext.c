/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Extensible public structs (src/api/api_ext.h, include/iwarp/common.h): every struct whose
 * storage the application provides carries a comp_mask. One context, no connection
 * (iwarp_conn_param, which needs one, is tests/e2e/test_api_ext_cm.c).
 *  - Zero-initialised input structs (and iwarp_ctx_attr_default's) work as before.
 *  - A comp_mask bit this version does not know is refused with IWARP_ERR_NOTSUP by every entry
 *    point that takes the struct, before anything is created, with one IWARP_LOG_ERROR line
 *    through the context's log hook naming the function and the struct.
 *  - Input structs are read up to their base only: each is placed so that its base ends where a
 *    PROT_NONE page starts, so a read past it faults.
 *  - Output structs need no initialisation: a garbage-filled one is filled, comp_mask 0; the
 *    *_sized functions write nothing past the size they are given, and refuse a size smaller
 *    than the base (IWARP_ERR_INVAL) without writing.
 */
#define _GNU_SOURCE
#include "api_ext_check.h"

#include <unistd.h>

#include "api/api_ext.h"
#include "api/api_internal.h"
#include "iwarp/ddp.h"

/* A context whose log hook is log_hook (caller progress: nothing runs behind the test). */
static struct iwarp_ctx *ctx_logged(void)
{
    struct iwarp_ctx_attr a = {
        .progress = IWARP_PROGRESS_CALLER, .log = log_hook, .log_level = IWARP_LOG_DEBUG};
    struct iwarp_ctx *ctx = NULL;
    ASSERT_EQ(iwarp_ctx_create(&a, &ctx), 0);
    memset(&logged, 0, sizeof logged);
    return ctx;
}

/* A buffer for an output struct with guard octets after it. */
#define OUT_GUARD 64u
union out_buf {
    max_align_t align;
    uint8_t b[1024];
};

/* Octets [from, to) of buf all equal v. */
static void expect_fill(const union out_buf *buf, size_t from, size_t to, uint8_t v)
{
    for (size_t i = from; i < to; i++)
        if (buf->b[i] != v)
            harness_fail(__FILE__, __LINE__, "octet %zu was written (0x%02x)", i, buf->b[i]);
}

/* A PD, a CQ and an unconnected RC QP in ctx. */
struct objs {
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_qp *qp;
};

static void objs_init(struct iwarp_ctx *ctx, struct objs *o)
{
    ASSERT_EQ(iwarp_alloc_pd(ctx, &o->pd), 0);
    ASSERT_EQ(iwarp_create_cq(ctx, 4, NULL, NULL, 0, &o->cq), 0);
    struct iwarp_qp_init_attr qa = {
        .send_cq = o->cq, .recv_cq = o->cq, .cap = {.max_send_wr = 4}, .qp_type = IWARP_QPT_RC};
    ASSERT_EQ(iwarp_create_qp(o->pd, &qa, &o->qp), 0);
}

static void objs_fini(struct iwarp_ctx *ctx, struct objs *o)
{
    if (o->qp)
        ASSERT_EQ(iwarp_destroy_qp(o->qp), 0);
    ASSERT_EQ(iwarp_destroy_cq(o->cq), 0);
    ASSERT_EQ(iwarp_dealloc_pd(o->pd), 0); /* nothing refused was left behind in it */
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
}

/* ---- iwarp_ctx_attr, iwarp_mem_hooks -------------------------------------------------------- */

TEST(ctx_attr_zero_null_default_and_guarded_work)
{
    struct iwarp_ctx *ctx = NULL;
    struct iwarp_ctx_attr zero = {0};
    ASSERT_EQ(iwarp_ctx_create(&zero, &ctx), 0);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
    ASSERT_EQ(iwarp_ctx_create(NULL, &ctx), 0);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
    struct iwarp_ctx_attr *a = GUARDED(struct iwarp_ctx_attr);
    iwarp_ctx_attr_default(a);
    ASSERT_EQ(a->comp_mask, 0);
    ASSERT_EQ(a->max_mr, 65536);
    a->progress = IWARP_PROGRESS_CALLER;
    ASSERT_EQ(iwarp_ctx_create(a, &ctx), 0);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
    guard_free(a);
}

TEST(ctx_attr_default_writes_the_base_only)
{
    union out_buf buf;
    memset(&buf, 0x5A, sizeof buf);
    iwarp_ctx_attr_default((struct iwarp_ctx_attr *)buf.b);
    struct iwarp_ctx_attr a;
    memcpy(&a, buf.b, sizeof a);
    ASSERT_EQ(a.comp_mask, 0);
    ASSERT_EQ(a.log_level, IWARP_LOG_WARN);
    ASSERT_TRUE(a.mem == NULL && a.trace_pcap == NULL);
    size_t base = IWARP_API_EXT_BASE(struct iwarp_ctx_attr);
    expect_fill(&buf, base, base + OUT_GUARD, 0x5A);
}

/* iwarp_ctx_create with attr (log: log_hook): refused, or created and destroyed. */
static int try_ctx_create(void *attr)
{
    struct iwarp_ctx *ctx = (struct iwarp_ctx *)attr; /* must be cleared on failure */
    int rc = iwarp_ctx_create(attr, &ctx);
    if (rc != 0)
        ASSERT_TRUE(ctx == NULL);
    else
        ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
    return rc;
}

TEST(ctx_attr_unknown_bit_refused)
{
    struct iwarp_ctx_attr *a = GUARDED(struct iwarp_ctx_attr);
    a->log = log_hook;
    expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_ctx_attr, &a->comp_mask, try_ctx_create, a,
                              "iwarp_ctx_create", "iwarp_ctx_attr");
    guard_free(a);
}

/* Allocator hooks that count their calls in *(int *)user. */
static void *count_malloc(size_t size, void *user)
{
    (*(int *)user)++;
    return malloc(size);
}

static void *count_calloc(size_t n, size_t size, void *user)
{
    (*(int *)user)++;
    return calloc(n, size);
}

static void count_free(void *p, void *user)
{
    (void)user;
    free(p);
}

struct hooks_try {
    struct iwarp_ctx_attr attr;
    int calls;
};

/* try_ctx_create with counting hooks: none is called when the create is refused. */
static int try_hooks(void *p)
{
    struct hooks_try *t = p;
    t->calls = 0;
    int rc = try_ctx_create(&t->attr);
    ASSERT_TRUE(rc == 0 ? t->calls > 0 : t->calls == 0);
    return rc;
}

TEST(mem_hooks_unknown_bit_refused)
{
    struct hooks_try t = {.attr = {.log = log_hook}};
    struct iwarp_mem_hooks *h = GUARDED(struct iwarp_mem_hooks);
    *h = (struct iwarp_mem_hooks){.malloc_fn = count_malloc,
                                  .calloc_fn = count_calloc,
                                  .free_fn = count_free,
                                  .user = &t.calls};
    t.attr.mem = h;
    expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_mem_hooks, &h->comp_mask, try_hooks, &t,
                              "iwarp_ctx_create", "iwarp_mem_hooks");
    guard_free(h);
}

/* ---- QPs, SRQs, memory windows, DDP-level QPs -------------------------------------------- */

struct qp_try {
    struct objs o;
    struct iwarp_cm_id *id; /* through the CM when set */
    struct iwarp_qp_init_attr *qa;
    struct iwarp_ddp_qp_init_attr *da;
};

/* iwarp_create_qp or iwarp_cm_create_qp with t->qa: a refusal creates and writes nothing; a
 * QP made is checked (cap written back) and destroyed. */
static int try_create_qp(void *p)
{
    struct qp_try *t = p;
    struct iwarp_qp *qp = NULL;
    t->qa->cap.max_recv_wr = 0;
    int rc =
        t->id ? iwarp_cm_create_qp(t->id, t->o.pd, t->qa) : iwarp_create_qp(t->o.pd, t->qa, &qp);
    if (t->id)
        qp = t->id->qp;
    if (rc != 0) {
        ASSERT_TRUE(qp == NULL);
        ASSERT_EQ(t->qa->cap.max_recv_wr, 0); /* nothing written */
        return rc;
    }
    ASSERT_EQ(t->qa->cap.max_recv_wr, 1); /* written back: raised to what was allocated */
    if (t->id)
        iwarp_cm_destroy_qp(t->id);
    else
        ASSERT_EQ(iwarp_destroy_qp(qp), 0);
    return 0;
}

/* The same for iwarp_ddp_create_qp / iwarp_ddp_cm_create_qp with t->da (defaults written
 * back). */
static int try_ddp_create_qp(void *p)
{
    struct qp_try *t = p;
    struct iwarp_qp *qp = NULL;
    t->da->num_queues = 0;
    int rc = t->id ? iwarp_ddp_cm_create_qp(t->id, t->o.pd, t->da)
                   : iwarp_ddp_create_qp(t->o.pd, t->da, &qp);
    if (t->id)
        qp = t->id->qp;
    if (rc != 0) {
        ASSERT_TRUE(qp == NULL);
        ASSERT_EQ(t->da->num_queues, 0);
        return rc;
    }
    ASSERT_EQ(t->da->num_queues, 1);
    if (t->id)
        iwarp_cm_destroy_qp(t->id);
    else
        ASSERT_EQ(iwarp_destroy_qp(qp), 0);
    return 0;
}

/* t's objects, a CM id for the CM variants, and both init attrs against guard pages. */
static struct iwarp_cm_channel *qp_try_init(struct qp_try *t, struct iwarp_ctx *ctx)
{
    objs_init(ctx, &t->o);
    struct iwarp_cm_channel *ch;
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &ch), 0);
    ASSERT_EQ(iwarp_cm_create_id(ch, &t->id, NULL, IWARP_PS_TCP), 0);
    t->qa = GUARDED(struct iwarp_qp_init_attr);
    /* field by field: the base only is mapped (the appended rdmap_ext is not) */
    memset(t->qa, 0, IWARP_API_EXT_BASE(struct iwarp_qp_init_attr));
    t->qa->send_cq = t->o.cq;
    t->qa->recv_cq = t->o.cq;
    t->qa->cap.max_send_wr = 2;
    t->qa->qp_type = IWARP_QPT_RC;
    t->da = GUARDED(struct iwarp_ddp_qp_init_attr);
    t->da->send_cq = t->o.cq;
    t->da->recv_cq = t->o.cq;
    return ch;
}

TEST(qp_init_attrs_unknown_bit_refused)
{
    struct iwarp_ctx *ctx = ctx_logged();
    struct qp_try t = {0};
    struct iwarp_cm_channel *ch = qp_try_init(&t, ctx);
    struct iwarp_cm_id *id = t.id;
    for (int cm = 0; cm < 2; cm++) {
        t.id = cm ? id : NULL;
        expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_qp_init_attr, &t.qa->comp_mask,
                                  try_create_qp, &t, "iwarp_create_qp", "iwarp_qp_init_attr");
        expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_ddp_qp_init_attr, &t.da->comp_mask,
                                  try_ddp_create_qp, &t, "iwarp_ddp_create_qp",
                                  "iwarp_ddp_qp_init_attr");
    }
    ASSERT_EQ(iwarp_cm_destroy_id(id), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(ch), 0);
    guard_free(t.qa);
    guard_free(t.da);
    objs_fini(ctx, &t.o);
}

struct srq_try {
    struct objs o;
    struct iwarp_srq_init_attr *sa;
};

static int try_create_srq(void *p)
{
    struct srq_try *t = p;
    struct iwarp_srq *srq = NULL;
    t->sa->attr.max_sge = 0;
    int rc = iwarp_create_srq(t->o.pd, t->sa, &srq);
    if (rc != 0) {
        ASSERT_TRUE(srq == NULL);
        ASSERT_EQ(t->sa->attr.max_sge, 0);
        return rc;
    }
    ASSERT_EQ(t->sa->attr.max_sge, 1); /* written back */
    ASSERT_EQ(iwarp_destroy_srq(srq), 0);
    return 0;
}

TEST(srq_init_attr_unknown_bit_refused)
{
    struct iwarp_ctx *ctx = ctx_logged();
    struct srq_try t = {.sa = GUARDED(struct iwarp_srq_init_attr)};
    objs_init(ctx, &t.o);
    t.sa->attr.max_wr = 4;
    expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_srq_init_attr, &t.sa->comp_mask, try_create_srq,
                              &t, "iwarp_create_srq", "iwarp_srq_init_attr");
    guard_free(t.sa);
    objs_fini(ctx, &t.o);
}

struct bind_try {
    struct objs o;
    struct iwarp_mw *mw;
    struct iwarp_mw_bind *b;
};

/* iwarp_bind_mw: a refused bind rotates no key and completes nothing; a bind does both. */
static int try_bind(void *p)
{
    struct bind_try *t = p;
    uint32_t rkey = t->mw->rkey;
    int rc = iwarp_bind_mw(t->o.qp, t->mw, t->b);
    struct iwarp_wc wc;
    if (rc != 0) {
        ASSERT_EQ(t->mw->rkey, rkey);
        ASSERT_EQ(iwarp_poll_cq(t->o.cq, 1, &wc), 0);
        return rc;
    }
    ASSERT_NE(t->mw->rkey, rkey);
    ASSERT_EQ(iwarp_poll_cq(t->o.cq, 1, &wc), 1);
    ASSERT_EQ(wc.wr_id, 7);
    ASSERT_EQ(wc.opcode, IWARP_WC_BIND_MW);
    return 0;
}

TEST(mw_bind_unknown_bit_refused)
{
    struct iwarp_ctx *ctx = ctx_logged();
    struct bind_try t = {.b = GUARDED(struct iwarp_mw_bind)};
    objs_init(ctx, &t.o);
    static uint8_t buf[4096];
    struct iwarp_mr *mr;
    ASSERT_EQ(
        iwarp_reg_mr(t.o.pd, buf, sizeof buf, IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_MW_BIND, &mr),
        0);
    ASSERT_EQ(iwarp_alloc_mw(t.o.pd, IWARP_MW_TYPE_1, &t.mw), 0);
    *t.b = (struct iwarp_mw_bind){.wr_id = 7,
                                  .send_flags = IWARP_SEND_SIGNALED,
                                  .bind_info = {.mr = mr,
                                                .addr = (uintptr_t)buf,
                                                .length = sizeof buf,
                                                .mw_access_flags = IWARP_ACCESS_REMOTE_READ}};
    expect_comp_mask_contract(IWARP_API_KNOWN_iwarp_mw_bind, &t.b->comp_mask, try_bind, &t,
                              "iwarp_bind_mw", "iwarp_mw_bind");
    guard_free(t.b);
    ASSERT_EQ(iwarp_dealloc_mw(t.mw), 0);
    ASSERT_EQ(iwarp_dereg_mr(mr), 0);
    objs_fini(ctx, &t.o);
}

/* ---- output structs ---------------------------------------------------------------------- */

/* f fills the output struct at p given size octets of room. */
typedef int (*fill_fn)(void *obj, void *p, size_t size);

/* The *_sized contract for an output struct of base octets: a size under the base is refused
 * (IWARP_ERR_INVAL, nothing written); with the base exactly, nothing past it is written and
 * comp_mask (at comp_mask_off) is 0; a garbage-filled struct gets comp_mask 0. */
static void expect_output_contract(fill_fn f, void *obj, size_t base, size_t comp_mask_off)
{
    union out_buf buf;
    memset(&buf, 0xA5, sizeof buf);
    ASSERT_EQ(f(obj, buf.b, base - 1), IWARP_ERR_INVAL);
    expect_fill(&buf, 0, sizeof buf.b, 0xA5);
    ASSERT_EQ(f(obj, buf.b, base), 0);
    expect_fill(&buf, base, base + OUT_GUARD, 0xA5);
    uint32_t mask;
    memcpy(&mask, buf.b + comp_mask_off, sizeof mask);
    ASSERT_EQ(mask, 0);
}

static int fill_device(void *obj, void *p, size_t size)
{
    return iwarp_query_device_sized(obj, p, size);
}

static int fill_qp(void *obj, void *p, size_t size)
{
    return iwarp_query_qp_sized(obj, p, size);
}

static int fill_ddp_error(void *obj, void *p, size_t size)
{
    return iwarp_ddp_query_error_sized(obj, p, size);
}

static int fill_async(void *obj, void *p, size_t size)
{
    return iwarp_get_async_event_sized(obj, p, size);
}

/* Queues a CQ error event as the library does (lock held). */
static void push_cq_err(struct iwarp_ctx *ctx, struct iwarp_cq *cq)
{
    struct iwarp_async_event ev = {.element.cq = cq, .event_type = IWARP_EVENT_CQ_ERR};
    pthread_mutex_lock(&ctx->lock);
    iwarp_api_async_push_locked(ctx, &ev);
    pthread_mutex_unlock(&ctx->lock);
}

/* iwarp_device_attr's appended fields: a caller whose struct ends inside them (a header of an
 * older version) gets the whole fields that fit and their bits, and nothing past its size. */
TEST(device_attr_appended_fields_fill_what_fits)
{
    struct iwarp_ctx *ctx = ctx_logged();
    const struct {
        size_t size;
        uint32_t mask;
    } cases[] = {
        {offsetof(struct iwarp_device_attr, rdmap_ext_cap) + 4, IWARP_DEVICE_ATTR_RDMAP_EXT},
        {offsetof(struct iwarp_device_attr, atomic_cap) + 2, IWARP_DEVICE_ATTR_RDMAP_EXT},
        {offsetof(struct iwarp_device_attr, max_qp_atomic_out),
         IWARP_DEVICE_ATTR_RDMAP_EXT | IWARP_DEVICE_ATTR_ATOMIC_CAP},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        union out_buf buf;
        memset(&buf, 0xA5, sizeof buf);
        ASSERT_EQ(iwarp_query_device_sized(ctx, (struct iwarp_device_attr *)buf.b, cases[i].size),
                  0);
        uint32_t mask;
        memcpy(&mask, buf.b + offsetof(struct iwarp_device_attr, comp_mask), sizeof mask);
        ASSERT_EQ(mask, cases[i].mask);
        size_t end = mask & IWARP_DEVICE_ATTR_ATOMIC_CAP
                         ? offsetof(struct iwarp_device_attr, max_qp_atomic_in)
                         : offsetof(struct iwarp_device_attr, atomic_cap);
        expect_fill(&buf, end, cases[i].size + OUT_GUARD, 0xA5); /* a part field is not written */
    }
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
}

/* Every output struct: garbage-filled, as an uninitialised local, it is filled through the
 * header's wrapper with comp_mask 0; then the *_sized contract. */
TEST(output_structs_need_no_init)
{
    struct iwarp_ctx *ctx = ctx_logged();
    struct objs o;
    objs_init(ctx, &o);
    struct iwarp_ddp_qp_init_attr dqa = {.send_cq = o.cq, .recv_cq = o.cq};
    struct iwarp_qp *dqp;
    ASSERT_EQ(iwarp_ddp_create_qp(o.pd, &dqa, &dqp), 0);
    push_cq_err(ctx, o.cq);
    struct iwarp_device_attr da;
    struct iwarp_qp_attr qa;
    struct iwarp_ddp_error de;
    struct iwarp_async_event ev;
    memset(&da, 0xA5, sizeof da);
    memset(&qa, 0xA5, sizeof qa);
    memset(&de, 0xA5, sizeof de);
    memset(&ev, 0xA5, sizeof ev);
    ASSERT_EQ(iwarp_query_device(ctx, &da), 0);
    ASSERT_EQ(iwarp_query_qp(o.qp, &qa), 0);
    ASSERT_EQ(iwarp_ddp_query_error(dqp, &de), 0);
    ASSERT_EQ(iwarp_get_async_event(ctx, &ev), 0);
    /* every appended field of iwarp_device_attr fits a struct of this header's size */
    ASSERT_EQ(da.comp_mask, IWARP_DEVICE_ATTR_RDMAP_EXT | IWARP_DEVICE_ATTR_ATOMIC_CAP |
                                IWARP_DEVICE_ATTR_MAX_ATOMIC);
    ASSERT_EQ(da.rdmap_ext_cap, IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS);
    ASSERT_EQ(da.atomic_cap, IWARP_ATOMIC_HCA);
    ASSERT_EQ(da.max_qp_atomic_in, da.max_qp_rd_atom); /* RFC 7306 §5.2: the Reads' IRD/ORD */
    ASSERT_EQ(da.max_qp_atomic_out, da.max_qp_init_rd_atom);
    ASSERT_TRUE(qa.comp_mask == 0 && de.comp_mask == 0 && ev.comp_mask == 0);
    ASSERT_EQ(da.max_mr, 65535);
    ASSERT_TRUE(da.max_qp_wr > 0 && da.max_sge > 0);
    ASSERT_EQ(qa.qp_state, IWARP_QPS_INIT);
    ASSERT_EQ(qa.cap.max_send_wr, 4);
    ASSERT_EQ(de.cause, 0); /* no error so far */
    ASSERT_EQ(de.hdr_len, 0);
    ASSERT_EQ(ev.event_type, IWARP_EVENT_CQ_ERR);
    ASSERT_TRUE(ev.element.cq == o.cq);
    iwarp_ack_async_event(&ev);

    push_cq_err(ctx, o.cq); /* for the contract's call with room */
    expect_output_contract(fill_device, ctx, IWARP_API_EXT_BASE(struct iwarp_device_attr),
                           offsetof(struct iwarp_device_attr, comp_mask));
    expect_output_contract(fill_qp, o.qp, IWARP_API_EXT_BASE(struct iwarp_qp_attr),
                           offsetof(struct iwarp_qp_attr, comp_mask));
    expect_output_contract(fill_ddp_error, dqp, IWARP_API_EXT_BASE(struct iwarp_ddp_error),
                           offsetof(struct iwarp_ddp_error, comp_mask));
    expect_output_contract(fill_async, ctx, IWARP_API_EXT_BASE(struct iwarp_async_event),
                           offsetof(struct iwarp_async_event, comp_mask));
    ASSERT_EQ(iwarp_get_async_event(ctx, &ev), IWARP_ERR_BUSY); /* taken by the contract */
    ASSERT_EQ(logged.lines, 0);
    ASSERT_EQ(iwarp_destroy_qp(dqp), 0);
    objs_fini(ctx, &o);
}

/* IWARP_QP_INIT_ATTR_RDMAP_EXT: the bit makes rdmap_ext read; an extension the device does
 * not have is refused before anything is created; without the bit rdmap_ext is not read. */
TEST(qp_init_attr_rdmap_ext)
{
    struct iwarp_ctx *ctx = ctx_logged();
    struct objs o;
    objs_init(ctx, &o);
    struct iwarp_qp_init_attr qa = {.send_cq = o.cq,
                                    .recv_cq = o.cq,
                                    .cap = {.max_send_wr = 4},
                                    .qp_type = IWARP_QPT_RC,
                                    .comp_mask = IWARP_QP_INIT_ATTR_RDMAP_EXT,
                                    .rdmap_ext = 1u << 7};
    struct iwarp_qp *qp = NULL;
    ASSERT_EQ(iwarp_create_qp(o.pd, &qa, &qp), IWARP_ERR_INVAL);
    ASSERT_TRUE(qp == NULL);
    qa.rdmap_ext = IWARP_RDMAP_EXT_IMM_DATA | IWARP_RDMAP_EXT_ATOMICS;
    ASSERT_EQ(iwarp_create_qp(o.pd, &qa, &qp), 0);
    ASSERT_EQ(iwarp_destroy_qp(qp), 0);
    qa.comp_mask = 0;
    qa.rdmap_ext = 1u << 7; /* not read */
    ASSERT_EQ(iwarp_create_qp(o.pd, &qa, &qp), 0);
    ASSERT_EQ(iwarp_destroy_qp(qp), 0);
    ASSERT_EQ(logged.lines, 0);
    objs_fini(ctx, &o);
}
