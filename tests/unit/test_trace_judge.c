/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace/trace_judge: the DDP/RDMAP rules `iwarp dump` applies to the segments of one DDP stream
 * (shared by the MPA and SCTP judges), driven directly with hand-built segments: the category
 * names; what iwarp_ddp_judge_decode() keeps; MSN and MO per queue (RFC 5041 §4.3, §5.3); TO
 * continuity (§4.2); Read Responses against the peer's Read Requests (RFC 5040 §4.4, §4.5) and
 * what iwarp_ddp_judge_lost() changes; nothing after one's own Terminate (§5.4); the segment
 * decode errors with their Terminate causes; reserved fields; the warnings of
 * iwarp_ddp_judge_finish(); iwarp_ddp_judge_reportf(), the formatter all three judges report
 * through. Each finding's side, index, severity, category and text are checked.
 */
#include <string.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "trace/trace_judge.h"
#include "util/bytes.h"

#define MAX_SEEN 16

/* The findings the judge reported. */
struct seen {
    unsigned n;
    struct {
        unsigned side;
        uint64_t index;
        bool error;
        enum iwarp_mpa_stream_class cls;
        char msg[256];
    } f[MAX_SEEN];
};

static void on_report(void *ctx, unsigned side, uint64_t index, bool error,
                      enum iwarp_mpa_stream_class cls, const char *msg)
{
    struct seen *s = ctx;
    ASSERT_TRUE(s->n < MAX_SEEN);
    s->f[s->n].side = side;
    s->f[s->n].index = index;
    s->f[s->n].error = error;
    s->f[s->n].cls = cls;
    ASSERT_TRUE(strlen(msg) < sizeof s->f[0].msg);
    strcpy(s->f[s->n].msg, msg);
    s->n++;
}

/* Findings of one category and severity. */
static unsigned count(const struct seen *s, enum iwarp_mpa_stream_class cls, bool error)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->n; i++)
        n += s->f[i].cls == cls && s->f[i].error == error;
    return n;
}

/* Finding i is (side, index, error, cls) and its text contains text. */
static void expect(const struct seen *s, unsigned i, unsigned side, uint64_t index, bool error,
                   enum iwarp_mpa_stream_class cls, const char *text)
{
    ASSERT_TRUE(i < s->n);
    ASSERT_EQ(s->f[i].side, side);
    ASSERT_EQ_U(s->f[i].index, index);
    ASSERT_EQ(s->f[i].error, error);
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(s->f[i].cls), iwarp_mpa_stream_class_name(cls));
    if (!strstr(s->f[i].msg, text))
        harness_fail(__FILE__, __LINE__, "finding %u \"%s\" does not contain \"%s\"", i,
                     s->f[i].msg, text);
}

/* ---- building segments (RFC 5041 §4.1-§4.3 DDP headers, RFC 5040 §4.1 control octet) ---- */

enum { A = 0, B = 1 }; /* the two sides of the stream */

#define OP_WRITE     0x0u
#define OP_READ_REQ  0x1u
#define OP_READ_RESP 0x2u
#define OP_SEND      0x3u
#define OP_TERMINATE 0x7u

/* An untagged DDP segment: T=0, L, DV=1, RV=1 with opcode op, Invalidate STag slot 0, QN, MSN,
 * MO, then payload octets of body (0x11 when body is NULL). */
static size_t untagged(uint8_t *b, unsigned op, bool last, uint32_t qn, uint32_t msn, uint32_t mo,
                       const uint8_t *body, size_t payload)
{
    b[0] = (uint8_t)((last ? 0x40u : 0u) | 0x01u);
    b[1] = (uint8_t)(0x40u | op);
    memset(b + 2, 0, 4);
    iwarp_store_be32(b + 6, qn);
    iwarp_store_be32(b + 10, msn);
    iwarp_store_be32(b + 14, mo);
    if (body)
        memcpy(b + 18, body, payload);
    else
        memset(b + 18, 0x11, payload);
    return 18 + payload;
}

/* A tagged DDP segment: T=1, L, DV=1, RV=1 with opcode op, STag, TO, payload octets 0x22. */
static size_t tagged(uint8_t *b, unsigned op, bool last, uint32_t stag, uint64_t to, size_t payload)
{
    b[0] = (uint8_t)(0x80u | (last ? 0x40u : 0u) | 0x01u);
    b[1] = (uint8_t)(0x40u | op);
    iwarp_store_be32(b + 2, stag);
    iwarp_store_be64(b + 6, to);
    memset(b + 14, 0x22, payload);
    return 14 + payload;
}

/* A Read Request (RFC 5040 §4.4: QN 1, L=1, 28-octet header) for size octets into sink_stag at
 * sink_to, MSN msn. */
static size_t read_req(uint8_t *b, uint32_t msn, uint32_t sink_stag, uint64_t sink_to,
                       uint32_t size)
{
    uint8_t rr[28];
    iwarp_store_be32(rr, sink_stag);
    iwarp_store_be64(rr + 4, sink_to);
    iwarp_store_be32(rr + 12, size);
    iwarp_store_be32(rr + 16, 0x5000u); /* Data Source STag */
    iwarp_store_be64(rr + 20, 0x9000u); /* Data Source TO */
    return untagged(b, OP_READ_REQ, true, 1, msn, 0, rr, sizeof rr);
}

/* A Terminate (RFC 5040 §4.8: QN 2, L=1) with the 4-octet control word ctrl and no headers. */
static size_t terminate(uint8_t *b, uint32_t msn, const uint8_t ctrl[4])
{
    return untagged(b, OP_TERMINATE, true, 2, msn, 0, ctrl, 4);
}

/* One judged stream and the caller's segment numbering. */
struct stream {
    struct iwarp_ddp_judge j;
    struct seen seen;
    uint64_t index;
};

static void open_stream(struct stream *st)
{
    memset(st, 0, sizeof *st);
    iwarp_ddp_judge_init(&st->j, on_report, &st->seen);
}

/* Decodes b[0..n) and judges it as side's next segment; returns its index. */
static uint64_t put(struct stream *st, unsigned side, const uint8_t *b, size_t n)
{
    struct iwarp_ddp_judge_seg s;
    iwarp_ddp_judge_decode(b, (uint32_t)n, &s);
    iwarp_ddp_judge_segment(&st->j, side, ++st->index, &s);
    return st->index;
}

static uint64_t send_msg(struct stream *st, unsigned side, uint32_t msn)
{
    uint8_t b[64];
    return put(st, side, b, untagged(b, OP_SEND, true, 0, msn, 0, NULL, 8));
}

/* ---- names and decoding ---- */

TEST(class_names_are_wire_checks_and_out_of_range_is_a_question_mark)
{
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(IWARP_MS_BAD_CRC), "bad-crc");
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(IWARP_MS_MSN), "msn");
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(IWARP_MS_READ_RESP), "read-resp");
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(IWARP_MS_AFTER_TERMINATE), "after-terminate");
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(IWARP_MS_SCTP_CTL), "sctp-ctl");
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(IWARP_MS_CLASS_COUNT), "?");
    ASSERT_STR_EQ(iwarp_mpa_stream_class_name(~0u), "?");
    /* every category has a name of its own */
    for (unsigned i = 0; i < IWARP_MS_CLASS_COUNT; i++) {
        const char *n = iwarp_mpa_stream_class_name(i);
        ASSERT_TRUE(n != NULL);
        ASSERT_TRUE(strcmp(n, "?") != 0);
        for (unsigned k = 0; k < i; k++)
            ASSERT_TRUE(strcmp(n, iwarp_mpa_stream_class_name(k)) != 0);
    }
}

TEST(reportf_formats_the_text_and_passes_the_rest_on)
{
    struct seen s = {0};
    iwarp_ddp_judge_reportf(on_report, &s, B, 42, false, IWARP_MS_TO, "STag 0x%08x at %s", 0xbeefu,
                            "TO 7");
    char longtext[400];
    memset(longtext, 'x', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = 0;
    iwarp_ddp_judge_reportf(on_report, &s, A, 1, true, IWARP_MS_SCTP, "%s!", longtext);
    ASSERT_EQ(s.n, 2);
    expect(&s, 0, B, 42, false, IWARP_MS_TO, "STag 0x0000beef at TO 7");
    ASSERT_STR_EQ(s.f[0].msg, "STag 0x0000beef at TO 7");
    expect(&s, 1, A, 1, true, IWARP_MS_SCTP, "xxx");
    ASSERT_EQ_U(strlen(s.f[1].msg), IWARP_DDP_JUDGE_MSG_MAX - 1u); /* cut, not overrun */
}

TEST(decode_keeps_the_header_and_the_segment_decoders_verdict)
{
    uint8_t b[64];
    size_t n = untagged(b, OP_SEND, true, 0, 7, 0, NULL, 5);
    struct iwarp_ddp_judge_seg s;
    iwarp_ddp_judge_decode(b, (uint32_t)n, &s);
    ASSERT_TRUE(s.ulpdu == b);
    ASSERT_EQ_U(s.len, 23u);
    ASSERT_TRUE(s.has_ddp);
    ASSERT_FALSE(s.ddp.tagged);
    ASSERT_TRUE(s.ddp.last);
    ASSERT_EQ_U(s.ddp.msn, 7u);
    ASSERT_EQ(s.seg_rc, 0);
    ASSERT_EQ(s.seg.opcode, OP_SEND);
    ASSERT_EQ_U(s.seg.payload_len, 5u);

    /* 10 octets: not even a tagged header (RFC 5041 §4.2: 14) */
    iwarp_ddp_judge_decode(b, 10, &s);
    ASSERT_FALSE(s.has_ddp);
    ASSERT_EQ(s.seg_rc, IWARP_ERR_DDP_HDR_LEN);
    ASSERT_EQ(s.cause.layer, 1); /* DDP */
}

TEST(a_segment_shorter_than_its_header_is_a_length_error)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    size_t n = untagged(b, OP_SEND, true, 0, 1, 0, NULL, 0);
    put(&st, A, b, n - 4); /* untagged header cut at 14 octets */
    ASSERT_EQ(st.seen.n, 1);
    expect(&st.seen, 0, A, 1, true, IWARP_MS_LENGTH, "Terminate 1/0/0x00");
}

/* ---- untagged queues: MSN and MO (RFC 5041 §4.3, §5.3) ---- */

TEST(sends_in_order_on_both_sides_are_clean)
{
    struct stream st;
    open_stream(&st);
    for (uint32_t m = 1; m <= 3; m++) {
        send_msg(&st, A, m);
        send_msg(&st, B, m);
    }
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 0);
}

TEST(msns_start_at_one_and_grow_by_one_per_queue_and_side)
{
    struct stream st;
    open_stream(&st);
    send_msg(&st, A, 2); /* #1: the first MSN of a queue is 1 */
    send_msg(&st, B, 1); /* #2: B's own queue, clean */
    send_msg(&st, A, 3); /* #3: follows 2: clean */
    send_msg(&st, A, 5); /* #4: 4 is missing */
    uint8_t b[64];       /* #5: a Read Request on QN 1 starts its own sequence at 1 */
    put(&st, A, b, read_req(b, 1, 0xaa, 0, 16));
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 2);
    expect(&st.seen, 0, A, 1, true, IWARP_MS_MSN,
           "QN 0 MSN 2, expected 1 (MSNs start at 1 and grow by one per message, RFC 5041 §4.3)");
    expect(&st.seen, 1, A, 4, true, IWARP_MS_MSN, "QN 0 MSN 5, expected 4");
}

TEST(segments_of_one_message_share_the_msn_and_continue_the_mo)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    put(&st, A, b, untagged(b, OP_SEND, false, 0, 1, 0, NULL, 10));  /* #1 MO 0..9 */
    put(&st, A, b, untagged(b, OP_SEND, false, 0, 1, 10, NULL, 10)); /* #2 MO 10: clean */
    put(&st, A, b, untagged(b, OP_SEND, false, 0, 1, 24, NULL, 10)); /* #3 MO 24, want 20 */
    put(&st, A, b, untagged(b, OP_SEND, true, 0, 2, 34, NULL, 10));  /* #4 MSN 2, 1 open */
    put(&st, A, b, untagged(b, OP_SEND, true, 0, 3, 3, NULL, 4));    /* #5 first with MO 3 */
    ASSERT_EQ(st.seen.n, 3);
    expect(&st.seen, 0, A, 3, true, IWARP_MS_MO, "QN 0 MSN 1 MO 24, expected 20 (RFC 5041 §4.3)");
    expect(&st.seen, 1, A, 4, true, IWARP_MS_MSN,
           "QN 0 MSN 2 while message MSN 1 is unfinished (L=0)");
    /* #4's L=1 ended a message with MSN 2: MSN 3 is the one expected next */
    expect(&st.seen, 2, A, 5, true, IWARP_MS_MO,
           "first segment of QN 0 MSN 3 has MO 3, expected 0");
}

TEST(finish_warns_about_messages_without_their_last_segment)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    put(&st, B, b, untagged(b, OP_SEND, false, 0, 1, 0, NULL, 8));
    send_msg(&st, A, 1);
    ASSERT_EQ(st.seen.n, 0);
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 1);
    expect(&st.seen, 0, B, 0, false, IWARP_MS_MSN,
           "QN 0 MSN 1 has no segment with L=1 by the end of the capture");
}

/* ---- tagged messages (RFC 5041 §4.2) ---- */

TEST(tagged_segments_carry_contiguous_tos_per_stag)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    put(&st, A, b, tagged(b, OP_WRITE, false, 0x100, 0x1000, 16)); /* #1 */
    put(&st, A, b, tagged(b, OP_WRITE, false, 0x200, 0x8000, 8));  /* #2 another STag */
    put(&st, A, b, tagged(b, OP_WRITE, false, 0x100, 0x1010, 16)); /* #3 continues #1 */
    put(&st, A, b, tagged(b, OP_WRITE, true, 0x100, 0x1030, 4));   /* #4 0x1020 expected */
    put(&st, A, b, tagged(b, OP_WRITE, true, 0x200, 0x8008, 4));   /* #5 continues #2 */
    put(&st, A, b, tagged(b, OP_WRITE, true, 0x100, 0x4000, 4));   /* #6 a new message */
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 1);
    expect(&st.seen, 0, A, 4, true, IWARP_MS_TO,
           "TO 0x1030 for STag 0x00000100, expected 0x1020 (continues the previous segment, RFC "
           "5041 §4.2)");
}

/* ---- Read Responses against Read Requests (RFC 5040 §4.4, §4.5) ---- */

TEST(a_read_response_that_answers_the_request_is_clean)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    put(&st, A, b, read_req(b, 1, 0xabc, 0x7000, 24));
    put(&st, A, b, read_req(b, 2, 0xdef, 0x100, 4));
    put(&st, B, b, tagged(b, OP_READ_RESP, false, 0xabc, 0x7000, 16));
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xabc, 0x7010, 8));
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xdef, 0x100, 4));
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 0);
}

TEST(read_responses_with_the_wrong_stag_to_or_size_are_errors)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xabc, 0, 4));       /* #1 nothing asked */
    put(&st, A, b, read_req(b, 1, 0xabc, 0x7000, 24));                /* #2 */
    put(&st, A, b, read_req(b, 2, 0xabc, 0x9000, 8));                 /* #3 */
    put(&st, A, b, read_req(b, 3, 0xabc, 0x0, 8));                    /* #4 */
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xbad, 0x7000, 24)); /* #5 answers #2 */
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xabc, 0x9004, 8));  /* #6 answers #3 */
    put(&st, B, b, tagged(b, OP_READ_RESP, false, 0xabc, 0x0, 12));   /* #7 answers #4 */
    ASSERT_EQ(st.seen.n, 4);
    expect(&st.seen, 0, B, 1, true, IWARP_MS_READ_RESP,
           "Read Response without an outstanding Read Request (RFC 5040 §4.5)");
    expect(&st.seen, 1, B, 5, true, IWARP_MS_READ_RESP,
           "Read Response STag 0x00000bad, Read Request #2 asked for sink STag 0x00000abc");
    expect(&st.seen, 2, B, 6, true, IWARP_MS_READ_RESP,
           "Read Response TO 0x9004, expected 0x9000 (Read Request #3, RFC 5040 §4.5)");
    expect(&st.seen, 3, B, 7, true, IWARP_MS_READ_RESP,
           "Read Response exceeds the 8 octets requested (RFC 5040 §4.4)");
    /* #7 is also the next segment of STag 0xabc's tagged message: no TO finding, #6 ended it */
    ASSERT_EQ(count(&st.seen, IWARP_MS_TO, true), 0);
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 5);
    expect(&st.seen, 4, B, 0, false, IWARP_MS_READ_RESP,
           "Read Response unfinished at the end of the capture");
}

TEST(a_read_response_shorter_than_requested_is_an_error_at_its_last_segment)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    put(&st, B, b, read_req(b, 1, 0x77, 0x0, 32));
    put(&st, A, b, tagged(b, OP_READ_RESP, false, 0x77, 0x0, 8));
    put(&st, A, b, tagged(b, OP_READ_RESP, true, 0x77, 0x8, 8));
    ASSERT_EQ(st.seen.n, 1);
    expect(&st.seen, 0, A, 3, true, IWARP_MS_READ_RESP,
           "Read Response carried 16 octets, Read Request #1 asked for 32 (RFC 5040 §4.4 "
           "RDMARDSZ)");
}

TEST(once_the_requester_is_lost_read_responses_get_one_warning)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    put(&st, A, b, read_req(b, 1, 0x77, 0x0, 8));
    iwarp_ddp_judge_lost(&st.j, A);
    iwarp_ddp_judge_lost(&st.j, 2);                               /* not a side: ignored */
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xbad, 0x5, 3)); /* #2 would be wrong */
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0x99, 0x0, 4));  /* #3 nothing asked */
    send_msg(&st, B, 2); /* #4: B's other rules still apply (MSN 1 expected) */
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 2);
    expect(&st.seen, 0, B, 2, false, IWARP_MS_READ_RESP,
           "Read Responses from here on are not checked");
    expect(&st.seen, 1, B, 4, true, IWARP_MS_MSN, "QN 0 MSN 2, expected 1");
    ASSERT_EQ(count(&st.seen, IWARP_MS_READ_RESP, true), 0);
}

TEST(the_responders_loss_does_not_stop_judging_its_read_responses)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    iwarp_ddp_judge_lost(&st.j, B); /* B's own loss: A's Read Requests were all seen */
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0x99, 0x0, 4));
    ASSERT_EQ(st.seen.n, 1);
    expect(&st.seen, 0, B, 1, true, IWARP_MS_READ_RESP, "without an outstanding Read Request");
}

/* ---- Terminate (RFC 5040 §4.8, §5.4) ---- */

TEST(nothing_may_follow_ones_own_terminate)
{
    struct stream st;
    open_stream(&st);
    static const uint8_t llp_crc[4] = {0x20, 0x02, 0, 0}; /* LLP 2/0/0x02 (RFC 5044 §8) */
    uint8_t b[64];
    send_msg(&st, A, 1);                      /* #1 */
    put(&st, A, b, terminate(b, 1, llp_crc)); /* #2 */
    send_msg(&st, B, 1);                      /* #3: the peer may still send */
    send_msg(&st, A, 2);                      /* #4 */
    put(&st, A, b, terminate(b, 2, llp_crc)); /* #5 */
    ASSERT_EQ(st.seen.n, 3);
    expect(&st.seen, 0, A, 4, true, IWARP_MS_AFTER_TERMINATE,
           "Send sent after this side's Terminate #2 (RFC 5040 §5.4)");
    expect(&st.seen, 1, A, 5, true, IWARP_MS_AFTER_TERMINATE, "after this side's Terminate #2");
    expect(&st.seen, 2, A, 5, true, IWARP_MS_TERMINATE, "second Terminate on this stream");
}

TEST(terminate_headers_must_carry_a_defined_cause_and_zero_reserved_bits)
{
    struct stream st;
    open_stream(&st);
    static const uint8_t undefined[4] = {0x30, 0x00, 0, 0};  /* Layer 3: none (RFC 5040 §4.8) */
    static const uint8_t rsvd[4] = {0x20, 0x02, 0x00, 0x01}; /* a Reserved bit set */
    uint8_t b[64];
    put(&st, A, b, terminate(b, 1, undefined));
    put(&st, B, b, terminate(b, 1, rsvd));
    ASSERT_EQ(st.seen.n, 2);
    expect(&st.seen, 0, A, 1, true, IWARP_MS_TERMINATE,
           "Terminate cause 3/0/0x00 is not defined (RFC 5040 §4.8)");
    expect(&st.seen, 1, B, 2, true, IWARP_MS_TERMINATE,
           "Terminate reserved bits 0x1 (RFC 5040 §4.8: MUST be 0)");
}

/* ---- iwarp_wire_segment_decode() errors and reserved fields ---- */

TEST(decode_errors_are_reported_with_their_category_and_terminate_cause)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    size_t n = untagged(b, OP_SEND, true, 0, 1, 0, NULL, 4);
    b[0] = 0x42; /* #1 DV=2 (RFC 5041 §4.1) */
    put(&st, A, b, n);
    n = untagged(b, OP_SEND, true, 0, 2, 0, NULL, 4);
    b[1] = 0x83; /* #2 RV=2 (RFC 5040 §4.1) */
    put(&st, A, b, n);
    put(&st, A, b, untagged(b, 0xc, true, 0, 3, 0, NULL, 4));     /* #3 undefined opcode */
    put(&st, A, b, tagged(b, OP_SEND, true, 0x1, 0, 4));          /* #4 a tagged Send */
    put(&st, A, b, untagged(b, OP_SEND, true, 1, 1, 0, NULL, 4)); /* #5 Send on QN 1 */
    n = read_req(b, 2, 0x1, 0, 4);
    b[0] &= (uint8_t)~0x40u; /* #6 a Read Request without L */
    put(&st, A, b, n);
    ASSERT_EQ(st.seen.n, 6);
    expect(&st.seen, 0, A, 1, true, IWARP_MS_DDP_VERSION, "; Terminate 1/2/0x06 ");
    expect(&st.seen, 1, A, 2, true, IWARP_MS_RDMAP_VERSION, "; Terminate 0/2/0x05 ");
    expect(&st.seen, 2, A, 3, true, IWARP_MS_OPCODE, "; Terminate 0/2/0x06 ");
    expect(&st.seen, 3, A, 4, true, IWARP_MS_TFLAG, "; Terminate 0/2/0x06 ");
    expect(&st.seen, 4, A, 5, true, IWARP_MS_QN, "; Terminate 1/2/0x01 ");
    expect(&st.seen, 5, A, 6, true, IWARP_MS_LAST_FLAG, "; Terminate 0/2/0xff ");
    /* the message is iwarp_strerror()'s text first */
    ASSERT_TRUE(strncmp(st.seen.f[4].msg, iwarp_strerror(IWARP_ERR_DDP_QN),
                        strlen(iwarp_strerror(IWARP_ERR_DDP_QN))) == 0);
}

TEST(reserved_fields_set_on_send_are_errors)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[64];
    size_t n = untagged(b, OP_SEND, true, 0, 1, 0, NULL, 4);
    b[0] |= 0x14; /* #1 DDP Rsvd = 0x5 */
    put(&st, A, b, n);
    n = untagged(b, OP_SEND, true, 0, 2, 0, NULL, 4);
    iwarp_store_be32(b + 2, 0xcafe); /* #2 Invalidate STag slot of a plain Send */
    put(&st, A, b, n);
    n = untagged(b, OP_SEND, true, 0, 3, 0, NULL, 4);
    b[1] |= 0x10; /* #3 RDMAP Rsv */
    put(&st, A, b, n);
    ASSERT_EQ(st.seen.n, 3);
    expect(&st.seen, 0, A, 1, true, IWARP_MS_DDP_RSVD,
           "DDP reserved bits = 0x5 (RFC 5041 §4.1: MUST be 0)");
    expect(&st.seen, 1, A, 2, true, IWARP_MS_RSVDULP,
           "Invalidate STag slot = 0x0000cafe, MUST be 0 for Send (RFC 5040 §4.1)");
    expect(&st.seen, 2, A, 3, true, IWARP_MS_RDMAP_RSVD, "RDMAP reserved bits set");
}

/* ---- RFC 7306: atomics ---- */

#define OP_ATOMIC_REQ  0xAu
#define OP_ATOMIC_RESP 0xBu
#define OP_IMM_DATA    0x8u

/* An Atomic Request (RFC 7306 §5.2.1: QN 1, L=1, 52-octet header) with aopcode and req_id. */
static size_t atomic_req(uint8_t *b, uint32_t msn, uint8_t aopcode, uint32_t req_id)
{
    uint8_t ar[52] = {0};
    iwarp_store_be32(ar, aopcode);
    iwarp_store_be32(ar + 4, req_id);
    iwarp_store_be32(ar + 8, 0x5000u);
    iwarp_store_be64(ar + 12, 0x9000u);
    memset(ar + 36, 0xFF, 16); /* FetchAdd's Compare Mask; ignored here */
    return untagged(b, OP_ATOMIC_REQ, true, 1, msn, 0, ar, sizeof ar);
}

/* An Atomic Response (RFC 7306 §5.2.2: QN 3, L=1, 12-octet header). */
static size_t atomic_resp(uint8_t *b, uint32_t msn, uint32_t req_id)
{
    uint8_t r[12] = {0};
    iwarp_store_be32(r, req_id);
    iwarp_store_be64(r + 4, 77);
    return untagged(b, OP_ATOMIC_RESP, true, 3, msn, 0, r, sizeof r);
}

TEST(atomic_and_read_responses_in_request_order_are_clean)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[96];
    /* queue 1 carries Read and Atomic Requests in one MSN sequence; queue 3 the Atomic
     * Responses from MSN 1; Immediate Data counts on queue 0 with the Sends */
    put(&st, A, b, atomic_req(b, 1, 0, 40));
    put(&st, A, b, read_req(b, 2, 0xabc, 0x7000, 8));
    put(&st, A, b, atomic_req(b, 3, 2, 41));
    put(&st, A, b, untagged(b, OP_IMM_DATA, true, 0, 1, 0, NULL, 8));
    put(&st, B, b, atomic_resp(b, 1, 40));
    put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xabc, 0x7000, 8));
    put(&st, B, b, atomic_resp(b, 2, 41));
    iwarp_ddp_judge_finish(&st.j);
    ASSERT_EQ(st.seen.n, 0);
}

TEST(atomic_rules_aopcode_request_identifier_order_and_queues)
{
    struct stream st;
    open_stream(&st);
    uint8_t b[96];
    uint64_t i1 = put(&st, A, b, atomic_req(b, 1, 1, 7)); /* AOpCode 1 (Swap): not defined */
    expect(&st.seen, 0, A, i1, true, IWARP_MS_ATOMIC, "AOpCode 1");
    put(&st, A, b, read_req(b, 2, 0xabc, 0x7000, 8));
    /* the Read's Response before the Atomic Response: out of request order */
    uint64_t r1 = put(&st, B, b, tagged(b, OP_READ_RESP, true, 0xabc, 0x7000, 8));
    expect(&st.seen, 1, B, r1, true, IWARP_MS_READ_RESP, "request order");
    /* the wrong Original Request Identifier */
    uint64_t a1 = put(&st, B, b, atomic_resp(b, 1, 8));
    expect(&st.seen, 2, B, a1, true, IWARP_MS_ATOMIC, "Original Request Identifier 8");
    /* nothing outstanding */
    uint64_t a2 = put(&st, B, b, atomic_resp(b, 2, 7));
    expect(&st.seen, 3, B, a2, true, IWARP_MS_ATOMIC, "without an outstanding");
    /* the wrong queue, the wrong body length: the decoder's verdicts (QN 1/2/0x01, length) */
    uint64_t q = put(&st, B, b, untagged(b, OP_ATOMIC_RESP, true, 0, 1, 0, NULL, 12));
    expect(&st.seen, 4, B, q, true, IWARP_MS_QN, "");
    expect(&st.seen, 5, B, q, true, IWARP_MS_ATOMIC, "without an outstanding"); /* still paired */
    uint64_t l = put(&st, A, b, untagged(b, OP_ATOMIC_REQ, true, 1, 3, 0, NULL, 48));
    expect(&st.seen, 6, A, l, true, IWARP_MS_LENGTH, "");
    ASSERT_EQ(st.seen.n, 7);
}
