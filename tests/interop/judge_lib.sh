# shellcheck shell=bash
# Sourced by the siw interop scripts: the wire judge (../shared/tools/wire-check/check.sh) on a
# guest-NIC capture, with the findings each direction may show. Needs JUDGE (check.sh's path).
#
# siw_judge PCAP PORT OURS ALLOW_OURS ALLOW_SIW
#   OURS: our direction as the judge prints it (i>r when we initiated, r>i when we accepted).
#   ALLOW_OURS / ALLOW_SIW: judge categories (the word in [...]) allowed in that direction,
#   space-separated; a finding without a direction ("?") is allowed only if both allow it.
#   Prints one line per finding not allowed (nothing: the capture passed); keeps the judge's
#   listing in PCAP.PORT.judge.
#
# One judge weakness is worked around: wire-check (tshark 4.0's MPA reassembly) loses FPDU sync
# on a stream when an FPDU header starts in the last 4 octets of a TCP segment (slirp's
# 1440-octet segments make that happen in long runs of our 32 KiB FPDUs) and then reports bogus
# findings. For such a stream of ours, mpa_walk.py walks the FPDUs independently; if every one is
# well-formed (or the last is cut by the peer's reset), that stream's findings in our direction
# are dropped with a note on stderr, and so are our direction's end-of-capture findings (they
# name no stream; after a lost sync they carry its garbage). Any other finding stands.
SIW_WALK=$(dirname "${BASH_SOURCE[0]}")/mpa_walk.py
SIW_HOST_ADDR=10.0.2.2 # the host as the guest sees it (slirp): the sender of our direction

siw_judge() { # PCAP PORT OURS ALLOW_OURS ALLOW_SIW
    local pcap=$1 port=$2 ours=$3 out rc
    local j=$pcap.$port.judge found=$pcap.$port.found
    out=$("$JUDGE" "$pcap" "$port" 2>&1)
    rc=$?
    echo "$out" >"$j"
    [ $rc -le 1 ] || { echo "    judge could not run (rc $rc): $(tail -n 1 "$j")"; return; }
    # Two passes: the judge prints a frame's findings before the frame's own line.
    awk -v ours="$ours" -v ao=" $4 " -v as=" $5 " '
        NR == FNR { if (/^#[0-9]+ /) dir[substr($1, 2)] = $2; next }
        /^  (WARN|ERROR) / {
            n = ""; if ($2 ~ /^#[0-9]+$/) n = substr($2, 2)
            cat = $0; sub(/^[^[]*\[/, "", cat); sub(/\].*/, "", cat)
            d = (n != "" && dir[n] != "") ? dir[n] : "?"
            if (d == ours && index(ao, " " cat " ")) { allowed++; next }
            if (d != ours && d != "?" && index(as, " " cat " ")) { allowed++; next }
            if (d == "?" && index(ao, " " cat " ") && index(as, " " cat " ")) { allowed++; next }
            print "    judge: " d " " $0; shown++
        }
        /^RESULT: FAIL/ { fail = 1 }
        END { if (fail && !shown && !allowed) print "    judge: RESULT: FAIL without a finding line" }
    ' "$j" "$j" >"$found"
    # The streams of our direction's findings (by frame, or named by a lost-sync line).
    local frames streams s
    frames=$(grep -oE "^    judge: ($ours|\\?) +(ERROR|WARN) +#[0-9]+" "$found" | grep -oE '[0-9]+$' |
        sort -un)
    if [ -z "$frames" ] && ! grep -qE "TCP stream [0-9]+ $ours:" "$found"; then
        cat "$found"
        return
    fi
    tshark -r "$pcap" -T fields -e frame.number -e tcp.stream 2>/dev/null >"$pcap.streams"
    streams=$(
        awk -v f=" ${frames//$'\n'/ } " 'index(f, " " $1 " ") { print $2 }' "$pcap.streams"
        grep -oE "TCP stream [0-9]+ $ours:" "$found" | grep -oE '[0-9]+'
    )
    for s in $(echo "$streams" | sort -un); do
        python3 "$SIW_WALK" "$pcap" "$s" "$SIW_HOST_ADDR" >"$pcap.walk.$s" 2>/dev/null || continue
        echo "    note: judge lost MPA sync on TCP stream $s; $(cat "$pcap.walk.$s")" >&2
        awk -v s="$s" -v ours="$ours" 'NR == FNR { st[$1] = $2; next }
            {
                if (match($0, /^    judge: [^ ]+ +(ERROR|WARN) +#[0-9]+ /)) {
                    n = $4; sub(/^#/, "", n); if (st[n] == s && ($2 == ours || $2 == "?")) next
                }
                if (index($0, "TCP stream " s " " ours ":")) next
                if (index($0, " #end [") && index($0, "] " ours ": ")) next
                print
            }' "$pcap.streams" "$found" >"$found.tmp" && mv "$found.tmp" "$found"
    done
    cat "$found"
}
