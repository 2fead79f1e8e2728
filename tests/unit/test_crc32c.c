/* SPDX-License-Identifier: BSD-2-Clause */
/* CRC32C: the check value, the iSCSI and MPA vectors, chaining, and ISA-L vs portable. */
#include "harness.h"
#include "util/bytes.h"
#include "util/crc32c.h"

static uint32_t crc_hex(const char *hex)
{
    uint8_t buf[256];
    size_t n = harness_hex(hex, buf, sizeof buf);
    return iwarp_crc32c(buf, n);
}

TEST(check_value)
{
    ASSERT_EQ_U(iwarp_crc32c("123456789", 9), 0xE3069283u);
    ASSERT_EQ_U(iwarp_crc32c_final(iwarp_crc32c_update_portable(IWARP_CRC32C_INIT, "123456789", 9)),
                0xE3069283u);
}

TEST(empty_input)
{
    ASSERT_EQ_U(iwarp_crc32c(NULL, 0), 0x00000000u);
}

TEST(iscsi_32_zero_octets)
{
    uint8_t z[32] = {0};
    ASSERT_EQ_U(iwarp_crc32c(z, sizeof z), 0x8A9136AAu);
}

/* ../shared/docs/wire-reference.md §1.9 vectors (input = ULPDU_Length .. PAD). */
TEST(mpa_vectors)
{
    ASSERT_EQ_U(crc_hex("000e c140 00000001 0000000000000000"), 0x5F4CD3EBu);
    ASSERT_EQ_U(crc_hex("0016 4147 00000000 00000002 00000001 00000000 00000000"), 0x1D6FA2F9u);
    ASSERT_EQ_U(crc_hex("0012 4143 00000000 00000000 00000001 00000000"), 0xC4E87B58u);
}

/* RFC 5044 §4.4 Figure 5: a marker, then the FPDU; CRC 0x83992352 sent as 52 23 99 83. */
TEST(rfc5044_figure5)
{
    uint32_t crc = crc_hex("00000000 002a 4143 00000000 00000000 00000001 00000000"
                           "000000000000000000000000000000000000000000000000");
    ASSERT_EQ_U(crc, 0x83992352u);
    uint8_t wire[4];
    iwarp_store_le32(wire, crc);
    uint8_t expect[4] = {0x52, 0x23, 0x99, 0x83};
    ASSERT_MEM_EQ(wire, expect, 4);
}

/* RFC 5044 §4.4 Figure 6: the marker falls inside the FPDU (FPDUPTR 0x14). */
TEST(rfc5044_figure6)
{
    ASSERT_EQ_U(crc_hex("002a 4143 00000000 00000000 00000002 00000000 00000014"
                        "000000000000000000000000000000000000000000000000"),
                0x98589284u);
}

/* Chained use over every split point gives the one-shot value, for both implementations. */
TEST(chaining_every_split)
{
    uint8_t buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131u + 7u);
    uint32_t whole = iwarp_crc32c(buf, sizeof buf);
    for (size_t cut = 0; cut <= sizeof buf; cut++) {
        uint32_t s = iwarp_crc32c_update(IWARP_CRC32C_INIT, buf, cut);
        s = iwarp_crc32c_update(s, buf + cut, sizeof buf - cut);
        ASSERT_EQ_U(iwarp_crc32c_final(s), whole);
        uint32_t p = iwarp_crc32c_update_portable(IWARP_CRC32C_INIT, buf, cut);
        p = iwarp_crc32c_update_portable(p, buf + cut, sizeof buf - cut);
        ASSERT_EQ_U(iwarp_crc32c_final(p), whole);
    }
}

/* The accelerated and portable implementations agree on odd lengths and offsets. */
TEST(implementations_agree)
{
    static uint8_t buf[(1 << 20) + 13];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 8; off++) {
        size_t len = sizeof buf - off - (off * 3);
        uint32_t a = iwarp_crc32c_update(IWARP_CRC32C_INIT, buf + off, len);
        uint32_t b = iwarp_crc32c_update_portable(IWARP_CRC32C_INIT, buf + off, len);
        ASSERT_EQ_U(a, b);
    }
    printf("  crc32c implementation: %s\n", iwarp_crc32c_impl());
}
