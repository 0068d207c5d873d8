#!/bin/sh
# hierarchy.beyond: a truncated hierarchy that fails (its moments leave
# those of real matrices, or its truncation error estimate passes
# hierarchy.tol) hands over to the matrix limit process (matrix, the
# default) or stops there (stop, exit 3). The hand-over's rows are checked
# against the two runs it is made of: the hierarchy's rows before the
# failure are those of the stopped run, byte for byte, and every row from
# it on is the matrix process's (ode.method = matrix, same seeds), in the
# observables, the words and the replicas' standard errors.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

# the rank-deficient tied case: every order leaves the valid moments at
# tau ~ 0.008 (examples/tied_he2_rank.ini), small matrices for speed
R="$(dirname "$0")/../examples/tied_he2_rank.ini"
S="--set matrix.d=32 --set matrix.replicas=2 --set training.horizon=0.02 --set training.points=11"
expect_exit "failed hierarchy hands over" 0 "$exe" ode "$R" --set ode.method=auto $S --out "$work/h"
contains "hand-over said" "$work/err" "the rows from tau = 0.008 on are the matrix limit process's"
f="$work/h/tied_he2_rank-ode.tsv"
contains "hand-over recorded" "$f" "^# hand-over: the order-4 hierarchy left the valid moments at tau = 0.00[0-9]*: .*the rows from tau = 0.008 on are the matrix limit process's"
contains "run recorded as complete" "$f" "^# status: complete$"
expect_exit "beyond = stop stops" 3 "$exe" ode "$R" --set ode.method=auto $S \
    --set hierarchy.beyond=stop --out "$work/s"
contains "stop said" "$work/err" "left the valid moments at tau ="
expect_exit "the matrix process alone" 0 "$exe" ode "$R" $S --out "$work/m"
words=$(grep -v '^#' "$f" | head -n 1 | tr '\t' '\n' | grep '^m_' | paste -sd, -)
[ -n "$words" ]
check "the hand-over file has word columns ($words)" $?
# rows 1..4 (tau <= 0.006) are the hierarchy's, rows 5..11 the process's
cols "$f" "tau,risk,overlap,$words" 1 4 >"$work/a"
cols "$work/s/tied_he2_rank-ode.tsv" "tau,risk,overlap,$words" 1 4 >"$work/b"
[ -s "$work/a" ] && cmp -s "$work/a" "$work/b"
check "rows before the failure are the hierarchy's" $?
[ "$(cols "$work/s/tied_he2_rank-ode.tsv" tau 5 11)" = "" ]
check "the stopped run has no row from the failure on" $?
cols "$f" "tau,risk,overlap,overlap_se,risk_se,$words" 5 11 >"$work/a"
cols "$work/m/tied_he2_rank-ode.tsv" "tau,risk,overlap,overlap_se,risk_se,$words" 5 11 >"$work/b"
[ "$(wc -l <"$work/a")" -eq 7 ] && cmp -s "$work/a" "$work/b"
check "rows from the failure on are the matrix process's" $?
[ "$(cols "$f" overlap_se,risk_se 1 4 | sort -u)" = "nan	nan" ]
check "no standard error in the hierarchy's rows" $?

# plot's band: the truncation estimate where it is a number, the
# replicas' standard error after the hand-over
expect_exit "plot of a handed-over run" 0 "$exe" plot --ode "$f" --figure "$work/fig"
contains "band switches from the estimate to the standard error" "$work/fig.gp" \
    "(column('overlap_trunc') == column('overlap_trunc') ? column('overlap_trunc') : column('overlap_se'))"
contains "relative risk estimate, absolute standard error" "$work/fig.gp" \
    "? column('risk_trunc')\\*column('risk') : column('risk_se'))"

# a truncation error estimate that passes hierarchy.tol hands over too
T="$(dirname "$0")/../examples/tied_he2.ini"
expect_exit "estimate above hierarchy.tol hands over" 0 "$exe" ode "$T" --order 3 \
    --set hierarchy.tol=1e-4 --set matrix.d=32 --set matrix.replicas=2 \
    --set training.points=6 --out "$work/t"
contains "estimate hand-over recorded" "$work/t/tied_he2-ode.tsv" \
    "^# hand-over: the order-3 hierarchy stopped at tau = .*: the truncation error estimate"
[ "$(cols "$work/t/tied_he2-ode.tsv" overlap_trunc 6 6)" = "nan" ]
check "no truncation estimate in the matrix process's rows" $?
# an even output map (He2, raw centring): the replicas split between
# mirror branches, and the hierarchy follows one; the rows handed over are
# the replicas folded by their mean (output.fold = mean), on its branch
U="$(dirname "$0")/../examples/untied_raw_mean.ini"
V="--d 200 --set matrix.d=24 --set matrix.replicas=3 --set training.points=21"
expect_exit "even map hands over" 0 "$exe" ode "$U" $V --out "$work/u"
g="$work/u/untied_raw_mean-ode.tsv"
contains "folding recorded" "$g" "^# hand-over: .*replicas folded by the sign of their final student mean (output.fold = mean), then put on the hierarchy's branch (student mean positive"
expect_exit "the folded matrix process" 0 "$exe" ode "$U" $V --set ode.method=matrix \
    --set output.fold=mean --out "$work/uf"
cut_row=$(cols "$g" overlap_se 1 21 | grep -n -v nan | head -n 1 | cut -d: -f1)
[ -n "$cut_row" ] && [ "$cut_row" -gt 1 ]
check "the hand-over row found ($cut_row)" $?
cols "$g" "tau,risk,overlap,mean,overlap_se" "$cut_row" 21 >"$work/a"
cols "$work/uf/untied_raw_mean-ode.tsv" "tau,risk,overlap,mean,overlap_se" "$cut_row" 21 >"$work/b"
[ -s "$work/a" ] && cmp -s "$work/a" "$work/b"
check "rows handed over are the folded replicas'" $?
[ "$(cols "$g" mean "$cut_row" "$cut_row" | cut -c1)" != "-" ]
check "on the hierarchy's branch (positive mean)" $?

# compare --order 3 --order 4: both orders hand over, and the matrix
# process is run once (its words to order 4) and serves both; each file is
# the one `ode` writes at its order with its own process, row for row
Q="--set hierarchy.tol=1e-4 --set matrix.d=32 --set matrix.replicas=2 --set training.points=6"
expect_exit "compare, two orders handed over" 0 "$exe" compare "$T" --order 3 --order 4 $Q \
    --d 32 --set sgd.seeds=1 --out "$work/cmp"
[ "$(grep -c 'matrix limit process: replica 1/2 done' "$work/err")" -eq 1 ]
check "one matrix process for both orders" $?
for M in 3 4; do
    expect_exit "ode at order $M" 0 "$exe" ode "$T" --order $M $Q --d 32 --out "$work/o$M"
    a=$(grep -v '^#' "$work/cmp/tied_he2-M$M-ode.tsv" | md5sum)
    b=$(grep -v '^#' "$work/o$M/tied_he2-ode.tsv" | md5sum)
    [ "$a" = "$b" ]
    check "order $M: compare's rows are ode's" $?
done

# a hierarchy that CVODE gives up on (a lower order of its estimate, or
# itself) hands over where it stopped: tests/test_handover_stalls.sh (the
# physics suite: minutes of CPU under the sanitizers)

printf '[hierarchy]\nbeyond = sideways\n' >"$work/bad.ini"
expect_exit "bad hierarchy.beyond" 1 "$exe" ode "$work/bad.ini" --out "$work/x"
contains "bad value named" "$work/err" "hierarchy.beyond.*allowed: matrix | stop"
[ ! -e "$work/x" ]
check "nothing written after a bad hierarchy.beyond" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
