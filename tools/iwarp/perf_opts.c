/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: the command line. The options are a contract (scripts call them): one table
 * (rows) gives their names, values and --help text (cli_opts.h); usage() adds the rest.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "perf.h"

/* -D: seconds, 0 < SEC <= 86400. */
static int parse_duration(const char *arg, void *field)
{
    char *end;
    errno = 0;
    double d = strtod(arg, &end);
    if (errno || end == arg || *end || !(d > 0) || d > 86400)
        return -1;
    memcpy(field, &d, sizeof d);
    return 0;
}

static int parse_tx_batch(const char *arg, void *field)
{
    char *end;
    errno = 0;
    unsigned long us = strtoul(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || us > 1000000)
        return -1;
    struct perf_tx_batch b = {.set = true, .us = (uint32_t)us};
    memcpy(field, &b, sizeof b);
    return 0;
}

#define AT(field) CLI_AT(struct perf_opts, field)

/* The options and their --help, in --help's order. */
static const struct cli_opt rows[] = {
    {CLI_LINE("\nWhere:")},
    {CLI_ENTRY("(no peer)", "loopback: server and client in this process on 127.0.0.1, an\n"
                            "ephemeral port; client thread on CPU 0, server on CPU 1")},
    {CLI_OPTION(CLI_FLAG, "server", 0, NULL), AT(server),
     .help = "wait for one client on port N, serve it, exit; it listens on\n"
             ":: for IPv4 and IPv6 clients alike (0.0.0.0 on a system\n"
             "without IPv6; --perftest: 0.0.0.0)"},
    {CLI_IPV6(struct perf_opts, ipv6),
     .help = "IPv6: loopback runs on ::1 (default 127.0.0.1) and HOST is\n"
             "resolved to an IPv6 address (default: either family);\n"
             "--server listens on :: with or without it"},
    {CLI_ENTRY("HOST", "run the test against `iwarp perf --server` on HOST")},
    {CLI_OPTION(CLI_UINT, "port", 'p', "N"), AT(port), CLI_RANGE(1, 65535),
     .def = PERF_DEFAULT_PORT, .err = "--port needs a number {min}..{max}, not '{arg}'",
     .help = "TCP port; with --transport sctp the UDP port SCTP runs over\n"
             "(RFC 6951) (default {def})"},
    {CLI_LINE("\nWhat:")},
    {CLI_OPTION(CLI_CHOICE, "op", 0, "write|read|send|atomic|cmp-swap|write-imm"), AT(op),
     .err = "--op must be write, read, send, atomic, cmp-swap or write-imm, not '{arg}'",
     .help = "operation (default write); atomic (FetchAdd), cmp-swap\n"
             "(CmpSwap) and write-imm (RDMA Write with Immediate) are\n"
             "RFC 7306: libiwarp on both sides"},
    {CLI_OPTION(CLI_UINT, "size", 's', "BYTES"), AT(sizes[0]),
     CLI_RANGE(PERF_MIN_SIZE, PERF_MAX_SIZE), .def = 65536, .flags = CLI_KM,
     .err = "--size must be {min} .. {max} (8M) octets, not '{arg}'",
     .help = "message size, {min} .. {max}; K and M suffixes are KiB, MiB\n"
             "(default {def})"},
    {CLI_OPTION(CLI_FLAG, "all-sizes", 'a', NULL), .help = "every power of two from 2 B to 8 MiB"},
    {CLI_OPTION(CLI_UINT, "iters", 'n', "N"), AT(iters), CLI_RANGE(1, UINT64_C(1) << 40),
     .err = "--iters needs a positive number, not '{arg}'",
     .help = "messages per QP, size and pass (default 5000 for bandwidth with\n"
             "at most 1 GiB per size, 1000 for latency)"},
    {CLI_OPTION(CLI_FN, "duration", 'D', "SEC"), AT(duration), .fn = parse_duration,
     .err = "--duration needs seconds (0 < SEC <= 86400), not '{arg}'",
     .help = "run each size and pass for SEC seconds instead"},
    {CLI_OPTION(CLI_UINT, "qd", 0, "N"), AT(qd), CLI_RANGE(1, PERF_MAX_QD), .def = 16,
     .err = "--qd must be {min} .. {max}, not '{arg}'",
     .help = "operations in flight per QP (default {def}; at most {max})"},
    {CLI_OPTION(CLI_UINT, "qps", 0, "N"), AT(qps), CLI_RANGE(1, PERF_MAX_QPS), .def = 1,
     .err = "--qps must be {min} .. {max}, not '{arg}'",
     .help = "QPs (connections), bandwidth only (default {def}; at most {max})"},
    {CLI_OPTION(CLI_FLAG, "lat", 0, NULL), AT(lat),
     .help = "latency instead of bandwidth: write = ping-pong of Writes, each\n"
             "side polling its buffer's last octet (RTT/2); send = Send\n"
             "ping-pong (RTT/2); read = one Read at a time (full time)"},
    {CLI_LINE("\nHow:")},
    {CLI_CRC(struct perf_opts, crc),
     .help = "MPA CRC32C on or off (default on; a server without either\n"
             "follows the client; --perftest: off)"},
    {CLI_NO_CRC(struct perf_opts, crc)},
    {CLI_OPTION(CLI_CHOICE, "mpa-rev", 0, "1|2"), AT(mpa_rev), .min = 1,
     .err = "--mpa-rev must be 1 or 2, not '{arg}'",
     .help = "MPA revision of the Request (default 2, RFC 6581)"},
    {CLI_TRANSPORT(struct perf_opts, sctp), .err = "--transport must be tcp or sctp, not '{arg}'",
     .help = "lower layer (default tcp). sctp: DDP over SCTP (RFC 5043,\n"
             "RFC 6581 §7), usrsctp over UDP; give it to the server and the\n"
             "client alike. There is no MPA over SCTP (SCTP's CRC32c covers\n"
             "every packet), so --crc, --no-crc and --mpa-rev are refused\n"
             "with it (exit 2), as are --compare-tcp (a plain-TCP baseline\n"
             "says nothing about SCTP; bench/bench_usrsctp compares with raw\n"
             "usrsctp) and --perftest (perftest's protocol is TCP's)"},
    {CLI_SCTP_MTU(struct perf_opts, sctp_mtu),
     .err = "--sctp-mtu must be {min} .. {max} octets, not '{arg}'",
     .help = "with --transport sctp: the network MTU the SCTP packets mimic,\n"
             "{min} .. {max} (default 1500; IPv6 needs at least 616); DDP\n"
             "segments are sized so that nothing fragments"},
    {CLI_OPTION(CLI_FN, "tx-batch", 0, "US"), AT(tx_batch), .fn = parse_tx_batch,
     .err = "--tx-batch needs microseconds (0 .. 1000000), not '{arg}'",
     .help = "TCP transmit batching window (iwarp_ctx_attr.tx_batch_us): a\n"
             "post less than US after a write that the peer has not\n"
             "answered joins a batch; 0: off (default: the library's, 50)"},
    {CLI_OPTION(CLI_FLAG, "busy-poll", 0, NULL), AT(busy_poll),
     .help = "both sides drive progress themselves and spin on the CQ, as\n"
             "perftest does by default (its -e sleeps on events); default\n"
             "here: a progress thread per side and completion-channel\n"
             "events (iwarp_req_notify_cq + iwarp_get_cq_event_timeout)"},
    {CLI_OPTION(CLI_FLAG, "verify", 0, NULL), AT(verify),
     .help = "check every octet: read data and received Sends at once, each\n"
             "latency message, and after a write phase the server compares\n"
             "every slot written; each bandwidth operation in flight gets its\n"
             "own buffer, where by default a QP's share one (as perftest's);\n"
             "figures then include the checking"},
    {CLI_OPTION(CLI_FLAG, "compare-tcp", 0, NULL), AT(compare_tcp),
     .help = "also run, with the same sizes, iterations, pinning and polling,\n"
             "plain TCP (bandwidth: one stream of writes of the message size per\n"
             "QP, each from and into its QP's buffer, more than one driven by\n"
             "epoll; latency: a TCP_NODELAY ping-pong) and print the ratio"},
    {CLI_OPTION(CLI_UINT, "passes", 0, "N"), AT(passes), CLI_RANGE(1, PERF_MAX_PASSES),
     .err = "--passes must be {min} .. {max}, not '{arg}'",
     .help = "passes per size; figures are medians (default 1, 5 with\n"
             "--compare-tcp; at most {max})"},
    {CLI_OPTION(CLI_CLEAR, "no-pin", 0, NULL), AT(pin),
     .help = "loopback: leave thread placement to the scheduler"},
    {CLI_LINE("\nOutput:\n"
              "  a perftest-style table on stdout (1 MB = 10^6 octets, where perftest's MB/sec\n"
              "  are MiB/s, 2^20: see --units; peak = best 10 ms window); a progress line on\n"
              "  stderr when it is a terminal and a run lasts over 2 s")},
    {CLI_OPTION(CLI_CHOICE, "units", 0, "si|perftest"), AT(units),
     .err = "--units must be si or perftest, not '{arg}'",
     .help = "what MB means in the table, the JSON and the plot: si, 10^6\n"
             "octets (default); perftest, 2^20 octets (MiB), as perftest's\n"
             "BW columns labelled MB/sec"},
    {CLI_OPTION(CLI_FLAG, "json", 0, NULL), AT(json),
     .help = "one JSON document on stdout instead of the table"},
    {CLI_OPTION(CLI_FLAG, "stats", 0, NULL), AT(stats),
     .help = "at the end, both endpoints' counters (iwarp_query_ctx_stats):\n"
             "DDP segments and payload octets each way, CRC errors, Terminates\n"
             "by cause, flushed WRs, TCP retransmissions (stderr with --json)"},
    {CLI_OPTION(CLI_STR, "plot", 0, "FILE.svg"), AT(plot),
     .help = "a chart of bandwidth (or latency) against message size"},
    {CLI_TRACE(struct perf_opts, trace),
     .help = "capture the client's connections (loopback: both directions of\n"
             "each) as the library's packet trace (SCTP: its packets in\n"
             "UDP, RFC 6951); default $IWARP_PCAP"},
    {CLI_OPTION(CLI_FLAG, "perftest", 0, NULL), AT(perftest),
     .help = "speak perftest's own protocol (see below)"},
    {CLI_HELP_ROW},
};

static void usage(FILE *f);
static const struct cli_spec spec =
    CLI_SPEC("iwarp perf", "Run `iwarp perf --help` for the options.", usage, 23, rows);

static void usage(FILE *f)
{
    fputs(
        "usage: iwarp perf [--server | HOST] [-6|--ipv6] [-p|--port N]\n"
        "                  [--op write|read|send|atomic|cmp-swap|write-imm]\n"
        "                  [-s|--size BYTES | -a|--all-sizes] [-n|--iters N | -D|--duration SEC]\n"
        "                  [--qd N] [--qps N] [--crc | --no-crc] [--mpa-rev 1|2]\n"
        "                  [--transport tcp|sctp] [--sctp-mtu BYTES] [--tx-batch US] [--lat]\n"
        "                  [--busy-poll] [--verify] [--compare-tcp] [--passes N] [--no-pin]\n"
        "                  [--units si|perftest] [--json] [--stats] [--plot FILE.svg]\n"
        "                  [--trace FILE.pcap] [--perftest]\n"
        "\n"
        "Bandwidth or latency of RDMA Write, RDMA Read or Send through libiwarp (RDMAP/DDP/MPA\n"
        "over kernel TCP, or RDMAP/DDP over SCTP with --transport sctp), in the manner of\n"
        "perftest's ib_write_bw / ib_send_lat. Two differences from perftest by default:\n"
        "1 MB = 10^6 octets (perftest: 2^20; --units perftest), and completions are waited\n"
        "for with events (perftest polls; --busy-poll).\n",
        f);
    cli_help(&spec, f);
    fprintf(
        f,
        "\n"
        "Across machines the client learns everything over the connection itself. Each MPA\n"
        "Request carries the client's hello as private data (%d octets, big-endian):\n"
        "  \"IWPF\", version 1, op, flags (1 latency, 2 verify, 4 CRC), QP index, QPs, depth,\n"
        "  largest size, the client's buffer address, STag and length.\n"
        "The MPA Reply carries the server's welcome (%d octets): \"IWPF\", version, status,\n"
        "receive depth, its buffer address, STag and length. Over SCTP the Session Initiate\n"
        "and Accept (RFC 5043 §6, RFC 6581 §7) carry them instead. Then, on QP 0, %d-octet\n"
        "Sends:\n"
        "  PHASE(kind, size, iterations, number) -> READY (TCP port for a baseline)\n"
        "  ... the phase's traffic; a zero-length Send on every QP ends it ...\n"
        "  -> RESULT(messages, octets, octets wrong); finally PHASE(quit).\n"
        "Send bandwidth is flow-controlled by CREDIT Sends from the server (iWARP has no RNR\n"
        "retry: a Send without a posted receive is fatal, RFC 5040 §5.3 / RFC 5041 §7.1).\n"
        "\n"
        "--perftest: speak perftest's own protocol (ib_write_bw, ib_read_bw, ib_send_bw and\n"
        "  their _lat twins, run with -R) instead: --server serves one such client, HOST runs\n"
        "  against such a server. Both sides must be given the same test (--op, --lat), -s and\n"
        "  -n (perftest's defaults when -n is not given); one size, one QP. MPA CRC is off\n"
        "  unless --crc (siw's and perftest's default). --verify checks the data when the\n"
        "  peer is iwarp perf --perftest too (write latency: always). The protocol is\n"
        "  described in tools/iwarp/perf_perftest.c.\n"
        "\n"
        "Exit status: 0 success, 1 failure (connection, protocol, --verify mismatch), 2 usage.\n",
        PERF_HELLO_LEN, PERF_WELCOME_LEN, PERF_CTL_LEN);
}

/* The sizes of -a: powers of two from 2 B to 8 MiB (perftest's -a). */
static void all_sizes(struct perf_opts *o)
{
    o->nsizes = 0;
    for (uint32_t s = PERF_MIN_SIZE; s <= PERF_MAX_SIZE; s <<= 1)
        o->sizes[o->nsizes++] = s;
}

/* The combinations of options that do not apply: the reason on stderr, 2; else 0. */
static int check(struct perf_opts *o, const struct cli_result *r)
{
    bool all = cli_seen(&spec, r, "all-sizes"), passes_given = cli_seen(&spec, r, "passes");
    if (o->server && o->host)
        return cli_error(&spec, "--server takes no HOST; got '%s'", o->host);
    if (all && cli_seen(&spec, r, "size"))
        return cli_error(&spec, "%s", "give --size or --all-sizes, not both");
    if (cli_seen(&spec, r, "iters") && cli_seen(&spec, r, "duration"))
        return cli_error(&spec, "%s", "give --iters or --duration, not both");
    if (o->lat && o->qps > 1)
        return cli_error(&spec, "%s", "latency uses one QP; --qps must be 1 with --lat");
    if (o->plot) {
        size_t n = strlen(o->plot);
        if (n < 5 || strcmp(o->plot + n - 4, ".svg"))
            return cli_error(&spec, "--plot needs a file name ending in .svg, not '%s'", o->plot);
    }
    if (o->perftest && !o->server && !o->host)
        return cli_error(&spec, "%s",
                         "--perftest needs --server or a HOST running perftest's server");
    if (o->perftest && (all || o->qps > 1 || o->duration > 0 || o->compare_tcp || passes_given))
        return cli_error(&spec, "%s",
                         "--perftest runs one size, one QP and one pass by iterations");
    if (perf_op_atomic(o->op) && (all || (cli_seen(&spec, r, "size") && o->sizes[0] != 8)))
        return cli_error(&spec, "%s", "atomics move 8 octets: --size 8 or no --size");
    if ((perf_op_atomic(o->op) || o->op == PERF_OP_WRITE_IMM) && (o->perftest || o->verify))
        return cli_error(&spec, "%s",
                         "--op atomic, cmp-swap and write-imm (RFC 7306) run libiwarp to "
                         "libiwarp without --perftest or --verify");
    if (o->sctp_mtu && !o->sctp)
        return cli_error(&spec, "%s", "--sctp-mtu needs --transport sctp");
    if (o->sctp) {
        /* RFC 5043 runs DDP straight on SCTP: no MPA framing, CRC or markers (SCTP's CRC32c,
         * RFC 4960 §6.8, covers every packet), and either side may send first (RFC 6581 §7) */
        if (o->crc_given || cli_seen(&spec, r, "mpa-rev"))
            return cli_error(&spec, "%s",
                             "--crc, --no-crc and --mpa-rev are MPA options; DDP over SCTP "
                             "(--transport sctp) has no MPA: leave them out");
        if (o->compare_tcp)
            return cli_error(&spec, "%s",
                             "--compare-tcp compares libiwarp over TCP with plain TCP; it does "
                             "not apply to --transport sctp (bench/bench_usrsctp measures "
                             "libiwarp over SCTP next to raw usrsctp)");
        if (o->perftest)
            return cli_error(&spec, "%s",
                             "--perftest speaks perftest's protocol over TCP (MPA) only; it "
                             "does not apply to --transport sctp");
    }
    return 0;
}

/*
 * Parse the perf subcommand's arguments into o (argv[0] is "perf").
 * Returns 0 to run, 1 when --help was printed (exit status 0), 2 after a usage error was
 * printed to stderr (exit status 2). Ownership: o keeps pointers into argv.
 */
int perf_opts_parse(int argc, char **argv, struct perf_opts *o)
{
    *o = (struct perf_opts){
        .op = PERF_OP_WRITE, .qd = 16, .qps = 1, .crc = true, .mpa_rev = 2, .pin = true};
    o->sizes[0] = 65536;
    o->nsizes = 1;
    struct cli_result r;
    int rc = cli_parse(&spec, argc, argv, o, &r);
    if (rc != CLI_PARSE_OK)
        return rc;
    if (r.first_arg < argc - 1)
        return cli_error(&spec, "more than one HOST given; extra: '%s'", argv[r.first_arg + 1]);
    if (r.first_arg == argc - 1)
        o->host = argv[r.first_arg];
    o->crc_given = cli_seen(&spec, &r, "crc") || cli_seen(&spec, &r, "no-crc");
    rc = check(o, &r);
    if (rc != 0)
        return rc;
    if (o->sctp)
        o->crc = false;
    if (cli_seen(&spec, &r, "all-sizes"))
        all_sizes(o);
    if (perf_op_atomic(o->op))
        o->sizes[0] = 8;
    if (!cli_seen(&spec, &r, "passes"))
        o->passes = o->compare_tcp ? 5 : 1;
    if (!cli_seen(&spec, &r, "iters") && !(o->duration > 0)) {
        o->iters = o->lat ? 1000 : 5000;
        o->iters_auto = true;
    }
    return 0;
}

/* perftest's test name of op: "RDMA_Write", "RDMA_Read", "Send", "Atomic" (perftest's
 * ib_atomic_* name FetchAdd and CmpSwap so too), "Atomic_CmpSwap", "RDMA_Write_Imm". */
const char *perf_op_title(enum perf_op op)
{
    static const char *const titles[] = {"RDMA_Write", "RDMA_Read",      "Send",
                                         "Atomic",     "Atomic_CmpSwap", "RDMA_Write_Imm"};
    return (unsigned)op < sizeof titles / sizeof titles[0] ? titles[op] : "?";
}

/* The --op spelling of op. */
const char *perf_op_name(enum perf_op op)
{
    static const char *const names[] = {"write", "read", "send", "atomic", "cmp-swap", "write-imm"};
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}
