/* SPDX-License-Identifier: BSD-2-Clause */
/* MRs and MWs: registration rules, fast-register, window bind/unbind, invalidation matrix. */
#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"

#define LW  IWARP_MEM_ACCESS_LOCAL_WRITE
#define RW  IWARP_MEM_ACCESS_REMOTE_WRITE
#define RR  IWARP_MEM_ACCESS_REMOTE_READ
#define RA  IWARP_MEM_ACCESS_REMOTE_ATOMIC
#define MWB IWARP_MEM_ACCESS_MW_BIND

enum { PD = 7, PD2 = 8, QP = 70, QP2 = 71 };

static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[32];
static uint32_t seed = 0xC0FFEEu;

static void setup(void)
{
    ASSERT_EQ(iwarp_mem_table_init(&T, E, 32, harness_xorshift32, &seed), 0);
}

static uint32_t reg(uint32_t pd, uint64_t iova, uint64_t len, uint32_t access)
{
    struct iwarp_mem_range r = {
        .addr = 0x7f0000000000u, .iova = iova, .length = len, .access = access};
    uint32_t stag = 0;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, pd, &r, &stag), 0);
    return stag;
}

static struct iwarp_mem_entry *entry(uint32_t stag)
{
    struct iwarp_mem_entry *e;
    ASSERT_EQ(iwarp_mem_stag_lookup(&T, stag, &e), 0);
    return e;
}

/* 0 or the error of a one-byte-or-more remote access on stream (pd, qp). */
static int access_of(uint32_t stag, uint64_t to, uint64_t len, uint32_t need, uint32_t pd,
                     uint32_t qp)
{
    struct iwarp_mem_req r = {stag, to, len, need, pd, qp};
    return iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_DDP, NULL, NULL);
}

TEST(reg_mr_rights_consistency)
{
    setup();
    struct iwarp_mem_range r = {.addr = 0x1000, .iova = 0x1000, .length = 64};
    uint32_t s;
    /* ibv_reg_mr(3): REMOTE_WRITE or REMOTE_ATOMIC needs LOCAL_WRITE */
    r.access = RW;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), IWARP_ERR_INVAL);
    r.access = RA | RR;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), IWARP_ERR_INVAL);
    r.access = 32; /* unknown flag */
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), IWARP_ERR_INVAL);
    r.access = RR; /* remote read alone is fine: local read is implicit */
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), 0);
    r.access = LW | RW | RA | RR | MWB;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), 0);
    ASSERT_EQ(entry(s)->state, IWARP_MEM_VALID);
    ASSERT_EQ(entry(s)->pd, PD);
    ASSERT_EQ_U(entry(s)->access, LW | RW | RA | RR | MWB);
    ASSERT_EQ(T.nfree, 29);
}

TEST(reg_mr_ranges)
{
    setup();
    struct iwarp_mem_range r = {.addr = 0x1000, .iova = 0, .length = 0, .access = LW};
    uint32_t s;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), IWARP_ERR_INVAL); /* zero length */
    r.length = 16;
    r.iova = UINT64_MAX - 15; /* iova + length = 2^64: the last TO would need a wrapping sum */
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), IWARP_ERR_INVAL);
    r.iova = UINT64_MAX - 16; /* ends at 2^64 - 1: fine */
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), 0);
    r.iova = 0;
    r.addr = UINT64_MAX - 15; /* local range wraps */
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, NULL, &s), IWARP_ERR_INVAL);
}

TEST(dereg_mr)
{
    setup();
    uint32_t s = reg(PD, 0x1000, 64, LW);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, s ^ 1u), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, s), 0);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, s), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(T.nfree, 31);
    uint32_t mw;
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE1, &mw), 0);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, mw), IWARP_ERR_STAG_INVALID); /* not an MR */
    ASSERT_EQ(iwarp_mem_dealloc_mw(&T, mw), 0);
}

TEST(fast_register_lifecycle)
{
    setup();
    uint32_t s;
    ASSERT_EQ(iwarp_mem_alloc_stag(&T, PD, &s), 0);
    ASSERT_EQ(entry(s)->state, IWARP_MEM_INVALID);
    ASSERT_EQ(access_of(s, 0, 1, RW, PD, QP), IWARP_ERR_STAG_INVALID); /* no memory yet */
    struct iwarp_mem_range r = {.addr = 0x5000, .iova = 0x5000, .length = 4096, .access = LW | RW};
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s, PD, s, &r), IWARP_ERR_STAG_STALE); /* key unchanged */
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s, PD2, iwarp_stag_inc_key(s), &r), IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s, PD, iwarp_stag_inc_key(s) + 0x100u, &r), IWARP_ERR_INVAL);
    r.access = RW; /* no LOCAL_WRITE */
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s, PD, iwarp_stag_inc_key(s), &r), IWARP_ERR_INVAL);
    r.access = LW | RW;
    uint32_t s1 = iwarp_stag_inc_key(s);
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s, PD, s1, &r), 0);
    ASSERT_EQ(access_of(s1, 0x5000, 4096, RW, PD, QP), 0);
    ASSERT_EQ(access_of(s, 0x5000, 1, RW, PD, QP), IWARP_ERR_STAG_INVALID); /* old key */
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s1, PD, iwarp_stag_inc_key(s1), &r), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_mem_local_inv(&T, s1, PD), 0);
    ASSERT_EQ(access_of(s1, 0x5000, 1, RW, PD, QP), IWARP_ERR_STAG_INVALID);
    /* re-register: the invalidated key may not come back, the next one may */
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s1, PD, s1, &r), IWARP_ERR_STAG_STALE);
    uint32_t s2 = iwarp_stag_inc_key(s1);
    r.iova = 0; /* now zero-based */
    ASSERT_EQ(iwarp_mem_fast_reg(&T, s1, PD, s2, &r), 0);
    uint64_t la;
    struct iwarp_mem_req q = {s2, 0x10, 8, RW, PD, QP};
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &q, IWARP_MEM_CAUSE_DDP, &la, NULL), 0);
    ASSERT_EQ_U(la, 0x5010u);
    /* only allocate_stag MRs are fast-registered */
    uint32_t plain = reg(PD, 0, 64, LW);
    ASSERT_EQ(iwarp_mem_local_inv(&T, plain, PD), 0);
    ASSERT_EQ(iwarp_mem_fast_reg(&T, plain, PD, iwarp_stag_inc_key(plain), &r),
              IWARP_ERR_STAG_INVALID);
}

TEST(mw_bind_rules)
{
    setup();
    uint32_t mr = reg(PD, 0x10000, 0x1000, LW | MWB);
    uint32_t mr_ro = reg(PD, 0x20000, 0x1000, MWB);         /* memory not writable */
    uint32_t mr_nobind = reg(PD, 0x30000, 0x1000, LW | RW); /* no MW_BIND */
    uint32_t mr_pd2 = reg(PD2, 0x40000, 0x1000, LW | MWB);
    uint32_t mw, out;
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE1, &mw), 0);
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, 0, &out), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, 3, &out), IWARP_ERR_INVAL);
    struct iwarp_mem_bind b = {.mr_stag = mr, .addr = 0x10100, .length = 0x100, .access = RW};
    /* rights the window may not have */
    b.access = RW | LW;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_INVAL);
    b.access = RW | MWB;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_INVAL);
    /* MR side */
    b.access = RW;
    b.mr_stag = mr_nobind;
    b.addr = 0x30000;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_MEM_ACCESS);
    b.mr_stag = mr_ro;
    b.addr = 0x20000;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_MEM_ACCESS);
    b.access = RA;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_MEM_ACCESS);
    b.access = RR; /* read-only window on read-only memory: fine */
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), 0);
    ASSERT_EQ(entry(mr_ro)->nbound, 1);
    mw = out;
    b.mr_stag = mr_pd2;
    b.addr = 0x40000;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD2, QP, &b, &out), IWARP_ERR_STAG_NOT_ASSOC);
    b.mr_stag = mr ^ 1u;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_STAG_INVALID);
    b.mr_stag = mw; /* a window is not an MR */
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mr, PD, QP, &b, &out), IWARP_ERR_STAG_INVALID);
    /* range: inside the MR exactly, one below, one over, wrapping */
    b.mr_stag = mr;
    b.access = RW | RR;
    b.addr = 0x0FFFF;
    b.length = 0x10;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_MEM_BOUNDS);
    b.addr = 0x10000;
    b.length = 0x1001;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_MEM_BOUNDS);
    b.addr = 0x10001;
    b.length = UINT64_MAX;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), IWARP_ERR_MEM_TO_WRAP);
    /* failures left the window bound to mr_ro as before */
    ASSERT_EQ(entry(mw)->state, IWARP_MEM_VALID);
    ASSERT_EQ(entry(mr_ro)->nbound, 1);
    b.addr = 0x10000;
    b.length = 0x1000;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &out), 0); /* rebind to mr */
    ASSERT_EQ(entry(mr_ro)->nbound, 0);
    ASSERT_EQ(entry(mr)->nbound, 1);
    ASSERT_NE(out, mw);
    ASSERT_EQ_U(iwarp_stag_index(out), iwarp_stag_index(mw));
    ASSERT_EQ(access_of(mw, 0x10000, 1, RR, PD, QP), IWARP_ERR_STAG_INVALID); /* old STag */
    ASSERT_EQ(access_of(out, 0x10000, 0x1000, RW | RR, PD, QP), 0);
}

TEST(mw_subrange_and_rights_narrowing)
{
    setup();
    uint32_t mr = reg(PD, 0x10000, 0x1000, LW | RW | RR | MWB);
    uint32_t mw, w;
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE1, &mw), 0);
    struct iwarp_mem_bind b = {.mr_stag = mr, .addr = 0x10100, .length = 0x80, .access = RW};
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &w), 0);
    /* the window covers [0x10100, 0x10180) of the MR's TO space, at MR addr + 0x100 */
    uint64_t la = 0;
    struct iwarp_mem_req q = {w, 0x10100, 0x80, RW, PD, QP2}; /* type 1: any QP of the PD */
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &q, IWARP_MEM_CAUSE_DDP, &la, NULL), 0);
    ASSERT_EQ_U(la, 0x7f0000000100u);
    ASSERT_EQ(access_of(w, 0x100FF, 1, RW, PD, QP), IWARP_ERR_MEM_BOUNDS);
    ASSERT_EQ(access_of(w, 0x10100, 0x81, RW, PD, QP), IWARP_ERR_MEM_BOUNDS);
    ASSERT_EQ(access_of(w, 0x10180, 1, RW, PD, QP), IWARP_ERR_MEM_BOUNDS);
    /* narrowed: write only, although the MR allows remote read */
    ASSERT_EQ(access_of(w, 0x10100, 1, RR, PD, QP), IWARP_ERR_MEM_ACCESS);
    ASSERT_EQ(access_of(mr, 0x10000, 1, RR, PD, QP), 0);
    /* windows are not local keys */
    ASSERT_EQ(iwarp_mem_check_local(&T, w, 0x10100, 1, 0, PD, NULL), IWARP_ERR_STAG_INVALID);
    /* the MR cannot go while the window is bound; a zero-length bind unbinds a type-1 window */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, mr), IWARP_ERR_BUSY);
    ASSERT_EQ(iwarp_mem_local_inv(&T, mr, PD), IWARP_ERR_BUSY);
    struct iwarp_mem_bind unbind = {0};
    uint32_t w2;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, w, PD, QP, &unbind, &w2), 0);
    ASSERT_EQ(w2, w); /* unbinding keeps the key; the STag is simply invalid now */
    ASSERT_EQ(entry(w)->state, IWARP_MEM_INVALID);
    ASSERT_EQ(access_of(w, 0x10100, 1, RW, PD, QP), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(entry(mr)->nbound, 0);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, mr), 0);
}

TEST(mw_dealloc_unbinds)
{
    setup();
    uint32_t mr = reg(PD, 0, 0x1000, LW | MWB);
    uint32_t a, b1, w1, w2;
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE1, &a), 0);
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE2, &b1), 0);
    struct iwarp_mem_bind b = {.mr_stag = mr, .addr = 0, .length = 0x10, .access = RR};
    ASSERT_EQ(iwarp_mem_bind_mw(&T, a, PD, QP, &b, &w1), 0);
    b.new_stag = iwarp_stag_inc_key(b1);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, b1, PD, QP, &b, &w2), 0);
    ASSERT_EQ(entry(mr)->nbound, 2);
    ASSERT_EQ(iwarp_mem_dealloc_mw(&T, mr), IWARP_ERR_STAG_INVALID); /* not a window */
    ASSERT_EQ(iwarp_mem_dealloc_mw(&T, w1), 0);
    ASSERT_EQ(iwarp_mem_dealloc_mw(&T, w2), 0);
    ASSERT_EQ(entry(mr)->nbound, 0);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, mr), 0);
    ASSERT_EQ(T.nfree, 31);
}

TEST(mw_type2_bound_to_one_qp)
{
    setup();
    uint32_t mr = reg(PD, 0x10000, 0x1000, LW | MWB);
    uint32_t mw, w;
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE2, &mw), 0);
    struct iwarp_mem_bind b = {
        .mr_stag = mr, .addr = 0x10000, .length = 0x1000, .access = RW | RR, .new_stag = mw};
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &w), IWARP_ERR_STAG_STALE); /* same key */
    b.new_stag = iwarp_stag_inc_key(mw) + 0x100u;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &w), IWARP_ERR_INVAL); /* other index */
    b.new_stag = iwarp_stag_inc_key(mw);
    b.length = 0;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &w), IWARP_ERR_INVAL);
    b.length = 0x1000;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD2, QP, &b, &w), IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw, PD, QP, &b, &w), 0);
    ASSERT_EQ_U(w, iwarp_stag_inc_key(mw));
    ASSERT_EQ(access_of(w, 0x10000, 0x1000, RW, PD, QP), 0);
    /* another QP of the same PD: not associated (RFC 5042 §2.2.5), both cause flavours */
    struct iwarp_mem_req q = {w, 0x10000, 16, RW, PD, QP2};
    struct iwarp_term_cause c = {9, 9, 9};
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &q, IWARP_MEM_CAUSE_DDP, NULL, &c),
              IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(c.layer, 1);
    ASSERT_EQ(c.etype, 1);
    ASSERT_EQ(c.ecode, 0x02);
    q.need = RR;
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &q, IWARP_MEM_CAUSE_RDMAP, NULL, &c),
              IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(c.layer, 0);
    ASSERT_EQ(c.etype, 1);
    ASSERT_EQ(c.ecode, 0x03);
    /* bound: no second bind until invalidated */
    b.new_stag = iwarp_stag_inc_key(w);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, w, PD, QP, &b, &w), IWARP_ERR_STATE);
    ASSERT_EQ(iwarp_mem_local_inv(&T, w, PD), 0);
    ASSERT_EQ(entry(mr)->nbound, 0);
    ASSERT_EQ(access_of(w, 0x10000, 1, RW, PD, QP), IWARP_ERR_STAG_INVALID);
    /* rebind to QP2: the key just invalidated may not return */
    b.new_stag = w;
    uint32_t w3;
    ASSERT_EQ(iwarp_mem_bind_mw(&T, w, PD, QP2, &b, &w3), IWARP_ERR_STAG_STALE);
    b.new_stag = iwarp_stag_inc_key(w);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, w, PD, QP2, &b, &w3), 0);
    ASSERT_EQ(access_of(w3, 0x10000, 1, RW, PD, QP2), 0);
    ASSERT_EQ(access_of(w3, 0x10000, 1, RW, PD, QP), IWARP_ERR_STAG_NOT_ASSOC);
}

/* Remote invalidation (Send with Invalidate on stream PD/QP): result and exact cause. */
static void remote_inv(uint32_t stag, uint32_t pd, uint32_t qp, int err, int etype)
{
    struct iwarp_term_cause c = {0xEE, 0xEE, 0xEE};
    ASSERT_EQ(iwarp_mem_remote_inv(&T, stag, pd, qp, &c), err);
    if (err == 0) {
        ASSERT_EQ(c.layer, 0xEE); /* untouched */
        ASSERT_EQ(access_of(stag, 0, 0, 0, pd, qp), 0);
        return;
    }
    ASSERT_EQ(c.layer, IWARP_TERM_LAYER_RDMAP);
    ASSERT_EQ(c.etype, etype);
    ASSERT_EQ(c.ecode, 0x09);
}

TEST(remote_invalidate_matrix)
{
    setup();
    const int PROT = IWARP_TERM_RDMAP_ETYPE_REMOTE_PROT, OP = IWARP_TERM_RDMAP_ETYPE_REMOTE_OP;
    uint32_t mr_remote = reg(PD, 0x1000, 0x100, LW | RW);
    uint32_t mr_ro = reg(PD, 0x2000, 0x100, RR);
    uint32_t mr_local = reg(PD, 0x3000, 0x100, LW);
    uint32_t mr_base = reg(PD, 0x10000, 0x1000, LW | RW | MWB);
    uint32_t mw1, mw2, mw2b, w1, w2, w2b;
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE1, &mw1), 0);
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE2, &mw2), 0);
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE2, &mw2b), 0);
    struct iwarp_mem_bind b = {.mr_stag = mr_base, .addr = 0x10000, .length = 16, .access = RW};
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw1, PD, QP, &b, &w1), 0);
    b.new_stag = iwarp_stag_inc_key(mw2);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw2, PD, QP, &b, &w2), 0);
    b.new_stag = iwarp_stag_inc_key(mw2b);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw2b, PD, QP2, &b, &w2b), 0);

    /* Not a valid STag (RFC 5040 §7.2 check 4): Remote Operation, 0/2/0x09 */
    remote_inv(0, PD, QP, IWARP_ERR_STAG_INVALID, OP);
    remote_inv(0xFFFFFFFFu, PD, QP, IWARP_ERR_STAG_INVALID, OP);
    remote_inv(mr_remote ^ 0x40u, PD, QP, IWARP_ERR_STAG_INVALID, OP); /* wrong key */
    remote_inv(mw2, PD, QP, IWARP_ERR_STAG_INVALID, OP); /* pre-bind key of a window */
    /* Valid but not this stream's to invalidate (check 5 and rules): Remote Protection */
    remote_inv(mr_remote, PD2, QP, IWARP_ERR_STAG_NOT_ASSOC, PROT);
    remote_inv(w2b, PD, QP, IWARP_ERR_STAG_NOT_ASSOC, PROT);       /* type 2 bound to QP2 */
    remote_inv(w1, PD, QP, IWARP_ERR_STAG_CANT_INVAL, PROT);       /* type 1 */
    remote_inv(mr_local, PD, QP, IWARP_ERR_STAG_CANT_INVAL, PROT); /* never Advertised */
    /* MR under bound windows: Remote Operation */
    remote_inv(mr_base, PD, QP, IWARP_ERR_BUSY, OP);
    /* Successes, then the STag is dead for every access and for a second invalidation */
    remote_inv(mr_remote, PD, QP, 0, 0);
    ASSERT_EQ(access_of(mr_remote, 0x1000, 1, RW, PD, QP), IWARP_ERR_STAG_INVALID);
    remote_inv(mr_remote, PD, QP, IWARP_ERR_STAG_INVALID, OP);
    remote_inv(mr_ro, PD, QP, 0, 0);
    remote_inv(w2, PD, QP, 0, 0);
    ASSERT_EQ(access_of(w2, 0x10000, 1, RW, PD, QP), IWARP_ERR_STAG_INVALID);
    remote_inv(w2b, PD, QP2, 0, 0);
    ASSERT_EQ(entry(mr_base)->nbound, 1); /* the type-1 window is still bound */
    ASSERT_EQ(access_of(w1, 0x10000, 1, RW, PD, QP2), 0);
    ASSERT_EQ(iwarp_mem_remote_inv(&T, 0, PD, QP, NULL), IWARP_ERR_STAG_INVALID); /* no cause */
}

TEST(local_invalidate_matrix)
{
    setup();
    uint32_t mr = reg(PD, 0x1000, 0x100, LW);
    uint32_t mr_base = reg(PD, 0x10000, 0x1000, LW | MWB);
    uint32_t mw1, mw2, w1, w2;
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE1, &mw1), 0);
    ASSERT_EQ(iwarp_mem_alloc_mw(&T, PD, IWARP_MEM_MW_TYPE2, &mw2), 0);
    struct iwarp_mem_bind b = {.mr_stag = mr_base, .addr = 0x10000, .length = 16, .access = RR};
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw1, PD, QP, &b, &w1), 0);
    b.new_stag = iwarp_stag_inc_key(mw2);
    ASSERT_EQ(iwarp_mem_bind_mw(&T, mw2, PD, QP, &b, &w2), 0);

    ASSERT_EQ(iwarp_mem_local_inv(&T, 0, PD), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_local_inv(&T, mr ^ 2u, PD), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_local_inv(&T, mr, PD2), IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(iwarp_mem_local_inv(&T, w1, PD), IWARP_ERR_STAG_CANT_INVAL);
    ASSERT_EQ(iwarp_mem_local_inv(&T, mr_base, PD), IWARP_ERR_BUSY);
    ASSERT_EQ(iwarp_mem_local_inv(&T, w2, PD2), IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(iwarp_mem_local_inv(&T, w2, PD), 0); /* any QP of the owner PD */
    ASSERT_EQ(iwarp_mem_local_inv(&T, w2, PD), 0); /* already invalid: nothing to do */
    ASSERT_EQ(iwarp_mem_local_inv(&T, mr, PD), 0);
    ASSERT_EQ(iwarp_mem_local_inv(&T, mr, PD), 0);
    ASSERT_EQ(entry(mr)->state, IWARP_MEM_INVALID);
    ASSERT_EQ(iwarp_mem_check_local(&T, mr, 0x1000, 1, 0, PD, NULL), IWARP_ERR_STAG_INVALID);
    /* an invalidated, non-fast-reg MR is still registered: deregistration works */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, mr), 0);
}
