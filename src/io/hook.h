/* aim_hook: named events at the moments tests need to reach (a grid
 * point done, a checkpoint half written, a worker started, a figure being
 * drawn), and one action the environment variable AIMDYN_TEST_HOOK ties
 * to one of them: a signal on this process, its process group or its
 * parent, or a pause on a FIFO. Tests reach a moment by the event, never
 * by a delay (docs/testing.md has the grammar and the events). Unset, an
 * event costs one check of a static flag. */
#ifndef AIM_HOOK_H
#define AIM_HOOK_H

/* Reads AIMDYN_TEST_HOOK (once per process). Returns 0 when it is unset
 * or well formed; -1 after a message on stderr naming the variable, the
 * value and the grammar (then, and at every later call). Called at
 * startup; aim_hook_event reads the variable itself when nobody did (a
 * malformed value is then said once and ignored). */
int aim_hook_init(void);

/* The event name happened, with up to two integer keys (NULL: none;
 * key2 only with key1): its action runs when it is the one the variable
 * names, at its Nth matching occurrence in this process (a forked child
 * goes on counting from its parent's count). From one thread of a
 * process (its count is a plain variable). */
void aim_hook_event(const char *name, const char *key1, long value1, const char *key2,
                    long value2);

#endif
