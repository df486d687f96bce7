/* The fabric's captures rotated as tcpdump -C and -W (harness/fabric/
 * capture.h), first driven directly with numbered frames, then through
 * `jctlab run` and `jctlab replay` as a user runs them (JCT_BINARY):
 *   - tcpdump's names (FILE, FILE1, ...; with -W, FILE0.. zero-padded);
 *   - every file opens with libpcap and reads to its end without a
 *     truncated record, also after SIGINT; each holds more than -C before
 *     the next one starts, and not more than -C and one record;
 *   - the files together hold every frame, in order: as many as the
 *     fabric forwarded (its own counter, fabric.frames_out);
 *   - -W keeps exactly N files, and they are the newest;
 *   - bad values, and a run whose rotated names exist already, are bad
 *     input (exit 2, one line) before anything is built. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/fabric/capture.h"
#include "jctlab/error.h"
#include "suites.h"
#include "testkit.h"

#define FRAME_BYTES 200
#define RECORD_BYTES (16 + FRAME_BYTES)

/* A new folder in the runner's TMPDIR. */
static void new_dir(char *buf, size_t len) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, len, "%s/jctlab-cap-XXXXXX", t && *t ? t : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(buf));
}

static size_t files_in(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[600];
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
  closedir(d);
  rmdir(dir);
}

typedef struct {
  size_t packets;
  uint32_t first_seq, last_seq; /* of numbered frames (the first 4 bytes) */
  double first_s, last_s;       /* timestamps */
  bool in_order;                /* numbered frames one after the other */
} read_t;

/* Read the capture at path to its end with libpcap: it must open and end
 * on a whole record (pcap_next_ex -2, never -1 "truncated"). */
static read_t read_capture(const char *path) {
  char eb[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
  ck_assert_msg(p, "%s: %s", path, eb);
  read_t r = {.in_order = true};
  struct pcap_pkthdr *h;
  const u_char *b;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &b)) == 1) {
    uint32_t seq = 0;
    if (h->caplen >= 4) memcpy(&seq, b, 4);
    double t = (double)h->ts.tv_sec + (double)h->ts.tv_usec * 1e-9;
    if (r.packets == 0) {
      r.first_seq = seq;
      r.first_s = t;
    } else if (seq != r.last_seq + 1) {
      r.in_order = false;
    }
    r.last_seq = seq;
    r.last_s = t;
    r.packets++;
  }
  ck_assert_msg(rc == -2, "%s: after %zu records: %s", path, r.packets, pcap_geterr(p));
  pcap_close(p);
  return r;
}

/* n numbered frames of FRAME_BYTES into a capture at path. */
static void write_frames(const char *path, uint64_t file_bytes, uint32_t files, uint32_t n) {
  pcap_t *dead =
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  jct__savefile_t *s;
  char err[300];
  ck_assert_int_eq(jct__savefile_open(&s, dead, path, file_bytes, files, err, sizeof err), 0);
  uint8_t frame[FRAME_BYTES] = {0};
  for (uint32_t i = 0; i < n; i++) {
    memcpy(frame, &i, 4);
    struct pcap_pkthdr h = {
        .ts = {.tv_sec = 1, .tv_usec = i}, .caplen = FRAME_BYTES, .len = FRAME_BYTES};
    jct__savefile_dump(s, &h, frame);
  }
  jct__savefile_close(s);
  pcap_close(dead);
}

START_TEST(names_as_tcpdump) {
  char b[64];
  ck_assert_str_eq(jct__savefile_name("o.pcap", 0, 0, b, sizeof b), "o.pcap");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 0, 1, b, sizeof b), "o.pcap1");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 0, 123, b, sizeof b), "o.pcap123");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 1, 0, b, sizeof b), "o.pcap");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 1, 5, b, sizeof b), "o.pcap");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 2, 0, b, sizeof b), "o.pcap0");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 10, 9, b, sizeof b), "o.pcap9");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 10, 12, b, sizeof b), "o.pcap2"); /* a ring */
  ck_assert_str_eq(jct__savefile_name("o.pcap", 11, 3, b, sizeof b), "o.pcap03");
  ck_assert_str_eq(jct__savefile_name("o.pcap", 1000, 7, b, sizeof b), "o.pcap007");
  ck_assert_ptr_null(jct__savefile_name("o.pcap", 0, 1, b, 7)); /* no room */
}
END_TEST

/* 1,000 frames of 216 bytes in the file, -C 10,000 bytes: a file closes
 * after the record that takes it past 10,000 (47 records: 24 + 47 * 216 =
 * 10,176), so 21 full files and one of 13. */
START_TEST(rotates_on_whole_records) {
  char dir[300], path[400], name[420];
  new_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/o.pcap", dir);
  const uint32_t n = 1000, limit = 10000;
  write_frames(path, limit, 0, n);
  size_t nfiles = files_in(dir);
  uint32_t per_file = (limit - 24) / RECORD_BYTES + 1;
  ck_assert_uint_eq(nfiles, (n + per_file - 1) / per_file);
  size_t total = 0;
  for (size_t k = 0; k < nfiles; k++) {
    jct__savefile_name(path, 0, k, name, sizeof name);
    read_t r = read_capture(name);
    ck_assert_msg(r.in_order && r.first_seq == total, "%s: frames %u.. (wanted %zu..)", name,
                  r.first_seq, total);
    struct stat st;
    ck_assert_int_eq(stat(name, &st), 0);
    ck_assert_uint_le((uint64_t)st.st_size, limit + RECORD_BYTES);
    if (k + 1 < nfiles) ck_assert_uint_gt((uint64_t)st.st_size, limit);
    total += r.packets;
  }
  ck_assert_uint_eq(total, n);
  rm_dir(dir);
}
END_TEST

/* -W 3: three files, FILE0..FILE2, holding the newest frames: one after
 * the other, the last frame written last, and nothing older than the
 * three files' worth. */
START_TEST(ring_keeps_the_newest) {
  char dir[300], path[400], name[420];
  new_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/o.pcap", dir);
  const uint32_t n = 1000, limit = 10000, files = 3;
  write_frames(path, limit, files, n);
  ck_assert_uint_eq(files_in(dir), files);
  uint32_t per_file = (limit - 24) / RECORD_BYTES + 1;
  uint32_t written = (n + per_file - 1) / per_file; /* files written in all, 22 */
  uint32_t lo = UINT32_MAX, hi = 0;
  size_t total = 0;
  for (uint32_t k = 0; k < files; k++) {
    snprintf(name, sizeof name, "%s%u", path, k);
    read_t r = read_capture(name);
    ck_assert(r.in_order);
    total += r.packets;
    if (r.first_seq < lo) lo = r.first_seq;
    if (r.last_seq > hi) hi = r.last_seq;
  }
  ck_assert_uint_eq(hi, n - 1);
  ck_assert_uint_eq(lo, (written - files) * per_file);
  ck_assert_uint_eq(total, n - lo); /* contiguous: lo .. n-1, each once */
  /* The newest file is the slot the last one went to. */
  snprintf(name, sizeof name, "%s%u", path, (written - 1) % files);
  ck_assert_uint_eq(read_capture(name).last_seq, n - 1);
  rm_dir(dir);
}
END_TEST

START_TEST(open_errors) {
  pcap_t *dead =
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  jct__savefile_t *s;
  char err[300];
  ck_assert_int_eq(jct__savefile_open(&s, dead, "-", 1000, 0, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "standard output"));
  ck_assert_int_eq(jct__savefile_open(&s, dead, "/nonexistent-dir/o.pcap", 0, 0, err, sizeof err),
                   JCT_EIO);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/o.pcap"));
  pcap_close(dead);
}
END_TEST

/* `jctlab run ... --json FILE` with extra args; its document. */
static json_t *run_json(char *const extra[], const char *dir) {
  char js[400];
  snprintf(js, sizeof js, "%s.json", dir); /* beside the folder, not in it */
  char *argv[40] = {JCT_BINARY, "run",    "--synth", "ring",   "--ranks", "4",      "--bytes",
                    "512KiB",   "--rate", "50mbit",  "--reps", "2",       "--json", js};
  size_t n = 14;
  for (size_t i = 0; extra[i]; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  json_t *doc = NULL;
  for (int attempt = 0; attempt < 3; attempt++) { /* a loaded machine: an invalid run is retried */
    rm_dir(dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    result_t r = run_cmd(argv, NULL, 300) /* its own retry, with the folder emptied */;
    int status = r.status;
    ck_assert_msg(status == 0 || status == 3, "exit %d: %s", status, r.err);
    result_free(&r);
    json_error_t je;
    doc = json_load_file(js, 0, &je);
    ck_assert_msg(doc, "%s: %s", js, je.text);
    unlink(js);
    if (status == 0) break;
    json_decref(doc);
    doc = NULL;
  }
  ck_assert_msg(doc, "three invalid runs");
  return doc;
}

/* The sum of the rotated files' frames is what the fabric forwarded. */
START_TEST(run_rotates) {
  char dir[300], path[400], name[420];
  new_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/o.pcap", dir);
  char *extra[] = {"--pcap-out", path, "-C", "300KB", NULL};
  json_t *doc = run_json(extra, dir);
  json_int_t forwarded = jint(doc, "fabric.frames_out");
  size_t nfiles = files_in(dir), total = 0;
  ck_assert_uint_ge(nfiles, 4); /* 2 x 512 KiB of data, and more, in 300 KB files */
  for (size_t k = 0; k < nfiles; k++) {
    jct__savefile_name(path, 0, k, name, sizeof name);
    total += read_capture(name).packets; /* each name exists, each is whole */
    struct stat st;
    ck_assert_int_eq(stat(name, &st), 0);
    if (k + 1 < nfiles) /* past -C, by less than one record (PMTU 4096, MTU 9000) */
      ck_assert_msg(st.st_size > 300000 && st.st_size <= 300000 + 16 + 9018, "%s: %lld bytes", name,
                    (long long)st.st_size);
  }
  ck_assert_int_eq((json_int_t)total, forwarded);
  json_decref(doc);
  rm_dir(dir);
}
END_TEST

/* -W 2: two files, o.pcap0 and o.pcap1, together fewer frames than the
 * fabric forwarded, one after the other in time. */
START_TEST(run_ring) {
  char dir[300], path[400], name[2][420];
  new_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/o.pcap", dir);
  char *extra[] = {"--pcap-out", path, "-C", "300KB", "-W", "2", NULL};
  json_t *doc = run_json(extra, dir);
  ck_assert_uint_eq(files_in(dir), 2);
  read_t r[2];
  for (int k = 0; k < 2; k++) {
    snprintf(name[k], sizeof name[k], "%s%d", path, k);
    r[k] = read_capture(name[k]);
    ck_assert_uint_gt(r[k].packets, 0);
  }
  ck_assert_int_lt((json_int_t)(r[0].packets + r[1].packets), jint(doc, "fabric.frames_out"));
  int older = r[0].first_s < r[1].first_s ? 0 : 1;
  ck_assert(r[older].last_s <= r[1 - older].first_s);
  struct stat st;
  ck_assert_int_eq(stat(name[older], &st), 0);
  ck_assert_uint_gt((uint64_t)st.st_size, 300000); /* full: it was rotated away from */
  json_decref(doc);
  rm_dir(dir);
}
END_TEST

/* A sweep of two cases: each case's own files, case number before the
 * extension and the file's number after the whole name. */
START_TEST(replay_cases_rotate_apart) {
  char dir[300], path[400], js[420], name[460];
  new_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/o.pcap", dir);
  snprintf(js, sizeof js, "%s.json", dir);
  char *argv[] = {
      JCT_BINARY,   "replay", "--synth", "ring",   "--ranks", "2",        "--bytes",
      "256KiB",     "--rate", "50mbit",  "--reps", "1",       "--inject", "drop p=[0, 0.001]",
      "--pcap-out", path,     "-C",      "100KB",  "--json",  js,         NULL};
  /* One attempt (run_cmd, not run_jctlab): a loop-bound run still writes
   * its files, and a retry would meet the first attempt's. */
  result_t r = run_cmd(argv, NULL, 300);
  ck_assert_msg(r.status == 0 || r.status == 1 || r.status == 3, "exit %d: %s", r.status, r.err);
  result_free(&r);
  unlink(js);
  for (int c = 1; c <= 2; c++)
    for (int k = 0; k < 3; k++) {
      snprintf(name, sizeof name, "%s/o-case%d.pcap", dir, c);
      if (k) snprintf(name + strlen(name), sizeof name - strlen(name), "%d", k);
      ck_assert_uint_gt(read_capture(name).packets, 0);
    }
  rm_dir(dir);
}
END_TEST

/* SIGINT in the middle: every file still ends on a whole record. */
START_TEST(sigint_leaves_whole_files) {
  char dir[300], path[400], name[420];
  new_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/o.pcap", dir);
  char *argv[] = {JCT_BINARY, "run",    "--synth", "ring",      "--ranks", "2",          "--bytes",
                  "1MiB",     "--rate", "50mbit",  "--reps",    "200",     "--pcap-out", path,
                  "-C",       "100KB",  "--json",  "/dev/null", NULL};
  child_t c = spawn(argv, NULL);
  sleep_ms(2500);
  ck_assert_int_eq(kill(c.pid, SIGINT), 0);
  result_t r = finish(&c, 60);
  ck_assert_msg(r.status == 130, "exit %d, signal %d: %s", r.status, r.signal, r.err);
  result_free(&r);
  size_t nfiles = files_in(dir);
  ck_assert_uint_ge(nfiles, 2);
  for (size_t k = 0; k < nfiles; k++)
    read_capture(jct__savefile_name(path, 0, k, name, sizeof name));
  rm_dir(dir);
}
END_TEST

/* Exit 2, one line holding word, and nothing written in dir but keep. */
static void expect_bad(char *const argv[], const char *word) {
  result_t r = run_jctlab(argv, NULL, 60);
  ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
  ck_assert_msg(count_lines(r.err) == 1, "stderr: %s", r.err);
  ck_assert_msg(strstr(r.err, word), "stderr: %s (wanted %s)", r.err, word);
  result_free(&r);
}

START_TEST(bad_input) {
  char dir[300], path[400], old[420];
  new_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/o.pcap", dir);
#define RUN JCT_BINARY, "run", "--synth", "ring", "--ranks", "2", "--bytes", "64KiB"
  char *zero[] = {RUN, "--pcap-out", path, "-C", "0", NULL};
  expect_bad(zero, "-C 0");
  char *unit[] = {RUN, "--pcap-out", path, "-C", "10XB", NULL};
  expect_bad(unit, "-C 10XB");
  char *w0[] = {RUN, "--pcap-out", path, "-C", "1", "-W", "0", NULL};
  expect_bad(w0, "-W 0");
  char *w_alone[] = {RUN, "--pcap-out", path, "-W", "3", NULL};
  expect_bad(w_alone, "needs -C");
  char *no_capture[] = {RUN, "-C", "1", NULL};
  expect_bad(no_capture, "--pcap-out");
  char *to_stdout[] = {RUN, "--pcap-out", "-", "-C", "1", NULL};
  expect_bad(to_stdout, "standard output");
  char *scen_w[] = {JCT_BINARY,   "run", JCT_SOURCE_DIR "/suites/scenarios/ring-loss-sweep.yaml",
                    "--pcap-out", path,  "-W",
                    "2",          NULL};
  expect_bad(scen_w, "needs -C");
  /* An earlier run's file under a rotated name: refused, nothing written. */
  snprintf(old, sizeof old, "%s7", path);
  FILE *f = fopen(old, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  char *exists[] = {RUN, "--pcap-out", path, "-C", "1", NULL};
  expect_bad(exists, old);
  char *exists_ring[] = {RUN, "--pcap-out", path, "-C", "1", "-W", "10", NULL};
  expect_bad(exists_ring, old);
  ck_assert_uint_eq(files_in(dir), 1);
  unlink(old);
  /* Several cases need an extension: o-case1's files would be case 11's. */
  char bare[420];
  snprintf(bare, sizeof bare, "%s/o", dir);
  char *sweep[] = {JCT_BINARY,   "replay",  "--synth", "ring",     "--ranks",
                   "2",          "--bytes", "64KiB",   "--inject", "drop p=[0, 0.1]",
                   "--pcap-out", bare,      "-C",      "1",        NULL};
  expect_bad(sweep, "extension");
  ck_assert_uint_eq(files_in(dir), 0);
#undef RUN
  rm_dir(dir);
}
END_TEST

Suite *capture_suite(void) {
  Suite *s = suite_create("capture");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, names_as_tcpdump);
  tcase_add_test(tc, rotates_on_whole_records);
  tcase_add_test(tc, ring_keeps_the_newest);
  tcase_add_test(tc, open_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("cli");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, bad_input);
  tcase_add_test(tc, run_rotates);
  tcase_add_test(tc, run_ring);
  tcase_add_test(tc, replay_cases_rotate_apart);
  tcase_add_test(tc, sigint_leaves_whole_files);
  suite_add_tcase(s, tc);
  return s;
}
