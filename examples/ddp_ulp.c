/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ddp_ulp: a protocol of its own directly on DDP (RFC 5041), without RDMAP (include/iwarp/ddp.h).
 * DDP places data in two ways, and this ULP uses both:
 *  - tagged: the sender names the receiver's buffer (an STag and an offset, the Tagged Offset)
 *    and the data lands there, in place, however many segments it takes. The server advertises
 *    its buffer in the connection's private data; the client writes a 100000-octet block into
 *    it.
 *  - untagged: the message goes to the next buffer the receiver posted to a queue (QN). The ULP
 *    uses queue 1 for records and queue 0 for control, and carries its own 5-octet header in
 *    DDP's RsvdULP field, which DDP delivers untouched.
 * The client sends the block (tagged), a record (QN 1) and "end" (QN 0); the server checks the
 * block, answers on QN 0 and the client disconnects. DDP has no Terminate and no Reads: the
 * ULP does what RDMAP would.
 *
 *   server:  ddp_ulp [-p PORT]          (no PORT or 0: any free port; it is printed)
 *   client:  ddp_ulp -p PORT SERVER_IP
 *
 * Uses only the public API (include/iwarp/). Build: cc ddp_ulp.c $(pkg-config --cflags
 * --libs libiwarp)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/ddp.h> /* not part of iwarp.h: the DDP-level interface */
#include <iwarp/iwarp.h>

#define BLOCK    100000u /* the tagged block: many DDP segments */
#define MSG_SIZE 128u    /* an untagged message, at most */
#define QN_CTRL  0u
#define QN_DATA  1u

/* The server's Tagged Buffer, in the accept's private data. */
struct buffer_advert {
    uint64_t to; /* Tagged Offset of its first octet (its address: iwarp_reg_mr) */
    uint32_t stag;
    uint32_t len;
};

static char block[BLOCK];      /* tagged: the client's source, the server's sink */
static char msgs[4][MSG_SIZE]; /* untagged messages, sent or received */

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "ddp_ulp: %s: %s\n", what, iwarp_strerror(rc));
        exit(1);
    }
}

static struct iwarp_cm_event *wait_event(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type want)
{
    struct iwarp_cm_event *ev;
    check(iwarp_cm_get_event_timeout(ch, &ev, 10000), "waiting for a CM event");
    if (ev->event != want) {
        fprintf(stderr, "ddp_ulp: got %s (%s), expected %s\n", iwarp_cm_event_str(ev->event),
                iwarp_strerror(ev->status), iwarp_cm_event_str(want));
        exit(1);
    }
    return ev;
}

/* The next indication (receive) or send completion; exits on an error. */
static struct iwarp_wc wait_completion(struct iwarp_cq *cq)
{
    struct iwarp_wc wc;
    int n;
    while ((n = iwarp_poll_cq(cq, 1, &wc)) == 0)
        check(iwarp_cq_wait(cq, 5000), "waiting for a completion");
    check(n, "iwarp_poll_cq");
    if (wc.status != IWARP_WC_SUCCESS) {
        fprintf(stderr, "ddp_ulp: completion failed: %s\n", iwarp_wc_status_str(wc.status));
        exit(1);
    }
    return wc;
}

/* Post msgs[i] as a receive buffer of queue qn. */
static void post_recv(struct iwarp_qp *qp, uint32_t qn, int i, struct iwarp_mr *mr)
{
    struct iwarp_sge sge = {(uintptr_t)msgs[i], MSG_SIZE, mr->lkey};
    struct iwarp_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1};
    check(iwarp_ddp_post_recv(qp, qn, &wr, NULL), "iwarp_ddp_post_recv");
}

/* Send an untagged message (text, from msgs[i]) to queue qn with the ULP header hdr. */
static void send_untagged(struct iwarp_qp *qp, uint32_t qn, int i, const char *text,
                          const char hdr[5], struct iwarp_mr *mr)
{
    snprintf(msgs[i], MSG_SIZE, "%s", text);
    struct iwarp_sge sge = {(uintptr_t)msgs[i], (uint32_t)strlen(text), mr->lkey};
    struct iwarp_ddp_send_wr wr = {.wr_id = (uint64_t)i,
                                   .sg_list = &sge,
                                   .num_sge = 1,
                                   .send_flags = IWARP_SEND_SIGNALED,
                                   .qn = qn};
    memcpy(wr.rsvdulp, hdr, 5);
    check(iwarp_ddp_post_send(qp, &wr, NULL), "iwarp_ddp_post_send");
}

/* The pattern of the tagged block. */
static char pattern(uint32_t i)
{
    return (char)('a' + (i * 7u + i / 251u) % 26u);
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
    struct iwarp_cm_id *id;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *block_mr, *msg_mr;
    check(iwarp_ctx_create(NULL, &ctx), "iwarp_ctx_create");
    check(iwarp_cm_create_channel(ctx, &ch), "iwarp_cm_create_channel");
    check(iwarp_cm_create_id(ch, &id, NULL, IWARP_PS_TCP), "iwarp_cm_create_id");
    check(iwarp_alloc_pd(ctx, &pd), "iwarp_alloc_pd");
    check(iwarp_create_cq(ctx, 16, NULL, NULL, 0, &cq), "iwarp_create_cq");
    /* REMOTE_WRITE makes the block a Tagged Buffer: its rkey is the STag the peer names. */
    check(iwarp_reg_mr(pd, block, sizeof block,
                       IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE, &block_mr),
          "iwarp_reg_mr");
    check(iwarp_reg_mr(pd, msgs, sizeof msgs, IWARP_ACCESS_LOCAL_WRITE, &msg_mr), "iwarp_reg_mr");
    /* A DDP-level QP: two untagged queues, no RDMAP. */
    struct iwarp_ddp_qp_init_attr qp_attr = {
        .send_cq = cq, .recv_cq = cq, .num_queues = 2, .max_recv_wr = 2, .max_send_wr = 4};
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

    if (!server) {
        struct iwarp_cm_id *listen_id = id;
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        check(iwarp_cm_bind_addr(listen_id, (struct sockaddr *)&addr), "iwarp_cm_bind_addr");
        check(iwarp_cm_listen(listen_id, 1), "iwarp_cm_listen");
        printf("server: listening on port %u\n",
               ntohs(((struct sockaddr_in *)&listen_id->local_addr)->sin_port));
        struct iwarp_cm_event *ev = wait_event(ch, IWARP_CM_EVENT_CONNECT_REQUEST);
        id = ev->id;
        check(iwarp_cm_ack_event(ev), "iwarp_cm_ack_event");
        check(iwarp_ddp_cm_create_qp(id, pd, &qp_attr), "iwarp_ddp_cm_create_qp");
        post_recv(id->qp, QN_DATA, 0, msg_mr);
        post_recv(id->qp, QN_CTRL, 1, msg_mr);
        struct buffer_advert adv = {(uintptr_t)block, block_mr->rkey, BLOCK};
        struct iwarp_conn_param param = {.private_data = &adv, .private_data_len = sizeof adv};
        check(iwarp_cm_accept(id, &param), "iwarp_cm_accept");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");

        /* Three indications, in the order the client sent the messages. */
        struct iwarp_wc wc = wait_completion(cq);
        if (wc.opcode != IWARP_WC_DDP_TAGGED_RECV) {
            fprintf(stderr, "ddp_ulp: expected the tagged block first\n");
            return 1;
        }
        uint32_t bad = 0;
        for (uint32_t i = 0; i < BLOCK; i++)
            bad += block[i] != pattern(i);
        printf("server: tagged message to STag %s, header '%c': %u octets placed, %u differ\n",
               wc.ddp_stag == block_mr->rkey ? "of my block" : "UNKNOWN", wc.ddp_rsvdulp[0],
               wc.byte_len, bad);
        uint32_t placed = wc.byte_len;
        for (int k = 0; k < 2; k++) {
            wc = wait_completion(cq);
            if (wc.opcode != IWARP_WC_DDP_RECV) {
                fprintf(stderr, "ddp_ulp: expected an untagged message\n");
                return 1;
            }
            printf("server: untagged message on QN %u, MSN %u, header \"%.5s\": \"%.*s\"\n",
                   wc.ddp_qn, wc.ddp_msn, (const char *)wc.ddp_rsvdulp, (int)wc.byte_len,
                   msgs[wc.wr_id]);
        }
        /* Answer on the client's control queue; wait until it is handed to TCP. */
        char answer[64];
        snprintf(answer, sizeof answer, "placed %u octets, %u differ", placed, bad);
        send_untagged(id->qp, QN_CTRL, 2, answer, "ANSW1", msg_mr);
        wc = wait_completion(cq);
        if (wc.opcode != IWARP_WC_DDP_SEND)
            return 1;
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");
        iwarp_cm_destroy_qp(id);
        check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
        id = listen_id;
    } else {
        if (inet_pton(AF_INET, server, &addr.sin_addr) != 1) {
            fprintf(stderr, "ddp_ulp: %s is not an IPv4 address\n", server);
            return 1;
        }
        check(iwarp_cm_resolve_addr(id, NULL, (struct sockaddr *)&addr, 2000), "resolve_addr");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ADDR_RESOLVED)), "ack");
        check(iwarp_cm_resolve_route(id, 2000), "resolve_route");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ROUTE_RESOLVED)), "ack");
        check(iwarp_ddp_cm_create_qp(id, pd, &qp_attr), "iwarp_ddp_cm_create_qp");
        post_recv(id->qp, QN_CTRL, 3, msg_mr); /* for the server's answer */
        struct iwarp_conn_param param = {0};
        check(iwarp_cm_connect(id, &param), "iwarp_cm_connect");
        struct iwarp_cm_event *ev = wait_event(ch, IWARP_CM_EVENT_ESTABLISHED);
        struct buffer_advert adv;
        if (ev->param.private_data_len != sizeof adv) {
            fprintf(stderr, "ddp_ulp: the server sent no buffer advertisement\n");
            return 1;
        }
        memcpy(&adv, ev->param.private_data, sizeof adv);
        check(iwarp_cm_ack_event(ev), "ack");

        /* Tagged: the block goes straight into the server's buffer (RsvdULP: 1 octet). */
        for (uint32_t i = 0; i < BLOCK; i++)
            block[i] = pattern(i);
        struct iwarp_sge sge = {(uintptr_t)block, BLOCK, block_mr->lkey};
        struct iwarp_ddp_send_wr wr = {.wr_id = 9,
                                       .sg_list = &sge,
                                       .num_sge = 1,
                                       .send_flags = IWARP_SEND_SIGNALED,
                                       .tagged = true,
                                       .stag = adv.stag,
                                       .to = adv.to,
                                       .rsvdulp = {'B'}};
        check(iwarp_ddp_post_send(id->qp, &wr, NULL), "iwarp_ddp_post_send");
        /* Untagged: a record on QN 1, then "end" on QN 0, each with our 5-octet header. */
        send_untagged(id->qp, QN_DATA, 0, "record: 100000 octets of pattern", "REC01", msg_mr);
        send_untagged(id->qp, QN_CTRL, 1, "end", "END01", msg_mr);
        /* Three send completions and the answer, in some order. */
        for (int k = 0; k < 4; k++) {
            struct iwarp_wc wc = wait_completion(cq);
            if (wc.opcode == IWARP_WC_DDP_RECV)
                printf("client: answer on QN %u, header \"%.5s\": \"%.*s\"\n", wc.ddp_qn,
                       (const char *)wc.ddp_rsvdulp, (int)wc.byte_len, msgs[3]);
        }
        check(iwarp_cm_disconnect(id), "iwarp_cm_disconnect");
        check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");
        iwarp_cm_destroy_qp(id);
    }

    check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
    check(iwarp_dereg_mr(msg_mr), "iwarp_dereg_mr");
    check(iwarp_dereg_mr(block_mr), "iwarp_dereg_mr");
    check(iwarp_destroy_cq(cq), "iwarp_destroy_cq");
    check(iwarp_dealloc_pd(pd), "iwarp_dealloc_pd");
    check(iwarp_cm_destroy_channel(ch), "iwarp_cm_destroy_channel");
    check(iwarp_ctx_destroy(ctx), "iwarp_ctx_destroy");
    return 0;
}
