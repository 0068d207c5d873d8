/* What the reader (state.c) and the writer (state_write.c) of saved
 * states share: the format number and the names of the header values.
 * Internal to validate/. */
#ifndef AIM_STATE_FORMAT_H
#define AIM_STATE_FORMAT_H

enum { FORMAT = 1 };

static const char *const decomposition_names[] = {"direct", "tied", "untied"};
static const char *const centring_names[] = {"centred", "raw"};

#endif
