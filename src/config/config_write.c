/* aim_config: writing a configuration (the metadata of every result
 * file, read back bit-identically) and describing the keys (`aimdyn keys`),
 * from the key table of config_keys.c. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config_keys.h"

void aim_config_write(const aim_config *cfg, FILE *out, const char *prefix)
{
    if (!prefix)
        prefix = "";
    for (int i = 0; i < aim_config_nkeys; i++) {
        char text[2200];
        aim_config_keys[i].get(&aim_config_keys[i], cfg, text, sizeof text);
        fprintf(out, "%s%s.%s = %s\n", prefix, aim_config_keys[i].section, aim_config_keys[i].key,
                text);
    }
}

int aim_config_get(const aim_config *cfg, const char *name, char *buf, size_t n,
                   aim_config_error *err)
{
    const char *dot = strchr(name, '.');
    for (int i = 0; dot && i < aim_config_nkeys; i++) {
        const aim_config_key *k = &aim_config_keys[i];
        if (strlen(k->section) != (size_t)(dot - name) ||
            strncmp(k->section, name, (size_t)(dot - name)) != 0 || strcmp(k->key, dot + 1) != 0)
            continue;
        char text[2200];
        k->get(k, cfg, text, sizeof text);
        if (strlen(text) >= n) {
            if (err)
                snprintf(err->message, sizeof err->message,
                         "%.300s: its value has %zu characters, more than the buffer of %zu holds",
                         name, strlen(text), n);
            return -1;
        }
        memcpy(buf, text, strlen(text) + 1);
        return 0;
    }
    if (err)
        snprintf(err->message, sizeof err->message,
                 "%.300s: no such key; the keys are listed by `aimdyn keys` and in docs/config.md",
                 name);
    return -1;
}

void aim_config_describe(FILE *out)
{
    fprintf(out,
            "Configuration keys (INI file: [section] then key = value; "
            "override with --set section.key=value).\n"
            "Full reference: docs/config.md.\n");
    const char *section = "";
    for (int i = 0; i < aim_config_nkeys; i++) {
        if (strcmp(section, aim_config_keys[i].section) != 0) {
            section = aim_config_keys[i].section;
            fprintf(out, "\n[%s]\n", section);
        }
        fprintf(out, "  %s.%s = %s\n", aim_config_keys[i].section, aim_config_keys[i].key,
                aim_config_keys[i].def);
        fprintf(out, "      %s\n", aim_config_keys[i].help);
        fprintf(out, "      allowed: %s\n", aim_config_keys[i].allowed);
    }
}

int aim_config_columns(const aim_matrix_spec *spec, int d)
{
    double p = floor(spec->rho * (double)d + 0.5);
    if (!(p >= 1.0))
        return 1;
    if (p > (double)INT32_MAX)
        return INT32_MAX;
    return (int)p;
}


double aim_config_matrix_step(const aim_config *cfg)
{
    if (cfg->matrix_dtau > 0.0)
        return cfg->matrix_dtau;
    /* richardson: steps controlled by matrix.step_tol, at most the grid
     * interval; euler: fixed steps */
    return cfg->scheme == AIM_SCHEME_RICHARDSON ? cfg->horizon : cfg->horizon / 512.0;
}
