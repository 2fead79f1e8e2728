#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# DDP over SCTP captured from a real usrsctp association (sctp_trace_gen: llp_sctp's capture
# hook -> trace/trace_sctp.h, SCTP over UDP), judged by the wire checker (check.sh --sctp-udp
# PORT --checksums: zero errors; Wireshark verifies the IP/UDP checksums and the SCTP CRC32c we
# wrote) and by `iwarp dump` (PASS, every message decoded). Then the same with seeded loss,
# duplication and delay: `iwarp dump` still decodes every message once, in DDP-SSN order,
# although the capture holds retransmissions and chunks out of order.
# Without tshark the dump checks still run, and the test then reports SKIP (exit 77).
#   sctp_trace.sh SCTP_TRACE_GEN IWARP SHARED_DIR
set -u
gen=$1 iwarp=$2 check=$3/tools/wire-check/check.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "PASS $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }

out=$("$gen" "$tmp/sctp.pcap") || { echo "FAIL sctp_trace_gen"; exit 1; }
port=${out#udp_port=}
case "$port" in (''|*[!0-9]*) echo "FAIL sctp_trace_gen printed '$out'"; exit 1 ;; esac
ok "a usrsctp association recorded (server UDP port $port)"

# iwarp dump: 4 session control messages (2 streams x Initiate/Accept), 5 DDP segments
"$iwarp" dump "$tmp/sctp.pcap" >"$tmp/dump.txt" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q 'pdus=9 errors=0 warnings=0 sctp_associations=1 ddp=1' "$tmp/dump.txt" &&
   grep -q '^a0 i>r #-    INIT streams=2/2 adaptation=0x00000001 (DDP)$' "$tmp/dump.txt" &&
   grep -q '^a0 r>i #-    INIT-ACK streams=2/2 adaptation=0x00000001 (DDP)$' "$tmp/dump.txt" &&
   grep -q 'CTRL sid=1 ssn=0 EnhancedInitiate pd_len=18 IRD=16 ORD=8' "$tmp/dump.txt" &&
   grep -q 'CTRL sid=1 ssn=0 EnhancedAccept pd_len=18 IRD=8 ORD=16' "$tmp/dump.txt" &&
   grep -q 'i>r #[0-9 ]* DDP  sid=1 ssn=2 .* RDMA Write STag=0x00abcd03 ' "$tmp/dump.txt" &&
   grep -q 'i>r #[0-9 ]* DDP  sid=0 ssn=2 .* Send QN=0 MSN=2 MO=0 L=1 payload=174' "$tmp/dump.txt" &&
   grep -q 'r>i #[0-9 ]* DDP  sid=0 ssn=1 .* Send QN=0 MSN=1 MO=0 L=1 payload=67' "$tmp/dump.txt"; then
  ok "iwarp dump: PASS, every message decoded (port found by the SCTP CRC32c)"
else
  bad "iwarp dump (exit $rc)"; cat "$tmp/dump.txt"
fi
"$iwarp" dump --sctp-udp "$port" "$tmp/sctp.pcap" >"$tmp/dump2.txt" 2>&1
cmp -s "$tmp/dump.txt" "$tmp/dump2.txt" && ok "iwarp dump --sctp-udp $port: the same" ||
  { bad "iwarp dump --sctp-udp differs"; diff "$tmp/dump.txt" "$tmp/dump2.txt"; }

# Loss, duplicates, delays: every message still decoded once, in DDP-SSN order.
if out=$("$gen" "$tmp/faults.pcap" --faults); then
  "$iwarp" dump -v "$tmp/faults.pcap" >"$tmp/faults.txt" 2>&1; rc=$?
  # 4 control messages + 300 client segments + 75 server segments
  stats=$(grep '^a0 SCTP:' "$tmp/faults.txt")
  if [ $rc = 0 ] && grep -q 'pdus=379 errors=0 warnings=0' "$tmp/faults.txt" &&
     ! echo "$stats" | grep -q '(0 seen again)' && ! echo "$stats" | grep -q ', 0 waited'; then
    ok "faults: iwarp dump PASS ($stats)"
  else
    bad "faults: iwarp dump (exit $rc)"; grep -v '^a0 [ir]>[ir] #' "$tmp/faults.txt" | head -40
  fi
else
  bad "sctp_trace_gen --faults"
fi

if ! command -v tshark >/dev/null || [ ! -x "$check" ]; then
  echo "$pass passed, $fail failed; SKIP: tshark or $check missing, the capture is not judged"
  [ $fail = 0 ] && exit 77 || exit 1
fi
if "$check" -q --checksums --sctp-udp "$port" "$tmp/sctp.pcap" >"$tmp/judge.txt" 2>&1 &&
   grep -q 'SUMMARY: errors=0 ;' "$tmp/judge.txt" &&
   grep -q 'iwarp_pdus=9 (sctp-ctl=4, sctp-seg=5)' "$tmp/judge.txt"; then
  ok "check.sh --checksums --sctp-udp $port: PASS, zero errors, 9 PDUs"
else
  bad "check.sh on the usrsctp capture"; cat "$tmp/judge.txt"
fi

echo "$pass passed, $fail failed"
[ $fail = 0 ]
