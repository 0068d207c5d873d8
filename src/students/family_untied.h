/* The untied family's letters (family_untied.c), shared by the untied
 * hierarchy (untied.c) and its model (model_untied.c). */
#ifndef AIM_FAMILY_UNTIED_H
#define AIM_FAMILY_UNTIED_H

#include "config.h"
#include "words.h"

/* 1 when cfg's teacher is symmetric (tied, or direct symmetric): its
 * transpose t is T. */
int aim_untied_teacher_symmetric(const aim_config *cfg);

/* The alphabet of cfg's untied hierarchy: "ABKkT" (symmetric teacher) or
 * "ABKkTt". A word has a student letter when it contains one of "ABKk". */
void aim_untied_alphabet(const aim_config *cfg, aim_alphabet *ab);

#endif
