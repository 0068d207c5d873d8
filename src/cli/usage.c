/* The help texts of the aimdyn commands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "version.h"

static const char *const usage_main =
    "aimdyn " AIM_VERSION " - how fast, and whether at all, an attention layer learns\n"
    "\n"
    "usage: aimdyn COMMAND [CONFIG.ini] [options]\n"
    "\n"
    "commands:\n"
    "  ode      integrate the high-dimensional limit ODE (SUNDIALS CVODE)\n"
    "  sgd      run online SGD at finite d over several seeds\n"
    "  compare  both, plus the agreement table and the figure\n"
    "  hierarchy print the generated moment hierarchy (tied and untied students)\n"
    "  agreement the agreement table of existing ode and sgd result files\n"
    "  plot     draw the figure from existing ode/sgd result files\n"
    "  recovery will it learn, and after how many samples: escape conditions,\n"
    "           weak-recovery time, the finite-d escape and its scaling in d\n"
    "  sweep    predicted weak-recovery times over a grid of configurations\n"
    "           (parallel, resumable) and their heatmap\n"
    "  scaling  weak-recovery samples against d from SGD runs: fitted\n"
    "           exponents, the laws they support, the figure\n"
    "  rerun    make a result file again from its JSON sidecar, bit for bit\n"
    "  keys     print every configuration key with its default and range\n"
    "  help     this text; help COMMAND: that command's options\n"
    "\n"
    "Without CONFIG.ini the built-in default example is used (direct\n"
    "attention, centred, T = 2, sigma = He1 + He2/sqrt 2). Every key can be\n"
    "overridden with --set section.key=value; see `aimdyn keys` and\n"
    "docs/config.md. `aimdyn COMMAND --help` lists the command's options.\n"
    "\n"
    "sgd, compare and sweep show their progress on stderr: on a terminal a\n"
    "block with a line per worker (its seed, the grid points it reached, its\n"
    "steps/s) under the campaign's line with an ETA, redrawn in place; else a\n"
    "plain line at most every 30 s and one at the end. --quiet (any command)\n"
    "leaves stderr to warnings and errors; stdout and the files are the same.\n"
    "\n"
    "Examples:\n"
    "  aimdyn compare                              # the default example\n"
    "  aimdyn ode examples/direct_he2.ini --set training.eta=0.05\n"
    "  aimdyn compare examples/direct_he1he2_T2.ini --d 400 --d 800\n"
    "  aimdyn compare examples/tied_softmax_T4.ini --order 1 --order 2 --order 3\n"
    "  aimdyn hierarchy examples/tied_softmax_T4.ini --order 3 --latex\n"
    "\n"
    "Exit status: 0 done, 1 bad usage or configuration, or another run writing\n"
    "into the same output.dir and output.name (nothing written), 2 run-time\n"
    "failure (the files of an earlier run left as they were) or gnuplot failed\n"
    "(the tables written, no figure), 3 blow-up (recorded), 128 + N ended by\n"
    "signal N (SIGINT 130, SIGTERM 143: nothing temporary left; a run killed\n"
    "with SIGKILL is cleaned up after by the next run of the same name).\n"
    "A run's files replace those of an earlier run together or not at all\n"
    "(README.md, \"Failures and interruptions\").\n";

/* How sgd and compare keep and resume their seeds (aim_seeds). */
static const char seeds_help[] =
    "Each seed is kept as it finishes, in DIR/.NAME-sgd-dD.seeds/seed-K.tsv (with\n"
    "the configuration and the version). An interrupted run (Ctrl-C, kill) is\n"
    "resumed by rerunning the same command: the finished seeds are taken from\n"
    "there (said on stderr), the others computed; a seed file of another aimdyn\n"
    "version is computed again, one of another configuration (output.dir,\n"
    "output.name and output.checkpoint aside) is refused (exit 2: remove the\n"
    "folder or choose another --name). The folder is removed once the run's\n"
    "files are written. An unfinished seed keeps its state in seed-K.ckpt at\n"
    "the first grid point after output.checkpoint CPU seconds (default 60):\n"
    "a rerun continues it from there, the files the same bit for bit.\n"
    "Under mpirun or srun (an aimdyn built with MPI) the ranks share the seeds,\n"
    "rank 0 writes the files, the same bytes (default --jobs 1 per rank; see\n"
    "docs/scaling.md).\n\n";

void aim_cli_usage(FILE *out, const char *cmd)
{
    if (!cmd) {
        fputs(usage_main, out);
        return;
    }
    if (!strcmp(cmd, "ode"))
        fprintf(out,
                "usage: aimdyn ode [CONFIG.ini] [options]\n\n"
                "Integrates the limit ODE on the training grid (training.points\n"
                "points up to training.horizon in tau = n eta / d^2) and writes\n"
                "DIR/NAME-ode.tsv: tau, n, t, risk, teacher overlap and all order\n"
                "parameters. Prints the weak-recovery time (first tau with\n"
                "|overlap| >= output.recovery_threshold, by root finding). A run that\n"
                "stops early (blow-up, or a hierarchy that left the valid moments) keeps\n"
                "its rows, says why in the file's # status line, and exits 3\n"
                "(theory/stops.md).\n\n"
                "options:\n"
                "  --d D                    dimension for the sample count n = tau d^2/eta\n"
                "                           and for the raw-mode mean (default sgd.d;\n"
                "                           ode.d overrides it for the mean)\n"
                "  --generic                quasi-random rule for every output map\n"
                "                           (ode.rule = generic)\n"
                "                           (default: Gauss-Hermite for elementwise maps)\n"
                "  --order M                tied, untied: truncation order (hierarchy.order)\n"
                "Tied and untied students also get one column per tracked moment m(w) = Tr(w)/d.\n"
                "%s%s",
                aim_cli_usage_threads, aim_cli_usage_common);
    else if (!strcmp(cmd, "sgd"))
        fprintf(out,
                "usage: aimdyn sgd [CONFIG.ini] [options]\n\n"
                "Runs online SGD (theory/model.md sec. 5) for sgd.seeds seeds at dimension\n"
                "sgd.d, measuring every observable on the training grid: the order\n"
                "parameters exactly from the matrices, the risk on sgd.holdout held-out\n"
                "samples per seed (risk_gauss: the Gaussian formula on the measured\n"
                "order parameters, for comparison). Writes DIR/NAME-sgd-dD.tsv (mean\n"
                "and standard error per observable) and DIR/NAME-sgd-dD-seeds.tsv\n"
                "(every seed).\n\n"
                "%s"
                "options:\n"
                "  --d D                    dimension (sgd.d, default 200)\n"
                "  --seeds N                number of seeds (sgd.seeds, default 8)\n"
                "  --jobs N                 worker processes for the seeds, 1..64 (default:\n"
                "                           the online cores); each runs one seed at a time\n"
                "                           with one BLAS thread (OPENBLAS_NUM_THREADS=1):\n"
                "                           the workers are the parallelism. The files are\n"
                "                           the same, bit for bit, for every N\n"
                "%s%s",
                seeds_help, aim_cli_usage_threads, aim_cli_usage_common);
    else if (!strcmp(cmd, "compare"))
        fprintf(out,
                "usage: aimdyn compare [CONFIG.ini] [options]\n\n"
                "Runs the ODE and SGD at each dimension, writes their files (as\n"
                "`ode` and `sgd` do), the agreement table DIR/NAME-agreement.tsv\n"
                "(largest gap per observable in absolute terms and in SGD standard\n"
                "errors, weak-recovery times, and a verdict: within_3se, or how the\n"
                "gap fell from the previous d: 1/d, 1/sqrt_d, not_falling; see\n"
                "theory/model.md sec. 9) and the figures\n"
                "DIR/NAME-compare-dD.png/.svg (risk and overlap: ODE over SGD) and their\n"
                "gnuplot scripts DIR/NAME-compare-dD.gp.\n"
                "All these files replace those of an earlier run together, once every d\n"
                "is done: a compare that fails or is interrupted changes nothing. If gnuplot\n"
                "fails, the tables are written, an old figure of the name removed, and the\n"
                "exit status is 2; without gnuplot the same with a warning, status 0.\n\n"
                "%s"
                "options:\n"
                "  --d D                    a dimension (repeatable; default sgd.d)\n"
                "  --seeds N                seeds per dimension (sgd.seeds)\n"
                "  --generic                quasi-random rule for every output map\n"
                "                           (ode.rule = generic)\n"
                "  --order M                tied, untied: a truncation order (repeatable, increasing;\n"
                "                           default hierarchy.order): one ODE per order,\n"
                "                           files NAME-MM-..., every order in the figure\n"
                "                           and in the agreement table\n"
                "  --students LIST          several students of the same teacher, data, seeds\n"
                "                           and learning rate, LIST a comma-separated subset of\n"
                "                           direct,tied,untied (model.decomposition of each):\n"
                "                           the files of each as above under NAME-STUDENT, and\n"
                "                           per d the figure NAME-students-dD (each student's\n"
                "                           ODE of the last order over its SGD). Tied students\n"
                "                           need a symmetric teacher and centred indices, e.g.\n"
                "                           examples/students_he1he2.ini\n"
                "  --jobs N                 worker processes for the seeds of each d, 1..64\n"
                "                           (default: the online cores); each runs one seed\n"
                "                           at a time with one BLAS thread\n"
                "                           (OPENBLAS_NUM_THREADS=1): the workers are the\n"
                "                           parallelism. The files are the same, bit for\n"
                "                           bit, for every N\n"
                "%s%s",
                seeds_help, aim_cli_usage_threads, aim_cli_usage_common);
    else if (!strcmp(cmd, "hierarchy"))
        fprintf(out,
                "usage: aimdyn hierarchy [CONFIG.ini] [--order M] [--latex] [--set ...]\n\n"
                "Prints the moment hierarchy that `ode` integrates for a tied student\n"
                "(S = W W^T, letters S and T = S*) or an untied one (S = U V^T, letters\n"
                "A = U U^T, B = V V^T, K = U V^T, k = V U^T, T and t = S*^T): for every\n"
                "tracked word w (length 1..M, at least one student letter) the\n"
                "generated right-hand side of d m(w)/dtau, m(w) = Tr(w)/d, in terms of\n"
                "the scalar kernels of the expectation engine (lambda: the raw mean),\n"
                "and the number of equations and terms. Words of length M + 1 are\n"
                "closed with hierarchy.closure. Derivation: theory/tied.md,\n"
                "theory/untied.md.\n\n"
                "options:\n"
                "  --order M                truncation order (hierarchy.order, default 4)\n"
                "  --latex                  LaTeX (align*) instead of plain text\n"
                "  --set section.key=value  override one configuration key (repeatable)\n"
                "  --quiet                  standard error only for warnings and errors\n");
    else if (!strcmp(cmd, "plot"))
        fprintf(out,
                "usage: aimdyn plot [--ode FILE [--label L]]... [--sgd FILE]... --figure STEM\n"
                "                   [--log-tau] [--samples D] [--mean] [--seeds]\n"
                "                   [--column NAME]... [--panels LIST] [--format LIST]\n\n"
                "Draws risk and teacher overlap against tau from existing result\n"
                "files (either may be omitted) into STEM.png and STEM.svg, and keeps\n"
                "the gnuplot script as STEM.gp (restyle it, then `gnuplot STEM.gp` in\n"
                "this directory); several --ode files (e.g. one per hierarchy order)\n"
                "share the figure, each with its --label if given, over one SGD\n"
                "summary; with one --sgd per --ode (paired in order, e.g. one per\n"
                "activation) each pair is a case in its own colour; the title gives\n"
                "the model, d and the number of seeds (the files' metadata).\n"
                "--log-tau puts tau on a log axis (for log grids: the fast phase);\n"
                "--samples D puts the samples n / d^2 on a log axis, the files being\n"
                "for d = D (NAME-ode.tsv written with --d D, NAME-sgd-dD.tsv);\n"
                "--seeds adds a thin line per seed from NAME-sgd-dD-seeds.tsv beside\n"
                "each --sgd NAME-sgd-dD.tsv (the same run), under the mean;\n"
                "--column NAME (repeatable) adds a panel of any column (an ODE file's\n"
                "NAME, an SGD summary's NAME_mean and NAME_se; every file must have it);\n"
                "--panels LIST adds panels, comma-separated: order (omega_ss, psi_ss,\n"
                "omega_st, psi_st), moments (each tracked m(w) of a tied or untied\n"
                "student), mean (the student mean, raw centring; also --mean);\n"
                "--format LIST: png, svg, pdf, comma-separated (default png,svg).\n"
                "A file of another kind (a per-seed or ODE file as --sgd, an SGD file\n"
                "as --ode), without data rows, or without a column the figure draws\n"
                "is refused (exit status 1), naming the option and the file.\n"
                "The figure's files replace the old ones together (those of formats\n"
                "not drawn are removed), once gnuplot has drawn all completely; if it\n"
                "fails (exit status 2) the old figure stays.\n"
                "STEM and the files may not start with '|' or '<'.\n"
                "example (the paper's Figure 3 from validate/campaigns/campaign_untied.sh):\n"
                "  aimdyn plot --samples 400 --figure fig3 \\\n"
                "      --ode fig3-he1-M4-d400-ode.tsv --sgd fig3-he1-sgd-d400.tsv --label He1 \\\n"
                "      --ode fig3-he2-M4-d400-ode.tsv --sgd fig3-he2-sgd-d400.tsv --label He2\n"
                "--quiet: standard error only for warnings and errors.\n");
    else if (!strcmp(cmd, "agreement"))
        fprintf(out,
                "usage: aimdyn agreement --sgd FILE --ode FILE [--ode FILE]... [--upto TAU]\n\n"
                "Prints, for each ODE result file, the largest gap of every observable\n"
                "to the SGD mean of an SGD summary file (NAME-sgd-dD.tsv) on their\n"
                "common tau grid: absolute, in SGD standard errors and relative to the\n"
                "ODE's largest value (risk: against the risk measured on held-out\n"
                "samples; risk_gauss, where the file has it: against the Gaussian\n"
                "formula on SGD's order parameters). --upto limits the comparison to\n"
                "tau <= TAU. An ODE that stopped early (blow-up, or a hierarchy that\n"
                "left the valid moments) has an infinite gap where SGD goes on. The\n"
                "verdict: within_3se, above_3se (one d: how the gap falls with d needs\n"
                "a second one, as in compare --d D --d 2D), ode_stopped (theory/model.md\n"
                "sec. 9). Used to compare several hierarchy orders or closures with one\n"
                "set of SGD runs. --quiet: standard error only for warnings and errors.\n");
    else if (!strcmp(cmd, "rerun"))
        fprintf(out,
                "usage: aimdyn rerun [--out DIR] FILE\n\n"
                "Runs again the command that wrote FILE (a result table NAME.tsv, or\n"
                "its JSON sidecar NAME.json), with the command line and the full\n"
                "configuration its sidecar records (configuration files and --set\n"
                "options are not read again), into FILE's folder or DIR. The files it\n"
                "writes are bit for bit those of the first run (cmp); into another\n"
                "folder, the '# config output.dir' line names that folder. A file of\n"
                "another aimdyn version is refused: rerun it with that version. For\n"
                "files of ode, sgd, compare and recovery (docs/config.md,\n"
                "\"The JSON sidecar\"). --quiet: standard error only for warnings\n"
                "and errors.\n");
    else if (!strcmp(cmd, "keys"))
        fprintf(out, "usage: aimdyn keys\n\nPrints every configuration key.\n");
}

void aim_cli_usage_to_stdout(const char *cmd)
{
    aim_cli_usage(stdout, cmd);
}
