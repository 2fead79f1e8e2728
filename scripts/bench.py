#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The performance table: every measure of the performance targets, libiwarp beside its
baselines measured in the same run, pass by pass alternating, with the foreign load of each pass.

Run through scripts/bench.sh (which builds what is missing). Baselines: plain TCP (iwarp perf
--compare-tcp: a Nagle-on stream for bandwidth and rate, a TCP_NODELAY ping-pong for latency,
spinning or blocking like the libiwarp side), libfabric's tcp provider (bench/bench_fabric; the
column is skipped, with the reason, when it is not built) and raw usrsctp (bench/bench_usrsctp;
also raw usrsctp with its CRC32c offloaded to ISA-L, as libiwarp runs it).
Posting threads (bench/bench_threads) are compared with one thread driving the same QPs.

Each row runs PASSES passes; a pass runs every system of the row once, one after the other, so
that slow drifts of the machine hit all of them alike. Figures are medians over the passes; a
ratio is the median of the per-pass ratios. The foreign load of a pass is the CPU time other
processes used during it (from /proc/stat, minus this script's children), in cores; a pass with
more than --max-foreign is marked disturbed ('*') and still counted.

Every TCP connection of the run (libiwarp's, plain TCP's, libfabric's) uses the host's default
congestion control, which the table records. It matters on loopback: with BBR, whose window
follows its estimate of a round trip of a few microseconds, libfabric's 1 MiB Read ran at
4 GB/s where CUBIC gave it 9-10. --cc NAME sets the default for the run (root; the previous one
is put back at the end), so that a table can be taken under each.
"""
import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time


def busy_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v[:8]) - idle


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Runner:
    def __init__(self, build, max_foreign, verbose):
        self.build = build
        self.max_foreign = max_foreign
        self.verbose = verbose
        self.hz = os.sysconf("SC_CLK_TCK")

    def run_json(self, argv, timeout=600):
        """Run one measuring command; returns (parsed JSON or None, error text, foreign cores)."""
        j0, c0, t0 = busy_jiffies(), children_cpu(), time.monotonic()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "timed out", 0.0
        dt = time.monotonic() - t0
        foreign = max(0.0, ((busy_jiffies() - j0) / self.hz - (children_cpu() - c0)) / dt)
        if self.verbose:
            print("  $ " + " ".join(argv), file=sys.stderr)
        if p.returncode == 77:
            return None, "skipped: " + (p.stderr.strip().splitlines() or ["unavailable"])[-1], foreign
        if p.returncode != 0:
            return None, "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]), foreign
        try:
            return json.loads(p.stdout), "", foreign
        except ValueError:
            return None, "unreadable output: " + p.stdout[:200], foreign

    def perf(self, *args, passes=1):
        return self.run_json([os.path.join(self.build, "iwarp"), "perf", "--json",
                              "--passes", str(passes)] + [str(a) for a in args])

    def fabric(self, test, size, *args):
        exe = os.path.join(self.build, "bench", "bench_fabric")
        if not os.access(exe, os.X_OK):
            return None, "skipped: bench_fabric not built (install libfabric-dev)", 0.0
        return self.run_json([exe, "--passes", "1"] + [str(a) for a in args] + [test, str(size)])


def perf_value(doc, key, tcp=False):
    r = doc["results"][0]
    return (r["tcp"] if tcp else r)[key]


# ---- the rows ---------------------------------------------------------------------------------

def rows(quick):
    """(target, name, unit, better, systems): systems are (label, function(runner) -> dict of
    label -> value) producers; one producer may give several columns (iwarp perf --compare-tcp
    gives libiwarp and TCP from one run)."""
    n_rate = 50000 if quick else 200000
    n_bw = {65536: 4000 if quick else 16384, 1048576: 256 if quick else 1024}
    n_lat = 2000 if quick else 10000
    out = []

    def iw_bw(op, size, crc, mode, extra=(), key="bw_avg_MBps", scale=1e-3, iters=None,
              label="libiwarp", tcp=True):
        """libiwarp's column (named label) and, with tcp, plain TCP's beside it (--compare-tcp)."""
        def f(r):
            args = ["--op", op, "-s", size, "-n", iters or n_bw.get(size, 10000),
                    "--crc" if crc else "--no-crc"] + list(extra)
            if tcp:
                args.append("--compare-tcp")
            if mode == "busy":
                args.append("--busy-poll")
            d, err, fl = r.perf(*args)
            cols = {label: perf_value(d, key) * scale if d else err}
            if tcp:
                cols["TCP"] = perf_value(d, key, True) * scale if d else err
            return cols, fl
        return f

    def fab(test, size, key="median", iters=None, window=64):
        def f(r):
            d, err, fl = r.fabric(test, size, "--window", window,
                                  *(["--iters", iters] if iters else []))
            return {"libfabric": d[key] if d else err}, fl
        return f

    # 1. message rate, 64 B, one WR per post, 64 in flight
    for op in (["write"] if quick else ["write", "send"]):
        out.append(("1 rate", "64 B %s rate, busy-poll" % op.capitalize(), "M msg/s", "high",
                    [iw_bw(op, 64, True, "busy", ["--qd", 64], "msg_rate_Mpps", 1, n_rate),
                     fab("write_bw", 64, "mops", n_rate)],
                    [("libiwarp", "libfabric", ">= 4"), ("libiwarp", "TCP", ">= 0.7")]))
    if not quick:
        out.append(("1 rate", "64 B Write rate, events", "M msg/s", "high",
                    [iw_bw("write", 64, True, "events", ["--qd", 64], "msg_rate_Mpps", 1, n_rate)],
                    [("libiwarp", "TCP", "(reported)")]))
    # 2. bandwidth
    for op in (["write"] if quick else ["write", "read"]):
        for size in ([65536] if quick else [65536, 1048576]):
            for crc in ([True] if quick else [True, False]):
                out.append(("2 bandwidth", "%s %s, CRC %s, busy-poll" % (
                    op.capitalize(), "64 KiB" if size == 65536 else "1 MiB", "on" if crc else "off"),
                    "GB/s", "high",
                    [iw_bw(op, size, crc, "busy"), fab("%s_bw" % op, size, iters=n_bw[size])],
                    [("libiwarp", "libfabric", ">= 0.9" if crc else ">= 1.1"),
                     ("libiwarp", "TCP", "")]))
    # 2. Read against Write at the same size and CRC setting (target: Read >= 0.95 x Write),
    # both in every pass: on this machine the bandwidth of one system moves 2x from pass to pass,
    # so the rows above, measured in other passes, cannot give this ratio
    if not quick:
        for size in [65536, 1048576]:
            for crc in [True, False]:
                out.append(("2 read/write", "Read / Write %s, CRC %s, busy-poll" % (
                    "64 KiB" if size == 65536 else "1 MiB", "on" if crc else "off"), "GB/s", "high",
                    [iw_bw(op, size, crc, "busy", label=op.capitalize(), tcp=False)
                     for op in ("read", "write")],
                    [("Read", "Write", ">= 0.95")]))
    # 3. latency
    def iw_lat(op, mode, batch_off=False):
        def f(r):
            args = ["--lat", "--op", op, "-s", 64, "-n", n_lat]
            args += ["--tx-batch", 0] if batch_off else ["--compare-tcp"]
            if mode == "busy":
                args.append("--busy-poll")
            d, err, fl = r.perf(*args)
            if batch_off:
                return {"batching off": perf_value(d, "t_typical_us") if d else err}, fl
            if not d:
                return {"libiwarp": err, "TCP": err}, fl
            return {"libiwarp": perf_value(d, "t_typical_us"),
                    "TCP": perf_value(d, "t_typical_us", True)}, fl
        return f
    for op in (["send"] if quick else ["send", "write"]):
        out.append(("3 latency", "64 B %s one-way, busy-poll" % op.capitalize(), "us", "low",
                    [iw_lat(op, "busy"), fab("%s_lat" % op, 64, iters=n_lat),
                     iw_lat(op, "busy", batch_off=True)],
                    [("libiwarp", "TCP", "<= 1.1"), ("libiwarp", "libfabric", ""),
                     ("libiwarp", "batching off", "~1: a lone post leaves at once")]))
    if not quick:
        for op in ["send", "write"]:
            out.append(("3 latency", "64 B %s one-way, events" % op.capitalize(), "us", "low",
                        [iw_lat(op, "events")], [("libiwarp", "TCP", "<= 1.3")]))
    # 4. CPU cost: CPU seconds per GB (both ends, events: the busy-poll ends burn their cores)
    for crc in ([True] if quick else [False, True]):
        out.append(("4 CPU", "Write 64 KiB CRC %s, events" % ("on" if crc else "off"),
                    "CPU s/GB", "low",
                    [iw_bw("write", 65536, crc, "events", key="cpu_s_per_GB", scale=1)],
                    [("libiwarp", "TCP", "<= 1.35" if crc else "<= 1.2")]))
    # 5. many QPs: aggregate at 256 QPs against 1, both moving 2 GiB in all (less, and the
    # start and the tail of 256 connections weigh on the figure). Plain TCP beside it, a
    # stream per QP: what the kernel's TCP itself loses with 256 streams on this machine.
    # Five passes in one run, the median: the QPs' connections are the same in all five, so
    # the figure is theirs once warm (a fresh loopback TCP connection ramps its window and
    # faults its buffers in: 256 of them moving 8 MiB each spend most of the first pass doing
    # so); the slowest pass (the first, fresh connections) is shown beside it. Plain TCP opens
    # its streams anew every pass: its figures are those of fresh streams.
    if not quick:
        def qps(n):
            def f(r):
                d, err, fl = r.perf("-s", 65536, "-n", 32768 // n, "--qps", n, "--busy-poll",
                                    "--compare-tcp", passes=5)
                if not d:
                    return {"%d QP" % n: err, "TCP %d" % n: err}, fl
                cols = {"%d QP" % n: perf_value(d, "bw_avg_MBps") * 1e-3,
                        "TCP %d" % n: perf_value(d, "bw_avg_MBps", True) * 1e-3}
                if n > 1:
                    cols["%d QP slowest" % n] = perf_value(d, "bw_avg_min_MBps") * 1e-3
                return cols, fl
            return f
        out.append(("5 QPs", "Write 64 KiB aggregate, busy-poll, warm", "GB/s", "high",
                    [qps(1), qps(256)], [("256 QP", "1 QP", ">= 0.9"),
                                         ("TCP 256", "TCP 1", "(plain TCP's own, fresh streams)"),
                                         ("256 QP", "TCP 256", "")]))
    # 5. posting threads: the same 2 QPs driven by one thread and by one thread each, in one
    # process (bench_threads runs the two one after the other within its pass; which goes
    # first alternates over the passes, so that an effect of running first or second hits both
    # alike)
    order = [0]

    def posting_threads(nqps, spread, label):
        def f(r):
            exe = os.path.join(r.build, "bench", "bench_threads")
            j0, c0, t0 = busy_jiffies(), children_cpu(), time.monotonic()
            first = ["--threads-first"] if order[0] % 2 else []
            order[0] += 1
            extra = ["--spread"] if spread else []
            p = subprocess.run([exe, "--passes", "1", "--ms", "1000", "--qps", str(nqps)] +
                               first + extra, capture_output=True, text=True, timeout=300)
            fl = max(0.0, ((busy_jiffies() - j0) / r.hz - (children_cpu() - c0)) /
                     (time.monotonic() - t0))
            for line in p.stdout.splitlines():
                w = line.split()
                if len(w) == 4 and w[0] == "1":
                    return {label: float(w[2]), "1 thread": float(w[1])}, fl
            return {label: "exit %d: %s" % (p.returncode, p.stderr.strip()[-200:])}, fl
        return f
    out.append(("5 threads", "Write 64 KiB, 2 QPs, CRC on, caller", "GB/s", "high",
                [posting_threads(2, False, "2 threads")], [("2 threads", "1 thread", ">= 0.95")]))
    # ... and the scaling with a posting thread (and QP) per core, the target's thread on a core
    # of its own, where there are at least 4 cores (on fewer the threads would share them)
    if not quick:
        cores = os.cpu_count() or 1
        if cores >= 4:
            scaling = posting_threads(min(cores - 1, 16), True, "thread per core")
        else:
            why = "skipped: %d cores here, the row needs at least 4" % cores

            def scaling(r):
                return {"thread per core": why, "1 thread": why}, 0.0
        out.append(("5 threads", "Write 64 KiB, a thread and QP per core but one, CRC on, "
                    "caller", "GB/s", "high", [scaling],
                    [("thread per core", "1 thread", "(reported)")]))
    # 6. SCTP: latency, and 64 KiB Write bandwidth (which is to stay >= 0.9x raw usrsctp)
    def usrsctp(r, mode, measure, size):
        exe = os.path.join(r.build, "bench", "bench_usrsctp")
        if not os.access(exe, os.X_OK):
            return {"libiwarp": "skipped: no SCTP build", "raw usrsctp": "skipped"}, 0.0
        j0, c0, t0 = busy_jiffies(), children_cpu(), time.monotonic()
        p = subprocess.run([exe, "--passes", "1", mode, "--ms", "1000"],
                           capture_output=True, text=True, timeout=300)
        fl = max(0.0, ((busy_jiffies() - j0) / r.hz - (children_cpu() - c0)) /
                 (time.monotonic() - t0))
        got = {}
        for line in p.stdout.splitlines():
            w = line.split()
            if len(w) >= 5 and w[0] == measure and w[1] == size:
                if w[2] == "raw":
                    got["raw usrsctp"] = float(w[4])
                elif w[2] in ("libiwarp", "raw/ISA-L"):
                    got[w[2]] = float(w[3])
        return got or {"libiwarp": "exit %d" % p.returncode}, fl
    out.append(("6 SCTP", "64 B Send one-way over SCTP, busy-poll", "us", "low",
                [lambda r: usrsctp(r, "--lat-only", "send_lat", "64")],
                [("libiwarp", "raw usrsctp", "<= 1.1"),
                 ("libiwarp", "raw/ISA-L", "(raw with the CRC32c libiwarp uses)")]))
    if not quick:
        out.append(("6 SCTP", "Write 64 KiB over SCTP, busy-poll", "MB/s", "high",
                    [lambda r: usrsctp(r, "--bw-only", "write_bw", "65536")],
                    [("libiwarp", "raw usrsctp", ">= 0.9"),
                     ("libiwarp", "raw/ISA-L", "(raw with the CRC32c libiwarp uses)")]))
    return out


CC_PATH = "/proc/sys/net/ipv4/tcp_congestion_control"


def read_cc():
    try:
        with open(CC_PATH) as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def set_cc(name):
    """Make name the default congestion control of new TCP sockets; exits on failure."""
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            avail = f.read().split()
    except OSError:
        avail = []
    if name not in avail:
        sys.exit("bench.py: --cc %s: not available here (%s); modprobe tcp_%s?" %
                 (name, " ".join(avail) or "unknown", name))
    try:
        with open(CC_PATH, "w") as f:
            f.write(name)
    except OSError as e:
        sys.exit("bench.py: --cc %s: cannot set %s (%s): run as root" % (name, CC_PATH, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="the release build directory")
    ap.add_argument("--quick", action="store_true", help="one row per target, 3 passes")
    ap.add_argument("--passes", type=int, help="passes per row (default 5, 3 with --quick)")
    ap.add_argument("--max-foreign", type=float, default=0.25,
                    help="foreign load (cores) above which a pass is marked disturbed")
    ap.add_argument("--json", help="also write the table as JSON to this file")
    ap.add_argument("--only", help="only the rows whose target starts with this (e.g. 2)")
    ap.add_argument("--cc", help="TCP congestion control for the run (root; put back after)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    before = read_cc()
    change = bool(a.cc) and a.cc != before
    if change:
        set_cc(a.cc)
        # a kill (timeout's TERM) unwinds through the finally below like ^C
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        run(a)
    finally:
        if change:
            set_cc(before)


def run(a):
    passes = a.passes or (3 if a.quick else 5)
    r = Runner(a.build, a.max_foreign, a.verbose)
    doc = {"passes": passes, "max_foreign": a.max_foreign, "quick": a.quick,
           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "tcp_congestion_control": read_cc(),
           "rows": []}
    print("# TCP congestion control: %s" % doc["tcp_congestion_control"])
    t_start = time.monotonic()
    print("%-12s %-40s %-9s %-44s %s" % ("target", "measure", "unit", "medians", "ratios (target)"))
    for target, name, unit, better, systems, ratios in rows(a.quick):
        if a.only and not target.startswith(a.only):
            continue
        vals, errs, loads = {}, {}, []
        for _ in range(passes):
            load = 0.0
            for f in systems:
                got, fl = f(r)
                load = max(load, fl)
                for k, v in got.items():
                    if isinstance(v, str):
                        errs[k] = v
                    else:
                        vals.setdefault(k, []).append(v)
            loads.append(load)
        med = {k: statistics.median(v) for k, v in vals.items()}
        rat = []
        for num, den, goal in ratios:
            if num in vals and den in vals and len(vals[num]) == len(vals[den]):
                per = [x / y for x, y in zip(vals[num], vals[den]) if y]
                rat.append({"ratio": "%s/%s" % (num, den), "value": statistics.median(per),
                            "target": goal})
            else:
                rat.append({"ratio": "%s/%s" % (num, den), "value": None, "target": goal,
                            "why": errs.get(num) or errs.get(den) or "missing"})
        disturbed = sum(1 for x in loads if x > a.max_foreign)
        row = {"target": target, "measure": name, "unit": unit, "better": better,
               "passes": vals, "medians": med, "errors": errs, "ratios": rat,
               "foreign_load": loads, "disturbed_passes": disturbed}
        doc["rows"].append(row)
        m = "  ".join("%s %.3g" % (k, v) for k, v in med.items())
        rs = "  ".join("%s %s (%s)" % (x["ratio"], "%.2f" % x["value"] if x["value"] is not None
                                        else "-", x["target"] or "-") for x in rat)
        flag = " *%d/%d disturbed" % (disturbed, passes) if disturbed else ""
        print("%-12s %-40s %-9s %-44s %s%s" % (target, name, unit, m, rs, flag), flush=True)
        for k, v in errs.items():
            print("%-12s   %s: %s" % ("", k, v))
    doc["seconds"] = round(time.monotonic() - t_start, 1)
    print("# %d passes per row, medians; ratio = median of per-pass ratios; foreign load > %.2f "
          "cores marks a pass disturbed (*); %.0f s" % (passes, a.max_foreign, doc["seconds"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
