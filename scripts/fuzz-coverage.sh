#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Line coverage of the parsers and state machines by the committed fuzz corpora (issue 17 item 7).
#   scripts/fuzz-coverage.sh [--no-build] [--html] [--threshold PCT] [TARGET...]
# Builds the corpus replayers (fuzz/replay_main.c around each fuzz/fuzz_TARGET.c) with clang
# source-based coverage (-fprofile-instr-generate -fcoverage-mapping, no sanitizers; the
# `coverage` preset, build/coverage), runs each over its corpus fuzz/corpus/TARGET once (what
# libFuzzer's -runs=0 does, without libFuzzer), merges the profiles (llvm-profdata-14) and prints
# llvm-cov-14's line coverage per source file of src/wire, src/mpa, src/ddp, src/session and
# src/core, the union over all targets (every target when none is named), flagging each file under
# PCT (default 90) percent. --html also writes llvm-cov's annotated sources to
# build/coverage/html/index.html; `llvm-cov-14 show` with the printed arguments shows one file.
# Needs clang and llvm-14 (scripts/install-deps.sh). Exit status 0 whatever the coverage.
set -euo pipefail
cd "$(dirname "$0")/.."

build=1 html=0 threshold=90
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0; shift ;;
    --html) html=1; shift ;;
    --threshold) threshold=${2:?}; shift 2 ;;
    -h|--help) sed -n '3,4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    -*) echo "fuzz-coverage: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c | sed 's/^fuzz_//')"); done
fi
profdata=$(command -v llvm-profdata-14 || command -v llvm-profdata || true)
cov=$(command -v llvm-cov-14 || command -v llvm-cov || true)
if [ -z "$profdata" ] || [ -z "$cov" ]; then
  echo "fuzz-coverage: llvm-profdata-14/llvm-cov-14 missing: scripts/install-deps.sh (llvm-14)" >&2; exit 2
fi

dir=build/coverage
if [ "$build" = 1 ]; then
  [ -f "$dir/CMakeCache.txt" ] || nice cmake --preset coverage >/dev/null
  nice cmake --build "$dir" --target "${targets[@]/#/replay_}" >/dev/null
fi
rm -rf "$dir/profiles"; mkdir -p "$dir/profiles"
objects=()
for t in "${targets[@]}"; do
  exe=$dir/fuzz/replay_$t
  [ -x "$exe" ] || { echo "fuzz-coverage: $exe missing (cmake --preset coverage)" >&2; exit 2; }
  n=$(find "fuzz/corpus/$t" -maxdepth 1 -type f | wc -l)
  if ! LLVM_PROFILE_FILE="$dir/profiles/$t.profraw" nice "$exe" "fuzz/corpus/$t" >"$dir/profiles/$t.log" 2>&1; then
    echo "fuzz-coverage: replay_$t failed on its corpus (log: $dir/profiles/$t.log)" >&2; exit 1
  fi
  echo "fuzz-coverage: replay_$t: $n inputs"
  if [ ${#objects[@]} -eq 0 ]; then objects+=("$exe"); else objects+=(-object "$exe"); fi
done
"$profdata" merge -sparse "$dir"/profiles/*.profraw -o "$dir/fuzz.profdata"

sources=()
for layer in wire mpa ddp session core; do
  for f in src/"$layer"/*.c; do sources+=("$PWD/$f"); done
done
"$cov" export -summary-only -instr-profile="$dir/fuzz.profdata" "${objects[@]}" "${sources[@]}" \
  >"$dir/summary.json"
echo
python3 - "$dir/summary.json" "$threshold" "$PWD/" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))["data"][0]
threshold, root = float(sys.argv[2]), sys.argv[3]
rows = sorted((f["filename"].replace(root, ""), f["summary"]["lines"]) for f in data["files"])
under = 0
print(f"{'file':34} {'lines':>6} {'missed':>7} {'cover':>8}")
for name, l in rows:
    flag = ""
    if l["percent"] < threshold:
        flag, under = f"  < {threshold:g}%", under + 1
    print(f"{name:34} {l['count']:6} {l['count'] - l['covered']:7} {l['percent']:7.2f}%{flag}")
t = data["totals"]["lines"]
print(f"{'TOTAL':34} {t['count']:6} {t['count'] - t['covered']:7} {t['percent']:7.2f}%")
print(f"fuzz-coverage: {len(rows)} files, {under} under {threshold:g}% line coverage")
EOF
echo "fuzz-coverage: one file's uncovered lines: $cov show -instr-profile=$dir/fuzz.profdata ${objects[*]} SOURCE.c"
if [ "$html" = 1 ]; then
  "$cov" show -format=html -output-dir="$dir/html" -instr-profile="$dir/fuzz.profdata" \
    "${objects[@]}" "${sources[@]}" >/dev/null
  echo "fuzz-coverage: $dir/html/index.html"
fi
