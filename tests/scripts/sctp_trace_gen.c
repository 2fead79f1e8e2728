/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sctp_trace_gen OUT.pcap [--faults]: a real usrsctp association between two endpoints of the
 * SCTP back-end (src/llp/llp_sctp.h) on 127.0.0.1, recorded into OUT.pcap by the client's
 * capture hook through trace/trace_sctp.h (SCTP over UDP, RFC 6951). It carries DDP over SCTP
 * built with the library's codecs (src/wire): on streams 0 and 1, an Enhanced Session Initiate
 * and Accept (PPID 17, RFC 5043 §5.2.3, RFC 6581 §7), then DDP Segment chunks (PPID 16, each a
 * DDP-SSN and a valid DDP segment: untagged Sends on stream 0 both ways, tagged RDMA Writes on
 * stream 1), DDP-SSNs counted per stream and direction from 0 (§5.2.1, §6.1), then a graceful
 * shutdown.
 *
 * --faults: seeded loss, duplication and delay on both endpoints (shortened RTO) and 300 Sends,
 * so the capture holds retransmissions, duplicates and chunks out of DDP-SSN order.
 *
 * Prints "udp_port=N" (the server's UDP port: what to decode as SCTP) and exits 0, or says what
 * failed and exits 1. Drives llp_sctp as tests/e2e/test_llp_sctp.c does: one owner, poll on
 * the endpoints' fds, on_readable and the timers.
 */
#define _GNU_SOURCE 1
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iwarp/errors.h"
#include "llp/llp_sctp.h"
#include "trace/trace_sctp.h"
#include "trace/trace_sink.h"
#include "wire/wire.h"
#include "wire/wire_sctp.h"
#include "wire/wire_segment.h"

#define NSTREAMS 2u

static struct iwarp_llp_sctp_owner *owner;
static struct iwarp_llp_sctp_ep *eps[2];
static struct iwarp_trace_sink *sink;
static int capture_err;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sctp_trace_gen: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pump_once(int max_ms)
{
    uint64_t now = now_ns();
    uint64_t dl = iwarp_llp_sctp_timers(owner, now);
    int to = max_ms;
    if (dl != UINT64_MAX) {
        uint64_t ms = dl <= now ? 0 : (dl - now + 999999) / 1000000;
        if (ms < (uint64_t)to)
            to = (int)ms;
    }
    struct pollfd pf[2];
    for (int i = 0; i < 2; i++)
        pf[i] = (struct pollfd){.fd = iwarp_llp_sctp_ep_fd(eps[i]), .events = POLLIN};
    if (poll(pf, 2, to) > 0)
        for (int i = 0; i < 2; i++)
            if (pf[i].revents)
                iwarp_llp_sctp_on_readable(eps[i], now_ns());
}

#define RUN_UNTIL(cond, ms)                                 \
    do {                                                    \
        uint64_t end_ = now_ns() + (uint64_t)(ms)*1000000u; \
        while (!(cond) && now_ns() < end_)                  \
            pump_once(5);                                   \
    } while (0)

/* The capture hook: every packet the client sends or receives, into the capture file. */
static void capture(void *user, int dir, const struct sockaddr *local, const struct sockaddr *peer,
                    const uint8_t *pkt, size_t len, uint64_t now)
{
    (void)user;
    int rc = iwarp_trace_sctp_pkt(sink, dir == IWARP_LLP_SCTP_PKT_OUT, local, peer, pkt, len, now);
    if (rc != 0 && !capture_err)
        capture_err = rc;
}

/* One side of the association. */
struct side {
    struct iwarp_llp_sctp_assoc *a;
    int up, down, down_err;
    uint64_t received;
    uint16_t next_ssn[NSTREAMS]; /* RFC 5043 §5.2.1: per stream, from 0 */
    uint32_t next_msn[NSTREAMS]; /* RFC 5041 §5.3: QN 0, from 1 */
};

static void s_up(void *user, uint16_t nstreams, uint32_t max_seg)
{
    struct side *s = user;
    if (nstreams < NSTREAMS || max_seg < 1024)
        die("association up with %u streams, max segment %u", nstreams, max_seg);
    s->up++;
}

static void s_down(void *user, int err)
{
    struct side *s = user;
    s->down++;
    s->down_err = err;
}

static void s_chunk(void *user, uint16_t sid, uint32_t ppid, bool unordered, void *buf, size_t len)
{
    (void)sid, (void)ppid, (void)unordered, (void)len;
    ((struct side *)user)->received++;
    iwarp_llp_sctp_chunk_free(buf);
}

static const struct iwarp_llp_sctp_ops side_ops = {s_up, s_down, s_chunk, NULL};

static struct side server;

static void on_accept(void *user, struct iwarp_llp_sctp_assoc *a, int err)
{
    (void)user;
    if (!a)
        die("association refused: %s", iwarp_strerror(err));
    server.a = a;
    iwarp_llp_sctp_set_ops(a, &side_ops, &server);
}

/* Sends one message, retrying while the send buffer is full. */
static void send_msg(struct side *s, uint16_t sid, uint32_t ppid, const uint8_t *p, size_t len)
{
    struct iovec v = {(void *)(uintptr_t)p, len};
    for (int tries = 0;; tries++) {
        int rc = iwarp_llp_sctp_send_chunk(s->a, sid, ppid, &v, 1);
        if (rc == 0)
            return;
        if (rc != IWARP_ERR_BUSY || tries > 2000)
            die("send on stream %u: %s", sid, iwarp_strerror(rc));
        pump_once(5);
    }
}

/* PPID 17: an Enhanced Initiate (initiator) or Accept, with the RFC 6581 word. */
static void send_ctl(struct side *s, uint16_t sid, uint16_t fc, uint16_t ird, uint16_t ord)
{
    static const uint8_t pd[] = "sctp_trace_gen";
    uint8_t buf[IWARP_SCTP_CTL_MAX];
    struct iwarp_sctp_ctl c = {.ssn = s->next_ssn[sid]++,
                               .fc = fc,
                               .ird_ord = {.ird = ird, .ord = ord},
                               .pd = pd,
                               .pd_len = sizeof pd - 1u};
    iwarp_ssize n = iwarp_sctp_ctl_encode(buf, sizeof buf, &c);
    if (n < 0)
        die("ctl encode: %s", iwarp_strerror((int)n));
    send_msg(s, sid, IWARP_SCTP_PPID_DDP_CONTROL, buf, (size_t)n);
}

/* PPID 16: DDP-SSN + one whole DDP segment (an untagged Send, or a tagged RDMA Write). */
static void send_seg(struct side *s, uint16_t sid, bool write, size_t payload_len, uint8_t seed)
{
    uint8_t buf[1200], payload[1024];
    if (payload_len > sizeof payload)
        die("payload too long");
    for (size_t i = 0; i < payload_len; i++)
        payload[i] = (uint8_t)(i * 7u + seed);
    struct iwarp_wire_msg m = {.last = true};
    if (write) {
        m.opcode = IWARP_RDMAP_OP_WRITE;
        m.stag = 0x00abcd00u | seed;
        m.to = 0x10000u * seed;
    } else {
        m.opcode = IWARP_RDMAP_OP_SEND;
        m.msn = s->next_msn[sid]++;
    }
    iwarp_ssize k = iwarp_sctp_ssn_encode(buf, sizeof buf, s->next_ssn[sid]++);
    iwarp_ssize n =
        iwarp_wire_segment_encode(buf + k, sizeof buf - (size_t)k, &m, payload, payload_len);
    if (k < 0 || n < 0)
        die("segment encode: %s", iwarp_strerror((int)(k < 0 ? k : n)));
    send_msg(s, sid, IWARP_SCTP_PPID_DDP_SEGMENT, buf, (size_t)(k + n));
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--faults") != 0)) {
        fprintf(stderr, "usage: sctp_trace_gen OUT.pcap [--faults]\n");
        return 2;
    }
    bool faults = argc == 3;
    char err[256] = "";
    if (iwarp_trace_sink_open(&sink, argv[1], 0, err, sizeof err) < 0)
        die("%s: %s", argv[1], err);
    if (faults)
        iwarp_llp_sctp_set_test_timers(20, 40, 200);

    if (iwarp_llp_sctp_owner_open(NULL, &owner) != 0)
        die("owner: out of memory or eventfd");
    struct iwarp_llp_sctp_ep_cfg sc = {.owner = owner, .nstreams = NSTREAMS};
    if (faults)
        sc.fault = (struct iwarp_llp_sctp_fault){.seed = 0x5ca1ab1e,
                                                 .drop_ppm = 100000,
                                                 .dup_ppm = 50000,
                                                 .delay_ppm = 50000,
                                                 .delay_ms = 7};
    struct iwarp_llp_sctp_ep_cfg cc = sc;
    cc.fault.seed = faults ? 0xfeedfaceu : 0;
    cc.capture = capture;
    int rc = iwarp_llp_sctp_ep_open(&sc, &eps[0]);
    if (rc == 0)
        rc = iwarp_llp_sctp_ep_open(&cc, &eps[1]);
    if (rc < 0)
        die("endpoint: %s", iwarp_strerror(rc));
    struct iwarp_llp_sctp_listener *l = NULL;
    if ((rc = iwarp_llp_sctp_listen(eps[0], 0, 4, on_accept, NULL, &l)) < 0)
        die("listen: %s", iwarp_strerror(rc));
    struct sockaddr_storage sa;
    iwarp_llp_sctp_ep_local(eps[0], &sa);
    uint16_t udp_port = ntohs(((struct sockaddr_in *)&sa)->sin_port);

    struct side client = {0};
    if ((rc = iwarp_llp_sctp_connect(eps[1], (struct sockaddr *)&sa, 0, &side_ops, &client,
                                     &client.a)) < 0)
        die("connect: %s", iwarp_strerror(rc));
    for (unsigned sid = 0; sid < NSTREAMS; sid++)
        client.next_msn[sid] = server.next_msn[sid] = 1; /* RFC 5041 §5.3: MSNs start at 1 */
    RUN_UNTIL(client.up && server.up, 5000);
    if (!client.up || !server.up)
        die("the association did not come up");

    /* RFC 5043 §6.2: Initiate, Accept, then DDP segments each way, on both DDP streams */
    uint64_t expect_srv = 0, expect_cli = 0;
    for (uint16_t sid = 0; sid < NSTREAMS; sid++) {
        send_ctl(&client, sid, IWARP_SCTP_FC_ENH_INITIATE, 16, 8);
        expect_srv++;
        RUN_UNTIL(server.received == expect_srv, 5000);
        send_ctl(&server, sid, IWARP_SCTP_FC_ENH_ACCEPT, 8, 16);
        expect_cli++;
        RUN_UNTIL(client.received == expect_cli, 5000);
    }
    unsigned nsends = faults ? 300u : 4u;
    /* Sends on stream 0, RDMA Writes on stream 1: the wire checker counts MSNs per direction
     * of the association, not per DDP stream (RFC 5041 §5.3, RFC 5043 §6), so untagged
     * messages stay on one stream for it to judge this capture */
    for (unsigned i = 0; i < nsends; i++) {
        uint16_t sid = (uint16_t)(i % NSTREAMS);
        send_seg(&client, sid, sid == 1, 100u + (i * 37u) % 900u, (uint8_t)i);
        expect_srv++;
        if (i % 4 == 3) {
            send_seg(&server, 0, false, 64u + i, (uint8_t)(i + 1));
            expect_cli++;
        }
        pump_once(0);
    }
    RUN_UNTIL(server.received == expect_srv && client.received == expect_cli, 20000);
    if (server.received != expect_srv || client.received != expect_cli)
        die("received %llu/%llu and %llu/%llu messages", (unsigned long long)server.received,
            (unsigned long long)expect_srv, (unsigned long long)client.received,
            (unsigned long long)expect_cli);

    if (faults) {
        /* The faults are for the data phase. Under them a packet delayed past the client's
         * SHUTDOWN COMPLETE, when that was lost, draws an ABORT (RFC 4960 §8.4: an out of the
         * blue packet) that the server rightly takes as the association's loss: end cleanly,
         * once every delayed packet has left. */
        iwarp_llp_sctp_ep_set_fault(eps[0], NULL);
        iwarp_llp_sctp_ep_set_fault(eps[1], NULL);
        uint64_t quiet = now_ns() + 50000000u; /* 50 ms: several delays (7 ms) and RTOs */
        RUN_UNTIL(now_ns() >= quiet, 100);
    }
    if ((rc = iwarp_llp_sctp_shutdown(client.a)) < 0)
        die("shutdown: %s", iwarp_strerror(rc));
    RUN_UNTIL(client.down && server.down, 10000);
    if (!client.down || !server.down || client.down_err || server.down_err)
        die("graceful shutdown did not complete (%d %d)", client.down_err, server.down_err);
    iwarp_llp_sctp_close(client.a, false);
    iwarp_llp_sctp_close(server.a, false);
    iwarp_llp_sctp_ep_close(eps[1]);
    iwarp_llp_sctp_ep_close(eps[0]);
    iwarp_llp_sctp_owner_close(owner);
    if (capture_err)
        die("capture: %s", iwarp_strerror(capture_err));
    if ((rc = iwarp_trace_sink_release(sink)) < 0)
        die("closing the capture: %s", iwarp_strerror(rc));
    printf("udp_port=%u\n", udp_port);
    return 0;
}
