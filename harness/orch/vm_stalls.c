/* The senders' transmit stalls on the lab's VMs (vm_stalls.h). */
#include <stdio.h>
#include <stdlib.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "vm_stalls.h"

#define MAX_KEPT 64 /* stalls kept per rank and repetition (a capture's, per VM) */

typedef struct {
  jct_timer_t thaw; /* due when the VM goes on; active while it is stopped */
  struct jct__vm_stalls *x;
  uint32_t rank;
  uint32_t n; /* kept, the current one included while stopped */
  uint64_t at[MAX_KEPT], len[MAX_KEPT];
} vm_t;

struct jct__vm_stalls {
  jct_clock_t *clock;
  jct__vm_freeze_fn freeze;
  void *arg;
  uint32_t nranks;
  vm_t vm[];
};

/* The VM goes on at now_ns; its current stall's length is what it took. */
static void thaw(vm_t *v, uint64_t now_ns) {
  jct__vm_stalls_t *x = v->x;
  jct_timer_stop(x->clock, &v->thaw);
  int rc = x->freeze(x->arg, v->rank, false);
  if (rc < 0)
    fprintf(stderr, "jctlab: rank %u's VM: cannot continue it after its stall: %s\n", v->rank,
            jct_strerror(rc));
  if (v->n) {
    uint64_t *at = &v->at[v->n - 1];
    v->len[v->n - 1] = now_ns > *at ? now_ns - *at : 0;
  }
}

static void on_thaw(jct_timer_t *t, uint64_t now_ns) {
  thaw(t->data, now_ns);
}

int jct__vm_stalls_new(jct__vm_stalls_t **out, jct_clock_t *clock, uint32_t nranks,
                       jct__vm_freeze_fn freeze, void *arg) {
  jct__vm_stalls_t *x = calloc(1, sizeof *x + nranks * sizeof(vm_t));
  if (!(*out = x)) return JCT_ENOMEM;
  x->clock = clock;
  x->freeze = freeze;
  x->arg = arg;
  x->nranks = nranks;
  for (uint32_t i = 0; i < nranks; i++) {
    x->vm[i].x = x;
    x->vm[i].rank = i;
    x->vm[i].thaw.data = &x->vm[i];
  }
  return 0;
}

int jct__vm_stalls_stall(void *arg, uint32_t rank, uint64_t stall_ns, uint64_t now_ns) {
  jct__vm_stalls_t *x = arg;
  if (rank >= x->nranks) return JCT_EINVAL;
  vm_t *v = &x->vm[rank];
  uint64_t due = now_ns + stall_ns;
  if (jct_timer_active(&v->thaw)) { /* stopped already: the later end holds */
    if (due > v->thaw.due_ns) jct_timer_start(x->clock, &v->thaw, due, on_thaw);
    return 0;
  }
  int rc = x->freeze(x->arg, rank, true);
  if (rc < 0) return rc;
  if (v->n == MAX_KEPT) { /* the oldest two become one: the time stays counted */
    v->len[0] = v->at[1] + v->len[1] - v->at[0];
    for (uint32_t k = 1; k + 1 < v->n; k++)
      v->at[k] = v->at[k + 1], v->len[k] = v->len[k + 1];
    v->n--;
  }
  v->at[v->n] = now_ns;
  v->len[v->n++] = 0;
  jct_timer_start(x->clock, &v->thaw, due, on_thaw);
  return 0;
}

void jct__vm_stalls_begin(jct__vm_stalls_t *x) {
  for (uint32_t i = 0; x && i < x->nranks; i++)
    x->vm[i].n = 0; /* none stopped: the last repetition's end thawed them */
}

void jct__vm_stalls_thaw_all(jct__vm_stalls_t *x, uint64_t now_ns) {
  for (uint32_t i = 0; x && i < x->nranks; i++)
    if (jct_timer_active(&x->vm[i].thaw)) thaw(&x->vm[i], now_ns);
}

void jct__vm_stalls_of(const jct__vm_stalls_t *x, uint32_t rank, const uint64_t **at,
                       const uint64_t **len, uint32_t *n) {
  *at = *len = NULL;
  *n = 0;
  if (!x || rank >= x->nranks || !x->vm[rank].n) return;
  *at = x->vm[rank].at;
  *len = x->vm[rank].len;
  *n = x->vm[rank].n;
}

void jct__vm_stalls_free(jct__vm_stalls_t *x) {
  if (!x) return;
  jct__vm_stalls_thaw_all(x, jct_now_ns());
  free(x);
}

uint8_t jct__vm_stalls_cts_timeout(uint8_t timeout, uint64_t stall_max_ns, double tdf) {
  if (!timeout || !stall_max_ns) return 0;
  double outlast_ns = 2.0 * (double)stall_max_ns * (tdf > 1 ? tdf : 1);
  uint8_t e = timeout;
  while (e < 31 && 4096.0 * (double)(1ull << e) <= outlast_ns)
    e++;
  return e;
}

uint8_t jct__vm_stalls_run_cts_timeout(const jct_run_opts_t *o, const jct_run_dilation_t *d,
                                       const jct__chain_t *c) {
  if (!jct_run_in_lab(o)) return 0;
  uint64_t stall_max_ns = 0;
  for (size_t i = 0; c && i < jct__chain_len(c); i++) {
    uint64_t ns = jct__chain_get(c, i)->stall_max_ns;
    if (ns > stall_max_ns) stall_max_ns = ns;
  }
  uint8_t timeout = d->verbs_timeout_exp ? d->verbs_timeout_exp : o->timeout;
  return jct__vm_stalls_cts_timeout(timeout, stall_max_ns, d->tdf);
}
