/* aim_hierarchy: the moment hierarchy of a factored student, generated
 * for any truncation order M from rules that say how each generator
 * matrix (letter) changes in one SGD step (theory/tied.md).
 *
 * A letter L that the student moves changes, per step of learning rate
 * eta/d, by
 *     Delta L = (eta/d) sum_r c_r P_r G^{t_r} Q_r
 *             + (eta/d)^2 sum_s c_s P_s G^{t_s} Q_s G^{t'_s} R_s
 *             - (eta gamma/d^2) k_L L,
 * P, Q, R words (possibly empty), G = grad_S l and G^1 = G^T. The
 * normalised trace m(w) = Tr(w)/d of a word w then moves on the slow
 * clock tau = n eta/d^2 by, at large d,
 *   first order:  E Tr(G A) = a_S m(S A) + b_S m(S^T A) + a_T m(T A)
 *                             + b_T m(T^T A)      (Gaussian regression),
 *   second order: E Tr(G^t A G^t' B)/d -> K(t,t') m(A) m(B), times eta
 *                 per unit tau (the factor (eta/d)^2 of a step over its
 *                 eta/d^2 of tau); K = K_P when t = t', K_O otherwise
 *                 (token pairing),
 *   weight decay: -gamma k_L m(w) for every letter L of w,
 *   raw centring (mean_terms): E Tr(G A)/d gains lambda m(A), the
 *                 identity part of G,
 * where S and T are the words of the student matrix and the teacher.
 * The hierarchy tracks every word of length 1..M with a moving letter;
 * its right-hand sides need words of length up to M + 1, whose values
 * (a closure) the caller supplies. */
#ifndef AIM_HIERARCHY_H
#define AIM_HIERARCHY_H

#include <stdio.h>

#include "gauss.h"
#include "words.h"

#define AIM_RULE_TERMS 8 /* most first- or second-order terms per letter */

/* c P G^t Q */
typedef struct {
    double coef;
    const char *left;
    int transpose;
    const char *right;
} aim_first_term;

/* c P G^t Q G^t' R */
typedef struct {
    double coef;
    const char *left;
    int transpose1;
    const char *middle;
    int transpose2;
    const char *right;
} aim_second_term;

typedef struct {
    char letter;
    int n_first, n_second;
    aim_first_term first[AIM_RULE_TERMS];
    aim_second_term second[AIM_RULE_TERMS];
    double decay; /* k_L: d L/d tau contains -gamma k_L L */
} aim_letter_rule;

typedef struct {
    aim_alphabet alphabet;
    /* display name of each letter (same order as alphabet.letters), in
     * text and in LaTeX, e.g. "S*" and "S^{*}" */
    const char *text_names[AIM_ALPHABET_MAX];
    const char *latex_names[AIM_ALPHABET_MAX];
    const char *student; /* word of the student matrix S, e.g. "S" or "K" */
    const char *teacher; /* word of the teacher S* */
    /* raw centring: G = G_c + (E_C/sqrt d) I, so every first-order term
     * c P G^t Q also gives lambda c m(Q rest P) (theory/untied.md) */
    int mean_terms;
    int n_rules;
    aim_letter_rule rules[AIM_ALPHABET_MAX];
} aim_dynamics;

/* Scalar kernels, evaluated by the expectation engine at the current
 * order parameters; the noise kernels include the factor eta. */
enum {
    AIM_KERNEL_A_S = 0, /* a_S: E[sum e h(B)] per unit Omega(B, S) */
    AIM_KERNEL_B_S,     /* b_S: per unit Psi(B, S) */
    AIM_KERNEL_A_T,     /* a_T: per unit Omega(B, S*) */
    AIM_KERNEL_B_T,     /* b_T: per unit Psi(B, S*) */
    AIM_KERNEL_NOISE_O, /* eta E[sum e_ab e_a'b' C_aa' C_bb'] */
    AIM_KERNEL_NOISE_P, /* eta E[sum e_ab e_a'b' C_ab' C_ba'] */
    AIM_KERNEL_DECAY,   /* gamma */
    AIM_KERNEL_MEAN,    /* lambda = sqrt(d) E[sum e_ab C_ab]: the identity
                           part of a raw G (untied, raw centring) */
    AIM_KERNEL_COUNT
};

typedef struct aim_hierarchy aim_hierarchy;

/* The most equations aimdyn builds: the untied order-7 hierarchy with a
 * general teacher, the largest of order 7 (every tied order up to 10
 * stays far below: 198 equations at M = 10). Untied order 8 has about
 * five times as many, and time and memory grow faster than the count
 * (BUILD_COST in cli.c gives the measured cost of order 7). */
#define AIM_HIERARCHY_MAX_EQUATIONS 25245
/* From this size on, the commands say before building how large the
 * hierarchy is and what building it costs (untied order 6 has 5041
 * equations, order 5 1047). */
#define AIM_HIERARCHY_LARGE_EQUATIONS 3000

/* Number of equations of the order-M hierarchy, the words of length 1..M
 * with a letter not in fixed (the letters that do not move), counted
 * without building anything (aim_words_classes); -1 when ab is invalid
 * or the letters of fixed that are in ab are not closed under
 * transposition. */
double aim_hierarchy_equations(const aim_alphabet *ab, const char *fixed, int order);

/* Generates the order-M system. NULL with a message in err (size n) when
 * the rules are inconsistent (unknown letter, word too long), the system
 * would have more than AIM_HIERARCHY_MAX_EQUATIONS equations, or memory
 * runs out. */
aim_hierarchy *aim_hierarchy_create(const aim_dynamics *dyn, int order,
                                    char *err, size_t n);
void aim_hierarchy_free(aim_hierarchy *h);

int aim_hierarchy_order(const aim_hierarchy *h);
/* All words of length 0 .. M + 1 (the moments the right-hand sides
 * read); owned by h. */
const aim_wordset *aim_hierarchy_words(const aim_hierarchy *h);
/* Number of tracked words (equations) and the word-set index of
 * tracked word i. */
int aim_hierarchy_size(const aim_hierarchy *h);
int aim_hierarchy_tracked(const aim_hierarchy *h, int i);
/* 1 when the word (word-set index) contains a letter the student moves. */
int aim_hierarchy_moves(const aim_hierarchy *h, int word);
/* Total number of terms over all equations (the cost of one evaluation
 * beyond the kernels). */
int aim_hierarchy_terms(const aim_hierarchy *h);

/* d m(w)/d tau of every tracked word, split by kind (any of the three
 * outputs may be NULL): moments[] over aim_hierarchy_words (lengths up
 * to M + 1, moments[0] = 1), kernel values as in the enum. */
void aim_hierarchy_eval(const aim_hierarchy *h, const double *moments,
                        const double kernels[AIM_KERNEL_COUNT],
                        double *gradient, double *noise, double *decay);

/* The kernels a_S .. gamma from an engine evaluated at the current order
 * parameters (aim_gauss_eval); the noise kernels times eta. The mean
 * kernel lambda is set to 0 (raw centring sets it itself). */
void aim_hierarchy_kernels(const aim_gauss *g, double eta, double gamma,
                           double k[AIM_KERNEL_COUNT]);

/* Number of tracked words of length <= 2 (the order parameters, first in
 * the state). */
int aim_hierarchy_order_parameters(const aim_hierarchy *h);

/* "m(w)" for every tracked word, malloc'ed (free each and the array);
 * NULL when out of memory. */
char **aim_hierarchy_state_names(const aim_hierarchy *h);

/* Prints the generated equations: plain text, or LaTeX (an align*
 * environment) when latex is non-zero. */
void aim_hierarchy_print(const aim_hierarchy *h, FILE *out, int latex);

#endif
