#!/usr/bin/env python3
"""The code's layers point one way (docs/architecture.md): the library in
src/ includes nothing outside it; sim/ (the limit dynamics), validate/ (SGD
and comparison) and plots/ build on src/ only, never on each other; the
front end in src/cli/ sits on top of them all. No header includes itself
through a cycle. Reads the #include "..." lines of every C file; prints each
violation and exits 1, or prints a summary and exits 0.

Usage: test_layers.py [SOURCE_ROOT]"""
import os
import re
import sys

ALLOWED = {
    "src": {"src"},
    "sim": {"src", "sim"},
    "validate": {"src", "validate"},
    "validate/bench": {"src", "validate", "validate/bench"},  # they time the SGD and the engine
    "plots": {"src", "plots"},
    "src/cli": {"src", "sim", "validate", "plots", "src/cli"},
}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    files = {}  # folder/name -> its local includes
    home = {}   # name -> folder
    for folder in ALLOWED:
        d = os.path.join(root, folder)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.endswith((".c", ".h")):
                with open(os.path.join(d, name)) as f:
                    files[f"{folder}/{name}"] = re.findall(r'^#include "([^"]+)"', f.read(), re.M)
                if name.endswith(".h"):
                    if name in home:
                        print(f"FAIL: header {name} in both {home[name]}/ and {folder}/")
                        return 1
                    home[name] = folder
    problems = 0
    graph = {}
    for path, incs in files.items():
        folder = os.path.dirname(path)
        graph[path] = []
        for inc in incs:
            if inc not in home:
                continue  # generated (version.h) or a system header in quotes
            target = f"{home[inc]}/{inc}"
            graph[path].append(target)
            if home[inc] not in ALLOWED[folder]:
                print(f"FAIL: {path} includes {target}: {folder}/ may include only "
                      f"{', '.join(sorted(ALLOWED[folder]))}")
                problems += 1
    # cycles: depth-first search over the header graph
    state = {}

    def visit(node, stack):
        nonlocal problems
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                print(f"FAIL: include cycle {' -> '.join(cycle)}")
                problems += 1
            elif not state.get(nxt):
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in graph:
        if not state.get(node):
            visit(node, [node])
    edges = sum(len(v) for v in graph.values())
    print(f"test_layers: {len(files)} files, {edges} local includes, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
