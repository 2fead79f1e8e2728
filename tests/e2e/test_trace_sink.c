/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace/trace_sink and the packet trace's API (iwarp/trace.h, IWARP_PCAP, trace_pcap): over real
 * loopback connections, two contexts (progress threads writing at once) tracing to one path land
 * in one capture in which both connections decode completely; the process's size bound stops
 * every connection at once with one log line and a capture of whole records, valid while the
 * connections still run; the process-wide trace records only what is set up while it runs; a
 * writer's budget refuses a record that does not fit and writes nothing; sizes parse.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iwarp/trace.h"
#include "mpa/mpa_frame.h"
#include "stack_pair.h"
#include "trace/pcap_reader.h"
#include "trace/trace_sink.h"
#include "wire/wire_mpa.h"

#define MSG     1000u /* one FPDU: the pattern is contiguous in the capture */
#define MAX_CAP 4u    /* conversations a capture may hold in these tests */

/* One TCP conversation of a capture: both directions reassembled by sequence number. */
struct conv {
    uint16_t cport; /* the client's port */
    uint8_t *b[2];  /* [0] what the client sent, [1] what the server sent */
    size_t len[2];
    uint32_t next_seq[2];
    bool syn[2], fin[2];
};

struct capture {
    struct conv c[MAX_CAP];
    uint32_t n;
    uint64_t packets;
    uint64_t octets; /* the file header and every record: the file's size when all are whole */
};

static struct conv *conv_of(struct capture *cap, const struct iwarp_pcap_packet *p, int *dir)
{
    for (uint32_t i = 0; i < cap->n; i++) {
        if (p->pkt.sport == cap->c[i].cport || p->pkt.dport == cap->c[i].cport) {
            *dir = p->pkt.sport == cap->c[i].cport ? 0 : 1;
            return &cap->c[i];
        }
    }
    /* a new conversation starts with the client's SYN (RFC 9293 §3.5) */
    ASSERT_TRUE((p->pkt.tcp_flags & IWARP_PKT_TCP_SYN) && !(p->pkt.tcp_flags & IWARP_PKT_TCP_ACK));
    ASSERT_TRUE(cap->n < MAX_CAP);
    struct conv *c = &cap->c[cap->n++];
    memset(c, 0, sizeof *c);
    c->cport = p->pkt.sport;
    c->b[0] = calloc(1, 1u << 20);
    c->b[1] = calloc(1, 1u << 20);
    *dir = 0;
    return c;
}

/* Reads the whole capture at path: every record whole and decodable, each conversation's
 * octets contiguous in both directions. */
static void read_capture(const char *path, struct capture *cap)
{
    memset(cap, 0, sizeof *cap);
    cap->octets = 24;
    struct iwarp_pcap_reader *r = NULL;
    char err[256] = "";
    ASSERT_EQ(iwarp_pcap_reader_open(&r, path, err, sizeof err), 0);
    struct iwarp_pcap_packet p;
    int rc;
    while ((rc = iwarp_pcap_reader_next(r, &p)) == 0) {
        cap->packets++;
        cap->octets += 16u + p.caplen;
        ASSERT_EQ(p.caplen, p.wire_len);
        ASSERT_EQ(p.decode_rc, 0);
        ASSERT_EQ(p.pkt.ip_proto, 6);
        int d;
        struct conv *c = conv_of(cap, &p, &d);
        if (p.pkt.tcp_flags & IWARP_PKT_TCP_SYN) {
            ASSERT_FALSE(c->syn[d]);
            c->syn[d] = true;
            c->next_seq[d] = p.pkt.seq + 1u;
            continue;
        }
        ASSERT_TRUE(c->syn[0] && c->syn[1]);
        if (p.pkt.payload_len) {
            ASSERT_FALSE(c->fin[d]);
            ASSERT_EQ_U(p.pkt.seq, c->next_seq[d]); /* no gap, no overlap */
            ASSERT_TRUE(c->len[d] + p.pkt.payload_len <= (1u << 20));
            memcpy(c->b[d] + c->len[d], p.pkt.payload, p.pkt.payload_len);
            c->len[d] += p.pkt.payload_len;
            c->next_seq[d] += (uint32_t)p.pkt.payload_len;
        }
        if (p.pkt.tcp_flags & IWARP_PKT_TCP_FIN)
            c->fin[d] = true;
    }
    ASSERT_EQ(rc, IWARP_ERR_PCAP_END); /* not IWARP_ERR_PCAP: no record cut short */
    iwarp_pcap_reader_close(r);
}

static void capture_free(struct capture *cap)
{
    for (uint32_t i = 0; i < cap->n; i++) {
        free(cap->c[i].b[0]);
        free(cap->c[i].b[1]);
    }
}

/* The conversation starts with an MPA Request from the client and a Reply from the server
 * (RFC 5044 §7.1.1), both decoding; when want_seed is not 0, the client's stream carries the
 * MSG-octet pattern want_seed. */
static void expect_mpa(const struct conv *c, uint32_t want_seed)
{
    struct iwarp_mpa_frame f;
    ASSERT_TRUE(iwarp_mpa_frame_decode(c->b[0], c->len[0], &f) > 0);
    ASSERT_FALSE(f.reply);
    ASSERT_TRUE(iwarp_mpa_frame_decode(c->b[1], c->len[1], &f) > 0);
    ASSERT_TRUE(f.reply && !f.r);
    if (want_seed) {
        uint8_t pat[MSG];
        sp_fill(pat, MSG, want_seed);
        ASSERT_TRUE(memmem(c->b[0], c->len[0], pat, MSG) != NULL);
    }
}

static const struct sp_cfg cfg = {
    .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1},
    .sq_sig_all = 1,
    .param = {.responder_resources = 4, .initiator_depth = 4},
};

/* A side on a context created here with the trace attribute and log hook given. */
static void side_traced(struct sp_side *s, enum iwarp_progress_mode mode, const char *path,
                        iwarp_log_fn log)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = mode;
    a.trace_pcap = path;
    a.log = log;
    struct sp_side base = {.mode = mode};
    ASSERT_EQ(iwarp_ctx_create(&a, &base.ctx), 0);
    sp_side_init_full(s, &base, mode, NULL, 0, 256, false);
}

static void side_traced_fini(struct sp_side *s)
{
    struct iwarp_ctx *ctx = s->ctx;
    sp_side_fini(s);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
}

/* n Sends of MSG octets (pattern seed + i) from pair->cli to pair->srv, all completed. */
static void sends(struct sp_side *srv, struct sp_side *cli, struct sp_pair *pair, uint8_t *sbuf,
                  uint8_t *rbuf, struct iwarp_mr *smr, struct iwarp_mr *rmr, uint32_t seed,
                  uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        sp_fill(sbuf, MSG, seed + i);
        ASSERT_EQ(sp_post_recv(pair->srv.qp, i, rbuf, MSG, rmr->lkey), 0);
        ASSERT_EQ(sp_post(pair->cli.qp, i, IWARP_WR_SEND, IWARP_SEND_SIGNALED, sbuf, MSG, smr->lkey,
                          0, 0),
                  0);
        sp_poll_ok(cli, srv, IWARP_WC_SEND);
        struct iwarp_wc wc = sp_poll_ok(srv, cli, IWARP_WC_RECV);
        ASSERT_EQ(wc.byte_len, MSG);
        SP_ASSERT_PATTERN(rbuf, MSG, seed + i);
    }
}

static off_t file_size(const char *path)
{
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    return st.st_size;
}

static void tmp_path(char *path, size_t cap, const char *what)
{
    snprintf(path, cap, "/tmp/test_trace_sink_%s_%d.pcap", what, (int)getpid());
    unlink(path);
}

TEST(two_contexts_share_one_capture)
{
    char path[128];
    tmp_path(path, sizeof path, "shared");
    struct sp_side srv, a, b;
    sp_side_init(&srv, IWARP_PROGRESS_CALLER, 256); /* not traced: each connection once */
    /* a: the environment (the deprecated name, to keep it covered); b: the attribute */
    ASSERT_EQ(setenv("IWARP_TRACE_PCAP", path, 1), 0);
    sp_side_init(&a, IWARP_PROGRESS_THREAD, 256);
    ASSERT_EQ(unsetenv("IWARP_TRACE_PCAP"), 0);
    side_traced(&b, IWARP_PROGRESS_THREAD, path, NULL);

    static uint8_t sbuf[2][MSG], rbuf[2][MSG];
    struct iwarp_mr *smr[2] = {sp_reg(&a, sbuf[0], MSG, 0), sp_reg(&b, sbuf[1], MSG, 0)};
    struct iwarp_mr *rmr[2] = {sp_reg(&srv, rbuf[0], MSG, 0), sp_reg(&srv, rbuf[1], MSG, 0)};
    struct sp_pair pa[1], pb[1];
    memset(pa, 0, sizeof pa);
    memset(pb, 0, sizeof pb);
    sp_connect_pairs(&srv, &a, pa, 1, &cfg);
    sp_connect_pairs(&srv, &b, pb, 1, &cfg);
    sp_first_send(&srv, &a, pa, 1);
    sp_first_send(&srv, &b, pb, 1);
    /* both progress threads write into the file at once */
    for (uint32_t i = 0; i < 8; i++) {
        sends(&srv, &a, pa, sbuf[0], rbuf[0], smr[0], rmr[0], 0x1000u + i, 1);
        sends(&srv, &b, pb, sbuf[1], rbuf[1], smr[1], rmr[1], 0x2000u + i, 1);
    }
    sp_disconnect_pairs(&srv, &a, pa, 1, true);
    sp_disconnect_pairs(&srv, &b, pb, 1, false);
    sp_destroy_pairs(pa, 1);
    sp_destroy_pairs(pb, 1);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(iwarp_dereg_mr(smr[i]), 0);
        ASSERT_EQ(iwarp_dereg_mr(rmr[i]), 0);
    }
    sp_side_fini(&a);
    side_traced_fini(&b); /* the last user: the file is closed now */
    sp_side_fini(&srv);

    struct capture cap;
    read_capture(path, &cap);
    ASSERT_EQ_U(cap.n, 2);
    ASSERT_EQ_U(cap.octets, (uint64_t)file_size(path));
    uint32_t seen = 0; /* tell the conversations apart by their data */
    for (uint32_t i = 0; i < 2; i++) {
        struct conv *c = &cap.c[i];
        ASSERT_TRUE(c->fin[0] && c->fin[1]);
        uint8_t pat[MSG];
        sp_fill(pat, MSG, 0x1000u);
        uint32_t base = memmem(c->b[0], c->len[0], pat, MSG) ? 0x1000u : 0x2000u;
        seen |= base == 0x1000u ? 1u : 2u;
        for (uint32_t k = 0; k < 8; k++)
            expect_mpa(c, base + k);
    }
    ASSERT_EQ_U(seen, 3); /* one conversation per context */
    capture_free(&cap);
    unlink(path);
}

static int bound_lines, other_lines;

static void count_log(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    if (strstr(msg, "capture size bound"))
        bound_lines++;
    else
        other_lines++;
}

TEST(bound_stops_every_connection_with_one_line)
{
    char path[128];
    tmp_path(path, sizeof path, "bound");
    const uint64_t bound = 6u << 10;
    ASSERT_EQ(setenv("IWARP_PCAP_MAX", "6K", 1), 0);
    struct sp_side srv, a, b;
    sp_side_init(&srv, IWARP_PROGRESS_CALLER, 256);
    side_traced(&a, IWARP_PROGRESS_CALLER, path, count_log);
    side_traced(&b, IWARP_PROGRESS_CALLER, path, count_log);
    ASSERT_EQ(unsetenv("IWARP_PCAP_MAX"), 0);
    bound_lines = other_lines = 0;

    static uint8_t sbuf[2][MSG], rbuf[2][MSG];
    struct iwarp_mr *smr[2] = {sp_reg(&a, sbuf[0], MSG, 0), sp_reg(&b, sbuf[1], MSG, 0)};
    struct iwarp_mr *rmr[2] = {sp_reg(&srv, rbuf[0], MSG, 0), sp_reg(&srv, rbuf[1], MSG, 0)};
    struct sp_pair pa[1], pb[1];
    memset(pa, 0, sizeof pa);
    memset(pb, 0, sizeof pb);
    sp_connect_pairs(&srv, &a, pa, 1, &cfg);
    sp_connect_pairs(&srv, &b, pb, 1, &cfg);
    sp_first_send(&srv, &a, pa, 1);
    sp_first_send(&srv, &b, pb, 1);
    /* far past the bound on both connections: every message still arrives */
    for (uint32_t i = 0; i < 12; i++) {
        sends(&srv, &a, pa, sbuf[0], rbuf[0], smr[0], rmr[0], 0x3000u + i, 1);
        sends(&srv, &b, pb, sbuf[1], rbuf[1], smr[1], rmr[1], 0x4000u + i, 1);
    }
    ASSERT_EQ(bound_lines, 1);
    ASSERT_EQ(other_lines, 0);
    /* flushed at the bound: a valid capture while the connections still run */
    off_t size = file_size(path);
    ASSERT_TRUE(size <= (off_t)bound);
    /* the record that did not fit was at most a full one: a 1000-octet Send's FPDU */
    ASSERT_TRUE(size > (off_t)(bound - (16u + 54u + MSG + 64u)));
    struct capture cap;
    read_capture(path, &cap);
    ASSERT_EQ_U(cap.n, 2);
    ASSERT_EQ_U(cap.octets, (uint64_t)size); /* whole records only */
    for (uint32_t i = 0; i < 2; i++)
        expect_mpa(&cap.c[i], 0);
    capture_free(&cap);

    sp_disconnect_pairs(&srv, &a, pa, 1, true);
    sp_disconnect_pairs(&srv, &b, pb, 1, true);
    sp_destroy_pairs(pa, 1);
    sp_destroy_pairs(pb, 1);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(iwarp_dereg_mr(smr[i]), 0);
        ASSERT_EQ(iwarp_dereg_mr(rmr[i]), 0);
    }
    side_traced_fini(&a);
    side_traced_fini(&b);
    sp_side_fini(&srv);
    ASSERT_EQ(file_size(path), size); /* nothing after the bound, not even the FINs */
    ASSERT_EQ(bound_lines, 1);
    unlink(path);
}

TEST(process_wide_trace_records_what_is_set_up_while_it_runs)
{
    char path[128];
    tmp_path(path, sizeof path, "global");
    ASSERT_EQ(iwarp_trace_start(NULL, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_trace_start("", 0), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_trace_start("/nonexistent-dir/x.pcap", 0), IWARP_ERR_PCAP);
    ASSERT_EQ(iwarp_trace_stop(), 0); /* none started */
    ASSERT_EQ(setenv("IWARP_PCAP_MAX", "1X", 1), 0);
    ASSERT_EQ(iwarp_trace_start(path, 0), IWARP_ERR_INVAL);
    ASSERT_EQ(unsetenv("IWARP_PCAP_MAX"), 0);

    /* srv traces to a file of its own (the attribute beats the process-wide trace, and each
     * connection is recorded once); cli, made before the start, has none */
    struct sp_side srv, cli;
    side_traced(&srv, IWARP_PROGRESS_CALLER, "/dev/null", NULL);
    sp_side_init(&cli, IWARP_PROGRESS_CALLER, 256);
    struct sp_pair before[1], during[1], after[1];
    memset(before, 0, sizeof before);
    memset(during, 0, sizeof during);
    memset(after, 0, sizeof after);
    sp_connect_pairs(&srv, &cli, before, 1, &cfg);
    ASSERT_EQ(iwarp_trace_start(path, 1u << 20), 0);
    sp_connect_pairs(&srv, &cli, during, 1, &cfg);
    ASSERT_EQ(iwarp_trace_stop(), 0);
    /* flushed at the stop: the connection so far, whole */
    struct capture cap;
    read_capture(path, &cap);
    ASSERT_EQ_U(cap.n, 1);
    ASSERT_EQ_U(cap.octets, (uint64_t)file_size(path));
    expect_mpa(&cap.c[0], 0);
    ASSERT_FALSE(cap.c[0].fin[0] || cap.c[0].fin[1]);
    capture_free(&cap);
    /* not recorded: set up after the stop */
    sp_connect_pairs(&srv, &cli, after, 1, &cfg);
    sp_first_send(&srv, &cli, before, 1);
    sp_first_send(&srv, &cli, during, 1);
    sp_first_send(&srv, &cli, after, 1);
    sp_disconnect_pairs(&srv, &cli, before, 1, true);
    sp_disconnect_pairs(&srv, &cli, during, 1, true);
    sp_disconnect_pairs(&srv, &cli, after, 1, true);
    sp_destroy_pairs(before, 1);
    sp_destroy_pairs(during, 1); /* the last user of the file: it is closed */
    sp_destroy_pairs(after, 1);
    read_capture(path, &cap);
    ASSERT_EQ_U(cap.n, 1);
    ASSERT_EQ_U(cap.octets, (uint64_t)file_size(path));
    ASSERT_TRUE(cap.c[0].fin[0] && cap.c[0].fin[1]); /* recorded to its end after the stop */
    ASSERT_EQ(cap.c[0].len[0] > 0, true);
    capture_free(&cap);
    sp_side_fini(&cli);
    side_traced_fini(&srv);
    unlink(path);
}

TEST(environment_names_and_errors)
{
    char path[128], old[128];
    tmp_path(path, sizeof path, "env");
    tmp_path(old, sizeof old, "env_old");
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.log = count_log;
    struct iwarp_ctx *ctx = NULL;
    /* IWARP_PCAP beats the deprecated IWARP_TRACE_PCAP; the file exists from create on */
    ASSERT_EQ(setenv("IWARP_PCAP", path, 1), 0);
    ASSERT_EQ(setenv("IWARP_TRACE_PCAP", old, 1), 0);
    ASSERT_EQ(iwarp_ctx_create(&a, &ctx), 0);
    ASSERT_EQ(file_size(path), 24);
    ASSERT_TRUE(access(old, F_OK) != 0);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
    ASSERT_EQ(unsetenv("IWARP_TRACE_PCAP"), 0);
    /* a bound that is not a size, a file that cannot be created: create fails, one line each */
    bound_lines = other_lines = 0;
    ASSERT_EQ(setenv("IWARP_PCAP_MAX", "64KB", 1), 0);
    ASSERT_EQ(iwarp_ctx_create(&a, &ctx), IWARP_ERR_INVAL);
    ASSERT_EQ(other_lines, 1);
    ASSERT_EQ(unsetenv("IWARP_PCAP_MAX"), 0);
    ASSERT_EQ(setenv("IWARP_PCAP", "/nonexistent-dir/x.pcap", 1), 0);
    ASSERT_EQ(iwarp_ctx_create(&a, &ctx), IWARP_ERR_PCAP);
    ASSERT_EQ(other_lines, 2);
    /* an empty value is no trace */
    ASSERT_EQ(setenv("IWARP_PCAP", "", 1), 0);
    ASSERT_EQ(iwarp_ctx_create(&a, &ctx), 0);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
    ASSERT_EQ(unsetenv("IWARP_PCAP"), 0);
    ASSERT_EQ(bound_lines, 0);
    unlink(path);
}

TEST(writer_budget_refuses_a_record_that_does_not_fit)
{
    char path[128];
    tmp_path(path, sizeof path, "budget");
    struct iwarp_pcap_writer *w = NULL;
    ASSERT_EQ(iwarp_pcap_writer_open(&w, path, NULL, 0), 0);
    struct iwarp_pcap_budget bud = {.max = 24u + 16u + 60u + 16u + 59u, .used = 24u};
    iwarp_pcap_writer_set_budget(w, &bud);
    uint8_t frame[60] = {0};
    ASSERT_EQ(iwarp_pcap_writer_frame(w, frame, 60), 0);
    ASSERT_EQ_U(bud.used, 24u + 16u + 60u);
    ASSERT_EQ(iwarp_pcap_writer_frame(w, frame, 60), IWARP_ERR_TRACE_BOUND); /* one short */
    ASSERT_EQ_U(bud.used, 24u + 16u + 60u);
    ASSERT_EQ(iwarp_pcap_writer_frame(w, frame, 59), 0); /* exactly fits */
    ASSERT_EQ_U(bud.used, bud.max);
    ASSERT_EQ(iwarp_pcap_writer_frame(w, frame, 0), IWARP_ERR_TRACE_BOUND);
    ASSERT_EQ(iwarp_pcap_writer_close(w), 0);
    ASSERT_EQ(file_size(path), (off_t)bud.max); /* whole records only */
    unlink(path);
}

TEST(sizes_parse)
{
    uint64_t v = 0;
    ASSERT_EQ(iwarp_trace_size_parse("1", &v), 0);
    ASSERT_EQ_U(v, 1);
    ASSERT_EQ(iwarp_trace_size_parse("4K", &v), 0);
    ASSERT_EQ_U(v, 4096);
    ASSERT_EQ(iwarp_trace_size_parse("3m", &v), 0);
    ASSERT_EQ_U(v, 3u << 20);
    ASSERT_EQ(iwarp_trace_size_parse("2G", &v), 0);
    ASSERT_EQ_U(v, UINT64_C(2) << 30);
    ASSERT_EQ(iwarp_trace_size_parse("18446744073709551615", &v), 0);
    ASSERT_EQ_U(v, UINT64_MAX);
    ASSERT_EQ(iwarp_trace_size_parse("17179869183G", &v), 0);
    ASSERT_EQ_U(v, UINT64_C(17179869183) << 30);
    const char *bad[] = {
        "", "0", "0K", "K", "12X", "1KB", " 1", "-1", "1 ", "18446744073709551616", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ASSERT_EQ(iwarp_trace_size_parse(bad[i], &v), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_trace_size_parse(NULL, &v), IWARP_ERR_INVAL);
}
