/* reorder: netem's packet reordering.
 *
 *     reorder p=P [gap=N] [delay=TIME] [corr=C]
 *
 * netem (net/sched/sch_netem.c, netem_enqueue(); tc-netem(8)) reorders by
 * delaying most packets and sending a few at once, ahead of the delayed
 * ones. With a counter that starts at 0, for each packet:
 *   - if counter < N - 1, or if a draw of netem's correlated generator
 *     (corr=C, as in the delay kind) is above P (both 32-bit fractions,
 *     rint(x * UINT32_MAX) as tc makes them): the packet is delayed by
 *     TIME and counter += 1;
 *   - otherwise it is sent immediately, ahead of the delayed packets, and
 *     counter = 0.
 * So with gap=5 and p=1 every 5th packet overtakes the 4 before it; with
 * p < 1, after N - 1 delayed packets each further packet goes at once with
 * probability P. Defaults as tc: gap=1 (every packet may go at once, with
 * probability P) and, since tc refuses reordering without a delay,
 * delay=1ms. The draw is made only when counter >= N - 1, as in netem.
 *
 * What the switch can do with it. The delayed packets are JCT_HOLD until
 * now + TIME. The packets "sent immediately" must overtake frames held in
 * the same egress queue; the switch's JCT_SW_HOLD keeps queue order (a held
 * head holds the frames behind it) and the hook API has no verdict for
 * "enqueue at the head, ready now" (netem's __qdisc_enqueue_head). Until
 * the switch has one, they are returned as JCT_PASS: they leave no earlier
 * than the held frames ahead of them, so on one queue this kind behaves as
 * a constant delay with the netem decision sequence intact (same frames
 * chosen, same counters); frames of another priority queue do overtake.
 * Change needed: a verdict JCT_EXPEDITE here and JCT_SW_HEAD in switch.h,
 * "forward now, at the head of its queue, ahead of held frames".
 */
#include <stdio.h>

#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"

#define MAX_DELAY_NS 100000000000ull /* 100 s */

typedef struct {
  uint64_t delay_ns;
  uint32_t p;   /* P as a 32-bit fraction, netem's q->reorder */
  uint32_t rho; /* correlation as a 32-bit fraction */
  uint32_t last;
  uint64_t gap, counter;
  bool primed;
} reorder_t;

static int reorder_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  reorder_t *r = inj->priv;
  double p = -1, corr = 0;
  uint64_t gap = 1, delay = 1000000;
  int rc = jct_spec_prob(spec, "p", &p, err, errlen);
  if (!rc) rc = jct_spec_u64(spec, "gap", UINT32_MAX, &gap, err, errlen);
  if (!rc) rc = jct_spec_time_ns(spec, "delay", &delay, err, errlen);
  if (!rc) rc = jct_spec_prob(spec, "corr", &corr, err, errlen);
  if (rc) return rc;
  if (p < 0) {
    snprintf(err, errlen, "%s: needs p=P, the probability to send at once", spec->text);
    return JCT_EINVAL;
  }
  if (gap == 0) {
    snprintf(err, errlen, "%s: gap=0: gap is 1 or more", spec->text);
    return JCT_EINVAL;
  }
  if (delay == 0 || delay > MAX_DELAY_NS) {
    snprintf(err, errlen, "%s: delay: reordering needs a delay in (0, 100s]", spec->text);
    return JCT_EINVAL;
  }
  r->p = jct__rng_prob32(p);
  r->rho = jct__rng_prob32(corr);
  r->gap = gap;
  r->delay_ns = delay;
  return 0;
}

/* netem's decision: true when this frame goes at once. */
static bool goes_at_once(jct_injector_t *inj, reorder_t *r) {
  if (r->counter + 1 < r->gap) return false;
  if (!r->primed) { /* jct_injector_start puts primed back to false */
    r->primed = true;
    r->last = jct_injector_u32(inj);
  }
  uint32_t x = jct_injector_crandom(inj, r->rho, &r->last);
  return r->p != 0 && x <= r->p; /* netem: immediate unless P < x; P = 0 never */
}

static jct_verdict_t reorder_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  reorder_t *r = inj->priv;
  if (goes_at_once(inj, r)) {
    r->counter = 0;
    return JCT_EXPEDITE;
  }
  r->counter++;
  f->hold_until_ns = now_ns + r->delay_ns;
  return JCT_HOLD;
}

const struct jct_injector_ops jct_reorder_ops = {
    .name = "reorder",
    .usage = "reorder p=P [gap=N] [delay=TIME] [corr=C]  (netem: one frame goes at once after "
             "N-1 delayed)",
    .priv_size = sizeof(reorder_t),
    .init = reorder_init,
    .process = reorder_process,
};
