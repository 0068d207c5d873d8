/* aim_grid: the tau grid shared by the ODE output and SGD measurements. */
#include "grid.h"

#include <math.h>

void aim_grid_fill(const aim_config *cfg, double *tau)
{
    int n = cfg->points;
    double h = cfg->horizon;
    if (n <= 0)
        return;
    tau[0] = 0.0;
    if (n == 1)
        return;

    double start = cfg->grid_start;
    int log_grid = cfg->grid == AIM_GRID_LOG && start > 0.0 && start < h;
    if (!log_grid) {
        /* Linear (also the fallback for an unusable log grid, which
         * aim_config_validate rejects anyway). */
        for (int i = 1; i < n - 1; i++)
            tau[i] = h * (double)i / (double)(n - 1);
    } else {
        /* 0, start, ..., horizon: geometric over the points 1 .. n-1. */
        double span = log(h / start);
        for (int i = 1; i < n - 1; i++)
            tau[i] = start * exp(span * (double)(i - 1) / (double)(n - 2));
        if (n > 2)
            tau[1] = start;
    }
    tau[n - 1] = h; /* exact endpoint */
}
