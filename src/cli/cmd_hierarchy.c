/* aimdyn hierarchy: prints the generated moment hierarchy. */
#include <stdio.h>

#include "cli.h"
#include "hierarchy.h"
#include "model.h"

int aim_cmd_hierarchy(int argc, char **argv)
{
    run_options ro;
    int rc = aim_cli_parse_run_options("hierarchy", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    if (!aim_model_ops_of(&ro.cfg)->hierarchy) {
        fprintf(stderr, "aimdyn hierarchy: model.decomposition = direct has no moment "
                        "hierarchy (direct attention closes in Omega, Psi and the "
                        "trace: theory/direct.md); allowed: model.decomposition = tied | "
                        "untied\n");
        return AIM_EXIT_USAGE;
    }
    char err[512];
    aim_model *model = aim_model_create(&ro.cfg, ro.cfg.d, err, sizeof err);
    if (!model) {
        fprintf(stderr, "aimdyn hierarchy: %s\n", err);
        return AIM_EXIT_RUNTIME;
    }
    aim_hierarchy_print(aim_model_equations(model), stdout, ro.latex);
    aim_model_free(model);
    return 0;
}
