#!/bin/sh
# What a campaign shows on stderr while it runs (src/cli/progress.c) and
# --quiet: off a terminal, plain campaign lines without escape sequences;
# on a terminal (a pseudo-terminal from util-linux's script), a live block
# with one line per worker, workers' warnings whole above it; --quiet
# leaves stderr empty on success (warnings stay); the result files are the
# same, bit for bit, whatever is shown.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
esc=$(printf '\033')

keep() { # the output folder $work/o as $work/$1 (locks aside)
    rm -f "$work/o"/.*.lock
    mv "$work/o" "$work/$1"
}

small="--d 40 --seeds 4 --jobs 2"

# off a terminal: the campaign's final line, well-formed, no escapes
expect_exit "sgd off a terminal" 0 "$exe" sgd $small --out "$work/o"
contains "sgd: the campaign's final line" "$work/err" \
    "^aimdyn sgd: d = 40: 4/4 seeds, 100 % of steps, [0-9.e]* steps/s, [0-9.]*s$"
! grep -q "$esc" "$work/err"
check "sgd off a terminal: no escape sequences" $?
! grep -q "worker" "$work/err"
check "sgd off a terminal: no worker lines" $?
keep sgd-plain

# --quiet: nothing on stderr, the same files
expect_exit "sgd --quiet" 0 "$exe" sgd $small --quiet --out "$work/o"
[ ! -s "$work/err" ]
check "sgd --quiet: stderr empty" $?
contains "sgd --quiet: the results still on stdout" "$work/out" "^wrote "
keep sgd-quiet
same_files "sgd --quiet writes what sgd does" "$work/sgd-plain" "$work/sgd-quiet"

# on a terminal: the live block with a line per worker, the final line
# after it, the same files
command -v script >/dev/null
check "script (util-linux) is installed" $?
# both workers held after grid point 5 of their first seed (the test
# hook's pause, docs/testing.md) until the terminal shows the block
# redrawn with both of them mid-seed: on a fast machine the seeds could
# end between two redraws, on a loaded one not be caught at all
mkfifo "$work/fifo"
exec 3<>"$work/fifo" # held open here: a byte written stays until a worker reads it
AIMDYN_TEST_HOOK="sgd-point:k=5=PAUSE@$work/fifo" script -qefc \
    "'$exe' sgd --d 60 --seeds 4 --jobs 2 --out '$work/o'" "$work/tty" \
    >/dev/null 2>&1 </dev/null &
shown=$!
both_shown() { # both workers paused, and the block redrawn with both mid-seed
    [ "$(ls "$work" | grep -c '^fifo\.[0-9]*$')" -eq 2 ] &&
        [ "$(tr -d '\r' <"$work/tty" 2>/dev/null | grep -c "  worker [12]: seed [1-4]/4, grid 4/31")" -ge 2 ] &&
        grep -q "${esc}\[3A" "$work/tty" 2>/dev/null
}
i=0 # up to 120 s for both pauses and the block (read as it is written: script -f)
until both_shown || [ $i -ge 1200 ]; do
    sleep 0.1
    i=$((i + 1))
done
both_shown
check "terminal: both workers paused mid-seed, the block redrawn with both" $?
printf 'xx' >&3 # both workers released
wait $shown
check "sgd on a terminal" $?
exec 3>&-
tr -d '\r' <"$work/tty" >"$work/tty.txt"
contains "terminal: the campaign line" "$work/tty.txt" \
    "aimdyn sgd: d = 60: [0-4]/4 seeds, [0-9]* % of steps, .* steps/s, ETA "
contains "terminal: worker 1's line" "$work/tty.txt" \
    "  worker 1: seed [1-4]/4, grid [0-9]*/31, .* steps/s, [0-9.]*s"
contains "terminal: worker 2's line" "$work/tty.txt" \
    "  worker 2: seed [1-4]/4, grid [0-9]*/31, .* steps/s, [0-9.]*s"
contains "terminal: redrawn in place (cursor up)" "$work/tty.txt" "${esc}\[3A"
contains "terminal: cleared, then the final line" "$work/tty.txt" \
    "${esc}\[3A${esc}\[Jaimdyn sgd: d = 60: 4/4 seeds, 100 % of steps"
keep sgd-tty
expect_exit "sgd d = 60 off a terminal" 0 "$exe" sgd --d 60 --seeds 4 --jobs 2 --out "$work/o"
keep sgd-tty-plain
same_files "sgd on a terminal writes what it writes off one" "$work/sgd-tty-plain" \
    "$work/sgd-tty"

# a block taller than the terminal would scroll and its redraw miss
# lines: on 5 rows, 2 workers shown and a line for the others
script -qec "stty rows 5 cols 100; '$exe' sgd --d 40 --seeds 4 --jobs 4 --out '$work/o'" \
    "$work/tty" >/dev/null 2>&1 </dev/null
check "sgd on a terminal of 5 rows" $?
tr -d '\r' <"$work/tty" >"$work/tty.txt"
contains "5 rows: the other workers counted" "$work/tty.txt" "^${esc}\[K  (and 2 more workers)$"
! grep -q "worker 3:" "$work/tty.txt"
check "5 rows: worker 3 not shown" $?
contains "5 rows: the block is 4 lines" "$work/tty.txt" "${esc}\[4A${esc}\[Jaimdyn sgd: d = 40: 4/4"
rm -rf "$work/o"

# a worker's warning (seeds that blow up at eta = 3) reaches the terminal
# whole, above the block; with --quiet it stays
blowup="--d 60 --seeds 3 --jobs 2 --set training.eta=3"
script -qec "'$exe' sgd $blowup --out '$work/o'" "$work/tty" >/dev/null 2>&1 </dev/null
check "sgd blowing up on a terminal: exit 3" $([ $? -eq 3 ]; echo $?)
tr -d '\r' <"$work/tty" >"$work/tty.txt"
warned=$(grep -c "aimdyn: warning: SGD seed [1-3] (d = 60) blew up .*; NaN from there on$" \
    "$work/tty.txt")
[ "$warned" -eq 3 ]
check "terminal: the workers' 3 warnings, each whole on its line ($warned)" $?
keep blowup-tty
expect_exit "sgd blowing up, --quiet" 3 "$exe" sgd $blowup --quiet --out "$work/o"
warned=$(grep -c "aimdyn: warning: SGD seed" "$work/err")
[ "$warned" -eq 3 ] && [ "$(wc -l <"$work/err")" -eq 3 ]
check "--quiet: the 3 warnings stay, nothing else ($warned)" $?
keep blowup-quiet
same_files "sgd blowing up: --quiet writes what a terminal run does" "$work/blowup-tty" \
    "$work/blowup-quiet"

# compare, ode and sweep: --quiet leaves stderr empty on success; sweep's
# plain lines without it
expect_exit "compare --quiet" 0 "$exe" compare --d 40 --seeds 8 --jobs 2 \
    --set training.horizon=0.1 --quiet --out "$work/o"
[ ! -s "$work/err" ]
check "compare --quiet: stderr empty" $?
keep compare-quiet
expect_exit "compare" 0 "$exe" compare --d 40 --seeds 8 --jobs 2 --set training.horizon=0.1 \
    --out "$work/o"
contains "compare: the campaign's final line" "$work/err" \
    "^aimdyn compare: d = 40: 8/8 seeds, 100 % of steps"
keep compare-plain
same_files "compare --quiet writes what compare does" "$work/compare-plain" \
    "$work/compare-quiet"
expect_exit "ode --quiet" 0 "$exe" ode --quiet --out "$work/o"
[ ! -s "$work/err" ]
check "ode --quiet: stderr empty" $?
sweep="--vary model.activation=he1,he2 --vary training.eta=0.05,0.1 --set training.horizon=0.05
       --set training.points=11 --jobs 2"
expect_exit "sweep" 0 "$exe" sweep $sweep --out "$work/s"
contains "sweep: a line per point" "$work/err" "^sweep: 4/4 points ("
contains "sweep: the campaign's final line" "$work/err" "^aimdyn sweep: 4/4 points, [0-9.]*s$"
rm -rf "$work/s"
expect_exit "sweep --quiet" 0 "$exe" sweep $sweep --quiet --out "$work/s"
[ ! -s "$work/err" ]
check "sweep --quiet: stderr empty" $?
# a note (a large hierarchy's size, said before it is built) is not a
# warning; the unusable output.dir ends the run before the build
: >"$work/file"
untied="$(dirname "$0")/../examples/untied_fig3.ini --order 7 --out $work/file/sub"
expect_exit "untied order 7" 1 "$exe" ode $untied
contains "untied order 7: noted" "$work/err" "note: hierarchy.order = 7"
expect_exit "untied order 7 --quiet" 1 "$exe" ode $untied --quiet
! grep -q "note:" "$work/err"
check "--quiet: no note" $?
contains "--quiet: the error stays" "$work/err" "is unusable"

# the library's notes of a run in progress (a matrix process's replicas
# done) follow --quiet too
mx="$(dirname "$0")/../examples/untied_fig3.ini --set ode.method=matrix --order 2
    --set matrix.d=24 --set matrix.replicas=2 --set training.horizon=0.01 --set training.points=3"
expect_exit "matrix process" 0 "$exe" ode $mx --out "$work/mx"
contains "matrix process: replicas noted" "$work/err" "^aimdyn: matrix limit process: replica 2/2 done"
expect_exit "matrix process --quiet" 0 "$exe" ode $mx --quiet --out "$work/mx"
[ ! -s "$work/err" ]
check "matrix process --quiet: stderr empty" $?

# a long ODE run says so and shows its progress with an ETA; a short one
# shows nothing. Long or short by a setting, not by time: AIMDYN_TEST_PROGRESS=every
# makes every stage long from its first report, a line at each
# (docs/testing.md). The files are the same, shown or not.
long="env AIMDYN_TEST_PROGRESS=every"
mx="$mx --threads 2"
rm -rf "$work/o"
# short by a setting too (never: every stage judged short, whatever a
# slow build or a loaded machine makes of the clock)
short="env AIMDYN_TEST_PROGRESS=never"
expect_exit "matrix process, short" 0 $short "$exe" ode $mx --out "$work/o"
! grep -q "a long run\|ETA\|done in" "$work/err"
check "matrix process, short: no progress" $?
keep mx-short
expect_exit "matrix process, long" 0 $long "$exe" ode $mx --out "$work/o"
contains "matrix process, long: said up front" "$work/err" \
    "^aimdyn ode: matrix limit process (D = 24): a long run: ETA .* (0 % of tau in [0-9.]*s); a line at most every 30 s until it ends$"
contains "matrix process, long: its progress" "$work/err" \
    "^aimdyn ode: matrix limit process (D = 24): [0-2]/2 replicas, [0-9]* % of tau, ETA [0-9.]*s$"
contains "matrix process, long: the last line" "$work/err" \
    "^aimdyn ode: matrix limit process (D = 24): 2/2 replicas, 100 % of tau, done in [0-9.]*s$"
contains "matrix process, long: the replicas' notes too" "$work/err" \
    "^aimdyn: matrix limit process: replica 2/2 done"
! grep -q "$esc" "$work/err"
check "matrix process, long: no escape sequences off a terminal" $?
keep mx-long
same_files "matrix process: the same files, progress shown or not" "$work/mx-short" \
    "$work/mx-long"
expect_exit "matrix process, long, --quiet" 0 $long "$exe" ode $mx --quiet --out "$work/o"
[ ! -s "$work/err" ]
check "matrix process, long, --quiet: stderr empty" $?
rm -rf "$work/o"
# on a terminal: the block, a line per thread of the process's replicas
script -qec "env AIMDYN_TEST_PROGRESS=every '$exe' ode $(echo $mx) --out '$work/o'" \
    "$work/tty" >/dev/null 2>&1 </dev/null
check "matrix process on a terminal" $?
tr -d '\r' <"$work/tty" >"$work/tty.txt"
contains "terminal: the process's line" "$work/tty.txt" \
    "aimdyn ode: matrix limit process (D = 24): [0-2]/2 replicas, [0-9]* % of tau, ETA "
contains "terminal: a thread's line" "$work/tty.txt" "  thread [12]: replica [12]/2, grid [0-2]/2, "
contains "terminal: redrawn in place (cursor up)" "$work/tty.txt" "${esc}\[3A"
keep mx-tty
same_files "matrix process on a terminal: the same files" "$work/mx-short" "$work/mx-tty"
# the hierarchy's grid points, then the hand-over's process
hier="$(dirname "$0")/../examples/tied_softmax_T4.ini --set matrix.d=24 --set matrix.replicas=2
      --set training.points=11 --set ode.qmc_points=4096"
expect_exit "hierarchy and hand-over, short" 0 $short "$exe" ode $hier --out "$work/o"
! grep -q "a long run\|ETA\|done in" "$work/err"
check "hierarchy, short: no progress" $?
contains "hierarchy, short: handed over" "$work/err" \
    "the matrix limit process (D = 24, 2 replicas) continues"
keep h-short
expect_exit "hierarchy and hand-over, long" 0 $long "$exe" ode $hier --out "$work/o"
contains "hierarchy, long: said up front" "$work/err" \
    "^aimdyn ode: order-4 hierarchy: a long run: ETA .* (10 % of grid points in [0-9.]*s); a line"
contains "hierarchy, long: its grid points" "$work/err" \
    "^aimdyn ode: order-4 hierarchy: [0-9]* % of grid points, ETA [0-9.]*s$"
contains "hierarchy, long: its last line" "$work/err" \
    "^aimdyn ode: order-4 hierarchy: [0-9]* % of grid points, done in [0-9.]*s$"
contains "hand-over, long: the process's progress" "$work/err" \
    "^aimdyn ode: matrix limit process (D = 24): 2/2 replicas, 100 % of tau, done in"
keep h-long
same_files "hierarchy: the same files, progress shown or not" "$work/h-short" "$work/h-long"
# compare's ODE side (the default example's direct student; its SGD seeds
# are the pool's campaign, whose workers' runs show none)
expect_exit "compare, long ODE" 0 $long "$exe" compare --d 40 --seeds 2 --jobs 2 \
    --set training.horizon=0.1 --set training.points=6 --out "$work/c-long"
contains "compare: the ODE's progress" "$work/err" \
    "^aimdyn compare: direct ODE: 100 % of grid points, done in [0-9.]*s$"
[ "$(grep -c "ODE: a long run" "$work/err")" -eq 1 ]
check "compare: one ODE stage, none from the workers" $?
rm -rf "$work/c-long"
# the setting's one value
expect_exit "AIMDYN_TEST_PROGRESS=often" 1 env AIMDYN_TEST_PROGRESS=often "$exe" ode $mx \
    --out "$work/none"
contains "AIMDYN_TEST_PROGRESS=often refused" "$work/err" \
    "^aimdyn: AIMDYN_TEST_PROGRESS=often: not allowed; allowed: every"
[ ! -e "$work/none" ]
check "AIMDYN_TEST_PROGRESS=often: nothing written" $?

for cmd in ode sgd compare hierarchy agreement plot recovery sweep scaling; do
    expect_exit "$cmd --help" 0 "$exe" $cmd --help
    contains "$cmd --help names --quiet" "$work/out" "--quiet"
done

echo "test_progress: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
