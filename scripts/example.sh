#!/bin/sh
# Builds aimdyn (installing what is missing) and runs the main job on the
# built-in default example: the limit ODE against online SGD (8 seeds,
# d = 200), leaving out/aimdyn-compare-d200.png/.svg/.gp and the TSV files.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
sh "$root/scripts/setup.sh" build
cd "$root"
exec build/aimdyn compare "$@"
