#!/bin/sh
# Installs what aimdyn needs to build and run (Debian packages, as root,
# only those missing) and builds it with meson into build/ (or $1).
# Usage: sh scripts/setup.sh [BUILD_DIR [MESON_OPTIONS...]]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift

sh "$root/scripts/install.sh" setup meson ninja-build pkg-config gcc libc6-dev git \
    libgsl-dev libopenblas-dev libsundials-dev libinih-dev libjansson-dev libcmocka-dev gnuplot-nox strace \
    python3-numpy python3-pandas libopenmpi-dev openmpi-bin

cd "$root"
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$@" >/dev/null
fi
ninja -C "$build" >/dev/null
echo "setup: built $root/$build/aimdyn"
