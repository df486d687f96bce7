/* A progress bar on a terminal (internal): for runs longer than a few
 * seconds, one line on stderr redrawn in place, only when stderr is a TTY
 * (never in CI logs or pipes). */
#ifndef JCT_PROGRESS_H
#define JCT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  FILE *out;
  const char *what;
  bool tty, drawn;
  uint64_t start_ns;
  uint32_t offset, total; /* for a sequence of runs: done = offset + this run's */
} jct__progress_t;

#define JCT_PROGRESS_AFTER_NS 2000000000u /* show only after 2 s */

void jct__progress_init(jct__progress_t *p, FILE *out, const char *what);
/* A jct_replay_progress_cb: done of total repetitions so far. */
void jct__progress_update(uint32_t done, uint32_t total, void *arg);
/* Clear the line, if one was drawn. */
void jct__progress_done(jct__progress_t *p);

#endif
