#!/bin/bash
# dropin.libfabric: Debian's libfabric 1.17 (libfabric1, built with its verbs provider, which
# links libibverbs.so.1 and librdmacm.so.1) on the drop-in, unmodified.
#
# libfabric's verbs provider ignores loopback interfaces (vrb_getifaddrs skips IFF_LOOPBACK), so
# this runs in two network namespaces joined by a veth pair (10.231.R.1 and .2): the drop-in
# then has a device for each side's veth interface beside its lo device.
#   PASS conditions:
#   - `fi_info -p verbs -t FI_EP_MSG -s ADDR` in the first namespace lists the drop-in's veth
#     device as a verbs domain of fabric Ethernet-iWARP, protocol FI_PROTO_IWARP;
#   - `fi_info -p verbs -t FI_EP_MSG -n ADDR` in the second (the active side: rdma_resolve_addr)
#     lists the second namespace's device.
#   INFO only (printed, not a pass condition): `fi_pingpong -p verbs -e msg` and
#   `fi_pingpong -p "verbs;ofi_rxm" -e rdm` across the pair. fi_pingpong's server asks
#   fi_getinfo for no node and no service, and the verbs provider then binds "localhost"
#   (vrb_get_rdmacm_rai): a loopback address, which no device of a kernel without an RDMA device
#   on lo owns (rdma_bind_addr: ENODEV) and which the drop-in's lo device owns (a device the
#   provider has filtered out); either way the provider answers ENODATA. docs/dropin.md says
#   more.
#
# Usage: libfabric.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Exit: 0 passed, 1 failed, 77 skipped (libfabric-bin not installed, not root, no netns).
set -u
BUILD=$(realpath "${1:?usage: libfabric.sh BUILD_DIR [SHARED_DIR]}")
HERE=$(dirname "$(realpath "$0")")
# shellcheck source=../support/wait_for.sh
. "$HERE/../support/wait_for.sh"
skip() { echo "SKIP: $*"; exit 77; }
command -v fi_info >/dev/null && command -v fi_pingpong >/dev/null || skip "libfabric-bin is not installed"
[ "$(id -u)" = 0 ] || skip "not root (network namespaces)"
command -v ip >/dev/null || skip "iproute2 is not installed"
[ -e "$BUILD/dropin/librdmacm.so.1" ] || { echo "libfabric.sh: no drop-in in $BUILD/dropin"; exit 1; }

W=$(mktemp -d "${TMPDIR:-/tmp}/dropin_fabric.XXXXXX")
R=$(($$ % 250 + 1))
NA=iwfab$$a NB=iwfab$$b IA=iwf$$a IB=iwf$$b
AA=10.231.$R.1 AB=10.231.$R.2
KIDS=()
cleanup() {
    for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done
    ip netns del "$NA" 2>/dev/null
    ip netns del "$NB" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
trap "exit 1" INT TERM
{
    ip netns add "$NA" && ip netns add "$NB" &&
        ip link add "$IA" type veth peer name "$IB" &&
        ip link set "$IA" netns "$NA" && ip link set "$IB" netns "$NB" &&
        ip -n "$NA" addr add "$AA/24" dev "$IA" && ip -n "$NB" addr add "$AB/24" dev "$IB" &&
        ip -n "$NA" link set "$IA" up && ip -n "$NB" link set "$IB" up &&
        ip -n "$NA" link set lo up && ip -n "$NB" link set lo up
} 2>"$W/netns.err" || skip "cannot make network namespaces: $(head -n 1 "$W/netns.err")"
in_ns() { # NS CMD...
    local ns=$1
    shift
    ip netns exec "$ns" env LD_LIBRARY_PATH="$BUILD/dropin" "$@"
}

PASSED=0 FAILED=0
report() { # NAME PROBLEMS
    if [ -z "$2" ]; then
        PASSED=$((PASSED + 1))
        echo "PASS $1"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL $1"
        echo "$2"
    fi
}
lists_domain() { # FILE DOMAIN
    [ "$(awk -v d="$2" '$1 == "domain:" && $2 == d { n++ } END { print n + 0 }' "$1")" -gt 0 ] ||
        echo "    no $2 domain: $(grep -m3 -E 'domain|fabric' "$1" || tail -n 2 "$1")"
    grep -q 'fabric: Ethernet-iWARP' "$1" || echo "    no Ethernet-iWARP fabric"
    grep -q 'protocol: FI_PROTO_IWARP' "$1" || echo "    no FI_PROTO_IWARP protocol"
}

timeout 30 ip netns exec "$NA" env LD_LIBRARY_PATH="$BUILD/dropin" \
    fi_info -p verbs -t FI_EP_MSG -s "$AA" >"$W/info.a" 2>&1
rc=$?
report "fi_info -p verbs -t FI_EP_MSG -s $AA (passive side)" "$(
    [ $rc = 0 ] || echo "    exit $rc: $(tail -n 2 "$W/info.a")"
    lists_domain "$W/info.a" "iwarp_$IA"
)"
timeout 30 ip netns exec "$NB" env LD_LIBRARY_PATH="$BUILD/dropin" \
    fi_info -p verbs -t FI_EP_MSG -n "$AA" >"$W/info.b" 2>&1
rc=$?
report "fi_info -p verbs -t FI_EP_MSG -n $AA (active side)" "$(
    [ $rc = 0 ] || echo "    exit $rc: $(tail -n 2 "$W/info.b")"
    lists_domain "$W/info.b" "iwarp_$IB"
)"

pingpong() { # NAME PROVIDER EP: prints INFO lines
    local out=$W/$1
    timeout 30 ip netns exec "$NA" env LD_LIBRARY_PATH="$BUILD/dropin" \
        fi_pingpong -p "$2" -e "$3" -S 1024 -I 100 -c >"$out.server" 2>&1 &
    local srv=$!
    KIDS+=("$srv")
    wait_for -p "$srv" 20 "fi_pingpong's control port" \
        sh -c "ip netns exec '$NA' ss -Hltn 'sport = :47592' | grep -q ."
    timeout 30 ip netns exec "$NB" env LD_LIBRARY_PATH="$BUILD/dropin" \
        fi_pingpong -p "$2" -e "$3" -S 1024 -I 100 -c "$AA" >"$out.client" 2>&1
    local crc=$?
    wait "$srv"
    local src=$?
    if [ $crc = 0 ] && [ $src = 0 ]; then
        echo "INFO fi_pingpong -p '$2' -e $3 runs on the drop-in: $(grep -E '^ *1k? ' "$out.client" | head -n 1)"
    else
        echo "INFO fi_pingpong -p '$2' -e $3 does not run on the drop-in (not a pass condition):"
        echo "    server exit $src: $(tail -n 1 "$out.server")"
        echo "    client exit $crc: $(tail -n 1 "$out.client")"
    fi
}
pingpong msg verbs msg
pingpong rdm "verbs;ofi_rxm" rdm
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
