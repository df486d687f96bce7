/* A scenario's cases (scenario_int.h): each item of cases: read (name,
 * inject, faults, a budget, the fabric switches it overrides), its sweep
 * expanded into one case per value (scenario_sweep.c finds the list), each
 * variant's specs validated by the injector framework exactly as the run
 * will create them (jct_injector_new), and appended under a name no other
 * case has. A case without a name: its specs, joined. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "scenario_int.h"

/* A case as written, before its sweep (if any) is expanded. */
typedef struct {
  const char *name; /* NULL: made from the specs */
  uint32_t index;   /* in the file's list, from 1 */
  const char *specs[JCT_RUN_MAX_INJECTORS];
  const yaml_node_t *spec_node[JCT_RUN_MAX_INJECTORS];
  uint32_t nspecs;
  bool trace_faults;
  bool none; /* inject: [] on verbs: the fabric's own faults, nothing injected */
  jct__budget_t budget;
  bool pfc, ecn;
  jct_cc_t cc;
  jct__watchdog_t wd;
  jct_clos_t clos; /* the scenario's, with reroute_detection: */
} case_in_t;

void jct__sc_free_case(jct__scenario_case_t *k) {
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
  strcpy(name, in->trace_faults ? "trace faults" : in->none ? "nothing injected" : "");
  for (uint32_t i = 0; i < in->nspecs; i++) {
    if (*name) strcat(name, i ? "; " : " + ");
    strcat(name, specs[i]);
  }
  return name;
}

/* Append one (expanded) case, taking ownership of k's strings. */
static int add_case(const jct__sc_ctx_t *c, const yaml_node_t *n, jct__scenario_case_t *k) {
  jct__scenario_t *s = c->s;
  int rc = 0;
  for (uint32_t i = 0; i < s->ncases && !rc; i++)
    if (!strcmp(s->cases[i].name, k->name))
      rc = jct__sc_at(c, n,
                      "case '%s': the name is taken by the case at line %u (give each a name:)",
                      k->name, s->cases[i].line);
  if (!rc && s->ncases == JCT_SCENARIO_MAX_CASES)
    rc = jct__sc_at(c, n, "case '%s': more than %d cases", k->name, JCT_SCENARIO_MAX_CASES);
  jct__scenario_case_t *nc = rc ? NULL : realloc(s->cases, (s->ncases + 1) * sizeof *nc);
  if (!rc && !nc) rc = jct__sc_oom(c);
  if (rc) {
    jct__sc_free_case(k);
    return rc;
  }
  s->cases = nc;
  s->cases[s->ncases++] = *k;
  return 0;
}

/* One variant of a case: specs with the sweep's list replaced by value
 * (sweep NULL: no sweep), validated, appended. */
static int expand_one(const jct__sc_ctx_t *c, const yaml_node_t *n, const case_in_t *in,
                      uint32_t which, size_t ls, size_t le, const char *key, const char *value,
                      uint32_t position) {
  jct__scenario_case_t k = {.trace_faults = in->trace_faults,
                            .budget = in->budget,
                            .pfc = in->pfc,
                            .ecn = in->ecn,
                            .cc = in->cc,
                            .pfc_watchdog = in->wd,
                            .clos = in->clos,
                            .line = (uint32_t)n->start_mark.line + 1};
  k.inject = calloc(in->nspecs ? in->nspecs : 1, sizeof *k.inject);
  if (!k.inject) return jct__sc_oom(c);
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
      jct__sc_free_case(&k);
      return jct__sc_oom(c);
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
    jct__sc_free_case(&k);
    return jct__sc_oom(c);
  }
  /* The injector framework validates the spec exactly as the run will. */
  for (uint32_t i = 0; i < k.ninject; i++) {
    jct_injector_t *inj;
    char e[384];
    /* A link's name (port=leaf0:spine1) as the run will number it. */
    const jct_clos_t *cl = &c->s->clos;
    uint32_t nranks = c->s->source == JCT_SCEN_SYNTH ? c->s->synth.ranks : JCT_SWITCH_MAX_PORTS;
    char spec[512];
    int rc = cl->leaves ? jct_clos_spec_ports(cl, nranks, k.inject[i], spec, sizeof spec, e, sizeof e)
                        : 0;
    if (!rc) rc = jct_injector_new(&inj, cl->leaves ? spec : k.inject[i], c->s->run.seed, i, e,
                                   sizeof e);
    if (rc == JCT_ENOMEM) {
      jct__sc_free_case(&k);
      return jct__sc_oom(c);
    }
    if (rc) {
      if (in->name)
        rc = jct__sc_at(c, in->spec_node[i], "case '%s': %s", k.name, e);
      else
        rc = jct__sc_at(c, in->spec_node[i], "case %u: %s", in->index, e);
      jct__sc_free_case(&k);
      return rc;
    }
    jct_injector_free(inj);
  }
  return add_case(c, n, &k);
}

static int parse_inject(const jct__sc_ctx_t *c, yaml_node_t *v, case_in_t *in) {
  int rc;
  if (v->type == YAML_SCALAR_NODE) {
    in->spec_node[0] = v;
    in->nspecs = 1;
    if ((rc = jct__sc_scalar(c, v, "inject", &in->specs[0]))) return rc;
    return *in->specs[0] ? 0 : jct__sc_at(c, v, "inject: an empty spec");
  }
  if (v->type != YAML_SEQUENCE_NODE)
    return jct__sc_at(c, v, "inject: expected a list of injector specs, not %s", jct__sc_kind(v));
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
    yaml_node_t *item = jct__sc_node(c, *it);
    if (in->nspecs == JCT_RUN_MAX_INJECTORS)
      return jct__sc_at(c, item, "inject: at most %d injectors in a case", JCT_RUN_MAX_INJECTORS);
    if (item->type == YAML_SEQUENCE_NODE)
      return jct__sc_at(
          c, item,
          "inject: a list inside the list: quote a sweep (\"drop p=[0, 1e-4]\") or write "
          "it in block style (- drop p=[0, 1e-4])");
    if ((rc = jct__sc_scalar(c, item, "inject", &in->specs[in->nspecs]))) return rc;
    if (!*in->specs[in->nspecs]) return jct__sc_at(c, item, "inject: an empty spec");
    in->spec_node[in->nspecs++] = item;
  }
  /* On verbs the ranks' traffic may cross a fabric jctlab has no switch
   * in (`jctlab rank`, --agents): a case may inject nothing and measure
   * the fabric as it is, its faulted repetitions a second baseline. */
  if (!in->nspecs && c->s->run.transport == JCT_TRANSPORT_VERBS) {
    in->none = true;
    return 0;
  }
  if (!in->nspecs) return jct__sc_at(c, v, "inject: an empty list");
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

int jct__sc_parse_case(const jct__sc_ctx_t *c, yaml_node_t *n, uint32_t index) {
  jct__scenario_t *s = c->s;
  if (n->type != YAML_MAPPING_NODE)
    return jct__sc_at(
        c, n, "cases: case %u: expected a mapping {name, inject, max_degradation, ...}, not %s",
        index + 1, jct__sc_kind(n));
  int rc = jct__sc_check_keys(c, n, "case");
  if (rc) return rc;
  char lb[200];
  case_in_t in = {
      .index = index + 1,
      .pfc = s->run.pfc,
      .ecn = s->run.ecn,
      .cc = s->run.cc,
      .wd = jct__watchdog_of(&s->run),
      .clos = s->clos};
  const yaml_node_t *budget_node = NULL;
  JCT_SC_FOR_PAIRS(c, n, k, kn, v) {
    if (!strcmp(k, "name")) {
      if (!(rc = jct__sc_scalar(c, v, "name", &in.name)) && !*in.name)
        rc = jct__sc_at(c, v, "name: empty");
    } else if (!strcmp(k, "inject")) {
      rc = parse_inject(c, v, &in);
    } else if (!strcmp(k, "faults")) {
      const char *f;
      if ((rc = jct__sc_scalar(c, v, "faults", &f))) return rc;
      if (strcmp(f, "trace"))
        return jct__sc_at(c, v, "faults: '%s': the only value is 'trace' (the trace's own losses)",
                          f);
      if (s->source != JCT_SCEN_TRACE)
        return jct__sc_at(c, v, "faults: trace needs a trace: source (this scenario has %s:)",
                          jct__scenario_source_name(s->source));
      in.trace_faults = true;
    } else if (!strcmp(k, "max_degradation") || !strcmp(k, "max_jct")) {
      if (budget_node)
        return jct__sc_at(c, kn, "%s: a second budget (give max_degradation or max_jct, not both)",
                          k);
      budget_node = kn;
      if (k[4] == 'd') {
        if ((rc = jct__sc_double(c, v, k, &in.budget.max_degradation))) return rc;
        if (!(in.budget.max_degradation >= 1))
          return jct__sc_at(c, v,
                            "max_degradation: %g is below 1 (faulted / baseline median JCT: 1.15 "
                            "allows 15%%)",
                            in.budget.max_degradation);
      } else {
        rc = jct__sc_time(c, v, k, 1, UINT64_MAX, &in.budget.max_jct_ns);
      }
    } else if (!strcmp(k, "pfc")) {
      rc = jct__sc_bool(c, v, k, &in.pfc);
    } else if (!strcmp(k, "ecn")) {
      rc = jct__sc_bool(c, v, k, &in.ecn);
    } else if (!strcmp(k, "pfc_watchdog")) {
      rc = jct__sc_watchdog(c, v, k, &in.wd);
    } else if (!strcmp(k, "cc")) {
      rc = jct__sc_cc(c, v, k, &in.cc);
    } else if (!strcmp(k, "reroute_detection")) {
      rc = jct__sc_reroute(c, v, k, &in.clos);
    } else {
      return jct__sc_at(
          c, kn,
          "case: unknown key '%s' (name, inject, faults, max_degradation, max_jct, pfc, "
          "ecn, cc, pfc_watchdog, reroute_detection)",
          k);
    }
    if (rc) return rc;
  }
  if (!in.nspecs && !in.trace_faults && !in.none)
    return jct__sc_at(c, n, "case %s: nothing to inject: give inject: [SPEC, ...]%s",
                      label(&in, lb), s->source == JCT_SCEN_TRACE ? " or faults: trace" : "");

  uint32_t which, nvalues;
  char key[32], **values, e[384];
  size_t ls, le;
  rc = jct__sweep_find(in.specs, in.nspecs, &which, key, sizeof key, &ls, &le, &values, &nvalues, e,
                       sizeof e);
  if (rc == JCT_ENOMEM) return jct__sc_oom(c);
  if (rc) {
    /* Point at the spec that holds the (first) bad list. */
    const yaml_node_t *where = in.spec_node[0];
    for (uint32_t i = 0; i < in.nspecs; i++)
      if (strchr(in.specs[i], '[')) {
        where = in.spec_node[i];
        break;
      }
    return jct__sc_at(c, where, "case %s: inject: %s", label(&in, lb), e);
  }
  if (!nvalues) return expand_one(c, n, &in, 0, 0, 0, NULL, NULL, 0);
  for (uint32_t i = 0; i < nvalues && !rc; i++)
    rc = expand_one(c, n, &in, which, ls, le, key, values[i], i);
  for (uint32_t i = 0; i < nvalues; i++)
    free(values[i]);
  free(values);
  return rc;
}
