#!/usr/bin/env bash
# The drop-in libibverbs.so.1 and librdmacm.so.1 export rdma-core 44's public ABI: the same
# version nodes and, in each, the same symbols (default and compatibility versions alike) as
# the system's libraries; rdma-core's provider ABI (IBVERBS_PRIVATE_*) is absent but for
# ibv_query_gid_type@IBVERBS_PRIVATE_34, without which Debian's ibv_devinfo does not load; only
# IWARP_DROPIN_PRIVATE (what the two drop-in libraries share) is added.
# Usage: symbols.sh BUILD_DIR [SHARED_DIR]; exit 77 when the system libraries are missing.
set -u
build=${1:?usage: symbols.sh BUILD_DIR}
sysdir=/usr/lib/x86_64-linux-gnu
fail=0

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
    private=$(echo "$have" | grep 'IBVERBS_PRIVATE\|RDMACM_PRIVATE' |
        grep -vx 'IBVERBS_PRIVATE_34 ibv_query_gid_type\|IBVERBS_PRIVATE_34 IBVERBS_PRIVATE_34')
    if [ -n "$private" ]; then
        echo "FAIL: $lib exports rdma-core's private ABI:"
        echo "$private" | sed 's/^/  /'
        fail=1
    fi
    have=$(echo "$have" | grep -v 'IWARP_DROPIN_PRIVATE\|IBVERBS_PRIVATE_34')
    missing=$(comm -23 <(echo "$want") <(echo "$have"))
    extra=$(comm -13 <(echo "$want") <(echo "$have"))
    if [ -n "$missing" ]; then
        echo "FAIL: $lib lacks $(echo "$missing" | wc -l) of rdma-core's symbols:"
        echo "$missing" | sed 's/^/  /'
        fail=1
    fi
    if [ -n "$extra" ]; then
        echo "FAIL: $lib exports $(echo "$extra" | wc -l) symbols rdma-core does not:"
        echo "$extra" | sed 's/^/  /'
        fail=1
    fi
    if [ -z "$missing" ] && [ -z "$extra" ]; then
        echo "ok: $lib exports rdma-core's $(echo "$want" | wc -l) public symbols"
    fi
done
exit $fail
