/* aimdyn: the public API of libaimdyn, one include for all of it.
 *
 *   #include <aimdyn/aimdyn.h>      cc prog.c $(pkg-config --cflags --libs aimdyn)
 *
 * config.h   aim_config: defaults, INI files, section.key=value overrides
 *            (every key in docs/config.md)
 * config_check.h  aim_config_validate: the configuration checked as a
 *            whole, after every file and override
 * grid.h     the tau grid of the outputs
 * overlaps.h the order parameters and the observable columns (AIM_OBS_*)
 * model.h    the model interface: a student's limit dynamics
 *            (aim_model_create, _initial, _rhs, _observables, ...)
 * ode.h      CVODE on a model; the run's report (status, stop, tau_wr)
 * trajectory.h  configuration -> model -> CVODE -> observables on the
 *            grid (aim_trajectory_run, aim_trajectory_run_full)
 * sgd.h      one online-SGD seed at finite d (aim_sgd_create, _advance,
 *            _overlaps)
 * compare.h  several seeds measured on the grid (aim_compare_run_sgd),
 *            their mean and standard error, the gaps to an ODE run
 *
 * config_types.h, gauss.h, outmap.h, hierarchy.h and words.h are
 * installed because config.h, model.h and compare.h need their types. */
#ifndef AIMDYN_H
#define AIMDYN_H

#include "compare.h"
#include "config.h"
#include "config_check.h"
#include "grid.h"
#include "model.h"
#include "ode.h"
#include "overlaps.h"
#include "sgd.h"
#include "trajectory.h"

#endif
