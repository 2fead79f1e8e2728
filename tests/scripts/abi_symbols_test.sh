#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest scripts.abi_symbols: abi_symbols.sh passes on the built library, and fails, naming the
# symbol, on each kind of drift it exists to catch (so the check itself can fail).
#   abi_symbols_test.sh SOURCE_DIR LIBRARY BUILD_INCDIR
set -euo pipefail
src=$1 lib=$2 binc=$3
here=$(cd "$(dirname "$0")" && pwd)
map=$src/src/libiwarp.map
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
run() { bash "$here/abi_symbols.sh" "$@" >"$tmp/out" 2>&1; }
pass() {
  if run "$@"; then
    echo "PASS $desc"
  else
    echo "FAIL $desc"; cat "$tmp/out"; fails=$((fails + 1))
  fi
}
# must_fail PATTERN ARGS...: the check fails and says PATTERN.
must_fail() {
  local pattern=$1
  shift
  if run "$@"; then
    echo "FAIL $desc: the check passed"; cat "$tmp/out"; fails=$((fails + 1))
  elif ! grep -qE -- "$pattern" "$tmp/out"; then
    echo "FAIL $desc: no line matching '$pattern'"; cat "$tmp/out"; fails=$((fails + 1))
  else
    echo "PASS $desc"; sed 's/^/    /' "$tmp/out"
  fi
}

desc="the map, the public headers and the library agree"
pass "$map" "$lib" "$src/include" "$binc"

# A function declared in a public header but not in the map (the library then hides it), next to
# a static inline helper, which needs no symbol.
mkdir -p "$tmp/inc/iwarp"
cat >"$tmp/inc/iwarp/zz_selftest.h" <<'H'
#include "iwarp/common.h"
IWARP_EXTERN int iwarp_selftest_new_function(void);
static inline int iwarp_selftest_inline(void) { return 0; }
H
desc="a new public function missing from the map"
must_fail "zz_selftest.h:2 declares iwarp_selftest_new_function, which .* does not export: add \
the line '    iwarp_selftest_new_function;' to the global: list of node IWARP_0" \
  "$map" "$lib" "$src/include" "$binc" "$tmp/inc"
desc="a static inline helper is not reported"
if grep -q iwarp_selftest_inline "$tmp/out"; then
  echo "FAIL $desc"; fails=$((fails + 1))
else
  echo "PASS $desc"
fi

desc="a later node, inheriting the first, is read and is the newest"
grep -v '^ *iwarp_version;' "$map" >"$tmp/two.map"
printf 'IWARP_0.9.0 {\n  global:\n    iwarp_version; /* c */\n} IWARP_0.1.0;\n' >>"$tmp/two.map"
must_fail "add the line '    iwarp_selftest_new_function;' to the global: list of node IWARP_0\\.9\\.0" \
  "$tmp/two.map" "$lib" "$src/include" "$binc" "$tmp/inc"
if grep -q iwarp_version "$tmp/out"; then
  echo "FAIL $desc: iwarp_version, listed in the second node, was reported"; fails=$((fails + 1))
fi

desc="an exported symbol the map does not list"
grep -v '^ *iwarp_strerror;' "$map" >"$tmp/no_strerror.map"
must_fail "exports iwarp_strerror, which .* does not list" \
  "$tmp/no_strerror.map" "$lib" "$src/include" "$binc"

desc="a glob in the map"
sed 's/^\( *\)iwarp_version;/\1iwarp_*;/' "$map" >"$tmp/glob.map"
must_fail "has the glob 'iwarp_\*'" "$tmp/glob.map" "$lib" "$src/include" "$binc"

desc="the map lists a symbol nothing defines"
sed 's/^\( *\)iwarp_version;/&\n\1iwarp_selftest_gone;/' "$map" >"$tmp/gone.map"
must_fail "lists iwarp_selftest_gone, which neither" "$tmp/gone.map" "$lib" "$src/include" "$binc"

desc="an exported symbol no public header declares"
mkdir -p "$tmp/no_iwarp_h/iwarp"
cp "$src"/include/iwarp/*.h "$tmp/no_iwarp_h/iwarp/"
rm "$tmp/no_iwarp_h/iwarp/iwarp.h" # the header that declares iwarp_version
must_fail "exports iwarp_version, which no public header declares" \
  "$map" "$lib" "$tmp/no_iwarp_h" "$binc"

echo "$fails failed"
[ "$fails" = 0 ]
