#!/usr/bin/env python3
"""The code's layers point one way (docs/architecture.md), folder by folder
and file by file.

Folders: the library's folders build on one another in the order of LAYERS
(src/io first, src/students last); sim/ (the limit dynamics), validate/
(SGD and comparison) and plots/ build on the library only, never on each
other; the front end in src/cli/ sits on top of them all. A file may include
a header of, and call a function or use a variable defined in, its own
folder and the folders its folder lists, nothing else.

Files: take the C files as nodes and draw A.c -> B.c when A.c includes B.h
(and B.c exists) or uses a function or global variable that B.c defines.
That graph has no cycle, so that every file can be read knowing only the
files below it; neither does the graph of headers including headers.

Reads the sources as text: '#include "..."' lines, and the names a C file
defines at the start of a line (functions and global variables that are not
static; a name defined in several files, as main is, is left out) and
mentions (outside comments, strings and attributes). Prints each violation and exits 1,
or prints a summary and exits 0. Every .c and .h file under src/, sim/,
validate/ and plots/ must be in a folder named here.

Usage: test_layers.py [SOURCE_ROOT]"""
import os
import re
import sys

LIBRARY = ["src/io", "src/config", "src/engine", "src/results", "src/hierarchy", "src/students"]
# folder -> the folders it may include and call besides itself
LAYERS = {
    "src/io": [],
    "src/config": ["src/io"],
    "src/engine": ["src/io", "src/config"],
    "src/results": ["src/io", "src/config", "src/engine"],
    "src/hierarchy": ["src/io", "src/config", "src/engine"],
    "src/students": ["src/io", "src/config", "src/engine", "src/results", "src/hierarchy"],
    "sim": LIBRARY,
    "validate": LIBRARY,
    "validate/bench": LIBRARY + ["validate"],  # the benchmarks time the SGD and the engine
    "plots": LIBRARY,
    "src/cli": LIBRARY + ["sim", "validate", "plots"],
}
CHECKED_ROOTS = ("src", "sim", "validate", "plots")

# a definition at the start of a line whose line names no storage class
# that keeps it out of other files (static) or makes it no definition
NOT_GLOBAL = r"^(?![^\n(=]*\b(?:static|typedef|extern|return)\b)"
DEFINED_FUNCTION = re.compile(
    NOT_GLOBAL + r"(?:[A-Za-z_][\w \t*]*[\s*])?([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{", re.M)
DEFINED_VARIABLE = re.compile(
    NOT_GLOBAL + r"(?:[A-Za-z_][\w \t*]*[\s*])([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=", re.M)


def code_only(text):
    """The text without comments, string and character literals, and
    attributes (so that a definition after __attribute__((...)) starts its
    line)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)\s*", "", text)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(?:\\.|[^'\\\n])+'", "''", text)


def read_tree(root):
    """folder/name -> text of every .c and .h file under the checked roots;
    the files outside LAYERS' folders are returned apart."""
    files, strays = {}, []
    for top in CHECKED_ROOTS:
        for dirpath, dirnames, names in os.walk(os.path.join(root, top)):
            dirnames.sort()
            folder = os.path.relpath(dirpath, root)
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = f"{folder}/{name}"
                if folder not in LAYERS:
                    strays.append(path)
                    continue
                with open(os.path.join(dirpath, name)) as f:
                    files[path] = f.read()
    return files, strays


def find_cycles(graph):
    """The strongly connected components of more than one node, and the
    nodes with an edge to themselves (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    files, strays = read_tree(root)
    problems = 0
    for path in strays:
        print(f"FAIL: {path} is in a folder that tests/test_layers.py does not place "
              f"in a layer (LAYERS)")
        problems += 1

    home = {}  # header name -> its path
    for path in files:
        name = os.path.basename(path)
        if name.endswith(".h"):
            if name in home:
                print(f"FAIL: header {name} in both {home[name]} and {path}")
                problems += 1
            home[name] = path
    includes = {path: [home[inc] for inc in re.findall(r'^#include "([^"]+)"', text, re.M)
                       if inc in home]  # else generated (version.h) or a system header
                for path, text in files.items()}
    code = {path: code_only(text) for path, text in files.items() if path.endswith(".c")}
    definers = {}  # name -> the .c files defining it
    for path, text in code.items():
        for pattern in (DEFINED_FUNCTION, DEFINED_VARIABLE):
            for name in pattern.findall(text):
                definers.setdefault(name, set()).add(path)
    definer = {name: paths.pop() for name, paths in definers.items() if len(paths) == 1}

    def allowed(source, target):
        a, b = os.path.dirname(source), os.path.dirname(target)
        return a == b or b in LAYERS[a]

    for path, targets in includes.items():
        for target in targets:
            if not allowed(path, target):
                folder = os.path.dirname(path)
                print(f"FAIL: {path} includes {target}: {folder}/ may include only itself"
                      f"{''.join(', ' + f for f in LAYERS[folder])}")
                problems += 1
    uses = {}  # .c file -> the .c files whose functions or variables it uses
    for path, text in code.items():
        uses[path] = set()
        for name in sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text))):
            target = definer.get(name)
            if target is None or target == path:
                continue
            uses[path].add(target)
            if not allowed(path, target):
                folder = os.path.dirname(path)
                print(f"FAIL: {path} uses {name} of {target}: {folder}/ may call only itself"
                      f"{''.join(', ' + f for f in LAYERS[folder])}")
                problems += 1

    headers = {path: set(t for t in targets) for path, targets in includes.items()
               if path.endswith(".h")}
    for cycle in find_cycles(headers):
        print(f"FAIL: headers including one another in a cycle: {', '.join(cycle)}")
        problems += 1

    graph = {}
    for path in code:
        edges = set(uses[path])
        for target in includes[path]:
            implementation = target[:-2] + ".c"
            if implementation in code and implementation != path:
                edges.add(implementation)
        graph[path] = edges
    for cycle in find_cycles(graph):
        print(f"FAIL: files depending on one another in a cycle: {', '.join(cycle)}")
        for path in cycle:
            print(f"      {path} -> {', '.join(sorted(t for t in graph[path] if t in cycle))}")
        problems += 1

    edges = sum(len(v) for v in graph.values())
    print(f"test_layers: {len(files)} files in {len(LAYERS)} folders, {len(definer)} "
          f"functions and variables, {edges} file dependencies, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
