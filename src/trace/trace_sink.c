/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet trace's capture files: a process-wide registry of shared pcap writers under one
 * mutex, and the process's size bound.
 */
#include "trace/trace_sink.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/errors.h"

struct iwarp_trace_sink {
    struct iwarp_trace_sink *next; /* the registry */
    struct iwarp_pcap_writer *w;
    uint32_t refs;
    int err;     /* flushing the file at the bound failed (IWARP_ERR_IO), or 0 */
    char path[]; /* NUL-terminated */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iwarp_trace_sink *g_sinks;  /* every open sink */
static struct iwarp_trace_sink *g_global; /* the process-wide trace, or NULL */
static atomic_bool g_started;             /* g_global != NULL, readable without the lock */
static struct iwarp_pcap_budget g_budget;
static bool g_bound_hit; /* the bound was reached: nothing records until a fresh budget */

void iwarp_trace_sink_lock(void)
{
    pthread_mutex_lock(&g_lock);
}

void iwarp_trace_sink_unlock(void)
{
    pthread_mutex_unlock(&g_lock);
}

/* A fresh budget of max octets (0: the default). Lock held. */
static void budget_start(uint64_t max)
{
    g_budget.max = max ? max : IWARP_TRACE_MAX_DEFAULT;
    g_budget.used = 0;
    g_bound_hit = false;
}

static struct iwarp_trace_sink *find(const char *path)
{
    for (struct iwarp_trace_sink *s = g_sinks; s; s = s->next)
        if (strcmp(s->path, path) == 0)
            return s;
    return NULL;
}

/* iwarp_trace_sink_open with the lock held. */
static int open_locked(struct iwarp_trace_sink **out, const char *path, uint64_t max_bytes,
                       char *errbuf, size_t errlen)
{
    struct iwarp_trace_sink *s = find(path);
    if (s) {
        s->refs++;
        *out = s;
        return 0;
    }
    if (!g_sinks)
        budget_start(max_bytes);
    size_t n = strlen(path) + 1u;
    s = calloc(1, sizeof *s + n);
    if (!s)
        return IWARP_ERR_NOMEM;
    memcpy(s->path, path, n);
    int rc = iwarp_pcap_writer_open(&s->w, path, errbuf, errlen);
    if (rc < 0) {
        free(s);
        return rc;
    }
    /* the header on disk now: a valid (empty) capture from the start */
    rc = iwarp_pcap_writer_flush(s->w);
    if (rc < 0) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "%s", iwarp_pcap_writer_errtext(s->w));
        (void)iwarp_pcap_writer_close(s->w);
        free(s);
        return IWARP_ERR_PCAP;
    }
    iwarp_pcap_writer_set_budget(s->w, &g_budget);
    g_budget.used += IWARP_PCAP_FILE_HDR_LEN; /* written by the open */
    s->refs = 1;
    s->next = g_sinks;
    g_sinks = s;
    *out = s;
    return 0;
}

int iwarp_trace_sink_open(struct iwarp_trace_sink **out, const char *path, uint64_t max_bytes,
                          char *errbuf, size_t errlen)
{
    if (!out || !path || !*path)
        return IWARP_ERR_INVAL;
    *out = NULL;
    pthread_mutex_lock(&g_lock);
    int rc = open_locked(out, path, max_bytes, errbuf, errlen);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

void iwarp_trace_sink_ref(struct iwarp_trace_sink *s)
{
    pthread_mutex_lock(&g_lock);
    s->refs++;
    pthread_mutex_unlock(&g_lock);
}

/* iwarp_trace_sink_release with the lock held. */
static int release_locked(struct iwarp_trace_sink *s)
{
    if (--s->refs > 0)
        return 0;
    for (struct iwarp_trace_sink **p = &g_sinks; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    int rc = iwarp_pcap_writer_close(s->w);
    if (rc == 0)
        rc = s->err;
    free(s);
    return rc;
}

int iwarp_trace_sink_release(struct iwarp_trace_sink *s)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&g_lock);
    int rc = release_locked(s);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int iwarp_trace_sink_start(const char *path, uint64_t max_bytes, char *errbuf, size_t errlen)
{
    if (!path || !*path)
        return IWARP_ERR_INVAL;
    pthread_mutex_lock(&g_lock);
    struct iwarp_trace_sink *s = NULL;
    /* A fresh budget: files stopped at the bound record again, appending. */
    struct iwarp_pcap_budget old = g_budget;
    bool old_hit = g_bound_hit;
    budget_start(max_bytes);
    int rc = open_locked(&s, path, max_bytes, errbuf, errlen);
    if (rc == 0) {
        if (g_global)
            (void)release_locked(g_global);
        g_global = s;
        atomic_store(&g_started, true);
    } else {
        g_budget = old;
        g_bound_hit = old_hit;
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int iwarp_trace_sink_stop(void)
{
    pthread_mutex_lock(&g_lock);
    int rc = 0;
    struct iwarp_trace_sink *s = g_global;
    if (s) {
        g_global = NULL;
        atomic_store(&g_started, false);
        rc = iwarp_pcap_writer_flush(s->w);
        int rc2 = release_locked(s);
        if (rc == 0)
            rc = rc2;
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

struct iwarp_trace_sink *iwarp_trace_sink_global(void)
{
    if (!atomic_load_explicit(&g_started, memory_order_relaxed))
        return NULL;
    pthread_mutex_lock(&g_lock);
    struct iwarp_trace_sink *s = g_global;
    if (s)
        s->refs++;
    pthread_mutex_unlock(&g_lock);
    return s;
}

struct iwarp_pcap_writer *iwarp_trace_sink_writer(struct iwarp_trace_sink *s)
{
    return g_bound_hit ? NULL : s->w;
}

bool iwarp_trace_sink_bound_reached(void)
{
    if (g_bound_hit)
        return false;
    g_bound_hit = true;
    for (struct iwarp_trace_sink *s = g_sinks; s; s = s->next) {
        int rc = iwarp_pcap_writer_flush(s->w); /* a valid capture on disk from now on */
        if (rc < 0 && !s->err)
            s->err = rc;
    }
    return true;
}

uint64_t iwarp_trace_sink_bound(void)
{
    return g_budget.max;
}

int iwarp_trace_sink_flush(struct iwarp_trace_sink *s)
{
    return iwarp_pcap_writer_flush(s->w);
}

int iwarp_trace_size_parse(const char *s, uint64_t *out)
{
    if (!s || !out || *s < '0' || *s > '9')
        return IWARP_ERR_INVAL;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10u)
            return IWARP_ERR_INVAL;
        v = v * 10u + d;
    }
    unsigned shift = 0;
    switch (*s) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    case '\0':
        break;
    default:
        return IWARP_ERR_INVAL;
    }
    if (shift && *++s != '\0')
        return IWARP_ERR_INVAL;
    if (v == 0 || v > (UINT64_MAX >> shift))
        return IWARP_ERR_INVAL;
    *out = v << shift;
    return 0;
}
