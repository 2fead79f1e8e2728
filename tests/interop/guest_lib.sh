# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# The siw-vm guest's side of the interop tests' waiting: siw_*.sh put this file, after
# ../support/wait_for.sh, in front of the commands they run in the guest (bash 5.2, Debian 12), so
# that the guest waits with `wait_for` too. siw listens and connects through kernel TCP sockets,
# so the guest's /proc/net/tcp shows rping's and perftest's listeners and connections.

# tcp_port PORT STATES: true if a TCP socket on local port PORT is in a state matching the glob
# STATES (the hex state of /proc/net/tcp[6]: 01 ESTABLISHED, 06 TIME_WAIT, 08 CLOSE_WAIT,
# 09 LAST_ACK, 0A LISTEN, ...). Builtins only: no process to start every 50 ms under TCG.
tcp_port() {
    local hex f _ loc st
    printf -v hex '%04X' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        while read -r _ loc _ st _; do
            # shellcheck disable=SC2053 # STATES is a glob
            [[ ${loc##*:} == "$hex" && $st == $2 ]] && return 0
        done <"$f"
    done
    return 1
}

# listening PORT...: every PORT has a listener.
listening() {
    local p
    for p; do tcp_port "$p" 0A || return 1; done
}

# port_closed PORT: no connection on PORT is open any more, in either direction (the listener and
# TIME_WAIT aside): both ends have closed, so the exchange is on the wire (and in the capture).
port_closed() { ! tcp_port "$1" '0[1-5789B]'; }
