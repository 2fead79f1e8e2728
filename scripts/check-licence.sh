#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when a tracked source file (C, headers, scripts, CMake, linker maps, templates,
# debian/rules) lacks the project's SPDX line in its first three lines, or when LICENSE is not
# the BSD-2-Clause text.
set -euo pipefail
# Usage: check-licence.sh [ROOT]   (ROOT defaults to the repository)
cd "${1:-$(dirname "$0")/..}"
tag='SPDX-License-Identifier: BSD-2-Clause'

grep -q '^BSD 2-Clause License$' LICENSE || { echo "licence: LICENSE is missing or not BSD-2-Clause"; exit 1; }
fail=0
while IFS= read -r f; do
  case "$f" in
    fuzz/corpus/* | tests/vectors/*) continue ;;
    *.c | *.h | *.map | *.sh | *.py | *.cmake | CMakeLists.txt | */CMakeLists.txt | *.in | .ci/run | debian/rules) ;;
    *) continue ;;
  esac
  head -n 3 "$f" | grep -qF "$tag" || { echo "licence: $f: no '$tag' line at the top"; fail=1; }
done < <(git ls-files)
[ "$fail" = 0 ] && echo "licence: every source file carries the BSD-2-Clause SPDX line"
exit "$fail"
