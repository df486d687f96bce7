/* `jctlab run --series TIME`'s time series in its JSON (run.h's
 * jct_series_t): the sample times; the queue toward each rank and, named,
 * the bottleneck's (the rank whose queue was deepest: an incast's
 * receiver); each connection's sending QP's rate. */
#include "commands.h"

static json_t *u64_array(const uint64_t *v, uint32_t n, uint32_t stride) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < n; i++)
    json_array_append_new(a, json_integer((json_int_t)v[(size_t)i * stride]));
  return a;
}

json_t *jct__series_json(const jct_run_result_t *r, const jct_schedule_t *s) {
  const jct_series_t *x = r->series;
  if (!x) return json_null();
  uint32_t neck = 0;
  uint64_t peak = 0;
  for (uint32_t i = 0; i < x->n; i++)
    for (uint32_t k = 0; k < x->nranks; k++)
      if (x->queue_bytes[(size_t)i * x->nranks + k] > peak)
        peak = x->queue_bytes[(size_t)i * x->nranks + k], neck = k;
  json_t *queues = json_array(), *rates = json_array();
  for (uint32_t k = 0; k < x->nranks; k++)
    json_array_append_new(queues, u64_array(x->queue_bytes + k, x->n, x->nranks));
  for (uint32_t c = 0; c < x->nconns; c++)
    json_array_append_new(rates, json_pack("{s:i,s:i,s:i,s:o}", "conn", (int)c, "src",
                                           (int)s->conns[c].src, "dst", (int)s->conns[c].dst, "bps",
                                           u64_array(x->rate_bps + c, x->n, x->nconns)));
  return json_pack("{s:I,s:o,s:i,s:o,s:o,s:o}", "interval_ns", (json_int_t)x->interval_ns, "t_ns",
                   u64_array(x->t_ns, x->n, 1), "bottleneck_rank", (int)neck,
                   "bottleneck_queue_bytes", u64_array(x->queue_bytes + neck, x->n, x->nranks),
                   "queue_bytes", queues, "rates", rates);
}
