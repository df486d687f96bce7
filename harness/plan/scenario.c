/* Scenario files (scenario.h): one YAML document read with libyaml's
 * document API (yaml_parser_load), walked key by key, every value checked
 * with the parsers the command line uses (units.h, run_args.h) and every
 * inject spec with the injector framework's own (jct_injector_new), so a
 * file that loads is one the run accepts. Errors carry the position of the
 * node at fault from libyaml's marks (0-based there, 1-based here, as
 * compilers print them). suites/scenarios/README.md is the user's guide. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/schedule.h"
#include "run_args.h"
#include "scenario.h"
#include "harness/base/units.h"

#define SCENARIO_MAX_BYTES (1u << 20)
#define URoCE_HEADROOM_BYTES 64 /* BTH 12 RETH 16 ImmDt 4 ICRC 4 UDP 8 IPv4 20 */

typedef struct {
  const char *file, *base_dir;
  yaml_document_t *doc;
  char *err;
  size_t errlen;
  jct__scenario_t *s;
} ctx_t;

static int at(const ctx_t *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int at(const ctx_t *c, const yaml_node_t *n, const char *fmt, ...) {
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

static int oom(const ctx_t *c) {
  return jct__errf(c->err, c->errlen, JCT_ENOMEM, "%s: out of memory", c->file);
}

static yaml_node_t *node(const ctx_t *c, int id) {
  return yaml_document_get_node(c->doc, id);
}

static const char *kind_name(const yaml_node_t *n) {
  return n->type == YAML_MAPPING_NODE    ? "a mapping"
         : n->type == YAML_SEQUENCE_NODE ? "a list"
                                         : "a value";
}

/* ---- values ---- */

static int scalar(const ctx_t *c, const yaml_node_t *n, const char *k, const char **out) {
  *out = "";
  if (n->type != YAML_SCALAR_NODE) return at(c, n, "%s: expected a value, not %s", k, kind_name(n));
  *out = (const char *)n->data.scalar.value;
  if (strlen(*out) != n->data.scalar.length) return at(c, n, "%s: the value holds a NUL byte", k);
  return 0;
}

static int get_string(const ctx_t *c, const yaml_node_t *n, const char *k, char **out) {
  const char *v;
  int rc = scalar(c, n, k, &v);
  if (rc) return rc;
  if (!*v) return at(c, n, "%s: empty", k);
  char *d = strdup(v);
  if (!d) return oom(c);
  free(*out);
  *out = d;
  return 0;
}

static int get_bool(const ctx_t *c, const yaml_node_t *n, const char *k, bool *out) {
  const char *v;
  int rc = scalar(c, n, k, &v);
  if (rc) return rc;
  static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
  for (size_t i = 0; i < 3; i++) {
    if (!strcasecmp(v, yes[i])) return *out = true, 0;
    if (!strcasecmp(v, no[i])) return *out = false, 0;
  }
  return at(c, n, "%s: '%s' is not true or false", k, v);
}

static int get_count(const ctx_t *c, const yaml_node_t *n, const char *k, uint64_t min,
                     uint64_t max, uint64_t *out) {
  const char *v;
  int rc = scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_count(v, max, out) || *out < min)
    return at(c, n, "%s: '%s' is not a whole number from %llu to %llu", k, v,
              (unsigned long long)min, (unsigned long long)max);
  return 0;
}

static int get_rate(const ctx_t *c, const yaml_node_t *n, const char *k, uint64_t *out) {
  const char *v;
  int rc = scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_rate_bps(v, out))
    return at(c, n, "%s: '%s' is not a rate in bit/s (100mbit, 1gbit, 25gbit)", k, v);
  return 0;
}

static int get_time(const ctx_t *c, const yaml_node_t *n, const char *k, uint64_t min, uint64_t max,
                    uint64_t *out) {
  const char *v;
  int rc = scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_time_ns(v, out))
    return at(c, n, "%s: '%s' is not a time (500ns, 10us, 5ms, 2s)", k, v);
  if (*out < min || *out > max) {
    char a[32], b[32];
    return at(c, n, "%s: %s is not from %s to %s", k, v, jct__fmt_ns(min, a, sizeof a),
              jct__fmt_ns(max, b, sizeof b));
  }
  return 0;
}

static int get_double(const ctx_t *c, const yaml_node_t *n, const char *k, double *out) {
  const char *v;
  int rc = scalar(c, n, k, &v);
  if (rc) return rc;
  if (jct__parse_number(v, out)) return at(c, n, "%s: '%s' is not a number", k, v);
  return 0;
}

static int get_watchdog(const ctx_t *c, const yaml_node_t *n, const char *k, jct__watchdog_t *out) {
  const char *v;
  int rc = scalar(c, n, k, &v);
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
  return at(c, n, "%s: '%s' is not false, true, drop or forward", k, v);
}

/* The mapping's keys: each a plain value, none twice. */
static int check_keys(const ctx_t *c, const yaml_node_t *map, const char *what) {
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const yaml_node_t *k = node(c, p->key);
    if (k->type != YAML_SCALAR_NODE)
      return at(c, k, "%s: a key must be a word, not %s", what, kind_name(k));
    for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
      const yaml_node_t *k2 = node(c, q->key);
      if (!strcmp((const char *)k->data.scalar.value, (const char *)k2->data.scalar.value))
        return at(c, k, "%s: '%s' appears twice (first at line %zu)", what,
                  (const char *)k->data.scalar.value, k2->start_mark.line + 1);
    }
  }
  return 0;
}

/* Every key (kname, its node knode) and value (vnode) of a mapping whose
 * keys check_keys() accepted. The body may return or continue, not break. */
#define FOR_PAIRS(c, map, kname, knode, vnode)                                                     \
  for (yaml_node_pair_t *pp_ = (map)->data.mapping.pairs.start;                                    \
       pp_ < (map)->data.mapping.pairs.top; pp_++)                                                 \
    for (yaml_node_t *knode = node(c, pp_->key), *vnode = node(c, pp_->value); knode;              \
         knode = NULL)                                                                             \
      for (const char *kname = (const char *)knode->data.scalar.value; kname; kname = NULL)

/* ---- sources ---- */

static int resolve(const ctx_t *c, const yaml_node_t *n, const char *k, const char *p, char **out) {
  char buf[PATH_MAX];
  int len = p[0] == '/' ? snprintf(buf, sizeof buf, "%s", p)
                        : snprintf(buf, sizeof buf, "%s/%s", c->base_dir, p);
  if (len < 0 || (size_t)len >= sizeof buf) return at(c, n, "%s: the path is too long", k);
  char *r = realpath(buf, NULL);
  if (!r) return at(c, n, "%s: '%s' (%s): %s", k, p, buf, strerror(errno));
  struct stat st;
  const char *why = stat(r, &st)           ? strerror(errno)
                    : !S_ISREG(st.st_mode) ? "not a file"
                    : access(r, R_OK)      ? strerror(errno)
                                           : NULL;
  if (why) {
    free(r);
    return at(c, n, "%s: '%s' (%s): %s", k, p, buf, why);
  }
  free(*out);
  *out = r;
  return 0;
}

static int parse_synth(const ctx_t *c, yaml_node_t *n) {
  jct__scenario_t *s = c->s;
  if (n->type != YAML_MAPPING_NODE)
    return at(c, n, "synth: expected a mapping {algorithm, ranks, bytes, channels}, not %s",
              kind_name(n));
  int rc = check_keys(c, n, "synth");
  if (rc) return rc;
  uint64_t ranks = 0, bytes = 0, channels = 1;
  bool have_algo = false;
  FOR_PAIRS(c, n, k, kn, v) {
    if (!strcmp(k, "algorithm")) {
      const char *a;
      if ((rc = scalar(c, v, "synth: algorithm", &a))) return rc;
      size_t i = 0;
      while (jct_synth_algorithms[i] && strcmp(jct_synth_algorithms[i], a))
        i++;
      if (!jct_synth_algorithms[i]) {
        char known[128] = "";
        for (size_t j = 0; jct_synth_algorithms[j]; j++)
          snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", j ? ", " : "",
                   jct_synth_algorithms[j]);
        return at(c, v, "synth: algorithm: '%s' is not one of %s", a, known);
      }
      snprintf(s->synth.algorithm, sizeof s->synth.algorithm, "%s", a);
      have_algo = true;
    } else if (!strcmp(k, "ranks")) {
      rc = get_count(c, v, "synth: ranks", 2, 64, &ranks);
    } else if (!strcmp(k, "bytes")) {
      const char *b;
      if ((rc = scalar(c, v, "synth: bytes", &b))) return rc;
      if (jct__parse_size_bytes(b, &bytes) || !bytes)
        return at(c, v, "synth: bytes: '%s' is not a size (8MiB, 64M, 1GiB, 4096)", b);
    } else if (!strcmp(k, "channels")) {
      rc = get_count(c, v, "synth: channels", 1, 64, &channels);
    } else {
      return at(c, kn, "synth: unknown key '%s' (algorithm, ranks, bytes, channels)", k);
    }
    if (rc) return rc;
  }
  if (!have_algo || !ranks || !bytes)
    return at(c, n, "synth: needs %s",
              !have_algo ? "algorithm: (ring, tree, ...)"
              : !ranks   ? "ranks: (2 to 64)"
                         : "bytes: (a size: 8MiB)");
  s->synth.ranks = (uint32_t)ranks;
  s->synth.bytes = bytes;
  s->synth.channels = (uint32_t)channels;
  /* What only the generator knows (halving-doubling's power of two, a
   * chunk of at least one byte) is found by generating it once. */
  jct_schedule_t *sched;
  char e[256];
  rc = jct_schedule_synth(&sched, s->synth.algorithm, s->synth.ranks, bytes, s->synth.channels, e,
                          sizeof e);
  if (rc == JCT_ENOMEM) return oom(c);
  if (rc) return at(c, n, "synth: %s", e);
  jct_schedule_free(sched);
  return 0;
}

/* ---- cases ---- */

typedef struct {
  const char *name; /* NULL: made from the specs */
  uint32_t index;   /* in the file's list, from 1 */
  const char *specs[JCT_RUN_MAX_INJECTORS];
  const yaml_node_t *spec_node[JCT_RUN_MAX_INJECTORS];
  uint32_t nspecs;
  bool trace_faults;
  jct__budget_t budget;
  bool pfc, ecn;
  jct__watchdog_t wd;
} case_in_t;

static void free_case(jct__scenario_case_t *k) {
  for (uint32_t i = 0; i < k->ninject; i++)
    free(k->inject[i]);
  free(k->inject);
  free(k->name);
  free(k->sweep_key);
  free(k->sweep_text);
}

/* The default name of a case: its specs, joined. */
static char *default_name(const case_in_t *in, char *const *specs) {
  size_t len = 32;
  for (uint32_t i = 0; i < in->nspecs; i++)
    len += strlen(specs[i]) + 2;
  char *name = malloc(len);
  if (!name) return NULL;
  strcpy(name, in->trace_faults ? "trace faults" : "");
  for (uint32_t i = 0; i < in->nspecs; i++) {
    if (*name) strcat(name, i ? "; " : " + ");
    strcat(name, specs[i]);
  }
  return name;
}

/* Append one (expanded) case, taking ownership of k's strings. */
static int add_case(const ctx_t *c, const yaml_node_t *n, jct__scenario_case_t *k) {
  jct__scenario_t *s = c->s;
  int rc = 0;
  for (uint32_t i = 0; i < s->ncases && !rc; i++)
    if (!strcmp(s->cases[i].name, k->name))
      rc = at(c, n, "case '%s': the name is taken by the case at line %u (give each a name:)",
              k->name, s->cases[i].line);
  if (!rc && s->ncases == JCT_SCENARIO_MAX_CASES)
    rc = at(c, n, "case '%s': more than %d cases", k->name, JCT_SCENARIO_MAX_CASES);
  jct__scenario_case_t *nc = rc ? NULL : realloc(s->cases, (s->ncases + 1) * sizeof *nc);
  if (!rc && !nc) rc = oom(c);
  if (rc) {
    free_case(k);
    return rc;
  }
  s->cases = nc;
  s->cases[s->ncases++] = *k;
  return 0;
}

/* One variant of a case: specs with the sweep's list replaced by value
 * (sweep NULL: no sweep), validated, appended. */
static int expand_one(const ctx_t *c, const yaml_node_t *n, const case_in_t *in, uint32_t which,
                      size_t ls, size_t le, const char *key, const char *value, uint32_t position) {
  jct__scenario_case_t k = {.trace_faults = in->trace_faults,
                           .budget = in->budget,
                           .pfc = in->pfc,
                           .ecn = in->ecn,
                           .pfc_watchdog = in->wd,
                           .line = (uint32_t)n->start_mark.line + 1};
  k.inject = calloc(in->nspecs ? in->nspecs : 1, sizeof *k.inject);
  if (!k.inject) return oom(c);
  for (uint32_t i = 0; i < in->nspecs; i++, k.ninject++) {
    const char *sp = in->specs[i];
    if (value && i == which) {
      size_t vl = strlen(value), tl = strlen(sp + le);
      k.inject[i] = malloc(ls + vl + tl + 1);
      if (k.inject[i]) {
        memcpy(k.inject[i], sp, ls);
        memcpy(k.inject[i] + ls, value, vl);
        memcpy(k.inject[i] + ls + vl, sp + le, tl + 1);
      }
    } else {
      k.inject[i] = strdup(sp);
    }
    if (!k.inject[i]) {
      free_case(&k);
      return oom(c);
    }
  }
  if (value) {
    k.sweep_key = strdup(key);
    k.sweep_text = strdup(value);
    k.sweep_value = jct__sweep_number(value);
    if (isnan(k.sweep_value)) k.sweep_value = position; /* a word: its place on the axis */
  }
  if (in->name) {
    size_t len = strlen(in->name) + (value ? strlen(key) + strlen(value) + 2 : 0) + 1;
    if ((k.name = malloc(len)))
      snprintf(k.name, len, value ? "%s %s=%s" : "%s", in->name, key, value);
  } else {
    k.name = default_name(in, k.inject);
  }
  if (!k.name || (value && (!k.sweep_key || !k.sweep_text))) {
    free_case(&k);
    return oom(c);
  }
  /* The injector framework validates the spec exactly as the run will. */
  for (uint32_t i = 0; i < k.ninject; i++) {
    jct_injector_t *inj;
    char e[384];
    int rc = jct_injector_new(&inj, k.inject[i], c->s->seed, i, e, sizeof e);
    if (rc == JCT_ENOMEM) {
      free_case(&k);
      return oom(c);
    }
    if (rc) {
      if (in->name)
        rc = at(c, in->spec_node[i], "case '%s': %s", k.name, e);
      else
        rc = at(c, in->spec_node[i], "case %u: %s", in->index, e);
      free_case(&k);
      return rc;
    }
    jct_injector_free(inj);
  }
  return add_case(c, n, &k);
}

static int parse_inject(const ctx_t *c, yaml_node_t *v, case_in_t *in) {
  int rc;
  if (v->type == YAML_SCALAR_NODE) {
    in->spec_node[0] = v;
    in->nspecs = 1;
    if ((rc = scalar(c, v, "inject", &in->specs[0]))) return rc;
    return *in->specs[0] ? 0 : at(c, v, "inject: an empty spec");
  }
  if (v->type != YAML_SEQUENCE_NODE)
    return at(c, v, "inject: expected a list of injector specs, not %s", kind_name(v));
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
    yaml_node_t *item = node(c, *it);
    if (in->nspecs == JCT_RUN_MAX_INJECTORS)
      return at(c, item, "inject: at most %d injectors in a case", JCT_RUN_MAX_INJECTORS);
    if (item->type == YAML_SEQUENCE_NODE)
      return at(c, item,
                "inject: a list inside the list: quote a sweep (\"drop p=[0, 1e-4]\") or write "
                "it in block style (- drop p=[0, 1e-4])");
    if ((rc = scalar(c, item, "inject", &in->specs[in->nspecs]))) return rc;
    if (!*in->specs[in->nspecs]) return at(c, item, "inject: an empty spec");
    in->spec_node[in->nspecs++] = item;
  }
  if (!in->nspecs) return at(c, v, "inject: an empty list");
  return 0;
}

/* How errors name a case: 'NAME', or its place in the list. */
static const char *label(const case_in_t *in, char *buf) {
  if (in->name)
    snprintf(buf, 200, "'%.196s'", in->name);
  else
    snprintf(buf, 200, "%u", in->index);
  return buf;
}

static int parse_case(const ctx_t *c, yaml_node_t *n, uint32_t index) {
  jct__scenario_t *s = c->s;
  if (n->type != YAML_MAPPING_NODE)
    return at(c, n,
              "cases: case %u: expected a mapping {name, inject, max_degradation, ...}, not %s",
              index + 1, kind_name(n));
  int rc = check_keys(c, n, "case");
  if (rc) return rc;
  char lb[200];
  case_in_t in = {.index = index + 1, .pfc = s->pfc, .ecn = s->ecn, .wd = s->pfc_watchdog};
  const yaml_node_t *budget_node = NULL;
  FOR_PAIRS(c, n, k, kn, v) {
    if (!strcmp(k, "name")) {
      if (!(rc = scalar(c, v, "name", &in.name)) && !*in.name) rc = at(c, v, "name: empty");
    } else if (!strcmp(k, "inject")) {
      rc = parse_inject(c, v, &in);
    } else if (!strcmp(k, "faults")) {
      const char *f;
      if ((rc = scalar(c, v, "faults", &f))) return rc;
      if (strcmp(f, "trace"))
        return at(c, v, "faults: '%s': the only value is 'trace' (the trace's own losses)", f);
      if (s->source != JCT_SCEN_TRACE)
        return at(c, v, "faults: trace needs a trace: source (this scenario has %s:)",
                  jct__scenario_source_name(s->source));
      in.trace_faults = true;
    } else if (!strcmp(k, "max_degradation") || !strcmp(k, "max_jct")) {
      if (budget_node)
        return at(c, kn, "%s: a second budget (give max_degradation or max_jct, not both)", k);
      budget_node = kn;
      if (k[4] == 'd') {
        if ((rc = get_double(c, v, k, &in.budget.max_degradation))) return rc;
        if (!(in.budget.max_degradation >= 1))
          return at(c, v,
                    "max_degradation: %g is below 1 (faulted / baseline median JCT: 1.15 "
                    "allows 15%%)",
                    in.budget.max_degradation);
      } else {
        rc = get_time(c, v, k, 1, UINT64_MAX, &in.budget.max_jct_ns);
      }
    } else if (!strcmp(k, "pfc")) {
      rc = get_bool(c, v, k, &in.pfc);
    } else if (!strcmp(k, "ecn")) {
      rc = get_bool(c, v, k, &in.ecn);
    } else if (!strcmp(k, "pfc_watchdog")) {
      rc = get_watchdog(c, v, k, &in.wd);
    } else {
      return at(c, kn,
                "case: unknown key '%s' (name, inject, faults, max_degradation, max_jct, pfc, "
                "ecn, pfc_watchdog)",
                k);
    }
    if (rc) return rc;
  }
  if (!in.nspecs && !in.trace_faults)
    return at(c, n, "case %s: nothing to inject: give inject: [SPEC, ...]%s", label(&in, lb),
              s->source == JCT_SCEN_TRACE ? " or faults: trace" : "");

  uint32_t which, nvalues;
  char key[32], **values, e[384];
  size_t ls, le;
  rc = jct__sweep_find(in.specs, in.nspecs, &which, key, sizeof key, &ls, &le, &values, &nvalues, e,
                       sizeof e);
  if (rc == JCT_ENOMEM) return oom(c);
  if (rc) {
    /* Point at the spec that holds the (first) bad list. */
    const yaml_node_t *where = in.spec_node[0];
    for (uint32_t i = 0; i < in.nspecs; i++)
      if (strchr(in.specs[i], '[')) {
        where = in.spec_node[i];
        break;
      }
    return at(c, where, "case %s: inject: %s", label(&in, lb), e);
  }
  if (!nvalues) return expand_one(c, n, &in, 0, 0, 0, NULL, NULL, 0);
  for (uint32_t i = 0; i < nvalues && !rc; i++)
    rc = expand_one(c, n, &in, which, ls, le, key, values[i], i);
  for (uint32_t i = 0; i < nvalues; i++)
    free(values[i]);
  free(values);
  return rc;
}

/* ---- the document ---- */

static int set_source(const ctx_t *c, yaml_node_t *kn, const yaml_node_t **src,
                      jct__scenario_source_t t) {
  if (*src)
    return at(c, kn, "%s: a second source (%s: at line %zu): give one of synth, trace, schedule",
              (const char *)kn->data.scalar.value, (const char *)(*src)->data.scalar.value,
              (*src)->start_mark.line + 1);
  *src = kn;
  c->s->source = t;
  return 0;
}

static int parse_top(const ctx_t *c, yaml_node_t *root) {
  jct__scenario_t *s = c->s;
  if (root->type != YAML_MAPPING_NODE)
    return at(c, root,
              "expected a mapping (name:, synth:|trace:|schedule:, rate:, cases:, ...), not %s",
              kind_name(root));
  int rc = check_keys(c, root, "scenario");
  if (rc) return rc;
  const yaml_node_t *src = NULL, *mtu_node = NULL;
  yaml_node_t *cases = NULL;
  uint64_t u;
  FOR_PAIRS(c, root, k, kn, v) {
    if (!strcmp(k, "name")) {
      rc = get_string(c, v, k, &s->name);
    } else if (!strcmp(k, "description")) {
      rc = get_string(c, v, k, &s->description);
    } else if (!strcmp(k, "synth")) {
      if (!(rc = set_source(c, kn, &src, JCT_SCEN_SYNTH))) rc = parse_synth(c, v);
    } else if (!strcmp(k, "trace") || !strcmp(k, "schedule")) {
      const char *p;
      if (!(rc = set_source(c, kn, &src, k[0] == 't' ? JCT_SCEN_TRACE : JCT_SCEN_SCHEDULE)) &&
          !(rc = scalar(c, v, k, &p)))
        rc = *p ? resolve(c, v, k, p, &s->input) : at(c, v, "%s: empty", k);
    } else if (!strcmp(k, "transport")) {
      const char *t;
      if (!(rc = scalar(c, v, k, &t)) && jct__transport_parse(t, &s->transport))
        rc = at(c, v, "transport: '%s' is not uroce or verbs", t);
    } else if (!strcmp(k, "rate")) {
      rc = get_rate(c, v, k, &s->rate_bps);
    } else if (!strcmp(k, "captured_rate")) {
      rc = get_rate(c, v, k, &s->captured_rate_bps);
    } else if (!strcmp(k, "delay")) {
      rc = get_time(c, v, k, 0, 1000000000u, &s->delay_ns);
    } else if (!strcmp(k, "mtu")) {
      mtu_node = v;
      if (!(rc = get_count(c, v, k, 576, 65535, &u))) s->mtu = (uint32_t)u;
    } else if (!strcmp(k, "path_mtu")) {
      if (!(rc = get_count(c, v, k, 256, 4096, &u)) && (u & (u - 1)))
        rc = at(c, v, "path_mtu: %llu is not 256, 512, 1024, 2048 or 4096", (unsigned long long)u);
      s->path_mtu_bytes = (uint32_t)u;
    } else if (!strcmp(k, "pfc")) {
      rc = get_bool(c, v, k, &s->pfc);
    } else if (!strcmp(k, "ecn")) {
      rc = get_bool(c, v, k, &s->ecn);
    } else if (!strcmp(k, "pfc_watchdog")) {
      rc = get_watchdog(c, v, k, &s->pfc_watchdog);
    } else if (!strcmp(k, "timeout")) {
      if (!(rc = get_count(c, v, k, 0, 31, &u))) s->timeout = (uint8_t)u;
    } else if (!strcmp(k, "retry")) {
      if (!(rc = get_count(c, v, k, 0, 7, &u))) s->retry = (uint8_t)u;
    } else if (!strcmp(k, "reps")) {
      if (!(rc = get_count(c, v, k, 1, JCT_RUN_MAX_REPS, &u))) s->reps = (uint32_t)u;
    } else if (!strcmp(k, "lab")) {
      if (!(rc = get_count(c, v, k, 2, 64, &u))) s->lab_ranks = (uint32_t)u;
    } else if (!strcmp(k, "seed")) {
      rc = get_count(c, v, k, 0, UINT64_MAX, &s->seed);
    } else if (!strcmp(k, "scale")) {
      if (!(rc = get_double(c, v, k, &s->scale)) && !(s->scale > 0 && s->scale <= 1000))
        rc = at(c, v, "scale: %g is not above 0 and at most 1000", s->scale);
    } else if (!strcmp(k, "cases")) {
      cases = v;
    } else {
      rc = at(c, kn,
              "unknown key '%s' (name, description, synth, trace, schedule, transport, rate, "
              "captured_rate, delay, mtu, path_mtu, pfc, ecn, pfc_watchdog, timeout, retry, reps, lab, "
              "seed, scale, cases)",
              k);
    }
    if (rc) return rc;
  }
  if (!src)
    return at(c, root,
              "no source: give synth: {algorithm, ranks, bytes}, trace: FILE or schedule: FILE");
  uint32_t pmtu = s->path_mtu_bytes ? s->path_mtu_bytes : 4096;
  if (mtu_node && s->mtu < pmtu + URoCE_HEADROOM_BYTES)
    return at(c, mtu_node, "mtu: %u is too small for path_mtu %u (needs %u): lower path_mtu",
              s->mtu, pmtu, pmtu + URoCE_HEADROOM_BYTES);
  if (!cases)
    return at(c, root, "no cases: give cases: [{name:, inject: [SPEC], max_degradation:}, ...]");
  if (cases->type != YAML_SEQUENCE_NODE)
    return at(c, cases, "cases: expected a list of cases, not %s", kind_name(cases));
  if (cases->data.sequence.items.start == cases->data.sequence.items.top)
    return at(c, cases, "cases: an empty list");
  uint32_t i = 0;
  for (yaml_node_item_t *it = cases->data.sequence.items.start; it < cases->data.sequence.items.top;
       it++, i++)
    if ((rc = parse_case(c, node(c, *it), i))) return rc;
  return 0;
}

static int yaml_error(const ctx_t *c, const yaml_parser_t *p) {
  if (p->error == YAML_MEMORY_ERROR) return oom(c);
  if (p->error == YAML_READER_ERROR)
    return jct__errf(c->err, c->errlen, JCT_EINVAL, "%s: byte %zu: %s", c->file, p->problem_offset,
                     p->problem ? p->problem : "unreadable");
  return jct__errf(c->err, c->errlen, JCT_EINVAL, "%s:%zu:%zu: %s%s%s", c->file,
                   p->problem_mark.line + 1, p->problem_mark.column + 1,
                   p->problem ? p->problem : "not YAML", p->context ? " " : "",
                   p->context ? p->context : "");
}

static char *stem(const char *name) {
  const char *b = strrchr(name, '/');
  b = b ? b + 1 : name;
  size_t n = strlen(b);
  if (n > 5 && !strcmp(b + n - 5, ".yaml"))
    n -= 5;
  else if (n > 4 && !strcmp(b + n - 4, ".yml"))
    n -= 4;
  return strndup(b, n);
}

static void defaults(jct__scenario_t *s) {
  s->transport = JCT_TRANSPORT_UROCE;
  s->rate_bps = 100000000u;
  s->delay_ns = 1000;
  s->pfc = true;
  s->timeout = 20;
  s->retry = 7;
  s->reps = 5;
  s->seed = 1;
  s->scale = 1;
}

int jct__scenario_load_mem(jct__scenario_t **out, const char *text, size_t len, const char *name,
                          const char *base_dir, char *err, size_t errlen) {
  *out = NULL;
  char cwd[PATH_MAX];
  if (!base_dir) base_dir = getcwd(cwd, sizeof cwd) ? cwd : ".";
  jct__scenario_t *s = calloc(1, sizeof *s);
  ctx_t c = {.file = name, .base_dir = base_dir, .err = err, .errlen = errlen, .s = s};
  if (!s || !(s->path = strdup(name))) {
    free(s);
    return oom(&c);
  }
  defaults(s);
  yaml_parser_t p;
  yaml_document_t doc, doc2;
  if (!yaml_parser_initialize(&p)) {
    jct__scenario_free(s);
    return oom(&c);
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int rc;
  if (!yaml_parser_load(&p, &doc)) {
    rc = yaml_error(&c, &p);
  } else {
    c.doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
      rc = jct__errf(err, errlen, JCT_EINVAL,
                     "%s:1:1: empty: a scenario needs a source (synth:, trace: or schedule:) and "
                     "cases:",
                     name);
    } else if (!(rc = parse_top(&c, root))) {
      /* One scenario per file: a second document is a mistake. */
      if (!yaml_parser_load(&p, &doc2)) {
        rc = yaml_error(&c, &p);
      } else {
        yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
        if (r2) {
          c.doc = &doc2;
          rc = at(&c, r2, "a second document: one scenario per file");
        }
        yaml_document_delete(&doc2);
      }
    }
    yaml_document_delete(&doc);
  }
  yaml_parser_delete(&p);
  if (!rc && !s->name && !(s->name = stem(name))) rc = oom(&c);
  if (rc) {
    jct__scenario_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int jct__scenario_load(jct__scenario_t **out, const char *path, char *err, size_t errlen) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return jct__errf(err, errlen, JCT_EIO, "%s: %s", path, strerror(errno));
  char *buf = malloc(SCENARIO_MAX_BYTES + 1);
  if (!buf) {
    fclose(f);
    return jct__errf(err, errlen, JCT_ENOMEM, "%s: out of memory", path);
  }
  size_t n = fread(buf, 1, SCENARIO_MAX_BYTES + 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad || n > SCENARIO_MAX_BYTES) {
    free(buf);
    return bad ? jct__errf(err, errlen, JCT_EIO, "%s: %s", path, "cannot read (a directory?)")
               : jct__errf(err, errlen, JCT_EINVAL, "%s: larger than %u bytes: not a scenario",
                           path, SCENARIO_MAX_BYTES);
  }
  /* Relative paths inside are the scenario's directory's. */
  char *abs = realpath(path, NULL), *dir = abs ? dirname(abs) : NULL;
  int rc = jct__scenario_load_mem(out, buf, n, path, dir, err, errlen);
  free(abs);
  free(buf);
  return rc;
}

void jct__scenario_free(jct__scenario_t *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->ncases; i++)
    free_case(&s->cases[i]);
  free(s->cases);
  free(s->path);
  free(s->name);
  free(s->description);
  free(s->input);
  free(s);
}

void jct__scenario_case_opts(const jct__scenario_t *s, const jct__scenario_case_t *c,
                            jct_run_opts_t *o) {
  o->reps = s->reps;
  o->transport = s->transport;
  o->lab_ranks = s->lab_ranks;
  o->rate_bps = s->rate_bps;
  o->prop_delay_ns = s->delay_ns;
  o->mtu = s->mtu;
  o->path_mtu_bytes = s->path_mtu_bytes;
  o->timeout = s->timeout;
  o->retry_cnt = s->retry;
  o->pfc = c->pfc;
  o->ecn = c->ecn;
  jct__watchdog_set(o, c->pfc_watchdog);
  o->inject = (const char *const *)c->inject;
  o->ninject = c->ninject;
  o->seed = s->seed;
}

const char *jct__scenario_source_name(jct__scenario_source_t s) {
  return s == JCT_SCEN_TRACE ? "trace" : s == JCT_SCEN_SCHEDULE ? "schedule" : "synth";
}
