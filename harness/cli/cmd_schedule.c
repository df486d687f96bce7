/* `jctlab schedule [TRACE] [-o FILE] [--json-report FILE] [--quiet]`: infer
 * the replayable schedule of the job a RoCEv2 capture recorded
 * (include/jctlab/infer.h) and say how far to trust it.
 *
 * The schedule goes to -o (standard output by default), the confidence
 * report to standard error, or to standard output when the schedule goes to
 * a file, so that `jctlab schedule t.pcap > s.json` stays clean JSON.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "jctlab/error.h"
#include "jctlab/infer.h"
#include "jctlab/schedule.h"
#include "harness/base/layout.h"
#include "harness/report/output.h"
#include "harness/report/schedule_report.h"


#define FAULTS_LISTED 10u

static const char usage_text[] =
    "usage: jctlab schedule [TRACE] [-o FILE] [--json-report FILE] [--keep-turnaround] [-q]\n"
    "\n"
    "Infer the schedule of the job a RoCEv2 capture recorded, for `jctlab run\n"
    "--schedule` to replay: ranks from addresses, connections from QP flows, one op\n"
    "per message (first transmissions only), deps by happens-before (messages\n"
    "received; the rank's own earlier sends after a pause nothing received\n"
    "explains: program order), gap_ns the rank's compute. Flow control\n"
    "(clear-to-send) and control traffic (TCP, CM) are left out and counted.\n"
    "TRACE defaults to the shipped trace\n"
    "(traces/rxe-write-send-loss1pct.pcap; installed, its copy); '-' reads\n"
    "standard input.\n"
    "\n"
    "options:\n"
    "  -o FILE              the schedule (JSON) to FILE (default: standard output)\n"
    "  --json-report FILE   the confidence report and the losses as JSON ('-': stdout)\n"
    "  --keep-turnaround    gap_ns as measured at the capture point, the network's\n"
    "                       share included\n"
    "  -q, --quiet          no text report\n"
    "\n"
    "The text report (pattern, deps by kind, clock skew, losses) goes to standard\n"
    "error, or to standard output when -o names a file.\n"
    "\n"
    "exit status: 0 success, 2 bad input (bad option, no such file, not a capture,\n"
    "no RoCE message), 1 jctlab failed (out of memory, a write error).\n";

#define bad(...) jct__cmd_bad("schedule", __VA_ARGS__)

static int write_report_json(const char *path, const char *trace, const jct_infer_report_t *rep) {
  json_t *doc = jct__infer_report_json(trace, rep);
  if (!doc) return JCT_ENOMEM;
  int rc = jct__json_write(doc, path, "schedule");
  json_decref(doc);
  return rc;
}

int jct__cmd_schedule(int argc, char **argv) {
  const char *trace = NULL, *out = "-", *json_report = NULL;
  bool quiet = false;
  jct_infer_opts_t opts = {0};
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0) {
      fputs(usage_text, stdout);
      return 0;
    } else if (strcmp(w, "-o") == 0 || strcmp(w, "--output") == 0) {
      if (!v) return bad("%s needs a file", w);
      out = v, i++;
    } else if (strcmp(w, "--json-report") == 0) {
      if (!v) return bad("%s needs a file", w);
      json_report = v, i++;
    } else if (strcmp(w, "-q") == 0 || strcmp(w, "--quiet") == 0) {
      quiet = true;
    } else if (strcmp(w, "--keep-turnaround") == 0) {
      opts.keep_turnaround = true;
    } else if (strcmp(w, "-r") == 0) {
      if (!v) return bad("-r needs a capture");
      if (trace) return bad("one capture only: '%s'", v);
      trace = v, i++;
    } else if (w[0] == '-' && w[1]) {
      return bad("unknown option '%s'", w);
    } else if (trace) {
      return bad("one capture only: '%s'", w);
    } else {
      trace = w;
    }
  }
  if (!trace) trace = jct__default_trace();
  if (jct__cmd_output_ok("schedule", "-o", out) ||
      jct__cmd_output_ok("schedule", "--json-report", json_report))
    return 2;
  if (strcmp(out, "-") == 0 && json_report && strcmp(json_report, "-") == 0)
    return bad("the schedule and the JSON report cannot both go to standard output");

  char err[512];
  jct_schedule_t *s;
  jct_infer_report_t rep;
  int rc = jct_infer(trace, &opts, &s, &rep, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab schedule: %s\n", err);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  int status = 0;
  if (jct_schedule_validate(s, err, sizeof err)) { /* a bug of ours, not the capture's */
    fprintf(stderr, "jctlab schedule: the inferred schedule is invalid: %s\n", err);
    status = 1;
  } else if (jct_schedule_save(s, out, err, sizeof err)) {
    fprintf(stderr, "jctlab schedule: %s\n", err);
    status = 1;
  }
  if (!status && json_report && (rc = write_report_json(json_report, trace, &rep))) {
    if (rc == JCT_ENOMEM) fprintf(stderr, "jctlab schedule: out of memory\n");
    status = 1;
  }
  if (!status && !quiet) {
    FILE *o = strcmp(out, "-") == 0 ? stderr : stdout;
    if (json_report && strcmp(json_report, "-") == 0) o = stderr;
    if (jct__infer_report_text(o, trace, s, &rep, FAULTS_LISTED) || fflush(o)) status = 1;
  }
  jct_infer_report_free(&rep);
  jct_schedule_free(s);
  return status;
}
