/* bench/dcqcn_fluid: DCQCN's fluid model (Zhu et al., SIGCOMM 2015,
 * section 5; eq. (11) of Zhu et al., CoNEXT 2016), solved for N flows into
 * one bottleneck (include/jctlab/dcqcn_fluid.h: the equations, the
 * solver), the figure bench/dcqcn-paper sets beside jctlab's emulated
 * DCQCN. Parameters by jctlab's names: the bottleneck's rate, the
 * switch's marking thresholds, the DCQCN profile (its timers, byte counter,
 * F, R_AI, g and CNP interval from jctlab's own table, dcqcn.h), the path
 * MTU (a frame of MTU + 58 header bytes is the model's packet), and the
 * feedback delay tau_star (marking at the switch to the reaction point).
 *
 * Prints a summary with bench/dcqcn-paper's definitions: the time to
 * converge (the rates' sum, after their first fall below C, back to
 * 0.9 C), then over the samples from there on the queue's median,
 * p10-p90 and min-max, each flow's mean rate against C/N, and Jain's
 * index. --series-out writes the trace: one line per sample, t_ns,
 * queue_bytes, then each flow's rc_bps ('#' lines are comments).
 *
 * Usage: dcqcn_fluid [--flows N] [--rate RATE] [--ecn-thresholds KMIN,KMAX,PMAX]
 *                    [--cc-profile paper|connectx] [--path-mtu N] [--tau-star TIME]
 *                    [--step TIME] [--duration TIME] [--series TIME] [--stagger TIME]
 *                    [--series-out FILE|-] [--fixed-p P] [--queue-delay]
 *   defaults: 7 flows, 40gbit, 5KB,200KB,0.01, paper, 4096, 4us, 10ns, 20ms,
 *   50us, 0 (every flow starts at once, at C).
 *   --queue-delay: the marks reach the RP after tau_star plus the marked
 *   packet's wait in the queue (q/C: a switch that marks on enqueue, as
 *   jctlab's), not tau_star alone (the paper's model).
 *   --fixed-p P: the open loop, every packet marked with probability P
 *   whatever the queue (the reaction point alone, as in the suite's check
 *   of uroce's RP against the model).
 * Exit: 0, 1 the solver or the output failed, 2 bad usage (one line naming
 * the bad word, nothing written).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/units.h"
#include "jctlab/dcqcn_fluid.h"

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("dcqcn_fluid: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

static int parse(int argc, char **argv, jct_fluid_cfg_t *c, const char **out) {
  uint32_t flows = 7;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--flows") && i + 1 < argc) {
      uint64_t v;
      if (jct__parse_count(argv[i + 1], JCT_FLUID_MAX_FLOWS, &v) || !v)
        return usage("--flows: '%s' is not 1 to %d", argv[i + 1], JCT_FLUID_MAX_FLOWS);
      flows = (uint32_t)v;
    }
  jct_fluid_cfg_default(c, flows);
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
      puts("usage: dcqcn_fluid [--flows N] [--rate RATE] [--ecn-thresholds KMIN,KMAX,PMAX]\n"
           "                   [--cc-profile paper|connectx] [--path-mtu N] [--tau-star TIME]\n"
           "                   [--step TIME] [--duration TIME] [--series TIME] [--stagger TIME]\n"
           "                   [--series-out FILE|-] [--fixed-p P] [--queue-delay]");
      exit(0);
    }
    if (!strcmp(w, "--queue-delay")) {
      c->queue_delay = true;
      continue;
    }
    static const char *const valued[] = {
        "--flows", "--rate",     "--ecn-thresholds", "--cc-profile", "--path-mtu",   "--tau-star",
        "--step",  "--duration", "--series",         "--stagger",    "--series-out", "--fixed-p",
        NULL};
    size_t k = 0;
    while (valued[k] && strcmp(valued[k], w))
      k++;
    if (!valued[k]) return usage("unknown option '%s'", w);
    if (!v) return usage("%s needs a value", w);
    i++;
    uint64_t ns;
    if (!strcmp(w, "--flows")) {
      /* read above: the default config depends on it */
    } else if (!strcmp(w, "--rate")) {
      if (jct__parse_rate_bps(v, &c->line_rate_bps))
        return usage("--rate: '%s' is not a rate (40gbit, 100mbit)", v);
    } else if (!strcmp(w, "--ecn-thresholds")) {
      if (jct__parse_ecn_thresholds(v, &c->kmin_bytes, &c->kmax_bytes, &c->pmax))
        return usage("--ecn-thresholds: '%s' is not KMIN,KMAX,PMAX", v);
    } else if (!strcmp(w, "--cc-profile")) {
      jct_dcqcn_profile_t pr;
      if (jct_dcqcn_profile_parse(v, &pr))
        return usage("--cc-profile: '%s' is not paper or connectx", v);
      jct_dcqcn_params(&c->cc, pr);
    } else if (!strcmp(w, "--path-mtu")) {
      uint32_t mtu;
      if (jct__parse_path_mtu(v, &mtu))
        return usage("--path-mtu: '%s' is not 256, 512, 1024, 2048 or 4096", v);
      c->packet_bytes = mtu + 58;
    } else if (!strcmp(w, "--fixed-p")) {
      if (jct__parse_number(v, &c->fixed_p) || c->fixed_p < 0 || c->fixed_p > 1)
        return usage("--fixed-p: '%s' is not a probability in [0, 1]", v);
    } else if (!strcmp(w, "--series-out")) {
      *out = v;
    } else {
      if (jct__parse_time_ns(v, &ns)) return usage("%s: '%s' is not a time (4us, 500ns)", w, v);
      if (!strcmp(w, "--tau-star"))
        c->tau_star_ns = ns;
      else if (!strcmp(w, "--step"))
        c->step_ns = ns;
      else if (!strcmp(w, "--duration"))
        c->duration_ns = ns;
      else if (!strcmp(w, "--series"))
        c->sample_ns = ns;
      else
        c->stagger_ns = ns;
    }
  }
  char err[256];
  if (jct_fluid_cfg_check(c, err, sizeof err)) return usage("%s", err);
  return 0;
}

int main(int argc, char **argv) {
  jct_fluid_cfg_t c;
  const char *out = NULL;
  int rc = parse(argc, argv, &c, &out);
  if (rc) return rc;
  jct_fluid_trace_t tr;
  char err[256];
  if (jct_fluid_solve(&c, &tr, err, sizeof err)) {
    fprintf(stderr, "dcqcn_fluid: %s\n", err);
    return 1;
  }
  jct_fluid_summary_t s;
  jct_fluid_summarize(&tr, c.line_rate_bps, &s);
  if (out) {
    FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
    if (!f) {
      perror(out);
      jct_fluid_trace_free(&tr);
      return 1;
    }
    fprintf(f, "# dcqcn_fluid: %u flows, C %llu bit/s, tau_star %llu ns\n# t_ns queue_bytes",
            c.flows, (unsigned long long)c.line_rate_bps, (unsigned long long)c.tau_star_ns);
    for (uint32_t i = 0; i < c.flows; i++)
      fprintf(f, " rc%u_bps", i);
    fputc('\n', f);
    for (size_t k = 0; k < tr.samples; k++) {
      fprintf(f, "%llu %.0f", (unsigned long long)tr.t_ns[k], tr.queue_bytes[k]);
      for (uint32_t i = 0; i < c.flows; i++)
        fprintf(f, " %.0f", tr.rc_bps[k * c.flows + i]);
      fputc('\n', f);
    }
    if (f != stdout && fclose(f)) {
      perror(out);
      jct_fluid_trace_free(&tr);
      return 1;
    }
  }
  FILE *o = out && !strcmp(out, "-") ? stderr : stdout;
  double fair = (double)c.line_rate_bps / c.flows;
  fprintf(
      o,
      "dcqcn_fluid: %u flows, C %.3g bit/s, marking %llu/%llu bytes, pmax %g, tau_star %llu ns%s, "
      "%zu samples over %.3f ms\n",
      c.flows, (double)c.line_rate_bps, (unsigned long long)c.kmin_bytes,
      (unsigned long long)c.kmax_bytes, c.pmax, (unsigned long long)c.tau_star_ns,
      c.queue_delay ? " + q/C" : "", tr.samples,
      tr.samples ? (double)tr.t_ns[tr.samples - 1] / 1e6 : 0.0);
  if (s.converged)
    fprintf(o, "time to converge (sum >= 0.9 C after the first cut): %.3f ms\n",
            (double)s.converge_ns / 1e6);
  else
    fprintf(o, "time to converge: never (window: the second half)\n");
  fprintf(o, "queue (bytes) in the window: median %.0f, p10-p90 %.0f-%.0f, min-max %.0f-%.0f\n",
          s.queue_median_bytes, s.queue_p10_bytes, s.queue_p90_bytes, s.queue_min_bytes,
          s.queue_max_bytes);
  for (uint32_t i = 0; i < c.flows; i++)
    fprintf(o, "flow %u mean rate: %.4g bit/s, %.3f of C/N\n", i, s.rate_mean_bps[i],
            s.rate_mean_bps[i] / fair);
  fprintf(o, "sum of means: %.3f of C; Jain's index: %.4f\n",
          s.rate_sum_bps / (double)c.line_rate_bps, s.jain);
  jct_fluid_trace_free(&tr);
  return 0;
}
