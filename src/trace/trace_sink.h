/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet trace's capture files (L6): one pcap writer per path per process, shared by every
 * context and connection that traces to that path, and one size bound for the whole process.
 *
 * Sharing: the first iwarp_trace_sink_open() of a path creates (truncates) the file; later opens
 * of the same path, while it is open, share it (reference counted); the last release flushes and
 * closes it. So all connections of all contexts of a process tracing to one path land in one
 * capture, each as its own TCP conversation (trace/trace_conn.h).
 *
 * Locking: one process-wide mutex (iwarp_trace_sink_lock) guards the registry of open files,
 * the bound and every write to any of the files: connections of different contexts (different
 * context locks, different progress threads) write whole records into one file. Lock order: a
 * context's lock, then this one; never a context's lock while holding this one.
 *
 * The bound: every octet written to a capture file (file header, record headers and frames)
 * counts against one budget per process. A record that would exceed it is not written: every
 * open file stops recording at once (each is flushed: a valid capture of whole records on disk)
 * and the first writer to hit it is told so, once, to log one line. The budget starts afresh
 * (nothing used, recording allowed, its size from the opener) when a file is opened while none
 * is open, and at iwarp_trace_sink_start() (files open then record again, appending).
 *
 * The process-wide trace (iwarp_trace_start, iwarp/trace.h): one file held open on behalf of
 * the process, which connections of contexts without a trace of their own record into.
 */
#ifndef IWARP_TRACE_TRACE_SINK_H
#define IWARP_TRACE_TRACE_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/pcap_writer.h"

/* The bound when none is given: 256 MiB per process. */
#define IWARP_TRACE_MAX_DEFAULT (UINT64_C(256) << 20)

struct iwarp_trace_sink;

/*
 * Opens the capture file at path, or takes a reference to it when it is open already.
 *   max_bytes - the process's bound when this open starts the budget afresh (no file open);
 *               0: IWARP_TRACE_MAX_DEFAULT. Ignored while other files are open.
 *   errbuf    - optional: on IWARP_ERR_PCAP receives libpcap's text (NUL-terminated, errlen).
 * While the bound is reached, a new file is created but records nothing. Takes the lock.
 * Ownership: path is copied; the caller owns one reference to *out (iwarp_trace_sink_release).
 * Returns 0, IWARP_ERR_INVAL (NULL or empty path), IWARP_ERR_NOMEM, IWARP_ERR_PCAP.
 */
int iwarp_trace_sink_open(struct iwarp_trace_sink **out, const char *path, uint64_t max_bytes,
                          char *errbuf, size_t errlen);

/* Takes one more reference to s (opened, not yet released by its last user). Takes the lock. */
void iwarp_trace_sink_ref(struct iwarp_trace_sink *s);

/*
 * Lets go of one reference (NULL is ignored); the last one flushes and closes the file and
 * frees s. Takes the lock.
 * Returns 0, or IWARP_ERR_IO when this release closed a file whose writing failed.
 */
int iwarp_trace_sink_release(struct iwarp_trace_sink *s);

/*
 * The process-wide trace: opens path (as iwarp_trace_sink_open, sharing it when open) and holds
 * it for the process until iwarp_trace_sink_stop(); a process-wide trace started before is let
 * go. Starts the budget afresh with max_bytes (0: IWARP_TRACE_MAX_DEFAULT): files stopped at the
 * bound record again. Takes the lock.
 * Ownership: path is copied. Returns 0 or an iwarp_trace_sink_open() error (nothing started).
 */
int iwarp_trace_sink_start(const char *path, uint64_t max_bytes, char *errbuf, size_t errlen);

/*
 * Ends the process-wide trace: lets go of its file (flushed now; closed once the connections
 * recording into it close). Nothing when none is started. Takes the lock.
 * Returns 0, or IWARP_ERR_IO when the file's writing failed.
 */
int iwarp_trace_sink_stop(void);

/*
 * The process-wide trace's file, with a reference for the caller (iwarp_trace_sink_release), or
 * NULL when none is started (one atomic load then; the lock otherwise).
 */
struct iwarp_trace_sink *iwarp_trace_sink_global(void);

/* Takes the process-wide trace lock (see above). */
void iwarp_trace_sink_lock(void);

/* Releases the process-wide trace lock. */
void iwarp_trace_sink_unlock(void);

/*
 * s's writer, or NULL while the bound is reached (nothing records).
 * Lock held; the writer is valid until the lock is released.
 */
struct iwarp_pcap_writer *iwarp_trace_sink_writer(struct iwarp_trace_sink *s);

/*
 * A write on a sink's writer returned IWARP_ERR_TRACE_BOUND: stops every file (each flushed).
 * Lock held. Returns true the first time since the budget started, for the caller to report it
 * (once per process), false afterwards.
 */
bool iwarp_trace_sink_bound_reached(void);

/* The process's bound in octets (as set by the last fresh start). Lock held. */
uint64_t iwarp_trace_sink_bound(void);

/* Flushes s's file, when it is recording. Lock held. Returns 0 or IWARP_ERR_IO. */
int iwarp_trace_sink_flush(struct iwarp_trace_sink *s);

/*
 * Parses a size: decimal digits, optionally followed by one of K, M, G (either case; binary:
 * 2^10, 2^20, 2^30). Zero is refused (a bound of zero records nothing: stop the trace instead).
 * Returns 0 with *out set, or IWARP_ERR_INVAL (not a size, zero, or over 2^64 - 1).
 */
int iwarp_trace_size_parse(const char *s, uint64_t *out);

#endif
