#!/bin/sh
# Sizes checked before anything is allocated, and the messages of
# refusals that will repeat (issue 32, items 5 and 6): each case is
# refused as a configuration error (exit 1) with the numbers, before a
# file or folder is written; the machine's memory is pinned with
# AIMDYN_MEMORY_GB so that the cases do not depend on the machine. Also
# the notes on a saved state of another aimdyn version or configuration.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
examples="$(dirname "$0")/../examples"
tied="$examples/tied_he2.ini"

refused() { # name, expected text, aimdyn arguments... (exit 1, nothing written)
    name=$1 text=$2
    shift 2
    rm -rf "$work/o"
    # a bound for a size that is not checked: the run would compute (or
    # allocate) for minutes instead of failing the check at once
    expect_exit "$name: refused" 1 timeout 120 "$exe" "$@" --out "$work/o"
    contains "$name: the numbers" "$work/err" "$text"
    [ ! -e "$work/o" ]
    check "$name: nothing written" $?
    ! grep -q "rerun" "$work/err"
    check "$name: no rerun advised (it would be refused again)" $?
}

# a small run in a smaller memory, first: where sizes are not checked it
# runs (and the cases below would allocate tens of GB), so stop there
export AIMDYN_MEMORY_GB=0.001
refused "sgd --d 16 in 1 MB" "aimdyn sgd: d = 16 (sgd.d, --d) with sgd.holdout = 2000, model.tokens = 2 needs 0.841 MB per SGD worker (x 2 workers, --jobs and sgd.seeds) = 1.68 MB; this machine has 1 MB (AIMDYN_MEMORY_GB)" \
    sgd --d 16 --seeds 2 --jobs 2
if [ "$failures" -ne 0 ]; then
    echo "sizes are not checked before allocation: stopping before the cases that would allocate"
    exit 1
fi

# --d 20000: S and S* (6.4 GB), 2000 held-out samples (0.64 GB) and a
# checkpoint's copy while it is read back, per worker
export AIMDYN_MEMORY_GB=16
refused "sgd --d 20000 on 2 workers" "aimdyn sgd: d = 20000 (sgd.d, --d) with sgd.holdout = 2000, model.tokens = 2 needs 20 GB per SGD worker (x 2 workers, --jobs and sgd.seeds) = 39.9 GB; this machine has 16 GB (AIMDYN_MEMORY_GB); allowed: at most 16 GB in all: a smaller d, sgd.holdout or student.rho, or fewer --jobs" \
    sgd --d 20000 --jobs 2
refused "compare --d 20000" "aimdyn compare: d = 20000 (sgd.d, --d) .* needs 20 GB per SGD worker (x 1 worker" \
    compare --d 16 --d 20000 --jobs 1
# sgd.holdout = 1e6 at d = 20000: 320 GB of held-out samples
refused "sgd.holdout = 1e6" "needs 339 GB per SGD worker (x 1 worker, --jobs and sgd.seeds) = 339 GB; this machine has 16 GB" \
    sgd --d 20000 --set sgd.holdout=1000000 --jobs 1
# tied student.rho: 1e6 is out of the key's range (p would not be an
# int at d = 20000); 1e4 at d = 400 passes the BLAS lengths (d p = 1.6e9)
# but not the memory; 1e5 at d = 400 passes neither
refused "tied student.rho = 1e6" "student.rho = \"1e6\": out of range; allowed: a real number in (0, 1e5\]" \
    sgd "$tied" --set student.rho=1e6
refused "tied student.rho = 1e4" "d = 400 (sgd.d, --d) with sgd.holdout = 2000, model.tokens = 2 and student.rho needs 54.9 GB per SGD worker" \
    sgd "$tied" --set student.rho=1e4 --jobs 1
refused "tied student.rho = 1e5" "aimdyn sgd: student.rho = 100000 at d = 400 gives p = 40000000 columns: d p = 1.6e+10 and sgd.block x T x p = 5.12e+09 must be at most 2^31 - 1 = 2147483647 (BLAS lengths); allowed: student.rho <= 1.342e+04 at this d" \
    sgd "$tied" --set student.rho=1e5
# the matrix limit process: matrix.d x matrix.d matrices per replica
export AIMDYN_MEMORY_GB=1
refused "ode.method = matrix, matrix.d = 4000" "aimdyn ode: the matrix limit process at matrix.d = 4000 with student.rho needs 2.3 GB per replica (x 4 at a time: matrix.replicas, --threads) = 9.22 GB; this machine has 1 GB (AIMDYN_MEMORY_GB)" \
    ode "$tied" --set ode.method=matrix --set matrix.d=4000 --threads 4
# a hierarchy that may hand over to the process (hierarchy.beyond =
# matrix, the default) needs it to fit from the start; with beyond = stop
# it runs
refused "the hand-over at matrix.d = 4000" "aimdyn ode: the matrix limit process (the hand-over, hierarchy.beyond = matrix) at matrix.d = 4000 with student.rho needs 2.3 GB per replica (x 4 at a time: matrix.replicas, --threads) = 9.22 GB; this machine has 1 GB (AIMDYN_MEMORY_GB); allowed: at most 1 GB in all: a smaller matrix.d or student.rho, fewer --threads or --jobs, or hierarchy.beyond = stop" \
    ode "$tied" --set matrix.d=4000 --threads 4
# a sweep's points, each on its own worker (--jobs), and recovery's
# finite-d starts (the matrices SGD would start from, per worker)
refused "sweep of matrix processes at matrix.d = 4000" "aimdyn sweep: point 1/2 (training.eta=0.05): the matrix limit process at matrix.d = 4000 with student.rho needs 2.3 GB per replica (x 1 at a time: matrix.replicas, --threads; x 2 runs at once: --jobs) = 4.61 GB; this machine has 1 GB" \
    sweep "$tied" --set ode.method=matrix --set matrix.d=4000 --vary training.eta=0.05,0.1 --jobs 2
refused "recovery's finite-d starts at d = 20000" "aimdyn recovery: a finite-d start at d = 20000 (--d) needs 6.48 GB per seed (x 2 workers, --jobs and --seeds) = 13 GB; this machine has 1 GB (AIMDYN_MEMORY_GB); allowed: at most 1 GB in all: a smaller d or student.rho, or fewer --jobs" \
    recovery --d 20000 --finite always --jobs 2
# a hierarchy's start measured on SGD seed sgd.seed (hierarchy.start =
# seed) draws the matrices at d
refused "ode, hierarchy.start = seed at d = 20000" "aimdyn ode: a finite-d start at d = 20000 (--d) with student.rho needs 9.68 GB per seed (x 1 worker, --jobs and --seeds) = 9.68 GB; this machine has 1 GB" \
    ode "$tied" --set hierarchy.start=seed --set sgd.d=20000 --set hierarchy.beyond=stop
expect_exit "no hand-over (hierarchy.beyond = stop): runs" 0 "$exe" ode "$tied" --set matrix.d=4000 \
    --threads 4 --set hierarchy.beyond=stop --set training.horizon=0.01 --set training.points=3 \
    --out "$work/stop"
unset AIMDYN_MEMORY_GB

# item 6: tied student.rho = 1e308 failed inside an SGD worker with "p =
# 2147483647", named compare and advised a rerun
refused "tied student.rho = 1e308" "aimdyn sgd: --set student.rho=1e308: student.rho = \"1e308\": out of range; allowed: a real number in (0, 1e5\] (p = round(rho d) columns: an integer at every d up to sgd.d's 20000)" \
    sgd "$tied" --set student.rho=1e308
! grep -q "compare\|2147483647" "$work/err"
check "tied student.rho = 1e308: no worker's message" $?
# training.horizon = 4.9e-324 gave CVODE's "tstop is behind current t"
refused "training.horizon = 4.9e-324" "aimdyn ode: --set training.horizon=4.9e-324: training.horizon = \"4.9e-324\": out of range; allowed: a real number >= 1e-100 (below about 1e-150 CVODE's step arithmetic underflows)" \
    ode --set training.horizon=4.9e-324
! grep -q "CVODE failed\|CV_ILL_INPUT" "$work/err"
check "training.horizon = 4.9e-324: not CVODE's error" $?
refused "training.grid_start = 1e-200" "training.grid_start = \"1e-200\": out of range; allowed: a real number >= 1e-100" \
    ode --set training.grid=log --set training.grid_start=1e-200
expect_exit "training.horizon = 1e-100: the smallest runs" 0 "$exe" ode --set training.horizon=1e-100 --out "$work/h"

# a bad AIMDYN_MEMORY_GB is named
rm -rf "$work/o"
AIMDYN_MEMORY_GB=lots expect_exit "AIMDYN_MEMORY_GB = lots" 1 "$exe" sgd --d 16 --out "$work/o"
contains "AIMDYN_MEMORY_GB = lots: named" "$work/err" "AIMDYN_MEMORY_GB = 'lots': not a number of gigabytes; allowed: a real number > 0"

# a saved state of another aimdyn version: a note, and the run as from
# the state itself
short="--d 16 --set training.horizon=0.05 --set training.points=6"
expect_exit "sgd --save-state" 0 "$exe" sgd $short --seeds 1 --save-state 0.05 --out "$work/st"
state="$work/st/aimdyn-sgd-d16-seed1-tau0.05.state"
sed '2s/^# aimdyn .*/# aimdyn 0.0.0-other/' "$state" >"$work/other.state"
expect_exit "ode --start: this version's state" 0 "$exe" ode $short --start "$state" --out "$work/s1"
! grep -q "note: training.start_file" "$work/err"
check "ode --start: no note for this version's state" $?
expect_exit "ode --start: another version's state" 0 "$exe" ode $short --start "$work/other.state" --out "$work/s2"
contains "ode --start: another version noted" "$work/err" "aimdyn ode: note: training.start_file = '$work/other.state' was saved by aimdyn 0.0.0-other, this is aimdyn .*: its matrices are read as they are"
cmp -s "$work/s1/aimdyn-ode.tsv" "$work/s2/aimdyn-ode.tsv" ||
    [ "$(grep -v '^# config training.start' "$work/s1/aimdyn-ode.tsv" | grep -v '^# config output.dir')" = "$(grep -v '^# config training.start' "$work/s2/aimdyn-ode.tsv" | grep -v '^# config output.dir')" ]
check "ode --start: another version's state gives the same rows" $?
expect_exit "sgd --start: another version's state" 0 "$exe" sgd $short --seeds 1 --start "$work/other.state" --out "$work/s3"
contains "sgd --start: another version noted" "$work/err" "aimdyn sgd: note: training.start_file = .* was saved by aimdyn 0.0.0-other"

# a saved state of another model, teacher or learning rate: a note naming
# each such key with both values; the horizon, grid and output differ
# from the saving run's by design and are not noted
expect_exit "ode --start: another learning rate" 0 "$exe" ode $short --start "$state" \
    --set training.eta=0.05 --set training.points=11 --out "$work/s4"
contains "ode --start: another learning rate noted" "$work/err" \
    "aimdyn ode: note: training.start_file = '$state' was saved by a run of another model, teacher or learning rate (training.eta = 0.1 there, 0.05 here): its matrices are used as they are"
expect_exit "ode --start: another activation" 0 "$exe" ode $short --start "$state" \
    --set model.activation=he2 --out "$work/s5"
contains "ode --start: another activation noted" "$work/err" \
    "(model.activation = hermite there, he2 here; model.hermite = 0 1 0.7071067811865476 there, 0 0 1 here)"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
