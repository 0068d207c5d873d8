/* aim_recovery: will the configured attention layer learn from its
 * uninformative start, and after how many samples (theory/recovery.md).
 *
 * At the start the student and the teacher are independent, and the
 * teacher overlap moves only through the cross-gradient of the
 * population risk, (dR/dOmega(S,S*), dR/dPsi(S,S*)) = (a_T, b_T), the
 * kernels of the expectation engine. For elementwise maps the same
 * numbers follow from the Hermite coefficients of sigma at the start's
 * index laws; the two routes are computed independently and compared.
 * Where the cross-gradient vanishes for every student state on the
 * uninformative manifold (the teacher's E[sigma'(h*)] = 0), the limit
 * ODE never leaves it, and only a finite-d start (a random overlap of
 * order 1/d) can escape: the limit ODE started from the initial
 * matrices of SGD seeds predicts when. */
#ifndef AIM_RECOVERY_H
#define AIM_RECOVERY_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "config.h"
#include "model.h"
#include "ode.h"

typedef enum {
    AIM_ESCAPE_DRIFT = 0,  /* the overlap moves at once */
    AIM_ESCAPE_INVARIANT,  /* the start lies on a manifold the limit ODE
                              never leaves */
    AIM_ESCAPE_UNDECIDED   /* zero drift at the start, but no invariance:
                              the limit ODE decides */
} aim_escape;

typedef struct {
    /* (dR/dOmega(S,S*), dR/dPsi(S,S*)) at the start */
    double cross_engine[2];
    double cross_hermite[2]; /* NAN for row softmax */
    /* largest |E[sigma'(h_ab)]| over the entries ab, teacher and student
     * indices at the start (NAN for row softmax) */
    double slope_teacher, slope_student;
    /* d overlap / d tau at the start: from the cross-gradient (exact at
     * a free start) and from the ODE right-hand side; the size against
     * which a drift counts as zero */
    double drift_formula, drift_rhs, drift_tolerance;
    double start_overlap;
    aim_escape escape;
    /* the limit ODE on the training grid */
    aim_ode_status status;
    char message[768];
    double tau_wr;  /* NAN: not reached */
    double tau_end; /* the last tau reached */
    double overlap_end;
    int kernel_points;   /* the engine's (aim_ode_report) */
    double kernel_error;
    int integrations;    /* CVODE's integrations and their counters */
    aim_ode_stats stats[AIM_ODE_MAX_INTEGRATIONS]; /* (aim_ode_report) */
} aim_recovery_limit;

/* Analyses the exact large-d start of cfg and integrates the limit ODE
 * on the training grid (d: the dimension of a raw mean's equation).
 * Returns 0, or -1 with the reason in err (size n). */
int aim_recovery_limit_analyse(const aim_config *cfg, int d, aim_recovery_limit *out,
                               char *err, size_t n);

/* The finite-d start: the limit ODE from the initial matrices of SGD
 * seeds cfg->seed .. cfg->seed + seeds - 1 at dimension d (the same
 * matrices `aimdyn sgd` starts from), on the training grid. */
typedef struct {
    int d, seeds, escaped;
    int blowups;           /* seeds whose ODE blew up before recovering */
    int above;             /* seeds that start at |overlap| >= the threshold */
    double *start_overlap; /* per seed */
    double *tau_wr;        /* per seed; NAN: not by the end */
    double *tau_end;       /* per seed: where its ODE stopped */
    double *overlap_end;   /* per seed: the overlap there */
    int *blew_up;          /* per seed: 1 when its ODE blew up */
    int failed;            /* seeds whose ODE failed (kept, marked) */
    char (*failure)[256];  /* per seed: why its ODE failed, "" if it did not */
    int *threads;          /* per seed: the engine's threads where it ran */
    int *integrations;     /* per seed: CVODE's integrations ... */
    aim_ode_stats (*stats)[AIM_ODE_MAX_INTEGRATIONS]; /* ... and their counters */
    double median_tau;     /* aim_recovery_median of tau_wr, tau_end */
} aim_recovery_finite;

/* Where a seed's finite-d start comes from: measure fills *start (its
 * storage lives until release), returning 0, or -1 with the reason in
 * err. validate/ measures it on the seed's initial matrices
 * (aim_compare_measure_start, aim_compare_release_start); the ODE layer
 * only consumes the value. */
typedef struct {
    int (*measure)(const aim_config *cfg, int d, uint64_t seed, aim_measured_start *start,
                   char *err, size_t n);
    void (*release)(aim_measured_start *start);
} aim_start_source;

/* The limit ODE from each of `seeds` seeds' starts (seeds cfg->seed, ...)
 * at dimension d. Returns 0, or -1 with the reason in err (out of memory);
 * a seed whose ODE fails is marked (failure[s]) and the others still run. Progress
 * (one line per seed) on stderr when progress is non-zero. Free with
 * aim_recovery_finite_free. */
int aim_recovery_finite_run(const aim_config *cfg, int d, int seeds, int progress,
                            const aim_start_source *source, aim_recovery_finite *out,
                            char *err, size_t n);
void aim_recovery_finite_free(aim_recovery_finite *f);

/* The same, one seed at a time (seeds computed apart, e.g. by worker
 * processes): what one seed's run gives ... */
typedef struct {
    double start_overlap, tau_wr, tau_end, overlap_end; /* as in aim_recovery_finite */
    int blew_up;
    char failure[256]; /* why its ODE failed, "" if it did not */
    int threads;       /* the engine's threads (aim_gauss_threads) where it ran */
    int integrations;  /* CVODE's integrations and their counters */
    aim_ode_stats stats[AIM_ODE_MAX_INTEGRATIONS];
} aim_recovery_seed;

/* ... computed: seed's start at d and the limit ODE from it on the
 * training grid. Returns 0 (a failed ODE is marked in out->failure), or
 * -1 when out of memory. */
int aim_recovery_seed_run(const aim_config *cfg, int d, uint64_t seed,
                          const aim_start_source *source, aim_recovery_seed *out);
/* ... said in one progress line on to ... */
void aim_recovery_seed_print(FILE *to, int d, uint64_t seed, const aim_recovery_seed *r,
                             double threshold);
/* ... and gathered: out for `seeds` seeds at d (0, or -1 when out of
 * memory), seed index s's result put in (counted against the weak-recovery
 * threshold), then the median once every seed is in. */
int aim_recovery_finite_init(aim_recovery_finite *out, int d, int seeds);
void aim_recovery_finite_put(aim_recovery_finite *out, int s, const aim_recovery_seed *r,
                             double threshold);
void aim_recovery_finite_median(aim_recovery_finite *out);

/* Median over n seeds of recovery times x (NAN: not recovered): a seed
 * that did not recover counts as later than every recovered one when it
 * was followed at least to the order statistics the median is made of
 * (the middle one, or the upper of the two middle ones), i.e. stop[i]
 * (where its run stopped: the horizon, or an earlier blow-up) >= that;
 * stop may be NULL (all followed to a common horizon). NAN when half or
 * more did not recover, or when a seed stopped earlier without
 * recovering (a blow-up hides whether it would have). */
double aim_recovery_median(int n, const double *x, const double *stop);

#endif
