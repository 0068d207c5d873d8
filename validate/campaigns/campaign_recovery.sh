#!/bin/sh
# Weak-recovery campaign (issue 5; results in validate/results/RESULTS_recovery.md):
#   fig2     - the paper's Figure 2 at d = 400: He2 and He3, direct and
#              tied students (the untied panels are campaign_untied.sh's
#              fig3 runs of He2 and He3, same d and seeds);
#   d800     - the escaping cases at d = 800: tied He2 and He3 (escape in
#              the limit; d800-tied), direct He2 (finite-d escape;
#              d800-direct, the longest run: about an hour on one core);
#   scaling  - weak recovery against d = 100, 200, 400, 800: tied He2 at
#              a fixed eta and at eta proportional to 1/log d; direct He2
#              and He3 from their random start overlap;
#   report   - `aimdyn recovery` predictions, the scaling fits and the
#              figures (validate/results/figures).
# Resumable: a step whose result file exists is skipped. Usage:
#   sh validate/campaigns/campaign_recovery.sh [fig2|d800|d800-tied|d800-direct|scaling|report|all]
# (scaling = scaling-main, then scaling-he3-800)
# AIMDYN (default build/aimdyn), OUT (default validate/runs_recovery) and
# UNTIED (campaign_untied.sh's OUT, default validate/runs_untied) can be
# set; each `aimdyn sgd` and `aimdyn recovery` runs its seeds on worker
# processes with one BLAS thread each (--jobs: the online cores).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${AIMDYN:-$root/build/aimdyn}
OUT=${OUT:-$root/validate/runs_recovery}
UNTIED=${UNTIED:-$root/validate/runs_untied}
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
direct=$root/examples/direct_he2.ini
tied=$root/examples/tied_he2.ini
what=${1:-all}

# Tied: eta = 0.02 (tau_wr moves by 0.6 % from eta = 0.01 and the runs
# are twice as short); the 1/log d schedule equals it at d = 400.
tied_eta=0.02
log_eta() { # eta(d) = 0.02 ln 400 / ln d
    awk -v d="$1" 'BEGIN { printf "%.6g", 0.02 * log(400) / log(d) }'
}

# sgd NAME D CONFIG SETS...: SGD seeds (8 unless SETS says otherwise);
# only words of length 1 are measured (the overlap and the risk are what
# this campaign compares)
sgd() {
    name=$1 d=$2 cfg=$3
    shift 3
    [ -f "$OUT/$name-sgd-d$d.tsv" ] && return 0
    "$B" sgd "$cfg" --out "$OUT" --name "$name" --d "$d" --set sgd.seeds=8 \
        --set hierarchy.order=1 "$@" || [ $? -eq 3 ]
}

# Direct: He2 at eta = 0.1 (examples/direct_he2.ini); He3 at eta = 0.03
# (the limit ODE blows up by tau = 0.017 at eta = 0.1 and by 0.06 at 0.05:
# the noise-driven blow-up of theory/model.md sec. 8).
direct_eta() {
    case $1 in he3) echo 0.03 ;; *) echo 0.1 ;; esac
}

# direct_run ACT D HORIZON POINTS [SETS...]: direct student
direct_run() {
    act=$1 d=$2 horizon=$3 points=$4
    shift 4
    sgd "direct-$act" "$d" "$direct" --set model.activation="$act" \
        --set training.eta="$(direct_eta "$act")" --set training.horizon="$horizon" \
        --set training.points="$points" "$@"
}

# tied_run ACT D ETA HORIZON POINTS [TAG]
tied_run() {
    sgd "tied-$1${6:-}" "$2" "$tied" --set model.activation="$1" --set training.eta="$3" \
        --set training.horizon="$4" --set training.points="$5"
}

if [ "$what" = fig2 ] || [ "$what" = all ]; then
    tied_run he2 400 $tied_eta 0.03 121
    tied_run he3 400 $tied_eta 0.02 81
    direct_run he2 400 0.6 121
    direct_run he3 400 0.15 61
fi
if [ "$what" = d800 ] || [ "$what" = d800-tied ] || [ "$what" = all ]; then
    tied_run he2 800 $tied_eta 0.015 61
    tied_run he3 800 $tied_eta 0.008 65
fi
if [ "$what" = d800 ] || [ "$what" = d800-direct ] || [ "$what" = all ]; then
    direct_run he2 800 0.4 81
fi
if [ "$what" = scaling ] || [ "$what" = scaling-main ] || [ "$what" = all ]; then
    for d in 100 200; do
        tied_run he2 $d $tied_eta 0.03 121
    done
    for d in 100 200; do
        tied_run he2 $d "$(log_eta $d)" 0.03 121 -logeta
    done
    tied_run he2 800 "$(log_eta 800)" 0.015 61 -logeta
    for d in 100 200; do
        direct_run he2 $d 0.6 121
        direct_run he3 $d 0.15 61
    done
fi
if [ "$what" = scaling ] || [ "$what" = scaling-he3-800 ] || [ "$what" = all ]; then
    # He3 at d = 800: 4 seeds to tau = 0.03 (8 seeds to tau = 0.1 would
    # take an hour)
    direct_run he3 800 0.03 31 --set sgd.seeds=4
fi
if [ "$what" = report ] || [ "$what" = all ]; then
    fig=$root/validate/results/figures
    mkdir -p "$fig"
    # predictions: `aimdyn recovery` at the campaign's settings
    pred() { # NAME CONFIG SETS... (--d lists included)
        name=$1 cfg=$2
        shift 2
        [ -f "$OUT/pred-$name-recovery.tsv" ] && return 0
        "$B" recovery "$cfg" --out "$OUT" --name "pred-$name" "$@" >"$OUT/pred-$name.txt" ||
            [ $? -eq 3 ]
    }
    all_d="--d 100 --d 200 --d 400 --d 800"
    # shellcheck disable=SC2086
    {
        pred tied-he2 "$tied" --set training.eta=$tied_eta --set training.horizon=0.03 \
            --set training.points=121 $all_d
        pred tied-he3 "$tied" --set model.activation=he3 --set training.eta=$tied_eta \
            --set training.horizon=0.02 --set training.points=81 $all_d
        for d in 100 200 400 800; do
            pred tied-he2-logeta-d$d "$tied" --set training.eta="$(log_eta $d)" \
                --set training.horizon=0.03 --set training.points=121 --d $d
        done
        pred direct-he2 "$direct" --set training.horizon=0.6 --set training.points=121 $all_d
        pred direct-he3 "$direct" --set model.activation=he3 \
            --set training.eta="$(direct_eta he3)" --set training.horizon=0.15 \
            --set training.points=61 $all_d
        for a in he2 he3; do
            pred untied-$a "$root/examples/untied_fig3.ini" --set model.activation=$a \
                --set hierarchy.order=3 --d 400 --seeds 4
        done
    }
    # limit ODE curves of Figure 2 (d = 400 for the sample axis); the
    # hierarchies run their whole window (hierarchy.tol = 0, as when the
    # figure was made: the truncation estimate would cut untied He3 M = 4
    # at tau = 0.049), the direct ODE ignores the key
    fig2_ode() { # NAME CONFIG SETS...
        name=$1 cfg=$2
        shift 2
        [ -f "$OUT/fig2-$name-ode.tsv" ] && return 0
        "$B" ode "$cfg" --out "$OUT" --name "fig2-$name" --d 400 --set hierarchy.tol=0 "$@" \
            >/dev/null || [ $? -eq 3 ]
    }
    fig2_ode direct-he2 "$direct" --set training.horizon=0.6 --set training.points=121
    fig2_ode direct-he3 "$direct" --set model.activation=he3 --set training.eta=0.03 \
        --set training.horizon=0.15 --set training.points=61
    fig2_ode tied-he2 "$tied" --set training.eta=$tied_eta --set training.horizon=0.03 \
        --set training.points=121 --order 5
    fig2_ode tied-he3 "$tied" --set model.activation=he3 --set training.eta=$tied_eta \
        --set training.horizon=0.02 --set training.points=81 --order 5
    for a in he2 he3; do
        fig2_ode untied-$a "$root/examples/untied_fig3.ini" --set model.activation=$a --order 4
    done
    # direct He2 escapes towards +S* or -S* at random: fold the mirror seeds
    for d in 100 200 400 800; do
        s=$OUT/direct-he2-sgd-d$d-seeds.tsv
        [ -f "$s" ] && sh "$root/validate/campaigns/fold_mirror.sh" --by overlap "$s" \
            >"$OUT/direct-he2-folded-sgd-d$d.tsv"
    done
    for a in he2 he3; do
        direct_sgd=$OUT/direct-$a-sgd-d400.tsv
        [ $a = he2 ] && direct_sgd=$OUT/direct-he2-folded-sgd-d400.tsv
        "$B" plot --samples 400 --figure "$fig/recovery_fig2_$a" \
            --ode "$OUT/fig2-direct-$a-ode.tsv" --sgd "$direct_sgd" --label "direct" \
            --ode "$OUT/fig2-tied-$a-ode.tsv" --sgd "$OUT/tied-$a-sgd-d400.tsv" \
            --label "tied, M = 5" \
            --ode "$OUT/fig2-untied-$a-ode.tsv" --sgd "$UNTIED/fig3-$a-sgd-d400.tsv" \
            --label "untied, M = 4"
    done
    # scaling of the SGD weak-recovery samples with d, predictions overlaid
    scaling() { # NAME LABEL FILES...
        name=$1 label=$2
        shift 2
        "$B" scaling --out "$OUT" --name "$name" --label "$label" \
            --figure "$fig/recovery_scaling_$name" "$@" >"$OUT/scaling-$name.txt" || true
    }
    sgd_files() { # STEM: --sgd for each d present
        for d in 100 200 400 800; do
            [ -f "$OUT/$1-sgd-d$d-seeds.tsv" ] && printf ' --sgd %s' "$OUT/$1-sgd-d$d-seeds.tsv"
        done
    }
    # shellcheck disable=SC2046
    {
        scaling tied-he2 "tied He2, eta = $tied_eta" $(sgd_files tied-he2) \
            --predict "$OUT/pred-tied-he2-recovery.tsv"
        scaling tied-he2-logeta "tied He2, eta = 0.02 ln 400/ln d" \
            $(sgd_files tied-he2-logeta) --sgd "$OUT/tied-he2-sgd-d400-seeds.tsv" \
            $(for d in 100 200 400 800; do printf ' --predict %s' \
                "$OUT/pred-tied-he2-logeta-d$d-recovery.tsv"; done)
        scaling direct-he2 "direct He2, eta = 0.1" $(sgd_files direct-he2) \
            --predict "$OUT/pred-direct-he2-recovery.tsv"
        scaling direct-he3 "direct He3, eta = 0.03" $(sgd_files direct-he3) \
            --predict "$OUT/pred-direct-he3-recovery.tsv"
    }
    # the phase diagram: activation x student x eta, limit ODE (a tied
    # teacher, which every student can learn); the command prints its
    # wall time and the summed ODE time
    if [ ! -f "$OUT/phase-sweep.tsv" ]; then
        "$B" sweep "$tied" --out "$OUT" --name phase --set training.horizon=0.05 \
            --set training.points=101 \
            --vary model.activation=he1,he2,he3,tanh \
            --vary model.decomposition=direct,tied,untied \
            --vary training.eta=0.005,0.01,0.02,0.05 >"$OUT/phase-sweep.txt" || [ $? -eq 3 ]
    fi
    # the repository keeps the PNG only (validate/results/figures/README.md)
    cp "$OUT/phase-sweep.png" "$fig/recovery_sweep.png"
fi
