/* Checking, scaling and freeing schedules (include/jctlab/schedule.h). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"

#define fail(err, errlen, ...) jct__errf(err, errlen, JCT_EINVAL, __VA_ARGS__)

/* Kahn's algorithm over the dep edges; reports one op on a cycle. */
static int check_acyclic(const jct_schedule_t *s, char *err, size_t errlen) {
  uint32_t *indeg = calloc(s->nops, sizeof *indeg);
  uint32_t *start = calloc((size_t)s->nops + 1, sizeof *start);
  uint32_t *succ = NULL, *queue = calloc(s->nops, sizeof *queue);
  size_t nedges = 0;
  int rc = JCT_ENOMEM;
  if (!indeg || !start || !queue) goto out;
  for (uint32_t i = 0; i < s->nops; i++) {
    nedges += s->ops[i].ndeps;
    indeg[i] = s->ops[i].ndeps;
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++)
      start[s->ops[i].deps[d] + 1]++;
  }
  for (uint32_t i = 0; i < s->nops; i++)
    start[i + 1] += start[i];
  succ = malloc((nedges ? nedges : 1) * sizeof *succ);
  if (!succ) goto out;
  {
    uint32_t *fill = calloc(s->nops, sizeof *fill);
    if (!fill) goto out;
    for (uint32_t i = 0; i < s->nops; i++)
      for (uint32_t d = 0; d < s->ops[i].ndeps; d++) {
        uint32_t p = s->ops[i].deps[d];
        succ[start[p] + fill[p]++] = i;
      }
    free(fill);
  }
  size_t head = 0, tail = 0;
  for (uint32_t i = 0; i < s->nops; i++)
    if (!indeg[i]) queue[tail++] = i;
  while (head < tail) {
    uint32_t p = queue[head++];
    for (uint32_t e = start[p]; e < start[p + 1]; e++)
      if (--indeg[succ[e]] == 0) queue[tail++] = succ[e];
  }
  rc = 0;
  if (tail < s->nops) {
    for (uint32_t i = 0; i < s->nops; i++)
      if (indeg[i]) {
        rc = fail(err, errlen, "op %u: its deps form a cycle", i);
        break;
      }
  }
out:
  free(indeg);
  free(start);
  free(succ);
  free(queue);
  return rc;
}

int jct_schedule_validate(const jct_schedule_t *s, char *err, size_t errlen) {
  if (s->nranks == 0) return fail(err, errlen, "schedule has zero ranks");
  if (s->nops == 0) return fail(err, errlen, "schedule has no ops");
  for (uint32_t c = 0; c < s->nconns; c++) {
    const jct_conn_t *k = &s->conns[c];
    if (k->src >= s->nranks || k->dst >= s->nranks)
      return fail(err, errlen, "connection %u: rank %u does not exist (%u ranks)", c,
                  k->src >= s->nranks ? k->src : k->dst, s->nranks);
    if (k->src == k->dst)
      return fail(err, errlen, "connection %u: joins rank %u to itself", c, k->src);
  }
  /* Every op's connection first: a dep looks at another op's connection. */
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *op = &s->ops[i];
    if (op->conn >= s->nconns)
      return fail(err, errlen, "op %u: connection %u does not exist (%u connections)", i, op->conn,
                  s->nconns);
    if (op->bytes == 0) return fail(err, errlen, "op %u: sends zero bytes", i);
  }
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *op = &s->ops[i];
    uint32_t rank = s->conns[op->conn].src;
    for (uint32_t d = 0; d < op->ndeps; d++) {
      uint32_t dep = op->deps[d];
      if (dep >= s->nops)
        return fail(err, errlen, "op %u: dep %u does not exist (%u ops)", i, dep, s->nops);
      if (dep == i) return fail(err, errlen, "op %u: depends on itself", i);
      const jct_conn_t *dc = &s->conns[s->ops[dep].conn];
      if (dc->dst != rank && dc->src != rank)
        return fail(err, errlen,
                    "op %u: dep %u is a message from rank %u to rank %u, neither to nor from "
                    "rank %u",
                    i, dep, dc->src, dc->dst, rank);
    }
  }
  return check_acyclic(s, err, errlen);
}

jct_dep_kind_t jct_schedule_dep_kind(const jct_schedule_t *s, uint32_t op, uint32_t dep) {
  uint32_t rank = s->conns[s->ops[op].conn].src;
  return s->conns[s->ops[dep].conn].dst == rank ? JCT_DEP_RECEIVED : JCT_DEP_ORDER;
}

const char *jct_dep_kind_name(jct_dep_kind_t k) {
  return k == JCT_DEP_ORDER ? "order" : "received";
}

#define TWO_TO_64 18446744073709551616.0

/* bytes x factor to the nearest byte, at least 1; false when it does not fit. */
static bool scaled(uint64_t bytes, double factor, uint64_t *out) {
  double b = (double)bytes * factor;
  if (b + 0.5 >= TWO_TO_64) return false;
  *out = b < 1 ? 1 : (uint64_t)(b + 0.5);
  return true;
}

int jct_schedule_scale(jct_schedule_t *s, double factor, char *err, size_t errlen) {
  if (!isfinite(factor) || !(factor > 0))
    return fail(err, errlen, "scale: %g is not a factor > 0", factor);
  if (factor == 1) return 0;
  uint64_t b;
  for (uint32_t i = 0; i < s->nops; i++) /* all checked before any is changed */
    if (!scaled(s->ops[i].bytes, factor, &b))
      return fail(err, errlen, "scale: op %u's %llu bytes x %g do not fit in 64 bits", i,
                  (unsigned long long)s->ops[i].bytes, factor);
  if (s->bytes && !scaled(s->bytes, factor, &b))
    return fail(err, errlen, "scale: the schedule's %llu bytes x %g do not fit in 64 bits",
                (unsigned long long)s->bytes, factor);
  for (uint32_t i = 0; i < s->nops; i++)
    scaled(s->ops[i].bytes, factor, &s->ops[i].bytes);
  if (s->bytes) scaled(s->bytes, factor, &s->bytes);
  return 0;
}

double jct_schedule_busbw_factor(const jct_schedule_t *s) {
  double n = s->nranks;
  if (s->nranks < 2) return 1.0;
  if (strcmp(s->algorithm, "all-to-all") == 0 || strcmp(s->algorithm, "all-gather") == 0 ||
      strcmp(s->algorithm, "reduce-scatter") == 0)
    return (n - 1) / n;
  if (strcmp(s->algorithm, "broadcast") == 0) return 1.0;
  /* incast: S is each sender's; the receiver's link carries (N-1)·S. */
  if (strcmp(s->algorithm, "incast") == 0) return n - 1;
  return 2 * (n - 1) / n;
}

void jct_schedule_free(jct_schedule_t *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->nops; i++)
    free(s->ops[i].deps);
  free(s->ops);
  free(s->conns);
  jct_profile_free(s->profile);
  free(s);
}
