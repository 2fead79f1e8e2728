/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: the test protocol between client and server, and the buffer layout both derive
 * from the same parameters.
 *
 * Hello (MPA Request private data, 40 octets, big-endian):
 *   0 "IWPF"  4 version (1)  5 op  6 flags (1 lat, 2 verify, 4 crc)  7 zero
 *   8 QP index (16)  10 QPs (16)  12 depth (16)  14 zero (16)  16 largest size (32)
 *   20 client buffer address (64)  28 its STag (32)  32 its length (64)
 * Welcome (MPA Reply private data, 32 octets):
 *   0 "IWPF"  4 version  5 status (0 ok, 1 refused)  6 zero (16)  8 receive depth (32)
 *   12 STag (32)  16 server buffer address (64)  24 its length (64)
 * Control message (a Send, 40 octets):
 *   0 type  1 kind  2 status  3 zero  4 size (32)  8 phase number (32)  12 zero (32)
 *   16 a (64)  24 b (64)  32 c (64)
 */
#include <string.h>

#include "perf.h"
#include "util/bytes.h"

enum {
    PERF_MAGIC = 0x49575046, /* "IWPF" */
    PERF_VERSION = 1,
    F_LAT = 1,
    F_VERIFY = 2,
    F_CRC = 4,
};

/* Memory a side spends on data slots (all QPs) and on the server's Send receive buffers. */
#define CAP_DATA        ((size_t)32 << 20)
#define CAP_RECV        ((size_t)64 << 20)
/* The smallest shared bandwidth buffer of a QP (perftest's default cycle buffer: a page). */
#define PERF_SHARED_MIN ((size_t)4096)

static size_t max_sz(size_t a, size_t b)
{
    return a > b ? a : b;
}

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/*
 * Compute the buffer layout of one side for parameters p: per-QP data regions (the slots of
 * Writes, Reads and Send sources), then the receive buffers. Bandwidth without --verify gives
 * a QP one buffer of the largest size (at least a page), which the operations in flight share,
 * as perftest's bandwidth tests do above half a page: every column of a comparison then moves
 * data through the same footprint. --verify gives every operation in flight its own slot. The
 * server's Send receive buffers hold the largest message and stay posted for the whole session
 * (verbs cannot take a posted receive back), so their number is bounded by memory: 2 x depth, at
 * most 64 MiB, at least 2.
 */
void perf_layout_init(struct perf_layout *l, const struct perf_params *p, bool server)
{
    size_t max = p->max_size, n = p->nqps ? p->nqps : 1;
    l->nqps = (uint32_t)n;
    if (p->lat)
        l->region = 2 * max; /* write latency: slot 0 source, slot 1 the echo's target */
    else if (!p->verify)
        l->region = max_sz(max, PERF_SHARED_MIN);
    else
        l->region = max_sz(max, min_sz((size_t)p->qd * max, CAP_DATA / n));
    l->region = (l->region + 63) & ~(size_t)63;
    bool send_data = p->op == PERF_OP_SEND && (server ? !p->lat : p->lat);
    bool recv_credit = perf_op_consumes_recv(p->op) && !p->lat; /* the server's receives */
    bool send_any = p->op == PERF_OP_SEND && (server || p->lat);
    l->recv_len = (uint32_t)(send_any ? max_sz(max, PERF_CTL_LEN) : PERF_CTL_LEN);
    if (server && recv_credit) {
        size_t fit = CAP_RECV / (n * l->recv_len);
        l->rq_depth = (uint32_t)max_sz(2, min_sz(2 * (size_t)p->qd, fit));
    } else {
        l->rq_depth = send_data ? 4 : 8;
    }
    l->recv_off = (n * l->region + 4095) & ~(size_t)4095;
    l->total = l->recv_off + n * l->rq_depth * l->recv_len;
}

/* Slots a phase with messages of `size` octets uses per QP: min(qd, region / size), >= 1. */
uint32_t perf_layout_slots(const struct perf_layout *l, uint32_t qd, uint32_t size)
{
    size_t fit = l->region / size;
    return (uint32_t)max_sz(1, min_sz(qd, fit));
}

/* Offset of data slot `slot` of QP q in a phase with messages of `size` octets. */
size_t perf_slot_off(const struct perf_layout *l, uint32_t q, uint32_t slot, uint32_t size)
{
    return (size_t)q * l->region + (size_t)slot * size;
}

/* Offset of receive buffer `slot` of QP q. */
size_t perf_recv_off(const struct perf_layout *l, uint32_t q, uint32_t slot)
{
    return l->recv_off + ((size_t)q * l->rq_depth + slot) * l->recv_len;
}

/* Encode the client's hello (layout in the file comment) into out. */
void perf_hello_encode(uint8_t out[PERF_HELLO_LEN], const struct perf_hello *h)
{
    memset(out, 0, PERF_HELLO_LEN);
    iwarp_store_be32(out, PERF_MAGIC);
    out[4] = PERF_VERSION;
    out[5] = (uint8_t)h->p.op;
    out[6] =
        (uint8_t)((h->p.lat ? F_LAT : 0) | (h->p.verify ? F_VERIFY : 0) | (h->p.crc ? F_CRC : 0));
    iwarp_store_be16(out + 8, (uint16_t)h->qp_index);
    iwarp_store_be16(out + 10, (uint16_t)h->p.nqps);
    iwarp_store_be16(out + 12, (uint16_t)h->p.qd);
    iwarp_store_be32(out + 16, h->p.max_size);
    iwarp_store_be64(out + 20, h->addr);
    iwarp_store_be32(out + 28, h->rkey);
    iwarp_store_be64(out + 32, h->len);
}

/*
 * Decode a hello from the peer's private data in[0..len). Every value is range-checked here, so
 * the server sizes nothing from unchecked peer octets. Returns 0 or IWARP_ERR_PERF_PROTO.
 */
int perf_hello_decode(struct perf_hello *h, const uint8_t *in, size_t len)
{
    if (len != PERF_HELLO_LEN || iwarp_load_be32(in) != PERF_MAGIC || in[4] != PERF_VERSION)
        return IWARP_ERR_PERF_PROTO;
    if (in[5] > PERF_OP_WRITE_IMM || (in[6] & ~(F_LAT | F_VERIFY | F_CRC)))
        return IWARP_ERR_PERF_PROTO;
    h->p.op = (enum perf_op)in[5];
    h->p.lat = in[6] & F_LAT;
    h->p.verify = in[6] & F_VERIFY;
    h->p.crc = in[6] & F_CRC;
    h->qp_index = iwarp_load_be16(in + 8);
    h->p.nqps = iwarp_load_be16(in + 10);
    h->p.qd = iwarp_load_be16(in + 12);
    h->p.max_size = iwarp_load_be32(in + 16);
    h->addr = iwarp_load_be64(in + 20);
    h->rkey = iwarp_load_be32(in + 28);
    h->len = iwarp_load_be64(in + 32);
    if (h->p.nqps < 1 || h->p.nqps > PERF_MAX_QPS || h->qp_index >= h->p.nqps || h->p.qd < 1 ||
        h->p.qd > PERF_MAX_QD || h->p.max_size < PERF_MIN_SIZE || h->p.max_size > PERF_MAX_SIZE ||
        (h->p.lat && h->p.nqps != 1))
        return IWARP_ERR_PERF_PROTO;
    struct perf_layout cl;
    perf_layout_init(&cl, &h->p, false);
    if (h->len < cl.total) /* the client's buffer must hold what we may write into it */
        return IWARP_ERR_PERF_PROTO;
    return 0;
}

/* Encode the server's welcome into out. */
void perf_welcome_encode(uint8_t out[PERF_WELCOME_LEN], const struct perf_welcome *w)
{
    memset(out, 0, PERF_WELCOME_LEN);
    iwarp_store_be32(out, PERF_MAGIC);
    out[4] = PERF_VERSION;
    out[5] = (uint8_t)w->status;
    iwarp_store_be32(out + 8, w->rq_depth);
    iwarp_store_be32(out + 12, w->rkey);
    iwarp_store_be64(out + 16, w->addr);
    iwarp_store_be64(out + 24, w->len);
}

/* Decode a welcome from in[0..len). Returns 0 or IWARP_ERR_PERF_PROTO. */
int perf_welcome_decode(struct perf_welcome *w, const uint8_t *in, size_t len)
{
    if (len != PERF_WELCOME_LEN || iwarp_load_be32(in) != PERF_MAGIC || in[4] != PERF_VERSION)
        return IWARP_ERR_PERF_PROTO;
    w->status = in[5];
    w->rq_depth = iwarp_load_be32(in + 8);
    w->rkey = iwarp_load_be32(in + 12);
    w->addr = iwarp_load_be64(in + 16);
    w->len = iwarp_load_be64(in + 24);
    return 0;
}

/* Encode a control message into out. */
void perf_ctl_encode(uint8_t out[PERF_CTL_LEN], const struct perf_ctl *c)
{
    memset(out, 0, PERF_CTL_LEN);
    out[0] = c->type;
    out[1] = c->kind;
    out[2] = c->status;
    iwarp_store_be32(out + 4, c->size);
    iwarp_store_be32(out + 8, c->seq);
    iwarp_store_be64(out + 16, c->a);
    iwarp_store_be64(out + 24, c->b);
    iwarp_store_be64(out + 32, c->c);
}

/* Decode a control message from a received Send in[0..len). Returns 0 or IWARP_ERR_PERF_PROTO
 * (wrong length or an unknown type or kind). */
int perf_ctl_decode(struct perf_ctl *c, const uint8_t *in, size_t len)
{
    if (len != PERF_CTL_LEN || in[0] < PERF_CTL_PHASE || in[0] > PERF_CTL_CREDIT)
        return IWARP_ERR_PERF_PROTO;
    c->type = in[0];
    c->kind = in[1];
    c->status = in[2];
    c->size = iwarp_load_be32(in + 4);
    c->seq = iwarp_load_be32(in + 8);
    c->a = iwarp_load_be64(in + 16);
    c->b = iwarp_load_be64(in + 24);
    c->c = iwarp_load_be64(in + 32);
    if (c->type == PERF_CTL_PHASE && (c->kind < PERF_PH_BW || c->kind > PERF_PH_QUIT))
        return IWARP_ERR_PERF_PROTO;
    if (c->type == PERF_CTL_PHASE && c->kind != PERF_PH_QUIT &&
        (c->size < PERF_MIN_SIZE || c->size > PERF_MAX_SIZE))
        return IWARP_ERR_PERF_PROTO;
    return 0;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15u; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
    return x ^ (x >> 31);
}

/* The seed of message n of QP q in phase seq (or of slot n for write/read bandwidth). */
uint64_t perf_seed(uint32_t seq, uint32_t q, uint64_t n)
{
    return (uint64_t)seq << 44 ^ (uint64_t)q << 36 ^ n;
}

static uint64_t word(uint64_t seed, size_t i)
{
    return mix(seed * 0xD6E8FEB86659FD93u + (uint64_t)i);
}

/* Fill p[0..len) with the pattern of seed: octet k is octet k % 8 of mix(seed, k / 8), so any
 * prefix of a slot's pattern is the pattern of the shorter message. */
void perf_pattern_fill(uint8_t *p, size_t len, uint64_t seed)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = word(seed, i / 8);
        memcpy(p + i, &w, 8);
    }
    if (i < len) {
        uint64_t w = word(seed, i / 8);
        memcpy(p + i, &w, len - i);
    }
}

/* Fill p[0..len) with the complement of the pattern of seed: no octet matches it, so any
 * octet a transfer fails to place is caught by perf_pattern_check. */
void perf_pattern_poison(uint8_t *p, size_t len, uint64_t seed)
{
    perf_pattern_fill(p, len, seed);
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)~p[i];
}

/* Count the octets of p[0..len) that differ from the pattern of seed. */
uint64_t perf_pattern_check(const uint8_t *p, size_t len, uint64_t seed)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = word(seed, i / 8);
        size_t n = len - i < 8 ? len - i : 8;
        if (memcmp(p + i, &w, n) == 0)
            continue;
        const uint8_t *e = (const uint8_t *)&w;
        for (size_t k = 0; k < n; k++)
            bad += p[i + k] != e[k];
    }
    return bad;
}
