/* aim_tsv: result files. TSV: the line of column names first, then '#'
 * metadata lines (version, command, full configuration, seeds), then the
 * rows, so that numpy.genfromtxt(f, comments='#', names=True,
 * delimiter='\t') and pandas.read_csv(f, sep='\t', comment='#') load
 * one in one line. Written to a temporary file in the target directory and renamed into
 * place on commit, alone or with the other files of its run
 * (aim_atomic), so that an interrupted or failed run never leaves a
 * half-written result behind. */
#ifndef AIM_TSV_H
#define AIM_TSV_H

#include <stdint.h>
#include <stdio.h>

#include "atomic.h"
#include "config.h"

typedef struct aim_tsv aim_tsv;

/* Creates the directory of path if needed and opens a temporary file
 * beside it. Returns NULL and prints the reason to stderr on failure. */
aim_tsv *aim_tsv_open(const char *path);

/* The stream to write into: the '#' lines, the column line, the rows,
 * in the order the writer composes them; the '#' lines written before
 * the column line are held back and go into the file after it. */
FILE *aim_tsv_stream(aim_tsv *tsv);

/* name as a column name that numpy and pandas keep as it is, an
 * identifier [A-Za-z_][A-Za-z0-9_]* with its case kept: every run of
 * other characters becomes one '_', one that ends the name is dropped,
 * a leading digit gets a '_' before it ("m(SST)" -> "m_SST",
 * "m(Kk)_mean" -> "m_Kk_mean"); an identifier stays as it is. Into
 * buf (size n; strlen(name) + 2 always suffices), which it returns. */
const char *aim_tsv_column_name(const char *name, char *buf, size_t n);

/* Standard metadata block: tool version, command, configuration. */
void aim_tsv_metadata(aim_tsv *tsv, const char *command, const aim_config *cfg);

/* The metadata block also makes the table's JSON sidecar (aim_sidecar:
 * NAME.tsv -> NAME.json), written on commit and renamed into place with
 * the table. A file that the run removes once its results are written (a
 * seed's file) has none: call aim_tsv_scratch before aim_tsv_metadata. */
void aim_tsv_scratch(aim_tsv *tsv);

/* Records one CVODE integration's counters in the sidecar
 * (aim_sidecar_add_integration). Returns 0, or -1 when out of memory
 * (said; the commit then fails). */
int aim_tsv_integration(aim_tsv *tsv, const char *what, int n, const char *const names[],
                        const long values[]);

/* A file that a later run reads back to resume (a seed's file): held
 * whole until the commit, then written with a line "# digest:
 * fnv1a64:HEX" after the '#' lines that precede its column line, the
 * FNV-1a digest (digest.h) of every other byte of the file in order, so
 * that an edited or damaged file is told from one aimdyn wrote
 * (aim_tsv_check_digest). */
void aim_tsv_seal(aim_tsv *tsv);

/* Flushes, closes and renames into place with its sidecar, as one set
 * (aim_atomic_set_own), the directory synced; frees tsv. Returns 0 or -1
 * (said; neither file replaced). */
int aim_tsv_commit(aim_tsv *tsv);

/* Flushes and closes tsv and adds its file and its sidecar to set, to be
 * renamed into place with the set's other files (aim_atomic_set_commit);
 * frees tsv. Returns 0 or -1 (said; the files discarded). */
int aim_tsv_add_to(aim_tsv *tsv, aim_atomic_set *set);

/* Closes and removes the temporary file; frees tsv. */
void aim_tsv_abort(aim_tsv *tsv);

/* Creates cfg->dir if needed, checks that it is writable and takes the
 * output lock of cfg->name in it for the rest of the process
 * (aim_atomic_lock: a second run into the same directory and name is
 * refused; files that a killed run left are completed or removed), so
 * that a run can fail before it computes anything. Returns 0, or -1 with
 * the reason on stderr. */
int aim_tsv_prepare_dir(const aim_config *cfg);

/* The same for the files DIR/NAME-suffix-* only (lock NAME-suffix;
 * suffix NULL: NAME, as aim_tsv_prepare_dir), e.g. "sgd-d400": runs at
 * different d may then share a name (`aimdyn sgd`). */
int aim_tsv_prepare_for(const aim_config *cfg, const char *suffix);

/* Builds "dir/name-suffix.ext" into buf (size n). Returns 0 or -1. */
int aim_tsv_path(char *buf, size_t n, const aim_config *cfg,
                 const char *suffix, const char *ext);

/* A result file read back (by agreement, plot, scaling and a sweep's
 * resume), checked as it is read:
 *  - a regular file of at most 256 MiB, lines of at most 1 MiB, at most
 *    32768 columns and 2^25 cells, no NUL byte, no read error, a line
 *    break at the end (aimdyn writes one: a file without it was cut
 *    short);
 *  - one header line of distinct column names, then data rows with one
 *    cell per column; '#' metadata lines before the first row, before
 *    the header (the layout of earlier versions) or after it; no blank
 *    line; the names are kept as aim_tsv_column_name makes them, so that
 *    a file of an earlier version (m(SST)) reads as a new one (m_SST);
 *  - every cell a number ("nan", "inf" allowed), but in the kind's text
 *    columns; the column "seed" an unsigned 64-bit decimal integer;
 *  - the column "tau" finite, >= 0 and increasing down the rows (within
 *    each seed, where there is a "seed" column);
 *  - teacher overlaps (a column "overlap", "overlap_X" or "X_overlap",
 *    not "X_se") in [-1, 1] or NaN; standard errors ("X_se") >= 0 or NaN;
 *  - the kind's columns present.
 * A problem is reported with the file, the line and what is allowed. */
typedef struct {
    int ncols, nrows;
    char **names;   /* identifiers (aim_tsv_column_name of the header) */
    char **header;  /* the names as the file has them (an earlier version's
                       m(SST), now m_SST), e.g. for gnuplot reading it */
    double *data;   /* nrows x ncols; NaN in text columns */
    uint64_t *seed; /* per row, the column "seed"; NULL without one */
    char **text;    /* nrows x ncols, the cells of the text columns
                       (NULL elsewhere); NULL without text columns */
    char **meta;    /* the '#' lines, as written */
    int nmeta;
    int order;      /* the "# tied hierarchy: order M" of an ODE file, else 0 */
} aim_table;

/* What a caller needs of a file. */
typedef struct {
    const char *what;               /* what it should be, for messages: "an
                                       ODE result file NAME-ode.tsv" */
    const char *const *columns;     /* the columns it needs, NULL-terminated
                                       (NULL: none) */
    const char *const *text_columns; /* cells kept as text, NULL-terminated
                                        (NULL: none) */
} aim_table_kind;

/* Reads path as kind (NULL: any result file). Returns 0, or -1 with
 * "aimdyn: FILE:LINE: problem; allowed: ..." on stderr. */
int aim_table_read(const char *path, const aim_table_kind *kind, aim_table *t);
void aim_table_free(aim_table *t);
/* Index of the column, or -1. */
int aim_table_column(const aim_table *t, const char *name);
/* The rest of the first metadata line that starts with prefix (e.g.
 * "# config sgd.d = "), or NULL. */
const char *aim_table_meta(const aim_table *t, const char *prefix);

/* The version of aimdyn that wrote t: the rest of its "# aimdyn VERSION"
 * line (aim_tsv_metadata), or NULL when there is none. */
const char *aim_table_version(const aim_table *t);

/* The version in the "# aimdyn VERSION" line of the file at path, its
 * second line after the column line (its first in a file of an earlier
 * version), into version[0 .. n-1], reading those lines only (a file of
 * another version may differ in the rest). Returns 0; 1 when that line
 * is not "# aimdyn VERSION";
 * or -1 when the file cannot be read (the reason in err[0 .. errlen-1]). */
int aim_tsv_file_version(const char *path, char *version, size_t n, char *err, size_t errlen);

/* Whether the file at path, what (for messages) was written whole by
 * aim_tsv_seal: 0 when its "# digest:" line matches every other byte;
 * 1 when it has no such line; -1 when the digest does not match, the
 * line is malformed or the file cannot be read (as aim_table_read reads
 * it). The reason, naming path, in err[0 .. n-1]. */
int aim_tsv_check_digest(const char *path, const char *what, char *err, size_t n);

/* The configuration t records: the defaults, then every "# config KEY =
 * VALUE" line (aim_tsv_metadata) in order, each through aim_config_set,
 * so that every key is parsed and range-checked by the configuration's
 * own rules; not cross-validated (a file may record only some keys).
 * Returns 0, or -1 with err naming the first line it cannot take ("# config
 * KEY = VALUE: reason; allowed: ..."). */
int aim_table_config(const aim_table *t, aim_config *cfg, aim_config_error *err);

/* Whether t's "# config" lines are every key once, in the order and the
 * form aim_config_write gives the configuration they record: a missing
 * line is an error here, not the key's default. 0, or -1 with the first
 * difference in why[0 .. n-1]. */
int aim_table_config_whole(const aim_table *t, char *why, size_t n);

#endif
