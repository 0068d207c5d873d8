/* aim_family: the lookup of the matrix families (see family.h), one
 * entry per decomposition of config.h, in its order. */
#include "family.h"

extern const aim_family aim_direct_family, aim_tied_family, aim_untied_family;

static const aim_family *const families[] = {
    [AIM_DIRECT] = &aim_direct_family,
    [AIM_TIED] = &aim_tied_family,
    [AIM_UNTIED] = &aim_untied_family,
};

const aim_family *aim_family_of(aim_decomposition k)
{
    const unsigned kind = (unsigned)k;
    return kind < sizeof families / sizeof *families ? families[kind] : NULL;
}

void aim_family_start_overlaps(const aim_matrix_spec *s, double *omega, double *psi,
                               double *trace)
{
    aim_family_of(s->decomposition)->start_overlaps(s, omega, psi, trace);
}

int aim_family_symmetric_pair(const aim_config *cfg)
{
    return aim_family_of(cfg->decomposition)->symmetric &&
           aim_family_of(cfg->teacher.decomposition)->symmetric;
}

int aim_family_spec_symmetric(const aim_matrix_spec *s)
{
    const aim_family *f = aim_family_of(s->decomposition);
    return f->symmetric || (f->symmetric_key && s->symmetric);
}
