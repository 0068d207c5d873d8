#!/bin/sh
# Fault injection: a full disk (a small tmpfs), a failing gnuplot (one
# that exits 1, one that leaves truncated figures) and SIGINT, SIGTERM or
# SIGKILL at each of several named events of compare, plot and sweep (a
# grid point, a seed kept, a worker started, a sweep point kept, a figure
# being drawn: the test hook AIMDYN_TEST_HOOK, docs/testing.md), and a
# failing rename or a SIGTERM at each rename of
# recovery's files (strace's fault injection). Each fault must leave either the old complete outputs
# or the new complete outputs, never a mix (by the documented rule, the
# new outputs of a run whose figure gnuplot could not draw are its tables
# without a figure; a sweep keeps the point files it finished, sgd and
# compare the seed files), and
# nothing temporary. A SIGKILL cannot be cleaned up after by the process
# it kills: the next run with the same output name must remove what it
# left and end with the new outputs.
#
# Usage: test_faults.sh AIMDYN. The full-disk part mounts a tmpfs in a
# private mount namespace (unshare: as root, or in a user namespace);
# where that is impossible it fails, saying why.
set -u
exe="$1"
if [ "${2:-}" = "--full-disk" ]; then # inside the namespace, see below
    work=$3
else
    work=$(mktemp -d)
fi
export OPENBLAS_NUM_THREADS=1
out="$work/disk/o" # every run writes here (the files record the path)
refs="$work/refs"

. "$(dirname "$0")/checks.sh"

finish() {
    echo "$passes passed, $failures failed"
    [ "$failures" -eq 0 ]
    exit $?
}

# ---- the three commands, each with an old (A) and a new (B) run ----

common="--set training.horizon=0.02 --set training.points=5"
launch="" # a command in front of the run's: env with the test hook, strace
run_case() { # case, A|B: the run, into $out
    case $1 in
    compare) $launch "$exe" compare --out "$out" $common --d 20 --seeds 2 \
        --set sgd.seed=$([ "$2" = A ] && echo 1 || echo 2) ;;
    plot) $launch "$exe" plot --ode "$refs/in-$2/aimdyn-ode.tsv" \
        --sgd "$refs/in-$2/aimdyn-sgd-d20.tsv" --figure "$out/fig" ;;
    sweep) $launch "$exe" sweep --out "$out" $common --jobs 2 --vary training.eta=0.05,0.1,0.15 ;;
    recovery) $launch "$exe" recovery --out "$out" --set model.activation=he2 \
        --set training.horizon=0.6 --d 16 --seeds 2 --finite always \
        --set sgd.seed=$([ "$2" = A ] && echo 1 || echo 2) ;;
    esac
}

# The old state of a case: the A run's files (a sweep starts from none).
reset_case() { # case
    rm -rf "$out"
    mkdir -p "$out"
    [ "$1" = sweep ] || cp -a "$refs/$1-A/." "$out/"
}

# Temporary, lock and journal files under a directory.
leftovers() {
    find "$1" \( -name '.*.??????' -o -name '*.png.??????' -o -name '*.svg.??????' \
        -o -name '.*.lock' -o -name '.*.journal' \) -print 2>/dev/null
}

same() { # dir, reference dir: the same files, byte for byte (temporary ones
    # aside), and beside them only the seeds an interrupted run kept
    diff -r -x '.*.??????' -x '.*.lock' -x '.*.seeds' "$1" "$2" >/dev/null 2>&1 &&
        seeds_kept "$1"
}

# The seed folders of sgd and compare (DIR/.NAME-sgd-dD.seeds: the seeds
# an interrupted run finished, for a rerun) hold seed files only, each
# complete (written whole: it ends with a line break).
seeds_kept() {
    for f in $(cd "$1" && find . -path './.*.seeds/*' -type f ! -name '.*.??????'); do
        case $f in
        ./.*.seeds/seed-*.tsv) [ "$(tail -c 1 "$1/$f" | od -An -tx1 | tr -d ' ')" = 0a ] ||
            return 1 ;;
        *) return 1 ;;
        esac
    done
}

# What the outputs of a case are: old, new, new-nofig (the new tables
# without their figure), points (a sweep stopped before its table: some of
# its point files, each complete), journal (a set killed during its
# renames, completed by the next run), or mix.
state_of() { # case
    if [ -n "$(find "$out" -name '.*.journal')" ]; then
        echo journal
    elif same "$out" "$refs/$1-B"; then
        echo new
    elif [ "$1" != sweep ] && same "$out" "$refs/$1-A"; then
        echo old
    elif [ "$1" != plot ] && same "$out" "$refs/$1-B-nofig"; then
        echo new-nofig
    elif [ "$1" = sweep ] && sweep_points; then
        echo points
    else
        echo mix
    fi
}

# A sweep's folder holds nothing but point files of the new run.
sweep_points() {
    for f in $(cd "$out" && find . -type f ! -name '.*.??????' ! -name '.*.lock'); do
        case $f in ./aimdyn-sweep.d/point-*.tsv | ./aimdyn-sweep.d/point-*.json)
            same_bytes "$out/$f" "$refs/sweep-B/$f" || return 1 ;;
        *) return 1 ;;
        esac
    done
}

expect_state() { # name, case, allowed states...
    name=$1 cs=$2
    shift 2
    found=$(state_of "$cs")
    ok=1
    for a in "$@"; do [ "$found" = "$a" ] && ok=0; done
    [ $ok -ne 0 ] && echo "  $name: the outputs are '$found'; allowed: $*" &&
        { diff -r -x '.*.??????' -x '.*.lock' "$out" "$refs/$cs-B" | head -5; }
    check "$name: old or new outputs, never a mix" $ok
}

no_leftovers() { # name
    left=$(leftovers "$work/disk")
    [ -z "$left" ]
    r=$?
    [ $r -ne 0 ] && echo "  $1: left behind: $left"
    check "$1: nothing temporary left" $r
}

# ---- the full disk (inside a private mount namespace) ----

if [ "${2:-}" = "--full-disk" ]; then
    mount -t tmpfs -o size=320k aimdyn-fault "$work/disk" || {
        echo "FAIL: full disk: cannot mount a tmpfs in the namespace"
        exit 1
    }
    # free bytes left on the disk for the new run, from nothing to all
    # that the new outputs need (about 100 KiB: tables and figures)
    for cs in compare plot sweep; do
        first="" last=""
        for free in 0 16384 49152 90112 204800; do
            reset_case $cs
            avail=$(df -B1 --output=avail "$work/disk" | tail -n 1)
            fill=$((avail - free))
            [ $fill -gt 0 ] && head -c "$fill" /dev/zero >"$work/disk/filler" 2>/dev/null
            run_case $cs B >/dev/null 2>"$work/err" </dev/null
            st=$?
            rm -f "$work/disk/filler"
            echo "  $cs, $free bytes free: exit $st, outputs $(state_of $cs)"
            [ $st -eq 0 ] || [ $st -eq 2 ]
            r=$?
            [ $r -ne 0 ] && echo "  $cs on a full disk ($free bytes free): exit $st: $(cat "$work/err")"
            check "$cs on a full disk ($free bytes free): exit 0 or 2" $r
            expect_state "$cs on a full disk ($free bytes free)" $cs old new new-nofig points
            no_leftovers "$cs on a full disk ($free bytes free)"
            [ -z "$first" ] && first="$st $(state_of $cs)"
            last="$st $(state_of $cs)"
        done
        # the test reaches both ends: a disk too full for anything new, and
        # room enough for the whole new run
        case $first in 2\ old | 2\ points) r=0 ;; *) r=1 ;; esac
        check "$cs on a full disk: nothing replaced when nothing fits (got '$first')" $r
        [ "$last" = "0 new" ]
        check "$cs on a full disk: the new outputs when they fit (got '$last')" $?
    done
    umount "$work/disk"
    finish
fi

trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$refs"

# ---- the references: every case's old and new outputs, undisturbed ----

# a gnuplot that fails: the new tables without their figure (whose
# sidecars list no figure) are a run with it
mkdir -p "$work/fail"
printf '#!/bin/sh\ncat >/dev/null\necho "fake gnuplot: failing" >&2\nexit 1\n' >"$work/fail/gnuplot"
chmod +x "$work/fail/gnuplot"

for cs in compare plot sweep recovery; do
    for ab in A B; do
        [ "$cs" = sweep ] && [ "$ab" = A ] && continue
        rm -rf "$out"
        mkdir -p "$out"
        run_case $cs $ab >/dev/null 2>&1 </dev/null
        st=$?
        check "reference $cs $ab (exit $st)" $st
        cp -a "$out" "$refs/$cs-$ab"
        [ "$cs" = compare ] && mkdir -p "$refs/in-$ab" && cp "$out"/*.tsv "$refs/in-$ab/"
        [ "$cs" = plot ] && continue # a plot is its figure
        rm -rf "$out"
        mkdir -p "$out"
        PATH="$work/fail:$PATH" run_case $cs $ab >/dev/null 2>&1 </dev/null
        cp -a "$out" "$refs/$cs-$ab-nofig"
    done
done
leftover_refs=$(leftovers "$refs")
[ -z "$leftover_refs" ]
check "references: nothing temporary left" $?

# ---- a failing gnuplot ----

real_gnuplot=$(command -v gnuplot)
mkdir -p "$work/trunc"
# draws with the real gnuplot, then cuts every figure it wrote short (aimdyn
# names the temporary outputs first: out_png = '...')
cat >"$work/trunc/gnuplot" <<EOF
#!/bin/sh
script=\$(mktemp)
if [ \$# -gt 0 ]; then cat "\$1"; else cat; fi >"\$script"
"$real_gnuplot" "\$script"
st=\$?
sed -n "s/^out_[a-z]* = '\\(.*\\)'\$/\\1/p" "\$script" | sed "s/''/'/g" | while read -r f; do
    truncate -s 100 "\$f"
done
rm -f "\$script"
exit \$st
EOF
chmod +x "$work/trunc/gnuplot"
for fake in fail trunc; do
    for cs in compare plot sweep; do
        reset_case $cs
        PATH="$work/$fake:$PATH" run_case $cs B >"$work/stdout" 2>"$work/err" </dev/null
        st=$?
        [ $st -eq 2 ]
        r=$?
        [ $r -ne 0 ] && echo "  $cs, gnuplot $fake: exit $st; $(cat "$work/err")"
        check "$cs, gnuplot $fake: exit 2" $r
        # a figure that was not drawn is not announced as written
        ! grep -q 'wrote .*\.png' "$work/stdout"
        check "$cs, gnuplot $fake: no 'wrote' line for the figure" $?
        if [ $cs = plot ]; then
            expect_state "$cs, gnuplot $fake" $cs old # the old figure kept
        else
            expect_state "$cs, gnuplot $fake" $cs new-nofig # no figure of other data
        fi
        no_leftovers "$cs, gnuplot $fake"
    done
done

# ---- signals at named events ----

# The run's main process gets the signal (from a worker, for the events
# in workers) at the first occurrence of the event in the process that
# meets it: while SGD seeds run (after grid point 3 of 5), once a seed
# is kept, as the sweep's workers start, once a sweep point is kept, and
# while a figure is drawn.
for trial in compare:sgd-point:k=3 compare:seed-done compare:figure-draw plot:figure-draw \
    sweep:worker-start sweep:sweep-point-done sweep:figure-draw; do
    cs=${trial%%:*} event=${trial#*:}
    for sig in INT TERM KILL; do
        name="$cs, SIG$sig at $event"
        reset_case $cs
        # env: SIGINT as the default even when this test was started ignoring it
        launch="env --default-signal=INT AIMDYN_TEST_HOOK=$event=$sig@main"
        run_case $cs B >/dev/null 2>&1 </dev/null
        st=$?
        launch=""
        echo "  $name: exit $st, outputs $(state_of $cs)"
        case $sig in INT) want=130 ;; TERM) want=143 ;; *) want=137 ;; esac
        [ $st -eq $want ]
        check "$name: ended by the signal (exit $st, wanted $want)" $?
        expect_state "$name" $cs old new points $([ $sig = KILL ] && echo journal)
        [ $sig = KILL ] || no_leftovers "$name"
        # the next run finds what a killed one left, and ends with the new outputs
        run_case $cs B >/dev/null 2>"$work/err" </dev/null
        st=$?
        check "$name, then a full run: exit 0" $st
        [ "$(state_of $cs)" = new ]
        check "$name, then a full run: the new outputs" $?
        no_leftovers "$name, then a full run"
    done
done

# ---- recovery: a rename that fails, a signal between the renames ----

# strace's fault injection at the Nth rename of the run (the journal's,
# then the three files'): it fails (EIO), or the run gets SIGTERM there.
# The files are one set: the old ones stay, the new ones are all in
# place, or a journal is left that the next run completes. (They were
# renamed one by one: a failure or a signal between them mixed two runs.)
if command -v strace >/dev/null 2>&1; then
    for inject in error=EIO signal=TERM; do
        for nth in 1 2 3 4; do
            name="recovery, rename $nth: $inject"
            reset_case recovery
            # LeakSanitizer cannot run under ptrace: the full run below checks leaks
            launch="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
                strace -f -o /dev/null -e trace=rename,renameat,renameat2
                -e inject=rename,renameat,renameat2:$inject:when=$nth"
            run_case recovery B >/dev/null 2>"$work/err" </dev/null
            st=$?
            launch=""
            found=$(state_of recovery)
            echo "  $name: exit $st, outputs $found"
            case $inject:$st in error*:2 | signal*:143) r=0 ;; *) r=1 ;; esac
            [ $r -ne 0 ] && echo "  $name: exit $st: $(cat "$work/err")"
            check "$name: exit 2 (failed) or 143 (SIGTERM)" $r
            expect_state "$name" recovery old new journal
            [ "$found" = journal ] || no_leftovers "$name"
            run_case recovery B >/dev/null 2>"$work/err" </dev/null
            check "$name, then a full run: exit 0" $?
            [ "$(state_of recovery)" = new ]
            check "$name, then a full run: the new outputs" $?
            no_leftovers "$name, then a full run"
        done
    done
    # After its last rename a run syncs the folder, so that the renames
    # themselves survive a power cut: an fsync of the output folder follows
    # the last rename of the set (strace -y names each descriptor's path).
    reset_case recovery
    env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -y \
        -o "$work/trace" -e trace=rename,renameat,renameat2,fsync \
        "$exe" recovery --out "$out" --set model.activation=he2 --set training.horizon=0.6 \
        --d 16 --seeds 2 --finite always --set sgd.seed=2 >/dev/null 2>"$work/err" </dev/null
    check "recovery under strace: exit 0" $?
    last_rename=$(grep -n 'rename' "$work/trace" | tail -n 1 | cut -d: -f1)
    synced=$(tail -n +"${last_rename:-1}" "$work/trace" | grep -c "fsync([0-9]*<$(cd "$out" && pwd -P)>")
    [ -n "$last_rename" ] && [ "$synced" -ge 1 ]
    check "the folder is synced after the last rename (renames traced: ${last_rename:+yes})" $?
else
    echo "  recovery: no strace to inject the faults with (scripts/setup.sh installs it)"
    check "recovery: strace found" 1
fi

# ---- the full disk: in a private mount namespace with a tmpfs ----

if [ "$(id -u)" -eq 0 ]; then
    ns="unshare --mount --propagation private"
else
    ns="unshare --user --map-root-user --mount --propagation private"
fi
if $ns true 2>"$work/err"; then
    $ns sh "$0" "$exe" --full-disk "$work"
    check "full disk (in a private mount namespace)" $?
else
    echo "  full disk: cannot make a private mount namespace to mount a tmpfs in ($ns:" \
        "$(cat "$work/err")); run this test as root (CI does)"
    check "full disk: a tmpfs could be mounted" 1
fi

finish
