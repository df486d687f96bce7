/* duplicate: send a frame twice, as netem's duplicate.
 *
 *     duplicate p=P [corr=C]
 *
 * netem (net/sched/sch_netem.c, netem_enqueue(); tc-netem(8), "duplicate
 * PERCENT [CORRELATION]") duplicates a packet when its 32-bit duplicate
 * probability is nonzero and at or above the draw: P is rint(P *
 * UINT32_MAX) as tc makes it (common/rng.h), p=0 never duplicates and p=1
 * always does. netem clones the packet before changing it and enqueues the
 * clone at the root of the device's qdisc tree, marked so that no netem
 * duplicates it again; the clone then meets every qdisc of the tree, this
 * netem's loss, delay and rate included.
 *
 * In jctlab the kind returns JCT_DUPLICATE: the frame goes on through the
 * chain, and the switch hands the hook site (the port and side the
 * injector sits on) a copy of the frame as it arrived there, which meets
 * that site's injectors again from the first, as a frame of its own
 * (harness/fabric/chain.h): the site's chain plays the qdisc tree, its
 * first injector the root. Nothing duplicates the copy again. The copy is
 * queued behind the frame (netem enqueues the clone first; the bytes are
 * the same, so only the injectors' draws could tell them apart, and with
 * the original first it is the packet's first transmission at the site).
 *
 * The draw is packet-keyed (jct_injector_packet_u32), as drop p='s: the
 * same seed duplicates the same packets whatever order they arrive in, and
 * a go-back copy of a PSN never lost draws what its first transmission
 * drew, so it is duplicated too when that was. With corr=C the keyed draw
 * goes through netem's correlated generator (get_crandom(): next = (U *
 * (2^32 - rho') + last * rho') >> 32, rho' = rho + 1, U the keyed draw,
 * the first `last` from the seeded stream), so a frame's fate then depends
 * on the frames before it and repeats for frames that arrive in the same
 * order, as the Markov loss models'. A copy passes without a draw.
 *
 * Where a chain differs from one netem: netem lets a packet it both
 * duplicates and loses go out once; here loss is another injector. One
 * before duplicate drops the frame before it is copied; one after it draws
 * for the frame and for the copy, and the copy of a frame it dropped draws
 * anew (its PSN was lost at the site), otherwise the copy shares the
 * frame's fate.
 */
#include <stdio.h>

#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"

typedef struct {
  uint32_t p;   /* 32-bit fraction, netem's q->duplicate */
  uint32_t rho; /* correlation as a 32-bit fraction, netem's dup_cor.rho */
  uint32_t last;
  bool primed; /* last drawn: a run's first correlated draw sets it */
} duplicate_t;

static int duplicate_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  duplicate_t *d = inj->priv;
  double p = -1, corr = 0;
  int rc = jct_spec_prob(spec, "p", &p, err, errlen);
  if (!rc) rc = jct_spec_prob(spec, "corr", &corr, err, errlen);
  if (rc) return rc;
  if (p < 0) {
    snprintf(err, errlen, "%s: p=: duplicate needs p=P, the probability to send a frame twice",
             spec->text);
    return JCT_EINVAL;
  }
  d->p = jct__rng_prob32(p);
  d->rho = jct__rng_prob32(corr);
  return 0;
}

static jct_verdict_t duplicate_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)now_ns;
  duplicate_t *d = inj->priv;
  if (f->copy || d->p == 0) return JCT_PASS;
  uint32_t u = jct_injector_packet_u32(inj, f, 0);
  if (d->rho) {
    if (!d->primed) { /* jct_injector_start puts primed back to false */
      d->primed = true;
      d->last = jct_injector_u32(inj);
    }
    uint64_t r = (uint64_t)d->rho + 1;
    d->last = (uint32_t)(((uint64_t)u * ((1ull << 32) - r) + (uint64_t)d->last * r) >> 32);
    u = d->last;
  }
  return d->p >= u ? JCT_DUPLICATE : JCT_PASS;
}

const struct jct_injector_ops jct_duplicate_ops = {
    .name = "duplicate",
    .usage = "duplicate p=P [corr=C]  (netem: one copy more of a frame with P)",
    .priv_size = sizeof(duplicate_t),
    .init = duplicate_init,
    .process = duplicate_process,
};
