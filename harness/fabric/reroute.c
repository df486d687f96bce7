/* Rerouting around a leaf-spine cable that is down (reroute.h). */
#include <stdlib.h>

#include "jctlab/clos.h"
#include "jctlab/error.h"
#include "reroute.h"

int jct__reroute_init(jct__reroute_t *r, uint32_t L, uint32_t S, uint32_t H, uint64_t detect_ns) {
  *r = (jct__reroute_t){.L = L, .S = S, .H = H, .detect_ns = detect_ns};
  r->leaf = calloc(L, sizeof *r->leaf);
  r->group = malloc((size_t)L * L * sizeof *r->group);
  r->cable = calloc((size_t)L * S, sizeof *r->cable);
  if (!r->leaf || !r->group || !r->cable) {
    jct__reroute_free(r);
    return JCT_ENOMEM;
  }
  for (size_t i = 0; i < (size_t)L * L; i++)
    r->group[i] = -1;
  for (size_t c = 0; c < (size_t)L * S; c++)
    r->cable[c].due_ns = UINT64_MAX;
  return 0;
}

void jct__reroute_free(jct__reroute_t *r) {
  free(r->leaf);
  free(r->group);
  free(r->cable);
  *r = (jct__reroute_t){0};
}

/* Every leaf's groups from the cables' withdrawn states. */
static void apply(jct__reroute_t *r) {
  for (uint32_t i = 0; i < r->L; i++)
    for (uint32_t j = 0; j < r->L; j++) {
      int32_t g = r->group[i * r->L + j];
      if (g < 0) continue;
      for (uint32_t s = 0; s < r->S; s++) {
        bool up = !r->cable[i * r->S + s].withdrawn && !r->cable[j * r->S + s].withdrawn;
        jct_switch_ecmp_member_up(r->leaf[i], (uint32_t)g, r->H + s, up);
      }
    }
}

static void close_period(jct__cable_t *c, uint64_t now_ns) {
  if (c->down && now_ns > c->since_ns) c->down_ns += now_ns - c->since_ns;
}

void jct__reroute_reset(jct__reroute_t *r, uint64_t now_ns) {
  bool any = false;
  for (size_t k = 0; k < (size_t)r->L * r->S; k++) {
    jct__cable_t *c = &r->cable[k];
    close_period(c, now_ns);
    any |= c->withdrawn;
    c->down = c->withdrawn = false;
    c->since_ns = now_ns;
    c->due_ns = UINT64_MAX;
  }
  if (any) apply(r);
}

void jct__reroute_see(jct__reroute_t *r, uint32_t k, bool down, uint64_t now_ns) {
  jct__cable_t *c = &r->cable[k];
  if (c->down == down) return;
  close_period(c, now_ns);
  c->down = down;
  c->since_ns = now_ns;
  /* a change the ends have not acted on yet cancels out; else they act
   * detect_ns from now */
  if (c->withdrawn == down || r->detect_ns == JCT_CLOS_REROUTE_OFF)
    c->due_ns = UINT64_MAX;
  else
    c->due_ns = now_ns + r->detect_ns;
}

uint64_t jct__reroute_next_ns(const jct__reroute_t *r) {
  uint64_t d = UINT64_MAX;
  for (size_t k = 0; k < (size_t)r->L * r->S; k++)
    if (r->cable[k].due_ns < d) d = r->cable[k].due_ns;
  return d;
}

void jct__reroute_tick(jct__reroute_t *r, uint64_t now_ns, jct__reroute_cb cb, void *arg) {
  for (uint32_t k = 0; k < r->L * r->S; k++) {
    jct__cable_t *c = &r->cable[k];
    if (c->due_ns > now_ns) continue;
    c->due_ns = UINT64_MAX;
    c->withdrawn = c->down;
    if (c->withdrawn)
      c->reroutes++;
    else
      c->restores++;
    apply(r);
    if (cb) cb(arg, k, c->withdrawn);
  }
}

uint64_t jct__reroute_down_ns(const jct__reroute_t *r, uint32_t k, uint64_t now_ns) {
  const jct__cable_t *c = &r->cable[k];
  return c->down_ns + (c->down && now_ns > c->since_ns ? now_ns - c->since_ns : 0);
}
