/* SPDX-License-Identifier: BSD-2-Clause */
/* The CQ ring: order, wrap, one-shot arm (next / solicited-only), overrun as an error. */
#include "core/core_cq.h"
#include "harness.h"
#include "iwarp/errors.h"

static int fired, overruns;

static int wakes;

static void notify(void *user, struct iwarp_core_cq *cq, enum iwarp_core_cq_why why)
{
    (void)user;
    (void)cq;
    if (why == IWARP_CORE_CQ_OVERRUN)
        overruns++;
    else if (why == IWARP_CORE_CQ_WAKE)
        wakes++;
    else
        fired++;
}

static struct iwarp_wc wc_of(uint64_t id, enum iwarp_wc_status st)
{
    return (struct iwarp_wc){.wr_id = id, .status = st, .opcode = IWARP_WC_RECV};
}

TEST(order_and_wrap)
{
    struct iwarp_wc ring[3], out[4];
    struct iwarp_core_cq cq;
    ASSERT_EQ(iwarp_core_cq_init(&cq, ring, 0, NULL, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_core_cq_init(&cq, ring, 3, NULL, NULL), 0);
    uint64_t next = 1, expect = 1;
    for (int round = 0; round < 5; round++) {
        ASSERT_EQ(iwarp_core_cq_push(&cq, &(struct iwarp_wc){.wr_id = next++}, false), 0);
        ASSERT_EQ(iwarp_core_cq_push(&cq, &(struct iwarp_wc){.wr_id = next++}, false), 0);
        ASSERT_EQ_U(iwarp_core_cq_poll(&cq, out, 1), 1);
        ASSERT_EQ_U(out[0].wr_id, expect++);
        ASSERT_EQ_U(iwarp_core_cq_poll(&cq, out, 4), 1);
        ASSERT_EQ_U(out[0].wr_id, expect++);
    }
    ASSERT_EQ_U(iwarp_core_cq_poll(&cq, out, 4), 0);
}

TEST(arm_is_one_shot)
{
    struct iwarp_wc ring[8];
    struct iwarp_core_cq cq;
    fired = 0;
    ASSERT_EQ(iwarp_core_cq_init(&cq, ring, 8, notify, NULL), 0);
    struct iwarp_wc ok = wc_of(1, IWARP_WC_SUCCESS);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, false), 0);
    ASSERT_EQ(fired, 0); /* not armed */
    iwarp_core_cq_arm(&cq, false);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, false), 0);
    ASSERT_EQ(fired, 1);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, true), 0);
    ASSERT_EQ(fired, 1); /* disarmed after firing */
}

TEST(solicited_only_arm)
{
    struct iwarp_wc ring[8];
    struct iwarp_core_cq cq;
    fired = 0;
    ASSERT_EQ(iwarp_core_cq_init(&cq, ring, 8, notify, NULL), 0);
    iwarp_core_cq_arm(&cq, true);
    struct iwarp_wc ok = wc_of(1, IWARP_WC_SUCCESS);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, false), 0);
    ASSERT_EQ(fired, 0); /* an unsolicited success does not fire it */
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, true), 0);
    ASSERT_EQ(fired, 1); /* Send with SE */
    iwarp_core_cq_arm(&cq, true);
    struct iwarp_wc bad = wc_of(2, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &bad, false), 0);
    ASSERT_EQ(fired, 2); /* errors fire a solicited arm too */
    iwarp_core_cq_arm(&cq, true);
    iwarp_core_cq_arm(&cq, false); /* widened to "next" */
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, false), 0);
    ASSERT_EQ(fired, 3);
}

TEST(overrun_is_reported_once_and_never_overwrites)
{
    struct iwarp_wc ring[2], out[2];
    struct iwarp_core_cq cq;
    overruns = 0;
    ASSERT_EQ(iwarp_core_cq_init(&cq, ring, 2, notify, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &(struct iwarp_wc){.wr_id = 1}, false), 0);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &(struct iwarp_wc){.wr_id = 2}, false), 0);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &(struct iwarp_wc){.wr_id = 3}, false), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &(struct iwarp_wc){.wr_id = 4}, false), IWARP_ERR_NOSPC);
    ASSERT_EQ(overruns, 1);
    ASSERT_TRUE(cq.overrun);
    ASSERT_EQ_U(iwarp_core_cq_poll(&cq, out, 2), 2);
    ASSERT_EQ_U(out[0].wr_id, 1);
    ASSERT_EQ_U(out[1].wr_id, 2);
}

TEST(waiter_wake_is_separate_from_the_arm)
{
    struct iwarp_wc ring[8];
    struct iwarp_core_cq cq;
    fired = wakes = 0;
    ASSERT_EQ(iwarp_core_cq_init(&cq, ring, 8, notify, NULL), 0);
    cq.wake = true;
    struct iwarp_wc ok = wc_of(1, IWARP_WC_SUCCESS);
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, false), 0);
    ASSERT_EQ(wakes, 1);
    ASSERT_EQ(fired, 0); /* no arm: nothing for a completion channel */
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, false), 0);
    ASSERT_EQ(wakes, 1); /* one-shot */
    iwarp_core_cq_arm(&cq, false);
    cq.wake = true;
    ASSERT_EQ(iwarp_core_cq_push(&cq, &ok, false), 0);
    ASSERT_EQ(fired, 1);
    ASSERT_EQ(wakes, 2);
}

TEST(an_overrun_leaves_every_other_cq_alone)
{
    /* RFC 5042 §6.4.6: "if a CQ overflows, any Streams that do not use the CQ MUST remain
     * unaffected": the overrun is the state of the one ring it happened to. */
    struct iwarp_wc ra[1], rb[4], out[4];
    struct iwarp_core_cq a, b;
    overruns = 0;
    ASSERT_EQ(iwarp_core_cq_init(&a, ra, 1, notify, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_init(&b, rb, 4, notify, NULL), 0);
    ASSERT_EQ(iwarp_core_cq_push(&a, &(struct iwarp_wc){.wr_id = 1}, false), 0);
    ASSERT_EQ(iwarp_core_cq_push(&a, &(struct iwarp_wc){.wr_id = 2}, false), IWARP_ERR_NOSPC);
    ASSERT_TRUE(a.overrun);
    ASSERT_EQ(overruns, 1);
    for (uint64_t i = 10; i < 14; i++)
        ASSERT_EQ(iwarp_core_cq_push(&b, &(struct iwarp_wc){.wr_id = i}, false), 0);
    ASSERT_FALSE(b.overrun);
    ASSERT_EQ(overruns, 1);
    ASSERT_EQ_U(iwarp_core_cq_poll(&b, out, 4), 4);
    for (unsigned i = 0; i < 4; i++)
        ASSERT_EQ_U(out[i].wr_id, 10 + i);
}
