/* A run: K repetitions of a schedule on the emulated fabric
 * (include/jctlab/run.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "chain.h"
#include "errf.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/executor.h"
#include "jctlab/fabric.h"
#include "jctlab/run.h"
#include "ranks.h"

#define DATA_PRIO 3
#define DATA_DSCP 26 /* DSCP 26 >> 3 = priority 3 */
#define WIRE_EXTRA_BYTES (12 + 4 + 8 + 20 + 14 + 24)
#define DRAIN_NS 2000000000u
#define SETTLE_NS 20000000u
/* Spin rather than sleep for timers due this soon (clock.h): sleeping and
 * re-arming cost more than the gaps between packets. */
#define SPIN_NS 100000u

void jct_run_model(const jct_run_opts_t *o, jct_run_result_t *r) {
  uint32_t pmtu = o->path_mtu_bytes ? o->path_mtu_bytes : 4096;
  double wire_bytes = pmtu + WIRE_EXTRA_BYTES;
  double n = o->schedule->nranks, s = (double)o->schedule->bytes;
  r->packet_time_ns = wire_bytes * 8e9 / (double)o->rate_bps;
  r->goodput_bps = (double)o->rate_bps * pmtu / wire_bytes;
  r->alpha_ns = 2.0 * (double)o->prop_delay_ns + r->packet_time_ns;
  double b_bytes_per_ns = r->goodput_bps / 8e9;
  if (strcmp(o->schedule->algorithm, "all-to-all") == 0)
    r->model_ns = (n - 1) * r->alpha_ns + (n - 1) / n * s / b_bytes_per_ns;
  else
    r->model_ns = 2 * (n - 1) * r->alpha_ns + 2 * (n - 1) / n * s / b_bytes_per_ns;
}

typedef struct {
  uv_loop_t loop;
  jct_clock_t clock;
  jct_chain_t *chain;
  FILE *fault_log;
  jct_fabric_t *fab;
  jct_ranks_t *ranks;
  jct_exec_t *exec;
  jct_timer_t exec_timer, wake;
} ctx_t;

static void on_exec_timer(jct_timer_t *t, uint64_t now_ns) {
  ctx_t *c = t->data;
  if (c->exec && jct_exec_on_timer(c->exec, now_ns) == 0) jct_ranks_kick(c->ranks);
}

static void on_wake(jct_timer_t *t, uint64_t now_ns) {
  (void)t, (void)now_ns; /* only wakes the loop */
}

static void arm_exec(ctx_t *c) {
  uint64_t d = jct_exec_next_deadline_ns(c->exec);
  if (d == UINT64_MAX)
    jct_timer_stop(&c->clock, &c->exec_timer);
  else if (!jct_timer_active(&c->exec_timer) || c->exec_timer.due_ns != d)
    jct_timer_start(&c->clock, &c->exec_timer, d, on_exec_timer);
}

/* Run the loop until done() or the deadline; returns whether done. */
static bool run_until(ctx_t *c, bool (*done)(ctx_t *), uint64_t deadline_ns) {
  jct_timer_start(&c->clock, &c->wake, deadline_ns, on_wake);
  while (!done(c) && jct_now_ns() < deadline_ns && !jct_ranks_failed(c->ranks, NULL, 0)) {
    uv_run(&c->loop, UV_RUN_ONCE);
    if (c->exec) arm_exec(c);
  }
  jct_timer_stop(&c->clock, &c->wake);
  return done(c);
}

static bool exec_done(ctx_t *c) {
  return jct_exec_done(c->exec);
}

static bool drained(ctx_t *c) {
  return jct_ranks_quiet(c->ranks) && jct_fabric_idle(c->fab);
}

static bool never(ctx_t *c) {
  (void)c;
  return false;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void statistics(const jct_run_opts_t *o, jct_run_result_t *r) {
  uint64_t sorted[JCT_RUN_MAX_REPS];
  memcpy(sorted, r->jct_ns, r->reps * sizeof *sorted);
  qsort(sorted, r->reps, sizeof *sorted, cmp_u64);
  r->min_ns = sorted[0];
  r->max_ns = sorted[r->reps - 1];
  r->median_ns =
      r->reps % 2 ? sorted[r->reps / 2] : (sorted[r->reps / 2 - 1] + sorted[r->reps / 2]) / 2;
  double mean = 0, var = 0;
  for (uint32_t i = 0; i < r->reps; i++)
    mean += (double)r->jct_ns[i];
  mean /= r->reps;
  for (uint32_t i = 0; i < r->reps; i++)
    var += pow((double)r->jct_ns[i] - mean, 2);
  r->cv = r->reps > 1 ? sqrt(var / (r->reps - 1)) / mean : 0;
  r->algbw_gbps = (double)o->schedule->bytes / (double)r->median_ns;
  r->busbw_gbps = r->algbw_gbps * jct_schedule_busbw_factor(o->schedule);
  r->model_ratio = (double)r->median_ns / r->model_ns;
}

static void invalid(jct_run_result_t *r, const char *why) {
  if (!r->valid) return;
  r->valid = false;
  snprintf(r->invalid_why, sizeof r->invalid_why, "%s", why);
}

static int one_rep(ctx_t *c, const jct_run_opts_t *o, jct_run_result_t *r, uint32_t rep, char *err,
                   size_t errlen) {
  jct_exec_hooks_t hooks = jct_ranks_hooks(c->ranks);
  int rc = jct_exec_new(&c->exec, o->schedule, 0, &hooks);
  if (rc) return rc;
  jct_ranks_attach(c->ranks, c->exec);
  uint64_t limit_ns = (uint64_t)(r->model_ns * 20) + 10000000000u;
  uint64_t start = jct_now_ns();
  jct_fabric_start(c->fab, start);
  rc = jct_exec_start(c->exec, start);
  jct_ranks_kick(c->ranks);
  bool done = rc == 0 && run_until(c, exec_done, start + limit_ns);
  char why[256];
  if (jct_ranks_failed(c->ranks, why, sizeof why)) {
    invalid(r, why);
  } else if (!done) {
    snprintf(why, sizeof why, "repetition %u did not finish in %.1f s (%u of %u messages)", rep + 1,
             (double)limit_ns / 1e9, jct_exec_ops_done(c->exec), o->schedule->nops);
    invalid(r, why);
  }
  r->jct_ns[rep] = jct_exec_jct_ns(c->exec);
  jct_ranks_attach(c->ranks, NULL);
  jct_exec_free(c->exec);
  c->exec = NULL;
  jct_timer_stop(&c->clock, &c->exec_timer);
  run_until(c, drained, jct_now_ns() + DRAIN_NS);
  /* The injectors' counters include what they did while the fabric
   * drained, so the report and the fault log agree. */
  for (uint32_t i = 0; i < r->ninjectors; i++) {
    const jct_injector_stats_t *st = &jct_chain_get(c->chain, i)->stats;
    jct_injector_stats_t *sum = &r->injectors[i].stats;
    sum->seen += st->seen, sum->matched += st->matched, sum->dropped += st->dropped;
    sum->held += st->held, sum->modified += st->modified, sum->expedited += st->expedited;
    sum->generated += st->generated, sum->hold_ns_total += st->hold_ns_total;
  }
  (void)err, (void)errlen;
  return 0;
}

static int check_opts(const jct_run_opts_t *o, char *err, size_t errlen) {
  if (!o->schedule) return jct__errf(err, errlen, JCT_EINVAL, "no schedule");
  if (o->reps < 1 || o->reps > JCT_RUN_MAX_REPS)
    return jct__errf(err, errlen, JCT_EINVAL, "--reps %u is outside [1, %u]", o->reps,
                     JCT_RUN_MAX_REPS);
  if (o->rate_bps < 1000000 || o->rate_bps > JCT_SWITCH_MAX_RATE_BPS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--rate %llu bit/s is outside what the fabric emulates [1 Mbit/s, 1 Tbit/s]",
                     (unsigned long long)o->rate_bps);
  if (o->schedule->bytes == 0)
    return jct__errf(err, errlen, JCT_EINVAL, "the schedule does not say its size (\"bytes\")");
  if (o->ninject > JCT_RUN_MAX_INJECTORS)
    return jct__errf(err, errlen, JCT_EINVAL, "%u injectors: at most %u", o->ninject,
                     JCT_RUN_MAX_INJECTORS);
  return 0;
}

/* The injectors, before anything else is built: a bad spec is bad input. */
static int make_chain(ctx_t *c, const jct_run_opts_t *o, jct_run_result_t *r, char *err,
                      size_t errlen) {
  int rc = jct_chain_new(&c->chain, o->inject, o->ninject, o->seed, err, errlen);
  if (rc) return rc;
  r->ninjectors = o->ninject;
  for (uint32_t i = 0; i < o->ninject; i++) {
    const jct_injector_t *inj = jct_chain_get(c->chain, i);
    snprintf(r->injectors[i].spec, sizeof r->injectors[i].spec, "%s", inj->spec);
    snprintf(r->injectors[i].kind, sizeof r->injectors[i].kind, "%s", inj->ops->name);
    r->injectors[i].seed = inj->seed;
  }
  if (o->fault_log && !(c->fault_log = fopen(o->fault_log, "w")))
    return jct__errf(err, errlen, JCT_EIO, "%s: %s", o->fault_log, strerror(errno));
  return 0;
}

static void teardown(ctx_t *c) {
  jct_ranks_free(c->ranks);
  jct_fabric_free(c->fab);
  jct_chain_free(c->chain);
  if (c->fault_log) fclose(c->fault_log);
  jct_clock_close(&c->clock, NULL);
  uv_run(&c->loop, UV_RUN_NOWAIT);
  uv_loop_close(&c->loop);
}

int jct_run(const jct_run_opts_t *o, jct_run_result_t *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  int rc = check_opts(o, err, errlen);
  if (rc) return rc;
  r->reps = o->reps;
  r->valid = true;
  jct_run_model(o, r);

  ctx_t *c = calloc(1, sizeof *c);
  if (!c) return JCT_ENOMEM;
  c->exec_timer.data = c->wake.data = c;
  uv_loop_init(&c->loop);
  if ((rc = jct_clock_init(&c->clock, &c->loop))) {
    uv_loop_close(&c->loop);
    free(c);
    return jct__errf(err, errlen, rc, "cannot create the event loop's timer");
  }
  jct_clock_set_spin_ns(&c->clock, SPIN_NS);
  if ((rc = make_chain(c, o, r, err, errlen))) {
    teardown(c);
    free(c);
    return rc;
  }
  jct_fabric_opts_t fo = {.nranks = o->schedule->nranks,
                          .rate_bps = o->rate_bps,
                          .prop_delay_ns = o->prop_delay_ns,
                          .mtu = o->mtu,
                          .data_prio = DATA_PRIO,
                          .pfc = o->pfc,
                          .ecn = o->ecn,
                          .pfc_watchdog = o->pfc_watchdog,
                          .watchdog_forward = o->watchdog_forward,
                          .pcap_out = o->pcap_out,
                          .pcap_drops = o->pcap_drops,
                          .fault_log = c->fault_log,
                          .chain = c->chain};
  jct_ranks_opts_t ro = {.rate_bps = o->rate_bps,
                         .path_mtu_bytes = o->path_mtu_bytes ? o->path_mtu_bytes : 4096,
                         .timeout = o->timeout,
                         .retry_cnt = o->retry_cnt,
                         .dscp = DATA_DSCP,
                         .data_prio = DATA_PRIO};
  if ((rc = jct_fabric_new(&c->fab, &c->loop, &c->clock, &fo, err, errlen)) ||
      (rc = jct_ranks_new(&c->ranks, &c->loop, &c->clock, jct_fabric_topo(c->fab), o->schedule, &ro,
                          err, errlen))) {
    teardown(c);
    free(c);
    return rc;
  }
  run_until(c, never, jct_now_ns() + SETTLE_NS); /* let the links come up */
  memset(&c->clock.lateness, 0, sizeof c->clock.lateness);

  double cpu0 = cpu_seconds();
  uint64_t wall0 = jct_now_ns();
  for (uint32_t i = 0; i < o->reps && r->valid; i++)
    if ((rc = one_rep(c, o, r, i, err, errlen))) break;
  double wall = (double)(jct_now_ns() - wall0) * 1e-9;
  r->cpu_busy = wall > 0 ? (cpu_seconds() - cpu0) / wall : 0;

  r->lateness_p50_ns = jct_lateness_quantile_ns(&c->clock.lateness, 0.5);
  r->lateness_p99_ns = jct_lateness_quantile_ns(&c->clock.lateness, 0.99);
  r->lateness_max_ns = c->clock.lateness.max_ns;
  r->loop_bound = (double)r->lateness_p99_ns > r->packet_time_ns;
  jct_ranks_stats(c->ranks, &r->transport);
  jct_switch_totals(jct_fabric_switch(c->fab), &r->fabric);
  for (uint32_t p = 0; p < o->schedule->nranks; p++) {
    jct_switch_port_stats_t ps;
    if (jct_switch_port_stats(jct_fabric_switch(c->fab), p, jct_now_ns(), &ps) == 0)
      for (int q = 0; q < JCT_SWITCH_PRIOS; q++)
        r->paused_ns += ps.paused_ns[q];
  }
  jct_fabric_harness_stats_t hs;
  jct_fabric_harness_stats(c->fab, &hs);
  r->harness_losses = hs.inject_failures + hs.pcap_drops + jct_ranks_harness_losses(c->ranks);
  if (r->harness_losses) {
    char why[160];
    snprintf(why, sizeof why,
             "the harness lost %llu frames by its own fault (pcap_inject %llu, pcap drops %llu, "
             "socket drops and send failures %llu)",
             (unsigned long long)r->harness_losses, (unsigned long long)hs.inject_failures,
             (unsigned long long)hs.pcap_drops,
             (unsigned long long)(r->harness_losses - hs.inject_failures - hs.pcap_drops));
    invalid(r, why);
  }
  if (r->valid) statistics(o, r);
  teardown(c);
  free(c);
  return rc;
}
