#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the Debian packages from the tree (debian/, docs/packaging.md) and checks what they
# ship, installing nothing on the machine:
#   - in a scratch copy of the tree (the tracked and untracked-but-not-ignored files, as they are
#     in the work tree): dpkg-source -b (the source package, for lintian), then
#     dpkg-buildpackage -us -uc -b with DEB_BUILD_OPTIONS='nocheck parallel=2';
#   - lintian on the .changes (the .debs, -dbgsym .debs, .buildinfo) and the .dsc: fails on any
#     error, warning or info tag that is not overridden (docs/packaging.md);
#   - what each package holds and depends on;
#   - every .deb unpacked with dpkg-deb -x into one scratch root; examples/hello_rdma.c built
#     against it through pkg-config and through find_package(iwarp), each run as server and
#     client over 127.0.0.1 (tests/scripts/example_hello.sh) on the unpacked libiwarp.so.0;
#   - the unpacked iwarp --version, and iwarp exec finding the unpacked drop-in directory;
#   - nothing shipped names the build directory or /work/shared, and dpkg knows no iwarp package.
#   deb_check.sh [--keep]     (--keep: leave the scratch directory and print its path)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
keep=0
[ "${1:-}" = "--keep" ] && keep=1
scratch=$(readlink -f "$(mktemp -d "${TMPDIR:-/tmp}/deb_check.XXXXXX")")
if [ "$keep" = 1 ]; then echo "deb_check: scratch directory $scratch"; else trap 'rm -rf "$scratch"' EXIT; fi
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
t0=$(date +%s)

installed() { dpkg-query -W -f='${binary:Package} ${Status}\n' 2>/dev/null | grep -E '^(libiwarp|iwarp)' | grep -v not-installed || true; }
before=$(installed)
[ -z "$before" ] || echo "deb_check: note: already on this machine (not ours): $before"

# The tree as it is, without build directories: dpkg-buildpackage writes the packages into the
# parent of the source directory, so the copy gets a scratch parent of its own.
version=$(sed -n '1s/^libiwarp (\([^)]*\)).*/\1/p' "$repo/debian/changelog")
src=$scratch/libiwarp-$version
mkdir -p "$src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf -) | tar -xf - -C "$src"

if (cd "$scratch" && dpkg-source -b "$(basename "$src")") >"$scratch/source.log" 2>&1; then
  pass "dpkg-source -b (3.0 (native))"
else
  cat "$scratch/source.log"; fail "dpkg-source -b"
fi
echo "deb_check: dpkg-buildpackage -us -uc -b (nocheck parallel=2)"
if (cd "$src" && DEB_BUILD_OPTIONS='nocheck parallel=2' nice dpkg-buildpackage -us -uc -b) \
  >"$scratch/build.log" 2>&1; then
  pass "dpkg-buildpackage -us -uc -b ($(($(date +%s) - t0)) s)"
else
  tail -n 60 "$scratch/build.log"
  fail "dpkg-buildpackage -us -uc -b (log above)"
  exit 1
fi
# The packaging must not take its flags from anything but dpkg-buildflags and debian/rules.
if grep -E -- '-Werror( |$)' "$scratch/build.log" >/dev/null; then fail "no -Werror in the package build"; else pass "no -Werror in the package build"; fi
if grep -q -- '-fstack-protector-strong' "$scratch/build.log" && grep -q -- '-D_FORTIFY_SOURCE=2' "$scratch/build.log" &&
  grep -q -- '-z,now' "$scratch/build.log"; then
  pass "Debian's hardening flags reach the compiler and linker"
else
  fail "Debian's hardening flags reach the compiler and linker"
fi
if [ -n "$(cd "$src/debian/build" && find . -name 'test_*' -o -name 'bench_*' -o -name 'hello_rdma' -o -name 'fuzz_*')" ]; then
  fail "nocheck builds no tests, benchmarks or examples"
else
  pass "nocheck builds no tests, benchmarks or examples"
fi

changes=$(ls "$scratch"/libiwarp_"$version"_*.changes)
debs=()
for d in "$scratch"/*.deb; do case "$d" in *-dbgsym_*) ;; *) debs+=("$d") ;; esac; done
expect=(libiwarp0 libiwarp-dev iwarp-tools libiwarp-dropin)
names=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done | sort | tr '\n' ' ')
if [ "$names" = "$(printf '%s\n' "${expect[@]}" | sort | tr '\n' ' ')" ]; then pass "packages: $names"; else fail "packages: $names (expected ${expect[*]})"; fi

# lintian: E:, W: and I: fail, unless overridden (debian/*.lintian-overrides, docs/packaging.md).
# --fail-on none: a non-zero status means lintian itself failed, not that it found something.
if lintian --fail-on none --info --display-info --tag-display-limit 0 "$changes" \
  "$scratch/libiwarp_$version.dsc" >"$scratch/lintian.log" 2>&1; then
  lintian_rc=0
else
  lintian_rc=$?
fi
sed 's/^/  lintian: /' "$scratch/lintian.log"
grep -E '^[EWI]: ' "$scratch/lintian.log" >"$scratch/lintian.fatal" || true
if [ "$lintian_rc" != 0 ]; then
  fail "lintian ran (status $lintian_rc, output above)"
elif [ -s "$scratch/lintian.fatal" ]; then
  fail "lintian: errors, warnings or info tags (above)"
else
  pass "lintian on the .changes and the .dsc: no error, warning or info tag"
fi

deb() { ls "$scratch/$1"_"$version"_*.deb; }
contents() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | sed 's|^\./|/|'; }
has() { # has PACKAGE REGEX...: the package holds a path matching each regex
  local p=$1; shift
  local c; c=$(contents "$p")
  for re in "$@"; do grep -Eq "$re" <<<"$c" || { fail "$p holds $re"; return; }; done
  pass "$p holds ${*}"
}
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has libiwarp0 "^/usr/lib/$ma/libiwarp\.so\.0$" "^/usr/lib/$ma/libiwarp\.so\.$version$"
has libiwarp-dev "^/usr/include/iwarp/iwarp\.h$" "^/usr/include/iwarp/version\.h$" "^/usr/lib/$ma/libiwarp\.so$" \
  "^/usr/lib/$ma/libiwarp\.a$" "^/usr/lib/$ma/pkgconfig/libiwarp\.pc$" "^/usr/lib/$ma/cmake/iwarp/iwarpConfig\.cmake$"
has iwarp-tools "^/usr/bin/iwarp$"
if [ -d "$src/man" ]; then # the man pages, once man/ is in the tree (docs/packaging.md)
  has iwarp-tools '^/usr/share/man/man1/iwarp\.1\.gz$'
  has libiwarp-dev '^/usr/share/man/man3/.*\.3\.gz$' '^/usr/share/man/man7/.*\.7\.gz$'
fi
has libiwarp-dropin "^/usr/lib/$ma/libiwarp/dropin/libibverbs\.so\.1$" "^/usr/lib/$ma/libiwarp/dropin/librdmacm\.so\.1$"
if contents libiwarp-dropin | grep -E "^/usr/lib/$ma/lib(ibverbs|rdmacm)" >/dev/null ||
  contents libiwarp-dropin | grep -E '^/usr/(include|bin)/.' >/dev/null; then
  fail "libiwarp-dropin holds nothing rdma-core's packages do"
else
  pass "libiwarp-dropin holds nothing rdma-core's packages do (its libraries are private)"
fi
for p in libiwarp0 libiwarp-dev iwarp-tools libiwarp-dropin; do
  [ "$p" = libiwarp0 ] || ! contents "$p" | grep -q 'libiwarp\.so\.0' || fail "only libiwarp0 ships libiwarp.so.0 ($p does)"
done
dep() { dpkg-deb -f "$(deb "$1")" "$2"; }
desc="libiwarp-dev depends on libiwarp0 (= $version)"
if dep libiwarp-dev Depends | grep -q "libiwarp0 (= $version)"; then pass "$desc"; else fail "$desc: $(dep libiwarp-dev Depends)"; fi
desc="libiwarp-dropin depends on libiwarp0, not on rdma-core's libibverbs1/librdmacm1"
d=$(dep libiwarp-dropin Depends)
if grep -q 'libiwarp0' <<<"$d" && ! grep -Eq 'libibverbs1|librdmacm1' <<<"$d"; then pass "$desc"; else fail "$desc: $d"; fi
desc="iwarp-tools recommends libiwarp-dropin"
if dep iwarp-tools Recommends | grep -q libiwarp-dropin; then pass "$desc"; else fail "$desc"; fi

root=$scratch/root
mkdir -p "$root"
for d in "${debs[@]}"; do dpkg-deb -x "$d" "$root"; done
libdir=$root/usr/lib/$ma

desc="nothing shipped names the build directory or /work/shared"
if grep -rlI -e "$scratch" -e /work/shared "$root" >"$scratch/leaks" 2>/dev/null ||
  grep -rla -e "$src" -e /work/shared "$root" >>"$scratch/leaks" 2>/dev/null; then
  fail "$desc: $(sort -u "$scratch/leaks" | tr '\n' ' ')"
else
  pass "$desc"
fi

# The unpacked packages as a consumer sees them (the .pc and the CMake package are relocatable).
hello=$src/examples/hello_rdma.c
ex=$scratch/example
mkdir -p "$ex"
desc="hello_rdma builds with pkg-config on the unpacked libiwarp-dev"
if PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs libiwarp >"$ex/pc" 2>&1 &&
  [ "$(readlink -f "$(sed -n 's/^-I\([^ ]*\).*/\1/p' "$ex/pc")")" = "$root/usr/include" ] &&
  cc -std=c11 -Wall -Wextra -Werror "$hello" -o "$ex/hello_pc" $(cat "$ex/pc") 2>"$ex/cc.log"; then
  pass "$desc ($(cat "$ex/pc"))"
else
  fail "$desc"; cat "$ex/pc" "$ex/cc.log" 2>/dev/null || true
fi
mkdir -p "$ex/cm"
cp "$hello" "$ex/cm/"
cat >"$ex/cm/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.20)
project(hello C)
find_package(iwarp 0.1 REQUIRED)
add_executable(hello_rdma hello_rdma.c)
target_link_libraries(hello_rdma PRIVATE iwarp::iwarp)
add_executable(hello_static hello_rdma.c)
target_link_libraries(hello_static PRIVATE iwarp::iwarp_static)
C
desc="hello_rdma builds with find_package(iwarp) on the unpacked libiwarp-dev (iwarp::iwarp, iwarp::iwarp_static)"
if cmake -S "$ex/cm" -B "$ex/cm/b" -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_FIND_ROOT_PATH="$root" >"$ex/cm.log" 2>&1 &&
  cmake --build "$ex/cm/b" >>"$ex/cm.log" 2>&1 &&
  grep -q "$root/usr/lib/$ma/cmake/iwarp" "$ex/cm/b/CMakeCache.txt"; then
  pass "$desc"
else
  fail "$desc"; cat "$ex/cm.log"
fi
# resolved BINARY SONAME: the canonical path the dynamic loader finds SONAME at for BINARY.
resolved() { ldd "$1" | awk -v so="$2" '$1 == so && $2 == "=>" {print $3}' | xargs -r readlink -f; }
export LD_LIBRARY_PATH=$libdir
for b in "$ex/hello_pc" "$ex/cm/b/hello_rdma"; do
  [ -x "$b" ] || continue
  desc="$(basename "$(dirname "$b")")/$(basename "$b") loads the unpacked libiwarp.so.0"
  if [ "$(resolved "$b" libiwarp.so.0)" = "$(readlink -f "$libdir/libiwarp.so.0")" ]; then pass "$desc"; else fail "$desc"; ldd "$b"; fi
  desc="$(basename "$(dirname "$b")")/$(basename "$b"): server and client over 127.0.0.1 (example_hello.sh)"
  if bash "$here/example_hello.sh" "$b" >"$ex/run.log" 2>&1; then pass "$desc"; else fail "$desc"; cat "$ex/run.log"; fi
done

desc="hello_static (iwarp::iwarp_static, libiwarp.a) needs no libiwarp.so.0 and runs (example_hello.sh)"
if [ -x "$ex/cm/b/hello_static" ] && ! ldd "$ex/cm/b/hello_static" | grep -q libiwarp &&
  bash "$here/example_hello.sh" "$ex/cm/b/hello_static" >"$ex/run.log" 2>&1; then
  pass "$desc"
else
  fail "$desc"; cat "$ex/run.log" 2>/dev/null || true
fi

desc="unpacked iwarp --version prints $version"
if out=$("$root/usr/bin/iwarp" --version 2>&1) && [ "$out" = "iwarp $version" ]; then pass "$desc"; else fail "$desc: $out"; fi
desc="unpacked iwarp exec finds the unpacked drop-in (<libdir>/libiwarp/dropin)"
if out=$(env -u IWARP_DROPIN_DIR "$root/usr/bin/iwarp" exec --print-dir 2>&1) &&
  [ "$(readlink -f "$out")" = "$(readlink -f "$libdir/libiwarp/dropin")" ]; then
  pass "$desc"
else
  fail "$desc: $out"
fi
unset LD_LIBRARY_PATH
desc="the unpacked drop-in resolves libiwarp.so.0 beside it (RUNPATH \$ORIGIN/../..)"
if [ "$(resolved "$libdir/libiwarp/dropin/librdmacm.so.1" libiwarp.so.0)" = "$(readlink -f "$libdir/libiwarp.so.0")" ] &&
  [ "$(resolved "$libdir/libiwarp/dropin/librdmacm.so.1" libibverbs.so.1)" = "$(readlink -f "$libdir/libiwarp/dropin/libibverbs.so.1")" ]; then
  pass "$desc"
else
  fail "$desc"; ldd "$libdir/libiwarp/dropin/librdmacm.so.1"
fi

desc="nothing was installed on this machine (dpkg knows no new libiwarp/iwarp package)"
if [ "$(installed)" = "$before" ]; then pass "$desc"; else fail "$desc: $(installed)"; fi
echo "deb_check: $(($(date +%s) - t0)) s, $fails failed"
[ "$fails" = 0 ]
