#!/bin/sh
# kernel_tolerance.sh: what ode.kernel_tol buys (issue 15, "what to show").
# For examples/tied_softmax_T4.ini and examples/direct_softmax_T4.ini, each
# over its own horizon, runs `aimdyn ode` with the default rule
# (ode.qmc_points = 16384, kernel_tol = 0), with ode.kernel_tol = 1e-2,
# 3e-3, 1e-3, 3e-4, 1e-4, and with a 2^20-point rule (the reference run),
# one process at a time, one BLAS thread, and prints one table: the point
# count and the estimated kernel error each run records (its "# kernels:"
# line, the larger of the start's and the end's); the actual kernel error of that point count
# against a 2^22-point rule (build/kernel_accuracy), at the start and at the
# reference run's last state, with the estimate made at that last state; the
# weak-recovery time, the overlap and risk at the last tau every run
# reached, their differences from the reference run, and the run's CPU time
# (user + system).
# Usage: sh validate/bench/kernel_tolerance.sh [BUILD_DIR [OUT_DIR]]
#   BUILD_DIR default build, OUT_DIR default BUILD_DIR/kernel_tolerance
#   (the ODE files of every run are kept there).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/kernel_tolerance}
aimdyn=$build/aimdyn
accuracy=$build/kernel_accuracy
for exe in "$aimdyn" "$accuracy"; do
    if [ ! -x "$exe" ]; then
        echo "kernel_tolerance.sh: $exe is missing; build with ninja -C $build" >&2
        exit 1
    fi
done
if [ ! -x /usr/bin/time ]; then
    echo "kernel_tolerance.sh: /usr/bin/time is missing (Debian package time)" >&2
    exit 1
fi
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
reference_points=1048576
accuracy_reference=4194304
settings="default 1e-2 3e-3 1e-3 3e-4 1e-4 reference"

# what an ODE file records: its "# kernels:" line, its weak-recovery time,
# its last tau
kernels_line() { grep -m1 '^# kernels:' "$1"; }
recovery_tau() {
    sed -n 's/^# weak recovery (.*) at tau = \([^ ;]*\).*/\1/p' "$1" | head -n1
}
last_tau() { grep -v '^#' "$1" | tail -n1 | cut -f1; }
# the value of column $2 in the row of tau $3 (the row must exist)
value_at() {
    awk -F'\t' -v col="$2" -v tau="$3" '
        /^#/ { next }
        !c { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
        $1 + 0 == tau + 0 { print $c; found = 1; exit }
        END { if (!found) exit 1 }' "$1"
}

# the stem of the files of the run that setting $2 of example $1 used
run_of() {
    if [ -f "$out/$1-$2.same" ]; then echo "$out/$1-$(cat "$out/$1-$2.same")"; else echo "$out/$1-$2"; fi
}

table=$out/kernel_tolerance.txt
: >"$table.part"
for example in tied_softmax_T4 direct_softmax_T4; do
    ini=$root/examples/$example.ini
    capped="" run_points=""
    for s in $settings; do
        name=$example-$s
        # The rule depends on its point count only (src/engine/gauss_points.c): a
        # tolerance tighter than one whose run stopped at the cap on the
        # point set ("not reached below the cap") chooses the same cap, and
        # the reference run repeats a run of its point count: such a run is
        # the earlier one's, not made again (the table says so).
        same=""
        if [ -n "$capped" ] && [ "$s" != default ] && [ "$s" != reference ]; then
            same=$capped
        elif [ "$s" = reference ]; then
            same=$(echo "$run_points" | awk -v n="$reference_points" '$2 == n { print $1; exit }')
        fi
        if [ -n "$same" ]; then
            echo "$same" >"$out/$name.same"
            continue
        fi
        rm -f "$out/$name.same"
        if [ -f "$out/$name-ode.tsv" ] && [ -f "$out/$name.time" ] &&
            [ "$out/$name.time" -nt "$out/$name-ode.tsv" ]; then
            : # kept from an interrupted run of this script
        else
            case $s in
            default) sets="" ;;
            reference) sets="--set ode.qmc_points=$reference_points" ;;
            *) sets="--set ode.kernel_tol=$s" ;;
            esac
            rm -f "$out/$name.time"
            rc=0
            # shellcheck disable=SC2086 # sets is a list of options
            # hierarchy.beyond = stop: the tied example's hierarchy ends
            # where its truncation estimate passes hierarchy.tol (the
            # matrix process that would carry it on is no engine measure,
            # and on the reference's 2^20 points it would take hours)
            /usr/bin/time -f '%U %S' -o "$out/$name.time.part" "$aimdyn" ode "$ini" $sets \
                --set hierarchy.beyond=stop \
                --set output.dir="$out" --set output.name="$name" >"$out/$name.log" 2>&1 || rc=$?
            # 3: stopped early with its rows written (the tied example's
            # truncation estimate passes hierarchy.tol before its horizon)
            if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
                echo "kernel_tolerance.sh: aimdyn ode $ini $sets failed ($rc): see $out/$name.log" >&2
                exit 1
            fi
            mv "$out/$name.time.part" "$out/$name.time"
        fi
        grep -q '^# kernels: .*not reached below the cap' "$out/$name-ode.tsv" && capped=$s
        run_points="$run_points
$s $(kernels_line "$out/$name-ode.tsv" | sed 's/.*rule, \([0-9]*\) points.*/\1/')"
    done
    # the last tau that every run reached, and the reference's state there
    tau_f=$(for s in $settings; do last_tau "$(run_of "$example" "$s")-ode.tsv"; done | sort -g | head -n1)
    ref=$(run_of "$example" reference)-ode.tsv
    points=$(for s in $settings; do
        kernels_line "$(run_of "$example" "$s")-ode.tsv" | sed 's/.*rule, \([0-9]*\) points.*/\1/'
    done | sort -n | uniq | tr '\n' ' ')
    # shellcheck disable=SC2086 # points is a list of arguments
    "$accuracy" --reference "$accuracy_reference" "$ref" first $points >"$out/$example-start.acc"
    # shellcheck disable=SC2086
    "$accuracy" --reference "$accuracy_reference" "$ref" "$tau_f" $points >"$out/$example-late.acc"
    wr_ref=$(recovery_tau "$ref")
    ov_ref=$(value_at "$ref" overlap "$tau_f")
    risk_ref=$(value_at "$ref" risk "$tau_f")
    for s in $settings; do
        f=$(run_of "$example" "$s")-ode.tsv
        note=-
        [ -f "$out/$example-$s.same" ] && note="run_of_$(cat "$out/$example-$s.same")"
        line=$(kernels_line "$f")
        n=$(echo "$line" | sed 's/.*rule, \([0-9]*\) points.*/\1/')
        est=$(echo "$line" | sed 's/.*kernel error \([^ ]*\) at the start.*/\1/')
        act0=$(awk -v n="$n" '$1 == n { print $3 }' "$out/$example-start.acc")
        late=$(awk -v n="$n" '$1 == n { print $2, $3 }' "$out/$example-late.acc")
        wr=$(recovery_tau "$f")
        ov=$(value_at "$f" overlap "$tau_f")
        risk=$(value_at "$f" risk "$tau_f")
        # the last line (time puts "Command exited with non-zero status 3" above)
        cpu=$(tail -n1 "$(run_of "$example" "$s").time" | awk '{ print $1 + $2 }')
        echo "$example $s $n $est $act0 $late ${wr:-nan} ${wr_ref:-nan} $tau_f $ov $ov_ref $risk $risk_ref $cpu $note" >>"$table.part"
    done
done
{
    echo "# kernel_tolerance.sh $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown);" \
        "actual kernel errors against a $accuracy_reference-point rule; differences against the" \
        "$reference_points-point run (reference); est0: the run's recorded estimate (start and end);" \
        "act0, act_f: actual error at the start and at tau_f; est_f: estimate made at tau_f;" \
        "dtau_wr relative; CPU s user + system, one thread"
    printf '%-18s %9s %8s %8s %8s %8s %8s %10s %9s %6s %8s %9s %8s %9s %7s %s\n' example kernel_tol \
        points est0 act0 est_f act_f tau_wr dtau_wr tau_f overlap doverlap risk drisk CPU_s note
    awk '{
        printf "%-18s %9s %8d %8.2g %8.2g %8.2g %8.2g %10.6f %9.1e %6s %8.5f %9.1e %8.5f %9.1e %7.1f %s\n",
            $1, $2, $3, $4, $5, $6, $7, $8, ($8 - $9) / $9, $10, $11, $11 - $12, $13,
            ($13 - $14) / $14, $15, $16
    }' "$table.part"
} >"$table"
rm -f "$table.part"
cat "$table"
