/* Replay: baseline and faulted repetitions interleaved on one session,
 * then their statistics (include/jctlab/replay.h). */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/replay.h"
#include "links.h"
#include "qp_stats.h"
#include "replay_int.h"
#include "session.h"

/* Retransmissions over time are counted in bins of about a 50th of the
 * model's JCT, at least 10 us. */
static uint64_t bin_width_ns(const jct_run_opts_t *o) {
  jct_run_result_t m;
  jct_run_model(o, &m);
  uint64_t w = (uint64_t)(m.model_ns / 50);
  return w < 10000 ? 10000 : w;
}

static void add_u64(void *sum, const void *x, size_t size) {
  uint64_t *s = sum;
  const uint64_t *a = x;
  for (size_t i = 0; i < size / sizeof(uint64_t); i++)
    s[i] += a[i];
}

static void sum_side(jct_replay_side_t *side, const jct_rep_t *reps, uint32_t k,
                     uint32_t nranks) {
  bool oom = false;
  for (uint32_t i = 0; i < k; i++) {
    if (!oom && jct_dev_counters_sum(&side->dev_rank, reps[i].dev_rank, nranks)) {
      free(side->dev_rank); /* all or nothing: a partial sum would mislead */
      side->dev_rank = NULL;
      oom = true;
    }
    jct_transport_stats_add(&side->transport, &reps[i].transport);
    add_u64(&side->fabric, &reps[i].fabric, sizeof side->fabric);
    side->paused_ns += reps[i].paused_ns;
    for (uint32_t c = 0; c < reps[i].dev.n; c++)
      jct_dev_counters_add(&side->dev, reps[i].dev.c[c].name, reps[i].dev.c[c].value);
  }
}

static void invalid(jct_replay_result_t *r, const char *why) {
  if (!r->valid) return;
  r->valid = false;
  snprintf(r->invalid_why, sizeof r->invalid_why, "%s", why);
}

static void finish(const jct_run_opts_t *o, jct_replay_result_t *r) {
  uint32_t k = r->reps;
  sum_side(&r->b, r->baseline, k, o->schedule->nranks);
  sum_side(&r->f, r->faulted, k, o->schedule->nranks);
  for (uint32_t i = 0; i < k; i++)
    for (uint32_t j = 0; j < r->ninjectors; j++)
      add_u64(&r->injectors[j].stats, &r->faulted[i].injectors[j], sizeof r->faulted[i].injectors[j]);
  r->b.ecmp_imbalance = jct__linkstats_imbalance(r->b.links, r->b.nlinks);
  r->f.ecmp_imbalance = jct__linkstats_imbalance(r->f.links, r->f.nlinks);
  if (!r->valid) return;
  uint64_t *b = malloc(k * sizeof *b), *f = malloc(k * sizeof *f);
  if (!b || !f) {
    free(b);
    free(f);
    invalid(r, "out of memory");
    return;
  }
  for (uint32_t i = 0; i < k; i++)
    b[i] = r->baseline[i].jct_ns, f[i] = r->faulted[i].jct_ns;
  jct_replay_side_t bs = r->b, fs = r->f; /* keep the sums */
  jct_replay_stats(b, f, k, o->seed, &r->b, &r->f, &r->degradation, &r->ci95_low, &r->ci95_high);
  if (k < JCT_REPLAY_MIN_REPS_CI) r->ci95_low = r->ci95_high = NAN;
  r->b.transport = bs.transport, r->b.fabric = bs.fabric, r->b.paused_ns = bs.paused_ns;
  r->f.transport = fs.transport, r->f.fabric = fs.fabric, r->f.paused_ns = fs.paused_ns;
  r->b.dev = bs.dev, r->f.dev = fs.dev;
  r->b.dev_rank = bs.dev_rank, r->f.dev_rank = fs.dev_rank;
  r->b.links = bs.links, r->b.nlinks = bs.nlinks, r->f.links = fs.links, r->f.nlinks = fs.nlinks;
  double factor = jct_schedule_busbw_factor(o->schedule);
  r->b.algbw_gbps = (double)o->schedule->bytes / (double)r->b.median_ns;
  r->f.algbw_gbps = (double)o->schedule->bytes / (double)r->f.median_ns;
  r->b.busbw_gbps = r->b.algbw_gbps * factor;
  r->f.busbw_gbps = r->f.algbw_gbps * factor;
  free(b);
  free(f);
  if (jct__replay_path(o->schedule, r->baseline[r->b.median_rep].timing,
                       r->faulted[r->f.median_rep].timing, r))
    invalid(r, "out of memory");
}

int jct_replay(const jct_run_opts_t *o, jct_replay_progress_cb progress, void *arg,
               jct_replay_result_t *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  r->culprit = -1;
  int rc = jct_run_check(o, err, errlen);
  if (rc || (rc = jct_run_check_dilation(o, 2 * o->reps + o->warmup, err, errlen))) return rc;
  r->reps = o->reps;
  r->valid = true;
  r->baseline = calloc(o->reps, sizeof *r->baseline);
  r->faulted = calloc(o->reps, sizeof *r->faulted);
  if (!r->baseline || !r->faulted) {
    jct_replay_result_free(r);
    return JCT_ENOMEM;
  }
  jct_run_result_t model;
  jct_run_model(o, &model);
  r->packet_time_ns = model.packet_time_ns;
  jct__session_t *s;
  rc = jct__session_new(&s, o, bin_width_ns(o), err, errlen);
  if (rc) {
    jct_replay_result_free(r);
    return rc;
  }
  jct__session_dilation(s, &r->dilation); /* jct_run_dilation's, and the injectors' */
  r->ninjectors = jct__session_injectors(s, r->injectors, JCT_RUN_MAX_INJECTORS);
  r->b.transport.counted = r->f.transport.counted = jct__session_counted(s);
  /* Per QP, each side's repetitions as they finish (qp_stats.h). */
  jct__qp_acc_t *acc[2] = {NULL, NULL};
  bool per_qp = jct__session_counts_per_qp(s);
  if ((rc = jct__qp_acc_new(&acc[0], o->schedule, o->reps, JCT_QP_MAX_SAMPLES, per_qp)) ||
      (rc = jct__qp_acc_new(&acc[1], o->schedule, o->reps, JCT_QP_MAX_SAMPLES, per_qp))) {
    jct__qp_acc_free(acc[0]);
    jct__session_free(s);
    jct_replay_result_free(r);
    return rc;
  }
  uint64_t wall0 = jct_wall_ns(); /* here, not emulated: skipped time is not in it */
  char why0[256];
  if ((rc = jct__session_warmup(s, why0, sizeof why0)) == 0 && why0[0]) invalid(r, why0);
  /* B F B F ...: both sides see the machine in the same state. */
  for (uint32_t i = 0; i < o->reps && r->valid && rc == 0; i++)
    for (int side = 0; side < 2 && r->valid && rc == 0; side++) {
      jct_rep_t *rep = side ? &r->faulted[i] : &r->baseline[i];
      if ((rc = jct__session_rep(s, side == 1, i, rep))) break;
      jct__qp_acc_add(acc[side], rep);
      /* The links into the side's sums: a repetition's own are not kept. */
      jct_replay_side_t *sum = side ? &r->f : &r->b;
      if ((rc = jct__linkstats_add(&sum->links, &sum->nlinks, rep->links, rep->nlinks))) break;
      free(rep->links);
      rep->links = NULL;
      rep->nlinks = 0;
      if (!rep->ok) {
        char why[256];
        snprintf(why, sizeof why, "%s repetition %u: %.200s", side ? "faulted" : "baseline",
                 i + 1, rep->why);
        invalid(r, why);
      }
      if (progress) progress(2 * i + (uint32_t)side + 1, 2 * o->reps, arg);
    }
  r->wall_s = (double)(jct_wall_ns() - wall0) * 1e-9;
  jct__session_health_t h;
  jct__session_health(s, &h);
  uint64_t loss_ns[2], losses[2], go_back[2], go_backs[2];
  for (int side = 0; side < 2; side++) {
    /* None when a repetition went unwatched: the fidelity's figure is then
     * null, not a partial median's. */
    jct_replay_side_t *sd = side ? &r->f : &r->b;
    if (!jct__session_losses(s, side == 1, &loss_ns[side], &losses[side], sd->loss_recovery_spread))
      losses[side] = 0;
    if (!jct__session_go_back(s, side == 1, &go_back[side], &go_backs[side], sd->go_back_spread))
      go_backs[side] = 0;
  }
  jct__session_free(s);
  r->lateness_p50_ns = h.lateness_p50_ns;
  r->lateness_p99_ns = h.lateness_p99_ns;
  r->lateness_max_ns = h.lateness_max_ns;
  r->cpu_busy = h.cpu_busy;
  r->harness_losses = h.harness_losses;
  r->skipped_ns = h.skipped_ns;
  if (rc) {
    jct__qp_acc_free(acc[0]);
    jct__qp_acc_free(acc[1]);
    jct_replay_result_free(r);
    return rc;
  }
  if (h.harness_losses) invalid(r, h.harness_why);
  char why[256];
  if (jct__session_loop_bound(&h, r->packet_time_ns, why, sizeof why)) invalid(r, why);
  finish(o, r);
  r->b.loss_recovery_ns = loss_ns[0], r->b.losses_recovered = losses[0];
  r->f.loss_recovery_ns = loss_ns[1], r->f.losses_recovered = losses[1];
  r->b.go_back_psns = go_back[0], r->b.go_backs = go_backs[0];
  r->f.go_back_psns = go_back[1], r->f.go_backs = go_backs[1];
  if (r->valid &&
      (jct__qp_acc_figures(acc[0], &r->b.qps) || jct__qp_acc_figures(acc[1], &r->f.qps))) {
    free(r->b.qps);
    r->b.qps = NULL;
    invalid(r, "out of memory");
  }
  jct__qp_acc_free(acc[0]);
  jct__qp_acc_free(acc[1]);
  return 0;
}

void jct_replay_result_free(jct_replay_result_t *r) {
  for (uint32_t i = 0; i < r->reps; i++) {
    if (r->baseline) jct__rep_clear(&r->baseline[i]);
    if (r->faulted) jct__rep_clear(&r->faulted[i]);
  }
  free(r->baseline);
  free(r->faulted);
  free(r->path);
  free(r->b.qps);
  free(r->f.qps);
  free(r->b.links);
  free(r->f.links);
  free(r->b.dev_rank);
  free(r->f.dev_rank);
  r->b.dev_rank = r->f.dev_rank = NULL;
  r->b.links = r->f.links = NULL;
  r->b.nlinks = r->f.nlinks = 0;
  r->baseline = r->faulted = NULL;
  r->path = NULL;
  r->b.qps = r->f.qps = NULL;
}
