#!/bin/sh
# Untied attention campaign (issue 4; results in validate/results/RESULTS_untied.md):
#   fig3  - the paper's Figure 3: He1, He1 + He2/sqrt 2, He2, He3 at d = 400
#           (8 seeds, tau <= 0.1); fig3-800: the same four at d = 800
#           (tau <= 0.02);
#   high  - He1 and He1 + He2/sqrt 2 at d = 400 with M = 6 and 7 (25245
#           equations; minutes of CPU time each, ode.linear_solver = auto
#           takes GMRES);
#   raw   - raw centring, He2: teacher mean 1 (the fast mean unlocks
#           recovery) and 0 (locked), d = 400 (tau <= 0.05); raw-800: the
#           unlocked case at d = 800 (tau <= 0.015); stiff and adiabatic ODEs.
# Resumable: a step whose result file exists is skipped, so an interrupted
# run continues where it stopped. Usage:
#   sh validate/campaigns/campaign_untied.sh [fig3|fig3-800|raw|raw-800|ode|high|scan|report|all]
# (default all; scan: stiff against adiabatic for d = 100 .. 6400, ODE
# only, into $OUT/scan.txt; report: figures into validate/results/figures and
# agreement tables into $OUT/*.agreement.txt)
# AIMDYN (default build/aimdyn) and OUT (default validate/runs_untied) can
# be set; each SGD run's seeds run on worker processes with one BLAS thread
# each (--jobs: the online cores).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${AIMDYN:-$root/build/aimdyn}
OUT=${OUT:-$root/validate/runs_untied}
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
fig3=$root/examples/untied_fig3.ini
raw=$root/examples/untied_raw_mean.ini
what=${1:-all}

act_sets() { # the --set options of an activation label
    case $1 in
    he1 | he2 | he3) echo "--set model.activation=$1" ;;
    mix) echo "--set model.activation=hermite --set model.hermite=0,1,0.70710678118654752" ;;
    esac
}

# sgd NAME D CONFIG SETS...: SGD seeds, moments of the words up to length 3,
# the risk on 10000 held-out samples per seed (theory/measurement.md)
sgd() {
    name=$1 d=$2 cfg=$3
    shift 3
    [ -f "$OUT/$name-sgd-d$d.tsv" ] && return 0
    "$B" sgd "$cfg" --out "$OUT" --name "$name" --d "$d" --set hierarchy.order=3 \
        --set sgd.holdout=10000 "$@" || [ $? -eq 3 ]
}

# ode NAME D M CONFIG SETS...: one ODE file per order; hierarchy.tol = 0:
# every order runs as far as its moments stay valid (the tables compare
# the orders over whole windows)
ode() {
    name=$1 d=$2 M=$3 cfg=$4
    shift 4
    [ -f "$OUT/$name-M$M-d$d-ode.tsv" ] && return 0
    "$B" ode "$cfg" --out "$OUT" --name "$name-M$M-d$d" --d "$d" --order "$M" \
        --set hierarchy.tol=0 "$@" || [ $? -eq 3 ]
}

if [ "$what" = fig3 ] || [ "$what" = all ]; then
    for a in he1 mix he2 he3; do
        # shellcheck disable=SC2046
        sgd "fig3-$a" 400 "$fig3" $(act_sets $a)
    done
fi
if [ "$what" = fig3-800 ] || [ "$what" = all ]; then
    for a in he1 mix he2 he3; do
        # shellcheck disable=SC2046
        sgd "fig3-$a" 800 "$fig3" $(act_sets $a) --set training.horizon=0.02 --set training.points=31
    done
fi
if [ "$what" = raw ] || [ "$what" = all ]; then
    sgd raw-unlocked 400 "$raw"
    sgd raw-locked 400 "$raw" --set teacher.mean=0
fi
if [ "$what" = raw-800 ] || [ "$what" = all ]; then
    sgd raw-unlocked 800 "$raw" --set training.horizon=0.015 --set training.points=31
fi
if [ "$what" = ode ] || [ "$what" = all ]; then
    for a in he1 mix he2 he3; do
        for M in 2 3 4 5; do
            # shellcheck disable=SC2046
            ode "fig3-$a" 400 $M "$fig3" $(act_sets $a)
        done
    done
    for a in he1 mix he2 he3; do
        for M in 2 3 4 5; do
            # shellcheck disable=SC2046
            ode "fig3-$a" 800 $M "$fig3" $(act_sets $a) --set training.horizon=0.02 \
                --set training.points=31
        done
    done
    for M in 3 4; do
        for mode in stiff adiabatic; do
            ode "raw-unlocked-$mode" 400 $M "$raw" --set hierarchy.mean=$mode
            ode "raw-locked-$mode" 400 $M "$raw" --set teacher.mean=0 --set hierarchy.mean=$mode
        done
        for mode in stiff adiabatic; do
            ode "raw-unlocked-$mode" 800 $M "$raw" --set hierarchy.mean=$mode \
                --set training.horizon=0.015 --set training.points=31
        done
    done
fi
if [ "$what" = high ] || [ "$what" = all ]; then
    for a in he1 mix; do
        for M in 6 7; do
            # shellcheck disable=SC2046
            ode "fig3-$a" 400 $M "$fig3" $(act_sets $a)
        done
    done
fi
if [ "$what" = ode ] || [ "$what" = all ]; then
    # He2, He3: the limit ODE from each SGD seed's measured start (the
    # finite-d escape through the seed's own initial overlap)
    for a in he2 he3; do
        for seed in 1 2 3 4 5 6 7 8; do
            # shellcheck disable=SC2046
            ode "fig3-$a-seed$seed" 400 4 "$fig3" $(act_sets $a) --set hierarchy.start=seed \
                --set sgd.seed=$seed
        done
    done
fi
if [ "$what" = report ] || [ "$what" = all ]; then
    fig=$root/validate/results/figures
    mkdir -p "$fig"
    for d in 400 800; do
        set --
        for a in he1 mix he2 he3; do
            [ -f "$OUT/fig3-$a-sgd-d$d.tsv" ] || continue
            case $a in
            he1) label=He1 ;;
            he2) label=He2 ;;
            he3) label=He3 ;;
            mix) label="He1+He2/sqrt2" ;;
            esac
            set -- "$@" --ode "$OUT/fig3-$a-M5-d$d-ode.tsv" --label "$label, M = 5" \
                --sgd "$OUT/fig3-$a-sgd-d$d.tsv"
        done
        [ $# -gt 0 ] && "$B" plot --samples $d --figure "$fig/untied_fig3_d$d" "$@"
        for a in he1 mix he2 he3; do
            [ -f "$OUT/fig3-$a-sgd-d$d.tsv" ] || continue
            "$B" agreement --sgd "$OUT/fig3-$a-sgd-d$d.tsv" \
                --ode "$OUT/fig3-$a-M2-d$d-ode.tsv" --ode "$OUT/fig3-$a-M3-d$d-ode.tsv" \
                --ode "$OUT/fig3-$a-M4-d$d-ode.tsv" --ode "$OUT/fig3-$a-M5-d$d-ode.tsv" \
                >"$OUT/fig3-$a-d$d.agreement.txt"
        done
    done
    # He2 is even: seeds whose mean left 0 downwards are mirror images
    # (S -> -S) of the ODE's positive branch; fold them (fold_mirror.sh)
    for c in unlocked locked; do
        for d in 400 800; do
            [ -f "$OUT/raw-$c-sgd-d$d-seeds.tsv" ] || continue
            sh "$root/validate/campaigns/fold_mirror.sh" "$OUT/raw-$c-sgd-d$d-seeds.tsv" \
                >"$OUT/raw-$c-folded-sgd-d$d.tsv"
            "$B" plot --log-tau --mean --figure "$fig/untied_raw_${c}_d$d" \
                --sgd "$OUT/raw-$c-folded-sgd-d$d.tsv" \
                --ode "$OUT/raw-$c-stiff-M4-d$d-ode.tsv" --label "stiff, d = $d" \
                --ode "$OUT/raw-$c-adiabatic-M4-d$d-ode.tsv" --label "adiabatic limit"
            "$B" agreement --sgd "$OUT/raw-$c-folded-sgd-d$d.tsv" \
                --ode "$OUT/raw-$c-stiff-M3-d$d-ode.tsv" --ode "$OUT/raw-$c-stiff-M4-d$d-ode.tsv" \
                --ode "$OUT/raw-$c-adiabatic-M3-d$d-ode.tsv" \
                --ode "$OUT/raw-$c-adiabatic-M4-d$d-ode.tsv" >"$OUT/raw-$c-d$d.agreement.txt"
        done
    done
fi
if [ "$what" = scan ] || [ "$what" = all ]; then
    # largest |stiff - adiabatic| over the grid of the unlocked raw example
    echo "d mean_gap overlap_gap risk_gap" >"$OUT/scan.txt"
    for d in 100 200 400 800 1600 3200 6400; do
        for mode in stiff adiabatic; do
            [ -f "$OUT/scan-$mode-d$d-ode.tsv" ] ||
                "$B" ode "$raw" --out "$OUT" --name "scan-$mode-d$d" --d $d \
                    --set hierarchy.mean=$mode >/dev/null
        done
        awk -F'\t' -v d=$d '
            /^#/ { next }
            !seen[FILENAME]++ { for (i = 1; i <= NF; i++) c[$i] = i; next }
            FILENAME ~ /stiff/ { m[FNR] = $c["mean"]; o[FNR] = $c["overlap"]; r[FNR] = $c["risk"]; next }
            { x = $c["mean"] - m[FNR]; y = $c["overlap"] - o[FNR]; z = $c["risk"] - r[FNR]
              if (x < 0) x = -x; if (y < 0) y = -y; if (z < 0) z = -z
              if (x > gm) gm = x; if (y > go) go = y; if (z > gr) gr = z }
            END { printf "%d %.4g %.4g %.4g\n", d, gm, go, gr }' \
            "$OUT/scan-stiff-d$d-ode.tsv" "$OUT/scan-adiabatic-d$d-ode.tsv" >>"$OUT/scan.txt"
    done
fi
