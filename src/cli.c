/* aim_cli: configuration loading shared by the commands. */
#include <stdio.h>

#include "cli.h"
#include "compare.h"
#include "hierarchy.h"

const char *const aim_cli_usage_common =
    "  --set section.key=value  override one configuration key (repeatable)\n"
    "  --out DIR                output directory (output.dir, default out)\n"
    "  --name NAME              file stem (output.name, default aimdyn)\n"
    "  -h, --help               this help\n";

/* A hierarchy too large to build is refused before anything runs, from
 * its size counted without building it. T and t are the teacher's
 * letters in both alphabets (tied.c, untied.c). */
static int hierarchy_fits(const char *cmd, const aim_config *cfg)
{
    if (cfg->decomposition == AIM_DIRECT)
        return 0;
    aim_alphabet ab;
    aim_compare_alphabet(cfg, &ab);
    const double equations = aim_hierarchy_equations(&ab, "Tt", cfg->order);
    if (equations <= AIM_HIERARCHY_MAX_EQUATIONS)
        return 0;
    int fits = cfg->order;
    while (fits > 1 && aim_hierarchy_equations(&ab, "Tt", fits) > AIM_HIERARCHY_MAX_EQUATIONS)
        fits--;
    fprintf(stderr, "aimdyn %s: hierarchy.order = %d: the %s hierarchy of this order has %.0f "
                    "equations; allowed: at most %d equations, hierarchy.order <= %d for this "
                    "student and teacher (the size grows about 5-fold per order, the time "
                    "and memory to build it faster: see docs/config.md)\n",
            cmd, cfg->order, cfg->decomposition == AIM_TIED ? "tied" : "untied", equations,
            AIM_HIERARCHY_MAX_EQUATIONS, fits);
    return -1;
}

int aim_cli_load_config(const char *cmd, const char *path, const char *const *sets,
                        int nsets, aim_config *cfg)
{
    aim_config_error err;
    aim_config_defaults(cfg);
    int rc = aim_config_load(cfg, path, &err);
    for (int i = 0; rc == 0 && i < nsets; i++)
        rc = aim_config_set(cfg, sets[i], &err);
    if (rc == 0)
        rc = aim_config_validate(cfg, &err);
    if (rc) {
        fprintf(stderr, "aimdyn %s: %s\n", cmd, err.message);
        return -1;
    }
    return hierarchy_fits(cmd, cfg);
}
