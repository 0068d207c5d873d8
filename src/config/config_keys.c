/* The configuration's key table: every key with its section, default,
 * allowed values, help text, setter and getter (config_values.c), and the
 * look-ups by section and key. config.c parses through it, config_write.c
 * writes and describes it, docs/config.md documents it for humans; one
 * table, so that they cannot drift apart. */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"
#include "config_text.h"

/* The bounds of theory/stops.md sec. 4 (AIM_CONFIG_SCALE_MAX,
 * config_values.h): order parameters at most 1e15 keep every expectation
 * finite. */
#define BLOWUP_MAX 1e15
#define SCALE_WHY                                                                  \
    "a variance scale; bounded so that every expectation stays finite up to the " \
    "blow-up level: theory/stops.md sec. 4"

static const aim_config_enum_name decomposition_names[] = {
    {"direct", AIM_DIRECT}, {"tied", AIM_TIED}, {"untied", AIM_UNTIED}, {NULL, 0}};
static const aim_config_enum_name centring_names[] = {
    {"centred", AIM_CENTRED}, {"raw", AIM_RAW}, {NULL, 0}};
static const aim_config_enum_name output_names[] = {
    {"elementwise", AIM_ELEMENTWISE}, {"softmax", AIM_SOFTMAX}, {NULL, 0}};
static const aim_config_enum_name fold_names[] = {
    {"none", AIM_FOLD_NONE}, {"mean", AIM_FOLD_MEAN}, {"overlap", AIM_FOLD_OVERLAP}, {NULL, 0}};
static const aim_config_enum_name grid_names[] = {
    {"linear", AIM_GRID_LINEAR}, {"log", AIM_GRID_LOG}, {NULL, 0}};
static const aim_config_enum_name rule_names[] = {
    {"auto", AIM_RULE_AUTO}, {"generic", AIM_RULE_GENERIC}, {"hermite", AIM_RULE_HERMITE},
    {NULL, 0}};
static const aim_config_enum_name scheme_names[] = {
    {"richardson", AIM_SCHEME_RICHARDSON}, {"euler", AIM_SCHEME_EULER}, {NULL, 0}};
static const aim_config_enum_name beyond_names[] = {
    {"matrix", AIM_BEYOND_MATRIX}, {"stop", AIM_BEYOND_STOP}, {NULL, 0}};
static const aim_config_enum_name closure_names[] = {{"aligned", AIM_CLOSURE_ALIGNED},
                                          {"cumulant", AIM_CLOSURE_CUMULANT},
                                          {"free", AIM_CLOSURE_FREE},
                                          {"initial", AIM_CLOSURE_INITIAL},
                                          {"psd", AIM_CLOSURE_PSD},
                                          {"quadrature", AIM_CLOSURE_QUADRATURE},
                                          {NULL, 0}};
static const aim_config_enum_name start_names[] = {
    {"exact", AIM_START_EXACT}, {"seed", AIM_START_SEED}, {"file", AIM_START_FILE},
    {NULL, 0}};
static const aim_config_enum_name mean_names[] = {
    {"stiff", AIM_MEAN_STIFF}, {"adiabatic", AIM_MEAN_ADIABATIC}, {NULL, 0}};
static const aim_config_enum_name solver_names[] = {{"auto", AIM_SOLVER_AUTO},
                                         {"dense", AIM_SOLVER_DENSE},
                                         {"krylov", AIM_SOLVER_KRYLOV},
                                         {NULL, 0}};
static const aim_config_enum_name method_names[] = {
    {"auto", AIM_METHOD_AUTO}, {"matrix", AIM_METHOD_MATRIX}, {NULL, 0}};

/* --- the table --- */

#define REAL(sec, key, field, def, lo, hi, flags, allowed, help)                          \
    {sec, key, def, allowed, help, aim_config_set_real, aim_config_get_real,               \
     offsetof(aim_config, field), 0, lo, hi, flags, NULL}
#define INT(sec, key, field, def, lo, hi, flags, allowed, help)                           \
    {sec, key, def, allowed, help, aim_config_set_int, aim_config_get_int,                 \
     offsetof(aim_config, field), 0, lo, hi, flags, NULL}
#define BOOL(sec, key, field, def, help)                                                  \
    {sec, key, def, "true | false (also yes | no, 1 | 0)", help, aim_config_set_bool,      \
     aim_config_get_bool, offsetof(aim_config, field), 0, 0, 0, 0, NULL}
#define ENUM(sec, key, field, def, names, allowed, help)                                  \
    {sec, key, def, allowed, help, aim_config_set_enum, aim_config_get_enum,               \
     offsetof(aim_config, field), 0, 0, 0, 0, names}
#define CUSTOM(sec, key, def, setter, getter, allowed, help)                              \
    {sec, key, def, allowed, help, setter, getter, 0, 0, 0, 0, 0, NULL}

/* The first grid step of the smallest horizon, 1e-100 / 99999 (the
 * most training.points), stays far above 1e-154 = sqrt(DBL_MIN), where
 * CVODE's products of two step sizes underflow and it fails with
 * "tstop is behind current t" (measured on the default example: a
 * horizon of 1e-155 fails, 1e-152 integrates). */
#define TAU_MIN 1e-100
#define TAU_WHY "below about 1e-150 CVODE's step arithmetic underflows"

/* the columns p = round(rho d) are an int at every d up to 20000 (sgd.d) */
#define RHO_MAX 1e5
#define RHO_WHY "p = round(rho d) columns: an integer at every d up to sgd.d's 20000"

const aim_config_key aim_config_keys[] = {
    /* [model] */
    {"model", "decomposition", "direct", "direct | tied | untied",
     "student attention: S, W W^T or U V^T",
     aim_config_set_model_decomposition, aim_config_get_enum,
     offsetof(aim_config, decomposition), 0, 0, 0, 0, decomposition_names},
    INT("model", "tokens", tokens, "2", 1, AIM_MAX_TOKENS, 0,
        "an integer in 1..8", "T, tokens per sample"),
    CUSTOM("model", "covariance", "identity", aim_config_set_covariance, aim_config_get_covariance,
           "identity | equicorrelated:R with -1/(T-1) < R < 1 | T*T numbers "
           "(row-major, separated by spaces, commas or semicolons): "
           "symmetric, unit diagonal, positive definite",
           "token covariance C (E[x_a x_b^T] = C_ab I)"),
    ENUM("model", "centring", centring, "centred", centring_names,
         "centred | raw",
         "indices h_ab = (x_a^T S x_b - c C_ab Tr S)/sqrt d with c = 1 "
         "(centred) or c = 0 (raw: the index mean Tr S/sqrt d is tracked)"),
    ENUM("model", "output", output, "elementwise", output_names,
         "elementwise | softmax",
         "output map f: sigma on every index, or row softmax"),
    CUSTOM("model", "activation", "hermite", aim_config_set_activation, aim_config_get_activation,
           "he1 | he2 | he3 | he4 | hermite | tanh | erf | relu",
           "sigma for elementwise outputs; heN sets model.hermite to the unit "
           "vector e_N, hermite uses model.hermite"),
    CUSTOM("model", "hermite", "0 1 0.70710678118654752", aim_config_set_hermite,
           aim_config_get_hermite,
           "1 to 9 real numbers c0 .. c8 (separated by spaces, commas or "
           "semicolons), not all zero, each at most 1e6 in size (theory/stops.md sec. 4)",
           "sigma = sum_k c_k He_k (probabilists' Hermite); used when "
           "model.activation = hermite or heN"),
    REAL("model", "beta", beta, "1", 0, 0, AIM_CONFIG_LO_OPEN | AIM_CONFIG_NO_HI,
         "a real number > 0", "softmax inverse temperature"),
    REAL("model", "noise", noise, "0", 0, AIM_CONFIG_SCALE_MAX, 0,
         "a real number in [0, 1e6] (a variance; bounded so that every expectation "
         "stays finite up to the blow-up level: theory/stops.md sec. 4)",
         "label noise variance Delta"),

    /* [student] */
    BOOL("student", "symmetric", student.symmetric, "false",
         "direct only: keep S symmetric"),
    REAL("student", "rho", student.rho, "1", 0, RHO_MAX, AIM_CONFIG_LO_OPEN,
         "a real number in (0, 1e5] (" RHO_WHY ")", "tied/untied width: p = round(rho d) columns"),
    REAL("student", "scale", student.scale, "0.25", 0, AIM_CONFIG_SCALE_MAX, AIM_CONFIG_LO_OPEN,
         "a real number in (0, 1e6] (" SCALE_WHY ")", "init scale v: entries N(0, v/d)"),
    REAL("student", "scale_v", student.scale_v, "0", 0, AIM_CONFIG_SCALE_MAX,
         AIM_CONFIG_LO_OPEN | AIM_CONFIG_ZERO_OK,
         "0 (the same as student.scale) or a real number in (0, 1e6] (" SCALE_WHY ")",
         "untied: init scale v_V of V (U uses student.scale); unequal scales "
         "make the balance condition of hierarchy.balance hold"),
    REAL("student", "overlap", student.overlap, "0", 0, 1, AIM_CONFIG_HI_OPEN,
         "a real number in [0, 1), at most the largest overlap the student and teacher "
         "families reach (theory/model.md sec. 4)",
         "informed start: teacher overlap at tau = 0 (0: the random start); the student's "
         "matrices mix the teacher's with fresh Gaussian ones"),

    /* [teacher] */
    ENUM("teacher", "decomposition", teacher.decomposition, "direct",
         decomposition_names, "direct | tied | untied",
         "teacher S*: direct, W W^T or U V^T"),
    BOOL("teacher", "symmetric", teacher.symmetric, "false",
         "direct only: symmetric S*"),
    REAL("teacher", "rho", teacher.rho, "1", 0, RHO_MAX, AIM_CONFIG_LO_OPEN,
         "a real number in (0, 1e5] (" RHO_WHY ")", "tied/untied width: p* = round(rho d) columns"),
    REAL("teacher", "scale", teacher.scale, "1", 0, AIM_CONFIG_SCALE_MAX, AIM_CONFIG_LO_OPEN,
         "a real number in (0, 1e6] (" SCALE_WHY ")", "scale v*: entries N(0, v*/d)"),
    REAL("teacher", "mean", teacher.mean, "0", 0, 0, AIM_CONFIG_NO_LO | AIM_CONFIG_NO_HI,
         "a real number (non-zero only with model.centring = raw)",
         "teacher mean m*: adds (m*/sqrt d) I to S*"),

    /* [training] */
    REAL("training", "eta", eta, "0.1", 0, 0, AIM_CONFIG_LO_OPEN | AIM_CONFIG_NO_HI,
         "a real number > 0", "learning rate: SGD steps of eta/d"),
    REAL("training", "gamma", gamma, "0", 0, AIM_CONFIG_SCALE_MAX, 0,
         "a real number in [0, 1e6] (a decay rate per unit tau; bounded so that every "
         "rate stays finite up to the blow-up level: theory/stops.md sec. 4)",
         "weight decay (gamma/d)"),
    REAL("training", "horizon", horizon, "0.3", TAU_MIN, 0, AIM_CONFIG_NO_HI,
         "a real number >= 1e-100 (" TAU_WHY ")", "tau_max, in slow time tau = n eta / d^2"),
    INT("training", "points", points, "31", 2, 100000, 0,
        "an integer in 2..100000", "points of the tau grid (output and SGD "
        "measurements), tau = 0 included"),
    ENUM("training", "grid", grid, "linear", grid_names, "linear | log",
         "tau grid: linear, or 0 then geometric from training.grid_start"),
    REAL("training", "grid_start", grid_start, "0.001", TAU_MIN, 0, AIM_CONFIG_NO_HI,
         "a real number >= 1e-100 (and < training.horizon for a log grid; " TAU_WHY ")",
         "first positive tau of a log grid"),

    {"training", "start_file", "",
     "empty (none) or the path of a state saved by aimdyn sgd --save-state (< 512 "
     "characters) of the same student, d, tokens, columns, symmetric switch and centring",
     "a saved SGD state every run starts from, as tau = 0: the ODE from the order "
     "parameters or moments measured on its matrices (hierarchy.start = file), SGD "
     "continued from its teacher and student with the data of sgd.seed (docs/tables.md)",
     aim_config_set_optional_path, aim_config_get_string, offsetof(aim_config, start_file),
     sizeof(((aim_config *)0)->start_file), 0, 0, 0, NULL},
    {"training", "start_digest", "",
     "empty (set from the file when the state is read) or fnv1a64: and 16 lower-case hex "
     "digits, the digest of training.start_file's bytes",
     "the content digest of the saved state: recorded in every output, so that a rerun, "
     "a resumed seed or a kept checkpoint refuses a state replaced at the same path",
     aim_config_set_start_digest, aim_config_get_string, offsetof(aim_config, start_digest),
     sizeof(((aim_config *)0)->start_digest), 0, 0, 0, NULL},

    /* [ode] */
    REAL("ode", "rtol", rtol, "1e-6", 1e-14, 1e-1, 0,
         "a real number in [1e-14, 0.1]", "relative tolerance of the integrator"),
    REAL("ode", "atol", atol, "1e-9", 1e-16, 1, 0, "a real number in [1e-16, 1]",
         "absolute tolerance of the integrator"),
    INT("ode", "quad_nodes", quad_nodes, "0", 2, 64, AIM_CONFIG_ZERO_OK,
        "0 (automatic) or an integer in 2..64 (>= 2 x Hermite degree)",
        "Gauss-Hermite nodes per dimension (elementwise outputs under Gauss-Hermite rules: "
        "Hermite series and tanh, or every map with ode.rule = hermite)"),
    INT("ode", "max_steps", max_steps, "1000000", 10, 100000000, 0,
        "an integer in 10..100000000",
        "internal steps the integrator may take between two grid points before it gives up "
        "(CV_TOO_MUCH_WORK)"),
    INT("ode", "qmc_points", qmc_points, "16384", 256, 4194304, 0,
        "an integer in 256..4194304", "quasi-random points (row softmax)"),
    REAL("ode", "kernel_tol", kernel_tol, "0", 1e-6, 0.1, AIM_CONFIG_ZERO_OK,
         "0 (use ode.qmc_points) or a real number in [1e-6, 0.1]",
         "relative kernel error of the quasi-random rule: its point count is "
         "chosen for it at the start (1024 x 4^k points)"),
    REAL("ode", "d", ode_d, "0", 1, 0, AIM_CONFIG_ZERO_OK | AIM_CONFIG_NO_HI,
         "0 (take sgd.d) or a real number >= 1",
         "finite d of the stiff raw-mode mean equation"),
    REAL("ode", "blowup", blowup, "10000", 0, BLOWUP_MAX, AIM_CONFIG_LO_OPEN,
         "a real number in (0, 1e15] (at |order parameter| = 1e15 the largest "
         "expectation, of a degree-8 Hermite map, is about 1e146, and every rate stays "
         "far below the largest double: theory/stops.md sec. 4)",
         "|order parameter| above which a run counts as blown up"),
    ENUM("ode", "rule", rule, "auto", rule_names, "auto | generic | hermite",
         "expectation rule: auto (closed forms for relu and erf, Gauss-Hermite for the "
         "other elementwise maps, quasi-random for softmax), generic (quasi-random for "
         "every map) or hermite (Gauss-Hermite for every elementwise map; "
         "quasi-random for softmax)"),
    ENUM("ode", "linear_solver", solver, "auto", solver_names, "auto | dense | krylov",
         "linear solver of the integrator's Newton iterations: dense LU with a "
         "finite-difference Jacobian, or matrix-free GMRES (CVODE SPGMR); auto takes "
         "dense up to 200 equations (every tied order) and GMRES above (untied from "
         "order 4), the measured crossover (theory/untied.md sec. 12)"),
    ENUM("ode", "method", method, "auto", method_names, "auto | matrix",
         "auto: the closed ODE (direct) or the moment hierarchy truncated at "
         "hierarchy.order (tied, untied); matrix: the limit process simulated with "
         "matrices of dimension matrix.d, every moment at once, no truncation "
         "(theory/matrix.md; centred indices)"),

    /* [matrix] */
    INT("matrix", "d", matrix_d, "200", 16, 4000, 0, "an integer in 16..4000",
        "ode.method = matrix: dimension D of the simulated matrices (error O(1/D), "
        "cost O(D^3) per step; theory/matrix.md sec. 3 for what 200 gives)"),
    INT("matrix", "replicas", replicas, "4", 1, 1000, 0, "an integer in 1..1000",
        "ode.method = matrix: independent runs averaged; replica r starts from the "
        "initial matrices of SGD seed sgd.seed + r at d = matrix.d"),
    REAL("matrix", "dtau", matrix_dtau, "0", 0, 0,
         AIM_CONFIG_ZERO_OK | AIM_CONFIG_LO_OPEN | AIM_CONFIG_NO_HI,
         "0 (richardson: steps controlled by matrix.step_tol; euler: training.horizon / "
         "512) or a real number > 0",
         "ode.method = matrix: a fixed time step in tau, cut to the grid intervals (error "
         "O(dtau) with euler, O(dtau^2) with richardson)"),
    REAL("matrix", "step_tol", matrix_step_tol, "0.1", 0, 0.5, AIM_CONFIG_LO_OPEN,
         "a real number in (0, 0.5]",
         "ode.method = matrix, matrix.scheme = richardson, matrix.dtau = 0: the step is "
         "controlled so that the risk changes by about this fraction per step, and the "
         "overlap by this much (no step longer than the grid interval; theory/matrix.md "
         "sec. 3)"),
    INT("matrix", "qmc_points", matrix_qmc_points, "2048", 256, 4194304, AIM_CONFIG_ZERO_OK,
        "0 (the full rule at every evaluation) or an integer in 256..4194304",
        "ode.method = matrix with a quasi-random rule (row softmax, ode.rule = generic): "
        "the process evaluates its kernels by a rule of this many points, corrected by "
        "the full rule's difference from it at an anchor state re-taken whenever the order "
        "parameters have moved by 10 % (a control variate: the added error is up to about "
        "0.8 of the full rule's own; theory/matrix.md sec. 3); unused when the rule has "
        "fewer than four times as many points"),
    ENUM("matrix", "scheme", scheme, "richardson", scheme_names, "richardson | euler",
         "ode.method = matrix: the time scheme; euler: Euler-Maruyama steps of matrix.dtau "
         "(error O(dtau)); richardson: each replica also runs with half steps on the same "
         "noise and the two are extrapolated, 2 m(dtau/2) - m(dtau) (error O(dtau^2), three "
         "steps' cost; theory/matrix.md sec. 3)"),

    /* [hierarchy] */
    INT("hierarchy", "order", order, "4", 1, 10, 0, "an integer in 1..10",
        "tied and untied: truncation order M, the longest tracked word "
        "(theory/tied.md, theory/untied.md)"),
    ENUM("hierarchy", "closure", closure, "aligned", closure_names,
         "aligned | cumulant | free | initial | psd | quadrature",
         "tied (untied: theory/untied.md sec. 5): words longer than M get: "
         "aligned = the mixed free cumulants "
         "of S = c S* + X, X free from S*, c the spectral regression "
         "coefficient; cumulant = mixed free cumulants above M set to 0; "
         "free = their value if S and S* were free; initial = their value "
         "at tau = 0; psd (tied only) = the aligned values, then every student word "
         "moved to the nearest values whose moment matrices are positive "
         "semi-definite, as those of real matrices are (theory/tied.md sec. 13); "
         "quadrature (tied only) = every student word the moment of a pair of real "
         "symmetric matrices built from the tracked words (non-commutative Gauss "
         "quadrature, theory/tied.md sec. 14)"),
    ENUM("hierarchy", "start", start, "exact", start_names,
         "exact | seed | file (file: with training.start_file, which sets it when it is not given)",
         "tied and untied: initial moments: exact large-d values of the Gaussian start, "
         "measured from the initial matrices of SGD seed sgd.seed at sgd.d, or measured "
         "on the saved state training.start_file"),
    ENUM("hierarchy", "mean", mean_mode, "stiff", mean_names, "stiff | adiabatic",
         "untied, raw centring: the fast mean integrated with the moments at "
         "the finite d of ode.d (0: --d or sgd.d) (stiff), or on its critical "
         "manifold dR/dm = 0 "
         "after a fast phase with frozen moments (adiabatic limit)"),
    REAL("hierarchy", "tol", tol, "0.05", 0, 1, AIM_CONFIG_ZERO_OK,
         "0 (never stop) or a real number in [0, 1]",
         "tied and untied, M >= 3: the run stops where the truncation error estimate "
         "from orders M-3..M (overlap absolute, risk relative) first exceeds it, where "
         "those orders do not converge in M, or where the order M-1 run stopped or failed "
         "in CVODE (no estimate) (columns overlap_trunc, risk_trunc; theory/matrix.md sec. "
         "6)"),
    ENUM("hierarchy", "beyond", beyond, "matrix", beyond_names, "matrix | stop",
         "tied and untied: where the hierarchy fails (its truncation error estimate "
         "passes hierarchy.tol or its orders do not converge in M, its moments leave "
         "those of real matrices, or CVODE gives up on it): matrix = "
         "the rows from there on are the matrix limit process's (ode.method = matrix, "
         "matrix.d, matrix.replicas; run over the whole grid, exit 0 if it reaches the "
         "end; theory/matrix.md sec. 7); stop = the run ends there (exit 3); recovery "
         "always stops (its weak-recovery times are the hierarchy's)"),
    REAL("hierarchy", "balance", balance, "0.01", 0, 0, AIM_CONFIG_NO_HI,
         "a real number >= 0",
         "untied: c_bal of the balance condition |tA_k(0) - tB_k(0)| >= c_bal "
         "(k = 1..M, tA_k = m((U U^T)^k), tB_k = m((V V^T)^k)); violations are "
         "warned about, not refused"),

    /* [sgd] */
    INT("sgd", "d", d, "200", 8, 20000, 0, "an integer in 8..20000",
        "embedding dimension d of the SGD runs"),
    INT("sgd", "seeds", seeds, "8", 1, 1000, 0, "an integer in 1..1000",
        "independent runs (fresh teacher, init and data each)"),
    {"sgd", "seed", "1", "an unsigned 64-bit integer (0..18446744073709551615)",
     "base seed; run i uses seed + i", aim_config_set_u64, aim_config_get_u64,
     offsetof(aim_config, seed), 0, 0, 0, 0, NULL},
    INT("sgd", "block", block, "64", 1, 1024, 0, "an integer in 1..1024",
        "SGD steps unrolled per block (1 = plain steps; same trajectory)"),
    INT("sgd", "holdout", holdout, "2000", 2, 1000000, 0, "an integer in 2..1000000",
        "held-out samples per seed, drawn once from a stream of their own, on which "
        "the risk is measured (theory/measurement.md)"),

    /* [output] */
    {"output", "dir", "out",
     "a directory path (non-empty, < 512 characters, not starting with '|' or '<', "
     "no ';' after a space)",
     "output directory (created if needed)", aim_config_set_dir, aim_config_get_string,
     offsetof(aim_config, dir), sizeof(((aim_config *)0)->dir), 0, 0, 0, NULL},
    {"output", "name", "aimdyn",
     "non-empty, only letters, digits and . _ - (< 128 characters)",
     "file stem of the results", aim_config_set_name, aim_config_get_string,
     offsetof(aim_config, name), sizeof(((aim_config *)0)->name), 0, 0, 0, NULL},
    REAL("output", "recovery_threshold", recovery_threshold, "0.1", 0, 1, AIM_CONFIG_LO_OPEN,
         "a real number in (0, 1] (|overlap| is a cosine, at most 1)",
         "weak recovery: the first tau at which |teacher overlap| reaches this "
         "(ODE, SGD, recovery, scaling and sweep alike)"),
    REAL("output", "checkpoint", checkpoint, "60", 0, 86400, 0,
         "a real number in 0..86400 (seconds)",
         "sgd and compare: an unfinished seed keeps its state at the first grid point after "
         "this much CPU time since its last checkpoint (0: at every grid point), so that a "
         "rerun continues it from there"),
    {"output", "save_state", "none",
     "none, all, or a comma-separated list of grid points tau",
     "sgd and compare: the grid points at which every seed's matrices are saved, "
     "DIR/NAME-sgd-dD-seedK-tauX.state (docs/tables.md), for training.start_file",
     aim_config_set_save_state, aim_config_get_string, offsetof(aim_config, save_state),
     sizeof(((aim_config *)0)->save_state), 0, 0, 0, NULL},
    ENUM("output", "fold", fold, "none", fold_names, "none | mean | overlap",
         "sgd, compare and ode.method = matrix, for an even output map (sigma(-h) = "
         "sigma(h)): every seed or replica whose final student mean (mean) or teacher "
         "overlap (overlap) is negative is mirrored, S -> -S (the columns odd in S change "
         "sign), before the mean and standard error are taken (theory/matrix.md sec. 3)"),
};

const int aim_config_nkeys = (int)(sizeof aim_config_keys / sizeof aim_config_keys[0]);
_Static_assert(sizeof aim_config_keys / sizeof aim_config_keys[0] <= AIM_CONFIG_MAX_KEYS,
               "raise AIM_CONFIG_MAX_KEYS");

static const char *const sections[] = {"model", "training",  "student", "teacher",
                                       "ode",   "matrix",    "hierarchy", "sgd",
                                       "output"};
#define NSECTIONS ((int)(sizeof sections / sizeof sections[0]))

bool aim_config_known_section(const char *s, size_t len)
{
    for (int i = 0; i < NSECTIONS; i++)
        if (strlen(sections[i]) == len && !strncmp(s, sections[i], len))
            return true;
    return false;
}

/* Appends " model, training, ..." (the sections a file may have). */
void aim_config_append_sections(char *msg, size_t n)
{
    for (int i = 0; i < NSECTIONS; i++)
        aim_config_append(msg, n, "%s %s", i ? "," : "", sections[i]);
}

int aim_config_find_key(const char *section, const char *key)
{
    for (int i = 0; i < aim_config_nkeys; i++)
        if (strcmp(aim_config_keys[i].section, section) == 0 &&
            strcmp(aim_config_keys[i].key, key) == 0)
            return i;
    return -1;
}

int aim_config_key_index(const char *section, const char *key) /* must exist */
{
    int i = aim_config_find_key(section, key);
    if (i < 0)
        abort();
    return i;
}
