/* What `jctlab replay` replays (replay_input.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "replay_input.h"

#ifndef JCT_DEFAULT_TRACE
#define JCT_DEFAULT_TRACE "traces/rxe-write-send-loss1pct.pcap"
#endif

/* A schedule is JSON: a .json name, or a file whose first non-blank byte is '{'. */
static int is_schedule(const char *path) {
  size_t n = strlen(path);
  if (n > 5 && strcmp(path + n - 5, ".json") == 0) return 1;
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  int c;
  while ((c = fgetc(f)) == ' ' || c == '\n' || c == '\t' || c == '\r') {
  }
  fclose(f);
  return c == '{';
}

void jct__schedule_scale(jct_schedule_t *s, double scale) {
  if (scale == 1) return;
  for (uint32_t i = 0; i < s->nops; i++) {
    double b = (double)s->ops[i].bytes * scale;
    s->ops[i].bytes = b < 1 ? 1 : (uint64_t)(b + 0.5);
  }
  double t = (double)s->bytes * scale;
  s->bytes = t < 1 ? 1 : (uint64_t)(t + 0.5);
}

int jct__replay_input_load(jct__replay_input_t *in, const jct__run_args_t *a, const char *path,
                           double scale, char *err, size_t errlen) {
  memset(in, 0, sizeof *in);
  int rc;
  if (a->synth) {
    in->kind = "synth";
    snprintf(in->source, sizeof in->source, "synth %s, %llu ranks, %llu bytes", a->synth,
             (unsigned long long)a->ranks, (unsigned long long)a->bytes);
    rc = jct_schedule_synth(&in->schedule, a->synth, (uint32_t)a->ranks, a->bytes,
                            (uint32_t)a->channels, err, errlen);
  } else {
    if (!path) path = JCT_DEFAULT_TRACE;
    snprintf(in->source, sizeof in->source, "%s", path);
    int sched = is_schedule(path);
    if (sched < 0) return jct__errf(err, errlen, JCT_EIO, "%s: no such file", path);
    if (sched) {
      in->kind = "schedule";
      rc = jct_schedule_load(&in->schedule, path, err, errlen);
    } else {
      in->kind = "trace";
      uint32_t pmtu = a->run.path_mtu_bytes ? a->run.path_mtu_bytes : 4096;
      rc = jct__postmortem_load(in, path, pmtu, scale, a->run.transport == JCT_TRANSPORT_VERBS, err,
                                errlen);
      scale = 1; /* done there: the losses' offsets scale with the sizes */
    }
  }
  if (rc) {
    jct__replay_input_free(in);
    return rc;
  }
  jct__schedule_scale(in->schedule, scale);
  return 0;
}

void jct__replay_input_free(jct__replay_input_t *in) {
  jct_schedule_free(in->schedule);
  in->schedule = NULL;
  for (uint32_t i = 0; i < in->nfaults; i++)
    free(in->fault_specs[i]);
  in->nfaults = 0;
}
