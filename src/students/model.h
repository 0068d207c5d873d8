/* aim_model: a student's limit dynamics behind one interface, so that the
 * ODE layer (sim/) runs every decomposition through the same code. As
 * SUNDIALS does with its vectors and solvers, a model is a table of
 * operations (aim_model_ops) and the content it works on; a new kind of
 * student (docs/architecture.md) implements aim_model_ops in its own file
 * and adds one line to the registry in registry.c (and its matrix family,
 * family.h, to the lookup in family.c).
 *
 * The state is a vector of aim_model_size() numbers (order parameters, or
 * the moments of a truncated hierarchy) integrated in tau = n eta / d^2.
 * A model may also have a fast variable on its own clock t = d tau (the
 * untied raw mean in the adiabatic mode): the ODE layer integrates it with
 * the slow state frozen and hands its path back to the observables. */
#ifndef AIM_MODEL_H
#define AIM_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "gauss.h"
#include "hierarchy.h"
#include "overlaps.h"

typedef struct aim_model aim_model;

/* A measured start (e.g. an SGD seed's initial matrices), a plain value
 * that validate/ produces and sim/ consumes. Fields a model does not use
 * are ignored; a NULL aim_measured_start pointer means the exact large-d start. */
typedef struct {
    /* direct students: the order parameters of student and teacher */
    const aim_overlaps *q;
    /* hierarchies: the moments Tr(w)/d of every word of length
     * 0..order + 1 of the model's alphabet, in aim_hierarchy_words order */
    const double *moments;
    /* untied raw centring: the dimension the moments were measured at (the
     * mean is m(K) sqrt d) */
    int d;
} aim_measured_start;

/* Why a right-hand side failed, when for a reason of the state. */
typedef enum {
    AIM_MODEL_FAILURE_NONE = 0,
    AIM_MODEL_FAILURE_INVALID, /* order parameters of no real matrices */
    AIM_MODEL_FAILURE_DIVERGED /* the model's own divergence, which
                                  aim_model_ops.divergence names */
} aim_model_failure;

/* The student's matrices in the matrix limit process (sim/mlimit.c,
 * theory/matrix.md): S (D x D) and, for a factored student, its factors
 * F1, F2 (D x p row-major) and single-precision room for the step's
 * products, fwork (D x D + 4 D x p floats: M, and the factors and their
 * increments); those a student does not use are NULL. */
typedef struct {
    int D, p;
    double *S, *F1, *F2;
    float *fwork;
} aim_matrix_student;

/* How a student is parametrised, for the matrix limit process. */
typedef struct {
    /* factor matrices: 0 (S learned itself), 1 (W), 2 (U, V) */
    int factors;
    /* the student's own SGD rule with its gradient G replaced by M (D x D,
     * may be overwritten) and weight decay: each parameter X becomes
     * keep X - dX, with dX pulled back from M at the old parameters */
    void (*step)(const aim_config *cfg, double *M, double keep, aim_matrix_student *m);
    /* raw centring (NULL: the process has none for this student): moves
     * Tr S by scale Tr S, the other moments by O(scale) */
    void (*raw_trace)(aim_matrix_student *m, double scale);
    /* raw centring: c of the mean's relaxation rate d c |dE_C/dmu|
     * (theory/matrix.md sec. 5) */
    double (*mean_coupling)(const aim_matrix_student *m);
} aim_matrix_param;

/* The operations. Optional ones may be NULL; aim_model's functions then
 * give the documented default. Every function gets the content pointer
 * that create returned. */
typedef struct {
    const char *name; /* "direct", "tied", "untied" */
    /* a truncated moment hierarchy: its order and closure apply, and its
     * truncation error is estimated against order - 1 */
    int hierarchy;
    /* hierarchies: the letters of its words (student and teacher) and
     * those the student moves; a word is tracked when it has one of them */
    void (*alphabet)(const aim_config *cfg, aim_alphabet *ab);
    const char *moving;
    /* hierarchies: the generated system */
    const aim_hierarchy *(*equations)(const void *c);
    /* d: the dimension of the runs where the model needs one (raw
     * centring); NULL with a message in err (size n) */
    void *(*create)(const aim_config *cfg, double d, char *err, size_t n);
    void (*free)(void *c);
    int (*size)(const void *c);
    /* components 0 .. monitored - 1 are the order parameters watched for a
     * blow-up; 0: all */
    int (*monitored)(const void *c);
    /* the start state y0 (size()): exact when start is NULL; 0, or -1
     * with a message in err (e.g. a measured start that is the moment
     * sequence of no matrices) */
    int (*initial)(void *c, const aim_measured_start *start, double *y0, char *err, size_t n);
    /* dy/dtau; 0, or non-zero with the reason in error() */
    int (*rhs)(void *c, const double *y, double *dy);
    const char *(*error)(const void *c);
    const char *(*state_name)(const void *c, int i);
    /* optional: count continuous validity margins, >= 0 while valid */
    int (*margin_count)(const void *c);
    void (*margins)(void *c, const double *y, double *g);
    const char *(*margin_text)(const void *c, int k);
    /* optional: why the last failed rhs failed (default: NONE) */
    aim_model_failure (*failure)(const void *c);
    /* optional: what diverged, worded for a stop message */
    const char *divergence;
    /* optional: what the integrated system is, for an output's header
     * (default: the limit d -> infinity, with a raw mean at finite d) */
    const char *(*limit_text)(const aim_config *cfg);
    /* optional: header lines on the model (the hierarchy's order, size,
     * closure, letters; a raw mean's start): equations, the size of the
     * state; matrix: the run used ode.method = matrix, not the model's ODE */
    void (*describe)(const aim_config *cfg, int equations, double start_mean, int matrix,
                     FILE *out);
    /* the student in the matrix limit process */
    const aim_matrix_param *matrix;
    /* optional: the paper's result that a start drift (escape) or a
     * vanishing cross-gradient (invariant manifold) is, for recovery's
     * verdict ("Corollary 3") */
    const char *escape_result, *invariant_result;
    /* the expectation engine (its point count and kernel error estimate) */
    aim_gauss *(*engine)(void *c);
    /* the teacher overlap at y */
    double (*overlap)(void *c, const double *y);
    /* the start drift of the traceless cross moment Omega(S,S*) - t_S t_T
     * (theory/recovery.md sec. 3) when the gradient's teacher part is
     * cross[0] S* + cross[1] S*^T: ts = Tr S/d, omega_c and psi_c the
     * teacher's traceless Omega(S*,S*) and Psi(S*,S*) */
    double (*cross_drift)(const aim_config *cfg, double ts, double omega_c, double psi_c,
                          const double cross[2]);
    /* optional: the rhs split into gradient, noise and decay terms */
    int (*terms)(void *c, const double *y, double *gradient, double *noise, double *decay);
    /* the observables (AIM_OBS_COUNT) at y; 0, or non-zero with error() */
    int (*observables)(void *c, const double *y, double *obs);
    /* optional: the moments written beside the observables (default none):
     * their count, names ("m(SST)"), and values at a state whose
     * observables are obs */
    int (*tracked_count)(const void *c);
    const char *(*tracked_name)(const void *c, int k);
    void (*tracked)(const void *c, const double *y, const double *obs, double *out);
    /* optional: a note on the start that does not stop a run ("" if none) */
    const char *(*warning)(const void *c);
    /* optional: the start of a raw index mean Tr S/sqrt d (default NAN) */
    double (*start_mean)(const void *c);
    /* optional: the start of the fast variable (NAN: the model has none),
     * its rate on t = d tau with the slow state frozen at the start, and
     * the observables of a path (slow states and fast values per grid
     * point, `reached` of them; called only with the fast path, every
     * other path is observed row by row with observables) */
    const char *fast_name; /* "mean" */
    double (*fast_start)(const void *c);
    int (*fast_rate)(void *c, double x, double *rate);
    int (*path_observables)(void *c, const double *states, const double *fast, int reached,
                            double *obs, int *failed_row);
} aim_model_ops;

/* The operations of cfg's student (cfg->decomposition), NULL for none. */
const aim_model_ops *aim_model_ops_of(const aim_config *cfg);

/* The header lines of an output made with cfg's student (ops limit_text
 * and describe; see there). */
const char *aim_model_limit_text(const aim_config *cfg);
void aim_model_describe(const aim_config *cfg, int equations, double start_mean, int matrix,
                        FILE *out);
/* "aligned", "cumulant", "free", "initial" */
const char *aim_model_closure_name(aim_closure c);
/* How a hierarchy's start was taken, for the output header: "exact",
 * "measured from SGD seed sgd.seed at sgd.d" or "measured on the saved
 * state training.start_file". */
const char *aim_model_start_text(const aim_config *cfg);

/* The model of cfg's student (cfg->decomposition). d as for ops.create.
 * NULL with a message in err. */
aim_model *aim_model_create(const aim_config *cfg, double d, char *err, size_t n);
void aim_model_free(aim_model *m);

const char *aim_model_name(const aim_model *m);
int aim_model_is_hierarchy(const aim_model *m);
/* a hierarchy's generated system (NULL for a closed ODE) */
const aim_hierarchy *aim_model_equations(const aim_model *m);
int aim_model_size(const aim_model *m);
int aim_model_monitored(const aim_model *m);
int aim_model_initial(aim_model *m, const aim_measured_start *start, double *y0, char *err, size_t n);
int aim_model_rhs(aim_model *m, const double *y, double *dy);
const char *aim_model_error(const aim_model *m);
const char *aim_model_state_name(const aim_model *m, int i);
int aim_model_margin_count(const aim_model *m);
void aim_model_margins(aim_model *m, const double *y, double *g);
const char *aim_model_margin_text(const aim_model *m, int k);
aim_model_failure aim_model_failure_of(const aim_model *m);
/* what diverged (for AIM_MODEL_FAILURE_DIVERGED), or NULL */
const char *aim_model_divergence(const aim_model *m);
aim_gauss *aim_model_engine(aim_model *m);
double aim_model_overlap(aim_model *m, const double *y);
/* 0, or -1 when the model cannot split its rhs */
int aim_model_has_terms(const aim_model *m);
int aim_model_terms(aim_model *m, const double *y, double *gradient, double *noise,
                    double *decay);
int aim_model_observables(aim_model *m, const double *y, double *obs);
int aim_model_tracked_count(const aim_model *m);
const char *aim_model_tracked_name(const aim_model *m, int k);
void aim_model_tracked(const aim_model *m, const double *y, const double *obs, double *out);
const char *aim_model_warning(const aim_model *m);
double aim_model_start_mean(const aim_model *m);
/* NAN when the model has no fast variable */
double aim_model_fast_start(const aim_model *m);
const char *aim_model_fast_name(const aim_model *m);
int aim_model_fast_rate(aim_model *m, double x, double *rate);
/* Observables of `reached` grid points (points x AIM_OBS_COUNT, row i from
 * states[i * size ...] and, with a fast variable, fast[i]; fast NULL: row by
 * row with aim_model_observables). Returns 0, or
 * non-zero with the row that failed in *failed_row and the reason in
 * aim_model_error. */
int aim_model_path_observables(aim_model *m, const double *states, const double *fast,
                               int reached, double *obs, int *failed_row);

#endif
