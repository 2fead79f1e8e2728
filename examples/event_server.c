/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * event_server: an event-driven key-value server. One thread serves many clients at once. It
 * sleeps in poll() on two file descriptors: the CM event channel (clients connect and leave)
 * and a completion channel (requests arrive). Every connection's QP takes its receive buffers
 * from one shared receive queue (SRQ), so the server's buffers do not grow with its clients.
 * A client Sends "PUT key value" or "GET key"; the server answers with a Send: "OK",
 * "VALUE value" or "NOT_FOUND".
 *
 *   server:  event_server [-p PORT] [-n CLIENTS]     (no PORT or 0: any free port; with
 *                                                     CLIENTS, exit once that many have left)
 *   client:  event_server -p PORT [-r ROUNDS] -c NAME SERVER_IP
 *
 * A client PUTs NAME = "NAME-<round>" and GETs it back ROUNDS times (default 20), then GETs a
 * key nobody set. examples/mt_client.c is a multi-threaded client for the same server.
 *
 * Uses only the public API (include/iwarp/). Build: cc event_server.c $(pkg-config --cflags
 * --libs libiwarp)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define MSG_SIZE    64 /* a request or a reply, at most */
#define SRQ_DEPTH   64 /* receive buffers shared by all connections */
#define MAX_CONNS   32 /* clients at once */
#define MAX_KEYS    64
#define CQ_ENTRIES  (SRQ_DEPTH + MAX_CONNS * 8)
#define SEND_DEPTH  8
#define REPLY_WR_ID UINT64_MAX /* receives' wr_id is their buffer's index */

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "event_server: %s: %s\n", what, iwarp_strerror(rc));
        exit(1);
    }
}

/* ---- the key-value store ------------------------------------------------------------------ */

static struct {
    char key[32];
    char value[48];
} store[MAX_KEYS];
static int nkeys;

/* Answer one request (a NUL-terminated line) into reply (MSG_SIZE octets). */
static void kv_handle(const char *req, char *reply)
{
    char key[32], value[48];
    if (sscanf(req, "PUT %31s %47s", key, value) == 2) {
        int i = 0;
        while (i < nkeys && strcmp(store[i].key, key) != 0)
            i++;
        if (i == MAX_KEYS) {
            snprintf(reply, MSG_SIZE, "FULL");
            return;
        }
        if (i == nkeys)
            nkeys++;
        snprintf(store[i].key, sizeof store[i].key, "%s", key);
        snprintf(store[i].value, sizeof store[i].value, "%s", value);
        snprintf(reply, MSG_SIZE, "OK");
    } else if (sscanf(req, "GET %31s", key) == 1) {
        for (int i = 0; i < nkeys; i++)
            if (!strcmp(store[i].key, key)) {
                snprintf(reply, MSG_SIZE, "VALUE %s", store[i].value);
                return;
            }
        snprintf(reply, MSG_SIZE, "NOT_FOUND");
    } else {
        snprintf(reply, MSG_SIZE, "BAD_REQUEST");
    }
}

/* ---- the server ----------------------------------------------------------------------------- */

struct server {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *cm_ch;
    struct iwarp_cm_id *listen_id;
    struct iwarp_comp_channel *comp_ch;
    struct iwarp_cq *cq;
    struct iwarp_pd *pd;
    struct iwarp_srq *srq;
    struct iwarp_mr *mr;
    char bufs[SRQ_DEPTH][MSG_SIZE]; /* the SRQ's receive buffers */
    struct conn {
        struct iwarp_cm_id *id; /* NULL: the slot is free */
        uint32_t qp_num;
        unsigned requests;
    } conns[MAX_CONNS];
    int nconns;   /* connected now */
    int peak;     /* the most at once */
    int finished; /* clients that came and left */
};

/* Give receive buffer i (back) to the SRQ: whichever connection's Send comes next fills it. */
static void post_buffer(struct server *s, int i)
{
    struct iwarp_sge sge = {(uintptr_t)s->bufs[i], MSG_SIZE, s->mr->lkey};
    struct iwarp_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1};
    check(iwarp_post_srq_recv(s->srq, &wr, NULL), "iwarp_post_srq_recv");
}

static struct conn *conn_by_qp_num(struct server *s, uint32_t qp_num)
{
    for (int i = 0; i < MAX_CONNS; i++)
        if (s->conns[i].id && s->conns[i].qp_num == qp_num)
            return &s->conns[i];
    return NULL;
}

static struct conn *conn_by_id(struct server *s, struct iwarp_cm_id *id)
{
    for (int i = 0; i < MAX_CONNS; i++)
        if (s->conns[i].id == id)
            return &s->conns[i];
    return NULL;
}

static void conn_close(struct server *s, struct conn *c)
{
    iwarp_cm_destroy_qp(c->id);
    check(iwarp_cm_destroy_id(c->id), "iwarp_cm_destroy_id");
    c->id = NULL;
    s->nconns--;
    s->finished++;
}

/* A new client: its QP shares the SRQ and the CQ; accept it. */
static void on_connect_request(struct server *s, struct iwarp_cm_id *id)
{
    struct conn *c = conn_by_id(s, NULL); /* a free slot */
    if (!c) {
        printf("server: too many clients, rejecting one\n");
        check(iwarp_cm_reject(id, NULL, 0), "iwarp_cm_reject");
        check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
        return;
    }
    struct iwarp_qp_init_attr qp_attr = {
        .send_cq = s->cq,
        .recv_cq = s->cq,
        .srq = s->srq,
        .cap = {.max_send_wr = SEND_DEPTH, .max_send_sge = 1, .max_inline_data = MSG_SIZE},
        .qp_type = IWARP_QPT_RC,
        .sq_sig_all = 1,
    };
    check(iwarp_cm_create_qp(id, s->pd, &qp_attr), "iwarp_cm_create_qp");
    int rc = iwarp_cm_accept(id, NULL);
    if (rc < 0) { /* the client gave up meanwhile: not the server's problem */
        printf("server: accept failed: %s\n", iwarp_strerror(rc));
        iwarp_cm_destroy_qp(id);
        check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
        return;
    }
    *c = (struct conn){.id = id, .qp_num = id->qp->qp_num};
    if (++s->nconns > s->peak)
        s->peak = s->nconns;
}

/* Take every queued CM event (the channel's fd is non-blocking). */
static void handle_cm_events(struct server *s)
{
    struct iwarp_cm_event *ev;
    int rc;
    while ((rc = iwarp_cm_get_event(s->cm_ch, &ev)) == 0) {
        struct iwarp_cm_id *id = ev->id;
        enum iwarp_cm_event_type type = ev->event;
        int status = ev->status;
        check(iwarp_cm_ack_event(ev), "iwarp_cm_ack_event");
        struct conn *c = conn_by_id(s, id);
        switch (type) {
        case IWARP_CM_EVENT_CONNECT_REQUEST:
            on_connect_request(s, id);
            break;
        case IWARP_CM_EVENT_ESTABLISHED:
            break;
        case IWARP_CM_EVENT_DISCONNECTED: /* the client left */
            if (c)
                conn_close(s, c);
            break;
        default: /* a connection that failed: drop it, keep serving the others */
            printf("server: %s (%s)\n", iwarp_cm_event_str(type), iwarp_strerror(status));
            if (c)
                conn_close(s, c);
            break;
        }
    }
    if (rc != IWARP_ERR_BUSY)
        check(rc, "iwarp_cm_get_event");
}

/* A request came into buffer wc->wr_id: answer it on the QP it came from. */
static void on_request(struct server *s, const struct iwarp_wc *wc)
{
    int i = (int)wc->wr_id;
    struct conn *c = conn_by_qp_num(s, wc->qp_num);
    if (wc->status == IWARP_WC_SUCCESS && c) {
        char req[MSG_SIZE + 1], reply[MSG_SIZE];
        memcpy(req, s->bufs[i], wc->byte_len);
        req[wc->byte_len] = '\0';
        kv_handle(req, reply);
        c->requests++;
        /* INLINE: the reply is copied at post, so a stack buffer will do. */
        struct iwarp_sge sge = {(uintptr_t)reply, (uint32_t)strlen(reply), 0};
        struct iwarp_send_wr wr = {.wr_id = REPLY_WR_ID,
                                   .sg_list = &sge,
                                   .num_sge = 1,
                                   .opcode = IWARP_WR_SEND,
                                   .send_flags = IWARP_SEND_INLINE};
        int rc = iwarp_post_send(c->id->qp, &wr, NULL);
        if (rc < 0) /* the client is leaving: its DISCONNECTED event closes it */
            printf("server: cannot answer client: %s\n", iwarp_strerror(rc));
    } else if (wc->status != IWARP_WC_SUCCESS) {
        printf("server: receive failed: %s\n", iwarp_wc_status_str(wc->status));
    }
    post_buffer(s, i); /* the buffer goes back to the shared pool */
}

/* The completion channel fired: acknowledge, re-arm, then take every completion. */
static void handle_completions(struct server *s)
{
    struct iwarp_cq *cq;
    void *cq_context;
    int rc = iwarp_get_cq_event(s->comp_ch, &cq, &cq_context);
    if (rc == IWARP_ERR_BUSY) /* nothing pending after all */
        return;
    check(rc, "iwarp_get_cq_event");
    iwarp_ack_cq_events(cq, 1);
    /* Arm before polling: a completion that comes after the poll fires the channel again. */
    check(iwarp_req_notify_cq(cq, 0), "iwarp_req_notify_cq");
    struct iwarp_wc wc[16];
    int n;
    while ((n = iwarp_poll_cq(cq, 16, wc)) > 0)
        for (int k = 0; k < n; k++) {
            if (wc[k].wr_id != REPLY_WR_ID) /* a receive: wr_id is its buffer */
                on_request(s, &wc[k]);
            else if (wc[k].status != IWARP_WC_SUCCESS && wc[k].status != IWARP_WC_WR_FLUSH_ERR)
                printf("server: reply failed: %s\n", iwarp_wc_status_str(wc[k].status));
        }
    check(n, "iwarp_poll_cq");
}

static void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        perror("event_server: fcntl");
        exit(1);
    }
}

static int run_server(int port, int max_clients)
{
    static struct server s; /* zeroed; large (the buffers) */
    check(iwarp_ctx_create(NULL, &s.ctx), "iwarp_ctx_create");
    check(iwarp_cm_create_channel(s.ctx, &s.cm_ch), "iwarp_cm_create_channel");
    check(iwarp_create_comp_channel(s.ctx, &s.comp_ch), "iwarp_create_comp_channel");
    set_nonblocking(s.cm_ch->fd);
    set_nonblocking(s.comp_ch->fd);

    /* One CQ, one SRQ and one MR for every connection. */
    check(iwarp_alloc_pd(s.ctx, &s.pd), "iwarp_alloc_pd");
    check(iwarp_create_cq(s.ctx, CQ_ENTRIES, NULL, s.comp_ch, 0, &s.cq), "iwarp_create_cq");
    struct iwarp_srq_init_attr srq_attr = {.attr = {.max_wr = SRQ_DEPTH, .max_sge = 1}};
    check(iwarp_create_srq(s.pd, &srq_attr, &s.srq), "iwarp_create_srq");
    check(iwarp_reg_mr(s.pd, s.bufs, sizeof s.bufs, IWARP_ACCESS_LOCAL_WRITE, &s.mr),
          "iwarp_reg_mr");
    for (int i = 0; i < SRQ_DEPTH; i++)
        post_buffer(&s, i);
    check(iwarp_req_notify_cq(s.cq, 0), "iwarp_req_notify_cq");

    check(iwarp_cm_create_id(s.cm_ch, &s.listen_id, NULL, IWARP_PS_TCP), "iwarp_cm_create_id");
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_ANY)};
    check(iwarp_cm_bind_addr(s.listen_id, (struct sockaddr *)&addr), "iwarp_cm_bind_addr");
    check(iwarp_cm_listen(s.listen_id, MAX_CONNS), "iwarp_cm_listen");
    const struct sockaddr_in *bound = (const struct sockaddr_in *)&s.listen_id->local_addr;
    printf("server: listening on port %u\n", ntohs(bound->sin_port));

    /* The event loop: sleep until either channel has something, handle it, repeat. */
    while (max_clients == 0 || s.finished < max_clients) {
        struct pollfd fds[2] = {{.fd = s.cm_ch->fd, .events = POLLIN},
                                {.fd = s.comp_ch->fd, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("event_server: poll");
            return 1;
        }
        if (fds[1].revents)
            handle_completions(&s);
        if (fds[0].revents)
            handle_cm_events(&s);
    }
    printf("server: served %d clients, %d keys stored\n", s.finished, nkeys);
    printf("server: up to %d clients at once\n", s.peak);

    /* Tear down in reverse order. */
    check(iwarp_cm_destroy_id(s.listen_id), "iwarp_cm_destroy_id");
    check(iwarp_destroy_srq(s.srq), "iwarp_destroy_srq");
    check(iwarp_dereg_mr(s.mr), "iwarp_dereg_mr");
    check(iwarp_destroy_cq(s.cq), "iwarp_destroy_cq");
    check(iwarp_dealloc_pd(s.pd), "iwarp_dealloc_pd");
    check(iwarp_destroy_comp_channel(s.comp_ch), "iwarp_destroy_comp_channel");
    check(iwarp_cm_destroy_channel(s.cm_ch), "iwarp_cm_destroy_channel");
    check(iwarp_ctx_destroy(s.ctx), "iwarp_ctx_destroy");
    return 0;
}

/* ---- the client ----------------------------------------------------------------------------- */

static struct iwarp_cm_event *wait_event(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type want)
{
    struct iwarp_cm_event *ev;
    check(iwarp_cm_get_event_timeout(ch, &ev, 10000), "waiting for a CM event");
    if (ev->event != want) {
        fprintf(stderr, "event_server: got %s (%s), expected %s\n", iwarp_cm_event_str(ev->event),
                iwarp_strerror(ev->status), iwarp_cm_event_str(want));
        exit(1);
    }
    return ev;
}

/* Send request, wait for the reply (in reply, NUL-terminated). */
static void request(struct iwarp_qp *qp, struct iwarp_mr *mr, char *buf, const char *req,
                    char *reply)
{
    /* The reply's receive goes first: a Send must find one waiting. */
    struct iwarp_sge rsge = {(uintptr_t)reply, MSG_SIZE, mr->lkey};
    struct iwarp_recv_wr rwr = {.wr_id = 2, .sg_list = &rsge, .num_sge = 1};
    check(iwarp_post_recv(qp, &rwr, NULL), "iwarp_post_recv");
    size_t len = strlen(req);
    memcpy(buf, req, len);
    struct iwarp_sge sge = {(uintptr_t)buf, (uint32_t)len, mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = 1,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = IWARP_WR_SEND,
                               .send_flags = IWARP_SEND_SIGNALED};
    check(iwarp_post_send(qp, &wr, NULL), "iwarp_post_send");
    /* Both complete on the one CQ, in either order. */
    for (int done = 0; done < 2;) {
        struct iwarp_wc wc;
        int n = iwarp_poll_cq(qp->send_cq, 1, &wc);
        check(n, "iwarp_poll_cq");
        if (n == 0) {
            check(iwarp_cq_wait(qp->send_cq, 5000), "waiting for a completion");
            continue;
        }
        if (wc.status != IWARP_WC_SUCCESS) {
            fprintf(stderr, "event_server: %s failed: %s\n", wc.wr_id == 1 ? "Send" : "receive",
                    iwarp_wc_status_str(wc.status));
            exit(1);
        }
        if (wc.wr_id == 2)
            reply[wc.byte_len < MSG_SIZE ? wc.byte_len : MSG_SIZE - 1] = '\0';
        done++;
    }
}

static int run_client(const char *server, int port, const char *name, int rounds)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, server, &addr.sin_addr) != 1) {
        fprintf(stderr, "event_server: %s is not an IPv4 address\n", server);
        return 1;
    }
    if (strlen(name) > 20) {
        fprintf(stderr, "event_server: the name is too long\n");
        return 1;
    }
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_cm_id *id;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *mr;
    static char buf[2 * MSG_SIZE]; /* the request, then the reply */
    check(iwarp_ctx_create(NULL, &ctx), "iwarp_ctx_create");
    check(iwarp_cm_create_channel(ctx, &ch), "iwarp_cm_create_channel");
    check(iwarp_cm_create_id(ch, &id, NULL, IWARP_PS_TCP), "iwarp_cm_create_id");
    check(iwarp_alloc_pd(ctx, &pd), "iwarp_alloc_pd");
    check(iwarp_create_cq(ctx, 8, NULL, NULL, 0, &cq), "iwarp_create_cq");
    check(iwarp_reg_mr(pd, buf, sizeof buf, IWARP_ACCESS_LOCAL_WRITE, &mr), "iwarp_reg_mr");

    check(iwarp_cm_resolve_addr(id, NULL, (struct sockaddr *)&addr, 2000), "resolve_addr");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ADDR_RESOLVED)), "ack");
    check(iwarp_cm_resolve_route(id, 2000), "resolve_route");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ROUTE_RESOLVED)), "ack");
    struct iwarp_qp_init_attr qp_attr = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = 2, .max_recv_wr = 2},
        .qp_type = IWARP_QPT_RC,
    };
    check(iwarp_cm_create_qp(id, pd, &qp_attr), "iwarp_cm_create_qp");
    struct iwarp_conn_param param = {0}; /* no RDMA Reads: IRD and ORD 0 will do */
    check(iwarp_cm_connect(id, &param), "iwarp_cm_connect");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");

    char req[MSG_SIZE], want[MSG_SIZE], *reply = buf + MSG_SIZE;
    for (int r = 0; r < rounds; r++) {
        snprintf(req, sizeof req, "PUT %s %s-%d", name, name, r);
        request(id->qp, mr, buf, req, reply);
        if (strcmp(reply, "OK") != 0) {
            fprintf(stderr, "event_server: %s answered \"%s\"\n", req, reply);
            return 1;
        }
        snprintf(req, sizeof req, "GET %s", name);
        snprintf(want, sizeof want, "VALUE %s-%d", name, r);
        request(id->qp, mr, buf, req, reply);
        if (strcmp(reply, want) != 0) {
            fprintf(stderr, "event_server: %s answered \"%s\", not \"%s\"\n", req, reply, want);
            return 1;
        }
    }
    printf("client %s: %d rounds, GET %s -> \"%s\"\n", name, rounds, name, reply + 6);
    snprintf(req, sizeof req, "GET unset-%s", name);
    request(id->qp, mr, buf, req, reply);
    printf("client %s: %s -> \"%s\"\n", name, req, reply);

    check(iwarp_cm_disconnect(id), "iwarp_cm_disconnect");
    check(iwarp_cm_ack_event(wait_event(ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");
    iwarp_cm_destroy_qp(id);
    check(iwarp_cm_destroy_id(id), "iwarp_cm_destroy_id");
    check(iwarp_dereg_mr(mr), "iwarp_dereg_mr");
    check(iwarp_destroy_cq(cq), "iwarp_destroy_cq");
    check(iwarp_dealloc_pd(pd), "iwarp_dealloc_pd");
    check(iwarp_cm_destroy_channel(ch), "iwarp_cm_destroy_channel");
    check(iwarp_ctx_destroy(ctx), "iwarp_ctx_destroy");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* line by line, also into a pipe */
    int port = 0, clients = 0, rounds = 20;
    const char *name = NULL, *server = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            clients = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            name = argv[++i];
        else if (argv[i][0] != '-')
            server = argv[i];
        else {
            fprintf(stderr, "usage: event_server [-p PORT] [-n CLIENTS]\n"
                            "       event_server -p PORT [-r ROUNDS] -c NAME SERVER_IP\n");
            return 2;
        }
    }
    if (server)
        return run_client(server, port, name ? name : "client", rounds < 1 ? 1 : rounds);
    return run_server(port, clients);
}
