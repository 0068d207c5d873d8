#!/bin/sh
# recovery's finite-d seeds on worker processes (--jobs): the same files,
# bit for bit, for every number of workers; each seed kept as it finishes
# (DIR/.NAME-recovery-dD.seeds), an interrupted run resumed by rerunning
# it, a seed file of another configuration refused (also of another
# output.recovery_threshold, which decides tau_wr: a sweep's kept points
# too), one of another version computed again.
set -u
exe="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/checks.sh"
export OPENBLAS_NUM_THREADS=1
examples="$(dirname "$0")/../examples"

same_files() { # name, directory a, directory b: the same file names and bytes
    r=0
    [ "$(ls -A "$2")" = "$(ls -A "$3")" ] || r=1
    for f in "$2"/*; do
        cmp -s "$f" "$3/$(basename "$f")" || r=1
    done
    check "$1" $r
}

# a sweep point kept from a run at another weak-recovery threshold is
# refused, not taken (its tau_wr is that of the other threshold)
sweep="--vary model.activation=he1,he2 --set training.horizon=0.05 --set training.points=11"
expect_exit "sweep" 0 "$exe" sweep $sweep --jobs 1 --out "$work/sw"
expect_exit "sweep: kept points of another threshold" 1 "$exe" sweep $sweep --jobs 1 \
    --out "$work/sw" --set output.recovery_threshold=0.02
contains "sweep: another threshold named" "$work/err" "there output.recovery_threshold = 0.1, here output.recovery_threshold = 0.02"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
