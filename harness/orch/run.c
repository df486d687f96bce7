/* A run: K repetitions of a schedule on the emulated fabric
 * (include/jctlab/run.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/roce.h"
#include "jctlab/run.h"
#include "links.h"
#include "qp_stats.h"
#include "session.h"

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

int jct_run_check(const jct_run_opts_t *o, char *err, size_t errlen) {
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
  for (uint32_t i = 0; i < o->schedule->nops; i++)
    if (o->schedule->ops[i].bytes > JCT_ROCE_MAX_MSG_BYTES)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "op %u is a message of %llu bytes: a RoCE message is at most 2^31 bytes "
                       "(split it, or give more ranks or channels)",
                       i, (unsigned long long)o->schedule->ops[i].bytes);
  if (o->warmup > JCT_RUN_MAX_WARMUP)
    return jct__errf(err, errlen, JCT_EINVAL, "--warmup %u is outside [0, %u]", o->warmup,
                     JCT_RUN_MAX_WARMUP);
  if (o->ninject > JCT_RUN_MAX_INJECTORS)
    return jct__errf(err, errlen, JCT_EINVAL, "%u injectors: at most %u", o->ninject,
                     JCT_RUN_MAX_INJECTORS);
  if (o->cc == JCT_CC_DCQCN && o->transport != JCT_TRANSPORT_UROCE)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--cc dcqcn: DCQCN runs in uroce's QPs; Linux rxe has no congestion control");
  const char *rdma = jct_rdma_opts_first(&o->rdma);
  if (rdma && o->transport != JCT_TRANSPORT_VERBS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%s: an RDMA device setting, and the uroce transport has no RDMA device "
                     "(transport verbs: lab: N, or --lab N / --agents)",
                     rdma);
  if ((unsigned)o->cc_profile > JCT_DCQCN_PAPER)
    return jct__errf(err, errlen, JCT_EINVAL, "congestion-control profile %d: no such profile",
                     (int)o->cc_profile);
  return 0;
}

double jct_jain_index(const jct_qp_figures_t *q, uint32_t n) {
  double sum = 0, sq = 0;
  uint32_t k = 0;
  for (uint32_t c = 0; c < n; c++)
    if (q[c].messages && q[c].reps && isfinite(q[c].bw_bps)) {
      sum += q[c].bw_bps;
      sq += q[c].bw_bps * q[c].bw_bps;
      k++;
    }
  return k >= 2 && sq > 0 ? sum * sum / (k * sq) : NAN;
}

static void add_rep(jct_run_result_t *r, const jct_rep_t *rep) {
  jct_transport_stats_add(&r->transport, &rep->transport);
  const uint64_t *a = (const uint64_t *)&rep->fabric;
  uint64_t *t = (uint64_t *)&r->fabric;
  for (size_t k = 0; k < sizeof r->fabric / sizeof *t; k++)
    t[k] += a[k];
  /* Levels, not counters: the last repetition's. */
  r->fabric.queued_frames = rep->fabric.queued_frames;
  r->fabric.wire_frames = rep->fabric.wire_frames;
  r->fabric.pool_used_bytes = rep->fabric.pool_used_bytes;
  r->fabric.pool_bytes = rep->fabric.pool_bytes;
  r->paused_ns += rep->paused_ns;
  for (uint32_t i = 0; i < r->ninjectors; i++) {
    const uint64_t *x = (const uint64_t *)&rep->injectors[i];
    uint64_t *y = (uint64_t *)&r->injectors[i].stats;
    for (size_t k = 0; k < sizeof rep->injectors[i] / sizeof *y; k++)
      y[k] += x[k];
  }
}

/* Where the ranks sit (the first 64). */
static void hosts_of(jct__session_t *s, jct_run_result_t *r) {
  jct_fabric_t *f = jct__session_fabric(s);
  for (uint32_t i = 0; f && i < 64; i++)
    r->host_of[i] = jct_fabric_host_of(f, i);
}

int jct_run(const jct_run_opts_t *o, jct_run_result_t *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  int rc = jct_run_check(o, err, errlen);
  if (rc || (rc = jct_run_check_dilation(o, o->reps + o->warmup, err, errlen))) return rc;
  r->reps = o->reps;
  r->valid = true;
  jct_run_model(o, r);
  jct__session_t *s;
  if ((rc = jct__session_new(&s, o, 0, err, errlen))) return rc;
  jct__session_dilation(s, &r->dilation); /* jct_run_dilation's, and the injectors' */
  r->ninjectors = jct__session_injectors(s, r->injectors, JCT_RUN_MAX_INJECTORS);
  r->transport.counted = jct__session_counted(s);
  jct__qp_acc_t *qps;
  if ((rc = jct__qp_acc_new(&qps, o->schedule, o->reps, JCT_QP_MAX_SAMPLES,
                            jct__session_counts_per_qp(s)))) {
    jct__session_free(s);
    return rc;
  }
  char why[256];
  if ((rc = jct__session_warmup(s, why, sizeof why)) == 0 && why[0]) invalid(r, why);
  hosts_of(s, r);
  for (uint32_t i = 0; i < o->reps && r->valid && rc == 0; i++) {
    jct_rep_t rep;
    if ((rc = jct__session_rep(s, true, i, &rep))) break;
    r->jct_ns[i] = rep.jct_ns;
    add_rep(r, &rep);
    jct__qp_acc_add(qps, &rep);
    if (jct__linkstats_add(&r->links, &r->nlinks, rep.links, rep.nlinks)) rc = JCT_ENOMEM;
    if (!r->series) r->series = rep.series, rep.series = NULL; /* the first measured one's */
    if (jct_dev_counters_sum(&r->dev_rank, rep.dev_rank, o->schedule->nranks)) rc = JCT_ENOMEM;
    if (!rep.ok) invalid(r, rep.why);
    jct__rep_clear(&rep);
  }
  jct__session_health_t h;
  jct__session_health(s, &h);
  r->cpu_busy = h.cpu_busy;
  r->lateness_p50_ns = h.lateness_p50_ns;
  r->lateness_p99_ns = h.lateness_p99_ns;
  r->lateness_max_ns = h.lateness_max_ns;
  /* A loop-bound run measured the harness, not the link: invalid, as a
   * loop-bound replay. */
  if ((r->loop_bound = jct__session_loop_bound(&h, r->packet_time_ns, why, sizeof why)))
    invalid(r, why);
  r->harness_losses = h.harness_losses;
  r->skipped_ns = h.skipped_ns;
  r->wall_s = (double)h.wall_ns * 1e-9;
  if (h.harness_losses) invalid(r, h.harness_why);
  if (r->valid) statistics(o, r);
  if (r->valid && rc == 0 && jct__qp_acc_figures(qps, &r->qps)) invalid(r, "out of memory");
  r->jain_index = r->qps ? jct_jain_index(r->qps, o->schedule->nconns) : NAN;
  r->ecmp_imbalance = jct__linkstats_imbalance(r->links, r->nlinks);
  jct__qp_acc_free(qps);
  jct__session_free(s);
  return rc;
}

void jct_run_result_free(jct_run_result_t *r) {
  jct_series_free(r->series);
  r->series = NULL;
  free(r->links);
  r->links = NULL;
  free(r->qps);
  r->qps = NULL;
  free(r->dev_rank);
  r->dev_rank = NULL;
}
