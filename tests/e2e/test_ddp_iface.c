/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DDP-level interface (include/iwarp/ddp.h) over real loopback TCP (MPA) and over DDP over
 * SCTP (RFC 5043; every test runs on both): two contexts, DDP-level QPs connected through the
 * CM. Multi-segment untagged messages on several QNs and tagged messages, RsvdULP carried
 * through (RFC 5041 §4.2, §4.3, §5.4), and the receive errors a ULP can provoke through the
 * API (invalid QN, no buffer, message too long, invalid STag, base and bounds, STag of another
 * stream's PD): the local indication (async event with the RFC 5041 §7.2 cause,
 * iwarp_ddp_query_error's header decoded with wire_ddp), what the peer sees (nothing: no
 * Terminate, its sends still complete; the ULP's own last message reaches it, §7.1) and the
 * ULP's teardown. The errors a peer must forge (MSN, MO, DDP version, short segment)
 * are in test_core_ddp.c.
 *
 * What differs over SCTP: RFC 6581 RTRs do not exist there (§7: either side may send first),
 * so the peer_to_peer refusal, an MPA option, is checked over TCP only; and the server sends
 * its message before the client has sent anything, which MPA forbids (RFC 5044 §7.1.2 rule 4).
 */
#define _GNU_SOURCE
#include "stack_pair.h"

#include <inttypes.h>
#include <stdlib.h>

#include "iwarp/ddp.h"
#include "wire/wire_ddp.h"

enum { NQ = 3, BIG = 200000 };

struct ddp_pair {
    struct sp_side cli, srv;
    struct iwarp_cm_id *cid, *sid;
    struct iwarp_qp *cqp, *sqp;
};

static void ddp_attr(struct sp_side *s, struct iwarp_ddp_qp_init_attr *a)
{
    *a = (struct iwarp_ddp_qp_init_attr){.send_cq = s->cq,
                                         .recv_cq = s->cq,
                                         .num_queues = NQ,
                                         .max_recv_wr = 8,
                                         .max_send_wr = 16,
                                         .max_send_sge = 2,
                                         .max_recv_sge = 2};
}

static void connect_pair(struct ddp_pair *p, enum iwarp_port_space ps)
{
    if (ps == IWARP_PS_SCTP)
        setenv("IWARP_SCTP_RTO_MS", "20,40,400", 1); /* a lost packet costs ms, not seconds */
    sp_side_init(&p->srv, IWARP_PROGRESS_THREAD, 256);
    sp_side_init(&p->cli, IWARP_PROGRESS_THREAD, 256);
    uint16_t port = sp_listen_ps(&p->srv, ps);
    struct sockaddr_in a;
    sp_loopback4(&a, port);
    ASSERT_EQ(iwarp_cm_create_id(p->cli.ch, &p->cid, NULL, ps), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(p->cid, NULL, (struct sockaddr *)&a, 1000), 0);
    sp_expect_ack(&p->cli, NULL, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(iwarp_cm_resolve_route(p->cid, 1000), 0);
    sp_expect_ack(&p->cli, NULL, IWARP_CM_EVENT_ROUTE_RESOLVED);
    struct iwarp_ddp_qp_init_attr qa;
    ddp_attr(&p->cli, &qa);
    ASSERT_EQ(iwarp_ddp_cm_create_qp(p->cid, p->cli.pd, &qa), 0);
    p->cqp = p->cid->qp;
    struct iwarp_conn_param cp = {0};
    if (ps == IWARP_PS_TCP) {
        /* RFC 6581 RTRs are RDMAP messages: refused for a DDP-level QP */
        cp.peer_to_peer = true;
        ASSERT_EQ(iwarp_cm_connect(p->cid, &cp), IWARP_ERR_DDP_RTR);
        cp.peer_to_peer = false;
    }
    ASSERT_EQ(iwarp_cm_connect(p->cid, &cp), 0);
    struct iwarp_cm_event *ev = sp_expect_event(&p->srv, &p->cli, IWARP_CM_EVENT_CONNECT_REQUEST);
    p->sid = ev->id;
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ddp_attr(&p->srv, &qa);
    ASSERT_EQ(iwarp_ddp_cm_create_qp(p->sid, p->srv.pd, &qa), 0);
    p->sqp = p->sid->qp;
    ASSERT_EQ(iwarp_cm_accept(p->sid, NULL), 0);
    sp_expect_ack(&p->srv, &p->cli, IWARP_CM_EVENT_ESTABLISHED);
    sp_expect_ack(&p->cli, &p->srv, IWARP_CM_EVENT_ESTABLISHED);
}

static void close_pair(struct ddp_pair *p)
{
    iwarp_cm_destroy_qp(p->cid);
    iwarp_cm_destroy_qp(p->sid);
    ASSERT_EQ(iwarp_cm_destroy_id(p->cid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(p->sid), 0);
    sp_side_fini(&p->cli);
    sp_side_fini(&p->srv);
}

static void post_recv(struct iwarp_qp *qp, uint32_t qn, uint64_t wr_id, struct iwarp_mr *mr,
                      void *addr, uint32_t len)
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)addr, len, mr->lkey};
    struct iwarp_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(iwarp_ddp_post_recv(qp, qn, &wr, NULL), 0);
}

static int send_untagged(struct iwarp_qp *qp, uint64_t wr_id, uint32_t qn, struct iwarp_mr *mr,
                         void *addr, uint32_t len, const uint8_t rsvd[5])
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)addr, len, mr->lkey};
    struct iwarp_ddp_send_wr wr = {
        .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .send_flags = IWARP_SEND_SIGNALED, .qn = qn};
    if (rsvd)
        memcpy(wr.rsvdulp, rsvd, 5);
    return iwarp_ddp_post_send(qp, &wr, NULL);
}

static int send_tagged(struct iwarp_qp *qp, uint64_t wr_id, struct iwarp_mr *mr, void *addr,
                       uint32_t len, uint32_t stag, uint64_t to, uint8_t rsvd)
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)addr, len, mr->lkey};
    struct iwarp_ddp_send_wr wr = {.wr_id = wr_id,
                                   .sg_list = &sge,
                                   .num_sge = 1,
                                   .send_flags = IWARP_SEND_SIGNALED,
                                   .tagged = true,
                                   .stag = stag,
                                   .to = to};
    wr.rsvdulp[0] = rsvd;
    return iwarp_ddp_post_send(qp, &wr, NULL);
}

static struct iwarp_wc poll_one(struct sp_side *s, struct sp_side *other)
{
    struct iwarp_wc wc;
    sp_poll_n(s, other, &wc, 1);
    return wc;
}

static void multi_segment(enum iwarp_port_space ps)
{
    struct ddp_pair p;
    connect_pair(&p, ps);
    uint8_t *src = malloc(BIG), *dst = calloc(1, 3u * BIG);
    ASSERT_TRUE(src && dst);
    sp_fill(src, BIG, 7);
    struct iwarp_mr *smr = sp_reg(&p.cli, src, BIG, 0);
    struct iwarp_mr *dmr = sp_reg(&p.srv, dst, 3u * BIG, 0);
    /* the verbs calls refuse a DDP-level QP, and the DDP calls a verbs QP's engine */
    struct iwarp_recv_wr vr = {0};
    ASSERT_EQ(iwarp_post_recv(p.sqp, &vr, NULL), IWARP_ERR_DDP_QP_MODE);
    /* several QNs, each its own buffer ring and MSN sequence */
    post_recv(p.sqp, 0, 100, dmr, dst, BIG);
    post_recv(p.sqp, 2, 102, dmr, dst + BIG, 70000);
    post_recv(p.sqp, 0, 101, dmr, dst + BIG + 70000, 16);
    const uint8_t r0[5] = {0x01, 0x02, 0x03, 0x04, 0x05}, r2[5] = {0xFF, 0xEE, 0xDD, 0xCC, 0xBB};
    struct iwarp_wc wc;
    post_recv(p.cqp, 1, 200, smr, src, 64);
    if (ps == IWARP_PS_SCTP) {
        /* RFC 6581 §7: over SCTP the passive side may send first: QN 1 of the client (from
         * past the end of the tagged target below) */
        sp_fill(dst + 3u * BIG - 64, 64, 9);
        ASSERT_EQ(send_untagged(p.sqp, 5, 1, dmr, dst + 3u * BIG - 64, 64, r2), 0);
        wc = poll_one(&p.srv, &p.cli);
        ASSERT_EQ(wc.opcode, IWARP_WC_DDP_SEND);
        wc = poll_one(&p.cli, &p.srv);
        ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
        ASSERT_EQ_U(wc.wr_id, 200u);
        ASSERT_EQ_U(wc.ddp_qn, 1u);
        ASSERT_EQ_U(wc.ddp_msn, 1u);
        ASSERT_EQ_U(wc.byte_len, 64u);
        ASSERT_MEM_EQ(wc.ddp_rsvdulp, r2, 5);
        SP_ASSERT_PATTERN(src, 64, 9);
        post_recv(p.cqp, 1, 200, smr, src, 64);
        sp_fill(src, 64, 7); /* the client's own source again */
    }
    /* over TCP the connector sends first (RFC 5044 §7.1.2 rule 4) */
    ASSERT_EQ(send_untagged(p.cqp, 1, 0, smr, src, BIG, r0), 0);       /* ~4 MULPDU segments */
    ASSERT_EQ(send_untagged(p.cqp, 2, 2, smr, src + 5, 70000, r2), 0); /* QN 2, MSN 1 */
    ASSERT_EQ(send_untagged(p.cqp, 3, 0, smr, src + 9, 16, NULL), 0);  /* QN 0, MSN 2 */
    uint64_t to = (uint64_t)(uintptr_t)(dst + 2u * BIG);
    ASSERT_EQ(send_tagged(p.cqp, 4, smr, src + 100, BIG - 100, dmr->rkey, to, 0xA7), 0);
    for (uint64_t i = 1; i <= 4; i++) {
        wc = poll_one(&p.cli, &p.srv);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        ASSERT_EQ(wc.opcode, IWARP_WC_DDP_SEND);
        ASSERT_EQ_U(wc.wr_id, i); /* in posting order (RFC 5041 §5.3) */
    }
    wc = poll_one(&p.srv, &p.cli);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
    ASSERT_EQ_U(wc.wr_id, 100u);
    ASSERT_EQ_U(wc.byte_len, (uint32_t)BIG);
    ASSERT_EQ_U(wc.ddp_qn, 0u);
    ASSERT_EQ_U(wc.ddp_msn, 1u);
    ASSERT_MEM_EQ(wc.ddp_rsvdulp, r0, 5);
    SP_ASSERT_PATTERN(dst, BIG, 7);
    wc = poll_one(&p.srv, &p.cli);
    ASSERT_EQ_U(wc.wr_id, 102u);
    ASSERT_EQ_U(wc.byte_len, 70000u);
    ASSERT_EQ_U(wc.ddp_qn, 2u);
    ASSERT_EQ_U(wc.ddp_msn, 1u);
    ASSERT_MEM_EQ(wc.ddp_rsvdulp, r2, 5);
    ASSERT_MEM_EQ(dst + BIG, src + 5, 70000);
    wc = poll_one(&p.srv, &p.cli);
    ASSERT_EQ_U(wc.wr_id, 101u);
    ASSERT_EQ_U(wc.ddp_msn, 2u);
    ASSERT_MEM_EQ(dst + BIG + 70000, src + 9, 16);
    wc = poll_one(&p.srv, &p.cli);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_TAGGED_RECV);
    ASSERT_EQ_U(wc.ddp_stag, dmr->rkey);
    ASSERT_EQ(wc.ddp_rsvdulp[0], 0xA7);
    ASSERT_EQ_U(wc.byte_len, (uint32_t)(BIG - 100));
    ASSERT_MEM_EQ(dst + 2u * BIG, src + 100, BIG - 100);
    /* and back: the server sends on QN 1 of the client (its second message there over SCTP) */
    memset(src, 0, 64); /* the client's sends are complete: its source is free */
    ASSERT_EQ(send_untagged(p.sqp, 5, 1, dmr, dst, 64, r2), 0);
    wc = poll_one(&p.srv, &p.cli);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_SEND);
    wc = poll_one(&p.cli, &p.srv);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
    ASSERT_EQ_U(wc.ddp_qn, 1u);
    ASSERT_EQ_U(wc.ddp_msn, ps == IWARP_PS_SCTP ? 2u : 1u);
    ASSERT_MEM_EQ(src, dst, 64);
    /* graceful teardown (RFC 5041 §6.2.1): later sends fail, both sides see DISCONNECTED */
    ASSERT_EQ(iwarp_cm_disconnect(p.cid), 0);
    ASSERT_EQ(send_untagged(p.cqp, 6, 0, smr, src, 4, NULL), IWARP_ERR_STATE);
    sp_expect_ack(&p.cli, &p.srv, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(&p.srv, &p.cli, IWARP_CM_EVENT_DISCONNECTED);
    iwarp_cm_destroy_qp(p.cid);
    iwarp_cm_destroy_qp(p.sid);
    ASSERT_EQ(iwarp_dereg_mr(smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(dmr), 0);
    free(src);
    free(dst);
    close_pair(&p);
}

TEST(multi_segment_tagged_and_untagged_on_several_queues)
{
    multi_segment(IWARP_PS_TCP);
}

#ifdef IWARP_HAVE_SCTP
TEST(multi_segment_tagged_and_untagged_on_several_queues_over_sctp)
{
    multi_segment(IWARP_PS_SCTP);
}
#endif

struct err_case {
    const char *name;
    uint32_t cause;
    enum iwarp_event_type event;
};

/* One error case: the client's message makes the server's DDP fail. */
static void run_error(enum iwarp_port_space ps, int which, const struct err_case *c)
{
    struct ddp_pair p;
    connect_pair(&p, ps);
    static uint8_t cbuf[4096], sbuf[4096];
    sp_fill(cbuf, sizeof cbuf, 3);
    memset(sbuf, 0, sizeof sbuf);
    struct iwarp_mr *cmr = sp_reg(&p.cli, cbuf, sizeof cbuf, 0);
    struct iwarp_mr *smr = sp_reg(&p.srv, sbuf, sizeof sbuf, 0);
    struct iwarp_pd *pd2 = NULL;
    struct iwarp_mr *other = NULL;
    ASSERT_EQ(iwarp_alloc_pd(p.srv.ctx, &pd2), 0);
    ASSERT_EQ(
        iwarp_reg_mr(pd2, sbuf, 64, IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE, &other),
        0);
    post_recv(p.sqp, 0, 10, smr, sbuf, 32);
    uint64_t to = (uint64_t)(uintptr_t)sbuf;
    int rc = 0;
    switch (which) {
    case 0: /* QN 5 of a 3-queue stream */
        rc = send_untagged(p.cqp, 1, 5, cmr, cbuf, 8, NULL);
        break;
    case 1: /* queue 1 has no buffer */
        rc = send_untagged(p.cqp, 1, 1, cmr, cbuf, 8, NULL);
        break;
    case 2: /* 33 octets into a 32-octet buffer */
        rc = send_untagged(p.cqp, 1, 0, cmr, cbuf, 33, NULL);
        break;
    case 3: /* an STag whose key is wrong */
        rc = send_tagged(p.cqp, 1, cmr, cbuf, 8, iwarp_inc_rkey(smr->rkey), to, 0);
        break;
    case 4: /* past the end of the region */
        rc = send_tagged(p.cqp, 1, cmr, cbuf, 8, smr->rkey, to + sizeof sbuf - 4, 0);
        break;
    default: /* an MR of another PD: not associated with this stream */
        rc = send_tagged(p.cqp, 1, cmr, cbuf, 8, other->rkey, to, 0);
        break;
    }
    ASSERT_EQ(rc, 0);
    /* the sender's message completes normally: DDP tells the peer nothing */
    struct iwarp_wc wc = poll_one(&p.cli, &p.srv);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    /* the local indication: the async event with the RFC 5041 §7.2 cause */
    struct iwarp_async_event ev = sp_async(&p.srv);
    if (ev.term_cause != c->cause || ev.event_type != c->event)
        harness_fail(__FILE__, __LINE__, "%s: event %d cause %06x", c->name, ev.event_type,
                     ev.term_cause);
    ASSERT_TRUE(ev.element.qp == p.sqp);
    ASSERT_FALSE(ev.term_from_peer);
    struct iwarp_ddp_error e;
    ASSERT_EQ(iwarp_ddp_query_error(p.sqp, &e), 0);
    ASSERT_EQ_U(e.cause, c->cause);
    struct iwarp_ddp_hdr h;
    ASSERT_EQ(iwarp_ddp_hdr_decode(e.hdr, e.hdr_len, &h), (iwarp_ssize)e.hdr_len);
    ASSERT_EQ(h.dv, 1);
    ASSERT_TRUE(h.last);
    ASSERT_EQ_U(e.seg_len, e.hdr_len + (which == 2 ? 33u : 8u));
    if (which == 0)
        ASSERT_EQ_U(h.qn, 5u);
    if (which >= 3)
        ASSERT_TRUE(h.tagged);
    /* nothing Placed; the posted receive is flushed; no more receives accepted */
    for (size_t i = 0; i < 64; i++)
        ASSERT_EQ(sbuf[i], 0);
    wc = poll_one(&p.srv, &p.cli);
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ_U(wc.wr_id, 10u);
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)sbuf, 8, smr->lkey};
    struct iwarp_recv_wr rwr = {.wr_id = 11, .sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(iwarp_ddp_post_recv(p.sqp, 0, &rwr, NULL), IWARP_ERR_STATE);
    /* the peer sees nothing: no async event; its further sends are dropped silently */
    ASSERT_EQ(send_untagged(p.cqp, 2, 0, cmr, cbuf, 4, NULL), 0);
    wc = poll_one(&p.cli, &p.srv);
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    sp_expect_no_wc(&p.srv, &p.cli);
    struct iwarp_async_event none;
    ASSERT_EQ(iwarp_get_async_event(p.cli.ctx, &none), IWARP_ERR_BUSY);
    /* RFC 5041 §7.1: the ULP may still send one more message (its own error report) */
    post_recv(p.cqp, 2, 20, cmr, cbuf + 1024, 16);
    const uint8_t why[5] = {'E', 'R', 'R', 0, (uint8_t)which};
    ASSERT_EQ(send_untagged(p.sqp, 30, 2, smr, sbuf + 128, 16, why), 0);
    wc = poll_one(&p.cli, &p.srv);
    ASSERT_EQ(wc.opcode, IWARP_WC_DDP_RECV);
    ASSERT_MEM_EQ(wc.ddp_rsvdulp, why, 5);
    /* then the ULP tears the stream down */
    ASSERT_EQ(iwarp_cm_disconnect(p.sid), 0);
    sp_expect_ack(&p.srv, &p.cli, IWARP_CM_EVENT_DISCONNECTED);
    sp_expect_ack(&p.cli, &p.srv, IWARP_CM_EVENT_DISCONNECTED);
    iwarp_cm_destroy_qp(p.cid);
    iwarp_cm_destroy_qp(p.sid);
    ASSERT_EQ(iwarp_dereg_mr(cmr), 0);
    ASSERT_EQ(iwarp_dereg_mr(smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(other), 0);
    ASSERT_EQ(iwarp_dealloc_pd(pd2), 0);
    close_pair(&p);
}

static void receive_errors(enum iwarp_port_space ps)
{
    const struct err_case cases[] = {
        {"invalid qn", SP_CAUSE(1, 2, 0x01), IWARP_EVENT_QP_FATAL},
        {"no buffer", SP_CAUSE(1, 2, 0x02), IWARP_EVENT_QP_FATAL},
        {"too long", SP_CAUSE(1, 2, 0x05), IWARP_EVENT_QP_FATAL},
        {"invalid stag", SP_CAUSE(1, 1, 0x00), IWARP_EVENT_QP_ACCESS_ERR},
        {"bounds", SP_CAUSE(1, 1, 0x01), IWARP_EVENT_QP_ACCESS_ERR},
        {"not associated", SP_CAUSE(1, 1, 0x02), IWARP_EVENT_QP_ACCESS_ERR},
    };
    for (int i = 0; i < 6; i++)
        run_error(ps, i, &cases[i]);
}

TEST(receive_errors_local_indication_and_peer_view)
{
    receive_errors(IWARP_PS_TCP);
}

#ifdef IWARP_HAVE_SCTP
/* The same errors over SCTP: the segment reaches DDP whole (one DATA chunk, RFC 5043 §5.2), so
 * the cause, header and length reported are the same; nothing goes to the peer either (a
 * session Terminate would be an independent teardown, RFC 5041 §6.2). */
TEST(receive_errors_local_indication_and_peer_view_over_sctp)
{
    receive_errors(IWARP_PS_SCTP);
}
#endif
