#!/bin/sh
# sgd, compare, sweep, recovery and scaling on MPI ranks (mpirun -n 2, ranks.h): the files
# of a serial run, bit for bit; a job killed (kill -9, every process) and
# submitted again continues from the seed files; a failure on one rank
# ends every rank with its message; the commands that do not share their
# work are refused. Registered only when aimdyn is built with MPI.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
# one machine without network: shared memory between the ranks
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
# a hung job fails the test instead of holding it until meson's timeout
mpi() { timeout 240 mpirun --allow-run-as-root --oversubscribe -n 2 "$@"; }


keep() { # name: what the run wrote into $work/run (no lock files) into $work/NAME
    rm -f "$work/run"/.*.lock
    mv "$work/run" "$work/$1"
}

small="--d 40 --seeds 4"
expect_exit "sgd serial" 0 "$exe" sgd $small --jobs 1 --out "$work/run"
keep sgd-serial
expect_exit "sgd on 2 ranks" 0 mpi "$exe" sgd $small --out "$work/run"
contains "sgd on 2 ranks: rank 0 says what it wrote" "$work/out" "wrote $work/run/aimdyn-sgd-d40.tsv"
[ "$(grep -c '^wrote' "$work/out")" -eq 1 ]
check "sgd on 2 ranks: one rank writes" $?
[ ! -e "$work/run/.aimdyn-sgd-d40.seeds" ]
check "sgd on 2 ranks: the seed folder removed" $?
keep sgd-mpi
same_tree "sgd: 2 ranks write what a serial run does" "$work/sgd-serial" "$work/sgd-mpi"

# each rank with 2 workers of its own
expect_exit "sgd on 2 ranks, --jobs 2" 0 mpi --bind-to none "$exe" sgd $small --jobs 2 \
    --out "$work/run"
keep sgd-mpi-jobs
same_tree "sgd: 2 ranks of 2 workers write what a serial run does" "$work/sgd-serial" \
    "$work/sgd-mpi-jobs"

# compare: the ODE, the SGD of three students in turn (the tied and untied
# ones' moments), the agreement tables and figures
# (one thread on both sides: the ODE file records the threads its matrix
# process ran on, the cores a rank may use by default)
students="$(dirname "$0")/../examples/students_he1he2.ini --students direct,tied,untied
    --d 40 --seeds 3 --set matrix.d=40 --set matrix.replicas=2 --set training.horizon=0.02
    --set training.points=3 --set training.eta=0.02 --threads 1"
expect_exit "compare serial" 0 "$exe" compare $students --jobs 1 --out "$work/run"
keep compare-serial
expect_exit "compare on 2 ranks" 0 mpi "$exe" compare $students --out "$work/run"
keep compare-mpi
same_tree "compare: 2 ranks write what a serial run does" "$work/compare-serial" \
    "$work/compare-mpi"

# sweep: the points shared by the ranks, the table and heatmap of a
# serial run; a point file removed is computed again, the others kept
sweep="--vary model.activation=he1,he2 --vary training.eta=0.05,0.1,0.2
    --set training.horizon=0.05 --set training.points=11"
expect_exit "sweep serial" 0 "$exe" sweep $sweep --jobs 1 --out "$work/run"
keep sweep-serial
expect_exit "sweep on 2 ranks" 0 mpi "$exe" sweep $sweep --out "$work/run"
contains "sweep on 2 ranks: rank 0 says what it wrote" "$work/out" "wrote $work/run/aimdyn-sweep.tsv"
same_tree "sweep: 2 ranks write what a serial run does" "$work/sweep-serial" "$work/run"
rm "$work/run/aimdyn-sweep.d/point-0003.tsv"
expect_exit "sweep on 2 ranks, resumed" 0 mpi "$exe" sweep $sweep --out "$work/run"
contains "sweep on 2 ranks, resumed: 5 points kept" "$work/out" "6 points (1 computed, 5 kept from an earlier run)"
keep sweep-mpi
same_tree "sweep resumed on 2 ranks: the files of a serial run" "$work/sweep-serial" \
    "$work/sweep-mpi"

# a job killed (SIGKILL to the process group of the rank whose worker
# kept the first seed file: timeout's group, with mpirun and the ranks,
# or the rank's own, whose loss makes mpirun end the job; the workers
# end with their ranks) once a seed has finished, then submitted again:
# the finished seeds are taken from the seed folder, the files those of
# a serial run. The moment is the run's own event (AIMDYN_TEST_HOOK,
# docs/testing.md), not a poll that a fast machine's job could outrun.
long="--d 100 --seeds 6 --jobs 1"
expect_exit "sgd serial, uninterrupted" 0 "$exe" sgd $long --out "$work/run"
keep k-ref
seeds="$work/run/.aimdyn-sgd-d100.seeds"
(
    export AIMDYN_TEST_HOOK='seed-done#1=KILL@group'
    mpi "$exe" sgd $long --out "$work/run" >/dev/null 2>&1 </dev/null
)
[ $? -ne 0 ]
check "sgd job killed once a seed is kept: not a success" $?
kept=$(ls "$seeds" | grep -c '^seed-')
[ "$kept" -ge 1 ] && [ ! -e "$work/run/aimdyn-sgd-d100.tsv" ]
check "sgd job killed: a finished seed kept, no result file" $?
cp -R "$seeds" "$work/kept-seeds"
expect_exit "sgd job submitted again" 0 mpi "$exe" sgd $long --out "$work/run"
contains "sgd job submitted again: the resumed seeds said" "$work/err" "sgd d=100: [0-9] of 6 seeds resumed from"
keep k-mpi
same_tree "sgd job submitted again: the files of an uninterrupted serial run" "$work/k-ref" \
    "$work/k-mpi"

# a failure on rank 0 (a seed file of another configuration) ends both
# ranks: said, nothing written, no hang
mkdir -p "$work/run"
cp -R "$work/kept-seeds" "$seeds"
expect_exit "2 ranks: a seed of another configuration" 2 mpi "$exe" sgd $long \
    --out "$work/run" --set training.eta=0.04
contains "2 ranks, another configuration: named" "$work/err" "was written by a run of another configuration (there training.eta = 0.1, here training.eta = 0.04)"
[ "$(grep -c 'was written by a run of another configuration' "$work/err")" -eq 1 ]
check "2 ranks, another configuration: said once, by rank 0" $?
[ ! -e "$work/run/aimdyn-sgd-d100.tsv" ]
check "2 ranks, another configuration: nothing written" $?

# recovery: rank 0 runs the limit, the ranks share the finite-d seeds of
# every d, rank 0 writes the three files
rec="$(dirname "$0")/../examples/direct_he2.ini --d 40 --d 60 --seeds 4"
rm -rf "$work/run"
expect_exit "recovery serial" 0 "$exe" recovery $rec --jobs 1 --out "$work/run"
cp "$work/out" "$work/recovery-serial.out"
keep recovery-serial
expect_exit "recovery on 2 ranks" 0 mpi "$exe" recovery $rec --out "$work/run"
cmp -s "$work/out" "$work/recovery-serial.out"
check "recovery on 2 ranks: rank 0 prints what a serial run does" $?
keep recovery-mpi
same_tree "recovery: 2 ranks write what a serial run does" "$work/recovery-serial" \
    "$work/recovery-mpi"

# scaling reads files: rank 0 alone runs it, the same files as a serial run
sc="--sgd $work/sgd-serial/aimdyn-sgd-d40-seeds.tsv"
expect_exit "scaling serial" 0 "$exe" scaling $sc --out "$work/run"
keep scaling-serial
expect_exit "scaling on 2 ranks" 0 mpi "$exe" scaling $sc --out "$work/run"
keep scaling-mpi
same_tree "scaling: 2 ranks write what a serial run does" "$work/scaling-serial" \
    "$work/scaling-mpi"

# the commands that do not share their work over ranks are refused
expect_exit "ode on 2 ranks" 1 mpi "$exe" ode --out "$work/ode"
contains "ode on 2 ranks: refused" "$work/err" "aimdyn ode: not for 2 MPI ranks; allowed under mpirun or srun with more than one rank: sgd, compare, sweep, recovery, scaling"
[ ! -e "$work/ode" ]
check "ode on 2 ranks: nothing written" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
