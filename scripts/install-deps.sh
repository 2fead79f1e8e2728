#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what libiwarp needs to build and test on Debian 12, from Debian's packages only.
# Idempotent: installs only what is missing (apt-get update first, as a fresh machine needs).
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --build  only what building the library and the iwarp command needs
set -euo pipefail

# libibverbs-dev/librdmacm-dev: rdma-core's headers, which the drop-in libibverbs/librdmacm
# (dropin/) are compiled against. rdmacm-utils, perftest, ibverbs-utils, libfabric-bin: the
# unmodified programs the drop-in's tests run; iproute2: network namespaces and ss; nftables:
# the random packet loss of the loss.* tests (tests/scripts/loss.sh);
# abi-dumper, abi-compliance-checker: the ABI check (scripts/abi-check.sh, docs/abi.md).
# pandoc: the man pages (man/*.md, cmake/Man.cmake); man-db: the install check reads them.
# debhelper, dpkg-dev, fakeroot, lintian: the Debian packages (debian/, tests/scripts/deb_check.sh).
# llvm-14: llvm-profdata-14 and llvm-cov-14 for the fuzz corpora's coverage (scripts/fuzz-coverage.sh).
# gdb: every thread's backtrace of a program that overran its bound in a test (tests/support/bounded.sh).
build_pkgs=(gcc cmake ninja-build pkg-config libisal-dev libpcap-dev libusrsctp-dev libibverbs-dev
            librdmacm-dev pandoc)
test_pkgs=(clang libclang-rt-14-dev llvm-14 clang-format-14 tshark python3 git rdmacm-utils
           perftest ibverbs-utils libfabric-bin iproute2 nftables abi-dumper abi-compliance-checker man-db
           debhelper dpkg-dev fakeroot lintian gdb)

pkgs=("${build_pkgs[@]}")
[ "${1:-}" = "--build" ] || pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# tshark asks whether non-root users may capture; the default (no) is what we want.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
