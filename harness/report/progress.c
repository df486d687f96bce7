/* A progress bar on a terminal (progress.h). */
#include <string.h>
#include <unistd.h>

#include "jctlab/clock.h"
#include "progress.h"

#define WIDTH 30

void jct__progress_init(jct__progress_t *p, FILE *out, const char *what) {
  memset(p, 0, sizeof *p);
  p->out = out;
  p->what = what;
  p->tty = isatty(fileno(out)) == 1;
  p->start_ns = jct_wall_ns();
}

void jct__progress_update(uint32_t done, uint32_t total, void *arg) {
  jct__progress_t *p = arg;
  if (!p->tty || !total) return;
  uint64_t el = jct_wall_ns() - p->start_ns;
  if (el < JCT_PROGRESS_AFTER_NS && !p->drawn) return;
  if (p->total) done += p->offset, total = p->total;
  char bar[WIDTH + 1];
  uint32_t fill = (uint32_t)((uint64_t)done * WIDTH / total);
  for (uint32_t i = 0; i < WIDTH; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = 0;
  double eta = done ? (double)el * 1e-9 * (total - done) / done : 0;
  fprintf(p->out, "\r%s [%s] %u/%u repetitions, %.0f s left  ", p->what, bar, done, total, eta);
  fflush(p->out);
  p->drawn = true;
}

void jct__progress_done(jct__progress_t *p) {
  if (!p->drawn) return;
  fprintf(p->out, "\r%*s\r", WIDTH + 60, "");
  fflush(p->out);
  p->drawn = false;
}
