/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp exec: run an unmodified RDMA program (rping, perftest, ...) on libiwarp's drop-in
 * libibverbs.so.1 and librdmacm.so.1. It puts their directory first on LD_LIBRARY_PATH, turns
 * its options into the IWARP_* environment variables the drop-in reads (the program has no
 * flag for them) and replaces itself with the program.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_opts.h"

#ifndef IWARP_DROPIN_INSTALL_DIR
#define IWARP_DROPIN_INSTALL_DIR "/usr/local/lib/libiwarp/dropin"
#endif

struct opts {
    const char *dir;
    const char *progress;
    const char *pcap;
    const char *rtr;
    long first_delay_ms;   /* -1: not given (0 is a value: it overrides the variable) */
    long connect_retry_ms; /* -1: not given */
    bool crc, no_crc, markers, no_p2p, print_dir;
};

#define AT(field) CLI_AT(struct opts, field)

/* --rtr: comma-separated RTR type names, as the drop-in reads IWARP_MPA_RTR. */
static int parse_rtr(const char *arg, void *field)
{
    const char *p = arg;
    do {
        size_t n = strcspn(p, ",");
        if (!((n == 5 && !strncmp(p, "write", 5)) || (n == 4 && !strncmp(p, "read", 4)) ||
              (n == 4 && !strncmp(p, "send", 4))))
            return -1;
        p += n;
    } while (*p++ == ',');
    memcpy(field, &arg, sizeof arg);
    return 0;
}

/* A number of milliseconds from 0 to max into a long field. */
static int parse_ms(const char *arg, void *field, long max)
{
    char *end;
    errno = 0;
    long ms = strtol(arg, &end, 10);
    if (!*arg || *end || errno || ms < 0 || ms > max)
        return -1;
    memcpy(field, &ms, sizeof ms);
    return 0;
}

static int parse_first_delay(const char *arg, void *field)
{
    return parse_ms(arg, field, 60000);
}

static int parse_connect_retry(const char *arg, void *field)
{
    return parse_ms(arg, field, 3600000);
}

static const struct cli_opt rows[] = {
    {CLI_LINE("\noptions:")},
    {CLI_CRC(struct opts, crc), .help =
                                    "ask for MPA CRC32C or not (IWARP_MPA_CRC=1 or 0; default:\n"
                                    "the variable, else off, as siw)"},
    {CLI_OPTION(CLI_FLAG, "no-crc", 0, NULL), AT(no_crc)},
    {CLI_OPTION(CLI_FLAG, "markers", 0, NULL), AT(markers),
     .help = "ask the peer for MPA markers (IWARP_MPA_MARKERS=1)"},
    {CLI_OPTION(CLI_FLAG, "no-p2p", 0, NULL), AT(no_p2p),
     .help = "no RFC 6581 peer-to-peer mode (IWARP_MPA_P2P=0). By default\n"
             "the connector sends an RTR, so that either side may send\n"
             "first, as verbs programs expect"},
    {CLI_OPTION(CLI_FN, "rtr", 0, "TYPES"), AT(rtr), .fn = parse_rtr,
     .err = "invalid --rtr '{arg}' (write, read, send, comma-separated)",
     .help = "RTR types offered, comma-separated: write,read,send\n"
             "(IWARP_MPA_RTR; default all)"},
    {CLI_OPTION(CLI_FN, "first-delay", 0, "MS"), AT(first_delay_ms), .fn = parse_first_delay,
     .err = "invalid --first-delay '{arg}' (0..60000 ms)",
     .help = "connector: hold the first FPDU MS ms after the MPA Reply\n"
             "(IWARP_FIRST_FPDU_DELAY_MS; Linux siw 6.1 as responder\n"
             "needs about 250)"},
    {CLI_OPTION(CLI_FN, "connect-retry", 0, "MS"), AT(connect_retry_ms), .fn = parse_connect_retry,
     .err = "invalid --connect-retry '{arg}' (0..3600000 ms)",
     .help = "connector: for MS ms, dial again every 100 ms when the peer\n"
             "refuses (IWARP_CONNECT_RETRY_MS; perftest -R dials its data\n"
             "connection before its server listens, and crashes when refused)"},
    {CLI_OPTION(CLI_STR, "progress", 0, "MODE"), AT(progress),
     .help = "who moves data (IWARP_PROGRESS): thread, a progress thread\n"
             "(default), or caller, the program's own polling (lowest\n"
             "latency for programs that busy-poll their CQs from the thread\n"
             "that posts, e.g. perftest's bandwidth tests)"},
    {CLI_TRACE(struct opts, pcap), .help =
                                       "record every connection's MPA stream to FILE.pcap (sets\n"
                                       "IWARP_PCAP; default: the variable)"},
    {CLI_TRACE_OLD(struct opts, pcap)},
    {CLI_OPTION(CLI_STR, "dropin-dir", 0, "DIR"), AT(dir),
     .help = "the drop-in libraries' directory (default: IWARP_DROPIN_DIR,\n"
             "else dropin/ beside this command, else the installed one)"},
    {CLI_OPTION(CLI_FLAG, "print-dir", 0, NULL), AT(print_dir),
     .help = "print the drop-in directory and exit"},
    {CLI_HELP_ROW},
};

static void usage(FILE *out);
static const struct cli_spec spec =
    CLI_SPEC("iwarp exec", "Try `iwarp exec --help`.", usage, 24, rows);

static void usage(FILE *out)
{
    fputs("usage: iwarp exec [OPTIONS] [--] PROGRAM [ARGS...]\n\n"
          "Runs PROGRAM, an unmodified program linked against rdma-core's libibverbs and\n"
          "librdmacm, on libiwarp's drop-in replacements of the two: it sees one iWARP device\n"
          "per network interface that is up (loopback included) and talks MPA/TCP to any\n"
          "iWARP peer (Linux siw, iWARP RNICs, libiwarp). No kernel module, no root.\n"
          "Setting LD_LIBRARY_PATH to the drop-in directory does the same.\n",
          out);
    cli_help(&spec, out);
    fputs("\nThe environment variables can be set directly instead; see the drop-in's\n"
          "documentation (docs/dropin.md). Exit status: PROGRAM's; 2 for bad options; 127\n"
          "when PROGRAM or the drop-in libraries cannot be found.\n",
          out);
}

static bool has_dropin(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/libibverbs.so.1", dir) >= (int)sizeof path)
        return false;
    return access(path, R_OK) == 0;
}

#ifndef IWARP_DROPIN_FROM_BINDIR
#define IWARP_DROPIN_FROM_BINDIR "../lib/libiwarp/dropin"
#endif

/* DIR/sub, where DIR is the directory of the running iwarp binary. */
static const char *beside_self(const char *sub, char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash || (size_t)(slash - buf) + 2 + strlen(sub) > len)
        return NULL;
    snprintf(slash + 1, len - (size_t)(slash + 1 - buf), "%s", sub);
    return buf;
}

/* The first of: --dropin-dir, IWARP_DROPIN_DIR, dropin/ beside this binary (a build tree), the
 * install's directory relative to this binary (a relocated prefix), the configured install
 * directory. NULL when the one given, or every one, lacks libibverbs.so.1. */
static const char *find_dir(const char *given, char *buf, size_t len)
{
    if (given)
        return has_dropin(given) ? given : NULL;
    const char *env = getenv("IWARP_DROPIN_DIR");
    if (env && *env)
        return has_dropin(env) ? env : NULL; /* no fallback: the caller named this one */
    const char *subs[] = {"dropin", IWARP_DROPIN_FROM_BINDIR};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        const char *dir = beside_self(subs[i], buf, len);
        if (dir && has_dropin(dir))
            return dir;
    }
    return has_dropin(IWARP_DROPIN_INSTALL_DIR) ? IWARP_DROPIN_INSTALL_DIR : NULL;
}

static int set_env(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0) {
        fprintf(stderr, "iwarp exec: cannot set %s: %s\n", name, strerror(errno));
        return -1;
    }
    return 0;
}

/* The options as the drop-in's environment; each given option overrides the variable. */
static int export_options(const struct opts *o)
{
    char num[16];
    char retry[16];
    snprintf(num, sizeof num, "%ld", o->first_delay_ms);
    snprintf(retry, sizeof retry, "%ld", o->connect_retry_ms);
    if ((o->crc && set_env("IWARP_MPA_CRC", "1")) || (o->no_crc && set_env("IWARP_MPA_CRC", "0")) ||
        (o->markers && set_env("IWARP_MPA_MARKERS", "1")) ||
        (o->no_p2p && set_env("IWARP_MPA_P2P", "0")) ||
        (o->rtr && set_env("IWARP_MPA_RTR", o->rtr)) ||
        (o->first_delay_ms >= 0 && set_env("IWARP_FIRST_FPDU_DELAY_MS", num)) ||
        (o->connect_retry_ms >= 0 && set_env("IWARP_CONNECT_RETRY_MS", retry)) ||
        (o->progress && set_env("IWARP_PROGRESS", o->progress)) ||
        (o->pcap && set_env("IWARP_PCAP", o->pcap)))
        return -1;
    return 0;
}

static int prepend_library_path(const char *dir)
{
    const char *old = getenv("LD_LIBRARY_PATH");
    size_t len = strlen(dir) + (old ? strlen(old) + 1 : 0) + 1;
    char *path = malloc(len);
    if (!path) {
        fprintf(stderr, "iwarp exec: out of memory\n");
        return -1;
    }
    snprintf(path, len, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    int rc = set_env("LD_LIBRARY_PATH", path);
    free(path);
    return rc;
}

/* Whether the option argument arg ("--pcap") is followed by its value as the next argument. */
static bool takes_value(const char *arg)
{
    if (strncmp(arg, "--", 2) != 0 || strchr(arg, '='))
        return false;
    for (size_t i = 0; i < spec.nrows; i++)
        if (spec.rows[i].name && !strcmp(spec.rows[i].name, arg + 2))
            return spec.rows[i].kind == CLI_STR || spec.rows[i].kind == CLI_FN;
    return false;
}

int iwarp_cli_exec(int argc, char **argv)
{
    /* Our options end at "--" or at the program's name: the program's own options are never
     * ours (no argument permutation past that point). */
    int ours = 1;
    while (ours < argc && argv[ours][0] == '-' && strcmp(argv[ours], "--") != 0)
        ours += takes_value(argv[ours]) ? 2 : 1;
    if (ours > argc)
        ours = argc;
    struct opts o = {.first_delay_ms = -1, .connect_retry_ms = -1};
    struct cli_result r;
    int rc = cli_parse(&spec, ours, argv, &o, &r);
    if (rc == CLI_PARSE_HELP)
        return 0;
    if (rc != CLI_PARSE_OK)
        return 2;
    int prog = ours < argc && !strcmp(argv[ours], "--") ? ours + 1 : ours;
    if (o.crc && o.no_crc)
        return cli_error(&spec, "%s", "give --crc or --no-crc, not both");
    if (o.progress && strcmp(o.progress, "thread") != 0 && strcmp(o.progress, "caller") != 0)
        return cli_error(&spec, "invalid --progress '%s' (thread or caller)", o.progress);

    char buf[PATH_MAX];
    const char *dir = find_dir(o.dir, buf, sizeof buf);
    if (!dir) {
        fprintf(stderr,
                "iwarp exec: no drop-in libibverbs.so.1 in %s (build libiwarp with\n"
                "libibverbs-dev and librdmacm-dev installed, or give --dropin-dir)\n",
                o.dir ? o.dir
                : getenv("IWARP_DROPIN_DIR") && *getenv("IWARP_DROPIN_DIR")
                    ? getenv("IWARP_DROPIN_DIR")
                    : "dropin/ beside iwarp or " IWARP_DROPIN_INSTALL_DIR);
        return 127;
    }
    if (o.print_dir) {
        printf("%s\n", dir);
        return 0;
    }
    if (prog >= argc)
        return cli_error(&spec, "%s", "no PROGRAM to run");
    if (export_options(&o) || prepend_library_path(dir))
        return 127;
    execvp(argv[prog], argv + prog);
    fprintf(stderr, "iwarp exec: %s: %s\n", argv[prog], strerror(errno));
    return 127;
}
