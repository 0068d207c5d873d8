/* risk_gradient: how the risk and the teacher overlap of a tied student
 * depend on its order parameters (theory/tied.md sec. 15). At each given
 * state (trace m(S), m(SS), m(ST); Omega = Psi for the symmetric S and S*,
 * the teacher's values the large-d ones of the configuration's teacher,
 * centred indices) it prints the risk (the expectation engine), the
 * overlap and their central differences in each of the three (step 1e-4:
 * the engine's rule is fixed, so the risk is a smooth function of the
 * state and the difference's error is O(step^2)).
 * Usage: risk_gradient CONFIG.ini TRACE M_SS M_ST [TRACE M_SS M_ST ...] */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "config_check.h"
#include "family.h"
#include "gauss.h"
#include "overlaps.h"

#define STEP 1e-4

static aim_overlaps state(const double x[3], const double teacher[2])
{
    aim_overlaps q = {0};
    q.trace[0] = x[0];
    q.omega[0][0] = q.psi[0][0] = x[1];
    q.omega[0][1] = q.omega[1][0] = q.psi[0][1] = q.psi[1][0] = x[2];
    q.omega[1][1] = q.psi[1][1] = teacher[0];
    q.trace[1] = teacher[1];
    return q;
}

static int risk(aim_gauss *g, const double x[3], const double teacher[2], double *r)
{
    aim_overlaps q = state(x, teacher);
    if (aim_gauss_risk_at(g, &q, r)) {
        fprintf(stderr, "risk_gradient: state (%g, %g, %g): %s\n", x[0], x[1], x[2],
                aim_gauss_error(g));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (argc - 2) % 3) {
        fprintf(stderr, "usage: risk_gradient CONFIG.ini TRACE M_SS M_ST [TRACE M_SS M_ST ...]\n");
        return 1;
    }
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    if (aim_config_load(&cfg, argv[1], &err) || aim_config_validate(&cfg, &err)) {
        fprintf(stderr, "risk_gradient: %s\n", err.message);
        return 1;
    }
    if (cfg.decomposition != AIM_TIED || cfg.centring != AIM_CENTRED) {
        fprintf(stderr, "risk_gradient: %s: needs model.decomposition = tied, centred indices\n",
                argv[1]);
        return 1;
    }
    double teacher[2], psi;
    aim_family_start_overlaps(&cfg.teacher, &teacher[0], &psi, &teacher[1]);
    aim_gauss *g = aim_gauss_create(&cfg, AIM_RULE_AUTO, aim_family_symmetric_pair(&cfg));
    if (!g) {
        fprintf(stderr, "risk_gradient: out of memory\n");
        return 1;
    }
    static const char *const names[3] = {"trace", "m_SS", "m_ST"};
    int status = 0;
    printf("trace\tm_SS\tm_ST\trisk\toverlap\tvariable\tdrisk\tdrisk_rel\tdoverlap\n");
    for (int a = 2; a + 2 < argc && !status; a += 3) {
        double x[3];
        for (int i = 0; i < 3; i++) {
            char *end;
            x[i] = strtod(argv[a + i], &end);
            if (*end || end == argv[a + i]) {
                fprintf(stderr, "risk_gradient: %s: not a number\n", argv[a + i]);
                status = 1;
            }
        }
        double r0;
        if (status || risk(g, x, teacher, &r0)) {
            status = 1;
            break;
        }
        aim_overlaps q0 = state(x, teacher);
        const double ov0 = aim_overlaps_teacher_overlap(&q0);
        for (int i = 0; i < 3; i++) {
            double up[3] = {x[0], x[1], x[2]}, down[3] = {x[0], x[1], x[2]}, ru, rd;
            up[i] += STEP;
            down[i] -= STEP;
            if (risk(g, up, teacher, &ru) || risk(g, down, teacher, &rd)) {
                status = 1;
                break;
            }
            aim_overlaps qu = state(up, teacher), qd = state(down, teacher);
            const double dr = (ru - rd) / (2 * STEP);
            printf("%.10g\t%.10g\t%.10g\t%.6g\t%.6g\t%s\t%.5g\t%.5g\t%.5g\n", x[0], x[1], x[2], r0,
                   ov0, names[i], dr, dr / r0,
                   (aim_overlaps_teacher_overlap(&qu) - aim_overlaps_teacher_overlap(&qd)) /
                       (2 * STEP));
        }
    }
    aim_gauss_free(g);
    return status;
}
