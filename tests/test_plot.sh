#!/bin/sh
# aimdyn plot (plots/plot_plan.c, plots/plot_figure.c, plots/plot.c,
# src/cli/cmd_plot.c): its inputs checked by kind with errors that name
# the option and the file, --column, --seeds (each seed's rows, checked by
# gnuplot itself), --panels, the title from the files' metadata, PNG, SVG
# and PDF, the gnuplot script kept beside the figure (and rerunnable),
# gnuplot started without a shell. gnuplot is installed by
# scripts/setup.sh.
. "$(dirname "$0")/checks.sh"
begin_test "$@"
here=$(cd "$(dirname "$0")/.." && pwd)

# a direct run with 3 seeds at d = 40, and a tied ODE (moments m(w))
"$exe" compare --d 40 --seeds 3 --out "$work/o" --set training.horizon=2 --quiet \
    >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
"$exe" ode "$here/examples/tied_he2.ini" --order 2 --out "$work/t" \
    --set training.horizon=0.05 --quiet >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
ode="$work/o/aimdyn-ode.tsv" sgd="$work/o/aimdyn-sgd-d40.tsv" seeds="$work/o/aimdyn-sgd-d40-seeds.tsv"
# compare keeps its figure's script too, naming its tables as renamed into
# place (it draws them before its commit, from their temporary files)
kept_script_redraws "compare: the kept script redraws its figure" "$work/o/aimdyn-compare-d40" /
tied="$work/t/tied_he2-ode.tsv"
mkdir "$work/f"

# ---- inputs: exit 1, the option, the file and what it should be; no
# figure, no gnuplot message
refused() { # what, text in the message, plot arguments...
    what=$1 text=$2
    shift 2
    expect_exit "refused: $what" 1 "$exe" plot --figure "$work/f/x" "$@"
    contains "refused: $what: said" "$work/err" "$text"
    [ -z "$(ls -A "$work/f")" ] && ! grep -q "line [0-9]\|gnuplot" "$work/err"
    check "refused: $what: no figure, no gnuplot message" $?
}
refused "a per-seed file as --sgd" \
    "^aimdyn plot: --sgd $seeds: the per-seed file of an SGD run; allowed: an SGD summary file NAME-sgd-dD.tsv (the per-seed curves: --sgd NAME-sgd-dD.tsv --seeds)" \
    --sgd "$seeds"
refused "an ODE file as --sgd" \
    "^aimdyn plot: --sgd $ode: an ODE result file; allowed: an SGD summary file" \
    --ode "$ode" --sgd "$ode"
refused "an SGD file as --ode" \
    "^aimdyn plot: --ode $sgd: an SGD summary file; allowed: an ODE result file NAME-ode.tsv (an SGD summary goes to --sgd)" \
    --ode "$sgd"
: >"$work/empty.tsv"
refused "an empty file" "$work/empty.tsv: no header line; allowed: an ODE result file NAME-ode.tsv (plot --ode)" \
    --ode "$work/empty.tsv"
grep '^#\|^tau' "$ode" >"$work/rowless.tsv"
refused "a file without data rows" "^aimdyn plot: --ode $work/rowless.tsv: no data rows" \
    --ode "$work/rowless.tsv"
refused "a missing --column" \
    "^aimdyn plot: --column: --ode $ode has no column 'nope'; allowed: a column it has (tau n t risk" \
    --ode "$ode" --column nope
# one length limit for --column, 200 characters: up to it the column is
# looked for, above it refused for its length
long200=$(printf '%0200d' 0 | tr 0 x)
refused "a --column of 200 characters the file lacks" \
    "^aimdyn plot: --column: --ode $ode has no column '$long200'" --ode "$ode" --column "$long200"
refused "a --column of 201 characters" \
    "^aimdyn plot: --column x\{40\}\.\.\.: 201 characters; allowed: a column name of the files, at most 200 characters" \
    --ode "$ode" --column "${long200}x"
# (a column named as in the math, m(S), is the file's m_S)
refused "a --column the SGD file lacks" "^aimdyn plot: --column: --sgd $sgd has no column 'm_S_mean'" \
    --ode "$tied" --sgd "$sgd" --column 'm(S)'
# a column of NaN would draw nothing
awk -F'\t' 'BEGIN { OFS = "\t" } /^#/ { print; next } !h { h = 1; for (i = 1; i <= NF; i++) if ($i == "trace") c = i; print; next } { $c = "nan"; print }' \
    "$ode" >"$work/nan.tsv"
refused "a column of NaN" "^aimdyn plot: --column: --ode $work/nan.tsv has no finite value in its column 'trace'" \
    --ode "$work/nan.tsv" --column trace
refused "--seeds without --sgd" "^aimdyn plot: --seeds draws the seeds of an SGD run" --ode "$ode" --seeds
mkdir "$work/other"
cp "$sgd" "$work/other/a-sgd-d40.tsv"
sed 's/^# config sgd.seed = 1$/# config sgd.seed = 2/' "$seeds" >"$work/other/a-sgd-d40-seeds.tsv"
cmp -s "$seeds" "$work/other/a-sgd-d40-seeds.tsv"
check "the other run's per-seed file differs in its seed" $((1 - $?))
refused "--seeds of another run" \
    "^aimdyn plot: --seeds: $work/other/a-sgd-d40-seeds.tsv and --sgd $work/other/a-sgd-d40.tsv record different configurations" \
    --sgd "$work/other/a-sgd-d40.tsv" --seeds
rm "$work/other/a-sgd-d40-seeds.tsv"
refused "--seeds without the per-seed file" "$work/other/a-sgd-d40-seeds.tsv" \
    --sgd "$work/other/a-sgd-d40.tsv" --seeds
refused "--panels moments of a direct run" "^aimdyn plot: --panels moments: --ode $ode has no moment column" \
    --ode "$ode" --panels moments
# the figure's folder is checked before anything is read or written, as
# scaling --figure's (one check, src/cli/cli.c)
expect_exit "refused: a --figure in a missing folder" 1 "$exe" plot --ode "$ode" \
    --figure "$work/none/x"
contains "refused: a --figure in a missing folder: said" "$work/err" \
    "^aimdyn plot: --figure '$work/none/x': not allowed (its directory '$work/none': No such file or directory); allowed: a file stem on one line in an existing writable directory"
refused "an unknown --format" "^aimdyn plot: --format png,gif: 'gif' unknown; allowed: png, svg, pdf, comma-separated, each at most once$" \
    --ode "$ode" --format png,gif
refused "a --format given twice" "^aimdyn plot: --format pdf,png,pdf: 'pdf' given twice; allowed: png, svg, pdf" \
    --ode "$ode" --format pdf,png,pdf
refused "an empty --format" "^aimdyn plot: --format png,: an empty name; allowed: png, svg, pdf" \
    --ode "$ode" --format png,
refused "an unknown --panels" "^aimdyn plot: --panels orders: 'orders' unknown; allowed: order, moments, mean, comma-separated, each at most once$" \
    --ode "$ode" --panels orders

# ---- a figure with every panel kind, per-seed curves, PDF and PNG
fig="$work/f/fig"
expect_exit "plot --seeds --column --panels order --format pdf,png" 0 "$exe" plot --figure "$fig" \
    --ode "$ode" --sgd "$sgd" --seeds --column trace --panels order --format pdf,png
contains "plot: says what it wrote" "$work/out" "^wrote $fig.png $fig.pdf and $fig.gp"
[ "$(head -c 5 "$fig.pdf")" = "%PDF-" ] && tail -c 8 "$fig.pdf" | grep -q "%%EOF" &&
    [ "$(wc -c <"$fig.pdf")" -gt 10000 ]
check "PDF: complete and not empty" $?
[ "$(head -c 4 "$fig.png" | tail -c 3)" = "PNG" ] && [ "$(wc -c <"$fig.png")" -gt 10000 ]
check "PNG: written" $?
[ ! -e "$fig.svg" ]
check "no SVG when not asked for" $?
gp="$fig.gp"
[ -s "$gp" ] && [ -z "$(find "$work/f" -name '.*')" ]
check "the script kept, no temporary file left" $?
contains "title: the model, d and the seeds (metadata)" "$gp" \
    "title 'direct model: SGD at d = 40 (3 seeds) against the limit ODE'"
for col in risk overlap omega_ss psi_ss omega_st psi_st trace; do
    contains "panel $col: the ODE curve" "$gp" "using \"tau\":'$col' with lines lw 2"
    contains "panel $col: the SGD mean" "$gp" "using \"tau\":'${col}_mean':'${col}_se' with yerrorbars"
done
# a thin line per seed and panel (3 seeds, 7 panels), each drawn from the
# rows of exactly one seed: gnuplot's own count of what the range selects
[ "$(grep -c "every ::[0-9]*::[0-9]* using" "$gp")" -eq 21 ]
check "--seeds: 3 seed lines in each of 7 panels" $?
grep -o "every ::[0-9]*::[0-9]*" "$gp" | sort -u >"$work/ranges"
[ "$(wc -l <"$work/ranges")" -eq 3 ]
check "--seeds: 3 row ranges" $?
seen=""
while read -r every range; do
    first=${range#::} last=${range##*::}
    first=${first%%::*}
    gnuplot -e "set datafile separator '\t'; stats '$seeds' every ::$first::$last using \"seed\" nooutput; print STATS_records, STATS_min, STATS_max" \
        2>"$work/stats"
    read -r n lo hi <"$work/stats"
    want=$(awk -F'\t' -v s="$lo" '/^#/ || $1 == "seed" { next } $1 == s { n++ } END { print n }' "$seeds")
    [ "$lo" = "$hi" ] && [ "$n" = "$want" ] && [ "$n" -gt 1 ] && ! echo "$seen" | grep -qw "$lo"
    check "--seeds: rows $first..$last are all of seed $lo and only it" $?
    seen="$seen $lo"
done <"$work/ranges"

# the kept script redraws the figure (outputs renamed from the command line)
(cd / && gnuplot -e "out_png='$work/re.png'; out_pdf='$work/re.pdf'" "$gp") 2>"$work/err"
[ -s "$work/re.png" ] && [ -s "$work/re.pdf" ] && [ ! -s "$work/err" ]
check "the kept script redraws the figure" $?

# drawn again as PNG only: the PDF of the old figure goes with it
expect_exit "plot again, PNG only" 0 "$exe" plot --figure "$fig" --ode "$ode" --format png
[ -s "$fig.png" ] && [ ! -e "$fig.pdf" ] && [ -s "$fig.gp" ] && ! grep -q "every" "$fig.gp"
check "PNG only: the old PDF removed, the new script kept" $?

# a PDF cut short (a full disk: gnuplot still exits 0) is no figure: exit
# 2, the old figure kept whole
mkdir "$work/cut"
printf '#!/bin/sh\nscript=$(mktemp)\ncat >"$script"\n"%s" "$script"\nst=$?\n' "$(command -v gnuplot)" \
    >"$work/cut/gnuplot"
cat >>"$work/cut/gnuplot" <<'EOF'
sed -n "s/^out_pdf = '\(.*\)'$/\1/p" "$script" | sed "s/''/'/g" | while read -r f; do
    truncate -s 100 "$f"
done
rm -f "$script"
exit $st
EOF
chmod +x "$work/cut/gnuplot"
cp "$fig.png" "$work/old.png"
expect_exit "a PDF cut short" 2 env PATH="$work/cut:$PATH" "$exe" plot --figure "$fig" \
    --ode "$ode" --format png,pdf
contains "a PDF cut short: said" "$work/err" "incomplete figure for '$fig.pdf' (100 bytes"
cmp -s "$fig.png" "$work/old.png" && [ ! -e "$fig.pdf" ] && [ -z "$(find "$work/f" -name '.*')" ]
check "a PDF cut short: the old figure kept, nothing temporary left" $?

# moments of a tied run: a panel each
expect_exit "plot --panels moments" 0 "$exe" plot --figure "$work/f/tied" --ode "$tied" \
    --panels moments,mean
for col in m_S m_SS m_ST mean; do
    contains "moment panel $col" "$work/f/tied.gp" "using \"tau\":'$col' with lines"
done
contains "title of an ODE alone" "$work/f/tied.gp" "title 'tied model: the limit ODE (d → ∞)'"
# a file of the earlier layout ('#' lines first) and names (m(S)): gnuplot
# reads the file's own header, so the script names m(S)
awk -F'\t' 'BEGIN { OFS = "\t" } NR == 1 { h = $0; next } /^#/ { print; next }
    !done { n = split(h, c, "\t"); for (i = 1; i <= n; i++) if (c[i] ~ /^m_/) c[i] = "m(" substr(c[i], 3) ")";
            line = c[1]; for (i = 2; i <= n; i++) line = line "\t" c[i]; print line; done = 1 }
    { print }' "$tied" >"$work/old-layout.tsv"
grep -q '	m(SS)	' "$work/old-layout.tsv"
check "an old-layout tied file made" $?
expect_exit "plot --panels moments of an old-layout file" 0 "$exe" plot --figure "$work/f/old" \
    --ode "$work/old-layout.tsv" --panels moments
contains "old layout: the script names the file's m(SS)" "$work/f/old.gp" "using \"tau\":'m(SS)' with lines"
[ -s "$work/f/old.png" ]
check "old layout: the moments drawn" $?
[ -s "$work/f/tied.png" ] && [ -s "$work/f/tied.svg" ]
check "default formats: PNG and SVG" $?

# gnuplot started without a shell: a gnuplot on PATH that records its
# parent, then runs the real one
mkdir "$work/bin"
real=$(command -v gnuplot)
printf '#!/bin/sh\ncat /proc/$PPID/comm >"%s/parent"\nexec "%s" "$@"\n' "$work" "$real" \
    >"$work/bin/gnuplot"
chmod +x "$work/bin/gnuplot"
expect_exit "plot through a recording gnuplot" 0 env PATH="$work/bin:$PATH" "$exe" plot \
    --figure "$work/f/sh" --ode "$ode"
[ "$(cat "$work/parent")" = "$(basename "$exe" | cut -c1-15)" ]
check "gnuplot's parent is aimdyn itself, not a shell ($(cat "$work/parent"))" $?

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
