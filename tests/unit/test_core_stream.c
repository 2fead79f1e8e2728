/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What both engines share (core_stream, core_sge): SGE resolution against a real STag table,
 * MR holds taken at post and released at retirement (a deregistration in between is BUSY),
 * ring order across the end, a flush that waits for every produced segment to come back, the
 * LLP close reported once and fatal only from full operation, the verbs state of each stream
 * state, and fini releasing what a pending flush still holds.
 */
#include <stddef.h>

#include "core/core_sge.h"
#include "core/core_stream.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "mem/mem_access.h"
#include "mem/mem_region.h"

enum { PD = 5, BUF = 256, CAP = 3 };

struct entry {
    uint64_t tag;
    struct iwarp_core_held held;
};

static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[8];
static uint32_t seed = 0x5eedu;
static uint8_t buf[BUF];
static struct entry sq[CAP];
static struct iwarp_core_stream S;

static uint64_t va(size_t off)
{
    return (uint64_t)(uintptr_t)(buf + off);
}

static uint32_t reg(size_t off, size_t len, uint32_t access)
{
    struct iwarp_mem_range r = {.addr = va(off), .iova = va(off), .length = len, .access = access};
    uint32_t stag = 0;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &stag), 0);
    return stag;
}

static void setup(void)
{
    ASSERT_EQ(iwarp_mem_table_init(&T, E, 8, harness_xorshift32, &seed), 0);
    iwarp_core_stream_init(&S, &T, sq, sizeof sq[0], offsetof(struct entry, held), CAP);
}

/* Fill the next free slot with one SGE of mr and post it. */
static void post(uint32_t mr, uint64_t tag)
{
    struct entry *e = &sq[iwarp_core_stream_sq_slot(&S, S.sq_count)];
    struct iwarp_sge sge = {va(0), 16, mr};
    struct iovec iov[1];
    uint32_t total = 0;
    ASSERT_EQ(iwarp_core_sge_resolve(&T, PD, 0, &sge, 1, iov, &e->held, &total), 0);
    e->tag = tag;
    iwarp_core_stream_sq_post(&S);
}

TEST(sge_resolve_checks_every_sge_and_the_total)
{
    setup();
    uint32_t rw = reg(0, BUF, IWARP_MEM_ACCESS_LOCAL_WRITE);
    uint32_t ro = reg(0, BUF, 0);
    struct iwarp_sge sg[3] = {{va(8), 16, rw}, {va(0), 0, 0xdeadu}, {va(100), 4, ro}};
    struct iovec iov[3];
    struct iwarp_core_held h;
    uint32_t total = 0;
    ASSERT_EQ(iwarp_core_sge_resolve(&T, PD, 0, sg, 3, iov, &h, &total), 0);
    ASSERT_EQ_U(total, 20u);
    ASSERT_EQ_U(h.n, 2u); /* the empty SGE names no MR */
    ASSERT_EQ_U(h.lkey[0], rw);
    ASSERT_EQ_U(h.lkey[1], ro);
    ASSERT_TRUE(iov[0].iov_base == buf + 8 && iov[0].iov_len == 16);
    ASSERT_EQ_U(iov[1].iov_len, 0u);
    ASSERT_TRUE(iov[2].iov_base == buf + 100);
    /* a sink needs LOCAL_WRITE: the read-only MR fails */
    ASSERT_TRUE(
        iwarp_core_sge_resolve(&T, PD, IWARP_MEM_ACCESS_LOCAL_WRITE, sg, 3, iov, &h, &total) < 0);
    /* another PD's view of the MR fails */
    ASSERT_TRUE(iwarp_core_sge_resolve(&T, PD + 1, 0, sg, 1, iov, &h, &total) < 0);
    /* past the MR's end */
    struct iwarp_sge out = {va(BUF - 4), 8, rw};
    ASSERT_TRUE(iwarp_core_sge_resolve(&T, PD, 0, &out, 1, iov, &h, &total) < 0);
}

TEST(sge_total_must_stay_below_2_pow_32)
{
    setup();
    /* RFC 5041 §5.2: checked on lengths alone, so one MR of 2^31 octets twice is enough to
     * overflow; a table entry of that size needs no memory behind it for the check. */
    struct iwarp_mem_range r = {.addr = 1u << 20, .iova = 1u << 20, .length = 1ull << 31};
    uint32_t big = 0;
    ASSERT_EQ(iwarp_mem_reg_mr(&T, PD, &r, &big), 0);
    struct iwarp_sge sg[2] = {{1u << 20, 1u << 31, big}, {1u << 20, 1u << 31, big}};
    struct iovec iov[2];
    struct iwarp_core_held h;
    uint32_t total = 0;
    ASSERT_EQ(iwarp_core_sge_resolve(&T, PD, 0, sg, 2, iov, &h, &total), IWARP_ERR_INVAL);
}

/* The state of the MR entry an STag's index names (the key may be stale). */
static uint8_t state_of(uint32_t stag)
{
    return E[iwarp_stag_index(stag)].state;
}

TEST(posted_entries_hold_their_mrs_until_retired_in_ring_order)
{
    setup();
    uint32_t a = reg(0, BUF, 0), b = reg(0, BUF, 0);
    post(a, 1);
    post(b, 2);
    /* Deregistered under a posted WR: the STag goes at once (as on an RNIC), the index waits
     * for the WR, which finds the MR unusable. */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, b), 0);
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, b), IWARP_ERR_STAG_INVALID);
    ASSERT_EQ_U(state_of(b), IWARP_MEM_RETIRED);
    ASSERT_FALSE(iwarp_core_held_usable(&sq[1].held, &T));
    ASSERT_TRUE(iwarp_core_held_usable(&sq[0].held, &T));
    S.sq_next = 2; /* TX started both */
    iwarp_core_stream_sq_retire(&S);
    ASSERT_EQ_U(S.sq_count, 1u);
    ASSERT_EQ_U(S.sq_next, 1u);
    ASSERT_EQ_U(state_of(b), IWARP_MEM_RETIRED); /* its WR is still posted */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, a), 0);
    ASSERT_EQ_U(state_of(a), IWARP_MEM_FREE); /* nothing held it any more */
    /* across the ring's end: slots 2 and 0 */
    uint32_t c = reg(0, BUF, 0);
    post(c, 3);
    post(c, 4);
    ASSERT_TRUE(iwarp_core_stream_sq_full(&S));
    ASSERT_EQ_U(iwarp_core_stream_sq_slot(&S, 2), 0u);
    ASSERT_EQ_U(sq[0].tag, 4u);
    iwarp_core_stream_sq_retire(&S);
    ASSERT_EQ_U(state_of(b), IWARP_MEM_FREE); /* the last WR naming b let go */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, c), 0);
    iwarp_core_stream_sq_retire(&S);
    ASSERT_EQ_U(state_of(c), IWARP_MEM_RETIRED); /* the last one still holds it */
    iwarp_core_stream_sq_retire(&S);
    ASSERT_EQ_U(state_of(c), IWARP_MEM_FREE);
    ASSERT_EQ_U(T.nretired, 0u);
    ASSERT_EQ_U(S.sq_count, 0u);
}

TEST(flush_waits_for_every_produced_segment)
{
    setup();
    ASSERT_TRUE(iwarp_core_stream_sq_flush_now(&S)); /* the LLP holds nothing */
    ASSERT_FALSE(S.sq_flush_pending);
    iwarp_core_stream_tx_produced(&S);
    iwarp_core_stream_tx_produced(&S);
    ASSERT_FALSE(iwarp_core_stream_sq_flush_now(&S));
    ASSERT_FALSE(iwarp_core_stream_sq_flush_due(&S));
    ASSERT_TRUE(iwarp_core_stream_tx_returned(&S));
    ASSERT_FALSE(iwarp_core_stream_sq_flush_due(&S));
    ASSERT_TRUE(iwarp_core_stream_tx_returned(&S));
    ASSERT_TRUE(iwarp_core_stream_sq_flush_due(&S));
    iwarp_core_stream_sq_flushed(&S);
    ASSERT_FALSE(iwarp_core_stream_sq_flush_due(&S));
    ASSERT_FALSE(iwarp_core_stream_tx_returned(&S)); /* nothing was outstanding */
}

TEST(llp_close_is_reported_once_and_fatal_only_from_full_operation)
{
    setup();
    bool fatal = false;
    S.state = IWARP_CORE_STREAM_RUNNING;
    iwarp_core_stream_tx_produced(&S);
    ASSERT_TRUE(iwarp_core_stream_llp_closed(&S, false, &fatal));
    ASSERT_TRUE(fatal);
    ASSERT_EQ(S.state, IWARP_CORE_STREAM_ERROR);
    ASSERT_EQ_U(S.tx_unsent, 0u); /* the transport took the produced segments with it */
    ASSERT_FALSE(iwarp_core_stream_llp_closed(&S, false, &fatal));

    setup();
    S.state = IWARP_CORE_STREAM_RUNNING;
    ASSERT_TRUE(iwarp_core_stream_llp_closed(&S, true, &fatal));
    ASSERT_FALSE(fatal); /* an orderly close */
    setup();
    S.state = IWARP_CORE_STREAM_CLOSING;
    ASSERT_TRUE(iwarp_core_stream_llp_closed(&S, false, &fatal));
    ASSERT_FALSE(fatal); /* our own disconnect was under way */
    setup();
    S.state = IWARP_CORE_STREAM_TERMINATING;
    ASSERT_TRUE(iwarp_core_stream_llp_closed(&S, false, &fatal));
    ASSERT_FALSE(fatal); /* the Terminate already reported the error */
}

TEST(verbs_state_of_each_stream_state)
{
    setup();
    static const struct {
        uint8_t st;
        enum iwarp_qp_state vs;
        bool open;
    } map[] = {
        {IWARP_CORE_STREAM_IDLE, IWARP_QPS_INIT, false},
        {IWARP_CORE_STREAM_RUNNING, IWARP_QPS_RTS, true},
        {IWARP_CORE_STREAM_CLOSING, IWARP_QPS_SQD, true},
        {IWARP_CORE_STREAM_TERMINATING, IWARP_QPS_SQE, false},
        {IWARP_CORE_STREAM_ERROR, IWARP_QPS_ERR, false},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        S.state = map[i].st;
        ASSERT_EQ(iwarp_core_stream_verbs_state(&S), map[i].vs);
        ASSERT_EQ(iwarp_core_stream_open(&S), map[i].open);
    }
}

TEST(fini_releases_what_a_pending_flush_holds)
{
    setup();
    uint32_t a = reg(0, BUF, 0);
    post(a, 1);
    post(a, 2);
    iwarp_core_stream_tx_produced(&S);
    ASSERT_FALSE(iwarp_core_stream_sq_flush_now(&S)); /* the LLP still reads the payload */
    ASSERT_EQ(iwarp_mem_dereg_mr(&T, a), 0);
    ASSERT_EQ_U(state_of(a), IWARP_MEM_RETIRED);
    iwarp_core_stream_fini(&S);
    ASSERT_EQ_U(S.sq_count, 0u);
    ASSERT_EQ_U(state_of(a), IWARP_MEM_FREE);
}
