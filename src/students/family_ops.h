/* aim_family: the table of one matrix family (see family.h, which looks
 * one up). Kept apart from family.h, which has a .c of its name, so that
 * the family files (family_direct.c, family_tied.c, family_untied.c)
 * include the table without depending on the lookup that lists them. */
#ifndef AIM_FAMILY_OPS_H
#define AIM_FAMILY_OPS_H

#include <stddef.h>

#include "config.h"
#include "planar.h"

/* The factors, links and letters of a tied or untied student and its
 * teacher at the informed start's mixing coefficient c (inform.h),
 * letters in the order of the hierarchy's alphabet (tied: S T; untied:
 * A B K k T and t unless the teacher is tied), for
 * aim_planar_moments_linked. */
typedef struct {
    aim_planar_factor factors[4];
    aim_planar_link links[3];
    aim_planar_letter letters[6];
    int n_factors, n_links;
} aim_inform_planar;

typedef struct aim_family aim_family;

struct aim_family {
    const char *name; /* "direct", "tied", "untied" */
    /* every matrix of the family is symmetric (W W^T; a direct one is
     * symmetric only when its spec says so) */
    int symmetric;
    /* every matrix of the family is positive semi-definite (W W^T): -S is
     * not one of them, its trace is of order d (so no raw index mean of
     * order 1), and as the teacher its moment matrix is one the
     * quadrature closure can complete */
    int psd;
    /* the keys student.symmetric and teacher.symmetric apply: a matrix of
     * the family is drawn symmetric when its spec says so (direct) */
    int symmetric_key;
    /* as a student: the lowest hierarchy.order its moments need (0: any),
     * and the hierarchy.closure values its hierarchy cannot take, as bits
     * 1u << aim_closure */
    int min_order;
    unsigned closures_refused;
    /* its d x p factor matrices: 0 (the matrix is drawn entry by entry,
     * aim_draw_direct), 1 (W), 2 (U, V) */
    int factors;
    /* Exact large-d Omega(S, S), Psi(S, S) and Tr S / d of a matrix drawn
     * as s describes it (independent Gaussian entries or factors;
     * theory/direct.md, "Initial values"), without a raw teacher mean. */
    void (*start_overlaps)(const aim_matrix_spec *s, double *omega, double *psi,
                           double *trace);
    /* The matrix alone in the planar expansion (planar.h): its factors
     * into f[0..], numbered from base in the letters, the letter of the
     * matrix into l[0] and that of its transpose into l[1] (the same for
     * a symmetric family). Returns the number of factors. */
    int (*planar)(const aim_matrix_spec *s, int base, aim_planar_factor *f,
                  aim_planar_letter *l);
    /* A symmetric matrix's free cumulant kappa_n of its spectrum (exact
     * large d; NULL for a family with no symmetric matrices): the
     * teacher of a tied student. */
    double (*free_cumulant)(const aim_matrix_spec *s, int n);
    /* factors > 0: the d x d matrix M from its d x p factors, row-major:
     * F1 (W; U) and F2 (V; NULL for one factor). Shared by the drawn
     * teacher and the matrix limit process's students. */
    void (*form)(const double *F1, const double *F2, int d, int p, double *M);
    /* Informed start of a factored student (NULL: the family has no
     * factors; a direct student's start has a closed form, inform.c): its
     * factors and letters, then the teacher's (teacher->planar), and the
     * links of the shared columns at c. Returns 0, or -1 when the student
     * has no informed start with this teacher (inform_teachers names the
     * ones it has, for the message). */
    int (*inform)(const aim_config *cfg, double c, const aim_family *teacher,
                  aim_inform_planar *out);
    const char *inform_teachers;
    /* Informed start of a factored student (NULL otherwise): the
     * alphabet of the student's moments and the words m(SS), m(S),
     * m(ST), m(TT), m(T) of its teacher overlap (S the student, T the
     * teacher). */
    void (*inform_words)(const aim_config *cfg, aim_alphabet *ab, const char *words[5]);
};

#endif
