#!/bin/sh
# Thread scaling of the expectation engine (--threads) on this tree:
#   - one softmax engine call at T = 4 (build/bench_threads);
#   - a whole `aimdyn ode examples/tied_softmax_T4.ini` run, its hierarchy
#     alone (hierarchy.beyond = stop);
# each on 1 and 2 threads, wall and CPU time (user + system, every
# thread), the thread counts interleaved, ROUNDS times each; the smallest
# time of each counts (the least disturbed by other load). Prints the
# speed-up (wall on 1 / wall on 2), the CPU overhead (CPU on 2 / CPU on
# 1), the load average before and after, and checks that the ode files
# are the same but their "# threads:" line. One BLAS thread. Nothing here
# is a test: on a loaded machine the threads compete with the load.
# aimdyn makes its idle OpenMP threads sleep unless OMP_WAIT_POLICY is set
# (README, src/cli/threading.c); the engine call here, a program of its
# own, spins by libgomp's default: run it with OMP_WAIT_POLICY=passive to
# compare the two alike.
# Needs /usr/bin/time (Debian package time).
# Usage: sh validate/bench/bench_threads.sh [BUILD_DIR [ROUNDS [SECONDS]]]
#   BUILD_DIR  this tree's build directory (default build)
#   ROUNDS     repetitions of each measurement (default 3)
#   SECONDS    wall seconds per engine timing (default 2)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/${1:-build}
rounds=${2:-3}
seconds=${3:-2}
export OPENBLAS_NUM_THREADS=1
unset OMP_NUM_THREADS

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
ninja -C "$build" aimdyn bench_threads > "$tmp/ninja.log"
example=$root/examples/tied_softmax_T4.ini
load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
r=1
while [ "$r" -le "$rounds" ]; do
    echo "bench_threads: round $r of $rounds" >&2
    for t in 1 2; do
        "$build/bench_threads" 4 $t "$seconds" >> "$tmp/call-$t"
        # wall, then CPU (user + system, every thread); the hierarchy
        # alone (hierarchy.beyond = stop: the matrix process that would
        # carry it on runs its replicas one after the other, with BLAS,
        # not on the engine's threads), so exit 3 is its expected end
        /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$build/aimdyn" ode "$example" \
            --set hierarchy.beyond=stop --threads $t --out "$tmp/ode-$t" > /dev/null \
            2> "$tmp/ode-$t.err" || [ $? -eq 3 ]
        tail -n 1 "$tmp/time" | awk '{ printf "%s\t%.2f\n", $1, $2 + $3 }' >> "$tmp/ode-$t.times"
    done
    r=$((r + 1))
done
load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)

echo "expectation engine threads, $(git -C "$root" describe --always --dirty)," \
     "$(nproc) cores, OPENBLAS_NUM_THREADS=1, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}," \
     "best of $rounds"
echo "load average (1, 5, 15 min) before: $load_before, after: $load_after"
best() { # file, column: the smallest value
    cut -f "$2" "$1" | sort -g | head -n 1
}
line() { # what, wall 1, cpu 1, wall 2, cpu 2, unit
    awk -v what="$1" -v w1="$2" -v c1="$3" -v w2="$4" -v c2="$5" -v u="$6" 'BEGIN {
        printf "%-44s wall %9.3f / %9.3f %s, speed-up %.2f; CPU %9.3f / %9.3f %s, " \
               "CPU ratio %.2f\n", what, w1, w2, u, w1 / w2, c1, c2, u, c2 / c1 }'
}
echo "                                             (1 thread / 2 threads)"
line "one softmax engine call, T = 4" "$(best "$tmp/call-1" 3)" "$(best "$tmp/call-1" 4)" \
    "$(best "$tmp/call-2" 3)" "$(best "$tmp/call-2" 4)" ms
line "aimdyn ode tied_softmax_T4.ini, beyond=stop" "$(best "$tmp/ode-1.times" 1)" \
    "$(best "$tmp/ode-1.times" 2)" "$(best "$tmp/ode-2.times" 1)" \
    "$(best "$tmp/ode-2.times" 2)" s
if cut -f 5,6 "$tmp/call-1" "$tmp/call-2" | sort -u | awk 'END { exit NR != 1 }'; then
    echo "engine values (risk, K_omega): the same on 1 and 2 threads"
else
    echo "engine values (risk, K_omega): DIFFER between 1 and 2 threads"
fi
for t in 1 2; do
    grep -v '^# threads: \|^# config output.dir = ' "$tmp/ode-$t/tied_softmax_T4-ode.tsv" \
        > "$tmp/ode-$t.tsv"
done
if cmp -s "$tmp/ode-1.tsv" "$tmp/ode-2.tsv"; then
    echo "ode files: the same on 1 and 2 threads (but their # threads: line)"
else
    echo "ode files: DIFFER between 1 and 2 threads"
fi
