/* A transport's counters in the terms both transports share
 * (jct_transport_stats_t, include/jctlab/run.h): summing them, for the
 * run's and the replay's totals and for a backend's running count. */
#include <stddef.h>
#include <string.h>

#include "jctlab/run.h"
#include "backend.h"

void jct_transport_stats_add(jct_transport_stats_t *sum, const jct_transport_stats_t *x) {
  /* The figures are the uint64_t fields before `counted`. */
  uint64_t *t = (uint64_t *)sum;
  const uint64_t *a = (const uint64_t *)x;
  for (size_t k = 0; k < offsetof(jct_transport_stats_t, counted) / sizeof *t; k++)
    t[k] += a[k];
  sum->counted |= x->counted;
}

/* rxe's counters in the transports' terms (backend.h). */
void jct__verbs_tstats(const jct_dev_counters_t *d, jct_transport_stats_t *t) {
  memset(t, 0, sizeof *t);
  t->packets = jct_dev_counters_get(d, "sent_pkts");
  t->rx_packets = jct_dev_counters_get(d, "rcvd_pkts");
  t->naks = jct_dev_counters_get(d, "rcvd_seq_err");
  t->out_of_seq_packets = jct_dev_counters_get(d, "out_of_seq_request");
  t->dup_packets = jct_dev_counters_get(d, "duplicate_request");
  t->go_back_n = jct_dev_counters_get(d, "completer_retry_err");
  t->timeouts = t->go_back_n > t->naks ? t->go_back_n - t->naks : 0;
  t->counted = JCT__VERBS_COUNTED;
}

