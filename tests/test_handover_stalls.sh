#!/bin/sh
# hierarchy.beyond where CVODE gives up: on a lower-order companion of the
# truncation estimate (the run hands over, stops, or with hierarchy.tol =
# 0 writes on with no estimate), or on the run itself (its rows kept to
# the last grid point it reached). Apart from tests/test_handover.sh: the
# hierarchies integrated until CVODE gives up (ode.max_steps = 5000 at
# untied orders 4 and 5) take 2 min of CPU under the sanitizers, more
# than a unit test may need on a busy machine; 20 s in the release build.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

# a lower-order companion of the truncation estimate that CVODE gives up
# on (Figure 3's He1 + He2/sqrt 2 at order 5: order 4 stalls near a state
# of no matrices and passes ode.max_steps at tau = 0.142341) ends the
# estimate, not the run: from the first row order 4 did not reach (0.15)
# nothing vouches for order 5, which hands over there (matrix), stops
# there (stop, exit 3), or with hierarchy.tol = 0 writes on with no
# estimate (NaN) and says why in the header
F="$(dirname "$0")/../examples/untied_fig3.ini"
C="--order 5 --set model.activation=hermite --set model.hermite=0,1,0.70710678118654752
   --set training.grid=linear --set training.horizon=0.2 --set training.points=21
   --set ode.max_steps=5000 --set matrix.d=24 --set matrix.replicas=2"
why="order 4 companion: CVODE failed at tau = 0.142341 with CV_TOO_MUCH_WORK"
expect_exit "failed companion: hand-over" 0 "$exe" ode "$F" $C --set hierarchy.tol=1 \
    --out "$work/c"
contains "hand-over at the companion's failure, reason named" "$work/c/untied_fig3-ode.tsv" \
    "^# hand-over: the order-5 hierarchy stopped at tau = 0.15: $why.*the rows from tau = 0.15 on are the matrix"
expect_exit "failed companion: beyond = stop" 3 "$exe" ode "$F" $C --set hierarchy.tol=1 \
    --set hierarchy.beyond=stop --out "$work/cs"
contains "stop said, reason named" "$work/err" "stopped at tau = 0.15: $why"
[ "$(cols "$work/cs/untied_fig3-ode.tsv" tau 1 21 | tail -n 1)" = "0.14" ]
check "rows up to the companion's failure, none from there" $?
! cols "$work/cs/untied_fig3-ode.tsv" risk,overlap,overlap_trunc,risk_trunc 1 21 | grep -qi nan
check "no NaN written as a value" $?
expect_exit "failed companion, hierarchy.tol = 0" 3 "$exe" ode "$F" $C --set hierarchy.tol=0 \
    --set hierarchy.beyond=stop --out "$work/c0"
contains "the order-5 run's own stop" "$work/c0/untied_fig3-ode.tsv" \
    "^# status: the order-5 hierarchy left the valid moments at tau = 0.16"
contains "the companion's failure in the header" "$work/c0/untied_fig3-ode.tsv" \
    "^# truncation error estimate: the order-4 run stopped at tau = 0.142341 (NaN from there: no estimate): CVODE failed at tau = 0.142341 with CV_TOO_MUCH_WORK"
[ "$(cols "$work/c0/untied_fig3-ode.tsv" tau,overlap_trunc 16 16 | cut -f 2)" = "nan" ]
check "no estimate from tau = 0.15" $?

# a hand-over at an order whose words the process cannot afford at every
# output point (untied order 5: 1047 tracked words, more than
# AIM_HANDOVER_WORDS = 256): its rows carry the words up to length 4, those
# of order 4's process alone (the same replicas), and NaN for the longer
# ones; the header says so
C4="$(printf '%s' "$C" | sed 's/--order 5/--order 4/')"
contains "the words measured said" "$work/c/untied_fig3-ode.tsv" \
    "^# hand-over: .*the process measures the words up to length 4 only"
expect_exit "order 4's process alone" 0 "$exe" ode "$F" $C4 --set ode.method=matrix \
    --out "$work/p4"
w4=$(grep -v '^#' "$work/p4/untied_fig3-ode.tsv" | head -n 1 | tr '\t' '\n' | grep '^m_' |
    paste -sd, -)
cols "$work/c/untied_fig3-ode.tsv" "tau,overlap,$w4" 16 21 >"$work/a"
cols "$work/p4/untied_fig3-ode.tsv" "tau,overlap,$w4" 16 21 >"$work/b"
[ "$(wc -l <"$work/a")" -eq 6 ] && cmp -s "$work/a" "$work/b"
check "the words to length 4 are the order-4 process's" $?
w5=$(grep -v '^#' "$work/c/untied_fig3-ode.tsv" | head -n 1 | tr '\t' '\n' |
    grep '^m_.....$' | head -n 3 | paste -sd, -)
[ -n "$w5" ] && [ "$(cols "$work/c/untied_fig3-ode.tsv" "$w5" 16 21 | tr '\t' '\n' | sort -u)" = "nan" ]
check "the words of length 5 NaN in the process's rows ($w5)" $?
! cols "$work/c/untied_fig3-ode.tsv" "$w5" 1 15 | grep -qi nan
check "and numbers in the hierarchy's" $?

# the run itself that CVODE gives up on (the same order 4, on its own)
# keeps its rows to the last grid point it reached, as a stopped run: with
# beyond = stop the file ends at 0.14 (exit 3, the reason and CVODE's flag
# in the status line); with matrix it hands over at the next point. Before,
# such a run wrote nothing (exit 2), losing rows that were sound.
expect_exit "failed run: beyond = stop" 3 "$exe" ode "$F" $C4 --set hierarchy.tol=0 \
    --set hierarchy.beyond=stop --out "$work/r"
contains "the run's own CVODE failure named" "$work/r/untied_fig3-ode.tsv" \
    "^# status: the order-4 hierarchy stopped at tau = 0.142341, where CVODE gave up: .*CV_TOO_MUCH_WORK"
[ "$(cols "$work/r/untied_fig3-ode.tsv" tau 1 21 | tail -n 1)" = "0.14" ]
check "rows up to the failure kept" $?
expect_exit "failed run: hand-over" 0 "$exe" ode "$F" $C4 --set hierarchy.tol=0 \
    --out "$work/rm"
contains "hand-over at the run's CVODE failure" "$work/rm/untied_fig3-ode.tsv" \
    "^# hand-over: the order-4 hierarchy stopped at tau = 0.142341, where CVODE gave up: .*the rows from tau = 0.15 on are the matrix"
[ "$(cols "$work/rm/untied_fig3-ode.tsv" tau 1 21 | tail -n 1)" = "0.2" ]
check "the handed-over run reaches the end" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
