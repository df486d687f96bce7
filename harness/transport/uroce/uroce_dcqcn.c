/* uroce DCQCN: the reaction point's and the notification point's state
 * machines (include/jctlab/dcqcn.h says what they do) and the two
 * parameter profiles, each value with its source.
 *
 * Timers are lazy: every entry point first fires, in time order, the
 * rate-increase timer's expiries due up to now (each an increase event at
 * its own expiry time, so the time spent below the line rate is exact), and
 * alpha's decay is applied in closed form, (1 - g)^n for n expiries, when
 * alpha is next read (a cut). The byte counter counts at each send, after
 * the timers due before it. This is what eager timers would do, without a
 * wake-up per timer period for an idle QP.
 */
#include <math.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/dcqcn.h"
#include "jctlab/error.h"

#define US 1000ull
#define MBPS 1000000ull

void jct_dcqcn_params(jct_dcqcn_params_t *p, jct_dcqcn_profile_t profile) {
  memset(p, 0, sizeof *p);
  if (profile == JCT_DCQCN_PAPER) {
    /* Zhu et al., SIGCOMM 2015: the RP's timer and byte counter (55 us,
     * 10 MB), F = 5 fast recovery stages, R_AI = 40 Mbit/s, g = 1/256 with
     * the alpha timer K = 55 us, alpha starting at 1, and the NP's one CNP
     * per flow per N = 50 us. */
    p->rpg_time_reset_ns = 55 * US;
    p->rpg_byte_reset_bytes = 10ull << 20;
    p->rpg_threshold = 5;
    p->rpg_ai_rate_bps = 40 * MBPS;
    /* R_HAI: not among the values the paper gives with its experiments;
     * taken as 10 x R_AI, the ratio ConnectX's defaults keep (5 and 50). */
    p->rpg_hai_rate_bps = 400 * MBPS;
    p->rpg_min_dec_fac_pct = 0; /* the paper bounds a cut only by alpha <= 1 */
    p->rpg_min_rate_bps = 1 * MBPS; /* not the paper's: ConnectX's floor, so Rc stays > 0 */
    p->clamp_tgt_rate = true;       /* the paper: Rt = Rc on every CNP */
    p->g = 1.0 / 256;
    p->alpha_period_ns = 55 * US;
    p->initial_alpha = 1.0;
    p->rate_reduce_monitor_period_ns = 0;
    p->min_time_between_cnps_ns = 50 * US;
    return;
  }
  /* NVIDIA ConnectX-4 and later, firmware defaults as mlxconfig and
   * MLNX_OFED's roce_rp / roce_np report them (NVIDIA, "DCQCN CC
   * Parameters"): */
  p->rpg_time_reset_ns = 300 * US;   /* rpg_time_reset 300 (us) */
  p->rpg_byte_reset_bytes = 32767;   /* rpg_byte_reset 32767 (bytes) */
  p->rpg_threshold = 1;              /* rpg_threshold 1 */
  p->rpg_ai_rate_bps = 5 * MBPS;     /* rpg_ai_rate 5 (Mbit/s) */
  p->rpg_hai_rate_bps = 50 * MBPS;   /* rpg_hai_rate 50 (Mbit/s) */
  p->rpg_min_dec_fac_pct = 50;       /* rpg_min_dec_fac 50 (%) */
  p->rpg_min_rate_bps = 1 * MBPS;    /* rpg_min_rate 1 (Mbit/s) */
  p->rate_to_set_on_first_cnp_bps = 0; /* rate_to_set_on_first_cnp 0: none */
  p->clamp_tgt_rate = false;           /* clamp_tgt_rate 0 */
  p->clamp_tgt_rate_after_time_inc = true; /* clamp_tgt_rate_after_time_inc 1 */
  /* dce_tcp_g 1019 (fraction of 1024): alpha = 1019/1024 alpha (+ 5/1024
   * with a CNP), so the paper's g is (1024 - 1019) / 1024; dce_tcp_rtt 1
   * (us) is the alpha update period. rpg_gd 11 (log2 of 2.0 with 10
   * fraction bits): the cut is alpha / 2, as the paper's. */
  p->g = (1024.0 - 1019.0) / 1024.0;
  p->alpha_period_ns = 1 * US;
  p->initial_alpha = 1023.0 / 1024.0;      /* initial_alpha_value 1023 */
  p->rate_reduce_monitor_period_ns = 4 * US; /* rate_reduce_monitor_period 4 (us) */
  p->min_time_between_cnps_ns = 4 * US;      /* min_time_between_cnps 4 (us) */
}

uint64_t jct_dcqcn_profile_rate_bps(jct_dcqcn_profile_t profile) {
  return profile == JCT_DCQCN_PAPER ? 40000000000ull : 100000000000ull;
}

static uint64_t times(uint64_t v, double f) {
  double x = (double)v * f;
  return x >= 1.8e19 ? UINT64_MAX : (uint64_t)(x + 0.5);
}

void jct_dcqcn_dilate(jct_dcqcn_params_t *p, double factor) {
  if (!(factor > 1)) return;
  p->rpg_time_reset_ns = times(p->rpg_time_reset_ns, factor);
  p->alpha_period_ns = times(p->alpha_period_ns, factor);
  p->rate_reduce_monitor_period_ns = times(p->rate_reduce_monitor_period_ns, factor);
  p->min_time_between_cnps_ns = times(p->min_time_between_cnps_ns, factor);
  p->rpg_ai_rate_bps = times(p->rpg_ai_rate_bps, 1 / factor);
  p->rpg_hai_rate_bps = times(p->rpg_hai_rate_bps, 1 / factor);
  p->rate_to_set_on_first_cnp_bps = times(p->rate_to_set_on_first_cnp_bps, 1 / factor);
}

static const char *const profile_names[] = {"connectx", "paper"};

int jct_dcqcn_profile_parse(const char *name, jct_dcqcn_profile_t *out) {
  for (int i = 0; i < 2; i++)
    if (!strcmp(name, profile_names[i])) {
      *out = (jct_dcqcn_profile_t)i;
      return 0;
    }
  return JCT_EINVAL;
}

const char *jct_dcqcn_profile_name(jct_dcqcn_profile_t profile) {
  return (unsigned)profile < 2 ? profile_names[profile] : "?";
}

int jct_dcqcn_params_check(const jct_dcqcn_params_t *p, char *err, size_t errlen) {
  if (!p->rpg_time_reset_ns)
    return jct__errf(err, errlen, JCT_EINVAL, "dcqcn: rpg_time_reset must be above 0");
  if (!p->rpg_threshold)
    return jct__errf(err, errlen, JCT_EINVAL, "dcqcn: rpg_threshold must be at least 1");
  if (p->rpg_min_dec_fac_pct > 100)
    return jct__errf(err, errlen, JCT_EINVAL, "dcqcn: rpg_min_dec_fac %u is above 100",
                     p->rpg_min_dec_fac_pct);
  if (!(p->g > 0 && p->g <= 1))
    return jct__errf(err, errlen, JCT_EINVAL, "dcqcn: g %g is outside (0, 1]", p->g);
  if (!(p->initial_alpha > 0 && p->initial_alpha <= 1))
    return jct__errf(err, errlen, JCT_EINVAL, "dcqcn: initial alpha %g is outside (0, 1]",
                     p->initial_alpha);
  if (!p->alpha_period_ns)
    return jct__errf(err, errlen, JCT_EINVAL, "dcqcn: the alpha period must be above 0");
  return 0;
}

/* ---- reaction point ---- */

void jct_dcqcn_rp_init(jct_dcqcn_rp_t *rp, const jct_dcqcn_params_t *p, uint64_t line_rate_bps) {
  memset(rp, 0, sizeof *rp);
  rp->p = *p;
  rp->line_bps = rp->rc_bps = rp->rt_bps = line_rate_bps;
  rp->alpha_next_ns = rp->inc_next_ns = UINT64_MAX;
}

void jct_dcqcn_rp_reset(jct_dcqcn_rp_t *rp, uint64_t now_ns) {
  uint64_t cnps = rp->cnps, cuts = rp->rate_cuts, below = jct_dcqcn_rp_below_line_ns(rp, now_ns);
  jct_dcqcn_params_t p = rp->p; /* init clears rp first */
  jct_dcqcn_rp_init(rp, &p, rp->line_bps);
  rp->cnps = cnps;
  rp->rate_cuts = cuts;
  rp->below_line_ns = below;
}

/* Alpha's decay for the alpha-timer expiries up to now. */
static void alpha_decay(jct_dcqcn_rp_t *rp, uint64_t now_ns) {
  if (rp->alpha_next_ns > now_ns) return;
  uint64_t n = (now_ns - rp->alpha_next_ns) / rp->p.alpha_period_ns + 1;
  rp->alpha *= pow(1.0 - rp->p.g, (double)n);
  rp->alpha_next_ns += n * rp->p.alpha_period_ns;
}

static uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

/* One increase event at time t (timer or byte counter), with the stage
 * counts before it; then the caller counts it. */
static void increase(jct_dcqcn_rp_t *rp, uint64_t t) {
  uint32_t T = rp->t_stage, BC = rp->p.rpg_byte_reset_bytes ? rp->bc_stage : rp->t_stage;
  uint32_t F = rp->p.rpg_threshold, hi = T > BC ? T : BC, lo = T < BC ? T : BC;
  if (hi >= F) { /* past fast recovery: raise the target */
    uint64_t step = lo > F ? rp->p.rpg_hai_rate_bps : rp->p.rpg_ai_rate_bps;
    rp->rt_bps = min_u64(rp->line_bps, rp->rt_bps + step);
  }
  rp->rc_bps = (rp->rt_bps + rp->rc_bps + 1) / 2;
  if (rp->rc_bps >= rp->line_bps) { /* back at the line rate: the limiter is off */
    rp->rc_bps = rp->rt_bps = rp->line_bps;
    rp->active = false;
    rp->inc_next_ns = UINT64_MAX;
    rp->below_line_ns += t - rp->below_since_ns;
  }
}

void jct_dcqcn_rp_advance(jct_dcqcn_rp_t *rp, uint64_t now_ns) {
  while (rp->active && rp->inc_next_ns <= now_ns) {
    uint64_t t = rp->inc_next_ns;
    rp->inc_next_ns += rp->p.rpg_time_reset_ns;
    increase(rp, t);
    rp->t_stage++;
    rp->time_inc = true;
  }
}

void jct_dcqcn_rp_on_cnp(jct_dcqcn_rp_t *rp, uint64_t now_ns) {
  jct_dcqcn_rp_advance(rp, now_ns);
  alpha_decay(rp, now_ns);
  rp->cnps++;
  bool first = !rp->seen_cnp;
  if (first) rp->alpha = rp->p.initial_alpha;
  bool cut = first || !rp->p.rate_reduce_monitor_period_ns ||
             now_ns >= rp->last_cut_ns + rp->p.rate_reduce_monitor_period_ns;
  if (cut) {
    if (first || rp->p.clamp_tgt_rate || (rp->p.clamp_tgt_rate_after_time_inc && rp->time_inc))
      rp->rt_bps = rp->rc_bps;
    uint64_t rc = (uint64_t)((double)rp->rc_bps * (1.0 - rp->alpha / 2));
    uint64_t floor_dec = rp->rc_bps / 100 * rp->p.rpg_min_dec_fac_pct +
                         rp->rc_bps % 100 * rp->p.rpg_min_dec_fac_pct / 100;
    if (rc < floor_dec) rc = floor_dec;
    if (rc < rp->p.rpg_min_rate_bps) rc = min_u64(rp->p.rpg_min_rate_bps, rp->line_bps);
    if (first && rp->p.rate_to_set_on_first_cnp_bps)
      rc = rp->rt_bps = min_u64(rp->p.rate_to_set_on_first_cnp_bps, rp->line_bps);
    if (!rp->active && rc < rp->line_bps) {
      rp->active = true;
      rp->below_since_ns = now_ns;
    }
    rp->rc_bps = rc;
    rp->rate_cuts++;
    rp->last_cut_ns = now_ns;
    rp->t_stage = rp->bc_stage = 0;
    rp->bc_bytes = 0;
    rp->time_inc = false;
    rp->inc_next_ns = rp->active ? now_ns + rp->p.rpg_time_reset_ns : UINT64_MAX;
  }
  if (!first) rp->alpha = (1.0 - rp->p.g) * rp->alpha + rp->p.g;
  rp->seen_cnp = true;
  rp->alpha_next_ns = now_ns + rp->p.alpha_period_ns;
}

void jct_dcqcn_rp_on_sent(jct_dcqcn_rp_t *rp, uint64_t bytes, uint64_t now_ns) {
  jct_dcqcn_rp_advance(rp, now_ns);
  if (!rp->active || !rp->p.rpg_byte_reset_bytes) return;
  rp->bc_bytes += bytes;
  while (rp->active && rp->bc_bytes >= rp->p.rpg_byte_reset_bytes) {
    rp->bc_bytes -= rp->p.rpg_byte_reset_bytes;
    increase(rp, now_ns);
    rp->bc_stage++;
  }
}

uint64_t jct_dcqcn_rp_below_line_ns(const jct_dcqcn_rp_t *rp, uint64_t now_ns) {
  return rp->below_line_ns + (rp->active && now_ns > rp->below_since_ns ? now_ns - rp->below_since_ns : 0);
}

/* ---- notification point ---- */

void jct_dcqcn_np_init(jct_dcqcn_np_t *np, const jct_dcqcn_params_t *p) {
  memset(np, 0, sizeof *np);
  np->min_gap_ns = p->min_time_between_cnps_ns;
}

bool jct_dcqcn_np_on_ce(jct_dcqcn_np_t *np, uint64_t now_ns) {
  np->ce_pkts++;
  if (np->sent && now_ns < np->last_cnp_ns + np->min_gap_ns) return false;
  np->sent = true;
  np->last_cnp_ns = now_ns;
  np->cnps++;
  return true;
}
