/* aim_checkpoint: the file that keeps an unfinished SGD seed's state
 * (DIR/.NAME-sgd-dD.seeds/seed-K.ckpt, written by aim_seeds), replaced
 * atomically. Binary, in this machine's byte order (the state is raw
 * doubles and GSL generator bytes: not meant to move between machines):
 *     "AIMDYNCK", u32 format, u32 byte-order mark,
 *     u64 text length, u64 payload length,
 *     u64 FNV-1a checksum of everything after this 40-byte header,
 *     text: "# aimdyn VERSION" and the run's "# config" lines
 *           (aim_pool_config_lines: all but output.dir, output.name and
 *           output.checkpoint),
 *     payload: what the writer puts there (aim_seeds: the grid point,
 *              the rows measured so far, aim_sgd_save).
 * A checkpoint is read only when it is whole (lengths, checksum), of this
 * aimdyn version and of this configuration. */
#ifndef AIM_CHECKPOINT_H
#define AIM_CHECKPOINT_H

#include <stddef.h>

#include "config.h"

/* Writes the checkpoint at path (replacing the old one as one step).
 * Returns 0, or -1 after a message "aimdyn CMD: ...". */
int aim_checkpoint_write(const char *cmd, const char *path, const aim_config *cfg,
                         const void *payload, size_t len);

/* Reads the checkpoint at path into *payload (malloc'd, *len bytes); a
 * file over max_bytes (more than the run's seed could have written) is
 * refused before it is read. Returns 0; 1 when there is none; 2 when it was written by another
 * aimdyn version or format (said: the seed is computed from its start);
 * -1 when it is not a whole checkpoint of aimdyn or one of another
 * configuration (said, naming the file and the first differing key). */
int aim_checkpoint_read(const char *cmd, const char *path, const aim_config *cfg,
                        size_t max_bytes, void **payload, size_t *len);

#endif
