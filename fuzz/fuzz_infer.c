/* Fuzz target for schedule inference (include/jctlab/infer.h): each input
 * is a capture file read from memory (fmemopen) by jct_infer_file().
 *
 * Besides the sanitizers' findings, the target aborts when a result breaks
 * infer.h's promises: a schedule that jct_schedule_validate() rejects (the
 * dep graph must be acyclic whatever the timestamps say), a report that
 * disagrees with the schedule, a loss naming an op that does not exist or
 * an offset outside its message, or a pattern name outside the five.
 *
 * Built with libFuzzer when JCT_FUZZ is on; without it, replay_main.c
 * replays files through the same function (ctest runs corpus/infer/).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/infer.h"
#include "jctlab/schedule.h"

/* Called by libFuzzer, or by replay_main.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_infer: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check(const jct_schedule_t *s, const jct_infer_report_t *rep) {
  char err[256];
  if (jct_schedule_validate(s, err, sizeof err)) broken("invalid schedule", err);
  if (rep->ops != s->nops || rep->ranks != s->nranks || rep->connections != s->nconns)
    broken("the report disagrees with the schedule", NULL);
  if (rep->ops_with_deps > rep->ops || rep->ops_program_order > rep->ops_with_deps)
    broken("more ops counted than there are", NULL);
  uint64_t ndeps = 0;
  for (uint32_t i = 0; i < s->nops; i++)
    ndeps += s->ops[i].ndeps;
  if (ndeps != (uint64_t)rep->deps_received + rep->deps_program_order)
    broken("deps counted by kind do not add up to the schedule's", NULL);
  static const char *const names[] = {"ring", "tree", "all-to-all", "halving-doubling", "unknown"};
  bool known = false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    known |= strcmp(rep->pattern, names[i]) == 0;
  if (!known) broken("unknown pattern name", rep->pattern);
  for (uint32_t i = 0; i < rep->nfaults; i++) {
    const jct_infer_fault_t *f = &rep->faults[i];
    if (f->op >= s->nops) broken("a loss names an op that does not exist", NULL);
    if (i && f->op < rep->faults[i - 1].op) broken("losses not in op order", NULL);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size) return 0;
  FILE *fp = fmemopen((void *)data, size, "rb");
  if (!fp) return 0;
  jct_schedule_t *s;
  jct_infer_report_t rep;
  char err[256];
  if (jct_infer_file(fp, "fuzz", NULL, &s, &rep, err, sizeof err) == 0) {
    check(s, &rep);
    jct_infer_report_free(&rep);
    jct_schedule_free(s);
  } else if (s) {
    broken("a schedule returned with an error", err);
  }
  return 0;
}
