/* aim_outer: S = A A^T of a factor matrix, the one dense product shared
 * by the students' matrices (a tied student W W^T and its teacher, drawn
 * or trained) and the words measured on them (the letters U U^T, V V^T
 * of an untied student). Kept apart from both so that the word
 * measurement (src/hierarchy) does not reach up into the students. */
#ifndef AIM_OUTER_H
#define AIM_OUTER_H

/* S = A A^T (A d x p row-major; S d x d, both triangles). */
void aim_outer(const double *A, int d, int p, double *S);

#endif
