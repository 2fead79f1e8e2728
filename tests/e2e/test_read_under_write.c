/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDMA Reads of a buffer its owner keeps rewriting, with MPA CRC on (docs/design.md, "Read
 * Responses with CRC on"). RFC 5040 orders nothing between a remote Read and the Data Source's
 * local writes: the requester may get any mix of old and new octets, but the connection must
 * survive. The responder used to compute an FPDU's CRC when it framed it, well before sendmsg
 * copied the payload out of registered memory: a write in between made the octets sent differ
 * from those the CRC covered, and the requester Terminated the stream with an MPA CRC error
 * (RFC 5044 §6, §8). Here a server thread rewrites the buffer with memset, value after value,
 * while the client reads it (64 KiB to 1 MiB, several in flight): every Read must complete
 * successfully, every octet read must be one of the values written, and the connection must
 * still carry a Send afterwards. The writer races with the responder's reads of the buffer on
 * purpose (that is the case under test): the test is not one of the tsan.* runs.
 */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "stack_pair.h"

enum {
    MAXR = 1u << 20, /* the largest Read, and the region the writer rewrites */
    DEPTH = 4,       /* Reads in flight, each into its own client region */
    READS = 300,
    NVALS = 7, /* the values the writer cycles through: 0x11 * (1 .. NVALS) */
};

struct writer {
    uint8_t *buf;
    atomic_bool stop;
    atomic_ulong passes;
};

/* Rewrites the whole region with the next value, over and over, until told to stop. */
static void *writer_run(void *arg)
{
    struct writer *w = arg;
    unsigned v = 0;
    while (!atomic_load(&w->stop)) {
        v = v % NVALS + 1;
        memset(w->buf, (int)(0x11u * v), MAXR);
        atomic_fetch_add(&w->passes, 1);
    }
    return NULL;
}

/* Whether every octet of p[0, n) is one of the writer's values; the first offender's index. */
static size_t first_foreign(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] % 0x11u != 0 || p[i] == 0 || p[i] / 0x11u > NVALS)
            return i;
    return n;
}

/* The size of the i-th Read: 64 KiB .. 1 MiB, not a multiple of the FPDU size. */
static uint32_t read_len(uint32_t i)
{
    uint32_t x = i * 2654435761u;
    return 65536u + (x >> 12) % (MAXR - 65536u + 1u);
}

TEST(reads_of_a_buffer_being_rewritten_complete_with_crc_on)
{
    struct sp_rig r;
    memset(&r, 0, sizeof r);
    sp_side_init(&r.srv, IWARP_PROGRESS_THREAD, 64);
    sp_side_init(&r.cli, IWARP_PROGRESS_THREAD, 64);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 16, .max_recv_wr = 16},
                         .sq_sig_all = 1,
                         .param = {.crc = true, .responder_resources = 8, .initiator_depth = 8}};
    sp_rig_connect(&r, (size_t)MAXR * DEPTH, &cfg);
    memset(r.sbuf, 0x11, MAXR);

    struct writer w = {.buf = r.sbuf};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, writer_run, &w), 0);
    /* the writer is running before the first Read goes out */
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (atomic_load(&w.passes) == 0)
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the writer's first pass");

    uint32_t posted = 0, done = 0, lens[DEPTH] = {0};
    while (done < READS) {
        while (posted < READS && posted - done < DEPTH) {
            uint32_t slot = posted % DEPTH;
            lens[slot] = read_len(posted);
            memset(r.cbuf + (size_t)slot * MAXR, 0, lens[slot]);
            ASSERT_EQ(sp_post(r.pair.cli.qp, posted, IWARP_WR_RDMA_READ, 0,
                              r.cbuf + (size_t)slot * MAXR, lens[slot], r.cmr->lkey,
                              r.pair.cli.peer.addr, r.pair.cli.peer.rkey),
                      0);
            posted++;
        }
        struct iwarp_wc wc;
        sp_poll_n(&r.cli, &r.srv, &wc, 1);
        if (wc.status != IWARP_WC_SUCCESS)
            harness_fail(__FILE__, __LINE__,
                         "Read %" PRIu64 " of %u (%u done, writer at pass %lu): %s", wc.wr_id,
                         (unsigned)READS, done, atomic_load(&w.passes),
                         iwarp_wc_status_str(wc.status));
        ASSERT_EQ_U(wc.wr_id, done); /* RFC 5040 §5.5: Reads complete in order */
        ASSERT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
        uint32_t slot = done % DEPTH;
        size_t at = first_foreign(r.cbuf + (size_t)slot * MAXR, lens[slot]);
        if (at != lens[slot])
            harness_fail(__FILE__, __LINE__, "Read %u: octet %zu of %u is %#x, never written", done,
                         at, lens[slot], r.cbuf[(size_t)slot * MAXR + at]);
        done++;
    }
    atomic_store(&w.stop, true);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    printf("  %u Reads completed while the writer made %lu passes\n", (unsigned)READS,
           atomic_load(&w.passes));

    /* the connection is still up: a Send crosses it */
    ASSERT_EQ(sp_post_recv(r.pair.srv.qp, 7, NULL, 0, 0), 0);
    ASSERT_EQ(sp_post(r.pair.cli.qp, 8, IWARP_WR_SEND, 0, NULL, 0, 0, 0, 0), 0);
    (void)sp_poll_ok(&r.cli, &r.srv, IWARP_WC_SEND);
    (void)sp_poll_ok(&r.srv, &r.cli, IWARP_WC_RECV);
    sp_rig_down(&r);
}
