/* aim_config's types: the run configuration and its parts (matrix
 * specs, the enums of its keys) and the error report, without the
 * functions of config.h, so that the key table (config_keys.h,
 * config_values.h) and the grid (grid.h) can name them without depending
 * on the parser (config.c). Installed with config.h, which includes it. */
#ifndef AIM_CONFIG_TYPES_H
#define AIM_CONFIG_TYPES_H

#include <stdint.h>

#define AIM_MAX_TOKENS 8
#define AIM_MAX_HERMITE 9 /* coefficients c_0 .. c_8 */
#define AIM_CONFIG_MAX_KEYS 96 /* room for the key table (config_keys.c) */

typedef enum { AIM_DIRECT = 0, AIM_TIED, AIM_UNTIED } aim_decomposition;
typedef enum { AIM_CENTRED = 0, AIM_RAW } aim_centring;
typedef enum { AIM_ELEMENTWISE = 0, AIM_SOFTMAX } aim_output_kind;
typedef enum {
    AIM_ACT_HERMITE = 0, /* finite Hermite series, incl. he1..he4 shortcuts */
    AIM_ACT_TANH,
    AIM_ACT_ERF,
    AIM_ACT_RELU
} aim_activation;
typedef enum { AIM_GRID_LINEAR = 0, AIM_GRID_LOG } aim_grid_kind;
/* Expectation rule: automatic (closed forms for relu and erf,
 * Gauss-Hermite for the other elementwise maps, quasi-random for row
 * softmax), the generic quasi-random one for every map, or Gauss-Hermite
 * for every elementwise map. */
typedef enum { AIM_RULE_AUTO = 0, AIM_RULE_GENERIC, AIM_RULE_HERMITE } aim_gauss_rule;
/* Value of the words longer than the truncation order (theory/tied.md
 * sec. 6): their mixed free cumulants are those of S = c S* + X with X
 * free from S* (aligned); they vanish (cumulant); all mixed cumulants
 * vanish (free); or the words keep their initial value (initial). */
typedef enum {
    AIM_CLOSURE_ALIGNED = 0,
    AIM_CLOSURE_CUMULANT,
    AIM_CLOSURE_FREE,
    AIM_CLOSURE_INITIAL,
    AIM_CLOSURE_PSD,
    AIM_CLOSURE_QUADRATURE
} aim_closure;
/* Initial moments of the hierarchy: exact large-d values of the
 * independent Gaussian start, measured from the initial matrices of SGD
 * seed sgd.seed at dimension sgd.d, or measured on the saved state
 * training.start_file. */
typedef enum { AIM_START_EXACT = 0, AIM_START_SEED, AIM_START_FILE } aim_start;
/* Untied student, raw centring: the fast mean integrated with the
 * moments at the finite d of the runs (stiff), or eliminated on its
 * critical manifold (adiabatic limit; theory/untied.md). */
typedef enum { AIM_MEAN_STIFF = 0, AIM_MEAN_ADIABATIC } aim_mean_mode;
/* How the limit is integrated: the closed ODE (direct) or the truncated
 * moment hierarchy (tied, untied), or the limit process simulated with
 * matrices of dimension matrix.d (theory/matrix.md): every moment at
 * once, no truncation. */
typedef enum { AIM_METHOD_AUTO = 0, AIM_METHOD_MATRIX } aim_method;
/* CVODE's linear solver for its Newton iterations: dense LU with a
 * finite-difference Jacobian, or matrix-free GMRES; auto picks by the
 * size of the system (sim/ode.c, aim_ode_uses_krylov). */
typedef enum { AIM_SOLVER_AUTO = 0, AIM_SOLVER_DENSE, AIM_SOLVER_KRYLOV } aim_linear_solver;
/* hierarchy.beyond: what a truncated hierarchy does past the point where
 * it fails (its truncation error estimate passes hierarchy.tol, its
 * moments leave those of real matrices, or CVODE gives up on it): stop
 * there, or hand over to the matrix limit process
 * (sim/trajectory_handover.c; theory/matrix.md sec. 7). */
typedef enum { AIM_BEYOND_MATRIX = 0, AIM_BEYOND_STOP } aim_beyond;
/* the matrix process's time scheme (theory/matrix.md sec. 3) */
typedef enum { AIM_SCHEME_RICHARDSON = 0, AIM_SCHEME_EULER } aim_matrix_scheme;
/* output.fold: mirror-image runs folded by the sign of (src/results/fold.h) */
typedef enum { AIM_FOLD_NONE = 0, AIM_FOLD_MEAN, AIM_FOLD_OVERLAP } aim_fold_kind;

typedef struct {
    aim_decomposition decomposition;
    int symmetric; /* direct only: S kept symmetric */
    double rho;    /* tied/untied: p = rho d columns */
    double scale;  /* init scale v: entries N(0, v/d) */
    double scale_v; /* untied: init scale of the second factor V (0: the
                       same as scale) */
    double mean;   /* teacher only, raw centring: adds (mean/sqrt d) I */
    double overlap; /* student only: teacher overlap of the informed start
                       (0: the random start; src/students/inform.h) */
} aim_matrix_spec;

typedef struct {
    /* [model] */
    aim_decomposition decomposition; /* of the student */
    int tokens;                      /* T */
    double cov[AIM_MAX_TOKENS * AIM_MAX_TOKENS]; /* C, row-major T x T */
    aim_centring centring;
    aim_output_kind output;
    aim_activation activation;
    double hermite[AIM_MAX_HERMITE]; /* sigma = sum_k hermite[k] He_k */
    int hermite_degree;              /* highest k with hermite[k] != 0 */
    double beta;                     /* softmax inverse temperature */
    double noise;                    /* label noise variance Delta */

    /* [student], [teacher] */
    aim_matrix_spec student;
    aim_matrix_spec teacher;

    /* [training] */
    double eta;
    double gamma;
    double horizon;     /* tau_max */
    int points;         /* measurement / output grid size */
    aim_grid_kind grid;
    double grid_start;  /* first positive tau of a log grid */
    char start_file[512]; /* a saved SGD state every run starts from
                             (validate/state.h); "" none */
    char start_digest[32]; /* start_file's content digest (src/io/digest.h):
                              set when the state is read, recorded, and
                              checked by every later run; "" not yet */

    /* [ode] */
    double rtol, atol;
    int quad_nodes;  /* Gauss-Hermite nodes per dimension (elementwise) */
    int qmc_points;  /* quasi-random points (row softmax) */
    int max_steps;   /* CVODE's internal steps allowed between two grid points */
    double kernel_tol; /* > 0: the points chosen for this relative kernel
                          error (qmc_points then unused) */
    double ode_d;    /* finite d for the raw-mode mean; 0 = from sgd.d */
    double blowup;   /* |order parameter| that counts as a blow-up */
    aim_gauss_rule rule;
    aim_method method;
    aim_linear_solver solver;

    /* [matrix] (ode.method = matrix) */
    int matrix_d;        /* dimension D of the simulated matrices */
    int replicas;        /* independent runs averaged (seeds sgd.seed + r) */
    double matrix_dtau;  /* the process's step in tau; 0: the default of aim_config_matrix_step */
    aim_matrix_scheme scheme; /* Euler-Maruyama, or extrapolated from steps h and h/2 */
    double matrix_step_tol; /* richardson, matrix.dtau = 0: the change per step */
    int matrix_qmc_points;  /* the process's cheap quasi-random rule, 0: none */

    /* [hierarchy] (tied and untied students) */
    int order;           /* truncation order M: longest tracked word */
    aim_closure closure;
    aim_start start;
    aim_mean_mode mean_mode;
    double balance;      /* c_bal: |tA_k(0) - tB_k(0)| below it is warned */
    double tol;          /* truncation error estimate at which a run stops
                            (0: never) */
    aim_beyond beyond;   /* past that point: stop, or the matrix process */

    /* [sgd] */
    int d;
    int seeds;
    uint64_t seed;   /* base seed; seed i uses seed + i */
    int block;       /* steps unrolled per block (1 = plain steps) */
    int holdout;     /* held-out samples per seed (the measured risk) */

    /* [output] */
    char dir[512];   /* output directory */
    char name[128];  /* file stem */
    double recovery_threshold; /* weak recovery: |teacher overlap| >= this */
    double checkpoint; /* CPU seconds between the checkpoints of an SGD seed */
    char save_state[512]; /* grid points whose SGD states are saved:
                             "none", "all" or a list of tau */
    aim_fold_kind fold; /* SGD seeds and matrix replicas folded (src/results/fold.h) */

    /* provenance */
    char source[512]; /* config file path or "built-in default" */

    /* model.covariance as given, normalised: "identity",
     * "equicorrelated:R" or the numbers of an explicit matrix;
     * aim_config_validate resolves it into cov for the current tokens. */
    char covariance[2048];
    /* Where each key (by its index in config_keys.c's table) was last set:
     * > 0 a line of source, 0 the built-in default, -1 a --set override,
     * -2 an earlier config file. Used to locate cross-key errors. */
    int key_line[AIM_CONFIG_MAX_KEYS];
} aim_config;

/* Error report: file, line, key, value and what is allowed. */
typedef struct {
    char message[1024];
} aim_config_error;

#endif
