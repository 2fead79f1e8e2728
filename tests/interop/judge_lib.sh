# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Sourced by the siw interop scripts: the wire judge (../shared/tools/wire-check/check.sh) on a
# guest-NIC capture, with the findings each direction may show. Needs JUDGE (check.sh's path).
#
# siw_judge PCAP PORT OURS ALLOW_OURS ALLOW_SIW
#   OURS: our direction as the judge prints it (i>r when we initiated, r>i when we accepted).
#   ALLOW_OURS / ALLOW_SIW: judge categories (the word in [...]) allowed in that direction,
#   space-separated, and "end" for the end-of-capture findings ("#end": messages and Read
#   Responses left unfinished); a finding whose direction is unknown ("?") is allowed only if
#   both allow it.
#   Prints one line per finding not allowed (nothing: the capture passed); keeps the port's
#   packets in PCAP.PORT.pcap and the judge's listing in PCAP.PORT.judge. JUDGE_TIMEOUT (600 s)
#   bounds each of the two tools it runs. (A guest's capture
#   holds every run of a boot: the port's own packets, taken out first in one quick tshark pass,
#   spare the judge a full dissection of the others per port.)
#
# The judge lists each PDU ("#FRAME DIR ...") and right after it that PDU's findings. A finding's
# direction is the one its text names ("TCP stream N i>r:", "#end [..] r>i:"; the end-of-capture
# findings), else that of the PDU line it follows when that line is of the same frame, else "?".
siw_judge() { # PCAP PORT OURS ALLOW_OURS ALLOW_SIW
    local pcap=$1 port=$2 ours=$3 out rc
    local j=$pcap.$port.judge sub=$pcap.$port.pcap
    # bounded: a judge that hangs is a failure that says so, not a wait with no end (the largest
    # capture, 1,000 x 65535 octets of rping, takes about 200 s here)
    local secs=${JUDGE_TIMEOUT:-600}
    timeout "$secs" tshark -r "$pcap" -Y "tcp.port == $port" -w "$sub" 2>"$sub.err" ||
        { echo "    could not take port $port's packets out of $pcap: $(tail -n 1 "$sub.err")"; return; }
    out=$(timeout "$secs" "$JUDGE" "$sub" "$port" 2>&1)
    rc=$?
    echo "$out" >"$j"
    [ $rc != 124 ] || { echo "    judge still running after $secs s: stopped"; return; }
    [ $rc -le 1 ] || { echo "    judge could not run (rc $rc): $(tail -n 1 "$j")"; return; }
    awk -v ours="$ours" -v ao=" $4 " -v as=" $5 " '
        /^#[0-9]+ / { frame = $1; dir = $2; next }
        /^  (WARN|ERROR) / {
            cat = $0; sub(/^[^[]*\[/, "", cat); sub(/\].*/, "", cat)
            if ($2 == "#end") cat = "end"
            if (match($0, /(i>r|r>i): /)) d = substr($0, RSTART, 3)
            else d = ($2 == frame) ? dir : "?"
            if (d == ours && index(ao, " " cat " ")) { allowed++; next }
            if (d != ours && d != "?" && index(as, " " cat " ")) { allowed++; next }
            if (d == "?" && index(ao, " " cat " ") && index(as, " " cat " ")) { allowed++; next }
            print "    judge: " d " " $0; shown++
        }
        /^RESULT: FAIL/ { fail = 1 }
        END { if (fail && !shown && !allowed) print "    judge: RESULT: FAIL without a finding line" }
    ' "$j"
}
