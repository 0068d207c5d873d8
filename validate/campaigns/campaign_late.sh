#!/bin/sh
# The late phase (issue 13; results in validate/results/RESULTS_late.md): every case
# run to convergence, SGD at two dimensions (SEEDS seeds, default 8, the risk
# on 10000 held-out samples per seed), the matrix limit process (the
# M = infinity reference, theory/matrix.md) at D = 200 and 400 with
# REPLICAS replicas (default 8), and the truncated hierarchies at every order
# (hierarchy.tol = 0, so that their whole trajectories are kept, each row
# with its truncation error estimate).
#   fig1    tied softmax T = 4 (the paper's Figure 1), tau <= 1, d = 400, 800
#   rank    tied He2, rho = 0.5 < rho* = 1, T = 3, tau <= 0.1, d = 200, 400;
#           the hierarchies with the closures aligned, psd and quadrature
#   beta2   tied softmax beta = 2, T = 3, weight decay 0.3, tau <= 1, d = 200, 400
#   fig3    untied He1 and He1 + He2/sqrt 2 (Figure 3) to overlap 0.9,
#           tau <= 0.45, d = 200, 400
#   he3     untied He1/2 + He3, weight decay 0.1, eta = 0.02, tau <= 0.4, d = 200, 400
#           (examples/untied_he3_decay.ini); he3-early: the same to tau = 0.1, where
#           the hierarchies stop (SGD at d = 400 to tau = 0.4 is 13 min of CPU a seed)
#   raw     untied raw centring, He2, teacher mean 1 (unlocked), tau <= 0.05,
#           and teacher mean 0.7, tau <= 0.2, d = 200, 400; raw-07-early: SGD of
#           the latter to tau = 0.12 (past the hierarchies' blow-up; at d = 400
#           to tau = 0.2 it is 222 s of CPU a seed, measured)
# Raw centring: the stiff mean depends on d, so the hierarchies and the
# matrix process run at each d of the SGD runs (NAME-M<M>-d<d>,
# NAME-matrix-D<D>-d<d>); He2 is even, so seeds and replicas whose student
# mean leaves 0 downwards are mirror images of the positive branch: they are
# folded (fold_mirror.sh) into NAME-folded-sgd-d<d>.tsv and, the replicas run
# one per process, into NAME-matrix-D<D>-d<d>-folded.tsv (an SGD-summary
# layout: the reference as --sgd of `aimdyn agreement`) and
# NAME-matrix-D<D>-d<d>-ode.tsv (its means as an ODE file).
# Resumable: a step whose result file exists is skipped. Usage:
#   sh validate/campaigns/campaign_late.sh [sgd|ode|report] [CASE ...]
# (default: sgd and ode of every case; report: agreement tables into
# $OUT/*.agreement.txt, against SGD and, NAME-d<d>-ref.agreement.txt, against
# the matrix reference at D = 400, and the figures late_NAME_d<d>.png under
# $OUT/figures, copied to FIGS, default validate/results/figures).
# AIMDYN (default build/aimdyn), OUT (default validate/runs_late), SEEDS,
# REPLICAS, JOBS (SGD worker processes, default 1), DIMS (the d of the
# SGD runs, default the case's two), DS (the D of the matrix process,
# default "200 400"; empty: none) and ORDERS (the hierarchy orders, default
# the case's) can be set; one process at a time, BLAS on one thread.
# The runs of RESULTS_late.md secs. 5-7:
#   SEEDS=4 DIMS=200 ... sgd raw-unlocked;  SEEDS=4 DIMS=200 ... sgd he3
#   REPLICAS=4 DS=200 ... ode raw-unlocked (d = 200: ORDERS default; d = 400:
#   DIMS=400 ORDERS="4 5");  REPLICAS=4 DS="200 400" ORDERS="4 5 6" ... ode he3;
#   DS= ORDERS="4 5 6" ... ode rank;  DIMS=200 ... report raw-unlocked he3
# and of secs. 8-10 (the quadrature M = 8 of beta2 fails in CVODE, exit 1,
# and ends its step, the last run of it):
#   DIMS=200 ... sgd beta2;  SEEDS=4 DIMS=400 ... sgd beta2;  REPLICAS=4 DS=200
#   ... ode beta2;  ... report beta2;  SEEDS=4 DIMS=200 ... sgd raw-07;
#   SEEDS=4 DIMS=400 JOBS=2 ... sgd raw-07 (before it, SEEDS=2 DIMS=400 ...
#   sgd raw-07-early);  REPLICAS=4 DS=200 DIMS=200 (and
#   400) ORDERS=3 ... ode raw-07;  SEEDS=4 DIMS=200 ... sgd fig3-he1 fig3-mix;
#   REPLICAS=2 DS=200 ORDERS="5 6" ... ode fig3-he1 fig3-mix
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${AIMDYN:-$root/build/aimdyn}
OUT=${OUT:-$root/validate/runs_late}
SEEDS=${SEEDS:-8}
REPLICAS=${REPLICAS:-8}
JOBS=${JOBS:-1}
FIGS=${FIGS:-$root/validate/results/figures}
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
ex=$root/examples
fold=$root/validate/campaigns/fold_mirror.sh
what=${1:-all}
[ $# -gt 0 ] && shift
cases=${*:-fig1 rank beta2 fig3-he1 fig3-mix he3 he3-early raw-unlocked raw-07}

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
    he3) echo "$ex/untied_he3_decay.ini" ;;
    he3-early) echo "$ex/untied_he3_decay.ini --set training.horizon=0.1 --set training.points=6" ;;
    raw-unlocked) echo "$ex/untied_raw_mean.ini" ;;
    raw-07) echo "$ex/untied_raw_mean.ini --set teacher.mean=0.7 --set training.horizon=0.2" ;;
    # the first 39 points of raw-07's log grid (horizon 1e-5 (2e4)^(37/39))
    raw-07-early) echo "$ex/untied_raw_mean.ini --set teacher.mean=0.7
        --set training.horizon=0.12035506031584117 --set training.points=39" ;;
    *) echo "campaign_late: unknown case '$1'" >&2; exit 1 ;;
    esac
}
dims() {
    if [ -n "${DIMS:-}" ]; then echo "$DIMS"; else case $1 in fig1) echo "400 800" ;; *) echo "200 400" ;; esac; fi
}
orders() {
    [ -n "${ORDERS:-}" ] && { echo "$ORDERS"; return; }
    case $1 in
    fig1 | rank | beta2) echo "2 3 4 5 6 7 8" ;;
    raw-* | he3) echo "3 4 5 6" ;; # M = 2 chatters here: 6e5 CVODE steps (raw), minutes (he3)
    *) echo "2 3 4 5 6" ;;
    esac
}
closures() {
    case $1 in
    rank) echo "aligned psd quadrature" ;;
    beta2) echo "aligned quadrature" ;;
    *) echo aligned ;;
    esac
}
is_raw() { case $1 in raw-*) true ;; *) false ;; esac; }

run() { # exit 3 (a stop) is a result, recorded in the file
    "$B" "$@" || [ $? -eq 3 ]
}

# The replicas of the matrix process, one file each (matrix.replicas = 1,
# replica r from the start of SGD seed r), folded like SGD's seeds: the
# summary NAME-folded.tsv and its means as the ODE file NAME-ode.tsv.
# Not one run with output.fold = mean: its ODE file has the standard errors
# of the observables only, and the reference agreement tables compare every
# moment m_w against m_w_mean, m_w_se.
fold_replicas() { # NAME FILE...
    name=$1
    shift
    awk -F'\t' -v OFS='\t' '
        FNR == 1 { r++ }
        /^#/ { if (r == 1) meta[++nm] = $0; next }
        FNR == 1 || !seen { if (r == 1 && !printed) { print $0, "seed"; for (k = 1; k <= nm; k++) print meta[k]; printed = 1 }
                            seen = 1; if (FNR > 1 && $1 == "tau") next }
        $1 == "tau" { next }
        { print $0, r }' "$@" >"$OUT/$name-replicas.tsv"
    sh "$fold" "$OUT/$name-replicas.tsv" >"$OUT/$name-folded.tsv"
    awk -F'\t' -v OFS='\t' '
        /^#/ { print; next }
        !h { h = 1; n = 0; for (i = 1; i <= NF; i++) if (i <= 2 || $i ~ /_mean$/) { c[++n] = i; sub(/_mean$/, "", $i); v[n] = $i }
             line = v[1]; for (k = 2; k <= n; k++) line = line OFS v[k]; print line; next }
        { line = $(c[1]); for (k = 2; k <= n; k++) line = line OFS $(c[k]); print line }' \
        "$OUT/$name-folded.tsv" >"$OUT/$name-ode.tsv"
}

# The matrix process at dimension D for the run at d: REPLICAS runs of one
# replica each, folded (NAME-folded.tsv, NAME-ode.tsv).
matrix() { # NAME D d CONFIG...
    m=$1 D=$2 dm=$3
    shift 3
    [ -f "$OUT/$m-ode.tsv" ] && return 0
    files=""
    r=1
    while [ "$r" -le "$REPLICAS" ]; do
        [ -f "$OUT/$m-r$r-ode.tsv" ] ||
            run ode "$@" --out "$OUT" --name "$m-r$r" --d "$dm" --set ode.method=matrix \
                --set matrix.d="$D" --set matrix.replicas=1 --set sgd.seed="$r"
        files="$files $OUT/$m-r$r-ode.tsv"
        r=$((r + 1))
    done
    # shellcheck disable=SC2086
    fold_replicas "$m" $files
}

for c in $cases; do
    # shellcheck disable=SC2046
    set -- $(config "$c")
    if [ "$what" = sgd ] || [ "$what" = all ]; then
        for d in $(dims "$c"); do
            [ -f "$OUT/$c-sgd-d$d.tsv" ] ||
                run sgd "$@" --out "$OUT" --name "$c" --d "$d" --set sgd.seeds="$SEEDS" \
                    --set sgd.holdout=10000 --set hierarchy.order=3 --jobs "$JOBS"
            if is_raw "$c" && [ ! -f "$OUT/$c-folded-sgd-d$d.tsv" ]; then
                sh "$fold" "$OUT/$c-sgd-d$d-seeds.tsv" >"$OUT/$c-folded-sgd-d$d.tsv"
            fi
        done
    fi
    # raw: every run at each d (suffix -d<d>); else at the larger d only (no suffix)
    if is_raw "$c"; then odims=$(dims "$c"); else odims=$(dims "$c" | cut -d' ' -f2); fi
    oc=${c%-early} # an -early case: SGD only, compared with the runs of its full case
    if { [ "$what" = ode ] || [ "$what" = all ]; } && [ "$oc" = "$c" ]; then
        for d in $odims; do
            is_raw "$c" && sfx="-d$d" || sfx=""
            for D in ${DS-200 400}; do matrix "$c-matrix-D$D$sfx" "$D" "$d" "$@"; done
            for cl in $(closures "$c"); do
                for M in $(orders "$c"); do
                    [ "$cl" = aligned ] && n="$c-M$M$sfx" || n="$c-$cl-M$M$sfx"
                    [ -f "$OUT/$n-ode.tsv" ] ||
                        run ode "$@" --out "$OUT" --name "$n" --d "$d" --set ode.method=auto \
                            --order "$M" --set hierarchy.tol=0 --set hierarchy.closure="$cl"
                done
            done
        done
    fi
    if [ "$what" = report ]; then
        mkdir -p "$OUT/figures"
        is_raw "$c" && axis="--log-tau --mean" || axis=""
        # per d: the gaps of every run to SGD (NAME-d<d>.agreement.txt) and of the
        # hierarchies and the D = 200 process to the D = 400 one (NAME-d<d>-ref...)
        for d in $(dims "$c"); do
            is_raw "$c" && sfx="-d$d" || sfx=""
            sgdfile="$OUT/$c-sgd-d$d.tsv"
            is_raw "$c" && sgdfile="$OUT/$c-folded-sgd-d$d.tsv"
            # the reference: the process at D = 400, else at 200 (DS=200)
            ref="$OUT/$oc-matrix-D400$sfx" small="--ode $OUT/$oc-matrix-D200$sfx-ode.tsv"
            [ -f "$ref-folded.tsv" ] || ref="$OUT/$oc-matrix-D200$sfx" small=""
            [ -f "$ref-folded.tsv" ] || continue
            # one table per closure (aimdyn agreement takes at most 10 --ode)
            for cl in $(closures "$c"); do
                runs=""
                for M in $(orders "$c"); do
                    [ "$cl" = aligned ] && n="$oc-M$M$sfx" || n="$oc-$cl-M$M$sfx"
                    [ -f "$OUT/$n-ode.tsv" ] && runs="$runs --ode $OUT/$n-ode.tsv"
                done
                [ "$cl" = aligned ] && t="$c-d$d" || t="$c-d$d-$cl"
                # shellcheck disable=SC2086
                "$B" agreement --sgd "$ref-folded.tsv" $small $runs >"$OUT/$t-ref.agreement.txt"
                # shellcheck disable=SC2086
                [ ! -f "$sgdfile" ] || "$B" agreement --sgd "$sgdfile" $small \
                    --ode "$ref-ode.tsv" $runs >"$OUT/$t.agreement.txt"
            done
            # the figure: SGD, the reference and the orders of the aligned closure (or,
            # rank, of every closure) from 4 on
            [ -f "$sgdfile" ] || continue
            figs=""
            for cl in $(closures "$c"); do
                for M in 4 5 6; do
                    [ "$cl" = aligned ] && n="$oc-M$M$sfx" || n="$oc-$cl-M$M$sfx"
                    [ -f "$OUT/$n-ode.tsv" ] && figs="$figs --ode $OUT/$n-ode.tsv --label $cl,M=$M"
                done
            done
            # shellcheck disable=SC2086
            "$B" plot $axis --format png --figure "$OUT/figures/late_${c}_d$d" --sgd "$sgdfile" \
                --ode "$ref-ode.tsv" --label "matrix,${ref##*matrix-}" $figs
            cp "$OUT/figures/late_${c}_d$d.png" "$FIGS/late_${c}_d$d.png"
        done
    fi
done
