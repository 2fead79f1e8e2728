/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mt_client: a multi-threaded client of examples/event_server.c (the key-value server). The
 * threads share one context, one protection domain and one registered buffer (each uses its
 * own slice of it); each has its own CM event channel, connection, QP and CQ, and posts and
 * polls them at the same time as the others.
 *
 * Thread t PUTs key "NAME-t" and GETs it back ROUNDS times; then, once every thread is done
 * (a barrier), it GETs the next thread's key, which that thread's connection wrote.
 *
 *   server:  event_server [-p PORT]
 *   client:  mt_client -p PORT [-t THREADS] [-r ROUNDS] [-c NAME] SERVER_IP
 *
 * Uses only the public API (include/iwarp/). Build: cc mt_client.c $(pkg-config --cflags
 * --libs libiwarp) -pthread
 */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define MSG_SIZE    64 /* a request or a reply, at most (as event_server) */
#define MAX_THREADS 16

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "mt_client: %s: %s\n", what, iwarp_strerror(rc));
        exit(1);
    }
}

/* What every thread shares. */
static struct {
    struct iwarp_ctx *ctx;
    struct iwarp_pd *pd;
    struct iwarp_mr *mr;
    struct sockaddr_in server;
    const char *name;
    int threads, rounds;
    pthread_barrier_t all_put;           /* every thread has PUT its last value */
    char buf[MAX_THREADS][2 * MSG_SIZE]; /* thread t: its request, then its reply */
} shared;

/* One thread's connection. */
struct worker {
    int t;
    struct iwarp_cm_channel *ch;
    struct iwarp_cm_id *id;
    struct iwarp_cq *cq;
    char result[2][MSG_SIZE]; /* its own last value, the next thread's */
};

static struct iwarp_cm_event *wait_event(struct iwarp_cm_channel *ch, enum iwarp_cm_event_type want)
{
    struct iwarp_cm_event *ev;
    check(iwarp_cm_get_event_timeout(ch, &ev, 10000), "waiting for a CM event");
    if (ev->event != want) {
        fprintf(stderr, "mt_client: got %s (%s), expected %s\n", iwarp_cm_event_str(ev->event),
                iwarp_strerror(ev->status), iwarp_cm_event_str(want));
        exit(1);
    }
    return ev;
}

/* Send req on the worker's QP and wait for the reply; returns it (NUL-terminated). */
static const char *request(struct worker *w, const char *req)
{
    char *out = shared.buf[w->t], *in = out + MSG_SIZE;
    struct iwarp_sge rsge = {(uintptr_t)in, MSG_SIZE, shared.mr->lkey};
    struct iwarp_recv_wr rwr = {.wr_id = 2, .sg_list = &rsge, .num_sge = 1};
    check(iwarp_post_recv(w->id->qp, &rwr, NULL), "iwarp_post_recv");
    size_t len = strlen(req);
    memcpy(out, req, len);
    struct iwarp_sge sge = {(uintptr_t)out, (uint32_t)len, shared.mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = 1,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = IWARP_WR_SEND,
                               .send_flags = IWARP_SEND_SIGNALED};
    check(iwarp_post_send(w->id->qp, &wr, NULL), "iwarp_post_send");
    for (int done = 0; done < 2;) { /* the Send's completion and the reply's */
        struct iwarp_wc wc;
        int n = iwarp_poll_cq(w->cq, 1, &wc);
        check(n, "iwarp_poll_cq");
        if (n == 0) {
            check(iwarp_cq_wait(w->cq, 5000), "waiting for a completion");
            continue;
        }
        if (wc.status != IWARP_WC_SUCCESS) {
            fprintf(stderr, "mt_client: thread %d: %s failed: %s\n", w->t,
                    wc.wr_id == 1 ? "Send" : "receive", iwarp_wc_status_str(wc.status));
            exit(1);
        }
        if (wc.wr_id == 2)
            in[wc.byte_len < MSG_SIZE ? wc.byte_len : MSG_SIZE - 1] = '\0';
        done++;
    }
    return in;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    /* Connect: the thread's own channel, so its events never reach another thread. */
    check(iwarp_cm_create_channel(shared.ctx, &w->ch), "iwarp_cm_create_channel");
    check(iwarp_cm_create_id(w->ch, &w->id, NULL, IWARP_PS_TCP), "iwarp_cm_create_id");
    check(iwarp_create_cq(shared.ctx, 4, NULL, NULL, 0, &w->cq), "iwarp_create_cq");
    check(iwarp_cm_resolve_addr(w->id, NULL, (struct sockaddr *)&shared.server, 2000),
          "resolve_addr");
    check(iwarp_cm_ack_event(wait_event(w->ch, IWARP_CM_EVENT_ADDR_RESOLVED)), "ack");
    check(iwarp_cm_resolve_route(w->id, 2000), "resolve_route");
    check(iwarp_cm_ack_event(wait_event(w->ch, IWARP_CM_EVENT_ROUTE_RESOLVED)), "ack");
    struct iwarp_qp_init_attr qp_attr = {
        .send_cq = w->cq,
        .recv_cq = w->cq,
        .cap = {.max_send_wr = 2, .max_recv_wr = 2},
        .qp_type = IWARP_QPT_RC,
    };
    check(iwarp_cm_create_qp(w->id, shared.pd, &qp_attr), "iwarp_cm_create_qp");
    struct iwarp_conn_param param = {0};
    check(iwarp_cm_connect(w->id, &param), "iwarp_cm_connect");
    check(iwarp_cm_ack_event(wait_event(w->ch, IWARP_CM_EVENT_ESTABLISHED)), "ack");

    char req[MSG_SIZE], want[MSG_SIZE];
    for (int r = 0; r < shared.rounds; r++) {
        snprintf(req, sizeof req, "PUT %s-%d v%d.%d", shared.name, w->t, w->t, r);
        const char *reply = request(w, req);
        if (strcmp(reply, "OK") != 0) {
            fprintf(stderr, "mt_client: %s answered \"%s\"\n", req, reply);
            exit(1);
        }
        snprintf(req, sizeof req, "GET %s-%d", shared.name, w->t);
        snprintf(want, sizeof want, "VALUE v%d.%d", w->t, r);
        reply = request(w, req);
        if (strcmp(reply, want) != 0) {
            fprintf(stderr, "mt_client: %s answered \"%s\", not \"%s\"\n", req, reply, want);
            exit(1);
        }
        snprintf(w->result[0], MSG_SIZE, "%s", reply);
    }
    /* Every thread has PUT its last value: read the next thread's. */
    pthread_barrier_wait(&shared.all_put);
    snprintf(req, sizeof req, "GET %s-%d", shared.name, (w->t + 1) % shared.threads);
    snprintf(w->result[1], MSG_SIZE, "%s", request(w, req));

    check(iwarp_cm_disconnect(w->id), "iwarp_cm_disconnect");
    check(iwarp_cm_ack_event(wait_event(w->ch, IWARP_CM_EVENT_DISCONNECTED)), "ack");
    iwarp_cm_destroy_qp(w->id);
    check(iwarp_cm_destroy_id(w->id), "iwarp_cm_destroy_id");
    check(iwarp_destroy_cq(w->cq), "iwarp_destroy_cq");
    check(iwarp_cm_destroy_channel(w->ch), "iwarp_cm_destroy_channel");
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* line by line, also into a pipe */
    int port = 0;
    const char *server = NULL;
    shared.threads = 4;
    shared.rounds = 20;
    shared.name = "mt";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            shared.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            shared.rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            shared.name = argv[++i];
        else
            server = argv[i];
    }
    shared.server = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (!server || port <= 0 || shared.threads < 1 || shared.threads > MAX_THREADS ||
        shared.rounds < 1 || strlen(shared.name) > 20 ||
        inet_pton(AF_INET, server, &shared.server.sin_addr) != 1) {
        fprintf(stderr,
                "usage: mt_client -p PORT [-t THREADS (1-%d)] [-r ROUNDS] [-c NAME] "
                "SERVER_IPv4\n",
                MAX_THREADS);
        return 2;
    }

    /* What the threads share: the context (its progress thread moves everyone's data), the
     * PD and one MR. Every verb may be called from any thread. */
    check(iwarp_ctx_create(NULL, &shared.ctx), "iwarp_ctx_create");
    check(iwarp_alloc_pd(shared.ctx, &shared.pd), "iwarp_alloc_pd");
    check(iwarp_reg_mr(shared.pd, shared.buf, sizeof shared.buf, IWARP_ACCESS_LOCAL_WRITE,
                       &shared.mr),
          "iwarp_reg_mr");
    pthread_barrier_init(&shared.all_put, NULL, (unsigned)shared.threads);

    static struct worker workers[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    for (int t = 0; t < shared.threads; t++) {
        workers[t].t = t;
        if (pthread_create(&tids[t], NULL, worker_main, &workers[t]) != 0) {
            fprintf(stderr, "mt_client: pthread_create failed\n");
            return 1;
        }
    }
    for (int t = 0; t < shared.threads; t++)
        pthread_join(tids[t], NULL);
    for (int t = 0; t < shared.threads; t++)
        printf("thread %d: %d rounds, own key -> \"%s\", thread %d's key -> \"%s\"\n", t,
               shared.rounds, workers[t].result[0], (t + 1) % shared.threads, workers[t].result[1]);

    pthread_barrier_destroy(&shared.all_put);
    check(iwarp_dereg_mr(shared.mr), "iwarp_dereg_mr");
    check(iwarp_dealloc_pd(shared.pd), "iwarp_dealloc_pd");
    check(iwarp_ctx_destroy(shared.ctx), "iwarp_ctx_destroy");
    return 0;
}
