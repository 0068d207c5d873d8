#!/bin/sh
# The expectation engine's threads (--threads, OMP_NUM_THREADS): the same
# files, bit for bit, on 1, 2 and 3 threads (tied, direct and untied
# students with row softmax, the quasi-random rule; the matrix process,
# whose replicas run on the threads), the count recorded
# in the "# threads:" line and nowhere else, the default (the cores the
# process may use), idle threads made to sleep (OMP_WAIT_POLICY), the
# option's and the variable's errors, one thread per worker unless
# --threads is given, and a sweep that resumes across thread counts.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
root="$(dirname "$0")/.."
unset OMP_NUM_THREADS

# The file of one ode run without its "# threads:" line (into $2), after
# checking that line's count ($3).
without_threads_line() {
    contains "$4: threads recorded" "$1" "^# threads: $3 (the \(quasi-random rule's\|matrix process's replicas\)"
    grep -v '^# threads: ' "$1" >"$2"
}

# 4096 quasi-random points (16 blocks of 256 over 2 and 3 threads)
# instead of 16384: the tied example's run 8.6 -> 2.4 s under the
# sanitizers, where the whole test took 147 s of its 300 on a busy machine
short="--set training.horizon=0.05 --set training.points=6 --set ode.qmc_points=4096"
for student in tied direct untied matrix; do
    case $student in
    tied) cfg="$root/examples/tied_softmax_T4.ini"; extra="" ;;
    # the matrix process: its 3 replicas on the threads, taken in order
    # (small: 97 s a run under the sanitizers at D = 40, 16384 points)
    matrix) cfg="$root/examples/tied_softmax_T4.ini"
            extra="--set ode.method=matrix --set matrix.d=20 --set matrix.replicas=3
                   --set ode.qmc_points=1024" ;;
    direct) cfg="$root/examples/direct_softmax_T4.ini"; extra="" ;;
    untied) cfg="$root/examples/untied_fig3.ini"
            extra="--set model.output=softmax --set hierarchy.order=2" ;;
    esac
    for t in 1 2 3; do
        expect_exit "$student ode on $t threads" 0 "$exe" ode "$cfg" --out "$work/ode" --name r \
            $short $extra --threads $t
        without_threads_line "$work/ode/r-ode.tsv" "$work/$student-$t.tsv" $t "$student ode"
    done
    for t in 2 3; do
        cmp -s "$work/$student-1.tsv" "$work/$student-$t.tsv"
        check "$student ode: the same file on 1 and $t threads" $?
    done
done

# OMP_NUM_THREADS when --threads is not given; --threads over it
expect_exit "ode with OMP_NUM_THREADS=2" 0 env OMP_NUM_THREADS=2 "$exe" ode \
    "$root/examples/tied_softmax_T4.ini" --out "$work/ode" --name r $short
without_threads_line "$work/ode/r-ode.tsv" "$work/env.tsv" 2 "OMP_NUM_THREADS=2"
cmp -s "$work/tied-1.tsv" "$work/env.tsv"
check "OMP_NUM_THREADS=2: the same file" $?
expect_exit "ode with --threads over OMP_NUM_THREADS=abc" 0 env OMP_NUM_THREADS=abc "$exe" ode \
    "$root/examples/tied_softmax_T4.ini" --out "$work/ode" --name r $short --threads 3
contains "--threads over OMP_NUM_THREADS" "$work/ode/r-ode.tsv" "^# threads: 3 "

# the default: the cores this process may use, as --help says (no more
# than the online CPUs; one under an affinity mask of one CPU)
expect_exit "ode --help" 0 "$exe" ode --help
cores=$(sed -n 's/.*the cores this process may use: \([0-9]*\) here.*/\1/p' "$work/out")
[ -n "$cores" ] && [ "$cores" -ge 1 ] && [ "$cores" -le "$(getconf _NPROCESSORS_ONLN)" ]
check "ode --help: the default count ($cores), at most the online CPUs" $?
expect_exit "ode without --threads" 0 "$exe" ode "$root/examples/tied_softmax_T4.ini" \
    --out "$work/ode" --name r $short
without_threads_line "$work/ode/r-ode.tsv" "$work/default.tsv" "$cores" "default threads"
cmp -s "$work/tied-1.tsv" "$work/default.tsv"
check "default threads: the same file" $?
if command -v taskset >/dev/null 2>&1; then
    expect_exit "ode --help on one CPU" 0 taskset -c 0 "$exe" ode --help
    contains "one CPU: --help says 1" "$work/out" "the cores this process may use: 1 here"
    expect_exit "ode on one CPU" 0 taskset -c 0 "$exe" ode "$root/examples/tied_softmax_T4.ini" \
        --out "$work/ode" --name r $short
    contains "one CPU: one thread" "$work/ode/r-ode.tsv" "^# threads: 1 "
fi

# idle threads sleep: on more than one thread aimdyn starts itself again
# with OMP_WAIT_POLICY=passive (GNU libgomp reads it only as it is
# loaded; OMP_DISPLAY_ENV=verbose shows each image's: spin count 0 is
# passive), unless the variable is set; with the command line as given
# (getopt reorders it) in the sidecar
expect_exit "ode on 2 threads, the policy shown" 0 env OMP_DISPLAY_ENV=verbose "$exe" ode \
    --out "$work/ode" --threads 2 "$root/examples/tied_softmax_T4.ini" --name r $short
if grep -q "GOMP_SPINCOUNT = " "$work/err"; then
    [ "$(grep "GOMP_SPINCOUNT = " "$work/err" | tail -n 1)" = "  GOMP_SPINCOUNT = '0'" ]
    check "2 threads: started again, passive" $?
    expect_exit "ode on 2 threads, OMP_WAIT_POLICY=active" 0 env OMP_DISPLAY_ENV=verbose \
        OMP_WAIT_POLICY=active "$exe" ode "$root/examples/tied_softmax_T4.ini" \
        --out "$work/ode" --name r $short --threads 2
    [ "$(grep -c "OMP_WAIT_POLICY = 'ACTIVE'" "$work/err")" -eq 1 ] &&
        [ "$(grep -c "GOMP_SPINCOUNT = " "$work/err")" -eq 1 ]
    check "OMP_WAIT_POLICY=active: the user's, not started again" $?
    expect_exit "ode on 1 thread, the policy shown" 0 env OMP_DISPLAY_ENV=verbose "$exe" ode \
        "$root/examples/tied_softmax_T4.ini" --out "$work/ode" --name r $short --threads 1
    [ "$(grep -c "GOMP_SPINCOUNT = " "$work/err")" -eq 1 ]
    check "1 thread: not started again" $?
fi
expect_exit "ode, operand after options" 0 "$exe" ode --out "$work/ode" --threads 2 \
    "$root/examples/tied_softmax_T4.ini" --name r $short
tr -d ' \n' <"$work/ode/r-ode.json" | grep -q '"ode","--out","[^"]*","--threads","2","[^"]*tied_softmax_T4.ini","--name","r","--set"'
check "started again: the sidecar's command line as given" $?

# errors: exit 1, the option or variable, the value and what is allowed,
# nothing written
for bad in 0 -1 abc 1025 99999999999999999999 1.5; do
    expect_exit "--threads $bad" 1 "$exe" ode --out "$work/none" --threads $bad
    contains "--threads $bad explained" "$work/err" \
        "^aimdyn ode: --threads $bad: not allowed; allowed: an integer from 1 to 1024 (the expectation engine's threads)"
done
for bad in 0 -2 abc 4x 5000; do
    expect_exit "OMP_NUM_THREADS=$bad" 1 env OMP_NUM_THREADS=$bad "$exe" ode --out "$work/none"
    contains "OMP_NUM_THREADS=$bad explained" "$work/err" \
        "^aimdyn ode: OMP_NUM_THREADS=$bad: not allowed; allowed: an integer from 1 to 1024"
done
expect_exit "--threads twice" 1 "$exe" ode --out "$work/none" --threads 2 --threads 3
contains "--threads twice refused" "$work/err" "^aimdyn ode: --threads given twice (2, then 3); allowed: once"
[ ! -e "$work/none" ]
check "no output after the threads errors" $?
# OpenMP's list form, one count per nesting level: the first is the engine's
expect_exit "ode with OMP_NUM_THREADS=2,1" 0 env OMP_NUM_THREADS=2,1 "$exe" ode \
    "$root/examples/tied_softmax_T4.ini" --out "$work/ode" --name r $short
contains "OMP_NUM_THREADS=2,1: two threads" "$work/ode/r-ode.tsv" "^# threads: 2 "
for cmd in sgd compare sweep recovery; do
    expect_exit "$cmd --help lists --threads" 0 "$exe" $cmd --help
    contains "$cmd --help --threads" "$work/out" "--threads N"
done
expect_exit "hierarchy --threads" 1 "$exe" hierarchy "$root/examples/tied_he2.ini" --threads 2
contains "hierarchy --threads refused" "$work/err" "option --threads does not apply"

# compare: its ODE on 2 threads in the parent, then the SGD seeds on
# forked workers, which run the engine (risk_gauss) on one thread:
# OpenMP's threads do not survive the fork (it waited for ever before
# aim_gauss_after_fork)
expect_exit "compare --threads 2 --jobs 2 ends" 0 timeout 240 "$exe" compare --out "$work/cmp" \
    --set model.output=softmax --set model.tokens=2 $short --d 40 --seeds 2 --jobs 2 \
    --threads 2 --quiet
contains "compare: ODE on 2 threads" "$work/cmp/aimdyn-ode.tsv" "^# threads: 2 "

# recovery: its limit ODE on the parent's threads, its finite-d seeds on
# workers with one thread each: each count recorded as the one that ran
expect_exit "recovery, OMP_NUM_THREADS=2, --jobs 2" 0 env OMP_NUM_THREADS=2 "$exe" recovery \
    --out "$work/rec" --set model.output=softmax --set model.tokens=2 $short --d 40 --seeds 2 \
    --finite always --jobs 2
for t in aimdyn-recovery aimdyn-recovery-seeds; do
    contains "$t: the limit ODE on 2 threads" "$work/rec/$t.tsv" "^# threads: 2 "
    contains "$t: the seeds on 1 thread each" "$work/rec/$t.tsv" \
        "^# threads of the finite-d seeds: 1 (each seed's quasi-random rule, on its worker)$"
done

# a sweep's workers: one thread each unless --threads is given (the
# variable is not enough); the same table and point files; a rerun on
# another thread count keeps every point (threads are not configuration)
grid="--vary training.eta=0.2,0.3 --set model.output=softmax --set model.tokens=2 $short"
expect_exit "sweep, OMP_NUM_THREADS=2" 0 env OMP_NUM_THREADS=2 "$exe" sweep --out "$work/sw" \
    --jobs 2 $grid
contains "sweep worker: one thread" "$work/sw/aimdyn-sweep.d/point-0001.tsv" "^# threads: 1 "
cp "$work/sw/aimdyn-sweep.tsv" "$work/sweep1.tsv"
for p in 1 2; do
    grep -v '^# threads: ' "$work/sw/aimdyn-sweep.d/point-000$p.tsv" >"$work/point1-$p.tsv"
done
expect_exit "sweep rerun, --threads 2" 0 "$exe" sweep --out "$work/sw" --jobs 2 $grid \
    --threads 2
contains "sweep rerun keeps every point" "$work/out" "(0 computed, 2 kept from an earlier run)"
rm -r "$work/sw"
expect_exit "sweep, --threads 2" 0 "$exe" sweep --out "$work/sw" --jobs 2 $grid --threads 2
contains "sweep worker: --threads" "$work/sw/aimdyn-sweep.d/point-0002.tsv" "^# threads: 2 "
cmp -s "$work/sw/aimdyn-sweep.tsv" "$work/sweep1.tsv"
check "sweep: the same table on 1 and 2 threads per worker" $?
for p in 1 2; do
    grep -v '^# threads: ' "$work/sw/aimdyn-sweep.d/point-000$p.tsv" >"$work/point2-$p.tsv"
    cmp -s "$work/point1-$p.tsv" "$work/point2-$p.tsv"
    check "sweep: point $p the same on 1 and 2 threads" $?
done

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
