/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet trace's public entry points (iwarp/trace.h) and how contexts and connections find
 * their capture file (trace/trace_sink.h): the context's own (trace_pcap or the environment),
 * else the process-wide one.
 */
#define _GNU_SOURCE 1 /* secure_getenv */
#include <stdlib.h>

#include "api/api_internal.h"
#include "iwarp/errors.h"
#include "iwarp/trace.h"
#include "trace/pcap_writer.h"
#include "trace/trace_sink.h"

/* The environment's value of name, or NULL when unset or empty (not for setuid programs). */
static const char *env(const char *name)
{
    const char *v = secure_getenv(name);
    return v && *v ? v : NULL;
}

/* The bound from IWARP_PCAP_MAX, or 0 (the default) when it is not set. Returns 0 or
 * IWARP_ERR_INVAL (not a size). */
static int env_max(uint64_t *max)
{
    const char *v = env("IWARP_PCAP_MAX");
    *max = 0;
    return v ? iwarp_trace_size_parse(v, max) : 0;
}

int iwarp_trace_start(const char *path, uint64_t max_bytes)
{
    if (!path || !*path)
        return IWARP_ERR_INVAL;
    if (max_bytes == 0) {
        int rc = env_max(&max_bytes);
        if (rc < 0)
            return rc;
    }
    return iwarp_trace_sink_start(path, max_bytes, NULL, 0);
}

int iwarp_trace_stop(void)
{
    return iwarp_trace_sink_stop();
}

int iwarp_api_trace_open(struct iwarp_ctx *ctx, const char *path)
{
    const char *what = "trace_pcap";
    if (!path) {
        what = "IWARP_PCAP";
        path = env("IWARP_PCAP");
    }
    if (!path) {
        what = "IWARP_TRACE_PCAP"; /* the deprecated name */
        path = env("IWARP_TRACE_PCAP");
    }
    if (!path || !*path)
        return 0;
    uint64_t max;
    int rc = env_max(&max);
    if (rc < 0) {
        iwarp_api_log(ctx, IWARP_LOG_ERROR, "trace: IWARP_PCAP_MAX=%s is not a size",
                      env("IWARP_PCAP_MAX"));
        return rc;
    }
    char err[IWARP_PCAP_ERRTEXT_LEN] = "";
    rc = iwarp_trace_sink_open(&ctx->trace, path, max, err, sizeof err);
    if (rc < 0)
        iwarp_api_log(ctx, IWARP_LOG_ERROR, "trace: cannot create %s (%s): %s", path, what,
                      err[0] ? err : iwarp_strerror(rc));
    return rc;
}

int iwarp_api_trace_close(struct iwarp_ctx *ctx)
{
    int rc = iwarp_trace_sink_release(ctx->trace);
    ctx->trace = NULL;
    if (rc < 0)
        iwarp_api_log(ctx, IWARP_LOG_ERROR, "trace: the capture file could not be written");
    return rc;
}

struct iwarp_trace_sink *iwarp_api_trace_sink(struct iwarp_ctx *ctx)
{
    if (ctx->trace) {
        iwarp_trace_sink_ref(ctx->trace);
        return ctx->trace;
    }
    return iwarp_trace_sink_global();
}

void iwarp_api_trace_bound(void *user, uint64_t bound)
{
    iwarp_api_log(user, IWARP_LOG_WARN,
                  "trace: the capture size bound (%llu octets, IWARP_PCAP_MAX) is reached: "
                  "packet recording stopped in every capture file of the process; they are "
                  "complete up to here",
                  (unsigned long long)bound);
}
