/* Fuzz target for the schedule loader: the input is handed as JSON text to
 * jct_schedule_loads() (include/jctlab/schedule.h), which parses it with
 * jansson, checks every field, then validates the schedule as a whole.
 *
 * A load that fails must say why (err non-empty, *out NULL, JCT_EINVAL or
 * JCT_ENOMEM). A load that succeeds must give a schedule that keeps every
 * promise of schedule.h, checked here independently of schedule.c:
 *  - at least one rank and one op; every connection joins two different
 *    existing ranks; every op names an existing connection and sends at
 *    least one byte; every dep names another existing op whose message goes
 *    to or comes from this op's sender, and jct_schedule_dep_kind() says
 *    which; the deps have no cycle (our own Kahn's pass);
 *  - jct_schedule_validate() accepts it again, and the busbw factor is in
 *    (0, 2];
 *  - validate() still catches a fault planted in it (an op depending on
 *    itself, an op naming a missing connection), with a message; the fault
 *    is undone before the schedule is freed;
 *  - its profile (profile.h), when it has one: links name existing ranks
 *    or none, addresses are terminated, an MTU is at least 1 byte, a link
 *    rate at least 1 bit/s, and a retransmit timeout is 4.096 us x
 *    2^timeout_exp.
 * A broken promise calls abort(), so the fuzzer keeps the input.
 *
 * Built with libFuzzer when JCT_FUZZ is on; without it, replay_main.c
 * replays files through the same function, which is how ctest runs the
 * corpus in fuzz/corpus/schedule/ (synthesised schedules and hand-written
 * broken ones). fuzz/schedule.dict lists the JSON keys for the fuzzer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/schedule.h"

/* Called by libFuzzer, or by replay_main.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_schedule: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

/* Kahn's algorithm, written apart from schedule.c's: 1 when every op can
 * be ordered after its deps, 0 when not, -1 when out of memory. Needs the
 * deps to be in range. */
static int acyclic(const jct_schedule_t *s) {
  uint32_t n = s->nops;
  uint32_t *left = calloc(n, sizeof *left);        /* deps not yet done */
  uint32_t *start = calloc(n + 1u, sizeof *start); /* op p's dependants are */
  uint32_t *fill = calloc(n, sizeof *fill);        /* dependant[start[p] ..] */
  uint32_t *ready = calloc(n, sizeof *ready);
  uint32_t *dependant = NULL;
  size_t edges = 0;
  int ok = -1;
  if (!left || !start || !fill || !ready) goto out;
  for (uint32_t i = 0; i < n; i++) {
    left[i] = s->ops[i].ndeps;
    edges += s->ops[i].ndeps;
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++)
      start[s->ops[i].deps[d] + 1u]++;
  }
  for (uint32_t p = 0; p < n; p++)
    start[p + 1u] += start[p];
  dependant = malloc((edges ? edges : 1) * sizeof *dependant);
  if (!dependant) goto out;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t d = 0; d < s->ops[i].ndeps; d++) {
      uint32_t p = s->ops[i].deps[d];
      dependant[start[p] + fill[p]++] = i;
    }
  size_t head = 0, tail = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!left[i]) ready[tail++] = i;
  while (head < tail) {
    uint32_t p = ready[head++];
    for (uint32_t e = start[p]; e < start[p + 1u]; e++)
      if (--left[dependant[e]] == 0) ready[tail++] = dependant[e];
  }
  ok = tail == n;
out:
  free(left);
  free(start);
  free(fill);
  free(ready);
  free(dependant);
  return ok;
}

static void check_profile(const jct_profile_t *p, uint32_t nranks) {
  if (p->nlinks && !p->links) broken("profile links counted but missing", NULL);
  for (uint32_t i = 0; i < p->nlinks; i++) {
    const jct_profile_link_t *l = &p->links[i];
    if (l->src_rank < -1 || l->dst_rank < -1 ||
        (l->src_rank >= 0 && (uint32_t)l->src_rank >= nranks) ||
        (l->dst_rank >= 0 && (uint32_t)l->dst_rank >= nranks))
      broken("profile link names a missing rank", NULL);
    if (!memchr(l->src, '\0', sizeof l->src) || !memchr(l->dst, '\0', sizeof l->dst))
      broken("profile link address is not terminated", NULL);
    if (l->rate_bps.set && l->rate_bps.value == 0) broken("profile link rate of 0 bit/s", NULL);
  }
  if (p->mtu_bytes.set && p->mtu_bytes.value == 0) broken("profile MTU of 0 bytes", NULL);
  if (p->timeout_exp < -1 || p->timeout_exp > 31) broken("timeout exponent out of [0, 31]", NULL);
  if (p->timeout_exp >= 0 &&
      (!p->timeout_ns.set || p->timeout_ns.value != 4096ull << p->timeout_exp))
    broken("timeout is not 4.096 us x 2^timeout_exp", NULL);
}

static void check_schedule(const jct_schedule_t *s) {
  if (s->nranks == 0) broken("loaded a schedule with no ranks", NULL);
  if (s->nops == 0 || !s->ops) broken("loaded a schedule with no ops", NULL);
  if (s->nconns && !s->conns) broken("connections counted but missing", NULL);
  if (memchr(s->algorithm, '\0', sizeof s->algorithm) == NULL)
    broken("algorithm name is not terminated", NULL);
  for (uint32_t c = 0; c < s->nconns; c++) {
    const jct_conn_t *k = &s->conns[c];
    if (k->src >= s->nranks || k->dst >= s->nranks) broken("connection to a missing rank", NULL);
    if (k->src == k->dst) broken("connection from a rank to itself", NULL);
  }
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_op_t *o = &s->ops[i];
    if (o->conn >= s->nconns) broken("op names a missing connection", NULL);
    if (o->bytes == 0) broken("op of zero bytes", NULL);
    if (o->ndeps && !o->deps) broken("deps counted but missing", NULL);
    for (uint32_t d = 0; d < o->ndeps; d++) {
      uint32_t dep = o->deps[d];
      if (dep >= s->nops) broken("dep names a missing op", NULL);
      if (dep == i) broken("op depends on itself", NULL);
      const jct_conn_t *dc = &s->conns[s->ops[dep].conn];
      uint32_t rank = s->conns[o->conn].src;
      if (dc->dst != rank && dc->src != rank)
        broken("dep is a message neither to nor from the op's sender", NULL);
      if (jct_schedule_dep_kind(s, i, dep) != (dc->dst == rank ? JCT_DEP_RECEIVED : JCT_DEP_ORDER))
        broken("a dep of the wrong kind", NULL);
    }
  }
  if (acyclic(s) == 0) broken("loaded a schedule whose deps have a cycle", NULL);
  if (s->profile) check_profile(s->profile, s->nranks);

  char err[256] = "";
  if (jct_schedule_validate(s, err, sizeof err) != 0) broken("loaded but does not validate", err);
  double f = jct_schedule_busbw_factor(s);
  if (!(f > 0.0 && f <= 2.0)) broken("busbw factor outside (0, 2]", NULL);
}

/* Plant a fault, expect validate() to refuse it with a message, undo it. */
static void expect_refused(const jct_schedule_t *s, const char *fault) {
  char err[256] = "";
  if (jct_schedule_validate(s, err, sizeof err) != JCT_EINVAL)
    broken("validate() accepted a planted fault", fault);
  if (!err[0]) broken("validate() refused without a message", fault);
}

static void check_validate_refuses(jct_schedule_t *s) {
  jct_op_t *o = &s->ops[s->nops - 1];
  uint32_t conn = o->conn;
  o->conn = s->nconns;
  expect_refused(s, "op names a missing connection");
  o->conn = conn;
  if (o->ndeps) {
    uint32_t dep = o->deps[0];
    o->deps[0] = s->nops - 1;
    expect_refused(s, "op depends on itself");
    o->deps[0] = dep;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  jct_schedule_t *s = (jct_schedule_t *)&s; /* not NULL: loads() must set it */
  char err[256] = "";
  int rc = jct_schedule_loads(&s, (const char *)data, size, err, sizeof err);
  if (rc != 0) {
    if (rc != JCT_EINVAL && rc != JCT_ENOMEM) broken("load failed with an unexpected code", err);
    if (s != NULL) broken("load failed but left *out set", err);
    if (!err[0] && rc == JCT_EINVAL) broken("load failed without a message", NULL);
    return 0;
  }
  if (!s) broken("load succeeded without a schedule", NULL);
  check_schedule(s);
  check_validate_refuses(s);
  jct_schedule_free(s);
  return 0;
}
