#!/bin/sh
# What aimdyn does in a folder it writes to (README, "What aimdyn does in
# a folder it writes to"): a journal planted there that names a file
# outside the folder (an absolute path, as an older aimdyn wrote them, or
# "../") is refused with its path and left in place, and nothing outside
# is touched; a lock or journal that is a symbolic link, a FIFO or a
# directory is refused, its target unchanged, without waiting. Each
# command runs under `timeout 60`, so that a run that blocks fails the
# test instead of hanging it.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

# any failure (a refused folder is a run-time failure)
refused() { # name, text of the message, command...
    label=$1 text=$2
    shift 2
    expect_failure "$label: refused" timeout 60 "$@"
    contains "$label: said" "$work/err" "$text"
}
# a journal as atomic_journal.c writes it: the tag, then the fields given, then
# "E"; every field NUL-terminated
journal() { # file, fields...
    f=$1
    shift
    { printf 'aimdyn journal\000'; for x in "$@"; do printf '%s\000' "$x"; done
      printf 'E\000'; } >"$f"
}
# the files outside the folders, which no run may touch
mkdir "$work/outside"
echo precious >"$work/outside/victim"
echo "outside temporary" >"$work/outside/src"
outside_unchanged() { # name
    [ "$(cat "$work/outside/victim")" = precious ] &&
        [ "$(cat "$work/outside/src")" = "outside temporary" ] &&
        [ "$(ls -A "$work/outside")" = "$(printf 'src\nvictim')" ]
    check "$1: nothing outside touched" $?
}

# --- planted journals ---
case_journal() { # name, journal's NAME, fields...
    case_name=$1 jname=$2
    shift 2
    d="$work/j$((n_case = ${n_case:-0} + 1))"
    mkdir -p "$d"
    journal "$d/.$jname.journal" "$@"
    refused "$case_name" "the journal '$d/.$jname.journal' names '" "$exe" ode --out "$d" \
        --set training.points=3
    [ -f "$d/.$jname.journal" ]
    check "$case_name: the journal left in place" $?
    [ ! -e "$d/aimdyn-ode.tsv" ]
    check "$case_name: nothing written" $?
    outside_unchanged "$case_name"
}
case_journal "a journal removing an absolute path" aimdyn U "$work/outside/victim"
case_journal "a journal renaming absolute paths" aimdyn R "$work/outside/src" "$work/outside/victim"
case_journal "a journal removing ../" aimdyn U "../outside/victim"
case_journal "a journal renaming from ../" aimdyn R "../outside/src" "x.tsv"
case_journal "a journal renaming onto ../" aimdyn R ".x.tsv.Ab12Cd" "../outside/victim"
# another name's journal (its lock free) is completed by any run: refused too
case_journal "another name's journal" other U "$work/outside/victim"
# a journal with a sound first record: not even that one applied
d="$work/jsound"
mkdir -p "$d"
echo old >"$d/kept.tsv"
echo new >"$d/.kept.tsv.Ab12Cd"
journal "$d/.aimdyn.journal" R .kept.tsv.Ab12Cd kept.tsv U "$work/outside/victim"
refused "a journal with a sound record first" \
    "names '$work/outside/victim', not a file of its own folder" \
    "$exe" ode --out "$d" --set training.points=3
[ "$(cat "$d/kept.tsv")" = old ] && [ -f "$d/.kept.tsv.Ab12Cd" ]
check "a journal with a sound record first: no record applied" $?
# a sound journal of plain names is completed, and the run goes on
d="$work/jplain"
mkdir -p "$d"
echo new >"$d/.kept.tsv.Ab12Cd"
journal "$d/.aimdyn.journal" R .kept.tsv.Ab12Cd kept.tsv
expect_exit "a journal of plain names: completed" 0 timeout 60 "$exe" ode --out "$d" \
    --set training.points=3
[ "$(cat "$d/kept.tsv")" = new ] && [ ! -e "$d/.aimdyn.journal" ]
check "a journal of plain names: its rename done, the journal gone" $?

# --- locks and journals that are no regular files ---
# an ODE run into a new folder $d holding FILE, made by a command (given
# FILE's path last): refused, saying so
planted_case() { # name, FILE, text of the message (after $d/FILE), command...
    label=$1 planted=$2 said=$3
    shift 3
    d="$work/l$((n_planted = ${n_planted:-0} + 1))"
    mkdir -p "$d"
    "$@" "$d/$planted"
    refused "$label" "$d/$planted$said" "$exe" ode --out "$d" --set training.points=3
    outside_unchanged "$label"
}
planted_case "a lock that is a symbolic link" .aimdyn.lock "' is a symbolic link" \
    ln -s "$work/outside/victim"
[ -L "$d/.aimdyn.lock" ]
check "a lock that is a symbolic link: left in place" $?
planted_case "a lock that is a dangling symbolic link" .aimdyn.lock "' is a symbolic link" \
    ln -s "$work/outside/new"
planted_case "a lock that is a hard link" .aimdyn.lock \
    "' is a file with other names too (a hard link)" ln "$work/outside/victim"
rm -f "$d/.aimdyn.lock"
planted_case "a lock that is a FIFO" .aimdyn.lock "' is not a regular file" mkfifo
planted_case "a lock that is a directory" .aimdyn.lock "' is a directory" mkdir
planted_case "a journal that is a FIFO" .aimdyn.journal ": not a regular file" mkfifo
[ -p "$d/.aimdyn.journal" ]
check "a journal that is a FIFO: left in place" $?
planted_case "a journal that is a directory" .aimdyn.journal \
    ": a directory, not a regular file" mkdir
journal "$work/outside.journal" U "$work/outside/victim"
planted_case "a journal that is a symbolic link" .aimdyn.journal ": a symbolic link" \
    ln -s "$work/outside.journal"

# a seed folder or a sweep's point folder that is a symbolic link: a run
# would write its seed or point files through it, and remove them
mkdir "$work/outside-seeds"
echo precious >"$work/outside-seeds/seed-1.tsv"
d="$work/seeds-link"
mkdir -p "$d"
ln -s "$work/outside-seeds" "$d/.aimdyn-sgd-d24.seeds"
refused "sgd into a seed folder that is a symbolic link" \
    "'$d/.aimdyn-sgd-d24.seeds' is a symbolic link" "$exe" sgd --out "$d" --d 24 --seeds 1 \
    --jobs 1 --set training.points=3 --set training.horizon=0.02
[ "$(ls -A "$work/outside-seeds")" = seed-1.tsv ] &&
    [ "$(cat "$work/outside-seeds/seed-1.tsv")" = precious ]
check "sgd into a seed folder that is a symbolic link: its target unchanged" $?
d="$work/sweep-link"
mkdir -p "$d"
ln -s "$work/outside-seeds" "$d/aimdyn-sweep.d"
refused "sweep into a point folder that is a symbolic link" \
    "'$d/aimdyn-sweep.d' is a symbolic link" "$exe" sweep --out "$d" \
    --set training.horizon=0.05 --set training.points=11 --vary training.eta=0.05,0.1
[ "$(ls -A "$work/outside-seeds")" = seed-1.tsv ]
check "sweep into a point folder that is a symbolic link: its target unchanged" $?

# scaling's --figure in another folder than --out: a set (and journal)
# of its own there, each folder's files in place, no lock or journal left
sc="$work/scaling"
for dd in 16 24; do
    expect_exit "scaling: sgd at d = $dd" 0 "$exe" sgd --out "$sc/runs" --d $dd --seeds 2 \
        --jobs 1 --set training.points=5 --set training.horizon=0.5 --set training.eta=0.05
done
mkdir -p "$sc/figs"
expect_exit "scaling with its figure in another folder" 0 "$exe" scaling --out "$sc/table" \
    --sgd "$sc/runs/aimdyn-sgd-d16-seeds.tsv" --sgd "$sc/runs/aimdyn-sgd-d24-seeds.tsv" \
    --figure "$sc/figs/fig"
[ "$(ls -A "$sc/table")" = "$(printf 'aimdyn-scaling.json\naimdyn-scaling.tsv')" ]
check "scaling: the table's folder holds the table and its sidecar only" $?
if command -v gnuplot >/dev/null 2>&1; then
    [ "$(ls -A "$sc/figs")" = "$(printf 'fig.gp\nfig.png\nfig.svg')" ]
    check "scaling: the figure's folder holds the figure only" $?
fi

# a folder that is sound: the run writes its files and leaves no lock
expect_exit "a sound folder" 0 timeout 60 "$exe" ode --out "$work/sound" --set training.points=3
[ "$(ls -A "$work/sound")" = "$(printf 'aimdyn-ode.json\naimdyn-ode.tsv')" ]
check "a sound folder: the table and its sidecar, nothing else" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
