/* The `jctlab` command line, run as a user runs it (the built binary,
 * JCT_BINARY): `inspect --json` on the shipped trace agrees with what
 * Wireshark counts in it (traces/README.md); `--packets` agrees with tshark
 * packet for packet when tshark is installed; the timeline parses; bad input
 * gives one line on stderr and exit status 2; jctlab maps neither rdma-core
 * nor Open MPI, whose modules it loads when `agent` or `rank` needs them,
 * and says which module is missing. Also the parsers of numbers
 * with units behind --link-rate, --delay and --scale (units.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "craft.h"
#include "jctlab/decode.h"
#include "jctlab/inspect.h"
#include "suites.h"
#include "testkit.h"
#include "harness/base/units.h"

#define DEFAULT_TRACE JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap"

/* Exit 2 and exactly one line on stderr that contains each of the words. */
static void expect_bad(char *const argv[], const char *word1, const char *word2) {
  result_t r = run_jctlab(argv, NULL, 120);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(count_lines(r.err) == 1, "stderr: %s", r.err);
  ck_assert_msg(strstr(r.err, word1) != NULL, "stderr: %s (wanted %s)", r.err, word1);
  if (word2) ck_assert_msg(strstr(r.err, word2) != NULL, "stderr: %s (wanted %s)", r.err, word2);
  result_free(&r);
}

static json_int_t get_int(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  ck_assert_msg(json_is_integer(v), "%s is not an integer", key);
  return json_integer_value(v);
}

START_TEST(default_trace_json) {
  char *argv[] = {JCT_BINARY, "inspect", "--json", NULL};
  result_t r = run_jctlab(argv, NULL, 120);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_str_eq(r.err, "");
  json_error_t je;
  json_t *doc = json_loads(r.out, 0, &je);
  ck_assert_msg(doc != NULL, "JSON: %s at line %d", je.text, je.line);
  ck_assert_int_eq(get_int(doc, "jctlab_inspect"), 1);
  ck_assert(json_is_null(json_object_get(doc, "truncated")));
  json_t *cap = json_object_get(doc, "capture");
  ck_assert_str_eq(json_string_value(json_object_get(cap, "format")), "pcap");
  ck_assert_int_eq(get_int(cap, "frames"), 2889);

  /* Wireshark's figures (traces/README.md). */
  json_t *tot = json_object_get(doc, "totals");
  ck_assert_int_eq(get_int(tot, "frames"), 2889);
  ck_assert_int_eq(get_int(tot, "roce_packets"), 2799);
  ck_assert_int_eq(get_int(tot, "nak_seq_err"), 26);
  ck_assert_int_eq(get_int(tot, "retransmitted_packets"), 971);
  ck_assert_int_eq(get_int(tot, "bad_icrc"), 0);
  ck_assert_int_eq(get_int(tot, "other_frames") + get_int(tot, "malformed_frames"), 2889 - 2799);
  static const struct {
    int opcode;
    const char *name;
    json_int_t packets;
  } want[] = {{0x00, "RC_SEND_FIRST", 122},         {0x01, "RC_SEND_MIDDLE", 246},
              {0x02, "RC_SEND_LAST", 127},          {0x06, "RC_RDMA_WRITE_FIRST", 71},
              {0x07, "RC_RDMA_WRITE_MIDDLE", 2038}, {0x08, "RC_RDMA_WRITE_LAST", 73},
              {0x11, "RC_ACKNOWLEDGE", 122}};
  /* NAKs on the flow that carries them, and as received by the flow that
   * re-sends (the text table's column): 21 + 5 on the two data flows. */
  json_t *nak_flows = json_object_get(doc, "flows");
  json_int_t carried = 0, received = 0;
  for (size_t i = 0; i < json_array_size(nak_flows); i++) {
    json_t *fl = json_array_get(nak_flows, i), *peer = json_object_get(fl, "peer");
    carried += get_int(fl, "nak_seq_err");
    received += get_int(fl, "naks_received");
    if (json_is_integer(peer))
      ck_assert_int_eq(
          get_int(fl, "naks_received"),
          get_int(json_array_get(nak_flows, (size_t)json_integer_value(peer)), "nak_seq_err"));
    if (get_int(fl, "rewinds"))
      ck_assert_int_eq(get_int(fl, "naks_received"), get_int(fl, "rewinds"));
  }
  ck_assert_int_eq(carried, 26);
  ck_assert_int_eq(received, 26);
  json_t *ops = json_object_get(doc, "opcodes");
  ck_assert_uint_eq(json_array_size(ops), sizeof want / sizeof want[0]);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    json_t *o = json_array_get(ops, i);
    ck_assert_int_eq(get_int(o, "opcode"), want[i].opcode);
    ck_assert_str_eq(json_string_value(json_object_get(o, "name")), want[i].name);
    ck_assert_int_eq(get_int(o, "packets"), want[i].packets);
  }
  /* (src, dst, QP 0x11 / 0x12) both ways; per-flow figures add up. */
  json_t *flows = json_object_get(doc, "flows");
  ck_assert_uint_eq(json_array_size(flows), 4);
  json_int_t pkts = 0, retx = 0;
  size_t i;
  json_t *f;
  json_array_foreach(flows, i, f) {
    pkts += get_int(f, "packets");
    retx += get_int(f, "retransmitted_packets");
    ck_assert(json_is_array(json_object_get(f, "opcodes")));
  }
  ck_assert_int_eq(pkts, 2799);
  ck_assert_int_eq(retx, 971);
  ck_assert(json_is_array(json_object_get(doc, "links")));
  /* Every reason key is present, and they add up. */
  static const char *const groups[][2] = {{"other", "other_frames"},
                                          {"malformed", "malformed_frames"}};
  size_t keys = 0;
  for (size_t g = 0; g < 2; g++) {
    json_t *by = json_object_get(doc, groups[g][0]);
    ck_assert(json_is_object(by));
    const char *k;
    json_t *v;
    json_int_t sum = 0;
    json_object_foreach(by, k, v) sum += json_integer_value(v);
    ck_assert_int_eq(sum, get_int(tot, groups[g][1]));
    keys += json_object_size(by);
  }
  ck_assert_uint_eq(keys, JCT_REASON__COUNT - 1);
  json_decref(doc);
  result_free(&r);
}
END_TEST

START_TEST(summary_json_file_and_rate) {
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *argv[] = {JCT_BINARY,    "inspect", "-r",    DEFAULT_TRACE, "--json", js,
                  "--link-rate", "25Gbit",  "--top", "2",           NULL};
  result_t r = run_jctlab(argv, NULL, 120);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  /* The summary took standard output. */
  ck_assert_ptr_nonnull(strstr(r.out, "Capture"));
  ck_assert_ptr_nonnull(strstr(r.out, "26 NAKs (PSN sequence error)"));
  ck_assert_ptr_nonnull(strstr(r.out, "971 packets"));
  ck_assert_ptr_nonnull(strstr(r.out, "Worst flows (2 of 4"));
  json_t *doc = json_load_file(js, 0, NULL);
  ck_assert_ptr_nonnull(doc);
  ck_assert_int_eq(get_int(json_object_get(doc, "capture"), "link_rate_bps"), 25000000000);
  json_decref(doc);
  unlink(js);
  result_free(&r);

  /* `--json TRACE`: a capture after --json is the trace, never overwritten. */
  char *argv2[] = {JCT_BINARY, "inspect", "--json", DEFAULT_TRACE, NULL};
  r = run_jctlab(argv2, NULL, 120);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "\"jctlab_inspect\": 1"));
  result_free(&r);
}
END_TEST

START_TEST(bad_input) {
  char *missing[] = {JCT_BINARY, "inspect", "/nonexistent/x.pcap", NULL};
  expect_bad(missing, "/nonexistent/x.pcap", "No such file");
  char *text[] = {JCT_BINARY, "inspect", JCT_SOURCE_DIR "/traces/README.md", NULL};
  expect_bad(text, "README.md", "not a capture file");
  char *opt[] = {JCT_BINARY, "inspect", "--bogus", NULL};
  expect_bad(opt, "--bogus", "unknown option");
  char *rate[] = {JCT_BINARY, "inspect", "--link-rate", "fast", NULL};
  expect_bad(rate, "--link-rate", "fast");
  char *two[] = {JCT_BINARY, "inspect", "--json", "--packets", NULL};
  expect_bad(two, "standard output", NULL);
  char *eq[] = {JCT_BINARY, "inspect", "--json=", NULL};
  expect_bad(eq, "--json=", "needs a file");
  char *cmd[] = {JCT_BINARY, "frobnicate", NULL};
  expect_bad(cmd, "frobnicate", "unknown command");
  /* Congestion control: a word that is not one, before anything is built. */
  char *cc[] = {JCT_BINARY, "run", "--synth", "incast", "--ranks", "4", "--bytes", "1MiB",
                "--cc", "reno", NULL};
  expect_bad(cc, "--cc", "'reno' is not none or dcqcn");
  char *ccp[] = {JCT_BINARY, "run", "--synth", "incast", "--ranks", "4", "--bytes", "1MiB",
                 "--cc-profile", "cx7", NULL};
  expect_bad(ccp, "--cc-profile", "'cx7'");
  char *ccd[] = {JCT_BINARY, "run", "--synth", "incast", "--ranks", "4", "--bytes", "1MiB",
                 "--cc-dilation", "0", NULL};
  expect_bad(ccd, "--cc-dilation", "'0'");
  char *ccv[] = {JCT_BINARY, "run", "--synth", "incast", "--ranks", "4", "--bytes", "1MiB",
                 "--transport", "verbs", "--lab", "4", "--cc", "dcqcn", NULL};
  expect_bad(ccv, "--cc dcqcn", "rxe has no congestion control");
  /* RDMA settings: their form, and none on uroce (no device there). */
  char *dv[] = {JCT_BINARY, "run", "--synth", "ring", "--ranks", "2", "--bytes", "64KiB",
                "--device", "rxe0", NULL};
  expect_bad(dv, "device: an RDMA device setting", "uroce transport has no RDMA device");
  char *dp[] = {JCT_BINARY, "run", "--synth", "ring", "--ranks", "2", "--bytes", "64KiB",
                "--lab", "2", "--device-port", "0", NULL};
  expect_bad(dp, "--device-port", "'0' is not 1 to 254");
  char *tc[] = {JCT_BINARY, "run", "--synth", "ring", "--ranks", "2", "--bytes", "64KiB",
                "--lab", "2", "--traffic-class", "300", NULL};
  expect_bad(tc, "--traffic-class", "'300' is not 0 to 255");
  char *ctr[] = {JCT_BINARY, "run", "--synth", "ring", "--ranks", "2", "--bytes", "64KiB",
                 "--lab", "2", "--counters", "np_cnp_sent,../x", NULL};
  expect_bad(ctr, "--counters", "'../x' is not a counter's name");

  char path[256];
  craft_tmpname(path, sizeof path, ".pcap");
  craft_pcap_t *p = craft_pcap_open(path, false, 105);
  craft_pcap_close(p);
  char *lt[] = {JCT_BINARY, "inspect", path, NULL};
  expect_bad(lt, path, "unsupported link type 105");
  unlink(path);
}
END_TEST

/* The shipped trace cut in the middle of a record: the frames before it are
 * reported, one warning line names the record, exit status 2. */
START_TEST(truncated_capture) {
  size_t len;
  char *all = slurp(DEFAULT_TRACE, &len);
  char path[256];
  craft_tmpname(path, sizeof path, ".pcap");
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(all, 1, 100000, f), 100000);
  fclose(f);
  free(all);
  char *argv[] = {JCT_BINARY, "inspect", "--json", path, NULL};
  result_t r = run_jctlab(argv, NULL, 120);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(count_lines(r.err) == 1, "stderr: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, path));
  ck_assert_ptr_nonnull(strstr(r.err, "truncated record "));
  json_t *doc = json_loads(r.out, 0, NULL);
  ck_assert_ptr_nonnull(doc);
  json_int_t frames = get_int(json_object_get(doc, "totals"), "frames");
  ck_assert_int_gt(frames, 0);
  ck_assert_int_lt(frames, 2889);
  const char *tr = json_string_value(json_object_get(doc, "truncated"));
  ck_assert_ptr_nonnull(tr);
  char want[64];
  snprintf(want, sizeof want, "truncated record %lld", (long long)frames + 1);
  ck_assert_msg(strstr(tr, want) != NULL, "%s", tr);
  json_decref(doc);
  result_free(&r);
  unlink(path);
}
END_TEST

/* No command writes a report, a schedule or JSON over a capture (as tshark
 * will not overwrite its input): each refuses with exit 2, names the file,
 * and the capture is left as it was, byte for byte. A file that is not a
 * capture is written as before. */
START_TEST(never_overwrites_a_capture) {
  size_t len;
  char *orig = slurp(JCT_SOURCE_DIR "/traces/ring8.pcap", &len);
  ck_assert_ptr_nonnull(orig);
  char cap[256], other[256];
  craft_tmpname(cap, sizeof cap, ".pcap");
  craft_tmpname(other, sizeof other, ".json");
  FILE *f = fopen(cap, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(orig, 1, len, f), len);
  fclose(f);
  char json_eq[300];
  snprintf(json_eq, sizeof json_eq, "--json=%s", cap);
  /* (`inspect --timeline CAP` reads CAP as the trace: the word after
   * --timeline or --json is a FILE only when it is not a capture.) */
  char *cmds[][12] = {
      {JCT_BINARY, "inspect", json_eq, DEFAULT_TRACE, NULL},
      {JCT_BINARY, "schedule", cap, "-o", cap, NULL},
      {JCT_BINARY, "schedule", DEFAULT_TRACE, "--json-report", cap, NULL},
      {JCT_BINARY, "synth", "ring", "--ranks", "2", "--bytes", "1MiB", "-o", cap, NULL},
      {JCT_BINARY, "replay", "--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--junit", cap,
       NULL},
  };
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
    result_t r = run_jctlab(cmds[i], NULL, 120);
    ck_assert_msg(r.status == 2 && strstr(r.err, cap) && strstr(r.err, "is a capture"),
                  "%s %s: exit %d: %s", cmds[i][1], cmds[i][2], r.status, r.err);
    result_free(&r);
    size_t now_len;
    char *now = slurp(cap, &now_len);
    ck_assert_msg(now && now_len == len && memcmp(now, orig, len) == 0, "%s %s changed the capture",
                  cmds[i][1], cmds[i][2]);
    free(now);
  }
  char *ok[] = {JCT_BINARY, "schedule", cap, "-o", other, "-q", NULL};
  result_t r = run_jctlab(ok, NULL, 120);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  result_free(&r);
  free(orig);
  unlink(cap);
  unlink(other);
}
END_TEST

static bool on_path(const char *prog) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
  return system(cmd) == 0;
}

/* `--packets` against Wireshark's dissector, line for line. */
START_TEST(packets_match_tshark) {
  if (!on_path("tshark")) {
    printf("tshark not installed: skipping the comparison\n");
    return;
  }
  char *ts[] = {"tshark",
                "-r",
                DEFAULT_TRACE,
                "-Y",
                "infiniband",
                "-T",
                "fields",
                "-e",
                "frame.number",
                "-e",
                "ip.src",
                "-e",
                "ip.dst",
                "-e",
                "infiniband.bth.destqp",
                "-e",
                "infiniband.bth.opcode",
                "-e",
                "infiniband.bth.psn",
                "-e",
                "infiniband.aeth.syndrome",
                NULL};
  result_t want = run_jctlab(ts, NULL, 120);
  ck_assert_msg(want.status == 0, "tshark: %s", want.err);
  char *jc[] = {JCT_BINARY, "inspect", "--packets", DEFAULT_TRACE, NULL};
  result_t got = run_jctlab(jc, NULL, 120);
  ck_assert_int_eq(got.status, 0);
  ck_assert_uint_eq(count_lines(want.out), 2799);
  char *sw, *sg;
  char *lw = strtok_r(want.out, "\n", &sw), *lg = strtok_r(got.out, "\n", &sg);
  size_t n = 0;
  for (; lw && lg; lw = strtok_r(NULL, "\n", &sw), lg = strtok_r(NULL, "\n", &sg), n++)
    ck_assert_msg(strcmp(lw, lg) == 0, "packet %zu: tshark '%s', jctlab '%s'", n + 1, lw, lg);
  ck_assert_msg(!lw && !lg, "tshark has %s lines than jctlab", lw ? "more" : "fewer");
  ck_assert_uint_eq(n, 2799);
  result_free(&want);
  result_free(&got);
}
END_TEST

START_TEST(timeline_json_lines) {
  char *argv[] = {JCT_BINARY, "inspect", "--timeline=json", NULL};
  result_t r = run_jctlab(argv, NULL, 120);
  ck_assert_int_eq(r.status, 0);
  size_t naks = 0, rewinds = 0, lines = 0;
  uint64_t last_t = 0;
  char *save;
  for (char *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
    json_error_t je;
    json_t *ev = json_loads(l, 0, &je);
    ck_assert_msg(ev != NULL, "line %zu: %s", lines + 1, je.text);
    const char *name = json_string_value(json_object_get(ev, "event"));
    ck_assert_ptr_nonnull(name);
    naks += strcmp(name, "nak") == 0;
    rewinds += strcmp(name, "rewind") == 0;
    uint64_t t = (uint64_t)get_int(ev, "t_ns");
    ck_assert_uint_ge(t, last_t); /* in capture order */
    last_t = t;
    if (strcmp(name, "nak") == 0) {
      ck_assert_int_eq(get_int(ev, "value"), 0x60);
      ck_assert_str_eq(json_string_value(json_object_get(ev, "src")), "198.18.0.2");
    }
    json_decref(ev);
  }
  ck_assert_uint_eq(naks, 26);
  ck_assert_uint_gt(rewinds, 0);
  result_free(&r);

  char *text[] = {JCT_BINARY, "inspect", "--timeline", DEFAULT_TRACE, NULL};
  r = run_jctlab(text, NULL, 120);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "198.18.0.2>198.18.0.1 qp 0x11"));
  ck_assert_ptr_nonnull(strstr(r.out, "PSN sequence error"));
  result_free(&r);
}
END_TEST

START_TEST(help_and_version) {
  char *v[] = {JCT_BINARY, "--version", NULL};
  result_t r = run_jctlab(v, NULL, 120);
  ck_assert_int_eq(r.status, 0);
  ck_assert_int_eq(strncmp(r.out, "jctlab ", 7), 0);
  result_free(&r);
  char *h[] = {JCT_BINARY, "help", "inspect", NULL};
  r = run_jctlab(h, NULL, 120);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "--timeline"));
  ck_assert_ptr_nonnull(strstr(r.out, "exit status"));
  result_free(&r);
  char *none[] = {JCT_BINARY, NULL};
  r = run_jctlab(none, NULL, 120);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "inspect"));
  result_free(&r);
}
END_TEST

/* The JSON of `jctlab inspect --json ARGS...` (exit 0), with stdin from
 * stdin_path (NULL: /dev/null). */
static json_t *inspect_json(const char *stdin_path, char *const args[]) {
  char *argv[16] = {JCT_BINARY, "inspect", "--json"};
  size_t n = 3;
  for (size_t i = 0; args[i]; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  spawn_opts_t o = {.stdin_path = stdin_path};
  result_t r = run_jctlab(argv, &o, 120);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  json_error_t je;
  json_t *doc = json_loads(r.out, 0, &je);
  ck_assert_msg(doc != NULL, "JSON: %s at line %d", je.text, je.line);
  result_free(&r);
  return doc;
}

static json_int_t frames_of(json_t *doc) {
  return get_int(json_object_get(doc, "totals"), "frames");
}

/* With no TRACE, a capture on standard input is read as tcpdump -r - reads
 * it: through a pipe or a file redirected in; /dev/null, as a terminal,
 * leaves the shipped trace (2,889 frames; ring8 has 1,176). An empty pipe
 * is one line and exit 2. */
START_TEST(stdin_when_piped) {
  char *none[] = {NULL};
  json_t *doc = inspect_json(NULL, none);
  ck_assert_int_eq(frames_of(doc), 2889);
  json_decref(doc);
  doc = inspect_json(JCT_SOURCE_DIR "/traces/ring8.pcap", none);
  ck_assert_int_eq(frames_of(doc), 1176);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "capture"), "file")),
                   "-");
  json_decref(doc);
  /* A named trace wins over standard input. */
  char *named[] = {DEFAULT_TRACE, NULL};
  doc = inspect_json(JCT_SOURCE_DIR "/traces/ring8.pcap", named);
  ck_assert_int_eq(frames_of(doc), 2889);
  json_decref(doc);

  char *pipe[] = {"/bin/sh",
                  "-c",
                  "cat \"$1\" | \"$2\" inspect --json",
                  "sh",
                  JCT_SOURCE_DIR "/traces/ring8.pcap",
                  JCT_BINARY,
                  NULL};
  result_t r = run_jctlab(pipe, NULL, 120);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  doc = json_loads(r.out, 0, NULL);
  ck_assert_ptr_nonnull(doc);
  ck_assert_int_eq(frames_of(doc), 1176);
  json_decref(doc);
  result_free(&r);

  char *empty[] = {"/bin/sh", "-c", ": | \"$1\" inspect", "sh", JCT_BINARY, NULL};
  expect_bad(empty, "standard input", "empty");
  char *empty_json[] = {"/bin/sh", "-c", ": | \"$1\" inspect --json", "sh", JCT_BINARY, NULL};
  expect_bad(empty_json, "standard input", "empty");
}
END_TEST

/* -Y/--filter: libpcap's expression chooses the frames analysed; the frames
 * read and filtered out are reported; frame numbers stay those of the file
 * (--packets is the same with a filter that keeps every RoCE packet). */
START_TEST(display_filter) {
  char *udp[] = {"-Y", "udp port 4791", DEFAULT_TRACE, NULL};
  json_t *doc = inspect_json(NULL, udp);
  json_t *cap = json_object_get(doc, "capture");
  ck_assert_str_eq(json_string_value(json_object_get(cap, "filter")), "udp port 4791");
  ck_assert_int_eq(get_int(cap, "frames_read"), 2889);
  ck_assert_int_eq(get_int(cap, "frames_filtered_out"), 2889 - 2799);
  ck_assert_int_eq(get_int(cap, "frames"), 2799);
  json_t *tot = json_object_get(doc, "totals");
  ck_assert_int_eq(get_int(tot, "roce_packets"), 2799);
  ck_assert_int_eq(get_int(tot, "other_frames") + get_int(tot, "malformed_frames"), 0);
  ck_assert_int_eq(get_int(tot, "nak_seq_err"), 26);
  json_decref(doc);

  /* One direction only: the NAKs travel the other way. */
  char *one_way[] = {"--filter=src host 198.18.0.1 and udp", DEFAULT_TRACE, NULL};
  doc = inspect_json(NULL, one_way);
  tot = json_object_get(doc, "totals");
  ck_assert_int_eq(get_int(tot, "nak_seq_err"), 0);
  ck_assert_int_eq(get_int(tot, "retransmitted_packets"), 971);
  ck_assert_int_gt(get_int(json_object_get(doc, "capture"), "frames_filtered_out"), 0);
  json_decref(doc);

  /* Without a filter the keys are there, null. */
  char *plain[] = {DEFAULT_TRACE, NULL};
  doc = inspect_json(NULL, plain);
  cap = json_object_get(doc, "capture");
  ck_assert(json_is_null(json_object_get(cap, "filter")));
  ck_assert(json_is_null(json_object_get(cap, "frames_filtered_out")));
  ck_assert_int_eq(get_int(cap, "frames_read"), 2889);
  json_decref(doc);

  char *all[] = {JCT_BINARY, "inspect", "--packets", DEFAULT_TRACE, NULL};
  char *kept[] = {JCT_BINARY, "inspect", "--packets", "-Y", "udp", DEFAULT_TRACE, NULL};
  result_t a = run_jctlab(all, NULL, 120), k = run_jctlab(kept, NULL, 120);
  ck_assert_int_eq(a.status, 0);
  ck_assert_int_eq(k.status, 0);
  ck_assert_uint_eq(count_lines(a.out), 2799);
  ck_assert_str_eq(a.out, k.out);
  result_free(&a);
  result_free(&k);

  char *text[] = {JCT_BINARY, "inspect", "-Y", "arp", DEFAULT_TRACE, NULL};
  result_t r = run_jctlab(text, NULL, 120);
  ck_assert_int_eq(r.status, 0);
  ck_assert_msg(strstr(r.out, "filter 'arp': ") && strstr(r.out, " of 2889 frames matched"), "%s",
                r.out);
  result_free(&r);

  char *bad_expr[] = {JCT_BINARY, "inspect", "-Y", "udp port", DEFAULT_TRACE, NULL};
  expect_bad(bad_expr, "filter 'udp port'", "syntax error");
  char *missing[] = {JCT_BINARY, "inspect", DEFAULT_TRACE, "-Y", NULL};
  expect_bad(missing, "-Y", "needs a filter expression");
  char *blank[] = {JCT_BINARY, "inspect", "--filter=", DEFAULT_TRACE, NULL};
  expect_bad(blank, "--filter", "needs a filter expression");
  char *twice[] = {JCT_BINARY, "inspect", "-Y", "udp", "-Y", "tcp", DEFAULT_TRACE, NULL};
  expect_bad(twice, "more than one filter", NULL);
  /* A bad expression is refused before any frame is read: even from a pipe
   * that never ends. */
  char *early[] = {"/bin/sh",     "-c", "\"$1\" inspect -Y 'udp port' - < \"$2\"", "sh", JCT_BINARY,
                   DEFAULT_TRACE, NULL};
  expect_bad(early, "filter", "syntax error");
}
END_TEST

/* A capture of n flows as bench/many_flows makes them: WRITE ONLY (1 KiB)
 * and its ACK, each pair of addresses its own, cut at 80 bytes. */
static void many_flows_capture(const char *path, uint32_t n) {
  craft_pcap_t *p = craft_pcap_open(path, true, 1);
  uint8_t f[2048];
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = k / 2;
    char a[32], b[32];
    snprintf(a, sizeof a, "198.18.%u.%u", (i >> 8) & 0xff, i & 0xff);
    snprintf(b, sizeof b, "198.19.%u.%u", (i >> 16) & 0xff, 0);
    craft_roce_t c = {.src = k % 2 ? b : a, .dst = k % 2 ? a : b};
    c.h.bth.psn = i & 0xffffff;
    if (k % 2 == 0) {
      c.h.bth.opcode = JCT_OP_RC_RDMA_WRITE_ONLY;
      c.h.bth.dest_qp = 0x100 + i % 4096;
      c.h.reth.dma_len_bytes = 1024;
      c.payload_bytes = 1024;
    } else {
      c.h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
      c.h.bth.dest_qp = 0x2000 + i % 4096;
      c.h.aeth.syndrome = 0x1f;
    }
    size_t len = craft_roce(f, sizeof f, &c);
    ck_assert_uint_gt(len, 0);
    craft_pcap_add(p, 1000000000ull + k * 1000ull, f, len < 80 ? len : 80, len);
  }
  craft_pcap_close(p);
}

/* inspect.h's budget: peak resident memory per flow, from 2,000 to
 * 100,000 flows, with the summary and with --json (streamed). Not
 * measurable under AddressSanitizer (its shadow and quarantine). */
START_TEST(memory_per_flow) {
#if defined(__SANITIZE_ADDRESS__)
  printf("AddressSanitizer build: memory per flow not measured\n");
  return;
#endif
  enum { SMALL = 2000, BIG = 100000 };
  char small[256], big[256];
  craft_tmpname(small, sizeof small, ".pcap");
  craft_tmpname(big, sizeof big, ".pcap");
  many_flows_capture(small, SMALL);
  many_flows_capture(big, BIG);
  for (int json = 0; json < 2; json++) {
    long kb[2];
    for (int k = 0; k < 2; k++) {
      char *argv[] = {JCT_BINARY, "inspect", k ? big : small, json ? "--json=/dev/null" : NULL,
                      NULL};
      result_t r = run_jctlab(argv, NULL, 120);
      ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
      char want[64];
      snprintf(want, sizeof want, "in %d flows", k ? BIG : SMALL);
      ck_assert_msg(strstr(r.out, want), "%s", r.out);
      kb[k] = r.maxrss_kb;
      result_free(&r);
    }
    double per_flow = (double)(kb[1] - kb[0]) * 1024.0 / (BIG - SMALL);
    printf("inspect%s: %.0f bytes per flow (peak RSS %ld KiB for %d flows, %ld KiB for %d)\n",
           json ? " --json" : "", per_flow, kb[1], BIG, kb[0], SMALL);
    ck_assert_msg(per_flow <= JCT_INSPECT_FLOW_BUDGET_BYTES,
                  "inspect%s: %.0f bytes per flow, over the budget of %u", json ? " --json" : "",
                  per_flow, JCT_INSPECT_FLOW_BUDGET_BYTES);
  }
  unlink(small);
  unlink(big);
}
END_TEST

START_TEST(rates) {
  static const struct {
    const char *s;
    uint64_t bps;
  } ok[] = {{"100gbit", 100000000000}, {"25Gbit", 25000000000}, {"400gbps", 400000000000},
            {"10mbit", 10000000},      {"1000", 1000},          {"1.5g", 1500000000},
            {"40Gbit/s", 40000000000}, {"1tbit", 1000000000000}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint64_t v = 0;
    ck_assert_msg(jct__parse_rate_bps(ok[i].s, &v) == 0, "%s", ok[i].s);
    ck_assert_uint_eq(v, ok[i].bps);
  }
  static const char *const bad[] = {"", "g", "-1", "0", "10x", "gbit", "10 gbit", "0.0001"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t v = 7;
    ck_assert_msg(jct__parse_rate_bps(bad[i], &v) < 0, "'%s' accepted", bad[i]);
    ck_assert_uint_eq(v, 7);
  }
}
END_TEST

/* The time, path MTU and number parsers behind --delay, --max-jct,
 * --wall-budget (min and h as well), --path-mtu, --scale and the scenario
 * files' delay:, max_jct:, path_mtu:,
 * scale:, max_degradation: (units.h). */
START_TEST(times_and_numbers) {
  static const struct {
    const char *s;
    uint64_t ns;
  } ok[] = {{"1us", 1000},       {"500ns", 500},   {"2ms", 2000000}, {"1s", 1000000000},
            {"2min", 120000000000}, {"1h", 3600000000000}, {"750", 750}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint64_t v = 0;
    ck_assert_msg(jct__parse_time_ns(ok[i].s, &v) == 0, "%s", ok[i].s);
    ck_assert_uint_eq(v, ok[i].ns);
  }
  static const char *const bad_times[] = {
      "", "us", "-1us", "1 us", "1d", "1hr", "1.5ms", "18446744073709551615s", "5124096h"};
  for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
    uint64_t v = 7;
    ck_assert_msg(jct__parse_time_ns(bad_times[i], &v) < 0, "'%s' accepted", bad_times[i]);
    ck_assert_uint_eq(v, 7);
  }
  uint32_t mtu = 0;
  ck_assert(jct__parse_path_mtu("1024", &mtu) == 0 && mtu == 1024);
  ck_assert(jct__parse_path_mtu("1000", &mtu) < 0 && jct__parse_path_mtu("128", &mtu) < 0);
  ck_assert(jct__parse_path_mtu("8192", &mtu) < 0 && mtu == 1024);
  double d = 0;
  ck_assert(jct__parse_number("1.15", &d) == 0 && d == 1.15);
  ck_assert(jct__parse_number("1e-4", &d) == 0 && d == 1e-4);
  static const char *const bad_numbers[] = {"", "x", "1.5x", "inf", "nan", "1e999"};
  for (size_t i = 0; i < sizeof bad_numbers / sizeof bad_numbers[0]; i++) {
    d = 7;
    ck_assert_msg(jct__parse_number(bad_numbers[i], &d) < 0, "'%s' accepted", bad_numbers[i]);
    ck_assert(d == 7);
  }
}
END_TEST

/* The shared objects the dynamic loader maps for argv[0] (ld.so --list:
 * as ldd, the whole closure), one per line. */
static char *loaded_objects(const char *path) {
  char *argv[] = {"/lib64/ld-linux-x86-64.so.2", "--list", (char *)path, NULL};
  result_t r = run_jctlab(argv, NULL, 20);
  ck_assert_msg(r.status == 0, "ld.so --list %s: exit %d: %s", path, r.status, r.err);
  char *out = strdup(r.out);
  result_free(&r);
  return out;
}

/* jctlab's modules (harness/base/module.h): jctlab itself maps neither
 * rdma-core nor Open MPI, each module maps its own; the modules sit beside
 * jctlab, and a jctlab without them still inspects, while `agent` and
 * `rank` say which module is missing and where it was looked for (one line,
 * exit 2; the installed folder: suites/check_install.sh). */
START_TEST(modules_load_on_demand) {
  static const char *const heavy[] = {"libibverbs.so", "librdmacm.so", "libmpi.so",
                                      "libopen-pal.so", "libhwloc.so"};
  char *mine = loaded_objects(JCT_BINARY);
  ck_assert_msg(strstr(mine, "libpcap.so") != NULL, "jctlab maps: %s", mine);
  for (size_t i = 0; i < sizeof heavy / sizeof heavy[0]; i++)
    ck_assert_msg(strstr(mine, heavy[i]) == NULL, "jctlab maps %s: %s", heavy[i], mine);
  free(mine);
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s", JCT_BINARY);
  *strrchr(dir, '/') = 0;
#ifdef JCT_HAVE_VERBS
  snprintf(path, sizeof path, "%s/jctlab-verbs.so", dir);
  char *v = loaded_objects(path);
  ck_assert_msg(strstr(v, "libibverbs.so") && strstr(v, "librdmacm.so") && !strstr(v, "libmpi.so"),
                "jctlab-verbs.so maps: %s", v);
  free(v);
#endif
#ifdef JCT_HAVE_MPI
  snprintf(path, sizeof path, "%s/jctlab-mpi.so", dir);
  char *m = loaded_objects(path);
  ck_assert_msg(strstr(m, "libmpi.so") && !strstr(m, "libibverbs.so"), "jctlab-mpi.so maps: %s", m);
  free(m);
#endif

  /* jctlab alone in a folder of its own. */
  char tmp[] = "/tmp/jct-modules-XXXXXX";
  ck_assert(mkdtemp(tmp) != NULL);
  char lone[sizeof tmp + 16];
  snprintf(lone, sizeof lone, "%s/jctlab", tmp);
  size_t len = 0;
  char *exe = slurp(JCT_BINARY, &len);
  FILE *f = fopen(lone, "wb");
  ck_assert(exe && f && fwrite(exe, 1, len, f) == len && fclose(f) == 0);
  free(exe);
  ck_assert(chmod(lone, 0755) == 0);
  char *inspect[] = {lone, "inspect", "--json=/dev/null", DEFAULT_TRACE, NULL};
  result_t r = run_jctlab(inspect, NULL, 60);
  int inspected = r.status;
  result_free(&r);
#ifdef JCT_HAVE_VERBS
  char *agent[] = {lone,      "agent", "--listen", "127.0.0.1:7999", "--rank", "1",
                   "--nranks", "2",    "--no-net", NULL};
  snprintf(path, sizeof path, "%s/jctlab-verbs.so (beside jctlab)", tmp);
  expect_bad_input(agent, "jctlab agent: the verbs module is missing", path);
#endif
#ifdef JCT_HAVE_MPI
  char *rank[] = {lone, "rank", JCT_SOURCE_DIR "/suites/scenarios/postmortem.yaml", NULL};
  snprintf(path, sizeof path, "%s/jctlab-mpi.so (beside jctlab)", tmp);
  expect_bad_input(rank, "jctlab rank: the mpi module is missing", path);
#endif
  unlink(lone);
  ck_assert(rmdir(tmp) == 0); /* nothing else left behind */
  ck_assert_msg(inspected == 0, "inspect without the modules: exit %d", inspected);
}
END_TEST

Suite *cli_suite(void) {
  Suite *s = suite_create("cli");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 60);
  tcase_add_test(core, default_trace_json);
  tcase_add_test(core, summary_json_file_and_rate);
  tcase_add_test(core, packets_match_tshark);
  tcase_add_test(core, timeline_json_lines);
  tcase_add_test(core, help_and_version);
  tcase_add_test(core, stdin_when_piped);
  tcase_add_test(core, display_filter);
  suite_add_tcase(s, core);
  TCase *memory = tcase_create("memory");
  tcase_set_timeout(memory, 300);
  tcase_add_test(memory, memory_per_flow);
  suite_add_tcase(s, memory);
  TCase *limits = tcase_create("limits");
  /* Check's default is 4 s: bad_input's dozen jctlab runs took longer under
   * AddressSanitizer on a loaded machine (2 s without). */
  tcase_set_timeout(limits, 30);
  tcase_add_test(limits, bad_input);
  tcase_add_test(limits, truncated_capture);
  tcase_add_test(limits, never_overwrites_a_capture);
  tcase_add_test(limits, rates);
  tcase_add_test(limits, times_and_numbers);
  tcase_add_test(limits, modules_load_on_demand);
  suite_add_tcase(s, limits);
  return s;
}
