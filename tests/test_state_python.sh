#!/bin/sh
# The Python module (build/aimdyn.py over the built library) starts the
# ODE from a saved state as `aimdyn ode` does: the same numbers to the
# ODE file's 10 digits. Apart from tests/test_state.sh because a library
# built with -fsanitize cannot be loaded by python3 (tests/meson.build).
. "$(dirname "$0")/checks.sh"
begin_test "$@"

printf '[model]\ndecomposition = tied\n[teacher]\ndecomposition = tied\n' >"$work/tied.ini"
T="--d 40 --set training.eta=0.005 --set training.horizon=0.002 --set training.points=3 --set hierarchy.order=2"
expect_exit "tied sgd --save-state" 0 "$exe" sgd "$work/tied.ini" $T --seeds 1 --jobs 1 \
    --save-state 0.001 --out "$work/t"
expect_exit "tied ode from the state" 0 "$exe" ode "$work/tied.ini" $T \
    --start "$work/t/aimdyn-sgd-d40-seed1-tau0.001.state" --out "$work/t/g"
py=$(numpy_python)
check "a python3 with numpy (Debian: python3-numpy; sh scripts/setup.sh installs it)" $?
AIMDYN_LIBRARY="$(dirname "$exe")/libaimdyn.so.0" PYTHONPATH="$(dirname "$exe")" "${py:-python3}" -c '
import sys, aimdyn
settings = {"model.decomposition": "tied", "teacher.decomposition": "tied",
            "training.eta": 0.005, "training.horizon": 0.002, "training.points": 3,
            "hierarchy.order": 2, "training.start_file": sys.argv[1]}
run = aimdyn.ode(settings, d=40)
rows = [l.split("\t") for l in open(sys.argv[2]) if not l.startswith("#")]
cols = rows[0]
for name in ("overlap", "omega_ss", "omega_st", "risk"):
    for i, row in enumerate(rows[1:]):
        want = float(row[cols.index(name)])
        assert abs(run[name][i] - want) <= 1e-9 * abs(want), (name, i, run[name][i], want)
' "$work/t/aimdyn-sgd-d40-seed1-tau0.001.state" "$work/t/g/aimdyn-ode.tsv"
check "python aimdyn.ode from the state = aimdyn ode" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
