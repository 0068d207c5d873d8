#!/bin/sh
# The validation campaign of tied attention (validate/results/RESULTS_tied.md):
# SGD once per dimension, the ODE for every order M and closure, and the
# agreement tables of every ODE against the same SGD runs (aimdyn
# agreement). Resumable: a result file that exists is not recomputed.
#
# Usage: [DIMS="400 800"] sh validate/campaigns/campaign_tied.sh [OUTDIR] [EXPERIMENT ...]
#   OUTDIR defaults to validation-tied/ (not tracked); experiments default
#   to all of: fig1 rho05 he2 he3. DIMS: the dimensions of Figure 1's SGD
#   runs (default 400 800; "400" skips the costly d = 800 runs). AIMDYN:
#   the executable (default build/aimdyn).
# Cost on 2 cores (single-threaded BLAS per process, two processes):
#   fig1: SGD d = 400 (8 seeds x 320000 steps) about 30 min, d = 800
#   (8 seeds x 512000 steps) about 1 h 40 min, 14 ODE runs about 15 min;
#   rho05: SGD d = 400 (8 seeds x 192000 steps) and 6 ODE runs, about 15 min;
#   he2, he3: SGD d = 400, with and without weight decay, about 25 min each.
# The SGD risk is measured on 10000 held-out samples per seed
# (theory/measurement.md sec. 5).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/validation-tied}
[ $# -gt 0 ] && shift
experiments=${*:-fig1 rho05 he2 he3}
dims=${DIMS:-400 800}
exe=${AIMDYN:-$root/build/aimdyn}
[ -x "$exe" ] || sh "$root/scripts/setup.sh" build
ex=$root/examples
export OPENBLAS_NUM_THREADS=1

# The functions' variables are global in sh: their names must not be the
# loop's ($d, $e, $dim, ...), or a call would redirect the later steps.
sgd() { # dir, name, example, d, extra arguments...
    dir=$1 name=$2 example=$3 sgd_d=$4
    shift 4
    [ -f "$dir/$name-sgd-d$sgd_d.tsv" ] && return 0
    "$exe" sgd "$ex/$example" --d "$sgd_d" --out "$dir" --name "$name" --set sgd.holdout=10000 \
        "$@" || [ $? -eq 3 ]
}

odes() { # dir, example, name prefix, closures, orders, extra arguments...
    dir=$1 example=$2 prefix=$3 closures=$4 orders=$5
    shift 5
    for cl in $closures; do
        for M in $orders; do
            [ -f "$dir/$prefix$cl-M$M-ode.tsv" ] && continue
            # exit 3: the hierarchy left the valid moments; recorded.
            # hierarchy.tol = 0: every order runs as far as its moments stay
            # valid, since the tables compare the orders over whole windows
            "$exe" ode "$ex/$example" --order "$M" --set hierarchy.closure="$cl" \
                --set hierarchy.tol=0 --out "$dir" --name "$prefix$cl-M$M" "$@" || [ $? -eq 3 ]
        done
    done
}

table() { # dir, sgd file, upto, ode files...
    dir=$1 sgdfile=$2 upto=$3
    shift 3
    n=$#
    while [ "$n" -gt 0 ]; do # each ODE file as --ode FILE
        set -- "$@" --ode "$1"
        shift
        n=$((n - 1))
    done
    "$exe" agreement --sgd "$dir/$sgdfile" --upto "$upto" "$@"
}

for e in $experiments; do
    d=$out/$e
    mkdir -p "$d"
    case $e in
    # Figure 1: row softmax, beta = 1, T = 4, rho = rho* = 1. d = 400 runs to
    # tau = 1 (overlap 0.97), d = 800 to tau = 0.4 (overlap 0.82) on the
    # same grid spacing; the ODE runs on the d = 400 grid. Agreement over
    # tau <= 0.2, 0.3 (closures) and 0.4.
    fig1)
        grid="--set training.horizon=1.0 --set training.points=101"
        for dim in $dims; do
            case $dim in
            400) sgd "$d" fig1 tied_softmax_T4.ini 400 $grid & ;;
            800) sgd "$d" fig1 tied_softmax_T4.ini 800 --set training.horizon=0.4 \
                --set training.points=41 & ;;
            *) echo "campaign_tied: DIMS: '$dim' (allowed: 400 800)" >&2; exit 1 ;;
            esac
        done
        wait
        odes "$d" tied_softmax_T4.ini "" aligned "1 2 3 4 5 6 7 8" $grid
        odes "$d" tied_softmax_T4.ini "" cumulant "2 3 4 5 6" $grid
        odes "$d" tied_softmax_T4.ini "" "free initial" "2 3 4" $grid
        for dim in $dims; do
            for upto in 0.2 0.3 0.4; do
                # one table per closure: agreement takes at most 10 ODE files
                for cl in aligned cumulant free initial; do
                    table "$d" "fig1-sgd-d$dim.tsv" "$upto" "$d/$cl"-M*-ode.tsv \
                        > "$d/agreement-d$dim-upto$upto-$cl.txt"
                done
            done
            "$exe" plot --sgd "$d/fig1-sgd-d$dim.tsv" --figure "$d/figure1-d$dim" \
                $(for M in 1 2 3 4 5 6; do echo --ode "$d/aligned-M$M-ode.tsv" --label "M=$M"; done)
        done
        ;;
    # rho = 0.5 < rho* = 1: a student of half the teacher's rank, d = 400
    rho05)
        grid="--set student.rho=0.5 --set training.horizon=0.6 --set training.points=61"
        sgd "$d" rho05 tied_softmax_T4.ini 400 $grid
        odes "$d" tied_softmax_T4.ini "" aligned "1 2 3 4 5 6" $grid
        for upto in 0.2 0.4; do
            table "$d" rho05-sgd-d400.tsv "$upto" "$d"/aligned-M*-ode.tsv \
                > "$d/agreement-upto$upto.txt"
        done
        ;;
    # sigma = He2, He3 (the tied half of Figure 2), without and with weight decay
    he2|he3)
        for g in 0 5; do
            sgd "$d" "$e-g$g" "tied_$e.ini" 400 --set training.gamma=$g
            odes "$d" "tied_$e.ini" "$e-g$g-" aligned "2 3 4 5" --set training.gamma=$g
            table "$d" "$e-g$g-sgd-d400.tsv" 1 "$d/$e-g$g"-aligned-M*-ode.tsv > "$d/agreement-g$g.txt"
        done
        ;;
    *) echo "campaign_tied: unknown experiment '$e' (allowed: fig1 rho05 he2 he3)" >&2; exit 1 ;;
    esac
done
