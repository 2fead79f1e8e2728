#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# dump_judge.sh IWARP SHARED: `iwarp dump` against the wire judge (SHARED/tools/wire-check) on
# every capture gen_pcap.py produces, TCP and SCTP: the same verdict, and the same set of error
# categories (the judge's "malformed", a DDP header cut short, is dump's "length"). A scenario
# that gen_pcap.py lists with "[ports N ...]" is judged with those ports by both (dump --port).
#
# One decided difference, bad_ulpdu_length (an FPDU whose ULPDU_Length is 4 too large, CRCs on):
# both report the FPDU's bad CRC and the lost framing ([bad-crc], [undissected]), and nothing
# else is an error for dump. The judge adds two findings that come from octets whose framing is in
# doubt, listed in JUDGE_ONLY: [pad] on the third FPDU it delimits by a garbage length (its own
# rule is that such FPDUs are "not decoded: framing in doubt"; RFC 5044 §4.1 PAD is only defined
# for an FPDU the receiver can delimit) and [read-resp] on the responder's Read Responses, whose
# Read Request is inside the initiator's octets the judge stopped walking (RFC 5040 §4.5 asks
# the responder to answer requests it received, which it did; dump warns that it cannot check
# them). The judge's categories must be exactly dump's plus those.
#
# Then the DDP over SCTP captures of sctp_scenarios.py (beside this script): dump's verdict and
# category as expected, and the judge's verdict the same where the two agree by design (the
# others are listed there: reordering by DDP-SSN, retransmitted TSNs, U flag, adaptation).
# Exit 77 (SKIP) without tshark or python3.
set -uo pipefail
IWARP=$1 WC=$2/tools/wire-check
command -v tshark >/dev/null && command -v python3 >/dev/null || { echo "SKIP: tshark/python3 missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$WC/gen_pcap.py" --list >"$tmp/list" || { echo "FAIL: gen_pcap.py --list"; exit 1; }
names=$(awk '{ print $1 }' "$tmp/list")
python3 "$WC/gen_pcap.py" "$tmp" $names >/dev/null || { echo "FAIL: gen_pcap.py"; exit 1; }
cats() { grep -o '^  ERROR .*\[[a-z-]*\]' | sed 's/.*\[\(.*\)\]/\1/' | sed 's/^malformed$/length/' | sort -u | tr '\n' ' '; }
declare -A JUDGE_ONLY=([bad_ulpdu_length]="pad read-resp")
fails=0
for n in $names; do
  ports=$(sed -n "s/^$n .*\[ports \([0-9 ]*\)\].*/\1/p" "$tmp/list")
  dopts=()
  for p in $ports; do dopts+=(--port "$p"); done
  # shellcheck disable=SC2086 # one argument per port
  "$WC/check.sh" -q "$tmp/$n.pcap" $ports >"$tmp/$n.judge" 2>&1; jrc=$?
  "$IWARP" dump "${dopts[@]}" "$tmp/$n.pcap" >"$tmp/$n.dump" 2>&1; drc=$?
  jc=$(cats <"$tmp/$n.judge") dc=$(cats <"$tmp/$n.dump")
  want=$(echo "$dc ${JUDGE_ONLY[$n]:-}" | tr ' ' '\n' | grep . | sort -u | tr '\n' ' ')
  if [ "$jrc" = "$drc" ] && [ "$jc" = "$want" ]; then
    echo "ok   $n: exit $drc, categories: ${dc:-none}${JUDGE_ONLY[$n]:+ (the judge also: ${JUDGE_ONLY[$n]})}"
  else
    echo "FAIL $n: judge exit $jrc [${jc}] vs dump exit $drc [${dc}]${JUDGE_ONLY[$n]:+ (judge only: ${JUDGE_ONLY[$n]})}"
    cat "$tmp/$n.dump"
    fails=$((fails + 1))
  fi
done
# DDP over SCTP beyond gen_pcap.py's scenarios.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$here/sctp_scenarios.py" "$WC" "$tmp/sctp" >"$tmp/sctp.list" || { echo "FAIL: sctp_scenarios.py"; exit 1; }
while IFS=$'\t' read -r path expect agree desc; do
  n=$(basename "$path" .pcap)
  "$IWARP" dump "$path" >"$tmp/$n.dump" 2>&1; drc=$?
  dc=$(cats <"$tmp/$n.dump")
  ok=1
  case "$expect" in
    pass) [ "$drc" = 0 ] && [ -z "$dc" ] || ok=0 ;;
    fail:*) [ "$drc" = 1 ] && [ "$dc" = "${expect#fail:} " ] || ok=0 ;;
  esac
  jrc=-
  if [ "$agree" = judge ]; then
    "$WC/check.sh" -q "$path" >"$tmp/$n.judge" 2>&1; jrc=$?
    [ "$jrc" = "$drc" ] || ok=0
  fi
  if [ $ok = 1 ]; then
    echo "ok   $n: exit $drc, categories: ${dc:-none} (judge: $jrc) - $desc"
  else
    echo "FAIL $n: expected $expect, dump exit $drc [${dc}], judge exit $jrc - $desc"
    cat "$tmp/$n.dump"
    fails=$((fails + 1))
  fi
done <"$tmp/sctp.list"
[ $fails = 0 ] && echo "PASS: dump agrees with the wire judge" || echo "FAIL: $fails disagreements"
[ $fails = 0 ]
