#!/bin/sh
# Builds aimdyn (installing what is missing) and runs every test: the
# release build (unit and physics suites), then the unit suite again
# under AddressSanitizer + UndefinedBehaviorSanitizer.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh scripts/setup.sh build
meson test -C build --print-errorlogs
sh scripts/setup.sh build-sanitize -Dbuildtype=debug -Db_sanitize=address,undefined \
    -Db_lundef=false
# UBSan reports must fail the run, not just print.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    meson test -C build-sanitize --suite unit --print-errorlogs
