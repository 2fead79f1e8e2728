/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP-over-SCTP baseline: raw usrsctp 0.9.5 in no-threads AF_CONN mode over UDP on 127.0.0.1,
 * set up exactly as src/llp/llp_sctp.c sets it up (same socket options, path MTU, receive
 * callback, 4 MiB UDP receive buffers), next to the same traffic through llp_sctp itself and
 * through the whole of libiwarp (verbs and CM over IWARP_PS_SCTP), and raw usrsctp once more
 * with its CRC32c offloaded to ISA-L as llp_sctp runs it ("raw/ISA-L": what the library gains
 * by that, a raw user could gain too), in one invocation (several passes, the four
 * alternating, medians, ratios whose two sides come from one run).
 *
 * One process, ONE thread pinned to CPU 0 drives both endpoints, busy-polling (non-blocking
 * recvfrom on both UDP sockets, then the timers): that is how libiwarp runs SCTP, one progress
 * loop per llp_sctp owner (llp_sctp.h, "Owners, the usrsctp lock and threads"). The libiwarp
 * run is two contexts in IWARP_PROGRESS_CALLER mode, driven by the same thread through
 * iwarp_poll_cq / iwarp_ctx_progress, with the same MTU, streams and headroom.
 *
 * Traffic: messages the size of libiwarp's DDP segments over SCTP, DDP-SSN included (2 +
 * max segment, max segment = fragmentation point - 2 - headroom, RFC 5043 §9), always
 * unordered, PPID 16.
 *  write_bw: 64 KiB "writes" split into max-segment chunks, the receiver acks every
 *            --ack-every writes (an 8-byte message back), at most 2 x ack-every writes in
 *            flight; MB/s of write payload, clock stopped at the last ack.
 *            libiwarp: 64 KiB RDMA Writes, at most 2 x ack-every outstanding (a Write
 *            completes once its last segment is in SCTP's send queue), then a Send; the clock
 *            stops when the target's receive of that Send completes (every Write placed).
 *  send_lat: ping-pong of 64-octet Sends (raw and llp_sctp: messages of the octets such a Send
 *            puts on SCTP, DDP-SSN + untagged DDP header + 64); one-way latency = RTT / 2
 *            (median of --lat-iters).
 *
 *   bench_usrsctp [--passes N] [--ms MS] [--mtu BYTES] [--headroom B] [--ack-every N]
 *                 [--lat-iters N] [--no-llp] [--only raw|raw-isal|llp|iwarp]
 *                 [--bw-only | --lat-only]
 * (--only: one transport, for a profiler or scripts/critpath.sh --sctp; no ratios)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <usrsctp.h>

#include "bench_util.h"
#include "iwarp/iwarp.h"
#include "llp/llp_sctp.h"
#include "util/bytes.h"
#include "wire/wire_sctp.h"

enum { MAX_PASSES = 32, MAX_LAT = 200000, WRITE = 65536, PPID_DDP = 16, LAT_PAYLOAD = 64 };
/* What a 64-octet Send puts in one SCTP message: DDP-SSN (RFC 5043 §5.2.2), the untagged DDP
 * header with RDMAP's fields (RFC 5041 §4.3, 18 octets), the payload. */
enum { LAT_MSG = 2 + 18 + LAT_PAYLOAD };

/* CPU time of the calling thread: the machine may be shared, and a busy-polling thread that is
 * descheduled loses wall-clock time but not CPU time. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t opt_mtu = 1500, opt_headroom = IWARP_LLP_SCTP_DEFAULT_HEADROOM;

/* ---- the application on top: the same for both transports ------------------------------- */

/* Side 0 is the client (writer, pinger), side 1 the server. */
struct app {
    int mode;   /* 0 bandwidth, 1 latency */
    bool ready; /* both sides up */
    uint32_t max_msg;
    /* bandwidth */
    uint64_t rx_bytes, acks_sent, acks_due, acked_writes;
    uint32_t ack_every;
    /* latency */
    int pongs_due, pongs_seen;
};

static struct app A;

static void app_rx(int side, size_t len)
{
    if (A.mode == 0) {
        if (side == 1) {
            A.rx_bytes += len - 2; /* less the DDP-SSN */
            uint64_t due = A.rx_bytes / ((uint64_t)WRITE * A.ack_every);
            if (due > A.acks_sent + A.acks_due)
                A.acks_due = due - A.acks_sent;
        } else {
            A.acked_writes += A.ack_every;
        }
    } else {
        if (side == 1)
            A.pongs_due++;
        else
            A.pongs_seen++;
    }
}

/* ---- transport 1: raw usrsctp ------------------------------------------------------------ */

struct rep {
    int fd;
    struct sockaddr_in local;
    struct rep *peer;
    struct socket *lsn, *so;
    int side;
};

static struct rep R[2];
static uint64_t raw_timer_last;
/* "raw usrsctp, ISA-L CRC": usrsctp's CRC32c offloaded and done here with ISA-L, as
 * llp_sctp does it (the same packets, the same checks); otherwise usrsctp's own. */
static bool raw_isal;

static int raw_output(void *addr, void *buf, size_t len, uint8_t tos, uint8_t set_df)
{
    (void)tos, (void)set_df;
    struct rep *r = addr;
    if (raw_isal)
        iwarp_store_le32((uint8_t *)buf + IWARP_SCTP_CHECKSUM_OFF,
                         iwarp_sctp_packet_crc32c(buf, len));
    (void)sendto(r->fd, buf, len, 0, (struct sockaddr *)&r->peer->local, sizeof r->peer->local);
    return 0;
}

static int raw_recv_cb(struct socket *so, union sctp_sockstore addr, void *data, size_t len,
                       struct sctp_rcvinfo rcv, int flags, void *ulp_info)
{
    (void)so, (void)addr, (void)rcv;
    struct rep *r = ulp_info;
    if (data && !(flags & MSG_NOTIFICATION))
        app_rx(r->side, len);
    free(data);
    return 1;
}

/* llp_sctp's socket options (new_socket in src/llp/llp_sctp.c). */
static struct socket *raw_socket(struct rep *r)
{
    struct socket *so = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, raw_recv_cb, NULL, 0, r);
    if (!so || usrsctp_set_non_blocking(so, 1) < 0)
        bench_die("bench_usrsctp", "usrsctp_socket", 0);
    struct sctp_initmsg im = {.sinit_num_ostreams = 8, .sinit_max_instreams = 8};
    struct sctp_setadaptation ad = {.ssb_adaptation_ind = 1};
    int on = 1;
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_INITMSG, &im, sizeof im) < 0 ||
        usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, &ad, sizeof ad) < 0 ||
        usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) < 0 ||
        usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on) < 0)
        bench_die("bench_usrsctp", "setsockopt", 0);
    static const uint16_t ev[] = {SCTP_ASSOC_CHANGE,           SCTP_ADAPTATION_INDICATION,
                                  SCTP_PARTIAL_DELIVERY_EVENT, SCTP_SEND_FAILED_EVENT,
                                  SCTP_SHUTDOWN_EVENT,         SCTP_REMOTE_ERROR};
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        struct sctp_event e = {.se_assoc_id = SCTP_FUTURE_ASSOC, .se_type = ev[i], .se_on = 1};
        if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_EVENT, &e, sizeof e) < 0)
            bench_die("bench_usrsctp", "SCTP_EVENT", 0);
    }
    struct sctp_paddrparams pp;
    memset(&pp, 0, sizeof pp);
    pp.spp_address.ss_family = AF_CONN;
    pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
    pp.spp_flags = SPP_PMTUD_DISABLE;
    pp.spp_pathmtu = opt_mtu - 20 - 8 - 12; /* usrsctp adds the 12-byte common header */
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp, sizeof pp) < 0)
        bench_die("bench_usrsctp", "SCTP_PEER_ADDR_PARAMS", 0);
    return so;
}

static void raw_pump(void)
{
    static uint8_t buf[65536];
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < 256; k++) {
            ssize_t n = recv(R[s].fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n <= 0)
                break;
            if (raw_isal && !iwarp_sctp_crc_ok(buf, (size_t)n))
                continue;
            usrsctp_conninput(&R[s], buf, (size_t)n, 0);
        }
    }
    if (R[1].lsn && !R[1].so) {
        R[1].so = usrsctp_accept(R[1].lsn, NULL, NULL);
        if (R[1].so)
            usrsctp_set_non_blocking(R[1].so, 1);
    }
    uint64_t now = now_ns();
    if (now - raw_timer_last >= 1000000u) {
        uint64_t ms = (now - raw_timer_last) / 1000000u;
        raw_timer_last += ms * 1000000u;
        usrsctp_handle_timers((uint32_t)ms);
    }
}

static int raw_send(int side, const void *buf, size_t len)
{
    struct sctp_sndinfo si = {
        .snd_sid = 0, .snd_flags = SCTP_UNORDERED, .snd_ppid = htonl(PPID_DDP)};
    ssize_t r = usrsctp_sendv(R[side].so, buf, len, NULL, 0, &si, (socklen_t)sizeof si,
                              SCTP_SENDV_SNDINFO, 0);
    if (r < 0 && (errno == EWOULDBLOCK || errno == EAGAIN))
        return IWARP_ERR_BUSY;
    if (r != (ssize_t)len)
        bench_die("bench_usrsctp", "usrsctp_sendv", 0);
    return 0;
}

static void raw_open(void)
{
    usrsctp_init_nothreads(0, raw_output, NULL);
    if (raw_isal)
        usrsctp_enable_crc32c_offload();
    memset(R, 0, sizeof R);
    for (int s = 0; s < 2; s++) {
        R[s].side = s;
        R[s].peer = &R[1 - s];
        R[s].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        R[s].local =
            (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t sl = sizeof R[s].local;
        int rb = 4 << 20;
        if (setsockopt(R[s].fd, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof rb) < 0)
            setsockopt(R[s].fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof rb);
        setsockopt(R[s].fd, SOL_SOCKET, SO_SNDBUF, &rb, sizeof rb);
        if (bind(R[s].fd, (struct sockaddr *)&R[s].local, sl) < 0 ||
            getsockname(R[s].fd, (struct sockaddr *)&R[s].local, &sl) < 0)
            bench_die("bench_usrsctp", "udp bind", 0);
        usrsctp_register_address(&R[s]);
    }
    raw_timer_last = now_ns();
    R[1].lsn = raw_socket(&R[1]);
    struct sockaddr_conn sc = {.sconn_family = AF_CONN, .sconn_port = htons(5043)};
    if (usrsctp_bind(R[1].lsn, (struct sockaddr *)&sc, sizeof sc) < 0 ||
        usrsctp_listen(R[1].lsn, 4) < 0)
        bench_die("bench_usrsctp", "listen", 0);
    R[0].so = raw_socket(&R[0]);
    sc.sconn_addr = &R[0];
    sc.sconn_port = 0;
    if (usrsctp_bind(R[0].so, (struct sockaddr *)&sc, sizeof sc) < 0)
        bench_die("bench_usrsctp", "bind", 0);
    sc.sconn_port = htons(5043);
    if (usrsctp_connect(R[0].so, (struct sockaddr *)&sc, sizeof sc) < 0 && errno != EINPROGRESS)
        bench_die("bench_usrsctp", "connect", 0);
    double end = bench_now_s() + 5;
    while (!R[1].so && bench_now_s() < end)
        raw_pump();
    struct sctp_status st;
    socklen_t len = sizeof st;
    if (!R[1].so || usrsctp_getsockopt(R[0].so, IPPROTO_SCTP, SCTP_STATUS, &st, &len) < 0)
        bench_die("bench_usrsctp", "association", 0);
    /* RFC 5043 §9, as llp_sctp computes it */
    A.max_msg = st.sstat_fragmentation_point - opt_headroom;
}

static void raw_close(void)
{
    struct linger lg = {1, 0};
    for (int s = 0; s < 2; s++) {
        if (R[s].so) {
            usrsctp_setsockopt(R[s].so, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            usrsctp_close(R[s].so);
        }
        if (R[s].lsn)
            usrsctp_close(R[s].lsn);
    }
    for (int s = 0; s < 2; s++)
        usrsctp_deregister_address(&R[s]);
    for (int i = 0; i < 300 && usrsctp_finish() != 0; i++)
        usrsctp_handle_timers(10);
    for (int s = 0; s < 2; s++)
        close(R[s].fd);
}

/* ---- transport 2: llp_sctp ------------------------------------------------------------------ */

static struct iwarp_llp_sctp_owner *L_owner; /* one thread drives both endpoints */
static struct iwarp_llp_sctp_ep *L_ep[2];
static struct iwarp_llp_sctp_assoc *L_a[2];
static struct iwarp_llp_sctp_listener *L_l;
static int L_up;
static uint64_t L_deadline;
static int side_id[2] = {0, 1};

static void l_up(void *user, uint16_t n, uint32_t max_seg)
{
    (void)user, (void)n;
    L_up++;
    A.max_msg = max_seg + IWARP_SCTP_SSN_LEN;
}

static void l_down(void *user, int err)
{
    (void)user;
    bench_die("bench_usrsctp", "association down", err ? err : IWARP_ERR_SCTP_ASSOC_LOST);
}

static void l_chunk(void *user, uint16_t sid, uint32_t ppid, bool unordered, void *buf, size_t len)
{
    (void)sid, (void)ppid, (void)unordered;
    app_rx(*(const int *)user, len);
    iwarp_llp_sctp_chunk_free(buf);
}

static const struct iwarp_llp_sctp_ops l_ops = {l_up, l_down, l_chunk, NULL};

static void l_accept(void *user, struct iwarp_llp_sctp_assoc *a, int err)
{
    (void)user;
    if (!a)
        bench_die("bench_usrsctp", "accept", err);
    L_a[1] = a;
    iwarp_llp_sctp_set_ops(a, &l_ops, &side_id[1]);
}

static void llp_pump(void)
{
    uint64_t now = now_ns();
    iwarp_llp_sctp_on_readable(L_ep[0], now);
    iwarp_llp_sctp_on_readable(L_ep[1], now);
    if (now >= L_deadline)
        L_deadline = iwarp_llp_sctp_timers(L_owner, now);
}

static int llp_send(int side, const void *buf, size_t len)
{
    struct iovec v = {(void *)(uintptr_t)buf, len};
    int rc = iwarp_llp_sctp_send_chunk(L_a[side], 0, PPID_DDP, &v, 1);
    if (rc < 0 && rc != IWARP_ERR_BUSY)
        bench_die("bench_usrsctp", "send_chunk", rc);
    return rc;
}

static void llp_open(void)
{
    int rc = iwarp_llp_sctp_owner_open(NULL, &L_owner);
    if (rc)
        bench_die("bench_usrsctp", "owner_open", rc);
    struct iwarp_llp_sctp_ep_cfg cfg = {
        .owner = L_owner, .nstreams = 8, .mtu = opt_mtu, .headroom = opt_headroom};
    for (int s = 0; s < 2; s++) {
        rc = iwarp_llp_sctp_ep_open(&cfg, &L_ep[s]);
        if (rc)
            bench_die("bench_usrsctp", "ep_open", rc);
    }
    rc = iwarp_llp_sctp_listen(L_ep[1], 5043, 4, l_accept, NULL, &L_l);
    if (rc)
        bench_die("bench_usrsctp", "listen", rc);
    struct sockaddr_storage sa;
    iwarp_llp_sctp_ep_local(L_ep[1], &sa);
    L_up = 0;
    L_deadline = 0;
    rc =
        iwarp_llp_sctp_connect(L_ep[0], (struct sockaddr *)&sa, 5043, &l_ops, &side_id[0], &L_a[0]);
    if (rc)
        bench_die("bench_usrsctp", "connect", rc);
    double end = bench_now_s() + 5;
    while (L_up < 2 && bench_now_s() < end)
        llp_pump();
    if (L_up < 2)
        bench_die("bench_usrsctp", "association", IWARP_ERR_TIMEDOUT);
}

static void llp_close(void)
{
    iwarp_llp_sctp_close(L_a[0], true);
    iwarp_llp_sctp_close(L_a[1], true);
    iwarp_llp_sctp_ep_close(L_ep[0]);
    iwarp_llp_sctp_ep_close(L_ep[1]);
    iwarp_llp_sctp_owner_close(L_owner);
}

/* ---- transport 3: libiwarp (verbs + CM over IWARP_PS_SCTP) ------------------------------- */

/* Side 0 is the client (writer, pinger), side 1 the server; one registered buffer each: the
 * Write slots, then the receive buffers. */
enum { IW_SLOTS = 64, IW_RQ = 32, IW_RECV_LEN = 256, IW_SQ = IW_SLOTS + 16 };
enum { IW_RECV_OFF = IW_SLOTS * WRITE, IW_BUF = IW_RECV_OFF + IW_RQ * IW_RECV_LEN };

struct iw_side {
    struct iwarp_ctx *ctx;
    struct iwarp_cm_channel *ch;
    struct iwarp_pd *pd;
    struct iwarp_cq *cq;
    struct iwarp_mr *mr;
    struct iwarp_cm_id *id, *listen;
    uint8_t *buf;
};

static struct iw_side I[2];

static void iw_check(int rc, const char *what)
{
    if (rc < 0)
        bench_die("bench_usrsctp", what, rc);
}

/* One turn of each context's progress engine (caller mode: nothing else moves data). */
static void iw_progress(void)
{
    iwarp_ctx_progress(I[0].ctx, 0);
    iwarp_ctx_progress(I[1].ctx, 0);
}

/* The next CM event of side s, which must be `want` (acked here unless ev is wanted). */
static void iw_event(int s, enum iwarp_cm_event_type want, struct iwarp_cm_event **out)
{
    double end = bench_now_s() + 5;
    struct iwarp_cm_event *ev;
    while (iwarp_cm_get_event_timeout(I[s].ch, &ev, 0) != 0) {
        if (bench_now_s() > end)
            bench_die("bench_usrsctp", iwarp_cm_event_str(want), IWARP_ERR_TIMEDOUT);
        iw_progress();
    }
    if (ev->event != want || ev->status != 0) {
        fprintf(stderr, "bench_usrsctp: %s (%d) where %s was expected\n",
                iwarp_cm_event_str(ev->event), ev->status, iwarp_cm_event_str(want));
        exit(1);
    }
    if (out)
        *out = ev;
    else
        iwarp_cm_ack_event(ev);
}

static void iw_post_recv(int s, uint32_t slot)
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)(I[s].buf + IW_RECV_OFF + slot * IW_RECV_LEN),
                            IW_RECV_LEN, I[s].mr->lkey};
    struct iwarp_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
    iw_check(iwarp_post_recv(I[s].id->qp, &wr, NULL), "iwarp_post_recv");
}

static void iw_qp(int s)
{
    struct iwarp_qp_init_attr qa = {.send_cq = I[s].cq,
                                    .recv_cq = I[s].cq,
                                    .cap = {.max_send_wr = IW_SQ,
                                            .max_recv_wr = IW_RQ,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1,
                                            .max_inline_data = LAT_PAYLOAD},
                                    .qp_type = IWARP_QPT_RC};
    iw_check(iwarp_cm_create_qp(I[s].id, I[s].pd, &qa), "iwarp_cm_create_qp");
    for (uint32_t k = 0; k < IW_RQ; k++)
        iw_post_recv(s, k);
}

/* Two caller-progress contexts with the raw test's settings, one QP pair over SCTP. */
static void iw_open(void)
{
    memset(I, 0, sizeof I);
    for (int s = 0; s < 2; s++) {
        struct iwarp_ctx_attr a;
        iwarp_ctx_attr_default(&a);
        a.progress = IWARP_PROGRESS_CALLER;
        a.sctp_mtu = opt_mtu;
        a.sctp_streams = 8; /* raw_socket's INITMSG */
        iw_check(iwarp_ctx_create(&a, &I[s].ctx), "iwarp_ctx_create");
        iw_check(iwarp_cm_create_channel(I[s].ctx, &I[s].ch), "iwarp_cm_create_channel");
        iw_check(iwarp_alloc_pd(I[s].ctx, &I[s].pd), "iwarp_alloc_pd");
        I[s].buf = aligned_alloc(4096, IW_BUF);
        if (!I[s].buf)
            bench_die("bench_usrsctp", "buffer", IWARP_ERR_NOMEM);
        memset(I[s].buf, 0, IW_BUF);
        iw_check(iwarp_reg_mr(I[s].pd, I[s].buf, IW_BUF,
                              IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE, &I[s].mr),
                 "iwarp_reg_mr");
        iw_check(iwarp_create_cq(I[s].ctx, IW_SQ + IW_RQ + 16, NULL, NULL, 0, &I[s].cq),
                 "iwarp_create_cq");
    }
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    iw_check(iwarp_cm_create_id(I[1].ch, &I[1].listen, NULL, IWARP_PS_SCTP), "create_id");
    iw_check(iwarp_cm_bind_addr(I[1].listen, (struct sockaddr *)&sin), "bind");
    iw_check(iwarp_cm_listen(I[1].listen, 4), "listen");
    iw_check(iwarp_cm_create_id(I[0].ch, &I[0].id, NULL, IWARP_PS_SCTP), "create_id");
    iw_check(
        iwarp_cm_resolve_addr(I[0].id, NULL, (struct sockaddr *)&I[1].listen->local_addr, 1000),
        "resolve_addr");
    iw_event(0, IWARP_CM_EVENT_ADDR_RESOLVED, NULL);
    iw_check(iwarp_cm_resolve_route(I[0].id, 1000), "resolve_route");
    iw_event(0, IWARP_CM_EVENT_ROUTE_RESOLVED, NULL);
    iw_qp(0);
    struct iwarp_conn_param cp = {.responder_resources = 1, .initiator_depth = 1};
    iw_check(iwarp_cm_connect(I[0].id, &cp), "connect");
    struct iwarp_cm_event *ev;
    iw_event(1, IWARP_CM_EVENT_CONNECT_REQUEST, &ev);
    I[1].id = ev->id;
    iwarp_cm_ack_event(ev);
    iw_qp(1);
    iw_check(iwarp_cm_accept(I[1].id, &cp), "accept");
    iw_event(1, IWARP_CM_EVENT_ESTABLISHED, NULL);
    iw_event(0, IWARP_CM_EVENT_ESTABLISHED, NULL);
}

/* Graceful disconnect, then everything destroyed: the last endpoint finishes usrsctp, so the
 * raw test can initialise it again. */
static void iw_close(void)
{
    iw_check(iwarp_cm_disconnect(I[0].id), "disconnect");
    iw_event(0, IWARP_CM_EVENT_DISCONNECTED, NULL);
    iw_event(1, IWARP_CM_EVENT_DISCONNECTED, NULL);
    for (int s = 0; s < 2; s++) {
        struct iwarp_wc wc[16];
        while (iwarp_poll_cq(I[s].cq, 16, wc) > 0) /* flushed receives */
            ;
        iwarp_cm_destroy_qp(I[s].id);
        iw_check(iwarp_cm_destroy_id(I[s].id), "destroy_id");
    }
    iw_check(iwarp_cm_destroy_id(I[1].listen), "destroy_id");
    for (int s = 0; s < 2; s++) {
        iw_check(iwarp_dereg_mr(I[s].mr), "dereg_mr");
        iw_check(iwarp_destroy_cq(I[s].cq), "destroy_cq");
        iw_check(iwarp_dealloc_pd(I[s].pd), "dealloc_pd");
        iw_check(iwarp_cm_destroy_channel(I[s].ch), "destroy_channel");
        iw_check(iwarp_ctx_destroy(I[s].ctx), "ctx_destroy");
        free(I[s].buf);
    }
}

/* Post a signaled work request of side s: a Write of len octets from slot to the peer's slot,
 * or a Send (inline up to LAT_PAYLOAD). */
static void iw_post(int s, enum iwarp_wr_opcode op, uint32_t slot, uint32_t len)
{
    struct iwarp_sge sge = {(uint64_t)(uintptr_t)(I[s].buf + (size_t)slot * WRITE), len,
                            I[s].mr->lkey};
    struct iwarp_send_wr wr = {.wr_id = slot,
                               .sg_list = len ? &sge : NULL,
                               .num_sge = len ? 1 : 0,
                               .opcode = op,
                               .send_flags = IWARP_SEND_SIGNALED};
    if (op == IWARP_WR_SEND && len <= LAT_PAYLOAD)
        wr.send_flags |= IWARP_SEND_INLINE;
    if (op == IWARP_WR_RDMA_WRITE) {
        wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(I[1 - s].buf + (size_t)slot * WRITE);
        wr.wr.rdma.rkey = I[1 - s].mr->rkey;
    }
    iw_check(iwarp_post_send(I[s].id->qp, &wr, NULL), "iwarp_post_send");
}

/* Poll side s's CQ once (progressing its context when empty); counts completed Writes and
 * receives (reposting each receive). Returns the receives. */
static uint32_t iw_poll(int s, uint64_t *writes_done)
{
    struct iwarp_wc wc[32];
    int n = iwarp_poll_cq(I[s].cq, 32, wc);
    iw_check(n, "iwarp_poll_cq");
    uint32_t recvs = 0;
    for (int i = 0; i < n; i++) {
        if (wc[i].status != IWARP_WC_SUCCESS) {
            fprintf(stderr, "bench_usrsctp: completion error %s\n",
                    iwarp_wc_status_str(wc[i].status));
            exit(1);
        }
        if (wc[i].opcode == IWARP_WC_RDMA_WRITE && writes_done)
            (*writes_done)++;
        if (wc[i].opcode == IWARP_WC_RECV) {
            recvs++;
            iw_post_recv(s, (uint32_t)wc[i].wr_id);
        }
    }
    return recvs;
}

/* MB/s of 64 KiB RDMA Writes for `seconds`, at most `window` outstanding; the clock stops when
 * the Send that follows the last Write has arrived (RFC 5040 §5.5: its receive completes
 * after every earlier Write is placed). *per_cpu: MB per second of the thread's CPU time. */
static double iw_bw_pass(double seconds, uint32_t window, double *per_cpu)
{
    iw_open();
    if (window > IW_SLOTS)
        window = IW_SLOTS;
    uint64_t posted = 0, done = 0;
    double c0 = cpu_s(), t0 = bench_now_s(), end = t0 + seconds;
    while (bench_now_s() < end) {
        while (posted - done < window) {
            iw_post(0, IWARP_WR_RDMA_WRITE, (uint32_t)(posted % window), WRITE);
            posted++;
        }
        iw_poll(0, &done);
        iwarp_ctx_progress(I[1].ctx, 0);
    }
    iw_post(0, IWARP_WR_SEND, 0, 8);
    while (iw_poll(1, NULL) == 0) {
        iw_poll(0, &done);
        if (bench_now_s() > end + 30)
            bench_die("bench_usrsctp", "bandwidth pass did not drain", IWARP_ERR_TIMEDOUT);
    }
    double el = bench_now_s() - t0;
    *per_cpu = (double)posted * WRITE / (cpu_s() - c0) / 1e6;
    while (done < posted)
        iw_poll(0, &done);
    iw_close();
    return (double)posted * WRITE / el / 1e6;
}

/* Median one-way latency (RTT / 2, us) of iters ping-pongs of 64-octet Sends. */
static double iw_lat_pass(int iters, double *samples)
{
    iw_open();
    for (int k = -100; k < iters; k++) { /* 100 warm-up round trips */
        double t0 = bench_now_s();
        iw_post(0, IWARP_WR_SEND, 0, LAT_PAYLOAD);
        for (;;) {
            if (iw_poll(1, NULL))
                iw_post(1, IWARP_WR_SEND, 0, LAT_PAYLOAD); /* the pong */
            if (iw_poll(0, NULL))
                break;
        }
        if (k >= 0)
            samples[k] = (bench_now_s() - t0) / 2 * 1e6;
    }
    iw_close();
    return bench_median(samples, iters);
}

/* ---- measurements ----------------------------------------------------------------------- */

struct transport {
    void (*open)(void);
    void (*close)(void);
    void (*pump)(void);
    int (*send)(int side, const void *buf, size_t len);
};

static void raw_isal_open(void)
{
    raw_isal = true;
    raw_open();
}

static void raw_isal_close(void)
{
    raw_close();
    raw_isal = false;
}

static const struct transport T_raw = {raw_open, raw_close, raw_pump, raw_send};
static const struct transport T_raw_isal = {raw_isal_open, raw_isal_close, raw_pump, raw_send};
static const struct transport T_llp = {llp_open, llp_close, llp_pump, llp_send};

static uint8_t payload[65536];

/* MB/s of 64 KiB writes for `seconds`; the clock stops when the last write is acknowledged.
 * *per_cpu: MB per second of the thread's CPU time. */
static double bw_pass(const struct transport *t, double seconds, uint32_t ack_every,
                      double *per_cpu)
{
    memset(&A, 0, sizeof A);
    A.mode = 0;
    A.ack_every = ack_every;
    t->open();
    uint64_t writes = 0;
    size_t off = 0; /* octets of the current write sent */
    uint64_t window = 2u * ack_every;
    double c0 = cpu_s(), t0 = bench_now_s(), end = t0 + seconds;
    for (;;) {
        bool more = bench_now_s() < end || writes % ack_every != 0 || off != 0;
        while (more && writes - A.acked_writes < window) {
            size_t seg = A.max_msg - 2;
            size_t n = WRITE - off < seg ? WRITE - off : seg;
            if (t->send(0, payload, n + 2) != 0)
                break;
            off += n;
            if (off == WRITE) {
                off = 0;
                writes++;
                if (bench_now_s() >= end && writes % ack_every == 0)
                    more = false;
            }
        }
        while (A.acks_due && t->send(1, payload, 8) == 0) {
            A.acks_due--;
            A.acks_sent++;
        }
        t->pump();
        if (!more && A.acked_writes == writes)
            break;
        if (bench_now_s() > end + 30)
            bench_die("bench_usrsctp", "bandwidth pass did not drain", IWARP_ERR_TIMEDOUT);
    }
    double el = bench_now_s() - t0;
    *per_cpu = (double)writes * WRITE / (cpu_s() - c0) / 1e6;
    t->close();
    return (double)writes * WRITE / el / 1e6;
}

/* Median one-way latency (RTT / 2, us) of iters ping-pongs of LAT_MSG-octet messages. */
static double lat_pass(const struct transport *t, int iters, double *samples)
{
    memset(&A, 0, sizeof A);
    A.mode = 1;
    t->open();
    for (int k = -100; k < iters; k++) { /* 100 warm-up round trips */
        double t0 = bench_now_s();
        int seen = A.pongs_seen;
        while (t->send(0, payload, LAT_MSG) != 0)
            t->pump();
        while (A.pongs_seen == seen) {
            t->pump();
            while (A.pongs_due && t->send(1, payload, LAT_MSG) == 0)
                A.pongs_due--;
        }
        if (k >= 0)
            samples[k] = (bench_now_s() - t0) / 2 * 1e6;
    }
    t->close();
    return bench_median(samples, iters);
}

/* The systems, in the order a pass runs them. */
enum { RAW, RAW_ISAL, LLP, IWARP, NSYS };

/* Medians of the passes of one test: wall clock, CPU-time based (bandwidth), and the median
 * of the per-pass ratios to raw usrsctp (and libiwarp's to raw usrsctp with ISA-L's CRC). */
struct column {
    double v[MAX_PASSES], cpu[MAX_PASSES], ratio[MAX_PASSES], ratio_isal[MAX_PASSES];
};

static void print_row(const char *test, unsigned size, const char *unit, int passes,
                      struct column *c, bool cpu)
{
    static const char *const names[NSYS] = {"raw usrsctp", "raw/ISA-L", "llp_sctp", "libiwarp"};
    double m[NSYS], mc[NSYS];
    for (int t = 0; t < NSYS; t++) {
        m[t] = bench_median(c[t].v, passes);
        mc[t] = bench_median(c[t].cpu, passes);
    }
    for (int t = 0; t < NSYS; t++) {
        if (m[t] == 0)
            continue;
        printf("%-9s %6u  %-12s %9.2f %s", test, size, names[t], m[t], unit);
        if (cpu)
            printf("  %9.1f MB/cpu-s", mc[t]);
        if (t > 0 && m[0] > 0) {
            printf("  ratio %.3f (per pass %.3f)", m[t] / m[0], bench_median(c[t].ratio, passes));
            if (cpu)
                printf("  cpu ratio %.3f", mc[t] / mc[0]);
        }
        if (t == IWARP && m[RAW_ISAL] > 0)
            printf("  to raw/ISA-L %.3f (per pass %.3f)", m[t] / m[RAW_ISAL],
                   bench_median(c[t].ratio_isal, passes));
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    int passes = 5, ms = 1000, lat_iters = 20000;
    uint32_t ack_every = 8;
    bool with_raw = true, with_raw_isal = true, with_llp = true, do_bw = true, do_lat = true;
    bool only_iw = false;
    bool only = false;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--passes") && k + 1 < argc)
            passes = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--ms") && k + 1 < argc)
            ms = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--lat-iters") && k + 1 < argc)
            lat_iters = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--mtu") && k + 1 < argc)
            opt_mtu = (uint32_t)strtoul(argv[++k], NULL, 0);
        else if (!strcmp(argv[k], "--headroom") && k + 1 < argc)
            opt_headroom = (uint32_t)strtoul(argv[++k], NULL, 0);
        else if (!strcmp(argv[k], "--ack-every") && k + 1 < argc)
            ack_every = (uint32_t)strtoul(argv[++k], NULL, 0);
        else if (!strcmp(argv[k], "--no-llp"))
            with_llp = false;
        else if (!strcmp(argv[k], "--only") && k + 1 < argc) { /* for a profiler */
            const char *t = argv[++k];
            with_raw = !strcmp(t, "raw");
            with_raw_isal = !strcmp(t, "raw-isal");
            with_llp = !strcmp(t, "llp");
            only_iw = !strcmp(t, "iwarp");
            only = true;
            if (!with_raw && !with_raw_isal && !with_llp && !only_iw)
                return 2;
        } else if (!strcmp(argv[k], "--bw-only"))
            do_lat = false;
        else if (!strcmp(argv[k], "--lat-only"))
            do_bw = false;
        else {
            fprintf(
                stderr,
                "usage: bench_usrsctp [--passes N] [--ms MS] [--mtu BYTES] "
                "[--headroom B] [--ack-every N] [--lat-iters N] [--no-llp]\n"
                "                     [--only raw|raw-isal|llp|iwarp] [--bw-only | --lat-only]\n");
            return 2;
        }
    }
    if (passes < 1 || passes > MAX_PASSES || lat_iters < 1 || lat_iters > MAX_LAT || ms < 1 ||
        opt_mtu < 640 || opt_mtu > 65535 || opt_headroom < 1 || ack_every < 1 ||
        2 * ack_every > IW_SLOTS || (!do_bw && !do_lat))
        return 2;
    /* libiwarp keeps llp_sctp's default headroom (no knob above the LLP) */
    bool with_iw = opt_headroom == IWARP_LLP_SCTP_DEFAULT_HEADROOM && (!only || only_iw);
    if (opt_headroom != IWARP_LLP_SCTP_DEFAULT_HEADROOM)
        fprintf(stderr, "bench_usrsctp: --headroom %u: libiwarp keeps %u; not measured\n",
                opt_headroom, IWARP_LLP_SCTP_DEFAULT_HEADROOM);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    double *samples = calloc((size_t)lat_iters, sizeof *samples);

    /* the sizes both transports agree on */
    T_llp.open();
    uint32_t max_msg = A.max_msg;
    T_llp.close();
    T_raw.open();
    if (A.max_msg != max_msg) {
        fprintf(stderr, "bench_usrsctp: raw max message %u != llp_sctp %u\n", A.max_msg, max_msg);
        return 1;
    }
    T_raw.close();
    uint32_t seg = max_msg - 2;
    printf("# bench_usrsctp: usrsctp nothreads AF_CONN over UDP 127.0.0.1, MTU %u (frag point "
           "%u, max DDP segment %u, %u chunks per 64 KiB write), one thread on CPU 0 drives both "
           "ends, busy-poll, ack every %u writes (libiwarp: %u Writes outstanding); send_lat "
           "messages %u octets (a %u-octet Send); %d passes x %d ms, alternating; medians\n",
           opt_mtu, max_msg + opt_headroom, seg, (WRITE + seg - 1) / seg, ack_every, 2 * ack_every,
           (unsigned)LAT_MSG, (unsigned)LAT_PAYLOAD, passes, ms);
    static struct column bw[NSYS], lat[NSYS];
    const bool on[NSYS] = {with_raw, with_raw_isal, with_llp, with_iw};
    const struct transport *const T[NSYS] = {&T_raw, &T_raw_isal, &T_llp, NULL};
    for (int p = 0; p < passes; p++) {
        double secs = ms / 1000.0;
        for (int t = 0; do_bw && t < NSYS; t++) {
            if (on[t])
                bw[t].v[p] = t == IWARP ? iw_bw_pass(secs, 2 * ack_every, &bw[t].cpu[p])
                                        : bw_pass(T[t], secs, ack_every, &bw[t].cpu[p]);
        }
        for (int t = 0; do_lat && t < NSYS; t++) {
            if (on[t])
                lat[t].v[p] = t == IWARP ? iw_lat_pass(lat_iters, samples)
                                         : lat_pass(T[t], lat_iters, samples);
        }
        for (int t = 0; with_raw && t < NSYS; t++) {
            bw[t].ratio[p] = bw[RAW].v[p] > 0 ? bw[t].v[p] / bw[RAW].v[p] : 0;
            lat[t].ratio[p] = lat[RAW].v[p] > 0 ? lat[t].v[p] / lat[RAW].v[p] : 0;
            bw[t].ratio_isal[p] = bw[RAW_ISAL].v[p] > 0 ? bw[t].v[p] / bw[RAW_ISAL].v[p] : 0;
            lat[t].ratio_isal[p] = lat[RAW_ISAL].v[p] > 0 ? lat[t].v[p] / lat[RAW_ISAL].v[p] : 0;
        }
        printf("pass %-2d", p + 1);
        if (do_bw)
            printf("  write_bw %d: raw %7.1f  raw/ISA-L %7.1f  llp_sctp %7.1f  libiwarp %7.1f MB/s",
                   WRITE, bw[RAW].v[p], bw[RAW_ISAL].v[p], bw[LLP].v[p], bw[IWARP].v[p]);
        if (do_lat)
            printf("  send_lat %d: raw %6.2f  raw/ISA-L %6.2f  llp_sctp %6.2f  libiwarp %6.2f us",
                   LAT_PAYLOAD, lat[RAW].v[p], lat[RAW_ISAL].v[p], lat[LLP].v[p], lat[IWARP].v[p]);
        printf("\n");
        fflush(stdout);
    }
    if (do_bw)
        print_row("write_bw", WRITE, "MB/s", passes, bw, true);
    if (do_lat)
        print_row("send_lat", LAT_PAYLOAD, "us  ", passes, lat, false);
    printf("# medians of %d passes; ratio = libiwarp (or llp_sctp) / raw usrsctp: > 1 is faster "
           "for bandwidth, slower for latency. raw/ISA-L: raw usrsctp with its CRC32c offloaded "
           "to ISA-L, as llp_sctp runs it. MB/cpu-s: write payload per second of the "
           "thread's CPU time (robust when the machine is shared).\n",
           passes);
    free(samples);
    return 0;
}
