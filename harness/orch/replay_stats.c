/* A replay's statistics: medians, p99, the bootstrap interval of the
 * degradation, and the critical path (include/jctlab/replay.h). */
#include <stdlib.h>
#include <string.h>

#include "jctlab/replay.h"
#include "replay_int.h"
#include "common/rng.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of k sorted values (the mean of the two middle ones when k is even). */
static double median_sorted(const uint64_t *v, uint32_t k) {
  return k % 2 ? (double)v[k / 2] : ((double)v[k / 2 - 1] + (double)v[k / 2]) / 2;
}

static void side(const uint64_t *jct, uint32_t k, jct_replay_side_t *s) {
  uint64_t *v = malloc(k * sizeof *v);
  if (!v) return;
  memcpy(v, jct, k * sizeof *v);
  qsort(v, k, sizeof *v, cmp_u64);
  s->min_ns = v[0];
  s->max_ns = v[k - 1];
  s->median_ns = (uint64_t)median_sorted(v, k);
  uint32_t rank = (uint32_t)((99u * k + 99) / 100); /* nearest rank, 1-based */
  s->p99_ns = v[(rank ? rank : 1) - 1];
  /* The repetition closest to the median: its timeline is the one shown. */
  uint64_t best = UINT64_MAX;
  for (uint32_t i = 0; i < k; i++) {
    uint64_t d = jct[i] > s->median_ns ? jct[i] - s->median_ns : s->median_ns - jct[i];
    if (d < best) best = d, s->median_rep = i;
  }
  free(v);
}

/* Median of k draws (with replacement) from v. */
static double resampled_median(const uint64_t *v, uint32_t k, uint64_t rng[4], uint64_t *tmp) {
  for (uint32_t i = 0; i < k; i++)
    tmp[i] = v[jct__rng_next(rng) % k];
  qsort(tmp, k, sizeof *tmp, cmp_u64);
  return median_sorted(tmp, k);
}

void jct_replay_stats(const uint64_t *base_ns, const uint64_t *fault_ns, uint32_t k,
                      uint64_t seed, jct_replay_side_t *b, jct_replay_side_t *f,
                      double *degradation, double *lo, double *hi) {
  side(base_ns, k, b);
  side(fault_ns, k, f);
  *degradation = b->median_ns ? (double)f->median_ns / (double)b->median_ns : 0;
  *lo = *hi = *degradation;
  uint64_t *tmp = malloc(k * sizeof *tmp);
  double *ratio = malloc(JCT_REPLAY_BOOTSTRAP * sizeof *ratio);
  if (!tmp || !ratio || k < 2) {
    free(tmp);
    free(ratio);
    return;
  }
  uint64_t rng[4];
  jct__rng_seed(rng, seed ^ 0xb0075742u);
  uint32_t n = 0;
  for (uint32_t i = 0; i < JCT_REPLAY_BOOTSTRAP; i++) {
    double mb = resampled_median(base_ns, k, rng, tmp);
    double mf = resampled_median(fault_ns, k, rng, tmp);
    if (mb > 0) ratio[n++] = mf / mb;
  }
  if (n) {
    qsort(ratio, n, sizeof *ratio, cmp_double);
    *lo = ratio[(size_t)(0.025 * (n - 1) + 0.5)];
    *hi = ratio[(size_t)(0.975 * (n - 1) + 0.5)];
  }
  free(tmp);
  free(ratio);
}

/* What op waited on last: a dep (its rank had to receive it first) or the
 * message before it on its connection (a QP delivers in order, so a
 * message that started early still completes after the one queued ahead
 * of it: go-back-N holds both). prev: the op before each on its
 * connection, or -1. */
static int64_t last_dep(const jct_schedule_t *s, const int64_t *prev, const jct_op_timing_t *t,
                        uint32_t op) {
  const jct_op_t *o = &s->ops[op];
  int64_t best = prev[op];
  for (uint32_t d = 0; d < o->ndeps; d++)
    if (best < 0 || t[o->deps[d]].done_ns > t[best].done_ns) best = o->deps[d];
  return best;
}

int jct__replay_path(const jct_schedule_t *s, const jct_op_timing_t *base,
                     const jct_op_timing_t *fault, jct_replay_result_t *r) {
  r->npath = 0;
  r->culprit = -1;
  if (!s->nops) return 0;
  uint32_t last = 0;
  for (uint32_t i = 1; i < s->nops; i++)
    if (fault[i].done_ns > fault[last].done_ns) last = i;
  /* Walk back; deps and connection order point to earlier ops' completions,
   * so at most nops steps. */
  uint32_t *rev = malloc(s->nops * sizeof *rev), n = 0;
  int64_t *prev = malloc(s->nops * sizeof *prev), *seen = malloc((s->nconns ? s->nconns : 1) * sizeof *seen);
  if (!rev || !prev || !seen) {
    free(rev), free(prev), free(seen);
    return -1;
  }
  for (uint32_t c = 0; c < s->nconns; c++) seen[c] = -1;
  for (uint32_t i = 0; i < s->nops; i++) {
    prev[i] = seen[s->ops[i].conn];
    seen[s->ops[i].conn] = i;
  }
  free(seen);
  for (int64_t op = last; op >= 0 && n < s->nops; op = last_dep(s, prev, fault, (uint32_t)op))
    rev[n++] = (uint32_t)op;
  free(prev);
  r->path = calloc(n, sizeof *r->path);
  if (!r->path) {
    free(rev);
    return -1;
  }
  int64_t worst = INT64_MIN;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t op = rev[n - 1 - i];
    jct_path_op_t *p = &r->path[i];
    p->op = op;
    p->late_ns = fault[op].done_ns > base[op].done_ns ? fault[op].done_ns - base[op].done_ns : 0;
    p->added_ns = ((int64_t)fault[op].done_ns - (int64_t)fault[op].start_ns) -
                  ((int64_t)base[op].done_ns - (int64_t)base[op].start_ns);
    if (p->added_ns > worst) worst = p->added_ns, r->culprit = (int32_t)i;
  }
  r->npath = n;
  free(rev);
  return 0;
}
