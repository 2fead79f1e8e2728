#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Is build B faster than build A? One `iwarp perf` measure, the two `iwarp` binaries
alternating round by round (A B, then B A, so that a drift of the machine hits both alike).

    scripts/ab.py [--rounds N] [--max-foreign CORES] A B -- PERF-ARGS...

A and B are `iwarp` executables or build directories holding one (for a change, a worktree of
the commit before it: `git worktree add ../base HEAD~1`, then `cmake --preset release` and
`cmake --build --preset release --target iwarp_cli` there). PERF-ARGS is one size of one
measure, e.g. `--op read -s 64K -n 16384 --busy-poll --crc`; `--json --passes 1` are added.
Bandwidth compares the average MB/s (higher is better), latency the typical one-way time (lower
is better).

On a shared 2-core machine the same binary swings by 2x between runs, so one pair of runs says
nothing. This prints each build's median, the median of the per-round ratios B/A, how many rounds
B was better in, and the two-sided sign-test p of that count (the chance of a split at least as
uneven if neither build were better). A round whose runs saw foreign load above --max-foreign is
marked '*' and still counted.
"""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Runner, read_cc  # noqa: E402  (the runner and foreign-load measure of bench.py)


def binary(path):
    exe = os.path.join(path, "iwarp") if os.path.isdir(path) else path
    if not os.access(exe, os.X_OK):
        sys.exit("ab.py: %s is not an iwarp executable or a build directory with one" % path)
    return exe


def sign_test_p(better, n):
    """Two-sided p of `better` successes in n fair coin flips (ties left out of n)."""
    if n == 0:
        return 1.0
    k = min(better, n - better)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2 * tail)


def main():
    argv = sys.argv[1:]
    perf_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description="A/B of one iwarp perf measure (see the source).")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--max-foreign", type=float, default=0.25)
    ap.add_argument("a")
    ap.add_argument("b")
    opts = ap.parse_args(own)
    if not perf_args:
        ap.error("give the measure after --, e.g. -- --op write -s 1M -n 1000 --busy-poll")
    exes = [binary(opts.a), binary(opts.b)]
    runner = Runner(None, opts.max_foreign, False)

    values = [[], []]
    ratios, b_better, ties = [], 0, 0
    lower_is_better = None
    for r in range(opts.rounds):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        got, foreign = [None, None], 0.0
        for i in order:
            doc, err, f = runner.run_json([exes[i], "perf", "--json", "--passes", "1"] + perf_args)
            if doc is None:
                sys.exit("ab.py: %s: %s" % (exes[i], err))
            foreign = max(foreign, f)
            res = doc["results"][0]
            lower_is_better = doc["measure"] == "latency"
            got[i] = res["t_typical_us"] if lower_is_better else res["bw_avg_MBps"]
        for i in (0, 1):
            values[i].append(got[i])
        ratios.append(got[1] / got[0])
        if got[1] == got[0]:
            ties += 1
        elif (got[1] < got[0]) == lower_is_better:
            b_better += 1
        print("round %2d  A %10.2f  B %10.2f  B/A %.3f%s" %
              (r + 1, got[0], got[1], ratios[-1], " *" if foreign > opts.max_foreign else ""))
    unit = "us (typical one-way, lower is better)" if lower_is_better else \
        "MB/s (average, higher is better)"
    n = opts.rounds - ties
    print("unit: %s; TCP congestion control: %s" % (unit, read_cc()))
    for name, v, exe in zip("AB", values, exes):
        print("%s median %.2f  (min %.2f, max %.2f)  %s" %
              (name, statistics.median(v), min(v), max(v), exe))
    print("B/A: median of per-round ratios %.3f; B better in %d of %d rounds (%d ties); "
          "sign test p = %.3f" % (statistics.median(ratios), b_better, n, ties,
                                  sign_test_p(b_better, n)))


if __name__ == "__main__":
    main()
