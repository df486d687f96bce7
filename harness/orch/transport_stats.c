/* A transport's counters in the terms both transports share
 * (jct_transport_stats_t, include/jctlab/run.h): summing them, for the
 * run's and the replay's totals and for a backend's running count. */
#include <stddef.h>

#include "jctlab/run.h"

void jct_transport_stats_add(jct_transport_stats_t *sum, const jct_transport_stats_t *x) {
  /* The figures are the uint64_t fields before `counted`. */
  uint64_t *t = (uint64_t *)sum;
  const uint64_t *a = (const uint64_t *)x;
  for (size_t k = 0; k < offsetof(jct_transport_stats_t, counted) / sizeof *t; k++)
    t[k] += a[k];
  sum->counted |= x->counted;
}
