/* The reports a person reads (harness/report/report.h), from a result document
 * built here: four valid cases (three of a sweep of p over 0, 0.001 and
 * 0.1, one outside it) and one invalid case with no figures at all.
 *   - --report DIR writes report.md, report.html and one SVG per plot:
 *     degradation against p (log axis, its 0 labelled), a bar for the case
 *     outside the sweep, a timeline and a retransmission plot per valid
 *     case, none for the invalid one; each SVG is whole and holds its
 *     series; nothing else is left in DIR or in TMPDIR.
 *   - The Markdown's table has every case with its figures, escaped; the
 *     HTML holds every plot inline with ids unique in the page, and the
 *     document's text escaped.
 *   - Headless Chromium renders the HTML: every plot is an <svg> of
 *     non-zero size in the page, and the screenshot's pixels inside each
 *     are not blank while the margin beside them is (skipped, saying why,
 *     when chromium is not installed; scripts/test installs it).
 *   - The terminal table names every case with its degradation and verdict.
 *   - The per-QP table: on the terminal up to 16 QPs or with --per-qp, and
 *     in report.md.
 *   - Errors: gnuplot missing, not a result document, DIR a file. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jctlab/error.h"
#include "harness/report/report.h"
#include "harness/report/result.h"
#include "suites.h"
#include "testkit.h"

#define RANKS 4
#define STEPS 6
#define STEP_NS 2000000 /* 2 ms per step in the baseline */

/* ---- the document ---- */

static json_t *side(uint64_t median_ns, double algbw_gbps) {
  return json_pack("{s:[I,I,I],s:I,s:I,s:I,s:I,s:f,s:f}", "jct_ns", (json_int_t)median_ns - 1000,
                   (json_int_t)median_ns, (json_int_t)median_ns + 3000, "median_jct_ns",
                   (json_int_t)median_ns, "p99_jct_ns", (json_int_t)median_ns + 3000, "min_jct_ns",
                   (json_int_t)median_ns - 1000, "max_jct_ns", (json_int_t)median_ns + 3000,
                   "algbw_gbps", algbw_gbps, "busbw_gbps", algbw_gbps * 1.5);
}

/* Every rank sends once per step; in the faulted rep rank 2's send of
 * step 3 takes `extra_ns` longer and every later step waits for it. */
static json_t *timeline(uint64_t extra_ns, uint32_t rep) {
  json_t *ops = json_array();
  uint64_t jct = 0;
  for (int s = 0; s < STEPS; s++)
    for (int r = 0; r < RANKS; r++) {
      uint64_t start = (uint64_t)s * STEP_NS + (s > 3 ? extra_ns : 0);
      uint64_t done = start + STEP_NS * 9 / 10 + (s == 3 && r == 2 ? extra_ns : 0);
      if (done > jct) jct = done;
      json_array_append_new(ops, json_pack("{s:i,s:i,s:i,s:i,s:I,s:I}", "op", s * RANKS + r, "rank",
                                           r, "dst", (r + 1) % RANKS, "step", s, "start_ns",
                                           (json_int_t)start, "done_ns", (json_int_t)done));
    }
  return json_pack("{s:i,s:I,s:o}", "rep", rep, "jct_ns", (json_int_t)jct, "ops", ops);
}

static json_t *critical_path(uint64_t extra_ns) {
  json_t *a = json_array();
  for (int s = 0; s < STEPS; s++) {
    int r = s == 3 ? 2 : 0;
    uint64_t start = (uint64_t)s * STEP_NS + (s > 3 ? extra_ns : 0);
    uint64_t done = start + STEP_NS * 9 / 10 + (s == 3 ? extra_ns : 0);
    json_array_append_new(a, json_pack("{s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I}", "rank", r, "op",
                                       s * RANKS + r, "step", s, "conn", r, "dst", (r + 1) % RANKS,
                                       "bytes", (json_int_t)65536, "start_ns", (json_int_t)start,
                                       "done_ns", (json_int_t)done, "late_ns",
                                       (json_int_t)(s >= 3 ? extra_ns : 0)));
  }
  return a;
}

static json_t *bins(int n, int peak) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_integer(i == n / 2 ? peak : i % 3 == 0 ? peak / 4 : 0));
  return a;
}

/* A valid case: degradation deg (interval ±0.05) over a 12 ms baseline. */
static json_t *valid_case(const char *name, const char *inject, double p, bool sweep, double deg,
                          const char *verdict) {
  uint64_t base = 12000000, faulted = (uint64_t)(12e6 * deg);
  uint64_t extra = faulted - base;
  int retx = (int)(p * 10000) + 3;
  json_t *c = json_pack(
      "{s:s,s:[s],s:o,s:{s:f},s:s,s:o,s:o,s:{s:f,s:f,s:f},s:n,"
      "s:{s:i,s:i,s:i,s:i,s:i},s:I,"
      "s:{s:[{s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i}],s:{s:i,s:i,s:i}},"
      "s:o,s:{s:o,s:o},s:{s:I,s:o,s:o},s:{s:i,s:i,s:i}}",
      "name", name, "inject", inject, "sweep",
      sweep ? json_pack("{s:s,s:f}", "key", "p", "value", p) : json_null(), "budget",
      "max_degradation", 1.5, "verdict", verdict, "baseline", side(base, 0.02), "faulted",
      side(faulted, 0.02 / deg), "degradation", "median", deg, "ci95_low", deg - 0.05, "ci95_high",
      deg + 0.05, "projected", "transport", "retransmitted_packets", retx, "retransmitted_bytes",
      retx * 4096, "naks", retx / 2, "timeouts", 1, "cnps", 0, "paused_ns", (json_int_t)250000,
      "drops", "injectors", "spec", inject, "kind", "drop", "seed", 7, "seen", 5000, "matched",
      5000, "dropped", retx, "held", 0, "modified", 0, "duplicated", 0, "fabric", "buffer_full", 0,
      "pfc_watchdog", 0, "link_down", 0, "critical_path", critical_path(extra), "timeline",
      "baseline", timeline(0, 0), "faulted", timeline(extra, 1), "retransmissions", "bin_ns",
      (json_int_t)1000000, "baseline", bins(13, 0), "faulted", bins(14, retx), "lateness", "p50_ns",
      2000, "p99_ns", 9000, "max_ns", 40000);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* An invalid case: what result.c writes when the replay was invalid. */
static json_t *invalid_case(void) {
  json_t *c = json_pack(
      "{s:s,s:[s],s:n,s:n,s:s,s:s,s:{s:[n,n,n]},s:{s:[n,n,n]},"
      "s:{s:i,s:i,s:i,s:i,s:i},s:i,s:{s:[],s:{s:i,s:i,s:i}},s:{s:i,s:i,s:i}}",
      "name", "link <flap>", "inject", "flap period=5ms", "sweep", "budget", "verdict", "invalid",
      "invalid_why", "rep 2 did not finish", "baseline", "jct_ns", "faulted", "jct_ns", "transport",
      "retransmitted_packets", 0, "retransmitted_bytes", 0, "naks", 0, "timeouts", 0, "cnps", 0,
      "paused_ns", 0, "drops", "injectors", "fabric", "buffer_full", 0, "pfc_watchdog", 0,
      "link_down", 12, "lateness", "p50_ns", 1000, "p99_ns", 2000, "max_ns", 3000);
  ck_assert_ptr_nonnull(c);
  return c;
}

static json_t *result_doc(void) {
  json_t *doc =
      json_pack("{s:i,s:s,s:s,s:{s:s,s:s,s:s,s:s,s:i,s:i,s:i},s:{s:s,s:I,s:i,s:b,s:b,s:s},"
                "s:{s:f,s:i,s:i},s:i,s:i,s:[]}",
                "jctlab_result", 1, "command", "replay", "jctlab_version", "0.1.0", "input",
                "source", "traces/ring4.pcap", "kind", "trace", "algorithm", "ring", "pattern",
                "ring", "ranks", RANKS, "ops", RANKS * STEPS, "bytes", 262144, "fabric",
                "transport", "uroce", "rate_bps", (json_int_t)100000000, "prop_delay_ns", 1000,
                "pfc", 1, "ecn", 0, "pfc_watchdog", "off", "scale", "factor", 1.0,
                "captured_rate_bps", 0, "projected_rate_bps", 0, "seed", 1, "reps", 3, "cases");
  ck_assert_ptr_nonnull(doc);
  json_t *cases = json_object_get(doc, "cases");
  json_array_append_new(cases, valid_case("loss p=0", "drop p=0", 0, true, 1.0, "pass"));
  json_array_append_new(cases,
                        valid_case("loss p=0.001", "drop p=0.001", 0.001, true, 1.1, "pass"));
  json_array_append_new(cases, valid_case("loss p=0.1", "drop p=0.1", 0.1, true, 2.25, "fail"));
  json_array_append_new(cases,
                        valid_case("burst|2 drop_x", "drop burst=2", 0.01, false, 1.3, "pass"));
  json_array_append_new(cases, invalid_case());
  return doc;
}

/* ---- helpers ---- */

static const char *const SVGS[] = {
    "jct-vs-p-1.svg", "degradation.svg", "timeline-1.svg", "retx-1.svg",     "timeline-2.svg",
    "retx-2.svg",     "timeline-3.svg",  "retx-3.svg",     "timeline-4.svg", "retx-4.svg"};
#define NSVGS (sizeof SVGS / sizeof SVGS[0])

static void make_report_dir(char *dir, size_t len) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, len, "%s/report-XXXXXX", t && *t ? t : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static char *read_in(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return slurp(path, NULL);
}

static size_t count(const char *s, const char *what) {
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
    n++;
  return n;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[768];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (!lstat(path, &st) && S_ISDIR(st.st_mode))
      remove_dir(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static size_t dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* A report of the test document in a fresh directory. */
static void write_report(char *dir, size_t len) {
  make_report_dir(dir, len);
  json_t *doc = result_doc();
  char err[512] = "";
  int rc = jct__report_write(doc, dir, err, sizeof err);
  json_decref(doc);
  ck_assert_msg(rc == 0, "jct__report_write: %d: %s", rc, err);
}

/* ---- files and SVGs ---- */

START_TEST(files_and_svgs) {
  const char *t = getenv("TMPDIR");
  size_t tmp_before = dir_entries(t && *t ? t : "/tmp");
  char dir[512];
  write_report(dir, sizeof dir);
  /* Exactly the reports and the plots: no script, no data file. */
  ck_assert_uint_eq(dir_entries(dir), NSVGS + 2);
  for (size_t i = 0; i < NSVGS; i++) {
    char *svg = read_in(dir, SVGS[i]);
    const char *open_tag = strstr(svg, "<svg"), *close_tag = strstr(svg, "</svg>");
    ck_assert_msg(open_tag && close_tag && open_tag < close_tag, "%s: not an SVG", SVGS[i]);
    ck_assert_msg(strspn(close_tag + 6, " \r\n") == strlen(close_tag + 6), "%s: trailing", SVGS[i]);
    ck_assert_msg(strstr(svg, "viewBox=\"0 0 800 "), "%s: not gnuplot's svg terminal", SVGS[i]);
    ck_assert_msg(count(svg, "<path") >= 10, "%s: %zu paths", SVGS[i], count(svg, "<path"));
    ck_assert_msg(strstr(svg, "id=\"gnuplot_plot_1"), "%s: no plotted series", SVGS[i]);
    free(svg);
  }
  /* The sweep: three points with their intervals, the faulted JCT, the
   * 1.0 line and the budget; x logarithmic with the 0 labelled. */
  char *svg = read_in(dir, "jct-vs-p-1.svg");
  ck_assert_ptr_nonnull(strstr(svg, "id=\"gnuplot_plot_4\""));
  ck_assert_ptr_nonnull(strstr(svg, "degradation, 95% interval"));
  ck_assert_ptr_nonnull(strstr(svg, ">0</tspan></text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">0.001</tspan></text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">0.1</tspan></text>"));
  free(svg);
  /* The bar chart: the case outside the sweep, its name kept as written. */
  svg = read_in(dir, "degradation.svg");
  ck_assert_ptr_nonnull(strstr(svg, "burst|2 drop_x"));
  free(svg);
  /* A timeline: two panels, baseline and faulted, the critical path outlined. */
  svg = read_in(dir, "timeline-3.svg");
  ck_assert_ptr_nonnull(strstr(svg, "id=\"gnuplot_plot_1a\""));
  ck_assert_ptr_nonnull(strstr(svg, "id=\"gnuplot_plot_1b\""));
  ck_assert_ptr_nonnull(strstr(svg, "id=\"gnuplot_plot_2b\""));
  ck_assert_ptr_nonnull(strstr(svg, "critical path"));
  ck_assert_ptr_nonnull(strstr(svg, "faulted: repetition 1"));
  ck_assert_uint_ge(count(svg, "<path"), 2 * RANKS * STEPS);
  free(svg);
  /* No plot for the invalid case. */
  char path[600];
  snprintf(path, sizeof path, "%s/timeline-5.svg", dir);
  ck_assert_int_ne(access(path, F_OK), 0);
  remove_dir(dir);
  ck_assert_uint_eq(dir_entries(t && *t ? t : "/tmp"), tmp_before);
}
END_TEST

START_TEST(markdown) {
  char dir[512];
  write_report(dir, sizeof dir);
  char *md = read_in(dir, "report.md");
  ck_assert_ptr_nonnull(strstr(md, "# jctlab report\n"));
  /* The summary: a row per case with its figures; the invalid one with none. */
  static const char *const rows[] = {
      "| loss p=0 | drop p=0 | pass | degradation \\<= 1.5 | 12.0 ms | 12.0 ms | "
      "1.000 \\[0.950, 1.050\\] | 3 | 1 | 1 | 250 µs |\n",
      "| loss p=0.001 | drop p=0.001 | pass | degradation \\<= 1.5 | 12.0 ms | 13.2 ms | "
      "1.100 \\[1.050, 1.150\\] | 13 | 6 | 1 | 250 µs |\n",
      "| loss p=0.1 | drop p=0.1 | FAIL | degradation \\<= 1.5 | 12.0 ms | 27.0 ms | "
      "2.250 \\[2.200, 2.300\\] | 1003 | 501 | 1 | 250 µs |\n",
      "| burst\\|2 drop\\_x | drop burst=2 | pass | degradation \\<= 1.5 | 12.0 ms | 15.6 ms | "
      "1.300 \\[1.250, 1.350\\] | 103 | 51 | 1 | 250 µs |\n",
      "| link \\<flap\\> | flap period=5ms | INVALID | none | n/a | n/a | n/a | 0 | 0 | 0 | 0 ns "
      "|\n",
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    ck_assert_msg(strstr(md, rows[i]), "no row %s", rows[i]);
  ck_assert_ptr_null(strstr(md, "| burst|2"));
  ck_assert_ptr_nonnull(strstr(md, "## Case 3: loss p=0.1\n"));
  ck_assert_ptr_nonnull(strstr(md, "| JCT median | 12.0 ms | 27.0 ms |\n"));
  ck_assert_ptr_nonnull(strstr(md, "| retransmitted | 1003 packets (3.92 MiB) |\n"));
  ck_assert_ptr_nonnull(strstr(md, "| fabric drops: link\\_down | 12 |\n"));
  ck_assert_ptr_nonnull(strstr(md, "| drop p=0.1 | drop | 7 | 5000 | 5000 | 1003 | 0 | 0 | 0 |\n"));
  ck_assert_ptr_nonnull(
      strstr(md, "| 14 | 3 | 2 | 3 | 64.0 KiB | 6.00 ms | 22.8 ms | 15.0 ms |\n"));
  ck_assert_ptr_nonnull(strstr(md, "Invalid run, not a result: rep 2 did not finish"));
  ck_assert_ptr_nonnull(strstr(md, "Left out, no degradation (invalid run): 'link \\<flap\\>'"));
  for (size_t i = 0; i < NSVGS; i++) {
    char ref[64];
    snprintf(ref, sizeof ref, "](%s)\n", SVGS[i]);
    ck_assert_msg(count(md, ref) == 1, "%s referenced %zu times", SVGS[i], count(md, ref));
  }
  free(md);
  remove_dir(dir);
}
END_TEST

/* Every id="..." or id='...' in the page, and whether one repeats. */
static size_t ids_of(const char *html, char ids[][64], size_t max, bool *dup) {
  size_t n = 0;
  *dup = false;
  for (const char *p = html; (p = strstr(p, " id=")) != NULL && n < max;) {
    p += 4;
    char q = *p;
    if (q != '"' && q != '\'') continue;
    const char *e = strchr(p + 1, q);
    ck_assert_ptr_nonnull(e);
    snprintf(ids[n], 64, "%.*s", (int)(e - p - 1), p + 1);
    for (size_t i = 0; i < n; i++)
      if (!strcmp(ids[i], ids[n])) *dup = true;
    n++;
    p = e;
  }
  return n;
}

START_TEST(html) {
  char dir[512];
  write_report(dir, sizeof dir);
  char *h = read_in(dir, "report.html");
  ck_assert_int_eq(strncmp(h, "<!DOCTYPE html>\n", 16), 0);
  ck_assert_ptr_nonnull(strstr(h, "</body>\n</html>\n"));
  /* Self-contained: every plot inline, no XML declaration, no script. */
  ck_assert_uint_eq(count(h, "<svg"), NSVGS);
  ck_assert_uint_eq(count(h, "</svg>"), NSVGS);
  ck_assert_uint_eq(count(h, "<figure"), NSVGS);
  ck_assert_ptr_null(strstr(h, "<?xml"));
  ck_assert_ptr_null(strstr(h, "<script"));
  for (size_t i = 0; i < NSVGS; i++) {
    char link[64];
    snprintf(link, sizeof link, "<a href=\"%s\">", SVGS[i]);
    ck_assert_msg(strstr(h, link), "no link to %s", SVGS[i]);
  }
  /* Ids unique in the page, and every reference to one resolves. */
  static char ids[4096][64];
  bool dup;
  size_t n = ids_of(h, ids, 4096, &dup);
  ck_assert_uint_gt(n, NSVGS * 10);
  ck_assert_msg(!dup, "an id repeats in the page");
  ck_assert_ptr_nonnull(strstr(h, " id=\"p0-gnuplot_canvas\""));
  ck_assert_ptr_nonnull(strstr(h, " id=\"p9-gnuplot_canvas\""));
  size_t refs = 0;
  for (const char *p = h; (p = strstr(p, "href='#")) != NULL; p += 7, refs++) {
    size_t len = strcspn(p + 7, "'");
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
      found = strlen(ids[i]) == len && !strncmp(ids[i], p + 7, len);
    ck_assert_msg(found, "dangling reference %.40s", p);
  }
  ck_assert_uint_gt(refs, 0);
  /* The document's text escaped. */
  ck_assert_ptr_nonnull(strstr(h, "link &lt;flap&gt;"));
  ck_assert_ptr_null(strstr(h, "link <flap>"));
  ck_assert_ptr_nonnull(strstr(h, "<td>burst|2 drop_x</td>"));
  ck_assert_ptr_nonnull(strstr(h, "<td class=\"w\">INVALID</td>"));
  ck_assert_ptr_nonnull(strstr(h, "<td>2.250 [2.200, 2.300]</td>"));
  free(h);
  remove_dir(dir);
}
END_TEST

START_TEST(text_table) {
  json_t *doc = result_doc();
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  jct__report_text(f, doc, false);
  ck_assert_int_eq(fclose(f), 0);
  json_decref(doc);
  static const char *const want[] = {
      "jctlab replay: traces/ring4.pcap (trace): ring (pattern ring), 4 ranks, 24 ops, 256 KiB\n",
      "case 1: loss p=0\n",
      "case 3: loss p=0.1\n",
      "case 4: burst|2 drop_x\n",
      "case 5: link <flap>\n",
      "  JCT median                12.0 ms          27.0 ms\n",
      "  degradation      2.250 [2.200, 2.300] (faulted / baseline median [95% interval])\n",
      "  degradation      1.100 [1.050, 1.150]",
      "  retransmitted    1003 packets (3.92 MiB), 501 NAKs, 1 timeouts, 0 CNPs\n",
      "  drops            #1 'drop p=0.1' (drop, seed 7): 5000 seen, 5000 matched, 1003 dropped",
      "fabric: buffer_full 0, pfc_watchdog 0, link_down 12\n",
      "  critical path    6 ops, ending with op 20 (rank 0 -> 1, step 5), 15.0 ms late\n",
      "  verdict          FAIL (budget: degradation <= 1.5)\n",
      "  verdict          pass (budget: degradation <= 1.5)\n",
      "  verdict          INVALID (budget: none)\n",
      "  invalid run      rep 2 did not finish\n",
      "  JCT median                    n/a              n/a\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(buf, want[i])) {
      fprintf(stderr, "%s", buf);
      ck_abort_msg("no '%s' (the table is on stderr)", want[i]);
    }
  ck_assert_uint_eq(count(buf, "\ncase "), 5);
  free(buf);
}
END_TEST

/* Documents with most members missing, null or of the wrong type: every
 * report still written, "n/a" where a figure is missing. */
START_TEST(sparse_documents) {
  json_t *doc = json_pack("{s:i,s:[{s:s,s:{s:s,s:f}},{s:s,s:{s:f}},{},{s:n,s:s,s:{s:[i,s]}},"
                          "{s:s,s:{s:{s:[{s:s}]}},s:{s:n,s:[]}}]}",
                          "jctlab_result", 1, "cases", "name", "a", "sweep", "key", "p", "value",
                          0.5, "name", "b", "degradation", "median", 1.2, "name", "verdict",
                          "strange", "retransmissions", "faulted", 3, "x", "name", "c", "timeline",
                          "faulted", "ops", "rank", "x", "critical_path", "x", "ops");
  ck_assert_ptr_nonnull(doc);
  char dir[512];
  make_report_dir(dir, sizeof dir);
  char err[512] = "";
  int rc = jct__report_write(doc, dir, err, sizeof err);
  ck_assert_msg(rc == 0, "%d: %s", rc, err);
  char *md = read_in(dir, "report.md");
  ck_assert_ptr_nonnull(strstr(md, "| a | none | none | none | n/a | n/a | n/a |"));
  ck_assert_ptr_nonnull(strstr(md, "| b | none | none | none | n/a | n/a | 1.200 |"));
  free(md);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  jct__report_text(f, doc, false);
  fclose(f);
  ck_assert_uint_eq(count(buf, "\ncase "), 5);
  free(buf);
  remove_dir(dir);
  json_decref(doc);
  /* An interval that is null (too few repetitions) says so; an absent one
   * leaves the median alone (case b above). */
  doc = json_pack("{s:i,s:[{s:s,s:{s:f,s:n,s:n}}]}", "jctlab_result", 1, "cases", "name", "d",
                  "degradation", "median", 1.3, "ci95_low", "ci95_high");
  f = open_memstream(&buf, &len);
  jct__report_text(f, doc, false);
  fclose(f);
  ck_assert_msg(strstr(buf, "1.300 [no interval under 5 repetitions]"), "%s", buf);
  free(buf);
  json_decref(doc);
  /* No case at all: the reports, no plot. */
  doc = json_pack("{s:i,s:[]}", "jctlab_result", 1, "cases");
  make_report_dir(dir, sizeof dir);
  ck_assert_int_eq(jct__report_write(doc, dir, err, sizeof err), 0);
  ck_assert_uint_eq(dir_entries(dir), 2);
  remove_dir(dir);
  json_decref(doc);
}
END_TEST

/* Two sweeps: one plot each; values within two decades: a linear axis. */
/* A document of one case whose "qps" (result.h's jct__qps_json) has n
 * connections of a ring over n ranks; QP 1 retransmitted 4 packets when
 * faulted; retx_counted false: no per-QP retransmission count. */
static json_t *qps_doc(uint32_t n, bool retx_counted) {
  jct_conn_t *conns = calloc(n, sizeof *conns);
  jct_qp_figures_t *b = calloc(n, sizeof *b), *f = calloc(n, sizeof *f);
  ck_assert(conns && b && f);
  for (uint32_t i = 0; i < n; i++) {
    conns[i] = (jct_conn_t){i, (i + 1) % n, 0};
    jct_qp_figures_t q = {.bytes = 65536,
                          .messages = 2,
                          .reps = 3,
                          .completion_reps = 3,
                          .bw_bps = 4e7,
                          .completion_p50_ns = 1000000 + i,
                          .completion_p99_ns = 2000000 + i,
                          .completion_max_ns = 3000000,
                          .retx_counted = retx_counted};
    b[i] = q;
    q.retx_packets = i == 1 ? 4 : 0;
    q.completion_p99_ns = 5000000 + i * 1000;
    f[i] = q;
  }
  jct_schedule_t s = {.nranks = n, .conns = conns, .nconns = n};
  json_t *qps = jct__qps_json(&s, b, f);
  free(conns), free(b), free(f);
  ck_assert_ptr_nonnull(qps);
  return json_pack("{s:i,s:s,s:[{s:s,s:o}]}", "jctlab_result", 1, "command", "replay", "cases",
                   "name", "qp", "qps", qps);
}

static char *text_of(const json_t *doc, bool all_qps) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  jct__report_text(f, doc, all_qps);
  ck_assert_int_eq(fclose(f), 0);
  return buf;
}

/* The per-QP table: on the terminal up to 16 QPs (all with --per-qp), a
 * baseline and a faulted row each; in report.md too; "n/a" and why where
 * the transport does not count retransmissions per QP. */
START_TEST(per_qp_tables) {
  json_t *doc = qps_doc(2, true);
  ck_assert_int_eq(jint(doc, "cases.0.qps.1.faulted.retransmitted_packets"), 4);
  ck_assert_int_eq(jint(doc, "cases.0.qps.1.bytes"), 65536);
  char *t = text_of(doc, false);
  static const char *const want[] = {
      "      0 0 -> 1        64.0 KiB     2 baseline     40 Mbit/s    1.00 ms    2.00 ms"
      "    3.00 ms       0\n",
      "                                     faulted      40 Mbit/s    1.00 ms    5.00 ms"
      "    3.00 ms       0\n",
      "      1 1 -> 0        64.0 KiB     2 baseline",
      "    3.00 ms       4\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(t, want[i]), "no '%s' in:\n%s", want[i], t);
  ck_assert_ptr_null(strstr(t, "per device"));
  free(t);
  char dir[512], err[512] = "";
  make_report_dir(dir, sizeof dir);
  ck_assert_int_eq(jct__report_write(doc, dir, err, sizeof err), 0);
  char *md = read_in(dir, "report.md");
  ck_assert_msg(strstr(md, "| 1 | 1 -\\> 0 | 64.0 KiB | 2 | baseline | 40 Mbit/s | 1.00 ms | "
                           "2.00 ms | 3.00 ms | 0 |\n|  |  |  |  | faulted | 40 Mbit/s | 1.00 ms | "
                           "5.00 ms | 3.00 ms | 4 |\n"),
                "%s", md);
  free(md);
  remove_dir(dir);
  json_decref(doc);

  /* 17 QPs: a line saying how to see them, unless asked. */
  doc = qps_doc(17, false);
  t = text_of(doc, false);
  ck_assert_msg(strstr(t, "17 connections, not shown (--per-qp shows them"), "%s", t);
  ck_assert_uint_eq(count(t, "  faulted "), 0);
  free(t);
  t = text_of(doc, true);
  ck_assert_uint_eq(count(t, "  faulted "), 17);
  ck_assert_ptr_nonnull(strstr(t, "retx n/a: the transport counts retransmissions per device"));
  free(t);
  json_decref(doc);
}
END_TEST

START_TEST(linear_sweeps) {
  json_t *doc = result_doc(), *cases = json_object_get(doc, "cases");
  json_array_clear(cases);
  static const double rates[] = {10, 20, 40};
  for (int i = 0; i < 3; i++) {
    json_t *c = valid_case("rate", "delay", 0, true, 1 + rates[i] / 100, "none");
    json_object_set_new(c, "sweep", json_pack("{s:s,s:f}", "key", "delay_us", "value", rates[i]));
    json_array_append_new(cases, c);
  }
  json_array_append_new(cases, valid_case("p", "drop", 0.5, true, 1.5, "none"));
  char dir[512], err[512] = "";
  make_report_dir(dir, sizeof dir);
  ck_assert_msg(jct__report_write(doc, dir, err, sizeof err) == 0, "%s", err);
  json_decref(doc);
  char *svg = read_in(dir, "jct-vs-delay_us-1.svg");
  /* Ticks of a linear axis over [8.5, 41.5]: 10, 15, ..., 40 (a log axis has no 15). */
  ck_assert(strstr(svg, "> 15</tspan></text>") && strstr(svg, "> 35</tspan></text>"));
  ck_assert(strstr(svg, ">delay_us</tspan></text>") || strstr(svg, ">delay_us</text>"));
  free(svg);
  svg = read_in(dir, "jct-vs-p-2.svg");
  ck_assert_ptr_nonnull(strstr(svg, "id=\"gnuplot_plot_1\""));
  free(svg);
  char path[600];
  snprintf(path, sizeof path, "%s/degradation.svg", dir);
  ck_assert_int_ne(access(path, F_OK), 0); /* every case is in a sweep */
  remove_dir(dir);
}
END_TEST

START_TEST(errors) {
  char dir[512], err[512];
  make_report_dir(dir, sizeof dir);
  /* Not a result document. */
  json_t *other = json_pack("{s:i,s:[]}", "jctlab_run", 1, "cases");
  err[0] = 0;
  ck_assert_int_eq(jct__report_write(other, dir, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "\"jctlab_result\": 1"));
  ck_assert_int_eq(jct__report_write(NULL, dir, err, sizeof err), JCT_EINVAL);
  json_decref(other);
  /* DIR is a file, or under one. */
  json_t *doc = result_doc();
  char file[600], sub[700];
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  err[0] = 0;
  ck_assert_int_eq(jct__report_write(doc, file, err, sizeof err), JCT_EIO);
  ck_assert_msg(strstr(err, "not a directory"), "%s", err);
  snprintf(sub, sizeof sub, "%s/x", file);
  err[0] = 0;
  ck_assert_int_eq(jct__report_write(doc, sub, err, sizeof err), JCT_EIO);
  ck_assert_msg(strstr(err, "cannot create"), "%s", err);
  /* gnuplot missing: a clear message naming the package; no report written. */
  char *path = strdup(getenv("PATH") ? getenv("PATH") : "");
  ck_assert_int_eq(setenv("PATH", "/nonexistent", 1), 0);
  err[0] = 0;
  int rc = jct__report_write(doc, dir, err, sizeof err);
  setenv("PATH", path, 1);
  free(path);
  ck_assert_int_eq(rc, JCT_EIO);
  ck_assert_msg(strstr(err, "gnuplot") && strstr(err, "gnuplot-nox"), "%s", err);
  ck_assert_uint_eq(dir_entries(dir), 1); /* only "plain" */
  json_decref(doc);
  remove_dir(dir);
}
END_TEST

/* ---- rendering in headless Chromium ---- */

/* chromium or chromium-browser on PATH, or NULL. */
static const char *find_chromium(char *buf, size_t len) {
  static const char *const names[] = {"chromium", "chromium-browser"};
  const char *path = getenv("PATH");
  for (size_t k = 0; k < 2; k++)
    for (const char *p = path; p && *p;) {
      size_t n = strcspn(p, ":");
      snprintf(buf, len, "%.*s/%s", (int)n, p, names[k]);
      if (n && access(buf, X_OK) == 0) return buf;
      p += n + (p[n] == ':');
    }
  return NULL;
}

/* Run chromium headless on url with one or two more options (opt2 may be
 * NULL), at most 60 s (timeout kills its whole process group), its profile
 * under home. */
static result_t chromium(const char *bin, const char *home, const char *opt1, const char *opt2,
                         const char *url) {
  char profile[600];
  snprintf(profile, sizeof profile, "--user-data-dir=%s/profile", home);
  char *argv[] = {"timeout",
                  "-k",
                  "5",
                  "60",
                  (char *)bin,
                  "--headless",
                  "--no-sandbox",
                  "--disable-gpu",
                  "--hide-scrollbars",
                  "--force-device-scale-factor=1",
                  "--no-first-run",
                  "--disable-crash-reporter",
                  profile,
                  (char *)opt1,
                  (char *)(opt2 ? opt2 : url),
                  (char *)(opt2 ? url : NULL),
                  NULL};
  return run_jctlab(argv, NULL, 75);
}

typedef struct {
  int x, y, w, h, paths;
} box_t;

/* Appended to a copy of the page: after layout, every plot's box in page
 * coordinates (and its path count) in a <pre>, which --dump-dom prints. */
static const char probe_script[] =
    "<script>addEventListener('load', () => {\n"
    "  let s = 'page ' + document.documentElement.scrollHeight + '\\n';\n"
    "  for (const e of document.querySelectorAll('figure svg')) {\n"
    "    const r = e.getBoundingClientRect();\n"
    "    s += 'svg ' + [r.left, r.top + scrollY, r.width, r.height].map(Math.round).join(' ') +\n"
    "         ' ' + e.querySelectorAll('path').length + '\\n';\n"
    "  }\n"
    "  const pre = document.createElement('pre'); pre.id = 'jct-probe'; pre.textContent = s;\n"
    "  document.body.appendChild(pre);\n"
    "});</script>\n";

/* Pixels of the screenshot inside a box: how many are not white, and how
 * many colours (4 bits a channel) they have. */
static void pixels(const png_image *img, const unsigned char *rgb, box_t b, size_t *ink,
                   size_t *colours) {
  static unsigned char seen[4096];
  memset(seen, 0, sizeof seen);
  *ink = *colours = 0;
  for (int y = b.y; y < b.y + b.h && y < (int)img->height; y++)
    for (int x = b.x; x < b.x + b.w && x < (int)img->width; x++) {
      const unsigned char *p = rgb + ((size_t)y * img->width + (size_t)x) * 3;
      if (p[0] > 235 && p[1] > 235 && p[2] > 235) continue;
      (*ink)++;
      unsigned q = (unsigned)(p[0] >> 4) << 8 | (unsigned)(p[1] >> 4) << 4 | (unsigned)(p[2] >> 4);
      if (!seen[q]) seen[q] = 1, (*colours)++;
    }
}

/* An uplink with d data flows (100 kB each) and one small ACK flow. */
static void uplink(jct_fabric_link_stats_t *l, const char *name, uint32_t d) {
  memset(l, 0, sizeof *l);
  snprintf(l->name, sizeof l->name, "%s", name);
  l->uplink = true;
  for (uint32_t i = 0; i <= d; i++) {
    jct_fabric_flow_t *f = &l->flows[l->nflows++];
    f->src_rank = i, f->dst_rank = i + 1, f->udp_sport = (uint16_t)(0xC000 + i);
    f->bytes = i < d ? 100000 : 500, f->frames = i < d ? 25 : 10;
    l->tx_bytes += f->bytes, l->tx_frames += f->frames;
  }
}

/* Collisions are uplinks with more data flows than an even spread over
 * their leaf's uplinks: 7 and 1 (leaf 0) is one, 4 and 4 (leaf 1) none,
 * 2 and 0 (leaf 2) one, 1 and 1 (leaf 3) none; a small flow is no data
 * flow. */
START_TEST(links_collisions) {
  static const struct {
    const char *name;
    uint32_t data;
    bool collided;
  } up[] = {{"leaf0:spine0", 7, true},  {"leaf0:spine1", 1, false}, {"leaf1:spine0", 4, false},
            {"leaf1:spine1", 4, false}, {"leaf2:spine0", 2, true},  {"leaf2:spine1", 0, false},
            {"leaf3:spine0", 1, false}, {"leaf3:spine1", 1, false}};
  enum { N = sizeof up / sizeof up[0] };
  jct_fabric_link_stats_t *l = calloc(N, sizeof *l);
  ck_assert_ptr_nonnull(l);
  for (int k = 0; k < N; k++)
    uplink(&l[k], up[k].name, up[k].data);
  json_t *fl = jct__links_json(l, N, 1.5);
  json_t *coll = json_object_get(fl, "collisions");
  ck_assert_uint_eq(json_array_size(coll), 2);
  ck_assert_str_eq(json_string_value(json_array_get(coll, 0)), "leaf0:spine0");
  ck_assert_str_eq(json_string_value(json_array_get(coll, 1)), "leaf2:spine0");
  for (int k = 0; k < N; k++) {
    json_t *link = json_array_get(json_object_get(fl, "links"), (size_t)k);
    ck_assert_msg(json_is_true(json_object_get(link, "collision")) == up[k].collided, "%s",
                  up[k].name);
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  jct__links_text(f, fl, "");
  fclose(f);
  ck_assert_msg(strstr(text, "collision  leaf0:spine0 carried 7 data flows"), "%s", text);
  ck_assert_msg(!strstr(text, "collision  leaf1"), "%s", text);
  free(text);
  json_decref(fl);
  free(l);
}
END_TEST

/* A postmortem's specs are long words without spaces (pkt=0:4,1:4,...):
 * the page still fits a 1200-pixel window, its tables wrapping them. */
START_TEST(long_specs_fit_the_page) {
  char bin[600];
  if (!find_chromium(bin, sizeof bin)) {
    printf("report: long_specs_fit_the_page skipped: no chromium on PATH\n");
    return;
  }
  char dir[512];
  make_report_dir(dir, sizeof dir);
  json_t *doc = result_doc();
  char spec[1200] = "drop qp=0x101 pkt=";
  for (int i = 0; i < 120; i++)
    snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%s%d:%d", i ? "," : "", i, i % 8);
  json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
  json_object_set_new(json_array_get(jget(c, "drops.injectors"), 0), "spec", json_string(spec));
  json_array_set_new(json_object_get(c, "inject"), 0, json_string(spec));
  char err[512] = "";
  ck_assert_msg(jct__report_write(doc, dir, err, sizeof err) == 0, "%s", err);
  json_decref(doc);
  ck_assert_int_eq(setenv("HOME", dir, 1), 0);
  char *page = read_in(dir, "report.html");
  char probe[600], url[700];
  snprintf(probe, sizeof probe, "%s/probe.html", dir);
  FILE *f = fopen(probe, "w");
  ck_assert_ptr_nonnull(f);
  char *body_end = strstr(page, "</body>");
  ck_assert_ptr_nonnull(body_end);
  fwrite(page, 1, (size_t)(body_end - page), f);
  fputs("<script>addEventListener('load', () => { const pre = document.createElement('pre');"
        " pre.id = 'jct-width'; pre.textContent = 'width ' +"
        " document.documentElement.scrollWidth; document.body.appendChild(pre); });</script>\n",
        f);
  fputs(body_end, f);
  ck_assert_int_eq(fclose(f), 0);
  free(page);
  snprintf(url, sizeof url, "file://%s", probe);
  result_t r = chromium(bin, dir, "--window-size=1200,3000", "--dump-dom", url);
  ck_assert_msg(r.status == 0, "chromium: exit %d: %.300s", r.status, r.err);
  const char *w = strstr(r.out, "<pre id=\"jct-width\">width ");
  ck_assert_msg(w, "no probe in the DOM");
  int width = atoi(w + strlen("<pre id=\"jct-width\">width "));
  ck_assert_msg(width > 0 && width <= 1200, "the page is %d pixels wide in a 1200-pixel window",
                width);
  result_free(&r);
  remove_dir(dir);
}
END_TEST

START_TEST(chromium_renders) {
  char bin[600];
  if (!find_chromium(bin, sizeof bin)) {
    printf("report: chromium_renders skipped: neither chromium nor chromium-browser is on PATH "
           "(scripts/setup-deps --with-test-tools installs Debian's chromium)\n");
    return;
  }
  char dir[512];
  write_report(dir, sizeof dir);
  /* Whatever Chromium keeps (profile, caches) stays in the report's directory. */
  ck_assert_int_eq(setenv("HOME", dir, 1), 0);
  ck_assert_int_eq(setenv("XDG_CONFIG_HOME", dir, 1), 0);
  ck_assert_int_eq(setenv("XDG_CACHE_HOME", dir, 1), 0);

  /* 1. The DOM after layout: every plot an <svg> of real size, with its paths. */
  char *page = read_in(dir, "report.html");
  char probe[600], url[700];
  snprintf(probe, sizeof probe, "%s/probe.html", dir);
  FILE *f = fopen(probe, "w");
  ck_assert_ptr_nonnull(f);
  char *body_end = strstr(page, "</body>");
  ck_assert_ptr_nonnull(body_end);
  fwrite(page, 1, (size_t)(body_end - page), f);
  fputs(probe_script, f);
  fputs(body_end, f);
  ck_assert_int_eq(fclose(f), 0);
  free(page);
  snprintf(url, sizeof url, "file://%s", probe);
  /* The same width as the screenshot's: the layout depends on it. */
  result_t r = chromium(bin, dir, "--window-size=1200,3000", "--dump-dom", url);
  ck_assert_msg(r.status == 0, "chromium --dump-dom: exit %d, signal %d: %.300s", r.status,
                r.signal, r.err);
  const char *pre = strstr(r.out, "<pre id=\"jct-probe\">");
  ck_assert_msg(pre, "no probe in the DOM: %.300s", r.out);
  int page_h = 0;
  ck_assert_int_eq(sscanf(pre + 20, "page %d", &page_h), 1);
  box_t boxes[NSVGS + 1];
  size_t n = 0;
  for (const char *p = pre; (p = strstr(p, "\nsvg ")) != NULL && n <= NSVGS; p++) {
    box_t *b = &boxes[n++];
    ck_assert_int_eq(sscanf(p, "\nsvg %d %d %d %d %d", &b->x, &b->y, &b->w, &b->h, &b->paths), 5);
    ck_assert_msg(b->w >= 400 && b->h >= 200, "plot %zu is %dx%d", n, b->w, b->h);
    ck_assert_msg(b->paths >= 10, "plot %zu has %d paths", n, b->paths);
  }
  ck_assert_uint_eq(n, NSVGS);
  result_free(&r);

  /* 2. The page as drawn: ink inside every plot, none in the margin beside it. */
  char shot[600], size[64];
  snprintf(shot, sizeof shot, "--screenshot=%s/shot.png", dir);
  snprintf(size, sizeof size, "--window-size=1200,%d", page_h < 20000 ? page_h : 20000);
  snprintf(url, sizeof url, "file://%s/report.html", dir);
  r = chromium(bin, dir, size, shot, url);
  ck_assert_msg(r.status == 0, "chromium --screenshot: exit %d: %.300s", r.status, r.err);
  result_free(&r);
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  char png_path[600];
  snprintf(png_path, sizeof png_path, "%s/shot.png", dir);
  ck_assert_msg(png_image_begin_read_from_file(&img, png_path), "%s: %s", png_path, img.message);
  img.format = PNG_FORMAT_RGB;
  unsigned char *rgb = malloc(PNG_IMAGE_SIZE(img));
  ck_assert_ptr_nonnull(rgb);
  ck_assert_msg(png_image_finish_read(&img, NULL, rgb, 0, NULL), "%s", img.message);
  ck_assert_uint_eq(img.width, 1200);
  for (size_t i = 0; i < n; i++) {
    box_t b = boxes[i];
    ck_assert_msg(b.y + b.h <= (int)img.height, "plot %zu below the screenshot", i + 1);
    size_t ink, colours;
    pixels(&img, rgb, b, &ink, &colours);
    ck_assert_msg(ink * 100 >= (size_t)b.w * (size_t)b.h, "plot %zu (%s) nearly blank: %zu pixels",
                  i + 1, SVGS[i], ink);
    ck_assert_msg(colours >= 4, "plot %zu (%s): %zu colours", i + 1, SVGS[i], colours);
    box_t margin = {b.x + b.w + 20, b.y, 150, b.h, 0};
    pixels(&img, rgb, margin, &ink, &colours);
    ck_assert_msg(ink == 0, "the margin beside plot %zu has %zu pixels of ink", i + 1, ink);
  }
  free(rgb);
  png_image_free(&img);
  remove_dir(dir);
}
END_TEST

Suite *report_suite(void) {
  Suite *s = suite_create("report");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 30);
  tcase_add_test(core, files_and_svgs);
  tcase_add_test(core, markdown);
  tcase_add_test(core, html);
  tcase_add_test(core, text_table);
  tcase_add_test(core, per_qp_tables);
  tcase_add_test(core, sparse_documents);
  tcase_add_test(core, linear_sweeps);
  tcase_add_test(core, errors);
  tcase_add_test(core, links_collisions);
  suite_add_tcase(s, core);
  TCase *render = tcase_create("render");
  tcase_set_timeout(render, 180);
  /* Left out of the sanitizer pass (scripts/test): the time is Chromium's
   * (two launches); core's html writes the same report.html
   * (write_report) there. */
  tcase_set_tags(render, "sanitizer-skip");
  tcase_add_test(render, chromium_renders);
  suite_add_tcase(s, render);
  TCase *width = tcase_create("width");
  tcase_set_timeout(width, 180);
  tcase_add_test(width, long_specs_fit_the_page);
  suite_add_tcase(s, width);
  return s;
}
