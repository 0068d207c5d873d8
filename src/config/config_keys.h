/* The configuration's key table (config_keys.c), shared by the parser
 * (config.c), the metadata writer (config_write.c), the check
 * (src/students/config_check.c) and the sidecars. It includes the key's
 * description and setters (config_values.h) and the text helpers of the
 * messages (config_text.h), which its users need with it. Internal to the
 * library: the public interface is config.h. */
#ifndef AIM_CONFIG_KEYS_H
#define AIM_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "config_text.h"
#include "config_values.h"

extern const aim_config_key aim_config_keys[];
extern const int aim_config_nkeys;

/* The index of section.key in aim_config_keys, or -1; key_index: one that
 * must exist (aborts otherwise: a programming error). */
int aim_config_find_key(const char *section, const char *key);
int aim_config_key_index(const char *section, const char *key);
/* A section a file may have (its name s[0..len)); the list of them,
 * appended to msg. */
bool aim_config_known_section(const char *s, size_t len);
void aim_config_append_sections(char *msg, size_t n);

#endif
