#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The drop-in's cost: perftest on the drop-in libibverbs/librdmacm beside `iwarp perf`.

Runs, alternating pass by pass on loopback (server on CPU 1, client on CPU 0, two processes
each), Debian's unmodified `ib_write_bw -R` and `ib_send_lat -R` on the drop-in (with
IWARP_PROGRESS=caller: perftest busy-polls its CQ) and `iwarp perf --busy-poll` at the same
size, iteration count and queue depth, CRC off on both (perftest's peers' default). Prints
each pass and the medians, and the ratios of the medians: bandwidth drop-in/iwarp perf (target
>= 0.9) and latency drop-in/iwarp perf (target <= 1.1, perftest's t_typical against ours).

usage: bench_dropin.py BUILD_DIR [--passes N] [--bw-size B] [--bw-iters N] [--qd N]
                       [--lat-size B] [--lat-iters N]
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listen(port, proc, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError("server exited early: %s" % proc.stdout.read())
        out = subprocess.run(["ss", "-Hltn", "sport = :%d" % port], capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.02)
    raise RuntimeError("no listener on port %d" % port)


def result_row(text, size):
    """perftest's (and iwarp perf's) result line for SIZE: the numbers after #bytes #iterations."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == str(size) and re.fullmatch(r"\d+", f[1]):
            return [float(x) for x in f[2:] if re.fullmatch(r"[0-9.]+", x)]
    raise RuntimeError("no result line for %d octets in:\n%s" % (size, text[-800:]))


def run_pair(server, client, env, size):
    port = free_port()
    srv = subprocess.Popen(["taskset", "-c", "1"] + server + ["-p", str(port)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_listen(port, srv)
        cli = subprocess.run(["taskset", "-c", "0"] + client + ["-p", str(port)], env=env,
                             capture_output=True, text=True, timeout=120)
        srv.wait(timeout=60)
    finally:
        if srv.poll() is None:
            srv.kill()
    if cli.returncode != 0 or srv.returncode != 0:
        raise RuntimeError("exit %s/%s:\n%s" % (cli.returncode, srv.returncode, cli.stdout[-800:] + cli.stderr[-800:]))
    return result_row(cli.stdout, size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--bw-size", type=int, default=65536)
    ap.add_argument("--bw-iters", type=int, default=20000)
    ap.add_argument("--qd", type=int, default=128)
    ap.add_argument("--lat-size", type=int, default=64)
    ap.add_argument("--lat-iters", type=int, default=10000)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    iwarp = os.path.join(build, "iwarp")
    dropin_env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "dropin"), IWARP_PROGRESS="caller",
                      IWARP_CONNECT_RETRY_MS="5000")  # perftest -R dials its data connection early
    plain_env = dict(os.environ)
    bw_common = ["-s", str(a.bw_size), "-n", str(a.bw_iters)]
    lat_common = ["-s", str(a.lat_size), "-n", str(a.lat_iters)]
    cases = {
        # name: (server, client, env, size, column): column of the result row (after
        # #bytes #iterations): bandwidth: BW average [MB/s] = 1; latency: t_typical = 2
        "bw dropin": (["ib_write_bw", "-R", "-F", "-t", str(a.qd)] + bw_common,
                      ["ib_write_bw", "-R", "-F", "-t", str(a.qd)] + bw_common + ["127.0.0.1"],
                      dropin_env, a.bw_size, 1),
        "bw iwarp perf": ([iwarp, "perf", "--server", "--busy-poll", "--no-crc", "--qd", str(a.qd)] + bw_common,
                          [iwarp, "perf", "127.0.0.1", "--busy-poll", "--no-crc", "--qd", str(a.qd)] + bw_common,
                          plain_env, a.bw_size, 1),
        "lat dropin": (["ib_send_lat", "-R", "-F"] + lat_common,
                       ["ib_send_lat", "-R", "-F"] + lat_common + ["127.0.0.1"],
                       dropin_env, a.lat_size, 2),
        "lat iwarp perf": ([iwarp, "perf", "--server", "--busy-poll", "--no-crc", "--lat", "--op", "send"] + lat_common,
                           [iwarp, "perf", "127.0.0.1", "--busy-poll", "--no-crc", "--lat", "--op", "send"] + lat_common,
                           plain_env, a.lat_size, 2),
    }
    values = {k: [] for k in cases}
    for p in range(a.passes):
        for name, (server, client, env, size, col) in cases.items():
            row = run_pair(server, client, env, size)
            values[name].append(row[col])
            print("pass %d %-15s %10.2f %s" % (p + 1, name, row[col], "MB/s" if name.startswith("bw") else "us"), flush=True)
    med = {k: statistics.median(v) for k, v in values.items()}
    print("\nmedians of %d passes:" % a.passes)
    for k, v in med.items():
        print("  %-15s %10.2f %s" % (k, v, "MB/s" if k.startswith("bw") else "us"))
    bw = med["bw dropin"] / med["bw iwarp perf"]
    lat = med["lat dropin"] / med["lat iwarp perf"]
    # Each pass runs the two tools back to back, so a pass's ratio sees the same machine load;
    # the median of those ratios is the robust figure, the ratio of medians is printed beside it.
    bw_r = [d / i for d, i in zip(values["bw dropin"], values["bw iwarp perf"])]
    lat_r = [d / i for d, i in zip(values["lat dropin"], values["lat iwarp perf"])]
    print("ib_write_bw -R (drop-in) / iwarp perf --busy-poll at %d octets, qd %d: median of per-pass "
          "ratios %.2f (range %.2f-%.2f), ratio of medians %.2f (target >= 0.9)"
          % (a.bw_size, a.qd, statistics.median(bw_r), min(bw_r), max(bw_r), bw))
    print("ib_send_lat -R (drop-in) / iwarp perf --busy-poll --lat --op send at %d octets: median of "
          "per-pass ratios %.2f (range %.2f-%.2f), ratio of medians %.2f (target <= 1.1)"
          % (a.lat_size, statistics.median(lat_r), min(lat_r), max(lat_r), lat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
