#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# dropin.verbs_utils: Debian's ibv_devices and ibv_devinfo, unmodified, on the drop-in
# libibverbs: every up interface is a device ("iwarp_<ifname>"), lo among them, an iWARP RNIC
# (transport iWARP, link layer Ethernet, port ACTIVE), and the limits ibv_devinfo -v prints are
# libiwarp's own (iwarp_query_device, read by a small program built against the library here).
#
# Usage: verbs_utils.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Exit: 0 passed, 1 failed, 77 skipped (ibverbs-utils not installed).
set -u
BUILD=$(realpath "${1:?usage: verbs_utils.sh BUILD_DIR [SHARED_DIR]}")
HERE=$(dirname "$(realpath "$0")")
ROOT=$(realpath "$HERE/../..")
for p in ibv_devices ibv_devinfo cc; do
    command -v $p >/dev/null || { echo "SKIP: $p is not installed"; exit 77; }
done
[ -e "$BUILD/dropin/libibverbs.so.1" ] || { echo "verbs_utils.sh: no drop-in in $BUILD/dropin"; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/dropin_verbs_utils.XXXXXX")
trap 'rm -rf "$W"' EXIT
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }

# What libiwarp itself reports, one "name value" line each.
cat >"$W/limits.c" <<'C'
#include <stdio.h>
#include "iwarp/verbs.h"
int main(void)
{
    struct iwarp_ctx *ctx;
    struct iwarp_device_attr a;
    if (iwarp_ctx_create(NULL, &ctx) || iwarp_query_device(ctx, &a))
        return 1;
    printf("max_qp_wr %u\nmax_sge %u\nmax_cqe %u\nmax_mr %u\nmax_qp_rd_atom %u\n"
           "max_qp_init_rd_atom %u\nmax_srq_wr %u\nmax_sge_rd %u\n",
           a.max_qp_wr, a.max_sge, a.max_cqe, a.max_mr, a.max_qp_rd_atom,
           a.max_qp_init_rd_atom, a.max_srq_wr, a.max_sge_rd);
    return iwarp_ctx_destroy(ctx) != 0;
}
C
cc -std=c11 -I"$ROOT/include" -I"$BUILD/include" -o "$W/limits" "$W/limits.c" \
    -L"$BUILD" -liwarp -Wl,-rpath,"$BUILD" || { echo "FAIL: cannot build the limits probe"; exit 1; }
"$W/limits" >"$W/limits.txt" || { echo "FAIL: libiwarp's limits probe failed"; exit 1; }

export LD_LIBRARY_PATH=$BUILD/dropin
timeout 30 ibv_devices >"$W/devices.txt" 2>&1 || fail "ibv_devices exited $?: $(cat "$W/devices.txt")"
grep -Eq '^[[:space:]]+iwarp_lo[[:space:]]+[0-9a-f]{16}$' "$W/devices.txt" || fail "ibv_devices lists no iwarp_lo with a GUID"
# one device per up interface
up=$(for i in /sys/class/net/*; do
    [ $(($(cat "$i/flags") & 1)) = 1 ] && basename "$i"
done | sort)
listed=$(awk '/iwarp_/ {sub(/^iwarp_/, "", $1); print $1}' "$W/devices.txt" | sort)
[ "$up" = "$listed" ] || fail "devices [$(tr '\n' ' ' <<<"$listed")] are not the up interfaces [$(tr '\n' ' ' <<<"$up")]"

timeout 30 ibv_devinfo -v -d iwarp_lo >"$W/devinfo.txt" 2>&1 || fail "ibv_devinfo exited $?: $(tail -n 3 "$W/devinfo.txt")"
field() { awk -v f="$1:" '$1 == f {print $2; exit}' "$W/devinfo.txt"; }
[ "$(field transport)" = iWARP ] || fail "transport is '$(field transport)', not iWARP"
[ "$(field state)" = PORT_ACTIVE ] || fail "port state is '$(field state)'"
[ "$(field link_layer)" = Ethernet ] || fail "link layer is '$(field link_layer)'"
[ "$(field phys_port_cnt)" = 1 ] || fail "phys_port_cnt is '$(field phys_port_cnt)'"
[ "$(field node_guid)" != "0000:0000:0000:0000" ] || fail "node_guid is zero"
while read -r name value; do
    got=$(field "$name")
    [ "$got" = "$value" ] || fail "ibv_devinfo $name is '$got', libiwarp says $value"
done <"$W/limits.txt"
# No GID line: GID 0 is the MAC in octets 0-5 (siw's), and ibv_devinfo prints only GIDs whose
# octets 8-15 are not zero, as it does for siw.
# a device that does not exist
timeout 30 ibv_devinfo -d iwarp_nonexistent >"$W/none.txt" 2>&1 && fail "ibv_devinfo -d iwarp_nonexistent succeeded"

if [ $FAILED = 0 ]; then
    echo "ok: ibv_devices lists [$(tr '\n' ' ' <<<"$listed")]; ibv_devinfo shows iwarp_lo as iWARP with libiwarp's $(wc -l <"$W/limits.txt") limits"
else
    echo "--- ibv_devinfo -v -d iwarp_lo:"; cat "$W/devinfo.txt"
fi
exit $FAILED
