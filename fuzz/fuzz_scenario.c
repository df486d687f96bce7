/* Fuzz target for the scenario loader: the input is handed as YAML text to
 * jct__scenario_load_mem() (harness/plan/scenario.h), which parses it with
 * libyaml, checks every key, expands sweeps and validates every injector
 * spec with the injector framework.
 *
 * A load that fails must say where (err starts with "fuzz.yaml:", *out
 * NULL, JCT_EINVAL or JCT_ENOMEM). A load that succeeds must keep the
 * promises of scenario.h, checked here:
 *  - exactly the source it names (synth: an algorithm, 2 to 64 ranks,
 *    bytes; trace/schedule: an absolute path);
 *  - 1 to JCT_SCENARIO_MAX_CASES cases, each with a non-empty name that no
 *    other case has, 1 to 16 specs or the trace's faults, and at most one
 *    budget (max_degradation >= 1);
 *  - every spec creates an injector again; a swept case's sweep_text
 *    appears in one of its specs;
 *  - jct__scenario_case_opts() copies the case's specs.
 * A broken promise calls abort(), so the fuzzer keeps the input.
 *
 * Relative trace:/schedule: paths resolve against the current directory.
 * ctest replays fuzz/corpus/scenario/ (the shipped scenarios and broken
 * ones); fuzz/scenario.dict lists the keys for the fuzzer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "harness/plan/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_scenario: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check_case(const jct__scenario_t *s, const jct__scenario_case_t *c) {
  if (!c->name || !c->name[0]) broken("a case without a name", NULL);
  if (c->ninject > JCT_RUN_MAX_INJECTORS) broken("more than 16 specs", c->name);
  if (!c->ninject && !c->trace_faults && s->run.transport != JCT_TRANSPORT_VERBS)
    broken("a case with nothing to inject (allowed on verbs only)", c->name);
  if (c->trace_faults && s->source != JCT_SCEN_TRACE)
    broken("trace faults without a trace", c->name);
  if (c->budget.max_degradation > 0 && c->budget.max_jct_ns > 0) broken("two budgets", c->name);
  if (c->budget.max_degradation != 0 && !(c->budget.max_degradation >= 1))
    broken("max_degradation below 1", c->name);
  bool found = !c->sweep_key;
  for (uint32_t i = 0; i < c->ninject; i++) {
    jct_injector_t *inj;
    char err[384] = "";
    int rc = jct_injector_new(&inj, c->inject[i], s->run.seed, i, err, sizeof err);
    if (rc == JCT_ENOMEM) continue;
    if (rc) broken("a spec that loaded does not create an injector", err);
    jct_injector_free(inj);
    if (c->sweep_key && strstr(c->inject[i], c->sweep_text)) found = true;
  }
  if (!found) broken("the sweep's value is in none of the specs", c->name);
  jct_run_opts_t o = {0};
  jct__scenario_case_opts(s, c, &o);
  if (o.ninject != c->ninject || o.reps != s->run.reps)
    broken("case_opts did not copy the case", c->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  jct__scenario_t *s = (jct__scenario_t *)&s; /* not NULL: load must set it */
  char err[1024] = "";
  int rc = jct__scenario_load_mem(&s, (const char *)data, size, "fuzz.yaml", NULL, err, sizeof err);
  if (rc) {
    if (rc != JCT_EINVAL && rc != JCT_ENOMEM) broken("an unexpected error code", err);
    if (s) broken("failed but left *out set", err);
    if (strncmp(err, "fuzz.yaml:", 10) != 0) broken("an error that does not name the file", err);
    return 0;
  }
  if (!s) broken("loaded without a scenario", NULL);
  if (!s->name || !s->name[0]) broken("a scenario without a name", NULL);
  if (s->source == JCT_SCEN_SYNTH) {
    if (!s->synth.algorithm[0] || s->synth.ranks < 2 || s->synth.ranks > 64 || !s->synth.bytes)
      broken("a synth source without its fields", NULL);
    if (s->input) broken("a synth source with a file", s->input);
  } else if (!s->input || s->input[0] != '/') {
    broken("a trace or schedule without an absolute path", s->input);
  }
  if (!s->ncases || s->ncases > JCT_SCENARIO_MAX_CASES) broken("a case count out of range", NULL);
  if (!s->run.reps || s->run.reps > JCT_RUN_MAX_REPS) broken("reps out of range", NULL);
  for (uint32_t i = 0; i < s->ncases; i++) {
    check_case(s, &s->cases[i]);
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(s->cases[i].name, s->cases[j].name))
        broken("two cases of one name", s->cases[i].name);
  }
  jct__scenario_free(s);
  return 0;
}
