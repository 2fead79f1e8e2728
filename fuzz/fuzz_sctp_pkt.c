/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: trace/trace_sctp_pkt (the SCTP packet and chunk codec `iwarp dump` runs on
 * captured bytes) and, on the same packets, trace/trace_sctp_assoc (DATA deduplication and
 * reassembly, the DDP-SSN reorder window, session control, the DDP/RDMAP judge).
 * Input: records of one header octet (bit 0: the sending side; bits 1..7: length / 4 of the
 * packet, 0 = the rest of the input) and that many octets: one SCTP packet, common header first.
 * Properties: no crash or sanitizer report (leaks included); every chunk lies inside its packet,
 * in order, 4-aligned, and the walk ends; decoded DATA and INIT fields lie inside their chunk;
 * message indexes grow by one; every finding has a known category and a bounded text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "iwarp/errors.h"
#include "trace/trace_sctp_assoc.h"
#include "trace/trace_sctp_pkt.h"

struct state {
    uint64_t last_index;
};

static int inside(const uint8_t *base, size_t n, const uint8_t *p, size_t len)
{
    return p >= base && p <= base + n && len <= (size_t)(base + n - p);
}

static void on_pdu(void *ctx, const struct iwarp_sa_pdu *p)
{
    struct state *st = ctx;
    FUZZ_CHECK(p->side <= 1u);
    if (p->kind == IWARP_SA_PDU_INIT) {
        FUZZ_CHECK(p->index == 0);
        return;
    }
    FUZZ_CHECK(p->index == st->last_index + 1u);
    st->last_index = p->index;
    FUZZ_CHECK(p->fragments >= 1u && p->len >= 1u);
    if (p->kind == IWARP_SA_PDU_SEG && p->seg) {
        FUZZ_CHECK(p->len >= 3u && p->seg->len == p->len - 2u);
        if (p->seg->seg_rc == 0)
            FUZZ_CHECK(p->seg->seg.hdr_len + p->seg->seg.body_len + p->seg->seg.payload_len ==
                       p->seg->len);
    }
    if (p->kind == IWARP_SA_PDU_CTL && p->ctl)
        FUZZ_CHECK(p->ctl->pd_len <= IWARP_SCTP_PD_MAX);
}

static void on_finding(void *ctx, const struct iwarp_sa_finding *f)
{
    const struct state *st = ctx;
    FUZZ_CHECK(f->cls < IWARP_MS_CLASS_COUNT);
    FUZZ_CHECK(f->side <= 1u);
    FUZZ_CHECK(f->msg && strlen(f->msg) < 256);
    FUZZ_CHECK(f->index <= st->last_index);
}

/* The codec alone on one packet. */
static void codec(const uint8_t *p, size_t n)
{
    struct iwarp_sctp_common h;
    int rc = iwarp_sctp_common_decode(p, n, &h);
    FUZZ_CHECK(rc == 0 || rc == IWARP_ERR_SHORT);
    (void)iwarp_sctp_crc_ok(p, n);
    if (rc < 0)
        return;
    const uint8_t *area = p + IWARP_SCTP_COMMON_HDR_LEN;
    size_t len = n - IWARP_SCTP_COMMON_HDR_LEN;
    struct iwarp_sctp_chunk_iter it;
    struct iwarp_sctp_chunk c;
    iwarp_sctp_chunks_init(&it, area, len);
    size_t prev_end = 0;
    unsigned count = 0;
    while ((rc = iwarp_sctp_chunk_next(&it, &c)) > 0) {
        FUZZ_CHECK(++count <= len / 4u);
        FUZZ_CHECK(c.offset == prev_end && c.offset % 4u == 0);
        FUZZ_CHECK(c.length >= 4u && c.value == area + c.offset + 4u);
        FUZZ_CHECK(inside(area, len, c.value, c.value_len));
        prev_end = c.offset + ((c.length + 3u) & ~3u);
        (void)iwarp_sctp_chunk_name(c.type);
        struct iwarp_sctp_data d;
        if (c.type == IWARP_SCTP_CHUNK_DATA && iwarp_sctp_data_decode(&c, &d) == 0)
            FUZZ_CHECK(d.data_len >= 1u && inside(c.value, c.value_len, d.data, d.data_len));
        struct iwarp_sctp_init in;
        if (c.type == IWARP_SCTP_CHUNK_INIT || c.type == IWARP_SCTP_CHUNK_INIT_ACK) {
            int r = iwarp_sctp_init_decode(&c, &in);
            FUZZ_CHECK(r == 0 || r == IWARP_ERR_SHORT || r == IWARP_ERR_PKT_MALFORMED);
        }
    }
    FUZZ_CHECK(rc == 0 || (rc == IWARP_ERR_PKT_MALFORMED && it.bad));
    FUZZ_CHECK(iwarp_sctp_chunk_next(&it, &c) == 0); /* the walk is over */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct iwarp_sa_ops ops = {.pdu = on_pdu, .finding = on_finding};
    struct state st = {0};
    struct iwarp_sctp_assoc *a = iwarp_sctp_assoc_new(&ops, &st);
    if (!a)
        return 0;
    uint64_t tag = 0;
    while (size > 0) {
        unsigned side = data[0] & 1u;
        size_t n = (size_t)(data[0] >> 1) * 4u;
        data++;
        size--;
        if (n == 0 || n > size)
            n = size;
        /* a copy of exactly n octets, so ASan catches any read past the packet */
        uint8_t *pkt = malloc(n ? n : 1);
        if (!pkt)
            break;
        memcpy(pkt, data, n);
        codec(pkt, n);
        if (n >= IWARP_SCTP_COMMON_HDR_LEN)
            iwarp_sctp_assoc_packet(a, side, pkt + IWARP_SCTP_COMMON_HDR_LEN,
                                    n - IWARP_SCTP_COMMON_HDR_LEN, ++tag);
        free(pkt);
        data += n;
        size -= n;
    }
    iwarp_sctp_assoc_finish(a);
    iwarp_sctp_assoc_free(a);
    return 0;
}
