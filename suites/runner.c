/* One runner for every Check suite. ctest runs it once per suite with
 * CK_RUN_SUITE=<area>; run by hand it runs them all. */
#include <check.h>
#include <stdlib.h>

#include "suites.h"

int main(void) {
  SRunner *sr = srunner_create(roce_suite());
  srunner_add_suite(sr, decode_suite());
  srunner_add_suite(sr, trace_suite());
  srunner_add_suite(sr, inspect_suite());
  srunner_add_suite(sr, cli_suite());
  srunner_add_suite(sr, schedule_suite());
  srunner_add_suite(sr, clock_suite());
  srunner_add_suite(sr, topo_suite());
  srunner_add_suite(sr, switch_suite());
  srunner_add_suite(sr, uroce_suite());
  srunner_add_suite(sr, exec_suite());
  srunner_add_suite(sr, run_suite());
  srunner_add_suite(sr, injector_suite());
  srunner_add_suite(sr, injector_kinds_suite());
  srunner_add_suite(sr, inject_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
