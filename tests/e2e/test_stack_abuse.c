/* SPDX-License-Identifier: BSD-2-Clause */
/* A peer that abuses its connection at full rate, while another connection of the same server
 * context carries verified traffic. The abuser is a raw TCP peer (raw_peer.h: MPA by hand,
 * revision 1, CRC on) that, once accepted, writes a burst of FPDUs as fast as the socket takes
 * them, cycling it until the server ends the stream:
 *   Read Requests beyond IRD     (RFC 5040 §5.2.2: IRD Untagged Buffers on queue 1),
 *   Atomic Requests beyond IRD   (RFC 7306 §5.2.1: the same queue and IRD),
 *   Sends with no receive posted (RFC 5041 §7.1 check 4),
 *   RDMA Writes to random STags  (RFC 5041 §7.1 check 1).
 * The answer is the RFC's: one Terminate with DDP Untagged Buffer error "no buffer available"
 * (1/2/0x02, RFC 5041 §7.2) for the first three, DDP Tagged Buffer error Invalid STag (1/1/0x00)
 * for the last, naming the first offending segment (RFC 5040 §7.1 rule 3, §4.8); then the
 * stream ends. Nothing is placed: a canary MR of the server keeps its octets, no receive
 * completes, no Read or Atomic Request beyond the offending one is answered, and the atomic
 * word counts only the requests before it. The other connection, a libiwarp client of the
 * same server context, keeps writing 16 KiB blocks and checking each on the server all along;
 * every block is intact, and at least MIN_GOOD of them complete during the abuse. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <stdatomic.h>

#include "raw_peer.h"
#include "stack_pair.h"
#include "util/bytes.h"
#include "util/crc32c.h"
#include "wire/wire.h"
#include "wire/wire_ddp.h"
#include "wire/wire_segment.h"
#include "wire/wire_term.h"

#define IRD      4u
#define N_SEGS   2048u /* segments in one burst (cycled until the stream ends) */
#define READ_SZ  4096u /* each Read Request's size */
#define PAYLOAD  256u  /* each Send's or Write's payload */
#define ABUSE_MS 2000u /* the abuse goes on at least this long, every kind at least twice */
#define MIN_GOOD 20u   /* verified blocks of the other connection during the abuse, at least */
#define BLOCK    16384u
#define CANARY   0xA5u

/* ---- the other connection: verified Writes ------------------------------------------------ */

struct good {
    struct sp_rig r;
    pthread_t thread;
    atomic_bool stop;
    atomic_uint verified;
};

/* The client Writes block k (pattern k) into the server's buffer, then Sends k; the server,
 * on the Send (after the Write, RFC 5040 §5.5), checks the block. Until stop. */
static void *good_loop(void *arg)
{
    struct good *g = arg;
    struct sp_rig *r = &g->r;
    uint8_t *sig = r->sbuf + 4u * BLOCK; /* the server's receive buffer for k */
    ASSERT_EQ(sp_post_recv(r->pair.srv.qp, 0, sig, 8, r->smr->lkey), 0);
    for (uint32_t k = 1; !atomic_load(&g->stop); k++) {
        uint32_t at = (k % 4u) * BLOCK;
        sp_fill(r->cbuf, BLOCK, k);
        memcpy(r->cbuf + BLOCK, &k, sizeof k);
        ASSERT_EQ(sp_post(r->pair.cli.qp, k, IWARP_WR_RDMA_WRITE, 0, r->cbuf, BLOCK, r->cmr->lkey,
                          r->pair.cli.peer.addr + at, r->pair.cli.peer.rkey),
                  0);
        ASSERT_EQ(sp_post(r->pair.cli.qp, k, IWARP_WR_SEND, 0, r->cbuf + BLOCK, sizeof k,
                          r->cmr->lkey, 0, 0),
                  0);
        struct iwarp_wc wc = sp_poll_ok(&r->srv, &r->cli, IWARP_WC_RECV);
        ASSERT_EQ(wc.byte_len, sizeof k);
        uint32_t got;
        memcpy(&got, sig, sizeof got);
        ASSERT_EQ_U(got, k);
        SP_ASSERT_PATTERN(r->sbuf + at, BLOCK, k);
        ASSERT_EQ(sp_post_recv(r->pair.srv.qp, k, sig, 8, r->smr->lkey), 0);
        sp_poll_ok(&r->cli, &r->srv, IWARP_WC_RDMA_WRITE);
        sp_poll_ok(&r->cli, &r->srv, IWARP_WC_SEND);
        atomic_fetch_add(&g->verified, 1);
    }
    return NULL;
}

/* ---- the abuser ------------------------------------------------------------------------------ */

enum abuse { READS = 0, ATOMICS, SENDS, WRITES, N_ABUSE };

static const char *const abuse_name[N_ABUSE] = {
    "Read Requests beyond IRD", "Atomic Requests beyond IRD", "Sends without a receive",
    "Writes to random STags"};

/* The abuse side of the server: its own channel, PD and CQ on the good server's context, a
 * listener, a Read source, an atomic word and a canary nobody is told of. */
struct abuse_side {
    struct sp_side s;
    uint16_t port;
    uint8_t *src, *canary;
    uint64_t *word;
    struct iwarp_mr *src_mr, *canary_mr, *word_mr;
};

/* One FPDU with CRC (RFC 5044 §4.1, §4.4) around the segment m (+ payload) at out; returns its
 * length. */
static size_t fpdu(uint8_t *out, const struct iwarp_wire_msg *m, const uint8_t *payload,
                   size_t payload_len)
{
    iwarp_ssize n = iwarp_wire_segment_encode(out + 2, 128u + PAYLOAD, m, payload, payload_len);
    ASSERT_TRUE(n > 0);
    iwarp_store_be16(out, (uint16_t)n);
    size_t len = 2u + (size_t)n;
    while (len % 4u)
        out[len++] = 0;
    iwarp_store_le32(out + len, iwarp_crc32c(out, len));
    return len + 4u;
}

/* The burst of kind a: N_SEGS segments, the first IRD of them legitimate for the Requests. */
static size_t burst(enum abuse a, const struct abuse_side *as, uint8_t *out, uint32_t *rng)
{
    static uint8_t pay[PAYLOAD];
    memset(pay, 0x5a, sizeof pay);
    size_t len = 0;
    for (uint32_t k = 1; k <= N_SEGS; k++) {
        struct iwarp_wire_msg m = {.last = true, .msn = k};
        size_t pl = 0;
        switch (a) {
        case READS:
            m.opcode = IWARP_RDMAP_OP_READ_REQ;
            /* the sink TO numbers the request: a Response tells which one it answers */
            m.body.read_req = (struct iwarp_rdmap_read_req){.sink_stag = 0x1234u,
                                                            .sink_to = (uint64_t)k * READ_SZ,
                                                            .size = READ_SZ,
                                                            .src_stag = as->src_mr->rkey,
                                                            .src_to = (uintptr_t)as->src};
            break;
        case ATOMICS:
            m.opcode = IWARP_RDMAP_OP_ATOMIC_REQ;
            m.body.atomic_req = (struct iwarp_rdmap_atomic_req){.aopcode = IWARP_ATOMIC_FETCH_ADD,
                                                                .req_id = k,
                                                                .stag = as->word_mr->rkey,
                                                                .to = (uintptr_t)as->word,
                                                                .add_swap = 1};
            break;
        case SENDS:
            m.opcode = IWARP_RDMAP_OP_SEND;
            pl = PAYLOAD;
            break;
        default: /* WRITES: any STag the server did not advertise */
            m.opcode = IWARP_RDMAP_OP_WRITE;
            do
                m.stag = harness_xorshift32(rng);
            while (m.stag == as->src_mr->rkey || m.stag == as->canary_mr->rkey ||
                   m.stag == as->word_mr->rkey);
            m.to = (uint64_t)harness_xorshift32(rng) << 12;
            m.msn = 0;
            pl = PAYLOAD;
            break;
        }
        len += fpdu(out + len, &m, pl ? pay : NULL, pl);
    }
    return len;
}

/* What the raw peer saw coming back. */
struct seen {
    bool term;
    struct iwarp_term t;
    uint8_t term_ddp[IWARP_DDP_UNTAGGED_HDR_LEN]; /* t.ddp_hdr points here */
    uint32_t read_resp_max;                       /* highest request a Read Response answered */
    uint32_t atomic_resp_max;                     /* highest Request Identifier answered */
    uint64_t sent;                                /* octets the abuser wrote */
};

/* Deframe what is in rx[0, *have) (CRC on, no markers), noting Terminates and answers. */
static void take_fpdus(uint8_t *rx, size_t *have, struct seen *sn)
{
    size_t off = 0;
    while (*have - off >= 2u) {
        size_t ulen = (size_t)rx[off] << 8 | rx[off + 1u];
        size_t total = 2u + ulen;
        total += (4u - total % 4u) % 4u;
        total += 4u;
        if (*have - off < total)
            break;
        const uint8_t *u = rx + off + 2u;
        ASSERT_EQ_U(iwarp_load_le32(rx + off + total - 4u), iwarp_crc32c(rx + off, total - 4u));
        struct iwarp_wire_segment s;
        ASSERT_EQ(iwarp_wire_segment_decode(u, ulen, &s, NULL), 0);
        if (s.opcode == IWARP_RDMAP_OP_TERMINATE) {
            ASSERT_FALSE(sn->term); /* one Terminate */
            sn->term = true;
            sn->t = s.body.term;
            ASSERT_TRUE(sn->t.ddp_hdr != NULL);
            memcpy(sn->term_ddp, sn->t.ddp_hdr, sn->t.ddp_hdr_len);
            sn->t.ddp_hdr = sn->term_ddp;
        } else if (s.opcode == IWARP_RDMAP_OP_READ_RESP) {
            ASSERT_FALSE(sn->term); /* nothing after the Terminate */
            uint32_t req = (uint32_t)(s.ddp.to / READ_SZ);
            if (req > sn->read_resp_max)
                sn->read_resp_max = req;
        } else if (s.opcode == IWARP_RDMAP_OP_ATOMIC_RESP) {
            ASSERT_FALSE(sn->term);
            if (s.body.atomic_resp.req_id > sn->atomic_resp_max)
                sn->atomic_resp_max = s.body.atomic_resp.req_id;
        } else {
            harness_fail(__FILE__, __LINE__, "the abuser got RDMAP opcode %u", s.opcode);
        }
        off += total;
    }
    memmove(rx, rx + off, *have - off);
    *have -= off;
}

/* Write the burst (cycled) as fast as fd takes it, and read what comes back, until the stream
 * ends. */
static void blast(int fd, const uint8_t *b, size_t len, struct seen *sn)
{
    sp_set_nonblock(fd);
    static uint8_t rx[1u << 20];
    size_t have = 0, off = 0;
    bool can_write = true;
    struct deadline dl = deadline_in_ms(SP_WAIT_MS);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = (short)(POLLIN | (can_write ? POLLOUT : 0))};
        ASSERT_TRUE(poll(&p, 1, 10) >= 0);
        if (p.revents & POLLOUT) {
            ssize_t k = send(fd, b + off, len - off, MSG_NOSIGNAL);
            if (k > 0) {
                sn->sent += (uint64_t)k;
                off = (off + (size_t)k) % len;
            } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                can_write = false; /* reset or shut: read what is left */
            }
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ASSERT_TRUE(have < sizeof rx);
            ssize_t k = recv(fd, rx + have, sizeof rx - have, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno == ECONNRESET))
                return;
            if (k > 0) {
                have += (size_t)k;
                take_fpdus(rx, &have, sn);
            }
        }
        if (deadline_passed(&dl))
            DEADLINE_FAIL(&dl, "the abused stream to end (%llu octets written, Terminate %s)",
                          (unsigned long long)sn->sent, sn->term ? "seen" : "not seen");
    }
}

/* One abusive connection of kind a against as; checks the answer and that nothing was placed. */
static void abuse_once(struct abuse_side *as, enum abuse a, uint32_t *rng, uint8_t *b)
{
    int fd = raw_connect(as->port);
    uint8_t req[RAW_MPA_REQUEST_LEN];
    harness_hex(RAW_MPA_REQUEST, req, sizeof req);
    ASSERT_EQ(send(fd, req, sizeof req, 0), (ssize_t)sizeof req);
    struct iwarp_cm_event *ev = sp_expect_event(&as->s, NULL, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct sp_end e = {.id = ev->id};
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    struct sp_cfg cfg = {.cap = {.max_send_wr = 4, .max_recv_wr = 4},
                         .rdmap_ext = a == ATOMICS ? IWARP_RDMAP_EXT_ATOMICS : 0u};
    sp_create_qp(&as->s, &e, &cfg, NULL); /* no receive posted */
    struct iwarp_conn_param ap = {.responder_resources = IRD, .initiator_depth = IRD};
    ASSERT_EQ(iwarp_cm_accept(e.id, &ap), 0);
    ev = sp_expect_event(&as->s, NULL, IWARP_CM_EVENT_ESTABLISHED);
    /* a revision 1 Request negotiates no IRD/ORD (RFC 6581 §9.1 needs revision 2): the QP
     * takes the application's, as reported and as queried */
    ASSERT_EQ(ev->param.responder_resources, IRD);
    ASSERT_EQ(ev->param.initiator_depth, IRD);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    struct iwarp_qp_attr qa;
    ASSERT_EQ(iwarp_query_qp(e.qp, &qa), 0);
    ASSERT_EQ(qa.max_dest_rd_atomic, IRD);
    ASSERT_EQ(qa.max_rd_atomic, IRD);
    uint8_t rep[RAW_MPA_REQUEST_LEN];
    read_exact(fd, rep, sizeof rep);
    ASSERT_EQ(rep[16] & 0x20u, 0); /* accepted (RFC 5044 §7.1.1: R clear) */

    *as->word = 0;
    size_t len = burst(a, as, b, rng);
    struct seen sn = {0};
    blast(fd, b, len, &sn);
    close(fd);

    /* the RFC's answer: one Terminate naming the first offending segment */
    ASSERT_TRUE(sn.term);
    const struct iwarp_term_ctrl *c = &sn.t.ctrl;
    ASSERT_EQ(c->cause.layer, IWARP_TERM_LAYER_DDP);
    ASSERT_TRUE(sn.t.ddp_hdr_len > 0);
    uint32_t cause, bad_msn = 0;
    if (a == WRITES) {
        ASSERT_EQ(c->cause.etype, IWARP_TERM_DDP_ETYPE_TAGGED);
        ASSERT_EQ(c->cause.ecode, IWARP_TERM_DDP_T_INVALID_STAG);
        ASSERT_TRUE(sn.t.ddp.tagged);
        cause = SP_CAUSE(1, 1, 0x00);
    } else {
        ASSERT_EQ(c->cause.etype, IWARP_TERM_DDP_ETYPE_UNTAGGED);
        ASSERT_EQ(c->cause.ecode, IWARP_TERM_DDP_U_NO_BUFFER);
        ASSERT_FALSE(sn.t.ddp.tagged);
        ASSERT_EQ(sn.t.ddp.qn, a == SENDS ? IWARP_QN_SEND : IWARP_QN_READ_REQ);
        bad_msn = sn.t.ddp.msn;
        cause = SP_CAUSE(1, 2, 0x02);
    }
    switch (a) {
    case READS:
        /* beyond IRD: at least IRD Requests were taken first, none after the offending one
         * was answered. Each burst reaches the server far faster than the Responses leave, so
         * in practice the offending one is IRD + 1 (a looser bound would hide an IRD taken
         * from elsewhere: it was 16, the MPA default, before the application's was used). */
        ASSERT_TRUE(bad_msn > IRD);
        ASSERT_TRUE(sn.read_resp_max < bad_msn);
        break;
    case ATOMICS:
        ASSERT_TRUE(bad_msn > IRD);
        ASSERT_TRUE(sn.atomic_resp_max < bad_msn);
        ASSERT_TRUE(*as->word < bad_msn); /* only the requests before it were performed */
        break;
    case SENDS:
        ASSERT_EQ(bad_msn, 1); /* the very first: no receive was ever posted */
        break;
    default:
        break;
    }
    /* the server's side: the fatal error with that cause, the connection gone */
    struct iwarp_async_event ae = sp_async(&as->s);
    ASSERT_TRUE(ae.element.qp == e.qp);
    ASSERT_EQ_U(ae.term_cause, cause);
    ASSERT_FALSE(ae.term_from_peer);
    sp_expect_ack(&as->s, NULL, IWARP_CM_EVENT_DISCONNECTED);
    struct iwarp_wc wc;
    ASSERT_EQ(iwarp_poll_cq(as->s.cq, 1, &wc), 0); /* no receive was posted, none completed */
    /* nothing placed: the canary and the Read source are as they were */
    for (size_t i = 0; i < 65536u; i++)
        if (as->canary[i] != CANARY)
            harness_fail(__FILE__, __LINE__, "%s: canary octet %zu is %#x", abuse_name[a], i,
                         as->canary[i]);
    SP_ASSERT_PATTERN(as->src, READ_SZ, 77);
    printf("%-27s %8llu octets at full rate: Terminate %u/%u/0x%02x for MSN %u\n", abuse_name[a],
           (unsigned long long)sn.sent, c->cause.layer, c->cause.etype, c->cause.ecode, bad_msn);
    sp_end_destroy(&e);
}

TEST(abusers_get_the_rfc_answer_and_the_other_connection_is_unaffected)
{
    struct good g;
    memset(&g, 0, sizeof g);
    sp_side_init(&g.r.srv, IWARP_PROGRESS_THREAD, 64);
    sp_side_init(&g.r.cli, IWARP_PROGRESS_THREAD, 64);
    struct sp_cfg gcfg = {.cap = {.max_send_wr = 8, .max_recv_wr = 8}, .sq_sig_all = 1};
    sp_rig_connect(&g.r, 5u * BLOCK, &gcfg);

    /* the abuse side, on the same server context */
    struct abuse_side as;
    memset(&as, 0, sizeof as);
    struct iwarp_ctx_attr unused;
    iwarp_ctx_attr_default(&unused);
    sp_side_init_attr(&as.s, &g.r.srv, &unused, 16, false);
    as.port = sp_listen(&as.s);
    as.src = malloc(READ_SZ);
    as.canary = malloc(65536);
    as.word = aligned_alloc(4096, 4096);
    ASSERT_TRUE(as.src && as.canary && as.word);
    sp_fill(as.src, READ_SZ, 77);
    memset(as.canary, CANARY, 65536);
    as.src_mr = sp_reg(&as.s, as.src, READ_SZ, 0);
    as.canary_mr = sp_reg(&as.s, as.canary, 65536, 0);
    as.word_mr = sp_reg(&as.s, as.word, 4096, IWARP_ACCESS_REMOTE_ATOMIC);
    uint8_t *b = malloc((size_t)N_SEGS * (2u + 128u + PAYLOAD + 8u));
    ASSERT_TRUE(b != NULL);

    ASSERT_EQ(pthread_create(&g.thread, NULL, good_loop, &g), 0);
    WAIT_UNTIL(atomic_load(&g.verified) > 0, SP_WAIT_MS, "the other connection's first block");
    uint32_t rng = 0x5eed1234u;
    unsigned before = atomic_load(&g.verified);
    uint64_t t0 = sp_now_ms();
    unsigned rounds = 0;
    struct deadline abuse_for = deadline_in_ms(ABUSE_MS);
    while (rounds < 2u * N_ABUSE || !deadline_passed(&abuse_for)) {
        abuse_once(&as, (enum abuse)(rounds % N_ABUSE), &rng, b);
        rounds++;
    }
    unsigned during = atomic_load(&g.verified) - before;
    uint64_t ms = sp_now_ms() - t0;
    atomic_store(&g.stop, true);
    ASSERT_EQ(pthread_join(g.thread, NULL), 0);
    printf("%u abusive connections in %llu ms; the other connection verified %u blocks of %u "
           "octets meanwhile (%.0f/s)\n",
           rounds, (unsigned long long)ms, during, BLOCK, 1000.0 * during / (double)ms);
    if (during < MIN_GOOD)
        harness_fail(__FILE__, __LINE__, "the other connection verified %u blocks (< %u)", during,
                     MIN_GOOD);
    /* the context had no other async event: the good connection never failed */
    struct iwarp_async_event ae;
    ASSERT_EQ(iwarp_get_async_event(g.r.srv.ctx, &ae), IWARP_ERR_BUSY);

    free(b);
    ASSERT_EQ(iwarp_dereg_mr(as.src_mr), 0);
    ASSERT_EQ(iwarp_dereg_mr(as.canary_mr), 0);
    ASSERT_EQ(iwarp_dereg_mr(as.word_mr), 0);
    free(as.src);
    free(as.canary);
    free(as.word);
    sp_side_fini(&as.s);
    sp_rig_down(&g.r);
}
