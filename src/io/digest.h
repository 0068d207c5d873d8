/* aim_digest: a 64-bit FNV-1a content digest, to tell whether two files
 * or buffers hold the same bytes (a damaged checkpoint, a saved state
 * replaced at its path). It guards against accidents, not attacks. */
#ifndef AIM_DIGEST_H
#define AIM_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define AIM_DIGEST_START 0xcbf29ce484222325ull

/* Text of a file's digest: "fnv1a64:" and 16 lower-case hex digits
 * (aim_digest_text; a reader takes it over the bytes it reads, so that
 * the digest is of the bytes it used, never of a second reading). */
#define AIM_DIGEST_TEXT 25

/* h continued over the n bytes at p (start with AIM_DIGEST_START). */
uint64_t aim_digest_bytes(uint64_t h, const void *p, size_t n);

/* h as text into out (AIM_DIGEST_TEXT bytes). */
void aim_digest_text(uint64_t h, char out[AIM_DIGEST_TEXT]);

/* 1 when text is a digest as aim_digest_text writes it, else 0. */
int aim_digest_is_text(const char *text);

#endif
