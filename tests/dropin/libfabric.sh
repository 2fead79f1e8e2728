#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
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
#   - `fi_pingpong -p verbs -e msg` (the verbs provider's MSG endpoint) and
#     `fi_pingpong -p "verbs;ofi_rxm" -e rdm` (rxm over it, with shared receive contexts:
#     FI_OFI_RXM_USE_SRX=1, an SRQ on the drop-in) across the pair, 1 KiB with data checks (-c):
#     both roles exit 0, every line shows #sent = #ack = the iterations, and neither printed an
#     "[error]" (teardown included: fi_close of every object succeeds).
#     rxm without SRX is not run: libfabric 1.17's rxm_close_conn closes a connection's endpoint
#     before it drains the CQ, and a receive completion still queued then reposts its buffer to
#     the freed endpoint (a use after free, SIGSEGV in rxm_post_recv; fixed upstream in 2026,
#     "prov/rxm: fix the msg_ep use-after-free at connection teardown"). It needs the peer's
#     last message and its disconnect to arrive together, which a loaded machine makes common:
#     1 run in ~6 under two busy loops. With SRX the buffer goes back to the shared context.
#     fi_pingpong 1.17's server asks fi_getinfo for no node and no service, and the verbs
#     provider then binds "localhost" (vrb_get_rdmacm_rai): a loopback address, which no device
#     the provider accepts owns (it skips loopback interfaces; a kernel without an RDMA device on
#     lo answers ENODEV). So each namespace's /etc/hosts (ip netns exec bind-mounts
#     /etc/netns/NS/hosts) names its veth address "localhost": the provider's bind then lands on
#     the drop-in's veth device. The same programs over libfabric's tcp provider are printed
#     beside them (INFO): on this veth pair both take ~4 ms per exchange at small sizes, the
#     namespaces' packet path, not the provider.
#
# Usage: libfabric.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Environment: DROPIN_FABRIC_KEEP=DIR keeps the work directory (every program's output) when a
# check failed; DROPIN_FABRIC_ONLY=msg|rdm runs only that fi_pingpong endpoint (both skip fi_info
# when set to rdm or msg, for looping one case).
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
    if [ "${FAILED:-0}" -gt 0 ] && [ -n "${DROPIN_FABRIC_KEEP:-}" ]; then
        mkdir -p "$DROPIN_FABRIC_KEEP" && cp -r "$W" "$DROPIN_FABRIC_KEEP/"
    fi
    ip netns del "$NA" 2>/dev/null
    ip netns del "$NB" 2>/dev/null
    rm -rf "$W" "/etc/netns/$NA" "/etc/netns/$NB"
    rmdir /etc/netns 2>/dev/null
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
# "localhost" is each namespace's veth address (see above: fi_pingpong's server binds it)
mkdir -p "/etc/netns/$NA" "/etc/netns/$NB" &&
    printf '%s localhost\n' "$AA" >"/etc/netns/$NA/hosts" &&
    printf '%s localhost\n' "$AB" >"/etc/netns/$NB/hosts" ||
    skip "cannot write /etc/netns/NS/hosts"
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

ONLY=${DROPIN_FABRIC_ONLY:-}
if [ -z "$ONLY" ]; then
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
fi

ITERS=100
pingpong() { # OUT PROVIDER EP ENV [DROPIN]: runs both roles; leaves OUT.server, OUT.client, OUT.rc
    local out=$W/$1 env=(env)
    [ -n "$4" ] && env+=("$4")
    [ -n "${5:-}" ] && env+=(LD_LIBRARY_PATH="$BUILD/dropin")
    timeout 60 ip netns exec "$NA" "${env[@]}" \
        fi_pingpong -p "$2" -e "$3" -S 1024 -I "$ITERS" -c >"$out.server" 2>&1 &
    local srv=$!
    KIDS+=("$srv")
    wait_for -p "$srv" 20 "fi_pingpong's control port" \
        sh -c "ip netns exec '$NA' ss -Hltn 'sport = :47592' | grep -q ."
    timeout 60 ip netns exec "$NB" "${env[@]}" \
        fi_pingpong -p "$2" -e "$3" -S 1024 -I "$ITERS" -c "$AA" >"$out.client" 2>&1
    local crc=$?
    wait "$srv"
    echo "$? $crc" >"$out.rc"
}
usec() { awk '$1 == "1k" { print $7 }' "$1"; } # usec/xfer of the 1 KiB line
for c in "msg verbs msg" "rdm verbs;ofi_rxm rdm FI_OFI_RXM_USE_SRX=1"; do
    read -r name prov ep penv <<<"$c"
    [ -z "$ONLY" ] || [ "$ONLY" = "$name" ] || continue
    pingpong "$name" "$prov" "$ep" "$penv" dropin
    read -r src crc <"$W/$name.rc"
    report "fi_pingpong -p '$prov' -e $ep on the drop-in, both roles, 1 KiB -c" "$(
        # the whole output: fi_pingpong's stdout is block-buffered, so an error it printed on
        # stderr comes before the table in the file
        [ "$src" = 0 ] || printf '    server exit %s:\n%s\n' "$src" "$(head -n 12 "$W/$name.server" | sed 's/^/      /')"
        [ "$crc" = 0 ] || printf '    client exit %s:\n%s\n' "$crc" "$(head -n 12 "$W/$name.client" | sed 's/^/      /')"
        for side in server client; do
            grep -q '^\[error\]' "$W/$name.$side" &&
                echo "    $side printed errors: $(grep -m3 '^\[error\]' "$W/$name.$side" | tr '\n' ' ')"
            awk -v n="$ITERS" '$1 == "1k" && $2 == n && $3 == "=" n { ok = 1 } END { exit !ok }' \
                "$W/$name.$side" || echo "    $side: no '1k $ITERS =$ITERS' line: $(grep -m1 '^1k' "$W/$name.$side")"
        done
    )"
    pingpong "$name.tcp" tcp "$ep" "$penv"
    echo "INFO fi_pingpong -e $ep, 1 KiB: drop-in verbs $(usec "$W/$name.client") us/xfer," \
        "libfabric tcp $(usec "$W/$name.tcp.client") us/xfer (same veth pair)"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
