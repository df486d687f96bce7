/* The schedule executor (include/jctlab/executor.h).
 *
 * Per op: deps still missing, and whether it is eligible (deps in, gap
 * over); a received dep counts when its message is received, a
 * program-order dep when its send completes. Per connection: its ops in
 * order, how many were sent, completed at the sender, received, announced
 * by CTS and CTS seen. A send goes out when the connection's next
 * op is eligible and a CTS for it has arrived. Ops waiting out their gap
 * sit in a small min-heap by due time.
 */
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/executor.h"

typedef struct {
  uint32_t *ops; /* this connection's ops, in op order */
  uint32_t nops;
  uint32_t sent, acked, received, cts_posted, cts_seen;
} conn_state_t;

typedef struct {
  uint64_t due_ns;
  uint32_t op;
} gap_t;

struct jct_exec {
  const jct_schedule_t *s;
  jct_exec_hooks_t hooks;
  uint32_t slots;
  uint32_t *missing; /* deps not yet received, per op */
  bool *eligible;
  uint32_t *dep_start, *dependents; /* CSR: ops that depend on op i */
  uint32_t *conn_ops;               /* storage behind conn_state_t.ops */
  conn_state_t *conns;
  jct_op_timing_t *timing;
  gap_t *heap;
  size_t nheap;
  uint32_t done;
  uint64_t first_start_ns, last_done_ns;
};

static void heap_push(jct_exec_t *e, uint64_t due, uint32_t op) {
  size_t i = e->nheap++;
  while (i > 0 && e->heap[(i - 1) / 2].due_ns > due) {
    e->heap[i] = e->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  e->heap[i] = (gap_t){due, op};
}

static gap_t heap_pop(jct_exec_t *e) {
  gap_t top = e->heap[0], last = e->heap[--e->nheap];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= e->nheap) break;
    if (c + 1 < e->nheap && e->heap[c + 1].due_ns < e->heap[c].due_ns) c++;
    if (e->heap[c].due_ns >= last.due_ns) break;
    e->heap[i] = e->heap[c];
    i = c;
  }
  if (e->nheap) e->heap[i] = last;
  return top;
}

void *jct_exec_data(const jct_exec_t *e) {
  return e->hooks.data;
}

void jct_exec_free(jct_exec_t *e) {
  if (!e) return;
  free(e->missing);
  free(e->eligible);
  free(e->dep_start);
  free(e->dependents);
  free(e->conn_ops);
  free(e->conns);
  free(e->timing);
  free(e->heap);
  free(e);
}

int jct_exec_new(jct_exec_t **out, const jct_schedule_t *s, uint32_t slots,
                 const jct_exec_hooks_t *hooks) {
  *out = NULL;
  jct_exec_t *e = calloc(1, sizeof *e);
  if (!e) return JCT_ENOMEM;
  e->s = s;
  e->hooks = *hooks;
  e->slots = slots ? slots : JCT_EXEC_DEFAULT_SLOTS;
  size_t n = s->nops, ndeps = 0;
  for (uint32_t i = 0; i < s->nops; i++)
    ndeps += s->ops[i].ndeps;
  e->missing = calloc(n, sizeof *e->missing);
  e->eligible = calloc(n, sizeof *e->eligible);
  e->dep_start = calloc(n + 1, sizeof *e->dep_start);
  e->dependents = calloc(ndeps ? ndeps : 1, sizeof *e->dependents);
  e->conn_ops = calloc(n, sizeof *e->conn_ops);
  e->conns = calloc(s->nconns ? s->nconns : 1, sizeof *e->conns);
  e->timing = calloc(n, sizeof *e->timing);
  e->heap = calloc(n, sizeof *e->heap);
  if (!e->missing || !e->eligible || !e->dep_start || !e->dependents || !e->conn_ops || !e->conns ||
      !e->timing || !e->heap) {
    jct_exec_free(e);
    return JCT_ENOMEM;
  }
  /* dependents in CSR form */
  for (uint32_t i = 0; i < s->nops; i++) {
    e->missing[i] = s->ops[i].ndeps;
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++)
      e->dep_start[s->ops[i].deps[d] + 1]++;
  }
  for (size_t i = 0; i < n; i++)
    e->dep_start[i + 1] += e->dep_start[i];
  uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
  if (!fill) {
    jct_exec_free(e);
    return JCT_ENOMEM;
  }
  for (uint32_t i = 0; i < s->nops; i++)
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++) {
      uint32_t p = s->ops[i].deps[d];
      e->dependents[e->dep_start[p] + fill[p]++] = i;
    }
  free(fill);
  /* each connection's ops, in op order */
  for (uint32_t i = 0; i < s->nops; i++)
    e->conns[s->ops[i].conn].nops++;
  uint32_t off = 0;
  for (uint32_t c = 0; c < s->nconns; c++) {
    e->conns[c].ops = e->conn_ops + off;
    off += e->conns[c].nops;
    e->conns[c].nops = 0;
  }
  for (uint32_t i = 0; i < s->nops; i++) {
    conn_state_t *c = &e->conns[s->ops[i].conn];
    c->ops[c->nops++] = i;
  }
  if (e->slots == JCT_EXEC_NO_CTS) /* no flow control: every send announced */
    for (uint32_t c = 0; c < s->nconns; c++)
      e->conns[c].cts_posted = e->conns[c].cts_seen = e->conns[c].nops;
  *out = e;
  return 0;
}

/* Post every send on conn that is eligible, next in order, and announced. */
static int try_send(jct_exec_t *e, uint32_t conn, uint64_t now_ns) {
  conn_state_t *c = &e->conns[conn];
  while (c->sent < c->nops && c->sent < c->cts_seen && e->eligible[c->ops[c->sent]]) {
    uint32_t op = c->ops[c->sent];
    int rc = e->hooks.post_send(e, conn, op, e->s->ops[op].bytes);
    if (rc) return rc;
    e->timing[op].start_ns = now_ns;
    if (!e->first_start_ns || now_ns < e->first_start_ns) e->first_start_ns = now_ns;
    c->sent++;
  }
  return 0;
}

static int make_ready(jct_exec_t *e, uint32_t op, uint64_t now_ns) {
  e->timing[op].ready_ns = now_ns;
  uint64_t gap = e->s->ops[op].gap_ns;
  if (gap) {
    heap_push(e, now_ns + gap, op);
    return 0;
  }
  e->eligible[op] = true;
  return try_send(e, e->s->ops[op].conn, now_ns);
}

static int announce(jct_exec_t *e, uint32_t conn) {
  conn_state_t *c = &e->conns[conn];
  while (c->cts_posted < c->nops && c->cts_posted < c->received + e->slots) {
    int rc = e->hooks.post_cts(e, conn);
    if (rc) return rc;
    c->cts_posted++;
  }
  return 0;
}

int jct_exec_start(jct_exec_t *e, uint64_t now_ns) {
  int rc;
  for (uint32_t c = 0; c < e->s->nconns; c++)
    if ((rc = announce(e, c))) return rc;
  for (uint32_t i = 0; i < e->s->nops; i++)
    if (!e->missing[i] && (rc = make_ready(e, i, now_ns))) return rc;
  return 0;
}

int jct_exec_on_cts(jct_exec_t *e, uint32_t conn, uint64_t now_ns) {
  if (conn >= e->s->nconns) return JCT_EINVAL;
  e->conns[conn].cts_seen++;
  return try_send(e, conn, now_ns);
}

/* op completed in the way kind names: its dependents of that kind lose a
 * missing dep (a dependent on the receiving rank depends on the message as
 * received, one on the sending rank on the send as completed). */
static int release(jct_exec_t *e, uint32_t op, jct_dep_kind_t kind, uint64_t now_ns) {
  int rc = 0;
  for (uint32_t k = e->dep_start[op]; !rc && k < e->dep_start[op + 1]; k++) {
    uint32_t d = e->dependents[k];
    if (jct_schedule_dep_kind(e->s, d, op) != kind) continue;
    if (--e->missing[d] == 0) rc = make_ready(e, d, now_ns);
  }
  return rc;
}

int jct_exec_on_recv(jct_exec_t *e, uint32_t conn, uint32_t imm, uint64_t now_ns) {
  if (conn >= e->s->nconns) return JCT_EINVAL;
  conn_state_t *c = &e->conns[conn];
  if (c->received >= c->nops || c->ops[c->received] != imm) return JCT_EINVAL;
  c->received++;
  e->timing[imm].done_ns = now_ns;
  if (now_ns > e->last_done_ns) e->last_done_ns = now_ns;
  e->done++;
  int rc = announce(e, conn);
  return rc ? rc : release(e, imm, JCT_DEP_RECEIVED, now_ns);
}

int jct_exec_on_sent(jct_exec_t *e, uint32_t conn, uint32_t op, uint64_t now_ns) {
  if (conn >= e->s->nconns) return JCT_EINVAL;
  conn_state_t *c = &e->conns[conn];
  if (c->acked >= c->sent || c->ops[c->acked] != op) return JCT_EINVAL;
  c->acked++;
  return release(e, op, JCT_DEP_ORDER, now_ns);
}

int jct_exec_on_timer(jct_exec_t *e, uint64_t now_ns) {
  while (e->nheap && e->heap[0].due_ns <= now_ns) {
    gap_t g = heap_pop(e);
    e->eligible[g.op] = true;
    int rc = try_send(e, e->s->ops[g.op].conn, now_ns);
    if (rc) return rc;
  }
  return 0;
}

uint64_t jct_exec_next_deadline_ns(const jct_exec_t *e) {
  return e->nheap ? e->heap[0].due_ns : UINT64_MAX;
}

bool jct_exec_done(const jct_exec_t *e) {
  return e->done == e->s->nops;
}

uint64_t jct_exec_jct_ns(const jct_exec_t *e) {
  return jct_exec_done(e) ? e->last_done_ns - e->first_start_ns : 0;
}

const jct_op_timing_t *jct_exec_timing(const jct_exec_t *e, uint32_t op) {
  return op < e->s->nops ? &e->timing[op] : NULL;
}

uint32_t jct_exec_ops_done(const jct_exec_t *e) {
  return e->done;
}
