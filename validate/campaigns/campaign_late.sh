#!/bin/sh
# The late phase (issue 13; results in validate/results/RESULTS_late.md): every case
# run to convergence, SGD at two dimensions (8 seeds, the risk on 10000
# held-out samples per seed), the matrix limit process (the M = infinity
# reference, theory/matrix.md) at D = 200 and 400 with 8 replicas, and the
# truncated hierarchies at every order (hierarchy.tol = 0, so that their
# whole trajectories are kept, each row with its truncation error estimate).
#   fig1    tied softmax T = 4 (the paper's Figure 1), tau <= 1, d = 400, 800
#   rank    tied He2, rho = 0.5 < rho* = 1, T = 3, tau <= 0.1, d = 200, 400
#   beta2   tied softmax beta = 2, T = 3, weight decay 0.3, tau <= 1, d = 200, 400
#   fig3    untied He1 and He1 + He2/sqrt 2 (Figure 3) to overlap 0.9,
#           tau <= 0.45, d = 200, 400
#   he3     untied He1/2 + He3, weight decay 0.1, tau <= 0.6, d = 200, 400
#   raw     untied raw centring, He2, teacher mean 1 (unlocked), tau <= 0.05,
#           and teacher mean 0.7, tau <= 0.2, d = 200, 400
# Resumable: a step whose result file exists is skipped. Usage:
#   sh validate/campaigns/campaign_late.sh [sgd|ode|report] [CASE ...]
# (default: sgd and ode of every case; report: agreement tables into
# $OUT/*.agreement.txt). AIMDYN (default build/aimdyn) and OUT (default
# validate/runs_late) can be set; one process at a time, BLAS on one thread.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${AIMDYN:-$root/build/aimdyn}
OUT=${OUT:-$root/validate/runs_late}
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
ex=$root/examples
what=${1:-all}
[ $# -gt 0 ] && shift
cases=${*:-fig1 rank beta2 fig3-he1 fig3-mix he3 raw-unlocked raw-07}

# the configuration of a case: its file and --set options
config() {
    case $1 in
    fig1) echo "$ex/tied_softmax_T4.ini --set training.horizon=1 --set training.points=51" ;;
    rank) echo "$ex/tied_he2_rank.ini" ;;
    beta2) echo "$ex/tied_softmax_T4.ini --set model.tokens=3 --set model.beta=2
        --set training.gamma=0.3 --set training.horizon=1 --set training.points=51" ;;
    fig3-he1) echo "$ex/untied_fig3.ini --set training.grid=linear --set training.horizon=0.45
        --set training.points=46" ;;
    fig3-mix) echo "$ex/untied_fig3.ini --set model.activation=hermite
        --set model.hermite=0,1,0.70710678118654752 --set training.grid=linear
        --set training.horizon=0.45 --set training.points=46" ;;
    he3) echo "$ex/untied_fig3.ini --set model.activation=hermite --set model.hermite=0,0.5,0,1
        --set training.gamma=0.1 --set training.grid=linear --set training.horizon=0.6
        --set training.points=31" ;;
    raw-unlocked) echo "$ex/untied_raw_mean.ini" ;;
    raw-07) echo "$ex/untied_raw_mean.ini --set teacher.mean=0.7 --set training.horizon=0.2" ;;
    *) echo "campaign_late: unknown case '$1'" >&2; exit 1 ;;
    esac
}
dims() { case $1 in fig1) echo "400 800" ;; *) echo "200 400" ;; esac; }
orders() { case $1 in fig1 | rank | beta2) echo "2 3 4 5 6 7 8" ;; *) echo "2 3 4 5 6" ;; esac; }

run() { # exit 3 (a stop) is a result, recorded in the file
    "$B" "$@" || [ $? -eq 3 ]
}

for c in $cases; do
    # shellcheck disable=SC2046
    set -- $(config "$c")
    if [ "$what" = sgd ] || [ "$what" = all ]; then
        for d in $(dims "$c"); do
            [ -f "$OUT/$c-sgd-d$d.tsv" ] ||
                run sgd "$@" --out "$OUT" --name "$c" --d "$d" --set sgd.seeds=8 \
                    --set sgd.holdout=10000 --set hierarchy.order=3
        done
    fi
    if [ "$what" = ode ] || [ "$what" = all ]; then
        d=$(dims "$c" | cut -d' ' -f2)
        for D in 200 400; do
            [ -f "$OUT/$c-matrix-D$D-ode.tsv" ] ||
                run ode "$@" --out "$OUT" --name "$c-matrix-D$D" --d "$d" \
                    --set ode.method=matrix --set matrix.d=$D --set matrix.replicas=8
        done
        for M in $(orders "$c"); do
            [ -f "$OUT/$c-M$M-ode.tsv" ] ||
                run ode "$@" --out "$OUT" --name "$c-M$M" --d "$d" --set ode.method=auto \
                    --order "$M" --set hierarchy.tol=0
        done
    fi
    if [ "$what" = report ]; then
        for d in $(dims "$c"); do
            files=""
            for f in "$OUT/$c"-matrix-D*-ode.tsv "$OUT/$c"-M*-ode.tsv; do
                [ -f "$f" ] && files="$files --ode $f"
            done
            # shellcheck disable=SC2086
            "$B" agreement --sgd "$OUT/$c-sgd-d$d.tsv" $files > "$OUT/$c-d$d.agreement.txt"
        done
    fi
done
