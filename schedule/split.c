/* Several QPs per connection (include/jctlab/schedule.h,
 * jct_schedule_split_qps): NCCL_IB_QPS_PER_CONNECTION, each message split
 * across the connection's QPs. */
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/schedule.h"

int jct_schedule_split_qps(jct_schedule_t **out, const jct_schedule_t *s, uint32_t n, char *err,
                           size_t errlen) {
  *out = NULL;
  if (n < 1 || n > JCT_SCHEDULE_MAX_QPS_PER_CONN)
    return jct__errf(err, errlen, JCT_EINVAL, "%u QPs per connection: 1 to %u", n,
                     JCT_SCHEDULE_MAX_QPS_PER_CONN);
  if ((uint64_t)s->nops * n > JCT_SCHEDULE_MAX_OPS ||
      (uint64_t)s->nconns * n > JCT_SCHEDULE_MAX_CONNS)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%u QPs per connection: %llu ops, more than a schedule holds", n,
                     (unsigned long long)s->nops * n);
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].bytes < n)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "op %u: a message of %llu bytes cannot be split across %u QPs", i,
                       (unsigned long long)s->ops[i].bytes, n);
  jct_schedule_t *t = calloc(1, sizeof *t);
  if (!t) return JCT_ENOMEM;
  memcpy(t->algorithm, s->algorithm, sizeof t->algorithm);
  t->nranks = s->nranks;
  t->bytes = s->bytes;
  size_t nc = (size_t)s->nconns * n, no = (size_t)s->nops * n;
  t->conns = calloc(nc ? nc : 1, sizeof *t->conns);
  t->ops = calloc(no ? no : 1, sizeof *t->ops);
  if (!t->conns || !t->ops) {
    jct_schedule_free(t);
    return JCT_ENOMEM;
  }
  t->nconns = s->nconns * n;
  for (uint32_t c = 0; c < s->nconns; c++)
    for (uint32_t q = 0; q < n; q++)
      t->conns[c * n + q] = s->conns[c];
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *o = &s->ops[i];
    for (uint32_t q = 0; q < n; q++) {
      jct_op_t *p = &t->ops[i * n + q];
      /* the first bytes % n parts carry one byte more */
      p->conn = o->conn * n + q;
      p->bytes = o->bytes / n + (q < o->bytes % n);
      p->gap_ns = o->gap_ns;
      p->step = o->step;
      p->ndeps = o->ndeps * n;
      if (p->ndeps && !(p->deps = malloc(p->ndeps * sizeof *p->deps))) {
        t->nops = i * n + q;
        jct_schedule_free(t);
        return JCT_ENOMEM;
      }
      /* every part of every dependency: the message is whole once all are */
      for (uint32_t d = 0; d < o->ndeps; d++)
        for (uint32_t r = 0; r < n; r++)
          p->deps[d * n + r] = o->deps[d] * n + r;
    }
    t->nops = (i + 1) * n;
  }
  *out = t;
  return 0;
}
