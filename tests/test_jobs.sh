#!/bin/sh
# sgd and compare on worker processes (--jobs): the same files, bit for
# bit, for every number of workers; each seed kept as it finishes
# (DIR/.NAME-sgd-dD.seeds), a killed run resumed by rerunning it, a seed
# file of another configuration refused, one of another version
# computed again.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

# bad --jobs
for jobs in 0 65 x; do
    expect_exit "sgd --jobs $jobs" 1 "$exe" sgd --jobs $jobs --out "$work/bad"
    contains "sgd --jobs $jobs explained" "$work/err" "--jobs $jobs: not allowed; allowed: an integer from 1 to 64"
done
expect_exit "ode --jobs" 1 "$exe" ode --jobs 2 --out "$work/bad"
contains "ode --jobs: not for ode" "$work/err" "does not apply"
[ ! -e "$work/bad" ]
check "bad --jobs: nothing written" $?

# sgd: the same files for 1, 2 and 3 workers, no seed folder left
small="--d 40 --seeds 4"
out="$work/sgd"
for jobs in 1 2 3; do
    expect_exit "sgd --jobs $jobs" 0 "$exe" sgd $small --jobs $jobs --out "$out"
    [ ! -e "$out/.aimdyn-sgd-d40.seeds" ]
    check "sgd --jobs $jobs: the seed folder removed" $?
    contains "sgd --jobs $jobs: seeds reported" "$work/err" "d = 40: 4/4 seeds, 100 % of steps"
    rm -f "$out"/.*.lock
    mv "$out" "$work/sgd-jobs$jobs"
done
same_files "sgd: --jobs 2 writes what --jobs 1 does" "$work/sgd-jobs1" "$work/sgd-jobs2"
same_files "sgd: --jobs 3 writes what --jobs 1 does" "$work/sgd-jobs1" "$work/sgd-jobs3"

# an untied student with raw indices: its moments too
untied="$(dirname "$0")/../examples/untied_raw_mean.ini $small --set training.grid_start=0.002 --set training.points=16"
for jobs in 1 3; do
    expect_exit "untied raw sgd --jobs $jobs" 0 "$exe" sgd $untied --jobs $jobs --out "$work/u"
    rm -f "$work/u"/.*.lock
    mv "$work/u" "$work/u$jobs"
done
contains "untied raw sgd: moments measured" "$work/u1/untied_raw_mean-sgd-d40-seeds.tsv" "m_KttT"
same_files "untied raw sgd: --jobs 3 writes what --jobs 1 does" "$work/u1" "$work/u3"

# compare: ODE, SGD, agreement and figures alike
for jobs in 1 2; do
    expect_exit "compare --jobs $jobs" 0 "$exe" compare $small --set training.horizon=0.5 \
        --jobs $jobs --out "$work/c"
    rm -f "$work/c"/.*.lock
    mv "$work/c" "$work/c$jobs"
done
same_files "compare: --jobs 2 writes what --jobs 1 does" "$work/c1" "$work/c2"

# killed (SIGKILL, every process of the run) once a seed has finished,
# then rerun: the finished seeds are taken from the seed folder, the
# files those of a run that was not interrupted. The moment is the run's
# own event (AIMDYN_TEST_HOOK, docs/testing.md): polling for the first
# seed file and then killing raced the run's end on a fast machine
long="--d 80 --seeds 3 --jobs 1"
out="$work/k"
expect_exit "sgd uninterrupted" 0 "$exe" sgd $long --out "$out"
rm -f "$out"/.*.lock
mv "$out" "$work/k-ref"
seeds="$out/.aimdyn-sgd-d80.seeds"
expect_exit "sgd killed once its first seed is kept" 137 setsid -w env \
    AIMDYN_TEST_HOOK='seed-done#1=KILL@group' "$exe" sgd $long --out "$out"
kept=$(ls "$seeds" | grep -c '^seed-')
[ "$kept" -ge 1 ] && [ ! -e "$out/aimdyn-sgd-d80.tsv" ]
check "sgd killed: a finished seed kept, no result file" $?
cp -R "$seeds" "$work/kept-seeds"
expect_exit "sgd rerun after kill -9" 0 "$exe" sgd $long --out "$out"
contains "sgd rerun: the resumed seeds said" "$work/err" "sgd d=80: $kept of 3 seeds resumed from"
[ ! -e "$seeds" ]
check "sgd rerun: the seed folder removed" $?
rm -f "$out"/.*.lock
same_files "sgd rerun: the files of an uninterrupted run" "$work/k-ref" "$out"
# with --quiet the resumed seeds are not said (a note), the files the same
rm -rf "$out"
mkdir -p "$out"
cp -R "$work/kept-seeds" "$seeds"
expect_exit "sgd rerun --quiet" 0 "$exe" sgd $long --quiet --out "$out"
[ ! -s "$work/err" ]
check "sgd rerun --quiet: the resumed seeds not said" $?
rm -f "$out"/.*.lock
same_files "sgd rerun --quiet: the files of an uninterrupted run" "$work/k-ref" "$out"

# a seed file of another configuration is refused, nothing written
rm -rf "$out"
mkdir -p "$out"
cp -R "$work/kept-seeds" "$seeds"
expect_exit "sgd: a seed of another configuration" 2 "$exe" sgd $long --out "$out" \
    --set training.eta=0.04
contains "another configuration: named" "$work/err" "was written by a run of another configuration (there training.eta = 0.1, here training.eta = 0.04); remove the folder"
[ ! -e "$out/aimdyn-sgd-d80.tsv" ]
check "another configuration: nothing written" $?

# one of another version is computed again
first=$(ls "$seeds" | grep '^seed-' | head -n 1)
sed 's/^# aimdyn .*/# aimdyn 0.0.0-other/' "$work/kept-seeds/$first" >"$seeds/$first"
expect_exit "sgd: a seed of another version" 0 "$exe" sgd $long --out "$out"
contains "another version: computed again" "$work/err" "was written by aimdyn 0.0.0-other, this is aimdyn .*: seed computed again"
rm -f "$out"/.*.lock
same_files "another version: the files of an uninterrupted run" "$work/k-ref" "$out"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
