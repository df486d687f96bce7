/* `jctlab run --synth ALGO` over many sizes, as nccl-tests' size sweep
 * (commands.h): its options, and the run that prints one table row per
 * size as each finishes (plan/size_sweep.h, report/sweep.h).
 *
 *   jctlab run --synth all-gather --ranks 4 -b 64K -e 4M -f 2 [--inject SPEC]
 *   jctlab run --synth broadcast --ranks 4 --bytes 1MiB,4MiB,16MiB --json -
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "harness/base/interrupt.h"
#include "harness/base/units.h"
#include "harness/plan/size_sweep.h"
#include "harness/report/output.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"

#define bad(...) jct__cmd_bad("run", __VA_ARGS__)

_Static_assert(sizeof((jct__sweep_args_t *)0)->sizes / sizeof(uint64_t) == JCT_SWEEP_MAX_SIZES,
               "the sweep's sizes hold JCT_SWEEP_MAX_SIZES");

int jct__sweep_args_parse(jct__sweep_args_t *s, int argc, char **argv, int *i) {
  const char *w = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  bool min = !strcmp(w, "-b") || !strcmp(w, "--bytes-min");
  bool max = !strcmp(w, "-e") || !strcmp(w, "--bytes-max");
  bool factor = !strcmp(w, "-f") || !strcmp(w, "--bytes-factor");
  bool warmup = !strcmp(w, "--warmup"); /* not -w: tcpdump's "write", beside -s, -C, -W */
  bool list = !strcmp(w, "--bytes") && v && strchr(v, ',');
  if (!min && !max && !factor && !warmup && !list) return 0;
  if (!v) return bad("%s needs a value", w);
  (*i)++;
  if (min || max) {
    uint64_t *to = min ? &s->min : &s->max;
    if (jct__parse_size_bytes(v, to) || *to == 0)
      return bad("%s: '%s' is not a size (8, 64K, 128M, 1GiB)", w, v);
    *(min ? &s->have_min : &s->have_max) = true;
  } else if (factor) {
    if (jct__parse_number(v, &s->factor)) return bad("%s: '%s' is not a number", w, v);
    s->have_factor = true;
  } else if (warmup) {
    uint64_t n;
    if (jct__parse_count(v, JCT_RUN_MAX_WARMUP, &n))
      return bad("%s: '%s' is not 0 to %d", w, v, JCT_RUN_MAX_WARMUP);
    s->warmup = (int64_t)n;
  } else {
    s->list = v;
  }
  return 1;
}

int jct__sweep_args_finish(jct__sweep_args_t *s, jct__run_args_t *r) {
  bool range = s->have_min || s->have_max || s->have_factor;
  char err[256];
  if (range || s->list) {
    if (!r->synth)
      return bad("a size sweep needs --synth ALGO (a schedule file has its own sizes)");
    if (range && (s->list || r->bytes))
      return bad("give --bytes or --bytes-min/--bytes-max, not both");
    if (range && !(s->have_min && s->have_max))
      return bad("a size sweep needs --bytes-min and --bytes-max (nccl-tests' -b and -e)");
    int rc = range ? jct__sweep_sizes_range(s->min, s->max, s->have_factor ? s->factor : 2,
                                            s->sizes, &s->nsizes, err, sizeof err)
                   : jct__sweep_sizes_list(s->list, s->sizes, &s->nsizes, err, sizeof err);
    if (rc) return bad("%s", err);
  } else if (r->synth && (!r->ranks || !r->bytes)) {
    return bad("--synth needs --ranks and --bytes (or --bytes-min and --bytes-max)");
  }
  if (r->synth && !r->ranks) return bad("--synth needs --ranks");
  r->run.warmup = s->warmup >= 0 ? (uint32_t)s->warmup : s->nsizes ? 1 : 0;
  return -1;
}

typedef struct {
  const jct__sweep_info_t *info;
  bool table; /* print the table on stdout as the rows come */
} printer_t;

static void on_row(const jct__sweep_row_t *row, uint32_t index, void *arg) {
  const printer_t *p = arg;
  if (!p->table) return;
  if (index == 0) jct__sweep_print_header(stdout, p->info);
  jct__sweep_print_row(stdout, p->info, row);
}

static int write_json(const jct__sweep_info_t *info, const jct__sweep_row_t *rows, uint32_t n,
                      const char *path) {
  json_t *doc = jct__sweep_json(info, rows, n);
  if (!doc) {
    fprintf(stderr, "jctlab run: out of memory\n");
    return 1;
  }
  jct__cases_mark_interrupted(doc);
  int rc = jct__json_write(doc, path, "run");
  json_decref(doc);
  return rc;
}

int jct__run_sweep(const jct__sweep_args_t *s, jct__run_args_t *r, const char *json) {
  jct__sweep_plan_t plan = {.algorithm = r->synth,
                            .ranks = (uint32_t)r->ranks,
                            .channels = (uint32_t)r->channels,
                            .sizes = s->sizes,
                            .nsizes = s->nsizes,
                            .opts = r->run,
                            .qps_per_conn = (uint32_t)r->qps_per_conn};
  char err[512], name[32];
  int rc = jct__sweep_check(&plan, name, sizeof name, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab run: %s\n", err);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  /* -C: each size's rotated captures, checked as one run's. */
  for (uint32_t i = 0; i < s->nsizes && plan.opts.pcap_file_bytes; i++) {
    jct_run_opts_t o = plan.opts;
    char b[2][4096];
    o.pcap_out = jct__sweep_size_path(o.pcap_out, s->sizes[i], s->nsizes, b[0], sizeof b[0]);
    o.pcap_in = jct__sweep_size_path(o.pcap_in, s->sizes[i], s->nsizes, b[1], sizeof b[1]);
    if (jct__capture_names_ok(&o, 1, "run")) return 2;
  }
  /* --agents: the hosts are reached over this host's own network. */
  if (!plan.opts.agents && (rc = jct_ns_isolate(err, sizeof err))) {
    fprintf(stderr, "jctlab run: %s\n", err);
    return 1;
  }
  jct__interrupt_install(); /* a first SIGINT ends the sweep cleanly */
  jct__sweep_row_t *rows = calloc(s->nsizes, sizeof *rows);
  if (!rows) {
    fprintf(stderr, "jctlab run: out of memory\n");
    return 1;
  }
  jct__sweep_info_t info = {.algorithm = name,
                            .ranks = plan.ranks,
                            .channels = plan.channels,
                            .o = &plan.opts,
                            .qps_per_conn = plan.qps_per_conn};
  printer_t pr = {.info = &info, .table = !json || strcmp(json, "-") != 0};
  uint32_t nrun = 0;
  int status = 0;
  rc = jct__sweep_run(&plan, rows, &nrun, on_row, &pr, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab run: %s\n", err);
    status = rc == JCT_EINVAL ? 2 : 1;
  } else {
    if (pr.table && nrun) jct__sweep_print_footer(stdout, &info, rows, nrun);
    if (json) status = write_json(&info, rows, nrun, json);
    uint32_t invalid = 0, first = 0;
    for (uint32_t i = nrun; i-- > 0;)
      if (!rows[i].valid) invalid++, first = i;
    if (invalid) {
      fprintf(stderr, "jctlab run: invalid run at %u of %u sizes (size %llu: %s)\n", invalid, nrun,
              (unsigned long long)rows[first].bytes, rows[first].invalid_why);
      if (status == 0) status = 3;
    }
    status = jct__cases_interrupted("run", status);
  }
  for (uint32_t i = 0; i < nrun; i++)
    jct__sweep_row_free(&rows[i]);
  free(rows);
  return status;
}
