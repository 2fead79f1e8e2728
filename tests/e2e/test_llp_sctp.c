/* SPDX-License-Identifier: BSD-2-Clause */
/* The SCTP back-end on its own (usrsctp, no threads, AF_CONN over UDP 127.0.0.1): two or three
 * endpoints in one process driven by a small poll loop here; RFC 5043 association checks
 * (adaptation indication, equal stream counts, maximum segment), chunks on several streams,
 * fault injection with shortened RTO, abortive and graceful ends, 100 associations at once.
 * Each test runs in its own process (harness fork), so each starts and finishes the stack and
 * LSan checks that everything was returned. */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>
#include <usrsctp.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "llp/llp_sctp.h"

#define PPID_DDP  16u /* RFC 5043 §5.2 */
#define PPID_CTRL 17u

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the test's progress loop ---------------------------------------------------------- */

static struct iwarp_llp_sctp_ep *loop_eps[4];
static int n_loop;
static struct iwarp_llp_sctp_owner *OWNER; /* the test's: it drives every endpoint */

static struct iwarp_llp_sctp_owner *owner(void)
{
    if (!OWNER)
        ASSERT_EQ(iwarp_llp_sctp_owner_open(NULL, &OWNER), 0);
    return OWNER;
}

static void pump_once(int max_ms)
{
    uint64_t now = now_ns();
    uint64_t dl = iwarp_llp_sctp_timers(owner(), now);
    int to = max_ms;
    if (dl != UINT64_MAX) {
        uint64_t ms = dl <= now ? 0 : (dl - now + 999999) / 1000000;
        if (ms < (uint64_t)to)
            to = (int)ms;
    }
    struct pollfd pf[4];
    for (int i = 0; i < n_loop; i++)
        pf[i] = (struct pollfd){.fd = iwarp_llp_sctp_ep_fd(loop_eps[i]), .events = POLLIN};
    if (poll(pf, (nfds_t)n_loop, to) > 0)
        for (int i = 0; i < n_loop; i++)
            if (pf[i].revents)
                iwarp_llp_sctp_on_readable(loop_eps[i], now_ns());
}

#define RUN_UNTIL(cond, ms)                                 \
    do {                                                    \
        uint64_t end_ = now_ns() + (uint64_t)(ms)*1000000u; \
        while (!(cond) && now_ns() < end_)                  \
            pump_once(5);                                   \
    } while (0)

static struct iwarp_llp_sctp_ep *open_ep(struct iwarp_llp_sctp_ep_cfg *cfg)
{
    if (!cfg->owner)
        cfg->owner = owner();
    struct iwarp_llp_sctp_ep *ep = NULL;
    ASSERT_EQ(iwarp_llp_sctp_ep_open(cfg, &ep), 0);
    ASSERT_TRUE(ep != NULL);
    loop_eps[n_loop++] = ep;
    return ep;
}

static void close_all(void)
{
    for (int i = n_loop - 1; i >= 0; i--)
        iwarp_llp_sctp_ep_close(loop_eps[i]);
    n_loop = 0;
    /* the last endpoint finished the stack (usrsctp_finish() == 0): nothing lingers */
    ASSERT_FALSE(iwarp_llp_sctp_stack_active());
    iwarp_llp_sctp_owner_close(OWNER);
    OWNER = NULL;
}

/* ---- one side of an association as its owner sees it ------------------------------------ */

struct rxmsg {
    void *buf;
    size_t len;
    uint16_t sid;
    uint32_t ppid;
    bool unordered;
};

struct peer {
    struct iwarp_llp_sctp_assoc *a;
    int up, down, writable;
    uint16_t nstreams;
    uint32_t max_seg;
    int down_err;
    struct rxmsg *rx;
    size_t nrx, caprx;
    /* fault test: sequence numbers seen */
    uint8_t *seen;
    uint32_t nseen, dups, out_of_order, last_seq, nchunks_expected;
    bool echo; /* send every chunk back on the same stream */
};

static void p_up(void *user, uint16_t nstreams, uint32_t max_seg)
{
    struct peer *p = user;
    p->up++;
    p->nstreams = nstreams;
    p->max_seg = max_seg;
}

static void p_down(void *user, int err)
{
    struct peer *p = user;
    p->down++;
    p->down_err = err;
}

static void p_chunk(void *user, uint16_t sid, uint32_t ppid, bool unordered, void *buf, size_t len)
{
    struct peer *p = user;
    if (p->seen) {
        /* fault test: 4-byte sequence number after the 2-byte DDP-SSN */
        uint32_t seq;
        memcpy(&seq, (uint8_t *)buf + 2, 4);
        if (seq < p->nchunks_expected) {
            if (p->seen[seq])
                p->dups++;
            else
                p->nseen++;
            p->seen[seq] = 1;
            if (seq < p->last_seq)
                p->out_of_order++;
            p->last_seq = seq;
        }
        iwarp_llp_sctp_chunk_free(buf);
        return;
    }
    if (p->echo) {
        struct iovec v = {buf, len};
        (void)iwarp_llp_sctp_send_chunk(p->a, sid, ppid, &v, 1);
    }
    /* keep the buffer (as a reorder window would) and free it at the end */
    if (p->nrx == p->caprx) {
        p->caprx = p->caprx ? p->caprx * 2 : 16;
        p->rx = realloc(p->rx, p->caprx * sizeof *p->rx);
        ASSERT_TRUE(p->rx != NULL);
    }
    p->rx[p->nrx++] = (struct rxmsg){buf, len, sid, ppid, unordered};
}

static void p_writable(void *user)
{
    ((struct peer *)user)->writable++;
}

static const struct iwarp_llp_sctp_ops peer_ops = {p_up, p_down, p_chunk, p_writable};

static void peer_free(struct peer *p)
{
    for (size_t i = 0; i < p->nrx; i++)
        iwarp_llp_sctp_chunk_free(p->rx[i].buf);
    free(p->rx);
    free(p->seen);
    memset(p, 0, sizeof *p);
}

struct server {
    struct peer peers[128];
    int n, refused, refuse_err;
};

static void srv_accept(void *user, struct iwarp_llp_sctp_assoc *a, int err)
{
    struct server *s = user;
    if (!a) {
        s->refused++;
        s->refuse_err = err;
        return;
    }
    ASSERT_EQ(err, 0);
    ASSERT_TRUE(s->n < 128);
    struct peer *p = &s->peers[s->n++];
    p->a = a;
    iwarp_llp_sctp_set_ops(a, &peer_ops, p);
    ASSERT_EQ(p->up, 0); /* on_up comes after accept */
}

static void peer_addr(struct iwarp_llp_sctp_ep *ep, struct sockaddr_storage *ss)
{
    ASSERT_TRUE(iwarp_llp_sctp_ep_local(ep, ss) > 0);
}

/* A listening server endpoint and a client endpoint, one association up between them. */
struct pair {
    struct iwarp_llp_sctp_ep *sep, *cep;
    struct iwarp_llp_sctp_listener *l;
    struct server srv;
    struct peer cli;
};

static void pair_open(struct pair *pr, struct iwarp_llp_sctp_ep_cfg *scfg,
                      struct iwarp_llp_sctp_ep_cfg *ccfg)
{
    memset(pr, 0, sizeof *pr);
    pr->sep = open_ep(scfg);
    pr->cep = open_ep(ccfg);
    ASSERT_EQ(iwarp_llp_sctp_listen(pr->sep, 0, 128, srv_accept, &pr->srv, &pr->l), 0);
    struct sockaddr_storage sa;
    peer_addr(pr->sep, &sa);
    ASSERT_EQ(
        iwarp_llp_sctp_connect(pr->cep, (struct sockaddr *)&sa, 0, &peer_ops, &pr->cli, &pr->cli.a),
        0);
}

static void pair_up(struct pair *pr, struct iwarp_llp_sctp_ep_cfg *scfg,
                    struct iwarp_llp_sctp_ep_cfg *ccfg)
{
    pair_open(pr, scfg, ccfg);
    RUN_UNTIL(pr->cli.up && pr->srv.n == 1 && pr->srv.peers[0].up, 5000);
    ASSERT_EQ(pr->cli.up, 1);
    ASSERT_EQ(pr->srv.n, 1);
    ASSERT_EQ(pr->srv.peers[0].up, 1);
    ASSERT_EQ(pr->cli.down, 0);
}

static void pair_close(struct pair *pr)
{
    if (pr->cli.a)
        iwarp_llp_sctp_close(pr->cli.a, true);
    for (int i = 0; i < pr->srv.n; i++) {
        iwarp_llp_sctp_close(pr->srv.peers[i].a, true);
        peer_free(&pr->srv.peers[i]);
    }
    peer_free(&pr->cli);
    close_all();
}

static int send_bytes(struct iwarp_llp_sctp_assoc *a, uint16_t sid, uint32_t ppid, const void *p,
                      size_t len)
{
    struct iovec v = {(void *)(uintptr_t)p, len};
    return iwarp_llp_sctp_send_chunk(a, sid, ppid, &v, 1);
}

/* ---- tests --------------------------------------------------------------------------------- */

TEST(association_up_both_ways_with_n_streams_and_max_segment)
{
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 4};
    struct pair pr;
    pair_up(&pr, &c, &c);
    struct peer *s = &pr.srv.peers[0];
    ASSERT_EQ(pr.cli.nstreams, 4);
    ASSERT_EQ(s->nstreams, 4);
    ASSERT_EQ(iwarp_llp_sctp_nstreams(pr.cli.a), 4);
    /* MTU 1500 over UDP/IPv4: SCTP packet 1472, frag point 1472 - 12 - 16 = 1444 (the same as
     * SCTP over UDP on a 1500-byte network), less the DDP-SSN and the default headroom */
    ASSERT_EQ(pr.cli.max_seg, 1444 - 2 - IWARP_LLP_SCTP_DEFAULT_HEADROOM);
    ASSERT_EQ(s->max_seg, pr.cli.max_seg);
    ASSERT_TRUE(pr.cli.max_seg >= IWARP_SCTP_CTL_MAX);
    ASSERT_EQ(iwarp_llp_sctp_max_seg(pr.cli.a), pr.cli.max_seg);

    /* RFC 5043 §9: one octet above the maximum is refused, the maximum passes */
    size_t max_msg = pr.cli.max_seg + IWARP_SCTP_SSN_LEN;
    uint8_t *big = calloc(1, max_msg + 1);
    ASSERT_EQ(send_bytes(pr.cli.a, 0, PPID_DDP, big, max_msg + 1), IWARP_ERR_SCTP_MSGSIZE);
    ASSERT_EQ(send_bytes(s->a, 3, PPID_DDP, big, max_msg + 1), IWARP_ERR_SCTP_MSGSIZE);
    big[0] = 0xab;
    big[max_msg - 1] = 0xcd;
    ASSERT_EQ(send_bytes(pr.cli.a, 0, PPID_DDP, big, max_msg), 0);
    ASSERT_EQ(send_bytes(s->a, 3, PPID_CTRL, "ab", 2), 0);
    /* stream ids are 0..N-1; an empty message is not one */
    ASSERT_EQ(send_bytes(pr.cli.a, 4, PPID_DDP, "x", 1), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_llp_sctp_send_chunk(pr.cli.a, 0, PPID_DDP, NULL, 0), IWARP_ERR_INVAL);
    RUN_UNTIL(s->nrx == 1 && pr.cli.nrx == 1, 5000);
    ASSERT_EQ(s->nrx, 1);
    ASSERT_EQ(s->rx[0].len, max_msg);
    ASSERT_EQ(((uint8_t *)s->rx[0].buf)[0], 0xab);
    ASSERT_EQ(((uint8_t *)s->rx[0].buf)[max_msg - 1], 0xcd);
    ASSERT_EQ(pr.cli.nrx, 1);
    ASSERT_EQ(pr.cli.rx[0].sid, 3);
    ASSERT_EQ(pr.cli.rx[0].ppid, PPID_CTRL);
    ASSERT_TRUE(pr.cli.rx[0].unordered);
    ASSERT_MEM_EQ(pr.cli.rx[0].buf, "ab", 2);
    /* the largest message went out as one DATA chunk in one packet: 12 + 16 + payload */
    free(big);
    pair_close(&pr);
}

TEST(larger_mtu_raises_the_segment_size_on_both_sides)
{
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 2, .mtu = 9000, .headroom = 64};
    struct pair pr;
    pair_up(&pr, &c, &c);
    /* 9000 - 20 - 8 = 8972 path MTU, frag point 8944 */
    ASSERT_EQ(pr.cli.max_seg, 8944 - 2 - 64);
    ASSERT_EQ(pr.srv.peers[0].max_seg, pr.cli.max_seg);
    pair_close(&pr);
}

struct maxcap {
    size_t max_out;
};

static void cap_max(void *user, int dir, const struct sockaddr *local, const struct sockaddr *peer,
                    const uint8_t *pkt, size_t len, uint64_t now)
{
    (void)local, (void)peer, (void)pkt, (void)now;
    struct maxcap *m = user;
    if (dir == IWARP_LLP_SCTP_PKT_OUT && len > m->max_out)
        m->max_out = len;
}

TEST(largest_message_fills_exactly_one_packet_of_the_mtu)
{
    /* headroom 1: the largest message is frag point - 1; with its pad it fills the packet */
    struct maxcap m = {0};
    struct iwarp_llp_sctp_ep_cfg s = {.nstreams = 1, .headroom = 1};
    struct iwarp_llp_sctp_ep_cfg c = {
        .nstreams = 1, .headroom = 1, .capture = cap_max, .capture_user = &m};
    struct pair pr;
    pair_up(&pr, &s, &c);
    ASSERT_EQ(pr.cli.max_seg, 1444 - 2 - 1);
    size_t max_msg = pr.cli.max_seg + IWARP_SCTP_SSN_LEN;
    uint8_t *big = calloc(1, max_msg);
    ASSERT_EQ(send_bytes(pr.cli.a, 0, PPID_DDP, big, max_msg), 0);
    RUN_UNTIL(pr.srv.peers[0].nrx == 1, 5000);
    ASSERT_EQ(pr.srv.peers[0].nrx, 1);
    /* 1500 - 20 (IPv4) - 8 (UDP) = 1472: one DATA chunk, no SCTP fragmentation, no IP
     * fragmentation (RFC 5043 §9) */
    ASSERT_EQ(m.max_out, 1472);
    struct iwarp_llp_sctp_stats st;
    iwarp_llp_sctp_ep_stats(pr.cep, &st);
    ASSERT_EQ(st.tx_gathered, 0); /* one iovec: no copy of ours */
    free(big);
    pair_close(&pr);
}

/* A peer that indicates no (or another) adaptation layer is refused (RFC 5043 §5.1, §11.1). */
static void adaptation_case(bool client_bad, bool none, uint32_t ind)
{
    struct iwarp_llp_sctp_ep_cfg good = {.nstreams = 2};
    struct iwarp_llp_sctp_ep_cfg bad = {
        .nstreams = 2, .test_no_adaptation = none, .test_adaptation_ind = ind};
    struct pair pr;
    pair_open(&pr, client_bad ? &good : &bad, client_bad ? &bad : &good);
    if (client_bad) {
        /* the server refuses it; the client sees the association aborted */
        RUN_UNTIL(pr.srv.refused && pr.cli.down, 5000);
        ASSERT_EQ(pr.srv.refused, 1);
        ASSERT_EQ(pr.srv.refuse_err, IWARP_ERR_SCTP_ADAPTATION);
        ASSERT_EQ(pr.srv.n, 0);
        ASSERT_EQ(pr.cli.down, 1);
        ASSERT_NE(pr.cli.down_err, 0);
    } else {
        RUN_UNTIL(pr.cli.down, 5000);
        ASSERT_EQ(pr.cli.down, 1);
        ASSERT_EQ(pr.cli.down_err, IWARP_ERR_SCTP_ADAPTATION);
        /* the server never hands an up association out for good */
        RUN_UNTIL(pr.srv.n && pr.srv.peers[0].down, 2000);
        if (pr.srv.n)
            ASSERT_EQ(pr.srv.peers[0].down, 1);
    }
    ASSERT_EQ(pr.cli.up, 0);
    ASSERT_EQ(send_bytes(pr.cli.a, 0, PPID_DDP, "x", 1), pr.cli.down_err);
    pair_close(&pr);
}

TEST(client_without_adaptation_indication_is_refused)
{
    adaptation_case(true, true, 0);
}

TEST(server_without_adaptation_indication_is_refused)
{
    adaptation_case(false, true, 0);
}

TEST(adaptation_indication_other_than_ddp_is_refused)
{
    adaptation_case(true, false, 2);
    adaptation_case(false, false, 0x12345678);
}

TEST(unequal_stream_counts_are_refused_on_both_sides)
{
    /* the client offers 4 out but takes only 2 in: 4 out / 2 in on its side (RFC 5043 §8) */
    struct iwarp_llp_sctp_ep_cfg s = {.nstreams = 4};
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 4, .test_max_instreams = 2};
    struct pair pr;
    pair_open(&pr, &s, &c);
    RUN_UNTIL(pr.cli.down && pr.srv.refused, 5000);
    ASSERT_EQ(pr.cli.up, 0);
    ASSERT_EQ(pr.cli.down_err, IWARP_ERR_SCTP_STREAMS);
    ASSERT_EQ(pr.srv.refused, 1);
    ASSERT_EQ(pr.srv.refuse_err, IWARP_ERR_SCTP_STREAMS);
    ASSERT_EQ(pr.srv.n, 0);
    pair_close(&pr);
}

TEST(chunks_of_various_sizes_on_several_streams)
{
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 8};
    struct pair pr;
    pair_up(&pr, &c, &c);
    struct peer *s = &pr.srv.peers[0];
    s->echo = true;
    uint32_t max_msg = pr.cli.max_seg + IWARP_SCTP_SSN_LEN;
    const size_t sizes[] = {1, 2, 3, 17, 100, 515, 516, 517, 518, 1000, 1400, max_msg - 1, max_msg};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    uint8_t *buf = malloc(max_msg);
    for (size_t i = 0; i < NS; i++) {
        for (size_t k = 0; k < sizes[i]; k++)
            buf[k] = (uint8_t)(i * 31 + k);
        uint16_t sid = (uint16_t)(i % 8);
        uint32_t ppid = i % 3 ? PPID_DDP : PPID_CTRL;
        if (sizes[i] >= 2) {
            /* DDP-SSN and segment as two iovecs: gathered */
            struct iovec v[2] = {{buf, 2}, {buf + 2, sizes[i] - 2}};
            ASSERT_EQ(iwarp_llp_sctp_send_chunk(pr.cli.a, sid, ppid, v, 2), 0);
        } else {
            ASSERT_EQ(send_bytes(pr.cli.a, sid, ppid, buf, sizes[i]), 0);
        }
    }
    RUN_UNTIL(pr.cli.nrx == NS, 5000);
    ASSERT_EQ(s->nrx, NS);
    ASSERT_EQ(pr.cli.nrx, NS);
    /* unordered: match by content, not arrival order */
    for (size_t i = 0; i < NS; i++) {
        int found = 0;
        for (size_t j = 0; j < NS; j++) {
            struct rxmsg *m = &s->rx[j];
            if (m->len != sizes[i] || m->sid != i % 8)
                continue;
            ASSERT_EQ(m->ppid, i % 3 ? PPID_DDP : PPID_CTRL);
            ASSERT_TRUE(m->unordered);
            for (size_t k = 0; k < sizes[i]; k++)
                ASSERT_EQ(((uint8_t *)m->buf)[k], (uint8_t)(i * 31 + k));
            found++;
        }
        ASSERT_EQ(found, 1);
        /* and the echo */
        found = 0;
        for (size_t j = 0; j < NS; j++)
            if (pr.cli.rx[j].len == sizes[i] && pr.cli.rx[j].sid == i % 8 && pr.cli.rx[j].unordered)
                found++;
        ASSERT_EQ(found, 1);
    }
    struct iwarp_llp_sctp_stats st;
    iwarp_llp_sctp_ep_stats(pr.cep, &st);
    ASSERT_EQ(st.tx_gathered, NS - 1);
    ASSERT_EQ(st.rx_reassembled, 0);
    ASSERT_EQ(st.fault_dropped, 0);
    free(buf);
    pair_close(&pr);
}

struct cap {
    uint64_t out, in;
    uint64_t bad_crc_out, bad_crc_in;
    bool bad;
};

/* Whether pkt's CRC32c (RFC 4960 §6.8) is right, by usrsctp's own code: llp_sctp computes
 * and checks it with ISA-L (usrsctp's offloaded), so this is an independent judge. */
static bool crc32c_right(const uint8_t *pkt, size_t len)
{
    static uint8_t copy[65536];
    if (len < 12 || len > sizeof copy)
        return false;
    memcpy(copy, pkt, len);
    memset(copy + 8, 0, 4);
    uint32_t want = usrsctp_crc32c(copy, len); /* as the field holds it in memory */
    return memcmp(pkt + 8, &want, 4) == 0;
}

static void capture(void *user, int dir, const struct sockaddr *local, const struct sockaddr *peer,
                    const uint8_t *pkt, size_t len, uint64_t now)
{
    struct cap *c = user;
    (void)now;
    if (!local || !peer || len < 12 || local->sa_family != AF_INET)
        c->bad = true;
    bool right = crc32c_right(pkt, len);
    if (dir == IWARP_LLP_SCTP_PKT_OUT) {
        c->out++;
        c->bad_crc_out += !right;
    } else {
        c->in++;
        c->bad_crc_in += !right;
    }
}

TEST(fault_injection_2000_chunks_arrive_exactly_once)
{
    iwarp_llp_sctp_set_test_timers(20, 40, 200);
    struct cap cap = {0};
    struct iwarp_llp_sctp_ep_cfg sc = {.nstreams = 4,
                                       .fault = {.seed = 0x5ca1ab1e,
                                                 .drop_ppm = 30000,
                                                 .dup_ppm = 20000,
                                                 .delay_ppm = 30000,
                                                 .delay_ms = 7,
                                                 .corrupt_ppm = 20000}};
    struct iwarp_llp_sctp_ep_cfg cc = sc;
    cc.fault.seed = 0xfeedface;
    cc.capture = capture;
    cc.capture_user = &cap;
    struct pair pr;
    pair_up(&pr, &sc, &cc);
    struct peer *s = &pr.srv.peers[0];
    enum { N = 2000 };
    s->seen = calloc(N, 1);
    s->nchunks_expected = N;
    uint8_t msg[300];
    memset(msg, 0x5a, sizeof msg);
    uint32_t next = 0;
    int busy = 0;
    uint64_t end = now_ns() + 40000000000ull;
    while ((next < N || s->nseen < N) && now_ns() < end) {
        while (next < N) {
            memcpy(msg + 2, &next, 4);
            size_t len = 64 + next % 200;
            int rc = send_bytes(pr.cli.a, (uint16_t)(next % 4), PPID_DDP, msg, len);
            if (rc == IWARP_ERR_BUSY) {
                busy++;
                break;
            }
            ASSERT_EQ(rc, 0);
            next++;
        }
        pump_once(5);
        ASSERT_EQ(pr.cli.down, 0);
    }
    ASSERT_EQ(next, N);
    ASSERT_EQ(s->nseen, N);
    ASSERT_EQ(s->dups, 0); /* SCTP drops the duplicated packets' chunks */
    struct iwarp_llp_sctp_stats cs, ss;
    iwarp_llp_sctp_ep_stats(pr.cep, &cs);
    iwarp_llp_sctp_ep_stats(pr.sep, &ss);
    /* the faults really happened, in both directions */
    ASSERT_TRUE(cs.fault_dropped > 0 && cs.fault_duplicated > 0 && cs.fault_delayed > 0);
    ASSERT_TRUE(ss.fault_dropped > 0 && ss.fault_duplicated > 0);
    ASSERT_TRUE(cs.fault_corrupted > 0 && ss.fault_corrupted > 0);
    /* the capture saw what left (drops never, duplicates twice) and what came in */
    ASSERT_FALSE(cap.bad);
    ASSERT_EQ(cap.out, cs.pkts_out);
    ASSERT_EQ(cap.in, cs.pkts_in - cs.rx_dropped);
    /* every packet left with its CRC32c right but those corrupted on purpose (a CRC catches
     * every one-bit error), and every corrupted one that came in was discarded, not fed to
     * usrsctp (whose own check is off): RFC 4960 §6.8 */
    ASSERT_EQ_U(cap.bad_crc_out, cs.fault_corrupted);
    ASSERT_EQ_U(cap.bad_crc_in, cs.rx_bad_crc);
    ASSERT_TRUE(cs.rx_bad_crc > 0 && cs.rx_bad_crc <= ss.fault_corrupted);
    ASSERT_TRUE(ss.rx_bad_crc > 0 && ss.rx_bad_crc <= cs.fault_corrupted);
    ASSERT_TRUE(s->out_of_order > 0); /* unordered delivery around losses and delays */
    if (busy)
        ASSERT_TRUE(pr.cli.writable > 0);
    fprintf(stderr,
            "  fault: client drop %" PRIu64 " dup %" PRIu64 " delay %" PRIu64 " corrupt %" PRIu64
            ", server drop %" PRIu64 " corrupt %" PRIu64 "; out of order %u, busy %d\n",
            cs.fault_dropped, cs.fault_duplicated, cs.fault_delayed, cs.fault_corrupted,
            ss.fault_dropped, ss.fault_corrupted, s->out_of_order, busy);
    pair_close(&pr);
}

TEST(fault_injection_is_reproducible_from_the_seed)
{
    /* the same seed drops the same packets: the counters of two identical runs agree */
    uint64_t dropped[2];
    for (int run = 0; run < 2; run++) {
        iwarp_llp_sctp_set_test_timers(20, 40, 200);
        struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 1, .fault = {.seed = 42, .drop_ppm = 200000}};
        struct pair pr;
        pair_up(&pr, &c, &c);
        struct iwarp_llp_sctp_stats st;
        iwarp_llp_sctp_ep_stats(pr.cep, &st);
        dropped[run] = st.fault_dropped + (st.pkts_out << 16);
        pair_close(&pr);
    }
    ASSERT_EQ_U(dropped[0], dropped[1]);
}

TEST(abortive_close_is_seen_by_the_peer_as_down)
{
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 2};
    struct pair pr;
    pair_up(&pr, &c, &c);
    iwarp_llp_sctp_close(pr.cli.a, true);
    pr.cli.a = NULL;
    struct peer *s = &pr.srv.peers[0];
    RUN_UNTIL(s->down, 5000);
    ASSERT_EQ(s->down, 1);
    ASSERT_EQ(s->down_err, IWARP_ERR_SCTP_ASSOC_LOST);
    ASSERT_EQ(pr.cli.down, 0); /* no callback after close */
    ASSERT_EQ(send_bytes(s->a, 0, PPID_DDP, "x", 1), IWARP_ERR_SCTP_ASSOC_LOST);
    pair_close(&pr);
}

TEST(graceful_shutdown_ends_both_sides_with_zero)
{
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 2};
    struct pair pr;
    pair_up(&pr, &c, &c);
    struct peer *s = &pr.srv.peers[0];
    ASSERT_EQ(send_bytes(pr.cli.a, 1, PPID_DDP, "last", 4), 0);
    ASSERT_EQ(iwarp_llp_sctp_shutdown(pr.cli.a), 0);
    RUN_UNTIL(s->down && pr.cli.down, 5000);
    ASSERT_EQ(s->nrx, 1); /* data sent before the shutdown arrives first */
    ASSERT_EQ(s->down_err, 0);
    ASSERT_EQ(pr.cli.down_err, 0);
    pair_close(&pr);
}

static void p_chunk_then_close(void *user, uint16_t sid, uint32_t ppid, bool unordered, void *buf,
                               size_t len)
{
    struct peer *p = user;
    p_chunk(user, sid, ppid, unordered, buf, len);
    ASSERT_TRUE(p->a != NULL); /* no chunk after the close */
    iwarp_llp_sctp_close(p->a, true);
    p->a = NULL;
}

TEST(graceful_shutdown_by_the_accepting_side)
{
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 2};
    struct pair pr;
    pair_up(&pr, &c, &c);
    struct peer *s = &pr.srv.peers[0];
    ASSERT_EQ(send_bytes(s->a, 1, PPID_DDP, "last", 4), 0);
    ASSERT_EQ(iwarp_llp_sctp_shutdown(s->a), 0);
    RUN_UNTIL(s->down && pr.cli.down, 5000);
    ASSERT_EQ(pr.cli.nrx, 1);
    ASSERT_EQ(s->down, 1);
    ASSERT_EQ(pr.cli.down, 1);
    ASSERT_EQ(s->down_err, 0);
    ASSERT_EQ(pr.cli.down_err, 0);
    pair_close(&pr);
}

TEST(close_from_inside_a_callback_is_deferred)
{
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 2};
    struct pair pr;
    pair_up(&pr, &c, &c);
    struct peer *s = &pr.srv.peers[0];
    s->echo = true;
    /* the client closes abortively from its first on_chunk; the other echoes, in the same
     * packets or later ones, must not reach it */
    static struct iwarp_llp_sctp_ops closing_ops;
    closing_ops = peer_ops;
    closing_ops.on_chunk = p_chunk_then_close;
    iwarp_llp_sctp_set_ops(pr.cli.a, &closing_ops, &pr.cli);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(send_bytes(pr.cli.a, 0, PPID_DDP, "abcd", 4), 0);
    RUN_UNTIL(s->down, 5000);
    ASSERT_EQ(s->nrx, 5);
    ASSERT_EQ(pr.cli.nrx, 1);
    ASSERT_TRUE(pr.cli.a == NULL);
    ASSERT_EQ(pr.cli.down, 0);
    ASSERT_EQ(s->down_err, IWARP_ERR_SCTP_ASSOC_LOST);
    pair_close(&pr);
}

TEST(connect_to_a_port_nobody_listens_on_fails)
{
    iwarp_llp_sctp_set_test_timers(20, 40, 100);
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 2};
    struct iwarp_llp_sctp_ep *a = open_ep(&c), *b = open_ep(&c);
    struct sockaddr_storage sa;
    peer_addr(b, &sa);
    struct peer p = {0};
    ASSERT_EQ(iwarp_llp_sctp_connect(a, (struct sockaddr *)&sa, 0, &peer_ops, &p, &p.a), 0);
    ASSERT_EQ(send_bytes(p.a, 0, PPID_DDP, "x", 1), IWARP_ERR_STATE);
    /* b has no listener: it drops datagrams from unknown senders; the INIT times out */
    RUN_UNTIL(p.down, 10000);
    ASSERT_EQ(p.down, 1);
    ASSERT_EQ(p.down_err, IWARP_ERR_UNREACHABLE);
    ASSERT_EQ(p.up, 0);
    iwarp_llp_sctp_close(p.a, false);
    close_all();
}

TEST(hundred_associations_at_once)
{
    enum { N = 100 };
    struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 2};
    struct iwarp_llp_sctp_ep *sep = open_ep(&c), *cep = open_ep(&c);
    struct server *srv = calloc(1, sizeof *srv);
    struct iwarp_llp_sctp_listener *l;
    ASSERT_EQ(iwarp_llp_sctp_listen(sep, 0, 128, srv_accept, srv, &l), 0);
    struct sockaddr_storage sa;
    peer_addr(sep, &sa);
    struct peer *cl = calloc(N, sizeof *cl);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(
            iwarp_llp_sctp_connect(cep, (struct sockaddr *)&sa, 0, &peer_ops, &cl[i], &cl[i].a), 0);
    int up = 0;
    uint64_t end = now_ns() + 20000000000ull;
    while (now_ns() < end) {
        up = 0;
        for (int i = 0; i < N; i++)
            up += cl[i].up;
        if (up == N && srv->n == N)
            break;
        pump_once(5);
    }
    ASSERT_EQ(up, N);
    ASSERT_EQ(srv->n, N);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(cl[i].down, 0);
        ASSERT_EQ(srv->peers[i].up, 1);
        srv->peers[i].echo = true;
        uint32_t v = (uint32_t)i;
        ASSERT_EQ(send_bytes(cl[i].a, (uint16_t)(i % 2), PPID_DDP, &v, 4), 0);
    }
    end = now_ns() + 10000000000ull;
    int got = 0;
    while (now_ns() < end) {
        got = 0;
        for (int i = 0; i < N; i++)
            got += (int)cl[i].nrx;
        if (got == N)
            break;
        pump_once(5);
    }
    ASSERT_EQ(got, N);
    for (int i = 0; i < N; i++) {
        /* each echo came back on its own association */
        ASSERT_EQ(cl[i].nrx, 1);
        uint32_t v;
        memcpy(&v, cl[i].rx[0].buf, 4);
        ASSERT_EQ(v, (uint32_t)i);
        ASSERT_EQ(cl[i].rx[0].sid, i % 2);
    }
    /* which server association belongs to which client: the echoed value says */
    struct peer *sp[N];
    for (int j = 0; j < N; j++) {
        ASSERT_EQ(srv->peers[j].nrx, 1);
        uint32_t v;
        memcpy(&v, srv->peers[j].rx[0].buf, 4);
        ASSERT_TRUE(v < N);
        sp[v] = &srv->peers[j];
    }
    /* half closed by the clients (abortive), half shut down by the server (graceful) */
    for (int i = 0; i < N; i += 2)
        iwarp_llp_sctp_close(cl[i].a, true);
    for (int i = 1; i < N; i += 2)
        ASSERT_EQ(iwarp_llp_sctp_shutdown(sp[i]->a), 0);
    end = now_ns() + 10000000000ull;
    int down = 0;
    while (now_ns() < end) {
        down = 0;
        for (int i = 0; i < N; i++)
            down += sp[i]->down + (i % 2 ? cl[i].down : 1);
        if (down == 2 * N)
            break;
        pump_once(5);
    }
    ASSERT_EQ(down, 2 * N);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(sp[i]->down_err, i % 2 ? 0 : IWARP_ERR_SCTP_ASSOC_LOST);
        if (i % 2) {
            ASSERT_EQ(cl[i].down_err, 0);
            iwarp_llp_sctp_close(cl[i].a, false);
        }
    }
    for (int i = 0; i < N; i++) {
        iwarp_llp_sctp_close(srv->peers[i].a, false);
        peer_free(&srv->peers[i]);
        peer_free(&cl[i]);
    }
    iwarp_llp_sctp_listener_close(l);
    free(cl);
    free(srv);
    close_all();
}

TEST(endpoint_close_with_live_associations_frees_everything)
{
    /* no explicit association close: the endpoints abort and free them; the stack finishes
     * (LSan checks the rest at exit), and a second round starts it again */
    for (int round = 0; round < 2; round++) {
        struct iwarp_llp_sctp_ep_cfg c = {.nstreams = 3};
        struct pair pr;
        pair_up(&pr, &c, &c);
        ASSERT_EQ(send_bytes(pr.cli.a, 2, PPID_DDP, "data", 4), 0);
        RUN_UNTIL(pr.srv.peers[0].nrx == 1, 5000);
        /* a graceful close still in progress when the endpoint goes */
        iwarp_llp_sctp_close(pr.srv.peers[0].a, false);
        peer_free(&pr.srv.peers[0]);
        peer_free(&pr.cli);
        close_all();
        ASSERT_EQ(iwarp_llp_sctp_timers(owner(), now_ns()), UINT64_MAX);
        iwarp_llp_sctp_owner_close(OWNER);
        OWNER = NULL;
    }
}

/* Whether fd is readable now. */
static bool readable(int fd)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    return poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN);
}

/* Two owners share the one usrsctp stack (llp_sctp.h, "Owners"). What usrsctp reports for one
 * owner's association inside the other owner's call, here the loss of B's association when its
 * retransmissions, driven by A's timers() calls, go unanswered, does not run there: it is
 * noted, B's wake fd becomes readable, and B's on_down runs in B's owner_collect(). */
TEST(an_event_noted_in_another_owners_call_is_collected_by_its_owner)
{
    iwarp_llp_sctp_set_test_timers(10, 20, 40);
    struct iwarp_llp_sctp_owner *ob = NULL;
    ASSERT_EQ(iwarp_llp_sctp_owner_open(NULL, &ob), 0);
    struct iwarp_llp_sctp_ep_cfg sc = {.nstreams = 2}, cc = {.nstreams = 2, .owner = ob};
    struct pair pr;
    pair_up(&pr, &sc, &cc); /* pump_once runs B's callbacks in B's on_readable() */
    ASSERT_FALSE(readable(iwarp_llp_sctp_owner_fd(ob)));
    /* from now on only A's timers() drive usrsctp: nobody reads A's socket, so B's chunk is
     * never acknowledged and B's retransmission timer gives up on the association there */
    ASSERT_EQ(send_bytes(pr.cli.a, 1, PPID_DDP, "lost", 4), 0);
    uint64_t end = now_ns() + 10000000000ull;
    while (!readable(iwarp_llp_sctp_owner_fd(ob)) && now_ns() < end) {
        (void)iwarp_llp_sctp_timers(owner(), now_ns());
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    ASSERT_TRUE(readable(iwarp_llp_sctp_owner_fd(ob)));
    ASSERT_EQ(pr.cli.down, 0); /* not in A's call */
    (void)iwarp_llp_sctp_timers(owner(), now_ns());
    ASSERT_EQ(pr.cli.down, 0);
    iwarp_llp_sctp_owner_collect(ob);
    ASSERT_EQ(pr.cli.down, 1);
    ASSERT_EQ(pr.cli.down_err, IWARP_ERR_SCTP_ASSOC_LOST);
    ASSERT_FALSE(readable(iwarp_llp_sctp_owner_fd(ob)));
    iwarp_llp_sctp_owner_collect(ob); /* nothing more */
    ASSERT_EQ(pr.cli.down, 1);
    pair_close(&pr);
    iwarp_llp_sctp_owner_close(ob);
}

/* An allocator that counts what it hands out and can be told to fail. */
struct counting {
    size_t calls, live, fail_at; /* fail_at: the call that fails (1-based; 0: none) */
};

static void *count_calloc(void *user, size_t n, size_t size)
{
    struct counting *c = user;
    if (++c->calls == c->fail_at)
        return NULL;
    c->live++;
    return calloc(n, size);
}

static void count_free(void *user, void *ptr)
{
    struct counting *c = user;
    ASSERT_TRUE(ptr != NULL && c->live > 0);
    c->live--;
    free(ptr);
}

/* Everything llp_sctp allocates for an owner comes from the owner's allocator and goes back to
 * it: the owner, endpoints, listener, associations, paths and buffers, and a message usrsctp
 * delivered in pieces (a sender past RFC 5043 §9's maximum, fragmented by SCTP, and a receive
 * buffer small enough for partial delivery), which chunk_free gives back to it while
 * usrsctp's own message buffers go to libc. */
TEST(allocations_for_an_owner_come_from_its_allocator)
{
    struct counting c = {0};
    struct iwarp_llp_sctp_alloc alloc = {count_calloc, count_free, &c};
    ASSERT_EQ(iwarp_llp_sctp_owner_open(&alloc, &OWNER), 0);
    ASSERT_EQ(c.live, 1u);
    struct iwarp_llp_sctp_ep_cfg sc = {.nstreams = 2, .rcvbuf = 4096};
    struct iwarp_llp_sctp_ep_cfg cc = {.nstreams = 2, .test_msg_max = 16384};
    struct pair pr;
    pair_up(&pr, &sc, &cc);
    size_t up = c.live; /* owner, 2 endpoints and their buffers, listener, 2 associations... */
    ASSERT_TRUE(up >= 10);
    static uint8_t big[8000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    ASSERT_EQ(send_bytes(pr.cli.a, 1, PPID_DDP, big, sizeof big), 0);
    ASSERT_EQ(send_bytes(pr.cli.a, 0, PPID_DDP, "small", 5), 0);
    struct peer *s = &pr.srv.peers[0];
    RUN_UNTIL(s->nrx == 2, 5000);
    ASSERT_EQ(s->nrx, 2u);
    struct iwarp_llp_sctp_stats st;
    iwarp_llp_sctp_ep_stats(pr.sep, &st);
    ASSERT_EQ(st.rx_reassembled, 1u);
    struct rxmsg *m = s->rx[0].len == sizeof big ? &s->rx[0] : &s->rx[1];
    ASSERT_EQ(m->len, sizeof big);
    ASSERT_MEM_EQ(m->buf, big, sizeof big);
    size_t held = c.live;
    iwarp_llp_sctp_chunk_free(m->buf); /* the put-together one: back to the allocator */
    m->buf = NULL;
    ASSERT_EQ(c.live, held - 1);
    struct rxmsg *small = m == &s->rx[0] ? &s->rx[1] : &s->rx[0];
    iwarp_llp_sctp_chunk_free(small->buf); /* usrsctp's: libc's */
    small->buf = NULL;
    ASSERT_EQ(c.live, held - 1);
    pair_close(&pr); /* closes the owner too */
    ASSERT_EQ(c.live, 0u);

    /* no memory: refused, and nothing is left behind */
    for (size_t at = 1; at <= 3; at++) {
        c = (struct counting){.fail_at = at};
        struct iwarp_llp_sctp_owner *o = NULL;
        int rc = iwarp_llp_sctp_owner_open(&alloc, &o);
        if (at == 1) {
            ASSERT_EQ(rc, IWARP_ERR_NOMEM);
            continue;
        }
        ASSERT_EQ(rc, 0);
        struct iwarp_llp_sctp_ep_cfg e = {.owner = o};
        struct iwarp_llp_sctp_ep *ep = NULL;
        ASSERT_EQ(iwarp_llp_sctp_ep_open(&e, &ep), IWARP_ERR_NOMEM); /* the endpoint, its buffer */
        iwarp_llp_sctp_owner_close(o);
        ASSERT_EQ(c.live, 0u);
    }
}

TEST(bad_configurations_are_refused)
{
    struct iwarp_llp_sctp_ep *ep = NULL;
    struct iwarp_llp_sctp_ep_cfg n = {.nstreams = 1};
    ASSERT_EQ(iwarp_llp_sctp_ep_open(&n, &ep), IWARP_ERR_INVAL); /* no owner */
    struct iwarp_llp_sctp_ep_cfg c = {.mtu = 500, .owner = owner()};
    ASSERT_EQ(iwarp_llp_sctp_ep_open(&c, &ep), IWARP_ERR_INVAL);
    struct sockaddr_storage un = {.ss_family = AF_UNIX};
    struct iwarp_llp_sctp_ep_cfg u = {.addr = (struct sockaddr *)&un, .owner = owner()};
    ASSERT_EQ(iwarp_llp_sctp_ep_open(&u, &ep), IWARP_ERR_INVAL);
    /* a taken UDP port */
    struct iwarp_llp_sctp_ep_cfg a = {0};
    struct iwarp_llp_sctp_ep *first = open_ep(&a);
    struct sockaddr_storage sa;
    peer_addr(first, &sa);
    struct iwarp_llp_sctp_ep_cfg b = {.addr = (struct sockaddr *)&sa, .owner = owner()};
    ASSERT_EQ(iwarp_llp_sctp_ep_open(&b, &ep), IWARP_ERR_ADDR);
    /* two listeners on one SCTP port */
    struct iwarp_llp_sctp_listener *l1, *l2;
    struct server srv = {0};
    ASSERT_EQ(iwarp_llp_sctp_listen(first, 0, 4, srv_accept, &srv, &l1), 0);
    ASSERT_EQ(iwarp_llp_sctp_listen(first, 0, 4, srv_accept, &srv, &l2), IWARP_ERR_ADDR);
    close_all();
}

TEST(ipv6_endpoints_associate)
{
    struct sockaddr_in6 lo = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    struct iwarp_llp_sctp_ep_cfg c = {.addr = (struct sockaddr *)&lo, .nstreams = 2};
    struct pair pr;
    pair_up(&pr, &c, &c);
    /* 1500 - 40 - 8 = 1452 path MTU, frag point 1424 */
    ASSERT_EQ(pr.cli.max_seg, 1424 - 2 - IWARP_LLP_SCTP_DEFAULT_HEADROOM);
    pair_close(&pr);
}
