/* `jctlab run` end to end, as a user runs it (the built binary, JCT_BINARY):
 * namespace integration tests of the emulated fabric and the uroce
 * transport (issue 3's acceptance).
 *   - A lossless ring AllReduce agrees with the α-β model of
 *     include/jctlab/run.h, recomputed here from the link's rate and delay,
 *     and its JSON adds up (median, CV, algbw, busbw, packet counts).
 *   - The capture of what crossed the switch, read back by `jctlab
 *     inspect`, holds only RDMA WRITEs and ACKs with valid ICRCs, no NAK
 *     and no retransmission, and as many RoCE packets as the transport sent.
 *   - The same run works as user nobody (jctlab enters a user namespace of
 *     its own), unless the kernel refuses unprivileged user namespaces.
 *   - SIGKILL mid-run leaves no interface, namespace, process or temporary
 *     file behind, and the host's interfaces never change while it runs.
 *   - Bad input exits 2 with one line on stderr naming the problem.
 *   - Every generated collective completes, valid and clean, and its
 *     per-QP figures add up to the schedule.
 *   - A drop aimed at one QP shows as that QP's retransmissions only.
 * Each run is bounded in time: a hung jctlab is killed and the test fails. */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "craft.h"
#include "suites.h"
#include "testkit.h"

#define PMTU_BYTES 4096
/* Per packet besides the payload: BTH 12, ICRC 4, UDP 8, IPv4 20,
 * Ethernet 14, preamble + FCS + inter-frame gap 24 (run.h). */
#define WIRE_OVERHEAD_BYTES 82
#define NOBODY_ID 65534

static void assert_near(double got, double want, double rel, const char *what) {
  ck_assert_msg(fabs(got - want) <= rel * fabs(want), "%s: %.9g, expected %.9g", what, got, want);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ge(fputs(text, f), 0);
  ck_assert_int_eq(fclose(f), 0);
}

/* What a schedule makes the transport send once: messages (ops) and data
 * packets (each message's path-MTU packets plus the receiver's 64-byte
 * clear-to-send WRITE_ONLY before it). From `jctlab synth`'s output. */
typedef struct {
  uint64_t ops, data_packets, bytes; /* bytes: every message's */
} sched_count_t;

static sched_count_t synth_count(const char *algo, const char *ranks, const char *bytes,
                                 const char *channels) {
  char path[256];
  craft_tmpname(path, sizeof path, ".json");
  char *argv[] = {JCT_BINARY,       "synth",   (char *)algo,  "--ranks",
                  (char *)ranks,    "--bytes", (char *)bytes, "--channels",
                  (char *)channels, "-o",      path,          NULL};
  result_t r = run_jctlab(argv, NULL, 10);
  ck_assert_msg(r.status == 0, "synth exit %d: %s", r.status, r.err);
  result_free(&r);
  json_t *doc = json_load_file(path, 0, NULL);
  unlink(path);
  ck_assert_ptr_nonnull(doc);
  sched_count_t c = {0, 0, 0};
  json_t *ops = jget(doc, "ops"), *op;
  size_t i;
  json_array_foreach(ops, i, op) {
    uint64_t b = (uint64_t)jint(op, "bytes");
    c.ops++;
    c.bytes += b;
    c.data_packets += (b + PMTU_BYTES - 1) / PMTU_BYTES + 1;
  }
  json_decref(doc);
  ck_assert_uint_gt(c.ops, 0);
  return c;
}

/* What every valid, lossless run's JSON must say. */
static void assert_clean_run(json_t *doc) {
  ck_assert_msg(jbool(doc, "valid"), "invalid run: %s",
                json_string_value(json_object_get(doc, "invalid_why")));
  ck_assert(json_is_null(jget(doc, "invalid_why")));
  ck_assert_int_eq(jint(doc, "transport.retransmitted_packets"), 0);
  ck_assert_int_eq(jint(doc, "transport.retransmitted_bytes"), 0);
  ck_assert_int_eq(jint(doc, "transport.naks"), 0);
  ck_assert_int_eq(jint(doc, "transport.timeouts"), 0);
  ck_assert_int_eq(jint(doc, "fabric.drops"), 0);
  ck_assert_int_eq(jint(doc, "fabric.harness_losses"), 0);
  /* Every frame in was forwarded, and every packet sent crossed the switch. */
  ck_assert_int_eq(jint(doc, "fabric.frames_in"), jint(doc, "fabric.frames_out"));
  ck_assert_int_ge(jint(doc, "fabric.frames_out"), jint(doc, "transport.packets"));
  ck_assert_int_gt(jint(doc, "transport.data_packets"), 0);
  ck_assert_int_gt(jint(doc, "transport.packets"), jint(doc, "transport.data_packets"));
  ck_assert_int_le(jint(doc, "loop.lateness_p50_ns"), jint(doc, "loop.lateness_p99_ns"));
  ck_assert_int_le(jint(doc, "loop.lateness_p99_ns"), jint(doc, "loop.lateness_max_ns"));
  /* Per QP: nothing resent, and the times in order. */
  json_t *e;
  size_t i;
  json_array_foreach(jget(doc, "qps"), i, e) {
    ck_assert_int_eq(jint(e, "retransmitted_packets"), 0);
    ck_assert_int_le(jint(e, "completion_p50_ns"), jint(e, "completion_p99_ns"));
    ck_assert_int_le(jint(e, "completion_p99_ns"), jint(e, "completion_max_ns"));
  }
}

/* The per-QP entries add up to the schedule: its messages' bytes and its
 * ops; and no QP moves data faster than its link (rate_bps). */
static void assert_qps_add_up(json_t *doc, const sched_count_t *want, double rate_bps) {
  json_t *e;
  size_t i;
  json_int_t bytes = 0, messages = 0;
  json_array_foreach(jget(doc, "qps"), i, e) {
    ck_assert_int_eq(jint(e, "conn"), (json_int_t)i);
    bytes += jint(e, "bytes");
    messages += jint(e, "messages");
    double bw = jnum(e, "bw_bps");
    ck_assert_msg(bw > 0 && bw <= rate_bps, "QP %zu: %g bit/s on a %g bit/s link", i, bw, rate_bps);
  }
  ck_assert_int_eq(bytes, (json_int_t)want->bytes);
  ck_assert_int_eq(messages, (json_int_t)want->ops);
}

/* The α-β model of run.h for rate R and propagation delay d:
 * B = R * PMTU / wire bytes, α = 2d + one packet's serialization. */
static double goodput_bps(double rate_bps) {
  return rate_bps * PMTU_BYTES / (PMTU_BYTES + WIRE_OVERHEAD_BYTES);
}

static double alpha_ns(double rate_bps, double delay_ns) {
  return 2 * delay_ns + (PMTU_BYTES + WIRE_OVERHEAD_BYTES) * 8 * 1e9 / rate_bps;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One run of test 1. Everything exact is asserted; whether the timing
 * (ratio to the model, CV) holds is returned, with the figures in msg. */
static bool ring_attempt(char *msg, size_t msglen) {
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *argv[] = {JCT_BINARY, "run",  "--synth", "ring",    "--ranks", "4",
                  "--bytes",  "2MiB", "--rate",  "100mbit", "--delay", "1us",
                  "--reps",   "3",    "--json",  js,        NULL};
  result_t r = run_jctlab(argv, NULL, 20);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_str_eq(r.err, "");
  ck_assert_ptr_nonnull(strstr(r.out, "median")); /* the table too */
  json_t *doc = json_load_file(js, 0, NULL);
  unlink(js);
  ck_assert_ptr_nonnull(doc);
  ck_assert_int_eq(jint(doc, "jctlab_run"), 1);
  ck_assert_str_eq(json_string_value(jget(doc, "config.algorithm")), "ring");
  ck_assert_int_eq(jint(doc, "config.ranks"), 4);
  ck_assert_int_eq(jint(doc, "config.bytes"), 2 << 20);
  ck_assert_int_eq(jint(doc, "config.rate_bps"), 100000000);
  ck_assert_int_eq(jint(doc, "config.prop_delay_ns"), 1000);
  ck_assert_int_eq(jint(doc, "config.reps"), 3);
  assert_clean_run(doc);

  /* The model, recomputed: T = 2(N-1)α + 2(N-1)/N · S/B. */
  const double n = 4, s_bytes = 2 << 20, rate = 1e8, factor = 2 * (n - 1) / n;
  double b = goodput_bps(rate), a = alpha_ns(rate, 1000);
  double model = 2 * (n - 1) * a + factor * s_bytes * 8 * 1e9 / b;
  assert_near(jnum(doc, "model.goodput_bps"), b, 1e-6, "model.goodput_bps");
  assert_near(jnum(doc, "model.alpha_ns"), a, 1e-6, "model.alpha_ns");
  assert_near(jnum(doc, "model.jct_ns"), model, 1e-6, "model.jct_ns");

  /* Median, min, max and CV of the repetitions. */
  json_t *reps = jget(doc, "jct_ns");
  ck_assert_uint_eq(json_array_size(reps), 3);
  double v[3], mean = 0;
  for (size_t i = 0; i < 3; i++) {
    ck_assert(json_is_integer(json_array_get(reps, i)));
    v[i] = (double)json_integer_value(json_array_get(reps, i));
    mean += v[i] / 3;
  }
  qsort(v, 3, sizeof v[0], cmp_double);
  double median = v[1], ss = 0;
  for (size_t i = 0; i < 3; i++)
    ss += (v[i] - mean) * (v[i] - mean);
  ck_assert_int_eq(jint(doc, "jct.median_ns"), (json_int_t)median);
  ck_assert_int_eq(jint(doc, "jct.min_ns"), (json_int_t)v[0]);
  ck_assert_int_eq(jint(doc, "jct.max_ns"), (json_int_t)v[2]);
  double cv = jnum(doc, "jct.cv"), cv_sample = sqrt(ss / 2) / mean, cv_pop = sqrt(ss / 3) / mean;
  ck_assert_msg(fabs(cv - cv_sample) < 1e-6 || fabs(cv - cv_pop) < 1e-6,
                "cv %g is neither the sample (%g) nor the population (%g) figure", cv, cv_sample,
                cv_pop);
  assert_near(jnum(doc, "model.ratio"), median / model, 1e-6, "model.ratio");

  /* nccl-tests: algbw = S / median (GB/s = bytes/ns), busbw = algbw·2(N-1)/N. */
  double algbw = s_bytes / median;
  assert_near(jnum(doc, "algbw_gbps"), algbw, 1e-6, "algbw_gbps");
  assert_near(jnum(doc, "busbw_gbps"), algbw * factor, 1e-6, "busbw_gbps");

  /* Ring: N ranks each send 2(N-1) chunks of S/N, each with a CTS. */
  uint64_t chunk_pkts = ((2u << 20) / 4 + PMTU_BYTES - 1) / PMTU_BYTES;
  ck_assert_int_eq(jint(doc, "transport.data_packets"), (json_int_t)(3 * 4 * 6 * (chunk_pkts + 1)));

  /* Within 1.15x of the model and not below 0.9x of it; CV at most 5%. */
  bool ok = median <= 1.15 * model && median >= 0.9 * model && cv <= 0.05;
  snprintf(msg, msglen,
           "median %.1f ms, model %.1f ms, ratio %.3f, CV %.2f%%, lateness p99 %lld ns, %s",
           median / 1e6, model / 1e6, median / model, cv * 100,
           (long long)jint(doc, "loop.lateness_p99_ns"),
           jbool(doc, "loop.loop_bound") ? "loop-bound" : "link-bound");
  json_decref(doc);
  result_free(&r);
  return ok;
}

/* 1. Lossless ring AllReduce against the model, and the JSON adds up. The
 * timing may miss on a machine busy with other work: up to three runs, and
 * every run's figures are printed. */
START_TEST(ring_lossless_model) {
  char msg[256];
  bool ok = false;
  for (int attempt = 1; attempt <= 3 && !ok; attempt++) {
    ok = ring_attempt(msg, sizeof msg);
    printf("run: ring 4 ranks 2 MiB 100 Mbit/s, run %d: %s%s\n", attempt, msg,
           ok ? "" : ": outside the bounds");
  }
  ck_assert_msg(ok, "three runs outside 0.9..1.15x the model or CV > 5%%; last: %s%s", msg,
                strstr(msg, "loop-bound") ? " (jctlab says the loop set the pace: a busy machine?)"
                                          : "");
}
END_TEST

static bool is_write_or_ack(const char *name) {
  return strncmp(name, "RC_RDMA_WRITE_", 14) == 0 || strcmp(name, "RC_ACKNOWLEDGE") == 0;
}

/* 2. The capture of what crossed the switch, read by `jctlab inspect`. */
START_TEST(pcap_out_inspects_clean) {
  char pcap[256], js[256];
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  craft_tmpname(js, sizeof js, ".json");
  char *argv[] = {JCT_BINARY,   "run",  "--synth", "ring",    "--ranks", "4",
                  "--bytes",    "1MiB", "--rate",  "100mbit", "--reps",  "1",
                  "--pcap-out", pcap,   "--json",  js,        NULL};
  result_t r = run_jctlab(argv, NULL, 20);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  result_free(&r);
  json_t *run = json_load_file(js, 0, NULL);
  unlink(js);
  ck_assert_ptr_nonnull(run);
  assert_clean_run(run);

  char *inspect[] = {JCT_BINARY, "inspect", "--json", pcap, NULL};
  r = run_jctlab(inspect, NULL, 20);
  unlink(pcap);
  ck_assert_msg(r.status == 0, "inspect exit %d: %s", r.status, r.err);
  json_t *doc = parse_json(r.out, "inspect");
  json_int_t frames = jint(doc, "capture.frames");
  ck_assert_int_gt(frames, 0);
  ck_assert_int_eq(jint(doc, "totals.frames"), frames);
  ck_assert(jbool(doc, "capture.nanosecond"));
  /* The capture is what the switch forwarded. */
  ck_assert_int_eq(frames, jint(run, "fabric.frames_out"));

  /* Every RoCE frame counted, and every packet the transport sent is one. */
  json_int_t roce = jint(doc, "totals.roce_packets");
  ck_assert_int_eq(roce, frames - jint(doc, "totals.other_frames") -
                             jint(doc, "totals.malformed_frames") - jint(doc, "totals.pfc_frames"));
  ck_assert_int_eq(roce, jint(run, "transport.packets"));
  ck_assert_int_eq(jint(doc, "totals.malformed_frames"), 0);

  ck_assert_int_eq(jint(doc, "totals.nak_seq_err"), 0);
  ck_assert_int_eq(jint(doc, "totals.nak_rnr"), 0);
  ck_assert_int_eq(jint(doc, "totals.nak_other"), 0);
  ck_assert_int_eq(jint(doc, "totals.retransmitted_packets"), 0);
  ck_assert_int_eq(jint(doc, "totals.gaps"), 0);
  ck_assert_int_eq(jint(doc, "totals.timeouts"), 0);
  /* Every ICRC checked, and valid. */
  ck_assert_int_eq(jint(doc, "totals.bad_icrc"), 0);
  ck_assert_int_eq(jint(doc, "totals.icrc_unchecked"), 0);
  ck_assert_int_eq(jint(doc, "totals.messages"), jint(doc, "totals.messages_completed"));

  /* RDMA WRITEs (data and CTS) and ACKs only; they add up. */
  json_t *ops = jget(doc, "opcodes"), *o;
  size_t i;
  json_int_t sum = 0, writes = 0, acks = 0;
  json_array_foreach(ops, i, o) {
    const char *name = json_string_value(jget(o, "name"));
    ck_assert_ptr_nonnull(name);
    ck_assert_msg(is_write_or_ack(name), "opcode %s in the capture", name);
    json_int_t p = jint(o, "packets");
    sum += p;
    if (strcmp(name, "RC_ACKNOWLEDGE") == 0)
      acks += p;
    else
      writes += p;
  }
  ck_assert_int_eq(sum, roce);
  ck_assert_int_gt(acks, 0);
  ck_assert_int_eq(writes, jint(run, "transport.data_packets"));
  json_decref(doc);
  json_decref(run);
  result_free(&r);
}
END_TEST

/* Whether this kernel lets an unprivileged user create a user namespace
 * (with a network namespace in it), asked of a child that becomes nobody
 * first when we are root. 0, or the errno. */
static int userns_probe(void) {
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgroups(0, NULL) || setgid(NOBODY_ID) || setuid(NOBODY_ID)))
      _exit(TK_EXIT_SETUID_FAILED);
    _exit(unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : (errno & 0x7f));
  }
  int ws;
  ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
  ck_assert(WIFEXITED(ws));
  ck_assert_msg(WEXITSTATUS(ws) != TK_EXIT_SETUID_FAILED, "cannot become uid %d", NOBODY_ID);
  return WEXITSTATUS(ws);
}

/* 3. The same small run as an unprivileged user. */
START_TEST(runs_unprivileged) {
  int e = userns_probe();
  if (e) {
    printf("run: skipping the unprivileged run: the kernel refuses user namespaces to "
           "unprivileged users (unshare: %s; see user.max_user_namespaces, "
           "kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)\n",
           strerror(e));
    return;
  }
  bool root = geteuid() == 0;
  spawn_opts_t o = {.as_nobody = root};
  char *argv[] = {JCT_BINARY, "run",     "--synth", "ring", "--ranks", "4", "--bytes", "1MiB",
                  "--rate",   "100mbit", "--reps",  "1",    "--json",  "-", NULL};
  result_t r = run_jctlab(argv, &o, 20);
  ck_assert_msg(r.status != TK_EXIT_SETUID_FAILED, "cannot become uid %d", NOBODY_ID);
  ck_assert_msg(r.status == 0, "exit %d as uid %d: %s", r.status, root ? NOBODY_ID : (int)getuid(),
                r.err);
  ck_assert_str_eq(r.err, "");
  json_t *doc = parse_json(r.out, "run");
  assert_clean_run(doc);
  ck_assert_uint_eq(json_array_size(jget(doc, "jct_ns")), 1);
  printf("run: unprivileged (uid %d): median %.1f ms\n", root ? NOBODY_ID : (int)getuid(),
         jnum(doc, "jct.median_ns") / 1e6);
  json_decref(doc);
  result_free(&r);
}
END_TEST

static int cmp_str(const void *a, const void *b) {
  return strcmp(a, b);
}

/* The host namespace's interface names, sorted, joined by spaces. */
static void netdev_names(char *buf, size_t len) {
  char names[512][32], line[512];
  size_t n = 0;
  FILE *f = fopen("/proc/net/dev", "r");
  ck_assert_ptr_nonnull(f);
  for (int l = 0; fgets(line, sizeof line, f); l++) {
    char *colon = strchr(line, ':');
    if (l < 2 || !colon) continue; /* two header lines */
    *colon = '\0';
    const char *name = line + strspn(line, " ");
    ck_assert_uint_lt(n, 512);
    snprintf(names[n++], sizeof names[0], "%s", name);
  }
  fclose(f);
  qsort(names, n, sizeof names[0], cmp_str);
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_lt(strlen(buf) + strlen(names[i]) + 2, len);
    strcat(buf, names[i]);
    strcat(buf, " ");
  }
}

/* A directory's entries whose names contain `part` (NULL: all) and do not
 * start with `except` (NULL: none), sorted and joined; "" when the
 * directory does not exist. */
static void dir_names(const char *dir, const char *part, const char *except, char *buf,
                      size_t len) {
  char names[256][256];
  size_t n = 0;
  buf[0] = '\0';
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (part && !strcasestr(e->d_name, part)) continue;
    if (except && !strncmp(e->d_name, except, strlen(except))) continue;
    if (n < 256) snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof names[0], cmp_str);
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_lt(strlen(buf) + strlen(names[i]) + 2, len);
    strcat(buf, names[i]);
    strcat(buf, " ");
  }
}

/* Namespaces seen as "net:[4026532177]" links. */
typedef struct {
  char ns[128][40];
  size_t n;
} nsset_t;

static void nsset_add(nsset_t *s, const char *link) {
  ck_assert_msg(strchr(link, '[') != NULL, "not a namespace: '%s'", link);
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->ns[i], link)) return;
  if (s->n < 128) snprintf(s->ns[s->n++], sizeof s->ns[0], "%s", link);
}

static bool nsset_has(const nsset_t *s, const char *link) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->ns[i], link)) return true;
  return false;
}

static bool read_link(const char *path, char *buf, size_t len) {
  ssize_t n = readlink(path, buf, len - 1);
  if (n < 0) return false;
  buf[n] = '\0';
  return true;
}

/* The network and user namespaces pid is in or holds a descriptor of,
 * other than our own. */
static void collect_ns(pid_t pid, nsset_t *s) {
  char path[128], link[64], self_net[64] = "", self_user[64] = "";
  read_link("/proc/self/ns/net", self_net, sizeof self_net);
  read_link("/proc/self/ns/user", self_user, sizeof self_user);
  static const char *const kinds[] = {"net", "user"};
  for (size_t k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, kinds[k]);
    if (read_link(path, link, sizeof link) && strcmp(link, self_net) && strcmp(link, self_user))
      nsset_add(s, link);
  }
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    char fd[400];
    snprintf(fd, sizeof fd, "%s/%s", path, e->d_name);
    if (read_link(fd, link, sizeof link) &&
        (!strncmp(link, "net:[", 5) || !strncmp(link, "user:[", 6)) && strcmp(link, self_net) &&
        strcmp(link, self_user))
      nsset_add(s, link);
  }
  closedir(d);
}

static size_t count_prefix(const nsset_t *s, const char *prefix) {
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    n += strncmp(s->ns[i], prefix, strlen(prefix)) == 0;
  return n;
}

/* Whether any process (any thread's namespace, or any descriptor) still
 * holds one of the namespaces; its description in why. */
static bool ns_held(const nsset_t *s, char *why, size_t len) {
  DIR *proc = opendir("/proc");
  ck_assert_ptr_nonnull(proc);
  struct dirent *p;
  bool held = false;
  while (!held && (p = readdir(proc))) {
    if (p->d_name[0] < '1' || p->d_name[0] > '9') continue;
    char dir[300], path[600], link[64];
    static const char *const kinds[] = {"net", "user"};
    snprintf(dir, sizeof dir, "/proc/%s/task", p->d_name);
    DIR *tasks = opendir(dir);
    struct dirent *t;
    while (tasks && !held && (t = readdir(tasks)))
      for (size_t k = 0; k < 2 && !held; k++) {
        snprintf(path, sizeof path, "%s/%s/ns/%s", dir, t->d_name, kinds[k]);
        if (read_link(path, link, sizeof link) && nsset_has(s, link)) {
          snprintf(why, len, "process %.16s is in %.40s", p->d_name, link);
          held = true;
        }
      }
    if (tasks) closedir(tasks);
    snprintf(dir, sizeof dir, "/proc/%s/fd", p->d_name);
    DIR *fds = opendir(dir);
    struct dirent *e;
    while (fds && !held && (e = readdir(fds))) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (read_link(path, link, sizeof link) && nsset_has(s, link)) {
        snprintf(why, len, "process %.16s holds %.40s (fd %.16s)", p->d_name, link, e->d_name);
        held = true;
      }
    }
    if (fds) closedir(fds);
  }
  closedir(proc);
  /* A namespace bind-mounted somewhere (ip netns add) outlives processes. */
  FILE *f = fopen("/proc/self/mountinfo", "r");
  char line[1024];
  while (f && !held && fgets(line, sizeof line, f))
    for (size_t i = 0; i < s->n && !held; i++)
      if (strstr(line, s->ns[i])) {
        snprintf(why, len, "mounted: %.200s", line);
        held = true;
      }
  if (f) fclose(f);
  return held;
}

/* A process whose parent is us, other than the one we reaped. */
static pid_t find_child(void) {
  DIR *proc = opendir("/proc");
  ck_assert_ptr_nonnull(proc);
  struct dirent *p;
  pid_t found = 0;
  while (!found && (p = readdir(proc))) {
    if (p->d_name[0] < '1' || p->d_name[0] > '9') continue;
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", p->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')'), state;
    int ppid;
    if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid())
      found = (pid_t)atoi(p->d_name);
  }
  closedir(proc);
  return found;
}

/* 4. SIGKILL mid-run: nothing left behind, and the host never touched. */
START_TEST(sigkill_leaves_nothing) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  char priv[256];
  snprintf(priv, sizeof priv, "%s/jctlab-test-XXXXXX", tmp);
  ck_assert_ptr_nonnull(mkdtemp(priv));

  char if_before[8192], if_now[8192], tmp_before[16384], tmp_after[16384];
  char shm_before[4096], shm_after[4096], nns_before[4096], nns_after[4096];
  netdev_names(if_before, sizeof if_before);
  dir_names(tmp, "jct", "jctlab-test-", tmp_before, sizeof tmp_before);
  dir_names("/dev/shm", "jct", NULL, shm_before, sizeof shm_before);
  dir_names("/run/netns", NULL, NULL, nns_before, sizeof nns_before);

  char *argv[] = {JCT_BINARY, "run",    "--synth", "ring",   "--ranks", "8", "--bytes",
                  "64MiB",    "--rate", "100mbit", "--reps", "1",       NULL};
  spawn_opts_t o = {.tmpdir = priv};
  double t0 = now_s();
  child_t c = spawn(argv, &o);

  /* Mid-run: in namespaces of its own, holding one per rank; and still
   * running (the collective takes about 10 s). */
  nsset_t held = {.n = 0};
  bool ready = false;
  while (!ready || now_s() - t0 < 1.5) {
    int ws;
    pid_t got = waitpid(c.pid, &ws, WNOHANG);
    if (got != 0) {
      result_t r = collect(&c, ws);
      rmdir(priv);
      ck_abort_msg("jctlab ended before SIGKILL (status %d): %s", r.status, r.err);
    }
    netdev_names(if_now, sizeof if_now);
    ck_assert_msg(!strcmp(if_now, if_before), "host interfaces changed while jctlab ran: %s -> %s",
                  if_before, if_now);
    collect_ns(c.pid, &held);
    ready = count_prefix(&held, "net:[") >= 8;
    if (now_s() - t0 > 6) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, NULL, 0);
      unlink(c.out);
      unlink(c.err);
      rmdir(priv);
      ck_abort_msg("no namespaces seen in jctlab after 6 s (%zu)", held.n);
    }
    sleep_ms(20);
  }
  char pid_net[64], self_net[64];
  char pidns[64];
  snprintf(pidns, sizeof pidns, "/proc/%d/ns/net", (int)c.pid);
  ck_assert(read_link(pidns, pid_net, sizeof pid_net));
  ck_assert(read_link("/proc/self/ns/net", self_net, sizeof self_net));
  ck_assert_msg(strcmp(pid_net, self_net) != 0, "jctlab is in the host's network namespace");

  ck_assert_int_eq(kill(c.pid, SIGKILL), 0);
  int ws;
  ck_assert_int_eq(waitpid(c.pid, &ws, 0), c.pid);
  ck_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
  unlink(c.out);
  unlink(c.err);

  netdev_names(if_now, sizeof if_now);
  ck_assert_msg(!strcmp(if_now, if_before), "host interfaces: %s -> %s", if_before, if_now);
  pid_t left = find_child();
  ck_assert_msg(left == 0, "process %d is still our child", (int)left);
  char why[512];
  ck_assert_msg(!ns_held(&held, why, sizeof why), "%s", why);
  dir_names(priv, NULL, NULL, tmp_after, sizeof tmp_after);
  ck_assert_msg(tmp_after[0] == '\0', "left in its TMPDIR: %s", tmp_after);
  ck_assert_int_eq(rmdir(priv), 0);
  dir_names(tmp, "jct", "jctlab-test-", tmp_after, sizeof tmp_after);
  ck_assert_msg(!strcmp(tmp_after, tmp_before), "%s: %s -> %s", tmp, tmp_before, tmp_after);
  dir_names("/dev/shm", "jct", NULL, shm_after, sizeof shm_after);
  ck_assert_str_eq(shm_after, shm_before);
  dir_names("/run/netns", NULL, NULL, nns_after, sizeof nns_after);
  ck_assert_str_eq(nns_after, nns_before);
  printf("run: SIGKILL after %.2f s: %zu namespaces gone, host interfaces unchanged (%s)\n",
         now_s() - t0, held.n, if_before);
}
END_TEST

/* Exit 2, nothing on stdout, one line on stderr containing the words. */
#define expect_bad expect_bad_input /* testkit.h */

#define RUN_ARGS(...)                                                                              \
  { JCT_BINARY, "run", __VA_ARGS__, NULL }

/* 5. Bad input: exit 2, one line naming the problem. */
START_TEST(bad_input) {
  char *algo[] = RUN_ARGS("--synth", "bogus", "--ranks", "4", "--bytes", "1MiB");
  expect_bad(algo, "bogus", "unknown algorithm");
  char *one[] = RUN_ARGS("--synth", "ring", "--ranks", "1", "--bytes", "1MiB");
  expect_bad(one, "--ranks 1", NULL);
  char *many[] = RUN_ARGS("--synth", "ring", "--ranks", "100000", "--bytes", "1MiB");
  expect_bad(many, "--ranks 100000", NULL);
  char *ports[] = RUN_ARGS("--synth", "ring", "--ranks", "65", "--bytes", "1MiB");
  expect_bad(ports, "--ranks 65", "switch");
  char *rate0[] = RUN_ARGS("--synth", "ring", "--ranks", "4", "--bytes", "1MiB", "--rate", "0");
  expect_bad(rate0, "--rate", "'0'");
  char *rate5t[] =
      RUN_ARGS("--synth", "ring", "--ranks", "4", "--bytes", "1MiB", "--rate", "5tbit");
  expect_bad(rate5t, "--rate", NULL);
  char *reps[] = RUN_ARGS("--synth", "ring", "--ranks", "4", "--bytes", "1MiB", "--reps", "0");
  expect_bad(reps, "--reps", "'0'");
  char *opt[] = RUN_ARGS("--synth", "ring", "--ranks", "4", "--bytes", "1MiB", "--frobnicate");
  expect_bad(opt, "--frobnicate", "unknown option");

  char path[256];
  craft_tmpname(path, sizeof path, ".json");
  char *sched[] = RUN_ARGS("--schedule", path);
  write_file(path, "this is not JSON\n");
  expect_bad(sched, path, "line 1");
  /* Two ops, each waiting for the other. */
  write_file(path, "{\"jctlab_schedule\": 1, \"algorithm\": \"\", \"ranks\": 2, \"bytes\": 0,"
                   " \"connections\": [{\"src\": 0, \"dst\": 1, \"channel\": 0},"
                   " {\"src\": 1, \"dst\": 0, \"channel\": 0}],"
                   " \"ops\": [{\"conn\": 0, \"bytes\": 512, \"deps\": [1], \"gap_ns\": 0},"
                   " {\"conn\": 1, \"bytes\": 512, \"deps\": [0], \"gap_ns\": 0}]}\n");
  expect_bad(sched, path, "cycle");
  /* A connection to a rank that does not exist. */
  write_file(path, "{\"jctlab_schedule\": 1, \"algorithm\": \"\", \"ranks\": 2, \"bytes\": 0,"
                   " \"connections\": [{\"src\": 0, \"dst\": 5, \"channel\": 0}],"
                   " \"ops\": [{\"conn\": 0, \"bytes\": 512, \"deps\": [], \"gap_ns\": 0}]}\n");
  expect_bad(sched, path, "rank 5");
  unlink(path);
}
END_TEST

/* 5b. A run that is not one (every frame dropped: RETRY_EXC) exits 3 and
 * its JSON has the valid run's keys, null where it has no value; uroce
 * counts its CNPs (none without ECN marks), and Jain's index is over the
 * valid run's QPs. */
static void run_status(char *const argv[], int want_status) {
  result_t r = run_jctlab(argv, NULL, 120);
  ck_assert_msg(r.status == want_status, "exit %d (want %d): %s", r.status, want_status, r.err);
  result_free(&r);
}

START_TEST(invalid_run_keys) {
  char ok_js[256], bad_js[256];
  craft_tmpname(ok_js, sizeof ok_js, ".json");
  craft_tmpname(bad_js, sizeof bad_js, ".json");
  char *ok[] = RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "64KiB", "--reps", "1",
                        "--rate", "10mbit", "--json", ok_js);
  char *bad[] =
      RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "64KiB", "--reps", "1", "--inject",
               "drop p=1", "--timeout", "1", "--retry", "1", "--json", bad_js);
  run_status(ok, 0);
  run_status(bad, 3);
  json_t *v = json_load_file(ok_js, 0, NULL), *x = json_load_file(bad_js, 0, NULL);
  unlink(ok_js);
  unlink(bad_js);
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_nonnull(x);
  ck_assert(json_is_true(json_object_get(v, "valid")));
  ck_assert(json_is_false(json_object_get(x, "valid")));
  const char *key;
  json_t *val;
  json_object_foreach(v, key, val) {
    ck_assert_msg(json_object_get(x, key) != NULL, "the invalid run lacks \"%s\"", key);
  }
  json_object_foreach(x, key, val) {
    ck_assert_msg(json_object_get(v, key) != NULL, "the valid run lacks \"%s\"", key);
  }
  ck_assert(json_is_null(json_object_get(v, "invalid_why")));
  ck_assert(json_is_null(json_object_get(v, "interrupted"))); /* present, no signal */
  ck_assert(json_is_string(json_object_get(x, "invalid_why")));
  ck_assert(json_is_null(json_object_get(x, "jct")));
  ck_assert(json_is_null(json_object_get(x, "algbw_gbps")));
  ck_assert(json_is_object(json_object_get(v, "jct")));
  ck_assert(json_is_integer(json_object_get(json_object_get(v, "transport"), "cnps")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(v, "transport"), "cnps")), 0);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "config"), "cc")), "none");
  ck_assert(json_is_real(json_object_get(v, "jain_index")));
  ck_assert(json_is_null(json_object_get(x, "jain_index")));
  json_decref(v);
  json_decref(x);
}
END_TEST

/* A run the event loop could not keep up with is invalid (exit 3), as a
 * loop-bound replay: at 400 Gbit/s undilated (--tdf 1; without it jctlab
 * would dilate) a 4 KiB packet takes 84 ns, far below what one loop's
 * timers here are late by. At 100 Mbit/s (335 us a packet) the same run
 * stays valid. */
START_TEST(loop_bound_invalid) {
  char fast_js[256], slow_js[256];
  craft_tmpname(fast_js, sizeof fast_js, ".json");
  craft_tmpname(slow_js, sizeof slow_js, ".json");
  char *fast[] = RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--reps", "1",
                          "--rate", "400gbit", "--tdf", "1", "--json", fast_js);
  char *slow[] = RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "1MiB", "--reps", "1",
                          "--rate", "100mbit", "--json", slow_js);
  result_t r = run_jctlab(fast, NULL, 120);
  ck_assert_msg(r.status == 3, "400 Gbit/s: exit %d (want 3): %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "loop, not the emulated link"), "stderr: %s", r.err);
  result_free(&r);
  /* The valid side may meet a machine busy with other work: up to three runs. */
  int status = -1;
  for (int attempt = 1; attempt <= 3 && status != 0; attempt++) {
    result_t q = run_jctlab(slow, NULL, 120);
    status = q.status;
    if (status) printf("run: 100 Mbit/s, run %d: exit %d: %s", attempt, q.status, q.err);
    result_free(&q);
  }
  ck_assert_int_eq(status, 0);
  json_t *x = json_load_file(fast_js, 0, NULL), *v = json_load_file(slow_js, 0, NULL);
  unlink(fast_js);
  unlink(slow_js);
  ck_assert_ptr_nonnull(x);
  ck_assert_ptr_nonnull(v);
  ck_assert(!jbool(x, "valid"));
  ck_assert(jbool(x, "loop.loop_bound"));
  ck_assert(jnum(x, "loop.lateness_p99_ns") > jnum(x, "loop.packet_time_ns"));
  ck_assert_msg(strstr(json_string_value(jget(x, "invalid_why")), "p99 lateness"), "%s",
                json_string_value(jget(x, "invalid_why")));
  ck_assert(jbool(v, "valid"));
  ck_assert(!jbool(v, "loop.loop_bound"));
  json_decref(x);
  json_decref(v);
}
END_TEST

/* The largest gap between consecutive records of a nanosecond pcap, and
 * whether its stamps never go back. */
static uint64_t pcap_max_gap_ns(const char *path, bool *monotonic, size_t *records,
                                uint64_t *span_ns) {
  size_t len;
  char *d = slurp(path, &len);
  ck_assert_ptr_nonnull(d);
  ck_assert_uint_ge(len, 24);
  uint32_t magic;
  memcpy(&magic, d, 4);
  ck_assert_uint_eq(magic, 0xa1b23c4d); /* nanosecond, this machine's byte order */
  uint64_t prev = 0, gap = 0, first = 0;
  *monotonic = true;
  *records = 0;
  for (size_t off = 24; off + 16 <= len;) {
    uint32_t h[4];
    memcpy(h, d + off, sizeof h);
    uint64_t t = (uint64_t)h[0] * 1000000000u + h[1];
    if (!*records) first = t;
    if (*records && t < prev) *monotonic = false;
    if (*records && t > prev && t - prev > gap) gap = t - prev;
    prev = t;
    (*records)++;
    off += 16 + h[2];
  }
  free(d);
  *span_ns = prev - first;
  return gap;
}

/* Idle-time skipping (DESIGN.md decision 8): the last data packet of the
 * last message lost, nothing comes after it to draw a NAK, so the
 * requester waits out its retransmit timeout, 4.096 us * 2^20 = 4.29 s,
 * with nothing in flight. The job's JCT includes the 4.29 s; the clock
 * skips it, so the run takes well under 1.5 s of wall time; and the
 * capture of what crossed the switch spans the JCT, the wait included (its
 * stamps follow the skipped clock; the frames before the wait left the
 * switch up to a queue's worth of packets after the lost one was sent, so
 * its longest gap is a little under the timeout). 1 Mbit/s (33 ms a
 * packet) keeps the loop far ahead of the link on a busy machine. */
START_TEST(idle_skip_tail_loss) {
  char js[256], pcap[256];
  craft_tmpname(js, sizeof js, ".json");
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  /* ring, 2 ranks, 16 KiB: two 8 KiB messages (2 packets of 4 KiB) to
   * QP 0x101; pkt=1:1 is the last packet of the second. */
  char *argv[] = RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "16KiB", "--reps", "1",
                          "--rate", "1mbit", "--timeout", "20", "--inject",
                          "drop pkt=1:1 qp=0x101", "--pcap-out", pcap, "--json", js);
  double t0 = now_s();
  result_t r = run_jctlab(argv, NULL, 60);
  double wall = now_s() - t0;
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.out, "idle       skipped"), "no idle line: %s", r.out);
  result_free(&r);
  json_t *doc = json_load_file(js, 0, NULL);
  unlink(js);
  ck_assert_ptr_nonnull(doc);
  const double rto_ns = 4096.0 * (1u << 20);
  double jct = (double)jint(doc, "jct_ns.0"), skipped = (double)jint(doc, "loop.skipped_ns");
  bool mono;
  size_t records;
  uint64_t span_ns;
  double gap = (double)pcap_max_gap_ns(pcap, &mono, &records, &span_ns), span = (double)span_ns;
  unlink(pcap);
  printf("run: tail loss, timeout 20: JCT %.4f s, skipped %.4f s, wall %.2f s, capture gap %.4f s, "
         "span %.4f s\n",
         jct / 1e9, skipped / 1e9, wall, gap / 1e9, span / 1e9);
  ck_assert_int_eq(jint(doc, "transport.timeouts"), 1);
  ck_assert_int_ge(jint(doc, "transport.retransmitted_packets"), 1);
  ck_assert_int_eq(jint(doc, "injectors.0.dropped"), 1);
  ck_assert_msg(jct >= rto_ns && jct < rto_ns + 0.5e9, "JCT %.4f s", jct / 1e9);
  ck_assert_msg(skipped > rto_ns - 0.3e9 && skipped < rto_ns, "skipped %.4f s", skipped / 1e9);
  ck_assert_msg(wall < 1.5, "the run took %.2f s of wall time", wall);
  ck_assert(mono);
  ck_assert_uint_gt(records, 10);
  ck_assert_msg(gap >= rto_ns - 0.3e9 && gap < rto_ns, "capture's gap %.4f s", gap / 1e9);
  ck_assert_msg(fabs(span - jct) < 0.1e9, "capture's span %.4f s, JCT %.4f s", span / 1e9,
                jct / 1e9);
  json_decref(doc);
}
END_TEST

/* Skipping changes nothing where nothing is idle: a lossless ring's JCTs
 * with skipping on and off (--no-skip) agree within 2% (at 1 Mbit/s, so a
 * busy machine's lateness is small beside a packet's 33 ms). */
static double median_jct(bool skip, double *skipped) {
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *on[] = RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "32KiB", "--reps", "3",
                        "--rate", "1mbit", "--json", js);
  char *off[] = RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "32KiB", "--reps", "3",
                         "--rate", "1mbit", "--no-skip", "--json", js);
  run_status(skip ? on : off, 0);
  json_t *doc = json_load_file(js, 0, NULL);
  unlink(js);
  ck_assert_ptr_nonnull(doc);
  assert_clean_run(doc);
  double m = (double)jint(doc, "jct.median_ns");
  *skipped = (double)jint(doc, "loop.skipped_ns");
  json_decref(doc);
  return m;
}

START_TEST(idle_skip_lossless_unchanged) {
  double s_on, s_off;
  double on = median_jct(true, &s_on), off = median_jct(false, &s_off);
  printf("run: lossless ring 32 KiB at 1 Mbit/s: median JCT %.3f ms skipping, %.3f ms not "
         "(skipped %.0f ns)\n",
         on / 1e6, off / 1e6, s_on);
  ck_assert_msg(fabs(on / off - 1) < 0.02, "JCT %.3f ms with skipping, %.3f ms without", on / 1e6,
                off / 1e6);
  ck_assert(s_off == 0);
}
END_TEST

/* DCQCN on an incast, 3 -> 1 with ECN marking: the receiver's QPs send
 * CNPs and the senders cut their rates (per QP in the JSON), and `jctlab
 * inspect` of the capture counts as many CNPs as the transport sent; with
 * --cc none the same marks make no CNP and cut nothing. */
static json_t *incast_json(char *cc, char *pcap) {
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *argv[] = RUN_ARGS("--synth", "incast", "--ranks", "4", "--bytes", "1MiB", "--reps", "1",
                          "--ecn", "--cc", cc, "--cc-profile", "paper", "--json", js,
                          "--pcap-out", pcap, "-s", "128");
  run_status(argv, 0);
  json_t *v = json_load_file(js, 0, NULL);
  unlink(js);
  ck_assert_ptr_nonnull(v);
  return v;
}

START_TEST(dcqcn_incast) {
  char pcap[256];
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  json_t *off = incast_json("none", pcap), *on = incast_json("dcqcn", pcap);
  char *ins[] = {JCT_BINARY, "inspect", "--json", "-", pcap, NULL};
  result_t r = run_jctlab(ins, NULL, 120);
  unlink(pcap);
  ck_assert_msg(r.status == 0, "inspect: exit %d: %s", r.status, r.err);
  json_t *iv = json_loads(r.out, 0, NULL);
  result_free(&r);
  ck_assert_ptr_nonnull(iv);
  json_t *t_on = json_object_get(on, "transport"), *t_off = json_object_get(off, "transport");
  ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(on, "fabric"), "ecn_marked")),
                   0);
  ck_assert_int_gt(json_integer_value(json_object_get(t_on, "cnps")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(iv, "totals"), "cnps")),
                   json_integer_value(json_object_get(t_on, "cnps")));
  json_decref(iv);
  ck_assert_int_eq(json_integer_value(json_object_get(t_off, "cnps")), 0);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(on, "config"), "cc")),
                   "dcqcn");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(on, "config"), "cc_profile")),
                   "paper");
  json_int_t cuts = 0, below = 0;
  size_t i;
  json_t *q;
  json_array_foreach(json_object_get(on, "qps"), i, q) {
    cuts += json_integer_value(json_object_get(q, "rate_cuts"));
    below += json_integer_value(json_object_get(q, "time_below_line_rate_ns"));
  }
  ck_assert_int_gt(cuts, 0);
  ck_assert_int_gt(below, 0);
  ck_assert_int_le(cuts, json_integer_value(json_object_get(t_on, "cnps")));
  json_array_foreach(json_object_get(off, "qps"), i, q) {
    ck_assert_int_eq(json_integer_value(json_object_get(q, "rate_cuts")), 0);
  }
  json_decref(on);
  json_decref(off);
}
END_TEST

/* 6. Every generated collective completes, valid and clean, sends what
 * its schedule says, and is no faster than the links allow. At 25 Mbit/s:
 * a 4-rank run at 100 Mbit/s is loop-bound here (p99 lateness 0.4-2 ms
 * against a 335 us packet), and a loop-bound run is now invalid. */
START_TEST(algorithms_complete) {
  static const struct {
    const char *algo, *ranks, *bytes, *channels;
    double factor; /* nccl-tests' busbw factor */
  } cases[] = {
      {"tree", "4", "256KiB", "1", 1.5},        {"halving-doubling", "4", "256KiB", "1", 1.5},
      {"all-to-all", "4", "256KiB", "1", 0.75}, {"ring", "4", "256KiB", "2", 1.5},
      {"all-gather", "4", "256KiB", "1", 0.75}, {"reduce-scatter", "3", "256KiB", "2", 2.0 / 3},
      {"broadcast", "3", "1536KiB", "1", 1.0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sched_count_t want =
        synth_count(cases[i].algo, cases[i].ranks, cases[i].bytes, cases[i].channels);
    char *argv[] =
        RUN_ARGS("--synth", (char *)cases[i].algo, "--ranks", (char *)cases[i].ranks, "--bytes",
                 (char *)cases[i].bytes, "--channels", (char *)cases[i].channels, "--rate",
                 "25mbit", "--reps", "1", "--json", "-");
    result_t r = run_jctlab(argv, NULL, 15);
    ck_assert_msg(r.status == 0, "%s: exit %d: %s", cases[i].algo, r.status, r.err);
    json_t *doc = parse_json(r.out, cases[i].algo);
    assert_clean_run(doc);
    ck_assert_str_eq(json_string_value(jget(doc, "config.algorithm")), cases[i].algo);
    ck_assert_msg(jint(doc, "transport.data_packets") == (json_int_t)want.data_packets,
                  "%s: %lld data packets, the schedule makes %llu", cases[i].algo,
                  (long long)jint(doc, "transport.data_packets"),
                  (unsigned long long)want.data_packets);
    double median = jnum(doc, "jct.median_ns"), s_bytes = jnum(doc, "config.bytes");
    assert_near(jnum(doc, "algbw_gbps"), s_bytes / median, 1e-6, "algbw_gbps");
    assert_near(jnum(doc, "busbw_gbps"), s_bytes / median * cases[i].factor, 1e-6, "busbw_gbps");
    assert_qps_add_up(doc, &want, 25e6);
    /* The bandwidth term alone is a bound no algorithm beats. */
    double bound = cases[i].factor * s_bytes * 8 * 1e9 / goodput_bps(25e6);
    ck_assert_msg(median >= 0.95 * bound, "%s: %.0f ns, below the links' bound %.0f ns",
                  cases[i].algo, median, bound);
    printf("run: %s (%s ch) %s ranks %s: %.1f ms, model ratio %.2f\n", cases[i].algo,
           cases[i].channels, cases[i].ranks, cases[i].bytes, median / 1e6,
           jnum(doc, "model.ratio"));
    json_decref(doc);
    result_free(&r);
  }
}
END_TEST

/* 7. Per QP (issue 16): a drop aimed at connection 0's data (its
 * destination end is QPN 0x101) shows as that QP's retransmissions and no
 * other's; the QPs' retransmissions add up to the transport's, their bytes
 * to the schedule's. */
START_TEST(per_qp_retransmissions) {
  sched_count_t want = synth_count("ring", "2", "128KiB", "1");
  char *argv[] =
      RUN_ARGS("--synth", "ring", "--ranks", "2", "--bytes", "128KiB", "--rate", "50mbit", "--reps",
               "2", "--inject", "drop pkt=0:3 qp=0x101", "--json", "-");
  result_t r = run_jctlab(argv, NULL, 15);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  json_t *doc = parse_json(r.out, "run");
  ck_assert_int_eq(jint(doc, "injectors.0.dropped"), 2); /* one a repetition */
  json_t *qps = jget(doc, "qps");
  ck_assert_uint_eq(json_array_size(qps), 2);
  assert_qps_add_up(doc, &want, 50e6);
  json_int_t hit = jint(qps, "0.retransmitted_packets"),
             other = jint(qps, "1.retransmitted_packets");
  ck_assert_int_gt(hit, 0);
  ck_assert_int_eq(other, 0);
  ck_assert_int_eq(hit + other, jint(doc, "transport.retransmitted_packets"));
  ck_assert_int_eq(jint(qps, "0.reps"), 2);
  ck_assert_int_eq(jint(qps, "0.completion_reps"), 2);
  json_decref(doc);
  result_free(&r);
}
END_TEST

Suite *run_suite(void) {
  Suite *s = suite_create("run");
  TCase *core = tcase_create("core");
  tcase_set_timeout(core, 30);
  tcase_add_test(core, ring_lossless_model);
  tcase_add_test(core, pcap_out_inspects_clean);
  tcase_add_test(core, algorithms_complete);
  tcase_add_test(core, per_qp_retransmissions);
  tcase_add_test(core, invalid_run_keys);
  tcase_add_test(core, loop_bound_invalid);
  tcase_add_test(core, idle_skip_tail_loss);
  tcase_add_test(core, idle_skip_lossless_unchanged);
  tcase_add_test(core, dcqcn_incast);
  suite_add_tcase(s, core);
  TCase *ns = tcase_create("namespaces");
  tcase_set_timeout(ns, 20);
  tcase_add_test(ns, runs_unprivileged);
  tcase_add_test(ns, sigkill_leaves_nothing);
  suite_add_tcase(s, ns);
  TCase *limits = tcase_create("limits");
  tcase_set_timeout(limits, 20);
  tcase_add_test(limits, bad_input);
  suite_add_tcase(s, limits);
  return s;
}
