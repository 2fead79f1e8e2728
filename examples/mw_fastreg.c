/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mw_fastreg: three ways to let a peer into part of your memory, and to take it back.
 *  - a type-1 memory window, bound with iwarp_bind_mw and invalidated by binding it again with
 *    length 0;
 *  - a type-2 memory window, bound by posting an IWARP_WR_BIND_MW work request and invalidated
 *    by the peer itself: a Send with Invalidate naming its STag;
 *  - a fast registration: an STag allocated without memory (iwarp_alloc_mr), made a region by
 *    posting IWARP_WR_REG_MR and invalidated locally with IWARP_WR_LOCAL_INV.
 * The server registers its buffer for binding windows only (no remote access through the
 * region itself), grants one 64-octet area through each STag and Sends the three STags to the
 * client, which RDMA-Writes a line through each. The client's Send with Invalidate says it is
 * done and revokes the type-2 window; the server revokes the other two (and finds the revoked
 * fast-registered STag refused as a local key too). The client then tries an RDMA Read through
 * the revoked fast-registered STag: the server answers with a Terminate (RFC 5040 §7: invalid
 * STag), the Read completes with a remote access error, and the connection is over.
 *
 *   server:  mw_fastreg [-p PORT]          (no PORT or 0: any free port; it is printed)
 *   client:  mw_fastreg -p PORT SERVER_IP
 *
 * Uses only the public API (include/iwarp/). Build: cc mw_fastreg.c $(pkg-config --cflags
 * --libs libiwarp)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define AREA 64 /* octets each STag grants */

enum { TYPE1, TYPE2, FASTREG, NSTAGS };
static const char *const stag_name[NSTAGS] = {"type-1 window", "type-2 window",
                                              "fast-registered MR"};

/* What the server Sends: an area per STag. */
struct advert {
    struct {
        uint64_t addr;
        uint32_t rkey;
        uint32_t len;
    } area[NSTAGS];
};

static char data[NSTAGS][AREA]; /* server: the areas granted; client: what it writes, reads */
static char msgs[4][AREA];      /* Sends and receives */

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "mw_fastreg: %s: %s\n", what, iwarp_strerror(rc));
        exit(1);
    }
}

static struct iwarp_cm_event *wait_event(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type want)
{
    struct iwarp_cm_event *ev;
    check(iwarp_cm_get_event_timeout(ch, &ev, 10000), "waiting for a CM event");
    if (ev->event != want) {
        fprintf(stderr, "mw_fastreg: got %s (%s), expected %s\n", iwarp_cm_event_str(ev->event),
                iwarp_strerror(ev->status), iwarp_cm_event_str(want));
        exit(1);
    }
    return ev;
}

/* The next completion, whatever its status. */
static struct iwarp_wc next_completion(struct iwarp_cq *cq)
{
    struct iwarp_wc wc;
    int n;
    while ((n = iwarp_poll_cq(cq, 1, &wc)) == 0)
        check(iwarp_cq_wait(cq, 5000), "waiting for a completion");
    check(n, "iwarp_poll_cq");
    return wc;
}

/* The next completion, which must be a success. */
static struct iwarp_wc wait_completion(struct iwarp_cq *cq)
{
    struct iwarp_wc wc = next_completion(cq);
    if (wc.status != IWARP_WC_SUCCESS) {
        fprintf(stderr, "mw_fastreg: work request %llu failed: %s\n", (unsigned long long)wc.wr_id,
                iwarp_wc_status_str(wc.status));
        exit(1);
    }
    return wc;
}

static void post_recv(struct iwarp_qp *qp, int i, struct iwarp_mr *mr)
{
    struct iwarp_sge sge = {(uintptr_t)msgs[i], AREA, mr->lkey};
    struct iwarp_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1};
    check(iwarp_post_recv(qp, &wr, NULL), "iwarp_post_recv");
}

/* Post wr, signaled, with sge (or none), and wait for its completion. */
static void post_and_wait(struct iwarp_qp *qp, struct iwarp_send_wr *wr, struct iwarp_sge *sge)
{
    wr->sg_list = sge;
    wr->num_sge = sge ? 1 : 0;
    wr->send_flags |= IWARP_SEND_SIGNALED;
    check(iwarp_post_send(qp, wr, NULL), "iwarp_post_send");
    wait_completion(qp->send_cq);
}

static int run_server(struct iwarp_ctx *ctx, struct iwarp_cm_channel *ch, struct iwarp_pd *pd,
                      struct iwarp_cq *cq, struct iwarp_mr *msg_mr, int port)
{
    /* The region: binding windows is all it allows; the peer gets in only through them. */
    struct iwarp_mr *mr, *frmr;
    struct iwarp_mw *mw1, *mw2;
    check(iwarp_reg_mr(pd, data, sizeof data, IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_MW_BIND, &mr),
          "iwarp_reg_mr");
    check(iwarp_alloc_mw(pd, IWARP_MW_TYPE_1, &mw1), "iwarp_alloc_mw");
    check(iwarp_alloc_mw(pd, IWARP_MW_TYPE_2, &mw2), "iwarp_alloc_mw");
    check(iwarp_alloc_mr(pd, &frmr), "iwarp_alloc_mr"); /* an STag, no memory yet */

    struct iwarp_cm_id *listen_id, *id;
    check(iwarp_cm_create_id(ch, &listen_id, NULL, IWARP_PS_TCP), "iwarp_cm_create_id");
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_ANY)};
    check(iwarp_cm_bind_addr(listen_id, (struct sockaddr *)&addr), "iwarp_cm_bind_addr");
    check(iwarp_cm_listen(listen_id, 1), "iwarp_cm_listen");
    printf("server: listening on port %u\n",
           ntohs(((struct sockaddr_in *)&listen_id->local_addr)->sin_port));
    struct iwarp_cm_event *ev = wait_event(ch, IWARP_CM_EVENT_CONNECT_REQUEST);
    id = ev->id;
    check(iwarp_cm_ack_event(ev), "iwarp_cm_ack_event");
    struct iwarp_qp_init_attr qp_attr = {.send_cq = cq,
                                         .recv_cq = cq,
                                         .cap = {.max_send_wr = 8, .max_recv_wr = 4},
                                         .qp_type = IWARP_QPT_RC};
    check(iwarp_cm_create_qp(id, pd, &qp_attr), "iwarp_cm_create_qp");
    post_recv(id->qp, 0, msg_mr); /* the client's "hello" */
    post_recv(id->qp, 1, msg_mr); /* its Send with Invalidate */
    struct iwarp_conn_param param = {.responder_resources = 4, .initiator_depth = 4};
    check(iwarp_cm_accept(id, &param), "iwarp_cm_accept");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");
    wait_completion(cq); /* MPA: the client speaks first */

    /* Type 1: a verb, effective at once. */
    struct iwarp_mw_bind bind = {
        .bind_info = {.mr = mr,
                      .addr = (uintptr_t)data[TYPE1],
                      .length = AREA,
                      .mw_access_flags = IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ}};
    check(iwarp_bind_mw(id->qp, mw1, &bind), "iwarp_bind_mw");
    /* Type 2: a work request on this QP, with the STag's next key. */
    struct iwarp_send_wr wr = {.opcode = IWARP_WR_BIND_MW};
    wr.bind_mw.mw = mw2;
    wr.bind_mw.rkey = iwarp_inc_rkey(mw2->rkey);
    wr.bind_mw.bind_info = bind.bind_info;
    wr.bind_mw.bind_info.addr = (uintptr_t)data[TYPE2];
    post_and_wait(id->qp, &wr, NULL);
    /* Fast registration: a work request too; posting it gives frmr->rkey its new key. */
    wr = (struct iwarp_send_wr){.opcode = IWARP_WR_REG_MR};
    wr.reg.mr = frmr;
    wr.reg.key = (uint8_t)(iwarp_inc_rkey(frmr->rkey) & 0xFF);
    wr.reg.addr = data[FASTREG];
    wr.reg.length = AREA;
    wr.reg.access = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ;
    post_and_wait(id->qp, &wr, NULL);

    struct advert adv;
    const uint32_t rkeys[NSTAGS] = {mw1->rkey, mw2->rkey, frmr->rkey};
    for (int k = 0; k < NSTAGS; k++) {
        adv.area[k].addr = (uintptr_t)data[k];
        adv.area[k].rkey = rkeys[k];
        adv.area[k].len = AREA;
    }
    memcpy(msgs[2], &adv, sizeof adv);
    struct iwarp_sge sge = {(uintptr_t)msgs[2], sizeof adv, msg_mr->lkey};
    wr = (struct iwarp_send_wr){.opcode = IWARP_WR_SEND};
    post_and_wait(id->qp, &wr, &sge);

    /* The client's Send with Invalidate: its Writes are placed, the type-2 window is gone. */
    struct iwarp_wc wc = wait_completion(cq);
    printf("server: received \"%.*s\", which invalidated %s\n", (int)wc.byte_len, msgs[wc.wr_id],
           !(wc.wc_flags & IWARP_WC_WITH_INV) ? "nothing"
           : wc.invalidated_rkey == mw2->rkey ? "the type-2 window"
                                              : "another STag");
    for (int k = 0; k < NSTAGS; k++)
        printf("server: through the %s: \"%s\"\n", stag_name[k], data[k]);

    /* Revoke the other two: a type-1 window by binding it to nothing, the fast-registered
     * STag by a Local Invalidate work request. */
    bind.bind_info.length = 0;
    check(iwarp_bind_mw(id->qp, mw1, &bind), "iwarp_bind_mw (unbind)");
    wr = (struct iwarp_send_wr){.opcode = IWARP_WR_LOCAL_INV, .invalidate_rkey = frmr->rkey};
    post_and_wait(id->qp, &wr, NULL);
    /* Invalid for us too now: the STag no longer names memory, even as a local key. */
    sge = (struct iwarp_sge){(uintptr_t)data[FASTREG], 8, frmr->lkey};
    wr = (struct iwarp_send_wr){.opcode = IWARP_WR_SEND, .sg_list = &sge, .num_sge = 1};
    printf("server: a Send from the invalidated STag: %s\n",
           iwarp_err_name(iwarp_post_send(id->qp, &wr, NULL)));
    memcpy(msgs[3], "revoked", 7);
    sge = (struct iwarp_sge){(uintptr_t)msgs[3], 7, msg_mr->lkey};
    wr = (struct iwarp_send_wr){.opcode = IWARP_WR_SEND};
    post_and_wait(id->qp, &wr, &sge);

    /* The client's Read through the revoked STag: the library answers it with a Terminate and
     * tells us with an async event. */
    struct pollfd pfd = {.fd = iwarp_async_fd(ctx), .events = POLLIN};
    if (poll(&pfd, 1, 10000) != 1) {
        fprintf(stderr, "mw_fastreg: no async event came\n");
        return 1;
    }
    struct iwarp_async_event aev;
    check(iwarp_get_async_event(ctx, &aev), "iwarp_get_async_event");
    printf("server: async event %s, Terminate cause 0x%06x sent\n",
           iwarp_event_type_str(aev.event_type), aev.term_cause);
    iwarp_ack_async_event(&aev);
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");

    iwarp_cm_destroy_qp(id);
    check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
    check(iwarp_cm_destroy_id(listen_id), "iwarp_cm_destroy_id");
    check(iwarp_dealloc_mw(mw1), "iwarp_dealloc_mw");
    check(iwarp_dealloc_mw(mw2), "iwarp_dealloc_mw");
    check(iwarp_dereg_mr(frmr), "iwarp_dereg_mr");
    check(iwarp_dereg_mr(mr), "iwarp_dereg_mr");
    return 0;
}

static int run_client(struct iwarp_cm_channel *ch, struct iwarp_pd *pd, struct iwarp_cq *cq,
                      struct iwarp_mr *msg_mr, const char *server, int port)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, server, &addr.sin_addr) != 1) {
        fprintf(stderr, "mw_fastreg: %s is not an IPv4 address\n", server);
        return 1;
    }
    /* The source of the Writes and the sink of the Read (REMOTE_WRITE: Read Responses). */
    struct iwarp_mr *mr;
    check(iwarp_reg_mr(pd, data, sizeof data, IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE,
                       &mr),
          "iwarp_reg_mr");
    struct iwarp_cm_id *id;
    check(iwarp_cm_create_id(ch, &id, NULL, IWARP_PS_TCP), "iwarp_cm_create_id");
    check(iwarp_cm_resolve_addr(id, NULL, (struct sockaddr *)&addr, 2000), "resolve_addr");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ADDR_RESOLVED)), "ack");
    check(iwarp_cm_resolve_route(id, 2000), "resolve_route");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ROUTE_RESOLVED)), "ack");
    struct iwarp_qp_init_attr qp_attr = {.send_cq = cq,
                                         .recv_cq = cq,
                                         .cap = {.max_send_wr = 8, .max_recv_wr = 4},
                                         .qp_type = IWARP_QPT_RC};
    check(iwarp_cm_create_qp(id, pd, &qp_attr), "iwarp_cm_create_qp");
    post_recv(id->qp, 0, msg_mr); /* the advertisement */
    post_recv(id->qp, 1, msg_mr); /* "revoked" */
    struct iwarp_conn_param param = {.responder_resources = 4, .initiator_depth = 4};
    check(iwarp_cm_connect(id, &param), "iwarp_cm_connect");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");

    memcpy(msgs[2], "hello", 5);
    struct iwarp_sge sge = {(uintptr_t)msgs[2], 5, msg_mr->lkey};
    struct iwarp_send_wr wr = {.opcode = IWARP_WR_SEND};
    post_and_wait(id->qp, &wr, &sge);
    struct advert adv;
    struct iwarp_wc wc = wait_completion(cq);
    if (wc.byte_len != sizeof adv) {
        fprintf(stderr, "mw_fastreg: the server sent no advertisement\n");
        return 1;
    }
    memcpy(&adv, msgs[0], sizeof adv);

    /* An RDMA Write through each STag. */
    for (int k = 0; k < NSTAGS; k++) {
        int len = snprintf(data[k], AREA, "written through the %s", stag_name[k]) + 1;
        sge = (struct iwarp_sge){(uintptr_t)data[k], (uint32_t)len, mr->lkey};
        wr = (struct iwarp_send_wr){.opcode = IWARP_WR_RDMA_WRITE};
        wr.wr.rdma.remote_addr = adv.area[k].addr;
        wr.wr.rdma.rkey = adv.area[k].rkey;
        post_and_wait(id->qp, &wr, &sge);
    }
    /* Done: a Send with Invalidate revokes the type-2 window as it arrives. */
    memcpy(msgs[3], "written", 7);
    sge = (struct iwarp_sge){(uintptr_t)msgs[3], 7, msg_mr->lkey};
    wr = (struct iwarp_send_wr){.opcode = IWARP_WR_SEND_WITH_INV,
                                .invalidate_rkey = adv.area[TYPE2].rkey};
    post_and_wait(id->qp, &wr, &sge);
    wc = wait_completion(cq);
    printf("client: the server says \"%.*s\"\n", (int)wc.byte_len, msgs[1]);

    /* Read through the revoked fast-registered STag: refused. */
    memset(data[0], 0, AREA);
    sge = (struct iwarp_sge){(uintptr_t)data[0], AREA, mr->lkey};
    wr = (struct iwarp_send_wr){.opcode = IWARP_WR_RDMA_READ, .send_flags = IWARP_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = adv.area[FASTREG].addr;
    wr.wr.rdma.rkey = adv.area[FASTREG].rkey;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    check(iwarp_post_send(id->qp, &wr, NULL), "iwarp_post_send");
    wc = next_completion(cq);
    printf("client: RDMA Read through the revoked STag: %s, Terminate cause 0x%06x, %s\n",
           iwarp_wc_status_str(wc.status), wc.vendor_err,
           data[0][0] ? "data came" : "nothing placed");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");

    iwarp_cm_destroy_qp(id);
    check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
    check(iwarp_dereg_mr(mr), "iwarp_dereg_mr");
    return wc.status == IWARP_WC_SUCCESS; /* success would be wrong */
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* line by line, also into a pipe */
    int port = 0;
    const char *server = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            port = atoi(argv[++i]);
        else
            server = argv[i];
    }
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *msg_mr;
    check(iwarp_ctx_create(NULL, &ctx), "iwarp_ctx_create");
    check(iwarp_cm_create_channel(ctx, &ch), "iwarp_cm_create_channel");
    check(iwarp_alloc_pd(ctx, &pd), "iwarp_alloc_pd");
    check(iwarp_create_cq(ctx, 16, NULL, NULL, 0, &cq), "iwarp_create_cq");
    check(iwarp_reg_mr(pd, msgs, sizeof msgs, IWARP_ACCESS_LOCAL_WRITE, &msg_mr), "iwarp_reg_mr");
    int rc = server ? run_client(ch, pd, cq, msg_mr, server, port)
                    : run_server(ctx, ch, pd, cq, msg_mr, port);
    check(iwarp_dereg_mr(msg_mr), "iwarp_dereg_mr");
    check(iwarp_destroy_cq(cq), "iwarp_destroy_cq");
    check(iwarp_dealloc_pd(pd), "iwarp_dealloc_pd");
    check(iwarp_cm_destroy_channel(ch), "iwarp_cm_destroy_channel");
    check(iwarp_ctx_destroy(ctx), "iwarp_ctx_destroy");
    return rc;
}
