/* SPDX-License-Identifier: BSD-2-Clause */
/* RDMAP control octet, opcode table, and the fixed RDMAP header codecs (RFC 5040, RFC 7306). */
#include "harness.h"
#include "iwarp/errors.h"
#include "wire/wire_rdmap.h"

/* wire-reference §0.1: Send+Last = 41 43, Write+Last = C1 40, Read Request = 41 41,
 * Terminate = 41 47: the second octet is the RDMAP Control octet. */
TEST(control_octet)
{
    ASSERT_EQ_U(iwarp_rdmap_ctrl(IWARP_RDMAP_OP_SEND), 0x43);
    ASSERT_EQ_U(iwarp_rdmap_ctrl(IWARP_RDMAP_OP_WRITE), 0x40);
    ASSERT_EQ_U(iwarp_rdmap_ctrl(IWARP_RDMAP_OP_READ_REQ), 0x41);
    ASSERT_EQ_U(iwarp_rdmap_ctrl(IWARP_RDMAP_OP_TERMINATE), 0x47);
    ASSERT_EQ_U(iwarp_rdmap_ctrl(IWARP_RDMAP_OP_ATOMIC_RESP), 0x4B);
    for (unsigned op = 0; op < 16; op++) {
        uint8_t c = iwarp_rdmap_ctrl(op);
        ASSERT_EQ(iwarp_rdmap_ctrl_rv(c), 1);
        ASSERT_EQ(iwarp_rdmap_ctrl_rsv(c), 0);
        ASSERT_EQ(iwarp_rdmap_ctrl_opcode(c), op);
    }
    /* RV(2) Rsv(2) Opcode(4), RFC 5040 §4.1 Figure 3. */
    ASSERT_EQ(iwarp_rdmap_ctrl_rv(0xB7), 2);
    ASSERT_EQ(iwarp_rdmap_ctrl_rsv(0xB7), 3);
    ASSERT_EQ(iwarp_rdmap_ctrl_opcode(0xB7), 7);
    ASSERT_EQ(iwarp_rdmap_ctrl_rv(0x03), 0);
}

struct expect_op {
    unsigned opcode;
    bool tagged;
    unsigned qn, body_len;
    bool payload, single, inv, variable;
    const char *name;
};

/* RFC 5040 Figures 4 and 5; RFC 7306 Figures 2 and 3; wire-reference §1.2 table. */
TEST(opcode_table)
{
    static const struct expect_op ex[] = {
        {0x0, true, 0, 0, true, false, false, false, "RDMA Write"},
        {0x1, false, 1, 28, false, true, false, false, "RDMA Read Request"},
        {0x2, true, 0, 0, true, false, false, false, "RDMA Read Response"},
        {0x3, false, 0, 0, true, false, false, false, "Send"},
        {0x4, false, 0, 0, true, false, true, false, "Send with Invalidate"},
        {0x5, false, 0, 0, true, false, false, false, "Send with Solicited Event"},
        {0x6, false, 0, 0, true, false, true, false, "Send with SE and Invalidate"},
        {0x7, false, 2, 4, false, true, false, true, "Terminate"},
        {0x8, false, 0, 8, false, true, false, false, "Immediate Data"},
        {0x9, false, 0, 8, false, true, false, false, "Immediate Data with SE"},
        {0xA, false, 1, 52, false, true, false, false, "Atomic Request"},
        {0xB, false, 3, 12, false, true, false, false, "Atomic Response"},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        const struct iwarp_rdmap_opinfo *op = iwarp_rdmap_opinfo(ex[i].opcode);
        ASSERT_TRUE(op != NULL);
        ASSERT_STR_EQ(op->name, ex[i].name);
        ASSERT_TRUE(op->rfc != NULL);
        ASSERT_EQ(op->tagged, ex[i].tagged);
        ASSERT_EQ(op->qn, ex[i].qn);
        ASSERT_EQ(op->body_len, ex[i].body_len);
        ASSERT_EQ(op->payload, ex[i].payload);
        ASSERT_EQ(op->single_segment, ex[i].single);
        ASSERT_EQ(op->inv_stag, ex[i].inv);
        ASSERT_EQ(op->body_variable, ex[i].variable);
    }
    ASSERT_STR_EQ(iwarp_rdmap_opinfo(0x7)->rfc, "RFC 5040 §4.8");
    ASSERT_STR_EQ(iwarp_rdmap_opinfo(0xA)->rfc, "RFC 7306 §5.2.1");
    for (unsigned op = 0xC; op < 0x200; op++)
        ASSERT_TRUE(iwarp_rdmap_opinfo(op) == NULL);
}

/* RFC 5040 §4.4 Figure 6, fields with distinct octets. */
static const char *const read_req_hex =
    "11223344 0102030405060708 00001000 aabbccdd 1112131415161718";

TEST(read_req_decode_encode)
{
    uint8_t b[64], out[64];
    size_t n = harness_hex(read_req_hex, b, sizeof b);
    ASSERT_EQ(n, 28);
    struct iwarp_rdmap_read_req r;
    ASSERT_EQ(iwarp_rdmap_read_req_decode(b, n, &r), 28);
    ASSERT_EQ_U(r.sink_stag, 0x11223344u);
    ASSERT_EQ_U(r.sink_to, 0x0102030405060708ull);
    ASSERT_EQ_U(r.size, 0x1000u);
    ASSERT_EQ_U(r.src_stag, 0xAABBCCDDu);
    ASSERT_EQ_U(r.src_to, 0x1112131415161718ull);
    ASSERT_EQ(iwarp_rdmap_read_req_encode(out, sizeof out, &r), 28);
    ASSERT_MEM_EQ(out, b, 28);
    for (size_t len = 0; len < 28; len++) {
        ASSERT_EQ(iwarp_rdmap_read_req_decode(b, len, &r), IWARP_ERR_SHORT);
        ASSERT_EQ(iwarp_rdmap_read_req_encode(out, len, &r), IWARP_ERR_NOSPC);
    }
}

/* RFC 7306 §5.2.1 Figure 4: a CmpSwap (AOpCode 2) with distinct fields. */
static const char *const atomic_req_hex = "00000002 00000007 12345678 0000000000001000"
                                          "1111111111111111 ffffffff00000000"
                                          "2222222222222222 00000000ffffffff";

TEST(atomic_req_decode_encode)
{
    uint8_t b[64], out[64];
    size_t n = harness_hex(atomic_req_hex, b, sizeof b);
    ASSERT_EQ(n, 52);
    struct iwarp_rdmap_atomic_req a;
    ASSERT_EQ(iwarp_rdmap_atomic_req_decode(b, n, &a), 52);
    ASSERT_EQ_U(a.rsvd, 0);
    ASSERT_EQ(a.aopcode, IWARP_ATOMIC_CMP_SWAP);
    ASSERT_EQ_U(a.req_id, 7);
    ASSERT_EQ_U(a.stag, 0x12345678u);
    ASSERT_EQ_U(a.to, 0x1000u);
    ASSERT_EQ_U(a.add_swap, 0x1111111111111111ull);
    ASSERT_EQ_U(a.add_swap_mask, 0xFFFFFFFF00000000ull);
    ASSERT_EQ_U(a.compare, 0x2222222222222222ull);
    ASSERT_EQ_U(a.compare_mask, 0x00000000FFFFFFFFull);
    ASSERT_EQ(iwarp_rdmap_atomic_req_encode(out, sizeof out, &a), 52);
    ASSERT_MEM_EQ(out, b, 52);
    for (size_t len = 0; len < 52; len++) {
        ASSERT_EQ(iwarp_rdmap_atomic_req_decode(b, len, &a), IWARP_ERR_SHORT);
        ASSERT_EQ(iwarp_rdmap_atomic_req_encode(out, len, &a), IWARP_ERR_NOSPC);
    }
}

/* RFC 7306 §5.2.1: the 28 reserved bits are ignored on receive, zero on transmit. */
TEST(atomic_req_reserved)
{
    uint8_t b[64], out[64];
    harness_hex(atomic_req_hex, b, sizeof b);
    b[0] = 0xAB;
    b[1] = 0xCD;
    b[2] = 0xEF;
    b[3] = 0x10; /* reserved ...1, AOpCode 0 (FetchAdd) */
    struct iwarp_rdmap_atomic_req a;
    ASSERT_EQ(iwarp_rdmap_atomic_req_decode(b, 52, &a), 52);
    ASSERT_EQ_U(a.rsvd, 0xABCDEF1u);
    ASSERT_EQ(a.aopcode, IWARP_ATOMIC_FETCH_ADD);
    ASSERT_EQ(iwarp_rdmap_atomic_req_encode(out, sizeof out, &a), 52);
    uint8_t expect[4] = {0, 0, 0, 0};
    ASSERT_MEM_EQ(out, expect, 4);
    ASSERT_MEM_EQ(out + 4, b + 4, 48);
    a.aopcode = 16;
    ASSERT_EQ(iwarp_rdmap_atomic_req_encode(out, sizeof out, &a), IWARP_ERR_INVAL);
}

/* RFC 7306 §5.2.2 Figure 6: 12 octets (not the "32 bytes" of §4). */
TEST(atomic_resp_decode_encode)
{
    uint8_t b[32], out[32];
    size_t n = harness_hex("00000007 0123456789abcdef", b, sizeof b);
    ASSERT_EQ(n, 12);
    struct iwarp_rdmap_atomic_resp r;
    ASSERT_EQ(iwarp_rdmap_atomic_resp_decode(b, n, &r), 12);
    ASSERT_EQ_U(r.req_id, 7);
    ASSERT_EQ_U(r.orig_value, 0x0123456789ABCDEFull);
    ASSERT_EQ(iwarp_rdmap_atomic_resp_encode(out, sizeof out, &r), 12);
    ASSERT_MEM_EQ(out, b, 12);
    for (size_t len = 0; len < 12; len++) {
        ASSERT_EQ(iwarp_rdmap_atomic_resp_decode(b, len, &r), IWARP_ERR_SHORT);
        ASSERT_EQ(iwarp_rdmap_atomic_resp_encode(out, len, &r), IWARP_ERR_NOSPC);
    }
}

/* RFC 7306 §6.2 Figure 7: 8 opaque octets, kept in wire order. */
TEST(imm_decode_encode)
{
    uint8_t b[16], out[16];
    size_t n = harness_hex("0102030405060708", b, sizeof b);
    struct iwarp_rdmap_imm im;
    ASSERT_EQ(iwarp_rdmap_imm_decode(b, n, &im), 8);
    ASSERT_EQ(im.data[0], 0x01);
    ASSERT_EQ(im.data[7], 0x08);
    ASSERT_EQ(iwarp_rdmap_imm_encode(out, sizeof out, &im), 8);
    ASSERT_MEM_EQ(out, b, 8);
    for (size_t len = 0; len < 8; len++) {
        ASSERT_EQ(iwarp_rdmap_imm_decode(b, len, &im), IWARP_ERR_SHORT);
        ASSERT_EQ(iwarp_rdmap_imm_encode(out, len, &im), IWARP_ERR_NOSPC);
    }
}
