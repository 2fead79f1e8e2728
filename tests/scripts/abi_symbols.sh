#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Checks that the linker map, the public headers and the shared library agree, so the exported
# ABI cannot drift silently (docs/abi.md):
#  - the map lists symbols by name in its global: sections (no globs), each an iwarp_ name;
#  - every symbol the library exports is listed in the map, carries a version node and is
#    declared in a public header (nothing internal leaks);
#  - every symbol the map lists is exported by the library;
#  - every function a public header declares is exported, unless the header defines it
#    (static inline).
# The headers' declarations come from the compiler itself (gcc -aux-info), not from a regex.
#   abi_symbols.sh MAP LIBRARY INCDIR...
#     MAP      src/libiwarp.map
#     LIBRARY  the built or installed libiwarp.so
#     INCDIR   directories holding iwarp/*.h (the source include/ and the build's include/
#              for the generated version.h, or an install prefix's include/)
# Prints one line per problem saying what to change, and exits 1 if there is any.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 MAP LIBRARY INCDIR..." >&2; exit 2; }
map=$1 lib=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
problems=0
problem() { echo "abi_symbols: $*"; problems=$((problems + 1)); }

# The map without comments, then "NODE SYMBOL" for each entry of a global: section.
awk '{
  line = $0; out = ""
  while (line != "") {
    if (incomment) {
      p = index(line, "*/"); if (!p) { line = ""; break }
      line = substr(line, p + 2); incomment = 0
    } else {
      p = index(line, "/*"); if (!p) { out = out line; break }
      out = out substr(line, 1, p - 1); line = substr(line, p + 2); incomment = 1
    }
  }
  print out
}' "$map" | sed 's/\([{}]\)/\n\1\n/g' | tr ';' '\n' | awk '
  { sub(/^[ \t]+/, ""); sub(/[ \t]+$/, "") }
  $0 == "" { next }
  $0 == "{" { node = last; inside = 1; section = ""; next }
  $0 == "}" { inside = 0; next }
  !inside { last = $0; next }   # a node name, or after "}" the node it inherits
  /^global:/ { section = "global"; sub(/^global:[ \t]*/, ""); if ($0 == "") next }
  /^local:/ { section = "local"; next }
  section == "global" { print node, $0 }
' >"$tmp/map"
# The last node of the file is the newest: that is where new symbols go.
newest=$(awk 'END { print $1 }' "$tmp/map")
newest=${newest:-IWARP_<release>}
while read -r node sym; do
  case "$sym" in
    *[*?[]*) problem "$map: node $node has the glob '$sym': list each symbol by name" ;;
    iwarp_*) ;;
    *) problem "$map: node $node lists '$sym', which is not an iwarp_ name" ;;
  esac
done <"$tmp/map"
awk '{ print $2 }' "$tmp/map" | sort -u >"$tmp/listed"

# Exported symbols (the version nodes themselves are the absolute "A" symbols).
nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' >"$tmp/nm"
while read -r sym; do
  problem "$lib exports $sym without a version node: list it in $map"
done < <(grep -v '@' "$tmp/nm" || true)
sed 's/@.*//' "$tmp/nm" | sort -u >"$tmp/exported"

# Functions the public headers declare: "FILE:LINE extern|static NAME".
: >"$tmp/all.c"
incs=()
for dir in "$@"; do
  dir=$(cd "$dir" && pwd)
  for h in "$dir"/iwarp/*.h; do echo "#include \"$h\"" >>"$tmp/all.c"; done
  incs+=(-I "$dir")
done
gcc -std=c11 -fsyntax-only "${incs[@]}" -aux-info "$tmp/aux" "$tmp/all.c"
# aux-info lines: /* FILE:LINE:NC */ extern int name (args);   (NF: a definition)
sed -n 's|^/\* \([^ ]*/iwarp/[^ :]*\.h\):\([0-9]*\):.\(.\) \*/ \(.*\)$|\1:\2 \3 \4|p' "$tmp/aux" |
  sed 's|^\([^ ]*\) \(.\) \([^(]*[^A-Za-z0-9_(]\)\?\([A-Za-z_][A-Za-z0-9_]*\) (.*|\1 \2 \3 \4|' |
  awk '{ kind = ($3 == "static" && $2 == "F") ? "inline" : "extern"; print $1, kind, $NF }' |
  sort -u -k3,3 >"$tmp/declared"
awk '$2 == "extern" { print $3 }' "$tmp/declared" | sort -u >"$tmp/public"
[ -s "$tmp/public" ] || problem "no function declared in $* (iwarp/*.h): wrong include directory?"

while read -r where kind sym; do
  [ "$kind" = extern ] || continue
  case "$sym" in
    iwarp_*) ;;
    *) problem "$where declares $sym: public functions are iwarp_ names" ;;
  esac
  grep -qxF "$sym" "$tmp/exported" && continue
  if grep -qxF "$sym" "$tmp/listed"; then
    problem "$where declares $sym, listed in $map, but $lib does not define it (IWARP_EXTERN)"
  else
    problem "$where declares $sym, which $lib does not export:" \
      "add the line '    $sym;' to the global: list of node $newest in $map" \
      "(the newest; once its release is tagged, open a node for the next one: docs/abi.md)"
  fi
done <"$tmp/declared"
while read -r sym; do
  problem "$lib exports $sym, which $map does not list: add the line '    $sym;' to node $newest"
done < <(comm -23 "$tmp/exported" "$tmp/listed")
while read -r sym; do
  grep -qxF "$sym" "$tmp/public" ||
    problem "$map lists $sym, which neither $lib exports nor a public header declares: remove it"
done < <(comm -13 "$tmp/exported" "$tmp/listed")
while read -r sym; do
  problem "$lib exports $sym, which no public header declares: make it static or drop it from $map"
done < <(comm -23 "$tmp/exported" "$tmp/public")

if [ "$problems" = 0 ]; then
  echo "abi_symbols: $(wc -l <"$tmp/exported") symbols:" \
    "the map, the public headers and $(basename "$lib") agree"
fi
[ "$problems" = 0 ]
