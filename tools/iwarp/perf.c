/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: bandwidth and latency of RDMA Write, RDMA Read and Send through libiwarp, in the
 * manner of perftest. This file runs the command: loopback (server thread + client in one
 * process on 127.0.0.1), --server, or a client against HOST; for every size and pass the
 * libiwarp figure and, under --compare-tcp, the plain-TCP baseline right after it; then the
 * medians, the table or --json, and --plot. Method: several passes, medians, ratios to a baseline
 * run beside them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include <sys/resource.h>

#include "perf.h"

/* ss: the wildcard (loopback: the loopback) address of IPv4 or (v6) IPv6, with port. */
static void any_addr(struct sockaddr_storage *ss, bool v6, bool loopback, uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (v6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = loopback ? in6addr_loopback : in6addr_any;
        s6->sin6_port = htons(port);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(loopback ? INADDR_LOOPBACK : INADDR_ANY);
        s4->sin_port = htons(port);
    }
}

/* The loopback server: a thread pinned to CPU 1 that listens on 127.0.0.1 (-6: ::1), port 0. */
struct loop_server {
    struct perf_server s;
    bool pin, ipv6;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* 0 starting, 1 listening, -1 failed */
    int rc;
    char err[160];
};

static void *loop_server_main(void *arg)
{
    struct loop_server *l = arg;
    if (l->pin)
        perf_pin(1); /* before the context exists: its progress thread inherits CPU 1 */
    struct sockaddr_storage ss;
    any_addr(&ss, l->ipv6, true, 0);
    int rc = perf_server_listen(&l->s, (const struct sockaddr *)&ss);
    pthread_mutex_lock(&l->mu);
    l->state = rc < 0 ? -1 : 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (rc == 0)
        rc = perf_server_serve(&l->s);
    l->rc = rc;
    snprintf(l->err, sizeof l->err, "%s", l->s.ep.err);
    perf_server_close(&l->s);
    return NULL;
}

static int run_server(const struct perf_opts *o)
{
    const struct perf_server fresh = {.busy = o->busy_poll,
                                      .crc = o->crc,
                                      .crc_given = o->crc_given,
                                      .sctp = o->sctp,
                                      .sctp_mtu = o->sctp_mtu,
                                      .tx_batch = o->tx_batch,
                                      .trace = o->trace};
    struct perf_server s = fresh;
    /* ::, which takes IPv4 clients too (the CM listens dual-stack there); 0.0.0.0 where the
     * system has no IPv6 */
    struct sockaddr_storage ss;
    uint16_t port = o->port ? o->port : PERF_DEFAULT_PORT;
    any_addr(&ss, true, false, port);
    int rc = perf_server_listen(&s, (const struct sockaddr *)&ss);
    if (rc < 0 && !o->ipv6) {
        perf_server_close(&s);
        s = fresh;
        any_addr(&ss, false, false, port);
        rc = perf_server_listen(&s, (const struct sockaddr *)&ss);
    }
    if (rc == 0) {
        printf("iwarp perf: server listening on %s %s port %u (%s); waiting for one client\n",
               ss.ss_family == AF_INET6 ? ":: (IPv4 and IPv6)" : "0.0.0.0",
               o->sctp ? "SCTP over UDP" : "TCP", s.port, o->busy_poll ? "busy-poll" : "events");
        fflush(stdout);
        rc = perf_server_serve(&s);
    }
    if (rc < 0)
        fprintf(stderr, "iwarp perf: server: %s\n", s.ep.err[0] ? s.ep.err : iwarp_strerror(rc));
    else
        printf("iwarp perf: client served; exiting\n");
    perf_server_close(&s);
    if (o->stats)
        perf_out_stats(stdout, "server", &s.ep);
    return rc < 0 ? 1 : 0;
}

/* CPU seconds per 10^9 octets moved in a bandwidth pass (all its QPs or TCP streams). */
static double per_gb(double cpu_s, const struct perf_bw *b)
{
    return b->octets ? cpu_s / ((double)b->octets / 1e9) : 0;
}

/* Run every pass of one size; fills row. Returns 0 or a negative IWARP_ERR_*. */
static int run_size(struct perf_client *c, const struct perf_opts *o, uint32_t size,
                    struct perf_row *row)
{
    struct perf_bw bw[PERF_MAX_PASSES], tbw[PERF_MAX_PASSES];
    struct perf_lat lt[PERF_MAX_PASSES], tlt[PERF_MAX_PASSES];
    double ratio[PERF_MAX_PASSES];
    memset(row, 0, sizeof *row);
    row->size = size;
    row->passes = o->passes;
    row->have_tcp = o->compare_tcp;
    for (uint32_t p = 0; p < o->passes; p++) {
        char what[64];
        uint64_t bad = 0;
        snprintf(what, sizeof what, "%s %u B, pass %u/%u", perf_op_name(o->op), size, p + 1,
                 o->passes);
        perf_progress_begin(&c->progress, what, perf_now_ns());
        double cpu0 = perf_cpu_s();
        int rc =
            o->lat ? perf_client_lat(c, size, &lt[p], &bad) : perf_client_bw(c, size, &bw[p], &bad);
        if (!o->lat)
            bw[p].cpu_s_per_gb = per_gb(perf_cpu_s() - cpu0, &bw[p]);
        perf_progress_end(&c->progress);
        if (rc < 0)
            return rc;
        row->verify_errors += bad;
        if (!o->compare_tcp)
            continue;
        snprintf(what, sizeof what, "plain TCP %u B, pass %u/%u", size, p + 1, o->passes);
        perf_progress_begin(&c->progress, what, perf_now_ns());
        cpu0 = perf_cpu_s();
        rc = perf_client_tcp(c, o->lat, size, &tbw[p], &tlt[p]);
        if (!o->lat)
            tbw[p].cpu_s_per_gb = per_gb(perf_cpu_s() - cpu0, &tbw[p]);
        perf_progress_end(&c->progress);
        if (rc < 0)
            return rc;
        ratio[p] = o->lat ? lt[p].typical / tlt[p].typical : bw[p].avg / tbw[p].avg;
    }
    if (o->lat)
        perf_row_lat(&row->lat, &row->lo, &row->hi, lt, o->passes);
    else
        perf_row_bw(&row->bw, &row->lo, &row->hi, bw, o->passes);
    if (o->compare_tcp) {
        if (o->lat)
            perf_row_lat(&row->tcp_lat, &row->tcp_lo, &row->tcp_hi, tlt, o->passes);
        else
            perf_row_bw(&row->tcp_bw, &row->tcp_lo, &row->tcp_hi, tbw, o->passes);
        row->ratio = perf_median(ratio, o->passes);
    }
    return 0;
}

/* The client side of a run: connect, every size, output. Returns the exit status. */
static int run_client(const struct perf_opts *o, const struct sockaddr_storage *peer,
                      const char *connection)
{
    static struct perf_report rep;
    static struct perf_client c;
    rep.o = o;
    rep.connection = connection;
    rep.nrows = 0;
    int rc = perf_client_connect(&c, o, (const struct sockaddr *)peer);
    if (rc == 0 && !o->json)
        perf_out_header(stdout, &rep);
    uint64_t bad = 0;
    for (uint32_t i = 0; rc == 0 && i < o->nsizes; i++) {
        struct perf_row *row = &rep.rows[rep.nrows];
        if ((rc = run_size(&c, o, o->sizes[i], row)) < 0)
            break;
        rep.nrows++;
        bad += row->verify_errors;
        if (!o->json)
            perf_out_row(stdout, &rep, row);
    }
    char err[160];
    snprintf(err, sizeof err, "%s", c.ep.err);
    perf_client_close(&c);
    if (rc == 0 && !o->json)
        perf_out_footer(stdout, &rep);
    if (rc == 0 && o->json)
        perf_out_json(stdout, &rep);
    if (o->stats)
        perf_out_stats(o->json ? stderr : stdout, "client", &c.ep);
    if (rc < 0) {
        fprintf(stderr, "iwarp perf: %s\n", err[0] ? err : iwarp_strerror(rc));
        return 1;
    }
    if (o->plot && perf_svg_write(o->plot, &rep) < 0) {
        fprintf(stderr, "iwarp perf: cannot write %s\n", o->plot);
        return 1;
    }
    if (bad) {
        fprintf(stderr, "iwarp perf: --verify: %" PRIu64 " octets differed from what was sent\n",
                bad);
        return 1;
    }
    return 0;
}

/*
 * `iwarp perf`: see `iwarp perf --help`. Returns the process exit status: 0 success, 1 a
 * failed run (connection, protocol, --verify mismatch), 2 a usage error.
 */
/* A socket per QP on each side, both sides in this process in loopback: beyond the usual
 * soft limit of 1024 descriptors at --qps 512. Raise it as far as the hard limit allows (the
 * connections that do not fit then fail with a clear message). */
static void raise_fd_limit(const struct perf_opts *o)
{
    struct rlimit rl;
    rlim_t want = 2u * o->qps + 64u;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
}

int iwarp_cli_perf(int argc, char **argv)
{
    static struct perf_opts o;
    int rc = perf_opts_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    /* The packet trace goes to the client's context only (loopback: the server's context would
     * record every connection a second time, from its end), so take it out of the environment
     * the library reads (IWARP_TRACE_PCAP: the deprecated name). IWARP_PCAP_MAX stays. */
    static char trace[4096];
    const char *env = getenv("IWARP_PCAP");
    if (!env || !*env)
        env = getenv("IWARP_TRACE_PCAP");
    if (!o.trace && env && *env) {
        snprintf(trace, sizeof trace, "%s", env);
        o.trace = trace;
    }
    unsetenv("IWARP_PCAP");
    unsetenv("IWARP_TRACE_PCAP");
    raise_fd_limit(&o);
    if (o.perftest)
        return perf_perftest_run(&o);
    if (o.server)
        return run_server(&o);

    struct sockaddr_storage peer;
    char conn[320];
    if (o.host) {
        uint16_t port = o.port ? o.port : PERF_DEFAULT_PORT;
        if (perf_resolve(o.host, port, o.ipv6, &peer) < 0) {
            fprintf(stderr, "iwarp perf: cannot resolve host '%s'\n", o.host);
            return 2;
        }
        snprintf(conn, sizeof conn, "%s:%u", o.host, port);
        return run_client(&o, &peer, conn);
    }

    static struct loop_server l;
    memset(&l, 0, sizeof l);
    l.s = (struct perf_server){.busy = o.busy_poll,
                               .crc = o.crc,
                               .crc_given = true,
                               .sctp = o.sctp,
                               .sctp_mtu = o.sctp_mtu,
                               .tx_batch = o.tx_batch};
    l.pin = o.pin;
    l.ipv6 = o.ipv6;
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, loop_server_main, &l) != 0) {
        fprintf(stderr, "iwarp perf: cannot start the server thread\n");
        return 1;
    }
    pthread_mutex_lock(&l.mu);
    while (l.state == 0)
        pthread_cond_wait(&l.cv, &l.mu);
    pthread_mutex_unlock(&l.mu);
    int status = 1;
    if (l.state > 0) {
        if (o.pin)
            perf_pin(0);
        any_addr(&peer, o.ipv6, true, l.s.port);
        snprintf(conn, sizeof conn, o.ipv6 ? "loopback [::1]:%u" : "loopback 127.0.0.1:%u",
                 l.s.port);
        status = run_client(&o, &peer, conn);
    }
    l.s.abandoned = true; /* a server still waiting for its first connection stops */
    pthread_join(th, NULL);
    if (o.stats) /* after the client's: the server closes once the client has gone */
        perf_out_stats(o.json ? stderr : stdout, "server", &l.s.ep);
    if (l.rc < 0 && (status == 0 || l.state < 0)) {
        fprintf(stderr, "iwarp perf: server: %s\n", l.err[0] ? l.err : iwarp_strerror(l.rc));
        status = 1;
    }
    pthread_mutex_destroy(&l.mu);
    pthread_cond_destroy(&l.cv);
    return status;
}
