#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""DDP over SCTP captures beyond gen_pcap.py's three, built with its own classes (imported from
WIRECHECK_DIR), for `iwarp dump`'s tests (tests/wire/dump_judge.sh, tests/scripts/dump_cli.sh).

  sctp_scenarios.py WIRECHECK_DIR OUTDIR    writes every scenario, prints one line each:
                                            PATH <TAB> EXPECT <TAB> AGREE <TAB> DESCRIPTION

EXPECT is `iwarp dump`'s verdict: "pass" or "fail:CATEGORY". AGREE is "judge" when wire-check
(check.sh) must reach the same pass/fail verdict, or "dump-only" where the two differ by design:
check.sh does not reorder by DDP-SSN or drop retransmitted TSNs (it judges chunks in capture
order), and checks neither the U flag nor the Adaptation Layer Indication (its README, "Not
checked").
"""

import os
import struct
import sys


def load(wc):
    sys.path.insert(0, wc)
    sys.dont_write_bytecode = True  # leave the shared folder as it is
    import gen_pcap  # noqa: E402  (the shared generator: same builders, same wire conventions)
    return gen_pcap


def scenarios(g):
    P, S = g.Pcap, g.Sctp
    out = {}

    def session(p, a):
        a.handshake()
        a.data(0, 17, struct.pack("!HHH", 0x005, 16, 8) + b"ulp-pd")
        a.data(1, 17, struct.pack("!HHH", 0x006, 8, 16) + b"ok")

    def send(msn, text, **kw):
        return g.ddp_untagged(g.OP_SEND, 1, 0, msn, 0, text, **kw)

    # A DDP segment carried in three DATA fragments (B, middle, E; RFC 9260 §6.9).
    def fragmented():
        p = P()
        a = S(p, udp_encap=9899)
        session(p, a)
        user = struct.pack("!H", 1) + g.ddp_tagged(g.OP_WRITE, 1, 0x0101, 0x4000,
                                                   g.pattern(600, 1))
        parts = [user[:200], user[200:400], user[400:]]
        flags = [0x06, 0x04, 0x05]  # U|B, U, U|E
        for part, fl in zip(parts, flags):
            val = struct.pack("!IHHI", a.tsn[0], 0, 0, 16) + part
            a._pkt(0, a.tag[1], [a._chunk(0, fl, val)])
            a.tsn[0] += 1
        sack = struct.pack("!IIHH", a.tsn[0] - 1, 65536, 0, 0)
        a._pkt(1, a.tag[0], [a._chunk(3, 0, sack)])
        a.ssn[0][0] = 2
        a.data(0, 16, send(1, b"after the fragments"))
        a.shutdown()
        return p
    out["good_sctp_fragmented"] = ("pass", "judge", "a DDP segment in three DATA fragments",
                                   fragmented)

    # Two DDP Segment chunks sent with their DDP-SSNs swapped in TSN order (legal: RFC 5043 §10).
    def reordered():
        p = P()
        a = S(p)
        session(p, a)
        a.data(0, 16, send(2, b"second"), ssn_override=2)
        a.data(0, 16, send(1, b"first"), ssn_override=1)
        a.ssn[0][0] = 3
        a.data(0, 16, send(3, b"third"))
        a.shutdown()
        return p
    out["good_sctp_reordered"] = ("pass", "dump-only",
                                  "DDP-SSN 2 arrives before 1 (unordered delivery)", reordered)

    # A DATA chunk retransmitted with its TSN (RFC 9260 §6.3.3): taken once.
    def retransmitted():
        p = P()
        a = S(p)
        session(p, a)
        user = struct.pack("!H", 1) + send(1, b"sent twice")
        val = struct.pack("!IHHI", a.tsn[0], 0, 0, 16) + user
        for _ in range(2):
            a._pkt(0, a.tag[1], [a._chunk(0, 0x07, val)])
        a.tsn[0] += 1
        a.ssn[0][0] = 2
        a.data(0, 16, send(2, b"next"))
        a.shutdown()
        return p
    out["good_sctp_retransmitted"] = ("pass", "dump-only", "one DATA chunk sent twice, same TSN",
                                      retransmitted)

    def ssn_gap():
        p = P()
        a = S(p)
        session(p, a)
        a.data(0, 16, send(1, b"one"))
        a.data(0, 16, send(2, b"three"), ssn_override=3)
        a.shutdown()
        return p
    out["bad_sctp_ssn_gap"] = ("fail:sctp-ssn", "judge", "DDP-SSN 2 never sent", ssn_gap)

    def ssn_dup():
        p = P()
        a = S(p)
        session(p, a)
        a.data(0, 16, send(1, b"one"))
        a.data(0, 16, send(2, b"again"), ssn_override=1)
        a.shutdown()
        return p
    out["bad_sctp_ssn_dup"] = ("fail:sctp-ssn", "judge", "DDP-SSN 1 used twice", ssn_dup)

    def ppid():
        p = P()
        a = S(p)
        session(p, a)
        a.data(0, 51, b"not DDP at all")
        a.shutdown()
        return p
    out["bad_sctp_ppid"] = ("fail:sctp-ppid", "judge", "a PPID 51 chunk on a DDP association",
                            ppid)

    def bad_fc():
        p = P()
        a = S(p)
        session(p, a)
        a.data(0, 17, struct.pack("!H", 0x009))
        a.shutdown()
        return p
    out["bad_sctp_function_code"] = ("fail:sctp-ctl", "judge", "Function Code 0x009", bad_fc)

    def ordered():
        p = P()
        a = S(p)
        session(p, a)
        user = struct.pack("!H", 1) + send(1, b"ordered")
        val = struct.pack("!IHHI", a.tsn[0], 0, 0, 16) + user
        a._pkt(0, a.tag[1], [a._chunk(0, 0x03, val)])  # B|E, no U
        a.tsn[0] += 1
        a.shutdown()
        return p
    out["bad_sctp_ordered"] = ("fail:sctp-unordered", "dump-only",
                               "a DDP chunk without U (RFC 5043 §10)", ordered)

    def no_adaptation():
        p = P()
        a = S(p)
        init = struct.pack("!IIHHI", a.tag[0], 65536, 10, 10, a.tsn[0])  # no 0xC006
        a._pkt(0, 0, [a._chunk(1, 0, init)])
        cookie = b"synthetic-state-cookie-0123456"
        cparam = struct.pack("!HH", 7, 4 + len(cookie)) + cookie + b"\0" * ((-len(cookie)) % 4)
        ali = struct.pack("!HHI", 0xC006, 8, 1)
        iack = struct.pack("!IIHHI", a.tag[1], 65536, 10, 10, a.tsn[1]) + ali + cparam
        a._pkt(1, a.tag[0], [a._chunk(2, 0, iack)])
        a._pkt(0, a.tag[1], [a._chunk(10, 0, cookie)])
        a._pkt(1, a.tag[0], [a._chunk(11, 0, b"")])
        a.data(0, 17, struct.pack("!HHH", 0x005, 16, 8))
        a.data(1, 17, struct.pack("!HHH", 0x006, 8, 16))
        a.shutdown()
        return p
    out["bad_sctp_no_adaptation"] = ("fail:sctp-adaptation", "dump-only",
                                     "the INIT lacks the DDP Adaptation Layer Indication",
                                     no_adaptation)

    def bad_chunk_len():
        p = P()
        a = S(p)
        session(p, a)
        user = struct.pack("!H", 1) + send(1, b"cut")
        val = struct.pack("!IHHI", a.tsn[0], 0, 0, 16) + user
        ch = bytearray(a._chunk(0, 0x07, val))
        ch[2:4] = struct.pack("!H", len(ch) + 40)  # Length runs past the packet
        a._pkt(0, a.tag[1], [bytes(ch)])
        a.shutdown()
        return p
    out["bad_sctp_chunk_length"] = ("fail:sctp", "judge",
                                    "a DATA chunk whose Length runs past the packet",
                                    bad_chunk_len)
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    g = load(argv[1])
    os.makedirs(argv[2], exist_ok=True)
    for name, (expect, agree, desc, fn) in scenarios(g).items():
        path = os.path.join(argv[2], name + ".pcap")
        fn().write(path)
        print("%s\t%s\t%s\t%s" % (path, expect, agree, desc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
