/* The ranks' bootstrap of their QP ends (rank_world.h). */
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/roce.h"
#include "jctlab/topo.h"
#include "rank_world.h"

/* splitmix64 (Steele, Lea & Flood, OOPSLA 2014): one draw per end. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint32_t addr_be(uint32_t rank) {
  jct_addr_t a = jct_rank_ipv4(rank);
  uint32_t v;
  memcpy(&v, a.bytes, sizeof v);
  return v;
}

void jct__rank_own_ends(const jct_schedule_t *s, uint32_t rank, uint64_t seed,
                        jct__rank_end_t *ends) {
  memset(ends, 0, 2 * (size_t)s->nconns * sizeof *ends);
  for (uint32_t c = 0; c < s->nconns; c++)
    for (uint32_t d = 0; d < 2; d++) {
      uint32_t owner = d ? s->conns[c].dst : s->conns[c].src;
      if (owner != rank) continue;
      jct__rank_end_t *e = &ends[2 * c + d];
      e->qpn = jct__uroce_qpn(c, d == 1);
      e->psn = (uint32_t)mix(seed ^ mix(((uint64_t)rank << 32) | (2u * c + d))) & JCT_PSN_MASK;
      e->addr_be = addr_be(owner);
    }
}

int jct__rank_merge_ends(const jct_schedule_t *s, const jct__rank_end_t *all, uint32_t *sq_psn,
                         char *err, size_t errlen) {
  size_t per = 2 * (size_t)s->nconns;
  for (uint32_t c = 0; c < s->nconns; c++)
    for (uint32_t d = 0; d < 2; d++) {
      uint32_t owner = d ? s->conns[c].dst : s->conns[c].src;
      const jct__rank_end_t *e = &all[owner * per + 2 * c + d];
      /* A task whose setup failed announces nothing: its own reason (its
       * READY) says why, not a mismatch. */
      if (!e->qpn && !e->addr_be)
        return jct__errf(err, errlen, JCT_EIO, "rank %u announced no QP ends: its setup failed",
                         owner);
      if (e->qpn != jct__uroce_qpn(c, d == 1) || e->addr_be != addr_be(owner))
        return jct__errf(err, errlen, JCT_EINVAL,
                         "connection %u: rank %u announced QPN 0x%x for its %s end, not 0x%x "
                         "(another jctlab, or another schedule?)",
                         c, owner, e->qpn, d ? "destination" : "source",
                         jct__uroce_qpn(c, d == 1));
      sq_psn[2 * c + d] = e->psn;
    }
  return 0;
}
