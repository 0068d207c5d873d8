/* aim_ode: integrates an autonomous ODE model on the output grid with
 * SUNDIALS CVODE (BDF, dense direct linear solver, tolerances from the
 * configuration). CVODE's root finding watches, on every accepted
 * internal step, the blow-up level, the model's validity margins and the
 * weak-recovery crossing, so that where a run stops and when it recovers
 * do not depend on the output grid (theory/stops.md). */
#ifndef AIM_ODE_H
#define AIM_ODE_H

#include "config.h"

/* Why a run with status AIM_ODE_BLOWUP stopped. */
typedef enum {
    AIM_STOP_NONE = 0,
    AIM_STOP_NOISE,     /* |q| reached ode.blowup and the noise terms are
                           the larger part of d|q|/dtau there */
    AIM_STOP_GRADIENT,  /* |q| reached ode.blowup driven by the gradient
                           and decay terms: not a noise blow-up (also when
                           the model gives no terms to tell: noise_share
                           is then NAN and the message names no cause) */
    AIM_STOP_NONFINITE, /* a state component or a rate became non-finite */
    AIM_STOP_INVALID,   /* the state left the valid set (a margin turned
                           negative, or an rhs met order parameters of no
                           matrices) */
    AIM_STOP_DIVERGED,  /* the model's own divergence (e.g. the untied
                           adiabatic mean runs away) */
    AIM_STOP_TRUNCATION, /* a truncated hierarchy's error estimate (order M
                           against M - 1) passed hierarchy.tol
                           (sim/trajectory_estimate.c) */
    AIM_STOP_SOLVER     /* CVODE gave up on a truncated hierarchy after its
                           start (too many steps, repeated error-test or
                           corrector failures): its state near moments of
                           no real matrices, where the closure has failed
                           (sim/trajectory_run.c) */
} aim_ode_stop;

typedef struct {
    int size;
    void *ctx;
    /* dy/dtau at y; returns 0, or non-zero with a message in *error */
    int (*rhs)(void *ctx, const double *y, double *dy);
    const char *(*error)(void *ctx);
    const char *(*state_name)(void *ctx, int i);
    /* components 0 .. monitored-1 are watched for blow-up (the order
     * parameters; a hierarchy's long words are legitimately large);
     * 0 means all */
    int monitored;
    /* optional: `margins` continuous functions of the state, >= 0 while
     * the state is valid (e.g. the moments of a truncated hierarchy are
     * those of real matrices); the run stops where the first one turns
     * negative, located by root finding. margin_text(k) names condition
     * k ("m(SS) >= m(S)^2"). */
    int margins;
    void (*margin)(void *ctx, const double *y, double *g);
    const char *(*margin_text)(void *ctx, int k);
    /* optional: why the last failed rhs call failed, when for a reason
     * of the state: AIM_STOP_INVALID (its order parameters are those of
     * no matrices), AIM_STOP_DIVERGED (a divergence the model names in
     * its error); AIM_STOP_NONE otherwise */
    aim_ode_stop (*failure)(void *ctx);
    /* optional: the teacher overlap at y; the first tau with |overlap| >=
     * cfg->recovery_threshold is located by root finding */
    double (*overlap)(void *ctx, const double *y);
    /* optional: the rhs split into first-order (gradient), second-order
     * (SGD noise) and weight-decay terms, to name a blow-up's cause */
    int (*terms)(void *ctx, const double *y, double *gradient, double *noise,
                 double *decay);
} aim_ode_model;

typedef enum {
    AIM_ODE_OK = 0,
    AIM_ODE_BLOWUP = 1, /* the run stopped early and its rows are kept:
                           a blow-up (|state| reached cfg->blowup, or a
                           non-finite state or rate), or the state left
                           the model's valid set (see aim_ode_stop) */
    AIM_ODE_FAILED = -1 /* solver, set-up or start failure: no result */
} aim_ode_status;

/* CVODE's counters of one integration (CVodeGetNum*), recorded in the
 * result files' sidecars (docs/config.md, "The JSON sidecar"). */
typedef struct {
    char what[64];             /* which integration: "trajectory", "fast phase", ... */
    long steps;                /* internal steps */
    long rhs_evals;            /* right-hand-side evaluations by the integrator */
    long linear_setups;        /* linear solver setups */
    long jacobian_evals;       /* Jacobian evaluations (dense solver; 0 matrix-free) */
    long jacobian_rhs_evals;   /* rhs evaluations for difference-quotient
                                  Jacobians or Jacobian-vector products */
    long error_test_failures;  /* local error test failures */
    long nonlinear_iterations; /* Newton iterations */
    long nonlinear_failures;   /* nonlinear solver convergence failures */
} aim_ode_stats;

#define AIM_ODE_MAX_INTEGRATIONS 4

typedef struct {
    aim_ode_status status;
    aim_ode_stop stop;
    double tau;          /* where the integration stopped */
    int reached;         /* grid points filled in states */
    /* at a blow-up: |noise| / (|gradient + decay| + |noise|) of the
     * quantity that reached the level (NAN when not known) */
    double noise_share;
    /* first tau with |overlap| >= cfg->recovery_threshold, by root
     * finding (tau[0] when the start is above it); NAN when not reached
     * or the model has no overlap function */
    double tau_wr;
    /* ode.method = matrix: the standard error of tau_wr over the replicas
     * (NAN otherwise) */
    double tau_wr_se;
    double start_mean;   /* untied, raw: the student mean it started from */
    /* the expectation engine: its quasi-random point count (0: the
     * Gauss-Hermite rule, or no engine) and its estimated relative kernel
     * error at the start (aim_gauss_kernel_error; NAN: not estimated).
     * Filled by aim_trajectory, not by aim_ode_integrate. */
    int kernel_points;
    double kernel_error;
    /* hierarchy.beyond = matrix: handed_over is 1 when the rows from tau =
     * handover on are the matrix limit process's, where the hierarchy
     * failed; handover_why says why it failed there (set also when no
     * hand-over was possible: then the run stops as with beyond = stop) */
    int handed_over;
    double handover;
    char handover_why[768];
    char handover_fold[256]; /* how its replicas were folded, "" not */
    int handover_order;      /* the process's rows carry the words up to
                                this length (longer ones NaN), 0 none */
    /* the seam: the process minus the hierarchy at the hierarchy's last
     * row (tau handover_seam_tau), in the overlap and in the risk relative
     * to the hierarchy's, with the process's standard errors (NaN with one
     * replica); handover_seam_tau NaN when the hierarchy wrote no row */
    double handover_seam_tau, handover_seam[2], handover_seam_se[2];
    /* ode.method = matrix (or its hand-over): the steps a replica took,
     * averaged over the replicas (0: no process ran) */
    double matrix_steps;
    char warning[512];   /* a diagnostic that does not stop the run (the
                            untied balance condition), "" if none */
    char reason[512];    /* at a stop: the condition or quantity, without
                            the time (for callers that word it anew) */
    char message[768];
    /* the CVODE integrations of the run, in order (none for ode.method =
     * matrix, or when CVODE was not started) */
    int integrations;
    aim_ode_stats stats[AIM_ODE_MAX_INTEGRATIONS];
} aim_ode_report;

/* Whether a system of n equations is integrated with matrix-free GMRES
 * (ode.linear_solver = krylov, or auto above the measured crossover)
 * rather than dense LU. */
int aim_ode_uses_krylov(const aim_config *cfg, int n);

/* Appends the integrations of from to to (what prefixed to their labels;
 * those beyond AIM_ODE_MAX_INTEGRATIONS are left out). */
void aim_ode_stats_append(aim_ode_report *to, const aim_ode_report *from, const char *what);

/* Integrates from y0 at tau[0] through tau[1..points-1], storing the
 * state at each grid point in states[i * size ...]; rows past a stop are
 * not written (report->reached of them are). */
aim_ode_status aim_ode_integrate(const aim_config *cfg, const aim_ode_model *model,
                                 const double *y0, const double *tau, int points,
                                 double *states, aim_ode_report *report);

/* The same integration a grid point at a time, for a caller that decides
 * between points whether to go on (a truncation error estimate that has
 * already failed: sim/trajectory_estimate.c). aim_ode_begin sets CVODE
 * up and checks the start (row 0); on a failure report->status is
 * AIM_ODE_FAILED and the run, if not NULL, does nothing but end.
 * aim_ode_advance integrates until row upto is reached (report->reached
 * > upto) or the run stops: AIM_ODE_OK while it goes on, else the final
 * status. aim_ode_end records CVODE's counters into the report and frees
 * the run (the caller's states and report stay); a run ended before its
 * last grid point and not stopped has status AIM_ODE_OK with
 * report->reached rows. aim_ode_integrate is begin, advance to the last
 * point, end. */
typedef struct aim_ode_run aim_ode_run;

aim_ode_run *aim_ode_begin(const aim_config *cfg, const aim_ode_model *model,
                           const double *y0, const double *tau, int points, double *states,
                           aim_ode_report *report);
aim_ode_status aim_ode_advance(aim_ode_run *run, int upto);
void aim_ode_end(aim_ode_run *run);

#endif
