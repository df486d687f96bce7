/* The scenario loader's document model (scenario_int.h): messages that
 * point at a node, each kind of value read from a scalar node with the
 * parsers the command line uses (harness/base/units.h: `delay: 2ms` reads
 * as `--delay 2ms` does), a mapping's keys checked before they are walked,
 * and the source keys' words. Positions come from libyaml's marks (0-based
 * there, 1-based here, as compilers print them). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errf.h"
#include "harness/base/units.h"
#include "jctlab/error.h"
#include "scenario_int.h"

int jct__sc_at(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *fmt, ...) {
  if (c->err && c->errlen) {
    int k = snprintf(c->err, c->errlen, "%s:%zu:%zu: ", c->file, n->start_mark.line + 1,
                     n->start_mark.column + 1);
    if (k >= 0 && (size_t)k < c->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return JCT_EINVAL;
}

int jct__sc_oom(const jct__sc_ctx_t *c) {
  return jct__errf(c->err, c->errlen, JCT_ENOMEM, "%s: out of memory", c->file);
}

int jct__sc_scalar(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, const char **out) {
  *out = "";
  if (n->type != YAML_SCALAR_NODE)
    return jct__sc_at(c, n, "%s: expected a value, not %s", k, jct__sc_kind(n));
  *out = (const char *)n->data.scalar.value;
  if (strlen(*out) != n->data.scalar.length)
    return jct__sc_at(c, n, "%s: the value holds a NUL byte", k);
  return 0;
}

int jct__sc_string(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, char **out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  if (!*v) return jct__sc_at(c, n, "%s: empty", k);
  char *d = strdup(v);
  if (!d) return jct__sc_oom(c);
  free(*out);
  *out = d;
  return 0;
}

int jct__sc_bool(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, bool *out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
  for (size_t i = 0; i < 3; i++) {
    if (!strcasecmp(v, yes[i])) return *out = true, 0;
    if (!strcasecmp(v, no[i])) return *out = false, 0;
  }
  return jct__sc_at(c, n, "%s: '%s' is not true or false", k, v);
}

int jct__sc_count(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, uint64_t min,
                  uint64_t max, uint64_t *out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_count(v, max, out) || *out < min)
    return jct__sc_at(c, n, "%s: '%s' is not a whole number from %llu to %llu", k, v,
                      (unsigned long long)min, (unsigned long long)max);
  return 0;
}

int jct__sc_rate(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, uint64_t *out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_rate_bps(v, out))
    return jct__sc_at(c, n, "%s: '%s' is not a rate in bit/s (100mbit, 1gbit, 25gbit)", k, v);
  return 0;
}

int jct__sc_time(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, uint64_t min,
                 uint64_t max, uint64_t *out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_time_ns(v, out))
    return jct__sc_at(c, n, "%s: '%s' is not a time (500ns, 10us, 5ms, 2s)", k, v);
  if (*out < min || *out > max) {
    char a[32], b[32];
    return jct__sc_at(c, n, "%s: %s is not from %s to %s", k, v, jct__fmt_ns(min, a, sizeof a),
                      jct__fmt_ns(max, b, sizeof b));
  }
  return 0;
}

int jct__sc_double(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, double *out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_number(v, out)) return jct__sc_at(c, n, "%s: '%s' is not a number", k, v);
  return 0;
}

int jct__sc_watchdog(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k,
                     jct__watchdog_t *out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  static const struct {
    const char *word;
    jct__watchdog_t w;
  } words[] = {{"false", JCT_WATCHDOG_OFF}, {"no", JCT_WATCHDOG_OFF},
               {"off", JCT_WATCHDOG_OFF},   {"true", JCT_WATCHDOG_DROP},
               {"yes", JCT_WATCHDOG_DROP},  {"on", JCT_WATCHDOG_DROP},
               {"drop", JCT_WATCHDOG_DROP}, {"forward", JCT_WATCHDOG_FORWARD}};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (!strcasecmp(v, words[i].word)) return *out = words[i].w, 0;
  return jct__sc_at(c, n, "%s: '%s' is not false, true, drop or forward", k, v);
}

int jct__sc_cc(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, jct_cc_t *out) {
  const char *v;
  int rc = jct__sc_scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__cc_parse(v, out)) return jct__sc_at(c, n, "%s: '%s' is not none or dcqcn", k, v);
  return 0;
}

int jct__sc_reroute(const jct__sc_ctx_t *c, const yaml_node_t *n, const char *k, jct_clos_t *clos) {
  const char *v;
  char e[256];
  int rc = jct__sc_scalar(c, n, k, &v);
  if (!rc && jct_clos_reroute_parse(clos, v, e, sizeof e)) rc = jct__sc_at(c, n, "%s: %s", k, e);
  return rc;
}

int jct__sc_check_keys(const jct__sc_ctx_t *c, const yaml_node_t *map, const char *what) {
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const yaml_node_t *k = jct__sc_node(c, p->key);
    if (k->type != YAML_SCALAR_NODE)
      return jct__sc_at(c, k, "%s: a key must be a word, not %s", what, jct__sc_kind(k));
    for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
      const yaml_node_t *k2 = jct__sc_node(c, q->key);
      if (!strcmp((const char *)k->data.scalar.value, (const char *)k2->data.scalar.value))
        return jct__sc_at(c, k, "%s: '%s' appears twice (first at line %zu)", what,
                          (const char *)k->data.scalar.value, k2->start_mark.line + 1);
    }
  }
  return 0;
}

const char *jct__scenario_source_name(jct__scenario_source_t s) {
  return s == JCT_SCEN_TRACE ? "trace" : s == JCT_SCEN_SCHEDULE ? "schedule" : "synth";
}
