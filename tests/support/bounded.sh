# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Sourced by the shell tests: run one of our programs with a bound on its time, and when it
# overruns, say where it was. coreutils' timeout only kills: a program that hung in CI then
# leaves nothing to read, and a hang that shows once in many runs must be diagnosed from its
# first occurrence.
#
# bounded SECONDS REPORT COMMAND...
#   Runs COMMAND; returns its exit status. After SECONDS it appends to REPORT a line
#   ("bounded: ... still running after SECONDS s") and, when gdb is installed, every thread's
#   backtrace; then it sends SIGTERM (SIGKILL 2 s later) and returns 124, like timeout(1).
#   A SIGTERM to the shell running it (a test's cleanup killing its background jobs) goes on to
#   COMMAND, as timeout(1) passes it on, so that no program of ours outlives its test.
bounded() {
    local secs=$1 report=$2
    shift 2
    "$@" &
    local pid=$!
    # shellcheck disable=SC2064 # pid is fixed now
    trap "kill -TERM $pid 2>/dev/null; exit 143" TERM
    local end=$((${EPOCHREALTIME/[.,]/} + secs * 1000000))
    while kill -0 "$pid" 2>/dev/null; do
        if ((${EPOCHREALTIME/[.,]/} >= end)); then
            {
                echo "bounded: $1 (pid $pid) still running after $secs s"
                if command -v gdb >/dev/null; then
                    timeout 60 gdb -p "$pid" -batch -nx -ex 'set pagination off' \
                        -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread|#)'
                fi
            } >>"$report"
            kill -TERM "$pid" 2>/dev/null
            sleep 2
            kill -KILL "$pid" 2>/dev/null
            wait "$pid"
            trap - TERM
            return 124
        fi
        sleep 0.2
    done
    trap - TERM
    wait "$pid"
}

# bounded_report REPORT...
#   Prints each REPORT that has lines, as "HANG NAME:" (its file name without .hang) and its
#   lines indented: the end of a test's output says which of its programs hung, and where.
bounded_report() {
    local f
    for f in "$@"; do
        [ -s "$f" ] || continue
        echo "HANG $(basename "$f" .hang):"
        sed 's/^/    /' "$f"
    done
}
