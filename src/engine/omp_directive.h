/* OMP(directive): an OpenMP directive in a build with OpenMP, left out in
 * one without (where -Wall would call the pragma unknown). */
#ifndef AIM_OMP_DIRECTIVE_H
#define AIM_OMP_DIRECTIVE_H

#ifdef _OPENMP
#define OMP(directive) _Pragma(#directive)
#else
#define OMP(directive)
#endif

#endif
