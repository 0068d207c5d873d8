/* aim_config_validate: the run configuration checked as a whole, after
 * every file and --set has been read (src/config reads them). Kept above
 * src/config, with the students, because a configuration is valid only if
 * its student can start as asked: the informed start's coefficient is
 * solved here (inform.h). */
#ifndef AIM_CONFIG_CHECK_H
#define AIM_CONFIG_CHECK_H

#include "config.h"

/* Cross-key checks (impossible combinations, every key's range again),
 * resolves model.covariance into cov for the current tokens, sets source
 * if empty; call after all overrides. Returns 0 or -1. */
int aim_config_validate(aim_config *cfg, aim_config_error *err);

/* Whether output.save_state asks for the SGD states at grid point
 * `point` (0 .. cfg->points - 1) of a validated cfg. */
int aim_config_saves_state(const aim_config *cfg, int point);

#endif
