/* aim_checkpoint: a seed's checkpoint file (see checkpoint.h). */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "digest.h"
#include "hook.h"
#include "input.h"
#include "pool.h"
#include "version.h"

enum { FORMAT = 1, HEAD = 40 };
static const char magic[8] = {'A', 'I', 'M', 'D', 'Y', 'N', 'C', 'K'};
static const uint32_t byte_order = 0x01020304u;

/* "# aimdyn VERSION\n" and the configuration lines of cfg (malloc'd). */
static char *text_of(const aim_config *cfg)
{
    char *lines = aim_pool_config_lines(cfg), *text = NULL;
    if (lines) {
        const size_t n = strlen(lines) + strlen(AIM_VERSION) + 16;
        if ((text = malloc(n)))
            snprintf(text, n, "# aimdyn %s\n%s", AIM_VERSION, lines);
    }
    free(lines);
    return text;
}

int aim_checkpoint_write(const char *cmd, const char *path, const aim_config *cfg,
                         const void *payload, size_t len)
{
    char *text = text_of(cfg);
    if (!text) {
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
        return -1;
    }
    const uint64_t tl = strlen(text), pl = len;
    const uint64_t sum =
        aim_digest_bytes(aim_digest_bytes(AIM_DIGEST_START, text, tl), payload, len);
    unsigned char head[HEAD];
    const uint32_t format = FORMAT;
    memcpy(head, magic, 8);
    memcpy(head + 8, &format, 4);
    memcpy(head + 12, &byte_order, 4);
    memcpy(head + 16, &tl, 8);
    memcpy(head + 24, &pl, 8);
    memcpy(head + 32, &sum, 8);
    aim_atomic_file *f = aim_atomic_create(path);
    int rc = -1;
    if (f && aim_atomic_write(f, head, HEAD) == 0 && aim_atomic_write(f, text, tl) == 0 &&
        aim_atomic_write(f, payload, len) == 0) {
        aim_hook_event("checkpoint-write", NULL, 0, NULL, 0); /* written, not renamed */
        rc = aim_atomic_replace(f);
        f = NULL;
    } else if (f) {
        fprintf(stderr, "aimdyn %s: cannot write the checkpoint '%s': %s\n", cmd, path,
                strerror(errno));
    }
    aim_atomic_discard(f);
    free(text);
    return rc;
}

/* The whole file at path (malloc'd, *size bytes): 0; 1 when there is
 * none; -1 when it cannot be read or is refused (said): not a regular
 * file, a symbolic link (aimdyn makes none in a seed folder), or over
 * max_bytes. */
static int slurp(const char *cmd, const char *path, size_t max_bytes, unsigned char **buf,
                 size_t *size)
{
    const aim_input_kind kind = {max_bytes, "a checkpoint that aimdyn wrote for this run's seed",
                                 1};
    char err[1600], *text;
    if (aim_input_read(AT_FDCWD, path, NULL, &kind, &text, size, err, sizeof err) == 0) {
        *buf = (unsigned char *)text;
        return 0;
    }
    *buf = NULL;
    if (errno == ENOENT)
        return 1;
    fprintf(stderr, "aimdyn %s: %s; remove it (the seed is then computed from its start)\n",
            cmd, err);
    return -1;
}

/* A whole checkpoint's text and payload within buf: NULL, or what is
 * wrong with it. */
static const char *whole(const unsigned char *buf, size_t size, uint64_t *tl, uint64_t *pl,
                         int *other_format)
{
    uint32_t format, order;
    uint64_t sum;
    *other_format = 0;
    if (size < HEAD || memcmp(buf, magic, 8))
        return size < HEAD && !memcmp(buf, magic, size < 8 ? size : 8)
                   ? "cut short (no whole header)"
                   : "not a checkpoint of aimdyn (no AIMDYNCK header)";
    memcpy(&format, buf + 8, 4);
    memcpy(&order, buf + 12, 4);
    memcpy(tl, buf + 16, 8);
    memcpy(pl, buf + 24, 8);
    memcpy(&sum, buf + 32, 8);
    if (format != FORMAT) {
        *other_format = 1;
        return "another checkpoint format";
    }
    if (order != byte_order)
        return "written on a machine of another byte order";
    if (*tl > size - HEAD || *pl != size - HEAD - *tl)
        return "its length is not the one its header records (cut short or extended)";
    if (aim_digest_bytes(AIM_DIGEST_START, buf + HEAD, size - HEAD) != sum)
        return "its checksum does not match (damaged)";
    return NULL;
}

int aim_checkpoint_read(const char *cmd, const char *path, const aim_config *cfg,
                        size_t max_bytes, void **payload, size_t *len)
{
    *payload = NULL;
    *len = 0;
    unsigned char *buf;
    size_t size;
    const int got = slurp(cmd, path, max_bytes, &buf, &size);
    if (got)
        return got;
    uint64_t tl, pl;
    int other_format, rc = -1;
    const char *wrong = whole(buf, size, &tl, &pl, &other_format);
    char *here = wrong ? NULL : text_of(cfg);
    const char *there = (const char *)buf + HEAD;
    const size_t vl = strlen("# aimdyn ");
    const char *vend = wrong ? NULL : memchr(there, '\n', tl);
    if (other_format) {
        fprintf(stderr, "aimdyn %s: %s: written by another aimdyn (%s): seed computed from its "
                        "start\n", cmd, path, wrong);
        rc = 2;
    } else if (wrong)
        fprintf(stderr, "aimdyn %s: %s: %s; remove it (its seed is then computed from the "
                        "start)\n", cmd, path, wrong);
    else if (!here)
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
    else if (!vend || strncmp(there, here, vl) || memchr(there, '\0', tl))
        fprintf(stderr, "aimdyn %s: %s: no '# aimdyn VERSION' line; remove it (its seed is "
                        "then computed from the start)\n", cmd, path);
    else if ((size_t)(vend - there) != strlen(AIM_VERSION) + vl ||
             strncmp(there + vl, AIM_VERSION, strlen(AIM_VERSION))) {
        fprintf(stderr, "aimdyn %s: %s was written by aimdyn %.*s, this is aimdyn %s: seed "
                        "computed from its start\n", cmd, path,
                (int)(vend - there - (ptrdiff_t)vl), there + vl, AIM_VERSION);
        rc = 2;
    } else if (tl != strlen(here) || memcmp(there, here, tl)) {
        char *copy = strndup(vend + 1, (size_t)(there + tl - vend - 1));
        char diff[2048] = "";
        if (copy)
            aim_pool_first_difference(copy, strchr(here, '\n') + 1, diff, sizeof diff);
        fprintf(stderr, "aimdyn %s: %s is a checkpoint of a run of another configuration (%s); "
                        "remove it or choose another --name\n", cmd, path,
                diff[0] ? diff : "other keys");
        free(copy);
    } else if ((*payload = malloc(pl ? pl : 1))) {
        memcpy(*payload, buf + HEAD + tl, pl);
        *len = pl;
        rc = 0;
    } else
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
    free(here);
    free(buf);
    return rc;
}
