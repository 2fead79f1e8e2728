#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# dropin.exec: `iwarp exec` (tools/iwarp/exec.c), which runs an unmodified program on the
# drop-in libibverbs.so.1/librdmacm.so.1. Checked:
#  - where it finds the libraries: --print-dir prints the build tree's dropin/ (beside the iwarp
#    binary); --dropin-dir D and IWARP_DROPIN_DIR=D print D (the option first); a D without
#    libibverbs.so.1 is an error (127), not a reason to look further;
#  - usage errors (unknown option, bad --progress or --first-delay, an option without its value,
#    no PROGRAM) exit 2 with a message and run nothing; a PROGRAM that is not there exits 127;
#    the exit status is otherwise PROGRAM's;
#  - the environment PROGRAM gets (`iwarp exec ... -- env`): LD_LIBRARY_PATH is the drop-in
#    directory, followed by the one already set, with no empty entry; each option sets its
#    IWARP_* variable and no other (--crc IWARP_MPA_CRC=1, --markers IWARP_MPA_MARKERS=1,
#    --no-p2p IWARP_MPA_P2P=0, --rtr IWARP_MPA_RTR, --first-delay IWARP_FIRST_FPDU_DELAY_MS,
#    --progress IWARP_PROGRESS, --pcap IWARP_PCAP); an option overrides the variable, a variable
#    without an option passes through; PROGRAM's own arguments (even ones spelled like ours)
#    are passed on untouched;
#  - Debian's rping, unmodified, under `iwarp exec` at both ends over 127.0.0.1 (-C 5 -V -v):
#    both exit 0 and the client printed its 5 pings; the server's --pcap file exists (proof the
#    drop-in was loaded: the system's librdmacm, tried as a control, writes none) and the wire
#    judge finds nothing in it but [crc-off] without --crc, nothing at all and every FPDU with a
#    good CRC with --crc on both ends, and the MPA Request shows the client's --markers and
#    --rtr read (peer-to-peer), or no peer-to-peer with --no-p2p.
#
# Usage: exec.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Exit: 0 all passed, 1 a check failed, 77 skipped (rping not installed; the checks that need no
# rping still run and must pass).
set -u
BUILD=$(realpath "${1:?usage: exec.sh BUILD_DIR [SHARED_DIR]}")
# shellcheck disable=SC2034 # used by rdmacm_lib.sh
SHARED=$(realpath "${2:-$(dirname "$0")/../../../shared}")
HERE=$(dirname "$(realpath "$0")")
IWARP=$BUILD/iwarp
DROPIN=$BUILD/dropin
[ -x "$IWARP" ] || { echo "exec.sh: no $IWARP"; exit 1; }
[ -e "$DROPIN/librdmacm.so.1" ] || { echo "exec.sh: no drop-in in $DROPIN"; exit 1; }
# What iwarp exec sets must come from it alone, not from the caller's environment.
unset LD_LIBRARY_PATH "${!IWARP_@}"
W=$(mktemp -d "${TMPDIR:-/tmp}/dropin_exec.XXXXXX")
# shellcheck source=rdmacm_lib.sh
. "$HERE/rdmacm_lib.sh"
# this script's band of ports (see perftest.sh): 29000-29499
PORT=$((29000 + $$ % 400))

# expect WHAT GOT WANT: a line when GOT is not WANT.
expect() { [ "$2" = "$3" ] || echo "    $1: got '$2', expected '$3'"; }

# ex OUT ARGS...: `iwarp exec ARGS` with stdout in OUT, stderr in OUT.err; its exit status.
ex() {
    local out=$1
    shift
    "$IWARP" exec "$@" >"$out" 2>"$out.err"
}

# var OUT NAME: NAME's value in env's output OUT, or <unset>.
var() {
    local line
    line=$(grep -m1 "^$2=" "$1") || { echo "<unset>"; return; }
    echo "${line#*=}"
}

# iwarp_vars OUT: the IWARP_* lines of env's output OUT, sorted, on one line.
iwarp_vars() { grep '^IWARP_' "$1" | sort | tr '\n' ' ' | sed 's/ $//'; }

# usage_error NAME RC_WANTED MESSAGE ARGS...: `iwarp exec ARGS` exits RC_WANTED, its stderr has
# MESSAGE (a fixed string), and the program it was given (touch MARK, if any) did not run.
usage_error() {
    local name=$1 want=$2 msg=$3 rc out=$W/usage
    shift 3
    rm -f "$W/ran"
    ex "$out" "$@"
    rc=$?
    report "$name" "$(
        expect "exit status" "$rc" "$want"
        grep -qF -- "$msg" "$out.err" || echo "    stderr lacks '$msg': $(head -n 2 "$out.err")"
        [ ! -e "$W/ran" ] || echo "    the program ran"
    )"
}

# --- where the libraries are ------------------------------------------------------------------

ALT=$W/alt EMPTY=$W/empty
mkdir -p "$ALT" "$EMPTY"
ln -s "$DROPIN"/libibverbs.so.1 "$DROPIN"/librdmacm.so.1 "$ALT"/

ex "$W/dir" --print-dir
rc=$?
report "--print-dir prints the build tree's dropin/" "$(
    expect "exit status" "$rc" 0
    expect "printed" "$(cat "$W/dir")" "$DROPIN"
    [ ! -s "$W/dir.err" ] || echo "    stderr: $(head -n 2 "$W/dir.err")"
)"
report "--dropin-dir D and IWARP_DROPIN_DIR=D print D; the option first" "$(
    ex "$W/dir" --dropin-dir "$ALT" --print-dir
    expect "--dropin-dir D --print-dir: exit" "$?" 0
    expect "--dropin-dir D --print-dir" "$(cat "$W/dir")" "$ALT"
    ex "$W/dir" --print-dir --dropin-dir "$ALT"
    expect "--print-dir --dropin-dir D" "$(cat "$W/dir")" "$ALT"
    IWARP_DROPIN_DIR=$ALT ex "$W/dir" --print-dir
    expect "IWARP_DROPIN_DIR=D --print-dir" "$(cat "$W/dir")" "$ALT"
    IWARP_DROPIN_DIR=$EMPTY ex "$W/dir" --dropin-dir "$ALT" --print-dir
    expect "IWARP_DROPIN_DIR=EMPTY --dropin-dir D --print-dir" "$(cat "$W/dir")" "$ALT"
    ex "$W/env" --dropin-dir "$ALT" -- env
    expect "--dropin-dir D -- env: LD_LIBRARY_PATH" "$(var "$W/env" LD_LIBRARY_PATH)" "$ALT"
)"
usage_error "--dropin-dir without libibverbs.so.1: exit 127, no fallback" 127 \
    "no drop-in libibverbs.so.1 in $EMPTY" --dropin-dir "$EMPTY" -- touch "$W/ran"
# (the message names the directory the variable gave)
IWARP_DROPIN_DIR=$EMPTY usage_error "IWARP_DROPIN_DIR without libibverbs.so.1: exit 127, no fallback" \
    127 "no drop-in libibverbs.so.1 in $EMPTY " -- touch "$W/ran"

# --- usage ------------------------------------------------------------------------------------

ex "$W/help" --help
rc=$?
report "--help: exit 0, the usage and every option" "$(
    expect "exit status" "$rc" 0
    grep -q '^usage: iwarp exec \[OPTIONS\] \[--\] PROGRAM' "$W/help" || echo "    no usage line"
    for o in crc no-crc markers no-p2p rtr first-delay connect-retry progress trace pcap dropin-dir print-dir; do
        grep -q -- "--$o\b" "$W/help" || echo "    --help does not list --$o"
    done
)"
usage_error "an unknown option: exit 2" 2 "iwarp exec: unknown option '--bogus'" \
    --bogus -- touch "$W/ran"
usage_error "--progress fast: exit 2" 2 "invalid --progress 'fast' (thread or caller)" \
    --progress fast -- touch "$W/ran"
usage_error "--first-delay 60001: exit 2" 2 "invalid --first-delay '60001' (0..60000 ms)" \
    --first-delay 60001 -- touch "$W/ran"
usage_error "--first-delay x: exit 2" 2 "invalid --first-delay 'x'" \
    --first-delay x -- touch "$W/ran"
usage_error "--connect-retry -1: exit 2" 2 "invalid --connect-retry '-1' (0..3600000 ms)" \
    --connect-retry -1 -- touch "$W/ran"
usage_error "--rtr read,bogus: exit 2" 2 "invalid --rtr 'read,bogus' (write, read, send, comma-separated)" \
    --rtr read,bogus -- touch "$W/ran"
usage_error "--rtr followed by '--' (its value missing): exit 2" 2 "invalid --rtr '--'" \
    --rtr -- touch "$W/ran"
usage_error "--pcap without its value: exit 2" 2 "option '--pcap' needs a value" --pcap
usage_error "options and no PROGRAM: exit 2" 2 "iwarp exec: no PROGRAM to run" --crc
usage_error "'--' and no PROGRAM: exit 2" 2 "iwarp exec: no PROGRAM to run" --crc --
usage_error "nothing at all: exit 2" 2 "iwarp exec: no PROGRAM to run"
usage_error "a PROGRAM that is not there: exit 127" 127 \
    "iwarp exec: $W/no-such-program: No such file or directory" -- "$W/no-such-program"
ex "$W/rc" -- sh -c 'exit 7'
rc=$?
report "the exit status is PROGRAM's" "$(expect "exit status" "$rc" 7)"

# --- the environment PROGRAM gets -------------------------------------------------------------

ex "$W/env" -- env
rc=$?
report "no options: LD_LIBRARY_PATH is the drop-in directory, no IWARP_* variable" "$(
    expect "exit status" "$rc" 0
    expect LD_LIBRARY_PATH "$(var "$W/env" LD_LIBRARY_PATH)" "$DROPIN"
    expect "IWARP_* variables" "$(iwarp_vars "$W/env")" ""
)"
report "an LD_LIBRARY_PATH already set is kept after the drop-in directory" "$(
    LD_LIBRARY_PATH=/opt/one:/opt/two ex "$W/env" -- env
    expect "LD_LIBRARY_PATH=/opt/one:/opt/two" "$(var "$W/env" LD_LIBRARY_PATH)" \
        "$DROPIN:/opt/one:/opt/two"
    # an empty one adds no empty entry (which would be the current directory)
    LD_LIBRARY_PATH='' ex "$W/env" -- env
    expect "LD_LIBRARY_PATH=''" "$(var "$W/env" LD_LIBRARY_PATH)" "$DROPIN"
)"
PCAP_NAME=$W/some.pcap
# each option alone: its one variable, nothing else
while IFS='|' read -r opts want; do
    # shellcheck disable=SC2086 # opts is a list of arguments
    ex "$W/env" $opts -- env
    rc=$?
    report "$opts: $want and no other IWARP_* variable" "$(
        expect "exit status" "$rc" 0
        expect "IWARP_* variables" "$(iwarp_vars "$W/env")" "$want"
        expect LD_LIBRARY_PATH "$(var "$W/env" LD_LIBRARY_PATH)" "$DROPIN"
    )"
done <<EOF
--crc|IWARP_MPA_CRC=1
--markers|IWARP_MPA_MARKERS=1
--no-p2p|IWARP_MPA_P2P=0
--rtr read|IWARP_MPA_RTR=read
--rtr=write,send|IWARP_MPA_RTR=write,send
--first-delay 5|IWARP_FIRST_FPDU_DELAY_MS=5
--first-delay=60000|IWARP_FIRST_FPDU_DELAY_MS=60000
--first-delay 0|IWARP_FIRST_FPDU_DELAY_MS=0
--connect-retry 5000|IWARP_CONNECT_RETRY_MS=5000
--progress caller|IWARP_PROGRESS=caller
--progress thread|IWARP_PROGRESS=thread
--pcap $PCAP_NAME|IWARP_PCAP=$PCAP_NAME
EOF
ex "$W/env" --crc --markers --no-p2p --rtr read --first-delay 5 --progress caller \
    --pcap "$PCAP_NAME" -- env
rc=$?
report "all options at once: all seven variables" "$(
    expect "exit status" "$rc" 0
    expect "IWARP_* variables" "$(iwarp_vars "$W/env")" \
        "IWARP_FIRST_FPDU_DELAY_MS=5 IWARP_MPA_CRC=1 IWARP_MPA_MARKERS=1 IWARP_MPA_P2P=0 IWARP_MPA_RTR=read IWARP_PCAP=$PCAP_NAME IWARP_PROGRESS=caller"
    [ ! -e "$PCAP_NAME" ] || echo "    env (no RDMA) left a capture: iwarp exec itself wrote $PCAP_NAME"
)"
IWARP_MPA_CRC=0 IWARP_PROGRESS=thread IWARP_MPA_RTR=send IWARP_LOG=debug \
    IWARP_FIRST_FPDU_DELAY_MS=250 ex "$W/env" --crc --progress caller --first-delay 0 -- env
rc=$?
report "an option overrides its variable (--first-delay 0 too); a variable without an option passes through" "$(
    expect "exit status" "$rc" 0
    expect "IWARP_* variables" "$(iwarp_vars "$W/env")" \
        "IWARP_FIRST_FPDU_DELAY_MS=0 IWARP_LOG=debug IWARP_MPA_CRC=1 IWARP_MPA_RTR=send IWARP_PROGRESS=caller"
)"
# shellcheck disable=SC2016 # $@ and ${...} are the inner shell's
ARGS_SH='printf "%s|" "$@"; echo " crc=${IWARP_MPA_CRC-unset} markers=${IWARP_MPA_MARKERS-unset}"'
report "PROGRAM's own arguments are its own, with or without '--'" "$(
    ex "$W/args" --markers sh -c "$ARGS_SH" sh --crc --pcap x -- -y
    expect "iwarp exec --markers sh -c ... --crc --pcap x -- -y" "$(cat "$W/args")" \
        "--crc|--pcap|x|--|-y| crc=unset markers=1"
    ex "$W/args" --markers -- sh -c "$ARGS_SH" sh --crc --
    expect "iwarp exec --markers -- sh -c ... --crc --" "$(cat "$W/args")" \
        "--crc|--| crc=unset markers=1"
)"

# --- rping on the drop-in through iwarp exec --------------------------------------------------

if ! command -v rping >/dev/null; then
    finish || exit 1
    echo "SKIP: rping (rdmacm-utils) is not installed"
    exit 77
fi

# pings FILE COUNT: the client's "ping data:" lines are COUNT, numbered 0..COUNT-1.
pings() {
    local n
    n=$(grep -c '^ping data: rdma-ping-' "$1")
    [ "$n" = "$2" ] || { echo "    client printed $n pings, not $2: $(tail -n 2 "$1")"; return; }
    grep -q "^ping data: rdma-ping-$(($2 - 1)): " "$1" || echo "    the last ping is not number $(($2 - 1))"
}

# mpa_req PCAP: the MPA Request line of the judge's full listing of PCAP (port PORT).
mpa_req() { "$JUDGE" "$1" "$PORT" 2>/dev/null | grep -m1 ' MPA-REQ '; }

# rping_pair NAME ALLOW SERVER_OPTS CLIENT_OPTS [CHECK]: `iwarp exec SERVER_OPTS --pcap PCAP --
# rping -s` and `iwarp exec CLIENT_OPTS -- rping -c -v -V -C 5` on 127.0.0.1 PORT; both must exit
# 0, the client print 5 pings, the capture exist and the judge find nothing in it but the
# categories ALLOW; then CHECK (a function, given the capture) prints any further problem.
rping_pair() {
    local name=$1 allow=$2 srv_opts=$3 cli_opts=$4 check=${5:-} pcap srv src crc
    next_port
    pcap=$W/$PORT.pcap
    # shellcheck disable=SC2086 # the options are lists of arguments
    timeout 20 "$IWARP" exec $srv_opts --pcap "$pcap" -- rping -s -a 127.0.0.1 -p "$PORT" \
        >"$W/$PORT.server" 2>&1 &
    srv=$!
    KIDS+=("$srv")
    wait_for -p "$srv" 10 "the server on port $PORT" listening "$PORT"
    # shellcheck disable=SC2086
    timeout 15 "$IWARP" exec $cli_opts -- rping -c -v -V -C 5 -a 127.0.0.1 -p "$PORT" \
        >"$W/$PORT.client" 2>&1
    crc=$?
    reap "$srv" "$crc"
    src=$?
    report "$name" "$(
        [ "$src" = 0 ] || echo "    server exit $src: $(tail -n 3 "$W/$PORT.server")"
        [ "$crc" = 0 ] || echo "    client exit $crc: $(tail -n 3 "$W/$PORT.client")"
        pings "$W/$PORT.client" 5
        # only the drop-in knows IWARP_PCAP: the capture proves rping ran on it
        [ -s "$pcap" ] || echo "    no capture $pcap: rping did not run on the drop-in"
        judge "$pcap" "$PORT" "$allow"
        [ -z "$check" ] || "$check" "$pcap"
    )"
}

# Without --crc, CRC is off: the judge's only findings are [crc-off], and there is one.
crc_off() {
    grep -q '\[crc-off\]' "$1.judge" 2>/dev/null || echo "    no [crc-off] finding: is CRC on?"
    grep -qE 'crc good=0 bad=0' "$1.judge" 2>/dev/null ||
        echo "    CRC is off but: $(grep -h 'crc good' "$1.judge")"
}
rping_pair "rping -C 5 -V under iwarp exec at both ends (server --pcap)" crc-off "" "" crc_off

crc_on() {
    grep -qE 'crc good=[1-9][0-9]* bad=0 unchecked=0' "$1.judge" 2>/dev/null ||
        echo "    --crc but not every FPDU has a good CRC: $(grep -h 'crc good' "$1.judge")"
}
rping_pair "rping under iwarp exec --crc at both ends: every FPDU has a good CRC" "" \
    --crc --crc crc_on

# The client's MPA Request asks for markers and offers only a Read RTR (peer-to-peer).
markers_rtr() {
    local req
    req=$(mpa_req "$1")
    [[ $req == *" M=1 "* ]] || echo "    --markers: the MPA Request has no M=1: $req"
    [[ $req == *"A(p2p)=1 B(send-rtr)=0 C(write-rtr)=0 D(read-rtr)=1"* ]] ||
        echo "    --rtr read: the MPA Request offers other RTRs: $req"
}
rping_pair "rping client under iwarp exec --markers --rtr read --first-delay 5 --progress caller" \
    crc-off "--progress caller" "--markers --rtr read --first-delay 5 --progress caller" markers_rtr

no_p2p() {
    local req
    req=$(mpa_req "$1")
    [[ $req == *"A(p2p)=0 B(send-rtr)=0 C(write-rtr)=0 D(read-rtr)=0"* ]] ||
        echo "    --no-p2p: the MPA Request is not plain MPA: $req"
}
rping_pair "rping client under iwarp exec --no-p2p: plain MPA" crc-off "" --no-p2p no_p2p

# The control: the system's librdmacm (no iwarp exec) knows no IWARP_PCAP and writes nothing.
next_port
IWARP_PCAP=$W/system.pcap timeout 5 rping -c -C 1 -a 127.0.0.1 -p "$PORT" >"$W/system.out" 2>&1
report "control: rping without iwarp exec (the system's librdmacm) writes no IWARP_PCAP capture" "$(
    [ ! -e "$W/system.pcap" ] || echo "    $W/system.pcap exists: is the drop-in the system's library?"
)"
finish
