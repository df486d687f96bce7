/* A session: one fabric, its ranks and injectors, and repetitions run on
 * it one at a time, faulted or baseline (session.h). What differs between
 * transports sits behind the backend's ops (backend.h), picked from the
 * table below by the run's transport; the rest is here: the loop, the
 * injector chain, each repetition's deadline, drain and counters, and
 * what a failed repetition means for the next ones. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/errf.h"
#include "harness/base/interrupt.h"
#include "harness/fabric/chain.h"
#include "jctlab/error.h"
#include "backend.h"
#include "links.h"
#include "loop.h"
#include "loss_watch.h"
#include "session.h"
#include "vm_stalls.h"

#define DRAIN_NS 2000000000u
#define SETTLE_NS 20000000u
/* Spin rather than sleep for timers due this soon (clock.h): sleeping and
 * re-arming cost more than the gaps between packets. */
#define SPIN_NS 1000000u

/* The backends, by jct_transport_t. */
static const struct jct__backend_ops *const backends[] = {
    [JCT_TRANSPORT_UROCE] = &jct__backend_uroce,
    [JCT_TRANSPORT_VERBS] = &jct__backend_verbs,
};

struct jct__session {
  jct__loop_t loop;
  const jct_run_opts_t *o;
  const struct jct__backend_ops *ops;
  void *b;           /* the backend's state; NULL until it is up */
  jct_fabric_t *fab; /* the backend's fabric; NULL: none */
  double model_ns;
  uint64_t gaps_ns; /* the sum of the schedule's gap_ns */
  uint64_t bin_ns;
  /* The run's dilation (run.h), its clear-to-send timer from the chain:
   * computed once, in jct__session_new; the backend builds on it
   * (env->dilation) and the report takes it (jct__session_dilation). */
  jct_run_dilation_t dil;
  jct__chain_t *chain;
  FILE *fault_log;
  jct_conn_counts_t *conn_before; /* nconns: the backend's per-connection counts before a
                            repetition; NULL when it does not count them */
  bool broken;           /* a repetition failed: no more */
  double cpu0;
  uint64_t wall0;
  uint64_t skipped0; /* the clock's skipped_ns when health restarted */
  /* The switch's wire as `jctlab inspect` sees it (loss_watch.h), when the
   * run wants its losses (o->watch_losses) or the backend its re-sent
   * packets (resent_on_wire); else NULL, and the fabric has no tap. */
  jct__loss_watch_t *watch;
};

/* Counter structs are plain uint64_t fields: difference them word by word. */
static void diff_u64(void *out, const void *after, const void *before, size_t size) {
  uint64_t *o = out;
  const uint64_t *a = after, *b = before;
  for (size_t i = 0; i < size / sizeof(uint64_t); i++)
    o[i] = a[i] - b[i];
}

static bool failed(jct__session_t *s) {
  return s->ops->failed(s->b, NULL, 0);
}

static bool drained_or_failed(void *arg) {
  jct__session_t *s = arg;
  return (s->ops->quiet(s->b) && (!s->fab || jct_fabric_idle(s->fab))) || failed(s);
}

static bool failed_only(void *arg) {
  return failed(arg);
}

static bool restored_or_failed(void *arg) {
  jct__session_t *s = arg;
  return !jct_fabric_wd_storming(s->fab) || failed(s);
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* The loop's lateness, CPU and wall time count from now: what came before
 * (the links coming up, warm-up repetitions) is no measured repetition's. */
static void restart_health(jct__session_t *s) {
  memset(&s->loop.clock.lateness, 0, sizeof s->loop.clock.lateness);
  s->cpu0 = cpu_seconds();
  s->wall0 = jct_wall_ns();
  s->skipped0 = s->loop.clock.skipped_ns;
}

static uint64_t paused_now(jct__session_t *s) {
  return s->fab ? jct_fabric_host_paused_ns(s->fab, jct_now_ns()) : 0;
}

/* The injectors, their link names (port=leaf0:spine1) made numbers. */
static int new_chain(jct__session_t *s, char *err, size_t errlen) {
  const jct_run_opts_t *o = s->o;
  if (!o->clos || !o->clos->leaves)
    return jct__chain_new(&s->chain, o->inject, o->ninject, o->seed, err, errlen);
  char specs[JCT_RUN_MAX_INJECTORS][512];
  const char *p[JCT_RUN_MAX_INJECTORS];
  for (uint32_t i = 0; i < o->ninject && i < JCT_RUN_MAX_INJECTORS; i++) {
    int rc = jct_clos_spec_ports(o->clos, o->schedule->nranks, o->inject[i], specs[i],
                                 sizeof specs[i], err, errlen);
    if (rc) return rc;
    p[i] = specs[i];
  }
  return jct__chain_new(&s->chain, p, o->ninject, o->seed, err, errlen);
}

/* --pcap-port's link as a port number (the injectors' numbering): a
 * rank's, or a leaf-spine link's name. */
static int pcap_port_number(const jct_run_opts_t *o, uint32_t *out, char *err, size_t errlen) {
  const char *v = o->pcap_port;
  uint32_t n = o->schedule->nranks;
  char *end;
  unsigned long r = *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : ULONG_MAX;
  int64_t k = r != ULONG_MAX && !*end      ? (r < n ? (int64_t)r : -1)
              : o->clos && o->clos->leaves ? jct_clos_port_number(o->clos, n, v)
                                           : -1;
  if (k < 0)
    return jct__errf(err, errlen, JCT_EINVAL, "--pcap-port %s: no such link (a rank 0 to %u%s)", v,
                     n - 1,
                     o->clos && o->clos->leaves ? ", or leaf<l>:spine<s> / spine<s>:leaf<l>"
                                                : "; the star has no links between switches");
  *out = (uint32_t)k;
  return 0;
}

typedef struct {
  jct_transport_stats_t transport;
  jct_switch_totals_t fabric;
  uint64_t paused_ns;
} snapshot_t;

static void snap(jct__session_t *s, snapshot_t *x) {
  memset(x, 0, sizeof *x);
  s->ops->stats(s->b, &x->transport);
  if (s->fab) jct_fabric_totals(s->fab, &x->fabric);
  x->paused_ns = paused_now(s);
}

static void fail_rep(jct__session_t *s, jct_rep_t *rep, const char *why) {
  jct__rep_fail(rep, why);
  s->broken = true;
}

/* An injector meant to act (injector.h, targeted: drop psn=, pkt=, the
 * postmortem's drops, stalls and timeouts) that acted on nothing in a faulted repetition makes
 * it fail: a case that injected none of its faults has no verdict. The
 * first such injector is named. */
static void idle_targets(jct__session_t *s, jct_rep_t *rep) {
  for (size_t i = 0; i < jct__chain_len(s->chain); i++) {
    const jct_injector_t *inj = jct__chain_get(s->chain, i);
    const jct_injector_stats_t *st = &inj->stats;
    if (!inj->targeted || st->dropped || st->held || st->modified || st->expedited ||
        st->duplicated || st->generated || st->stalls || st->timeouts)
      continue;
    char why[256];
    snprintf(why, sizeof why, "injector #%zu '%.80s%s' acted on nothing: no target of it passed",
             i + 1, inj->spec, strlen(inj->spec) > 80 ? "..." : "");
    fail_rep(s, rep, why);
    return;
  }
}

int jct__session_rep(jct__session_t *s, bool faulted, uint32_t index, jct_rep_t *rep) {
  const jct_schedule_t *sch = s->o->schedule;
  memset(rep, 0, sizeof *rep);
  rep->faulted = faulted;
  rep->ok = true;
  rep->bin_ns = s->bin_ns;
  rep->transport.counted = jct__session_counted(s);
  if (s->broken) {
    fail_rep(s, rep, "an earlier repetition failed");
    return 0;
  }
  if (!(rep->timing = calloc(sch->nops, sizeof *rep->timing))) return JCT_ENOMEM;
  jct__chain_set_rep(s->chain, index);
  if (s->conn_before && !(rep->conn = calloc(sch->nconns, sizeof *rep->conn))) {
    jct__rep_clear(rep);
    return JCT_ENOMEM;
  }
  if (jct__chain_set_enabled(s->chain, faulted)) {
    fail_rep(s, rep, "cannot put the injectors on the switch's path");
    return 0;
  }
  snapshot_t before, after;
  snap(s, &before);
  jct_fabric_link_stats_t *links_before = NULL;
  uint32_t nlinks = 0;
  if (s->fab) jct_fabric_links_reset_peaks(s->fab); /* this repetition's peaks */
  if (jct__linkstats_snap(s->fab, &links_before, &nlinks)) {
    jct__rep_clear(rep);
    return JCT_ENOMEM;
  }
  if (s->conn_before) s->ops->conn_counts(s->b, s->conn_before);
  /* Generous: 20 times the model, 10 s, every retry of one message
   * running out its timer twice over (4.096 us * 2^timeout each), and every
   * op's gap (a capture's pauses: compute, a test's TCP exchange), which
   * the model leaves out. */
  uint64_t qp_timeout_ns = 4096ull << (s->o->timeout < 31 ? s->o->timeout : 31);
  uint64_t limit_ns = (uint64_t)(s->model_ns * 20) + 10000000000u +
                      2 * (uint64_t)(s->o->retry_cnt + 1) * qp_timeout_ns + s->gaps_ns;
  /* The limit is in emulated time; dilated F times, a busy hang would cost
   * F times it in wall time. The run's wall budget bounds each repetition
   * too: the estimate it was admitted on said it would fit. */
  uint64_t budget_ns = s->o->wall_budget_ns ? s->o->wall_budget_ns : JCT_RUN_WALL_BUDGET_NS;
  s->loop.wall_deadline_ns = jct_wall_ns() + budget_ns;
  s->loop.wall_passed = false;
  /* A failure withholds the loss figure; the re-sent packets cannot be. */
  int rc = s->watch ? jct__loss_watch_begin(s->watch, faulted) : 0;
  if (rc && s->ops->resent_on_wire) {
    free(links_before);
    return rc;
  }
  rc = s->ops->rep(s->b, index, limit_ns, rep);
  s->loop.wall_deadline_ns = 0;
  if (rc) {
    free(links_before);
    return rc;
  }
  if (s->loop.wall_passed) {
    char why[192];
    snprintf(why, sizeof why,
             "repetition %u passed the --wall-budget of %.0f s of wall time (time dilated x%g) "
             "before it finished",
             index + 1, (double)budget_ns / 1e9, jct_clock_tdf());
    jct__rep_fail(rep, why);
  }
  int sig = jct__interrupt_signal();
  /* A repetition the backend failed for its own reason keeps it (a rank
   * that died under mpirun, which then ends the others with SIGTERM); one
   * cut short by the signal says so. */
  if (sig && (rep->ok || !s->ops->failed(s->b, NULL, 0)))
    jct__rep_fail(rep, sig == SIGINT ? "interrupted (SIGINT)" : "interrupted (SIGTERM)");
  if (!rep->ok) s->broken = true;
  /* Draining is waited for in wall time (a lost last ACK leaves a QP
   * waiting on its timer; the next repetition starts anyway). */
  jct__loop_run_until(&s->loop, drained_or_failed, NULL, s,
                      jct_now_ns() + jct_clock_wall_span_ns(DRAIN_NS));
  /* A delay at a host holds frames in that host's qdisc, where the drain
   * does not see them: let them leave before the next repetition starts,
   * or a baseline would receive a faulted repetition's late frames. */
  uint64_t hold_ns = faulted ? jct__chain_host_hold_ns(s->chain) : 0;
  if (hold_ns) jct__loop_run_until(&s->loop, failed_only, NULL, s, jct_now_ns() + hold_ns);
  /* A queue the PFC watchdog declared in storm stays so until restoration
   * (200 ms after the storm's last pause frame): the next repetition waits
   * for it, or a baseline would start on a queue that drops (action drop)
   * and the restore would count there. 2 s: the restoration's tenfold. */
  if (faulted && s->fab && jct_fabric_wd_storming(s->fab))
    jct__loop_run_until(&s->loop, restored_or_failed, NULL, s,
                        jct_now_ns() + (uint64_t)(2e9 * jct_clock_tdf()));
  int watched = s->watch ? jct__loss_watch_end(s->watch) : 0; /* its drain's retransmissions in */
  if (watched && s->ops->resent_on_wire) {
    free(links_before);
    return watched;
  }
  jct__chain_collect(s->chain); /* the host injectors' counters, from their kernels */
  /* The counters include what happened while the fabric drained, so the
   * report and the fault log agree. */
  snap(s, &after);
  rc = jct__linkstats_snap(s->fab, &rep->links, &rep->nlinks);
  if (!rc) jct__linkstats_diff(rep->links, links_before, rep->nlinks);
  free(links_before);
  if (rc) return rc;
  if (rep->conn) {
    s->ops->conn_counts(s->b, rep->conn);
    for (uint32_t c = 0; c < sch->nconns; c++)
      diff_u64(&rep->conn[c], &rep->conn[c], &s->conn_before[c], sizeof rep->conn[c]);
  }
  diff_u64(&rep->transport, &after.transport, &before.transport,
           offsetof(jct_transport_stats_t, counted));
  diff_u64(&rep->fabric, &after.fabric, &before.fabric, sizeof rep->fabric);
  rep->fabric.queued_frames = after.fabric.queued_frames; /* levels, not counters */
  rep->fabric.wire_frames = after.fabric.wire_frames;
  rep->fabric.pool_used_bytes = after.fabric.pool_used_bytes;
  rep->fabric.pool_bytes = after.fabric.pool_bytes;
  rep->paused_ns = after.paused_ns - before.paused_ns;
  if (faulted)
    for (size_t i = 0; i < jct__chain_len(s->chain) && i < JCT_RUN_MAX_INJECTORS; i++)
      rep->injectors[i] = jct__chain_get(s->chain, i)->stats;
  if (faulted && rep->ok) idle_targets(s, rep);
  return 0;
}

int jct__session_warmup(jct__session_t *s, char *why, size_t len) {
  why[0] = 0;
  for (uint32_t i = 0; i < s->o->warmup; i++) {
    jct_rep_t rep;
    int rc = jct__session_rep(s, false, i, &rep);
    jct__rep_clear(&rep);
    if (rc) return rc;
    if (!rep.ok) {
      snprintf(why, len, "warm-up repetition %u: %.200s", i + 1, rep.why);
      return 0;
    }
  }
  /* The loop's lateness and CPU time are the measured repetitions'. */
  if (s->o->warmup) restart_health(s);
  if (s->watch) jct__loss_watch_reset(s->watch);
  return 0;
}

void jct__session_health(jct__session_t *s, jct__session_health_t *h) {
  memset(h, 0, sizeof *h);
  h->wall_ns = jct_wall_ns() - s->wall0;
  h->tdf = jct_clock_tdf();
  double wall = (double)h->wall_ns * 1e-9;
  h->cpu_busy = wall > 0 ? (cpu_seconds() - s->cpu0) / wall : 0;
  h->lateness_p50_ns = jct_lateness_quantile_ns(&s->loop.clock.lateness, 0.5);
  h->lateness_p99_ns = jct_lateness_quantile_ns(&s->loop.clock.lateness, 0.99);
  h->lateness_max_ns = s->loop.clock.lateness.max_ns;
  h->skipped_ns = s->loop.clock.skipped_ns - s->skipped0;
  jct_fabric_harness_stats_t hs = {0};
  if (s->fab) jct_fabric_harness_stats(s->fab, &hs);
  h->paces = s->fab != NULL;
  uint64_t fab = hs.inject_failures + hs.pcap_drops + hs.truncated;
  h->harness_losses = fab + s->ops->harness_losses(s->b);
  if (h->harness_losses)
    snprintf(h->harness_why, sizeof h->harness_why,
             "the harness lost %llu frames by its own fault (pcap_inject %llu, pcap drops %llu, "
             "longer than the snap length %llu, socket drops and send failures %llu)",
             (unsigned long long)h->harness_losses, (unsigned long long)hs.inject_failures,
             (unsigned long long)hs.pcap_drops, (unsigned long long)hs.truncated,
             (unsigned long long)(h->harness_losses - fab));
}

bool jct__session_loop_bound(const jct__session_health_t *h, double packet_time_ns, char *why,
                             size_t len) {
  if (!h->paces || (double)h->lateness_p99_ns <= packet_time_ns) return false;
  /* Both in emulated time: under dilation F, wall lateness / F against the
   * emulated packet time (clock.h). */
  double f = h->tdf;
  snprintf(why, len,
           "the event loop's p99 lateness (%.3f us) exceeds one packet's time at this rate "
           "(%.3f us): the loop, not the emulated link, set the pace; %s",
           (double)h->lateness_p99_ns / 1e3, packet_time_ns / 1e3,
           f > 1 ? "dilate more (a higher --tdf, a lower --rate-ceiling)"
                 : "lower --rate, or dilate time (--tdf, --rate-ceiling)");
  return true;
}

uint32_t jct__session_counted(const jct__session_t *s) {
  return s->ops->counted_of ? s->ops->counted_of(s->b) : s->ops->counted;
}

bool jct__session_counts_per_qp(const jct__session_t *s) {
  return s->conn_before != NULL;
}

void jct__session_dilation(const jct__session_t *s, jct_run_dilation_t *d) {
  *d = s->dil;
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
  free(rep->conn);
  free(rep->dev_rank);
  rep->dev_rank = NULL;
  free(rep->links);
  rep->timing = NULL;
  rep->conn = NULL;
  rep->links = NULL;
  rep->nlinks = 0;
  jct_series_free(rep->series);
  rep->series = NULL;
}

void jct__session_free(jct__session_t *s) {
  if (!s) return;
  if (s->b) s->ops->down(s->b);
  jct__chain_free(s->chain);
  jct__loss_watch_free(s->watch);
  free(s->conn_before);
  if (s->fault_log) fclose(s->fault_log);
  jct__loop_close(&s->loop);
  jct_clock_set_tdf(1); /* the process's clock undilated again */
  free(s);
}

int jct__session_new(jct__session_t **out, const jct_run_opts_t *o, uint64_t bin_ns, char *err,
                     size_t errlen) {
  *out = NULL;
  if ((unsigned)o->transport >= sizeof backends / sizeof *backends)
    return jct__errf(err, errlen, JCT_EINVAL, "transport %d: no such transport", (int)o->transport);
  jct__session_t *s = calloc(1, sizeof *s);
  if (!s) return JCT_ENOMEM;
  s->o = o;
  s->ops = backends[o->transport];
  if (o->world) {
#ifdef JCT_HAVE_MPI
    s->ops = o->transport == JCT_TRANSPORT_VERBS ? &jct__backend_ranks_verbs : &jct__backend_ranks;
#else
    free(s);
    return jct__errf(err, errlen, JCT_EINVAL, "jctlab rank: not supported in this build (no MPI)");
#endif
  }
  s->bin_ns = bin_ns;
  size_t nconns = o->schedule->nconns ? o->schedule->nconns : 1;
  if (s->ops->conn_counts && !(s->conn_before = calloc(nconns, sizeof *s->conn_before))) {
    free(s);
    return JCT_ENOMEM;
  }
  jct_run_result_t model;
  jct_run_model(o, &model);
  s->model_ns = model.model_ns;
  for (uint32_t i = 0; i < o->schedule->nops; i++) { /* saturating: a limit is still a limit */
    uint64_t g = o->schedule->ops[i].gap_ns, cap = UINT64_MAX / 4;
    s->gaps_ns = g > cap - s->gaps_ns ? cap : s->gaps_ns + g;
  }
  /* Dilate the process's clock before its loop has a timer (clock.h). */
  jct_run_dilation(o, &s->dil);
  int rc = jct_clock_set_tdf(s->dil.tdf);
  if (rc) {
    double tdf = s->dil.tdf;
    free(s->conn_before);
    free(s);
    return jct__errf(err, errlen, rc, "--tdf %g is not a factor from 1 to %.0f", tdf,
                     JCT_CLOCK_MAX_TDF);
  }
  rc = jct__loop_open(&s->loop, SPIN_NS, err, errlen);
  /* The injectors before anything else is built: a bad spec is bad input. */
  if (rc || (rc = new_chain(s, err, errlen))) {
    jct__session_free(s);
    return rc;
  }
  /* What the injectors add: the lab's clear-to-send timer past their
   * longest stall (vm_stalls.h). */
  s->dil.verbs_cts_timeout_exp = jct__vm_stalls_run_cts_timeout(o, &s->dil, s->chain);
  /* The switch has one port per rank (and a leaf-spine fabric its links
   * after them): an injector on another sees nothing (and a pause storm
   * there would be for a rank that does not exist). */
  uint32_t nlinks = o->clos && o->clos->leaves ? 2 * o->clos->leaves * o->clos->spines : 0;
  for (size_t i = 0; i < jct__chain_len(s->chain); i++) {
    const jct_injector_t *inj = jct__chain_get(s->chain, i);
    if (!inj->all_ports && inj->port >= o->schedule->nranks + nlinks) {
      rc = jct__errf(err, errlen, JCT_EINVAL,
                     "%s: port=%u does not exist: the fabric's ports are 0 to %u, one per rank%s",
                     inj->spec, inj->port, o->schedule->nranks - 1,
                     nlinks ? ", or a link's name (leaf0:spine1)" : "");
      jct__session_free(s);
      return rc;
    }
    /* Only the lab's VMs can be stopped (lab.h, jct__lab_freeze). */
    if (inj->ops->stalls_host && (!jct_run_in_lab(o) || o->world)) {
      rc = jct__errf(err, errlen, JCT_EINVAL,
                     "%s: a stall stops its sender's host, which only the lab's VMs can "
                     "(--transport verbs --lab N); uroce holds a capture's transmit stalls in "
                     "its own QPs",
                     inj->spec);
      jct__session_free(s);
      return rc;
    }
  }
  uint32_t pcap_port = 0;
  if (o->pcap_port && (rc = pcap_port_number(o, &pcap_port, err, errlen))) {
    jct__session_free(s);
    return rc;
  }
  if ((o->watch_losses || s->ops->resent_on_wire) && (rc = jct__loss_watch_new(&s->watch))) {
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
                          .data_prio = JCT__DATA_PRIO,
                          .pfc = o->pfc,
                          .ecn = o->ecn,
                          .ecn_kmin_bytes = o->ecn_kmin_bytes,
                          .ecn_kmax_bytes = o->ecn_kmax_bytes,
                          .ecn_pmax = o->ecn_pmax,
                          .pfc_watchdog = o->pfc_watchdog,
                          .watchdog_forward = o->watchdog_forward,
                          .pcap_out = o->pcap_out,
                          .pcap_one_port = o->pcap_port != NULL,
                          .pcap_port = pcap_port,
                          .pcap_in = o->pcap_in,
                          .pcap_snaplen = o->pcap_snaplen_bytes,
                          .pcap_file_bytes = o->pcap_file_bytes,
                          .pcap_files = o->pcap_files,
                          .pcap_drops = o->pcap_drops,
                          .fault_log = s->fault_log,
                          .tap = s->watch ? jct__loss_watch_frame : NULL,
                          .tap_arg = s->watch,
                          .chain = s->chain,
                          .clos = o->clos};
  jct__backend_env_t env = {.loop = &s->loop,
                            .o = o,
                            .dilation = &s->dil,
                            .fabric = &fo,
                            .watch = s->ops->resent_on_wire ? s->watch : NULL};
  if ((rc = s->ops->up(&s->b, &env, err, errlen))) {
    s->b = NULL;
    jct__session_free(s);
    return rc;
  }
  s->fab = s->ops->fabric(s->b);
  if (!s->fab && !o->watch_losses) { /* no switch, no wire: nothing to watch (backend.h) */
    jct__loss_watch_free(s->watch);
    s->watch = NULL;
  }
  if (s->fab) {
    /* Let the links come up; what the loop did until then is no lateness
     * of a repetition. */
    jct__loop_run_until(&s->loop, failed_only, NULL, s,
                        jct_now_ns() + jct_clock_wall_span_ns(SETTLE_NS)); /* wall time */
  }
  restart_health(s);
  *out = s;
  return 0;
}

bool jct__session_losses(jct__session_t *s, bool faulted, uint64_t *median_ns, uint64_t *n,
                         uint64_t *spread) {
  *median_ns = *n = 0;
  memset(spread, 0, JCT_FIGURE_BINS * sizeof *spread);
  return s->o->watch_losses && jct__loss_watch_median(s->watch, faulted, median_ns, n, spread);
}

bool jct__session_go_back(jct__session_t *s, bool faulted, uint64_t *median_psns, uint64_t *n,
                          uint64_t *spread) {
  *median_psns = *n = 0;
  memset(spread, 0, JCT_FIGURE_BINS * sizeof *spread);
  return s->o->watch_losses && jct__loss_watch_go_back(s->watch, faulted, median_psns, n, spread);
}

bool jct__session_watches(const jct__session_t *s) {
  return s->watch != NULL;
}

jct_fabric_t *jct__session_fabric(jct__session_t *s) {
  return s->fab;
}
