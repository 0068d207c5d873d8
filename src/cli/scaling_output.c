/* aimdyn scaling: the results. The table, the fits and the predictions
 * on stdout, DIR/NAME-scaling.tsv with every seed and fit, and the
 * figure of n_wr against d. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plot.h"
#include "scaling_internal.h"
#include "tsv.h"

/* A fitted exponent equal to a law's exponent up to round-off counts as
 * inside the interval (exact synthetic data give an interval of width 0). */
#define ROUNDOFF 1e-9

/* "yes", "no", or "undecided" without an interval. */
static const char *inside(double lo, double hi, double v)
{
    if (isnan(lo) || isnan(hi))
        return "undecided (no interval from 2 seeds)";
    return lo - ROUNDOFF <= v && v <= hi + ROUNDOFF ? "yes" : "no";
}

/* v with %.4g, "none" when not defined. */
static const char *num(char *buf, size_t n, double v)
{
    if (isnan(v))
        snprintf(buf, n, "none");
    else
        snprintf(buf, n, "%.4g", v);
    return buf;
}

static double rel_gap(const dim_row *row)
{
    return (row->st.median_n - row->predicted) / row->predicted;
}

static double n_horizon(const sgd_run *run)
{
    return run->tau_max * run->d * run->d / run->eta;
}

/* A censored seed that stopped before the horizon: it blew up. */
static int blew_up(const sgd_run *run, int s)
{
    return isnan(run->tau_wr[s]) && run->tau_end[s] < run->tau_max;
}

/* The interval as text: "[lo, hi] (99.2 %)", an open end "> n". */
static void interval_text(char *buf, size_t size, const dim_row *row)
{
    char lo[32], hi[32];
    if (isnan(row->st.ci_level)) {
        snprintf(buf, size, "none (fewer than 6 seeds)");
        return;
    }
    if (isinf(row->st.ci_lo))
        snprintf(lo, sizeof lo, "> %.4g", row->st.lo_bound);
    else
        snprintf(lo, sizeof lo, "%.4g", row->st.ci_lo);
    if (isinf(row->st.ci_hi))
        snprintf(hi, sizeof hi, "> %.4g", row->st.hi_bound);
    else
        snprintf(hi, sizeof hi, "%.4g", row->st.ci_hi);
    snprintf(buf, size, "[%s, %s] (%.1f %%)", lo, hi, 100 * row->st.ci_level);
}

void aim_scaling_print_table(const options *o, const dim_row *rows, int nrows)
{
    char b1[32], b2[32], ci[96];
    printf("weak recovery: first tau with |overlap| >= %g, linearly interpolated; "
           "n_wr = tau_wr d^2 / eta\n", o->threshold);
    if (o->label)
        printf("runs: %s\n", o->label);
    printf("\n%6s %10s %5s %9s %15s  %-36s %12s %12s\n", "d", "eta", "seeds", "recovered",
           "median n_wr", "confidence interval of the median", "median tau", "horizon n");
    for (int i = 0; i < nrows; i++) {
        const sgd_run *run = rows[i].run;
        if (!run)
            continue;
        const int blocked = !isnan(rows[i].st.candidate_n);
        interval_text(ci, sizeof ci, &rows[i]);
        printf("%6d %10.4g %5d %9d %15s  %-36s %12s %12.4g\n", run->d, run->eta, run->nseeds,
               run->recovered,
               blocked ? "none (blow-ups)" : num(b1, sizeof b1, rows[i].st.median_n), ci,
               num(b2, sizeof b2, rows[i].st.median_tau), n_horizon(run));
    }
    for (int i = 0; i < nrows; i++) {
        const sgd_run *run = rows[i].run;
        if (!run || run->recovered == run->nseeds)
            continue;
        /* seeds that blew up are censored at their own last finite point */
        printf("d = %d: censored (not recovered by n = %.4g):", run->d, n_horizon(run));
        const char *sep = run->nseeds - run->recovered > 1 ? " seeds" : " seed";
        for (int s = 0; s < run->nseeds; s++)
            if (isnan(run->tau_wr[s])) {
                printf("%s %" PRIu64, sep, run->seed[s]);
                if (blew_up(run, s))
                    printf(" (blow-up: stopped early, at n = %.4g)",
                           run->tau_end[s] * run->d * run->d / run->eta);
                sep = ",";
            }
        putchar('\n');
        if (!isnan(rows[i].st.candidate_n))
            printf("d = %d: median not defined (blow-ups): a seed that blew up stopped below "
                   "the median n = %.4g of the others, and might have recovered before it\n",
                   run->d, rows[i].st.candidate_n);
        else if (isnan(rows[i].st.median_n))
            printf("d = %d: median not reached by n = %.4g (%d of %d seeds recovered)\n",
                   run->d, n_horizon(run), run->recovered, run->nseeds);
    }
}

void aim_scaling_print_fits(const fits *f, int nruns, int censored, int eta_varies)
{
    char b[4][32];
    putchar('\n');
    if (!f->points) {
        printf("no fit: recovered seeds at %d d (of %d); the fits need 2 or more\n", f->dims,
               nruns);
        return;
    }
    printf("fits on log n_wr of %d recovered seeds at %d d", f->points, f->dims);
    if (censored)
        printf(" (%d censored seeds left out: at the largest d this biases a low)", censored);
    printf(":\n  n = c d^a          a = %.4g, s.e. %s, 95 %% interval [%s, %s]; c = %.4g; "
           "RSS = %.4g\n",
           f->a, num(b[0], 32, f->a_se), num(b[1], 32, f->a_lo), num(b[2], 32, f->a_hi),
           exp(f->log_c), f->rss);
    printf("  n = c d^2          c = %.4g; RSS = %.4g; exponent 2 in the interval "
           "(supported): %s\n", exp(f->log_c2), f->rss2, inside(f->a_lo, f->a_hi, 2.0));
    printf("  n = c d^2 log d    c = %.4g; RSS = %.4g; its exponent over these d (slope of "
           "ln(d^2 ln d) on ln d) %.4g in the interval (supported): %s\n", exp(f->log_c2l),
           f->rss2l, f->a2l, inside(f->a_lo, f->a_hi, f->a2l));
    printf("  tau_wr = A + B log d  A = %.4g, B = %.4g, s.e. %s, 95 %% interval [%s, %s]; "
           "B = 0 (tau_wr independent of d) in the interval: %s\n", f->A, f->B,
           num(b[0], 32, f->B_se), num(b[1], 32, f->B_lo), num(b[2], 32, f->B_hi),
           inside(f->B_lo, f->B_hi, 0.0));
    if (eta_varies)
        printf("  (eta differs between the files: tau_wr compares different learning "
               "rates; n = c d^2 no longer means tau_wr independent of d)\n");
    printf("rule: a law is supported when the 95 %% interval of a contains its exponent; "
           "RSS = residual sum of squares of ln n_wr\n");
}

void aim_scaling_print_predictions(const dim_row *rows, int nrows)
{
    char b[3][32];
    printf("\npredicted (aimdyn recovery) against the measured median n_wr:\n%6s %14s %14s "
           "%12s\n", "d", "predicted", "measured", "rel. gap");
    for (int i = 0; i < nrows; i++) {
        const dim_row *row = &rows[i];
        if (!row->has_prediction)
            continue;
        printf("%6d %14s %14s %12s\n", row->d,
               isnan(row->predicted) ? "no escape" : num(b[0], 32, row->predicted),
               row->run ? num(b[1], 32, row->st.median_n) : "no --sgd",
               num(b[2], 32, rel_gap(row)));
    }
    printf("(rel. gap = (measured - predicted) / predicted; none where either is missing)\n");
}

static void write_fit_lines(FILE *f, const fits *ft)
{
    if (!ft->points) {
        fprintf(f, "# fit: none (recovered seeds at %d d; the fits need 2 or more)\n",
                ft->dims);
        return;
    }
    fprintf(f, "# fit data: ln n_wr of %d recovered seeds at %d d, least squares\n",
            ft->points, ft->dims);
    fprintf(f, "# fit n = c d^a: a = %.10g, a_se = %.10g, a_ci95 = %.10g %.10g, c = %.10g, "
               "rss = %.10g\n", ft->a, ft->a_se, ft->a_lo, ft->a_hi, exp(ft->log_c), ft->rss);
    fprintf(f, "# fit n = c d^2: c = %.10g, rss = %.10g, exponent = 2, supported = %s\n",
            exp(ft->log_c2), ft->rss2, inside(ft->a_lo, ft->a_hi, 2.0));
    fprintf(f, "# fit n = c d^2 log d: c = %.10g, rss = %.10g, exponent = %.10g (least-squares "
               "slope of ln(d^2 ln d) on ln d over the fitted seeds), supported = %s\n",
            exp(ft->log_c2l), ft->rss2l, ft->a2l, inside(ft->a_lo, ft->a_hi, ft->a2l));
    fprintf(f, "# fit tau_wr = A + B log d: A = %.10g, B = %.10g, B_se = %.10g, B_ci95 = "
               "%.10g %.10g, rss = %.10g, B = 0 inside = %s\n", ft->A, ft->B, ft->B_se,
            ft->B_lo, ft->B_hi, ft->tau_rss, inside(ft->B_lo, ft->B_hi, 0.0));
    fprintf(f, "# rule: a law is supported when the 95 %% interval of a contains its exponent "
               "(2; for d^2 log d the slope of ln(d^2 ln d) on ln d over the fitted seeds); "
               "nan: not defined (2 seeds)\n");
}

/* DIR/NAME-scaling.tsv into set */
int aim_scaling_write_tsv(const options *o, const char *cmdline, const sgd_run *runs,
                          int nruns, const dim_row *rows, int nrows, const fits *ft,
                          char *path, size_t size, aim_atomic_set *set)
{
    aim_tsv *tsv;
    if (aim_tsv_path(path, size, &o->out, "scaling", "tsv") || !(tsv = aim_tsv_open(path)))
        return -1;
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, cmdline, NULL);
    fprintf(f, "# scaling: weak recovery = first tau with |overlap| >= threshold, linearly "
               "interpolated; n_wr = tau_wr d^2 / eta\n# threshold = %.10g\n", o->threshold);
    if (o->label)
        fprintf(f, "# label = %s\n", o->label);
    for (int r = 0; r < nruns; r++)
        fprintf(f, "# sgd %s: d = %d, eta = %.10g, seeds = %d\n", runs[r].path, runs[r].d,
                runs[r].eta, runs[r].nseeds);
    for (int r = 0; r < nruns; r++)
        fprintf(f, "# interpolation error of tau_wr at d = %d: at most the grid spacing around "
                   "a crossing (largest %.3g), estimated h^2 |f''|/(8 |f'|) <= %.3g "
                   "(theory/stops.md sec. 5)\n",
                runs[r].d, runs[r].interp_error[0], runs[r].interp_error[1]);
    for (int i = 0; i < o->npredict; i++)
        fprintf(f, "# predict %s\n", o->predict[i]);
    for (int r = 0; r < nruns; r++)
        for (int s = 0; s < runs[r].nseeds; s++) {
            const double to_n = (double)runs[r].d * runs[r].d / runs[r].eta;
            if (isnan(runs[r].tau_wr[s]))
                fprintf(f, "# seed d = %d, seed = %" PRIu64 ": censored, %stau_end = %.10g, n_end = "
                           "%.10g\n", runs[r].d, runs[r].seed[s],
                        blew_up(&runs[r], s) ? "blow-up (stopped early), " : "",
                        runs[r].tau_end[s], runs[r].tau_end[s] * to_n);
            else
                fprintf(f, "# seed d = %d, seed = %" PRIu64 ": tau_wr = %.10g, n_wr = %.10g\n",
                        runs[r].d, runs[r].seed[s], runs[r].tau_wr[s],
                        runs[r].tau_wr[s] * to_n);
        }
    for (int i = 0; i < nrows; i++)
        if (!isnan(rows[i].st.candidate_n))
            fprintf(f, "# median d = %d: not defined (blow-ups): a seed that blew up stopped "
                       "below the median n = %.10g of the others\n", rows[i].d,
                    rows[i].st.candidate_n);
    write_fit_lines(f, ft);
    fprintf(f, "# columns: ci_lo, ci_hi = order-statistic interval of the median with coverage "
               "ci_level (inf: not measured, a censored seed's n_wr); rel_gap = (median - "
               "predicted) / predicted; nan: not defined\n");
    fputs("d\teta\tseeds\trecovered\tn_horizon\tmedian_n_wr\tci_lo\tci_hi\tci_level\t"
          "median_tau_wr\tn_wr_predicted\trel_gap\n", f);
    for (int i = 0; i < nrows; i++) {
        const dim_row *row = &rows[i];
        const sgd_run *run = row->run;
        fprintf(f, "%d\t%.10g\t%d\t%d\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\n",
                row->d, run ? run->eta : NAN, run ? run->nseeds : 0, run ? run->recovered : 0,
                run ? n_horizon(run) : NAN, row->st.median_n, row->st.ci_lo, row->st.ci_hi,
                row->st.ci_level, row->st.median_tau, row->predicted, rel_gap(row));
    }
    return aim_tsv_add_to(tsv, set);
}

/* The figure into set; 0, 1 when gnuplot is missing (warned), -1 on
 * failure. */
int aim_scaling_write_figure(const options *o, const sgd_run *runs, int nruns,
                             const dim_row *rows, int nrows, const fits *ft,
                             aim_atomic_set *set)
{
    if (!aim_plot_available()) {
        fprintf(stderr, CMD ": warning: gnuplot not found, no figure (install gnuplot-nox); "
                        "the TSV is written and an old figure %s.png/.svg is removed\n",
                o->figure);
        return 1;
    }
    int nseeds = 0, npred = 0;
    for (int r = 0; r < nruns; r++)
        nseeds += runs[r].recovered;
    for (int i = 0; i < nrows; i++)
        npred += rows[i].has_prediction;
    const size_t nd = (size_t)nrows + 1, ns = (size_t)nseeds + 1;
    double *d = malloc(sizeof(double) * nd), *med = malloc(sizeof(double) * nd);
    double *lo = malloc(sizeof(double) * nd), *hi = malloc(sizeof(double) * nd);
    double *pd = malloc(sizeof(double) * nd), *pn = malloc(sizeof(double) * nd);
    double *sd = malloc(sizeof(double) * ns), *sn = malloc(sizeof(double) * ns);
    int rc = -1;
    if (!d || !med || !lo || !hi || !pd || !pn || !sd || !sn) {
        fprintf(stderr, CMD ": out of memory\n");
        goto done;
    }
    int nm = 0, np = 0, k = 0;
    for (int i = 0; i < nrows; i++) {
        if (rows[i].run) {
            d[nm] = rows[i].d;
            med[nm] = rows[i].st.median_n;
            lo[nm] = rows[i].st.ci_lo;
            hi[nm++] = rows[i].st.ci_hi;
        }
        if (rows[i].has_prediction) {
            pd[np] = rows[i].d;
            pn[np++] = rows[i].predicted;
        }
    }
    for (int r = 0; r < nruns; r++)
        for (int s = 0; s < runs[r].nseeds; s++)
            if (!isnan(runs[r].tau_wr[s])) {
                sd[k] = runs[r].d;
                sn[k++] = runs[r].tau_wr[s] * runs[r].d * runs[r].d / runs[r].eta;
            }
    char key[160] = "";
    if (ft->points && isnan(ft->a_se))
        snprintf(key, sizeof key, "power law n = c d^{a}, a = %.3g", ft->a);
    else if (ft->points)
        snprintf(key, sizeof key, "power law n = c d^{a}, a = %.3g +- %.2g", ft->a, ft->a_se);
    const aim_plot_scaling_spec sp = {nm, d, med, lo, hi, nseeds, sd, sn,
                                      ft->points ? exp(ft->log_c) : NAN,
                                      ft->points ? ft->a : NAN, key, npred, pd, pn, o->label};
    rc = aim_plot_scaling(&sp, o->figure, set);
done:
    free(d);
    free(med);
    free(lo);
    free(hi);
    free(pd);
    free(pn);
    free(sd);
    free(sn);
    return rc;
}
