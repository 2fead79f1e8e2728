/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The drop-in librdmacm.so.1 through rdma-core's own headers, in one process: event channels
 * (blocking, a pollable fd, O_NONBLOCK's EAGAIN), every event's fields (ids, listen_id,
 * verbs, addresses and ports, private data both ways, IRD/ORD swapped in CONNECT_REQUEST,
 * statuses), QPs made by rdma_create_qp with the CQs librdmacm makes and their state, a Send
 * through the rdma_verbs.h helpers, reject, a refused connection, IPv6, synchronous endpoints
 * (rdma_getaddrinfo, rdma_create_ep, rdma_get_request), rdma_migrate_id, rdma_init_qp_attr,
 * and bad arguments and what iWARP lacks (errno as rdma-core gives it on an iWARP device).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "harness.h"

#define WAIT_MS 10000

/* The next event on ch within WAIT_MS, which must be of type want. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
    struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
    if (poll(&pfd, 1, WAIT_MS) != 1)
        harness_fail(__FILE__, __LINE__, "no %s within %d ms", rdma_event_str(want), WAIT_MS);
    struct rdma_cm_event *ev = NULL;
    ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
    if (ev->event != want)
        harness_fail(__FILE__, __LINE__, "expected %s, got %s (status %d)", rdma_event_str(want),
                     rdma_event_str(ev->event), ev->status);
    return ev;
}

static void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
    ASSERT_EQ(rdma_ack_cm_event(expect(ch, want)), 0);
}

static void set_nonblock(int fd, bool on)
{
    int fl = fcntl(fd, F_GETFL);
    ASSERT_TRUE(fl >= 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK), 0);
}

static void loopback(struct sockaddr_storage *ss, bool v6, uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
    }
}

/* A listener on loopback (port picked); returns its port (host order). */
static uint16_t listen_on(struct rdma_event_channel *ch, struct rdma_cm_id **lid, bool v6,
                          void *context)
{
    struct sockaddr_storage a;
    loopback(&a, v6, 0);
    ASSERT_EQ(rdma_create_id(ch, lid, context, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_bind_addr(*lid, (struct sockaddr *)&a), 0);
    ASSERT_TRUE((*lid)->verbs != NULL); /* the device of lo owns the address */
    ASSERT_EQ(rdma_listen(*lid, 4), 0);
    uint16_t port = ntohs(rdma_get_src_port(*lid));
    ASSERT_NE(port, 0);
    return port;
}

/* A client id on ch, resolved (address and route) to loopback:port. */
static struct rdma_cm_id *resolved(struct rdma_event_channel *ch, bool v6, uint16_t port)
{
    struct rdma_cm_id *id;
    struct sockaddr_storage d;
    loopback(&d, v6, port);
    ASSERT_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000), 0);
    struct rdma_cm_event *ev = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_TRUE(ev->id == id);
    ASSERT_EQ(ev->status, 0);
    ASSERT_EQ(rdma_ack_cm_event(ev), 0);
    ASSERT_TRUE(id->verbs != NULL);
    ASSERT_EQ(id->verbs->device->transport_type, IBV_TRANSPORT_IWARP);
    ASSERT_EQ(id->route.addr.dst_addr.sa_family, v6 ? AF_INET6 : AF_INET);
    ASSERT_EQ(ntohs(rdma_get_dst_port(id)), port);
    ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
    expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    return id;
}

static struct ibv_qp_init_attr qp_attr(void)
{
    struct ibv_qp_init_attr a = {
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 1};
    return a;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    ASSERT_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
    return a.qp_state;
}

TEST(channel_fd_blocking_nonblocking_and_event_strings)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    ASSERT_TRUE(ch != NULL);
    ASSERT_TRUE(ch->fd >= 0);
    struct rdma_cm_event *ev = NULL;
    set_nonblock(ch->fd, true);
    errno = 0;
    ASSERT_EQ(rdma_get_cm_event(ch, &ev), -1);
    ASSERT_EQ(errno, EAGAIN);
    struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, 0), 0); /* nothing pending: not readable */

    struct rdma_cm_id *id;
    struct sockaddr_storage d;
    loopback(&d, false, 9);
    ASSERT_EQ(rdma_create_id(ch, &id, &d, RDMA_PS_TCP), 0);
    ASSERT_TRUE(id->context == &d);
    ASSERT_TRUE(id->channel == ch);
    ASSERT_EQ(id->ps, RDMA_PS_TCP);
    ASSERT_EQ(id->qp_type, IBV_QPT_RC);
    ASSERT_TRUE(id->verbs == NULL); /* no address yet */
    ASSERT_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 100), 0);
    ASSERT_EQ(poll(&pfd, 1, WAIT_MS), 1); /* readable while an event waits */
    ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
    ASSERT_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_TRUE(ev->id == id && ev->listen_id == NULL);
    ASSERT_EQ(rdma_ack_cm_event(ev), 0);
    ASSERT_EQ(rdma_get_cm_event(ch, &ev), -1);
    ASSERT_EQ(errno, EAGAIN);

    /* blocking again: the event is there when the call returns */
    set_nonblock(ch->fd, false);
    ASSERT_EQ(rdma_resolve_route(id, 100), 0);
    ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
    ASSERT_EQ(ev->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
    ASSERT_EQ(id->route.num_paths, 0); /* iWARP: no path records */
    ASSERT_EQ(rdma_ack_cm_event(ev), 0);

    ASSERT_STR_EQ(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED");
    ASSERT_STR_EQ(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
    ASSERT_STR_EQ(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT");
    ASSERT_EQ(rdma_destroy_id(id), 0);
    rdma_destroy_event_channel(ch);
}

/* Connect, accept and talk over family v6; private data and IRD/ORD both ways. */
static void connect_accept_send_disconnect(bool v6)
{
    struct rdma_event_channel *sch = rdma_create_event_channel(),
                              *cch = rdma_create_event_channel();
    ASSERT_TRUE(sch && cch);
    struct rdma_cm_id *lid;
    int lctx;
    uint16_t port = listen_on(sch, &lid, v6, &lctx);
    struct rdma_cm_id *cid = resolved(cch, v6, port);

    struct ibv_qp_init_attr ca = qp_attr();
    ASSERT_EQ(rdma_create_qp(cid, NULL, &ca), 0); /* the id's PD and CQs librdmacm makes */
    ASSERT_TRUE(cid->qp && cid->pd && cid->send_cq && cid->recv_cq);
    ASSERT_TRUE(cid->send_cq_channel && cid->recv_cq_channel);
    ASSERT_TRUE(ca.send_cq == cid->send_cq && ca.recv_cq == cid->recv_cq);
    ASSERT_TRUE(cid->send_cq->cq_context == cid);
    char hello[] = "hello", world[] = "world!";
    struct rdma_conn_param cp = {.private_data = hello,
                                 .private_data_len = sizeof hello,
                                 .responder_resources = 3,
                                 .initiator_depth = 2};
    ASSERT_EQ(rdma_connect(cid, &cp), 0);

    struct rdma_cm_event *req = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
    struct rdma_cm_id *aid = req->id;
    ASSERT_TRUE(req->listen_id == lid);
    ASSERT_TRUE(aid != lid && aid->context == &lctx && aid->channel == sch);
    ASSERT_TRUE(aid->verbs == lid->verbs);
    ASSERT_EQ(aid->ps, RDMA_PS_TCP);
    ASSERT_EQ(req->status, 0);
    ASSERT_EQ(req->param.conn.private_data_len, sizeof hello);
    ASSERT_MEM_EQ(req->param.conn.private_data, hello, sizeof hello);
    ASSERT_EQ(req->param.conn.responder_resources, 2); /* the peer's ORD: what we may answer */
    ASSERT_EQ(req->param.conn.initiator_depth, 3);     /* the peer's IRD */
    ASSERT_EQ(ntohs(rdma_get_src_port(aid)), port);
    ASSERT_EQ(aid->route.addr.dst_addr.sa_family, v6 ? AF_INET6 : AF_INET);

    struct ibv_pd *spd = ibv_alloc_pd(aid->verbs);
    ASSERT_TRUE(spd != NULL);
    struct ibv_qp_init_attr sa = qp_attr();
    ASSERT_EQ(rdma_create_qp(aid, spd, &sa), 0);
    ASSERT_TRUE(aid->pd == spd);
    char rbuf[64] = {0};
    struct ibv_mr *rmr = rdma_reg_msgs(aid, rbuf, sizeof rbuf);
    ASSERT_TRUE(rmr != NULL);
    ASSERT_EQ(rdma_post_recv(aid, (void *)7, rbuf, sizeof rbuf, rmr), 0);
    struct rdma_conn_param ap = {.private_data = world,
                                 .private_data_len = sizeof world,
                                 .responder_resources = 2,
                                 .initiator_depth = 3};
    ASSERT_EQ(rdma_accept(aid, &ap), 0);
    ASSERT_EQ(rdma_ack_cm_event(req), 0);

    struct rdma_cm_event *est = expect(cch, RDMA_CM_EVENT_ESTABLISHED);
    ASSERT_TRUE(est->id == cid);
    ASSERT_EQ(est->param.conn.private_data_len, sizeof world);
    ASSERT_MEM_EQ(est->param.conn.private_data, world, sizeof world);
    ASSERT_EQ(rdma_ack_cm_event(est), 0);
    expect_ack(sch, RDMA_CM_EVENT_ESTABLISHED);
    ASSERT_EQ(qp_state(cid->qp), IBV_QPS_RTS);
    ASSERT_EQ(qp_state(aid->qp), IBV_QPS_RTS);
    ASSERT_NE(rdma_get_src_port(cid), 0);
    ASSERT_EQ(rdma_get_dst_port(aid), rdma_get_src_port(cid));

    /* a Send through rdma_verbs.h's helpers, the client first (iWARP) */
    char msg[] = "ping over the drop-in";
    struct ibv_mr *smr = rdma_reg_msgs(cid, msg, sizeof msg);
    ASSERT_TRUE(smr != NULL);
    ASSERT_EQ(rdma_post_send(cid, (void *)9, msg, sizeof msg, smr, 0), 0);
    struct ibv_wc wc;
    ASSERT_EQ(rdma_get_send_comp(cid, &wc), 1);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 9u);
    ASSERT_EQ(rdma_get_recv_comp(aid, &wc), 1);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 7u);
    ASSERT_EQ(wc.byte_len, sizeof msg);
    ASSERT_MEM_EQ(rbuf, msg, sizeof msg);

    ASSERT_EQ(rdma_disconnect(cid), 0);
    expect_ack(cch, RDMA_CM_EVENT_DISCONNECTED);
    expect_ack(sch, RDMA_CM_EVENT_DISCONNECTED);
    ASSERT_EQ(qp_state(cid->qp), IBV_QPS_ERR);
    ASSERT_EQ(rdma_disconnect(aid), 0); /* the peer closed first: nothing left to do */

    ASSERT_EQ(rdma_dereg_mr(smr), 0);
    ASSERT_EQ(rdma_dereg_mr(rmr), 0);
    rdma_destroy_qp(cid);
    ASSERT_TRUE(cid->qp == NULL && cid->send_cq == NULL && cid->recv_cq_channel == NULL);
    rdma_destroy_qp(aid);
    ASSERT_EQ(ibv_dealloc_pd(spd), 0);
    ASSERT_EQ(rdma_destroy_id(cid), 0);
    ASSERT_EQ(rdma_destroy_id(aid), 0);
    ASSERT_EQ(rdma_destroy_id(lid), 0);
    rdma_destroy_event_channel(sch);
    rdma_destroy_event_channel(cch);
}

TEST(connect_accept_send_disconnect_ipv4)
{
    connect_accept_send_disconnect(false);
}

TEST(connect_accept_send_disconnect_ipv6)
{
    connect_accept_send_disconnect(true);
}

TEST(reject_with_private_data_and_a_refused_connection)
{
    struct rdma_event_channel *sch = rdma_create_event_channel(),
                              *cch = rdma_create_event_channel();
    struct rdma_cm_id *lid;
    uint16_t port = listen_on(sch, &lid, false, NULL);
    struct rdma_cm_id *cid = resolved(cch, false, port);
    struct ibv_qp_init_attr ca = qp_attr();
    ASSERT_EQ(rdma_create_qp(cid, NULL, &ca), 0);
    struct rdma_conn_param cp = {.private_data = "why?", .private_data_len = 4};
    ASSERT_EQ(rdma_connect(cid, &cp), 0);
    struct rdma_cm_event *req = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
    struct rdma_cm_id *aid = req->id;
    ASSERT_EQ(req->param.conn.private_data_len, 4);
    ASSERT_MEM_EQ(req->param.conn.private_data, "why?", 4);
    ASSERT_EQ(rdma_reject(aid, "no", 2), 0);
    /* the request's id may go before the request is acked (librdmacm: it is the listener's
     * event); the event stays readable until then */
    ASSERT_EQ(rdma_destroy_id(aid), 0);
    ASSERT_MEM_EQ(req->param.conn.private_data, "why?", 4);
    ASSERT_EQ(rdma_ack_cm_event(req), 0);
    struct rdma_cm_event *rej = expect(cch, RDMA_CM_EVENT_REJECTED);
    ASSERT_EQ(rej->status, -ECONNREFUSED);
    ASSERT_EQ(rej->param.conn.private_data_len, 2);
    ASSERT_MEM_EQ(rej->param.conn.private_data, "no", 2);
    ASSERT_EQ(rdma_ack_cm_event(rej), 0);
    ASSERT_EQ(qp_state(cid->qp), IBV_QPS_ERR);
    rdma_destroy_qp(cid);
    ASSERT_EQ(rdma_destroy_id(cid), 0);

    /* nobody listens any more: the TCP connection is refused (REJECTED, -ECONNREFUSED) */
    ASSERT_EQ(rdma_destroy_id(lid), 0);
    cid = resolved(cch, false, port);
    ca = qp_attr();
    ASSERT_EQ(rdma_create_qp(cid, NULL, &ca), 0);
    ASSERT_EQ(rdma_connect(cid, NULL), 0);
    rej = expect(cch, RDMA_CM_EVENT_REJECTED);
    ASSERT_EQ(rej->status, -ECONNREFUSED);
    ASSERT_EQ(rdma_ack_cm_event(rej), 0);
    rdma_destroy_qp(cid);
    ASSERT_EQ(rdma_destroy_id(cid), 0);
    rdma_destroy_event_channel(sch);
    rdma_destroy_event_channel(cch);
}

/* The active side of the synchronous test: an endpoint from rdma_getaddrinfo, connected. */
static void *sync_client(void *arg)
{
    const char *port = arg;
    struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res;
    ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", port, &hints, &res), 0);
    ASSERT_TRUE(res->ai_dst_addr != NULL && !(res->ai_flags & RAI_PASSIVE));
    struct rdma_cm_id *id;
    struct ibv_qp_init_attr a = qp_attr();
    ASSERT_EQ(rdma_create_ep(&id, res, NULL, &a), 0);
    rdma_freeaddrinfo(res);
    ASSERT_TRUE(id->qp != NULL && id->verbs != NULL);
    char msg[16] = "sync hello";
    struct ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof msg);
    ASSERT_EQ(rdma_connect(id, NULL), 0); /* returns once ESTABLISHED */
    ASSERT_TRUE(id->event != NULL && id->event->event == RDMA_CM_EVENT_ESTABLISHED);
    ASSERT_EQ(qp_state(id->qp), IBV_QPS_RTS);
    ASSERT_EQ(rdma_post_send(id, NULL, msg, sizeof msg, mr, 0), 0);
    struct ibv_wc wc;
    ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(rdma_disconnect(id), 0); /* returns once DISCONNECTED */
    ASSERT_EQ(id->event->event, RDMA_CM_EVENT_DISCONNECTED);
    ASSERT_EQ(rdma_dereg_mr(mr), 0);
    rdma_destroy_ep(id);
    return NULL;
}

TEST(synchronous_endpoints_getaddrinfo_create_ep_get_request)
{
    struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP}, *res;
    ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", "0", &hints, &res), 0);
    ASSERT_TRUE(res->ai_src_addr != NULL && (res->ai_flags & RAI_PASSIVE));
    ASSERT_EQ(res->ai_qp_type, IBV_QPT_RC);
    struct rdma_cm_id *lid;
    struct ibv_qp_init_attr a = qp_attr();
    ASSERT_EQ(rdma_create_ep(&lid, res, NULL, &a), 0);
    rdma_freeaddrinfo(res);
    ASSERT_EQ(rdma_listen(lid, 2), 0);
    char port[8];
    snprintf(port, sizeof port, "%u", ntohs(rdma_get_src_port(lid)));
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, sync_client, port), 0);

    struct rdma_cm_id *id;
    ASSERT_EQ(rdma_get_request(lid, &id), 0);
    ASSERT_TRUE(id->qp != NULL);              /* made from the endpoint's QP attributes */
    ASSERT_TRUE(id->channel != lid->channel); /* a synchronous id has its own */
    ASSERT_TRUE(id->event && id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST);
    char buf[16] = {0};
    struct ibv_mr *mr = rdma_reg_msgs(id, buf, sizeof buf);
    ASSERT_EQ(rdma_post_recv(id, NULL, buf, sizeof buf, mr), 0);
    ASSERT_EQ(rdma_accept(id, NULL), 0); /* returns once ESTABLISHED */
    ASSERT_EQ(id->event->event, RDMA_CM_EVENT_ESTABLISHED);
    struct ibv_wc wc;
    ASSERT_EQ(rdma_get_recv_comp(id, &wc), 1);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_STR_EQ(buf, "sync hello");
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(rdma_dereg_mr(mr), 0);
    rdma_destroy_ep(id); /* its DISCONNECTED, never taken, goes with it */
    rdma_destroy_ep(lid);
}

TEST(migrate_id_moves_its_events)
{
    struct rdma_event_channel *a = rdma_create_event_channel(), *b = rdma_create_event_channel();
    struct rdma_cm_id *id;
    ASSERT_EQ(rdma_create_id(a, &id, NULL, RDMA_PS_TCP), 0);
    struct sockaddr_storage d;
    loopback(&d, false, 9);
    ASSERT_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 100), 0);
    ASSERT_EQ(rdma_migrate_id(id, b), 0); /* the queued ADDR_RESOLVED goes along */
    ASSERT_TRUE(id->channel == b);
    set_nonblock(a->fd, true);
    struct rdma_cm_event *ev;
    ASSERT_EQ(rdma_get_cm_event(a, &ev), -1);
    ASSERT_EQ(errno, EAGAIN);
    expect_ack(b, RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_EQ(rdma_migrate_id(id, NULL), 0); /* synchronous from now on */
    ASSERT_TRUE(id->channel != a && id->channel != b);
    ASSERT_EQ(rdma_resolve_route(id, 100), 0); /* waits for its event itself */
    ASSERT_EQ(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
    ASSERT_EQ(rdma_migrate_id(id, NULL), -1); /* already synchronous */
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_destroy_id(id), 0);
    rdma_destroy_event_channel(a);
    rdma_destroy_event_channel(b);
}

TEST(init_qp_attr_as_the_kernel_gives_it_for_iwarp)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id;
    ASSERT_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
    struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .qp_access_flags = 77};
    int mask = 0;
    ASSERT_EQ(rdma_init_qp_attr(id, &qa, &mask), 0); /* no connection yet: no access */
    ASSERT_EQ(mask, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT);
    ASSERT_EQ(qa.qp_access_flags, 0);
    ASSERT_EQ(qa.port_num, 1);

    struct rdma_cm_id *lid;
    uint16_t port = listen_on(ch, &lid, false, NULL);
    qa.qp_state = IBV_QPS_INIT;
    ASSERT_EQ(rdma_init_qp_attr(lid, &qa, &mask), -1); /* iw_cm: a listener has no QP */
    ASSERT_EQ(errno, EINVAL);
    struct rdma_event_channel *cch = rdma_create_event_channel();
    struct rdma_cm_id *cid = resolved(cch, false, port);
    struct ibv_qp_init_attr ca = qp_attr();
    ASSERT_EQ(rdma_create_qp(cid, NULL, &ca), 0);
    ASSERT_EQ(rdma_connect(cid, NULL), 0);
    struct rdma_cm_event *req = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    qa.qp_state = IBV_QPS_RTR;
    ASSERT_EQ(rdma_init_qp_attr(req->id, &qa, &mask), 0);
    ASSERT_EQ(mask, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT);
    ASSERT_EQ(qa.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    qa.qp_state = IBV_QPS_RTS;
    ASSERT_EQ(rdma_init_qp_attr(req->id, &qa, &mask), 0);
    ASSERT_EQ(mask, IBV_QP_PORT);
    qa.qp_state = IBV_QPS_SQD;
    ASSERT_EQ(rdma_init_qp_attr(req->id, &qa, &mask), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_notify(req->id, IBV_EVENT_COMM_EST), 0);
    struct rdma_cm_id *aid = req->id;
    ASSERT_EQ(rdma_reject(aid, NULL, 0), 0);
    ASSERT_EQ(rdma_ack_cm_event(req), 0);
    expect_ack(cch, RDMA_CM_EVENT_REJECTED);
    ASSERT_EQ(rdma_destroy_id(aid), 0);
    rdma_destroy_qp(cid);
    ASSERT_EQ(rdma_destroy_id(cid), 0);
    ASSERT_EQ(rdma_destroy_id(lid), 0);
    ASSERT_EQ(rdma_destroy_id(id), 0);
    rdma_destroy_event_channel(ch);
    rdma_destroy_event_channel(cch);
}

TEST(devices_and_getaddrinfo)
{
    int n = 0;
    struct ibv_context **list = rdma_get_devices(&n);
    ASSERT_TRUE(list != NULL);
    ASSERT_TRUE(n >= 1);
    ASSERT_TRUE(list[n] == NULL);
    bool lo = false;
    for (int i = 0; i < n; i++)
        lo |= !strcmp(ibv_get_device_name(list[i]->device), "iwarp_lo");
    ASSERT_TRUE(lo);
    rdma_free_devices(list);

    struct rdma_addrinfo *res;
    ASSERT_EQ(rdma_getaddrinfo("::1", "7471", NULL, &res), 0);
    ASSERT_EQ(res->ai_family, AF_INET6);
    ASSERT_EQ(res->ai_dst_addr->sa_family, AF_INET6);
    ASSERT_EQ(ntohs(((struct sockaddr_in6 *)res->ai_dst_addr)->sin6_port), 7471);
    ASSERT_EQ(res->ai_qp_type, IBV_QPT_RC);
    ASSERT_EQ(res->ai_port_space, RDMA_PS_TCP);
    rdma_freeaddrinfo(res);
    struct rdma_addrinfo h = {.ai_family = AF_INET, .ai_port_space = RDMA_PS_TCP};
    ASSERT_EQ(rdma_getaddrinfo("localhost", "7471", &h, &res), 0); /* a name */
    ASSERT_EQ(res->ai_dst_addr->sa_family, AF_INET);
    ASSERT_EQ(((struct sockaddr_in *)res->ai_dst_addr)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    rdma_freeaddrinfo(res);
    h = (struct rdma_addrinfo){.ai_flags = RAI_PASSIVE, .ai_family = AF_INET};
    ASSERT_EQ(rdma_getaddrinfo(NULL, "7471", &h, &res), 0);
    ASSERT_TRUE(res->ai_src_addr && !res->ai_dst_addr);
    ASSERT_EQ(((struct sockaddr_in *)res->ai_src_addr)->sin_addr.s_addr, htonl(INADDR_ANY));
    rdma_freeaddrinfo(res);
    h = (struct rdma_addrinfo){.ai_flags = RAI_NUMERICHOST};
    ASSERT_EQ(rdma_getaddrinfo("localhost", "1", &h, &res), EAI_NONAME);
    ASSERT_EQ(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
    ASSERT_EQ(errno, EINVAL);
}

TEST(bad_arguments_and_what_iwarp_lacks)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id, *ud;
    struct rdma_cm_event *ev;
    ASSERT_EQ(rdma_get_cm_event(NULL, &ev), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_ack_cm_event(NULL), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x4242), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    ASSERT_EQ(rdma_bind_addr(id, (struct sockaddr *)&un), -1);
    ASSERT_EQ(errno, EAFNOSUPPORT);
    ASSERT_EQ(rdma_bind_addr(id, NULL), -1);
    ASSERT_EQ(errno, EINVAL);
    struct sockaddr_in far = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0xC0000201)};
    ASSERT_EQ(rdma_bind_addr(id, (struct sockaddr *)&far), -1); /* 192.0.2.1: not ours */
    ASSERT_EQ(errno, EADDRNOTAVAIL);
    ASSERT_EQ(rdma_resolve_addr(id, (struct sockaddr *)&far, (struct sockaddr *)&far, 100), -1);
    ASSERT_EQ(errno, EADDRNOTAVAIL);
    ASSERT_EQ(rdma_resolve_addr(id, NULL, NULL, 100), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_listen(id, 1), -1); /* not bound */
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_resolve_route(id, 100), -1); /* no address */
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_connect(id, NULL), -1); /* no QP, no qp_num */
    ASSERT_EQ(errno, EINVAL);
    struct rdma_conn_param cp = {.qp_num = 0xdead};
    ASSERT_EQ(rdma_connect(id, &cp), -1); /* no such QP */
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_accept(id, NULL), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_reject(id, NULL, 0), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_disconnect(id), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_establish(id), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_notify(id, IBV_EVENT_COMM_EST), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_get_request(id, &ud), -1); /* not a synchronous listener */
    ASSERT_EQ(errno, EINVAL);
    uint8_t tos = 8;
    ASSERT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos), 0);
    ASSERT_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 4), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &tos, 1), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_set_option(id, RDMA_OPTION_ID, 42, &tos, 1), -1);
    ASSERT_EQ(errno, ENOSYS);
    struct ibv_ece ece = {.vendor_id = 0x1234};
    ASSERT_EQ(rdma_set_local_ece(id, &ece), 0); /* kept, as librdmacm; nothing to negotiate */
    ASSERT_EQ(rdma_get_remote_ece(id, &ece), 0);
    ASSERT_EQ(ece.vendor_id, 0u);
    struct sockaddr_storage mc;
    loopback(&mc, false, 0);
    ASSERT_EQ(rdma_join_multicast(id, (struct sockaddr *)&mc, NULL), -1); /* not UD */
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(rdma_leave_multicast(id, (struct sockaddr *)&mc), -1);
    ASSERT_EQ(errno, EADDRNOTAVAIL);

    /* a UDP id is made; its UD QP and multicast are not (siw's and the kernel's errno) */
    ASSERT_EQ(rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP), 0);
    ASSERT_EQ(ud->qp_type, IBV_QPT_UD);
    ASSERT_EQ(rdma_bind_addr(ud, (struct sockaddr *)&mc), 0);
    ASSERT_EQ(rdma_join_multicast(ud, (struct sockaddr *)&mc, NULL), -1);
    ASSERT_EQ(errno, ENOSYS);
    struct ibv_qp_init_attr qa = qp_attr();
    qa.qp_type = IBV_QPT_UD;
    ASSERT_EQ(rdma_create_qp(ud, NULL, &qa), -1);
    ASSERT_EQ(errno, EOPNOTSUPP);
    ASSERT_TRUE(ud->send_cq == NULL); /* nothing left behind */
    ASSERT_EQ(rdma_destroy_id(ud), 0);

    ASSERT_EQ(rsocket(AF_INET, SOCK_STREAM, 0), -1);
    ASSERT_EQ(errno, ENOSYS);
    ASSERT_EQ(rclose(3), -1);
    ASSERT_EQ(errno, ENOSYS);
    ASSERT_EQ(rdma_destroy_id(id), 0);
    ASSERT_EQ(rdma_destroy_id(NULL), -1);
    ASSERT_EQ(errno, EINVAL);
    rdma_destroy_event_channel(ch);
}

TEST(srq_and_create_qp_ex_on_an_id)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id;
    ASSERT_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
    struct sockaddr_storage a;
    loopback(&a, false, 0);
    ASSERT_EQ(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
    ASSERT_TRUE(id->pd != NULL); /* the device's PD, as librdmacm gives every id */
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    ASSERT_EQ(rdma_create_srq(id, NULL, &sa), 0);
    ASSERT_TRUE(id->srq != NULL);
    ASSERT_TRUE(sa.attr.max_wr >= 8);
    struct ibv_qp_init_attr_ex qa = {
        .cap = {.max_send_wr = 2, .max_send_sge = 1},
        .qp_type = IBV_QPT_RC,
        .comp_mask = IBV_QP_INIT_ATTR_PD,
        .pd = id->pd,
    };
    ASSERT_EQ(rdma_create_qp_ex(id, &qa), 0);
    ASSERT_TRUE(id->qp != NULL && id->qp->srq == id->srq); /* the id's SRQ feeds it */
    ASSERT_TRUE(id->send_cq && id->recv_cq == NULL);       /* no receive queue: no receive CQ */
    ASSERT_EQ(rdma_create_qp_ex(id, &qa), -1);             /* one QP per id */
    ASSERT_EQ(errno, EINVAL);
    rdma_destroy_qp(id);
    struct ibv_qp_init_attr_ex bad = {
        .qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS};
    ASSERT_EQ(rdma_create_qp_ex(id, &bad), -1);
    ASSERT_EQ(errno, EOPNOTSUPP);
    struct ibv_srq_init_attr_ex xrc = {.comp_mask = IBV_SRQ_INIT_ATTR_TYPE,
                                       .srq_type = IBV_SRQT_XRC};
    ASSERT_EQ(rdma_create_srq_ex(id, &xrc), -1);
    ASSERT_EQ(errno, EOPNOTSUPP);
    rdma_destroy_srq(id);
    ASSERT_TRUE(id->srq == NULL);
    ASSERT_EQ(rdma_destroy_id(id), 0);
    rdma_destroy_event_channel(ch);
}

TEST(a_listener_destroyed_with_requests_nobody_took_refuses_them)
{
    struct rdma_event_channel *sch = rdma_create_event_channel(),
                              *cch = rdma_create_event_channel();
    struct rdma_cm_id *lid;
    uint16_t port = listen_on(sch, &lid, false, NULL);
    struct rdma_cm_id *cid = resolved(cch, false, port);
    struct ibv_qp_init_attr ca = qp_attr();
    ASSERT_EQ(rdma_create_qp(cid, NULL, &ca), 0);
    ASSERT_EQ(rdma_connect(cid, NULL), 0);
    struct pollfd pfd = {.fd = sch->fd, .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, WAIT_MS), 1); /* the request is queued, not taken */
    ASSERT_EQ(rdma_destroy_id(lid), 0);   /* does not wait for anyone */
    struct rdma_cm_event *rej = expect(cch, RDMA_CM_EVENT_REJECTED);
    ASSERT_EQ(rej->status, -ECONNREFUSED);
    ASSERT_EQ(rdma_ack_cm_event(rej), 0);
    set_nonblock(sch->fd, true);
    struct rdma_cm_event *ev;
    ASSERT_EQ(rdma_get_cm_event(sch, &ev), -1); /* the request went with its listener */
    ASSERT_EQ(errno, EAGAIN);
    rdma_destroy_qp(cid);
    ASSERT_EQ(rdma_destroy_id(cid), 0);
    rdma_destroy_event_channel(sch);
    rdma_destroy_event_channel(cch);
}

/* A raw TCP connection to loopback:port that sends nothing. */
static int raw_silent(uint16_t port)
{
    struct sockaddr_storage a;
    loopback(&a, false, port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof(struct sockaddr_in)), 0);
    return fd;
}

/* Whether fd's stream has ended (FIN or reset) within ms; false when it is still open. */
static bool raw_ends_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return false;
    char b;
    ssize_t k = recv(fd, &b, 1, MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno == ECONNRESET);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* IWARP_MPA_STARTUP_TIMEOUT_MS reaches the context (iwarp_ctx_attr.mpa_startup_timeout_ms): a
 * connection that never sends its MPA Request is closed after it, well before the 10 s
 * default. */
TEST(startup_timeout_from_the_environment)
{
    ASSERT_EQ(setenv("IWARP_MPA_STARTUP_TIMEOUT_MS", "200", 1), 0);
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *lid;
    uint16_t port = listen_on(ch, &lid, false, NULL);
    uint64_t t0 = now_ms();
    int fd = raw_silent(port);
    ASSERT_TRUE(raw_ends_within(fd, 4000));
    uint64_t took = now_ms() - t0;
    ASSERT_TRUE(took >= 190);
    close(fd);
    ASSERT_EQ(rdma_destroy_id(lid), 0);
    rdma_destroy_event_channel(ch);
}

/* IWARP_MPA_PENDING_MAX reaches the context (iwarp_ctx_attr.mpa_pending_max): of three silent
 * connections to a listener that keeps two, one is reset at once (the 10 s startup timeout
 * cannot be what closes it) and two stay. */
TEST(pending_startups_cap_from_the_environment)
{
    ASSERT_EQ(setenv("IWARP_MPA_PENDING_MAX", "2", 1), 0);
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *lid;
    uint16_t port = listen_on(ch, &lid, false, NULL);
    int fds[3];
    for (int i = 0; i < 3; i++)
        fds[i] = raw_silent(port);
    struct pollfd p[3];
    for (int i = 0; i < 3; i++)
        p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    ASSERT_EQ(poll(p, 3, 4000), 1);
    for (int i = 0; i < 3; i++)
        if (p[i].revents)
            ASSERT_TRUE(raw_ends_within(fds[i], 0));
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    ASSERT_EQ(rdma_destroy_id(lid), 0);
    rdma_destroy_event_channel(ch);
}
