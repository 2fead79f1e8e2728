#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Fails when the modules of a layer call each other in a cycle.

Usage: check-api-cycles.py OBJECT|DIR...   (the object files of one layer; a directory stands
for the *.o files in it, e.g. build/dev/CMakeFiles/iwarp_obj.dir/src/api)

A module depends on another when it leaves undefined a global symbol the other defines (nm),
so the check sees what the linker sees, not #include lines. Prints every cycle found
(a strongly connected component of more than one module, or a module that is its own).
"""
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", "-g", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCVWG":
            defined.add(parts[2])
    return defined, undefined


def module(obj):
    name = os.path.basename(obj)
    return name.split(".c.o")[0].split(".o")[0]


def components(graph):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(args):
    objs = []
    for a in args:
        if os.path.isdir(a):
            objs += sorted(os.path.join(a, f) for f in os.listdir(a) if f.endswith(".o"))
        else:
            objs.append(a)
    if not objs:
        print("check-api-cycles: no object files given", file=sys.stderr)
        return 2
    syms = {module(o): symbols(o) for o in objs}
    owner = {}
    for m, (defined, _) in syms.items():
        for s in defined:
            owner[s] = m
    graph = {m: set() for m in syms}
    why = {}
    for m, (_, undefined) in syms.items():
        for s in sorted(undefined):
            o = owner.get(s)
            if o and o != m:
                graph[m].add(o)
                why.setdefault((m, o), s)
    cycles = [c for c in components(graph) if len(c) > 1]
    for c in cycles:
        edges = [f"{a} -> {b} ({why[(a, b)]})" for a in c for b in sorted(graph[a]) if b in c]
        print("check-api-cycles: modules call each other in a cycle: " + ", ".join(c))
        for e in edges:
            print("  " + e)
    if cycles:
        return 1
    print(f"check-api-cycles: OK ({len(objs)} modules, no cycle)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
