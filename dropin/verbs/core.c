/* SPDX-License-Identifier: BSD-2-Clause */
/* The process-wide pieces both drop-in libraries share: the settings from the environment,
 * the one libiwarp context, the errno of every IWARP_ERR_*, the log line. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_once_t options_once = PTHREAD_ONCE_INIT;
static struct iwd_options options;

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iwarp_ctx *the_ctx;
static unsigned int ctx_refs;

static void bad_value(const char *var, const char *value)
{
    fprintf(stderr, "libiwarp: %s=%s is not understood; using its default\n", var, value);
}

/* A 0|1 variable: false when unset. */
static bool env_bool(const char *var, bool dflt)
{
    const char *v = getenv(var);

    if (!v || !*v)
        return dflt;
    if (!strcmp(v, "0"))
        return false;
    if (!strcmp(v, "1"))
        return true;
    bad_value(var, v);
    return dflt;
}

static uint8_t parse_rtr(const char *var)
{
    const char *v = getenv(var);
    uint8_t types = 0;
    char buf[64];

    if (!v || !*v)
        return 0;
    if (strlen(v) >= sizeof buf) {
        bad_value(var, v);
        return 0;
    }
    strcpy(buf, v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "write"))
            types |= IWARP_CM_RTR_WRITE;
        else if (!strcmp(tok, "read"))
            types |= IWARP_CM_RTR_READ;
        else if (!strcmp(tok, "send"))
            types |= IWARP_CM_RTR_SEND;
        else {
            bad_value(var, v);
            return 0;
        }
    }
    return types;
}

/* An unsigned limit from var, at most max; -1 when unset or not understood (reported). */
static int64_t env_limit(const char *var, unsigned long max)
{
    const char *v = getenv(var);
    char *end;
    unsigned long n;

    if (!v || !*v)
        return -1;
    n = strtoul(v, &end, 10);
    if (*end || n > max || *v == '-') {
        bad_value(var, v);
        return -1;
    }
    return (int64_t)n;
}

static void read_options(void)
{
    const char *v;

    options.progress = IWARP_PROGRESS_THREAD;
    v = getenv("IWARP_PROGRESS");
    if (v && *v) {
        if (!strcmp(v, "caller"))
            options.progress = IWARP_PROGRESS_CALLER;
        else if (strcmp(v, "thread"))
            bad_value("IWARP_PROGRESS", v);
    }
    options.mpa_crc = env_bool("IWARP_MPA_CRC", false);
    options.mpa_markers = env_bool("IWARP_MPA_MARKERS", false);
    options.mpa_rev = 2;
    v = getenv("IWARP_MPA_REV");
    if (v && *v) {
        if (!strcmp(v, "1"))
            options.mpa_rev = 1;
        else if (strcmp(v, "2"))
            bad_value("IWARP_MPA_REV", v);
    }
    /* Peer-to-peer mode (RFC 6581) by default, as Chelsio's iw_cxgb4: programs written for
     * verbs let either side send first once connected (perftest's ib_write_lat, ucmatose),
     * which plain MPA forbids the responder (RFC 5044 §7.1.2). It needs revision 2. */
    options.peer_to_peer = env_bool("IWARP_MPA_P2P", options.mpa_rev == 2);
    if (options.peer_to_peer && options.mpa_rev == 1) {
        /* not iwd_log: it reads these options (pthread_once would wait on itself) */
        fprintf(stderr, "libiwarp: IWARP_MPA_P2P=1 needs MPA revision 2 (IWARP_MPA_REV=1): off\n");
        options.peer_to_peer = false;
    }
    options.rtr_types = parse_rtr("IWARP_MPA_RTR");
    v = getenv("IWARP_FIRST_FPDU_DELAY_MS");
    if (v && *v) {
        char *end;
        unsigned long ms = strtoul(v, &end, 10);

        if (*end || ms > 65535 || *v == '-')
            bad_value("IWARP_FIRST_FPDU_DELAY_MS", v);
        else
            options.first_fpdu_delay_ms = (uint16_t)ms;
    }
    /* A server that listens again only a moment after an earlier connection (perftest -R's
     * data connection) refuses a fast connector: dial again for this long. */
    v = getenv("IWARP_CONNECT_RETRY_MS");
    if (v && *v) {
        char *end;
        unsigned long ms = strtoul(v, &end, 10);

        if (*end || ms > 3600000 || *v == '-')
            bad_value("IWARP_CONNECT_RETRY_MS", v);
        else
            options.connect_retry_ms = (uint32_t)ms;
    }
    options.tx_batch_us = -1;
    v = getenv("IWARP_TX_BATCH_US");
    if (v && *v) {
        char *end;
        unsigned long us = strtoul(v, &end, 10);

        if (*end || us > 1000000 || *v == '-')
            bad_value("IWARP_TX_BATCH_US", v);
        else
            options.tx_batch_us = (int)us;
    }
    options.mpa_pending_max = env_limit("IWARP_MPA_PENDING_MAX", 1000000);
    options.mpa_startup_timeout_ms = env_limit("IWARP_MPA_STARTUP_TIMEOUT_MS", 3600000);
    /* IWARP_LOG=level[:file], as libiwarp reads it (docs/environment.md). With a file the
     * context gets no hook from us and libiwarp's own writer puts its lines there; ours stay
     * on stderr. */
    options.log_level = IWARP_LOG_WARN;
    v = getenv("IWARP_LOG");
    if (v && *v) {
        static const char *const names[] = {"error", "warn", "info", "debug", "0", "1", "2", "3"};
        const char *colon = strchr(v, ':');
        size_t len = colon ? (size_t)(colon - v) : strlen(v);
        int found = -1;

        for (int i = 0; i < 8; i++)
            if (strlen(names[i]) == len && !strncmp(v, names[i], len))
                found = i % 4;
        if (len == 3 && !strncmp(v, "off", 3))
            found = -2;
        if (found == -1 || (colon && !colon[1]))
            bad_value("IWARP_LOG", v);
        else if (found == -2)
            options.log_level = -1;
        else {
            options.log_level = found;
            options.log_file = colon != NULL;
        }
    }
}

/**
 * iwd_options - see dropin.h.
 */
const struct iwd_options *iwd_options(void)
{
    pthread_once(&options_once, read_options);
    return &options;
}

/**
 * iwd_log - see dropin.h.
 */
void iwd_log(int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (level > iwd_options()->log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "libiwarp: %s\n", line);
}

/* libiwarp's log hook: the context filters by level already. */
static void ctx_log(void *user, enum iwarp_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    fprintf(stderr, "libiwarp: %s\n", msg);
}

/**
 * iwd_ctx_get - see dropin.h.
 */
struct iwarp_ctx *iwd_ctx_get(void)
{
    struct iwarp_ctx *ctx;

    pthread_mutex_lock(&ctx_lock);
    if (!the_ctx) {
        const struct iwd_options *o = iwd_options();
        struct iwarp_ctx_attr attr;
        int rc;

        iwarp_ctx_attr_default(&attr);
        attr.progress = o->progress;
        /* with IWARP_LOG's file (or off) libiwarp's own IWARP_LOG handling applies */
        if (!o->log_file && o->log_level >= 0) {
            attr.log = ctx_log;
            attr.log_level = (enum iwarp_log_level)o->log_level;
        }
        if (o->tx_batch_us >= 0) {
            attr.comp_mask |= IWARP_CTX_ATTR_TX_BATCH;
            attr.tx_batch_us = (uint32_t)o->tx_batch_us;
        }
        if (o->mpa_pending_max >= 0) {
            attr.comp_mask |= IWARP_CTX_ATTR_MPA_PENDING_MAX;
            attr.mpa_pending_max = (uint32_t)o->mpa_pending_max;
        }
        if (o->mpa_startup_timeout_ms >= 0) {
            attr.comp_mask |= IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT;
            attr.mpa_startup_timeout_ms = (uint32_t)o->mpa_startup_timeout_ms;
        }
        rc = iwarp_ctx_create(&attr, &the_ctx);
        if (rc) {
            the_ctx = NULL;
            pthread_mutex_unlock(&ctx_lock);
            errno = iwd_errno(rc);
            return NULL;
        }
    }
    ctx_refs++;
    ctx = the_ctx;
    pthread_mutex_unlock(&ctx_lock);
    return ctx;
}

/**
 * iwd_ctx_put - see dropin.h. A context whose objects remain (an application that closes its
 * device with objects open) is kept rather than destroyed under them.
 */
void iwd_ctx_put(void)
{
    pthread_mutex_lock(&ctx_lock);
    if (ctx_refs && --ctx_refs == 0 && the_ctx) {
        if (iwarp_ctx_destroy(the_ctx) == 0)
            the_ctx = NULL;
    }
    pthread_mutex_unlock(&ctx_lock);
}

/**
 * iwd_errno - see dropin.h. Posting's "queue full" is ENOMEM as rdma-core providers give it;
 * the connection errors are the socket errnos librdmacm reports in event status.
 */
int iwd_errno(int iwarp_err)
{
    switch (iwarp_err) {
    case IWARP_OK:
        return 0;
    case IWARP_ERR_INVAL:
    case IWARP_ERR_SHORT:
    case IWARP_ERR_STATE:
    case IWARP_ERR_DDP_QP_MODE:
    case IWARP_ERR_DDP_RTR:
    case IWARP_ERR_STAG_INVALID:
    case IWARP_ERR_STAG_NOT_ASSOC:
    case IWARP_ERR_MEM_BOUNDS:
    case IWARP_ERR_MEM_TO_WRAP:
    case IWARP_ERR_STAG_CANT_INVAL:
    case IWARP_ERR_STAG_STALE:
    case IWARP_ERR_ATOMIC_ALIGN:
        return EINVAL;
    case IWARP_ERR_MEM_ACCESS:
        return EACCES;
    case IWARP_ERR_NOMEM:
    case IWARP_ERR_NOSPC:
    case IWARP_ERR_STAG_EXHAUSTED:
        return ENOMEM;
    case IWARP_ERR_BUSY:
        return EBUSY;
    case IWARP_ERR_TIMEDOUT:
        return ETIMEDOUT;
    case IWARP_ERR_NOTSUP:
    case IWARP_ERR_RDMAP_EXT_OFF:
        return EOPNOTSUPP;
    case IWARP_ERR_IO:
    case IWARP_ERR_PCAP:
    case IWARP_ERR_PCAP_LINKTYPE:
    case IWARP_ERR_PCAP_END:
        return EIO;
    case IWARP_ERR_TRACE_BOUND:
        return ENOSPC;
    case IWARP_ERR_PROTO:
    case IWARP_ERR_MPA_KEY:
    case IWARP_ERR_MPA_REV:
    case IWARP_ERR_MPA_PD_LEN:
    case IWARP_ERR_MPA_ENHANCED:
    case IWARP_ERR_MPA_EARLY_DATA:
    case IWARP_ERR_MPA_IRD_ORD:
    case IWARP_ERR_MPA_RTR:
    case IWARP_ERR_MPA_CRC_REQUIRED:
    case IWARP_ERR_MPA_INIT_INIT:
    case IWARP_ERR_MPA_RTR_MISMATCH:
    case IWARP_ERR_MPA_P2P:
    case IWARP_ERR_MPA_PEER_TERM:
    case IWARP_ERR_FPDU_CRC:
    case IWARP_ERR_FPDU_MARKER:
    case IWARP_ERR_FPDU_LEN:
    case IWARP_ERR_DDP_VERSION:
    case IWARP_ERR_DDP_HDR_LEN:
    case IWARP_ERR_DDP_QN:
    case IWARP_ERR_RDMAP_VERSION:
    case IWARP_ERR_RDMAP_OPCODE:
    case IWARP_ERR_RDMAP_LEN:
    case IWARP_ERR_RDMAP_LAST:
    case IWARP_ERR_RDMAP_TAGGED:
    case IWARP_ERR_DDP_MO:
    case IWARP_ERR_READ_RESP:
    case IWARP_ERR_ATOMIC_RESP:
    case IWARP_ERR_SCTP_ADAPTATION:
    case IWARP_ERR_SCTP_STREAMS:
    case IWARP_ERR_SCTP_SSN:
    case IWARP_ERR_SCTP_PPID:
    case IWARP_ERR_SCTP_MSGSIZE:
    case IWARP_ERR_SESSION_SEQUENCE:
    case IWARP_ERR_SESSION_FUNCTION:
    case IWARP_ERR_SESSION_PENDING:
    case IWARP_ERR_PERF_PROTO:
    case IWARP_ERR_PERF_VERIFY:
    case IWARP_ERR_PKT_MALFORMED:
    case IWARP_ERR_PKT_TOO_BIG:
    case IWARP_ERR_PKT_CSUM:
        return EPROTO;
    case IWARP_ERR_MPA_REJECTED:
    case IWARP_ERR_MPA_MARKERS:
    case IWARP_ERR_SESSION_REJECTED:
    case IWARP_ERR_CONN_REFUSED:
        return ECONNREFUSED;
    case IWARP_ERR_CONN_RESET:
    case IWARP_ERR_SESSION_TERMINATED:
    case IWARP_ERR_SCTP_ASSOC_LOST:
        return ECONNRESET;
    case IWARP_ERR_UNREACHABLE:
        return EHOSTUNREACH;
    case IWARP_ERR_ADDR:
        return EADDRINUSE;
    default:
        return iwarp_err < 0 ? EIO : EINVAL;
    }
}

/**
 * iwd_fail_null - see internal.h.
 */
void *iwd_fail_null(int e)
{
    errno = e;
    return NULL;
}
