#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts.ping_cli: `iwarp ping` (tools/iwarp/ping.c) on its own, no guest needed:
#   - --help (exit 0, the usage on stdout);
#   - bad arguments: each exits 2 with an "iwarp ping: ..." line on stderr and nothing on stdout;
#   - loopback: `iwarp ping -s` and `iwarp ping -c -V -v` against each other on 127.0.0.1 and
#     ::1, -C 100, at sizes 26 (rping's minimum), 64 and 65535 (its maximum); both exit 0 and
#     both sides print exactly rping's data lines (tests/interop/rping_expected.sh);
#   - --transport sctp (DDP over SCTP, RFC 5043): the same loopback check on 127.0.0.1 (64 B,
#     and 65535 B with --sctp-mtu 9000) and ::1 (64 B), -C 100;
#   - -P: one persistent server, three clients at once, each verified;
#   - a server given no address listens on :: dual-stack (TCP and SCTP): clients on 127.0.0.1
#     and on ::1 (-6) both served, --trace writes the client's capture;
#   - failures exit 1: nobody listening; a client larger than the server's -S (both ends);
#   - --x-atomic against a server without RFC 7306 (as siw, interop.siw_scen's atomic run): the
#     FetchAdd probe is answered with a Terminate 0/2/0x06 that the client reports (the WR's
#     status and cause, the async event from the peer) and the server reports sending.
# Usage: ping_cli.sh IWARP_BINARY
set -u
BIN=${1:?usage: ping_cli.sh IWARP_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/wait_for.sh"
EXPECTED=$HERE/../interop/rping_expected.sh
[ -x "$BIN" ] || { echo "ping_cli.sh: $BIN is not executable"; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ping_cli.XXXXXX")
KIDS=()
cleanup() { for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"; }
trap cleanup EXIT
PORT=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768-)
FAILED=0
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }
pass() { echo "PASS: $*"; }

# ---- --help --------------------------------------------------------------------------------
out=$("$BIN" ping --help 2>"$W/err")
rc=$?
if [ $rc = 0 ] && grep -q '^usage: iwarp ping -s' <<<"$out" && grep -q -- '--first-delay' <<<"$out" &&
    [ ! -s "$W/err" ]; then
    pass "--help"
else
    fail "--help: rc $rc"
fi

# ---- bad arguments ------------------------------------------------------------------------
# ARGS|what stderr must say
while IFS='|' read -r args want; do
    [ -n "$want" ] || continue
    # shellcheck disable=SC2086 # word splitting of the argument list is intended
    "$BIN" ping $args >"$W/out" 2>"$W/err"
    rc=$?
    if [ $rc = 2 ] && [ ! -s "$W/out" ] && grep -q "^iwarp ping: .*$want" "$W/err"; then
        pass "bad arguments '$args'"
    else
        fail "bad arguments '$args': rc $rc, stderr: $(head -c 200 "$W/err")"
    fi
done <<'EOF'
|one of -s (server) or -c (client)
-s -c|exclude each other
-c|server's address
-c -a 127.0.0.1 -S 25|invalid size '25'
-c -a 127.0.0.1 -S 65536|invalid size '65536'
-c -a 127.0.0.1 -S 64k|invalid size '64k'
-c -a 127.0.0.1 -C -1|invalid count '-1'
-c -a 127.0.0.1 -C ten|invalid count 'ten'
-s -p 0|invalid port '0'
-s -p 65536|invalid port '65536'
-s -p|'-p' needs a value
-s --port|'--port' needs a value
-s --verbose=3|'--verbose' takes no value
-s -vx|unknown option '-x'
-s -x|unknown option '-x'
-s --bogus|unknown option '--bogus'
-s extra|unexpected argument 'extra'
-c -a 127.0.0.1 -P|-P is a server option
-s --first-delay 10|client options
-s --retry 5|client options
-c -a 127.0.0.1 --first-delay -1|invalid --first-delay
-c -a no-such-host.invalid|no-such-host.invalid
-c -a ::1 -I 127.0.0.1|not of the server address's family
-s --transport udp|invalid --transport 'udp'
-s --sctp-mtu 9000|--sctp-mtu needs --transport sctp
-s --transport sctp --sctp-mtu 595|invalid --sctp-mtu '595'
-s --transport sctp --sctp-mtu 65536|invalid --sctp-mtu '65536'
-s --transport sctp --crc|MPA options
-c -a 127.0.0.1 --transport sctp --x-p2p w|MPA options
-c -a 127.0.0.1 --transport sctp --x-markers|MPA options
EOF

# ---- runs ----------------------------------------------------------------------------------
# Starts `iwarp ping -s ARGS...` in the background on $PORT (LOG: its output); waits until it
# listens. Sets SRV.
start_server() { # LOG ARGS...
    local log=$1
    shift
    "$BIN" ping -s -d -p "$PORT" "$@" >"$log" 2>&1 &
    SRV=$!
    KIDS+=("$SRV")
    wait_for -p "$SRV" 10 "the server to listen" grep -qs '^listening on' "$log"
}

# The LOG's lines starting with PREFIX equal rping's for COUNT pings of SIZE octets.
same_data() { # LOG PREFIX COUNT SIZE
    diff <(grep "^$2" "$1") <(bash "$EXPECTED" "$2" "$3" "$4") >"$1.diff"
}

loopback() { # ADDR SIZE [ARGS for both sides...]
    local addr=$1 size=$2 name="loopback $1 -C 100 -S $2" d="$W/lb-$RANDOM"
    shift 2
    [ $# = 0 ] || name+=" $*"
    PORT=$((PORT + 1))
    if ! start_server "$d.srv" -a "$addr" -S "$size" -v "$@"; then
        fail "$name: the server did not start: $(tail -n 3 "$d.srv")"
        return
    fi
    timeout 60 "$BIN" ping -c -d -a "$addr" -p "$PORT" -C 100 -S "$size" -V -v "$@" >"$d.cli" 2>&1
    local crc=$?
    timeout 20 tail --pid="$SRV" -f /dev/null
    wait "$SRV"
    local src=$?
    local problems=""
    [ $crc = 0 ] || problems+=" client rc $crc ($(grep -v '^ping data' "$d.cli" | tail -n 2));"
    [ $src = 0 ] || problems+=" server rc $src ($(grep -v 'ping data' "$d.srv" | tail -n 2));"
    same_data "$d.cli" "ping data: " 100 "$size" || problems+=" client data: $(head -c 200 "$d.cli.diff");"
    same_data "$d.srv" "server ping data: " 100 "$size" ||
        problems+=" server data: $(head -c 200 "$d.srv.diff");"
    grep -q '^client DISCONNECT EVENT' "$d.cli" || problems+=" no client DISCONNECT EVENT;"
    grep -q '^server DISCONNECT EVENT' "$d.srv" || problems+=" no server DISCONNECT EVENT;"
    if [[ " $* " == *" --transport sctp "* ]]; then
        # both ends said which lower layer they ran (-d): DDP over SCTP, not MPA
        grep -q '^DDP over SCTP: IRD' "$d.cli" || problems+=" client not over SCTP;"
        grep -q '^DDP over SCTP: IRD' "$d.srv" || problems+=" server not over SCTP;"
    fi
    if [ -z "$problems" ]; then pass "$name"; else fail "$name:$problems"; fi
}

for addr in 127.0.0.1 ::1; do
    for size in 26 64 65535; do
        loopback "$addr" "$size"
    done
done

# DDP over SCTP (RFC 5043): the same pings and checks; 65535-octet pings with a large MTU
loopback 127.0.0.1 64 --transport sctp
loopback 127.0.0.1 65535 --transport sctp --sctp-mtu 9000
loopback ::1 64 --transport sctp

# -P: three clients at once against one persistent server.
PORT=$((PORT + 1))
if start_server "$W/persistent.srv" -P -a 127.0.0.1 -S 4096; then
    clients=()
    for i in 1 2 3; do
        timeout 60 "$BIN" ping -c -a 127.0.0.1 -p "$PORT" -C 50 -S $((1000 * i)) -V >"$W/p$i.cli" 2>&1 &
        clients+=($!)
    done
    ok=1
    for i in 0 1 2; do wait "${clients[$i]}" || ok=0; done
    kill -0 "$SRV" 2>/dev/null || ok=0 # still serving
    # A client exits once its own side has disconnected; the server may see the last
    # disconnect a little later on a loaded machine, so wait for it (at most 20 s).
    for _ in $(seq 200); do
        n=$(grep -c '^server DISCONNECT EVENT' "$W/persistent.srv")
        [ "$n" -lt 3 ] || break
        sleep 0.1
    done
    kill "$SRV" 2>/dev/null
    n=$(grep -c '^server DISCONNECT EVENT' "$W/persistent.srv")
    if [ $ok = 1 ] && [ "$n" = 3 ]; then
        pass "-P: three clients at once"
    else
        fail "-P: clients ok=$ok, $n disconnects: $(tail -q -n 2 "$W"/p?.cli "$W/persistent.srv")"
    fi
else
    fail "-P: the server did not start"
fi

# A server given no address listens on :: dual-stack: one persistent server per transport
# takes a client on 127.0.0.1 and one on ::1, each verified; with --trace (the shared spelling)
# and -6 on the IPv6 client.
for tr in tcp sctp; do
    PORT=$((PORT + 1))
    if start_server "$W/dual-$tr.srv" -P --transport "$tr"; then
        ok=""
        grep -q '^listening on :: port' "$W/dual-$tr.srv" || ok+=" not listening on ::;"
        timeout 60 "$BIN" ping -c -a 127.0.0.1 -p "$PORT" -C 5 -V --transport "$tr" \
            --trace "$W/dual-$tr.pcap" >"$W/dual4-$tr.cli" 2>&1 || ok+=" IPv4 client failed;"
        timeout 60 "$BIN" ping -c -6 -a ::1 -p "$PORT" -C 5 -V --transport "$tr" \
            >"$W/dual6-$tr.cli" 2>&1 || ok+=" IPv6 client failed;"
        [ -s "$W/dual-$tr.pcap" ] || ok+=" no --trace file;"
        kill -0 "$SRV" 2>/dev/null || ok+=" server gone;"
        kill "$SRV" 2>/dev/null
        if [ -z "$ok" ]; then
            pass "no -a, --transport $tr: the server takes 127.0.0.1 and ::1"
        else
            fail "no -a, --transport $tr:$ok $(tail -q -n 2 "$W"/dual?-$tr.cli "$W/dual-$tr.srv")"
        fi
    else
        fail "no -a, --transport $tr: the server did not start: $(tail -n 3 "$W/dual-$tr.srv")"
    fi
done

# Nobody listening: the client reports the refused connection and exits 1.
PORT=$((PORT + 1))
timeout 20 "$BIN" ping -c -a 127.0.0.1 -p "$PORT" -C 1 >"$W/refused" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q 'REJECTED' "$W/refused"; then
    pass "connection refused: exit 1"
else
    fail "connection refused: rc $rc: $(tail -n 2 "$W/refused")"
fi

# A client buffer larger than the server's -S: the server refuses to read it; both exit 1.
PORT=$((PORT + 1))
if start_server "$W/big.srv" -a 127.0.0.1 -S 64; then
    timeout 30 "$BIN" ping -c -a 127.0.0.1 -p "$PORT" -C 5 -S 100 >"$W/big.cli" 2>&1
    crc=$?
    timeout 20 tail --pid="$SRV" -f /dev/null
    wait "$SRV"
    src=$?
    if [ $crc = 1 ] && [ $src = 1 ] && grep -q 'larger than this server' "$W/big.srv" &&
        grep -q 'ended after 0 of 5 pings' "$W/big.cli"; then
        pass "client -S over the server's: both exit 1"
    else
        fail "client -S over the server's: client rc $crc, server rc $src"
    fi
else
    fail "size check: the server did not start"
fi

# The RFC 7306 §1.1 probe to a peer without atomics: Unexpected OpCode, reported on both sides.
PORT=$((PORT + 1))
if start_server "$W/atomic.srv" -a 127.0.0.1 -S 64; then
    timeout 30 "$BIN" ping -c -a 127.0.0.1 -p "$PORT" -C 1 -S 64 --x-atomic >"$W/atomic.cli" 2>&1
    crc=$?
    timeout 20 tail --pid="$SRV" -f /dev/null
    wait "$SRV"
    src=$?
    if [ $crc = 1 ] && grep -q 'atomic probe: FetchAdd of 0 posted' "$W/atomic.cli" &&
        grep -q 'cq completion failed: remote operation error (Terminate cause 000206)' "$W/atomic.cli" &&
        grep -q 'async event .*Terminate cause 000206, from the peer)' "$W/atomic.cli" &&
        grep -q 'async event .*Terminate cause 000206)' "$W/atomic.srv"; then
        pass "--x-atomic: the peer's Terminate 0/2/0x06 reported (server rc $src)"
    else
        fail "--x-atomic: client rc $crc: $(grep 'iwarp ping' "$W/atomic.cli" | head -n 4)"
    fi
else
    fail "--x-atomic: the server did not start"
fi

echo "$FAILED failed"
[ "$FAILED" = 0 ]
