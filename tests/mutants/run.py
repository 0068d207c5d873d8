#!/usr/bin/env python3
"""Mutation testing of aimdyn: applies each small edit of mutants.py, one at
a time, to a scratch copy of the tree, rebuilds incrementally and runs the
tests named for it; a mutant is caught when one of them fails. The real
tree is never edited. See tests/mutants/README.md."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the repository
sys.path.insert(0, HERE)
from mutants import FAST_TESTS, MUTANTS  # noqa: E402  (the list lives beside this script)


def run(cmd, log=None, env=None):
    """Runs cmd; returns (exit status, seconds). Output goes to log (a path)
    or is discarded."""
    start = time.monotonic()
    out = open(log, "w") if log else subprocess.DEVNULL
    try:
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    finally:
        if log:
            out.close()
    return rc, time.monotonic() - start


def git(root, *args):
    return subprocess.run(["git", "-C", root, *args], check=True, capture_output=True).stdout


def copy_tree(root, dest, rev):
    """The tree at commit rev (git archive), or the working tree (tracked and
    untracked files that are not ignored, as they are on disk)."""
    os.makedirs(dest)
    if rev:
        archive = subprocess.run(["git", "-C", root, "archive", rev], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
        return
    names = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in names.decode().split("\0"):
        src = os.path.join(root, name)
        if not name or not os.path.isfile(src):  # deleted in the working tree
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, name))


def refresh_tree(root, tree, rev):
    """Copies the tree into tree (copy_tree). In a reused work directory the
    build is incremental, so ninja must see every file whose content
    changed, whatever its copied time stamp (git archive stamps the commit
    time; an interrupted run may have left a mutant built): a file equal to
    the previous copy keeps that copy's time stamp, any other gets the
    present time."""
    if not os.path.isdir(tree):
        copy_tree(root, tree, rev)
        return
    fresh = tree + ".new"
    shutil.rmtree(fresh, ignore_errors=True)
    copy_tree(root, fresh, rev)
    now = time.time()
    for top, _, files in os.walk(fresh):
        for name in files:
            path = os.path.join(top, name)
            old = os.path.join(tree, os.path.relpath(path, fresh))
            same = False
            if os.path.isfile(old):
                with open(path, "rb") as a, open(old, "rb") as b:
                    same = a.read() == b.read()
            if same:
                st = os.stat(old)
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            else:
                os.utime(path, (now, now))
    shutil.rmtree(tree)
    os.rename(fresh, tree)


def read_source(root, rev, path):
    if rev:
        return git(root, "show", f"{rev}:{path}").decode()
    with open(os.path.join(root, path)) as f:
        return f.read()


def choose_fragment(text, m):
    """The (find, replace) pair of m that occurs exactly once in text: its
    own, else the first of its alternatives (older trees); None if none."""
    for find, replace in [(m.find, m.replace), *m.alternatives]:
        if text.count(find) == 1:
            return find, replace
    return None


def check_fragments(root, rev, mutants):
    """Every mutant's fragment (or one of its alternatives) must occur
    exactly once in its file. Returns (errors, the mutants with the pair
    that fits the tree as find and replace)."""
    errors, fitted = [], []
    names = set()
    for m in mutants:
        if m.name in names:
            errors.append(f"{m.name}: the name is used twice")
        names.add(m.name)
        if any(f == r for f, r in [(m.find, m.replace), *m.alternatives]):
            errors.append(f"{m.name}: a replacement equals its fragment")
        try:
            text = read_source(root, rev, m.file)
        except (OSError, subprocess.CalledProcessError):
            errors.append(f"{m.name}: cannot read {m.file}")
            continue
        pair = choose_fragment(text, m)
        if pair is None:
            errors.append(f"{m.name}: the fragment occurs {text.count(m.find)} times in "
                          f"{m.file} (must be once){' and no alternative fits' if m.alternatives else ''}: "
                          f"{m.find!r}")
            continue
        fitted.append(m._replace(find=pair[0], replace=pair[1]))
    return errors, fitted


def first_failure(log):
    """A short line saying how the test failed: the first line a test marked
    FAIL or outside (its table row: by how much), else cmocka's first error
    message, else an assertion."""
    try:
        with open(log, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    patterns = [re.compile(r"(.*\b(FAIL|outside)\s*$)"),
                re.compile(r"^ERROR: (.*)"),
                re.compile(r"\[\s*ERROR\s*\]\s*---\s*(.*)"),
                re.compile(r"(.*(Assertion|error:).*)")]
    for pattern in patterns:
        for line in lines:
            found = pattern.search(line)
            if found:
                text = " ".join(found.group(1).split())
                return text[:110] + ("..." if len(text) > 110 else "")
    return ""


def largest_margin(log):
    """How far the test was from passing: the largest 'X tolerances' it
    printed (the drift, start and agreement tests print one per case), or
    "" when it prints none (the exact comparisons of test_hierarchy and the
    unit tests: a mismatch there is shown in the first-failure column)."""
    try:
        with open(log, errors="replace") as f:
            found = re.findall(r"\b(\d+(?:\.\d*)?|inf) tolerances\b", f.read())
    except OSError:
        return ""
    return max(found, key=float) if found else ""


def timed_out(log):
    """meson's own timeout: the test was killed, which decides nothing unless
    it had already reported a failure (first_failure)."""
    try:
        with open(log, errors="replace") as f:
            return re.search(r"^\s*Timeout:\s*[1-9]", f.read(), re.M) is not None
    except OSError:
        return False


def run_test(build, spec, multiplier, log):
    """Runs one named test into log: meson's summary, then the test's whole
    output from meson's test log (--print-errorlogs keeps the last 100
    lines only). Returns (exit status, seconds)."""
    cmd, env = test_command(build, spec, multiplier)
    rc, secs = run(cmd, log=log, env=env)
    try:
        with open(os.path.join(build, "meson-logs", "testlog.txt"), errors="replace") as f:
            full = f.read()
        with open(log, "a") as f:
            f.write("\n==== meson-logs/testlog.txt ====\n" + full)
    except OSError:
        pass
    return rc, secs


def test_command(build, spec, multiplier):
    """meson test for 'NAME' or 'NAME:FILTER' (the cmocka test filter of a
    test whose main reads AIMDYN_TEST_FILTER); returns (cmd, env)."""
    name, _, filt = spec.partition(":")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if filt:
        env["AIMDYN_TEST_FILTER"] = filt
    return ["meson", "test", "-C", build, "--no-rebuild", "--print-errorlogs",
            "--timeout-multiplier", str(multiplier), name], env


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="only the fast tests (FAST_TESTS of mutants.py), on the mutants "
                         "that name one")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these mutants")
    ap.add_argument("--rev", help="mutate the tree of this commit instead of the working tree")
    ap.add_argument("--every", action="store_true",
                    help="run every named test of a mutant (default: stop at the first "
                         "that catches it)")
    ap.add_argument("--workdir", help="scratch directory (default: a new temporary one); "
                                      "an existing one is reused, its build incrementally")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copy and logs")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip running the named tests on the unmutated copy first")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--check", action="store_true",
                    help="only check that every fragment occurs exactly once")
    ap.add_argument("--output", help="also write the table (Markdown) to this file")
    ap.add_argument("--timeout-multiplier", type=float, default=4.0,
                    help="times each test's meson timeout (default 4: a loaded machine "
                         "must not turn a slow test into a catch; a timeout is reported "
                         "as such, never as caught)")
    args = ap.parse_args()

    # the repository's top: two levels above this file (tests/mutants/),
    # which also holds in an unpacked tree without git (--check needs no git)
    root = os.path.dirname(os.path.dirname(HERE))
    def fast(t):
        return t.partition(":")[0] in FAST_TESTS

    mutants = [m._replace(tests=[t for t in m.tests if fast(t)]) if args.quick else m
               for m in MUTANTS if not args.only or m.name in args.only]
    mutants = [m for m in mutants if m.tests]
    if args.only:
        unknown = set(args.only) - {m.name for m in MUTANTS}
        if unknown:
            sys.exit(f"mutants: unknown mutant(s): {', '.join(sorted(unknown))}")
    if args.list:
        for m in mutants:
            print(f"{m.name:34} {m.file:24} {' '.join(m.tests):40} {m.note}")
        return 0
    errors, mutants = check_fragments(root, args.rev, mutants)
    if errors:
        print("mutants: the mutant list does not fit the tree:", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 2
    if args.check:
        print(f"mutants: {len(mutants)} fragments, each found exactly once")
        return 0

    t_start = time.monotonic()
    own = not args.workdir
    work = args.workdir or tempfile.mkdtemp(prefix="aimdyn-mutants-")
    tree, build, logs = (os.path.join(work, x) for x in ("tree", "build", "logs"))
    os.makedirs(logs, exist_ok=True)
    refresh_tree(root, tree, args.rev)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    print(f"mutants: scratch copy in {tree}", flush=True)
    if not os.path.isfile(os.path.join(build, "build.ninja")):
        rc, _ = run(["meson", "setup", build, tree], log=os.path.join(logs, "setup.log"), env=env)
        if rc != 0:
            sys.exit(f"mutants: meson setup failed (see {logs}/setup.log)")
    rc, _ = run(["ninja", "-C", build], log=os.path.join(logs, "build.log"), env=env)
    if rc != 0:
        sys.exit(f"mutants: the unmutated tree does not build (see {logs}/build.log)")
    listed = subprocess.run(["meson", "test", "-C", build, "--list"], capture_output=True,
                            text=True, env=env).stdout
    available = {line.split(" / ")[-1].strip() for line in listed.splitlines() if line.strip()}

    broken = set()
    if not args.no_baseline:
        needed = []
        for m in mutants:
            for t in m.tests:
                if t not in needed and t.partition(":")[0] in available:
                    needed.append(t)
        for t in needed:
            log = os.path.join(logs, "baseline-" + t.replace(":", "-") + ".log")
            rc, secs = run_test(build, t, args.timeout_multiplier, log)
            verdict = "ok" if rc == 0 else "TIMES OUT" if timed_out(log) else "FAILS"
            print(f"baseline {t}: {verdict} ({secs:.0f} s)", flush=True)
            if rc != 0:
                broken.add(t)

    rows = []
    status = 0
    for i, m in enumerate(mutants):
        path = os.path.join(tree, m.file)
        with open(path) as f:
            original = f.read()
        t0 = time.monotonic()
        with open(path, "w") as f:
            f.write(original.replace(m.find, m.replace, 1))
        ran, caught_by, timeouts, detail, margin = [], [], [], "", ""
        rc, _ = run(["ninja", "-C", build], log=os.path.join(logs, m.name + "-build.log"),
                    env=env)
        if rc != 0:
            result = "BUILD ERROR"
            status = 2
        else:
            for t in m.tests:
                if t.partition(":")[0] not in available:
                    ran.append(t + " (absent)")
                    continue
                if t in broken:
                    ran.append(t + " (fails unmutated)")
                    continue
                log = os.path.join(logs, f"{m.name}-{t.replace(':', '-')}.log")
                rc, secs = run_test(build, t, args.timeout_multiplier, log)
                if rc != 0 and timed_out(log) and not first_failure(log):
                    ran.append(f"{t} (timed out after {secs:.0f} s)")
                    timeouts.append(t)
                    continue
                ran.append(f"{t} ({secs:.0f} s)")
                if rc != 0:
                    caught_by.append(t)
                    if not detail:
                        detail, margin = first_failure(log), largest_margin(log)
                    if not args.every:
                        break
            result = ("caught" if caught_by else "TIMEOUT" if timeouts else "NOT CAUGHT")
            if timeouts and not caught_by:
                status = 2
            elif not caught_by and status == 0:
                status = 1
        with open(path, "w") as f:
            f.write(original)
        secs = time.monotonic() - t0
        rows.append((m, ran, result, caught_by, margin, detail, secs))
        print(f"[{i + 1}/{len(mutants)}] {m.name}: {result}"
              f"{' by ' + ', '.join(caught_by) if caught_by else ''} ({secs:.0f} s)",
              flush=True)
    run(["ninja", "-C", build], log=os.path.join(logs, "restore-build.log"), env=env)

    total = time.monotonic() - t_start
    caught = sum(1 for r in rows if r[2] == "caught")
    lines = [f"{caught} of {len(rows)} mutants caught"
             f"{' (quick subset)' if args.quick else ''}; "
             f"tree: {args.rev or 'working tree'}; total {total / 60:.1f} min",
             "",
             "| mutant | file | tests run | result | caught by | tolerances | first failure "
             "| time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for m, ran, result, by, margin, detail, secs in rows:
        cell = detail.replace("|", "/")
        lines.append(f"| {m.name} | {m.file} | {', '.join(ran)} | {result} | "
                     f"{', '.join(by) or '-'} | {margin or '-'} | {cell or '-'} | {secs:.0f} |")
    table = "\n".join(lines)
    print("\n" + table)
    if args.output:
        with open(args.output, "w") as f:
            f.write(table + "\n")
    if own and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"\nmutants: scratch copy and logs kept in {work}")
    return status


if __name__ == "__main__":
    sys.exit(main())
