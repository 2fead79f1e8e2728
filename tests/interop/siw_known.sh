# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Sourced by the siw interop scripts: recognising siw's own failures that a run may show after
# a complete, correct exchange, so that such a run passes, reported as known, only when
# everything else holds.

# Whether, on every TCP connection of PORT in the capture, our FIN acknowledged every octet
# siw (10.0.2.15) had sent: we closed only after the whole exchange, so an error siw reports
# afterwards for its own last Send is siw's. Fails when a connection has no FIN of ours.
fin_acked_all_siw_sent() { # PCAP PORT
    tshark -r "$1" -Y "tcp.port == $2" -T fields -e tcp.stream -e ip.src -e tcp.nxtseq -e tcp.len \
        -e tcp.flags.fin -e tcp.ack 2>/dev/null |
        awk '$2 == "10.0.2.15" && $4 > 0 && $3 + 0 > sent[$1] + 0 { sent[$1] = $3 }
             $2 != "10.0.2.15" && ($5 == "1" || $5 == "True") { fin[$1] = $6 }
             END { n = 0
                   for (s in sent) { if (!(s in fin) || fin[s] + 0 < sent[s] + 0) exit 1; n++ }
                   exit n == 0 }'
}

# Whether siw's rping client (exit 255) lost its own teardown race: after its normal "client
# DISCONNECT EVENT..." it printed "rdma_get_cm_event: Bad file descriptor", which its cm thread
# prints before exit(-1) when main has destroyed the event channel that thread still reads.
# Every ping was verified by then (-V prints "data mismatch!", and each other failure of its
# loop its own message), so those two lines must be all it printed besides its data lines
# (-v: "ping data: ..."); the kernel's lines ("[ 7.0] siw: ...") and the harness's ("siw-vm:
# ...") in the same log are not rping's.
siw_rping_teardown_race() { # GUEST_OUTPUT
    [ "$(tr -d '\r' <"$1" | grep -vE '^(ping data: |\[ *[0-9]+\.[0-9]+\] |siw-vm: )')" = \
        $'client DISCONNECT EVENT...\nrdma_get_cm_event: Bad file descriptor' ]
}

# Whether the judge's findings on a connection (siw_judge's lines) are all siw skipping Tagged
# Offsets in its own direction (the other than OURS, i>r or r>i, as siw_judge takes it): "[to]"
# errors, a tagged segment whose TO does not
# continue the segment before it of the same message (siw, like every sender over TCP, sends a
# message's segments in order, so the octets between were never sent), at least one, and nothing
# else. The capture is taken at the guest's NIC, so the octets siw left out never reached us: a
# data mismatch that rping's -V then finds is siw's (seen once in CI, rping 65535 octets h2g:
# siw's RDMA Write to our buffer skipped 1436 octets, one FPDU's payload, between two of its
# segments).
siw_stream_hole() { # JUDGE_LINES OURS
    local siw='i>r'
    [ "$2" = 'i>r' ] && siw='r>i'
    [ -n "$1" ] && ! grep -qvE "^    judge: $siw +ERROR #[0-9]+ \[to\] " <<<"$1"
}
