#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The ABI check (docs/abi.md). Builds libiwarp.so the way the committed dumps were built (-g -O2,
# only the shared library, in build/abi), dumps its public ABI with abi-dumper (the functions and
# types of include/iwarp/*.h and the generated version.h), and compares it with
# abi-compliance-checker against every committed dump of the same SONAME, abi/libiwarp-MAJOR.*.dump.
# Fails on any binary or source incompatibility; added symbols are compatible.
#   scripts/abi-check.sh              check this tree
#   scripts/abi-check.sh --selftest   then also check that a copy of this tree with one symbol
#                                     removed from the map and a field inserted into a public
#                                     struct fails the check, naming both
#   scripts/abi-check.sh --update     write abi/libiwarp-VERSION.dump (VERSION: this tree's
#                                     project version) instead of checking: at a release only
# Needs Debian's abi-dumper and abi-compliance-checker (scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-check}
case "$mode" in check | --selftest | --update) ;; *) sed -n '3,14p' "$0" >&2; exit 2 ;; esac
out=$root/build/abi
jobs=${JOBS:-$(nproc)}

# build_and_dump SRC BUILD DUMP LABEL: the -g -O2 shared library of SRC, dumped to DUMP (not -Og:
# abi-dumper then records parameters' registers, and a body's change read as an ABI break).
build_and_dump() {
  local src=$1 build=$2 dump=$3 label=$4 so
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None "-DCMAKE_C_FLAGS=-g -O2" \
    -DIWARP_BUILD_TESTS=OFF -DIWARP_DROPIN=OFF >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; return 1; }
  # The file target: the target name "iwarp" is also the path of the iwarp command.
  cmake --build "$build" -j "$jobs" --target libiwarp.so >"$build.build.log" 2>&1 ||
    { cat "$build.build.log"; return 1; }
  so=$(readlink -f "$build/libiwarp.so")
  ls "$src"/include/iwarp/*.h "$build/include/iwarp/version.h" >"$build.headers"
  abi-dumper "$so" -o "$dump" -lver "$label" -public-headers "$build.headers" -sort \
    >"$build.dump.log" 2>&1 || { cat "$build.dump.log"; return 1; }
}

# compare OLD_DUMP NEW_DUMP REPORT: abi-compliance-checker, binary and source; 0 if compatible.
compare() {
  # It writes its logs under the working directory: keep them in build/abi.
  (cd "$out" && abi-compliance-checker -l libiwarp -old "$1" -new "$2" -report-path "$3") \
    >"$3.log" 2>&1
}

version() { sed -n 's/^project(libiwarp VERSION \([0-9.]*\).*/\1/p' "$1/CMakeLists.txt"; }
ver=$(version "$root")
major=${ver%%.*}
mkdir -p "$out"

if [ "$mode" = --update ]; then
  # A released ABI is frozen: its dump is what later releases are checked against.
  if git -C "$root" rev-parse -q --verify "refs/tags/v$ver" >/dev/null; then
    echo "abi-check: v$ver is tagged: its dump is frozen; set the next version in CMakeLists.txt"
    exit 1
  fi
  build_and_dump "$root" "$out/lib" "$root/abi/libiwarp-$ver.dump" "$ver"
  echo "abi-check: wrote abi/libiwarp-$ver.dump ($(wc -c <"$root/abi/libiwarp-$ver.dump") octets)"
  exit 0
fi

shopt -s nullglob
baselines=("$root"/abi/libiwarp-"$major".*.dump)
if [ ${#baselines[@]} = 0 ]; then
  echo "abi-check: no abi/libiwarp-$major.*.dump to compare with"
  exit 1
fi
build_and_dump "$root" "$out/lib" "$out/tree.dump" "$ver-tree"
fails=0
for base in "${baselines[@]}"; do
  name=$(basename "$base" .dump)
  report=$out/$name-to-tree.html
  if compare "$base" "$out/tree.dump" "$report"; then
    echo "abi-check: compatible with $name (binary and source)"
  else
    grep -E '^(Binary|Source|Total)' "$report.log" || cat "$report.log"
    echo "abi-check: INCOMPATIBLE with $name: see $report (docs/abi.md says what may change)"
    fails=$((fails + 1))
  fi
done
[ "$fails" = 0 ] || exit 1
[ "$mode" = --selftest ] || exit 0

# The self-test: the check must fail on a removed symbol and on a changed struct layout.
st=$out/selftest
rm -rf "$st" # a fresh copy and build: a copy keeps old mtimes, which ninja would trust
mkdir -p "$st/src"
# The whole tree but its build directories (a few MB), whatever CMakeLists.txt comes to need.
tar -C "$root" --exclude=./build --exclude=./.git -cf - . | tar -C "$st/src" -xf -
grep -v '^ *iwarp_strerror;' "$root/src/libiwarp.map" >"$st/src/src/libiwarp.map"
sed -i 's/^struct iwarp_device_attr {$/&\n    uint32_t selftest_inserted;/' \
  "$st/src/include/iwarp/verbs.h"
# Both mutations must have happened, or the self-test proves nothing.
if cmp -s "$root/src/libiwarp.map" "$st/src/src/libiwarp.map" ||
  ! grep -q selftest_inserted "$st/src/include/iwarp/verbs.h"; then
  echo "abi-check: SELFTEST FAILED: could not remove iwarp_strerror or change iwarp_device_attr"
  exit 1
fi
build_and_dump "$st/src" "$st/lib" "$st/tree.dump" "$ver-selftest"
if compare "${baselines[-1]}" "$st/tree.dump" "$st/report.html"; then
  echo "abi-check: SELFTEST FAILED: a removed symbol and a changed struct passed ($st/report.html)"
  exit 1
fi
for what in iwarp_strerror iwarp_device_attr; do
  grep -q "$what" "$st/report.html" ||
    { echo "abi-check: SELFTEST FAILED: $st/report.html does not name $what"; exit 1; }
done
echo "abi-check: selftest: removing iwarp_strerror and inserting a field into"
echo "  struct iwarp_device_attr fail the check:"
grep -E '^(Binary|Source)' "$st/report.html.log"
