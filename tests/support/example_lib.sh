# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Sourced by the example tests (tests/scripts/example_*.sh): start an example's server on a port
# the system picks (it prints "listening on port N"), run its clients, check what they print.
# Every program's output goes to a file of $ex_out; on any failure all of them are printed.
# shellcheck source=./wait_for.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/wait_for.sh"

ex_out=$(mktemp -d)
ex_pids=()
ex_cleanup() {
    local p
    for p in "${ex_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$ex_out"
}
trap ex_cleanup EXIT

# ex_fail MESSAGE: print every output and the message, exit 1.
ex_fail() {
    local f
    for f in "$ex_out"/*; do
        [ -e "$f" ] && { echo "---- ${f##*/}"; cat "$f"; }
    done
    echo "FAIL: $*" >&2
    exit 1
}

# ex_start NAME CMD...: run CMD in the background, output in $ex_out/NAME; its pid is
# ex_pid[NAME].
declare -A ex_pid
ex_start() {
    local name=$1
    shift
    timeout 60 "$@" >"$ex_out/$name" 2>&1 &
    ex_pid[$name]=$!
    ex_pids+=("$!")
}

# ex_server NAME CMD...: ex_start, then wait until it listens; ex_port is the port it printed.
# shellcheck disable=SC2034 # ex_port is for the caller
ex_server() {
    local name=$1
    ex_start "$@"
    wait_for -p "${ex_pid[$name]}" 20 "$name to listen" grep -qs 'listening on port' "$ex_out/$name" ||
        ex_fail "$name did not start"
    ex_port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$ex_out/$name" | head -n 1)
}

# ex_wait NAME...: wait for each to exit; fail unless each exits 0.
ex_wait() {
    local name
    for name in "$@"; do
        wait "${ex_pid[$name]}" || ex_fail "$name exited with status $?"
    done
}

# ex_expect NAME LINE: NAME's output must contain LINE (a fixed string, whole line).
ex_expect() {
    grep -qxF -- "$2" "$ex_out/$1" || ex_fail "$1 did not print: $2"
}

# ex_show: print every output (the test log then shows what the examples said).
ex_show() {
    local f
    for f in "$ex_out"/*; do echo "---- ${f##*/}"; cat "$f"; done
}
