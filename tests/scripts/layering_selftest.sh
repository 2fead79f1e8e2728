#!/usr/bin/env bash
# The layering check must pass on the real tree and fail on each kind of violation.
set -u
check=$(cd "$(dirname "$0")/../../scripts" && pwd)/check-layering.sh
root=$(cd "$(dirname "$0")/../.." && pwd)
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
mkdir -p "$tmp/src/bogus"; printf '\n' > "$tmp/src/bogus/x.c"
expect fail "unknown layer directory"
echo "$(( fails == 0 ? 1 : 0 )) suites, $fails failures"
[ "$fails" = 0 ]
