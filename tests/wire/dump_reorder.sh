#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# dump_reorder.sh IWARP GEN: `iwarp dump` decodes a capture whose TCP segments arrive swapped,
# retransmitted and partly overlapping exactly as it decodes the same traffic in order (both
# captures written by the library's pcap writer through GEN = dump_reorder_gen).
set -euo pipefail
IWARP=$1 GEN=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GEN" "$tmp"
"$IWARP" dump "$tmp/inorder.pcap" >"$tmp/inorder.txt" || { cat "$tmp/inorder.txt"; echo "FAIL: in-order capture not clean"; exit 1; }
"$IWARP" dump "$tmp/reordered.pcap" >"$tmp/reordered.txt" || true
if ! cmp -s "$tmp/inorder.txt" "$tmp/reordered.txt"; then
  diff "$tmp/inorder.txt" "$tmp/reordered.txt" || true
  echo "FAIL: reordered capture decodes differently"
  exit 1
fi
grep -q "pdus=12 " "$tmp/inorder.txt" || { cat "$tmp/inorder.txt"; echo "FAIL: expected 12 PDUs"; exit 1; }
# The disorder really happened: the reassembler saw it.
v=$("$IWARP" dump -v "$tmp/reordered.pcap" | grep 'i>r TCP:')
case "$v" in
  *" 0 seen again"*|*" 0 segments out of order"*) echo "FAIL: no disorder seen: $v"; exit 1 ;;
esac
echo "PASS: identical decode ($v)"
