/* One rank's part of a repetition, in its own task (rank_world.h). */
#include <stdlib.h>
#include <time.h>

#include "jctlab/error.h"
#include "rank_world.h"
#ifdef JCT_HAVE_VERBS
#include "harness/lab/agent_host.h"
#include "harness/transport/verbs/verbs.h"
#endif

/* The part's transport: uroce's ranks, or verbs' QPs (built with rdma-core). */
static jct_exec_hooks_t hooks_of(jct__rank_part_t *p) {
#ifdef JCT_HAVE_VERBS
  if (p->verbs) return jct__verbs_hooks(p->verbs);
#endif
  return jct__ranks_hooks(p->ranks);
}

static void attach(jct__rank_part_t *p, jct_exec_t *e) {
#ifdef JCT_HAVE_VERBS
  if (p->verbs) {
    jct__verbs_attach(p->verbs, e);
    return;
  }
#endif
  if (p->ranks) jct__ranks_attach(p->ranks, e);
}

/* uroce's ranks wait for a kick to send; verbs posts at once. */
static void kick(jct__rank_part_t *p) {
  if (p->ranks) jct__ranks_kick(p->ranks);
}

bool jct__rank_part_failed(const jct__rank_part_t *p, char *why, size_t len) {
#ifdef JCT_HAVE_VERBS
  if (p->verbs) return jct__verbs_failed(p->verbs, why, len) != 0;
#endif
  return p->ranks && jct__ranks_failed(p->ranks, why, len);
}

bool jct__rank_part_quiet(const jct__rank_part_t *p) {
#ifdef JCT_HAVE_VERBS
  if (p->verbs) return jct__verbs_outstanding(p->verbs) == 0;
#endif
  return !p->ranks || jct__ranks_quiet(p->ranks);
}

static void on_exec_timer(jct_timer_t *t, uint64_t now_ns) {
  jct__rank_part_t *p = t->data;
  if (p->exec && jct_exec_on_timer(p->exec, now_ns) == 0) kick(p);
}

static void on_start(jct_timer_t *t, uint64_t now_ns) {
  jct__rank_part_t *p = t->data;
  if (!p->exec) return;
  /* verbs: what peers sent before t0 on this clock was kept (verbs.h) and
   * is delivered now, as the agents do before they start. */
  if (!p->ranks) attach(p, p->exec);
  p->rc = jct_exec_start(p->exec, now_ns);
  kick(p);
  jct__rank_part_turn(p);
}

int jct__rank_part_begin(jct__rank_part_t *p, uint64_t t0_ns, bool faulted) {
  jct_exec_hooks_t hooks = hooks_of(p);
  int rc = jct_exec_new(&p->exec, p->s, 0, &hooks);
  if (rc) return rc;
  p->rc = 0;
  if (p->ranks) attach(p, p->exec);
  /* Each repetition from the line rate, as the uroce backend's. */
  if (p->ranks) jct__ranks_rep_start(p->ranks, faulted);
#ifdef JCT_HAVE_VERBS
  if (p->host) { /* as an agent's run message restarts them (cmd_agent.c) */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the programs' clock (bpf_ktime_get_ns) */
    if (jct__agent_host_start(p->host, faulted,
                              (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                              jct_now_ns())) {
      jct_exec_free(p->exec);
      p->exec = NULL;
      return JCT_EIO;
    }
  }
#endif
  p->start_timer.data = p->exec_timer.data = p;
  jct_timer_start(&p->loop->clock, &p->start_timer, t0_ns, on_start);
  return 0;
}

void jct__rank_part_turn(jct__rank_part_t *p) {
  if (!p->exec || jct_timer_active(&p->start_timer)) return;
  uint64_t d = jct_exec_next_deadline_ns(p->exec);
  jct_clock_t *c = &p->loop->clock;
  if (d == UINT64_MAX)
    jct_timer_stop(c, &p->exec_timer);
  else if (!jct_timer_active(&p->exec_timer) || p->exec_timer.due_ns != d)
    jct_timer_start(c, &p->exec_timer, d, on_exec_timer);
}

bool jct__rank_part_done(const jct__rank_part_t *p) {
  if (p->rc || jct__rank_part_failed(p, NULL, 0)) return true;
  if (!p->exec || jct_timer_active(&p->start_timer)) return false;
  for (uint32_t i = 0; i < p->s->nops; i++) {
    const jct_conn_t *c = &p->s->conns[p->s->ops[i].conn];
    const jct_op_timing_t *t = jct_exec_timing(p->exec, i);
    if (c->dst == p->rank && !t->done_ns) return false;
    if (c->src == p->rank && !t->start_ns) return false;
  }
  return jct__rank_part_quiet(p);
}

static uint64_t shift(uint64_t t, int64_t offset_ns) {
  return t ? (uint64_t)((int64_t)t - offset_ns) : 0;
}

void jct__rank_part_timing(const jct__rank_part_t *p, int64_t offset_ns, jct_op_timing_t *out) {
  for (uint32_t i = 0; p->exec && i < p->s->nops; i++) {
    const jct_conn_t *c = &p->s->conns[p->s->ops[i].conn];
    const jct_op_timing_t *t = jct_exec_timing(p->exec, i);
    if (c->src == p->rank) {
      out[i].ready_ns = shift(t->ready_ns, offset_ns);
      out[i].start_ns = shift(t->start_ns, offset_ns);
    }
    if (c->dst == p->rank) out[i].done_ns = shift(t->done_ns, offset_ns);
  }
}

void jct__rank_part_end(jct__rank_part_t *p) {
  jct_timer_stop(&p->loop->clock, &p->start_timer);
  jct_timer_stop(&p->loop->clock, &p->exec_timer);
  attach(p, NULL);
  jct_exec_free(p->exec);
  p->exec = NULL;
}

json_t *jct__rank_part_host_done(jct__rank_part_t *p) {
#ifdef JCT_HAVE_VERBS
  if (p->host) return jct__agent_host_done(p->host);
#endif
  (void)p;
  return NULL;
}
