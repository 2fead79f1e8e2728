# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Sourced by the shell tests: wait for a condition with a deadline instead of sleeping a fixed
# time and hoping (the C tests' equivalent is deadline.h).
#
# wait_for [-p PID] SECONDS WHAT COMMAND...
#   Runs COMMAND every 50 ms until it succeeds, then returns 0. Returns 1 with a line on stderr
#   after SECONDS ("wait_for: timed out after SECONDS s waiting for WHAT"), or as soon as the
#   background process PID, which the condition depends on, has exited.
wait_for() {
    local pid=
    if [ "$1" = -p ]; then
        pid=$2
        shift 2
    fi
    local secs=$1 what=$2
    shift 2
    local now=${EPOCHREALTIME/[.,]/}
    local end=$((now + secs * 1000000))
    until "$@"; do
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            echo "wait_for: process $pid exited while waiting for $what" >&2
            return 1
        fi
        if ((${EPOCHREALTIME/[.,]/} >= end)); then
            echo "wait_for: timed out after $secs s waiting for $what" >&2
            return 1
        fi
        sleep 0.05
    done
}
