#!/usr/bin/env bash
# dump_judge.sh IWARP SHARED: `iwarp dump` against the wire judge (SHARED/tools/wire-check) on
# every capture gen_pcap.py produces, TCP and SCTP: the same verdict, and the same set of error
# categories. Wireshark's "malformed" (a DDP header cut short) is dump's "length". One
# documented exception: bad_ulpdu_length loses the MPA framing; from there Wireshark frames
# the garbage on its own terms, so only the categories dump reports must be among the judge's.
# Then the DDP over SCTP captures of sctp_scenarios.py (beside this script): dump's verdict and
# category as expected, and the judge's verdict the same where the two agree by design (the
# others are listed there: reordering by DDP-SSN, retransmitted TSNs, U flag, adaptation).
# Exit 77 (SKIP) without tshark or python3.
set -uo pipefail
IWARP=$1 WC=$2/tools/wire-check
command -v tshark >/dev/null && command -v python3 >/dev/null || { echo "SKIP: tshark/python3 missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
names=$(python3 "$WC/gen_pcap.py" --list | awk '{ print $1 }')
python3 "$WC/gen_pcap.py" "$tmp" $names >/dev/null || { echo "FAIL: gen_pcap.py"; exit 1; }
cats() { grep -o '^  ERROR .*\[[a-z-]*\]' | sed 's/.*\[\(.*\)\]/\1/' | sed 's/^malformed$/length/' | sort -u | tr '\n' ' '; }
fails=0
for n in $names; do
  "$WC/check.sh" -q "$tmp/$n.pcap" >"$tmp/$n.judge" 2>&1; jrc=$?
  "$IWARP" dump "$tmp/$n.pcap" >"$tmp/$n.dump" 2>&1; drc=$?
  jc=$(cats <"$tmp/$n.judge") dc=$(cats <"$tmp/$n.dump")
  ok=1
  [ "$jrc" = "$drc" ] || ok=0
  if [ "$n" = bad_ulpdu_length ]; then
    for c in $dc; do case " $jc" in *" $c "*) ;; *) ok=0 ;; esac; done
  else
    [ "$jc" = "$dc" ] || ok=0
  fi
  if [ $ok = 1 ]; then
    echo "ok   $n: exit $drc, categories: ${dc:-none}"
  else
    echo "FAIL $n: judge exit $jrc [${jc}] vs dump exit $drc [${dc}]"
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
