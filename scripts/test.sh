#!/bin/sh
# Builds aimdyn (installing what is missing) and runs every test: the
# release build (unit and physics suites), then the unit suite again
# under AddressSanitizer + UndefinedBehaviorSanitizer. Ends with the
# line "tests: N passed, M failed"; exits non-zero on any failure.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
sh scripts/setup.sh build
run() { # runs a test command, keeping its output for the summary
    out=$(mktemp)
    "$@" >"$out" 2>&1 || status=1
    cat "$out"
    cat "$out" >>"$log"
    rm -f "$out"
}
run meson test -C build --print-errorlogs
sh scripts/setup.sh build-sanitize -Dbuildtype=debug -Db_sanitize=address,undefined \
    -Db_lundef=false
# UBSan reports must fail the run, not just print.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1
run meson test -C build-sanitize --suite unit --print-errorlogs
passed=$(awk '/^Ok:/ {s += $2} END {print s + 0}' "$log")
failed=$(awk '/^(Fail|Timeout|Unexpected Pass):/ {s += $NF} END {print s + 0}' "$log")
echo "tests: $passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
