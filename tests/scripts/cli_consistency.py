#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""One CLI: the iwarp command's --help texts, its man pages and its shared options agree.

  cli_consistency.py SOURCE_DIR IWARP_BIN

1. `iwarp --help` names both transports (TCP via MPA, and DDP over SCTP) and lists commands;
   every command but version and help has man/iwarp-COMMAND.1.md, and man/iwarp.1.md exists and
   names each of them.
2. Each man page's OPTIONS block is what scripts/man-options.py makes of the command's --help:
   every option --help prints is in the man page with the same text, and no other (the option
   spellings missing on either side are listed); --help's usage lines name no option its rows
   lack.
3. The shared concepts (docs/cli.md): every command that has one accepts it with the one
   spelling (`iwarp CMD SPELLING... --help` exits 0) and lists it in --help under that label;
   every command that has not refuses the spelling (exit 2), so the table cannot go stale.
4. Shipped text (man pages, --help) names no path into the build machine's shared tree.
5. With pandoc and man installed: every page renders with no warning.
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

SRC, IWARP = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "scripts"))
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("man_options",
                                              os.path.join(SRC, "scripts", "man-options.py"))
man_options = importlib.util.module_from_spec(spec)
spec.loader.exec_module(man_options)

problems = []


def problem(msg):
    problems.append(msg)
    print("FAIL: " + msg)


def run(args):
    p = subprocess.run([IWARP] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


# 1. the top-level help and one man page per command
rc, top, _ = run(["--help"])
if rc != 0:
    problem("iwarp --help: exit %d" % rc)
for word in ("TCP", "MPA", "SCTP", "RFC 5043", "--transport"):
    if word not in top:
        problem("iwarp --help does not name %r (both transports)" % word)
cmds = re.findall(r"^  ([a-z]+) {2,}\S", top.split("commands:", 1)[-1], re.M)
subs = [c for c in cmds if c not in ("version", "help")]
if sorted(subs) != sorted(["perf", "ping", "dump", "demo", "exec"]):
    print("note: commands listed by iwarp --help: %s" % " ".join(cmds))
if not subs:
    problem("iwarp --help lists no commands")
top_page = os.path.join(SRC, "man", "iwarp.1.md")
top_src = open(top_page).read() if os.path.exists(top_page) else ""
if not top_src:
    problem("man/iwarp.1.md is missing")
for c in cmds:
    if top_src and "**%s**" % c not in top_src:
        problem("man/iwarp.1.md does not describe the command %s" % c)
for c in subs:
    page = os.path.join(SRC, "man", "iwarp-%s.1.md" % c)
    if not os.path.exists(page):
        problem("iwarp --help lists %s but man/iwarp-%s.1.md is missing" % (c, c))
    if top_src and "**iwarp-%s**(1)" % c not in top_src:
        problem("man/iwarp.1.md does not refer to iwarp-%s(1)" % c)

# 2. every man page's OPTIONS block is its command's --help
for c in subs:
    page = os.path.join(SRC, "man", "iwarp-%s.1.md" % c)
    if not os.path.exists(page):
        continue
    src = open(page).read()
    rc, text, _ = run([c, "--help"])
    if rc != 0:
        problem("iwarp %s --help: exit %d" % (c, rc))
        continue
    if not re.search(r"^title: IWARP-%s$" % c.upper(), src, re.M):
        problem("%s: no 'title: IWARP-%s' in its title block" % (page, c.upper()))
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS",
                    "EXAMPLES", "SEE ALSO"):
        if not re.search(r"^# %s$" % section, src, re.M):
            problem("%s: no section %s" % (page, section))
    if man_options.BEGIN not in src or man_options.END not in src:
        problem("%s: no generated OPTIONS block (scripts/man-options.py)" % page)
        continue
    have = src[src.index(man_options.BEGIN):src.index(man_options.END) + len(man_options.END)]
    want = man_options.block(text).rstrip("\n")
    in_help = {o for label, _ in man_options.option_rows(text)
               for o in man_options.label_options(label)}
    in_man = {o for line in have.splitlines() if line.startswith("**")
              for o in man_options.label_options(line.replace("\\", "").replace("*", ""))}
    # the usage lines name no option the rows lack ([-vVdP] is four)
    usage = text.split("\n\n", 1)[0]
    named = set()
    for m in re.finditer(r"(?<![\w-])-(-[a-z0-9][a-z0-9-]*|[A-Za-z]+)", usage):
        named |= {m.group(0)} if m.group(1).startswith("-") else {"-" + x for x in m.group(1)}
    for o in sorted(named - in_help):
        problem("iwarp %s --help: its usage names %s, which no option row lists" % (c, o))
    for o in sorted(in_help - in_man):
        problem("iwarp %s --help prints %s; man/iwarp-%s.1.md lacks it" % (c, o, c))
    for o in sorted(in_man - in_help):
        problem("man/iwarp-%s.1.md lists %s; iwarp %s --help does not" % (c, o, c))
    if have != want:
        problem("man/iwarp-%s.1.md: its OPTIONS text differs from iwarp %s --help; run "
                "scripts/man-options.py IWARP %s --update" % (c, c, c))

# 3. the shared concepts: (name, the label --help shows, arguments that use it, who has it)
CONCEPTS = [
    ("packet trace", "--trace FILE.pcap", ["--trace", "x.pcap"], {"perf", "ping", "demo", "exec"}),
    ("MPA CRC on", "--crc, --no-crc", ["--crc"], {"perf", "ping", "demo", "exec"}),
    ("MPA CRC off", "--crc, --no-crc", ["--no-crc"], {"perf", "ping", "demo", "exec"}),
    ("IPv6", "-6, --ipv6", ["--ipv6"], {"perf", "ping", "demo"}),
    ("IPv6 (short)", "-6, --ipv6", ["-6"], {"perf", "ping", "demo"}),
    ("transport tcp", "--transport tcp|sctp", ["--transport", "tcp"], {"perf", "ping"}),
    ("transport sctp", "--transport tcp|sctp", ["--transport", "sctp"], {"perf", "ping"}),
    ("port", "-p, --port", ["--port", "9"], {"perf", "ping", "dump"}),
    ("port (short)", "-p, --port", ["-p", "9"], {"perf", "ping", "dump"}),
    ("help", "-h, --help", [], {"perf", "ping", "dump", "demo", "exec"}),
]
for c in subs:
    rc, text, _ = run([c, "--help"])
    labels = [label for label, _ in man_options.option_rows(text)]
    for name, label, args, has in CONCEPTS:
        # ping and exec need a role or a program only to run, never to parse: --help stops there
        rc, out, err = run([c] + args + ["--help"])
        if c in has:
            if rc != 0 or not out.startswith("usage:"):
                problem("iwarp %s does not accept %s for the %s (exit %d: %s)" %
                        (c, " ".join(args), name, rc, err.strip()))
            if not any(lb == label or lb.startswith(label + " ") for lb in labels):
                problem("iwarp %s --help does not list the %s as '%s'" % (c, name, label))
        elif rc != 2:
            problem("iwarp %s accepts %s (exit %d) but the table says it has no %s: update "
                    "CONCEPTS here, docs/cli.md and man/iwarp.1.md" % (c, " ".join(args), rc, name))

# 4. nothing shipped points into the build machine's shared tree
FOREIGN = re.compile(r"/work/shared|\.\./shared|\bseeds?\b", re.I)
for page in sorted(glob.glob(os.path.join(SRC, "man", "*.md"))):
    for n, line in enumerate(open(page), 1):
        if FOREIGN.search(line):
            problem("%s:%d names something that does not ship: %s" % (page, n, line.strip()))
for c in [""] + subs:
    _, text, _ = run(([c] if c else []) + ["--help"])
    if FOREIGN.search(text):
        problem("iwarp %s --help names something that does not ship" % c)

# 5. the pages render without a warning
if shutil.which("pandoc") and shutil.which("man"):
    for page in sorted(glob.glob(os.path.join(SRC, "man", "*.md"))):
        p = subprocess.run(["pandoc", "-s", "-t", "man", page], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        if p.returncode != 0 or p.stderr.strip():
            problem("pandoc %s: %s" % (page, p.stderr.decode().strip()))
            continue
        m = subprocess.run(["man", "-l", "-"], input=p.stdout, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=dict(os.environ, MANPAGER="cat",
                                                            MANWIDTH="80"))
        if m.returncode != 0 or m.stderr.strip():
            problem("man -l %s: %s" % (page, m.stderr.decode().strip()))
rendered = bool(shutil.which("pandoc") and shutil.which("man"))
if not rendered:
    print("SKIP: pandoc or man not found: the pages' rendering is not checked")

print("%d problem(s)" % len(problems))
# a partial run is a SKIP (77), never a pass
sys.exit(1 if problems else 0 if rendered else 77)
