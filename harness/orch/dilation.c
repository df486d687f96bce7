/* Time dilation's choices for a run (include/jctlab/run.h): which factor,
 * and whether the run fits its wall-time budget and its transport. The
 * clock does the dilating (include/jctlab/clock.h); the session sets it. */
#include <math.h>
#include <stdio.h>

#include "common/errf.h"
#include "harness/base/units.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/run.h"

bool jct_run_in_lab(const jct_run_opts_t *o) {
  return o->transport == JCT_TRANSPORT_VERBS && o->lab_ranks && !o->agents;
}

void jct_run_dilation(const jct_run_opts_t *o, jct_run_dilation_t *d) {
  d->ceiling_bps = o->rate_ceiling_bps ? o->rate_ceiling_bps : JCT_RUN_RATE_CEILING_BPS;
  d->automatic = d->floored = false;
  d->tdf = 1;
  if (o->tdf > 0) {
    d->tdf = o->tdf;
  } else {
    /* The lab's VMs and jctlab's switch share this machine's clock; hosts
     * elsewhere (agents, `jctlab rank`) keep their own and their NICs' rate. */
    bool lab = jct_run_in_lab(o);
    /* A power of two, so the IB timeout exponent maps exactly (t + log2 F). */
    while ((o->transport == JCT_TRANSPORT_UROCE || lab) &&
           (double)o->rate_bps / d->tdf > (double)d->ceiling_bps && d->tdf < JCT_CLOCK_MAX_TDF)
      d->tdf *= 2;
    if (lab && o->tdf_floor > d->tdf) d->tdf = o->tdf_floor, d->floored = true;
    d->automatic = d->tdf > 1;
  }
  d->wall_rate_bps = (double)o->rate_bps / d->tdf;
  int k = jct_run_verbs_timeout_shift(d->tdf);
  d->verbs_timeout_exp = 0;
  d->verbs_cts_timeout_exp = 0; /* the run's, from its injectors (jct__session_dilation) */
  if (o->transport == JCT_TRANSPORT_VERBS && d->tdf > 1 && k > 0 && o->timeout + k <= 31)
    d->verbs_timeout_exp = (uint8_t)(o->timeout + k);
}

int jct_run_verbs_timeout_shift(double tdf) {
  int k = 0;
  for (double f = 1; f < tdf && k < 31; f *= 2)
    k++;
  return ldexp(1, k) == tdf ? k : -1;
}

/* A wall time in the unit a person reads it in. */
static const char *fmt_wall(double ns, char *buf, size_t len) {
  if (ns >= 7200e9)
    snprintf(buf, len, "%.1f h", ns / 3600e9);
  else if (ns >= 120e9)
    snprintf(buf, len, "%.0f min", ns / 60e9);
  else
    jct__fmt_ns((uint64_t)ns, buf, len);
  return buf;
}

double jct_run_wall_estimate_ns(const jct_run_opts_t *o, uint32_t reps) {
  if (!o->schedule || !o->rate_bps) return 0;
  jct_run_dilation_t d;
  jct_run_dilation(o, &d);
  jct_run_result_t m;
  jct_run_model(o, &m);
  double ns = m.model_ns * d.tdf * (double)reps;
  return isfinite(ns) && ns > 0 ? ns : 0;
}

int jct_run_check_wall_total(double total_ns, uint32_t nruns, const char *what,
                             uint64_t budget_ns, char *err, size_t errlen) {
  uint64_t budget = budget_ns ? budget_ns : JCT_RUN_WALL_BUDGET_NS;
  if (total_ns <= (double)budget) return 0;
  char b[2][32];
  return jct__errf(err, errlen, JCT_EINVAL,
                   "the %u %s would take about %s of wall time in all, over the --wall-budget of "
                   "%s; run fewer of them, fewer repetitions, or give a larger --wall-budget",
                   nruns, what, fmt_wall(total_ns, b[0], 32), fmt_wall((double)budget, b[1], 32));
}

int jct_run_check_dilation(const jct_run_opts_t *o, uint32_t reps, char *err, size_t errlen) {
  if (o->tdf != 0 && !(o->tdf >= 1 && o->tdf <= JCT_CLOCK_MAX_TDF))
    return jct__errf(err, errlen, JCT_EINVAL, "--tdf %g is not a factor from 1 to %.0f", o->tdf,
                     JCT_CLOCK_MAX_TDF);
  jct_run_dilation_t d;
  jct_run_dilation(o, &d);
  if (d.tdf > 1 && o->transport == JCT_TRANSPORT_VERBS) {
    int k = jct_run_verbs_timeout_shift(d.tdf);
    if (k < 0)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "--tdf %g: verbs dilates the QP timeout as exponent t + log2 F, so F must "
                       "be a power of two",
                       d.tdf);
    if (o->timeout + k > 31)
      return jct__errf(err, errlen, JCT_EINVAL,
                       "--tdf %g with --timeout %u: the dilated QP timeout exponent %u is above "
                       "IBA's 31",
                       d.tdf, o->timeout, o->timeout + k);
  }
  jct_run_result_t m;
  jct_run_model(o, &m);
  uint64_t budget = o->wall_budget_ns ? o->wall_budget_ns : JCT_RUN_WALL_BUDGET_NS;
  double wall_ns = jct_run_wall_estimate_ns(o, reps);
  if (wall_ns > (double)budget) {
    char b[5][32];
    return jct__errf(
        err, errlen, JCT_EINVAL,
        "--rate %s dilated x%g (the links at %s here): %u repetitions of the model's %s would "
        "take about %s of wall time, over the --wall-budget of %s; give fewer --reps, a smaller "
        "job, a larger --wall-budget or a higher --rate-ceiling",
        jct__fmt_rate(o->rate_bps, b[0], 32), d.tdf,
        jct__fmt_rate((uint64_t)d.wall_rate_bps, b[1], 32), reps,
        jct__fmt_ns((uint64_t)m.model_ns, b[2], 32), fmt_wall(wall_ns, b[3], 32),
        fmt_wall((double)budget, b[4], 32));
  }
  return 0;
}
