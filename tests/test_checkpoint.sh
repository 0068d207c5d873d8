#!/bin/sh
# Checkpoints inside an SGD seed (DIR/.NAME-sgd-dD.seeds/seed-K.ckpt):
# runs killed with SIGKILL (the whole process group, as a power loss
# would) at chosen grid points, or while a checkpoint is being written
# (the test hook AIMDYN_TEST_HOOK, docs/testing.md: the moment reached by
# the run's own event, on a fast machine or a loaded one),
# and rerun until they finish write the files of an uninterrupted run,
# bit for bit, for direct, tied, untied centred and untied raw students;
# SIGTERM and SIGINT stop a run cleanly; a checkpoint of another
# configuration, a cut or damaged one are refused, one of another
# version is not used.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
ex="$(dirname "$0")/../examples"

killed_at() { # name, hook rule, stderr file, arguments: a run killed by
    # SIGKILL, with its workers (setsid: a process group of its own, killed
    # whole), at the event the rule names
    name=$1 rule=$2 log=$3
    shift 3
    setsid -w env AIMDYN_TEST_HOOK="$rule" "$exe" "$@" >/dev/null 2>"$log" </dev/null
    st=$?
    [ $st -eq 137 ]
    r=$?
    [ $r -ne 0 ] && echo "  $name: exit $st, wanted 137 (SIGKILL at $rule): $(cat "$log")"
    check "$name: killed at $rule" $r
}

# a checkpoint at every grid point (output.checkpoint = 0), small d,
# many points: several checkpoints per seed
grid="--d 40 --seeds 2 --jobs 2 --set training.points=60 --set output.checkpoint=0 --set training.horizon=3"
n=0
for student in direct tied untied untied_raw; do
    case $student in
    direct) args="$grid" stem=aimdyn ;;
    tied) args="$ex/tied_he2.ini $grid --set training.horizon=1.5" stem=tied_he2 ;;
    untied) args="$ex/untied_fig3.ini $grid --set training.horizon=0.3 \
                  --set training.grid_start=0.002" stem=untied_fig3 ;;
    untied_raw) args="$ex/untied_raw_mean.ini $grid --set training.horizon=0.3 \
                      --set training.grid_start=0.002" stem=untied_raw_mean ;;
    esac
    out="$work/$student"
    # shellcheck disable=SC2086
    expect_exit "$student: uninterrupted" 0 "$exe" sgd $args --out "$out"
    rm -f "$out"/.*.lock
    mv "$out" "$work/$student-ref"
    # killed three times, after grid points 10, 30 and 50 of seed 1 (each
    # run resumes it from the last one's checkpoint, so each point is
    # reached; seed 2, on the other worker, goes as far as it gets)
    for k in 10 30 50; do
        # shellcheck disable=SC2086
        killed_at "$student: run $k" "sgd-point:seed=1:k=$k=KILL@group" \
            "$work/$student-kill$k" sgd $args --out "$out"
    done
    # shellcheck disable=SC2086
    expect_exit "$student: rerun after three kill -9" 0 "$exe" sgd $args --out "$out"
    cat "$work/$student"-kill* "$work/err" >"$work/$student-all"
    contains "$student: continued from a checkpoint" "$work/$student-all" \
        "seed 1 continued from its checkpoint at grid point 10 of 60"
    [ ! -e "$out/.$stem-sgd-d40.seeds" ]
    check "$student: the seed folder removed" $?
    rm -f "$out"/.*.lock
    same_files "$student: killed three times, the files of an uninterrupted run" \
        "$work/$student-ref" "$out"
    rm -rf "$out"
    n=$((n + 1))
done

# killed while a checkpoint is being written (its temporary file left
# beside the last whole checkpoint): inside a worker's 3rd checkpoint
# write, then, in the rerun, inside a worker's 5th
out="$work/direct" # the reference's output.dir
seeds="$out/.aimdyn-sgd-d40.seeds"
caught=0
for nth in 3 5; do
    # shellcheck disable=SC2086
    killed_at "mid-checkpoint $nth" "checkpoint-write#$nth=KILL@group" "$work/mid-kill" \
        sgd $grid --out "$out"
    if ls -A "$seeds" 2>/dev/null | grep -q '^\.seed-.*\.ckpt\.......$' &&
        ls "$seeds" | grep -q '^seed-.*\.ckpt$'; then
        caught=$((caught + 1))
        # kept for the tests below: a whole checkpoint beside the cut one
        [ -e "$work/mid-kept" ] || cp -R "$seeds" "$work/mid-kept"
    fi
done
[ $caught -eq 2 ]
check "killed while writing a checkpoint, a whole one beside it (twice: $caught)" $?
# shellcheck disable=SC2086
expect_exit "rerun after kills mid-checkpoint" 0 "$exe" sgd $grid --out "$out"
rm -f "$out"/.*.lock
same_files "killed mid-checkpoint: the files of an uninterrupted run" "$work/direct-ref" "$out"

# killed after a seed's file is kept, before its checkpoint is removed
# (both in the seed folder): the rerun takes the seed file, removes the
# superseded checkpoint, and the seed folder goes at the end
rm -rf "$out"
killed_at "seed file kept" "seed-kept#1=KILL@group" "$work/kept-kill" sgd $grid --out "$out"
both=$(ls "$seeds" 2>/dev/null | sed -n 's/^\(seed-[0-9]*\)\.tsv$/\1.ckpt/p' |
    while read -r c; do [ -e "$seeds/$c" ] && echo "$c"; done)
[ -n "$both" ]
check "seed file kept: its checkpoint still beside it ($both)" $?
# shellcheck disable=SC2086
expect_exit "rerun after a kill between seed file and checkpoint" 0 "$exe" sgd $grid --out "$out"
[ ! -e "$seeds" ]
check "seed file kept: the seed folder removed" $?
rm -f "$out"/.*.lock
same_files "seed file kept: the files of an uninterrupted run" "$work/direct-ref" "$out"

# SIGTERM to the parent, SIGINT to the process group (as a terminal's
# Ctrl-C sends it): the workers stopped and waited for, the checkpoints
# kept, nothing half-written or locked left, one message, the exit
# status a shell expects (128 + the signal); a rerun finishes the files
# of an uninterrupted run
for sig in TERM INT; do
    rm -rf "$out"
    # once a worker has kept its seed's first checkpoint (after grid
    # point 1): SIGTERM to the run's main process, SIGINT to the group;
    # env: a background job of a non-interactive shell ignores SIGINT
    if [ $sig = TERM ]; then to=main; else to=group; fi
    # shellcheck disable=SC2086
    setsid -w env --default-signal=INT AIMDYN_TEST_HOOK="sgd-point:k=1=$sig@$to" \
        "$exe" sgd $grid --out "$out" >/dev/null 2>"$work/sig" </dev/null &
    pid=$!
    wait $pid
    status=$?
    [ $status -eq $([ $sig = TERM ] && echo 143 || echo 130) ]
    check "SIG$sig: exit status 128 + the signal (got $status)" $?
    contains "SIG$sig: said how to continue" "$work/sig" \
        "aimdyn sgd: interrupted; [0-9] of 2 seeds at d = 40 kept and [0-9] checkpointed in .*: rerun the same command to continue"
    ! kill -0 -$pid 2>/dev/null
    check "SIG$sig: no worker left" $?
    ls "$seeds" | grep -q '^seed-' &&
        ! ls -A "$seeds" | grep -q '^\..*\.......$' && [ ! -e "$out/.aimdyn-sgd-d40.lock" ]
    check "SIG$sig: the checkpoints kept, no temporary or lock file left" $?
    # shellcheck disable=SC2086
    expect_exit "SIG$sig: rerun" 0 "$exe" sgd $grid --out "$out"
    rm -f "$out"/.*.lock
    same_files "SIG$sig: rerun, the files of an uninterrupted run" "$work/direct-ref" "$out"
done

# a checkpoint (of the runs above) in an otherwise empty seed folder
rm -rf "$out"
ckpt=$(ls "$work/mid-kept" | grep '^seed-.*\.ckpt$' | head -n 1)
[ -n "$ckpt" ]
check "a whole checkpoint kept beside the interrupted one" $?
fresh() { # the seed folder with checkpoint $ckpt only, from stdin
    rm -rf "$out"
    mkdir -p "$seeds"
    cat >"$seeds/$ckpt"
}

# of another configuration: refused, named with the key, nothing written
fresh <"$work/mid-kept/$ckpt"
# shellcheck disable=SC2086
expect_exit "a checkpoint of another configuration" 2 "$exe" sgd $grid --out "$out" \
    --set training.eta=0.04
contains "another configuration: the file and the key named" "$work/err" \
    "$ckpt is a checkpoint of a run of another configuration (there training.eta = 0.1, here training.eta = 0.04)"
[ ! -e "$out/aimdyn-sgd-d40.tsv" ] && [ -e "$seeds/$ckpt" ]
check "another configuration: nothing written, the checkpoint kept" $?

# cut short, or damaged: refused
size=$(wc -c <"$work/mid-kept/$ckpt")
head -c $((size - 8)) "$work/mid-kept/$ckpt" | fresh
# shellcheck disable=SC2086
expect_exit "a checkpoint cut short" 2 "$exe" sgd $grid --out "$out"
contains "cut short: said" "$work/err" "$ckpt: its length is not the one its header records"
head -c 20 "$work/mid-kept/$ckpt" | fresh
# shellcheck disable=SC2086
expect_exit "a checkpoint cut inside its header" 2 "$exe" sgd $grid --out "$out"
contains "cut in the header: said" "$work/err" "$ckpt: cut short (no whole header)"
fresh <"$work/mid-kept/$ckpt"
printf 'X' | dd of="$seeds/$ckpt" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
# shellcheck disable=SC2086
expect_exit "a damaged checkpoint" 2 "$exe" sgd $grid --out "$out"
contains "damaged: said" "$work/err" "$ckpt: its checksum does not match"
[ ! -e "$out/aimdyn-sgd-d40.tsv" ]
check "cut or damaged: nothing written" $?

# of another version (header and checksum made consistent): not used,
# the seed computed from its start
python3 - "$work/mid-kept/$ckpt" <<'PY' | fresh
import struct, sys
data = open(sys.argv[1], "rb").read()
tl, pl = struct.unpack("=QQ", data[16:32])
text = data[40:40 + tl]
line = text.index(b"\n")
text = b"# aimdyn 0.0.0-other" + text[line:]
body = text + data[40 + tl:]
h = 0xcbf29ce484222325
for b in body:
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
sys.stdout.buffer.write(data[:16] + struct.pack("=QQQ", len(text), pl, h) + body)
PY
# shellcheck disable=SC2086
expect_exit "a checkpoint of another version" 0 "$exe" sgd $grid --out "$out"
contains "another version: said" "$work/err" \
    "$ckpt was written by aimdyn 0.0.0-other, this is aimdyn .*: seed computed from its start"
rm -f "$out"/.*.lock
same_files "another version: the files of an uninterrupted run" "$work/direct-ref" "$out"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
