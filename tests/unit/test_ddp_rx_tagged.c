/* SPDX-License-Identifier: BSD-2-Clause */
/* Tagged placement and the solicited-sink match: every boundary and cause of ddp_rx_tagged.h. */
#include "ddp/ddp_rx_tagged.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_region.h"

static const struct iwarp_ddp_rx_sink sink = {
    .stag = 0x1234, .to = 1000, .len = 100, .received = 0};

/* 0 or the code (as 0x1010C: layer 1, etype 1, code C) of a segment against sink with received. */
static int32_t check(uint32_t stag, uint64_t to, uint32_t len, bool last, uint32_t received)
{
    struct iwarp_ddp_rx_sink s = sink;
    s.received = received;
    struct iwarp_ddp_hdr h = {.tagged = true, .last = last, .dv = 1, .stag = stag, .to = to};
    struct iwarp_term_cause c = {0xAA, 0xAA, 0xAA};
    int rc = iwarp_ddp_rx_sink_check(&s, &h, len, &c);
    if (rc == 0) {
        ASSERT_EQ(c.layer, 0xAA); /* untouched on success */
        return 0;
    }
    ASSERT_EQ(rc, IWARP_ERR_READ_RESP);
    ASSERT_EQ(c.layer, IWARP_TERM_LAYER_DDP);
    ASSERT_EQ(c.etype, IWARP_TERM_DDP_ETYPE_TAGGED);
    return 0x10100 | c.ecode;
}

TEST(sink_match)
{
    ASSERT_EQ(check(0x1234, 1000, 100, true, 0), 0);       /* the whole sink at once */
    ASSERT_EQ(check(0x1234, 1000, 60, false, 0), 0);       /* first part */
    ASSERT_EQ(check(0x1234, 1060, 40, true, 60), 0);       /* last part, total exact */
    ASSERT_EQ(check(0x1234, 1099, 1, false, 0), 0);        /* last octet of the sink */
    ASSERT_EQ(check(0x9999, 1000, 0, true, 100), 0);       /* zero length: STag/TO not checked */
    ASSERT_EQ(check(0x1235, 1000, 10, false, 0), 0x10100); /* another STag */
    ASSERT_EQ(check(0x1234, 999, 10, false, 0), 0x10101);  /* below the sink */
    ASSERT_EQ(check(0x1234, 1091, 10, false, 0), 0x10101); /* one past its end */
    ASSERT_EQ(check(0x1234, 1101, 0, false, 0), 0);        /* zero length anywhere */
    ASSERT_EQ(check(0x1234, 1100, 1, false, 0), 0x10101);  /* starts at the end */
    ASSERT_EQ(check(0x1234, UINT64_MAX - 4, 10, false, 0), 0x10103); /* TO wrap */
    ASSERT_EQ(check(0x1234, 1000, 50, true, 0), 0x10101);            /* L with too few octets */
    ASSERT_EQ(check(0x1234, 1000, 0, true, 99), 0x10101);            /* L, zero-length, one short */
    ASSERT_EQ(check(0x1234, 1000, 10, false, 95), 0x10101);          /* more than the Read asked */
    ASSERT_EQ(check(0x1234, 1000, 0, false, 0), 0);
    struct iwarp_ddp_hdr h = {0};
    ASSERT_EQ(iwarp_ddp_rx_sink_check(NULL, &h, 0, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_sink_check(&sink, NULL, 0, NULL), IWARP_ERR_INVAL);
    /* a sink at the very top of the TO space: its end 2^64 needs a wrapping sum */
    struct iwarp_ddp_rx_sink top = {.stag = 1, .to = UINT64_MAX - 9, .len = 10};
    h = (struct iwarp_ddp_hdr){.tagged = true, .last = false, .stag = 1, .to = UINT64_MAX - 9};
    ASSERT_EQ(iwarp_ddp_rx_sink_check(&top, &h, 9, NULL), 0);
    struct iwarp_term_cause c;
    ASSERT_EQ(iwarp_ddp_rx_sink_check(&top, &h, 10, &c), IWARP_ERR_READ_RESP);
    ASSERT_EQ(c.ecode, IWARP_TERM_DDP_T_TO_WRAP);
}

TEST(tagged_target)
{
    static struct iwarp_mem_table t;
    static struct iwarp_mem_entry e[8];
    static uint8_t mem[64];
    uint32_t seed = 99;
    ASSERT_EQ(iwarp_mem_table_init(&t, e, 8, harness_xorshift32, &seed), 0);
    struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)mem,
                                .iova = 0,
                                .length = 32,
                                .access =
                                    IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE};
    uint32_t stag;
    ASSERT_EQ(iwarp_mem_reg_mr(&t, 1, &r, &stag), 0);
    struct iwarp_mem_req q = {stag, 30, 2, IWARP_MEM_ACCESS_REMOTE_WRITE, 1, 0};
    struct iwarp_term_cause c = {0};
    uint64_t addr = 1;
    ASSERT_EQ(iwarp_ddp_rx_tagged_target(&t, &q, &addr, &c), 0);
    ASSERT_EQ(addr, (uint64_t)(uintptr_t)(mem + 30)); /* the last two octets of the region */
    q.to = 31;                                        /* one octet past the region */
    ASSERT_EQ(iwarp_ddp_rx_tagged_target(&t, &q, &addr, &c), IWARP_ERR_MEM_BOUNDS);
    ASSERT_EQ(addr, 0);
    ASSERT_EQ(c.layer, IWARP_TERM_LAYER_DDP);
    ASSERT_EQ(c.etype, IWARP_TERM_DDP_ETYPE_TAGGED);
    ASSERT_EQ(c.ecode, IWARP_TERM_DDP_T_BASE_BOUNDS);
    q.need = IWARP_MEM_ACCESS_REMOTE_READ; /* rights: Invalid STag (no DDP access code) */
    q.to = 0;
    ASSERT_EQ(iwarp_ddp_rx_tagged_target(&t, &q, &addr, &c), IWARP_ERR_MEM_ACCESS);
    ASSERT_EQ(c.ecode, IWARP_TERM_DDP_T_INVALID_STAG);
    q = (struct iwarp_mem_req){0, 0, 0, IWARP_MEM_ACCESS_REMOTE_WRITE, 1, 0};
    addr = 1;
    ASSERT_EQ(iwarp_ddp_rx_tagged_target(&t, &q, &addr, &c), 0); /* zero length: unchecked */
    ASSERT_EQ(addr, 0);
    ASSERT_EQ(iwarp_ddp_rx_tagged_target(NULL, &q, &addr, &c), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_tagged_target(&t, NULL, &addr, &c), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_ddp_rx_tagged_target(&t, &q, NULL, &c), IWARP_ERR_INVAL);
}
