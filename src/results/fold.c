/* aim_fold: the parity of the columns and the sign of a run (fold.h). */
#include "fold.h"

int aim_fold_obs_odd(int k)
{
    return k == AIM_OBS_OVERLAP || k == AIM_OBS_OMEGA_ST || k == AIM_OBS_PSI_ST ||
           k == AIM_OBS_TRACE || k == AIM_OBS_MEAN;
}

int aim_fold_word_odd(const char *w)
{
    int student = 0;
    for (; *w; w++)
        student += *w == 'S' || *w == 'K' || *w == 'k';
    return student % 2;
}

int aim_fold_sign(const aim_config *cfg, const double *obs)
{
    if (cfg->fold == AIM_FOLD_NONE)
        return 1;
    const double v = obs[cfg->fold == AIM_FOLD_MEAN ? AIM_OBS_MEAN : AIM_OBS_OVERLAP];
    return v < 0.0 ? -1 : 1;
}

const char *aim_fold_what(const aim_config *cfg)
{
    return cfg->fold == AIM_FOLD_MEAN ? "student mean" : "teacher overlap";
}
