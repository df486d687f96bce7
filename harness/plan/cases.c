/* Running fault cases (cases.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/replay.h"
#include "jctlab/run.h"
#include "harness/base/interrupt.h"
#include "harness/report/progress.h"
#include "scenario.h"

const char *jct__case_path(const char *path, uint32_t k, uint32_t n, char *buf, size_t len) {
  if (!path || n < 2) return path;
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  size_t stem = dot && (!slash || dot > slash) && dot != path ? (size_t)(dot - path) : strlen(path);
  snprintf(buf, len, "%.*s-case%u%s", (int)stem, path, k, path + stem);
  return buf;
}

int jct__run_cases(json_t *doc, const jct__result_input_t *in, const jct__case_t *cases, uint32_t n,
                   jct__case_tally_t *tally, char *err, size_t errlen) {
  jct__progress_t bar;
  jct__progress_init(&bar, stderr, n > 1 ? "cases" : "replay");
  double wall_ns = 0;
  for (uint32_t i = 0; i < n; i++) {
    bar.total += 2 * cases[i].opts.reps;
    wall_ns += jct_run_wall_estimate_ns(&cases[i].opts, 2 * cases[i].opts.reps + cases[i].opts.warmup);
  }
  /* Each case is checked alone when it starts; the budget is the whole
   * run's, so the cases are checked together before the first. */
  int rc = n > 1 ? jct_run_check_wall_total(wall_ns, n, "cases", cases[0].opts.wall_budget_ns, err,
                                            errlen)
                 : 0;
  if (rc) return rc;
  /* The cases share one boot of the lab (a verbs scenario's lab: N). */
  jct_run_lab_keep(n > 1);
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    const jct__case_t *c = &cases[i];
    jct_run_opts_t o = c->opts;
    char out[4096], arrived[4096], drops[4096], log[4096];
    o.pcap_out = jct__case_path(o.pcap_out, i + 1, n, out, sizeof out);
    o.pcap_in = jct__case_path(o.pcap_in, i + 1, n, arrived, sizeof arrived);
    o.pcap_drops = jct__case_path(o.pcap_drops, i + 1, n, drops, sizeof drops);
    o.fault_log = jct__case_path(o.fault_log, i + 1, n, log, sizeof log);
    jct_replay_result_t r;
    char why[400];
    rc = jct_replay(&o, jct__progress_update, &bar, &r, why, sizeof why);
    bar.offset += 2 * c->opts.reps;
    if (rc) {
      jct__errf(err, errlen, rc, "case '%.60s%s': %s", c->meta.name,
                strlen(c->meta.name) > 60 ? "..." : "", why);
      break;
    }
    switch (jct__verdict_of(&r, &c->meta.budget)) {
    case JCT_VERDICT_PASS: tally->pass++; break;
    case JCT_VERDICT_FAIL: tally->fail++; break;
    case JCT_VERDICT_INVALID:
      tally->invalid++;
      fprintf(stderr, "jctlab: case '%s': invalid run: %s\n", c->meta.name, r.invalid_why);
      break;
    default: tally->none++;
    }
    if (jct__result_add_case(doc, &c->opts, in, &c->meta, &r)) rc = JCT_ENOMEM;
    json_t *cs = json_object_get(doc, "cases");
    const json_t *fid = json_object_get(json_array_get(cs, json_array_size(cs) - 1), "fidelity");
    if (r.valid && json_is_object(fid) && !json_is_true(json_object_get(fid, "reproduced"))) {
      tally->unreproduced++;
      fprintf(stderr, "jctlab: case '%s': the replay did not reproduce the capture (see fidelity)\n",
              c->meta.name);
    }
    jct_replay_result_free(&r);
    if (jct__interrupt_signal()) break; /* the cases not started are not run */
  }
  jct_run_lab_keep(false);
  jct__progress_done(&bar);
  return rc;
}

int jct__cases_status(const jct__case_tally_t *t) {
  return t->invalid ? 3 : t->unreproduced ? 4 : t->fail ? 1 : 0;
}

void jct__sweep_free(jct__sweep_point_t *p, uint32_t npoints, uint32_t nspecs) {
  if (!p) return;
  for (uint32_t i = 0; i < npoints; i++) {
    for (uint32_t k = 0; k < nspecs; k++)
      free(p[i].specs ? p[i].specs[k] : NULL);
    free(p[i].specs);
    free(p[i].value_text);
  }
  free(p);
}

int jct__sweep_expand(const char *const *specs, uint32_t n, jct__sweep_point_t **out,
                      uint32_t *nout, char *key, size_t keylen, char *err, size_t errlen) {
  uint32_t which = 0, nvalues = 0;
  size_t start = 0, end = 0;
  char **values = NULL;
  key[0] = 0;
  int rc = jct__sweep_find(specs, n, &which, key, keylen, &start, &end, &values, &nvalues, err,
                           errlen);
  if (rc) return rc;
  if (nvalues > JCT_SCENARIO_MAX_CASES) { /* one limit, as scenario files' cases */
    for (uint32_t i = 0; i < nvalues; i++)
      free(values[i]);
    free(values);
    return jct__errf(err, errlen, JCT_EINVAL, "a sweep of %u values: at most %d cases", nvalues,
                     JCT_SCENARIO_MAX_CASES);
  }
  uint32_t np = nvalues ? nvalues : 1;
  jct__sweep_point_t *p = calloc(np, sizeof *p);
  if (!p) rc = JCT_ENOMEM;
  for (uint32_t i = 0; i < np && rc == 0; i++) {
    if (!(p[i].specs = calloc(n ? n : 1, sizeof *p[i].specs))) {
      rc = JCT_ENOMEM;
      break;
    }
    for (uint32_t k = 0; k < n && rc == 0; k++) {
      const char *s = specs[k];
      size_t len = strlen(s) + (nvalues ? strlen(values[i]) : 0) + 1;
      char *t = malloc(len);
      if (!t) {
        rc = JCT_ENOMEM;
        break;
      }
      if (nvalues && k == which)
        snprintf(t, len, "%.*s%s%s", (int)start, s, values[i], s + end);
      else
        snprintf(t, len, "%s", s);
      p[i].specs[k] = t;
    }
    if (nvalues && rc == 0) {
      if (!(p[i].value_text = strdup(values[i]))) rc = JCT_ENOMEM;
      p[i].value = jct__sweep_number(values[i]);
    }
  }
  for (uint32_t i = 0; i < nvalues; i++)
    free(values[i]);
  free(values);
  if (rc) {
    jct__sweep_free(p, np, n);
    return rc;
  }
  *out = p;
  *nout = np;
  return 0;
}
