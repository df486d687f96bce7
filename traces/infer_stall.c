/* Schedule inference: a sender's transmit stalls (infer.h, the rule and
 * its sources). The scan keeps each flow's first transmissions with the
 * oldest PSN unacknowledged when each went (infer_scan.c); after it, a gap between two
 * consecutive PSNs of one message that is far longer than the flow's
 * packet spacing and that nothing on the wire explains (a go-back between
 * them, or a full window) is a stall of the sending host. */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "infer_int.h"
#include "jctlab/error.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Whether the send at index k follows k - 1 in the same message, one PSN on. */
static bool in_message(const jct__iscan_t *sc, const jct__iflow_t *f, size_t k) {
  const struct jct__isend *a = &f->fresh[k - 1], *b = &f->fresh[k];
  if (b->u != a->u + 1 || b->ts_ns < a->ts_ns) return false;
  long ma = jct__iscan_msg_at(sc, f, a->u);
  return ma >= 0 && ma == jct__iscan_msg_at(sc, f, b->u) && sc->msgs[ma].first_u != b->u;
}

/* The flow's median spacing of consecutive first transmissions within a
 * message; 0 with fewer than JCT_INFER_STALL_MIN_SAMPLES of them. */
static int median_spacing(const jct__iscan_t *sc, const jct__iflow_t *f, uint64_t *out) {
  *out = 0;
  uint64_t *d = malloc((f->nfresh ? f->nfresh : 1) * sizeof *d);
  if (!d) return JCT_ENOMEM;
  size_t n = 0;
  for (size_t k = 1; k < f->nfresh; k++)
    if (in_message(sc, f, k)) d[n++] = f->fresh[k].ts_ns - f->fresh[k - 1].ts_ns;
  if (n >= JCT_INFER_STALL_MIN_SAMPLES) {
    qsort(d, n, sizeof *d, cmp_u64);
    *out = d[n / 2];
  }
  free(d);
  return 0;
}

/* A go-back of flow fi shown in (from_ns, to_ns]: the requester re-sent. */
static bool go_back_between(const jct__iscan_t *sc, uint32_t fi, uint64_t from_ns, uint64_t to_ns) {
  for (size_t i = 0; i < sc->ngobacks; i++) {
    const jct__igoback_t *g = &sc->gobacks[i];
    if (g->flow == fi && g->ts_ns > from_ns && g->ts_ns <= to_ns) return true;
  }
  return false;
}

int jct__istall_find(jct__iscan_t *sc) {
  /* The floor in the capture's own time (infer.h): a part of its timer. */
  sc->stall_min_ns =
      sc->timer_est_ns ? sc->timer_est_ns / JCT_INFER_STALL_TIMER_DIV : JCT_INFER_STALL_MIN_NS;
  for (size_t fi = 0; fi < sc->nflows; fi++) {
    const jct__iflow_t *f = &sc->flows[fi];
    uint64_t spacing;
    if (median_spacing(sc, f, &spacing)) return JCT_ENOMEM;
    if (!spacing) continue;
    uint64_t floor = spacing * JCT_INFER_STALL_SPACINGS;
    if (floor < sc->stall_min_ns) floor = sc->stall_min_ns;
    for (size_t k = 1; k < f->nfresh; k++) {
      const struct jct__isend *a = &f->fresh[k - 1], *b = &f->fresh[k];
      uint64_t gap = b->ts_ns - a->ts_ns;
      if (!in_message(sc, f, k) || gap <= floor) continue;
      if (a->u + 1 - a->una_u >= JCT_INFER_STALL_WINDOW_PSNS) continue; /* waited for ACKs */
      if (go_back_between(sc, (uint32_t)fi, a->ts_ns, b->ts_ns)) continue;
      if (jct__grow((void **)&sc->stalls, &sc->capstalls, sc->nstalls, sizeof *sc->stalls))
        return JCT_ENOMEM;
      sc->stalls[sc->nstalls++] =
          (jct__istall_t){.flow = (uint32_t)fi,
                          .msg = (uint32_t)jct__iscan_msg_at(sc, f, b->u),
                          .u = b->u,
                          .gap_ns = gap,
                          .stall_ns = gap - spacing,
                          .spacing_ns = spacing,
                          .unacked = b->una_u <= a->u + 1 ? (uint32_t)(a->u + 1 - b->una_u) : 0};
    }
  }
  return 0;
}
