#!/bin/sh
# build/kernel_accuracy at a state of an ODE file (what
# validate/bench/kernel_tolerance.sh relies on): the configuration from the
# file's "# config" lines and the state from its row, the teacher's order
# parameters from its family, rebuild the run's states, so the larger of
# the estimates it makes at the first and the last row is the one the file
# records in its "# kernels:" line (made at the first and the last state
# evaluated; tied and direct students, row softmax); bad arguments are
# refused with the value and what is allowed; --rules sets the rules of an
# elementwise map against one another.
# Usage: test_kernel_accuracy.sh AIMDYN KERNEL_ACCURACY
set -u
exe="$1"
accuracy="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/checks.sh"
root="$(dirname "$0")/.."

# the estimate of a "# kernels:" line
recorded_estimate() {
    sed -n 's/^# kernels: .*kernel error \([^ ]*\) at the start.*/\1/p' "$1"
}

short="--set training.horizon=0.02 --set training.points=3 --set ode.qmc_points=1024"
for student in tied direct; do
    case $student in
    tied) cfg="$root/examples/tied_softmax_T4.ini"
          extra="--set model.tokens=2 --set hierarchy.order=2" ;;
    direct) cfg="$root/examples/direct_softmax_T4.ini"; extra="--set model.tokens=3" ;;
    esac
    # shellcheck disable=SC2086 # lists of options
    expect_exit "$student ode" 0 "$exe" ode "$cfg" --out "$work" --name "$student" $short $extra
    file="$work/$student-ode.tsv"
    expect_exit "$student: kernel_accuracy at the first row" 0 "$accuracy" --reference 4096 \
        "$file" first 1024
    cp "$work/out" "$work/$student.acc"
    expect_exit "$student: kernel_accuracy at the last row" 0 "$accuracy" --reference 4096 \
        "$file" last 1024
    contains "$student: the last row's tau" "$work/out" "at tau = 0.02 "
    recorded=$(recorded_estimate "$file")
    made=$(cat "$work/$student.acc" "$work/out" | awk '$1 == 1024 && $2 > m { m = $2 } END { print m }')
    # the file rounds to 2 significant digits, kernel_accuracy to 3: equal
    # within half a unit of the second digit of the first and of the third
    # of the second
    awk -v a="${recorded:-nan}" -v b="${made:-nan}" 'function unit(x, k) {
            return 10 ^ (int(log(x) / log(10) + 100) - 100 - k) }
        BEGIN { exit !(a > 0 && b > 0 && a - b <= 0.5 * unit(a, 1) + 0.5 * unit(b, 2) &&
                       b - a <= 0.5 * unit(a, 1) + 0.5 * unit(b, 2)) }'
    r=$?
    [ $r -ne 0 ] && echo "  $student: recorded estimate '$recorded', kernel_accuracy '$made'"
    check "$student: the file's estimate, the larger at its first and last state" $r
done

expect_exit "ROW not in the file" 1 "$accuracy" "$work/tied-ode.tsv" 0.5 1024
contains "ROW not in the file explained" "$work/err" \
    'ROW = "0.5" is not a row of .*; allowed: first, last or a tau of the file'
expect_exit "bad point count" 1 "$accuracy" --reference 4096 "$work/tied-ode.tsv" first 12x
contains "bad point count explained" "$work/err" 'POINTS = "12x"; allowed: a point count'
expect_exit "bad reference" 1 "$accuracy" --reference 0 "$work/tied-ode.tsv" first 1024
contains "bad reference explained" "$work/err" '\-\-reference "0"; allowed: a point count'
expect_exit "not an ODE file" 1 "$accuracy" "$cfg" first 1024
expect_exit "a Gauss-Hermite run" 0 "$exe" ode "$root/examples/tied_he2.ini" --out "$work" \
    --name he2 --set training.horizon=0.001 --set training.points=2
expect_exit "kernel_accuracy on a Gauss-Hermite run" 1 "$accuracy" --reference 4096 \
    "$work/he2-ode.tsv" first 1024
contains "Gauss-Hermite explained" "$work/err" "only the quasi-random rule"

# --rules: the rules of an elementwise map against one another at a state
# of a raw relu run (its reference the closed forms, its auto row their
# own, at gap 0); softmax is refused
expect_exit "a raw relu run" 0 "$exe" ode --out "$work" --name relu \
    --set model.activation=relu --set model.centring=raw --set training.horizon=0.02 \
    --set training.points=3
expect_exit "kernel_accuracy --rules" 0 "$accuracy" --rules "$work/relu-ode.tsv" last
contains "--rules: the closed forms are the reference" "$work/out" "reference: the closed forms"
contains "--rules: the raw means are read" "$work/out" "means [0-9.e-]* 0\b"
contains "--rules: auto is the reference" "$work/out" "^auto  *[0-9.e-]*  *0  *0  *0  *0$"
contains "--rules: the quasi-random rule's row" "$work/out" "^generic "
expect_exit "--rules on softmax" 1 "$accuracy" --rules "$work/tied-ode.tsv" last
contains "--rules on softmax explained" "$work/err" "allowed with --rules: elementwise"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
