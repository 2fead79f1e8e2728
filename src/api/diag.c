/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Diagnostics without recompiling (docs/environment.md): IWARP_LOG=level[:file], the context's
 * own log writer for applications that installed no log hook; the counters of every QP and of
 * the context (iwarp_query_qp_stats, iwarp_query_ctx_stats); IWARP_STATS=1, the context's
 * counters printed when it is destroyed.
 */
#define _GNU_SOURCE 1 /* secure_getenv, O_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api_ext.h"
#include "api/api_internal.h"
#include "iwarp/errors.h"
#include "wire/wire_term.h"

/* Contexts created in this process, for their numbers in log lines. */
static atomic_uint ctx_count;
/* A bad IWARP_LOG / IWARP_STATS value is reported once per process, not once per context. */
static atomic_flag bad_log_reported = ATOMIC_FLAG_INIT;
static atomic_flag bad_log_file_reported = ATOMIC_FLAG_INIT;
static atomic_flag bad_stats_reported = ATOMIC_FLAG_INIT;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* The environment's value of name, or NULL when unset or empty (not for setuid programs). */
static const char *env(const char *name)
{
    const char *v = secure_getenv(name);
    return v && *v ? v : NULL;
}

/* Write all of line to fd (one write: O_APPEND lines of several threads and contexts do not
 * interleave); a short or failed write is dropped, a log must never fail its caller. */
static void put_line(int fd, const char *line, size_t len)
{
    ssize_t n = write(fd, line, len);
    (void)n;
}

/* One line on stderr about a value the library cannot use, once per process per variable. */
__attribute__((format(printf, 2, 3))) static void report_once(atomic_flag *flag, const char *fmt,
                                                              ...)
{
    if (atomic_flag_test_and_set(flag))
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        put_line(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The line prefix: "2026-11-29T03:58:01.123456Z libiwarp[1234] ctx 1 ". */
static int prefix(const struct iwarp_ctx *ctx, char *buf, size_t cap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    return snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ libiwarp[%ld] ctx %u ",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    ts.tv_nsec / 1000, (long)getpid(), ctx->diag.id);
}

/* The context's log hook when IWARP_LOG installed it: user is the context. */
static void env_log(void *user, enum iwarp_log_level level, const char *msg)
{
    const struct iwarp_ctx *ctx = user;
    char line[768];
    int n = prefix(ctx, line, sizeof line);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    n = snprintf(line + len, sizeof line - len, "%s: %s\n",
                 (unsigned)level < 4 ? level_names[level] : "?", msg);
    if (n < 0)
        return;
    len += (size_t)n < sizeof line - len ? (size_t)n : sizeof line - len - 1;
    if (line[len - 1] != '\n') /* truncated: still one line */
        line[len - 1] = '\n';
    put_line(ctx->diag.log_fd, line, len);
}

/* IWARP_LOG's level: a name or its number 0..3; -1 when it is neither, -2 for "off". */
static int parse_level(const char *v, size_t len)
{
    if (len == 3 && !strncmp(v, "off", 3))
        return -2;
    for (int i = 0; i < 4; i++)
        if (strlen(level_names[i]) == len && !strncmp(v, level_names[i], len))
            return i;
    if (len == 1 && v[0] >= '0' && v[0] <= '3')
        return v[0] - '0';
    return -1;
}

void iwarp_api_diag_init(struct iwarp_ctx *ctx)
{
    ctx->diag.log_fd = -1;
    ctx->diag.id = atomic_fetch_add(&ctx_count, 1u) + 1u;
    const char *s = env("IWARP_STATS");
    if (s) {
        if (!strcmp(s, "1"))
            ctx->diag.stats_at_exit = true;
        else if (strcmp(s, "0"))
            report_once(&bad_stats_reported,
                        "libiwarp: IWARP_STATS=%s is not 0 or 1; the counters are not printed\n",
                        s);
    }
    const char *v = env("IWARP_LOG");
    if (!v || ctx->attr.log) /* the application's hook wins (docs/environment.md) */
        return;
    const char *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : strlen(v);
    int level = parse_level(v, len);
    if (level == -2)
        return;
    if (level < 0 || (colon && !colon[1])) {
        report_once(&bad_log_reported,
                    "libiwarp: IWARP_LOG=%s is not level[:file] (level: error, warn, info, "
                    "debug or 0-3); logging stays off\n",
                    v);
        return;
    }
    int fd = 2;
    if (colon) {
        fd = open(colon + 1, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            report_once(&bad_log_file_reported,
                        "libiwarp: IWARP_LOG: cannot open %s for appending (%s); logging stays "
                        "off\n",
                        colon + 1, strerror(errno));
            return;
        }
        ctx->diag.log_fd_owned = true;
    }
    ctx->diag.log_fd = fd;
    ctx->attr.log = env_log;
    ctx->attr.log_user = ctx;
    ctx->attr.log_level = (enum iwarp_log_level)level;
}

/* ---- counters ---------------------------------------------------------------------------- */

static const char *const class_names[IWARP_TERM_CLASS_NUM] = {"rdmap-catastrophic",
                                                              "rdmap-remote-protection",
                                                              "rdmap-remote-operation",
                                                              "ddp-catastrophic",
                                                              "ddp-tagged",
                                                              "ddp-untagged",
                                                              "llp-mpa",
                                                              "other"};

/* Add q's counters to *s (lock held); reads its connection's TCP_INFO now. */
static void add_qp(struct iwarp_stats *s, struct iwarp_qp_impl *q)
{
    const struct iwarp_core_eng_stats *e = &q->eng->stats;
    uint64_t rb = q->retrans_bytes, rs = q->retrans_segs;
    if (q->llp.retrans)
        q->llp.retrans(q, &rb, &rs);
    s->tx_segments += e->tx_segs;
    s->tx_bytes += e->tx_bytes;
    s->rx_segments += e->rx_segs;
    s->rx_bytes += e->rx_bytes;
    s->crc_errors += e->crc_errors;
    s->flushed_wrs += e->flushed;
    for (unsigned i = 0; i < IWARP_TERM_CLASS_NUM; i++) {
        s->term_sent[i] += e->term_sent[i];
        s->term_received[i] += e->term_rcvd[i];
    }
    s->retrans_bytes += rb;
    s->retrans_segments += rs;
    s->qps++;
}

void iwarp_api_qp_link(struct iwarp_ctx *ctx, struct iwarp_qp_impl *q)
{
    q->qp_prev = NULL;
    q->qp_next = ctx->qps;
    if (ctx->qps)
        ctx->qps->qp_prev = q;
    ctx->qps = q;
}

void iwarp_api_qp_unlink(struct iwarp_ctx *ctx, struct iwarp_qp_impl *q)
{
    add_qp(&ctx->retired, q);
    if (q->qp_prev)
        q->qp_prev->qp_next = q->qp_next;
    else
        ctx->qps = q->qp_next;
    if (q->qp_next)
        q->qp_next->qp_prev = q->qp_prev;
    q->qp_prev = q->qp_next = NULL;
}

int iwarp_query_qp_stats_sized(struct iwarp_qp *qp, struct iwarp_stats *stats, size_t stats_size)
{
    if (!qp || !stats || !IWARP_API_EXT_ROOM(struct iwarp_stats, stats_size))
        return IWARP_ERR_INVAL;
    struct iwarp_stats s;
    memset(&s, 0, sizeof s);
    pthread_mutex_lock(&qp->context->lock);
    add_qp(&s, iwarp_api_qp(qp));
    iwarp_api_unlock(qp->context);
    s.comp_mask = 0; /* no extension fields yet */
    memcpy(stats, &s, IWARP_API_EXT_BASE(struct iwarp_stats));
    return 0;
}

/* The context's counters (lock held). */
static void ctx_stats_locked(struct iwarp_ctx *ctx, struct iwarp_stats *s)
{
    memcpy(s, &ctx->retired, sizeof *s);
    for (struct iwarp_qp_impl *q = ctx->qps; q; q = q->qp_next)
        add_qp(s, q);
    s->comp_mask = 0;
}

int iwarp_query_ctx_stats_sized(struct iwarp_ctx *ctx, struct iwarp_stats *stats, size_t stats_size)
{
    if (!ctx || !stats || !IWARP_API_EXT_ROOM(struct iwarp_stats, stats_size))
        return IWARP_ERR_INVAL;
    struct iwarp_stats s;
    pthread_mutex_lock(&ctx->lock);
    ctx_stats_locked(ctx, &s);
    iwarp_api_unlock(ctx);
    memcpy(stats, &s, IWARP_API_EXT_BASE(struct iwarp_stats));
    return 0;
}

size_t iwarp_api_stats_str(const struct iwarp_stats *s, const char *prefix_str, char *buf,
                           size_t cap)
{
    size_t len = 0;
#define PUT(...)                                                        \
    do {                                                                \
        int n_ = snprintf(buf + len, cap - len, __VA_ARGS__);           \
        if (n_ > 0)                                                     \
            len += (size_t)n_ < cap - len ? (size_t)n_ : cap - len - 1; \
    } while (0)
    if (cap == 0)
        return 0;
    buf[0] = '\0';
    PUT("%sqps %u; tx %llu segments %llu bytes; rx %llu segments %llu bytes; crc errors %llu; "
        "flushed WRs %llu; TCP retransmitted %llu bytes %llu segments\n",
        prefix_str, s->qps, (unsigned long long)s->tx_segments, (unsigned long long)s->tx_bytes,
        (unsigned long long)s->rx_segments, (unsigned long long)s->rx_bytes,
        (unsigned long long)s->crc_errors, (unsigned long long)s->flushed_wrs,
        (unsigned long long)s->retrans_bytes, (unsigned long long)s->retrans_segments);
    for (int dir = 0; dir < 2; dir++) {
        const uint64_t *t = dir ? s->term_received : s->term_sent;
        PUT("%sTerminates %s:", prefix_str, dir ? "received" : "sent");
        bool any = false;
        for (unsigned i = 0; i < IWARP_TERM_CLASS_NUM; i++)
            if (t[i]) {
                PUT(" %s %llu", class_names[i], (unsigned long long)t[i]);
                any = true;
            }
        PUT("%s\n", any ? "" : " none");
    }
#undef PUT
    return len;
}

void iwarp_api_diag_fini(struct iwarp_ctx *ctx, bool print)
{
    if (print && ctx->diag.stats_at_exit) {
        struct iwarp_stats s;
        ctx_stats_locked(ctx, &s); /* no other thread may use the context any more */
        char pre[128], text[1024];
        int n = prefix(ctx, pre, sizeof pre);
        if (n > 0 && (size_t)n < sizeof pre - 8)
            memcpy(pre + n, "stats: ", 8);
        else
            snprintf(pre, sizeof pre, "libiwarp stats: ");
        size_t len = iwarp_api_stats_str(&s, pre, text, sizeof text);
        put_line(ctx->diag.log_fd >= 0 ? ctx->diag.log_fd : 2, text, len);
    }
    if (ctx->diag.log_fd_owned)
        close(ctx->diag.log_fd);
    ctx->diag.log_fd = -1;
    ctx->diag.log_fd_owned = false;
}

const char *iwarp_api_cause_str(uint32_t cause, char *buf, size_t cap)
{
    struct iwarp_term_cause c = {(uint8_t)(cause >> 16), (uint8_t)(cause >> 8), (uint8_t)cause};
    char name[160];
    iwarp_term_cause_str(c, name, sizeof name);
    /* where the cause is defined: RFC 5040 §4.8 (RDMAP), RFC 5041 §7.2 (DDP), RFC 5044 §8 and
     * RFC 6581 §8 (MPA) */
    const char *rfc = c.layer == IWARP_TERM_LAYER_RDMAP ? "RFC 5040 §4.8"
                      : c.layer == IWARP_TERM_LAYER_DDP ? "RFC 5041 §7.2"
                      : c.layer == IWARP_TERM_LAYER_LLP
                          ? (c.ecode >= IWARP_TERM_MPA_CATASTROPHIC ? "RFC 6581 §8" : "RFC 5044 §8")
                          : "no RFC";
    snprintf(buf, cap, "%s (%s; %u/%u/0x%02x)", name, rfc, c.layer, c.etype, c.ecode);
    return buf;
}
