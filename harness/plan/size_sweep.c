/* A size sweep: its sizes, their checks, and one case per size
 * (size_sweep.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "harness/base/interrupt.h"
#include "harness/base/units.h"
#include "harness/report/result.h"
#include "jctlab/error.h"
#include "jctlab/replay.h"
#include "jctlab/schedule.h"
#include "size_sweep.h"

int jct__sweep_sizes_range(uint64_t min, uint64_t max, double factor, uint64_t *sizes, uint32_t *n,
                           char *err, size_t errlen) {
  *n = 0;
  if (min == 0)
    return jct__errf(err, errlen, JCT_EINVAL, "--bytes-min 0: a size is 1 byte or more");
  if (min > max)
    return jct__errf(err, errlen, JCT_EINVAL, "--bytes-min %llu is above --bytes-max %llu",
                     (unsigned long long)min, (unsigned long long)max);
  if (!(factor > 1) || !isfinite(factor))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "--bytes-factor %g: the factor must be above 1 (nccl-tests' -f 2 doubles)",
                     factor);
  bool whole = factor == floor(factor) && factor < 1e18;
  /* One step past the limit at most: that step says there are too many. */
  for (uint32_t k = 0; k <= JCT_SWEEP_MAX_SIZES; k++) {
    uint64_t s;
    if (whole) {
      if (k == 0) {
        s = min;
      } else {
        uint64_t prev = sizes[*n - 1], f = (uint64_t)factor;
        if (prev > max / f) break; /* the next one is above max (or past 2^64) */
        s = prev * f;
      }
    } else {
      double x = (double)min * pow(factor, k);
      if (x > (double)max * (1 + 1e-12)) break;
      s = x >= (double)max ? max : (uint64_t)floor(x * (1 + 1e-12));
      if (*n && s == sizes[*n - 1])
        return jct__errf(err, errlen, JCT_EINVAL,
                         "--bytes-factor %g is too small for --bytes-min %llu: two steps round "
                         "to the same size (%llu bytes)",
                         factor, (unsigned long long)min, (unsigned long long)s);
    }
    if (s > max) break;
    if (*n == JCT_SWEEP_MAX_SIZES)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "--bytes-min %llu to --bytes-max %llu by %g is more than %u sizes",
                       (unsigned long long)min, (unsigned long long)max, factor,
                       JCT_SWEEP_MAX_SIZES);
    sizes[(*n)++] = s;
  }
  return 0;
}

int jct__sweep_sizes_list(const char *text, uint64_t *sizes, uint32_t *n, char *err,
                          size_t errlen) {
  *n = 0;
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    char item[64];
    if (len == 0 || len >= sizeof item)
      return jct__errf(err, errlen, JCT_EINVAL, "--bytes '%.60s': %s", text,
                       len ? "an item is too long to be a size" : "an empty item");
    memcpy(item, p, len);
    item[len] = 0;
    uint64_t s;
    if (jct__parse_size_bytes(item, &s) || s == 0)
      return jct__errf(err, errlen, JCT_EINVAL, "--bytes: '%s' is not a size (8MiB, 64M, 4096)",
                       item);
    for (uint32_t i = 0; i < *n; i++)
      if (sizes[i] == s)
        return jct__errf(err, errlen, JCT_EINVAL, "--bytes: %llu bytes is in the list twice",
                         (unsigned long long)s);
    if (*n == JCT_SWEEP_MAX_SIZES)
      return jct__errf(err, errlen, JCT_EINVAL, "--bytes: more than %u sizes", JCT_SWEEP_MAX_SIZES);
    sizes[(*n)++] = s;
    if (!p[len]) return 0;
    p += len + 1;
  }
}

/* The size's schedule, checked as jct_run() (or jct_replay()) will check
 * it, its wall-time budget included. */
static int size_schedule(const jct__sweep_plan_t *p, uint64_t bytes, jct_schedule_t **out,
                         char *err, size_t errlen) {
  char why[400];
  int rc = jct_schedule_synth(out, p->algorithm, p->ranks, bytes, p->channels, why, sizeof why);
  if (rc == 0 && p->qps_per_conn > 1) { /* --qps-per-connection, as one size's run splits */
    jct_schedule_t *split;
    rc = jct_schedule_split_qps(&split, *out, p->qps_per_conn, why, sizeof why);
    jct_schedule_free(*out);
    *out = rc ? NULL : split;
  }
  if (rc == 0) {
    jct_run_opts_t o = p->opts;
    o.schedule = *out;
    /* With injectors a size is a replay: baseline and faulted repetitions. */
    uint32_t reps = (o.ninject ? 2 * o.reps : o.reps) + o.warmup;
    if ((rc = jct_run_check(&o, why, sizeof why)) ||
        (rc = jct_run_check_dilation(&o, reps, why, sizeof why))) {
      jct_schedule_free(*out);
      *out = NULL;
    }
  }
  if (rc) jct__errf(err, errlen, rc, "size %llu: %s", (unsigned long long)bytes, why);
  return rc;
}

int jct__sweep_check(const jct__sweep_plan_t *p, char *name, size_t len, char *err, size_t errlen) {
  double wall_ns = 0;
  for (uint32_t i = 0; i < p->nsizes; i++) {
    jct_schedule_t *s;
    int rc = size_schedule(p, p->sizes[i], &s, err, errlen);
    if (rc) return rc;
    snprintf(name, len, "%s", s->algorithm);
    jct_run_opts_t o = p->opts;
    o.schedule = s;
    wall_ns += jct_run_wall_estimate_ns(&o, (o.ninject ? 2 * o.reps : o.reps) + o.warmup);
    jct_schedule_free(s);
  }
  /* Each size fits alone (size_schedule); the budget is the sweep's. */
  return p->nsizes > 1 ? jct_run_check_wall_total(wall_ns, p->nsizes, "sizes",
                                                  p->opts.wall_budget_ns, err, errlen)
                       : 0;
}

const char *jct__sweep_size_path(const char *path, uint64_t bytes, uint32_t nsizes, char *buf,
                                 size_t len) {
  if (!path || nsizes < 2) return path;
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  size_t stem = dot && (!slash || dot > slash) && dot != path ? (size_t)(dot - path) : strlen(path);
  snprintf(buf, len, "%.*s-size%llu%s", (int)stem, path, (unsigned long long)bytes, path + stem);
  return buf;
}

static int copy_jcts(jct__sweep_side_t *side, const jct_rep_t *reps, const uint64_t *jcts,
                     uint32_t k) {
  side->reps = k;
  if (!(side->jct_ns = malloc(k * sizeof *side->jct_ns))) return JCT_ENOMEM;
  for (uint32_t i = 0; i < k; i++)
    side->jct_ns[i] = reps ? reps[i].jct_ns : jcts[i];
  return 0;
}

static void from_replay(jct__sweep_row_t *row, const jct_replay_result_t *r) {
  row->faulted = true;
  row->valid = r->valid;
  snprintf(row->invalid_why, sizeof row->invalid_why, "%s", r->invalid_why);
  const jct_replay_side_t *sides[2] = {&r->b, &r->f};
  jct__sweep_side_t *out[2] = {&row->base, &row->fault};
  for (int k = 0; k < 2; k++) {
    out[k]->median_ns = sides[k]->median_ns;
    out[k]->min_ns = sides[k]->min_ns;
    out[k]->max_ns = sides[k]->max_ns;
    out[k]->algbw_gbps = sides[k]->algbw_gbps;
    out[k]->busbw_gbps = sides[k]->busbw_gbps;
    out[k]->transport = sides[k]->transport;
  }
  row->degradation = r->degradation;
  row->ci95_low = r->ci95_low;
  row->ci95_high = r->ci95_high;
  for (uint32_t j = 0; j < r->ninjectors; j++)
    row->dropped += r->injectors[j].stats.dropped;
  row->lateness_p50_ns = r->lateness_p50_ns;
  row->lateness_p99_ns = r->lateness_p99_ns;
  row->lateness_max_ns = r->lateness_max_ns;
  row->packet_time_ns = r->packet_time_ns;
  row->loop_bound = (double)r->lateness_p99_ns > r->packet_time_ns;
}

/* The QPs (connections) that carried messages, measured: a figure per
 * connection with repetitions and a bandwidth (run.h). */
static uint32_t qps_used(const jct_qp_figures_t *q, uint32_t n) {
  uint32_t used = 0;
  for (uint32_t c = 0; q && c < n; c++)
    used += q[c].messages && q[c].reps && q[c].bw_bps > 0;
  return used;
}

static void from_run(jct__sweep_row_t *row, const jct_run_result_t *r) {
  row->valid = r->valid;
  snprintf(row->invalid_why, sizeof row->invalid_why, "%s", r->invalid_why);
  row->base.median_ns = r->median_ns;
  row->base.min_ns = r->min_ns;
  row->base.max_ns = r->max_ns;
  row->base.algbw_gbps = r->algbw_gbps;
  row->base.busbw_gbps = r->busbw_gbps;
  row->base.transport = r->transport;
  row->degradation = row->ci95_low = row->ci95_high = NAN;
  row->lateness_p50_ns = r->lateness_p50_ns;
  row->lateness_p99_ns = r->lateness_p99_ns;
  row->lateness_max_ns = r->lateness_max_ns;
  row->packet_time_ns = r->packet_time_ns;
  row->loop_bound = r->loop_bound;
}

/* One size: its schedule, then a replay (injectors) or a run. */
static int run_size(const jct__sweep_plan_t *p, uint32_t i, jct__sweep_row_t *row, char *err,
                    size_t errlen) {
  uint64_t bytes = p->sizes[i];
  jct_schedule_t *s;
  int rc = size_schedule(p, bytes, &s, err, errlen);
  if (rc) return rc;
  jct_run_opts_t o = p->opts;
  o.schedule = s;
  char b[4][4096];
  o.pcap_out = jct__sweep_size_path(o.pcap_out, bytes, p->nsizes, b[0], sizeof b[0]);
  o.pcap_in = jct__sweep_size_path(o.pcap_in, bytes, p->nsizes, b[1], sizeof b[1]);
  o.pcap_drops = jct__sweep_size_path(o.pcap_drops, bytes, p->nsizes, b[2], sizeof b[2]);
  o.fault_log = jct__sweep_size_path(o.fault_log, bytes, p->nsizes, b[3], sizeof b[3]);
  row->bytes = bytes;
  row->count = jct__sweep_count(s->algorithm, s->nranks, bytes);
  jct_run_result_t model;
  jct_run_model(&o, &model);
  row->model_ns = model.model_ns;
  row->loss_model = o.ninject ? jct__model_json(&o) : json_null();
  char why[400] = "";
  if (o.ninject) {
    jct_replay_result_t r;
    rc = jct_replay(&o, NULL, NULL, &r, why, sizeof why);
    if (rc == 0) {
      from_replay(row, &r);
      row->qps_used = qps_used(r.f.qps, s->nconns);
      if (r.valid && (copy_jcts(&row->base, r.baseline, NULL, r.reps) ||
                      copy_jcts(&row->fault, r.faulted, NULL, r.reps)))
        rc = JCT_ENOMEM;
      jct_replay_result_free(&r);
    }
  } else {
    jct_run_result_t *r = malloc(sizeof *r); /* large: every repetition's JCT */
    rc = r ? jct_run(&o, r, why, sizeof why) : JCT_ENOMEM;
    if (rc == 0) {
      from_run(row, r);
      row->qps_used = qps_used(r->qps, s->nconns);
      if (r->valid && copy_jcts(&row->base, NULL, r->jct_ns, r->reps)) rc = JCT_ENOMEM;
      jct_run_result_free(r);
    }
    free(r);
  }
  if (rc == JCT_ENOMEM && !why[0]) snprintf(why, sizeof why, "out of memory");
  if (rc) jct__errf(err, errlen, rc, "size %llu: %s", (unsigned long long)bytes, why);
  jct_schedule_free(s);
  return rc;
}

int jct__sweep_run(const jct__sweep_plan_t *p, jct__sweep_row_t *rows, uint32_t *nrun,
                   jct__sweep_row_cb cb, void *arg, char *err, size_t errlen) {
  *nrun = 0;
  for (uint32_t i = 0; i < p->nsizes; i++) {
    int rc = run_size(p, i, &rows[i], err, errlen);
    if (rc) {
      jct__sweep_row_free(&rows[i]);
      return rc;
    }
    (*nrun)++;
    if (cb) cb(&rows[i], i, arg);
    if (jct__interrupt_signal()) break; /* the sizes not started are not run */
  }
  return 0;
}
