/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A TCP socket's retransmission counters (Linux TCP_INFO), for the statistics
 * (iwarp_query_qp_stats). Apart from llp_tcp.c because it needs <linux/tcp.h>'s struct
 * tcp_info (tcpi_bytes_retrans, Linux 4.19), which glibc's <netinet/tcp.h> lacks and which
 * cannot be included beside it.
 */
#ifndef IWARP_LLP_LLP_TCP_INFO_H
#define IWARP_LLP_LLP_TCP_INFO_H

#include <stdint.h>

/*
 * Read fd's retransmitted octets (tcpi_bytes_retrans) and segments (tcpi_total_retrans) with
 * one getsockopt(TCP_INFO). A kernel whose struct tcp_info ends before tcpi_bytes_retrans
 * gives 0 octets. Not on the data path: statistics queries and the connection's close only.
 * Returns 0, or IWARP_ERR_IO when getsockopt fails (*bytes and *segs unchanged).
 */
int iwarp_llp_tcp_info_retrans(int fd, uint64_t *bytes, uint64_t *segs);

#endif
