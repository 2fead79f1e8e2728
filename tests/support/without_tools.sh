#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs a command on this machine as if only the build's own dependencies were installed: PATH
# is a farm of links to every program on the real PATH except the test-only tools (Wireshark,
# qemu, iproute2/nftables, rdma-core's and perftest's programs, libfabric's, python3, clang-format,
# git), and SIW_VM_CACHE is an empty directory (no siw guest image).
#   without_tools.sh COMMAND [ARGS...]
set -euo pipefail
masked='^(tshark|dumpcap|capinfos|editcap|mergecap|rawshark|text2pcap|wireshark|qemu-.*|ip|nft|tc|rping|ucmatose|udaddy|mckey|rdma_.*|riostream|rstream|ib_.*|ibv_.*|ibstat|fi_.*|python3.*|python|clang-format.*|git|tcpdump)$'
farm=$(mktemp -d)
trap 'rm -rf "$farm"' EXIT
mkdir "$farm/bin" "$farm/siw-cache"
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -d "$d" ] || continue
  for p in "$d"/*; do
    n=${p##*/}
    [ -x "$p" ] && [ ! -d "$p" ] || continue
    [[ $n =~ $masked ]] && continue
    [ -e "$farm/bin/$n" ] || ln -s "$p" "$farm/bin/$n"
  done
done
PATH=$farm/bin SIW_VM_CACHE=$farm/siw-cache "$@"
