#!/bin/sh
# Times the expectation engine of this tree against the engine of an
# older commit, built side by side in the same run, and prints ratios:
#   - one softmax engine call at T = 2, 3, 4, 6, 8 (build/bench_engine,
#     cases "tied" and "general"), with the largest relative difference
#     of the engine's values between the two builds;
#   - a whole `aimdyn ode examples/tied_softmax_T4.ini --order 4` run,
#     with the largest relative difference of the -ode.tsv columns both
#     files have.
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
example=$root/examples/tied_softmax_T4.ini
r=1
while [ "$r" -le "$rounds" ]; do
    echo "bench_engine: round $r of $rounds" >&2
    "$old_bench" "$seconds" > "$tmp/calls-old-$r"
    "$new_bench" "$seconds" > "$tmp/calls-new-$r"
    "$old_bench" --run "$tmp/ref/build/aimdyn" ode "$example" --order 4 \
        --out "$tmp/ode-old" > "$tmp/ode-old-$r" 2> "$tmp/ode-old.err"
    "$new_bench" --run "$build/aimdyn" ode "$example" --order 4 \
        --out "$tmp/ode-new" > "$tmp/ode-new-$r" 2> "$tmp/ode-new.err"
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

old_ode=$(sort -g "$tmp"/ode-old-* | head -n 1)
new_ode=$(sort -g "$tmp"/ode-new-* | head -n 1)
echo
echo "aimdyn ode examples/tied_softmax_T4.ini --order 4: $old_ode s ($ref), $new_ode s (this" \
     "tree), ratio $(awk -v a="$old_ode" -v b="$new_ode" 'BEGIN { printf "%.2f", a / b }')"
# the -ode.tsv columns both files have (a newer tree may add some; an
# older one names the moments m(w), now m_w: docs/tables.md)
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
END { printf "largest relative difference of the -ode.tsv columns: %.2e%s\n", worst,
      (worst > 0 ? " (" at ")" : "") }' \
    "$tmp/ode-old/tied_softmax_T4-ode.tsv" "$tmp/ode-new/tied_softmax_T4-ode.tsv"
