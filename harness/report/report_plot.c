/* The report's plots (report.h lists them): which ones the result document
 * allows, and the gnuplot script that draws them, its data inline as
 * datablocks so that the script is the only input gnuplot reads.
 *
 * Every text taken from the document (case names, sweep keys, injector
 * specs) is printed with gnuplot's enhanced text off ("drop_p" must not
 * become a subscript) and quoted the way gnuplot quotes: single-quoted
 * strings double their quote; strings inside datablocks cannot escape a
 * double quote, so one there becomes a single quote. The terminal is the
 * SVG one the project settled on: size 800,400 dynamic (the page sizes it),
 * enhanced, font sans 10.
 *
 * A value 0 on a logarithmic sweep axis (a sweep from p=0 to p=0.1) is
 * drawn one decade below the smallest other value, with its tick labelled
 * "0": the points keep their order and nothing is silently dropped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "report_int.h"

#define TERMINAL "set terminal svg size 800,%d dynamic enhanced font 'sans,10'\n"
#define DETAIL_MAX_CASES 16 /* timelines and retransmission plots for the first cases only */
#define LOG_SPAN 100.0      /* the sweep's x axis is logarithmic from two decades on */

/* ---- planning ---- */

static jct__plot_t *add(jct__plots_t *p, jct__plot_kind_t kind, long case_index) {
  jct__plot_t *v = realloc(p->v, (p->n + 1) * sizeof *v);
  if (!v) return NULL;
  p->v = v;
  memset(&v[p->n], 0, sizeof *v);
  v[p->n].kind = kind;
  v[p->n].case_index = case_index;
  return &v[p->n++];
}

static void append_note(jct__plot_t *pl, const char *name) {
  size_t used = strlen(pl->note);
  if (used + 8 >= sizeof pl->note) return;
  snprintf(pl->note + used, sizeof pl->note - used, "%s'%s'", used ? ", " : "", name);
}

static void finish_note(jct__plot_t *pl) {
  if (!pl->note[0]) return;
  char names[sizeof pl->note];
  memcpy(names, pl->note, sizeof names);
  snprintf(pl->note, sizeof pl->note, "Left out, no degradation (invalid run): %.440s", names);
}

/* A file name's part made of the key: letters, digits, '-' and '_' kept. */
static void file_part(const char *key, char *out, size_t len) {
  size_t j = 0;
  for (const char *s = key; *s && j + 1 < len && j < 40; s++) {
    char ch = *s;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_';
    out[j++] = ok ? ch : '_';
  }
  out[j] = 0;
}

static bool has_ops(const json_t *c, const char *side) {
  char path[64];
  snprintf(path, sizeof path, "timeline.%s.ops", side);
  return json_array_size(jct__rget(c, path)) > 0;
}

static int plan_sweeps(const json_t *cases, jct__plots_t *p) {
  size_t i;
  const json_t *c;
  json_array_foreach(cases, i, c) {
    const char *key = jct__rstr(c, "sweep.key");
    double v;
    if (!key || !jct__rnum(c, "sweep.value", &v)) continue;
    bool seen = false;
    for (size_t k = 0; k < p->n; k++)
      if (p->v[k].kind == JCT__PLOT_SWEEP && !strcmp(p->v[k].sweep_key, key)) seen = true;
    if (seen) continue;
    /* Only a sweep with a degradation to draw gets a plot. */
    size_t j, points = 0;
    const json_t *d;
    json_array_foreach(cases, j, d) {
      const char *k2 = jct__rstr(d, "sweep.key");
      double m, x;
      points += k2 && !strcmp(k2, key) && jct__rnum(d, "sweep.value", &x) &&
                jct__rnum(d, "degradation.median", &m);
    }
    if (!points) continue;
    jct__plot_t *pl = add(p, JCT__PLOT_SWEEP, -1);
    if (!pl) return JCT_ENOMEM;
    snprintf(pl->sweep_key, sizeof pl->sweep_key, "%s", key);
    char part[48];
    file_part(key, part, sizeof part);
    snprintf(pl->file, sizeof pl->file, "jct-vs-%s-%zu.svg", part, p->n);
    snprintf(pl->title, sizeof pl->title,
             "Degradation (faulted / baseline median JCT) against %.60s, with 95%% intervals", key);
    json_array_foreach(cases, j, d) {
      const char *k2 = jct__rstr(d, "sweep.key");
      double m;
      if (k2 && !strcmp(k2, key) && !jct__rnum(d, "degradation.median", &m)) {
        const char *name = jct__rstr(d, "name");
        append_note(pl, name ? name : "?");
      }
    }
    finish_note(pl);
  }
  return 0;
}

static int plan_bars(const json_t *cases, jct__plots_t *p) {
  size_t i, points = 0;
  const json_t *c;
  jct__plot_t pl;
  memset(&pl, 0, sizeof pl);
  json_array_foreach(cases, i, c) {
    double v;
    if (jct__rget(c, "sweep.key")) continue;
    if (jct__rnum(c, "degradation.median", &v)) {
      points++;
    } else {
      const char *name = jct__rstr(c, "name");
      append_note(&pl, name ? name : "?");
    }
  }
  if (!points) return 0;
  jct__plot_t *dst = add(p, JCT__PLOT_BARS, -1);
  if (!dst) return JCT_ENOMEM;
  *dst = pl;
  dst->kind = JCT__PLOT_BARS;
  dst->case_index = -1;
  finish_note(dst);
  snprintf(dst->file, sizeof dst->file, "degradation.svg");
  snprintf(dst->title, sizeof dst->title,
           "Degradation (faulted / baseline median JCT) per case, with 95%% intervals");
  return 0;
}

int jct__plots_plan(const json_t *result, jct__plots_t *p) {
  p->v = NULL;
  p->n = 0;
  const json_t *cases = jct__rget(result, "cases"), *c;
  int rc = plan_sweeps(cases, p);
  if (!rc) rc = plan_bars(cases, p);
  size_t i;
  json_array_foreach(cases, i, c) {
    if (rc || i >= DETAIL_MAX_CASES) break;
    const char *name = jct__rstr(c, "name");
    if (!name) name = "?";
    if (has_ops(c, "baseline") || has_ops(c, "faulted")) {
      jct__plot_t *pl = add(p, JCT__PLOT_TIMELINE, (long)i);
      if (!pl) return JCT_ENOMEM;
      snprintf(pl->file, sizeof pl->file, "timeline-%zu.svg", i + 1);
      snprintf(pl->title, sizeof pl->title,
               "Per-rank timeline of '%.120s': one bar per operation, baseline and faulted "
               "repetition",
               name);
    }
    if (json_array_size(jct__rget(c, "retransmissions.faulted")) > 0) {
      jct__plot_t *pl = add(p, JCT__PLOT_RETX, (long)i);
      if (!pl) return JCT_ENOMEM;
      snprintf(pl->file, sizeof pl->file, "retx-%zu.svg", i + 1);
      snprintf(pl->title, sizeof pl->title, "Retransmitted packets over time in '%.120s'", name);
    }
  }
  return rc;
}

void jct__plots_free(jct__plots_t *p) {
  free(p->v);
  p->v = NULL;
  p->n = 0;
}

/* ---- the script ---- */

/* A single-quoted gnuplot string. */
static void gp_str(FILE *out, const char *s) {
  fputc('\'', out);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '\'') fputc('\'', out);
    fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, out);
  }
  fputc('\'', out);
}

/* A string inside a datablock: double-quoted, no escapes possible. */
static void gp_data_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    fputc(ch == '"' ? '\'' : ch == '\\' ? '/' : ch < 0x20 || ch == 0x7f ? ' ' : ch, out);
  }
  fputc('"', out);
}

static void begin_plot(FILE *out, const jct__plot_t *pl, int height) {
  fprintf(out, "reset\n" TERMINAL "set output ", height);
  gp_str(out, pl->file);
  fputc('\n', out);
}

typedef struct {
  double x, med, lo, hi, fmed_ms;
} point_t;

static int cmp_point(const void *a, const void *b) {
  double x = ((const point_t *)a)->x, y = ((const point_t *)b)->x;
  return (x > y) - (x < y);
}

/* The sweep plot's points, sorted by x; *budget the first max_degradation budget seen. */
static size_t sweep_points(const json_t *cases, const char *key, point_t *pts, double *budget) {
  size_t i, n = 0;
  const json_t *c;
  *budget = NAN;
  json_array_foreach(cases, i, c) {
    const char *k = jct__rstr(c, "sweep.key");
    point_t pt;
    if (!k || strcmp(k, key) || !jct__rnum(c, "sweep.value", &pt.x) ||
        !jct__rnum(c, "degradation.median", &pt.med))
      continue;
    if (!jct__rnum(c, "degradation.ci95_low", &pt.lo)) pt.lo = pt.med;
    if (!jct__rnum(c, "degradation.ci95_high", &pt.hi)) pt.hi = pt.med;
    if (!jct__rnum(c, "faulted.median_jct_ns", &pt.fmed_ms)) pt.fmed_ms = NAN;
    pt.fmed_ms /= 1e6;
    double b;
    if (isnan(*budget) && jct__rnum(c, "budget.max_degradation", &b)) *budget = b;
    pts[n++] = pt;
  }
  qsort(pts, n, sizeof *pts, cmp_point);
  return n;
}

static void script_sweep(FILE *out, const json_t *cases, const jct__plot_t *pl, size_t seq) {
  point_t *pts = calloc(json_array_size(cases) + 1, sizeof *pts);
  if (!pts) return;
  double budget;
  size_t n = sweep_points(cases, pl->sweep_key, pts, &budget);
  double minpos = INFINITY, maxv = -INFINITY, minv = INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (pts[i].x > 0 && pts[i].x < minpos) minpos = pts[i].x;
    if (pts[i].x > maxv) maxv = pts[i].x;
    if (pts[i].x < minv) minv = pts[i].x;
  }
  bool logx = n > 1 && minv >= 0 && isfinite(minpos) && maxv / minpos >= LOG_SPAN;
  /* Log axis: ticks at the decades; a 0 one decade below the first. */
  double first_decade = logx ? floor(log10(minpos)) : 0, last_decade = logx ? ceil(log10(maxv)) : 0;
  double zero_at = pow(10, first_decade - 1);
  begin_plot(out, pl, 400);
  fprintf(out, "$sweep%zu << EOD\n", seq);
  for (size_t i = 0; i < n; i++)
    fprintf(out, "%.9g %.9g %.9g %.9g\n", logx && pts[i].x == 0 ? zero_at : pts[i].x, pts[i].med,
            pts[i].lo, pts[i].hi);
  fprintf(out, "EOD\n");
  /* The JCTs apart: a case may have a degradation without a faulted median. */
  size_t njct = 0;
  fprintf(out, "$sweepjct%zu << EOD\n", seq);
  for (size_t i = 0; i < n; i++)
    if (isfinite(pts[i].fmed_ms) && ++njct)
      fprintf(out, "%.9g %.9g\n", logx && pts[i].x == 0 ? zero_at : pts[i].x, pts[i].fmed_ms);
  fprintf(out, "EOD\n");
  fprintf(out, "set title ");
  gp_str(out, pl->title);
  fprintf(out, " noenhanced\nset xlabel ");
  gp_str(out, pl->sweep_key);
  fprintf(out, " noenhanced\n"
               "set ylabel 'degradation (faulted / baseline)'\n"
               "set grid\nset key top left noenhanced\n");
  if (njct) fprintf(out, "set y2label 'faulted median JCT (ms)'\nset ytics nomirror\nset y2tics\n");
  if (logx) {
    fprintf(out, "set logscale x\nset xrange [%.9g:%.9g]\nset xtics (",
            (pts[0].x == 0 ? zero_at : minpos) / 2, maxv * 2);
    if (pts[0].x == 0) fprintf(out, "'0' %.9g, ", zero_at);
    for (double e = first_decade; e <= last_decade; e++)
      fprintf(out, "'%g' %.9g%s", pow(10, e), pow(10, e), e < last_decade ? ", " : ")\n");
    fprintf(out, "set mxtics 10\n");
  } else {
    double pad = maxv > minv ? (maxv - minv) * 0.05 : (fabs(maxv) > 0 ? fabs(maxv) * 0.1 : 1);
    fprintf(out, "set xrange [%.9g:%.9g]\n", minv - pad, maxv + pad);
  }
  fprintf(out,
          "plot $sweep%zu using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#1f77b4' "
          "title 'degradation, 95%% interval'",
          seq);
  if (njct)
    fprintf(out,
            ", $sweepjct%zu using 1:2 axes x1y2 with linespoints dt 2 pt 6 lc rgb '#ff7f0e' "
            "title 'faulted median JCT (right axis)'",
            seq);
  fprintf(out, ", 1 with lines dt 3 lc rgb 'gray40' title 'no degradation'");
  if (!isnan(budget))
    fprintf(out, ", %.9g with lines lw 1.5 lc rgb '#d62728' title 'budget'", budget);
  fprintf(out, "\n");
  free(pts);
}

static void script_bars(FILE *out, const json_t *cases, const jct__plot_t *pl) {
  size_t i, n = 0;
  const json_t *c;
  begin_plot(out, pl, 400);
  fprintf(out, "$bars << EOD\n");
  json_array_foreach(cases, i, c) {
    double m, lo, hi;
    if (jct__rget(c, "sweep.key") || !jct__rnum(c, "degradation.median", &m)) continue;
    if (!jct__rnum(c, "degradation.ci95_low", &lo)) lo = m;
    if (!jct__rnum(c, "degradation.ci95_high", &hi)) hi = m;
    fprintf(out, "%zu ", n++);
    gp_data_str(out, jct__rstr(c, "name"));
    fprintf(out, " %.9g %.9g %.9g\n", m, lo, hi);
  }
  fprintf(out, "EOD\nset title ");
  gp_str(out, pl->title);
  fprintf(out,
          " noenhanced\n"
          "set ylabel 'degradation (faulted / baseline)'\n"
          "set style fill solid 0.6 border -1\nset boxwidth 0.6\nset grid ytics\n"
          "set key top left\nset xtics noenhanced%s\n"
          "set xrange [-0.6:%.1f]\nset yrange [0:*]\n",
          n > 6 ? " rotate by -30" : "", (double)n - 0.4);
  fprintf(out, "plot $bars using 1:3:xtic(2) with boxes lc rgb '#1f77b4' title 'median', "
               "$bars using 1:3:4:5 with yerrorbars lc rgb 'black' pt 0 lw 1.5 "
               "title '95%% interval', 1 with lines dt 3 lc rgb 'gray40' title 'no degradation'\n");
}

/* One timeline panel's datablock; returns the largest done time (ms) and rank. */
static size_t timeline_block(FILE *out, const char *name, const json_t *ops, double *xmax,
                             double *rmax) {
  size_t i, rows = 0;
  const json_t *op;
  fprintf(out, "%s << EOD\n", name);
  json_array_foreach(ops, i, op) {
    double s, d, r, st;
    if (!jct__rnum(op, "start_ns", &s) || !jct__rnum(op, "done_ns", &d) ||
        !jct__rnum(op, "rank", &r))
      continue;
    if (!jct__rnum(op, "step", &st)) st = 0;
    fprintf(out, "%.9g %.9g %.0f %.0f\n", s / 1e6, d / 1e6, r, st);
    rows++;
    if (d / 1e6 > *xmax) *xmax = d / 1e6;
    if (r > *rmax) *rmax = r;
  }
  fprintf(out, "EOD\n");
  return rows;
}

static void script_timeline(FILE *out, const json_t *c, const jct__plot_t *pl) {
  static const char *const sides[2] = {"baseline", "faulted"};
  double xmax = 0, rmax = 0;
  int panels = 0;
  size_t rows[2];
  begin_plot(out, pl, 560);
  for (int k = 0; k < 2; k++) {
    char path[64], block[64];
    snprintf(path, sizeof path, "timeline.%s.ops", sides[k]);
    snprintf(block, sizeof block, "$tl_%s_%ld", sides[k], pl->case_index);
    rows[k] = timeline_block(out, block, jct__rget(c, path), &xmax, &rmax);
    panels += rows[k] > 0;
  }
  fprintf(out, "$tl_path_%ld << EOD\n", pl->case_index);
  size_t i;
  const json_t *op;
  size_t npath = 0;
  json_array_foreach(jct__rget(c, "critical_path"), i, op) {
    double s, d, r;
    if (jct__rnum(op, "start_ns", &s) && jct__rnum(op, "done_ns", &d) &&
        jct__rnum(op, "rank", &r) && ++npath)
      fprintf(out, "%.9g %.9g %.0f\n", s / 1e6, d / 1e6, r);
  }
  fprintf(out, "EOD\n");
  if (!panels) {
    /* Operations without timings: an empty frame saying so, not a gnuplot error. */
    fprintf(out, "set title ");
    gp_str(out, pl->title);
    fprintf(out, " noenhanced\nset label 'no operation has start and done times' at graph 0.5,0.5 "
                 "center\nplot [0:1][0:1] -1 notitle\n");
    return;
  }
  fprintf(out, "set multiplot layout %d,1 title ", panels);
  gp_str(out, pl->title);
  fprintf(out,
          " noenhanced\n"
          "set xrange [0:%.9g]\nset yrange [-0.6:%.1f]\n%s"
          "set ylabel 'rank'\nset xlabel 'time since the repetition started (ms)'\n"
          "set grid xtics\nset key outside right top noenhanced\n"
          "set style fill transparent solid 0.65 noborder\n",
          xmax > 0 ? xmax * 1.02 : 1, rmax + 0.6, rmax < 16 ? "set ytics 1\n" : "");
  for (int k = 0; k < 2; k++) {
    char path[64], rep[32], jct[32];
    if (!rows[k]) continue;
    snprintf(path, sizeof path, "timeline.%s.rep", sides[k]);
    jct__rfmt_count(c, path, rep, sizeof rep);
    snprintf(path, sizeof path, "timeline.%s.jct_ns", sides[k]);
    jct__rfmt_ns(c, path, jct, sizeof jct);
    char title[128];
    snprintf(title, sizeof title, "%s: repetition %s, JCT %s", sides[k], rep, jct);
    fprintf(out, "set title ");
    gp_str(out, title);
    fprintf(out, " noenhanced\n");
    fprintf(out,
            "plot $tl_%s_%ld using 1:3:1:2:($3-0.35):($3+0.35):(int($4)%%8+1) "
            "with boxxyerror lc variable title 'operation (colour: step)'",
            sides[k], pl->case_index);
    if (k == 1 && npath)
      fprintf(out,
              ", $tl_path_%ld using 1:3:1:2:($3-0.42):($3+0.42) with boxxyerror "
              "fs empty lc rgb 'black' lw 1.5 title 'critical path'",
              pl->case_index);
    fprintf(out, "\n");
  }
  fprintf(out, "unset multiplot\n");
}

static void script_retx(FILE *out, const json_t *c, const jct__plot_t *pl) {
  double bin_ns;
  if (!jct__rnum(c, "retransmissions.bin_ns", &bin_ns) || bin_ns <= 0) bin_ns = 1e6;
  double bin_ms = bin_ns / 1e6, ymax = 1, xmax = 0;
  size_t nbins[2] = {0, 0};
  static const char *const sides[2] = {"faulted", "baseline"};
  begin_plot(out, pl, 400);
  for (int k = 0; k < 2; k++) {
    char path[64];
    snprintf(path, sizeof path, "retransmissions.%s", sides[k]);
    fprintf(out, "$rx_%s_%ld << EOD\n", sides[k], pl->case_index);
    size_t i;
    const json_t *v;
    json_array_foreach(jct__rget(c, path), i, v) {
      double y = json_is_number(v) ? json_number_value(v) : 0;
      nbins[k]++;
      fprintf(out, "%.9g %.9g\n", ((double)i + 0.5) * bin_ms, y);
      if (y > ymax) ymax = y;
      if (((double)i + 1) * bin_ms > xmax) xmax = ((double)i + 1) * bin_ms;
    }
    fprintf(out, "EOD\n");
  }
  char bin[32];
  jct__rfmt_ns(c, "retransmissions.bin_ns", bin, sizeof bin);
  fprintf(out, "set title ");
  gp_str(out, pl->title);
  fprintf(out, " noenhanced\nset xlabel 'time since the repetition started (ms)'\n"
               "set ylabel ");
  char yl[64];
  snprintf(yl, sizeof yl, "retransmitted packets per %s", bin);
  gp_str(out, yl);
  fprintf(out,
          " noenhanced\n"
          "set style fill solid 0.6 noborder\nset boxwidth %.9g absolute\nset grid\n"
          "set key top right\nset xrange [0:%.9g]\nset yrange [0:%.9g]\n",
          bin_ms, xmax > 0 ? xmax : 1, ymax * 1.1);
  fprintf(out, "plot $rx_faulted_%ld using 1:2 with boxes lc rgb '#d62728' title 'faulted'",
          pl->case_index);
  if (nbins[1])
    fprintf(out, ", $rx_baseline_%ld using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'baseline'",
            pl->case_index);
  fprintf(out, "\n");
}

int jct__plots_script(const json_t *result, const jct__plots_t *p, FILE *out) {
  const json_t *cases = jct__rget(result, "cases");
  fprintf(out, "# jctlab report plots, drawn by gnuplot (harness/report_plot.c)\n");
  for (size_t i = 0; i < p->n; i++) {
    const jct__plot_t *pl = &p->v[i];
    const json_t *c = pl->case_index >= 0 ? json_array_get(cases, (size_t)pl->case_index) : NULL;
    switch (pl->kind) {
    case JCT__PLOT_SWEEP:
      script_sweep(out, cases, pl, i);
      break;
    case JCT__PLOT_BARS:
      script_bars(out, cases, pl);
      break;
    case JCT__PLOT_TIMELINE:
      script_timeline(out, c, pl);
      break;
    case JCT__PLOT_RETX:
      script_retx(out, c, pl);
      break;
    }
    fprintf(out, "unset output\n");
  }
  return fflush(out) || ferror(out) ? JCT_EIO : 0;
}
