/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: trace/trace_mpa_stream (what `iwarp dump` runs on a captured connection's
 * octets): startup frames, FPDUs with and without CRC and markers, DDP/RDMAP segments and the
 * stateful rules, both directions interleaved at input-chosen points.
 * Input: chunks of one header octet (bit 0: the sending side, bits 1..7: length - 1) followed by
 * that many octets of the side's stream. The first octet also chooses require_mpa (bit 0) and
 * which sides sent a TCP reset before the capture ended (bits 1 and 2).
 * Properties: no crash or sanitizer report; PDU indexes grow by one; an FPDU's ULPDU is at most
 * 64768 octets; an FPDU in doubt is not decoded; a cut FPDU comes from a side the other reset; a
 * decoded segment lies inside its ULPDU; every finding has a known category.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "trace/trace_mpa_stream.h"

struct state {
    uint64_t last_index;
    bool reset[2];
};

static void on_pdu(void *ctx, const struct iwarp_mpa_stream_pdu *p)
{
    struct state *st = ctx;
    FUZZ_CHECK(p->index == st->last_index + 1u);
    st->last_index = p->index;
    FUZZ_CHECK(p->side <= 1u);
    if (p->kind == IWARP_MS_PDU_CUT)
        FUZZ_CHECK(st->reset[p->side ^ 1u] && p->cut_octets > 0);
    if (p->kind != IWARP_MS_PDU_FPDU)
        return;
    FUZZ_CHECK(!p->in_doubt || (!p->has_ddp && !p->seg));
    FUZZ_CHECK(p->ulpdu_len >= 1u && p->ulpdu_len <= IWARP_MPA_MULPDU_MAX);
    FUZZ_CHECK(p->pad_len <= 3u);
    if (p->seg) {
        FUZZ_CHECK(p->seg->hdr_len + p->seg->body_len + p->seg->payload_len == p->ulpdu_len);
        FUZZ_CHECK(p->seg->payload_len == 0 ||
                   (p->seg->payload >= p->ulpdu &&
                    p->seg->payload + p->seg->payload_len <= p->ulpdu + p->ulpdu_len));
    }
}

static void on_finding(void *ctx, const struct iwarp_mpa_stream_finding *f)
{
    (void)ctx;
    FUZZ_CHECK(f->cls < IWARP_MS_CLASS_COUNT);
    FUZZ_CHECK(f->msg && strlen(f->msg) < 256);
    FUZZ_CHECK(f->index == 0 || f->index <= ((const struct state *)ctx)->last_index);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct iwarp_mpa_stream s;
    static const struct iwarp_mpa_stream_ops ops = {.pdu = on_pdu, .finding = on_finding};
    struct state st = {0};
    struct iwarp_mpa_stream_cfg cfg = {.require_mpa = size > 0 && (data[0] & 1u)};
    st.reset[0] = size > 0 && (data[0] & 2u);
    st.reset[1] = size > 0 && (data[0] & 4u);
    iwarp_mpa_stream_init(&s, &cfg, &ops, &st);
    for (unsigned i = 0; i < 2; i++)
        if (st.reset[i])
            iwarp_mpa_stream_reset(&s, i);
    uint64_t tag = 0;
    while (size > 0) {
        unsigned side = data[0] & 1u;
        size_t n = (size_t)(data[0] >> 1) + 1u;
        data++;
        size--;
        n = n < size ? n : size;
        iwarp_mpa_stream_feed(&s, side, data, n, ++tag);
        data += n;
        size -= n;
    }
    iwarp_mpa_stream_finish(&s);
    return 0;
}
