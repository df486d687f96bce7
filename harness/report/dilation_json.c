/* Time dilation in the reports (result.h): the "dilation" object of a
 * run's or a case's JSON, and the sentence every report prints from it. */
#include <stdio.h>
#include <string.h>

#include "harness/base/units.h"
#include "report_int.h"
#include "result.h"

json_t *jct__dilation_json(const jct_run_dilation_t *d, double wall_s, double jct_sum_ns) {
  json_t *o =
      json_pack("{s:f,s:b,s:I,s:f,s:f}", "tdf", d->tdf, "auto", d->automatic, "ceiling_bps",
                (json_int_t)d->ceiling_bps, "wall_rate_bps", d->wall_rate_bps, "wall_s", wall_s);
  if (o && d->floored) json_object_set_new(o, "floored", json_true());
  if (o && d->verbs_timeout_exp)
    json_object_set_new(o, "verbs",
                        json_pack("{s:i,s:f}", "timeout_exp", d->verbs_timeout_exp,
                                  "rxe_timer_floor_ns", (double)JCT_RUN_RXE_JIFFY_NS / d->tdf));
  if (o && d->verbs_cts_timeout_exp) {
    json_t *v = json_object_get(o, "verbs");
    if (!v) json_object_set_new(o, "verbs", v = json_object());
    json_object_set_new(v, "cts_timeout_exp", json_integer(d->verbs_cts_timeout_exp));
  }
  if (o)
    json_object_set_new(o, "wall_per_jct",
                        jct_sum_ns > 0 ? json_real(wall_s * 1e9 / jct_sum_ns) : json_null());
  return o;
}

char *jct__dilation_text(const json_t *doc, char *buf, size_t len) {
  double f = 1, ceiling = 0, wrate = 0, wall = 0, per = 0;
  const json_t *d = jct__rget(doc, "dilation");
  if (!d || !jct__rnum(d, "tdf", &f)) {
    snprintf(buf, len, "n/a");
    return buf;
  }
  jct__rnum(d, "ceiling_bps", &ceiling);
  jct__rnum(d, "wall_rate_bps", &wrate);
  jct__rnum(d, "wall_s", &wall);
  bool automatic = json_is_true(json_object_get(d, "auto")),
       floored = json_is_true(json_object_get(d, "floored"));
  char c[32], w[32], tail[96] = "";
  jct__fmt_rate((uint64_t)ceiling, c, sizeof c);
  jct__fmt_rate((uint64_t)wrate, w, sizeof w);
  char vtail[320] = "";
  const json_t *v = json_object_get(d, "verbs");
  double vexp = 0, vfloor = 0;
  if (v && jct__rnum(v, "timeout_exp", &vexp) && jct__rnum(v, "rxe_timer_floor_ns", &vfloor)) {
    char fl[32];
    snprintf(vtail, sizeof vtail,
             "; verbs: rxe's QP timeout exponent %.0f, its one-jiffy timer floor %s emulated, "
             "its own turnaround undilated",
             vexp, jct__fmt_ns((uint64_t)vfloor, fl, sizeof fl));
  }
  double cexp = 0;
  if (v && jct__rnum(v, "cts_timeout_exp", &cexp)) {
    size_t at = strlen(vtail);
    snprintf(vtail + at, sizeof vtail - at,
             "%s the destinations' clear-to-sends' timeout exponent %.0f (past twice the longest "
             "stall the lab holds)",
             at ? ";" : "; verbs:", cexp);
  }
  if (jct__rnum(d, "wall_per_jct", &per))
    snprintf(tail, sizeof tail, "; wall time %.1f s, %.3g x the JCTs", wall, per);
  if (f == 1)
    snprintf(buf, len, "none: the links ran at their own rate here (ceiling %s)%s%s", c, vtail,
             tail);
  else
    snprintf(buf, len,
             "x%g (%s %s): the links ran at %s here, every time x%g, every time reported / "
             "%g%s%s",
             f,
             floored     ? "automatic: the lab holds its capture's host pauses; the ceiling is"
             : automatic ? "automatic: the rate is above the ceiling of"
                         : "--tdf; the ceiling is",
             c, w, f, f, vtail, tail);
  return buf;
}
