/* Reading the result document for the reports (report_int.h): every
 * member may be missing or null (an invalid case has no faulted figures,
 * an older or newer writer may leave some out), so every accessor says
 * whether it found something and every formatter prints "n/a" when not. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_int.h"
#include "harness/base/units.h"
#include "jctlab/replay.h"

const json_t *jct__rget(const json_t *o, const char *path) {
  const char *p = path;
  while (o && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    char key[64];
    if (n >= sizeof key) return NULL;
    memcpy(key, p, n);
    key[n] = 0;
    o = json_is_object(o) ? json_object_get(o, key) : NULL;
    p += n + (dot ? 1 : 0);
  }
  return o && !json_is_null(o) ? o : NULL;
}

bool jct__rnum(const json_t *o, const char *path, double *out) {
  const json_t *v = jct__rget(o, path);
  if (!json_is_number(v)) return false;
  *out = json_number_value(v);
  return isfinite(*out);
}

const char *jct__rstr(const json_t *o, const char *path) {
  return json_string_value(jct__rget(o, path));
}

static char *na(char *buf, size_t len) {
  snprintf(buf, len, "n/a");
  return buf;
}

char *jct__rfmt_ns(const json_t *o, const char *path, char *buf, size_t len) {
  double v;
  if (!jct__rnum(o, path, &v) || v < 0) return na(buf, len);
  return jct__fmt_ns((uint64_t)v, buf, len);
}

char *jct__rfmt_count(const json_t *o, const char *path, char *buf, size_t len) {
  double v;
  if (!jct__rnum(o, path, &v)) return na(buf, len);
  snprintf(buf, len, "%.0f", v);
  return buf;
}

char *jct__rfmt_bytes(const json_t *o, const char *path, char *buf, size_t len) {
  double v;
  if (!jct__rnum(o, path, &v) || v < 0) return na(buf, len);
  return jct__fmt_bytes((uint64_t)v, buf, len);
}

char *jct__rfmt_real(const json_t *o, const char *path, const char *fmt, char *buf, size_t len) {
  double v;
  if (!jct__rnum(o, path, &v)) return na(buf, len);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  snprintf(buf, len, fmt, v);
#pragma GCC diagnostic pop
  return buf;
}

char *jct__rfmt_degradation(const json_t *c, char *buf, size_t len) {
  double m, lo, hi;
  if (!jct__rnum(c, "degradation.median", &m)) return na(buf, len);
  if (jct__rnum(c, "degradation.ci95_low", &lo) && jct__rnum(c, "degradation.ci95_high", &hi))
    snprintf(buf, len, "%.3f [%.3f, %.3f]", m, lo, hi);
  else if (json_is_null(
               json_object_get(jct__rget(c, "degradation"), "ci95_low"))) /* too few reps */
    snprintf(buf, len, "%.3f [no interval under %u repetitions]", m, JCT_REPLAY_MIN_REPS_CI);
  else
    snprintf(buf, len, "%.3f", m);
  return buf;
}

char *jct__rfmt_budget(const json_t *c, char *buf, size_t len) {
  double v;
  char t[32];
  if (jct__rnum(c, "budget.max_degradation", &v))
    snprintf(buf, len, "degradation <= %.3g", v);
  else if (jct__rnum(c, "budget.max_jct_ns", &v) && v >= 0)
    snprintf(buf, len, "JCT <= %s", jct__fmt_ns((uint64_t)v, t, sizeof t));
  else
    snprintf(buf, len, "none");
  return buf;
}

const char *jct__rverdict(const json_t *c) {
  const char *v = jct__rstr(c, "verdict");
  if (!v) return "none";
  if (!strcmp(v, "fail")) return "FAIL";
  if (!strcmp(v, "invalid")) return "INVALID";
  if (!strcmp(v, "pass")) return "pass";
  return "none";
}

char *jct__rfmt_inject(const json_t *c, char *buf, size_t len) {
  const json_t *a = jct__rget(c, "inject"), *s;
  size_t i, used = 0;
  buf[0] = 0;
  json_array_foreach(a, i, s) {
    if (!json_is_string(s) || used >= len) continue;
    int n = snprintf(buf + used, len - used, "%s%s", used ? "; " : "", json_string_value(s));
    if (n > 0) used += (size_t)n;
  }
  if (!buf[0]) snprintf(buf, len, "none");
  return buf;
}

char *jct__rfmt_fabric(const json_t *r, char *buf, size_t len) {
  char rate[32], delay[32];
  double v;
  if (jct__rnum(r, "fabric.rate_bps", &v) && v >= 1)
    jct__fmt_rate((uint64_t)v, rate, sizeof rate);
  else
    snprintf(rate, sizeof rate, "n/a");
  jct__rfmt_ns(r, "fabric.prop_delay_ns", delay, sizeof delay);
  const json_t *pfc = jct__rget(r, "fabric.pfc"), *ecn = jct__rget(r, "fabric.ecn");
  const char *t = jct__rstr(r, "fabric.transport"), *wd = jct__rstr(r, "fabric.pfc_watchdog");
  snprintf(buf, len, "%s, %s links, %s delay, PFC %s, ECN %s, PFC watchdog %s", t ? t : "n/a", rate,
           delay, json_is_boolean(pfc) ? (json_is_true(pfc) ? "on" : "off") : "n/a",
           json_is_boolean(ecn) ? (json_is_true(ecn) ? "on" : "off") : "n/a", wd ? wd : "n/a");
  return buf;
}

char *jct__rfmt_input(const json_t *r, char *buf, size_t len) {
  char ranks[32], ops[32], bytes[32];
  const char *src = jct__rstr(r, "input.source"), *kind = jct__rstr(r, "input.kind");
  const char *algo = jct__rstr(r, "input.algorithm"), *pat = jct__rstr(r, "input.pattern");
  snprintf(buf, len, "%s (%s): %s%s%s%s, %s ranks, %s ops, %s", src ? src : "n/a",
           kind ? kind : "n/a", algo ? algo : "n/a", pat ? " (pattern " : "", pat ? pat : "",
           pat ? ")" : "", jct__rfmt_count(r, "input.ranks", ranks, sizeof ranks),
           jct__rfmt_count(r, "input.ops", ops, sizeof ops),
           jct__rfmt_bytes(r, "input.bytes", bytes, sizeof bytes));
  return buf;
}
