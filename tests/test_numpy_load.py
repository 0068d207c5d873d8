"""Every kind of table aimdyn writes loads in one line (issue 16):

    numpy.genfromtxt(f, comments='#', names=True, delimiter='\\t')
    numpy.loadtxt(f, comments='#', delimiter='\\t', skiprows=1)
    pandas.read_csv(f, sep='\\t', comment='#')

with the names of its column line, unchanged: the column line is the
first line of the file, the '#' metadata lines follow it, and every column
name is an identifier [A-Za-z_][A-Za-z0-9_]* (numpy and pandas keep such a
name as it is; numpy would mangle m(SST)), distinct in its file. The kinds:
ode (direct, tied and untied moments), the sgd summary and -seeds files,
a kept per-seed file of sgd and of recovery, the agreement table of
compare, the three recovery tables, the sweep table and its point files,
the scaling table and the SGD summary that validate/campaigns/fold_mirror.sh
folds. aimdyn's own readers take the new layout and the old one (agreement
and plot on a file rewritten with its metadata first and m(w) names give
the same agreement table and a figure).

Usage: python3 test_numpy_load.py AIMDYN SOURCE_ROOT (python3-numpy and
python3-pandas from Debian; scripts/setup.sh installs them).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy
import pandas

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# the columns of text cells, per file kind (everything else is a number)
TEXT_COLUMNS = {"quantity", "value", "observable", "status", "verdict", "message"}

failures = []


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + (": " + detail if detail and not ok else ""))
    if not ok:
        failures.append(what)


def run(aimdyn, *args, expect=0, cwd=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([aimdyn, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode != expect:
        sys.exit("aimdyn %s: exit %d (expected %d)\n%s" % (" ".join(args), p.returncode, expect,
                                                          p.stderr[-2000:]))
    return p


def split_file(path):
    """The column names, the '#' lines and the rows (as text) of a file."""
    with open(path) as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", path + ": no final line break"
    lines = lines[:-1]
    meta = [line for line in lines if line.startswith("#")]
    rest = [line for line in lines if not line.startswith("#")]
    return lines[0], rest[0].split("\t") if rest else [], meta, [r.split("\t") for r in rest[1:]]


def check_file(path):
    name = os.path.relpath(path, WORK)
    first, names, meta, rows = split_file(path)
    check(name + ": the column line is line 1", not first.startswith("#") and first.split("\t") == names,
          repr(first[:80]))
    check(name + ": '#' metadata with the version", any(m.startswith("# aimdyn ") for m in meta))
    bad = [n for n in names if not IDENTIFIER.match(n)]
    check(name + ": column names are identifiers", not bad, " ".join(bad[:5]))
    check(name + ": column names distinct", len(set(names)) == len(names))
    text = [i for i, n in enumerate(names) if n in TEXT_COLUMNS]

    a = numpy.genfromtxt(path, comments="#", names=True, delimiter="\t", dtype=None,
                         encoding="utf-8")
    a = numpy.atleast_1d(a)
    check(name + ": genfromtxt(names=True) keeps the names", list(a.dtype.names) == names,
          "%s vs %s" % (list(a.dtype.names)[:6], names[:6]))
    check(name + ": genfromtxt reads every row", len(a) == len(rows), "%d vs %d" % (len(a), len(rows)))
    for i, n in enumerate(names):
        if i in text or not rows:
            continue
        want = numpy.array([float(r[i]) for r in rows])
        got = numpy.asarray(a[n], dtype=float)
        if not numpy.array_equal(got, want, equal_nan=True):
            check(name + ": genfromtxt column " + n, False, "%s vs %s" % (got[:3], want[:3]))
            break

    if text:
        numeric = [i for i in range(len(names)) if i not in text]
        b = numpy.loadtxt(path, comments="#", delimiter="\t", skiprows=1, usecols=numeric, ndmin=2)
        s = numpy.loadtxt(path, comments="#", delimiter="\t", skiprows=1, dtype=str, ndmin=2)
        check(name + ": loadtxt(skiprows=1) reads the text columns as text",
              s.shape == (len(rows), len(names)) and
              all(list(s[k, text]) == [rows[k][i] for i in text] for k in range(len(rows))))
    else:
        numeric = list(range(len(names)))
        b = numpy.loadtxt(path, comments="#", delimiter="\t", skiprows=1, ndmin=2)
    want = numpy.array([[float(r[i]) for i in numeric] for r in rows]).reshape(len(rows), len(numeric))
    check(name + ": loadtxt(skiprows=1) reads the numbers",
          b.shape == want.shape and numpy.array_equal(b, want, equal_nan=True), str(b.shape))

    d = pandas.read_csv(path, sep="\t", comment="#")
    check(name + ": pandas.read_csv keeps the names and rows",
          list(d.columns) == names and len(d) == len(rows))
    return names


def old_layout(path, out):
    """path rewritten as an earlier aimdyn wrote it: '#' lines first, m(w)."""
    first, names, meta, rows = split_file(path)
    old = [re.sub(r"^m_([A-Za-z]+)", r"m(\1)", n) for n in names]
    with open(out, "w") as f:
        f.write("".join(m + "\n" for m in meta) + "\t".join(old) + "\n" +
                "".join("\t".join(r) + "\n" for r in rows))


def main():
    global WORK
    WORK = tempfile.mkdtemp(prefix="aimdyn-numpy-")
    try:
        return check_all(os.path.abspath(sys.argv[1]), sys.argv[2])
    finally:
        subprocess.run(["rm", "-rf", WORK], check=True)


def check_all(aimdyn, root):
    short = ["--set", "training.points=6"]
    ex = lambda n: os.path.join(root, "examples", n)
    # ode, sgd (summary, seeds), agreement: compare of the direct default,
    # a tied and an untied student (their moments m_w)
    run(aimdyn, "compare", "--out", WORK + "/direct", "--d", "24", "--seeds", "2", *short,
        "--set", "training.horizon=0.05")
    run(aimdyn, "compare", ex("tied_he2.ini"), "--name", "aimdyn", "--out", WORK + "/tied", "--d", "32", "--seeds",
        "2", "--order", "2", *short, "--set", "training.horizon=0.01", "--set",
        "hierarchy.tol=0")
    run(aimdyn, "compare", ex("untied_fig3.ini"), "--name", "aimdyn", "--out", WORK + "/untied", "--d", "32",
        "--seeds", "2", "--order", "2", *short, "--set", "training.horizon=0.01", "--set",
        "hierarchy.tol=0")
    # kept per-seed files: the result file's place taken by a directory,
    # the run fails after its seeds (kept)
    os.makedirs(WORK + "/kept/aimdyn-sgd-d32.tsv")
    os.makedirs(WORK + "/kept/aimdyn-recovery.tsv")
    run(aimdyn, "sgd", ex("tied_he2.ini"), "--name", "aimdyn", "--out", WORK + "/kept", "--d", "32", "--seeds", "2",
        "--set", "hierarchy.order=2", *short, "--set", "training.horizon=0.01", expect=2)
    run(aimdyn, "recovery", "--out", WORK + "/kept", "--d", "32", "--seeds", "2", "--finite",
        "always", *short, "--set", "training.horizon=0.05", expect=2)
    # recovery, sweep, scaling
    run(aimdyn, "recovery", "--out", WORK + "/rec", "--d", "24", "--d", "32", "--seeds", "2",
        "--finite", "always", *short, "--set", "training.horizon=0.05")
    run(aimdyn, "sweep", "--out", WORK + "/sweep", "--vary", "training.eta=0.05,0.1", *short,
        "--set", "training.horizon=0.05")
    run(aimdyn, "sgd", "--out", WORK + "/scal", "--d", "32", "--seeds", "3", *short,
        "--set", "training.horizon=0.05")
    run(aimdyn, "sgd", "--out", WORK + "/scal", "--d", "24", "--seeds", "3", *short,
        "--set", "training.horizon=0.05")
    run(aimdyn, "scaling", "--sgd", WORK + "/scal/aimdyn-sgd-d32-seeds.tsv", "--sgd",
        WORK + "/scal/aimdyn-sgd-d24-seeds.tsv", "--predict", WORK + "/rec/aimdyn-recovery.tsv",
        "--out", WORK + "/scal", expect=0)
    # a summary folded by the campaign script
    folded = WORK + "/untied/folded-sgd-d32.tsv"
    with open(folded, "w") as f:
        subprocess.run(["sh", os.path.join(root, "validate/campaigns/fold_mirror.sh"),
                        WORK + "/untied/aimdyn-sgd-d32-seeds.tsv"], stdout=f, check=True)

    files = sorted(glob.glob(WORK + "/**/*.tsv", recursive=True) +
                   glob.glob(WORK + "/**/.*/*.tsv", recursive=True))
    files = [f for f in files if os.path.isfile(f)]
    kinds = {
        "ode": "direct/aimdyn-ode.tsv", "sgd summary": "direct/aimdyn-sgd-d24.tsv",
        "sgd seeds": "direct/aimdyn-sgd-d24-seeds.tsv", "agreement": "direct/aimdyn-agreement.tsv",
        "tied ode": "tied/aimdyn-ode.tsv", "tied sgd": "tied/aimdyn-sgd-d32.tsv",
        "untied ode": "untied/aimdyn-ode.tsv", "untied sgd seeds": "untied/aimdyn-sgd-d32-seeds.tsv",
        "kept sgd seed": "kept/.aimdyn-sgd-d32.seeds/seed-1.tsv",
        "kept recovery seed": "kept/.aimdyn-recovery-d32.seeds/seed-1.tsv",
        "recovery": "rec/aimdyn-recovery.tsv", "recovery start": "rec/aimdyn-recovery-start.tsv",
        "recovery seeds": "rec/aimdyn-recovery-seeds.tsv", "sweep": "sweep/aimdyn-sweep.tsv",
        "sweep point": "sweep/aimdyn-sweep.d/point-0001.tsv", "scaling": "scal/aimdyn-scaling.tsv",
        "folded summary": "untied/folded-sgd-d32.tsv",
    }
    for kind, rel in kinds.items():
        check("a file of kind " + kind + " (" + rel + ")", os.path.join(WORK, rel) in files)
    names = {}
    for f in files:
        rel = os.path.relpath(f, WORK)
        try:
            names[rel] = check_file(f)
        except ValueError as e:  # what numpy and pandas raise on a file they cannot read
            check(rel + ": loads", False, str(e).strip().split("\n")[0])
    tied = names.get("tied/aimdyn-ode.tsv", [])
    check("tied moments named m_S, m_SS, m_ST", all(n in tied for n in ("m_S", "m_SS", "m_ST")))
    check("untied moments keep their case (m_K, m_k distinct)",
          any(n.startswith("m_K") for n in names.get("untied/aimdyn-ode.tsv", [])) and
          "m_K_mean" in names.get("untied/aimdyn-sgd-d32.tsv", []))

    # aimdyn's readers: the new layout and the old one agree
    for case in ("tied", "untied"):
        d = os.path.join(WORK, case)
        new = run(aimdyn, "agreement", "--sgd", d + "/aimdyn-sgd-d32.tsv", "--ode",
                  d + "/aimdyn-ode.tsv").stdout
        old_layout(d + "/aimdyn-sgd-d32.tsv", d + "/old-sgd.tsv")
        old_layout(d + "/aimdyn-ode.tsv", d + "/old-ode.tsv")
        old = run(aimdyn, "agreement", "--sgd", d + "/old-sgd.tsv", "--ode",
                  d + "/old-ode.tsv").stdout
        strip = lambda t: [line.split()[1:] for line in t.splitlines()]  # the file names
        check(case + ": agreement reads the moments (m_w rows)", " m_S" in new or " m_A" in new, new[:200])
        check(case + ": agreement of the old layout equals the new", strip(old) == strip(new))
        for stem, sgd, ode in (("new", "aimdyn-sgd-d32.tsv", "aimdyn-ode.tsv"),
                               ("old", "old-sgd.tsv", "old-ode.tsv")):
            run(aimdyn, "plot", "--ode", d + "/" + ode, "--sgd", d + "/" + sgd, "--figure",
                d + "/fig-" + stem)
            check(case + ": plot draws the " + stem + " layout",
                  os.path.getsize(d + "/fig-" + stem + ".png") > 1000)

    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
