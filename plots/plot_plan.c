/* aim_plot_plan: the files of the figure of plot and compare read and
 * checked (each of its kind, with the columns the figure draws, the
 * per-seed file of the same run), then its panels and its title, before
 * a line of its script is written (aim_plot_check_inputs stops there):
 * every refusal names the option, the file and what it should be. */
#define _POSIX_C_SOURCE 200809L

#include "plot_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void aim_plot_plan_free(aim_plot_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    for (int i = 0; p->ode && i < sp->n_ode; i++)
        aim_table_free(&p->ode[i]);
    for (int i = 0; i < sp->n_sgd; i++) {
        if (p->sgd)
            aim_table_free(&p->sgd[i]);
        if (p->seeds)
            aim_table_free(&p->seeds[i]);
        if (p->seeds_path)
            free(p->seeds_path[i]);
        if (p->seeds_final)
            free(p->seeds_final[i]);
        if (p->rows)
            free(p->rows[i]);
    }
    for (int k = 0; k < p->npanels; k++)
        free(p->panels[k].col);
    free(p->ode);
    free(p->sgd);
    free(p->seeds);
    free(p->seeds_path);
    free(p->seeds_final);
    free(p->rows);
    free(p->nseeds);
    free(p->panels);
    free(p->title);
    memset(p, 0, sizeof *p);
}

/* Reads the file of option (e.g. "--sgd") as a result file of the kind
 * wanted (0 ODE, 1 SGD summary, 2 per-seed SGD file) with data rows:
 * 0, or -1 with a message naming the option, the file and what it
 * should be (a file of another kind named as such). */
static int read_kind(const char *path, const char *option, int wanted, aim_table *t)
{
    static const char *const what[] = {
        "an ODE result file NAME-ode.tsv", "an SGD summary file NAME-sgd-dD.tsv",
        "the per-seed file NAME-sgd-dD-seeds.tsv of an SGD summary"};
    char expected[160];
    snprintf(expected, sizeof expected, "%s (plot %s)", what[wanted], option);
    const aim_table_kind any = {expected, NULL, NULL};
    memset(t, 0, sizeof *t);
    if (aim_plot_bad_name(path)) {
        fprintf(stderr, "aimdyn plot: %s: unusable file name (line break)\n", option);
        return -1;
    }
    if (aim_table_read(path, &any, t))
        return -1;
    const int seed = aim_table_column(t, "seed") >= 0;
    const int kind = aim_table_column(t, "risk_mean") >= 0 ? 1
                     : aim_table_column(t, "risk") >= 0  ? (seed ? 2 : 0)
                                                         : -1;
    const char *problem = NULL;
    if (kind != wanted)
        problem = kind < 0 ? "not a result file of ode, sgd or compare (no column 'risk' or "
                             "'risk_mean')"
                  : kind == 0 ? "an ODE result file"
                  : kind == 1 ? "an SGD summary file"
                              : "the per-seed file of an SGD run";
    else if (t->nrows == 0)
        problem = "no data rows";
    if (!problem)
        return 0;
    const char *hint = kind == wanted          ? ""
                       : kind == 0 && wanted ? " (an ODE result file goes to --ode)"
                       : kind == 1 && !wanted ? " (an SGD summary goes to --sgd)"
                       : kind == 2 ? " (the per-seed curves: --sgd NAME-sgd-dD.tsv --seeds)"
                                   : "";
    fprintf(stderr, "aimdyn plot: %s %s: %s; allowed: %s%s\n", option, path, problem,
            what[wanted], hint);
    aim_table_free(t);
    memset(t, 0, sizeof *t);
    return -1;
}

/* The column that file path (option) must have, with a finite value
 * where finite says so (a series of NaN draws nothing): 0, or -1 with a
 * message naming what asked for it. */
static int need_column(const aim_table *t, const char *path, const char *option,
                       const char *col, int finite_needed, const char *asked_by)
{
    const int c = aim_table_column(t, col);
    int finite = c >= 0 && !finite_needed;
    for (int r = 0; c >= 0 && r < t->nrows && !finite; r++)
        finite = isfinite(t->data[(size_t)r * (size_t)t->ncols + (size_t)c]) != 0;
    if (finite)
        return 0;
    fprintf(stderr, "aimdyn plot: %s: %s %s has %s column '%s'; allowed: a column it has (",
            asked_by, option, path, c < 0 ? "no" : "no finite value in its", col);
    for (int k = 0; k < t->ncols; k++)
        fprintf(stderr, "%s%s", k ? " " : "", t->names[k]);
    fputs(")\n", stderr);
    return -1;
}

/* Every file has the x column and the panel's columns (ODE: X; SGD: X_mean,
 * X_se; per-seed: X), each with a finite value. */
static int panel_drawable(const aim_plot_plan *p, const aim_plot_panel *pn)
{
    const aim_plot_spec *sp = p->sp;
    const char *x = sp->samples_d > 0 ? "n" : "tau";
    char mean[320], se[320];
    snprintf(mean, sizeof mean, "%s_mean", pn->col);
    snprintf(se, sizeof se, "%s_se", pn->col);
    for (int i = 0; i < sp->n_ode; i++)
        if (need_column(&p->ode[i], sp->ode[i], "--ode", x, 1, "the x axis") ||
            need_column(&p->ode[i], sp->ode[i], "--ode", pn->col, 1, pn->option))
            return 0;
    for (int i = 0; i < sp->n_sgd; i++)
        if (need_column(&p->sgd[i], sp->sgd[i], "--sgd", x, 1, "the x axis") ||
            need_column(&p->sgd[i], sp->sgd[i], "--sgd", mean, 1, pn->option) ||
            need_column(&p->sgd[i], sp->sgd[i], "--sgd", se, 0, pn->option) ||
            (p->seeds &&
             (need_column(&p->seeds[i], p->seeds_path[i], "--seeds", x, 1, "the x axis") ||
              need_column(&p->seeds[i], p->seeds_path[i], "--seeds", pn->col, 1, pn->option))))
            return 0;
    return 1;
}

static int add_panel(aim_plot_plan *p, const char *col, const char *label, const char *key,
                     const char *option)
{
    aim_plot_panel *grown = realloc(p->panels, (size_t)(p->npanels + 1) * sizeof *grown);
    if (!grown) {
        fprintf(stderr, "aimdyn plot: out of memory (the panel of %s)\n", option);
        return -1;
    }
    p->panels = grown;
    aim_plot_panel *pn = &p->panels[p->npanels];
    if (strlen(col) > AIM_PLOT_MAX_COLUMN || aim_plot_bad_name(col)) {
        fprintf(stderr, "aimdyn plot: %s: unusable column name '%s'%s%d characters\n", option,
                col, aim_plot_bad_name(col) ? " (line break); allowed: one line of at most "
                                   : "; allowed: at most ",
                AIM_PLOT_MAX_COLUMN);
        return -1;
    }
    if (!(pn->col = strdup(col))) {
        fprintf(stderr, "aimdyn plot: out of memory (the panel of %s %s)\n", option, col);
        return -1;
    }
    pn->label = label;
    pn->key = key;
    pn->option = option;
    p->npanels++;
    return panel_drawable(p, pn) ? 0 : -1;
}

/* A tracked moment m(w): its column m_w (the reader gives every file's
 * names, old ones too, in that form; put_column writes the file's own). */
static int is_moment(const char *name)
{
    return !strncmp(name, "m_", 2);
}

/* A panel per moment of the first file (every file must have them). */
static int add_moments(aim_plot_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    const aim_table *t = sp->n_ode ? &p->ode[0] : &p->sgd[0];
    const char *path = sp->n_ode ? sp->ode[0] : sp->sgd[0];
    int found = 0;
    for (int c = 0; c < t->ncols; c++) {
        char col[256];
        const size_t n = strlen(t->names[c]);
        if (!is_moment(t->names[c]) || n >= sizeof col)
            continue;
        if (!sp->n_ode) { /* an SGD summary: X_mean */
            if (n < 5 || strcmp(t->names[c] + n - 5, "_mean"))
                continue;
            snprintf(col, sizeof col, "%.*s", (int)(n - 5), t->names[c]);
        } else
            snprintf(col, sizeof col, "%s", t->names[c]);
        if (add_panel(p, col, NULL, "top left", "--panels moments"))
            return -1;
        found++;
    }
    if (!found)
        fprintf(stderr, "aimdyn plot: --panels moments: %s %s has no moment column m_w; "
                        "allowed: the files of a tied or untied student (its tracked words)\n",
                sp->n_ode ? "--ode" : "--sgd", path);
    return found ? 0 : -1;
}

/* The per-seed file of SGD file i, NAME-seeds.tsv beside NAME.tsv, of the
 * same run (the same configuration lines), and each seed's rows. */
/* NAME-seeds.tsv of sgd = NAME.tsv, malloc'd; NULL when sgd does not end
 * in .tsv or out of memory (said). */
static char *seeds_name(const char *sgd)
{
    const size_t n = strlen(sgd);
    char *name = NULL;
    if (n < 4 || strcmp(sgd + n - 4, ".tsv"))
        fprintf(stderr, "aimdyn plot: --seeds: --sgd %s does not end in .tsv; allowed: an SGD "
                        "summary NAME-sgd-dD.tsv beside its NAME-sgd-dD-seeds.tsv\n", sgd);
    else if (!(name = malloc(n + 8)))
        fprintf(stderr, "aimdyn plot: out of memory (the name of the per-seed file of %s)\n",
                sgd);
    else
        snprintf(name, n + 8, "%.*s-seeds.tsv", (int)(n - 4), sgd);
    return name;
}

static int read_seeds(aim_plot_plan *p, int i)
{
    const char *sgd = p->sp->sgd[i];
    if (!(p->seeds_path[i] = seeds_name(sgd)) ||
        (p->sp->sgd_final && !(p->seeds_final[i] = seeds_name(p->sp->sgd_final[i]))))
        return -1;
    aim_table *t = &p->seeds[i];
    if (read_kind(p->seeds_path[i], "--seeds", 2, t))
        return -1;
    int same = 1, a = 0, b = 0;
    const aim_table *s = &p->sgd[i];
    for (;; a++, b++) {
        while (a < s->nmeta && strncmp(s->meta[a], "# config ", 9))
            a++;
        while (b < t->nmeta && strncmp(t->meta[b], "# config ", 9))
            b++;
        if (a == s->nmeta || b == t->nmeta) {
            same = a == s->nmeta && b == t->nmeta;
            break;
        }
        if (strcmp(s->meta[a], t->meta[b])) {
            same = 0;
            break;
        }
    }
    if (!same) {
        fprintf(stderr, "aimdyn plot: --seeds: %s and --sgd %s record different "
                        "configurations; allowed: the per-seed file of the same run\n",
                p->seeds_path[i], sgd);
        return -1;
    }
    /* the reader checked tau increasing within each seed: a seed's rows
     * are contiguous as sgd writes them */
    if (!(p->rows[i] = malloc((size_t)t->nrows * sizeof *p->rows[i]))) {
        fprintf(stderr, "aimdyn plot: out of memory (the seeds of %s)\n", p->seeds_path[i]);
        return -1;
    }
    for (int r = 0; r < t->nrows; r++)
        if (r == 0 || t->seed[r] != t->seed[r - 1])
            p->rows[i][p->nseeds[i]++] = (aim_plot_seed_rows){r, r};
        else
            p->rows[i][p->nseeds[i] - 1].last = r;
    return 0;
}

/* "direct model: SGD at d = 40 (3 seeds) against the limit ODE", from the
 * files' metadata (each distinct d and seed count once). */
static int make_title(aim_plot_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    const aim_table *first = sp->n_ode ? &p->ode[0] : &p->sgd[0];
    const char *model = aim_table_meta(first, "# config model.decomposition = ");
    if (model)
        fprintf(f, "%s model: ", model);
    for (int i = 0; i < sp->n_sgd; i++) {
        const char *d = aim_table_meta(&p->sgd[i], "# config sgd.d = ");
        const char *seeds = aim_table_meta(&p->sgd[i], "# config sgd.seeds = ");
        int repeated = 0;
        for (int j = 0; j < i && !repeated; j++) {
            const char *dj = aim_table_meta(&p->sgd[j], "# config sgd.d = ");
            const char *sj = aim_table_meta(&p->sgd[j], "# config sgd.seeds = ");
            repeated = (d && dj ? !strcmp(d, dj) : d == dj) &&
                       (seeds && sj ? !strcmp(seeds, sj) : seeds == sj);
        }
        if (repeated)
            continue;
        fputs(i ? ", " : "SGD at ", f);
        fprintf(f, "d = %s (%s seed%s)", d ? d : "?", seeds ? seeds : "?",
                seeds && !strcmp(seeds, "1") ? "" : "s");
    }
    if (sp->n_ode)
        fputs(sp->n_sgd ? " against the limit ODE" : "the limit ODE (d → ∞)", f);
    if (fclose(f)) {
        free(text);
        return -1;
    }
    p->title = text;
    return aim_plot_bad_name(text) ? -1 : 0;
}

int aim_plot_plan_make(aim_plot_plan *p, const aim_plot_spec *sp)
{
    /* the key where the curves are not: Omega rises, Psi rises and falls */
    static const struct {
        const char *col, *label, *key;
    } order[] = {{"omega_ss", "Ω_{SS} = Tr(S S^T) / d", "bottom right"},
                 {"psi_ss", "Ψ_{SS} = Tr(S^2) / d", "top right"},
                 {"omega_st", "Ω_{ST} = Tr(S S^{*T}) / d", "bottom right"},
                 {"psi_st", "Ψ_{ST} = Tr(S S^*) / d", "top right"}};
    memset(p, 0, sizeof *p);
    p->sp = sp;
    if (sp->n_ode == 0 && sp->n_sgd == 0) {
        fprintf(stderr, "aimdyn plot: no ODE or SGD file to plot\n");
        return -1;
    }
    const int seeds = (sp->flags & AIM_PLOT_SEEDS) != 0;
    p->ode = calloc((size_t)sp->n_ode + 1, sizeof *p->ode);
    p->sgd = calloc((size_t)sp->n_sgd + 1, sizeof *p->sgd);
    if (seeds) {
        p->seeds = calloc((size_t)sp->n_sgd + 1, sizeof *p->seeds);
        p->seeds_path = calloc((size_t)sp->n_sgd + 1, sizeof *p->seeds_path);
        p->seeds_final = calloc((size_t)sp->n_sgd + 1, sizeof *p->seeds_final);
        p->rows = calloc((size_t)sp->n_sgd + 1, sizeof *p->rows);
        p->nseeds = calloc((size_t)sp->n_sgd + 1, sizeof *p->nseeds);
    }
    if (!p->ode || !p->sgd || (seeds && (!p->seeds || !p->seeds_path || !p->seeds_final || !p->rows ||
                                       !p->nseeds))) {
        fprintf(stderr, "aimdyn plot: out of memory\n");
        return -1;
    }
    if (seeds && sp->n_sgd == 0) {
        fprintf(stderr, "aimdyn plot: --seeds draws the seeds of an SGD run; allowed: with "
                        "--sgd NAME-sgd-dD.tsv (its NAME-sgd-dD-seeds.tsv beside it)\n");
        return -1;
    }
    for (int i = 0; i < sp->n_ode; i++) {
        if (read_kind(sp->ode[i], "--ode", 0, &p->ode[i]))
            return -1;
        if (sp->labels && aim_plot_bad_name(sp->labels[i])) {
            fprintf(stderr, "aimdyn plot: --label %d contains a line break\n", i + 1);
            return -1;
        }
    }
    for (int i = 0; i < sp->n_sgd; i++)
        if (read_kind(sp->sgd[i], "--sgd", 1, &p->sgd[i]) || (seeds && read_seeds(p, i)))
            return -1;
    if (add_panel(p, "risk", "risk R", sp->n_sgd > 1 ? "center right" : "top right",
                  "the risk panel") ||
        add_panel(p, "overlap", "teacher overlap", sp->n_sgd > 1 ? "top left" : "bottom right",
                  "the overlap panel") ||
        (sp->flags & AIM_PLOT_MEAN &&
         add_panel(p, "mean", "student mean m = Tr S / sqrt d", "bottom right", "--mean")))
        return -1;
    for (int k = 0; sp->flags & AIM_PLOT_ORDER && k < 4; k++)
        if (add_panel(p, order[k].col, order[k].label, order[k].key, "--panels order"))
            return -1;
    if (sp->flags & AIM_PLOT_MOMENTS && add_moments(p))
        return -1;
    for (int k = 0; k < sp->n_columns; k++)
        if (add_panel(p, sp->columns[k], NULL, "top left", "--column"))
            return -1;
    if (make_title(p)) {
        fprintf(stderr, "aimdyn plot: out of memory (or a line break in the metadata)\n");
        return -1;
    }
    return 0;
}

int aim_plot_check_inputs(const aim_plot_spec *sp)
{
    aim_plot_plan p;
    const int rc = aim_plot_plan_make(&p, sp);
    aim_plot_plan_free(&p);
    return rc;
}
