#!/usr/bin/env bash
# The main job: installs what is missing, builds the release configuration and runs the iwarp
# command's demo, which negotiates MPA between an initiator and a responder, frames an exchange
# of every RDMAP operation, decodes it back with the library's own decoders and writes it to a
# capture file (build/release/demo.pcap) that Wireshark/tshark can open.
#   scripts/run.sh [iwarp demo options]   (e.g. --no-crc, --markers, --mpa-rev 1; see --help)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
exec build/release/iwarp demo --pcap build/release/demo.pcap "$@"
