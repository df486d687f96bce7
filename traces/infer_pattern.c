/* Recognising the collective a schedule runs (jct_infer_pattern), from the
 * shape of its connection graph between ranks (channels merged) and the
 * number of ops per connection; works on any schedule, inferred or made by
 * jct_schedule_synth(). Checked in this order, since at N = 2 every
 * AllReduce is a ring:
 * - ring: every rank has one peer out and one peer in, and following them
 *   from rank 0 visits every rank; each connection carries 2(N-1) ops per
 *   repetition (NCCL's ring AllReduce; Patarasuk & Yuan 2009);
 * - halving-doubling: N a power of two >= 4, the peers of r are exactly
 *   r XOR 2^k, and every connection carries an even number of ops (one
 *   while halving, one while doubling; Thakur, Rabenseifner & Gropp 2005);
 * - all-to-all: N >= 3, every ordered pair connected, the same number k
 *   of ops on every connection, and for N < 5 (where a double tree may use
 *   every pair) no chain of deps longer than k ops (the sends of one
 *   repetition wait for nothing of their own);
 * - tree: every connection has its reverse, and the edges (N-1 for one
 *   tree, up to 2(N-1) for NCCL's double binary tree) join all ranks.
 * S, the collective's size: every AllReduce above moves 2(N-1)·S bytes in
 * all (ring: 2(N-1) steps of S/N on N links; a tree: S/2 per tree up and
 * down its N-1 edges, twice; halving-doubling: (N-1)/N·S each way per
 * rank); all-to-all moves (N-1)·S.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/infer.h"

#define MAX_RANKS 4096u

typedef struct {
  const jct_schedule_t *s;
  uint32_t n;
  uint8_t *adj; /* adj[src * n + dst]: connected src -> dst */
  uint32_t *outdeg, *indeg, *ops_per_conn;
  uint32_t pairs;
  uint64_t total;
} graph_t;

static bool same_ops_per_conn(const graph_t *g, uint32_t *k) {
  *k = g->s->nconns ? g->ops_per_conn[0] : 0;
  for (uint32_t c = 1; c < g->s->nconns; c++)
    if (g->ops_per_conn[c] != *k) return false;
  return *k > 0;
}

static bool is_ring(const graph_t *g, char *ev, size_t evlen, uint32_t *reps) {
  uint32_t n = g->n;
  for (uint32_t r = 0; r < n; r++)
    if (g->outdeg[r] != 1 || g->indeg[r] != 1) return false;
  char order[96];
  size_t len = (size_t)snprintf(order, sizeof order, "0");
  uint32_t r = 0, seen = 0;
  do {
    uint32_t next = 0;
    while (!g->adj[(size_t)r * n + next])
      next++;
    r = next;
    seen++;
    if (len < sizeof order - 16) len += (size_t)snprintf(order + len, sizeof order - len, ">%u", r);
  } while (r != 0 && seen <= n);
  if (r != 0 || seen != n) return false;
  if (len >= sizeof order - 16) snprintf(order + len, sizeof order - len, ">...");
  uint32_t k;
  bool even = same_ops_per_conn(g, &k);
  uint32_t per = 2 * (n - 1);
  *reps = even && k % per == 0 ? k / per : 0;
  if (*reps)
    snprintf(ev, evlen,
             "one cycle through all %u ranks (%s), %u ops on each of the %u connections = "
             "2(N-1) x %u repetition%s",
             n, order, k, g->s->nconns, *reps, *reps == 1 ? "" : "s");
  else
    snprintf(ev, evlen,
             "one cycle through all %u ranks (%s), but the ops per connection are not "
             "a multiple of 2(N-1) = %u: a partial capture?",
             n, order, per);
  return true;
}

static bool is_halving_doubling(const graph_t *g, char *ev, size_t evlen, uint32_t *reps) {
  uint32_t n = g->n, levels = 0, k;
  if (n < 4 || (n & (n - 1))) return false;
  while ((1u << levels) < n)
    levels++;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t q = 0; q < n; q++) {
      uint32_t x = r ^ q;
      bool partner = x && !(x & (x - 1));
      if ((bool)g->adj[(size_t)r * n + q] != partner) return false;
    }
  if (!same_ops_per_conn(g, &k) || k % 2) return false;
  *reps = k / 2;
  snprintf(ev, evlen,
           "the peers of every rank r are exactly r XOR 2^k for k < %u (%u pairs of %u "
           "ranks), %u ops per connection (one halving, one doubling, x %u)",
           levels, g->pairs, n, k, *reps);
  return true;
}

/* The longest chain of deps, in ops less one (0: nothing waits). Deps
 * usually name earlier ops; passes repeat until nothing changes. */
static uint32_t dep_depth(const jct_schedule_t *s) {
  uint32_t *d = calloc(s->nops ? s->nops : 1, sizeof *d), max = 0;
  if (!d) return UINT32_MAX;
  for (int pass = 0, changed = 1; changed && pass < 64; pass++) {
    changed = 0;
    for (uint32_t i = 0; i < s->nops; i++)
      for (uint32_t k = 0; k < s->ops[i].ndeps; k++) {
        uint32_t p = s->ops[i].deps[k];
        if (p < s->nops && d[p] + 1 > d[i]) d[i] = d[p] + 1, changed = 1;
      }
  }
  for (uint32_t i = 0; i < s->nops; i++)
    if (d[i] > max) max = d[i];
  free(d);
  return max;
}

static bool is_all_to_all(const graph_t *g, char *ev, size_t evlen, uint32_t *reps) {
  uint32_t n = g->n, k;
  if (n < 3 || g->pairs != n * (n - 1) || !same_ops_per_conn(g, &k)) return false;
  uint32_t depth = dep_depth(g->s);
  /* From 5 ranks on, no tree has every pair; below, one repetition waits for nothing of its own. */
  if (n < 5 && depth >= k) return false;
  *reps = k;
  snprintf(ev, evlen,
           "all %u ordered pairs of %u ranks connected, %u op%s per connection, the "
           "longest chain of deps %u op%s",
           g->pairs, n, k, k == 1 ? "" : "s", depth + 1, depth ? "s" : "");
  return true;
}

static bool is_tree(const graph_t *g, char *ev, size_t evlen) {
  uint32_t n = g->n, maxdeg = 0;
  for (uint32_t r = 0; r < n; r++) {
    for (uint32_t q = 0; q < n; q++)
      if (g->adj[(size_t)r * n + q] && !g->adj[(size_t)q * n + r]) return false;
    if (g->outdeg[r] > maxdeg) maxdeg = g->outdeg[r];
  }
  uint32_t edges = g->pairs / 2;
  if (edges < n - 1 || edges > 2 * (n - 1)) return false;
  uint32_t *stack = malloc(n * sizeof *stack);
  uint8_t *seen = calloc(n, 1);
  uint32_t sp = 0, reached = 1;
  if (!stack || !seen) {
    free(stack);
    free(seen);
    return false;
  }
  stack[sp++] = 0;
  seen[0] = 1;
  while (sp) {
    uint32_t r = stack[--sp];
    for (uint32_t q = 0; q < n; q++)
      if (g->adj[(size_t)r * n + q] && !seen[q]) seen[q] = 1, reached++, stack[sp++] = q;
  }
  free(stack);
  free(seen);
  if (reached != n) return false;
  snprintf(ev, evlen,
           "every connection has its reverse: %u edges join all %u ranks (one tree has "
           "N-1 = %u, a double binary tree up to 2(N-1) = %u), at most %u peers per rank",
           edges, n, n - 1, 2 * (n - 1), maxdeg);
  return true;
}

const char *jct_infer_pattern(const jct_schedule_t *s, char *evidence, size_t evlen,
                              uint64_t *bytes_out, uint32_t *reps_out) {
  char evbuf[256];
  char *ev = evidence && evlen ? evidence : evbuf;
  size_t el = evidence && evlen ? evlen : sizeof evbuf;
  const char *name = "unknown";
  uint32_t reps = 0, n = s->nranks;
  uint64_t bytes = 0;
  graph_t g = {.s = s, .n = n};
  snprintf(ev, el, "nothing to recognise");
  if (n < 2 || n > MAX_RANKS || !s->nconns) goto out;
  g.adj = calloc((size_t)n * n, 1);
  g.outdeg = calloc(n, sizeof *g.outdeg);
  g.indeg = calloc(n, sizeof *g.indeg);
  g.ops_per_conn = calloc(s->nconns, sizeof *g.ops_per_conn);
  if (!g.adj || !g.outdeg || !g.indeg || !g.ops_per_conn) goto out;
  for (uint32_t c = 0; c < s->nconns; c++) {
    const jct_conn_t *k = &s->conns[c];
    if (k->src >= n || k->dst >= n || k->src == k->dst) goto out;
    uint8_t *a = &g.adj[(size_t)k->src * n + k->dst];
    if (!*a) *a = 1, g.outdeg[k->src]++, g.indeg[k->dst]++, g.pairs++;
  }
  for (uint32_t i = 0; i < s->nops; i++) {
    if (s->ops[i].conn < s->nconns) g.ops_per_conn[s->ops[i].conn]++;
    g.total += s->ops[i].bytes;
  }
  uint64_t allreduce = g.total / (2ull * (n - 1));
  if (is_ring(&g, ev, el, &reps)) {
    name = "ring";
  } else if (is_halving_doubling(&g, ev, el, &reps)) {
    name = "halving-doubling";
  } else if (is_all_to_all(&g, ev, el, &reps)) {
    name = "all-to-all";
    bytes = g.total / (n - 1) / reps;
    goto out;
  } else if (is_tree(&g, ev, el)) {
    name = "tree"; /* repetitions cannot be told from channels here */
  } else {
    uint32_t maxo = 0;
    for (uint32_t r = 0; r < n; r++)
      if (g.outdeg[r] > maxo) maxo = g.outdeg[r];
    snprintf(ev, el,
             "%u ranks, %u connections between %u ordered pairs of ranks, up to %u peers "
             "out per rank: not a ring, tree, halving-doubling or all-to-all",
             n, s->nconns, g.pairs, maxo);
    goto out;
  }
  bytes = reps > 1 ? allreduce / reps : allreduce;
out:
  free(g.adj);
  free(g.outdeg);
  free(g.indeg);
  free(g.ops_per_conn);
  if (bytes_out) *bytes_out = bytes;
  if (reps_out) *reps_out = reps;
  return name;
}
