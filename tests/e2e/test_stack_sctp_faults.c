/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP over SCTP (RFC 5043) end to end on a faulty path, through the public API only.
 *
 * Faults: IWARP_SCTP_FAULT (read when an SCTP endpoint opens) makes each endpoint drop,
 * duplicate and delay (reorder) its outgoing packets below usrsctp, seeded; IWARP_SCTP_RTO_MS
 * shortens SCTP's retransmission timers so that a loss costs tens of milliseconds. Each seed's
 * run moves a 4 MiB RDMA Write, a 4 MiB RDMA Read and 2,000 Sends of varying sizes, all posted
 * at once: every octet must arrive intact and every completion come in posting order (RFC 5040
 * §5.1 and §5.4: RDMAP completes WRs in the order they were posted, whatever the LLP did).
 * The client reaches the server through a UDP relay (sctp_relay.h) that shows the faults
 * really happened (repeated and late DATA on the wire) and fingerprints the run: where the
 * duplicates fall in each direction depends only on the seed's decisions (with no delay fault;
 * a delay depends on timing), so the same seed run twice gives the same fingerprint (up to
 * equal protocol packets the relay takes for duplicates).
 *
 * Loss: an association that dies takes every DDP stream on it down (RFC 5043 §11.3, what
 * llp_assoc does on loss): each posted WR of every QP sharing it completes (success, then
 * IWARP_WC_WR_FLUSH_ERR from the first one not done, in posting order), each QP reports
 * IWARP_EVENT_QP_FATAL and goes to ERR, each id gets DISCONNECTED, within a bounded time.
 * Two ways: the server process is killed (-9) in the middle of the transfer, and the path goes
 * silent one way (the relay drops everything the server sends), where the client gives up and
 * its ABORT takes the server's side down too; a second association between the same contexts,
 * not through the relay, lives on.
 */
#define _GNU_SOURCE 1
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sctp_relay.h"
#include "stack_pair.h"

#define RTO_MS    "20,40,400"
#define BIG       (4u << 20)
#define N_SENDS   2000u
#define SEND_MAX  4096u
#define SEND_AREA (N_SENDS * SEND_MAX)
#define LOSS_QPS  4u
#define LOSS_WR   16u        /* RDMA Writes per QP in the loss tests */
#define LOSS_LEN  (1u << 20) /* each */
#define LOSS_RECV 8u         /* receives per QP that nothing will fill */
#define LOSS_MS   20000u     /* the bound for the whole loss, from the fault to the last event */

static uint32_t send_len(uint32_t i)
{
    return 1u + (i * 7919u) % SEND_MAX;
}

static double secs_since(uint64_t t0)
{
    return (double)(sp_now_ms() - t0) / 1000.0;
}

static void fault_env(uint64_t seed, uint32_t drop, uint32_t dup, uint32_t delay, uint32_t ms,
                      uint32_t corrupt)
{
    char f[112];
    snprintf(f, sizeof f, "%llu,%u,%u,%u,%u,%u", (unsigned long long)seed, drop, dup, delay, ms,
             corrupt);
    ASSERT_EQ(setenv("IWARP_SCTP_FAULT", f, 1), 0);
    ASSERT_EQ(setenv("IWARP_SCTP_RTO_MS", RTO_MS, 1), 0);
}

/* ---- data on a faulty path ---------------------------------------------------------------- */

struct fault_run {
    uint64_t seed;
    uint32_t drop_ppm, dup_ppm, delay_ppm, delay_ms;
    uint32_t corrupt_ppm; /* one bit flipped after the checksum */
};

/* What a run leaves to compare: the duplicate positions each way. */
struct fingerprint {
    uint32_t n[2];
    uint64_t at[2][SR_DUP_LOG];
};

static void data_run(const struct fault_run *f, struct fingerprint *fp)
{
    uint64_t t0 = sp_now_ms();
    fault_env(f->seed, f->drop_ppm, f->dup_ppm, f->delay_ppm, f->delay_ms, f->corrupt_ppm);
    struct sp_side srv, cli;
    sp_side_init(&srv, IWARP_PROGRESS_THREAD, (int)N_SENDS + 64);
    sp_side_init(&cli, IWARP_PROGRESS_CALLER, (int)N_SENDS + 64);
    /* client: Write source | Read sink | Send sources; server: Write sink | Read source |
     * receive buffers, at the same offsets */
    size_t size = 2u * (size_t)BIG + SEND_AREA;
    uint8_t *cbuf = calloc(1, size), *sbuf = calloc(1, size);
    ASSERT_TRUE(cbuf && sbuf);
    uint32_t seed = (uint32_t)f->seed * 10000u;
    sp_fill(cbuf, BIG, seed + 1u);
    sp_fill(sbuf + BIG, BIG, seed + 2u);
    for (uint32_t i = 0; i < N_SENDS; i++)
        sp_fill(cbuf + 2u * (size_t)BIG + (size_t)i * SEND_MAX, send_len(i), seed + 3u + i);
    struct iwarp_mr *cmr = sp_reg(&cli, cbuf, size, 0), *smr = sp_reg(&srv, sbuf, size, 0);

    struct sp_pair pair = {0};
    pair.cli.mine = (struct sp_advert){.rkey = cmr->rkey, .addr = (uintptr_t)cbuf, .len = size};
    pair.srv.mine = (struct sp_advert){.rkey = smr->rkey, .addr = (uintptr_t)sbuf, .len = size};
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = N_SENDS + 8u,
                .max_recv_wr = N_SENDS,
                .max_send_sge = 1,
                .max_recv_sge = 1},
        .sq_sig_all = 1,
        .param = {.responder_resources = 4, .initiator_depth = 4},
        .ps = IWARP_PS_SCTP,
    };
    static struct sctp_relay relay;
    sctp_relay_start(&relay, sp_listen_ps(&srv, IWARP_PS_SCTP));
    cfg.dst = &relay.front_addr;
    sp_connect_pairs(&srv, &cli, &pair, 1, &cfg);
    struct iwarp_qp *qp = pair.cli.qp;
    const struct sp_advert *r = &pair.cli.peer;

    for (uint32_t i = 0; i < N_SENDS; i++)
        ASSERT_EQ(sp_post_recv(pair.srv.qp, 5000u + i,
                               sbuf + 2u * (size_t)BIG + (size_t)i * SEND_MAX, SEND_MAX, smr->lkey),
                  0);
    /* wr_id k is the k-th WR posted: the Write, half the Sends, the Read, the other half */
    uint64_t k = 0;
    ASSERT_EQ(sp_post(qp, k++, IWARP_WR_RDMA_WRITE, 0, cbuf, BIG, cmr->lkey, r->addr, r->rkey), 0);
    for (uint32_t i = 0; i < N_SENDS; i++) {
        if (i == N_SENDS / 2u)
            ASSERT_EQ(sp_post(qp, k++, IWARP_WR_RDMA_READ, 0, cbuf + BIG, BIG, cmr->lkey,
                              r->addr + BIG, r->rkey),
                      0);
        ASSERT_EQ(sp_post(qp, k++, IWARP_WR_SEND, 0, cbuf + 2u * (size_t)BIG + (size_t)i * SEND_MAX,
                          send_len(i), cmr->lkey, 0, 0),
                  0);
    }
    const uint64_t n_wr = k;
    static struct iwarp_wc wc[N_SENDS + 8u];
    sp_poll_n(&cli, &srv, wc, (uint32_t)n_wr);
    for (uint64_t j = 0; j < n_wr; j++) {
        if (wc[j].status != IWARP_WC_SUCCESS || wc[j].wr_id != j)
            harness_fail(__FILE__, __LINE__, "seed %llu: completion %llu is wr_id %llu (%s)",
                         (unsigned long long)f->seed, (unsigned long long)j,
                         (unsigned long long)wc[j].wr_id, iwarp_wc_status_str(wc[j].status));
        uint64_t read_at = N_SENDS / 2u + 1u;
        enum iwarp_wc_opcode op = j == 0         ? IWARP_WC_RDMA_WRITE
                                  : j == read_at ? IWARP_WC_RDMA_READ
                                                 : IWARP_WC_SEND;
        ASSERT_EQ(wc[j].opcode, op);
        uint32_t send_i = (uint32_t)(j - 1u - (j > read_at));
        ASSERT_EQ_U(wc[j].byte_len, op == IWARP_WC_SEND ? send_len(send_i) : BIG);
    }
    sp_poll_n(&srv, &cli, wc, N_SENDS);
    for (uint32_t i = 0; i < N_SENDS; i++) {
        ASSERT_EQ(wc[i].status, IWARP_WC_SUCCESS);
        ASSERT_EQ(wc[i].opcode, IWARP_WC_RECV);
        ASSERT_EQ_U(wc[i].wr_id, 5000u + i); /* in order (RFC 5040 §5.4) */
        ASSERT_EQ_U(wc[i].byte_len, send_len(i));
    }
    sp_expect_no_wc(&cli, &srv);
    sp_expect_no_wc(&srv, &cli);
    SP_ASSERT_PATTERN(sbuf, BIG, seed + 1u);
    SP_ASSERT_PATTERN(cbuf + BIG, BIG, seed + 2u);
    for (uint32_t i = 0; i < N_SENDS; i++) {
        const uint8_t *at = sbuf + 2u * (size_t)BIG + (size_t)i * SEND_MAX;
        SP_ASSERT_PATTERN(at, send_len(i), seed + 3u + i);
        if (send_len(i) < SEND_MAX)
            ASSERT_EQ(at[send_len(i)], 0); /* nothing past the message */
    }

    /* the faults happened: repeated DATA both ways (duplicates), TSNs filled in late (losses
     * retransmitted, delayed packets) */
    static struct sr_dir c2s, s2c;
    sctp_relay_snapshot(&relay, NULL, NULL, NULL, &c2s, &s2c);
    fprintf(stderr,
            "  seed %llu: c2s %llu pkts %llu dup %llu late %llu bad CRC, s2c %llu pkts %llu dup "
            "%llu late %llu bad CRC, %.2f s\n",
            (unsigned long long)f->seed, (unsigned long long)c2s.packets,
            (unsigned long long)c2s.dup_data, (unsigned long long)c2s.late_data,
            (unsigned long long)c2s.bad_crc, (unsigned long long)s2c.packets,
            (unsigned long long)s2c.dup_data, (unsigned long long)s2c.late_data,
            (unsigned long long)s2c.bad_crc, secs_since(t0));
    if (f->dup_ppm) {
        ASSERT_TRUE(c2s.dup_data > 0 && s2c.dup_data > 0);
        ASSERT_TRUE(c2s.ndup_at > 0 && s2c.ndup_at > 0);
    }
    if (f->drop_ppm || f->delay_ppm)
        ASSERT_TRUE(c2s.late_data + s2c.late_data > 0);
    if (f->corrupt_ppm)
        ASSERT_TRUE(c2s.bad_crc > 0 && s2c.bad_crc > 0);
    else
        ASSERT_TRUE(c2s.bad_crc == 0 && s2c.bad_crc == 0); /* every checksum we sent is right */
    fp->n[0] = c2s.ndup_at;
    fp->n[1] = s2c.ndup_at;
    memcpy(fp->at[0], c2s.dup_at, sizeof fp->at[0]);
    memcpy(fp->at[1], s2c.dup_at, sizeof fp->at[1]);

    sp_disconnect_pairs(&srv, &cli, &pair, 1, true);
    sp_destroy_pairs(&pair, 1);
    ASSERT_EQ(iwarp_dereg_mr(cmr), 0);
    ASSERT_EQ(iwarp_dereg_mr(smr), 0);
    sp_side_fini(&cli);
    sp_side_fini(&srv);
    sctp_relay_stop(&relay);
    free(cbuf);
    free(sbuf);
}

TEST(writes_reads_and_sends_arrive_intact_and_in_order_on_a_faulty_path)
{
    /* 2% loss, 1% duplication, 2% delayed by 5 ms, each endpoint its own decisions; the third
     * run also corrupts 1% (the receiver must discard them: its SCTP checksum is ours) */
    static const struct fault_run runs[] = {{1, 20000, 10000, 20000, 5, 0},
                                            {2, 20000, 10000, 20000, 5, 0},
                                            {3, 20000, 10000, 20000, 5, 10000}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct fingerprint fp;
        data_run(&runs[i], &fp);
    }
}

/* Positions in a that b has too. */
static uint32_t common_positions(const struct fingerprint *a, const struct fingerprint *b, int d)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->n[d]; i++)
        for (uint32_t j = 0; j < b->n[d]; j++)
            if (a->at[d][i] == b->at[d][j]) {
                n++;
                break;
            }
    return n;
}

/* The same seed twice (loss and duplication; a delay would make positions depend on timing):
 * the duplicates fall at the same datagrams both ways; another seed puts them elsewhere. The
 * relay takes any datagram repeated at once for a duplicate, and a protocol packet can be
 * (two equal SACKs): so most positions, not all, must agree. */
TEST(a_seeded_fault_run_is_reproducible)
{
    const struct fault_run a = {7, 20000, 10000, 0, 0, 0}, b = {8, 20000, 10000, 0, 0, 0};
    struct fingerprint fa1, fa2, fb;
    data_run(&a, &fa1);
    data_run(&a, &fa2);
    data_run(&b, &fb);
    for (int d = 0; d < 2; d++) {
        ASSERT_EQ(fa1.n[d], SR_DUP_LOG);
        ASSERT_EQ(fa2.n[d], SR_DUP_LOG);
        uint32_t same = common_positions(&fa1, &fa2, d), other = common_positions(&fa1, &fb, d);
        fprintf(stderr,
                "  %s: seed %llu twice: %u of %u duplicate positions agree; seed %llu: %u\n",
                d ? "s2c" : "c2s", (unsigned long long)a.seed, same, SR_DUP_LOG,
                (unsigned long long)b.seed, other);
        if (same < SR_DUP_LOG - 4u || other > 4u) {
            for (uint32_t i = 0; i < SR_DUP_LOG; i++)
                fprintf(stderr, "    %llu %llu %llu\n", (unsigned long long)fa1.at[d][i],
                        (unsigned long long)fa2.at[d][i], (unsigned long long)fb.at[d][i]);
            harness_fail(__FILE__, __LINE__, "%s: %u positions agree for one seed, %u across seeds",
                         d ? "s2c" : "c2s", same, other);
        }
    }
}

/* ---- association loss ---------------------------------------------------------------------- */

/* wr_ids of the loss tests: the QP's index, receive or not, the WR's number on its queue. */
#define LOSS_RQ_BIT 0x8000u
static uint64_t loss_wr_id(uint32_t q, bool rq, uint32_t j)
{
    return (uint64_t)q << 16 | (rq ? LOSS_RQ_BIT : 0u) | j;
}

/* What one side saw of its QPs when the association went. */
struct loss_view {
    uint32_t sq_done[LOSS_QPS], sq_flushed[LOSS_QPS], rq_flushed[LOSS_QPS];
    bool fatal[LOSS_QPS], disconnected[LOSS_QPS];
};

/* Wait until every posted WR of the n QPs of s has completed (sq send WRs and rq receives
 * each), each QP has reported IWARP_EVENT_QP_FATAL and each id DISCONNECTED, before
 * deadline; checks the order (a success prefix, then flushes, per queue). */
static void expect_loss(struct sp_side *s, struct sp_end *ends, uint32_t n, uint32_t sq,
                        uint32_t rq, uint64_t deadline, struct loss_view *v)
{
    memset(v, 0, sizeof *v);
    uint32_t wcs = 0, fatals = 0, downs = 0;
    while (wcs < n * (sq + rq) || fatals < n || downs < n) {
        if (sp_now_ms() > deadline)
            harness_fail(__FILE__, __LINE__,
                         "after the loss: %u of %u completions, %u of %u QP_FATAL, %u of %u "
                         "DISCONNECTED",
                         wcs, n * (sq + rq), fatals, n, downs, n);
        struct iwarp_wc wc;
        int k = iwarp_poll_cq(s->cq, 1, &wc);
        ASSERT_TRUE(k >= 0);
        if (k == 1) {
            uint32_t q = (uint32_t)(wc.wr_id >> 16), j = (uint32_t)(wc.wr_id & 0x7FFFu);
            bool is_rq = wc.wr_id & LOSS_RQ_BIT;
            ASSERT_TRUE(q < n);
            ASSERT_EQ_U(wc.qp_num, ends[q].qp->qp_num);
            if (is_rq) {
                /* nothing was sent to these: every one is flushed, in posting order */
                ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
                ASSERT_EQ(j, v->rq_flushed[q]++);
            } else {
                ASSERT_EQ(j, v->sq_done[q] + v->sq_flushed[q]); /* posting order */
                if (wc.status == IWARP_WC_SUCCESS) {
                    ASSERT_EQ(v->sq_flushed[q], 0); /* nothing completes after a flush */
                    v->sq_done[q]++;
                } else {
                    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
                    v->sq_flushed[q]++;
                }
            }
            wcs++;
            continue;
        }
        struct iwarp_async_event aev;
        if (iwarp_get_async_event(s->ctx, &aev) == 0) {
            iwarp_ack_async_event(&aev);
            ASSERT_EQ(aev.event_type, IWARP_EVENT_QP_FATAL);
            uint32_t q = 0;
            while (q < n && ends[q].qp != aev.element.qp)
                q++;
            ASSERT_TRUE(q < n);
            ASSERT_FALSE(v->fatal[q]);
            v->fatal[q] = true;
            fatals++;
            continue;
        }
        struct iwarp_cm_event *ev = sp_try_event(s);
        if (ev) {
            if (ev->event != IWARP_CM_EVENT_DISCONNECTED)
                harness_fail(__FILE__, __LINE__, "after the loss: %s (%s)",
                             iwarp_cm_event_str(ev->event), iwarp_err_name(ev->status));
            uint32_t q = 0;
            while (q < n && ends[q].id != ev->id)
                q++;
            ASSERT_TRUE(q < n);
            ASSERT_FALSE(v->disconnected[q]);
            v->disconnected[q] = true;
            downs++;
            ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
            continue;
        }
        sp_idle(s, NULL);
    }
    for (uint32_t q = 0; q < n; q++) {
        ASSERT_EQ(v->rq_flushed[q], rq);
        struct iwarp_qp_attr qa;
        ASSERT_EQ(iwarp_query_qp(ends[q].qp, &qa), 0);
        ASSERT_EQ(qa.qp_state, IWARP_QPS_ERR);
    }
    sp_expect_no_wc(s, NULL);
}

/* Post LOSS_WR 1 MiB RDMA Writes and LOSS_RECV receives on each client QP. */
static void loss_post(struct sp_end *ends, uint32_t n, struct iwarp_mr *mr, uint8_t *buf)
{
    for (uint32_t q = 0; q < n; q++) {
        for (uint32_t j = 0; j < LOSS_RECV; j++)
            ASSERT_EQ(sp_post_recv(ends[q].qp, loss_wr_id(q, true, j), buf, 64, mr->lkey), 0);
        for (uint32_t j = 0; j < LOSS_WR; j++)
            ASSERT_EQ(sp_post(ends[q].qp, loss_wr_id(q, false, j), IWARP_WR_RDMA_WRITE, 0, buf,
                              LOSS_LEN, mr->lkey, ends[q].peer.addr, ends[q].peer.rkey),
                      0);
    }
}

/* Wait until the relay has carried `packets` datagrams from the client: the transfer runs. */
static void wait_mid_transfer(struct sctp_relay *relay, uint64_t packets)
{
    static struct sr_dir c2s;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    for (;;) {
        sctp_relay_snapshot(relay, NULL, NULL, NULL, &c2s, NULL);
        if (c2s.packets >= packets)
            return;
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%llu datagrams from the client (%llu so far)",
                          (unsigned long long)packets, (unsigned long long)c2s.packets);
        deadline_pause_us(200);
    }
}

/* Every QP had work in flight when the association went: some of its Writes are flushed. */
static void expect_mid_transfer(const struct loss_view *v, uint32_t n)
{
    for (uint32_t q = 0; q < n; q++) {
        fprintf(stderr, "    QP %u: %u Writes done, %u flushed, %u receives flushed\n", q,
                v->sq_done[q], v->sq_flushed[q], v->rq_flushed[q]);
        ASSERT_TRUE(v->sq_flushed[q] > 0);
    }
}

/* One association, its streams: what the relay saw. */
static void expect_one_association(struct sctp_relay *relay, uint32_t streams)
{
    static struct sr_assoc as[SR_MAX_ASSOC];
    uint32_t inits, nassoc;
    sctp_relay_snapshot(relay, &inits, &nassoc, as, NULL, NULL);
    ASSERT_EQ(inits, 1);
    ASSERT_EQ(nassoc, 1);
    ASSERT_EQ(as[0].nstreams, streams);
}

/* The server of the kill test, in a child process: accepts LOSS_QPS connections (advertising
 * its buffer, LOSS_RECV receives posted on each), tells the parent, and waits to be killed. */
static void child_server(int to_parent, int from_parent)
{
    struct sp_side srv;
    sp_side_init(&srv, IWARP_PROGRESS_THREAD, 256);
    uint8_t *buf = calloc(1, LOSS_LEN);
    ASSERT_TRUE(buf != NULL);
    struct iwarp_mr *mr = sp_reg(&srv, buf, LOSS_LEN, 0);
    uint16_t port = sp_listen_ps(&srv, IWARP_PS_SCTP);
    ASSERT_EQ(write(to_parent, &port, sizeof port), (ssize_t)sizeof port);
    struct sp_advert adv = {.rkey = mr->rkey, .addr = (uintptr_t)buf, .len = LOSS_LEN};
    struct sp_cfg cfg = {
        .cap = {.max_send_wr = 4, .max_recv_wr = LOSS_RECV, .max_send_sge = 1, .max_recv_sge = 1},
        .sq_sig_all = 1};
    struct sp_end ends[LOSS_QPS];
    memset(ends, 0, sizeof ends);
    uint32_t up = 0, asked = 0;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    while (up < LOSS_QPS) {
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "%u connections (%u up, %u asked)", LOSS_QPS, up, asked);
        struct iwarp_cm_event *ev = sp_try_event(&srv);
        if (!ev) {
            sp_idle(&srv, NULL);
            continue;
        }
        if (ev->event == IWARP_CM_EVENT_CONNECT_REQUEST) {
            ASSERT_TRUE(asked < LOSS_QPS);
            struct sp_end *e = &ends[asked++];
            e->id = ev->id;
            sp_create_qp(&srv, e, &cfg, NULL);
            for (uint32_t j = 0; j < LOSS_RECV; j++)
                ASSERT_EQ(sp_post_recv(e->qp, j, buf, 64, mr->lkey), 0);
            struct iwarp_conn_param ap = {.private_data = &adv, .private_data_len = sizeof adv};
            ASSERT_EQ(iwarp_cm_accept(e->id, &ap), 0);
        } else {
            ASSERT_EQ(ev->event, IWARP_CM_EVENT_ESTABLISHED);
            up++;
        }
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    }
    ASSERT_EQ(write(to_parent, "u", 1), 1);
    char c;
    (void)read(from_parent, &c, 1); /* returns only when the parent goes away */
    _exit(0);
}

/* Connect n client ids to dst, each with an advert of mine: one association to that peer
 * carries them all (a stream each, RFC 5043 §5.2); waits until all are up and records the
 * peers' adverts. */
static void connect_clients(struct sp_side *cli, struct sp_end *ends, uint32_t n,
                            const struct sockaddr_in *dst, const struct sp_advert *mine)
{
    struct sp_cfg cfg = {.cap = {.max_send_wr = LOSS_WR,
                                 .max_recv_wr = LOSS_RECV,
                                 .max_send_sge = 1,
                                 .max_recv_sge = 1},
                         .sq_sig_all = 1};
    for (uint32_t q = 0; q < n; q++) {
        ends[q].mine = *mine;
        ASSERT_EQ(iwarp_cm_create_id(cli->ch, &ends[q].id, &ends[q], IWARP_PS_SCTP), 0);
        ASSERT_EQ(iwarp_cm_resolve_addr(ends[q].id, NULL, (const struct sockaddr *)dst, 1000), 0);
        sp_expect_ack(cli, NULL, IWARP_CM_EVENT_ADDR_RESOLVED);
        ASSERT_EQ(iwarp_cm_resolve_route(ends[q].id, 1000), 0);
        sp_expect_ack(cli, NULL, IWARP_CM_EVENT_ROUTE_RESOLVED);
        sp_create_qp(cli, &ends[q], &cfg, NULL);
    }
    /* all resolved before any connects: no ESTABLISHED comes between a resolve and its event */
    for (uint32_t q = 0; q < n; q++) {
        struct iwarp_conn_param cp = {.private_data = mine, .private_data_len = sizeof *mine};
        ASSERT_EQ(iwarp_cm_connect(ends[q].id, &cp), 0);
    }
    for (uint32_t q = 0; q < n; q++) {
        struct iwarp_cm_event *ev = sp_expect_event(cli, NULL, IWARP_CM_EVENT_ESTABLISHED);
        struct sp_end *e = ev->id->context_user;
        ASSERT_FALSE(e->established);
        e->established = true;
        sp_take_advert(ev, &e->peer);
        ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    }
}

/* RFC 5043 §11.3: the peer process dies (no ABORT, no SHUTDOWN); the client's SCTP gives up
 * after its retransmissions and every QP of the association is flushed. */
TEST(killing_the_server_process_flushes_every_qp_of_the_association)
{
    ASSERT_EQ(setenv("IWARP_SCTP_RTO_MS", RTO_MS, 1), 0);
    ASSERT_EQ(unsetenv("IWARP_SCTP_FAULT"), 0);
    int up[2], down[2];
    ASSERT_EQ(pipe(up), 0);
    ASSERT_EQ(pipe(down), 0);
    pid_t pid = fork(); /* before any context: usrsctp's state is the child's own */
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        child_server(up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    struct pollfd pfd = {.fd = up[0], .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, SP_WAIT_MS), 1);
    uint16_t port = 0;
    ASSERT_EQ(read(up[0], &port, sizeof port), (ssize_t)sizeof port);
    static struct sctp_relay relay;
    sctp_relay_start(&relay, port);

    struct sp_side cli;
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, 256);
    uint8_t *buf = calloc(1, LOSS_LEN);
    ASSERT_TRUE(buf != NULL);
    struct iwarp_mr *mr = sp_reg(&cli, buf, LOSS_LEN, 0);
    struct sp_advert mine = {.rkey = mr->rkey, .addr = (uintptr_t)buf, .len = LOSS_LEN};
    struct sp_end ends[LOSS_QPS];
    memset(ends, 0, sizeof ends);
    connect_clients(&cli, ends, LOSS_QPS, &relay.front_addr, &mine);
    char c;
    ASSERT_EQ(poll(&pfd, 1, SP_WAIT_MS), 1);
    ASSERT_EQ(read(up[0], &c, 1), 1); /* every server QP is up */

    loss_post(ends, LOSS_QPS, mr, buf);
    wait_mid_transfer(&relay, 5000);
    uint64_t t_kill = sp_now_ms();
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    struct loss_view v;
    expect_loss(&cli, ends, LOSS_QPS, LOSS_WR, LOSS_RECV, t_kill + LOSS_MS, &v);
    fprintf(stderr, "  all %u QPs flushed %.2f s after the kill\n", LOSS_QPS, secs_since(t_kill));
    expect_mid_transfer(&v, LOSS_QPS);
    expect_one_association(&relay, LOSS_QPS);

    for (uint32_t q = 0; q < LOSS_QPS; q++)
        sp_end_destroy(&ends[q]);
    ASSERT_EQ(iwarp_dereg_mr(mr), 0);
    sp_side_fini(&cli);
    sctp_relay_stop(&relay);
    close(up[0]);
    close(down[1]);
    free(buf);
}

/* The path goes silent from the server to the client: the client's SCTP retransmits in vain,
 * gives up, and its ABORT (RFC 4960 §8.1) reaches the server: both sides flush every QP of the
 * association. A second association between the same contexts lives on. */
TEST(a_path_silent_one_way_flushes_every_qp_on_both_sides_and_no_other)
{
    ASSERT_EQ(setenv("IWARP_SCTP_RTO_MS", RTO_MS, 1), 0);
    ASSERT_EQ(unsetenv("IWARP_SCTP_FAULT"), 0);
    struct sp_side srv, cli;
    sp_side_init(&srv, IWARP_PROGRESS_THREAD, 256);
    sp_side_init(&cli, IWARP_PROGRESS_THREAD, 256);
    uint8_t *sbuf = calloc(1, LOSS_LEN), *cbuf = calloc(1, LOSS_LEN);
    ASSERT_TRUE(sbuf && cbuf);
    struct iwarp_mr *smr = sp_reg(&srv, sbuf, LOSS_LEN, 0), *cmr = sp_reg(&cli, cbuf, LOSS_LEN, 0);
    struct sp_cfg cfg = {.cap = {.max_send_wr = LOSS_WR,
                                 .max_recv_wr = LOSS_RECV,
                                 .max_send_sge = 1,
                                 .max_recv_sge = 1},
                         .sq_sig_all = 1,
                         .ps = IWARP_PS_SCTP};
    static struct sctp_relay relay;
    sctp_relay_start(&relay, sp_listen_ps(&srv, IWARP_PS_SCTP));
    cfg.dst = &relay.front_addr;
    struct sp_pair pairs[LOSS_QPS], direct;
    memset(pairs, 0, sizeof pairs);
    memset(&direct, 0, sizeof direct);
    for (uint32_t q = 0; q < LOSS_QPS; q++) {
        pairs[q].cli.mine =
            (struct sp_advert){.rkey = cmr->rkey, .addr = (uintptr_t)cbuf, .len = LOSS_LEN};
        pairs[q].srv.mine =
            (struct sp_advert){.rkey = smr->rkey, .addr = (uintptr_t)sbuf, .len = LOSS_LEN};
    }
    direct.cli.mine = pairs[0].cli.mine;
    direct.srv.mine = pairs[0].srv.mine;
    sp_connect_pairs(&srv, &cli, pairs, LOSS_QPS, &cfg);
    cfg.dst = NULL; /* straight to the listener: another peer address, another association */
    sp_connect_pairs(&srv, &cli, &direct, 1, &cfg);

    struct sp_end cends[LOSS_QPS], sends[LOSS_QPS];
    for (uint32_t q = 0; q < LOSS_QPS; q++) {
        cends[q] = pairs[q].cli;
        sends[q] = pairs[q].srv;
        for (uint32_t j = 0; j < LOSS_RECV; j++)
            ASSERT_EQ(sp_post_recv(sends[q].qp, loss_wr_id(q, true, j), sbuf, 64, smr->lkey), 0);
    }
    loss_post(cends, LOSS_QPS, cmr, cbuf);
    wait_mid_transfer(&relay, 5000);
    uint64_t t_cut = sp_now_ms();
    sctp_relay_drop(&relay, false, true);
    struct loss_view v;
    expect_loss(&cli, cends, LOSS_QPS, LOSS_WR, LOSS_RECV, t_cut + LOSS_MS, &v);
    fprintf(stderr, "  client: all %u QPs flushed %.2f s after the cut\n", LOSS_QPS,
            secs_since(t_cut));
    expect_mid_transfer(&v, LOSS_QPS);
    expect_loss(&srv, sends, LOSS_QPS, 0, LOSS_RECV, t_cut + LOSS_MS, &v);
    fprintf(stderr, "  server: all %u QPs flushed %.2f s after the cut\n", LOSS_QPS,
            secs_since(t_cut));
    expect_one_association(&relay, LOSS_QPS);

    /* the other association is untouched: a Write and a Send still go through (the Send's
     * arrival shows the Write before it placed, RFC 5040 §5.5) */
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(direct.cli.qp, &qa), 0);
    ASSERT_EQ(qa.qp_state, IWARP_QPS_RTS);
    sp_fill(cbuf, 4096, 99);
    memset(sbuf, 0, 8192);
    ASSERT_EQ(sp_post_recv(direct.srv.qp, 1, sbuf, 4096, smr->lkey), 0);
    ASSERT_EQ(sp_post(direct.cli.qp, 2, IWARP_WR_RDMA_WRITE, 0, cbuf, 4096, cmr->lkey,
                      direct.cli.peer.addr + 4096, direct.cli.peer.rkey),
              0);
    ASSERT_EQ(sp_post(direct.cli.qp, 3, IWARP_WR_SEND, 0, cbuf, 4096, cmr->lkey, 0, 0), 0);
    ASSERT_EQ_U(sp_poll_ok(&cli, &srv, IWARP_WC_RDMA_WRITE).wr_id, 2u);
    ASSERT_EQ_U(sp_poll_ok(&cli, &srv, IWARP_WC_SEND).wr_id, 3u);
    ASSERT_EQ_U(sp_poll_ok(&srv, &cli, IWARP_WC_RECV).byte_len, 4096u);
    SP_ASSERT_PATTERN(sbuf, 4096, 99);
    SP_ASSERT_PATTERN(sbuf + 4096, 4096, 99);
    sp_disconnect_pairs(&srv, &cli, &direct, 1, true);

    sp_destroy_pairs(pairs, LOSS_QPS);
    sp_destroy_pairs(&direct, 1);
    ASSERT_EQ(iwarp_dereg_mr(cmr), 0);
    ASSERT_EQ(iwarp_dereg_mr(smr), 0);
    sp_side_fini(&cli);
    sp_side_fini(&srv);
    sctp_relay_stop(&relay);
    free(sbuf);
    free(cbuf);
}
