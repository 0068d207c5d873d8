#!/bin/sh
# Every file aimdyn reads is a regular file of at most a stated size
# (src/io/input.c): a FIFO, a device or a file over its cap is refused at
# once, with a message naming the file and the limit; never waited on,
# never read without end. Saved states (ode --start), sidecars (rerun),
# a seed's checkpoint and seed file in an sgd run's seed folder. Each
# command runs under `timeout 60`, so that a reader that blocks fails
# the test instead of hanging it.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

refused() { # name, file named in the message, limit text, command...
    label=$1 file=$2 limit=$3
    shift 3
    expect_exit "$label: refused" 1 timeout 60 "$@"
    contains "$label: the file named" "$work/err" "$file"
    contains "$label: the limit named" "$work/err" "$limit"
}
# any failure (a seed that fails is a run-time failure, 2)
refused_run() { # name, file named, limit text, command...
    label=$1 file=$2 limit=$3
    shift 3
    expect_failure "$label: refused" timeout 60 "$@"
    contains "$label: the file named" "$work/err" "$file"
    contains "$label: the limit named" "$work/err" "$limit"
}
not_regular="not a regular file (a device, a pipe or a socket)"
mkfifo "$work/fifo"

# --- saved states: ode --start (training.start_file) ---
out="$work/o"
refused "ode --start a FIFO" "$work/fifo: $not_regular" "of at most 34359738368 bytes" \
    "$exe" ode --start "$work/fifo" --out "$out"
refused "ode --start /dev/zero" "/dev/zero: $not_regular" "of at most 34359738368 bytes" \
    "$exe" ode --start /dev/zero --out "$out"
# a state's header, then more bytes than its matrices (d = 8, direct:
# 128 values) can take
printf 'format\t1\nseed\t1\ntau\t0\nstep\t0\nd\t8\ndecomposition\tdirect\ncolumns\t0\n' \
    >"$work/big.state"
printf 'tokens\t1\nsymmetric\t0\ncentring\tcentred\n' >>"$work/big.state"
truncate -s 10M "$work/big.state"
refused "ode --start a state larger than its header allows" "$work/big.state: 10485760 bytes" \
    "of at most 1051776 bytes for its d = 8 and columns = 0" \
    "$exe" ode --start "$work/big.state" --out "$out"
truncate -s 33G "$work/huge.state" # sparse: no disk used
refused "ode --start a state over the cap" "$work/huge.state: 35433480192 bytes" \
    "of at most 34359738368 bytes" "$exe" ode --start "$work/huge.state" --out "$out"
# Windows line endings: said, not "format = '1': not an integer"
printf 'format\t1\r\nseed\t1\r\n' >"$work/crlf.state"
expect_exit "ode --start a CRLF state: refused" 1 timeout 60 "$exe" ode \
    --start "$work/crlf.state" --out "$out"
contains "ode --start a CRLF state: said" "$work/err" \
    "crlf.state:1: the line ends with a carriage return: the file has CRLF (Windows) line endings"
[ ! -e "$out" ]
check "ode --start: nothing written after the refusals" $?

# --- sidecars: rerun ---
refused "rerun a FIFO sidecar" "$work/fifo.json: $not_regular" "of at most 16777216 bytes" \
    sh -c 'mkfifo "$1/fifo.json" && exec "$2" rerun "$1/fifo.json"' sh "$work" "$exe"
truncate -s 17M "$work/big.json"
refused "rerun a sidecar over the cap" "$work/big.json: 17825792 bytes" \
    "of at most 16777216 bytes" "$exe" rerun "$work/big.json"
# a result table whose sidecar is a FIFO
: >"$work/table.tsv"
refused "rerun a table whose sidecar is a FIFO" "$work/table.json: $not_regular" \
    "of at most 16777216 bytes" \
    sh -c 'mkfifo "$1/table.json" && exec "$2" rerun "$1/table.tsv"' sh "$work" "$exe"

# --- an sgd run's seed folder: seed files and checkpoints ---
# a small sgd run (sgd --out S $sgd_small: seed folder S/.aimdyn-sgd-d24.seeds)
sgd_small="--d 24 --seeds 1 --jobs 1 --set training.points=3 --set training.horizon=0.02"
seeds_of() { echo "$1/.aimdyn-sgd-d24.seeds"; }
# an sgd run into a new folder whose seed folder holds FILE, made by a
# command (given FILE's path last): refused, naming FILE and the limit
seed_case() { # name, FILE, text after "FILE: ", limit, command...
    label=$1 planted=$2 said=$3 limit=$4
    shift 4
    s="$work/s$((n_seed = ${n_seed:-0} + 1))"
    mkdir -p "$(seeds_of "$s")"
    "$@" "$(seeds_of "$s")/$planted"
    refused_run "$label" "$planted: $said" "$limit" "$exe" sgd --out "$s" $sgd_small
}
# a checkpoint's cap is what this run's seed could write (its SGD state,
# rows and header: 2.2 MB at d = 24); 10 MB is refused before it is read
ckpt_cap="a checkpoint that aimdyn wrote for this run's seed of at most [0-9]* bytes"
table_cap="of at most 268435456 bytes"
seed_case "sgd with a FIFO checkpoint" seed-1.ckpt "$not_regular" "$ckpt_cap" mkfifo
seed_case "sgd with a checkpoint over the seed's size" seed-1.ckpt "10485760 bytes" "$ckpt_cap" \
    truncate -s 10M
seed_case "sgd with a checkpoint that is a symbolic link" seed-1.ckpt "a symbolic link" \
    "$ckpt_cap" ln -s "$work/big.json"
seed_case "sgd with a FIFO seed file" seed-1.tsv "$not_regular" "$table_cap" mkfifo
seed_case "sgd with a seed file over the cap" seed-1.tsv "314572800 bytes" "$table_cap" \
    truncate -s 300M
# a sound run into the same kind of folder: the seed folder is gone after
expect_exit "sgd run with a seed folder" 0 "$exe" sgd --out "$work/s6" $sgd_small
[ ! -e "$(seeds_of "$work/s6")" ]
check "sgd: the seed folder removed after the run" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
