/* aim_digest: a 64-bit FNV-1a content digest, to tell whether two files
 * or buffers hold the same bytes (a damaged checkpoint, a saved state
 * replaced at its path). It guards against accidents, not attacks. */
#ifndef AIM_DIGEST_H
#define AIM_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define AIM_DIGEST_START 0xcbf29ce484222325ull

/* Text of a file's digest: "fnv1a64:" and 16 lower-case hex digits. */
#define AIM_DIGEST_TEXT 25

/* h continued over the n bytes at p (start with AIM_DIGEST_START). */
uint64_t aim_digest_bytes(uint64_t h, const void *p, size_t n);

/* The digest of the file at path as text into out (AIM_DIGEST_TEXT
 * bytes): 0, or -1 with the reason in err. */
int aim_digest_file(const char *path, char out[AIM_DIGEST_TEXT], char *err, size_t n);

/* 1 when text is a digest as aim_digest_file writes it, else 0. */
int aim_digest_is_text(const char *text);

#endif
