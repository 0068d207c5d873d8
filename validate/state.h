/* aim_state: an SGD seed's matrices saved at a grid point (aimdyn sgd
 * --save-state, output.save_state) and read back as the start of a new
 * run (training.start_file): the ODE from the order parameters or moments
 * measured on them, SGD continued from them.
 *
 * A state file is text (docs/tables.md, "Saved states"): '#' lines with
 * the aimdyn version, the seed, tau, step and the full configuration of
 * the run that saved it; then the header lines "format", "seed", "tau",
 * "step", "d", "decomposition", "columns", "tokens", "symmetric",
 * "centring" (tab-separated name and value); then each matrix as a line
 * "matrix NAME ROWS COLS" followed by ROWS lines of COLS tab-separated C99
 * hex floats ("%a", read back by strtod to the same double on every
 * machine): the teacher S* ("teacher", d x d), then the student's learned
 * parameters (direct "S", d x d; tied "W", d x p; untied "U" and "V",
 * d x p; a raw mean lives in them); a last line "end". */
#ifndef AIM_STATE_H
#define AIM_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct aim_state aim_state;

/* The learned parameters a student's state holds after the teacher: how
 * many arrays (1 or 2), their names, and whether they are d x p factors
 * (p = the header's columns, >= 1) or d x d (columns 0). Each SGD student
 * describes its own (validate/sgd_internal.h); the reader is handed the
 * lookup (aim_sgd_state_arrays), so that it knows no student itself. */
typedef struct {
    int count;
    const char *names[2];
    int factored;
} aim_state_arrays;

/* The arrays of decomposition k (config.h), NULL for none. */
typedef const aim_state_arrays *(*aim_state_layout)(int decomposition);

/* What a state holds besides its header's configuration: d, the step,
 * the columns p (0 for a direct student), the teacher (d x d) and the
 * learned parameters (count arrays of lengths[k] values, d rows each,
 * named names[k]). */
typedef struct {
    int d, columns;
    long step;
    const double *teacher;
    int count;
    const double *arrays[2];
    size_t lengths[2];
    const char *names[2];
} aim_state_content;

/* Writes content (seed `seed`, at grid point `point` of tau `tau`, run
 * configuration cfg) to path, atomically (src/io/atomic.h: a temporary file
 * renamed into place). Returns 0, or -1 with the reason in err (size n).
 * An SGD seed's: aim_sgd_write_state (sgd.h). */
int aim_state_write(const char *path, const aim_state_content *content,
                    const aim_config *cfg, uint64_t seed, double tau, int point, char *err,
                    size_t n);

/* Reads the state file at path, its parameter arrays those layout gives
 * for its decomposition. NULL with the reason in err (missing, not a
 * state file, cut short, a value that is not a finite number, a matrix of
 * the wrong name or size; the line is named). */
aim_state *aim_state_read(const char *path, aim_state_layout layout, char *err, size_t n);

void aim_state_free(aim_state *st);

/* Whether st can start a run of cfg at dimension d: the same student
 * decomposition, d, tokens, columns p = round(student.rho d), symmetric
 * switch and centring, and the file's digest cfg->start_digest when that
 * is set. Returns 0, or -1 naming the mismatch (the key, the file's value
 * and the run's) in err. */
int aim_state_check(const aim_state *st, const aim_config *cfg, int d, char *err, size_t n);

int aim_state_dim(const aim_state *st);
/* The digest of the file's bytes (src/io/digest.h), as
 * training.start_digest records it. */
const char *aim_state_digest(const aim_state *st);
/* The version of aimdyn that saved it (its "# aimdyn VERSION" line), ""
 * when the file does not say. */
const char *aim_state_version(const aim_state *st);

/* The configuration of the run that saved it: its "# config KEY = VALUE"
 * lines as aim_config_write wrote them, each ending with '\n' ("" when
 * it has none). */
const char *aim_state_config_lines(const aim_state *st);
uint64_t aim_state_seed(const aim_state *st);
double aim_state_tau(const aim_state *st);
long aim_state_step(const aim_state *st);

/* The saved teacher (d x d) and the student's parameter arrays, in the
 * order its aim_state_arrays names them (count returned; lengths in len). */
const double *aim_state_teacher(const aim_state *st);
int aim_state_params(const aim_state *st, const double *arrays[2], size_t len[2]);

/* The path of the state of seed `seed` at tau in cfg's output folder:
 * DIR/NAME-sgd-dD-seedK-tauX.state, X = tau as "%g". Returns 0, or -1
 * when it does not fit in buf (size n). */
int aim_state_path(const aim_config *cfg, int d, uint64_t seed, double tau, char *buf,
                   size_t n);

#endif
