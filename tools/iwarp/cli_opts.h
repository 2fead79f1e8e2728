/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Table-driven command-line options for the iwarp subcommands (perf, ping): one table of rows
 * says, per option, its names, what its value is, where it goes and its --help text; one parser
 * (getopt_long underneath: GNU argument permutation, unique long-name prefixes) fills an options
 * struct from it, and one printer writes --help from the same rows, so the two cannot drift.
 *
 * Rows are options, or --help lines that are not options (CLI_TEXT, CLI_DOC). An option's
 * destination is a field of the command's options struct, given with CLI_AT; numbers are stored
 * in the field's own width. Help texts and error messages may name {arg} (the value given),
 * {min}, {max} (the accepted range) and {def} (the default shown), which are filled in when they
 * are printed.
 */
#ifndef IWARP_TOOLS_CLI_OPTS_H
#define IWARP_TOOLS_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a row is, and for an option what its value is. */
enum cli_kind {
    CLI_TEXT,   /* not an option: a --help line, printed as it is ({min} etc. not filled) */
    CLI_DOC,    /* not an option: a --help entry with a label (e.g. a positional argument) */
    CLI_FLAG,   /* no value: the bool field becomes true (no field: only seen) */
    CLI_CLEAR,  /* no value: the bool field becomes false */
    CLI_COUNT,  /* no value: the int field counts the occurrences */
    CLI_IGNORE, /* no value: accepted and ignored */
    CLI_HELP,   /* no value: the parser prints the spec's usage, returns CLI_PARSE_HELP */
    CLI_STR,    /* the const char * field points at the value (inside argv) */
    CLI_UINT,   /* a decimal number in [min, max] (with CLI_KM: a K or M suffix, binary) */
    CLI_CHOICE, /* one of the '|'-separated words of arg: the field gets min + its index */
    CLI_FN,     /* fn(value, field) parses it; -1 refuses it */
};

/* CLI_UINT: accept a K (2^10) or M (2^20) suffix. */
#define CLI_KM 1u

struct cli_opt {
    enum cli_kind kind;
    const char *name;  /* long name without "--", or NULL */
    char short_name;   /* short option letter, or 0 */
    const char *arg;   /* the value's name in --help ("N"); CLI_CHOICE: the words, "tcp|sctp" */
    size_t off, size;  /* the field: CLI_AT(type, field); size 0: none */
    uint64_t min, max; /* CLI_UINT: the range accepted; {min}, {max} */
    uint64_t def;      /* {def}: the default --help shows */
    unsigned flags;    /* CLI_KM */
    int (*fn)(const char *arg, void *field); /* CLI_FN: 0, or -1 to refuse arg */
    const char *err;                         /* message for a refused value ({arg}, {min}, {max}) */
    const char *label; /* --help's left column; NULL: "-s, --size BYTES" from the names */
    const char *help;  /* --help text, lines separated by '\n'; NULL: not shown */
};

/* Row initialisers. An option: its kind, long name (or NULL), short letter (or 0) and the
 * value's name in --help (or NULL); the field of the options struct it fills; the range of a
 * CLI_UINT. A --help line; a --help entry that is no option. */
#define CLI_OPTION(k, lname, sname, argname) \
    .kind = (k), .name = (lname), .short_name = (sname), .arg = (argname)
#define CLI_AT(type, field)  .off = offsetof(type, field), .size = sizeof(((type *)0)->field)
#define CLI_RANGE(lo, hi)    .min = (lo), .max = (hi)
#define CLI_LINE(text)       .kind = CLI_TEXT, .help = (text)
#define CLI_ENTRY(lbl, text) .kind = CLI_DOC, .label = (lbl), .help = (text)

/* The lower layer, as every command that connects takes it: --transport tcp|sctp (the bool
 * field of type becomes true for sctp) and --sctp-mtu BYTES (the uint32_t field: the network MTU
 * DDP over SCTP mimics; llp_sctp needs at least IPv4's 576 plus an IP header). */
#define CLI_SCTP_MIN_MTU 596u
#define CLI_TRANSPORT(type, field) \
    CLI_OPTION(CLI_CHOICE, "transport", 0, "tcp|sctp"), CLI_AT(type, field)
#define CLI_SCTP_MTU(type, field)                                      \
    CLI_OPTION(CLI_UINT, "sctp-mtu", 0, "BYTES"), CLI_AT(type, field), \
        CLI_RANGE(CLI_SCTP_MIN_MTU, 65535)

/* The concepts every subcommand that has them spells alike (docs/cli.md has the table); each
 * command gives the row its own --help text (its default differs) after the macro.
 * --trace FILE.pcap: the packet trace (the const char * field); --pcap is its old spelling,
 * kept for scripts (CLI_TRACE_OLD: listed as such). --crc / --no-crc: MPA CRC32C on / off (the
 * bool field). -6, --ipv6: IPv6 addresses (the bool field). */
#define CLI_TRACE(type, field) CLI_OPTION(CLI_STR, "trace", 0, "FILE.pcap"), CLI_AT(type, field)
#define CLI_TRACE_OLD(type, field)                                    \
    CLI_OPTION(CLI_STR, "pcap", 0, "FILE.pcap"), CLI_AT(type, field), \
        .help = "the old spelling of --trace (still accepted)"
#define CLI_CRC(type, field) \
    CLI_OPTION(CLI_FLAG, "crc", 0, NULL), CLI_AT(type, field), .label = "--crc, --no-crc"
#define CLI_NO_CRC(type, field) CLI_OPTION(CLI_CLEAR, "no-crc", 0, NULL), CLI_AT(type, field)
#define CLI_IPV6(type, field)   CLI_OPTION(CLI_FLAG, "ipv6", '6', NULL), CLI_AT(type, field)
#define CLI_HELP_ROW            CLI_OPTION(CLI_HELP, "help", 'h', NULL), .help = "this text"

/* A command's table: its error prefix and hint line, its whole --help text (usage, which lists
 * the rows with cli_help), the column descriptions start in there, and the rows. */
#define CLI_SPEC(p, h, u, c, r)                                          \
    {                                                                    \
        .prog = (p), .hint = (h), .usage = (u), .col = (c), .rows = (r), \
        .nrows = sizeof(r) / sizeof((r)[0])                              \
    }
struct cli_spec {
    const char *prog;           /* "iwarp perf": the prefix of error messages */
    const char *hint;           /* the line after an error message */
    void (*usage)(FILE *out);   /* prints the whole --help text (which calls cli_help) */
    int col;                    /* --help: the column descriptions start in */
    const struct cli_opt *rows; /* at most CLI_MAX_ROWS */
    size_t nrows;
};

#define CLI_MAX_ROWS 64

/* What cli_parse found besides the values it stored. */
struct cli_result {
    int first_arg;           /* argv index of the first argument that is not an option */
    bool seen[CLI_MAX_ROWS]; /* per row: the option was given */
};

enum { CLI_PARSE_OK = 0, CLI_PARSE_HELP = 1, CLI_PARSE_USAGE = 2 };

/*
 * Parse argv[1 ..] (argv[0] is the subcommand's name) into the options struct at base, whose
 * fields the caller has set to their defaults. Returns CLI_PARSE_OK; CLI_PARSE_HELP after
 * spec->usage printed --help to stdout for a CLI_HELP option; CLI_PARSE_USAGE after printing the
 * reason for an unknown option, a missing or refused value or a value given to an option that takes
 * none (cli_error's format). Ownership: string fields point into argv. Not reentrant (getopt).
 */
int cli_parse(const struct cli_spec *spec, int argc, char **argv, void *base,
              struct cli_result *res);

/* Whether the option whose long name is name was given (name must be in the table). */
bool cli_seen(const struct cli_spec *spec, const struct cli_result *res, const char *name);

/* The option rows of spec as --help lists them, to out. */
void cli_help(const struct cli_spec *spec, FILE *out);

/* A usage error: "PROG: message" and the hint line on stderr. Returns CLI_PARSE_USAGE. */
int cli_error(const struct cli_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
