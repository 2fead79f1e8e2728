# SPDX-License-Identifier: BSD-2-Clause
"""The public headers (include/iwarp/*.h) as data: every function, struct, enum and
function-pointer typedef with its doc comment (the layout include/iwarp/common.h describes) and
its declaration. One parser for the tools that read the headers: tests/scripts/api_docs.py
(the comments' layout), scripts/gen-man.py (the section-3 man pages) and
tests/scripts/man_check.py (pages and headers in step).
"""
import glob
import os
import re

FUNC = re.compile(r"^(?:IWARP_EXTERN\s+|static inline\s+)[^(;]*?\b(iwarp_\w+)\s*\(")
TYPE = re.compile(r"^(struct|enum) (iwarp_\w+) \{")
TYPEDEF_FN = re.compile(r"^typedef [^(]*\(\*(iwarp_\w+)\)")
DEFINE = re.compile(r"^#define (IWARP_\w+)")
GROUP = re.compile(r"^/\* ---- (.*?) -+ \*/$")
TAGS = ("Returns:", "Ownership:", "Context:")


class Decl:
    """One documented declaration of a public header.

    kind:   "function", "struct", "enum" or "typedef"
    name:   iwarp_x (without "struct "/"enum ")
    header: the header's path relative to the source tree (include/iwarp/verbs.h)
    line:   1-based line of the declaration
    doc:    the doc comment's lines without the comment markers, or None
    code:   the declaration as written: a function's prototype (up to ";" or "{"), a type's
            whole definition (with the #define lines of its bits that follow it)
    inline: a static inline function
    group:  the header's "/* ---- name ---- */" section the declaration is in, or ""
    """

    def __init__(self, kind, name, header, line, doc, code, inline=False, group=""):
        self.kind, self.name, self.header, self.line = kind, name, header, line
        self.doc, self.code, self.inline, self.group = doc, code, inline, group

    def summary(self):
        """The text after "NAME - " on the doc comment's first line(s), up to the first blank
        line."""
        para = []
        for t in self.doc or []:
            if not t.strip():
                if para:
                    break
                continue
            para.append(t.strip())
        text = " ".join(para)
        return text.split(" - ", 1)[1] if " - " in text else text

    def sections(self):
        """The doc comment split into (body, {tag: text}): body is the lines before the first
        tag (the first paragraph, "NAME - summary", removed), each tag's text its lines, the
        first without the tag."""
        doc = list(self.doc or [])
        while doc and not doc[0].strip():
            doc.pop(0)
        while doc and doc[0].strip():  # the "NAME - summary" paragraph
            doc.pop(0)
        body, tags, cur = [], {}, None
        for t in doc:
            tag = next((g for g in TAGS if t.startswith(g)), None)
            if tag:
                cur = tag[:-1]
                tags[cur] = [t[len(tag):]]
            elif cur:
                tags[cur].append(t)
            else:
                body.append(t)
        return body, tags


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


def _code_until(lines, i, end):
    """Lines i.. up to and including the first that matches end."""
    out = []
    for line in lines[i:]:
        out.append(line)
        if end(line):
            break
    return out


def parse_header(path, root="."):
    """Every documented (or documentable) declaration of one header, in order."""
    name = os.path.relpath(path, root)
    lines = open(path, encoding="utf-8").read().split("\n")
    decls, group = [], ""
    for i, line in enumerate(lines):
        g = GROUP.match(line)
        if g:
            group = g.group(1)
            continue
        m = FUNC.match(line)
        if m:
            inline = line.startswith("static inline")
            code = _code_until(lines, i, lambda l: l.rstrip().endswith((";", "{", ")")))
            decls.append(Decl("function", m.group(1), name, i + 1, doc_before(lines, i),
                              "\n".join(code).rstrip(" {"), inline, group))
            continue
        m = TYPE.match(line)
        if m:
            code = _code_until(lines, i, lambda l: l.startswith("}"))
            j = i + len(code)
            # the #define lines of the type's bits that follow it (after a blank line and an
            # optional one-line comment)
            k = j
            while k < len(lines) and not lines[k].strip():
                k += 1
            extra = []
            if k < len(lines) and lines[k].startswith("/*") and lines[k].endswith("*/") \
                    and k + 1 < len(lines) and DEFINE.match(lines[k + 1]):
                extra.append(lines[k])
                k += 1
            while k < len(lines) and DEFINE.match(lines[k]):
                extra.append(lines[k])
                k += 1
            if len(extra) > (1 if extra and extra[0].startswith("/*") else 0):
                code += [""] + extra
            decls.append(Decl(m.group(1), m.group(2), name, i + 1, doc_before(lines, i),
                              "\n".join(code), group=group))
            continue
        m = TYPEDEF_FN.match(line)
        if m:
            code = _code_until(lines, i, lambda l: l.rstrip().endswith(";"))
            decls.append(Decl("typedef", m.group(1), name, i + 1, doc_before(lines, i),
                              "\n".join(code), group=group))
    return decls


def overview(path):
    """The header's opening comment (after the SPDX line) as lines without comment markers."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines) and (not lines[i].startswith("/*") or "SPDX" in lines[i]):
        i += 1
    out = []
    for line in lines[i:]:
        end = line.rstrip().endswith("*/")
        t = re.sub(r"^\s*(/\*|\*/|\*)\s?", "", line.rstrip())
        t = re.sub(r"\s*\*/$", "", t)
        out.append(t)
        if end:
            break
    while out and not out[0].strip():
        out.pop(0)
    return out


def headers(root):
    """The public headers under root/include/iwarp, sorted (version.h.in included)."""
    return sorted(glob.glob(os.path.join(root, "include/iwarp/*.h")) +
                  glob.glob(os.path.join(root, "include/iwarp/*.h.in")))


def parse_all(root):
    """{header path relative to root: [Decl]} for every public header."""
    return {os.path.relpath(h, root): parse_header(h, root) for h in headers(root)}


def public_functions(root):
    """The names of every function a user can call: IWARP_EXTERN and static inline."""
    return sorted({d.name for ds in parse_all(root).values() for d in ds if d.kind == "function"})


def identifiers(root):
    """Every iwarp_/IWARP_ name the headers define: functions, types, enumerators, macros."""
    names = set()
    for h in headers(root):
        text = open(h, encoding="utf-8").read()
        names.update(re.findall(r"\b(?:struct|enum)\s+(iwarp_\w+)", text))
        names.update(re.findall(r"\b(iwarp_\w+)\s*\(", text))
        names.update(re.findall(r"\(\*(iwarp_\w+)\)", text))
        names.update(re.findall(r"typedef\s+[^;]*?\b(iwarp_\w+)\s*;", text))
        names.update(re.findall(r"^#define\s+(IWARP_\w+)", text, re.M))
        names.update(re.findall(r"^\s+(IWARP_\w+)\s*=", text, re.M))
        names.update(re.findall(r"\{\s*(IWARP_\w+)\s*=", text))
        names.update(re.findall(r",\s*(IWARP_\w+)\s*=", text))
        for m in re.finditer(r"XX\((\w+),", text):
            names.add("IWARP_ERR_" + m.group(1))
    return names
