/* SPDX-License-Identifier: BSD-2-Clause */
/* iwarp_cm_attach_qp and iwarp_cm_migrate_id over loopback TCP: a QP made with
 * iwarp_create_qp, attached to the ids on both sides, connects and carries a Send; detaching
 * it ends the connection and leaves the QP; a CONNECT_REQUEST's id moved to its own channel
 * gets its ESTABLISHED there (what librdmacm's synchronous mode and rdma_migrate_id need);
 * a migrated listener takes its queued requests along; argument and state checks. */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "harness.h"
#include "iwarp/cm.h"
#include "iwarp/errors.h"
#include "iwarp/verbs.h"

#define WAIT_MS 5000

static struct iwarp_ctx *ctx;
static struct iwarp_pd *pd;
static struct iwarp_cq *cq;

static void setup(void)
{
    struct iwarp_ctx_attr a;
    iwarp_ctx_attr_default(&a);
    ASSERT_EQ(iwarp_ctx_create(&a, &ctx), 0);
    ASSERT_EQ(iwarp_alloc_pd(ctx, &pd), 0);
    ASSERT_EQ(iwarp_create_cq(ctx, 64, NULL, NULL, 0, &cq), 0);
}

static void teardown(void)
{
    ASSERT_EQ(iwarp_destroy_cq(cq), 0);
    ASSERT_EQ(iwarp_dealloc_pd(pd), 0);
    ASSERT_EQ(iwarp_ctx_destroy(ctx), 0);
}

static struct iwarp_qp *new_qp(void)
{
    struct iwarp_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IWARP_QPT_RC,
        .sq_sig_all = 1};
    struct iwarp_qp *qp = NULL;
    ASSERT_EQ(iwarp_create_qp(pd, &qa, &qp), 0);
    return qp;
}

static struct iwarp_cm_event *expect(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type t)
{
    struct iwarp_cm_event *ev = NULL;
    int rc = iwarp_cm_get_event_timeout(ch, &ev, WAIT_MS);
    if (rc != 0)
        harness_fail(__FILE__, __LINE__, "no %s: %s", iwarp_cm_event_str(t), iwarp_err_name(rc));
    if (ev->event != t)
        harness_fail(__FILE__, __LINE__, "expected %s, got %s", iwarp_cm_event_str(t),
                     iwarp_cm_event_str(ev->event));
    return ev;
}

static void expect_ack(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type t)
{
    ASSERT_EQ(iwarp_cm_ack_event(expect(ch, t)), 0);
}

/* Nothing queued on ch right now. */
static void expect_none(struct iwarp_cm_channel *ch)
{
    struct iwarp_cm_event *ev = NULL;
    ASSERT_EQ(iwarp_cm_get_event_timeout(ch, &ev, 0), IWARP_ERR_TIMEDOUT);
}

/* A listener on 127.0.0.1 (port picked) on ch; returns the port. */
static uint16_t listen_on(struct iwarp_cm_channel *ch, struct iwarp_cm_id **lid)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(iwarp_cm_create_id(ch, lid, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_bind_addr(*lid, (struct sockaddr *)&a), 0);
    ASSERT_EQ(iwarp_cm_listen(*lid, 4), 0);
    return ntohs(((struct sockaddr_in *)&(*lid)->local_addr)->sin_port);
}

static struct iwarp_cm_id *resolved(struct iwarp_cm_channel *ch, uint16_t port)
{
    struct sockaddr_in d = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct iwarp_cm_id *id = NULL;
    ASSERT_EQ(iwarp_cm_create_id(ch, &id, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000), 0);
    expect_ack(ch, IWARP_CM_EVENT_ADDR_RESOLVED);
    return id;
}

static void poll_one(struct iwarp_wc *wc)
{
    for (int i = 0; i < WAIT_MS; i++) {
        int n = iwarp_poll_cq(cq, 1, wc);
        ASSERT_TRUE(n >= 0);
        if (n == 1)
            return;
        iwarp_cq_wait(cq, 1);
    }
    harness_fail(__FILE__, __LINE__, "no completion");
}

TEST(attached_qps_connect_carry_a_send_and_detach_ends_the_connection)
{
    setup();
    struct iwarp_cm_channel *sch, *cch;
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &sch), 0);
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &cch), 0);
    struct iwarp_cm_id *lid;
    uint16_t port = listen_on(sch, &lid);
    struct iwarp_qp *cqp = new_qp(), *sqp = new_qp();
    struct iwarp_cm_id *cid = resolved(cch, port);
    ASSERT_EQ(iwarp_cm_attach_qp(lid, sqp), IWARP_ERR_STATE); /* a listener connects nothing */
    ASSERT_EQ(iwarp_cm_attach_qp(cid, cqp), 0);
    ASSERT_TRUE(cid->qp == cqp);
    ASSERT_EQ(iwarp_cm_attach_qp(cid, sqp), IWARP_ERR_BUSY); /* one QP per id */

    uint8_t rbuf[64] = {0}, sbuf[64];
    memset(sbuf, 0x5a, sizeof sbuf);
    struct iwarp_mr *rmr, *smr;
    ASSERT_EQ(iwarp_reg_mr(pd, rbuf, sizeof rbuf, IWARP_ACCESS_LOCAL_WRITE, &rmr), 0);
    ASSERT_EQ(iwarp_reg_mr(pd, sbuf, sizeof sbuf, 0, &smr), 0);
    struct iwarp_sge rsge = {.addr = (uintptr_t)rbuf, .length = sizeof rbuf, .lkey = rmr->lkey};
    struct iwarp_recv_wr rwr = {.wr_id = 7, .sg_list = &rsge, .num_sge = 1}, *bad_r;
    ASSERT_EQ(iwarp_post_recv(sqp, &rwr, &bad_r), 0);

    struct iwarp_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
    ASSERT_EQ(iwarp_cm_connect(cid, &p), 0);
    struct iwarp_cm_event *req = expect(sch, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *aid = req->id;
    ASSERT_EQ(iwarp_cm_attach_qp(aid, cqp), IWARP_ERR_BUSY); /* the client's id has it */
    ASSERT_EQ(iwarp_cm_attach_qp(aid, sqp), 0);
    ASSERT_EQ(iwarp_cm_accept(aid, &p), 0);
    ASSERT_EQ(iwarp_cm_ack_event(req), 0);
    expect_ack(sch, IWARP_CM_EVENT_ESTABLISHED);
    expect_ack(cch, IWARP_CM_EVENT_ESTABLISHED);

    struct iwarp_sge ssge = {.addr = (uintptr_t)sbuf, .length = sizeof sbuf, .lkey = smr->lkey};
    struct iwarp_send_wr swr = {.wr_id = 9,
                                .sg_list = &ssge,
                                .num_sge = 1,
                                .opcode = IWARP_WR_SEND},
                         *bad_s;
    ASSERT_EQ(iwarp_post_send(cqp, &swr, &bad_s), 0);
    bool got_send = false, got_recv = false;
    for (int i = 0; i < 2; i++) {
        struct iwarp_wc wc;
        poll_one(&wc);
        ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
        if (wc.wr_id == 9)
            got_send = wc.qp_num == cqp->qp_num;
        if (wc.wr_id == 7)
            got_recv = wc.qp_num == sqp->qp_num && wc.byte_len == sizeof sbuf;
    }
    ASSERT_TRUE(got_send && got_recv);
    ASSERT_MEM_EQ(rbuf, sbuf, sizeof sbuf);

    /* Detached: the connection ends (the peer sees it), the QP stays the application's. */
    ASSERT_EQ(iwarp_cm_attach_qp(cid, NULL), 0);
    ASSERT_TRUE(cid->qp == NULL);
    expect_ack(sch, IWARP_CM_EVENT_DISCONNECTED);
    expect_none(cch); /* no event for the side that let go */
    ASSERT_EQ(iwarp_destroy_qp(cqp), 0);
    ASSERT_EQ(iwarp_destroy_qp(sqp), 0); /* an attached QP detaches itself */
    ASSERT_TRUE(aid->qp == NULL);
    ASSERT_EQ(iwarp_cm_destroy_id(aid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(cid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(lid), 0);
    ASSERT_EQ(iwarp_dereg_mr(rmr), 0);
    ASSERT_EQ(iwarp_dereg_mr(smr), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(sch), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(cch), 0);
    teardown();
}

TEST(a_request_id_migrated_to_its_own_channel_gets_its_events_there)
{
    setup();
    struct iwarp_cm_channel *lch, *own, *cch;
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &lch), 0);
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &own), 0);
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &cch), 0);
    struct iwarp_cm_id *lid;
    uint16_t port = listen_on(lch, &lid);

    /* An id with queued events moves them along: ADDR_RESOLVED waits on cch, then on own. */
    struct sockaddr_in d = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct iwarp_cm_id *cid = NULL, *other = NULL;
    ASSERT_EQ(iwarp_cm_create_id(cch, &other, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_create_id(cch, &cid, NULL, IWARP_PS_TCP), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(other, NULL, (struct sockaddr *)&d, 1000), 0);
    ASSERT_EQ(iwarp_cm_resolve_addr(cid, NULL, (struct sockaddr *)&d, 1000), 0);
    ASSERT_EQ(iwarp_cm_resolve_route(other, 1000), 0);
    ASSERT_EQ(iwarp_cm_migrate_id(cid, own), 0);
    ASSERT_TRUE(cid->channel == own);
    struct iwarp_cm_event *ev = expect(own, IWARP_CM_EVENT_ADDR_RESOLVED);
    ASSERT_TRUE(ev->id == cid);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    expect_none(own);
    ev = expect(cch, IWARP_CM_EVENT_ADDR_RESOLVED); /* the other id's stay, in order */
    ASSERT_TRUE(ev->id == other);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    ev = expect(cch, IWARP_CM_EVENT_ROUTE_RESOLVED);
    ASSERT_TRUE(ev->id == other);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    expect_none(cch);
    ASSERT_EQ(iwarp_cm_destroy_id(other), 0);
    ASSERT_EQ(iwarp_cm_migrate_id(cid, cch), 0); /* and back */

    struct iwarp_qp_init_attr qa = {.send_cq = cq,
                                    .recv_cq = cq,
                                    .cap = {.max_send_wr = 4, .max_recv_wr = 4},
                                    .qp_type = IWARP_QPT_RC};
    ASSERT_EQ(iwarp_cm_create_qp(cid, pd, &qa), 0);
    ASSERT_EQ(iwarp_cm_connect(cid, &(struct iwarp_conn_param){0}), 0);
    struct iwarp_cm_event *req = expect(lch, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *aid = req->id;
    ASSERT_EQ(iwarp_cm_migrate_id(aid, own), 0); /* before its ack: the event stays valid */
    ASSERT_TRUE(aid->channel == own);
    ASSERT_EQ(iwarp_cm_create_qp(aid, pd, &qa), 0);
    ASSERT_EQ(iwarp_cm_accept(aid, NULL), 0);
    ASSERT_EQ(iwarp_cm_ack_event(req), 0);
    ev = expect(own, IWARP_CM_EVENT_ESTABLISHED);
    ASSERT_TRUE(ev->id == aid);
    ASSERT_EQ(iwarp_cm_ack_event(ev), 0);
    expect_none(lch);
    expect_ack(cch, IWARP_CM_EVENT_ESTABLISHED);
    ASSERT_EQ(iwarp_cm_disconnect(cid), 0);
    expect_ack(own, IWARP_CM_EVENT_DISCONNECTED);
    expect_ack(cch, IWARP_CM_EVENT_DISCONNECTED);

    ASSERT_EQ(iwarp_cm_migrate_id(NULL, own), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_cm_migrate_id(aid, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_cm_attach_qp(NULL, NULL), IWARP_ERR_INVAL);
    ASSERT_EQ(iwarp_cm_destroy_channel(lch), IWARP_ERR_BUSY); /* lid is on it */

    iwarp_cm_destroy_qp(aid);
    iwarp_cm_destroy_qp(cid);
    ASSERT_EQ(iwarp_cm_destroy_id(aid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(cid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(lid), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(lch), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(own), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(cch), 0);
    teardown();
}

TEST(a_migrated_listener_takes_its_queued_requests_along)
{
    setup();
    struct iwarp_cm_channel *lch, *own, *cch;
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &lch), 0);
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &own), 0);
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &cch), 0);
    struct iwarp_cm_id *lid;
    uint16_t port = listen_on(lch, &lid);
    struct iwarp_cm_id *cid = resolved(cch, port);
    struct iwarp_qp_init_attr qa = {.send_cq = cq,
                                    .recv_cq = cq,
                                    .cap = {.max_send_wr = 4, .max_recv_wr = 4},
                                    .qp_type = IWARP_QPT_RC};
    ASSERT_EQ(iwarp_cm_create_qp(cid, pd, &qa), 0);
    ASSERT_EQ(iwarp_cm_connect(cid, &(struct iwarp_conn_param){0}), 0);
    /* wait until the request is queued on lch, without taking it */
    struct pollfd pfd = {.fd = lch->fd, .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, WAIT_MS), 1);
    ASSERT_EQ(iwarp_cm_migrate_id(lid, own), 0);
    expect_none(lch);
    struct iwarp_cm_event *req = expect(own, IWARP_CM_EVENT_CONNECT_REQUEST);
    ASSERT_TRUE(req->listen_id == lid);
    ASSERT_TRUE(req->id->channel == own); /* the request's id went along */
    ASSERT_EQ(iwarp_cm_reject(req->id, "no", 2), 0);
    struct iwarp_cm_id *aid = req->id;
    ASSERT_EQ(iwarp_cm_ack_event(req), 0);
    struct iwarp_cm_event *rej = expect(cch, IWARP_CM_EVENT_REJECTED);
    ASSERT_EQ(rej->param.private_data_len, 2);
    ASSERT_EQ(iwarp_cm_ack_event(rej), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(aid), 0);
    iwarp_cm_destroy_qp(cid);
    ASSERT_EQ(iwarp_cm_destroy_id(cid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(lid), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(lch), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(own), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(cch), 0);
    teardown();
}

TEST(a_qp_destroyed_while_its_id_disconnects_still_gives_disconnected)
{
    setup();
    struct iwarp_cm_channel *sch, *cch;
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &sch), 0);
    ASSERT_EQ(iwarp_cm_create_channel(ctx, &cch), 0);
    struct iwarp_cm_id *lid;
    uint16_t port = listen_on(sch, &lid);
    struct iwarp_cm_id *cid = resolved(cch, port);
    struct iwarp_qp_init_attr qa = {.send_cq = cq,
                                    .recv_cq = cq,
                                    .cap = {.max_send_wr = 4, .max_recv_wr = 4},
                                    .qp_type = IWARP_QPT_RC};
    ASSERT_EQ(iwarp_cm_create_qp(cid, pd, &qa), 0);
    ASSERT_EQ(iwarp_cm_connect(cid, &(struct iwarp_conn_param){0}), 0);
    struct iwarp_cm_event *req = expect(sch, IWARP_CM_EVENT_CONNECT_REQUEST);
    struct iwarp_cm_id *aid = req->id;
    ASSERT_EQ(iwarp_cm_create_qp(aid, pd, &qa), 0);
    ASSERT_EQ(iwarp_cm_accept(aid, NULL), 0);
    ASSERT_EQ(iwarp_cm_ack_event(req), 0);
    expect_ack(sch, IWARP_CM_EVENT_ESTABLISHED);
    expect_ack(cch, IWARP_CM_EVENT_ESTABLISHED);
    /* cmtime: rdma_disconnect, rdma_destroy_qp at once, then wait for DISCONNECTED */
    ASSERT_EQ(iwarp_cm_disconnect(cid), 0);
    iwarp_cm_destroy_qp(cid);
    expect_ack(cch, IWARP_CM_EVENT_DISCONNECTED);
    expect_ack(sch, IWARP_CM_EVENT_DISCONNECTED);
    /* without a disconnect first, destroying the QP stays silent on its own side */
    iwarp_cm_destroy_qp(aid);
    expect_none(sch);
    ASSERT_EQ(iwarp_cm_destroy_id(aid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(cid), 0);
    ASSERT_EQ(iwarp_cm_destroy_id(lid), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(sch), 0);
    ASSERT_EQ(iwarp_cm_destroy_channel(cch), 0);
    teardown();
}
