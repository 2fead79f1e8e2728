#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Keeps the man pages (man/<name>.<section>.md) and the public headers in step.

  man_check.py SOURCE_DIR [PANDOC]

1. The generated regions of every page are what scripts/gen-man.py makes of the headers now
   (a changed doc comment, prototype or struct without regenerating the pages fails).
2. Every function the headers declare (exported or static inline: all a user calls) is named in
   a section-3 page's NAME line, so it has a page and a link page; no name is on two.
3. Every iwarp_ name a section-3 or -7 page mentions is defined by the headers (or is a page);
   every IWARP_ name is defined by the headers or is a string the code knows (an environment
   variable such as IWARP_PCAP); in any page, a name written as a call, iwarp_x(), is a
   function of the headers.
4. Every IWARP_ERR_* code a public function's body in src/ returns directly (return
   IWARP_ERR_X) is named in its doc comment, so its RETURN VALUE entry does not leave it out
   (codes passed up from helpers are not seen).
5. With PANDOC: every page builds (pandoc -s -t man, as cmake/Man.cmake) and man renders it
   without a warning (man --warnings) and without roff requests showing in the text, when man
   is installed.
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../scripts"))
import iwarp_api  # noqa: E402

PAGE = re.compile(r"^([A-Za-z0-9_.+-]+)\.([1-9])[a-z]*\.md$")
ROFF_LEAK = re.compile(r"(^|\s)\.(RS|RE|IP|TP|PP|LP|SH|SS|nf|fi|TH|B|I|BR|IR)(\s|$)")
GENERATED = re.compile(r"<!-- gen:\w+[^>]*-->.*?<!-- /gen -->", re.S)


def main():
    root = os.path.abspath(sys.argv[1])
    pandoc = sys.argv[2] if len(sys.argv) > 2 else None
    problems = []
    pages = {}
    for path in sorted(glob.glob(os.path.join(root, "man", "*.md"))):
        m = PAGE.match(os.path.basename(path))
        if m:
            pages[path] = (m.group(1), m.group(2), open(path, encoding="utf-8").read())
    if not any(sec == "3" for _, sec, _ in pages.values()):
        sys.exit("man_check: no section-3 page under man/")

    # 1. generated regions up to date
    r = subprocess.run([sys.executable, os.path.join(root, "scripts/gen-man.py"), "--check", root],
                       capture_output=True, text=True)
    if r.returncode != 0:
        problems += [l for l in (r.stdout + r.stderr).splitlines() if l.strip()] or \
            ["scripts/gen-man.py --check failed"]

    # 2. every public function on a section-3 page's NAME line
    functions = set(iwarp_api.public_functions(root))
    named = set()
    for name, sec, text in pages.values():
        if sec != "3":
            continue
        m = re.search(r"^# NAME\s*\n+(.*?)(?:\n\n|\n#)", text, re.S | re.M)
        if not m:
            problems.append(f"man/{name}.{sec}.md: no NAME section")
            continue
        line = re.sub(r"<!--.*?-->", "", m.group(1), flags=re.S).replace("\\_", "_")
        names = [n.strip() for n in line.split(" - ", 1)[0].replace("\n", " ").split(",")]
        for n in names:
            if n in named:  # two link pages of one name: the install would keep one
                problems.append(f"man/{name}.{sec}.md: {n} is on another page's NAME line too")
        named.update(names)
    for fn in sorted(functions - named):
        problems.append(f"{fn}: declared in include/iwarp but on no section-3 page's NAME line")

    # 3. names the pages mention exist
    idents = iwarp_api.identifiers(root)
    page_names = {name for name, _, _ in pages.values()}
    known_strings = set()
    for f in glob.glob(os.path.join(root, "src/**/*.c"), recursive=True) + \
            glob.glob(os.path.join(root, "tools/**/*.c"), recursive=True) + \
            glob.glob(os.path.join(root, "dropin/**/*.c"), recursive=True):
        known_strings.update(re.findall(r"\"(IWARP_[A-Z0-9_]+)\"", open(f, encoding="utf-8").read()))
    for path, (name, sec, text) in pages.items():
        label = f"man/{os.path.basename(path)}"
        body = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # the title block
        plain = body.replace("\\_", "_").replace("\\*", "*")
        for m in re.finditer(r"\b(iwarp_\w+)\**\(\)", plain):
            if m.group(1) not in functions:
                problems.append(f"{label}: {m.group(1)}() is no function of include/iwarp")
        if sec not in ("3", "7"):
            continue
        for tok in sorted(set(re.findall(r"\b(iwarp_\w+|IWARP_[A-Z0-9_]*[A-Z0-9])\b", plain))):
            if tok in idents or tok in page_names or tok.endswith("_X"):  # iwarp_X: ibv_X's
                continue
            if tok.isupper() and tok in known_strings:
                continue
            problems.append(f"{label}: names {tok}, which include/iwarp does not define")

    # 4. codes the definitions return directly are documented
    docs = {d.name: "\n".join(d.doc or []) for ds in iwarp_api.parse_all(root).values()
            for d in ds if d.kind == "function"}
    defined = set()
    for f in sorted(glob.glob(os.path.join(root, "src/**/*.c"), recursive=True)):
        text = open(f, encoding="utf-8").read()
        for m in re.finditer(r"^[a-z][^\n;=]*?\b(iwarp_\w+)\([^;{]*?\)\s*\n\{", text, re.M):
            fn = m.group(1)
            if fn not in docs:
                continue
            defined.add(fn)
            end = text.find("\n}\n", m.end())
            body = text[m.end():end if end >= 0 else len(text)]
            codes = set(re.findall(r"\breturn\s+(IWARP_ERR_\w+)", body))
            codes |= set(re.findall(r"\?[^:;]*:\s*(IWARP_ERR_\w+)\s*;", body))
            for c in sorted(codes):
                if not re.search(rf"\b{c}\b", docs[fn]):
                    problems.append(f"{os.path.relpath(f, root)}: {fn} returns {c}, which its "
                                    "doc comment (and so its man page) does not name")
    if len(defined) < len(docs) // 2:
        problems.append(f"found only {len(defined)} of {len(docs)} public functions' "
                        "definitions in src/: the definition pattern needs updating")

    # 5. pandoc builds each page; man renders it without warnings
    if pandoc:
        man = shutil.which("man")
        with tempfile.TemporaryDirectory() as tmp:
            for path, (name, sec, _) in pages.items():
                out = os.path.join(tmp, f"{name}.{sec}")
                r = subprocess.run([pandoc, "-s", "-f", "markdown-smart", "-t", "man",
                                    "-V", "adjusting=l", "-M", "hyphenate=false", "-o", out, path],
                                   capture_output=True, text=True)
                if r.returncode != 0 or r.stderr.strip():
                    problems.append(f"man/{os.path.basename(path)}: pandoc: {r.stderr.strip()}")
                    continue
                if man:
                    r = subprocess.run([man, "--warnings", "-E", "UTF-8", "-l", out],
                                       capture_output=True, text=True,
                                       env=dict(os.environ, MANPAGER="cat", MANWIDTH="80"))
                    if r.returncode != 0 or r.stderr.strip():
                        problems.append(f"man/{os.path.basename(path)}: man: "
                                        f"{r.stderr.strip()[:2000]}")
                    # a roff request printed as text (pandoc's output for some nestings,
                    # which man does not warn about)
                    for line in r.stdout.splitlines():
                        if ROFF_LEAK.search(line):
                            problems.append(f"man/{os.path.basename(path)}: roff in the "
                                            f"rendered text: {line.strip()}")

    for p in problems:
        print(p)
    print(f"man_check: {len(pages)} pages, {len(functions)} functions, {len(problems)} problems")
    partial = not pandoc or not shutil.which("man")
    if partial:
        print("SKIP: pandoc or man not found: the pages were not built and rendered")
    # a partial run is a SKIP (77), never a pass
    sys.exit(1 if problems else 77 if partial else 0)


main()
