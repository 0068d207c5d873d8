/* Normal orthant probabilities and moments (src/engine/orthant.c, theory
 * /direct.md sec. 3.6) against references computed otherwise: Owen's T
 * and the bivariate distribution by GSL's adaptive quadrature of their
 * definitions; the 3- and 4-dimensional probabilities by adaptive
 * quadrature over the first coordinate of the lower-dimensional ones;
 * the moments by Stein's identities E[(W - mu) 1] = V grad_mu P and
 * E[(W - mu)(W - mu)^T 1] = V (grad grad_mu P) V + V P, with the
 * derivatives of the probability in the means by Richardson-extrapolated
 * central differences. Each tolerance says where it comes from. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "orthant.h"

static aim_orthant *orth;

/* ---- Owen's T and the bivariate distribution ------------------------- */

static double owen_integrand(double x, void *p)
{
    const double h = *(const double *)p;
    return exp(-0.5 * h * h * (1.0 + x * x)) / (1.0 + x * x) / (2.0 * M_PI);
}

static double adaptive(gsl_function *f, double a, double b, int lower_infinite)
{
    gsl_integration_workspace *w = gsl_integration_workspace_alloc(2000);
    double r, e;
    if (lower_infinite)
        gsl_integration_qagil(f, b, 1e-300, 1e-14, 2000, w, &r, &e);
    else
        gsl_integration_qags(f, a, b, 1e-300, 1e-14, 2000, w, &r, &e);
    gsl_integration_workspace_free(w);
    return r;
}

/* Against QAGS of the definition: the rule is exact to round-off (its
 * nodes converge like 4.6^-2n, orthant.c); 2e-16 is a few units of the
 * last place of values up to 1/4. */
static void test_owen_t(void **state)
{
    (void)state;
    const double hs[] = {0.0, 1e-9, 0.1, 0.5, 1.0, 2.0, 3.5, 6.0, 9.0, -0.3, -4.0};
    const double as[] = {0.0, 1e-7, 0.2, 0.7, 1.0, 1.3, 3.0, 10.0, 1e3, -0.5, -20.0};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        for (size_t j = 0; j < sizeof as / sizeof as[0]; j++) {
            double h = fabs(hs[i]);
            gsl_function f = {owen_integrand, &h};
            const double want = (as[j] < 0 ? -1.0 : 1.0) * adaptive(&f, 0.0, fabs(as[j]), 0);
            const double got = aim_orthant_owen_t(orth, hs[i], as[j]);
            if (!(fabs(got - want) <= 2e-16))
                fail_msg("T(%g, %g) = %.17g, quadrature %.17g", hs[i], as[j], got, want);
        }
}

typedef struct {
    double k, rho;
} bvn_args;

static double bvn_integrand(double x, void *p)
{
    const bvn_args *b = p;
    const double r = sqrt((1.0 - b->rho) * (1.0 + b->rho));
    return exp(-0.5 * x * x) / sqrt(2.0 * M_PI) * gsl_cdf_ugaussian_P((b->k - b->rho * x) / r);
}

/* P(Z1 < h, Z2 < k) = int_-inf^h phi(x) Phi((k - rho x) / r) dx, split
 * 20 widths r / |rho| either side of the step of Phi (x = k / rho), which
 * the adaptive rule misses at rho near +-1 otherwise. */
static double bvn_quadrature(double h, double k, double rho)
{
    bvn_args b = {k, rho};
    gsl_function f = {bvn_integrand, &b};
    double cut[3] = {h, h, h};
    if (rho != 0.0) {
        const double w = 20.0 * sqrt((1.0 - rho) * (1.0 + rho)) / fabs(rho);
        cut[0] = fmin(k / rho - w, h);
        cut[1] = fmin(k / rho + w, h);
    }
    double r = adaptive(&f, 0.0, cut[0], 1);
    for (int i = 0; i < 2; i++)
        if (cut[i] < cut[i + 1])
            r += adaptive(&f, cut[i], cut[i + 1], 0);
    return r;
}

/* Against the quadrature on a grid through zeros, tails and |rho| up to
 * 1 - 1e-6: within 2e-15 (round-off of values up to 1), and the exact
 * limits at rho = +-1 and infinite limits. */
static void test_bvn(void **state)
{
    (void)state;
    const double xs[] = {-7.0, -3.0, -1.0, -0.2, 0.0, 1e-9, 0.3, 1.0, 2.5, 6.0};
    const double rs[] = {-0.999999, -0.99, -0.7, -0.2, 0.0, 0.3, 0.8, 0.95, 0.999, 0.999999};
    for (size_t i = 0; i < 10; i++)
        for (size_t j = 0; j < 10; j++)
            for (size_t l = 0; l < 10; l++) {
                const double got = aim_orthant_bvn(orth, xs[i], xs[j], rs[l]);
                const double want = bvn_quadrature(xs[i], xs[j], rs[l]);
                if (!(fabs(got - want) <= 2e-15))
                    fail_msg("Phi2(%g, %g; %g) = %.17g, quadrature %.17g", xs[i], xs[j],
                             rs[l], got, want);
            }
    assert_true(aim_orthant_bvn(orth, 0.4, -0.1, 1.0) == gsl_cdf_ugaussian_P(-0.1));
    assert_true(fabs(aim_orthant_bvn(orth, 0.4, 0.1, -1.0) - (gsl_cdf_ugaussian_P(0.4) -
                                                             gsl_cdf_ugaussian_Q(0.1))) < 1e-16);
    assert_true(aim_orthant_bvn(orth, 0.4, -INFINITY, 0.3) == 0.0);
    assert_true(aim_orthant_bvn(orth, INFINITY, 0.7, 0.3) == gsl_cdf_ugaussian_P(0.7));
    assert_true(fabs(aim_orthant_bvn(orth, 0.0, 0.0, 0.5) - 1.0 / 3.0) < 1e-16);
}

/* ---- 3 and 4 coordinates -------------------------------------------- */

typedef struct {
    int n;
    double mu[4], V[16];
} law;

/* P(W > 0) = int_0^inf f_0(x) P(W_rest > 0 | W_0 = x) dx, the inner
 * probability one coordinate lower (n - 1 <= 3, itself checked first) */
static double first_coordinate(double x, void *p)
{
    const law *l = p;
    const int n = l->n, m = n - 1;
    double mu[3], V[9];
    for (int a = 1; a < n; a++) {
        mu[a - 1] = l->mu[a] + l->V[a * n] * (x - l->mu[0]) / l->V[0];
        for (int b = 1; b < n; b++)
            V[(a - 1) * m + b - 1] = l->V[a * n + b] - l->V[a * n] * l->V[b * n] / l->V[0];
    }
    const double z = (x - l->mu[0]) / sqrt(l->V[0]);
    return exp(-0.5 * z * z) / sqrt(2.0 * M_PI * l->V[0]) *
           aim_orthant_moment(orth, m, mu, V, (1u << m) - 1, -1, -1);
}

static double probability_by_quadrature(law *l)
{
    gsl_function f = {first_coordinate, l};
    gsl_integration_workspace *w = gsl_integration_workspace_alloc(4000);
    double r, e;
    gsl_integration_qagiu(&f, 0.0, 1e-300, 1e-13, 4000, w, &r, &e);
    gsl_integration_workspace_free(w);
    return r;
}

/* A random law: V = A A^T; kind 1: two coordinates at correlation about
 * 1 - 1e-4, kind 2: three within about 2e-6 of 1, kind 3: centred. */
static void random_law(gsl_rng *rng, int n, int kind, law *l)
{
    double A[16];
    l->n = n;
    for (int a = 0; a < 16; a++)
        A[a] = gsl_ran_gaussian(rng, 1.0);
    for (int b = 0; kind == 1 && b < n; b++)
        A[n + b] = A[b] + 1e-2 * A[n + b];
    for (int b = 0; kind == 2 && b < n; b++) {
        A[n + b] = A[b] + 1e-3 * A[n + b];
        A[2 * n + b] = A[b] + 2e-3 * A[2 * n + b];
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            double s = 0.0;
            for (int c = 0; c < n; c++)
                s += A[a * n + c] * A[b * n + c];
            l->V[a * n + b] = s;
        }
    for (int a = 0; a < n; a++)
        l->mu[a] = kind == 3 ? 0.0 : gsl_ran_gaussian(rng, 1.0) * sqrt(l->V[a * n + a]);
}

/* Plackett's integrals at 32 nodes against the quadrature, 400 random
 * laws: measured at most 2e-11 for generic and centred laws (2e-11 at 32
 * nodes, 4e-13 at 48, 7e-15 at 64 on the worst, a centred law whose
 * path carries correlations up to 0.73) and 3e-7 for three coordinates
 * within 2e-6 of correlation 1 (the integrand's feature at the path's
 * end narrows as the square root of the gap); the tolerances are 1e-10
 * and 1e-6. */
static void test_three_and_four(void **state)
{
    (void)state;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    for (int it = 0; it < 400; it++) {
        const int n = 3 + it % 2, kind = (it / 2) % 4;
        law l;
        random_law(rng, n, kind, &l);
        const double got = aim_orthant_moment(orth, n, l.mu, l.V, (1u << n) - 1, -1, -1);
        const double want = probability_by_quadrature(&l);
        const double tol = kind == 2 ? 1e-6 : 1e-10;
        if (!(fabs(got - want) <= tol))
            fail_msg("n = %d, kind %d: P = %.15g, quadrature %.15g", n, kind, got, want);
    }
    gsl_rng_free(rng);
}

/* ---- moments --------------------------------------------------------- */

static double prob_at(const law *l, unsigned mask, int a, double da, int b, double db)
{
    double mu[4];
    memcpy(mu, l->mu, sizeof mu);
    mu[a] += da;
    mu[b] += db;
    return aim_orthant_moment(orth, l->n, mu, l->V, mask, -1, -1);
}

/* d/dmu_a P and d2/dmu_a dmu_b P by central differences at steps s and
 * s/2, Richardson-extrapolated: error O(s^4) */
static void derivatives(const law *l, unsigned mask, double g[4], double H[16])
{
    const int n = l->n;
    for (int a = 0; a < n; a++) {
        const double s = 2e-2 * sqrt(l->V[a * n + a]);
        double d[2];
        for (int k = 0; k < 2; k++) {
            const double h = s / (1 << k);
            d[k] = (prob_at(l, mask, a, h, a, 0) - prob_at(l, mask, a, -h, a, 0)) / (2 * h);
        }
        g[a] = (4 * d[1] - d[0]) / 3;
        for (int b = 0; b < n; b++) {
            const double t = 2e-2 * sqrt(l->V[b * n + b]);
            for (int k = 0; k < 2; k++) {
                const double h = s / (1 << k), u = t / (1 << k);
                d[k] = (prob_at(l, mask, a, h, b, u) - prob_at(l, mask, a, h, b, -u) -
                        prob_at(l, mask, a, -h, b, u) + prob_at(l, mask, a, -h, b, -u)) /
                       (4 * h * u);
            }
            H[a * n + b] = (4 * d[1] - d[0]) / 3;
        }
    }
}

/* Every first and second moment of random laws of 2 to 4 coordinates
 * over random masks against Stein's identities with the differences
 * above; relative to (sd_i + |mu_i|)(sd_j + |mu_j|), within 2e-7 (the
 * differences' O(s^4) and round-off over s^2: measured up to 5e-8). */
static void test_moments(void **state)
{
    (void)state;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    for (int it = 0; it < 150; it++) {
        const int n = 2 + it % 3;
        law l;
        random_law(rng, n, it % 5 == 0 ? 3 : 0, &l);
        const unsigned mask = 1u + (unsigned)gsl_rng_uniform_int(rng, (1ul << n) - 1);
        const double P = aim_orthant_moment(orth, n, l.mu, l.V, mask, -1, -1);
        double g[4], H[16], Vg[4] = {0};
        derivatives(&l, mask, g, H);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < n; k++)
                Vg[i] += l.V[i * n + k] * g[k];
        for (int i = 0; i < n; i++) {
            const double si = sqrt(l.V[i * n + i]) + fabs(l.mu[i]);
            const double first = aim_orthant_moment(orth, n, l.mu, l.V, mask, i, -1);
            if (!(fabs(first - (l.mu[i] * P + Vg[i])) <= 2e-7 * si))
                fail_msg("n = %d, mask %u: E[W_%d 1] = %.12g, Stein %.12g", n, mask, i, first,
                         l.mu[i] * P + Vg[i]);
            for (int j = 0; j < n; j++) {
                double vhv = 0.0;
                for (int k = 0; k < n; k++)
                    for (int m = 0; m < n; m++)
                        vhv += l.V[i * n + k] * H[k * n + m] * l.V[m * n + j];
                const double want = l.mu[i] * l.mu[j] * P + l.mu[i] * Vg[j] + l.mu[j] * Vg[i] +
                                    vhv + l.V[i * n + j] * P;
                const double got = aim_orthant_moment(orth, n, l.mu, l.V, mask, i, j);
                const double sj = sqrt(l.V[j * n + j]) + fabs(l.mu[j]);
                if (!(fabs(got - want) <= 2e-7 * si * sj))
                    fail_msg("n = %d, mask %u: E[W_%d W_%d 1] = %.12g, Stein %.12g", n, mask,
                             i, j, got, want);
            }
        }
    }
    gsl_rng_free(rng);
}

/* Duplicates and constants: a coordinate repeated (h_ab = h_ba of a
 * symmetric matrix) is one event; a constant coordinate is its sign. */
static void test_duplicates(void **state)
{
    (void)state;
    const double mu3[3] = {0.3, 0.3, -0.2};
    const double V3[9] = {1.0, 1.0, 0.4, 1.0, 1.0, 0.4, 0.4, 0.4, 2.0};
    const double mu2[2] = {0.3, -0.2}, V2[4] = {1.0, 0.4, 0.4, 2.0};
    for (int i = -1; i < 2; i++)
        for (int j = -1; j < 2; j++) {
            const int i3 = i < 0 ? -1 : 2 * i, j3 = j < 0 ? -1 : 2 * j; /* 0 or 2 */
            const double want = aim_orthant_moment(orth, 2, mu2, V2, 3u, i, j);
            assert_true(fabs(aim_orthant_moment(orth, 3, mu3, V3, 7u, i3, j3) - want) < 1e-15);
        }
    const double muc[2] = {0.5, 0.1}, Vc[4] = {0.0, 0.0, 0.0, 1.0};
    assert_true(fabs(aim_orthant_moment(orth, 2, muc, Vc, 3u, 0, 1) -
                     0.5 * aim_orthant_moment(orth, 2, muc, Vc, 2u, 1, -1)) < 1e-16);
    const double mun[2] = {-0.5, 0.1};
    assert_true(aim_orthant_moment(orth, 2, mun, Vc, 3u, -1, -1) == 0.0);
}

static int setup(void **state)
{
    (void)state;
    gsl_set_error_handler_off();
    orth = aim_orthant_create();
    return orth ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    aim_orthant_free(orth);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owen_t),
        cmocka_unit_test(test_bvn),
        cmocka_unit_test(test_three_and_four),
        cmocka_unit_test(test_moments),
        cmocka_unit_test(test_duplicates),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
