#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Long fuzzing runs whose corpora and budget are kept in the tree (issue 17 item 7).
#   scripts/fuzz-long.sh [--seconds N | --runs-until-execs M] [--jobs J] [--no-build] [--no-merge]
#                        [TARGET...]
# Builds the fuzz preset's libFuzzer binaries (clang + ASan + UBSan; --no-build uses
# build/fuzz as it is), then runs each target (every fuzz/fuzz_*.c when none is named) for N
# seconds (default 60), or until M executions (when both are given, whichever comes first), on
# its committed corpus fuzz/corpus/TARGET plus a scratch corpus, under nice -n 19, one process
# per target; --jobs J runs J targets at the same time (default 1). libFuzzer stops a target at
# its first crash, leak, timeout (10 s per input) or OOM; the reproducer is kept in
# build/fuzz/artifacts/long-TARGET-* and the run fails (exit 1) once every target has had its turn.
# A target without finding has its new inputs merged into fuzz/corpus/TARGET, minimised: the
# hand-written seeds (every file not named by a 40-hex SHA-1) are kept as they are; the
# generated files (SHA-1 names) are re-selected by libFuzzer's -merge=1 from the previous
# generated files and the scratch corpus, so only those adding coverage beyond the seeds and each
# other stay. Per target it prints the CPU seconds, executions, executions per second, corpus files
# before/after and findings; fuzz/budget.tsv (committed) accumulates CPU seconds and executions per
# target over runs, and the end of the run says which targets have reached the budget of issue 17:
# 30 minutes or 10 million executions, whichever comes first, with no finding.
# A finding, once fixed, restarts the count: set the target's row to zero (--reset TARGET...).
set -euo pipefail
cd "$(dirname "$0")/.."

secs="" execs="" jobs=1 build=1 merge=1 reset=0
targets=()
usage() { sed -n '3,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) secs=${2:?}; shift 2 ;;
    --runs-until-execs) execs=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-merge) merge=0; shift ;;
    --reset) reset=1; shift ;;
    -h|--help) usage ;;
    -*) echo "fuzz-long: unknown option $1" >&2; usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ -n "$secs" ] || [ -n "$execs" ] || secs=60
for v in "$secs" "$execs" "$jobs"; do
  [ -z "$v" ] || [[ "$v" =~ ^[0-9]+$ ]] || { echo "fuzz-long: not a number: $v" >&2; exit 2; }
done

budget=fuzz/budget.tsv
budget_secs=1800 budget_execs=10000000
bin=build/fuzz/fuzz
work=build/fuzz/long
mkdir -p "$work" build/fuzz/artifacts
lock=$work/budget.lock

if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c | sed 's/^fuzz_//')"); done
fi
for t in "${targets[@]}"; do
  [ -f "fuzz/fuzz_$t.c" ] || { echo "fuzz-long: no target $t (fuzz/fuzz_$t.c)" >&2; exit 2; }
done

# budget.tsv: one row per target, tab-separated, after a header line.
budget_init() {
  [ -f "$budget" ] && return
  printf 'target\truns\tseconds\texecutions\tfindings\tlast_run_utc\tlast_commit\n' >"$budget"
}
# budget_add TARGET SECONDS EXECUTIONS FINDINGS (under the lock: --jobs runs targets at once)
budget_add() {
  local t=$1 s=$2 e=$3 f=$4 now commit
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo '-')
  (
    flock 9
    budget_init
    awk -F'\t' -v OFS='\t' -v t="$t" -v s="$s" -v e="$e" -v f="$f" -v now="$now" -v c="$commit" '
      NR == 1 { print; next }
      $1 == t { $2 += 1; $3 += s; $4 += e; $5 += f; $6 = now; $7 = c; found = 1 }
      { print }
      END { if (!found) print t, 1, s, e, f, now, c }' "$budget" >"$budget.tmp"
    # Rows in target order, header first.
    { head -n 1 "$budget.tmp"; tail -n +2 "$budget.tmp" | LC_ALL=C sort -t "$(printf '\t')" -k1,1; } \
      >"$budget"
    rm -f "$budget.tmp"
  ) 9>"$lock"
}

if [ "$reset" = 1 ]; then
  budget_init
  for t in "${targets[@]}"; do
    awk -F'\t' -v OFS='\t' -v t="$t" 'NR > 1 && $1 == t { $2 = 0; $3 = 0; $4 = 0; $5 = 0 } { print }' \
      "$budget" >"$budget.tmp" && mv "$budget.tmp" "$budget"
    echo "fuzz-long: budget of $t reset"
  done
  exit 0
fi

if [ "$build" = 1 ]; then
  [ -f build/fuzz/CMakeCache.txt ] || nice cmake --preset fuzz >/dev/null
  nice cmake --build build/fuzz --target "${targets[@]/#/fuzz_}" >/dev/null
fi
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz_$t" ] || { echo "fuzz-long: $bin/fuzz_$t missing: cmake --preset fuzz && cmake --build --preset fuzz" >&2; exit 2; }
done

is_generated() { [[ "$(basename "$1")" =~ ^[0-9a-f]{40}$ ]]; }
count_files() { find "$1" -maxdepth 1 -type f | wc -l; }
stat_of() { grep -oE "stat::$1: *[0-9]+" "$2" | tail -n 1 | grep -oE '[0-9]+$' || true; }

# run_one TARGET: fuzzes, merges, appends its result line to $work/results.
run_one() {
  local t=$1 corpus=fuzz/corpus/$1 dir=$work/$1 log rc=0 t0 t1 el ex eps finding="-" before after
  rm -rf "$dir"; mkdir -p "$dir/scratch"
  log=$dir/fuzz.log
  before=$(count_files "$corpus")
  rm -f build/fuzz/artifacts/long-"$t"-*
  local limits=()
  [ -z "$secs" ] || limits+=(-max_total_time="$secs")
  [ -z "$execs" ] || limits+=(-runs="$execs")
  # The seconds counted are the fuzzer's CPU seconds (user + system), not the wall clock's: a
  # run at nice 19 beside other work gets less than the time it lasts, and counts only that.
  local TIMEFORMAT='%U %S' cpu
  cpu=$( { time nice -n 19 "$bin/fuzz_$t" "${limits[@]}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/long-$t-" "$dir/scratch" \
    "$corpus" >"$log" 2>&1 || echo $? >"$dir/rc"; } 2>&1 )
  [ ! -f "$dir/rc" ] || rc=$(cat "$dir/rc")
  el=$(echo "$cpu" | awk '{ printf "%d", $1 + $2 + 0.5 }')
  ex=$(stat_of number_of_executed_units "$log")
  # Without final stats (a crash cut them short), the last status line's count.
  [ -n "$ex" ] || ex=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#' || true)
  ex=${ex:-0}
  eps=$(( el > 0 ? ex / el : ex ))
  local interrupted=0
  if [ "$rc" != 0 ]; then
    finding=$(find build/fuzz/artifacts -maxdepth 1 -name "long-$t-*" -type f | head -n 1)
    # A run stopped by a signal (libFuzzer exits 72 and says so) found nothing: its time and
    # executions count, its scratch inputs are not merged.
    if [ -z "$finding" ] && grep -q 'libFuzzer: run interrupted' "$log"; then
      interrupted=1; finding="-"
    fi
    [ -n "$finding" ] || finding="exit $rc, no artifact (log: $log)"
  fi
  if [ "$rc" = 0 ] && [ "$merge" = 1 ]; then
    # Seeds stay; generated files are re-selected from the old ones and the scratch corpus.
    local out=$dir/merged old=$dir/old f
    mkdir -p "$out" "$old"
    for f in "$corpus"/*; do
      [ -f "$f" ] || continue
      if is_generated "$f"; then cp "$f" "$old/"; else cp "$f" "$out/"; fi
    done
    if nice -n 19 "$bin/fuzz_$t" -merge=1 -timeout=10 -rss_limit_mb=2048 "$out" "$old" "$dir/scratch" \
        >"$dir/merge.log" 2>&1; then
      for f in "$corpus"/*; do is_generated "$f" && rm -f "$f"; done
      for f in "$out"/*; do is_generated "$f" && cp "$f" "$corpus/"; done
    else
      finding="merge failed (log: $dir/merge.log)"
    fi
  fi
  after=$(count_files "$corpus")
  local nfind=0
  [ "$finding" = "-" ] || nfind=1
  budget_add "$t" "$el" "$ex" "$nfind"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$el" "$ex" "$eps" "$before" "$after" "$finding" \
    >>"$work/results"
  printf 'fuzz-long: %-16s %5ss %10s execs %7s/s corpus %s -> %s  finding: %s%s\n' \
    "$t" "$el" "$ex" "$eps" "$before" "$after" "$finding" \
    "$([ "$interrupted" = 0 ] || echo ' (interrupted)')"
  [ "$interrupted" = 0 ] || echo interrupted >"$work/interrupted"
}

: >"$work/results"; rm -f "$work/interrupted"
echo "fuzz-long: ${#targets[@]} targets, ${secs:+${secs} s}${secs:+${execs:+ or }}${execs:+${execs} executions} each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  run_one "$t" &
  running=$((running + 1))
done
wait

echo
printf '%-16s %8s %12s %9s %8s %8s  %s\n' target seconds executions exec/s before after finding
sort "$work/results" | while IFS=$'\t' read -r t el ex eps before after finding; do
  printf '%-16s %8s %12s %9s %8s %8s  %s\n' "$t" "$el" "$ex" "$eps" "$before" "$after" "$finding"
done
echo
echo "fuzz-long: budget over all runs ($budget; reached = ${budget_secs} s or ${budget_execs} executions, no finding):"
printf '%-16s %5s %8s %12s %8s  %s\n' target runs seconds executions findings status
tail -n +2 "$budget" | while IFS=$'\t' read -r t n s e f _; do
  if [ "$f" != 0 ]; then st="finding(s): fix, then --reset $t"
  elif [ "$s" -ge "$budget_secs" ] || [ "$e" -ge "$budget_execs" ]; then st="reached"
  else st="not reached ($((s * 100 / budget_secs))% of the time, $((e * 100 / budget_execs))% of the executions)"
  fi
  printf '%-16s %5s %8s %12s %8s  %s\n' "$t" "$n" "$s" "$e" "$f" "$st"
done
echo "fuzz-long: corpora $(du -sh --apparent-size fuzz/corpus | cut -f1) in $(find fuzz/corpus -type f | wc -l) files in fuzz/corpus"
nfound=$(awk -F'\t' '$7 != "-"' "$work/results" | wc -l)
[ "$nfound" = 0 ] || { echo "fuzz-long: $nfound target(s) with a finding" >&2; exit 1; }
[ ! -f "$work/interrupted" ] || { echo "fuzz-long: interrupted" >&2; exit 130; }
