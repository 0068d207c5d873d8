#!/bin/sh
# Result files under attack and accident (aim_atomic, plots/plot.c):
# output names that gnuplot would run as shell commands, on every route,
# with a canary file that a successful injection would create; gnuplot
# missing; SIGINT and SIGTERM while a figure is drawn; two runs into the
# same output name; temporary files that killed runs left; sweep workers
# whose parent was killed. Faults (full disk, failing gnuplot, signals at
# chosen events of the run) are in test_faults.sh.
set -u
exe="$1"
work=$(mktemp -d)
# in the command lines of this test's processes; found by the pattern
# "$work/[m]arker", which the searching grep's own command line does not match
marker="$work/marker"
cleanup() {
    for p in $(our_pids); do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/checks.sh"
export OPENBLAS_NUM_THREADS=1
# older versions wrote their gnuplot scripts to TMPDIR: watched here
export TMPDIR="$work/tmp"
mkdir -p "$TMPDIR" "$marker"
cd "$work" || exit 1

no_canary() { # name
    [ ! -e "$work/canary" ]
    r=$?
    [ $r -ne 0 ] && echo "  $1: the injected command ran" && rm -f "$work/canary"
    check "$1: no command run" $r
}

# Temporary, lock and journal files left in a directory tree, and
# gnuplot scripts left in TMPDIR (older versions).
leftovers() { # dir
    find "$1" \( -name '.*.??????' -o -name '*.png.??????' -o -name '*.svg.??????' \
        -o -name '.*.lock' -o -name '.*.journal' \) -print 2>/dev/null
    find "$TMPDIR" -name 'aimdyn-plot-*' -print
}

no_leftovers() { # name, dir
    left=$(leftovers "$2")
    [ -z "$left" ]
    r=$?
    [ $r -ne 0 ] && echo "  $1: left behind: $left"
    check "$1: nothing temporary left" $r
}

# The pids of processes whose command line holds this test's marker
# (aimdyn runs and their forked sweep workers).
our_pids() {
    grep -l -a -- "$work/[m]arker" /proc/[0-9]*/cmdline 2>/dev/null |
        sed 's|^/proc/\([0-9]*\)/cmdline$|\1|'
}

wait_for() { # file: up to 60 s
    i=0
    while [ ! -e "$1" ] && [ $i -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    [ -e "$1" ]
}

cheap="--set training.horizon=0.02 --set training.points=5 --seeds 2"
sweep_cheap="--set training.horizon=0.02 --set training.points=5 --jobs 2"
"$exe" compare --out "$work/base" $cheap --d 20 >/dev/null 2>&1 </dev/null
ode="$work/base/aimdyn-ode.tsv" sgd="$work/base/aimdyn-sgd-d20.tsv"
seeds="$work/base/aimdyn-sgd-d20-seeds.tsv"
[ -s "$ode" ] && [ -s "$seeds" ] && [ -s "$work/base/aimdyn-compare-d20.png" ]
check "setup: a compare to draw from" $?

# ---- 1. names that gnuplot would run as commands: refused on every route
inject='|touch canary #'
inject_in='<touch canary #'
expect_exit "compare --out |cmd" 1 "$exe" compare --out "$inject" $cheap --d 20
contains "compare --out |cmd: key named" "$work/err" "output.dir"
contains "compare --out |cmd: value named" "$work/err" "touch canary"
contains "compare --out |cmd: allowed said" "$work/err" "allowed: .*not starting with '|' or '<'"
no_canary "compare --out |cmd"
expect_exit "compare --out <cmd" 1 "$exe" compare --out "$inject_in" $cheap --d 20
no_canary "compare --out <cmd"
printf '[output]\ndir = %s\n' "$inject" >"$work/inject.ini"
expect_exit "output.dir = |cmd in a file" 1 "$exe" compare "$work/inject.ini" $cheap --d 20
contains "output.dir = |cmd in a file: file and line named" "$work/err" "inject.ini:2"
no_canary "output.dir = |cmd in a file"
expect_exit "--set output.dir=<cmd" 1 "$exe" compare --set "output.dir=$inject_in" $cheap --d 20
no_canary "--set output.dir=<cmd"
expect_exit "plot --figure |cmd" 1 "$exe" plot --ode "$ode" --figure "$inject"
contains "plot --figure |cmd: option named" "$work/err" "^aimdyn plot: --figure |touch canary #: .*allowed"
no_canary "plot --figure |cmd"
cp "$ode" "$inject_in"
expect_exit "plot --ode <cmd" 1 "$exe" plot --ode "$inject_in" --figure "$work/p1"
contains "plot --ode <cmd: option named" "$work/err" "^aimdyn plot: --ode <touch canary #: .*allowed"
no_canary "plot --ode <cmd"
cp "$sgd" "$inject_in"
expect_exit "plot --sgd <cmd" 1 "$exe" plot --sgd "$inject_in" --figure "$work/p2"
no_canary "plot --sgd <cmd"
rm -f "$inject_in"
expect_exit "sweep --out |cmd" 1 "$exe" sweep --out "$inject" $sweep_cheap \
    --vary training.eta=0.05,0.1
contains "sweep --out |cmd: key named" "$work/err" "output.dir"
no_canary "sweep --out |cmd"
expect_exit "sweep with output.dir = |cmd in a file" 1 "$exe" sweep "$work/inject.ini" \
    $sweep_cheap --vary training.eta=0.05,0.1
no_canary "sweep with output.dir = |cmd in a file"
expect_exit "scaling --figure |cmd" 1 "$exe" scaling --sgd "$seeds" --out "$work/sc" \
    --figure "$inject"
contains "scaling --figure |cmd: option named" "$work/err" "^aimdyn scaling: --figure |touch canary #"
no_canary "scaling --figure |cmd"
expect_exit "scaling --out <cmd" 1 "$exe" scaling --sgd "$seeds" --out "$inject_in" \
    --figure "$work/sc1"
no_canary "scaling --out <cmd"
# a directory that merely contains such characters is a plain directory:
# gnuplot gets every name with "./" in front
expect_exit "compare into ./|dir" 0 "$exe" compare --out "./$inject" $cheap --d 20
[ -s "./$inject/aimdyn-compare-d20.svg" ]
check "compare into ./|dir: figure drawn" $?
no_canary "compare into ./|dir"
cp "$ode" "$work/+"
expect_exit "plot of a file named + into a stem named -" 0 "$exe" plot --ode + --figure -
[ -s "$work/-.svg" ] && grep -q "teacher overlap" "$work/-.svg"
check "plot of a file named +: drawn from the file (not gnuplot's special file)" $?

# ---- 2. gnuplot missing: a warning, the tables, no stale figure; plot fails
mkdir -p "$work/nogp"
cp -r "$work/base" "$work/nogp/o"
expect_exit "compare without gnuplot" 0 env PATH="$work/empty" "$exe" compare --out "$work/nogp/o" \
    $cheap --d 20 --set sgd.seed=5
contains "compare without gnuplot: warned" "$work/err" "gnuplot not found"
[ ! -e "$work/nogp/o/aimdyn-compare-d20.png" ] && [ ! -e "$work/nogp/o/aimdyn-compare-d20.svg" ]
check "compare without gnuplot: the old figure (other data) removed" $?
grep -q "sgd.seed = 5" "$work/nogp/o/aimdyn-sgd-d20.tsv"
check "compare without gnuplot: tables written" $?
expect_exit "plot without gnuplot" 2 env PATH="$work/empty" "$exe" plot --ode "$ode" \
    --figure "$work/nogp/fig"
contains "plot without gnuplot: said" "$work/err" "gnuplot not found"

# gnuplot failing: scaling as compare and sweep (test_faults.sh): its table,
# no figure of other data, exit 2
mkdir -p "$work/failgp"
printf '#!/bin/sh\ncat >/dev/null\nexit 1\n' >"$work/failgp/gnuplot"
chmod +x "$work/failgp/gnuplot"
"$exe" scaling --sgd "$seeds" --out "$work/nogp/sc" --figure "$work/nogp/scfig" \
    >/dev/null 2>&1 </dev/null
expect_exit "scaling with a failing gnuplot" 2 env PATH="$work/failgp:$PATH" "$exe" scaling \
    --sgd "$seeds" --out "$work/nogp/sc" --figure "$work/nogp/scfig" --threshold 0.05
contains "scaling with a failing gnuplot: said" "$work/err" "the figure could not be drawn"
grep -q "threshold = 0.05" "$work/nogp/sc/aimdyn-scaling.tsv" && [ ! -e "$work/nogp/scfig.png" ] &&
    [ ! -e "$work/nogp/scfig.svg" ]
check "scaling with a failing gnuplot: the new table, the old figure removed" $?

# ---- 3. SIGINT and SIGTERM while a figure is drawn: nothing temporary left
mkdir -p "$work/hang"
cat >"$work/hang/gnuplot" <<EOF
#!/bin/sh
echo \$\$ >"$work/gnuplot.pid"
: >"$work/drawing"
exec sleep 60
EOF
chmod +x "$work/hang/gnuplot"
interrupt() { # name, signal, out dir, command...: killed while drawing
    name=$1 sig=$2 dir=$3
    shift 3
    rm -f "$work/drawing" "$work/gnuplot.pid"
    PATH="$work/hang:$PATH" env --default-signal=INT "$@" >/dev/null 2>&1 </dev/null &
    pid=$!
    wait_for "$work/drawing"
    check "$name: reached the drawing" $?
    kill -"$sig" "$pid"
    wait "$pid"
    st=$?
    case $sig in INT) want=130 ;; TERM) want=143 ;; *) want=137 ;; esac
    [ "$st" -eq "$want" ]
    r=$?
    [ $r -ne 0 ] && echo "  $name: exit $st, wanted $want (ended by SIG$sig)"
    check "$name: ended by the signal" $r
    # the run kills and reaps its gnuplot before it ends by the signal
    # (src/io/guard.c): gone by now, no delay to wait
    gp=$(cat "$work/gnuplot.pid" 2>/dev/null)
    if [ -n "$gp" ] && kill -0 "$gp" 2>/dev/null; then
        kill -KILL "$gp"
        check "$name: gnuplot killed with it" 1
    else
        check "$name: gnuplot killed with it" 0
    fi
    no_leftovers "$name" "$dir"
}
mkdir -p "$work/int"
cp -r "$work/base" "$work/int/o"
interrupt "compare, SIGTERM while drawing" TERM "$work/int" \
    "$exe" compare --out "$work/int/o" $cheap --d 20 --set sgd.seed=7
# the seeds that finished are kept for a rerun (DIR/.NAME-sgd-dD.seeds)
diff -r -x '.*.seeds' "$work/base" "$work/int/o" >/dev/null
check "compare, SIGTERM while drawing: the earlier files unchanged" $?
[ -s "$work/int/o/.aimdyn-sgd-d20.seeds/seed-7.tsv" ]
check "compare, SIGTERM while drawing: the finished seeds kept" $?
interrupt "compare, SIGINT while drawing" INT "$work/int" \
    "$exe" compare --out "$work/int/o" $cheap --d 20 --set sgd.seed=7
diff -r -x '.*.seeds' "$work/base" "$work/int/o" >/dev/null
check "compare, SIGINT while drawing: the earlier files unchanged" $?
interrupt "plot, SIGTERM while drawing" TERM "$work/int" \
    "$exe" plot --ode "$ode" --figure "$work/int/o/aimdyn-compare-d20"
interrupt "plot, SIGINT while drawing" INT "$work/int" \
    "$exe" plot --ode "$ode" --figure "$work/int/o/aimdyn-compare-d20"
diff -r -x '.*.seeds' "$work/base" "$work/int/o" >/dev/null
check "plot, signals while drawing: the old figure unchanged" $?
interrupt "sweep, SIGTERM while drawing" TERM "$work/int" \
    "$exe" sweep --out "$work/int/sw" $sweep_cheap --vary training.eta=0.05,0.1
[ -s "$work/int/sw/aimdyn-sweep.d/point-0002.tsv" ] && [ ! -e "$work/int/sw/aimdyn-sweep.tsv" ]
check "sweep, SIGTERM while drawing: points kept, no table without its heatmap" $?
interrupt "scaling, SIGINT while drawing" INT "$work/int" \
    "$exe" scaling --sgd "$seeds" --out "$work/int/sc" --figure "$work/int/sc-fig"
[ ! -e "$work/int/sc/aimdyn-scaling.tsv" ]
check "scaling, SIGINT while drawing: no table without its figure" $?

# ---- 4. one run at a time per output name
mkdir -p "$work/lock"
rm -f "$work/drawing" "$work/gnuplot.pid"
PATH="$work/hang:$PATH" "$exe" compare --out "$work/lock/o" $cheap --d 20 \
    --set "output.name=a" --set "sgd.seed=3" >/dev/null 2>&1 </dev/null &
first=$!
wait_for "$work/drawing"
expect_exit "a second compare into the same name" 1 "$exe" compare --out "$work/lock/o" \
    $cheap --d 20 --set output.name=a
contains "a second compare: refused, saying why" "$work/err" \
    "another aimdyn run (process $first) is writing these files"
contains "a second compare: what to do" "$work/err" "choose another output.dir or output.name"
expect_exit "an ode into the same name" 1 "$exe" ode --out "$work/lock/o" \
    --set training.horizon=0.02 --set training.points=5 --set output.name=a
contains "an ode into the same name: refused" "$work/err" "another aimdyn run"
expect_exit "an sgd at a d of that compare" 1 "$exe" sgd --out "$work/lock/o" $cheap --d 20 \
    --set output.name=a
ls "$work/lock/o" | grep -q . && check "the second runs wrote nothing" 1 || check "the second runs wrote nothing" 0
# sgd locks the files of its d only: runs at other d may share the name
expect_exit "an sgd at another d, same name" 0 "$exe" sgd --out "$work/lock/o" $cheap --d 24 \
    --set output.name=a
expect_exit "a compare into another name, same folder" 0 "$exe" compare --out "$work/lock/o" \
    $cheap --d 20 --set output.name=b
kill -TERM "$first"
wait "$first"
no_leftovers "two runs into one name" "$work/lock"

# ---- 5. temporary files of killed runs are removed by the next run
mkdir -p "$work/stale/o/aimdyn-sweep.d"
for f in .aimdyn-ode.tsv.Ab12Cd .aimdyn-compare-d20.png.Xy34Zw ..aimdyn.journal.Qq11Rr; do
    echo "half written" >"$work/stale/o/$f"
done
echo "half written" >"$work/stale/o/aimdyn-sweep.d/.point-0001.tsv.Ab12Cd"
echo "not ours" >"$work/stale/o/.aimdynx-ode.tsv.Ab12Cd" # another name's
expect_exit "compare after a killed run" 0 "$exe" compare --out "$work/stale/o" $cheap --d 20
expect_exit "sweep after a killed run" 0 "$exe" sweep --out "$work/stale/o" $sweep_cheap \
    --vary training.eta=0.05,0.1
[ -e "$work/stale/o/.aimdynx-ode.tsv.Ab12Cd" ]
check "stale temporary files: another name's file kept" $?
rm "$work/stale/o/.aimdynx-ode.tsv.Ab12Cd"
no_leftovers "stale temporary files" "$work/stale"

# ---- 6. sweep workers end with their parent: both held as they start
# (the test hook's pause, docs/testing.md) until the test has counted
# them and killed their parent; then given up to 60 s to end
mkdir -p "$work/orphan"
mkfifo "$work/fifo"
exec 3<>"$work/fifo" # held open: the paused workers never meet its end
AIMDYN_TEST_HOOK="worker-start=PAUSE@$work/fifo" "$exe" sweep --out "$marker/orphan" \
    $sweep_cheap --vary training.eta=0.05,0.1,0.15,0.2 >/dev/null 2>&1 </dev/null &
parent=$!
i=0
while [ "$(ls "$work" | grep -c '^fifo\.[0-9]*$')" -lt 2 ] && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
workers=$(our_pids | grep -v "^$parent\$" | wc -l)
[ "$workers" -eq 2 ]
check "sweep: workers running (found $workers)" $?
kill -KILL "$parent"
wait "$parent" 2>/dev/null
i=0
while [ -n "$(our_pids)" ] && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
exec 3>&-
left=$(our_pids)
[ -z "$left" ]
check "sweep: no worker outlives a killed parent (left: $left)" $?
find "$marker/orphan" -name '.point-*' | grep -q . && r=1 || r=0
check "sweep: the workers removed their temporary point files" $r

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
