/* Issue 16's hostile tester, replayed: each way a user or a script got a
 * result that was not one, or lost a file, tried again on the built
 * binary (JCT_BINARY), each asserting what jctlab does now. The items that
 * need a whole run or the lab are tested where their subject lives, named
 * here so that the list stays whole:
 *   - seeded runs drop the same data packets, 50 runs: inject suite
 *     (fifty_seeded_runs_identical) and injector suite (go-back-N timing);
 *   - SIGINT/SIGTERM end cleanly, a second signal at once: replay suite
 *     (sigint_ends_cleanly);
 *   - `lab: N` means verbs: scenario suite (lab_means_verbs);
 *   - shipped scenarios pass their budgets: scenario suite (shipped_*);
 *   - every result key present, null when it has no value: replay suite
 *     (invalid_run_exits_3) and run suite (invalid_run_keys);
 *   - -s/--snaplen: replay suite (snaplen_cuts_the_capture);
 *   - a capture is never overwritten by --json, inspect reads a pipe: cli suite;
 *   - per-QP figures: replay and run suites (per_qp_*); rotation: capture suite;
 *   - duplicate and rate behave as netem: injector_kinds and inject suites;
 *   - a million flows in the memory budget: cli suite and bench/inspect --flows;
 *   - nccl-tests' size sweep and its refusals (-b above -e, -f not above 1,
 *     over 64 sizes, a size over RoCE's 2^31-byte message): sweep suite;
 *     all-gather, reduce-scatter and broadcast: schedule and run suites.
 * Everything here is refused before anything is built: one line on stderr,
 * exit 2, nothing on stdout and no file left behind. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "craft.h"
#include "suites.h"
#include "testkit.h"

#define TRACE JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap"
#define MAX_ARGS 24

/* One refused command line: the words its one line must hold. */
typedef struct {
  const char *what; /* the item */
  const char *argv[MAX_ARGS];
  const char *word1, *word2;
} refusal_t;

static const refusal_t refusals[] = {
    {"an injector on a port the fabric does not have",
     {"run", "--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--inject",
      "drop p=0.5 port=64"},
     "port=64",
     "0 to 1"},
    {"the port one past the last rank",
     {"run", "--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--inject", "drop p=0.5 port=2"},
     "port=2",
     "does not exist"},
    {"a pause storm for a rank that does not exist",
     {"run", "--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--inject",
      "pause prio=3 rate=1000/s port=9"},
     "port=9",
     "does not exist"},
    {"a fidelity tolerance of nothing",
     {"replay", "--fidelity-tolerance", "0"},
     "--fidelity-tolerance",
     "fraction > 0"},
    {"a NAK turnaround that is no time",
     {"replay", "--nak-delay", "soon"},
     "--nak-delay",
     "'soon'"},
    {"a NAK reaction of more than 10 s",
     {"run", "--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--nak-react", "11s"},
     "--nak-react",
     "up to 10 s"},
    {"two budgets",
     {"replay", "--max-degradation", "2", "--max-jct", "1ns"},
     "--max-degradation",
     "not both"},
    {"a message over 2^31 bytes",
     {"run", "--synth", "ring", "--ranks", "2", "--bytes", "1TiB"},
     "2^31",
     NULL},
    {"a schedule too big to write",
     {"synth", "ring", "--ranks", "4096", "--bytes", "1GiB"},
     "at most",
     NULL},
    {"too many ranks for a ring",
     {"run", "--synth", "ring", "--ranks", "10000", "--bytes", "1MiB"},
     "10000",
     "4096"},
    {"no ranks", {"run", "--ranks", "0"}, "--ranks 0", "2 or more"},
    {"--json= with no file", {"run", "--json="}, "--json", "needs a file"},
    {"an output given twice",
     {"run", "--json", "a.json", "--json", "b.json"},
     "given twice",
     "b.json"},
    {"--lab without a value", {"run", "--lab"}, "--lab", "value"},
    {"--json into a folder that does not exist",
     {"replay", "--json", "/nonexistent/folder/r.json"},
     "/nonexistent/folder/r.json",
     "cannot be written"},
    {"--junit where files cannot be made (procfs, even as root)",
     {"replay", "--junit", "/proc/jctlab.xml"},
     "--junit",
     "cannot be written"},
    {"--report where folders cannot be made",
     {"replay", "--report", "/proc/jctlab-report"},
     "--report",
     "cannot be written"},
    {"--json over a capture", {"inspect", "--json=" TRACE, TRACE}, "capture", "never writes"},
    {"schedule -o over its own input", {"schedule", TRACE, "-o", TRACE}, "capture", "never writes"},
    {"repetitions without end", {"replay", "--reps", "1000000"}, "--reps", "1000"},
    {"a rate of 0", {"replay", "--rate", "0"}, "--rate", "not a rate"},
    {"a capture rotated at 0 bytes",
     {"run", "--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--pcap-out", "x.pcap", "-C",
      "0"},
     "-C 0",
     "not a file size"},
    {"a ring of files with no size",
     {"run", "--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--pcap-out", "x.pcap", "-W",
      "3"},
     "-W 3",
     "needs -C"},
    {"a duplicate probability over 1", {"replay", "--inject", "duplicate p=2"}, "p=2", "outside"},
    {"a netem rate that is not one", {"replay", "--inject", "rate fast"}, "fast", "not a rate"},
    {"a display filter libpcap cannot parse",
     {"inspect", "-Y", "tcp and and", TRACE},
     "tcp and and",
     "syntax error"},
    {"a probability over 1", {"replay", "--inject", "drop p=7"}, "p=7", "outside [0, 1]"},
};

static void expect_refused(const refusal_t *t) {
  char *argv[MAX_ARGS + 2];
  size_t n = 0;
  argv[n++] = JCT_BINARY;
  for (size_t i = 0; t->argv[i]; i++)
    argv[n++] = (char *)t->argv[i];
  argv[n] = NULL;
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_msg(r.status == 2, "%s: exit %d (want 2): %s", t->what, r.status, r.err);
  ck_assert_msg(count_lines(r.err) == 1, "%s: stderr is not one line: %s", t->what, r.err);
  ck_assert_msg(r.out_len == 0, "%s: printed to stdout: %s", t->what, r.out);
  ck_assert_msg(strstr(r.err, t->word1), "%s: \"%s\" does not say %s", t->what, r.err, t->word1);
  if (t->word2)
    ck_assert_msg(strstr(r.err, t->word2), "%s: \"%s\" does not say %s", t->what, r.err, t->word2);
  result_free(&r);
}

START_TEST(refused_before_anything_is_built) {
  expect_refused(&refusals[_i]);
}
END_TEST

/* Names in dir starting with prefix. */
static size_t count_named(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

/* The outputs are probed by making them: a refused run leaves neither its
 * outputs nor the probes, and a run that is refused for another reason
 * does not leave the outputs it was checking. */
START_TEST(probes_leave_nothing) {
  char json[256], junit[256], dir[256];
  craft_tmpname(json, sizeof json, ".json");
  craft_tmpname(junit, sizeof junit, ".xml");
  craft_tmpname(dir, sizeof dir, "-report");
  unlink(json); /* names of files that do not exist yet */
  unlink(junit);
  unlink(dir);
  char *argv[] = {JCT_BINARY, "replay", "--json",   json,       "--junit", junit,
                  "--report", dir,      "--inject", "drop p=2", NULL};
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_int_eq(r.status, 2);
  result_free(&r);
  struct stat st;
  ck_assert_msg(stat(json, &st) != 0, "%s left behind", json);
  ck_assert_msg(stat(junit, &st) != 0, "%s left behind", junit);
  ck_assert_msg(stat(dir, &st) != 0, "%s left behind", dir);
  const char *tmp = getenv("TMPDIR");
  ck_assert_uint_eq(count_named(tmp ? tmp : "/tmp", ".jctlab-probe"), 0);
}
END_TEST

/* A scenario nested 100,000 levels deep is refused at once by the depth
 * (32), with its place, not parsed to the bottom. */
START_TEST(deep_scenario_refused) {
  char path[256];
  craft_tmpname(path, sizeof path, ".yaml");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("name: deep\ncases: ", f);
  for (int i = 0; i < 100000; i++)
    fputc('[', f);
  fputc('\n', f);
  fclose(f);
  char *argv[] = {JCT_BINARY, "run", path, NULL};
  result_t r = run_cmd(argv, NULL, 60);
  unlink(path);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "deeper than 32"), "stderr: %s", r.err);
  ck_assert_msg(strstr(r.err, ":2:"), "no line number: %s", r.err);
  result_free(&r);
}
END_TEST

/* A long spec is quoted short, so the reason is always on the line. */
START_TEST(long_spec_keeps_its_reason) {
  char spec[1200] = "drop";
  for (int i = 0; i < 80; i++)
    strcat(spec, " at=1ms");
  strcat(spec, " p=7");
  char *argv[] = {JCT_BINARY, "replay", "--inject", spec, NULL};
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_int_eq(r.status, 2);
  ck_assert_uint_eq(count_lines(r.err), 1);
  ck_assert_msg(strstr(r.err, "given twice"), "the reason is cut: %s", r.err);
  ck_assert_uint_lt(strlen(r.err), 400);
  result_free(&r);
}
END_TEST

/* One sweep limit everywhere: 256 values, as scenario files. */
START_TEST(sweep_limit_is_one) {
  char spec[4096] = "drop p=[0";
  for (int i = 1; i < 300; i++)
    snprintf(spec + strlen(spec), sizeof spec - strlen(spec), ", %d", i);
  strcat(spec, "e-4]");
  char *argv[] = {JCT_BINARY, "replay", "--inject", spec, NULL};
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "at most 256"), "stderr: %s", r.err);
  result_free(&r);
}
END_TEST

Suite *hostile_suite(void) {
  Suite *s = suite_create("hostile");
  TCase *tc = tcase_create("refusals");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, refused_before_anything_is_built, 0,
                      (int)(sizeof refusals / sizeof *refusals));
  tcase_add_test(tc, probes_leave_nothing);
  tcase_add_test(tc, deep_scenario_refused);
  tcase_add_test(tc, long_spec_keeps_its_reason);
  tcase_add_test(tc, sweep_limit_is_one);
  suite_add_tcase(s, tc);
  return s;
}
