/* SPDX-License-Identifier: BSD-2-Clause */
/* Table-driven command-line options: the parser and the --help printer (cli_opts.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli_opts.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static bool takes_value(const struct cli_opt *r)
{
    return r->kind == CLI_STR || r->kind == CLI_UINT || r->kind == CLI_CHOICE || r->kind == CLI_FN;
}

static bool is_option(const struct cli_opt *r)
{
    return r->kind != CLI_TEXT && r->kind != CLI_DOC;
}

/* Appends template t to buf (cap octets, NUL-terminated) with {arg}, {min}, {max} and {def}
 * filled in from r and arg (NULL: ""). */
static void expand(char *buf, size_t cap, const char *t, const struct cli_opt *r, const char *arg)
{
    size_t n = strlen(buf);
    while (*t && n + 1 < cap) {
        char num[24];
        const char *fill = NULL;
        if (!strncmp(t, "{arg}", 5))
            fill = arg ? arg : "";
        else if (!strncmp(t, "{min}", 5) || !strncmp(t, "{max}", 5) || !strncmp(t, "{def}", 5))
            fill = num;
        if (fill == num)
            snprintf(num, sizeof num, "%" PRIu64,
                     t[2] == 'i'   ? r->min
                     : t[2] == 'a' ? r->max
                                   : r->def);
        if (fill) {
            snprintf(buf + n, cap - n, "%s", fill);
            n += strlen(buf + n);
            t += 5;
        } else {
            buf[n++] = *t++;
            buf[n] = '\0';
        }
    }
}

int cli_error(const struct cli_spec *spec, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", spec->prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%s\n", spec->hint);
    va_end(ap);
    return CLI_PARSE_USAGE;
}

/* Row r refuses value arg: its message. */
static int refuse(const struct cli_spec *spec, const struct cli_opt *r, const char *arg)
{
    char msg[512] = "";
    expand(msg, sizeof msg, r->err ? r->err : "invalid value '{arg}'", r, arg);
    return cli_error(spec, "%s", msg);
}

/* A whole decimal number (optional K/M suffix) into *v; false when s is not one. */
static bool parse_uint(const char *s, bool km, uint64_t *v)
{
    if (!*s || *s == '-')
        return false;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    unsigned shift = 0;
    if (km && (*end == 'K' || *end == 'k'))
        shift = 10;
    else if (km && (*end == 'M' || *end == 'm'))
        shift = 20;
    if (shift) {
        if (x > UINT64_MAX >> shift)
            return false;
        x <<= shift;
        end++;
    }
    *v = x;
    return *end == '\0';
}

/* Stores v in the size-octet unsigned field at p. */
static void store_uint(void *p, size_t size, uint64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    const void *src = size == 1   ? (const void *)&u8
                      : size == 2 ? (const void *)&u16
                      : size == 4 ? (const void *)&u32
                                  : (const void *)&v;
    memcpy(p, src, size);
}

/* The index of word in the '|'-separated list, or -1. */
static int choice_index(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (int i = 0; *list; i++) {
        const char *bar = strchr(list, '|');
        size_t n = bar ? (size_t)(bar - list) : strlen(list);
        if (n == len && !strncmp(list, word, n))
            return i;
        if (!bar)
            break;
        list = bar + 1;
    }
    return -1;
}

/* Row r was given (with arg when it takes a value): store it in base. */
static int take(const struct cli_spec *spec, const struct cli_opt *r, const char *arg, void *base)
{
    uint8_t *field = (uint8_t *)base + r->off;
    uint64_t v;
    switch (r->kind) {
    case CLI_FLAG:
    case CLI_CLEAR:
        if (r->size)
            store_uint(field, r->size, r->kind == CLI_FLAG);
        return 0;
    case CLI_COUNT: {
        int n;
        memcpy(&n, field, sizeof n);
        n++;
        memcpy(field, &n, sizeof n);
        return 0;
    }
    case CLI_STR:
        memcpy(field, &arg, sizeof arg);
        return 0;
    case CLI_UINT:
        if (!parse_uint(arg, r->flags & CLI_KM, &v) || v < r->min || v > r->max)
            return refuse(spec, r, arg);
        store_uint(field, r->size, v);
        return 0;
    case CLI_CHOICE: {
        int i = choice_index(r->arg, arg);
        if (i < 0)
            return refuse(spec, r, arg);
        store_uint(field, r->size, r->min + (uint64_t)i);
        return 0;
    }
    case CLI_FN:
        return r->fn(arg, field) == 0 ? 0 : refuse(spec, r, arg);
    default: /* CLI_IGNORE */
        return 0;
    }
}

/* The row getopt_long's value c names (see cli_parse), or NULL. */
static const struct cli_opt *row_of(const struct cli_spec *spec, int c)
{
    if (c >= 256)
        return (size_t)(c - 256) < spec->nrows ? &spec->rows[c - 256] : NULL;
    for (size_t i = 0; i < spec->nrows; i++)
        if (is_option(&spec->rows[i]) && spec->rows[i].short_name == c)
            return &spec->rows[i];
    return NULL;
}

/* The option as the user wrote it, for an error: the element's "--name" part when it is a long
 * option, else "-c". */
static void spelled(char *buf, size_t cap, const char *elem, int c)
{
    if (elem && !strncmp(elem, "--", 2))
        snprintf(buf, cap, "%.*s", (int)strcspn(elem, "="), elem);
    else
        snprintf(buf, cap, "-%c", c > 0 && c < 256 ? c : '?');
}

int cli_parse(const struct cli_spec *spec, int argc, char **argv, void *base,
              struct cli_result *res)
{
    struct option longs[CLI_MAX_ROWS + 1];
    char shorts[2 * CLI_MAX_ROWS + 2];
    size_t nl = 0, ns = 0;
    shorts[ns++] = ':'; /* a missing value is ':', not '?' */
    memset(res, 0, sizeof *res);
    if (spec->nrows > CLI_MAX_ROWS)
        return cli_error(spec, "%s", "too many options in the table");
    for (size_t i = 0; i < spec->nrows; i++) {
        const struct cli_opt *r = &spec->rows[i];
        if (!is_option(r))
            continue;
        int has = takes_value(r) ? required_argument : no_argument;
        int val = r->short_name ? (unsigned char)r->short_name : 256 + (int)i;
        if (r->name)
            longs[nl++] = (struct option){r->name, has, NULL, val};
        if (r->short_name) {
            shorts[ns++] = r->short_name;
            if (has)
                shorts[ns++] = ':';
        }
    }
    longs[nl] = (struct option){NULL, 0, NULL, 0};
    shorts[ns] = '\0';
    optind = 1;
    opterr = 0;
    int c;
    char what[64];
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const char *elem = argv[optind - 1];
        if (c == ':') {
            spelled(what, sizeof what, elem, optopt);
            if (optopt >= 256 && strncmp(elem, "--", 2))
                snprintf(what, sizeof what, "--%s", spec->rows[optopt - 256].name);
            return cli_error(spec, "option '%s' needs a value", what);
        }
        if (c == '?') {
            /* getopt_long: optopt 0 for an unknown long option; an option's value for a
             * known one given a value it does not take; else the unknown short letter */
            if (optopt != 0 && row_of(spec, optopt)) {
                spelled(what, sizeof what, elem, optopt);
                return cli_error(spec, "option '%s' takes no value", what);
            }
            if (optopt > 0 && optopt < 256)
                return cli_error(spec, "unknown option '-%c'", optopt);
            return cli_error(spec, "unknown option '%s'", elem);
        }
        const struct cli_opt *r = row_of(spec, c);
        if (!r) /* not a value this table gave getopt_long */
            return cli_error(spec, "unknown option '%s'", elem);
        res->seen[r - spec->rows] = true;
        if (r->kind == CLI_HELP) {
            spec->usage(stdout);
            return CLI_PARSE_HELP;
        }
        int rc = take(spec, r, optarg, base);
        if (rc != 0)
            return rc;
    }
    res->first_arg = optind;
    return CLI_PARSE_OK;
}

bool cli_seen(const struct cli_spec *spec, const struct cli_result *res, const char *name)
{
    for (size_t i = 0; i < spec->nrows; i++)
        if (is_option(&spec->rows[i]) && spec->rows[i].name && !strcmp(spec->rows[i].name, name))
            return res->seen[i];
    return false;
}

void cli_help(const struct cli_spec *spec, FILE *out)
{
    for (size_t i = 0; i < spec->nrows; i++) {
        const struct cli_opt *r = &spec->rows[i];
        if (r->kind == CLI_TEXT) {
            fprintf(out, "%s\n", r->help);
            continue;
        }
        if (!r->help)
            continue;
        char label[96];
        if (r->label)
            snprintf(label, sizeof label, "%s", r->label);
        else if (r->short_name && r->name)
            snprintf(label, sizeof label, "-%c, --%s", r->short_name, r->name);
        else if (r->name)
            snprintf(label, sizeof label, "--%s", r->name);
        else
            snprintf(label, sizeof label, "-%c", r->short_name);
        if (r->arg && !r->label)
            snprintf(label + strlen(label), sizeof label - strlen(label), " %s", r->arg);
        char text[2048] = "";
        expand(text, sizeof text, r->help, r, NULL);
        int w = fprintf(out, "  %s", label);
        /* the description in its column, or two spaces after a label too long for it (two at
         * least: one space is the label's own, scripts/man-options.py reads it so) */
        fprintf(out, "%*s", w + 2 <= spec->col ? spec->col - w : 2, "");
        for (const char *t = text; *t; t++) {
            fputc(*t, out);
            if (*t == '\n')
                fprintf(out, "%*s", spec->col, "");
        }
        fputc('\n', out);
    }
}
