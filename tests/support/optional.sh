# SPDX-License-Identifier: BSD-2-Clause
# Optional tools in a test script (sourced). A case whose tool is missing is skipped, never
# failed; a script that skipped a case ends with 77 (CTest's SKIP_RETURN_CODE) when nothing
# failed, so a test that ran only in part is reported as skipped, not as passed.
#   have CASE TOOL...   true when every TOOL is a command on PATH (or, for a TOOL containing a
#                       '/', a readable file); otherwise prints "SKIP: CASE: ... not found"
#   optional_exit FAILS exit 1 when FAILS > 0, else 77 after any skip, else 0
OPTIONAL_SKIPS=0
have() {
  local what=$1 t missing=()
  shift
  for t in "$@"; do
    case "$t" in
      */*) [ -r "$t" ] || missing+=("$t") ;;
      *) command -v "$t" >/dev/null 2>&1 || missing+=("$t") ;;
    esac
  done
  [ ${#missing[@]} = 0 ] && return 0
  echo "SKIP: $what: ${missing[*]} not found"
  OPTIONAL_SKIPS=$((OPTIONAL_SKIPS + 1))
  return 1
}
optional_exit() {
  [ "${1:-0}" -gt 0 ] && exit 1
  [ "$OPTIONAL_SKIPS" -gt 0 ] && { echo "SKIP: $OPTIONAL_SKIPS case(s) skipped for missing tools"; exit 77; }
  exit 0
}
