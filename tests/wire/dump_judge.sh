#!/usr/bin/env bash
# dump_judge.sh IWARP SHARED: `iwarp dump` against the wire judge (SHARED/tools/wire-check) on
# every TCP capture gen_pcap.py produces: the same verdict, and the same set of error
# categories. Wireshark's "malformed" (a DDP header cut short) is dump's "length". One
# documented exception: bad_ulpdu_length loses the MPA framing; from there Wireshark frames
# the garbage on its own terms, so only the categories dump reports must be among the judge's.
# Exit 77 (SKIP) without tshark or python3.
set -uo pipefail
IWARP=$1 WC=$2/tools/wire-check
command -v tshark >/dev/null && command -v python3 >/dev/null || { echo "SKIP: tshark/python3 missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
names=$(python3 "$WC/gen_pcap.py" --list | awk '$1 !~ /sctp/ { print $1 }')
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
[ $fails = 0 ] && echo "PASS: dump agrees with the wire judge" || echo "FAIL: $fails disagreements"
[ $fails = 0 ]
