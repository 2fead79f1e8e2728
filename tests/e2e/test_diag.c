/* SPDX-License-Identifier: BSD-2-Clause */
/* Diagnostics over real loopback TCP (docs/environment.md): the counters of
 * iwarp_query_qp_stats / iwarp_query_ctx_stats after known exchanges (Sends, a Terminate by
 * cause, a CRC error from a raw peer, flushes on disconnect, TCP_INFO retransmissions);
 * IWARP_LOG=level[:file] (off by default, a file with the connection and Terminate lines, a bad
 * value reported once and ignored, the application's hook winning); IWARP_STATS=1 at
 * iwarp_ctx_destroy. Each case sets the environment before it creates its contexts, which is
 * when the library reads it. */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "duo.h"
#include "raw_peer.h"
#include "stack_pair.h"
#include "llp/llp_tcp_info.h"
#include "util/crc32c.h"

/* ---- capturing what the library writes ----------------------------------------------------- */

static char tmp_path[64];

/* A fresh empty file; its path in tmp_path. */
static void tmp_file(void)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/iwarp_diag_XXXXXX");
    int fd = mkstemp(tmp_path);
    ASSERT_TRUE(fd >= 0);
    close(fd);
}

/* All of tmp_path (NUL-terminated, at most cap - 1 octets); the file is removed. */
static size_t tmp_take(char *buf, size_t cap)
{
    int fd = open(tmp_path, O_RDONLY);
    ASSERT_TRUE(fd >= 0);
    ssize_t n = read(fd, buf, cap - 1);
    ASSERT_TRUE(n >= 0);
    buf[n] = '\0';
    close(fd);
    unlink(tmp_path);
    return (size_t)n;
}

/* Redirect stderr (fd 2) into a fresh tmp_file until stderr_end. */
static int stderr_begin(void)
{
    tmp_file();
    fflush(stderr);
    int saved = dup(2);
    int fd = open(tmp_path, O_WRONLY | O_APPEND);
    ASSERT_TRUE(saved >= 0 && fd >= 0);
    ASSERT_EQ(dup2(fd, 2), 2);
    close(fd);
    return saved;
}

static size_t stderr_end(int saved, char *buf, size_t cap)
{
    fflush(stderr);
    ASSERT_EQ(dup2(saved, 2), 2);
    close(saved);
    return tmp_take(buf, cap);
}

static unsigned count_lines(const char *s, const char *needle)
{
    unsigned n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static struct iwarp_stats qp_stats(struct iwarp_qp *qp)
{
    struct iwarp_stats s;
    memset(&s, 0xA5, sizeof s); /* the call fills every field */
    ASSERT_EQ(iwarp_query_qp_stats(qp, &s), 0);
    ASSERT_EQ_U(s.comp_mask, 0);
    ASSERT_EQ_U(s.qps, 1);
    return s;
}

static struct iwarp_stats ctx_stats(struct iwarp_ctx *ctx)
{
    struct iwarp_stats s;
    memset(&s, 0xA5, sizeof s);
    ASSERT_EQ(iwarp_query_ctx_stats(ctx, &s), 0);
    ASSERT_EQ_U(s.comp_mask, 0);
    return s;
}

static uint64_t terms(const uint64_t *t)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < IWARP_TERM_CLASS_NUM; i++)
        n += t[i];
    return n;
}

/* ---- counters ------------------------------------------------------------------------------ */

#define N_SENDS 7u
#define S_BYTES 1000u /* one FPDU each: far below the MULPDU of loopback */

TEST(counters_match_n_sends_of_s_bytes_each_way_and_survive_the_qp)
{
    unsetenv("IWARP_LOG");
    unsetenv("IWARP_STATS");
    struct sp_rig r;
    sp_side_init(&r.srv, IWARP_PROGRESS_THREAD, 64);
    sp_side_init(&r.cli, IWARP_PROGRESS_THREAD, 64);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 16, .max_recv_wr = 16},
                         .param = {.responder_resources = 4, .initiator_depth = 4}};
    sp_rig_connect(&r, 65536, &cfg);
    /* sp_first_send: one zero-length Send from the client, nothing else yet */
    struct iwarp_stats c0 = qp_stats(r.pair.cli.qp), s0 = qp_stats(r.pair.srv.qp);
    ASSERT_EQ_U(c0.tx_segments, 1);
    ASSERT_EQ_U(c0.tx_bytes, 0);
    ASSERT_EQ_U(c0.rx_segments, 0);
    ASSERT_EQ_U(s0.rx_segments, 1);
    ASSERT_EQ_U(s0.rx_bytes, 0);
    ASSERT_EQ_U(s0.tx_segments, 0);

    for (uint32_t i = 0; i < N_SENDS; i++) {
        ASSERT_EQ(sp_post_recv(r.pair.srv.qp, 100 + i, r.sbuf + i * S_BYTES, S_BYTES, r.smr->lkey),
                  0);
        ASSERT_EQ(sp_post(r.pair.cli.qp, i, IWARP_WR_SEND, IWARP_SEND_SIGNALED,
                          r.cbuf + i * S_BYTES, S_BYTES, r.cmr->lkey, 0, 0),
                  0);
    }
    for (uint32_t i = 0; i < N_SENDS; i++) {
        (void)sp_poll_ok(&r.cli, &r.srv, IWARP_WC_SEND);
        (void)sp_poll_ok(&r.srv, &r.cli, IWARP_WC_RECV);
    }
    /* and N_SENDS back, from the server */
    for (uint32_t i = 0; i < N_SENDS; i++) {
        ASSERT_EQ(sp_post_recv(r.pair.cli.qp, 200 + i, r.cbuf + i * S_BYTES, S_BYTES, r.cmr->lkey),
                  0);
        ASSERT_EQ(sp_post(r.pair.srv.qp, i, IWARP_WR_SEND, IWARP_SEND_SIGNALED,
                          r.sbuf + i * S_BYTES, S_BYTES, r.smr->lkey, 0, 0),
                  0);
    }
    for (uint32_t i = 0; i < N_SENDS; i++) {
        (void)sp_poll_ok(&r.srv, &r.cli, IWARP_WC_SEND);
        (void)sp_poll_ok(&r.cli, &r.srv, IWARP_WC_RECV);
    }
    struct iwarp_stats c = qp_stats(r.pair.cli.qp), s = qp_stats(r.pair.srv.qp);
    /* an untagged Send of S octets is one DDP segment of S payload octets (RFC 5041 §5.1) */
    ASSERT_EQ_U(c.tx_segments, 1 + N_SENDS);
    ASSERT_EQ_U(c.tx_bytes, N_SENDS * S_BYTES);
    ASSERT_EQ_U(c.rx_segments, N_SENDS);
    ASSERT_EQ_U(c.rx_bytes, N_SENDS * S_BYTES);
    ASSERT_EQ_U(s.rx_segments, 1 + N_SENDS);
    ASSERT_EQ_U(s.rx_bytes, N_SENDS * S_BYTES);
    ASSERT_EQ_U(s.tx_segments, N_SENDS);
    ASSERT_EQ_U(s.tx_bytes, N_SENDS * S_BYTES);
    ASSERT_EQ_U(c.crc_errors + s.crc_errors, 0);
    ASSERT_EQ_U(c.flushed_wrs + s.flushed_wrs, 0);
    ASSERT_EQ_U(terms(c.term_sent) + terms(c.term_received), 0);
    ASSERT_EQ_U(terms(s.term_sent) + terms(s.term_received), 0);
    /* TCP_INFO was read (loopback rarely retransmits: at most what was sent) */
    ASSERT_TRUE(c.retrans_segments <= c.tx_segments + 16);
    /* the client's context holds this one QP: the same counters */
    struct iwarp_stats cc = ctx_stats(r.cli.ctx);
    ASSERT_EQ_U(cc.qps, 1);
    ASSERT_EQ_U(cc.tx_segments, c.tx_segments);
    ASSERT_EQ_U(cc.rx_bytes, c.rx_bytes);

    /* the server posts receives, then the client disconnects: they are flushed */
    for (uint32_t i = 0; i < 3; i++)
        ASSERT_EQ(sp_post_recv(r.pair.srv.qp, 300 + i, r.sbuf, 64, r.smr->lkey), 0);
    sp_disconnect_pairs(&r.srv, &r.cli, &r.pair, 1, true);
    struct iwarp_wc wc[3];
    sp_poll_n(&r.srv, &r.cli, wc, 3);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(wc[i].status, IWARP_WC_WR_FLUSH_ERR);
    s = qp_stats(r.pair.srv.qp);
    ASSERT_EQ_U(s.flushed_wrs, 3);
    ASSERT_EQ_U(qp_stats(r.pair.cli.qp).flushed_wrs, 0);
    /* the connection is closed: its last TCP_INFO reading stays */
    struct iwarp_stats c_closed = qp_stats(r.pair.cli.qp);
    ASSERT_TRUE(c_closed.retrans_segments >= c.retrans_segments);

    /* destroyed QPs stay in their context's counters */
    sp_destroy_pairs(&r.pair, 1);
    struct iwarp_stats sc = ctx_stats(r.srv.ctx);
    ASSERT_EQ_U(sc.qps, 1);
    ASSERT_EQ_U(sc.rx_segments, 1 + N_SENDS);
    ASSERT_EQ_U(sc.tx_bytes, N_SENDS * S_BYTES);
    ASSERT_EQ_U(sc.flushed_wrs, 3);
    ASSERT_EQ_U(ctx_stats(r.cli.ctx).tx_segments, 1 + N_SENDS);
    sp_rig_release(&r);
}

TEST(query_stats_rejects_null_and_short_structs)
{
    struct iwarp_ctx *ctx;
    ASSERT_EQ(iwarp_ctx_create(NULL, &ctx), 0);
    struct iwarp_stats s;
    ASSERT_EQ(iwarp_query_ctx_stats(NULL, &s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_query_ctx_stats_sized(ctx, NULL, sizeof s), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_query_ctx_stats_sized(ctx, &s, sizeof s - 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_query_qp_stats(NULL, &s), IWARP_ERR_INVAL);
    s = ctx_stats(ctx);
    ASSERT_EQ_U(s.qps, 0);
    ASSERT_EQ_U(s.tx_segments + s.rx_segments, 0);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
}

/* The TCP_INFO reading itself: a connected TCP socket answers (a fresh loopback connection
 * has retransmitted nothing), anything else is IWARP_ERR_IO with the outputs untouched. */
TEST(tcp_info_retransmissions_read_from_a_tcp_socket)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    sp_loopback4(&a, 0);
    ASSERT_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(l, 1), 0);
    socklen_t alen = sizeof a;
    ASSERT_EQ(getsockname(l, (struct sockaddr *)&a, &alen), 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    uint64_t bytes = 77, segs = 77;
    ASSERT_EQ(iwarp_llp_tcp_info_retrans(c, &bytes, &segs), 0);
    ASSERT_EQ_U(bytes, 0);
    ASSERT_EQ_U(segs, 0);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    bytes = segs = 77;
    ASSERT_EQ(iwarp_llp_tcp_info_retrans(u, &bytes, &segs), IWARP_ERR_IO);
    ASSERT_EQ(iwarp_llp_tcp_info_retrans(-1, &bytes, &segs), IWARP_ERR_IO);
    ASSERT_EQ_U(bytes, 77);
    ASSERT_EQ_U(segs, 77);
    close(u);
    close(c);
    close(l);
}

/* Two libiwarp peers (duo_up); the client Writes to a bad rkey: the server sends a Terminate, DDP
 * Tagged Buffer / Invalid STag (RFC 5041 §7.2, 1/1/0x00), the client receives it. */
static void bad_rkey_write(struct duo *d)
{
    duo_up(d);
    ASSERT_EQ(sp_post_recv(d->p.srv.qp, 5, d->sbuf, 4096, d->smr->lkey), 0);
    ASSERT_EQ(sp_post(d->p.cli.qp, 1, IWARP_WR_RDMA_WRITE, 0, d->cbuf, 3000, d->cmr->lkey,
                      d->p.cli.peer.addr, d->p.cli.peer.rkey ^ 0x80u),
              0);
    struct iwarp_async_event ae = sp_async(&d->srv);
    ASSERT_EQ_U(ae.term_cause, SP_CAUSE(1, 1, 0x00));
    ae = sp_async(&d->cli);
    ASSERT_TRUE(ae.term_from_peer);
    struct iwarp_wc wc;
    sp_poll_n(&d->srv, &d->cli, &wc, 1);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    sp_poll_n(&d->cli, &d->srv, &wc, 1);
    sp_expect_ack(&d->srv, &d->cli, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(&d->cli, &d->srv, IWARP_CM_EVENT_DISCONNECTED);
}

TEST(a_terminate_is_counted_by_cause_on_both_sides)
{
    unsetenv("IWARP_LOG");
    struct duo d;
    bad_rkey_write(&d);
    struct iwarp_stats s = qp_stats(d.p.srv.qp), c = qp_stats(d.p.cli.qp);
    ASSERT_EQ_U(s.term_sent[IWARP_TERM_CLASS_DDP_TAGGED], 1);
    ASSERT_EQ_U(terms(s.term_sent), 1);
    ASSERT_EQ_U(terms(s.term_received), 0);
    ASSERT_EQ_U(c.term_received[IWARP_TERM_CLASS_DDP_TAGGED], 1);
    ASSERT_EQ_U(terms(c.term_received), 1);
    ASSERT_EQ_U(terms(c.term_sent), 0);
    ASSERT_EQ_U(s.flushed_wrs, 1); /* the server's receive */
    /* the Terminate is a DDP segment too: the server sent it, the client received it */
    ASSERT_EQ_U(s.tx_segments, 1);
    ASSERT_EQ_U(c.rx_segments, 1);
    duo_free(&d);
}

/* A raw peer's FPDU with a wrong CRC: counted, and answered with an LLP Terminate. */
TEST(a_crc_error_is_counted)
{
    unsetenv("IWARP_LOG");
    struct sp_side srv;
    sp_side_init(&srv, IWARP_PROGRESS_THREAD, 16);
    uint8_t *buf = calloc(1, 4096);
    struct iwarp_mr *mr = sp_reg(&srv, buf, 4096, 0);
    struct sp_end e;
    int fd = raw_peer_up(&srv, &e, buf, mr);
    /* an FPDU of ULPDU_Length 58 (64 octets with the CRC) whose CRC is wrong */
    uint8_t junk[64];
    memset(junk, 0x5A, sizeof junk);
    junk[0] = 0x00;
    junk[1] = 0x3A;
    uint32_t crc = iwarp_crc32c(junk, 60) ^ 1u;
    memcpy(junk + 60, &crc, 4);
    ASSERT_EQ(send(fd, junk, sizeof junk, 0), (ssize_t)sizeof junk);
    struct iwarp_async_event ae = sp_async(&srv);
    ASSERT_EQ_U(ae.term_cause, SP_CAUSE(2, 0, 0x02));
    struct iwarp_stats s = qp_stats(e.qp);
    ASSERT_EQ_U(s.crc_errors, 1);
    ASSERT_EQ_U(s.term_sent[IWARP_TERM_CLASS_LLP_MPA], 1);
    ASSERT_EQ_U(s.rx_segments, 0); /* the damaged FPDU never reached DDP */
    sp_expect_ack(&srv, NULL, IWARP_CM_EVENT_DISCONNECTED);
    struct iwarp_wc wc;
    sp_poll_n(&srv, NULL, &wc, 1);
    close(fd);
    sp_end_destroy(&e);
    ASSERT_EQ_U(ctx_stats(srv.ctx).crc_errors, 1);
    ASSERT_EQ(iwarp_dereg_mr(mr), 0);
    sp_side_fini(&srv);
    free(buf);
}

/* ---- IWARP_LOG ------------------------------------------------------------------------------ */

TEST(without_iwarp_log_the_library_writes_nothing)
{
    unsetenv("IWARP_LOG");
    unsetenv("IWARP_STATS");
    char out[4096];
    int saved = stderr_begin();
    struct duo d;
    bad_rkey_write(&d);
    duo_free(&d);
    setenv("IWARP_LOG", "off", 1);
    bad_rkey_write(&d);
    duo_free(&d);
    unsetenv("IWARP_LOG");
    size_t n = stderr_end(saved, out, sizeof out);
    if (n)
        harness_fail(__FILE__, __LINE__, "stderr got: %s", out);
}

TEST(iwarp_log_to_a_file_has_the_connection_and_the_terminate_with_its_cause)
{
    unsetenv("IWARP_STATS");
    tmp_file();
    char path[64], var[96];
    memcpy(path, tmp_path, sizeof path);
    snprintf(var, sizeof var, "info:%s", path);
    setenv("IWARP_LOG", var, 1);
    int saved = stderr_begin();
    struct duo d;
    bad_rkey_write(&d);
    duo_free(&d);
    unsetenv("IWARP_LOG");
    char err[4096], out[16384];
    ASSERT_EQ(stderr_end(saved, err, sizeof err), 0); /* everything went to the file */
    memcpy(tmp_path, path, sizeof path);
    tmp_take(out, sizeof out);
    /* both contexts' lines: timestamp, process, context, level */
    ASSERT_TRUE(strstr(out, "Z libiwarp[") != NULL);
    ASSERT_TRUE(strstr(out, " ctx ") != NULL);
    ASSERT_EQ(count_lines(out, "info: cm: connection established"), 2);
    ASSERT_TRUE(strstr(out, "peer 127.0.0.1:") != NULL);
    /* the Terminate, sent by one side and received by the other, with its RFC cause */
    ASSERT_EQ(count_lines(out, "Terminate sent: DDP/Tagged/Invalid STag (RFC 5041 §7.2; "
                               "1/1/0x00)"),
              1);
    ASSERT_EQ(count_lines(out, "Terminate received: DDP/Tagged/Invalid STag (RFC 5041 "
                               "§7.2; 1/1/0x00)"),
              1);
    ASSERT_EQ(count_lines(out, "cm: connection disconnected"), 2);
    ASSERT_EQ(count_lines(out, "debug:"), 0); /* info is the level */
}

TEST(iwarp_log_without_a_file_writes_to_stderr_and_takes_a_number)
{
    unsetenv("IWARP_STATS");
    setenv("IWARP_LOG", "2", 1); /* info */
    char out[16384];
    int saved = stderr_begin();
    struct duo d;
    bad_rkey_write(&d);
    duo_free(&d);
    unsetenv("IWARP_LOG");
    stderr_end(saved, out, sizeof out);
    ASSERT_EQ(count_lines(out, "info: cm: connection established QP"), 2);
    ASSERT_EQ(count_lines(out, "info: QP "), 2); /* the Terminate, sent and received */
}

TEST(a_bad_iwarp_log_is_reported_once_and_ignored)
{
    unsetenv("IWARP_STATS");
    char out[4096];
    int saved = stderr_begin();
    setenv("IWARP_LOG", "loud", 1);
    struct duo d;
    bad_rkey_write(&d); /* two contexts: one report */
    duo_free(&d);
    setenv("IWARP_LOG", "info:/nonexistent-dir/iwarp.log", 1);
    bad_rkey_write(&d);
    duo_free(&d);
    unsetenv("IWARP_LOG");
    stderr_end(saved, out, sizeof out);
    ASSERT_EQ(count_lines(out, "\n"), 2);
    ASSERT_EQ(count_lines(out, "libiwarp: IWARP_LOG=loud is not level[:file]"), 1);
    ASSERT_EQ(count_lines(out, "libiwarp: IWARP_LOG: cannot open /nonexistent-dir/iwarp.log"), 1);
}

static unsigned hook_lines;
static void count_hook(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    (void)msg;
    hook_lines++;
}

TEST(the_applications_log_hook_wins_over_iwarp_log)
{
    tmp_file();
    char path[64], var[96];
    memcpy(path, tmp_path, sizeof path);
    snprintf(var, sizeof var, "debug:%s", path);
    setenv("IWARP_LOG", var, 1);
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.log = count_hook;
    a.log_level = IWARP_LOG_INFO;
    struct sp_side srv, cli;
    sp_side_init_attr(&srv, NULL, &a, 16, false);
    sp_side_init_attr(&cli, NULL, &a, 16, false);
    struct sp_pair p;
    memset(&p, 0, sizeof p);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 4, .max_recv_wr = 4}};
    sp_connect_pairs(&srv, &cli, &p, 1, &cfg);
    sp_disconnect_pairs(&srv, &cli, &p, 1, true);
    sp_destroy_pairs(&p, 1);
    sp_side_fini(&cli);
    sp_side_fini(&srv);
    unsetenv("IWARP_LOG");
    char out[1024];
    memcpy(tmp_path, path, sizeof path);
    ASSERT_EQ(tmp_take(out, sizeof out), 0);
    ASSERT_TRUE(hook_lines >= 4); /* established and disconnected, on each side */
}

/* ---- IWARP_STATS ----------------------------------------------------------------------------- */

TEST(iwarp_stats_prints_the_counters_when_the_context_is_destroyed)
{
    unsetenv("IWARP_LOG");
    setenv("IWARP_STATS", "1", 1);
    char out[8192];
    int saved = stderr_begin();
    struct duo d;
    bad_rkey_write(&d);
    duo_free(&d);
    unsetenv("IWARP_STATS");
    stderr_end(saved, out, sizeof out);
    /* one block per context: the server sent the Terminate, the client received it */
    ASSERT_EQ(count_lines(out, "stats: qps 1; tx "), 2);
    ASSERT_EQ(count_lines(out, "stats: Terminates sent: ddp-tagged 1\n"), 1);
    ASSERT_EQ(count_lines(out, "stats: Terminates received: ddp-tagged 1\n"), 1);
    ASSERT_EQ(count_lines(out, "flushed WRs 1;"), 1);
}
