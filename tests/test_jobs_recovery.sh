#!/bin/sh
# recovery's finite-d seeds on worker processes (--jobs): the same files,
# bit for bit, for every number of workers; each seed kept as it finishes
# (DIR/.NAME-recovery-dD.seeds), an interrupted run resumed by rerunning
# it, a seed file of another configuration refused (also of another
# output.recovery_threshold, which decides tau_wr: a sweep's kept points
# too), one of another version computed again.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
examples="$(dirname "$0")/../examples"

# a sweep point kept from a run at another weak-recovery threshold is
# refused, not taken (its tau_wr is that of the other threshold)
sweep="--vary model.activation=he1,he2 --set training.horizon=0.05 --set training.points=11"
expect_exit "sweep" 0 "$exe" sweep $sweep --jobs 1 --out "$work/sw"
expect_exit "sweep: kept points of another threshold" 1 "$exe" sweep $sweep --jobs 1 \
    --out "$work/sw" --set output.recovery_threshold=0.02
contains "sweep: another threshold named" "$work/err" "there output.recovery_threshold = 0.1, here output.recovery_threshold = 0.02"

# bad --jobs
for jobs in 0 65 x; do
    expect_exit "recovery --jobs $jobs" 1 "$exe" recovery --jobs $jobs --out "$work/bad"
    contains "recovery --jobs $jobs explained" "$work/err" "--jobs $jobs: not allowed; allowed: an integer from 1 to 64"
done
[ ! -e "$work/bad" ]
check "bad --jobs: nothing written" $?
expect_exit "recovery --help" 0 "$exe" recovery --help
contains "recovery --help: the BLAS thread policy" "$work/out" "one BLAS thread"
# scaling computes no seed; its help says where they are computed, and how
expect_exit "scaling --help" 0 "$exe" scaling --help
contains "scaling --help: the BLAS thread policy of the seeds" "$work/out" "aimdyn sgd --jobs N. (worker processes with one BLAS"

# the same files for 1, 2 and 3 workers, no seed folder left: a direct
# student (invariant start: the finite-d seeds run by default) at two d,
# and a tied one (--finite always)
runs() { # tag, exit status, recovery arguments...
    tag=$1 status=$2
    shift 2
    for jobs in 1 2 3; do
        expect_exit "$tag --jobs $jobs" $status "$exe" recovery "$@" --jobs $jobs --out "$work/r"
        ls -A "$work/r" | grep -q seeds$
        check "$tag --jobs $jobs: the seed folders removed" $((1 - $?))
        rm -f "$work/r"/.*.lock
        mv "$work/r" "$work/$tag$jobs"
        cp "$work/out" "$work/$tag$jobs.out"
    done
    same_tree "$tag: --jobs 2 writes what --jobs 1 does" "$work/${tag}1" "$work/${tag}2"
    same_tree "$tag: --jobs 3 writes what --jobs 1 does" "$work/${tag}1" "$work/${tag}3"
    cmp -s "$work/${tag}1.out" "$work/${tag}3.out"
    check "$tag: --jobs 3 prints what --jobs 1 does" $?
}
runs direct 0 "$examples/direct_he2.ini" --d 40 --d 60 --seeds 4
contains "direct: finite-d seeds computed" "$work/direct1/direct_he2-recovery-seeds.tsv" "^60	4	"
# (exit 3: its seeds' order-3 hierarchies stop after recovering, recorded)
runs tied 3 "$examples/tied_he2.ini" --d 48 --seeds 3 --finite always
contains "tied: finite-d seeds computed" "$work/tied1/tied_he2-recovery-seeds.tsv" "^48	3	"
# seeds that fail (their start beyond the blow-up level), marked with their
# reason and kept through the seed files (exit 3: recorded)
runs failing 3 --d 8 --finite always --seeds 8 --set ode.blowup=0.27 \
    --set training.horizon=0.05 --set training.points=6
contains "failing: a failed seed's reason" "$work/failing1/aimdyn-recovery-seeds.tsv" "^# d = 8, seed 1 failed: the initial omega_ss = "
grep -q '	failed$' "$work/failing1/aimdyn-recovery-seeds.tsv" &&
    grep -q '	recovered$\|	not-by-horizon$' "$work/failing1/aimdyn-recovery-seeds.tsv"
check "failing: failed seeds marked, the others kept" $?

# interrupted after its seeds finished (the result file cannot be
# written: a directory in its place), then rerun: the finished seeds are
# taken from the seed folder, the files those of an uninterrupted run (in
# the same directory: the files record it)
args="$examples/direct_he2.ini --d 40 --d 60 --seeds 4 --jobs 2"
out="$work/r"
mkdir -p "$out/direct_he2-recovery.tsv"
expect_exit "recovery: files not writable" 2 "$exe" recovery $args --out "$out"
rmdir "$out/direct_he2-recovery.tsv"
seeds="$out/.direct_he2-recovery-d40.seeds"
[ "$(ls "$seeds" | grep -c '^seed-')" -eq 4 ] && [ ! -e "$out/direct_he2-recovery-seeds.tsv" ]
check "recovery interrupted: the seeds kept, no result file" $?
cp -R "$seeds" "$work/kept-seeds"
rm "$seeds/seed-2.tsv" "$out/.direct_he2-recovery-d60.seeds/seed-1.tsv"
expect_exit "recovery rerun" 0 "$exe" recovery $args --out "$out"
contains "recovery rerun: the resumed seeds said" "$work/err" "recovery d=40: 3 of 4 seeds resumed from"
contains "recovery rerun: the missing seed computed" "$work/err" "recovery: d = 40, seed 2:"
[ "$(grep -c '^recovery: d = [0-9]*, seed' "$work/err")" -eq 2 ]
check "recovery rerun: only the two missing seeds computed" $?
contains "recovery rerun: one seed left at d = 40" "$work/err" "aimdyn recovery: d = 40: 1/1 seeds"
[ ! -e "$seeds" ] && [ ! -e "$out/.direct_he2-recovery-d60.seeds" ]
check "recovery rerun: the seed folders removed" $?
rm -f "$out"/.*.lock
same_tree "recovery rerun: the files of an uninterrupted run" "$work/direct1" "$out"

# a seed file of another configuration is refused, nothing written;
# another weak-recovery threshold is another configuration (tau_wr)
for set in training.eta=0.05 output.recovery_threshold=0.2; do
    rm -rf "$out"
    mkdir -p "$out"
    cp -R "$work/kept-seeds" "$seeds"
    expect_exit "recovery: a seed of another configuration ($set)" 2 "$exe" recovery $args \
        --out "$out" --set $set
    contains "another configuration ($set): named" "$work/err" "was written by a run of another configuration (there ${set%=*} = [0-9.]*, here ${set%=*} = ${set#*=}); remove the folder"
    [ ! -e "$out/direct_he2-recovery.tsv" ]
    check "another configuration ($set): nothing written" $?
done

# one of another version is computed again
rm -rf "$out"
mkdir -p "$out"
cp -R "$work/kept-seeds" "$seeds"
sed 's/^# aimdyn .*/# aimdyn 0.0.0-other/' "$work/kept-seeds/seed-3.tsv" >"$seeds/seed-3.tsv"
expect_exit "recovery: a seed of another version" 0 "$exe" recovery $args --out "$out"
contains "another version: computed again" "$work/err" "was written by aimdyn 0.0.0-other, this is aimdyn .*: seed computed again"
rm -f "$out"/.*.lock
same_tree "another version: the files of an uninterrupted run" "$work/direct1" "$out"

# a seed file that is not one (a row too many) is refused, nothing
# written: its digest no longer matches (src/cli/seedfile.h)
rm -rf "$out"
mkdir -p "$out"
cp -R "$work/kept-seeds" "$seeds"
tail -n 1 "$seeds/seed-4.tsv" >>"$seeds/seed-4.tsv"
expect_exit "recovery: a malformed seed file" 2 "$exe" recovery $args --out "$out"
contains "malformed seed file: explained" "$work/err" "seed-4.tsv: its contents do not match its digest"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
