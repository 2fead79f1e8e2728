/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The drop-in libibverbs.so.1 through rdma-core's own headers, as an application uses it: the
 * device of lo, what it reports against libiwarp's limits, errno of what iWARP lacks, bad
 * arguments, and two QPs of this process connected through the drop-in librdmacm driving every
 * send opcode (the inline ibv_post_send / ibv_poll_cq go through context->ops), SGE lists,
 * inline data, bad_wr, completion conversion, completion channels and async events.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "deadline.h"
#include "dropin.h"
#include "harness.h"
#include "iwarp/errors.h"
#include "iwarp/verbs.h"

#define WAIT_MS 10000

static struct ibv_context *open_lo(void)
{
    int n = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx = NULL;

    ASSERT_TRUE(list != NULL);
    ASSERT_TRUE(n >= 1);
    for (int i = 0; i < n; i++)
        if (!strcmp(ibv_get_device_name(list[i]), "iwarp_lo"))
            ctx = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    ASSERT_TRUE(ctx != NULL);
    return ctx;
}

TEST(device_list_has_lo_as_an_iwarp_rnic)
{
    int n = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_device *lo = NULL;

    ASSERT_TRUE(list != NULL);
    ASSERT_TRUE(list[n] == NULL);
    for (int i = 0; i < n; i++)
        if (!strcmp(ibv_get_device_name(list[i]), "iwarp_lo"))
            lo = list[i];
    ASSERT_TRUE(lo != NULL);
    ASSERT_EQ(lo->node_type, IBV_NODE_RNIC);
    ASSERT_EQ(lo->transport_type, IBV_TRANSPORT_IWARP);
    ASSERT_STR_EQ(ibv_node_type_str(lo->node_type), "iWARP NIC");
    ASSERT_EQ(ibv_get_device_index(lo), (int)if_nametoindex("lo"));
    ASSERT_NE(ibv_get_device_guid(lo), 0);
    ibv_free_device_list(list);
}

TEST(query_device_and_port_report_libiwarps_limits)
{
    struct ibv_context *ctx = open_lo();
    struct iwarp_device_attr ia;
    struct ibv_device_attr a;
    struct ibv_device_attr_ex ax;
    struct ibv_port_attr p;
    union ibv_gid gid;
    __be16 pkey;

    ASSERT_EQ(iwarp_query_device(iwd_ctx_get(), &ia), 0);
    iwd_ctx_put();
    ASSERT_EQ(ibv_query_device(ctx, &a), 0);
    ASSERT_EQ(a.max_qp_wr, ia.max_qp_wr);
    ASSERT_EQ(a.max_sge, ia.max_sge);
    ASSERT_EQ(a.max_cqe, ia.max_cqe);
    ASSERT_EQ(a.max_mr, ia.max_mr);
    ASSERT_EQ(a.max_qp_rd_atom, ia.max_qp_rd_atom);
    ASSERT_EQ(a.max_qp_init_rd_atom, ia.max_qp_init_rd_atom);
    ASSERT_EQ(a.max_srq_wr, ia.max_srq_wr);
    ASSERT_EQ(a.phys_port_cnt, 1);
    ASSERT_EQ(a.node_guid, ibv_get_device_guid(ctx->device));
    ASSERT_TRUE(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
    ASSERT_EQ(a.atomic_cap, IBV_ATOMIC_HCA);
    ASSERT_EQ(ibv_query_device_ex(ctx, NULL, &ax), 0);
    ASSERT_MEM_EQ(&ax.orig_attr, &a, sizeof a);
    ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
    ASSERT_EQ(p.state, IBV_PORT_ACTIVE);
    ASSERT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
    ASSERT_EQ(p.gid_tbl_len, 1);
    ASSERT_EQ(ibv_query_port(ctx, 2, &p), EINVAL);
    ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
    ASSERT_EQ(gid.raw[0], 0x02); /* lo has no MAC: a locally administered one */
    ASSERT_EQ(gid.raw[6] | gid.raw[15], 0);
    ASSERT_EQ(ibv_query_gid(ctx, 1, 1, &gid), -1);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_EQ(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
    ASSERT_EQ(pkey, 0xffff);
    ASSERT_EQ(ibv_get_pkey_index(ctx, 1, 0xffff), 0);
    struct ibv_gid_entry e;
    ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
    ASSERT_MEM_EQ(e.gid.raw, gid.raw, 16);
    ASSERT_EQ(e.ndev_ifindex, if_nametoindex("lo"));
    ASSERT_EQ(ibv_close_device(ctx), 0);
}

TEST(what_iwarp_lacks_fails_with_sivs_errno)
{
    struct ibv_context *ctx = open_lo();
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
    struct ibv_ah_attr ah = {.port_num = 1};
    union ibv_gid gid = {0};
    char buf[64];

    ASSERT_TRUE(pd && cq);
    errno = 0;
    ASSERT_TRUE(ibv_create_ah(pd, &ah) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    struct ibv_qp_init_attr ud = {.send_cq = cq,
                                  .recv_cq = cq,
                                  .qp_type = IBV_QPT_UD,
                                  .cap = {.max_send_wr = 1, .max_recv_wr = 1}};
    errno = 0;
    ASSERT_TRUE(ibv_create_qp(pd, &ud) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    ud.qp_type = IBV_QPT_UC;
    ASSERT_TRUE(ibv_create_qp(pd, &ud) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    ud.qp_type = IBV_QPT_RC;
    struct ibv_qp *qp = ibv_create_qp(pd, &ud);
    ASSERT_TRUE(qp != NULL);
    ASSERT_EQ(ibv_attach_mcast(qp, &gid, 0), EOPNOTSUPP);
    ASSERT_EQ(ibv_detach_mcast(qp, &gid, 0), EOPNOTSUPP);
    struct ibv_ece ece;
    ASSERT_EQ(ibv_query_ece(qp, &ece), EOPNOTSUPP);
    ASSERT_EQ(ibv_resize_cq(cq, 8), EOPNOTSUPP);
    errno = 0;
    ASSERT_TRUE(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 0, IBV_ACCESS_LOCAL_WRITE) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    ASSERT_TRUE(ibv_import_device(ctx->cmd_fd) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    ASSERT_TRUE(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_ON_DEMAND) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(mr != NULL);
    ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0),
              IBV_REREG_MR_ERR_INPUT);
    ASSERT_EQ(errno, EOPNOTSUPP);
    /* extended verbs the library leaves out: rdma-core's inlines answer EOPNOTSUPP */
    struct ibv_cq_init_attr_ex cqx = {.cqe = 4};
    errno = 0;
    ASSERT_TRUE(ibv_create_cq_ex(ctx, &cqx) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    struct ibv_xrcd_init_attr xa = {0};
    ASSERT_TRUE(ibv_open_xrcd(ctx, &xa) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    struct ibv_alloc_dm_attr dma = {.length = 64};
    ASSERT_TRUE(ibv_alloc_dm(ctx, &dma) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    struct ibv_qp_init_attr_ex qx = {.send_cq = cq,
                                     .recv_cq = cq,
                                     .qp_type = IBV_QPT_RC,
                                     .cap = {.max_send_wr = 1, .max_recv_wr = 1},
                                     .comp_mask =
                                         IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                                     .pd = pd,
                                     .send_ops_flags = IBV_QP_EX_WITH_SEND};
    errno = 0;
    ASSERT_TRUE(ibv_create_qp_ex(ctx, &qx) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    qx.create_flags = 0;
    struct ibv_qp *qp2 = ibv_create_qp_ex(ctx, &qx);
    ASSERT_TRUE(qp2 != NULL);
    ASSERT_EQ(ibv_destroy_qp(qp2), 0);
    ASSERT_EQ(ibv_dereg_mr(mr), 0);
    ASSERT_EQ(ibv_destroy_qp(qp), 0);
    ASSERT_EQ(ibv_destroy_cq(cq), 0);
    ASSERT_EQ(ibv_dealloc_pd(pd), 0);
    ASSERT_EQ(ibv_close_device(ctx), 0);
}

TEST(bad_arguments_give_errno_not_crashes)
{
    struct ibv_context *ctx = open_lo();
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    char buf[64];

    errno = 0;
    ASSERT_TRUE(ibv_open_device(NULL) == NULL);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_TRUE(ibv_alloc_pd(NULL) == NULL);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_TRUE(ibv_create_cq(ctx, 0, NULL, NULL, 0) == NULL);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_TRUE(ibv_create_cq(ctx, 4, NULL, NULL, 5) == NULL);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_TRUE(ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE) == NULL);
    ASSERT_EQ(errno, EINVAL);
    ASSERT_TRUE(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE) == NULL);
    ASSERT_EQ(errno, EINVAL); /* REMOTE_WRITE needs LOCAL_WRITE */
    ASSERT_TRUE(ibv_reg_mr_iova(pd, buf, sizeof buf, 4096, IBV_ACCESS_LOCAL_WRITE) == NULL);
    ASSERT_EQ(errno, EOPNOTSUPP);
    struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
    struct ibv_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_inline_data = 1u << 20}};
    ASSERT_TRUE(ibv_create_qp(pd, &qa) == NULL);
    ASSERT_EQ(errno, EINVAL);
    qa.cap.max_inline_data = 0;
    qa.send_cq = NULL;
    ASSERT_TRUE(ibv_create_qp(pd, &qa) == NULL);
    ASSERT_EQ(errno, EINVAL);
    qa.send_cq = cq;
    struct ibv_qp *qp = ibv_create_qp(pd, &qa);
    ASSERT_TRUE(qp != NULL);
    /* objects in use */
    ASSERT_EQ(ibv_dealloc_pd(pd), EBUSY);
    ASSERT_EQ(ibv_destroy_cq(cq), EBUSY);
    /* posting on a QP with no connection: siw's ENOTCONN, bad_wr the first WR */
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
    struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad = NULL;
    ASSERT_EQ(ibv_post_send(qp, &wr, &bad), ENOTCONN);
    ASSERT_TRUE(bad == &wr);
    ASSERT_EQ(ibv_poll_cq(cq, -1, NULL), -1);
    struct ibv_wc wc;
    ASSERT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
    ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0); /* no channel: accepted, nothing fires */
    ASSERT_EQ(ibv_dereg_mr(mr), 0);
    ASSERT_EQ(ibv_destroy_qp(qp), 0);
    ASSERT_EQ(ibv_destroy_cq(cq), 0);
    ASSERT_EQ(ibv_dealloc_pd(pd), 0);
    ASSERT_EQ(ibv_close_device(ctx), 0);
}

TEST(modify_query_qp_without_connection)
{
    struct ibv_context *ctx = open_lo();
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
    struct ibv_qp_init_attr qa = {.send_cq = cq,
                                  .recv_cq = cq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 2, .max_recv_wr = 2}};
    struct ibv_qp *qp = ibv_create_qp(pd, &qa);
    struct ibv_qp_attr attr = {0};
    struct ibv_qp_init_attr got;
    char buf[16];

    ASSERT_TRUE(qp != NULL);
    ASSERT_TRUE(qa.cap.max_send_wr >= 2 && qa.cap.max_send_sge >= 1);
    /* inline data up to the device's maximum whatever was asked (none here), as siw */
    ASSERT_TRUE(qa.cap.max_inline_data >= 64);
    ASSERT_EQ(ibv_query_qp(qp, &attr, IBV_QP_STATE, &got), 0);
    ASSERT_EQ(attr.qp_state, IBV_QPS_RESET);
    ASSERT_TRUE(got.send_cq == cq && got.qp_type == IBV_QPT_RC);
    attr.qp_state = IBV_QPS_INIT;
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), 0);
    attr.qp_state = IBV_QPS_RTR;
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
    ASSERT_EQ(ibv_query_qp(qp, &attr, IBV_QP_STATE, &got), 0);
    ASSERT_EQ(attr.qp_state, IBV_QPS_RTR);
    attr.qp_state = IBV_QPS_RTS;
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), EINVAL); /* no connection (siw) */
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_RATE_LIMIT), EOPNOTSUPP);
    /* ERR flushes a posted receive */
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = sizeof buf, .lkey = mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = 77, .sg_list = &sge, .num_sge = 1}, *rbad;
    ASSERT_EQ(ibv_post_recv(qp, &rwr, &rbad), 0);
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
    struct ibv_wc wc;
    struct deadline d = deadline_in_ms(WAIT_MS);
    while (ibv_poll_cq(cq, 1, &wc) == 0)
        if (deadline_passed(&d))
            DEADLINE_FAIL(&d, "the flushed receive's completion");
    ASSERT_EQ(wc.wr_id, 77);
    ASSERT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    ASSERT_EQ(wc.qp_num, qp->qp_num);
    ASSERT_EQ(ibv_query_qp(qp, &attr, IBV_QP_STATE, &got), 0);
    ASSERT_EQ(attr.qp_state, IBV_QPS_ERR);
    ASSERT_EQ(ibv_destroy_qp(qp), 0);
    ASSERT_EQ(ibv_dereg_mr(mr), 0);
    ASSERT_EQ(ibv_destroy_cq(cq), 0);
    ASSERT_EQ(ibv_dealloc_pd(pd), 0);
    ASSERT_EQ(ibv_close_device(ctx), 0);
}

/* ---- two connected QPs of this process ------------------------------------------------- */

struct side {
    struct rdma_cm_id *id;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_comp_channel *cc;
};

struct pair {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *listen;
    struct ibv_pd *pd;
    struct side c, s; /* the connector (sends first, as iWARP wants), the acceptor */
    uint8_t *mem;     /* 4 KiB: c's half, s's half */
    struct ibv_mr *mr;
    struct ibv_srq *srq; /* s's receives come from it when asked for */
};

static struct rdma_cm_event *expect_event(struct pair *p, enum rdma_cm_event_type type)
{
    struct rdma_cm_event *ev = NULL;

    ASSERT_EQ(rdma_get_cm_event(p->ch, &ev), 0);
    if (ev->event != type)
        harness_fail(__FILE__, __LINE__, "CM event %s, expected %s", rdma_event_str(ev->event),
                     rdma_event_str(type));
    return ev;
}

static void make_side(struct pair *p, struct side *s, bool channel, struct ibv_srq *srq)
{
    struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
                                  .srq = srq,
                                  .cap = {.max_send_wr = 32,
                                          .max_recv_wr = srq ? 0 : 32,
                                          .max_send_sge = 4,
                                          .max_recv_sge = 4,
                                          .max_inline_data = 32}};

    s->cc = channel ? ibv_create_comp_channel(s->id->verbs) : NULL;
    s->cq = ibv_create_cq(s->id->verbs, 64, s, s->cc, 0);
    ASSERT_TRUE(s->cq != NULL);
    qa.send_cq = qa.recv_cq = s->cq;
    ASSERT_EQ(rdma_create_qp(s->id, p->pd, &qa), 0);
    s->qp = s->id->qp;
    ASSERT_TRUE(qa.cap.max_inline_data >= 32);
}

static void pair_up(struct pair *p, bool channel, bool use_srq)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct rdma_conn_param cp = {.responder_resources = 4, .initiator_depth = 4};
    struct rdma_cm_event *ev;

    memset(p, 0, sizeof *p);
    p->ch = rdma_create_event_channel();
    ASSERT_TRUE(p->ch != NULL);
    ASSERT_EQ(rdma_create_id(p->ch, &p->listen, NULL, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_bind_addr(p->listen, (struct sockaddr *)&a), 0);
    ASSERT_EQ(rdma_listen(p->listen, 4), 0);
    a.sin_port = rdma_get_src_port(p->listen);
    ASSERT_EQ(rdma_create_id(p->ch, &p->c.id, NULL, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_resolve_addr(p->c.id, NULL, (struct sockaddr *)&a, 2000), 0);
    rdma_ack_cm_event(expect_event(p, RDMA_CM_EVENT_ADDR_RESOLVED));
    ASSERT_EQ(rdma_resolve_route(p->c.id, 2000), 0);
    rdma_ack_cm_event(expect_event(p, RDMA_CM_EVENT_ROUTE_RESOLVED));
    ASSERT_TRUE(p->c.id->verbs != NULL);
    ASSERT_STR_EQ(ibv_get_device_name(p->c.id->verbs->device), "iwarp_lo");
    p->pd = ibv_alloc_pd(p->c.id->verbs);
    ASSERT_TRUE(p->pd != NULL);
    ASSERT_EQ(posix_memalign((void **)&p->mem, 4096, 4096), 0);
    memset(p->mem, 0, 4096);
    p->mr = ibv_reg_mr(p->pd, p->mem, 4096,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
    ASSERT_TRUE(p->mr != NULL);
    if (use_srq) {
        struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 2}};

        p->srq = ibv_create_srq(p->pd, &sa);
        ASSERT_TRUE(p->srq != NULL);
    }
    make_side(p, &p->c, channel, NULL);
    ASSERT_EQ(rdma_connect(p->c.id, &cp), 0);
    ev = expect_event(p, RDMA_CM_EVENT_CONNECT_REQUEST);
    p->s.id = ev->id;
    rdma_ack_cm_event(ev);
    make_side(p, &p->s, channel, p->srq);
    ASSERT_EQ(rdma_accept(p->s.id, &cp), 0);
    for (int i = 0; i < 2; i++)
        rdma_ack_cm_event(expect_event(p, RDMA_CM_EVENT_ESTABLISHED));
}

static void pair_down(struct pair *p)
{
    rdma_destroy_qp(p->c.id);
    rdma_destroy_qp(p->s.id);
    ASSERT_EQ(rdma_destroy_id(p->c.id), 0);
    ASSERT_EQ(rdma_destroy_id(p->s.id), 0);
    ASSERT_EQ(rdma_destroy_id(p->listen), 0);
    ASSERT_EQ(ibv_destroy_cq(p->c.cq), 0);
    ASSERT_EQ(ibv_destroy_cq(p->s.cq), 0);
    if (p->c.cc)
        ASSERT_EQ(ibv_destroy_comp_channel(p->c.cc), 0);
    if (p->s.cc)
        ASSERT_EQ(ibv_destroy_comp_channel(p->s.cc), 0);
    if (p->srq)
        ASSERT_EQ(ibv_destroy_srq(p->srq), 0);
    ASSERT_EQ(ibv_dereg_mr(p->mr), 0);
    ASSERT_EQ(ibv_dealloc_pd(p->pd), 0);
    rdma_destroy_event_channel(p->ch);
    free(p->mem);
}

static void poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
    struct deadline d = deadline_in_ms(WAIT_MS);

    while (ibv_poll_cq(cq, 1, wc) == 0)
        if (deadline_passed(&d))
            DEADLINE_FAIL(&d, "a completion");
}

static void post_recv(struct pair *p, struct side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)p->mem + off, .length = len, .lkey = p->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;

    if (p->srq && s == &p->s)
        ASSERT_EQ(ibv_post_srq_recv(p->srq, &wr, &bad), 0);
    else
        ASSERT_EQ(ibv_post_recv(s->qp, &wr, &bad), 0);
}

#define C_OFF 0    /* the connector's half of mem */
#define S_OFF 2048 /* the acceptor's half */

TEST(send_sge_list_inline_and_poll_conversion)
{
    struct pair p;
    struct ibv_wc wc;

    pair_up(&p, false, false);
    /* a connected QP: RTS, and INIT/RTR/RTS change nothing (rping -q does that, siw allows) */
    struct ibv_qp_attr qattr;
    struct ibv_qp_init_attr qinit;
    ASSERT_EQ(ibv_query_qp(p.c.qp, &qattr, IBV_QP_STATE, &qinit), 0);
    ASSERT_EQ(qattr.qp_state, IBV_QPS_RTS);
    ASSERT_EQ(qattr.max_rd_atomic, 4);
    for (enum ibv_qp_state st = IBV_QPS_INIT; st <= IBV_QPS_RTS; st++) {
        qattr.qp_state = st;
        ASSERT_EQ(ibv_modify_qp(p.c.qp, &qattr, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);
    }
    ASSERT_EQ(ibv_query_qp(p.c.qp, &qattr, IBV_QP_STATE, &qinit), 0);
    ASSERT_EQ(qattr.qp_state, IBV_QPS_RTS);
    post_recv(&p, &p.s, 11, S_OFF, 256);
    post_recv(&p, &p.s, 12, S_OFF + 256, 256);
    /* three SGEs gathered into one message */
    memcpy(p.mem + C_OFF, "abc", 3);
    memcpy(p.mem + C_OFF + 100, "defg", 4);
    memcpy(p.mem + C_OFF + 200, "h", 1);
    struct ibv_sge sg[3] = {{(uintptr_t)p.mem + C_OFF, 3, p.mr->lkey},
                            {(uintptr_t)p.mem + C_OFF + 100, 4, p.mr->lkey},
                            {(uintptr_t)p.mem + C_OFF + 200, 1, p.mr->lkey}};
    struct ibv_send_wr w = {.wr_id = 1,
                            .sg_list = sg,
                            .num_sge = 3,
                            .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 1);
    ASSERT_EQ(wc.opcode, IBV_WC_SEND);
    ASSERT_EQ(wc.qp_num, p.c.qp->qp_num);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 11);
    ASSERT_EQ(wc.opcode, IBV_WC_RECV);
    ASSERT_EQ(wc.byte_len, 8);
    ASSERT_EQ(wc.qp_num, p.s.qp->qp_num);
    ASSERT_EQ(wc.wc_flags, 0);
    ASSERT_MEM_EQ(p.mem + S_OFF, "abcdefgh", 8);
    /* inline: the buffer may change right after posting; unsignaled: no completion */
    char stack_data[20] = "inline-payload-0123";
    struct ibv_sge isge = {(uintptr_t)stack_data, 20, 0};
    struct ibv_send_wr iw = {.wr_id = 2,
                             .sg_list = &isge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_INLINE};
    ASSERT_EQ(ibv_post_send(p.c.qp, &iw, &bad), 0);
    memset(stack_data, 'X', sizeof stack_data);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 12);
    ASSERT_EQ(wc.byte_len, 20);
    ASSERT_MEM_EQ(p.mem + S_OFF + 256, "inline-payload-0123", 20);
    ASSERT_EQ(ibv_poll_cq(p.c.cq, 1, &wc), 0); /* the unsignaled send completed nothing */
    pair_down(&p);
}

TEST(bad_wr_is_the_callers_wr_that_failed)
{
    struct pair p;
    struct ibv_wc wc[4];

    pair_up(&p, false, false);
    for (int i = 0; i < 2; i++)
        post_recv(&p, &p.s, (uint64_t)(20 + i), S_OFF + (uint32_t)i * 64, 64);
    struct ibv_sge sge = {(uintptr_t)p.mem + C_OFF, 8, p.mr->lkey};
    struct ibv_sge many[8];
    for (int i = 0; i < 8; i++)
        many[i] = sge;
    struct ibv_send_wr w[3] = {
        {.wr_id = 1,
         .sg_list = &sge,
         .num_sge = 1,
         .opcode = IBV_WR_SEND,
         .send_flags = IBV_SEND_SIGNALED},
        {.wr_id = 2, .sg_list = many, .num_sge = 8, .opcode = IBV_WR_SEND}, /* over max */
        {.wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}};
    w[0].next = &w[1];
    w[1].next = &w[2];
    struct ibv_send_wr *bad = NULL;
    ASSERT_EQ(ibv_post_send(p.c.qp, w, &bad), EINVAL);
    ASSERT_TRUE(bad == &w[1]);
    poll_one(p.c.cq, wc);
    ASSERT_EQ(wc[0].wr_id, 1);
    /* an opcode iWARP has not: Send with Immediate (siw: EINVAL) */
    w[2].opcode = IBV_WR_SEND_WITH_IMM;
    w[2].next = NULL;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w[2], &bad), EINVAL);
    ASSERT_TRUE(bad == &w[2]);
    /* what iWARP has not (TSO: UD/raw packet; DRIVER1; ATOMIC_WRITE, whose number libiwarp
     * uses for something else): EINVAL, as siw answers an opcode it lacks */
    w[2].opcode = IBV_WR_TSO;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w[2], &bad), EINVAL);
    w[2].opcode = IBV_WR_DRIVER1;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w[2], &bad), EINVAL);
    w[2].opcode = IBV_WR_ATOMIC_WRITE;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w[2], &bad), EINVAL);
    ASSERT_TRUE(bad == &w[2]);
    w[2].opcode = IBV_WR_SEND;
    w[2].send_flags = IBV_SEND_IP_CSUM;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w[2], &bad), EINVAL);
    /* a list longer than one conversion batch (16), all posted */
    struct ibv_send_wr lots[30];
    for (int i = 0; i < 30; i++) {
        lots[i] = (struct ibv_send_wr){.wr_id = (uint64_t)(100 + i),
                                       .sg_list = &sge,
                                       .num_sge = 1,
                                       .opcode = IBV_WR_RDMA_WRITE,
                                       .send_flags = i == 29 ? IBV_SEND_SIGNALED : 0};
        lots[i].wr.rdma.remote_addr = (uintptr_t)p.mem + S_OFF + 1024;
        lots[i].wr.rdma.rkey = p.mr->rkey;
        lots[i].next = i < 29 ? &lots[i + 1] : NULL;
    }
    ASSERT_EQ(ibv_post_send(p.c.qp, lots, &bad), 0);
    poll_one(p.c.cq, wc);
    ASSERT_EQ(wc[0].wr_id, 129);
    ASSERT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
    pair_down(&p);
}

TEST(rdma_write_read_imm_invalidate_and_atomics)
{
    struct pair p;
    struct ibv_wc wc;
    struct ibv_send_wr *bad;

    pair_up(&p, false, false);
    uint8_t *c = p.mem + C_OFF, *s = p.mem + S_OFF;
    /* RDMA Write */
    memcpy(c, "written!", 8);
    struct ibv_sge sge = {(uintptr_t)c, 8, p.mr->lkey};
    struct ibv_send_wr w = {.wr_id = 1,
                            .sg_list = &sge,
                            .num_sge = 1,
                            .opcode = IBV_WR_RDMA_WRITE,
                            .send_flags = IBV_SEND_SIGNALED};
    w.wr.rdma.remote_addr = (uintptr_t)s;
    w.wr.rdma.rkey = p.mr->rkey;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    /* RDMA Read back (fenced), into c + 64 */
    struct ibv_sge rs = {(uintptr_t)c + 64, 8, p.mr->lkey};
    struct ibv_send_wr r = {.wr_id = 2,
                            .sg_list = &rs,
                            .num_sge = 1,
                            .opcode = IBV_WR_RDMA_READ,
                            .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE};
    r.wr.rdma.remote_addr = (uintptr_t)s;
    r.wr.rdma.rkey = p.mr->rkey;
    ASSERT_EQ(ibv_post_send(p.c.qp, &r, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.opcode, IBV_WC_RDMA_READ);
    ASSERT_EQ(wc.byte_len, 8);
    ASSERT_MEM_EQ(c + 64, "written!", 8);
    /* Write with Immediate: one receive consumed, imm_data as the verbs __be32 */
    post_recv(&p, &p.s, 30, S_OFF + 512, 64);
    w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    w.imm_data = htonl(0x11223344);
    w.wr.rdma.remote_addr = (uintptr_t)s + 16;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 30);
    ASSERT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    ASSERT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    ASSERT_EQ(ntohl(wc.imm_data), 0x11223344);
    ASSERT_MEM_EQ(s + 16, "written!", 8);
    /* Send with Invalidate of a type-2 window bound on the acceptor */
    struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
    ASSERT_TRUE(mw != NULL);
    struct ibv_send_wr bw = {
        .wr_id = 40, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
    bw.bind_mw.mw = mw;
    bw.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    bw.bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = p.mr,
                                                     .addr = (uintptr_t)s + 1024,
                                                     .length = 64,
                                                     .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
    ASSERT_EQ(ibv_post_send(p.s.qp, &bw, &bad), 0);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.opcode, IBV_WC_BIND_MW);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(mw->rkey, bw.bind_mw.rkey);
    w.opcode = IBV_WR_RDMA_WRITE; /* through the window */
    w.wr.rdma.remote_addr = (uintptr_t)s + 1024;
    w.wr.rdma.rkey = mw->rkey;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    /* a Write completes once handed to TCP, before the peer places it */
    WAIT_UNTIL(memcmp(s + 1024, "written!", 8) == 0, WAIT_MS, "the Write through the window");
    post_recv(&p, &p.s, 31, S_OFF + 512, 64);
    struct ibv_send_wr inv = {.wr_id = 3,
                              .sg_list = &sge,
                              .num_sge = 1,
                              .opcode = IBV_WR_SEND_WITH_INV,
                              .send_flags = IBV_SEND_SIGNALED};
    inv.invalidate_rkey = mw->rkey;
    ASSERT_EQ(ibv_post_send(p.c.qp, &inv, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 31);
    ASSERT_TRUE(wc.wc_flags & IBV_WC_WITH_INV);
    ASSERT_EQ(wc.invalidated_rkey, mw->rkey);
    ASSERT_EQ(ibv_dealloc_mw(mw), 0);
    /* atomics on 8 aligned octets of the acceptor */
    uint64_t *target = (uint64_t *)(void *)(s + 1536), *orig = (uint64_t *)(void *)(c + 256);
    *target = 40;
    struct ibv_sge as = {(uintptr_t)orig, 8, p.mr->lkey};
    struct ibv_send_wr fa = {.wr_id = 4,
                             .sg_list = &as,
                             .num_sge = 1,
                             .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
                             .send_flags = IBV_SEND_SIGNALED};
    fa.wr.atomic.remote_addr = (uintptr_t)target;
    fa.wr.atomic.rkey = p.mr->rkey;
    fa.wr.atomic.compare_add = 2;
    ASSERT_EQ(ibv_post_send(p.c.qp, &fa, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IBV_WC_FETCH_ADD);
    ASSERT_EQ(*orig, 40);
    ASSERT_EQ(*target, 42);
    fa.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    fa.wr.atomic.compare_add = 42;
    fa.wr.atomic.swap = 7;
    ASSERT_EQ(ibv_post_send(p.c.qp, &fa, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.opcode, IBV_WC_COMP_SWAP);
    ASSERT_EQ(*orig, 42);
    ASSERT_EQ(*target, 7);
    /* local invalidate of a type-1 window bound with ibv_bind_mw */
    struct ibv_mw *mw1 = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);
    ASSERT_TRUE(mw1 != NULL);
    uint32_t before = mw1->rkey;
    struct ibv_mw_bind b = {.wr_id = 50,
                            .send_flags = IBV_SEND_SIGNALED,
                            .bind_info = {.mr = p.mr,
                                          .addr = (uintptr_t)c,
                                          .length = 64,
                                          .mw_access_flags = IBV_ACCESS_REMOTE_READ}};
    ASSERT_EQ(ibv_bind_mw(p.c.qp, mw1, &b), 0);
    ASSERT_NE(mw1->rkey, before);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.wr_id, 50);
    ASSERT_EQ(wc.opcode, IBV_WC_BIND_MW);
    b.bind_info.length = 0; /* a zero-length bind invalidates a type-1 window */
    ASSERT_EQ(ibv_bind_mw(p.c.qp, mw1, &b), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    /* Local Invalidate of a type-2 window bound on the connector */
    struct ibv_mw *mw2 = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
    ASSERT_TRUE(mw2 != NULL);
    bw.bind_mw.mw = mw2;
    bw.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
    ASSERT_EQ(ibv_post_send(p.c.qp, &bw, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    struct ibv_send_wr li = {
        .wr_id = 5, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED};
    li.invalidate_rkey = mw2->rkey;
    ASSERT_EQ(ibv_post_send(p.c.qp, &li, &bad), 0);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 5);
    ASSERT_EQ(wc.opcode, IBV_WC_LOCAL_INV);
    ASSERT_EQ(ibv_dealloc_mw(mw2), 0);
    ASSERT_EQ(ibv_dealloc_mw(mw1), 0);
    pair_down(&p);
}

TEST(completion_channel_solicited_events_and_nonblocking)
{
    struct pair p;
    struct ibv_wc wc;
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    struct ibv_send_wr *bad;

    pair_up(&p, true, false);
    ASSERT_EQ(p.s.cc->fd >= 0, 1);
    int fl = fcntl(p.s.cc->fd, F_GETFL);
    ASSERT_EQ(fcntl(p.s.cc->fd, F_SETFL, fl | O_NONBLOCK), 0);
    errno = 0;
    ASSERT_EQ(ibv_get_cq_event(p.s.cc, &ev_cq, &ev_ctx), -1);
    ASSERT_EQ(errno, EAGAIN);
    ASSERT_EQ(fcntl(p.s.cc->fd, F_SETFL, fl), 0);
    post_recv(&p, &p.s, 60, S_OFF, 64);
    post_recv(&p, &p.s, 61, S_OFF + 64, 64);
    ASSERT_EQ(ibv_req_notify_cq(p.s.cq, 1), 0); /* solicited only */
    struct ibv_sge sge = {(uintptr_t)p.mem + C_OFF, 4, p.mr->lkey};
    struct ibv_send_wr w = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0); /* not solicited: no event */
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 60);
    struct pollfd pfd = {.fd = p.s.cc->fd, .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, 0), 0);
    w.send_flags = IBV_SEND_SOLICITED;
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    /* blocking get: the solicited receive fires it */
    ASSERT_EQ(ibv_get_cq_event(p.s.cc, &ev_cq, &ev_ctx), 0);
    ASSERT_TRUE(ev_cq == p.s.cq);
    ASSERT_TRUE(ev_ctx == &p.s);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 61);
    ASSERT_EQ(ibv_destroy_cq(p.s.cq), EBUSY); /* the event is not acknowledged yet */
    ibv_ack_cq_events(p.s.cq, 1);
    pair_down(&p);
}

TEST(srq_feeds_the_acceptor)
{
    struct pair p;
    struct ibv_wc wc;
    struct ibv_send_wr *bad;
    struct ibv_recv_wr *rbad;

    pair_up(&p, false, true);
    struct ibv_srq_attr sa;
    ASSERT_EQ(ibv_query_srq(p.srq, &sa), 0);
    ASSERT_TRUE(sa.max_wr >= 16);
    sa.max_wr = 64;
    ASSERT_EQ(ibv_modify_srq(p.srq, &sa, IBV_SRQ_MAX_WR), EOPNOTSUPP);
    post_recv(&p, &p.s, 70, S_OFF, 64);
    struct ibv_sge rsge = {(uintptr_t)p.mem + S_OFF, 8, p.mr->lkey};
    struct ibv_recv_wr rw = {.wr_id = 71, .sg_list = &rsge, .num_sge = 1};
    ASSERT_EQ(ibv_post_recv(p.s.qp, &rw, &rbad), EINVAL); /* the QP uses an SRQ (siw) */
    ASSERT_TRUE(rbad == &rw);
    memcpy(p.mem + C_OFF, "srq!", 4);
    struct ibv_sge sge = {(uintptr_t)p.mem + C_OFF, 4, p.mr->lkey};
    struct ibv_send_wr w = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 70);
    ASSERT_EQ(wc.byte_len, 4);
    ASSERT_MEM_EQ(p.mem + S_OFF, "srq!", 4);
    pair_down(&p);
}

TEST(receive_buffers_deregistered_under_posted_srq_receives)
{
    /* libfabric's rxm with shared receive contexts deregisters its receive buffers before it
     * destroys the SRQ they are posted to. As on an RNIC that succeeds (no EBUSY, which leaked
     * its MRs and PD); a message that then reaches such a receive fails it with
     * IBV_WC_LOC_PROT_ERR and writes nothing (the buffer is freed here: ASan would see it). */
    struct pair p;
    struct ibv_wc wc;
    struct ibv_send_wr *bad;
    struct ibv_recv_wr *rbad;

    pair_up(&p, false, true);
    uint8_t *rbuf = malloc(64);
    ASSERT_TRUE(rbuf != NULL);
    struct ibv_mr *rmr = ibv_reg_mr(p.pd, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(rmr != NULL);
    struct ibv_sge rsge = {(uintptr_t)rbuf, 64, rmr->lkey};
    struct ibv_recv_wr rw = {.wr_id = 80, .sg_list = &rsge, .num_sge = 1};
    ASSERT_EQ(ibv_post_srq_recv(p.srq, &rw, &rbad), 0);
    ASSERT_EQ(ibv_dereg_mr(rmr), 0);
    free(rbuf);
    ASSERT_EQ(ibv_post_srq_recv(p.srq, &rw, &rbad), EINVAL); /* the lkey is gone */
    memcpy(p.mem + C_OFF, "late", 4);
    struct ibv_sge sge = {(uintptr_t)p.mem + C_OFF, 4, p.mr->lkey};
    struct ibv_send_wr w = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 80);
    ASSERT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
    pair_down(&p); /* the SRQ, the other MR and the PD all go: nothing is left holding them */
}

TEST(async_event_names_the_qp_whose_connection_broke)
{
    struct pair p;
    struct ibv_async_event ev;
    struct ibv_context *ctx;

    pair_up(&p, false, false);
    ctx = p.s.id->verbs;
    int fl = fcntl(ctx->async_fd, F_GETFL);
    ASSERT_EQ(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
    errno = 0;
    ASSERT_EQ(ibv_get_async_event(ctx, &ev), -1);
    ASSERT_EQ(errno, EAGAIN);
    ASSERT_EQ(fcntl(ctx->async_fd, F_SETFL, fl), 0);
    /* the connector's QP to ERR resets the connection: the acceptor's QP gets a fatal event */
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
    ASSERT_EQ(ibv_modify_qp(p.c.qp, &a, IBV_QP_STATE), 0);
    struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, WAIT_MS), 1);
    bool seen = false;
    while (!seen) {
        ASSERT_EQ(ibv_get_async_event(ctx, &ev), 0); /* blocking */
        if (ev.element.qp == p.s.qp) {
            ASSERT_TRUE(ev.event_type == IBV_EVENT_QP_FATAL ||
                        ev.event_type == IBV_EVENT_QP_ACCESS_ERR ||
                        ev.event_type == IBV_EVENT_QP_REQ_ERR);
            seen = true;
        } else {
            ASSERT_TRUE(ev.element.qp == p.c.qp);
        }
        ASSERT_TRUE(strcmp(ibv_event_type_str(ev.event_type), "unknown") != 0);
        ibv_ack_async_event(&ev);
    }
    pair_down(&p);
}

static void *pd_mr_churn(void *arg)
{
    struct ibv_context *ctx = arg;
    char buf[256];

    for (int i = 0; i < 200; i++) {
        struct ibv_pd *pd = ibv_alloc_pd(ctx);
        struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE) : NULL;
        struct ibv_cq *cq = ibv_create_cq(ctx, 2, NULL, NULL, 0);

        if (!pd || !mr || !cq || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
            return (void *)1;
    }
    return NULL;
}

TEST(verbs_from_several_threads_at_once)
{
    struct ibv_context *ctx = open_lo();
    pthread_t t[4];
    void *rc;

    for (int i = 0; i < 4; i++)
        ASSERT_EQ(pthread_create(&t[i], NULL, pd_mr_churn, ctx), 0);
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(pthread_join(t[i], &rc), 0);
        ASSERT_TRUE(rc == NULL);
    }
    ASSERT_EQ(ibv_close_device(ctx), 0);
}

TEST(strings_rates_and_fork)
{
    ASSERT_STR_EQ(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
    ASSERT_STR_EQ(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
    ASSERT_STR_EQ(ibv_event_type_str(IBV_EVENT_QP_FATAL), "local work queue catastrophic error");
    ASSERT_EQ(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
    ASSERT_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
    ASSERT_EQ(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
    ASSERT_EQ(mbps_to_ibv_rate(25781), IBV_RATE_25_GBPS);
    ASSERT_EQ(ibv_fork_init(), 0);
    ASSERT_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}

TEST(every_libiwarp_error_has_an_errno)
{
#define CHECK_ERRNO(name, value, msg) ASSERT_TRUE(iwd_errno(value) > 0);
    IWARP_ERRNO_MAP(CHECK_ERRNO)
#undef CHECK_ERRNO
    ASSERT_EQ(iwd_errno(0), 0);
    ASSERT_EQ(iwd_errno(IWARP_ERR_NOMEM), ENOMEM);
    ASSERT_EQ(iwd_errno(IWARP_ERR_CONN_REFUSED), ECONNREFUSED);
}

TEST(ibverbs_1_0_entries_fail_with_enosys)
{
    /* binaries linked against libibverbs 1.0 bind these versions; the library is loaded */
    void *ptr_fn = dlvsym(RTLD_DEFAULT, "ibv_get_device_list", "IBVERBS_1.0");
    void *int_fn = dlvsym(RTLD_DEFAULT, "ibv_modify_qp", "IBVERBS_1.0");
    void *cur = dlvsym(RTLD_DEFAULT, "ibv_get_device_list", "IBVERBS_1.1");

    ASSERT_TRUE(ptr_fn != NULL && int_fn != NULL && cur != NULL);
    ASSERT_TRUE(ptr_fn != cur);
    errno = 0;
    ASSERT_TRUE(((void *(*)(int *))ptr_fn)(NULL) == NULL);
    ASSERT_EQ(errno, ENOSYS);
    errno = 0;
    ASSERT_EQ(((int (*)(void *, void *, int))int_fn)(NULL, NULL, 0), -ENOSYS);
    ASSERT_EQ(errno, ENOSYS);
    ASSERT_TRUE(dlvsym(RTLD_DEFAULT, "ibv_cmd_create_qp", "IBVERBS_PRIVATE_34") != NULL);
    ASSERT_EQ(((int (*)(void))dlvsym(RTLD_DEFAULT, "ibv_cmd_create_qp", "IBVERBS_PRIVATE_34"))(),
              EOPNOTSUPP);
}

TEST(caller_progress_mode_moves_data)
{
    struct pair p;
    struct ibv_wc wc;
    struct ibv_send_wr *bad;

    ASSERT_EQ(setenv("IWARP_PROGRESS", "caller", 1), 0);
    ASSERT_EQ(iwd_options()->progress, IWARP_PROGRESS_CALLER);
    pair_up(&p, true, false);
    post_recv(&p, &p.s, 80, S_OFF, 64);
    ASSERT_EQ(ibv_req_notify_cq(p.s.cq, 0), 0);
    memcpy(p.mem + C_OFF, "caller", 6);
    struct ibv_sge sge = {(uintptr_t)p.mem + C_OFF, 6, p.mr->lkey};
    struct ibv_send_wr w = {.wr_id = 1,
                            .sg_list = &sge,
                            .num_sge = 1,
                            .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED};
    ASSERT_EQ(ibv_post_send(p.c.qp, &w, &bad), 0);
    /* the blocking get drives progress itself, with no thread doing it */
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    ASSERT_EQ(ibv_get_cq_event(p.s.cc, &ev_cq, &ev_ctx), 0);
    ASSERT_TRUE(ev_cq == p.s.cq);
    ibv_ack_cq_events(ev_cq, 1);
    poll_one(p.s.cq, &wc);
    ASSERT_EQ(wc.wr_id, 80);
    ASSERT_MEM_EQ(p.mem + S_OFF, "caller", 6);
    poll_one(p.c.cq, &wc);
    ASSERT_EQ(wc.wr_id, 1);
    pair_down(&p);
}
