#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# perf_stats.sh IWARP  -  the diagnostics through `iwarp perf` in loopback (docs/environment.md):
#   --stats prints both endpoints' counters at the end, and they agree (what the client sent the
#   server received, segment for segment and octet for octet; no CRC errors, no Terminates);
#   with --json the document stays alone on stdout and the counters go to stderr;
#   IWARP_STATS=1 prints each context's counters when it is destroyed (stderr);
#   IWARP_LOG=info:FILE writes the connection lines of both contexts to FILE, nothing to stderr.
set -uo pipefail
IWARP=${1:?usage: perf_stats.sh IWARP}
. "$(dirname "$0")/../support/optional.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# the value after WORD in a "... stats: qps ..." line of WHO (client|server)
field() { # FILE WHO REGEX
  grep -E "^ ?$2 stats: qps" "$1" | sed -nE "s/.*$3.*/\1/p"
}

# 1. --stats: 50 Sends of 1000 octets, both endpoints' counters
if "$IWARP" perf --op send -s 1000 -n 50 --stats >"$TMP/out" 2>"$TMP/err"; then
  ctx=$(field "$TMP/out" client 'tx ([0-9]+) segments')
  ctb=$(field "$TMP/out" client 'tx [0-9]+ segments ([0-9]+) bytes')
  srx=$(field "$TMP/out" server 'rx ([0-9]+) segments')
  srb=$(field "$TMP/out" server 'rx [0-9]+ segments ([0-9]+) bytes')
  crx=$(field "$TMP/out" client 'rx ([0-9]+) segments')
  stx=$(field "$TMP/out" server 'tx ([0-9]+) segments')
  if [[ -z "$ctx" || -z "$srx" || -z "$crx" || -z "$stx" ]]; then
    fail "--stats: no counters of both endpoints"; cat "$TMP/out"
  elif [[ "$ctx" != "$srx" || "$ctb" != "$srb" || "$crx" != "$stx" ]]; then
    fail "--stats: client tx $ctx/$ctb, server rx $srx/$srb, client rx $crx, server tx $stx"
  elif (( ctb < 50000 || ctx < 50 )); then
    fail "--stats: client sent $ctx segments, $ctb octets: fewer than the 50 x 1000 of the run"
  elif [[ $(grep -c 'stats: Terminates \(sent\|received\): none' "$TMP/out") != 4 ]] ||
       [[ $(grep -c 'crc errors 0;' "$TMP/out") != 2 ]]; then
    fail "--stats: a Terminate or a CRC error in a clean run"; cat "$TMP/out"
  else
    ok "--stats: client tx $ctx segments $ctb octets = server rx; server tx $stx = client rx"
  fi
else
  fail "--stats run exited $?"; cat "$TMP/err"
fi

# 2. --json --stats: the document alone on stdout, the counters on stderr
if ! have "--json --stats (python3 reads the JSON)" python3; then :
elif "$IWARP" perf --op write -s 4096 -n 20 --json --stats >"$TMP/json" 2>"$TMP/err" &&
   python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/json" &&
   [[ $(grep -c 'stats: qps 1;' "$TMP/err") == 2 ]]; then
  ok "--json --stats: JSON on stdout, both endpoints' counters on stderr"
else
  fail "--json --stats"; cat "$TMP/json" "$TMP/err"
fi

# 3. IWARP_STATS=1: each context's counters when it is destroyed
if IWARP_STATS=1 "$IWARP" perf --op send -s 64 -n 10 >"$TMP/out" 2>"$TMP/err" &&
   [[ $(grep -cE 'Z libiwarp\[[0-9]+\] ctx [0-9]+ stats: qps 1;' "$TMP/err") == 2 ]]; then
  ok "IWARP_STATS=1: two contexts' counters on stderr"
else
  fail "IWARP_STATS=1"; cat "$TMP/err"
fi

# 4. IWARP_LOG=info:FILE: the connection lines in the file, stderr silent
if IWARP_LOG="info:$TMP/log" "$IWARP" perf --op send -s 64 -n 10 >"$TMP/out" 2>"$TMP/err" &&
   [[ ! -s "$TMP/err" ]] &&
   [[ $(grep -c 'info: cm: connection established QP' "$TMP/log") == 2 ]]; then
  ok "IWARP_LOG=info:FILE: both ends' established lines in the file"
else
  fail "IWARP_LOG=info:FILE"; cat "$TMP/err" "$TMP/log"
fi

if ((fails)); then
  echo "$fails failure(s)"
else
  echo "all ok"
fi
optional_exit "$fails"
