/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sctp_rdma: RDMA over DDP over SCTP (RFC 5043) instead of MPA over TCP: hello_rdma's exchange
 * with the CM ids created with IWARP_PS_SCTP, both ends. Two things differ from TCP. The server
 * sends first: over SCTP either side may (there is no MPA rule that the connector speaks
 * first), so it Sends its buffer advertisement as soon as it accepts. And the client's two
 * connections, being to the same peer, share one SCTP association, one SCTP stream each. On each,
 * it RDMA-Writes a greeting into the server's memory, RDMA-Reads it back and Sends "done".
 *
 *   server:  sctp_rdma [-p PORT]          (no PORT or 0: any free port; it is printed)
 *   client:  sctp_rdma -p PORT SERVER_IP
 *
 * SCTP runs in-process on usrsctp, encapsulated in UDP (RFC 6951): PORT is a UDP port, and no
 * kernel SCTP is needed. Uses only the public API (include/iwarp/). Build: cc sctp_rdma.c
 * $(pkg-config --cflags --libs libiwarp)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define NCONN    2    /* connections, i.e. SCTP streams of the one association */
#define BUF_SIZE 1024 /* per connection */

/* What the server Sends first on each connection: where the client may write. */
struct buffer_advert {
    uint64_t addr;
    uint32_t rkey;
    uint32_t len;
};

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "sctp_rdma: %s: %s\n", what, iwarp_strerror(rc));
        exit(1);
    }
}

static struct iwarp_cm_event *wait_event(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type want)
{
    struct iwarp_cm_event *ev;
    check(iwarp_cm_get_event_timeout(ch, &ev, 10000), "waiting for a CM event");
    if (ev->event != want) {
        fprintf(stderr, "sctp_rdma: got %s (%s), expected %s\n", iwarp_cm_event_str(ev->event),
                iwarp_strerror(ev->status), iwarp_cm_event_str(want));
        exit(1);
    }
    return ev;
}

static struct iwarp_wc wait_completion(struct iwarp_cq *cq)
{
    struct iwarp_wc wc;
    int n;
    while ((n = iwarp_poll_cq(cq, 1, &wc)) == 0)
        check(iwarp_cq_wait(cq, 5000), "waiting for a completion");
    check(n, "iwarp_poll_cq");
    if (wc.status != IWARP_WC_SUCCESS) {
        fprintf(stderr, "sctp_rdma: work request failed: %s\n", iwarp_wc_status_str(wc.status));
        exit(1);
    }
    return wc;
}

/* Post one work request of one SGE and wait for its completion. */
static struct iwarp_wc post_and_wait(struct iwarp_qp *qp, enum iwarp_wr_opcode op, void *addr,
                                     uint32_t len, uint32_t lkey, const struct buffer_advert *to)
{
    struct iwarp_sge sge = {(uintptr_t)addr, len, lkey};
    struct iwarp_send_wr wr = {
        .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = IWARP_SEND_SIGNALED};
    if (to) {
        wr.wr.rdma.remote_addr = to->addr;
        wr.wr.rdma.rkey = to->rkey;
    }
    check(iwarp_post_send(qp, &wr, NULL), "iwarp_post_send");
    return wait_completion(qp->send_cq);
}

static void post_recv(struct iwarp_qp *qp, void *addr, uint32_t len, uint32_t lkey)
{
    struct iwarp_sge sge = {(uintptr_t)addr, len, lkey};
    struct iwarp_recv_wr wr = {.sg_list = &sge, .num_sge = 1};
    check(iwarp_post_recv(qp, &wr, NULL), "iwarp_post_recv");
}

/* Wait until every connection has reported DISCONNECTED, in whatever order. */
static void wait_disconnected(struct iwarp_cm_channel *ch, int n)
{
    for (int i = 0; i < n; i++)
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");
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
    struct iwarp_mr *mr;
    static char buf[NCONN][BUF_SIZE];
    check(iwarp_ctx_create(NULL, &ctx), "iwarp_ctx_create");
    check(iwarp_cm_create_channel(ctx, &ch), "iwarp_cm_create_channel");
    check(iwarp_alloc_pd(ctx, &pd), "iwarp_alloc_pd");
    check(iwarp_reg_mr(
              pd, buf, sizeof buf,
              IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ, &mr),
          "iwarp_reg_mr");
    /* One CQ per connection keeps each exchange's completions apart. */
    struct iwarp_cm_id *ids[NCONN];
    struct iwarp_cq *cqs[NCONN];
    struct iwarp_qp_init_attr qp_attr = {
        .cap = {.max_send_wr = 4, .max_recv_wr = 4},
        .qp_type = IWARP_QPT_RC,
    };
    struct iwarp_conn_param param = {.responder_resources = 4, .initiator_depth = 4};
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

    if (!server) {
        /* Server: listen (the SCTP endpoint's UDP port), then accept NCONN connections. */
        struct iwarp_cm_id *listen_id;
        check(iwarp_cm_create_id(ch, &listen_id, NULL, IWARP_PS_SCTP), "iwarp_cm_create_id");
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        check(iwarp_cm_bind_addr(listen_id, (struct sockaddr *)&addr), "iwarp_cm_bind_addr");
        check(iwarp_cm_listen(listen_id, NCONN), "iwarp_cm_listen");
        printf("server: listening on port %u\n",
               ntohs(((struct sockaddr_in *)&listen_id->local_addr)->sin_port));
        for (int i = 0; i < NCONN; i++) {
            struct iwarp_cm_event *ev = wait_event(ch, IWARP_CM_EVENT_CONNECT_REQUEST);
            ids[i] = ev->id;
            check(iwarp_cm_ack_event(ev), "iwarp_cm_ack_event");
            check(iwarp_create_cq(ctx, 8, NULL, NULL, 0, &cqs[i]), "iwarp_create_cq");
            qp_attr.send_cq = qp_attr.recv_cq = cqs[i];
            check(iwarp_cm_create_qp(ids[i], pd, &qp_attr), "iwarp_cm_create_qp");
            post_recv(ids[i]->qp, buf[i] + 512, 64, mr->lkey); /* for the client's "done" */
            check(iwarp_cm_accept(ids[i], &param), "iwarp_cm_accept");
            check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");
            /* The server speaks first: allowed over SCTP. */
            struct buffer_advert adv = {(uintptr_t)buf[i], mr->rkey, 512};
            memcpy(buf[i] + 768, &adv, sizeof adv);
            post_and_wait(ids[i]->qp, IWARP_WR_SEND, buf[i] + 768, sizeof adv, mr->lkey, NULL);
        }
        for (int i = 0; i < NCONN; i++) {
            struct iwarp_wc wc = wait_completion(cqs[i]);
            printf("server: connection %d received \"%.*s\"; its buffer holds \"%s\"\n", i,
                   (int)wc.byte_len, buf[i] + 512, buf[i]);
        }
        wait_disconnected(ch, NCONN);
        check(iwarp_cm_destroy_id(listen_id), "iwarp_cm_destroy_id");
    } else {
        /* Client: NCONN connections to one server: one association, a stream each. */
        if (inet_pton(AF_INET, server, &addr.sin_addr) != 1) {
            fprintf(stderr, "sctp_rdma: %s is not an IPv4 address\n", server);
            return 1;
        }
        for (int i = 0; i < NCONN; i++) {
            check(iwarp_cm_create_id(ch, &ids[i], NULL, IWARP_PS_SCTP), "iwarp_cm_create_id");
            check(iwarp_cm_resolve_addr(ids[i], NULL, (struct sockaddr *)&addr, 2000),
                  "resolve_addr");
            check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ADDR_RESOLVED)), "ack");
            check(iwarp_cm_resolve_route(ids[i], 2000), "resolve_route");
            check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ROUTE_RESOLVED)), "ack");
            check(iwarp_create_cq(ctx, 8, NULL, NULL, 0, &cqs[i]), "iwarp_create_cq");
            qp_attr.send_cq = qp_attr.recv_cq = cqs[i];
            check(iwarp_cm_create_qp(ids[i], pd, &qp_attr), "iwarp_cm_create_qp");
            post_recv(ids[i]->qp, buf[i] + 768, 64, mr->lkey); /* for the advertisement */
            check(iwarp_cm_connect(ids[i], &param), "iwarp_cm_connect");
            check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");
        }
        for (int i = 0; i < NCONN; i++) {
            struct buffer_advert adv;
            struct iwarp_wc wc = wait_completion(cqs[i]);
            if (wc.byte_len != sizeof adv) {
                fprintf(stderr, "sctp_rdma: the server sent no buffer advertisement\n");
                return 1;
            }
            memcpy(&adv, buf[i] + 768, sizeof adv);

            /* RDMA Write a greeting, RDMA Read it back, Send "done". */
            int len = snprintf(buf[i], 256, "Hello over SCTP, connection %d!", i) + 1;
            struct iwarp_qp *qp = ids[i]->qp;
            post_and_wait(qp, IWARP_WR_RDMA_WRITE, buf[i], (uint32_t)len, mr->lkey, &adv);
            post_and_wait(qp, IWARP_WR_RDMA_READ, buf[i] + 256, (uint32_t)len, mr->lkey, &adv);
            printf("client: connection %d read back \"%s\"\n", i, buf[i] + 256);
            if (strcmp(buf[i] + 256, buf[i]) != 0)
                return 1;
            memcpy(buf[i] + 512, "done", 4);
            post_and_wait(qp, IWARP_WR_SEND, buf[i] + 512, 4, mr->lkey, NULL);
        }
        for (int i = 0; i < NCONN; i++)
            check(iwarp_cm_disconnect(ids[i]), "iwarp_cm_disconnect");
        wait_disconnected(ch, NCONN);
    }

    /* Tear down in reverse order. */
    for (int i = 0; i < NCONN; i++) {
        iwarp_cm_destroy_qp(ids[i]);
        check(iwarp_cm_destroy_id(ids[i]), "iwarp_cm_destroy_id");
        check(iwarp_destroy_cq(cqs[i]), "iwarp_destroy_cq");
    }
    check(iwarp_dereg_mr(mr), "iwarp_dereg_mr");
    check(iwarp_dealloc_pd(pd), "iwarp_dealloc_pd");
    check(iwarp_cm_destroy_channel(ch), "iwarp_cm_destroy_channel");
    check(iwarp_ctx_destroy(ctx), "iwarp_ctx_destroy");
    return 0;
}
