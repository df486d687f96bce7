/* DCQCN's fluid model (include/jctlab/dcqcn_fluid.h says which equations
 * and from where), solved by forward Euler with a delay ring.
 *
 * The probabilities are written with lambda = -ln(1 - p), so that
 * (1-p)^n = exp(-lambda n) for any real n of packets, and the p -> 0 and
 * n -> 0 limits are taken where the division would be 0/0: b -> 1/B and
 * RC' d -> p / (T lambda) (-> 1/T as p -> 0) as T RC' -> 0. At p = 1
 * (q >= Kmax) every packet is marked: a = 1, no increase event ever
 * completes (b = c = d = e = 0), alpha's target is 1.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/dcqcn_fluid.h"
#include "jctlab/error.h"

void jct_fluid_cfg_default(jct_fluid_cfg_t *cfg, uint32_t flows) {
  memset(cfg, 0, sizeof *cfg);
  cfg->flows = flows;
  cfg->line_rate_bps = jct_dcqcn_profile_rate_bps(JCT_DCQCN_PAPER);
  cfg->kmin_bytes = 5000;
  cfg->kmax_bytes = 200000;
  cfg->pmax = 0.01;
  cfg->tau_star_ns = 4000;
  cfg->packet_bytes = 4096 + 58; /* Eth 14, IPv4 20, UDP 8, BTH 12, ICRC 4 */
  jct_dcqcn_params(&cfg->cc, JCT_DCQCN_PAPER);
  cfg->step_ns = 10;
  cfg->duration_ns = 20000000;
  cfg->sample_ns = 50000;
  cfg->fixed_p = -1;
}

int jct_fluid_cfg_check(const jct_fluid_cfg_t *c, char *err, size_t errlen) {
  if (c->flows < 1 || c->flows > JCT_FLUID_MAX_FLOWS)
    return jct__errf(err, errlen, JCT_EINVAL, "fluid: flows %u is outside 1..%d", c->flows,
                     JCT_FLUID_MAX_FLOWS);
  if (!c->line_rate_bps) return jct__errf(err, errlen, JCT_EINVAL, "fluid: the line rate is 0");
  if (!c->kmin_bytes || c->kmin_bytes > c->kmax_bytes)
    return jct__errf(err, errlen, JCT_EINVAL, "fluid: kmin %llu, kmax %llu: need 0 < kmin <= kmax",
                     (unsigned long long)c->kmin_bytes, (unsigned long long)c->kmax_bytes);
  if (!(c->pmax > 0 && c->pmax <= 1))
    return jct__errf(err, errlen, JCT_EINVAL, "fluid: pmax %g is outside (0, 1]", c->pmax);
  if (!c->packet_bytes) return jct__errf(err, errlen, JCT_EINVAL, "fluid: packet size is 0");
  if (!c->step_ns) return jct__errf(err, errlen, JCT_EINVAL, "fluid: the step is 0");
  if (c->tau_star_ns <= c->step_ns)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "fluid: tau_star %llu ns is not above the step %llu ns",
                     (unsigned long long)c->tau_star_ns, (unsigned long long)c->step_ns);
  if (c->duration_ns < c->step_ns || c->sample_ns < c->step_ns)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "fluid: duration and sample interval must be >= the step");
  if (c->fixed_p > 1 || c->fixed_p != c->fixed_p)
    return jct__errf(err, errlen, JCT_EINVAL, "fluid: fixed_p %g is above 1", c->fixed_p);
  if (!c->cc.min_time_between_cnps_ns)
    return jct__errf(err, errlen, JCT_EINVAL, "fluid: the CNP interval tau must be above 0");
  if (c->duration_ns / c->sample_ns > 100000000u)
    return jct__errf(err, errlen, JCT_EINVAL, "fluid: more than 1e8 samples");
  return jct_dcqcn_params_check(&c->cc, err, errlen);
}

static double mark_p(const jct_fluid_cfg_t *c, double q) {
  if (q <= (double)c->kmin_bytes) return 0;
  if (q >= (double)c->kmax_bytes) return 1;
  return c->pmax * (q - (double)c->kmin_bytes) / (double)(c->kmax_bytes - c->kmin_bytes);
}

/* (1-p)^n with lambda = -ln(1-p); lambda INFINITY is p = 1. */
static double survive(double lambda, double n) {
  if (n <= 0) return 1;
  return isinf(lambda) ? 0 : exp(-lambda * n);
}

/* p / ((1-p)^-n - 1): the rate, per packet, of completing an n-packet
 * count without a mark. n > 0. */
static double per_pkt(double p, double lambda, double n) {
  if (isinf(lambda)) return 0;
  if (lambda * n < 1e-12) return lambda > 0 ? p / (lambda * n) : 1 / n;
  return p / expm1(lambda * n);
}

/* One flow's derivatives, given p's lambda and its own lagged rate. */
typedef struct {
  double rc, rt, alpha;
} flow_t;

static void derive(const jct_fluid_cfg_t *c, double p, double lambda, const flow_t *f,
                   double rc_lag_bps, flow_t *d) {
  double pkt_bits = 8.0 * c->packet_bytes;
  double lag_pps = rc_lag_bps / pkt_bits; /* RC' in packets per second */
  double tau = (double)c->cc.min_time_between_cnps_ns * 1e-9;
  double tau_a = (double)c->cc.alpha_period_ns * 1e-9;
  double T = (double)c->cc.rpg_time_reset_ns * 1e-9;
  double F = c->cc.rpg_threshold;
  double a = 1 - survive(lambda, tau * lag_pps);
  double bl = 0, cl = 0; /* RC' b, RC' c: byte-counter events per second */
  if (c->cc.rpg_byte_reset_bytes) {
    double B = (double)c->cc.rpg_byte_reset_bytes / c->packet_bytes;
    double b = per_pkt(p, lambda, B);
    bl = lag_pps * b;
    cl = bl * survive(lambda, F * B);
  }
  /* RC' d, RC' e: timer events per second. As T RC' -> 0, RC' d stays
   * finite (p / (T lambda)) while d does not, so the product is formed
   * directly. */
  double x = T * lag_pps, dl, el;
  if (isinf(lambda))
    dl = 0;
  else if (lambda * x < 1e-12)
    dl = lambda > 0 ? p / (T * lambda) : 1 / T;
  else
    dl = lag_pps * p / expm1(lambda * x);
  el = dl * survive(lambda, F * x);
  double gap = f->rt - f->rc;
  d->rc = -f->rc * f->alpha * a / (2 * tau) + gap * (bl + dl) / 2;
  d->rt = -gap * a / tau + (double)c->cc.rpg_ai_rate_bps * (cl + el);
  d->alpha = c->cc.g / tau_a * ((1 - survive(lambda, tau_a * lag_pps)) - f->alpha);
}

static double clamp(double v, double lo, double hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

void jct_fluid_trace_free(jct_fluid_trace_t *tr) {
  free(tr->t_ns);
  free(tr->queue_bytes);
  free(tr->rc_bps);
  memset(tr, 0, sizeof *tr);
}

int jct_fluid_solve(const jct_fluid_cfg_t *c, jct_fluid_trace_t *tr, char *err, size_t errlen) {
  memset(tr, 0, sizeof *tr);
  int rc = jct_fluid_cfg_check(c, err, errlen);
  if (rc) return rc;
  uint32_t n = c->flows;
  /* The ring holds tau_star, and with queue_delay the longest wait it
   * looks back over (a longer one reads the oldest slot). */
  size_t ring = (size_t)((c->tau_star_ns + (c->queue_delay ? JCT_FLUID_MAX_QUEUE_DELAY_NS : 0)) /
                         c->step_ns) +
                2;
  size_t samples = (size_t)(c->duration_ns / c->sample_ns) + 1;
  flow_t *fl = calloc(n, sizeof *fl);
  double *hq = calloc(ring, sizeof *hq), *hrc = calloc(ring * n, sizeof *hrc);
  double *hseen = calloc(ring, sizeof *hseen);
  tr->t_ns = malloc(samples * sizeof *tr->t_ns);
  tr->queue_bytes = malloc(samples * sizeof *tr->queue_bytes);
  tr->rc_bps = malloc(samples * n * sizeof *tr->rc_bps);
  if (!fl || !hq || !hrc || !hseen || !tr->t_ns || !tr->queue_bytes || !tr->rc_bps) {
    free(fl), free(hq), free(hrc), free(hseen);
    jct_fluid_trace_free(tr);
    return jct__errf(err, errlen, JCT_ENOMEM, "fluid: no memory for %zu samples", samples);
  }
  tr->flows = n;
  double C = (double)c->line_rate_bps, lo = (double)c->cc.rpg_min_rate_bps;
  if (lo > C) lo = C;
  double dt = (double)c->step_ns * 1e-9, q = 0, tau = (double)c->tau_star_ns;
  bool started[JCT_FLUID_MAX_FLOWS] = {0};
  uint64_t steps = c->duration_ns / c->step_ns, j = 0; /* j: the step the RP hears of */
  size_t s = 0;
  for (uint64_t k = 0; k <= steps; k++) {
    uint64_t t_ns = k * c->step_ns;
    for (uint32_t i = 0; i < n; i++)
      if (!started[i] && t_ns >= (uint64_t)i * c->stagger_ns) {
        started[i] = true;
        fl[i] = (flow_t){C, C, 1};
      }
    /* Now's state into the ring, with when the RP hears of it: tau_star
     * later, plus the wait q/C with queue_delay. */
    size_t now = k % ring;
    hq[now] = q;
    hseen[now] = (double)t_ns + tau + (c->queue_delay ? q * 8e9 / C : 0);
    for (uint32_t i = 0; i < n; i++)
      hrc[now * n + i] = started[i] ? fl[i].rc : 0;
    if (t_ns >= (uint64_t)s * c->sample_ns && s < samples) {
      tr->t_ns[s] = t_ns;
      tr->queue_bytes[s] = q;
      for (uint32_t i = 0; i < n; i++)
        tr->rc_bps[s * n + i] = hrc[now * n + i];
      s++;
    }
    if (k == steps) break;
    /* The lagged state: the latest step heard of by now (FIFO: the times
     * heard of never go back, so j only moves on); none yet, the empty
     * start (q 0, no flow sending). */
    if (k - j >= ring) j = k - ring + 1;
    while (j < k && hseen[(j + 1) % ring] <= (double)t_ns)
      j++;
    bool heard = hseen[j % ring] <= (double)t_ns;
    size_t then = j % ring;
    double q_lag = heard ? hq[then] : 0;
    double p = c->fixed_p >= 0 ? c->fixed_p : mark_p(c, q_lag),
           lambda = p >= 1 ? INFINITY : -log1p(-p);
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (!started[i]) continue;
      flow_t d;
      derive(c, p, lambda, &fl[i], heard ? hrc[then * n + i] : 0, &d);
      sum += fl[i].rc;
      fl[i].rc = clamp(fl[i].rc + d.rc * dt, lo, C);
      fl[i].rt = clamp(fl[i].rt + d.rt * dt, lo, C);
      fl[i].alpha = clamp(fl[i].alpha + d.alpha * dt, 0, 1);
    }
    q += (sum - C) * dt / 8;
    if (q < 0) q = 0;
  }
  tr->samples = s;
  free(fl), free(hq), free(hrc), free(hseen);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Linear interpolation between sorted v[0..n-1] at fraction f. */
static double pct(const double *v, size_t n, double f) {
  double at = f * (double)(n - 1);
  size_t i = (size_t)at;
  if (i + 1 >= n) return v[n - 1];
  return v[i] + (v[i + 1] - v[i]) * (at - (double)i);
}

int jct_fluid_summarize(const jct_fluid_trace_t *tr, uint64_t line_rate_bps,
                        jct_fluid_summary_t *o) {
  memset(o, 0, sizeof *o);
  size_t n = tr->samples;
  uint32_t f = tr->flows;
  if (!n || !f || f > JCT_FLUID_MAX_FLOWS) return JCT_EINVAL;
  double C = (double)line_rate_bps;
  size_t cut = n, h = n;
  for (size_t i = 0; i < n && cut == n; i++) {
    double sum = 0;
    for (uint32_t j = 0; j < f; j++)
      sum += tr->rc_bps[i * f + j];
    if (sum < C) cut = i;
  }
  /* The first cut: the lowest sum within 1 ms of the first fall below C
   * (the senders' CNPs come over some samples, not in one). */
  size_t low = cut;
  double low_sum = INFINITY;
  for (size_t i = cut; i < n && tr->t_ns[i] <= tr->t_ns[cut] + 1000000; i++) {
    double sum = 0;
    for (uint32_t j = 0; j < f; j++)
      sum += tr->rc_bps[i * f + j];
    if (sum < low_sum) low_sum = sum, low = i;
  }
  for (size_t i = low; i < n && h == n; i++) {
    double sum = 0;
    for (uint32_t j = 0; j < f; j++)
      sum += tr->rc_bps[i * f + j];
    if (sum >= 0.9 * C) h = i;
  }
  o->converged = h < n;
  o->converge_ns = o->converged ? tr->t_ns[h] : 0;
  size_t from = o->converged && n - h >= 2 ? h : n / 2;
  o->window_from = from;
  o->window_samples = n - from;
  double *qs = malloc(o->window_samples * sizeof *qs);
  if (!qs) return JCT_ENOMEM;
  for (size_t i = from; i < n; i++)
    qs[i - from] = tr->queue_bytes[i];
  qsort(qs, o->window_samples, sizeof *qs, cmp_double);
  o->queue_median_bytes = pct(qs, o->window_samples, 0.5);
  o->queue_p10_bytes = pct(qs, o->window_samples, 0.1);
  o->queue_p90_bytes = pct(qs, o->window_samples, 0.9);
  o->queue_min_bytes = qs[0];
  o->queue_max_bytes = qs[o->window_samples - 1];
  free(qs);
  double sq = 0;
  for (uint32_t j = 0; j < f; j++) {
    double m = 0;
    for (size_t i = from; i < n; i++)
      m += tr->rc_bps[i * f + j];
    m /= (double)o->window_samples;
    o->rate_mean_bps[j] = m;
    o->rate_sum_bps += m;
    sq += m * m;
  }
  o->jain = sq > 0 ? o->rate_sum_bps * o->rate_sum_bps / (f * sq) : 0;
  return 0;
}
