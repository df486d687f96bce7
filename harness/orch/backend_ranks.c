/* The ranks backend (backend.h): `jctlab rank`'s rank 0, one MPI task of
 * the job (rank_world.h). It runs the emulated switch between the ranks'
 * namespaces and its own rank's QP ends, as the uroce backend does for
 * every rank; every other rank is a task of its own (rank_worker.c),
 * bootstrapped, started and gathered over MPI.
 *
 * A repetition: RUN to every worker, a barrier, rank 0's start time t0
 * (now + START_LEAD_NS, its clock) broadcast; every task starts its
 * executor at t0 on its own clock (t0 plus its offset from rank 0's,
 * world.h), runs its part until its sends are acknowledged and its
 * receives done, and reports its ops' timings on rank 0's clock with its
 * counters and its loop's lateness (added to rank 0's: the session's
 * loop-bound verdict covers every rank's loop). JCT is DESIGN.md's (decision 5): the first send's start to the
 * last receive's completion, both on rank 0's clock, so it carries the
 * tasks' alignment error (reported with the result).
 *
 * A task that dies or stops answering makes the repetition fail with the
 * rank named: rank 0 polls the liveness of the tasks on its own host
 * (/proc/PID/stat), names a task it has not heard from (ALIVE, then its
 * report) for the run's silent_after_ns (run.h), wherever it runs, and a report that has
 * not come by the repetition's limit names the ranks it is missing. A report that is not one (short,
 * or of another schedule) fails it at once, naming the rank.
 *
 * On verbs (jct__backend_ranks_verbs) there is no switch and no
 * namespace: every task, rank 0 too, opens its own RDMA device and
 * connects its QPs by hand over MPI (rank_verbs.c), the traffic crosses
 * the hosts' own fabric, and each task reads its device's counters around
 * every repetition (rdma_sysfs.h) and reports them with its timings.
 * Injectors run at the hosts only (at=host:RANK; one at the switch has
 * nowhere to act, refused before any task is set up): each task runs its
 * rank's on the netdev of its RDMA device's GID with the agent's code
 * (harness/lab/agent_host.h), told them in UP, restarting them with each
 * repetition, acting in faulted ones only; its report carries what they
 * did, which rank 0 puts into its chain's counters and fault log
 * (host_faults.h), as jctlab run --agents does with its agents'. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errf.h"
#include "harness/base/interrupt.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"
#include "schedule/schedule_json.h"
#include "backend.h"
#include "host_faults.h"
#include "rank_world.h"
#include "uroce_opts.h"
#ifdef JCT_HAVE_VERBS
#include "harness/lab/agent_host.h"
#include "harness/transport/rdma_sysfs.h"
#endif

#define START_LEAD_NS 5000000u  /* t0 this far after the barrier: every task arms it */
#define WAKE_MS 1               /* rank 0's loop wakes this often to read reports */
#define LIVENESS_NS 20000000u   /* and looks at its host's tasks this often */
#define GONE_WAIT_NS 3000000000u /* a worker has this long to close its QP ends */

typedef struct {
  jct__loop_t *loop;
  const jct_run_opts_t *o;
  jct__rank_world_t *w;
  jct_fabric_t *fab; /* uroce's switch; NULL on verbs */
  bool verbs;
  jct__chain_t *chain; /* verbs: the run's injectors, every one at a host */
  json_t **whost;      /* verbs: what each task's host injectors did, this repetition */
  jct__rank_part_t part;
  jct_dcqcn_params_t dcqcn;
  uint32_t *sq_psn;
  uint32_t sent_up; /* workers 1 .. sent_up - 1 got UP (and hold QP ends) */
  /* The workers' latest reports (cumulative counters), by task. */
  jct_uroce_stats_t *wstats;
  uint64_t *wpaused, *wlosses;
  jct_conn_counts_t *wconn; /* size * nconns */
  /* verbs: each task's device counters moved in the repetition (rank 0's
   * read here), its device and port; rank 0's before it; the total */
  jct_dev_counters_t *wdev, dev0;
  char (*wdevice)[64];
  uint32_t *wport;
  jct_transport_stats_t vtotal;
  /* The current repetition. */
  uint32_t index;
  bool *reported;
  uint64_t *alive_ns; /* when each task was last heard from (rank_world.h's ALIVE) */
  jct_op_timing_t *timing; /* merged, absolute (rank 0's clock) */
  uint64_t next_liveness_ns;
  uv_timer_t wake;
  bool wake_open;
  int failed;
  char why[320];
} ranks_t;

static char my_host[64];

static void fail(ranks_t *r, const char *why) {
  if (r->failed) return;
  r->failed = JCT_EIO;
  snprintf(r->why, sizeof r->why, "%s", why);
}

/* For suite rank: JCT_RANK_TEST_REMOTE=1 makes rank 0 treat every task as
 * on another host (its /proc unseen), so only ALIVE tells it of a death. */
static bool remote_for_test(void) {
  const char *v = getenv("JCT_RANK_TEST_REMOTE");
  return v && !strcmp(v, "1");
}

/* A task on this host that is gone or a zombie. */
static bool dead(const ranks_t *r, uint32_t i) {
  if (strcmp(r->w->host[i], my_host) || remote_for_test())
    return false; /* another host: its silence tells (silent()) */
  char path[48], stat[256];
  snprintf(path, sizeof path, "/proc/%d/stat", r->w->pid[i]);
  FILE *f = fopen(path, "r");
  if (!f) return true;
  size_t n = fread(stat, 1, sizeof stat - 1, f);
  fclose(f);
  stat[n] = 0;
  const char *p = strrchr(stat, ')');
  return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/* The first worker on this host that died, named; 0 when none. */
static uint32_t find_dead(ranks_t *r) {
  for (uint32_t i = 1; i < r->w->size; i++)
    if (dead(r, i)) {
      char why[200];
      snprintf(why, sizeof why, "rank %u (pid %d on %s) died", i, r->w->pid[i], r->w->host[i]);
      fail(r, why);
      r->w->lost = true;
      snprintf(r->w->lost_why, sizeof r->w->lost_why, "%s", why);
      return i;
    }
  return 0;
}

/* The first worker that has not reported and was not heard from for
 * silent_after_ns (dead on another host, or its host unreachable),
 * named; 0 when none. */
static uint32_t find_silent(ranks_t *r, uint64_t now) {
  uint64_t silent_ns = r->o->silent_after_ns ? r->o->silent_after_ns : JCT_RUN_SILENT_AFTER_NS;
  for (uint32_t i = 1; i < r->w->size; i++)
    if (!r->reported[i] && now > r->alive_ns[i] + silent_ns) {
      char why[220];
      snprintf(why, sizeof why,
               "rank %u (pid %d on %s) went silent: nothing from it for %.1f s during repetition "
               "%u (it died, or its host is unreachable)",
               i, r->w->pid[i], r->w->host[i], (double)(now - r->alive_ns[i]) / 1e9,
               r->index + 1);
      fail(r, why);
      r->w->lost = true;
      snprintf(r->w->lost_why, sizeof r->w->lost_why, "%s", why);
      return i;
    }
  return 0;
}

static void on_done(ranks_t *r, uint32_t from, const char *buf, size_t len) {
  const jct_schedule_t *s = r->o->schedule;
  jct__rank_done_t d;
  size_t want = sizeof d + s->nops * sizeof(jct_op_timing_t) + s->nconns * sizeof(jct_conn_counts_t);
  size_t fixed = want;
  char why[300];
  if (len < sizeof d) { /* not a report: waiting on would only wait out the limit */
    snprintf(why, sizeof why, "rank %u sent a malformed report (%zu bytes, a report has %zu)",
             from, len, want);
    fail(r, why);
    return;
  }
  memcpy(&d, buf, sizeof d);
  d.why[sizeof d.why - 1] = '\0';
  if (d.index != r->index) return; /* a late report of a repetition given up */
  want += d.host_len;
  if (!d.ok && len != want) { /* a worker that failed before it had timings (rank_worker.c) */
    fail(r, d.why[0] ? d.why : "a rank failed without saying why");
    return;
  }
  if (len != want || d.nops != s->nops || d.nconns != s->nconns) {
    snprintf(why, sizeof why, "rank %u sent a report of another schedule", from);
    fail(r, why);
    return;
  }
  r->reported[from] = true;
  jct_lateness_t *l = &r->loop->clock.lateness; /* the session judges every rank's loop */
  l->count += d.lateness.count;
  if (d.lateness.max_ns > l->max_ns) l->max_ns = d.lateness.max_ns;
  for (size_t b = 0; b < JCT_LATENCY_BUCKETS; b++)
    l->bucket[b] += d.lateness.bucket[b];
  r->wstats[from] = d.stats;
  r->wpaused[from] = d.nic_paused_ns;
  r->wlosses[from] = d.harness_losses;
  r->wdev[from] = d.dev;
  memcpy(r->wdevice[from], d.device, sizeof d.device);
  r->wdevice[from][sizeof d.device - 1] = 0;
  r->wport[from] = d.port;
  if (d.host_len) {
    json_decref(r->whost[from]);
    if (!(r->whost[from] = json_loadb(buf + fixed, d.host_len, 0, NULL))) {
      snprintf(why, sizeof why, "rank %u sent its host's injectors' counters unreadable", from);
      fail(r, why);
    }
  }
  const jct_op_timing_t *t = (const jct_op_timing_t *)(buf + sizeof d);
  memcpy(&r->wconn[(size_t)from * s->nconns], t + s->nops, s->nconns * sizeof(jct_conn_counts_t));
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_conn_t *c = &s->conns[s->ops[i].conn];
    if (c->src == from) {
      r->timing[i].ready_ns = t[i].ready_ns;
      r->timing[i].start_ns = t[i].start_ns;
    }
    if (c->dst == from) r->timing[i].done_ns = t[i].done_ns;
  }
  if (!d.ok) fail(r, d.why);
}

/* Read what the workers sent; every LIVENESS_NS look at this host's. */
static void poll_world(ranks_t *r) {
  for (;;) {
    void *buf = NULL;
    size_t len = 0;
    uint32_t from = 0;
    int tag = 0;
    int rc = jct__world_poll(JCT__WORLD_ANY, JCT__TAG_DONE, &buf, &len, &from, &tag);
    if (rc <= 0) {
      if (rc < 0) fail(r, "MPI: receiving the ranks' reports failed");
      break;
    }
    if (from < r->w->size) on_done(r, from, buf, len);
    free(buf);
  }
  uint64_t now = jct_now_ns();
  for (;;) { /* ALIVE: no payload */
    void *buf = NULL;
    size_t len = 0;
    uint32_t from = 0;
    int tag = 0;
    if (jct__world_poll(JCT__WORLD_ANY, JCT__TAG_ALIVE, &buf, &len, &from, &tag) <= 0) break;
    free(buf);
    if (from < r->w->size) r->alive_ns[from] = now;
  }
  if (now >= r->next_liveness_ns) {
    r->next_liveness_ns = now + LIVENESS_NS;
    if (!find_dead(r)) find_silent(r, now);
  }
}

static void turn(void *arg) {
  ranks_t *r = arg;
  jct__rank_part_turn(&r->part);
  poll_world(r);
}

static bool all_done(void *arg) {
  ranks_t *r = arg;
  if (r->failed || jct__rank_part_failed(&r->part, NULL, 0)) return true;
  if (!jct__rank_part_done(&r->part)) return false;
  for (uint32_t i = 1; i < r->w->size; i++)
    if (!r->reported[i]) return false;
  return true;
}

static void on_wake(uv_timer_t *t) {
  (void)t; /* the loop turned: turn() reads the reports */
}

static int send_all(ranks_t *r, int tag, const void *buf, size_t len) {
  for (uint32_t i = 1; i < r->w->size; i++)
    if (jct__world_send(i, tag, buf, len)) return JCT_EIO;
  return 0;
}

/* verbs: rank 0's device counters after the repetition, and every rank's
 * into rep: per rank the ones the scenario names (dev_rank), summed over
 * devices in dev, a device that ranks share (one host's rxe0 for two
 * tasks) counted once. */
static void verbs_counters(ranks_t *r, jct_rep_t *rep) {
#ifdef JCT_HAVE_VERBS
  jct_dev_counters_t after;
  jct__rank_verbs_counters(r->part.verbs, &r->o->rdma, true, &after, r->wdevice[0], &r->wport[0]);
  jct__rdma_counters_delta(&r->dev0, &after, &r->wdev[0]);
  uint32_t n = r->w->size;
  memset(&rep->dev, 0, sizeof rep->dev);
  for (uint32_t i = 0; i < n; i++) {
    bool seen = false;
    for (uint32_t k = 0; k < i && !seen; k++)
      seen = !strcmp(r->w->host[k], r->w->host[i]) && !strcmp(r->wdevice[k], r->wdevice[i]) &&
             r->wport[k] == r->wport[i];
    for (uint32_t c = 0; !seen && c < r->wdev[i].n; c++)
      jct_dev_counters_add(&rep->dev, r->wdev[i].c[c].name, r->wdev[i].c[c].value);
  }
  if ((rep->dev_rank = calloc(n, sizeof *rep->dev_rank)))
    for (uint32_t i = 0; i < n; i++)
      jct__rdma_counters_pick(&r->wdev[i], &r->o->rdma, &rep->dev_rank[i]);
  jct_transport_stats_t moved;
  jct__verbs_tstats(&rep->dev, &moved);
  jct_transport_stats_add(&r->vtotal, &moved);
#else
  (void)r, (void)rep;
#endif
}

static int run_rep(void *b, uint32_t index, uint64_t limit_ns, jct_rep_t *rep) {
  ranks_t *r = b;
  const jct_schedule_t *s = r->o->schedule;
  r->index = index;
  memset(r->reported, 0, r->w->size * sizeof *r->reported);
  memset(r->timing, 0, s->nops * sizeof *r->timing);
  jct__rank_run_t run = {.index = index, .faulted = rep->faulted, .limit_ns = limit_ns};
  uint64_t t0 = 0;
  if (send_all(r, JCT__TAG_RUN, &run, sizeof run) || jct__world_barrier() ||
      ((t0 = jct_now_ns() + START_LEAD_NS), jct__world_bcast(&t0, sizeof t0))) {
    jct__rep_fail(rep, "MPI: starting the repetition on every rank failed");
    r->w->lost = true;
    snprintf(r->w->lost_why, sizeof r->w->lost_why, "%s", rep->why);
    return 0;
  }
  if (r->fab) jct_fabric_start(r->fab, jct_now_ns());
  else if (r->chain)
    jct__chain_start(r->chain, jct_now_ns()); /* the fault log's repetition */
  for (uint32_t i = 0; i < r->w->size; i++) {
    json_decref(r->whost[i]);
    r->whost[i] = NULL;
  }
  for (uint32_t i = 0; i < r->w->size; i++)
    r->alive_ns[i] = t0; /* the workers start at t0 */
#ifdef JCT_HAVE_VERBS
  if (r->verbs)
    jct__rank_verbs_counters(r->part.verbs, &r->o->rdma, false, &r->dev0, r->wdevice[0],
                             &r->wport[0]);
#endif
  int rc = jct__rank_part_begin(&r->part, t0, rep->faulted);
  if (rc == JCT_EIO) {
    jct__rep_fail(rep, "rank 0: its host's kernel would not restart its injectors' programs");
    return 0;
  }
  if (rc) return rc;
  uv_timer_start(&r->wake, on_wake, WAKE_MS, WAKE_MS);
  bool done = jct__loop_run_until(r->loop, all_done, turn, r, t0 + limit_ns);
  uv_timer_stop(&r->wake);
  poll_world(r);
  char why[320];
  if (jct__rank_part_failed(&r->part, why, sizeof why)) {
    char full[340];
    snprintf(full, sizeof full, "rank 0: %s", why);
    jct__rep_fail(rep, full);
  } else if (r->failed || find_dead(r)) {
    jct__rep_fail(rep, r->why);
  } else if (!done) {
    int n = snprintf(why, sizeof why, "repetition %u did not finish in %.1f s:", index + 1,
                     (double)limit_ns / 1e9);
    if (!jct__rank_part_done(&r->part))
      n += snprintf(why + n, sizeof why - (size_t)n, " rank 0's part not done;");
    bool missing = false;
    for (uint32_t i = 1; i < r->w->size && (size_t)n < sizeof why; i++)
      if (!r->reported[i]) {
        n += snprintf(why + n, sizeof why - (size_t)n, " rank %u sent no report", i);
        missing = true;
      }
    if (missing) {
      r->w->lost = true; /* it may never answer again */
      snprintf(r->w->lost_why, sizeof r->w->lost_why, "%.200s", why);
    }
    jct__rep_fail(rep, why);
  }
  jct__rank_part_timing(&r->part, 0, r->timing);
  jct__rank_part_end(&r->part);
  r->whost[0] = jct__rank_part_host_done(&r->part);
  for (uint32_t i = 0; r->chain && i < r->w->size; i++) /* counters and fault log */
    jct__host_faults_results(r->chain, i, r->whost[i]);
  uint64_t first = UINT64_MAX, last = 0;
  bool all = true;
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_timing_t *t = &r->timing[i];
    if (t->start_ns && t->start_ns < first) first = t->start_ns;
    if (t->done_ns > last) last = t->done_ns;
    all = all && t->done_ns;
    jct_op_timing_t *o = &rep->timing[i];
    o->ready_ns = t->ready_ns > t0 ? t->ready_ns - t0 : 0;
    o->start_ns = t->start_ns > t0 ? t->start_ns - t0 : 0;
    o->done_ns = t->done_ns > t0 ? t->done_ns - t0 : 0;
  }
  rep->jct_ns = all && rep->ok && last > first ? last - first : 0;
  if (r->verbs) verbs_counters(r, rep);
  return 0;
}

static jct_fabric_t *fabric(const void *b) {
  return ((const ranks_t *)b)->fab;
}

static int failed(void *b, char *why, size_t len) {
  ranks_t *r = b;
  if (jct__rank_part_failed(&r->part, why, len)) return JCT_EIO;
  if (r->failed && why) snprintf(why, len, "%s", r->why);
  return r->failed;
}

static bool quiet(const void *b) {
  return jct__rank_part_quiet(&((const ranks_t *)b)->part);
}

static void stats(const void *b, jct_transport_stats_t *t) {
  const ranks_t *r = b;
  if (r->verbs) {
    *t = r->vtotal;
    t->counted = JCT__VERBS_COUNTED;
    return;
  }
  jct_uroce_stats_t sum;
  jct__ranks_stats(r->part.ranks, &sum);
  uint64_t paused = jct__ranks_nic_paused_ns(r->part.ranks);
  for (uint32_t i = 1; i < r->w->size; i++) {
    const uint64_t *a = (const uint64_t *)&r->wstats[i];
    uint64_t *s = (uint64_t *)&sum;
    for (size_t k = 0; k < sizeof sum / sizeof(uint64_t); k++)
      s[k] += a[k];
    paused += r->wpaused[i];
  }
  jct__uroce_tstats(&sum, paused, t);
}

static void conn_counts(const void *b, jct_conn_counts_t *out) {
  const ranks_t *r = b;
  uint32_t n = r->o->schedule->nconns;
  jct__uroce_conn_counts(r->part.ranks, n, out); /* rank 0's, then the workers' */
  for (uint32_t c = 0; c < n; c++) {
    for (uint32_t i = 1; i < r->w->size; i++) {
      const jct_conn_counts_t *w = &r->wconn[(size_t)i * n + c];
      out[c].retx_packets += w->retx_packets;
      out[c].rate_cuts += w->rate_cuts;
      out[c].below_line_rate_ns += w->below_line_rate_ns;
    }
  }
}

static uint64_t harness_losses(const void *b) {
  const ranks_t *r = b;
  uint64_t n = r->part.ranks ? jct__ranks_harness_losses(r->part.ranks) : 0;
  for (uint32_t i = 1; i < r->w->size; i++)
    n += r->wlosses[i];
  return n;
}

/* Every worker that got UP closes its QP ends before the namespaces go;
 * one that does not answer in GONE_WAIT_NS is given up (the world lost). */
static void workers_down(ranks_t *r) {
  /* A world that lost a task, or a launcher ending the job (SIGTERM comes
   * before SIGKILL: Open MPI's odls_base_sigkill_timeout, 1 s), has no time
   * for goodbyes: the result is written, and the tasks end with the job. */
  if (r->w->lost || jct__interrupt_signal()) {
    r->w->lost = true;
    if (!r->w->lost_why[0])
      snprintf(r->w->lost_why, sizeof r->w->lost_why, "interrupted: the ranks were not waited for");
    r->sent_up = 0;
    return;
  }
  for (uint32_t i = 1; i < r->sent_up; i++) {
    if (jct__world_send(i, JCT__TAG_DOWN, NULL, 0)) {
      r->w->lost = true;
      continue;
    }
    uint64_t until = jct_now_ns() + GONE_WAIT_NS;
    for (;;) {
      void *buf = NULL;
      size_t len = 0;
      int rc = jct__world_poll(i, JCT__TAG_GONE, &buf, &len, NULL, NULL);
      free(buf);
      if (rc == 1) break;
      /* Reports of a repetition given up may still come: drop them. */
      rc = jct__world_poll(i, JCT__TAG_DONE, &buf, &len, NULL, NULL);
      free(buf);
      if (rc < 0 || jct_now_ns() > until || dead(r, i)) {
        r->w->lost = true;
        if (!r->w->lost_why[0])
          snprintf(r->w->lost_why, sizeof r->w->lost_why, "rank %u did not close its QPs", i);
        break;
      }
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
  }
  r->sent_up = 0;
}

static void on_wake_closed(uv_handle_t *h) {
  free(h->data);
}

static void down(void *b) {
  ranks_t *r = b;
  workers_down(r);
  jct__ranks_free(r->part.ranks);
#ifdef JCT_HAVE_VERBS
  jct__agent_host_free(r->part.host); /* its programs off, its link up, its guard gone */
  jct__rank_verbs_free(r->part.verbs);
#endif
  for (uint32_t i = 0; r->whost && i < r->w->size; i++)
    json_decref(r->whost[i]);
  free(r->whost);
  jct_fabric_free(r->fab);
  free(r->wdev);
  free(r->wdevice);
  free(r->wport);
  free(r->sq_psn);
  free(r->wstats);
  free(r->wpaused);
  free(r->wlosses);
  free(r->wconn);
  free(r->reported);
  free(r->alive_ns);
  free(r->timing);
  if (r->wake_open) { /* freed once the loop has closed the timer */
    r->wake.data = r;
    uv_close((uv_handle_t *)&r->wake, on_wake_closed);
  } else {
    free(r);
  }
}

/* UP to every worker: rank 0's pid and the worker's namespace fd, the
 * ranks' options, the schedule. */
static int send_up(ranks_t *r, const jct__ranks_opts_t *ro, char *err, size_t errlen) {
  char *text = NULL;
  json_t *j = jct__schedule_json(r->o->schedule);
  if (!j || !(text = json_dumps(j, JSON_COMPACT))) {
    json_decref(j);
    return JCT_ENOMEM;
  }
  json_decref(j);
  size_t tlen = strlen(text);
  /* verbs: each rank's injectors at its host, after the schedule */
  char *host[JCT_SWITCH_MAX_PORTS] = {0};
  size_t hlen[JCT_SWITCH_MAX_PORTS] = {0}, hmax = 0;
  for (uint32_t i = 1; r->chain && i < r->w->size && i < JCT_SWITCH_MAX_PORTS; i++) {
    json_t *l = jct__host_faults_of(r->chain, i, r->o->seed);
    if (l && json_array_size(l)) host[i] = json_dumps(l, JSON_COMPACT);
    json_decref(l);
    hlen[i] = host[i] ? strlen(host[i]) : 0;
    if (hlen[i] > hmax) hmax = hlen[i];
  }
  jct__rank_up_t u = {.pid = (int32_t)getpid(),
                      .ro = *ro,
                      .has_dcqcn = ro->dcqcn != NULL,
                      .dcqcn = r->dcqcn,
                      .psn_seed = r->o->seed ^ 0x6a09e667f3bcc908ull,
                      .nconns = r->o->schedule->nconns,
                      .sched_len = (uint32_t)tlen,
                      .transport = r->verbs ? JCT_TRANSPORT_VERBS : JCT_TRANSPORT_UROCE,
                      .timeout = r->o->timeout,
                      .retry_cnt = r->o->retry_cnt,
                      .tos = r->o->rdma.has_traffic_class ? r->o->rdma.traffic_class
                                                          : JCT_RDMA_DEFAULT_TRAFFIC_CLASS,
                      .max_mtu_bytes = r->o->path_mtu_bytes,
                      .rdma = r->o->rdma};
  u.ro.dcqcn = NULL;
  u.ro.sq_psn = NULL;
  char *buf = malloc(sizeof u + tlen + hmax);
  if (!buf) {
    free(text);
    for (uint32_t i = 0; i < JCT_SWITCH_MAX_PORTS; i++)
      free(host[i]);
    return JCT_ENOMEM;
  }
  int rc = 0;
  const jct_topo_t *topo = r->fab ? jct_fabric_topo(r->fab) : NULL;
  for (uint32_t i = 1; i < r->w->size && !rc; i++) {
    u.nsfd = topo ? jct_topo_rank_nsfd(topo, i) : -1;
    size_t hl = i < JCT_SWITCH_MAX_PORTS ? hlen[i] : 0;
    u.host_len = (uint32_t)hl;
    memcpy(buf, &u, sizeof u);
    memcpy(buf + sizeof u, text, tlen);
    if (hl) memcpy(buf + sizeof u + tlen, host[i], hl);
    if (jct__world_send(i, JCT__TAG_UP, buf, sizeof u + tlen + hl))
      rc = jct__errf(err, errlen, JCT_EIO, "MPI: cannot reach rank %u", i);
    else
      r->sent_up = i + 1;
  }
  free(buf);
  free(text);
  for (uint32_t i = 0; i < JCT_SWITCH_MAX_PORTS; i++)
    free(host[i]);
  return rc;
}

/* verbs: rank 0's device and QPs, connected with every task's over MPI
 * (rank_verbs.c). *why_wins: a failure that is a worker's (its READY's
 * reason is the one to give). */
static int bootstrap_verbs(ranks_t *r, bool *why_wins, char *err, size_t errlen) {
#ifdef JCT_HAVE_VERBS
  jct__rank_up_t u = {.nconns = r->o->schedule->nconns,
                      .timeout = r->o->timeout,
                      .retry_cnt = r->o->retry_cnt,
                      .tos = r->o->rdma.has_traffic_class ? r->o->rdma.traffic_class
                                                          : JCT_RDMA_DEFAULT_TRAFFIC_CLASS,
                      .max_mtu_bytes = r->o->path_mtu_bytes,
                      .rdma = r->o->rdma};
  bool mpi_failed = false;
  char why[300], netdev[64] = "";
  int rc = jct__rank_verbs_up(&r->part.verbs, &r->loop->uv, r->o->schedule, 0, r->w->size, &u,
                              r->o->seed ^ 0x6a09e667f3bcc908ull, 0, &mpi_failed, netdev,
                              sizeof netdev, why, sizeof why);
  r->part = (jct__rank_part_t){
      .loop = r->loop, .s = r->o->schedule, .rank = 0, .verbs = r->part.verbs};
  if (rc && strstr(why, "announced no QP ends")) {
    *why_wins = true;
    return jct__errf(err, errlen, rc, "%s", why);
  }
  if (rc) return jct__errf(err, errlen, rc, "rank 0: %s", why);
  /* Rank 0's own injectors at its host, before any traffic. */
  json_t *mine = r->chain ? jct__host_faults_of(r->chain, 0, r->o->seed) : NULL;
  if (json_array_size(mine) && !netdev[0])
    rc = jct__errf(why, sizeof why, JCT_EINVAL,
                   "at=host: its RDMA device's GID names no network device (gid_attrs/ndevs) "
                   "for its injectors to act on");
  else
    rc = jct__agent_host_new(&r->part.host, mine, netdev, NULL, false, &r->loop->clock, why,
                             sizeof why);
  json_decref(mine);
  return rc ? jct__errf(err, errlen, rc, "rank 0: %s", why) : 0;
#else
  (void)r, (void)why_wins;
  return jct__errf(err, errlen, JCT_EINVAL, "transport verbs: not supported in this build");
#endif
}

/* uroce: every task's QP ends' bootstrap (allgather), then rank 0's own
 * ends. */
static int bootstrap_uroce(ranks_t *r, jct__ranks_opts_t *ro, bool *why_wins, char *err,
                           size_t errlen) {
  const jct_schedule_t *s = r->o->schedule;
  int rc;
  size_t per = 2 * (size_t)s->nconns;
  jct__rank_end_t *mine = calloc(per ? per : 1, sizeof *mine);
  jct__rank_end_t *all = calloc(r->w->size * (per ? per : 1), sizeof *all);
  if (!mine || !all) {
    fprintf(stderr, "jctlab rank: rank 0: out of memory\n");
    jct__world_abort(1); /* the workers wait in the allgather */
  }
  jct__rank_own_ends(s, 0, r->o->seed ^ 0x6a09e667f3bcc908ull, mine);
  bool gathered = !jct__world_allgather(mine, all, per * sizeof *all);
  rc = !gathered ? jct__errf(err, errlen, JCT_EIO, "MPI: the ranks' bootstrap failed")
                     : jct__rank_merge_ends(s, all, r->sq_psn, err, errlen);
  /* A merge that failed because a worker's setup did: that worker's own
   * reason (its READY) is the one to give. */
  *why_wins = gathered && rc;
  free(mine);
  free(all);
  if (!rc) {
    ro->sq_psn = r->sq_psn;
    ro->one_rank = true;
    ro->rank = 0;
    r->part = (jct__rank_part_t){.loop = r->loop, .s = s, .rank = 0};
    rc = jct__ranks_new(&r->part.ranks, &r->loop->uv, &r->loop->clock, jct_fabric_topo(r->fab), s,
                        ro, err, errlen);
  }
  return rc;
}

/* The transport's bootstrap, then every worker's READY. */
static int bootstrap(ranks_t *r, jct__ranks_opts_t *ro, char *err, size_t errlen) {
  bool worker_why_wins = false;
  int rc = r->verbs ? bootstrap_verbs(r, &worker_why_wins, err, errlen)
                    : bootstrap_uroce(r, ro, &worker_why_wins, err, errlen);
  for (uint32_t i = 1; i < r->w->size; i++) {
    void *buf = NULL;
    size_t len = 0;
    if (jct__world_recv(i, JCT__TAG_READY, &buf, &len)) {
      r->w->lost = true;
      return jct__errf(err, errlen, JCT_EIO, "MPI: rank %u did not answer its setup", i);
    }
    jct__rank_ready_t rd = {0};
    memcpy(&rd, buf, len < sizeof rd ? len : sizeof rd);
    free(buf);
    if ((!rc || worker_why_wins) && rd.rc) {
      rd.why[sizeof rd.why - 1] = 0;
      rc = jct__errf(err, errlen, rd.rc, "%s", rd.why);
      worker_why_wins = false;
    }
  }
  return rc;
}

static int up(void **out, const jct__backend_env_t *env, char *err, size_t errlen) {
  *out = NULL;
  const jct_run_opts_t *o = env->o;
  jct__rank_world_t *w = o->world;
  const jct_schedule_t *s = o->schedule;
  if (w->size != s->nranks)
    return jct__errf(err, errlen, JCT_EINVAL, "%u MPI tasks for a job of %u ranks", w->size,
                     s->nranks);
  if (!my_host[0]) gethostname(my_host, sizeof my_host - 1);
  ranks_t *r = calloc(1, sizeof *r);
  if (!r) return JCT_ENOMEM;
  r->loop = env->loop;
  r->o = o;
  r->w = w;
  r->sq_psn = calloc(2 * (size_t)s->nconns + 1, sizeof *r->sq_psn);
  r->wstats = calloc(w->size, sizeof *r->wstats);
  r->wpaused = calloc(w->size, sizeof *r->wpaused);
  r->wlosses = calloc(w->size, sizeof *r->wlosses);
  r->wconn = calloc((size_t)w->size * s->nconns + 1, sizeof *r->wconn);
  r->reported = calloc(w->size, sizeof *r->reported);
  r->alive_ns = calloc(w->size, sizeof *r->alive_ns);
  r->timing = calloc(s->nops + 1, sizeof *r->timing);
  r->verbs = o->transport == JCT_TRANSPORT_VERBS;
  r->wdev = calloc(w->size, sizeof *r->wdev);
  r->wdevice = calloc(w->size, sizeof *r->wdevice);
  r->wport = calloc(w->size, sizeof *r->wport);
  r->whost = calloc(w->size, sizeof *r->whost);
  if (!r->whost ||
      !r->sq_psn || !r->wstats || !r->wpaused || !r->wlosses || !r->wconn || !r->reported ||
      !r->alive_ns || !r->timing || !r->wdev || !r->wdevice || !r->wport) {
    down(r);
    return JCT_ENOMEM;
  }
  uv_timer_init(&r->loop->uv, &r->wake);
  r->wake_open = true;
  jct__ranks_opts_t ro;
  jct__uroce_ranks_opts(o, &r->dcqcn, &ro);
  int rc;
  /* verbs: no switch; every injector runs at a rank's host, or nowhere
   * (checked before any task is set up), its lines in the fault log. */
  if (r->verbs && (r->chain = env->fabric->chain) &&
      (rc = jct__chain_attach_remote(r->chain, s->nranks, env->fabric->fault_log, err, errlen))) {
    down(r);
    return rc;
  }
  if ((!r->verbs &&
       (rc = jct_fabric_new(&r->fab, &r->loop->uv, &r->loop->clock, env->fabric, err, errlen))) ||
      (rc = send_up(r, &ro, err, errlen)) || (rc = bootstrap(r, &ro, err, errlen))) {
    down(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* One backend's functions for either transport of the tasks (r->verbs
 * picks inside them); the tables differ in what the transport counts. */
#define RANKS_OPS                                                                                   \
  .up = up, .fabric = fabric, .rep = run_rep, .failed = failed, .quiet = quiet, .stats = stats,   \
  .harness_losses = harness_losses, .down = down

const struct jct__backend_ops jct__backend_ranks = {
    .name = "uroce",
    .counted = JCT_TSTAT_ALL,
    .conn_counts = conn_counts,
    RANKS_OPS,
};

/* The same tasks on verbs: the devices count per port, not per QP. */
const struct jct__backend_ops jct__backend_ranks_verbs = {
    .name = "verbs",
    .counted = JCT__VERBS_COUNTED,
    .conn_counts = NULL,
    RANKS_OPS,
};
