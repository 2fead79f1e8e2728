/* SPDX-License-Identifier: BSD-2-Clause */
/* RDMAP opcode table and fixed RDMAP header codecs (RFC 5040 §4, RFC 7306 §4-§6). */
#include "wire/wire_rdmap.h"

#include <string.h>

#include "iwarp/errors.h"
#include "util/bytes.h"

/*
 * RFC 5040 Figure 4 (T flag, QN) and Figure 5 (RDMA header, ULP payload); RFC 7306 Figures 2
 * and 3. The messages with an RDMAP header carry no payload, so header and message coincide and
 * fit in one segment (the largest, 18 + 52 octets, is below the smallest MULPDU of RFC 5044 §3).
 */
static const struct iwarp_rdmap_opinfo opinfo[IWARP_RDMAP_OP_COUNT] = {
    [IWARP_RDMAP_OP_WRITE] =
        {
            .name = "RDMA Write",
            .rfc = "RFC 5040 §4.3",
            .tagged = true,
            .payload = true,
        },
    [IWARP_RDMAP_OP_READ_REQ] =
        {
            .name = "RDMA Read Request",
            .rfc = "RFC 5040 §4.4",
            .qn = IWARP_QN_READ_REQ,
            .body_len = IWARP_RDMAP_READ_REQ_LEN,
            .single_segment = true,
        },
    [IWARP_RDMAP_OP_READ_RESP] =
        {
            .name = "RDMA Read Response",
            .rfc = "RFC 5040 §4.5",
            .tagged = true,
            .payload = true,
        },
    [IWARP_RDMAP_OP_SEND] =
        {
            .name = "Send",
            .rfc = "RFC 5040 §4.6",
            .qn = IWARP_QN_SEND,
            .payload = true,
        },
    [IWARP_RDMAP_OP_SEND_INV] =
        {
            .name = "Send with Invalidate",
            .rfc = "RFC 5040 §4.7",
            .qn = IWARP_QN_SEND,
            .payload = true,
            .inv_stag = true,
        },
    [IWARP_RDMAP_OP_SEND_SE] =
        {
            .name = "Send with Solicited Event",
            .rfc = "RFC 5040 §4.6",
            .qn = IWARP_QN_SEND,
            .payload = true,
        },
    [IWARP_RDMAP_OP_SEND_SE_INV] =
        {
            .name = "Send with SE and Invalidate",
            .rfc = "RFC 5040 §4.7",
            .qn = IWARP_QN_SEND,
            .payload = true,
            .inv_stag = true,
        },
    [IWARP_RDMAP_OP_TERMINATE] =
        {
            .name = "Terminate",
            .rfc = "RFC 5040 §4.8",
            .qn = IWARP_QN_TERMINATE,
            .body_len = IWARP_RDMAP_TERM_HDR_LEN,
            .body_variable = true,
            .single_segment = true,
        },
    [IWARP_RDMAP_OP_IMM_DATA] =
        {
            .name = "Immediate Data",
            .rfc = "RFC 7306 §6.2",
            .qn = IWARP_QN_SEND,
            .body_len = IWARP_RDMAP_IMM_DATA_LEN,
            .single_segment = true,
        },
    [IWARP_RDMAP_OP_IMM_DATA_SE] =
        {
            .name = "Immediate Data with SE",
            .rfc = "RFC 7306 §6.2",
            .qn = IWARP_QN_SEND,
            .body_len = IWARP_RDMAP_IMM_DATA_LEN,
            .single_segment = true,
        },
    [IWARP_RDMAP_OP_ATOMIC_REQ] =
        {
            .name = "Atomic Request",
            .rfc = "RFC 7306 §5.2.1",
            .qn = IWARP_QN_READ_REQ,
            .body_len = IWARP_RDMAP_ATOMIC_REQ_LEN,
            .single_segment = true,
        },
    [IWARP_RDMAP_OP_ATOMIC_RESP] =
        {
            .name = "Atomic Response",
            .rfc = "RFC 7306 §5.2.2",
            .qn = IWARP_QN_ATOMIC_RSP,
            .body_len = IWARP_RDMAP_ATOMIC_RESP_LEN,
            .single_segment = true,
        },
};

const struct iwarp_rdmap_opinfo *iwarp_rdmap_opinfo(unsigned opcode)
{
    return opcode < IWARP_RDMAP_OP_COUNT ? &opinfo[opcode] : NULL;
}

iwarp_ssize iwarp_rdmap_read_req_decode(const uint8_t *p, size_t len,
                                        struct iwarp_rdmap_read_req *out)
{
    if (len < IWARP_RDMAP_READ_REQ_LEN)
        return IWARP_ERR_SHORT;
    /* RFC 5040 §4.4 Figure 6. */
    out->sink_stag = iwarp_load_be32(p);
    out->sink_to = iwarp_load_be64(p + 4);
    out->size = iwarp_load_be32(p + 12);
    out->src_stag = iwarp_load_be32(p + 16);
    out->src_to = iwarp_load_be64(p + 20);
    return IWARP_RDMAP_READ_REQ_LEN;
}

iwarp_ssize iwarp_rdmap_read_req_encode(uint8_t *buf, size_t cap,
                                        const struct iwarp_rdmap_read_req *in)
{
    if (cap < IWARP_RDMAP_READ_REQ_LEN)
        return IWARP_ERR_NOSPC;
    iwarp_store_be32(buf, in->sink_stag);
    iwarp_store_be64(buf + 4, in->sink_to);
    iwarp_store_be32(buf + 12, in->size);
    iwarp_store_be32(buf + 16, in->src_stag);
    iwarp_store_be64(buf + 20, in->src_to);
    return IWARP_RDMAP_READ_REQ_LEN;
}

iwarp_ssize iwarp_rdmap_atomic_req_decode(const uint8_t *p, size_t len,
                                          struct iwarp_rdmap_atomic_req *out)
{
    if (len < IWARP_RDMAP_ATOMIC_REQ_LEN)
        return IWARP_ERR_SHORT;
    /* RFC 7306 §5.2.1 Figure 4: Reserved(28) AOpCode(4), then six fields. */
    uint32_t w = iwarp_load_be32(p);
    out->rsvd = w >> 4;
    out->aopcode = (uint8_t)(w & 0x0Fu);
    out->req_id = iwarp_load_be32(p + 4);
    out->stag = iwarp_load_be32(p + 8);
    out->to = iwarp_load_be64(p + 12);
    out->add_swap = iwarp_load_be64(p + 20);
    out->add_swap_mask = iwarp_load_be64(p + 28);
    out->compare = iwarp_load_be64(p + 36);
    out->compare_mask = iwarp_load_be64(p + 44);
    return IWARP_RDMAP_ATOMIC_REQ_LEN;
}

iwarp_ssize iwarp_rdmap_atomic_req_encode(uint8_t *buf, size_t cap,
                                          const struct iwarp_rdmap_atomic_req *in)
{
    if (in->aopcode > 0x0Fu)
        return IWARP_ERR_INVAL;
    if (cap < IWARP_RDMAP_ATOMIC_REQ_LEN)
        return IWARP_ERR_NOSPC;
    /* RFC 7306 §5.2.1: Reserved "is set to zero on transmit". */
    iwarp_store_be32(buf, in->aopcode);
    iwarp_store_be32(buf + 4, in->req_id);
    iwarp_store_be32(buf + 8, in->stag);
    iwarp_store_be64(buf + 12, in->to);
    iwarp_store_be64(buf + 20, in->add_swap);
    iwarp_store_be64(buf + 28, in->add_swap_mask);
    iwarp_store_be64(buf + 36, in->compare);
    iwarp_store_be64(buf + 44, in->compare_mask);
    return IWARP_RDMAP_ATOMIC_REQ_LEN;
}

iwarp_ssize iwarp_rdmap_atomic_resp_decode(const uint8_t *p, size_t len,
                                           struct iwarp_rdmap_atomic_resp *out)
{
    if (len < IWARP_RDMAP_ATOMIC_RESP_LEN)
        return IWARP_ERR_SHORT;
    /* RFC 7306 §5.2.2 Figure 6 (12 octets; the "32 bytes" of §4 is an erratum). */
    out->req_id = iwarp_load_be32(p);
    out->orig_value = iwarp_load_be64(p + 4);
    return IWARP_RDMAP_ATOMIC_RESP_LEN;
}

iwarp_ssize iwarp_rdmap_atomic_resp_encode(uint8_t *buf, size_t cap,
                                           const struct iwarp_rdmap_atomic_resp *in)
{
    if (cap < IWARP_RDMAP_ATOMIC_RESP_LEN)
        return IWARP_ERR_NOSPC;
    iwarp_store_be32(buf, in->req_id);
    iwarp_store_be64(buf + 4, in->orig_value);
    return IWARP_RDMAP_ATOMIC_RESP_LEN;
}

iwarp_ssize iwarp_rdmap_imm_decode(const uint8_t *p, size_t len, struct iwarp_rdmap_imm *out)
{
    if (len < IWARP_RDMAP_IMM_DATA_LEN)
        return IWARP_ERR_SHORT;
    memcpy(out->data, p, IWARP_RDMAP_IMM_DATA_LEN); /* RFC 7306 §6.2 Figure 7 */
    return IWARP_RDMAP_IMM_DATA_LEN;
}

iwarp_ssize iwarp_rdmap_imm_encode(uint8_t *buf, size_t cap, const struct iwarp_rdmap_imm *in)
{
    if (cap < IWARP_RDMAP_IMM_DATA_LEN)
        return IWARP_ERR_NOSPC;
    memcpy(buf, in->data, IWARP_RDMAP_IMM_DATA_LEN);
    return IWARP_RDMAP_IMM_DATA_LEN;
}
