/* Schedule inference: the packets lost (include/jctlab/infer.h, "Losses").
 *
 * Faults are kept per flow, sorted by unwrapped PSN. They come from three
 * things the scan sees, in the inspector's definitions (inspect.h):
 * - a gap: first transmissions missing at the capture point (lost before
 *   it), one fault per PSN;
 * - re-sent PSNs skipped within a retransmission: a retransmission lost
 *   before the capture point; a fault of its own (`retransmission`) unless
 *   its first transmission is a fault already (then `again`);
 * - a rewind (after a NAK) or a timeout, which recovers the faults in its
 *   range that are not yet recovered. Unrecovered faults just below the
 *   PSN it was first seen at were re-sent and lost again (the responder
 *   NAKs once per gap, so the sender waits out its timer: IBA 9.7.5.2.1,
 *   rxe_resp.c). A rewind after a NAK that nothing explains means its PSN
 *   was lost after the capture point. A timeout nothing explains is no
 *   loss: rxe's timer fired before the ACK reached its completer (an ACK
 *   slow or lost past the capture point; soft-RoCE's go-backs with nothing
 *   lost, as traces/rxe-lab-ring2-nodrop.pcap shows, where a lost packet
 *   past the capture point would have made its successors draw a NAK); the
 *   go-back itself is replayed (infer.h, timer go-backs).
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "infer_int.h"
#include "jctlab/error.h"

#define MAX_GAP_FAULTS 4096u /* faults recorded per gap; a bigger gap is a capture hole */

/* The fault at u on flow f, or -1; *pos gets where it is or would go. */
static long fault_at(const jct__iscan_t *sc, const jct__iflow_t *f, uint64_t u, size_t *pos) {
  size_t lo = 0, hi = f->nfaults;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sc->faults[f->faults[mid]].u < u)
      lo = mid + 1;
    else
      hi = mid;
  }
  *pos = lo;
  return lo < f->nfaults && sc->faults[f->faults[lo]].u == u ? (long)f->faults[lo] : -1;
}

/* Sends of unwrapped PSN u the capture has seen on flow f so far (the
 * scan counts the last JCT__SENT_WINDOW PSNs; 0 further back). */
static uint32_t sent_seen(const jct__iflow_t *f, uint64_t u) {
  if (!f->sent || u > f->hi_u || f->hi_u - u >= JCT__SENT_WINDOW) return 0;
  return f->sent[u % JCT__SENT_WINDOW];
}

/* Fault x (on flow f) lost one more transmission, its copy `copy`
 * (infer.h's copies), behind a hole when the capture point had not yet
 * seen every PSN before it (infer.h's behind). */
static void lost_copy(const jct__iflow_t *f, jct__ifault_t *x, uint32_t copy) {
  if (x->ncopies < JCT_INFER_MAX_COPIES) {
    x->copy[x->ncopies] = copy > UINT8_MAX ? 0 : (uint8_t)copy;
    if (x->u > f->epsn_u) x->behind |= (uint8_t)(1u << x->ncopies);
  }
  if (x->ncopies < UINT8_MAX) x->ncopies++;
}

/* Fault x (on flow f) lost a re-sent copy the capture did not see: the
 * copy after those it saw and those lost before. */
static void lost_again(const jct__iflow_t *f, jct__ifault_t *x) {
  lost_copy(f, x, sent_seen(f, x->u) + x->ncopies + 1);
  x->again++;
}

static long fault_new(jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t ts_ns, bool before) {
  jct__iflow_t *f = &sc->flows[fi];
  size_t pos;
  long have = fault_at(sc, f, u, &pos);
  if (have >= 0) return have;
  if (jct__grow((void **)&sc->faults, &sc->capfaults, sc->nfaults, sizeof *sc->faults) ||
      jct__grow((void **)&f->faults, &f->capfaults, f->nfaults, sizeof *f->faults))
    return -1;
  sc->faults[sc->nfaults] =
      (jct__ifault_t){.flow = fi, .u = u, .ts_ns = ts_ns, .before_capture = before};
  lost_copy(f, &sc->faults[sc->nfaults], 1); /* its first transmission, unless retransmission */
  memmove(&f->faults[pos + 1], &f->faults[pos], (f->nfaults - pos) * sizeof *f->faults);
  f->faults[pos] = (uint32_t)sc->nfaults;
  f->nfaults++;
  return (long)sc->nfaults++;
}

/* A rewind to u re-sending `ahead` PSNs: it recovers the faults in its
 * range not yet recovered. Unrecovered faults just below u mean the first
 * packets it re-sent were lost again. With neither, re-sent PSNs skipped
 * since the last rewind explain it, or a fault it rewinds to was lost
 * again, or (no fault at all in range) u was lost after the capture point. */
int jct__iloss_rewind(jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t ahead, bool timeout,
                      uint64_t ts_ns) {
  jct__iflow_t *f = &sc->flows[fi];
  size_t pos;
  fault_at(sc, f, u, &pos);
  bool retx_gap = f->retx_gap, below = false;
  f->retx_gap = false;
  for (size_t i = pos; i > 0; i--) {
    jct__ifault_t *x = &sc->faults[f->faults[i - 1]];
    if (x->recovered || x->u != u - (pos - i) - 1) break;
    lost_again(f, x);
    below = true;
  }
  bool any = false, fresh = false;
  for (size_t i = pos; i < f->nfaults; i++) {
    jct__ifault_t *x = &sc->faults[f->faults[i]];
    if (x->u >= u + ahead) break;
    any = true;
    if (!x->recovered) x->recovered = true, x->timeout = timeout, fresh = true;
  }
  if (fresh || below || retx_gap) return 0;
  if (timeout && !any) return 0;
  if (any) { /* its copy the capture saw last was lost past it (before this one, at u) */
    jct__ifault_t *x = &sc->faults[f->faults[pos]];
    uint32_t copy = sent_seen(f, x->u) + x->ncopies - (x->u == u ? 1 : 0);
    lost_copy(f, x, copy ? copy : 1);
    x->again++;
    return 0;
  }
  /* Below the flow's first PSN seen: never seen, lost before the capture point. */
  long k = fault_new(sc, fi, u, ts_ns, u < JCT__U_BASE);
  if (k < 0) return JCT_ENOMEM;
  sc->faults[k].recovered = true;
  sc->faults[k].timeout = timeout;
  return 0;
}

long jct__iloss_at(const jct__iscan_t *sc, const jct__iflow_t *f, uint64_t u) {
  size_t pos;
  return fault_at(sc, f, u, &pos);
}

int jct__iloss_gap(jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t n, uint64_t ts_ns) {
  for (uint64_t i = 0; i < n && i < MAX_GAP_FAULTS; i++)
    if (fault_new(sc, fi, u + i, ts_ns, true) < 0) return JCT_ENOMEM;
  return 0;
}

int jct__iloss_retx_skip(jct__iscan_t *sc, uint32_t fi, uint64_t from_u, uint64_t to_u,
                         uint64_t ts_ns) {
  for (uint64_t v = from_u; v < to_u && v < from_u + MAX_GAP_FAULTS; v++) {
    size_t pos;
    long k = fault_at(sc, &sc->flows[fi], v, &pos);
    if (k >= 0) {
      lost_again(&sc->flows[fi], &sc->faults[k]);
      continue;
    }
    if ((k = fault_new(sc, fi, v, ts_ns, true)) < 0) return JCT_ENOMEM;
    sc->faults[k].retransmission = true;
    sc->faults[k].ncopies = 0; /* not its first transmission: the copy after those seen */
    sc->faults[k].behind = 0;
    lost_copy(&sc->flows[fi], &sc->faults[k], sent_seen(&sc->flows[fi], v) + 1);
  }
  sc->flows[fi].retx_gap = true;
  return 0;
}
