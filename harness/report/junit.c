/* JUnit XML for CI systems (junit.h): counts first, then one testcase per
 * fault case; every string that came from a user (case names, specs) or a
 * run (why it was invalid) goes through jct__xml_escape() on its way out. */
#include <math.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "junit.h"
#include "harness/base/units.h"
#include "jctlab/replay.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid
 * (overlong forms, surrogates, past U+10FFFF, and U+FFFE/U+FFFF, which XML
 * excludes). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char b = s[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf)
    len = 2;
  else if (b >= 0xe0 && b <= 0xef)
    len = 3, lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
  else if (b >= 0xf0 && b <= 0xf4)
    len = 4, lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
  else
    return 0;
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (len == 3 && b == 0xef && s[1] == 0xbf && s[2] >= 0xbe) return 0;
  return len;
}

void jct__xml_escape(FILE *f, const char *s, bool attr) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t n = strlen((const char *)p);
  while (n) {
    unsigned char ch = *p;
    size_t len = 1;
    switch (ch) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs(attr ? "&quot;" : "\"", f);
      break;
    case '\'':
      fputs(attr ? "&apos;" : "'", f);
      break;
    case '\n':
      fputs(attr ? "&#10;" : "\n", f);
      break;
    case '\r':
      fputs("&#13;", f);
      break;
    case '\t':
      fputs(attr ? "&#9;" : "\t", f);
      break;
    default:
      if (ch < 0x20) {
        fputs(REPLACEMENT, f);
      } else if (!(len = utf8_len(p, n))) {
        fputs(REPLACEMENT, f);
        len = 1;
      } else {
        fwrite(p, 1, len, f);
      }
    }
    p += len;
    n -= len;
  }
}

static void attr(FILE *f, const char *name, const char *value) {
  fprintf(f, " %s=\"", name);
  jct__xml_escape(f, value, true);
  fputc('"', f);
}

static void property(FILE *f, const char *name, const char *value) {
  fputs("        <property", f);
  attr(f, "name", name);
  attr(f, "value", value);
  fputs("/>\n", f);
}

static void property_u64(FILE *f, const char *name, uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  property(f, name, b);
}

/* digits: significant digits (17: the double exactly). */
static void property_num(FILE *f, const char *name, int digits, double v) {
  if (isnan(v)) return; /* no figure (an interval from too few repetitions) */
  char b[64];
  snprintf(b, sizeof b, "%.*g", digits, v);
  property(f, name, b);
}

void jct__junit_case_summary(const jct__junit_case_t *c, char *buf, size_t len) {
  char b1[32], b2[32], b3[32];
  if (c->verdict == JCT_VERDICT_INVALID) {
    snprintf(buf, len, "invalid run: %s", c->message ? c->message : "(no reason given)");
    return;
  }
  char ci[64];
  if (isnan(c->ci95_low) || isnan(c->ci95_high))
    snprintf(ci, sizeof ci, "no 95%% CI under %u repetitions", JCT_REPLAY_MIN_REPS_CI);
  else
    snprintf(ci, sizeof ci, "95%% CI %.3f to %.3f", c->ci95_low, c->ci95_high);
  int k = snprintf(buf, len, "degradation %.3f (%s), median JCT %s faulted, %s baseline",
                   c->degradation, ci, jct__fmt_ns(c->faulted_median_ns, b1, sizeof b1),
                   jct__fmt_ns(c->baseline_median_ns, b2, sizeof b2));
  if (k < 0 || (size_t)k >= len) return;
  const char *verb = c->verdict == JCT_VERDICT_FAIL ? "exceeds" : "within";
  if (c->verdict == JCT_VERDICT_NONE)
    snprintf(buf + k, len - (size_t)k, ": no budget");
  else if (c->budget.max_degradation > 0)
    snprintf(buf + k, len - (size_t)k, ": %s the budget %g", verb, c->budget.max_degradation);
  else
    snprintf(buf + k, len - (size_t)k, ": faulted median %s the budget %s", verb,
             jct__fmt_ns(c->budget.max_jct_ns, b3, sizeof b3));
}

static void testcase(FILE *f, const char *suite, const jct__junit_case_t *c) {
  fputs("    <testcase", f);
  attr(f, "name", c->name);
  attr(f, "classname", suite);
  fprintf(f, " time=\"%.3f\">\n", c->wall_s > 0 ? c->wall_s : 0.0);
  fputs("      <properties>\n", f);
  property(f, "verdict", jct__verdict_name(c->verdict));
  if (c->verdict != JCT_VERDICT_INVALID) {
    property_u64(f, "baseline_median_jct_ns", c->baseline_median_ns);
    property_u64(f, "faulted_median_jct_ns", c->faulted_median_ns);
    property_num(f, "degradation", 6, c->degradation);
    property_num(f, "degradation_ci95_low", 6, c->ci95_low);
    property_num(f, "degradation_ci95_high", 6, c->ci95_high);
  }
  if (c->budget.max_degradation > 0)
    property_num(f, "max_degradation", 6, c->budget.max_degradation);
  else if (c->budget.max_jct_ns > 0)
    property_u64(f, "max_jct_ns", c->budget.max_jct_ns);
  if (c->sweep_key) {
    property(f, "sweep_key", c->sweep_key);
    property_num(f, "sweep_value", 17, c->sweep_value);
  }
  for (uint32_t i = 0; c->inject && i < c->ninject; i++) {
    char name[32];
    snprintf(name, sizeof name, "inject.%u", i);
    property(f, name, c->inject[i]);
  }
  fputs("      </properties>\n", f);
  char msg[768];
  jct__junit_case_summary(c, msg, sizeof msg);
  if (c->verdict == JCT_VERDICT_FAIL || c->verdict == JCT_VERDICT_INVALID) {
    bool fail = c->verdict == JCT_VERDICT_FAIL;
    fprintf(f, "      <%s", fail ? "failure" : "error");
    attr(f, "message", msg);
    attr(f, "type", fail ? "budget_exceeded" : "invalid_run");
    fputs(">", f);
    jct__xml_escape(f, msg, false);
    fprintf(f, "</%s>\n", fail ? "failure" : "error");
  }
  fputs("      <system-out>", f);
  jct__xml_escape(f, msg, false);
  fputs("</system-out>\n    </testcase>\n", f);
}

int jct__junit_write(FILE *f, const char *suite, const jct__junit_case_t *cases, size_t n,
                     time_t timestamp) {
  size_t failures = 0, errors = 0;
  double time_s = 0;
  for (size_t i = 0; i < n; i++) {
    failures += cases[i].verdict == JCT_VERDICT_FAIL;
    errors += cases[i].verdict == JCT_VERDICT_INVALID;
    time_s += cases[i].wall_s > 0 ? cases[i].wall_s : 0;
  }
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
  fprintf(f,
          "<testsuites name=\"jctlab\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
          "skipped=\"0\" time=\"%.3f\">\n",
          n, failures, errors, time_s);
  fputs("  <testsuite", f);
  attr(f, "name", suite);
  fprintf(f, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" time=\"%.3f\"", n,
          failures, errors, time_s);
  if (timestamp) {
    char ts[32];
    struct tm tm;
    if (gmtime_r(&timestamp, &tm) && strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm))
      attr(f, "timestamp", ts);
  }
  fputs(">\n", f);
  for (size_t i = 0; i < n; i++)
    testcase(f, suite, &cases[i]);
  fputs("  </testsuite>\n</testsuites>\n", f);
  return ferror(f) ? JCT_EIO : 0;
}

int jct__junit_write_file(const char *path, const char *suite, const jct__junit_case_t *cases,
                          size_t n, time_t timestamp, char *err, size_t errlen) {
  bool out = strcmp(path, "-") == 0;
  FILE *f = out ? stdout : fopen(path, "w");
  if (!f) return jct__errf(err, errlen, JCT_EIO, "%s: %s", path, strerror(errno));
  int rc = jct__junit_write(f, suite, cases, n, timestamp);
  if (out ? fflush(f) != 0 : fclose(f) != 0) rc = JCT_EIO;
  if (rc) return jct__errf(err, errlen, JCT_EIO, "%s: cannot write the JUnit file", path);
  return 0;
}
