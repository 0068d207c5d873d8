/* libFuzzer target: the configuration parser (aim_config_load through
 * inih and aim_lines, aim_config_set, aim_config_validate) on arbitrary
 * bytes. Beyond the sanitizers it checks the round trip the result files
 * rely on: a configuration that loads and validates, written by
 * aim_config_write and loaded again, validates and writes the same text
 * (docs/config.md: the metadata reproduce the run). */
#include "fuzz_memfile.h"

#include <string.h>

#include "config.h"
#include "config_check.h"

static fuzz_memfile input, copy;

/* aim_config_write's text of cfg (malloc'd). */
static char *written(const aim_config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        abort();
    aim_config_write(cfg, m, NULL);
    if (fclose(m))
        abort();
    return text;
}

static void round_trip(const aim_config *cfg)
{
    char *first = written(cfg);
    aim_config again;
    aim_config_error err;
    aim_config_defaults(&again);
    const char *path = fuzz_memfile_put(&copy, (const uint8_t *)first, strlen(first));
    if (aim_config_load(&again, path, &err) || aim_config_validate(&again, &err)) {
        fprintf(stderr, "written configuration does not load: %s\n%s", err.message, first);
        abort();
    }
    char *second = written(&again);
    if (strcmp(first, second)) {
        fprintf(stderr, "written configuration reloads differently:\n%s\n---\n%s", first,
                second);
        abort();
    }
    free(first);
    free(second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    const char *path = fuzz_memfile_put(&input, data, size);
    if (aim_config_load(&cfg, path, &err) == 0 && aim_config_validate(&cfg, &err) == 0)
        round_trip(&cfg);
    /* the first line as a --set override (an argument has no NUL) */
    char set[4200];
    size_t n = 0;
    while (n < size && n < sizeof set - 1 && data[n] != '\n' && data[n] != '\0') {
        set[n] = (char)data[n];
        n++;
    }
    set[n] = '\0';
    aim_config_defaults(&cfg);
    if (aim_config_set(&cfg, set, &err) == 0 && aim_config_validate(&cfg, &err) == 0)
        round_trip(&cfg);
    return 0;
}
