/* aim_digest (see digest.h). FNV-1a is written here in a few lines
 * because neither GSL nor the other dependencies offer a checksum (zlib's
 * crc32 would be a new dependency for this alone). */
#include "digest.h"

#include <stdio.h>
#include <string.h>

uint64_t aim_digest_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int aim_digest_is_text(const char *text)
{
    if (strncmp(text, "fnv1a64:", 8) || strlen(text) != AIM_DIGEST_TEXT - 1)
        return 0;
    for (const char *c = text + 8; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return 0;
    return 1;
}

void aim_digest_text(uint64_t h, char out[AIM_DIGEST_TEXT])
{
    snprintf(out, AIM_DIGEST_TEXT, "fnv1a64:%016llx", (unsigned long long)h);
}
