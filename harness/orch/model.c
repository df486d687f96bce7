/* The α-β model (Hockney) a run's JCT is compared with, for the emulated
 * link (include/jctlab/run.h says what α and B are, and the formulas). It
 * reads only the options: the session bounds each repetition by it, the
 * run and the replay report it. */
#include <string.h>

#include "jctlab/run.h"
#include "jctlab/uroce.h"

static bool is(const jct_schedule_t *s, const char *name) {
  return strcmp(s->algorithm, name) == 0;
}

/* A broadcast's pipeline slot: the first chunk of every channel, sent at
 * once by the root (the ops of step 0). */
static double broadcast_slot_bytes(const jct_schedule_t *s) {
  double b = 0;
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].step == 0) b += (double)s->ops[i].bytes;
  return b;
}

void jct_run_model(const jct_run_opts_t *o, jct_run_result_t *r) {
  const jct_schedule_t *sch = o->schedule;
  uint32_t pmtu = o->path_mtu_bytes ? o->path_mtu_bytes : 4096;
  double wire_bytes = (double)jct_uroce_full_packet_wire_bytes(pmtu);
  double n = sch->nranks, s = (double)sch->bytes;
  r->packet_time_ns = wire_bytes * 8e9 / (double)o->rate_bps;
  r->goodput_bps = (double)o->rate_bps * pmtu / wire_bytes;
  r->alpha_ns = 2.0 * (double)o->prop_delay_ns + r->packet_time_ns;
  double b_bytes_per_ns = r->goodput_bps / 8e9;
  if (is(sch, "all-to-all") || is(sch, "all-gather") || is(sch, "reduce-scatter"))
    r->model_ns = (n - 1) * r->alpha_ns + (n - 1) / n * s / b_bytes_per_ns;
  else if (is(sch, "incast")) /* the receiver's link carries every sender's S */
    r->model_ns = r->alpha_ns + (n - 1) * s / b_bytes_per_ns;
  else if (is(sch, "broadcast"))
    r->model_ns =
        (n - 1) * r->alpha_ns + ((n - 2) * broadcast_slot_bytes(sch) + s) / b_bytes_per_ns;
  else
    r->model_ns = 2 * (n - 1) * r->alpha_ns + 2 * (n - 1) / n * s / b_bytes_per_ns;
}
