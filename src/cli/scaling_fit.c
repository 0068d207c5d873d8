/* aimdyn scaling: the statistics. Per d the median n_wr and its
 * order-statistic confidence interval; over the recovered seeds of every
 * d the least-squares fits of the power law, the two one-constant laws
 * and the log-law of tau_wr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>

#include "recovery.h"
#include "scaling_internal.h"

/* A confidence interval of the median needs binomial coverage of at
 * least this; the fits' intervals are two-sided t intervals of it. */
#define LEVEL 0.95

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Order-statistic interval of the median of n seeds: [X_(l), X_(n+1-l)]
 * covers it with probability 1 - 2 P(B <= l-1), B ~ Binomial(n, 1/2),
 * whatever the distribution. The largest l with coverage >= LEVEL; 0
 * when even l = 1 falls short (n < 6). */
static int median_interval(int n, double *coverage)
{
    int l = 0;
    *coverage = NAN;
    for (int k = 1; 2 * k <= n + 1; k++) {
        const double tail = gsl_cdf_binomial_P((unsigned)(k - 1), 0.5, (unsigned)n);
        if (1 - 2 * tail < LEVEL)
            break;
        l = k;
        *coverage = 1 - 2 * tail;
    }
    return l;
}

/* A seed among the order statistics: its tau_wr, or for a censored seed
 * the last tau where it was seen not to have recovered (its tau_wr is
 * larger). */
typedef struct {
    double tau;
    int censored;
} seed_value;

static int compare_seed_values(const void *a, const void *b)
{
    const seed_value *x = a, *y = b;
    /* at equal tau the censored seed second: its tau_wr is larger */
    return x->tau != y->tau ? compare_doubles(&x->tau, &y->tau)
                            : aim_scaling_compare_ints(x->censored, y->censored);
}

/* The order statistics of the seeds' tau_wr: the k-th smallest is
 * measured when the k smallest values in v (sorted) are all recovered
 * (a seed that blew up early may sort before recovered ones); otherwise
 * it is only known to exceed v[k - 1]: inf, with that bound. */
static double order_statistic(const seed_value *v, int known, int k, double to_n,
                              double *bound)
{
    *bound = v[k - 1].tau * to_n;
    return k <= known ? *bound : INFINITY;
}

static int dim_statistics(const sgd_run *run, dim_stats *st)
{
    const int n = run->nseeds;
    seed_value *v = malloc(sizeof *v * (size_t)n);
    if (!v) {
        fprintf(stderr, CMD ": out of memory\n");
        return -1;
    }
    for (int s = 0; s < n; s++) {
        const int censored = isnan(run->tau_wr[s]);
        v[s] = (seed_value){censored ? run->tau_end[s] : run->tau_wr[s], censored};
    }
    qsort(v, (size_t)n, sizeof *v, compare_seed_values);
    int known = 0; /* the order statistics measured: X_(1) .. X_(known) */
    while (known < n && !v[known].censored)
        known++;
    const double to_n = (double)run->d * run->d / run->eta; /* n = tau d^2 / eta */
    /* the median stands when both middle order statistics, up to
     * X_(n/2 + 1), are measured (aim_recovery_median: every seed that did
     * not recover was followed beyond them); else what it would be were
     * every censored seed beyond the horizon */
    st->median_tau = aim_recovery_median(n, run->tau_wr, run->tau_end);
    st->median_n = st->median_tau * to_n;
    st->candidate_n =
        isnan(st->median_tau) ? aim_recovery_median(n, run->tau_wr, NULL) * to_n : NAN;
    const int l = median_interval(n, &st->ci_level);
    st->ci_lo = l ? order_statistic(v, known, l, to_n, &st->lo_bound) : NAN;
    st->ci_hi = l ? order_statistic(v, known, n + 1 - l, to_n, &st->hi_bound) : NAN;
    free(v);
    return 0;
}

/* log c and the RSS of log n = log c + offset: the one free constant is
 * the mean residual. */
static void one_constant_law(int n, const double *y, const double *offset, double *log_c,
                             double *rss)
{
    double mean = 0.0;
    for (int i = 0; i < n; i++)
        mean += (y[i] - offset[i]) / n;
    *rss = 0.0;
    for (int i = 0; i < n; i++)
        *rss += (y[i] - offset[i] - mean) * (y[i] - offset[i] - mean);
    *log_c = mean;
}

/* y = c0 + c1 x by least squares, with c1's standard error and LEVEL
 * t interval (NaN with two points: no degree of freedom left). */
static int line_fit(int n, const double *x, const double *y, double *c0, double *c1,
                    double *se, double *lo, double *hi, double *rss)
{
    double cov00, cov01, cov11;
    int status = gsl_fit_linear(x, 1, y, 1, (size_t)n, c0, c1, &cov00, &cov01, &cov11, rss);
    if (status) {
        fprintf(stderr, CMD ": least-squares fit failed: %s\n", gsl_strerror(status));
        return -1;
    }
    *se = *lo = *hi = NAN;
    if (n > 2) {
        *se = sqrt(cov11);
        const double t = gsl_cdf_tdist_Pinv(0.5 + LEVEL / 2, n - 2);
        *lo = *c1 - t * *se;
        *hi = *c1 + t * *se;
    }
    return 0;
}

/* All fits over the recovered seeds of every run. f->points = 0 when
 * fewer than two d have a recovered seed (no fit). */
int aim_scaling_fit_laws(const sgd_run *runs, int nruns, fits *f)
{
    int n = 0;
    f->dims = 0;
    for (int r = 0; r < nruns; r++) {
        n += runs[r].recovered;
        f->dims += runs[r].recovered > 0;
    }
    f->points = f->dims >= 2 ? n : 0;
    if (!f->points)
        return 0;
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    double *tau = malloc(sizeof(double) * (size_t)n), *off = malloc(sizeof(double) * (size_t)n);
    int rc = -1;
    if (!x || !y || !tau || !off) {
        fprintf(stderr, CMD ": out of memory\n");
        goto done;
    }
    int i = 0;
    for (int r = 0; r < nruns; r++)
        for (int s = 0; s < runs[r].nseeds; s++) {
            if (isnan(runs[r].tau_wr[s]))
                continue;
            const double d = runs[r].d;
            x[i] = log(d);
            tau[i] = runs[r].tau_wr[s];
            y[i] = log(tau[i] * d * d / runs[r].eta);
            i++;
        }
    if (line_fit(n, x, y, &f->log_c, &f->a, &f->a_se, &f->a_lo, &f->a_hi, &f->rss) ||
        line_fit(n, x, tau, &f->A, &f->B, &f->B_se, &f->B_lo, &f->B_hi, &f->tau_rss))
        goto done;
    for (i = 0; i < n; i++)
        off[i] = 2 * x[i];
    one_constant_law(n, y, off, &f->log_c2, &f->rss2);
    for (i = 0; i < n; i++) /* sgd.d >= 8, so log d > 0 */
        off[i] = 2 * x[i] + log(x[i]);
    one_constant_law(n, y, off, &f->log_c2l, &f->rss2l);
    /* the exponent d^2 log d itself gives the power-law fit: the slope of
     * ln(d^2 ln d) against ln d over the same seeds' d */
    double c0, se, lo, hi, rss;
    if (line_fit(n, x, off, &c0, &f->a2l, &se, &lo, &hi, &rss))
        goto done;
    rc = 0;
done:
    free(x);
    free(y);
    free(tau);
    free(off);
    return rc;
}

/* Rows: the union of the d with runs and with predictions, sorted. */
dim_row *aim_scaling_merge_rows(sgd_run *runs, int nruns, const prediction *pred, int npred,
                                int *nrows)
{
    dim_row *rows = calloc((size_t)(nruns + npred), sizeof *rows);
    if (!rows) {
        fprintf(stderr, CMD ": out of memory\n");
        return NULL;
    }
    int i = 0, j = 0, n = 0;
    while (i < nruns || j < npred) {
        dim_row *row = &rows[n++];
        const int take_run = i < nruns && (j >= npred || runs[i].d <= pred[j].d);
        const int take_pred = j < npred && (i >= nruns || pred[j].d <= runs[i].d);
        row->st = (dim_stats){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
        row->predicted = NAN;
        if (take_run) {
            row->d = runs[i].d;
            row->run = &runs[i++];
            if (dim_statistics(row->run, &row->st)) {
                free(rows);
                return NULL;
            }
        }
        if (take_pred) {
            row->d = pred[j].d;
            row->predicted = pred[j++].n;
            row->has_prediction = 1;
        }
    }
    *nrows = n;
    return rows;
}
