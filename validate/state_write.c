/* aim_state_write: a state's matrices to a state file (state.h); an SGD
 * seed's are gathered by aim_sgd_write_state (sgd.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "state.h"
#include "state_format.h"
#include "version.h"

static int write_matrix(FILE *f, const char *name, const double *a, int rows, int cols)
{
    fprintf(f, "matrix\t%s\t%d\t%d\n", name, rows, cols);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            fprintf(f, "%a%c", a[(size_t)i * cols + j], j + 1 < cols ? '\t' : '\n');
    return ferror(f) ? -1 : 0;
}

int aim_state_write(const char *path, const aim_state_content *content,
                    const aim_config *cfg, uint64_t seed, double tau, int point, char *err,
                    size_t n)
{
    const int d = content->d;
    char *text = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&text, &size);
    if (!m) {
        snprintf(err, n, "cannot write the state '%s': out of memory", path);
        return -1;
    }
    fprintf(m, "# aimdyn saved state, format %d\n# aimdyn %s\n", FORMAT, AIM_VERSION);
    fprintf(m, "# the SGD matrices of seed %llu at tau = %.17g (step %ld, grid point %d of "
               "%d) at d = %d; values as C99 hex floats (%%a), read back exactly\n",
            (unsigned long long)seed, tau, content->step, point, cfg->points, d);
    aim_config_write(cfg, m, "# config ");
    fprintf(m, "format\t%d\nseed\t%llu\ntau\t%.17g\nstep\t%ld\nd\t%d\ndecomposition\t%s\n"
               "columns\t%d\ntokens\t%d\nsymmetric\t%d\ncentring\t%s\n",
            FORMAT, (unsigned long long)seed, tau, content->step, d,
            decomposition_names[cfg->decomposition], content->columns, cfg->tokens,
            cfg->student.symmetric, centring_names[cfg->centring]);
    int rc = write_matrix(m, "teacher", content->teacher, d, d);
    for (int k = 0; rc == 0 && k < content->count; k++)
        rc = write_matrix(m, content->names[k], content->arrays[k], d,
                          (int)(content->lengths[k] / (size_t)d));
    fprintf(m, "end\n");
    if (fclose(m) != 0 || rc != 0) {
        snprintf(err, n, "cannot write the state '%s': out of memory", path);
        free(text);
        return -1;
    }
    aim_atomic_file *f = aim_atomic_create(path);
    if (!f)
        snprintf(err, n, "cannot create the state '%s' (reason above)", path);
    else if (aim_atomic_write(f, text, size) != 0) {
        snprintf(err, n, "cannot write the state '%s': %s", path, strerror(errno));
        aim_atomic_discard(f);
        f = NULL;
    } else if (aim_atomic_replace(f) != 0)
        snprintf(err, n, "cannot replace the state '%s' (reason above)", path);
    else
        rc = 1;
    free(text);
    return rc == 1 ? 0 : -1;
}

