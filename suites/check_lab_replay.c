/* `jctlab replay --lab 2` end to end (issue 6): a small ring AllReduce over
 * soft-RoCE (Linux rxe) in two VMs whose NICs are ports of jctlab's switch,
 * with one targeted drop per faulted repetition:
 *   - the replay finishes, valid, with every op reported by the agents;
 *   - the injector dropped exactly one frame per faulted repetition, and
 *     rxe's own counters saw it: one NAK-sequence-error received by the
 *     requester (rcvd_seq_err) per drop, an out-of-sequence request at the
 *     responder, and nothing of the kind in the baseline;
 *   - nothing is left behind: no qemu process, no TAP.
 * Skipped, with the reason printed, only where the lab cannot run at all
 * (no qemu, no kernel image: scripts/setup-deps --with-lab installs both). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "lab.h"
#include "suites.h"
#include "testkit.h"

#define LIMIT_S 600.0 /* two VMs boot in ~10 s with KVM, far longer under TCG */

static bool lab_skipped(void) {
  char why[256] = "";
  if (jct_lab_available(why, sizeof why)) return false;
  fprintf(stderr, "lab_replay: SKIPPED: %s\n", why);
  return true;
}

static int count_procs(const char *name) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "pgrep -c -f '^%s'", name);
  FILE *p = popen(cmd, "r");
  int n = 0;
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = 0;
    pclose(p);
  }
  return n;
}

START_TEST(test_one_drop_one_nak) {
  if (lab_skipped()) return;
  int qemu_before = count_procs("qemu-system-x86_64");
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  /* Rank 0's data to rank 1 (not its clear-to-sends, WRITE_ONLY_WITH_IMM
   * 0x0b): the 4th packet of its first message, in each faulted rep. */
  char *argv[] = {JCT_BINARY,  "replay",
                  "--lab",     "2",
                  "--synth",   "ring",
                  "--bytes",   "256KiB",
                  "--rate",    "100mbit",
                  "--reps",    "2",
                  "--timeout", "14",
                  "--inject",  "drop pkt=0:3 where=\"src host 198.18.0.1 and udp[8] != 0x0b\"",
                  "--json",    js,
                  NULL};
  /* Up to 3 runs while one is invalid because the loop fell behind: the
   * VMs (TCG) and the switch share 2 cores, and jctlab rightly refuses to
   * report such a run. Anything else is the test's to judge. */
  result_t r = {0};
  json_t *doc = NULL;
  for (int attempt = 0; attempt < 3; attempt++) {
    if (attempt) result_free(&r);
    if (doc) json_decref(doc);
    r = run_cmd(argv, NULL, LIMIT_S);
    json_error_t je;
    doc = json_load_file(js, 0, &je);
    ck_assert_msg(doc, "no JSON (exit %d): %s\n%s", r.status, je.text, r.err);
    const char *why = json_string_value(json_object_get(jget(doc, "cases.0"), "invalid_why"));
    if (r.status != 3 || !why || !strstr(why, "lateness")) break;
    fprintf(stderr, "lab_replay: run %d invalid (%s), again\n", attempt + 1, why);
  }
  unlink(js);
  ck_assert_msg(r.status == 0, "jctlab replay --lab 2 exited %d:\n%s", r.status, r.err);
  ck_assert_str_eq(json_string_value(jget(doc, "fabric.transport")), "verbs (rxe lab)");
  json_t *c = jget(doc, "cases.0");
  ck_assert_msg(!json_object_get(c, "invalid_why"), "invalid: %s",
                json_string_value(json_object_get(c, "invalid_why")));
  ck_assert_int_eq(jint(c, "drops.injectors.0.dropped"), 2);
  ck_assert_int_eq(jint(c, "device_counters.rcvd_seq_err"), 2);
  ck_assert_int_ge(jint(c, "device_counters.out_of_seq_request"), 2);
  json_t *b = jget(c, "baseline_device_counters");
  ck_assert_int_eq(json_integer_value(json_object_get(b, "rcvd_seq_err")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(b, "out_of_seq_request")), 0);
  ck_assert_int_gt(jint(b, "sent_pkts"), 0);
  ck_assert_int_gt(jint(c, "baseline.median_jct_ns"), 0);
  ck_assert_int_gt(jint(c, "faulted.median_jct_ns"), 0);
  json_decref(doc);
  result_free(&r);
  sleep_ms(500);
  ck_assert_int_eq(count_procs("qemu-system-x86_64"), qemu_before);
}
END_TEST

Suite *lab_replay_suite(void) {
  Suite *s = suite_create("lab_replay");
  TCase *t = tcase_create("rxe");
  tcase_set_timeout(t, LIMIT_S + 60);
  tcase_add_test(t, test_one_drop_one_nak);
  suite_add_tcase(s, t);
  return s;
}
