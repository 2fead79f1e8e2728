#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CLI test of `iwarp dump`: help, bad arguments (a clear message and exit 2), an unreadable or
# non-capture file (exit 2), a clean capture (exit 0, one line per PDU), a damaged one (exit 1
# with the finding), a live loopback run recorded by the library's trace (exit 0), and DDP over
# SCTP: gen_pcap.py's SCTP captures decoded to known lines (golden), over IP and over UDP alike,
# UDP ports found by --sctp-udp or by the SCTP CRC32c.
#   dump_cli.sh IWARP_BINARY [WIRECHECK_DIR]   (default: ../shared/tools/wire-check)
set -u
iwarp=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wc=${2:-$here/../../../shared/tools/wire-check}
. "$here/../support/optional.sh"
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
expect 2 "--sctp-udp without a value" -- --sctp-udp
expect 2 "--sctp-udp not a number" -- --sctp-udp abc x.pcap
expect 2 "--sctp-udp zero" -- --sctp-udp 0 x.pcap
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

# DDP over SCTP (RFC 5043): gen_pcap.py's captures, SCTP over IP and over UDP 9899.
# golden FILE LINE...: every LINE appears in FILE exactly
golden() {
  local f=$1; shift
  for l in "$@"; do grep -qxF -- "$l" "$f" || { bad "missing line: $l"; cat "$f"; return 1; }; done
  return 0
}
if have "DDP over SCTP captures" python3 "$wc/gen_pcap.py"; then
  python3 "$wc/gen_pcap.py" "$tmp" good_sctp good_sctp_udp bad_sctp_ddp_version >/dev/null
  expect 0 "good_sctp (SCTP over IP)" -- "$tmp/good_sctp.pcap"
  cp "$tmp/out" "$tmp/sctp_ip.txt"
  golden "$tmp/sctp_ip.txt" \
    'a0 i>r #-    INIT streams=10/10 adaptation=0x00000001 (DDP)' \
    'a0 r>i #-    INIT-ACK streams=10/10 adaptation=0x00000001 (DDP)' \
    'a0 i>r #1    CTRL sid=0 ssn=0 EnhancedInitiate pd_len=10 IRD=16 ORD=8 p2p=0 rtr=' \
    'a0 r>i #2    CTRL sid=0 ssn=0 EnhancedAccept pd_len=6 IRD=8 ORD=16 p2p=0 rtr=' \
    'a0 i>r #3    DDP  sid=0 ssn=1 seglen=314   | RDMA Write STag=0x00000101 TO=0x4000 L=0 payload=300' \
    'a0 i>r #6    DDP  sid=0 ssn=4 seglen=46    | RDMA Read Request QN=1 MSN=1 MO=0 L=1 sink=0x00000202@0x0 size=64 src=0x00000303@0x80' \
    'a0 r>i #8    DDP  sid=0 ssn=2 seglen=21    | Send with Invalidate QN=0 MSN=1 MO=0 L=1 inval=0x00000101 payload=3' \
    'a0 r>i #9    DDP  sid=0 ssn=3 seglen=22    | Terminate QN=2 MSN=1 MO=0 L=1 0/2/0x06 [RDMAP/Remote Operation/Unexpected OpCode] M=0 D=0 R=0' \
    'SUMMARY: tcp_connections=0 mpa=0 pdus=9 errors=0 warnings=0 sctp_associations=1 ddp=1' &&
    ok "good_sctp: golden lines"
  expect 0 "good_sctp_udp (SCTP over UDP 9899)" -- "$tmp/good_sctp_udp.pcap"
  cmp -s "$tmp/out" "$tmp/sctp_ip.txt" && ok "over UDP it decodes exactly as over IP" ||
    { bad "good_sctp_udp decodes differently"; diff "$tmp/sctp_ip.txt" "$tmp/out"; }
  expect 1 "bad_sctp_ddp_version" -- "$tmp/bad_sctp_ddp_version.pcap"
  golden "$tmp/out" \
    'a0 i>r #5    DDP  sid=0 ssn=3 seglen=27    | Send QN=0 MSN=1 MO=0 L=1 (invalid: IWARP_ERR_DDP_VERSION)' \
    '  ERROR a0 i>r #5 [ddp-version] invalid DDP version; Terminate 1/2/0x06 DDP/Untagged/Invalid DDP version' \
    'RESULT: FAIL' && ok "bad_sctp_ddp_version: golden lines"
  # Other UDP ports: found by a good CRC32c; with the CRC zeroed (as offloading leaves it) only
  # when named by --sctp-udp.
  python3 - "$wc" "$tmp" <<'PY'
import sys
sys.path.insert(0, sys.argv[1]); sys.dont_write_bytecode = True
import gen_pcap
gen_pcap.sctp_session(udp_encap=5555).write(sys.argv[2] + "/udp5555.pcap")
gen_pcap.crc32c = lambda data, crc=0: 0  # its only use in an SCTP session: the packet CRC
gen_pcap.sctp_session(udp_encap=5555).write(sys.argv[2] + "/udp5555_nocrc.pcap")
PY
  expect 0 "SCTP over UDP 5555 found by its CRC32c" -- "$tmp/udp5555.pcap"
  grep -q 'pdus=9 errors=0' "$tmp/out" && ok "all 9 PDUs on port 5555" || { bad "port 5555"; cat "$tmp/out"; }
  expect 1 "zeroed CRC on UDP 5555: not taken for SCTP" -- "$tmp/udp5555_nocrc.pcap"
  grep -q 'no iWARP PDUs found' "$tmp/out" && ok "nothing decoded without --sctp-udp" ||
    { bad "zeroed CRC decoded"; cat "$tmp/out"; }
  expect 0 "--sctp-udp 5555 with zeroed CRCs" -- --sctp-udp 5555 "$tmp/udp5555_nocrc.pcap"
  grep -q 'pdus=9 errors=0' "$tmp/out" && ok "all 9 PDUs with --sctp-udp" || { bad "--sctp-udp"; cat "$tmp/out"; }
  expect 1 "--port on another SCTP port" -- --port 1 "$tmp/good_sctp.pcap"
fi

echo "$pass passed, $fail failed"
optional_exit "$fail"
