/* SPDX-License-Identifier: BSD-2-Clause */
/* The in-memory transport between two MPA connections (see llp_mem.h). */
#include "llp/llp_mem.h"

#include <string.h>

#include "iwarp/errors.h"
#include "util/ring.h"

#define IOV_BATCH 64u

int iwarp_llp_mem_init(struct iwarp_llp_mem *m, struct iwarp_llp_conn *a, struct iwarp_llp_conn *b,
                       uint8_t *buf01, uint8_t *buf10, size_t cap, uint32_t seed)
{
    if (!m || !a || !b || !buf01 || !buf10 || cap == 0)
        return IWARP_ERR_INVAL;
    memset(m, 0, sizeof *m);
    m->end[0] = a;
    m->end[1] = b;
    m->pipe[0].buf = buf01;
    m->pipe[1].buf = buf10;
    m->pipe[0].cap = m->pipe[1].cap = cap;
    m->rng = seed ? seed : 0x9E3779B9u;
    return 0;
}

static uint32_t rnd(struct iwarp_llp_mem *m)
{
    uint32_t x = m->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    m->rng = x;
    return x;
}

/* Octets one operation may move: the fault limit (random when asked), at least 1. */
static size_t op_limit(struct iwarp_llp_mem *m, const struct iwarp_llp_mem_pipe *p, size_t max)
{
    if (p->random) {
        size_t top = max ? max : 4096u;
        return 1u + rnd(m) % top;
    }
    return max ? max : SIZE_MAX;
}

int iwarp_llp_mem_put(struct iwarp_llp_mem *m, unsigned dir, const uint8_t *p, size_t n)
{
    struct iwarp_llp_mem_pipe *q = &m->pipe[dir & 1u];
    if (q->cap - q->len < n)
        return IWARP_ERR_NOSPC;
    while (n > 0) {
        size_t tail = iwarp_ring_slot_size(q->head, q->len, q->cap);
        size_t k = q->cap - tail < n ? q->cap - tail : n;
        memcpy(q->buf + tail, p, k);
        if (m->hook)
            m->hook(m->hook_user, dir & 1u, q->off, q->buf + tail, k);
        q->len += k;
        q->off += k;
        p += k;
        n -= k;
    }
    return 0;
}

/* Sender d writes once: up to the limit and the pipe's room (through the filter when there is
 * one). Returns octets written. */
static size_t write_once(struct iwarp_llp_mem *m, unsigned d)
{
    struct iwarp_llp_mem_pipe *p = &m->pipe[d];
    struct iwarp_llp_conn *c = m->end[d];
    size_t room = p->cap - p->len;
    if (room == 0)
        return 0;
    struct iovec iov[IOV_BATCH];
    uint32_t n = iwarp_llp_conn_tx_iov(c, iov, IOV_BATCH, m->now_ns);
    size_t want = op_limit(m, p, p->max_write);
    if (want > room)
        want = room;
    size_t done = 0;
    for (uint32_t i = 0; i < n && done < want; i++) {
        size_t l = iov[i].iov_len < want - done ? iov[i].iov_len : want - done;
        if (m->filter)
            m->filter(m->hook_user, d, iov[i].iov_base, l);
        else
            (void)iwarp_llp_mem_put(m, d, iov[i].iov_base, l); /* l fits: want <= room */
        done += l;
    }
    if (done > 0)
        iwarp_llp_conn_tx_ack(c, done);
    return done;
}

/* Receiver of pipe d reads once. Returns octets read. */
static size_t read_once(struct iwarp_llp_mem *m, unsigned d)
{
    struct iwarp_llp_mem_pipe *p = &m->pipe[d];
    struct iwarp_llp_conn *c = m->end[1u - d];
    if (p->len == 0 || p->stall > 0)
        return 0;
    struct iovec iov[2];
    uint32_t niov = iwarp_llp_conn_rx_bufs(c, iov); /* as llp_tcp reads: one readv */
    if (niov == 0)
        return 0;
    size_t cap = iov[0].iov_len + (niov > 1 ? iov[1].iov_len : 0);
    size_t n = op_limit(m, p, p->max_read);
    if (n > cap)
        n = cap;
    if (n > p->len)
        n = p->len;
    size_t done = 0;
    for (uint32_t i = 0, off = 0; done < n;) {
        uint8_t *dst = (uint8_t *)iov[i].iov_base + off;
        size_t room = iov[i].iov_len - off, want = n - done;
        size_t k = p->cap - p->head < want ? p->cap - p->head : want;
        if (k > room)
            k = room;
        memcpy(dst, p->buf + p->head, k);
        p->head = iwarp_ring_advance_size(p->head, k, p->cap);
        p->len -= k;
        done += k;
        off += (uint32_t)k;
        if (off == iov[i].iov_len) {
            i++;
            off = 0;
        }
    }
    int rc = iwarp_llp_conn_rx_ack(c, done, m->now_ns);
    if (rc < 0 && m->rx_err[1u - d] == 0)
        m->rx_err[1u - d] = rc;
    return done;
}

static bool closing_state(const struct iwarp_llp_conn *c)
{
    return c->state == IWARP_LLP_CONN_CLOSE || c->state == IWARP_LLP_CONN_FAILED ||
           c->state == IWARP_LLP_CONN_REJECTED;
}

/* Close end d's transport: by its own decision (graceful as given), or because the peer's
 * stream ended (peer_eof: graceful only at a message boundary, as over TCP). */
static void close_end(struct iwarp_llp_mem *m, unsigned d, bool graceful, bool peer_eof)
{
    m->closed[d] = true;
    m->pipe[d].eof = true;
    if (m->close_hook)
        m->close_hook(m->hook_user, d);
    if (peer_eof)
        iwarp_llp_conn_eof(m->end[d]);
    else
        iwarp_llp_conn_closed(m->end[d], graceful);
}

size_t iwarp_llp_mem_step(struct iwarp_llp_mem *m)
{
    size_t moved = 0;
    for (unsigned d = 0; d < 2; d++) {
        if (m->closed[d])
            continue;
        size_t w;
        while ((w = write_once(m, d)) > 0)
            moved += w;
        /* Nothing more to write from a connection that is done: close its transport. */
        struct iwarp_llp_conn *c = m->end[d];
        if (closing_state(c) && !iwarp_llp_conn_tx_ready(c, m->now_ns)) {
            close_end(m, d, c->state == IWARP_LLP_CONN_CLOSE, false);
            moved++;
        }
    }
    for (unsigned d = 0; d < 2; d++) {
        struct iwarp_llp_mem_pipe *p = &m->pipe[d];
        size_t r;
        while ((r = read_once(m, d)) > 0)
            moved += r;
        /* The peer sees the end of the stream after the last octet. */
        if (p->eof && p->len == 0 && p->stall == 0 && !m->closed[1u - d]) {
            close_end(m, 1u - d, true, true);
            moved++;
        }
        if (p->stall > 0)
            p->stall--;
    }
    return moved;
}

bool iwarp_llp_mem_pump_once(struct iwarp_llp_mem *m)
{
    /* A step that counts a stall down moves nothing from that pipe: only a step that started
     * with no stall in either pipe and moved nothing means quiescence. */
    bool stalled = m->pipe[0].stall > 0 || m->pipe[1].stall > 0;
    return iwarp_llp_mem_step(m) > 0 || stalled;
}

uint32_t iwarp_llp_mem_pump(struct iwarp_llp_mem *m, uint32_t max_steps)
{
    uint32_t steps = 0;
    while (steps < max_steps) {
        steps++;
        if (!iwarp_llp_mem_pump_once(m))
            break;
    }
    return steps;
}
