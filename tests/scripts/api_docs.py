#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks the public headers' documentation (the layout include/iwarp/common.h describes) and
that shipped text names no document that does not ship.

  api_docs.py SOURCE_DIR [IWARP_BIN]

1. Every function declared in include/iwarp/*.h (IWARP_EXTERN or static inline) follows a
   comment opened with a double star whose first line is "NAME - summary" and which has the
   sections "Returns:", "Ownership:" and "Context:", in that order.
2. Every struct, enum and function-pointer typedef defined there has such a comment whose first
   line is "struct NAME - ...", "enum NAME - ..." or "NAME - ...".
3. The installed headers, README.md, CONTRIBUTING.md, docs/*.md, man/*.md and (with IWARP_BIN)
   the --help text of every iwarp command name no document outside the project: no "../shared", no
   "seed NNN", no "wire-reference", no "api-conventions".
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import iwarp_api  # noqa: E402  (the header parser shared with gen-man.py, man_check.py)

FOREIGN = re.compile(r"\.\./shared|\bseed \d{3}\b|wire-reference|api-conventions", re.I)

problems = []


def check_header(path):
    name = os.path.relpath(path)
    for d in iwarp_api.parse_header(path):
        fn, i, doc = d.name, d.line - 1, d.doc
        if d.kind == "function":
            if doc is None:
                problems.append(f"{name}:{i + 1}: {fn} has no doc comment")
                continue
            if not iwarp_api.first_line(doc).startswith(fn + " - "):
                problems.append(f"{name}:{i + 1}: {fn}: doc does not start with '{fn} - '")
            body = "\n".join(doc)
            at = [body.find(f"\n{tag}") for tag in iwarp_api.TAGS]
            if min(at) < 0 or at != sorted(at):
                problems.append(
                    f"{name}:{i + 1}: {fn}: needs Returns:, Ownership:, Context: in that order")
            continue
        want = f"{d.kind} {fn} - " if d.kind in ("struct", "enum") else f"{fn} - "
        if doc is None or not iwarp_api.first_line(doc).startswith(want):
            problems.append(f"{name}:{i + 1}: {want.strip(' -')} has no '{want}' doc comment")


def check_foreign(label, text):
    for n, line in enumerate(text.split("\n"), 1):
        if FOREIGN.search(line):
            problems.append(f"{label}:{n}: names a document that does not ship: {line.strip()}")


def main():
    src = sys.argv[1]
    os.chdir(src)
    headers = sorted(glob.glob("include/iwarp/*.h") + glob.glob("include/iwarp/*.h.in"))
    if not headers:
        sys.exit("api_docs: no headers under include/iwarp")
    for h in headers:
        check_header(h)
    shipped = (headers + ["README.md", "CONTRIBUTING.md"] + sorted(glob.glob("docs/*.md")) +
               sorted(glob.glob("man/*.md")))
    for f in shipped:
        if os.path.exists(f):
            check_foreign(f, open(f, encoding="utf-8").read())
    if len(sys.argv) > 2:
        cli = sys.argv[2]
        for cmd in (["--help"], ["perf", "--help"], ["ping", "--help"], ["dump", "--help"],
                    ["demo", "--help"]):
            r = subprocess.run([cli] + cmd, capture_output=True, text=True)
            check_foreign("iwarp " + " ".join(cmd), r.stdout + r.stderr)
    for p in problems:
        print(p)
    print(f"api_docs: {len(headers)} headers, {len(problems)} problems")
    sys.exit(1 if problems else 0)


main()
