/* Schedule inference: when rxe's retransmit timer started, for each timer
 * go-back (a go-back with no NAK before it, infer.h).
 *
 * Linux rxe keeps one retransmit timer per QP (qp->retrans_timer):
 * - the requester starts it with a send when it is not pending
 *   (rxe_req.c, update_state: mod_timer unless timer_pending);
 * - the completer restarts it on its way out (rxe_comp.c, COMPST_EXIT)
 *   each time it has worked through the ACKs queued for it, when PSNs are
 *   outstanding then (psn_compare(req.psn, comp.psn) > 0); with none
 *   outstanding it leaves the timer running, so that it runs out with
 *   nothing to retry (COMPST_ERROR_RETRY: no WQE sent, nothing done) and
 *   the next send starts it again;
 * - a NAK sends the requester back to the NAKed PSN (req.psn = comp.psn),
 *   so the completer's exit after it finds nothing outstanding and leaves
 *   the timer as it was: a NAK does not restart it. (The capture agrees:
 *   rxe-lab-ring2-drop1pct.pcap's timer go-back, frame 374, comes 79.1 ms
 *   after the last ACK, frame 206, and 23.0 ms after the NAK, frame 322);
 * - when it fires with PSNs outstanding, the completer sends the requester
 *   back to the oldest unacknowledged PSN (comp.timeout_retry ->
 *   COMPST_ERROR_RETRY -> req.need_retry), whose first send starts it again.
 * So a timer go-back comes one timer after the later of the send that
 * started the timer and the last ACK after which PSNs were outstanding,
 * unless the flow went quiet (everything acknowledged) for longer than the
 * timer in between: the timer ran out then, and the send that ended the
 * quiet stretch started it again. Seen at the capture point, PSNs are
 * outstanding when the flow's highest PSN sent is past the ACK's, and an
 * ACK was acted on before the go-back unless it acknowledged the packet
 * the go-back went back to or later (rxe would not have gone back there)
 * or it came less than a timer before the go-back (a restart then would
 * have put the firing after it: the host's lag delays a timer, nothing
 * hastens it); a slow VM's completer leaves ACKs unprocessed that long.
 *
 * The timer itself comes from the go-backs: the lower median of their
 * shortest possible times (from the latest ACK or send that may have
 * restarted it), rounded down to 4.096 us x 2^n (IBA 9.7.6.1.3: the VMs'
 * lag only adds to it). */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "infer_int.h"
#include "jctlab/error.h"

#define TIMER_UNIT_NS 4096ull /* IBA's local ACK timeout: 4.096 us x 2^timeout */

#define MAX_TEV 4096u /* events kept per flow; the oldest half goes when full */

static int tev_add(jct__iflow_t *f, uint64_t ts_ns, uint64_t u, uint8_t kind) {
  if (f->ntev == MAX_TEV) {
    memmove(f->tev, f->tev + MAX_TEV / 2, (MAX_TEV / 2) * sizeof *f->tev);
    f->ntev = MAX_TEV / 2;
  }
  if (jct__grow((void **)&f->tev, &f->captev, f->ntev, sizeof *f->tev)) return JCT_ENOMEM;
  f->tev[f->ntev++] = (struct jct__itmr_ev){.ts_ns = ts_ns, .u = u, .kind = kind};
  return 0;
}

int jct__itimer_data(jct__iscan_t *sc, uint32_t fi, bool fresh, uint64_t ts_ns) {
  jct__iflow_t *f = &sc->flows[fi];
  bool quiet = f->tmr_quiet;
  if (fresh) f->tmr_quiet = false;      /* outstanding again; a re-sent PSN already ACKed is not */
  if (!f->tmr_arm_ns || f->tmr_fired) { /* not pending: this send starts it */
    f->tmr_arm_ns = ts_ns ? ts_ns : 1;
    f->tmr_fired = false;
    f->ntev = 0;
    return 0;
  }
  return quiet ? tev_add(f, ts_ns, 0, fresh ? JCT__TEV_SEND : JCT__TEV_RESEND) : 0;
}

int jct__itimer_ack(jct__iscan_t *sc, uint32_t fi, uint32_t psn, bool nak, uint64_t ts_ns) {
  jct__iflow_t *f = &sc->flows[fi];
  if (!f->seen || !f->tmr_arm_ns) return 0;
  int32_t d = jct_psn_diff(f->hi, psn & JCT_PSN_MASK);
  if (nak) { /* the requester goes back to psn: no restart, not quiet */
    f->tmr_quiet = false;
    return 0;
  }
  f->tmr_quiet = d <= 0;
  return tev_add(f, ts_ns, (uint64_t)((int64_t)f->hi_u - d), d > 0 ? JCT__TEV_ACK : JCT__TEV_QUIET);
}

/* The go-back just recorded keeps what the timer saw since it was started,
 * less the ACKs of its packet or later: those had not been acted on (rxe
 * would not have gone back to it), so they neither restarted the timer nor
 * made the flow quiet. */
int jct__itimer_go_back(jct__iscan_t *sc, uint32_t fi) {
  jct__iflow_t *f = &sc->flows[fi];
  jct__igoback_t *g = &sc->gobacks[sc->ngobacks - 1];
  g->ref_ns = f->tmr_arm_ns;
  g->qs_first = (uint32_t)sc->nqsends;
  g->nqs = 0;
  for (size_t i = 0; i < f->ntev; i++) {
    const struct jct__itmr_ev *e = &f->tev[i];
    if (e->ts_ns >= g->ts_ns) break;
    if ((e->kind == JCT__TEV_ACK || e->kind == JCT__TEV_QUIET) && e->u >= g->u) continue;
    if (jct__grow((void **)&sc->qsends, &sc->capqsends, sc->nqsends, sizeof *sc->qsends))
      return JCT_ENOMEM;
    sc->qsends[sc->nqsends++] = *e;
    g->nqs++;
  }
  f->tmr_fired = true;
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The reference of go-back g with timer t: from the arming send, each
 * restart no later than t before the go-back (a later one would have put
 * the firing past it: the host's lag delays a timer, nothing hastens it). */
static uint64_t reference(const jct__iscan_t *sc, const jct__igoback_t *g, uint64_t t) {
  uint64_t r = g->ref_ns;
  bool quiet = false;
  for (uint32_t k = 0; k < g->nqs; k++) {
    const struct jct__itmr_ev *e = &sc->qsends[g->qs_first + k];
    if (e->ts_ns + t > g->ts_ns) break;
    if (e->kind == JCT__TEV_ACK) {
      r = e->ts_ns, quiet = false;
    } else if (e->kind == JCT__TEV_QUIET) {
      quiet = true;
    } else if (quiet && e->ts_ns >= r + t) { /* it had run out meanwhile: this send starts it */
      r = e->ts_ns, quiet = false;
    } else if (e->kind == JCT__TEV_SEND) { /* outstanding before it ran out */
      quiet = false;
    }
  }
  return r;
}

int jct__itimer_resolve(jct__iscan_t *sc) {
  uint64_t *lo = malloc((sc->ngobacks ? sc->ngobacks : 1) * sizeof *lo);
  if (!lo) return JCT_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < sc->ngobacks; i++) {
    const jct__igoback_t *g = &sc->gobacks[i];
    if (!g->timer || !g->ref_ns) continue;
    uint64_t r = reference(sc, g, 0); /* the latest it can be */
    lo[n++] = g->ts_ns > r ? g->ts_ns - r : 0;
  }
  uint64_t t = 0;
  if (n) {
    qsort(lo, n, sizeof *lo, cmp_u64);
    uint64_t med = lo[(n - 1) / 2]; /* the lower median: lag only adds */
    for (t = TIMER_UNIT_NS; t * 2 <= med && t < (TIMER_UNIT_NS << 31); t *= 2) {
    }
  }
  free(lo);
  sc->timer_est_ns = t;
  for (size_t i = 0; i < sc->ngobacks; i++) {
    jct__igoback_t *g = &sc->gobacks[i];
    if (!g->timer || !g->ref_ns) continue;
    g->ref_ns = reference(sc, g, t);
    g->timer_ns = g->ts_ns > g->ref_ns ? g->ts_ns - g->ref_ns : 0;
  }
  return 0;
}
