#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Fills the generated regions of the section-3 man page sources (man/*.3.md) from the public
headers' doc comments, so the headers stay the one source of truth for every prototype, return
code, ownership rule and thread rule.

  scripts/gen-man.py [--check] [SOURCE_DIR]

A region is written in a page as

  <!-- gen:KIND HEADER... -->
  ...generated text, replaced on every run...
  <!-- /gen -->

where HEADER is a file name under include/iwarp/ (verbs.h) and KIND is one of
  overview   the header's opening comment
  names      the functions declared there, comma-separated (the NAME line: each also gets a
             link page, `man iwarp_reg_mr` opens the page)
  synopsis   their prototypes, as a C code block
  functions  each function: its summary and description (a subsection each, under the
             headers' "/* ---- group ---- */" titles)
  returns    each function's "Returns:" section (every value and IWARP_ERR_* code)
  ownership  each function's "Ownership:" section
  context    each function's "Context:" section (threads, locks, blocking)
  types      each struct, enum and callback type: its doc comment and its definition
  errors     the IWARP_ERR_* table of errors.h: value, name and message
The text outside the regions is written by hand. --check writes nothing and exits 1, naming
the page, when a region differs from what the headers give (tests/scripts/man_check.py runs it).
"""
import os
import re
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iwarp_api  # noqa: E402

REGION = re.compile(r"(<!-- gen:(\w+)((?: [\w.]+)*) -->)(.*?)(<!-- /gen -->)", re.S)
SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~^$@])")
IDENT = re.compile(r"\b(iwarp_\w+|IWARP_\w+)\b")
ITEM = re.compile(r"^(\s*)(- |\d+\. |\w+\s+- )")
CODE_TERM = re.compile(r"^(?:0|>= 0|> 0|IWARP_ERR_\w+|IWARP_ERR_\*)(?:,|\s|$)")
PARAM = re.compile(r"^(\w+)\s+- ")
WIDTH = 100
PAGE = re.compile(r"^[A-Za-z0-9_.+-]+\.[1-9][a-z]*\.md$")  # as cmake/Man.cmake


def join(lines):
    """Comment lines as one line: "SYN/" + "ACK" and "UDP-" + "encapsulated" join without a
    space (a line broken after a slash or a word's hyphen)."""
    out = ""
    for t in lines:
        t = t.strip()
        if out and not re.search(r"(/|\w-)$", out):
            out += " "
        out += t
    return out


def wrap(text, first="", rest=""):
    """text filled to WIDTH columns, the first line after first, the others after rest."""
    return "\n".join(textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                                    break_long_words=False, break_on_hyphens=False))


class Gen:
    def __init__(self, root):
        self.root = root
        self.decls = iwarp_api.parse_all(root)
        self.functions = {d.name for ds in self.decls.values() for d in ds
                          if d.kind == "function"}

    # ---- text -----------------------------------------------------------------------------

    def inline(self, text):
        """Doc comment prose as Markdown: special characters escaped, function names bold."""
        out, pos = [], 0
        for m in IDENT.finditer(text):
            out.append(SPECIAL.sub(r"\\\1", text[pos:m.start()]))
            name = m.group(1)
            esc = name.replace("_", "\\_")
            out.append(f"**{esc}**" if name in self.functions else esc)
            pos = m.end()
        out.append(SPECIAL.sub(r"\\\1", text[pos:]))
        return "".join(out)

    def prose(self, lines):
        """Doc comment lines as Markdown paragraphs and lists ("- x", "1. x", "name - x" items;
        an item's more-indented lines continue it)."""
        blocks, cur, kind = [], [], None

        def flush():
            nonlocal cur, kind
            if cur:
                text = join(cur)
                if kind == "item":
                    text = re.sub(r"^- ", "", text)
                    m = PARAM.match(text)  # "name - meaning": a parameter
                    if m:
                        text = f"*{m.group(1)}*: " + self.inline(text[m.end():])
                    else:
                        text = self.inline(text)
                else:
                    text = self.inline(text)
                blocks.append((kind, text))
            cur, kind = [], None

        item_indent = -1
        for t in lines:
            if not t.strip():
                flush()
                continue
            indent = len(t) - len(t.lstrip())
            m = ITEM.match(t)
            if m:
                flush()
                kind, cur, item_indent = "item", [t], indent
            elif kind == "item" and indent <= item_indent:
                flush()  # back at the item's column: a paragraph after the list
                cur = [t]
            else:
                cur.append(t)
        flush()
        out, prev = [], None
        for kind, text in blocks:
            if kind == "item":
                if prev != "item":
                    out.append("")
                m = re.match(r"(\d+)\\?\. ", text)
                if m:  # "1. x": an ordered list
                    out.append(wrap(text[m.end():], m.group(1) + ". ", "   "))
                else:
                    out.append(wrap(text, "- ", "  "))
            else:
                out.append("")
                out.append(wrap(text))
            prev = kind
        if prev == "item":  # end the list, so that what follows is not part of its last item
            out += ["", "<!-- end of list -->"]
        return "\n".join(out).strip("\n")

    def tagged(self, lines):
        """A Returns: section: "VALUE  meaning" rows become a definition list; other text
        stays prose."""
        rows, pre, post = [], [], []
        first = lines[0].strip() if lines else ""
        rest = lines[1:]
        if first:
            pre.append(first)
        for t in rest:
            s = t.strip()
            indent = len(t) - len(t.lstrip())
            # a line that continues the inline text ("... that is no\n  IWARP_ERR_* code.")
            continues = not rows and pre and not pre[-1].endswith(".")
            if indent <= 3 and CODE_TERM.match(s) and not continues:
                # "IWARP_ERR_A, IWARP_ERR_B,\n  IWARP_ERR_C  text": the term runs across
                # lines while they end with a comma
                if rows and rows[-1][0].endswith(","):
                    term_more, _, text = s.partition("  ")
                    rows[-1][0] = rows[-1][0] + " " + term_more.strip()
                    rows[-1][1].append(text)
                    continue
                term, sep, text = s.partition("  ")
                if not sep:  # "IWARP_ERR_MEM_ACCESS the MR lacks": a single space
                    term, _, text = s.partition(" ")
                    if term.endswith(","):
                        term, text = s, ""
                rows.append([term.strip(), [text]])
            elif rows and indent > 3:
                rows[-1][1].append(s)
            elif rows:
                post.append(s)
            else:
                pre.append(s)
        out = []
        if pre:
            out.append(wrap(self.inline(join(pre))))
        for term, text in rows:
            out.append("")
            out.append(", ".join(f"`{c.strip()}`" for c in term.split(",") if c.strip()))
            out.append(wrap(self.inline(join(x for x in text if x.strip())),
                            ":   ", "    "))
        if post:
            out.append("")
            out.append(wrap(self.inline(join(post))))
        return "\n".join(out).strip("\n")

    # ---- regions --------------------------------------------------------------------------

    def decls_of(self, headers, kinds):
        out = []
        for h in headers:
            path = f"include/iwarp/{h}"
            if path not in self.decls:
                raise SystemExit(f"gen-man: no header {path}")
            out += [d for d in self.decls[path] if d.kind in kinds]
        return out

    def r_names(self, headers):
        return ", ".join(d.name for d in self.decls_of(headers, ("function",)))

    @staticmethod
    def prototype(d):
        text = re.sub(r"\s+", " ", d.code.replace("IWARP_EXTERN ", "")).strip()
        text = text.replace("( ", "(").replace(" )", ")")
        if not text.endswith(";"):
            text += ";"
        # wrap after commas at 66 columns (the page indents code by 14: 80 in all), continuation
        # lines under the first parameter
        head, _, params = text.partition("(")

        def fill(first, indent):
            lines, cur = [], first
            for i, p in enumerate(params.split(", ")):
                piece = p if i == 0 else ", " + p
                if len(cur) + len(piece) > 66 and cur.strip():
                    lines.append(cur + ("," if i > 0 else ""))
                    cur = indent + p
                else:
                    cur += piece
            lines.append(cur)
            return lines

        lines = fill(head + "(", " " * (len(head) + 1))
        if any(len(l) > 66 for l in lines):  # a long name: parameters on their own lines
            lines = [head + "("] + fill("        ", "        ")
        return "\n".join(lines)

    def r_synopsis(self, headers):
        out = ["```c"]
        for d in self.decls_of(headers, ("function",)):
            out.append(self.prototype(d))
        out.append("```")
        return "\n".join(out)

    def r_functions(self, headers):
        out, group = [], None
        for d in self.decls_of(headers, ("function",)):
            if d.group and d.group != group:
                group = d.group
                out.append(f"## {group[0].upper() + group[1:]}")
                out.append("")
            body, _ = d.sections()
            out.append(f"### {d.name.replace('_', chr(92) + '_')}()")
            out.append("")
            summary = d.summary()
            out.append(wrap(self.inline(summary[0].upper() + summary[1:])))
            text = self.prose(body)
            if text:
                out.append("")
                out.append(text)
            if d.inline:
                out.append("")
                out.append("A static inline function of the header (no symbol in the library).")
            out.append("")
        return "\n".join(out).rstrip("\n")

    def r_tag(self, headers, tag):
        out = []
        for d in self.decls_of(headers, ("function",)):
            _, tags = d.sections()
            if tag == "Returns":  # a subsection each: its values are a definition list
                out.append(f"### {d.name.replace('_', chr(92) + '_')}()")
                out.append("")
                out.append(self.tagged(tags.get(tag, [""])))
            else:
                out.append(f"**{d.name.replace('_', chr(92) + '_')}**()")
                text = self.inline(join(tags.get(tag, [])))
                out.append(wrap(text, ":   ", "    "))
            out.append("")
        return "\n".join(out).rstrip("\n")

    def r_types(self, headers):
        out = []
        for d in self.decls_of(headers, ("struct", "enum", "typedef")):
            title = f"{d.kind} {d.name}" if d.kind != "typedef" else d.name
            out.append(f"### {title.replace('_', chr(92) + '_')}")
            out.append("")
            summary = d.summary()
            out.append(wrap(self.inline(summary[0].upper() + summary[1:])))
            body, _ = d.sections()
            text = self.prose(body)
            if text:
                out.append("")
                out.append(text)
            out.append("")
            out.append("```c")
            out.append(d.code)
            out.append("```")
            out.append("")
        return "\n".join(out).rstrip("\n")

    def r_errors(self, headers):
        text = open(os.path.join(self.root, "include/iwarp/errors.h"), encoding="utf-8").read()
        text = re.sub(r"\\\n", " ", text)
        out = []
        table = text[text.index("#define IWARP_ERRNO_MAP"):]
        table = table[:table.index("\n\n")]
        for m in re.finditer(r"/\* (.*?) \*/|XX\((\w+),\s*(-\d+),\s*((?:\"[^\"]*\"\s*)+)\)",
                             table):
            if m.group(1):  # a group's comment: a heading
                out.append(f"### {self.inline(m.group(1))}")
                out.append("")
                continue
            if not out:
                out += ["### Generic", ""]
            m = re.match(r"XX\((\w+),\s*(-\d+),\s*((?:\"[^\"]*\"\s*)+)\)", m.group(0))
            msg = "".join(re.findall(r"\"([^\"]*)\"", m.group(3)))
            name = "IWARP_ERR_" + m.group(1)
            out.append(f"**{name.replace('_', chr(92) + '_')}** ({m.group(2)})")
            out.append(wrap(self.inline(msg), ":   ", "    "))
            out.append("")
        return "\n".join(out).rstrip("\n")

    def region(self, kind, headers):
        if kind == "names":
            return self.r_names(headers)
        block = {
            "overview": lambda: "\n\n".join(
                self.prose(iwarp_api.overview(os.path.join(self.root, "include/iwarp", h)))
                for h in headers),
            "synopsis": lambda: self.r_synopsis(headers),
            "functions": lambda: self.r_functions(headers),
            "returns": lambda: self.r_tag(headers, "Returns"),
            "ownership": lambda: self.r_tag(headers, "Ownership"),
            "context": lambda: self.r_tag(headers, "Context"),
            "types": lambda: self.r_types(headers),
            "errors": lambda: self.r_errors(headers),
        }.get(kind)
        if block is None:
            raise SystemExit(f"gen-man: unknown region kind {kind}")
        return "\n" + block() + "\n"

    def page(self, text):
        def fill(m):
            return m.group(1) + self.region(m.group(2), m.group(3).split()) + m.group(5)

        return REGION.sub(fill, text)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    gen = Gen(root)
    stale = []
    pages = sorted(p for p in os.listdir(os.path.join(root, "man")) if PAGE.match(p))
    for p in pages:
        path = os.path.join(root, "man", p)
        old = open(path, encoding="utf-8").read()
        new = gen.page(old)
        if new != old:
            stale.append(p)
            if not check:
                open(path, "w", encoding="utf-8").write(new)
    for p in stale:
        print(f"man/{p}: {'out of date with the headers (run scripts/gen-man.py)' if check else 'updated'}")
    if check and not stale:
        print(f"gen-man: {len(pages)} pages up to date with the headers")
    sys.exit(1 if check and stale else 0)


if __name__ == "__main__":
    main()
