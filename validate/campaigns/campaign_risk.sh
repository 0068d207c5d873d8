#!/bin/sh
# The SGD risk measured on held-out samples against the Gaussian risk
# formula on the same seeds' order parameters (theory/measurement.md;
# table in validate/results/RESULTS.md sec. 5), at tau = 0 (the seeds' initial
# matrices, no training) for d = 200, 400, 800, 64 seeds of 8000 held-out
# samples each. Each run's grid has a second point a few steps later,
# since a grid has at least two points; the table reads the tau = 0 rows.
# Resumable: a run whose summary file exists is skipped. Ends by printing
# the table (markdown) from the runs in OUTDIR.
#
# Usage: sh validate/campaigns/campaign_risk.sh [OUTDIR] [CASE ...]
#   OUTDIR defaults to validation/risk (not tracked); cases default to all
#   of: direct tied softmax. Cost (one core, OpenBLAS single-threaded):
#   about 30 s per case at d = 200, 2 min at 400, 8 min at 800.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/validation/risk}
[ $# -gt 0 ] && shift
cases=${*:-direct tied softmax}
exe=$root/build/aimdyn
[ -x "$exe" ] || sh "$root/scripts/setup.sh" build
export OPENBLAS_NUM_THREADS=1

run() { # name, d, eta, arguments...
    name=$1 d=$2 eta=$3
    shift 3
    if [ -f "$out/$name-sgd-d$d.tsv" ]; then
        echo "campaign_risk: $name d = $d done already"
        return 0
    fi
    echo "campaign_risk: $name d = $d"
    # ten steps to the grid's second point: tau = 10 eta / d^2
    horizon=$(awk -v e="$eta" -v d="$d" 'BEGIN { printf "%.17g", 10 * e / (d * d) }')
    "$exe" sgd --out "$out" --name "$name" --d "$d" --seeds 64 --set sgd.holdout=8000 \
        --set training.eta="$eta" --set training.horizon="$horizon" --set training.points=2 "$@"
}

for d in 200 400 800; do
    for c in $cases; do
        case $c in
        # direct, T = 3, equicorrelated tokens (0.3), sigma = He1 + He3
        direct) run direct "$d" 0.1 --set model.tokens=3 \
            --set model.covariance=equicorrelated:0.3 --set "model.hermite=0 1 0 1" ;;
        # tied W W^T student and teacher, T = 3, sigma = He2
        tied) run tied "$d" 0.1 --set model.decomposition=tied \
            --set teacher.decomposition=tied --set model.tokens=3 --set model.activation=he2 ;;
        # the tied row softmax of the paper's Figure 1 (T = 4, beta = 1)
        softmax) run softmax "$d" 0.5 "$root/examples/tied_softmax_T4.ini" ;;
        *) echo "campaign_risk: unknown case '$c' (allowed: direct tied softmax)" >&2
           exit 1 ;;
        esac
    done
done

# The table of validate/results/RESULTS.md sec. 5, from the seeds' tau = 0 rows:
# the mean over the seeds of the measured risk and of the formula, and
# their difference taken per seed (paired: the seeds' common spread
# cancels), each +- its standard error over the seeds; z = difference /
# its standard error; relative = difference / formula; ratio = relative
# over relative at the previous d (1/d: 0.5, 1/sqrt d: 0.71).
files=
for c in $cases; do
    for d in 200 400 800; do
        f=$out/$c-sgd-d$d-seeds.tsv
        [ -f "$f" ] && files="$files $f"
    done
done
# shellcheck disable=SC2086
[ -n "$files" ] && awk -F'\t' '
    function se(s, s2) { return sqrt((s2 - s * s / n) / (n - 1) / n) }
    function flush(   rel) {
        if (n < 2)
            return
        rel = sx / sg
        printf "| %s | %d | %.4g +- %.2g | %.4g +- %.2g | %.3g +- %.2g | %.1f | %+.2f %% | %s |\n",
            c, d, sr / n, se(sr, sr2), sg / n, se(sg, sg2), sx / n, se(sx, sx2),
            sx / n / se(sx, sx2), 100 * rel, c == lastc ? sprintf("%.2f", rel / lastrel) : ""
        lastc = c; lastrel = rel
        n = sr = sr2 = sg = sg2 = sx = sx2 = 0
    }
    BEGIN {
        print "| case | d | measured | formula | difference | z | relative | ratio |"
        print "|---|---|---|---|---|---|---|---|"
    }
    FNR == 1 {
        flush()
        name = FILENAME; sub(/.*\//, "", name); split(name, part, "-sgd-d")
        c = part[1]; d = part[2] + 0
    }
    /^#/ { next }
    $1 == "seed" { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["tau"] == 0 {
        n++; r = $col["risk"]; g = $col["risk_gauss"]; x = r - g
        sr += r; sr2 += r * r; sg += g; sg2 += g * g; sx += x; sx2 += x * x
    }
    END { flush() }' $files
