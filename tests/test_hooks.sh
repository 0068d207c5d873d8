#!/bin/sh
# The test hook (AIMDYN_TEST_HOOK, docs/testing.md) that the tests of
# interrupted runs reach their moments by: a malformed rule refused at
# startup, naming the variable, the value and the grammar; a signal and
# a pause at a chosen event. And with it, the interrupt that reaches the
# parent only after its workers' pipe has ended (src/cli/pool.c, issue
# 32 item 4): the run still says how to continue; and one that comes
# while the workers are being started: they are stopped and waited for.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

# ---- malformed rules: refused before anything runs
for rule in 'bogus=INT@self' 'sgd-point=INT' 'sgd-point=USR1@self' 'sgd-point=INT@nobody' \
    'sgd-point:worker=1=INT@self' 'sgd-point:k=x=INT@self' 'sgd-point#0=INT@self' \
    'sgd-point:seed=1:k=2:k=3=INT@self' 'sgd-point:k=2:k=3=INT@self' 'sgd-point=PAUSE@' \
    'figure-draw#2'; do
    expect_exit "AIMDYN_TEST_HOOK='$rule' refused" 1 env AIMDYN_TEST_HOOK="$rule" \
        "$exe" sgd --d 20 --seeds 1 --out "$work/bad"
    contains "AIMDYN_TEST_HOOK='$rule': variable, value and grammar said" "$work/err" \
        "^aimdyn: AIMDYN_TEST_HOOK = '$rule': not a test hook rule; allowed: EVENT\[:KEY=INTEGER\]...\[#N\]=ACTION"
done
[ ! -e "$work/bad" ]
check "malformed rules: nothing written" $?
# an empty variable is no rule
expect_exit "AIMDYN_TEST_HOOK empty" 0 env AIMDYN_TEST_HOOK= "$exe" sgd --d 40 --seeds 1 \
    --set training.points=5 --out "$work/empty"

small="--d 40 --seeds 2 --jobs 2 --set training.points=8"

# ---- a signal at a chosen event: SIGTERM on the run's main process at
# grid point 3 of seed 2, from the worker computing it
expect_exit "sgd-point:seed=2:k=3=TERM@main" 143 env \
    AIMDYN_TEST_HOOK='sgd-point:seed=2:k=3=TERM@main' "$exe" sgd $small --out "$work/term"
contains "TERM@main: interrupted, said how to continue" "$work/err" \
    "aimdyn sgd: interrupted; .*: rerun the same command to continue"

# ---- a pause: the run waits on the FIFO, announced by FIFO.PID, until a
# byte is written; both workers held at their first seed's grid point 2
mkfifo "$work/fifo"
exec 3<>"$work/fifo" # held open here: a byte written stays until a paused process reads it
setsid -w env AIMDYN_TEST_HOOK="sgd-point:k=2=PAUSE@$work/fifo" "$exe" sgd $small \
    --out "$work/paused" >/dev/null 2>"$work/paused-err" </dev/null &
pid=$!
wait_paused() { # count: until that many processes have announced their pause (60 s at most)
    i=0
    while [ "$(ls "$work" | grep -c '^fifo\.[0-9]*$')" -lt "$1" ] && [ $i -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    [ "$(ls "$work" | grep -c '^fifo\.[0-9]*$')" -ge "$1" ]
}
wait_paused 2
check "PAUSE: both workers announced their pause" $?
[ ! -e "$work/paused/aimdyn-sgd-d40.tsv" ] && kill -0 $pid 2>/dev/null
check "PAUSE: the run waits, its result not written" $?
printf 'xx' >&3
wait $pid
check "PAUSE: released, the run ends well" $?
exec 3>&-
[ -s "$work/paused/aimdyn-sgd-d40.tsv" ]
check "PAUSE: released, the result written" $?

# ---- issue 32 item 4: SIGINT to the process group (a terminal's Ctrl-C)
# that the parent sees only once it has met the end of its workers'
# pipe: the run is interrupted, says how to continue, exits 130 (it said
# 'worker N killed by signal 2', or nothing, instead)
for jobs in 1 2; do
    rm -rf "$work/race"
    # env: a background job of a non-interactive shell ignores SIGINT
    setsid -w env --default-signal=INT AIMDYN_TEST_HOOK='pool-reports-ended=INT@group' \
        "$exe" sgd --d 40 --seeds 2 --jobs $jobs --set training.points=8 --out "$work/race" \
        >/dev/null 2>"$work/race-err" </dev/null &
    wait $!
    st=$?
    [ $st -eq 130 ]
    check "SIGINT after the workers' pipe ended, --jobs $jobs: exit 130 (got $st)" $?
    contains "SIGINT after the workers' pipe ended, --jobs $jobs: said how to continue" \
        "$work/race-err" \
        "aimdyn sgd: interrupted; 2 of 2 seeds at d = 40 kept and 0 checkpointed in .*: rerun the same command to continue"
    ! grep -q "killed by signal" "$work/race-err"
    check "SIGINT after the workers' pipe ended, --jobs $jobs: no worker reported killed" $?
    [ ! -e "$work/race/aimdyn-sgd-d40.tsv" ]
    check "SIGINT after the workers' pipe ended, --jobs $jobs: no result file" $?
done
expect_exit "after the interrupt: a rerun finishes" 0 "$exe" sgd --d 40 --seeds 2 --jobs 2 \
    --set training.points=8 --out "$work/race"
contains "after the interrupt: the kept seeds resumed" "$work/err" "2 of 2 seeds resumed"

# ---- a signal while the workers are being started (to the parent,
# between its forks): the parent stops and waits for the workers it has
# started before it ends (it ended at once, leaving them to end after
# it, their temporary files still there, and sgd did not say how to
# continue); worker 1 runs while the parent forks worker 2, and may keep
# a seed before the parent takes the signal: 0 to 2 kept
rm -rf "$work/forking"
setsid -w env AIMDYN_TEST_HOOK='worker-forked:worker=1=TERM@self' "$exe" sgd $small \
    --out "$work/forking" >/dev/null 2>"$work/forking-err" </dev/null &
pid=$!
wait $pid
st=$?
[ $st -eq 143 ]
check "SIGTERM between the forks: exit 143 (got $st)" $?
! kill -0 -$pid 2>/dev/null
check "SIGTERM between the forks: no worker left" $?
contains "SIGTERM between the forks: said how to continue" "$work/forking-err" \
    "aimdyn sgd: interrupted; [0-2] of 2 seeds at d = 40 kept .*: rerun the same command to continue"
sweep="--set training.horizon=0.02 --set training.points=5 --jobs 2 --vary training.eta=0.05,0.1,0.15"
for event in 'worker-forked:worker=1=TERM@self' 'worker-start:worker=1=TERM@main'; do
    rm -rf "$work/sw"
    expect_exit "sweep, $event: ended by SIGTERM" 143 env AIMDYN_TEST_HOOK="$event" \
        "$exe" sweep $sweep --out "$work/sw"
    left=$(find "$work/sw" -name '.*' -type f)
    [ -z "$left" ]
    check "sweep, $event: nothing temporary left once it has ended ($left)" $?
done

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
