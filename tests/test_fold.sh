#!/bin/sh
# output.fold (src/results/fold.h) against validate/campaigns/fold_mirror.sh, an
# independent implementation (awk, from the per-seed table), on the raw
# He2 untied case of examples/untied_raw_mean.ini at d = 40, tau <= 0.05:
# its seeds' student means leave 0 both ways (seeds 2, 3, 5, 6 of 1..8
# downwards when this test was written), and with centred indices and no
# teacher mean their teacher overlaps do (3, 6, 7, 8); the test checks
# only that both signs occur.
#  - sgd with output.fold = mean (raw) and = overlap (centred): every
#    column of the summary equals fold_mirror.sh's (--by overlap) on the
#    run's own -seeds.tsv; the -seeds.tsv rows are those of output.fold =
#    none (unfolded), its "# fold" line gives each seed's sign.
#  - ode.method = matrix, 6 replicas, output.fold = mean: every observable,
#    its standard error and every moment equal fold_mirror.sh's on the 6
#    runs of one replica each (sgd.seed = 1..6: replica r of the
#    6-replica run is seed 1 + r), gathered into one table.
#  - an output map that is not even (softmax, tanh, He1 + He2), a tied
#    student and fold = mean on centred indices are refused, naming
#    output.fold.
# Tolerance: the tables fold_mirror.sh reads hold 10 significant digits,
# the tool folds the values unrounded: the means and standard errors
# differ by about 1e-10 of the seeds' values; 1e-8 of the row's scale
# (|X_mean| + sqrt(n) X_se, the size of the seeds' values) bounds that,
# while a seed folded wrongly moves a mean by about 2/n = 0.25 of it.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
fold=$(cd "$(dirname "$0")/.." && pwd)/validate/campaigns/fold_mirror.sh
ini=$(cd "$(dirname "$0")/.." && pwd)/examples/untied_raw_mean.ini
small="--set training.grid=linear --set training.points=6 --set training.horizon=0.05"

# every column of the tool's file A (X_mean/X_se, or X and X_se of a matrix
# ODE file) against fold_mirror.sh's summary B: prints the worst
# difference in units of the row's scale, exits 1 above 1e-8 or when a
# column of A is not in B
same_summary() { # A B N (seeds or replicas)
    python3 - "$1" "$2" "$3" <<'EOF'
import math, sys
def load(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path) if not l.startswith("#")]
    return rows[0], [[float(x) for x in r] for r in rows[1:]]
ha, a = load(sys.argv[1])
hb, b = load(sys.argv[2])
if len(a) != len(b):
    sys.exit(f"{len(a)} rows against {len(b)}")
n = None
worst, compared = 0.0, 0
for ca, name in enumerate(ha):
    if name in ("tau", "n", "t") or name.endswith("_se") and (
            name[:-3] in ha or name[:-3] + "_mean" in ha):
        continue
    base = name[:-5] if name.endswith("_mean") else name
    if base + "_mean" not in hb:
        sys.exit(f"column {name}: no {base}_mean in the reference")
    cm, cs = hb.index(base + "_mean"), hb.index(base + "_se")
    ase = ha.index(base + "_se") if base + "_se" in ha else None
    for ra, rb in zip(a, b):
        scale = abs(rb[cm]) + math.sqrt(int(sys.argv[3])) * rb[cs]
        diffs = [abs(ra[ca] - rb[cm])]
        if ase is not None:
            diffs.append(abs(ra[ase] - rb[cs]))
        for d in diffs:
            worst = max(worst, d / scale if scale > 0 else (0.0 if d == 0 else math.inf))
        compared += 1
print(f"{compared} cells compared, worst difference {worst:.3g} of the row's scale")
sys.exit(worst > 1e-8 or compared == 0)
EOF
}

for by in mean overlap; do
    # by overlap: centred indices (no mean), where the overlap's sign is the
    # seed's own (with the teacher mean of the raw case it follows the mean)
    case $by in
    mean) centring="--set model.centring=raw" ;;
    overlap) centring="--set model.centring=centred --set teacher.mean=0" ;;
    esac
    # shellcheck disable=SC2086
    expect_exit "sgd fold=$by" 0 "$exe" sgd "$ini" $small $centring --d 40 --seeds 8 --quiet \
        --out "$work/$by" --set output.fold=$by
    seeds=$work/$by/untied_raw_mean-sgd-d40-seeds.tsv
    summary=$work/$by/untied_raw_mean-sgd-d40.tsv
    contains "sgd fold=$by: the seeds' signs" "$seeds" "^# fold (output.fold = $by)"
    contains "sgd fold=$by: the mirrored seeds" "$summary" "^# folded (output.fold = $by)"
    line=$(grep "^# fold (" "$seeds")
    case $line in *" -1"*) r=0 ;; *) r=1 ;; esac
    check "sgd fold=$by: some seeds mirrored ($line)" $r
    case $line in *" +1"*) r=0 ;; *) r=1 ;; esac
    check "sgd fold=$by: some seeds not mirrored" $r
    sh "$fold" --by $by "$seeds" >"$work/$by.ref" 2>"$work/err"
    check "fold_mirror.sh --by $by" $?
    same_summary "$summary" "$work/$by.ref" 8
    check "sgd fold=$by: the summary is fold_mirror.sh's" $?
done

expect_exit "sgd unfolded" 0 "$exe" sgd "$ini" $small --d 40 --seeds 8 --quiet --out "$work/none"
grep -v '^#' "$work/none/untied_raw_mean-sgd-d40-seeds.tsv" >"$work/none.rows"
grep -v '^#' "$work/mean/untied_raw_mean-sgd-d40-seeds.tsv" >"$work/mean.rows"
cmp -s "$work/none.rows" "$work/mean.rows"
check "the -seeds.tsv rows are unfolded" $?
cmp -s "$work/none/untied_raw_mean-sgd-d40.tsv" "$work/mean/untied_raw_mean-sgd-d40.tsv"
[ $? -ne 0 ]
check "the summary with output.fold = mean differs from the unfolded one" $?

matrix="$ini $small --d 40 --set ode.method=matrix --set matrix.d=40 --quiet"
# shellcheck disable=SC2086
expect_exit "matrix fold=mean" 0 "$exe" ode $matrix --set matrix.replicas=6 \
    --set output.fold=mean --out "$work/m" --name all
contains "matrix fold=mean: the mirrored replicas" "$work/m/all-ode.tsv" \
    "^# folded (output.fold = mean): [1-5] of 6 replicas"
for r in 1 2 3 4 5 6; do
    # shellcheck disable=SC2086
    expect_exit "matrix replica $r alone" 0 "$exe" ode $matrix --set matrix.replicas=1 \
        --set sgd.seed=$r --out "$work/m" --name r$r
done
# the six files as one table with a seed column, for fold_mirror.sh
awk -F'\t' -v OFS='\t' '
    FNR == 1 { r++ }
    /^#/ { next }
    $1 == "tau" { if (r == 1) print "seed", $0; next }
    { print r, $0 }' "$work"/m/r[1-6]-ode.tsv >"$work/replicas.tsv"
sh "$fold" "$work/replicas.tsv" >"$work/replicas.ref" 2>"$work/err"
check "fold_mirror.sh on the replicas" $?
same_summary "$work/m/all-ode.tsv" "$work/replicas.ref" 6
check "matrix fold=mean: the replica average is fold_mirror.sh's" $?

# refusals: S and -S not equivalent
refused() { # name, options...
    name=$1
    shift
    expect_exit "$name refused" 1 "$exe" sgd "$@" --out "$work/refused"
    contains "$name: the error names output.fold" "$work/err" "output.fold"
    [ ! -e "$work/refused" ]
    check "$name: no output" $?
}
refused "softmax" "$ini" --set model.output=softmax --set output.fold=mean
refused "tanh" "$ini" --set model.activation=tanh --set output.fold=overlap
refused "He1 + He2" --set output.fold=overlap
refused "tied" --set model.activation=he2 --set model.decomposition=tied \
    --set teacher.decomposition=tied --set output.fold=overlap
refused "fold=mean, centred" --set model.activation=he2 --set output.fold=mean

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
