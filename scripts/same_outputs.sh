#!/bin/sh
# Checks that a change leaves aimdyn's behaviour as it was: runs `ode`,
# `sgd` and `compare` on every example with the binary of an earlier commit
# and with this tree's, and compares every file written, stdout and stderr
# byte for byte. The only text allowed to differ is what names the side:
# the version (the commit) each output records, and the binary's path and
# the working folder that the JSON sidecars record; progress lines (their rates and ETAs depend
# on the machine's load) are left out of stderr. `ode` runs each example as
# it is; `sgd` and `compare` train 2 seeds at d = 200 (--seeds 2 --d 200)
# instead of the examples' 8 at d = 400: the same code, a sixtieth of the
# CPU (the SGD's cost grows as d^4 to a given tau).
#
#   sh scripts/same_outputs.sh REV [WORKDIR]
#       builds REV in a worktree beside this one and this tree into
#       WORKDIR/new (default /tmp/aimdyn-same), runs both, compares
#   sh scripts/same_outputs.sh run BINARY DIR    one side only
#   sh scripts/same_outputs.sh diff DIR_A DIR_B  compare two sides
#
# Both sides run at once, one per core; about 10 minutes of CPU each.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)

run_side() {
    bin=$1 dir=$2
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    rm -rf "$dir/examples" "$dir/out" "$dir/streams"
    cp -R "$root/examples" "$dir/examples"
    mkdir -p "$dir/streams"
    "$bin" --version > "$dir/version"
    printf '%s\n' "$bin" > "$dir/binary"
    for ini in "$dir"/examples/*.ini; do
        name=$(basename "$ini" .ini)
        for cmd in ode sgd compare; do
            echo "$(date +%T) $name $cmd" >&2
            status=0
            sgd_size=
            [ "$cmd" = ode ] || sgd_size="--seeds 2 --d 200"
            # shellcheck disable=SC2086 # sgd_size: two options or none
            (cd "$dir" && OPENBLAS_NUM_THREADS=1 "$bin" "$cmd" "examples/$name.ini" $sgd_size \
                --set "output.dir=out/$name-$cmd" \
                > "streams/$name-$cmd.out" 2> "streams/$name-$cmd.err") || status=$?
            echo "$status" > "$dir/streams/$name-$cmd.status"
        done
    done
}

# file $1 of side $2 with what names the side replaced (its version by
# VERSION, its binary by BINARY, its folder by FOLDER) and, for stderr,
# the progress lines left out
normalise() {
    version=$(sed 's/^aimdyn //' "$2/version")
    set -- "$1" -e "s|$(cat "$2/binary")|BINARY|g" -e "s|$2|FOLDER|g" -e "s/$version/VERSION/g"
    case $1 in
    *.err) sed "$@" | grep -v -E '(ETA|steps/s|, done in )' || true ;;
    *) sed "$@" ;;
    esac
}

diff_sides() {
    a=$1 b=$2 tmp=$(mktemp -d)
    va=$(sed 's/^aimdyn //' "$a/version") vb=$(sed 's/^aimdyn //' "$b/version")
    a=$(cd "$a" && pwd) b=$(cd "$b" && pwd)
    (cd "$a" && find out streams -type f | sort) > "$tmp/a"
    (cd "$b" && find out streams -type f | sort) > "$tmp/b"
    bad=0 files=0
    if ! cmp -s "$tmp/a" "$tmp/b"; then
        echo "FAIL: the two sides wrote different files (< $a, > $b):"
        diff "$tmp/a" "$tmp/b" || true
        bad=1
    fi
    while read -r f; do
        [ -f "$b/$f" ] || continue
        files=$((files + 1))
        cmp -s "$a/$f" "$b/$f" && continue
        normalise "$a/$f" "$a" > "$tmp/na"
        normalise "$b/$f" "$b" > "$tmp/nb"
        if ! cmp -s "$tmp/na" "$tmp/nb"; then
            echo "FAIL: $f differs:"
            diff "$tmp/na" "$tmp/nb" | head -6
            bad=1
        fi
    done < "$tmp/a"
    rm -rf "$tmp"
    if [ $bad = 0 ]; then
        echo "same_outputs: $files files compared ($va against $vb): identical"
    else
        echo "same_outputs: $files files compared ($va against $vb): DIFFERENT"
    fi
    return $bad
}

case ${1:-} in
run) run_side "$2" "$3" ;;
diff) diff_sides "$2" "$3" ;;
''|-h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 1 ;;
*)
    rev=$1 work=${2:-/tmp/aimdyn-same}
    mkdir -p "$work"
    work=$(cd "$work" && pwd)
    sh "$root/scripts/setup.sh" build
    ninja -C "$root/build" aimdyn >/dev/null
    if [ ! -x "$work/old-tree/build/aimdyn" ] ||
       [ "$(cd "$work/old-tree" && git rev-parse HEAD)" != "$(git -C "$root" rev-parse "$rev")" ]; then
        git -C "$root" worktree remove --force "$work/old-tree" 2>/dev/null || rm -rf "$work/old-tree"
        git -C "$root" worktree add --detach "$work/old-tree" "$rev" >/dev/null
        (cd "$work/old-tree" && meson setup build >/dev/null && ninja -C build aimdyn >/dev/null)
    fi
    echo "same_outputs: every example's ode, sgd and compare with $rev and with this tree, one core each (about 10 minutes)" >&2
    run_side "$work/old-tree/build/aimdyn" "$work/old" 2> "$work/old.log" &
    old=$!
    run_side "$root/build/aimdyn" "$work/new" 2> "$work/new.log"
    wait $old
    diff_sides "$work/old" "$work/new"
    ;;
esac
