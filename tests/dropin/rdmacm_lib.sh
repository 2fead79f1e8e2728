# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Sourced by rdmacm_rping.sh, rdmacm_utils.sh and exec.sh: a server/client pair of unmodified programs on
# the drop-in, each under timeout, with the wire judge on the server's capture.
# Needs BUILD, SHARED, W (a scratch directory) and HERE set, LD_LIBRARY_PATH exported.
# shellcheck source=../support/wait_for.sh
. "$HERE/../support/wait_for.sh"
JUDGE=$SHARED/tools/wire-check/check.sh
PASSED=0 FAILED=0
KIDS=()
cleanup() { for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done; [ -n "${KEEP:-}" ] || rm -rf "$W"; }
trap cleanup EXIT
trap "exit 1" INT TERM

# A free TCP port: the next one after the last, skipping any that something listens on.
PORT=$((21000 + $$ % 2900)) # its band: see perftest.sh
next_port() {
    PORT=$((PORT + 1))
    while ss -Hltn "sport = :$PORT" | grep -q .; do PORT=$((PORT + 1)); done
}

# reap PID CLIENT_RC: the server's exit status. A server whose client failed gets 5 s to end
# by itself (it may wait for a peer that is gone), then is killed.
reap() {
    if [ "$2" != 0 ] && ! wait_for 5 "the server to end after its client failed" \
        sh -c "! kill -0 $1 2>/dev/null" 2>/dev/null; then
        kill "$1" 2>/dev/null
    fi
    wait "$1"
}

# listening PORT: whether some socket listens on TCP port PORT.
listening() { ss -Hltn "sport = :$1" | grep -q .; }

# judge PCAP PORT ALLOW: the judge's findings on PCAP (port PORT) other than the categories in
# ALLOW (a grep -E alternation, e.g. 'crc-off'; '' allows none); nothing printed: it passed.
judge() {
    local out rc bad
    [ -s "$1" ] || { echo "    no capture in $1"; return; }
    out=$("$JUDGE" -q "$1" "$2" 2>&1)
    rc=$?
    echo "$out" >"$1.judge"
    if [ $rc -gt 1 ]; then
        echo "    judge could not run (rc $rc): $(tail -n 2 <<<"$out")"
        return
    fi
    bad=$(grep -E '^\s*(WARN|ERROR) ' <<<"$out")
    [ -n "$3" ] && bad=$(grep -vE "\[($3)\]" <<<"$bad")
    [ -z "$bad" ] || echo "    wire judge: $(head -n 5 <<<"$bad")"
    [ $rc = 0 ] || [ -n "$bad" ] || grep -q 'RESULT: PASS' <<<"$out" ||
        echo "    wire judge failed: $(tail -n 2 <<<"$out")"
}

# report NAME PROBLEMS: PASS or FAIL with the problems (one line each).
report() {
    if [ -z "$2" ]; then
        PASSED=$((PASSED + 1))
        echo "PASS $1"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL $1"
        echo "$2"
    fi
}

finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" = 0 ]
}
