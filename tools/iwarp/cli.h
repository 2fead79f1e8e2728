/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the iwarp command's subcommands. */
#ifndef IWARP_CLI_H
#define IWARP_CLI_H

/* A subcommand: argv[0] is the subcommand's name; returns the process exit status. */
struct iwarp_cli_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

int iwarp_cli_demo(int argc, char **argv);
/* iwarp dump (dump.c): decode and judge the iWARP traffic of a capture file. */
int iwarp_cli_dump(int argc, char **argv);
/* iwarp ping (ping.c): rping (rdma-core) over libiwarp, either role. */
int iwarp_cli_ping(int argc, char **argv);
/* iwarp perf (perf*.c): perftest-style bandwidth and latency, with a plain-TCP baseline. */
int iwarp_cli_perf(int argc, char **argv);
/* iwarp exec (exec.c): run a program on the drop-in libibverbs/librdmacm. */
int iwarp_cli_exec(int argc, char **argv);

#endif
