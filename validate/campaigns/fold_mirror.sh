#!/bin/sh
# fold_mirror.sh [--by COLUMN] SEEDS.tsv > SUMMARY.tsv
#
# For an output map even in the index (sigma(-h) = sigma(h), e.g. He2),
# the loss of S and of -S is the same for every sample, so the SGD run
# from (-U, V) is the mirror image of the run from (U, V): the student
# mean, the teacher overlap and every moment with an odd number of the
# letters K, k (S, S^T) change sign, the rest is equal. A seed whose
# student mean leaves 0 with a negative sign (theory/untied.md sec. 4)
# is such a mirror image of the ODE's positive branch. This script
# mirrors the seeds whose final mean is negative and writes the mean and
# standard error over the seeds in the format of an SGD summary
# (NAME-sgd-dD.tsv), for `aimdyn agreement` and `aimdyn plot`. Every
# seed must reach every grid point (no blow-up). --by overlap folds by
# the sign of the final teacher overlap instead (centred indices, where
# the mean is 0: a direct He2 student escapes towards +S* or -S*).
# The tool folds its own summaries with output.fold = mean | overlap
# (docs/config.md); this script, written apart from it, is what
# tests/test_fold.sh checks it against.
set -eu
by=mean
if [ $# -eq 3 ] && [ "$1" = --by ]; then
    by=$2
    shift 2
fi
case $by in mean | overlap) ;; *) echo "fold_mirror.sh: --by $by: allowed: mean, overlap" >&2; exit 1 ;; esac
[ $# -eq 1 ] || { echo "usage: fold_mirror.sh [--by mean|overlap] NAME-sgd-dD-seeds.tsv > SUMMARY.tsv" >&2; exit 1; }
awk -F'\t' -v by="$by" '
/^#/ { meta[++nmeta] = $0; next }
!header {
    header = 1; ncol = NF
    for (i = 1; i <= NF; i++) {
        name[i] = $i
        odd[i] = 0
        if ($i == "overlap" || $i == "omega_st" || $i == "psi_st" || $i == "trace" || $i == "mean")
            odd[i] = 1
        else if ($i ~ /^m[(_]/) { # m_w (m(w) in files of earlier versions)
            w = $i; gsub(/[^Kk]/, "", w)
            odd[i] = length(w) % 2
        }
        if ($i == by) cmean = i
        if ($i == "seed") cseed = i
        if ($i == "tau") ctau = i
        if ($i == "n") cn = i
    }
    next
}
{
    s = $cseed; if (!(s in seen)) { seen[s] = 1; seeds[++ns] = s }
    row = rows[s]++
    for (i = 1; i <= NF; i++) v[s, row, i] = $i
    last[s] = $cmean
}
END {
    for (k = 1; k <= ns; k++) {
        s = seeds[k]
        if (rows[s] != rows[seeds[1]] || last[s] == "" || last[s] ~ /nan|inf/) {
            printf "fold_mirror.sh: seed %s has %d rows (seed %s: %d) or a non-finite final %s; every seed must reach every point\n", s, rows[s], seeds[1], rows[seeds[1]], by > "/dev/stderr"
            bad = 1
        }
    }
    if (bad) exit 1
    # the column line first, then the metadata (the layout aimdyn writes)
    printf "tau\tn"
    for (i = 1; i <= ncol; i++)
        if (i != cseed && i != ctau && i != cn) printf "\t%s_mean\t%s_se", name[i], name[i]
    printf "\n"
    for (k = 1; k <= nmeta; k++) print meta[k]
    print "# folded by validate/campaigns/fold_mirror.sh: seeds with a negative final " (by == "mean" ? "student mean" : "teacher overlap") " mirrored (S -> -S)"
    nr = rows[seeds[1]]
    for (r = 0; r < nr; r++) {
        printf "%s\t%s", v[seeds[1], r, ctau], v[seeds[1], r, cn]
        for (i = 1; i <= ncol; i++) {
            if (i == cseed || i == ctau || i == cn) continue
            sum = 0; sum2 = 0
            for (k = 1; k <= ns; k++) {
                s = seeds[k]; x = v[s, r, i]
                if (odd[i] && last[s] < 0) x = -x
                sum += x; sum2 += x * x
            }
            m = sum / ns; var = (sum2 - ns * m * m) / (ns - 1); if (var < 0) var = 0
            printf "\t%.10g\t%.10g", m, sqrt(var / ns)
        }
        printf "\n"
    }
}' "$1"
