/* aim_cli: configuration loading shared by the commands. */
#include <stdio.h>

#include "cli.h"

const char *const aim_cli_usage_common =
    "  --set section.key=value  override one configuration key (repeatable)\n"
    "  --out DIR                output directory (output.dir, default out)\n"
    "  --name NAME              file stem (output.name, default aimdyn)\n"
    "  -h, --help               this help\n";

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
    return 0;
}
