/* SPDX-License-Identifier: BSD-2-Clause */
/* A TCP socket's retransmission counters (llp_tcp_info.h). */
#include "llp/llp_tcp_info.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "iwarp/errors.h"

int iwarp_llp_tcp_info_retrans(int fd, uint64_t *bytes, uint64_t *segs)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return IWARP_ERR_IO;
    /* an older kernel fills less of the struct: what it left out stays 0 */
    *segs = len >= offsetof(struct tcp_info, tcpi_total_retrans) + sizeof ti.tcpi_total_retrans
                ? ti.tcpi_total_retrans
                : 0;
    *bytes = len >= offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof ti.tcpi_bytes_retrans
                 ? ti.tcpi_bytes_retrans
                 : 0;
    return 0;
}
