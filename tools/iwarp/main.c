/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp: the libiwarp command. One binary, one subcommand per job; `iwarp CMD --help` describes
 * each. Subcommands live in their own files and share only cli.h.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "iwarp/iwarp.h"

static const struct iwarp_cli_cmd commands[] = {
    {"demo", "run every RDMAP operation through the engines, in memory, and write a capture",
     iwarp_cli_demo},
    {"dump", "decode a capture's MPA/DDP/RDMAP traffic and judge it against the RFCs",
     iwarp_cli_dump},
    {"ping", "rping's Send/RDMA Read/RDMA Write ping-pong, client or server", iwarp_cli_ping},
    {"perf", "bandwidth and latency in the manner of perftest, beside plain TCP", iwarp_cli_perf},
    {"exec", "run an unmodified libibverbs/librdmacm program on libiwarp", iwarp_cli_exec},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: iwarp COMMAND [OPTIONS]\n\n"
            "libiwarp %s: user-space iWARP over two transports: RDMAP/DDP over MPA over\n"
            "TCP (RFC 5040, 5041, 5044, 6581; --transport tcp, the default) and RDMAP/DDP over\n"
            "SCTP (RFC 5043, usrsctp over UDP; --transport sctp in ping and perf).\n\n"
            "commands:\n",
            iwarp_version());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "  %-9s %s\n  %-9s %s\n\n"
            "Run `iwarp COMMAND --help` for the options of a command, `man iwarp-COMMAND`\n"
            "for its manual. The options the commands share have one spelling everywhere:\n"
            "--trace FILE (packet trace), --crc/--no-crc, -6/--ipv6, --transport tcp|sctp,\n"
            "-p/--port N, -h/--help.\n",
            "version", "print the library version", "help", "print this text");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("iwarp %s\n", iwarp_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "iwarp: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
