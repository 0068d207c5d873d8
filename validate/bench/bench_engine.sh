#!/bin/sh
# Times the expectation engine of this tree against the engine of an
# older commit, built side by side in the same run, and prints ratios:
#   - one softmax engine call at T = 2, 3, 4, 6, 8 (build/bench_engine,
#     cases "tied" and "general"), with the largest relative difference
#     of the engine's values between the two builds;
#   - three whole runs (issue 15's targets):
#       ode examples/tied_softmax_T4.ini --order 4;
#       compare examples/tied_softmax_T4.ini --order 1 ... --order 5,
#         its ODE side: one SGD seed at d = 20 (--seeds 1 --d 20), so that
#         the SGD side is a small part of the time;
#       ode examples/tied_softmax_T4.ini --order 4 --set model.tokens=8
#         (a T = 8 softmax tied run at M = 4);
#     with the largest relative difference of the -ode.tsv columns both
#     files have (both ode runs).
# This tree's runs set hierarchy.tol = 0 and hierarchy.beyond = stop: they
# integrate the same grid as the older engine's, which had no truncation
# estimate (so no stop at its tolerance) and no matrix process to hand over
# to where the hierarchy leaves the valid moments (the T = 8 run does, at
# tau = 0.35: the older tree stops there, exit 3, and so does this one;
# without beyond = stop the matrix process's replicas would run to the end,
# most of the time, work the older tree did not do). They still pay for the
# estimate's lower orders.
# CPU time (user + system), one BLAS thread; the builds run interleaved,
# ROUNDS times each, and the smallest time of each counts (the least
# disturbed by other load on the machine). Nothing here is a test.
# Usage: sh validate/bench/bench_engine.sh [BUILD_DIR [REF [ROUNDS [SECONDS]]]]
#   BUILD_DIR  this tree's build directory (default build)
#   REF        the commit to compare with (default e88493a, the engine
#              before its rewrite)
#   ROUNDS     repetitions of each measurement (default 3)
#   SECONDS    CPU seconds per engine timing (default 1)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/${1:-build}
ref=${2:-e88493a}
rounds=${3:-3}
seconds=${4:-1}
export OPENBLAS_NUM_THREADS=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/ref"
git -C "$root" archive "$ref" | tar -x -C "$tmp/ref"
# the reference tree gets this benchmark (it uses only the engine
# interface both trees have), at the source path its meson.build names
# (before validate/ was tidied, one in validate/ itself), or added at ours
ref_src=$(sed -n "s/^executable('bench_engine', '\([^']*\)'.*/\1/p" "$tmp/ref/meson.build")
if [ -z "$ref_src" ]; then
    ref_src=validate/bench/bench_engine.c
    echo "executable('bench_engine', '$ref_src', dependencies : aimdyn_dep)" \
        >> "$tmp/ref/meson.build"
fi
mkdir -p "$(dirname "$tmp/ref/$ref_src")"
cp "$root/validate/bench/bench_engine.c" "$tmp/ref/$ref_src"
echo "bench_engine: building $ref in $tmp/ref" >&2
meson setup "$tmp/ref/build" "$tmp/ref" > "$tmp/setup.log"
ninja -C "$tmp/ref/build" aimdyn bench_engine > "$tmp/ninja.log"
ninja -C "$build" aimdyn bench_engine > "$tmp/ninja.log"

new_bench=$build/bench_engine
old_bench=$tmp/ref/build/bench_engine
# each build runs its own tree's copy of the example: the same model, and
# the older one without the keys it does not know (hierarchy.tol, [matrix])
example=$root/examples/tied_softmax_T4.ini
example_old=$tmp/ref/examples/tied_softmax_T4.ini
orders="--order 1 --order 2 --order 3 --order 4 --order 5"
# one whole run: CPU seconds of build TAG (old, new) of COMMAND on the
# example with OPTIONS, run NAME, into $tmp/NAME-TAG-ROUND, its files in
# $tmp/NAME-TAG
whole() { # TAG NAME COMMAND OPTIONS...
    tag=$1 name=$2 command=$3
    shift 3
    if [ "$tag" = old ]; then
        bench=$old_bench bin=$tmp/ref/build/aimdyn ex=$example_old same=
    else
        bench=$new_bench bin=$build/aimdyn ex=$example
        same="--set hierarchy.tol=0 --set hierarchy.beyond=stop"
    fi
    rm -rf "$tmp/$name-$tag"
    # shellcheck disable=SC2086 # the options are words
    "$bench" --run "$bin" "$command" "$ex" "$@" $same --out "$tmp/$name-$tag" > "$tmp/$name-$tag-$r" \
        2> "$tmp/$name-$tag.err" || { cat "$tmp/$name-$tag.err" >&2; exit 1; }
}
r=1
while [ "$r" -le "$rounds" ]; do
    echo "bench_engine: round $r of $rounds" >&2
    "$old_bench" "$seconds" > "$tmp/calls-old-$r"
    "$new_bench" "$seconds" > "$tmp/calls-new-$r"
    for tag in old new; do
        whole "$tag" ode4 ode --order 4
        # shellcheck disable=SC2086
        whole "$tag" compare compare $orders --seeds 1 --d 20
        whole "$tag" ode8 ode --order 4 --set model.tokens=8
    done
    r=$((r + 1))
done

echo "engine of $(git -C "$root" describe --always --dirty) against $ref," \
     "CPU time, OPENBLAS_NUM_THREADS=1, best of $rounds"
echo
# per case and T: best time per call of each build, their ratio, the
# set-up (engine creation and first call: the point set), and the largest
# relative difference of the engine's values (those of magnitude above
# 1e-12)
cat "$tmp"/calls-old-* | awk -v tag=old '$1 != "case" { print tag, $0 }' > "$tmp/calls"
cat "$tmp"/calls-new-* | awk -v tag=new '$1 != "case" { print tag, $0 }' >> "$tmp/calls"
awk '
function abs(x) { return x < 0 ? -x : x }
{
    key = $2 " " $3
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    t = $1 "," key
    if (!(t in best) || $4 < best[t]) best[t] = $4
    if (!(t in setup) || $5 < setup[t]) setup[t] = $5
    for (i = 6; i <= NF; i++) val[t, i] = $i
    nf = NF
}
END {
    printf "%-8s %3s %12s %12s %7s %13s %13s %22s\n", "case", "T", "old ms/call",
        "new ms/call", "ratio", "old set-up ms", "new set-up ms", "max rel diff (values)"
    for (k = 1; k <= n; k++) {
        key = order[k]
        worst = 0
        for (i = 6; i <= nf; i++) {
            a = val["old," key, i]; b = val["new," key, i]
            s = abs(a) > abs(b) ? abs(a) : abs(b)
            if (s > 1e-12 && abs(a - b) / s > worst) worst = abs(a - b) / s
        }
        split(key, kt, " ")
        printf "%-8s %3d %12.3f %12.3f %7.2f %13.1f %13.1f %22.2e\n", kt[1], kt[2],
            best["old," key], best["new," key], best["old," key] / best["new," key],
            setup["old," key], setup["new," key], worst
    }
}' "$tmp/calls"

# the largest relative difference of the -ode.tsv columns both files
# have (a newer tree may add some; an older one names the moments m(w),
# now m_w: docs/tables.md)
columns() {
    awk '
function abs(x) { return x < 0 ? -x : x }
function safe(n) { if (n ~ /^m\(.*\)$/) { sub(/^m\(/, "m_", n); sub(/\)$/, "", n) }; return n }
FNR == 1 { file++ }
/^#/ { next }
!hdr[file]++ { for (i = 1; i <= NF; i++) name[file, i] = safe($i); cols[file] = NF; next }
{ row = ++rows[file] }
file == 1 { for (i = 1; i <= NF; i++) old[row, name[1, i]] = $i; next }
{
    for (i = 1; i <= NF; i++) {
        key = row SUBSEP name[2, i]
        if (!(key in old)) continue
        a = old[key]; b = $i
        s = abs(a) > abs(b) ? abs(a) : abs(b)
        if (s > 0 && abs(a - b) / s > worst) { worst = abs(a - b) / s; at = name[2, i] }
    }
}
END { printf "%.2e%s", worst, (worst > 0 ? " (" at ")" : "") }' "$1" "$2"
}
# run NAME, its title: best CPU seconds of each build and their ratio
report() {
    name=$1 title=$2
    old_t=$(sort -g "$tmp/$name"-old-* | head -n 1)
    new_t=$(sort -g "$tmp/$name"-new-* | head -n 1)
    printf '%-62s %8.2f %8.2f %7.2f\n' "$title" "$old_t" "$new_t" \
        "$(awk -v a="$old_t" -v b="$new_t" 'BEGIN { printf "%.2f", a / b }')"
}
echo
printf '%-62s %8s %8s %7s\n' "whole run (CPU seconds)" "$ref" "this" "ratio"
report ode4 "ode tied_softmax_T4.ini --order 4"
report compare "compare tied_softmax_T4.ini --order 1..5 --seeds 1 --d 20"
report ode8 "ode tied_softmax_T4.ini --order 4 --set model.tokens=8"
echo
echo "largest relative difference of the -ode.tsv columns, T = 4:" \
    "$(columns "$tmp/ode4-old/tied_softmax_T4-ode.tsv" "$tmp/ode4-new/tied_softmax_T4-ode.tsv")"
echo "largest relative difference of the -ode.tsv columns, T = 8:" \
    "$(columns "$tmp/ode8-old/tied_softmax_T4-ode.tsv" "$tmp/ode8-new/tied_softmax_T4-ode.tsv")"
