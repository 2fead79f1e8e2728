/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace/trace_conn: the MPA streams of both directions (startup frames from the wire codec,
 * FPDUs from the library's framer, CRC and markers on and off) fed in random pieces as a socket
 * would deliver them; the capture read back with trace/pcap_reader must reassemble to exactly
 * the octets fed, direction by direction, with every MPA frame and FPDU in a TCP segment of its
 * own, the handshake first and the FIN/RST last. A damaged stream is recorded as it came.
 */
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "iwarp/errors.h"
#include "mpa/mpa_frame.h"
#include "trace/pcap_reader.h"
#include "trace/trace_conn.h"
#include "trace/trace_sink.h"
#include "wire/wire_mpa.h"

#define EMSS       1448u
#define STREAM_MAX (1u << 20)
#define PDU_MAX    512u

/* One direction's stream and where its PDUs end. */
struct dirstream {
    uint8_t *b;
    size_t len;
    size_t ends[PDU_MAX];
    size_t n_pdu;
};

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

static void add_frame(struct dirstream *d, bool reply, bool m, bool c, bool r)
{
    uint8_t pd[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct iwarp_mpa_frame f = {.reply = reply,
                                .m = m,
                                .c = c,
                                .r = r,
                                .s = true,
                                .rev = 2,
                                .v2 = {.ird = 4, .ord = 4},
                                .pd = pd,
                                .pd_len = sizeof pd};
    iwarp_ssize n = iwarp_mpa_frame_encode(d->b + d->len, STREAM_MAX - d->len, &f);
    ASSERT_TRUE(n > 0);
    d->len += (size_t)n;
    d->ends[d->n_pdu++] = d->len;
}

/* count FPDUs of random ULPDU sizes 1..MULPDU(EMSS) framed with the library's framer. */
static void add_fpdus(struct dirstream *d, bool crc, bool markers, uint32_t count)
{
    struct iwarp_mpa_tx tx;
    struct iwarp_mpa_tx_cfg cfg = {.crc = crc, .markers = markers, .stream_pos = 0};
    ASSERT_EQ(iwarp_mpa_tx_init(&tx, &cfg), 0);
    uint32_t mulpdu = iwarp_mpa_mulpdu(EMSS, markers);
    static uint8_t ulpdu[65536];
    static struct iwarp_mpa_tx_scratch scratch;
    static struct iovec out[IWARP_MPA_TX_IOV_MAX(1)];
    for (uint32_t i = 0; i < count; i++) {
        uint32_t len = 1u + rnd() % mulpdu;
        if (i % 7 == 0)
            len = mulpdu; /* full-size FPDUs too */
        for (uint32_t k = 0; k < len; k++)
            ulpdu[k] = (uint8_t)rnd();
        struct iovec in = {.iov_base = ulpdu, .iov_len = len};
        iwarp_ssize n = iwarp_mpa_tx_frame(&tx, &in, 1, &scratch, out, IWARP_MPA_TX_IOV_MAX(1));
        ASSERT_TRUE(n > 0);
        size_t start = d->len;
        for (iwarp_ssize k = 0; k < n; k++) {
            memcpy(d->b + d->len, out[k].iov_base, out[k].iov_len);
            d->len += out[k].iov_len;
        }
        ASSERT_TRUE(d->len - start <= EMSS); /* RFC 5044 §4.5: an FPDU fits the EMSS */
        d->ends[d->n_pdu++] = d->len;
    }
}

/* Feeds stream[*off, upto) in random pieces: as iovecs of random sizes (local) or buffers. */
static void feed(struct iwarp_trace_conn *tc, const struct dirstream *d, size_t *off, size_t upto,
                 bool local)
{
    while (*off < upto) {
        size_t n = 1u + rnd() % 3000u;
        if (n > upto - *off)
            n = upto - *off;
        if (local) {
            struct iovec iov[3];
            size_t a = n / 3, b = n / 3;
            iov[0] = (struct iovec){d->b + *off, a};
            iov[1] = (struct iovec){d->b + *off + a, b};
            iov[2] = (struct iovec){d->b + *off + a + b, n - a - b + 5u}; /* 5 unwritten */
            iwarp_trace_conn_tx(tc, iov, 3, n);
        } else {
            iwarp_trace_conn_rx(tc, d->b + *off, n);
        }
        *off += n;
    }
}

/* What the capture holds for one side: payload reassembled by sequence number, segment ends. */
struct side_cap {
    uint8_t *b;
    size_t len;
    size_t ends[4 * PDU_MAX];
    size_t n_seg;
    uint32_t next_seq;
    bool syn, fin, rst;
};

static void read_back(const char *path, uint16_t cport, struct side_cap cap[2])
{
    struct iwarp_pcap_reader *r = NULL;
    ASSERT_EQ(iwarp_pcap_reader_open(&r, path, NULL, 0), 0);
    struct iwarp_pcap_packet p;
    int rc;
    uint64_t n = 0;
    while ((rc = iwarp_pcap_reader_next(r, &p)) == 0) {
        n++;
        ASSERT_EQ(p.decode_rc, 0);
        ASSERT_EQ(p.pkt.ip_proto, 6);
        struct side_cap *c = &cap[p.pkt.sport == cport ? 0 : 1];
        /* no data, FIN or RST after the end (only the ACK of the peer's FIN) */
        if (p.pkt.payload_len || (p.pkt.tcp_flags & (IWARP_PKT_TCP_FIN | IWARP_PKT_TCP_RST)))
            ASSERT_FALSE(c->fin || c->rst);
        if (p.pkt.tcp_flags & IWARP_PKT_TCP_SYN) {
            ASSERT_FALSE(c->syn);
            c->syn = true;
            c->next_seq = p.pkt.seq + 1u;
            continue;
        }
        ASSERT_TRUE(c->syn); /* the handshake comes first */
        if (p.pkt.payload_len) {
            ASSERT_EQ_U(p.pkt.seq, c->next_seq); /* contiguous, no gaps, no overlap */
            memcpy(c->b + c->len, p.pkt.payload, p.pkt.payload_len);
            c->len += p.pkt.payload_len;
            c->next_seq += (uint32_t)p.pkt.payload_len;
            c->ends[c->n_seg++] = c->len;
        }
        if (p.pkt.tcp_flags & IWARP_PKT_TCP_FIN)
            c->fin = true;
        if (p.pkt.tcp_flags & IWARP_PKT_TCP_RST)
            c->rst = true;
    }
    ASSERT_EQ(rc, IWARP_ERR_PCAP_END);
    ASSERT_TRUE(n >= 3);
    iwarp_pcap_reader_close(r);
}

/* A new capture file at path (a "/tmp/...XXXXXX" template, filled in) and its sink. */
static struct iwarp_trace_sink *temp_sink(char *path)
{
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    struct iwarp_trace_sink *w = NULL;
    ASSERT_EQ(iwarp_trace_sink_open(&w, path, 0, NULL, 0), 0);
    return w;
}

/* Runs one conversation. active: we are the client. garbage: the peer's stream turns into
 * non-MPA octets after its frame. abort: end with our RST instead of FINs. */
static void run(bool crc, bool m_req, bool m_rep, bool active, bool garbage, bool abort_end)
{
    char path[] = "/tmp/test_trace_conn_XXXXXX";
    struct dirstream ds[2] = {{.b = calloc(1, STREAM_MAX)}, {.b = calloc(1, STREAM_MAX)}};
    ASSERT_TRUE(ds[0].b && ds[1].b);
    /* client: Request, then FPDUs with markers iff the Reply asked (M in what the server
     * receives); server: Reply, then FPDUs with markers iff the Request asked */
    add_frame(&ds[0], false, m_req, crc, false);
    add_frame(&ds[1], true, m_rep, false, false);
    add_fpdus(&ds[0], crc, m_rep, 150);
    if (garbage) {
        for (int i = 0; i < 5000; i++)
            ds[1].b[ds[1].len++] = (uint8_t)(0xF0u | (rnd() & 0xFu)); /* ULPDU_Length > 64768 */
        ds[1].ends[ds[1].n_pdu++] = ds[1].len;
    } else {
        add_fpdus(&ds[1], crc, m_req, 150);
    }

    struct iwarp_trace_sink *w = temp_sink(path);
    uint8_t *bufs = calloc(2, IWARP_TRACE_CONN_BUF);
    ASSERT_TRUE(bufs != NULL);
    struct iwarp_trace_conn tc;
    iwarp_trace_conn_init(&tc, w, bufs, NULL, NULL);
    struct sockaddr_in cli = {.sin_family = AF_INET, .sin_port = htons(40000)};
    struct sockaddr_in srv = {.sin_family = AF_INET, .sin_port = htons(19875)};
    cli.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const struct sockaddr *me = active ? (struct sockaddr *)&cli : (struct sockaddr *)&srv;
    const struct sockaddr *peer = active ? (struct sockaddr *)&srv : (struct sockaddr *)&cli;
    ASSERT_EQ(iwarp_trace_conn_open(&tc, active, me, peer, EMSS), 0);
    ASSERT_EQ(iwarp_trace_conn_open(&tc, active, me, peer, EMSS), IWARP_ERR_STATE);
    /* stream order as on a real connection: Request, Reply, then FPDUs both ways interleaved */
    size_t off[2] = {0, 0};
    feed(&tc, &ds[0], &off[0], ds[0].ends[0], active);
    feed(&tc, &ds[1], &off[1], ds[1].ends[0], !active);
    while (off[0] < ds[0].len || off[1] < ds[1].len) {
        int s = (int)(rnd() & 1u);
        size_t upto = off[s] + 1u + rnd() % 20000u;
        if (upto > ds[s].len)
            upto = ds[s].len;
        feed(&tc, &ds[s], &off[s], upto, s == 0 ? active : !active);
    }
    if (abort_end) {
        iwarp_trace_conn_rst(&tc, true);
    } else {
        iwarp_trace_conn_fin(&tc, false);
        iwarp_trace_conn_fin(&tc, true);
    }
    iwarp_trace_conn_close(&tc);
    iwarp_trace_conn_tx(&tc, &(struct iovec){ds[0].b, 4}, 1, 4); /* ignored after close */
    ASSERT_EQ(tc.err, 0);
    ASSERT_EQ(iwarp_trace_sink_release(w), 0);

    struct side_cap cap[2] = {{.b = calloc(1, STREAM_MAX)}, {.b = calloc(1, STREAM_MAX)}};
    ASSERT_TRUE(cap[0].b && cap[1].b);
    read_back(path, 40000, cap);
    for (int s = 0; s < 2; s++) {
        /* exactly the octets that went over the socket */
        ASSERT_EQ(cap[s].len, ds[s].len);
        ASSERT_MEM_EQ(cap[s].b, ds[s].b, ds[s].len);
        /* each MPA frame and FPDU is one segment of its own: the segment ends are the PDU
         * ends (garbage is recorded as it came, so only the frame boundary holds there) */
        if (garbage && s == 1) {
            ASSERT_EQ(cap[s].ends[0], ds[s].ends[0]);
            continue;
        }
        ASSERT_EQ(cap[s].n_seg, ds[s].n_pdu);
        for (size_t i = 0; i < ds[s].n_pdu; i++)
            ASSERT_EQ(cap[s].ends[i], ds[s].ends[i]);
    }
    if (abort_end) {
        ASSERT_TRUE(cap[active ? 0 : 1].rst);
    } else {
        ASSERT_TRUE(cap[0].fin && cap[1].fin);
    }
    free(cap[0].b);
    free(cap[1].b);
    free(ds[0].b);
    free(ds[1].b);
    free(bufs);
    unlink(path);
}

TEST(crc_no_markers_active)
{
    run(true, false, false, true, false, false);
}

TEST(no_crc_no_markers_passive)
{
    run(false, false, false, false, false, false);
}

TEST(crc_markers_both_ways_active)
{
    run(true, true, true, true, false, false);
}

TEST(markers_one_way_passive)
{
    run(false, true, false, false, false, false);
    run(true, false, true, false, false, true);
}

TEST(damaged_peer_stream_is_recorded_as_it_came)
{
    run(true, false, false, true, true, false);
    run(false, true, true, false, true, true);
}

TEST(fpdus_before_the_other_frame_wait_for_it)
{
    /* the client's FPDUs arrive before the Reply is known (a misbehaving peer, or octets the
     * passive side reads early): they are held, then framed once the Reply is seen */
    char path[] = "/tmp/test_trace_conn_XXXXXX";
    struct dirstream ds[2] = {{.b = calloc(1, STREAM_MAX)}, {.b = calloc(1, STREAM_MAX)}};
    add_frame(&ds[0], false, false, true, false);
    add_frame(&ds[1], true, true, false, false);
    add_fpdus(&ds[0], true, true, 20);
    struct iwarp_trace_sink *w = temp_sink(path);
    uint8_t *bufs = calloc(2, IWARP_TRACE_CONN_BUF);
    struct iwarp_trace_conn tc;
    iwarp_trace_conn_init(&tc, w, bufs, NULL, NULL);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(19875)};
    struct sockaddr_in6 b = {.sin6_family = AF_INET6, .sin6_port = htons(40000)};
    a.sin6_addr = in6addr_loopback;
    b.sin6_addr = in6addr_loopback;
    ASSERT_EQ(iwarp_trace_conn_open(&tc, false, (struct sockaddr *)&a, (struct sockaddr *)&b, EMSS),
              0);
    size_t off0 = 0, off1 = 0;
    feed(&tc, &ds[0], &off0, ds[0].ends[2], false); /* Request and two FPDUs */
    feed(&tc, &ds[1], &off1, ds[1].len, true);      /* our Reply */
    feed(&tc, &ds[0], &off0, ds[0].len, false);
    iwarp_trace_conn_close(&tc);
    ASSERT_EQ(iwarp_trace_sink_release(w), 0);
    struct side_cap cap[2] = {{.b = calloc(1, STREAM_MAX)}, {.b = calloc(1, STREAM_MAX)}};
    read_back(path, 40000, cap);
    ASSERT_EQ(cap[0].len, ds[0].len);
    ASSERT_MEM_EQ(cap[0].b, ds[0].b, ds[0].len);
    ASSERT_EQ(cap[0].n_seg, ds[0].n_pdu);
    for (size_t i = 0; i < ds[0].n_pdu; i++)
        ASSERT_EQ(cap[0].ends[i], ds[0].ends[i]);
    free(cap[0].b);
    free(cap[1].b);
    free(ds[0].b);
    free(ds[1].b);
    free(bufs);
    unlink(path);
}

/* The caller's clock: 10 us apart from T0, then once (call 3) a time in the past. */
#define T0 (UINT64_C(1800000000) * 1000000000u)
static unsigned clock_calls;
static uint64_t test_clock(void *user)
{
    ASSERT_TRUE(user == &clock_calls);
    clock_calls++;
    return clock_calls == 3 ? 5 : T0 + 10000u * clock_calls;
}

TEST(caller_clock_stamps_packets)
{
    /* with a clock of its own a connection's packets carry its times, not the wall clock's:
     * the handshake (3 packets, 1 ns apart) at call 1, the Request at call 2, the Reply at
     * call 3, which goes back in time and is ignored (the writer's clock steps on by 1 ns),
     * the client's 20 octets held after its Request (not a whole FPDU) at close, call 4 */
    char path[] = "/tmp/test_trace_conn_XXXXXX";
    struct iwarp_trace_conn tc;
    uint8_t *bufs = calloc(2, IWARP_TRACE_CONN_BUF);
    iwarp_trace_conn_init(&tc, temp_sink(path), bufs, NULL, NULL);
    iwarp_trace_conn_set_clock(&tc, test_clock, &clock_calls);
    struct sockaddr_in cli = {.sin_family = AF_INET, .sin_port = htons(40000)};
    struct sockaddr_in srv = {.sin_family = AF_INET, .sin_port = htons(19875)};
    cli.sin_addr.s_addr = srv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(
        iwarp_trace_conn_open(&tc, true, (struct sockaddr *)&cli, (struct sockaddr *)&srv, EMSS),
        0);
    struct dirstream req = {.b = calloc(1, STREAM_MAX)}, rep = {.b = calloc(1, STREAM_MAX)};
    add_frame(&req, false, false, true, false);
    add_frame(&req, false, false, true, false); /* 20 octets of it follow the Request */
    add_frame(&rep, true, false, true, false);
    iwarp_trace_conn_tx(&tc, &(struct iovec){req.b, req.ends[0]}, 1, req.ends[0]);
    iwarp_trace_conn_tx(&tc, &(struct iovec){req.b + req.ends[0], 20}, 1, 20);
    iwarp_trace_conn_rx(&tc, rep.b, rep.len);
    iwarp_trace_conn_close(&tc);
    ASSERT_EQ(iwarp_trace_sink_release(tc.sink), 0);
    ASSERT_EQ(clock_calls, 4);
    const uint64_t want[] = {T0 + 10000u, T0 + 10001u, T0 + 10002u,
                             T0 + 20000u, T0 + 20001u, T0 + 40000u};
    struct iwarp_pcap_reader *r = NULL;
    ASSERT_EQ(iwarp_pcap_reader_open(&r, path, NULL, 0), 0);
    struct iwarp_pcap_packet p;
    size_t n = 0;
    while (iwarp_pcap_reader_next(r, &p) == 0) {
        ASSERT_TRUE(n < sizeof want / sizeof want[0]);
        ASSERT_EQ_U(p.ts_ns, want[n]);
        n++;
    }
    ASSERT_EQ(n, sizeof want / sizeof want[0]);
    iwarp_pcap_reader_close(r);
    free(req.b);
    free(rep.b);
    free(bufs);
    unlink(path);
}
