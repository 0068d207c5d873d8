#!/bin/sh
# Command-line behaviour: help texts, configuration errors (exit 1,
# message naming the key and value, nothing written), the ode command's
# output file, blow-up reporting (exit 3) and reproducibility.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

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
contains "unknown command names allowed" "$work/err" "allowed: ode, sgd, compare, hierarchy, agreement, plot, recovery, sweep, scaling, keys"

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

# ode.kernel_tol: checked, and the quasi-random rule's point count and
# kernel error in the ode file
expect_exit "kernel_tol out of range" 1 "$exe" ode --out "$out" --set ode.kernel_tol=0.5
contains "kernel_tol out of range named" "$work/err" "ode.kernel_tol"
expect_exit "ode softmax with kernel_tol" 0 "$exe" ode --out "$work/k1" --set model.output=softmax \
    --set training.points=3 --set training.horizon=0.1 --set ode.kernel_tol=0.02
contains "ode file has the kernel error" "$work/k1/aimdyn-ode.tsv" \
    "^# kernels: quasi-random rule, [0-9]* points and their antithetic images; estimated relative kernel error [0-9.e-]* at the start.*ode.kernel_tol = 0.02"

# ode on the default example
expect_exit "ode default" 0 "$exe" ode --out "$work/o2" --set training.points=11
f="$work/o2/aimdyn-ode.tsv"
[ -f "$f" ]
check "ode file exists" $?
contains "ode file has version" "$f" "^# aimdyn "
contains "ode file has configuration" "$f" "^# config training.eta = 0.1"
contains "ode file has header" "$f" "^tau	n	t	risk	overlap"
contains "ode file names its Gauss-Hermite rule" "$f" "^# kernels: Gauss-Hermite"
# relu and erf: closed forms (theory/direct.md sec. 3.6); ode.rule = hermite forces
# Gauss-Hermite on them
expect_exit "ode relu" 0 "$exe" ode --out "$work/o2r" --name relu --set model.activation=relu \
    --set training.points=3 --set training.horizon=0.01
contains "a relu ode file names its closed forms" "$work/o2r/relu-ode.tsv" "^# kernels: closed forms"
expect_exit "ode erf, ode.rule = hermite" 0 "$exe" ode --out "$work/o2r" --name erf \
    --set model.activation=erf --set ode.rule=hermite --set training.points=3 \
    --set training.horizon=0.01
contains "ode.rule = hermite names Gauss-Hermite" "$work/o2r/erf-ode.tsv" "^# kernels: Gauss-Hermite"
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
contains "tied ode has moment columns" "$work/o5/aimdyn-ode.tsv" "	m_S	m_SS	m_ST$"
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
    --set hierarchy.beyond=stop \
    --out "$work/o7" --set teacher.scale=0.5 --set model.activation=he2 \
    --set training.eta=0.01 --set training.horizon=0.1 --set training.points=11
contains "invalid moments explained" "$work/err" "left the valid moments at tau ="
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
contains "untied ode has tA, tB columns" "$work/u1/aimdyn-ode.tsv" "	m_A	m_B	m_K	m_AA"
expect_exit "untied balanced scales: no warning" 0 "$exe" ode "$work/untied.ini" --order 2 \
    --out "$work/u2" --set student.scale_v=1 --set training.horizon=0.02 --set training.points=5
grep -q "balance" "$work/err"
[ $? -ne 0 ]
check "no balance warning with unequal scales" $?
expect_exit "untied raw stiff" 0 "$exe" ode "$work/untied.ini" --order 2 --out "$work/u3" \
    --set model.centring=raw --set teacher.mean=1 --set training.grid=log \
    --set training.grid_start=1e-4 --set training.horizon=0.01 --set training.points=7
contains "untied raw file has m(K) = mean / sqrt d" "$work/u3/aimdyn-ode.tsv" "	m_B	m_K	m_AA"
last_mk=$(grep -v '^#' "$work/u3/aimdyn-ode.tsv" | awk -F'\t' 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i} END {printf "%.6g %.6g", $c["mean"] / sqrt(200), $c["m_K"]}')
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
contains "untied sgd has tA columns" "$work/u6/aimdyn-sgd-d16.tsv" "	m_A_mean	m_A_se"
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

# the SGD risk is measured on held-out samples (theory/measurement.md): both
# files carry it and, apart, the Gaussian formula on the measured order
# parameters; seeded runs are bit-identical; the held-out set has its own
# random stream, so its size changes the risk and nothing else
hold() { # directory, extra arguments...
    dir=$1
    shift
    expect_exit "sgd with held-out risk ($dir)" 0 "$exe" sgd --out "$work/$dir" --d 24 --seeds 2 \
        --set model.tokens=3 --set model.covariance=equicorrelated:0.5 --set training.eta=0.02 \
        --set training.horizon=0.01 --set training.points=3 "$@"
}
hold h1
contains "sgd summary: measured risk and risk_gauss" "$work/h1/aimdyn-sgd-d24.tsv" \
    "^tau	n	risk_mean	risk_se	overlap_mean	.*	mean_se	risk_gauss_mean	risk_gauss_se	risk_holdout_se_mean	risk_holdout_se_se$"
contains "sgd seeds: measured risk and risk_gauss" "$work/h1/aimdyn-sgd-d24-seeds.tsv" \
    "^seed	tau	n	risk	overlap	.*	mean	risk_gauss	risk_holdout_se$"
contains "sgd summary says how the risk is measured" "$work/h1/aimdyn-sgd-d24.tsv" \
    "^# risk: measured on 2000 held-out samples per seed"
awk -F'\t' '/^#/ { next } $1 == "seed" { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { n++; if ($(c["risk"]) == $(c["risk_gauss"]) || !($(c["risk_holdout_se"]) > 0)) bad = 1 }
    END { exit !(n == 6 && !bad && c["risk_gauss"] && c["risk_holdout_se"]) }' \
    "$work/h1/aimdyn-sgd-d24-seeds.tsv"
check "measured risk is not the formula, with a held-out se" $?
hold h2
for f in sgd-d24 sgd-d24-seeds; do
    grep -v "^# config output.dir" "$work/h1/aimdyn-$f.tsv" >"$work/h1.a"
    grep -v "^# config output.dir" "$work/h2/aimdyn-$f.tsv" >"$work/h2.a"
    cmp -s "$work/h1.a" "$work/h2.a"
    check "sgd $f bit-identical across runs" $?
done
hold h3 --set sgd.holdout=50
grep -v '^#' "$work/h1/aimdyn-sgd-d24-seeds.tsv" >"$work/h1.a"
grep -v '^#' "$work/h3/aimdyn-sgd-d24-seeds.tsv" >"$work/h3.a"
paste "$work/h1.a" "$work/h3.a" | awk -F'\t' 'NR == 1 { n = NF / 2; for (i = 1; i <= n; i++) name[i] = $i; next }
    { for (i = 1; i <= n; i++) { same = $i == $(i + n)
          if (name[i] == "risk" || name[i] == "risk_holdout_se") bad += same; else bad += !same } }
    END { exit !(NR == 7 && !bad) }'
check "sgd.holdout changes the risk and nothing else" $?
expect_exit "sgd.holdout too small" 1 "$exe" sgd --out "$work/h4" --set sgd.holdout=1
contains "sgd.holdout refusal names key and range" "$work/err" "sgd.holdout.*allowed: an integer in 2..1000000"
[ ! -e "$work/h4" ]
check "no output after a refused sgd.holdout" $?
# compare's agreement table and `aimdyn agreement` show both risks
expect_exit "compare with held-out risk" 0 "$exe" compare --out "$work/h5" --d 24 --seeds 2 \
    --set training.horizon=0.01 --set training.points=3 --set training.eta=0.02
contains "agreement: risk row" "$work/h5/aimdyn-agreement.tsv" "^risk	24	0	"
contains "agreement: risk_gauss row" "$work/h5/aimdyn-agreement.tsv" "^risk_gauss	24	0	"
contains "compare warns below 8 seeds" "$work/err" "warning: only 2 seeds: the standard error is estimated from 1 degree of freedom"
contains "agreement file warns below 8 seeds" "$work/h5/aimdyn-agreement.tsv" "^# warning: only 2 seeds: .*use sgd.seeds >= 8"
expect_exit "agreement with held-out risk" 0 "$exe" agreement --sgd "$work/h5/aimdyn-sgd-d24.tsv" \
    --ode "$work/h5/aimdyn-ode.tsv"
contains "agreement prints risk_gauss" "$work/out" " risk_gauss "
# a verdict per row, from the set theory/model.md sec. 9 defines (one d: no law)
awk -F'\t' '/^#/ { next } !h { h = 1; ok = $NF == "verdict"; next }
    { ok = ok && $NF ~ /^(within_3se|above_3se|ode_stopped|exact|no_data)$/; n++ }
    END { exit !(ok && n >= 9) }' "$work/h5/aimdyn-agreement.tsv"
check "agreement file: a verdict column, one d" $?
contains "agreement prints a verdict" "$work/out" " risk  .*  \(within_3se\|above_3se\)$"

# compare --students: one teacher, data and learning rate, three students
st="$(dirname "$0")/../examples/students_he1he2.ini"
expect_exit "--students unknown" 1 "$exe" compare "$st" --students direct,wide --out "$work/st0"
contains "--students names the allowed students" "$work/err" "^aimdyn compare: --students direct,wide: 'wide' unknown; allowed: direct, tied, untied, comma-separated, each at most once$"
expect_exit "--students repeated" 1 "$exe" compare "$st" --students tied,tied --out "$work/st0"
contains "--students repeat named" "$work/err" "'tied' given twice"
expect_exit "--students outside compare" 1 "$exe" ode "$st" --students tied --out "$work/st0"
expect_exit "--students: tied student, raw centring" 1 "$exe" compare "$st" --students direct,tied \
    --set teacher.decomposition=direct --set model.centring=raw --out "$work/st0"
contains "--students names the student and the key" "$work/err" "the tied student: .*model.centring"
[ ! -e "$work/st0" ]
check "--students errors write nothing" $?
expect_exit "compare --students" 0 "$exe" compare "$st" --students direct,tied,untied \
    --out "$work/st1" --d 40 --seeds 2 --set matrix.d=40 --set matrix.replicas=2 \
    --set training.horizon=0.02 --set training.points=3 --set training.eta=0.02
for s in direct tied untied; do
    for f in ode.tsv sgd-d40.tsv agreement.tsv; do
        [ -s "$work/st1/students_he1he2-$s-$f" ]
        check "--students wrote $s $f" $?
    done
    grep -q "^# config model.decomposition = $s\$" "$work/st1/students_he1he2-$s-sgd-d40.tsv"
    check "--students: the $s SGD file is of a $s student" $?
done
[ -s "$work/st1/students_he1he2-students-d40.png" ] # gnuplot: scripts/setup.sh
check "--students: the figure of all students" $?

# plot needs inputs
expect_exit "plot without inputs" 1 "$exe" plot --figure "$work/fig"

# recovery: escape conditions, limit weak recovery, the finite-d start
expect_exit "recovery --help" 0 "$exe" recovery --help
contains "recovery --help usage" "$work/out" "usage: aimdyn recovery"
mkdir -p "$work/rec_bad"
expect_exit "recovery: bad --d" 1 "$exe" recovery --d 4 --out "$work/rec_bad"
contains "recovery --d range" "$work/err" "allowed: an integer from 8 to 20000"
expect_exit "recovery: bad --finite" 1 "$exe" recovery --finite sometimes --out "$work/rec_bad"
contains "recovery --finite values" "$work/err" "allowed: auto, always, never"
mkdir "$work/rec_dash"
expect_exit "recovery: --out -" 1 sh -c 'cd "$1" && "$0" recovery --finite never --out -' \
    "$exe" "$work/rec_dash"
contains "recovery --out - explained" "$work/err" "--out -: the results are several files, not a stream"
[ ! -e "$work/rec_dash/-" ]
check "recovery --out -: no folder '-' made" $?
expect_exit "recovery: bad key" 1 "$exe" recovery --set training.eta=-1 --out "$work/rec_bad"
contains "recovery bad key named" "$work/err" "training.eta"
[ -z "$(ls "$work/rec_bad")" ]
check "recovery errors write nothing" $?
# the default example (He1 + He2/sqrt 2) escapes at once
expect_exit "recovery default" 0 "$exe" recovery --d 100 --d 200 --out "$work/rec"
contains "recovery default verdict" "$work/out" "Verdict: escape"
contains "recovery default tau_wr" "$work/out" "weak recovery (|overlap| >= 0.1) at tau_wr"
grep -q "^escape	escape" "$work/rec/aimdyn-recovery-start.tsv"
check "recovery start file verdict" $?
# the limit's tau_wr is the one `aimdyn ode` writes for the same
# configuration, and n_wr = tau_wr d^2 / eta on every row
expect_exit "recovery: ode of the same configuration" 0 "$exe" ode --out "$work/rec_ode"
twr=$(sed -n 's/^# weak recovery (|overlap| >= 0.1) at tau = //p' "$work/rec_ode/aimdyn-ode.tsv")
awk -F'\t' -v twr="$twr" '!/^#/ && $1 != "d" { n++
        if (($3 - twr) ^ 2 > 1e-10 * twr ^ 2 || ($4 - twr * $1 * $1 / $2) ^ 2 > 1e-10 * $4 ^ 2) bad = 1 }
    END { exit !(n == 2 && !bad && twr > 0) }' "$work/rec/aimdyn-recovery.tsv"
check "recovery tau_wr as ode's, n_wr = tau_wr d^2/eta" $?
[ ! -e "$work/rec/aimdyn-recovery-seeds.tsv" ]
check "recovery: no finite-d runs when the limit recovers" $?
# He2: invariant in the limit; the finite-d seeds escape
expect_exit "recovery he2 finite" 0 "$exe" recovery --set model.activation=he2 \
    --set training.horizon=0.6 --d 16 --d 32 --seeds 2 --out "$work/rec2"
contains "recovery he2 invariant" "$work/out" "Verdict: invariant"
contains "recovery he2 no limit recovery" "$work/out" "Limit ODE: no weak recovery"
contains "recovery he2 finite d" "$work/out" "Finite d: the limit ODE from the initial matrices"
[ "$(grep -vc '^#' "$work/rec2/aimdyn-recovery-seeds.tsv")" -eq 5 ]
check "recovery seeds file: header and 4 rows" $?
sed -n 2p "$work/rec2/aimdyn-recovery.tsv" | grep -q "^# aimdyn"
check "recovery file records the version (after its column line)" $?
grep -q "^d	eta	tau_wr_limit	n_wr_limit	seeds	escaped	tau_wr_median	n_wr_median	n_wr_predicted$" \
    "$work/rec2/aimdyn-recovery.tsv"
check "recovery table columns" $?
expect_exit "recovery he2 rerun" 0 "$exe" recovery --set model.activation=he2 \
    --set training.horizon=0.6 --d 16 --d 32 --seeds 2 --out "$work/rec2b"
for f in recovery recovery-start recovery-seeds; do # all but the output directory
    grep -v "^# config output.dir" "$work/rec2/aimdyn-$f.tsv" >"$work/rec2.a"
    grep -v "^# config output.dir" "$work/rec2b/aimdyn-$f.tsv" >"$work/rec2.b"
    cmp -s "$work/rec2.a" "$work/rec2.b"
    check "recovery $f reproducible" $?
done
expect_exit "recovery --finite never" 0 "$exe" recovery --set model.activation=he2 \
    --finite never --out "$work/rec3"
[ ! -e "$work/rec3/aimdyn-recovery-seeds.tsv" ]
check "recovery --finite never runs no seeds" $?
# the finite-d start is the seeds' SGD matrices: the start overlaps equal
# those `aimdyn sgd` measures at tau = 0, for direct and untied students
for st in direct untied; do
    expect_exit "recovery seeds ($st)" 0 "$exe" recovery --set model.decomposition=$st \
        --set model.activation=he2 --set hierarchy.order=2 --set sgd.seed=7 \
        --set training.horizon=0.01 --set training.points=3 --finite always --d 16 --seeds 3 \
        --out "$work/rec_$st"
    expect_exit "sgd seeds ($st)" 0 "$exe" sgd --set model.decomposition=$st \
        --set model.activation=he2 --set hierarchy.order=2 --set sgd.seed=7 \
        --set training.horizon=0.01 --set training.points=3 --d 16 --seeds 3 \
        --out "$work/rec_$st"
    awk -F'\t' 'FNR == 1 { f++ } /^#/ { next } $1 == "d" || $1 == "seed" { for (i = 1; i <= NF; i++) c[f, $i] = i; next }
        f == 1 { r[$2] = $3 } f == 2 && $(c[2, "tau"]) == 0 { s[$1] = $(c[2, "overlap"]); n++ }
        END { for (k in s) if (!(k in r) || (r[k] - s[k]) ^ 2 > 1e-18) bad = 1; exit !(n == 3 && !bad) }' \
        "$work/rec_$st/aimdyn-recovery-seeds.tsv" "$work/rec_$st/aimdyn-sgd-d16-seeds.tsv"
    check "recovery seeds start as sgd's ($st)" $?
done
# seeds that blow up: exit 3, marked, no median past them
expect_exit "recovery finite blow-up" 3 "$exe" recovery --set model.activation=he2 \
    --set training.eta=0.3 --set training.horizon=0.5 --finite always --d 16 --seeds 3 \
    --out "$work/rec5"
grep -q "	blow-up$" "$work/rec5/aimdyn-recovery-seeds.tsv"
check "recovery seeds file marks blow-ups" $?
contains "recovery says seeds blew up" "$work/out" "blew up before recovering"
# a run without finite-d seeds removes the seeds file of an earlier run
expect_exit "recovery reuses a name" 0 "$exe" recovery --finite never --out "$work/rec5"
[ ! -e "$work/rec5/aimdyn-recovery-seeds.tsv" ]
check "recovery removes a stale seeds file" $?
expect_exit "recovery: bad --seeds" 1 "$exe" recovery --seeds 0 --out "$work/rec_bad"
contains "recovery --seeds range" "$work/err" "--seeds 0: not allowed; allowed: an integer from 1 to 1000"
# raw centring: the limit runs at each d
expect_exit "recovery raw, two d" 0 "$exe" recovery --set model.activation=tanh \
    --set model.centring=raw --set teacher.mean=1 --set training.eta=0.05 --d 16 --d 400 \
    --finite never --out "$work/rec6"
expect_exit "recovery raw, one d" 0 "$exe" recovery --set model.activation=tanh \
    --set model.centring=raw --set teacher.mean=1 --set training.eta=0.05 --d 16 \
    --finite never --out "$work/rec7"
a=$(awk -F'\t' '$1 == 16 { print $3 }' "$work/rec6/aimdyn-recovery.tsv")
b=$(awk -F'\t' '$1 == 16 { print $3 }' "$work/rec7/aimdyn-recovery.tsv")
[ -n "$a" ] && [ "$a" = "$b" ]
check "recovery raw: the d = 16 row is the d = 16 limit" $?
# a blow-up of the limit ODE: exit 3, recorded
expect_exit "recovery blow-up" 3 "$exe" recovery --set model.activation=he3 \
    --set training.eta=0.1 --finite never --out "$work/rec4"
grep -q "^status	blow-up" "$work/rec4/aimdyn-recovery-start.tsv"
check "recovery blow-up recorded" $?

# scaling: weak-recovery samples against d, from hand-made per-seed files
# with known recovery times (|overlap| = 0.1 tau / tau_wr is linear in tau,
# so the interpolated crossing is tau_wr to round-off)
sc="$work/scaling"
mkdir -p "$sc"
sc_seeds() { # FILE D ETA TAU_WR... (one per seed; "never": censored;
    # "nan@T": censored, the overlap NaN from tau = T on, as `aimdyn sgd`
    # writes a blow-up; "nan": NaN from the start)
    f=$1 d=$2 eta=$3
    shift 3
    {
        printf '# aimdyn test\n# command: sgd\n# config training.eta = %s\n' "$eta"
        printf '# config sgd.d = %s\n# sgd: d = %s, seeds 1 .. %d\n' "$d" "$d" $#
        printf 'seed\ttau\tn\trisk\toverlap\n'
        awk -v d="$d" -v eta="$eta" -v list="$*" 'BEGIN {
            n = split(list, tw, " ")
            for (s = 1; s <= n; s++)
                for (i = 0; i <= 100; i++) {
                    tau = i / 100
                    stop = tw[s] == "nan" ? 0 : tw[s] ~ /^nan@/ ? substr(tw[s], 5) + 0 : 2
                    v = tw[s] == "never" || stop < 2 ? 0.05 : 0.1 * tau / tw[s]
                    if (s % 2 == 0) v = -v   # He2 escapes towards -S* as often as +S*
                    printf "%d\t%.17g\t%d\t1\t%s\n", s, tau, tau * d * d / eta,
                        (tau >= stop ? "nan" : sprintf("%.17g", v))
                }
        }'
    } >"$f"
}
sc_col() { # FILE D COLUMN: the value of COLUMN in the row of d
    grep -v '^#' "$1" | awk -F'\t' -v d="$2" -v c="$3" \
        'NR == 1 {for (i = 1; i <= NF; i++) k[$i] = i; next} $1 == d {print $k[c]}'
}
sc_near() { # name, value, expected, tolerance
    awk -v x="$2" -v y="$3" -v t="$4" 'BEGIN {exit !(x != "" && x - y <= t && y - x <= t)}'
    r=$?
    [ $r -ne 0 ] && echo "  $1: got '$2', wanted $3 +- $4"
    check "$1" $r
}
sc_fit() { # FILE LAW KEY: a number of a '# fit LAW: ...' line
    grep "^# fit $2: " "$1" | sed 's/^[^:]*: //' | tr ',' '\n' | sed -n "s/^ *$3 = \([^ ]*\).*/\1/p"
}
# n_wr = 3 d^2 at the median, +-2 % scatter, the same at every d; d = 400
# at twice the eta and twice the tau: n counts samples, so nothing changes
tw="0.294 0.2955 0.297 0.2985 0.3015 0.303 0.3045 0.306"
tw2=$(echo $tw | awk '{for (i = 1; i <= NF; i++) printf "%s%.17g", (i > 1 ? " " : ""), 2 * $i}')
sc_seeds "$sc/a100.tsv" 100 0.1 $tw
sc_seeds "$sc/a200.tsv" 200 0.1 $tw
sc_seeds "$sc/a400.tsv" 400 0.2 $tw2
expect_exit "scaling --help" 0 "$exe" scaling --help
contains "scaling --help usage" "$work/out" "usage: aimdyn scaling"
contains "scaling --help states the rule" "$work/out" "supported"
contains "scaling --help example" "$work/out" "validate/runs_recovery/tied-he2-sgd-d100-seeds.tsv"
expect_exit "scaling of n ~ d^2" 0 "$exe" scaling --out "$sc/o1" --label "synthetic d^2" \
    --sgd "$sc/a400.tsv" --sgd "$sc/a100.tsv" --sgd "$sc/a200.tsv"
cp "$work/out" "$sc/o1.stdout"
t1="$sc/o1/aimdyn-scaling.tsv"
cp "$t1" "$sc/o1.tsv"
contains "scaling TSV header" "$t1" "^d	eta	seeds	recovered	n_horizon	median_n_wr	ci_lo	ci_hi	ci_level	median_tau_wr	n_wr_predicted	rel_gap$"
contains "scaling TSV records the version" "$t1" "^# aimdyn "
contains "scaling TSV records the command" "$t1" "^# command: aimdyn scaling --out"
contains "scaling TSV records the threshold" "$t1" "^# threshold = 0.1$"
contains "scaling TSV records an input" "$t1" "^# sgd $sc/a400.tsv: d = 400, eta = 0.2, seeds = 8"
contains "scaling TSV records a seed" "$t1" "^# seed d = 200, seed = 4: tau_wr = 0.2985"
rows=$(grep -v '^#' "$t1" | awk -F'\t' 'NR > 1 {printf "%s ", $1}')
[ "$rows" = "100 200 400 " ]
check "scaling rows sorted by d (got '$rows')" $?
sc_near "scaling median n at d = 100" "$(sc_col "$t1" 100 median_n_wr)" 30000 1e-6
sc_near "scaling median n at d = 400 uses that file's eta" "$(sc_col "$t1" 400 median_n_wr)" 480000 1e-5
sc_near "scaling median tau at d = 400" "$(sc_col "$t1" 400 median_tau_wr)" 0.6 1e-12
sc_near "scaling CI low = smallest of 8 seeds" "$(sc_col "$t1" 200 ci_lo)" 117600 1e-5
sc_near "scaling CI high = largest of 8 seeds" "$(sc_col "$t1" 200 ci_hi)" 122400 1e-5
sc_near "scaling CI coverage 1 - 2/2^8" "$(sc_col "$t1" 200 ci_level)" 0.9921875 1e-9
sc_near "scaling exponent 2" "$(sc_fit "$t1" "n = c d^a" a)" 2 1e-9
a_ci=$(grep "^# fit n = c d^a: " "$t1" | sed 's/.*a_ci95 = \([^,]*\),.*/\1/')
awk -v l="${a_ci% *}" -v h="${a_ci#* }" 'BEGIN {exit !(l < 2 && h > 2 && h - l > 0.001 && h - l < 0.05)}'
check "scaling exponent interval around 2, narrow (got $a_ci)" $?
sc_near "scaling constant c of d^a" "$(sc_fit "$t1" "n = c d^a" c)" 3 0.001
sc_near "scaling constant c of d^2" "$(sc_fit "$t1" "n = c d^2" c)" 3 0.001
contains "scaling d^2 supported" "$t1" "^# fit n = c d^2: .*supported = yes"
contains "scaling d^2 log d not supported" "$t1" "^# fit n = c d^2 log d: .*supported = no"
# the exponent of d^2 log d: the least-squares slope of ln(d^2 ln d) on
# ln d over the seeds' d (8 seeds at each of 100, 200, 400)
sc_slope=$(awk 'BEGIN {
    for (k = 0; k < 3; k++) {x[k] = log(100 * 2 ^ k); y[k] = 2 * x[k] + log(x[k]); mx += x[k] / 3; my += y[k] / 3}
    for (k = 0; k < 3; k++) {sxy += (x[k] - mx) * (y[k] - my); sxx += (x[k] - mx) ^ 2}
    printf "%.17g", sxy / sxx}')
sc_near "scaling exponent of d^2 log d: its least-squares slope" \
    "$(sc_fit "$t1" "n = c d^2 log d" exponent)" "$sc_slope" 1e-9
awk -v a="$sc_slope" 'BEGIN {exit !(a - (2 + 1 / log(200)) > 1e-4)}'
check "scaling: the slope is not 2 + 1/ln d_geo (got $sc_slope)" $?
contains "scaling stdout names the d^2 law" "$sc/o1.stdout" "n = c d^2 .*supported): yes"
contains "scaling stdout has the runs' label" "$sc/o1.stdout" "runs: synthetic d^2"
expect_exit "scaling again" 0 "$exe" scaling --out "$sc/o1" --label "synthetic d^2" \
    --sgd "$sc/a400.tsv" --sgd "$sc/a100.tsv" --sgd "$sc/a200.tsv"
cmp -s "$t1" "$sc/o1.tsv"
check "scaling output identical across runs" $?
# quotes in --label: the recorded command line quotes them for a shell
# (each ' takes 4 bytes there; 256 of them overflowed a buffer sized for 2)
sc_label=$(awk 'BEGIN {while (n++ < 256) printf "\047"}')
expect_exit "scaling --label with quotes" 0 "$exe" scaling --out "$sc/oq" --label "$sc_label" \
    --sgd "$sc/a100.tsv"
contains "scaling --label with quotes printed" "$work/out" "^runs: $sc_label$"
sc_cmd=$(sed -n 's/^# command: aimdyn //p' "$sc/oq/aimdyn-scaling.tsv")
(eval "set -- $sc_cmd" && [ "$#" -eq 7 ] && [ "$5" = "$sc_label" ])
check "scaling: the recorded command line gives back the label" $?
expect_exit "scaling --threshold 0.05" 0 "$exe" scaling --out "$sc/o2" --threshold 0.05 \
    --sgd "$sc/a100.tsv" --sgd "$sc/a200.tsv"
sc_near "scaling threshold halves the linear crossing" "$(sc_col "$sc/o2/aimdyn-scaling.tsv" 100 median_n_wr)" 15000 1e-6
contains "scaling TSV records --threshold" "$sc/o2/aimdyn-scaling.tsv" "^# threshold = 0.05$"

# n ~ d^2 log d at a fixed eta: tau_wr = 0.05 ln d (the log-law in tau)
for d in 100 200 400; do
    sc_seeds "$sc/b$d.tsv" $d 0.1 $(echo $tw | awk -v d=$d '{for (i = 1; i <= NF; i++) printf "%.17g ", $i / 0.3 * 0.05 * log(d)}')
done
expect_exit "scaling of n ~ d^2 log d" 0 "$exe" scaling --out "$sc/o3" --name logd \
    --sgd "$sc/b100.tsv" --sgd "$sc/b200.tsv" --sgd "$sc/b400.tsv"
t3="$sc/o3/logd-scaling.tsv"
contains "scaling --name" "$work/out" "wrote $t3"
contains "scaling d^2 log d supported" "$t3" "^# fit n = c d^2 log d: .*supported = yes"
contains "scaling d^2 not supported" "$t3" "^# fit n = c d^2: .*supported = no"
sc_near "scaling tau log-law slope B" "$(sc_fit "$t3" "tau_wr = A + B log d" B)" 0.05 1e-9
contains "scaling tau log-law excludes B = 0" "$t3" "B = 0 inside = no"
contains "scaling tau log-law: B = 0 at a fixed eta and tau" "$sc/o2/aimdyn-scaling.tsv" "^# fit tau_wr.*B = 0 inside = yes"
rss=$(sc_fit "$t3" "n = c d^2 log d" rss)
awk -v r="$rss" 'BEGIN {exit !(r < 0.01)}'
check "scaling d^2 log d law fits its own data (RSS $rss)" $?

# censored seeds and the median rule: 4 of 8 recovered, no median; 5 of 8,
# the mean of the 4th and 5th; the interval open above
sc_seeds "$sc/c100.tsv" 100 0.1 0.2 never 0.3 never 0.4 never 0.5 never
sc_seeds "$sc/c200.tsv" 200 0.1 0.2 never 0.3 never 0.4 0.6 0.5 never
expect_exit "scaling with censored seeds" 0 "$exe" scaling --out "$sc/o4" \
    --sgd "$sc/c100.tsv" --sgd "$sc/c200.tsv"
t4="$sc/o4/aimdyn-scaling.tsv"
contains "scaling names the censored seeds" "$work/out" "d = 100: censored (not recovered by n = 1e+05): seeds 2, 4, 6, 8"
contains "scaling says the median is not reached" "$work/out" "d = 100: median not reached by n = 1e+05 (4 of 8"
contains "scaling prints none, not nan" "$work/out" "^   100 .* none "
grep -q -i "nan" "$work/out"
[ $? -ne 0 ]
check "scaling stdout has no NaN" $?
[ "$(sc_col "$t4" 100 median_n_wr)" = nan ] && [ "$(sc_col "$t4" 100 recovered)" = 4 ]
check "scaling TSV: no median with half the seeds censored" $?
sc_near "scaling median of 5 of 8 = mean of 4th and 5th" "$(sc_col "$t4" 200 median_n_wr)" 220000 1e-5
[ "$(sc_col "$t4" 200 ci_hi)" = inf ]
check "scaling interval open above with censored seeds" $?
contains "scaling censored seeds recorded" "$t4" "^# seed d = 200, seed = 2: censored, tau_end = 1, n_end = 400000"
contains "scaling says censored seeds bias the fit" "$work/out" "censored seeds left out"
# a seed stopped early (blow-up) is censored where it stopped, not beyond
# the horizon: below the median of the others, it leaves none
head -n 10 "$sc/a100.tsv" >"$sc/e100.tsv"
grep -v '^#' "$sc/a100.tsv" | awk -F'\t' '$1 != 1' | tail -n +2 >>"$sc/e100.tsv"
expect_exit "scaling with a seed stopped early" 0 "$exe" scaling --out "$sc/o5" --sgd "$sc/e100.tsv"
contains "scaling names the seed stopped early" "$work/out" "seed 1 (blow-up: stopped early, at n = 3000)"
contains "scaling: one d, no fit" "$work/out" "no fit: recovered seeds at 1 d"
contains "scaling TSV: no fit" "$sc/o5/aimdyn-scaling.tsv" "^# fit: none"
contains "scaling: no median below a blow-up" "$work/out" "^   100 .* none (blow-ups) "
[ "$(sc_col "$sc/o5/aimdyn-scaling.tsv" 100 median_n_wr)" = nan ]
check "scaling TSV: no median below a blow-up" $?
# every seed blew up: the recorded training.horizon, not the latest
# blow-up, is where a seed that did not blow up would have stopped
sc_seeds "$sc/b100.tsv" 100 0.1 nan@0.3 nan@0.5
# (`aimdyn sgd` writes no rows past a seed's blow-up)
sed -i -e 's/^# config sgd.d = 100$/# config sgd.d = 100\n# config training.horizon = 1/' \
    -e '/	nan$/d' "$sc/b100.tsv"
expect_exit "scaling: all seeds blew up" 0 "$exe" scaling --out "$sc/o9" --sgd "$sc/b100.tsv"
contains "scaling: the last to blow up is marked too" "$work/out" ", 2 (blow-up: stopped early"
# the overlap NaN from some tau on (as `aimdyn sgd` writes a blow-up): the
# seed is censored at its last finite tau; at d = 100 below the median of
# the other 7 (0.375), at d = 200 above it (the median stands)
for stop in 100:0.095 200:0.605; do
    sc_seeds "$sc/f${stop%:*}.tsv" "${stop%:*}" 0.1 0.2 0.25 0.3 0.35 0.4 0.45 0.5 "nan@${stop#*:}"
done
t7="$sc/o7/aimdyn-scaling.tsv"
expect_exit "scaling with NaN after a blow-up" 0 "$exe" scaling --out "$sc/o7" --sgd "$sc/f100.tsv" --sgd "$sc/f200.tsv"
[ "$(sc_col "$t7" 100 median_n_wr)" = nan ] && [ "$(sc_col "$t7" 100 recovered)" = 7 ]
check "scaling TSV: median below a blow-up not defined" $?
contains "scaling: a NaN seed censored at its last finite tau" "$work/out" "seed 8 (blow-up: stopped early, at n = 9000)"
contains "scaling: median below a blow-up not defined" "$work/out" "^d = 100: median not defined (blow-ups): .* n = 3.75e+04 "
contains "scaling: median below a blow-up printed" "$work/out" "^   100 .* none (blow-ups) "
contains "scaling TSV: median below a blow-up explained" "$t7" "^# median d = 100: not defined (blow-ups)"
contains "scaling TSV: the blown-up seed marked" "$t7" "^# seed d = 100, seed = 8: censored, blow-up (stopped early), tau_end = 0.09, n_end = 9000$"
sc_near "scaling: median above a blow-up" "$(sc_col "$t7" 200 median_n_wr)" 150000 1e-5
[ "$(sc_col "$t7" 200 ci_hi)" = inf ]
check "scaling: interval open above at a blow-up" $?
contains "scaling: open end bounded by the blow-up, not the horizon" "$work/out" "^   200 .*\[8e+04, > 2.4e+05\]"
grep -q -i "nan" "$work/out"
[ $? -ne 0 ]
check "scaling stdout has no NaN with blow-ups" $?

# predictions of `aimdyn recovery`, merged from two files
printf '# aimdyn test\n# command: recovery\nd\tn_wr_predicted\ttau_wr_predicted\n100\t25000\t0.25\n200\t100000\t0.25\n' >"$sc/p1.tsv"
printf '# aimdyn test\nd\tn_wr_predicted\n400\tnan\n800\t1920000\n' >"$sc/p2.tsv"
fig="$sc/fig-scaling"
expect_exit "scaling with predictions and a figure" 0 "$exe" scaling --out "$sc/o6" \
    --sgd "$sc/a100.tsv" --sgd "$sc/a200.tsv" --sgd "$sc/a400.tsv" \
    --predict "$sc/p2.tsv" --predict "$sc/p1.tsv" --figure "$fig" --label "with predictions"
t6="$sc/o6/aimdyn-scaling.tsv"
contains "scaling prints the relative gap" "$work/out" "^   100 .*2.5e+04 .*3e+04 .*0.2$"
contains "scaling prints no escape predicted" "$work/out" "^   400 .*no escape"
contains "scaling prediction without SGD" "$work/out" "^   800 .*no --sgd"
sc_near "scaling TSV relative gap" "$(sc_col "$t6" 200 rel_gap)" 0.2 1e-9
[ "$(sc_col "$t6" 800 seeds)" = 0 ] && [ "$(sc_col "$t6" 800 n_wr_predicted)" = 1920000 ]
check "scaling TSV has the prediction-only d" $?
contains "scaling TSV records the predictions" "$t6" "^# predict $sc/p2.tsv$"
if command -v gnuplot >/dev/null 2>&1; then
    [ -s "$fig.png" ] && [ -s "$fig.svg" ]
    check "scaling figure png and svg" $?
    kept_script_redraws "scaling: the figure's kept script redraws it" "$fig" /
    contains "scaling figure has the fitted exponent" "$fig.svg" "a = 2"
    contains "scaling figure has the predictions" "$fig.svg" "prediction"
    [ -z "$(ls -A "$sc" | grep 'fig-scaling\.[ps][nv]g\.')" ]
    check "scaling figure left no temporary file" $?
else
    contains "scaling warns without gnuplot" "$work/err" "gnuplot not found"
    [ -s "$t6" ]
    check "scaling TSV written without gnuplot" $?
fi

# errors: exit 1, the option and value named, nothing written
se="$sc/none"
expect_exit "scaling without --sgd" 1 "$exe" scaling --out "$se"
contains "scaling without --sgd explained" "$work/err" "no --sgd FILE"
expect_exit "scaling missing file" 1 "$exe" scaling --out "$se" --sgd "$sc/missing.tsv"
contains "scaling missing file named" "$work/err" "$sc/missing.tsv: cannot open"
contains "scaling missing file's option named" "$work/err" "--sgd $sc/missing.tsv: not a readable"
expect_exit "scaling two files at one d" 1 "$exe" scaling --out "$se" --sgd "$sc/a100.tsv" \
    --sgd "$sc/a200.tsv" --sgd "$sc/c100.tsv"
contains "scaling same d names both files" "$work/err" "--sgd $sc/a100.tsv and --sgd $sc/c100.tsv are both at d = 100"
for bad in 0 1.5 -0.1 abc 0.1x; do
    expect_exit "scaling --threshold $bad" 1 "$exe" scaling --out "$se" --sgd "$sc/a100.tsv" --threshold $bad
done
contains "scaling bad threshold explained" "$work/err" "--threshold 0.1x: not allowed; allowed: a number X with 0 < X <= 1"
grep -v overlap "$sc/a100.tsv" | sed 's/\trisk/\trisk_only/' >"$sc/nooverlap.tsv"
sed 's/\toverlap$/\toverlap_mean/' "$sc/a100.tsv" >"$sc/summary.tsv"
expect_exit "scaling file without overlap" 1 "$exe" scaling --out "$se" --sgd "$sc/summary.tsv"
contains "scaling names the missing column" "$work/err" "no column 'overlap'"
grep -v '^# config sgd.d' "$sc/a100.tsv" >"$sc/nod.tsv"
expect_exit "scaling file without sgd.d" 1 "$exe" scaling --out "$se" --sgd "$sc/nod.tsv"
contains "scaling names the missing d" "$work/err" "no '# config sgd.d = ...' line"
sed 's/^# config training.eta = 0.1/# config training.eta = -1/' "$sc/a100.tsv" >"$sc/badeta.tsv"
expect_exit "scaling file with a bad eta" 1 "$exe" scaling --out "$se" --sgd "$sc/badeta.tsv"
contains "scaling bad eta names the key" "$work/err" "training.eta"
awk '{print} /^# config sgd.d = / {print "# config model.activation = sine"}' "$sc/a100.tsv" \
    >"$sc/badkey.tsv"
expect_exit "scaling file with a bad recorded key" 1 "$exe" scaling --out "$se" --sgd "$sc/badkey.tsv"
contains "scaling bad recorded key named" "$work/err" "recorded configuration not usable: # config model.activation = sine: "
awk -F'\t' -v OFS='\t' '!/^#/ && ++row == 2 {$5 = 0.2} {print}' "$sc/a100.tsv" >"$sc/early.tsv"
expect_exit "scaling recovery at tau = 0" 1 "$exe" scaling --out "$se" --sgd "$sc/early.tsv"
contains "scaling recovery at the start explained" "$work/err" "--threshold above the initial overlap"
expect_exit "scaling duplicate predicted d" 1 "$exe" scaling --out "$se" --sgd "$sc/a100.tsv" \
    --predict "$sc/p1.tsv" --predict "$sc/p1.tsv"
contains "scaling duplicate prediction explained" "$work/err" "both predict d = 100"
expect_exit "scaling prediction without its column" 1 "$exe" scaling --out "$se" \
    --sgd "$sc/a100.tsv" --predict "$sc/a200.tsv"
contains "scaling prediction column named" "$work/err" "$sc/a200.tsv: no column 'd'"
contains "scaling prediction's option named" "$work/err" "--predict $sc/a200.tsv: not a readable"
expect_exit "scaling figure in a missing directory" 1 "$exe" scaling --out "$se" \
    --sgd "$sc/a100.tsv" --figure "$sc/nodir/fig"
contains "scaling figure directory explained" "$work/err" "--figure"
expect_exit "scaling stray argument" 1 "$exe" scaling --out "$se" "$sc/a100.tsv"
# overlaps NaN from the start: not a file of `aimdyn sgd`
sc_seeds "$sc/allnan.tsv" 100 0.1 nan nan nan
expect_exit "scaling file with every overlap NaN" 1 "$exe" scaling --out "$se" --sgd "$sc/allnan.tsv"
contains "scaling NaN file explained" "$work/err" "--sgd $sc/allnan.tsv: seed 1: the overlap is NaN from its first row (tau = 0) on"
sc_seeds "$sc/onenan.tsv" 100 0.1 0.2 nan 0.3
expect_exit "scaling seed NaN from the start" 1 "$exe" scaling --out "$se" --sgd "$sc/onenan.tsv"
contains "scaling NaN seed named" "$work/err" "seed 2: the overlap is NaN from its first row"
[ ! -e "$se" ]
check "scaling wrote nothing after errors" $?

# sweep: limit-ODE weak-recovery times over a grid of configurations
# (direct students on a short horizon: every point takes milliseconds)
sw="$work/sweep"
sweep_grid="--vary model.activation=he1,he2 --vary training.eta=0.05,0.1"
sweep_cheap="--set training.horizon=0.05 --set training.points=11"
expect_exit "sweep --help" 0 "$exe" sweep --help
contains "sweep --help usage" "$work/out" "usage: aimdyn sweep"
contains "sweep --help resuming" "$work/out" "^Resuming"
contains "sweep --help example" "$work/out" "aimdyn sweep examples/tied_he2.ini"
contains "sweep --help: He2 escapes at finite d" "$work/out" "finite-d SGD"
contains "sweep --help: exit 3 on a blow-up" "$work/out" "3 no failure, but a point blew up"
expect_exit "sweep: bad value" 1 "$exe" sweep --out "$sw" --vary model.activation=he2,foo
contains "sweep: bad value named" "$work/err" "--vary model.activation=he2,foo: value \"foo\""
contains "sweep: bad value allowed" "$work/err" "allowed: he1 | he2"
expect_exit "sweep: unknown key" 1 "$exe" sweep --out "$sw" --vary training.speed=1,2
contains "sweep: unknown key named" "$work/err" "unknown key \"speed\""
expect_exit "sweep: empty value list" 1 "$exe" sweep --out "$sw" --vary training.eta=
contains "sweep: empty value list explained" "$work/err" "training.eta=: no values"
expect_exit "sweep: empty value" 1 "$exe" sweep --out "$sw" --vary training.eta=0.1,,0.2
contains "sweep: empty value explained" "$work/err" "an empty value"
expect_exit "sweep: repeated value" 1 "$exe" sweep --out "$sw" --vary training.eta=0.1,0.1
expect_exit "sweep: duplicate key" 1 "$exe" sweep --out "$sw" --vary training.eta=0.1 \
    --vary training.eta=0.2
contains "sweep: duplicate key explained" "$work/err" "training.eta is already varied"
expect_exit "sweep: four --vary" 1 "$exe" sweep --out "$sw" --vary training.eta=0.1 \
    --vary training.gamma=0 --vary model.noise=0 --vary student.scale=0.25
contains "sweep: four --vary explained" "$work/err" "allowed: 1 to 3 varied keys"
expect_exit "sweep: no --vary" 1 "$exe" sweep --out "$sw"
expect_exit "sweep: output key" 1 "$exe" sweep --out "$sw" --vary output.name=a,b
for jobs in 0 65 x 1.5; do
    expect_exit "sweep: --jobs $jobs" 1 "$exe" sweep --out "$sw" --jobs $jobs $sweep_grid
    contains "sweep: --jobs $jobs explained" "$work/err" "--jobs $jobs: not allowed; allowed: an integer from 1 to 64"
done
expect_exit "sweep: invalid point" 1 "$exe" sweep --out "$sw" --vary training.eta=0.1,0.2 \
    --vary model.decomposition=direct,tied
contains "sweep: invalid point named" "$work/err" "point 2/4 (training.eta=0.1, model.decomposition=tied)"
contains "sweep: invalid point explained" "$work/err" "symmetric teacher"
[ ! -e "$sw" ]
check "sweep: nothing written after usage errors" $?

# a 2 x 2 sweep on one worker
expect_exit "sweep 2x2, --jobs 1" 0 "$exe" sweep --out "$sw" --jobs 1 $sweep_cheap $sweep_grid
t="$sw/aimdyn-sweep.tsv"
contains "sweep: table header" "$t" "^model.activation	training.eta	status	tau_wr	n_wr	tau_end	overlap_end	risk_end	message$"
rows=$(grep -vc '^#' "$t")
[ "$rows" -eq 5 ]
check "sweep: header and 4 rows (got $rows lines)" $?
contains "sweep: rows in --vary order, he1 recovers" "$t" "^he1	0.05	recovered	0.012[0-9]*	99[0-9][0-9]\.[0-9]*	0.05	"
contains "sweep: he2 stays at the uninformative start of the limit ODE" "$t" "^he2	0.1	not-by-horizon	nan	nan	0.05	0	"
contains "sweep: varied keys recorded" "$t" "^# vary: training.eta = 0.05,0.1$"
contains "sweep: base configuration recorded" "$t" "^# config training.horizon = 0.05$"
contains "sweep: summary counts" "$work/out" "^4 points (4 computed, 0 kept from an earlier run), 1 jobs"
contains "sweep: progress on stderr" "$work/err" "^sweep: 4/4 points ("
contains "sweep: summary prints none, not nan" "$work/out" "^he2  *0.1  *not-by-horizon  *none  *none  *0.05$"
grep -q -i nan "$work/out"
[ $? -ne 0 ]
check "sweep: stdout has no NaN" $?
contains "sweep: wall time on stdout" "$work/out" "wall time .* s, ODE time .* s summed"
grep -r -q -i "seconds" "$sw"
[ $? -ne 0 ]
check "sweep: no timing in any file" $?
files=$(ls "$sw/aimdyn-sweep.d" | grep -c '^point-000[1-4]\.tsv$')
[ "$files" -eq 4 ] && [ -z "$(ls -A "$sw/aimdyn-sweep.d" | grep -v '^point-000[1-4]\.\(tsv\|json\)$')" ] &&
    [ "$(ls "$sw/aimdyn-sweep.d" | grep -c '^point-000[1-4]\.json$')" -eq 4 ]
check "sweep: one point file and its sidecar each, nothing else (got $files)" $?
contains "sweep: point file has the point's configuration" "$sw/aimdyn-sweep.d/point-0004.tsv" \
    "^# config model.activation = he2$"
if command -v gnuplot >/dev/null 2>&1; then
    [ -s "$sw/aimdyn-sweep.png" ] && [ -s "$sw/aimdyn-sweep.svg" ]
    check "sweep: heatmap png and svg" $?
    kept_script_redraws "sweep: the heatmap's kept script redraws it" "$sw/aimdyn-sweep" /
    contains "sweep: heatmap marks cells not recovered by the horizon" "$sw/aimdyn-sweep.svg" "not by 0.05"
fi
cp "$t" "$work/sweep-jobs1.tsv"
cp -R "$sw/aimdyn-sweep.d" "$work/sweep-jobs1.d"

# the same sweep on two workers: the same files, bit for bit
rm -rf "$sw/aimdyn-sweep.d"
expect_exit "sweep 2x2, --jobs 2" 0 "$exe" sweep --out "$sw" --jobs 2 $sweep_cheap $sweep_grid
cmp -s "$t" "$work/sweep-jobs1.tsv"
check "sweep: --jobs 1 and --jobs 2 give the same table" $?
same_tree "sweep: --jobs 1 and --jobs 2 give the same point files" "$sw/aimdyn-sweep.d" \
    "$work/sweep-jobs1.d"

# resume: only the missing point is computed, the table is the same
rm "$sw/aimdyn-sweep.d/point-0003.tsv"
expect_exit "sweep resumed" 0 "$exe" sweep --out "$sw" $sweep_cheap $sweep_grid
kept=$(grep -c "kept from an earlier run$" "$work/err")
computed=$(grep -c "^sweep: [0-9]/4 points" "$work/err")
[ "$kept" -eq 3 ] && [ "$computed" -eq 1 ]
check "sweep: 3 points kept, 1 computed (got $kept, $computed)" $?
contains "sweep: kept point named" "$work/err" "^sweep: point 1/4 (model.activation=he1, training.eta=0.05): kept from an earlier run$"
contains "sweep: the missing point recomputed" "$work/err" "^sweep: 4/4 points (model.activation=he2, training.eta=0.05): "
cmp -s "$t" "$work/sweep-jobs1.tsv"
check "sweep: resumed table identical" $?

# a point file of another aimdyn version: computed again, not kept
p2="$sw/aimdyn-sweep.d/point-0002.tsv"
sed 's/^# aimdyn .*/# aimdyn 0.0.0-other/' "$work/sweep-jobs1.d/point-0002.tsv" >"$p2"
expect_exit "sweep: a point of another version" 0 "$exe" sweep --out "$sw" $sweep_cheap $sweep_grid
contains "sweep: another version said" "$work/err" "^sweep: point 2/4 (model.activation=he1, training.eta=0.1): written by aimdyn 0.0.0-other, this is aimdyn .*: computed again$"
kept=$(grep -c "kept from an earlier run$" "$work/err")
[ "$kept" -eq 3 ]
check "sweep: 3 points of this version kept (got $kept)" $?
cmp -s "$p2" "$work/sweep-jobs1.d/point-0002.tsv" && cmp -s "$t" "$work/sweep-jobs1.tsv"
check "sweep: the point of another version rewritten, the table the same" $?

# a point file of another configuration: an error, nothing changed
cp "$t" "$work/sweep-before.tsv"
expect_exit "sweep: other configuration in the directory" 1 "$exe" sweep --out "$sw" \
    --set training.horizon=0.06 --set training.points=11 $sweep_grid
contains "sweep: other configuration explained" "$work/err" "records a different configuration"
contains "sweep: other configuration names the key" "$work/err" "training.horizon = 0.05, here training.horizon = 0.06"
contains "sweep: other configuration says what to do" "$work/err" "remove the directory"
cmp -s "$t" "$work/sweep-before.tsv"
check "sweep: table untouched after the error" $?

# a blow-up is a result, recorded: exit 3
expect_exit "sweep with a blow-up" 3 "$exe" sweep --out "$work/sweep2" --vary training.eta=0.1,0.5 \
    --set model.activation=he2 --set ode.blowup=1000 $sweep_cheap
contains "sweep: blow-up row" "$work/sweep2/aimdyn-sweep.tsv" "^0.5	blow-up	nan	nan	.*	blow-up at tau = [0-9.e-]*: |omega_ss| reached 1000"
contains "sweep: blow-up said" "$work/err" "1 point blew up (status blow-up, recorded in the table)"
# the default example with He3: blows up at the larger rate
expect_exit "sweep: He3 blows up at eta = 0.1" 3 "$exe" sweep --out "$work/sweep3" \
    --vary model.activation=he3 --vary training.eta=0.02,0.1
contains "sweep: He3 at eta = 0.02 runs to the horizon" "$work/sweep3/aimdyn-sweep.tsv" "^he3	0.02	not-by-horizon	"
contains "sweep: He3 at eta = 0.1 blows up" "$work/sweep3/aimdyn-sweep.tsv" "^he3	0.1	blow-up	"

# a point whose integration fails (its start is beyond the blow-up
# level): exit 2, the table written; a rerun computes it again
sweep_fail="--set ode.blowup=0.1 --set training.horizon=0.01 --set training.points=11"
expect_exit "sweep with a failed point" 2 "$exe" sweep --out "$work/sweep4" $sweep_fail \
    --vary model.noise=0
contains "sweep: failed row" "$work/sweep4/aimdyn-sweep.tsv" "^0	failed	nan	.*beyond the blow-up level"
contains "sweep: failed point said" "$work/err" "1 point could not be integrated"
expect_exit "sweep: a failed point again" 2 "$exe" sweep --out "$work/sweep4" $sweep_fail \
    --vary model.noise=0
contains "sweep: a failed point is computed again" "$work/err" "^sweep: point 1/1 (model.noise=0): failed in an earlier run (the initial omega_ss.*): computed again$"
grep -q "kept from an earlier run" "$work/err"
[ $? -ne 0 ]
check "sweep: a failed point is not kept" $?

# a heatmap that gnuplot cannot put in place: exit 2, the table kept
if command -v gnuplot >/dev/null 2>&1; then
    mkdir -p "$work/sweep5/aimdyn-sweep.png"
    expect_exit "sweep: heatmap failure" 2 "$exe" sweep --out "$work/sweep5" $sweep_cheap \
        --vary training.eta=0.05,0.1
    contains "sweep: heatmap failure said" "$work/err" "the heatmap could not be drawn"
    [ -s "$work/sweep5/aimdyn-sweep.tsv" ]
    check "sweep: table kept after a heatmap failure" $?
fi

# result files read back (agreement, plot, scaling, a sweep's resume) go
# through one reader with limits and checks (src/results/tsv_read.c, src/io/lines.c)
rb="$work/readback"
expect_exit "readback: ode" 0 "$exe" ode --out "$rb" --d 40 --set training.points=11
expect_exit "readback: sgd" 0 "$exe" sgd --out "$rb" --d 40 --seeds 2 --set training.points=11
ode_f="$rb/aimdyn-ode.tsv" sgd_f="$rb/aimdyn-sgd-d40.tsv"
expect_exit "readback: agreement of sound files" 0 "$exe" agreement --sgd "$sgd_f" --ode "$ode_f"
expect_exit "readback: plot of sound files" 0 "$exe" plot --sgd "$sgd_f" --ode "$ode_f" \
    --figure "$rb/fig"
rb_bad() { # name, problem text, file: agreement (as --ode) and plot refuse it, exit 1
    expect_exit "readback: agreement refuses $1" 1 timeout 60 "$exe" agreement --sgd "$sgd_f" \
        --ode "$3"
    contains "readback: agreement names $1" "$work/err" "$2"
    expect_exit "readback: plot refuses $1" 1 timeout 60 "$exe" plot --ode "$3" \
        --figure "$rb/bad"
    contains "readback: plot names $1" "$work/err" "$2"
}
rb_bad "a device" "/dev/zero: not a regular file" /dev/zero
mkfifo "$rb/fifo"
rb_bad "a FIFO" "fifo: not a regular file" "$rb/fifo"
rb_bad "a read error" "read error" /proc/self/mem
rb_edit() { # COLUMN VALUE: the ODE file with the 6th data row's COLUMN set to VALUE
    awk -F'\t' -v OFS='\t' -v c="$1" -v v="$2" '/^#/ {print; next} !h++ {print; next}
        ++r == 6 {$c = v} {print}' "$ode_f" >"$rb/edited.tsv"
}
rb_edit 1 inf
rb_bad "an infinite tau" "column tau: \"inf\": not a finite tau" "$rb/edited.tsv"
rb_edit 1 0.01
rb_bad "a decreasing tau" "column tau: \"0.01\": not above the tau of the row before" "$rb/edited.tsv"
rb_edit 5 1.5
rb_bad "an overlap above 1" "column overlap: \"1.5\": a teacher overlap outside \[-1, 1\]" "$rb/edited.tsv"
rb_edit 5 0.1x
rb_bad "a cell that is no number" "column overlap: \"0.1x\": not a number" "$rb/edited.tsv"
rb_drop() { # COLUMN: the ODE file without that column
    awk -F'\t' -v OFS='\t' -v c="$1" '/^#/ {print; next}
        {s = ""; for (i = 1; i <= NF; i++) if (i != c) s = s (s == "" ? "" : OFS) $i; print s}' \
        "$ode_f" >"$rb/dropped.tsv"
}
rb_drop 8
expect_exit "readback: agreement refuses a missing column" 1 "$exe" agreement --sgd "$sgd_f" \
    --ode "$rb/dropped.tsv"
contains "readback: agreement names the missing column" "$work/err" "no column 'omega_st'"
grep -q "inf" "$work/out"
[ $? -ne 0 ]
check "readback: no infinite gap printed for a missing column" $?
rb_drop 5
rb_bad "a missing column" "no column 'overlap'" "$rb/dropped.tsv"
head -c -1 "$ode_f" >"$rb/cut.tsv"
rb_bad "a last line cut short" "the last line has no line break" "$rb/cut.tsv"
{ cat "$ode_f"; printf '0.5\t1'; head -c 2000000 /dev/zero | tr '\0' 1; printf '\n'; } >"$rb/long.tsv"
rb_bad "a line of 2 MB" "line longer than 1048576 bytes" "$rb/long.tsv"
truncate -s 300M "$rb/huge.tsv" # sparse: no disk used
rb_bad "a file of 300 MB" "huge.tsv: 314572800 bytes; allowed: .* of at most 268435456 bytes" \
    "$rb/huge.tsv"
{ cat "$ode_f"; printf '\0\n'; } >"$rb/nul.tsv"
rb_bad "a NUL byte" "a NUL byte" "$rb/nul.tsv"
{ cat "$ode_f"; echo; } >"$rb/blank.tsv"
rb_bad "an empty line" "an empty line" "$rb/blank.tsv"
sed 's/^tau\tn\tt\trisk/tau\tn\ttau\trisk/' "$ode_f" >"$rb/twice.tsv"
rb_bad "a repeated column name" "a repeated column name \"tau\"" "$rb/twice.tsv"
# two names that differ in the file but read as one: both quoted as written
sed 's/^tau\tn\tt\trisk/tau\tt(\tt\trisk/' "$ode_f" >"$rb/alike.tsv"
rb_bad "two names read as one" "the column names \"t(\" and \"t\" both read as \"t\"" "$rb/alike.tsv"
# the SGD summary is checked as well: standard errors >= 0
awk -F'\t' -v OFS='\t' '/^#/ {print; next} !h++ {print; next} ++r == 6 {$4 = "-1"} {print}' \
    "$sgd_f" >"$rb/negse.tsv"
expect_exit "readback: agreement refuses a negative standard error" 1 "$exe" agreement \
    --sgd "$rb/negse.tsv" --ode "$ode_f"
contains "readback: negative standard error named" "$work/err" "column risk_se: \"-1\": a negative standard error"
# seeds are integers: above 2^53 they stay distinct (as doubles, 8 seeds
# 90071992547409901 .. 08 fell on 1 or 2 values)
sed 's/^\([1-8]\)\t/9007199254740990\1\t/' "$sc/a100.tsv" >"$sc/bigseeds.tsv"
expect_exit "readback: scaling with seeds above 2^53" 0 "$exe" scaling --out "$sc/o10" \
    --sgd "$sc/bigseeds.tsv"
[ "$(sc_col "$sc/o10/aimdyn-scaling.tsv" 100 seeds)" = 8 ]
check "readback: 8 seeds above 2^53 stay 8" $?
contains "readback: a seed above 2^53 written exactly" "$sc/o10/aimdyn-scaling.tsv" "^# seed d = 100, seed = 90071992547409904: tau_wr"
sed 's/^3\t/3.0\t/' "$sc/a100.tsv" >"$sc/realseed.tsv"
expect_exit "readback: scaling refuses a seed that is no integer" 1 "$exe" scaling --out "$se" \
    --sgd "$sc/realseed.tsv"
contains "readback: a seed that is no integer named" "$work/err" "column seed: \"3.0\": not an unsigned 64-bit integer"
expect_exit "readback: scaling refuses a device" 1 timeout 60 "$exe" scaling --out "$se" \
    --sgd /dev/zero
contains "readback: scaling names the device" "$work/err" "/dev/zero: not a regular file"
# a sweep's point files: complete (the final line break) and consistent
rs="$work/sweep-readback"
expect_exit "readback: sweep" 0 "$exe" sweep --out "$rs" $sweep_cheap --vary training.eta=0.05,0.1
pf="$rs/aimdyn-sweep.d/point-0001.tsv"
cp "$pf" "$rb/point.tsv"
head -c -1 "$rb/point.tsv" >"$pf"
expect_exit "readback: sweep refuses a point file cut short" 1 "$exe" sweep --out "$rs" \
    $sweep_cheap --vary training.eta=0.05,0.1
contains "readback: the cut point file explained" "$work/err" "point-0001.tsv:[0-9]*: the last line has no line break"
sed 's/^recovered\t/not-by-horizon\t/' "$rb/point.tsv" >"$pf"
expect_exit "readback: sweep refuses inconsistent values" 1 "$exe" sweep --out "$rs" \
    $sweep_cheap --vary training.eta=0.05,0.1
contains "readback: the inconsistent point explained" "$work/err" "the status, tau_wr and n_wr disagree"
awk -F'\t' -v OFS='\t' '/^recovered/ {$3 = 2 * $3} {print}' "$rb/point.tsv" >"$pf"
expect_exit "readback: sweep refuses a wrong n_wr" 1 "$exe" sweep --out "$rs" \
    $sweep_cheap --vary training.eta=0.05,0.1
contains "readback: the wrong n_wr explained" "$work/err" "n_wr is not tau_wr sgd.d^2 / training.eta"
# a point file that is not a regular file (a FIFO would block the reader)
rm -f "$pf" && mkfifo "$pf"
expect_exit "readback: sweep refuses a point file that is a FIFO" 1 "$exe" sweep --out "$rs" \
    $sweep_cheap --vary training.eta=0.05,0.1
contains "readback: the FIFO point file named" "$work/err" "point-0001.tsv: not a regular file"
rm -f "$pf"
cp "$rb/point.tsv" "$pf"
expect_exit "readback: sweep resumes from sound point files" 0 "$exe" sweep --out "$rs" \
    $sweep_cheap --vary training.eta=0.05,0.1
kept=$(grep -c "kept from an earlier run$" "$work/err")
[ "$kept" -eq 2 ]
check "readback: both sound points kept (got $kept)" $?

# configuration: keys trimmed before they are checked
st="$work/sweep-trim"
expect_exit "sweep: an output key with a space" 1 "$exe" sweep --out "$st" --vary ' output.dir=a,b'
contains "sweep: an output key with a space named" "$work/err" "output.dir does not change the dynamics"
expect_exit "sweep: a key twice, once with spaces" 1 "$exe" sweep --out "$st" \
    --vary training.eta=0.1 --vary ' training.eta =0.2'
contains "sweep: a key twice explained" "$work/err" "training.eta is already varied"
[ ! -e "$st" ]
check "sweep: nothing written after the trimmed-key errors" $?
# a configuration file that is a FIFO: refused, not waited on
expect_exit "configuration that is a FIFO" 1 timeout 60 "$exe" ode "$rb/fifo" --out "$out"
contains "configuration FIFO explained" "$work/err" "not a regular file"
# a journal that is a FIFO (the list of an interrupted set's renames,
# read back by every run into its folder): refused, not waited on
mkdir -p "$work/jfifo" && mkfifo "$work/jfifo/.aimdyn.journal"
expect_exit "journal that is a FIFO" 1 timeout 60 "$exe" ode --out "$work/jfifo" \
    --set training.points=3
contains "journal FIFO named" "$work/err" "jfifo/.aimdyn.journal: not a regular file"
# SGD needs a step between grid points (eta = 1e6 took none, and exited 0)
expect_exit "sgd with fewer steps than grid points" 1 "$exe" sgd --set training.eta=1e6 \
    --out "$out"
contains "sgd steps explained" "$work/err" "training.eta = 1e+06, training.horizon = 0.3, training.points = 31 at d = 200: online SGD takes 0 steps"
expect_exit "compare with fewer steps than grid points at one --d" 1 "$exe" compare --d 8 \
    --d 200 --set training.eta=30 --out "$out"
contains "compare steps name the d" "$work/err" "at d = 8:"
expect_exit "sgd with seeds that wrap around 2^64" 1 "$exe" sgd --seeds 2 \
    --set sgd.seed=18446744073709551615 --out "$out"
contains "seeds that wrap explained" "$work/err" "wrap around to 0"
[ ! -e "$out" ]
check "nothing written after the step and seed errors" $?
# the hierarchy's size is counted before it is built: up to the untied
# order-7 size (25245 equations) it is built, from 3000 equations on
# with a note first (here the unusable output.dir ends the run before
# the build); above it refused, also for compare's --order list
unusable="$work/file/sub"
: >"$work/file"
expect_exit "untied order 7 allowed, noted" 1 "$exe" ode "$work/untied.ini" --order 7 \
    --out "$unusable"
contains "order 7 noted with its size and cost" "$work/err" "note: hierarchy.order = 7: the untied hierarchy of this order has 25245 equations, built before the run starts; for scale"
contains "order 7 not refused" "$work/err" "output.dir = '$unusable' is unusable"
expect_exit "untied order 5 not noted" 1 "$exe" ode "$work/untied.ini" --order 5 --out "$unusable"
! grep -q "note:" "$work/err"
check "order 5 (1047 equations) not noted" $?
expect_exit "untied hierarchy above the size bound" 1 timeout 60 "$exe" hierarchy \
    "$work/untied.ini" --order 8
contains "hierarchy size bound gives the size" "$work/err" "hierarchy.order = 8: the untied hierarchy of this order has 130826 equations; allowed: at most 25245 equations (the untied order-7 hierarchy), hierarchy.order <= 7"
expect_exit "untied ode above the size bound" 1 timeout 60 "$exe" ode "$work/untied.ini" \
    --order 10 --out "$out"
contains "ode size bound gives the size" "$work/err" "3718874 equations"
expect_exit "compare --order above the size bound" 1 timeout 60 "$exe" compare \
    "$work/untied.ini" --order 2 --order 8 --out "$out"
contains "compare --order bound named" "$work/err" "hierarchy.order = 8: the untied hierarchy"

# stdout write errors: exit 2 with a message, for every command
for args in "keys" "--help" "ode --help" "hierarchy $work/tied2.ini --order 2" \
    "agreement --sgd $sgd_f --ode $ode_f" "ode --out $rb/full --d 16 --set training.points=3"; do
    expect_exit "stdout full: $args" 2 sh -c "\"\$0\" $args >/dev/full" "$exe"
    contains "stdout full: $args explained" "$work/err" "cannot write to standard output: No space left on device"
done

# a run that never recovers says so, not "nan": the tied order-1 hierarchy
# tracks no student-teacher moment; SGD (d = 64, overlap ~ 1/64 at the
# start) over a horizon a tenth of its weak-recovery time stays below
expect_exit "ode that never recovers" 0 "$exe" ode "$work/tied2.ini" --order 1 \
    --set hierarchy.tol=0 --set training.horizon=0.005 --out "$work/nr" --name nr
contains "ode file: weak recovery not reached" "$work/nr/nr-ode.tsv" \
    "^# weak recovery (|overlap| >= 0.1) at tau = not reached$"
expect_exit "sgd that never recovers" 0 "$exe" sgd --d 64 --seeds 2 --out "$work/nr" --name nrs \
    --set training.horizon=0.001 --set training.points=3
contains "sgd file: median not defined" "$work/nr/nrs-sgd-d64.tsv" "median tau = not defined;"
contains "sgd stdout: median not defined" "$work/out" "median tau = not defined"
! grep -q "tau = nan" "$work/nr/nr-ode.tsv" "$work/nr/nrs-sgd-d64.tsv" "$work/out"
check "no 'tau = nan' for a run that never recovers" $?

# conventions: help COMMAND, --set with a space, one --d for sgd, --out -
expect_exit "help" 0 "$exe" help
contains "help is the usage" "$work/out" "usage: aimdyn COMMAND"
expect_exit "help COMMAND" 0 "$exe" help sweep
contains "help sweep is sweep --help" "$work/out" "usage: aimdyn sweep"
expect_exit "help of an unknown command" 1 "$exe" help nosuch
contains "help of an unknown command names the commands" "$work/err" "unknown command 'nosuch'; allowed: ode"
expect_exit "--set with a space" 1 "$exe" ode --set training.eta 0.1 --out "$work/sp"
contains "--set with a space: the hint" "$work/err" "--set training.eta: no '='; allowed: one argument KEY=VALUE (e.g. --set training.eta=0.1"
expect_exit "sgd --d twice" 1 "$exe" sgd --d 16 --d 24 --out "$work/dd"
contains "sgd --d twice: one dimension" "$work/err" "--d given twice: sgd runs at one dimension"
[ ! -e "$work/dd" ]
check "sgd --d twice: nothing written" $?
expect_exit "--out -" 1 sh -c 'cd "$1" && "$0" ode --out - --set training.points=3' "$exe" "$work"
contains "--out -: a folder" "$work/err" "--out -: the results are several files, not a stream"
[ ! -e "$work/-" ]
check "--out -: no folder named -" $?

# configuration "-": standard input, read once (a sweep loads it per point)
ex="$(dirname "$0")/../examples/direct_he1he2_T2.ini" # not the defaults
short="--set training.horizon=0.02 --set training.points=3"
"$exe" ode - --out "$work/in1" $short <"$ex" >/dev/null 2>"$work/err"
check "ode -: reads the configuration from standard input" $?
"$exe" ode "$ex" --out "$work/in2" $short >/dev/null 2>&1
grep -v '^# config output.dir' "$work/in1/direct_he1he2_T2-ode.tsv" >"$work/in1.txt"
grep -v '^# config output.dir' "$work/in2/direct_he1he2_T2-ode.tsv" >"$work/in2.txt"
cmp -s "$work/in1.txt" "$work/in2.txt"
check "ode -: the file of the same configuration read from its path" $?
printf '[training]\neta = x\n' | "$exe" ode - --out "$work/in3" >/dev/null 2>"$work/err"
[ $? -eq 1 ] && grep -q "standard input:2: training.eta" "$work/err" && [ ! -e "$work/in3" ]
check "ode -: an error names standard input and the line" $?
head -c 1100000 /dev/zero | tr '\0' ';' | "$exe" ode - --out "$work/in4" >/dev/null 2>"$work/err"
[ $? -eq 1 ] && grep -q "standard input: more than 1048576 bytes" "$work/err"
check "ode -: standard input bounded like a file" $?
"$exe" sweep - --vary training.eta=0.05,0.1 --out "$work/in5" $short --quiet <"$ex" >/dev/null 2>&1 &&
    "$exe" sweep "$ex" --vary training.eta=0.05,0.1 --out "$work/in6" $short --quiet >/dev/null 2>&1
check "sweep -: runs" $?
grep -v '^# config output.dir' "$work/in5/direct_he1he2_T2-sweep.tsv" >"$work/in5.txt"
grep -v '^# config output.dir' "$work/in6/direct_he1he2_T2-sweep.tsv" >"$work/in6.txt"
cmp -s "$work/in5.txt" "$work/in6.txt"
check "sweep -: every point has the configuration of standard input" $?

# an option that sets one value, given twice, is refused (not the last silently kept)
expect_exit "--seeds twice" 1 "$exe" sgd --seeds 2 --seeds 3 --d 20 --out "$work/tw1"
contains "--seeds twice names both values" "$work/err" "seeds given twice (2, then 3); allowed: once"
[ ! -e "$work/tw1" ]
check "--seeds twice: no output" $?
expect_exit "--name twice" 1 "$exe" ode --name a --name b --out "$work/tw2"
contains "--name twice" "$work/err" "name given twice (a, then b)"
expect_exit "--figure twice" 1 "$exe" plot --ode x.tsv --figure a --figure b
contains "--figure twice" "$work/err" "figure given twice"
expect_exit "--set repeats, the last for a key wins" 0 "$exe" ode --out "$work/tw3" $short \
    --set training.eta=0.3 --set training.eta=0.2
contains "--set repeated: the last value recorded" "$work/tw3/aimdyn-ode.tsv" "^# config training.eta = 0.2$"

# the informed start (student.overlap): range, reach and families refused
# with the key named, nothing written
expect_exit "student.overlap out of range" 1 "$exe" ode --set student.overlap=1 --out "$work/ov1"
contains "student.overlap range named" "$work/err" "student.overlap"
contains "student.overlap range allowed" "$work/err" "\[0, 1)"
expect_exit "student.overlap beyond a symmetric student's reach" 1 "$exe" ode \
    --set student.symmetric=true --set student.overlap=0.8 --out "$work/ov1"
contains "student.overlap reach named" "$work/err" "student.overlap = 0.8 is above 0.707107"
expect_exit "student.overlap with a tied student and a direct teacher" 1 "$exe" sgd \
    --set model.decomposition=tied --set teacher.symmetric=true --set student.overlap=0.3 \
    --out "$work/ov1"
contains "student.overlap family named" "$work/err" "tied student has an informed start with a tied"
[ ! -e "$work/ov1" ]
check "no output after a refused student.overlap" $?
expect_exit "student.overlap listed by keys" 0 "$exe" keys
contains "keys lists student.overlap" "$work/out" "student.overlap"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
