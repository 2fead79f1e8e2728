/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A large FPDU that arrives in pieces is read in one piece once its rest has come (llp_tcp.c:
 * wait_for_fpdu sets SO_RCVLOWAT to what the FPDU still needs), counted in real system calls:
 * this test is linked with -Wl,--wrap=recvmsg,--wrap=recv. A raw TCP peer (raw_peer.h, CRC on)
 * writes one RDMA Write FPDU in four pieces to a libiwarp server in caller mode, which the test
 * drives between the pieces: the first piece is read, the two in the middle wake nothing, the last
 * one is read with everything the middle ones brought, CRC included, in one read (with CRC on
 * the ULPDU is staged whole and read through the read-ahead window: llp_conn_rx.c fpdu_land).
 * The data lands, a Send behind it completes, and the mark is back to 1 for what follows (a
 * small FPDU is never held back).
 */
#define _GNU_SOURCE 1
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "raw_peer.h"
#include "stack_pair.h"
#include "util/crc32c.h"
#include "util/bytes.h"
#include "wire/wire.h"

static unsigned long n_recvmsg;

ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
    __atomic_add_fetch(&n_recvmsg, 1, __ATOMIC_RELAXED);
    return __real_recvmsg(fd, m, flags);
}

ssize_t __real_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags)
{
    __atomic_add_fetch(&n_recvmsg, 1, __ATOMIC_RELAXED); /* a read into one buffer, as recvmsg */
    return __real_recv(fd, b, n, flags);
}

enum { BUF = 65536, AT = 8192, PAYLOAD = 20000 };

/* Progress the server a few times (whatever is readable is read). */
static void drive(struct sp_side *s)
{
    for (int i = 0; i < 4; i++)
        iwarp_ctx_progress(s->ctx, 0);
}

TEST(a_large_fpdu_arriving_in_pieces_is_read_once_it_is_whole)
{
    struct sp_side srv;
    sp_side_init(&srv, IWARP_PROGRESS_CALLER, 16);
    uint8_t *buf = calloc(1, BUF);
    ASSERT_TRUE(buf != NULL);
    struct iwarp_mr *mr = sp_reg(&srv, buf, BUF, 0);
    struct sp_end e;
    int fd = raw_peer_up(&srv, &e, buf, mr);
    int one = 1; /* each piece leaves at once, not when Nagle lets it */
    ASSERT_EQ(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);

    /* RFC 5041 §4.2/§4.3, RFC 5040 §4.1: tagged, Last, DDP version 1; RDMAP version 1, RDMA
     * Write; the MR's STag; TO = its address + AT */
    enum { ULPDU = IWARP_DDP_TAGGED_HDR_LEN + PAYLOAD };
    static uint8_t f[2 + ULPDU + 3 + 4];
    f[0] = (uint8_t)(ULPDU >> 8);
    f[1] = (uint8_t)ULPDU;
    uint8_t *h = f + 2;
    h[0] = IWARP_DDP_FLAG_TAGGED | IWARP_DDP_FLAG_LAST | 1u;
    h[1] = 0x40u | IWARP_RDMAP_OP_WRITE;
    iwarp_store_be32(h + 2, mr->rkey);
    iwarp_store_be64(h + 6, (uint64_t)(uintptr_t)(buf + AT));
    sp_fill(h + IWARP_DDP_TAGGED_HDR_LEN, PAYLOAD, 5);
    uint32_t pad = (4u - (2u + ULPDU) % 4u) % 4u; /* RFC 5044 §4.1 */
    size_t len = 2u + ULPDU + pad;
    uint32_t crc = iwarp_crc32c(f, len); /* RFC 5044 §4.4: least significant octet first */
    for (int i = 0; i < 4; i++)
        f[len + (size_t)i] = (uint8_t)(crc >> (8 * i));
    len += 4;

    unsigned long r0 = __atomic_load_n(&n_recvmsg, __ATOMIC_RELAXED);
    size_t cut[5] = {0, 1000, 7000, 14000, len};
    for (int p = 0; p < 4; p++) {
        ASSERT_EQ(send(fd, f + cut[p], cut[p + 1] - cut[p], 0), (ssize_t)(cut[p + 1] - cut[p]));
        drive(&srv);
        unsigned long reads = __atomic_load_n(&n_recvmsg, __ATOMIC_RELAXED) - r0;
        if (p == 0)
            ASSERT_EQ(reads, 1ul); /* the first piece, all of it in one read */
        else if (p < 3)
            ASSERT_EQ(reads, 1ul); /* not readable yet: the rest has not all come */
        else
            ASSERT_EQ(reads, 2ul); /* the rest, in one read */
    }
    SP_ASSERT_PATTERN(buf + AT, PAYLOAD, 5);

    /* a zero-length Send behind it (MSN 1, wire-reference §1.9) completes the posted receive:
     * small FPDUs are read as they come */
    uint8_t zs[24];
    harness_hex("0012 4143 00000000 00000000 00000001 00000000 | 58 7b e8 c4", zs, sizeof zs);
    ASSERT_EQ(send(fd, zs, sizeof zs, 0), (ssize_t)sizeof zs);
    struct iwarp_wc wc = sp_poll_ok(&srv, NULL, IWARP_WC_RECV);
    ASSERT_EQ(wc.wr_id, 1);
    ASSERT_EQ(wc.byte_len, 0);

    close(fd);
    sp_expect_ack(&srv, NULL, IWARP_CM_EVENT_DISCONNECTED);
    sp_end_destroy(&e);
    ASSERT_EQ(iwarp_dereg_mr(mr), 0);
    sp_side_fini(&srv);
    free(buf);
}
