/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hello_rdma: the first libiwarp program to read. Two processes connect over TCP; the client
 * RDMA-Writes a greeting into the server's memory, RDMA-Reads it back, and Sends "done".
 *
 *   server:  hello_rdma [-p PORT]          (default 7471; 0: any free port, printed)
 *   client:  hello_rdma [-p PORT] SERVER_IP
 *
 * Uses only the public API (include/iwarp/). Build: cc hello_rdma.c $(pkg-config --cflags
 * --libs libiwarp)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define BUF_SIZE 4096

/* What the server tells the client in its accept's private data: where to write. */
struct buffer_advert {
    uint64_t addr;
    uint32_t rkey;
    uint32_t len;
};

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "hello_rdma: %s: %s\n", what, iwarp_strerror(rc));
        exit(1);
    }
}

/* Wait for the next connection event and check its type. */
static struct iwarp_cm_event *wait_event(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type want)
{
    struct iwarp_cm_event *ev;
    check(iwarp_cm_get_event_timeout(ch, &ev, 10000), "waiting for a CM event");
    if (ev->event != want) {
        fprintf(stderr, "hello_rdma: got %s (%s), expected %s\n", iwarp_cm_event_str(ev->event),
                iwarp_strerror(ev->status), iwarp_cm_event_str(want));
        exit(1);
    }
    return ev;
}

/* Wait for one completion and check it succeeded. */
static struct iwarp_wc wait_completion(struct iwarp_cq *cq)
{
    struct iwarp_wc wc;
    int n;
    while ((n = iwarp_poll_cq(cq, 1, &wc)) == 0)
        check(iwarp_cq_wait(cq, 5000), "waiting for a completion");
    check(n, "iwarp_poll_cq");
    if (wc.status != IWARP_WC_SUCCESS) {
        fprintf(stderr, "hello_rdma: work request failed: %s\n", iwarp_wc_status_str(wc.status));
        exit(1);
    }
    return wc;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* line by line, also into a pipe */
    int port = 7471;
    const char *server = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            port = atoi(argv[++i]);
        else
            server = argv[i];
    }

    /* A context runs a progress thread: RDMA Reads are answered while we sleep. */
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_cm_id *id;
    check(iwarp_ctx_create(NULL, &ctx), "iwarp_ctx_create");
    check(iwarp_cm_create_channel(ctx, &ch), "iwarp_cm_create_channel");
    check(iwarp_cm_create_id(ch, &id, NULL, IWARP_PS_TCP), "iwarp_cm_create_id");

    /* Memory the peer may read and write, and a queue pair to move data. */
    static char buf[BUF_SIZE];
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *mr;
    check(iwarp_alloc_pd(ctx, &pd), "iwarp_alloc_pd");
    check(iwarp_create_cq(ctx, 16, NULL, NULL, 0, &cq), "iwarp_create_cq");
    check(iwarp_reg_mr(
              pd, buf, sizeof buf,
              IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_REMOTE_READ, &mr),
          "iwarp_reg_mr");
    struct iwarp_qp_init_attr qp_attr = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IWARP_QPT_RC,
    };
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

    if (!server) {
        /* Server: listen, accept one client and tell it where our buffer is. */
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        check(iwarp_cm_bind_addr(id, (struct sockaddr *)&addr), "iwarp_cm_bind_addr");
        check(iwarp_cm_listen(id, 1), "iwarp_cm_listen");
        printf("server: listening on port %u\n", /* the port bound: -p 0 picks a free one */
               ntohs(((struct sockaddr_in *)&id->local_addr)->sin_port));
        struct iwarp_cm_event *ev = wait_event(ch, IWARP_CM_EVENT_CONNECT_REQUEST);
        struct iwarp_cm_id *conn = ev->id;
        check(iwarp_cm_ack_event(ev), "iwarp_cm_ack_event");
        check(iwarp_cm_create_qp(conn, pd, &qp_attr), "iwarp_cm_create_qp");

        /* Post a receive for the client's "done" before accepting: Sends need one waiting. */
        struct iwarp_sge sge = {(uintptr_t)buf + 2048, 64, mr->lkey};
        struct iwarp_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
        check(iwarp_post_recv(conn->qp, &rwr, NULL), "iwarp_post_recv");

        struct buffer_advert adv = {(uintptr_t)buf, mr->rkey, 2048};
        struct iwarp_conn_param param = {.private_data = &adv,
                                         .private_data_len = sizeof adv,
                                         .responder_resources = 4,
                                         .initiator_depth = 4};
        check(iwarp_cm_accept(conn, &param), "iwarp_cm_accept");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");

        struct iwarp_wc wc = wait_completion(cq); /* the client's "done" */
        printf("server: received \"%.*s\"; my buffer now holds \"%s\"\n", (int)wc.byte_len,
               buf + 2048, buf);
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");
        iwarp_cm_destroy_qp(conn);
        check(iwarp_cm_destroy_id(conn), "iwarp_cm_destroy_id");
    } else {
        /* Client: connect, learn the server's buffer from its private data. */
        if (inet_pton(AF_INET, server, &addr.sin_addr) != 1) {
            fprintf(stderr, "hello_rdma: %s is not an IPv4 address\n", server);
            return 1;
        }
        check(iwarp_cm_resolve_addr(id, NULL, (struct sockaddr *)&addr, 2000), "resolve_addr");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ADDR_RESOLVED)), "ack");
        check(iwarp_cm_resolve_route(id, 2000), "resolve_route");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ROUTE_RESOLVED)), "ack");
        check(iwarp_cm_create_qp(id, pd, &qp_attr), "iwarp_cm_create_qp");
        struct iwarp_conn_param param = {.responder_resources = 4, .initiator_depth = 4};
        check(iwarp_cm_connect(id, &param), "iwarp_cm_connect");
        struct iwarp_cm_event *ev = wait_event(ch, IWARP_CM_EVENT_ESTABLISHED);
        struct buffer_advert adv;
        if (ev->param.private_data_len != sizeof adv) {
            fprintf(stderr, "hello_rdma: the server sent no buffer advertisement\n");
            return 1;
        }
        memcpy(&adv, ev->param.private_data, sizeof adv);
        check(iwarp_cm_ack_event(ev), "ack");

        /* RDMA Write our greeting straight into the server's memory. */
        const char *hello = "Hello from libiwarp!";
        size_t len = strlen(hello) + 1;
        memcpy(buf, hello, len);
        struct iwarp_sge sge = {(uintptr_t)buf, (uint32_t)len, mr->lkey};
        struct iwarp_send_wr wr = {.wr_id = 1,
                                   .sg_list = &sge,
                                   .num_sge = 1,
                                   .opcode = IWARP_WR_RDMA_WRITE,
                                   .send_flags = IWARP_SEND_SIGNALED};
        wr.wr.rdma.remote_addr = adv.addr;
        wr.wr.rdma.rkey = adv.rkey;
        check(iwarp_post_send(id->qp, &wr, NULL), "post RDMA Write");
        wait_completion(cq);

        /* RDMA Read it back into another part of our buffer (the sink needs REMOTE_WRITE:
         * Read Responses are tagged writes into it). */
        struct iwarp_sge rsge = {(uintptr_t)buf + 1024, (uint32_t)len, mr->lkey};
        wr = (struct iwarp_send_wr){.wr_id = 2,
                                    .sg_list = &rsge,
                                    .num_sge = 1,
                                    .opcode = IWARP_WR_RDMA_READ,
                                    .send_flags = IWARP_SEND_SIGNALED};
        wr.wr.rdma.remote_addr = adv.addr;
        wr.wr.rdma.rkey = adv.rkey;
        check(iwarp_post_send(id->qp, &wr, NULL), "post RDMA Read");
        wait_completion(cq);
        printf("client: read back \"%s\"\n", buf + 1024);
        if (strcmp(buf + 1024, hello) != 0)
            return 1;

        /* Tell the server we are done with a Send, then disconnect. */
        memcpy(buf + 2048, "done", 4);
        struct iwarp_sge ssge = {(uintptr_t)buf + 2048, 4, mr->lkey};
        wr = (struct iwarp_send_wr){.wr_id = 3,
                                    .sg_list = &ssge,
                                    .num_sge = 1,
                                    .opcode = IWARP_WR_SEND,
                                    .send_flags = IWARP_SEND_SIGNALED};
        check(iwarp_post_send(id->qp, &wr, NULL), "post Send");
        wait_completion(cq);
        check(iwarp_cm_disconnect(id), "iwarp_cm_disconnect");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");
        iwarp_cm_destroy_qp(id);
    }

    /* Tear down in reverse order. */
    check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
    check(iwarp_dereg_mr(mr), "iwarp_dereg_mr");
    check(iwarp_destroy_cq(cq), "iwarp_destroy_cq");
    check(iwarp_dealloc_pd(pd), "iwarp_dealloc_pd");
    check(iwarp_cm_destroy_channel(ch), "iwarp_cm_destroy_channel");
    check(iwarp_ctx_destroy(ctx), "iwarp_ctx_destroy");
    return 0;
}
