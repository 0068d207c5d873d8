#!/bin/sh
# Installs the Debian packages given that are missing (as root; apt-get
# from Debian's archive only). Used by scripts/setup.sh and
# tests/fuzz/fuzz.sh.
# Usage: sh scripts/install.sh WHO PACKAGE... (WHO prefixes the messages)
set -eu
who=$1
shift
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "$who: installing$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "$who: missing Debian packages:$missing; run as root or install them" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # one word per package
apt-get install -y -qq --no-install-recommends $missing >/dev/null
