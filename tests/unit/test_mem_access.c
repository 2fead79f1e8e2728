/* SPDX-License-Identifier: BSD-2-Clause */
/* Data-path checks: every failure with its IWARP_ERR_* and both Terminate cause flavours,
 * boundaries, TO wrap, zero length, check order, local SGEs. */
#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"

#define LW IWARP_MEM_ACCESS_LOCAL_WRITE
#define RW IWARP_MEM_ACCESS_REMOTE_WRITE
#define RR IWARP_MEM_ACCESS_REMOTE_READ
#define RA IWARP_MEM_ACCESS_REMOTE_ATOMIC

enum { PD = 3, PD2 = 4, QP = 30 };

static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[16];
static uint32_t seed = 0x1234567u;

static void setup(void)
{
    ASSERT_EQ(iwarp_mem_table_init(&T, E, 16, harness_xorshift32, &seed), 0);
}

static uint32_t reg(uint64_t addr, uint64_t iova, uint64_t len, uint32_t access)
{
    struct iwarp_mem_range r = {.addr = addr, .iova = iova, .length = len, .access = access};
    uint32_t stag = 0;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &stag), 0);
    return stag;
}

/* Runs one check in both flavours and compares error and causes (layer/etype/code packed as
 * 0xLLEECC). */
static void expect(uint32_t stag, uint64_t to, uint64_t len, uint32_t need, uint32_t pd, int err,
                   uint32_t ddp, uint32_t rdmap)
{
    struct iwarp_mem_req r = {stag, to, len, need, pd, QP};
    struct iwarp_term_cause c = {0xAA, 0xAA, 0xAA};
    uint64_t la = 1;
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_DDP, &la, &c), err);
    if (err != 0)
        ASSERT_EQ_U((uint32_t)c.layer << 16 | (uint32_t)c.etype << 8 | c.ecode, ddp);
    c = (struct iwarp_term_cause){0xAA, 0xAA, 0xAA};
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_RDMAP, &la, &c), err);
    if (err != 0)
        ASSERT_EQ_U((uint32_t)c.layer << 16 | (uint32_t)c.etype << 8 | c.ecode, rdmap);
    else
        ASSERT_EQ(c.layer, 0xAA); /* untouched on success */
}

/* The causes, as RFC 5041 §7.2 (Layer 1, EType 1) and RFC 5040 §4.8 Figure 9 (Layer 0,
 * EType 1) number them. */
#define DDP_INVALID   0x010100u
#define DDP_BOUNDS    0x010101u
#define DDP_NOT_ASSOC 0x010102u
#define DDP_WRAP      0x010103u
#define RD_INVALID    0x000100u
#define RD_BOUNDS     0x000101u
#define RD_ACCESS     0x000102u
#define RD_NOT_ASSOC  0x000103u
#define RD_WRAP       0x000104u

TEST(invalid_stag)
{
    setup();
    uint32_t s = reg(0x1000, 0x1000, 0x100, LW | RW | RR);
    expect(0, 0x1000, 1, RR, PD, IWARP_ERR_STAG_INVALID, DDP_INVALID, RD_INVALID);
    expect(s ^ 0x01u, 0x1000, 1, RR, PD, IWARP_ERR_STAG_INVALID, DDP_INVALID, RD_INVALID);
    expect(s + 0x100u, 0x1000, 1, RR, PD, IWARP_ERR_STAG_INVALID, DDP_INVALID, RD_INVALID);
    expect(0xFFFFFFFFu, 0x1000, 1, RR, PD, IWARP_ERR_STAG_INVALID, DDP_INVALID, RD_INVALID);
    expect(s, 0x1000, 1, RR, PD, 0, 0, 0);
    ASSERT_EQ(iwarp_mem_local_inv(&T, s, PD), 0);
    expect(s, 0x1000, 1, RR, PD, IWARP_ERR_STAG_INVALID, DDP_INVALID, RD_INVALID);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, s), 0);
    expect(s, 0x1000, 1, RR, PD, IWARP_ERR_STAG_INVALID, DDP_INVALID, RD_INVALID);
}

TEST(stag_not_associated_pd)
{
    setup();
    uint32_t s = reg(0x1000, 0x1000, 0x100, LW | RW | RR);
    expect(s, 0x1000, 1, RW, PD2, IWARP_ERR_STAG_NOT_ASSOC, DDP_NOT_ASSOC, RD_NOT_ASSOC);
}

TEST(access_rights)
{
    setup();
    uint32_t ro = reg(0x1000, 0x1000, 0x100, RR);
    uint32_t wo = reg(0x2000, 0x2000, 0x100, LW | RW);
    uint32_t loc = reg(0x3000, 0x3000, 0x100, LW);
    /* RFC 5041 has no access code: DDP reports Invalid STag (as siw); RDMAP has 0x02. */
    expect(ro, 0x1000, 1, RW, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(wo, 0x2000, 1, RR, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(loc, 0x3000, 1, RW, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(loc, 0x3000, 1, RR, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(wo, 0x2000, 8, RA, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(wo, 0x2000, 1, RW | RR, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(ro, 0x1000, 1, LW, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(ro, 0x1000, 1, RR, PD, 0, 0, 0);
    expect(wo, 0x2000, 1, RW, PD, 0, 0, 0);
    expect(loc, 0x3000, 1, LW, PD, 0, 0, 0); /* Read Response sink */
}

TEST(base_and_bounds)
{
    setup();
    uint32_t s = reg(0x7f0000010000u, 0x10000, 0x1000, LW | RW | RR);
    expect(s, 0x10000, 0x1000, RW, PD, 0, 0, 0); /* TO = base, TO + len = end exactly */
    expect(s, 0x10FFF, 1, RW, PD, 0, 0, 0);      /* last byte */
    expect(s, 0x10000, 0x1001, RW, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
    expect(s, 0x0FFFF, 1, RW, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
    expect(s, 0x0FFFF, 2, RW, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
    expect(s, 0x11000, 1, RW, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
    expect(s, 0x10FFF, 2, RW, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
    expect(s, 0, 1, RW, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
    /* translation: VA-based, TO = VA-like iova */
    struct iwarp_mem_req r = {s, 0x10800, 16, RW, PD, QP};
    uint64_t la = 0;
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_DDP, &la, NULL), 0);
    ASSERT_EQ_U(la, 0x7f0000010800u);
}

TEST(zero_based_translation)
{
    setup();
    uint32_t s = reg(0x55550000u, 0, 0x100, LW | RW);
    struct iwarp_mem_req r = {s, 0x10, 0xF0, RW, PD, QP};
    uint64_t la = 0;
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_DDP, &la, NULL), 0);
    ASSERT_EQ_U(la, 0x55550010u);
    expect(s, 0x10, 0xF1, RW, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
}

TEST(to_wrap_at_2_64)
{
    setup();
    uint32_t s = reg(0x1000, 0x10000, 0x1000, LW | RW | RR);
    expect(s, UINT64_MAX, 1, RR, PD, IWARP_ERR_MEM_TO_WRAP, DDP_WRAP, RD_WRAP);
    expect(s, UINT64_MAX - 15, 32, RR, PD, IWARP_ERR_MEM_TO_WRAP, DDP_WRAP, RD_WRAP);
    expect(s, 0x10000, UINT64_MAX, RR, PD, IWARP_ERR_MEM_TO_WRAP, DDP_WRAP, RD_WRAP);
    expect(s, UINT64_MAX - 1, 1, RR, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
    /* a region that ends at 2^64 - 1: its last bytes are reachable, one more wraps */
    uint32_t top = reg(0x2000, UINT64_MAX - 0x1000, 0x1000, LW | RW | RR);
    expect(top, UINT64_MAX - 0x1000, 0x1000, RR, PD, 0, 0, 0);
    expect(top, UINT64_MAX - 1, 1, RR, PD, 0, 0, 0);
    expect(top, UINT64_MAX - 1, 2, RR, PD, IWARP_ERR_MEM_TO_WRAP, DDP_WRAP, RD_WRAP);
    expect(top, UINT64_MAX - 0x800, 0x801, RR, PD, IWARP_ERR_MEM_TO_WRAP, DDP_WRAP, RD_WRAP);
}

TEST(zero_length_is_not_checked)
{
    setup();
    uint32_t s = reg(0x1000, 0x1000, 0x100, LW);
    /* RFC 5041 §5.2 / RFC 5040 §5.2.1: STag and TO not checked, whatever they are */
    expect(0, 0, 0, RW, PD, 0, 0, 0);
    expect(0xDEADBEEFu, UINT64_MAX, 0, RR, PD2, 0, 0, 0);
    expect(s, 0, 0, RW | RR, PD2, 0, 0, 0);
    struct iwarp_mem_req r = {s, 0x1000, 0, RW, PD, QP};
    uint64_t la = 99;
    ASSERT_EQ(iwarp_mem_check_tagged(&T, &r, IWARP_MEM_CAUSE_DDP, &la, NULL), 0);
    ASSERT_EQ_U(la, 0u);
    ASSERT_EQ(iwarp_mem_check_tagged(NULL, &r, IWARP_MEM_CAUSE_DDP, &la, NULL), IWARP_ERR_INVAL);
}

TEST(check_order)
{
    setup();
    uint32_t s = reg(0x1000, 0x1000, 0x100, RR);
    /* invalid key beats everything else */
    expect(s ^ 1u, UINT64_MAX, 2, RW, PD2, IWARP_ERR_STAG_INVALID, DDP_INVALID, RD_INVALID);
    /* then association, then rights, then wrap, then bounds */
    expect(s, UINT64_MAX, 2, RW, PD2, IWARP_ERR_STAG_NOT_ASSOC, DDP_NOT_ASSOC, RD_NOT_ASSOC);
    expect(s, UINT64_MAX, 2, RW, PD, IWARP_ERR_MEM_ACCESS, DDP_INVALID, RD_ACCESS);
    expect(s, UINT64_MAX, 2, RR, PD, IWARP_ERR_MEM_TO_WRAP, DDP_WRAP, RD_WRAP);
    expect(s, 0x2000, 2, RR, PD, IWARP_ERR_MEM_BOUNDS, DDP_BOUNDS, RD_BOUNDS);
}

TEST(local_sge)
{
    setup();
    uint32_t ro = reg(0x9000, 0x9000, 0x100, 0);
    uint32_t rw = reg(0xA000, 0, 0x100, LW);
    uint64_t la = 0;
    ASSERT_EQ(iwarp_mem_check_local(&T, ro, 0x9000, 0x100, 0, PD, &la), 0); /* local read */
    ASSERT_EQ_U(la, 0x9000u);
    ASSERT_EQ(iwarp_mem_check_local(&T, ro, 0x9000, 1, LW, PD, NULL), IWARP_ERR_MEM_ACCESS);
    ASSERT_EQ(iwarp_mem_check_local(&T, rw, 0x80, 0x80, LW, PD, &la), 0);
    ASSERT_EQ_U(la, 0xA080u);
    ASSERT_EQ(iwarp_mem_check_local(&T, rw, 0x80, 0x81, LW, PD, NULL), IWARP_ERR_MEM_BOUNDS);
    ASSERT_EQ(iwarp_mem_check_local(&T, rw, 0, 1, LW, PD2, NULL), IWARP_ERR_STAG_NOT_ASSOC);
    ASSERT_EQ(iwarp_mem_check_local(&T, rw ^ 4u, 0, 1, LW, PD, NULL), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ(iwarp_mem_check_local(&T, rw, UINT64_MAX, 1, LW, PD, NULL), IWARP_ERR_MEM_TO_WRAP);
    ASSERT_EQ(iwarp_mem_check_local(&T, 0, 0, 0, LW, PD, &la), 0); /* zero-length SGE */
}
