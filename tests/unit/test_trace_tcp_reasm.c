/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace/trace_tcp_reasm: a stream cut into segments and delivered in random order, with
 * duplicates and overlapping retransmissions, comes out exactly once and in order, across the
 * 2^32 sequence wrap; a SYN sets the start; what does not fit the window or the range table is
 * counted as dropped and leaves a hole.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "trace/trace_tcp_reasm.h"

#define LEN 20000u

struct sink {
    uint8_t out[2 * LEN];
    size_t n;
};

static void collect(void *ctx, const uint8_t *p, size_t n)
{
    struct sink *s = ctx;
    ASSERT_TRUE(s->n + n <= sizeof s->out);
    memcpy(s->out + s->n, p, n);
    s->n += n;
}

static uint32_t rs = 99;
static uint32_t rnd(void)
{
    rs = rs * 1103515245u + 12345u;
    return rs >> 8;
}

static void shuffled_run(uint32_t isn, unsigned rounds)
{
    static uint8_t data[LEN], ring[32768];
    static struct sink sink;
    for (unsigned i = 0; i < LEN; i++)
        data[i] = (uint8_t)rnd();
    for (unsigned r = 0; r < rounds; r++) {
        struct iwarp_tcp_reasm ra;
        iwarp_tcp_reasm_init(&ra, ring, sizeof ring);
        iwarp_tcp_reasm_syn(&ra, isn);
        sink.n = 0;
        /* segments of 1..1500 octets, delivered in a window of 8 shuffled, 1 in 5 sent twice,
         * 1 in 7 followed by a retransmission overlapping its neighbour */
        uint32_t off[64], len[64];
        uint32_t pos = 0;
        while (pos < LEN) {
            unsigned k = 0;
            while (k < 8 && pos < LEN) {
                uint32_t l = 1 + rnd() % 1500u;
                l = l < LEN - pos ? l : LEN - pos;
                off[k] = pos;
                len[k++] = l;
                pos += l;
            }
            for (unsigned i = k; i > 1; i--) {
                unsigned j = rnd() % i;
                uint32_t t = off[i - 1], u = len[i - 1];
                off[i - 1] = off[j], len[i - 1] = len[j];
                off[j] = t, len[j] = u;
            }
            for (unsigned i = 0; i < k; i++) {
                uint32_t seq = isn + 1u + off[i];
                ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, seq, data + off[i], len[i], collect, &sink),
                          0);
                if (rnd() % 5 == 0)
                    ASSERT_EQ(
                        iwarp_tcp_reasm_segment(&ra, seq, data + off[i], len[i], collect, &sink),
                        0);
                if (rnd() % 7 == 0 && off[i] + len[i] + 100 <= LEN && len[i] > 10)
                    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, seq + len[i] / 2u,
                                                      data + off[i] + len[i] / 2u, len[i], collect,
                                                      &sink),
                              0);
            }
        }
        ASSERT_EQ(sink.n, (size_t)LEN);
        ASSERT_MEM_EQ(sink.out, data, LEN);
        ASSERT_EQ(iwarp_tcp_reasm_held(&ra), 0u);
        ASSERT_EQ(ra.dropped, 0u);
        ASSERT_EQ(ra.delivered, (uint64_t)LEN);
    }
}

TEST(shuffled_duplicated_overlapping_segments_deliver_the_stream_once)
{
    shuffled_run(123456u, 20);
}

TEST(sequence_numbers_wrap)
{
    shuffled_run(0xFFFFF000u, 20);
}

TEST(first_data_segment_starts_a_stream_without_syn)
{
    static uint8_t ring[1024];
    static struct sink sink;
    struct iwarp_tcp_reasm ra;
    iwarp_tcp_reasm_init(&ra, ring, sizeof ring);
    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 500, (const uint8_t *)"abcd", 4, collect, &sink), 0);
    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 498, (const uint8_t *)"xyab", 4, collect, &sink), 0);
    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 504, (const uint8_t *)"ef", 2, collect, &sink), 0);
    ASSERT_EQ(sink.n, 6u);
    ASSERT_MEM_EQ(sink.out, "abcdef", 6);
    ASSERT_EQ(ra.dup_octets, 4u);
}

TEST(window_and_range_table_overflow_are_counted)
{
    static uint8_t ring[1024], data[4096];
    static struct sink sink;
    struct iwarp_tcp_reasm ra;
    iwarp_tcp_reasm_init(&ra, ring, 1000); /* rounded down to 512 */
    ASSERT_EQ(ra.cap, 512u);
    iwarp_tcp_reasm_syn(&ra, 0);
    /* beyond the window: dropped */
    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 1 + 600, data, 10, collect, &sink), IWARP_ERR_NOSPC);
    ASSERT_EQ(ra.dropped, 10u);
    /* partly inside: the inside part is held */
    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 1 + 500, data, 20, collect, &sink), IWARP_ERR_NOSPC);
    ASSERT_EQ(iwarp_tcp_reasm_held(&ra), 12u);
    /* more separate holes than the table holds */
    iwarp_tcp_reasm_init(&ra, ring, sizeof ring);
    iwarp_tcp_reasm_syn(&ra, 0);
    for (unsigned i = 0; i < IWARP_TCP_REASM_MAX_RANGES; i++)
        ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 1 + 2 + 4 * i, data, 1, collect, &sink), 0);
    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 1 + 2 + 4 * IWARP_TCP_REASM_MAX_RANGES, data, 1, collect,
                                      &sink),
              IWARP_ERR_NOSPC);
    /* a segment bridging all the holes merges them and delivers everything */
    sink.n = 0;
    ASSERT_EQ(iwarp_tcp_reasm_segment(&ra, 1, data, 4 * IWARP_TCP_REASM_MAX_RANGES, collect, &sink),
              0);
    ASSERT_EQ(sink.n, (size_t)(4 * IWARP_TCP_REASM_MAX_RANGES));
    ASSERT_EQ(ra.nr, 0u);
    ASSERT_EQ(iwarp_tcp_reasm_segment(NULL, 0, data, 1, collect, &sink), IWARP_ERR_INVAL);
}
