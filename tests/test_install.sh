#!/bin/sh
# The installed library as a user meets it (README.md, "Use as a library"):
# `meson install --destdir` into a scratch root, then
# - every file the install promises is there: aimdyn, libaimdyn (shared,
#   with its soname, and static), the headers under include/aimdyn/,
#   aimdyn.pc, the man page, the examples, the Python module;
# - the installed aimdyn runs on the installed libaimdyn;
# - libaimdyn exports aim_ symbols only;
# - examples/c/predict.c compiles with `pkg-config --cflags --libs aimdyn`
#   against the installed tree alone, and its table equals the installed
#   `aimdyn ode` file's rows;
# - the Python module loads the installed library: examples/python/predict.py
#   prints the C example's table digit for digit, and aimdyn.sgd gives the
#   per-seed overlaps that `aimdyn sgd` writes.
# Usage: test_install.sh BUILD_DIR SOURCE_ROOT
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

meson install -C "$build" --no-rebuild --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "meson install --destdir"; }
root=$tmp/root
pc=$(find "$root" -name aimdyn.pc)
[ -n "$pc" ] || fail "no aimdyn.pc installed"
lib=$(dirname "$(dirname "$pc")") # the library folder, inside the root
prefix=$(sed -n 's/^prefix=//p' "$pc")
top=$root$prefix
# the static library when the build makes one (-Ddefault_library=both,
# the project's default)
static=
[ "${3:-both}" = both ] && static=$lib/libaimdyn.a
for f in "$top/bin/aimdyn" "$lib/libaimdyn.so" "$lib/libaimdyn.so.0" $static \
    "$top/include/aimdyn/aimdyn.h" "$top/share/man/man1/aimdyn.1" \
    "$top/share/doc/aimdyn/examples/c/predict.c" \
    "$top/share/doc/aimdyn/examples/python/predict.py" \
    "$top/share/doc/aimdyn/examples/default.ini"; do
    [ -e "$f" ] || fail "not installed: ${f#"$root"}"
done
module=$(find "$root" -name aimdyn.py)
[ -n "$module" ] || fail "the Python module aimdyn.py is not installed"
# every header the umbrella reaches is installed beside it
for h in $(sed -n 's/^#include "\(.*\)"/\1/p' "$top"/include/aimdyn/*.h | sort -u); do
    [ -e "$top/include/aimdyn/$h" ] || fail "include/aimdyn/ lacks $h, which a public header includes"
done
# the man page renders without a warning
if command -v groff >/dev/null; then
    warnings=$(groff -man -Tutf8 -ww -z "$top/share/man/man1/aimdyn.1" 2>&1)
    [ -z "$warnings" ] || fail "aimdyn.1: $warnings"
fi

export LD_LIBRARY_PATH="$lib"
aimdyn="$top/bin/aimdyn"
# the man page has the version filled in and describes every command of
# `aimdyn --help`
man=$top/share/man/man1/aimdyn.1
! grep -q '@[A-Z]*@' "$man" || fail "aimdyn.1 keeps a placeholder: $(grep '@[A-Z]*@' "$man")"
commands=$("$aimdyn" --help | sed -n '/^commands:/,/^$/p' | awk '/^  [a-z]/ {print $1}')
[ -n "$commands" ] || fail "no commands found in aimdyn --help"
for c in $commands; do
    grep -q "^\.B $c\$" "$man" || fail "aimdyn.1 does not describe the command $c of aimdyn --help"
done
ldd "$aimdyn" | grep -q "libaimdyn.so.0 => $lib/" ||
    fail "the installed aimdyn does not run on the installed libaimdyn: $(ldd "$aimdyn")"
others=$(nm -D --defined-only "$lib/libaimdyn.so.0" | awk '{print $3}' | grep -v '^aim_' || true)
[ -z "$others" ] || fail "libaimdyn exports names without the aim_ prefix: $others"

# The C example against the installed tree only (pkg-config's prefix moved
# to the scratch root).
flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --define-variable=prefix="$top" \
    --cflags --libs aimdyn) || fail "pkg-config --cflags --libs aimdyn"
case "$flags" in *"$root"*) ;; *) fail "pkg-config flags do not point into the install: $flags" ;; esac
# shellcheck disable=SC2086 # the flags are words
cc -std=c17 -Wall -Wextra -Werror -o "$tmp/predict" "$top/share/doc/aimdyn/examples/c/predict.c" \
    $flags || fail "the C example does not build against the installed library"
set -- training.horizon=0.5 training.points=6
"$tmp/predict" "$@" >"$tmp/c.txt" || fail "the C example failed"
grep -q '^# tau_wr ' "$tmp/c.txt" || fail "the C example printed no weak-recovery time: $(cat "$tmp/c.txt")"
[ "$(grep -vc '^#' "$tmp/c.txt")" -eq 7 ] || fail "the C example printed $(grep -vc '^#' "$tmp/c.txt") lines, not the column line and 6 rows"
sets=""
for a in "$@"; do sets="$sets --set $a"; done
# shellcheck disable=SC2086
"$aimdyn" ode $sets --out "$tmp/out" --name lib >/dev/null || fail "the installed aimdyn ode failed"

# Python: the interpreter meson found, else Debian's (scripts/setup.sh
# installs python3-numpy for it).
. "$(dirname "$0")/checks.sh"
py=$(numpy_python) || fail "no python3 with numpy (Debian: python3-numpy; sh scripts/setup.sh installs it)"
export PYTHONPATH="$(dirname "$module")"
"$py" "$top/share/doc/aimdyn/examples/python/predict.py" "$@" >"$tmp/py.txt" ||
    fail "the Python example failed"
cmp "$tmp/c.txt" "$tmp/py.txt" || fail "the Python example's table differs from the C example's: $(diff "$tmp/c.txt" "$tmp/py.txt" | head)"
# a run that stops (the tied hierarchy leaves the valid moments): the
# report's stop message comes through too
stop="model.decomposition=tied teacher.decomposition=tied training.horizon=0.5 training.points=6"
# shellcheck disable=SC2086
"$tmp/predict" $stop >"$tmp/c-stop.txt" || fail "the C example failed on a stopping run"
grep -q '^# stopped: ' "$tmp/c-stop.txt" || fail "the tied run did not stop: $(cat "$tmp/c-stop.txt")"
# shellcheck disable=SC2086
"$py" "$top/share/doc/aimdyn/examples/python/predict.py" $stop >"$tmp/py-stop.txt" ||
    fail "the Python example failed on a stopping run"
cmp "$tmp/c-stop.txt" "$tmp/py-stop.txt" || fail "a stopped run: $(diff "$tmp/c-stop.txt" "$tmp/py-stop.txt" | head)"

# The C table against the CLI's ODE file, and the Python SGD seeds
# against the CLI's seed files, value for value.
"$aimdyn" sgd $sets --set sgd.d=40 --set sgd.seeds=2 --out "$tmp/out" --name lib >/dev/null ||
    fail "the installed aimdyn sgd failed"
"$py" - "$tmp" "$@" <<'PY' || fail "the library's results differ from the installed aimdyn's"
import glob, math, os, sys
import numpy as np
import aimdyn

tmp, sets = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])

def table(path):
    """the column line (the first non-comment line) and the rows"""
    header, rows = None, []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        if header is None:
            header = line.split()
        else:
            rows.append([float(v) for v in line.split("\t")])
    return header, np.array(rows)

def same(a, b):
    """equal to the 10 significant digits the result files print (%.10g:
    a relative rounding error of at most 5e-10)"""
    return a.shape == b.shape and all(
        abs(x - y) <= 5e-10 * max(abs(x), abs(y)) or (math.isnan(x) and math.isnan(y))
        for x, y in zip(a.ravel(), b.ravel()))

c_head, c_rows = table(os.path.join(tmp, "c.txt"))
f_head, f_rows = table(os.path.join(tmp, "out", "lib-ode.tsv"))
for k, name in enumerate(c_head):
    if name not in f_head:
        sys.exit(f"the ODE file has no column {name}: {f_head}")
    if not same(c_rows[:, k], f_rows[:, f_head.index(name)]):
        sys.exit(f"{name}: the C example {c_rows[:, k]} against aimdyn ode {f_rows[:, f_head.index(name)]}")

seeds = aimdyn.sgd(dict(sets, **{"sgd.d": 40, "sgd.seeds": 2}))
files = sorted(glob.glob(os.path.join(tmp, "out", "lib*seed*.tsv")))
if not files:
    sys.exit(f"no seed file among {os.listdir(os.path.join(tmp, 'out'))}")
s_head, s_rows = table(files[0])
if "seed" not in s_head:
    sys.exit(f"{files[0]}: no seed column in {s_head}")
for s in range(2):
    mine = s_rows[s_rows[:, s_head.index("seed")] == seeds.seed + s]
    if seeds.reached[s] != len(seeds.tau) or len(mine) != len(seeds.tau):
        sys.exit(f"seed {s}: {seeds.reached[s]} and {len(mine)} of {len(seeds.tau)} points reached")
    for name in aimdyn.observable_names:
        if not same(seeds[name][s], mine[:, s_head.index(name)]):
            sys.exit(f"seed {s} {name}: aimdyn.sgd {seeds[name][s]} against aimdyn sgd {mine[:, s_head.index(name)]}")
print("python: ode and sgd equal the installed aimdyn's")
PY
echo "install: bin, lib (so.0 and a), include/aimdyn, aimdyn.pc, aimdyn.1, examples, aimdyn.py; C and Python examples run on the installed library"
