/* SPDX-License-Identifier: BSD-2-Clause */
/* libiwarp packet trace: every frame the library sends and receives, per connection, recorded
 * in a capture file (classic pcap, Ethernet, nanosecond timestamps) that Wireshark opens as it
 * is. Each TCP connection is a TCP conversation with its real addresses and ports (SYN/SYN-ACK/
 * ACK at connect, FIN or RST at close); each MPA Request/Reply and FPDU is its own segment(s) of
 * at most the EMSS, so Wireshark's MPA/DDP/RDMAP dissectors frame it. What goes on the wire is
 * unchanged.
 *
 * Three ways to turn it on, for a connection set up in a context (first that applies):
 *  1. iwarp_ctx_attr.trace_pcap (verbs.h): that context's connections;
 *  2. the environment, read at iwarp_ctx_create (not for setuid programs): IWARP_PCAP=FILE
 *     (IWARP_TRACE_PCAP=FILE is a deprecated alias, used only when IWARP_PCAP is not set);
 *  3. iwarp_trace_start(): the connections of every context with neither.
 * Connections set up before a trace starts are not recorded.
 *
 * One file per path per process: every context and connection tracing to the same path shares
 * one writer, so all of them land, as whole records, in one valid capture. The file is created
 * (truncated) when it is first opened and closed when its last user lets go (the last context
 * or connection using it, or iwarp_trace_stop); each connection's records are flushed to disk
 * when it closes.
 *
 * Bounded: every octet written to capture files counts against one bound per process (default
 * 256 MiB; IWARP_PCAP_MAX=bytes with an optional K, M or G suffix, binary; or max_bytes below).
 * When the next record would exceed it, recording stops in every file, the files are flushed
 * (valid captures, whole records only) and one line is logged through the log hook of the
 * context whose connection reached it (IWARP_LOG_WARN). The bound starts afresh when a capture
 * file is opened while none is open, and at iwarp_trace_start().
 *
 * Off (the default): no file, no allocation; one predictable branch per socket read and write.
 */
#ifndef IWARP_TRACE_H
#define IWARP_TRACE_H

#include <stdint.h>

#include "iwarp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * iwarp_trace_start - start the process-wide packet trace.
 *
 * Connections set up from now on, in every context that traces nowhere else (no trace_pcap, no
 * IWARP_PCAP), record into path. A trace started before is stopped first (as by
 * iwarp_trace_stop).
 *   path      - the capture file: created or truncated now, unless already open in this process
 *               (then shared, appended to).
 *   max_bytes - the process's bound in octets; 0: IWARP_PCAP_MAX from the environment, else
 *               256 MiB. Starts the bound afresh (files stopped at it record again).
 *
 * Returns:
 *   0                    started.
 *   IWARP_ERR_INVAL      path is NULL or empty, or max_bytes is 0 and IWARP_PCAP_MAX is not a
 *                        size; nothing is started.
 *   IWARP_ERR_NOMEM      out of memory; nothing is started.
 *   IWARP_ERR_PCAP       the file cannot be created; nothing is started.
 * Ownership: path is copied.
 * Context: any thread, with or without contexts; takes a process-wide lock. Not from a hook.
 */
IWARP_EXTERN int iwarp_trace_start(const char *path, uint64_t max_bytes);

/**
 * iwarp_trace_stop - stop the process-wide packet trace.
 *
 * Connections set up from now on are not recorded in its file; its records so far are flushed
 * to disk now; connections already recording into it go on until they close, and the file is
 * closed when the last of them (or of the contexts using the same path) lets go. Nothing when
 * no trace is started.
 *
 * Returns:
 *   0                    stopped (or none was started).
 *   IWARP_ERR_IO         writing the file failed (the trace is stopped all the same).
 * Ownership: none.
 * Context: any thread; takes a process-wide lock. Not from a hook.
 */
IWARP_EXTERN int iwarp_trace_stop(void);

#ifdef __cplusplus
}
#endif
#endif
