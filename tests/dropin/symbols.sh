#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The drop-in libibverbs.so.1 and librdmacm.so.1 export rdma-core 44's public ABI: the same
# version nodes and, in each, the same symbols (default and compatibility versions alike) as
# the system's libraries. rdma-core's provider ABI (IBVERBS_PRIVATE_34) is not offered, except
# exactly the names unmodified programs bind at load: ibv_query_gid_type (Debian's ibv_devinfo)
# and what the installed direct-verbs libraries (libmlx5, libefa, ..., linked by perftest)
# import, all of which must be there. Only IWARP_DROPIN_PRIVATE (what the two drop-in libraries
# share) is added.
# Usage: symbols.sh BUILD_DIR [SHARED_DIR]; exit 77 when the system libraries are missing.
set -u
build=${1:?usage: symbols.sh BUILD_DIR}
sysdir=/usr/lib/x86_64-linux-gnu
fail=0
indent() { sed "s/^/  /"; }

# IBVERBS_PRIVATE_34 names bound by the system's libraries that depend on libibverbs.so.1, and
# by ibv_devinfo.
load_time_private() {
    for l in "$sysdir"/*.so.*; do
        [ -L "$l" ] && continue
        case $(basename "$l") in libibverbs.so.*) continue ;; esac
        readelf -d "$l" 2>/dev/null | grep -q 'NEEDED.*libibverbs\.so\.1' || continue
        objdump -T "$l" | awk '/\*UND\*/ && /IBVERBS_PRIVATE_34/ {print "IBVERBS_PRIVATE_34", $NF}'
    done
    echo "IBVERBS_PRIVATE_34 ibv_query_gid_type"
    echo "IBVERBS_PRIVATE_34 IBVERBS_PRIVATE_34"
}
allowed_private=$(load_time_private | sort -u)

# "VERSION SYMBOL" lines of a library's dynamic symbols: defined ones, hidden (non-default)
# versions shown in parentheses by objdump kept as "(VERSION)".
exports() {
    objdump -T "$1" | awk '$2 == "g" || $2 == "w" || $3 == "DF" || $3 == "DO" {
        if ($0 ~ /\*UND\*/) next
        print $(NF - 1), $NF }' | grep -E '^\(?[A-Z]' | sort -u
}

for lib in libibverbs.so.1 librdmacm.so.1; do
    sys=$sysdir/$lib
    ours=$build/dropin/$lib
    if [ ! -e "$sys" ]; then
        echo "SKIP: $sys is not installed"
        exit 77
    fi
    if [ ! -e "$ours" ]; then
        echo "FAIL: $ours was not built"
        fail=1
        continue
    fi
    want=$(exports "$sys" | grep -v 'PRIVATE')
    have=$(exports "$ours")
    private=$(comm -23 <(echo "$have" | grep 'IBVERBS_PRIVATE\|RDMACM_PRIVATE') \
        <(echo "$allowed_private"))
    if [ -n "$private" ]; then
        echo "FAIL: $lib exports rdma-core's private ABI beyond what programs bind at load:"
        indent <<<"$private"
        fail=1
    fi
    if [ "$lib" = libibverbs.so.1 ]; then
        unbound=$(comm -13 <(echo "$have" | grep 'IBVERBS_PRIVATE_34') <(echo "$allowed_private"))
        if [ -n "$unbound" ]; then
            echo "FAIL: $lib lacks names installed programs bind at load (they would not start):"
            indent <<<"$unbound"
            fail=1
        fi
    fi
    have=$(echo "$have" | grep -v 'IWARP_DROPIN_PRIVATE\|IBVERBS_PRIVATE_34')
    missing=$(comm -23 <(echo "$want") <(echo "$have"))
    extra=$(comm -13 <(echo "$want") <(echo "$have"))
    if [ -n "$missing" ]; then
        echo "FAIL: $lib lacks $(echo "$missing" | wc -l) of rdma-core's symbols:"
        indent <<<"$missing"
        fail=1
    fi
    if [ -n "$extra" ]; then
        echo "FAIL: $lib exports $(echo "$extra" | wc -l) symbols rdma-core does not:"
        indent <<<"$extra"
        fail=1
    fi
    if [ -z "$missing" ] && [ -z "$extra" ]; then
        echo "ok: $lib exports rdma-core's $(echo "$want" | wc -l) public symbols"
    fi
done
exit $fail
