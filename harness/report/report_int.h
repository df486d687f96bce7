/* What the report files share (internal to harness/report_*.c): reading
 * the result document without trusting it to be complete, the plots
 * planned and drawn, and the writers of report.md and report.html behind
 * one set of operations (report_doc.c says what a report holds once; the
 * writers say how Markdown and HTML spell it). */
#ifndef JCT_REPORT_INT_H
#define JCT_REPORT_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- Reading the result document (report_util.c) ---- */

/* The member at a dotted path ("degradation.ci95_low", "drops.injectors");
 * NULL when a step is missing, not an object, or the value is null. */
const json_t *jct__rget(const json_t *o, const char *path);
/* A number (integer or real) at path: true and *out, or false. */
bool jct__rnum(const json_t *o, const char *path, double *out);
/* A string at path, or NULL. */
const char *jct__rstr(const json_t *o, const char *path);

/* Figures as text, "n/a" when absent. Each returns buf. */
char *jct__rfmt_ns(const json_t *o, const char *path, char *buf, size_t len);
char *jct__rfmt_count(const json_t *o, const char *path, char *buf, size_t len);
char *jct__rfmt_bytes(const json_t *o, const char *path, char *buf, size_t len);
char *jct__rfmt_real(const json_t *o, const char *path, const char *fmt, char *buf, size_t len);
/* "1.234 [1.100, 1.310]": the case's degradation and 95% interval. */
char *jct__rfmt_degradation(const json_t *c, char *buf, size_t len);
/* "degradation <= 1.15", "JCT <= 2.000 s", or "none". */
char *jct__rfmt_budget(const json_t *c, char *buf, size_t len);
/* "pass", "FAIL", "INVALID" or "none" (shouted when it needs attention). */
const char *jct__rverdict(const json_t *c);
/* The case's injector specs joined with "; ", or "none". */
char *jct__rfmt_inject(const json_t *c, char *buf, size_t len);
/* "uroce, 100 Mbit/s links, 1.00 µs delay, PFC on, ECN off, PFC watchdog off". */
char *jct__rfmt_fabric(const json_t *result, char *buf, size_t len);
/* "traces/ring8.pcap (trace): ring, 8 ranks, 112 ops, 256.00 KiB". */
char *jct__rfmt_input(const json_t *result, char *buf, size_t len);

/* ---- A capture's replay (report_fidelity.c) ---- */

/* One row of the fidelity table: a figure, the capture's and the replay's
 * values, their ratio, and whether it is within the tolerance (and decides). */
typedef struct {
  char label[48], captured[32], replayed[32], ratio[16], note[32];
} jct__fid_row_t;
/* Case c's fidelity rows (the figures, then each connection's time), at
 * most max; 0 when the case has no fidelity. */
size_t jct__fidelity_rows(const json_t *c, jct__fid_row_t *rows, size_t max);
/* The case's fidelity verdict in a sentence, naming the figures that diverged. */
char *jct__rfmt_fidelity(const json_t *c, char *buf, size_t len);
/* The i-th reason a figure diverged (fidelity.h, "why"): "why FIGURE:
 * REASON"; NULL past the last. */
char *jct__rfmt_fidelity_why(const json_t *c, size_t i, char *buf, size_t len);
/* The i-th spread line of case c's fidelity, NULL past the last: for each
 * of loss recovery and go-back depth outside the tolerance, how the
 * capture's samples and the replay's spread over the profile's bins
 * ("loss recovery, capture: 7 in 500 µs-1 ms, ..."; spread_text.h). */
char *jct__rfmt_fidelity_spread(const json_t *c, size_t i, char *buf, size_t len);
/* "rate 68.58 Mbit/s (capture), link delay 234 µs (capture), ...", or NULL
 * when the result has no replay_profile. */
char *jct__rfmt_replay_profile(const json_t *result, char *buf, size_t len);

/* ---- Plots (report_plot.c plans and scripts them, report_gnuplot.c runs gnuplot) ---- */

typedef enum {
  JCT__PLOT_SWEEP,
  JCT__PLOT_BARS,
  JCT__PLOT_TIMELINE,
  JCT__PLOT_RETX
} jct__plot_kind_t;

typedef struct {
  jct__plot_kind_t kind;
  char file[96];      /* "jct-vs-p.svg", relative to the report's directory */
  char title[256];    /* what it shows, one line */
  char note[512];     /* what was left out and why, or "" */
  long case_index;    /* the case it belongs to (from 0), or -1 for all cases */
  char sweep_key[64]; /* JCT__PLOT_SWEEP: the sweep's key */
} jct__plot_t;

typedef struct {
  jct__plot_t *v;
  size_t n;
} jct__plots_t;

/* The plots the document allows (above, in report.h). JCT_ENOMEM or 0. */
int jct__plots_plan(const json_t *result, jct__plots_t *plots);
void jct__plots_free(jct__plots_t *plots);
/* The gnuplot script drawing every planned plot into its file (relative
 * to gnuplot's working directory). JCT_EIO when out cannot be written. */
int jct__plots_script(const json_t *result, const jct__plots_t *plots, FILE *out);
/* Run gnuplot in dir on the script (a file open for reading and writing,
 * rewound here), at most timeout_s seconds. JCT_EIO with err naming why. */
int jct__gnuplot_run(FILE *script, const char *dir, int timeout_s, char *err, size_t errlen);

/* ---- Writers (report_md.c, report_html.c), driven by report_doc.c ---- */

typedef struct {
  const char *name; /* "report.md" */
  void (*begin)(FILE *f, const char *title);
  void (*end)(FILE *f);
  void (*heading)(FILE *f, int level, const char *text);
  void (*para)(FILE *f, const char *text);
  void (*table_begin)(FILE *f, const char *const *head, size_t ncols);
  void (*table_row)(FILE *f, const char *const *cells, size_t ncols);
  void (*table_end)(FILE *f);
  /* The plot, from dir/p->file (the HTML writer copies the SVG inline,
   * seq making its ids unique in the page). JCT_EIO when unreadable. */
  int (*figure)(FILE *f, const jct__plot_t *p, const char *dir, unsigned seq, char *err,
                size_t errlen);
} jct__doc_ops_t;

extern const jct__doc_ops_t jct__md_ops;
extern const jct__doc_ops_t jct__html_ops;

/* Write the report through ops to f. 0 or JCT_EIO (a figure's SVG unreadable). */
int jct__report_doc(const jct__doc_ops_t *ops, FILE *f, const json_t *result,
                    const jct__plots_t *plots, const char *dir, char *err, size_t errlen);

#endif
