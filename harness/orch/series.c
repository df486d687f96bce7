/* A run's time series (run.h, jct_series_t): made by the session for the
 * first measured repetition, filled by the backend's sampling, kept by
 * the result. Its own file so that run.c, session.c and the backends can
 * all reach it without calling each other. */
#include <stdlib.h>

#include "jctlab/run.h"

jct_series_t *jct_series_new(uint64_t interval_ns, uint32_t nranks, uint32_t nconns) {
  jct_series_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  *s = (jct_series_t){.interval_ns = interval_ns, .nranks = nranks, .nconns = nconns};
  s->t_ns = calloc(JCT_SERIES_MAX, sizeof *s->t_ns);
  s->queue_bytes = calloc((size_t)JCT_SERIES_MAX * nranks, sizeof *s->queue_bytes);
  s->rate_bps = calloc((size_t)JCT_SERIES_MAX * (nconns ? nconns : 1), sizeof *s->rate_bps);
  if (!s->t_ns || !s->queue_bytes || !s->rate_bps) {
    jct_series_free(s);
    return NULL;
  }
  return s;
}

void jct_series_free(jct_series_t *s) {
  if (!s) return;
  free(s->t_ns);
  free(s->queue_bytes);
  free(s->rate_bps);
  free(s);
}
