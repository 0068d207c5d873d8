/* aim_tsv: result files. TSV with '#' metadata lines (command, version,
 * full configuration, seeds) and one header line of column names,
 * written to a temporary file in the target directory and renamed into
 * place on commit, alone or with the other files of its run
 * (aim_atomic), so that an interrupted or failed run never leaves a
 * half-written result behind. */
#ifndef AIM_TSV_H
#define AIM_TSV_H

#include <stdio.h>

#include "atomic.h"
#include "config.h"

typedef struct aim_tsv aim_tsv;

/* Creates the directory of path if needed and opens a temporary file
 * beside it. Returns NULL and prints the reason to stderr on failure. */
aim_tsv *aim_tsv_open(const char *path);

/* The stream to write into. */
FILE *aim_tsv_stream(aim_tsv *tsv);

/* Standard metadata block: tool version, command, configuration. */
void aim_tsv_metadata(aim_tsv *tsv, const char *command, const aim_config *cfg);

/* Flushes, closes and renames into place (the directory synced); frees
 * tsv. Returns 0 or -1 (said). */
int aim_tsv_commit(aim_tsv *tsv);

/* Flushes and closes tsv and adds its file to set, to be renamed into
 * place with the set's other files (aim_atomic_set_commit); frees tsv.
 * Returns 0 or -1 (said; the file discarded). */
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

/* A result file read back: the named columns of its data rows ('#'
 * lines skipped; "nan" cells are NaN). */
typedef struct {
    int ncols, nrows;
    char **names;
    double *data; /* nrows x ncols */
    int order;    /* the "# tied hierarchy: order M" of an ODE file, else 0 */
} aim_table;

/* Returns 0, or -1 with the file and line of the problem on stderr. */
int aim_table_read(const char *path, aim_table *t);
void aim_table_free(aim_table *t);
/* Index of the column, or -1. */
int aim_table_column(const aim_table *t, const char *name);

#endif
