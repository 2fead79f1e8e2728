#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when a file under src/ includes a header of a higher layer, or when a sans-I/O layer
# (L0-L5) includes an I/O, clock or thread header. The layer table is docs/design.md §1.
set -euo pipefail
# Usage: check-layering.sh [ROOT]   (ROOT defaults to the repository; tests pass a scratch tree)
cd "${1:-$(dirname "$0")/..}"

declare -A level=(
  [util]=0 [wire]=1 [mpa]=2 [session]=2 [mem]=2 [ddp]=3 [core]=5
  [llp]=6 [trace]=6 [loop]=7 [api]=8
)
# Headers no sans-I/O layer may use: sockets, polling, threads, clocks, usrsctp, stdio.
forbidden='sys/socket\.h|netinet/|arpa/inet\.h|poll\.h|sys/epoll\.h|pthread\.h|time\.h|sys/time\.h|usrsctp\.h|pcap|stdio\.h|unistd\.h'

fail=0
for f in $(find src -name '*.[ch]' | sort); do
  dir=${f#src/}; dir=${dir%%/*}
  [ -n "${level[$dir]+x}" ] || { echo "layering: $f: unknown layer directory src/$dir (add it to this script and docs/design.md)"; fail=1; continue; }
  mine=${level[$dir]}
  while IFS=: read -r line inc; do
    target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/' <<<"$inc")
    case "$target" in
      iwarp/*) continue ;;                        # public headers: allowed everywhere
      */*) tdir=${target%%/*} ;;
      *) tdir="" ;;
    esac
    if [ -n "$tdir" ] && [ -n "${level[$tdir]+x}" ]; then
      if [ "${level[$tdir]}" -gt "$mine" ]; then
        echo "layering: $f:$line includes $target (layer $tdir=${level[$tdir]} above $dir=$mine)"; fail=1
      fi
    elif [ "$mine" -le 5 ] && grep -Eq "^($forbidden)" <<<"$target"; then
      echo "layering: $f:$line includes <$target>, which a sans-I/O layer must not use"; fail=1
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$f" || true)
  # No direct allocation below the llp seam: memory comes through the context's hooks.
  if [ "$mine" -le 5 ] && grep -nE '\b(malloc|calloc|realloc|free)\s*\(' "$f" | grep -v '^\s*[0-9]*:\s*/\?\*' >/dev/null; then
    echo "layering: $f calls malloc/free directly in a sans-I/O layer"; fail=1
  fi
done
# llp_sctp allocates through its owner's allocator (the context's hooks); the few libc calls
# include/iwarp/verbs.h lists as exceptions carry a `libc:` comment on their line.
for f in $(find src/llp -name 'llp_sctp.c'); do
  bad=$(grep -nE '\b(malloc|calloc|realloc|free)\s*\(' "$f" | grep -v 'libc:' | grep -vE '^[0-9]+:\s*(/\*|\*)' | cut -d: -f1 | tr '\n' , || true)
  if [ -n "$bad" ]; then
    echo "layering: $f:${bad%,} allocates with libc without a libc: reason (iwarp/verbs.h)"; fail=1
  fi
done
# The transport seam (docs/design.md §2): above src/llp, only a file that implements a CM
# transport (defines a `const struct cm_transport`) may include an LLP header, and only the CM's
# transport_for() in src/api/cm.c may test a port space (IWARP_PS_*).
for f in $(find src -name '*.[ch]' ! -path 'src/llp/*' | sort); do
  if grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"llp/' "$f" &&
     ! grep -qE '^const struct cm_transport [a-z_]+ = ' "$f"; then
    echo "layering: $f includes an LLP header but is not a CM transport"; fail=1
  fi
  # lines naming a port space, outside transport_for()'s body in src/api/cm.c
  bad=$(awk -v f="$f" '
    f == "src/api/cm.c" && /^static int transport_for\(/ { inside = 1 }
    inside && /^}/ { inside = 0; next }
    !inside && /IWARP_PS_(TCP|SCTP)/ && !/^[[:space:]]*(\/\*|\*)/ { print FNR }' "$f")
  if [ -n "$bad" ]; then
    echo "layering: $f:$(echo $bad | tr ' ' ,) tests a port space outside the CM's transport_for()"; fail=1
  fi
done
if [ "$fail" = 0 ]; then echo "layering: OK ($(find src -name '*.[ch]' | wc -l) files)"; fi
exit $fail
