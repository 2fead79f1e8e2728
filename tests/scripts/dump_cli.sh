#!/usr/bin/env bash
# CLI test of `iwarp dump`: help, bad arguments (a clear message and exit 2), an unreadable or
# non-capture file (exit 2), a clean capture (exit 0, one line per PDU), a damaged one (exit 1
# with the finding), and a live loopback run recorded by the library's trace (exit 0).
#   dump_cli.sh IWARP_BINARY
set -u
iwarp=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "PASS $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }

# expect RC DESCRIPTION -- ARGS...: exit status RC; for 2, a message on stderr, nothing on stdout
expect() {
  local want=$1 what=$2; shift 3
  "$iwarp" dump "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc != "$want" ]; then bad "$what: exit $rc, expected $want"; cat "$tmp/err"; return; fi
  if [ "$want" = 2 ] && { [ -s "$tmp/out" ] || ! grep -q 'iwarp dump' "$tmp/err"; }; then
    bad "$what: exit 2 without a clear message on stderr alone"; return
  fi
  ok "$what (exit $rc)"
}

"$iwarp" dump --help >"$tmp/help" 2>&1 && grep -q '^usage: iwarp dump' "$tmp/help" &&
  ok "--help" || bad "--help"
expect 2 "no file" --
expect 2 "two files" -- a.pcap b.pcap
expect 2 "unknown option" -- --frobnicate x.pcap
expect 2 "--port without a value" -- --port
expect 2 "--port not a number" -- --port abc x.pcap
expect 2 "--port out of range" -- --port 70000 x.pcap
expect 2 "missing file" -- "$tmp/none.pcap"
head -c 100 /dev/urandom >"$tmp/junk.pcap"
expect 2 "not a capture" -- "$tmp/junk.pcap"

# A clean exchange written by `iwarp demo` through the library's pcap writer.
"$iwarp" demo --quiet --pcap "$tmp/good.pcap" >/dev/null 2>&1 || bad "iwarp demo (good)"
expect 0 "clean demo capture" -- "$tmp/good.pcap"
grep -q 'RDMA Write' "$tmp/out" && grep -q 'RESULT' "$tmp/out" && ok "one line per PDU and a result" ||
  { bad "dump output lacks PDU lines"; cat "$tmp/out"; }
expect 0 "clean demo capture with --port 19875 -v" -- --port 19875 -v "$tmp/good.pcap"

# A damaged one: the CRC of an FPDU is wrong.
"$iwarp" demo --quiet --corrupt crc --pcap "$tmp/crc.pcap" >/dev/null 2>&1
expect 1 "capture with a bad CRC" -- "$tmp/crc.pcap"
grep -q 'ERROR' "$tmp/out" && ok "the bad CRC is reported" || { bad "no ERROR line"; cat "$tmp/out"; }

# A live loopback run recorded by the library's packet trace.
if IWARP_PCAP="$tmp/live.pcap" "$iwarp" perf --op write -s 4096 -n 20 >/dev/null 2>&1; then
  expect 0 "live trace of iwarp perf" -- "$tmp/live.pcap"
else
  bad "iwarp perf with a trace"
fi

echo "$pass passed, $fail failed"
[ $fail = 0 ]
