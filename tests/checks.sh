# The checks of the command-line tests (sourced by the tests/*.sh):
# each counts a pass or prints "FAIL: name". The sourcing script calls
# begin_test, or sets work, a scratch directory, itself.
failures=0
passes=0

# The start of a test script, called with its arguments: unset variables
# are errors, exe is the aimdyn under test ($1), work a scratch directory
# removed at exit (kept when KEEP is set, to look at after a failure),
# one BLAS thread (the machine is shared; the results do not depend on it).
begin_test() {
    set -u
    exe=$1
    work=$(mktemp -d)
    trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
    export OPENBLAS_NUM_THREADS=1
}

# Prints a python3 with numpy (the one on PATH, else Debian's, for which
# scripts/setup.sh installs python3-numpy); fails when there is none.
numpy_python() {
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import numpy' 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

check() { # name, condition-result
    if [ "$2" -eq 0 ]; then
        passes=$((passes + 1))
    else
        echo "FAIL: $1"
        failures=$((failures + 1))
    fi
}

expect_exit() { # name, expected status, command...
    name=$1 want=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err" </dev/null
    got=$?
    [ "$got" -eq "$want" ]
    r=$?
    [ $r -ne 0 ] && echo "  $name: exit $got, wanted $want; stderr: $(cat "$work/err")"
    check "$name" $r
}

# A command that fails: any status but 0 and timeout's 124 (commands
# that could block run under `timeout 60`, so that they fail, not hang).
expect_failure() { # name, command...
    name=$1
    shift
    "$@" >"$work/out" 2>"$work/err" </dev/null
    got=$?
    [ "$got" -ne 0 ] && [ "$got" -ne 124 ]
    r=$?
    [ $r -ne 0 ] && echo "  $name: exit $got; stderr: $(cat "$work/err")"
    check "$name" $r
}

contains() { # name, file, text
    grep -q -- "$3" "$2"
    r=$?
    [ $r -ne 0 ] && echo "  $1: '$3' not in $(cat "$2")"
    check "$1" $r
}

# The same bytes in files a and b; JSON sidecars (*.json) but for their
# command line: runs compared here differ in options that must not change
# the results (--jobs, --quiet, ranks, a rerun after a kill).
same_bytes() { # a, b
    case $1 in
    *.json)
        python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for j in (a, b):
    j.pop("command_line", None)
sys.exit(a != b)' "$1" "$2" 2>/dev/null ;;
    *) cmp -s "$1" "$2" ;;
    esac
}

same_tree() { # name, directory a, directory b: the same files and bytes, recursively
    r=0
    [ "$(cd "$2" && find . | sort)" = "$(cd "$3" && find . | sort)" ] || r=1
    for f in $(cd "$2" && find . -type f); do
        same_bytes "$2/$f" "$3/$f" || r=1
    done
    check "$1" $r
}

same_files() { # name, directory a, directory b: the same file names and bytes
    r=0
    [ "$(ls -A "$2")" = "$(ls -A "$3")" ] || r=1
    for f in "$2"/*; do
        same_bytes "$f" "$3/$(basename "$f")" || r=1
    done
    check "$1" $r
}

# The gnuplot script kept beside a figure (plots/plot.c): STEM.gp, run by
# gnuplot in directory dir with its outputs renamed from the command line
# (the data files it names exist under their final names, not as a run's
# temporary files), draws STEM.png and STEM.svg again, bit for bit.
kept_script_redraws() { # name, figure stem, dir
    rm -f "$work/redrawn.png" "$work/redrawn.svg"
    (cd "$3" && gnuplot -e "out_png='$work/redrawn.png'; out_svg='$work/redrawn.svg'" "$2.gp") \
        >"$work/gnuplot-err" 2>&1
    r=$?
    [ $r -eq 0 ] && [ ! -s "$work/gnuplot-err" ] && cmp -s "$2.png" "$work/redrawn.png" &&
        cmp -s "$2.svg" "$work/redrawn.svg"
    r=$?
    [ $r -ne 0 ] && echo "  $1: $(cat "$work/gnuplot-err")"
    check "$1" $r
}

# the data rows of a table, columns named in $2 (comma-separated), rows
# $3..$4 (1 = the first data row)
cols() {
    grep -v '^#' "$1" | awk -F'\t' -v want="$2" -v a="$3" -v b="$4" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; n = split(want, w, ","); next }
        NR - 1 >= a && NR - 1 <= b { s = ""
            for (k = 1; k <= n; k++) s = s (k > 1 ? "\t" : "") (w[k] in c ? $c[w[k]] : "absent")
            print s }'
}
