#!/bin/sh
# Builds the fuzz targets (tests/fuzz/fuzz_*.c) with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, and runs each for a
# bounded time from its seed corpus (tests/fuzz/corpus/TARGET). Apart from
# the normal build: it needs clang, which it installs from Debian when
# missing (as root, as scripts/setup.sh does for its packages).
# Usage: sh tests/fuzz/fuzz.sh [SECONDS_PER_TARGET [BUILD_DIR]]
# (default 60 s each, build-fuzz/). Exits non-zero when a target crashes
# or reports a sanitizer error; the input that did it is kept as
# BUILD_DIR/crash-TARGET-* and printed. New inputs the runs find go to
# BUILD_DIR/corpus-TARGET, never into the repository.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
build=${2:-$root/build-fuzz}
case $seconds in '' | *[!0-9]*) echo "fuzz: SECONDS_PER_TARGET must be a whole number" >&2; exit 1 ;; esac

sh "$root/scripts/install.sh" fuzz clang libclang-rt-dev libomp-dev pkg-config libgsl-dev \
    libinih-dev libjansson-dev libopenblas-dev libsundials-dev

mkdir -p "$build"
# the library's version.h comes from meson's vcs_tag; the fuzz build has
# no meson, so it gets a fixed one
echo '#define AIM_VERSION "fuzz"' >"$build/version.h"
# the library's sources are built whole (clang, libFuzzer's coverage,
# ASan, UBSan): the parser's checks reach into the models (an informed
# start's reach: inform.c, planar.c, the untied alphabet), and a list of
# the files it needs broke with each new dependency; the engine's OpenMP
# and CBLAS calls are linked but not run
# tsv.c's JSON sidecars name the CBLAS that meson found (none here)
library_includes=$(for folder in "$root"/src/*/; do
    [ "$folder" = "$root/src/cli/" ] || printf ' -I%s' "$folder"
done)
flags="-std=c17 -g -O1 -Wall -Wextra -Werror -D_XOPEN_SOURCE=700 $library_includes -I$root/sim -I$root/validate -I$build
-DAIM_CBLAS_PACKAGE=\"none\" -fopenmp
-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
libs="$(pkg-config --libs gsl inih jansson openblas) -lsundials_cvode -lm"
sources=$(for file in "$root"/src/*/*.c; do
    case $file in "$root/src/cli/"*) ;; *) printf '%s ' "$file" ;; esac
done)
status=0
for target in config table state; do
    # the state reader (validate/state.c) with the SGD students, which
    # describe the arrays of a state (aim_sgd_state_arrays)
    extra=
    [ "$target" = state ] && extra=$(ls "$root"/validate/*.c)
    # shellcheck disable=SC2086 # word splitting of the flag lists is meant
    clang $flags $(pkg-config --cflags gsl inih jansson openblas) -o "$build/fuzz_$target" \
        "$root/tests/fuzz/fuzz_$target.c" $sources $extra $libs
    mkdir -p "$build/corpus-$target"
    echo "fuzz: $target for $seconds s"
    # -close_fd_mask=3: the readers' messages on stderr would drown the
    # output (libFuzzer keeps its own and the sanitizers' reports).
    # -timeout, -report_slow_units: an input takes milliseconds; the bound
    # catches an endless loop, not a busy machine (10 s flagged a 1 ms
    # input when the load was 15 on 2 cores)
    if ! nice -n 10 "$build/fuzz_$target" -max_total_time="$seconds" -timeout=300 \
        -report_slow_units=300 -rss_limit_mb=2048 -max_len=65536 -close_fd_mask=3 -print_final_stats=1 \
        -dict="$root/tests/fuzz/$target.dict" -artifact_prefix="$build/crash-$target-" \
        "$build/corpus-$target" "$root/tests/fuzz/corpus/$target" \
        >"$build/fuzz-$target.log" 2>&1; then
        status=1
        echo "fuzz: $target FAILED; its log ($build/fuzz-$target.log) ends:" >&2
        tail -n 40 "$build/fuzz-$target.log" >&2
        for crash in "$build"/crash-"$target"-*; do
            [ -e "$crash" ] && echo "fuzz: input kept: $crash" >&2
        done
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^Done' "$build/fuzz-$target.log" |
        sed "s/^/fuzz: $target: /"
done
[ "$status" -eq 0 ] && echo "fuzz: no crash"
exit "$status"
