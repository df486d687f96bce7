/* The per-QP figures as JSON (result.h): one entry per connection of the
 * schedule, every key present, null where there is no figure. */
#include <math.h>

#include "result.h"

static json_t *u64_or_null(bool has, uint64_t v) {
  return has ? json_integer((json_int_t)v) : json_null();
}

/* One side's figures into o (include/jctlab/run.h says what each is). */
static void side(json_t *o, const jct_qp_figures_t *q) {
  bool ran = q->reps > 0, timed = q->messages > 0 && q->completion_reps > 0;
  json_object_set_new(o, "reps", json_integer(q->reps));
  json_object_set_new(o, "completion_reps", json_integer(q->completion_reps));
  json_object_set_new(o, "bw_bps", ran && isfinite(q->bw_bps) ? json_real(q->bw_bps) : json_null());
  json_object_set_new(o, "completion_p50_ns", u64_or_null(timed, q->completion_p50_ns));
  json_object_set_new(o, "completion_p99_ns", u64_or_null(timed, q->completion_p99_ns));
  json_object_set_new(o, "completion_max_ns", u64_or_null(timed, q->completion_max_ns));
  json_object_set_new(o, "retransmitted_packets",
                      u64_or_null(ran && q->retx_counted, q->retx_packets));
  json_object_set_new(o, "rate_cuts", u64_or_null(ran && q->retx_counted, q->rate_cuts));
  json_object_set_new(o, "time_below_line_rate_ns",
                      u64_or_null(ran && q->retx_counted, q->below_line_rate_ns));
}

json_t *jct__qps_json(const jct_schedule_t *s, const jct_qp_figures_t *base,
                      const jct_qp_figures_t *fault) {
  json_t *a = json_array();
  for (uint32_t c = 0; a && c < s->nconns; c++) {
    const jct_conn_t *k = &s->conns[c];
    json_t *e =
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "conn", (json_int_t)c, "src", (json_int_t)k->src,
                  "dst", (json_int_t)k->dst, "channel", (json_int_t)k->channel, "bytes",
                  (json_int_t)fault[c].bytes, "messages", (json_int_t)fault[c].messages);
    if (!e) break;
    if (base) {
      json_t *b = json_object(), *f = json_object();
      if (b) side(b, &base[c]);
      if (f) side(f, &fault[c]);
      json_object_set_new(e, "baseline", b);
      json_object_set_new(e, "faulted", f);
    } else {
      side(e, &fault[c]);
    }
    json_array_append_new(a, e);
  }
  return a;
}
