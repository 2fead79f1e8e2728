#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when a C file is not formatted with clang-format 14 and the repository's .clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$cf" ] || { echo "check-format: clang-format not installed" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find src include tests fuzz tools bench -name '*.[ch]')
"$cf" --dry-run -Werror "${files[@]}"
echo "check-format: OK (${#files[@]} files)"
