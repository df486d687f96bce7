/* The uroce backend (backend.h): jctlab's userspace RoCE ranks, one per
 * network namespace of this process (harness/transport/uroce/ranks.h), the
 * emulated switch between their veth ends (include/jctlab/fabric.h), and
 * the schedule's executor (include/jctlab/executor.h) in this process,
 * driving the QPs through the ranks' hooks. Its counters are uroce's own
 * (include/jctlab/uroce.h), every figure of jct_transport_stats_t, also
 * per connection for retransmissions, and it
 * samples retransmissions while a repetition runs, for the report's plot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/transport/uroce/ranks.h"
#include "jctlab/error.h"
#include "jctlab/executor.h"
#include "backend.h"
#include "uroce_opts.h"

typedef struct {
  jct__loop_t *loop;
  const jct_run_opts_t *o;
  jct_fabric_t *fab;
  jct__ranks_t *ranks;
  jct_exec_t *exec; /* the current repetition's; NULL between repetitions */
  jct_timer_t exec_timer;
  /* The repetition whose retransmissions are being put into bins. */
  jct_rep_t *sampling;
  uint64_t rep_start_ns, next_sample_ns, retx_at_start;
  uint64_t next_series_ns;
  jct_dcqcn_params_t dcqcn; /* the QPs', when the run's congestion control is DCQCN */
} uroce_t;

static void on_exec_timer(jct_timer_t *t, uint64_t now_ns) {
  uroce_t *u = t->data;
  if (u->exec && jct_exec_on_timer(u->exec, now_ns) == 0) jct__ranks_kick(u->ranks);
}

static void arm_exec(uroce_t *u) {
  jct_clock_t *clock = &u->loop->clock;
  uint64_t d = jct_exec_next_deadline_ns(u->exec);
  if (d == UINT64_MAX)
    jct_timer_stop(clock, &u->exec_timer);
  else if (!jct_timer_active(&u->exec_timer) || u->exec_timer.due_ns != d)
    jct_timer_start(clock, &u->exec_timer, d, on_exec_timer);
}

/* Put the retransmissions since the repetition started into their bins. */
static void sample(uroce_t *u, uint64_t now_ns) {
  jct_rep_t *rep = u->sampling;
  if (!rep || !rep->bin_ns || now_ns < u->next_sample_ns) return;
  jct_uroce_stats_t st;
  jct__ranks_stats(u->ranks, &st);
  uint64_t bin = (now_ns - u->rep_start_ns) / rep->bin_ns;
  if (bin >= JCT_REP_MAX_BINS) bin = JCT_REP_MAX_BINS - 1;
  /* Everything since the last sample lands in the bin of this one. */
  rep->retx_bins[bin] += (uint32_t)(st.retx_pkts - u->retx_at_start);
  u->retx_at_start = st.retx_pkts;
  if (bin + 1 > rep->nbins) rep->nbins = (uint32_t)bin + 1;
  u->next_sample_ns = u->rep_start_ns + (bin + 1) * rep->bin_ns;
}

/* A sample of the repetition's time series, when one is due. */
static void sample_series(uroce_t *u, uint64_t now_ns) {
  jct_series_t *s = u->sampling ? u->sampling->series : NULL;
  if (!s || s->n == JCT_SERIES_MAX || now_ns < u->next_series_ns) return;
  uint32_t i = s->n++;
  s->t_ns[i] = now_ns - u->rep_start_ns;
  for (uint32_t r = 0; r < s->nranks; r++)
    s->queue_bytes[(size_t)i * s->nranks + r] = jct_fabric_queue_bytes(u->fab, r);
  for (uint32_t c = 0; c < s->nconns; c++)
    s->rate_bps[(size_t)i * s->nconns + c] = jct__ranks_conn_rate_bps(u->ranks, c);
  u->next_series_ns = now_ns + s->interval_ns;
}

/* After each turn of the loop during a repetition. */
static void turn(void *arg) {
  uroce_t *u = arg;
  arm_exec(u);
  uint64_t now = jct_now_ns();
  sample(u, now);
  sample_series(u, now);
}

static bool exec_done_or_failed(void *arg) {
  uroce_t *u = arg;
  return jct_exec_done(u->exec) || jct__ranks_failed(u->ranks, NULL, 0);
}

static bool drained_or_failed(void *arg) {
  uroce_t *u = arg;
  return (jct__ranks_quiet(u->ranks) && jct_fabric_idle(u->fab)) ||
         jct__ranks_failed(u->ranks, NULL, 0);
}

static int run_rep(void *b, uint32_t index, uint64_t limit_ns, jct_rep_t *rep) {
  uroce_t *u = b;
  const jct_schedule_t *sch = u->o->schedule;
  if (u->o->series_ns && !rep->series &&
      !(rep->series = jct_series_new(u->o->series_ns, sch->nranks, sch->nconns)))
    return JCT_ENOMEM;
  jct_exec_hooks_t hooks = jct__ranks_hooks(u->ranks);
  int rc0 = jct_exec_new(&u->exec, sch, u->o->cts_slots, &hooks);
  if (rc0) return rc0;
  jct__ranks_attach(u->ranks, u->exec);
  uint64_t start = jct_now_ns();
  u->sampling = rep;
  u->rep_start_ns = start;
  u->next_sample_ns = start;
  u->next_series_ns = start;
  jct_uroce_stats_t st;
  jct__ranks_stats(u->ranks, &st);
  u->retx_at_start = st.retx_pkts;
  jct_fabric_start(u->fab, start);
  /* Each repetition from the line rate, as QPs idle long enough to have
   * recovered: a repetition does not inherit the previous one's cuts, so
   * that baseline and faulted repetitions, interleaved, compare alike. */
  jct__ranks_rep_start(u->ranks, rep->faulted);
  int rc = jct_exec_start(u->exec, start);
  jct__ranks_kick(u->ranks);
  /* The switch and the ranks are all this process's: while the repetition
   * runs, the clock may skip the times in which only timers are left
   * (clock.h); the links coming up and the drain keep real time. */
  jct_clock_set_skip(&u->loop->clock, u->o->no_skip ? 0 : JCT_CLOCK_SKIP_MIN_NS);
  bool done =
      rc == 0 && jct__loop_run_until(u->loop, exec_done_or_failed, turn, u, start + limit_ns);
  /* The job is done: its QPs drain here, the clock still skipping, so that
   * a timer due after the job's end (a captured timer go-back, a lost last
   * ACK's retransmission) runs in emulated time, as in the capture, and is
   * this repetition's, whatever the dilation; the session's drain (2 s of
   * wall time, 62.5 ms emulated at --tdf 32) then finds them quiet. JCT
   * is the last receive's, unchanged by it. */
  if (done && !jct__ranks_failed(u->ranks, NULL, 0))
    (void)jct__loop_run_until(u->loop, drained_or_failed, NULL, u, start + limit_ns);
  jct_clock_set_skip(&u->loop->clock, 0);
  char why[256];
  if (jct__ranks_failed(u->ranks, why, sizeof why)) {
    jct__rep_fail(rep, why);
  } else if (!done) {
    snprintf(why, sizeof why, "repetition %u did not finish in %.1f s (%u of %u messages)",
             index + 1, (double)limit_ns / 1e9, jct_exec_ops_done(u->exec), sch->nops);
    jct__rep_fail(rep, why);
  }
  sample(u, jct_now_ns());
  u->sampling = NULL;
  rep->jct_ns = jct_exec_jct_ns(u->exec);
  for (uint32_t i = 0; i < sch->nops; i++) {
    const jct_op_timing_t *t = jct_exec_timing(u->exec, i);
    jct_op_timing_t *o = &rep->timing[i];
    o->ready_ns = t->ready_ns ? t->ready_ns - start : 0;
    o->start_ns = t->start_ns ? t->start_ns - start : 0;
    o->done_ns = t->done_ns ? t->done_ns - start : 0;
  }
  jct__ranks_attach(u->ranks, NULL);
  jct_exec_free(u->exec);
  u->exec = NULL;
  jct_timer_stop(&u->loop->clock, &u->exec_timer);
  return 0;
}

static jct_fabric_t *fabric(const void *b) {
  return ((const uroce_t *)b)->fab;
}

static int failed(void *b, char *why, size_t len) {
  return jct__ranks_failed(((uroce_t *)b)->ranks, why, len);
}

static bool quiet(const void *b) {
  return jct__ranks_quiet(((const uroce_t *)b)->ranks);
}

static void stats(const void *b, jct_transport_stats_t *t) {
  const uroce_t *u = b;
  jct_uroce_stats_t st;
  jct__ranks_stats(u->ranks, &st);
  jct__uroce_tstats(&st, jct__ranks_nic_paused_ns(u->ranks), t);
}

static void conn_counts(const void *b, jct_conn_counts_t *out) {
  const uroce_t *u = b;
  jct__uroce_conn_counts(u->ranks, u->o->schedule->nconns, out);
}

static uint64_t harness_losses(const void *b) {
  return jct__ranks_harness_losses(((const uroce_t *)b)->ranks);
}

static void down(void *b) {
  uroce_t *u = b;
  jct__ranks_free(u->ranks);
  jct_fabric_free(u->fab);
  free(u);
}

static int up(void **out, const jct__backend_env_t *env, char *err, size_t errlen) {
  *out = NULL;
  const jct_run_opts_t *o = env->o;
  uroce_t *u = calloc(1, sizeof *u);
  if (!u) return JCT_ENOMEM;
  u->loop = env->loop;
  u->o = o;
  u->exec_timer.data = u;
  jct__ranks_opts_t ro;
  jct__uroce_ranks_opts(o, &u->dcqcn, &ro);
  int rc;
  if ((rc = jct_fabric_new(&u->fab, &u->loop->uv, &u->loop->clock, env->fabric, err, errlen)) ||
      (rc = jct__ranks_new(&u->ranks, &u->loop->uv, &u->loop->clock, jct_fabric_topo(u->fab),
                           o->schedule, &ro, err, errlen))) {
    down(u);
    return rc;
  }
  *out = u;
  return 0;
}

const struct jct__backend_ops jct__backend_uroce = {
    .name = "uroce",
    .counted = JCT_TSTAT_ALL,
    .up = up,
    .fabric = fabric,
    .rep = run_rep,
    .failed = failed,
    .quiet = quiet,
    .stats = stats,
    .conn_counts = conn_counts,
    .harness_losses = harness_losses,
    .down = down,
};
