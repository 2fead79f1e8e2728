#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The wire judge (../shared/tools/wire-check/check.sh, Wireshark 4.0 + RFC rules) on captures
# written by `iwarp demo` through the library's pcap writer:
#  - every MPA variant (rev 1/2, CRC on/off, markers both ways, each peer-to-peer RTR, IPv6, the
#    DDP-level streams) must PASS with zero errors, and so must the golden captures of
#    tests/vectors/golden;
#  - each damaged exchange (--corrupt KIND) must be rejected by our own receiver with the expected
#    error and Terminate cause AND by the judge for the same reason.
#   judge.sh IWARP_BINARY SHARED_DIR
set -u
iwarp=$1 shared=$2
check=$shared/tools/wire-check/check.sh
if ! command -v tshark >/dev/null; then echo "SKIP: tshark is not installed (scripts/install-deps.sh installs it)"; exit 77; fi
[ -x "$check" ] || { echo "SKIP: $check not found (the shared folder must sit beside the checkout)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "PASS $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }

clean() { # clean NAME PCAP   (the judge may only WARN about crc-off)
  local name=$1 pcap=$2
  # crc-off: RFC 5044 §4.4 asks for CRC by default, so a --no-crc run is warned about.
  if "$check" -q --checksums "$pcap" 19875 >"$tmp/$name.judge" 2>&1 &&
     grep -q "SUMMARY: errors=0 ;" "$tmp/$name.judge" &&
     ! grep -E '^ *WARN' "$tmp/$name.judge" | grep -vqE '\[crc-off\]'; then
    ok "$name: judge PASS, 0 errors ($(grep -o 'fpdu=[0-9]*' "$tmp/$name.judge"), $(grep -o 'crc good=[0-9]*' "$tmp/$name.judge"))"
  else
    bad "$name: judge did not pass cleanly"; cat "$tmp/$name.judge"
  fi
}

good() { # good NAME DEMO-OPTIONS...
  local name=$1; shift
  if ! "$iwarp" demo --quiet --pcap "$tmp/$name.pcap" "$@" >"$tmp/$name.demo" 2>&1; then
    bad "$name: iwarp demo $*"; cat "$tmp/$name.demo"; return
  fi
  clean "$name" "$tmp/$name.pcap"
}

broken() { # broken NAME JUDGE-CATEGORY OUR-ERROR OUR-CAUSE DEMO-OPTIONS...
  local name=$1 category=$2 err=$3 cause=$4; shift 4
  local pcap=$tmp/$name.pcap
  if ! "$iwarp" demo --quiet --pcap "$pcap" "$@" >"$tmp/$name.demo" 2>&1; then
    bad "$name: our receiver did not detect the damage"; cat "$tmp/$name.demo"; return
  fi
  if ! grep -q "^detected: $err " "$tmp/$name.demo"; then
    bad "$name: expected $err"; cat "$tmp/$name.demo"; return
  fi
  if [ "$cause" != "-" ] && ! grep -q "^detected-cause: $cause\$" "$tmp/$name.demo"; then
    bad "$name: expected Terminate cause $cause"; cat "$tmp/$name.demo"; return
  fi
  "$check" -q "$pcap" 19875 >"$tmp/$name.judge" 2>&1
  local rc=$?
  if [ $rc = 1 ] && grep -q "ERROR .*\[$category\]" "$tmp/$name.judge"; then
    ok "$name: we report $err ($cause), the judge [$category]"
  else
    bad "$name: judge exit $rc, expected FAIL with [$category]"; cat "$tmp/$name.judge"
  fi
}

good rev2-crc
good rev2-nocrc           --no-crc
good rev1-crc             --mpa-rev 1
good rev1-nocrc           --mpa-rev 1 --no-crc
# At EMSS 1460 (the default) this exchange has an FPDU whose TCP segment ends exactly where the
# next marker goes: RFC 5044 §4.3 puts that marker (FPDUPTR 0) at the start of the next FPDU.
good rev2-crc-markers     --markers
good rev1-nocrc-markers   --mpa-rev 1 --no-crc --markers
good rev2-p2p-write       --p2p write
good rev2-p2p-read        --p2p read
good rev2-p2p-send        --p2p send
good rev2-p2p-read-markers --p2p read --markers --no-crc
good rev2-ipv6            --ipv6
good rev2-emss-9000       --emss 9000 --markers
# DDP-level streams (RFC 5041 without RDMAP): their RsvdULP is RDMAP's, so the judge reads them.
good rev2-ddp             --ddp
good rev1-nocrc-markers-ddp --ddp --mpa-rev 1 --no-crc --markers

# The golden captures test_e2e_golden compares the engines' output with (tests/vectors/golden):
# the library's own bytes, fixed, judged like the demo's.
golden=$(cd "$(dirname "${BASH_SOURCE[0]}")/../vectors/golden" && pwd)
for pcap in "$golden"/*.pcap; do
  [ -e "$pcap" ] || { bad "no golden captures in $golden"; break; }
  clean "golden-$(basename "$pcap" .pcap)" "$pcap"
done

broken crc            bad-crc        IWARP_ERR_FPDU_CRC      2/0/0x02 --corrupt crc
broken ddp-version    ddp-version    IWARP_ERR_DDP_VERSION   1/2/0x06 --corrupt ddp-version
broken rdmap-version  rdmap-version  IWARP_ERR_RDMAP_VERSION 0/2/0x05 --corrupt rdmap-version
broken opcode         opcode         IWARP_ERR_RDMAP_OPCODE  0/2/0x06 --corrupt opcode
broken qn             qn             IWARP_ERR_DDP_QN        1/2/0x01 --corrupt qn
broken readreq-len    length         IWARP_ERR_RDMAP_LEN     0/2/0xff --corrupt readreq-len
# A wrong FPDUPTR: code 3 (2/0/0x03) without CRC; with CRC on the same damage is a CRC error
# (RFC 5044 §8 reports code 3 only for an FPDU whose CRC is valid). The judge reads FPDUPTR.
broken marker          mpa-marker     IWARP_ERR_FPDU_MARKER   2/0/0x03 --markers --no-crc --corrupt marker
broken marker-with-crc bad-crc        IWARP_ERR_FPDU_CRC      2/0/0x02 --markers --corrupt marker
broken mpa-rev        mpa-rev        IWARP_ERR_MPA_REV       -        --corrupt mpa-rev
broken mpa-pd-len     mpa-pd         IWARP_ERR_MPA_PD_LEN    -        --corrupt mpa-pd-len

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
