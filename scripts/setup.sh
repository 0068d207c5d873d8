#!/bin/sh
# Installs what aimdyn needs to build and run (Debian packages, as root,
# only those missing) and builds it with meson into build/ (or $1).
# Usage: sh scripts/setup.sh [BUILD_DIR [MESON_OPTIONS...]]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift

packages="meson ninja-build pkg-config gcc libc6-dev git libgsl-dev libopenblas-dev
libsundials-dev libinih-dev libcmocka-dev gnuplot-nox"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing$missing"
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: missing Debian packages:$missing; run as root or install them" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

cd "$root"
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$@" >/dev/null
fi
ninja -C "$build" >/dev/null
echo "setup: built $root/$build/aimdyn"
