#!/bin/sh
# bench_elementwise.sh: the expectation rules of the non-polynomial
# elementwise maps (relu, tanh, erf) on `aimdyn ode`, before and after
# their closed forms (theory/direct.md sec. 3.6): for direct and tied
# students at configurations no example names (T = 2 with correlated
# tokens, T = 4; centred and raw), the run with ode.rule = auto against
# the rule auto took before (generic, the quasi-random rule, for relu;
# hermite, the Gauss-Hermite rules, for erf and tanh), interleaved, one
# BLAS thread: CPU seconds, CVODE steps, and the gaps of the overlap and
# the risk at the end. Tied runs stop where their hierarchy's truncation
# estimate passes hierarchy.tol (hierarchy.beyond = stop), so that the
# engine is timed, not the matrix process.
# Usage: sh validate/bench/bench_elementwise.sh [AIMDYN] [REPEATS]
set -eu
exe=${1:-build/aimdyn}
repeats=${2:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1

D1="--set model.tokens=2 --set model.covariance=equicorrelated:0.3 --set student.scale=0.5
    --set teacher.scale=1.5 --set training.eta=0.05 --set training.horizon=0.3 --set sgd.d=300"
D2="--set model.tokens=4 --set student.scale=0.2 --set teacher.symmetric=true
    --set training.eta=0.03 --set training.horizon=0.3 --set sgd.d=300"
T1="--set model.decomposition=tied --set teacher.decomposition=tied --set model.tokens=2
    --set model.covariance=equicorrelated:-0.2 --set student.rho=0.5 --set student.scale=0.5
    --set teacher.rho=0.25 --set teacher.scale=1 --set training.eta=0.02
    --set training.horizon=0.2 --set hierarchy.beyond=stop"
T2="--set model.decomposition=tied --set teacher.decomposition=tied --set model.tokens=4
    --set student.rho=1 --set student.scale=0.3 --set teacher.rho=0.5 --set teacher.scale=0.6
    --set training.eta=0.02 --set training.horizon=0.1 --set hierarchy.beyond=stop"

# one run: CPU seconds, CVODE steps (summed over the integrations its
# JSON sidecar records), tau, overlap and risk of the last row
run() {
    name=$1
    shift
    /usr/bin/time -f %U -o "$work/$name.time" "$exe" ode --quiet "$@" --out "$work" \
        --name "$name" >/dev/null 2>"$work/$name.err" || true
    python3 - "$work/$name-ode" "$(tail -n 1 "$work/$name.time")" <<'PY'
import json, sys
base, cpu = sys.argv[1], sys.argv[2]
steps = sum(c["steps"] for c in json.load(open(base + ".json"))["cvode"])
rows = [line.split("\t") for line in open(base + ".tsv") if not line.startswith("#")]
col = {k.strip(): i for i, k in enumerate(rows[0])}
last = rows[-1]
print(cpu, steps, *(last[col[k]].strip() for k in ("tau", "overlap", "risk")))
PY
}

printf '%-18s %-8s %9s %9s %7s %7s %8s %11s %10s\n' case old_rule cpu_old cpu_new steps_o \
    steps_n tau_end d_overlap d_risk_rel
for cfg in D1 D2 T1 T2; do
    eval "opts=\$$cfg"
    for act in relu tanh erf; do
        for c in centred raw; do
            case $cfg$c in T*raw) continue ;; esac
            extra=""
            [ "$c" = raw ] && extra="--set teacher.mean=0.5"
            old=hermite
            [ "$act" = relu ] && old=generic
            for r in $(seq "$repeats"); do
                # shellcheck disable=SC2086 # lists of options
                set -- $opts --set model.activation=$act --set model.centring=$c $extra
                o=$(run "o$r" "$@" --set ode.rule=$old)
                n=$(run "n$r" "$@" --set ode.rule=auto)
                echo "$o $n"
            done | awk -v name="${cfg}_${act}_$c" -v old=$old '
                { to += $1; tn += $6; so = $2; sn = $7; tau = $8; dov = $9 - $4;
                  drisk = ($10 - $5) / $5; k++ }
                END { printf "%-18s %-8s %9.2f %9.2f %7d %7d %8.4g %11.2e %10.2e\n",
                      name, old, to / k, tn / k, so, sn, tau, dov, drisk }'
        done
    done
done
