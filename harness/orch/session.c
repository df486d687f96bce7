/* A session: one fabric, its ranks and injectors, and repetitions run on
 * it one at a time, faulted or baseline (session.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "session_int.h"

/* Counter structs are plain uint64_t fields: difference them word by word. */
static void diff_u64(void *out, const void *after, const void *before, size_t size) {
  uint64_t *o = out;
  const uint64_t *a = after, *b = before;
  for (size_t i = 0; i < size / sizeof(uint64_t); i++)
    o[i] = a[i] - b[i];
}

static void on_exec_timer(jct_timer_t *t, uint64_t now_ns) {
  jct__session_t *s = t->data;
  if (s->exec && jct_exec_on_timer(s->exec, now_ns) == 0) jct__ranks_kick(s->ranks);
}

static void on_wake(jct_timer_t *t, uint64_t now_ns) {
  (void)t, (void)now_ns; /* only wakes the loop */
}

static void arm_exec(jct__session_t *s) {
  uint64_t d = jct_exec_next_deadline_ns(s->exec);
  if (d == UINT64_MAX)
    jct_timer_stop(&s->clock, &s->exec_timer);
  else if (!jct_timer_active(&s->exec_timer) || s->exec_timer.due_ns != d)
    jct_timer_start(&s->clock, &s->exec_timer, d, on_exec_timer);
}

/* Put the retransmissions since the repetition started into their bins. */
static void sample(jct__session_t *s, uint64_t now_ns) {
  jct_rep_t *rep = s->sampling;
  if (!rep || !s->ranks || !rep->bin_ns || now_ns < s->next_sample_ns) return;
  jct_uroce_stats_t st;
  jct__ranks_stats(s->ranks, &st);
  uint64_t bin = (now_ns - s->rep_start_ns) / rep->bin_ns;
  if (bin >= JCT_REP_MAX_BINS) bin = JCT_REP_MAX_BINS - 1;
  /* Everything since the last sample lands in the bin of this one. */
  rep->retx_bins[bin] += (uint32_t)(st.retx_pkts - s->retx_at_start);
  s->retx_at_start = st.retx_pkts;
  if (bin + 1 > rep->nbins) rep->nbins = (uint32_t)bin + 1;
  s->next_sample_ns = s->rep_start_ns + (bin + 1) * rep->bin_ns;
}

int jct__session_failed(const jct__session_t *s, char *why, size_t len) {
  if (s->ranks) return jct__ranks_failed(s->ranks, why, len);
  if (s->agents && jct__agents_failed(s->agents, why, len)) return 1;
  for (uint32_t i = 0; s->lab && i < s->o->schedule->nranks; i++)
    if (!jct__lab_alive(s->lab, i)) {
      char tail[400];
      jct__lab_console_tail(s->lab, i, tail, sizeof tail);
      if (why) snprintf(why, len, "rank %u's VM stopped; its console ends:\n%s", i, tail);
      return 1;
    }
  return 0;
}

bool jct__session_run_until(jct__session_t *s, bool (*done)(jct__session_t *), uint64_t deadline_ns) {
  jct_timer_start(&s->clock, &s->wake, deadline_ns, on_wake);
  while (!done(s) && jct_now_ns() < deadline_ns && !jct__session_failed(s, NULL, 0)) {
    uv_run(&s->loop, UV_RUN_ONCE);
    if (s->exec) arm_exec(s);
    if (s->sampling) sample(s, jct_now_ns());
  }
  jct_timer_stop(&s->clock, &s->wake);
  return done(s);
}

static bool exec_done(jct__session_t *s) {
  return jct_exec_done(s->exec);
}

static bool drained(jct__session_t *s) {
  return (!s->ranks || jct__ranks_quiet(s->ranks)) && (!s->fab || jct_fabric_idle(s->fab));
}

static bool never(jct__session_t *s) {
  (void)s;
  return false;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static uint64_t paused_now(jct__session_t *s) {
  uint64_t sum = 0;
  for (uint32_t p = 0; s->fab && p < s->o->schedule->nranks; p++) {
    jct_switch_port_stats_t ps;
    if (jct_switch_port_stats(jct_fabric_switch(s->fab), p, jct_now_ns(), &ps) == 0)
      for (int q = 0; q < JCT_SWITCH_PRIOS; q++)
        sum += ps.paused_ns[q];
  }
  return sum;
}

typedef struct {
  jct_uroce_stats_t transport;
  jct_switch_totals_t fabric;
  uint64_t paused_ns;
} snapshot_t;

static void snap(jct__session_t *s, snapshot_t *x) {
  memset(x, 0, sizeof *x);
  if (s->ranks) jct__ranks_stats(s->ranks, &x->transport);
  if (s->fab) jct_switch_totals(jct_fabric_switch(s->fab), &x->fabric);
  x->paused_ns = paused_now(s);
}

void jct__session_fail_rep(jct__session_t *s, jct_rep_t *rep, const char *why) {
  rep->ok = false;
  snprintf(rep->why, sizeof rep->why, "%s", why);
  s->broken = true;
}

/* One repetition on the uroce ranks, with the executor in this process. */
static int uroce_rep(jct__session_t *s, uint32_t index, uint64_t limit_ns, jct_rep_t *rep) {
  const jct_schedule_t *sch = s->o->schedule;
  jct_exec_hooks_t hooks = jct__ranks_hooks(s->ranks);
  int rc0 = jct_exec_new(&s->exec, sch, 0, &hooks);
  if (rc0) return rc0;
  jct__ranks_attach(s->ranks, s->exec);
  uint64_t start = jct_now_ns();
  s->sampling = rep;
  s->rep_start_ns = start;
  s->next_sample_ns = start;
  jct_uroce_stats_t st;
  jct__ranks_stats(s->ranks, &st);
  s->retx_at_start = st.retx_pkts;
  jct_fabric_start(s->fab, start);
  int rc = jct_exec_start(s->exec, start);
  jct__ranks_kick(s->ranks);
  bool done = rc == 0 && jct__session_run_until(s, exec_done, start + limit_ns);
  char why[256];
  if (jct__ranks_failed(s->ranks, why, sizeof why)) {
    jct__session_fail_rep(s, rep, why);
  } else if (!done) {
    snprintf(why, sizeof why, "repetition %u did not finish in %.1f s (%u of %u messages)",
             index + 1, (double)limit_ns / 1e9, jct_exec_ops_done(s->exec), sch->nops);
    jct__session_fail_rep(s, rep, why);
  }
  sample(s, jct_now_ns());
  s->sampling = NULL;
  rep->jct_ns = jct_exec_jct_ns(s->exec);
  for (uint32_t i = 0; i < sch->nops; i++) {
    const jct_op_timing_t *t = jct_exec_timing(s->exec, i);
    jct_op_timing_t *o = &rep->timing[i];
    o->ready_ns = t->ready_ns ? t->ready_ns - start : 0;
    o->start_ns = t->start_ns ? t->start_ns - start : 0;
    o->done_ns = t->done_ns ? t->done_ns - start : 0;
  }
  jct__ranks_attach(s->ranks, NULL);
  jct_exec_free(s->exec);
  s->exec = NULL;
  jct_timer_stop(&s->clock, &s->exec_timer);
  return 0;
}

int jct__session_rep(jct__session_t *s, bool faulted, uint32_t index, jct_rep_t *rep) {
  const jct_schedule_t *sch = s->o->schedule;
  memset(rep, 0, sizeof *rep);
  rep->faulted = faulted;
  rep->ok = true;
  rep->bin_ns = s->bin_ns;
  if (s->broken) {
    jct__session_fail_rep(s, rep, "an earlier repetition failed");
    return 0;
  }
  if (!(rep->timing = calloc(sch->nops, sizeof *rep->timing))) return JCT_ENOMEM;
  if (jct__chain_set_enabled(s->chain, faulted)) {
    jct__session_fail_rep(s, rep, "cannot put the injectors on the switch's path");
    return 0;
  }
  snapshot_t before, after;
  snap(s, &before);
  /* Generous: 20 times the model, 10 s, and every retry of one message
   * running out its timer twice over (4.096 us * 2^timeout each). */
  uint64_t qp_timeout_ns = 4096ull << (s->o->timeout < 31 ? s->o->timeout : 31);
  uint64_t limit_ns = (uint64_t)(s->model_ns * 20) + 10000000000u +
                      2 * (uint64_t)(s->o->retry_cnt + 1) * qp_timeout_ns;
  if (s->agents) {
    if (s->fab) jct_fabric_start(s->fab, jct_now_ns());
    jct__session_verbs_rep(s, index, limit_ns, rep);
  } else {
    int rc = uroce_rep(s, index, limit_ns, rep);
    if (rc) return rc;
  }
  jct__session_run_until(s, drained, jct_now_ns() + DRAIN_NS);
  /* The counters include what happened while the fabric drained, so the
   * report and the fault log agree. */
  snap(s, &after);
  if (s->ranks)
    diff_u64(&rep->transport, &after.transport, &before.transport, sizeof rep->transport);
  diff_u64(&rep->fabric, &after.fabric, &before.fabric, sizeof rep->fabric);
  rep->fabric.queued_frames = after.fabric.queued_frames; /* levels, not counters */
  rep->fabric.wire_frames = after.fabric.wire_frames;
  rep->fabric.pool_used_bytes = after.fabric.pool_used_bytes;
  rep->fabric.pool_bytes = after.fabric.pool_bytes;
  rep->paused_ns = after.paused_ns - before.paused_ns;
  if (faulted)
    for (size_t i = 0; i < jct__chain_len(s->chain) && i < JCT_RUN_MAX_INJECTORS; i++)
      rep->injectors[i] = jct__chain_get(s->chain, i)->stats;
  return 0;
}

void jct__session_health(jct__session_t *s, jct__session_health_t *h) {
  memset(h, 0, sizeof *h);
  double wall = (double)(jct_now_ns() - s->wall0) * 1e-9;
  h->cpu_busy = wall > 0 ? (cpu_seconds() - s->cpu0) / wall : 0;
  h->lateness_p50_ns = jct_lateness_quantile_ns(&s->clock.lateness, 0.5);
  h->lateness_p99_ns = jct_lateness_quantile_ns(&s->clock.lateness, 0.99);
  h->lateness_max_ns = s->clock.lateness.max_ns;
  jct_fabric_harness_stats_t hs = {0};
  if (s->fab) jct_fabric_harness_stats(s->fab, &hs);
  h->harness_losses =
      hs.inject_failures + hs.pcap_drops + (s->ranks ? jct__ranks_harness_losses(s->ranks) : 0);
  if (h->harness_losses)
    snprintf(h->harness_why, sizeof h->harness_why,
             "the harness lost %llu frames by its own fault (pcap_inject %llu, pcap drops %llu, "
             "socket drops and send failures %llu)",
             (unsigned long long)h->harness_losses, (unsigned long long)hs.inject_failures,
             (unsigned long long)hs.pcap_drops,
             (unsigned long long)(h->harness_losses - hs.inject_failures - hs.pcap_drops));
}

uint32_t jct__session_injectors(const jct__session_t *s, jct_run_injector_t *out, uint32_t max) {
  uint32_t n = 0;
  for (; n < jct__chain_len(s->chain) && n < max; n++) {
    const jct_injector_t *inj = jct__chain_get(s->chain, n);
    memset(&out[n], 0, sizeof out[n]);
    snprintf(out[n].spec, sizeof out[n].spec, "%s", inj->spec);
    snprintf(out[n].kind, sizeof out[n].kind, "%s", inj->ops->name);
    out[n].seed = inj->seed;
  }
  return n;
}

void jct__rep_clear(jct_rep_t *rep) {
  free(rep->timing);
  rep->timing = NULL;
}

void jct__session_free(jct__session_t *s) {
  if (!s) return;
  jct__session_lab_down(s);
  jct__ranks_free(s->ranks);
  jct_fabric_free(s->fab);
  jct__chain_free(s->chain);
  if (s->fault_log) fclose(s->fault_log);
  if (s->clock_open) jct_clock_close(&s->clock, NULL);
  if (s->loop_open) {
    uv_run(&s->loop, UV_RUN_NOWAIT);
    uv_loop_close(&s->loop);
  }
  free(s);
}

int jct__session_new(jct__session_t **out, const jct_run_opts_t *o, uint64_t bin_ns, char *err,
                    size_t errlen) {
  *out = NULL;
  jct__session_t *s = calloc(1, sizeof *s);
  if (!s) return JCT_ENOMEM;
  s->o = o;
  s->bin_ns = bin_ns;
  jct_run_result_t model;
  jct_run_model(o, &model);
  s->model_ns = model.model_ns;
  s->exec_timer.data = s->wake.data = s;
  uv_loop_init(&s->loop);
  s->loop_open = true;
  int rc = jct_clock_init(&s->clock, &s->loop);
  if (rc) {
    jct__session_free(s);
    return jct__errf(err, errlen, rc, "cannot create the event loop's timer");
  }
  s->clock_open = true;
  jct_clock_set_spin_ns(&s->clock, SPIN_NS);
  /* The injectors before anything else is built: a bad spec is bad input. */
  if ((rc = jct__chain_new(&s->chain, o->inject, o->ninject, o->seed, err, errlen))) {
    jct__session_free(s);
    return rc;
  }
  if (o->fault_log && !(s->fault_log = fopen(o->fault_log, "w"))) {
    rc = jct__errf(err, errlen, JCT_EIO, "%s: %s", o->fault_log, strerror(errno));
    jct__session_free(s);
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
                          .pcap_in = o->pcap_in,
                          .pcap_drops = o->pcap_drops,
                          .fault_log = s->fault_log,
                          .chain = s->chain};
  jct__ranks_opts_t ro = {.rate_bps = o->rate_bps,
                         .nic_queue_pkts = o->nic_queue_pkts,
                         .path_mtu_bytes = o->path_mtu_bytes ? o->path_mtu_bytes : 4096,
                         .timeout = o->timeout,
                         .retry_cnt = o->retry_cnt,
                         .dscp = DATA_DSCP,
                         .data_prio = DATA_PRIO};
  const char *ports[JCT_SWITCH_MAX_PORTS];
  if (o->agents) {
    /* Agents on hosts: their traffic crosses the hosts' own fabric, not a
     * jctlab switch, so there is no fabric here and nothing to inject. */
    if (o->ninject) {
      jct__session_free(s);
      return jct__errf(err, errlen, JCT_EINVAL,
                       "--agents: the ranks' traffic crosses your fabric, not jctlab's switch, "
                       "so injectors cannot act on it (run them on the lab, --lab N)");
    }
    if ((rc = jct__session_agents_up(s, err, errlen))) {
      jct__session_free(s);
      return rc;
    }
    s->cpu0 = cpu_seconds();
    s->wall0 = jct_now_ns();
    *out = s;
    return 0;
  }
  if (o->transport == JCT_TRANSPORT_VERBS) {
    /* The ranks are VMs; the switch's ports are their TAPs. */
    if ((rc = jct__session_lab_up(s, err, errlen))) {
      jct__session_free(s);
      return rc;
    }
    for (uint32_t i = 0; i < o->schedule->nranks && i < JCT_SWITCH_MAX_PORTS; i++)
      ports[i] = jct__lab_port_ifname(s->lab, i);
    fo.port_ifnames = ports;
  }
  if ((rc = jct_fabric_new(&s->fab, &s->loop, &s->clock, &fo, err, errlen)) ||
      (o->transport == JCT_TRANSPORT_UROCE &&
       (rc = jct__ranks_new(&s->ranks, &s->loop, &s->clock, jct_fabric_topo(s->fab), o->schedule,
                           &ro, err, errlen))) ||
      (o->transport == JCT_TRANSPORT_VERBS && (rc = jct__session_agents_up(s, err, errlen)))) {
    jct__session_free(s);
    return rc;
  }
  jct__session_run_until(s, never, jct_now_ns() + SETTLE_NS); /* let the links come up */
  memset(&s->clock.lateness, 0, sizeof s->clock.lateness);
  s->cpu0 = cpu_seconds();
  s->wall0 = jct_now_ns();
  *out = s;
  return 0;
}
