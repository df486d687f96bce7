/* Schedule inference, second part: dependencies by happens-before.
 *
 * A send on rank r may only have waited for what r had received before it
 * started. Per connection into r we take the most recent message completely
 * received strictly before the send's start that no earlier send on the same
 * outgoing connection already depended on (a cursor per pair of outgoing
 * and incoming connection; messages on a connection are accepted in order,
 * so receiving the last one implies the ones before it). A dep that is an
 * ancestor of another dep (through dep edges) is implied and dropped; an
 * ancestor completes no later than its descendants, which bounds the search.
 * Strict inequalities (completion before start) keep the result acyclic.
 *
 * gap_ns is start minus the last dep's completion, as measured at the
 * capture point, which includes the network's share: the last packet's way
 * to the rank and the first packet's way back. The smallest gap of a send
 * whose deps are all received messages is taken as that share (the
 * turnaround) and subtracted from all.
 * A send that started after its rank's earlier sends had all completed,
 * the last of them later than its deps, may have been queued behind them (a
 * retransmission timeout holds a QP for its whole length; one link carries
 * all of a rank's sends): its gap runs from that completion instead, so
 * that a stall is not taken for compute.
 *
 * Program order. A rank's sends come in bursts: a burst starts with a send
 * that found nothing of its rank in flight, and holds every send started
 * before all of the burst's sends have completed. When the pause before a
 * burst (from the completion of the rank's last earlier send to the burst's
 * first start) is longer than any message in the capture took, the
 * transport did not make it (while a rank streams messages, no pause
 * between them is longer than a message takes): the rank did something the
 * capture does not show (compute, or control traffic such as perftest's TCP
 * exchange between two tests). Each send of the burst whose received deps
 * (if any) all completed before the pause began, so that no message
 * explains it, then depends on its rank's sends before the pause: on each
 * of the rank's outgoing connections, the last message sent on it (a QP
 * completes in order), implied ones dropped as above. Sends of one burst
 * stay independent of each other: they overlapped in the capture. Their
 * gap runs from the pause's start, less the turnaround, as for any dep
 * (the pause itself is not one: it would make the turnaround the pause).
 */
#include <stdlib.h>
#include <string.h>

#include "infer_int.h"
#include "jctlab/error.h"

typedef struct {
  jct__iplan_t *p;
  uint32_t *stamp, *stack;
  uint32_t gen;
} prune_t;

/* Whether o's dep number skip is reachable along dep edges from one of its
 * other deps: one search from all of them at once. */
static bool implied(prune_t *pr, const jct__iop_t *o, uint32_t skip) {
  jct__iop_t *ops = pr->p->ops;
  uint32_t target = o->deps[skip];
  uint64_t floor_ns = ops[target].done_ns;
  size_t n = 0;
  pr->gen++;
  for (uint32_t j = 0; j < o->ndeps; j++)
    if (j != skip && pr->stamp[o->deps[j]] != pr->gen) {
      pr->stamp[o->deps[j]] = pr->gen;
      pr->stack[n++] = o->deps[j];
    }
  while (n) {
    uint32_t x = pr->stack[--n];
    if (x == target) return true;
    for (uint32_t i = 0; i < ops[x].ndeps; i++) {
      uint32_t d = ops[x].deps[i];
      if (pr->stamp[d] == pr->gen || ops[d].done_ns < floor_ns) continue;
      pr->stamp[d] = pr->gen;
      pr->stack[n++] = d;
    }
  }
  return false;
}

static void prune(prune_t *pr, jct__iop_t *o) {
  for (uint32_t i = 0; i < o->ndeps;) {
    if (implied(pr, o, i))
      o->deps[i] = o->deps[--o->ndeps];
    else
      i++;
  }
}

/* Connections of each rank, as CSR: in[in_first[r] .. in_first[r+1]) by
 * destination (incoming), or by source (outgoing). */
static int by_rank(const jct__iplan_t *p, bool outgoing, uint32_t **first, uint32_t **list) {
  *first = calloc((size_t)p->nranks + 1, sizeof **first);
  *list = malloc((p->nconns ? p->nconns : 1) * sizeof **list);
  uint32_t *fill = calloc(p->nranks ? p->nranks : 1, sizeof *fill);
  if (!*first || !*list || !fill) {
    free(fill);
    return JCT_ENOMEM;
  }
  for (uint32_t c = 0; c < p->nconns; c++)
    (*first)[(outgoing ? p->conns[c].src : p->conns[c].dst) + 1]++;
  for (uint32_t r = 0; r < p->nranks; r++)
    (*first)[r + 1] += (*first)[r];
  for (uint32_t c = 0; c < p->nconns; c++) {
    uint32_t r = outgoing ? p->conns[c].src : p->conns[c].dst;
    (*list)[(*first)[r] + fill[r]++] = c;
  }
  free(fill);
  return 0;
}

/* Received deps; room for program-order ones after them (one per outgoing
 * connection of the rank). */
static int find_deps(jct__iplan_t *p, const uint32_t *in_first, const uint32_t *in,
                     const uint32_t *out_first) {
  uint32_t maxin = 0;
  for (uint32_t r = 0; r < p->nranks; r++)
    if (in_first[r + 1] - in_first[r] > maxin) maxin = in_first[r + 1] - in_first[r];
  uint32_t *cur = malloc((maxin ? maxin : 1) * sizeof *cur);
  if (!cur) return JCT_ENOMEM;
  for (uint32_t c = 0; c < p->nconns; c++) {
    uint32_t r = p->conns[c].src, nin = in_first[r + 1] - in_first[r];
    uint32_t room = nin + out_first[r + 1] - out_first[r];
    memset(cur, 0, nin * sizeof *cur);
    for (uint32_t k = 0; k < p->conn_nops[c]; k++) {
      jct__iop_t *o = &p->ops[p->conn_first[c] + k];
      o->deps = malloc(room * sizeof *o->deps);
      if (!o->deps) {
        free(cur);
        return JCT_ENOMEM;
      }
      for (uint32_t j = 0; j < nin; j++) {
        uint32_t ic = in[in_first[r] + j], base = p->conn_first[ic];
        uint32_t before = cur[j];
        while (cur[j] < p->conn_nops[ic] && p->ops[base + cur[j]].done_ns < o->start_ns)
          cur[j]++;
        if (cur[j] > before) o->deps[o->ndeps++] = base + cur[j] - 1;
      }
    }
  }
  free(cur);
  return 0;
}

static int by_start(const void *a, const void *b, void *arg) {
  const jct__iop_t *ops = arg;
  const jct__iop_t *x = &ops[*(const uint32_t *)a], *y = &ops[*(const uint32_t *)b];
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1
                                                     : *(const uint32_t *)a > *(const uint32_t *)b;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static bool is_order(const jct__iplan_t *p, const jct__iop_t *o, uint32_t dep) {
  return p->conns[p->ops[dep].conn].src == o->src;
}

/* Program-order deps (the header), visiting ops in start order. */
static int order_deps(jct__iplan_t *p, const uint32_t *order, const uint32_t *out_first,
                      const uint32_t *out, jct_infer_report_t *rep) {
  uint64_t *rank_done = calloc(p->nranks ? p->nranks : 1, sizeof *rank_done);
  uint64_t *pause_from = calloc(p->nranks ? p->nranks : 1, sizeof *pause_from);
  bool *long_pause = calloc(p->nranks ? p->nranks : 1, sizeof *long_pause);
  uint32_t *rank_sent = calloc(p->nranks ? p->nranks : 1, sizeof *rank_sent);
  /* Per connection, the op sent on it last, and the last before its rank's pause. */
  uint32_t *last = malloc((p->nconns ? p->nconns : 1) * sizeof *last);
  uint32_t *before = malloc((p->nconns ? p->nconns : 1) * sizeof *before);
  int rc = JCT_ENOMEM;
  if (!rank_done || !pause_from || !long_pause || !rank_sent || !last || !before) goto out;
  uint64_t longest = 0;
  for (uint32_t i = 0; i < p->nops; i++)
    if (p->ops[i].done_ns != JCT__NEVER && p->ops[i].done_ns - p->ops[i].start_ns > longest)
      longest = p->ops[i].done_ns - p->ops[i].start_ns;
  rep->order_pause_ns = longest;
  for (uint32_t c = 0; c < p->nconns; c++)
    last[c] = before[c] = UINT32_MAX;
  for (uint32_t k = 0; k < p->nops; k++) {
    uint32_t i = order[k];
    jct__iop_t *o = &p->ops[i];
    uint32_t r = o->src;
    if (rank_sent[r] && rank_done[r] < o->start_ns) { /* nothing in flight: a new burst */
      pause_from[r] = rank_done[r];
      long_pause[r] = o->start_ns - rank_done[r] > longest;
      for (uint32_t j = out_first[r]; j < out_first[r + 1]; j++)
        before[out[j]] = last[out[j]];
    }
    uint64_t received = 0;
    for (uint32_t d = 0; d < o->ndeps; d++)
      if (p->ops[o->deps[d]].done_ns > received) received = p->ops[o->deps[d]].done_ns;
    if (long_pause[r] && (!o->ndeps || received < pause_from[r]))
      for (uint32_t j = out_first[r]; j < out_first[r + 1]; j++)
        if (before[out[j]] != UINT32_MAX) o->deps[o->ndeps++] = before[out[j]];
    rank_sent[r]++;
    if (o->done_ns > rank_done[r]) rank_done[r] = o->done_ns;
    last[o->conn] = i;
  }
  rc = 0;
out:
  free(rank_done);
  free(pause_from);
  free(long_pause);
  free(rank_sent);
  free(last);
  free(before);
  return rc;
}

/* Steps, gaps and the confidence figures, visiting ops in start order. */
static int timing(jct__iplan_t *p, const uint32_t *order, bool keep_turnaround,
                  jct_infer_report_t *rep) {
  uint64_t *gaps = malloc((p->nops ? p->nops : 1) * sizeof *gaps);
  uint64_t *rank_done = calloc(p->nranks ? p->nranks : 1, sizeof *rank_done);
  uint32_t *rank_sent = calloc(p->nranks ? p->nranks : 1, sizeof *rank_sent);
  int rc = JCT_ENOMEM;
  if (!gaps || !rank_done || !rank_sent) goto out;
  uint64_t turn = UINT64_MAX;
  for (uint32_t i = 0; i < p->nops; i++) {
    jct__iop_t *o = &p->ops[i];
    uint64_t last = 0;
    uint32_t norder = 0;
    for (uint32_t d = 0; d < o->ndeps; d++) {
      if (p->ops[o->deps[d]].done_ns > last) last = p->ops[o->deps[d]].done_ns;
      norder += is_order(p, o, o->deps[d]);
    }
    o->gap_ns = o->ndeps ? o->start_ns - last : 0;
    if (o->ndeps && !norder && o->gap_ns < turn) turn = o->gap_ns; /* received deps only */
    rep->deps_program_order += norder;
    rep->deps_received += o->ndeps - norder;
    rep->ops_program_order += norder > 0;
  }
  if (turn == UINT64_MAX || keep_turnaround) turn = 0;
  rep->turnaround_ns = turn;
  uint32_t ngaps = 0;
  for (uint32_t k = 0; k < p->nops; k++) {
    uint32_t i = order[k];
    jct__iop_t *o = &p->ops[i];
    uint32_t step = 0;
    for (uint32_t d = 0; d < o->ndeps; d++)
      if (p->ops[o->deps[d]].step + 1 > step) step = p->ops[o->deps[d]].step + 1;
    if (i > p->conn_first[o->conn] && p->ops[i - 1].step > step) step = p->ops[i - 1].step;
    o->step = step;
    if (o->ndeps) {
      /* Queued behind the previous message on its connection (a stall, a
       * retransmission): the wait after that one is the transport's. */
      uint64_t prev = rank_sent[o->src] ? rank_done[o->src] : 0; /* its earlier sends' last */
      uint64_t waited = o->gap_ns;
      if (prev != JCT__NEVER && prev < o->start_ns && o->start_ns - prev < waited) {
        if (waited - (o->start_ns - prev) > 2 * turn) rep->ops_queued++; /* more than jitter */
        waited = o->start_ns - prev;
      }
      o->gap_ns = waited > turn ? waited - turn : 0;
      gaps[ngaps++] = o->gap_ns;
      rep->ops_with_deps++;
    }
    rank_sent[o->src]++;
    if (o->done_ns > rank_done[o->src]) rank_done[o->src] = o->done_ns;
    if (o->done_ns == JCT__NEVER) rep->ops_incomplete++;
  }
  if (ngaps) {
    qsort(gaps, ngaps, sizeof *gaps, cmp_u64);
    rep->gap_median_ns = gaps[ngaps / 2];
    rep->gap_max_ns = gaps[ngaps - 1];
  }
  rc = 0;
out:
  free(gaps);
  free(rank_done);
  free(rank_sent);
  return rc;
}

int jct__infer_deps(jct__iplan_t *p, bool keep_turnaround, jct_infer_report_t *rep) {
  uint32_t *in_first = NULL, *in = NULL, *out_first = NULL, *out = NULL;
  uint32_t *order = malloc((p->nops ? p->nops : 1) * sizeof *order);
  prune_t pr = {.p = p};
  int rc = order ? 0 : JCT_ENOMEM;
  if (!rc) rc = by_rank(p, false, &in_first, &in);
  if (!rc) rc = by_rank(p, true, &out_first, &out);
  if (!rc) rc = find_deps(p, in_first, in, out_first);
  if (!rc) {
    for (uint32_t i = 0; i < p->nops; i++)
      order[i] = i;
    qsort_r(order, p->nops, sizeof *order, by_start, p->ops);
    rc = order_deps(p, order, out_first, out, rep);
  }
  free(in_first);
  free(in);
  free(out_first);
  free(out);
  if (!rc) {
    pr.stamp = calloc(p->nops ? p->nops : 1, sizeof *pr.stamp);
    pr.stack = malloc((p->nops ? p->nops : 1) * sizeof *pr.stack);
    if (!pr.stamp || !pr.stack) rc = JCT_ENOMEM;
  }
  if (!rc) {
    for (uint32_t i = 0; i < p->nops; i++)
      if (p->ops[i].ndeps > 1) prune(&pr, &p->ops[i]);
    rc = timing(p, order, keep_turnaround, rep);
  }
  free(pr.stamp);
  free(pr.stack);
  free(order);
  return rc;
}
