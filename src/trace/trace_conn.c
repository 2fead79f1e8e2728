/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tracing one live TCP connection: octets in, one synthetic TCP segment per MPA PDU out.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "trace/trace_conn.h"

#include <netinet/in.h>
#include <string.h>
#include <time.h>

#include "iwarp/errors.h"
#include "trace/trace_pkt.h"
#include "util/bytes.h"
#include "wire/wire_mpa.h"

static enum iwarp_pcap_side other(enum iwarp_pcap_side s)
{
    return s == IWARP_PCAP_CLIENT ? IWARP_PCAP_SERVER : IWARP_PCAP_CLIENT;
}

/* Starts a public call that writes: takes the sink lock. False (tc done, lock released) when
 * the sink records nothing (the process's bound was reached). */
static bool enter(struct iwarp_trace_conn *tc)
{
    iwarp_trace_sink_lock();
    if (iwarp_trace_sink_writer(tc->sink))
        return true;
    tc->done = true;
    iwarp_trace_sink_unlock();
    return false;
}

/* Ends a call begun by enter(): releases the sink lock, then reports the bound if this call
 * reached it first. */
static void leave(struct iwarp_trace_conn *tc)
{
    uint64_t bound = iwarp_trace_sink_bound();
    iwarp_trace_sink_unlock();
    if (tc->bound_first) {
        tc->bound_first = false;
        if (tc->on_bound)
            tc->on_bound(tc->on_bound_user, bound);
    }
}

/* The packets about to be written get the wall-clock time, or the caller's clock's (never
 * earlier than the last one: connections share the writer). Sink lock held. */
static void stamp(struct iwarp_trace_conn *tc)
{
    uint64_t now;
    if (tc->clock) {
        now = tc->clock(tc->clock_user);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    uint64_t next = iwarp_pcap_writer_time(tc->tcp.w);
    if (now > next || (tc->clock && now == next))
        iwarp_pcap_writer_set_time(tc->tcp.w, now, 1);
}

/* A writer call failed: the process's bound stops every connection (the first to reach it
 * reports it); an I/O error ends the tracing of tc; a state error (octets after the side's FIN)
 * only loses those octets. */
static void check(struct iwarp_trace_conn *tc, int rc)
{
    if (rc == 0 || rc == IWARP_ERR_STATE)
        return;
    if (rc == IWARP_ERR_TRACE_BOUND)
        tc->bound_first = iwarp_trace_sink_bound_reached();
    else if (!tc->err)
        tc->err = rc;
    tc->done = true;
}

/* Writes p[0..n) from side s as one segment, or several: of at most our EMSS for what we send
 * (our FPDUs never exceed it, RFC 5044 §4.5), of at most the largest IP packet for what the
 * peer sends (its FPDUs fit its own EMSS, which we do not know and which, on Linux loopback,
 * can exceed ours), so every FPDU is exactly one segment either way. */
static void put(struct iwarp_trace_conn *tc, enum iwarp_pcap_side s, const uint8_t *p, size_t n)
{
    if (tc->done || n == 0)
        return;
    stamp(tc);
    struct iovec iov = {.iov_base = (void *)(uintptr_t)p, .iov_len = n};
    size_t max = s == tc->local ? tc->max_seg : tc->max_pkt;
    check(tc, iwarp_pcap_tcp_send(&tc->tcp, s, &iov, 1, max));
}

/* Side s's octets stop being MPA: what is collected goes out as it is, the rest as it comes. */
static void to_raw(struct iwarp_trace_conn *tc, enum iwarp_pcap_side s)
{
    struct iwarp_trace_dir *d = &tc->dir[s];
    put(tc, s, d->buf, d->len);
    d->len = 0;
    d->phase = IWARP_TRACE_DIR_RAW;
}

/* Full operation: feeds p[0..n) of side s to its deframer, collecting each FPDU (with the
 * marker before it, RFC 5044 §4.3) in the buffer and writing it as its own segment when its
 * CRC octets are in. p may point into the buffer itself, at or after its end (pending octets
 * being replayed): the collected octets never overtake the ones being read. Returns n. */
static size_t fpdu_feed(struct iwarp_trace_conn *tc, enum iwarp_pcap_side s, const uint8_t *p,
                        size_t n)
{
    struct iwarp_trace_dir *d = &tc->dir[s];
    size_t used = 0;
    while (used < n && d->phase == IWARP_TRACE_DIR_FPDU) {
        struct iwarp_mpa_rx_ev ev;
        iwarp_ssize k = iwarp_mpa_rx_feed(&d->rx, p + used, n - used, &ev);
        if (k < 0 || (size_t)k > IWARP_TRACE_CONN_BUF - d->len ||
            (k == 0 && ev.kind != IWARP_MPA_RX_EV_FPDU)) {
            /* RFC 5044 §8: a CRC, marker or length error ends the stream's framing. */
            to_raw(tc, s);
            break;
        }
        memmove(d->buf + d->len, p + used, (size_t)k);
        d->len += (uint32_t)k;
        used += (size_t)k;
        if (ev.kind == IWARP_MPA_RX_EV_FPDU) {
            put(tc, s, d->buf, d->len);
            d->len = 0;
        }
    }
    return used;
}

/* Directions waiting for the other side's startup frame start full operation once both frames
 * are known: CRC if either frame has C=1 (RFC 5044 §7.1.1), markers in a direction when its
 * receiver's frame has M=1 (RFC 5044 §7.1.1: M asks for markers in what the sender of the frame
 * receives). Nothing follows a Reject (RFC 5044 §7.1.2 rule 3): raw from then on. */
static void start_fpdus(struct iwarp_trace_conn *tc)
{
    const struct iwarp_trace_dir *cli = &tc->dir[IWARP_PCAP_CLIENT];
    const struct iwarp_trace_dir *srv = &tc->dir[IWARP_PCAP_SERVER];
    bool both = cli->phase != IWARP_TRACE_DIR_FRAME && srv->phase != IWARP_TRACE_DIR_FRAME;
    for (int i = 0; i < 2 && both; i++) {
        enum iwarp_pcap_side s = (enum iwarp_pcap_side)i;
        struct iwarp_trace_dir *d = &tc->dir[s];
        if (d->phase != IWARP_TRACE_DIR_WAIT)
            continue;
        if (srv->frame_r) {
            to_raw(tc, s);
            continue;
        }
        struct iwarp_mpa_rx_cfg cfg = {.crc = cli->frame_c || srv->frame_c,
                                       .markers = tc->dir[other(s)].frame_m,
                                       .max_ulpdu = 0,
                                       .stream_pos = 0};
        (void)iwarp_mpa_rx_init(&d->rx, &cfg); /* valid: stream_pos 0, max_ulpdu default */
        d->phase = IWARP_TRACE_DIR_FPDU;
        uint32_t pending = d->len;
        d->len = 0;
        fpdu_feed(tc, s, d->buf, pending);
    }
}

/* The MPA Request (client) or Reply (server) of side s: collected until complete (20 octets,
 * then PD_Length more, RFC 5044 §7.1.1), written as one segment. Returns octets consumed. */
static size_t frame_feed(struct iwarp_trace_conn *tc, enum iwarp_pcap_side s, const uint8_t *p,
                         size_t n)
{
    struct iwarp_trace_dir *d = &tc->dir[s];
    size_t used = 0;
    while (used < n && d->phase == IWARP_TRACE_DIR_FRAME) {
        size_t need = IWARP_MPA_HDR_LEN;
        if (d->len >= IWARP_MPA_HDR_LEN)
            need += iwarp_load_be16(d->buf + IWARP_MPA_HDR_LEN - 2u);
        size_t k = need - d->len < n - used ? need - d->len : n - used;
        memcpy(d->buf + d->len, p + used, k);
        d->len += (uint32_t)k;
        used += k;
        if (d->len < need)
            break;
        struct iwarp_mpa_frame f;
        iwarp_ssize r = iwarp_mpa_frame_decode(d->buf, d->len, &f);
        if (r == IWARP_ERR_SHORT && need == IWARP_MPA_HDR_LEN)
            continue; /* the header is in: now the private data */
        /* RFC 5044 §7.1.2 rule 5: not the expected frame (key, PD_Length): not MPA. */
        if (r < 0 || f.reply != (s == IWARP_PCAP_SERVER)) {
            to_raw(tc, s);
            break;
        }
        put(tc, s, d->buf, (size_t)r);
        d->len = 0;
        d->frame_c = f.c;
        d->frame_m = f.m;
        d->frame_r = f.reply && f.r;
        d->phase = IWARP_TRACE_DIR_WAIT;
        start_fpdus(tc);
    }
    return used;
}

/* Octets of side s after its frame, before full operation could start: kept until then. */
static size_t wait_feed(struct iwarp_trace_conn *tc, enum iwarp_pcap_side s, const uint8_t *p,
                        size_t n)
{
    struct iwarp_trace_dir *d = &tc->dir[s];
    if (n > IWARP_TRACE_CONN_BUF - d->len) {
        to_raw(tc, s);
        return 0;
    }
    memcpy(d->buf + d->len, p, n);
    d->len += (uint32_t)n;
    return n;
}

static void feed(struct iwarp_trace_conn *tc, enum iwarp_pcap_side s, const uint8_t *p, size_t n)
{
    while (n > 0 && !tc->done) {
        size_t k;
        switch (tc->dir[s].phase) {
        case IWARP_TRACE_DIR_FRAME:
            k = frame_feed(tc, s, p, n);
            break;
        case IWARP_TRACE_DIR_WAIT:
            k = wait_feed(tc, s, p, n);
            break;
        case IWARP_TRACE_DIR_FPDU:
            k = fpdu_feed(tc, s, p, n);
            break;
        default:
            put(tc, s, p, n);
            k = n;
            break;
        }
        p += k;
        n -= k;
    }
}

void iwarp_trace_conn_init(struct iwarp_trace_conn *tc, struct iwarp_trace_sink *sink,
                           uint8_t *bufs, iwarp_trace_bound_fn on_bound, void *user)
{
    memset(tc, 0, sizeof *tc);
    tc->sink = sink;
    tc->on_bound = on_bound;
    tc->on_bound_user = user;
    tc->dir[0].buf = bufs;
    tc->dir[1].buf = bufs + IWARP_TRACE_CONN_BUF;
}

void iwarp_trace_conn_set_clock(struct iwarp_trace_conn *tc, iwarp_trace_clock_fn clock, void *user)
{
    tc->clock = clock;
    tc->clock_user = user;
}

/* One end of the conversation from a socket address; false for other families. */
static bool end_from(struct iwarp_pcap_tcp_end *e, const struct sockaddr *sa, uint8_t *ipv)
{
    memset(e, 0, sizeof *e);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        memcpy(e->addr, &a->sin_addr, 4);
        e->port = ntohs(a->sin_port);
        *ipv = 4;
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        memcpy(e->addr, &a->sin6_addr, 16);
        e->port = ntohs(a->sin6_port);
        *ipv = 6;
    } else {
        return false;
    }
    /* The kernel's ISNs are not visible; any value serves, one per port keeps connections
     * in one file apart at a glance. */
    e->isn = (uint32_t)e->port * 0x10001u;
    return true;
}

void iwarp_trace_conn_set_emss(struct iwarp_trace_conn *tc, uint32_t emss)
{
    if (emss)
        tc->max_seg = emss < tc->max_pkt ? emss : tc->max_pkt;
}

int iwarp_trace_conn_open(struct iwarp_trace_conn *tc, bool active, const struct sockaddr *local,
                          const struct sockaddr *peer, uint32_t emss)
{
    if (tc->open || tc->done)
        return IWARP_ERR_STATE;
    struct iwarp_pcap_tcp_end me, them;
    uint8_t v_me = 0, v_them = 0;
    if (!end_from(&me, local, &v_me) || !end_from(&them, peer, &v_them) || v_me != v_them)
        return IWARP_ERR_INVAL;
    tc->local = active ? IWARP_PCAP_CLIENT : IWARP_PCAP_SERVER;
    uint32_t cap = v_me == 4 ? IWARP_PKT_TCP_MAX_PAYLOAD_V4 : IWARP_PKT_TCP_MAX_PAYLOAD_V6;
    tc->max_pkt = cap;
    tc->max_seg = emss && emss < cap ? emss : cap;
    if (!enter(tc))
        return IWARP_ERR_TRACE_BOUND;
    struct iwarp_pcap_writer *w = iwarp_trace_sink_writer(tc->sink);
    int rc = iwarp_pcap_tcp_init(&tc->tcp, w, v_me, active ? &me : &them, active ? &them : &me);
    if (rc == 0) {
        stamp(tc);
        rc = iwarp_pcap_tcp_handshake(&tc->tcp); /* RFC 9293 §3.5 */
    }
    check(tc, rc);
    tc->open = rc == 0;
    leave(tc);
    return rc;
}

void iwarp_trace_conn_tx(struct iwarp_trace_conn *tc, const struct iovec *iov, size_t iovcnt,
                         size_t n)
{
    if (!tc->open || tc->done || !enter(tc))
        return;
    for (size_t i = 0; i < iovcnt && n > 0; i++) {
        size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;
        feed(tc, tc->local, iov[i].iov_base, k);
        n -= k;
    }
    leave(tc);
}

void iwarp_trace_conn_rx(struct iwarp_trace_conn *tc, const uint8_t *data, size_t n)
{
    if (!tc->open || tc->done || !enter(tc))
        return;
    feed(tc, other(tc->local), data, n);
    leave(tc);
}

/* Writes side s's unfinished PDU as it is; its stream carries no more MPA. */
static void drain(struct iwarp_trace_conn *tc, enum iwarp_pcap_side s)
{
    if (tc->dir[s].len > 0)
        to_raw(tc, s);
}

void iwarp_trace_conn_fin(struct iwarp_trace_conn *tc, bool local)
{
    enum iwarp_pcap_side s = local ? tc->local : other(tc->local);
    if (!tc->open || tc->done || tc->tcp.fin[s] || tc->tcp.reset || !enter(tc))
        return;
    drain(tc, s);
    if (!tc->done) {
        stamp(tc);
        check(tc, iwarp_pcap_tcp_fin(&tc->tcp, s)); /* RFC 9293 §3.6 */
    }
    /* The second FIN is acknowledged by the side that closed first. */
    if (!tc->done && tc->tcp.fin[other(s)])
        check(tc, iwarp_pcap_tcp_ack(&tc->tcp, other(s)));
    leave(tc);
}

void iwarp_trace_conn_rst(struct iwarp_trace_conn *tc, bool local)
{
    enum iwarp_pcap_side s = local ? tc->local : other(tc->local);
    if (!tc->open || tc->done || tc->tcp.reset || !enter(tc))
        return;
    drain(tc, IWARP_PCAP_CLIENT);
    drain(tc, IWARP_PCAP_SERVER);
    if (!tc->done) {
        stamp(tc);
        check(tc, iwarp_pcap_tcp_rst(&tc->tcp, s));
    }
    leave(tc);
}

void iwarp_trace_conn_close(struct iwarp_trace_conn *tc)
{
    if (tc->open && !tc->done && enter(tc)) {
        drain(tc, IWARP_PCAP_CLIENT);
        drain(tc, IWARP_PCAP_SERVER);
        if (!tc->done)
            check(tc, iwarp_trace_sink_flush(tc->sink));
        leave(tc);
    }
    tc->done = true;
}
