#!/bin/sh
# Kept seed files (DIR/.NAME-sgd-dD.seeds/seed-K.tsv, and recovery's) are
# as trustworthy as checkpoints (src/cli/seedfile.h): a file whose
# "# digest:" line does not match its bytes (an edited value, a deleted
# line), or whose "# config" lines are not the whole configuration (a
# missing key is not its default), is refused, naming the file and what
# to do; removed, its seed is computed again and the files are those of
# an uninterrupted run. One of another version is computed again (said).
# The seed folder is kept without an interruption: a directory in the
# way of the run's table makes its commit fail after every seed is kept.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

run="--d 16 --seeds 2 --jobs 1 --set training.horizon=0.05 --set training.points=6"
seeds=.aimdyn-sgd-d16.seeds

# every run writes to $work/run (output.dir is recorded in the files)
out="$work/run"

# the files of an uninterrupted run
expect_exit "sgd: uninterrupted" 0 "$exe" sgd $run --out "$out"
rm -f "$out"/.*.lock
mv "$out" "$work/ref"

# a folder with both seeds kept, the run's table not written
mkdir -p "$out/aimdyn-sgd-d16.tsv"
expect_exit "sgd: the table cannot be written" 2 "$exe" sgd $run --out "$out"
rmdir "$out/aimdyn-sgd-d16.tsv"
rm -f "$out"/.*.lock
mv "$out" "$work/kept"
[ -f "$work/kept/$seeds/seed-1.tsv" ] && [ -f "$work/kept/$seeds/seed-2.tsv" ]
check "sgd: both seeds kept" $?
contains "a seed file ends its '#' lines with its digest" "$work/kept/$seeds/seed-1.tsv" "^# digest: fnv1a64:[0-9a-f]\{16\}$"

# a copy of the kept folder, its seed-1.tsv passed through a sed script
planted() { # sed script
    rm -rf "$out"
    cp -R "$work/kept" "$out"
    sed "$1" "$work/kept/$seeds/seed-1.tsv" >"$out/$seeds/seed-1.tsv"
}

# seed-1.tsv's FNV-1a digest made to match its bytes again (as an edit
# that knows the format would)
redigest() { # file
    python3 - "$1" <<'PY'
import sys
path = sys.argv[1]
lines = open(path, 'rb').read().split(b'\n')[:-1]
h = 0xcbf29ce484222325
for line in lines:
    if not line.startswith(b'# digest: '):
        for b in line + b'\n':
            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
out = [b'# digest: fnv1a64:%016x' % h if l.startswith(b'# digest: ') else l for l in lines]
open(path, 'wb').write(b'\n'.join(out) + b'\n')
PY
}

# the resumed run after the refused file is removed: the files of the
# uninterrupted run
resumes_after_removal() { # name
    rm -f "$out/$seeds/seed-1.tsv"
    expect_exit "$1: removed, the seed computed again" 0 "$exe" sgd $run --out "$out"
    contains "$1: the other seed resumed" "$work/err" "sgd d=16: 1 of 2 seeds resumed from"
    rm -f "$out"/.*.lock
    same_files "$1: then the files of an uninterrupted run" "$work/ref" "$out"
}

# an edited value (the risk at the last grid point): refused, not used
planted '$ s/^\(1\t[^\t]*\t\)[^\t]*/\17.5/'
expect_exit "an edited value: refused" 2 "$exe" sgd $run --out "$out"
contains "an edited value: named, with what to do" "$work/err" "run/$seeds/seed-1.tsv: its contents do not match its digest (fnv1a64:[0-9a-f]* recorded, fnv1a64:[0-9a-f]* now): edited or damaged; refused: remove it (its seed is then computed from its start)"
[ ! -e "$out/aimdyn-sgd-d16.tsv" ]
check "an edited value: no table written" $?
resumes_after_removal "an edited value"

# a deleted "# config training.eta" line, in a run at another eta:
# refused as damaged (its digest), and with the digest made to match, as
# a configuration line missing (not taken as the default eta)
planted '/^# config training.eta /d'
expect_exit "a deleted config line: refused" 2 "$exe" sgd $run --out "$out" \
    --set training.eta=0.2
contains "a deleted config line: its digest" "$work/err" "seed-1.tsv: its contents do not match its digest"
for eta in 0.1 0.2; do
    planted '/^# config training.eta /d'
    redigest "$out/$seeds/seed-1.tsv"
    expect_exit "a deleted config line, digest matching, eta = $eta: refused" 2 "$exe" sgd $run \
        --out "$out" --set training.eta=$eta
    contains "a deleted config line, eta = $eta: the missing key named" "$work/err" "seed-1.tsv: its '# config' lines are not the whole configuration (no '# config training.eta' line (a missing key is not taken as its default)); refused: remove it"
done
resumes_after_removal "a deleted config line"

# the issue's case: seeds kept by a run at training.eta = 0.05, the line
# deleted (its digest made to match), then a run at the default eta (0.1),
# which a missing line would have stood for
rm -rf "$out"
mkdir -p "$out/aimdyn-sgd-d16.tsv"
expect_exit "sgd at eta = 0.05: the table cannot be written" 2 "$exe" sgd $run --out "$out" \
    --set training.eta=0.05
rmdir "$out/aimdyn-sgd-d16.tsv"
for f in "$out/$seeds"/seed-*.tsv; do
    sed -i '/^# config training.eta /d' "$f"
    redigest "$f"
done
expect_exit "eta = 0.05's seeds without their eta line, at eta = 0.1: refused" 2 "$exe" sgd \
    $run --out "$out"
contains "eta = 0.05's seeds without their eta line: named" "$work/err" "seed-1.tsv: its '# config' lines are not the whole configuration (no '# config training.eta' line"
rm -rf "$out"

# an extra and a repeated line are not the whole configuration either
planted 's/^\(# config training.eta = .*\)$/\1\n\1/'
redigest "$out/$seeds/seed-1.tsv"
expect_exit "a repeated config line: refused" 2 "$exe" sgd $run --out "$out"
contains "a repeated config line: named" "$work/err" "'# config training.eta = 0.1' where aimdyn writes '# config training.gamma = 0'"

# no digest line (cut short, or written by hand)
planted '/^# digest: /d'
expect_exit "no digest line: refused" 2 "$exe" sgd $run --out "$out"
contains "no digest line: named" "$work/err" "seed-1.tsv: no '# digest: fnv1a64:...' line (cut short, or not written whole); refused: remove it"

# a seed file of another version: computed again (as a checkpoint of
# another version is), the files those of an uninterrupted run
planted 's/^# aimdyn .*/# aimdyn 0.0.0-other/'
expect_exit "another version: computed again" 0 "$exe" sgd $run --out "$out"
contains "another version: said" "$work/err" "was written by aimdyn 0.0.0-other, this is aimdyn .*: seed computed again"
rm -f "$out"/.*.lock
same_files "another version: the files of an uninterrupted run" "$work/ref" "$out"

# the untouched kept folder resumes both seeds into the same files
rm -rf "$out"
cp -R "$work/kept" "$out"
expect_exit "kept seeds: resumed" 0 "$exe" sgd $run --out "$out"
contains "kept seeds: both resumed" "$work/err" "sgd d=16: 2 of 2 seeds resumed from"
rm -f "$out"/.*.lock
same_files "kept seeds: the files of an uninterrupted run" "$work/ref" "$out"

# recovery's seed files are sealed and checked alike
rec="--d 16 --seeds 2 --finite always --jobs 1 --set training.eta=0.2 --set training.horizon=0.05 --set training.points=6"
mkdir -p "$work/rec/aimdyn-recovery.tsv"
"$exe" recovery $rec --out "$work/rec" >/dev/null 2>&1
rmdir "$work/rec/aimdyn-recovery.tsv"
rseed="$work/rec/.aimdyn-recovery-d16.seeds/seed-1.tsv"
contains "recovery: a seed file with its digest" "$rseed" "^# digest: fnv1a64:"
sed -i 's/^\(1\t[^\t]*\t\)[^\t]*/\10.5/' "$rseed"
expect_exit "recovery: an edited seed file refused" 2 "$exe" recovery $rec --out "$work/rec"
contains "recovery: named" "$work/err" "aimdyn recovery: .*seed-1.tsv: its contents do not match its digest"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
