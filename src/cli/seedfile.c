/* aim_seedfile: a kept seed file read back (see seedfile.h). */
#include "seedfile.h"

#include <stdio.h>
#include <unistd.h>

#include "pool.h"

/* The seed file at path of this version: 0 when it is whole, -1 (said)
 * when its digest or its "# config" lines say it is not. */
static int check_whole(const char *cmd, const char *path, const aim_table_kind *kind)
{
    char why[1800];
    aim_table t;
    if (aim_tsv_check_digest(path, kind->what, why, sizeof why)) {
        fprintf(stderr, "aimdyn %s: %s; refused: remove it (its seed is then computed from "
                        "its start)\n", cmd, why);
        return -1;
    }
    if (aim_table_read(path, kind, &t))
        return -1;
    const int whole = aim_table_config_whole(&t, why, sizeof why);
    aim_table_free(&t);
    if (whole)
        fprintf(stderr, "aimdyn %s: %s: its '# config' lines are not the whole configuration "
                        "(%s); refused: remove it (its seed is then computed from its start)\n",
                cmd, path, why);
    return whole;
}

int aim_seedfile_read(const char *cmd, const char *path, const aim_table_kind *kind,
                      const aim_config *cfg, const char *dir, aim_table *t)
{
    char version[128];
    if (access(path, F_OK) != 0)
        return 1;
    const int v = aim_pool_check_version(cmd, path, kind->what, version, sizeof version);
    if (v < 0 || (v == 0 && check_whole(cmd, path, kind)))
        return -1;
    return aim_pool_read_kept(cmd, path, kind, cfg, dir, "seed", t);
}
