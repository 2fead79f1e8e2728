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
3. The installed headers, README.md, CONTRIBUTING.md, docs/*.md and (with IWARP_BIN) the --help
   text of every iwarp command name no document outside the project: no "../shared", no
   "seed NNN", no "wire-reference", no "api-conventions".
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import re
import subprocess
import sys

FOREIGN = re.compile(r"\.\./shared|\bseed \d{3}\b|wire-reference|api-conventions", re.I)
FUNC = re.compile(r"^(?:IWARP_EXTERN\s+|static inline\s+)[^(;]*?\b(iwarp_\w+)\s*\(")
TYPE = re.compile(r"^(struct|enum) (iwarp_\w+) \{")
TYPEDEF_FN = re.compile(r"^typedef [^(]*\(\*(iwarp_\w+)\)")

problems = []


def doc_before(lines, i):
    """The doc comment that ends right above line i (skipping nothing), or None."""
    j = i - 1
    if j < 0 or not lines[j].rstrip().endswith("*/"):
        return None
    while j >= 0 and not lines[j].lstrip().startswith("/*"):
        j -= 1
    if j < 0 or not lines[j].lstrip().startswith("/**"):
        return None
    text = [re.sub(r"^\s*(/\*\*|\*/|\*)\s?", "", l).rstrip() for l in lines[j:i]]
    return [t for t in text if t != "*/"]


def first_line(doc):
    for t in doc:
        if t.strip():
            return t.strip()
    return ""


def check_header(path):
    name = os.path.relpath(path)
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = FUNC.match(line)
        if m:
            fn = m.group(1)
            doc = doc_before(lines, i)
            if doc is None:
                problems.append(f"{name}:{i + 1}: {fn} has no doc comment")
                continue
            if not first_line(doc).startswith(fn + " - "):
                problems.append(f"{name}:{i + 1}: {fn}: doc does not start with '{fn} - '")
            body = "\n".join(doc)
            at = [body.find(f"\n{tag}") for tag in ("Returns:", "Ownership:", "Context:")]
            if min(at) < 0 or at != sorted(at):
                problems.append(
                    f"{name}:{i + 1}: {fn}: needs Returns:, Ownership:, Context: in that order")
            continue
        m = TYPE.match(line)
        want = None
        if m:
            want = f"{m.group(1)} {m.group(2)} - "
        else:
            m = TYPEDEF_FN.match(line)
            if m:
                want = f"{m.group(1)} - "
        if want:
            doc = doc_before(lines, i)
            if doc is None or not first_line(doc).startswith(want):
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
    shipped = headers + ["README.md", "CONTRIBUTING.md"] + sorted(glob.glob("docs/*.md"))
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
