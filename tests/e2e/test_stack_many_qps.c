/* SPDX-License-Identifier: BSD-2-Clause */
/* Many connections at once over 127.0.0.1: QP pairs connected through the CM, each pair moving
 * a Send, an RDMA Write and an RDMA Read with its own patterns, all posted before any
 * completion is polled; every octet checked; graceful disconnect of all; teardown with nothing
 * left (LSan checks the process at exit). One code path, three transports:
 *  - 1,000 pairs over MPA/TCP (1,000 sockets);
 *  - 64 pairs over DDP over SCTP (RFC 5043) as DDP streams of shared associations: 16 SCTP
 *    streams per association, so 4 associations of 16 sessions each (§5.2: one DDP stream per
 *    SCTP stream);
 *  - 128 pairs over SCTP, each on its own association (sctp_own_association).
 * Over SCTP the client reaches the server through a UDP relay (sctp_relay.h) that reads the
 * SCTP packets and counts the associations and the streams each one carries: every client id
 * reports the same local UDP port (one endpoint per context carries all its associations), so
 * the wire is where sharing shows.
 *
 * Modes: the server side runs the progress thread (the default): it must answer every RDMA
 * Read and place Writes while nobody on that side calls in, which is what the thread is for.
 * The client side runs IWARP_PROGRESS_CALLER: the test thread moves its data only through
 * iwarp_poll_cq / iwarp_ctx_progress, so one test covers both modes under load and shows that
 * caller mode copes with 1,000 sockets in one epoll set. */
#define _GNU_SOURCE 1
#include <stdlib.h>
#include <sys/resource.h>

#include "sctp_relay.h"
#include "stack_pair.h"

#define SLICE    32768u /* per pair and side: Send | Write | Read areas */
#define SEND_AT  0u
#define WRITE_AT 4096u
#define READ_AT  20480u

enum { OP_SEND = 1, OP_WRITE = 2, OP_READ = 3 };

/* Distinct sizes per pair (several FPDUs for the larger ones; odd sizes for pad handling). */
static uint32_t send_len(uint32_t i)
{
    return 1u + (i * 37u) % 4095u;
}
static uint32_t write_len(uint32_t i)
{
    return 1u + (i * 131u) % 16383u;
}
static uint32_t read_len(uint32_t i)
{
    return 1u + (i * 97u) % 12287u;
}
static uint32_t seed_of(uint32_t i, int op)
{
    return i * 4u + (uint32_t)op;
}

static void raise_nofile(rlim_t want)
{
    struct rlimit rl;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur >= want)
        return;
    if (rl.rlim_max < want)
        harness_fail(__FILE__, __LINE__, "RLIMIT_NOFILE hard limit %llu < %llu",
                     (unsigned long long)rl.rlim_max, (unsigned long long)want);
    rl.rlim_cur = want;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static double secs_since(uint64_t t0)
{
    return (double)(sp_now_ms() - t0) / 1000.0;
}

/* One run: n_pairs over TCP, or over SCTP with sctp_streams per association (0: the default;
 * srv_streams: the server's when not 0) and each pair on its own association or not; over
 * SCTP the relay must see want_assoc associations carrying streams_each SCTP streams each. */
struct run {
    uint32_t n_pairs;
    bool sctp;
    uint16_t sctp_streams, srv_streams;
    bool own_association;
    uint32_t want_assoc, streams_each;
};

static void side_up(struct sp_side *s, const struct run *how, bool srv,
                    enum iwarp_progress_mode mode, int cqe)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    a.progress = mode;
    a.sctp_streams = srv && how->srv_streams ? how->srv_streams : how->sctp_streams;
    sp_side_init_attr(s, NULL, &a, cqe, false);
}

/* What the relay saw: the associations and their streams (RFC 5043 §5.2: each session on its
 * own SCTP stream), and nothing lost or repeated on a clean loopback. */
static void check_wire(struct sctp_relay *relay, const struct run *how)
{
    static struct sr_assoc as[SR_MAX_ASSOC];
    static struct sr_dir c2s;
    uint32_t inits, nassoc;
    sctp_relay_snapshot(relay, &inits, &nassoc, as, &c2s, NULL);
    if (inits != how->want_assoc || nassoc != how->want_assoc)
        harness_fail(__FILE__, __LINE__, "%u pairs: %u INITs, %u associations with data, want %u",
                     how->n_pairs, inits, nassoc, how->want_assoc);
    uint32_t sessions = 0;
    for (uint32_t k = 0; k < nassoc; k++) {
        if (as[k].nstreams != how->streams_each)
            harness_fail(__FILE__, __LINE__, "association %u (vtag %08x) used %u streams, want %u",
                         k, as[k].vtag, as[k].nstreams, how->streams_each);
        sessions += as[k].nstreams;
    }
    ASSERT_EQ(sessions, how->n_pairs);
    ASSERT_TRUE(c2s.data_chunks > 4u * how->n_pairs);
}

static void run_many(const struct run *how)
{
    const uint32_t n_pairs = how->n_pairs;
    /* two sockets per pair, a listener, eventfds and epoll sets, and room to spare */
    raise_nofile(2u * n_pairs + 256u);
    if (how->sctp)
        setenv("IWARP_SCTP_RTO_MS", "20,40,400", 1); /* a relay drop costs 40 ms, not 3 s */
    uint64_t t0 = sp_now_ms();

    struct sp_side srv, cli;
    side_up(&srv, how, true, IWARP_PROGRESS_THREAD, (int)(n_pairs + 64u));
    side_up(&cli, how, false, IWARP_PROGRESS_CALLER, (int)(3u * n_pairs + 64u));
    uint8_t *sbuf = calloc(n_pairs, SLICE);
    uint8_t *cbuf = calloc(n_pairs, SLICE);
    struct iwarp_mr **smr = calloc(n_pairs, sizeof *smr);
    struct iwarp_mr **cmr = calloc(n_pairs, sizeof *cmr);
    struct sp_pair *pairs = calloc(n_pairs, sizeof *pairs);
    struct iwarp_wc *wc = calloc(3u * n_pairs, sizeof *wc);
    uint8_t *seen = calloc(4u * n_pairs, 1);
    ASSERT_TRUE(sbuf && cbuf && smr && cmr && pairs && wc && seen);

    /* one MR per pair and side, so each pair has its own STags */
    for (uint32_t i = 0; i < n_pairs; i++) {
        uint8_t *s = sbuf + (size_t)i * SLICE, *c = cbuf + (size_t)i * SLICE;
        smr[i] = sp_reg(&srv, s, SLICE, 0);
        cmr[i] = sp_reg(&cli, c, SLICE, 0);
        pairs[i].srv.mine =
            (struct sp_advert){.rkey = smr[i]->rkey, .addr = (uintptr_t)s, .len = SLICE};
        pairs[i].cli.mine =
            (struct sp_advert){.rkey = cmr[i]->rkey, .addr = (uintptr_t)c, .len = SLICE};
        /* sources: the client's Send and Write data, the server's Read source */
        sp_fill(c + SEND_AT, send_len(i), seed_of(i, OP_SEND));
        sp_fill(c + WRITE_AT, write_len(i), seed_of(i, OP_WRITE));
        sp_fill(s + READ_AT, read_len(i), seed_of(i, OP_READ));
    }

    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.responder_resources = 4,
                  .initiator_depth = 4,
                  .crc = !how->sctp, /* MPA's (RFC 5044 §4.4); SCTP has its own CRC32c */
                  .sctp_own_association = how->own_association},
        .ps = how->sctp ? IWARP_PS_SCTP : IWARP_PS_TCP,
    };
    static struct sctp_relay relay;
    if (how->sctp) {
        sctp_relay_start(&relay, sp_listen_ps(&srv, IWARP_PS_SCTP));
        cfg.dst = &relay.front_addr;
    }
    sp_connect_pairs(&srv, &cli, pairs, n_pairs, &cfg);
    double t_connect = secs_since(t0);
    for (uint32_t i = 0; i < n_pairs && how->sctp; i++) {
        /* one client endpoint (UDP socket) carries every association of the context */
        const struct sockaddr_in *l = (const struct sockaddr_in *)&pairs[i].cli.id->local_addr;
        const struct sockaddr_in *l0 = (const struct sockaddr_in *)&pairs[0].cli.id->local_addr;
        ASSERT_EQ(pairs[i].cli.id->ps, IWARP_PS_SCTP);
        ASSERT_EQ(l->sin_port, l0->sin_port);
        ASSERT_MEM_EQ(&pairs[i].cli.id->peer_addr, &relay.front_addr, sizeof relay.front_addr);
    }
    for (uint32_t i = 0; i < n_pairs; i++) {
        /* the advertisements crossed in the MPA private data, to the right pair */
        ASSERT_EQ(pairs[i].cli.peer.index, i);
        ASSERT_EQ(pairs[i].cli.peer.rkey, smr[i]->rkey);
        ASSERT_EQ(pairs[i].srv.peer.rkey, cmr[i]->rkey);
        struct iwarp_qp_attr qa;
        ASSERT_EQ(iwarp_query_qp(pairs[i].cli.qp, &qa), 0);
        ASSERT_EQ(qa.qp_state, IWARP_QPS_RTS);
    }

    /* everything posted before anything is polled */
    uint64_t t1 = sp_now_ms();
    for (uint32_t i = 0; i < n_pairs; i++) {
        uint8_t *s = sbuf + (size_t)i * SLICE;
        ASSERT_EQ(
            sp_post_recv(pairs[i].srv.qp, seed_of(i, OP_SEND), s + SEND_AT, 4096, smr[i]->lkey), 0);
    }
    for (uint32_t i = 0; i < n_pairs; i++) {
        uint8_t *c = cbuf + (size_t)i * SLICE;
        const struct sp_advert *r = &pairs[i].cli.peer;
        struct iwarp_qp *qp = pairs[i].cli.qp;
        ASSERT_EQ(sp_post(qp, seed_of(i, OP_SEND), IWARP_WR_SEND, 0, c + SEND_AT, send_len(i),
                          cmr[i]->lkey, 0, 0),
                  0);
        ASSERT_EQ(sp_post(qp, seed_of(i, OP_WRITE), IWARP_WR_RDMA_WRITE, 0, c + WRITE_AT,
                          write_len(i), cmr[i]->lkey, r->addr + WRITE_AT, r->rkey),
                  0);
        ASSERT_EQ(sp_post(qp, seed_of(i, OP_READ), IWARP_WR_RDMA_READ, 0, c + READ_AT, read_len(i),
                          cmr[i]->lkey, r->addr + READ_AT, r->rkey),
                  0);
    }

    /* client: 3 completions per pair, each exactly once, in posting order per QP */
    sp_poll_n(&cli, &srv, wc, 3u * n_pairs);
    uint32_t *next_op = calloc(n_pairs, sizeof *next_op);
    ASSERT_TRUE(next_op != NULL);
    for (uint32_t k = 0; k < 3u * n_pairs; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        uint32_t i = (uint32_t)(wc[k].wr_id / 4u);
        int op = (int)(wc[k].wr_id % 4u);
        ASSERT_TRUE(i < n_pairs && op >= OP_SEND && op <= OP_READ);
        ASSERT_EQ(seen[wc[k].wr_id]++, 0);
        ASSERT_EQ(wc[k].qp_num, pairs[i].cli.qp->qp_num);
        ASSERT_EQ(op, (int)++next_op[i]); /* Send, Write, Read: posting order */
        static const enum iwarp_wc_opcode want[] = {0, IWARP_WC_SEND, IWARP_WC_RDMA_WRITE,
                                                    IWARP_WC_RDMA_READ};
        ASSERT_EQ(wc[k].opcode, want[op]);
        uint32_t len = op == OP_SEND ? send_len(i) : op == OP_WRITE ? write_len(i) : read_len(i);
        ASSERT_EQ(wc[k].byte_len, len);
    }
    free(next_op);
    /* server: one receive per pair */
    sp_poll_n(&srv, &cli, wc, n_pairs);
    for (uint32_t k = 0; k < n_pairs; k++) {
        ASSERT_EQ(wc[k].status, IWARP_WC_SUCCESS);
        ASSERT_EQ(wc[k].opcode, IWARP_WC_RECV);
        uint32_t i = (uint32_t)(wc[k].wr_id / 4u);
        ASSERT_TRUE(i < n_pairs && wc[k].wr_id % 4u == OP_SEND);
        ASSERT_EQ(seen[wc[k].wr_id]++, 1);
        ASSERT_EQ(wc[k].qp_num, pairs[i].srv.qp->qp_num);
        ASSERT_EQ(wc[k].byte_len, send_len(i));
    }
    sp_expect_no_wc(&cli, &srv);
    sp_expect_no_wc(&srv, &cli);
    double t_data = secs_since(t1);
    if (how->sctp)
        check_wire(&relay, how);

    /* every octet: the Send and the Write landed on the server, the Read on the client, and
     * nothing was written past any of them */
    for (uint32_t i = 0; i < n_pairs; i++) {
        const uint8_t *s = sbuf + (size_t)i * SLICE, *c = cbuf + (size_t)i * SLICE;
        SP_ASSERT_PATTERN(s + SEND_AT, send_len(i), seed_of(i, OP_SEND));
        SP_ASSERT_PATTERN(s + WRITE_AT, write_len(i), seed_of(i, OP_WRITE));
        SP_ASSERT_PATTERN(c + READ_AT, read_len(i), seed_of(i, OP_READ));
        ASSERT_EQ(s[SEND_AT + send_len(i)], 0);
        ASSERT_EQ(s[WRITE_AT + write_len(i)], 0);
        ASSERT_EQ(c[READ_AT + read_len(i)], 0);
    }

    uint64_t t2 = sp_now_ms();
    sp_disconnect_pairs(&srv, &cli, pairs, n_pairs, true);
    for (uint32_t i = 0; i < n_pairs; i++) {
        struct iwarp_qp_attr qa;
        ASSERT_EQ(iwarp_query_qp(pairs[i].srv.qp, &qa), 0);
        ASSERT_EQ(qa.qp_state, IWARP_QPS_ERR);
    }
    /* a graceful close flushes nothing that was not posted */
    sp_expect_no_wc(&cli, &srv);
    sp_expect_no_wc(&srv, &cli);
    sp_destroy_pairs(pairs, n_pairs);
    for (uint32_t i = 0; i < n_pairs; i++) {
        ASSERT_EQ(iwarp_dereg_mr(smr[i]), 0);
        ASSERT_EQ(iwarp_dereg_mr(cmr[i]), 0);
    }
    sp_side_fini(&cli);
    sp_side_fini(&srv);
    if (how->sctp)
        sctp_relay_stop(&relay);
    double t_down = secs_since(t2);
    fprintf(stderr,
            "  %u pairs%s: connect %.2fs, data %.2fs, disconnect+teardown %.2fs, total %.2fs\n",
            n_pairs, how->sctp ? " (SCTP)" : "", t_connect, t_data, t_down, secs_since(t0));
    free(seen);
    free(wc);
    free(pairs);
    free(cmr);
    free(smr);
    free(cbuf);
    free(sbuf);
}

TEST(thousand_qps_move_verified_data_at_once)
{
    run_many(&(struct run){.n_pairs = 1000});
}

#ifdef IWARP_HAVE_SCTP
/* RFC 5043 §5.2: 64 DDP streams on 4 associations of 16 SCTP streams each. */
TEST(sixty_four_qps_as_streams_of_four_shared_sctp_associations)
{
    run_many(&(struct run){
        .n_pairs = 64, .sctp = true, .sctp_streams = 16, .want_assoc = 4, .streams_each = 16});
}

/* sctp_own_association: 128 associations, one DDP stream each. */
TEST(hundred_twenty_eight_qps_each_on_its_own_sctp_association)
{
    run_many(&(struct run){.n_pairs = 128,
                           .sctp = true,
                           .own_association = true,
                           .want_assoc = 128,
                           .streams_each = 1});
}

/* The server allows fewer streams than the client asks for: SCTP settles on the smaller
 * count both ways (RFC 4960 §5.1.1; RFC 5043 §8 wants them equal), and connections beyond it
 * go to further associations: 32 pairs, 8 streams each, 4 associations. */
TEST(qps_beyond_the_streams_the_server_allows_open_more_associations)
{
    run_many(&(struct run){.n_pairs = 32,
                           .sctp = true,
                           .sctp_streams = 16,
                           .srv_streams = 8,
                           .want_assoc = 4,
                           .streams_each = 8});
}
#endif
