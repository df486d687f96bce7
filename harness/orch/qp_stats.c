/* Per-QP figures, one repetition at a time (qp_stats.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "qp_stats.h"

struct jct__qp_acc {
  const jct_schedule_t *s;
  uint32_t max_reps, reps;
  uint32_t cap;     /* repetitions whose completion times are kept */
  uint32_t *first;  /* nconns + 1: connection c's ops are order[first[c] .. first[c + 1]) */
  uint32_t *order;  /* nops op ids, by connection, in schedule order within one */
  uint64_t *window; /* nconns: summed first post to last completion */
  jct_conn_counts_t *retx; /* nconns, or NULL: not counted per QP */
  uint64_t *ct;     /* nops * cap completion times: connection c's from first[c] * cap,
                       repetition by repetition */
};

void jct__qp_acc_free(jct__qp_acc_t *a) {
  if (!a) return;
  free(a->first);
  free(a->order);
  free(a->window);
  free(a->retx);
  free(a->ct);
  free(a);
}

int jct__qp_acc_new(jct__qp_acc_t **out, const jct_schedule_t *s, uint32_t reps,
                    uint32_t max_samples, bool retx_counted) {
  *out = NULL;
  jct__qp_acc_t *a = calloc(1, sizeof *a);
  if (!a) return JCT_ENOMEM;
  a->s = s;
  a->max_reps = reps;
  uint32_t fit = s->nops ? max_samples / s->nops : reps;
  a->cap = fit < 1 ? 1 : fit < reps ? fit : reps;
  a->first = calloc((size_t)s->nconns + 1, sizeof *a->first);
  a->order = malloc(((size_t)s->nops ? s->nops : 1) * sizeof *a->order);
  a->window = calloc(s->nconns ? s->nconns : 1, sizeof *a->window);
  size_t samples = (size_t)s->nops * a->cap;
  a->ct = malloc((samples ? samples : 1) * sizeof *a->ct);
  if (retx_counted) a->retx = calloc(s->nconns ? s->nconns : 1, sizeof *a->retx);
  if (!a->first || !a->order || !a->window || !a->ct || (retx_counted && !a->retx)) {
    jct__qp_acc_free(a);
    return JCT_ENOMEM;
  }
  /* A counting sort of the ops by connection, first[] its offsets. */
  for (uint32_t i = 0; i < s->nops; i++)
    a->first[s->ops[i].conn + 1]++;
  for (uint32_t c = 0; c < s->nconns; c++)
    a->first[c + 1] += a->first[c];
  for (uint32_t i = 0; i < s->nops; i++) {
    uint32_t c = s->ops[i].conn;
    a->order[a->first[c]++] = i;
  }
  for (uint32_t c = s->nconns; c > 0; c--) /* the fill moved each start up to the next */
    a->first[c] = a->first[c - 1];
  a->first[0] = 0;
  *out = a;
  return 0;
}

void jct__qp_acc_add(jct__qp_acc_t *a, const jct_rep_t *rep) {
  if (!rep->ok || !rep->timing || a->reps >= a->max_reps) return;
  bool keep = a->reps < a->cap;
  for (uint32_t c = 0; c < a->s->nconns; c++) {
    uint32_t lo = a->first[c], m = a->first[c + 1] - lo;
    uint64_t first_post = UINT64_MAX, last_done = 0;
    uint64_t *ct = a->ct + (size_t)lo * a->cap + (size_t)a->reps * m;
    for (uint32_t k = 0; k < m; k++) {
      const jct_op_timing_t *t = &rep->timing[a->order[lo + k]];
      if (t->start_ns < first_post) first_post = t->start_ns;
      if (t->done_ns > last_done) last_done = t->done_ns;
      if (keep) ct[k] = t->done_ns > t->start_ns ? t->done_ns - t->start_ns : 0;
    }
    if (m && last_done > first_post) a->window[c] += last_done - first_post;
    if (a->retx && rep->conn) {
      a->retx[c].retx_packets += rep->conn[c].retx_packets;
      a->retx[c].rate_cuts += rep->conn[c].rate_cuts;
      a->retx[c].below_line_rate_ns += rep->conn[c].below_line_rate_ns;
    }
  }
  a->reps++;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;
  return p < q ? -1 : p > q;
}

/* The nearest-rank q-quantile (percent) of n sorted values, n >= 1. */
static uint64_t nearest_rank(const uint64_t *v, size_t n, unsigned pct) {
  size_t rank = (pct * n + 99) / 100;
  return v[(rank ? rank : 1) - 1];
}

int jct__qp_acc_figures(jct__qp_acc_t *a, jct_qp_figures_t **out) {
  const jct_schedule_t *s = a->s;
  jct_qp_figures_t *q = calloc(s->nconns ? s->nconns : 1, sizeof *q);
  if (!q) return JCT_ENOMEM;
  uint32_t kept = a->reps < a->cap ? a->reps : a->cap;
  for (uint32_t c = 0; c < s->nconns; c++) {
    jct_qp_figures_t *f = &q[c];
    uint32_t lo = a->first[c], m = a->first[c + 1] - lo;
    for (uint32_t k = 0; k < m; k++)
      f->bytes += s->ops[a->order[lo + k]].bytes;
    f->messages = m;
    f->reps = a->reps;
    f->completion_reps = kept;
    f->bw_bps = a->window[c] ? 8e9 * (double)f->bytes * a->reps / (double)a->window[c] : NAN;
    f->retx_counted = a->retx != NULL;
    f->retx_packets = a->retx ? a->retx[c].retx_packets : 0;
    f->rate_cuts = a->retx ? a->retx[c].rate_cuts : 0;
    f->below_line_rate_ns = a->retx ? a->retx[c].below_line_rate_ns : 0;
    size_t n = (size_t)m * kept;
    if (!n) continue;
    uint64_t *v = a->ct + (size_t)lo * a->cap;
    qsort(v, n, sizeof *v, cmp_u64);
    f->completion_p50_ns = nearest_rank(v, n, 50);
    f->completion_p99_ns = nearest_rank(v, n, 99);
    f->completion_max_ns = v[n - 1];
  }
  *out = q;
  return 0;
}
