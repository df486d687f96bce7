/* delay: hold every selected frame for a constant delay plus jitter, with
 * netem's distributions and correlation.
 *
 *     delay TIME [jitter=TIME] [dist=uniform|normal|pareto|paretonormal] [corr=P]
 *
 * A frame seen at now is held until now + d (JCT_HOLD), d drawn per frame
 * as Linux netem does it (net/sched/sch_netem.c, tabledist() and
 * get_crandom(); the tables from iproute2 netem/normal.c, pareto.c,
 * paretonormal.c; tc-netem(8)), with mu = TIME, sigma = jitter:
 *   - no jitter: d = mu exactly;
 *   - uniform (the default): d = mu - sigma + floor(u * 2 sigma), u in [0, 1);
 *   - the others: d = mu + sigma * Q(u), Q the distribution's inverse CDF:
 *       normal        Q = Phi^-1 (standard normal);
 *       pareto        Q = (4/3) ((1 - u)^(-1/3) - 1.5): Pareto with shape 3
 *                     and scale 1, less its mean 1.5, times 4/3;
 *       paretonormal  Q = (normal + 3 pareto) / 4 at the same u;
 *     each clipped to netem's table range, int16 / 8192 (NETEM_DIST_SCALE):
 *     [-4, 32767/8192]. netem's pareto is therefore not zero-mean, unit-sd:
 *     its mean is -0.033 sigma and its sd 0.821 sigma (the tail is cut at
 *     4.5 times the scale); tests check these closed forms.
 *   - a negative d holds nothing (netem sends such a packet at once).
 * u comes from netem's correlated generator: with rho = corr as a 32-bit
 * fraction (rint(corr * UINT32_MAX), as tc makes it: common/rng.h),
 * next = (U * (2^32 - rho') + last * rho') >> 32, rho' = rho + 1,
 * U a fresh 32-bit draw; corr=0 uses U alone. The first `last` of a run is
 * a draw from the seeded PRNG (netem's is unseeded).
 *
 * Where jctlab differs from netem, on purpose:
 *   - netem reduces the correlated value modulo 2 sigma (uniform) or modulo
 *     the table size; the modulo keeps its low bits and discards the high
 *     ones that carry the correlation, so in netem corr= barely correlates
 *     delays. jctlab scales it (u = value / 2^32), so successive delays
 *     have the lag-1 autocorrelation corr (uniform exactly; the others
 *     close to it), which is what tc-netem(8) describes. As in netem, a
 *     correlated u is not uniform: its sd shrinks by sqrt((1-c)/(1+c)).
 *   - netem looks Q up in a 4096-entry table; jctlab computes it with the
 *     C math library (erfc, pow), so quantiles are continuous, not in steps
 *     of 1/4096, while the range clipping above is netem's.
 *   - netem's tfifo sorts by send time, so jitter larger than the gap
 *     between packets reorders them; here the switch holds the queue's head
 *     (JCT_SW_HOLD), so frames keep their order, as netem with a rate or a
 *     FIFO child. Use the reorder kind for netem's reordering.
 *
 * dist= without jitter= is refused, as tc refuses it.
 *
 *     delay nak=K@TIME[,K@TIME...] at=host:RANK
 *
 * holds NAKs instead of every frame, at a host only (jctlab/kdrop.h,
 * delay by NAK): the K-th PSN sequence error NAK the host sends in a
 * repetition (from 1) leaves TIME later, its flow's later packets not
 * before it, everything else at once. Each TIME reads as every spec time
 * (jct_spec_time_ns: 500ns, 10us, 5ms, 1s, ns when bare; at most 100 s)
 * and is emulated, as delay's TIME at a host and the switch's: under
 * --tdf F the kernel, which keeps wall time, holds the NAK TIME x F
 * (jct__hostdrop_cfg_wall, harness/fabric/hostdrop.h). A postmortem on
 * verbs replays a captured requester's slow reaction to a NAK with it
 * (harness/plan/postmortem.c). The switch cannot: its hold keeps a port
 * queue's order, so a held NAK would hold every flow behind it on that
 * port (refused there).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/rng.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/kdrop.h"
#include "spec_int.h"

#define MAX_DELAY_NS 100000000000ull /* 100 s */
#define TABLE_MIN (-4.0)             /* netem's int16 table, in units of sigma */
#define TABLE_MAX (32767.0 / 8192.0)

typedef enum { DIST_UNIFORM, DIST_NORMAL, DIST_PARETO, DIST_PARETONORMAL } dist_t;
static const char *const dist_names[] = {"uniform", "normal", "pareto", "paretonormal"};

typedef struct {
  uint64_t mu_ns, sigma_ns;
  uint32_t nnaks; /* nak=: the NAKs held (kdrop.h) */
  uint32_t nak_k[JCT_KDROP_MAX_NAKS];
  uint64_t nak_hold_ns[JCT_KDROP_MAX_NAKS];
  dist_t dist;
  uint32_t rho; /* correlation as a 32-bit fraction */
  uint32_t last;
  bool primed; /* last drawn: a run's first frame draws it */
} delay_t;

/* ---- netem's correlated generator and distributions ---------------------- */

static double clip(double x) {
  return x < TABLE_MIN ? TABLE_MIN : x > TABLE_MAX ? TABLE_MAX : x;
}

/* Phi^-1(u): Abramowitz & Stegun 26.2.23 as the start (error < 4.5e-4),
 * then Newton steps on Phi(x) = erfc(-x / sqrt 2) / 2. */
static double normal_quantile(double u) {
  if (u <= 0) return -INFINITY;
  if (u >= 1) return INFINITY;
  double q = u < 0.5 ? u : 1 - u;
  double t = sqrt(-2 * log(q));
  double x = t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                     (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  if (u < 0.5) x = -x;
  for (int i = 0; i < 3; i++) {
    double pdf = exp(-x * x / 2) / sqrt(2 * M_PI);
    if (!(pdf > 1e-300)) break;
    x -= (0.5 * erfc(-x / M_SQRT2) - u) / pdf;
  }
  return x;
}

static double pareto_quantile(double u) {
  double x = (4.0 / 3.0) * (pow(1 - u, -1.0 / 3.0) - 1.5);
  return x > TABLE_MAX ? TABLE_MAX : x; /* pareto.c cuts before mixing */
}

/* Q(u) in units of sigma, clipped to netem's table range. */
static double dist_quantile(dist_t d, double u) {
  switch (d) {
  case DIST_NORMAL:
    return clip(normal_quantile(u));
  case DIST_PARETO:
    return clip(pareto_quantile(u));
  case DIST_PARETONORMAL:
    return clip((clip(normal_quantile(u)) + 3 * pareto_quantile(u)) / 4);
  case DIST_UNIFORM:
    break;
  }
  return 2 * u - 1;
}

/* The delay of the next frame, in ns; 0 when negative. */
static uint64_t next_delay_ns(jct_injector_t *inj, delay_t *d) {
  if (d->sigma_ns == 0) return d->mu_ns;
  double u = jct_injector_crandom(inj, d->rho, &d->last) / 4294967296.0;
  double x;
  if (d->dist == DIST_UNIFORM)
    x = (double)d->mu_ns - (double)d->sigma_ns + floor(u * 2 * (double)d->sigma_ns);
  else
    x = (double)d->mu_ns + (double)d->sigma_ns * dist_quantile(d->dist, u);
  return x <= 0 ? 0 : (uint64_t)llround(x);
}

/* ---- the kind ----------------------------------------------------------- */

static int bad(const jct_spec_t *spec, char *err, size_t errlen, const char *word,
               const char *why) {
  snprintf(err, errlen, "%s: %s: %s", spec->text, word, why);
  return JCT_EINVAL;
}

/* nak=K@TIME,...: the NAKs held, K from 1, each named once. */
static int parse_naks(delay_t *d, const jct_spec_t *spec, const char *list, char *err,
                      size_t errlen) {
  const char *p = list;
  while (*p) {
    char *e = (char *)p;
    unsigned long k = isdigit((unsigned char)*p) ? strtoul(p, &e, 10) : 0;
    const char *time = e + 1, *after = *e == '@' ? time + strcspn(time, ",") : e;
    uint64_t ns = UINT64_MAX; /* TIME as every spec time reads (spec_int.h) */
    if (k == 0 || k > UINT32_MAX || *e != '@' ||
        jct__spec_time_text_ns(time, (size_t)(after - time), &ns) < 0 || ns > MAX_DELAY_NS)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "%s: nak=%s: each entry is K@TIME, the K-th NAK (from 1) held TIME "
                       "(at most 100s): nak=1@20ms,3@5ms",
                       spec->text, list);
    for (uint32_t i = 0; i < d->nnaks; i++)
      if (d->nak_k[i] == k)
        return jct__errf(err, errlen, JCT_EINVAL, "%s: nak=%s: NAK %lu is named twice",
                         spec->text, list, k);
    if (d->nnaks == JCT_KDROP_MAX_NAKS)
      return jct__errf(err, errlen, JCT_EINVAL, "%s: nak=%s: more than %u NAKs", spec->text,
                       list, JCT_KDROP_MAX_NAKS);
    d->nak_k[d->nnaks] = (uint32_t)k;
    d->nak_hold_ns[d->nnaks++] = ns;
    p = *after ? after + 1 : after;
  }
  if (!d->nnaks)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: nak=: names no NAK (nak=1@20ms)", spec->text);
  return 0;
}

static int delay_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  delay_t *d = inj->priv;
  const char *naks = jct_spec_get(spec, "nak");
  if (naks) {
    if (jct_spec_get(spec, "jitter") || jct_spec_get(spec, "dist") || jct_spec_get(spec, "corr"))
      return bad(spec, err, errlen, "nak=", "holds NAKs by a constant TIME each: no jitter");
    uint64_t mu = UINT64_MAX;
    int rc = jct_spec_time_ns(spec, "", &mu, err, errlen);
    if (rc) return rc;
    if (mu != UINT64_MAX)
      return bad(spec, err, errlen, "nak=", "gives each NAK its own TIME (nak=1@20ms), no bare TIME");
    if (inj->host < 0)
      return bad(spec, err, errlen, "nak=",
                 "runs at a host only (at=host:RANK): the switch's hold keeps its port queue's "
                 "order, so every flow on the port would wait behind the NAK");
    return parse_naks(d, spec, naks, err, errlen);
  }
  uint64_t mu = UINT64_MAX, sigma = 0;
  double corr = 0;
  dist_t dist = DIST_UNIFORM;
  int rc = jct_spec_time_ns(spec, "", &mu, err, errlen); /* the bare TIME */
  if (!rc) rc = jct_spec_time_ns(spec, "jitter", &sigma, err, errlen);
  if (!rc) rc = jct_spec_prob(spec, "corr", &corr, err, errlen);
  if (rc) return rc;
  if (mu == UINT64_MAX) return bad(spec, err, errlen, "delay", "needs a TIME (delay 50us)");
  if (mu > MAX_DELAY_NS) return bad(spec, err, errlen, "TIME", "is above 100s");
  if (sigma > MAX_DELAY_NS) return bad(spec, err, errlen, "jitter", "is above 100s");
  const char *ds = jct_spec_get(spec, "dist");
  if (ds) {
    size_t i = 0;
    while (i < 4 && strcmp(ds, dist_names[i]) != 0)
      i++;
    if (i == 4) {
      char word[300];
      snprintf(word, sizeof word, "dist=%s", ds);
      return bad(spec, err, errlen, word,
                 "unknown distribution (uniform, normal, pareto, paretonormal)");
    }
    if (sigma == 0 && i != DIST_UNIFORM)
      return bad(spec, err, errlen, "dist", "a distribution needs jitter=TIME");
    dist = (dist_t)i;
  }
  d->mu_ns = mu;
  d->sigma_ns = sigma;
  d->dist = dist;
  d->rho = jct__rng_prob32(corr);
  return 0;
}

static jct_verdict_t delay_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  delay_t *d = inj->priv;
  if (!d->primed) { /* jct_injector_start puts primed back to false */
    d->primed = true;
    d->last = jct_injector_u32(inj);
  }
  uint64_t dl = next_delay_ns(inj, d);
  f->hold_until_ns = now_ns + dl;
  return JCT_HOLD;
}

/* at=host: a constant delay as the kernel program's departure-time stamp
 * (jctlab/kdrop.h, JCT_KDROP_DELAY); jitter and correlation are drawn here,
 * not there. */
static int delay_kernel(const jct_injector_t *inj, struct jct_kdrop_cfg *cfg, char *err,
                        size_t errlen) {
  const delay_t *d = inj->priv;
  if (d->sigma_ns)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%s: jitter= cannot run at a host (its kernel program stamps one constant "
                     "delay); run it on the switch",
                     inj->spec);
  memset(cfg, 0, sizeof *cfg);
  cfg->mode = JCT_KDROP_DELAY;
  cfg->delay_ns = d->mu_ns;
  cfg->nnaks = d->nnaks;
  memcpy(cfg->nak_k, d->nak_k, sizeof cfg->nak_k);
  memcpy(cfg->nak_hold_ns, d->nak_hold_ns, sizeof cfg->nak_hold_ns);
  return 0;
}

const struct jct_injector_ops jct_delay_ops = {
    .name = "delay",
    .usage = "delay TIME [jitter=TIME] [dist=uniform|normal|pareto|paretonormal] [corr=P] | "
             "delay nak=K@TIME[,K@TIME...] at=host:RANK",
    .priv_size = sizeof(delay_t),
    .init = delay_init,
    .process = delay_process,
    .kernel = delay_kernel,
};
