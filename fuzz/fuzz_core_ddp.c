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
 * Properties: never writes outside the MR (guard zones keep their pattern); after a receive
 * error nothing more is placed (RFC 5041 §7.1); every call returns 0 or a negative IWARP_ERR_*.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/core_ddp.h"
#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "mem/mem_region.h"
#include "util/bytes.h"

#define GUARD 256u
#define MRLEN 2048u
#define NQ    3u
#define RQ    4u
#define PD    5u

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
                                .iova = 0x10000,
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
    FUZZ_CHECK(iwarp_core_ddp_start(&D, 0, 0) == 0);
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
    int rc = iwarp_core_ddp_rx_hdr(&D, seg, h, len, dst, IWARP_CORE_RX_IOV_MAX, &n);
    if (rc < 0)
        return rc;
    size_t off = h, total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += dst[i].iov_len;
    FUZZ_CHECK(total <= len - h); /* never more room than payload */
    for (uint32_t i = 0; i < n && off < len; i++) {
        size_t k = dst[i].iov_len < len - off ? dst[i].iov_len : len - off;
        memcpy(dst[i].iov_base, seg + off, k);
        off += k;
    }
    return iwarp_core_ddp_rx_payload_done(&D);
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
        uint8_t op = fuzz_take(&p, &n) % 5;
        bool stopped_before = D.rx_stopped || D.stream.state != IWARP_CORE_STREAM_RUNNING;
        if (stopped_before)
            memcpy(snapshot, arena + GUARD, MRLEN);
        int rc = 0;
        if (op <= 1) {
            size_t len = fuzz_take(&p, &n);
            if (len > n)
                len = n;
            memcpy(seg, p, len);
            p += len;
            n -= len;
            rc = op == 0 ? iwarp_core_ddp_rx_segment(&D, seg, len) : two_phase(seg, len);
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
            iwarp_store_be64(seg + 6, 0x10000u + to % (MRLEN + 64));
            memset(seg + 14, 0xA7, len);
            rc = (choice & 4) ? iwarp_core_ddp_rx_segment(&D, seg, 14u + len)
                              : two_phase(seg, 14u + len);
        } else {
            uint8_t qn = fuzz_take(&p, &n) % NQ;
            uint16_t off = (uint16_t)(fuzz_take(&p, &n) << 8 | fuzz_take(&p, &n));
            uint8_t len = fuzz_take(&p, &n);
            struct iwarp_sge s = {(uint64_t)(uintptr_t)(arena + GUARD + off % MRLEN), len, mr};
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
    }
    return 0;
}
