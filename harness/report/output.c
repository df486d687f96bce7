/* Where a result document goes (output.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "junit.h"
#include "output.h"
#include "report.h"
#include "result.h"

static jct__verdict_kind_t verdict_from(const char *s) {
  if (!s) return JCT_VERDICT_NONE;
  if (!strcmp(s, "pass")) return JCT_VERDICT_PASS;
  if (!strcmp(s, "fail")) return JCT_VERDICT_FAIL;
  if (!strcmp(s, "invalid")) return JCT_VERDICT_INVALID;
  return JCT_VERDICT_NONE;
}

static uint64_t u64_at(const json_t *o, const char *a, const char *b) {
  const json_t *x = json_object_get(json_object_get(o, a), b);
  return json_is_integer(x) ? (uint64_t)json_integer_value(x) : 0;
}

/* o.a.b as a number; NaN when it is null or absent. */
static double num_at(const json_t *o, const char *a, const char *b) {
  const json_t *v = json_object_get(json_object_get(o, a), b);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static int write_junit(const json_t *doc, const char *path, const char *prog) {
  const json_t *cases = json_object_get(doc, "cases");
  size_t n = json_array_size(cases);
  jct__junit_case_t *jc = calloc(n ? n : 1, sizeof *jc);
  const char **specs = calloc(n ? n * 16 : 1, sizeof *specs);
  if (!jc || !specs) {
    free(jc);
    free(specs);
    fprintf(stderr, "jctlab %s: out of memory\n", prog);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    const json_t *c = json_array_get(cases, i);
    jct__junit_case_t *j = &jc[i];
    j->name = json_string_value(json_object_get(c, "name"));
    j->verdict = verdict_from(json_string_value(json_object_get(c, "verdict")));
    j->message = json_string_value(json_object_get(c, "invalid_why"));
    j->budget.max_degradation = num_at(c, "budget", "max_degradation");
    j->budget.max_jct_ns = u64_at(c, "budget", "max_jct_ns");
    j->baseline_median_ns = u64_at(c, "baseline", "median_jct_ns");
    j->faulted_median_ns = u64_at(c, "faulted", "median_jct_ns");
    j->degradation = num_at(c, "degradation", "median");
    j->ci95_low = num_at(c, "degradation", "ci95_low");
    j->ci95_high = num_at(c, "degradation", "ci95_high");
    j->wall_s = json_number_value(json_object_get(c, "wall_s"));
    const json_t *sw = json_object_get(c, "sweep");
    if (json_is_object(sw)) {
      j->sweep_key = json_string_value(json_object_get(sw, "key"));
      j->sweep_value = json_number_value(json_object_get(sw, "value"));
    }
    const json_t *inj = json_object_get(c, "inject");
    for (size_t k = 0; k < json_array_size(inj) && k < 16; k++)
      specs[i * 16 + k] = json_string_value(json_array_get(inj, k));
    j->inject = &specs[i * 16];
    j->ninject = (uint32_t)(json_array_size(inj) < 16 ? json_array_size(inj) : 16);
  }
  char err[512];
  /* The suite: the scenario's name, or "jctlab replay". */
  const char *suite = json_string_value(json_object_get(json_object_get(doc, "scenario"), "name"));
  char fallback[64];
  snprintf(fallback, sizeof fallback, "jctlab %s", prog);
  int rc =
      jct__junit_write_file(path, suite ? suite : fallback, jc, n, time(NULL), err, sizeof err);
  if (rc) fprintf(stderr, "jctlab %s: %s\n", prog, err);
  free(jc);
  free(specs);
  return rc ? 1 : 0;
}

int jct__json_write(const json_t *doc, const char *path, const char *prog) {
  size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER;
  bool out = strcmp(path, "-") == 0;
  int rc = out ? json_dumpf(doc, stdout, flags) || fputc('\n', stdout) == EOF || fflush(stdout)
               : json_dump_file(doc, path, flags);
  if (rc) fprintf(stderr, "jctlab %s: %s: cannot write\n", prog, out ? "standard output" : path);
  return rc ? 1 : 0;
}

int jct__output_result(const json_t *doc, const char *json, const char *junit, const char *report,
                       const char *prog, bool all_qps) {
  int status = 0;
  if (!json || strcmp(json, "-")) jct__report_text(stdout, doc, all_qps);
  if (json && jct__json_write(doc, json, prog)) status = 1;
  if (junit && write_junit(doc, junit, prog)) status = 1;
  if (report) {
    char err[512];
    if (jct__report_write(doc, report, err, sizeof err)) {
      fprintf(stderr, "jctlab %s: %s\n", prog, err);
      status = 1;
    } else if (!json || strcmp(json, "-")) {
      printf("report: %s/report.html, %s/report.md\n", report, report);
    }
  }
  if (fflush(stdout)) status = 1;
  return status;
}
