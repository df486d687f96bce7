/* JUnit XML for CI systems (internal to the harness): `--junit FILE`
 * writes one <testcase> per fault case of a run, in the shape Jenkins,
 * GitLab and GitHub's test reporters read (the Ant JUnit task's format,
 * with per-testcase <properties> as pytest writes them):
 *
 *   <testsuites name="jctlab" tests= failures= errors= skipped="0" time=>
 *     <testsuite name=SUITE tests= failures= errors= skipped="0" time= timestamp=>
 *       <testcase name=CASE classname=SUITE time=WALL_SECONDS>
 *         <properties><property name="degradation" value="1.042"/>...</properties>
 *         <failure message=... type="budget_exceeded">...</failure>   verdict FAIL
 *         <error message=... type="invalid_run">...</error>           verdict INVALID
 *         <system-out>one line: the figures and the verdict</system-out>
 *
 * A case with no budget (JCT_VERDICT_NONE) is a passed testcase with the
 * property verdict=none: it ran and measured, and <skipped> would tell CI
 * it did not run. Properties: verdict, baseline_median_jct_ns,
 * faulted_median_jct_ns, degradation, degradation_ci95_low,
 * degradation_ci95_high (the figures only for a valid run), max_degradation
 * or max_jct_ns (the budget, when there is one), sweep_key and sweep_value
 * (in a sweep), inject.0, inject.1, ... (the specs).
 *
 * Text is escaped for XML 1.0: & < > " ' as entities; newlines, tabs and
 * carriage returns in attributes as character references; control
 * characters XML cannot hold and bytes that are not UTF-8 as U+FFFD.
 */
#ifndef JCT_JUNIT_H
#define JCT_JUNIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "result.h"

typedef struct {
  const char *name;
  jct__verdict_kind_t verdict;
  const char *message; /* INVALID: why the run is invalid; others: NULL (made from the figures) */
  jct__budget_t budget;
  uint64_t baseline_median_ns, faulted_median_ns;
  double degradation, ci95_low, ci95_high; /* faulted / baseline median JCT */
  double wall_s;                           /* the case's wall time, both sides */
  const char *sweep_key;                   /* NULL: not in a sweep */
  double sweep_value;
  const char *const *inject; /* the case's specs, may be NULL */
  uint32_t ninject;
} jct__junit_case_t;

/* Write the document for n cases of suite (the scenario's name) to f;
 * timestamp (0: none) is the run's start. Returns 0, or JCT_EIO when f
 * reports a write error. */
int jct__junit_write(FILE *f, const char *suite, const jct__junit_case_t *cases, size_t n,
                    time_t timestamp);

/* The same into path ("-": standard output). Errors: JCT_EIO (err names
 * the file and why). */
int jct__junit_write_file(const char *path, const char *suite, const jct__junit_case_t *cases,
                         size_t n, time_t timestamp, char *err, size_t errlen);

/* What a case's <failure>/<error> message, or its <system-out>, says:
 * "degradation 1.312 (95% CI 1.201 to 1.405) exceeds the budget 1.15". */
void jct__junit_case_summary(const jct__junit_case_t *c, char *buf, size_t len);

/* s written to f escaped for XML 1.0 (and HTML): & < > always, quotes and
 * tab/newline as character references when attr (an attribute value),
 * bytes that are not valid UTF-8 or not allowed in XML replaced by U+FFFD.
 * NULL is "". The report's HTML uses it too. */
void jct__xml_escape(FILE *f, const char *s, bool attr);

#endif
