#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs a configured build tree into a scratch prefix and checks what a consumer sees:
# the headers under include/iwarp/, libiwarp.pc (pkg-config), the CMake package (find_package),
# both libraries, and that the shared library exports the public API and nothing internal.
#   install_check.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
fails=0
check() { if "$@" >"$tmp/out" 2>&1; then echo "PASS $desc"; else echo "FAIL $desc"; cat "$tmp/out"; fails=$((fails+1)); fi; }

libdir=$(dirname "$(find "$prefix" -name libiwarp.pc)")/..
desc="headers installed"; check test -f "$prefix/include/iwarp/iwarp.h" -a -f "$prefix/include/iwarp/errors.h" -a -f "$prefix/include/iwarp/version.h"
desc="shared and static libraries installed"; check test -f "$libdir/libiwarp.a" -a -L "$libdir/libiwarp.so"
desc="no internal header installed"; check bash -c "! find '$prefix/include' -name '*.h' | xargs grep -l 'util/\\|wire/' | grep -q ."

cat > "$tmp/consumer.c" <<'C'
#include <iwarp/iwarp.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    if (strcmp(iwarp_version(), IWARP_VERSION_STRING) != 0)
        return 1;
    struct iwarp_device_attr da; /* the header's inline wrapper -> iwarp_query_device_sized */
    if (iwarp_query_device(NULL, &da) != IWARP_ERR_INVAL)
        return 1;
    printf("%s: %s\n", iwarp_err_name(IWARP_ERR_FPDU_CRC), iwarp_strerror(IWARP_ERR_FPDU_CRC));
    return strcmp(iwarp_err_name(IWARP_ERR_FPDU_CRC), "IWARP_ERR_FPDU_CRC") != 0;
}
C
export PKG_CONFIG_PATH=$libdir/pkgconfig
desc="pkg-config consumer builds and runs"
check bash -c "cc -std=c11 -Wall -Werror '$tmp/consumer.c' -o '$tmp/c1' \$(pkg-config --cflags --libs libiwarp) && LD_LIBRARY_PATH='$libdir' '$tmp/c1'"

mkdir -p "$tmp/cm"
cp "$tmp/consumer.c" "$tmp/cm/"
cat > "$tmp/cm/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(iwarp REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE iwarp::iwarp)
C
desc="find_package(iwarp) consumer builds and runs"
check bash -c "cmake -S '$tmp/cm' -B '$tmp/cm/b' -DCMAKE_PREFIX_PATH='$prefix' >/dev/null && cmake --build '$tmp/cm/b' >/dev/null && LD_LIBRARY_PATH='$libdir' '$tmp/cm/b/consumer'"

so=$(readlink -f "$libdir/libiwarp.so")
# Exactly the functions the installed headers declare, each listed in the map (abi_symbols.sh).
desc="shared library exports the public API and nothing internal"
check bash "$here/abi_symbols.sh" "$here/../../src/libiwarp.map" "$so" "$prefix/include"

# The drop-in libibverbs/librdmacm (when built): in their own directory, never over the system's,
# finding the installed libiwarp, and found by the installed `iwarp exec`.
if [ -e "$build/dropin/libibverbs.so.1" ]; then
  dropin=$libdir/libiwarp/dropin
  desc="drop-in libraries installed in their own directory"; check test -e "$dropin/libibverbs.so.1" -a -e "$dropin/librdmacm.so.1" -a ! -e "$libdir/libibverbs.so.1"
  desc="drop-in libraries resolve libiwarp from the install"; check bash -c "ldd '$dropin/librdmacm.so.1' | grep -E 'lib(iwarp|ibverbs)\\.so' | grep -v 'not found' | grep -c '$prefix' | grep -qx 2"
  desc="installed iwarp exec finds the installed drop-in"; check bash -c "[ \"\$(readlink -f \"\$('$prefix/bin/iwarp' exec --print-dir)\")\" = \"\$(readlink -f '$dropin')\" ]"
fi
# The man pages (cmake/Man.cmake), when the build made them: every man/<name>.<section>.md of
# the source tree (the section-1 pages too, whichever exist) is installed where man finds it by
# name and renders without a warning; every link page (`man iwarp_reg_mr`) opens its page.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
man_mode=$(sed -n 's/^IWARP_MAN:STRING=//p' "$build/CMakeCache.txt")
pandoc=$(sed -n 's/^IWARP_PANDOC:FILEPATH=//p' "$build/CMakeCache.txt")
if [ "$man_mode" = OFF ] || [ -z "$pandoc" ] || [[ "$pandoc" == *NOTFOUND ]]; then
  echo "SKIP man pages: not built (IWARP_MAN=${man_mode:-unset}, pandoc ${pandoc:-not found})"
elif ! command -v man >/dev/null; then
  echo "FAIL man pages: man is not installed (apt-get install man-db)"; fails=$((fails+1))
else
  mandir=$(find "$prefix" -type d -path '*/share/man' | head -1)
  pages=0
  for md in "$src"/man/*.md; do
    f=$(basename "$md")
    [[ "$f" =~ ^([A-Za-z0-9_.+-]+)\.([1-9])[a-z]*\.md$ ]] || continue
    name=${BASH_REMATCH[1]} sec=${BASH_REMATCH[2]}
    pages=$((pages+1))
    desc="man -M finds $name($sec)"
    check bash -c "[ \"\$(man -M '$mandir' -w '$sec' '$name')\" = '$mandir/man$sec/${f%.md}' ]"
    desc="man renders $name($sec) without warnings"
    check bash -c "MANPAGER=cat MANWIDTH=80 man --warnings -E UTF-8 -M '$mandir' '$sec' '$name' >'$tmp/page' 2>'$tmp/err'; cat '$tmp/err'; [ ! -s '$tmp/err' ] && grep -q '^NAME' '$tmp/page'"
  done
  desc="man pages installed: $pages"; check test "$pages" -gt 0
  links=0 bad=""
  for l in "$mandir"/man*/*; do
    read -r first <"$l" || true
    [[ "$first" == .so\ * ]] || continue
    links=$((links+1))
    target=$mandir/${first#.so }
    got=$(man -M "$mandir" -w "$(basename "${l%.*}")" 2>/dev/null || true)
    [ -f "$target" ] && [ "$got" = "$target" ] || bad+=" $(basename "$l")"
  done
  desc="$links link pages open their page (man iwarp_reg_mr)"; check test -z "$bad" -a "$links" -gt 0
  [ -z "$bad" ] || echo "  broken:$bad"
fi

echo "$fails failed"
[ "$fails" = 0 ]
