/* Open holes of a flow (holes.h): a small array in opening order, searched
 * at its front (the hole a go-back fills) and then from its end (the
 * newest holes are the likeliest to be named by a NAK). */
#include "holes.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "jctlab/error.h"

static long find(const jct__holes_t *hs, uint32_t psn) {
  /* A go-back re-sends its oldest PSN first: the oldest hole is the one a
   * retransmission fills most often. */
  if (hs->n && hs->h[0].psn == psn) return 0;
  for (size_t i = hs->n; i > 1; i--)
    if (hs->h[i - 1].psn == psn) return (long)(i - 1);
  return -1;
}

static void drop(jct__holes_t *hs, size_t i) {
  memmove(&hs->h[i], &hs->h[i + 1], (hs->n - i - 1) * sizeof *hs->h);
  hs->n--;
}

static jct__hole_t *add(jct__holes_t *hs, uint32_t psn, uint64_t ts_ns) {
  if (hs->n == JCT__HOLES_MAX) drop(hs, 0);
  if (jct__grow((void **)&hs->h, &hs->cap, hs->n, sizeof *hs->h)) return NULL;
  jct__hole_t *h = &hs->h[hs->n++];
  memset(h, 0, sizeof *h);
  h->psn = psn;
  h->seen_ns = ts_ns;
  return h;
}

/* *hs, made when it is NULL. */
static jct__holes_t *made(jct__holes_t **hs) {
  if (!*hs) *hs = calloc(1, sizeof **hs);
  return *hs;
}

int jct__holes_open(jct__holes_t **hsp, uint32_t psn, uint64_t ts_ns) {
  jct__holes_t *hs = made(hsp);
  if (!hs) return JCT_ENOMEM;
  if (find(hs, psn) >= 0) return 0;
  return add(hs, psn, ts_ns) ? 0 : JCT_ENOMEM;
}

int jct__holes_nak(jct__holes_t **hsp, uint32_t psn, uint64_t ts_ns, uint32_t hi) {
  jct__holes_t *hs = made(hsp);
  if (!hs) return JCT_ENOMEM;
  long i = find(hs, psn);
  jct__hole_t *h = i >= 0 ? &hs->h[i] : add(hs, psn, ts_ns);
  if (!h) return JCT_ENOMEM;
  if (h->has_nak) return 0; /* named again: the first NAK counts */
  h->from_nak = i < 0;
  h->has_nak = true;
  h->nak_ns = ts_ns;
  h->hi_at_nak = hi;
  return 0;
}

bool jct__holes_take(jct__holes_t *hs, uint32_t psn, jct__hole_t *out) {
  if (!hs || !hs->n) return false;
  long i = find(hs, psn);
  if (i < 0) return false;
  *out = hs->h[i];
  drop(hs, (size_t)i);
  return true;
}

void jct__holes_free(jct__holes_t *hs) {
  if (!hs) return;
  free(hs->h);
  free(hs);
}
