/* aim_seedfile: a kept seed file (aim_seeds' DIR/.NAME-sgd-dD.seeds/seed-K.tsv,
 * aim_recovery_seeds' DIR/.NAME-recovery-dD.seeds/seed-K.tsv) read back
 * by the run that wrote it or by a rerun, as trustworthy as a
 * checkpoint (checkpoint.h), and handled as one is:
 *  - one of another aimdyn version is computed again (said);
 *  - one that is not whole (its "# digest:" line, aim_tsv_seal, missing
 *    or not matching: cut short, edited or damaged) or whose "# config"
 *    lines are not the full list this aimdyn writes (a missing key is
 *    not taken as its default) is refused: remove it, and its seed is
 *    then computed from its start;
 *  - one of another configuration is refused: remove the folder or
 *    choose another --name. */
#ifndef AIM_SEEDFILE_H
#define AIM_SEEDFILE_H

#include "config.h"
#include "tsv.h"

/* The seed file at path, of kind, kept by a run of cfg in the folder
 * dir: as aim_pool_read_kept (1: none, or of another version, said; -1:
 * refused, said "aimdyn CMD: ..."; 0: its table in *t), refused also
 * when it is not whole as above. */
int aim_seedfile_read(const char *cmd, const char *path, const aim_table_kind *kind,
                      const aim_config *cfg, const char *dir, aim_table *t);

#endif
