/* Injectors end to end (issue 4's acceptance): `jctlab run --inject` as a
 * user runs it (the built binary, JCT_BINARY), ranks in network namespaces
 * over the uroce transport, the results read back from the run's JSON,
 * its fault log and `jctlab inspect --json` of its captures.
 *   - One data packet dropped by QP and PSN: exactly one NAK and one
 *     go-back-N rewind in the capture of what crossed the switch.
 *   - The last packet of a message dropped: a retransmit timeout instead,
 *     and the job takes about one timeout longer.
 *   - A PFC pause storm with PFC on: no drops, and the job takes about as
 *     much longer as the storm kept the port paused; with the PFC watchdog
 *     on, the watchdog's drops.
 *   - The same seed drops the same packet; another seed another.
 *   - Bad specs exit 2 with one line naming the bad word.
 *   - --pcap-drops holds one frame per dropped frame.
 *   - netem's duplicate: the job completes, the receivers count the
 *     duplicates, a seed repeats them; netem's rate: the JCT of links at
 *     that rate.
 *
 * Facts of the runs used here (harness/orch/run.c, harness/transport/uroce/ranks.c): rank i is
 * 198.18.0.(i+1); connection c's destination end is QP 0x101 + 2c, where
 * its data goes, and its PSNs start at (c * 2654435761) & 0xffffff, so
 * connection 0's start at 0. With path MTU 4096 a 4-rank ring of 1 MiB
 * sends 256 KiB chunks, 64 packets per message, and connection 0 carries
 * 2(N-1) = 6 messages: PSNs 0 to 383.
 * Each jctlab is bounded in time: a hung one is killed and the test fails. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "craft.h"
#include "suites.h"
#include "testkit.h"

Suite *inject_suite(void); /* until suites.h declares it */

#define RUN_LIMIT_S 20.0
/* Connection 0's data: QP 0x101, PSNs from 0. */
#define CONN0_QP 0x101
/* The local ACK timeout exponent of these tests: 4.096 us * 2^14 = 67 ms
 * (NCCL's 20 is 4.3 s). */
#define TIMEOUT_EXP "14"
#define TIMEOUT_NS (4096.0 * (1 << 14))
/* A PFC frame's pause at 100 Mbit/s: 65535 quanta of 512 bit times. */
#define QUANTA_NS (65535.0 * 512 * 1e9 / 1e8)

/* `jctlab run` with base's options (NULL-terminated), then the test's,
 * then --json FILE: exit 0, a valid run; returns its JSON. */
#define MAX_ARGS 40
static json_t *run_ok_from(const char *const base[], const char *const extra[]) {
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *argv[MAX_ARGS];
  size_t n = 0;
  argv[n++] = JCT_BINARY;
  for (size_t i = 0; base[i]; i++)
    argv[n++] = (char *)base[i];
  for (size_t i = 0; extra[i]; i++) {
    ck_assert_uint_lt(n, MAX_ARGS - 3);
    argv[n++] = (char *)extra[i];
  }
  argv[n++] = "--json";
  argv[n++] = js;
  argv[n] = NULL;
  result_t r = run_jctlab(argv, NULL, RUN_LIMIT_S);
  ck_assert_msg(r.status == 0, "jctlab run exit %d: %s", r.status, r.err);
  json_error_t je;
  json_t *doc = json_load_file(js, 0, &je);
  unlink(js);
  ck_assert_msg(doc != NULL, "run JSON: %s", je.text);
  ck_assert_msg(jbool(doc, "valid"), "invalid run: %s",
                json_string_value(json_object_get(doc, "invalid_why")));
  ck_assert_int_eq(jint(doc, "fabric.harness_losses"), 0);
  result_free(&r);
  return doc;
}

/* The options every run here shares, then the test's. */
static json_t *run_ok(const char *const extra[]) {
  static const char *const base[] = {"run",    "--synth", "ring",   "--ranks", "4",
                                     "--rate", "100mbit", "--reps", "1",       NULL};
  return run_ok_from(base, extra);
}

/* `jctlab inspect --json FILE`'s document. */
static json_t *inspect(const char *pcap) {
  char *argv[] = {JCT_BINARY, "inspect", "--json", (char *)pcap, NULL};
  result_t r = run_cmd(argv, NULL, RUN_LIMIT_S);
  ck_assert_msg(r.status == 0, "inspect exit %d: %s", r.status, r.err);
  json_error_t je;
  json_t *doc = json_loads(r.out, 0, &je);
  ck_assert_msg(doc != NULL, "inspect JSON: %s at line %d", je.text, je.line);
  result_free(&r);
  return doc;
}

/* The fault log's lines, each parsed; fails on a line that is not JSON. */
static json_t *read_log(const char *path) {
  char *text = slurp(path, NULL);
  json_t *lines = json_array();
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    ck_assert_msg(json_is_object(o), "%s: not a JSON object: %s", path, line);
    json_array_append_new(lines, o);
  }
  free(text);
  return lines;
}

/* 1. One data packet of connection 0 (PSN 5) dropped on the way: the
 * receiver sees PSN 6 out of sequence and NAKs, the sender goes back to 5.
 * Nothing waits for a timer. */
START_TEST(drop_one_psn_naks) {
  char pcap[256], log[256];
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  craft_tmpname(log, sizeof log, ".log");
  const char *const args[] = {"--bytes",    "1MiB", "--inject",    "drop psn=5 qp=0x101",
                              "--pcap-out", pcap,   "--fault-log", log,
                              NULL};
  json_t *run = run_ok(args);
  json_t *cap = inspect(pcap);
  json_t *lines = read_log(log);
  unlink(pcap);
  unlink(log);

  ck_assert_int_eq(jint(run, "injectors.0.dropped"), 1);
  ck_assert_int_eq(jint(run, "fabric.drops"), 1);
  ck_assert_int_eq(jint(run, "fabric.drops_by_reason.injector"), 1);
  ck_assert_int_eq(jint(run, "transport.naks"), 1);
  ck_assert_int_eq(jint(run, "transport.timeouts"), 0);
  ck_assert_int_gt(jint(run, "transport.retransmitted_packets"), 0);

  ck_assert_int_eq(jint(cap, "totals.nak_seq_err"), 1);
  ck_assert_int_eq(jint(cap, "totals.rewinds"), 1);
  ck_assert_int_eq(jint(cap, "totals.timeouts"), 0);
  /* The capture is after the drop: PSN 5 is missing once, then re-sent. */
  ck_assert_int_eq(jint(cap, "totals.gaps"), 1);
  ck_assert_int_eq(jint(cap, "totals.gap_psns"), 1);
  ck_assert_int_eq(jint(cap, "totals.messages"), jint(cap, "totals.messages_completed"));

  ck_assert_uint_eq(json_array_size(lines), 1);
  json_t *l = json_array_get(lines, 0);
  ck_assert_str_eq(json_string_value(jget(l, "action")), "drop");
  ck_assert_str_eq(json_string_value(jget(l, "kind")), "drop");
  ck_assert_int_eq(jint(l, "qp"), CONN0_QP);
  ck_assert_int_eq(jint(l, "psn"), 5);
  ck_assert_str_eq(json_string_value(jget(l, "src")), "198.18.0.1");
  ck_assert_str_eq(json_string_value(jget(l, "dst")), "198.18.0.2");
  json_decref(lines);
  json_decref(cap);
  json_decref(run);
}
END_TEST

/* 1b. A target that names no packet of the run (connection 0 ends at PSN
 * 383): the injector acts on nothing, so the run is invalid, exit 3, the
 * reason naming the injector and its target; the same injector with a PSN
 * the run sends is valid (drop_one_psn_naks). */
START_TEST(idle_target_invalid) {
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *argv[] = {
      JCT_BINARY, "run",    "--synth", "ring",    "--ranks", "4",        "--rate",
      "100mbit",  "--reps", "1",       "--bytes", "1MiB",    "--inject", "drop psn=5000 qp=0x101",
      "--json",   js,       NULL};
  result_t r = run_cmd(argv, NULL, RUN_LIMIT_S);
  ck_assert_msg(r.status == 3, "exit %d (want 3, invalid): %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "'drop psn=5000 qp=0x101' acted on nothing"));
  json_error_t je;
  json_t *doc = json_load_file(js, 0, &je);
  unlink(js);
  ck_assert_msg(doc != NULL, "run JSON: %s", je.text);
  ck_assert(!jbool(doc, "valid"));
  const char *why = json_string_value(json_object_get(doc, "invalid_why"));
  ck_assert_ptr_nonnull(why);
  ck_assert_ptr_nonnull(strstr(why, "injector #1 'drop psn=5000 qp=0x101' acted on nothing"));
  json_decref(doc);
  result_free(&r);
}
END_TEST

/* 2. The last packet of connection 0's last message (PSN 383) dropped:
 * nothing follows it to reveal the gap, so no NAK; the sender's local ACK
 * timer expires and it re-sends. The job takes about one timeout longer:
 * less than a full one, as the timer was armed when the message started
 * (it restarts only on progress), more than half of it. */
START_TEST(drop_tail_times_out) {
  char pcap[256];
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  const char *const base_args[] = {"--bytes", "1MiB", "--timeout", TIMEOUT_EXP,
                                   "--reps",  "3",    NULL};
  json_t *base = run_ok(base_args);
  const char *const args[] = {"--bytes",    "1MiB",     "--timeout",
                              TIMEOUT_EXP,  "--inject", "drop psn=383 qp=0x101",
                              "--pcap-out", pcap,       NULL};
  json_t *run = run_ok(args);
  json_t *cap = inspect(pcap);
  unlink(pcap);

  ck_assert_int_eq(jint(run, "injectors.0.dropped"), 1);
  ck_assert_int_eq(jint(run, "transport.timeouts"), 1);
  ck_assert_int_eq(jint(run, "transport.naks"), 0);
  ck_assert_int_eq(jint(cap, "totals.timeouts"), 1);
  ck_assert_int_eq(jint(cap, "totals.nak_seq_err"), 0);
  ck_assert_int_eq(jint(cap, "totals.rewinds"), 0);

  double lossless = (double)jint(base, "jct.median_ns");
  double lossy = (double)jint(run, "jct.median_ns");
  double ratio = (lossy - lossless) / TIMEOUT_NS;
  printf("inject: tail drop: JCT %.1f ms, lossless %.1f ms: +%.1f ms, %.2f x the timeout "
         "(%.1f ms)\n",
         lossy / 1e6, lossless / 1e6, (lossy - lossless) / 1e6, ratio, TIMEOUT_NS / 1e6);
  /* The retransmit timer runs from the QP's last progress (an ACK), not
   * from the lost packet, and that message's own sending overlaps it: the
   * job waits less than a whole timeout, but it waits. */
  ck_assert_msg(ratio >= 0.25 && ratio <= 3, "JCT increase %.2f x the timeout", ratio);
  json_decref(cap);
  json_decref(run);
  json_decref(base);
}
END_TEST

/* 3. A pause storm on rank 1's port, PFC on. Frames every 1 ms from 50 ms
 * for 200 ms, each pausing priority 3 for 65535 quanta of 512 bit times:
 * 335.5 ms at 100 Mbit/s. Each frame renews the pause, so the port stays
 * paused from the first frame until the last frame's 335.5 ms run out:
 * 199 ms + 335.5 ms, longer than for=. Meanwhile the switch's buffer for
 * that port fills and its XOFFs stop the senders upstream: nothing is
 * dropped, and the whole ring waits about that long. */
START_TEST(pause_storm_lossless) {
  /* The lossless JCT varies by up to 20% from run to run: the median of 3. */
  const char *const base_args[] = {"--bytes", "4MiB", "--reps", "3", NULL};
  json_t *base = run_ok(base_args);
  const char *const args[] = {"--bytes", "4MiB", "--inject",
                              "pause prio=3 quanta=65535 rate=1000/s for=200ms port=1 at=50ms",
                              NULL};
  json_t *run = run_ok(args);

  ck_assert_int_eq(jint(run, "fabric.drops"), 0);
  ck_assert_int_eq(jint(run, "transport.retransmitted_packets"), 0);
  ck_assert_int_eq(jint(run, "injectors.0.generated"), 200);
  ck_assert_int_gt(jint(run, "fabric.pfc_xoff_sent"), 0);
  double paused = (double)jint(run, "fabric.paused_ns");
  double expect = 199e6 + QUANTA_NS;
  ck_assert_msg(fabs(paused - expect) <= 2e6, "paused %.3f ms, expected %.3f ms", paused / 1e6,
                expect / 1e6);

  double lossless = (double)jint(base, "jct.median_ns");
  double stormy = (double)jint(run, "jct.median_ns");
  double ratio = (stormy - lossless) / paused;
  printf("inject: pause storm: JCT %.1f ms, lossless %.1f ms: +%.1f ms, %.2f x the paused "
         "time (%.1f ms)\n",
         stormy / 1e6, lossless / 1e6, (stormy - lossless) / 1e6, ratio, paused / 1e6);
  ck_assert_msg(ratio >= 0.7 && ratio <= 1.5, "JCT increase %.2f x the paused time", ratio);
  json_decref(run);
  json_decref(base);
}
END_TEST

/* 4. The same storm for 500 ms with the PFC watchdog (200 ms detection):
 * the watchdog declares the storm and drops the queue's frames. The
 * senders recover by timeout: exponent 16 (268 ms) with 7 retries outlasts
 * the storm and the watchdog's 200 ms restoration. */
START_TEST(pause_storm_watchdog) {
  const char *const args[] = {"--bytes",
                              "4MiB",
                              "--timeout",
                              "16",
                              "--pfc-watchdog",
                              "--inject",
                              "pause prio=3 quanta=65535 rate=1000/s for=500ms port=1 at=50ms",
                              NULL};
  json_t *run = run_ok(args);
  json_int_t wd = jint(run, "fabric.drops_by_reason.pfc_watchdog");
  printf("inject: pause storm with the watchdog: %lld watchdog drops, %lld timeouts\n",
         (long long)wd, (long long)jint(run, "transport.timeouts"));
  ck_assert_int_gt(wd, 0);
  ck_assert_int_eq(jint(run, "fabric.drops"), wd);
  ck_assert_int_eq(jint(run, "injectors.0.generated"), 500);
  ck_assert_int_eq(jint(run, "injectors.0.dropped"), 0);
  ck_assert_int_gt(jint(run, "transport.retransmitted_packets"), 0);
  json_decref(run);
}
END_TEST

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* One seeded run of test 5, read back from its fault log. */
typedef struct {
  json_int_t inj_seed;
  json_t *data_drops;   /* [rep, qp, psn] of each dropped data packet, sorted */
  size_t ack_drops;     /* dropped ACKs and NAKs */
  size_t retransmitted; /* drops the log marks as retransmissions */
} seeded_t;

static seeded_t seeded_drops(const char *seed, const char *spec) {
  char log[256];
  craft_tmpname(log, sizeof log, ".log");
  const char *const args[] = {"--bytes",  "2MiB", "--timeout",   TIMEOUT_EXP, "--seed", seed,
                              "--inject", spec,   "--fault-log", log,         NULL};
  json_t *run = run_ok(args);
  json_t *lines = read_log(log);
  unlink(log);
  seeded_t r = {.inj_seed = jint(run, "injectors.0.seed"), .data_drops = json_array()};
  ck_assert_int_eq((json_int_t)json_array_size(lines), jint(run, "injectors.0.dropped"));
  size_t n = json_array_size(lines), i, nd = 0;
  uint64_t *keys = calloc(n ? n : 1, sizeof *keys);
  json_t *l;
  json_array_foreach(lines, i, l) {
    ck_assert_str_eq(json_string_value(jget(l, "action")), "drop");
    ck_assert_int_eq(jint(l, "rep"), 0); /* --reps 1: the one faulted repetition */
    ck_assert(json_is_boolean(jget(l, "retransmission")));
    r.retransmitted += json_is_true(jget(l, "retransmission"));
    if (!strcmp(json_string_value(jget(l, "opcode")), "RC_ACKNOWLEDGE")) {
      r.ack_drops++;
      continue;
    }
    keys[nd++] =
        (uint64_t)jint(l, "rep") << 48 | (uint64_t)jint(l, "qp") << 24 | (uint64_t)jint(l, "psn");
  }
  qsort(keys, nd, sizeof *keys, cmp_u64);
  for (i = 0; i < nd; i++)
    json_array_append_new(r.data_drops, json_pack("[I,I,I]", (json_int_t)(keys[i] >> 48),
                                                  (json_int_t)(keys[i] >> 24 & 0xffffff),
                                                  (json_int_t)(keys[i] & 0xffffff)));
  free(keys);
  json_decref(lines);
  json_decref(run);
  return r;
}

static void print_drops(const char *what, const seeded_t *r) {
  char *s = json_dumps(r->data_drops, JSON_COMPACT);
  printf("inject: %s: (rep, qp, psn) of data dropped %s; %zu ACKs dropped\n", what, s ? s : "?",
         r->ack_drops);
  free(s);
}

/* 5. The same seed drops the same packets; another seed others. Drops
 * are listed sorted, since frames of different ports reach the injector in
 * an order that depends on real time. */
START_TEST(seeded_runs_identical) {
  seeded_t a = seeded_drops("7", "drop p=0.002"), b = seeded_drops("8", "drop p=0.002");
  print_drops("seed 7", &a);
  print_drops("seed 8", &b);
  ck_assert_int_ne(a.inj_seed, b.inj_seed);
  ck_assert_uint_gt(json_array_size(a.data_drops), 0);
  ck_assert_uint_gt(json_array_size(b.data_drops), 0);
  ck_assert_msg(!json_equal(a.data_drops, b.data_drops), "seeds 7 and 8 dropped the same packets");
  json_decref(a.data_drops);
  json_decref(b.data_drops);
}
END_TEST

/* 5a. The property (issue 16): the same seed, 50 runs, the same data
 * packets dropped, each as often, though which PSNs go-back-N sends twice
 * depends on the fabric's timing (a copy of a PSN that was never lost
 * meets its first copy's fate; injectors/draw.c). ACKs are the exception
 * the README states: which PSNs get an ACK depends on coalescing, so only
 * the ACKs that exist repeat their fate; they are counted, not compared. */
START_TEST(fifty_seeded_runs_identical) {
  enum { RUNS = 50 };
  seeded_t first = seeded_drops("7", "drop p=0.03");
  print_drops("seed 7, run 1", &first);
  ck_assert_uint_gt(json_array_size(first.data_drops), 0);
  size_t retransmitted = first.retransmitted, acks = first.ack_drops;
  for (int i = 2; i <= RUNS; i++) {
    seeded_t r = seeded_drops("7", "drop p=0.03");
    ck_assert_int_eq(r.inj_seed, first.inj_seed);
    if (!json_equal(r.data_drops, first.data_drops)) {
      print_drops("seed 7, another run", &r);
      ck_abort_msg("seed 7: run %d dropped other data packets than run 1", i);
    }
    retransmitted += r.retransmitted;
    acks += r.ack_drops;
    json_decref(r.data_drops);
  }
  printf("inject: %d runs: %zu data drops each; %zu drops of retransmissions, %zu of ACKs in all\n",
         RUNS, json_array_size(first.data_drops), retransmitted, acks);
  /* At 3% some go-back copies of lost PSNs are lost again: the loss count,
   * not the timing, keys them. */
  ck_assert_uint_gt(retransmitted, 0);
  json_decref(first.data_drops);
}
END_TEST

/* 5b. ACK loss recovers: a repeated ACK (the same PSN, acknowledging a
 * retransmission) draws anew, so 30% ACK loss costs timeouts, not the run
 * (a key without the ACK's place in its flow dropped one ACK forever). */
START_TEST(ack_loss_recovers) {
  const char *const args[] = {
      "--bytes", "1MiB", "--timeout", "10", "--inject", "drop p=0.3 where=\"less 100\"", NULL};
  json_t *run = run_ok(args);
  ck_assert_int_gt(jint(run, "injectors.0.dropped"), 0);
  ck_assert_int_gt(jint(run, "transport.timeouts"), 0);
  json_decref(run);
}
END_TEST

/* 6. A spec that does not parse: exit 2 before any namespace is made,
 * nothing on stdout, one line on stderr naming the spec and the word. */
START_TEST(bad_specs) {
  static const struct {
    const char *spec, *word;
  } cases[] = {{"drop p=1.5", "p=1.5"},
               {"drop model=foo", "model=foo"},
               {"drop where=\"udp port\"", "where"},
               {"delayy 1ms", "delayy"},
               {"pause prio=9 port=1", "prio=9"},
               {"duplicate p=1.5", "p=1.5"},
               {"rate 10mbps-ish", "10mbps-ish"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *argv[] = {JCT_BINARY, "run",  "--synth", "ring", "--ranks",  "4",
                    "--bytes",  "1MiB", "--reps",  "1",    "--inject", (char *)cases[i].spec,
                    NULL};
    result_t r = run_cmd(argv, NULL, 10);
    ck_assert_msg(r.status == 2, "'%s': exit %d (stderr: %s)", cases[i].spec, r.status, r.err);
    ck_assert_str_eq(r.out, "");
    char *nl = strchr(r.err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "'%s': not one line: %s", cases[i].spec, r.err);
    ck_assert_msg(strstr(r.err, cases[i].word), "'%s': %s does not name %s", cases[i].spec, r.err,
                  cases[i].word);
    result_free(&r);
  }
}
END_TEST

/* 7. --pcap-drops: one frame in the capture per frame the injector dropped. */
START_TEST(pcap_drops_counts) {
  char drops[256];
  craft_tmpname(drops, sizeof drops, ".pcap");
  const char *const args[] = {"--bytes",      "1MiB",     "--timeout",
                              TIMEOUT_EXP,    "--inject", "drop p=0.01 seed=3",
                              "--pcap-drops", drops,      NULL};
  json_t *run = run_ok(args);
  json_t *cap = inspect(drops);
  unlink(drops);
  json_int_t dropped = jint(run, "injectors.0.dropped");
  ck_assert_int_gt(dropped, 0);
  ck_assert_int_eq(jint(run, "fabric.drops_by_reason.injector"), dropped);
  ck_assert_int_eq(jint(cap, "capture.frames"), dropped);
  ck_assert_int_eq(jint(cap, "totals.roce_packets"), dropped);
  ck_assert(jbool(cap, "capture.nanosecond"));
  json_decref(cap);
  json_decref(run);
}
END_TEST

/* 8. netem's rate: `rate 10mbit` on every port of a 50 Mbit/s fabric
 * makes a 2-rank ring take what 10 Mbit/s links make it take, measured in
 * the same test (--rate 10mbit, no injector), within 5%; and never less
 * than the bytes each rank sends (the whole buffer, in two halves) at
 * 10 Mbit/s. With overhead=24, the switch's own per-frame overhead
 * (preamble, FCS, gap), the injector is that link frame for frame. */
START_TEST(rate_paces_the_job) {
  static const char *const slow[] = {"run",    "--synth", "ring", "--ranks", "2",      "--bytes",
                                     "512KiB", "--reps",  "3",    "--rate",  "10mbit", NULL};
  static const char *const fast[] = {"run",    "--synth", "ring", "--ranks", "2",      "--bytes",
                                     "512KiB", "--reps",  "3",    "--rate",  "50mbit", NULL};
  const char *const none[] = {NULL};
  const char *const rate[] = {"--inject", "rate 10mbit", NULL};
  const char *const exact[] = {"--inject", "rate 10mbit overhead=24", NULL};
  json_t *link = run_ok_from(slow, none);
  json_t *paced = run_ok_from(fast, rate);
  json_t *framed = run_ok_from(fast, exact);
  double want = jnum(link, "jct.median_ns"), got = jnum(paced, "jct.median_ns"),
         got24 = jnum(framed, "jct.median_ns"), floor_ns = 512.0 * 1024 * 8 / 1e7 * 1e9;
  printf("inject: 2-rank ring of 512 KiB: 10 Mbit/s links %.1f ms; 50 Mbit/s with 'rate "
         "10mbit' %.1f ms, with overhead=24 %.1f ms; the payload alone %.1f ms\n",
         want / 1e6, got / 1e6, got24 / 1e6, floor_ns / 1e6);
  ck_assert_msg(fabs(got / want - 1) <= 0.05, "rate 10mbit: %.0f ns, 10 Mbit/s links %.0f", got,
                want);
  ck_assert_msg(fabs(got24 / want - 1) <= 0.05, "overhead=24: %.0f ns, links %.0f", got24, want);
  ck_assert_double_ge(got, floor_ns);
  ck_assert_int_eq(jint(paced, "injectors.0.held"), jint(paced, "injectors.0.matched"));
  ck_assert_int_eq(jint(paced, "transport.retransmitted_packets"), 0);
  json_decref(link);
  json_decref(paced);
  json_decref(framed);
}
END_TEST

/* The data packets (qp, psn) a run's fault log shows duplicated, sorted. */
static json_t *duplicated_data(const char *log, size_t *lines) {
  json_t *all = read_log(log), *e, *out = json_array();
  size_t i;
  *lines = json_array_size(all);
  json_array_foreach(all, i, e) {
    ck_assert_str_eq(json_string_value(json_object_get(e, "action")), "duplicate");
    const char *op = json_string_value(json_object_get(e, "opcode"));
    if (!op || strcmp(op, "RC_ACKNOWLEDGE") == 0) continue;
    json_int_t k = json_integer_value(json_object_get(e, "qp")) << 24 |
                   json_integer_value(json_object_get(e, "psn"));
    size_t at = 0;
    while (at < json_array_size(out) && json_integer_value(json_array_get(out, at)) < k)
      at++;
    json_array_insert_new(out, at, json_integer(k));
  }
  json_decref(all);
  return out;
}

/* 9. netem's duplicate: with p=0.2 the job completes, valid, without a
 * retransmission; the injector's count is about p of the frames it drew
 * for (the copies pass it too, uncounted); every copy is the fabric's
 * (frames out = frames in + duplicates); the receivers count exactly the
 * data packets the fault log shows duplicated as duplicates (uroce's
 * responder re-ACKs them); and the same seed duplicates the same data
 * packets. */
START_TEST(duplicate_completes) {
  char log[2][256];
  json_t *runs[2], *data[2];
  for (int k = 0; k < 2; k++) {
    craft_tmpname(log[k], sizeof log[k], ".log");
    const char *const args[] = {"--bytes",         "1MiB",        "--inject",
                                "duplicate p=0.2", "--fault-log", log[k],
                                "--seed",          "5",           NULL};
    runs[k] = run_ok(args);
    size_t lines;
    data[k] = duplicated_data(log[k], &lines);
    unlink(log[k]);
    json_t *r = runs[k];
    json_int_t dup = jint(r, "injectors.0.duplicated"), seen = jint(r, "injectors.0.seen");
    double n = (double)(seen - dup), mu = 0.2 * n, half = 3.29 * sqrt(n * 0.2 * 0.8);
    printf("inject: duplicate p=0.2, seed 5: %lld of %.0f frames duplicated (%zu data), "
           "%lld duplicates received, JCT %.1f ms\n",
           (long long)dup, n, json_array_size(data[k]),
           (long long)jint(r, "transport.duplicate_packets"), jnum(r, "jct.median_ns") / 1e6);
    ck_assert_msg(fabs((double)dup - mu) <= half, "%lld duplicated, want %.0f +- %.0f",
                  (long long)dup, mu, half);
    ck_assert_int_eq((json_int_t)lines, dup);
    ck_assert_int_eq(jint(r, "fabric.duplicates"), dup);
    ck_assert_int_eq(jint(r, "fabric.frames_out"), jint(r, "fabric.frames_in") + dup);
    ck_assert_int_eq(jint(r, "transport.duplicate_packets"), (json_int_t)json_array_size(data[k]));
    ck_assert_int_eq(jint(r, "transport.retransmitted_packets"), 0);
  }
  ck_assert_uint_gt(json_array_size(data[0]), 0);
  ck_assert_msg(json_equal(data[0], data[1]), "seed 5 duplicated other data packets in run 2");
  for (int k = 0; k < 2; k++) {
    json_decref(runs[k]);
    json_decref(data[k]);
  }
}
END_TEST

Suite *inject_suite(void) {
  Suite *s = suite_create("inject");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 30);
  tcase_add_test(core, drop_one_psn_naks);
  tcase_add_test(core, idle_target_invalid);
  tcase_add_test(core, drop_tail_times_out);
  tcase_add_test(core, seeded_runs_identical);
  tcase_add_test(core, ack_loss_recovers);
  tcase_add_test(core, pcap_drops_counts);
  tcase_add_test(core, duplicate_completes);
  suite_add_tcase(s, core);
  TCase *netem = tcase_create("netem");
  /* Its three paced runs take 2 s each here; a loop-bound one is run
   * again dilated x4, then x16 (testkit.c: 32 s). */
  tcase_set_timeout(netem, 200);
  tcase_add_test(netem, rate_paces_the_job);
  suite_add_tcase(s, netem);
  TCase *property = tcase_create("property");
  tcase_set_timeout(property, 240);
  /* Left out of the sanitizer pass (scripts/test): 49 repeats of one run,
   * whose time is the namespaces' and the paced links'; core's
   * seeded_runs_identical and ack_loss_recovers run the same code there,
   * and the injector suite's drops_independent_of_gbn_timing the draws of
   * go-back-N's copies under 50 timings. */
  tcase_set_tags(property, "sanitizer-skip");
  tcase_add_test(property, fifty_seeded_runs_identical);
  suite_add_tcase(s, property);
  TCase *pfc = tcase_create("pfc");
  /* Each test makes two runs, each allowed RUN_LIMIT_S (30 s timed out a
   * loaded -j2 ctest here, the runs within their own limits). */
  tcase_set_timeout(pfc, 2 * RUN_LIMIT_S + 20);
  tcase_add_test(pfc, pause_storm_lossless);
  tcase_add_test(pfc, pause_storm_watchdog);
  suite_add_tcase(s, pfc);
  TCase *limits = tcase_create("limits");
  tcase_set_timeout(limits, 20);
  tcase_add_test(limits, bad_specs);
  suite_add_tcase(s, limits);
  return s;
}
