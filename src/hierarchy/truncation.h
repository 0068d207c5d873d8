/* aim_truncation: what a moment hierarchy truncated at order M needs
 * beside its equations, shared by every hierarchy model (tied, untied):
 * the start moments of every word of length 0..M + 1, their free
 * cumulants, and the closure that gives the words of length M + 1 from the
 * tracked ones (theory/tied.md sec. 6, theory/untied.md sec. 5). A model
 * states its closure as a plan, one rule per long word; the algebra of
 * the four closures (hierarchy.closure) is here once. */
#ifndef AIM_TRUNCATION_H
#define AIM_TRUNCATION_H

#include <stddef.h>

#include "config.h"
#include "freecum.h"
#include "gauss.h"
#include "gram.h"
#include "hierarchy.h"
#include "quadrature.h"

typedef struct aim_truncation aim_truncation;

/* What every truncated hierarchy model (tied, untied) is built from; each
 * model adds its letter rules (the aim_dynamics it passes in), its start
 * law (through trunc) and its closure plan. All owned by the model. */
typedef struct {
    aim_hierarchy *h;
    const aim_wordset *words; /* owned by h */
    aim_truncation *trunc;    /* start moments, cumulants, closure */
    aim_gauss *gauss;         /* the expectation engine */
    int count;                /* words of length 0..M + 1 */
    int size;                 /* tracked words */
    int n_params;             /* tracked words of length <= 2 */
    double *start;            /* moments at tau = 0 (owned by trunc) */
    double *mom;              /* count: work */
    char **names;             /* size: the tracked words' names */
} aim_truncation_model;

/* Builds dyn's hierarchy at cfg->order with its word set, truncation,
 * engine (rule; symmetric as for aim_gauss_create) and work space into
 * *m. Returns 0, or -1 with err set and *m released. */
int aim_truncation_model_init(aim_truncation_model *m, const aim_dynamics *dyn,
                              const aim_config *cfg, aim_gauss_rule rule, int symmetric,
                              char *err, size_t n);
void aim_truncation_model_release(aim_truncation_model *m);

/* How the cumulant of a word of length M + 1 is closed. */
typedef enum {
    AIM_CLOSE_ZERO = 0,  /* 0: freeness of student and teacher */
    AIM_CLOSE_KEEP,      /* its start value (a word the student does not move) */
    AIM_CLOSE_ALIGNED,   /* aligned closure: c^power times the start cumulant of
                            word `target` (the teacher word it maps to), with c
                            the regression coefficient of student on teacher;
                            0 under the other closures */
    AIM_CLOSE_GEOMETRIC  /* a pure student word: kappa_(M+1) = kappa_M kappa_1 /
                            scale, kappa_M the cumulant of word `target`
                            (aim_truncation_geometric) */
} aim_close_rule;

/* For h's word set (h must outlive it). NULL when out of memory. The plan
 * starts with every long word AIM_CLOSE_ZERO, no short word mixed, and no
 * alignment. */
aim_truncation *aim_truncation_create(const aim_hierarchy *h);
void aim_truncation_free(aim_truncation *t);

int aim_truncation_first_long(const aim_truncation *t); /* first word of length M + 1 */
/* The start moments (count words, word 0 the empty word) and their free
 * cumulants, writable while a model sets its start law. */
double *aim_truncation_start(aim_truncation *t);
double *aim_truncation_start_cumulants(aim_truncation *t);
/* start from start_cumulants (a law given by its free cumulants; the empty
 * word gets 1) */
void aim_truncation_start_from_cumulants(aim_truncation *t);
/* start_cumulants from start (a law given by its moments) */
void aim_truncation_cumulants_from_start(aim_truncation *t);

/* The plan. word >= first_long for a rule; target and power as the rule
 * says (ignored otherwise). */
void aim_truncation_rule(aim_truncation *t, int word, aim_close_rule rule, int target,
                         int power);
/* A short word whose cumulant the free closure sets to 0 (a mixed word of
 * student and teacher). */
void aim_truncation_mixed(aim_truncation *t, int word);
/* The regression coefficient of the aligned closure, c = kappa(num) /
 * kappa(den), when num is a tracked word (else c = 0). */
void aim_truncation_alignment(aim_truncation *t, int num, int den);
/* The geometric rule's kappa_1 (the cumulant of word `one`) and scale. */
void aim_truncation_geometric(aim_truncation *t, int one, double scale);

/* Builds the moment matrices of the psd closure (aim_gram; a model of two
 * letters, student first). Returns 0, or -1 when out of memory. */
int aim_truncation_use_gram(aim_truncation *t);
/* Builds the construction of the quadrature closure (aim_quadrature; two
 * symmetric letters, student first). Returns 0, or -1 when out of memory. */
int aim_truncation_use_quadrature(aim_truncation *t);

/* The state of the tracked words at the start: y[i] = start[tracked(i)]. */
void aim_truncation_initial(const aim_truncation *t, double *y);
/* mom (count words): the start, with the tracked words from y. */
void aim_truncation_fill(const aim_truncation *t, const double *y, double *mom);
/* Closes mom's words of length M + 1 from its shorter ones. Returns 0, or
 * -1 when the quadrature closure cannot build its pair of matrices (its
 * eigensolver fails, as on moments that are not finite): the long words
 * are then the aligned closure's, its prior, and no value of the
 * quadrature closure. */
int aim_truncation_close(aim_truncation *t, aim_closure closure, double *mom);
/* What the models say when it fails. */
#define AIM_TRUNCATION_CLOSE_FAILED                                                          \
    "the quadrature closure found no pair of matrices for these moments (its eigensolver "   \
    "failed)"

#endif
