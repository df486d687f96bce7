/* One runner for every Check suite. ctest runs it once per suite with
 * CK_RUN_SUITE=<area>; run by hand it runs them all.
 *
 * Every temporary file a test makes goes into one directory of the
 * runner's (TMPDIR points there for the tests and the programs they start),
 * removed with everything in it after the suites: Check ends a failed
 * test's process without running its cleanup, so only the runner, which
 * outlives the tests, can promise that nothing is left behind. */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "suites.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/jctlab-tests-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir) || chmod(dir, 0755) || setenv("TMPDIR", dir, 1)) {
    perror("check_runner: a temporary directory for the tests");
    return EXIT_FAILURE;
  }

  SRunner *sr = srunner_create(roce_suite());
  srunner_add_suite(sr, decode_suite());
  srunner_add_suite(sr, trace_suite());
  srunner_add_suite(sr, inspect_suite());
  srunner_add_suite(sr, profile_suite());
  srunner_add_suite(sr, infer_suite());
  srunner_add_suite(sr, cli_suite());
  srunner_add_suite(sr, schedule_suite());
  srunner_add_suite(sr, clock_suite());
  srunner_add_suite(sr, dilation_suite());
  srunner_add_suite(sr, topo_suite());
  srunner_add_suite(sr, fabric_suite());
  srunner_add_suite(sr, switch_suite());
  srunner_add_suite(sr, uroce_suite());
  srunner_add_suite(sr, dcqcn_suite());
  srunner_add_suite(sr, exec_suite());
  srunner_add_suite(sr, run_suite());
  srunner_add_suite(sr, injector_suite());
  srunner_add_suite(sr, injector_kinds_suite());
  srunner_add_suite(sr, stall_suite());
  srunner_add_suite(sr, timeout_suite());
  srunner_add_suite(sr, inject_suite());
  srunner_add_suite(sr, hostfault_suite());
  srunner_add_suite(sr, rank_suite());
  srunner_add_suite(sr, report_suite());
  srunner_add_suite(sr, sweep_suite());
  srunner_add_suite(sr, scenario_suite());
  srunner_add_suite(sr, replay_stats_suite());
  srunner_add_suite(sr, replay_suite());
  srunner_add_suite(sr, model_suite());
  srunner_add_suite(sr, real_rates_suite());
  srunner_add_suite(sr, fidelity_suite());
  srunner_add_suite(sr, capture_suite());
  srunner_add_suite(sr, lab_replay_suite());
  srunner_add_suite(sr, lab_rank_suite());
  srunner_add_suite(sr, agents_suite());
  srunner_add_suite(sr, hostile_suite());
  srunner_add_suite(sr, wire_suite());
  srunner_add_suite(sr, clos_suite());
  srunner_add_suite(sr, links_suite());
  srunner_add_suite(sr, reroute_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);

  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
