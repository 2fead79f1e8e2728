/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the DDP-only stream engine (src/core/core_ddp) receiving segments, through both
 * receive paths (whole segment, and the two-phase header / payload placement the MPA
 * connection uses with CRC off), with posted receives on several queues and a registered MR.
 * Input: ops op(1) and arguments:
 *   op % 5 == 0  raw segment via rx_segment: len(1), then len octets
 *   op % 5 == 1  raw segment via rx_hdr + payload placement + rx_payload_done: len(1), octets
 *   op % 5 == 2  untagged segment steered near the expected state: qn(1), flags(1) (L, MSN and
 *                MO jitter), len(1) payload octets
 *   op % 5 == 3  tagged segment: stag choice(1), TO offset(2), L, len(1)
 *   op % 5 == 4  post a receive: qn(1), offset(2), len(1)
 * An op octet of 0xF0 or more is one of the send side and teardown ops instead (op & 7):
 *   0  post an untagged send: qn(1) (64 and 65 out of range), flags(1), offset(2), len(1)
 *   1  post a tagged send: flags(1), offset(2), len(1), TO(2)
 *        flags: 1 signaled, 2 a second SGE, 4 a foreign lkey, 8 RsvdULP given, 16 TO near 2^64
 *   2  produce segments as the LLP does: max_seg/4(1), count(1) (up to 8 held by the "LLP")
 *   3  the LLP gives back its oldest k(1) segments (tx_sent, in production order)
 *   4  ULP graceful teardown (disconnect)   5  the LLP stream closed: graceful(1) (and the
 *                                              segments it held dropped with it)
 *   6  ULP abortive teardown (set_error)    7  what(1): an LLP (CRC) error on receive, the MR
 *                                              deregistered and registered again, start again
 * Everything goes through the engine calls the LLPs use (core_engine.h).
 * Properties: never writes outside the MR (guard zones keep their pattern); after a receive
 * error nothing more is placed (RFC 5041 §7.1); every call returns 0 or a negative IWARP_ERR_*;
 * every produced segment's header decodes with its L flag and model, fits max_seg and sends
 * from the MR only; no send is completed (success or flush) while the LLP still holds one of
 * its segments (the LLP reads registered memory until tx_sent).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/core_ddp.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mem/mem_region.h"
#include "util/bytes.h"
#include "wire/wire_ddp.h"

#define GUARD 256u
#define MRLEN 2048u
#define NQ    3u
#define RQ    4u
#define PD    5u
#define IOVA  0x10000u /* the MR's IOVA: what SGEs and TOs name */

static uint8_t arena[GUARD + MRLEN + GUARD];
static struct iwarp_mem_table T;
static struct iwarp_mem_entry E[8];
static struct iwarp_wc sring[64], rring[64];
static struct iwarp_core_cq scq, rcq;
static struct iwarp_core_ddp_sqe sq[4];
static struct iwarp_core_ddp_uq uq[NQ];
static struct iwarp_core_rqe rqe[NQ * RQ];
static uint64_t lens[NQ * RQ];
static struct iwarp_core_ddp D;
static uint32_t mr, seed;
static uint8_t snapshot[MRLEN];

/* Segments produced and not yet given back (the LLP's send buffer), with their WR's wr_id. */
#define HELD 8u
static struct iwarp_core_tx_seg held[HELD];
static uint64_t held_wr[HELD];
static uint32_t nheld;
static uint64_t next_wr;

static uint32_t rng(void *ctx)
{
    return fuzz_rng_next(ctx);
}

static void setup(void)
{
    memset(arena, 0xEE, sizeof arena);
    seed = 0x9E3779B9u;
    FUZZ_CHECK(iwarp_mem_table_init(&T, E, 8, rng, &seed) == 0);
    struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)(arena + GUARD),
                                .iova = IOVA,
                                .length = MRLEN,
                                .access =
                                    IWARP_MEM_ACCESS_LOCAL_WRITE | IWARP_MEM_ACCESS_REMOTE_WRITE};
    FUZZ_CHECK(iwarp_mem_reg_mr(&T, PD, &r, &mr) == 0);
    FUZZ_CHECK(iwarp_core_cq_init(&scq, sring, 64, NULL, NULL) == 0);
    FUZZ_CHECK(iwarp_core_cq_init(&rcq, rring, 64, NULL, NULL) == 0);
    struct iwarp_core_ddp_cfg cfg = {.qp_num = 7,
                                     .pd = PD,
                                     .mem = &T,
                                     .send_cq = &scq,
                                     .recv_cq = &rcq,
                                     .num_queues = NQ,
                                     .rq_cap = RQ,
                                     .sq_cap = 4,
                                     .max_send_sge = 2,
                                     .max_recv_sge = 2};
    struct iwarp_core_ddp_mem m = {.sq = sq, .uq = uq, .rqe = rqe, .lens = lens};
    FUZZ_CHECK(iwarp_core_ddp_init(&D, &cfg, &m) == 0);
    FUZZ_CHECK(iwarp_core_eng_start(&D.eng, 0, 0) == 0);
    nheld = 0;
    next_wr = 1u << 20; /* receives use wr_id below 2^16 */
}

static bool guards_intact(void)
{
    for (size_t i = 0; i < GUARD; i++)
        if (arena[i] != 0xEE || arena[GUARD + MRLEN + i] != 0xEE)
            return false;
    return true;
}

/* The two-phase path: header, then the payload read into the destination iovecs. */
static int two_phase(const uint8_t *seg, size_t len)
{
    uint32_t h = iwarp_core_ddp_rx_hdr_len(seg, len, (uint32_t)len);
    if (h > len)
        h = (uint32_t)len;
    struct iovec dst[IWARP_CORE_RX_IOV_MAX];
    uint32_t n = 0;
    int rc = iwarp_core_eng_rx_hdr(&D.eng, seg, h, len, dst, IWARP_CORE_RX_IOV_MAX, &n);
    if (rc < 0)
        return rc;
    size_t off = h, total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += dst[i].iov_len;
    FUZZ_CHECK(total <= len - h); /* never more room than payload */
    for (uint32_t i = 0; i < n && off < len; i++) {
        size_t k = dst[i].iov_len < len - off ? dst[i].iov_len : len - off;
        if (!iwarp_core_eng_rx_dst_valid(&D.eng))
            break;
        memcpy(dst[i].iov_base, seg + off, k);
        off += k;
    }
    return iwarp_core_eng_rx_payload_done(&D.eng);
}

static bool in_mr(const struct iovec *v)
{
    uintptr_t b = (uintptr_t)v->iov_base, lo = (uintptr_t)(arena + GUARD);
    return b >= lo && v->iov_len <= MRLEN && b - lo <= MRLEN - v->iov_len;
}

/* Two octets of the input, big-endian (the first taken first: one order for every compiler). */
static uint16_t take16(const uint8_t **p, size_t *n)
{
    uint16_t hi = fuzz_take(p, n);
    return (uint16_t)(hi << 8 | fuzz_take(p, n));
}

/* Post a send (ops 0xF0, 0xF1). */
static int post_send(bool tagged, const uint8_t **p, size_t *n)
{
    uint8_t qn = tagged ? 0 : (uint8_t)(fuzz_take(p, n) % 66), fl = fuzz_take(p, n);
    uint16_t off = take16(p, n);
    uint32_t len = fuzz_take(p, n) * 8u;
    uint16_t to = tagged ? take16(p, n) : 0;
    uint32_t key = (fl & 4) ? mr ^ 0x100u : mr;
    struct iwarp_sge sg[2] = {
        {IOVA + off % MRLEN, len, key},
        {IOVA + (off / 2) % MRLEN, len / 2, mr},
    };
    static const uint8_t rsv[IWARP_CORE_DDP_RSVDULP_LEN] = {1, 2, 3, 4, 5};
    struct iwarp_core_ddp_send s = {.wr_id = next_wr++,
                                    .sg_list = sg,
                                    .num_sge = (fl & 2) ? 2 : 1,
                                    .signaled = fl & 1,
                                    .tagged = tagged,
                                    .qn = qn,
                                    .stag = mr ^ (uint32_t)(fl >> 5),
                                    .to = (fl & 16) ? UINT64_MAX - to : IOVA + to,
                                    .rsvdulp = (fl & 8) ? rsv : NULL};
    return iwarp_core_ddp_post_send(&D, &s);
}

/* Produce segments as an LLP would (op 0xF2) and check each. */
static void produce(const uint8_t **p, size_t *n)
{
    uint32_t max_seg = fuzz_take(p, n) * 4u, count = (fuzz_take(p, n) & 7u) + 1u;
    for (uint32_t i = 0; i < count && nheld < HELD; i++) {
        struct iwarp_core_tx_seg *g = &held[nheld];
        if (iwarp_core_eng_tx_next(&D.eng, max_seg, g) != 1)
            break;
        struct iwarp_ddp_hdr h;
        FUZZ_CHECK(iwarp_ddp_hdr_decode(g->hdr, g->hdr_len, &h) == (iwarp_ssize)g->hdr_len);
        FUZZ_CHECK(h.last == g->last && h.dv == 1);
        const struct iwarp_core_ddp_sqe *e = &D.sq[g->index];
        FUZZ_CHECK(h.tagged == e->tagged);
        if (h.tagged)
            FUZZ_CHECK(h.stag == e->stag);
        else
            FUZZ_CHECK(h.qn == e->qn);
        FUZZ_CHECK(g->niov <= IWARP_CORE_TX_IOV_MAX);
        uint32_t pl = 0;
        for (uint32_t k = 0; k < g->niov; k++) {
            FUZZ_CHECK(in_mr(&g->iov[k]));
            pl += (uint32_t)g->iov[k].iov_len;
        }
        FUZZ_CHECK(pl == g->payload_len && g->hdr_len + pl <= max_seg);
        held_wr[nheld++] = e->wr_id;
    }
}

/* The LLP gives back its k oldest segments (op 0xF3; all of them at the end). */
static void give_back(uint32_t k)
{
    uint32_t i = 0;
    for (; i < k && i < nheld; i++)
        iwarp_core_eng_tx_sent(&D.eng, &held[i]);
    memmove(held, held + i, (nheld - i) * sizeof held[0]);
    memmove(held_wr, held_wr + i, (nheld - i) * sizeof held_wr[0]);
    nheld -= i;
}

/* Send completions: none while the LLP still holds a segment of its WR. */
static void poll_send_cq(void)
{
    struct iwarp_wc wc[8];
    uint32_t got;
    while ((got = iwarp_core_cq_poll(&scq, wc, 8)) > 0)
        for (uint32_t i = 0; i < got; i++)
            for (uint32_t k = 0; k < nheld; k++)
                FUZZ_CHECK(wc[i].wr_id != held_wr[k]);
}

/* The send side and teardown ops (op octets 0xF0..0xFF). */
static int tx_op(uint8_t op, const uint8_t **p, size_t *n)
{
    switch (op & 7u) {
    case 0:
    case 1:
        return post_send(op & 1u, p, n);
    case 2:
        produce(p, n);
        return 0;
    case 3:
        give_back(fuzz_take(p, n) % (HELD + 1u));
        return 0;
    case 4:
        iwarp_core_eng_disconnect(&D.eng);
        return 0;
    case 5:
        /* core_stream.h: the produced segments are dropped with the transport. */
        iwarp_core_eng_llp_closed(&D.eng, fuzz_take(p, n) & 1u);
        nheld = 0;
        return 0;
    case 6:
        iwarp_core_eng_set_error(&D.eng);
        return 0;
    default:
        break;
    }
    uint8_t what = fuzz_take(p, n) % 3u;
    if (what == 0) {
        /* RFC 5044 §8: a CRC error the MPA layer found */
        struct iwarp_term_cause c = {IWARP_TERM_LAYER_LLP, IWARP_TERM_LLP_ETYPE_MPA,
                                     IWARP_TERM_MPA_CRC};
        uint8_t hdr[IWARP_DDP_UNTAGGED_HDR_LEN] = {0x41};
        iwarp_core_eng_rx_llp_error(&D.eng, c, hdr, sizeof hdr);
        return 0;
    }
    if (what == 1) {
        struct iwarp_mem_range r = {.addr = (uint64_t)(uintptr_t)(arena + GUARD),
                                    .iova = IOVA,
                                    .length = MRLEN,
                                    .access = IWARP_MEM_ACCESS_LOCAL_WRITE |
                                              IWARP_MEM_ACCESS_REMOTE_WRITE};
        int rc = iwarp_mem_dereg_mr(&T, mr);
        if (rc != 0)
            return rc;
        return iwarp_mem_reg_mr(&T, PD, &r, &mr);
    }
    return iwarp_core_eng_start(&D.eng, 0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    const uint8_t *p = data;
    size_t n = size;
    uint8_t seg[300];
    uint32_t msn[NQ] = {1, 1, 1};
    while (n > 0) {
        uint8_t raw = fuzz_take(&p, &n), op = raw % 5;
        /* A graceful teardown (CLOSING) still receives: the stream is open both ways. */
        bool stopped_before = D.rx_stopped || !iwarp_core_stream_open(&D.stream);
        if (stopped_before)
            memcpy(snapshot, arena + GUARD, MRLEN);
        int rc = 0;
        if (raw >= 0xF0) {
            rc = tx_op(raw, &p, &n);
        } else if (op <= 1) {
            size_t len = fuzz_take(&p, &n);
            if (len > n)
                len = n;
            memcpy(seg, p, len);
            p += len;
            n -= len;
            rc = op == 0 ? iwarp_core_eng_rx_segment(&D.eng, seg, len) : two_phase(seg, len);
        } else if (op == 2) {
            uint8_t qn = fuzz_take(&p, &n) % (NQ + 1), fl = fuzz_take(&p, &n);
            uint8_t len = fuzz_take(&p, &n) % 200;
            bool last = fl & 1;
            uint32_t m = msn[qn % NQ] + ((fl >> 1) & 3) - 1;
            /* RFC 5041 §4.3: untagged header, T=0, DV 1, RsvdULP, QN, MSN, MO */
            seg[0] = (uint8_t)(0x01 | (last ? 0x40 : 0));
            memset(seg + 1, fl, 5);
            iwarp_store_be32(seg + 6, qn);
            iwarp_store_be32(seg + 10, m);
            iwarp_store_be32(seg + 14, (uint32_t)((fl >> 3) & 3) * 8u);
            memset(seg + 18, 0x5A, len);
            rc = two_phase(seg, 18u + len);
            if (rc == 0 && last)
                msn[qn % NQ]++;
        } else if (op == 3) {
            uint8_t choice = fuzz_take(&p, &n);
            uint16_t to = (uint16_t)(fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n));
            uint8_t len = fuzz_take(&p, &n) % 200;
            /* RFC 5041 §4.2: tagged header, T=1, L, DV 1, RsvdULP, STag, TO */
            seg[0] = (uint8_t)(0x81 | ((choice & 1) ? 0x40 : 0));
            seg[1] = choice;
            iwarp_store_be32(seg + 2, (choice & 2) ? mr : mr ^ 0x100u);
            iwarp_store_be64(seg + 6, IOVA + to % (MRLEN + 64));
            memset(seg + 14, 0xA7, len);
            rc = (choice & 4) ? iwarp_core_eng_rx_segment(&D.eng, seg, 14u + len)
                              : two_phase(seg, 14u + len);
        } else {
            uint8_t qn = fuzz_take(&p, &n) % NQ;
            uint16_t off = (uint16_t)(fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n));
            uint8_t len = fuzz_take(&p, &n);
            struct iwarp_sge s = {IOVA + off % MRLEN, len, mr}; /* SGEs name the IOVA */
            struct iwarp_recv_wr w = {.wr_id = off, .sg_list = &s, .num_sge = 1};
            rc = iwarp_core_ddp_post_recv(&D, qn, &w);
        }
        FUZZ_CHECK(rc <= 0);
        FUZZ_CHECK(guards_intact());
        /* RFC 5041 §7.1: nothing is placed once a receive error stopped the stream. */
        if (stopped_before)
            FUZZ_CHECK(memcmp(snapshot, arena + GUARD, MRLEN) == 0);
        struct iwarp_wc wc[8];
        while (iwarp_core_cq_poll(&rcq, wc, 8) > 0)
            ;
        poll_send_cq();
        (void)iwarp_core_eng_tx_pending(&D.eng);
        (void)iwarp_core_eng_tx_close(&D.eng);
        (void)iwarp_core_eng_verbs_state(&D.eng);
    }
    /* The LLP gives every segment back (RFC 5041 §6.2.2: then everything is flushed). */
    give_back(HELD);
    poll_send_cq();
    iwarp_core_eng_fini(&D.eng);
    return 0;
}
