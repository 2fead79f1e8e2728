#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The layering check must pass on the real tree and fail on each kind of violation.
set -u
check=$(cd "$(dirname "$0")/../../scripts" && pwd)/check-layering.sh
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/../support/optional.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # expect pass|fail DESCRIPTION
  local want=$1; shift
  if "$check" "$tmp" >"$tmp.out" 2>&1; then got=pass; else got=fail; fi
  if [ "$got" = "$want" ]; then echo "PASS $*"; else echo "FAIL $* (expected $want)"; cat "$tmp.out"; fails=$((fails+1)); fi
}
"$check" "$root" >/dev/null && echo "PASS real tree" || { echo "FAIL real tree"; "$check" "$root"; fails=$((fails+1)); }
mkdir -p "$tmp/src/util" "$tmp/src/wire" "$tmp/src/mpa" "$tmp/src/trace"
printf '#include "util/bytes.h"\n#include <stdint.h>\n' > "$tmp/src/wire/ok.c"
printf '#include "wire/wire.h"\n#include "iwarp/errors.h"\n' > "$tmp/src/mpa/ok.c"
printf '#include "mpa/x.h"\n#include <stdio.h>\n#include <pcap/pcap.h>\n' > "$tmp/src/trace/ok.c"
expect pass "downward includes"
printf '#include "mpa/mpa_frame.h"\n' > "$tmp/src/wire/up.c"
expect fail "wire includes mpa"
rm "$tmp/src/wire/up.c"
printf '#include <sys/socket.h>\n' > "$tmp/src/mpa/io.c"
expect fail "sans-I/O layer includes sys/socket.h"
rm "$tmp/src/mpa/io.c"
printf 'void f(void) { void *p = malloc(4); }\n' > "$tmp/src/util/alloc.c"
expect fail "sans-I/O layer calls malloc"
rm "$tmp/src/util/alloc.c"
mkdir -p "$tmp/src/llp"
printf 'void f(void *b) { free(b); /* libc: usrsctp malloc'"'"'ed it */ }\n' > "$tmp/src/llp/llp_sctp.c"
expect pass "llp_sctp frees with libc, saying why"
printf 'void *f(void) { return malloc(4); }\n' > "$tmp/src/llp/llp_sctp.c"
expect fail "llp_sctp allocates with libc without a reason"
rm -rf "$tmp/src/llp"
mkdir -p "$tmp/src/bogus"; printf '\n' > "$tmp/src/bogus/x.c"
expect fail "unknown layer directory"
rm -rf "$tmp/src/bogus"
# the transport seam: LLP headers only in CM transports, port spaces only in transport_for()
mkdir -p "$tmp/src/api"
printf '#include "llp/llp_tcp.h"\nconst struct cm_transport iwarp_cm_x = {0};\n' > "$tmp/src/api/cm_x.c"
printf 'static int transport_for(int ps)\n{\n    return ps == IWARP_PS_TCP;\n}\n' > "$tmp/src/api/cm.c"
expect pass "a transport includes an LLP header; transport_for tests a port space"
printf '#include "llp/llp_conn.h"\n' > "$tmp/src/api/verbs.c"
expect fail "a non-transport API file includes an LLP header"
rm "$tmp/src/api/verbs.c"
printf 'int f(int ps) { return ps == IWARP_PS_SCTP; }\n' > "$tmp/src/api/cm_x.c"
expect fail "a port-space test outside transport_for"
rm -rf "$tmp/src/api"
# module cycles from object symbols
cyc=$(cd "$(dirname "$0")/../../scripts" && pwd)/check-api-cycles.py
if have "module cycles (check-api-cycles.py)" python3; then
  printf 'void b(void);\nvoid a(void) { b(); }\n' > "$tmp/a.c"
  printf 'void c(void) {}\nvoid b(void) { c(); }\n' > "$tmp/b.c"
  cc -c -o "$tmp/a.o" "$tmp/a.c" && cc -c -o "$tmp/b.o" "$tmp/b.c"
  if python3 "$cyc" "$tmp/a.o" "$tmp/b.o" >/dev/null; then echo "PASS acyclic objects"; else echo "FAIL acyclic objects"; fails=$((fails+1)); fi
  printf 'void a(void);\nvoid c(void) { a(); }\nvoid b(void) { c(); }\n' > "$tmp/b.c"
  cc -c -o "$tmp/b.o" "$tmp/b.c"
  if python3 "$cyc" "$tmp/a.o" "$tmp/b.o" >/dev/null; then echo "FAIL a <-> b cycle not found"; fails=$((fails+1)); else echo "PASS a <-> b cycle found"; fi
fi
echo "$(( fails == 0 ? 1 : 0 )) suites, $fails failures"
optional_exit "$fails"
