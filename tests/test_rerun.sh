#!/bin/sh
# The JSON sidecar beside every result table (src/results/sidecar.c) and
# `aimdyn rerun` (src/cli/cmd_rerun.c): the sidecar is valid JSON with its
# keys, CVODE's counters of an ODE run and the configuration of the
# table's '# config' lines, typed; it is renamed into place with its table
# (a failure leaves neither); rerun makes the ode, sgd and compare files
# again bit for bit (cmp), without the configuration file the first run
# read, and refuses a file of another version.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
cd "$work" || exit 1

# sidecar_ok NAME TABLE [cvode]: the sidecar of TABLE is JSON with every
# key, its configuration is the table's '# config' lines (typed values
# equal), and with "cvode" it has an integration with steps > 0.
sidecar_ok() {
    python3 - "$2" "${2%.tsv}.json" "${3:-}" >"$work/py" 2>&1 <<'EOF'
import json, os, sys
table, side, want_cvode = sys.argv[1], sys.argv[2], sys.argv[3] == "cvode"
with open(side) as f:
    j = json.load(f)
for key in ("format", "aimdyn_version", "command", "command_line", "command_line_exact", "cwd",
            "libraries", "table", "outputs", "cvode", "configuration", "seeds"):
    assert key in j, "no key " + key
assert j["format"] == "aimdyn sidecar 1"
assert j["cwd"] == os.getcwd(), (j["cwd"], os.getcwd())
assert j["table"] == table.split("/")[-1] and table.split("/")[-1] in j["outputs"]
for lib in ("sundials", "gsl", "cblas"):
    assert j["libraries"][lib], "no version of " + lib
assert isinstance(j["command_line"], list) and j["command_line"][1] in ("ode", "sgd", "compare",
                                                                        "recovery", "sweep")
cfg = {}
version = None
for line in open(table):
    if line.startswith("# aimdyn ") and version is None:
        version = line[len("# aimdyn "):].rstrip("\n")
    if line.startswith("# config "):
        key, _, value = line[len("# config "):].rstrip("\n").partition(" = ")
        cfg[key] = value
assert version == j["aimdyn_version"], (version, j["aimdyn_version"])
flat = {s + "." + k: v for s, keys in j["configuration"].items() for k, v in keys.items()}
assert set(flat) == set(cfg), set(flat) ^ set(cfg)
for key, text in cfg.items():
    v = flat[key]
    if isinstance(v, bool):
        ok = text == ("true" if v else "false")
    elif isinstance(v, (int, float)):
        ok = float(text) == v and (isinstance(v, float) or text == str(v))
    else:
        ok = text == v
    assert ok, "%s: table %r, sidecar %r" % (key, text, v)
assert any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat.values())
if want_cvode:
    assert j["cvode"], "no CVODE integration"
    for run in j["cvode"]:
        assert run["steps"] > 0 and run["rhs_evals"] > 0, run
        for k in ("linear_setups", "jacobian_evals", "error_test_failures",
                  "nonlinear_failures"):
            assert isinstance(run[k], int) and run[k] >= 0, (k, run)
EOF
    r=$?
    [ $r -ne 0 ] && echo "  $1: $(cat "$work/py")"
    check "$1" $r
}

# same NAME A B: the same bytes
same() {
    cmp "$2" "$3" >"$work/cmp" 2>&1
    r=$?
    [ $r -ne 0 ] && echo "  $1: $(cat "$work/cmp")"
    check "$1" $r
}

# --- ode, its configuration from a file that is gone when it is rerun ---
printf '[training]\nhorizon = 0.05\npoints = 6\n' >"$work/run.ini"
expect_exit "ode" 0 "$exe" ode "$work/run.ini" --out o1 --set output.name=a --set training.eta=0.2
sidecar_ok "ode sidecar: JSON, keys, configuration, CVODE counters" o1/a-ode.tsv cvode
python3 -c 'import json, sys; j = json.load(open(sys.argv[1]))
assert j["command_line"][2:] == sys.argv[2:], j["command_line"]' o1/a-ode.json \
    "$work/run.ini" --out o1 --set output.name=a --set training.eta=0.2
check "ode sidecar: the exact command line" $?
mkdir keep
cp o1/a-ode.tsv o1/a-ode.json keep/
rm "$work/run.ini"
expect_exit "rerun ode (from the table)" 0 "$exe" rerun o1/a-ode.tsv
same "rerun ode: the table bit for bit" keep/a-ode.tsv o1/a-ode.tsv
same "rerun ode: the sidecar bit for bit" keep/a-ode.json o1/a-ode.json
expect_exit "rerun ode --out (from the sidecar)" 0 "$exe" rerun --out o2 o1/a-ode.json
grep -v '^# config output.dir = ' keep/a-ode.tsv >"$work/t1"
grep -v '^# config output.dir = ' o2/a-ode.tsv >"$work/t2"
same "rerun ode --out: the table but for its output.dir line" "$work/t1" "$work/t2"
contains "rerun ode --out: output.dir names the folder" o2/a-ode.tsv "^# config output.dir = o2$"

# --- sgd at small d: the summary and the seeds' table ---
expect_exit "sgd" 0 "$exe" sgd --out s1 --d 16 --seeds 2 --set output.name=b \
    --set training.eta=0.02 --set training.horizon=0.01 --set training.points=3
sidecar_ok "sgd summary sidecar" s1/b-sgd-d16.tsv
sidecar_ok "sgd seeds sidecar" s1/b-sgd-d16-seeds.tsv
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["seeds"] == [1, 2]' \
    s1/b-sgd-d16.json 2>/dev/null
check "sgd sidecar: the seeds" $?
[ -z "$(find s1 -name '*.seeds')" ] && [ "$(ls s1 | wc -l)" -eq 4 ]
check "sgd: four files, no seed folder or seed sidecar left ($(ls -A s1 | tr '\n' ' '))" $?
mkdir keep_s
cp s1/* keep_s/
expect_exit "rerun sgd" 0 "$exe" rerun s1/b-sgd-d16-seeds.tsv
for f in keep_s/*; do
    same "rerun sgd: $(basename "$f") bit for bit" "$f" "s1/$(basename "$f")"
done

# --- compare: ODE, SGD and agreement tables ---
expect_exit "compare" 0 "$exe" compare --out c1 --d 16 --seeds 2 --set output.name=c \
    --set training.eta=0.02 --set training.horizon=0.01 --set training.points=3
sidecar_ok "compare: ODE sidecar" c1/c-ode.tsv cvode
sidecar_ok "compare: agreement sidecar" c1/c-agreement.tsv
# the agreement records the configuration that ran: --d 16, not the default sgd.d
contains "compare: the agreement records the d that ran" c1/c-agreement.tsv "^# config sgd.d = 16$"
python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["outputs"]
assert {"c-ode.tsv", "c-sgd-d16.tsv", "c-sgd-d16-seeds.tsv", "c-agreement.tsv"} <= set(o), o
assert not [f for f in o if f.endswith(".json")], o' c1/c-agreement.json
check "compare: the sidecar lists the files of the run" $?
mkdir keep_c
cp c1/*.tsv c1/*.json keep_c/
expect_exit "rerun compare (from its agreement table)" 0 "$exe" rerun c1/c-agreement.json
for f in keep_c/*; do
    same "rerun compare: $(basename "$f") bit for bit" "$f" "c1/$(basename "$f")"
done

# --- recovery and sweep: every integration a file reports, its counters
# carried from the worker that integrated (a seed's or a point's file) ---
# cvode_of FILE: the sidecar's integrations, one "NAME STEPS RHS_EVALS" a line
cvode_of() {
    python3 -c 'import json, sys
for c in json.load(open(sys.argv[1]))["cvode"]:
    print(c["integration"], c["steps"], c["rhs_evals"], c["nonlinear_iterations"])' "$1"
}
short="--set training.eta=0.2 --set training.horizon=0.05 --set training.points=6"
expect_exit "ode of the recovery's limit and the sweep's point" 0 "$exe" ode --out l1 --d 16 $short
cvode_of l1/aimdyn-ode.json | sed 's/^trajectory //' >want
expect_exit "recovery with finite-d seeds on 2 workers" 0 "$exe" recovery --out r1 --d 16 \
    --seeds 2 --finite always --jobs 2 $short
sidecar_ok "recovery sidecar" r1/aimdyn-recovery.tsv cvode
cvode_of r1/aimdyn-recovery.json | cut -d: -f1 | tr '\n' '|' >got
[ "$(cat got)" = "limit ODE|d = 16, seed 1|d = 16, seed 2|" ]
check "recovery table: the limit ODE's and each seed's integration ($(cat got))" $?
[ "$(cvode_of r1/aimdyn-recovery.json | sed -n 's/^limit ODE: trajectory //p')" = "$(cat want)" ]
check "recovery: the limit ODE's counters are those of the same ode run" $?
[ "$(cvode_of r1/aimdyn-recovery-start.json | cut -d: -f1)" = "limit ODE" ] &&
    [ "$(cvode_of r1/aimdyn-recovery-seeds.json | cut -d: -f1 | tr '\n' '|')" = "d = 16, seed 1|d = 16, seed 2|" ]
check "recovery: the start table reports the limit ODE, the seeds table the seeds" $?
mkdir keep_r
cp r1/* keep_r/
expect_exit "rerun recovery" 0 "$exe" rerun r1/aimdyn-recovery.tsv
for f in keep_r/*; do
    same "rerun recovery: $(basename "$f") bit for bit" "$f" "r1/$(basename "$f")"
done
expect_exit "sweep on 2 workers" 0 "$exe" sweep --out w1 --jobs 2 $short \
    --vary training.eta=0.3,0.2
sidecar_ok "sweep point sidecar" w1/aimdyn-sweep.d/point-0002.tsv cvode
[ "$(cvode_of w1/aimdyn-sweep.json | cut -d: -f1 | tr '\n' '|')" = "point 1 of 2|point 2 of 2|" ] &&
    [ "$(cvode_of w1/aimdyn-sweep.json | sed -n 's/^point 2 of 2: trajectory //p')" = "$(cat want)" ]
check "sweep table: each point's integration, point 2's counters those of the same ode run" $?
sed 's/^# cvode: trajectory: steps [0-9]*,/# cvode: trajectory: steps -1,/' \
    w1/aimdyn-sweep.d/point-0001.tsv >bad.tsv
mv bad.tsv w1/aimdyn-sweep.d/point-0001.tsv
expect_exit "sweep refuses a point file with malformed counters" 1 "$exe" sweep --out w1 \
    --jobs 2 $short --vary training.eta=0.3,0.2
contains "the refusal names the line and what is allowed" "$work/err" \
    "point-0001.tsv: '# cvode: trajectory: steps -1, .*': not CVODE's counters; allowed:"

# --- refusals ---
sed 's/"aimdyn_version": "[^"]*"/"aimdyn_version": "0.0.0-other"/' keep/a-ode.json >other.json
expect_exit "rerun refuses another version" 1 "$exe" rerun other.json
contains "the refusal names the version to use" "$work/err" \
    "written by aimdyn 0.0.0-other, this is aimdyn .*; rerun it with aimdyn 0.0.0-other"
echo '{"format": "something else"}' >alien.json
expect_exit "rerun refuses a file that is no sidecar" 1 "$exe" rerun alien.json
contains "the refusal says what is allowed" "$work/err" "not an aimdyn sidecar"
expect_exit "rerun refuses a missing file" 1 "$exe" rerun nothing/here.tsv
expect_exit "rerun without FILE" 1 "$exe" rerun

# --- a table and its sidecar are replaced together ---
mkdir -p f1/d-ode.json
expect_exit "a sidecar that cannot be written fails the run" 2 "$exe" ode --out f1 \
    --set output.name=d --set training.horizon=0.05 --set training.points=6
[ ! -e f1/d-ode.tsv ] && [ -z "$(find f1 -name '.*')" ]
check "no table without its sidecar, nothing temporary left" $?

# a compare's files are one set: one sidecar that cannot be written, and
# none of its tables is written either
mkdir -p f2/e-agreement.json
expect_exit "a compare whose sidecar cannot be written fails" 2 "$exe" compare --out f2 --d 16 \
    --seeds 2 --set output.name=e --set training.eta=0.02 --set training.horizon=0.01 \
    --set training.points=3
# (the seeds' folder stays, for a rerun to continue from)
[ -z "$(find f2 -maxdepth 1 -name '*.tsv' -o -maxdepth 1 -name '*.png' -o -name '.*.??????' \
    -o -name '.*.journal' -o -name '.*.lock')" ]
check "no compare file without its sidecar, nothing temporary left ($(ls -A f2 | tr '\n' ' '))" $?

echo "test_rerun: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
