#!/usr/bin/env python3
"""The repository stands on its own: every file it refers to is in it.

Checks, over the tracked files of the source tree (git ls-files, or a walk of
the tree without build folders when it is not a git checkout):
  1. no file mentions the team's private model notes or a path outside the
     repository (the patterns of FORBIDDEN);
  2. every relative markdown link resolves to a tracked file or folder inside
     the repository, and every #anchor to a heading of its target;
  3. every path under examples/, theory/, docs/, src/, ... with a source or
     document extension named anywhere is a tracked file (NOT_FILES lists the
     two exceptions);
  4. the example configurations copied into the fuzzing corpus are identical
     to the examples;
  5. the license is the same in meson.build, LICENSE and CITATION.cff;
  6. the table of validate/results/figures/README.md lists every figure of
     that folder and only those, each with its size, and none exceeds
     FIGURE_CAP_KIB (the README says why).
Usage: test_docs.py SOURCE_ROOT. Prints "FAIL: ..." per problem, exits 1 if any.
Python rather than shell: markdown links, headings and path resolution are
plain string work here, and meson guarantees a python3.
"""
import os
import re
import subprocess
import sys

# Built from pieces so that this file does not match its own patterns.
FORBIDDEN = [("MODEL" + ".md", "the private model notes (say theory/model.md)"),
             ("shared" + "/", "a folder outside the repository"),
             ("/" + "work/", "an absolute path of the development machine")]

# Paths of a tracked kind that are named but are not files of the repository.
NOT_FILES = {
    "src/version.h": "generated into the build folder by meson.build",
    "examples/x.ini": "a made-up file name in an example error message (docs/config.md)",
}

FIGURES = "validate/results/figures/"
FIGURE_CAP_KIB = 300
FIGURE_ROW_RE = re.compile(r"^\|\s*`([^`/]+)`\s*\|\s*(\d+)\s*\|")

PATH_RE = re.compile(r"(?<![\w./$-])((?:examples|theory|docs|validate|src|sim|tests|scripts|plots)"
                     r"/[\w./-]*\w\.(?:md|ini|c|h|sh|py|cff))\b")
LINK_RE = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
HEADING_RE = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")

failures = []
checked = {"links": 0, "paths": 0}


def fail(where, message):
    failures.append(f"{where}: {message}")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode()
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                             capture_output=True, check=True).stdout.decode().strip()
        if os.path.realpath(top) == os.path.realpath(root):
            return sorted(f for f in out.split("\0") if f)
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for here, dirs, names in os.walk(root):
        # build folders (meson's) and the default output folder are not sources
        dirs[:] = [d for d in dirs if d != ".git" and d != "out"
                   and not os.path.exists(os.path.join(here, d, "meson-private"))]
        files += [os.path.relpath(os.path.join(here, n), root) for n in names]
    return sorted(files)


def folders_of(files):
    folders = set()
    for f in files:
        d = os.path.dirname(f)
        while d:
            folders.add(d)
            d = os.path.dirname(d)
    return folders


def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def markdown_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE_RE.match(line):
            fenced = not fenced
        elif not fenced:
            yield number, line


def anchors(text):
    return {slug(m.group(1)) for _, line in markdown_lines(text)
            for m in [HEADING_RE.match(line)] if m}


def check_links(root, name, text, tracked, folders):
    for number, line in markdown_lines(text):
        for m in LINK_RE.finditer(line):
            target = m.group(1).strip("<>")
            if SCHEME_RE.match(target):
                continue
            where = f"{name}:{number}"
            checked["links"] += 1
            path, _, anchor = target.partition("#")
            if path:
                resolved = os.path.normpath(os.path.join(os.path.dirname(name), path))
                if resolved.startswith(".." + os.sep) or resolved == ".." or os.path.isabs(path):
                    fail(where, f"link {target} leaves the repository")
                    continue
                if resolved not in tracked and resolved not in folders:
                    fail(where, f"link {target}: {resolved} is not a file of the repository")
                    continue
            else:
                resolved = name
            if anchor and resolved.endswith(".md"):
                with open(os.path.join(root, resolved), encoding="utf-8") as f:
                    if anchor not in anchors(f.read()):
                        fail(where, f"link {target}: no heading #{anchor} in {resolved}")


def check_figures(root, tracked):
    """The figure list cannot go stale: every committed figure is listed with
    its size (KiB, rounded up), every listed figure is committed, none is
    larger than the cap."""
    readme = FIGURES + "README.md"
    if readme not in tracked:
        fail(readme, "missing: it lists the committed figures")
        return
    with open(os.path.join(root, readme), encoding="utf-8") as f:
        listed = {m.group(1): int(m.group(2)) for _, line in markdown_lines(f.read())
                  for m in [FIGURE_ROW_RE.match(line)] if m}
    committed = {name[len(FIGURES):] for name in tracked
                 if name.startswith(FIGURES) and name != readme}
    for name in sorted(committed - listed.keys()):
        fail(FIGURES + name, f"not listed in {readme}")
    for name in sorted(listed.keys() - committed):
        fail(readme, f"lists {name}, which is not a file of {FIGURES}")
    for name in sorted(committed & listed.keys()):
        kib = -(-os.path.getsize(os.path.join(root, FIGURES + name)) // 1024)
        if kib != listed[name]:
            fail(readme, f"lists {name} at {listed[name]} KiB; it has {kib} KiB")
        if kib > FIGURE_CAP_KIB:
            fail(FIGURES + name, f"{kib} KiB, above the cap of {FIGURE_CAP_KIB} KiB")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = tracked_files(root)
    tracked, folders = set(files), folders_of(files)
    if "README.md" not in tracked or "meson.build" not in tracked:
        fail(root, "not the aimdyn source tree (no README.md and meson.build)")
    for name in files:
        with open(os.path.join(root, name), "rb") as f:
            data = f.read()
        for pattern, what in FORBIDDEN:
            for m in re.finditer(re.escape(pattern.encode()), data):
                line = data.count(b"\n", 0, m.start()) + 1
                fail(f"{name}:{line}", f"mentions {pattern}: {what}")
        if b"\0" in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for m in PATH_RE.finditer(text):
            path = m.group(1)
            checked["paths"] += 1
            if path not in tracked and path not in NOT_FILES:
                fail(f"{name}:{text.count(chr(10), 0, m.start()) + 1}",
                     f"names {path}, which is not a file of the repository")
        if name.endswith(".md"):
            check_links(root, name, text, tracked, folders)

    corpus = "tests/fuzz/corpus/config/"
    for name in files:
        example = "examples/" + name[len(corpus):]
        if name.startswith(corpus) and example in tracked:
            with open(os.path.join(root, name), "rb") as copy, \
                    open(os.path.join(root, example), "rb") as original:
                if copy.read() != original.read():
                    fail(name, f"differs from {example}, of which it is a copy")

    def read(name):
        with open(os.path.join(root, name), encoding="utf-8") as f:
            return f.read()
    licence = re.search(r"license\s*:\s*'([^']+)'", read("meson.build"))
    if not licence:
        fail("meson.build", "declares no license")
    elif licence.group(1) == "MIT":
        if "LICENSE" not in tracked or not read("LICENSE").startswith("MIT License"):
            fail("LICENSE", "missing or not the MIT license that meson.build declares")
        if "CITATION.cff" not in tracked or \
                not re.search(r"(?m)^license: MIT$", read("CITATION.cff")):
            fail("CITATION.cff", "missing or without the MIT license that meson.build declares")
    else:
        fail("meson.build", f"declares {licence.group(1)}; this test knows the MIT texts only")

    check_figures(root, tracked)

    for line in failures:
        print("FAIL: " + line)
    print(f"test_docs: {len(files)} files, {checked['links']} relative links, "
          f"{checked['paths']} named paths, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
