/*
 * iwarp perf: the command line. The options are a contract (scripts call them): see usage().
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: iwarp perf [--server | HOST] [-p|--port N] [--op write|read|send]\n"
        "                  [-s|--size BYTES | -a|--all-sizes] [-n|--iters N | -D|--duration SEC]\n"
        "                  [--qd N] [--qps N] [--crc | --no-crc] [--mpa-rev 1|2]\n"
        "                  [--transport tcp|sctp] [--sctp-mtu BYTES] [--lat] [--busy-poll]\n"
        "                  [--verify] [--compare-tcp] [--passes N] [--no-pin] [--json]\n"
        "                  [--plot FILE.svg] [--trace FILE.pcap] [--perftest]\n"
        "\n"
        "Bandwidth or latency of RDMA Write, RDMA Read or Send through libiwarp (RDMAP/DDP/MPA\n"
        "over kernel TCP, or RDMAP/DDP over SCTP with --transport sctp), in the manner of\n"
        "perftest's ib_write_bw / ib_send_lat.\n"
        "\n"
        "Where:\n"
        "  (no peer)            loopback: server and client in this process on 127.0.0.1, an\n"
        "                       ephemeral port; client thread on CPU 0, server on CPU 1\n"
        "  --server             wait for one client on port N (all addresses), serve it, exit\n"
        "  HOST                 run the test against `iwarp perf --server` on HOST\n"
        "  -p, --port N         TCP port; with --transport sctp the UDP port SCTP runs over\n"
        "                       (RFC 6951) (default %d)\n"
        "\n"
        "What:\n"
        "  --op write|read|send operation (default write)\n"
        "  -s, --size BYTES     message size, %u .. %u; K and M suffixes are KiB, MiB\n"
        "                       (default 65536)\n"
        "  -a, --all-sizes      every power of two from 2 B to 8 MiB\n"
        "  -n, --iters N        messages per QP, size and pass (default 5000 for bandwidth with\n"
        "                       at most 1 GiB per size, 1000 for latency)\n"
        "  -D, --duration SEC   run each size and pass for SEC seconds instead\n"
        "  --qd N               operations in flight per QP (default 16; at most %d)\n"
        "  --qps N              QPs (connections), bandwidth only (default 1; at most %d)\n"
        "  --lat                latency instead of bandwidth: write = ping-pong of Writes, each\n"
        "                       side polling its buffer's last octet (RTT/2); send = Send\n"
        "                       ping-pong (RTT/2); read = one Read at a time (full time)\n"
        "\n"
        "How:\n"
        "  --crc, --no-crc      MPA CRC32C on or off (default on; a server without either\n"
        "                       follows the client)\n"
        "  --mpa-rev 1|2        MPA revision of the Request (default 2, RFC 6581)\n"
        "  --transport tcp|sctp lower layer (default tcp). sctp: DDP over SCTP (RFC 5043,\n"
        "                       RFC 6581 §7), usrsctp over UDP; give it to the server and the\n"
        "                       client alike. There is no MPA over SCTP (SCTP's CRC32c covers\n"
        "                       every packet), so --crc, --no-crc and --mpa-rev are refused\n"
        "                       with it (exit 2), as are --compare-tcp (a plain-TCP baseline\n"
        "                       says nothing about SCTP; bench/bench_usrsctp compares with raw\n"
        "                       usrsctp) and --perftest (perftest's protocol is TCP's)\n"
        "  --sctp-mtu BYTES     with --transport sctp: the network MTU the SCTP packets mimic,\n"
        "                       %u .. 65535 (default 1500; IPv6 needs at least 616); DDP\n"
        "                       segments are sized so that nothing fragments\n"
        "  --busy-poll          both sides drive progress themselves and spin on the CQ;\n"
        "                       default: a progress thread per side and completion-channel\n"
        "                       events (iwarp_req_notify_cq + iwarp_get_cq_event)\n"
        "  --verify             check every octet: read data and received Sends at once, each\n"
        "                       latency message, and after a write phase the server compares\n"
        "                       every slot written (figures then include the checking)\n"
        "  --compare-tcp        also run, with the same sizes, iterations, pinning and polling,\n"
        "                       plain TCP (bandwidth: one stream of writes of the message size;\n"
        "                       latency: a TCP_NODELAY ping-pong) and print the ratio\n"
        "  --passes N           passes per size; figures are medians (default 1, 5 with\n"
        "                       --compare-tcp; at most %d)\n"
        "  --no-pin             loopback: leave thread placement to the scheduler\n"
        "\n"
        "Output:\n"
        "  a perftest-style table on stdout (1 MB = 10^6 octets; peak = best 10 ms window);\n"
        "  a progress line on stderr when it is a terminal and a run lasts over 2 s\n"
        "  --json               one JSON document on stdout instead of the table\n"
        "  --plot FILE.svg      a chart of bandwidth (or latency) against message size\n"
        "  --trace FILE.pcap    capture the client's connections (loopback: both directions of\n"
        "                       each) as the library's packet trace (SCTP: its packets in\n"
        "                       UDP, RFC 6951); default $IWARP_PCAP\n"
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
        PERF_DEFAULT_PORT, (unsigned)PERF_MIN_SIZE, (unsigned)PERF_MAX_SIZE, PERF_MAX_QD,
        PERF_MAX_QPS, (unsigned)PERF_SCTP_MIN_MTU, PERF_MAX_PASSES, PERF_HELLO_LEN,
        PERF_WELCOME_LEN, PERF_CTL_LEN);
}

/* Returns 0 or -1; accepts decimal with an optional K/M (binary) suffix. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out, bool suffix)
{
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (suffix && (*end == 'K' || *end == 'k')) {
        v <<= 10;
        end++;
    } else if (suffix && (*end == 'M' || *end == 'm')) {
        v <<= 20;
        end++;
    }
    if (*end || v > max)
        return -1;
    *out = v;
    return 0;
}

static int bad(const char *fmt_what, const char *arg)
{
    fprintf(stderr, "iwarp perf: %s '%s'\nRun `iwarp perf --help` for the options.\n", fmt_what,
            arg ? arg : "");
    return 2;
}

/* A combination of options that does not apply: the reason on stderr; returns 2. */
static int refuse(const char *why)
{
    fprintf(stderr, "iwarp perf: %s\nRun `iwarp perf --help` for the options.\n", why);
    return 2;
}

/* The sizes of -a: powers of two from 2 B to 8 MiB (perftest's -a). */
static void all_sizes(struct perf_opts *o)
{
    o->nsizes = 0;
    for (uint32_t s = PERF_MIN_SIZE; s <= PERF_MAX_SIZE; s <<= 1)
        o->sizes[o->nsizes++] = s;
}

enum {
    OPT_SERVER = 256,
    OPT_OP,
    OPT_QD,
    OPT_QPS,
    OPT_CRC,
    OPT_NO_CRC,
    OPT_MPA_REV,
    OPT_TRANSPORT,
    OPT_SCTP_MTU,
    OPT_LAT,
    OPT_BUSY,
    OPT_VERIFY,
    OPT_COMPARE,
    OPT_JSON,
    OPT_PLOT,
    OPT_PASSES,
    OPT_NO_PIN,
    OPT_TRACE,
    OPT_PERFTEST,
};

/*
 * Parse the perf subcommand's arguments into o (argv[0] is "perf").
 * Returns 0 to run, 1 when --help was printed (exit status 0), 2 after a usage error was
 * printed to stderr (exit status 2). Ownership: o keeps pointers into argv.
 */
int perf_opts_parse(int argc, char **argv, struct perf_opts *o)
{
    static const struct option longs[] = {
        {"server", no_argument, NULL, OPT_SERVER},
        {"port", required_argument, NULL, 'p'},
        {"op", required_argument, NULL, OPT_OP},
        {"size", required_argument, NULL, 's'},
        {"all-sizes", no_argument, NULL, 'a'},
        {"iters", required_argument, NULL, 'n'},
        {"duration", required_argument, NULL, 'D'},
        {"qd", required_argument, NULL, OPT_QD},
        {"qps", required_argument, NULL, OPT_QPS},
        {"crc", no_argument, NULL, OPT_CRC},
        {"no-crc", no_argument, NULL, OPT_NO_CRC},
        {"mpa-rev", required_argument, NULL, OPT_MPA_REV},
        {"transport", required_argument, NULL, OPT_TRANSPORT},
        {"sctp-mtu", required_argument, NULL, OPT_SCTP_MTU},
        {"lat", no_argument, NULL, OPT_LAT},
        {"busy-poll", no_argument, NULL, OPT_BUSY},
        {"verify", no_argument, NULL, OPT_VERIFY},
        {"compare-tcp", no_argument, NULL, OPT_COMPARE},
        {"json", no_argument, NULL, OPT_JSON},
        {"plot", required_argument, NULL, OPT_PLOT},
        {"passes", required_argument, NULL, OPT_PASSES},
        {"no-pin", no_argument, NULL, OPT_NO_PIN},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"perftest", no_argument, NULL, OPT_PERFTEST},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct perf_opts){
        .op = PERF_OP_WRITE, .qd = 16, .qps = 1, .crc = true, .mpa_rev = 2, .pin = true};
    o->sizes[0] = 65536;
    o->nsizes = 1;
    bool size_given = false, all = false, iters_given = false, passes_given = false;
    bool mpa_rev_given = false;
    uint64_t v;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":p:s:an:D:h", longs, NULL)) != -1) {
        switch (c) {
        case OPT_SERVER:
            o->server = true;
            break;
        case 'p':
            if (parse_u64(optarg, 65535, &v, false) || v == 0)
                return bad("--port needs a number 1..65535, not", optarg);
            o->port = (uint16_t)v;
            break;
        case OPT_OP:
            if (!strcmp(optarg, "write"))
                o->op = PERF_OP_WRITE;
            else if (!strcmp(optarg, "read"))
                o->op = PERF_OP_READ;
            else if (!strcmp(optarg, "send"))
                o->op = PERF_OP_SEND;
            else
                return bad("--op must be write, read or send, not", optarg);
            break;
        case 's':
            if (parse_u64(optarg, PERF_MAX_SIZE, &v, true) || v < PERF_MIN_SIZE)
                return bad("--size must be 2 .. 8388608 (8M) octets, not", optarg);
            o->sizes[0] = (uint32_t)v;
            size_given = true;
            break;
        case 'a':
            all = true;
            break;
        case 'n':
            if (parse_u64(optarg, UINT64_C(1) << 40, &v, false) || v == 0)
                return bad("--iters needs a positive number, not", optarg);
            o->iters = v;
            iters_given = true;
            break;
        case 'D': {
            char *end;
            errno = 0;
            double d = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(d > 0) || d > 86400)
                return bad("--duration needs seconds (0 < SEC <= 86400), not", optarg);
            o->duration = d;
            break;
        }
        case OPT_QD:
            if (parse_u64(optarg, PERF_MAX_QD, &v, false) || v == 0)
                return bad("--qd must be 1 .. 256, not", optarg);
            o->qd = (uint32_t)v;
            break;
        case OPT_QPS:
            if (parse_u64(optarg, PERF_MAX_QPS, &v, false) || v == 0)
                return bad("--qps must be 1 .. 64, not", optarg);
            o->qps = (uint32_t)v;
            break;
        case OPT_CRC:
        case OPT_NO_CRC:
            o->crc = c == OPT_CRC;
            o->crc_given = true;
            break;
        case OPT_MPA_REV:
            if (strcmp(optarg, "1") && strcmp(optarg, "2"))
                return bad("--mpa-rev must be 1 or 2, not", optarg);
            o->mpa_rev = (uint8_t)(optarg[0] - '0');
            mpa_rev_given = true;
            break;
        case OPT_TRANSPORT:
            if (strcmp(optarg, "tcp") && strcmp(optarg, "sctp"))
                return bad("--transport must be tcp or sctp, not", optarg);
            o->sctp = !strcmp(optarg, "sctp");
            break;
        case OPT_SCTP_MTU:
            if (parse_u64(optarg, 65535, &v, false) || v < PERF_SCTP_MIN_MTU)
                return bad("--sctp-mtu must be 596 .. 65535 octets, not", optarg);
            o->sctp_mtu = (uint32_t)v;
            break;
        case OPT_LAT:
            o->lat = true;
            break;
        case OPT_BUSY:
            o->busy_poll = true;
            break;
        case OPT_VERIFY:
            o->verify = true;
            break;
        case OPT_COMPARE:
            o->compare_tcp = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_PLOT:
            o->plot = optarg;
            break;
        case OPT_PASSES:
            if (parse_u64(optarg, PERF_MAX_PASSES, &v, false) || v == 0)
                return bad("--passes must be 1 .. 31, not", optarg);
            o->passes = (uint32_t)v;
            passes_given = true;
            break;
        case OPT_NO_PIN:
            o->pin = false;
            break;
        case OPT_TRACE:
            o->trace = optarg;
            break;
        case OPT_PERFTEST:
            o->perftest = true;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case ':':
            return bad("option needs a value:", argv[optind - 1]);
        default:
            return bad("unknown option", argv[optind - 1]);
        }
    }
    if (optind < argc - 1)
        return bad("more than one HOST given; extra:", argv[optind + 1]);
    if (optind == argc - 1)
        o->host = argv[optind];
    if (o->server && o->host)
        return bad("--server takes no HOST; got", o->host);
    if (all && size_given)
        return bad("give --size or --all-sizes, not both", "");
    if (iters_given && o->duration > 0)
        return bad("give --iters or --duration, not both", "");
    if (o->lat && o->qps > 1)
        return bad("latency uses one QP; --qps must be 1 with --lat, not", "");
    if (o->plot) {
        size_t n = strlen(o->plot);
        if (n < 5 || strcmp(o->plot + n - 4, ".svg"))
            return bad("--plot needs a file name ending in .svg, not", o->plot);
    }
    if (o->perftest && !o->server && !o->host)
        return bad("--perftest needs --server or a HOST running perftest's server", "");
    if (o->perftest && (all || o->qps > 1 || o->duration > 0 || o->compare_tcp || passes_given))
        return bad("--perftest runs one size, one QP and one pass by iterations", "");
    if (o->sctp_mtu && !o->sctp)
        return refuse("--sctp-mtu needs --transport sctp");
    if (o->sctp) {
        /* RFC 5043 runs DDP straight on SCTP: no MPA framing, CRC or markers (SCTP's CRC32c,
         * RFC 4960 §6.8, covers every packet), and either side may send first (RFC 6581 §7) */
        if (o->crc_given || mpa_rev_given)
            return refuse("--crc, --no-crc and --mpa-rev are MPA options; DDP over SCTP "
                          "(--transport sctp) has no MPA: leave them out");
        if (o->compare_tcp)
            return refuse("--compare-tcp compares libiwarp over TCP with plain TCP; it does not "
                          "apply to --transport sctp (bench/bench_usrsctp measures libiwarp "
                          "over SCTP next to raw usrsctp)");
        if (o->perftest)
            return refuse("--perftest speaks perftest's protocol over TCP (MPA) only; it does "
                          "not apply to --transport sctp");
        o->crc = false;
    }
    if (all)
        all_sizes(o);
    if (!passes_given)
        o->passes = o->compare_tcp ? 5 : 1;
    if (!iters_given && !(o->duration > 0)) {
        o->iters = o->lat ? 1000 : 5000;
        o->iters_auto = true;
    }
    return 0;
}

/* perftest's test name of op: "RDMA_Write", "RDMA_Read" or "Send". */
const char *perf_op_title(enum perf_op op)
{
    return op == PERF_OP_WRITE ? "RDMA_Write" : op == PERF_OP_READ ? "RDMA_Read" : "Send";
}

/* The --op spelling of op. */
const char *perf_op_name(enum perf_op op)
{
    return op == PERF_OP_WRITE ? "write" : op == PERF_OP_READ ? "read" : "send";
}
