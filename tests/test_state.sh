#!/bin/sh
# Saved SGD states (sgd --save-state, output.save_state) and runs that
# start from one (training.start_file, --start): the file's exact round
# trip, SGD continued from it, the ODE from the quantities measured on it,
# and the files and combinations refused.
. "$(dirname "$0")/checks.sh"
begin_test "$@"

# the data rows of a table (its '#' lines dropped)
rows() { grep -v '^#' "$1"; }
# row r (1 = the column line) of table $1 without its first `skip` columns
row_tail() { rows "$1" | awk -F'\t' -v r="$2" -v k="$3" 'NR == r { s = ""
    for (i = k + 1; i <= NF; i++) s = s (i > k + 1 ? "\t" : "") $i; print s }'; }
# the matrix blocks of a state file (all after its header lines)
matrices() { sed -n '/^matrix/,$p' "$1"; }

# --- direct student: save at two grid points of two seeds ---
D="--d 24 --set training.points=5 --set training.horizon=0.04 --set training.eta=0.05"
expect_exit "sgd --save-state" 0 "$exe" sgd $D --seeds 2 --jobs 1 --save-state 0,0.02 \
    --out "$work/a"
for s in 1 2; do
    for t in 0 0.02; do
        [ -f "$work/a/aimdyn-sgd-d24-seed$s-tau$t.state" ]
        check "state of seed $s at tau = $t written" $?
    done
done
[ ! -e "$work/a/aimdyn-sgd-d24-seed1-tau0.01.state" ]
check "no state at a grid point not asked for" $?
st="$work/a/aimdyn-sgd-d24-seed1-tau0.02.state"
contains "state records the version" "$st" "^# aimdyn "
contains "state records the configuration" "$st" "^# config training.eta = 0.05$"
contains "state records seed, tau and step" "$st" "^# the SGD matrices of seed 1 at tau = 0.02 (step 230"
contains "state header: d" "$st" "^d	24$"
contains "state: the teacher" "$st" "^matrix	teacher	24	24$"
contains "state: the direct student S" "$st" "^matrix	S	24	24$"
contains "state values are hex floats" "$st" "^-*0x1\.[0-9a-f]*p"
contains "the run records output.save_state" "$work/a/aimdyn-sgd-d24.tsv" \
    "^# config output.save_state = 0,0.02$"

# SGD from the state: its first row is the saved row's, every column but
# tau and n (the same seed: the same held-out samples, so also the risk)
expect_exit "sgd --start" 0 "$exe" sgd $D --seeds 1 --jobs 1 --start "$st" --save-state 0 \
    --out "$work/b"
saved=$(row_tail "$work/a/aimdyn-sgd-d24-seeds.tsv" 4 3)
first=$(row_tail "$work/b/aimdyn-sgd-d24-seeds.tsv" 2 3)
[ -n "$saved" ] && [ "$saved" = "$first" ]
check "restart's first row equals the saved row (saved: $saved; first: $first)" $?
contains "restart records the start file" "$work/b/aimdyn-sgd-d24.tsv" \
    "^# config training.start_file = $st$"
contains "restart records hierarchy.start = file" "$work/b/aimdyn-sgd-d24.tsv" \
    "^# config hierarchy.start = file$"
# ... and the digest of the state's bytes (FNV-1a, 64 bits, computed here
# independently), so that a later run from a replaced state is refused
digest=$(python3 -c 'import sys
h = 0xcbf29ce484222325
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 0x100000001b3) % 2**64
print("fnv1a64:%016x" % h)' "$st")
contains "restart records the state's digest" "$work/b/aimdyn-sgd-d24.tsv" \
    "^# config training.start_digest = $digest$"
# the round trip: the restart's state at its tau = 0 holds the same doubles
matrices "$st" >"$work/m1"
matrices "$work/b/aimdyn-sgd-d24-seed1-tau0.state" >"$work/m2"
cmp -s "$work/m1" "$work/m2"
check "state -> restart -> state: the same matrices, bit for bit" $?
# a restart is seeded: run again, the same bytes
expect_exit "sgd --start again" 0 "$exe" sgd $D --seeds 1 --jobs 1 --start "$st" --save-state 0 \
    --out "$work/b2"
rows "$work/b/aimdyn-sgd-d24-seeds.tsv" >"$work/s1"
rows "$work/b2/aimdyn-sgd-d24-seeds.tsv" >"$work/s2"
cmp -s "$work/s1" "$work/s2"
check "restarted run is bit-identical when rerun" $?
# the data of a restart are fresh (aim_draw_restart_rng): even from the
# tau = 0 state of seed 1 and with seed 1, not seed 1's samples again
expect_exit "sgd from the tau = 0 state" 0 "$exe" sgd $D --seeds 1 --jobs 1 \
    --start "$work/a/aimdyn-sgd-d24-seed1-tau0.state" --out "$work/c"
rows "$work/a/aimdyn-sgd-d24-seeds.tsv" | awk -F'\t' '$1 == 1' >"$work/r1"
rows "$work/c/aimdyn-sgd-d24-seeds.tsv" | awk -F'\t' '$1 == 1' >"$work/r2"
[ "$(head -n 1 "$work/r1")" = "$(head -n 1 "$work/r2")" ] && ! cmp -s "$work/r1" "$work/r2"
check "restart from the tau = 0 state: the same first row, then other (fresh) data" $?

# the ODE from the state: at tau = 0 the order parameters measured on the
# saved matrices (the SGD row; the ODE's risk is the Gaussian formula on
# them, the SGD file's risk_gauss); values written to 10 digits
expect_exit "ode --start" 0 "$exe" ode $D --start "$st" --out "$work/o"
rows "$work/a/aimdyn-sgd-d24-seeds.tsv" | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == 1 && $2 == 0.02 { printf "%s %s %s %s %s %s %s\n", $c["risk_gauss"], $c["overlap"],
        $c["omega_ss"], $c["psi_ss"], $c["omega_st"], $c["psi_st"], $c["trace"] }' >"$work/sgd0"
rows "$work/o/aimdyn-ode.tsv" | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    NR == 2 { printf "%s %s %s %s %s %s %s\n", $c["risk"], $c["overlap"], $c["omega_ss"],
        $c["psi_ss"], $c["omega_st"], $c["psi_st"], $c["trace"] }' >"$work/ode0"
paste -d' ' "$work/sgd0" "$work/ode0" | awk '{ for (i = 1; i <= 7; i++)
    if (($i - $(i + 7))^2 > (2e-10 * ($i > 0 ? $i : -$i))^2 + 1e-300) exit 1 }'
check "ODE at tau = 0 = the measured order parameters ($(cat "$work/sgd0") / $(cat "$work/ode0"))" $?

# short horizon: the ODE from a state against the SGD continued from it
# (8 seeds of fresh data, teacher and student shared): the teacher
# observables overlap, Omega(S,S*) and Psi(S,S*) within 3 standard errors
# of the seeds' mean at every grid point after the start. (The student's
# own Omega(S,S) and Psi(S,S) are not: with teacher and start shared the
# standard errors are those of the data alone, and the finite-d gap of
# the student norms stands out; docs/tables.md, "Saved states", gives
# the measured values.)
E="--d 128 --set training.points=5"
expect_exit "sgd --save-state at d = 128" 0 "$exe" sgd $E --set training.horizon=0.04 --seeds 1 \
    --jobs 1 --save-state 0.02 --out "$work/e"
expect_exit "compare --start" 0 "$exe" compare $E --set training.horizon=0.02 --seeds 8 --jobs 2 \
    --start "$work/e/aimdyn-sgd-d128-seed1-tau0.02.state" --out "$work/e/c"
for obs in overlap omega_st psi_st; do
    z=$(python3 -c 'import sys
def table(p):
    rows = [l.rstrip("\n").split("\t") for l in open(p) if not l.startswith("#")]
    return rows[0], rows[1:]
(oh, ode), (sh, sgd) = table(sys.argv[1]), table(sys.argv[2])
o, m, s = oh.index(sys.argv[3]), sh.index(sys.argv[3] + "_mean"), sh.index(sys.argv[3] + "_se")
print(max(abs(float(a[o]) - float(b[m])) / float(b[s]) for a, b in zip(ode, sgd)
          if float(a[0]) > 0))' "$work/e/c/aimdyn-ode.tsv" "$work/e/c/aimdyn-sgd-d128.tsv" "$obs")
    awk -v z="$z" 'BEGIN { exit !(z > 0 && z <= 3) }'
    check "ODE from the state vs SGD continued: $obs within 3 se (largest gap/se $z)" $?
done

# --- tied student: the moments ---
printf '[model]\ndecomposition = tied\n[teacher]\ndecomposition = tied\n' >"$work/tied.ini"
T="--d 40 --set training.eta=0.005 --set training.horizon=0.002 --set training.points=3 --set hierarchy.order=2"
expect_exit "tied sgd --save-state all" 0 "$exe" sgd "$work/tied.ini" $T --seeds 1 --jobs 1 \
    --save-state all --out "$work/t"
contains "tied state holds W" "$work/t/aimdyn-sgd-d40-seed1-tau0.001.state" "^matrix	W	40	40$"
expect_exit "tied ode from the tau = 0 state" 0 "$exe" ode "$work/tied.ini" $T \
    --start "$work/t/aimdyn-sgd-d40-seed1-tau0.state" --out "$work/t/f"
expect_exit "tied ode from the seed's start" 0 "$exe" ode "$work/tied.ini" $T \
    --set hierarchy.start=seed --out "$work/t/s"
rows "$work/t/f/aimdyn-ode.tsv" >"$work/f1"
rows "$work/t/s/aimdyn-ode.tsv" >"$work/f2"
cmp -s "$work/f1" "$work/f2"
check "tied ODE from the seed's saved state = the ODE from the seed's start" $?
contains "tied start recorded" "$work/t/f/aimdyn-ode.tsv" "start measured on the saved state"
expect_exit "tied ode from the tau = 0.001 state" 0 "$exe" ode "$work/tied.ini" $T \
    --start "$work/t/aimdyn-sgd-d40-seed1-tau0.001.state" --out "$work/t/g"
sgd_m=$(rows "$work/t/aimdyn-sgd-d40-seeds.tsv" | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $2 == 0.001 { print $c["m_S"], $c["m_SS"], $c["m_ST"] }')
ode_m=$(rows "$work/t/g/aimdyn-ode.tsv" | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    NR == 2 { print $c["m_S"], $c["m_SS"], $c["m_ST"] }')
[ -n "$sgd_m" ] && [ "$sgd_m" = "$ode_m" ]
check "tied ODE starts at the moments measured on the state ($sgd_m / $ode_m)" $?

# --- refused: exit 1, the key, the file and the mismatch named ---
expect_exit "missing state" 1 "$exe" sgd $D --start "$work/none.state" --out "$work/x"
contains "missing state named" "$work/err" "training.start_file: $work/none.state: cannot open: No such file or directory"
expect_exit "state of another d" 1 "$exe" ode --d 32 --start "$st" --out "$work/x"
contains "d mismatch named" "$work/err" "the dimension (sgd.d, --d) is 24 in the saved state and 32 in this run"
expect_exit "state of another student" 1 "$exe" ode "$work/tied.ini" --d 24 --start "$st" --out "$work/x"
contains "decomposition mismatch named" "$work/err" "model.decomposition is direct in the saved state and tied"
expect_exit "state of other tokens" 1 "$exe" sgd $D --set model.tokens=3 --start "$st" --out "$work/x"
contains "tokens mismatch named" "$work/err" "model.tokens is 2 in the saved state and 3"
expect_exit "state of other widths" 1 "$exe" ode "$work/tied.ini" $T --set student.rho=0.5 \
    --start "$work/t/aimdyn-sgd-d40-seed1-tau0.state" --out "$work/x"
contains "widths mismatch named" "$work/err" "the columns p = round(student.rho d) is 40 in the saved state and 20"
head -n 60 "$st" >"$work/cut.state"
expect_exit "state cut short" 1 "$exe" sgd $D --start "$work/cut.state" --out "$work/x"
contains "cut short named" "$work/err" "cut.state: ends at line"
sed 's/^0x1\.[0-9a-f]*p-[0-9]*	/nan	/' "$st" >"$work/nan.state"
expect_exit "state with a NaN" 1 "$exe" ode $D --start "$work/nan.state" --out "$work/x"
contains "NaN named with its line" "$work/err" "nan.state:[0-9]*: matrix .*not a finite number"
printf 'not a state\n' >"$work/junk.state"
expect_exit "not a state file" 1 "$exe" ode $D --start "$work/junk.state" --out "$work/x"
contains "not a state explained" "$work/err" "expected the line 'format<TAB>value'"
[ ! -e "$work/x" ]
check "nothing written by refused runs" $?
expect_exit "save-state off the grid" 1 "$exe" sgd $D --save-state 0.015 --out "$work/x"
contains "off the grid named" "$work/err" "output.save_state = \"0.015\".*tau = 0.015 is not a point of the grid"
expect_exit "save-state not a number" 1 "$exe" sgd $D --save-state 0.01,x --out "$work/x"
contains "save-state value named" "$work/err" "'x' is not a tau >= 0"
expect_exit "start file with a seed start" 1 "$exe" ode $D --start "$st" --set hierarchy.start=seed \
    --out "$work/x"
contains "start contradiction named" "$work/err" "hierarchy.start = file (or not given)"
expect_exit "hierarchy.start = file without a file" 1 "$exe" ode "$work/tied.ini" \
    --set hierarchy.start=file --out "$work/x"
contains "file start needs a file" "$work/err" "training.start_file = a state saved"
expect_exit "start file with the matrix process" 1 "$exe" ode $D --start "$st" \
    --set ode.method=matrix --out "$work/x"
expect_exit "start file with an informed start" 1 "$exe" ode $D --start "$st" \
    --set student.overlap=0.3 --out "$work/x"
contains "informed start refusal named" "$work/err" "student.overlap = 0 with training.start_file"
expect_exit "recovery does not read a state" 1 "$exe" recovery --set "training.start_file=$st" \
    --out "$work/x"
contains "recovery refusal named" "$work/err" "recovery does not start from a saved state"

# a state replaced at its path: the recorded digest refuses it (a rerun,
# like a resumed seed or checkpoint, compares the recorded configuration)
expect_exit "ode --start for the digest" 0 "$exe" ode $D --start "$st" --out "$work/dg"
cp "$st" "$work/st.saved"
cp "$work/a/aimdyn-sgd-d24-seed2-tau0.02.state" "$st"
expect_exit "rerun from a replaced state" 1 "$exe" rerun "$work/dg/aimdyn-ode.tsv"
contains "replaced state named" "$work/err" "training.start_digest = $digest, but the state"
cp "$work/st.saved" "$st"
expect_exit "rerun from the original state" 0 "$exe" rerun "$work/dg/aimdyn-ode.tsv"
expect_exit "a wrong digest given" 1 "$exe" ode $D --start "$st" \
    --set training.start_digest=fnv1a64:0123456789abcdef --out "$work/x"
expect_exit "a digest without a state" 1 "$exe" ode $D \
    --set training.start_digest=fnv1a64:0123456789abcdef --out "$work/x"
contains "digest without a state named" "$work/err" "training.start_digest empty without training.start_file"
expect_exit "a malformed digest" 1 "$exe" ode $D --start "$st" \
    --set training.start_digest=0123 --out "$work/x"
contains "malformed digest named" "$work/err" "not a digest as aimdyn records it"
[ ! -e "$work/x" ]
check "nothing written by runs refused for their digest" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
