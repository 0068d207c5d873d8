#!/bin/sh
# The validation campaign of direct attention: every experiment whose
# agreement table is reported in validate/results/RESULTS.md, at d = 400 and 800
# with 8 seeds. Resumable: an experiment whose agreement file exists is
# skipped, so the campaign can be split over several sessions.
#
# Usage: sh validate/campaigns/campaign.sh [OUTDIR] [EXPERIMENT ...]
#   OUTDIR defaults to validation/ (not tracked); experiments default to
#   all of: t2 t4 he2 raw softmax.
# Cost on 2 cores (OpenBLAS, 64-step blocks): t2 about 50 min, t4 about
# 2 h, he2 about 50 min, raw about 5 min, softmax about 1 h, before the
# held-out risk (10000 samples per seed, theory/measurement.md sec. 5),
# which adds about 10 % at d = 800 and 50 % at d = 400.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/validation}
[ $# -gt 0 ] && shift
experiments=${*:-t2 t4 he2 raw softmax}
exe=$root/build/aimdyn
[ -x "$exe" ] || sh "$root/scripts/setup.sh" build
ex=$root/examples
holdout=10000 # held-out samples per seed for the measured risk

run() { # name, example, extra arguments...
    name=$1 example=$2
    shift 2
    if [ -f "$out/$name/$name-agreement.tsv" ]; then
        echo "campaign: $name done already ($out/$name)"
        return 0
    fi
    echo "campaign: $name"
    # exit 3 (a blow-up) is a result, recorded in the files
    "$exe" compare "$ex/$example" --d 400 --d 800 --set sgd.block=64 \
        --set sgd.holdout="$holdout" --out "$out/$name" --name "$name" "$@" || [ $? -eq 3 ]
}

for e in $experiments; do
    case $e in
    # 1. centred, T = 2 and 4, sigma = He1 + He2/sqrt 2: the first tenth of
    #    tau carries the whole rise of the overlap (0 -> 0.67)
    t2) run t2 direct_he1he2_T2.ini --set training.horizon=0.1 --set training.points=26 ;;
    t4) run t4 direct_he1he2_T4.ini --set training.horizon=0.1 --set training.points=26 ;;
    # 2. sigma = He2: the ODE stays on the uninformative manifold
    he2) run he2 direct_he2.ini --set training.horizon=0.2 --set training.points=26 ;;
    # 3. raw centring, teacher mean 1: the fast relaxation of the mean
    raw) run raw direct_raw_mean.ini --set training.horizon=0.05 ;;
    # 4. row softmax, beta = 1, T = 4 (softmax errors are small: eta = 0.5)
    softmax) run softmax direct_softmax_T4.ini --set training.eta=0.5 \
        --set training.horizon=0.5 --set training.points=26 ;;
    *) echo "campaign: unknown experiment '$e' (allowed: t2 t4 he2 raw softmax)" >&2
       exit 1 ;;
    esac
done
