/* A size sweep's table and document (sweep.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/units.h"
#include "harness/orch/names.h"
#include "harness/report/result.h"
#include "sweep.h"

#define ELEMENT_BYTES 4 /* nccl-tests' default type, float */

uint64_t jct__sweep_count(const char *algorithm, uint32_t n, uint64_t bytes) {
  uint64_t count = bytes / ELEMENT_BYTES;
  bool per_rank = !strcmp(algorithm, "all-gather") || !strcmp(algorithm, "reduce-scatter") ||
                  !strcmp(algorithm, "all-to-all");
  return per_rank && n ? count / n : count;
}

/* The sweep's time dilation (the same F for every size): the "dilation"
 * object without the wall-time figures, which are per size. */
static json_t *dilation_json(const jct_run_opts_t *o) {
  jct_run_dilation_t d;
  jct_run_dilation(o, &d);
  json_t *j = jct__dilation_json(&d, 0, 0);
  json_object_del(j, "wall_s");
  json_object_del(j, "wall_per_jct");
  return j;
}

void jct__sweep_print_header(FILE *f, const jct__sweep_info_t *in) {
  const jct_run_opts_t *o = in->o;
  char b1[32], b2[32];
  fprintf(f, "# jctlab run: %s, %u ranks, %u channel%s, %s links, delay %s, %s (PMTU %u), PFC %s\n",
          in->algorithm, in->ranks, in->channels, in->channels == 1 ? "" : "s",
          jct__fmt_rate(o->rate_bps, b1, sizeof b1), jct__fmt_ns(o->prop_delay_ns, b2, sizeof b2),
          jct__transport_words(o), o->path_mtu_bytes ? o->path_mtu_bytes : 4096, o->pfc ? "on" : "off");
  if (o->ecn || jct_run_cc(o) != JCT_CC_NONE) {
    fprintf(f, "# ECN %s, congestion control %s", o->ecn ? "on" : "off",
            jct__cc_name(jct_run_cc(o)));
    if (jct_run_cc(o) == JCT_CC_DCQCN)
      fprintf(f, " (%s, parameters dilated x%.0f)", jct_dcqcn_profile_name(o->cc_profile),
              jct_run_cc_dilation(o));
    fprintf(f, "\n");
  }
  if (in->qps_per_conn > 1)
    fprintf(f, "# %u QPs per connection, each message split across them\n", in->qps_per_conn);
  json_t *dil = json_pack("{s:o}", "dilation", dilation_json(o));
  char dbuf[512];
  fprintf(f, "# time dilation %s\n", jct__dilation_text(dil, dbuf, sizeof dbuf));
  json_decref(dil);
  if (o->ninject) {
    fprintf(f,
            "# each size: %u warm-up, then %u baseline and %u faulted repetitions interleaved; "
            "median JCTs; seed %llu\n",
            o->warmup, o->reps, o->reps, (unsigned long long)o->seed);
    for (uint32_t i = 0; i < o->ninject; i++)
      fprintf(f, "# faults: %s\n", o->inject[i]);
  } else {
    fprintf(f,
            "# each size: %u warm-up, then %u repetitions; median JCTs; no faults (give --inject "
            "for the faulted columns)\n",
            o->warmup, o->reps);
  }
  fprintf(f, "#\n# %10s  %12s  %5s  %-29s  %s\n", "", "", "", "baseline", "faulted");
  fprintf(f, "# %10s  %12s  %5s  %11s %8s %8s  %11s %8s %8s  %s\n", "size", "count", "type", "time",
          "algbw", "busbw", "time", "algbw", "busbw", "degradation [95% CI]");
  fprintf(f, "# %10s  %12s  %5s  %11s %8s %8s  %11s %8s %8s\n", "(B)", "(elements)", "", "(us)",
          "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)");
}

void jct__sweep_print_row(FILE *f, const jct__sweep_info_t *in, const jct__sweep_row_t *r) {
  (void)in;
  fprintf(f, "%12llu  %12llu  %5s  ", (unsigned long long)r->bytes, (unsigned long long)r->count,
          "float");
  if (!r->valid) {
    fprintf(f, "INVALID: %s\n", r->invalid_why);
    fflush(f);
    return;
  }
  const jct__sweep_side_t *b = &r->base, *x = &r->fault;
  fprintf(f, "%11.1f %8.4f %8.4f  ", (double)b->median_ns / 1e3, b->algbw_gbps, b->busbw_gbps);
  if (!r->faulted)
    fprintf(f, "%11s %8s %8s  %s", "N/A", "N/A", "N/A", "N/A");
  else if (isnan(r->ci95_low))
    fprintf(f, "%11.1f %8.4f %8.4f  %.3f [n/a: under 5 reps]", (double)x->median_ns / 1e3,
            x->algbw_gbps, x->busbw_gbps, r->degradation);
  else
    fprintf(f, "%11.1f %8.4f %8.4f  %.3f [%.3f, %.3f]", (double)x->median_ns / 1e3, x->algbw_gbps,
            x->busbw_gbps, r->degradation, r->ci95_low, r->ci95_high);
  fprintf(f, "%s\n", r->loop_bound ? "  (loop-bound)" : "");
  fflush(f);
}

/* The mean busbw over the valid rows, of one side; NaN when none. */
static double avg_busbw(const jct__sweep_row_t *rows, uint32_t n, bool faulted) {
  double sum = 0;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (rows[i].valid && (!faulted || rows[i].faulted)) {
      sum += faulted ? rows[i].fault.busbw_gbps : rows[i].base.busbw_gbps;
      k++;
    }
  return k ? sum / k : NAN;
}

void jct__sweep_print_footer(FILE *f, const jct__sweep_info_t *in, const jct__sweep_row_t *rows,
                             uint32_t n) {
  uint32_t invalid = 0, loop = 0;
  for (uint32_t i = 0; i < n; i++)
    invalid += !rows[i].valid, loop += rows[i].loop_bound; /* invalid rows, all of them */
  double b = avg_busbw(rows, n, false), x = avg_busbw(rows, n, true);
  fprintf(f, "# Invalid sizes: %u of %u (never reported as results)\n", invalid, n);
  if (loop)
    fprintf(f,
            "# Loop-bound sizes: %u (the event loop's p99 lateness exceeded one packet's time: "
            "the loop, not the link, set the pace; lower --rate)\n",
            loop);
  if (!isnan(b)) fprintf(f, "# Avg bus bandwidth, baseline: %.4f GB/s\n", b);
  if (in->o->ninject && !isnan(x)) fprintf(f, "# Avg bus bandwidth, faulted : %.4f GB/s\n", x);
  fflush(f);
}

static json_t *num_or_null(double v) {
  return isnan(v) ? json_null() : json_real(v);
}

static json_t *side_json(const jct__sweep_side_t *s, bool valid) {
  json_t *reps = json_null();
  if (valid && s->jct_ns) {
    reps = json_array();
    for (uint32_t i = 0; i < s->reps; i++)
      json_array_append_new(reps, json_integer((json_int_t)s->jct_ns[i]));
  }
  json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "jct_ns", reps, "median_ns",
                        valid ? json_integer((json_int_t)s->median_ns) : json_null(), "min_ns",
                        valid ? json_integer((json_int_t)s->min_ns) : json_null(), "max_ns",
                        valid ? json_integer((json_int_t)s->max_ns) : json_null(), "algbw_gbps",
                        valid ? json_real(s->algbw_gbps) : json_null(), "busbw_gbps",
                        valid ? json_real(s->busbw_gbps) : json_null());
  /* The transport's figures, as every result has them (result.c). */
  json_t *t = jct__transport_json(&s->transport);
  json_object_update(o, t);
  json_decref(t);
  return o;
}

static json_t *row_json(const jct__sweep_row_t *r) {
  bool v = r->valid;
  json_t *deg = json_null();
  if (v && r->faulted)
    deg = json_pack("{s:f,s:o,s:o}", "median", r->degradation, "ci95_low", num_or_null(r->ci95_low),
                    "ci95_high", num_or_null(r->ci95_high));
  json_t *j = json_pack(
      "{s:I,s:I,s:b,s:o,s:o,s:o,s:o,s:o,s:{s:f,s:o},s:{s:I,s:I,s:I,s:f},s:b}", "bytes",
      (json_int_t)r->bytes, "count", (json_int_t)r->count, "valid", v, "invalid_why",
      v ? json_null() : json_string(r->invalid_why), "baseline", side_json(&r->base, v), "faulted",
      r->faulted ? side_json(&r->fault, v) : json_null(), "degradation", deg, "dropped",
      r->faulted ? json_integer((json_int_t)r->dropped) : json_null(), "model", "jct_ns",
      r->model_ns, "ratio",
      v && r->base.median_ns && r->model_ns > 0 ? json_real((double)r->base.median_ns / r->model_ns)
                                                : json_null(),
      "lateness", "p50_ns", (json_int_t)r->lateness_p50_ns, "p99_ns",
      (json_int_t)r->lateness_p99_ns, "max_ns", (json_int_t)r->lateness_max_ns, "packet_time_ns",
      r->packet_time_ns, "loop_bound", r->loop_bound);
  if (j) json_object_set_new(j, "qps_used", v ? json_integer((json_int_t)r->qps_used) : json_null());
  if (j) /* the go-back-N model beside the α-β one (null: no faults, or faults it does not cover) */
    json_object_set(json_object_get(j, "model"), "loss", r->loss_model ? r->loss_model : json_null());
  return j;
}

json_t *jct__sweep_json(const jct__sweep_info_t *in, const jct__sweep_row_t *rows, uint32_t n) {
  const jct_run_opts_t *o = in->o;
  json_t *inject = json_array(), *sizes = json_array();
  for (uint32_t i = 0; i < o->ninject; i++)
    json_array_append_new(inject, json_string(o->inject[i]));
  for (uint32_t i = 0; i < n; i++)
    json_array_append_new(sizes, row_json(&rows[i]));
  json_t *doc = json_pack(
      "{s:i,s:{s:s,s:I,s:I,s:s,s:s,s:I,s:I,s:b,s:I,s:I,s:I,s:I,s:o},s:o,s:{s:o,s:o},s:n}",
      "jctlab_sweep", 1, "config", "algorithm", in->algorithm, "ranks", (json_int_t)in->ranks,
      "channels", (json_int_t)in->channels, "type", "float", "transport",
      jct__transport_name(o->transport), "rate_bps", (json_int_t)o->rate_bps, "prop_delay_ns",
      (json_int_t)o->prop_delay_ns, "pfc", o->pfc, "path_mtu_bytes",
      (json_int_t)(o->path_mtu_bytes ? o->path_mtu_bytes : 4096), "reps", (json_int_t)o->reps,
      "warmup", (json_int_t)o->warmup, "seed", (json_int_t)o->seed, "inject", inject, "sizes",
      sizes, "avg_busbw_gbps", "baseline", num_or_null(avg_busbw(rows, n, false)), "faulted",
      o->ninject ? num_or_null(avg_busbw(rows, n, true)) : json_null(), "interrupted");
  json_t *cfg = doc ? json_object_get(doc, "config") : NULL;
  if (cfg) {
    json_object_set_new(cfg, "ecn", json_boolean(o->ecn));
    json_object_set_new(cfg, "cc", json_string(jct__cc_name(jct_run_cc(o))));
    json_object_set_new(cfg, "dilation", dilation_json(o));
    json_object_set_new(cfg, "qps_per_connection",
                        json_integer(in->qps_per_conn > 1 ? in->qps_per_conn : 1));
  }
  return doc;
}

void jct__sweep_row_free(jct__sweep_row_t *row) {
  free(row->base.jct_ns);
  free(row->fault.jct_ns);
  row->base.jct_ns = row->fault.jct_ns = NULL;
  json_decref(row->loss_model);
  row->loss_model = NULL;
}
