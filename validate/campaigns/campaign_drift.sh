#!/bin/sh
# The drift campaign (theory/direct.md sec. 9, theory/tied.md sec. 8,
# theory/untied.md sec. 8): the cases of the three drift tests with
# FACTOR times their one-step samples, so that the fitted finite-d
# coefficients (the column "b" of each table) and the limits come with
# standard errors sqrt(FACTOR) times smaller than in the suite. Each test's
# tables go to OUTDIR/<test>.log; a log that exists is not recomputed.
#
# Usage: sh validate/campaigns/campaign_drift.sh [OUTDIR [FACTOR [TEST ...]]]
#   OUTDIR defaults to validation-drift/ (not tracked), FACTOR to 8, the
#   tests to test_drift test_drift_tied test_drift_untied.
# Cost: FACTOR times the tests' own (about 2, 4 and 3 min of one core),
# the two cores used by two tests at a time.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/validation-drift}
factor=${2:-8}
[ $# -gt 2 ] && shift 2 || set --
tests=${*:-test_drift test_drift_tied test_drift_untied}
[ -x "$root/build/tests/test_drift" ] || sh "$root/scripts/setup.sh" build
export OPENBLAS_NUM_THREADS=1 AIMDYN_DRIFT_SAMPLES="$factor"
mkdir -p "$out"

run() { # test
    log=$out/$1.log
    [ -f "$log" ] && return 0
    if "$root/build/tests/$1" >"$log.part" 2>&1; then
        mv "$log.part" "$log"
    else
        mv "$log.part" "$log.failed"
        echo "campaign_drift: $1 failed (see $log.failed)" >&2
    fi
}

# two tests at a time (one core each)
set -- $tests
while [ $# -gt 0 ]; do
    run "$1" &
    [ $# -gt 1 ] && run "$2" &
    wait
    shift
    [ $# -gt 0 ] && shift
done
status=0
for t in $tests; do
    [ -f "$out/$t.log" ] || status=1
done
exit "$status"
