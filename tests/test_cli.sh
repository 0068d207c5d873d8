#!/bin/sh
# Command-line behaviour: help texts, configuration errors (exit 1,
# message naming the key and value, nothing written), the ode command's
# output file, blow-up reporting (exit 3) and reproducibility.
set -u
exe="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0

check() { # name, condition-result
    if [ "$2" -eq 0 ]; then
        passes=$((passes + 1))
    else
        echo "FAIL: $1"
        failures=$((failures + 1))
    fi
}

expect_exit() { # name, expected status, command...
    name=$1 want=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    got=$?
    [ "$got" -eq "$want" ]
    r=$?
    [ $r -ne 0 ] && echo "  $name: exit $got, wanted $want; stderr: $(cat "$work/err")"
    check "$name" $r
}

contains() { # name, file, text
    grep -q -- "$3" "$2"
    r=$?
    [ $r -ne 0 ] && echo "  $1: '$3' not in $(cat "$2")"
    check "$1" $r
}

# help
expect_exit "main help" 0 "$exe" --help
contains "main help lists compare" "$work/out" "compare"
for cmd in ode sgd compare hierarchy agreement plot keys; do
    expect_exit "$cmd --help" 0 "$exe" $cmd --help
    contains "$cmd --help usage" "$work/out" "usage: aimdyn $cmd"
done
expect_exit "ode --help mentions --set" 0 "$exe" ode --help
contains "ode --help --set" "$work/out" "--set section.key=value"
expect_exit "keys" 0 "$exe" keys
contains "keys lists training.eta with default" "$work/out" "training.eta"
expect_exit "no command" 1 "$exe"
expect_exit "unknown command" 1 "$exe" frobnicate
contains "unknown command names allowed" "$work/err" "allowed: ode, sgd, compare, hierarchy, agreement, plot, keys"

# configuration errors: exit 1, nothing written
out="$work/o1"
expect_exit "malformed --set" 1 "$exe" ode --out "$out" --set training.eta=0.1x
contains "malformed names key and value" "$work/err" "training.eta"
contains "malformed names value" "$work/err" "0.1x"
expect_exit "out of range --set" 1 "$exe" ode --out "$out" --set training.eta=-1
contains "out of range says allowed" "$work/err" "allowed"
printf '[model]\ntokens = 2\n[training]\nspeed = 3\n' >"$work/bad.ini"
expect_exit "unknown key in file" 1 "$exe" ode "$work/bad.ini" --out "$out"
contains "unknown key names file:line" "$work/err" "bad.ini:4"
contains "unknown key names key" "$work/err" "speed"
printf '[model]\ncentring = raw\n[teacher]\ndecomposition = tied\n' >"$work/tied.ini"
expect_exit "impossible combination" 1 "$exe" ode "$work/tied.ini" --out "$out"
contains "impossible combination explains" "$work/err" "raw"
expect_exit "missing config file" 1 "$exe" ode "$work/none.ini" --out "$out"
expect_exit "bad --d" 1 "$exe" ode --d 3 --out "$out"
expect_exit "directory as configuration" 1 "$exe" ode "$work" --out "$out"
contains "directory as configuration explains" "$work/err" "not a regular file"
expect_exit "option of another command" 1 "$exe" ode --seeds 3 --out "$out"
contains "option of another command named" "$work/err" "--seeds"
expect_exit "run too long for any machine" 1 "$exe" sgd --set training.eta=1e-20 --out "$out"
contains "step budget explained" "$work/err" "steps"
expect_exit "dimensions out of order" 1 "$exe" compare --d 400 --d 200 --out "$out"
[ ! -e "$out" ]
check "no output after configuration errors" $?
: >"$work/afile"
expect_exit "output directory is a file" 1 "$exe" ode --out "$work/afile/sub"
contains "output directory named" "$work/err" "afile"
contains "output directory key named" "$work/err" "output.dir"

# ode on the default example
expect_exit "ode default" 0 "$exe" ode --out "$work/o2" --set training.points=11
f="$work/o2/aimdyn-ode.tsv"
[ -f "$f" ]
check "ode file exists" $?
contains "ode file has version" "$f" "^# aimdyn "
contains "ode file has configuration" "$f" "^# config training.eta = 0.1"
contains "ode file has header" "$f" "^tau	n	t	risk	overlap"
rows=$(grep -v '^#' "$f" | wc -l)
[ "$rows" -eq 12 ]
check "ode file has 11 rows + header (got $rows)" $?
[ -z "$(ls -A "$work/o2" | grep '^\.')" ]
check "no temporary file left" $?
cp "$f" "$work/first.tsv"
expect_exit "ode again" 0 "$exe" ode --out "$work/o2" --set training.points=11
cmp -s "$f" "$work/first.tsv"
check "ode output bit-identical across runs" $?

# blow-up: exit 3, recorded in the file
expect_exit "ode blow-up" 3 "$exe" ode --out "$work/o4" --set model.activation=he2 \
    --set training.eta=0.5 --set ode.blowup=1000
contains "blow-up on stderr" "$work/err" "blow-up"
contains "blow-up recorded" "$work/o4/aimdyn-ode.tsv" "^# status: blow-up"

# figures from existing files (gnuplot is installed by scripts/setup.sh)
expect_exit "plot from the ode file" 0 "$exe" plot --ode "$f" --figure "$work/fig" --log-tau --mean
[ -s "$work/fig.png" ] && [ -s "$work/fig.svg" ]
check "plot wrote png and svg" $?
contains "svg has the overlap panel" "$work/fig.svg" "teacher overlap"
[ -z "$(ls -A "$work" | grep 'fig\.[ps][nv]g\.')" ]
check "plot left no temporary file" $?

# tied attention: the generated hierarchy, its errors, an ODE with moment columns
printf '[model]\ndecomposition = tied\n[teacher]\ndecomposition = tied\n' >"$work/tied2.ini"
expect_exit "hierarchy order 2" 0 "$exe" hierarchy "$work/tied2.ini" --order 2
contains "hierarchy counts equations" "$work/out" "3 equations, 23 terms"
contains "hierarchy prints m(SS)" "$work/out" "^d m(SS)/dtau = g_S (-8 m(SSS))"
expect_exit "hierarchy latex" 0 "$exe" hierarchy "$work/tied2.ini" --order 3 --latex
contains "hierarchy latex environment" "$work/out" "begin{align"
expect_exit "hierarchy of a direct student" 1 "$exe" hierarchy
contains "hierarchy of a direct student explains" "$work/err" "allowed: model.decomposition = tied"
expect_exit "order out of range" 1 "$exe" hierarchy "$work/tied2.ini" --order 0
contains "order out of range names the key" "$work/err" "hierarchy.order"
expect_exit "--order with a direct student" 1 "$exe" compare --order 2 --out "$out"
contains "--order explains" "$work/err" "tied students only"
expect_exit "--latex outside hierarchy" 1 "$exe" ode "$work/tied2.ini" --latex --out "$out"
printf '[model]\ndecomposition = tied\n' >"$work/tied3.ini"
expect_exit "tied student, non-symmetric teacher" 1 "$exe" ode "$work/tied3.ini" --out "$out"
contains "non-symmetric teacher explained" "$work/err" "symmetric teacher"
expect_exit "tied ode" 0 "$exe" ode "$work/tied2.ini" --order 2 --out "$work/o5" \
    --set training.eta=0.005 --set training.horizon=0.02 --set training.points=5
contains "tied ode has moment columns" "$work/o5/aimdyn-ode.tsv" "	m(S)	m(SS)	m(ST)$"
contains "tied ode records the hierarchy" "$work/o5/aimdyn-ode.tsv" "^# tied hierarchy: order M = 2 (3 equations), closure aligned"

expect_exit "tied ode from a seed's measured start" 0 "$exe" ode "$work/tied2.ini" --order 2 \
    --out "$work/o6" --d 40 --set hierarchy.start=seed --set training.eta=0.005 \
    --set training.horizon=0.01 --set training.points=3
contains "seed start recorded" "$work/o6/aimdyn-ode.tsv" "start measured from SGD seed"
first_overlap=$(grep -v '^#' "$work/o6/aimdyn-ode.tsv" | awk -F'\t' 'NR == 2 {print $5}')
[ "$first_overlap" != "0" ]
check "seed start has the seed's (non-zero) overlap (got $first_overlap)" $?
# a truncation that leaves the moments of real matrices: exit 3, recorded
expect_exit "tied hierarchy leaving the valid moments" 3 "$exe" ode "$work/tied2.ini" --order 2 \
    --out "$work/o7" --set teacher.scale=0.5 --set model.activation=he2 \
    --set training.eta=0.01 --set training.horizon=0.1 --set training.points=11
contains "invalid moments explained" "$work/err" "left the valid moments by tau ="
contains "invalid moments recorded" "$work/o7/aimdyn-ode.tsv" "^# status: the order-2 hierarchy left"
expect_exit "ode --order with a direct student" 1 "$exe" ode --order 3 --out "$out"
# agreement of existing files: the tied ODE against itself is not an SGD file
expect_exit "agreement needs an SGD summary" 1 "$exe" agreement --sgd "$work/o5/aimdyn-ode.tsv" \
    --ode "$work/o5/aimdyn-ode.tsv"
contains "agreement explains" "$work/err" "SGD summary file"
expect_exit "agreement without files" 1 "$exe" agreement --sgd "$work/none.tsv" --ode "$work/none.tsv"

# untied attention: hierarchy, balance warning, raw mean in both modes, seed start
printf '[model]\ndecomposition = untied\nactivation = he1\n[student]\nscale = 0.5\n' >"$work/untied.ini"
expect_exit "untied hierarchy order 2" 0 "$exe" hierarchy "$work/untied.ini" --order 2
contains "untied hierarchy counts equations" "$work/out" "14 equations, 159 terms"
contains "untied hierarchy prints m(K)" "$work/out" "^d m(K)/dtau = g_S (-m(AK) - m(BK)) + g_T (-m(AT) - m(BT))"
expect_exit "untied order 1 refused" 1 "$exe" ode "$work/untied.ini" --order 1 --out "$out"
contains "untied order 1 explained" "$work/err" "hierarchy.order >= 2"
expect_exit "untied ode" 0 "$exe" ode "$work/untied.ini" --order 2 --out "$work/u1" \
    --set training.horizon=0.02 --set training.points=5
contains "untied balance warned" "$work/err" "balance condition .* fails for k = 1"
contains "untied balance recorded" "$work/u1/aimdyn-ode.tsv" "^# warning: balance condition"
contains "untied ode has tA, tB columns" "$work/u1/aimdyn-ode.tsv" "	m(A)	m(B)	m(K)	m(AA)"
expect_exit "untied balanced scales: no warning" 0 "$exe" ode "$work/untied.ini" --order 2 \
    --out "$work/u2" --set student.scale_v=1 --set training.horizon=0.02 --set training.points=5
grep -q "balance" "$work/err"
[ $? -ne 0 ]
check "no balance warning with unequal scales" $?
expect_exit "untied raw stiff" 0 "$exe" ode "$work/untied.ini" --order 2 --out "$work/u3" \
    --set model.centring=raw --set teacher.mean=1 --set training.grid=log \
    --set training.grid_start=1e-4 --set training.horizon=0.01 --set training.points=7
contains "untied raw file has m(K) = mean / sqrt d" "$work/u3/aimdyn-ode.tsv" "	m(B)	m(K)	m(AA)"
last_mk=$(grep -v '^#' "$work/u3/aimdyn-ode.tsv" | awk -F'\t' 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i} END {printf "%.6g %.6g", $c["mean"] / sqrt(200), $c["m(K)"]}')
awk -v p="$last_mk" 'BEGIN {split(p, v, " "); exit !(v[1] == v[2] && v[1] > 0)}'
check "m(K) is the mean over sqrt d (got $last_mk)" $?
contains "untied raw records the stiff mean" "$work/u3/aimdyn-ode.tsv" "^# mean: stiff"
expect_exit "untied raw adiabatic" 0 "$exe" ode "$work/untied.ini" --order 2 --out "$work/u4" \
    --set model.centring=raw --set teacher.mean=1 --set hierarchy.mean=adiabatic \
    --set training.grid=log --set training.grid_start=1e-4 --set training.horizon=0.01 \
    --set training.points=7
contains "untied adiabatic recorded" "$work/u4/aimdyn-ode.tsv" "^# mean: adiabatic limit"
last_mean=$(grep -v '^#' "$work/u4/aimdyn-ode.tsv" | awk -F'\t' 'END {print $11}')
awk -v m="$last_mean" 'BEGIN {exit !(m > 0.9 && m < 1.1)}'
check "adiabatic mean settles near the teacher's (got $last_mean)" $?
expect_exit "untied ode from a seed's measured start" 0 "$exe" ode "$work/untied.ini" --order 2 \
    --out "$work/u5" --d 40 --set hierarchy.start=seed --set training.horizon=0.01 \
    --set training.points=3
contains "untied seed start recorded" "$work/u5/aimdyn-ode.tsv" "start measured from SGD seed"

# untied SGD with its moment columns; plot cases paired ODE/SGD on n / d^2
expect_exit "untied sgd" 0 "$exe" sgd "$work/untied.ini" --set hierarchy.order=2 --out "$work/u6" --d 16 \
    --seeds 2 --set training.horizon=0.02 --set training.points=5
contains "untied sgd has tA columns" "$work/u6/aimdyn-sgd-d16.tsv" "	m(A)_mean	m(A)_se"
expect_exit "plot pairs on n/d^2" 0 "$exe" plot --samples 16 --figure "$work/pairs" \
    --ode "$work/u1/aimdyn-ode.tsv" --label a --ode "$work/u2/aimdyn-ode.tsv" --label b \
    --sgd "$work/u6/aimdyn-sgd-d16.tsv" --sgd "$work/u6/aimdyn-sgd-d16.tsv"
[ -s "$work/pairs.png" ] && [ -s "$work/pairs.svg" ]
check "plot pairs wrote png and svg" $?
expect_exit "plot: two --sgd for three --ode" 1 "$exe" plot --figure "$work/p3" \
    --ode "$work/u1/aimdyn-ode.tsv" --ode "$work/u1/aimdyn-ode.tsv" --ode "$work/u1/aimdyn-ode.tsv" \
    --sgd "$work/u1/aimdyn-ode.tsv" --sgd "$work/u2/aimdyn-ode.tsv"
contains "plot pairing explained" "$work/err" "one per ODE file"
expect_exit "plot: bad --samples" 1 "$exe" plot --samples 0 --figure "$work/p4" \
    --ode "$work/u1/aimdyn-ode.tsv"
contains "bad --samples explained" "$work/err" "allowed: a number >= 1"

# plot needs inputs
expect_exit "plot without inputs" 1 "$exe" plot --figure "$work/fig"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
