#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The wire judge (../shared/tools/wire-check/check.sh) on live loopback runs that the library
# recorded itself (iwarp_ctx_attr.trace_pcap): e2e_capture writes one capture per MPA variant
# (rev 1/2, CRC on/off, each peer-to-peer RTR, markers); each must PASS with zero errors, the
# judge warning at most about [crc-off].
#   e2e_capture.sh E2E_CAPTURE_BINARY SHARED_DIR
set -u
bin=$1 shared=$2
check=$shared/tools/wire-check/check.sh
if ! command -v tshark >/dev/null; then echo "SKIP: tshark is not installed (scripts/install-deps.sh installs it)"; exit 77; fi
[ -x "$check" ] || { echo "SKIP: $check not found (the shared folder must sit beside the checkout)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "PASS $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }

if ! IWARP_E2E_CAPTURE_DIR=$tmp "$bin" >"$tmp/run.log" 2>&1; then
  bad "e2e_capture: the runs themselves failed"; cat "$tmp/run.log"
fi
n=0
for pcap in "$tmp"/*.pcap; do
  [ -e "$pcap" ] || continue
  n=$((n+1))
  name=$(basename "$pcap" .pcap)
  # --checksums: the trace writes real IP/TCP checksums (it is a synthetic conversation).
  if "$check" -q --checksums "$pcap" >"$tmp/$name.judge" 2>&1 &&
     grep -q "SUMMARY: errors=0 ;" "$tmp/$name.judge" &&
     ! grep -E '^ *WARN' "$tmp/$name.judge" | grep -vqE '\[crc-off\]'; then
    ok "$name: judge PASS, 0 errors ($(grep -o 'fpdu=[0-9]*' "$tmp/$name.judge"), $(grep -o 'crc good=[0-9]*' "$tmp/$name.judge"))"
  else
    bad "$name: judge did not pass cleanly"; cat "$tmp/$name.judge"
  fi
done
[ "$n" = 9 ] || bad "expected 9 captures, found $n"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
