/* aim_orthant: probabilities and moments of a normal vector of up to 4
 * coordinates over orthants, E[W_i W_j 1{W_k > 0 for k in a set}], the
 * Gaussian integrals of the relu and erf output maps' closed forms
 * (theory/direct.md sec. 3.6). One variable: Phi; two: the bivariate
 * normal distribution by Owen's T function; three and four: Plackett's
 * reduction to one-dimensional integrals; moments: Stein's lemma, down to
 * the probabilities of the laws conditioned on coordinates at 0. */
#ifndef AIM_ORTHANT_H
#define AIM_ORTHANT_H

#define AIM_ORTHANT_MAX 4

typedef struct aim_orthant aim_orthant;

/* The Gauss-Legendre nodes the functions below use. NULL when out of
 * memory. */
aim_orthant *aim_orthant_create(void);
void aim_orthant_free(aim_orthant *o);

/* Owen's T function, T(h, a) = (1/2 pi) int_0^a exp(-h^2 (1 + x^2) / 2)
 * / (1 + x^2) dx, for any real h and a. */
double aim_orthant_owen_t(const aim_orthant *o, double h, double a);

/* P(Z_1 < h, Z_2 < k) for standard normals of correlation rho in [-1, 1];
 * h and k may be infinite. */
double aim_orthant_bvn(const aim_orthant *o, double h, double k, double rho);

/* E[W_i W_j 1{W_k > 0 for every k in mask}] for W ~ N(mu, V) of n <= 4
 * coordinates (V row-major, positive semidefinite); i or j = -1 stands
 * for the factor 1 (j = -1: the first moment of W_i; both: the
 * probability). Coordinates of variance below 1e-13 of the largest are
 * constants, and two of the mask with correlation above 1 - 1e-12 are
 * one (the one with the smaller mean over its standard deviation); the
 * law's exact duplicates (h_ab = h_ba of a symmetric matrix) are such. */
double aim_orthant_moment(const aim_orthant *o, int n, const double *mu, const double *V,
                          unsigned mask, int i, int j);

#endif
